//! PythonArgParser (torch/csrc/utils/python_arg_parser.cpp), without the Python runtime.
//!
//! A [`Signature`] is made from a `FunctionSchema`; the Python layer describes each argument
//! it received as an [`ArgKind`] (cheap: only the shape of the value matters for matching),
//! and [`Parser::parse`] picks the first signature that accepts them, returning where each
//! parameter's value comes from. Keeping the matching here means it is unit-tested in Rust,
//! and the pyo3 layer only converts values.

use ratten_schema::{DefaultValue, FunctionSchema, Type};

/// What one Python argument looks like, for matching.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgKind {
    /// A `ratten.Tensor`, with its number of dimensions.
    Tensor {
        dim: usize,
    },
    Int,
    Float,
    Bool,
    Complex,
    Str,
    None,
    Dtype,
    Device,
    /// A `ratten.memory_format` (`ratten.contiguous_format`, ...).
    MemoryFormat,
    /// A `ratten.Generator`.
    Generator,
    /// A tuple or list (`container` is `tuple`/`list`), with its elements.
    Seq {
        container: &'static str,
        elems: Vec<ArgKind>,
    },
    /// Anything else, by its Python type name.
    Other(String),
}

impl ArgKind {
    /// The name torch prints for an argument of this kind ("got (Tensor, int)").
    pub fn type_name(&self) -> String {
        match self {
            ArgKind::Tensor { .. } => "Tensor".into(),
            ArgKind::Int => "int".into(),
            ArgKind::Float => "float".into(),
            ArgKind::Bool => "bool".into(),
            ArgKind::Complex => "complex".into(),
            ArgKind::Str => "str".into(),
            ArgKind::None => "NoneType".into(),
            ArgKind::Dtype => "ratten.dtype".into(),
            ArgKind::Device => "ratten.device".into(),
            ArgKind::MemoryFormat => "ratten.memory_format".into(),
            ArgKind::Generator => "ratten.Generator".into(),
            ArgKind::Seq { container, elems } => {
                // torch: "tuple of (int, str)" for mixed, "tuple of ints" when uniform.
                if elems.is_empty() {
                    return container.to_string();
                }
                let names: Vec<String> = elems.iter().map(|e| e.type_name()).collect();
                if names.iter().all(|n| n == &names[0]) {
                    format!("{container} of {}s", names[0])
                } else {
                    format!("{container} of ({})", names.join(", "))
                }
            }
            ArgKind::Other(n) => n.clone(),
        }
    }

    /// The Python type's own name (`Py_TYPE(obj)->tp_name`), which torch prints in "argument
    /// 'x' must be Tensor, not list": a sequence is its container alone.
    pub fn python_type_name(&self) -> String {
        match self {
            ArgKind::Seq { container, .. } => container.to_string(),
            k => k.type_name(),
        }
    }

    fn is_number(&self) -> bool {
        matches!(
            self,
            ArgKind::Int | ArgKind::Float | ArgKind::Bool | ArgKind::Complex
        )
    }
}

/// torch's ParameterType.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamType {
    Tensor,
    Scalar,
    Int,
    Float,
    Complex,
    Bool,
    Str,
    ScalarType,
    Device,
    IntList {
        size: Option<u32>,
    },
    FloatList,
    BoolList,
    TensorList,
    /// `MemoryFormat`: a `ratten.memory_format` object (or None).
    MemoryFormat,
    /// `Generator`: a `ratten.Generator` (or None).
    Generator,
    /// Layout and other types ratten's Python layer does not make: only their
    /// default (None) can be passed.
    Opaque(String),
}

impl ParamType {
    fn from_schema(t: &Type) -> ParamType {
        match t {
            Type::Tensor => ParamType::Tensor,
            Type::Scalar => ParamType::Scalar,
            Type::Int | Type::SymInt | Type::DeviceIndex => ParamType::Int,
            Type::Float | Type::SymFloat => ParamType::Float,
            Type::Complex => ParamType::Complex,
            Type::Bool | Type::SymBool => ParamType::Bool,
            Type::Str | Type::Dimname => ParamType::Str,
            Type::ScalarType => ParamType::ScalarType,
            Type::Device => ParamType::Device,
            Type::MemoryFormat => ParamType::MemoryFormat,
            Type::Generator => ParamType::Generator,
            Type::List { elem, size } => match elem.as_ref() {
                Type::Int | Type::SymInt => ParamType::IntList { size: *size },
                Type::Float => ParamType::FloatList,
                Type::Bool => ParamType::BoolList,
                Type::Tensor => ParamType::TensorList,
                Type::Optional(inner) if **inner == Type::Tensor => ParamType::TensorList,
                other => ParamType::Opaque(format!("{other}[]")),
            },
            Type::Optional(inner) => ParamType::from_schema(inner),
            other => ParamType::Opaque(other.to_string()),
        }
    }

    /// torch's type names in signatures ("Number", "tuple of ints", "torch.dtype").
    pub fn name(&self) -> String {
        match self {
            ParamType::Tensor => "Tensor".into(),
            ParamType::Scalar => "Number".into(),
            ParamType::Int => "int".into(),
            ParamType::Float => "float".into(),
            ParamType::Complex => "complex".into(),
            ParamType::Bool => "bool".into(),
            ParamType::Str => "str".into(),
            ParamType::ScalarType => "ratten.dtype".into(),
            ParamType::Device => "ratten.device".into(),
            ParamType::IntList { .. } => "tuple of ints".into(),
            ParamType::FloatList => "tuple of floats".into(),
            ParamType::BoolList => "tuple of bools".into(),
            ParamType::TensorList => "tuple of Tensors".into(),
            ParamType::MemoryFormat => "ratten.memory_format".into(),
            ParamType::Generator => "ratten.Generator".into(),
            ParamType::Opaque(n) => n.clone(),
        }
    }
}

/// One parameter of a Python signature.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub ty: ParamType,
    /// `T?` or a None default: accepts None.
    pub allow_none: bool,
    pub default: Option<DefaultValue>,
    pub kwarg_only: bool,
    /// Python numbers are accepted for this Tensor parameter (torch's
    /// `should_allow_numbers_as_tensors`) and become wrapped-number tensors.
    pub allow_numbers_as_tensor: bool,
    /// The schema argument this parameter fills (None for the merged `out`).
    pub schema_index: Option<usize>,
}

impl Param {
    /// torch: only a default makes a parameter optional; `T?` alone only admits None.
    fn is_optional(&self) -> bool {
        self.default.is_some()
    }

    /// Whether a value of `kind` fits (None is handled by the caller).
    pub fn accepts(&self, kind: &ArgKind) -> bool {
        match (&self.ty, kind) {
            (ParamType::Tensor, ArgKind::Tensor { .. }) => true,
            (ParamType::Tensor, k) => self.allow_numbers_as_tensor && k.is_number(),
            // torch accepts a Tensor for a Scalar (it calls item()); ratten requires 0-dim.
            (ParamType::Scalar, k) => k.is_number() || matches!(k, ArgKind::Tensor { dim: 0 }),
            // THPUtils_checkLong excludes bool.
            (ParamType::Int, k) => matches!(k, ArgKind::Int),
            (ParamType::Float, k) => matches!(k, ArgKind::Int | ArgKind::Float | ArgKind::Bool),
            (ParamType::Complex, k) => k.is_number(),
            (ParamType::Bool, k) => matches!(k, ArgKind::Bool),
            (ParamType::Str, k) => matches!(k, ArgKind::Str),
            (ParamType::ScalarType, k) => matches!(k, ArgKind::Dtype),
            (ParamType::Device, k) => matches!(k, ArgKind::Device | ArgKind::Str | ArgKind::Int),
            (ParamType::MemoryFormat, k) => matches!(k, ArgKind::MemoryFormat),
            (ParamType::Generator, k) => matches!(k, ArgKind::Generator),
            (ParamType::IntList { size }, k) => match k {
                ArgKind::Seq { elems, .. } => elems.iter().all(|e| matches!(e, ArgKind::Int)),
                // `int[2] stride=1` also takes a single int.
                ArgKind::Int => size.is_some_and(|s| s > 0),
                _ => false,
            },
            (ParamType::FloatList, ArgKind::Seq { elems, .. }) => elems
                .iter()
                .all(|e| matches!(e, ArgKind::Int | ArgKind::Float)),
            (ParamType::BoolList, ArgKind::Seq { elems, .. }) => {
                elems.iter().all(|e| matches!(e, ArgKind::Bool))
            }
            (ParamType::TensorList, ArgKind::Seq { elems, .. }) => {
                elems.iter().all(|e| matches!(e, ArgKind::Tensor { .. }))
            }
            _ => false,
        }
    }

    /// The text torch prints for the parameter: `Number alpha = 1`.
    pub fn signature_text(&self) -> String {
        let mut s = format!("{} {}", self.ty.name(), self.name);
        if let Some(d) = &self.default {
            s.push_str(" = ");
            s.push_str(&default_text(d));
        }
        s
    }
}

fn default_text(d: &DefaultValue) -> String {
    match d {
        DefaultValue::None => "None".into(),
        DefaultValue::Bool(b) => if *b { "True" } else { "False" }.into(),
        DefaultValue::Int(i) => i.to_string(),
        DefaultValue::Float(f) => ratten_schema::format_double(*f),
        DefaultValue::Str(s) => format!("\"{s}\""),
        DefaultValue::IntList(v) => format!(
            "[{}]",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// torch's `should_allow_numbers_as_tensors` (`torch._C._should_allow_numbers_as_tensors`, read
/// from torch 2.15.0): the ops whose Tensor arguments take Python numbers. Elsewhere a number
/// selects a Scalar overload (`pow(int_tensor, -1)` is `pow.Tensor_Scalar` and raises
/// "Integers to negative integer powers are not allowed.") or is a TypeError, as in torch.
/// The reflected dunders are ratten's own entry points for `1 + t` and friends.
pub fn allow_numbers_as_tensors(name: &str) -> bool {
    const OPS: &[&str] = &[
        "add",
        "add_",
        "sub",
        "sub_",
        "subtract",
        "subtract_",
        "mul",
        "mul_",
        "multiply",
        "multiply_",
        "div",
        "div_",
        "divide",
        "divide_",
        "true_divide",
        "true_divide_",
        "floor_divide",
        "floor_divide_",
        "to",
        "copy_",
        "_conj",
        "__radd__",
        "__rsub__",
        "__rmul__",
        "__rdiv__",
        "__rtruediv__",
        "__rfloordiv__",
        "__rpow__",
        "__and__",
        "__iand__",
        "__or__",
        "__ior__",
        "__xor__",
        "__ixor__",
    ];
    OPS.contains(&name)
}

/// One Python-visible name of the generated bindings and its signature strings, in torch's
/// format (`crate::generated::signatures`).
#[derive(Clone, Copy, Debug)]
pub struct Binding {
    pub name: &'static str,
    /// The declaration's `python_module` (`nn` for `ratten.nn.functional`, `linalg`), or
    /// empty for the top-level namespace.
    pub module: &'static str,
    pub signatures: &'static [&'static str],
    /// The native schemas the signatures call (`aten::add.Tensor(...) -> Tensor`).
    pub schemas: &'static [&'static str],
}

/// Where a parameter's value comes from after parsing.
#[derive(Clone, Debug, PartialEq)]
pub enum Slot {
    /// The i-th positional argument.
    Positional(usize),
    /// Positional arguments `start..` packed into an int list (`view(2, 3)`).
    VarArgs(usize),
    /// The keyword argument at this index of the given keyword list.
    Keyword(usize),
    /// Not given: the parameter's default (or None).
    Default,
}

/// One Python signature (one overload, with its out= form merged in).
#[derive(Clone, Debug)]
pub struct Signature {
    pub name: String,
    pub params: Vec<Param>,
    /// Index into the caller's overload list of the functional schema.
    pub overload: usize,
    /// The out= overload merged into this signature (called when `out` is given).
    pub out_overload: Option<usize>,
    /// Parsed as a Tensor method: `self` is bound, not a parameter.
    pub method: bool,
}

impl Signature {
    /// Builds the Python signature of `schema`. For a method the `self` argument is dropped;
    /// for a function it is called `input`, as torch's generated bindings do. Out arguments
    /// become one keyword-only `out` parameter.
    pub fn from_schema(schema: &FunctionSchema, overload: usize, method: bool) -> Signature {
        let name = schema.name.unqualified_name().to_string();
        let numbers = allow_numbers_as_tensors(&name);
        let mut params = Vec::new();
        let mut has_out = false;
        for (i, a) in schema.arguments.iter().enumerate() {
            if a.is_out() {
                has_out = true;
                continue;
            }
            if method && i == 0 && a.name == "self" {
                continue;
            }
            let pname = if a.name == "self" {
                "input".to_string()
            } else {
                a.name.clone()
            };
            params.push(Param {
                name: pname,
                ty: ParamType::from_schema(&a.ty),
                allow_none: a.ty.is_optional() || a.default == Some(DefaultValue::None),
                default: a.default.clone(),
                kwarg_only: a.kwarg_only,
                allow_numbers_as_tensor: numbers && !a.ty.is_optional(),
                schema_index: Some(i),
            });
        }
        let mut sig = Signature {
            name,
            params,
            overload,
            out_overload: None,
            method,
        };
        if has_out {
            sig.push_out_param(schema);
            sig.out_overload = Some(overload);
        }
        sig
    }

    fn push_out_param(&mut self, out_schema: &FunctionSchema) {
        let n_out = out_schema.out_arguments().count();
        self.params.push(Param {
            name: "out".into(),
            ty: if n_out == 1 {
                ParamType::Tensor
            } else {
                ParamType::TensorList
            },
            allow_none: true,
            default: Some(DefaultValue::None),
            kwarg_only: true,
            allow_numbers_as_tensor: false,
            schema_index: None,
        });
    }

    /// Merges the out= overload `out_schema` into this (functional) signature.
    pub fn merge_out(&mut self, out_schema: &FunctionSchema, out_overload: usize) {
        self.push_out_param(out_schema);
        self.out_overload = Some(out_overload);
    }

    /// `(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)`.
    pub fn text(&self) -> String {
        let mut parts = Vec::new();
        let mut star = false;
        for p in &self.params {
            if p.kwarg_only && !star {
                parts.push("*".to_string());
                star = true;
            }
            parts.push(p.signature_text());
        }
        format!("({})", parts.join(", "))
    }

    /// The entries torch's error text counts in this signature: its parameters and the `*`
    /// before keyword-only ones (torch's `_parseOption` splits the signature string at commas).
    fn option_entries(&self) -> usize {
        self.params.len() + usize::from(self.params.iter().any(|p| p.kwarg_only))
    }

    fn max_positional(&self) -> usize {
        self.params.iter().filter(|p| !p.kwarg_only).count()
    }

    fn min_positional(&self) -> usize {
        self.params
            .iter()
            .filter(|p| !p.kwarg_only && !p.is_optional())
            .count()
    }

    /// Tries to bind the arguments; on failure says why, as torch's single-signature errors do.
    pub fn bind(
        &self,
        args: &[ArgKind],
        kwargs: &[(String, ArgKind)],
    ) -> Result<Vec<Slot>, BindError> {
        let max_pos = self.max_positional();
        // torch: an int list that is the only positional parameter also takes varargs
        // (`x.view(2, 3)`, `x.flip(0, 1)`; `x.roll(1, 0)` is shifts and dims).
        let varargs_first = max_pos == 1
            && matches!(
                self.params.first(),
                Some(Param {
                    ty: ParamType::IntList { .. },
                    kwarg_only: false,
                    ..
                })
            );
        let fixed_size = matches!(
            self.params.first().map(|p| &p.ty),
            Some(ParamType::IntList { size: Some(s) }) if *s > 0
        );
        let varargs = varargs_first
            && !args.is_empty()
            && args.iter().all(|a| matches!(a, ArgKind::Int))
            && (args.len() > 1 || !fixed_size);
        if !varargs && args.len() > max_pos {
            return Err(BindError::TooMany {
                min: self.min_positional(),
                max: max_pos,
                given: args.len(),
            });
        }
        let mut used_kw = vec![false; kwargs.len()];
        let mut slots = Vec::with_capacity(self.params.len());
        let mut bad: Vec<BadArg> = Vec::new();
        let mut pos = 0usize;
        let mut missing = Vec::new();
        for (pi, p) in self.params.iter().enumerate() {
            let kw = kwargs.iter().position(|(n, _)| n == &p.name);
            if pi == 0 && varargs {
                if kw.is_some() {
                    return Err(BindError::MultipleValues(p.name.clone()));
                }
                slots.push(Slot::VarArgs(0));
                pos = args.len();
                continue;
            }
            let (given, slot, position) = if !p.kwarg_only && pos < args.len() {
                if kw.is_some() {
                    return Err(BindError::MultipleValues(p.name.clone()));
                }
                pos += 1;
                (Some(&args[pos - 1]), Slot::Positional(pos - 1), Some(pos))
            } else if let Some(k) = kw {
                used_kw[k] = true;
                (Some(&kwargs[k].1), Slot::Keyword(k), None)
            } else {
                (None, Slot::Default, None)
            };
            match given {
                None => {
                    if !p.is_optional() {
                        missing.push(p.name.clone());
                    }
                    slots.push(Slot::Default);
                }
                Some(ArgKind::None) if p.allow_none => slots.push(slot),
                Some(k) if p.accepts(k) => slots.push(slot),
                Some(k) => {
                    bad.push(BadArg {
                        param: p.name.clone(),
                        expected: p.ty.name(),
                        got: k.python_type_name(),
                        position,
                    });
                    slots.push(slot);
                }
            }
        }
        if let Some(k) = used_kw.iter().position(|u| !u) {
            return Err(BindError::UnexpectedKeyword(kwargs[k].0.clone()));
        }
        if !bad.is_empty() {
            return Err(BindError::BadTypes(bad));
        }
        if !missing.is_empty() {
            return Err(BindError::Missing(missing));
        }
        Ok(slots)
    }
}

/// Splits `text` at top-level commas (not inside `[]`, `<>`, `()` or quotes).
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0usize);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '<' | '(') => depth += 1,
            (None, ']' | '>' | ')') => depth -= 1,
            (None, ',') if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() {
        parts.push(last);
    }
    parts
}

/// A default as torch writes it in signature strings: `None`, `True`, `1`, `1.5`, `"mean"`,
/// `[0, 1]`.
fn parse_default(text: &str) -> Result<DefaultValue, String> {
    let t = text.trim();
    Ok(match t {
        "None" | "nullptr" | "c10::nullopt" | "::std::nullopt" => DefaultValue::None,
        "True" | "true" => DefaultValue::Bool(true),
        "False" | "false" => DefaultValue::Bool(false),
        _ if t.starts_with('[') && t.ends_with(']') => {
            let inner = &t[1..t.len() - 1];
            let items = split_top_level(inner);
            if items.iter().all(|i| i.parse::<i64>().is_ok()) {
                DefaultValue::IntList(items.iter().filter_map(|i| i.parse().ok()).collect())
            } else if items.iter().all(|i| *i == "True" || *i == "False") {
                DefaultValue::BoolList(items.iter().map(|i| *i == "True").collect())
            } else {
                let v: Result<Vec<f64>, _> = items.iter().map(|i| i.parse::<f64>()).collect();
                DefaultValue::FloatList(v.map_err(|_| format!("bad list default `{t}`"))?)
            }
        }
        _ if t.len() >= 2
            && ((t.starts_with('"') && t.ends_with('"'))
                || (t.starts_with('\'') && t.ends_with('\''))) =>
        {
            DefaultValue::Str(t[1..t.len() - 1].to_string())
        }
        _ => {
            if let Ok(i) = t.parse::<i64>() {
                DefaultValue::Int(i)
            } else if let Ok(f) = t.parse::<f64>() {
                DefaultValue::Float(f)
            } else {
                match t {
                    "inf" => DefaultValue::Float(f64::INFINITY),
                    "-inf" => DefaultValue::Float(f64::NEG_INFINITY),
                    // Enum-like defaults (`contiguous_format`): only meaningful to the kernel.
                    _ => DefaultValue::Str(t.to_string()),
                }
            }
        }
    })
}

impl ParamType {
    /// A type name of torch's signature strings (python_arg_parser.cpp's `type_map`), without
    /// `?` and `[N]`.
    pub fn from_torch_name(name: &str, size: Option<u32>) -> ParamType {
        match name {
            "Tensor" => ParamType::Tensor,
            "Scalar" => ParamType::Scalar,
            "int64_t" | "SymInt" | "DeviceIndex" => ParamType::Int,
            "double" => ParamType::Float,
            "complex" => ParamType::Complex,
            "bool" => ParamType::Bool,
            "c10::string_view" | "std::string" | "std::string_view" | "Dimname" => ParamType::Str,
            "ScalarType" => ParamType::ScalarType,
            "Device" => ParamType::Device,
            "MemoryFormat" => ParamType::MemoryFormat,
            "Generator" => ParamType::Generator,
            "IntArrayRef" | "SymIntArrayRef" => ParamType::IntList { size },
            "ArrayRef<double>" => ParamType::FloatList,
            "ArrayRef<bool>" => ParamType::BoolList,
            "TensorList" | "c10::List<::std::optional<Tensor>>" => ParamType::TensorList,
            other => ParamType::Opaque(other.to_string()),
        }
    }
}

impl Signature {
    /// Parses one of torch's signature strings,
    /// `add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)`. Parameter `i`
    /// gets `schema_index: Some(i)`; the caller reads values by parameter position.
    pub fn parse(text: &str, overload: usize, method: bool) -> Result<Signature, String> {
        let text = text.split('|').next().unwrap_or(text).trim();
        let open = text
            .find('(')
            .ok_or_else(|| format!("signature `{text}`: expected `(`"))?;
        if !text.ends_with(')') {
            return Err(format!("signature `{text}`: expected `)` at the end"));
        }
        let name = text[..open].trim().to_string();
        let numbers = allow_numbers_as_tensors(&name);
        let mut params = Vec::new();
        let mut kwarg_only = false;
        for part in split_top_level(&text[open + 1..text.len() - 1]) {
            if part == "*" {
                kwarg_only = true;
                continue;
            }
            let (decl, default) = match part.split_once('=') {
                Some((d, v)) => (d.trim(), Some(parse_default(v)?)),
                None => (part, None),
            };
            let (ty, pname) = decl
                .rsplit_once(' ')
                .ok_or_else(|| format!("signature `{text}`: parameter `{part}` has no name"))?;
            let (ty, optional) = match ty.strip_suffix('?') {
                Some(t) => (t, true),
                None => (ty, false),
            };
            let (ty, size) =
                match ty.strip_suffix(']').and_then(|t| t.rsplit_once('[')) {
                    Some((t, n)) => (
                        t,
                        Some(n.parse::<u32>().map_err(|_| {
                            format!("signature `{text}`: bad list size in `{part}`")
                        })?),
                    ),
                    None => (ty, None),
                };
            let pty = ParamType::from_torch_name(ty, size);
            params.push(Param {
                name: pname.to_string(),
                allow_numbers_as_tensor: numbers && !optional && pty == ParamType::Tensor,
                ty: pty,
                allow_none: optional || default == Some(DefaultValue::None),
                default,
                kwarg_only,
                schema_index: Some(params.len()),
            });
        }
        Ok(Signature {
            name,
            params,
            overload,
            out_overload: None,
            method,
        })
    }
}

impl Parser {
    /// PythonArgParser over torch-format signature strings (what the generated bindings list).
    pub fn from_signature_strings(
        name: &str,
        signatures: &[&str],
        method: bool,
    ) -> Result<Parser, String> {
        let signatures = signatures
            .iter()
            .enumerate()
            .map(|(i, s)| Signature::parse(s, i, method))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Parser {
            name: name.to_string(),
            signatures,
        })
    }
}

/// A parameter whose argument had the wrong type.
#[derive(Clone, Debug, PartialEq)]
pub struct BadArg {
    pub param: String,
    pub expected: String,
    pub got: String,
    /// 1-based position (positional arguments only).
    pub position: Option<usize>,
}

/// Why one signature did not accept the arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum BindError {
    TooMany {
        min: usize,
        max: usize,
        given: usize,
    },
    Missing(Vec<String>),
    UnexpectedKeyword(String),
    MultipleValues(String),
    BadTypes(Vec<BadArg>),
}

impl BindError {
    /// torch's message for a function with one signature.
    pub fn message(&self, name: &str) -> String {
        match self {
            BindError::TooMany { min, max, given } => {
                let range = if min == max {
                    format!("{max}")
                } else {
                    format!("from {min} to {max}")
                };
                let s = if *max == 1 { "" } else { "s" };
                let were = if *given == 1 { "was" } else { "were" };
                format!("{name}() takes {range} positional argument{s} but {given} {were} given")
            }
            BindError::Missing(names) => {
                // torch's text pluralises exactly when one is missing; kept as torch prints it.
                let s = if names.len() == 1 { "s" } else { "" };
                let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
                format!(
                    "{name}() missing {} required positional argument{s}: {}",
                    names.len(),
                    quoted.join(", ")
                )
            }
            BindError::UnexpectedKeyword(k) => {
                format!("{name}() got an unexpected keyword argument '{k}'")
            }
            BindError::MultipleValues(k) => {
                format!("{name}() got multiple values for argument '{k}'")
            }
            BindError::BadTypes(bad) => {
                let b = &bad[0];
                match b.position {
                    Some(p) => format!(
                        "{name}(): argument '{}' (position {p}) must be {}, not {}",
                        b.param, b.expected, b.got
                    ),
                    None => format!(
                        "{name}(): argument '{}' must be {}, not {}",
                        b.param, b.expected, b.got
                    ),
                }
            }
        }
    }
}

/// The outcome of parsing: which signature, and where each of its parameters comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub signature: usize,
    pub slots: Vec<Slot>,
}

/// PythonArgParser: the signatures of one Python-visible name, tried in order.
#[derive(Clone, Debug, Default)]
pub struct Parser {
    pub name: String,
    pub signatures: Vec<Signature>,
}

impl Parser {
    /// Builds the parser for the overloads of one operator name. Out= overloads merge into the
    /// functional overload with the same other arguments; `X.Scalar` overloads that duplicate
    /// an `X.Tensor` one are hidden (numbers are accepted as tensors there), as torch's
    /// binding generator does.
    pub fn from_schemas(name: &str, schemas: &[FunctionSchema], method: bool) -> Parser {
        let mut sigs: Vec<Signature> = Vec::new();
        let overload_names: Vec<&str> = schemas
            .iter()
            .map(|s| s.name.overload_name.as_str())
            .collect();
        let mut outs = Vec::new();
        for (i, s) in schemas.iter().enumerate() {
            if method
                && s.arguments
                    .first()
                    .is_none_or(|a| a.name != "self" || a.ty != Type::Tensor)
            {
                continue;
            }
            let ov = s.name.overload_name.as_str();
            // `Scalar` and `Scalar_out` hide behind `Tensor` and `out`.
            if ov.contains("Scalar") && allow_numbers_as_tensors(name) {
                let tensor_twin = ov.replace("Scalar", "Tensor");
                let twin = if tensor_twin == "Tensor_out" {
                    "out"
                } else {
                    tensor_twin.as_str()
                };
                if overload_names.contains(&twin) {
                    continue;
                }
            }
            if s.out_arguments().next().is_some() {
                outs.push(i);
            } else {
                sigs.push(Signature::from_schema(s, i, method));
            }
        }
        for i in outs {
            let s = &schemas[i];
            let non_out: Vec<_> = s.arguments.iter().filter(|a| !a.is_out()).collect();
            let twin = sigs.iter_mut().find(|sig| {
                let f = &schemas[sig.overload];
                sig.out_overload.is_none()
                    && f.arguments.len() == non_out.len()
                    && f.arguments
                        .iter()
                        .zip(&non_out)
                        .all(|(a, b)| a.name == b.name && a.ty == b.ty)
            });
            match twin {
                Some(sig) => sig.merge_out(s, i),
                None => sigs.push(Signature::from_schema(s, i, method)),
            }
        }
        Parser {
            name: name.to_string(),
            signatures: sigs,
        }
    }

    /// Picks the first signature that binds, or torch's TypeError text.
    pub fn parse(&self, args: &[ArgKind], kwargs: &[(String, ArgKind)]) -> Result<Parsed, String> {
        let mut errors = Vec::with_capacity(self.signatures.len());
        for (i, sig) in self.signatures.iter().enumerate() {
            match sig.bind(args, kwargs) {
                Ok(slots) => {
                    return Ok(Parsed {
                        signature: i,
                        slots,
                    })
                }
                Err(e) => errors.push(e),
            }
        }
        if self.signatures.len() == 1 {
            return Err(errors[0].message(&self.name));
        }
        // torch's `print_error`: when the number of arguments fits exactly one signature
        // (between its required and its total parameters), that signature's own error:
        // `sum('x')` names the argument, `sum(t, dtype='x')` lists both signatures.
        let n = args.len() + kwargs.len();
        let mut plausible = self.signatures.iter().enumerate().filter(|(_, sig)| {
            let required = sig.params.iter().filter(|p| !p.is_optional()).count();
            (required..=sig.params.len()).contains(&n)
        });
        if let (Some((i, _)), None) = (plausible.next(), plausible.next()) {
            return Err(errors[i].message(&self.name));
        }
        Err(self.invalid_combination(args, kwargs, &errors))
    }

    /// torch's "received an invalid combination of arguments" text.
    fn invalid_combination(
        &self,
        args: &[ArgKind],
        kwargs: &[(String, ArgKind)],
        errors: &[BindError],
    ) -> String {
        let mut got: Vec<String> = args.iter().map(|a| a.type_name()).collect();
        got.extend(kwargs.iter().map(|(n, k)| format!("{n}={}", k.type_name())));
        let mut s = format!(
            "{}() received an invalid combination of arguments - got ({}), but expected one of:\n",
            self.name,
            got.join(", ")
        );
        for (sig, err) in self.signatures.iter().zip(errors) {
            s.push_str(&format!(" * {}\n", sig.text()));
            // torch explains a mismatch only for a signature with as many entries as the call
            // has arguments (`_argcountMatch`), the `*` marker counted: `lt(t, 'x')` gets no
            // reason under `(Tensor input, Tensor other, *, Tensor out = None)`.
            if args.len() + kwargs.len() != sig.option_entries() {
                continue;
            }
            if let BindError::BadTypes(bad) = err {
                let mut marked: Vec<String> = Vec::new();
                for (i, a) in args.iter().enumerate() {
                    let is_bad = bad.iter().any(|b| b.position == Some(i + 1));
                    let t = a.type_name();
                    marked.push(if is_bad { format!("!{t}!") } else { t });
                }
                for (n, k) in kwargs {
                    let t = format!("{n}={}", k.type_name());
                    let is_bad = bad.iter().any(|b| b.position.is_none() && &b.param == n);
                    marked.push(if is_bad { format!("!{t}!") } else { t });
                }
                s.push_str(&format!(
                    "      didn't match because some of the arguments have invalid types: ({})\n",
                    marked.join(", ")
                ));
            } else if let BindError::UnexpectedKeyword(k) = err {
                s.push_str(&format!(
                    "      didn't match because some of the keywords were incorrect: {k}\n"
                ));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(s: &str) -> FunctionSchema {
        FunctionSchema::parse(s).unwrap()
    }

    fn add_parser(method: bool) -> Parser {
        let schemas = vec![
            schema("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
            schema("aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"),
            schema("aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"),
            schema("aten::add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)"),
        ];
        Parser::from_schemas("add", &schemas, method)
    }

    const T: ArgKind = ArgKind::Tensor { dim: 1 };

    #[test]
    fn add_merges_out_and_hides_scalar_overload() {
        let p = add_parser(false);
        assert_eq!(p.signatures.len(), 1);
        assert_eq!(
            p.signatures[0].text(),
            "(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)"
        );
        assert_eq!(p.signatures[0].out_overload, Some(2));
        let m = add_parser(true);
        assert_eq!(
            m.signatures[0].text(),
            "(Tensor other, *, Number alpha = 1, Tensor out = None)"
        );
    }

    #[test]
    fn binds_positional_keyword_defaults_and_wrapped_numbers() {
        let p = add_parser(false);
        let r = p.parse(&[T, ArgKind::Int], &[]).unwrap();
        assert_eq!(
            r.slots,
            vec![
                Slot::Positional(0),
                Slot::Positional(1),
                Slot::Default,
                Slot::Default
            ]
        );
        let r = p
            .parse(
                &[T, T],
                &[("alpha".into(), ArgKind::Float), ("out".into(), T)],
            )
            .unwrap();
        assert_eq!(
            r.slots,
            vec![
                Slot::Positional(0),
                Slot::Positional(1),
                Slot::Keyword(0),
                Slot::Keyword(1)
            ]
        );
        // keyword-only: alpha cannot be positional
        let e = p.parse(&[T, T, ArgKind::Int], &[]).unwrap_err();
        assert_eq!(e, "add() takes 2 positional arguments but 3 were given");
    }

    #[test]
    fn single_signature_errors_are_torchs() {
        let p = add_parser(false);
        assert_eq!(
            p.parse(&[T, ArgKind::Str], &[]).unwrap_err(),
            "add(): argument 'other' (position 2) must be Tensor, not str"
        );
        // torch names the Python type alone here ("must be Tensor, not list"), where its
        // overload-mismatch message describes the elements ("got (Tensor, list of [int])").
        let ints = ArgKind::Seq {
            container: "tuple",
            elems: vec![ArgKind::Int],
        };
        assert_eq!(
            p.parse(&[T, ints], &[]).unwrap_err(),
            "add(): argument 'other' (position 2) must be Tensor, not tuple"
        );
        assert_eq!(
            p.parse(&[T], &[]).unwrap_err(),
            "add() missing 1 required positional arguments: \"other\""
        );
        assert_eq!(
            p.parse(&[T, T], &[("beta".into(), ArgKind::Int)])
                .unwrap_err(),
            "add() got an unexpected keyword argument 'beta'"
        );
        assert_eq!(
            p.parse(&[T, T], &[("alpha".into(), ArgKind::Str)])
                .unwrap_err(),
            "add(): argument 'alpha' must be Number, not str"
        );
        assert_eq!(
            p.parse(&[T, T], &[("other".into(), T)]).unwrap_err(),
            "add() got multiple values for argument 'other'"
        );
    }

    #[test]
    fn several_signatures_list_them_all() {
        let schemas = vec![
            schema("aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"),
            schema("aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"),
        ];
        let p = Parser::from_schemas("sum", &schemas, false);
        // One argument fits only the first signature (torch's "plausible" rule): its error.
        assert_eq!(
            p.parse(&[ArgKind::Str], &[]).unwrap_err(),
            "sum(): argument 'input' (position 1) must be Tensor, not str"
        );
        // Two arguments fit both: the list, with a reason only where the entries (the `*`
        // counted) match the arguments given.
        assert_eq!(
            p.parse(&[T], &[("dtype".into(), ArgKind::Str)])
                .unwrap_err(),
            "sum() received an invalid combination of arguments - got (Tensor, dtype=str), but \
             expected one of:\n * (Tensor input, *, ratten.dtype dtype = None)\n * (Tensor input, \
             tuple of ints dim, bool keepdim = False, *, ratten.dtype dtype = None)\n"
        );
        let m = Parser::from_schemas("sum", &schemas, true);
        assert_eq!(
            m.parse(&[ArgKind::Str], &[]).unwrap_err(),
            "sum() received an invalid combination of arguments - got (str), but expected one \
             of:\n * (*, ratten.dtype dtype = None)\n * (tuple of ints dim, bool keepdim = False, \
             *, ratten.dtype dtype = None)\n"
        );
        // int[1] takes a single int
        let r = p.parse(&[T, ArgKind::Int], &[]).unwrap();
        assert_eq!(r.signature, 1);
        // bool is not an int
        assert!(p.parse(&[T, ArgKind::Bool], &[]).is_err());
    }

    #[test]
    fn int_list_takes_varargs() {
        let schemas = vec![schema(
            "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
        )];
        let p = Parser::from_schemas("view", &schemas, true);
        let r = p.parse(&[ArgKind::Int, ArgKind::Int], &[]).unwrap();
        assert_eq!(r.slots, vec![Slot::VarArgs(0)]);
        let seq = ArgKind::Seq {
            container: "tuple",
            elems: vec![ArgKind::Int; 2],
        };
        let r = p.parse(&[seq], &[]).unwrap();
        assert_eq!(r.slots, vec![Slot::Positional(0)]);
        let r = p.parse(&[ArgKind::Int], &[]).unwrap();
        assert_eq!(r.slots, vec![Slot::VarArgs(0)]);
        // Not with a second positional parameter: `x.roll(1, 0)` is shifts=1, dims=0.
        let roll = vec![schema(
            "aten::roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor",
        )];
        let q = Parser::from_schemas("roll", &roll, true);
        let r = q.parse(&[ArgKind::Int, ArgKind::Int], &[]).unwrap();
        assert_eq!(r.slots, vec![Slot::Positional(0), Slot::Positional(1)]);
        let bad = ArgKind::Seq {
            container: "list",
            elems: vec![ArgKind::Int, ArgKind::Str],
        };
        assert_eq!(
            p.parse(&[bad], &[]).unwrap_err(),
            "view(): argument 'size' (position 1) must be tuple of ints, not list"
        );
    }

    #[test]
    fn torch_signature_strings_parse() {
        let p = Parser::from_signature_strings(
            "add",
            &["add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)"],
            false,
        )
        .unwrap();
        assert_eq!(
            p.signatures[0].text(),
            "(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)"
        );
        assert!(p.signatures[0].params[1].allow_numbers_as_tensor);
        let r = p.parse(&[T, ArgKind::Float], &[]).unwrap();
        assert_eq!(r.slots[1], Slot::Positional(1));
        let s = Signature::parse(
            "sum(Tensor input, IntArrayRef[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)",
            0,
            false,
        )
        .unwrap();
        assert_eq!(s.params[1].ty, ParamType::IntList { size: Some(1) });
        assert!(s.params[1].allow_none && s.params[1].default.is_none());
        assert_eq!(s.params[2].default, Some(DefaultValue::Bool(false)));
        assert!(s.params[3].kwarg_only);
        let s = Signature::parse(
            "f(Tensor self, ArrayRef<double> w=[0.5, 1], c10::string_view mode=\"a,b\", double eps=1e-05)",
            0,
            true,
        )
        .unwrap();
        assert_eq!(
            s.params[1].default,
            Some(DefaultValue::FloatList(vec![0.5, 1.0]))
        );
        assert_eq!(s.params[2].default, Some(DefaultValue::Str("a,b".into())));
        assert_eq!(s.params[3].default, Some(DefaultValue::Float(1e-5)));
        assert!(Signature::parse("f(Tensor)", 0, false).is_err());
        assert!(Signature::parse("f Tensor x", 0, false).is_err());
    }

    #[test]
    fn memory_format_parameters_take_memory_format_objects() {
        let p = Parser::from_signature_strings(
            "to",
            &[
                "to(Device device=None, ScalarType dtype=None, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
                "to(ScalarType dtype, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
            ],
            true,
        )
        .unwrap();
        assert_eq!(p.signatures[0].params[4].ty, ParamType::MemoryFormat);
        let mf = || vec![("memory_format".to_string(), ArgKind::MemoryFormat)];
        assert_eq!(p.parse(&[], &mf()).unwrap().slots[4], Slot::Keyword(0));
        assert_eq!(p.parse(&[ArgKind::Dtype], &mf()).unwrap().signature, 1);
        let kw_none = [("memory_format".to_string(), ArgKind::None)];
        assert!(p.parse(&[ArgKind::Str], &kw_none).is_ok());
        assert!(p.parse(&[ArgKind::None], &[]).is_ok());
        // Keyword-only, and nothing else is a memory format.
        let e = p
            .parse(
                &[
                    ArgKind::Dtype,
                    ArgKind::Bool,
                    ArgKind::Bool,
                    ArgKind::MemoryFormat,
                ],
                &[],
            )
            .unwrap_err();
        assert!(
            e.contains("got (ratten.dtype, bool, bool, ratten.memory_format)"),
            "{e}"
        );
        assert!(
            e.contains("*, ratten.memory_format memory_format = None)"),
            "{e}"
        );
        let kw_int = [("memory_format".to_string(), ArgKind::Int)];
        assert!(p.parse(&[], &kw_int).is_err());
        // From a schema too (the dispatcher's parsers).
        let s = schema("aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)");
        let sig = Signature::from_schema(&s, 0, true);
        assert_eq!(sig.params[3].ty, ParamType::MemoryFormat);
    }
}
