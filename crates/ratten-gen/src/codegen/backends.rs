//! Per-backend direct functions (PyTorch's `at::cpu::add`, `at::meta::add`): one module per
//! dispatch key, each function calling that key's kernel without the dispatcher. These are
//! also the functions registered for the key. They take every argument in schema order
//! (out= forms are the `..._outf` spelling) and return what the dispatcher returns.
//!
//! For structured kernels these are torchgen's wrappers: functional (allocate), in-place
//! (check against self) and out= (resize, or a proxy copied back), around `meta` and `impl`.

use ratten_schema::native::SchemaKind;

use crate::model::kernels::{KernelPath, KernelRef};
use crate::model::names::snake;
use crate::model::signatures::{backend, structured_inputs, structured_outputs};
use crate::model::{Model, OperatorRecord};

use super::operators::handle_ident;
use super::writer::{Expr, Writer};
use super::{header, prelude, shard_mod, shards, EmitContext, GeneratedFile};

/// The Rust module name of a dispatch key (`CompositeExplicitAutograd` ->
/// `composite_explicit_autograd`).
pub fn key_module(key: &str) -> String {
    match key {
        "CPU" => "cpu".to_string(),
        "CUDA" => "cuda".to_string(),
        k => snake(k),
    }
}

/// How the backend functions name a kernel: through the kernel module's `kernels` alias.
fn kernel(p: &KernelPath) -> String {
    format!("kernels::{}", p.function)
}

fn idents(args: &[&crate::model::arguments::ArgumentInfo]) -> Vec<String> {
    args.iter().map(|a| a.ident.clone()).collect()
}

/// The return of the tensor `ident` wrote: the argument itself where the return aliases it
/// (Note [Aliased returns]), else a new handle.
fn ok_returns(op: &OperatorRecord, ident: &str) -> String {
    match op.aliased_return() {
        Some(_) => format!("Ok({ident})"),
        None => format!("Ok({ident}.clone())"),
    }
}

fn structured_body(
    w: &mut Writer,
    op: &OperatorRecord,
    meta: &KernelPath,
    implementation: Option<&KernelPath>,
    state_type: Option<&str>,
) {
    let inputs = idents(&structured_inputs(op));
    let outputs = idents(&structured_outputs(op));
    let n_out = op.returns.len();
    match op.kind {
        SchemaKind::Functional => w.line(format!(
            "let mut op = structured::StructuredFunctional::<{n_out}>::new();"
        )),
        SchemaKind::Inplace => w.line("let mut op = structured::StructuredInplace::new(&[self_]);"),
        _ => w.stmt(
            "let mut op = ",
            &Expr::call_atoms(
                "structured::StructuredOut::new",
                &[format!("&[{}]", outputs.join(", "))],
            ),
            ";",
        ),
    };
    let state = if implementation.is_some() {
        "mut state"
    } else {
        "_state"
    };
    let annot = state_type.map(|t| format!(": {t}")).unwrap_or_default();
    // The state may borrow the wrapper (a TensorIterator borrows its outputs, see Note
    // [Borrowed structured outputs]): it lives in a block that ends before the wrapper's
    // outputs are taken or its proxies copied back.
    w.block("{", "}", |w| {
        let mut meta_args = vec!["&op".to_string()];
        meta_args.extend(inputs.iter().cloned());
        w.stmt(
            &format!("let {state}{annot} = "),
            &Expr::call_atoms(kernel(meta), &meta_args),
            "?;",
        );
        if let Some(ip) = implementation {
            let mut args = vec!["&mut state".to_string()];
            args.extend(inputs.iter().cloned());
            args.extend((0..n_out).map(|i| format!("op.output({i})?")));
            w.stmt("", &Expr::call_atoms(kernel(ip), &args), "?;");
        }
    });
    match op.kind {
        SchemaKind::Functional if n_out == 1 => {
            w.line("op.take(0)");
        }
        SchemaKind::Functional => {
            let outs: Vec<String> = (0..n_out).map(|i| format!("op.take({i})?")).collect();
            w.stmt(
                "",
                &Expr::call_atoms("Ok", &[Expr::tuple_atoms(&outs).flat()]),
                "",
            );
        }
        SchemaKind::Inplace => {
            w.line("op.finish()?;");
            w.line(ok_returns(op, "self_"));
        }
        _ => {
            w.line("op.finish()?;");
            returns_outputs(w, op, &outputs);
        }
    }
}

/// `Ok(out)`, or a tuple of the out= arguments' handles.
fn returns_outputs(w: &mut Writer, op: &OperatorRecord, outputs: &[String]) {
    match outputs {
        [one] => {
            w.line(ok_returns(op, one));
        }
        _ => {
            let c: Vec<String> = outputs.iter().map(|o| format!("{o}.clone()")).collect();
            w.stmt("", &Expr::call("Ok", vec![Expr::tuple_atoms(&c)]), "");
        }
    }
}

fn kernel_body(w: &mut Writer, model: &Model, op: &OperatorRecord, k: &KernelRef) {
    match k {
        KernelRef::Plain(path) => {
            let args: Vec<String> = op.args.iter().map(|a| a.ident.clone()).collect();
            w.stmt("", &Expr::call_atoms(kernel(path), &args), "");
        }
        KernelRef::Structured {
            meta,
            implementation,
            state_type,
            ..
        } => structured_body(w, op, meta, implementation.as_ref(), state_type.as_deref()),
        KernelRef::GeneratedOut { functional } => {
            let f = model.op(*functional).map(handle_ident).unwrap_or_default();
            let outputs = idents(&structured_outputs(op));
            // The functional's arguments by name; the tensor options an out= schema drops
            // (a factory's `dtype`, `device`, ...) come from `out`, the rest are None.
            let out0 = outputs.first().cloned().unwrap_or_default();
            let inputs: Vec<String> = match model.op(*functional) {
                Some(func) => func
                    .args
                    .iter()
                    .map(
                        |fa| match op.args.iter().find(|a| a.name == fa.name && !a.is_out) {
                            Some(a) => a.ident.clone(),
                            None if fa.name == "dtype" => format!("Some({out0}.dtype())"),
                            None if fa.name == "device" => format!("Some({out0}.device())"),
                            None => "None".to_string(),
                        },
                    )
                    .collect(),
                None => idents(&structured_inputs(op)),
            };
            w.line(
                "// torchgen's generated out= kernel: the functional result, copied into `out`.",
            );
            w.stmt(
                "let result = ",
                &Expr::call_atoms(format!("operators::{f}::call"), &inputs),
                "?;",
            );
            if let [out] = outputs.as_slice() {
                w.line(format!(
                    "structured::resize_output({out}, &result.sizes())?;"
                ));
                w.line(format!("structured::copy_same_dtype({out}, &result)?;"));
            } else {
                for (i, o) in outputs.iter().enumerate() {
                    w.line(format!(
                        "structured::resize_output({o}, &result.{i}.sizes())?;"
                    ));
                    w.line(format!("structured::copy_same_dtype({o}, &result.{i})?;"));
                }
            }
            returns_outputs(w, op, &outputs);
        }
        KernelRef::GeneratedFunctional { inplace } => {
            let f = model.op(*inplace).map(handle_ident).unwrap_or_default();
            w.line("// torchgen's generated functional kernel: the in-place operator on a copy.");
            w.stmt(
                "let copy = ",
                &Expr::call_atoms(
                    "structured::create_out",
                    &[
                        "&self_.sizes()",
                        "&[]",
                        "(self_.dtype(), self_.device()).into()",
                    ],
                ),
                "?;",
            );
            w.line("structured::copy_same_dtype(&copy, self_)?;");
            let args: Vec<String> = op
                .args
                .iter()
                .map(|a| {
                    if a.name == "self" {
                        "&copy".to_string()
                    } else {
                        a.ident.clone()
                    }
                })
                .collect();
            w.stmt(
                "",
                &Expr::call_atoms(format!("operators::{f}::call"), &args),
                "?;",
            );
            w.line("Ok(copy)");
        }
    }
}

pub fn emit(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let opts = cx.opts;
    let model = cx.model;
    let mut files = Vec::new();
    let keys = model.dispatch_keys();
    let kernels_use = match opts.kernel_module.rsplit("::").next() {
        Some("kernels") => format!("use {};", opts.kernel_module),
        _ => format!("use {} as kernels;", opts.kernel_module),
    };
    for key in &keys {
        let m = key_module(key);
        let by_shard = shards(model.ops.iter().filter(|o| o.kernels.contains_key(key)));
        for (shard, ops) in &by_shard {
            let mut w = Writer::new();
            w.line(header(
                opts,
                &format!(
                    "The `{key}` kernels of shard `{shard}`, called directly: see `backends`."
                ),
            ));
            w.line(prelude(3, &["operators"]));
            w.blank();
            w.line(&kernels_use);
            for op in ops {
                let k = &op.kernels[key];
                let sig = backend(op);
                w.blank();
                w.line(format!("/// `{}`", op.doc()));
                w.fn_header(
                    &format!("pub fn {}", sig.name_with_generics()),
                    &sig.param_decls(&opts.aten),
                    &sig.result(&opts.aten),
                    " {",
                );
                w.indented(|w| kernel_body(w, model, op, k));
                w.line("}");
            }
            files.push(GeneratedFile::new(
                format!("backends/{m}/{shard}.rs"),
                w.finish(),
            ));
        }
        let shard_keys: Vec<String> = by_shard.keys().cloned().collect();
        let head = header(opts, &format!("The `{key}` kernels, called directly."));
        files.push(GeneratedFile::new(
            format!("backends/{m}/mod.rs"),
            shard_mod(&head, &shard_keys, ""),
        ));
    }
    let mut s = header(
        opts,
        "Per-backend direct functions (PyTorch's `at::cpu::add`), bypassing the dispatcher;\n\
         //! the structured wrappers (functional / in-place / out=) around meta and impl. One\n\
         //! module per dispatch key.",
    );
    s.push('\n');
    let mut modules: Vec<String> = keys.iter().map(|k| key_module(k)).collect();
    modules.sort();
    for m in modules {
        s.push_str(&format!("pub mod {m};\n"));
    }
    files.insert(0, GeneratedFile::new("backends/mod.rs", s));
    Ok(files)
}
