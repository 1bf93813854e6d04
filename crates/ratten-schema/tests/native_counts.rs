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
