//! ratten-dispatch: the dispatcher (c10/core/dispatch, ATen/core/boxing, torch/library.h).
//!
//! - [`Dispatcher`]: the operator table; `def`/`impl`/fallback registration with RAII
//!   [`RegistrationHandle`]s; computed dispatch tables with PyTorch's precedence; dumps.
//! - [`OperatorHandle`] (boxed calls on a [`Stack`] of [`IValue`]s) and
//!   [`TypedOperatorHandle`] (typed calls, the fast path); redispatch below a key.
//! - [`Operator`]: a statically known overload (the generated `operators::add_Tensor`), its
//!   handle kept in an [`OperatorCell`].
//! - [`Library`] with the `torch_library!` / `torch_library_impl!` /
//!   `torch_library_fragment!` macros for static registration.

pub mod dispatcher;
pub mod ivalue;
pub mod kernel_function;
pub mod library;
pub mod operator;

pub use dispatcher::{
    capture_dispatch_trace, debug_string, parse_operator_name, set_show_dispatch_trace,
    show_dispatch_trace, AliasAnalysisKind, Dispatcher, OperatorHandle, RegistrationHandle,
    TypedOperatorHandle,
};
pub use ivalue::{Aliased, IValue, KernelArgs, KernelReturn, KernelValue, Stack, TensorLike};
pub use kernel_function::{
    clone_with_real_types, find_schema_differences, infer_function_schema, KernelFunction,
    TypedKernel, WithKeySet,
};
pub use library::{CppFunction, Library, LibraryKind, StaticLibraryInit};
pub use operator::{Operator, OperatorCell};
pub use ratten_core::{DispatchKey, DispatchKeySet, Error, Result};

#[doc(hidden)]
pub use inventory;
