//! Per-backend direct functions (PyTorch's `at::cpu::add`, `at::meta::add`): one module per
//! dispatch key, each function calling that key's kernel without the dispatcher. These are
//! also the functions registered for the key. They take every argument in schema order
//! (out= forms are the `..._outf` spelling) and return what the dispatcher returns.
//!
//! For structured kernels these are torchgen's wrappers: functional (allocate), in-place
//! (check against self) and out= (resize, or a proxy copied back), around `meta` and `impl`.

use std::collections::BTreeSet;

use ratten_schema::native::SchemaKind;

use super::model::{snake, KernelImpl, Model, OpInfo};
use super::writer::Writer;
use super::{header, prelude, GenOptions};

/// The Rust module name of a dispatch key (`CompositeExplicitAutograd` ->
/// `composite_explicit_autograd`).
pub fn key_module(key: &str) -> String {
    match key {
        "CPU" => "cpu".to_string(),
        "CUDA" => "cuda".to_string(),
        k => snake(k),
    }
}

/// Every dispatch key some overload has a kernel for, sorted.
pub fn keys(model: &Model) -> BTreeSet<String> {
    model
        .ops
        .iter()
        .flat_map(|o| o.kernels.keys().cloned())
        .collect()
}

fn output_idents(op: &OpInfo) -> Vec<String> {
    op.args
        .iter()
        .filter(|a| a.is_out)
        .map(|a| a.ident.clone())
        .collect()
}

fn structured_body(
    w: &mut Writer,
    op: &OpInfo,
    meta_path: &str,
    impl_path: Option<&str>,
    state_type: Option<&str>,
) {
    let inputs: Vec<String> = op
        .args
        .iter()
        .filter(|a| !a.is_out)
        .map(|a| a.ident.clone())
        .collect();
    let n_out = op.rets.len();
    let wrapper = match op.kind {
        SchemaKind::Functional => {
            w.line(format!(
                "let mut op = structured::StructuredFunctional::<{n_out}>::new();"
            ));
            "functional"
        }
        SchemaKind::Inplace => {
            w.line("let mut op = structured::StructuredInplace::new(&[self_]);");
            "inplace"
        }
        _ => {
            w.line(format!(
                "let mut op = structured::StructuredOut::new(&[{}]);",
                output_idents(op).join(", ")
            ));
            "out"
        }
    };
    let state = if impl_path.is_some() {
        "mut state"
    } else {
        "_state"
    };
    let annot = state_type.map(|t| format!(": {t}")).unwrap_or_default();
    let sep = if inputs.is_empty() { "" } else { ", " };
    // The state may borrow the wrapper (a TensorIterator borrows its outputs, see Note
    // [Borrowed structured outputs]): it lives in a block that ends before the wrapper's
    // outputs are taken or its proxies copied back.
    w.block("{", "}", |w| {
        w.line(format!(
            "let {state}{annot} = {meta_path}(&op{sep}{})?;",
            inputs.join(", ")
        ));
        if let Some(ip) = impl_path {
            let outs: Vec<String> = (0..n_out).map(|i| format!("op.output({i})?")).collect();
            w.line(format!(
                "{ip}(&mut state, {}, {})?;",
                inputs.join(", "),
                outs.join(", ")
            ));
        }
    });
    match wrapper {
        "functional" => {
            if n_out == 1 {
                w.line("op.take(0)");
            } else {
                let outs: Vec<String> = (0..n_out).map(|i| format!("op.take({i})?")).collect();
                w.line(format!("Ok(({}))", outs.join(", ")));
            }
        }
        "inplace" => {
            w.line("op.finish()?;");
            w.line(ok_returns(op, "self_"));
        }
        _ => {
            w.line("op.finish()?;");
            let outs = output_idents(op);
            if outs.len() == 1 {
                w.line(ok_returns(op, &outs[0]));
            } else {
                let c: Vec<String> = outs.iter().map(|o| format!("{o}.clone()")).collect();
                w.line(format!("Ok(({}))", c.join(", ")));
            }
        }
    }
}

/// The return of the tensor `ident` wrote: the argument itself where the return aliases it
/// (Note [Aliased returns]), else a new handle.
fn ok_returns(op: &OpInfo, ident: &str) -> String {
    match op.aliased_return() {
        Some(_) => format!("Ok({ident})"),
        None => format!("Ok({ident}.clone())"),
    }
}

fn kernel_body(w: &mut Writer, model: &Model, op: &OpInfo, k: &KernelImpl) {
    match k {
        KernelImpl::Plain { path } => {
            w.line(format!("{path}({})", op.arg_idents()));
        }
        KernelImpl::Structured {
            meta_path,
            impl_path,
            state_type,
            ..
        } => {
            structured_body(
                w,
                op,
                meta_path,
                impl_path.as_deref(),
                state_type.as_deref(),
            );
        }
        KernelImpl::GeneratedOut { functional } => {
            let f = model
                .op(*functional)
                .map(|f| f.handle_mod.clone())
                .unwrap_or_default();
            let inputs: Vec<String> = op
                .args
                .iter()
                .filter(|a| !a.is_out)
                .map(|a| a.ident.clone())
                .collect();
            let outs = output_idents(op);
            w.line(
                "// torchgen's generated out= kernel: the functional result, copied into `out`.",
            );
            w.line(format!(
                "let result = operators::{f}::call({})?;",
                inputs.join(", ")
            ));
            if outs.len() == 1 {
                w.line(format!(
                    "structured::resize_output({}, &result.sizes())?;",
                    outs[0]
                ));
                w.line(format!(
                    "structured::copy_same_dtype({}, &result)?;",
                    outs[0]
                ));
                w.line(ok_returns(op, &outs[0]));
            } else {
                for (i, o) in outs.iter().enumerate() {
                    w.line(format!(
                        "structured::resize_output({o}, &result.{i}.sizes())?;"
                    ));
                    w.line(format!("structured::copy_same_dtype({o}, &result.{i})?;"));
                }
                let c: Vec<String> = outs.iter().map(|o| format!("{o}.clone()")).collect();
                w.line(format!("Ok(({}))", c.join(", ")));
            }
        }
        KernelImpl::GeneratedFunctional { inplace } => {
            let f = model
                .op(*inplace)
                .map(|f| f.handle_mod.clone())
                .unwrap_or_default();
            w.line("// torchgen's generated functional kernel: the in-place operator on a copy.");
            w.line("let copy = structured::create_out(&self_.sizes(), &[], (self_.dtype(), self_.device()).into())?;");
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
            w.line(format!("operators::{f}::call({})?;", args.join(", ")));
            w.line("Ok(copy)");
        }
    }
}

pub fn emit(model: &Model, opts: &GenOptions) -> String {
    let mut w = Writer::new();
    w.line(header(
        opts,
        "Per-backend direct functions (PyTorch's `at::cpu::add`), bypassing the dispatcher;\n//! the structured wrappers (functional / in-place / out=) around meta and impl.",
    ));
    w.line(prelude(opts));
    for key in keys(model) {
        w.line(format!("/// The `{key}` kernels, called directly."));
        w.block(format!("pub mod {} {{", key_module(&key)), "}", |w| {
            w.line("use super::*;");
            for op in &model.ops {
                let Some(k) = op.kernels.get(&key) else {
                    continue;
                };
                w.blank();
                w.line(format!("/// `{}`", op.doc));
                let (generics, params) = op.kernel_params();
                w.block(
                    format!(
                        "pub fn {}{generics}({params}) -> Result<{}> {{",
                        op.backend_name,
                        op.kernel_ret_type()
                    ),
                    "}",
                    |w| kernel_body(w, model, op, k),
                );
            }
        });
        w.blank();
    }
    w.finish()
}
