//! Helpers the modules of this test binary share.

use ratten_aten::Tensor;

/// A tensor's elements as float64, in logical (row-major) order, read one by one through
/// the dispatcher.
pub fn values(t: &Tensor) -> Vec<f64> {
    let flat = t.contiguous().unwrap().reshape(&[-1]).unwrap();
    (0..flat.numel())
        .map(|i| {
            flat.select(0, i)
                .unwrap()
                .item()
                .unwrap()
                .to_double()
                .unwrap()
        })
        .collect()
}

/// `a` and `b` agree to 1e-9 (relative to `b`), element by element.
pub fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-9 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}
