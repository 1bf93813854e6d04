//! Differentiability information from derivatives.yaml (torchgen's `api/autograd.py`:
//! `DifferentiabilityInfo` and `match_differentiability_info`). Nothing is generated from it
//! yet; the autograd emitters (backward nodes, Autograd and ADInplaceOrView kernels) read it.

use std::collections::{BTreeSet, HashMap};

use ratten_schema::derivatives::{
    Derivatives, Formula, FormulaKind, OutputDifferentiability, SavedValue,
};
use ratten_schema::native::{signature, NativeFunction, NativeFunctions, SchemaKind};
use ratten_schema::FunctionSchema;

/// What derivatives.yaml says of one function for one dispatch key.
#[derive(Debug, Clone, PartialEq)]
pub struct DifferentiabilityInfo {
    /// The entry's index in `Derivatives::entries`.
    pub entry: usize,
    /// The function name the entry gives (`add` of `add.Tensor(...)`).
    pub name: String,
    /// The entry's `name:` schema.
    pub schema: String,
    /// `Default`, or the Autograd key of a `dispatch:` block.
    pub dispatch_key: String,
    /// The backward node (`AddBackward0`); `None` when no input has a derivative.
    pub op: Option<String>,
    /// The backward formulas, one per group of inputs.
    pub derivatives: Vec<Formula>,
    /// The forward-mode formulas (`result: ...`).
    pub forward_derivatives: Vec<Formula>,
    /// Inputs whose formula is `non_differentiable`.
    pub non_differentiable_arg_names: Vec<String>,
    /// The inputs with a backward formula, in schema order.
    pub args_with_derivatives: Vec<String>,
    /// The values the backward node saves from the inputs / outputs (union over formulas).
    pub all_saved_inputs: Vec<SavedValue>,
    pub all_saved_outputs: Vec<SavedValue>,
    /// `grad_<name>` of each named, differentiable tensor return.
    pub available_named_gradients: Vec<String>,
    /// The named gradients some formula uses.
    pub used_named_gradients: BTreeSet<String>,
    /// `output_differentiability` as written (a condition counts as `true`).
    pub output_differentiability: Option<Vec<bool>>,
    /// The condition of a conditional `output_differentiability`.
    pub output_differentiability_conditions: Option<Vec<String>>,
}

impl DifferentiabilityInfo {
    /// Whether some input has a derivative (a backward node is generated).
    pub fn has_derivatives(&self) -> bool {
        !self.args_with_derivatives.is_empty()
    }
}

/// How a function got its differentiability information.
#[derive(Debug, Clone, PartialEq)]
pub struct Differentiability {
    /// Whether an entry names this very function; otherwise the information is its
    /// functional variant's (`mul_` and `mul.out` use `mul`'s), or for a generated functional
    /// overload its mutable variant's.
    pub exact: bool,
    /// One per dispatch key of the entry (`Default` first as written).
    pub infos: Vec<DifferentiabilityInfo>,
}

/// torchgen's `signature(strip_default=True)` as text: the key variants share.
fn signature_without_defaults(s: &FunctionSchema) -> Option<String> {
    let mut sig = signature(s, false).ok()?;
    for a in &mut sig.arguments {
        a.default = None;
        a.default_text = None;
    }
    Some(sig.to_source_string())
}

fn union(into: &mut Vec<SavedValue>, from: &[SavedValue]) {
    for v in from {
        if !into.iter().any(|x| x.name == v.name) {
            into.push(v.clone());
        }
    }
}

/// The infos of entry `e`, one per dispatch key.
fn infos_of(d: &Derivatives, e: usize) -> Vec<DifferentiabilityInfo> {
    let entry = &d.entries[e];
    let (output_differentiability, conditions) = match &entry.output_differentiability {
        None => (None, None),
        Some(l) => {
            let conds: Vec<String> = l
                .iter()
                .filter_map(|x| match x {
                    OutputDifferentiability::Condition(c) => Some(c.clone()),
                    OutputDifferentiability::Bool(_) => None,
                })
                .collect();
            let bools = l
                .iter()
                .map(|x| !matches!(x, OutputDifferentiability::Bool(false)))
                .collect();
            (Some(bools), (!conds.is_empty()).then_some(conds))
        }
    };
    let returns = &entry.schema.returns;
    let differentiable = |i: usize| {
        output_differentiability
            .as_ref()
            .is_none_or(|l: &Vec<bool>| l.get(i).copied().unwrap_or(false))
    };
    let available_named_gradients: Vec<String> = returns
        .iter()
        .enumerate()
        .filter(|(i, r)| differentiable(*i) && r.ty.is_tensor_like())
        .filter_map(|(_, r)| r.name.as_ref().map(|n| format!("grad_{n}")))
        .collect();
    entry
        .definitions
        .iter()
        .map(|defs| {
            let of_kind = |k: FormulaKind| -> Vec<Formula> {
                defs.formulas
                    .iter()
                    .filter(|f| f.kind == k)
                    .cloned()
                    .collect()
            };
            let derivatives = of_kind(FormulaKind::Backward);
            let with: BTreeSet<&str> = derivatives
                .iter()
                .flat_map(|f| f.var_names.iter().map(String::as_str))
                .collect();
            let mut all_saved_inputs = Vec::new();
            let mut all_saved_outputs = Vec::new();
            let mut used = BTreeSet::new();
            for f in &derivatives {
                union(&mut all_saved_inputs, &f.saved_inputs);
                union(&mut all_saved_outputs, &f.saved_outputs);
                used.extend(
                    f.grads_used
                        .iter()
                        .filter(|g| available_named_gradients.contains(g))
                        .cloned(),
                );
            }
            DifferentiabilityInfo {
                entry: e,
                name: entry.defn_name().to_string(),
                schema: entry.name.clone(),
                dispatch_key: defs.dispatch_key.clone(),
                op: defs.op.clone(),
                non_differentiable_arg_names: of_kind(FormulaKind::NonDifferentiable)
                    .into_iter()
                    .flat_map(|f| f.var_names)
                    .collect(),
                forward_derivatives: of_kind(FormulaKind::Forward),
                args_with_derivatives: entry
                    .schema
                    .arguments
                    .iter()
                    .filter(|a| with.contains(a.name.as_str()))
                    .map(|a| a.name.clone())
                    .collect(),
                derivatives,
                all_saved_inputs,
                all_saved_outputs,
                available_named_gradients: available_named_gradients.clone(),
                used_named_gradients: used,
                output_differentiability: output_differentiability.clone(),
                output_differentiability_conditions: conditions.clone(),
            }
        })
        .collect()
}

/// torchgen's `match_differentiability_info`: per function of `nf`, its information from
/// `d`. An entry naming the function's schema matches exactly; otherwise a function uses its
/// functional variant's entry (same signature without defaults), and a generated functional
/// overload its mutable variant's. Generated out= overloads get none.
pub fn match_differentiability(
    nf: &NativeFunctions,
    d: &Derivatives,
) -> Vec<Option<Differentiability>> {
    let matches = d.match_native(nf);
    let mut exact: HashMap<usize, usize> = HashMap::new();
    let mut functional_by_sig: HashMap<String, usize> = HashMap::new();
    let mut non_functional_by_sig: HashMap<String, usize> = HashMap::new();
    for m in &matches.matched {
        exact.insert(m.function, m.entry);
        let f = &nf.functions[m.function];
        if let Some(sig) = signature_without_defaults(&f.func) {
            let by_sig = if f.kind() == SchemaKind::Functional {
                &mut functional_by_sig
            } else {
                &mut non_functional_by_sig
            };
            by_sig.entry(sig).or_insert(m.entry);
        }
    }
    let find = |i: usize, f: &NativeFunction| -> Option<(usize, bool)> {
        if f.is_generated() && f.kind() == SchemaKind::Out {
            return None;
        }
        if let Some(&e) = exact.get(&i) {
            return Some((e, true));
        }
        let sig = signature_without_defaults(&f.func)?;
        if let Some(&e) = functional_by_sig.get(&sig) {
            return Some((e, false));
        }
        if f.is_generated() {
            return non_functional_by_sig.get(&sig).map(|&e| (e, false));
        }
        None
    };
    nf.functions
        .iter()
        .enumerate()
        .map(|(i, f)| {
            find(i, f).map(|(e, exact)| Differentiability {
                exact,
                infos: infos_of(d, e),
            })
        })
        .collect()
}
