//! The Python bindings (torchgen's `gen_python_functions.py`): per Python name, the
//! PythonArgParser signature strings of all its overloads, in torch's format, and a dispatch
//! function that calls the typed generated Rust API (`ratten_aten::functions::*` and the
//! `Tensor` methods) for the signature that matched.
//!
//! | file | PyTorch counterpart |
//! | --- | --- |
//! | `signatures.rs` | the `static PythonArgParser parser({...})` string lists of `python_torch_functions.cpp` / `python_variable_methods.cpp` |
//! | `dispatch/` | the `dispatch_add` lambdas and the `switch (_r.idx)` bodies of the same files |
//!
//! The rules torch's generator follows and this one copies:
//! - module functions come from `variants: function`, Tensor methods from `variants: method`
//!   (without `self`; functions call it `input`);
//! - an out= overload is folded into the functional signature with the same other arguments
//!   as a keyword-only `out=None` (called when `out` is not None);
//! - `add/sub/mul/div.Scalar` (and their in-place and out= forms) are not bound
//!   (`SKIP_PYTHON_BINDINGS_SIGNATURES`): the Tensor overload takes Python numbers;
//! - functions made by `autogen:` are not bound (`should_generate_py_binding`);
//! - overloads are ordered as torchgen's `sort_overloads` does (by text, then those taking
//!   `Scalar` where a sibling takes `Tensor` after it).
//!
//! Only `signatures.rs` is plain Rust; `dispatch/` uses pyo3 and the helpers of ratten-py's
//! `python::python_args` module, so it is compiled behind ratten-py's `python` feature.

use std::collections::BTreeMap;

use ratten_schema::native::{NativeFunction, NativeFunctions, SchemaKind};
use ratten_schema::{Argument, DefaultValue, Type};

use crate::model::types::{BaseType, RustType};
use crate::model::{Model, OperatorRecord};

use super::writer::{Expr, Writer, FN_CALL_WIDTH, MAX_WIDTH};
use super::{header, EmitContext, GeneratedFile};

/// Where the generated bindings find ratten-py's helpers: the one place to change when those
/// modules move. `PYTHON_ARGS` holds `into_py_result`, `DispatchFn` and `PythonArgs`.
pub const PYTHON_ARGS: &str = "crate::python::python_args";
/// The `Binding` type of the signature lists.
pub const BINDING: &str = "crate::arg_parser::Binding";

/// torch's `SKIP_PYTHON_BINDINGS_SIGNATURES`: the Scalar overloads the Tensor ones cover.
const SKIPPED_SCALAR_OVERLOADS: &[&str] =
    &["add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_"];

/// One Python signature: the overload it calls and, when folded in, its out= overload.
struct PySig<'a> {
    text: String,
    op: &'a OperatorRecord,
    out: Option<&'a OperatorRecord>,
    /// Python parameter index of each schema argument (None: `self` of a method, or out).
    param_of_arg: Vec<Option<usize>>,
    /// Python parameter index of `out` (folded or own).
    out_param: Option<usize>,
    /// Python parameter index of a factory's `requires_grad` (torchgen adds it to the
    /// signatures of functions taking tensor options).
    requires_grad_param: Option<usize>,
    /// The schema types of the Python-visible inputs (torchgen's `arguments(skip_outputs=True)`),
    /// which order the overloads.
    arg_types: Vec<String>,
}

/// A Python-visible name and its signatures.
struct PyName<'a> {
    name: String,
    /// `python_module` (`nn`, `linalg`), or empty for the top-level `ratten` namespace.
    module: String,
    sigs: Vec<PySig<'a>>,
}

/// torch's type spelling in signature strings (python_arg_parser.cpp's `type_map`).
fn torch_type(ty: &Type) -> Result<String, String> {
    Ok(match ty {
        Type::Optional(inner) => format!("{}?", torch_type(inner)?),
        Type::Tensor => "Tensor".into(),
        Type::Scalar => "Scalar".into(),
        Type::Int => "int64_t".into(),
        Type::SymInt => "SymInt".into(),
        Type::Float => "double".into(),
        Type::Bool => "bool".into(),
        Type::Str => "c10::string_view".into(),
        Type::ScalarType => "ScalarType".into(),
        Type::Device => "Device".into(),
        Type::List { elem, size } => {
            let base = match elem.as_ref() {
                Type::Int => "IntArrayRef",
                Type::SymInt => "SymIntArrayRef",
                Type::Float => "ArrayRef<double>",
                Type::Bool => "ArrayRef<bool>",
                Type::Tensor => "TensorList",
                Type::Optional(t) if **t == Type::Tensor => "c10::List<::std::optional<Tensor>>",
                other => return Err(format!("no Python binding for `{other}[]` arguments")),
            };
            match size {
                Some(n) => format!("{base}[{n}]"),
                None => base.to_string(),
            }
        }
        other => other.to_string(),
    })
}

fn torch_default(a: &Argument) -> Option<String> {
    let d = a.default.as_ref()?;
    Some(match d {
        DefaultValue::None => "None".into(),
        DefaultValue::Bool(true) => "True".into(),
        DefaultValue::Bool(false) => "False".into(),
        DefaultValue::Str(s) => format!("\"{s}\""),
        _ => a.default_text.clone().unwrap_or_else(|| d.to_string()),
    })
}

fn param_text(a: &Argument, method: bool) -> Result<String, String> {
    // torch renames a Tensor `self` of a function to `input`; a Scalar one keeps its name
    // (`pow(Number self, Tensor exponent)`).
    let name = if a.name == "self" && !method && a.ty.unwrap_optional() == &Type::Tensor {
        "input"
    } else {
        a.name.as_str()
    };
    let mut s = format!("{} {name}", torch_type(&a.ty)?);
    if let Some(d) = torch_default(a) {
        s.push('=');
        s.push_str(&d);
    }
    Ok(s)
}

/// Builds the signature of `f` (for a method without `self`); `fold_out` adds `out=None`.
fn signature<'a>(
    name: &str,
    f: &NativeFunction,
    op: &'a OperatorRecord,
    out: Option<&'a OperatorRecord>,
    method: bool,
) -> Result<PySig<'a>, String> {
    let mut parts = Vec::new();
    let mut star = false;
    let mut param_of_arg = vec![None; f.func.arguments.len()];
    let mut n = 0usize;
    let mut own_out = Vec::new();
    for (i, a) in f.func.arguments.iter().enumerate() {
        if a.is_out() {
            own_out.push(i);
            continue;
        }
        if method && Some(i) == op.self_arg {
            continue;
        }
        if a.kwarg_only && !star {
            parts.push("*".to_string());
            star = true;
        }
        parts.push(param_text(a, method)?);
        param_of_arg[i] = Some(n);
        n += 1;
    }
    let n_out = match out {
        Some(o) => o.args.iter().filter(|a| a.is_out).count(),
        None => own_out.len(),
    };
    let mut out_param = None;
    if n_out > 0 {
        if !star {
            parts.push("*".to_string());
        }
        let ty = if n_out == 1 {
            "Tensor".to_string()
        } else {
            format!("TensorList[{n_out}]")
        };
        // A folded out= is optional; an out= overload bound on its own requires it.
        parts.push(if out.is_some() {
            format!("{ty} out=None")
        } else {
            format!("{ty} out")
        });
        out_param = Some(n);
        n += 1;
    }
    let factory = !method
        && TENSOR_OPTIONS.iter().all(|o| {
            f.func
                .arguments
                .iter()
                .any(|a| a.kwarg_only && a.name == *o)
        });
    let requires_grad_param = factory.then(|| {
        parts.push("bool requires_grad=False".to_string());
        n
    });
    let arg_types = f
        .func
        .arguments
        .iter()
        .enumerate()
        .filter(|&(i, a)| !(a.is_out() || (method && Some(i) == op.self_arg)))
        .map(|(_, a)| a.ty.to_string())
        .collect();
    Ok(PySig {
        text: format!("{name}({})", parts.join(", ")),
        op,
        out,
        param_of_arg,
        out_param,
        requires_grad_param,
        arg_types,
    })
}

/// A factory's tensor options, which its out= overload does not take (torchgen's
/// `PythonSignatureGroup.from_pairs` takes them from the functional).
const TENSOR_OPTIONS: &[&str] = &["dtype", "layout", "device", "pin_memory"];

/// Whether the functional `a` and the out= overload `b` take the same non-out arguments
/// (besides `a`'s tensor options): an out= overload's functional twin.
fn same_inputs(a: &NativeFunction, b: &NativeFunction) -> bool {
    let ai: Vec<&Argument> = a
        .func
        .arguments
        .iter()
        .filter(|x| !(x.is_out() || (x.kwarg_only && TENSOR_OPTIONS.contains(&x.name.as_str()))))
        .collect();
    let bi: Vec<&Argument> = b.func.arguments.iter().filter(|x| !x.is_out()).collect();
    ai.len() == bi.len()
        && ai
            .iter()
            .zip(&bi)
            .all(|(x, y)| x.name == y.name && x.ty.unwrap_optional() == y.ty.unwrap_optional())
}

fn skipped(f: &NativeFunction) -> bool {
    let ov = f.func.name.overload_name.as_str();
    // torchgen's `should_generate_py_binding`: functions made by `autogen:` (tagged
    // "generated", such as `rsub.Tensor_out` and `relu.out`) have no Python binding, so
    // `torch.rsub(a, b, out=c)` is a TypeError; view_copy ops are the exception.
    if f.is_generated() && !f.tags.contains("view_copy") {
        return true;
    }
    SKIPPED_SCALAR_OVERLOADS.contains(&f.func.name.name.as_str())
        && (ov == "Scalar" || ov == "Scalar_out")
}

fn names<'a>(
    nf: &NativeFunctions,
    model: &'a Model,
    method: bool,
) -> Result<Vec<PyName<'a>>, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<&'a OperatorRecord>> = BTreeMap::new();
    for op in &model.ops {
        let f = &nf.functions[op.index];
        let bound = if method {
            op.method && op.self_arg.is_some()
        } else {
            op.function
        };
        if bound && !skipped(f) {
            groups.entry(f.func.name.name.clone()).or_default().push(op);
        }
    }
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for (name, ops) in groups {
        let module = ops
            .iter()
            .find_map(|o| nf.functions[o.index].python_module.clone())
            .unwrap_or_default();
        let (outs, others): (Vec<&OperatorRecord>, Vec<&OperatorRecord>) =
            ops.into_iter().partition(|o| o.kind == SchemaKind::Out);
        let mut folded = vec![None; others.len()];
        let mut unfolded = Vec::new();
        for o in outs {
            let f = &nf.functions[o.index];
            let twin = others.iter().enumerate().position(|(k, x)| {
                folded[k].is_none()
                    && x.kind == SchemaKind::Functional
                    && same_inputs(&nf.functions[x.index], f)
            });
            match twin {
                Some(k) => folded[k] = Some(o),
                None => unfolded.push(o),
            }
        }
        let mut sigs = Vec::new();
        for (op, o) in others.into_iter().zip(folded) {
            match signature(&name, &nf.functions[op.index], op, o, method) {
                Ok(s) => sigs.push(s),
                Err(e) => errors.push(format!("{}: {e}", op.name_with_overload)),
            }
        }
        for op in unfolded {
            match signature(&name, &nf.functions[op.index], op, None, method) {
                Ok(s) => sigs.push(s),
                Err(e) => errors.push(format!("{}: {e}", op.name_with_overload)),
            }
        }
        out.push(PyName {
            name,
            module,
            sigs: sort_overloads(sigs),
        });
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// torchgen's `is_arg_smaller`: an overload taking `t1` where another takes `t2` goes after it
/// (a Python number matches a Scalar and a Tensor parameter; an int matches int and int[]).
fn is_arg_smaller(t1: &str, t2: &str) -> bool {
    (t1 == "Scalar" && t2 == "Tensor")
        || (t1 == "Scalar?" && t2 == "Tensor?")
        || (t1.contains("Dimname") && !t2.contains("Dimname"))
        || (t1 == "int[]" && (t2 == "int" || t2 == "int?"))
        || (t1 == "Tensor[]" && t2.contains("[]"))
        || (t1 == "SymInt[]" && t2 == "int[]")
        || ((t1 == "SymInt" || t1 == "int") && t2 == "Tensor")
}

/// torchgen's `sort_overloads`: by signature text, then a topological sort of the partial
/// order "same arity, each argument equal or smaller, not all equal" (smaller goes later):
/// `bitwise_and` lists (Tensor, Tensor), (Number self, Tensor), (Tensor, Number).
fn sort_overloads(mut sigs: Vec<PySig<'_>>) -> Vec<PySig<'_>> {
    sigs.sort_by(|a, b| a.text.cmp(&b.text));
    let smaller = |a: &PySig, b: &PySig| {
        a.arg_types.len() == b.arg_types.len()
            && a.arg_types != b.arg_types
            && a.arg_types
                .iter()
                .zip(&b.arg_types)
                .all(|(x, y)| x == y || is_arg_smaller(x, y))
    };
    let n = sigs.len();
    // larger_than[i]: the overloads that must come before overload i.
    let mut larger_than: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..n {
        for j in 0..n {
            if smaller(&sigs[i], &sigs[j]) {
                larger_than.entry(i).or_default().push(j);
            }
        }
    }
    let mut order: Vec<usize> = (0..n).filter(|i| !larger_than.contains_key(i)).collect();
    let mut k = 0;
    while k < order.len() {
        let placed = order[k];
        let keys: Vec<usize> = larger_than.keys().copied().collect();
        for j in keys {
            let waiting = larger_than.get_mut(&j).expect("key listed above");
            waiting.retain(|&x| x != placed);
            if waiting.is_empty() {
                larger_than.remove(&j);
                order.push(j);
            }
        }
        k += 1;
    }
    let mut slots: Vec<Option<PySig>> = sigs.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// How one argument is read from the parsed Python arguments: (the `let` expression, how the
/// call passes the bound variable), by the argument's api form.
fn reader(api: &RustType, k: usize) -> Result<(String, &'static str), String> {
    use BaseType as B;
    use RustType as R;
    let base = |t: &RustType| match t {
        R::Base(b) => Some(*b),
        _ => None,
    };
    let under_ref = |t: &RustType| match t {
        R::Ref { to, .. } => Some((**to).clone()),
        _ => None,
    };
    let (read, how) = match api {
        R::Ref { to, .. } => match &**to {
            R::Base(B::Tensor) => ("tensor", "&"),
            R::Str => ("string", "&"),
            R::Slice(e) => match base(e) {
                Some(B::Tensor) => ("tensor_list", "&"),
                Some(B::I64) => ("int_list", "&"),
                Some(B::F64) => ("double_list", "&"),
                Some(B::Bool) => ("bool_list", "&"),
                // `Tensor?[]` (index's indices): torch's parser takes a sequence of Tensors.
                None if matches!(&**e, R::Option(t) if base(t) == Some(B::Tensor)) => {
                    ("optional_tensor_list", "&")
                }
                _ => {
                    return Err(format!(
                        "no Python reader for `{}`",
                        api.render("ratten_aten")
                    ))
                }
            },
            _ => {
                return Err(format!(
                    "no Python reader for `{}`",
                    api.render("ratten_aten")
                ))
            }
        },
        R::ImplInto(t) if base(t) == Some(B::Scalar) => ("scalar", ""),
        R::Option(t) => match (base(t), under_ref(t)) {
            (_, Some(R::Base(B::Tensor))) => ("optional_tensor", ".as_ref()"),
            (_, Some(R::Base(B::Generator))) => ("optional_generator", ".as_ref()"),
            (_, Some(R::Str)) => ("optional_string", ".as_deref()"),
            (_, Some(R::Slice(e))) if base(&e) == Some(B::I64) => {
                ("optional_int_list", ".as_deref()")
            }
            (Some(B::Scalar), _) => ("optional_scalar", ""),
            (Some(B::I64), _) => ("optional_int", ""),
            (Some(B::F64), _) => ("optional_double", ""),
            (Some(B::Bool), _) => ("optional_bool", ""),
            (Some(B::ScalarType), _) => ("optional_scalar_type", ""),
            (Some(B::Device), _) => ("optional_device", ""),
            (Some(B::MemoryFormat), _) => ("optional_memory_format", ""),
            // Layout has no Python objects in ratten: only its None default.
            (Some(B::Layout), _) => ("none_only", ""),
            _ => {
                return Err(format!(
                    "no Python reader for `{}`",
                    api.render("ratten_aten")
                ))
            }
        },
        R::Base(B::I64) => ("int", ""),
        R::Base(B::F64) => ("double", ""),
        R::Base(B::Bool) => ("bool", ""),
        R::Base(B::ScalarType) => ("scalar_type", ""),
        R::Base(B::Device) => ("device", ""),
        R::Base(B::MemoryFormat) => ("memory_format", ""),
        other => {
            return Err(format!(
                "no Python reader for the Rust type `{}`",
                other.render("ratten_aten")
            ))
        }
    };
    Ok((format!("r.{read}({k})?"), how))
}

fn pass(var: &str, how: &str) -> String {
    match how {
        "&" => format!("&{var}"),
        "" => var.to_string(),
        suffix => format!("{var}{suffix}"),
    }
}

/// `{lhs}r.run(py, move || {call}){tail}` with `call` (and `more` statements after it) laid
/// out as rustfmt lays out a closure that is a call's last argument.
fn run_stmt(w: &mut Writer, lhs: &str, call: &Expr, more: &[&str], tail: &str) {
    let flat = call.flat();
    let args = format!("py, move || {flat}");
    if more.is_empty()
        && args.len() <= FN_CALL_WIDTH
        && w.indent() + lhs.len() + "r.run()".len() + args.len() + tail.len() <= MAX_WIDTH
    {
        w.line(format!("{lhs}r.run({args}){tail}"));
        return;
    }
    w.line(format!("{lhs}r.run(py, move || {{"));
    w.indented(|w| {
        w.stmt("", call, if more.is_empty() { "" } else { "?;" });
        for m in more {
            w.line(*m);
        }
    });
    w.line(format!("}}){tail}"));
}

/// The statements calling `op` and returning its Python result. `param_of_arg` maps schema
/// arguments to Python parameters; `out_param` is where the out= tensor(s) come from.
fn emit_call(
    w: &mut Writer,
    op: &OperatorRecord,
    param_of_arg: &[Option<usize>],
    out_param: Option<usize>,
    requires_grad_param: Option<usize>,
    method: bool,
    early_return: bool,
) -> Result<(), String> {
    let receiver = if method { op.self_arg } else { None };
    let mut lets = Vec::new();
    let mut call_args = Vec::new();
    // API order: out= first, then schema order (the receiver is `self`).
    let mut order: Vec<usize> = (0..op.args.len()).filter(|&i| op.args[i].is_out).collect();
    order.extend((0..op.args.len()).filter(|&i| !op.args[i].is_out));
    let n_out = op.args.iter().filter(|a| a.is_out).count();
    let mut out_k = 0usize;
    for i in order {
        let a = &op.args[i];
        // Schema names are identifiers, snake-cased (`ggI` -> `a_gg_i`); the prefix keeps them
        // clear of Rust keywords.
        let var = format!("a_{}", crate::model::names::snake(&a.name));
        if Some(i) == receiver {
            lets.push("let a_self = r.self_tensor()?;".to_string());
            continue;
        }
        if a.is_out {
            let k = out_param.ok_or("an out= argument without an `out` parameter")?;
            let e = if n_out == 1 {
                format!("r.tensor({k})?")
            } else {
                format!("r.tensor_list_item({k}, {out_k}, {n_out})?")
            };
            out_k += 1;
            lets.push(format!("let {var} = {e};"));
            call_args.push(format!("&{var}"));
            continue;
        }
        let k = param_of_arg[i].ok_or_else(|| format!("argument `{}` has no parameter", a.name))?;
        let (e, how) = reader(&a.ty.api, k)?;
        lets.push(format!("let {var} = {e};"));
        call_args.push(pass(&var, how));
    }
    let fname = op.with_name().unwrap_or(&op.names.short);
    let call = if receiver.is_some() {
        Expr::call_atoms(format!("a_self.{fname}"), &call_args)
    } else {
        Expr::call_atoms(format!("functions::{fname}"), &call_args)
    };
    for l in lets {
        w.line(l);
    }
    let aliased: Vec<usize> = op.returns.iter().filter_map(|r| r.written_arg()).collect();
    // Several named returns make a `ratten.return_types` named tuple, as torch's structseqs.
    let named: Option<[String; 2]> =
        (op.returns.len() > 1 && op.returns.iter().all(|r| r.name.is_some())).then(|| {
            let fields: Vec<String> = op
                .returns
                .iter()
                .map(|r| format!("{:?}", r.name.as_deref().unwrap_or_default()))
                .collect();
            [
                format!("{:?}", op.root_name),
                format!("&[{}]", fields.join(", ")),
            ]
        });
    let ret = if !aliased.is_empty() && aliased.len() == op.returns.len() {
        // In-place and out=: the result is the Python object that was written, as torch.
        run_stmt(w, "", &call, &["Ok(())"], "?;");
        let objs: Vec<String> = aliased
            .iter()
            .map(|&i| {
                if Some(i) == receiver {
                    "r.self_object()".to_string()
                } else if op.args[i].is_out {
                    match out_param {
                        Some(k) if n_out == 1 => format!("r.object({k})"),
                        Some(k) => format!(
                            "r.tensor_list_object({k}, {})",
                            op.args[..i].iter().filter(|a| a.is_out).count()
                        ),
                        None => "py.None()".to_string(),
                    }
                } else {
                    match param_of_arg[i] {
                        Some(k) => format!("r.object({k})"),
                        None => "py.None()".to_string(),
                    }
                }
            })
            .collect();
        match (objs.as_slice(), &named) {
            ([one], _) => Expr::call_atoms("Ok", &[one]),
            (_, Some([name, fields])) => Expr::call(
                "r.named_tuple",
                vec![
                    Expr::atom("py"),
                    Expr::atom(name.clone()),
                    Expr::atom(fields.clone()),
                    vec_of(&objs),
                ],
            ),
            _ => Expr::call("r.tuple", vec![Expr::atom("py"), vec_of(&objs)]),
        }
    } else {
        run_stmt(w, "let result = ", &call, &[], "?;");
        if let Some(k) = requires_grad_param {
            w.line(format!(
                "{PYTHON_ARGS}::set_requires_grad(&result, r.bool({k})?)?;"
            ));
        }
        match &named {
            Some([name, fields]) => Expr::call_atoms(
                format!("{PYTHON_ARGS}::into_py_named"),
                &[
                    "py".to_string(),
                    name.clone(),
                    fields.clone(),
                    "result".to_string(),
                ],
            ),
            None => Expr::call_atoms("into_py_result", &["py", "result"]),
        }
    };
    if early_return {
        w.stmt("return ", &ret, ";");
    } else {
        w.stmt("", &ret, "");
    }
    Ok(())
}

/// The Rust name of a Python dispatch function: `function_add`; a private operator's leading
/// underscore is spelled out (`_cummax_helper` -> `function_private_cummax_helper`), as Rust
/// names are snake case.
fn dispatch_fn_name(prefix: &str, name: &str) -> String {
    match name.strip_prefix('_') {
        Some(rest) => format!("{prefix}_private_{rest}"),
        None => format!("{prefix}_{name}"),
    }
}

fn emit_dispatch_fn(
    w: &mut Writer,
    prefix: &str,
    n: &PyName<'_>,
    method: bool,
) -> Result<(), String> {
    w.line(format!(
        "/// `{}{}`: {} signature(s).",
        if method { "Tensor." } else { "" },
        n.name,
        n.sigs.len()
    ));
    let mut err = Ok(());
    w.fn_header(
        &format!("pub(super) fn {}", dispatch_fn_name(prefix, &n.name)),
        &[
            "py: Python<'_>".to_string(),
            "r: &PythonArgs<'_, '_>".to_string(),
        ],
        "PyResult<PyObject>",
        " {",
    );
    w.indented(|w| {
        w.block("match r.index() {", "}", |w| {
            for (idx, s) in n.sigs.iter().enumerate() {
                w.line(format!("// {}", s.text));
                w.block(format!("{idx} => {{"), "}", |w| {
                    let r = match (s.out, s.out_param) {
                        (Some(o), Some(k)) => {
                            // `out=None`: the functional overload; otherwise its out= twin,
                            // which takes the same inputs (by name; not the tensor options).
                            let mut res = Ok(());
                            w.block(format!("if r.is_none({k}) {{"), "}", |w| {
                                res = emit_call(
                                    w,
                                    s.op,
                                    &s.param_of_arg,
                                    None,
                                    s.requires_grad_param,
                                    method,
                                    true,
                                );
                            });
                            let map: Vec<Option<usize>> = o
                                .args
                                .iter()
                                .map(|a| {
                                    if a.is_out {
                                        return None;
                                    }
                                    let j = s.op.args.iter().position(|f| f.name == a.name)?;
                                    s.param_of_arg.get(j).copied().flatten()
                                })
                                .collect();
                            if let Err(e) = emit_call(w, o, &map, Some(k), None, method, false) {
                                res = Err(e);
                            }
                            res
                        }
                        _ => emit_call(
                            w,
                            s.op,
                            &s.param_of_arg,
                            s.out_param,
                            s.requires_grad_param.filter(|_| s.out_param.is_none()),
                            method,
                            false,
                        ),
                    };
                    if let Err(e) = r {
                        err = Err(format!("{}: {e}", s.op.name_with_overload));
                    }
                });
            }
            w.line("_ => Err(r.unknown_signature()),");
        });
    });
    w.line("}");
    err
}

/// The Python-visible names: module functions and Tensor methods.
fn bound_names<'a>(
    cx: &EmitContext<'a>,
) -> Result<(Vec<PyName<'a>>, Vec<PyName<'a>>), Vec<String>> {
    Ok((
        names(cx.nf, cx.model, false)?,
        names(cx.nf, cx.model, true)?,
    ))
}

/// `mod.rs`: the signature lists, and the dispatch functions behind ratten-py's `python`
/// feature (they use pyo3).
pub fn emit_mod(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let s = format!(
        "{}\npub mod signatures;\n\n#[cfg(feature = \"python\")]\npub mod dispatch;\n",
        header(cx.opts, "ratten-py's generated bindings: see each module.")
    );
    Ok(vec![GeneratedFile::new("mod.rs", s)])
}

/// `signatures.rs`: per Python name the PythonArgParser signature strings of its overloads.
pub fn emit_signatures(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let (functions, methods) = bound_names(cx)?;
    let mut sig = Writer::new();
    sig.line(header(
        cx.opts,
        "The PythonArgParser signatures of every Python-visible operator name, in torch's format.",
    ));
    sig.line(format!("use {BINDING};"));
    sig.blank();
    for (title, konst, list) in [
        ("Module functions (`ratten.add`)", "FUNCTIONS", &functions),
        (
            "Tensor methods (`t.add`), without `self`",
            "METHODS",
            &methods,
        ),
    ] {
        sig.line(format!("/// {title}: {} names.", list.len()));
        sig.block(format!("pub const {konst}: &[Binding] = &["), "];", |w| {
            for n in list.iter() {
                w.block("Binding {", "},", |w| {
                    w.line(format!("name: {:?},", n.name));
                    w.line(format!("module: {:?},", n.module));
                    w.block("signatures: &[", "],", |w| {
                        for s in &n.sigs {
                            w.line(format!("{:?},", s.text));
                        }
                    });
                    // The declarations behind the signatures (their docstrings show them).
                    w.block("schemas: &[", "],", |w| {
                        for s in &n.sigs {
                            w.line(format!("{:?},", s.op.doc()));
                            if let Some(o) = s.out {
                                w.line(format!("{:?},", o.doc()));
                            }
                        }
                    });
                });
            }
        });
        sig.blank();
    }
    Ok(vec![GeneratedFile::new("signatures.rs", sig.finish())])
}

/// `dispatch/`: per Python name the call of the typed Rust API for the signature the parser
/// matched, one file per shard, and in `mod.rs` the tables in `signatures.rs`'s order.
pub fn emit_dispatch(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let (functions, methods) = bound_names(cx)?;
    let keys =
        crate::model::names::shard_keys(functions.iter().chain(&methods).map(|n| n.name.as_str()));
    let mut shards: BTreeMap<&str, Writer> = BTreeMap::new();
    let mut errors = Vec::new();
    let mut tables = String::new();
    for (prefix, konst, list, method) in [
        ("function", "FUNCTION_DISPATCH", &functions, false),
        ("method", "METHOD_DISPATCH", &methods, true),
    ] {
        tables.push_str(&format!(
            "\n/// One entry per `signatures::{}` entry, in its order.\n",
            if method { "METHODS" } else { "FUNCTIONS" }
        ));
        tables.push_str(&format!("pub const {konst}: &[DispatchFn] = &[\n"));
        for n in list.iter() {
            let key = keys[&n.name].as_str();
            tables.push_str(&format!(
                "    {key}::{},\n",
                dispatch_fn_name(prefix, &n.name)
            ));
            let w = shards.entry(key).or_insert_with(|| {
                let mut w = Writer::new();
                w.line(header(
                    cx.opts,
                    &format!("The Python dispatch functions of shard `{key}`: see `dispatch`."),
                ));
                w.line("use pyo3::prelude::*;");
                w.line("use ratten_aten::functions;");
                w.blank();
                w.line(format!(
                    "use {PYTHON_ARGS}::{{into_py_result, PythonArgs}};"
                ));
                w
            });
            w.blank();
            if let Err(e) = emit_dispatch_fn(w, prefix, n, method) {
                errors.push(e);
            }
        }
        tables.push_str("];\n");
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let shard_names: Vec<String> = shards.keys().map(|k| k.to_string()).collect();
    let mut files = vec![GeneratedFile::new(
        "dispatch/mod.rs",
        format!(
            "{}\n#![allow(clippy::all, unused_variables)]\n\n{}\nuse {PYTHON_ARGS}::DispatchFn;\n{tables}",
            header(
                cx.opts,
                "Per Python name, the call of the typed Rust API for the signature the parser\n\
                 //! matched; one file per shard.",
            ),
            shard_names
                .iter()
                .map(|k| format!("mod {k};\n"))
                .collect::<String>(),
        ),
    )];
    for (key, w) in shards {
        let mut text = w.finish();
        // A shard whose functions all return named tuples has no `into_py_result` call.
        if !text.contains("into_py_result(") {
            text = text.replace("{into_py_result, PythonArgs}", "PythonArgs");
        }
        files.push(GeneratedFile::new(format!("dispatch/{key}.rs"), text));
    }
    Ok(files)
}

/// `vec![items]`, laid out as rustfmt lays out the macro.
fn vec_of(items: &[String]) -> Expr {
    Expr::Macro {
        name: "vec".to_string(),
        items: items.iter().map(Expr::atom).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> NativeFunctions {
        NativeFunctions::parse(yaml, std::path::Path::new("test.yaml"), None).unwrap()
    }

    const ADD: &str = "
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
  dispatch:
    CPU: add
- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  variants: method
  dispatch:
    CPU: add_
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: add_out
- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
  variants: function, method
  dispatch:
    CPU: add_scalar
- func: eq.Scalar(Tensor self, Scalar other) -> Tensor
  variants: function, method
  dispatch:
    CPU: eq_scalar
- func: eq.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch:
    CPU: eq
- func: argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
  variants: function, method
  dispatch:
    CPU: argmax
";

    fn generate_python(nf: &NativeFunctions) -> Vec<GeneratedFile> {
        crate::codegen::generate(nf, None, &crate::codegen::GenOptions::python("test.yaml"))
            .unwrap()
    }

    fn file<'a>(files: &'a [GeneratedFile], name: &str) -> &'a str {
        &files.iter().find(|f| f.name == name).unwrap().contents
    }

    #[test]
    fn signatures_are_torchs() {
        let files = generate_python(&load(ADD));
        let s = file(&files, "signatures.rs");
        assert!(
            s.contains("\"add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)\",")
        );
        // add.Scalar is skipped as torch does; eq keeps its Scalar overload, after the Tensor one.
        assert!(!s.contains("Scalar other, Scalar alpha"));
        let t = s.find("\"eq(Tensor input, Tensor other)\"").unwrap();
        let sc = s.find("\"eq(Tensor input, Scalar other)\"").unwrap();
        assert!(t < sc);
        // methods: no self, in-place names, no out=
        assert!(s.contains("\"add_(Tensor other, *, Scalar alpha=1)\""));
        assert!(s.contains("\"argmax(int64_t? dim=None, bool keepdim=False)\""));
    }

    #[test]
    fn dispatch_calls_the_typed_api() {
        let files = generate_python(&load(ADD));
        let d = file(&files, "dispatch/a.rs");
        assert!(d.contains("functions::add_with(&a_self, &a_other, a_alpha)"));
        assert!(d.contains("functions::add_out_with(&a_out, &a_self, &a_other, a_alpha)"));
        assert!(d.contains("a_self.add_with_(&a_other, a_alpha)?;\n"));
        assert!(d.contains("Ok(r.self_object())"));
        assert!(d.contains("functions::argmax_with(&a_self, a_dim, a_keepdim)"));
    }
}
