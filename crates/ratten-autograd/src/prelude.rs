//! What the generated backward nodes and kernels use (`use crate::prelude::*;`).

pub use std::borrow::Cow;
pub use std::sync::Arc;

pub use ratten_aten::operators as ops;
pub use ratten_aten::Tensor;
pub use ratten_core::dispatch_key_set::{AFTER_AD_INPLACE_OR_VIEW_KEYSET, AFTER_AUTOGRAD_KEYSET};
pub use ratten_core::{Device, DispatchKeySet, Error, Result, Scalar, ScalarType, TensorOptions};
pub use ratten_dispatch::Aliased;

pub use crate::function::{
    any_variable_defined, copy_range, copy_range_list, defined, not_implemented, not_translated,
    Edge, IndexRange, IndexRangeGenerator, Node, NodeBase, NotImplemented, VariableList,
};
pub use crate::new_node;
// Used by the generated nodes (and empty until FunctionsManual has helpers).
pub use crate::forward_grad::{
    any_fw_grad_defined, any_fw_grad_defined_list, any_fw_grad_defined_opt_list,
    forward_ad_not_implemented, forward_ad_out_refused, fw_grad, fw_grad_or_zeros,
    opt_fw_grad_or_zeros, set_fw_grad, set_fw_grad_list, set_opt_fw_grad, ForwardFormulaGuard,
};
#[allow(unused_imports)]
pub use crate::functions_manual::*;
pub use crate::grad_mode::{
    AutoDispatchBelowADInplaceOrView, AutoDispatchBelowAutograd, GradMode, InferenceMode,
};
pub use crate::saved_variable::{
    saved_list, saved_opt_list, unpack_list, unpack_opt_list, SavedVariable,
};
pub use crate::variable::{as_view, is_differentiable_type, CreationMeta};
pub use crate::variable_type_utils::{
    any_requires_grad, as_view_list, check_inplace, check_no_requires_grad,
    check_out_requires_grad, collect_next_edges, collect_next_edges_list, compute_requires_grad,
    creation_meta, increment_version, non_differentiable_view, rebase_history, set_history,
    set_history_list,
};
