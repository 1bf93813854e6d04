//! ratten-aten: PyTorch's ATen. The user-facing [`Tensor`] (a `TensorBase` handle from
//! ratten-core that carries the operator methods), the native kernels, and later
//! TensorIterator, DispatchStub and the generated operator API.

pub mod dimname;
pub mod dispatch_stub;
pub mod formatting;
// Generated from native_functions.yaml by `ratten-gen generate` (checked in, rustfmt-clean).
pub mod generated;
pub mod native;
pub mod ops;
pub mod random;
pub mod structured;
pub mod tensor;
pub mod tensor_iterator;

pub use generated::{backends, functions, operators};
pub use tensor::Tensor;
