//! ratten-gen: ratten's torchgen.
