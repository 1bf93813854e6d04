//! Interpolation (ATen's UpSampleNearest2d.cpp, UpSampleBilinear2d.cpp).
