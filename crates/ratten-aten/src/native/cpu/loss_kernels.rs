//! The CPU loops of `crate::native::loss`.
