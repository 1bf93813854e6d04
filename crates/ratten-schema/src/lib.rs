//! ratten-schema: the model of PyTorch operator declarations (no tensors here).
