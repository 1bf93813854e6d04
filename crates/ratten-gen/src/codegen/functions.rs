//! The public API: functions (PyTorch's `Functions.h`) and Tensor methods (`TensorBody.h`).
//!
//! Per overload a short form, without the arguments that have defaults, and, when there are
//! any, a `_with` form taking every argument (see the naming table in the README). Out=
//! functions take `out` first; in-place and out= forms return the tensor they wrote.

use ratten_schema::native::SchemaKind;

use super::model::{Conversion, Model, OpInfo};
use super::writer::Writer;
use super::{header, prelude, GenOptions};

/// Which receiver the generated body has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Function,
    Method,
}

/// The signature and body of one public form.
struct Rendered {
    signature: String,
    body: Vec<String>,
}

fn render(op: &OpInfo, name: &str, all_args: bool, form: Form) -> Rendered {
    // Arguments the caller passes: out= first, then schema order.
    let mut order: Vec<usize> = (0..op.args.len()).filter(|&i| op.args[i].is_out).collect();
    order.extend((0..op.args.len()).filter(|&i| !op.args[i].is_out));
    let provided = |i: usize| all_args || op.args[i].default.is_none();
    let receiver = if form == Form::Method {
        op.self_arg
    } else {
        None
    };

    // Lifetimes for the arguments returns alias.
    let aliased: Vec<usize> = op.rets.iter().filter_map(|r| r.aliases_arg).collect();
    let lifetime = |i: usize| -> Option<String> {
        aliased
            .iter()
            .position(|&a| a == i)
            .map(|k| format!("'{}", (b'a' + k as u8) as char))
    };
    let mut generics: Vec<String> = aliased
        .iter()
        .enumerate()
        .map(|(k, _)| format!("'{}", (b'a' + k as u8) as char))
        .collect();
    generics.dedup();

    let mut params = Vec::new();
    for &i in &order {
        let a = &op.args[i];
        if !provided(i) {
            continue;
        }
        if Some(i) == receiver {
            params.insert(
                0,
                match lifetime(i) {
                    Some(l) => format!("&{l} self"),
                    None => "&self".to_string(),
                },
            );
            continue;
        }
        let ty = match (lifetime(i), a.ty.api.strip_prefix('&')) {
            (Some(l), Some(rest)) => format!("&{l} {rest}"),
            _ => a.ty.api.clone(),
        };
        params.push(format!("{}: {ty}", a.ident));
    }

    let mut body = Vec::new();
    let mut call_args = Vec::new();
    for (i, a) in op.args.iter().enumerate() {
        let id = if Some(i) == receiver {
            "self".to_string()
        } else {
            a.ident.clone()
        };
        if provided(i) {
            match a.ty.conversion {
                Conversion::None => call_args.push(id),
                Conversion::IntoScalar => {
                    body.push(format!("let {}: Scalar = {}.into();", a.ident, a.ident));
                    call_args.push(format!("&{}", a.ident));
                }
                Conversion::AsRef => call_args.push(format!("{id}.as_ref()")),
            }
        } else {
            let d = a.default.clone().unwrap_or_default();
            if d.starts_with("Scalar::") {
                body.push(format!("let {} = {d};", a.ident));
                call_args.push(format!("&{}", a.ident));
            } else {
                call_args.push(d);
            }
        }
    }
    let call = format!(
        "operators::{}::call({})",
        op.handle_mod,
        call_args.join(", ")
    );

    let ret_ty;
    if !aliased.is_empty() && aliased.len() == op.rets.len() {
        let names: Vec<String> = aliased
            .iter()
            .map(|&i| {
                if Some(i) == receiver {
                    "self".to_string()
                } else {
                    op.args[i].ident.clone()
                }
            })
            .collect();
        let tys: Vec<String> = aliased
            .iter()
            .map(|&i| format!("&{} Tensor", lifetime(i).unwrap_or_default()))
            .collect();
        body.push(format!("{call}?;"));
        if names.len() == 1 {
            ret_ty = tys[0].clone();
            body.push(format!("Ok({})", names[0]));
        } else {
            ret_ty = format!("({})", tys.join(", "));
            body.push(format!("Ok(({}))", names.join(", ")));
        }
    } else {
        ret_ty = op.ret_type().replace("Arg<Scalar>", "Scalar");
        if op.ret_type().contains("Arg<") {
            body.push(format!("{call}.map(|r| r.0)"));
        } else {
            body.push(call);
        }
    }
    let generics = if generics.is_empty() {
        String::new()
    } else {
        format!("<{}>", generics.join(", "))
    };
    Rendered {
        signature: format!(
            "pub fn {name}{generics}({}) -> Result<{ret_ty}>",
            params.join(", ")
        ),
        body,
    }
}

fn doc_lines(w: &mut Writer, op: &OpInfo, all_args: bool) {
    w.line(format!("/// `{}`", op.doc));
    if all_args {
        w.line("///");
        w.line("/// Takes every argument, those with defaults included.");
    } else if op.has_defaults() {
        let omitted: Vec<String> = op
            .args
            .iter()
            .filter_map(|a| {
                a.default
                    .as_ref()
                    .map(|d| format!("`{}` = `{}`", a.name, d.trim_start_matches("Scalar::")))
            })
            .collect();
        w.line("///");
        w.line(format!("/// Defaults: {}.", omitted.join(", ")));
    }
}

fn forms(op: &OpInfo) -> Vec<(String, bool)> {
    let mut v = vec![(op.api_name.clone(), false)];
    if let Some(wn) = &op.with_name {
        v.push((wn.clone(), true));
    }
    v
}

/// `functions.rs`: a free function per overload with `variants: function`.
pub fn emit_functions(model: &Model, opts: &GenOptions) -> String {
    let mut w = Writer::new();
    w.line(header(
        opts,
        "The operator functions (PyTorch's `at::add`): every form returns `Result`.",
    ));
    w.line(prelude(opts));
    for op in model.ops.iter().filter(|o| o.function) {
        for (name, all) in forms(op) {
            doc_lines(&mut w, op, all);
            // Inline, as PyTorch's `at::add` is (Functions.h): the call goes straight to
            // the operator's out-of-line dispatch, `operators::*::call`.
            w.line("#[inline]");
            let r = render(op, &name, all, Form::Function);
            w.block(format!("{} {{", r.signature), "}", |w| {
                for l in &r.body {
                    w.line(l);
                }
            });
            w.blank();
        }
    }
    w.finish()
}

/// `methods.rs`: Tensor methods for `variants: method` (an extension trait out of tree).
pub fn emit_methods(model: &Model, opts: &GenOptions) -> String {
    let mut w = Writer::new();
    w.line(header(
        opts,
        "The Tensor methods (PyTorch's `TensorBody.h`) of `variants: method` overloads.",
    ));
    w.line(prelude(opts));
    let methods: Vec<&OpInfo> = model
        .ops
        .iter()
        .filter(|o| o.method && o.kind != SchemaKind::Out)
        .collect();
    match &opts.extension_trait {
        None => {
            w.block("impl Tensor {", "}", |w| {
                for op in &methods {
                    for (name, all) in forms(op) {
                        doc_lines(w, op, all);
                        w.line("#[inline]");
                        let r = render(op, &name, all, Form::Method);
                        w.block(format!("{} {{", r.signature), "}", |w| {
                            for l in &r.body {
                                w.line(l);
                            }
                        });
                        w.blank();
                    }
                }
            });
        }
        Some(t) => {
            w.line(format!(
                "/// The `{}` operators as Tensor methods (`use` this trait to call them).",
                model.namespace
            ));
            w.block(format!("pub trait {t} {{"), "}", |w| {
                for op in &methods {
                    for (name, all) in forms(op) {
                        doc_lines(w, op, all);
                        let r = render(op, &name, all, Form::Method);
                        w.line(format!("{};", r.signature.trim_start_matches("pub ")));
                    }
                }
            });
            w.blank();
            w.block(format!("impl {t} for Tensor {{"), "}", |w| {
                for op in &methods {
                    for (name, all) in forms(op) {
                        let r = render(op, &name, all, Form::Method);
                        w.block(
                            format!("{} {{", r.signature.trim_start_matches("pub ")),
                            "}",
                            |w| {
                                for l in &r.body {
                                    w.line(l);
                                }
                            },
                        );
                    }
                }
            });
        }
    }
    w.finish()
}
