//! ratten-gen: ratten's torchgen. It checks PyTorch-format declaration files (`ratten-gen
//! check`) and generates the operator API from them (`ratten-gen generate`): [`model`] is
//! the typed view of the declarations every emitter reads, [`codegen`] the emitters and the
//! registry of what each writes where.

pub mod check;
pub mod codegen;
pub mod model;
