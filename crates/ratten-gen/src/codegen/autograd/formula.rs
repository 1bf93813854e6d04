//! The formula translator: one derivatives.yaml formula (a C++ expression, parsed by
//! [`cxx_parser`](super::cxx_parser)) to a Rust expression with its C++-level type.
//!
//! Note [Formula translation]: names resolve against an [`Env`] the emitter builds (inputs,
//! outputs, `grad` / `grads` / named gradients, `grad_input_mask`, saved values such as
//! `self_sym_sizes`, each with its Rust expression, [`CxxType`] and [`Form`]). A saved value
//! replaces the expression torchgen saves it for: `self.sym_sizes()` in a formula reads
//! `self_sym_sizes` when the env has it (matched on the parsed expression's canonical text).
//! Calls resolve as C++ does, in this order:
//! - builtins of c10 / std (`std::get<0>`, `Tensor()`, `c10::Scalar(x)`, `isComplexType`,
//!   `not_implemented`, ...);
//! - FunctionsManual helpers (unqualified or `at::`), from their Rust signatures
//!   ([`ManualSignatures`]); trailing `Option` parameters may be left out (C++'s `= nullopt`);
//! - ATen operators: `at::foo(..)`, unqualified `foo(..)` (ADL finds `at::`), methods
//!   `x.foo(..)`, with `_symint` stripped, by overload resolution on the C++ types (arity with
//!   the schema's defaults, then the cheapest conversions: exact, then standard such as
//!   `int` to `Scalar`, then user-defined such as `int` to `IntArrayRef`). An operator is
//!   called through its handle, `ops::<handle>::call(<every argument>)?`, so that a backward
//!   run with create_graph records a graph (out of tree, ratten-aten's operators are
//!   `aten::<handle>` and the library's own `ops::<handle>`). Only functional overloads are
//!   candidates.
//! - Tensor methods that are not operators (`sizes`, `dim`, `options`, `defined`, ...) map to
//!   `TensorBase`'s; Tensor operators (`+ - * /`, comparisons, unary `-`) to the operators C++
//!   defines them as (`add.Tensor`, `mul.Scalar`, `rsub.Scalar`, `eq.Tensor`, ...).
//!
//! Every Rust expression is built with the precedence of its outermost operator, so that
//! operands are parenthesised exactly where Rust needs it (generated code is rustc-lint-clean).
//! The result is an owned value ([`Translated`]). Anything else is a [`Refusal`] with why.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use ratten_schema::native::SchemaKind;

use super::cxx_parser::{self, BinaryOp, Expr, ParseError, TemplateArg, TypeName, UnaryOp};
use super::manual::{ManualFn, ManualSignatures};
use super::types::CxxType;
use crate::model::{Model, OperatorRecord};

/// How a bound Rust expression holds its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A temporary of the owned type (a call's result).
    Owned,
    /// A place of the owned type (a local, a field, `grads[0]`): borrowed with `&`, cloned for
    /// an owned value.
    Place,
    /// Already the borrowed form (`grad: &Tensor`, `Option<&Tensor>`, `&[i64]`).
    Borrowed,
}

/// One name of the environment: its Rust expression, C++ type and form.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub rust: String,
    pub ty: CxxType,
    pub form: Form,
}

impl Binding {
    pub fn new(rust: impl Into<String>, ty: CxxType, form: Form) -> Binding {
        Binding {
            rust: rust.into(),
            ty,
            form,
        }
    }

    /// A place of the owned type (a local or a field).
    pub fn place(rust: impl Into<String>, ty: CxxType) -> Binding {
        Binding::new(rust, ty, Form::Place)
    }

    /// A value already in the borrowed form.
    pub fn borrowed(rust: impl Into<String>, ty: CxxType) -> Binding {
        Binding::new(rust, ty, Form::Borrowed)
    }
}

/// One functional overload as the C++ API sees it.
#[derive(Debug, Clone)]
struct OpSig {
    /// The module generated code reaches its handle through (`ops`, `aten`).
    module: String,
    handle: String,
    function: bool,
    /// The parameter a method's receiver is.
    self_param: Option<usize>,
    params: Vec<Param>,
    ret: CxxType,
}

#[derive(Debug, Clone)]
enum Param {
    /// One schema argument: its type and its default's Rust (borrowed form).
    Plain {
        ty: CxxType,
        default: Option<String>,
    },
    /// `dtype, layout, device, pin_memory`: C++'s one `TensorOptions` parameter (default `{}`).
    Options,
}

/// The functional overloads of one or more models by operator name (`add` -> `add.Tensor`,
/// `add.Scalar`), each with the module generated code calls it through: an out-of-tree
/// library's formulas call ratten-aten's operators and the library's own.
#[derive(Debug, Clone, Default)]
pub struct OpIndex {
    by_name: BTreeMap<String, Vec<OpSig>>,
}

impl OpIndex {
    /// The operators of `model`, called through `ops`.
    pub fn new(model: &Model) -> OpIndex {
        let mut index = OpIndex::default();
        index.extend(model, "ops");
        index
    }

    /// Adds the operators of `model`, called through `module` (`aten`: `aten::mul_Scalar`).
    pub fn extend(&mut self, model: &Model, module: &str) {
        for op in &model.ops {
            if let Some(sig) = op_sig(op, module) {
                let name = op
                    .qualified_name
                    .rsplit("::")
                    .next()
                    .unwrap_or_default()
                    .to_string();
                self.by_name.entry(name).or_default().push(sig);
            }
        }
    }

    /// Whether the model declares an operator of this name (any overload, any kind).
    pub fn declares(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }
}

fn op_sig(op: &OperatorRecord, module: &str) -> Option<OpSig> {
    if op.kind != SchemaKind::Functional || op.returns.iter().any(|r| r.written_arg().is_some()) {
        return None;
    }
    let mut params = Vec::new();
    let mut self_param = None;
    let mut i = 0;
    let names: Vec<&str> = op.args.iter().map(|a| a.name.as_str()).collect();
    while i < op.args.len() {
        if names[i..].starts_with(&["dtype", "layout", "device", "pin_memory"]) {
            params.push(Param::Options);
            i += 4;
            continue;
        }
        let a = &op.args[i];
        if Some(i) == op.self_arg {
            self_param = Some(params.len());
        }
        params.push(Param::Plain {
            ty: CxxType::of_schema(&a.schema_type)?,
            default: a.default.as_ref().map(|d| {
                if d.by_ref {
                    format!("&{}", d.expr)
                } else {
                    d.expr.clone()
                }
            }),
        });
        i += 1;
    }
    let rets = op
        .returns
        .iter()
        .map(|r| CxxType::of_schema(&r.schema_type))
        .collect::<Option<Vec<_>>>()?;
    let ret = match rets.len() {
        0 => return None,
        1 => rets.into_iter().next().expect("one"),
        _ => CxxType::Tuple(rets),
    };
    Some(OpSig {
        module: module.to_string(),
        handle: op.handle.clone(),
        function: op.function,
        self_param: if op.method { self_param } else { None },
        params,
        ret,
    })
}

/// The names a formula may use, and where generated code finds the operators and helpers.
#[derive(Debug, Clone)]
pub struct Env<'a> {
    pub ops: &'a OpIndex,
    pub manual: &'a ManualSignatures,
    names: HashMap<String, Binding>,
    /// A saved expression's canonical text (`self.sym_sizes()`) -> the name bound to its value.
    saved: HashMap<String, String>,
    /// The prefix of a helper call (empty: the helpers are in scope).
    pub manual_path: String,
    /// How generated code names ratten-aten (`ratten_aten`).
    pub aten: String,
}

impl<'a> Env<'a> {
    pub fn new(ops: &'a OpIndex, manual: &'a ManualSignatures) -> Env<'a> {
        Env {
            ops,
            manual,
            names: HashMap::new(),
            saved: HashMap::new(),
            manual_path: String::new(),
            aten: "ratten_aten".into(),
        }
    }

    /// Binds a C++ name (`grad`, `self`, `self_sym_sizes`, `grads`).
    pub fn bind(&mut self, name: &str, b: Binding) -> &mut Self {
        self.names.insert(name.to_string(), b);
        self
    }

    /// Makes `expr` (a saved value's expression, `self.sym_sizes()`) read the bound `name`.
    pub fn bind_saved(&mut self, expr: &str, name: &str) -> Result<&mut Self, ParseError> {
        let canon = cxx_parser::parse(expr)?.to_string();
        self.saved.insert(canon, name.to_string());
        Ok(self)
    }

    pub fn binding(&self, name: &str) -> Option<&Binding> {
        self.names.get(name)
    }
}

/// A translated formula: an owned Rust value of C++ type `ty` (its Rust type is
/// `ty.owned_rust(..)`).
#[derive(Debug, Clone, PartialEq)]
pub struct Translated {
    pub rust: String,
    pub ty: CxxType,
}

impl Translated {
    /// The value as an `Option<Tensor>` (a gradient slot), when it is a tensor.
    pub fn as_opt_tensor(&self) -> Option<String> {
        match self.ty {
            CxxType::Tensor => Some(format!("Some({})", self.rust)),
            CxxType::OptTensor => Some(self.rust.clone()),
            _ => None,
        }
    }
}

/// Why a formula is not translated.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    Parse(ParseError),
    /// A name the env does not bind and no builtin has.
    UnknownName(String),
    /// An unqualified function that is neither an operator nor a helper of the manual file.
    MissingHelper(String),
    /// `at::foo` / `x.foo()` where ratten declares no operator `foo` (nor a helper has it).
    UndeclaredOperator(String),
    /// A helper or operator whose parameters the arguments do not fit.
    NoMatchingOverload {
        name: String,
        args: Vec<String>,
    },
    /// A construct outside the supported subset.
    Unsupported(String),
    /// Operand types the construct does not take.
    TypeMismatch(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Parse(e) => write!(f, "does not parse: {e}"),
            Refusal::UnknownName(n) => write!(f, "unknown name `{n}`"),
            Refusal::MissingHelper(n) => write!(f, "helper `{n}` not in functions_manual"),
            Refusal::UndeclaredOperator(n) => {
                write!(f, "operator `{n}` is not declared by ratten")
            }
            Refusal::NoMatchingOverload { name, args } => {
                write!(f, "no overload of `{name}` takes ({})", args.join(", "))
            }
            Refusal::Unsupported(s) => write!(f, "unsupported: {s}"),
            Refusal::TypeMismatch(s) => write!(f, "type mismatch: {s}"),
        }
    }
}

impl Refusal {
    /// The reason's group for counts: the kind, and the helper or operator it names.
    pub fn group(&self) -> String {
        match self {
            Refusal::Parse(_) => "does not parse".into(),
            Refusal::UnknownName(n) => format!("unknown name `{n}`"),
            Refusal::MissingHelper(n) => format!("helper `{n}` not in functions_manual"),
            Refusal::UndeclaredOperator(n) => format!("operator `{n}` not declared"),
            Refusal::NoMatchingOverload { name, .. } => format!("no overload of `{name}` fits"),
            Refusal::Unsupported(s) => format!("unsupported: {s}"),
            Refusal::TypeMismatch(_) => "type mismatch".into(),
        }
    }
}

/// Rust operator precedence, loosest first, of a built expression's outermost operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Prec {
    /// `if .. { } else { }`.
    Block,
    Or,
    And,
    Cmp,
    BitOr,
    BitXor,
    BitAnd,
    Add,
    Mul,
    Cast,
    Unary,
    Postfix,
}

/// A literal or list whose Rust depends on where it goes.
#[derive(Debug, Clone, PartialEq)]
enum Special {
    None,
    Int(i64),
    Float(f64),
    Str(String),
    /// `{a, b}` (the items translated), `{}` when empty.
    Brace(Vec<Val>),
    /// A `TensorOptions` known by its parts (`x.options()`): the Rust of its optional dtype
    /// and device.
    Options {
        dtype: String,
        device: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
struct Val {
    rust: String,
    ty: CxxType,
    form: Form,
    prec: Prec,
    special: Special,
}

impl Val {
    fn new(rust: impl Into<String>, ty: CxxType, form: Form, prec: Prec) -> Val {
        Val {
            rust: rust.into(),
            ty,
            form,
            prec,
            special: Special::None,
        }
    }

    fn owned(rust: impl Into<String>, ty: CxxType, prec: Prec) -> Val {
        Val::new(rust, ty, Form::Owned, prec)
    }

    /// The Rust as an operand needing at least precedence `min`.
    fn at(&self, min: Prec) -> String {
        if self.prec < min {
            format!("({})", self.rust)
        } else {
            self.rust.clone()
        }
    }

    /// A description for messages.
    fn describe(&self) -> String {
        match &self.special {
            Special::Brace(items) if items.is_empty() => "{}".into(),
            Special::Brace(items) => format!(
                "{{{}}}",
                items
                    .iter()
                    .map(Val::describe)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Special::Str(_) => "string literal".into(),
            _ => self.ty.to_string(),
        }
    }
}

/// Whether the owned Rust type is `Copy` (moved out of places without `.clone()`).
fn rust_copy(t: &CxxType) -> bool {
    t.is_copy()
        || matches!(
            t,
            CxxType::Scalar | CxxType::OptScalar | CxxType::TensorOptions
        )
}

/// `ScalarType` variant names of c10 (`at::kFloat`, `ScalarType::Float`).
const SCALAR_TYPES: &[&str] = &[
    "Byte",
    "Char",
    "Short",
    "Int",
    "Long",
    "Half",
    "Float",
    "Double",
    "ComplexHalf",
    "ComplexFloat",
    "ComplexDouble",
    "Bool",
    "BFloat16",
];

const MEMORY_FORMATS: &[&str] = &["Contiguous", "Preserve", "ChannelsLast", "ChannelsLast3d"];

/// The name without its namespace (`at::`, `c10::`, `std::`, torchgen's `details::`) and
/// whether one was written.
fn unqualify(path: &str) -> (&str, Option<&str>) {
    let path = path.trim_start_matches("::");
    match path.rsplit_once("::") {
        Some((ns, name)) => (name, Some(ns)),
        None => (path, None),
    }
}

/// torchgen's SymInt erasure of a function name.
fn strip_symint(name: &str) -> &str {
    name.strip_suffix("_symint").unwrap_or(name)
}

struct Cx<'e, 'a> {
    env: &'e Env<'a>,
}

type R<T> = Result<T, Refusal>;

fn unsupported<T>(s: impl Into<String>) -> R<T> {
    Err(Refusal::Unsupported(s.into()))
}

fn mismatch<T>(s: impl Into<String>) -> R<T> {
    Err(Refusal::TypeMismatch(s.into()))
}

impl Cx<'_, '_> {
    fn op_call(&self, sig: &OpSig, args: &[String]) -> String {
        format!("{}::{}::call({})?", sig.module, sig.handle, args.join(", "))
    }

    /// The borrowed form of `v` (`&x`, `x.as_ref()`, `x` for `Copy` types).
    fn borrow(&self, v: &Val) -> R<String> {
        use CxxType::*;
        if v.form == Form::Borrowed || v.ty.is_copy() {
            return Ok(v.rust.clone());
        }
        Ok(match v.ty {
            OptTensor | OptScalar | OptGenerator => format!("{}.as_ref()", v.at(Prec::Postfix)),
            OptIntList | OptString => format!("{}.as_deref()", v.at(Prec::Postfix)),
            Tuple(_) => return mismatch("a tuple passed as an argument"),
            _ => format!("&{}", v.at(Prec::Unary)),
        })
    }

    /// The owned form of `v`.
    fn own(&self, v: &Val) -> R<String> {
        use CxxType::*;
        if let Special::Brace(items) = &v.special {
            let all = |t: CxxType| items.iter().all(|i| i.ty == t);
            if all(Int) {
                let xs = items.iter().map(|i| i.rust.clone()).collect::<Vec<_>>();
                return Ok(format!("vec![{}]", xs.join(", ")));
            }
            return unsupported(format!("the list {} as a value", v.describe()));
        }
        if let Special::Str(s) = &v.special {
            return Ok(format!("{s:?}.to_string()"));
        }
        Ok(match v.form {
            Form::Owned => v.rust.clone(),
            Form::Place if rust_copy(&v.ty) => v.rust.clone(),
            Form::Place => format!("{}.clone()", v.at(Prec::Postfix)),
            Form::Borrowed => match v.ty {
                _ if v.ty.is_copy() => v.rust.clone(),
                Scalar | TensorOptions => format!("*{}", v.at(Prec::Unary)),
                OptTensor | OptScalar | OptGenerator => format!("{}.cloned()", v.at(Prec::Postfix)),
                IntList | TensorList | OptTensorList | BoolList | FloatList | ScalarTypeList
                | IntListList => format!("{}.to_vec()", v.at(Prec::Postfix)),
                OptIntList => format!("{}.map(<[i64]>::to_vec)", v.at(Prec::Postfix)),
                String => format!("{}.to_string()", v.at(Prec::Postfix)),
                OptString => format!("{}.map(str::to_string)", v.at(Prec::Postfix)),
                _ => format!("{}.clone()", v.at(Prec::Postfix)),
            },
        })
    }

    /// `v` as an argument of type `to` (its borrowed form) and the conversion's cost: 0 exact,
    /// 1 a standard conversion, 2 a user-defined one (C++'s ranking).
    fn convert(&self, v: &Val, to: &CxxType) -> Option<(String, u32)> {
        use CxxType::*;
        // Literals and lists first: their Rust depends on the target.
        match (&v.special, to) {
            (Special::Int(i), Float) => return Some((format!("{:?}", *i as f64), 1)),
            (Special::Int(i), Scalar) => return Some((format!("&Scalar::Int({i})"), 1)),
            (Special::Float(x), Scalar) => return Some((format!("&Scalar::Double({x:?})"), 1)),
            (Special::Str(s), String) => return Some((format!("{s:?}"), 0)),
            (Special::Str(s), OptString) => return Some((format!("Some({s:?})"), 1)),
            (Special::Brace(items), _) if items.is_empty() => {
                return match to {
                    IntList => Some(("&[]".into(), 1)),
                    TensorList => Some(("&[]".into(), 1)),
                    TensorOptions => Some(("&TensorOptions::new()".into(), 1)),
                    t if t.is_optional() => Some(("None".into(), 1)),
                    _ => None,
                };
            }
            (Special::Brace(items), IntList | OptIntList) => {
                let mut xs = Vec::new();
                for i in items {
                    let (r, _) = self.convert(i, &Int)?;
                    xs.push(r);
                }
                let list = format!("&[{}]", xs.join(", "));
                return Some(if *to == OptIntList {
                    (format!("Some({list})"), 2)
                } else {
                    (list, 1)
                });
            }
            (Special::Brace(items), TensorList) => {
                let mut xs = Vec::new();
                for i in items {
                    if i.ty != Tensor {
                        return None;
                    }
                    xs.push(self.own(i).ok()?);
                }
                return Some((format!("&[{}]", xs.join(", ")), 1));
            }
            (Special::Brace(items), BoolList) => {
                let mut xs = Vec::new();
                for i in items {
                    let (r, _) = self.convert(i, &Bool)?;
                    xs.push(r);
                }
                return Some((format!("&[{}]", xs.join(", ")), 1));
            }
            (Special::Brace(_), _) => return None,
            _ => {}
        }
        if v.ty == *to {
            return self.borrow(v).ok().map(|r| (r, 0));
        }
        match (&v.ty, to) {
            (Nullopt, t) if t.is_optional() => Some(("None".into(), 1)),
            (OptTensor, Tensor) => match v.form {
                Form::Borrowed => None,
                _ => Some((format!("defined(&{})?", v.at(Prec::Unary)), 1)),
            },
            (Int, Float) => Some((format!("{} as f64", v.at(Prec::Cast)), 1)),
            (Int, Scalar) => Some((format!("&Scalar::Int({})", v.rust), 1)),
            (Float, Scalar) => Some((format!("&Scalar::Double({})", v.rust), 1)),
            (Bool, Scalar) => Some((format!("&Scalar::Bool({})", v.rust), 1)),
            (Complex, Scalar) => Some((format!("&Scalar::ComplexDouble({})", v.rust), 1)),
            (Int, IntList) => Some((format!("&[{}]", v.rust), 2)),
            (ScalarType, TensorOptions) => Some((format!("&TensorOptions::from({})", v.rust), 2)),
            (_, t) if t.is_optional() => {
                // `T` to `optional<T>` (and what converts to `T`).
                let (r, c) = self.convert(v, &t.unwrapped()?)?;
                Some((format!("Some({r})"), c + 1))
            }
            _ => None,
        }
    }

    /// The parts (`dtype`, `device`) of a `TensorOptions` argument and the cost.
    fn options_parts(&self, v: &Val) -> Option<((String, String), u32)> {
        match (&v.special, &v.ty) {
            (Special::Options { dtype, device }, _) => Some(((dtype.clone(), device.clone()), 0)),
            (Special::Brace(items), _) if items.is_empty() => {
                Some((("None".into(), "None".into()), 1))
            }
            (Special::Brace(_), _) => None,
            (_, CxxType::TensorOptions) => {
                let p = v.at(Prec::Postfix);
                Some(((format!("{p}.dtype"), format!("{p}.device")), 0))
            }
            (_, CxxType::ScalarType) => Some(((format!("Some({})", v.rust), "None".into()), 2)),
            _ => None,
        }
    }

    /// Overload resolution of operator `name` over `args` (the receiver first for a method).
    fn call_op(&self, name: &str, args: &[Val], method: bool) -> R<Val> {
        let Some(sigs) = self.env.ops.by_name.get(name) else {
            return Err(Refusal::UndeclaredOperator(name.to_string()));
        };
        let mut best: Option<(u32, Vec<String>, &OpSig)> = None;
        for sig in sigs {
            if method && sig.self_param.is_none() || !method && !sig.function {
                continue;
            }
            // The C++ parameter order: a method's receiver is its `self`.
            let order: Vec<usize> = match (method, sig.self_param) {
                (true, Some(s)) => std::iter::once(s)
                    .chain((0..sig.params.len()).filter(|&i| i != s))
                    .collect(),
                _ => (0..sig.params.len()).collect(),
            };
            if args.len() > order.len() {
                continue;
            }
            let mut by_param: Vec<Option<Vec<String>>> = vec![None; sig.params.len()];
            let mut cost = 0;
            let mut ok = true;
            for (k, &pi) in order.iter().enumerate() {
                let rendered = match (&sig.params[pi], args.get(k)) {
                    (Param::Plain { ty, .. }, Some(a)) => self.convert(a, ty).map(|(r, c)| {
                        cost += c;
                        vec![r]
                    }),
                    (Param::Plain { default, .. }, None) => default.clone().map(|d| vec![d]),
                    (Param::Options, Some(a)) => self.options_parts(a).map(|((d, dev), c)| {
                        cost += c;
                        vec![d, "None".into(), dev, "None".into()]
                    }),
                    (Param::Options, None) => Some(vec!["None".into(); 4]),
                };
                match rendered {
                    Some(r) => by_param[pi] = Some(r),
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                continue;
            }
            let rendered: Vec<String> = by_param.into_iter().flatten().flatten().collect();
            if best.as_ref().is_none_or(|(c, _, _)| cost < *c) {
                best = Some((cost, rendered, sig));
            }
        }
        let Some((_, rendered, sig)) = best else {
            return Err(Refusal::NoMatchingOverload {
                name: if method {
                    format!("Tensor::{name}")
                } else {
                    format!("at::{name}")
                },
                args: args.iter().map(Val::describe).collect(),
            });
        };
        Ok(Val::owned(
            self.op_call(sig, &rendered),
            sig.ret.clone(),
            Prec::Postfix,
        ))
    }

    /// A FunctionsManual helper call (over its C++ overloads, the cheapest conversions);
    /// trailing `Option` parameters may be left out (C++'s `= nullopt`).
    fn call_manual(&self, name: &str, fs: &[&ManualFn], args: &[Val]) -> R<Val> {
        let mut best: Option<(u32, Vec<String>, &ManualFn)> = None;
        'fns: for f in fs {
            if args.len() > f.params.len() {
                continue;
            }
            let mut rendered = Vec::new();
            let mut cost = 0;
            for (k, (_, ty)) in f.params.iter().enumerate() {
                match args.get(k) {
                    Some(a) => match self.convert(a, ty) {
                        Some((r, c)) => {
                            rendered.push(r);
                            cost += c;
                        }
                        None => continue 'fns,
                    },
                    None if ty.is_optional() => rendered.push("None".into()),
                    None => continue 'fns,
                }
            }
            if best.as_ref().is_none_or(|(c, _, _)| cost < *c) {
                best = Some((cost, rendered, f));
            }
        }
        let Some((_, rendered, f)) = best else {
            return Err(Refusal::NoMatchingOverload {
                name: name.to_string(),
                args: args.iter().map(Val::describe).collect(),
            });
        };
        Ok(Val::owned(
            format!(
                "{}{}({})?",
                self.env.manual_path,
                f.name,
                rendered.join(", ")
            ),
            f.ret.clone(),
            Prec::Postfix,
        ))
    }

    /// The value saved for `e`, when the env binds one (Note [Formula translation]).
    fn saved(&self, e: &Expr) -> Option<R<Val>> {
        if self.env.saved.is_empty() {
            return None;
        }
        let name = self.env.saved.get(&e.to_string())?;
        let b = self.env.names.get(name)?;
        let v = Val::new(b.rust.clone(), b.ty.clone(), b.form, Prec::Postfix);
        // `zeros_like(self)` saves the sizes and options (torchgen's `TypeAndSize`) and makes
        // the zeros in the backward.
        if let CxxType::Tuple(ts) = &b.ty {
            if ts.as_slice() == [CxxType::IntList, CxxType::TensorOptions] {
                let r = v.at(Prec::Postfix);
                let sizes = Val::new(
                    format!("{r}.0"),
                    CxxType::IntList,
                    Form::Place,
                    Prec::Postfix,
                );
                let options = Val {
                    special: Special::Options {
                        dtype: format!("{r}.1.dtype"),
                        device: format!("{r}.1.device"),
                    },
                    ..Val::new(
                        format!("{r}.1"),
                        CxxType::TensorOptions,
                        Form::Place,
                        Prec::Postfix,
                    )
                };
                return Some(self.call_op("zeros", &[sizes, options], false));
            }
        }
        Some(Ok(v))
    }

    fn expr(&self, e: &Expr) -> R<Val> {
        if let Some(v) = self.saved(e) {
            return v;
        }
        match e {
            Expr::Int(i) => Ok(Val {
                special: Special::Int(*i),
                ..Val::owned(i.to_string(), CxxType::Int, Prec::Postfix)
            }),
            Expr::Float(x) => Ok(Val {
                special: Special::Float(*x),
                ..Val::owned(format!("{x:?}"), CxxType::Float, Prec::Postfix)
            }),
            Expr::Bool(b) => Ok(Val::owned(b.to_string(), CxxType::Bool, Prec::Postfix)),
            Expr::Str(s) => Ok(Val {
                special: Special::Str(s.clone()),
                ..Val::owned(format!("{s:?}"), CxxType::String, Prec::Postfix)
            }),
            Expr::Name { path, targs } => self.name(path, targs),
            Expr::Call { callee, args } => self.call(callee, args),
            Expr::Member { name, .. } => unsupported(format!("the member access `.{name}`")),
            Expr::Index { base, index } => self.index(base, index),
            Expr::Unary { op, expr } => self.unary(*op, expr),
            Expr::Binary { op, lhs, rhs } => self.binary(*op, lhs, rhs),
            Expr::Ternary {
                cond,
                then,
                otherwise,
            } => self.ternary(cond, then, otherwise),
            Expr::Brace { ty: None, items } => {
                let items = items.iter().map(|i| self.expr(i)).collect::<R<Vec<_>>>()?;
                Ok(Val {
                    special: Special::Brace(items),
                    ..Val::owned("", CxxType::Nullopt, Prec::Postfix)
                })
            }
            Expr::Brace {
                ty: Some(ty),
                items,
            } => self.typed_brace(ty, items),
            Expr::Cast { ty, expr } => self.cast(ty, expr),
        }
    }

    fn name(&self, path: &str, targs: &[TemplateArg]) -> R<Val> {
        if targs.is_empty() {
            if let Some(b) = self.env.names.get(path) {
                return Ok(Val::new(
                    b.rust.clone(),
                    b.ty.clone(),
                    b.form,
                    Prec::Postfix,
                ));
            }
        }
        let (name, ns) = unqualify(path);
        let aten = &self.env.aten;
        // `at::Reduction::Reduction`'s values, as `reduction` arguments carry them.
        if ns.is_some_and(|n| n.ends_with("Reduction")) {
            let value = match name {
                "None" => Some(0),
                "Mean" => Some(1),
                "Sum" => Some(2),
                _ => None,
            };
            if let Some(value) = value {
                return Ok(Val::owned(value.to_string(), CxxType::Int, Prec::Postfix));
            }
        }
        if matches!(name, "nullopt" | "nullopt_t") {
            return Ok(Val::owned("None", CxxType::Nullopt, Prec::Postfix));
        }
        let scalar_type = name
            .strip_prefix('k')
            .filter(|_| ns.is_none_or(|n| matches!(n, "at" | "c10" | "torch")))
            .or_else(|| ns.filter(|n| n.ends_with("ScalarType")).map(|_| name));
        if let Some(st) = scalar_type.filter(|s| SCALAR_TYPES.contains(s)) {
            return Ok(Val::owned(
                format!("ScalarType::{st}"),
                CxxType::ScalarType,
                Prec::Postfix,
            ));
        }
        if ns.is_some_and(|n| n.ends_with("MemoryFormat")) && MEMORY_FORMATS.contains(&name) {
            return Ok(Val::owned(
                format!("{aten}::native::MemoryFormat::{name}"),
                CxxType::MemoryFormat,
                Prec::Postfix,
            ));
        }
        if name == "kStrided" || ns.is_some_and(|n| n.ends_with("Layout")) && name == "Strided" {
            return Ok(Val::owned(
                format!("{aten}::native::Layout::Strided"),
                CxxType::Layout,
                Prec::Postfix,
            ));
        }
        if name == "M_PI" {
            return Ok(Val::owned(
                "std::f64::consts::PI",
                CxxType::Float,
                Prec::Postfix,
            ));
        }
        Err(Refusal::UnknownName(path.to_string()))
    }

    fn typed_brace(&self, ty: &TypeName, items: &[Expr]) -> R<Val> {
        let (name, _) = unqualify(&ty.path);
        let items = items.iter().map(|i| self.expr(i)).collect::<R<Vec<_>>>()?;
        match (name, ty.args.as_slice()) {
            ("vector" | "SmallVector" | "DimVector" | "SymDimVector", _) => {
                let mut xs = Vec::new();
                for i in &items {
                    let (r, _) = self.convert(i, &CxxType::Int).ok_or_else(|| {
                        Refusal::TypeMismatch(format!("a {} in an integer list", i.describe()))
                    })?;
                    xs.push(r);
                }
                Ok(Val::owned(
                    format!("vec![{}]", xs.join(", ")),
                    CxxType::IntList,
                    Prec::Postfix,
                ))
            }
            ("SymInt", []) if items.len() == 1 => self.to_int(&items[0]),
            _ => unsupported(format!("the initialiser `{ty}{{...}}`")),
        }
    }

    fn to_int(&self, v: &Val) -> R<Val> {
        let (r, _) = self
            .convert(v, &CxxType::Int)
            .ok_or_else(|| Refusal::TypeMismatch(format!("{} is not an integer", v.describe())))?;
        Ok(Val {
            special: v.special.clone(),
            ..Val::owned(r, CxxType::Int, v.prec)
        })
    }

    fn cast(&self, ty: &TypeName, e: &Expr) -> R<Val> {
        let v = self.expr(e)?;
        let (name, _) = unqualify(&ty.path);
        let int = matches!(
            name,
            "int64_t" | "int" | "long" | "long long" | "size_t" | "int32_t" | "SymInt"
        );
        let float = matches!(name, "double" | "float");
        match (&v.ty, int, float) {
            (CxxType::Int, true, _) | (CxxType::Float, _, true) => Ok(v),
            (CxxType::Float, true, _) => Ok(Val::owned(
                format!("{} as i64", v.at(Prec::Cast)),
                CxxType::Int,
                Prec::Cast,
            )),
            (CxxType::Int, _, true) => Ok(Val::owned(
                format!("{} as f64", v.at(Prec::Cast)),
                CxxType::Float,
                Prec::Cast,
            )),
            (CxxType::Bool, true, _) => Ok(Val::owned(
                format!("i64::from({})", v.rust),
                CxxType::Int,
                Prec::Postfix,
            )),
            _ => mismatch(format!("static_cast<{ty}> of {}", v.describe())),
        }
    }

    fn index(&self, base: &Expr, index: &Expr) -> R<Val> {
        let b = self.expr(base)?;
        let Expr::Int(i) = index else {
            return unsupported("indexing with a computed index");
        };
        // Only the backward node's own lists have a length known when the code is generated
        // (`grads` one per output, `grad_input_mask` one per input with a formula), so only
        // they are indexed without a runtime check.
        let elem = match b.ty {
            CxxType::OptTensorList if b.rust == "grads" => CxxType::OptTensor,
            CxxType::BoolList => CxxType::Bool,
            _ => return unsupported(format!("indexing a {}", b.describe())),
        };
        let form = if b.form == Form::Borrowed || b.form == Form::Place {
            Form::Place
        } else {
            Form::Owned
        };
        Ok(Val::new(
            format!("{}[{i}]", b.at(Prec::Postfix)),
            elem,
            form,
            Prec::Postfix,
        ))
    }

    fn tensor_or_defined(&self, v: &Val) -> R<Val> {
        match v.ty {
            CxxType::Tensor => Ok(v.clone()),
            CxxType::OptTensor => {
                let (r, _) = self.convert(v, &CxxType::Tensor).ok_or_else(|| {
                    Refusal::Unsupported("an optional tensor bound in its borrowed form".into())
                })?;
                Ok(Val::new(r, CxxType::Tensor, Form::Borrowed, Prec::Postfix))
            }
            _ => mismatch(format!("{} is not a tensor", v.describe())),
        }
    }

    fn unary(&self, op: UnaryOp, e: &Expr) -> R<Val> {
        let v = self.expr(e)?;
        match (op, &v.ty) {
            (UnaryOp::Plus, _) => Ok(v),
            (UnaryOp::Neg, CxxType::Int | CxxType::Float) => {
                let special = match v.special {
                    Special::Int(i) => Special::Int(i.wrapping_neg()),
                    Special::Float(x) => Special::Float(-x),
                    _ => Special::None,
                };
                Ok(Val {
                    special,
                    ..Val::owned(format!("-{}", v.at(Prec::Unary)), v.ty.clone(), Prec::Unary)
                })
            }
            (UnaryOp::Neg, CxxType::Tensor | CxxType::OptTensor) => {
                self.call_op("neg", &[self.tensor_or_defined(&v)?], false)
            }
            (UnaryOp::Neg, CxxType::Scalar) => Ok(Val::owned(
                format!("{}.neg()?", v.at(Prec::Postfix)),
                CxxType::Scalar,
                Prec::Postfix,
            )),
            (UnaryOp::Not, CxxType::Bool) => Ok(Val::owned(
                format!("!{}", v.at(Prec::Unary)),
                CxxType::Bool,
                Prec::Unary,
            )),
            (UnaryOp::BitNot, CxxType::Tensor | CxxType::OptTensor) => {
                self.call_op("bitwise_not", &[self.tensor_or_defined(&v)?], false)
            }
            (UnaryOp::BitNot, CxxType::Int) => Ok(Val::owned(
                format!("!{}", v.at(Prec::Unary)),
                CxxType::Int,
                Prec::Unary,
            )),
            _ => mismatch(format!("unary operator on {}", v.describe())),
        }
    }

    fn is_tensor(v: &Val) -> bool {
        matches!(v.ty, CxxType::Tensor | CxxType::OptTensor)
    }

    fn is_number(v: &Val) -> bool {
        matches!(
            v.ty,
            CxxType::Int | CxxType::Float | CxxType::Scalar | CxxType::Complex | CxxType::Bool
        )
    }

    fn binary(&self, op: BinaryOp, l: &Expr, r: &Expr) -> R<Val> {
        use BinaryOp::*;
        let a = self.expr(l)?;
        let b = self.expr(r)?;
        if Self::is_tensor(&a) || Self::is_tensor(&b) {
            return self.tensor_binary(op, a, b);
        }
        let rust_op = |p: Prec, ty: CxxType, a: &str, b: &str| -> Val {
            Val::owned(format!("{a} {} {b}", op.symbol()), ty, p)
        };
        match (op, &a.ty, &b.ty) {
            (And | Or, CxxType::Bool, CxxType::Bool) => {
                let p = if op == And { Prec::And } else { Prec::Or };
                Ok(rust_op(p, CxxType::Bool, &a.at(p), &b.at(p.next())))
            }
            (_, CxxType::Int | CxxType::Float, CxxType::Int | CxxType::Float) => {
                let float = a.ty == CxxType::Float || b.ty == CxxType::Float;
                let (ty, conv) = if float {
                    (CxxType::Float, CxxType::Float)
                } else {
                    (CxxType::Int, CxxType::Int)
                };
                let (prec, result) = match op {
                    Mul | Div | Rem => (Prec::Mul, ty),
                    Add | Sub => (Prec::Add, ty),
                    Lt | Le | Gt | Ge | Eq | Ne => (Prec::Cmp, CxxType::Bool),
                    _ => return mismatch(format!("`{}` on numbers", op.symbol())),
                };
                let operand = |v: &Val, min: Prec| -> R<String> {
                    let (s, _) = self.convert(v, &conv).ok_or_else(|| {
                        Refusal::TypeMismatch(format!("{} in arithmetic", v.describe()))
                    })?;
                    // A converted operand (`x as f64`) has the cast's precedence.
                    let p = if s == v.rust { v.prec } else { Prec::Cast };
                    Ok(if p < min { format!("({s})") } else { s })
                };
                // Comparisons do not chain in Rust: both sides above Cmp.
                let right_min = if prec == Prec::Cmp {
                    Prec::BitOr
                } else {
                    prec.next()
                };
                let left_min = if prec == Prec::Cmp { Prec::BitOr } else { prec };
                Ok(rust_op(
                    prec,
                    result,
                    &operand(&a, left_min)?,
                    &operand(&b, right_min)?,
                ))
            }
            (Add | Sub | Mul | Div, CxxType::Int | CxxType::Float | CxxType::Complex, _)
                if a.ty == CxxType::Complex || b.ty == CxxType::Complex =>
            {
                if !matches!(b.ty, CxxType::Int | CxxType::Float | CxxType::Complex) {
                    return mismatch(format!("{} {} {}", a.describe(), op.symbol(), b.describe()));
                }
                // num_complex's operators take an `f64` on either side.
                let operand = |v: &Val, min: Prec| -> String {
                    match (&v.ty, &v.special) {
                        (CxxType::Int, Special::Int(i)) => format!("{:?}", *i as f64),
                        (CxxType::Int, _) => format!("({} as f64)", v.at(Prec::Cast)),
                        _ => v.at(min),
                    }
                };
                let prec = if matches!(op, Mul | Div) {
                    Prec::Mul
                } else {
                    Prec::Add
                };
                Ok(rust_op(
                    prec,
                    CxxType::Complex,
                    &operand(&a, prec),
                    &operand(&b, prec.next()),
                ))
            }
            (Eq | Ne, CxxType::ScalarType, CxxType::ScalarType)
            | (Eq | Ne, CxxType::Bool, CxxType::Bool) => Ok(rust_op(
                Prec::Cmp,
                CxxType::Bool,
                &a.at(Prec::BitOr),
                &b.at(Prec::BitOr),
            )),
            _ => mismatch(format!("{} {} {}", a.describe(), op.symbol(), b.describe())),
        }
    }

    /// C++'s Tensor operators (ATen's TensorOperators.h).
    fn tensor_binary(&self, op: BinaryOp, a: Val, b: Val) -> R<Val> {
        use BinaryOp::*;
        let name = match op {
            Add => "add",
            Sub => "sub",
            Mul => "mul",
            Div => "div",
            Rem => "remainder",
            Lt => "lt",
            Le => "le",
            Gt => "gt",
            Ge => "ge",
            Eq => "eq",
            Ne => "ne",
            BitAnd => "bitwise_and",
            BitOr => "bitwise_or",
            BitXor => "bitwise_xor",
            And | Or => return mismatch(format!("`{}` on tensors", op.symbol())),
        };
        if Self::is_tensor(&a) {
            let a = self.tensor_or_defined(&a)?;
            let b = if Self::is_tensor(&b) {
                self.tensor_or_defined(&b)?
            } else {
                b
            };
            return self.call_op(name, &[a, b], false);
        }
        if !Self::is_number(&a) {
            return mismatch(format!("{} {} Tensor", a.describe(), op.symbol()));
        }
        let t = self.tensor_or_defined(&b)?;
        // `scalar op tensor`: `+` and `*` commute; `-` and `/` fill a tensor like the other
        // operand with the scalar (`empty_like(y).fill_(x).sub_(y)`), as `full_like(y, x)`.
        match op {
            Add | Mul => self.call_op(name, &[t, a], false),
            Sub => self.call_op("rsub", &[t, a], false),
            // A comparison with the number first is the mirrored one (`x < t` is `t > x`).
            Lt => self.call_op("gt", &[t, a], false),
            Le => self.call_op("ge", &[t, a], false),
            Gt => self.call_op("lt", &[t, a], false),
            Ge => self.call_op("le", &[t, a], false),
            Eq | Ne => self.call_op(name, &[t, a], false),
            Div => {
                let filled = self.call_op("full_like", &[t.clone(), a], false)?;
                self.call_op("div", &[filled, t], false)
            }
            _ => mismatch(format!("{} {} Tensor", a.describe(), op.symbol())),
        }
    }

    fn ternary(&self, c: &Expr, t: &Expr, f: &Expr) -> R<Val> {
        let c = self.expr(c)?;
        let cond = match c.ty {
            CxxType::Bool => c.rust.clone(),
            CxxType::Int => format!("{} != 0", c.at(Prec::BitOr)),
            _ => return mismatch(format!("a {} condition", c.describe())),
        };
        let a = self.expr(t)?;
        let b = self.expr(f)?;
        let ty = unify(&a.ty, &b.ty).ok_or_else(|| {
            Refusal::TypeMismatch(format!(
                "the branches {} and {} of `?:`",
                a.describe(),
                b.describe()
            ))
        })?;
        let ra = self.coerce_owned(&a, &ty)?;
        let rb = self.coerce_owned(&b, &ty)?;
        Ok(Val::owned(
            format!("if {cond} {{ {ra} }} else {{ {rb} }}"),
            ty,
            Prec::Block,
        ))
    }

    /// The owned value of `v` as type `ty` (a branch of `?:`).
    fn coerce_owned(&self, v: &Val, ty: &CxxType) -> R<String> {
        if v.ty == *ty {
            return self.own(v);
        }
        match (&v.ty, ty) {
            (CxxType::Nullopt, t) if t.is_optional() => Ok("None".into()),
            (CxxType::Int, CxxType::Float) => Ok(self.convert(v, ty).expect("int to float").0),
            (from, to) if to.unwrapped().as_ref() == Some(from) => {
                Ok(format!("Some({})", self.own(v)?))
            }
            (CxxType::Tuple(from), CxxType::Tuple(to)) if from.len() == to.len() => {
                let names: Vec<String> = (0..from.len()).map(|k| format!("t{k}")).collect();
                let items = from
                    .iter()
                    .zip(to)
                    .zip(&names)
                    .map(|((f, t), n)| {
                        if f == t {
                            Ok(n.clone())
                        } else if t.unwrapped().as_ref() == Some(f) {
                            Ok(format!("Some({n})"))
                        } else {
                            mismatch(format!("{} as {ty}", v.describe()))
                        }
                    })
                    .collect::<R<Vec<_>>>()?;
                Ok(format!(
                    "{{ let ({}) = {}; ({}) }}",
                    names.join(", "),
                    self.own(v)?,
                    items.join(", ")
                ))
            }
            _ => mismatch(format!("{} as {ty}", v.describe())),
        }
    }

    fn call(&self, callee: &Expr, args: &[Expr]) -> R<Val> {
        match callee {
            Expr::Name { path, targs } => self.function(path, targs, args),
            Expr::Member { base, name, .. } => self.method(base, name, args),
            _ => unsupported("calling a computed function"),
        }
    }

    fn args(&self, args: &[Expr]) -> R<Vec<Val>> {
        args.iter().map(|a| self.expr(a)).collect()
    }

    fn function(&self, path: &str, targs: &[TemplateArg], args: &[Expr]) -> R<Val> {
        let (raw, ns) = unqualify(path);
        let name = strip_symint(raw);
        let std = ns.is_some_and(|n| n == "std");
        // Builtins of std / c10.
        match (name, targs, args) {
            ("get", [TemplateArg::Int(k)], [t]) if std => {
                let v = self.expr(t)?;
                let CxxType::Tuple(ts) = &v.ty else {
                    return mismatch(format!("std::get of {}", v.describe()));
                };
                let k = usize::try_from(*k)
                    .ok()
                    .filter(|k| *k < ts.len())
                    .ok_or_else(|| {
                        Refusal::TypeMismatch(format!("std::get<{k}> of a {}-tuple", ts.len()))
                    })?;
                return Ok(Val::new(
                    format!("{}.{k}", v.at(Prec::Postfix)),
                    ts[k].clone(),
                    v.form,
                    Prec::Postfix,
                ));
            }
            ("tuple", ts, []) if std => {
                let mut items = Vec::new();
                let mut tys = Vec::new();
                for t in ts {
                    match t {
                        TemplateArg::Type(t) if unqualify(&t.path).0 == "Tensor" => {
                            items.push("None");
                            tys.push(CxxType::OptTensor);
                        }
                        _ => return unsupported("a default-constructed tuple of non-tensors"),
                    }
                }
                return Ok(Val::owned(
                    format!("({})", items.join(", ")),
                    CxxType::Tuple(tys),
                    Prec::Postfix,
                ));
            }
            // `IntArrayRef({..})`: the list itself.
            ("IntArrayRef", [], [list]) if matches!(list, Expr::Brace { ty: None, .. }) => {
                return self.expr(list);
            }
            ("Tensor", [], []) => {
                return Ok(Val::owned("None", CxxType::OptTensor, Prec::Postfix));
            }
            ("make_tuple" | "tuple", [], _) if std => {
                let vs = self.args(args)?;
                let items = vs.iter().map(|v| self.own(v)).collect::<R<Vec<_>>>()?;
                return Ok(Val::owned(
                    format!("({})", items.join(", ")),
                    CxxType::Tuple(vs.into_iter().map(|v| v.ty).collect()),
                    Prec::Postfix,
                ));
            }
            ("Scalar", [], [x]) => {
                let v = self.expr(x)?;
                let (r, _) = self
                    .convert(&v, &CxxType::Scalar)
                    .ok_or_else(|| Refusal::TypeMismatch(format!("Scalar({})", v.describe())))?;
                let owned = r
                    .strip_prefix('&')
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("*{r}"));
                return Ok(Val::owned(owned, CxxType::Scalar, Prec::Postfix));
            }
            (
                "toRealValueType" | "toComplexType" | "isComplexType" | "isFloatingType"
                | "isIntegralType",
                [],
                [x],
            ) => {
                let v = self.expr(x)?;
                if v.ty != CxxType::ScalarType {
                    return mismatch(format!("{name}({})", v.describe()));
                }
                let (m, ty) = match name {
                    "toRealValueType" => ("to_real", CxxType::ScalarType),
                    "toComplexType" => ("to_complex", CxxType::ScalarType),
                    "isComplexType" => ("is_complex", CxxType::Bool),
                    "isFloatingType" => ("is_floating_point", CxxType::Bool),
                    _ => return unsupported(format!("`{name}`")),
                };
                return Ok(Val::owned(
                    format!("{}.{m}()", v.at(Prec::Postfix)),
                    ty,
                    Prec::Postfix,
                ));
            }
            ("is_enabled", [], []) if ns == Some("GradMode") => {
                return Ok(Val::owned(
                    "crate::grad_mode::GradMode::is_enabled()",
                    CxxType::Bool,
                    Prec::Postfix,
                ));
            }
            ("not_implemented", [], [Expr::Str(s)]) => {
                // An expression of the formula's type that raises torch's error.
                return Ok(Val::owned(
                    format!("Err::<Tensor, _>(not_implemented({s:?}))?"),
                    CxxType::Tensor,
                    Prec::Postfix,
                ));
            }
            ("sqrt" | "abs" | "exp" | "log", [], [x]) if std => {
                let v = self.expr(x)?;
                let (r, _) = self.convert(&v, &CxxType::Float).ok_or_else(|| {
                    Refusal::TypeMismatch(format!("std::{name}({})", v.describe()))
                })?;
                let r = if r == v.rust {
                    v.at(Prec::Postfix)
                } else {
                    format!("({r})")
                };
                return Ok(Val::owned(
                    format!("{r}.{name}()"),
                    CxxType::Float,
                    Prec::Postfix,
                ));
            }
            ("max" | "min", [], [x, y]) if std => {
                let (a, b) = (self.expr(x)?, self.expr(y)?);
                if a.ty != CxxType::Int || b.ty != CxxType::Int {
                    return mismatch(format!(
                        "std::{name} of {} and {}",
                        a.describe(),
                        b.describe()
                    ));
                }
                return Ok(Val::owned(
                    format!("{}.{name}({})", a.at(Prec::Postfix), b.rust),
                    CxxType::Int,
                    Prec::Postfix,
                ));
            }
            _ => {}
        }
        if !targs.is_empty() {
            return unsupported(format!("the template call `{path}<..>`"));
        }
        if ns.is_some_and(|n| !matches!(n, "at" | "at::native" | "torch" | "details"))
            && !matches!(ns, Some("c10"))
        {
            return unsupported(format!("the function `{path}`"));
        }
        let vals = self.args(args)?;
        let mut helpers = self.env.manual.candidates(name);
        if helpers.is_empty() {
            helpers = self.env.manual.candidates(raw);
        }
        let mut helper_err = None;
        if !helpers.is_empty() {
            match self.call_manual(name, &helpers, &vals) {
                Ok(v) => return Ok(v),
                Err(e) => helper_err = Some(e),
            }
        }
        if self.env.ops.declares(name) {
            return match self.call_op(name, &vals, false) {
                Err(e) => Err(helper_err.unwrap_or(e)),
                ok => ok,
            };
        }
        if let Some(e) = helper_err {
            return Err(e);
        }
        Err(match ns {
            Some(_) => Refusal::UndeclaredOperator(name.to_string()),
            None => Refusal::MissingHelper(name.to_string()),
        })
    }

    fn method(&self, base: &Expr, raw: &str, args: &[Expr]) -> R<Val> {
        let recv = self.expr(base)?;
        let name = strip_symint(raw);
        let vals = self.args(args)?;
        match &recv.ty {
            CxxType::Tensor | CxxType::OptTensor => self.tensor_method(recv, name, vals),
            CxxType::Scalar => self.scalar_method(recv, name, vals),
            CxxType::IntList | CxxType::TensorList | CxxType::OptTensorList | CxxType::BoolList => {
                match (name, vals.as_slice()) {
                    ("size", []) => Ok(Val::owned(
                        format!("{}.len() as i64", recv.at(Prec::Postfix)),
                        CxxType::Int,
                        Prec::Cast,
                    )),
                    ("empty", []) => Ok(Val::owned(
                        format!("{}.is_empty()", recv.at(Prec::Postfix)),
                        CxxType::Bool,
                        Prec::Postfix,
                    )),
                    ("vec", []) if recv.ty == CxxType::IntList => {
                        Ok(Val::owned(self.own(&recv)?, CxxType::IntList, recv.prec))
                    }
                    _ => unsupported(format!("the list method `.{raw}()`")),
                }
            }
            t if t.is_optional() => match (name, vals.as_slice()) {
                ("has_value", []) => Ok(Val::owned(
                    format!("{}.is_some()", recv.at(Prec::Postfix)),
                    CxxType::Bool,
                    Prec::Postfix,
                )),
                ("value", []) => {
                    // C++'s `.value()` throws `bad_optional_access` on an empty optional.
                    let inner = t.unwrapped().expect("optional");
                    if !inner.is_copy() {
                        return unsupported(format!("`.value()` of a {t}"));
                    }
                    Ok(Val::owned(
                        format!(
                            "{}.ok_or_else(|| ratten_core::Error::runtime(\"bad optional access\"))?",
                            recv.at(Prec::Postfix)
                        ),
                        inner,
                        Prec::Postfix,
                    ))
                }
                ("value_or", [d]) if *t == CxxType::OptIntList => {
                    let (d, _) = self.convert(d, &CxxType::IntList).ok_or_else(|| {
                        Refusal::TypeMismatch(format!("value_or({})", d.describe()))
                    })?;
                    Ok(Val::new(
                        format!("{}.unwrap_or({d})", recv.at(Prec::Postfix)),
                        CxxType::IntList,
                        Form::Borrowed,
                        Prec::Postfix,
                    ))
                }
                ("value_or", [d]) => {
                    let inner = t.unwrapped().expect("optional");
                    if !inner.is_copy() {
                        return unsupported(format!("`.value_or()` of a {t}"));
                    }
                    let (d, _) = self.convert(d, &inner).ok_or_else(|| {
                        Refusal::TypeMismatch(format!("value_or({})", d.describe()))
                    })?;
                    Ok(Val::owned(
                        format!("{}.unwrap_or({d})", recv.at(Prec::Postfix)),
                        inner,
                        Prec::Postfix,
                    ))
                }
                _ => unsupported(format!("the optional method `.{raw}()`")),
            },
            t => mismatch(format!("the method `.{raw}()` of a {t}")),
        }
    }

    fn tensor_method(&self, recv: Val, name: &str, args: Vec<Val>) -> R<Val> {
        if name == "defined" && args.is_empty() {
            return Ok(match recv.ty {
                CxxType::OptTensor => Val::owned(
                    format!("{}.is_some()", recv.at(Prec::Postfix)),
                    CxxType::Bool,
                    Prec::Postfix,
                ),
                _ => Val::owned("true", CxxType::Bool, Prec::Postfix),
            });
        }
        let t = self.tensor_or_defined(&recv)?;
        let r = t.at(Prec::Postfix);
        let v = |rust: String, ty: CxxType, prec: Prec| Ok(Val::owned(rust, ty, prec));
        match (name, args.as_slice()) {
            ("sizes" | "sym_sizes", []) => {
                return v(
                    format!("{r}.sizes().to_vec()"),
                    CxxType::IntList,
                    Prec::Postfix,
                )
            }
            ("strides" | "sym_strides", []) => {
                return v(
                    format!("{r}.strides().to_vec()"),
                    CxxType::IntList,
                    Prec::Postfix,
                )
            }
            ("size" | "stride" | "sym_size" | "sym_stride", [d]) => {
                let (d, _) = self.convert(d, &CxxType::Int).ok_or_else(|| {
                    Refusal::TypeMismatch(format!("Tensor::{name}({})", d.describe()))
                })?;
                let name = name.trim_start_matches("sym_");
                return v(format!("{r}.{name}({d})?"), CxxType::Int, Prec::Postfix);
            }
            ("dim" | "ndimension", []) => {
                return v(format!("{r}.dim() as i64"), CxxType::Int, Prec::Cast)
            }
            ("numel" | "sym_numel", []) => {
                return v(format!("{r}.numel()"), CxxType::Int, Prec::Postfix)
            }
            ("scalar_type" | "dtype", []) => {
                return v(
                    format!("{r}.scalar_type()"),
                    CxxType::ScalarType,
                    Prec::Postfix,
                )
            }
            ("device", []) => return v(format!("{r}.device()"), CxxType::Device, Prec::Postfix),
            ("is_complex" | "is_floating_point", []) => {
                return v(
                    format!("{r}.scalar_type().{name}()"),
                    CxxType::Bool,
                    Prec::Postfix,
                )
            }
            ("is_contiguous", []) => {
                return v(format!("{r}.is_contiguous()"), CxxType::Bool, Prec::Postfix)
            }
            // ratten has no conjugate views: no tensor has the conjugate bit.
            ("is_conj", []) => return v("false".into(), CxxType::Bool, Prec::Postfix),
            ("layout", []) => {
                return v(
                    format!("{}::native::Layout::Strided", self.env.aten),
                    CxxType::Layout,
                    Prec::Postfix,
                )
            }
            ("options", []) => {
                return Ok(Val {
                    special: Special::Options {
                        dtype: format!("Some({r}.scalar_type())"),
                        device: format!("Some({r}.device())"),
                    },
                    ..Val::owned(
                        format!(
                            "TensorOptions::new().dtype({r}.scalar_type()).device({r}.device())"
                        ),
                        CxxType::TensorOptions,
                        Prec::Postfix,
                    )
                })
            }
            _ => {}
        }
        let mut all = vec![t];
        all.extend(args);
        self.call_op(name, &all, true)
    }

    fn scalar_method(&self, recv: Val, name: &str, args: Vec<Val>) -> R<Val> {
        let r = recv.at(Prec::Postfix);
        let (rust, ty) = match (name, args.as_slice()) {
            ("conj", []) => (format!("{r}.conj()"), CxxType::Scalar),
            ("toDouble", []) => (format!("{r}.to_double()?"), CxxType::Float),
            // C++'s `float`, widened again where a double is used.
            ("toFloat", []) => (
                format!("f64::from({r}.to_double()? as f32)"),
                CxxType::Float,
            ),
            ("toLong", []) => (format!("{r}.to_long()?"), CxxType::Int),
            ("toComplexDouble", []) => (format!("{r}.to_complex_double()?"), CxxType::Complex),
            ("toBool", []) => (format!("{r}.to_bool()"), CxxType::Bool),
            ("isComplex", []) => (format!("{r}.is_complex()"), CxxType::Bool),
            ("isFloatingPoint", []) => (format!("{r}.is_floating_point()"), CxxType::Bool),
            ("isBoolean", []) => (format!("{r}.is_boolean()"), CxxType::Bool),
            ("isIntegral", [b]) if b.ty == CxxType::Bool => {
                (format!("{r}.is_integral({})", b.rust), CxxType::Bool)
            }
            ("equal", [x]) => {
                let (x, _) = self.convert(x, &CxxType::Float).ok_or_else(|| {
                    Refusal::TypeMismatch(format!("Scalar::equal({})", x.describe()))
                })?;
                (format!("{r}.equal({x})"), CxxType::Bool)
            }
            _ => return unsupported(format!("the Scalar method `.{name}()`")),
        };
        Ok(Val::owned(rust, ty, Prec::Postfix))
    }
}

impl Prec {
    /// The next tighter level (the right operand of a left-associative operator).
    fn next(self) -> Prec {
        use Prec::*;
        match self {
            Block => Or,
            Or => And,
            And => Cmp,
            Cmp => BitOr,
            BitOr => BitXor,
            BitXor => BitAnd,
            BitAnd => Add,
            Add => Mul,
            Mul => Cast,
            Cast => Unary,
            Unary | Postfix => Postfix,
        }
    }
}

/// The common type of two `?:` branches.
fn unify(a: &CxxType, b: &CxxType) -> Option<CxxType> {
    use CxxType::*;
    if a == b {
        return Some(a.clone());
    }
    match (a, b) {
        (Nullopt, t) | (t, Nullopt) => t.optional().or_else(|| t.is_optional().then(|| t.clone())),
        (Int, Float) | (Float, Int) => Some(Float),
        (x, o) | (o, x) if o.unwrapped().as_ref() == Some(x) => Some(o.clone()),
        // `cond ? op_backward(..) : std::tuple<Tensor, Tensor, Tensor>()`: element-wise.
        (Tuple(xs), Tuple(ys)) if xs.len() == ys.len() => xs
            .iter()
            .zip(ys)
            .map(|(x, y)| unify(x, y))
            .collect::<Option<Vec<_>>>()
            .map(Tuple),
        _ => None,
    }
}

/// Translates one formula in `env` to an owned Rust value.
pub fn translate(expr: &str, env: &Env) -> Result<Translated, Refusal> {
    let e = cxx_parser::parse(expr).map_err(Refusal::Parse)?;
    let cx = Cx { env };
    let v = cx.expr(&e)?;
    if let Special::Brace(items) = &v.special {
        if !items.is_empty() && items.iter().all(|i| i.ty == CxxType::Int) {
            return Ok(Translated {
                rust: cx.own(&v)?,
                ty: CxxType::IntList,
            });
        }
        return unsupported(format!("the list {} as a formula's value", v.describe()));
    }
    if matches!(v.special, Special::Int(_) | Special::Float(_)) && v.prec < Prec::Postfix {
        // `-1`: a literal keeps its sign inside the value.
        return Ok(Translated {
            rust: v.rust,
            ty: v.ty,
        });
    }
    Ok(Translated {
        rust: cx.own(&v)?,
        ty: v.ty,
    })
}

#[cfg(test)]
mod tests;
