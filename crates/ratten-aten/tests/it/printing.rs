//! `Display` of tensors against the text torch prints for the same tensors.

use num_complex::Complex;
use ratten_aten::Tensor;
use ratten_core::{Device, Element, ScalarType};

fn t<T: Element>(v: Vec<T>, sizes: &[i64]) -> Tensor {
    Tensor::from_vec(v, sizes).unwrap()
}

fn arange_f32(n: usize) -> Vec<f32> {
    (0..n).map(|x| x as f32).collect()
}

#[test]
fn floats() {
    // torch.tensor([[1., 2.], [3., 4.]])
    assert_eq!(
        t(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).to_string(),
        "tensor([[1., 2.],\n        [3., 4.]])"
    );
    // torch.tensor([1.5, 2.25])
    assert_eq!(
        t(vec![1.5f32, 2.25], &[2]).to_string(),
        "tensor([1.5000, 2.2500])"
    );
    // torch.tensor([-1.5, 2.])
    assert_eq!(
        t(vec![-1.5f32, 2.0], &[2]).to_string(),
        "tensor([-1.5000,  2.0000])"
    );
    // torch.tensor([1e-5, 1.])
    assert_eq!(
        t(vec![1e-5f32, 1.0], &[2]).to_string(),
        "tensor([1.0000e-05, 1.0000e+00])"
    );
    // torch.tensor([1., 1e5]): integers with ratio > 1000 go scientific
    assert_eq!(
        t(vec![1.0f32, 1e5], &[2]).to_string(),
        "tensor([1.0000e+00, 1.0000e+05])"
    );
    // torch.tensor([100., 2000.])
    assert_eq!(
        t(vec![100.0f32, 2000.0], &[2]).to_string(),
        "tensor([ 100., 2000.])"
    );
    // torch.tensor([float('nan'), 1., float('inf'), -float('inf')])
    assert_eq!(
        t(vec![f32::NAN, 1.0, f32::INFINITY, f32::NEG_INFINITY], &[4]).to_string(),
        "tensor([nan, 1., inf, -inf])"
    );
    // torch.tensor([0.1, float('nan')])
    assert_eq!(
        t(vec![0.1f32, f32::NAN], &[2]).to_string(),
        "tensor([0.1000,    nan])"
    );
    // torch.zeros(3)
    assert_eq!(t(vec![0.0f32; 3], &[3]).to_string(), "tensor([0., 0., 0.])");
    // torch.tensor([1., 2.], dtype=torch.float64)
    assert_eq!(
        t(vec![1.0f64, 2.0], &[2]).to_string(),
        "tensor([1., 2.], dtype=torch.float64)"
    );
    // torch.tensor([1.5], dtype=torch.float16) / bfloat16
    use ratten_core::half::{bf16, f16};
    assert_eq!(
        t(vec![f16::from_f32(1.5)], &[1]).to_string(),
        "tensor([1.5000], dtype=torch.float16)"
    );
    assert_eq!(
        t(vec![bf16::from_f32(-2.0), bf16::from_f32(0.5)], &[2]).to_string(),
        "tensor([-2.0000,  0.5000], dtype=torch.bfloat16)"
    );
}

#[test]
fn scalars() {
    assert_eq!(t(vec![3.5f32], &[]).to_string(), "tensor(3.5000)");
    assert_eq!(t(vec![3i64], &[]).to_string(), "tensor(3)");
    assert_eq!(
        t(vec![3.0f64], &[]).to_string(),
        "tensor(3., dtype=torch.float64)"
    );
    assert_eq!(t(vec![true], &[]).to_string(), "tensor(True)");
    assert_eq!(
        t(vec![-7i32], &[]).to_string(),
        "tensor(-7, dtype=torch.int32)"
    );
    assert_eq!(t(vec![f32::NAN], &[]).to_string(), "tensor(nan)");
}

#[test]
fn integers_and_bools() {
    // torch.arange(5)
    assert_eq!(
        t((0..5i64).collect(), &[5]).to_string(),
        "tensor([0, 1, 2, 3, 4])"
    );
    assert_eq!(
        t(vec![1i32, -20, 3], &[3]).to_string(),
        "tensor([  1, -20,   3], dtype=torch.int32)"
    );
    assert_eq!(
        t(vec![1u8, 255], &[2]).to_string(),
        "tensor([  1, 255], dtype=torch.uint8)"
    );
    assert_eq!(
        t(vec![-1i8], &[1]).to_string(),
        "tensor([-1], dtype=torch.int8)"
    );
    assert_eq!(
        t(vec![5i16], &[1]).to_string(),
        "tensor([5], dtype=torch.int16)"
    );
    // torch.tensor([True, False])
    assert_eq!(
        t(vec![true, false], &[2]).to_string(),
        "tensor([ True, False])"
    );
}

#[test]
fn complex() {
    // torch.tensor([1+2j])
    assert_eq!(
        t(vec![Complex::new(1.0f32, 2.0)], &[1]).to_string(),
        "tensor([1.+2.j])"
    );
    // torch.tensor([1.5-2j, 1j])
    assert_eq!(
        t(
            vec![Complex::new(1.5f32, -2.0), Complex::new(0.0, 1.0)],
            &[2]
        )
        .to_string(),
        "tensor([1.5000-2.j, 0.0000+1.j])"
    );
    // torch.tensor(1+2j, dtype=torch.complex128)
    assert_eq!(
        t(vec![Complex::new(1.0f64, 2.0)], &[]).to_string(),
        "tensor(1.+2.j, dtype=torch.complex128)"
    );
}

#[test]
fn empty_and_meta() {
    let e = |s: &[i64], d: ScalarType| Tensor::empty(s, d).unwrap().to_string();
    assert_eq!(e(&[0], ScalarType::Float), "tensor([])");
    assert_eq!(e(&[0, 3], ScalarType::Float), "tensor([], size=(0, 3))");
    assert_eq!(e(&[0], ScalarType::Long), "tensor([], dtype=torch.int64)");
    assert_eq!(
        e(&[2, 0, 1], ScalarType::Bool),
        "tensor([], size=(2, 0, 1), dtype=torch.bool)"
    );
    let m = |s: &[i64], d: ScalarType| Tensor::empty(s, (d, Device::META)).unwrap().to_string();
    assert_eq!(
        m(&[2, 3], ScalarType::Float),
        "tensor(..., device='meta', size=(2, 3))"
    );
    assert_eq!(
        m(&[4], ScalarType::Long),
        "tensor(..., device='meta', size=(4,), dtype=torch.int64)"
    );
    assert_eq!(
        m(&[], ScalarType::Float),
        "tensor(..., device='meta', size=())"
    );
}

#[test]
fn nesting_and_wrapping() {
    // torch.zeros(2, 2, 2)
    assert_eq!(
        t(vec![0.0f32; 8], &[2, 2, 2]).to_string(),
        "tensor([[[0., 0.],\n         [0., 0.]],\n\n        [[0., 0.],\n         [0., 0.]]])"
    );
    // torch.arange(30.): 14 elements of width 3 per line
    let expected =
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n        \
                    14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n        \
                    28., 29.])";
    assert_eq!(t(arange_f32(30), &[30]).to_string(), expected);
    // a transposed view prints its logical order: torch.arange(6.).view(2, 3).t()
    let x = t(arange_f32(6), &[2, 3]).t().unwrap();
    assert_eq!(
        x.to_string(),
        "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]])"
    );
}

#[test]
fn summarisation() {
    // torch.arange(2000)
    assert_eq!(
        t((0..2000i64).collect(), &[2000]).to_string(),
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    );
    // torch.zeros(100, 100)
    let row = "[0., 0., 0.,  ..., 0., 0., 0.]";
    let expected = format!(
        "tensor([{row},\n        {row},\n        {row},\n        ...,\n        {row},\n        {row},\n        {row}])"
    );
    assert_eq!(t(vec![0.0f32; 10000], &[100, 100]).to_string(), expected);
    // torch.arange(1001.).view(1, 1001): the width comes from the shown values only
    assert_eq!(
        t(arange_f32(1001), &[1, 1001]).to_string(),
        "tensor([[   0.,    1.,    2.,  ...,  998.,  999., 1000.]])"
    );
    // exactly 1000 elements are not summarised: torch.ones(1000, dtype=torch.int32) wraps
    let s = t(vec![1i32; 1000], &[1000]).to_string();
    assert!(!s.contains("..."));
    assert!(s.ends_with("1, 1, 1], dtype=torch.int32)"), "{s}");
    assert_eq!(s.lines().count(), 1000usize.div_ceil(24));
}

#[test]
fn long_suffix_moves_to_its_own_line() {
    // torch.arange(8, dtype=torch.int32) * 1000000: the dtype suffix would pass column 80
    let v: Vec<i32> = (0..8).map(|x| x * 1_000_000).collect();
    let s = t(v, &[8]).to_string();
    assert_eq!(
        s,
        "tensor([      0, 1000000, 2000000, 3000000, 4000000, 5000000, 6000000, 7000000],\n       dtype=torch.int32)"
    );
}
