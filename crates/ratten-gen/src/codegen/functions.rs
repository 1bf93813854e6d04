//! The public API: functions (PyTorch's `Functions.h`) and Tensor methods (`TensorBody.h`).
//!
//! Per overload a short form, without the arguments that have defaults, and, when there are
//! any, a `_with` form taking every argument (see the naming table in the README). Out=
//! functions take `out` first; in-place and out= forms return the tensor they wrote.

use ratten_schema::native::SchemaKind;

use crate::model::signatures::{self, forms, Form, FunctionSignature};
use crate::model::OperatorRecord;

use super::operators::handle_ident;
use super::writer::{Expr, Writer};
use super::{header, prelude, shard_mod, shards, EmitContext, GeneratedFile};

fn doc_lines(w: &mut Writer, op: &OperatorRecord, form: Form) {
    w.line(format!("/// `{}`", op.doc()));
    if form == Form::With {
        w.line("///");
        w.line("/// Takes every argument, those with defaults included.");
    } else if op.has_defaults() {
        let omitted: Vec<String> = op
            .args
            .iter()
            .filter_map(|a| {
                a.default
                    .as_ref()
                    .map(|d| format!("`{}` = `{}`", a.name, d.text))
            })
            .collect();
        w.line("///");
        w.line(format!("/// Defaults: {}.", omitted.join(", ")));
    }
}

/// The body of a public form: its conversions, the dispatcher call, and what it returns.
fn body(w: &mut Writer, op: &OperatorRecord, f: &FunctionSignature) {
    for l in &f.prelude {
        w.line(l);
    }
    let call = Expr::call_atoms(
        format!("operators::{}::call", handle_ident(op)),
        &f.call_args,
    );
    match &f.returns_args {
        Some(names) => {
            w.stmt("", &call, "?;");
            match names.as_slice() {
                [one] => w.line(format!("Ok({one})")),
                _ => w.line(format!("Ok(({}))", names.join(", "))),
            };
        }
        None if signatures::dispatcher_return(op).contains_arg() => {
            w.stmt("", &call, ".map(|r| r.0)");
        }
        None => {
            w.stmt("", &call, "");
        }
    }
}

/// One form as an item (`pub fn` for functions, `fn` inside a trait impl).
fn item(w: &mut Writer, op: &OperatorRecord, f: &FunctionSignature, vis: &str, aten: &str) {
    w.fn_header(
        &format!("{vis}fn {}", f.sig.name_with_generics()),
        &f.sig.param_decls(aten),
        &f.sig.result(aten),
        " {",
    );
    w.indented(|w| body(w, op, f));
    w.line("}");
}

/// `functions/`: a free function per overload with `variants: function`.
pub fn emit_functions(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let opts = cx.opts;
    let by_shard = shards(cx.model.ops.iter().filter(|o| o.function));
    let mut files = Vec::new();
    for (key, ops) in &by_shard {
        let mut w = Writer::new();
        w.line(header(
            opts,
            &format!("The operator functions of shard `{key}`: see `functions`."),
        ));
        w.line(prelude(2, &["operators"]));
        for op in ops {
            for form in forms(op) {
                w.blank();
                doc_lines(&mut w, op, form);
                // Inline, as PyTorch's `at::add` is (Functions.h): the call goes straight to
                // the operator's out-of-line dispatch, `operators::*::call`.
                w.line("#[inline]");
                item(
                    &mut w,
                    op,
                    &signatures::function(op, form, false),
                    "pub ",
                    &opts.aten,
                );
            }
        }
        files.push(GeneratedFile::new(
            format!("functions/{key}.rs"),
            w.finish(),
        ));
    }
    let keys: Vec<String> = by_shard.keys().cloned().collect();
    let head = header(
        opts,
        "The operator functions (PyTorch's `at::add`): every form returns `Result`.",
    );
    files.insert(
        0,
        GeneratedFile::new("functions/mod.rs", shard_mod(&head, &keys, "")),
    );
    Ok(files)
}

/// Method names a generated method would take from a trait every `Tensor` has: `t.clone()`
/// must stay Rust's `Clone` (a new handle, as C++'s copy constructor), so the `clone` operator
/// is the method `clone_with(memory_format)` and the function `clone(&t)`.
const TRAIT_METHOD_NAMES: &[&str] = &["clone"];

/// The forms an overload has as a method (see [`TRAIT_METHOD_NAMES`]).
fn method_forms(op: &OperatorRecord) -> Vec<Form> {
    forms(op)
        .into_iter()
        .filter(|f| !(*f == Form::Short && TRAIT_METHOD_NAMES.contains(&op.names.short.as_str())))
        .collect()
}

fn methods<'a>(cx: &EmitContext<'a>) -> Vec<&'a OperatorRecord> {
    cx.model
        .ops
        .iter()
        .filter(|o| o.method && o.kind != SchemaKind::Out)
        .collect()
}

/// `methods/`: inherent `Tensor` methods for `variants: method` (ratten-aten only: `Tensor`
/// is its type), one `impl Tensor` block per shard.
pub fn emit_methods(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let opts = cx.opts;
    let by_shard = shards(methods(cx));
    let mut files = Vec::new();
    for (key, ops) in &by_shard {
        let mut w = Writer::new();
        w.line(header(
            opts,
            &format!("The Tensor methods of shard `{key}`: see `methods`."),
        ));
        w.line(prelude(2, &["operators"]));
        w.block("impl Tensor {", "}", |w| {
            let mut first = true;
            for op in ops {
                for form in method_forms(op) {
                    if !first {
                        w.blank();
                    }
                    first = false;
                    doc_lines(w, op, form);
                    w.line("#[inline]");
                    item(
                        w,
                        op,
                        &signatures::function(op, form, true),
                        "pub ",
                        &opts.aten,
                    );
                }
            }
        });
        files.push(GeneratedFile::new(format!("methods/{key}.rs"), w.finish()));
    }
    let keys: Vec<String> = by_shard.keys().cloned().collect();
    let head = header(
        opts,
        "The Tensor methods (PyTorch's `TensorBody.h`) of `variants: method` overloads: one\n\
         //! `impl Tensor` block per shard.",
    );
    let mut s = String::from(&head);
    s.push('\n');
    for k in &keys {
        s.push_str(&format!("mod {k};\n"));
    }
    files.insert(0, GeneratedFile::new("methods/mod.rs", s));
    Ok(files)
}

/// `methods.rs` out of tree: the methods in an extension trait implemented for `Tensor` (a
/// trait's items cannot be split across files, so this is one file).
pub fn emit_extension_trait(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let opts = cx.opts;
    let Some(t) = &opts.extension_trait else {
        return Err(vec![
            "an out-of-tree target needs an extension trait name".into()
        ]);
    };
    let ops = methods(cx);
    let mut w = Writer::new();
    w.line(header(
        opts,
        "The Tensor methods (PyTorch's `TensorBody.h`) of `variants: method` overloads.",
    ));
    w.line(prelude(1, &["operators"]));
    w.line(format!(
        "/// The `{}` operators as Tensor methods (`use` this trait to call them).",
        cx.model.namespace
    ));
    w.block(format!("pub trait {t} {{"), "}", |w| {
        for op in &ops {
            for form in method_forms(op) {
                doc_lines(w, op, form);
                let f = signatures::function(op, form, true);
                w.fn_header(
                    &format!("fn {}", f.sig.name_with_generics()),
                    &f.sig.param_decls(&opts.aten),
                    &f.sig.result(&opts.aten),
                    ";",
                );
            }
        }
    });
    w.blank();
    w.block(format!("impl {t} for Tensor {{"), "}", |w| {
        let mut first = true;
        for op in &ops {
            for form in method_forms(op) {
                if !first {
                    w.blank();
                }
                first = false;
                item(w, op, &signatures::function(op, form, true), "", &opts.aten);
            }
        }
    });
    Ok(vec![GeneratedFile::new("methods.rs", w.finish())])
}
