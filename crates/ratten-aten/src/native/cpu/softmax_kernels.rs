//! The CPU loops of `crate::native::softmax`.
