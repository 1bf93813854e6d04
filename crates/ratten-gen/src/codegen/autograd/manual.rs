//! The signatures of the hand-written FunctionsManual helpers (`sum_backward`,
//! `mm_mat1_backward`, ...), read from the Rust file that defines them
//! (`crates/ratten-autograd/src/functions_manual.rs`): every top-level `pub fn` in rustfmt's
//! layout whose parameter and return types come from the contract's closed set. The file is the
//! one source of these signatures; a formula calling a helper that is not there, or calling it
//! with arguments that do not fit, is not translated.

use std::collections::BTreeMap;

use super::types::{split_top_level, CxxType};

/// One helper: its name and typed parameters, and the `T` of its `Result<T>`.
#[derive(Debug, Clone, PartialEq)]
pub struct ManualFn {
    pub name: String,
    pub params: Vec<(String, CxxType)>,
    pub ret: CxxType,
}

/// The helpers of one FunctionsManual source, and the `pub fn`s that are not helpers with why.
///
/// C++ overloads a helper by its parameter types (`div_tensor_self_backward` of a Tensor or a
/// Scalar `other`); Rust cannot, so an overload is a function of its own name whose doc
/// comment has the line `/// C++ overload of `NAME`.` or which carries `#[doc(alias = "NAME")]`:
/// a formula's `NAME(...)` resolves over
/// `NAME` and its overloads by their parameter types.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManualSignatures {
    pub fns: BTreeMap<String, ManualFn>,
    /// C++ name -> the Rust names of its overloads (besides the function of that name).
    pub overloads: BTreeMap<String, Vec<String>>,
    /// `(name, why)` of each top-level `pub fn` whose signature is outside the closed set.
    pub skipped: Vec<(String, String)>,
}

impl ManualSignatures {
    /// Reads the top-level `pub fn` items of `src` (rustfmt layout: an item starts at column
    /// 0; its signature runs to the `{` that opens its body).
    pub fn parse(src: &str) -> ManualSignatures {
        let mut out = ManualSignatures::default();
        let mut lines = src.lines().peekable();
        let mut overload_of: Option<String> = None;
        while let Some(line) = lines.next() {
            if let Some(doc) = line.strip_prefix("///") {
                if let Some(rest) = doc.trim().strip_prefix("C++ overload of `") {
                    overload_of = rest.split('`').next().map(str::to_string);
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("#[doc(alias = \"") {
                overload_of = rest.split('"').next().map(str::to_string);
                continue;
            }
            let Some(rest) = line.strip_prefix("pub fn ") else {
                if !line.starts_with("#[") {
                    overload_of = None;
                }
                continue;
            };
            let mut sig = rest.to_string();
            while !sig.trim_end().ends_with('{') && !sig.trim_end().ends_with(';') {
                match lines.next() {
                    Some(l) => {
                        sig.push(' ');
                        sig.push_str(l.trim());
                    }
                    None => break,
                }
            }
            let name: String = sig
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            match parse_signature(&sig[name.len()..]) {
                Ok((params, ret)) => {
                    if let Some(of) = overload_of.take() {
                        out.overloads.entry(of).or_default().push(name.clone());
                    }
                    out.fns.insert(name.clone(), ManualFn { name, params, ret });
                }
                Err(why) => out.skipped.push((name, why)),
            }
        }
        out
    }

    pub fn get(&self, name: &str) -> Option<&ManualFn> {
        self.fns.get(name)
    }

    /// The helpers a formula's call of C++ name `name` may mean: the function of that name
    /// and its declared overloads.
    pub fn candidates(&self, name: &str) -> Vec<&ManualFn> {
        let mut v: Vec<&ManualFn> = self.fns.get(name).into_iter().collect();
        if let Some(os) = self.overloads.get(name) {
            v.extend(os.iter().filter_map(|o| self.fns.get(o)));
        }
        v
    }
}

/// Removes lifetimes (`&'a Tensor` -> `&Tensor`).
fn strip_lifetimes(t: &str) -> String {
    let mut out = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            while chars
                .peek()
                .is_some_and(|c| c.is_alphanumeric() || *c == '_')
            {
                chars.next();
            }
            while chars.peek() == Some(&' ') {
                chars.next();
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// `(<generics>)(params) -> Result<T> {`, after the name.
fn parse_signature(sig: &str) -> Result<(Vec<(String, CxxType)>, CxxType), String> {
    let mut s = sig.trim_start();
    if let Some(rest) = s.strip_prefix('<') {
        let close = rest.find('>').ok_or("unclosed generics")?;
        let generics = &rest[..close];
        if generics
            .split(',')
            .any(|g| !g.trim().starts_with('\'') && !g.trim().is_empty())
        {
            return Err("type parameters are outside the closed set".into());
        }
        s = &rest[close + 1..];
    }
    let s = s.strip_prefix('(').ok_or("expected `(`")?;
    let mut depth = 1;
    let mut close = None;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close.ok_or("unclosed parameter list")?;
    let mut params = Vec::new();
    for p in split_top_level(&s[..close]) {
        let (name, ty) = p.split_once(':').ok_or(format!("parameter `{p}`"))?;
        let name = name.trim().trim_start_matches("mut ").trim().to_string();
        let ty = strip_lifetimes(ty.trim());
        let cty = CxxType::of_param(&ty).ok_or(format!(
            "parameter `{name}: {ty}` is outside the closed set"
        ))?;
        params.push((name, cty));
    }
    let after = s[close + 1..].trim();
    let ret = after
        .strip_prefix("->")
        .ok_or("no return type (helpers return `Result<T>`)")?
        .trim()
        .trim_end_matches(['{', ';'])
        .trim();
    let inner = ret
        .strip_prefix("Result<")
        .and_then(|r| r.strip_suffix('>'))
        .ok_or(format!("returns `{ret}`, not `Result<T>`"))?;
    let ret = strip_lifetimes(inner);
    let cty = CxxType::of_return(&ret)
        .ok_or(format!("returns `Result<{ret}>`, outside the closed set"))?;
    Ok((params, cty))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rustfmt_signatures() {
        let src = r#"
use crate::prelude::*;

/// Doc.
pub fn sum_backward(grad: &Tensor, sizes: &[i64], dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    todo_not_parsed()
}

pub fn linear_backward(
    input: &Tensor,
    grad: Option<&Tensor>,
    weight: &Tensor,
    mask: &[bool],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    body()
}

pub fn with_lifetime<'a>(x: &'a Tensor, s: &'a Scalar) -> Result<Tensor> {
    body()
}

pub fn generic<T: Into<f64>>(x: T) -> Result<Tensor> {
    body()
}

pub fn odd(x: HashMap<u8, u8>) -> Result<Tensor> {
    body()
}

/// Doc.
/// C++ overload of `sum_backward`.
#[inline]
pub fn sum_backward_scalar(grad: &Tensor, s: &Scalar) -> Result<Tensor> {
    body()
}

fn private(x: &Tensor) -> Result<Tensor> {
    body()
}

    pub fn nested(x: &Tensor) -> Result<Tensor> {
        body()
    }
"#;
        let m = ManualSignatures::parse(src);
        assert_eq!(
            m.fns.keys().collect::<Vec<_>>(),
            [
                "linear_backward",
                "sum_backward",
                "sum_backward_scalar",
                "with_lifetime"
            ]
        );
        let names: Vec<&str> = m
            .candidates("sum_backward")
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, ["sum_backward", "sum_backward_scalar"]);
        assert!(m.candidates("with_lifetime").len() == 1 && m.candidates("nothing").is_empty());
        let s = &m.fns["sum_backward"];
        assert_eq!(
            s.params,
            vec![
                ("grad".to_string(), CxxType::Tensor),
                ("sizes".to_string(), CxxType::IntList),
                ("dims".to_string(), CxxType::OptIntList),
                ("keepdim".to_string(), CxxType::Bool),
            ]
        );
        assert_eq!(s.ret, CxxType::Tensor);
        assert_eq!(
            m.fns["linear_backward"].ret,
            CxxType::Tuple(vec![CxxType::OptTensor; 3])
        );
        assert_eq!(m.fns["linear_backward"].params[3].1, CxxType::BoolList);
        assert_eq!(m.fns["with_lifetime"].params[1].1, CxxType::Scalar);
        let skipped: Vec<&str> = m.skipped.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(skipped, ["generic", "odd"]);
        assert!(m.skipped[1].1.contains("outside the closed set"));
    }
}
