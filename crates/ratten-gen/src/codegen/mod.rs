//! ratten's torchgen: Rust code from a native_functions.yaml.
//!
//! One [`Model`] (every overload's Rust signatures, kernels per dispatch key, view relation and
//! differentiability; see [`crate::model`]) is computed from ratten-schema's
//! `NativeFunctions` (and, when given, its `Derivatives`); independent emitters each write
//! files from it. [`EMITTERS`] is the one registry of what each writes where, per [`Target`]:
//!
//! | emitter | targets | writes | PyTorch counterpart |
//! | --- | --- | --- | --- |
//! | `mod` | aten, out of tree | `mod.rs`, `prelude.rs` | - |
//! | [`operators`] | aten, out of tree | `operators/` | `Operators.h` (`at::_ops::add_Tensor::call/redispatch`) |
//! | [`functions`] | aten, out of tree | `functions/` | `Functions.h` (`at::add`) |
//! | [`functions`] (methods) | aten | `methods/` | `TensorBody.h` (`Tensor::add`) |
//! | [`functions`] (extension trait) | out of tree | `methods.rs` | - (an extension trait: `Tensor` is ratten-aten's) |
//! | [`backends`] | aten, out of tree | `backends/<key>/` | `RegisterCPU.cpp` wrappers, `CPUFunctions.h` (`at::cpu::add`), `RegisterMeta.cpp` |
//! | [`registration`] | aten, out of tree | `registration/` | `RegisterSchema.cpp`, the `TORCH_LIBRARY_IMPL` blocks |
//! | [`python`] (mod) | python | `mod.rs` | - |
//! | [`python`] (signatures) | python | `signatures.rs` | the `PythonArgParser` signature lists of `python_torch_functions.cpp` |
//! | [`python`] (dispatch) | python | `dispatch/` | the `dispatch_add` lambdas of the same files |
//! | [`autograd::variable_type`] (mod) | autograd | `mod.rs` | - |
//! | [`autograd::functions`] | autograd | `functions/` | `Functions.h` / `Functions.cpp` (`MulBackward0`) |
//! | [`autograd::variable_type`] | autograd | `variable_type/` | `VariableType_*.cpp` (the Autograd kernels) |
//! | [`autograd::inplace_or_view`] | autograd | `inplace_or_view/` | `ADInplaceOrViewType_*.cpp` |
//! | [`autograd::variable_type`] (registration) | autograd | `registration.rs` | their `TORCH_LIBRARY_IMPL(aten, Autograd / ADInplaceOrView, m)` blocks |
//!
//! The autograd rows write for ratten-autograd and, from a library's own derivatives.yaml,
//! for an out-of-tree library (`Target::OutOfTreeAutograd`).
//!
//! A directory holds a `mod.rs` and one file per shard of operator names (Note [Generated
//! file shards]). A further layer (the tracer, say) is a further row: an [`Emitter`] with its
//! targets, its path and a function from the [`EmitContext`] to files, added to [`EMITTERS`].
//!
//! Note [Generated file shards]: an operator's code goes into the file of its root name's
//! first letter (leading underscores dropped: `_foreach_add` is in `f.rs`), or of its first
//! two letters when that letter holds more than `names::SHARD_LIMIT` overloads (`si.rs`).
//! All variants of an operator (`add`, `add_`, `add.out`, `add.Scalar`) share a file, a new
//! operator changes only its shard's file, and a reader finds `add` in `a.rs`. Fixed-size
//! chunks would balance files better but move operators between files as others are added.

pub mod autograd;
pub mod backends;
pub mod functions;
pub mod operators;
pub mod python;
pub mod registration;
pub mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ratten_schema::derivatives::Derivatives;
use ratten_schema::native::NativeFunctions;
use ratten_schema::tags::Tags;

use crate::model::names::shard_keys;
pub use crate::model::{Model, ModelOptions, OperatorRecord};

/// Which crate the code is generated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// ratten-aten's own operator API (inherent `Tensor` methods, `crate` paths).
    Aten,
    /// An operator library outside ratten-aten (examples/myops): methods in an extension
    /// trait, ratten-aten named `ratten_aten`.
    OutOfTree,
    /// ratten-py's Python bindings of ratten-aten's operators.
    Python,
    /// ratten-autograd's generated code from ratten-aten's operators and derivatives.yaml:
    /// backward nodes, Autograd and ADInplaceOrView kernels, their registration.
    Autograd,
    /// The same for an operator library outside ratten (examples/myops), from its own
    /// native_functions.yaml and derivatives.yaml: its formulas call ratten-aten's operators
    /// and its own, and its kernels register under its namespace.
    OutOfTreeAutograd,
}

impl Target {
    /// Whether the target is autograd code (ratten-autograd's or a library's).
    pub fn is_autograd(self) -> bool {
        matches!(self, Target::Autograd | Target::OutOfTreeAutograd)
    }
}

/// What differs between the targets.
#[derive(Debug, Clone)]
pub struct GenOptions {
    pub target: Target,
    /// How generated code names ratten-aten: `crate` inside it, `ratten_aten` elsewhere.
    pub aten: String,
    /// The Rust module holding the kernels the yaml's `dispatch:` names (`crate::native`).
    pub kernel_module: String,
    /// The namespace when the file declares no function (normally taken from `func:`).
    pub namespace: String,
    /// `structured_inherits:` base names -> the Rust state type their meta returns.
    pub inherits: BTreeMap<String, String>,
    /// The extension trait carrying the Tensor methods out of tree (`TensorExt`).
    pub extension_trait: Option<String>,
    /// The declaration file as named in the generated headers.
    pub source_label: String,
    /// The FunctionsManual source whose helpers backward formulas call (autograd).
    pub functions_manual: Option<PathBuf>,
    /// How autograd code names ratten-autograd: `crate` inside it, `ratten_autograd` elsewhere.
    pub autograd_crate: String,
    /// The module of the operator handles autograd code registers and redispatches to
    /// (`ratten_aten::operators`, a library's `crate::generated::operators`).
    pub operators: String,
    /// ratten-aten's native_functions.yaml, whose operators an out-of-tree library's formulas
    /// call (`grad * scale` is `aten::mul.Scalar`).
    pub aten_native: Option<PathBuf>,
    /// The function the operator handles call before their first lookup, to keep the
    /// registrations linked (default: the generated `registration::ensure_linked`); a library
    /// with autograd kernels names one that links both (`crate::ensure_linked`).
    pub ensure_linked: Option<String>,
}

impl GenOptions {
    /// The options ratten-aten's own code is generated with.
    pub fn aten() -> GenOptions {
        let mut inherits = BTreeMap::new();
        inherits.insert(
            "TensorIteratorBase".to_string(),
            "crate::tensor_iterator::TensorIteratorBase".to_string(),
        );
        GenOptions {
            target: Target::Aten,
            aten: "crate".into(),
            kernel_module: "crate::native".into(),
            namespace: "aten".into(),
            inherits,
            extension_trait: None,
            source_label: "crates/ratten-aten/native_functions.yaml".into(),
            functions_manual: None,
            autograd_crate: "crate".into(),
            operators: "ratten_aten::operators".into(),
            aten_native: None,
            ensure_linked: None,
        }
    }

    /// Options for an out-of-tree crate: kernels in `kernel_module`, methods in `trait_name`.
    pub fn out_of_tree(namespace: &str, kernel_module: &str, trait_name: &str) -> GenOptions {
        GenOptions {
            target: Target::OutOfTree,
            aten: "ratten_aten".into(),
            kernel_module: kernel_module.into(),
            namespace: namespace.into(),
            inherits: BTreeMap::new(),
            extension_trait: Some(trait_name.into()),
            source_label: format!("native_functions.yaml ({namespace})"),
            functions_manual: None,
            autograd_crate: "ratten_autograd".into(),
            operators: "crate::generated::operators".into(),
            aten_native: None,
            ensure_linked: None,
        }
    }

    /// Options for an out-of-tree library's autograd code (its namespace, its operator
    /// handles at `crate::generated::operators`): `functions_manual` is ratten-autograd's
    /// FunctionsManual source and `aten_native` ratten-aten's native_functions.yaml, whose
    /// helpers and operators the library's formulas call.
    pub fn out_of_tree_autograd(
        namespace: &str,
        functions_manual: PathBuf,
        aten_native: PathBuf,
    ) -> GenOptions {
        GenOptions {
            target: Target::OutOfTreeAutograd,
            source_label: format!("native_functions.yaml and derivatives.yaml ({namespace})"),
            functions_manual: Some(functions_manual),
            aten_native: Some(aten_native),
            ..GenOptions::out_of_tree(namespace, "crate::kernels", "TensorExt")
        }
    }

    /// Options for ratten-py's bindings of ratten-aten's operators (`source_label` names the
    /// file they come from).
    pub fn python(source_label: &str) -> GenOptions {
        GenOptions {
            target: Target::Python,
            aten: "ratten_aten".into(),
            source_label: source_label.into(),
            ..GenOptions::aten()
        }
    }

    /// Options for ratten-autograd's code (ratten-aten named `ratten_aten`); `functions_manual`
    /// is the FunctionsManual source the formulas' helpers are read from.
    pub fn autograd(functions_manual: Option<PathBuf>) -> GenOptions {
        GenOptions {
            target: Target::Autograd,
            aten: "ratten_aten".into(),
            source_label: "crates/ratten-aten/native_functions.yaml and derivatives.yaml".into(),
            functions_manual,
            ..GenOptions::aten()
        }
    }

    /// What the model needs of these options.
    pub fn model(&self) -> ModelOptions {
        ModelOptions {
            aten: self.aten.clone(),
            kernel_module: self.kernel_module.clone(),
            namespace: self.namespace.clone(),
            inherits: self.inherits.clone(),
        }
    }
}

/// One generated file: its path inside the output directory and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    pub name: String,
    pub contents: String,
}

impl GeneratedFile {
    pub fn new(name: impl Into<String>, contents: impl AsRef<str>) -> GeneratedFile {
        GeneratedFile {
            name: name.into(),
            contents: writer::tidy(contents.as_ref()),
        }
    }
}

/// What an emitter reads.
pub struct EmitContext<'a> {
    pub nf: &'a NativeFunctions,
    pub model: &'a Model,
    pub opts: &'a GenOptions,
    /// ratten-aten's model when the target's operators are another library's
    /// (`GenOptions::aten_native`): the operators its formulas may call besides its own.
    pub aten_model: Option<&'a Model>,
}

/// One emitter: the files it writes for its targets.
pub struct Emitter {
    pub name: &'static str,
    pub targets: &'static [Target],
    /// The file or directory (ending in `/`) it writes, inside the output directory.
    pub path: &'static str,
    pub emit: fn(&EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>>,
}

const NATIVE: &[Target] = &[Target::Aten, Target::OutOfTree];
const AUTOGRAD: &[Target] = &[Target::Autograd, Target::OutOfTreeAutograd];

/// The registry: every emitter, what it writes where (see the module's table).
pub const EMITTERS: &[Emitter] = &[
    Emitter {
        name: "mod",
        targets: NATIVE,
        path: "",
        emit: emit_mod,
    },
    Emitter {
        name: "operators",
        targets: NATIVE,
        path: "operators/",
        emit: operators::emit,
    },
    Emitter {
        name: "functions",
        targets: NATIVE,
        path: "functions/",
        emit: functions::emit_functions,
    },
    Emitter {
        name: "methods",
        targets: &[Target::Aten],
        path: "methods/",
        emit: functions::emit_methods,
    },
    Emitter {
        name: "extension trait",
        targets: &[Target::OutOfTree],
        path: "methods.rs",
        emit: functions::emit_extension_trait,
    },
    Emitter {
        name: "backends",
        targets: NATIVE,
        path: "backends/",
        emit: backends::emit,
    },
    Emitter {
        name: "registration",
        targets: NATIVE,
        path: "registration/",
        emit: registration::emit,
    },
    Emitter {
        name: "python mod",
        targets: &[Target::Python],
        path: "mod.rs",
        emit: python::emit_mod,
    },
    Emitter {
        name: "python signatures",
        targets: &[Target::Python],
        path: "signatures.rs",
        emit: python::emit_signatures,
    },
    Emitter {
        name: "python dispatch",
        targets: &[Target::Python],
        path: "dispatch/",
        emit: python::emit_dispatch,
    },
    Emitter {
        name: "autograd mod",
        targets: AUTOGRAD,
        path: "mod.rs",
        emit: autograd::variable_type::emit_mod,
    },
    Emitter {
        name: "backward nodes",
        targets: AUTOGRAD,
        path: "functions/",
        emit: autograd::functions::emit,
    },
    Emitter {
        name: "autograd kernels",
        targets: AUTOGRAD,
        path: "variable_type/",
        emit: autograd::variable_type::emit,
    },
    Emitter {
        name: "inplace or view kernels",
        targets: AUTOGRAD,
        path: "inplace_or_view/",
        emit: autograd::inplace_or_view::emit,
    },
    Emitter {
        name: "autograd registration",
        targets: AUTOGRAD,
        path: "registration.rs",
        emit: autograd::variable_type::emit_registration,
    },
];

/// Generates every file of `opts.target` from a loaded declaration file; `derivatives`, when
/// given, supplies the model's differentiability information.
pub fn generate(
    nf: &NativeFunctions,
    derivatives: Option<&Derivatives>,
    opts: &GenOptions,
) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let model = Model::build(nf, derivatives, &opts.model())
        .map_err(|e| e.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    let aten_model = match &opts.aten_native {
        None if opts.target == Target::OutOfTreeAutograd => {
            return Err(vec![
                "out-of-tree autograd needs ratten-aten's native_functions.yaml, whose operators \
                 the formulas call (GenOptions::aten_native, --aten-native)"
                    .to_string(),
            ]);
        }
        Some(path) => {
            let (aten_nf, _) = load(path, None, None)?;
            let aten_opts = GenOptions {
                aten: opts.aten.clone(),
                ..GenOptions::aten()
            };
            let m = Model::build(&aten_nf, None, &aten_opts.model()).map_err(|e| {
                e.iter()
                    .map(|e| format!("{}: {e}", path.display()))
                    .collect::<Vec<_>>()
            })?;
            Some(m)
        }
        None => None,
    };
    let cx = EmitContext {
        nf,
        model: &model,
        opts,
        aten_model: aten_model.as_ref(),
    };
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for e in EMITTERS.iter().filter(|e| e.targets.contains(&opts.target)) {
        match (e.emit)(&cx) {
            Ok(fs) => {
                debug_assert!(fs.iter().all(|f| f.name.starts_with(e.path)));
                files.extend(fs);
            }
            Err(es) => errors.extend(es),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if opts.target.is_autograd() {
        // The translated formulas are single expressions of any depth: rustfmt lays them out
        // (the other emitters write rustfmt's layout themselves, Note [Generated code is
        // rustfmt-clean]).
        for f in &mut files {
            f.contents = rustfmt(&f.contents).map_err(|e| vec![format!("{}: {e}", f.name)])?;
        }
    }
    Ok(files)
}

/// `contents` as rustfmt lays it out (edition 2021, the workspace's rustfmt.toml).
fn rustfmt(contents: &str) -> Result<String, String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2021", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run rustfmt (needed to lay out the autograd code): {e}"))?;
    let mut stdin = child.stdin.take().ok_or("rustfmt: no stdin")?;
    let input = contents.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| format!("rustfmt failed: {e}"))?;
    writer
        .join()
        .map_err(|_| "rustfmt: writer thread panicked".to_string())?
        .map_err(|e| format!("rustfmt: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "rustfmt refused the generated code: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("rustfmt output: {e}"))
}

fn load(
    native: &Path,
    tags: Option<&Path>,
    derivatives: Option<&Path>,
) -> Result<(NativeFunctions, Option<Derivatives>), Vec<String>> {
    let tags = match tags {
        Some(p) => Some(Tags::load(p).map_err(|e| vec![e.to_string()])?),
        None => None,
    };
    let nf = NativeFunctions::load(native, tags.as_ref()).map_err(|e| vec![e.to_string()])?;
    let derivatives = match derivatives {
        Some(p) => Some(Derivatives::load(p).map_err(|e| vec![e.to_string()])?),
        None => None,
    };
    Ok((nf, derivatives))
}

/// Loads `native` (with `tags` and `derivatives` when given) and generates.
pub fn generate_from_path(
    native: &Path,
    tags: Option<&Path>,
    derivatives: Option<&Path>,
    opts: &GenOptions,
) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let (nf, d) = load(native, tags, derivatives)?;
    generate(&nf, d.as_ref(), opts)
}

/// Loads `native` and generates ratten-py's Python bindings of it.
pub fn generate_python_from_path(
    native: &Path,
    tags: Option<&Path>,
) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let (nf, _) = load(native, tags, None)?;
    // The label names the file independently of the working directory (the freshness test
    // and the CLI must produce the same header).
    let parts: Vec<String> = native
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let label = parts[parts.len().saturating_sub(3)..].join("/");
    generate(&nf, None, &GenOptions::python(&label))
}

/// The generated files of a previous run in `dir`: `.rs` files under it starting with the
/// `@generated` header.
fn previously_generated(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(d) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "rs")
                && std::fs::read_to_string(&p).is_ok_and(|t| t.starts_with(GENERATED_MARK))
            {
                if let Ok(rel) = p.strip_prefix(root) {
                    out.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Writes the files into `dir` (created if missing) and removes generated files no longer
/// generated; returns the paths written.
pub fn write_files(files: &[GeneratedFile], dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    for old in previously_generated(dir) {
        if !files.iter().any(|f| f.name == old) {
            std::fs::remove_file(dir.join(&old))?;
        }
    }
    let mut written = Vec::new();
    for f in files {
        let p = dir.join(&f.name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, &f.contents)?;
        written.push(p);
    }
    Ok(written)
}

/// The files in `dir` that differ from `files` (missing ones included), and the generated
/// files there that `files` no longer has: empty when fresh.
pub fn stale_files(files: &[GeneratedFile], dir: &Path) -> Vec<String> {
    let mut stale: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(dir.join(&f.name)).ok().as_deref() != Some(f.contents.as_str())
        })
        .map(|f| f.name.clone())
        .collect();
    stale.extend(
        previously_generated(dir)
            .into_iter()
            .filter(|old| !files.iter().any(|f| &f.name == old))
            .map(|old| format!("{old} (no longer generated)")),
    );
    stale
}

/// How every generated file starts.
pub const GENERATED_MARK: &str = "// @generated by `ratten-gen generate";

/// The header every generated file starts with.
pub fn header(opts: &GenOptions, what: &str) -> String {
    let flag = match opts.target {
        Target::Python => " --python",
        Target::Autograd | Target::OutOfTreeAutograd => " --autograd",
        Target::Aten | Target::OutOfTree => "",
    };
    format!(
        "{GENERATED_MARK}{flag}` from {}. Do not edit by hand.\n//! {what}\n",
        opts.source_label
    )
}

/// The lints the generated module tree allows (an inner attribute of its `mod.rs`): handle
/// types are named as torchgen names them (`add_Tensor`), and emitters import uniformly.
pub const ALLOWED_LINTS: &str = "#![allow(
    unused_imports,
    unused_mut,
    non_camel_case_types,
    non_snake_case,
    clippy::all
)]
";

/// `generated/prelude.rs`: the names every generated file of the native API imports.
fn prelude_file(opts: &GenOptions) -> String {
    let a = &opts.aten;
    format!(
        "{}\n\
         pub(crate) use {a}::structured::{{self, backend_select_key_set, Arg, MetaBase}};\n\
         pub(crate) use {a}::Tensor;\n\
         pub(crate) use ratten_core::{{Device, DispatchKeySet, Result, Scalar, ScalarType}};\n\
         pub(crate) use ratten_dispatch::{{Aliased, Operator, OperatorCell}};\n",
        header(opts, "The names every generated file imports.")
    )
}

/// The `use` lines of a generated file `depth` modules below the generated root (1 for
/// `operators/a.rs`): the prelude and the sibling modules `siblings` of the root, sorted as
/// rustfmt sorts them.
pub fn prelude(depth: usize, siblings: &[&str]) -> String {
    let up = "super::".repeat(depth);
    let mut lines = vec![format!("use {up}prelude::*;")];
    lines.extend(siblings.iter().map(|m| format!("use {up}{m};")));
    lines.sort();
    lines.join("\n")
}

/// The operators of the model by shard (Note [Generated file shards]), in declaration order
/// within each shard.
pub fn shards<'m>(
    ops: impl IntoIterator<Item = &'m OperatorRecord>,
) -> BTreeMap<String, Vec<&'m OperatorRecord>> {
    let ops: Vec<&OperatorRecord> = ops.into_iter().collect();
    let keys = shard_keys(ops.iter().map(|o| o.root_name.as_str()));
    let mut out: BTreeMap<String, Vec<&OperatorRecord>> = BTreeMap::new();
    for op in ops {
        out.entry(keys[&op.root_name].clone()).or_default().push(op);
    }
    out
}

/// A directory's `mod.rs`: its shards as private modules re-exported (`pub use shard_a::*;`),
/// so paths stay `operators::add_Tensor`. The modules are named `shard_<key>` (file `<key>.rs`)
/// so that no module hides an operator of the same name (`operators::t`).
pub fn shard_mod(header: &str, shards: &[String], extra: &str) -> String {
    let mut s = String::from(header);
    s.push('\n');
    for k in shards {
        s.push_str(&format!("#[path = \"{k}.rs\"]\nmod shard_{k};\n"));
    }
    s.push('\n');
    for k in shards {
        s.push_str(&format!("pub use shard_{k}::*;\n"));
    }
    if !extra.is_empty() {
        s.push('\n');
        s.push_str(extra);
    }
    s
}

fn emit_mod(cx: &EmitContext<'_>) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let mut s = header(
        cx.opts,
        &format!(
            "The generated operator API of namespace `{}` ({} overloads): see each module.",
            cx.model.namespace,
            cx.model.ops.len()
        ),
    );
    s.push('\n');
    s.push_str(ALLOWED_LINTS);
    s.push('\n');
    for m in [
        "backends",
        "functions",
        "methods",
        "operators",
        "prelude",
        "registration",
    ] {
        s.push_str(&format!("pub mod {m};\n"));
    }
    if let Some(t) = &cx.opts.extension_trait {
        s.push_str(&format!("\npub use methods::{t};\n"));
    }
    Ok(vec![
        GeneratedFile::new("mod.rs", s),
        GeneratedFile::new("prelude.rs", prelude_file(cx.opts)),
    ])
}
