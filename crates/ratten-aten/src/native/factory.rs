//! Factories: empty, zeros, ones, full, arange, eye, from data. (core helper)
