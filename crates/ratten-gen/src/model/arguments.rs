//! Arguments and returns of one overload: Rust forms, defaults, alias annotations, and the
//! view relation they imply (torchgen's `Annotation`, `is_view_op` and view groups).

use ratten_schema::native::NativeFunction;
use ratten_schema::{AliasInfo, Argument, DefaultValue, Type};

use super::names::ident;
use super::types::{argument_type, return_type, ArgType, BaseType, Refusal, RustType};

/// An alias annotation (`a`, `a!`, `a -> *`): torchgen's `Annotation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    /// The alias set before the call (`a`).
    pub set: String,
    /// `!`: the value is written.
    pub is_write: bool,
    /// `a -> *`: after the call the value may alias anything (chunk's `self`).
    pub wildcard_after: bool,
}

impl Annotation {
    fn of(a: &AliasInfo) -> Option<Annotation> {
        Some(Annotation {
            set: a.before_sets.first()?.clone(),
            is_write: a.is_write,
            wildcard_after: a.is_wildcard_after(),
        })
    }

    /// The annotation of a value or, for a list, of its elements (`Tensor(a)[]`).
    fn of_value(alias: Option<&AliasInfo>) -> Option<Annotation> {
        let a = alias?;
        Annotation::of(a).or_else(|| a.contained_types.first().and_then(Annotation::of))
    }
}

/// A default as Rust: the borrowed form's expression, or (`by_ref`) an owned value the caller
/// binds and passes by reference (`Scalar::Int(1)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultExpr {
    pub expr: String,
    pub by_ref: bool,
    /// The default as the schema writes it (`1`, `contiguous_format`), for documentation.
    pub text: String,
}

/// One schema argument.
#[derive(Debug, Clone)]
pub struct ArgumentInfo {
    /// The position in the schema.
    pub index: usize,
    /// The schema name (`self`, `other`, `out`).
    pub name: String,
    /// The Rust identifier (`self_`, `other`, `out`).
    pub ident: String,
    pub schema_type: Type,
    pub ty: ArgType,
    /// The default the short forms fill in (none for out= arguments and the function's
    /// `cpp_no_default_args`).
    pub default: Option<DefaultExpr>,
    pub kwarg_only: bool,
    /// An out= argument (written, keyword-only).
    pub is_out: bool,
    pub alias: Option<Annotation>,
}

/// How a return relates to the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReturnAlias {
    /// `Tensor(a!)`: the written argument itself (in-place and out= forms).
    Write { arg: usize },
    /// `Tensor(a)`: a view of (or the same tensor as) argument `arg`, not written.
    View { arg: usize },
}

/// One return.
#[derive(Debug, Clone)]
pub struct ReturnInfo {
    /// The field name of a named return.
    pub name: Option<String>,
    pub schema_type: Type,
    /// The owned Rust type (`Tensor`, `Vec<Tensor>`, `Arg<Scalar>`).
    pub ty: RustType,
    pub annotation: Option<Annotation>,
    /// The argument it aliases, when its annotation names one.
    pub alias: Option<ReturnAlias>,
}

impl ReturnInfo {
    /// The argument a `Tensor(a!)` return is.
    pub fn written_arg(&self) -> Option<usize> {
        match self.alias {
            Some(ReturnAlias::Write { arg }) => Some(arg),
            _ => None,
        }
    }
}

/// What kind of view an operator is (torchgen's `is_view_op` and view groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    /// A return aliases an input without writing it (`Tensor(a) self -> Tensor(a)`:
    /// `view`, `transpose`, `to`).
    View,
    /// Tagged `inplace_view`: changes the metadata of `self` in place (`transpose_`).
    InplaceView,
    /// An input's alias set becomes a wildcard (`Tensor(a -> *) self`: `chunk`, `split`).
    Wildcard,
}

/// An operator's view relation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewInfo {
    pub kind: ViewKind,
    /// The argument the view shares storage with (its base), where the schema names one.
    pub base: Option<usize>,
    /// The index (into `NativeFunctions::functions`) of its `{name}_copy` twin tagged
    /// `view_copy`, when the file declares one.
    pub view_copy: Option<usize>,
}

fn float_literal(f: f64) -> String {
    let s = format!("{f:?}");
    if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") {
        match s.as_str() {
            "inf" => "f64::INFINITY".into(),
            "-inf" => "f64::NEG_INFINITY".into(),
            "NaN" => "f64::NAN".into(),
            _ => s,
        }
    } else {
        format!("{s}.0")
    }
}

/// c10's enum values (`long`, `strided`, `contiguous_format` reach the parser as ints).
fn enum_variant(base: BaseType, value: i64) -> Option<&'static str> {
    const SCALAR_TYPES: &[(i64, &str)] = &[
        (0, "Byte"),
        (1, "Char"),
        (2, "Short"),
        (3, "Int"),
        (4, "Long"),
        (5, "Half"),
        (6, "Float"),
        (7, "Double"),
        (8, "ComplexHalf"),
        (9, "ComplexFloat"),
        (10, "ComplexDouble"),
        (11, "Bool"),
        (15, "BFloat16"),
    ];
    const LAYOUTS: &[(i64, &str)] = &[(0, "Strided")];
    const MEMORY_FORMATS: &[(i64, &str)] = &[
        (0, "Contiguous"),
        (1, "Preserve"),
        (2, "ChannelsLast"),
        (3, "ChannelsLast3d"),
    ];
    let table = match base {
        BaseType::ScalarType => SCALAR_TYPES,
        BaseType::Layout => LAYOUTS,
        BaseType::MemoryFormat => MEMORY_FORMATS,
        _ => return None,
    };
    table.iter().find(|(v, _)| *v == value).map(|(_, n)| *n)
}

/// The base type under `T` / `T?`.
fn scalar_base(ty: &ArgType) -> Option<BaseType> {
    let mut t = &ty.borrowed;
    loop {
        match t {
            RustType::Option(x) => t = x,
            RustType::Ref { to, .. } => t = to,
            RustType::Base(b) => return Some(*b),
            // `&str`, the borrowed form of `str`.
            RustType::Str => return Some(BaseType::String),
            _ => return None,
        }
    }
}

/// The default of `arg` (of Rust forms `ty`) as Rust; `aten` names ratten-aten.
fn default_expr(arg: &Argument, ty: &ArgType, aten: &str) -> Result<Option<DefaultExpr>, Refusal> {
    let Some(d) = &arg.default else {
        return Ok(None);
    };
    let text = arg.default_text.clone().unwrap_or_else(|| d.to_string());
    let refuse = || Refusal::UnsupportedDefault {
        ty: arg.ty.clone(),
        default: text.clone(),
    };
    let optional = arg.ty.is_optional();
    let wrap = |e: String| if optional { format!("Some({e})") } else { e };
    let base = scalar_base(ty);
    let owned_scalar = |e: String| DefaultExpr {
        expr: e,
        by_ref: true,
        text: text.clone(),
    };
    let plain = |e: String| DefaultExpr {
        expr: e,
        by_ref: false,
        text: text.clone(),
    };
    let scalar = matches!(arg.ty, Type::Scalar);
    let e = match d {
        DefaultValue::None if optional || arg.ty.is_tensor_like() => plain("None".into()),
        DefaultValue::None => return Err(refuse()),
        DefaultValue::Bool(b) if scalar => owned_scalar(format!("Scalar::Bool({b})")),
        DefaultValue::Int(i) if scalar => owned_scalar(format!("Scalar::Int({i})")),
        DefaultValue::Float(f) if scalar => {
            owned_scalar(format!("Scalar::Double({})", float_literal(*f)))
        }
        DefaultValue::Bool(b) if base == Some(BaseType::Bool) => plain(wrap(b.to_string())),
        DefaultValue::Int(i) => match base {
            Some(BaseType::I64) => plain(wrap(i.to_string())),
            Some(BaseType::F64) => plain(wrap(float_literal(*i as f64))),
            Some(b @ (BaseType::ScalarType | BaseType::Layout | BaseType::MemoryFormat)) => {
                let v = enum_variant(b, *i).ok_or_else(refuse)?;
                plain(wrap(format!("{}::{v}", b.path(aten))))
            }
            _ => return Err(refuse()),
        },
        DefaultValue::Float(f) if base == Some(BaseType::F64) => plain(wrap(float_literal(*f))),
        DefaultValue::Str(s) if base == Some(BaseType::String) => plain(wrap(format!("{s:?}"))),
        DefaultValue::Device(s) if base == Some(BaseType::Device) && s == "cpu" => {
            plain(wrap("Device::CPU".into()))
        }
        DefaultValue::IntList(v)
            if matches!(ty.borrowed, RustType::Ref { .. } | RustType::Option(_)) =>
        {
            plain(wrap(format!("&{v:?}")))
        }
        DefaultValue::BoolList(v) => plain(wrap(format!("&{v:?}"))),
        DefaultValue::FloatList(v) => plain(wrap(format!(
            "&[{}]",
            v.iter()
                .map(|f| float_literal(*f))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        _ => return Err(refuse()),
    };
    Ok(Some(e))
}

/// The arguments of `f` with their Rust forms and defaults; `Err` names the argument.
pub fn arguments(f: &NativeFunction, aten: &str) -> Result<Vec<ArgumentInfo>, (String, Refusal)> {
    let no_default = &f.cpp_no_default_args;
    let mut args = Vec::with_capacity(f.func.arguments.len());
    for (index, a) in f.func.arguments.iter().enumerate() {
        let at = || format!("argument `{}`", a.name);
        let ty = argument_type(&a.ty).map_err(|e| (at(), e))?;
        let default = if a.is_out() || no_default.contains(&a.name) {
            None
        } else {
            default_expr(a, &ty, aten).map_err(|e| (at(), e))?
        };
        args.push(ArgumentInfo {
            index,
            name: a.name.clone(),
            ident: ident(&a.name),
            schema_type: a.ty.clone(),
            ty,
            default,
            kwarg_only: a.kwarg_only,
            is_out: a.is_out(),
            alias: Annotation::of_value(a.alias_info.as_ref()),
        });
    }
    Ok(args)
}

/// The returns of `f`, each with the argument its annotation names.
pub fn returns(
    f: &NativeFunction,
    args: &[ArgumentInfo],
) -> Result<Vec<ReturnInfo>, (String, Refusal)> {
    let mut rets = Vec::with_capacity(f.func.returns.len());
    for (i, r) in f.func.returns.iter().enumerate() {
        let ty = return_type(&r.ty).map_err(|e| (format!("return {i}"), e))?;
        let annotation = Annotation::of_value(r.alias_info.as_ref());
        let alias = annotation.as_ref().and_then(|ann| {
            let arg = args
                .iter()
                .position(|a| a.alias.as_ref().is_some_and(|x| x.set == ann.set))?;
            Some(if ann.is_write {
                ReturnAlias::Write { arg }
            } else {
                ReturnAlias::View { arg }
            })
        });
        rets.push(ReturnInfo {
            name: r.name.clone(),
            schema_type: r.ty.clone(),
            ty,
            annotation,
            alias,
        });
    }
    Ok(rets)
}

/// The view relation of `f` (torchgen's `is_view_op`: a non-written aliased return, the
/// `inplace_view` tag, or a wildcard input), with its base and its `_copy` twin.
pub fn view_info(
    f: &NativeFunction,
    args: &[ArgumentInfo],
    rets: &[ReturnInfo],
    view_copy: Option<usize>,
) -> Option<ViewInfo> {
    if !f.is_view_op() {
        return None;
    }
    let view_base = rets.iter().find_map(|r| match r.alias {
        Some(ReturnAlias::View { arg }) => Some(arg),
        _ => None,
    });
    let wildcard = args
        .iter()
        .position(|a| a.alias.as_ref().is_some_and(|x| x.wildcard_after));
    let (kind, base) = if f.tags.contains("inplace_view") {
        (
            ViewKind::InplaceView,
            args.iter().position(|a| a.name == "self"),
        )
    } else if let Some(b) = view_base {
        (ViewKind::View, Some(b))
    } else {
        (ViewKind::Wildcard, wildcard)
    };
    Some(ViewInfo {
        kind,
        base,
        view_copy,
    })
}
