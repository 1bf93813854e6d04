//! ratten-aten: PyTorch's ATen. The user-facing [`Tensor`] (a `TensorBase` handle from
//! ratten-core that carries the operator methods), the native kernels, and later
//! TensorIterator, DispatchStub and the generated operator API.

pub mod dispatch_stub;
pub mod formatting;
pub mod native;
pub mod random;
pub mod structured;
pub mod tensor;
pub mod tensor_iterator;

pub use tensor::Tensor;
