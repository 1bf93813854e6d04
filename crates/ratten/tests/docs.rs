//! The repository's documents stay true to the tree: every path ARCHITECTURE.md and README.md
//! name exists, README names nothing outside the repository, and the LICENSE file the
//! workspace's Cargo.toml declares is there. (README's Rust examples are compiled and run as
//! doctests of this crate: see `ReadmeDoctests` in src/lib.rs.)

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(repo_root().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The spans between backticks, in order (fenced blocks are skipped: they hold commands and
/// code, whose paths the doctests and CI exercise).
fn code_spans(doc: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut in_fence = false;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            spans.push(inside.to_string());
        }
    }
    spans
}

/// A span names a path in the tree when it is one word of path characters with a `/` and a
/// first component that is a top-level entry of the repository (`crates/...`, `python/...`).
fn named_paths(doc: &str) -> Vec<String> {
    let root = repo_root();
    code_spans(doc)
        .into_iter()
        .filter(|s| {
            s.contains('/')
                && !s.contains("://")
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-./*".contains(c))
        })
        .filter(|s| {
            let first = s.split('/').next().unwrap_or_default();
            !first.is_empty() && root.join(first).exists()
        })
        .collect()
}

fn missing(paths: &[String]) -> Vec<String> {
    let root = repo_root();
    paths
        .iter()
        .filter(|p| {
            // `native/cpu/*.rs`-style globs name a directory's files: the directory must exist.
            let p = p.split('*').next().unwrap_or_default();
            !root.join(p.trim_end_matches('/')).exists()
        })
        .cloned()
        .collect()
}

#[test]
fn every_path_architecture_names_exists() {
    let doc = read("ARCHITECTURE.md");
    let paths = named_paths(&doc);
    assert!(
        paths.len() >= 20,
        "ARCHITECTURE.md is a code map: expected it to name the tree's paths, found {paths:?}"
    );
    let gone = missing(&paths);
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {gone:?}"
    );
}

#[test]
fn every_path_readme_names_exists() {
    let doc = read("README.md");
    let gone = missing(&named_paths(&doc));
    assert!(
        gone.is_empty(),
        "README.md names paths that do not exist: {gone:?}"
    );
}

#[test]
fn readme_names_nothing_outside_the_repository() {
    let doc = read("README.md");
    let outside: Vec<&str> = doc
        .lines()
        .filter(|l| l.contains("../") || l.contains("/work/"))
        .collect();
    assert!(
        outside.is_empty(),
        "README.md's examples must work from a fresh clone; these lines leave it: {outside:?}"
    );
}

#[test]
fn the_declared_license_file_exists() {
    let manifest = read("Cargo.toml");
    assert!(
        manifest.contains("license = \"BSD-3-Clause\""),
        "the workspace declares its license"
    );
    let license = read("LICENSE");
    assert!(
        license.starts_with("BSD 3-Clause License"),
        "LICENSE holds the license Cargo.toml names"
    );
}

#[test]
fn the_documents_speak_of_the_project_only() {
    // History lives in git; the documents describe what is.
    for name in ["ARCHITECTURE.md", "README.md"] {
        let doc = read(name).to_lowercase();
        for word in ["session ", "sessions "] {
            assert!(
                !doc.contains(word),
                "{name} speaks of its development ({word:?})"
            );
        }
    }
}
