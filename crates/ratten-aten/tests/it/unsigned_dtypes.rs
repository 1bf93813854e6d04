//! The barebones unsigned dtypes (uint16, uint32, uint64) through the operators torch 2.15's
//! CPU build gives them, and torch's refusals of the others (values and texts from torch).

use ratten_aten::Tensor;
use ratten_core::{ErrorKind, Scalar, ScalarType};

#[test]
fn creation_copy_and_wrap_around() {
    let t = Tensor::from_vec(vec![-1i64, (1 << 40) + 5, 3], &[3]).unwrap();
    let u32s = t.to_dtype(ScalarType::UInt32).unwrap();
    assert_eq!(u32s.to_vec::<u32>().unwrap(), [u32::MAX, 5, 3]);
    let u64s = t.to_dtype(ScalarType::UInt64).unwrap();
    assert_eq!(u64s.to_vec::<u64>().unwrap(), [u64::MAX, (1 << 40) + 5, 3]);
    assert_eq!(
        u64s.to_dtype(ScalarType::Long)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        [-1, (1 << 40) + 5, 3]
    );
    let f = Tensor::from_vec(vec![1.5f64, -1.0, 70000.0], &[3]).unwrap();
    let u16s = f.to_dtype(ScalarType::UInt16).unwrap();
    assert_eq!(u16s.to_vec::<u16>().unwrap(), [1, 65535, 4464]);
    let back = u16s.to_dtype(ScalarType::Float).unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), [1.0, 65535.0, 4464.0]);
    let full = Tensor::full(&[2], -1i64, ScalarType::UInt64).unwrap();
    assert_eq!(full.to_vec::<u64>().unwrap(), [u64::MAX; 2]);
    let big = Tensor::full(&[1], Scalar::from(u64::MAX), ScalarType::UInt64).unwrap();
    assert_eq!(big.item().unwrap(), Scalar::UInt64(u64::MAX));
    let e = Tensor::full(&[1], 1i64 << 40, ScalarType::UInt32).unwrap_err();
    assert_eq!(
        e.message(),
        "value cannot be converted to type uint32_t without overflow"
    );
    let z = Tensor::zeros(&[2], ScalarType::UInt16).unwrap();
    z.fill_(7i64).unwrap();
    assert_eq!(z.to_vec::<u16>().unwrap(), [7, 7]);
}

#[test]
fn equality_and_refused_comparisons() {
    let a = Tensor::from_vec(vec![1u32, 2, 3], &[3]).unwrap();
    let b = Tensor::from_vec(vec![2u32, 2, 2], &[3]).unwrap();
    assert_eq!(
        a.eq(&b).unwrap().to_vec::<bool>().unwrap(),
        [false, true, false]
    );
    assert_eq!(
        a.ne(&b).unwrap().to_vec::<bool>().unwrap(),
        [true, false, true]
    );
    let e = a.lt(&b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplemented);
    assert_eq!(e.message(), "\"lt_cpu\" not implemented for 'UInt32'");
    let m = a.mul(&b).unwrap();
    assert_eq!(m.to_vec::<u32>().unwrap(), [2, 4, 6]);
    let e = a.add(&b).unwrap_err();
    assert_eq!(e.message(), "\"add_stub\" not implemented for 'UInt32'");
    let l = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    let e = a.eq(&l).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Runtime);
    assert_eq!(
        e.message(),
        "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote \
         UInt32 and Long"
    );
    let c = ratten_aten::generated::functions::cat(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(c.to_vec::<u32>().unwrap(), [1, 2, 3, 2, 2, 2]);
}

#[test]
fn printing() {
    let t = Tensor::from_vec(vec![u64::MAX, 1], &[2]).unwrap();
    assert_eq!(
        t.to_string(),
        "tensor([18446744073709551615,                    1], dtype=torch.uint64)"
    );
}

/// `t.to(dtype)`'s elements.
fn converted<T: ratten_core::Element>(t: &Tensor, dtype: ScalarType) -> Vec<T> {
    t.to_dtype(dtype).unwrap().to_vec::<T>().unwrap()
}

#[test]
fn reduced_floats_to_unsigned_wrap_as_torch() {
    // static_cast<uint64_t>(float(h)): a negative value wraps (torch gives 2^64 - 1 for -1),
    // on the short path and the vector loop alike.
    for n in [3usize, 1000] {
        let data: Vec<f64> = (0..n).map(|i| [-1.0, -3.7, 2.0][i % 3]).collect();
        for src in [ScalarType::Half, ScalarType::BFloat16, ScalarType::Float] {
            let t = Tensor::from_vec(data.clone(), &[n as i64])
                .unwrap()
                .to_dtype(src)
                .unwrap();
            let u64s: Vec<u64> = converted(&t, ScalarType::UInt64);
            assert_eq!(&u64s[..3], &[u64::MAX, u64::MAX - 2, 2], "{src:?} n={n}");
            let u32s: Vec<u32> = converted(&t, ScalarType::UInt32);
            assert_eq!(&u32s[..3], &[u32::MAX, u32::MAX - 2, 2], "{src:?} n={n}");
        }
    }
}
