//! Rust types of schema types (torchgen's `api/types` `CType`s and the per-API type functions
//! of `api/cpp.py`, `api/dispatcher.py`, `api/native.py`).
//!
//! A schema argument type has three Rust forms ([`ArgType`]):
//!
//! | form | used by | `Tensor` | `Scalar` | `int[]` | `str?` |
//! | --- | --- | --- | --- | --- | --- |
//! | owned | the typed handle's `Args` tuple (its `KernelValue`s) | `Tensor` | `Arg<Scalar>` | `Vec<i64>` | `Arg<Option<String>>` |
//! | borrowed | kernels, backend functions, `operators::*::call` (`KernelValue::Ref`) | `&Tensor` | `&Scalar` | `&[i64]` | `Option<&str>` |
//! | api | the public functions and methods | `&Tensor` | `impl Into<Scalar>` | `&[i64]` | `Option<&str>` |
//!
//! `Arg<T>` (ratten-aten's `structured::Arg`) is the wrapper that lets ratten-aten implement
//! ratten-dispatch's `KernelValue` for a type neither crate owns (the orphan rule).
//!
//! Every schema type either maps or is refused with a [`Refusal`] naming it.

use std::fmt;

use ratten_schema::Type;

/// A named Rust type of generated code (torchgen's `BaseCppType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BaseType {
    Tensor,
    I64,
    F64,
    Bool,
    Complex64,
    String,
    Scalar,
    ScalarType,
    Device,
    Layout,
    MemoryFormat,
    /// ratten-aten's CPU generator handle (`torch.Generator`).
    Generator,
    /// ratten-aten's `Dimname` (a dimension name).
    Dimname,
    /// ratten-core's `Storage`.
    Storage,
}

/// Where the types of [`BaseType`] live, as generated code names them. `{aten}` is how the
/// generated code names ratten-aten (`crate` inside it, `ratten_aten` elsewhere); types the
/// generated prelude imports are named bare.
const BASE_PATHS: &[(BaseType, &str)] = &[
    (BaseType::Tensor, "Tensor"),
    (BaseType::I64, "i64"),
    (BaseType::F64, "f64"),
    (BaseType::Bool, "bool"),
    (BaseType::Complex64, "num_complex::Complex64"),
    (BaseType::String, "String"),
    (BaseType::Scalar, "Scalar"),
    (BaseType::ScalarType, "ScalarType"),
    (BaseType::Device, "Device"),
    (BaseType::Layout, "{aten}::native::Layout"),
    (BaseType::MemoryFormat, "{aten}::native::MemoryFormat"),
    (BaseType::Generator, "{aten}::random::Generator"),
    (BaseType::Dimname, "{aten}::dimname::Dimname"),
    (BaseType::Storage, "ratten_core::storage::Storage"),
];

impl BaseType {
    /// The path generated code names it by.
    pub fn path(self, aten: &str) -> String {
        let (_, p) = BASE_PATHS
            .iter()
            .find(|(b, _)| *b == self)
            .expect("BASE_PATHS lists every BaseType");
        p.replace("{aten}", aten)
    }

    /// Whether a value is passed by value (`Copy`) rather than by reference.
    pub fn is_copy(self) -> bool {
        matches!(
            self,
            BaseType::I64
                | BaseType::F64
                | BaseType::Bool
                | BaseType::Complex64
                | BaseType::ScalarType
                | BaseType::Device
                | BaseType::Layout
                | BaseType::MemoryFormat
        )
    }
}

/// A Rust type as generated code spells it (torchgen's `CType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RustType {
    Base(BaseType),
    /// `str` (behind a reference).
    Str,
    /// `&T`, or `&'a T` with a lifetime.
    Ref {
        lifetime: Option<String>,
        to: Box<RustType>,
    },
    /// `[T]` (behind a reference).
    Slice(Box<RustType>),
    Vec(Box<RustType>),
    Option(Box<RustType>),
    /// `(A, B)`; `()` when empty, `(A,)` for one.
    Tuple(Vec<RustType>),
    /// `Arg<T>`: ratten-aten's `KernelValue` wrapper for a type it does not own.
    Arg(Box<RustType>),
    /// `impl Into<T>`.
    ImplInto(Box<RustType>),
    /// `Aliased<K>`: a typed call's return that is its argument `K` (Note [Aliased returns]
    /// in ratten-dispatch).
    Aliased(usize),
}

impl RustType {
    pub fn base(b: BaseType) -> RustType {
        RustType::Base(b)
    }

    pub fn reference(to: RustType) -> RustType {
        RustType::Ref {
            lifetime: None,
            to: Box::new(to),
        }
    }

    pub fn option(t: RustType) -> RustType {
        RustType::Option(Box::new(t))
    }

    pub fn vec(t: RustType) -> RustType {
        RustType::Vec(Box::new(t))
    }

    pub fn slice_ref(t: RustType) -> RustType {
        RustType::reference(RustType::Slice(Box::new(t)))
    }

    pub fn arg(t: RustType) -> RustType {
        RustType::Arg(Box::new(t))
    }

    pub fn unit() -> RustType {
        RustType::Tuple(Vec::new())
    }

    /// The same reference with lifetime `'l` (other types unchanged).
    pub fn with_lifetime(&self, l: &str) -> RustType {
        match self {
            RustType::Ref { to, .. } => RustType::Ref {
                lifetime: Some(l.to_string()),
                to: to.clone(),
            },
            t => t.clone(),
        }
    }

    /// Whether it is `Arg<..>` or contains one.
    pub fn contains_arg(&self) -> bool {
        match self {
            RustType::Arg(_) => true,
            RustType::Ref { to: t, .. }
            | RustType::Slice(t)
            | RustType::Vec(t)
            | RustType::Option(t)
            | RustType::ImplInto(t) => t.contains_arg(),
            RustType::Tuple(ts) => ts.iter().any(RustType::contains_arg),
            RustType::Base(_) | RustType::Str | RustType::Aliased(_) => false,
        }
    }

    /// The type with every `Arg<T>` replaced by `T` (what a public function returns).
    pub fn without_arg(&self) -> RustType {
        match self {
            RustType::Arg(t) => t.without_arg(),
            RustType::Ref { lifetime, to } => RustType::Ref {
                lifetime: lifetime.clone(),
                to: Box::new(to.without_arg()),
            },
            RustType::Slice(t) => RustType::Slice(Box::new(t.without_arg())),
            RustType::Vec(t) => RustType::vec(t.without_arg()),
            RustType::Option(t) => RustType::option(t.without_arg()),
            RustType::ImplInto(t) => RustType::ImplInto(Box::new(t.without_arg())),
            RustType::Tuple(ts) => RustType::Tuple(ts.iter().map(RustType::without_arg).collect()),
            t => t.clone(),
        }
    }

    /// The Rust text; `aten` names ratten-aten (see [`BaseType::path`]).
    pub fn render(&self, aten: &str) -> String {
        match self {
            RustType::Base(b) => b.path(aten),
            RustType::Str => "str".to_string(),
            RustType::Ref { lifetime, to } => match lifetime {
                Some(l) => format!("&'{l} {}", to.render(aten)),
                None => format!("&{}", to.render(aten)),
            },
            RustType::Slice(t) => format!("[{}]", t.render(aten)),
            RustType::Vec(t) => format!("Vec<{}>", t.render(aten)),
            RustType::Option(t) => format!("Option<{}>", t.render(aten)),
            RustType::Tuple(ts) => match ts.as_slice() {
                [one] => format!("({},)", one.render(aten)),
                _ => format!(
                    "({})",
                    ts.iter()
                        .map(|t| t.render(aten))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
            RustType::Arg(t) => format!("Arg<{}>", t.render(aten)),
            RustType::ImplInto(t) => format!("impl Into<{}>", t.render(aten)),
            RustType::Aliased(k) => format!("Aliased<{k}>"),
        }
    }
}

/// How a public function turns its parameter (the api form) into the borrowed form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// Passed as is.
    None,
    /// `let x: Scalar = x.into();`, then `&x`.
    IntoScalar,
    /// `x.as_ref()` (`Option<Scalar>` -> `Option<&Scalar>`).
    AsRef,
}

/// The three Rust forms of one argument type (see the module's table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgType {
    pub owned: RustType,
    pub borrowed: RustType,
    pub api: RustType,
}

impl ArgType {
    /// One form for all three uses plus the owned form.
    fn plain(owned: RustType, borrowed: RustType) -> ArgType {
        ArgType {
            owned,
            api: borrowed.clone(),
            borrowed,
        }
    }

    /// How the api form becomes the borrowed form (derived from the two forms).
    pub fn conversion(&self) -> Conversion {
        match (&self.api, &self.borrowed) {
            (RustType::ImplInto(_), RustType::Ref { .. }) => Conversion::IntoScalar,
            (RustType::Option(a), RustType::Option(b))
                if **b == RustType::reference((**a).clone()) =>
            {
                Conversion::AsRef
            }
            _ => Conversion::None,
        }
    }
}

/// Why a schema type, default or overload has no Rust form. Each message names the type.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A schema type ratten has no Rust counterpart for (`Stream`, `QScheme`, ...).
    NoRustType { ty: Type, why: &'static str },
    /// A list whose element type has no list form (`Scalar?[]`).
    UnsupportedList { ty: Type },
    /// An optional whose type has no optional form (`Tensor[]?`).
    UnsupportedOptional { ty: Type },
    /// A return type no typed call returns (`Tensor?`, `str`).
    UnsupportedReturn { ty: Type },
    /// A default value the Rust API cannot spell for its type.
    UnsupportedDefault { ty: Type, default: String },
    /// More arguments than ratten-dispatch's typed calls take.
    TooManyArguments { count: usize, max: usize },
    /// More returns than ratten-dispatch's typed calls return.
    TooManyReturns { count: usize, max: usize },
    /// `variants: method` on a function without a positional `self`.
    MethodWithoutSelf,
    /// A `structured_inherits:` base without a configured Rust state type.
    UnknownInheritedBase { base: String },
    /// A `structured_delegate:` naming a function the file does not declare.
    UnknownDelegate { name: String },
    /// A generated (`autogen:`) function without the sibling its kernel calls.
    GeneratedWithoutSibling { kind: &'static str },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NoRustType { ty, why } => write!(f, "ratten has no Rust type for `{ty}` ({why})"),
            Refusal::UnsupportedList { ty } => {
                write!(f, "the Rust emitter has no list form for `{ty}`")
            }
            Refusal::UnsupportedOptional { ty } => {
                write!(f, "the Rust emitter has no optional form for `{ty}`")
            }
            Refusal::UnsupportedReturn { ty } => {
                write!(f, "the Rust emitter does not support the return type `{ty}`")
            }
            Refusal::UnsupportedDefault { ty, default } => write!(
                f,
                "the Rust emitter cannot express the default `{default}` of type `{ty}`"
            ),
            Refusal::TooManyArguments { count, max } => write!(
                f,
                "{count} arguments: ratten-dispatch's typed calls take at most {max}"
            ),
            Refusal::TooManyReturns { count, max } => write!(
                f,
                "{count} returns: ratten-dispatch's typed calls return at most {max}"
            ),
            Refusal::MethodWithoutSelf => {
                write!(f, "`variants: method` needs a positional `self` argument")
            }
            Refusal::UnknownInheritedBase { base } => write!(
                f,
                "structured_inherits: {base} has no Rust state type configured (GenOptions::inherits)"
            ),
            Refusal::UnknownDelegate { name } => {
                write!(f, "structured_delegate {name} is not declared")
            }
            Refusal::GeneratedWithoutSibling { kind } => {
                write!(f, "a generated {kind} function without the sibling its kernel calls")
            }
        }
    }
}

impl Refusal {
    /// A short stable name of the reason (for counts).
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::NoRustType { .. } => "no Rust type",
            Refusal::UnsupportedList { .. } => "unsupported list",
            Refusal::UnsupportedOptional { .. } => "unsupported optional",
            Refusal::UnsupportedReturn { .. } => "unsupported return",
            Refusal::UnsupportedDefault { .. } => "unsupported default",
            Refusal::TooManyArguments { .. } => "too many arguments",
            Refusal::TooManyReturns { .. } => "too many returns",
            Refusal::MethodWithoutSelf => "method without self",
            Refusal::UnknownInheritedBase { .. } => "unknown structured_inherits base",
            Refusal::UnknownDelegate { .. } => "unknown structured_delegate",
            Refusal::GeneratedWithoutSibling { .. } => "generated without sibling",
        }
    }
}

/// The types ratten refuses, with why.
fn no_rust_type(ty: &Type) -> Refusal {
    let why = match ty {
        Type::Stream => "ratten has no streams: it runs on the CPU",
        Type::QScheme | Type::Quantizer | Type::ConstQuantizerPtr => {
            "ratten has no quantized tensors"
        }
        Type::Capsule | Type::Any | Type::AnyClassType | Type::AnyEnumType => {
            "an opaque TorchScript type"
        }
        Type::CustomClass(_) => "ratten has no TorchScript custom classes",
        Type::Future(_) | Type::Await(_) | Type::RRef(_) => "ratten has no TorchScript futures",
        Type::Dict(..) | Type::Union(_) | Type::Tuple(_) | Type::Var(_) | Type::NoneType => {
            "a TorchScript type native functions do not take"
        }
        _ => "not a native function argument type",
    };
    Refusal::NoRustType {
        ty: ty.clone(),
        why,
    }
}

/// The base type of a scalar (non-list, non-optional) schema type. Symbolic ints are plain
/// `i64` (torchgen's non-SymInt C++ API), `DeviceIndex` is c10's `int`.
fn base_of(ty: &Type) -> Result<BaseType, Refusal> {
    Ok(match ty {
        Type::Tensor => BaseType::Tensor,
        Type::Int | Type::SymInt | Type::DeviceIndex => BaseType::I64,
        Type::Float | Type::SymFloat => BaseType::F64,
        Type::Bool | Type::SymBool => BaseType::Bool,
        Type::Complex => BaseType::Complex64,
        Type::Str => BaseType::String,
        Type::Scalar => BaseType::Scalar,
        Type::ScalarType => BaseType::ScalarType,
        Type::Device => BaseType::Device,
        Type::Layout => BaseType::Layout,
        Type::MemoryFormat => BaseType::MemoryFormat,
        Type::Generator => BaseType::Generator,
        Type::Dimname => BaseType::Dimname,
        Type::Storage => BaseType::Storage,
        other => return Err(no_rust_type(other)),
    })
}

/// The Rust forms of an argument of schema type `ty` (torchgen's `argumenttype_type` of the
/// dispatcher, native and C++ APIs at once).
pub fn argument_type(ty: &Type) -> Result<ArgType, Refusal> {
    use BaseType as B;
    let b = RustType::base;
    Ok(match ty {
        Type::List { elem, .. } => list_type(ty, elem)?,
        Type::Optional(inner) => optional_type(ty, inner)?,
        t => match base_of(t)? {
            // `str`: owned `String`, borrowed `&str`.
            B::String => ArgType::plain(b(B::String), RustType::reference(RustType::Str)),
            B::Scalar => ArgType {
                owned: RustType::arg(b(B::Scalar)),
                borrowed: RustType::reference(b(B::Scalar)),
                api: RustType::ImplInto(Box::new(b(B::Scalar))),
            },
            // ratten-aten's own enums: ratten-dispatch has no `KernelValue` for them.
            base @ (B::Layout | B::MemoryFormat) => ArgType::plain(RustType::arg(b(base)), b(base)),
            base if base.is_copy() => ArgType::plain(b(base), b(base)),
            base => ArgType::plain(b(base), RustType::reference(b(base))),
        },
    })
}

/// `T[]` and `T[N]`: a `Vec` owned, a slice borrowed (fixed sizes are the schema's to check).
fn list_type(ty: &Type, elem: &Type) -> Result<ArgType, Refusal> {
    let elem_rust = match elem {
        // `Tensor?[]` (index's indices): each element present or not.
        Type::Optional(t) if **t == Type::Tensor => {
            RustType::option(RustType::base(BaseType::Tensor))
        }
        Type::Optional(_) | Type::List { .. } => {
            return Err(Refusal::UnsupportedList { ty: ty.clone() })
        }
        t => RustType::base(base_of(t).map_err(|e| match e {
            Refusal::NoRustType { .. } => e,
            _ => Refusal::UnsupportedList { ty: ty.clone() },
        })?),
    };
    Ok(ArgType::plain(
        RustType::vec(elem_rust.clone()),
        RustType::slice_ref(elem_rust),
    ))
}

/// `T?`: `Option` of the borrowed form; the owned form is `Option<T>` where ratten-dispatch
/// has the `KernelValue`, else `Arg<Option<T>>`.
fn optional_type(ty: &Type, inner: &Type) -> Result<ArgType, Refusal> {
    use BaseType as B;
    let b = RustType::base;
    let opt = RustType::option;
    Ok(match inner {
        Type::List { elem, .. } => {
            let elem =
                base_of(elem).map_err(|_| Refusal::UnsupportedOptional { ty: ty.clone() })?;
            match elem {
                // `int[]?`, `SymInt[1]?`: ratten-dispatch has `Option<Vec<i64>>`.
                B::I64 => ArgType::plain(
                    opt(RustType::vec(b(B::I64))),
                    opt(RustType::slice_ref(b(B::I64))),
                ),
                B::F64 => ArgType::plain(
                    RustType::arg(opt(RustType::vec(b(B::F64)))),
                    opt(RustType::slice_ref(b(B::F64))),
                ),
                _ => return Err(Refusal::UnsupportedOptional { ty: ty.clone() }),
            }
        }
        Type::Optional(_) => return Err(Refusal::UnsupportedOptional { ty: ty.clone() }),
        t => match base_of(t)? {
            // ratten-dispatch's own `Option` values.
            B::Tensor => ArgType::plain(opt(b(B::Tensor)), opt(RustType::reference(b(B::Tensor)))),
            B::I64 => ArgType::plain(opt(b(B::I64)), opt(b(B::I64))),
            B::String => ArgType::plain(
                RustType::arg(opt(b(B::String))),
                opt(RustType::reference(RustType::Str)),
            ),
            B::Scalar => ArgType {
                owned: RustType::arg(opt(b(B::Scalar))),
                borrowed: opt(RustType::reference(b(B::Scalar))),
                api: opt(b(B::Scalar)),
            },
            base if base.is_copy() => ArgType::plain(RustType::arg(opt(b(base))), opt(b(base))),
            base => ArgType::plain(
                RustType::arg(opt(b(base))),
                opt(RustType::reference(b(base))),
            ),
        },
    })
}

/// The owned Rust type of one return (torchgen's `returntype_type`).
pub fn return_type(ty: &Type) -> Result<RustType, Refusal> {
    use BaseType as B;
    let refuse = || Refusal::UnsupportedReturn { ty: ty.clone() };
    Ok(match ty {
        Type::List { elem, .. } if **elem == Type::Tensor => {
            RustType::vec(RustType::base(B::Tensor))
        }
        Type::List { .. } | Type::Optional(_) => return Err(refuse()),
        t => match base_of(t)? {
            B::Tensor | B::I64 | B::F64 | B::Bool | B::ScalarType | B::Complex64 => {
                RustType::base(base_of(t)?)
            }
            B::Scalar => RustType::arg(RustType::base(B::Scalar)),
            _ => return Err(refuse()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forms(schema_ty: &str) -> (String, String, String) {
        let s = ratten_schema::FunctionSchema::parse(&format!("f({schema_ty} x) -> ()")).unwrap();
        let t = argument_type(&s.arguments[0].ty).unwrap();
        (
            t.owned.render("crate"),
            t.borrowed.render("crate"),
            t.api.render("crate"),
        )
    }

    fn refusal(schema_ty: &str) -> Refusal {
        let s = ratten_schema::FunctionSchema::parse(&format!("f({schema_ty} x) -> ()")).unwrap();
        argument_type(&s.arguments[0].ty).unwrap_err()
    }

    fn s(a: &str, b: &str, c: &str) -> (String, String, String) {
        (a.into(), b.into(), c.into())
    }

    #[test]
    fn the_three_forms() {
        assert_eq!(forms("Tensor"), s("Tensor", "&Tensor", "&Tensor"));
        assert_eq!(
            forms("Scalar"),
            s("Arg<Scalar>", "&Scalar", "impl Into<Scalar>")
        );
        assert_eq!(
            forms("Scalar?"),
            s("Arg<Option<Scalar>>", "Option<&Scalar>", "Option<Scalar>")
        );
        assert_eq!(forms("SymInt[]"), s("Vec<i64>", "&[i64]", "&[i64]"));
        assert_eq!(forms("int[2]"), s("Vec<i64>", "&[i64]", "&[i64]"));
        assert_eq!(
            forms("str?"),
            s("Arg<Option<String>>", "Option<&str>", "Option<&str>")
        );
        assert_eq!(forms("str"), s("String", "&str", "&str"));
        assert_eq!(
            forms("Tensor?[]"),
            s(
                "Vec<Option<Tensor>>",
                "&[Option<Tensor>]",
                "&[Option<Tensor>]"
            )
        );
        assert_eq!(
            forms("int[1]?"),
            s("Option<Vec<i64>>", "Option<&[i64]>", "Option<&[i64]>")
        );
        assert_eq!(
            forms("Generator?"),
            s(
                "Arg<Option<crate::random::Generator>>",
                "Option<&crate::random::Generator>",
                "Option<&crate::random::Generator>"
            )
        );
        assert_eq!(
            forms("Layout"),
            s(
                "Arg<crate::native::Layout>",
                "crate::native::Layout",
                "crate::native::Layout"
            )
        );
        assert_eq!(
            forms("MemoryFormat?"),
            s(
                "Arg<Option<crate::native::MemoryFormat>>",
                "Option<crate::native::MemoryFormat>",
                "Option<crate::native::MemoryFormat>"
            )
        );
        assert_eq!(
            forms("Dimname"),
            s(
                "crate::dimname::Dimname",
                "&crate::dimname::Dimname",
                "&crate::dimname::Dimname"
            )
        );
    }

    #[test]
    fn conversions_follow_from_the_forms() {
        let conv = |t: &str| {
            let s = ratten_schema::FunctionSchema::parse(&format!("f({t} x) -> ()")).unwrap();
            argument_type(&s.arguments[0].ty).unwrap().conversion()
        };
        assert_eq!(conv("Scalar"), Conversion::IntoScalar);
        assert_eq!(conv("Scalar?"), Conversion::AsRef);
        assert_eq!(conv("Tensor?"), Conversion::None);
        assert_eq!(conv("int"), Conversion::None);
    }

    #[test]
    fn refusals_name_the_type() {
        assert_eq!(
            refusal("Stream").to_string(),
            "ratten has no Rust type for `Stream` (ratten has no streams: it runs on the CPU)"
        );
        assert_eq!(
            refusal("Scalar?[]").to_string(),
            "the Rust emitter has no list form for `Scalar?[]`"
        );
        let s = ratten_schema::FunctionSchema::parse("f() -> QScheme").unwrap();
        assert_eq!(
            return_type(&s.returns[0].ty).unwrap_err().reason(),
            "no Rust type"
        );
        let s = ratten_schema::FunctionSchema::parse("f() -> Tensor?").unwrap();
        assert_eq!(
            return_type(&s.returns[0].ty).unwrap_err().reason(),
            "unsupported return"
        );
    }
}
