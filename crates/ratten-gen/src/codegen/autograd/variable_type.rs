//! The Autograd kernels (torchgen's gen_variable_type.py, PyTorch's `VariableType_*.cpp`),
//! the generated tree's `mod.rs` and its registrations (`registration.rs`).
//!
//! Which operator gets which kernel follows torchgen's `dispatch_strategy` and
//! `gen_variable_type_func` ([`autograd_kernel`]):
//! - a CompositeImplicitAutograd operator gets none (its decomposition is differentiated; its
//!   entry, if any, is torch's AutogradNestedTensor kernel);
//! - an out= operator refuses when an argument requires grad (torch's text);
//! - an operator with a backward node records it: `compute_requires_grad` over the inputs
//!   with derivatives, `check_inplace` for in-place ones, the node with its next edges and
//!   saved inputs made before the call (an in-place operator saves a clone of the `self` it
//!   overwrites), the call below Autograd, then the saved outputs and `set_history` (or
//!   `rebase_history` for in-place) on the differentiable outputs;
//! - an operator whose entry has no differentiable input only redispatches;
//! - an operator in torchgen's `DONT_REQUIRE_DERIVATIVE` only redispatches;
//! - an operator without an entry whose outputs are differentiable records a `NotImplemented`
//!   node, which fails when a backward reaches it (torch's behaviour).

use std::collections::BTreeMap;

use ratten_schema::native::SchemaKind;

use crate::model::names::{ident, raw_ident};
use crate::model::signatures::dispatcher;
use crate::model::OperatorRecord;

use ratten_schema::derivatives::SavedValue;

use super::coverage::saved_value_forward;
use super::formula::translate;
use super::forward::{
    any_fw_grad_cond, differentiable_inputs, emit_forward_formulas, forward_codes,
    forward_derivatives, ForwardCode,
};
use super::functions::{
    array_stmt, cxx_type, default_info, differentiable_outputs, node_for, node_specs, output_names,
    rust_expr, NodeSpec, SavedField, Storage, Translation,
};
use super::inplace_or_view;
use super::types::CxxType;
use crate::codegen::operators::handle_ident;
use crate::codegen::writer::{Expr, Writer};
use crate::codegen::{
    header, shard_mod, shards, EmitContext, GeneratedFile, Target, ALLOWED_LINTS,
};

/// The Autograd kernel an operator gets.
pub enum AutogradKernel<'m> {
    /// Records the backward node.
    Derived(&'m NodeSpec<'m>),
    /// Its entry gives no input a derivative: redispatch only.
    NonDifferentiable,
    /// An out= operator: refuses inputs that require grad.
    Out,
    /// No entry, differentiable outputs: not implemented when an input requires grad.
    NotImplemented,
}

/// torchgen's `DONT_REQUIRE_DERIVATIVE`: operators whose outputs never get a history (they
/// depend on the input's shape only, or give integers or booleans), by base name.
const DONT_REQUIRE_DERIVATIVE: &[&str] = &[
    "empty_like",
    "ones_like",
    "full_like",
    "zeros_like",
    "rand_like",
    "randn_like",
    "randint_like",
    "new_empty",
    "new_empty_strided",
    "new_full",
    "new_zeros",
    "new_ones",
    "__and__",
    "__iand__",
    "__ilshift__",
    "__ior__",
    "__irshift__",
    "__ixor__",
    "__lshift__",
    "__or__",
    "__rshift__",
    "__xor__",
    "argmax",
    "argmin",
    "argsort",
    "searchsorted",
    "bucketize",
    "isnan",
    "isposinf",
    "isneginf",
    "isinf",
    "signbit",
    "isin",
    "allclose",
    "record_stream",
    "logical_and",
    "logical_xor",
    "logical_not",
    "logical_or",
];

/// Operators whose Autograd kernel is written by hand, as torch's VariableTypeManual.cpp
/// (`crates/ratten-autograd/src/manual_kernels.rs`): none is generated.
pub const MANUAL_AUTOGRAD: &[&str] = &["copy_"];

/// Views whose kernels torch writes by hand as non-differentiable (VariableTypeManual.cpp):
/// their Autograd kernel only redispatches, their output is no view for autograd.
pub const MANUAL_NON_DIFFERENTIABLE_VIEWS: &[&str] = &["detach"];

/// Whether the operator is differentiated through its CompositeImplicitAutograd
/// decomposition. torchgen registers the derivatives.yaml entry of such an operator (matmul,
/// linear) only for AutogradNestedTensor, so dense tensors always decompose (torch's
/// `(a @ b).grad_fn` is `MmBackward0`); ratten has no nested tensors.
pub fn uses_decomposition(op: &OperatorRecord) -> bool {
    op.kernels.contains_key("CompositeImplicitAutograd")
        || op
            .kernels
            .contains_key("CompositeImplicitAutogradNestedTensor")
}

/// The Autograd kernel of `op`, if it gets one.
pub fn autograd_kernel<'m>(
    specs: &'m BTreeMap<String, NodeSpec<'m>>,
    op: &OperatorRecord,
) -> Option<AutogradKernel<'m>> {
    if uses_decomposition(op) || MANUAL_AUTOGRAD.contains(&op.name_with_overload.as_str()) {
        return None;
    }
    if op.kind == SchemaKind::Out {
        return Some(AutogradKernel::Out);
    }
    if DONT_REQUIRE_DERIVATIVE.contains(&op.root_name.as_str())
        || MANUAL_NON_DIFFERENTIABLE_VIEWS.contains(&op.root_name.as_str())
    {
        return Some(AutogradKernel::NonDifferentiable);
    }
    if let Some(info) = default_info(op) {
        return Some(match node_for(specs, op) {
            Some(spec) if info.has_derivatives() => AutogradKernel::Derived(spec),
            _ => AutogradKernel::NonDifferentiable,
        });
    }
    differentiable_outputs(op, None)
        .first()
        .map(|_| AutogradKernel::NotImplemented)
}

/// Binds `inputs` to the tensors of `names` (arguments of `op`), for
/// `compute_requires_grad(&inputs)` and `collect_next_edges(&inputs)`: an array, or a `Vec`
/// when a list is among them.
pub fn bind_inputs(w: &mut Writer, op: &OperatorRecord, names: &[&str]) {
    let mut items = Vec::new();
    let mut lists = false;
    for a in op.args.iter().filter(|a| names.contains(&a.name.as_str())) {
        let item = match cxx_type(&a.schema_type) {
            Some(CxxType::Tensor) => format!("Some({})", a.ident),
            Some(CxxType::OptTensor) => a.ident.clone(),
            Some(CxxType::TensorList) => {
                lists = true;
                format!("{}.iter().map(Some)", a.ident)
            }
            Some(CxxType::OptTensorList) => {
                lists = true;
                format!("{}.iter().map(Option::as_ref)", a.ident)
            }
            _ => continue,
        };
        items.push(item);
    }
    if items.is_empty() {
        w.line("let inputs: [Option<&Tensor>; 0] = [];");
    } else if !lists {
        array_stmt(w, "let inputs = ", &items, ";");
    } else {
        w.line("let mut inputs: Vec<Option<&Tensor>> = Vec::new();");
        for i in items {
            if i.contains(".iter()") {
                w.line(format!("inputs.extend({i});"));
            } else {
                w.line(format!("inputs.push({i});"));
            }
        }
    }
}

/// The arguments `op` writes (`self` of an in-place operator, out= arguments).
pub fn written_args(op: &OperatorRecord) -> Vec<usize> {
    op.args
        .iter()
        .filter(|a| a.alias.as_ref().is_some_and(|x| x.is_write))
        .map(|a| a.index)
        .collect()
}

/// `{ let _guard = ...; ops::X::redispatch(ks & KEYSET, args..)? }`.
pub fn emit_redispatch(w: &mut Writer, lhs: &str, op: &OperatorRecord, keyset: &str) {
    w.block(format!("{lhs}{{"), "};", |w| {
        w.line("let _guard = AutoDispatchBelowADInplaceOrView::new();");
        let mut args = vec![format!("ks & {keyset}")];
        args.extend(op.args.iter().map(|a| a.ident.clone()));
        w.stmt(
            "",
            &Expr::call_atoms(format!("ops::{}::redispatch", handle_ident(op)), &args),
            "?",
        );
    });
}

/// The local names of a functional operator's outputs and the pattern binding them.
fn output_locals(op: &OperatorRecord) -> (Vec<String>, String) {
    let names: Vec<String> = output_names(op).iter().map(|n| ident(n)).collect();
    let pattern = match names.as_slice() {
        [one] => one.clone(),
        many => format!("({})", many.join(", ")),
    };
    (names, pattern)
}

fn kernel_header(w: &mut Writer, op: &OperatorRecord, aten: &str) {
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
}

/// An owned copy of a value in borrowed form `expr` (`&[i64]` -> `Vec<i64>`).
fn owned_from_borrowed(ty: &CxxType, expr: &str) -> String {
    use CxxType as C;
    match ty {
        t if t.is_copy() => expr.to_string(),
        C::IntList | C::BoolList | C::FloatList | C::ScalarTypeList | C::IntListList => {
            format!("{expr}.to_vec()")
        }
        C::OptIntList => format!("{expr}.map(|v| v.to_vec())"),
        C::OptScalar | C::OptGenerator => format!("{expr}.cloned()"),
        C::String => format!("{expr}.to_string()"),
        C::OptString => format!("{expr}.map(str::to_string)"),
        _ => format!("{expr}.clone()"),
    }
}

/// The forward's Rust computing saved value `f` from `input` (its value in borrowed form).
fn saved_forward(f: &SavedField, input: &str) -> String {
    let v = SavedValue {
        name: f.name.clone(),
        of: f.of.clone(),
        expr: f.expr.clone(),
    };
    // `NodeSpec` keeps only values `saved_value_forward` computes.
    saved_value_forward(&v, input).unwrap_or_else(|| format!("Default::default() /* {} */", f.expr))
}

fn emit_derived(w: &mut Writer, op: &OperatorRecord, spec: &NodeSpec<'_>, tr: &Translation) {
    let info = spec.info;
    let inplace = op.kind != SchemaKind::Functional;
    let with: Vec<&str> = info
        .args_with_derivatives
        .iter()
        .map(String::as_str)
        .collect();
    bind_inputs(w, op, &with);
    w.line("let requires_grad = compute_requires_grad(&inputs);");
    let self_ident = op
        .self_arg
        .map(|i| op.args[i].ident.clone())
        .unwrap_or_else(|| "self_".into());
    if inplace {
        w.line(format!("check_inplace({self_ident}, requires_grad)?;"));
    }
    let forward = forward_plan(op, spec, tr);
    if let Some((cond, plan)) = &forward {
        w.line(format!("let any_fw = {cond};"));
        match plan {
            Ok(codes) if codes.iter().any(|c| c.original_self) => {
                w.line(format!(
                    "let original_self_p = if any_fw {{ Some({}::clone::call({self_ident}, None)?) }} else {{ None }};",
                    tr.aten_ops
                ));
            }
            Ok(_) => {}
            Err(_) => {
                w.block("if any_fw {", "}", |w| {
                    w.line(format!(
                        "return Err(forward_ad_not_implemented({:?}));",
                        cpp_name(op)
                    ));
                });
            }
        }
    }
    // The node, its next edges and saved inputs are taken before the call: an in-place call
    // changes them.
    w.block("let grad_fn = if requires_grad {", "} else {", |w| {
        // Made in its allocation (Note [Nodes made in place]).
        w.block(format!("Some(new_node!({} {{", spec.name), "}))", |w| {
            w.line("next_edges: collect_next_edges(&inputs),");
            for f in spec.fields.iter().filter(|f| !f.is_output) {
                let a = op.args.iter().find(|a| a.name == f.of);
                let arg = a.map(|a| a.ident.clone()).unwrap_or_else(|| ident(&f.of));
                let value = if f.name == f.of {
                    match f.storage {
                        Storage::Var
                            if inplace && a.is_some_and(|a| Some(a.index) == op.self_arg) =>
                        {
                            format!(
                                "SavedVariable::new(&{}::clone::call({arg}, None)?, false)",
                                tr.aten_ops
                            )
                        }
                        Storage::Var => format!("SavedVariable::new({arg}, false)"),
                        Storage::OptVar => format!("SavedVariable::new_opt({arg}, false)"),
                        Storage::VarList => format!("saved_list({arg}, false)"),
                        Storage::OptVarList => format!("saved_opt_list({arg}, false)"),
                        Storage::Plain => owned_from_borrowed(&f.ty, &arg),
                    }
                } else {
                    saved_forward(f, &arg)
                };
                if value == f.ident {
                    w.line(format!("{value},"));
                } else {
                    w.stmt(&format!("{}: ", f.ident), &rust_expr(&value), ",");
                }
            }
            for f in spec.fields.iter().filter(|f| f.is_output) {
                w.line(format!("{}: Default::default(),", f.ident));
            }
            for l in &spec.list_sizes {
                let a = op
                    .args
                    .iter()
                    .find(|a| &a.name == l)
                    .map(|a| a.ident.clone())
                    .unwrap_or_else(|| ident(l));
                w.line(format!("{l}_size_: {a}.len(),"));
            }
        });
    });
    w.line("    None");
    w.line("};");
    // The call, then the outputs: for an in-place operator the output is `self`.
    let out_names = output_names(spec.op);
    let (outputs, lhs): (Vec<(String, String)>, String) = if inplace {
        let o = out_names
            .iter()
            .map(|n| (n.clone(), self_ident.clone()))
            .collect();
        (o, "let ret = ".to_string())
    } else {
        let (locals, pattern) = output_locals(spec.op);
        let o = out_names
            .iter()
            .cloned()
            .zip(locals.iter().map(|l| format!("&{l}")))
            .collect();
        (o, format!("let {pattern} = "))
    };
    emit_redispatch(w, &lhs, op, "AFTER_AUTOGRAD_KEYSET");
    let place = |name: &str| -> String {
        outputs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| ident(name))
    };
    let saves_outputs = spec.fields.iter().any(|f| f.is_output);
    let binding = if saves_outputs { "mut node" } else { "node" };
    // Saved outputs keep the tangents computed below (torch saves outputs after them).
    let saved_tangents: Vec<&SavedField> = match &forward {
        Some((_, Ok(_))) => spec
            .fields
            .iter()
            .filter(|f| f.is_output && f.name == f.of && matches!(f.storage, Storage::Var))
            .collect(),
        _ => Vec::new(),
    };
    if !saved_tangents.is_empty() {
        w.line("let mut saved_node = None;");
    }
    // An output that gets no history (torchgen's `uses_single_grad` keeps only the first) is
    // saved as a plain tensor, as torch's SavedVariable saves an output that is a leaf.
    let diff_names: Vec<&String> = differentiable_outputs(spec.op, Some(info))
        .into_iter()
        .map(|i| &out_names[i])
        .collect();
    w.block(format!("if let Some({binding}) = grad_fn {{"), "}", |w| {
        for f in spec.fields.iter().filter(|f| f.is_output) {
            let p = place(&f.of);
            // Its output number is its place among the outputs given history below (the
            // history is set after the node is made, so it cannot be read from the tensor).
            let output_nr = diff_names.iter().position(|n| **n == f.of);
            let has_history = output_nr.is_some();
            let value = if f.name == f.of {
                match (&f.storage, output_nr) {
                    (Storage::Var, Some(nr)) => format!("SavedVariable::new_output({p}, {nr})"),
                    (Storage::Var, None) => format!("SavedVariable::new({p}, false)"),
                    (Storage::VarList, _) => format!("saved_list({p}, {has_history})"),
                    _ => owned_from_borrowed(&f.ty, &p),
                }
            } else {
                saved_forward(f, &p)
            };
            w.stmt(&format!("node.{} = ", f.ident), &rust_expr(&value), ";");
        }
        if saved_tangents.is_empty() {
            w.line("let node: Arc<dyn Node> = node.into_arc();");
        } else {
            w.line("let node = node.into_arc();");
            // Kept only when tangents are computed below: no extra count on the usual path.
            w.block("if any_fw {", "}", |w| {
                w.line("saved_node = Some(Arc::clone(&node));");
            });
            w.line("let node: Arc<dyn Node> = node;");
        }
        if inplace {
            w.line(format!("rebase_history({self_ident}, &node)?;"));
            return;
        }
        let diff = differentiable_outputs(spec.op, Some(info));
        let lists: Vec<usize> = diff
            .iter()
            .copied()
            .filter(|&i| spec.op.returns[i].schema_type.is_list())
            .collect();
        let items: Vec<String> = diff.iter().map(|&i| place(&out_names[i])).collect();
        let call = if lists.is_empty() {
            let items: Vec<String> = items.iter().map(|p| format!("Some({p})")).collect();
            format!("set_history(&[{}], &node)?;", items.join(", "))
        } else {
            w.line("let mut outputs: Vec<Option<&Tensor>> = Vec::new();");
            for (k, &i) in diff.iter().enumerate() {
                if lists.contains(&i) {
                    w.line(format!("outputs.extend(({}).iter().map(Some));", items[k]));
                } else {
                    w.line(format!("outputs.push(Some({}));", items[k]));
                }
            }
            "set_history(&outputs, &node)?;".to_string()
        };
        let cond = info
            .output_differentiability_conditions
            .as_ref()
            .and_then(|c| c.first())
            .and_then(|c| translate(c, &tr.forward_env(op, &outputs)).ok())
            .filter(|t| t.ty == CxxType::Bool);
        match cond {
            Some(c) => {
                w.block(format!("if {} {{", c.rust), "}", |w| {
                    w.line(&call);
                });
            }
            None => {
                w.line(call);
            }
        }
    });
    if let Some((_, Ok(codes))) = &forward {
        let place = |name: &str| -> String {
            outputs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, r)| r.clone())
                .unwrap_or_else(|| ident(name))
        };
        emit_forward_formulas(w, codes, &place, inplace);
        if !saved_tangents.is_empty() {
            w.block("if let Some(node) = &saved_node {", "}", |w| {
                for f in &saved_tangents {
                    let p = place(&f.of);
                    w.line(format!("node.{}.save_fw_grad({p});", f.ident));
                }
            });
        }
    }
    if inplace {
        w.line("Ok(ret)");
    } else {
        let (_, pattern) = output_locals(spec.op);
        w.line(format!("Ok({pattern})"));
    }
}

/// torchgen's `cpp.name(f.func)`, the operator's name in forward AD's errors (`mul_`,
/// `mul_out`).
fn cpp_name(op: &OperatorRecord) -> String {
    let base = op.qualified_name.rsplit("::").next().unwrap_or("");
    if op.kind == SchemaKind::Out {
        format!("{}_out", base.strip_suffix('_').unwrap_or(base))
    } else {
        base.to_string()
    }
}

/// The forward AD of a derived kernel: the condition that some input has a tangent, and the
/// translated formulas or why there are none. None when no input can have a tangent.
pub fn forward_plan(
    op: &OperatorRecord,
    spec: &NodeSpec<'_>,
    tr: &Translation,
) -> Option<(String, Result<Vec<ForwardCode>, String>)> {
    let info = spec.info;
    let diff = differentiable_inputs(op, Some(info));
    if diff.is_empty() {
        return None;
    }
    let plan = forward_codes_of(op, spec, tr);
    let with_tangent: Vec<_> = match &plan {
        Ok(codes) => diff
            .iter()
            .copied()
            .filter(|a| {
                codes
                    .iter()
                    .any(|c| c.tangents.iter().any(|(_, input, _)| *input == a.ident))
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    let cond = if with_tangent.is_empty() {
        any_fw_grad_cond(&diff)
    } else {
        any_fw_grad_cond(&with_tangent)
    };
    Some((cond, plan))
}

/// The translated forward formulas of a derived kernel, or why it has none.
pub fn forward_codes_of(
    op: &OperatorRecord,
    spec: &NodeSpec<'_>,
    tr: &Translation,
) -> Result<Vec<ForwardCode>, String> {
    let info = spec.info;
    if info.forward_derivatives.is_empty() {
        return Err("no forward formula".into());
    }
    let exact = op.differentiability.as_ref().is_some_and(|d| d.exact);
    let fws = forward_derivatives(op, info, exact)?;
    let outputs: Vec<(String, String)> = if op.kind == SchemaKind::Functional {
        let (locals, _) = output_locals(spec.op);
        output_names(spec.op).into_iter().zip(locals).collect()
    } else {
        Vec::new()
    };
    forward_codes(tr, op, &fws, &outputs)
}

fn emit_out(w: &mut Writer, op: &OperatorRecord) {
    let all: Vec<&str> = op.args.iter().map(|a| a.name.as_str()).collect();
    bind_inputs(w, op, &all);
    let base = op.qualified_name.rsplit("::").next().unwrap_or("");
    let base = base.strip_suffix('_').unwrap_or(base);
    let msg = format!(
        "{base}(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
    );
    w.block("if compute_requires_grad(&inputs) {", "}", |w| {
        w.stmt(
            "return Err(",
            &Expr::call_atoms("ratten_core::Error::runtime", &[format!("{msg:?}")]),
            ");",
        );
    });
    w.block("if any_fw_grad_defined(&inputs) {", "}", |w| {
        w.line(format!(
            "return Err(forward_ad_out_refused({:?}));",
            cpp_name(op)
        ));
    });
    emit_redispatch(w, "let ret = ", op, "AFTER_AUTOGRAD_KEYSET");
    w.line("Ok(ret)");
}

/// torchgen's `NotImplemented` node: an operator without an entry whose outputs are
/// differentiable records a node that fails when the backward reaches it.
fn emit_not_implemented(w: &mut Writer, op: &OperatorRecord) {
    let all: Vec<&str> = op.args.iter().map(|a| a.name.as_str()).collect();
    bind_inputs(w, op, &all);
    w.line("let requires_grad = compute_requires_grad(&inputs);");
    w.block("if any_fw_grad_defined(&inputs) {", "}", |w| {
        w.line(format!(
            "return Err(forward_ad_not_implemented({:?}));",
            cpp_name(op)
        ));
    });
    let written: Vec<&str> = written_args(op)
        .into_iter()
        .filter(|&i| matches!(cxx_type(&op.args[i].schema_type), Some(CxxType::Tensor)))
        .map(|i| op.args[i].ident.as_str())
        .collect();
    for a in &written {
        w.line(format!("check_inplace({a}, requires_grad)?;"));
    }
    w.line("let next_edges = requires_grad.then(|| collect_next_edges(&inputs));");
    let (locals, pattern) = output_locals(op);
    emit_redispatch(w, &format!("let {pattern} = "), op, "AFTER_AUTOGRAD_KEYSET");
    w.block("if let Some(next_edges) = next_edges {", "}", |w| {
        w.line(format!(
            "let node: Arc<dyn Node> = Arc::new(NotImplemented::new({:?}, next_edges));",
            op.qualified_name
        ));
        if !written.is_empty() {
            for a in &written {
                w.line(format!("rebase_history({a}, &node)?;"));
            }
        } else {
            let mut items = Vec::new();
            for i in differentiable_outputs(op, None) {
                if op.returns[i].schema_type.is_list() {
                    w.line(format!("set_history_list(&{}, &node)?;", locals[i]));
                } else {
                    items.push(format!("Some(&{})", locals[i]));
                }
            }
            if !items.is_empty() {
                w.line(format!("set_history(&[{}], &node)?;", items.join(", ")));
            }
        }
    });
    w.line(format!("Ok({pattern})"));
}

fn emit_kernel(
    w: &mut Writer,
    op: &OperatorRecord,
    k: &AutogradKernel<'_>,
    tr: &Translation,
    aten: &str,
) {
    kernel_header(w, op, aten);
    w.indented(|w| match k {
        AutogradKernel::Derived(spec) => emit_derived(w, op, spec, tr),
        AutogradKernel::Out => emit_out(w, op),
        AutogradKernel::NotImplemented => emit_not_implemented(w, op),
        AutogradKernel::NonDifferentiable => {
            emit_redispatch(w, "let ret = ", op, "AFTER_AUTOGRAD_KEYSET");
            w.line("Ok(ret)");
        }
    });
    w.line("}");
}

/// `variable_type/`: the Autograd kernels by shard.
pub fn emit(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let tr = Translation::of(cx);
    let specs = node_specs(&cx.model.ops);
    let with: Vec<(&OperatorRecord, AutogradKernel<'_>)> = cx
        .model
        .ops
        .iter()
        .filter_map(|op| autograd_kernel(&specs, op).map(|k| (op, k)))
        .collect();
    let kernels: BTreeMap<usize, &AutogradKernel<'_>> =
        with.iter().map(|(op, k)| (op.index, k)).collect();
    let by_shard = shards(with.iter().map(|(op, _)| *op));
    let mut files = Vec::new();
    for (key, ops) in &by_shard {
        let mut w = Writer::new();
        w.line(header(
            cx.opts,
            &format!(
                "The Autograd kernels of the operators in shard `{key}`: see `variable_type`."
            ),
        ));
        w.line("use super::super::functions::*;");
        w.line(super::imports(cx.opts));
        for op in ops {
            w.blank();
            emit_kernel(&mut w, op, kernels[&op.index], &tr, &cx.opts.aten);
        }
        files.push(GeneratedFile::new(
            format!("variable_type/{key}.rs"),
            w.finish(),
        ));
    }
    let keys: Vec<String> = by_shard.keys().cloned().collect();
    let head = header(
        cx.opts,
        &format!(
            "The Autograd kernels (PyTorch's `VariableType`, {} kernels): per operator, record\n\
             //! its backward node and redispatch below Autograd; registered in `registration`.",
            with.len()
        ),
    );
    files.insert(
        0,
        GeneratedFile::new("variable_type/mod.rs", shard_mod(&head, &keys, "")),
    );
    Ok(files)
}

/// The generated tree's `mod.rs`.
pub fn emit_mod(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let of = match cx.opts.target {
        Target::OutOfTreeAutograd => format!("namespace `{}`", cx.model.namespace),
        _ => "ratten-aten".to_string(),
    };
    let mut s = header(
        cx.opts,
        &format!(
            "The generated autograd code of {of}'s operators: backward nodes (`functions`),\n\
             //! Autograd kernels (`variable_type`), ADInplaceOrView kernels (`inplace_or_view`) and\n\
             //! their registration."
        ),
    );
    s.push('\n');
    // Saved tensors are unpacked at the top of `apply` as torchgen does, also when a formula
    // that used them is not translated.
    s.push_str(&ALLOWED_LINTS.replace("unused_mut,", "unused_mut,\n    unused_variables,"));
    s.push('\n');
    for m in [
        "functions",
        "inplace_or_view",
        "registration",
        "variable_type",
    ] {
        s.push_str(&format!("pub mod {m};\n"));
    }
    Ok(vec![GeneratedFile::new("mod.rs", s)])
}

/// `registration.rs`: the Autograd and ADInplaceOrView kernels under their keys.
pub fn emit_registration(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let specs = node_specs(&cx.model.ops);
    let ns = &cx.model.namespace;
    let mut w = Writer::new();
    w.line(header(
        cx.opts,
        &format!(
            "The registration of the Autograd kernels (under the `Autograd` alias key) and of the\n\
             //! ADInplaceOrView kernels (PyTorch's `TORCH_LIBRARY_IMPL({ns}, Autograd, m)` blocks)."
        ),
    ));
    w.line("use super::inplace_or_view;");
    w.line("use super::variable_type;");
    w.line(super::imports(cx.opts));
    w.line("use ratten_dispatch::{Operator, WithKeySet};");
    w.blank();
    if cx.opts.target == Target::OutOfTreeAutograd {
        w.line("/// Referenced by the library's `ensure_linked`, which its operator handles call: keeps");
        w.line("/// these registrations linked into every binary that calls its operators.");
    } else {
        w.line(
            "/// Referenced by the runtime: keeps these registrations linked into every binary that",
        );
        w.line("/// uses autograd.");
    }
    w.line("#[inline(never)]");
    w.block("pub fn ensure_linked() {", "}", |w| {
        w.line("std::hint::black_box(());");
    });
    let blocks: [(&str, &str, Vec<&OperatorRecord>); 2] = [
        (
            "Autograd",
            "variable_type",
            cx.model
                .ops
                .iter()
                .filter(|op| autograd_kernel(&specs, op).is_some())
                .collect(),
        ),
        (
            "ADInplaceOrView",
            "inplace_or_view",
            cx.model
                .ops
                .iter()
                .filter(|op| inplace_or_view::kernel_kind(op).is_some())
                .collect(),
        ),
    ];
    for (key, module, ops) in blocks {
        if ops.is_empty() {
            continue;
        }
        w.blank();
        w.block(
            format!("ratten_dispatch::torch_library_impl!({ns}, {key}, |m| {{"),
            "});",
            |w| {
                for op in ops {
                    let kernel = Expr::call(
                        format!("ops::{}::kernel", handle_ident(op)),
                        vec![Expr::call_atoms(
                            "WithKeySet",
                            &[format!("{module}::{}", raw_ident(&op.handle))],
                        )],
                    );
                    let name = Expr::atom(format!("{:?}", op.name_with_overload));
                    w.stmt("", &Expr::call("m.impl_", vec![name, kernel]), "?;");
                }
            },
        );
    }
    Ok(vec![GeneratedFile::new("registration.rs", w.finish())])
}

/// The forward AD of every derived kernel of `model`: `(operator, formulas translated or why
/// not)`. Operators whose entry has no `result:` formula are listed with
/// "no forward formula".
pub fn forward_coverage(
    model: &crate::model::Model,
    tr: &Translation,
) -> Vec<(String, Result<(), String>)> {
    let specs = node_specs(&model.ops);
    model
        .ops
        .iter()
        .filter_map(|op| match autograd_kernel(&specs, op) {
            Some(AutogradKernel::Derived(spec)) => forward_plan(op, spec, tr)
                .map(|(_, plan)| (op.name_with_overload.clone(), plan.map(|_| ()))),
            _ => None,
        })
        .collect()
}
