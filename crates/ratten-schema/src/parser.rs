//! The schema parser: the grammar of torch/csrc/jit/frontend/function_schema_parser.cpp
//! and schema_type_parser.cpp, with c10's conversion of defaults into values.

use crate::error::SchemaError;
use crate::schema::{
    AliasInfo, Argument, DefaultValue, FunctionSchema, OperatorName, Return, Type,
};

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident,
    Number,
    Str,
    True,
    False,
    None,
    NoneType,
    Arrow,
    Dots,
    Punct(u8),
    Eof,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Tok,
    start: usize,
    end: usize,
}

struct Lexer<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
}

fn describe(src: &str, t: &Token) -> String {
    match t.kind {
        Tok::Eof => "end of input".to_string(),
        _ => format!("'{}'", &src[t.start..t.end]),
    }
}

fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let before = &src[..offset.min(src.len())];
    let line = before.matches('\n').count() + 1;
    let col = match before.rfind('\n') {
        Some(i) => before[i + 1..].chars().count() + 1,
        None => before.chars().count() + 1,
    };
    (line, col)
}

fn error_at(src: &str, offset: usize, found: String, message: impl Into<String>) -> SchemaError {
    let (line, column) = line_col(src, offset);
    SchemaError {
        line,
        column,
        message: message.into(),
        found,
    }
}

fn tokenize(src: &str) -> Result<Vec<Token>, SchemaError> {
    let b = src.as_bytes();
    let mut toks = Vec::with_capacity(src.len() / 3);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' {
            i += 1;
            continue;
        }
        let start = i;
        // `$N` names the fresh alias sets of the `Tensor!` shorthand, so that c10's printing
        // of them (`Tensor($0!)`) reads back.
        let fresh_set = c == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit);
        if fresh_set {
            i += 1;
        }
        let kind = if fresh_set || c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            match &src[start..i] {
                "True" => Tok::True,
                "False" => Tok::False,
                "None" => Tok::None,
                "NoneType" => Tok::NoneType,
                _ => Tok::Ident,
            }
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            // The part of a number strtod accepts, then an optional 'j' (imaginary).
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i < b.len() && b[i] == b'.' {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut j = i + 1;
                if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    while j < b.len() && b[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                }
            }
            if i < b.len() && b[i] == b'j' {
                i += 1;
            }
            Tok::Number
        } else if c == b'"' || c == b'\'' {
            i += 1;
            loop {
                match b.get(i) {
                    None | Some(b'\n') => {
                        return Err(error_at(
                            src,
                            start,
                            "an unterminated string".to_string(),
                            "expected a closing quote",
                        ))
                    }
                    Some(b'\\') => i += 2,
                    Some(&q) if q == c => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
            Tok::Str
        } else if src[i..].starts_with("->") {
            i += 2;
            Tok::Arrow
        } else if src[i..].starts_with("...") {
            i += 3;
            Tok::Dots
        } else if b"()[],?!*|=:.-".contains(&c) {
            i += 1;
            Tok::Punct(c)
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(error_at(
                src,
                i,
                format!("'{ch}'"),
                "expected a name, type, number, string or punctuation",
            ));
        };
        toks.push(Token {
            kind,
            start,
            end: i,
        });
    }
    toks.push(Token {
        kind: Tok::Eof,
        start: src.len(),
        end: src.len(),
    });
    Ok(toks)
}

/// Parses a string literal's text (with its quotes) into its value (the escapes of
/// torch/csrc/jit/frontend/parse_string_literal.h).
fn string_value(src: &str, t: &Token) -> Result<String, SchemaError> {
    let text = &src[t.start + 1..t.end - 1];
    let mut out = Vec::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let Some(&e) = b.get(i + 1) else {
            return Err(error_at(src, t.start, describe(src, t), "invalid escape"));
        };
        i += 2;
        out.push(match e {
            b'\\' | b'\'' | b'"' | b'\n' => e,
            b'a' => 0x07,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'v' => 0x0b,
            b't' => b'\t',
            b'r' => b'\r',
            b'0'..=b'7' => {
                // Up to three octal digits.
                let mut v: u32 = (e - b'0') as u32;
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + (b[i] - b'0') as u32;
                    i += 1;
                    n += 1;
                }
                if v > 255 {
                    return Err(error_at(
                        src,
                        t.start,
                        describe(src, t),
                        "octal escape out of range",
                    ));
                }
                v as u8
            }
            b'x' => {
                return Err(error_at(
                    src,
                    t.start,
                    describe(src, t),
                    "unsupported hex specifier",
                ))
            }
            b'u' | b'U' => {
                return Err(error_at(
                    src,
                    t.start,
                    describe(src, t),
                    "unsupported unicode specifier",
                ))
            }
            _ => {
                return Err(error_at(
                    src,
                    t.start,
                    describe(src, t),
                    format!("invalid escape char '{}'", e as char),
                ))
            }
        });
    }
    String::from_utf8(out)
        .map_err(|_| error_at(src, t.start, describe(src, t), "string is not valid UTF-8"))
}

/// Either an operator name alone or a whole schema (c10's `parseSchemaOrName`).
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaOrName {
    Name(OperatorName),
    Schema(FunctionSchema),
}

/// The kind of a (fake) type that decides how a default is read, as in c10.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Tensor,
    Generator,
    Quantizer,
    Str,
    Optional,
    Number,
    Int,
    Bool,
    Float,
    Complex,
    Device,
    List,
    Other,
}

/// c10's fake type kind: ScalarType, Layout, MemoryFormat, SymInt (and the int-like
/// spellings) are `int` to the parser.
fn fake_kind(t: &Type) -> Kind {
    match t {
        Type::Tensor => Kind::Tensor,
        Type::Generator => Kind::Generator,
        Type::Quantizer => Kind::Quantizer,
        Type::Str | Type::Dimname => Kind::Str,
        Type::Optional(_) => Kind::Optional,
        Type::Scalar => Kind::Number,
        Type::Int
        | Type::SymInt
        | Type::ScalarType
        | Type::Layout
        | Type::MemoryFormat
        | Type::DeviceIndex
        | Type::ConstQuantizerPtr => Kind::Int,
        Type::Bool | Type::SymBool => Kind::Bool,
        Type::Float | Type::SymFloat => Kind::Float,
        Type::Complex => Kind::Complex,
        Type::Device => Kind::Device,
        Type::List { .. } => Kind::List,
        _ => Kind::Other,
    }
}

struct Parser<'a> {
    src: &'a str,
    lex: Lexer<'a>,
    /// Fresh alias set ids for the `Tensor!` shorthand.
    next_id: usize,
    /// How deeply the type being parsed nests (recursion plus `?`/`[]` wrappers): capped
    /// so that hostile input cannot overflow the stack here or when the type is dropped.
    depth: usize,
}

/// The largest fixed list size whose single default (`int[N] x=1`) is repeated N times.
const MAX_BROADCAST_DEFAULT: u32 = 1 << 16;

/// No real schema nests types more than a few levels.
const MAX_TYPE_DEPTH: usize = 64;

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Result<Self, SchemaError> {
        Ok(Parser {
            src,
            lex: Lexer {
                src,
                toks: tokenize(src)?,
                pos: 0,
            },
            next_id: 0,
            depth: 0,
        })
    }

    fn cur(&self) -> &Token {
        &self.lex.toks[self.lex.pos]
    }

    fn peek(&self, n: usize) -> &Token {
        let i = (self.lex.pos + n).min(self.lex.toks.len() - 1);
        &self.lex.toks[i]
    }

    fn text(&self, t: &Token) -> &'a str {
        &self.lex.src[t.start..t.end]
    }

    fn advance(&mut self) -> Token {
        let t = self.cur().clone();
        if t.kind != Tok::Eof {
            self.lex.pos += 1;
        }
        t
    }

    fn next_if(&mut self, k: Tok) -> bool {
        if self.cur().kind == k {
            self.advance();
            true
        } else {
            false
        }
    }

    fn next_if_p(&mut self, c: u8) -> bool {
        self.next_if(Tok::Punct(c))
    }

    fn err(&self, message: impl Into<String>) -> SchemaError {
        let t = self.cur();
        error_at(self.src, t.start, describe(self.src, t), message)
    }

    fn err_at(&self, t: &Token, message: impl Into<String>) -> SchemaError {
        error_at(self.src, t.start, describe(self.src, t), message)
    }

    fn expect(&mut self, k: Tok, what: &str) -> Result<Token, SchemaError> {
        if self.cur().kind == k {
            Ok(self.advance())
        } else {
            Err(self.err(format!("expected {what}")))
        }
    }

    fn expect_p(&mut self, c: u8) -> Result<Token, SchemaError> {
        self.expect(Tok::Punct(c), &format!("'{}'", c as char))
    }

    fn expect_ident(&mut self, what: &str) -> Result<&'a str, SchemaError> {
        let t = self.expect(Tok::Ident, what)?;
        Ok(self.text(&t))
    }

    fn parse_name(&mut self) -> Result<OperatorName, SchemaError> {
        let mut name = self.expect_ident("an operator name")?.to_string();
        if self.next_if_p(b':') {
            self.expect_p(b':')?;
            name.push_str("::");
            name.push_str(self.expect_ident("an operator name after '::'")?);
        }
        let mut overload_name = String::new();
        if self.next_if_p(b'.') {
            let t = self.cur().clone();
            overload_name = self.expect_ident("an overload name after '.'")?.to_string();
            // `default` names the overload-less overload in Python, and dunder names are
            // attributes: neither may be an overload name.
            if overload_name == "default" || overload_name.starts_with("__") {
                return Err(self.err_at(
                    &t,
                    format!("{overload_name} is not a legal overload name for aten operators"),
                ));
            }
        }
        Ok(OperatorName {
            name,
            overload_name,
        })
    }

    fn parse_declaration(&mut self, anonymous: bool) -> Result<SchemaOrName, SchemaError> {
        let name = if anonymous {
            OperatorName::default()
        } else {
            let name = self.parse_name()?;
            if self.cur().kind != Tok::Punct(b'(') {
                return Ok(SchemaOrName::Name(name));
            }
            name
        };
        self.expect_p(b'(')?;
        let mut arguments: Vec<Argument> = Vec::new();
        let mut kwarg_only = false;
        let mut is_vararg = false;
        if self.cur().kind != Tok::Punct(b')') {
            loop {
                if is_vararg {
                    return Err(self.err("... must be the last element of the argument list"));
                }
                if self.next_if_p(b'*') {
                    kwarg_only = true;
                } else if self.next_if(Tok::Dots) {
                    is_vararg = true;
                } else {
                    arguments.push(self.parse_argument(false, kwarg_only)?.0);
                }
                if !self.next_if_p(b',') {
                    break;
                }
            }
        }
        self.expect_p(b')')?;
        if is_vararg && arguments.iter().any(|a| a.default.is_some()) {
            return Err(self.err("schemas with vararg (...) can't have default value args"));
        }
        self.expect(Tok::Arrow, "'->'")?;
        let mut returns = Vec::new();
        let mut is_varret = false;
        if self.next_if(Tok::Dots) {
            is_varret = true;
        } else if self.cur().kind == Tok::Punct(b'(') {
            self.advance();
            if self.cur().kind != Tok::Punct(b')') {
                loop {
                    if is_varret {
                        return Err(self.err("... must be the last element of the return list"));
                    }
                    if self.next_if(Tok::Dots) {
                        is_varret = true;
                    } else {
                        returns.push(self.parse_argument(true, false)?.1);
                    }
                    if !self.next_if_p(b',') {
                        break;
                    }
                }
            }
            self.expect_p(b')')?;
        } else {
            returns.push(self.parse_argument(true, false)?.1);
        }
        let schema = FunctionSchema {
            name,
            arguments,
            returns,
            is_vararg,
            is_varret,
        };
        check_schema(&schema).map_err(|m| self.err(m))?;
        Ok(SchemaOrName::Schema(schema))
    }

    /// Parses an argument (or a return when `is_return`): returns both shapes; the
    /// caller keeps the one it wants.
    fn parse_argument(
        &mut self,
        is_return: bool,
        kwarg_only: bool,
    ) -> Result<(Argument, Return), SchemaError> {
        let (mut ty, mut alias_info) = self.parse_type()?;
        if self.next_if_p(b'[') {
            // A size hint can only occur at the argument level.
            let t = self.expect(Tok::Number, "a list size")?;
            let size: u32 = self
                .text(&t)
                .parse()
                .map_err(|_| self.err_at(&t, "expected a list size (a non-negative integer)"))?;
            self.expect_p(b']')?;
            ty = Type::List {
                elem: Box::new(ty),
                size: Some(size),
            };
            let mut container = self.parse_alias_annotation()?;
            if let Some(inner) = alias_info.take() {
                let c = container.get_or_insert_with(|| AliasInfo {
                    is_write: inner.is_write,
                    ..AliasInfo::default()
                });
                c.contained_types.push(inner);
            }
            alias_info = container;
            if self.next_if_p(b'?') {
                ty = Type::Optional(Box::new(ty));
            }
        }
        let mut name = String::new();
        let mut default = None;
        let mut default_text = None;
        if is_return {
            if self.cur().kind == Tok::Ident {
                name = self.advance_text();
            }
        } else {
            name = self.expect_ident("an argument name")?.to_string();
            if self.next_if_p(b'=') {
                let start = self.cur().start;
                default = Some(self.parse_default_value(&ty)?);
                let end = self.lex.toks[self.lex.pos.saturating_sub(1)].end;
                default_text = Some(self.src[start..end.max(start)].to_string());
            }
        }
        let ret = Return {
            name: if name.is_empty() {
                None
            } else {
                Some(name.clone())
            },
            ty: ty.clone(),
            alias_info: alias_info.clone(),
        };
        let arg = Argument {
            name,
            ty,
            default,
            default_text,
            kwarg_only: !is_return && kwarg_only,
            alias_info,
        };
        Ok((arg, ret))
    }

    fn advance_text(&mut self) -> String {
        let t = self.advance();
        self.text(&t).to_string()
    }

    fn parse_alias_annotation(&mut self) -> Result<Option<AliasInfo>, SchemaError> {
        let mut info = AliasInfo::default();
        if self.next_if_p(b'(') {
            self.parse_alias_sets(&mut info, true)?;
            if self.next_if_p(b'!') {
                info.is_write = true;
            }
            if self.next_if(Tok::Arrow) {
                self.parse_alias_sets(&mut info, false)?;
            } else {
                info.after_sets = info.before_sets.clone();
            }
            self.expect_p(b')')?;
        } else if self.next_if_p(b'!') {
            info.before_sets.push(format!("${}", self.next_id));
            info.after_sets = info.before_sets.clone();
            self.next_id += 1;
            info.is_write = true;
        } else {
            return Ok(None);
        }
        Ok(Some(info))
    }

    fn parse_alias_sets(&mut self, info: &mut AliasInfo, before: bool) -> Result<(), SchemaError> {
        loop {
            let sets = if before {
                &mut info.before_sets
            } else {
                &mut info.after_sets
            };
            if self.next_if_p(b'*') {
                if !sets.iter().any(|s| s == "*") {
                    sets.push("*".to_string());
                }
            } else if !sets.iter().any(|s| s == "*") {
                // After a wildcard c10 ignores further sets (and reads nothing).
                let t = self.expect(Tok::Ident, "an alias set name")?;
                let name = self.text(&t).to_string();
                let sets = if before {
                    &mut info.before_sets
                } else {
                    &mut info.after_sets
                };
                if !sets.contains(&name) {
                    sets.push(name);
                }
            }
            if !self.next_if_p(b'|') {
                return Ok(());
            }
        }
    }

    fn parse_type_args(&mut self, n: Option<usize>) -> Result<Vec<Type>, SchemaError> {
        self.expect_p(b'(')?;
        let mut types = vec![self.parse_type()?.0];
        while self.cur().kind != Tok::Punct(b')') {
            if n == Some(types.len()) {
                break;
            }
            self.expect_p(b',')?;
            types.push(self.parse_type()?.0);
        }
        self.expect_p(b')')?;
        if let Some(n) = n {
            if types.len() != n {
                return Err(self.err(format!("expected {n} type arguments")));
            }
        }
        Ok(types)
    }

    fn parse_type(&mut self) -> Result<(Type, Option<AliasInfo>), SchemaError> {
        let entry_depth = self.depth;
        self.depth += 1;
        let r = self.parse_type_inner();
        self.depth = entry_depth;
        r
    }

    fn bump_depth(&mut self) -> Result<(), SchemaError> {
        self.depth += 1;
        if self.depth > MAX_TYPE_DEPTH {
            return Err(self.err(format!("type nesting deeper than {MAX_TYPE_DEPTH} levels")));
        }
        Ok(())
    }

    fn parse_type_inner(&mut self) -> Result<(Type, Option<AliasInfo>), SchemaError> {
        if self.depth > MAX_TYPE_DEPTH {
            return Err(self.err(format!("type nesting deeper than {MAX_TYPE_DEPTH} levels")));
        }
        let mut alias_info = None;
        let cur = self.cur().clone();
        let mut ty = if cur.kind == Tok::Punct(b'(') {
            self.advance();
            let mut types = Vec::new();
            if self.cur().kind != Tok::Punct(b')') {
                loop {
                    types.push(self.parse_type()?.0);
                    if !self.next_if_p(b',') {
                        break;
                    }
                }
            }
            self.expect_p(b')')?;
            Type::Tuple(types)
        } else if cur.kind == Tok::Ident {
            match self.text(&cur) {
                "Future" | "Await" | "RRef" => {
                    let which = self.advance_text();
                    let inner = Box::new(self.parse_type_args(Some(1))?.remove(0));
                    match which.as_str() {
                        "Future" => Type::Future(inner),
                        "Await" => Type::Await(inner),
                        _ => Type::RRef(inner),
                    }
                }
                "Tensor" => {
                    self.advance();
                    alias_info = self.parse_alias_annotation()?;
                    Type::Tensor
                }
                "Dict" => {
                    self.advance();
                    self.expect_p(b'(')?;
                    let k = self.parse_type()?.0;
                    self.expect_p(b',')?;
                    let v = self.parse_type()?.0;
                    self.expect_p(b')')?;
                    alias_info = self.parse_alias_annotation()?;
                    Type::Dict(Box::new(k), Box::new(v))
                }
                "Union" => {
                    self.advance();
                    let ts = self.parse_type_args(None)?;
                    alias_info = self.parse_alias_annotation()?;
                    Type::Union(ts)
                }
                "__torch__" => {
                    self.advance();
                    let mut path = String::from("__torch__");
                    for expected in ["torch", "classes"] {
                        self.expect_p(b'.')?;
                        let t = self.cur().clone();
                        let part = self.expect_ident("a class path")?;
                        if part != expected {
                            return Err(self
                                .err_at(&t, format!("Expected classes namespace but got {part}")));
                        }
                        path.push('.');
                        path.push_str(part);
                    }
                    for _ in 0..2 {
                        self.expect_p(b'.')?;
                        path.push('.');
                        path.push_str(self.expect_ident("a custom class namespace and name")?);
                    }
                    Type::CustomClass(path)
                }
                _ => {
                    let t = self.parse_base_type()?;
                    alias_info = self.parse_alias_annotation()?;
                    t
                }
            }
        } else if cur.kind == Tok::None || cur.kind == Tok::NoneType {
            self.advance();
            alias_info = self.parse_alias_annotation()?;
            Type::NoneType
        } else {
            return Err(self.err("expected a type"));
        };
        loop {
            if self.cur().kind == Tok::Punct(b'[') && self.peek(1).kind == Tok::Punct(b']') {
                self.advance();
                self.advance();
                self.bump_depth()?;
                ty = Type::List {
                    elem: Box::new(ty),
                    size: None,
                };
                let mut container = self.parse_alias_annotation()?;
                if let Some(inner) = alias_info.take() {
                    let c = container.get_or_insert_with(|| AliasInfo {
                        is_write: inner.is_write,
                        ..AliasInfo::default()
                    });
                    c.contained_types.push(inner);
                }
                alias_info = container;
            } else if self.next_if_p(b'?') {
                self.bump_depth()?;
                ty = Type::Optional(Box::new(ty));
            } else {
                break;
            }
        }
        Ok((ty, alias_info))
    }

    fn parse_base_type(&mut self) -> Result<Type, SchemaError> {
        let t = self.advance();
        let text = self.text(&t);
        Ok(match text {
            "Generator" => Type::Generator,
            "Dimname" => Type::Dimname,
            "ScalarType" => Type::ScalarType,
            "Layout" => Type::Layout,
            "MemoryFormat" => Type::MemoryFormat,
            "Storage" => Type::Storage,
            "QScheme" => Type::QScheme,
            "Quantizer" => Type::Quantizer,
            "ConstQuantizerPtr" => Type::ConstQuantizerPtr,
            "Device" => Type::Device,
            "DeviceIndex" => Type::DeviceIndex,
            "Stream" => Type::Stream,
            "Scalar" => Type::Scalar,
            "str" => Type::Str,
            "float" => Type::Float,
            "complex" => Type::Complex,
            "int" => Type::Int,
            "SymInt" => Type::SymInt,
            "SymFloat" => Type::SymFloat,
            "SymBool" => Type::SymBool,
            "bool" => Type::Bool,
            "Capsule" => Type::Capsule,
            "Any" => Type::Any,
            "AnyClassType" => Type::AnyClassType,
            "AnyEnumType" => Type::AnyEnumType,
            "double" => {
                return Err(self.err_at(
                    &t,
                    "Use `float` instead of `double` in an operator's schema string. \
                     `float` in schema corresponds to the double type in C++",
                ))
            }
            "int64_t" => {
                return Err(self.err_at(
                    &t,
                    "Use `SymInt` or `int` instead of `int64_t` in an operator's schema string",
                ))
            }
            v if v.as_bytes()[0].is_ascii_lowercase() => Type::Var(v.to_string()),
            _ => {
                return Err(self.err_at(
                    &t,
                    "unknown type specifier. Common valid schema types include \
                     Tensor, SymInt, int, float, bool, Scalar",
                ))
            }
        })
    }

    fn parse_number(&mut self, kind: Kind) -> Result<DefaultValue, SchemaError> {
        let neg = self.next_if_p(b'-');
        let t = self.expect(
            Tok::Number,
            "a default value (a number, string, True, False or None)",
        )?;
        let mut n = self.text(&t).to_string();
        if neg {
            n.insert(0, '-');
        }
        let out_of_range = |p: &Self| p.err_at(&t, "number out of range");
        if kind == Kind::Complex || n.contains('j') {
            let body = n.strip_suffix('j').unwrap_or(&n);
            let im: f64 = body.parse().map_err(|_| out_of_range(self))?;
            if !im.is_finite() {
                return Err(out_of_range(self));
            }
            Ok(DefaultValue::Complex { re: 0.0, im })
        } else if kind == Kind::Float || n.contains('.') || n.contains('e') || n.contains('E') {
            let d: f64 = n.parse().map_err(|_| out_of_range(self))?;
            if !d.is_finite() {
                return Err(out_of_range(self));
            }
            Ok(DefaultValue::Float(d))
        } else {
            let v: i64 = n.parse().map_err(|_| out_of_range(self))?;
            Ok(DefaultValue::Int(v))
        }
    }

    fn parse_single_constant(&mut self, kind: Kind) -> Result<DefaultValue, SchemaError> {
        let t = self.cur().clone();
        match t.kind {
            Tok::True => {
                self.advance();
                Ok(DefaultValue::Bool(true))
            }
            Tok::False => {
                self.advance();
                Ok(DefaultValue::Bool(false))
            }
            Tok::None => {
                self.advance();
                Ok(DefaultValue::None)
            }
            Tok::Str => {
                self.advance();
                Ok(DefaultValue::Str(string_value(self.src, &t)?))
            }
            Tok::Ident => {
                self.advance();
                // c10 turns these enum spellings into their numeric values.
                let v = match self.text(&t) {
                    "float" => 6,   // ScalarType::Float
                    "complex" => 9, // ScalarType::ComplexFloat
                    "long" => 4,    // ScalarType::Long
                    "strided" => 0, // Layout::Strided
                    "Mean" => 1,    // Reduction::Mean
                    "contiguous_format" => 0,
                    _ => return Err(self.err_at(&t, "invalid numeric default value")),
                };
                // c10 keeps an int even for a float argument (`float x=Mean`), which then
                // prints as `1` and reads back as `1.`: store it as the argument's kind.
                Ok(match kind {
                    Kind::Float => DefaultValue::Float(v as f64),
                    Kind::Complex => DefaultValue::Complex {
                        re: v as f64,
                        im: 0.0,
                    },
                    _ => DefaultValue::Int(v),
                })
            }
            _ => self.parse_number(kind),
        }
    }

    fn convert_to_list(
        &self,
        kind: Kind,
        at: &Token,
        vs: Vec<DefaultValue>,
    ) -> Result<DefaultValue, SchemaError> {
        let bad = |p: &Self| {
            p.err_at(
                at,
                "lists are only supported for float, int and complex types",
            )
        };
        let wrong = |p: &Self| p.err_at(at, "list element does not match the list's type");
        match kind {
            Kind::Int => vs
                .into_iter()
                .map(|v| match v {
                    DefaultValue::Int(i) => Ok(i),
                    _ => Err(wrong(self)),
                })
                .collect::<Result<_, _>>()
                .map(DefaultValue::IntList),
            Kind::Float => vs
                .into_iter()
                .map(|v| match v {
                    DefaultValue::Float(d) => Ok(d),
                    _ => Err(wrong(self)),
                })
                .collect::<Result<_, _>>()
                .map(DefaultValue::FloatList),
            Kind::Bool => vs
                .into_iter()
                .map(|v| match v {
                    DefaultValue::Bool(b) => Ok(b),
                    _ => Err(wrong(self)),
                })
                .collect::<Result<_, _>>()
                .map(DefaultValue::BoolList),
            Kind::Complex => vs
                .into_iter()
                .map(|v| match v {
                    DefaultValue::Complex { re, im } => Ok((re, im)),
                    DefaultValue::Float(d) => Ok((d, 0.0)),
                    DefaultValue::Int(i) => Ok((i as f64, 0.0)),
                    _ => Err(wrong(self)),
                })
                .collect::<Result<_, _>>()
                .map(DefaultValue::ComplexList),
            _ => Err(bad(self)),
        }
    }

    fn parse_default_value(&mut self, ty: &Type) -> Result<DefaultValue, SchemaError> {
        let at = self.cur().clone();
        match fake_kind(ty) {
            Kind::Tensor | Kind::Generator | Kind::Quantizer => {
                self.expect(Tok::None, "None (the only default of this type)")?;
                Ok(DefaultValue::None)
            }
            k @ (Kind::Str
            | Kind::Optional
            | Kind::Number
            | Kind::Int
            | Kind::Bool
            | Kind::Float
            | Kind::Complex) => self.parse_single_constant(k),
            Kind::Device => {
                let t = self.expect(Tok::Str, "a device string")?;
                Ok(DefaultValue::Device(string_value(self.src, &t)?))
            }
            Kind::List => {
                let (elem, size) = match ty {
                    Type::List { elem, size } => (elem.as_ref(), *size),
                    _ => return Err(self.err("unexpected type")),
                };
                let ek = fake_kind(elem);
                if self.cur().kind == Tok::Ident {
                    self.expect(Tok::None, "None")?;
                    Ok(DefaultValue::None)
                } else if let (Some(n), false) = (size, self.cur().kind == Tok::Punct(b'[')) {
                    // `int[2] stride=1` means `[1, 1]`.
                    if n > MAX_BROADCAST_DEFAULT {
                        return Err(self.err(format!(
                            "a single default for a list of size {n} (more than {MAX_BROADCAST_DEFAULT}) is not supported"
                        )));
                    }
                    let v = self.parse_single_constant(ek)?;
                    let reps = vec![v; n as usize];
                    self.convert_to_list(ek, &at, reps)
                } else {
                    let open = self.expect_p(b'[')?;
                    let mut vs = Vec::new();
                    if self.cur().kind != Tok::Punct(b']') {
                        loop {
                            vs.push(self.parse_single_constant(ek)?);
                            if !self.next_if_p(b',') {
                                break;
                            }
                        }
                    }
                    self.expect_p(b']')?;
                    self.convert_to_list(ek, &open, vs)
                }
            }
            Kind::Other => Err(self.err(format!("a default value is not allowed for type {ty}"))),
        }
    }
}

/// c10's `FunctionSchema::checkSchema`: no positional argument without a default after
/// one with a default (lists excepted, for backward compatibility).
fn check_schema(s: &FunctionSchema) -> Result<(), String> {
    let mut seen_default = false;
    for a in &s.arguments {
        if a.default.is_some() {
            seen_default = true;
        } else if !a.ty.is_list() && seen_default && !a.kwarg_only {
            return Err(format!(
                "Non-default positional argument follows default argument. Parameter {}",
                a.name
            ));
        }
    }
    Ok(())
}

fn parse_whole(src: &str, anonymous: bool) -> Result<SchemaOrName, SchemaError> {
    let mut p = Parser::new(src)?;
    let r = p.parse_declaration(anonymous)?;
    if p.cur().kind != Tok::Eof {
        return Err(p.err("expected end of input"));
    }
    Ok(r)
}

impl FunctionSchema {
    /// Parses a schema `ns::name.overload(args) -> returns`. A text starting with `(`
    /// is read as an anonymous schema (empty name), as printed for inferred kernel
    /// signatures.
    pub fn parse(src: &str) -> Result<FunctionSchema, SchemaError> {
        let anonymous = src.trim_start().starts_with('(');
        match parse_whole(src, anonymous)? {
            SchemaOrName::Schema(s) => Ok(s),
            SchemaOrName::Name(_) => Err(error_at(
                src,
                src.len(),
                "end of input".into(),
                "expected '(': tried to parse a function schema but only the operator name was given",
            )),
        }
    }

    /// Parses a bare signature without a name, `(Tensor self, int dim) -> Tensor`.
    pub fn parse_signature(src: &str) -> Result<FunctionSchema, SchemaError> {
        match parse_whole(src, true)? {
            SchemaOrName::Schema(s) => Ok(s),
            SchemaOrName::Name(_) => Err(error_at(src, 0, "a name".into(), "expected '('")),
        }
    }
}

impl OperatorName {
    /// Parses `ns::name.overload` (no argument list).
    pub fn parse(src: &str) -> Result<OperatorName, SchemaError> {
        match parse_whole(src, false)? {
            SchemaOrName::Name(n) => Ok(n),
            SchemaOrName::Schema(_) => Err(error_at(
                src,
                0,
                "a schema".into(),
                "tried to parse an operator name but a function schema was given",
            )),
        }
    }
}

/// Parses either a bare operator name or a whole schema (c10's `parseSchemaOrName`).
pub fn parse_schema_or_name(src: &str) -> Result<SchemaOrName, SchemaError> {
    parse_whole(src, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(s: &str) -> FunctionSchema {
        let p = FunctionSchema::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        let printed = p.to_string();
        assert_eq!(FunctionSchema::parse(&printed).unwrap(), p, "{printed}");
        p
    }

    fn c10(s: &str) -> String {
        rt(s).to_string()
    }

    fn err(s: &str) -> SchemaError {
        FunctionSchema::parse(s).expect_err(s)
    }

    #[test]
    fn name_and_overload() {
        let s = rt("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
        assert_eq!(s.name.name, "aten::add");
        assert_eq!(s.name.overload_name, "Tensor");
        assert_eq!(s.name.namespace(), Some("aten"));
        assert_eq!(s.name.unqualified_name(), "add");
        assert!(s.arguments[2].kwarg_only);
        assert_eq!(s.arguments[2].default, Some(DefaultValue::Int(1)));
        let s = rt("relu(Tensor self) -> Tensor");
        assert_eq!(s.name.namespace(), None);
        assert_eq!(s.name.overload_name, "");
    }

    #[test]
    fn every_base_type_prints_its_real_type() {
        let cases = [
            ("Tensor", "Tensor"),
            ("Scalar", "Scalar"),
            ("int", "int"),
            ("SymInt", "SymInt"),
            ("SymFloat", "SymFloat"),
            ("SymBool", "SymBool"),
            ("float", "float"),
            ("complex", "complex"),
            ("bool", "bool"),
            ("str", "str"),
            ("Dimname", "str"),
            ("ScalarType", "ScalarType"),
            ("Layout", "Layout"),
            ("MemoryFormat", "MemoryFormat"),
            ("Device", "Device"),
            ("DeviceIndex", "int"),
            ("Generator", "Generator"),
            ("Storage", "Storage"),
            ("Stream", "Stream"),
            ("QScheme", "QScheme"),
            ("Quantizer", "Quantizer"),
            ("ConstQuantizerPtr", "int"),
            ("Capsule", "Capsule"),
            ("Any", "Any"),
            ("AnyClassType", "AnyClassType"),
            ("AnyEnumType", "AnyEnumType"),
            ("NoneType", "NoneType"),
            ("None", "NoneType"),
            ("t", "t"),
        ];
        for (written, printed) in cases {
            let s = rt(&format!("f({written} x) -> {written}"));
            assert_eq!(s.to_string(), format!("f({printed} x) -> {printed}"));
            let source = if written == "None" {
                "NoneType"
            } else {
                written
            };
            assert_eq!(s.to_source_string(), format!("f({source} x) -> {source}"));
        }
    }

    #[test]
    fn containers() {
        let s = rt("f(Tensor? a, Tensor[] b, Tensor?[] c, int[] d, int[2] e, SymInt[2]? f, bool[3] g, Dimname[] h) -> ()");
        assert_eq!(s.arguments[0].ty, Type::optional(Type::Tensor));
        assert_eq!(s.arguments[2].ty, Type::list(Type::optional(Type::Tensor)));
        assert_eq!(s.arguments[4].ty, Type::sized_list(Type::Int, 2));
        assert_eq!(
            s.arguments[5].ty,
            Type::optional(Type::sized_list(Type::SymInt, 2))
        );
        assert_eq!(s.arguments[5].size_hint(), Some(2));
        assert_eq!(
            s.to_string(),
            "f(Tensor? a, Tensor[] b, Tensor?[] c, int[] d, int[2] e, SymInt[2]? f, bool[3] g, str[] h) -> ()"
        );
        assert_eq!(
            c10("f((int, Tensor) a, Dict(str, Tensor) b, Future(int) c, Await(int) d, RRef(Tensor) e, Union(int, str) g) -> int[][]"),
            "f((int, Tensor) a, Dict(str, Tensor) b, Future(int) c, Await(int) d, RRef(Tensor) e, Union(int, str) g) -> int[][]"
        );
        assert_eq!(
            c10("f(__torch__.torch.classes.quantized.Conv2dPackedParamsBase x) -> ()"),
            "f(__torch__.torch.classes.quantized.Conv2dPackedParamsBase x) -> ()"
        );
    }

    #[test]
    fn defaults_print_as_c10() {
        let cases = [
            ("float eps=1e-05", "float eps=1.0000000000000001e-05"),
            ("float p=0.5", "float p=0.5"),
            ("float p=1.0", "float p=1."),
            ("float p=0", "float p=0."),
            ("float m=0.1", "float m=0.10000000000000001"),
            ("float x=-0.0", "float x=-0."),
            ("float x=1e20", "float x=1e+20"),
            ("float x=12345678901.5", "float x=12345678901.5"),
            ("Scalar alpha=1", "Scalar alpha=1"),
            ("Scalar alpha=1.5", "Scalar alpha=1.5"),
            ("int dim=-1", "int dim=-1"),
            ("int[] dims=[0,1]", "int[] dims=[0, 1]"),
            ("int[] dims=[]", "int[] dims=[]"),
            ("int[2] stride=1", "int[2] stride=1"),
            ("int[2] stride=[1, 1]", "int[2] stride=1"),
            ("int[2] padding=[0, 1]", "int[2] padding=[0, 1]"),
            ("int[1] dim=1", "int[1] dim=[1]"),
            ("SymInt[2] stride=1", "SymInt[2] stride=[1, 1]"),
            ("float[] s=[1, 2.5]", "float[] s=[1., 2.5]"),
            (
                "bool[3] mask=[True, False, True]",
                "bool[3] mask=[True, False, True]",
            ),
            ("bool keepdim=False", "bool keepdim=False"),
            ("bool? b=True", "bool? b=True"),
            ("Tensor? w=None", "Tensor? w=None"),
            ("str mode='reduced'", "str mode=\"reduced\""),
            ("str? rounding_mode=None", "str? rounding_mode=None"),
            ("str s=\"a\\\"'\\\\\"", "str s=\"a\\\"\\'\\\\\""),
            (
                "MemoryFormat memory_format=contiguous_format",
                "MemoryFormat memory_format=0",
            ),
            ("int reduction=Mean", "int reduction=1"),
            ("ScalarType dtype=long", "ScalarType dtype=4"),
            ("ScalarType dtype=float", "ScalarType dtype=6"),
            ("ScalarType dtype=complex", "ScalarType dtype=9"),
            ("Layout layout=strided", "Layout layout=0"),
            ("complex c=2j", "complex c=0.+2.j"),
            ("Device d=\"cpu\"", "Device d=cpu"),
            ("Generator? g=None", "Generator? g=None"),
        ];
        for (written, printed) in cases {
            let s = FunctionSchema::parse(&format!("f({written}) -> ()")).unwrap();
            assert_eq!(s.to_string(), format!("f({printed}) -> ()"), "{written}");
            assert_eq!(s.to_source_string(), format!("f({written}) -> ()"));
        }
        let s = rt("f(float eps=1e-05, int[2] s=1, MemoryFormat m=contiguous_format) -> ()");
        assert_eq!(s.arguments[0].default, Some(DefaultValue::Float(1e-05)));
        assert_eq!(
            s.arguments[1].default,
            Some(DefaultValue::IntList(vec![1, 1]))
        );
        assert_eq!(s.arguments[2].default, Some(DefaultValue::Int(0)));
        assert_eq!(
            s.arguments[2].default_text.as_deref(),
            Some("contiguous_format")
        );
    }

    #[test]
    fn alias_annotations() {
        let s = rt("f(Tensor(a!) self, Tensor(a) b, Tensor(a -> *) c, Tensor(b!)[] d, Tensor(a|b) e, Tensor(*) g, Tensor(a!)? h) -> Tensor(a!)");
        let a = s.arguments[0].alias_info.as_ref().unwrap();
        assert!(a.is_write);
        assert_eq!(a.before_sets, vec!["a"]);
        let c = s.arguments[2].alias_info.as_ref().unwrap();
        assert!(c.is_wildcard_after() && !c.is_wildcard_before());
        let d = s.arguments[3].alias_info.as_ref().unwrap();
        assert!(d.before_sets.is_empty() && d.is_write);
        assert_eq!(d.contained_types[0], AliasInfo::new("b", true));
        assert!(s.arguments[6].is_write());
        assert_eq!(
            s.to_string(),
            "f(Tensor(a!) self, Tensor(a) b, Tensor(a -> *) c, Tensor(b!)[] d, Tensor(a|b) e, Tensor(*) g, Tensor(a!)? h) -> Tensor(a!)"
        );
        // `Tensor!` is a fresh write set.
        let s = rt("f(Tensor! x, Tensor! y) -> ()");
        assert_eq!(s.to_string(), "f(Tensor($0!) x, Tensor($1!) y) -> ()");
        // Sized lists carry the element annotation before the size.
        assert_eq!(c10("f(Tensor(a)[2] x) -> ()"), "f(Tensor(a)[2] x) -> ()");
    }

    #[test]
    fn kwarg_only_and_out() {
        let s = rt("f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
        assert!(s.arguments[1].is_out());
        assert!(!s.arguments[0].is_out());
        assert_eq!(s.out_arguments().count(), 1);
        assert_eq!(s.positional_arguments().count(), 1);
        assert!(s.is_mutable());
        // `*` printed once, before the first keyword-only argument.
        assert_eq!(c10("f(*, int a, int b) -> ()"), "f(*, int a, int b) -> ()");
    }

    #[test]
    fn returns() {
        assert_eq!(c10("f(Tensor a) -> Tensor"), "f(Tensor a) -> Tensor");
        assert_eq!(c10("f(Tensor a) -> (Tensor)"), "f(Tensor a) -> Tensor");
        assert_eq!(
            c10("f(Tensor a) -> (Tensor, Tensor)"),
            "f(Tensor a) -> (Tensor, Tensor)"
        );
        assert_eq!(
            c10("f(Tensor a) -> (Tensor values, Tensor indices)"),
            "f(Tensor a) -> (Tensor values, Tensor indices)"
        );
        assert_eq!(
            c10("f(Tensor a) -> (Tensor out)"),
            "f(Tensor a) -> Tensor out"
        );
        assert_eq!(c10("f(Tensor a) -> ()"), "f(Tensor a) -> ()");
        assert_eq!(c10("f(Tensor a) -> Tensor[]"), "f(Tensor a) -> Tensor[]");
        // A single tuple return keeps its parentheses.
        assert_eq!(
            c10("f(Tensor a) -> ((int, int))"),
            "f(Tensor a) -> ((int, int))"
        );
        assert_eq!(
            c10("f(Dict(str, t) self) -> ((str, t)[])"),
            "f(Dict(str, t) self) -> ((str, t)[])"
        );
        let s = rt("f(Tensor a) -> (Tensor values, Tensor indices)");
        assert_eq!(s.returns[0].name.as_deref(), Some("values"));
    }

    #[test]
    fn varargs() {
        assert_eq!(c10("prim::f(...) -> ..."), "prim::f(...) -> ...");
        assert_eq!(
            c10("prim::f(int a, ...) -> (int, ...)"),
            "prim::f(int a, ...) -> (int, ...)"
        );
        let s = rt("prim::f(...) -> ...");
        assert!(s.is_vararg && s.is_varret && s.returns.is_empty());
    }

    #[test]
    fn anonymous_schema() {
        let s = FunctionSchema::parse_signature("(Tensor _0) -> Tensor _0").unwrap();
        assert!(s.name.name.is_empty());
        assert_eq!(s.to_string(), "(Tensor _0) -> Tensor _0");
        assert_eq!(
            FunctionSchema::parse("(Tensor _0, int _1) -> ()")
                .unwrap()
                .to_string(),
            "(Tensor _0, int _1) -> ()"
        );
        assert!(FunctionSchema::parse_signature("f(Tensor a) -> ()").is_err());
    }

    #[test]
    fn operator_names() {
        let n = OperatorName::parse("aten::add.Tensor").unwrap();
        assert_eq!(n.to_string(), "aten::add.Tensor");
        assert!(OperatorName::parse("aten::add(Tensor a) -> Tensor").is_err());
        assert!(matches!(
            parse_schema_or_name("aten::relu"),
            Ok(SchemaOrName::Name(_))
        ));
        let mut n = OperatorName::new("relu", "");
        assert!(n.set_namespace_if_not_set("aten"));
        assert!(!n.set_namespace_if_not_set("other"));
        assert_eq!(n.to_string(), "aten::relu");
    }

    #[test]
    fn errors_name_position_and_expectation() {
        let e = err("aten::add(Tensor self, Tensor other -> Tensor");
        assert_eq!((e.line, e.column), (1, 37));
        assert!(e.message.contains("')'"), "{e}");
        let e = err("f(Foo x) -> ()");
        assert_eq!((e.line, e.column), (1, 3));
        assert!(e.message.contains("unknown type specifier"));
        assert_eq!(e.found, "'Foo'");
        let e = err("f(double x) -> ()");
        assert!(e.message.contains("Use `float`"));
        let e = err("f(int64_t x) -> ()");
        assert!(e.message.contains("`SymInt` or `int`"));
        let e = err("f(Tensor x)");
        assert!(e.message.contains("'->'") && e.found == "end of input");
        assert!(err("f(Tensor x) -> Tensor extra junk")
            .message
            .contains("end of input"));
        assert!(err("aten::f").message.contains("only the operator name"));
        assert!(err("f.default(Tensor x) -> ()")
            .message
            .contains("not a legal overload name"));
        assert!(err("f.__x(Tensor x) -> ()")
            .message
            .contains("not a legal overload name"));
        assert!(err("f(int x=1, int y) -> ()")
            .message
            .contains("Non-default positional"));
        assert!(FunctionSchema::parse("f(int x=1, int[] y) -> ()").is_ok());
        assert!(FunctionSchema::parse("f(int x=1, *, int y) -> ()").is_ok());
        assert!(err("f(..., int x) -> ()")
            .message
            .contains("last element of the argument list"));
        assert!(err("f() -> (..., int)")
            .message
            .contains("last element of the return list"));
        assert!(err("f(int x=1, ...) -> ()").message.contains("vararg"));
        assert!(err("f(int x=foo) -> ()")
            .message
            .contains("invalid numeric default"));
        assert!(err("f(Tensor x=1) -> ()").message.contains("None"));
        assert!(err("f(Scalar[] x=[1]) -> ()")
            .message
            .contains("lists are only supported"));
        assert!(err("f(int[] x=[1.5]) -> ()")
            .message
            .contains("does not match"));
        assert!(err("f(int x=99999999999999999999) -> ()")
            .message
            .contains("out of range"));
        assert!(err("f(float x=1e999) -> ()")
            .message
            .contains("out of range"));
        assert!(err("f(str x='abc) -> ()").message.contains("closing quote"));
        assert!(err("f(str x='\\x41') -> ()").message.contains("hex"));
        assert!(err("f(int[a] x) -> ()").message.contains("list size"));
        assert!(err("f(int[4000000000] x=1) -> ()")
            .message
            .contains("not supported"));
        assert!(err("f(Tensor(a x) -> ()").message.contains("')'"));
        assert!(err("f(Tensor x) -> ()\u{e9}")
            .message
            .contains("expected a name"));
        assert!(err("f(__torch__.foo.classes.a.b x) -> ()")
            .message
            .contains("classes namespace"));
        let deep = format!("f(int{} x) -> ()", "?".repeat(200));
        assert!(err(&deep).message.contains("nesting"));
        let deep = format!("f({}int{} x) -> ()", "(".repeat(200), ")".repeat(200));
        assert!(err(&deep).message.contains("nesting"));
        let e = err("f(Tensor a,\n  Foo b) -> ()");
        assert_eq!((e.line, e.column), (2, 3));
        assert!(err("").message.contains("operator name"));
    }

    #[test]
    fn enum_defaults_take_the_argument_kind() {
        // Found by the fuzzer: printing must be stable.
        let s =
            FunctionSchema::parse("cosjne_loss(Tensor it, float redction=Mean) -> Tensor").unwrap();
        assert_eq!(s.arguments[1].default, Some(DefaultValue::Float(1.0)));
        let printed = s.to_string();
        assert_eq!(
            printed,
            "cosjne_loss(Tensor it, float redction=1.) -> Tensor"
        );
        assert_eq!(
            FunctionSchema::parse(&printed).unwrap().to_string(),
            printed
        );
    }

    #[test]
    fn string_escapes() {
        let s = rt(r#"f(str a='\n\t\\\'', str b="\101") -> ()"#);
        assert_eq!(
            s.arguments[0].default,
            Some(DefaultValue::Str("\n\t\\'".into()))
        );
        assert_eq!(s.arguments[1].default, Some(DefaultValue::Str("A".into())));
        assert_eq!(s.to_string(), r#"f(str a="\n\t\\\'", str b="A") -> ()"#);
    }

    #[test]
    fn equality_ignores_default_spelling_and_alias_set_order() {
        let a = FunctionSchema::parse("f(Tensor(a|b) x, MemoryFormat m=contiguous_format) -> ()")
            .unwrap();
        let b = FunctionSchema::parse("f(Tensor(b|a) x, MemoryFormat m=0) -> ()").unwrap();
        assert_eq!(a, b);
        let c = FunctionSchema::parse("f(Tensor(b|a) x, MemoryFormat m=1) -> ()").unwrap();
        assert_ne!(a, c);
        // Dimname is a str to c10.
        assert_eq!(
            FunctionSchema::parse("f(Dimname d) -> ()").unwrap(),
            FunctionSchema::parse("f(str d) -> ()").unwrap()
        );
    }
}
