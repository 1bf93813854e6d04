//! Loading all declaration files at once.

use std::path::Path;

use crate::derivatives::{DerivativeMatches, Derivatives};
use crate::error::{DeclError, DeclErrors};
use crate::native::NativeFunctions;
use crate::tags::Tags;

/// Everything PyTorch declares about its operators.
#[derive(Debug, Clone)]
pub struct Declarations {
    pub tags: Option<Tags>,
    pub native: NativeFunctions,
    pub derivatives: Option<Derivatives>,
    /// Each derivatives.yaml entry's native function (when derivatives were loaded).
    pub matches: Option<DerivativeMatches>,
}

/// Loads native_functions.yaml (checked against tags.yaml when given) and, when given,
/// derivatives.yaml, matching its entries to the native functions. derivatives.yaml is
/// parsed on a second thread while native_functions.yaml is parsed. Every error of every
/// file is returned.
pub fn load_declarations(
    native: &Path,
    tags: Option<&Path>,
    derivatives: Option<&Path>,
) -> Result<Declarations, DeclErrors> {
    let (tags_r, native_r, derivs_r) = std::thread::scope(|s| {
        let d = derivatives.map(|p| s.spawn(move || Derivatives::load(p)));
        let tags_r = tags.map(Tags::load).transpose();
        let native_r = match &tags_r {
            Ok(t) => NativeFunctions::load(native, t.as_ref()),
            Err(_) => Err(DeclErrors(Vec::new())),
        };
        let derivs_r = d.map(|h| {
            h.join().unwrap_or_else(|_| {
                Err(DeclErrors(vec![DeclError::new(
                    crate::error::Location::default(),
                    "the derivatives.yaml loader panicked",
                )]))
            })
        });
        (tags_r, native_r, derivs_r)
    });
    let mut errors = Vec::new();
    let tags = tags_r.unwrap_or_else(|e| {
        errors.extend(e.0);
        None
    });
    let native = native_r.map_err(|e| errors.extend(e.0)).ok();
    let derivs = match derivs_r {
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => {
            errors.extend(e.0);
            None
        }
        None => None,
    };
    match native {
        Some(native) if errors.is_empty() => {
            let matches = derivs.as_ref().map(|d| d.match_native(&native));
            Ok(Declarations {
                tags,
                native,
                derivatives: derivs,
                matches,
            })
        }
        _ => Err(DeclErrors(errors)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_all_files_and_reports_all_errors() {
        let dir = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/pytorch"
        ));
        let d = load_declarations(
            &dir.join("native_functions.yaml"),
            Some(&dir.join("tags.yaml")),
            Some(&dir.join("derivatives.yaml")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(d.native.functions.len(), 3110);
        assert_eq!(d.matches.unwrap().matched.len(), 688);
        let e = load_declarations(
            Path::new("/nonexistent/n.yaml"),
            None,
            Some(Path::new("/nonexistent/d.yaml")),
        )
        .unwrap_err();
        assert_eq!(e.0.len(), 2);
        assert!(e.0.iter().all(|x| x.message.contains("cannot read file")));
    }
}
