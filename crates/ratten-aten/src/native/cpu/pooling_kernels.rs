//! The CPU loops of `crate::native::pooling`.
