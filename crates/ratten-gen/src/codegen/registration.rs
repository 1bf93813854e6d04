//! Static registration: the schema of every operator (PyTorch's `RegisterSchema.cpp`,
//! `TORCH_LIBRARY(aten, m) { m.def(...); }`) and each kernel under its dispatch key
//! (`TORCH_LIBRARY_IMPL(aten, CPU, m) { m.impl(...); }`).

use super::backends::{key_module, keys};
use super::model::Model;
use super::writer::Writer;
use super::{header, prelude, GenOptions};

pub fn emit(model: &Model, opts: &GenOptions) -> String {
    let mut w = Writer::new();
    w.line(header(
        opts,
        "Static registration: every schema, and every kernel under its dispatch key.",
    ));
    w.line(prelude(opts));
    w.line("/// Called by every operator handle before its first lookup: referencing this module");
    w.line("/// keeps its registrations linked into any binary that calls an operator.");
    w.line("#[inline(never)]");
    w.block("pub fn ensure_linked() {", "}", |w| {
        w.line("std::hint::black_box(());");
    });
    w.blank();
    let ns = &model.namespace;
    w.block(
        format!("ratten_dispatch::torch_library!({ns}, |m| {{"),
        "});",
        |w| {
            for op in &model.ops {
                w.line(format!("m.def({:?})?;", op.schema_source));
            }
        },
    );
    for key in keys(model) {
        w.blank();
        w.block(
            format!("ratten_dispatch::torch_library_impl!({ns}, {key}, |m| {{"),
            "});",
            |w| {
                for op in &model.ops {
                    if !op.kernels.contains_key(&key) {
                        continue;
                    }
                    let f = format!("backends::{}::{}", key_module(&key), op.backend_name);
                    // A kernel returning its argument (`&'a Tensor`) is registered as
                    // returning `Aliased` (Note [Aliased returns] in ratten-dispatch).
                    let kernel = match op.aliased_return() {
                        Some(_) => format!(
                            "|{}| {f}({}).map(|_| Aliased)",
                            op.borrowed_params(),
                            op.arg_idents()
                        ),
                        None => f,
                    };
                    w.line(format!(
                        "m.impl_({:?}, CppFunction::typed::<operators::{h}::Args, operators::{h}::Return, _>({kernel}))?;",
                        op.name_with_overload,
                        h = op.handle_mod,
                    ));
                }
            },
        );
    }
    w.finish()
}
