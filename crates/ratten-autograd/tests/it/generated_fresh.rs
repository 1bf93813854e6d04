//! src/generated/ is checked in; this fails when it no longer matches what `ratten-gen
//! generate --autograd` makes from ratten-aten's native_functions.yaml and derivatives.yaml
//! with this crate's FunctionsManual (regenerate with the command in the message).

use std::path::Path;

use ratten_gen::codegen::{generate_from_path, stale_files, GenOptions};

#[test]
fn generated_code_is_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let aten = root.join("../ratten-aten");
    let files = generate_from_path(
        &aten.join("native_functions.yaml"),
        None,
        Some(&aten.join("derivatives.yaml")),
        &GenOptions::autograd(Some(root.join("src/functions_manual.rs"))),
    )
    .unwrap_or_else(|e| panic!("the autograd code does not generate: {e:?}"));
    assert!(files.iter().any(|f| f.name == "registration.rs"));
    let stale = stale_files(&files, &root.join("src/generated"));
    assert!(
        stale.is_empty(),
        "src/generated is stale ({}); regenerate with:\n  cargo run -p ratten-gen -- generate --autograd --native crates/ratten-aten/native_functions.yaml --derivatives crates/ratten-aten/derivatives.yaml --out crates/ratten-autograd/src/generated",
        stale.join(", ")
    );
}
