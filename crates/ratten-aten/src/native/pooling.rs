//! Pooling (ATen's Pooling.cpp, DilatedMaxPool2d.cpp, AveragePool2d.cpp, AdaptiveAveragePooling.cpp).
