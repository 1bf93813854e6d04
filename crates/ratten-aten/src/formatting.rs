//! Printing tensors as torch prints them. (views helper)
