//! KernelFunction (ATen/core/boxing/KernelFunction.h): a kernel callable boxed (on a stack
//! of IValues) and, when it was registered typed, unboxed.
//!
//! Note [Typed calls]
//! A typed kernel is stored as a `Box<dyn TypedKernel<A, R>>` behind an erased pointer, with
//! the `TypeId` of `(A, R)`. A typed call compares that id with its own (a constant) and
//! makes one virtual call; on a mismatch (a boxed kernel, or a kernel registered with other
//! Rust types for the same schema) it boxes its arguments and calls the boxed function.
//! A boxed call of a typed kernel pops the arguments, borrows them and calls it typed.
//!
//! Note [Typed calls through the autograd fallback]
//! The framework's autograd fallback is boxed (as in PyTorch), and its only effect is to
//! redispatch below the autograd keys. A typed call through it would box every argument
//! into a heap stack and unbox them again for the kernel below (a third of a small op's
//! cost), so a KernelFunction made from that fallback remembers the redispatch mask and a
//! typed call performs the same redispatch typed. Boxed calls, and typed calls while the
//! dispatch trace is on (so the trace shows `[redispatchBoxed]` as PyTorch's does), still
//! run the boxed function.

use std::any::{Any, TypeId};
use std::sync::Arc;

use ratten_core::{DispatchKeySet, Error, Result};
use ratten_schema::{Argument, FunctionSchema, OperatorName, Return, Type};

use crate::dispatcher::OperatorHandle;
use crate::ivalue::{KernelArgs, KernelReturn, Stack};

/// The boxed calling convention: the operator, the dispatch key set of this call, the stack.
pub type BoxedKernelFn =
    dyn Fn(&OperatorHandle, DispatchKeySet, &mut Stack) -> Result<()> + Send + Sync;

/// A kernel taking typed arguments `A` and returning `R`. Implemented for closures and fns
/// taking the borrowed argument forms (`Fn(&TensorBase, i64) -> Result<TensorBase>`), and for
/// [`WithKeySet`] around ones that also take the call's `DispatchKeySet` first.
pub trait TypedKernel<A: KernelArgs, R>: Send + Sync + 'static {
    fn call(&self, ks: DispatchKeySet, args: A::Refs<'_>) -> Result<R>;
}

/// Marks a kernel whose first parameter is the call's `DispatchKeySet` (for redispatch), like
/// PyTorch kernels taking `c10::DispatchKeySet` first.
pub struct WithKeySet<F>(pub F);

macro_rules! typed_kernel_impls {
    ($($a:ident $x:ident),*) => {
        impl<F, R, $($a),*> TypedKernel<($($a,)*), R> for F
        where
            F: for<'a> Fn($($a::Ref<'a>),*) -> Result<R> + Send + Sync + 'static,
            $($a: crate::ivalue::KernelValue,)*
        {
            #[inline(always)]
            fn call(&self, _ks: DispatchKeySet, args: <($($a,)*) as KernelArgs>::Refs<'_>) -> Result<R> {
                let ($($x,)*) = args;
                self($($x),*)
            }
        }
        impl<F, R, $($a),*> TypedKernel<($($a,)*), R> for WithKeySet<F>
        where
            F: for<'a> Fn(DispatchKeySet, $($a::Ref<'a>),*) -> Result<R> + Send + Sync + 'static,
            $($a: crate::ivalue::KernelValue,)*
        {
            #[inline(always)]
            fn call(&self, ks: DispatchKeySet, args: <($($a,)*) as KernelArgs>::Refs<'_>) -> Result<R> {
                let ($($x,)*) = args;
                (self.0)(ks, $($x),*)
            }
        }
    };
}

typed_kernel_impls!();
typed_kernel_impls!(A0 a0);
typed_kernel_impls!(A0 a0, A1 a1);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13, A14 a14);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13, A14 a14, A15 a15);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13, A14 a14, A15 a15, A16 a16);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13, A14 a14, A15 a15, A16 a16, A17 a17);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13, A14 a14, A15 a15, A16 a16, A17 a17, A18 a18);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13, A14 a14, A15 a15, A16 a16, A17 a17, A18 a18, A19 a19);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13, A14 a14, A15 a15, A16 a16, A17 a17, A18 a18, A19 a19, A20 a20);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13, A14 a14, A15 a15, A16 a16, A17 a17, A18 a18, A19 a19, A20 a20, A21 a21);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13, A14 a14, A15 a15, A16 a16, A17 a17, A18 a18, A19 a19, A20 a20, A21 a21, A22 a22);
typed_kernel_impls!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12, A13 a13, A14 a14, A15 a15, A16 a16, A17 a17, A18 a18, A19 a19, A20 a20, A21 a21, A22 a22, A23 a23);

/// The unboxed half of a kernel: the signature id and a pointer to the
/// `Box<dyn TypedKernel<A, R>>` kept alive by `_keep`.
#[derive(Clone)]
struct Unboxed {
    sig: TypeId,
    ptr: *const (),
    _keep: Arc<dyn Any + Send + Sync>,
}

// SAFETY: `ptr` points into `_keep`, which is Send + Sync and immutable; the pointee is a
// `Box<dyn TypedKernel>` whose trait requires Send + Sync.
unsafe impl Send for Unboxed {}
// SAFETY: as above.
unsafe impl Sync for Unboxed {}

/// PyTorch's KernelFunction: invalid (missing), fallthrough, boxed, or boxed + unboxed.
#[derive(Clone, Default)]
pub struct KernelFunction {
    boxed: Option<Arc<BoxedKernelFn>>,
    unboxed: Option<Unboxed>,
    fallthrough: bool,
    /// Set for the framework's autograd fallback: typed calls redispatch with `ks & mask`
    /// instead of boxing (see Note [Typed calls through the autograd fallback]).
    typed_redispatch: Option<DispatchKeySet>,
}

const FALLTHROUGH_CALLED: &str = "fallthrough_kernel was executed but it should have been short-circuited by the dispatcher. This could occur if you registered a fallthrough kernel as a override for a specific operator (as opposed to a backend fallback); this is NOT currently supported, and we do not intend to add support for it in the near future.  If you do find yourself in need of this, let us know in the bug tracker.";

impl KernelFunction {
    /// The invalid kernel (`missingKernel()`): calling it reports the missing-kernel error.
    pub fn missing() -> Self {
        KernelFunction::default()
    }

    /// `makeFallthrough()`: the dispatcher skips keys whose entry is a fallthrough.
    pub fn fallthrough() -> Self {
        KernelFunction {
            boxed: Some(Arc::new(
                |_: &OperatorHandle, _: DispatchKeySet, _: &mut Stack| {
                    Err(Error::runtime(FALLTHROUGH_CALLED))
                },
            )),
            unboxed: None,
            fallthrough: true,
            typed_redispatch: None,
        }
    }

    /// A boxed kernel from a closure (`makeFromBoxedFunction`). Serves typed calls too.
    pub fn from_boxed<F>(f: F) -> Self
    where
        F: Fn(&OperatorHandle, DispatchKeySet, &mut Stack) -> Result<()> + Send + Sync + 'static,
    {
        KernelFunction {
            typed_redispatch: crate::dispatcher::typed_redispatch_mask::<F>(),
            boxed: Some(Arc::new(f)),
            unboxed: None,
            fallthrough: false,
        }
    }

    /// A typed kernel (`makeFromUnboxedFunctor`): callable unboxed with exactly `(A, R)` and
    /// boxed from any stack.
    pub fn from_typed<A, R, F>(f: F) -> Self
    where
        A: KernelArgs,
        R: KernelReturn,
        F: TypedKernel<A, R>,
    {
        let typed: Arc<Box<dyn TypedKernel<A, R>>> = Arc::new(Box::new(f));
        let boxed_typed = typed.clone();
        let boxed =
            move |_: &OperatorHandle, ks: DispatchKeySet, stack: &mut Stack| -> Result<()> {
                let args = A::pop(stack)?;
                let r = boxed_typed.call(ks, args.borrow())?;
                match R::ALIASED_ARG {
                    // Note [Aliased returns]: the boxed form returns the argument itself.
                    Some(k) => stack.push(args.into_ivalue_at(k).ok_or_else(|| {
                        Error::runtime(format!(
                            "a kernel's return aliases argument {k}, but it takes {} arguments",
                            A::LEN
                        ))
                    })?),
                    None => r.push(stack),
                }
                Ok(())
            };
        let ptr = Arc::as_ptr(&typed) as *const ();
        KernelFunction {
            boxed: Some(Arc::new(boxed)),
            unboxed: Some(Unboxed {
                sig: TypeId::of::<(A, R)>(),
                ptr,
                _keep: typed,
            }),
            fallthrough: false,
            typed_redispatch: None,
        }
    }

    /// `isValid()`.
    pub fn is_valid(&self) -> bool {
        self.boxed.is_some()
    }
    /// `isFallthrough()`.
    pub fn is_fallthrough(&self) -> bool {
        self.fallthrough
    }
    pub fn has_unboxed(&self) -> bool {
        self.unboxed.is_some()
    }
    /// The mask a typed call redispatches with instead of boxing (only the framework's
    /// autograd fallback has one).
    pub fn typed_redispatch_mask(&self) -> Option<DispatchKeySet> {
        self.typed_redispatch
    }

    /// `dumpState()`: `fallthrough `, `boxed `, `unboxed ` as present.
    pub fn dump_state(&self) -> String {
        let mut s = String::new();
        if self.fallthrough {
            s.push_str("fallthrough ");
        }
        if self.boxed.is_some() {
            s.push_str("boxed ");
        }
        if self.unboxed.is_some() {
            s.push_str("unboxed ");
        }
        s
    }

    /// Calls boxed. An invalid kernel reports the operator's missing-kernel error.
    pub fn call_boxed(
        &self,
        op: &OperatorHandle,
        ks: DispatchKeySet,
        stack: &mut Stack,
    ) -> Result<()> {
        match &self.boxed {
            Some(b) => b(op, ks, stack),
            None => Err(op.report_error(ks.highest_priority_type_id())),
        }
    }

    /// Calls typed: one virtual call when the kernel was registered with `(A, R)`, else
    /// through the boxed function.
    #[inline(always)]
    pub fn call_typed<A: KernelArgs, R: KernelReturn>(
        &self,
        op: &OperatorHandle,
        ks: DispatchKeySet,
        args: A::Refs<'_>,
    ) -> Result<R> {
        if let Some(u) = &self.unboxed {
            if u.sig == TypeId::of::<(A, R)>() {
                // SAFETY: `sig` equals the TypeId of `(A, R)`, so `ptr` was made by
                // `from_typed::<A, R, _>` from an `Arc<Box<dyn TypedKernel<A, R>>>` that `_keep`
                // holds alive for as long as `self` lives.
                let k = unsafe { &*(u.ptr as *const Box<dyn TypedKernel<A, R>>) };
                return k.call(ks, args);
            }
        }
        if let Some(mask) = self.typed_redispatch {
            if !crate::dispatcher::show_dispatch_trace_fast() {
                return Self::redispatch_typed::<A, R>(op, ks & mask, args);
            }
        }
        self.call_typed_via_boxed::<A, R>(op, ks, args)
    }

    /// The typed form of the autograd fallback's redispatch (out of line: it recurses into
    /// `call_typed` for the kernel below).
    #[inline(never)]
    fn redispatch_typed<A: KernelArgs, R: KernelReturn>(
        op: &OperatorHandle,
        ks: DispatchKeySet,
        args: A::Refs<'_>,
    ) -> Result<R> {
        op.lookup_kernel(ks).call_typed::<A, R>(op, ks, args)
    }

    #[cold]
    #[inline(never)]
    fn call_typed_via_boxed<A: KernelArgs, R: KernelReturn>(
        &self,
        op: &OperatorHandle,
        ks: DispatchKeySet,
        args: A::Refs<'_>,
    ) -> Result<R> {
        let mut stack = Stack::with_capacity(A::LEN.max(R::LEN));
        A::push(&args, &mut stack);
        self.call_boxed(op, ks, &mut stack)?;
        if stack.len() != R::LEN {
            return Err(Error::runtime(format!(
                "{}: the kernel left {} values on the stack but the typed call expects {} returns",
                op.operator_name(),
                stack.len(),
                R::LEN
            )));
        }
        R::pop(&mut stack)
    }

    /// Whether two kernel functions are the same registration (for invariant checks).
    pub(crate) fn same_as(&self, other: &KernelFunction) -> bool {
        let b = match (&self.boxed, &other.boxed) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        b && self.fallthrough == other.fallthrough
    }
}

/// `inferFunctionSchemaFromFunctor`: the anonymous schema of a typed kernel, arguments and
/// returns named `_0`, `_1`, ... (`(Tensor _0) -> Tensor _0`).
pub fn infer_function_schema<A: KernelArgs, R: KernelReturn>() -> FunctionSchema {
    let arguments = A::schema_types()
        .into_iter()
        .enumerate()
        .map(|(i, t)| Argument::new(format!("_{i}"), t))
        .collect();
    let returns = R::schema_types()
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let mut r = Return::new(t);
            r.name = Some(format!("_{i}"));
            r
        })
        .collect();
    FunctionSchema {
        name: OperatorName::new("", ""),
        arguments,
        returns,
        is_vararg: false,
        is_varret: false,
    }
}

/// `findSchemaDifferences(lhs, rhs)`: PyTorch's reason text, or `None` when they match.
/// Types are compared as c10's real types (SymInt as int, Dimname as str; list sizes aside).
pub fn find_schema_differences(lhs: &FunctionSchema, rhs: &FunctionSchema) -> Option<String> {
    if lhs.arguments.len() != rhs.arguments.len() {
        return Some(format!(
            "The number of arguments is different. {} vs {}.",
            lhs.arguments.len(),
            rhs.arguments.len()
        ));
    }
    if lhs.returns.len() != rhs.returns.len() {
        return Some(format!(
            "The number of returns is different. {} vs {}.",
            lhs.returns.len(),
            rhs.returns.len()
        ));
    }
    for (i, (l, r)) in lhs.arguments.iter().zip(&rhs.arguments).enumerate() {
        if unsized_type(&l.ty) != unsized_type(&r.ty) {
            return Some(format!(
                "Type mismatch in argument {}: {} vs {}",
                i + 1,
                real_type(&l.ty),
                real_type(&r.ty)
            ));
        }
    }
    for (i, (l, r)) in lhs.returns.iter().zip(&rhs.returns).enumerate() {
        if unsized_type(&l.ty) != unsized_type(&r.ty) {
            return Some(format!(
                "Type mismatch in return {}: {} vs {}",
                i + 1,
                real_type(&l.ty),
                real_type(&r.ty)
            ));
        }
    }
    None
}

/// `cloneWithRealTypes()`: the schema with SymInt as int (kernels here are not symbolic).
pub fn clone_with_real_types(s: &FunctionSchema) -> FunctionSchema {
    let mut c = s.clone();
    for a in &mut c.arguments {
        a.ty = real_type(&a.ty);
    }
    for r in &mut c.returns {
        r.ty = real_type(&r.ty);
    }
    c
}

/// c10's real type, keeping a list's fixed size (printed as `int[2]`).
fn real_type(t: &Type) -> Type {
    match t.real() {
        Type::SymInt => Type::Int,
        Type::Optional(e) => Type::optional(real_type(&e)),
        Type::List { elem, size } => Type::List {
            elem: Box::new(real_type(&elem)),
            size,
        },
        other => other,
    }
}

/// The real type without list sizes: what two schemas must agree on.
fn unsized_type(t: &Type) -> Type {
    match real_type(t) {
        Type::Optional(e) => Type::optional(unsized_type(&e)),
        Type::List { elem, .. } => Type::list(unsized_type(&elem)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratten_core::TensorBase;

    #[test]
    fn inferred_schema_prints_as_pytorch() {
        let s = infer_function_schema::<(TensorBase,), TensorBase>();
        assert_eq!(s.to_string(), "(Tensor _0) -> Tensor _0");
        let s = infer_function_schema::<
            (TensorBase, i64, Option<TensorBase>),
            (TensorBase, TensorBase),
        >();
        assert_eq!(
            s.to_string(),
            "(Tensor _0, int _1, Tensor? _2) -> (Tensor _0, Tensor _1)"
        );
        assert_eq!(infer_function_schema::<(), ()>().to_string(), "() -> ()");
    }

    #[test]
    fn schema_differences_use_pytorch_reasons() {
        let def = FunctionSchema::parse("test::foo(Tensor x, SymInt n) -> Tensor").unwrap();
        let ok = infer_function_schema::<(TensorBase, i64), TensorBase>();
        assert_eq!(find_schema_differences(&def, &ok), None);
        let one = infer_function_schema::<(TensorBase,), TensorBase>();
        assert_eq!(
            find_schema_differences(&def, &one).unwrap(),
            "The number of arguments is different. 2 vs 1."
        );
        let wrong = infer_function_schema::<(TensorBase, f64), TensorBase>();
        assert_eq!(
            find_schema_differences(&def, &wrong).unwrap(),
            "Type mismatch in argument 2: int vs float"
        );
        let rets = infer_function_schema::<(TensorBase, i64), ()>();
        assert_eq!(
            find_schema_differences(&def, &rets).unwrap(),
            "The number of returns is different. 1 vs 0."
        );
    }

    #[test]
    fn kernel_function_states() {
        assert_eq!(KernelFunction::missing().dump_state(), "");
        assert!(!KernelFunction::missing().is_valid());
        assert_eq!(
            KernelFunction::fallthrough().dump_state(),
            "fallthrough boxed "
        );
        let k = KernelFunction::from_typed::<(i64,), i64, _>(|x: i64| Ok(x + 1));
        assert_eq!(k.dump_state(), "boxed unboxed ");
        assert!(k.has_unboxed() && !k.is_fallthrough());
    }
}
