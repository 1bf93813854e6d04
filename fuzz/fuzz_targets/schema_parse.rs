//! Fuzzes the schema parser and printer: no input may panic; printing is stable (a
//! printed schema that reads back prints the same); the declaration spelling of a
//! schema, when it reads back, gives the same schema.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ratten_schema::{FunctionSchema, OperatorName};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = OperatorName::parse(text);
    let _ = FunctionSchema::parse_signature(text);
    let Ok(schema) = FunctionSchema::parse(text) else {
        return;
    };
    let printed = schema.to_string();
    if let Ok(back) = FunctionSchema::parse(&printed) {
        assert_eq!(
            back.to_string(),
            printed,
            "printing is not stable for {text:?}"
        );
    }
    let source = schema.to_source_string();
    if let Ok(back) = FunctionSchema::parse(&source) {
        assert_eq!(
            back, schema,
            "the declaration spelling {source:?} of {text:?} reads back differently"
        );
    }
});
