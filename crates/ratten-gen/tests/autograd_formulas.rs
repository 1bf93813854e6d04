//! The formula translator over ratten's derivatives.yaml: how many backward formulas it
//! translates, and why it refuses the others.

use std::path::{Path, PathBuf};

use ratten_gen::codegen::autograd::coverage::coverage;
use ratten_gen::codegen::autograd::functions::MANUAL_FORMULAS;
use ratten_gen::codegen::autograd::manual::ManualSignatures;
use ratten_gen::codegen::{GenOptions, Model};
use ratten_schema::derivatives::Derivatives;
use ratten_schema::native::NativeFunctions;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ratten_model() -> (Model, Derivatives) {
    let aten = root().join("crates/ratten-aten");
    let nf = NativeFunctions::load(&aten.join("native_functions.yaml"), None).unwrap();
    let d = Derivatives::load(&aten.join("derivatives.yaml")).unwrap();
    let model = Model::build(&nf, Some(&d), &GenOptions::aten().model()).unwrap();
    (model, d)
}

#[test]
fn ratten_backward_formulas_translate() {
    let (model, d) = ratten_model();
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/functions_manual.rs"),
    )
    .unwrap();
    let manual = ManualSignatures::parse(&fixture);
    assert!(manual.skipped.is_empty(), "{:?}", manual.skipped);
    let with = coverage(&model, &d, &manual);
    println!("with the fixture's helpers:\n{}", with.summary());
    let without = coverage(&model, &d, &ManualSignatures::default());
    println!("without helpers:\n{}", without.summary());
    let total = with.results.len();
    assert!(total > 150, "{total} formulas");
    // Every formula translates, but those written by hand beside it (MANUAL_FORMULAS).
    assert_eq!(with.missing_helpers(), 0, "{}", with.summary());
    for (r, e) in with.refused() {
        assert!(
            MANUAL_FORMULAS.iter().any(|(_, yaml, _)| *yaml == r.text),
            "{} [{}]: {e}",
            r.entry,
            r.vars.join(", ")
        );
    }
}
