//! Dropout (ATen's Dropout.cpp).
