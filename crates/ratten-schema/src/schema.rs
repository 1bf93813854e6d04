//! The function schema model (c10's `FunctionSchema`) and its printing.
//!
//! Printing through [`fmt::Display`] follows c10's `operator<<(ostream&, const FunctionSchema&)`
//! exactly: real types (`Dimname` prints as `str`), defaults printed as the parsed value
//! (`contiguous_format` as `0`, `Mean` as `1`, `1e-05` as `1.0000000000000001e-05`,
//! `int[2] stride=1` as `1`, strings in double quotes), a single return without parentheses.
//! [`FunctionSchema::to_source_string`] prints the spelling torchgen keeps instead
//! (`Dimname`, defaults as written), which is what native_functions.yaml holds.

use std::fmt::{self, Write as _};

/// An operator's name: `aten::add` plus its overload name `Tensor` (empty for the default
/// overload).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct OperatorName {
    /// The namespace-qualified name, e.g. `aten::add` (may lack a namespace, e.g. `add`).
    pub name: String,
    /// The overload name, e.g. `Tensor`; empty for the default overload.
    pub overload_name: String,
}

impl OperatorName {
    pub fn new(name: impl Into<String>, overload_name: impl Into<String>) -> Self {
        OperatorName {
            name: name.into(),
            overload_name: overload_name.into(),
        }
    }

    /// The namespace (`aten` of `aten::add`), if the name has one.
    pub fn namespace(&self) -> Option<&str> {
        self.name.find("::").map(|i| &self.name[..i])
    }

    /// The name without its namespace (`add` of `aten::add`).
    pub fn unqualified_name(&self) -> &str {
        match self.name.find("::") {
            Some(i) => &self.name[i + 2..],
            None => &self.name,
        }
    }

    /// Sets the namespace if the name has none; returns whether it did (c10's
    /// `setNamespaceIfNotSet`).
    pub fn set_namespace_if_not_set(&mut self, ns: &str) -> bool {
        if self.namespace().is_some() {
            return false;
        }
        self.name = format!("{ns}::{}", self.name);
        true
    }
}

impl fmt::Display for OperatorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.overload_name.is_empty() {
            write!(f, ".{}", self.overload_name)?;
        }
        Ok(())
    }
}

/// A type of PyTorch's schema language. The variants are the *real* types of c10 (what
/// printing shows), plus the spellings that c10 maps onto another real type (`Dimname`
/// is `str`, `DeviceIndex` and `ConstQuantizerPtr` are `int`) so that the code generator
/// still sees what the declaration said.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    Tensor,
    Int,
    SymInt,
    SymFloat,
    SymBool,
    Float,
    Complex,
    Bool,
    Str,
    /// `Dimname`: a `str` to c10, `at::Dimname` to the code generator.
    Dimname,
    /// `Scalar` (c10's NumberType).
    Scalar,
    ScalarType,
    Layout,
    MemoryFormat,
    Device,
    /// `DeviceIndex`: an `int` to c10.
    DeviceIndex,
    Generator,
    Storage,
    Stream,
    QScheme,
    Quantizer,
    /// `ConstQuantizerPtr`: an `int` to c10.
    ConstQuantizerPtr,
    Capsule,
    Any,
    AnyClassType,
    AnyEnumType,
    /// `None` / `NoneType`.
    NoneType,
    /// `T?`
    Optional(Box<Type>),
    /// `T[]`, or `T[N]` with a fixed size (sizes appear only on arguments).
    List {
        elem: Box<Type>,
        size: Option<u32>,
    },
    /// `(T1, T2)`
    Tuple(Vec<Type>),
    /// `Dict(K, V)`
    Dict(Box<Type>, Box<Type>),
    /// `Future(T)`
    Future(Box<Type>),
    /// `Await(T)`
    Await(Box<Type>),
    /// `RRef(T)`
    RRef(Box<Type>),
    /// `Union(T1, T2)`
    Union(Vec<Type>),
    /// A type variable: a lower-case identifier that names no type (`t`).
    Var(String),
    /// `__torch__.torch.classes.ns.Name`: a custom class, kept by its qualified name.
    CustomClass(String),
}

impl Type {
    /// The type c10 stores as the argument's real type: `Dimname` becomes `str`,
    /// `DeviceIndex` and `ConstQuantizerPtr` become `int`, recursively.
    pub fn real(&self) -> Type {
        match self {
            Type::Dimname => Type::Str,
            Type::DeviceIndex | Type::ConstQuantizerPtr => Type::Int,
            Type::Optional(t) => Type::Optional(Box::new(t.real())),
            Type::List { elem, size } => Type::List {
                elem: Box::new(elem.real()),
                size: *size,
            },
            Type::Tuple(ts) => Type::Tuple(ts.iter().map(Type::real).collect()),
            Type::Union(ts) => Type::Union(ts.iter().map(Type::real).collect()),
            Type::Dict(k, v) => Type::Dict(Box::new(k.real()), Box::new(v.real())),
            Type::Future(t) => Type::Future(Box::new(t.real())),
            Type::Await(t) => Type::Await(Box::new(t.real())),
            Type::RRef(t) => Type::RRef(Box::new(t.real())),
            t => t.clone(),
        }
    }

    /// Convenience constructor for `T[]`.
    pub fn list(elem: Type) -> Type {
        Type::List {
            elem: Box::new(elem),
            size: None,
        }
    }

    /// Convenience constructor for `T[N]`.
    pub fn sized_list(elem: Type, size: u32) -> Type {
        Type::List {
            elem: Box::new(elem),
            size: Some(size),
        }
    }

    /// Convenience constructor for `T?`.
    pub fn optional(t: Type) -> Type {
        Type::Optional(Box::new(t))
    }

    /// Whether this is `T?`.
    pub fn is_optional(&self) -> bool {
        matches!(self, Type::Optional(_))
    }

    /// The element of `T?`, or the type itself.
    pub fn unwrap_optional(&self) -> &Type {
        match self {
            Type::Optional(t) => t,
            t => t,
        }
    }

    /// Whether this is a list (`T[]`, `T[N]`), not looking through `?`.
    pub fn is_list(&self) -> bool {
        matches!(self, Type::List { .. })
    }

    /// Whether a Tensor appears in it (Tensor, Tensor?, Tensor[], Tensor?[], ...), as
    /// torchgen's `is_tensor_like`.
    pub fn is_tensor_like(&self) -> bool {
        match self {
            Type::Tensor => true,
            Type::Optional(t) => t.is_tensor_like(),
            Type::List { elem, .. } => elem.is_tensor_like(),
            _ => false,
        }
    }

    /// Whether it is a symbolic integer type (SymInt, SymInt[], SymInt?, ...).
    pub fn is_symint_like(&self) -> bool {
        match self {
            Type::SymInt => true,
            Type::Optional(t) => t.is_symint_like(),
            Type::List { elem, .. } => elem.is_symint_like(),
            _ => false,
        }
    }

    /// The type as written in a declaration (`Dimname`, not `str`).
    pub fn to_source_string(&self) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = write_type(&mut s, self, true);
        s
    }

    fn base_str(&self, source: bool) -> Option<&'static str> {
        Some(match self {
            Type::Tensor => "Tensor",
            Type::Int => "int",
            Type::SymInt => "SymInt",
            Type::SymFloat => "SymFloat",
            Type::SymBool => "SymBool",
            Type::Float => "float",
            Type::Complex => "complex",
            Type::Bool => "bool",
            Type::Str => "str",
            Type::Dimname => {
                if source {
                    "Dimname"
                } else {
                    "str"
                }
            }
            Type::Scalar => "Scalar",
            Type::ScalarType => "ScalarType",
            Type::Layout => "Layout",
            Type::MemoryFormat => "MemoryFormat",
            Type::Device => "Device",
            Type::DeviceIndex => {
                if source {
                    "DeviceIndex"
                } else {
                    "int"
                }
            }
            Type::Generator => "Generator",
            Type::Storage => "Storage",
            Type::Stream => "Stream",
            Type::QScheme => "QScheme",
            Type::Quantizer => "Quantizer",
            Type::ConstQuantizerPtr => {
                if source {
                    "ConstQuantizerPtr"
                } else {
                    "int"
                }
            }
            Type::Capsule => "Capsule",
            Type::Any => "Any",
            Type::AnyClassType => "AnyClassType",
            Type::AnyEnumType => "AnyEnumType",
            Type::NoneType => "NoneType",
            _ => return None,
        })
    }
}

fn write_type<W: fmt::Write>(f: &mut W, ty: &Type, source: bool) -> fmt::Result {
    if let Some(s) = ty.base_str(source) {
        return f.write_str(s);
    }
    match ty {
        Type::Optional(t) => {
            write_type(f, t, source)?;
            f.write_char('?')
        }
        Type::List { elem, size } => {
            write_type(f, elem, source)?;
            match size {
                Some(n) => write!(f, "[{n}]"),
                None => f.write_str("[]"),
            }
        }
        Type::Tuple(ts) => write_type_list(f, "(", ts, source),
        Type::Union(ts) => write_type_list(f, "Union(", ts, source),
        Type::Dict(k, v) => {
            f.write_str("Dict(")?;
            write_type(f, k, source)?;
            f.write_str(", ")?;
            write_type(f, v, source)?;
            f.write_char(')')
        }
        Type::Future(t) => write_type_list(f, "Future(", std::slice::from_ref(t), source),
        Type::Await(t) => write_type_list(f, "Await(", std::slice::from_ref(t), source),
        Type::RRef(t) => write_type_list(f, "RRef(", std::slice::from_ref(t), source),
        Type::Var(v) => f.write_str(v),
        Type::CustomClass(c) => f.write_str(c),
        _ => Ok(()),
    }
}

fn write_type_list<W: fmt::Write, T: std::borrow::Borrow<Type>>(
    f: &mut W,
    open: &str,
    ts: &[T],
    source: bool,
) -> fmt::Result {
    f.write_str(open)?;
    for (i, t) in ts.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_type(f, t.borrow(), source)?;
    }
    f.write_char(')')
}

impl fmt::Display for Type {
    /// c10's `Type::str()` of the real type.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_type(f, self, false)
    }
}

/// The wildcard alias set `*`.
pub const WILDCARD_SET: &str = "*";

/// An alias annotation: `(a)`, `(a!)`, `(a -> *)`, `(a|b)`, and for lists the
/// annotation of the elements in `contained_types` (`Tensor(a!)[]`), as c10's AliasInfo.
/// Set names are stored without c10's `alias::` prefix.
#[derive(Debug, Clone, Default, Eq)]
pub struct AliasInfo {
    /// The alias sets before the call, in the order written.
    pub before_sets: Vec<String>,
    /// The alias sets after the call (equal to `before_sets` unless `->` was written).
    pub after_sets: Vec<String>,
    /// `!`: the value is written to.
    pub is_write: bool,
    /// Annotations of contained values (list elements, tuple members).
    pub contained_types: Vec<AliasInfo>,
}

impl AliasInfo {
    /// `(set)` or `(set!)`.
    pub fn new(set: &str, is_write: bool) -> Self {
        AliasInfo {
            before_sets: vec![set.to_string()],
            after_sets: vec![set.to_string()],
            is_write,
            contained_types: Vec::new(),
        }
    }

    pub fn is_wildcard_before(&self) -> bool {
        self.before_sets.iter().any(|s| s == WILDCARD_SET)
    }

    pub fn is_wildcard_after(&self) -> bool {
        self.after_sets.iter().any(|s| s == WILDCARD_SET)
    }
}

fn same_set(a: &[String], b: &[String]) -> bool {
    a.iter().all(|x| b.contains(x)) && b.iter().all(|x| a.contains(x))
}

/// c10 keeps the sets in unordered sets: equality ignores the order they were written in.
impl PartialEq for AliasInfo {
    fn eq(&self, other: &Self) -> bool {
        self.is_write == other.is_write
            && same_set(&self.before_sets, &other.before_sets)
            && same_set(&self.after_sets, &other.after_sets)
            && self.contained_types == other.contained_types
    }
}

impl fmt::Display for AliasInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('(')?;
        f.write_str(&self.before_sets.join("|"))?;
        if self.is_write {
            f.write_char('!')?;
        }
        if !same_set(&self.before_sets, &self.after_sets) {
            f.write_str(" -> ")?;
            f.write_str(&self.after_sets.join("|"))?;
        }
        f.write_char(')')
    }
}

/// A default value as the schema parser stores it (c10 keeps an IValue): enum-like
/// identifiers are already numbers (`contiguous_format` is 0, `Mean` is 1, `long` is 4),
/// `int[2] x=1` is the list `[1, 1]`.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A complex number `re + im j` (the parser makes `2j` into `0+2j`).
    Complex {
        re: f64,
        im: f64,
    },
    Str(String),
    IntList(Vec<i64>),
    FloatList(Vec<f64>),
    BoolList(Vec<bool>),
    ComplexList(Vec<(f64, f64)>),
    /// A `Device` default, as its string (`"cpu"`).
    Device(String),
}

/// Prints a double as c10's IValue printing does: integral values below 1e10 as `1.`,
/// others with 17 significant digits (`%.17g`).
pub fn format_double(d: f64) -> String {
    if d.is_finite() && d.abs() < 1e10 && d == d.trunc() {
        let i = d as i64;
        if i == 0 && d.is_sign_negative() {
            return "-0.".to_string();
        }
        return format!("{i}.");
    }
    format_g17(d)
}

/// C's `%.17g` (what `std::setprecision(max_digits10)` gives on an ostream).
fn format_g17(d: f64) -> String {
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if d.is_infinite() {
        return if d < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    const P: i32 = 17;
    let sci = format!("{:.*e}", (P - 1) as usize, d);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    if (-4..P).contains(&x) {
        let fixed = format!("{:.*}", (P - 1 - x) as usize, d);
        strip_zeros(&fixed).to_string()
    } else {
        let m = strip_zeros(mantissa);
        let sign = if x < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", x.abs())
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// c10's `printQuotedString`.
pub fn quote_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for b in s.bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'"' => out.push_str("\\\""),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x0b => out.push_str("\\v"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{:03o}", b);
            }
        }
    }
    out.push('"');
    out
}

fn write_list<W: fmt::Write, T>(f: &mut W, xs: &[T], each: impl Fn(&T) -> String) -> fmt::Result {
    f.write_char('[')?;
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        f.write_str(&each(x))?;
    }
    f.write_char(']')
}

fn format_complex(re: f64, im: f64) -> String {
    let sign = if im >= 0.0 { '+' } else { '-' };
    format!("{}{}{}j", format_double(re), sign, format_double(im.abs()))
}

fn format_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

impl fmt::Display for DefaultValue {
    /// c10's IValue printing (strings unquoted, as IValue prints them).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefaultValue::None => f.write_str("None"),
            DefaultValue::Bool(b) => f.write_str(&format_bool(*b)),
            DefaultValue::Int(i) => write!(f, "{i}"),
            DefaultValue::Float(d) => f.write_str(&format_double(*d)),
            DefaultValue::Complex { re, im } => f.write_str(&format_complex(*re, *im)),
            DefaultValue::Str(s) | DefaultValue::Device(s) => f.write_str(s),
            DefaultValue::IntList(v) => write_list(f, v, |i| i.to_string()),
            DefaultValue::FloatList(v) => write_list(f, v, |d| format_double(*d)),
            DefaultValue::BoolList(v) => write_list(f, v, |b| format_bool(*b)),
            DefaultValue::ComplexList(v) => write_list(f, v, |(re, im)| format_complex(*re, *im)),
        }
    }
}

/// One argument of a schema: `Tensor(a!) self`, `int[2] stride=1`, `*, Tensor(a!) out`.
#[derive(Debug, Clone)]
pub struct Argument {
    pub name: String,
    /// The declared type; a fixed size (`int[2]`) lives in [`Type::List`].
    pub ty: Type,
    /// The parsed default value.
    pub default: Option<DefaultValue>,
    /// The default exactly as written (`contiguous_format`, `'none'`, `1e-05`), for code
    /// generation; not part of equality (c10 compares values).
    pub default_text: Option<String>,
    /// Declared after `*`.
    pub kwarg_only: bool,
    /// The alias annotation; for a list, the elements' annotation is in
    /// `contained_types`.
    pub alias_info: Option<AliasInfo>,
}

impl Argument {
    /// A plain argument without default or annotation.
    pub fn new(name: impl Into<String>, ty: Type) -> Self {
        Argument {
            name: name.into(),
            ty,
            default: None,
            default_text: None,
            kwarg_only: false,
            alias_info: None,
        }
    }

    /// Whether the argument is written to (`(a!)` on it or on its elements).
    pub fn is_write(&self) -> bool {
        self.alias_info.as_ref().is_some_and(|a| a.is_write)
    }

    /// c10's `is_out`: keyword-only and written to.
    pub fn is_out(&self) -> bool {
        self.kwarg_only && self.is_write()
    }

    /// The fixed list size N of `T[N]` / `T[N]?`.
    pub fn size_hint(&self) -> Option<u32> {
        match self.ty.unwrap_optional() {
            Type::List { size, .. } => *size,
            _ => None,
        }
    }

    fn write(&self, f: &mut impl fmt::Write, source: bool) -> fmt::Result {
        write_arg_type(f, &self.ty, self.alias_info.as_ref(), source)?;
        if !self.name.is_empty() {
            f.write_char(' ')?;
            f.write_str(&self.name)?;
        }
        if source {
            if let Some(text) = &self.default_text {
                f.write_char('=')?;
                return f.write_str(text);
            }
        }
        if let Some(d) = &self.default {
            f.write_char('=')?;
            let real = self.ty.real();
            match (&real, d) {
                (t, DefaultValue::Str(s)) if matches!(t.unwrap_optional(), Type::Str) => {
                    f.write_str(&quote_string(s))?
                }
                // c10 prints `int[2] stride=1`, not `[1, 1]`, when all elements agree.
                (Type::List { elem, .. }, DefaultValue::IntList(v))
                    if **elem == Type::Int && v.len() > 1 && v.iter().all(|x| *x == v[0]) =>
                {
                    write!(f, "{}", v[0])?
                }
                _ => write!(f, "{d}")?,
            }
        }
        Ok(())
    }
}

/// c10's Argument printing of the type part: `Type(alias)?`, list element annotations
/// before the brackets.
pub(crate) fn write_arg_type(
    f: &mut impl fmt::Write,
    ty: &Type,
    alias: Option<&AliasInfo>,
    source: bool,
) -> fmt::Result {
    let unopt = ty.unwrap_optional();
    if let Type::List { elem, size } = unopt {
        write_type(f, elem, source)?;
        if let Some(inner) = alias.and_then(|a| a.contained_types.first()) {
            write!(f, "{inner}")?;
        }
        f.write_char('[')?;
        if let Some(n) = size {
            write!(f, "{n}")?;
        }
        f.write_char(']')?;
    } else {
        write_type(f, unopt, source)?;
    }
    if let Some(a) = alias {
        if !a.before_sets.is_empty() {
            write!(f, "{a}")?;
        }
    }
    if ty.is_optional() {
        f.write_char('?')?;
    }
    Ok(())
}

/// Equality as c10's: names, real types, default values, keyword-only-ness and alias
/// annotations; not the spelling of a default.
impl PartialEq for Argument {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.ty.real() == other.ty.real()
            && self.default == other.default
            && self.kwarg_only == other.kwarg_only
            && self.alias_info == other.alias_info
    }
}

impl fmt::Display for Argument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, false)
    }
}

/// One return: `Tensor(a!)`, `Tensor values` (named), `int[]`.
#[derive(Debug, Clone)]
pub struct Return {
    /// The field name of a named return; `None` when unnamed.
    pub name: Option<String>,
    pub ty: Type,
    pub alias_info: Option<AliasInfo>,
}

impl Return {
    pub fn new(ty: Type) -> Self {
        Return {
            name: None,
            ty,
            alias_info: None,
        }
    }

    pub fn is_write(&self) -> bool {
        self.alias_info.as_ref().is_some_and(|a| a.is_write)
    }

    fn write(&self, f: &mut impl fmt::Write, source: bool) -> fmt::Result {
        write_arg_type(f, &self.ty, self.alias_info.as_ref(), source)?;
        if let Some(n) = &self.name {
            if !n.is_empty() {
                f.write_char(' ')?;
                f.write_str(n)?;
            }
        }
        Ok(())
    }
}

impl PartialEq for Return {
    fn eq(&self, other: &Self) -> bool {
        self.name.as_deref().unwrap_or("") == other.name.as_deref().unwrap_or("")
            && self.ty.real() == other.ty.real()
            && self.alias_info == other.alias_info
    }
}

impl fmt::Display for Return {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, false)
    }
}

/// A function schema: `aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`.
/// An empty name is an anonymous schema (an inferred kernel signature), printed as
/// `(Tensor _0) -> Tensor _0`.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSchema {
    pub name: OperatorName,
    pub arguments: Vec<Argument>,
    pub returns: Vec<Return>,
    /// `...` ends the arguments.
    pub is_vararg: bool,
    /// `...` ends the returns.
    pub is_varret: bool,
}

impl FunctionSchema {
    /// The index of the argument named `name`.
    pub fn argument_index_with_name(&self, name: &str) -> Option<usize> {
        self.arguments.iter().position(|a| a.name == name)
    }

    /// Whether any argument is written to.
    pub fn is_mutable(&self) -> bool {
        self.arguments.iter().any(Argument::is_write)
    }

    /// Whether any argument or return carries an alias annotation.
    pub fn has_any_alias_info(&self) -> bool {
        self.arguments.iter().any(|a| a.alias_info.is_some())
            || self.returns.iter().any(|r| r.alias_info.is_some())
    }

    /// The arguments before `*`.
    pub fn positional_arguments(&self) -> impl Iterator<Item = &Argument> {
        self.arguments.iter().filter(|a| !a.kwarg_only)
    }

    /// The out= arguments (keyword-only and written to).
    pub fn out_arguments(&self) -> impl Iterator<Item = &Argument> {
        self.arguments.iter().filter(|a| a.is_out())
    }

    /// Prints the schema with the spelling of the declaration (`Dimname`, defaults as
    /// written, such as `contiguous_format` or `'none'`), as torchgen prints it.
    pub fn to_source_string(&self) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = self.write(&mut s, true);
        s
    }

    fn write(&self, f: &mut impl fmt::Write, source: bool) -> fmt::Result {
        write!(f, "{}(", self.name)?;
        let mut seen_kwarg_only = false;
        for (i, a) in self.arguments.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if a.kwarg_only && !seen_kwarg_only {
                f.write_str("*, ")?;
                seen_kwarg_only = true;
            }
            a.write(f, source)?;
        }
        if self.is_vararg {
            if !self.arguments.is_empty() {
                f.write_str(", ")?;
            }
            f.write_str("...")?;
        }
        f.write_str(") -> ")?;
        let rets = &self.returns;
        let mut need_paren =
            !((rets.len() == 1 && !self.is_varret) || (rets.is_empty() && self.is_varret));
        let mut single = String::new();
        if rets.len() == 1 && !self.is_varret {
            rets[0].write(&mut single, source)?;
            // A single return starting with '(' (a tuple type) needs parentheses to be
            // read back as one return.
            if single.starts_with('(') {
                need_paren = true;
            }
        }
        if need_paren {
            f.write_char('(')?;
        }
        if !single.is_empty() {
            f.write_str(&single)?;
        } else {
            for (i, r) in rets.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                r.write(f, source)?;
            }
        }
        if self.is_varret {
            if !rets.is_empty() {
                f.write_str(", ")?;
            }
            f.write_str("...")?;
        }
        if need_paren {
            f.write_char(')')?;
        }
        Ok(())
    }
}

impl fmt::Display for FunctionSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, false)
    }
}
