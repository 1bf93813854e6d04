//! The operator handles (PyTorch's `at::_ops::add_Tensor`): per overload an uninhabited type
//! implementing ratten-dispatch's `Operator` (name, overload name, schema, typed signature,
//! its handle's `static` cell), with `call` and `redispatch` taking the borrowed arguments
//! one by one (Note [Static operator handles] in ratten-dispatch).

use crate::model::names::raw_ident;
use crate::model::signatures::{args_tuple, dispatcher, refs_tuple};
use crate::model::types::RustType;
use crate::model::OperatorRecord;

use super::writer::{Expr, Writer};
use super::{header, prelude, shard_mod, shards, EmitContext, GeneratedFile};

/// The Rust name of an operator's handle type (`add_Tensor`, `r#where`).
pub fn handle_ident(op: &OperatorRecord) -> String {
    raw_ident(&op.handle)
}

/// A tuple type laid out as rustfmt does.
fn type_alias(w: &mut Writer, name: &str, ty: &RustType, aten: &str) {
    match ty {
        RustType::Tuple(items) if !items.is_empty() => {
            let items: Vec<String> = items.iter().map(|t| t.render(aten)).collect();
            w.stmt(&format!("type {name} = "), &Expr::tuple_atoms(&items), ";");
        }
        t => {
            w.line(format!("type {name} = {};", t.render(aten)));
        }
    }
}

fn emit_op(w: &mut Writer, op: &OperatorRecord, aten: &str) {
    let h = handle_ident(op);
    let sig = dispatcher(op);
    let result = sig.result(aten);
    w.line(format!("/// `{}`", op.doc()));
    w.line(format!("pub enum {h} {{}}"));
    w.blank();
    w.block(format!("impl Operator for {h} {{"), "}", |w| {
        for (k, v) in [
            ("NAME", &op.qualified_name),
            ("OVERLOAD_NAME", &op.overload_name),
            ("SCHEMA", &op.schema_source),
        ] {
            w.stmt(
                &format!("const {k}: &'static str = "),
                &Expr::atom(format!("{v:?}")),
                ";",
            );
        }
        type_alias(w, "Args", &args_tuple(op), aten);
        type_alias(w, "Return", &sig.ret, aten);
        w.blank();
        // Inlined into `call` so that the cached handle costs one load (Note [Static
        // operator handles]).
        w.line("#[inline(always)]");
        w.block("fn cell() -> &'static OperatorCell<Self> {", "}", |w| {
            w.stmt(
                &format!("static CELL: OperatorCell<{h}> = "),
                &Expr::call_atoms("OperatorCell::new", &["ensure_linked"]),
                ";",
            );
            w.line("&CELL");
        });
    });
    w.blank();
    let params = sig.param_decls(aten);
    let refs = Expr::tuple_atoms(&op.args.iter().map(|a| a.ident.as_str()).collect::<Vec<_>>());
    w.block(format!("impl {h} {{"), "}", |w| {
        w.fn_header("pub fn call", &params, &result, " {");
        w.indented(|w| {
            w.stmt("", &Expr::call("Self::call_refs", vec![refs.clone()]), "");
        });
        w.line("}");
        w.blank();
        let mut rparams = vec!["ks: DispatchKeySet".to_string()];
        rparams.extend(params.iter().cloned());
        w.fn_header("pub fn redispatch", &rparams, &result, " {");
        w.indented(|w| {
            w.stmt(
                "",
                &Expr::call(
                    "Self::redispatch_refs",
                    vec![Expr::atom("ks"), refs.clone()],
                ),
                "",
            );
        });
        w.line("}");
    });
    debug_assert_eq!(refs.flat(), refs_tuple(op));
}

pub fn emit(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let opts = cx.opts;
    let by_shard = shards(&cx.model.ops);
    let mut files = Vec::new();
    for (key, ops) in &by_shard {
        let mut w = Writer::new();
        w.line(header(
            opts,
            &format!("Operator handles of the operators in shard `{key}`: see `operators`."),
        ));
        let imports = match &opts.ensure_linked {
            // `super::` paths sort before `crate::` ones.
            Some(f) => format!("{}\nuse {f};", prelude(2, &[])),
            None => prelude(2, &["registration::ensure_linked"]),
        };
        w.line(imports);
        for op in ops {
            w.blank();
            emit_op(&mut w, op, &opts.aten);
        }
        files.push(GeneratedFile::new(
            format!("operators/{key}.rs"),
            w.finish(),
        ));
    }
    let keys: Vec<String> = by_shard.keys().cloned().collect();
    let head = header(
        opts,
        "Operator handles (PyTorch's `at::_ops`): one type per overload, named by its\n\
         //! unambiguous name (`add_Tensor`), implementing [`Operator`]: `NAME`, `OVERLOAD_NAME`,\n\
         //! `SCHEMA`, `handle()`. Each has `call` (through the dispatcher) and `redispatch` (the\n\
         //! kernel for the highest key of `ks`, from a kernel below its own key), taking the\n\
         //! borrowed arguments in schema order (`operators::add_Tensor::call(&a, &b, &alpha)`).",
    );
    files.insert(
        0,
        GeneratedFile::new(
            "operators/mod.rs",
            shard_mod(&head, &keys, "pub use ratten_dispatch::Operator;\n"),
        ),
    );
    Ok(files)
}
