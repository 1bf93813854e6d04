//! derivatives.yaml: per-input backward formulas (as text, with the inputs, outputs,
//! gradients and saved values each uses), `result:` forward formulas,
//! `output_differentiability`, `dispatch:` blocks, and the match of each entry to its
//! native function, following tools/autograd/load_derivatives.py.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::error::{DeclError, DeclErrors, Location};
use crate::native::{argument_parts, NativeFunctions};
use crate::schema::FunctionSchema;
use crate::yaml::{self, Mark, Node};

/// The autograd dispatch keys a `dispatch:` block may name besides `Default`
/// (torchgen's AUTOGRAD_KEYS).
pub fn is_autograd_key(key: &str) -> bool {
    const COMPONENTS: &[&str] = &[
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
    key == "AutogradNestedTensor"
        || key
            .strip_prefix("Autograd")
            .is_some_and(|c| COMPONENTS.contains(&c))
}

/// One entry of `output_differentiability`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputDifferentiability {
    Bool(bool),
    /// A C++ condition under which the (single) output is differentiable.
    Condition(String),
}

/// A value a backward formula needs saved from the forward call: a whole input or output
/// (`self`, `result`), or something computed from it (`self.sym_sizes()` saved as
/// `self_sym_sizes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedValue {
    /// The name the backward node stores it under (`self_sym_sizes`).
    pub name: String,
    /// The input or output it comes from (`self`).
    pub of: String,
    /// The expression that computes it in the forward (`self.sym_sizes()`), the variable
    /// itself for a whole save.
    pub expr: String,
}

/// What a formula computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormulaKind {
    /// Backward (reverse mode): gradients of the named inputs.
    Backward,
    /// `non_differentiable`: the named inputs get no gradient.
    NonDifferentiable,
    /// Forward mode (`result: ...`): the tangents of the named outputs.
    Forward,
}

/// One formula: `self, other: atan2_backward(grad, self, other, grad_input_mask)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formula {
    /// The inputs (backward) or outputs (forward) it defines, in the order written.
    pub var_names: Vec<String>,
    /// The formula as written.
    pub text: String,
    pub kind: FormulaKind,
    pub loc: Location,
    /// Inputs the formula mentions.
    pub inputs_used: Vec<String>,
    /// Outputs the formula mentions (`result`, `result0`, named returns).
    pub outputs_used: Vec<String>,
    /// Gradient names it mentions: `grad`, `grads`, `grad_<return name>`.
    pub grads_used: Vec<String>,
    /// Indices `i` of `grads[i]`.
    pub grad_indices: Vec<usize>,
    /// Values the backward node must save (backward formulas only).
    pub saved_inputs: Vec<SavedValue>,
    pub saved_outputs: Vec<SavedValue>,
    /// Forward formulas: inputs whose tangent (`x_t`) / primal (`x_p`) it uses.
    pub tangents_used: Vec<String>,
    pub primals_used: Vec<String>,
}

/// The formulas of one dispatch key (`Default` when the entry has no `dispatch:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivativeDefinitions {
    pub dispatch_key: String,
    pub formulas: Vec<Formula>,
    /// The backward node's name, `AddBackward0` (none when no input is differentiable).
    pub op: Option<String>,
}

impl DerivativeDefinitions {
    /// The inputs that get a gradient formula.
    pub fn args_with_derivatives(&self) -> impl Iterator<Item = &str> {
        self.formulas
            .iter()
            .filter(|f| f.kind == FormulaKind::Backward)
            .flat_map(|f| f.var_names.iter().map(String::as_str))
    }
}

/// One entry of derivatives.yaml.
#[derive(Debug, Clone)]
pub struct DerivativeEntry {
    pub loc: Location,
    /// The `name:` schema as written.
    pub name: String,
    pub schema: FunctionSchema,
    pub output_differentiability: Option<Vec<OutputDifferentiability>>,
    pub definitions: Vec<DerivativeDefinitions>,
}

impl DerivativeEntry {
    /// The function name without overload (`add` of `add.Tensor`).
    pub fn defn_name(&self) -> &str {
        self.schema.name.unqualified_name()
    }
}

/// A loaded derivatives.yaml.
#[derive(Debug, Clone)]
pub struct Derivatives {
    pub file: PathBuf,
    pub entries: Vec<DerivativeEntry>,
}

/// How one entry matched a native function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivativeMatch {
    pub entry: usize,
    /// The function whose schema the entry names.
    pub function: usize,
    /// The canonical function of its family that the autograd node is generated for.
    pub canonical: usize,
}

/// The result of matching derivatives.yaml against native_functions.yaml.
#[derive(Debug, Clone, Default)]
pub struct DerivativeMatches {
    pub matched: Vec<DerivativeMatch>,
    /// Entries that name no native function (torchgen rejects them), with why.
    pub unmatched: Vec<(usize, DeclError)>,
}

struct Cx<'a> {
    file: &'a Path,
    errors: Vec<DeclError>,
}

impl Cx<'_> {
    fn loc(&self, m: Mark) -> Location {
        Location {
            file: self.file.to_path_buf(),
            line: m.line,
            column: m.column,
        }
    }

    fn err(&mut self, m: Mark, msg: impl Into<String>) {
        let l = self.loc(m);
        self.errors.push(DeclError::new(l, msg));
    }
}

impl Derivatives {
    pub fn load(path: &Path) -> Result<Derivatives, DeclErrors> {
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
        Derivatives::parse(&text, path)
    }

    /// Parses and checks a derivatives.yaml on its own (formulas against the entry's own
    /// `name:` schema); [`Derivatives::match_native`] then pairs entries with functions.
    pub fn parse(text: &str, file: &Path) -> Result<Derivatives, DeclErrors> {
        let root = yaml::parse(text, file)?;
        let mut cx = Cx {
            file,
            errors: Vec::new(),
        };
        let Node::Seq(items, _) = &root else {
            cx.err(
                root.mark(),
                format!(
                    "expected a list of derivative entries, found {}",
                    root.kind_name()
                ),
            );
            return Err(DeclErrors(cx.errors));
        };
        let mut entries = Vec::with_capacity(items.len());
        let mut op_counter: HashMap<String, usize> = HashMap::new();
        for item in items {
            if let Some(e) = parse_entry(&mut cx, item, &mut op_counter) {
                entries.push(e);
            }
        }
        if cx.errors.is_empty() {
            Ok(Derivatives {
                file: file.to_path_buf(),
                entries,
            })
        } else {
            Err(DeclErrors(cx.errors))
        }
    }

    /// Pairs every entry with the native function its `name:` names (torchgen matches
    /// the schema text exactly) and with its family's canonical function.
    pub fn match_native(&self, nf: &NativeFunctions) -> DerivativeMatches {
        // An entry names one function by its schema; look it up by name, then compare the
        // whole schema text as torchgen does.
        let mut by_name: HashMap<&crate::schema::OperatorName, usize> =
            HashMap::with_capacity(nf.functions.len());
        let mut by_base: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, f) in nf.functions.iter().enumerate() {
            by_name.insert(&f.func.name, i);
            by_base.entry(f.root_name()).or_default().push(i);
        }
        let mut out = DerivativeMatches::default();
        for (ei, e) in self.entries.iter().enumerate() {
            let key = e.schema.to_source_string();
            let found = by_name
                .get(&e.schema.name)
                .copied()
                .filter(|&i| nf.functions[i].func.to_source_string() == key);
            let Some(fi) = found else {
                let avail: Vec<String> = nf
                    .functions
                    .iter()
                    .filter(|f| f.func.name.name == e.schema.name.name)
                    .map(|f| f.func.to_source_string())
                    .collect();
                out.unmatched.push((
                    ei,
                    DeclError::new(
                        e.loc.clone(),
                        format!(
                            "could not find ATen function for schema: {key}. Available signatures: {}",
                            if avail.is_empty() { "none".to_string() } else { avail.join("; ") }
                        ),
                    ),
                ));
                continue;
            };
            // The function's family: the functions of its root name with the same signature.
            let sig = nf.functions[fi].signature_key();
            let family: Vec<usize> = by_base
                .get(&nf.functions[fi].root_name())
                .map(|v| {
                    v.iter()
                        .copied()
                        .filter(|&i| nf.functions[i].signature_key() == sig)
                        .collect()
                })
                .unwrap_or_else(|| vec![fi]);
            let defn = e.defn_name();
            let canonical = family
                .iter()
                .copied()
                .find(|&i| {
                    let f = &nf.functions[i].func;
                    !f.name.overload_name.contains("functional")
                        && !f.arguments.iter().any(|a| a.is_out())
                        && f.name.name == defn
                })
                .unwrap_or(family[0]);
            out.matched.push(DerivativeMatch {
                entry: ei,
                function: fi,
                canonical,
            });
        }
        out
    }
}

const ENTRY_KEYS: &[&str] = &["name", "output_differentiability", "dispatch"];

fn parse_entry(
    cx: &mut Cx<'_>,
    item: &Node,
    op_counter: &mut HashMap<String, usize>,
) -> Option<DerivativeEntry> {
    let Node::Map(kvs, _) = item else {
        cx.err(
            item.mark(),
            format!(
                "expected a derivative entry (a mapping), found {}",
                item.kind_name()
            ),
        );
        return None;
    };
    let get = |k: &str| {
        kvs.iter()
            .find(|(key, _)| key.as_str() == Some(k))
            .map(|(_, v)| v)
    };
    let Some(name_node) = get("name") else {
        cx.err(item.mark(), "missing key 'name'");
        return None;
    };
    let Some(name) = name_node.as_str().filter(|_| name_node.as_bool().is_none()) else {
        cx.err(
            name_node.mark(),
            format!(
                "'name' must be a schema string, found {}",
                name_node.kind_name()
            ),
        );
        return None;
    };
    let schema = match FunctionSchema::parse(name) {
        Ok(s) if !s.name.name.is_empty() => s,
        Ok(_) => {
            cx.err(name_node.mark(), "'name' must name the function");
            return None;
        }
        Err(e) => {
            let m = name_node.mark();
            let mark = if e.line <= 1 {
                Mark {
                    line: m.line,
                    column: m.column + e.column - 1,
                }
            } else {
                Mark {
                    line: m.line + e.line - 1,
                    column: e.column,
                }
            };
            cx.err(
                mark,
                format!("in schema '{name}': {} (found {})", e.message, e.found),
            );
            return None;
        }
    };
    let mut seen = BTreeSet::new();
    for (k, _) in kvs {
        if let Some(k) = k.as_str() {
            if !seen.insert(k.to_string()) {
                cx.err(item.mark(), format!("duplicate key '{k}'"));
            }
        }
    }
    // Output differentiability.
    let mut output_differentiability = None;
    if let Some(v) = get("output_differentiability") {
        match v {
            Node::Seq(xs, _) => {
                let mut list = Vec::new();
                for x in xs {
                    match (x.as_bool(), x.as_str()) {
                        (Some(b), _) => list.push(OutputDifferentiability::Bool(b)),
                        (None, Some(s)) => list.push(OutputDifferentiability::Condition(s.to_string())),
                        _ => cx.err(x.mark(), "output_differentiability entries must be True, False or a condition string"),
                    }
                }
                let conds = list
                    .iter()
                    .filter(|d| matches!(d, OutputDifferentiability::Condition(_)))
                    .count();
                if conds > 0 && list.len() != 1 {
                    cx.err(v.mark(), "output_differentiability must either be a list of bools or a single condition (conditions are supported for single-output functions only)");
                }
                if list.len() > schema.returns.len() {
                    cx.err(
                        v.mark(),
                        format!(
                            "output_differentiability has {} entries but {} returns {} outputs",
                            list.len(),
                            schema.name,
                            schema.returns.len()
                        ),
                    );
                }
                output_differentiability = Some(list);
            }
            _ => cx.err(
                v.mark(),
                format!(
                    "'output_differentiability' must be a list, found {}",
                    v.kind_name()
                ),
            ),
        }
    }
    let differentiability: Vec<bool> = match &output_differentiability {
        Some(l)
            if l.iter()
                .any(|d| matches!(d, OutputDifferentiability::Condition(_))) =>
        {
            vec![true]
        }
        Some(l) => l
            .iter()
            .map(|d| matches!(d, OutputDifferentiability::Bool(true)))
            .collect(),
        None => vec![true; schema.returns.len()],
    };
    // Formula blocks: either `dispatch:` with per-key blocks, or the formulas inline.
    let mut blocks: Vec<(String, Vec<(&Node, &Node)>)> = Vec::new();
    if let Some(d) = get("dispatch") {
        for (k, _) in kvs {
            if let Some(key) = k.as_str() {
                if !ENTRY_KEYS.contains(&key) {
                    cx.err(k.mark(), format!("'{key}': formulas must go inside the dispatch block when an entry has one"));
                }
            }
        }
        match d {
            Node::Map(dk, _) => {
                for (k, v) in dk {
                    let key = k.as_str().unwrap_or_default().to_string();
                    if key != "Default" && !is_autograd_key(&key) {
                        cx.err(k.mark(), format!("invalid dispatch key '{key}' in derivatives.yaml for {name}: expected Default or an Autograd key"));
                        continue;
                    }
                    match v {
                        Node::Map(fs, _) => {
                            blocks.push((key, fs.iter().map(|(a, b)| (a, b)).collect()))
                        }
                        _ => cx.err(
                            v.mark(),
                            format!(
                                "the formulas of dispatch key '{key}' must be a mapping, found {}",
                                v.kind_name()
                            ),
                        ),
                    }
                }
            }
            _ => cx.err(
                d.mark(),
                format!("'dispatch' must be a mapping, found {}", d.kind_name()),
            ),
        }
    } else {
        let fs = kvs
            .iter()
            .filter(|(k, _)| !k.as_str().is_some_and(|s| ENTRY_KEYS.contains(&s)))
            .map(|(a, b)| (a, b))
            .collect();
        blocks.push(("Default".to_string(), fs));
    }
    let parts = argument_parts(&schema).ok();
    let mut arg_names: Vec<String> = schema
        .arguments
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            !parts
                .as_ref()
                .is_some_and(|p| p.tensor_options.is_some_and(|t| t.contains(i)))
        })
        .map(|(_, a)| a.name.clone())
        .collect();
    if parts.as_ref().is_some_and(|p| p.tensor_options.is_some()) {
        arg_names.push("options".to_string());
    }
    for bad in ["grad_input_mask", "result"] {
        if arg_names.iter().any(|a| a == bad) {
            cx.err(name_node.mark(), format!("schema for {} has an argument named {bad}, which the autograd codegen reserves", schema.name));
        }
    }
    let ret_names = return_names(&schema);
    let named_grads: Vec<String> = schema
        .returns
        .iter()
        .zip(differentiability.iter().chain(std::iter::repeat(&false)))
        .filter(|(r, d)| **d && r.ty.is_tensor_like())
        .filter_map(|(r, _)| r.name.as_ref().map(|n| format!("grad_{n}")))
        .collect();
    let mut definitions = Vec::new();
    for (key, fs) in blocks {
        let mut formulas = Vec::new();
        let mut sorted = fs;
        // torchgen processes the formulas sorted by their key.
        sorted.sort_by(|a, b| a.0.as_str().cmp(&b.0.as_str()));
        for (k, v) in sorted {
            let Some(raw) = k.as_str() else {
                cx.err(k.mark(), "expected a formula key (input or output names)");
                continue;
            };
            let text = match v {
                Node::Scalar { value, .. } => value.clone(),
                _ => {
                    cx.err(
                        v.mark(),
                        format!(
                            "the formula for '{raw}' must be a string, found {}",
                            v.kind_name()
                        ),
                    );
                    continue;
                }
            };
            let names: Vec<String> = raw.split(',').map(|s| s.trim().to_string()).collect();
            if names.iter().any(String::is_empty) {
                cx.err(k.mark(), format!("'{raw}': empty name in the formula key"));
                continue;
            }
            for n in &names {
                if arg_names.contains(n) && ret_names.contains(n) {
                    cx.err(
                        k.mark(),
                        format!(
                            "'{n}' is both an input argument and a named return of {}",
                            schema.name
                        ),
                    );
                }
            }
            let forward = !arg_names.contains(&names[0]);
            let kind = if forward {
                for n in &names {
                    let is_output =
                        ret_names.contains(n) || n == "result" && schema.returns.len() == 1;
                    if !is_output {
                        cx.err(k.mark(), format!(
                            "unknown name '{n}': it is neither an input of {} (inputs: {}) nor one of its outputs ({})",
                            schema.name, arg_names.join(", "), ret_names.join(", ")
                        ));
                    }
                }
                FormulaKind::Forward
            } else {
                for n in &names {
                    if !arg_names.contains(n) {
                        cx.err(
                            k.mark(),
                            format!(
                                "'{n}' is not an input of {} (inputs: {})",
                                schema.name,
                                arg_names.join(", ")
                            ),
                        );
                    }
                }
                if text.trim().eq_ignore_ascii_case("non_differentiable") {
                    FormulaKind::NonDifferentiable
                } else {
                    FormulaKind::Backward
                }
            };
            let loc = cx.loc(v.mark());
            let mut f = analyze(
                &text,
                &names,
                kind,
                loc,
                &arg_names,
                &ret_names,
                &named_grads,
            );
            if kind == FormulaKind::Backward {
                for msg in forbidden_uses(&text) {
                    cx.err(v.mark(), msg);
                }
                for &i in &f.grad_indices {
                    if i >= schema.returns.len() {
                        cx.err(v.mark(), format!(
                            "out of bounds grads access: the formula uses grads[{i}], but {} only returns {} outputs",
                            schema.name,
                            schema.returns.len()
                        ));
                    }
                }
            } else {
                f.saved_inputs.clear();
                f.saved_outputs.clear();
            }
            formulas.push(f);
        }
        check_definitions(cx, item.mark(), &schema, &formulas);
        let has_args = formulas.iter().any(|f| f.kind == FormulaKind::Backward);
        let op = has_args.then(|| {
            let mut prefix = op_prefix(schema.name.unqualified_name());
            if key != "Default" {
                prefix.push_str(&key);
            }
            let n = op_counter.entry(prefix.clone()).or_insert(0);
            let op = format!("{prefix}{n}");
            *n += 1;
            op
        });
        definitions.push(DerivativeDefinitions {
            dispatch_key: key,
            formulas,
            op,
        });
    }
    Some(DerivativeEntry {
        loc: cx.loc(item.mark()),
        name: name.to_string(),
        schema,
        output_differentiability,
        definitions,
    })
}

/// torchgen's `cpp.return_names` as the formulas see them: named returns keep their
/// names (`self` becomes `result`), a single unnamed return is `result`, several are
/// `result0`, `result1`, ...
pub fn return_names(s: &FunctionSchema) -> Vec<String> {
    s.returns
        .iter()
        .enumerate()
        .map(|(i, r)| match r.name.as_deref() {
            Some("self") => "result".to_string(),
            Some(n) => n.to_string(),
            None if s.returns.len() == 1 => "result".to_string(),
            None => format!("result{i}"),
        })
        .collect()
}

/// `AddBackward` for `add`, `_foo_bar` -> `FooBarBackward` (torchgen's `_create_op_prefix`).
fn op_prefix(name: &str) -> String {
    let camel: String = name
        .split('_')
        .map(|p| {
            // Python's str.title(): first letter of each alphabetic run upper, rest lower.
            let mut out = String::new();
            let mut prev_alpha = false;
            for c in p.chars() {
                if c.is_alphabetic() {
                    if prev_alpha {
                        out.extend(c.to_lowercase());
                    } else {
                        out.extend(c.to_uppercase());
                    }
                    prev_alpha = true;
                } else {
                    out.push(c);
                    prev_alpha = false;
                }
            }
            out
        })
        .collect();
    (camel + "Backward").replace("ForwardBackward", "Backward")
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifiers of a formula (maximal runs of word characters) with their offsets:
/// a name occurs where torchgen's IDENT_REGEX `(^|\W){}($|\W)` finds it exactly when it
/// is one of these.
fn identifiers(text: &str) -> Vec<(usize, &str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_word(b[i]) {
            let s = i;
            while i < b.len() && is_word(b[i]) {
                i += 1;
            }
            out.push((s, &text[s..i]));
        } else {
            i += 1;
        }
    }
    out
}

/// Byte offsets where `ident` occurs bounded by non-word characters.
fn ident_positions(text: &str, ident: &str) -> Vec<usize> {
    identifiers(text)
        .into_iter()
        .filter(|(_, t)| *t == ident)
        .map(|(p, _)| p)
        .collect()
}

/// The expressions torchgen evaluates in the forward instead of saving the whole
/// variable: (text before the name, text after it, suffix of the saved name).
const REPLACEMENTS: &[(&str, &str, &str)] = &[
    ("", ".sym_sizes()", "_sym_sizes"),
    ("", "->sym_sizes()", "_sym_sizes_opt"),
    ("", ".sym_blocksize()", "_self_sym_blocksize_opt"),
    ("", ".options()", "_options"),
    ("zeros_like(", ")", "_info"),
    ("", ".sym_size(", "_sym_argsize_"),
    ("", ".numel()", "_numel"),
    ("", ".sym_numel()", "_sym_numel"),
    ("to_args_sizes(", ")", "_args_sizes"),
    ("to_args_sizes_symint(", ")", "_args_sizes_symint"),
    ("to_args_scalartypes(", ")", "_args_scalartypes"),
    ("TensorGeometry(", ")", "_geometry"),
    ("", ".scalar_type()", "_scalar_type"),
    ("", ".dim()", "_dim"),
    ("", ".sym_strides()", "_sym_strides"),
    ("", ".layout()", "_layout"),
    ("", ".is_conj()", "_conjugate"),
];

/// What `name` needs saved for `formula`: each use inside one of the expressions above
/// saves that expression's value; any other use saves the whole variable. (torchgen
/// rewrites the formula pattern by pattern; the uses are disjoint, so one pass over the
/// occurrences finds the same values, kept in torchgen's order.)
fn saved_values(formula: &str, idents: &[(usize, &str)], name: &str, saved: &mut Vec<SavedValue>) {
    let mut found: Vec<(usize, usize, SavedValue)> = Vec::new();
    let mut whole = false;
    for p in idents.iter().filter(|(_, t)| *t == name).map(|(p, _)| *p) {
        let before = &formula[..p];
        let after = &formula[p + name.len()..];
        let hit = REPLACEMENTS
            .iter()
            .enumerate()
            .find_map(|(k, (pre, post, suffix))| {
                if !before.ends_with(pre) || !after.starts_with(post) {
                    return None;
                }
                if *suffix == "_sym_argsize_" {
                    // `x.sym_size(N)` saves that one size.
                    let rest = &after[post.len()..];
                    let close = rest.find(')')?;
                    let arg = &rest[..close];
                    if arg.is_empty() || !arg.trim_start_matches('-').bytes().all(is_word) {
                        return None;
                    }
                    return Some((
                        k,
                        SavedValue {
                            name: format!("{name}{suffix}{}", arg.replace('-', "minus_")),
                            of: name.to_string(),
                            expr: format!("{name}.sym_size({arg})"),
                        },
                    ));
                }
                Some((
                    k,
                    SavedValue {
                        name: format!("{name}{suffix}"),
                        of: name.to_string(),
                        expr: format!("{pre}{name}{post}"),
                    },
                ))
            });
        match hit {
            Some((k, v)) => found.push((k, p, v)),
            None => whole = true,
        }
    }
    found.sort_by_key(|(k, p, _)| (*k, *p));
    for (_, _, v) in found {
        if !saved.iter().any(|x| x.name == v.name) {
            saved.push(v);
        }
    }
    if whole && !saved.iter().any(|v| v.name == name) {
        saved.push(SavedValue {
            name: name.to_string(),
            of: name.to_string(),
            expr: name.to_string(),
        });
    }
}

fn analyze(
    text: &str,
    var_names: &[String],
    kind: FormulaKind,
    loc: Location,
    args: &[String],
    rets: &[String],
    named_grads: &[String],
) -> Formula {
    let idents = identifiers(text);
    let mentions = |name: &str| idents.iter().any(|(_, t)| *t == name);
    let inputs_used = args.iter().filter(|a| mentions(a)).cloned().collect();
    let outputs_used = rets.iter().filter(|r| mentions(r)).cloned().collect();
    let mut grads_used: Vec<String> = ["grad", "grads"]
        .iter()
        .filter(|g| mentions(g))
        .map(|g| g.to_string())
        .collect();
    grads_used.extend(named_grads.iter().filter(|g| mentions(g)).cloned());
    let mut grad_indices = Vec::new();
    for s in idents
        .iter()
        .filter(|(_, t)| *t == "grads")
        .map(|(p, _)| *p)
    {
        let rest = &text[s + 5..];
        if let Some(inner) = rest.strip_prefix('[') {
            let digits: String = inner.chars().take_while(char::is_ascii_digit).collect();
            if !digits.is_empty() && inner[digits.len()..].starts_with(']') {
                if let Ok(i) = digits.parse() {
                    grad_indices.push(i);
                }
            }
        }
    }
    let mut saved_inputs = Vec::new();
    let mut saved_outputs = Vec::new();
    let mut tangents_used = Vec::new();
    let mut primals_used = Vec::new();
    match kind {
        FormulaKind::Backward => {
            for a in args {
                saved_values(text, &idents, a, &mut saved_inputs);
            }
            for r in rets {
                saved_values(text, &idents, r, &mut saved_outputs);
            }
        }
        FormulaKind::Forward => {
            for a in args {
                let with = |suffix: &str| {
                    idents.iter().any(|(_, t)| {
                        t.len() == a.len() + 2 && t.starts_with(a.as_str()) && t.ends_with(suffix)
                    })
                };
                if with("_t") {
                    tangents_used.push(a.clone());
                }
                if with("_p") {
                    primals_used.push(a.clone());
                }
            }
        }
        FormulaKind::NonDifferentiable => {}
    }
    Formula {
        var_names: var_names.to_vec(),
        text: text.to_string(),
        kind,
        loc,
        inputs_used,
        outputs_used,
        grads_used,
        grad_indices,
        saved_inputs,
        saved_outputs,
        tangents_used,
        primals_used,
    }
}

/// Uses that load_derivatives.py rejects in backward formulas.
fn forbidden_uses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if text.contains(".sizes()") || text.contains("->sizes()") {
        out.push(
            ".sizes() is not supported in derivative formulas; use the SymInt version .sym_sizes()"
                .to_string(),
        );
    }
    for pat in [".size(", "->size("] {
        let mut from = 0;
        while let Some(p) = text[from..].find(pat) {
            let rest = &text[from + p + pat.len()..];
            let num = rest.trim_start_matches('-');
            let digits = num.chars().take_while(char::is_ascii_digit).count();
            if digits > 0 && num[digits..].starts_with(')') {
                out.push(".size(int) is not supported in derivative formulas; use the SymInt version .sym_size(int)".to_string());
                break;
            }
            from += p + 1;
        }
    }
    if text.contains(".strides()") || text.contains("->strides()") {
        out.push(".strides() is not supported in derivative formulas; use the SymInt version .sym_strides()".to_string());
    }
    out
}

/// load_derivatives.py's checks across one dispatch key's formulas.
fn check_definitions(cx: &mut Cx<'_>, at: Mark, schema: &FunctionSchema, formulas: &[Formula]) {
    let mut diff = BTreeSet::new();
    let mut non_diff = BTreeSet::new();
    let mut forward_count = 0;
    for f in formulas {
        match f.kind {
            FormulaKind::Backward => diff.extend(f.var_names.iter().cloned()),
            FormulaKind::NonDifferentiable => non_diff.extend(f.var_names.iter().cloned()),
            FormulaKind::Forward => forward_count += 1,
        }
    }
    if let Some(x) = diff.intersection(&non_diff).next() {
        cx.err(at, format!("derivatives for {} have overlapping non_differentiable and differentiable variables: {x}", schema.name));
    }
    let backward: Vec<&Formula> = formulas
        .iter()
        .filter(|f| f.kind == FormulaKind::Backward)
        .collect();
    let uses_grad = backward
        .iter()
        .any(|f| f.grads_used.iter().any(|g| g == "grad"));
    let grads_uses: usize = backward
        .iter()
        .map(|f| ident_positions(&f.text, "grads").len())
        .sum();
    let indices: Vec<usize> = backward
        .iter()
        .flat_map(|f| f.grad_indices.iter().copied())
        .collect();
    let uses_named = backward
        .iter()
        .any(|f| f.grads_used.iter().any(|g| g.starts_with("grad_")));
    if uses_grad && grads_uses > 0 {
        cx.err(at, format!("derivative definition of {} illegally mixes use of 'grad' and 'grads'; consider replacing occurrences of 'grad' with 'grads[0]'", schema.name));
    }
    if grads_uses == indices.len() && !indices.is_empty() && indices.iter().all(|&i| i == 0) {
        cx.err(at, format!("derivative definition of {} solely refers to 'grads[0]'; if the first output is indeed the only differentiable output, replace 'grads[0]' with 'grad'", schema.name));
    }
    if uses_named && (uses_grad || grads_uses > 0) {
        cx.err(at, format!("derivative definition of {} illegally mixes use of 'grad_RETURN_NAME' and 'grad' or 'grads[x]'", schema.name));
    }
    for f in formulas.iter().filter(|f| f.kind == FormulaKind::Forward) {
        let t = f.text.trim();
        if t == "auto_element_wise"
            && (diff.len() != 1 || forward_count > 1 || f.var_names.len() > 1)
        {
            cx.err(at, format!("derivative definition of {} defines the forward gradient as auto_element_wise, which only works for functions with a single differentiable input and a single differentiable output", schema.name));
        }
        if t == "auto_linear" && (forward_count > 1 || f.var_names.len() > 1) {
            cx.err(at, format!("derivative definition of {} defines the forward gradient as auto_linear, which only works for functions with a single differentiable output", schema.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Derivatives, DeclErrors> {
        Derivatives::parse(text, Path::new("d.yaml"))
    }

    #[test]
    fn formulas_inputs_and_saved_values() {
        let d = parse(
            "- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n  self: handle_r_to_c(self.scalar_type(), grad)\n  other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha.conj()))\n  result: self_t + maybe_multiply(other_t, alpha)\n",
        )
        .unwrap();
        let e = &d.entries[0];
        assert_eq!(e.defn_name(), "add");
        let defs = &e.definitions[0];
        assert_eq!(defs.dispatch_key, "Default");
        assert_eq!(defs.op.as_deref(), Some("AddBackward0"));
        let other = defs
            .formulas
            .iter()
            .find(|f| f.var_names == ["other"])
            .unwrap();
        assert_eq!(other.kind, FormulaKind::Backward);
        assert_eq!(other.inputs_used, ["other", "alpha"]);
        assert_eq!(other.grads_used, ["grad"]);
        let names: Vec<&str> = other.saved_inputs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["other_scalar_type", "alpha"]);
        let fwd = defs
            .formulas
            .iter()
            .find(|f| f.kind == FormulaKind::Forward)
            .unwrap();
        assert_eq!(fwd.tangents_used, ["self", "other"]);
        assert_eq!(
            defs.args_with_derivatives().collect::<Vec<_>>(),
            ["other", "self"]
        );
    }

    #[test]
    fn dispatch_blocks_and_op_counter() {
        let d = parse(
            "- name: mean(Tensor self, *, ScalarType? dtype=None) -> Tensor\n  dispatch:\n    Default:\n      self: grad.expand_symint(self.sym_sizes()) / self.sym_numel()\n      result: auto_linear\n    AutogradNestedTensor:\n      self: (ones_like(self) * grad) / self.sym_numel()\n- name: mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor\n  self: zeros_like(self) + grad\n",
        )
        .unwrap();
        let defs = &d.entries[0].definitions;
        assert_eq!(defs[0].op.as_deref(), Some("MeanBackward0"));
        assert_eq!(
            defs[1].op.as_deref(),
            Some("MeanBackwardAutogradNestedTensor0")
        );
        let saved: Vec<&str> = defs[0].formulas[1]
            .saved_inputs
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(saved, ["self_sym_sizes", "self_sym_numel"]);
        let mut v = Vec::new();
        let f = "f(self.sym_size(-1), self.dim(), TensorGeometry(self), self)";
        saved_values(f, &identifiers(f), "self", &mut v);
        let names: Vec<&str> = v.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "self_sym_argsize_minus_1",
                "self_geometry",
                "self_dim",
                "self"
            ]
        );
        assert_eq!(
            d.entries[1].definitions[0].op.as_deref(),
            Some("MeanBackward1")
        );
        let info = &d.entries[1].definitions[0].formulas[0].saved_inputs;
        assert_eq!(info[0].name, "self_info");
    }

    #[test]
    fn outputs_and_named_grads() {
        let d = parse(
            "- name: cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)\n  self: cummaxmin_backward(grad, self, indices, dim)\n  values: cumulative_forward(self_t, indices)\n  output_differentiability: [True, False]\n- name: f(Tensor self) -> (Tensor a, Tensor b)\n  self: grad_a + grad_b\n",
        )
        .unwrap();
        let f = &d.entries[0].definitions[0].formulas;
        let bw = f.iter().find(|x| x.kind == FormulaKind::Backward).unwrap();
        assert_eq!(bw.outputs_used, ["indices"]);
        assert_eq!(bw.saved_outputs[0].name, "indices");
        assert_eq!(
            d.entries[0]
                .output_differentiability
                .as_ref()
                .unwrap()
                .len(),
            2
        );
        let g = &d.entries[1].definitions[0].formulas[0];
        assert_eq!(g.grads_used, ["grad_a", "grad_b"]);
    }

    #[test]
    fn errors_are_located_and_named() {
        let e = parse("- name: f(Tensor self) -> Tensor\n  selff: grad\n").unwrap_err();
        assert!(e.0[0].message.contains("unknown name 'selff'"), "{e}");
        assert_eq!((e.0[0].location.line, e.0[0].location.column), (2, 3));
        let e = parse("- name: f(Tensor self) -> Tensor\n  self: grad.sizes()\n").unwrap_err();
        assert!(e.0[0].message.contains(".sizes()"));
        let e = parse("- name: f(Tensor self) -> (Tensor, Tensor)\n  self: grad + grads[1]\n")
            .unwrap_err();
        assert!(e.0[0].message.contains("mixes use of 'grad' and 'grads'"));
        let e =
            parse("- name: f(Tensor self) -> (Tensor, Tensor)\n  self: grads[0]\n").unwrap_err();
        assert!(e.0[0].message.contains("solely refers to 'grads[0]'"));
        let e = parse("- name: f(Tensor self) -> Tensor\n  self: grads[3]\n").unwrap_err();
        assert!(e.0.iter().any(|x| x.message.contains("out of bounds")));
        let e =
            parse("- name: f(Tensor self) -> Tensor\n  dispatch:\n    CPU:\n      self: grad\n")
                .unwrap_err();
        assert!(e.0[0].message.contains("invalid dispatch key 'CPU'"));
        let e = parse("- name: f(Tensor self -> Tensor\n  self: grad\n").unwrap_err();
        assert_eq!(e.0[0].location.line, 1);
        assert!(e.0[0].location.column > 9, "{e}");
        let e = parse("- self: grad\n").unwrap_err();
        assert!(e.0[0].message.contains("missing key 'name'"));
        let e = parse("- name: f(Tensor self, Tensor other) -> Tensor\n  self: grad\n  self, other: non_differentiable\n").unwrap_err();
        assert!(e.0[0].message.contains("overlapping"));
        assert!(parse("name: x\n").is_err());
    }

    #[test]
    fn op_prefix_is_torchgen_title_case() {
        assert_eq!(op_prefix("add"), "AddBackward");
        assert_eq!(
            op_prefix("_softmax_backward_data"),
            "SoftmaxBackwardDataBackward"
        );
        assert_eq!(op_prefix("native_layer_norm"), "NativeLayerNormBackward");
        assert_eq!(op_prefix("conv_tbc_forward"), "ConvTbcBackward");
        assert_eq!(op_prefix("linalg_inv_ex"), "LinalgInvExBackward");
        assert_eq!(op_prefix("fft_r2c"), "FftR2CBackward");
    }
}
