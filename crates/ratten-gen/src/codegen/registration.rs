//! Static registration: the schema of every operator (PyTorch's `RegisterSchema.cpp`,
//! `TORCH_LIBRARY(aten, m) { m.def(...); }`, here one `TORCH_LIBRARY` and a fragment per
//! shard) and each kernel under its dispatch key (`TORCH_LIBRARY_IMPL(aten, CPU, m) {
//! m.impl(...); }`).

use crate::model::signatures::{backend, dispatcher};
use crate::model::OperatorRecord;

use super::backends::key_module;
use super::operators::handle_ident;
use super::writer::{Expr, Writer};
use super::{header, prelude, shards, EmitContext, GeneratedFile};

/// torchgen's `needs_backend_select`: a function with tensor options (`device` among them) and
/// no tensor argument, other than the `_like` and `new_` families.
pub fn needs_backend_select(op: &OperatorRecord) -> bool {
    let name = op.qualified_name.rsplit("::").next().unwrap_or("");
    !name.ends_with("_like")
        && !name.starts_with("new_")
        && op.args.iter().any(|a| a.name == "device" && a.kwarg_only)
        && op.args.iter().any(|a| a.name == "dtype" && a.kwarg_only)
        && !op.args.iter().any(|a| a.schema_type.is_tensor_like())
}

pub fn emit(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let opts = cx.opts;
    let model = cx.model;
    let ns = &model.namespace;
    let keys = model.dispatch_keys();
    let by_shard = shards(&model.ops);
    let mut files = Vec::new();
    for (shard, ops) in &by_shard {
        let mut w = Writer::new();
        w.line(header(
            opts,
            &format!("The registrations of shard `{shard}`: see `registration`."),
        ));
        w.line(prelude(2, &["backends", "operators"]));
        w.line("/// Referenced by `registration::ensure_linked`: keeps this file's registrations linked.");
        w.line("#[inline(never)]");
        w.block("pub(super) fn ensure_linked() {", "}", |w| {
            w.line("std::hint::black_box(());");
        });
        w.blank();
        w.block(
            format!("ratten_dispatch::torch_library_fragment!({ns}, |m| {{"),
            "});",
            |w| {
                for op in ops {
                    w.stmt(
                        "",
                        &Expr::call_atoms("m.def", &[format!("{:?}", op.schema_source)]),
                        "?;",
                    );
                }
            },
        );
        // Kernels returning their argument (`&'a Tensor`) are registered through an adapter
        // returning `Aliased` (Note [Aliased returns] in ratten-dispatch).
        let mut adapters = Vec::new();
        for key in &keys {
            let with_key: Vec<_> = ops.iter().filter(|o| o.kernels.contains_key(key)).collect();
            if with_key.is_empty() {
                continue;
            }
            let m = key_module(key);
            w.blank();
            w.block(
                format!("ratten_dispatch::torch_library_impl!({ns}, {key}, |m| {{"),
                "});",
                |w| {
                    for op in &with_key {
                        let f = match op.aliased_return() {
                            Some(_) => {
                                let name = format!("{}_{m}", op.handle);
                                adapters.push((*op, m.clone(), name.clone()));
                                name
                            }
                            None => format!("backends::{m}::{}", op.names.backend),
                        };
                        let kernel = Expr::call_atoms(
                            format!("operators::{}::kernel", handle_ident(op)),
                            &[f],
                        );
                        let name = Expr::atom(format!("{:?}", op.name_with_overload));
                        w.stmt("", &Expr::call("m.impl_", vec![name, kernel]), "?;");
                    }
                },
            );
        }
        // BackendSelect (torchgen's gen_backend_select): a factory has no tensor to dispatch
        // on, so its key comes from its `device` argument.
        let selecting: Vec<_> = ops.iter().filter(|o| needs_backend_select(o)).collect();
        if !selecting.is_empty() {
            w.blank();
            w.block(
                format!("ratten_dispatch::torch_library_impl!({ns}, BackendSelect, |m| {{"),
                "});",
                |w| {
                    for op in &selecting {
                        let kernel = Expr::call_atoms(
                            format!("operators::{}::kernel", handle_ident(op)),
                            &[format!("{}_backend_select", op.handle)],
                        );
                        let name = Expr::atom(format!("{:?}", op.name_with_overload));
                        w.stmt("", &Expr::call("m.impl_", vec![name, kernel]), "?;");
                    }
                },
            );
            for op in &selecting {
                let sig = dispatcher(op);
                let args: Vec<String> = op.args.iter().map(|a| a.ident.clone()).collect();
                let mut call_args = vec!["ks".to_string()];
                call_args.extend(args);
                w.blank();
                w.fn_header(
                    &format!("fn {}_backend_select", op.handle),
                    &sig.param_decls(&opts.aten),
                    &sig.result(&opts.aten),
                    " {",
                );
                w.indented(|w| {
                    w.line("let ks = backend_select_key_set(device);");
                    w.stmt(
                        "",
                        &Expr::call_atoms(
                            format!("operators::{}::redispatch", handle_ident(op)),
                            &call_args,
                        ),
                        "",
                    );
                });
                w.line("}");
            }
        }
        for (op, m, name) in adapters {
            let sig = backend(op);
            let params = dispatcher(op).param_decls(&opts.aten);
            let args: Vec<String> = op.args.iter().map(|a| a.ident.clone()).collect();
            let k = op.aliased_return().unwrap_or_default();
            w.blank();
            w.fn_header(
                &format!("fn {name}"),
                &params,
                &format!("Result<Aliased<{k}>>"),
                " {",
            );
            w.indented(|w| {
                w.stmt(
                    "",
                    &Expr::call_atoms(format!("backends::{m}::{}", sig.name), &args),
                    "?;",
                );
                w.line("Ok(Aliased)");
            });
            w.line("}");
        }
        files.push(GeneratedFile::new(
            format!("registration/{shard}.rs"),
            w.finish(),
        ));
    }
    let mut s = header(
        opts,
        "Static registration: every schema, and every kernel under its dispatch key; one file\n\
         //! per shard.",
    );
    s.push('\n');
    // `shard_<key>` (file `<key>.rs`), as `shard_mod`'s: a key may be a keyword (`as`).
    for k in by_shard.keys() {
        s.push_str(&format!("#[path = \"{k}.rs\"]\nmod shard_{k};\n"));
    }
    s.push_str(
        "\n/// Called by every operator handle before its first lookup: referencing each shard's\n\
         /// registrations keeps them linked into any binary that calls an operator.\n\
         #[inline(never)]\n\
         pub fn ensure_linked() {\n",
    );
    for k in by_shard.keys() {
        s.push_str(&format!("    shard_{k}::ensure_linked();\n"));
    }
    s.push_str(&format!(
        "}}\n\n// The namespace's library; the shards' fragments define its operators.\n\
         ratten_dispatch::torch_library!({ns}, |_m| {{}});\n"
    ));
    files.insert(0, GeneratedFile::new("registration/mod.rs", s));
    Ok(files)
}
