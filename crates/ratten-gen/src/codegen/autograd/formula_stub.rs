//! A small translator of derivatives.yaml's C++ expressions into Rust, with the interface of
//! the full translator (`translate(expr, env) -> Result<Translated, Refusal>`): it takes
//! names, integer and boolean literals, parentheses, unary minus, the tensor operators
//! `* / + -`, the size and type queries that backward nodes save (`x.sym_sizes()`,
//! `x.scalar_type()`, `x.dim()`, `x.sym_numel()`, `x.options()`, `x.sym_size(d)`) and calls of
//! FunctionsManual helpers with tensor results (`sum_backward(grad, ...)`, `_symint` dropped).
//! Anything else (method calls on tensors, ternaries, `{...}` lists, `::` names, indexing) is
//! refused with the part it could not take, and the emitters turn a refused formula into a
//! not-implemented error naming it.
//!
//! Conventions shared with the emitters (Note [Formula environments]): an [`Env`] binds a C++
//! name to a Rust expression in the form a helper is passed (`&Tensor` for `Tensor`,
//! `Option<&Tensor>`, `&[i64]` or `&Vec<i64>`, `&Scalar`, plain `i64` / `bool` /
//! `ScalarType`, ...); a [`Translated`] expression evaluates to an owned value of its type
//! (`Tensor`, `Vec<i64>`, `i64`, ...), with `?` after every fallible call.

use std::collections::BTreeMap;
use std::fmt;

/// The C++ type of a bound name or of an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CxxType {
    Tensor,
    OptTensor,
    TensorList,
    /// A list whose elements may be undefined (`grads`, `Tensor?[]`).
    OptTensorList,
    IntList,
    OptIntList,
    Int,
    OptInt,
    Double,
    OptDouble,
    Bool,
    BoolList,
    Scalar,
    OptScalar,
    ScalarType,
    OptScalarType,
    String,
    OptString,
    TensorOptions,
    Layout,
    MemoryFormat,
    OptMemoryFormat,
    /// A multi-variable formula's result (`std::tuple<Tensor, Tensor>`).
    Tuple(Vec<CxxType>),
}

impl CxxType {
    /// The owned Rust type of a value of this type (what a backward node stores, what a
    /// translated expression evaluates to); `aten` names ratten-aten.
    pub fn owned_rust(&self, aten: &str) -> String {
        match self {
            CxxType::Tensor => "Tensor".into(),
            CxxType::OptTensor => "Option<Tensor>".into(),
            CxxType::TensorList => "Vec<Tensor>".into(),
            CxxType::OptTensorList => "Vec<Option<Tensor>>".into(),
            CxxType::IntList => "Vec<i64>".into(),
            CxxType::OptIntList => "Option<Vec<i64>>".into(),
            CxxType::Int => "i64".into(),
            CxxType::OptInt => "Option<i64>".into(),
            CxxType::Double => "f64".into(),
            CxxType::OptDouble => "Option<f64>".into(),
            CxxType::Bool => "bool".into(),
            CxxType::BoolList => "Vec<bool>".into(),
            CxxType::Scalar => "Scalar".into(),
            CxxType::OptScalar => "Option<Scalar>".into(),
            CxxType::ScalarType => "ScalarType".into(),
            CxxType::OptScalarType => "Option<ScalarType>".into(),
            CxxType::String => "String".into(),
            CxxType::OptString => "Option<String>".into(),
            CxxType::TensorOptions => "TensorOptions".into(),
            CxxType::Layout => format!("{aten}::native::Layout"),
            CxxType::MemoryFormat => format!("{aten}::native::MemoryFormat"),
            CxxType::OptMemoryFormat => format!("Option<{aten}::native::MemoryFormat>"),
            CxxType::Tuple(ts) => format!(
                "({})",
                ts.iter()
                    .map(|t| t.owned_rust(aten))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// `place` (an owned value of this type) in the form helpers are passed.
    pub fn passed(&self, place: &str) -> String {
        match self {
            CxxType::Tensor
            | CxxType::TensorList
            | CxxType::OptTensorList
            | CxxType::IntList
            | CxxType::BoolList
            | CxxType::Scalar
            | CxxType::String
            | CxxType::TensorOptions => format!("&{place}"),
            CxxType::OptTensor | CxxType::OptScalar => format!("{place}.as_ref()"),
            CxxType::OptIntList | CxxType::OptString => format!("{place}.as_deref()"),
            _ => place.to_string(),
        }
    }

    /// An owned copy of a value in passed form `expr`.
    pub fn to_owned_expr(&self, expr: &str) -> String {
        match self {
            CxxType::Tensor | CxxType::Scalar | CxxType::TensorOptions => {
                format!("{expr}.clone()")
            }
            CxxType::OptTensor | CxxType::OptScalar => format!("{expr}.cloned()"),
            CxxType::IntList | CxxType::BoolList | CxxType::TensorList | CxxType::OptTensorList => {
                format!("{expr}.to_vec()")
            }
            CxxType::String => format!("{expr}.to_string()"),
            CxxType::OptIntList => format!("{expr}.map(|v| v.to_vec())"),
            CxxType::OptString => format!("{expr}.map(str::to_string)"),
            _ => expr.to_string(),
        }
    }
}

/// Names the expression may use, bound to Rust expressions (Note [Formula environments]).
#[derive(Debug, Clone, Default)]
pub struct Env {
    bindings: BTreeMap<String, (String, CxxType)>,
}

impl Env {
    pub fn new() -> Env {
        Env::default()
    }

    /// Binds C++ name `name` to Rust expression `rust` (in passed form) of type `ty`.
    pub fn bind(&mut self, name: impl Into<String>, rust: impl Into<String>, ty: CxxType) {
        self.bindings.insert(name.into(), (rust.into(), ty));
    }

    pub fn get(&self, name: &str) -> Option<&(String, CxxType)> {
        self.bindings.get(name)
    }
}

/// A translated expression: Rust evaluating to an owned value of type `ty`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translated {
    pub rust: String,
    pub ty: CxxType,
}

/// Why an expression was not translated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The part of the expression that was not taken.
    pub at: String,
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at `{}`)", self.reason, self.at)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Int(i64),
    Punct(&'static str),
}

fn tokenize(s: &str) -> Result<Vec<Tok>, Refusal> {
    const PUNCT: &[&str] = &["::", "(", ")", ",", ".", "*", "/", "+", "-"];
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[st..i].to_string()));
        } else if c.is_ascii_digit() {
            let st = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i < b.len() && (b[i] == b'.' || b[i].is_ascii_alphabetic()) {
                return Err(refuse(&s[st..], "only integer literals are taken"));
            }
            let v = s[st..i]
                .parse()
                .map_err(|_| refuse(&s[st..i], "integer literal out of range"))?;
            out.push(Tok::Int(v));
        } else if let Some(p) = PUNCT.iter().find(|p| s[i..].starts_with(**p)) {
            out.push(Tok::Punct(p));
            i += p.len();
        } else {
            return Err(refuse(&s[i..], "unsupported token"));
        }
    }
    Ok(out)
}

fn refuse(at: &str, reason: &str) -> Refusal {
    Refusal {
        at: at.to_string(),
        reason: reason.to_string(),
    }
}

struct Parser<'e> {
    toks: Vec<Tok>,
    pos: usize,
    env: &'e Env,
    text: String,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Punct(q)) if *q == p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn fail<T>(&self, reason: &str) -> Result<T, Refusal> {
        let at = self
            .peek()
            .map(|t| format!("{t:?}"))
            .unwrap_or_else(|| "end".into());
        Err(refuse(&format!("{} near {at}", self.text), reason))
    }

    fn expr(&mut self) -> Result<Translated, Refusal> {
        let mut lhs = self.term()?;
        loop {
            let op = if self.eat("+") {
                "add_Tensor"
            } else if self.eat("-") {
                "sub_Tensor"
            } else {
                return Ok(lhs);
            };
            let rhs = self.term()?;
            lhs = binary(op, lhs, rhs, true, self.env)?;
        }
    }

    fn term(&mut self) -> Result<Translated, Refusal> {
        let mut lhs = self.unary()?;
        loop {
            let op = if self.eat("*") {
                "mul_Tensor"
            } else if self.eat("/") {
                "div_Tensor"
            } else {
                return Ok(lhs);
            };
            let rhs = self.unary()?;
            lhs = binary(op, lhs, rhs, false, self.env)?;
        }
    }

    fn unary(&mut self) -> Result<Translated, Refusal> {
        if self.eat("-") {
            let x = self.unary()?;
            return match x.ty {
                CxxType::Tensor => Ok(Translated {
                    rust: format!("ops::neg::call({})?", pass(&x, self.env)),
                    ty: CxxType::Tensor,
                }),
                CxxType::Int => Ok(Translated {
                    rust: format!("-{}", x.rust),
                    ty: CxxType::Int,
                }),
                _ => self.fail("unary minus of a non-tensor"),
            };
        }
        self.postfix()
    }

    fn args(&mut self) -> Result<Vec<Translated>, Refusal> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(")") {
                return Ok(args);
            }
            if !self.eat(",") {
                return self.fail("expected `,` or `)`");
            }
        }
    }

    fn postfix(&mut self) -> Result<Translated, Refusal> {
        let mut x = self.primary()?;
        while self.eat(".") {
            let Some(Tok::Ident(m)) = self.peek().cloned() else {
                return self.fail("expected a method name");
            };
            self.pos += 1;
            if !self.eat("(") {
                return self.fail("expected a method call");
            }
            let args = self.args()?;
            x = method(&x, &m, &args, self.env).ok_or_else(|| {
                refuse(
                    &format!("{}.{m}(..)", x.rust),
                    "method call not taken by this translator",
                )
            })?;
        }
        Ok(x)
    }

    fn primary(&mut self) -> Result<Translated, Refusal> {
        match self.peek().cloned() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(Translated {
                    rust: v.to_string(),
                    ty: CxxType::Int,
                })
            }
            Some(Tok::Punct("(")) => {
                self.pos += 1;
                let x = self.expr()?;
                if !self.eat(")") {
                    return self.fail("expected `)`");
                }
                Ok(x)
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                if matches!(self.peek(), Some(Tok::Punct("::"))) {
                    return self.fail("qualified names are not taken");
                }
                if self.eat("(") {
                    let args = self.args()?;
                    return helper_call(&name, &args, self.env)
                        .ok_or_else(|| refuse(&name, "call not taken by this translator"));
                }
                match name.as_str() {
                    "true" | "false" => Ok(Translated {
                        rust: name,
                        ty: CxxType::Bool,
                    }),
                    _ => match self.env.get(&name) {
                        Some((rust, ty)) => Ok(Translated {
                            rust: ty.to_owned_expr(rust),
                            ty: ty.clone(),
                        }),
                        None => Err(refuse(&name, "unknown name")),
                    },
                }
            }
            _ => self.fail("expected an expression"),
        }
    }
}

/// A translated value in passed form: a bound name's owned copy (`x.clone()`) is passed as
/// the binding itself.
fn pass(x: &Translated, env: &Env) -> String {
    if let Some((rust, _)) = env
        .bindings
        .values()
        .find(|(rust, ty)| *ty == x.ty && ty.to_owned_expr(rust) == x.rust)
    {
        return rust.clone();
    }
    // `?` binds tighter than `&` and method calls, so no parentheses are needed.
    x.ty.passed(&x.rust)
}

fn binary(
    op: &str,
    lhs: Translated,
    rhs: Translated,
    alpha: bool,
    env: &Env,
) -> Result<Translated, Refusal> {
    match (&lhs.ty, &rhs.ty) {
        (CxxType::Tensor, CxxType::Tensor) => {
            let alpha = if alpha { ", &Scalar::Int(1)" } else { "" };
            Ok(Translated {
                rust: format!(
                    "ops::{op}::call({}, {}{alpha})?",
                    pass(&lhs, env),
                    pass(&rhs, env)
                ),
                ty: CxxType::Tensor,
            })
        }
        (CxxType::Int, CxxType::Int) => {
            let o = match op {
                "add_Tensor" => "+",
                "sub_Tensor" => "-",
                "mul_Tensor" => "*",
                _ => return Err(refuse(&lhs.rust, "integer division is not taken")),
            };
            Ok(Translated {
                rust: format!("({} {o} {})", lhs.rust, rhs.rust),
                ty: CxxType::Int,
            })
        }
        _ => Err(refuse(
            &format!("{} {op} {}", lhs.rust, rhs.rust),
            "operands other than two tensors or two integers",
        )),
    }
}

/// The queries on a tensor whose values backward nodes save.
fn method(x: &Translated, m: &str, args: &[Translated], env: &Env) -> Option<Translated> {
    if x.ty != CxxType::Tensor {
        return None;
    }
    let recv = pass(x, env);
    let (rust, ty) = match (m, args) {
        ("sym_sizes", []) => (format!("{recv}.sizes().to_vec()"), CxxType::IntList),
        ("sym_strides", []) => (format!("{recv}.strides().to_vec()"), CxxType::IntList),
        ("scalar_type", []) => (format!("{recv}.scalar_type()"), CxxType::ScalarType),
        ("dim", []) => (format!("({recv}.dim() as i64)"), CxxType::Int),
        ("sym_numel" | "numel", []) => (format!("{recv}.numel()"), CxxType::Int),
        ("options", []) => (format!("{recv}.options()"), CxxType::TensorOptions),
        ("sym_size", [d]) if d.ty == CxxType::Int => {
            (format!("{recv}.size({})?", d.rust), CxxType::Int)
        }
        _ => return None,
    };
    Some(Translated { rust, ty })
}

/// A FunctionsManual helper returning a tensor: every argument passed in passed form.
fn helper_call(name: &str, args: &[Translated], env: &Env) -> Option<Translated> {
    // FunctionsManual drops torch's `_symint` suffix (ratten's sizes are plain integers).
    let name = name
        .strip_suffix("_symint")
        .unwrap_or(name)
        .replace("_symint_", "_");
    if !name.ends_with("_backward") && name != "handle_r_to_c" {
        return None;
    }
    let args: Vec<String> = args.iter().map(|a| pass(a, env)).collect();
    Some(Translated {
        rust: format!("{name}({})?", args.join(", ")),
        ty: CxxType::Tensor,
    })
}

/// Translates C++ expression `expr` over the names `env` binds.
pub fn translate(expr: &str, env: &Env) -> Result<Translated, Refusal> {
    let mut p = Parser {
        toks: tokenize(expr)?,
        pos: 0,
        env,
        text: expr.trim().to_string(),
    };
    let x = p.expr()?;
    if p.pos != p.toks.len() {
        return p.fail("unexpected trailing input");
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        let mut e = Env::new();
        e.bind("grad", "grad", CxxType::Tensor);
        e.bind("other", "&other", CxxType::Tensor);
        e.bind(
            "self_scalar_type",
            "self.self_scalar_type",
            CxxType::ScalarType,
        );
        e.bind("self_sym_sizes", "&self.self_sym_sizes", CxxType::IntList);
        e.bind("dim", "self.dim.as_deref()", CxxType::OptIntList);
        e.bind("keepdim", "self.keepdim", CxxType::Bool);
        e
    }

    #[test]
    fn trivial_formulas() {
        let e = env();
        assert_eq!(translate("grad", &e).unwrap().rust, "grad.clone()");
        assert_eq!(
            translate("-grad", &e).unwrap().rust,
            "ops::neg::call(grad)?"
        );
        assert_eq!(
            translate("grad * other", &e).unwrap().rust,
            "ops::mul_Tensor::call(grad, &other)?"
        );
        assert_eq!(
            translate("mul_tensor_backward(grad, other, self_scalar_type)", &e)
                .unwrap()
                .rust,
            "mul_tensor_backward(grad, &other, self.self_scalar_type)?"
        );
        assert_eq!(
            translate("sum_backward(grad, self_sym_sizes, dim, keepdim)", &e)
                .unwrap()
                .rust,
            "sum_backward(grad, &self.self_sym_sizes, self.dim.as_deref(), self.keepdim)?"
        );
        let s = translate("self.sym_sizes()", &{
            let mut e = Env::new();
            e.bind("self", "self_", CxxType::Tensor);
            e
        })
        .unwrap();
        assert_eq!(
            (s.rust.as_str(), s.ty),
            ("self_.sizes().to_vec()", CxxType::IntList)
        );
    }

    #[test]
    fn refusals_name_what_was_not_taken() {
        let e = env();
        let r = translate("grad.transpose(0, 1)", &e).unwrap_err();
        assert!(r.to_string().contains("method call"), "{r}");
        assert!(translate("at::zeros({1})", &e).is_err());
        assert!(translate("cond ? grad : other", &e).is_err());
        assert!(translate("unknown_name", &e).is_err());
    }
}
