//! The Rust view of a loaded native_functions.yaml: names, argument types and kernels per
//! overload. Every emitter reads this one model (torchgen's `api/` layer: the C++ signature
//! of each function, computed once).

use std::collections::{BTreeMap, BTreeSet};

use ratten_schema::native::{NativeFunction, NativeFunctions, SchemaKind};
use ratten_schema::{Argument, DefaultValue, Type};

use super::GenOptions;

/// How one schema type appears in Rust.
#[derive(Debug, Clone)]
pub struct RustType {
    /// The owned type in the typed-handle tuple (`Tensor`, `Arg<Scalar>`, `Vec<i64>`).
    pub owned: String,
    /// The borrowed form kernels and handles take (`&Tensor`, `&Scalar`, `&[i64]`).
    pub borrowed: String,
    /// The type the public API takes (`&Tensor`, `impl Into<Scalar>`, `Option<i64>`).
    pub api: String,
    /// How the public API converts its parameter into the borrowed form: `None` when it is
    /// already the borrowed form, `Some(Conversion)` otherwise.
    pub conversion: Conversion,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// Passed as is.
    None,
    /// `let x: Scalar = x.into();` then `&x`.
    IntoScalar,
    /// `x.as_ref()` (`Option<Scalar>` -> `Option<&Scalar>`).
    AsRef,
}

/// One argument of one overload.
#[derive(Debug, Clone)]
pub struct ArgInfo {
    /// The schema name (`self`, `other`, `out`).
    pub name: String,
    /// The Rust identifier (`self_`, `other`, `out`).
    pub ident: String,
    pub ty: RustType,
    /// The default, as a Rust expression in the borrowed form, if the argument has one the
    /// short form may omit.
    pub default: Option<String>,
    pub is_out: bool,
    /// The alias set written (`a` for `Tensor(a!)`).
    pub write_alias: Option<String>,
}

/// One return.
#[derive(Debug, Clone)]
pub struct RetInfo {
    /// The owned Rust type (`Tensor`).
    pub owned: String,
    /// The index of the argument this return aliases (`Tensor(a!)`), if any.
    pub aliases_arg: Option<usize>,
}

/// A kernel for one dispatch key.
#[derive(Debug, Clone)]
pub enum KernelImpl {
    /// A plain kernel function (`<module>::<name>`), schema-order borrowed arguments.
    Plain { path: String },
    /// A structured kernel: `meta_path` then (unless Meta) `impl_path`.
    Structured {
        meta_path: String,
        /// `None` for the Meta key (meta only).
        impl_path: Option<String>,
        /// The Rust state type named by `structured_inherits`, if any.
        state_type: Option<String>,
        /// The index of the out= overload (whose arguments the impl takes).
        out_fn: usize,
    },
    /// torchgen's generated composite kernel for an `autogen:` out= variant: calls the
    /// functional overload `functional` and copies its result into `out`.
    GeneratedOut { functional: usize },
    /// A generated functional variant: copies `self` and calls the in-place overload.
    GeneratedFunctional { inplace: usize },
}

/// One overload, as every emitter sees it.
#[derive(Debug, Clone)]
pub struct OpInfo {
    /// Index into `NativeFunctions::functions`.
    pub index: usize,
    /// `aten::add`.
    pub qualified_name: String,
    /// `Tensor` (may be empty).
    pub overload_name: String,
    /// `add.Tensor` (the name registrations use).
    pub name_with_overload: String,
    /// The schema as declared, for `def()`.
    pub schema_source: String,
    /// torchgen's unambiguous name (`add_Tensor`, `add__Tensor`, `add_out`): the handle module.
    pub handle_mod: String,
    /// The public Rust name of the short form (`add`, `add_scalar`, `add_`, `add_out`).
    pub api_name: String,
    /// The name of the form taking every argument (`add_with`, `add_with_`, `add_out_with`),
    /// when some argument has a default.
    pub with_name: Option<String>,
    /// The name of the backend direct function (`add`, `add_`, `add_outf`): schema order.
    pub backend_name: String,
    pub kind: SchemaKind,
    pub args: Vec<ArgInfo>,
    pub rets: Vec<RetInfo>,
    pub function: bool,
    pub method: bool,
    /// The index of the `self` argument for methods.
    pub self_arg: Option<usize>,
    /// Kernels per dispatch key name (`CPU`, `Meta`, `CompositeExplicitAutograd`, ...).
    pub kernels: BTreeMap<String, KernelImpl>,
    /// The doc line: the schema.
    pub doc: String,
}

impl OpInfo {
    /// The typed handle's argument tuple type.
    pub fn args_tuple(&self) -> String {
        tuple(self.args.iter().map(|a| a.ty.owned.clone()).collect())
    }

    /// The argument the one return is, when the schema says so (`Tensor(a!) out) ->
    /// Tensor(a!)`: in-place and out= forms). Typed calls then return `Aliased<k>` (Note
    /// [Aliased returns] in ratten-dispatch) and kernels a reference to the argument.
    pub fn aliased_return(&self) -> Option<usize> {
        match self.rets.as_slice() {
            [r] if r.owned == "Tensor" => r.aliases_arg,
            _ => None,
        }
    }

    /// The typed handle's return type.
    pub fn ret_type(&self) -> String {
        if let Some(k) = self.aliased_return() {
            return format!("Aliased<{k}>");
        }
        match self.rets.len() {
            0 => "()".to_string(),
            1 => self.rets[0].owned.clone(),
            _ => format!(
                "({})",
                self.rets
                    .iter()
                    .map(|r| r.owned.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// What a kernel or backend direct function returns: the typed return, except that an
    /// aliased return is a reference to its argument (`&'a Tensor`, PyTorch's `Tensor&`).
    pub fn kernel_ret_type(&self) -> String {
        match self.aliased_return() {
            Some(_) => "&'a Tensor".to_string(),
            None => self.ret_type(),
        }
    }

    /// [`borrowed_params`](Self::borrowed_params) with the aliased argument's reference
    /// named `'a` (what the kernel's `&'a Tensor` borrows), and the generics that need.
    pub fn kernel_params(&self) -> (String, String) {
        match self.aliased_return() {
            Some(k) => {
                let params = self
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| match a.ty.borrowed.strip_prefix('&') {
                        Some(rest) if i == k => format!("{}: &'a {rest}", a.ident),
                        _ => format!("{}: {}", a.ident, a.ty.borrowed),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                ("<'a>".to_string(), params)
            }
            None => (String::new(), self.borrowed_params()),
        }
    }

    /// `self_: &Tensor, other: &Tensor, alpha: &Scalar` (schema order, borrowed forms).
    pub fn borrowed_params(&self) -> String {
        self.args
            .iter()
            .map(|a| format!("{}: {}", a.ident, a.ty.borrowed))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `self_, other, alpha`.
    pub fn arg_idents(&self) -> String {
        self.args
            .iter()
            .map(|a| a.ident.clone())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `(self_, other, alpha)` as the handle's `Refs` tuple.
    pub fn refs_tuple(&self) -> String {
        tuple(self.args.iter().map(|a| a.ident.clone()).collect())
    }

    pub fn has_defaults(&self) -> bool {
        self.args.iter().any(|a| a.default.is_some())
    }
}

pub fn tuple(items: Vec<String>) -> String {
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

/// The model: every overload of the file, in declaration order.
pub struct Model {
    pub namespace: String,
    pub ops: Vec<OpInfo>,
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
];

/// A schema name as a Rust identifier (`self` -> `self_`).
pub fn ident(name: &str) -> String {
    if RUST_KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// `dim_IntList` -> `dim_int_list`, `Scalar` -> `scalar`, `Tensor_out` -> `tensor_out`.
pub fn snake(s: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = if i > 0 { Some(chars[i - 1]) } else { None };
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if let Some(p) = prev {
                if p != '_' && (p.is_ascii_lowercase() || p.is_ascii_digit() || next_lower) {
                    out.push('_');
                }
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A Rust keyword used as a function name (`where`) as a raw identifier (`r#where`).
pub fn raw_ident(name: &str) -> String {
    if RUST_KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

/// The overload's suffix as the Rust names use it (`Scalar_out` -> `_scalar`, `Tensor` -> ``).
/// Operator names (`clamp`, `clamp_`) whose functional or in-place form has an overload
/// without a name, so that their `Tensor` overloads need the suffix.
fn names_with_unnamed_overload(nf: &NativeFunctions) -> BTreeSet<String> {
    nf.functions
        .iter()
        .filter(|f| f.kind() != SchemaKind::Out && f.func.name.overload_name.is_empty())
        .map(|f| f.func.name.name.clone())
        .collect()
}

fn overload_suffix(f: &NativeFunction) -> String {
    let ov = f.func.name.overload_name.as_str();
    let ov = ov.strip_suffix("_out").unwrap_or(ov);
    let ov = if ov == "out" { "" } else { ov };
    if PRIMARY_OVERLOADS.contains(&ov) {
        String::new()
    } else {
        format!("_{}", snake(ov))
    }
}

/// The Rust name of a kernel the yaml names for `f`. C++ overloads one kernel name across
/// several overloads (`div` for `div.Scalar` and `div.Scalar_mode`); Rust cannot, so a name
/// shared by several overloads gets each overload's suffix, placed as the API names place it
/// (`fill_` -> `fill_scalar_`, `remainder_out` -> `remainder_scalar_out`). Kernel names are
/// snake case (`eq_Scalar_out` -> `eq_scalar_out`) and keywords raw (`r#where`).
fn kernel_ident(kernel: &str, f: &NativeFunction, shared: bool) -> String {
    let k = snake(kernel);
    if !shared {
        return raw_ident(&k);
    }
    let suffix = overload_suffix(f);
    let name = if let Some(stem) = k.strip_suffix("_out") {
        format!("{stem}{suffix}_out")
    } else if let Some(stem) = k.strip_suffix('_').filter(|s| !s.ends_with('_')) {
        format!("{stem}{suffix}_")
    } else {
        format!("{k}{suffix}")
    };
    raw_ident(&name)
}

/// Kernel names (as the yaml spells them) used by more than one overload.
fn shared_kernel_names(nf: &NativeFunctions) -> BTreeSet<String> {
    let mut users: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for f in &nf.functions {
        for b in &f.dispatch {
            users
                .entry(b.kernel.as_str())
                .or_default()
                .insert(f.func.name.to_string());
        }
    }
    users
        .into_iter()
        .filter(|(_, fs)| fs.len() > 1)
        .map(|(k, _)| k.to_string())
        .collect()
}

/// Overload names that add no suffix: the primary overload of an operator.
pub const PRIMARY_OVERLOADS: &[&str] = &["", "Tensor", "default", "self", "input"];

fn rust_type(ty: &Type, opts: &GenOptions) -> Result<RustType, String> {
    let a = &opts.aten;
    let plain = |owned: &str, borrowed: &str| RustType {
        owned: owned.to_string(),
        borrowed: borrowed.to_string(),
        api: borrowed.to_string(),
        conversion: Conversion::None,
    };
    let t = match ty {
        Type::Tensor => plain("Tensor", "&Tensor"),
        Type::Int | Type::SymInt => plain("i64", "i64"),
        Type::Float => plain("f64", "f64"),
        Type::Bool => plain("bool", "bool"),
        Type::Str => plain("String", "&str"),
        Type::ScalarType => plain("ScalarType", "ScalarType"),
        Type::Device => plain("Device", "Device"),
        Type::Scalar => RustType {
            owned: "Arg<Scalar>".into(),
            borrowed: "&Scalar".into(),
            api: "impl Into<Scalar>".into(),
            conversion: Conversion::IntoScalar,
        },
        Type::List { elem, .. } => match elem.as_ref() {
            Type::Tensor => plain("Vec<Tensor>", "&[Tensor]"),
            Type::Int | Type::SymInt => plain("Vec<i64>", "&[i64]"),
            Type::Float => plain("Vec<f64>", "&[f64]"),
            Type::Bool => plain("Vec<bool>", "&[bool]"),
            other => return Err(format!("the Rust emitter does not support `{other}[]` yet")),
        },
        Type::Optional(inner) => match inner.as_ref() {
            Type::Tensor => plain("Option<Tensor>", "Option<&Tensor>"),
            Type::Int | Type::SymInt => plain("Option<i64>", "Option<i64>"),
            Type::Float => plain("Arg<Option<f64>>", "Option<f64>"),
            Type::Bool => plain("Arg<Option<bool>>", "Option<bool>"),
            Type::ScalarType => plain("Arg<Option<ScalarType>>", "Option<ScalarType>"),
            Type::Device => plain("Arg<Option<Device>>", "Option<Device>"),
            // `str?` (div's rounding_mode); the `Arg` impls live in ratten-aten's `native`.
            Type::Str => plain("Arg<Option<String>>", "Option<&str>"),
            Type::Layout => {
                let t = format!("{a}::native::Layout");
                plain(&format!("Arg<Option<{t}>>"), &format!("Option<{t}>"))
            }
            Type::MemoryFormat => {
                let t = format!("{a}::native::MemoryFormat");
                plain(&format!("Arg<Option<{t}>>"), &format!("Option<{t}>"))
            }
            Type::Scalar => RustType {
                owned: "Arg<Option<Scalar>>".into(),
                borrowed: "Option<&Scalar>".into(),
                api: "Option<Scalar>".into(),
                conversion: Conversion::AsRef,
            },
            other => return Err(format!("the Rust emitter does not support `{other}?` yet")),
        },
        other => return Err(format!("the Rust emitter does not support `{other}` yet")),
    };
    Ok(t)
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

/// A default as a Rust expression of the borrowed form (Scalar defaults are owned `Scalar`
/// values, bound by a `let` before the call).
fn default_expr(arg: &Argument) -> Result<Option<String>, String> {
    let Some(d) = &arg.default else {
        return Ok(None);
    };
    let scalar = matches!(arg.ty, Type::Scalar);
    let e = match d {
        DefaultValue::None => "None".to_string(),
        DefaultValue::Bool(b) if scalar => format!("Scalar::Bool({b})"),
        DefaultValue::Bool(b) => {
            if arg.ty.is_optional() {
                format!("Some({b})")
            } else {
                b.to_string()
            }
        }
        DefaultValue::Int(i) if scalar => format!("Scalar::Int({i})"),
        DefaultValue::Int(i) => {
            if arg.ty.is_optional() {
                format!("Some({i})")
            } else {
                i.to_string()
            }
        }
        DefaultValue::Float(f) if scalar => format!("Scalar::Double({})", float_literal(*f)),
        DefaultValue::Float(f) => {
            if arg.ty.is_optional() {
                format!("Some({})", float_literal(*f))
            } else {
                float_literal(*f)
            }
        }
        DefaultValue::IntList(v) => format!("&{v:?}"),
        DefaultValue::BoolList(v) => format!("&{v:?}"),
        DefaultValue::FloatList(v) => format!(
            "&[{}]",
            v.iter()
                .map(|f| float_literal(*f))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DefaultValue::Str(s) => format!("{s:?}"),
        other => {
            return Err(format!(
                "the Rust emitter cannot express the default `{other:?}` of argument `{}`",
                arg.name
            ))
        }
    };
    Ok(Some(e))
}

/// The Rust names of one function: (short-form name, with-form name, backend name).
///
/// `tensor_is_primary`: whether the `Tensor` overload may take the bare name (not when the
/// operator also has an overload without a name: `clamp` vs `clamp.Tensor` -> `clamp_tensor`).
fn rust_names(f: &NativeFunction, tensor_is_primary: bool) -> (String, String, String) {
    let base = f.func.name.name.clone();
    let (stem, inplace) = match base.strip_suffix('_') {
        Some(s) if !s.ends_with('_') && f.kind() == SchemaKind::Inplace => (s.to_string(), true),
        _ => (base.clone(), false),
    };
    let is_out = f.kind() == SchemaKind::Out;
    let mut overload = f.func.name.overload_name.clone();
    if is_out {
        // `out`, `Scalar_out`, `values` (max.dim_max's), ...: the `_out` suffix says it.
        overload = overload
            .strip_suffix("_out")
            .map(str::to_string)
            .unwrap_or_else(|| {
                if overload == "out" {
                    String::new()
                } else {
                    overload.clone()
                }
            });
    }
    let primary = PRIMARY_OVERLOADS.contains(&overload.as_str())
        && (tensor_is_primary || overload != "Tensor");
    let suffix = if primary {
        String::new()
    } else {
        format!("_{}", snake(&overload))
    };
    let mut name = format!("{stem}{suffix}");
    if is_out {
        name.push_str("_out");
    }
    let (api, with) = if inplace {
        (format!("{name}_"), format!("{name}_with_"))
    } else {
        (name.clone(), format!("{name}_with"))
    };
    let backend = if is_out {
        format!("{name}f")
    } else {
        api.clone()
    };
    (raw_ident(&api), with, raw_ident(&backend))
}

impl Model {
    pub fn build(nf: &NativeFunctions, opts: &GenOptions) -> Result<Model, Vec<String>> {
        let mut errors = Vec::new();
        let mut ops = Vec::new();
        let namespace = nf
            .functions
            .first()
            .map(|f| f.namespace.clone())
            .unwrap_or_else(|| opts.namespace.clone());
        // Delegates: the structured out= function's index by name.
        let by_name: BTreeMap<String, usize> = nf
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.func.name.to_string(), i))
            .collect();
        let shared = shared_kernel_names(nf);
        let unnamed = names_with_unnamed_overload(nf);
        for (index, f) in nf.functions.iter().enumerate() {
            if f.namespace != namespace {
                errors.push(format!(
                    "{}: every function of one file must be in one namespace ({} vs {namespace})",
                    f.func.name, f.namespace
                ));
                continue;
            }
            match op_info(nf, index, f, opts, &by_name, &shared, &unnamed) {
                Ok(op) => ops.push(op),
                Err(e) => errors.push(format!("{}: {e}", f.func.name)),
            }
        }
        // Names must be unique per namespace of the generated API.
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for op in &ops {
            let mut names = vec![op.api_name.clone()];
            names.extend(op.with_name.clone());
            for n in names {
                if let Some(prev) = seen.insert(n.clone(), op.name_with_overload.clone()) {
                    errors.push(format!(
                        "{} and {} both map to the Rust name `{n}`",
                        prev, op.name_with_overload
                    ));
                }
            }
        }
        let handle_mods: BTreeSet<&str> = ops.iter().map(|o| o.handle_mod.as_str()).collect();
        if handle_mods.len() != ops.len() {
            errors.push("two overloads share an unambiguous name".to_string());
        }
        if errors.is_empty() {
            Ok(Model { namespace, ops })
        } else {
            Err(errors)
        }
    }

    pub fn op(&self, index: usize) -> Option<&OpInfo> {
        self.ops.iter().find(|o| o.index == index)
    }
}

fn structured_kernels(
    nf: &NativeFunctions,
    out_index: usize,
    opts: &GenOptions,
    meta_for: &NativeFunction,
    shared: &BTreeSet<String>,
) -> Result<BTreeMap<String, KernelImpl>, String> {
    let out = &nf.functions[out_index];
    let state_type = match &out.structured_inherits {
        None => None,
        Some(base) => Some(opts.inherits.get(base).cloned().ok_or_else(|| {
            format!("structured_inherits: {base} has no Rust state type configured (GenOptions::inherits)")
        })?),
    };
    // The meta function belongs to the group, named after its functional overload.
    let functional_name = functional_unambiguous(nf, out_index, meta_for);
    let meta_path = format!("{}::{}_meta", opts.kernel_module, snake(&functional_name));
    let mut kernels = BTreeMap::new();
    for b in &out.dispatch {
        if !b.structured {
            continue;
        }
        kernels.insert(
            b.dispatch_key.clone(),
            KernelImpl::Structured {
                meta_path: meta_path.clone(),
                impl_path: Some(format!(
                    "{}::{}",
                    opts.kernel_module,
                    kernel_ident(&b.kernel, out, shared.contains(&b.kernel))
                )),
                state_type: state_type.clone(),
                out_fn: out_index,
            },
        );
    }
    kernels.insert(
        "Meta".to_string(),
        KernelImpl::Structured {
            meta_path,
            impl_path: None,
            state_type,
            out_fn: out_index,
        },
    );
    Ok(kernels)
}

/// The unambiguous name of the functional member of `out`'s group (torchgen names the meta
/// class after it); the out= function's own name when it has no functional sibling.
fn functional_unambiguous(
    nf: &NativeFunctions,
    out_index: usize,
    fallback: &NativeFunction,
) -> String {
    for g in nf.groups() {
        if g.out == out_index {
            return unambiguous_name(&nf.functions[g.functional]);
        }
    }
    unambiguous_name(fallback)
}

/// torchgen's `OperatorName.unambiguous_name()`: `add_Tensor`, `add__Tensor`, `neg`.
pub fn unambiguous_name(f: &NativeFunction) -> String {
    if f.func.name.overload_name.is_empty() {
        f.func.name.name.clone()
    } else {
        format!("{}_{}", f.func.name.name, f.func.name.overload_name)
    }
}

fn op_info(
    nf: &NativeFunctions,
    index: usize,
    f: &NativeFunction,
    opts: &GenOptions,
    by_name: &BTreeMap<String, usize>,
    shared: &BTreeSet<String>,
    unnamed: &BTreeSet<String>,
) -> Result<OpInfo, String> {
    let mut args = Vec::new();
    let no_default = &f.cpp_no_default_args;
    for a in &f.func.arguments {
        let ty = rust_type(&a.ty, opts).map_err(|e| format!("argument `{}`: {e}", a.name))?;
        let default = if a.is_out() || no_default.contains(&a.name) {
            None
        } else {
            default_expr(a)?
        };
        args.push(ArgInfo {
            name: a.name.clone(),
            ident: ident(&a.name),
            ty,
            default,
            is_out: a.is_out(),
            write_alias: a
                .alias_info
                .as_ref()
                .filter(|x| x.is_write)
                .and_then(|x| x.before_sets.first().cloned()),
        });
    }
    let mut rets = Vec::new();
    for r in &f.func.returns {
        let owned = match &r.ty {
            Type::Tensor => "Tensor".to_string(),
            Type::List { elem, .. } if matches!(elem.as_ref(), Type::Tensor) => {
                "Vec<Tensor>".to_string()
            }
            Type::Int => "i64".into(),
            Type::Float => "f64".into(),
            Type::Bool => "bool".into(),
            Type::Scalar => "Arg<Scalar>".into(),
            other => {
                return Err(format!(
                    "the Rust emitter does not support the return type `{other}` yet"
                ))
            }
        };
        let aliases_arg = r
            .alias_info
            .as_ref()
            .filter(|x| x.is_write)
            .and_then(|x| x.before_sets.first())
            .and_then(|set| {
                args.iter()
                    .position(|a| a.write_alias.as_deref() == Some(set.as_str()))
            });
        rets.push(RetInfo { owned, aliases_arg });
    }
    let (api_name, with_name, backend_name) = rust_names(f, !unnamed.contains(&f.func.name.name));
    let self_arg = f
        .func
        .arguments
        .iter()
        .position(|a| a.name == "self" && !a.kwarg_only);
    if f.variants_method && self_arg.is_none() {
        return Err("`variants: method` needs a positional `self` argument".into());
    }

    // Kernels per key.
    let mut kernels = BTreeMap::new();
    if f.structured {
        kernels = structured_kernels(nf, index, opts, f, shared)?;
    } else if let Some(d) = &f.structured_delegate {
        let out_index = *by_name
            .get(&d.to_string())
            .ok_or_else(|| format!("structured_delegate {d} is not declared"))?;
        kernels = structured_kernels(nf, out_index, opts, &nf.functions[out_index], shared)?;
    }
    for b in &f.dispatch {
        if f.structured && b.structured {
            continue;
        }
        let k = if f.is_generated() && f.kind() == SchemaKind::Out {
            let functional = nf
                .groups()
                .find(|g| g.out == index)
                .map(|g| g.functional)
                .ok_or_else(|| {
                    "a generated out= function without a functional sibling".to_string()
                })?;
            KernelImpl::GeneratedOut { functional }
        } else if f.is_generated() && f.kind() == SchemaKind::Functional {
            let inplace = nf
                .groups()
                .find(|g| g.functional == index)
                .and_then(|g| g.inplace)
                .ok_or_else(|| {
                    "a generated functional function without an in-place sibling".to_string()
                })?;
            KernelImpl::GeneratedFunctional { inplace }
        } else {
            KernelImpl::Plain {
                path: format!(
                    "{}::{}",
                    opts.kernel_module,
                    kernel_ident(&b.kernel, f, shared.contains(&b.kernel))
                ),
            }
        };
        kernels.insert(b.dispatch_key.clone(), k);
    }
    Ok(OpInfo {
        index,
        qualified_name: format!("{}::{}", f.namespace, f.func.name.name),
        overload_name: f.func.name.overload_name.clone(),
        name_with_overload: f.func.name.to_string(),
        schema_source: f.func.to_source_string(),
        handle_mod: unambiguous_name(f),
        with_name: args
            .iter()
            .any(|a| a.default.is_some())
            .then_some(with_name),
        api_name,
        backend_name,
        kind: f.kind(),
        args,
        rets,
        function: f.variants_function,
        method: f.variants_method,
        self_arg,
        kernels,
        doc: format!("{}::{}", f.namespace, f.func.to_source_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_of_overload_names() {
        assert_eq!(snake("Scalar"), "scalar");
        assert_eq!(snake("dim_IntList"), "dim_int_list");
        assert_eq!(snake("Tensor_Scalar"), "tensor_scalar");
        assert_eq!(snake("self_int"), "self_int");
        assert_eq!(snake("SymInt"), "sym_int");
    }

    fn model(yaml: &str) -> Model {
        let nf = NativeFunctions::parse(yaml, std::path::Path::new("test.yaml"), None).unwrap();
        Model::build(&nf, &GenOptions::aten()).unwrap()
    }

    fn op<'m>(m: &'m Model, name: &str) -> &'m OpInfo {
        m.ops
            .iter()
            .find(|o| o.name_with_overload == name)
            .unwrap_or_else(|| panic!("{name} not in the model"))
    }

    fn plain(op: &OpInfo, key: &str) -> String {
        match op.kernels.get(key) {
            Some(KernelImpl::Plain { path }) => path.clone(),
            other => panic!("{}: {key} is {other:?}", op.name_with_overload),
        }
    }

    #[test]
    fn kernel_names_shared_by_overloads_get_the_overload_suffix() {
        let m = model(
            "- func: div.Scalar(Tensor self, Scalar other) -> Tensor\n  dispatch:\n    CompositeExplicitAutograd: div\n\n\
             - func: div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor\n  dispatch:\n    CompositeExplicitAutograd: div\n\n\
             - func: fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)\n  dispatch:\n    CPU: fill_\n\n\
             - func: fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)\n  dispatch:\n    CPU: fill_\n\n\
             - func: eq.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)\n  dispatch:\n    CPU: eq_Scalar_out\n",
        );
        assert_eq!(
            plain(op(&m, "div.Scalar"), "CompositeExplicitAutograd"),
            "crate::native::div_scalar"
        );
        assert_eq!(
            plain(op(&m, "div.Scalar_mode"), "CompositeExplicitAutograd"),
            "crate::native::div_scalar_mode"
        );
        assert_eq!(
            plain(op(&m, "fill_.Scalar"), "CPU"),
            "crate::native::fill_scalar_"
        );
        assert_eq!(plain(op(&m, "fill_.Tensor"), "CPU"), "crate::native::fill_");
        // A unique name is kept, snake-cased.
        assert_eq!(
            plain(op(&m, "eq.Scalar_out"), "CPU"),
            "crate::native::eq_scalar_out"
        );
        // `str?` is `Option<&str>` for kernels.
        let mode = &op(&m, "div.Scalar_mode").args[2];
        assert_eq!(mode.ty.borrowed, "Option<&str>");
        assert_eq!(mode.ty.owned, "Arg<Option<String>>");
    }

    #[test]
    fn keyword_names_are_raw_and_unnamed_overloads_take_the_bare_name() {
        let m = model(
            "- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor\n  variants: function, method\n  dispatch:\n    CPU: where\n\n\
             - func: clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor\n  dispatch:\n    CPU: clamp\n\n\
             - func: clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor\n  dispatch:\n    CPU: clamp_tensor\n",
        );
        let w = op(&m, "where.self");
        assert_eq!(w.api_name, "r#where");
        assert_eq!(w.backend_name, "r#where");
        assert_eq!(plain(w, "CPU"), "crate::native::r#where");
        assert_eq!(op(&m, "clamp").api_name, "clamp");
        assert_eq!(op(&m, "clamp.Tensor").api_name, "clamp_tensor");
    }

    #[test]
    fn keywords_get_an_underscore() {
        assert_eq!(ident("self"), "self_");
        assert_eq!(ident("type"), "type_");
        assert_eq!(ident("other"), "other");
    }
}
