//! Note [Python layers] (crates/ratten-py/src/python/mod.rs), checked: every module of the
//! Python layer names its layer on its doc's first line (`//! Layer N (...)`), and every path
//! to another of them (`super::m`, `crate::python::m`) goes to a lower layer, so the modules
//! import each other in no cycle. The generated dispatch functions (`crate::generated`) sit
//! between the argument parser and the generated tables, at [`GENERATED_LAYER`].
//!
//! Read from the sources, so it runs without the `python` feature.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layer of `crate::generated` (see the table in python/mod.rs).
const GENERATED_LAYER: u32 = 4;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let name = p
                .file_stem()
                .expect("a file name")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&p).expect("a readable source file");
            (name, text)
        })
        .collect();
    files.sort();
    files
}

/// The code of `text` without comments (line comments and doc comments; the Python layer has
/// no block comments), so that paths named in prose are not taken for imports.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment of every path `prefix::segment` in `code`, including each item of a
/// grouped `prefix::{a, b::c}`.
fn targets(code: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        // `foo_super::` or `xsuper::` is another path.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            out.extend(group[..end].split(',').map(ident).filter(|s| !s.is_empty()));
        } else {
            out.push(ident(rest));
        }
    }
    out
}

fn layer_of(name: &str, text: &str) -> u32 {
    let first = text.lines().next().unwrap_or("");
    let rest = first
        .strip_prefix("//! Layer ")
        .unwrap_or_else(|| panic!("python/{name}.rs: its doc must start with `//! Layer N (...)`"));
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("python/{name}.rs: no layer number in {first:?}"))
}

#[test]
fn python_modules_import_only_lower_layers() {
    let files = rust_files(&src().join("python"));
    let modules: BTreeMap<String, (u32, String)> = files
        .iter()
        .filter(|(name, _)| name != "mod")
        .map(|(name, text)| (name.clone(), (layer_of(name, text), code(text))))
        .collect();
    assert!(modules.len() >= 10, "python/ has {} modules", modules.len());
    let root = files
        .iter()
        .find(|(n, _)| n == "mod")
        .map(|(_, t)| code(t))
        .expect("python/mod.rs");
    let mut errors = Vec::new();
    for name in modules.keys() {
        if !root.contains(&format!("mod {name};")) {
            errors.push(format!("python/mod.rs does not declare `{name}`"));
        }
    }
    for (name, (layer, code)) in &modules {
        let used = targets(code, "super::")
            .into_iter()
            .chain(targets(code, "crate::python::"));
        // (An empty target is a glob, `super::*`, of a test module's parent.)
        for target in used.filter(|t| !t.is_empty()) {
            match modules.get(&target) {
                Some((l, _)) if l < layer => {}
                Some((l, _)) => errors.push(format!(
                    "python/{name}.rs (layer {layer}) uses `{target}` (layer {l}): only lower \
                     layers may be imported"
                )),
                None => errors.push(format!(
                    "python/{name}.rs uses `super::{target}`, which is not a module: nothing \
                     lives in python/mod.rs to be imported"
                )),
            }
        }
        if !targets(code, "crate::generated").is_empty() && *layer <= GENERATED_LAYER {
            errors.push(format!(
                "python/{name}.rs (layer {layer}) uses the generated code (layer \
                 {GENERATED_LAYER}), which imports the layers below it"
            ));
        }
    }
    // The generated code imports only what lies below it.
    for (name, text) in rust_files(&src().join("generated")) {
        for target in targets(&code(&text), "crate::python::") {
            match modules.get(&target) {
                Some((l, _)) if *l < GENERATED_LAYER => {}
                other => errors.push(format!(
                    "generated/{name}.rs uses python::{target} (layer {:?}); the generated code \
                     is layer {GENERATED_LAYER}",
                    other.map(|(l, _)| *l)
                )),
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn the_path_reader_sees_grouped_and_inline_paths() {
    let c = code(
        "use super::a::X;\nuse super::{b, c::Y};\nlet z = super::d::f(); // super::e\nfoo_super::g",
    );
    assert_eq!(targets(&c, "super::"), ["a", "b", "c", "d"]);
    assert_eq!(layer_of("m", "//! Layer 12 (things): more"), 12);
}
