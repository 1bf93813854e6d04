//! The losses (ATen's Loss.cpp, LossNLL.cpp).
