//! Forward-mode AD in the Autograd kernels: derivatives.yaml's `result:` formulas, processed
//! as torchgen processes them (load_derivatives.py's `postprocess_forward_derivatives` for
//! `auto_element_wise` / `auto_linear`, api/autograd.py's rewriting for in-place operators)
//! and emitted after the call as gen_variable_type.py's `FW_DERIVATIVE_*` templates do: the
//! tangents of the inputs (zeros for an input without one), the formula, the tangent set on
//! each output. An operator with a backward formula and no usable forward one refuses inputs
//! with tangents (torch's "Trying to use forward AD with ... that does not support it").
//!
//! Note [In-place forward formulas]: torchgen makes an in-place operator's formula update the
//! tangent in place (`self_t_raw.copy_(formula)`, `self_t.mul_(..)`). ratten computes the new
//! tangent out of place and hands it to `set_fw_grad(.., is_inplace_op = true)`, which copies
//! it into the existing tangent (so views sharing it see the change) or, for a view without
//! one, into a new tangent of its base. Formulas written for the in-place operator itself
//! (`self_t.zero_()`, `self_t.copy_(elu_backward(..))`) are rewritten to their out-of-place
//! value accordingly ([`out_of_place`]).

use ratten_schema::derivatives::FormulaKind;
use ratten_schema::native::SchemaKind;
use ratten_schema::FunctionSchema;

use super::formula::{translate, Binding, Env, Translated};
use super::functions::{cxx_type, output_names, uses_ident, Translation};
use super::types::CxxType;
use crate::codegen::writer::Writer;
use crate::model::autograd::DifferentiabilityInfo;
use crate::model::OperatorRecord;

/// One processed forward formula.
#[derive(Debug, Clone, PartialEq)]
pub struct ForwardDerivative {
    /// The outputs whose tangents it gives.
    pub var_names: Vec<String>,
    /// The C++ formula after processing.
    pub formula: String,
    /// Whether it reads `self` before an in-place call changed it (`original_self_p`).
    pub original_self: bool,
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Replaces the identifier `name` (whole words only, torchgen's `IDENT_REGEX`) by `with`.
pub fn replace_ident(text: &str, name: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut prev: Option<char> = None;
    while let Some(p) = rest.find(name) {
        let before = rest[..p].chars().next_back().or(prev);
        let after = rest[p + name.len()..].chars().next();
        out.push_str(&rest[..p]);
        if before.is_some_and(is_word) || after.is_some_and(is_word) {
            out.push_str(name);
        } else {
            out.push_str(with);
        }
        prev = name.chars().next_back();
        rest = &rest[p + name.len()..];
    }
    out.push_str(rest);
    out
}

/// The text inside the parentheses of `text`, which must be `prefix(...)` as a whole.
fn call_args<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let inner = text.strip_prefix(prefix)?.strip_suffix(')')?;
    // The parentheses must match at the end: `f(a) + g(b)` is no single call.
    let mut depth = 1i32;
    for c in inner.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return None;
                }
            }
            _ => {}
        }
    }
    Some(inner)
}

/// The out-of-place value of a formula written to update `self_t` in place
/// (Note [In-place forward formulas]).
fn out_of_place(formula: &str) -> String {
    let f = formula.trim();
    if let Some(inner) = call_args(f, "self_t.copy_(") {
        return inner.trim().to_string();
    }
    if f == "self_t.zero_()" {
        return "at::zeros_like(self_t)".into();
    }
    if let Some(inner) = call_args(f, "self_t.fill_(") {
        return format!("at::zeros_like(self_t) + {}", inner.trim());
    }
    if let Some(inner) = call_args(f, "at::_index_put_impl_(self_t, ") {
        // `(indices, values_t, accumulate, unsafe)`: the functional `index_put` has no `unsafe`.
        if let Some((head, _unsafe)) = inner.rsplit_once(',') {
            return format!("self_t.index_put({head})");
        }
    }
    if let Some(rest) = f.strip_prefix("self_t.") {
        if let Some(open) = rest.find('(') {
            let method = &rest[..open];
            if let Some(base) = method.strip_suffix('_') {
                if !base.is_empty()
                    && base.chars().all(is_word)
                    && call_args(f, &format!("self_t.{method}(")).is_some()
                {
                    return format!("self_t.{base}{}", &rest[open..]);
                }
            }
        }
    }
    f.replace(".masked_fill_(", ".masked_fill(")
}

/// `? *name` -> `? name.value()` (dereferencing an optional in a conditional).
fn deref_optionals(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(p) = rest.find("? *") {
        out.push_str(&rest[..p + 2]);
        let after = &rest[p + 3..];
        let end = after.find(|c: char| !is_word(c)).unwrap_or(after.len());
        out.push_str(&after[..end]);
        out.push_str(".value()");
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// `auto_element_wise`: the backward formula with `grad` replaced by the tangent and the inputs
/// by their primals, conjugated (`postprocess_forward_derivatives`).
fn auto_element_wise(info: &DifferentiabilityInfo) -> Result<String, String> {
    let backward = info
        .derivatives
        .iter()
        .find(|f| f.kind == FormulaKind::Backward)
        .ok_or("auto_element_wise without a backward formula")?;
    let [input] = info.args_with_derivatives.as_slice() else {
        return Err("auto_element_wise needs a single differentiable input".into());
    };
    let mut f = replace_ident(&backward.text, "grad", &format!("{input}_t.conj()"));
    for a in &info.args_with_derivatives {
        f = replace_ident(&f, a, &format!("{a}_p"));
    }
    Ok(format!("({f}).conj()"))
}

/// `auto_linear`: the operator applied to the tangents of its differentiable inputs, as a
/// function call and as a method call (the translator takes whichever the operator has).
fn auto_linear(info: &DifferentiabilityInfo) -> Result<Vec<String>, String> {
    let schema = FunctionSchema::parse(&info.schema).map_err(|e| e.to_string())?;
    let args: Vec<String> = schema
        .arguments
        .iter()
        .map(|a| {
            if info.args_with_derivatives.contains(&a.name) {
                format!("{}_t", a.name)
            } else {
                a.name.clone()
            }
        })
        .collect();
    let name = &info.name;
    let mut forms = vec![format!("at::{name}({})", args.join(", "))];
    if let Some((first, rest)) = args.split_first() {
        forms.push(format!("{first}.{name}({})", rest.join(", ")));
    }
    Ok(forms)
}

/// The processed forward formulas of `op` (its `info`, `exact` when the entry names `op`
/// itself): each candidate text in order of preference.
pub fn forward_derivatives(
    op: &OperatorRecord,
    info: &DifferentiabilityInfo,
    exact: bool,
) -> Result<Vec<(ForwardDerivative, Vec<String>)>, String> {
    let mut out = Vec::new();
    for f in &info.forward_derivatives {
        let candidates = match f.text.trim() {
            "auto_element_wise" => vec![auto_element_wise(info)?],
            "auto_linear" => auto_linear(info)?,
            t => vec![t.to_string()],
        };
        let mut processed = Vec::new();
        for c in candidates {
            // `cond ? *opt : x`: the translator reads optionals with `.value()`.
            let mut c = deref_optionals(&c);
            if op.kind == SchemaKind::Inplace {
                if uses_ident(&c, "self_p") {
                    if exact {
                        return Err(format!(
                            "the formula for \"{}\" uses the original value of self that is being modified inplace",
                            op.name_with_overload
                        ));
                    }
                    c = replace_ident(&c, "self_p", "original_self_p");
                    c = replace_ident(&c, "self_t", "original_self_t");
                }
                c = replace_ident(&c, "result", "self_p");
            }
            processed.push(out_of_place(&c));
        }
        let original_self = processed.iter().any(|c| uses_ident(c, "original_self_p"));
        out.push((
            ForwardDerivative {
                var_names: f.var_names.clone(),
                formula: processed[0].clone(),
                original_self,
            },
            processed,
        ));
    }
    Ok(out)
}

/// The tensor inputs of `op` that may have a tangent (`differentiable_inputs`).
pub fn differentiable_inputs<'a>(
    op: &'a OperatorRecord,
    info: Option<&DifferentiabilityInfo>,
) -> Vec<&'a crate::model::arguments::ArgumentInfo> {
    op.args
        .iter()
        .filter(|a| {
            matches!(
                cxx_type(&a.schema_type),
                Some(
                    CxxType::Tensor
                        | CxxType::OptTensor
                        | CxxType::TensorList
                        | CxxType::OptTensorList
                )
            ) && !a
                .alias
                .as_ref()
                .is_some_and(|x| x.is_write && op.kind == SchemaKind::Out)
                && info.is_none_or(|i| !i.non_differentiable_arg_names.contains(&a.name))
        })
        .collect()
}

/// `any_fw_grad_defined(..)` over `args` (Rust text), `false` when there are none.
pub fn any_fw_grad_cond(args: &[&crate::model::arguments::ArgumentInfo]) -> String {
    let mut singles = Vec::new();
    let mut parts = Vec::new();
    for a in args {
        match cxx_type(&a.schema_type) {
            Some(CxxType::Tensor) => singles.push(format!("Some({})", a.ident)),
            Some(CxxType::OptTensor) => singles.push(a.ident.clone()),
            Some(CxxType::TensorList) => {
                parts.push(format!("any_fw_grad_defined_list({})", a.ident))
            }
            Some(CxxType::OptTensorList) => {
                parts.push(format!("any_fw_grad_defined_opt_list({})", a.ident))
            }
            _ => {}
        }
    }
    if !singles.is_empty() {
        parts.insert(0, format!("any_fw_grad_defined(&[{}])", singles.join(", ")));
    }
    if parts.is_empty() {
        "false".into()
    } else {
        parts.join(" || ")
    }
}

/// One formula translated for the kernel of `op`: the Rust value and the tangents it reads.
pub struct ForwardCode {
    pub vars: Vec<String>,
    pub translated: Translated,
    /// `(local, input)`: `let self_t = fw_grad_or_zeros(self_)?;`.
    pub tangents: Vec<(String, String, bool)>,
    pub original_self: bool,
}

/// The environment of a forward formula in the kernel of `op` whose outputs are at `outputs`
/// (name -> place).
fn forward_formula_env<'t>(
    tr: &'t Translation,
    op: &OperatorRecord,
    outputs: &[(String, String)],
    formula: &str,
) -> (Env<'t>, Vec<(String, String, bool)>) {
    let mut env = tr.forward_env(op, outputs);
    // Qualified: a kernel of the same name (`convolution_backward`) is in scope.
    env.manual_path = format!("{}::", tr.manual_module);
    let mut tangents = Vec::new();
    for a in &op.args {
        let Some(ty) = cxx_type(&a.schema_type) else {
            continue;
        };
        if !matches!(ty, CxxType::Tensor | CxxType::OptTensor) {
            continue;
        }
        env.bind(
            &format!("{}_p", a.name),
            Binding::borrowed(a.ident.clone(), ty.clone()),
        );
        let local = format!("{}_t", a.name);
        let used = uses_ident(formula, &local)
            || (a.name == "self" && uses_ident(formula, "original_self_t"));
        if used {
            env.bind(&local, Binding::place(local.clone(), ty.clone()));
            if a.name == "self" {
                env.bind("original_self_t", Binding::place(local.clone(), ty.clone()));
            }
            tangents.push((local, a.ident.clone(), ty == CxxType::OptTensor));
        }
    }
    env.bind(
        "original_self_p",
        Binding::borrowed("original_self_p", CxxType::Tensor),
    );
    (env, tangents)
}

/// Translates the processed formulas of `op`; the first refusal is returned as an error.
pub fn forward_codes(
    tr: &Translation,
    op: &OperatorRecord,
    fws: &[(ForwardDerivative, Vec<String>)],
    outputs: &[(String, String)],
) -> Result<Vec<ForwardCode>, String> {
    let names = output_names(op);
    let mut codes = Vec::new();
    for (fw, candidates) in fws {
        let mut last_err = String::new();
        let mut done = None;
        for c in candidates {
            let (env, tangents) = forward_formula_env(tr, op, outputs, c);
            match translate(c, &env) {
                Ok(t) => {
                    done = Some((t, tangents));
                    break;
                }
                Err(e) => last_err = format!("`{c}`: {e}"),
            }
        }
        let Some((translated, tangents)) = done else {
            return Err(last_err);
        };
        let ok = match fw.var_names.as_slice() {
            [one] => {
                let is_list = names
                    .iter()
                    .position(|n| n == one)
                    .is_some_and(|i| op.returns[i].schema_type.is_list());
                if is_list {
                    translated.ty == CxxType::TensorList
                } else {
                    matches!(translated.ty, CxxType::Tensor | CxxType::OptTensor)
                }
            }
            many => matches!(&translated.ty, CxxType::Tuple(ts) if ts.len() == many.len()
                && ts.iter().all(|t| matches!(t, CxxType::Tensor | CxxType::OptTensor))),
        };
        if !ok {
            return Err(format!(
                "`{}` is a {}, not the tangent of {}",
                fw.formula,
                translated.ty,
                fw.var_names.join(", ")
            ));
        }
        codes.push(ForwardCode {
            vars: fw.var_names.clone(),
            translated,
            tangents,
            original_self: fw.original_self,
        });
    }
    Ok(codes)
}

/// Emits the tangent computations after the call (`if any_fw { .. }`); `place` gives each
/// output's Rust place (a `&Tensor` expression).
pub fn emit_forward_formulas(
    w: &mut Writer,
    codes: &[ForwardCode],
    place: &dyn Fn(&str) -> String,
    inplace: bool,
) {
    let needs_original = codes.iter().any(|c| c.original_self);
    let open = if needs_original {
        "if let Some(original_self_p) = original_self_p.as_ref() {"
    } else {
        "if any_fw {"
    };
    w.block(open, "}", |w| {
        let mut seen: Vec<&str> = Vec::new();
        for c in codes {
            for (local, input, optional) in &c.tangents {
                if seen.contains(&local.as_str()) {
                    continue;
                }
                seen.push(local);
                if *optional {
                    w.line(format!("let {local} = opt_fw_grad_or_zeros({input})?;"));
                } else {
                    w.line(format!("let {local} = fw_grad_or_zeros({input})?;"));
                }
            }
        }
        w.line("let _formula = ForwardFormulaGuard::new();");
        for c in codes {
            let set = |w: &mut Writer, var: &str, value: &str, ty: &CxxType| {
                let p = place(var);
                let line = match ty {
                    CxxType::OptTensor => {
                        format!("set_opt_fw_grad({p}, {value}.as_ref(), {inplace})?;")
                    }
                    CxxType::TensorList => format!("set_fw_grad_list({p}, &{value}, {inplace})?;"),
                    _ => format!("set_fw_grad({p}, &{value}, {inplace})?;"),
                };
                w.line(line);
            };
            match c.vars.as_slice() {
                [one] => {
                    let local = format!("{}_new_fw_grad", one);
                    w.line(format!("let {local} = {};", c.translated.rust));
                    set(w, one, &local, &c.translated.ty);
                }
                many => {
                    let locals: Vec<String> =
                        many.iter().map(|v| format!("{v}_new_fw_grad")).collect();
                    w.line(format!(
                        "let ({}) = {};",
                        locals.join(", "),
                        c.translated.rust
                    ));
                    let CxxType::Tuple(ts) = &c.translated.ty else {
                        continue;
                    };
                    for ((v, l), t) in many.iter().zip(&locals).zip(ts) {
                        set(w, v, l, t);
                    }
                }
            }
        }
    });
}
