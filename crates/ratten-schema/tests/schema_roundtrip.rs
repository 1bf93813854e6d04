//! Round-trips every schema of PyTorch's declaration files.

use ratten_schema::FunctionSchema;

const NATIVE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/pytorch/native_functions.yaml"
);

/// The `func:` lines, read textually so that this test depends on the schema parser only.
fn funcs() -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(NATIVE).expect("shared/pytorch/native_functions.yaml");
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            l.strip_prefix("- func: ")
                .map(|f| (i + 1, f.trim().to_string()))
        })
        .collect()
}

#[test]
fn every_native_schema_round_trips() {
    let funcs = funcs();
    assert_eq!(funcs.len(), 2590);
    let mut c10_same_text = 0;
    for (line, text) in &funcs {
        let s = FunctionSchema::parse(text).unwrap_or_else(|e| panic!("line {line}: {text}: {e}"));
        let printed = s.to_string();
        let back = FunctionSchema::parse(&printed)
            .unwrap_or_else(|e| panic!("line {line}: reparse of {printed}: {e}"));
        assert_eq!(back, s, "line {line}: parse(print(s)) != s for {printed}");
        assert_eq!(
            back.to_string(),
            printed,
            "line {line}: printing is not stable"
        );
        // torchgen's spelling gives the declaration back exactly.
        assert_eq!(s.to_source_string(), *text, "line {line}");
        if printed == *text {
            c10_same_text += 1;
        }
    }
    // c10 prints most declarations unchanged; the others differ only by defaults it
    // normalises (1e-05, 'none', contiguous_format, Mean, ...) and Dimname -> str.
    assert!(c10_same_text > 2000, "{c10_same_text}");
}

#[test]
fn every_derivatives_schema_round_trips() {
    use ratten_schema::derivatives::Derivatives;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/pytorch/derivatives.yaml"
    );
    let d = Derivatives::load(std::path::Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.entries.len(), 688);
    for e in &d.entries {
        let printed = e.schema.to_string();
        let back = FunctionSchema::parse(&printed)
            .unwrap_or_else(|err| panic!("{}: {printed}: {err}", e.loc));
        assert_eq!(back, e.schema, "{}", e.loc);
        assert_eq!(e.schema.to_source_string(), e.name, "{}", e.loc);
    }
}

#[test]
fn generated_schemas_round_trip() {
    use ratten_schema::native::NativeFunctions;
    let nf =
        NativeFunctions::load(std::path::Path::new(NATIVE), None).unwrap_or_else(|e| panic!("{e}"));
    for f in &nf.functions[nf.entry_count..] {
        let q = f.qualified_schema();
        let printed = q.to_string();
        assert!(printed.starts_with("aten::"), "{printed}");
        assert_eq!(FunctionSchema::parse(&printed).unwrap(), q, "{printed}");
        assert_eq!(FunctionSchema::parse(&q.to_source_string()).unwrap(), q);
    }
}
