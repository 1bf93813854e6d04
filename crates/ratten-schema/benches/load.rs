//! Loading and validating PyTorch's native_functions.yaml (with tags.yaml), autogen
//! expansion and grouping, plus derivatives.yaml and its matching.

use criterion::{criterion_group, criterion_main, Criterion};
use ratten_schema::derivatives::Derivatives;
use ratten_schema::load_declarations;
use ratten_schema::native::NativeFunctions;
use ratten_schema::tags::Tags;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/pytorch");

/// The directory of the PyTorch files: `RATTEN_PYTORCH_DIR`, or shared/pytorch beside the
/// repository.
fn dir() -> std::path::PathBuf {
    std::env::var_os("RATTEN_PYTORCH_DIR").map_or_else(|| SHARED.into(), Into::into)
}

/// One thread, file after file.
fn load_sequential() -> usize {
    let dir = dir();
    let tags = Tags::load(&dir.join("tags.yaml")).expect("tags.yaml");
    let nf = NativeFunctions::load(&dir.join("native_functions.yaml"), Some(&tags))
        .expect("native_functions.yaml");
    let d = Derivatives::load(&dir.join("derivatives.yaml")).expect("derivatives.yaml");
    let m = d.match_native(&nf);
    assert!(m.unmatched.is_empty());
    nf.functions.len() + m.matched.len()
}

/// `load_declarations`: derivatives.yaml parsed on a second thread.
fn load_all() -> usize {
    let dir = dir();
    let d = load_declarations(
        &dir.join("native_functions.yaml"),
        Some(&dir.join("tags.yaml")),
        Some(&dir.join("derivatives.yaml")),
    )
    .expect("declarations");
    d.native.functions.len() + d.matches.map_or(0, |m| m.matched.len())
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("load");
    g.sample_size(20);
    g.bench_function("native_tags_derivatives", |b| b.iter(load_all));
    g.bench_function("native_tags_derivatives_one_thread", |b| {
        b.iter(load_sequential)
    });
    let dir = dir();
    let tags = Tags::load(&dir.join("tags.yaml")).expect("tags.yaml");
    g.bench_function("native_functions_only", |b| {
        b.iter(|| {
            NativeFunctions::load(&dir.join("native_functions.yaml"), Some(&tags))
                .expect("native_functions.yaml")
                .functions
                .len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
