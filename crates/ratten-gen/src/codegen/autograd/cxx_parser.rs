//! The C++ expression subset derivatives.yaml's formulas are written in: a lexer and a
//! precedence-climbing parser into [`Expr`]. Names, calls, method calls (`.` and `->`),
//! indexing, unary `- ! ~ +`, binary operators with C++'s precedence, `?:`, brace lists,
//! template arguments (`std::get<0>`, `std::vector<int64_t>{...}`, `static_cast<T>(x)`) and
//! literals. Lambdas, assignments and the comma operator are refused.
//!
//! Nesting is bounded ([`MAX_DEPTH`]): a formula is hostile input as far as the parser is
//! concerned, and neither parsing, translating nor dropping an [`Expr`] may overflow the stack.

use std::fmt;

/// The deepest nesting of sub-expressions the parser accepts.
pub const MAX_DEPTH: usize = 64;

/// A template argument: a type (`int64_t`, `std::tuple<Tensor, Tensor>`) or an integer
/// (`std::get<0>`).
#[derive(Debug, Clone, PartialEq)]
pub enum TemplateArg {
    Type(TypeName),
    Int(i64),
}

/// A C++ type name with its template arguments (`std::vector<int64_t>`).
#[derive(Debug, Clone, PartialEq)]
pub struct TypeName {
    /// The qualified name as written (`std::vector`, `int64_t`).
    pub path: String,
    pub args: Vec<TemplateArg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Plus,
    Not,
    BitNot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
}

impl BinaryOp {
    /// C++'s precedence (higher binds tighter); all are left-associative.
    fn precedence(self) -> u8 {
        use BinaryOp::*;
        match self {
            Mul | Div | Rem => 10,
            Add | Sub => 9,
            Lt | Le | Gt | Ge => 7,
            Eq | Ne => 6,
            BitAnd => 5,
            BitXor => 4,
            BitOr => 3,
            And => 2,
            Or => 1,
        }
    }

    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Mul => "*",
            Div => "/",
            Rem => "%",
            Add => "+",
            Sub => "-",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            BitAnd => "&",
            BitXor => "^",
            BitOr => "|",
            And => "&&",
            Or => "||",
        }
    }
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A name, qualified as written (`grad`, `at::sum`, `std::nullopt`), with its template
    /// arguments (`std::get<0>`).
    Name {
        path: String,
        targs: Vec<TemplateArg>,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    /// `f(args)`: `callee` is a name or a member.
    Call {
        callee: Box<Expr>,
        args: Vec<Expr>,
    },
    /// `base.name` / `base->name`.
    Member {
        base: Box<Expr>,
        name: String,
        arrow: bool,
    },
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    Unary {
        op: UnaryOp,
        expr: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Ternary {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    /// `{a, b}`, or `T{a, b}` with a type.
    Brace {
        ty: Option<TypeName>,
        items: Vec<Expr>,
    },
    /// `static_cast<T>(x)`.
    Cast {
        ty: TypeName,
        expr: Box<Expr>,
    },
}

/// Why a formula does not parse: the message and the byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub message: String,
    pub offset: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    Str(String),
    /// Punctuation, longest match (`::`, `->`, `&&`, `<=`; `>` is always single so that
    /// `a<b<c>>` closes two template lists).
    P(&'static str),
}

const PUNCT: &[&str] = &[
    "::", "->", "&&", "||", "<=", ">=", "==", "!=", "<<", "(", ")", "[", "]", "{", "}", ",", ".",
    "?", ":", "+", "-", "*", "/", "%", "<", ">", "!", "~", "&", "|", "^", "=", ";",
];

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, ParseError> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |m: &str, at: usize| ParseError {
        message: m.to_string(),
        offset: at,
    };
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if src[i..].starts_with("//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if src[i..].starts_with("/*") {
            let end = src[i + 2..]
                .find("*/")
                .ok_or_else(|| err("unterminated comment", i))?;
            i += end + 4;
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_string()), start));
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            out.push((lex_number(src, &mut i)?, start));
            continue;
        }
        if c == b'"' {
            i += 1;
            let mut s = String::new();
            loop {
                match b.get(i) {
                    None => return Err(err("unterminated string literal", start)),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        let e = *b
                            .get(i + 1)
                            .ok_or_else(|| err("unterminated string literal", start))?;
                        s.push(match e {
                            b'n' => '\n',
                            b't' => '\t',
                            b'\\' => '\\',
                            b'"' => '"',
                            b'\'' => '\'',
                            _ => return Err(err("unsupported escape in a string literal", i)),
                        });
                        i += 2;
                    }
                    Some(_) => {
                        // A whole UTF-8 character.
                        let ch = src[i..].chars().next().expect("in bounds");
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            out.push((Tok::Str(s), start));
            continue;
        }
        match PUNCT.iter().find(|p| src[i..].starts_with(**p)) {
            Some(p) => {
                out.push((Tok::P(p), start));
                i += p.len();
            }
            None => {
                let ch = src[i..].chars().next().expect("in bounds");
                return Err(err(&format!("unexpected character `{ch}`"), i));
            }
        }
    }
    Ok(out)
}

/// A decimal, hexadecimal or floating literal with C++'s suffixes (`1L`, `0.5f`, `1e-3`).
fn lex_number(src: &str, i: &mut usize) -> Result<Tok, ParseError> {
    let b = src.as_bytes();
    let start = *i;
    let bad = |at: usize| ParseError {
        message: format!("malformed number `{}`", &src[start..at.min(src.len())]),
        offset: start,
    };
    if src[start..].starts_with("0x") || src[start..].starts_with("0X") {
        *i += 2;
        while *i < b.len() && b[*i].is_ascii_hexdigit() {
            *i += 1;
        }
        let v = i64::from_str_radix(&src[start + 2..*i], 16).map_err(|_| bad(*i))?;
        while *i < b.len() && matches!(b[*i], b'l' | b'L' | b'u' | b'U') {
            *i += 1;
        }
        return Ok(Tok::Int(v));
    }
    let mut float = false;
    while *i < b.len() && b[*i].is_ascii_digit() {
        *i += 1;
    }
    if *i < b.len() && b[*i] == b'.' {
        float = true;
        *i += 1;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
    }
    if *i < b.len() && matches!(b[*i], b'e' | b'E') {
        float = true;
        *i += 1;
        if *i < b.len() && matches!(b[*i], b'+' | b'-') {
            *i += 1;
        }
        let digits = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        if digits == *i {
            return Err(bad(*i));
        }
    }
    let text = &src[start..*i];
    let tok = if float {
        Tok::Float(text.parse().map_err(|_| bad(*i))?)
    } else {
        Tok::Int(text.parse().map_err(|_| bad(*i))?)
    };
    if float && *i < b.len() && matches!(b[*i], b'f' | b'F') {
        *i += 1;
    } else {
        while *i < b.len() && matches!(b[*i], b'l' | b'L' | b'u' | b'U') {
            *i += 1;
        }
    }
    if *i < b.len() && (b[*i].is_ascii_alphanumeric() || b[*i] == b'_') {
        return Err(bad(*i + 1));
    }
    Ok(tok)
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    end: usize,
    depth: usize,
}

type PResult<T> = Result<T, ParseError>;

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|(t, _)| t)
    }

    fn offset(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |(_, o)| *o)
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::P(q)) if *q == p)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.is(p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn error<T>(&self, message: impl Into<String>) -> PResult<T> {
        Err(ParseError {
            message: message.into(),
            offset: self.offset(),
        })
    }

    fn expect(&mut self, p: &str) -> PResult<()> {
        if self.eat(p) {
            Ok(())
        } else {
            let found = match self.peek() {
                None => "the end of the formula".to_string(),
                Some(t) => format!("`{}`", tok_text(t)),
            };
            self.error(format!("expected `{p}`, found {found}"))
        }
    }

    /// Enters one level of nesting; every recursive production goes through here.
    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.error(format!(
                "the expression is nested more than {MAX_DEPTH} levels deep"
            ));
        }
        Ok(())
    }

    fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let e = self.ternary();
        self.depth -= 1;
        e
    }

    fn ternary(&mut self) -> PResult<Expr> {
        let cond = self.binary(0)?;
        if !self.eat("?") {
            if self.is("=") {
                return self.error("assignments are not supported in formulas");
            }
            return Ok(cond);
        }
        let then = self.expr()?;
        self.expect(":")?;
        let otherwise = self.expr()?;
        Ok(Expr::Ternary {
            cond: Box::new(cond),
            then: Box::new(then),
            otherwise: Box::new(otherwise),
        })
    }

    fn binary_op(&self) -> Option<BinaryOp> {
        use BinaryOp::*;
        let Some(Tok::P(p)) = self.peek() else {
            return None;
        };
        Some(match *p {
            "*" => Mul,
            "/" => Div,
            "%" => Rem,
            "+" => Add,
            "-" => Sub,
            "<" => Lt,
            "<=" => Le,
            // `>` `=` never occur split: `>=` is lexed as one token.
            ">" => Gt,
            ">=" => Ge,
            "==" => Eq,
            "!=" => Ne,
            "&" => BitAnd,
            "^" => BitXor,
            "|" => BitOr,
            "&&" => And,
            "||" => Or,
            _ => return None,
        })
    }

    /// Precedence climbing over the left-associative binary operators. Each operator of a
    /// chain (`a + b + c`) is one more level of the tree built on the left, so it counts as
    /// one level of nesting.
    fn binary(&mut self, min: u8) -> PResult<Expr> {
        let base = self.depth;
        let r = self.binary_chain(min);
        self.depth = base;
        r
    }

    fn binary_chain(&mut self, min: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.binary_op() {
            let prec = op.precedence();
            if prec < min {
                break;
            }
            let shift = matches!(
                (self.peek(), self.peek_at(1)),
                (Some(Tok::P(">")), Some(Tok::P(">")))
            );
            if shift {
                return self.error("shift operators are not supported in formulas");
            }
            self.pos += 1;
            self.enter()?;
            let rhs = self.binary(prec + 1)?;
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
        }
        if self.is("<<") {
            return self.error("shift operators are not supported in formulas");
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        let op = match self.peek() {
            Some(Tok::P("-")) => Some(UnaryOp::Neg),
            Some(Tok::P("+")) => Some(UnaryOp::Plus),
            Some(Tok::P("!")) => Some(UnaryOp::Not),
            Some(Tok::P("~")) => Some(UnaryOp::BitNot),
            Some(Tok::P("&" | "*")) => {
                return self.error("address-of and dereference are not supported in formulas")
            }
            _ => None,
        };
        let Some(op) = op else {
            return self.postfix();
        };
        self.pos += 1;
        self.enter()?;
        let e = self.unary();
        self.depth -= 1;
        Ok(Expr::Unary {
            op,
            expr: Box::new(e?),
        })
    }

    fn args(&mut self, close: &str) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if self.eat(close) {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(close) {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }

    /// A primary with its postfix chain; each link (`a.b().c()`) nests like parentheses.
    fn postfix(&mut self) -> PResult<Expr> {
        let base = self.depth;
        let r = self.postfix_chain();
        self.depth = base;
        r
    }

    fn postfix_chain(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.eat("(") {
                self.enter()?;
                let args = self.args(")")?;
                e = Expr::Call {
                    callee: Box::new(e),
                    args,
                };
            } else if self.is(".") || self.is("->") {
                self.enter()?;
                let arrow = self.is("->");
                self.pos += 1;
                let Some(Tok::Ident(name)) = self.peek().cloned() else {
                    return self.error("expected a member name");
                };
                self.pos += 1;
                if self.is("<") {
                    return self.error("member templates are not supported in formulas");
                }
                e = Expr::Member {
                    base: Box::new(e),
                    name,
                    arrow,
                };
            } else if self.eat("[") {
                self.enter()?;
                let index = self.expr()?;
                self.expect("]")?;
                e = Expr::Index {
                    base: Box::new(e),
                    index: Box::new(index),
                };
            } else {
                return Ok(e);
            }
        }
    }

    /// `a::b::c` starting at an identifier (or a leading `::`).
    fn path(&mut self) -> PResult<String> {
        let mut path = String::new();
        if self.eat("::") {
            path.push_str("::");
        }
        loop {
            let Some(Tok::Ident(id)) = self.peek().cloned() else {
                return self.error("expected a name after `::`");
            };
            self.pos += 1;
            path.push_str(&id);
            if matches!(
                (self.peek(), self.peek_at(1)),
                (Some(Tok::P("::")), Some(Tok::Ident(_)))
            ) {
                self.pos += 1;
                path.push_str("::");
            } else {
                return Ok(path);
            }
        }
    }

    /// Tries `< targs >` followed by one of `follow`; restores the position when it is not
    /// a template argument list (then `<` is less-than).
    fn try_template_args(&mut self, follow: &[&str]) -> PResult<Option<Vec<TemplateArg>>> {
        if !self.is("<") {
            return Ok(None);
        }
        let save = (self.pos, self.depth);
        self.pos += 1;
        match self.template_args() {
            Ok(args) if follow.iter().any(|f| self.is(f)) => Ok(Some(args)),
            _ => {
                (self.pos, self.depth) = save;
                Ok(None)
            }
        }
    }

    /// The list after `<`, through the closing `>`.
    fn template_args(&mut self) -> PResult<Vec<TemplateArg>> {
        self.enter()?;
        let mut args = Vec::new();
        if !self.eat(">") {
            loop {
                match self.peek().cloned() {
                    Some(Tok::Int(v)) => {
                        self.pos += 1;
                        args.push(TemplateArg::Int(v));
                    }
                    Some(Tok::Ident(_)) | Some(Tok::P("::")) => {
                        args.push(TemplateArg::Type(self.type_name()?))
                    }
                    _ => return self.error("expected a template argument"),
                }
                if self.eat(">") {
                    break;
                }
                self.expect(",")?;
            }
        }
        self.depth -= 1;
        Ok(args)
    }

    fn type_name(&mut self) -> PResult<TypeName> {
        let mut path = self.path()?;
        // `unsigned int`, `long long`, `const T`.
        while let Some(Tok::Ident(w)) = self.peek() {
            if !["int", "long", "char", "short", "double"].contains(&w.as_str()) {
                break;
            }
            path = format!("{path} {w}");
            self.pos += 1;
        }
        let args = if self.eat("<") {
            self.template_args()?
        } else {
            Vec::new()
        };
        Ok(TypeName { path, args })
    }

    fn primary(&mut self) -> PResult<Expr> {
        let Some(tok) = self.peek().cloned() else {
            return self.error("expected an expression, found the end of the formula");
        };
        match tok {
            Tok::Int(v) => {
                self.pos += 1;
                Ok(Expr::Int(v))
            }
            Tok::Float(v) => {
                self.pos += 1;
                Ok(Expr::Float(v))
            }
            Tok::Str(s) => {
                self.pos += 1;
                Ok(Expr::Str(s))
            }
            Tok::P("(") => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::P("{") => {
                self.pos += 1;
                self.enter()?;
                let items = self.args("}");
                self.depth -= 1;
                Ok(Expr::Brace {
                    ty: None,
                    items: items?,
                })
            }
            Tok::P("[") => self.error("lambdas are not supported in formulas"),
            Tok::Ident(_) | Tok::P("::") => {
                let path = self.path()?;
                match path.as_str() {
                    "true" => return Ok(Expr::Bool(true)),
                    "false" => return Ok(Expr::Bool(false)),
                    "static_cast" => {
                        let Some(mut targs) = self.try_template_args(&["("])? else {
                            return self.error("expected `static_cast<T>(...)`");
                        };
                        let (1, Some(TemplateArg::Type(ty))) = (targs.len(), targs.pop()) else {
                            return self.error("static_cast takes one type");
                        };
                        self.expect("(")?;
                        let e = self.expr()?;
                        self.expect(")")?;
                        return Ok(Expr::Cast {
                            ty,
                            expr: Box::new(e),
                        });
                    }
                    "dynamic_cast" | "reinterpret_cast" | "const_cast" | "new" | "delete"
                    | "this" | "sizeof" | "decltype" | "auto" | "return" => {
                        return self.error(format!("`{path}` is not supported in formulas"))
                    }
                    _ => {}
                }
                let targs = self.try_template_args(&["(", "{", "::"])?;
                if self.is("{") {
                    // `std::vector<int64_t>{...}`, `c10::SymInt{1}`.
                    self.pos += 1;
                    self.enter()?;
                    let items = self.args("}");
                    self.depth -= 1;
                    return Ok(Expr::Brace {
                        ty: Some(TypeName {
                            path,
                            args: targs.unwrap_or_default(),
                        }),
                        items: items?,
                    });
                }
                if targs.is_some() && self.is("::") {
                    return self.error("members of template specialisations are not supported");
                }
                Ok(Expr::Name {
                    path,
                    targs: targs.unwrap_or_default(),
                })
            }
            t => self.error(format!("unexpected `{}`", tok_text(&t))),
        }
    }
}

fn tok_text(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => s.clone(),
        Tok::Int(v) => v.to_string(),
        Tok::Float(v) => v.to_string(),
        Tok::Str(s) => format!("{s:?}"),
        Tok::P(p) => p.to_string(),
    }
}

/// Parses one formula.
pub fn parse(src: &str) -> Result<Expr, ParseError> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        pos: 0,
        end: src.len(),
        depth: 0,
    };
    let e = p.expr()?;
    if p.pos < p.toks.len() {
        let t = tok_text(&p.toks[p.pos].0);
        return p.error(format!("unexpected `{t}` after the expression"));
    }
    Ok(e)
}

impl fmt::Display for TypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)?;
        write_targs(f, &self.args)
    }
}

fn write_targs(f: &mut fmt::Formatter<'_>, args: &[TemplateArg]) -> fmt::Result {
    if args.is_empty() {
        return Ok(());
    }
    f.write_str("<")?;
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        match a {
            TemplateArg::Type(t) => write!(f, "{t}")?,
            TemplateArg::Int(v) => write!(f, "{v}")?,
        }
    }
    f.write_str(">")
}

fn write_list(f: &mut fmt::Formatter<'_>, items: &[Expr]) -> fmt::Result {
    for (i, a) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{a}")?;
    }
    Ok(())
}

/// The canonical text: fully parenthesised operators, no comments, single spaces after
/// commas. Two spellings of one expression (`self.sym_size( -1 )`, `self.sym_size(-1)`)
/// print alike, which is how a saved value's expression is recognised in a formula.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Name { path, targs } => {
                f.write_str(path)?;
                write_targs(f, targs)
            }
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Float(v) => write!(f, "{v:?}"),
            Expr::Bool(b) => write!(f, "{b}"),
            Expr::Str(s) => write!(f, "{s:?}"),
            Expr::Call { callee, args } => {
                write!(f, "{callee}(")?;
                write_list(f, args)?;
                f.write_str(")")
            }
            Expr::Member { base, name, arrow } => {
                write!(f, "{base}{}{name}", if *arrow { "->" } else { "." })
            }
            Expr::Index { base, index } => write!(f, "{base}[{index}]"),
            Expr::Unary { op, expr } => {
                let s = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Plus => "+",
                    UnaryOp::Not => "!",
                    UnaryOp::BitNot => "~",
                };
                match **expr {
                    Expr::Int(_) | Expr::Float(_) | Expr::Name { .. } => write!(f, "{s}{expr}"),
                    _ => write!(f, "{s}({expr})"),
                }
            }
            Expr::Binary { op, lhs, rhs } => write!(f, "({lhs} {} {rhs})", op.symbol()),
            Expr::Ternary {
                cond,
                then,
                otherwise,
            } => write!(f, "({cond} ? {then} : {otherwise})"),
            Expr::Brace { ty, items } => {
                if let Some(t) = ty {
                    write!(f, "{t}")?;
                }
                f.write_str("{")?;
                write_list(f, items)?;
                f.write_str("}")
            }
            Expr::Cast { ty, expr } => write!(f, "static_cast<{ty}>({expr})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        parse(s).unwrap().to_string()
    }

    #[test]
    fn precedence_follows_cpp() {
        assert_eq!(p("a + b * c"), "(a + (b * c))");
        assert_eq!(p("a - b - c"), "((a - b) - c)");
        assert_eq!(p("-a * b"), "(-a * b)");
        assert_eq!(p("a < b == c > d"), "((a < b) == (c > d))");
        assert_eq!(p("a || b && c"), "(a || (b && c))");
        assert_eq!(p("a & b | c ^ d"), "((a & b) | (c ^ d))");
        assert_eq!(p("!a.defined() && b"), "(!(a.defined()) && b)");
        assert_eq!(p("-grad * (x / y).conj()"), "(-grad * (x / y).conj())");
        assert_eq!(p("a % b + 1"), "((a % b) + 1)");
    }

    #[test]
    fn ternaries_are_right_associative() {
        assert_eq!(p("a ? b : c ? d : e"), "(a ? b : (c ? d : e))");
        assert_eq!(p("x > 0 ? f(x) : g(x)"), "((x > 0) ? f(x) : g(x))");
        assert_eq!(p("a ? b ? c : d : e"), "(a ? (b ? c : d) : e)");
    }

    #[test]
    fn calls_members_templates_and_literals() {
        assert_eq!(
            p("at::sum_to(grad, self.sym_sizes())"),
            "at::sum_to(grad, self.sym_sizes())"
        );
        assert_eq!(
            p("std::get<0>(at::_unique(index, /*sorted=*/false))"),
            "std::get<0>(at::_unique(index, false))"
        );
        assert_eq!(p("grads[0]"), "grads[0]");
        assert_eq!(p("self->sym_sizes()"), "self->sym_sizes()");
        assert_eq!(
            p("grad.expand_symint({ a.sym_size(0), 2 })"),
            "grad.expand_symint({a.sym_size(0), 2})"
        );
        assert_eq!(
            p("std::vector<int64_t>{1, 2}"),
            "std::vector<int64_t>{1, 2}"
        );
        assert_eq!(
            p("std::tuple<Tensor, Tensor, Tensor>()"),
            "std::tuple<Tensor, Tensor, Tensor>()"
        );
        assert_eq!(p("static_cast<int64_t>(x)"), "static_cast<int64_t>(x)");
        assert_eq!(p("-0.5 * grad"), "(-0.5 * grad)");
        assert_eq!(p("1e-3 + 2.5f + 3L + 0x10"), "(((0.001 + 2.5) + 3) + 16)");
        assert_eq!(p(r#"div(a, "tr\"unc")"#), r#"div(a, "tr\"unc")"#);
        assert_eq!(p("a < b"), "(a < b)");
        // `<` after a name is a template list only when one closes and a call follows.
        assert_eq!(p("a < b > c"), "((a < b) > c)");
        assert_eq!(
            p("f<std::vector<int64_t>>(x)"),
            "f<std::vector<int64_t>>(x)"
        );
    }

    #[test]
    fn unsupported_constructs_are_refused() {
        let e = |s: &str| parse(s).unwrap_err().message;
        assert_eq!(
            e("fmap(x, [](c10::SymInt i){return -i;})"),
            "lambdas are not supported in formulas"
        );
        assert!(e("a = b").contains("assignments"));
        assert!(e("a << 2").contains("shift"));
        assert!(e("f(a, b").contains("expected"));
        assert!(e("a b").contains("after the expression"));
        assert!(e("\"abc").contains("unterminated"));
        assert!(e("/* x").contains("unterminated comment"));
        assert!(e("1.5e").contains("malformed"));
        assert!(e("a $ b").contains("unexpected character"));
        assert!(e("").contains("end of the formula"));
    }

    #[test]
    fn hostile_nesting_is_refused_not_overflowed() {
        for open in ["(", "-", "{", "f(", "!", "a ? b : "] {
            let s = open.repeat(100_000);
            let e = parse(&s).unwrap_err();
            assert!(e.message.contains("nested more than"), "{open}: {e}");
        }
        let chain = format!("a{}", ".b()".repeat(100_000));
        assert!(parse(&chain).unwrap_err().message.contains("nested"));
        // A long left-associative chain builds a deep tree too.
        let sum = vec!["a"; 100_000].join(" + ");
        assert!(parse(&sum).unwrap_err().message.contains("nested"));
        let templ = format!("f{}x{}(y)", "<".repeat(10_000), ">".repeat(10_000));
        assert!(parse(&templ).is_err());
        // Up to the limit, nesting is fine.
        let ok = format!(
            "{}a{}",
            "(".repeat(MAX_DEPTH - 1),
            ")".repeat(MAX_DEPTH - 1)
        );
        assert_eq!(
            parse(&ok).unwrap(),
            Expr::Name {
                path: "a".into(),
                targs: vec![]
            }
        );
    }
}
