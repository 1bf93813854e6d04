use super::*;
use ratten_core::{Device, Scalar};
use std::cell::Cell;

thread_local! {
    /// Makes the trivial build (`TrivialIter::try_build_from`, both of its callers) decline, so a test can build the same case on both paths.
    pub(super) static FORCE_GENERAL_BUILD: Cell<bool> = const { Cell::new(false) };
    /// How many builds took the trivial path on this thread.
    pub(super) static TRIVIAL_BUILDS: Cell<usize> = const { Cell::new(0) };
}

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

/// A 1-D loop `out = op(in0, in1)` over f32 operands.
fn f32_loop(op: fn(f32, f32) -> f32) -> impl Fn(&[*mut u8], &[isize], usize, usize) + Sync {
    move |data, strides, n, _m| {
        for i in 0..n as isize {
            // SAFETY: the iterator passes valid pointers and byte strides for n f32 elements.
            unsafe {
                let x = *(data[1].offset(i * strides[1]) as *const f32);
                let y = *(data[2].offset(i * strides[2]) as *const f32);
                *(data[0].offset(i * strides[0]) as *mut f32) = op(x, y);
            }
        }
    }
}

#[test]
fn loops_use_the_geometry_captured_at_the_build() {
    let a = TensorBase::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let b = TensorBase::from_slice(&[10.0f32, 20.0, 30.0, 40.0], &[4]).unwrap();
    let it = TensorIterator::binary_op(None, &a, &b).unwrap();
    it.for_each(&f32_loop(|x, y| x + y), GRAIN_SIZE).unwrap();
    let out = it.output(0).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![11.0, 22.0, 33.0, 44.0]);
    // An operand restrided after the build does not change the built iteration (PyTorch's
    // iterator keeps the data pointers and strides it captured): the loop still reads a's
    // four elements.
    a.as_strided_(&[2], &[2], Some(0)).unwrap();
    it.for_each(&f32_loop(|x, y| y - x), GRAIN_SIZE).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![9.0, 18.0, 27.0, 36.0]);
    assert_eq!(a.sizes().as_slice(), &[2]);
}

/// What a built iterator exposes, in a comparable form (the output tensor itself is a new
/// allocation on each build, so it is compared by geometry and dtype, and by which inputs it
/// is).
fn summary(it: &TensorIteratorBase) -> String {
    let mut parts = vec![format!(
        "shape={:?} ndim={} numel={} coalesced={} common={:?} device={:?} meta={} \
         outputs={} inputs={} contiguous={}",
        it.shape(),
        it.ndim(),
        it.numel(),
        it.has_coalesced_dimensions(),
        it.common_dtype(),
        it.device(),
        it.is_meta(),
        it.noutputs(),
        it.ninputs(),
        it.is_contiguous(),
    )];
    let tensors: Vec<TensorBase> = (0..it.noutputs())
        .map(|i| it.output(i).unwrap())
        .chain((0..it.ninputs()).map(|i| it.input(i).unwrap()))
        .collect();
    for (k, t) in tensors.iter().enumerate() {
        let same_as: Vec<usize> = (0..tensors.len())
            .filter(|&j| j != k && tensors[j].is_same(t))
            .collect();
        parts.push(format!(
            "strides={:?} dtype={:?} cpu_scalar={} scalar={} same_as={same_as:?} \
             tensor=({:?}, {:?}, {:?})",
            it.strides(k),
            it.dtype(k),
            it.is_cpu_scalar(k),
            it.is_scalar(k),
            t.sizes().as_slice(),
            t.strides().as_slice(),
            t.dtype()
        ));
    }
    parts.join("\n")
}

#[test]
fn trivial_build_matches_the_general_pipeline() {
    let f = ScalarType::Float;
    let sum = |r: Result<TensorIterator<'_>>| r.map(|it| summary(&it));
    let trivial_count = || TRIVIAL_BUILDS.with(|c| c.get());
    // `make` builds and summarises (the iterator borrows tensors the closure may make).
    let build_both = |name: &str, make: &dyn Fn() -> Result<String>| {
        FORCE_GENERAL_BUILD.with(|c| c.set(true));
        let general = make();
        FORCE_GENERAL_BUILD.with(|c| c.set(false));
        let before = trivial_count();
        let trivial = make();
        let took_trivial = trivial_count() > before;
        match (general, trivial) {
            (Ok(g), Ok(t)) => assert_eq!(g, t, "{name}"),
            (Err(g), Err(t)) => assert_eq!(g.message(), t.message(), "{name}"),
            (g, t) => panic!("{name}: general {:?} vs trivial {:?}", g.err(), t.err()),
        }
        took_trivial
    };
    let (a, b) = (t(&[2, 3], f), t(&[2, 3], f));
    let out = t(&[2, 3], f);
    let (s0, s1) = (t(&[], f), t(&[], f));
    let (i0, i1) = (t(&[4], ScalarType::Int), t(&[4], ScalarType::Int));
    let (e0, e1) = (t(&[0, 3], f), t(&[0, 3], f));
    let (h0, h1) = (t(&[5], ScalarType::Half), t(&[5], ScalarType::Half));
    let wrapped = Tensor::wrapped_scalar_tensor(2.0f64, Device::CPU)
        .unwrap()
        .base()
        .clone();
    let w2 = Tensor::wrapped_scalar_tensor(3.0f64, Device::CPU)
        .unwrap()
        .base()
        .clone();
    assert!(build_both("binary 2x3", &|| sum(
        TensorIterator::binary_op(None, &a, &b)
    )));
    assert!(build_both("binary 0-dim", &|| sum(
        TensorIterator::binary_op(None, &s0, &s1)
    )));
    build_both("binary wrapped numbers", &|| {
        sum(TensorIterator::binary_op(None, &wrapped, &w2))
    });
    assert!(build_both("binary out=", &|| sum(
        TensorIterator::binary_op(Some(&out), &a, &b)
    )));
    assert!(build_both("binary in-place", &|| sum(
        TensorIterator::binary_op(Some(&a), &a, &b)
    )));
    assert!(build_both("binary in-place, both inputs", &|| {
        sum(TensorIterator::binary_op(Some(&a), &a, &a))
    }));
    build_both("binary out= aliasing an input view", &|| {
        let v = a.as_strided(&[2, 3], &[3, 1], Some(0)).unwrap();
        sum(TensorIterator::binary_op(Some(&v), &a, &b))
    });
    assert!(build_both("binary int", &|| sum(
        TensorIterator::binary_op(None, &i0, &i1)
    )));
    assert!(build_both("binary empty", &|| sum(
        TensorIterator::binary_op(None, &e0, &e1)
    )));
    assert!(build_both("binary half", &|| sum(
        TensorIterator::binary_op(None, &h0, &h1)
    )));
    build_both("binary float op, int", &|| {
        sum(TensorIterator::binary_float_op(None, &i0, &i1))
    });
    assert!(build_both("comparison", &|| sum(
        TensorIterator::comparison_op(None, &a, &b)
    )));
    assert!(build_both("comparison out= float", &|| {
        sum(TensorIterator::comparison_op(Some(&out), &a, &b))
    }));
    assert!(build_both("unary", &|| sum(TensorIterator::unary_op(
        None, &a
    ))));
    assert!(build_both("unary int", &|| sum(TensorIterator::unary_op(
        None, &i0
    ))));
    build_both("unary float op, int", &|| {
        sum(TensorIterator::unary_float_op(None, &i0))
    });
    build_both("unary out= other dtype", &|| {
        sum(TensorIterator::unary_op(Some(&i0), &t(&[4], f)))
    });
    assert!(build_both("ternary", &|| sum(TensorIterator::ternary_op(
        None, &a, &b, &out
    ))));
    build_both("binary out= wrong shape", &|| {
        sum(TensorIterator::binary_op(Some(&t(&[3], f)), &a, &b))
    });

    // One wrapped number beside the tensors (Note [Wrapped numbers in a compact build]).
    let wrap = |s: Scalar| {
        Tensor::wrapped_scalar_tensor(s, Device::CPU)
            .unwrap()
            .base()
            .clone()
    };
    let (wi, wb, wc) = (
        wrap(Scalar::Int(3)),
        wrap(Scalar::Bool(true)),
        wrap(Scalar::ComplexDouble(ratten_core::dtype::c128::new(
            1.0, 2.0,
        ))),
    );
    let bools = t(&[4], ScalarType::Bool);
    type Case<'x> = (&'x str, bool, Box<dyn Fn() -> Result<String> + 'x>);
    let cases: Vec<Case<'_>> = vec![
        (
            "tensor * wrapped",
            true,
            Box::new(|| sum(TensorIterator::binary_op(None, &a, &wrapped))),
        ),
        (
            "wrapped * tensor",
            true,
            Box::new(|| sum(TensorIterator::binary_op(None, &wrapped, &a))),
        ),
        (
            "0-dim * wrapped",
            true,
            Box::new(|| sum(TensorIterator::binary_op(None, &s0, &wrapped))),
        ),
        (
            "int * wrapped int",
            true,
            Box::new(|| sum(TensorIterator::binary_op(None, &i0, &wi))),
        ),
        (
            "int * wrapped bool",
            true,
            Box::new(|| sum(TensorIterator::binary_op(None, &i0, &wb))),
        ),
        (
            "bool * wrapped bool",
            true,
            Box::new(|| sum(TensorIterator::binary_op(None, &bools, &wb))),
        ),
        (
            "half * wrapped double",
            true,
            Box::new(|| sum(TensorIterator::binary_op(None, &h0, &wrapped))),
        ),
        (
            "empty * wrapped",
            true,
            Box::new(|| sum(TensorIterator::binary_op(None, &e0, &wrapped))),
        ),
        (
            "out= * wrapped",
            true,
            Box::new(|| sum(TensorIterator::binary_op(Some(&out), &a, &wrapped))),
        ),
        (
            "in-place * wrapped",
            true,
            Box::new(|| sum(TensorIterator::binary_op(Some(&a), &a, &wrapped))),
        ),
        (
            "comparison with wrapped",
            true,
            Box::new(|| sum(TensorIterator::comparison_op(None, &a, &wrapped))),
        ),
        (
            "int * wrapped float",
            false,
            Box::new(|| sum(TensorIterator::binary_op(None, &i0, &wrapped))),
        ),
        (
            "bool * wrapped int",
            false,
            Box::new(|| sum(TensorIterator::binary_op(None, &bools, &wi))),
        ),
        (
            "float * wrapped complex",
            false,
            Box::new(|| sum(TensorIterator::binary_op(None, &a, &wc))),
        ),
        (
            "int / wrapped int",
            false,
            Box::new(|| sum(TensorIterator::binary_float_op(None, &i0, &wi))),
        ),
        (
            "in-place int * wrapped float",
            false,
            Box::new(|| sum(TensorIterator::binary_op(Some(&i0), &i0, &wrapped))),
        ),
        (
            "two wrapped beside a tensor",
            false,
            Box::new(|| sum(TensorIterator::ternary_op(None, &a, &wrapped, &w2))),
        ),
        (
            "a broadcast beside a wrapped",
            false,
            Box::new(|| sum(TensorIterator::ternary_op(None, &a, &s0, &wrapped))),
        ),
        (
            "a tensor, a wrapped, a tensor",
            true,
            Box::new(|| sum(TensorIterator::ternary_op(None, &a, &wrapped, &b))),
        ),
    ];
    for (name, compact, case) in &cases {
        assert_eq!(build_both(name, case.as_ref()), *compact, "{name}");
    }
}

#[test]
fn a_reused_state_builds_like_a_fresh_one() {
    let f = ScalarType::Float;
    let make = move || {
        let (a, b) = (t(&[3, 4], f), t(&[3, 4], f));
        let it = TensorIterator::binary_op(None, &a, &b).unwrap();
        summary(&it)
    };
    // A fresh thread has no spare state.
    let fresh = std::thread::spawn(make).join().unwrap();
    // Leave a spare that saw every step of the general pipeline (broadcast, a transposed
    // operand: reordered and not coalesced dimensions, a resized out=).
    let x = t(&[4, 3], f).as_strided(&[3, 4], &[1, 3], Some(0)).unwrap();
    let out = t(&[1], f);
    let y = t(&[1, 4], f);
    let general = TensorIterator::binary_op(Some(&out), &x, &y).unwrap();
    assert_eq!(general.ndim(), 2);
    drop(general);
    assert_eq!(make(), fresh);
    // A clone is an independent iterator; dropping both leaves one spare.
    let (c, d) = (t(&[2], f), t(&[2], f));
    let it = TensorIterator::binary_op(None, &c, &d).unwrap();
    let copy = it.clone();
    drop(it);
    assert_eq!(copy.shape(), &[2]);
    drop(copy);
    assert_eq!(make(), fresh);
}

/// A sink that makes an output of its own choosing, as a user's `MetaBase` may.
struct OneElementSink(OnceCell<Tensor>);

impl MetaBase for OneElementSink {
    fn set_output_raw_strided(
        &self,
        _idx: usize,
        _sizes: &[i64],
        _strides: &[i64],
        options: TensorOptions,
    ) -> Result<()> {
        let t = TensorBase::zeros(&[1], options.dtype_or_default(), Device::CPU)?;
        let _ = self.0.set(Tensor::from_base(t));
        Ok(())
    }
    fn maybe_get_output(&self, _idx: usize) -> Option<&Tensor> {
        self.0.get()
    }
    fn num_outputs(&self) -> usize {
        1
    }
}

/// The compact form writes `numel` contiguous elements of the output: an output the sink made
/// with another shape is refused (an error, not a write past its end).
#[test]
fn a_compact_build_refuses_a_sink_output_of_another_shape() {
    let f = ScalarType::Float;
    let (a, b) = (t(&[8], f), t(&[8], f));
    let sink = OneElementSink(OnceCell::new());
    let before = TRIVIAL_BUILDS.with(|c| c.get());
    let e = binary_op_config(None::<&TensorBase>, &a, &b)
        .unwrap()
        .build(&sink)
        .unwrap_err();
    assert_eq!(
        e.message(),
        "TensorIterator: the output set for operand 0 has sizes [1] and strides [1], not the \
         contiguous [8]"
    );
    assert_eq!(TRIVIAL_BUILDS.with(|c| c.get()), before);
}

/// What the kernels use of a compact iterator besides its shape: `remove_operand`, ranges of
/// `serial_for_each`, a parallel `for_each`, and the inlined run of `with_trivial_run`; each
/// as the general form does it.
#[test]
fn compact_and_general_forms_run_alike() {
    let n = 3 * GRAIN_SIZE + 5;
    let a = TensorBase::from_slice(&(0..n).map(|i| i as f32).collect::<Vec<_>>(), &[n]).unwrap();
    let b =
        TensorBase::from_slice(&(0..n).map(|i| (2 * i) as f32).collect::<Vec<_>>(), &[n]).unwrap();
    let run = |force_general: bool| {
        FORCE_GENERAL_BUILD.with(|c| c.set(force_general));
        let it = TensorIterator::binary_op(None, &a, &b).unwrap();
        FORCE_GENERAL_BUILD.with(|c| c.set(false));
        let threads = get_num_threads();
        set_num_threads(2).unwrap();
        it.for_each(&f32_loop(|x, y| x + y), GRAIN_SIZE).unwrap();
        set_num_threads(threads as i64).unwrap();
        let whole = it.output(0).unwrap().to_vec::<f32>().unwrap();
        it.serial_for_each(&f32_loop(|x, y| y - x), 5, 9).unwrap();
        let ranged = it.output(0).unwrap().to_vec::<f32>().unwrap();
        let err = it
            .serial_for_each(&f32_loop(|x, _| x), 0, n + 1)
            .unwrap_err()
            .message()
            .to_string();
        let trivial_run = it.with_trivial_run(|_, strides, numel| (strides.to_vec(), numel));
        let mut it = it.into_base();
        it.remove_operand(2);
        (
            whole,
            ranged,
            err,
            summary(&it),
            trivial_run.map(|r| r.unwrap()),
        )
    };
    let (general, compact) = (run(true), run(false));
    assert_eq!(
        general.0,
        (0..n).map(|i| (3 * i) as f32).collect::<Vec<_>>()
    );
    assert_eq!(general.1[4..10], [12.0, 5.0, 6.0, 7.0, 8.0, 27.0]);
    assert_eq!(general.0, compact.0);
    assert_eq!(general.1, compact.1);
    assert_eq!(general.2, compact.2);
    assert_eq!(general.3, compact.3);
    assert_eq!(general.4, None);
    assert_eq!(compact.4, Some((vec![4, 4, 4, 0, 0, 0], n as usize)));
}

/// The flags of a borrowed binary build are `BINARY_OP_CONFIG`'s (and `BINARY_FLOAT_OP_CONFIG`'s).
#[test]
fn borrowed_binary_flags_are_the_configs() {
    let (a, b) = (t(&[2], ScalarType::Float), t(&[2], ScalarType::Float));
    let config = binary_op_config(None, &a, &b).unwrap();
    assert_eq!(TrivialFlags::of(&config), TrivialFlags::BINARY_OP);
    let config = binary_float_op_config(None, &a, &b).unwrap();
    let float = TrivialFlags {
        promote_integer_inputs_to_float: true,
        ..TrivialFlags::BINARY_OP
    };
    assert_eq!(TrivialFlags::of(&config), float);
    let config = unary_op_config(None, &a).unwrap();
    assert_eq!(TrivialFlags::of(&config), TrivialFlags::UNARY_OP);
    let config = unary_float_op_config(None, &a).unwrap();
    assert_eq!(TrivialFlags::of(&config), TrivialFlags::UNARY_FLOAT_OP);
    for out in [
        None,
        Some(t(&[2], ScalarType::Bool)),
        Some(t(&[2], ScalarType::Float)),
    ] {
        let config = comparison_op_config(out.as_ref(), &a, &b).unwrap();
        assert_eq!(
            TrivialFlags::of(&config),
            TrivialFlags::comparison_op(out.as_ref())
        );
    }
}

/// `build_borrowing_binary` and `build_borrowing_unary` (the structured binary and unary ops'
/// metas, without a config) compute what the general pipeline does, for the cases they build
/// compactly and those they hand on: functional, out=, in-place, aliasing and mismatched
/// outputs, 0-dim and wrapped operands, integer true division, integers promoted to float.
#[test]
fn borrowed_binary_build_matches_the_general_pipeline() {
    use crate::{functions, Tensor};
    let f = |v: &[f32], sizes: &[i64]| Tensor::from_slice(v, sizes).unwrap();
    let fa = || f(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let ints = |v: &[i32]| Tensor::from_slice(v, &[2]).unwrap();
    let (a, b) = (fa(), f(&[0.5, -1.0, 2.0, 8.0], &[2, 2]));
    let (i, j) = (ints(&[7, -3]), ints(&[2, 2]));
    let s = Tensor::from_slice(&[3.0f32], &[]).unwrap();
    let w = Tensor::wrapped_scalar_tensor(2.5f64, Device::CPU).unwrap();
    let w2 = Tensor::wrapped_scalar_tensor(1.5f64, Device::CPU).unwrap();
    let wi = Tensor::wrapped_scalar_tensor(2i64, Device::CPU).unwrap();
    let show = |r: Result<Tensor>| match r {
        Ok(t) => {
            let values = match t.dtype() {
                ScalarType::Float => format!("{:?}", t.to_vec::<f32>()),
                ScalarType::Double => format!("{:?}", t.to_vec::<f64>()),
                ScalarType::Int => format!("{:?}", t.to_vec::<i32>()),
                d => format!("{d:?}"),
            };
            format!("{:?} {:?} {:?} {values}", t.sizes(), t.strides(), t.dtype())
        }
        Err(e) => e.message().to_string(),
    };
    type Case<'x> = (&'x str, Box<dyn Fn() -> Result<Tensor> + 'x>);
    let cases: Vec<Case<'_>> = vec![
        ("add", Box::new(|| functions::add(&a, &b))),
        ("add 0-dim", Box::new(|| functions::add(&s, &s))),
        ("add wrapped", Box::new(|| functions::add(&w, &w2))),
        ("add 0-dim + wrapped", Box::new(|| functions::add(&s, &w))),
        ("add int", Box::new(|| functions::add(&i, &j))),
        ("div int", Box::new(|| functions::div(&i, &j))),
        ("div float", Box::new(|| functions::div(&a, &b))),
        ("mul broadcast", Box::new(|| functions::mul(&a, &s))),
        ("mul wrapped", Box::new(|| functions::mul(&a, &w))),
        ("sub from wrapped", Box::new(|| functions::sub(&w, &a))),
        ("div by wrapped", Box::new(|| functions::div(&a, &w))),
        ("int add wrapped int", Box::new(|| functions::add(&i, &wi))),
        ("int mul wrapped float", Box::new(|| functions::mul(&i, &w))),
        ("int div wrapped int", Box::new(|| functions::div(&i, &wi))),
        ("0-dim mul wrapped", Box::new(|| functions::mul(&s, &w))),
        (
            "mul_ wrapped",
            Box::new(|| {
                let x = fa();
                x.mul_(&w)?;
                Ok(x)
            }),
        ),
        (
            "int mul_ wrapped float",
            Box::new(|| {
                let x = ints(&[7, -3]);
                x.mul_(&w)?;
                Ok(x)
            }),
        ),
        (
            "add out=",
            Box::new(|| {
                let out = f(&[0.0; 4], &[2, 2]);
                {
                    functions::add_out(&out, &a, &b)?;
                    Ok(out)
                }
            }),
        ),
        (
            "add out= resized",
            Box::new(|| {
                let out = f(&[0.0], &[1]);
                {
                    functions::add_out(&out, &a, &b)?;
                    Ok(out)
                }
            }),
        ),
        (
            "add out= aliasing an input",
            Box::new(|| {
                let x = fa();
                let view = x.as_strided_with(&[2, 2], &[1, 2], Some(0))?;
                {
                    functions::add_out(&view, &x, &b)?;
                    Ok(x)
                }
            }),
        ),
        (
            "add_",
            Box::new(|| {
                let x = fa();
                {
                    x.add_(&b)?;
                    Ok(x)
                }
            }),
        ),
        (
            "add_ self twice",
            Box::new(|| {
                let x = fa();
                {
                    x.add_(&x)?;
                    Ok(x)
                }
            }),
        ),
        (
            "add_ broadcast into 0-dim self",
            Box::new(|| {
                let x = Tensor::from_slice(&[3.0f32], &[]).unwrap();
                {
                    x.add_(&a)?;
                    Ok(x)
                }
            }),
        ),
        (
            "div_ int",
            Box::new(|| {
                let x = ints(&[7, -3]);
                {
                    x.div_(&j)?;
                    Ok(x)
                }
            }),
        ),
        // Unary ops (`build_borrowing_unary`).
        ("exp", Box::new(|| functions::exp(&a))),
        ("exp int", Box::new(|| functions::exp(&i))),
        ("exp 0-dim", Box::new(|| functions::exp(&s))),
        ("exp wrapped", Box::new(|| functions::exp(&w))),
        ("exp transposed", Box::new(|| functions::exp(&a.t()?))),
        ("neg", Box::new(|| functions::neg(&a))),
        ("abs", Box::new(|| functions::abs(&b))),
        ("abs int", Box::new(|| functions::abs(&i))),
        ("abs transposed", Box::new(|| functions::abs(&b.t()?))),
        (
            "abs out= resized",
            Box::new(|| {
                let out = f(&[0.0], &[1]);
                functions::abs_out(&out, &b)?;
                Ok(out)
            }),
        ),
        (
            "abs out= of another dtype",
            Box::new(|| {
                let out = f(&[0.0; 2], &[2]);
                functions::abs_out(&out, &i)?;
                Ok(out)
            }),
        ),
        ("neg int", Box::new(|| functions::neg(&i))),
        (
            "exp out=",
            Box::new(|| {
                let out = f(&[0.0; 4], &[2, 2]);
                functions::exp_out(&out, &a)?;
                Ok(out)
            }),
        ),
        (
            "exp out= resized",
            Box::new(|| {
                let out = f(&[0.0], &[1]);
                functions::exp_out(&out, &a)?;
                Ok(out)
            }),
        ),
        (
            "exp out= int",
            Box::new(|| {
                let out = ints(&[0, 0]);
                functions::exp_out(&out, &i)?;
                Ok(out)
            }),
        ),
        (
            "neg out= of another dtype",
            Box::new(|| {
                let out = f(&[0.0; 2], &[2]);
                functions::neg_out(&out, &i)?;
                Ok(out)
            }),
        ),
        (
            "neg out= aliasing the input",
            Box::new(|| {
                let x = fa();
                let view = x.as_strided_with(&[2, 2], &[1, 2], Some(0))?;
                functions::neg_out(&view, &x)?;
                Ok(x)
            }),
        ),
        (
            "exp_",
            Box::new(|| {
                let x = fa();
                x.exp_()?;
                Ok(x)
            }),
        ),
        (
            "exp_ int",
            Box::new(|| {
                let x = ints(&[1, 2]);
                x.exp_()?;
                Ok(x)
            }),
        ),
    ];
    for (name, case) in &cases {
        FORCE_GENERAL_BUILD.with(|c| c.set(true));
        let general = show(case());
        FORCE_GENERAL_BUILD.with(|c| c.set(false));
        assert_eq!(general, show(case()), "{name}");
    }
    // The plain functional cases are built compactly.
    let before = TRIVIAL_BUILDS.with(|c| c.get());
    functions::add(&a, &b).unwrap();
    functions::exp(&a).unwrap();
    functions::neg(&i).unwrap();
    functions::mul(&a, &w).unwrap();
    assert_eq!(TRIVIAL_BUILDS.with(|c| c.get()), before + 4);
}
