//! src/generated/ is checked in; this fails when it no longer matches what `ratten-gen
//! generate` makes from native_functions.yaml and derivatives.yaml (regenerate with the
//! command in the message), and when rustfmt would change it.

use std::path::Path;

use ratten_gen::codegen::{generate_from_path, stale_files, GenOptions};

#[test]
fn generated_code_is_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = generate_from_path(
        &root.join("native_functions.yaml"),
        None,
        Some(&root.join("derivatives.yaml")),
        &GenOptions::aten(),
    )
    .unwrap_or_else(|e| panic!("native_functions.yaml does not generate: {e:?}"));
    assert!(files.iter().any(|f| f.name.starts_with("operators/")));
    let stale = stale_files(&files, &root.join("src/generated"));
    assert!(
        stale.is_empty(),
        "src/generated is stale ({}); regenerate with:\n  cargo run -p ratten-gen -- generate --aten --native crates/ratten-aten/native_functions.yaml --derivatives crates/ratten-aten/derivatives.yaml --out crates/ratten-aten/src/generated",
        stale.join(", ")
    );
}
