//! ratten-gen: ratten's torchgen. Today it checks PyTorch-format declaration files
//! (`ratten-gen check`); code generation builds on the same loaded model.

pub mod check;
pub mod codegen;
