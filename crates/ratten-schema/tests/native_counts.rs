//! Loads PyTorch's native_functions.yaml and tags.yaml and checks torchgen's counts.

use std::path::Path;

use ratten_schema::native::{NativeFunctions, SchemaKind};
use ratten_schema::tags::Tags;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/pytorch");

fn load() -> NativeFunctions {
    let tags = Tags::load(&Path::new(SHARED).join("tags.yaml")).unwrap();
    NativeFunctions::load(
        &Path::new(SHARED).join("native_functions.yaml"),
        Some(&tags),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn torchgen_counts() {
    let nf = load();
    for w in &nf.warnings {
        eprintln!("warning: {w}");
    }
    assert_eq!(nf.entry_count, 2590);
    assert_eq!(nf.functions.len(), 3110);
    assert_eq!(nf.functions.iter().filter(|f| f.structured).count(), 279);
    assert_eq!(
        nf.functions
            .iter()
            .filter(|f| f.structured_delegate.is_some())
            .count(),
        390
    );
    eprintln!(
        "groups {} operators {}",
        nf.groups().count(),
        nf.operator_count()
    );
    let add = nf.get(&"add.Tensor".parse_op()).unwrap();
    assert_eq!(add.kind(), SchemaKind::Functional);
}

trait ParseOp {
    fn parse_op(&self) -> ratten_schema::OperatorName;
}
impl ParseOp for str {
    fn parse_op(&self) -> ratten_schema::OperatorName {
        ratten_schema::OperatorName::parse(self).unwrap()
    }
}

#[test]
fn derivatives_match_native_functions() {
    use ratten_schema::derivatives::{Derivatives, FormulaKind};
    let nf = load();
    let d = Derivatives::load(&Path::new(SHARED).join("derivatives.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.entries.len(), 688);
    let m = d.match_native(&nf);
    for (_, e) in &m.unmatched {
        eprintln!("unmatched: {e}");
    }
    assert_eq!(m.matched.len(), 688);
    assert!(m.unmatched.is_empty());
    // add.Tensor: AddBackward0, saving alpha and the scalar types.
    let add = d
        .entries
        .iter()
        .find(|e| e.name.starts_with("add.Tensor("))
        .unwrap();
    assert_eq!(add.definitions[0].op.as_deref(), Some("AddBackward0"));
    let fwd = add.definitions[0]
        .formulas
        .iter()
        .filter(|f| f.kind == FormulaKind::Forward)
        .count();
    assert_eq!(fwd, 1);
    let mm = m
        .matched
        .iter()
        .find(|x| d.entries[x.entry].name.starts_with("add.Tensor("))
        .unwrap();
    assert_eq!(
        nf.functions[mm.canonical].func.name.to_string(),
        "add.Tensor"
    );
}
