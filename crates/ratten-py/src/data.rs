//! Moving values between Python-shaped data and tensors, without the Python runtime:
//! `ratten.tensor([...])`'s dtype inference and construction, `tolist()`'s element reads,
//! and the numpy layout rules (array-interface type strings, when memory can be shared).

use num_complex::Complex;
use ratten_aten::Tensor;
use ratten_core::dtype::{c128, c32, c64};
use ratten_core::half::{bf16, f16};
use ratten_core::{
    get_default_complex_dtype, get_default_dtype, Error, Result, Scalar, ScalarType,
};

/// A nested Python sequence, flattened: its shape and its leaves in row-major order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Flat {
    pub sizes: Vec<i64>,
    pub values: Vec<Scalar>,
}

/// torch's `MAX_DIMS` for data walked into a tensor (`tensor_new.cpp`): deeper nesting is
/// "too many dimensions". It also bounds the walk's recursion, so no input (a list holding
/// itself, an object whose `__getitem__` returns itself) can overflow the stack or loop.
pub const MAX_DIMS: usize = 128;

/// One leaf of nested data, as the source reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Leaf {
    Scalar(Scalar),
    /// A Python int outside int64 (its value as a float): fine for a floating or complex
    /// dtype, torch's "Overflow when unpacking long long" for an integral one.
    BigInt(f64),
    /// A Python int in [2**63, 2**64): a big int, except for a uint64 dtype, which holds it.
    BigUnsigned(u64),
    /// A value with a dtype of its own (a numpy scalar, a one-element tensor): torch's
    /// inference takes that dtype.
    Typed(Scalar, ScalarType),
}

/// Nested data as [`flatten`] walks it (`ratten.tensor`'s Python objects, or a test's tree).
/// Every call may fail with the source's own error (a `__len__` or `__getitem__` raising).
pub trait NestedData {
    type Obj;
    type Err;
    /// `Some(len)` when `obj` is a sequence to walk into.
    fn seq_len(&mut self, obj: &Self::Obj) -> std::result::Result<Option<usize>, Self::Err>;
    /// Element `i` (< the length `seq_len` gave) of a sequence.
    fn get(&mut self, obj: &Self::Obj, i: usize) -> std::result::Result<Self::Obj, Self::Err>;
    /// A leaf's value (the source's error for what is not a number).
    fn leaf(&mut self, obj: &Self::Obj) -> std::result::Result<Leaf, Self::Err>;
    /// Whether `a` and `b` are the same object (a sequence holding itself).
    fn is_same(&self, a: &Self::Obj, b: &Self::Obj) -> bool;
    /// The type name torch's messages print.
    fn type_name(&self, obj: &Self::Obj) -> String;
}

/// An error of [`flatten`]: the data's shape ([`Error`], torch's class and text) or the
/// source's own.
#[derive(Debug)]
pub enum WalkError<E> {
    Data(Error),
    Source(E),
}

impl<E> From<Error> for WalkError<E> {
    fn from(e: Error) -> Self {
        WalkError::Data(e)
    }
}

/// A flattened walk: [`Flat`] plus the positions of ints outside int64.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Walked {
    pub flat: Flat,
    /// (position in `flat.values`, the int's value as a float); the value there is a
    /// placeholder `Int(0)`, so dtype inference sees an int, as torch's does.
    pub big_ints: Vec<(usize, f64)>,
    /// (position in `flat.values`, value) of the big ints that fit uint64.
    pub big_unsigned: Vec<(usize, u64)>,
    /// For data with no elements: one leaf of each kind found in it, for dtype inference.
    pub inferred: Vec<Scalar>,
    /// (position in `flat.values`, dtype) of the leaves with a dtype of their own.
    pub typed: Vec<(usize, ScalarType)>,
}

impl Walked {
    /// The dtype torch infers for the data (`infer_scalar_type`). With leaves of their own
    /// dtype (numpy scalars, tensors), the leaves' dtypes are promoted in order, a Python
    /// leaf counting as bool, int64, the default float or the default complex dtype, with
    /// `promote_types`' error for the unsigned types it refuses.
    pub fn infer_dtype(&self) -> Result<ScalarType> {
        if self.typed.is_empty() {
            return Ok(
                if self.flat.values.is_empty() && !self.inferred.is_empty() {
                    infer_dtype(&self.inferred)
                } else {
                    infer_dtype(&self.flat.values)
                },
            );
        }
        let mut typed = self.typed.iter().peekable();
        let mut acc: Option<ScalarType> = None;
        for (i, v) in self.flat.values.iter().enumerate() {
            let dt = match typed.peek() {
                Some(&&(at, dt)) if at == i => {
                    typed.next();
                    dt
                }
                _ => infer_dtype(std::slice::from_ref(v)),
            };
            let next = match acc {
                None => dt,
                Some(a) => ratten_core::promote_types(a, dt)?,
            };
            if next == ScalarType::ComplexDouble {
                return Ok(next);
            }
            acc = Some(next);
        }
        Ok(acc.unwrap_or_else(get_default_dtype))
    }

    /// The values for `dtype`: big ints become floats for a floating or complex dtype; for
    /// an integral one they are torch's ValueError.
    pub fn values_for(mut self, dtype: ScalarType) -> Result<Vec<Scalar>> {
        if dtype == ScalarType::UInt64 {
            return self.uint64_values();
        }
        if !self.big_ints.is_empty() {
            if !(dtype.is_floating_point() || dtype.is_complex()) {
                return Err(Error::value("Overflow when unpacking long long"));
            }
            for &(i, v) in &self.big_ints {
                self.flat.values[i] = Scalar::Double(v);
            }
        }
        Ok(self.flat.values)
    }

    /// The values for uint64: torch reads each leaf as `PyLong_AsUnsignedLongLong` does, so
    /// only ints (bools included) in [0, 2**64) are taken, with Python's errors for the rest.
    fn uint64_values(mut self) -> Result<Vec<Scalar>> {
        for &(i, u) in &self.big_unsigned {
            self.flat.values[i] = Scalar::UInt64(u);
        }
        if !self.big_ints.is_empty() && self.big_ints.len() > self.big_unsigned.len() {
            return Err(Error::overflow("int too big to convert"));
        }
        for v in &self.flat.values {
            match v {
                Scalar::Int(i) if *i < 0 => {
                    return Err(Error::overflow("can't convert negative int to unsigned"))
                }
                Scalar::Double(_) | Scalar::ComplexDouble(_) => {
                    return Err(Error::type_error("an integer is required"))
                }
                _ => {}
            }
        }
        Ok(self.flat.values)
    }
}

/// torch's `internal_new_from_data` walk: the sizes from the first element of each level
/// (at most [`MAX_DIMS`]), then every element checked against them and read in row-major
/// order. The values' room is reserved up front (a failed reservation is an error, not an
/// abort), and no more than that many are ever read.
pub fn flatten<D: NestedData>(
    d: &mut D,
    root: &D::Obj,
) -> std::result::Result<Walked, WalkError<D::Err>> {
    let mut sizes = Vec::new();
    let mut cur: Option<D::Obj> = None;
    loop {
        let obj = cur.as_ref().unwrap_or(root);
        let Some(n) = d.seq_len(obj).map_err(WalkError::Source)? else {
            break;
        };
        sizes.push(n as i64);
        if sizes.len() > MAX_DIMS {
            return Err(Error::value(format!("too many dimensions '{}'", d.type_name(obj))).into());
        }
        if n == 0 {
            break;
        }
        cur = Some(d.get(obj, 0).map_err(WalkError::Source)?);
    }
    let numel = sizes
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n as usize))
        .filter(|&n| n <= isize::MAX as usize / std::mem::size_of::<Scalar>())
        .ok_or_else(|| {
            Error::runtime(format!(
                "Storage size calculation overflowed with sizes={sizes:?}"
            ))
        })?;
    let mut out = Walked::default();
    out.flat.values.try_reserve_exact(numel).map_err(|_| {
        Error::runtime(format!(
            "DefaultCPUAllocator: not enough memory: you tried to allocate {} bytes.",
            numel * std::mem::size_of::<Scalar>()
        ))
    })?;
    if numel > 0 {
        store(d, root, 0, &sizes, numel, &mut out)?;
    } else {
        // As torch: data with no elements is not checked against its sizes (`[[], [1]]`
        // is (2, 0)), but its leaves still decide the dtype and raise for what is no number.
        let mut budget = INFER_BUDGET;
        infer_leaves(d, root, 0, &mut budget, &mut out.inferred)?;
    }
    out.flat.sizes = sizes;
    Ok(out)
}

/// The most nodes the dtype walk of element-less data visits (a structure of lists that
/// hold each other has exponentially many paths); beyond it the rest is not looked at.
const INFER_BUDGET: usize = 1 << 16;

/// torch's `infer_scalar_type` over every leaf of element-less data, to [`MAX_DIMS`] deep.
fn infer_leaves<D: NestedData>(
    d: &mut D,
    obj: &D::Obj,
    depth: usize,
    budget: &mut usize,
    kinds: &mut Vec<Scalar>,
) -> std::result::Result<(), WalkError<D::Err>> {
    if *budget == 0 {
        return Ok(());
    }
    *budget -= 1;
    if depth > MAX_DIMS {
        return Ok(());
    }
    let n = d.seq_len(obj).map_err(WalkError::Source)?;
    // An empty sequence counts as the default float (torch: `[[], [1]]` is float32).
    let leaf = match n {
        Some(0) => Some(Leaf::Scalar(Scalar::Double(0.0))),
        Some(_) => None,
        None => Some(d.leaf(obj).map_err(WalkError::Source)?),
    };
    if let Some(leaf) = leaf {
        let kind = match leaf {
            Leaf::Scalar(s) | Leaf::Typed(s, _) => s,
            Leaf::BigInt(_) | Leaf::BigUnsigned(_) => Scalar::Int(0),
        };
        // One value of each kind is all inference needs.
        if !kinds
            .iter()
            .any(|k| std::mem::discriminant(k) == std::mem::discriminant(&kind))
        {
            kinds.push(kind);
        }
        return Ok(());
    }
    for i in 0..n.unwrap_or(0) {
        if *budget == 0 {
            break;
        }
        let item = d.get(obj, i).map_err(WalkError::Source)?;
        if d.is_same(&item, obj) {
            return Err(Error::type_error("new(): self-referential lists are incompatible").into());
        }
        infer_leaves(d, &item, depth + 1, budget, kinds)?;
    }
    Ok(())
}

fn store<D: NestedData>(
    d: &mut D,
    obj: &D::Obj,
    dim: usize,
    sizes: &[i64],
    numel: usize,
    out: &mut Walked,
) -> std::result::Result<(), WalkError<D::Err>> {
    if dim == sizes.len() {
        let leaf = d.leaf(obj).map_err(WalkError::Source)?;
        if out.flat.values.len() >= numel {
            // Unreachable while every level's length is checked; kept so that the reserved
            // room is a hard bound whatever the source does.
            return Err(Error::runtime("nested data changed while it was read").into());
        }
        match leaf {
            Leaf::Scalar(s) => out.flat.values.push(s),
            Leaf::Typed(s, dt) => {
                out.typed.push((out.flat.values.len(), dt));
                out.flat.values.push(s);
            }
            Leaf::BigInt(v) => {
                out.big_ints.push((out.flat.values.len(), v));
                out.flat.values.push(Scalar::Int(0));
            }
            Leaf::BigUnsigned(u) => {
                out.big_ints.push((out.flat.values.len(), u as f64));
                out.big_unsigned.push((out.flat.values.len(), u));
                out.flat.values.push(Scalar::Int(0));
            }
        }
        return Ok(());
    }
    let Some(n) = d.seq_len(obj).map_err(WalkError::Source)? else {
        return Err(Error::type_error("not a sequence").into());
    };
    if n as i64 != sizes[dim] {
        return Err(Error::value(format!(
            "expected sequence of length {} at dim {dim} (got {n})",
            sizes[dim]
        ))
        .into());
    }
    for i in 0..n {
        let item = d.get(obj, i).map_err(WalkError::Source)?;
        if d.is_same(&item, obj) {
            return Err(Error::type_error("new(): self-referential lists are incompatible").into());
        }
        store(d, &item, dim + 1, sizes, numel, out)?;
    }
    Ok(())
}

/// torch's `infer_scalar_type` over the leaves: complex beats float beats int beats bool.
pub fn infer_dtype(values: &[Scalar]) -> ScalarType {
    let mut seen_float = false;
    let mut seen_int = false;
    let mut all_bool = !values.is_empty();
    for v in values {
        match v {
            Scalar::ComplexDouble(_) => return get_default_complex_dtype(),
            Scalar::Double(_) => seen_float = true,
            Scalar::Int(_) | Scalar::UInt64(_) => seen_int = true,
            Scalar::Bool(_) => {}
        }
        all_bool &= matches!(v, Scalar::Bool(_));
    }
    if seen_float || values.is_empty() && !seen_int {
        // An empty list is a float tensor, as torch.tensor([]) is.
        get_default_dtype()
    } else if all_bool {
        ScalarType::Bool
    } else {
        ScalarType::Long
    }
}

/// Builds a tensor of `dtype` from row-major values, converting each with c10's checked
/// conversion (an overflow is the ValueError torch raises).
pub fn tensor_from_scalars(values: &[Scalar], sizes: &[i64], dtype: ScalarType) -> Result<Tensor> {
    // torch's `store_scalar` checks the integer conversions, naming the dtype by its Python
    // name in the error ("value cannot be converted to type uint32 without overflow").
    macro_rules! build_checked {
        ($t:ty) => {{
            let v: Vec<$t> = values
                .iter()
                .map(|s| {
                    s.to::<$t>().map_err(|_| {
                        Error::runtime(format!(
                            "value cannot be converted to type {} without overflow",
                            dtype.python_name()
                        ))
                    })
                })
                .collect::<Result<_>>()?;
            Tensor::from_vec(v, sizes)
        }};
    }
    macro_rules! build {
        ($t:ty) => {{
            let v: Vec<$t> = values.iter().map(|s| s.to::<$t>()).collect::<Result<_>>()?;
            Tensor::from_vec(v, sizes)
        }};
    }
    // The float conversions are C++'s casts: out of range is +-inf, not an error. A real
    // value is rounded to float first (c10's Half and BFloat16 are made from a float).
    macro_rules! build_float {
        ($t:ty, $from:expr) => {{
            if values.iter().any(|s| s.is_complex()) {
                build!($t)
            } else {
                let v: Vec<$t> = values
                    .iter()
                    .map(|s| s.to_double().map($from))
                    .collect::<Result<_>>()?;
                Tensor::from_vec(v, sizes)
            }
        }};
    }
    macro_rules! build_complex {
        ($t:ty, $part:expr) => {{
            let v: Vec<$t> = values
                .iter()
                .map(|s| {
                    s.to_complex_double()
                        .map(|z| <$t>::new($part(z.re as f32), $part(z.im as f32)))
                })
                .collect::<Result<_>>()?;
            Tensor::from_vec(v, sizes)
        }};
    }
    match dtype {
        ScalarType::Bool => {
            let v: Vec<bool> = values.iter().map(|s| s.to_bool()).collect();
            Tensor::from_vec(v, sizes)
        }
        ScalarType::Byte => build_checked!(u8),
        ScalarType::Char => build_checked!(i8),
        ScalarType::Short => build_checked!(i16),
        ScalarType::Int => build_checked!(i32),
        ScalarType::Long => build!(i64),
        ScalarType::Half => build_float!(f16, |v| f16::from_f32(v as f32)),
        ScalarType::BFloat16 => build_float!(bf16, |v| bf16::from_f32(v as f32)),
        ScalarType::Float => build_float!(f32, |v| v as f32),
        ScalarType::Double => build!(f64),
        ScalarType::ComplexHalf => build_complex!(c32, f16::from_f32),
        ScalarType::ComplexFloat => build_complex!(c64, |x: f32| x),
        ScalarType::ComplexDouble => build!(c128),
        ScalarType::UInt16 => build_checked!(u16),
        ScalarType::UInt32 => build_checked!(u32),
        ScalarType::UInt64 => build_checked!(u64),
    }
}

/// The elements of `t` in row-major order, as the Python numbers `tolist()` gives (Bool,
/// Int, Double or ComplexDouble).
pub fn tensor_to_scalars(t: &Tensor) -> Result<Vec<Scalar>> {
    fn widen<T: Copy>(v: Vec<T>, f: impl Fn(T) -> Scalar) -> Vec<Scalar> {
        v.into_iter().map(f).collect()
    }
    Ok(match t.dtype() {
        ScalarType::Bool => widen(t.to_vec::<bool>()?, Scalar::Bool),
        ScalarType::Byte => widen(t.to_vec::<u8>()?, |x| Scalar::Int(x.into())),
        ScalarType::Char => widen(t.to_vec::<i8>()?, |x| Scalar::Int(x.into())),
        ScalarType::Short => widen(t.to_vec::<i16>()?, |x| Scalar::Int(x.into())),
        ScalarType::Int => widen(t.to_vec::<i32>()?, |x| Scalar::Int(x.into())),
        ScalarType::Long => widen(t.to_vec::<i64>()?, Scalar::Int),
        ScalarType::Half => widen(t.to_vec::<f16>()?, |x| Scalar::Double(x.into())),
        ScalarType::BFloat16 => widen(t.to_vec::<bf16>()?, |x| Scalar::Double(x.into())),
        ScalarType::Float => widen(t.to_vec::<f32>()?, |x| Scalar::Double(x.into())),
        ScalarType::Double => widen(t.to_vec::<f64>()?, Scalar::Double),
        ScalarType::ComplexHalf => widen(t.to_vec::<c32>()?, |x| {
            Scalar::ComplexDouble(Complex::new(x.re.into(), x.im.into()))
        }),
        ScalarType::ComplexFloat => widen(t.to_vec::<c64>()?, |x| {
            Scalar::ComplexDouble(Complex::new(x.re.into(), x.im.into()))
        }),
        ScalarType::ComplexDouble => widen(t.to_vec::<c128>()?, Scalar::ComplexDouble),
        ScalarType::UInt16 => widen(t.to_vec::<u16>()?, |x| Scalar::Int(x.into())),
        ScalarType::UInt32 => widen(t.to_vec::<u32>()?, |x| Scalar::Int(x.into())),
        ScalarType::UInt64 => widen(t.to_vec::<u64>()?, Scalar::from_u64),
    })
}

/// numpy's array-interface type string for a dtype; numpy has no bfloat16 or complex32, and
/// torch raises the same TypeError for them.
pub fn numpy_typestr(dtype: ScalarType) -> Result<&'static str> {
    Ok(match dtype {
        ScalarType::Bool => "|b1",
        ScalarType::Byte => "|u1",
        ScalarType::Char => "|i1",
        ScalarType::Short => "<i2",
        ScalarType::Int => "<i4",
        ScalarType::Long => "<i8",
        ScalarType::UInt16 => "<u2",
        ScalarType::UInt32 => "<u4",
        ScalarType::UInt64 => "<u8",
        ScalarType::Half => "<f2",
        ScalarType::Float => "<f4",
        ScalarType::Double => "<f8",
        ScalarType::ComplexFloat => "<c8",
        ScalarType::ComplexDouble => "<c16",
        ScalarType::BFloat16 | ScalarType::ComplexHalf => {
            return Err(Error::type_error(format!(
                "Got unsupported ScalarType {dtype}"
            )))
        }
    })
}

/// The dtype of a numpy array-interface type string (`<f4`, `|b1`, `=i8`, ...). torch's
/// message for the others.
pub fn dtype_from_typestr(typestr: &str, numpy_name: &str) -> Result<ScalarType> {
    let t = typestr.trim_start_matches(['<', '|', '=']);
    if typestr.starts_with('>') && !t.ends_with('1') {
        return Err(Error::value(
            "given numpy array has byte order different from the native byte order. Conversion \
             between byte orders is currently not supported.",
        ));
    }
    let t = t.trim_start_matches('>');
    Ok(match t {
        "b1" => ScalarType::Bool,
        "u1" => ScalarType::Byte,
        "i1" => ScalarType::Char,
        "i2" => ScalarType::Short,
        "i4" => ScalarType::Int,
        "i8" => ScalarType::Long,
        "u2" => ScalarType::UInt16,
        "u4" => ScalarType::UInt32,
        "u8" => ScalarType::UInt64,
        "f2" => ScalarType::Half,
        "f4" => ScalarType::Float,
        "f8" => ScalarType::Double,
        "c8" => ScalarType::ComplexFloat,
        "c16" => ScalarType::ComplexDouble,
        _ => {
            return Err(Error::type_error(format!(
                "can't convert np.ndarray of type {numpy_name}. The only supported types are: \
                 float64, float32, float16, complex64, complex128, int64, int32, int16, int8, \
                 uint64, uint32, uint16, uint8, and bool."
            )))
        }
    })
}

/// Element strides of a numpy array from its byte strides; torch's errors for the ones a
/// tensor cannot take.
pub fn element_strides(byte_strides: &[i64], itemsize: i64) -> Result<Vec<i64>> {
    byte_strides
        .iter()
        .map(|&s| {
            if s < 0 {
                return Err(Error::value(
                    "At least one stride in the given numpy array is negative, and tensors with \
                     negative strides are not currently supported. (You can probably work around \
                     this by making a copy of your array  with array.copy().) ",
                ));
            }
            if s % itemsize != 0 {
                return Err(Error::value(format!(
                    "given numpy array strides not a multiple of the element byte size. Copy \
                     the numpy array to reallocate the memory. (stride {s}, element size \
                     {itemsize})"
                )));
            }
            Ok(s / itemsize)
        })
        .collect()
}

/// Bytes spanned by a strided array (0 when it has no elements).
pub fn span_bytes(sizes: &[i64], strides: &[i64], itemsize: i64) -> i64 {
    if sizes.contains(&0) {
        return 0;
    }
    let last: i64 = sizes.iter().zip(strides).map(|(n, s)| (n - 1) * s).sum();
    (last + 1) * itemsize
}

/// The alignment a dtype's elements need in memory (Rust's `align_of`, which
/// `TensorBase::from_storage` checks foreign memory against): the element size, half of it
/// for a complex number (two reals).
pub fn element_alignment(dtype: ScalarType) -> usize {
    let size = dtype.element_size();
    if dtype.is_complex() {
        size / 2
    } else {
        size
    }
}

/// Whether a foreign buffer (numpy, DLPack) at `addr` can become a tensor's storage in
/// place: any buffer aligned to its elements can (the storage is then exactly its bytes).
/// A misaligned one (a numpy view at an odd byte offset) cannot: reading an element through
/// it would be undefined behaviour in the kernels.
pub fn can_share(addr: usize, dtype: ScalarType) -> bool {
    addr.is_multiple_of(element_alignment(dtype))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_inference_as_torch() {
        assert_eq!(
            infer_dtype(&[Scalar::Int(1), Scalar::Int(2)]),
            ScalarType::Long
        );
        assert_eq!(
            infer_dtype(&[Scalar::Int(1), Scalar::Double(2.0)]),
            ScalarType::Float
        );
        assert_eq!(infer_dtype(&[Scalar::Bool(true)]), ScalarType::Bool);
        assert_eq!(
            infer_dtype(&[Scalar::Bool(true), Scalar::Int(2)]),
            ScalarType::Long
        );
        assert_eq!(
            infer_dtype(&[
                Scalar::ComplexDouble(Complex::new(0.0, 1.0)),
                Scalar::Int(1)
            ]),
            ScalarType::ComplexFloat
        );
        assert_eq!(infer_dtype(&[]), ScalarType::Float);
    }

    #[test]
    fn build_and_read_back() {
        let v = [Scalar::Int(1), Scalar::Double(2.5), Scalar::Bool(true)];
        let t = tensor_from_scalars(&v, &[3], ScalarType::Double).unwrap();
        assert_eq!(
            tensor_to_scalars(&t).unwrap(),
            vec![
                Scalar::Double(1.0),
                Scalar::Double(2.5),
                Scalar::Double(1.0)
            ]
        );
        let t = tensor_from_scalars(&v, &[3], ScalarType::Long).unwrap();
        assert_eq!(
            tensor_to_scalars(&t).unwrap(),
            vec![Scalar::Int(1), Scalar::Int(2), Scalar::Int(1)]
        );
        let e = tensor_from_scalars(&[Scalar::Int(300)], &[1], ScalarType::Char).unwrap_err();
        assert_eq!(e.kind(), ratten_core::ErrorKind::Runtime);
        let t =
            tensor_from_scalars(&[Scalar::Int(1), Scalar::Int(0)], &[2], ScalarType::Bool).unwrap();
        assert_eq!(
            tensor_to_scalars(&t).unwrap(),
            vec![Scalar::Bool(true), Scalar::Bool(false)]
        );
    }

    /// A test tree: a list (by arena index, so a list can hold itself) or a number.
    #[derive(Clone, Debug)]
    enum Node {
        List(usize),
        Num(Scalar),
        Big(f64),
        Str,
    }
    struct Tree {
        lists: Vec<Vec<Node>>,
        /// A list whose `__len__` lies: it claims this many, `get` fails past the truth.
        lying_len: Option<(usize, usize)>,
        reads: usize,
    }
    impl NestedData for Tree {
        type Obj = Node;
        type Err = String;
        fn seq_len(&mut self, obj: &Node) -> std::result::Result<Option<usize>, String> {
            Ok(match obj {
                Node::List(i) => Some(match self.lying_len {
                    Some((l, n)) if l == *i => n,
                    _ => self.lists[*i].len(),
                }),
                _ => None,
            })
        }
        fn get(&mut self, obj: &Node, i: usize) -> std::result::Result<Node, String> {
            self.reads += 1;
            match obj {
                Node::List(l) => self.lists[*l].get(i).cloned().ok_or("IndexError".into()),
                _ => Err("not a list".into()),
            }
        }
        fn leaf(&mut self, obj: &Node) -> std::result::Result<Leaf, String> {
            match obj {
                Node::Num(s) => Ok(Leaf::Scalar(*s)),
                Node::Big(v) => Ok(Leaf::BigInt(*v)),
                Node::Str => Err("new(): invalid data type 'str'".into()),
                Node::List(_) => Err("'list' object cannot be interpreted as an integer".into()),
            }
        }
        fn is_same(&self, a: &Node, b: &Node) -> bool {
            matches!((a, b), (Node::List(x), Node::List(y)) if x == y)
        }
        fn type_name(&self, obj: &Node) -> String {
            match obj {
                Node::List(_) => "list".into(),
                _ => "int".into(),
            }
        }
    }
    fn tree(lists: Vec<Vec<Node>>) -> Tree {
        Tree {
            lists,
            lying_len: None,
            reads: 0,
        }
    }
    fn int(i: i64) -> Node {
        Node::Num(Scalar::Int(i))
    }
    fn data_err<E: std::fmt::Debug>(r: std::result::Result<Walked, WalkError<E>>) -> Error {
        match r {
            Err(WalkError::Data(e)) => e,
            other => panic!("expected a data error, got {other:?}"),
        }
    }

    #[test]
    fn flatten_shapes_and_values() {
        // [[1, 2], [3, 4], [5, 6]]
        let mut t = tree(vec![
            vec![Node::List(1), Node::List(2), Node::List(3)],
            vec![int(1), int(2)],
            vec![int(3), int(4)],
            vec![int(5), int(6)],
        ]);
        let w = flatten(&mut t, &Node::List(0)).unwrap();
        assert_eq!(w.flat.sizes, vec![3, 2]);
        assert_eq!(w.flat.values, (1..=6).map(Scalar::Int).collect::<Vec<_>>());
        // A bare number is a 0-dim tensor; [[], []] is (2, 0).
        let w = flatten(&mut tree(vec![]), &int(7)).unwrap();
        assert!(w.flat.sizes.is_empty());
        let mut t = tree(vec![vec![Node::List(1), Node::List(1)], vec![]]);
        let w = flatten(&mut t, &Node::List(0)).unwrap();
        assert_eq!(w.flat.sizes, vec![2, 0]);
        assert!(w.flat.values.is_empty());
        // [[], [1]] and [[], 1] too: no elements, so nothing past the sizes is read.
        for second in [Node::List(2), int(1)] {
            let mut t = tree(vec![vec![Node::List(1), second], vec![], vec![int(1)]]);
            let w = flatten(&mut t, &Node::List(0)).unwrap();
            assert_eq!(w.flat.sizes, vec![2, 0]);
            // The empty list counts as a float, as in torch.
            assert_eq!(w.infer_dtype().unwrap(), ScalarType::Float);
        }
        // ... but its leaves are still read: [[], ["a"]] is the leaf's error.
        let mut t = tree(vec![
            vec![Node::List(1), Node::List(2)],
            vec![],
            vec![Node::Str],
        ]);
        assert!(matches!(
            flatten(&mut t, &Node::List(0)),
            Err(WalkError::Source(_))
        ));
        // Element-less lists holding each other: the walk ends (a bounded number of visits).
        let mut t = tree(vec![
            vec![Node::List(1), Node::List(2)],
            vec![],
            vec![Node::List(3), Node::List(3)],
            vec![Node::List(2), Node::List(2)],
        ]);
        let w = flatten(&mut t, &Node::List(0)).unwrap();
        assert_eq!(w.flat.sizes, vec![2, 0]);
        assert!(t.reads <= INFER_BUDGET + MAX_DIMS + 2);
    }

    #[test]
    fn flatten_ragged_and_mixed_are_torchs_errors() {
        // [[1, 2], [3]]
        let mut t = tree(vec![
            vec![Node::List(1), Node::List(2)],
            vec![int(1), int(2)],
            vec![int(3)],
        ]);
        let e = data_err(flatten(&mut t, &Node::List(0)));
        assert_eq!(e.kind(), ratten_core::ErrorKind::Value);
        assert_eq!(
            e.message(),
            "expected sequence of length 2 at dim 1 (got 1)"
        );
        // [[1, 2], 3]
        let mut t = tree(vec![vec![Node::List(1), int(3)], vec![int(1), int(2)]]);
        let e = data_err(flatten(&mut t, &Node::List(0)));
        assert_eq!(e.kind(), ratten_core::ErrorKind::Type);
        assert_eq!(e.message(), "not a sequence");
        // [1, [2, 3]]: the leaf reader's own error.
        let mut t = tree(vec![vec![int(1), Node::List(1)], vec![int(2), int(3)]]);
        assert!(matches!(
            flatten(&mut t, &Node::List(0)),
            Err(WalkError::Source(m)) if m.contains("cannot be interpreted")
        ));
        let mut t = tree(vec![vec![int(1), Node::Str]]);
        assert!(matches!(
            flatten(&mut t, &Node::List(0)),
            Err(WalkError::Source(_))
        ));
    }

    #[test]
    fn flatten_depth_is_bounded() {
        // 128 nested lists are fine, 129 are too many; 100000 end the same way, after
        // reading no further than the limit.
        for (depth, ok) in [(MAX_DIMS, true), (MAX_DIMS + 1, false), (100_000, false)] {
            let mut lists: Vec<Vec<Node>> = (1..depth).map(|i| vec![Node::List(i)]).collect();
            lists.push(vec![int(1)]);
            let mut t = tree(lists);
            let r = flatten(&mut t, &Node::List(0));
            if ok {
                assert_eq!(r.unwrap().flat.sizes.len(), depth);
            } else {
                let e = data_err(r);
                assert_eq!(e.kind(), ratten_core::ErrorKind::Value);
                assert_eq!(e.message(), "too many dimensions 'list'");
                assert!(t.reads <= MAX_DIMS + 1);
            }
        }
    }

    #[test]
    fn flatten_self_reference_ends() {
        // l = []; l.append(l): infinitely deep, so too many dimensions.
        let mut t = tree(vec![vec![Node::List(0)]]);
        let e = data_err(flatten(&mut t, &Node::List(0)));
        assert_eq!(e.message(), "too many dimensions 'list'");
        // l = [1]; l.append(l): torch's self-reference error.
        let mut t = tree(vec![vec![int(1), Node::List(0)]]);
        let e = data_err(flatten(&mut t, &Node::List(0)));
        assert_eq!(e.kind(), ratten_core::ErrorKind::Type);
        assert_eq!(
            e.message(),
            "new(): self-referential lists are incompatible"
        );
        // l = [[1]]; l[0].append(l) (torch itself crashes on this one): an error.
        let mut t = tree(vec![vec![Node::List(1)], vec![int(1), Node::List(0)]]);
        assert!(flatten(&mut t, &Node::List(0)).is_err());
        // [[1, 2], l] for l itself.
        let mut t = tree(vec![
            vec![Node::List(1), Node::List(0)],
            vec![int(1), int(2)],
        ]);
        let e = data_err(flatten(&mut t, &Node::List(0)));
        assert_eq!(
            e.message(),
            "new(): self-referential lists are incompatible"
        );
    }

    #[test]
    fn flatten_lying_length_is_the_sources_error() {
        // A list claiming 5 elements that has 2: reading past them is the source's error.
        let mut t = tree(vec![vec![int(1), int(2)]]);
        t.lying_len = Some((0, 5));
        assert!(matches!(
            flatten(&mut t, &Node::List(0)),
            Err(WalkError::Source(m)) if m == "IndexError"
        ));
        // A length too large to reserve is an error, never an abort.
        let mut t = tree(vec![vec![Node::List(1)], vec![int(1)]]);
        t.lying_len = Some((1, usize::MAX / 2));
        let e = data_err(flatten(&mut t, &Node::List(0)));
        assert_eq!(e.kind(), ratten_core::ErrorKind::Runtime);
    }

    #[test]
    fn big_ints_by_dtype() {
        let mut t = tree(vec![vec![Node::Big(2f64.powi(70)), int(1)]]);
        let w = flatten(&mut t, &Node::List(0)).unwrap();
        assert_eq!(infer_dtype(&w.flat.values), ScalarType::Long);
        let e = w.clone().values_for(ScalarType::Long).unwrap_err();
        assert_eq!(e.kind(), ratten_core::ErrorKind::Value);
        assert_eq!(e.message(), "Overflow when unpacking long long");
        assert_eq!(
            w.values_for(ScalarType::Double).unwrap(),
            vec![Scalar::Double(2f64.powi(70)), Scalar::Int(1)]
        );
    }

    #[test]
    fn numpy_layout_rules() {
        assert_eq!(numpy_typestr(ScalarType::Float).unwrap(), "<f4");
        assert!(numpy_typestr(ScalarType::BFloat16).is_err());
        assert_eq!(
            dtype_from_typestr("<i8", "int64").unwrap(),
            ScalarType::Long
        );
        assert_eq!(dtype_from_typestr("|b1", "bool").unwrap(), ScalarType::Bool);
        assert!(dtype_from_typestr("<U3", "str96").is_err());
        assert_eq!(element_strides(&[24, 8], 8).unwrap(), vec![3, 1]);
        assert!(element_strides(&[-8], 8).is_err());
        assert!(element_strides(&[3], 8).is_err());
        assert_eq!(span_bytes(&[2, 3], &[3, 1], 8), 48);
        assert_eq!(span_bytes(&[2, 0], &[3, 1], 8), 0);
        assert!(can_share(128, ScalarType::Double));
        assert!(can_share(16, ScalarType::Long));
        assert!(can_share(4, ScalarType::Float));
        assert!(!can_share(4, ScalarType::Double));
        assert!(!can_share(1, ScalarType::Float));
        assert!(can_share(3, ScalarType::Bool));
        // complex128 is two f64: 8-byte alignment suffices.
        assert!(can_share(8, ScalarType::ComplexDouble));
        assert!(!can_share(4, ScalarType::ComplexDouble));
    }
}
