//! One error type for all of ratten. Its kinds map one to one onto the Python exception
//! classes PyTorch raises, so the bindings can translate without guessing.

use std::fmt;

/// The Python exception class an error becomes (PyTorch's `c10::Error` subclasses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// `c10::Error` -> RuntimeError (TORCH_CHECK).
    Runtime,
    /// `c10::TypeError` -> TypeError (TORCH_CHECK_TYPE).
    Type,
    /// `c10::ValueError` -> ValueError (TORCH_CHECK_VALUE).
    Value,
    /// `c10::IndexError` -> IndexError (TORCH_CHECK_INDEX).
    Index,
    /// `c10::NotImplementedError` -> NotImplementedError (TORCH_CHECK_NOT_IMPLEMENTED).
    NotImplemented,
    /// Python's OverflowError, which torch's bindings let through from the interpreter's
    /// own integer conversions (`PyLong_AsUnsignedLongLong`).
    Overflow,
}

impl ErrorKind {
    /// The name of the Python exception class.
    pub fn python_name(self) -> &'static str {
        match self {
            ErrorKind::Runtime => "RuntimeError",
            ErrorKind::Type => "TypeError",
            ErrorKind::Value => "ValueError",
            ErrorKind::Index => "IndexError",
            ErrorKind::NotImplemented => "NotImplementedError",
            ErrorKind::Overflow => "OverflowError",
        }
    }
}

/// An error raised by ratten: a kind and PyTorch's message.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }
    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Runtime, message)
    }
    pub fn type_error(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Type, message)
    }
    pub fn value(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Value, message)
    }
    pub fn index(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Index, message)
    }
    pub fn not_implemented(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotImplemented, message)
    }
    pub fn overflow(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Overflow, message)
    }
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.python_name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `TORCH_CHECK(cond, msg...)`: returns a RuntimeError built lazily from the message.
#[macro_export]
macro_rules! torch_check {
    ($cond:expr, $($arg:tt)+) => {
        if !($cond) {
            return Err($crate::Error::runtime(format!($($arg)+)).into());
        }
    };
}

/// `TORCH_CHECK_INDEX`.
#[macro_export]
macro_rules! torch_check_index {
    ($cond:expr, $($arg:tt)+) => {
        if !($cond) {
            return Err($crate::Error::index(format!($($arg)+)).into());
        }
    };
}

/// `TORCH_CHECK_VALUE`.
#[macro_export]
macro_rules! torch_check_value {
    ($cond:expr, $($arg:tt)+) => {
        if !($cond) {
            return Err($crate::Error::value(format!($($arg)+)).into());
        }
    };
}

/// `TORCH_CHECK_TYPE`.
#[macro_export]
macro_rules! torch_check_type {
    ($cond:expr, $($arg:tt)+) => {
        if !($cond) {
            return Err($crate::Error::type_error(format!($($arg)+)).into());
        }
    };
}

/// `TORCH_CHECK_NOT_IMPLEMENTED`.
#[macro_export]
macro_rules! torch_check_not_implemented {
    ($cond:expr, $($arg:tt)+) => {
        if !($cond) {
            return Err($crate::Error::not_implemented(format!($($arg)+)).into());
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(x: i64) -> Result<i64> {
        torch_check!(x > 0, "expected a positive value, got {}", x);
        torch_check_index!(x < 10, "index {} is out of bounds", x);
        Ok(x)
    }

    #[test]
    fn kinds_map_to_python_classes() {
        assert_eq!(check(5), Ok(5));
        let e = check(-1).unwrap_err();
        assert_eq!(e.kind().python_name(), "RuntimeError");
        assert_eq!(e.to_string(), "expected a positive value, got -1");
        let e = check(11).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Index);
        assert_eq!(format!("{e:?}"), "IndexError: index 11 is out of bounds");
        assert_eq!(
            ErrorKind::NotImplemented.python_name(),
            "NotImplementedError"
        );
        assert_eq!(ErrorKind::Value.python_name(), "ValueError");
        assert_eq!(ErrorKind::Type.python_name(), "TypeError");
    }
}
