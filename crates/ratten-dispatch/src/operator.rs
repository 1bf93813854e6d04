//! Statically known operators (PyTorch's generated `at::_ops::add_Tensor`): the generic
//! handle the generated operator API is written against.
//!
//! Note [Static operator handles]
//! PyTorch generates per overload a struct with its name, overload name and schema, a typed
//! handle created on first use and kept in a function-local static, and `call` / `redispatch`.
//! ratten's generator declares per overload an uninhabited type implementing [`Operator`]:
//! the constants and the typed signature are its own, its handle lives in its own `static`
//! [`OperatorCell`] (Rust has no generic statics, so each operator names one), and the
//! find-once and the calls are written here once. `call_refs` and `redispatch_refs` are
//! `#[inline(always)]`: each generated `call` (an out-of-line function of the crate that
//! declares the operator, taking the borrowed arguments one by one) holds the whole typed
//! dispatch, one frame, as `TypedOperatorHandle::call` documents.

use std::sync::OnceLock;

use crate::dispatcher::TypedOperatorHandle;
use crate::ivalue::{KernelArgs, KernelReturn};
use crate::kernel_function::TypedKernel;
use crate::library::CppFunction;
use ratten_core::{DispatchKeySet, Result};

/// An operator overload known at compile time (Note [Static operator handles]).
pub trait Operator: Sized + 'static {
    /// The qualified name (`aten::add`).
    const NAME: &'static str;
    /// The overload name (`Tensor`; empty for none).
    const OVERLOAD_NAME: &'static str;
    /// The schema as declared (`add.Tensor(Tensor self, ...) -> Tensor`).
    const SCHEMA: &'static str;
    /// The typed signature: the owned argument tuple and the return.
    type Args: KernelArgs;
    type Return: KernelReturn;

    /// The cell its typed handle is kept in (the operator's own `static`).
    fn cell() -> &'static OperatorCell<Self>;

    /// The typed handle, found on first use and kept.
    #[inline(always)]
    fn handle() -> Result<TypedOperatorHandle<Self::Args, Self::Return>> {
        Self::cell().get()
    }

    /// Calls through the dispatcher with the borrowed arguments as one tuple.
    #[inline(always)]
    fn call_refs(args: <Self::Args as KernelArgs>::Refs<'_>) -> Result<Self::Return> {
        Self::handle()?.call(args)
    }

    /// Calls the kernel for the highest key of `ks` (from a kernel, below its own key).
    #[inline(always)]
    fn redispatch_refs(
        ks: DispatchKeySet,
        args: <Self::Args as KernelArgs>::Refs<'_>,
    ) -> Result<Self::Return> {
        Self::handle()?.redispatch(ks, args)
    }

    /// A typed kernel for this operator, for `Library::impl_`.
    fn kernel<F: TypedKernel<Self::Args, Self::Return>>(f: F) -> CppFunction {
        CppFunction::typed::<Self::Args, Self::Return, F>(f)
    }
}

/// Where an [`Operator`]'s typed handle is kept once found.
pub struct OperatorCell<O: Operator> {
    handle: OnceLock<TypedOperatorHandle<O::Args, O::Return>>,
    /// Called before the first lookup: references the registrations of the crate that
    /// declares the operator, so that they are linked into every binary that calls it.
    ensure_linked: fn(),
}

impl<O: Operator> OperatorCell<O> {
    pub const fn new(ensure_linked: fn()) -> Self {
        OperatorCell {
            handle: OnceLock::new(),
            ensure_linked,
        }
    }

    /// The handle, found on the first call.
    #[inline(always)]
    pub fn get(&self) -> Result<TypedOperatorHandle<O::Args, O::Return>> {
        match self.handle.get() {
            Some(h) => Ok(*h),
            None => self.find(),
        }
    }

    #[cold]
    #[inline(never)]
    fn find(&self) -> Result<TypedOperatorHandle<O::Args, O::Return>> {
        (self.ensure_linked)();
        let h = TypedOperatorHandle::find(O::NAME, O::OVERLOAD_NAME)?;
        Ok(*self.handle.get_or_init(|| h))
    }
}
