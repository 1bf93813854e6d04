//! src/generated/ is checked in; this fails when it no longer matches what
//! `ratten-gen generate --python` makes from ratten-aten's native_functions.yaml.

use std::path::Path;

use ratten_gen::codegen::{generate_python_from_path, stale_files};
use ratten_py::arg_parser::Parser;
use ratten_py::generated::signatures::{FUNCTIONS, METHODS};

#[test]
fn generated_bindings_are_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crates = root.parent().expect("crates/ratten-py has a parent");
    let yaml = crates.join("ratten-aten/native_functions.yaml");
    let files = generate_python_from_path(&yaml, None)
        .unwrap_or_else(|e| panic!("native_functions.yaml does not generate bindings: {e:?}"));
    assert!(files.iter().any(|f| f.name == "dispatch/mod.rs"));
    let stale = stale_files(&files, &root.join("src/generated"));
    assert!(
        stale.is_empty(),
        "src/generated is stale ({}); regenerate with:\n  cargo run -p ratten-gen -- generate --python --native crates/ratten-aten/native_functions.yaml --out crates/ratten-py/src/generated",
        stale.join(", ")
    );
}

#[test]
fn every_generated_signature_parses() {
    assert!(FUNCTIONS.iter().any(|b| b.name == "add"));
    assert!(METHODS.iter().any(|b| b.name == "add_"));
    for (list, method) in [(FUNCTIONS, false), (METHODS, true)] {
        for b in list {
            let p = Parser::from_signature_strings(b.name, b.signatures, method)
                .unwrap_or_else(|e| panic!("{}: {e}", b.name));
            assert_eq!(p.signatures.len(), b.signatures.len());
            for s in &p.signatures {
                assert_eq!(s.name, b.name, "signature names its binding");
                // Methods never take `self` or `out`.
                if method {
                    assert!(s.params.iter().all(|x| x.name != "self" && x.name != "out"));
                }
            }
        }
    }
}
