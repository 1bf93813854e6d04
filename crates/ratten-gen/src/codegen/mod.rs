//! ratten's torchgen: Rust code from a native_functions.yaml.
//!
//! One [`model::Model`] (the Rust signature of every overload, its kernels per dispatch key) is
//! computed from ratten-schema's `NativeFunctions`; independent emitters each write one file
//! from it:
//!
//! | emitter | file | PyTorch counterpart |
//! | --- | --- | --- |
//! | [`operators`] | `operators.rs` | `Operators.h` (`at::_ops::add_Tensor::call/redispatch`) |
//! | [`functions`] | `functions.rs` | `Functions.h` (`at::add`) |
//! | [`functions`] (methods) | `methods.rs` | `TensorBody.h` (`Tensor::add`) |
//! | [`backends`] | `backends.rs` | `RegisterCPU.cpp` wrappers, `CPUFunctions.h` (`at::cpu::add`), `RegisterMeta.cpp` |
//! | [`registration`] | `registration.rs` | `RegisterSchema.cpp`, the `TORCH_LIBRARY_IMPL` blocks |
//!
//! Later layers (autograd kernels from derivatives.yaml, ADInplaceOrView, the tracer, Python
//! bindings) are further emitters over the same model: each is a function
//! `fn emit(model: &Model, opts: &GenOptions) -> String` added to [`generate`].

pub mod backends;
pub mod functions;
pub mod model;
pub mod operators;
pub mod python;
pub mod registration;
pub mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ratten_schema::native::NativeFunctions;
use ratten_schema::tags::Tags;

pub use model::Model;

/// What differs between ratten-aten's own generated code and an out-of-tree crate's.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// How generated code names ratten-aten: `crate` inside it, `ratten_aten` elsewhere.
    pub aten: String,
    /// The Rust module holding the kernels the yaml's `dispatch:` names (`crate::native`).
    pub kernel_module: String,
    /// The namespace when the file declares no function (normally taken from `func:`).
    pub namespace: String,
    /// `structured_inherits:` base names -> the Rust state type their meta returns.
    pub inherits: BTreeMap<String, String>,
    /// `None`: methods are inherent `impl Tensor` methods (only possible inside ratten-aten).
    /// `Some(name)`: methods go in an extension trait of that name, implemented for Tensor.
    pub extension_trait: Option<String>,
    /// The declaration file as named in the generated headers.
    pub source_label: String,
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
            aten: "crate".into(),
            kernel_module: "crate::native".into(),
            namespace: "aten".into(),
            inherits,
            extension_trait: None,
            source_label: "crates/ratten-aten/native_functions.yaml".into(),
        }
    }

    /// Options for an out-of-tree crate: kernels in `kernel_module`, methods in `trait_name`.
    pub fn out_of_tree(namespace: &str, kernel_module: &str, trait_name: &str) -> GenOptions {
        GenOptions {
            aten: "ratten_aten".into(),
            kernel_module: kernel_module.into(),
            namespace: namespace.into(),
            inherits: BTreeMap::new(),
            extension_trait: Some(trait_name.into()),
            source_label: format!("native_functions.yaml ({namespace})"),
        }
    }
}

/// One generated file: its name inside the output directory and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    pub name: String,
    pub contents: String,
}

/// Generates every file from a loaded declaration file.
pub fn generate(
    nf: &NativeFunctions,
    opts: &GenOptions,
) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let model = Model::build(nf, opts)?;
    let mut files = vec![
        GeneratedFile {
            name: "mod.rs".into(),
            contents: emit_mod(&model, opts),
        },
        GeneratedFile {
            name: "operators.rs".into(),
            contents: operators::emit(&model, opts),
        },
        GeneratedFile {
            name: "functions.rs".into(),
            contents: functions::emit_functions(&model, opts),
        },
        GeneratedFile {
            name: "methods.rs".into(),
            contents: functions::emit_methods(&model, opts),
        },
        GeneratedFile {
            name: "backends.rs".into(),
            contents: backends::emit(&model, opts),
        },
        GeneratedFile {
            name: "registration.rs".into(),
            contents: registration::emit(&model, opts),
        },
    ];
    for f in &mut files {
        // One trailing newline, no trailing spaces: what rustfmt would leave.
        let mut s: String = f
            .contents
            .lines()
            .map(|l| l.trim_end().to_string() + "\n")
            .collect();
        while s.ends_with("\n\n") {
            s.pop();
        }
        f.contents = s;
    }
    Ok(files)
}

/// Loads `native` (with `tags` when given) and generates.
pub fn generate_from_path(
    native: &Path,
    tags: Option<&Path>,
    opts: &GenOptions,
) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let tags = match tags {
        Some(p) => Some(Tags::load(p).map_err(|e| vec![e.to_string()])?),
        None => None,
    };
    let nf = NativeFunctions::load(native, tags.as_ref()).map_err(|e| vec![e.to_string()])?;
    generate(&nf, opts)
}

/// Loads `native` and generates ratten-py's Python bindings ([`python::generate_python`]).
pub fn generate_python_from_path(
    native: &Path,
    tags: Option<&Path>,
) -> Result<Vec<GeneratedFile>, Vec<String>> {
    let tags = match tags {
        Some(p) => Some(Tags::load(p).map_err(|e| vec![e.to_string()])?),
        None => None,
    };
    let nf = NativeFunctions::load(native, tags.as_ref()).map_err(|e| vec![e.to_string()])?;
    // The label names the file independently of the working directory (the freshness test
    // and the CLI must produce the same header).
    let parts: Vec<String> = native
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let label = parts[parts.len().saturating_sub(3)..].join("/");
    python::generate_python(&nf, &label)
}

/// Writes the files into `dir` (created if missing); returns the paths written.
pub fn write_files(files: &[GeneratedFile], dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for f in files {
        let p = dir.join(&f.name);
        std::fs::write(&p, &f.contents)?;
        written.push(p);
    }
    Ok(written)
}

/// The files in `dir` that differ from `files` (missing ones included): empty when fresh.
pub fn stale_files(files: &[GeneratedFile], dir: &Path) -> Vec<String> {
    files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(dir.join(&f.name)).ok().as_deref() != Some(f.contents.as_str())
        })
        .map(|f| f.name.clone())
        .collect()
}

/// The header every generated file starts with.
pub fn header(opts: &GenOptions, what: &str) -> String {
    format!(
        "// @generated by `ratten-gen generate` from {}. Do not edit by hand.\n\
         //! {what}\n",
        opts.source_label
    )
}

/// The `use` lines shared by the generated files.
pub fn prelude(opts: &GenOptions) -> String {
    let a = &opts.aten;
    format!(
        "#![allow(unused_imports, unused_mut, non_snake_case, clippy::all)]\n\
         \n\
         use std::sync::OnceLock;\n\
         \n\
         use {a}::structured::{{self, Arg, MetaBase}};\n\
         use {a}::Tensor;\n\
         use ratten_core::{{Device, DispatchKeySet, Result, Scalar, ScalarType}};\n\
         use ratten_dispatch::{{Aliased, CppFunction, TypedOperatorHandle}};\n\
         \n\
         use super::{{backends, operators}};\n"
    )
}

fn emit_mod(model: &Model, opts: &GenOptions) -> String {
    let mut s = format!(
        "// @generated by `ratten-gen generate` from {}. Do not edit by hand.\n\
         //! The generated operator API of namespace `{}` ({} overloads): see each module.\n\
         \n\
         pub mod backends;\n\
         pub mod functions;\n\
         pub mod methods;\n\
         pub mod operators;\n\
         pub mod registration;\n",
        opts.source_label,
        model.namespace,
        model.ops.len()
    );
    if let Some(t) = &opts.extension_trait {
        s.push_str(&format!("\npub use methods::{t};\n"));
    }
    s
}
