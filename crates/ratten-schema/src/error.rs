//! Errors of the declaration model: every one carries where it happened.

use std::fmt;
use std::path::PathBuf;

/// An error in a function schema string, with the 1-based line and column of the
/// offending token inside that string and what the parser expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// 1-based line inside the schema text.
    pub line: usize,
    /// 1-based column (in characters) inside the schema text.
    pub column: usize,
    /// What was expected, or what is wrong ("expected ')'", "unknown type specifier ...").
    pub message: String,
    /// The token found at that place ("end of input" at the end).
    pub found: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {} (found {})",
            self.line, self.column, self.message, self.found
        )
    }
}

impl std::error::Error for SchemaError {}

/// A place in a declaration file (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// An error in a declaration file (native_functions.yaml, tags.yaml, derivatives.yaml):
/// the file, line and column, and what is wrong or was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclError {
    pub location: Location,
    pub message: String,
}

impl DeclError {
    pub fn new(location: Location, message: impl Into<String>) -> Self {
        DeclError {
            location,
            message: message.into(),
        }
    }
}

impl fmt::Display for DeclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for DeclError {}

/// Several declaration errors found in one load (a load reports every error it can,
/// not only the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclErrors(pub Vec<DeclError>);

impl fmt::Display for DeclErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DeclErrors {}

impl From<DeclError> for DeclErrors {
    fn from(e: DeclError) -> Self {
        DeclErrors(vec![e])
    }
}
