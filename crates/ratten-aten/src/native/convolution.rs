//! Convolution (ATen's Convolution.cpp): the `convolution` entry point and `_convolution`'s decision.
