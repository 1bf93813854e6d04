//! Which backward formulas of a derivatives.yaml the translator takes: each formula of each
//! entry matched to a declared operator, translated in the environment a backward node's
//! `apply` gives it ([`backward_env`]), with the refusals grouped by reason. The emitters use
//! [`backward_env`] and [`saved_value_type`] / [`saved_value_forward`] for the same bindings.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ratten_schema::derivatives::{return_names, Derivatives, Formula, FormulaKind, SavedValue};

use super::formula::{translate, Binding, Env, OpIndex, Refusal, Translated};
use super::manual::ManualSignatures;
use super::types::CxxType;
use crate::model::autograd::DifferentiabilityInfo;
use crate::model::names::ident;
use crate::model::{Model, OperatorRecord};

/// The type of a saved value computed from an input or output of type `of` (torchgen's
/// saved-expression replacements: `self.sym_sizes()` saved as `self_sym_sizes`), or of the
/// whole value. `None`: no Rust form.
pub fn saved_value_type(v: &SavedValue, of: &CxxType) -> Option<CxxType> {
    if v.name == v.of {
        return Some(of.clone());
    }
    let after = v.expr.strip_prefix(v.of.as_str()).unwrap_or("");
    Some(match after {
        ".sym_sizes()" | ".sym_strides()" => CxxType::IntList,
        "->sym_sizes()" => CxxType::OptIntList,
        ".options()" => CxxType::TensorOptions,
        ".numel()" | ".sym_numel()" | ".dim()" => CxxType::Int,
        ".scalar_type()" => CxxType::ScalarType,
        ".layout()" => CxxType::Layout,
        ".is_conj()" => CxxType::Bool,
        a if a.starts_with(".sym_size(") => CxxType::Int,
        _ if v.expr.starts_with("zeros_like(") => {
            CxxType::Tuple(vec![CxxType::IntList, CxxType::TensorOptions])
        }
        _ if v.expr.starts_with("to_args_sizes") => CxxType::IntListList,
        _ if v.expr.starts_with("to_args_scalartypes(") => CxxType::ScalarTypeList,
        _ if v.expr.starts_with("TensorGeometry(") => CxxType::TensorGeometry,
        _ => return None,
    })
}

/// The forward's Rust computing a saved value from its input or output, whose borrowed form
/// (`&Tensor`, `&[Tensor]`) is `input`: the owned value of [`saved_value_type`]'s type.
pub fn saved_value_forward(v: &SavedValue, input: &str) -> Option<String> {
    let after = v.expr.strip_prefix(v.of.as_str()).unwrap_or("");
    let options =
        |t: &str| format!("TensorOptions::new().dtype({t}.scalar_type()).device({t}.device())");
    Some(match after {
        ".sym_sizes()" => format!("{input}.sizes().to_vec()"),
        ".sym_strides()" => format!("{input}.strides().to_vec()"),
        "->sym_sizes()" => format!("{input}.map(|t| t.sizes().to_vec())"),
        ".options()" => options(input),
        ".numel()" | ".sym_numel()" => format!("{input}.numel()"),
        ".dim()" => format!("{input}.dim() as i64"),
        ".scalar_type()" => format!("{input}.scalar_type()"),
        ".is_conj()" => "false".into(),
        // Every ratten tensor is strided.
        ".layout()" => "ratten_aten::native::Layout::Strided".into(),
        a if a.starts_with(".sym_size(") => {
            let d = a.trim_start_matches(".sym_size(").trim_end_matches(')');
            format!("{input}.size({d})?")
        }
        _ if v.expr.starts_with("zeros_like(") => {
            format!("({input}.sizes().to_vec(), {})", options(input))
        }
        _ if v.expr.starts_with("to_args_sizes") => {
            format!("{input}.iter().map(|t| t.sizes().to_vec()).collect()")
        }
        _ if v.expr.starts_with("to_args_scalartypes(") => {
            format!("{input}.iter().map(|t| t.scalar_type()).collect()")
        }
        _ if v.expr.starts_with("TensorGeometry(") => format!("TensorGeometry::new({input})"),
        _ => return None,
    })
}

/// The environment of a backward formula inside a generated node's `apply`, as the contract
/// lays it out: tensor inputs and outputs unpacked into locals named by their Rust identifier
/// (`self_`, `result`), other inputs and saved values as fields (`self.dim`,
/// `self.self_sym_sizes`), `grad` a defined `&Tensor` (an `Option<Tensor>` local when the
/// formula tests `grad.defined()`), `grads` the `VariableList`, named gradients (`grad_min`)
/// `Option<Tensor>` locals, `grad_input_mask` a `[bool; N]` local.
pub fn backward_env<'a>(
    ops: &'a OpIndex,
    manual: &'a ManualSignatures,
    op: &OperatorRecord,
    info: &DifferentiabilityInfo,
    formula: &Formula,
    returns: &[(String, CxxType)],
) -> Env<'a> {
    let mut env = Env::new(ops, manual);
    let mut types: BTreeMap<String, CxxType> = BTreeMap::new();
    for a in &op.args {
        let Some(ty) = CxxType::of_schema(&a.schema_type) else {
            continue;
        };
        let b = match ty {
            CxxType::Tensor | CxxType::OptTensor | CxxType::TensorList | CxxType::OptTensorList => {
                Binding::place(a.ident.clone(), ty.clone())
            }
            _ => Binding::place(format!("self.{}", a.ident), ty.clone()),
        };
        env.bind(&a.name, b);
        types.insert(a.name.clone(), ty);
    }
    for (name, ty) in returns {
        env.bind(name, Binding::place(ident(name), ty.clone()));
        types.insert(name.clone(), ty.clone());
    }
    if formula.text.contains("grad.defined()") {
        env.bind("grad", Binding::place("grad", CxxType::OptTensor));
    } else {
        env.bind("grad", Binding::borrowed("grad", CxxType::Tensor));
    }
    env.bind("grads", Binding::place("grads", CxxType::OptTensorList));
    for g in &info.available_named_gradients {
        env.bind(g, Binding::place(g.clone(), CxxType::OptTensor));
    }
    env.bind(
        "grad_input_mask",
        Binding::place("grad_input_mask", CxxType::BoolList),
    );
    for v in formula.saved_inputs.iter().chain(&formula.saved_outputs) {
        if v.name == v.of {
            continue;
        }
        let Some(ty) = types.get(&v.of).and_then(|of| saved_value_type(v, of)) else {
            continue;
        };
        env.bind(&v.name, Binding::place(format!("self.{}", v.name), ty));
        // The saved expressions come from derivatives.yaml's own formulas and parse.
        let _ = env.bind_saved(&v.expr, &v.name);
    }
    env
}

/// The returns of `op` as the formulas name them, with their types.
pub fn formula_returns(
    op: &OperatorRecord,
    schema: &ratten_schema::FunctionSchema,
) -> Vec<(String, CxxType)> {
    return_names(schema)
        .into_iter()
        .zip(&op.returns)
        .filter_map(|(n, r)| Some((n, CxxType::of_schema(&r.schema_type)?)))
        .collect()
}

/// One backward formula and what became of it.
#[derive(Debug, Clone)]
pub struct FormulaResult {
    /// The entry's `name:` schema.
    pub entry: String,
    /// The inputs it defines (`self, other`).
    pub vars: Vec<String>,
    pub text: String,
    pub result: Result<Translated, Refusal>,
}

/// The translation of every backward formula of a derivatives file.
#[derive(Debug, Clone, Default)]
pub struct Coverage {
    /// The formulas of the `Default` dispatch key of every entry naming a declared operator.
    pub results: Vec<FormulaResult>,
    /// `(entry, dispatch key)` of the blocks of other keys (`AutogradNestedTensor`): ratten
    /// has no tensors of those backends, so no node is generated for them.
    pub other_keys: Vec<(String, String)>,
}

impl Coverage {
    pub fn translated(&self) -> usize {
        self.results.iter().filter(|r| r.result.is_ok()).count()
    }

    pub fn refused(&self) -> impl Iterator<Item = (&FormulaResult, &Refusal)> {
        self.results
            .iter()
            .filter_map(|r| r.result.as_ref().err().map(|e| (r, e)))
    }

    /// Refusals whose reason is a FunctionsManual helper missing from the manual file.
    pub fn missing_helpers(&self) -> usize {
        self.refused()
            .filter(|(_, e)| matches!(e, Refusal::MissingHelper(_)))
            .count()
    }

    /// The refusals by [`Refusal::group`], most frequent first.
    pub fn groups(&self) -> Vec<(String, usize)> {
        let mut g: BTreeMap<String, usize> = BTreeMap::new();
        for (_, e) in self.refused() {
            *g.entry(e.group()).or_default() += 1;
        }
        let mut v: Vec<_> = g.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }

    /// A report: the counts, the reasons grouped, and each refused formula.
    pub fn summary(&self) -> String {
        let total = self.results.len();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "backward formulas: {total}, translated: {}, refused: {} (of which a helper not in functions_manual: {})",
            self.translated(),
            total - self.translated(),
            self.missing_helpers()
        );
        if !self.other_keys.is_empty() {
            let _ = writeln!(
                s,
                "  (not counted: {} formula blocks of other dispatch keys)",
                self.other_keys.len()
            );
        }
        for (g, n) in self.groups() {
            let _ = writeln!(s, "  {n:4}  {g}");
        }
        for (r, e) in self.refused() {
            let _ = writeln!(s, "  {} [{}]: {e}", r.entry, r.vars.join(", "));
        }
        s
    }
}

/// Translates every backward formula of `d` whose entry names an operator of `model` (the
/// model built with `d`), in the environment of its backward node.
pub fn coverage(model: &Model, d: &Derivatives, manual: &ManualSignatures) -> Coverage {
    let ops = OpIndex::new(model);
    let mut out = Coverage::default();
    for op in &model.ops {
        let Some(diff) = op.differentiability.as_ref().filter(|x| x.exact) else {
            continue;
        };
        for info in &diff.infos {
            let entry = &d.entries[info.entry];
            if info.dispatch_key != "Default" {
                out.other_keys
                    .push((entry.name.clone(), info.dispatch_key.clone()));
                continue;
            }
            let returns = formula_returns(op, &entry.schema);
            for f in info
                .derivatives
                .iter()
                .filter(|f| f.kind == FormulaKind::Backward)
            {
                let env = backward_env(&ops, manual, op, info, f, &returns);
                out.results.push(FormulaResult {
                    entry: entry.name.clone(),
                    vars: f.var_names.clone(),
                    text: f.text.clone(),
                    result: translate(&f.text, &env),
                });
            }
        }
    }
    out
}
