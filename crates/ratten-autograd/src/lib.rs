//! ratten's autograd (PyTorch's torch/csrc/autograd).

pub mod functions_manual;
