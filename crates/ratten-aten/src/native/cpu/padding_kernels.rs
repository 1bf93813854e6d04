//! The CPU loops of `crate::native::padding`.
