//! myops: an operator library outside ratten. It declares `myops::scaled_add` (functional,
//! in-place and out=, structured) in its own `native_functions.yaml`, writes one meta and one
//! CPU kernel (src/kernels.rs), and gets from `ratten-gen generate` the operator handles, the
//! functions, the Tensor methods (the [`TensorMyopsExt`] extension trait, since `Tensor` lives
//! in ratten-aten), the structured wrappers, Meta support, and the static registration with
//! ratten's dispatcher. From its own `derivatives.yaml`, `ratten-gen generate --autograd` makes
//! its autograd: the backward node `ScaledAddBackward0`, the Autograd kernels (backward and
//! forward mode) and the ADInplaceOrView kernels, registered under `myops`.
//!
//! ```
//! use myops::TensorMyopsExt;
//! use ratten_aten::Tensor;
//! let a = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
//! let b = Tensor::from_slice(&[10.0f32, 20.0], &[2]).unwrap();
//! assert_eq!(a.scaled_add_with(&b, 0.5).unwrap().to_vec::<f32>().unwrap(), vec![6.0, 12.0]);
//! ```

// Generated from native_functions.yaml by `ratten-gen generate` (checked in, rustfmt-clean).
pub mod generated;
// Generated from native_functions.yaml and derivatives.yaml by `ratten-gen generate
// --autograd` (checked in).
pub mod generated_autograd;
pub mod kernels;

pub use generated::functions::*;
pub use generated::TensorMyopsExt;

/// Keeps myops' registrations linked into every binary that calls one of its operators: the
/// operator handles call it before their first lookup (Note [Static operator handles]). The
/// Autograd and ADInplaceOrView kernels are referenced by nothing else, so without it a binary
/// could run the operators without their autograd.
#[inline(never)]
pub fn ensure_linked() {
    generated::registration::ensure_linked();
    generated_autograd::registration::ensure_linked();
}
