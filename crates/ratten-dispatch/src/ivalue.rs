//! IValue: the boxed value of the dispatcher's stack (ATen/core/ivalue.h), and the traits that
//! convert typed kernel arguments and returns to and from it.
//!
//! A typed (unboxed) call passes its arguments as a tuple of borrowed forms (`&TensorBase`,
//! `i64`, `&[i64]`, ...); [`KernelValue`] names the owned type, its borrowed form, its schema
//! type (for schema inference) and its IValue conversions. `ratten-aten` implements
//! `KernelValue` for its own `Tensor`.

use std::fmt;
use std::sync::Arc;

use num_complex::Complex64;
use ratten_core::{Device, DispatchKeySet, Error, Result, Scalar, ScalarType, TensorBase};
use ratten_schema::Type;

/// The dispatcher's boxed value. Like PyTorch, a `ScalarType` travels as an `Int`.
#[derive(Clone)]
pub enum IValue {
    None,
    Bool(bool),
    Int(i64),
    Double(f64),
    ComplexDouble(Complex64),
    String(Arc<str>),
    Device(Device),
    Tensor(TensorBase),
    IntList(Vec<i64>),
    DoubleList(Vec<f64>),
    BoolList(Vec<bool>),
    TensorList(Vec<TensorBase>),
    /// `Tensor?[]`.
    OptionalTensorList(Vec<Option<TensorBase>>),
    /// Any other list (`str[]`, `Scalar[]`, ...).
    GenericList(Vec<IValue>),
    Tuple(Vec<IValue>),
    /// A random generator (c10's `Generator` tag), type-erased: the crate that defines the
    /// generator (ratten-aten) downcasts it back.
    Generator(Arc<dyn std::any::Any + Send + Sync>),
}

/// The dispatcher's stack: arguments are pushed in order, a kernel pops them and pushes its
/// returns.
pub type Stack = Vec<IValue>;

impl IValue {
    /// `tagKind()`: the name PyTorch uses in conversion errors ("Expected Int but got Tensor").
    pub fn tag_kind(&self) -> &'static str {
        match self {
            IValue::None => "None",
            IValue::Bool(_) => "Bool",
            IValue::Int(_) => "Int",
            IValue::Double(_) => "Double",
            IValue::ComplexDouble(_) => "ComplexDouble",
            IValue::String(_) => "String",
            IValue::Device(_) => "Device",
            IValue::Tensor(_) => "Tensor",
            IValue::IntList(_) | IValue::DoubleList(_) | IValue::BoolList(_) => "GenericList",
            IValue::TensorList(_) | IValue::OptionalTensorList(_) | IValue::GenericList(_) => {
                "GenericList"
            }
            IValue::Tuple(_) => "Tuple",
            IValue::Generator(_) => "Generator",
        }
    }

    /// The dispatch keys this value contributes to a call: a tensor's keys, the union over
    /// a tensor list; nothing for other values (PyTorch's DispatchKeyExtractor).
    #[inline]
    pub fn key_set(&self) -> DispatchKeySet {
        match self {
            IValue::Tensor(t) => t.key_set(),
            IValue::TensorList(ts) => ts
                .iter()
                .fold(DispatchKeySet::empty(), |a, t| a | t.key_set()),
            IValue::OptionalTensorList(ts) => ts
                .iter()
                .flatten()
                .fold(DispatchKeySet::empty(), |a, t| a | t.key_set()),
            _ => DispatchKeySet::empty(),
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self, IValue::None)
    }
}

impl fmt::Debug for IValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IValue::None => f.write_str("None"),
            IValue::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            IValue::Int(i) => write!(f, "{i}"),
            IValue::Double(d) => write!(f, "{d:?}"),
            IValue::ComplexDouble(c) => write!(f, "{c}"),
            IValue::String(s) => write!(f, "{s:?}"),
            IValue::Device(d) => write!(f, "{d:?}"),
            IValue::Tensor(t) => write!(f, "Tensor({:?})", t.key_set()),
            IValue::IntList(v) => write!(f, "{v:?}"),
            IValue::DoubleList(v) => write!(f, "{v:?}"),
            IValue::BoolList(v) => write!(f, "{v:?}"),
            IValue::TensorList(v) => write!(f, "[Tensor; {}]", v.len()),
            IValue::OptionalTensorList(v) => write!(f, "[Tensor?; {}]", v.len()),
            IValue::GenericList(v) => f.debug_list().entries(v).finish(),
            IValue::Generator(_) => f.write_str("Generator"),
            IValue::Tuple(v) => {
                let mut t = f.debug_tuple("");
                for x in v {
                    t.field(x);
                }
                t.finish()
            }
        }
    }
}

fn expected(what: &str, got: &IValue) -> Error {
    Error::runtime(format!("Expected {what} but got {}", got.tag_kind()))
}

/// A type a typed kernel takes or returns. `Ref<'a>` is the form a kernel receives it in.
pub trait KernelValue: Sized + Send + 'static {
    /// The borrowed form a kernel receives (`&TensorBase`, `i64`, `&[i64]`, `Option<&TensorBase>`).
    type Ref<'a>;
    /// The schema type (`Tensor`, `int`, `int[]`, `Tensor?`), for schema inference.
    fn schema_type() -> Type;
    /// Boxes a borrowed argument (clones tensors: a reference count increment).
    fn ref_to_ivalue(r: &Self::Ref<'_>) -> IValue;
    /// Boxes an owned value (returns).
    fn into_ivalue(self) -> IValue;
    /// Unboxes, with PyTorch's "Expected X but got Y" on a mismatch.
    fn from_ivalue(v: IValue) -> Result<Self>;
    /// The borrowed form of an owned value.
    fn borrow(&self) -> Self::Ref<'_>;
    /// The dispatch keys the argument contributes (empty for non-tensors).
    #[inline]
    fn ref_key_set(_r: &Self::Ref<'_>) -> DispatchKeySet {
        DispatchKeySet::empty()
    }
}

macro_rules! copy_value {
    ($t:ty, $schema:expr, $variant:ident, $what:expr) => {
        impl KernelValue for $t {
            type Ref<'a> = $t;
            fn schema_type() -> Type {
                $schema
            }
            fn ref_to_ivalue(r: &$t) -> IValue {
                IValue::$variant(*r)
            }
            fn into_ivalue(self) -> IValue {
                IValue::$variant(self)
            }
            fn from_ivalue(v: IValue) -> Result<$t> {
                match v {
                    IValue::$variant(x) => Ok(x),
                    other => Err(expected($what, &other)),
                }
            }
            fn borrow(&self) -> $t {
                *self
            }
        }
    };
}

copy_value!(i64, Type::Int, Int, "Int");
copy_value!(bool, Type::Bool, Bool, "Bool");
copy_value!(Complex64, Type::Complex, ComplexDouble, "ComplexDouble");
copy_value!(Device, Type::Device, Device, "Device");

impl KernelValue for f64 {
    type Ref<'a> = f64;
    fn schema_type() -> Type {
        Type::Float
    }
    fn ref_to_ivalue(r: &f64) -> IValue {
        IValue::Double(*r)
    }
    fn into_ivalue(self) -> IValue {
        IValue::Double(self)
    }
    fn from_ivalue(v: IValue) -> Result<f64> {
        match v {
            IValue::Double(x) => Ok(x),
            // PyTorch's toDouble accepts only doubles; an int in a float slot comes from
            // Python as a double already.
            other => Err(expected("Double", &other)),
        }
    }
    fn borrow(&self) -> f64 {
        *self
    }
}

impl KernelValue for ScalarType {
    type Ref<'a> = ScalarType;
    fn schema_type() -> Type {
        Type::ScalarType
    }
    fn ref_to_ivalue(r: &ScalarType) -> IValue {
        IValue::Int(*r as i64)
    }
    fn into_ivalue(self) -> IValue {
        IValue::Int(self as i64)
    }
    fn from_ivalue(v: IValue) -> Result<ScalarType> {
        match v {
            IValue::Int(x) => ScalarType::ALL
                .iter()
                .copied()
                .find(|s| *s as i64 == x)
                .ok_or_else(|| Error::runtime(format!("Unknown ScalarType value {x}"))),
            other => Err(expected("Int", &other)),
        }
    }
    fn borrow(&self) -> ScalarType {
        *self
    }
}

impl KernelValue for String {
    type Ref<'a> = &'a str;
    fn schema_type() -> Type {
        Type::Str
    }
    fn ref_to_ivalue(r: &&str) -> IValue {
        IValue::String(Arc::from(*r))
    }
    fn into_ivalue(self) -> IValue {
        IValue::String(Arc::from(self))
    }
    fn from_ivalue(v: IValue) -> Result<String> {
        match v {
            IValue::String(s) => Ok(s.to_string()),
            other => Err(expected("String", &other)),
        }
    }
    fn borrow(&self) -> &str {
        self
    }
}

/// A tensor type a kernel can take: `TensorBase` here, ratten-aten's `Tensor` there. Lists
/// and optionals of tensor-like types are kernel values too.
pub trait TensorLike: Clone + Send + Sync + 'static {
    fn as_tensor_base(&self) -> &TensorBase;
    fn from_tensor_base(t: TensorBase) -> Self;
}

impl TensorLike for TensorBase {
    #[inline]
    fn as_tensor_base(&self) -> &TensorBase {
        self
    }
    fn from_tensor_base(t: TensorBase) -> Self {
        t
    }
}

impl<T: TensorLike> KernelValue for T {
    type Ref<'a> = &'a T;
    fn schema_type() -> Type {
        Type::Tensor
    }
    fn ref_to_ivalue(r: &&T) -> IValue {
        IValue::Tensor(r.as_tensor_base().clone())
    }
    fn into_ivalue(self) -> IValue {
        IValue::Tensor(self.as_tensor_base().clone())
    }
    fn from_ivalue(v: IValue) -> Result<T> {
        match v {
            IValue::Tensor(t) => Ok(T::from_tensor_base(t)),
            other => Err(expected("Tensor", &other)),
        }
    }
    fn borrow(&self) -> &T {
        self
    }
    #[inline]
    fn ref_key_set(r: &&T) -> DispatchKeySet {
        r.as_tensor_base().key_set()
    }
}

impl<T: TensorLike> KernelValue for Option<T> {
    type Ref<'a> = Option<&'a T>;
    fn schema_type() -> Type {
        Type::optional(Type::Tensor)
    }
    fn ref_to_ivalue(r: &Option<&T>) -> IValue {
        match r {
            Some(t) => IValue::Tensor(t.as_tensor_base().clone()),
            None => IValue::None,
        }
    }
    fn into_ivalue(self) -> IValue {
        match self {
            Some(t) => IValue::Tensor(t.as_tensor_base().clone()),
            None => IValue::None,
        }
    }
    fn from_ivalue(v: IValue) -> Result<Option<T>> {
        match v {
            IValue::None => Ok(None),
            IValue::Tensor(t) => Ok(Some(T::from_tensor_base(t))),
            other => Err(expected("Tensor?", &other)),
        }
    }
    fn borrow(&self) -> Option<&T> {
        self.as_ref()
    }
    #[inline]
    fn ref_key_set(r: &Option<&T>) -> DispatchKeySet {
        r.map_or(DispatchKeySet::empty(), |t| t.as_tensor_base().key_set())
    }
}

impl<T: TensorLike> KernelValue for Vec<T> {
    type Ref<'a> = &'a [T];
    fn schema_type() -> Type {
        Type::list(Type::Tensor)
    }
    fn ref_to_ivalue(r: &&[T]) -> IValue {
        IValue::TensorList(r.iter().map(|t| t.as_tensor_base().clone()).collect())
    }
    fn into_ivalue(self) -> IValue {
        IValue::TensorList(self.iter().map(|t| t.as_tensor_base().clone()).collect())
    }
    fn from_ivalue(v: IValue) -> Result<Vec<T>> {
        match v {
            IValue::TensorList(x) => Ok(x.into_iter().map(T::from_tensor_base).collect()),
            other => Err(expected("TensorList", &other)),
        }
    }
    fn borrow(&self) -> &[T] {
        self
    }
    #[inline]
    fn ref_key_set(r: &&[T]) -> DispatchKeySet {
        r.iter().fold(DispatchKeySet::empty(), |a, t| {
            a | t.as_tensor_base().key_set()
        })
    }
}

macro_rules! list_value {
    ($elem:ty, $schema:expr, $variant:ident) => {
        impl KernelValue for Vec<$elem> {
            type Ref<'a> = &'a [$elem];
            fn schema_type() -> Type {
                Type::list($schema)
            }
            fn ref_to_ivalue(r: &&[$elem]) -> IValue {
                IValue::$variant(r.to_vec())
            }
            fn into_ivalue(self) -> IValue {
                IValue::$variant(self)
            }
            fn from_ivalue(v: IValue) -> Result<Vec<$elem>> {
                match v {
                    IValue::$variant(x) => Ok(x),
                    other => Err(expected(stringify!($variant), &other)),
                }
            }
            fn borrow(&self) -> &[$elem] {
                self
            }
        }
    };
}

list_value!(i64, Type::Int, IntList);
list_value!(f64, Type::Float, DoubleList);
list_value!(bool, Type::Bool, BoolList);

impl KernelValue for Option<i64> {
    type Ref<'a> = Option<i64>;
    fn schema_type() -> Type {
        Type::optional(Type::Int)
    }
    fn ref_to_ivalue(r: &Option<i64>) -> IValue {
        r.map_or(IValue::None, IValue::Int)
    }
    fn into_ivalue(self) -> IValue {
        self.map_or(IValue::None, IValue::Int)
    }
    fn from_ivalue(v: IValue) -> Result<Option<i64>> {
        match v {
            IValue::None => Ok(None),
            IValue::Int(x) => Ok(Some(x)),
            other => Err(expected("int?", &other)),
        }
    }
    fn borrow(&self) -> Option<i64> {
        *self
    }
}

impl KernelValue for Scalar {
    type Ref<'a> = Scalar;
    fn schema_type() -> Type {
        Type::Scalar
    }
    fn ref_to_ivalue(r: &Scalar) -> IValue {
        (*r).into_ivalue()
    }
    /// As PyTorch: a Scalar travels as Int, Double, ComplexDouble or Bool.
    fn into_ivalue(self) -> IValue {
        match self {
            Scalar::Bool(b) => IValue::Bool(b),
            Scalar::Int(i) => IValue::Int(i),
            // IValue has no unsigned tag (c10's boxing refuses a uint64 above int64's range with
            // its overflow error, which this infallible conversion cannot return): the value
            // travels as the int64 of the same bits, which a uint64 kernel reads back unchanged.
            Scalar::UInt64(u) => IValue::Int(u as i64),
            Scalar::Double(d) => IValue::Double(d),
            Scalar::ComplexDouble(c) => IValue::ComplexDouble(Complex64::new(c.re, c.im)),
        }
    }
    fn from_ivalue(v: IValue) -> Result<Scalar> {
        match v {
            IValue::Bool(b) => Ok(Scalar::Bool(b)),
            IValue::Int(i) => Ok(Scalar::Int(i)),
            IValue::Double(d) => Ok(Scalar::Double(d)),
            IValue::ComplexDouble(c) => Ok(Scalar::ComplexDouble(c)),
            other => Err(expected("Scalar", &other)),
        }
    }
    fn borrow(&self) -> Scalar {
        *self
    }
}

macro_rules! optional_copy_value {
    ($t:ty, $what:expr) => {
        impl KernelValue for Option<$t> {
            type Ref<'a> = Option<$t>;
            fn schema_type() -> Type {
                Type::optional(<$t as KernelValue>::schema_type())
            }
            fn ref_to_ivalue(r: &Option<$t>) -> IValue {
                r.map_or(IValue::None, |x| x.into_ivalue())
            }
            fn into_ivalue(self) -> IValue {
                self.map_or(IValue::None, |x| x.into_ivalue())
            }
            fn from_ivalue(v: IValue) -> Result<Option<$t>> {
                match v {
                    IValue::None => Ok(None),
                    other => <$t as KernelValue>::from_ivalue(other)
                        .map(Some)
                        .map_err(|_| Error::runtime(concat!("Expected ", $what, " or None"))),
                }
            }
            fn borrow(&self) -> Option<$t> {
                *self
            }
        }
    };
}

optional_copy_value!(f64, "Double");
optional_copy_value!(bool, "Bool");
optional_copy_value!(Scalar, "Scalar");
optional_copy_value!(ScalarType, "Int");
optional_copy_value!(Device, "Device");

impl KernelValue for Option<Vec<i64>> {
    type Ref<'a> = Option<&'a [i64]>;
    fn schema_type() -> Type {
        Type::optional(Type::list(Type::Int))
    }
    fn ref_to_ivalue(r: &Option<&[i64]>) -> IValue {
        r.map_or(IValue::None, |x| IValue::IntList(x.to_vec()))
    }
    fn into_ivalue(self) -> IValue {
        self.map_or(IValue::None, IValue::IntList)
    }
    fn from_ivalue(v: IValue) -> Result<Option<Vec<i64>>> {
        match v {
            IValue::None => Ok(None),
            IValue::IntList(x) => Ok(Some(x)),
            other => Err(expected("int[]?", &other)),
        }
    }
    fn borrow(&self) -> Option<&[i64]> {
        self.as_deref()
    }
}

impl<T: TensorLike> KernelValue for Vec<Option<T>> {
    type Ref<'a> = &'a [Option<T>];
    fn schema_type() -> Type {
        Type::list(Type::optional(Type::Tensor))
    }
    fn ref_to_ivalue(r: &&[Option<T>]) -> IValue {
        IValue::OptionalTensorList(
            r.iter()
                .map(|t| t.as_ref().map(|t| t.as_tensor_base().clone()))
                .collect(),
        )
    }
    fn into_ivalue(self) -> IValue {
        Self::ref_to_ivalue(&self.as_slice())
    }
    fn from_ivalue(v: IValue) -> Result<Vec<Option<T>>> {
        match v {
            IValue::OptionalTensorList(x) => {
                Ok(x.into_iter().map(|t| t.map(T::from_tensor_base)).collect())
            }
            other => Err(expected("OptionalTensorList", &other)),
        }
    }
    fn borrow(&self) -> &[Option<T>] {
        self
    }
    #[inline]
    fn ref_key_set(r: &&[Option<T>]) -> DispatchKeySet {
        r.iter().flatten().fold(DispatchKeySet::empty(), |a, t| {
            a | t.as_tensor_base().key_set()
        })
    }
}

impl KernelValue for IValue {
    type Ref<'a> = &'a IValue;
    fn schema_type() -> Type {
        Type::Any
    }
    fn ref_to_ivalue(r: &&IValue) -> IValue {
        (*r).clone()
    }
    fn into_ivalue(self) -> IValue {
        self
    }
    fn from_ivalue(v: IValue) -> Result<IValue> {
        Ok(v)
    }
    fn borrow(&self) -> &IValue {
        self
    }
    #[inline]
    fn ref_key_set(r: &&IValue) -> DispatchKeySet {
        r.key_set()
    }
}

/// The argument list of a typed kernel: a tuple of [`KernelValue`]s.
pub trait KernelArgs: Sized + Send + 'static {
    /// The tuple of borrowed forms a typed call passes.
    type Refs<'a>;
    const LEN: usize;
    fn schema_types() -> Vec<Type>;
    /// The union of the arguments' dispatch keys.
    fn key_set(refs: &Self::Refs<'_>) -> DispatchKeySet;
    /// Pushes the arguments onto a stack, in order.
    fn push(refs: &Self::Refs<'_>, stack: &mut Stack);
    /// Pops `LEN` arguments off the end of a stack.
    fn pop(stack: &mut Stack) -> Result<Self>;
    fn borrow(&self) -> Self::Refs<'_>;
    /// Argument `k`, boxed (what the boxed form of a kernel returning it leaves on the stack,
    /// see [`Aliased`]); `None` when there is no argument `k`.
    fn into_ivalue_at(self, k: usize) -> Option<IValue>;
}

/// What a typed kernel returns: `()`, one [`KernelValue`], a tuple of them, or [`Aliased`].
pub trait KernelReturn: Sized + Send + 'static {
    const LEN: usize;
    /// `Some(k)` when the return is argument `k` itself ([`Aliased`]): the boxed form of the
    /// kernel then pushes that argument, and `push` pushes nothing.
    const ALIASED_ARG: Option<usize> = None;
    fn schema_types() -> Vec<Type>;
    fn push(self, stack: &mut Stack);
    fn pop(stack: &mut Stack) -> Result<Self>;
}

/// The return of an operator whose one return is its argument `ARG`, written in place
/// (`add_(Tensor(a!) self, ..) -> Tensor(a!)`, `add.out(.., Tensor(a!) out) -> Tensor(a!)`).
///
/// Note [Aliased returns]: PyTorch's kernels for these return `Tensor&`, a reference to the
/// argument, so an in-place or out= call neither makes nor drops a handle; its boxed wrapper
/// (c10's `BoxedKernelWrapper` for in-place and out= signatures) likewise returns the
/// argument it was given, not what the boxed kernel left on the stack. ratten's typed calls of
/// such an operator return this marker (nothing to count: a cloned and dropped handle is two
/// atomic operations, ~10 ns of a ~110 ns one-element `add_`), and the caller, who holds the
/// argument, returns it (`functions::add_out` returns `out`). A typed kernel registered
/// with this return type returns `Ok(Aliased)` (ratten-aten's kernels return `&'a Tensor`
/// borrowed from the argument, as PyTorch's do, and the generated registration adapts them);
/// its boxed form pushes argument `ARG`, so boxed callers see the argument. A typed call
/// that reaches a boxed kernel checks that it left one tensor and returns the marker. A kernel
/// registered with another return type (`Tensor`) still serves these calls, through its boxed
/// form. `TypedOperatorHandle::find` accepts `Aliased<ARG>` only for a schema whose one
/// return is argument `ARG`, written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Aliased<const ARG: usize>;

impl<const ARG: usize> KernelReturn for Aliased<ARG> {
    const LEN: usize = 1;
    const ALIASED_ARG: Option<usize> = Some(ARG);
    fn schema_types() -> Vec<Type> {
        vec![Type::Tensor]
    }
    fn push(self, _stack: &mut Stack) {}
    fn pop(stack: &mut Stack) -> Result<Self> {
        match stack.pop() {
            Some(IValue::Tensor(_)) => Ok(Aliased),
            Some(v) => Err(expected("Tensor", &v)),
            None => Err(Error::runtime(
                "Expected 1 return on the stack but found none",
            )),
        }
    }
}

fn take_last<'s>(
    stack: &'s mut Stack,
    n: usize,
    what: &str,
) -> Result<std::vec::Drain<'s, IValue>> {
    if stack.len() < n {
        return Err(Error::runtime(format!(
            "Expected {n} {what} on the stack but found only {}",
            stack.len()
        )));
    }
    let start = stack.len() - n;
    Ok(stack.drain(start..))
}

macro_rules! tuple_impls {
    ($n:expr; $($a:ident $i:tt),*) => {
        impl<$($a: KernelValue),*> KernelArgs for ($($a,)*) {
            type Refs<'a> = ($($a::Ref<'a>,)*);
            const LEN: usize = $n;
            fn schema_types() -> Vec<Type> {
                vec![$($a::schema_type()),*]
            }
            #[inline]
            #[allow(unused_variables)]
            fn key_set(refs: &Self::Refs<'_>) -> DispatchKeySet {
                DispatchKeySet::empty() $(| $a::ref_key_set(&refs.$i))*
            }
            #[allow(unused_variables)]
            fn push(refs: &Self::Refs<'_>, stack: &mut Stack) {
                $(stack.push($a::ref_to_ivalue(&refs.$i));)*
            }
            #[allow(unused_variables, unused_mut, clippy::unused_unit)]
            fn pop(stack: &mut Stack) -> Result<Self> {
                let mut it = take_last(stack, $n, "arguments")?;
                Ok(($($a::from_ivalue(it.next().ok_or_else(|| Error::runtime("stack underflow"))?)?,)*))
            }
            #[allow(clippy::unused_unit)]
            fn borrow(&self) -> Self::Refs<'_> {
                ($(self.$i.borrow(),)*)
            }
            #[allow(unused_variables)]
            fn into_ivalue_at(self, k: usize) -> Option<IValue> {
                $(if k == $i {
                    return Some(self.$i.into_ivalue());
                })*
                None
            }
        }
    };
}

tuple_impls!(0;);
tuple_impls!(1; A0 0);
tuple_impls!(2; A0 0, A1 1);
tuple_impls!(3; A0 0, A1 1, A2 2);
tuple_impls!(4; A0 0, A1 1, A2 2, A3 3);
tuple_impls!(5; A0 0, A1 1, A2 2, A3 3, A4 4);
tuple_impls!(6; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5);
tuple_impls!(7; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6);
tuple_impls!(8; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7);
tuple_impls!(9; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8);
tuple_impls!(10; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9);
tuple_impls!(11; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10);
tuple_impls!(12; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11);
tuple_impls!(13; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12);
tuple_impls!(14; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13);
tuple_impls!(15; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14);
tuple_impls!(16; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15);
tuple_impls!(17; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16);
tuple_impls!(18; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17);
tuple_impls!(19; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18);
tuple_impls!(20; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19);
tuple_impls!(21; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20);
tuple_impls!(22; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21);
tuple_impls!(23; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22);
tuple_impls!(24; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22, A23 23);

impl KernelReturn for () {
    const LEN: usize = 0;
    fn schema_types() -> Vec<Type> {
        Vec::new()
    }
    fn push(self, _stack: &mut Stack) {}
    fn pop(_stack: &mut Stack) -> Result<()> {
        Ok(())
    }
}

impl<T: KernelValue> KernelReturn for T {
    const LEN: usize = 1;
    fn schema_types() -> Vec<Type> {
        vec![T::schema_type()]
    }
    fn push(self, stack: &mut Stack) {
        stack.push(self.into_ivalue());
    }
    fn pop(stack: &mut Stack) -> Result<T> {
        match stack.pop() {
            Some(v) => T::from_ivalue(v),
            None => Err(Error::runtime(
                "Expected 1 return on the stack but found none",
            )),
        }
    }
}

macro_rules! return_tuple {
    ($n:expr; $($a:ident $i:tt),*) => {
        impl<$($a: KernelValue),*> KernelReturn for ($($a,)*) {
            const LEN: usize = $n;
            fn schema_types() -> Vec<Type> {
                vec![$($a::schema_type()),*]
            }
            fn push(self, stack: &mut Stack) {
                $(stack.push(self.$i.into_ivalue());)*
            }
            fn pop(stack: &mut Stack) -> Result<Self> {
                let mut it = take_last(stack, $n, "returns")?;
                Ok(($($a::from_ivalue(it.next().ok_or_else(|| Error::runtime("stack underflow"))?)?,)*))
            }
        }
    };
}

return_tuple!(2; A0 0, A1 1);
return_tuple!(3; A0 0, A1 1, A2 2);
return_tuple!(4; A0 0, A1 1, A2 2, A3 3);
return_tuple!(5; A0 0, A1 1, A2 2, A3 3, A4 4);
return_tuple!(6; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5);
return_tuple!(7; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6);
return_tuple!(8; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_types_and_round_trips() {
        assert_eq!(
            <(i64, Vec<i64>, Option<f64>) as KernelArgs>::schema_types().len(),
            3
        );
        assert_eq!(<Option<Vec<i64>>>::schema_type().to_string(), "int[]?");
        assert_eq!(
            <Vec<Option<TensorBase>>>::schema_type().to_string(),
            "Tensor?[]"
        );
        assert_eq!(Scalar::schema_type().to_string(), "Scalar");
        assert_eq!(ScalarType::schema_type().to_string(), "ScalarType");
        let mut st: Stack = Vec::new();
        <(i64, f64, bool) as KernelArgs>::push(&(3, 2.5, true), &mut st);
        let (a, b, c) = <(i64, f64, bool) as KernelArgs>::pop(&mut st).unwrap();
        assert_eq!((a, b, c), (3, 2.5, true));
        assert!(st.is_empty());
        let e = <(i64,) as KernelArgs>::pop(&mut st).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Expected 1 arguments on the stack but found only 0"
        );
        assert_eq!(
            ScalarType::from_ivalue(ScalarType::Half.into_ivalue()).unwrap(),
            ScalarType::Half
        );
        assert_eq!(
            Scalar::from_ivalue(Scalar::Double(1.5).into_ivalue()).unwrap(),
            Scalar::Double(1.5)
        );
        assert_eq!(Option::<bool>::from_ivalue(IValue::None).unwrap(), None);
        assert_eq!(
            i64::from_ivalue(IValue::String("x".into()))
                .unwrap_err()
                .to_string(),
            "Expected Int but got String"
        );
        let (p, q) = <(i64, String) as KernelReturn>::pop(&mut vec![
            IValue::Int(1),
            IValue::String("s".into()),
        ])
        .unwrap();
        assert_eq!((p, q.as_str()), (1, "s"));
    }

    #[test]
    fn tensor_values_carry_key_sets() {
        let t = TensorBase::empty(&[1], ScalarType::Float, Device::META).unwrap();
        let v = IValue::TensorList(vec![t.clone()]);
        assert_eq!(v.key_set(), t.key_set());
        assert_eq!(
            <Vec<TensorBase>>::ref_key_set(&[t.clone()].as_slice()),
            t.key_set()
        );
        assert!(<Option<TensorBase>>::ref_key_set(&None).is_empty());
        assert_eq!(IValue::Int(1).key_set(), DispatchKeySet::empty());
    }
}
