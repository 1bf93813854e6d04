//! crates/ratten-aten/derivatives.yaml: PyTorch's entries for the operators ratten-aten
//! declares, copied verbatim. Checked against PyTorch's file when it is beside the repository
//! (`../shared/pytorch/`, as CI has it); skipped otherwise.

use std::path::{Path, PathBuf};

use ratten_schema::derivatives::Derivatives;
use ratten_schema::native::NativeFunctions;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Each entry's text: its `- name:` line and the lines up to the next entry, without the
/// blank and comment lines that end it (they belong to what follows).
fn entry_blocks(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("- name:"))
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(k, &s)| {
            let end = starts.get(k + 1).copied().unwrap_or(lines.len());
            let mut block = &lines[s..end];
            while let [rest @ .., last] = block {
                if last.trim().is_empty() || last.trim_start().starts_with('#') {
                    block = rest;
                } else {
                    break;
                }
            }
            let name = block[0]["- name:".len()..].trim().to_string();
            (name, block.join("\n"))
        })
        .collect()
}

fn ratten_files() -> (NativeFunctions, Derivatives, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let nf = NativeFunctions::load(&dir.join("native_functions.yaml"), None).unwrap();
    let path = dir.join("derivatives.yaml");
    let d = Derivatives::load(&path).unwrap();
    (nf, d, std::fs::read_to_string(path).unwrap())
}

#[test]
fn every_entry_names_a_declared_function() {
    let (nf, d, _) = ratten_files();
    let m = d.match_native(&nf);
    assert!(m.unmatched.is_empty(), "{:?}", m.unmatched);
    assert_eq!(m.matched.len(), d.entries.len());
    assert!(d.entries.len() >= 70);
}

#[test]
fn derivatives_match_pytorch() {
    let shared = root().join("../shared/pytorch/derivatives.yaml");
    let Ok(pytorch_text) = std::fs::read_to_string(&shared) else {
        eprintln!("skipped: {} is absent", shared.display());
        return;
    };
    let (nf, ours, our_text) = ratten_files();
    let theirs = Derivatives::load(&shared).unwrap();
    let pytorch: std::collections::BTreeMap<String, String> =
        entry_blocks(&pytorch_text).into_iter().collect();
    // Every entry verbatim.
    let blocks = entry_blocks(&our_text);
    assert_eq!(blocks.len(), ours.entries.len());
    for (name, block) in &blocks {
        let Some(p) = pytorch.get(name) else {
            panic!("{name}: PyTorch's derivatives.yaml has no such entry");
        };
        assert_eq!(block, p, "{name} differs from PyTorch's entry");
    }
    // In PyTorch's order.
    let order: Vec<String> = pytorch.keys().cloned().collect();
    let positions: Vec<usize> = entry_blocks(&pytorch_text)
        .iter()
        .enumerate()
        .filter(|(_, (n, _))| blocks.iter().any(|(b, _)| b == n))
        .map(|(i, _)| i)
        .collect();
    let ours_in_theirs: Vec<usize> = blocks
        .iter()
        .map(|(n, _)| {
            let all = entry_blocks(&pytorch_text);
            all.iter().position(|(p, _)| p == n).unwrap()
        })
        .collect();
    assert_eq!(ours_in_theirs, positions, "entries out of PyTorch's order");
    assert!(order.len() > blocks.len());
    // Every PyTorch entry for a declared function is here.
    let m = theirs.match_native(&nf);
    for e in m.matched {
        let name = &theirs.entries[e.entry].name;
        assert!(
            blocks.iter().any(|(n, _)| n == name),
            "derivatives.yaml lacks PyTorch's entry for {name}"
        );
    }
    // The backward nodes are named as PyTorch names them (AddBackward0, ...).
    for e in &ours.entries {
        let t = theirs.entries.iter().find(|t| t.name == e.name).unwrap();
        let ops = |x: &ratten_schema::derivatives::DerivativeEntry| {
            x.definitions
                .iter()
                .map(|d| d.op.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(ops(e), ops(t), "{}: backward node names", e.name);
    }
}
