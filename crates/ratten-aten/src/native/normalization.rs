//! layer_norm, batch_norm, group_norm (ATen's layer_norm.cpp, Normalization.cpp, group_norm.cpp).
