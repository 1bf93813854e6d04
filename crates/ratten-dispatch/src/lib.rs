//! ratten-dispatch: the dispatcher (c10/core/dispatch).
