use super::*;
use ratten_core::Device;

fn t(sizes: &[i64], d: ScalarType) -> TensorBase {
    TensorBase::zeros(sizes, d, Device::CPU).unwrap()
}

#[test]
fn broadcast_error_text() {
    let e = TensorIterator::binary_op(
        None,
        &t(&[2, 3], ScalarType::Float),
        &t(&[4, 3], ScalarType::Float),
    )
    .unwrap_err();
    assert_eq!(
        e.message(),
        "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 0"
    );
}

#[test]
fn output_strides_follow_first_input() {
    let a = t(&[4, 3], ScalarType::Float);
    let at = a.as_strided(&[3, 4], &[1, 3], Some(0)).unwrap();
    let c = t(&[3, 4], ScalarType::Float);
    let it = TensorIterator::binary_op(None, &at, &c).unwrap();
    assert_eq!(it.output(0).unwrap().strides().as_slice(), &[1, 3]);
    let it = TensorIterator::binary_op(None, &c, &at).unwrap();
    assert_eq!(it.output(0).unwrap().strides().as_slice(), &[4, 1]);
    let it = TensorIterator::binary_op(None, &at, &at).unwrap();
    assert_eq!(it.output(0).unwrap().strides().as_slice(), &[1, 3]);
}

#[test]
fn common_dtype_and_safe_casting() {
    let i = t(&[4], ScalarType::Int);
    let f = t(&[4], ScalarType::Float);
    let it = TensorIterator::binary_op(None, &i, &f).unwrap();
    assert_eq!(it.common_dtype(), Some(ScalarType::Float));
    assert_eq!(it.output(0).unwrap().dtype(), ScalarType::Float);
    let out = t(&[4], ScalarType::Long);
    let e = TensorIterator::binary_op(Some(&out), &f, &f).unwrap_err();
    assert_eq!(
        e.message(),
        "result type Float can't be cast to the desired output type Long"
    );
    let e = TensorIterator::unary_op(Some(&t(&[4], ScalarType::Double)), &f).unwrap_err();
    assert_eq!(e.message(), "Found dtype Double but expected Float");
    let it = TensorIterator::binary_float_op(None, &i, &i).unwrap();
    assert_eq!(it.common_dtype(), Some(ScalarType::Float));
    let it = TensorIterator::comparison_op(None, &i, &f).unwrap();
    assert_eq!(it.output(0).unwrap().dtype(), ScalarType::Bool);
    assert_eq!(it.common_dtype(), Some(ScalarType::Float));
}

#[test]
fn overlap_and_resize_errors() {
    let c = t(&[6], ScalarType::Float);
    let a = c.as_strided(&[3], &[1], Some(1)).unwrap();
    let o = c.as_strided(&[3], &[1], Some(0)).unwrap();
    let e = TensorIterator::binary_op(Some(&o), &a, &a).unwrap_err();
    assert!(e
        .message()
        .starts_with("unsupported operation: some elements"));
    let x = c.as_strided(&[3], &[0], Some(0)).unwrap();
    let e = TensorIterator::binary_op(Some(&x), &a, &a).unwrap_err();
    assert!(e
        .message()
        .starts_with("unsupported operation: more than one element"));
    let s = t(&[2, 3], ScalarType::Float);
    let big = t(&[4, 2, 3], ScalarType::Float);
    let e = TensorIterator::binary_op(Some(&s), &s, &big).unwrap_err();
    assert_eq!(
        e.message(),
        "output with shape [2, 3] doesn't match the broadcast shape [4, 2, 3]"
    );
    // A non-read-write out= of the wrong shape is resized (with PyTorch's warning).
    let out = t(&[2], ScalarType::Float);
    let three = t(&[3], ScalarType::Float);
    let (r, warnings) = crate::structured::capture_warnings(|| {
        TensorIterator::binary_op(Some(&out), &three, &three).map(|_| ())
    });
    r.unwrap();
    assert_eq!(out.sizes().as_slice(), &[3]);
    assert!(warnings[0].message.starts_with("An output with one or more elements was resized since it had shape [2], which does not match the required output shape [3]."));
}

#[test]
fn coalescing_and_loops() {
    // A broadcast [4,1] + [1,5] does not coalesce; a contiguous [2,3,4] collapses to one dim.
    let a = t(&[4, 1], ScalarType::Float);
    let b = t(&[1, 5], ScalarType::Float);
    let it = TensorIterator::binary_op(None, &a, &b).unwrap();
    assert_eq!(it.shape(), &[5, 4]);
    assert_eq!(it.strides(1), &[0, 4]);
    assert_eq!(it.strides(2), &[4, 0]);
    let c = t(&[2, 3, 4], ScalarType::Float);
    let it = TensorIterator::binary_op(None, &c, &c).unwrap();
    assert_eq!(it.shape(), &[24]);
    assert!(it.is_contiguous());
    // serial_for_each visits each element exactly once, in 2-D steps.
    let count = std::sync::atomic::AtomicUsize::new(0);
    let it = TensorIterator::binary_op(None, &a, &b).unwrap();
    it.serial_for_each(
        &|_d: &[*mut u8], _s: &[isize], n0: usize, n1: usize| {
            count.fetch_add(n0 * n1, std::sync::atomic::Ordering::Relaxed);
        },
        3,
        17,
    )
    .unwrap();
    assert_eq!(count.load(std::sync::atomic::Ordering::Relaxed), 14);
}

#[test]
fn zero_dim_and_scalars() {
    let s = t(&[], ScalarType::Double);
    let v = t(&[3], ScalarType::Float);
    let it = TensorIterator::binary_op(None, &v, &s).unwrap();
    assert_eq!(it.common_dtype(), Some(ScalarType::Float));
    let it = TensorIterator::binary_op(None, &s, &s).unwrap();
    assert_eq!(it.ndim(), 0);
    assert_eq!(it.numel(), 1);
    let e = t(&[0, 3], ScalarType::Float);
    let it = TensorIterator::binary_op(None, &e, &v).unwrap();
    assert_eq!(it.numel(), 0);
    assert_eq!(it.output(0).unwrap().sizes().as_slice(), &[0, 3]);
}

#[test]
fn loops_use_the_build_snapshots_and_refuse_restrided_operands() {
    let a = TensorBase::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let b = TensorBase::from_slice(&[10.0f32, 20.0, 30.0, 40.0], &[4]).unwrap();
    let it = TensorIterator::binary_op(None, &a, &b).unwrap();
    let add = |data: &[*mut u8], strides: &[isize], n: usize, _m: usize| {
        for i in 0..n as isize {
            // SAFETY: the iterator passes valid pointers and byte strides for n f32 elements.
            unsafe {
                let x = *(data[1].offset(i * strides[1]) as *const f32);
                let y = *(data[2].offset(i * strides[2]) as *const f32);
                *(data[0].offset(i * strides[0]) as *mut f32) = x + y;
            }
        }
    };
    it.for_each(&add, GRAIN_SIZE).unwrap();
    let out = it.output(0).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![11.0, 22.0, 33.0, 44.0]);
    // Re-setting the same geometry (a new snapshot) is accepted.
    a.as_strided_(&[4], &[1], Some(0)).unwrap();
    it.for_each(&add, GRAIN_SIZE).unwrap();
    // Another geometry after the build is refused, not run on stale strides.
    a.as_strided_(&[2], &[2], Some(0)).unwrap();
    let e = it.for_each(&add, GRAIN_SIZE).unwrap_err();
    assert!(
        e.message()
            .contains("restrided after the iterator was built"),
        "{e}"
    );
}
