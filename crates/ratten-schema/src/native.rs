//! native_functions.yaml: the model of its entries, torchgen's checks, the variants that
//! `autogen:` asks for, and the grouping into functional / in-place / out= / mutable groups.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{DeclError, DeclErrors, Location};
use crate::schema::{AliasInfo, Argument, FunctionSchema, OperatorName, Return, Type};
use crate::tags::Tags;
use crate::yaml::{self, Mark, Node};

/// The keys an entry of native_functions.yaml may have.
pub const NATIVE_KEYS: &[&str] = &[
    "func",
    "variants",
    "dispatch",
    "structured",
    "structured_delegate",
    "structured_inherits",
    "precomputed",
    "ufunc_inner_loop",
    "device_check",
    "device_guard",
    "manual_kernel_registration",
    "manual_cpp_binding",
    "python_module",
    "category_override",
    "tags",
    "autogen",
    "cpp_no_default_args",
    "use_const_ref_for_mutable_tensors",
];

const BACKEND_COMPONENTS: &[&str] = &[
    "CPU",
    "CUDA",
    "HIP",
    "XLA",
    "MPS",
    "IPU",
    "XPU",
    "HPU",
    "VE",
    "Lazy",
    "MTIA",
    "MAIA",
    "Meta",
    "PrivateUse1",
    "PrivateUse2",
    "PrivateUse3",
];

const FUNCTIONALITY_PREFIXES: &[&str] = &["", "Quantized", "Sparse", "SparseCsr", "NestedTensor"];

const OTHER_KERNEL_KEYS: &[&str] = &[
    "CompositeImplicitAutograd",
    "CompositeImplicitAutogradNestedTensor",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "MkldnnCPU",
    "ZeroTensor",
    "FPGA",
    "Vulkan",
    "Metal",
    "Python",
    "FuncTorchBatchedDecomposition",
];

/// Whether `key` names a dispatch key a kernel can be registered under in
/// native_functions.yaml (a backend key with its functionality prefix, or an alias key).
pub fn is_kernel_dispatch_key(key: &str) -> bool {
    if OTHER_KERNEL_KEYS.contains(&key) {
        return true;
    }
    FUNCTIONALITY_PREFIXES.iter().any(|p| {
        key.strip_prefix(p)
            .is_some_and(|rest| BACKEND_COMPONENTS.contains(&rest))
    })
}

/// The backend keys whose kernels are structured when the function is (torchgen's
/// STRUCTURED_DISPATCH_KEYS).
pub const STRUCTURED_DISPATCH_KEYS: &[&str] = &["CPU", "CUDA", "MPS", "XPU", "MTIA"];
/// The keys a `ufunc_inner_loop` fills in.
pub const UFUNC_DISPATCH_KEYS: &[&str] = &["CPU", "CUDA"];

/// torchgen's BaseOperatorName: `add_` is `add` in-place, `__iand__` the in-place dunder
/// `and`, `_fused_moving_avg_obs_fq_helper_functional` the functional overload.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct BaseOperatorName {
    pub base: String,
    pub inplace: bool,
    pub dunder_method: bool,
    pub functional_overload: bool,
}

const AUGMENTED_ASSIGNMENT_NAMES: &[&str] = &[
    "add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or",
];

impl BaseOperatorName {
    /// Splits an unqualified operator name.
    pub fn parse(op: &str) -> Result<BaseOperatorName, String> {
        if op.is_empty() {
            return Err("empty operator name".into());
        }
        if op.ends_with("_out") {
            return Err(format!(
                "operator name '{op}': the _out suffix is reserved and not permitted for operator \
                 names; did you mean to specify an out overload name instead?"
            ));
        }
        let dunder = op
            .strip_prefix("__")
            .and_then(|s| s.strip_suffix("__"))
            .filter(|s| !s.is_empty() && !s.contains('_'));
        let (mut base, inplace, dunder_method) = match dunder {
            Some(b) => {
                if let Some(rest) = b
                    .strip_prefix('i')
                    .filter(|r| AUGMENTED_ASSIGNMENT_NAMES.contains(r))
                {
                    (rest.to_string(), true, true)
                } else {
                    (b.to_string(), false, true)
                }
            }
            None => match op.strip_suffix('_') {
                Some(b) => (b.to_string(), true, false),
                None => (op.to_string(), false, false),
            },
        };
        let mut functional_overload = false;
        if let Some(b) = base.strip_suffix("_functional") {
            if dunder_method || inplace {
                return Err(format!(
                    "operator name '{op}': a _functional overload cannot be a dunder or in-place name"
                ));
            }
            functional_overload = true;
            base = b.to_string();
        }
        Ok(BaseOperatorName {
            base,
            inplace,
            dunder_method,
            functional_overload,
        })
    }
}

impl fmt::Display for BaseOperatorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.dunder_method {
            let i = if self.inplace { "i" } else { "" };
            write!(f, "__{i}{}__", self.base)
        } else if self.inplace {
            write!(f, "{}_", self.base)
        } else if self.functional_overload {
            write!(f, "{}_functional", self.base)
        } else {
            f.write_str(&self.base)
        }
    }
}

/// torchgen's SchemaKind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SchemaKind {
    Functional,
    Inplace,
    Out,
    Mutable,
    Scratch,
}

/// The parts torchgen splits a schema's arguments into (its `Arguments`), as indices into
/// `FunctionSchema::arguments`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgumentParts {
    pub pre_self_positional: Vec<usize>,
    pub self_arg: Option<usize>,
    pub post_self_positional: Vec<usize>,
    pub pre_tensor_options_kwarg_only: Vec<usize>,
    /// dtype, layout, device, pin_memory.
    pub tensor_options: Option<[usize; 4]>,
    pub post_tensor_options_kwarg_only: Vec<usize>,
    pub out: Vec<usize>,
}

/// Splits the arguments as torchgen does: self, TensorOptions, out= arguments (the
/// keyword-only mutable arguments, which must come last).
pub fn argument_parts(s: &FunctionSchema) -> Result<ArgumentParts, String> {
    let mut positional = Vec::new();
    let mut kwarg_only = Vec::new();
    let mut out = Vec::new();
    for (i, a) in s.arguments.iter().enumerate() {
        if !a.kwarg_only {
            positional.push(i);
        } else if a.is_write() {
            out.push(i);
        } else if !out.is_empty() {
            return Err(format!(
                "argument '{}' follows the out= argument '{}': out= arguments (keyword-only and \
                 mutable) must come last",
                a.name, s.arguments[out[0]].name
            ));
        } else {
            kwarg_only.push(i);
        }
    }
    let mut p = ArgumentParts {
        out,
        ..ArgumentParts::default()
    };
    match positional
        .iter()
        .position(|&i| s.arguments[i].name == "self")
    {
        Some(ix) => {
            p.pre_self_positional = positional[..ix].to_vec();
            p.self_arg = Some(positional[ix]);
            p.post_self_positional = positional[ix + 1..].to_vec();
        }
        None => p.post_self_positional = positional,
    }
    let preds: [(&str, Type); 4] = [
        ("dtype", Type::ScalarType),
        ("layout", Type::Layout),
        ("device", Type::Device),
        ("pin_memory", Type::Bool),
    ];
    let matches = |i: usize, k: usize| {
        let a = &s.arguments[i];
        a.name == preds[k].0 && *a.ty.unwrap_optional() == preds[k].1
    };
    let mut i = 0;
    let mut after = false;
    while i < kwarg_only.len() {
        if i + 4 <= kwarg_only.len() && (0..4).all(|k| matches(kwarg_only[i + k], k)) && !after {
            p.tensor_options = Some([
                kwarg_only[i],
                kwarg_only[i + 1],
                kwarg_only[i + 2],
                kwarg_only[i + 3],
            ]);
            i += 4;
            after = true;
            continue;
        }
        if after {
            p.post_tensor_options_kwarg_only.push(kwarg_only[i]);
        } else {
            p.pre_tensor_options_kwarg_only.push(kwarg_only[i]);
        }
        i += 1;
    }
    for &i in &p.pre_self_positional {
        if s.arguments[i].is_write() {
            return Err(format!(
                "mutable argument '{}' before self is not supported",
                s.arguments[i].name
            ));
        }
    }
    Ok(p)
}

/// torchgen's `FunctionSchema.kind()`.
pub fn schema_kind(s: &FunctionSchema) -> Result<SchemaKind, String> {
    let parts = argument_parts(s)?;
    let base = BaseOperatorName::parse(s.name.unqualified_name())?;
    kind_from_parts(s, &parts, &base)
}

fn kind_from_parts(
    s: &FunctionSchema,
    parts: &ArgumentParts,
    base: &BaseOperatorName,
) -> Result<SchemaKind, String> {
    let is_out = !parts.out.is_empty();
    let is_scratch = parts
        .out
        .iter()
        .any(|&i| s.arguments[i].name.starts_with("_scratch_"));
    let is_mutable = parts
        .post_self_positional
        .iter()
        .any(|&i| s.arguments[i].is_write());
    if is_out && base.inplace {
        return Err("a schema cannot be both in-place and out=".into());
    }
    Ok(if base.inplace {
        SchemaKind::Inplace
    } else if is_scratch {
        SchemaKind::Scratch
    } else if is_out {
        SchemaKind::Out
    } else if is_mutable {
        SchemaKind::Mutable
    } else {
        SchemaKind::Functional
    })
}

fn strip_arg(a: &Argument, strip_default: bool) -> Argument {
    Argument {
        alias_info: None,
        default: if strip_default {
            None
        } else {
            a.default.clone()
        },
        default_text: if strip_default {
            None
        } else {
            a.default_text.clone()
        },
        ..a.clone()
    }
}

/// torchgen's `FunctionSchema.signature()`: the schema shared by the functional, in-place,
/// out= and mutable variants of one function (no overload name, no annotations, no out=
/// arguments, no TensorOptions, mutated inputs turned into returns).
pub fn signature(s: &FunctionSchema, keep_return_names: bool) -> Result<FunctionSchema, String> {
    let parts = argument_parts(s)?;
    let base = BaseOperatorName::parse(s.name.unqualified_name())?;
    let name = BaseOperatorName {
        base: base.base.clone(),
        inplace: false,
        dunder_method: base.dunder_method,
        functional_overload: false,
    };
    let mut returns: Vec<Return> = s
        .returns
        .iter()
        .map(|r| Return {
            name: if keep_return_names {
                r.name.clone()
            } else {
                None
            },
            ty: r.ty.clone(),
            alias_info: None,
        })
        .collect();
    let mutated = parts
        .self_arg
        .iter()
        .chain(parts.out.iter())
        .chain(parts.post_self_positional.iter());
    for &i in mutated {
        let a = &s.arguments[i];
        if a.is_write() && !s.returns.iter().any(|r| r.alias_info == a.alias_info) {
            returns.push(Return {
                name: keep_return_names.then(|| format!("{}_out", a.name)),
                ty: a.ty.clone(),
                alias_info: None,
            });
        }
    }
    let mut arguments: Vec<Argument> = Vec::new();
    for &i in parts
        .pre_self_positional
        .iter()
        .chain(parts.self_arg.iter())
        .chain(parts.post_self_positional.iter())
    {
        arguments.push(strip_arg(&s.arguments[i], false));
    }
    for &i in parts
        .pre_tensor_options_kwarg_only
        .iter()
        .chain(parts.post_tensor_options_kwarg_only.iter())
    {
        arguments.push(strip_arg(&s.arguments[i], false));
    }
    // torchgen's Note [bernoulli.p schema]: its p has no default in the yaml but must
    // group with variants that default it.
    if s.name.unqualified_name() == "bernoulli" && s.name.overload_name == "p" {
        for a in arguments
            .iter_mut()
            .filter(|a| a.name == "p" && a.ty == Type::Float)
        {
            a.default = Some(crate::schema::DefaultValue::Float(0.5));
            a.default_text = Some("0.5".into());
        }
    }
    Ok(FunctionSchema {
        name: OperatorName::new(name.to_string(), ""),
        arguments,
        returns,
        is_vararg: false,
        is_varret: false,
    })
}

/// The text of `signature(s, false).to_source_string()`, written without building the
/// signature (grouping computes it for every function).
#[cfg(test)]
fn signature_key(s: &FunctionSchema) -> Result<String, String> {
    let parts = argument_parts(s)?;
    let base = BaseOperatorName::parse(s.name.unqualified_name())?;
    Ok(signature_key_from(s, &parts, &base))
}

fn signature_key_from(
    s: &FunctionSchema,
    parts: &ArgumentParts,
    base: &BaseOperatorName,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(160);
    if base.dunder_method {
        let _ = write!(out, "__{}__(", base.base);
    } else {
        out.push_str(&base.base);
        out.push('(');
    }
    let bernoulli_p = s.name.unqualified_name() == "bernoulli" && s.name.overload_name == "p";
    let mut first = true;
    let mut seen_kwarg = false;
    let positional = parts
        .pre_self_positional
        .iter()
        .chain(parts.self_arg.iter())
        .chain(parts.post_self_positional.iter());
    let kwarg = parts
        .pre_tensor_options_kwarg_only
        .iter()
        .chain(parts.post_tensor_options_kwarg_only.iter());
    for (&i, kw) in positional
        .map(|i| (i, false))
        .chain(kwarg.map(|i| (i, true)))
    {
        let a = &s.arguments[i];
        if !first {
            out.push_str(", ");
        }
        first = false;
        if kw && !seen_kwarg {
            out.push_str("*, ");
            seen_kwarg = true;
        }
        let _ = crate::schema::write_arg_type(&mut out, &a.ty, None, true);
        out.push(' ');
        out.push_str(&a.name);
        if bernoulli_p && a.name == "p" && a.ty == Type::Float && a.default_text.is_none() {
            out.push_str("=0.5");
        } else if let Some(d) = &a.default_text {
            out.push('=');
            out.push_str(d);
        }
    }
    out.push_str(") -> ");
    let mutated: Vec<&Type> = parts
        .self_arg
        .iter()
        .chain(parts.out.iter())
        .chain(parts.post_self_positional.iter())
        .map(|&i| &s.arguments[i])
        .filter(|a| a.is_write() && !s.returns.iter().any(|r| r.alias_info == a.alias_info))
        .map(|a| &a.ty)
        .collect();
    let rets: Vec<&Type> = s.returns.iter().map(|r| &r.ty).chain(mutated).collect();
    let mut single = String::new();
    if rets.len() == 1 {
        let _ = crate::schema::write_arg_type(&mut single, rets[0], None, true);
    }
    if rets.len() == 1 && !single.starts_with('(') {
        out.push_str(&single);
    } else {
        out.push('(');
        for (i, t) in rets.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = crate::schema::write_arg_type(&mut out, t, None, true);
        }
        out.push(')');
    }
    out
}

/// How a function's devices are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceCheckType {
    NoCheck,
    ExactSame,
}

/// The kernel of one dispatch key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendMetadata {
    pub dispatch_key: String,
    /// The kernel's name, without its namespace.
    pub kernel: String,
    /// The kernel's C++ namespace (`at::native` unless the entry names another).
    pub cpp_namespace: String,
    /// Whether the kernel is structured for this key.
    pub structured: bool,
}

impl BackendMetadata {
    pub fn supports_symint(&self) -> bool {
        self.kernel.contains("_symint")
    }
}

/// One `ufunc_inner_loop` entry: `add (AllAndComplex, BFloat16, Half)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UfuncInnerLoop {
    /// `Generic`, `ScalarOnly`, `CPUScalar`, `CPUVector`, `CUDAFunctor`, ...
    pub ufunc_key: String,
    pub name: String,
    /// The dtypes as written (dtype classes such as `AllAndComplex` not expanded).
    pub supported_dtypes: Vec<String>,
}

/// The `precomputed:` block of a structured kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Precompute {
    /// Kernel argument name -> the precomputed (type, name) pairs that replace it.
    pub replace: Vec<(String, Vec<(String, String)>)>,
    /// Precomputed (type, name) pairs added without replacing an argument.
    pub add: Vec<(String, String)>,
}

/// One native function: an entry of native_functions.yaml, or one generated from an
/// entry's `autogen:`.
#[derive(Debug, Clone)]
pub struct NativeFunction {
    /// The C++ namespace of the operator (`aten` unless `func:` names another).
    pub namespace: String,
    /// The schema, its name without the namespace (as written in the yaml).
    pub func: FunctionSchema,
    pub loc: Location,
    pub variants_function: bool,
    pub variants_method: bool,
    /// Kernels per dispatch key, in the order written (comma-separated keys expanded);
    /// an entry without `dispatch:` gets its implicit CompositeImplicitAutograd kernel.
    pub dispatch: Vec<BackendMetadata>,
    /// Whether the entry wrote a `dispatch:` block.
    pub has_explicit_dispatch: bool,
    pub structured: bool,
    pub structured_delegate: Option<OperatorName>,
    pub structured_inherits: Option<String>,
    pub precomputed: Option<Precompute>,
    pub ufunc_inner_loop: Vec<UfuncInnerLoop>,
    pub device_check: DeviceCheckType,
    pub device_guard: bool,
    pub manual_kernel_registration: bool,
    pub manual_cpp_binding: bool,
    pub python_module: Option<String>,
    pub category_override: Option<String>,
    pub tags: BTreeSet<String>,
    pub autogen: Vec<OperatorName>,
    pub cpp_no_default_args: BTreeSet<String>,
    pub use_const_ref_for_mutable_tensors: bool,
    pub is_abstract: bool,
    pub has_composite_implicit_autograd_kernel: bool,
    pub has_composite_implicit_autograd_nested_tensor_kernel: bool,
    pub has_composite_explicit_autograd_kernel: bool,
    pub has_composite_explicit_autograd_non_functional_kernel: bool,
    /// Computed once: the argument split, the split name, the schema kind and the text of
    /// the family signature.
    parts: ArgumentParts,
    base: BaseOperatorName,
    schema_kind: SchemaKind,
    signature_key: String,
}

impl NativeFunction {
    /// Fills in the cached kind and signature (after the schema is final).
    fn with_caches(mut self) -> Result<Self, String> {
        self.parts = argument_parts(&self.func)?;
        self.base = BaseOperatorName::parse(self.func.name.unqualified_name())?;
        self.schema_kind = kind_from_parts(&self.func, &self.parts, &self.base)?;
        let key = signature_key_from(&self.func, &self.parts, &self.base);
        self.signature_key = format!("{}::{key}", self.namespace);
        Ok(self)
    }

    /// The argument split (self, TensorOptions, out=).
    pub fn argument_parts(&self) -> &ArgumentParts {
        &self.parts
    }

    /// The qualified operator name, `aten::add.Tensor`.
    pub fn operator_name(&self) -> OperatorName {
        OperatorName::new(
            format!("{}::{}", self.namespace, self.func.name.name),
            self.func.name.overload_name.clone(),
        )
    }

    /// The schema with its namespace, as registered with the dispatcher.
    pub fn qualified_schema(&self) -> FunctionSchema {
        FunctionSchema {
            name: self.operator_name(),
            ..self.func.clone()
        }
    }

    /// The split name (`add_` is the in-place `add`).
    pub fn base_name(&self) -> BaseOperatorName {
        self.base.clone()
    }

    /// The root name shared by its variants (`add` for `add_.Tensor`).
    pub fn root_name(&self) -> String {
        self.base.base.clone()
    }

    pub fn kind(&self) -> SchemaKind {
        self.schema_kind
    }

    /// The text of its family signature ([`signature`]), prefixed by the namespace:
    /// functions with equal keys are variants of one function.
    pub fn signature_key(&self) -> &str {
        &self.signature_key
    }

    pub fn is_generated(&self) -> bool {
        self.tags.contains("generated")
    }

    /// The kernel for a dispatch key.
    pub fn kernel(&self, key: &str) -> Option<&BackendMetadata> {
        self.dispatch.iter().find(|b| b.dispatch_key == key)
    }

    pub fn part_of_structured_group(&self) -> bool {
        self.structured || self.structured_delegate.is_some()
    }

    /// torchgen's `is_view_op`.
    pub fn is_view_op(&self) -> bool {
        let non_mutating_view = self
            .func
            .returns
            .iter()
            .any(|r| r.alias_info.as_ref().is_some_and(|a| !a.is_write));
        // resize_ and resize_as_ get special treatment in functionalization (torchgen's
        // Note [resize_ in Functionalization]).
        let n = self.func.name.to_string();
        let inplace_view =
            self.tags.contains("inplace_view") && n != "resize_" && n != "resize_as_";
        let wildcard_view = self
            .func
            .arguments
            .iter()
            .any(|a| a.alias_info.as_ref().is_some_and(|x| x.is_wildcard_after()));
        non_mutating_view || inplace_view || wildcard_view
    }

    /// torchgen's `cpp.name(func)`: the base name, with `_out` for out= functions.
    pub fn cpp_name(&self) -> String {
        cpp_name(&self.func)
    }
}

fn cpp_name(func: &FunctionSchema) -> String {
    let mut n = func.name.name.clone();
    if func.arguments.iter().any(Argument::is_out) {
        n.push_str("_out");
    }
    n
}

/// A functional / in-place / mutable / out= family of one function (torchgen's
/// NativeFunctionsGroup); the fields index `NativeFunctions::functions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeFunctionsGroup {
    pub functional: usize,
    pub inplace: Option<usize>,
    pub mutable: Option<usize>,
    pub out: usize,
}

impl NativeFunctionsGroup {
    pub fn members(&self) -> impl Iterator<Item = usize> {
        [
            Some(self.functional),
            Some(self.out),
            self.inplace,
            self.mutable,
        ]
        .into_iter()
        .flatten()
    }
}

/// A function on its own, or a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grouped {
    Function(usize),
    Group(NativeFunctionsGroup),
}

/// A loaded native_functions.yaml: the functions (entries, then the generated ones) and
/// their grouping.
#[derive(Debug, Clone)]
pub struct NativeFunctions {
    pub file: PathBuf,
    pub functions: Vec<NativeFunction>,
    /// How many functions come from the file itself (the others are generated).
    pub entry_count: usize,
    pub grouped: Vec<Grouped>,
    /// Things torchgen rejects through hard-coded exception lists of one release
    /// (reported, not fatal, so that other releases' files load).
    pub warnings: Vec<DeclError>,
}

impl NativeFunctions {
    /// Reads and validates a native_functions.yaml; `tags`, when given, lists the valid tags.
    pub fn load(path: &Path, tags: Option<&Tags>) -> Result<NativeFunctions, DeclErrors> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            DeclError::new(
                Location {
                    file: path.to_path_buf(),
                    line: 0,
                    column: 0,
                },
                format!("cannot read file: {e}"),
            )
        })?;
        NativeFunctions::parse(&text, path, tags)
    }

    /// Parses and validates the text of a native_functions.yaml; `file` names it in errors.
    pub fn parse(
        text: &str,
        file: &Path,
        tags: Option<&Tags>,
    ) -> Result<NativeFunctions, DeclErrors> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let root = yaml::parse_parallel(text, file, threads)?;
        let loc_of = |m: Mark| Location {
            file: file.to_path_buf(),
            line: m.line,
            column: m.column,
        };
        let Node::Seq(items, _) = &root else {
            return Err(DeclError::new(
                loc_of(root.mark()),
                format!(
                    "expected a list of native functions, found {}",
                    root.kind_name()
                ),
            )
            .into());
        };
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let mut functions = Vec::with_capacity(items.len() * 6 / 5);
        // Entries are independent: check them on several threads, keeping file order.
        let chunk = items.len().div_ceil(threads).max(256);
        let results: Vec<EntryResult> = std::thread::scope(|s| {
            let handles: Vec<_> = items
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .map(|item| parse_entry(item, file, tags))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| {
                    h.join().unwrap_or_else(|_| {
                        vec![Err(vec![DeclError::new(
                            loc_of(root.mark()),
                            "a checking thread panicked",
                        )])]
                    })
                })
                .collect()
        });
        for r in results {
            match r {
                Ok((f, mut w)) => {
                    functions.push(f);
                    warnings.append(&mut w);
                }
                Err(mut es) => errors.append(&mut es),
            }
        }
        let entry_count = functions.len();
        if errors.is_empty() {
            check_native_functions(&functions, &mut errors);
        }
        if !errors.is_empty() {
            return Err(DeclErrors(errors));
        }
        let mut nf = NativeFunctions {
            file: file.to_path_buf(),
            functions,
            entry_count,
            grouped: Vec::new(),
            warnings,
        };
        add_generated_native_functions(&mut nf, &mut errors);
        if errors.is_empty() {
            group_native_functions(&mut nf, &mut errors);
        }
        if errors.is_empty() {
            Ok(nf)
        } else {
            Err(DeclErrors(errors))
        }
    }

    /// The function with this (unqualified) name, e.g. `add.Tensor`.
    pub fn get(&self, name: &OperatorName) -> Option<&NativeFunction> {
        self.functions.iter().find(|f| f.func.name == *name)
    }

    /// The groups (functional / in-place / mutable / out= families).
    pub fn groups(&self) -> impl Iterator<Item = &NativeFunctionsGroup> {
        self.grouped.iter().filter_map(|g| match g {
            Grouped::Group(g) => Some(g),
            Grouped::Function(_) => None,
        })
    }

    /// How many distinct operators (names without overload) there are.
    pub fn operator_count(&self) -> usize {
        let names: BTreeSet<String> = self
            .functions
            .iter()
            .map(|f| format!("{}::{}", f.namespace, f.func.name.name))
            .collect();
        names.len()
    }
}

/// The values of an entry's keys, by key name.
struct Fields<'n>([Option<&'n Node>; NATIVE_KEYS.len()]);

impl<'n> Fields<'n> {
    fn get(&self, key: &str) -> Option<&'n Node> {
        NATIVE_KEYS
            .iter()
            .position(|n| *n == key)
            .and_then(|i| self.0[i])
    }
}

struct EntryCtx<'a> {
    file: &'a Path,
    errors: Vec<DeclError>,
    entry: Mark,
}

impl EntryCtx<'_> {
    fn loc(&self, m: Mark) -> Location {
        Location {
            file: self.file.to_path_buf(),
            line: m.line,
            column: m.column,
        }
    }

    fn err(&mut self, m: Mark, msg: impl Into<String>) {
        let loc = self.loc(m);
        self.errors.push(DeclError::new(loc, msg));
    }

    fn bool(&mut self, key: &str, v: &Node) -> bool {
        match v.as_bool() {
            Some(b) => b,
            None => {
                self.err(
                    v.mark(),
                    format!("'{key}' must be True or False, found {}", v.kind_name()),
                );
                false
            }
        }
    }

    fn string(&mut self, key: &str, v: &Node) -> Option<String> {
        match v {
            Node::Scalar { value, .. } if v.as_bool().is_none() && !v.is_null() => {
                Some(value.clone())
            }
            _ => {
                self.err(
                    v.mark(),
                    format!("'{key}' must be a string, found {}", v.kind_name()),
                );
                None
            }
        }
    }

    fn op_name(&mut self, key: &str, v: &Node, text: &str) -> Option<OperatorName> {
        match OperatorName::parse(text) {
            Ok(n) => Some(n),
            Err(e) => {
                self.err(
                    v.mark(),
                    format!("'{key}': '{text}' is not an operator name: {}", e.message),
                );
                None
            }
        }
    }
}

/// The location of a schema error inside a `func:` value.
fn schema_error_mark(v: &Node, line: usize, column: usize) -> Mark {
    let m = v.mark();
    let quoted = matches!(v, Node::Scalar { quoted: true, .. });
    if line <= 1 {
        Mark {
            line: m.line,
            column: m.column + column - 1 + usize::from(quoted),
        }
    } else {
        Mark {
            line: m.line + line - 1,
            column,
        }
    }
}

type EntryResult = Result<(NativeFunction, Vec<DeclError>), Vec<DeclError>>;

fn parse_entry(
    item: &Node,
    file: &Path,
    tags: Option<&Tags>,
) -> Result<(NativeFunction, Vec<DeclError>), Vec<DeclError>> {
    let mut cx = EntryCtx {
        file,
        errors: Vec::new(),
        entry: item.mark(),
    };
    let Node::Map(entries, _) = item else {
        cx.err(
            item.mark(),
            format!(
                "expected a native function entry (a mapping), found {}",
                item.kind_name()
            ),
        );
        return Err(cx.errors);
    };
    // One slot per key of NATIVE_KEYS (cheaper than a map for 2,600 entries).
    let mut slots: [Option<&Node>; NATIVE_KEYS.len()] = [None; NATIVE_KEYS.len()];
    for (k, v) in entries {
        match k.as_str() {
            Some(key) => match NATIVE_KEYS.iter().position(|n| *n == key) {
                Some(i) => {
                    if slots[i].replace(v).is_some() {
                        cx.err(k.mark(), format!("duplicate key '{key}'"));
                    }
                }
                None => cx.err(
                    k.mark(),
                    format!(
                        "unknown key '{key}' (expected one of: {})",
                        NATIVE_KEYS.join(", ")
                    ),
                ),
            },
            None => cx.err(k.mark(), "expected a string key"),
        }
    }
    let fields = Fields(slots);
    let Some(func_node) = fields.get("func") else {
        cx.err(item.mark(), "missing key 'func'");
        return Err(cx.errors);
    };
    let Some(func_text) = cx.string("func", func_node) else {
        return Err(cx.errors);
    };
    let mut func = match FunctionSchema::parse(&func_text) {
        Ok(f) => f,
        Err(e) => {
            let m = schema_error_mark(func_node, e.line, e.column);
            cx.err(
                m,
                format!("in schema '{func_text}': {} (found {})", e.message, e.found),
            );
            return Err(cx.errors);
        }
    };
    if func.name.name.is_empty() {
        cx.err(func_node.mark(), "'func' must name the operator");
        return Err(cx.errors);
    }
    let namespace = match func.name.namespace() {
        Some(ns) => {
            let ns = ns.to_string();
            func.name.name = func.name.unqualified_name().to_string();
            ns
        }
        None => "aten".to_string(),
    };
    let fm = func_node.mark();
    if let Err(e) = BaseOperatorName::parse(func.name.unqualified_name()) {
        cx.err(fm, e);
    }
    let loc = cx.loc(cx.entry);

    let mut cpp_no_default_args = BTreeSet::new();
    if let Some(v) = fields.get("cpp_no_default_args") {
        match v {
            Node::Seq(xs, _) => {
                for x in xs {
                    if let Some(s) = cx.string("cpp_no_default_args", x) {
                        cpp_no_default_args.insert(s);
                    }
                }
            }
            _ => cx.err(
                v.mark(),
                format!(
                    "'cpp_no_default_args' must be a list, found {}",
                    v.kind_name()
                ),
            ),
        }
    }
    let use_const_ref_for_mutable_tensors = fields
        .get("use_const_ref_for_mutable_tensors")
        .is_some_and(|v| cx.bool("use_const_ref_for_mutable_tensors", v));
    let (mut variants_function, mut variants_method) = (true, false);
    if let Some(v) = fields.get("variants") {
        if let Some(s) = cx.string("variants", v) {
            variants_function = false;
            for part in s.split(", ") {
                match part {
                    "function" => variants_function = true,
                    "method" => variants_method = true,
                    other => cx.err(v.mark(), format!("illegal variant '{other}' (expected 'function' or 'method', separated by ', ')")),
                }
            }
        }
    }
    let manual_kernel_registration = fields
        .get("manual_kernel_registration")
        .is_some_and(|v| cx.bool("manual_kernel_registration", v));
    let manual_cpp_binding = fields
        .get("manual_cpp_binding")
        .is_some_and(|v| cx.bool("manual_cpp_binding", v));
    let device_guard = fields
        .get("device_guard")
        .is_none_or(|v| cx.bool("device_guard", v));
    let device_check = match fields.get("device_check") {
        None => DeviceCheckType::ExactSame,
        Some(v) => match cx.string("device_check", v).as_deref() {
            Some("NoCheck") => DeviceCheckType::NoCheck,
            Some("ExactSame") => DeviceCheckType::ExactSame,
            Some(other) => {
                cx.err(
                    v.mark(),
                    format!("'device_check' must be NoCheck or ExactSame, found '{other}'"),
                );
                DeviceCheckType::ExactSame
            }
            None => DeviceCheckType::ExactSame,
        },
    };
    let structured = fields
        .get("structured")
        .is_some_and(|v| cx.bool("structured", v));
    let mut structured_delegate = None;
    if let Some(v) = fields.get("structured_delegate") {
        if let Some(s) = cx.string("structured_delegate", v) {
            if s.contains("::") {
                cx.err(v.mark(), "namespace is not supported in structured_delegate (it uses the function's namespace)");
            } else {
                structured_delegate = cx.op_name("structured_delegate", v, &s);
            }
        }
    }
    let mut structured_inherits = None;
    if let Some(v) = fields.get("structured_inherits") {
        if let Some(s) = cx.string("structured_inherits", v) {
            if s.contains("::") {
                cx.err(
                    v.mark(),
                    "namespace is not supported in structured_inherits",
                );
            }
            structured_inherits = Some(s);
        }
    }
    let python_module = fields
        .get("python_module")
        .and_then(|v| cx.string("python_module", v));
    if python_module.is_some() && variants_method {
        cx.err(fm, "functions in python modules cannot be methods");
    }
    let category_override = fields
        .get("category_override")
        .and_then(|v| cx.string("category_override", v));
    let mut precomputed = None;
    if let Some(v) = fields.get("precomputed") {
        if !structured {
            cx.err(
                v.mark(),
                "'precomputed' is only allowed on structured functions",
            );
        }
        precomputed = parse_precomputed(&mut cx, v, &func);
    }
    let mut tag_set = BTreeSet::new();
    if let Some(v) = fields.get("tags") {
        let list: Vec<&Node> = match v {
            Node::Seq(xs, _) => xs.iter().collect(),
            _ => vec![v],
        };
        for t in list {
            if let Some(name) = cx.string("tags", t) {
                if let Some(valid) = tags {
                    if !valid.contains(&name) {
                        cx.err(
                            t.mark(),
                            format!("illegal tag '{name}': it is not defined in tags.yaml"),
                        );
                        continue;
                    }
                }
                tag_set.insert(name);
            }
        }
    }

    let mut dispatch: Vec<BackendMetadata> = Vec::new();
    let mut num_dispatch_keys = 0;
    let mut has_explicit_dispatch = false;
    let func_cpp_name = cpp_name(&func);
    if let Some(v) = fields.get("dispatch") {
        has_explicit_dispatch = true;
        if manual_kernel_registration {
            cx.err(v.mark(), "cannot specify both manual_kernel_registration and dispatch; with manual registration, dispatch has no effect");
        }
        match v {
            Node::Map(kvs, _) => {
                let mut redundant_cia = false;
                for (k, kernel) in kvs.iter() {
                    let (Some(keys), Some(kernel_s)) = (k.as_str(), cx.string("dispatch", kernel))
                    else {
                        continue;
                    };
                    for key in keys.split(',') {
                        let key = key.trim();
                        num_dispatch_keys += 1;
                        if !is_kernel_dispatch_key(key) {
                            cx.err(k.mark(), format!("dispatch key '{key}' of kernel {kernel_s} is not a supported dispatch key"));
                            continue;
                        }
                        if dispatch.iter().any(|b| b.dispatch_key == key) {
                            cx.err(k.mark(), format!("dispatch key '{key}' appears twice"));
                            continue;
                        }
                        // A kernel may name its namespace (at most 3 levels); `native` is appended.
                        let parts: Vec<&str> = kernel_s.split("::").collect();
                        if parts.len() > 4 {
                            cx.err(
                                kernel.mark(),
                                format!("kernel '{kernel_s}' has more than 3 namespace levels"),
                            );
                        }
                        let (ns, kname) = match parts.split_last() {
                            Some((last, rest)) if !rest.is_empty() => {
                                (format!("{}::native", rest.join("::")), last.to_string())
                            }
                            _ => ("at::native".to_string(), kernel_s.clone()),
                        };
                        if key == "CompositeImplicitAutograd" && kernel_s == func_cpp_name {
                            redundant_cia = true;
                        }
                        dispatch.push(BackendMetadata {
                            dispatch_key: key.to_string(),
                            kernel: kname,
                            cpp_namespace: ns,
                            structured: structured && STRUCTURED_DISPATCH_KEYS.contains(&key),
                        });
                    }
                }
                if num_dispatch_keys == 1 && redundant_cia {
                    cx.err(v.mark(), "unnecessary dispatch table for this function; just delete the dispatch key entirely");
                } else if structured_delegate.is_none()
                    && num_dispatch_keys == 1
                    && dispatch.len() == 1
                    && dispatch[0].dispatch_key == "CompositeImplicitAutograd"
                    && !dispatch[0].supports_symint()
                {
                    cx.err(v.mark(), format!(
                        "unexpected name for singleton CompositeImplicitAutograd dispatch entry: expected {func_cpp_name} but got {}. Rename your implementation to the expected name, then delete the dispatch table",
                        dispatch[0].kernel
                    ));
                }
            }
            _ => cx.err(
                v.mark(),
                format!(
                    "'dispatch' must be a mapping from dispatch keys to kernels, found {}",
                    v.kind_name()
                ),
            ),
        }
    } else if !structured && structured_delegate.is_none() {
        let name = func.name.name.as_str();
        let parts = argument_parts(&func).ok();
        let factory = parts.as_ref().is_some_and(|p| p.tensor_options.is_some())
            && !func
                .arguments
                .iter()
                .any(|a| !a.is_out() && a.ty.is_tensor_like());
        if name.starts_with("new_") || name.ends_with("_like") || factory {
            cx.err(fm, format!(
                "expected {name} to have a CompositeExplicitAutograd dispatch entry, but there was no dispatch table. Factory functions should not have implicit dispatch as they should not be decomposed for __torch_dispatch__"
            ));
        }
        dispatch.push(BackendMetadata {
            dispatch_key: "CompositeImplicitAutograd".into(),
            kernel: func_cpp_name.clone(),
            cpp_namespace: "at::native".into(),
            structured: false,
        });
    }
    let composites: Vec<&str> = dispatch
        .iter()
        .map(|b| b.dispatch_key.as_str())
        .filter(|k| k.starts_with("Composite"))
        .collect();
    if !(composites.len() <= 1
        || (composites.len() == 2
            && !composites.contains(&"CompositeExplicitAutogradNonFunctional")
            && composites.contains(&"CompositeImplicitAutogradNestedTensor")))
    {
        cx.err(fm, "cannot specify more than one of CompositeExplicitAutograd, CompositeExplicitAutogradNonFunctional, or CompositeImplicitAutograd on a single kernel; each strictly subsumes the other");
    }

    let mut autogen = Vec::new();
    if let Some(v) = fields.get("autogen") {
        if let Some(s) = cx.string("autogen", v) {
            if !s.is_empty() {
                for part in s.split(", ") {
                    if let Some(n) = cx.op_name("autogen", v, part) {
                        autogen.push(n);
                    }
                }
            }
        }
    }

    let mut ufunc_inner_loop = Vec::new();
    if let Some(v) = fields.get("ufunc_inner_loop") {
        match v {
            Node::Map(kvs, _) => {
                for (k, l) in kvs {
                    if let (Some(key), Some(text)) = (k.as_str(), cx.string("ufunc_inner_loop", l))
                    {
                        parse_ufunc(&mut cx, l.mark(), key, &text, &mut ufunc_inner_loop);
                    }
                }
            }
            Node::Scalar { .. } => {
                if let Some(text) = cx.string("ufunc_inner_loop", v) {
                    parse_ufunc(&mut cx, v.mark(), "Generic", &text, &mut ufunc_inner_loop);
                }
            }
            _ => cx.err(v.mark(), "'ufunc_inner_loop' must be a string or a mapping"),
        }
        if !ufunc_inner_loop.is_empty() {
            if !structured {
                cx.err(v.mark(), "ufunc must be structured");
            }
            for key in UFUNC_DISPATCH_KEYS {
                if dispatch.iter().any(|b| b.dispatch_key == *key) {
                    cx.err(
                        v.mark(),
                        format!("ufunc should not have explicit dispatch entry for {key}"),
                    );
                    continue;
                }
                dispatch.push(BackendMetadata {
                    dispatch_key: key.to_string(),
                    kernel: format!("ufunc_{}_{}", func.name.name, key),
                    cpp_namespace: "at::native".into(),
                    structured: true,
                });
            }
        }
    }

    let keys: BTreeSet<&str> = dispatch.iter().map(|b| b.dispatch_key.as_str()).collect();
    let is_abstract = structured_delegate.is_some()
        || !(keys == BTreeSet::from(["CompositeImplicitAutograd"])
            || keys == BTreeSet::from(["CompositeImplicitAutogradNestedTensor"])
            || keys
                == BTreeSet::from([
                    "CompositeImplicitAutograd",
                    "CompositeImplicitAutogradNestedTensor",
                ]));
    if structured_delegate.is_some() {
        for key in STRUCTURED_DISPATCH_KEYS {
            if has_explicit_dispatch && keys.contains(key) {
                cx.err(fm, format!("if structured_delegate, then must not have {key} in dispatch dictionary (it is delegated!)"));
            }
        }
    }
    let f = NativeFunction {
        namespace,
        has_composite_implicit_autograd_kernel: keys.contains("CompositeImplicitAutograd"),
        has_composite_implicit_autograd_nested_tensor_kernel: keys
            .contains("CompositeImplicitAutogradNestedTensor"),
        has_composite_explicit_autograd_kernel: keys.contains("CompositeExplicitAutograd"),
        has_composite_explicit_autograd_non_functional_kernel: keys
            .contains("CompositeExplicitAutogradNonFunctional"),
        func,
        loc,
        variants_function,
        variants_method,
        dispatch,
        has_explicit_dispatch,
        structured,
        structured_delegate,
        structured_inherits,
        precomputed,
        ufunc_inner_loop,
        device_check,
        device_guard,
        manual_kernel_registration,
        manual_cpp_binding,
        python_module,
        category_override,
        tags: tag_set,
        autogen,
        cpp_no_default_args,
        use_const_ref_for_mutable_tensors,
        is_abstract,
        parts: ArgumentParts::default(),
        base: BaseOperatorName::default(),
        schema_kind: SchemaKind::Functional,
        signature_key: String::new(),
    };
    let f = match f.with_caches() {
        Ok(f) => f,
        Err(e) => {
            cx.err(fm, e);
            return Err(cx.errors);
        }
    };
    let (errs, warns) = function_invariants(&f);
    for msg in errs {
        cx.err(fm, msg);
    }
    if cx.errors.is_empty() {
        let warnings = warns
            .into_iter()
            .map(|w| DeclError::new(cx.loc(fm), w))
            .collect();
        Ok((f, warnings))
    } else {
        Err(cx.errors)
    }
}

fn parse_ufunc(
    cx: &mut EntryCtx<'_>,
    m: Mark,
    key: &str,
    text: &str,
    out: &mut Vec<UfuncInnerLoop>,
) {
    const KEYS: &[&str] = &[
        "CUDAFunctor",
        "CUDAFunctorOnOther",
        "CUDAFunctorOnSelf",
        "CPUScalar",
        "CPUVector",
        "ScalarOnly",
        "Generic",
    ];
    if !KEYS.contains(&key) {
        cx.err(
            m,
            format!(
                "unknown ufunc key '{key}' (expected one of: {})",
                KEYS.join(", ")
            ),
        );
        return;
    }
    let parsed = text.split_once(' ').and_then(|(name, rest)| {
        let inner = rest.strip_prefix('(')?.strip_suffix(')')?;
        Some((
            name.to_string(),
            inner.split(", ").map(str::to_string).collect::<Vec<_>>(),
        ))
    });
    match parsed {
        Some((name, dtypes)) if !name.is_empty() && dtypes.iter().all(|d| !d.is_empty()) => out
            .push(UfuncInnerLoop {
                ufunc_key: key.to_string(),
                name,
                supported_dtypes: dtypes,
            }),
        _ => cx.err(
            m,
            format!("ufunc_inner_loop '{text}': expected 'name (Dtype, Dtype, ...)'"),
        ),
    }
}

fn parse_typed_name(cx: &mut EntryCtx<'_>, m: Mark, text: &str) -> Option<(String, String)> {
    match text.trim().rsplit_once(' ') {
        Some((ty, name)) if !ty.trim().is_empty() && !name.is_empty() => {
            Some((ty.trim().to_string(), name.to_string()))
        }
        _ => {
            cx.err(
                m,
                format!("precomputed element '{text}': expected 'Type name'"),
            );
            None
        }
    }
}

fn parse_precomputed(cx: &mut EntryCtx<'_>, v: &Node, func: &FunctionSchema) -> Option<Precompute> {
    let Node::Seq(lines, _) = v else {
        cx.err(
            v.mark(),
            format!(
                "'precomputed' must be a list of strings, found {}",
                v.kind_name()
            ),
        );
        return None;
    };
    let mut p = Precompute::default();
    for (i, line) in lines.iter().enumerate() {
        let text = cx.string("precomputed", line)?;
        let m = line.mark();
        match text.split_once(" -> ") {
            Some((arg, with)) => {
                if arg.contains(' ') {
                    cx.err(
                        m,
                        format!("illegal kernel param name '{arg}' in precomputed parameters"),
                    );
                    continue;
                }
                if !func.arguments.iter().any(|a| a.name == arg) {
                    cx.err(
                        m,
                        format!(
                            "precomputed replaces '{arg}', which is not an argument of {}",
                            func.name
                        ),
                    );
                }
                let elems = with
                    .split(',')
                    .filter_map(|e| parse_typed_name(cx, m, e))
                    .collect();
                p.replace.push((arg.to_string(), elems));
            }
            None if i + 1 == lines.len() => {
                p.add = text
                    .split(',')
                    .filter_map(|e| parse_typed_name(cx, m, e))
                    .collect();
            }
            None => cx.err(
                m,
                "precomputed parameters without replacement are allowed only in the last line",
            ),
        }
    }
    Some(p)
}

/// The checks of torchgen's FunctionSchema and NativeFunction `__post_init__`.
fn function_invariants(f: &NativeFunction) -> (Vec<String>, Vec<String>) {
    let mut errs = Vec::new();
    let mut warnings = Vec::new();
    let s = &f.func;
    let name = s.name.to_string();
    let parts = &f.parts;
    let kind = f.schema_kind;
    let base = &f.base;
    for (&i, r) in parts.out.iter().zip(&s.returns) {
        if s.arguments[i].alias_info != r.alias_info {
            errs.push("out arguments must have matching return Tensor; furthermore, the ith-argument needs to correspond to the ith return".to_string());
            break;
        }
    }
    for &i in &parts.post_self_positional {
        let a = &s.arguments[i];
        if a.is_write() && s.returns.iter().any(|r| r.alias_info == a.alias_info) {
            errs.push(format!(
                "mutable positional argument '{}' must not be returned",
                a.name
            ));
        }
    }
    let mutable_returns: Vec<&Return> = s.returns.iter().filter(|r| r.is_write()).collect();
    if !mutable_returns.is_empty() && mutable_returns.len() != s.returns.len() {
        errs.push(
            "native functions must have either only mutable returns, or only immutable returns"
                .to_string(),
        );
    }
    for r in &mutable_returns {
        let aliased = parts
            .out
            .iter()
            .chain(parts.self_arg.iter())
            .any(|&i| s.arguments[i].alias_info == r.alias_info);
        if !aliased {
            errs.push("all mutable returns must be aliased either to a keyword argument, or to \"self\"; did you forget to mark an out argument as keyword-only?".to_string());
        }
    }
    if !parts.out.is_empty() {
        if parts.out.iter().any(|&i| s.arguments[i].ty != Type::Tensor) {
            if !s.returns.is_empty() {
                errs.push("out= ops that accept tensor lists as out arguments are expected to have no return type".to_string());
            }
        } else {
            let n = parts
                .out
                .iter()
                .filter(|&&i| !s.arguments[i].name.starts_with("_scratch_"))
                .count();
            if n != s.returns.len() {
                errs.push(
                    "must return as many arguments as there are out arguments, or no return at all"
                        .to_string(),
                );
            }
        }
    }
    if base.inplace {
        match parts.self_arg.map(|i| &s.arguments[i]) {
            Some(a) if a.is_write() => {
                if a.ty == Type::Tensor {
                    if !(s.returns.len() == 1 && s.returns[0].alias_info == a.alias_info) {
                        errs.push("in-place ops with a Tensor self must return self".to_string());
                    }
                } else if !s.returns.is_empty() {
                    errs.push(
                        "in-place ops with a non-Tensor self must return nothing".to_string(),
                    );
                }
            }
            _ => errs.push(format!(
                "in-place op '{name}' (its name ends in '_') must take a mutable 'Tensor(a!) self'"
            )),
        }
    }
    if !base.inplace && parts.out.is_empty() {
        if let Some(a) = parts
            .self_arg
            .map(|i| &s.arguments[i])
            .filter(|a| a.is_write())
        {
            if s.returns.iter().any(|r| r.alias_info == a.alias_info) {
                errs.push(format!(
                    "'{name}' mutates and returns self, so it is an in-place op and its name must end in '_'"
                ));
            }
        }
    }
    if parts.tensor_options.is_some() && kind != SchemaKind::Functional {
        errs.push(
            "tensor options arguments are only allowed for factory functions (functional schemas)"
                .to_string(),
        );
    }
    if s.name.overload_name.contains("functional") && kind != SchemaKind::Functional {
        errs.push(
            "overload names containing 'functional' are reserved for functional schemas"
                .to_string(),
        );
    }
    if !parts.out.is_empty() && (f.variants_method || !f.variants_function) {
        errs.push("native functions with out arguments MUST be declared with only function variant; e.g., variants: function".to_string());
    }
    if f.structured {
        if kind != SchemaKind::Out {
            errs.push("put structured field on the out= variant of a function; did you mean structured_delegate?".to_string());
        }
        if !f.device_guard {
            errs.push("device_guard: False is not respected by structured kernels".to_string());
        }
    }
    if f.structured_delegate.is_some() {
        if kind == SchemaKind::Out {
            errs.push(
                "structured_delegate field not allowed on out= functions; did you mean structured?"
                    .to_string(),
            );
        }
        if !f.device_guard {
            errs.push("device_guard: False is not respected by structured kernels".to_string());
        }
    }
    if f.structured && f.structured_delegate.is_some() {
        errs.push("cannot have both structured and structured_delegate on function".to_string());
    }
    for a in &f.cpp_no_default_args {
        if !s
            .arguments
            .iter()
            .any(|x| x.name == *a && x.default.is_some())
        {
            errs.push(format!(
                "invalid cpp_no_default_args: '{a}' is not an argument with a default"
            ));
        }
    }
    if f.structured_inherits.is_some() && !f.structured {
        errs.push("structured_inherits must also imply structured: True".to_string());
    }
    if name.starts_with("_foreach") && f.device_check != DeviceCheckType::NoCheck {
        errs.push("foreach kernels fall back to slow path when tensor are on different devices, device_check not allowed to be enabled".to_string());
    }
    let random = name.contains("rand")
        || ((name.contains("dropout") || s.arguments.iter().any(|a| a.name.contains("dropout")))
            && !name.contains("backward")
            && s.name.name != "_cudnn_init_dropout_state")
        || s.arguments
            .iter()
            .any(|a| *a.ty.unwrap_optional() == Type::Generator);
    // A heuristic on names, with exceptions that vary between releases: a warning.
    if random && !f.tags.contains("nondeterministic_seeded") {
        warnings.push(format!("'{name}' looks random (by its name or a Generator argument) but is not tagged nondeterministic_seeded"));
    }
    (errs, warnings)
}

/// torchgen's `error_check_native_functions`.
fn check_native_functions(fs: &[NativeFunction], errors: &mut Vec<DeclError>) {
    let mut by_name: HashMap<&OperatorName, &NativeFunction> = HashMap::new();
    let mut bases: BTreeSet<BaseOperatorName> = BTreeSet::new();
    for f in fs {
        if let Some(prev) = by_name.insert(&f.func.name, f) {
            errors.push(DeclError::new(
                f.loc.clone(),
                format!(
                    "duplicate function {} (first declared at {})",
                    f.func.name, prev.loc
                ),
            ));
        }
        bases.insert(f.base_name());
    }
    for f in fs {
        if let Some(d) = &f.structured_delegate {
            match by_name.get(d) {
                None => errors.push(DeclError::new(f.loc.clone(), format!(
                    "{} is marked as a structured_delegate pointing to {d}, but {d} is missing", f.func.name
                ))),
                Some(df) if !df.structured => errors.push(DeclError::new(f.loc.clone(), format!(
                    "{} is marked as a structured_delegate pointing to {d}, but {d} is not marked as structured", f.func.name
                ))),
                _ => {}
            }
        }
        let n = f.func.name.to_string();
        if f.tags.contains("inplace_view")
            && n != "resize_"
            && n != "resize_as_"
            && f.func.name.name != "set_"
        {
            let b = f.base_name();
            if !b.inplace {
                errors.push(DeclError::new(f.loc.clone(), format!(
                    "{n} is marked with tag: inplace_view, but it doesn't follow the naming convention for inplace ops - the codegen expects the base name to have a trailing underscore"
                )));
            } else if !bases.contains(&BaseOperatorName {
                inplace: false,
                ..b
            }) {
                errors.push(DeclError::new(f.loc.clone(), format!(
                    "{n} is marked with tag: inplace_view. The codegen expects there to be a corresponding out-of-place view op"
                )));
            }
        }
    }
}

impl PartialOrd for BaseOperatorName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for BaseOperatorName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (
            &self.base,
            self.inplace,
            self.dunder_method,
            self.functional_overload,
        )
            .cmp(&(
                &other.base,
                other.inplace,
                other.dunder_method,
                other.functional_overload,
            ))
    }
}

/// Functions grouped by signature, each slot by kind; keyed by the signature's text.
type PreGroups = Vec<(String, Vec<(SchemaKind, usize)>)>;

fn pre_group(fs: &[NativeFunction], errors: &mut Vec<DeclError>) -> PreGroups {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut groups: PreGroups = Vec::new();
    for (i, f) in fs.iter().enumerate() {
        let key = &f.signature_key;
        let gi = *index.entry(key.clone()).or_insert_with(|| {
            groups.push((key.clone(), Vec::new()));
            groups.len() - 1
        });
        let kind = f.kind();
        if let Some(&(_, other)) = groups[gi].1.iter().find(|(k, _)| *k == kind) {
            errors.push(DeclError::new(
                f.loc.clone(),
                format!(
                    "{} and {} have the same signature and the same kind ({kind:?})",
                    fs[other].func.name, f.func.name
                ),
            ));
            continue;
        }
        groups[gi].1.push((kind, i));
    }
    groups
}

/// torchgen's exception lists (native_function_generation.py); other names hitting these
/// cases are reported as warnings.
const OUT_OPS_THAT_DONT_GET_GROUPED_PROPERLY: &[&str] = &[
    "adaptive_avg_pool3d_backward.grad_input",
    "_slow_conv2d_backward.grad_input",
];
const MUTABLE_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT: &[&str] = &["_cummax_helper", "_cummin_helper"];
const INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY: &[&str] = &["polygamma_"];

fn alias_for(ty: &Type, set: &str) -> AliasInfo {
    let inner = AliasInfo::new(set, true);
    if ty.unwrap_optional().is_list() {
        AliasInfo {
            is_write: true,
            contained_types: vec![inner],
            ..AliasInfo::default()
        }
    } else {
        inner
    }
}

fn out_overload(overload: &str) -> String {
    if overload.is_empty() {
        "out".to_string()
    } else {
        format!("{overload}_out")
    }
}

/// torchgen's `generate_out_args_from_schema`.
fn out_args_from_returns(func: &FunctionSchema) -> Result<(Vec<Return>, Vec<Argument>), String> {
    if func.returns.iter().any(Return::is_write) {
        return Err("cannot generate out= arguments for a schema returning mutable values".into());
    }
    let used: BTreeSet<&str> = func
        .arguments
        .iter()
        .filter_map(|a| a.alias_info.as_ref())
        .flat_map(|a| {
            a.before_sets
                .iter()
                .chain(a.contained_types.iter().flat_map(|c| c.before_sets.iter()))
        })
        .map(String::as_str)
        .collect();
    let valid: Vec<String> = ('a'..='z')
        .map(|c| c.to_string())
        .filter(|c| !used.contains(c.as_str()))
        .collect();
    let all_tensors = func.returns.iter().all(|r| r.ty == Type::Tensor);
    let mut rets = Vec::new();
    let mut outs = Vec::new();
    for (i, r) in func.returns.iter().enumerate() {
        if r.ty.is_tensor_like() {
            let set = valid.get(i).ok_or("ran out of alias set names")?;
            let mut a = Argument::new(
                if func.returns.len() == 1 {
                    "out".to_string()
                } else {
                    format!("out{i}")
                },
                r.ty.clone(),
            );
            a.kwarg_only = true;
            a.alias_info = Some(alias_for(&r.ty, set));
            if all_tensors {
                rets.push(Return {
                    name: None,
                    ty: a.ty.clone(),
                    alias_info: a.alias_info.clone(),
                });
            }
            outs.push(a);
        } else {
            rets.push(r.clone());
        }
    }
    Ok((rets, outs))
}

fn with_out_args(mut args: Vec<Argument>, outs: Vec<Argument>) -> Vec<Argument> {
    args.extend(outs);
    args
}

/// The signature's arguments (annotations, out= and TensorOptions removed) as a list.
fn signature_arguments(func: &FunctionSchema) -> Result<Vec<Argument>, String> {
    Ok(signature(func, false)?.arguments)
}

/// torchgen's `generate_function`: a functional or out= variant of `f`.
/// `has_mutable`: the family has a mutable variant, so a generated functional variant is
/// named `<base>_functional` (torchgen's Note [Overload Ambiguity With Functional Variants]).
fn generate_function(
    f: &NativeFunction,
    k: SchemaKind,
    has_mutable: bool,
) -> Result<NativeFunction, String> {
    let base = f.base_name();
    let fkind = f.kind();
    let func = if k == SchemaKind::Functional {
        let sig = signature(&f.func, true)?;
        let name = BaseOperatorName {
            base: base.base.clone(),
            inplace: false,
            dunder_method: base.dunder_method,
            functional_overload: fkind == SchemaKind::Mutable || has_mutable,
        };
        FunctionSchema {
            name: OperatorName::new(name.to_string(), f.func.name.overload_name.clone()),
            ..sig
        }
    } else {
        let no_inplace = BaseOperatorName {
            base: base.base.clone(),
            inplace: false,
            dunder_method: base.dunder_method,
            functional_overload: false,
        };
        let overload = out_overload(&f.func.name.overload_name);
        match fkind {
            SchemaKind::Inplace => {
                let parts = argument_parts(&f.func)?;
                let self_ix = parts.self_arg.ok_or("in-place function without self")?;
                let self_arg = &f.func.arguments[self_ix];
                let mut out = Argument::new("out", self_arg.ty.clone());
                out.kwarg_only = true;
                out.alias_info = self_arg.alias_info.clone();
                let mut args = f.func.arguments.clone();
                args[self_ix].alias_info = None;
                FunctionSchema {
                    name: OperatorName::new(no_inplace.to_string(), overload),
                    arguments: with_out_args(args, vec![out]),
                    returns: f.func.returns.clone(),
                    is_vararg: false,
                    is_varret: false,
                }
            }
            SchemaKind::Mutable => {
                let (rets, outs) = out_args_from_returns(&f.func)?;
                FunctionSchema {
                    name: OperatorName::new(no_inplace.to_string(), overload),
                    arguments: with_out_args(f.func.arguments.clone(), outs),
                    returns: rets,
                    is_vararg: false,
                    is_varret: false,
                }
            }
            SchemaKind::Functional => {
                let (rets, outs) = out_args_from_returns(&f.func)?;
                FunctionSchema {
                    name: OperatorName::new(f.func.name.name.clone(), overload),
                    arguments: with_out_args(signature_arguments(&f.func)?, outs),
                    returns: rets,
                    is_vararg: false,
                    is_varret: false,
                }
            }
            _ => return Err(
                "out= variants are generated only from in-place, mutable or functional variants"
                    .into(),
            ),
        }
    };
    let is_out = func.arguments.iter().any(Argument::is_out);
    let mut kernel = if is_out {
        let n = &func.name;
        if n.overload_name.is_empty() {
            n.name.clone()
        } else {
            format!("{}_{}", n.name, n.overload_name)
        }
    } else {
        cpp_name(&func)
    };
    if f.func.arguments.iter().any(|a| a.ty.is_symint_like()) {
        kernel.push_str("_symint");
    }
    let mut tags: BTreeSet<String> = f
        .tags
        .iter()
        .filter(|t| *t == "nondeterministic_seeded" || *t == "view_copy")
        .cloned()
        .collect();
    tags.insert("generated".to_string());
    NativeFunction {
        namespace: f.namespace.clone(),
        func,
        loc: f.loc.clone(),
        variants_function: true,
        variants_method: false,
        dispatch: vec![BackendMetadata {
            dispatch_key: "CompositeExplicitAutograd".into(),
            kernel,
            cpp_namespace: "at::native".into(),
            structured: false,
        }],
        has_explicit_dispatch: false,
        structured: false,
        structured_delegate: None,
        structured_inherits: None,
        precomputed: None,
        ufunc_inner_loop: Vec::new(),
        device_check: DeviceCheckType::NoCheck,
        device_guard: false,
        manual_kernel_registration: false,
        manual_cpp_binding: false,
        python_module: None,
        category_override: None,
        tags,
        autogen: Vec::new(),
        cpp_no_default_args: BTreeSet::new(),
        use_const_ref_for_mutable_tensors: f.use_const_ref_for_mutable_tensors,
        is_abstract: f.is_abstract,
        has_composite_implicit_autograd_kernel: false,
        has_composite_implicit_autograd_nested_tensor_kernel: false,
        has_composite_explicit_autograd_kernel: true,
        has_composite_explicit_autograd_non_functional_kernel: false,
        parts: ArgumentParts::default(),
        base: BaseOperatorName::default(),
        schema_kind: SchemaKind::Functional,
        signature_key: String::new(),
    }
    .with_caches()
}

/// torchgen's `add_generated_native_functions`.
fn add_generated_native_functions(nf: &mut NativeFunctions, errors: &mut Vec<DeclError>) {
    let groups = pre_group(&nf.functions, errors);
    if !errors.is_empty() {
        return;
    }
    for (_, d) in groups {
        let get = |k: SchemaKind| d.iter().find(|(kk, _)| *kk == k).map(|&(_, i)| i);
        let (has_functional, has_inplace, has_mutable, has_out) = (
            get(SchemaKind::Functional).is_some(),
            get(SchemaKind::Inplace).is_some(),
            get(SchemaKind::Mutable).is_some(),
            get(SchemaKind::Out).is_some(),
        );
        if !(has_mutable || has_inplace || has_out || has_functional) {
            continue;
        }
        let fs = &nf.functions;
        let members = || d.iter().map(|&(_, i)| &fs[i]);
        let is_core = members().any(|f| f.tags.contains("core"));
        // set_ is an inplace_view that the codegen treats as a normal in-place op.
        if members().all(|f| f.manual_cpp_binding)
            || members().any(|f| f.is_view_op() && f.func.name.name != "set_")
            || (members().all(|f| f.has_composite_implicit_autograd_kernel) && !is_core)
        {
            continue;
        }
        if has_out && d.len() == 1 {
            let f = &fs[get(SchemaKind::Out).unwrap_or(0)];
            if !OUT_OPS_THAT_DONT_GET_GROUPED_PROPERLY.contains(&f.func.name.to_string().as_str()) {
                nf.warnings.push(DeclError::new(
                    f.loc.clone(),
                    format!(
                        "found an out= operator that we could not find any other variants of: {}",
                        f.func
                    ),
                ));
            }
            continue;
        }
        if let Some(i) = get(SchemaKind::Inplace) {
            if INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY
                .contains(&fs[i].func.name.to_string().as_str())
            {
                continue;
            }
        }
        let Some(base_ix) = get(SchemaKind::Mutable)
            .or(get(SchemaKind::Inplace))
            .or(get(SchemaKind::Out))
            .or(get(SchemaKind::Functional))
        else {
            continue;
        };
        let base_fn = &fs[base_ix];
        let base_valid = base_fn.kind() == SchemaKind::Inplace
            || base_fn.func.returns.iter().any(|r| r.ty.is_tensor_like());
        let needs_out = base_fn
            .autogen
            .iter()
            .any(|n| n.to_string().contains("out"));
        let gets_out_variant = !has_out && base_valid && needs_out;
        if !has_out && !base_valid {
            let n = base_fn.func.name.to_string();
            if !MUTABLE_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT.contains(&n.as_str())
                && base_fn.func.returns.iter().any(|r| r.ty.is_tensor_like())
            {
                nf.warnings.push(DeclError::new(
                    base_fn.loc.clone(),
                    format!(
                        "found an operator that we could not generate an out= variant for: {}",
                        base_fn.func
                    ),
                ));
            }
        }
        let mut new = Vec::new();
        if gets_out_variant {
            match generate_function(base_fn, SchemaKind::Out, has_mutable) {
                Ok(g) => new.push(g),
                Err(e) => errors.push(DeclError::new(
                    base_fn.loc.clone(),
                    format!("generating the out= variant of {}: {e}", base_fn.func.name),
                )),
            }
        }
        if !has_functional && (has_out || gets_out_variant) {
            match generate_function(base_fn, SchemaKind::Functional, has_mutable) {
                Ok(g) => new.push(g),
                Err(e) => errors.push(DeclError::new(
                    base_fn.loc.clone(),
                    format!(
                        "generating the functional variant of {}: {e}",
                        base_fn.func.name
                    ),
                )),
            }
        }
        for g in new {
            for msg in function_invariants(&g).0 {
                errors.push(DeclError::new(
                    g.loc.clone(),
                    format!("generated {}: {msg}", g.func.name),
                ));
            }
            nf.functions.push(g);
        }
    }
}

/// torchgen's `get_grouped_native_functions` with NativeFunctionsGroup's checks.
fn group_native_functions(nf: &mut NativeFunctions, errors: &mut Vec<DeclError>) {
    let groups = pre_group(&nf.functions, errors);
    let fs = &nf.functions;
    for (_, d) in groups {
        let get = |k: SchemaKind| d.iter().find(|(kk, _)| *kk == k).map(|&(_, i)| i);
        let single = |nf_grouped: &mut Vec<Grouped>, errors: &mut Vec<DeclError>| {
            for &(_, i) in &d {
                if fs[i].is_generated() {
                    errors.push(DeclError::new(
                        fs[i].loc.clone(),
                        format!(
                            "generated function {} could not be grouped",
                            fs[i].func.name
                        ),
                    ));
                }
                nf_grouped.push(Grouped::Function(i));
            }
        };
        if d.len() == 1 {
            single(&mut nf.grouped, errors);
            continue;
        }
        if let Some(&(_, i)) = d.iter().find(|(k, _)| *k == SchemaKind::Scratch) {
            errors.push(DeclError::new(
                fs[i].loc.clone(),
                format!("scratch function {} cannot be grouped", fs[i].func.name),
            ));
            continue;
        }
        let Some(functional) = get(SchemaKind::Functional) else {
            let i = d[0].1;
            errors.push(DeclError::new(
                fs[i].loc.clone(),
                format!(
                    "{} has variants ({}) but no functional variant",
                    fs[i].func.name,
                    d.iter()
                        .map(|&(_, j)| fs[j].func.name.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
            continue;
        };
        let Some(out) = get(SchemaKind::Out) else {
            single(&mut nf.grouped, errors);
            continue;
        };
        let g = NativeFunctionsGroup {
            functional,
            inplace: get(SchemaKind::Inplace),
            mutable: get(SchemaKind::Mutable),
            out,
        };
        check_group(fs, &g, errors);
        nf.grouped.push(Grouped::Group(g));
    }
}

fn check_group(fs: &[NativeFunction], g: &NativeFunctionsGroup, errors: &mut Vec<DeclError>) {
    let out = &fs[g.out];
    let functional = &fs[g.functional];
    let mut err = |f: &NativeFunction, msg: String| errors.push(DeclError::new(f.loc.clone(), msg));
    let structured = out.structured;
    for i in g.members() {
        let f = &fs[i];
        if structured != f.part_of_structured_group() {
            err(f, format!("NativeFunctionsGroup constructed from structured and unstructured functions: {} and {}", out.func.name, f.func.name));
        }
        if f.namespace != functional.namespace {
            err(
                f,
                format!(
                    "{} and {} are variants of one function but live in different namespaces",
                    functional.func.name, f.func.name
                ),
            );
        }
    }
    if let Some(m) = g.mutable {
        if !functional.base_name().functional_overload {
            err(&fs[m], format!("{} has a mutable variant, so its functional variant must be named {}_functional", functional.func.name, functional.base_name().base));
        }
    }
    if structured {
        if out.has_composite_implicit_autograd_kernel
            || out.has_composite_implicit_autograd_nested_tensor_kernel
        {
            err(
                out,
                format!(
                    "structured {} cannot have a CompositeImplicitAutograd kernel",
                    out.func.name
                ),
            );
        }
        if functional.structured_delegate.as_ref() != Some(&out.func.name) {
            err(
                functional,
                format!(
                    "{} delegates to {} but its actual delegate is {}",
                    functional.func.name,
                    functional
                        .structured_delegate
                        .as_ref()
                        .map_or("nothing".to_string(), |d| d.to_string()),
                    out.func.name
                ),
            );
        }
        if let Some(i) = g.inplace {
            if fs[i].structured_delegate.as_ref() != Some(&out.func.name) {
                err(
                    &fs[i],
                    format!("{} must delegate to {}", fs[i].func.name, out.func.name),
                );
            }
        }
    }
    let mut generated: Vec<String> = g
        .members()
        .filter(|&i| fs[i].is_generated())
        .map(|i| fs[i].func.name.to_string())
        .collect();
    generated.sort();
    let mut expected: Vec<String> = g
        .members()
        .flat_map(|i| fs[i].autogen.iter().map(|n| n.to_string()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    expected.sort();
    if generated != expected {
        let anchor = g
            .members()
            .find(|&i| !fs[i].is_generated())
            .unwrap_or(g.out);
        err(&fs[anchor], format!(
            "the codegen expects to be able to generate '{}'; it expects a line 'autogen: {}' but found 'autogen: {}'",
            generated.join(", "),
            generated.join(", "),
            expected.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<NativeFunctions, DeclErrors> {
        NativeFunctions::parse(text, Path::new("n.yaml"), None)
    }

    fn first_error(text: &str) -> DeclError {
        parse(text).expect_err(text).0.remove(0)
    }

    const ADD: &str = "- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  device_check: NoCheck
  structured_delegate: add.out
  variants: function, method
  tags: [core, pointwise]

- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  variants: method
  structured_delegate: add.out

- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  ufunc_inner_loop:
    Generic: add (AllAndComplex, BFloat16, Half, ComplexHalf)
    ScalarOnly: add (Bool)
  dispatch:
    SparseCPU, SparseMeta: add_out_sparse_cpu
    MkldnnCPU: mkldnn_add_out
";

    #[test]
    fn every_key_is_read() {
        let nf = parse(ADD).unwrap();
        assert_eq!(nf.functions.len(), 3);
        let add = &nf.functions[0];
        assert_eq!(add.namespace, "aten");
        assert_eq!(add.operator_name().to_string(), "aten::add.Tensor");
        assert!(add.variants_function && add.variants_method);
        assert_eq!(add.device_check, DeviceCheckType::NoCheck);
        assert_eq!(
            add.structured_delegate.as_ref().unwrap().to_string(),
            "add.out"
        );
        assert!(add.tags.contains("core") && add.tags.contains("pointwise"));
        assert!(add.is_abstract);
        let out = &nf.functions[2];
        assert!(out.structured);
        assert_eq!(
            out.structured_inherits.as_deref(),
            Some("TensorIteratorBase")
        );
        assert_eq!(
            out.ufunc_inner_loop[0].supported_dtypes,
            ["AllAndComplex", "BFloat16", "Half", "ComplexHalf"]
        );
        let keys: Vec<&str> = out
            .dispatch
            .iter()
            .map(|b| b.dispatch_key.as_str())
            .collect();
        assert_eq!(
            keys,
            ["SparseCPU", "SparseMeta", "MkldnnCPU", "CPU", "CUDA"]
        );
        assert!(out.kernel("CPU").unwrap().structured);
        assert!(!out.kernel("SparseCPU").unwrap().structured);
        assert_eq!(out.kind(), SchemaKind::Out);
        assert_eq!(nf.functions[1].kind(), SchemaKind::Inplace);
        let g: Vec<&NativeFunctionsGroup> = nf.groups().collect();
        assert_eq!(
            g,
            [&NativeFunctionsGroup {
                functional: 0,
                inplace: Some(1),
                mutable: None,
                out: 2
            }]
        );
        assert_eq!(nf.operator_count(), 2);
    }

    #[test]
    fn implicit_dispatch_and_other_keys() {
        let nf = parse(
            "- func: ns::foo(Tensor self, int[1] dims=[], bool keep=False) -> Tensor
  python_module: nn
  category_override: dummy
  cpp_no_default_args: ['keep']
  manual_cpp_binding: True
  device_guard: False
  use_const_ref_for_mutable_tensors: False
- func: bar(Tensor self) -> Tensor
  manual_kernel_registration: True
- func: baz(Tensor self) -> Tensor
  dispatch:
    CPU: custom::ns::baz_cpu
",
        )
        .unwrap();
        let foo = &nf.functions[0];
        assert_eq!(foo.namespace, "ns");
        assert_eq!(foo.func.name.name, "foo");
        assert_eq!(
            foo.kernel("CompositeImplicitAutograd").unwrap().kernel,
            "foo"
        );
        assert!(!foo.is_abstract && !foo.device_guard && foo.manual_cpp_binding);
        assert_eq!(foo.python_module.as_deref(), Some("nn"));
        assert!(foo.cpp_no_default_args.contains("keep"));
        let baz = nf.functions[2].kernel("CPU").unwrap();
        assert_eq!(
            (baz.kernel.as_str(), baz.cpp_namespace.as_str()),
            ("baz_cpu", "custom::ns::native")
        );
    }

    #[test]
    fn autogen_generates_out_and_functional_variants() {
        let nf = parse(
            "- func: _foo_(Tensor(a!) self, Scalar s) -> Tensor(a!)
  dispatch:
    CPU: foo_
  autogen: _foo, _foo.out
- func: bar(Tensor self) -> (Tensor, Tensor)
  dispatch:
    CompositeExplicitAutograd: bar
  autogen: bar.out
",
        )
        .unwrap();
        assert_eq!(nf.entry_count, 2);
        let names: Vec<String> = nf.functions[2..]
            .iter()
            .map(|f| f.func.to_source_string())
            .collect();
        assert_eq!(
            names,
            [
                "_foo.out(Tensor self, Scalar s, *, Tensor(a!) out) -> Tensor(a!)",
                "_foo(Tensor self, Scalar s) -> Tensor",
                "bar.out(Tensor self, *, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))",
            ]
        );
        assert!(nf.functions[2].is_generated());
        assert_eq!(
            nf.functions[2]
                .kernel("CompositeExplicitAutograd")
                .unwrap()
                .kernel,
            "_foo_out"
        );
        assert_eq!(nf.groups().count(), 2);
    }

    #[test]
    fn errors_name_file_line_column() {
        let e = first_error("- func: f(Tensor self) -> Tensor\n  colour: red\n");
        assert_eq!(e.location.to_string(), "n.yaml:2:3");
        assert!(e.message.contains("unknown key 'colour'"));
        let e = first_error("- func: f(Tensor self, Foo x) -> Tensor\n");
        assert_eq!((e.location.line, e.location.column), (1, 24));
        assert!(e.message.contains("unknown type specifier"));
        let e = first_error("- variants: function\n");
        assert!(e.message.contains("missing key 'func'"));
        let e = first_error("- func: f(Tensor self) -> Tensor\n  structured: yes please\n");
        assert!(e.message.contains("'structured' must be True or False"));
        let e = first_error("- func: f(Tensor self) -> Tensor\n  variants: function, methods\n");
        assert!(e.message.contains("illegal variant 'methods'"));
        let e = first_error("- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPUU: f\n");
        assert!(e.message.contains("'CPUU'"));
        let e = NativeFunctions::parse(
            "- func: f(Tensor self) -> Tensor\n  tags: shiny\n",
            Path::new("n.yaml"),
            Some(&Tags::parse("- tag: core\n  desc: x\n", Path::new("t.yaml")).unwrap()),
        )
        .unwrap_err();
        assert!(e.0[0].message.contains("illegal tag 'shiny'"));
        assert!(parse("func: f\n").is_err());
    }

    #[test]
    fn torchgen_invariants() {
        let msg = |t: &str| first_error(t).message;
        assert!(
            msg("- func: f_(Tensor self) -> Tensor\n  dispatch:\n    CPU: f\n")
                .contains("mutable 'Tensor(a!) self'")
        );
        assert!(msg("- func: f.out(Tensor self, *, Tensor(a!) out, int x) -> Tensor(a!)\n  dispatch:\n    CPU: f\n").contains("must come last"));
        assert!(msg("- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  variants: method\n  dispatch:\n    CPU: f\n").contains("only function variant"));
        assert!(msg(
            "- func: f(Tensor self) -> Tensor\n  structured: True\n  dispatch:\n    CPU: f\n"
        )
        .contains("did you mean structured_delegate"));
        assert!(
            msg("- func: f(Tensor self) -> Tensor\n  structured_delegate: g.out\n")
                .contains("g.out is missing")
        );
        assert!(
            msg("- func: f(Tensor self) -> Tensor\n  cpp_no_default_args: ['x']\n")
                .contains("cpp_no_default_args")
        );
        assert!(
            msg("- func: f(Tensor self) -> Tensor\n- func: f(Tensor self) -> Tensor\n")
                .contains("duplicate function f")
        );
        assert!(msg(
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd: f\n"
        )
        .contains("unnecessary dispatch table"));
        assert!(msg("- func: new_f(Tensor self) -> Tensor\n")
            .contains("CompositeExplicitAutograd dispatch entry"));
        assert!(
            msg("- func: f_out(Tensor self) -> Tensor\n  dispatch:\n    CPU: f\n")
                .contains("_out suffix is reserved")
        );
        assert!(msg("- func: f(Tensor self) -> Tensor\n  precomputed:\n  - dim -> int dim\n  dispatch:\n    CPU: f\n").contains("only allowed on structured"));
        assert!(msg(
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f\n    CompositeExplicitAutograd: g\n    CompositeImplicitAutograd: h\n"
        )
        .contains("more than one of CompositeExplicitAutograd"));
        assert!(msg("- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f\n  autogen: f.out\n- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  dispatch:\n    CPU: f\n")
            .contains("autogen"));
    }

    #[test]
    fn signature_key_matches_signature() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/pytorch/native_functions.yaml"
        ))
        .unwrap();
        let nf = parse(&text).unwrap();
        for f in &nf.functions {
            let a = signature(&f.func, false).unwrap().to_source_string();
            assert_eq!(signature_key(&f.func).unwrap(), a, "{}", f.func.name);
        }
    }

    #[test]
    fn mutating_self_and_returning_it_needs_an_inplace_name() {
        let e = first_error("- func: f(Tensor(a!) self) -> Tensor(a!)\n  dispatch:\n    CPU: f\n");
        assert!(e.message.contains("must end in '_'"), "{e}");
        assert!(parse("- func: f(Tensor(a!) self) -> ()\n  dispatch:\n    CPU: f\n").is_ok());
    }

    #[test]
    fn base_operator_names() {
        let b = BaseOperatorName::parse("__iand__").unwrap();
        assert!(b.inplace && b.dunder_method && b.base == "and");
        assert_eq!(b.to_string(), "__iand__");
        let b = BaseOperatorName::parse("__and__").unwrap();
        assert!(!b.inplace && b.dunder_method);
        let b = BaseOperatorName::parse("foo_functional").unwrap();
        assert!(b.functional_overload && b.base == "foo");
        assert!(BaseOperatorName::parse("foo_out").is_err());
        assert!(
            is_kernel_dispatch_key("SparseCsrCUDA")
                && is_kernel_dispatch_key("CompositeImplicitAutograd")
        );
        assert!(!is_kernel_dispatch_key("AutogradCPU") && !is_kernel_dispatch_key("cpu"));
    }

    #[test]
    fn signatures_group_variants() {
        let f = |s: &str| FunctionSchema::parse(s).unwrap();
        let a = signature(
            &f("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
            false,
        )
        .unwrap();
        let b = signature(
            &f("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"),
            false,
        )
        .unwrap();
        let c = signature(&f("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"), false).unwrap();
        assert_eq!(
            a.to_source_string(),
            "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
        );
        assert_eq!(a, b);
        assert_eq!(a, c);
        let parts = argument_parts(&f("zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor")).unwrap();
        assert!(parts.tensor_options.is_some() && parts.self_arg.is_none());
    }
}
