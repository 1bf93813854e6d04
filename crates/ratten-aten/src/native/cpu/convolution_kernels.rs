//! The CPU loops of `crate::native::convolution`.
