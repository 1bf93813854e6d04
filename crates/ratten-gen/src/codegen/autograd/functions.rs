//! The backward nodes (torchgen's gen_autograd_functions.py, PyTorch's generated
//! `Functions.h` / `Functions.cpp`): per derivatives.yaml entry with a differentiable input, a
//! struct named as torchgen names it (`MulBackward0`) holding the values its formulas need
//! (torchgen's saved values: `SavedVariable` for tensors, plain values otherwise), and its
//! `Node::apply` evaluating the formulas, one per group of inputs.
//!
//! [`NodeSpec`] is what this emitter and the Autograd kernels (`variable_type.rs`, which build
//! the nodes) share: the node's name, its fields and how each is computed in the forward.
//!
//! Note [Formula environments]: a formula is translated (`formula.rs`) over an environment
//! binding each C++ name it may use (Note [Formula translation]). In `apply` that is
//! `coverage::backward_env`: the unpacked saved tensors as locals named by their Rust
//! identifier (`self_`, `result`), the other saved values as fields (`self.dim`,
//! `self.self_sym_sizes`, which a formula's `self.sym_sizes()` reads), `grad`, `grads`, the
//! named gradients and `grad_input_mask` as locals `apply` declares. In the forward (the
//! Autograd kernel) the kernel's parameters are bound in their borrowed form. A formula, or a
//! saved value, without a translation makes the node raise a not-implemented error naming
//! it for the inputs it covers; [`coverage`] lists them.

use std::collections::BTreeMap;

use ratten_schema::derivatives::{return_names, FormulaKind, SavedValue};
use ratten_schema::{FunctionSchema, Type};

use crate::model::autograd::DifferentiabilityInfo;
use crate::model::names::ident;
use crate::model::{Model, OperatorRecord};

use super::coverage::{backward_env, formula_returns, saved_value_forward, saved_value_type};
use super::formula::{translate, Binding, Env, OpIndex, Translated};
use super::manual::ManualSignatures;
use super::types::CxxType;
use crate::codegen::writer::{Expr, Writer};
use crate::codegen::{header, shard_mod, shards, EmitContext, GeneratedFile, Target};

/// How a backward node stores one saved value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// A tensor: `SavedVariable`.
    Var,
    /// A `Tensor?`: `SavedVariable` (undefined when `None`).
    OptVar,
    /// A `Tensor[]`: `Vec<SavedVariable>`.
    VarList,
    /// A `Tensor?[]`: `Vec<SavedVariable>`.
    OptVarList,
    /// Any other value, stored as its owned Rust type.
    Plain,
}

/// One field of a backward node.
#[derive(Debug, Clone)]
pub struct SavedField {
    /// The name formulas use (`self_sym_sizes`, `self`, `result`).
    pub name: String,
    /// The Rust field (`self_sym_sizes`, `self_`, `result`).
    pub ident: String,
    /// The input or output it comes from and the forward expression (`self.sym_sizes()`).
    pub of: String,
    pub expr: String,
    pub is_output: bool,
    pub storage: Storage,
    /// The C++ type of the value (the unpacked type for saved tensors).
    pub ty: CxxType,
}

impl SavedField {
    /// The field's Rust type.
    pub fn rust_type(&self, aten: &str) -> String {
        match self.storage {
            Storage::Var | Storage::OptVar => "SavedVariable".into(),
            Storage::VarList | Storage::OptVarList => "Vec<SavedVariable>".into(),
            Storage::Plain => self.ty.owned_rust(aten),
        }
    }
}

/// A backward node: its name, the operator whose entry defines it, its fields.
#[derive(Debug, Clone)]
pub struct NodeSpec<'m> {
    /// `MulBackward0`.
    pub name: String,
    /// The operator the entry names (its schema is the entry's).
    pub op: &'m OperatorRecord,
    pub info: &'m DifferentiabilityInfo,
    /// Saved inputs (sorted by name), then saved outputs (sorted by name).
    pub fields: Vec<SavedField>,
    /// Saved values whose forward expression was not translated, with why.
    pub untranslated: BTreeMap<String, String>,
    /// The `Tensor[]` inputs with a derivative: their length is stored (`tensors_size_`).
    pub list_sizes: Vec<String>,
}

/// The C++ type of a schema type, as formulas see it.
pub fn cxx_type(ty: &Type) -> Option<CxxType> {
    CxxType::of_schema(ty)
}

/// The storage of a whole saved value of type `ty`.
fn storage_of(ty: &CxxType) -> Storage {
    match ty {
        CxxType::Tensor => Storage::Var,
        CxxType::OptTensor => Storage::OptVar,
        CxxType::TensorList => Storage::VarList,
        CxxType::OptTensorList => Storage::OptVarList,
        _ => Storage::Plain,
    }
}

/// The schema type of input or output `name` of `op` (outputs named as formulas name them).
pub fn value_type<'a>(op: &'a OperatorRecord, name: &str) -> Option<(&'a Type, bool)> {
    if let Some(a) = op.args.iter().find(|a| a.name == name) {
        return Some((&a.schema_type, false));
    }
    let rets = output_names(op);
    let i = rets.iter().position(|r| r == name)?;
    Some((&op.returns[i].schema_type, true))
}

/// The names formulas give `op`'s outputs (`result`, `result0`, `values`).
pub fn output_names(op: &OperatorRecord) -> Vec<String> {
    ratten_schema::FunctionSchema::parse(&op.schema_source)
        .map(|s| return_names(&s))
        .unwrap_or_default()
}

/// What formulas are translated with: the operators they may call, the FunctionsManual
/// helpers, and where generated code finds both.
pub struct Translation {
    pub ops: OpIndex,
    pub manual: ManualSignatures,
    /// The module generated code reaches ratten-aten's operator handles through: `ops` in
    /// ratten-autograd, `aten` out of tree (where `ops` is the library's own).
    pub aten_ops: String,
    /// The FunctionsManual module as generated code names it (`crate::functions_manual`).
    pub manual_module: String,
}

impl Translation {
    /// The operators of `model` and the helpers of the FunctionsManual source at `manual`
    /// (none when it cannot be read: every helper call is then refused), for ratten-autograd.
    pub fn new(model: &Model, manual: Option<&std::path::Path>) -> Translation {
        let src = manual
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        Translation {
            ops: OpIndex::new(model),
            manual: ManualSignatures::parse(&src),
            aten_ops: "ops".into(),
            manual_module: "crate::functions_manual".into(),
        }
    }

    /// The translation of an emitter's target: out of tree, formulas call ratten-aten's
    /// operators (`aten::`) and the library's own (`ops::`), and reach FunctionsManual in
    /// ratten-autograd.
    pub fn of(cx: &EmitContext<'_>) -> Translation {
        let mut tr = Translation::new(cx.model, cx.opts.functions_manual.as_deref());
        if cx.opts.target == Target::OutOfTreeAutograd {
            let mut ops = OpIndex::default();
            if let Some(aten) = cx.aten_model {
                ops.extend(aten, "aten");
            }
            ops.extend(cx.model, "ops");
            tr.ops = ops;
            tr.aten_ops = "aten".into();
            tr.manual_module = format!("{}::functions_manual", cx.opts.autograd_crate);
        }
        tr
    }

    /// The forward environment of an operator's kernel: its parameters in their borrowed
    /// form and `outputs` (name -> a place of the owned output).
    pub fn forward_env(&self, op: &OperatorRecord, outputs: &[(String, String)]) -> Env<'_> {
        let mut env = Env::new(&self.ops, &self.manual);
        for a in &op.args {
            if let Some(t) = cxx_type(&a.schema_type) {
                env.bind(&a.name, Binding::borrowed(a.ident.clone(), t));
            }
        }
        let names = output_names(op);
        for (name, rust) in outputs {
            let Some(i) = names.iter().position(|n| n == name) else {
                continue;
            };
            if let Some(t) = cxx_type(&op.returns[i].schema_type) {
                env.bind(name, Binding::place(rust.clone(), t));
            }
        }
        env
    }
}

/// The field of saved value `v` of `op`, or why it has none.
fn saved_field(
    op: &OperatorRecord,
    v: &SavedValue,
    is_output: bool,
) -> Result<SavedField, (String, String)> {
    let (schema_ty, _) = value_type(op, &v.of).ok_or_else(|| {
        (
            v.name.clone(),
            format!("`{}` is not a value of {}", v.of, op.name_with_overload),
        )
    })?;
    let of = cxx_type(schema_ty).ok_or_else(|| {
        (
            v.name.clone(),
            format!("no C++ type for `{schema_ty}` of `{}`", v.of),
        )
    })?;
    let ty = saved_value_type(v, &of).ok_or_else(|| {
        (
            v.name.clone(),
            format!("`{}` has no Rust form to save", v.expr),
        )
    })?;
    let storage = if v.name == v.of {
        storage_of(&ty)
    } else if saved_value_forward(v, "x").is_some() {
        Storage::Plain
    } else {
        return Err((
            v.name.clone(),
            format!("`{}` is not computed in the forward", v.expr),
        ));
    };
    Ok(SavedField {
        name: v.name.clone(),
        ident: ident(&v.name),
        of: v.of.clone(),
        expr: v.expr.clone(),
        is_output,
        storage,
        ty,
    })
}

impl<'m> NodeSpec<'m> {
    /// The node of `info` (an entry naming `op` exactly), when it has differentiable inputs.
    pub fn new(op: &'m OperatorRecord, info: &'m DifferentiabilityInfo) -> Option<NodeSpec<'m>> {
        let name = info.op.clone()?;
        let mut fields = Vec::new();
        let mut untranslated = BTreeMap::new();
        for (saved, is_output) in [
            (&info.all_saved_inputs, false),
            (&info.all_saved_outputs, true),
        ] {
            let mut sorted: Vec<&SavedValue> = saved.iter().collect();
            sorted.sort_by(|a, b| a.name.cmp(&b.name));
            for v in sorted {
                match saved_field(op, v, is_output) {
                    Ok(f) => fields.push(f),
                    Err((n, why)) => {
                        untranslated.insert(n, why);
                    }
                }
            }
        }
        let list_sizes = info
            .args_with_derivatives
            .iter()
            .filter(|a| {
                value_type(op, a).is_some_and(|(t, _)| {
                    matches!(
                        cxx_type(t),
                        Some(CxxType::TensorList | CxxType::OptTensorList)
                    )
                })
            })
            .cloned()
            .collect();
        Some(NodeSpec {
            name,
            op,
            info,
            fields,
            untranslated,
            list_sizes,
        })
    }
}

/// The `Default` information of `op` when an entry names it exactly.
pub fn exact_info(op: &OperatorRecord) -> Option<&DifferentiabilityInfo> {
    let d = op.differentiability.as_ref()?;
    if !d.exact {
        return None;
    }
    d.infos.iter().find(|i| i.dispatch_key == "Default")
}

/// The `Default` information `op` uses (its own or its functional variant's).
pub fn default_info(op: &OperatorRecord) -> Option<&DifferentiabilityInfo> {
    op.differentiability
        .as_ref()?
        .infos
        .iter()
        .find(|i| i.dispatch_key == "Default")
}

/// Every backward node of the model, by name (none for operators that decompose).
pub fn node_specs(ops: &[OperatorRecord]) -> BTreeMap<String, NodeSpec<'_>> {
    let mut out = BTreeMap::new();
    for op in ops
        .iter()
        .filter(|op| !super::variable_type::uses_decomposition(op))
    {
        if let Some(spec) = exact_info(op).and_then(|i| NodeSpec::new(op, i)) {
            out.entry(spec.name.clone()).or_insert(spec);
        }
    }
    out
}

/// The spec of the node `op` records (its own entry's or its functional variant's).
pub fn node_for<'m>(
    specs: &'m BTreeMap<String, NodeSpec<'m>>,
    op: &OperatorRecord,
) -> Option<&'m NodeSpec<'m>> {
    let info = default_info(op)?;
    specs.get(info.op.as_deref()?)
}

/// Whether an identifier `name` occurs in `text`.
pub fn uses_ident(text: &str, name: &str) -> bool {
    find_ident(text, name, 0).is_some()
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn find_ident(text: &str, name: &str, from: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut at = from;
    while let Some(p) = text[at..].find(name) {
        let s = at + p;
        let e = s + name.len();
        let before_ok = s == 0 || !is_word(b[s - 1]);
        let after_ok = e >= b.len() || !is_word(b[e]) || !is_word(name.as_bytes()[name.len() - 1]);
        if before_ok && after_ok {
            return Some(s);
        }
        at = s + 1;
    }
    None
}

/// The outputs (return indices) that get a gradient: torchgen's `gen_differentiable_outputs`.
pub fn differentiable_outputs(
    op: &OperatorRecord,
    info: Option<&DifferentiabilityInfo>,
) -> Vec<usize> {
    let mut outs: Vec<usize> = (0..op.returns.len())
        .filter(|&i| op.returns[i].schema_type.is_tensor_like())
        .collect();
    if let Some(od) = info.and_then(|i| i.output_differentiability.as_ref()) {
        outs.retain(|&i| od.get(i).copied().unwrap_or(false));
    }
    let single = info.is_some_and(|i| {
        i.derivatives
            .iter()
            .any(|f| f.grads_used.iter().any(|g| g == "grad"))
    });
    if single {
        outs.truncate(1);
    }
    outs
}

/// What a formula of a node evaluates to (or why it is not translated).
pub struct FormulaCode {
    pub vars: Vec<String>,
    pub text: String,
    pub code: Result<Translated, String>,
    /// The yaml's own `not_implemented("name")`.
    pub not_implemented: Option<String>,
}

/// `not_implemented("name")` as a whole formula.
fn yaml_not_implemented(text: &str) -> Option<String> {
    let inner = text
        .trim()
        .strip_prefix("not_implemented(\"")?
        .strip_suffix("\")")?;
    (!inner.contains('"')).then(|| inner.to_string())
}

/// Formulas the translator cannot take (a C++ lambda), each with the FunctionsManual call
/// written by hand in its place: `(operator, derivatives.yaml's formula, the replacement)`.
/// The replacement is translated like any formula; the node keeps the yaml's text in its
/// documentation.
pub const MANUAL_FORMULAS: &[(&str, &str, &str)] = &[(
    "roll",
    "grad.roll_symint(fmap(reverse_list_symint(shifts), [](c10::SymInt i){return -i;}), reverse_list(dims))",
    "roll_backward(grad, shifts, dims)",
)];

/// The formulas of a node, translated.
pub fn formula_codes(spec: &NodeSpec<'_>, tr: &Translation) -> Vec<FormulaCode> {
    let returns = FunctionSchema::parse(&spec.op.schema_source)
        .map(|s| formula_returns(spec.op, &s))
        .unwrap_or_default();
    spec.info
        .derivatives
        .iter()
        .filter(|f| f.kind == FormulaKind::Backward)
        .map(|f| {
            let text = f.text.trim().to_string();
            let not_implemented = yaml_not_implemented(&text);
            let missing: Vec<String> = f
                .saved_inputs
                .iter()
                .chain(&f.saved_outputs)
                .filter_map(|v| {
                    spec.untranslated
                        .get(&v.name)
                        .map(|w| format!("{}: {w}", v.name))
                })
                .collect();
            let code = if !missing.is_empty() {
                Err(format!(
                    "saved value not translated: {}",
                    missing.join("; ")
                ))
            } else {
                let env = backward_env(&tr.ops, &tr.manual, spec.op, spec.info, f, &returns);
                let source = MANUAL_FORMULAS
                    .iter()
                    .find(|(op, yaml, _)| *op == spec.op.name_with_overload && *yaml == text)
                    .map_or(text.as_str(), |(_, _, rust)| rust);
                translate(source, &env)
                    .map_err(|r| r.to_string())
                    .and_then(|t| check_result(&t, &f.var_names, spec).map(|_| t))
            };
            FormulaCode {
                vars: f.var_names.clone(),
                text,
                code,
                not_implemented,
            }
        })
        .collect()
}

/// Whether a formula's result fits the inputs it defines.
fn check_result(t: &Translated, vars: &[String], spec: &NodeSpec<'_>) -> Result<(), String> {
    let fits = |ty: &CxxType, var: &str| {
        let list = spec.list_sizes.iter().any(|l| l == var);
        match ty {
            CxxType::Tensor | CxxType::OptTensor => !list,
            CxxType::TensorList | CxxType::OptTensorList => list,
            _ => false,
        }
    };
    let ok = match (&t.ty, vars) {
        (ty, [v]) => fits(ty, v),
        (CxxType::Tuple(ts), vs) => {
            ts.len() == vs.len() && ts.iter().zip(vs).all(|(t, v)| fits(t, v))
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the formula's type {:?} does not fit the inputs {}",
            t.ty,
            vars.join(", ")
        ))
    }
}

/// The index of the `)` closing the `(` at `open`.
fn closing(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The top-level comma-separated items of `text`.
fn split_args(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut from = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    if !text[from..].trim().is_empty() {
        out.push(text[from..].trim());
    }
    out
}

/// Translated Rust as the writer's [`Expr`] (calls, `&`, `?`), so that long formulas are
/// laid out as rustfmt lays them out; anything else stays one atom.
pub fn rust_expr(text: &str) -> Expr {
    let text = text.trim();
    if let Some(rest) = text.strip_prefix('&') {
        if !rest.starts_with("mut ") {
            return Expr::Prefix("&".into(), Box::new(rust_expr(rest)));
        }
    }
    let Some(open) = text.find('(') else {
        return Expr::atom(text);
    };
    let callee = &text[..open];
    let simple = !callee.is_empty()
        && callee
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    let Some(close) = closing(text, open).filter(|_| simple) else {
        return Expr::atom(text);
    };
    let call = || {
        Expr::call(
            callee,
            split_args(&text[open + 1..close])
                .into_iter()
                .map(rust_expr)
                .collect(),
        )
    };
    match &text[close + 1..] {
        "" => call(),
        "?" => Expr::Try(Box::new(call())),
        _ => Expr::atom(text),
    }
}

/// `{lhs}[items]{tail}` laid out as rustfmt lays out an array: on one line when its items
/// fit `array_width` (60) and the line fits, else one item per line.
pub fn array_stmt(w: &mut Writer, lhs: &str, items: &[String], tail: &str) {
    let flat = items.join(", ");
    if flat.len() <= crate::codegen::writer::FN_CALL_WIDTH
        && w.indent() + lhs.len() + flat.len() + 2 + tail.len() <= crate::codegen::writer::MAX_WIDTH
    {
        w.line(format!("{lhs}[{flat}]{tail}"));
        return;
    }
    w.line(format!("{lhs}["));
    w.indented(|w| {
        for i in items {
            w.line(format!("{i},"));
        }
    });
    w.line(format!("]{tail}"));
}

/// `Some(x)` of a value of type `ty` for one input.
fn gradient_of(ty: &CxxType, value: &str) -> String {
    match ty {
        CxxType::Tensor => format!("Some({value})"),
        CxxType::TensorList => format!("{value}.into_iter().map(Some).collect()"),
        _ => value.to_string(),
    }
}

fn copy_fn(spec: &NodeSpec<'_>, var: &str) -> &'static str {
    if spec.list_sizes.iter().any(|l| l == var) {
        "copy_range_list"
    } else {
        "copy_range"
    }
}

fn emit_node(w: &mut Writer, spec: &NodeSpec<'_>, tr: &Translation, aten: &str) {
    let n = &spec.name;
    w.line(format!(
        "/// The backward of `{}` (derivatives.yaml: `{}`).",
        spec.op.doc(),
        spec.info.schema
    ));
    w.block(format!("pub struct {n} {{"), "}", |w| {
        w.line("pub base: NodeBase,");
        for f in &spec.fields {
            w.line(format!("pub {}: {},", f.ident, f.rust_type(aten)));
        }
        for l in &spec.list_sizes {
            w.line(format!("pub {l}_size_: usize,"));
        }
    });
    w.blank();
    let codes = formula_codes(spec, tr);
    w.block(format!("impl Node for {n} {{"), "}", |w| {
        w.block("fn name(&self) -> Cow<'static, str> {", "}", |w| {
            w.line(format!("Cow::Borrowed({n:?})"));
        });
        w.blank();
        w.block("fn base(&self) -> &NodeBase {", "}", |w| {
            w.line("&self.base");
        });
        w.blank();
        w.block(
            "fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList> {",
            "}",
            |w| emit_apply(w, spec, &codes),
        );
        let released: Vec<&SavedField> = spec
            .fields
            .iter()
            .filter(|f| f.storage != Storage::Plain)
            .collect();
        if !released.is_empty() {
            w.blank();
            w.block("fn release_variables(&self) {", "}", |w| {
                for f in released {
                    match f.storage {
                        Storage::Var | Storage::OptVar => {
                            w.line(format!("self.{}.reset_data();", f.ident));
                        }
                        _ => {
                            w.block(format!("for v in &self.{} {{", f.ident), "}", |w| {
                                w.line("v.reset_data();");
                            });
                        }
                    }
                }
            });
        }
    });
}

fn emit_apply(w: &mut Writer, spec: &NodeSpec<'_>, codes: &[FormulaCode]) {
    let saved_tensors: Vec<&SavedField> = spec
        .fields
        .iter()
        .filter(|f| f.storage != Storage::Plain)
        .collect();
    if !saved_tensors.is_empty() {
        w.line("let this: Arc<dyn Node> = self.clone();");
    }
    w.line("let mut gen = IndexRangeGenerator::new();");
    for a in &spec.info.args_with_derivatives {
        let size = if spec.list_sizes.contains(a) {
            format!("self.{a}_size_")
        } else {
            "1".into()
        };
        w.line(format!("let {a}_ix = gen.range({size});"));
    }
    w.line("let mut grad_inputs: VariableList = vec![None; gen.size()];");
    w.line("let any_grad_defined = any_variable_defined(&grads);");
    for f in saved_tensors {
        let unpack = match f.storage {
            Storage::Var => format!("self.{}.unpack(&this)?", f.ident),
            Storage::OptVar => format!("self.{}.unpack_opt(&this)?", f.ident),
            Storage::VarList => format!("unpack_list(&self.{}, &this)?", f.ident),
            _ => format!("unpack_opt_list(&self.{}, &this)?", f.ident),
        };
        w.stmt(&format!("let {} = ", f.ident), &Expr::atom(unpack), ";");
    }
    let should = |v: &str| format!("self.base.should_compute_output({v}_ix)");
    for c in codes {
        let multi = c.vars.len() > 1 || uses_ident(&c.text, "grad_input_mask");
        let cond = if multi {
            let mask: Vec<String> = c.vars.iter().map(|v| should(v)).collect();
            array_stmt(w, "let grad_input_mask = ", &mask, ";");
            "grad_input_mask.contains(&true)".to_string()
        } else {
            should(&c.vars[0])
        };
        w.block(format!("if {cond} && any_grad_defined {{"), "}", |w| {
            if let Some(name) = &c.not_implemented {
                w.line(format!("return Err(not_implemented({name:?}));"));
                return;
            }
            let t = match &c.code {
                Ok(t) => t,
                Err(why) => {
                    let msg = format!(
                        "the derivative for '{}' is not implemented: the formula `{}` for `{}` is not translated to Rust ({why})",
                        spec.info.name,
                        c.text,
                        c.vars.join(", ")
                    );
                    w.stmt(
                        "return Err(",
                        &Expr::call_atoms("ratten_core::Error::not_implemented", &[format!("{msg:?}")]),
                        ");",
                    );
                    return;
                }
            };
            if c.text.contains("grad.defined()") {
                w.line("let grad = grads[0].clone();");
            } else if uses_ident(&c.text, "grad") {
                w.line("let grad = defined(&grads[0])?;");
            }
            for (k, g) in spec.info.available_named_gradients.iter().enumerate() {
                if uses_ident(&c.text, g) {
                    w.line(format!("let {g} = grads[{k}].clone();"));
                }
            }
            match (&t.ty, c.vars.as_slice()) {
                (CxxType::Tuple(tys), vars) => {
                    let names: Vec<String> = vars.iter().map(|v| format!("{v}_grad")).collect();
                    w.stmt(
                        &format!("let ({}) = ", names.join(", ")),
                        &rust_expr(&t.rust),
                        ";",
                    );
                    for (k, (v, ty)) in vars.iter().zip(tys).enumerate() {
                        w.block(format!("if grad_input_mask[{k}] {{"), "}", |w| {
                            let value = gradient_of(ty, &names[k]);
                            w.stmt(
                                "",
                                &Expr::call_atoms(
                                    copy_fn(spec, v),
                                    &["&mut grad_inputs".to_string(), format!("{v}_ix"), value],
                                ),
                                ";",
                            );
                        });
                    }
                }
                (ty, [v]) => {
                    w.stmt("let grad_result = ", &rust_expr(&t.rust), ";");
                    w.stmt(
                        "",
                        &Expr::call_atoms(
                            copy_fn(spec, v),
                            &[
                                "&mut grad_inputs".to_string(),
                                format!("{v}_ix"),
                                gradient_of(ty, "grad_result"),
                            ],
                        ),
                        ";",
                    );
                }
                _ => {}
            }
        });
    }
    w.line("Ok(grad_inputs)");
}

/// `functions/`: the backward nodes by shard of their operators.
pub fn emit(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let tr = Translation::of(cx);
    let specs = node_specs(&cx.model.ops);
    let by_op: BTreeMap<usize, &NodeSpec<'_>> = specs.values().map(|s| (s.op.index, s)).collect();
    let ops: Vec<&OperatorRecord> = cx
        .model
        .ops
        .iter()
        .filter(|o| by_op.contains_key(&o.index))
        .collect();
    let by_shard = shards(ops.iter().copied());
    let mut files = Vec::new();
    for (key, ops) in &by_shard {
        let mut w = Writer::new();
        w.line(header(
            cx.opts,
            &format!("The backward nodes of the operators in shard `{key}`: see `functions`."),
        ));
        w.line(super::imports(cx.opts));
        for op in ops {
            w.blank();
            emit_node(&mut w, by_op[&op.index], &tr, &cx.opts.aten);
        }
        files.push(GeneratedFile::new(
            format!("functions/{key}.rs"),
            w.finish(),
        ));
    }
    let keys: Vec<String> = by_shard.keys().cloned().collect();
    let head = header(
        cx.opts,
        &format!(
            "The backward nodes (PyTorch's `torch::autograd::generated`, {} nodes): one struct per\n\
             //! derivatives.yaml entry with a differentiable input, named as torchgen names it\n\
             //! (`MulBackward0`), holding the values its formulas need.",
            specs.len()
        ),
    );
    files.insert(
        0,
        GeneratedFile::new("functions/mod.rs", shard_mod(&head, &keys, "")),
    );
    Ok(files)
}

/// One formula of the model's nodes that is not translated: node, inputs, formula, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untranslated {
    pub node: String,
    pub vars: Vec<String>,
    pub formula: String,
    pub why: String,
}

/// The formulas of every node: how many are translated, and those that are not (the yaml's
/// own `not_implemented` entries count as translated).
pub fn coverage(model: &Model, tr: &Translation) -> (usize, Vec<Untranslated>) {
    let specs = node_specs(&model.ops);
    let mut translated = 0;
    let mut missing = Vec::new();
    for spec in specs.values() {
        for c in formula_codes(spec, tr) {
            match (&c.code, &c.not_implemented) {
                (_, Some(_)) | (Ok(_), None) => translated += 1,
                (Err(why), None) => missing.push(Untranslated {
                    node: spec.name.clone(),
                    vars: c.vars.clone(),
                    formula: c.text.clone(),
                    why: why.clone(),
                }),
            }
        }
    }
    (translated, missing)
}
