//! softmax and log_softmax (ATen's SoftMax.cpp).
