//! The CPU loops of `crate::native::upsample`.
