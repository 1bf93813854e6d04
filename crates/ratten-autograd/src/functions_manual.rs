//! PyTorch's FunctionsManual (torch/csrc/autograd/FunctionsManual.h/.cpp): the helpers the
//! derivative formulas of derivatives.yaml call, with PyTorch's names.
