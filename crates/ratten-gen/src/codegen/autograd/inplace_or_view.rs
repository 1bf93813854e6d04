//! The ADInplaceOrView kernels (torchgen's gen_inplace_or_view_type.py, PyTorch's
//! `ADInplaceOrViewType_*.cpp`): below Autograd, above the backends, for every operator that
//! writes an argument it returns (in-place, out=) or returns a view. A writing operator bumps
//! the version counter of each argument it writes (what SavedVariable's check reads); a view
//! operator makes its outputs views of its base (`as_view`, PyTorch's view tracking: a single
//! view is `CreationMeta::Default`, each output of a multi-output view `MultiOutputNode`, or
//! the no-grad / inference mode it was made in); an `inplace_view` operator (`transpose_`)
//! changes `self`'s geometry in place and bumps its version.

use ratten_schema::native::SchemaKind;

use crate::model::arguments::ViewKind;
use crate::model::names::raw_ident;
use crate::model::OperatorRecord;

use super::functions::{cxx_type, default_info};
use super::types::CxxType;
use super::variable_type::{
    emit_redispatch, uses_decomposition, written_args, MANUAL_NON_DIFFERENTIABLE_VIEWS,
};
use crate::codegen::writer::Writer;
use crate::codegen::{header, shard_mod, shards, EmitContext, GeneratedFile};
use crate::model::signatures::dispatcher;

/// What the ADInplaceOrView kernel of an operator does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InplaceOrViewKernel {
    /// Bumps the versions of the written arguments.
    Written,
    /// Makes the outputs views of argument `base`.
    View { base: usize },
    /// Changes `self`'s geometry in place: bumps its version.
    InplaceView,
}

/// Operators declared as views (`Tensor(a)`) whose ratten kernel returns new memory: `_conj`
/// of a complex tensor materialises the conjugate (Note [Conjugation without a conjugate
/// bit]), so its output must not be tracked as a view of its input.
const VIEWS_WITH_FRESH_STORAGE: &[&str] = &["_conj"];

/// The ADInplaceOrView kernel `op` gets (torchgen: a view, or an operator that modifies its
/// arguments and returns something; not for a decomposed CompositeImplicitAutograd one).
pub fn kernel_kind(op: &OperatorRecord) -> Option<InplaceOrViewKernel> {
    if uses_decomposition(op) {
        return None;
    }
    if let Some(v) = &op.view {
        if VIEWS_WITH_FRESH_STORAGE.contains(&op.root_name.as_str()) {
            return None;
        }
        return match (v.kind, v.base) {
            (ViewKind::InplaceView, _) => Some(InplaceOrViewKernel::InplaceView),
            (_, Some(base)) => Some(InplaceOrViewKernel::View { base }),
            (_, None) => None,
        };
    }
    let modifies = matches!(
        op.kind,
        SchemaKind::Inplace | SchemaKind::Out | SchemaKind::Mutable
    ) && !written_args(op).is_empty();
    (modifies && !op.returns.is_empty()).then_some(InplaceOrViewKernel::Written)
}

fn bump_versions(w: &mut Writer, op: &OperatorRecord) {
    for i in written_args(op) {
        let a = &op.args[i];
        match cxx_type(&a.schema_type) {
            Some(CxxType::Tensor) => {
                w.line(format!("increment_version({});", a.ident));
            }
            Some(CxxType::OptTensor) => {
                w.block(format!("if let Some(t) = {} {{", a.ident), "}", |w| {
                    w.line("increment_version(t);");
                });
            }
            Some(CxxType::TensorList) => {
                w.block(format!("for t in {} {{", a.ident), "}", |w| {
                    w.line("increment_version(t);");
                });
            }
            _ => {}
        }
    }
}

fn emit_kernel(w: &mut Writer, op: &OperatorRecord, kind: InplaceOrViewKernel, aten: &str) {
    let sig = dispatcher(op);
    let mut params = vec!["ks: DispatchKeySet".to_string()];
    params.extend(sig.param_decls(aten));
    w.line(format!("/// `{}`", op.doc()));
    w.fn_header(
        &format!("pub(crate) fn {}", raw_ident(&op.handle)),
        &params,
        &sig.result(aten),
        " {",
    );
    w.indented(|w| {
        emit_redispatch(w, "let ret = ", op, "AFTER_AD_INPLACE_OR_VIEW_KEYSET");
        match kind {
            InplaceOrViewKernel::Written => bump_versions(w, op),
            InplaceOrViewKernel::InplaceView => {
                let s = op
                    .self_arg
                    .map(|i| op.args[i].ident.as_str())
                    .unwrap_or("self_");
                w.line(format!("increment_version({s});"));
            }
            InplaceOrViewKernel::View { base } => {
                let base = &op.args[base].ident;
                // A view whose output has no gradient (`detach`) is still a view, one that
                // autograd does not differentiate through.
                let differentiable = !MANUAL_NON_DIFFERENTIABLE_VIEWS
                    .contains(&op.root_name.as_str())
                    && default_info(op)
                        .and_then(|i| i.output_differentiability.as_ref())
                        .is_none_or(|d| d.first().copied().unwrap_or(true));
                if !differentiable {
                    // torch's `make_variable_non_differentiable_view`: no view metadata, no
                    // requires_grad; never the base itself.
                    if op.returns.len() == 1 && !op.returns[0].schema_type.is_list() {
                        w.line(format!("let ret = non_differentiable_view({base}, ret);"));
                    }
                    w.line("Ok(ret)");
                    return;
                }
                let d = differentiable.to_string();
                match op.returns.first().map(|r| r.schema_type.is_list()) {
                    Some(true) => {
                        w.block("for t in &ret {", "}", |w| {
                            w.line(format!(
                                "as_view({base}, t, {d}, {d}, creation_meta(true))?;"
                            ));
                        });
                    }
                    Some(false) if op.returns.len() == 1 => {
                        w.line(format!(
                            "as_view({base}, &ret, {d}, {d}, creation_meta(false))?;"
                        ));
                    }
                    _ => {}
                }
            }
        }
        w.line("Ok(ret)");
    });
    w.line("}");
}

/// `inplace_or_view/`: the ADInplaceOrView kernels by shard.
pub fn emit(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let with: Vec<(&OperatorRecord, InplaceOrViewKernel)> = cx
        .model
        .ops
        .iter()
        .filter_map(|op| kernel_kind(op).map(|k| (op, k)))
        .collect();
    let by_shard = shards(with.iter().map(|(op, _)| *op));
    let mut files = Vec::new();
    for (key, ops) in &by_shard {
        let mut w = Writer::new();
        w.line(header(
            cx.opts,
            &format!(
                "The ADInplaceOrView kernels of the operators in shard `{key}`: see `inplace_or_view`."
            ),
        ));
        w.line(super::imports(cx.opts));
        for op in ops {
            let kind = with
                .iter()
                .find(|(o, _)| o.index == op.index)
                .map(|(_, k)| *k)
                .unwrap_or(InplaceOrViewKernel::Written);
            w.blank();
            emit_kernel(&mut w, op, kind, &cx.opts.aten);
        }
        files.push(GeneratedFile::new(
            format!("inplace_or_view/{key}.rs"),
            w.finish(),
        ));
    }
    let keys: Vec<String> = by_shard.keys().cloned().collect();
    let head = header(
        cx.opts,
        &format!(
            "The ADInplaceOrView kernels (PyTorch's `ADInplaceOrViewType`, {} kernels): version\n\
             //! bumps of written arguments and view tracking; registered in `registration`.",
            with.len()
        ),
    );
    files.insert(
        0,
        GeneratedFile::new("inplace_or_view/mod.rs", shard_mod(&head, &keys, "")),
    );
    Ok(files)
}
