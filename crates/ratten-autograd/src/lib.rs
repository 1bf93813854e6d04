//! ratten-autograd: PyTorch's torch/csrc/autograd. The backward graph ([`Node`], [`Edge`]),
//! the tensors' autograd metadata ([`variable`]), saved variables, the [`engine`], grad mode,
//! and the kernels generated from derivatives.yaml that record the graph: an Autograd kernel
//! per operator (`VariableType`) and an ADInplaceOrView kernel per in-place, out= and view
//! operator (ARCHITECTURE.md, "ratten-autograd").

pub mod accumulate_grad;
pub mod anomaly_mode;
pub mod autograd;
pub mod custom_function;
pub mod engine;
pub mod forward_ad;
pub mod forward_grad;
pub mod function;
pub mod functions_manual;
// Generated from derivatives.yaml by `ratten-gen generate --autograd` (checked in).
pub mod generated;
pub mod grad_mode;
pub mod input_metadata;
mod manual_kernels;
pub mod prelude;
pub mod saved_variable;
pub mod variable;
pub mod variable_type_utils;
pub mod view_backward;

pub use autograd::{backward, grad, TensorAutogradExt};
pub use function::{Edge, Node, NodeBase, VariableList};
pub use grad_mode::{AutoGradMode, GradMode, InferenceMode, NoGradGuard};
pub use saved_variable::SavedVariable;
pub use variable::{ensure_initialized, CreationMeta};

/// References the generated registrations so that every binary using autograd links them
/// (Note [Static operator handles]: inventory only sees linked objects).
#[inline(never)]
pub fn ensure_linked() {
    generated::registration::ensure_linked();
    manual_kernels::ensure_linked();
}
