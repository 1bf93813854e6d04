//! The model of PyTorch's own native_functions.yaml (../shared/pytorch/, beside the
//! repository as CI has it; skipped when absent): every overload maps to Rust types or gets a
//! named refusal.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ratten_gen::codegen::GenOptions;
use ratten_gen::model::types::Refusal;
use ratten_gen::model::{name_clashes, Model};
use ratten_schema::derivatives::Derivatives;
use ratten_schema::native::NativeFunctions;
use ratten_schema::tags::Tags;

fn shared(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/pytorch"
    ))
    .join(name)
}

#[test]
fn every_pytorch_overload_maps_or_is_refused_by_name() {
    let native = shared("native_functions.yaml");
    if !native.exists() {
        eprintln!("skipped: {} is absent", native.display());
        return;
    }
    let tags = Tags::load(&shared("tags.yaml")).unwrap();
    let nf = NativeFunctions::load(&native, Some(&tags)).unwrap();
    let d = Derivatives::load(&shared("derivatives.yaml")).unwrap();
    let records = Model::records(&nf, Some(&d), &GenOptions::aten().model());
    assert_eq!(records.len(), nf.functions.len());
    assert_eq!(records.len(), 3110);
    let mut by_reason: BTreeMap<&str, usize> = BTreeMap::new();
    let mut examples: BTreeMap<&str, String> = BTreeMap::new();
    let mut mapped = Vec::new();
    for r in &records {
        match r {
            Ok(op) => mapped.push(op.clone()),
            Err(e) => {
                let reason = e.reason.reason();
                *by_reason.entry(reason).or_default() += 1;
                examples.entry(reason).or_insert_with(|| e.to_string());
                // Every message names the overload and, for a type, the type.
                assert!(e.to_string().starts_with(&e.overload), "{e}");
                if let Refusal::NoRustType { ty, .. } | Refusal::UnsupportedReturn { ty } =
                    &e.reason
                {
                    assert!(e.to_string().contains(&format!("`{ty}`")), "{e}");
                }
            }
        }
    }
    let refused: usize = by_reason.values().sum();
    let differentiable = mapped
        .iter()
        .filter(|o| o.differentiability.is_some())
        .count();
    let views = mapped.iter().filter(|o| o.view.is_some()).count();
    println!(
        "PyTorch native_functions.yaml: {} overloads, {} mapped ({differentiable} with derivatives.yaml information, {views} views), {refused} refused",
        records.len(),
        mapped.len()
    );
    for (reason, n) in &by_reason {
        println!("  {n:4} {reason}: e.g. {}", examples[reason]);
    }
    let clashes = name_clashes(&mapped);
    println!(
        "  {} Rust name clashes among the mapped overloads",
        clashes.len()
    );
    for c in clashes.iter().take(5) {
        println!("    e.g. {c}");
    }
    assert_eq!(mapped.len() + refused, records.len());
    // What ratten refuses is a small part of PyTorch: streams, quantization, arities beyond
    // ratten-dispatch's tuples, three generated functionals without their sibling.
    assert!(mapped.len() >= 3097, "{} mapped", mapped.len());
}
