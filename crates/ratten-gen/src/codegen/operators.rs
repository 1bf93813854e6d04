//! The operator handles (PyTorch's `at::_ops::add_Tensor`): per overload its name, overload
//! name and schema, the typed handle cached in a static, `call` and `redispatch`.

use super::model::Model;
use super::writer::Writer;
use super::{header, prelude, GenOptions};

pub fn emit(model: &Model, opts: &GenOptions) -> String {
    let mut w = Writer::new();
    w.line(header(
        opts,
        "Operator handles: one module per overload (PyTorch's `at::_ops`).",
    ));
    w.line(prelude(opts));
    for op in &model.ops {
        w.line(format!("/// `{}`", op.doc));
        w.block(format!("pub mod {} {{", op.handle_mod), "}", |w| {
            w.line("use super::*;");
            w.blank();
            w.line(format!("pub const NAME: &str = {:?};", op.qualified_name));
            w.line(format!("pub const OVERLOAD_NAME: &str = {:?};", op.overload_name));
            w.line(format!("pub const SCHEMA: &str = {:?};", op.schema_source));
            w.line(format!("pub type Args = {};", op.args_tuple()));
            w.line(format!("pub type Return = {};", op.ret_type()));
            w.blank();
            w.line("/// The typed handle, found once and kept (PyTorch's static `create_..._typed_handle`).");
            w.block("pub fn handle() -> Result<TypedOperatorHandle<Args, Return>> {", "}", |w| {
                w.line("static HANDLE: OnceLock<TypedOperatorHandle<Args, Return>> = OnceLock::new();");
                w.block("if let Some(h) = HANDLE.get() {", "}", |w| {
                    w.line("return Ok(*h);");
                });
                w.line("super::super::registration::ensure_linked();");
                w.line("let h = TypedOperatorHandle::find(NAME, OVERLOAD_NAME)?;");
                w.line("Ok(*HANDLE.get_or_init(|| h))");
            });
            w.blank();
            w.line("/// Calls through the dispatcher.");
            w.block(
                format!("pub fn call({}) -> Result<Return> {{", op.borrowed_params()),
                "}",
                |w| {
                    w.line(format!("handle()?.call({})", op.refs_tuple()));
                },
            );
            w.blank();
            w.line("/// Calls the kernel for the highest key of `ks` (from a kernel, below its own key).");
            let sep = if op.args.is_empty() { "" } else { ", " };
            w.block(
                format!(
                    "pub fn redispatch(ks: DispatchKeySet{sep}{}) -> Result<Return> {{",
                    op.borrowed_params()
                ),
                "}",
                |w| {
                    w.line(format!("handle()?.redispatch(ks, {})", op.refs_tuple()));
                },
            );
        });
        w.blank();
    }
    w.finish()
}
