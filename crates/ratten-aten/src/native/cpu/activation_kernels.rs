//! The CPU loops of `crate::native::activation`.
