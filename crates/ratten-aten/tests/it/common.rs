//! Helpers the modules of this test binary share.

use std::cmp::Ordering;

use ratten_aten::Tensor;
use ratten_core::{ErrorKind, ScalarType};

/// A tensor's elements as float64, in logical (row-major) order.
pub fn values(t: &Tensor) -> Vec<f64> {
    t.to_dtype(ScalarType::Double)
        .unwrap()
        .contiguous()
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

/// The message of an error the call must return.
pub fn msg<T: std::fmt::Debug>(r: ratten_core::Result<T>) -> String {
    r.unwrap_err().message().to_string()
}

/// The kind and message of an error the call must return.
pub fn err<T: std::fmt::Debug>(r: ratten_core::Result<T>) -> (ErrorKind, String) {
    let e = r.unwrap_err();
    (e.kind(), e.message().to_string())
}

/// The number of elements of a shape.
pub fn numel(s: &[i64]) -> usize {
    s.iter().product::<i64>() as usize
}

/// The coordinates of the row-major linear index `lin` in `sizes`.
pub fn unravel(mut lin: usize, sizes: &[i64]) -> Vec<i64> {
    let mut c = vec![0i64; sizes.len()];
    for d in (0..sizes.len()).rev() {
        c[d] = (lin % sizes[d] as usize) as i64;
        lin /= sizes[d] as usize;
    }
    c
}

/// The row-major linear index of coordinates `c` in `sizes`.
pub fn ravel(c: &[i64], sizes: &[i64]) -> usize {
    c.iter()
        .zip(sizes)
        .fold(0usize, |a, (&i, &s)| a * s as usize + i as usize)
}

/// torch's order: NaN above everything, -0.0 equal to 0.0.
pub fn torch_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap(),
    }
}

/// The same value, bit for bit (NaN equal to NaN, -0.0 not equal to 0.0).
pub fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// `got` is `want`, element by element in the sense of [`same`].
pub fn assert_same(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            same(g, w),
            "{what}: element {i}: got {g}, want {w}\n{got:?}\n{want:?}"
        );
    }
}
