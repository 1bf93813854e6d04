//! The CPU loops of `crate::native::normalization`.
