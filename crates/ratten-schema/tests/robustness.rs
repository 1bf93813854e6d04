//! Broken declaration files give located errors, never a panic.

use std::path::Path;

use ratten_schema::derivatives::Derivatives;
use ratten_schema::native::NativeFunctions;
use ratten_schema::tags::Tags;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/pytorch");

fn head(name: &str, bytes: usize) -> String {
    let text = std::fs::read_to_string(Path::new(SHARED).join(name)).unwrap();
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// Cuts the text at many places and mangles single bytes: each result either loads or
/// reports errors that name the file and a line.
#[test]
fn truncated_and_mangled_files_never_panic() {
    let native = head("native_functions.yaml", 40_000);
    let derivs = head("derivatives.yaml", 40_000);
    let tags = head("tags.yaml", 6_000);
    let file = Path::new("x.yaml");
    let mut errors = 0;
    for (text, which) in [(&native, 0), (&derivs, 1), (&tags, 2)] {
        let step = text.len() / 30;
        for i in 1..30 {
            let mut cut = i * step;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let mut variants = vec![text[..cut].to_string()];
            // Replace one byte with characters that matter to YAML or schemas.
            for c in [':', '(', '-', '\'', '[', ' '] {
                let mut t = text.clone();
                if t.is_char_boundary(cut) && t.is_char_boundary(cut + 1) {
                    t.replace_range(cut..cut + 1, &c.to_string());
                }
                variants.push(t);
            }
            for v in variants {
                let r = match which {
                    0 => NativeFunctions::parse(&v, file, None).map(|_| ()),
                    1 => Derivatives::parse(&v, file).map(|_| ()),
                    _ => Tags::parse(&v, file).map(|_| ()),
                };
                if let Err(e) = r {
                    errors += 1;
                    assert!(!e.0.is_empty());
                    for x in &e.0 {
                        assert_eq!(x.location.file, file);
                        assert!(x.location.line >= 1, "{x}");
                    }
                }
            }
        }
    }
    assert!(errors > 50, "{errors}");
}
