//! The kernel loop paths against element-wise references, at the lengths and alignments where
//! they change: the contiguous path (ordinary and streamed stores), the fused half / bfloat16
//! pass, the scalar-operand path, around their chunk sizes, from unaligned starts, for every
//! instruction set the CPU has and with 2 threads above the size where outputs are streamed.

use half::{bf16, f16};
use ratten_aten::dispatch_stub::DispatchStub;
use ratten_aten::dispatch_stub::{detected_cpu_capability, with_cpu_capability, CpuCapability};
use ratten_aten::functions as F;
use ratten_aten::native::cpu::binary_kernels as bk;
use ratten_aten::native::cpu::{cast, Elem, Kind, SHORT_RUN, STREAM_MIN_BYTES};
use ratten_aten::tensor_iterator::{
    binary_op_config, comparison_op_config, get_num_threads, set_num_threads, ternary_op_config,
};
use ratten_aten::Tensor;
use ratten_core::dtype::{c128, c64};
use ratten_core::{Element, Scalar, ScalarType};

fn capabilities() -> Vec<CpuCapability> {
    [
        CpuCapability::Default,
        CpuCapability::Avx2,
        CpuCapability::Avx512,
    ]
    .into_iter()
    .filter(|c| *c <= detected_cpu_capability())
    .collect()
}

/// Lengths on both sides of the vector widths, the 64-element half chunk, the 512-byte
/// streamed chunk and the 256-element block.
const LENGTHS: [i64; 20] = [
    0, 1, 2, 7, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 515, 1031,
];

/// `n` elements starting `off` elements into a fresh tensor of `vals` (so starts are
/// misaligned by every amount up to a cache line).
fn view<T: Element + Elem>(vals: &[f64], off: i64, n: i64) -> Tensor {
    let data: Vec<T> = vals.iter().map(|&v| cast::<f64, T>(v)).collect();
    let t = Tensor::from_slice(&data, &[data.len() as i64]).unwrap();
    t.narrow(0, off, n).unwrap()
}

fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x % 20001) as f64 - 10000.0) / 64.0
        })
        .collect()
}

/// add(a, b, alpha) into an out= view through every capability's kernel, checked against
/// the element-wise reference computed in the opmath type `M`.
fn check_add<T: Element + Elem, M: Elem>(alpha: f64, scalar_b: bool, add: fn(M, M, M) -> M) {
    let dt = <T as Elem>::DTYPE;
    for cap in capabilities() {
        for n in LENGTHS {
            for off in [0i64, 1, 3, 5] {
                let len = (n + 16) as usize;
                let av = values(len, n as u64 * 7 + off as u64);
                let bv = values(len, n as u64 * 11 + 1);
                let a = view::<T>(&av, off, n);
                let b = if scalar_b {
                    view::<T>(&bv, 2, 1).expand(&[n]).unwrap()
                } else {
                    view::<T>(&bv, (off * 3) % 7, n)
                };
                let out = Tensor::empty(&[len as i64], dt)
                    .unwrap()
                    .narrow(0, (off * 5) % 11, n)
                    .unwrap();
                run_add(cap, &out, &a, &b, &Scalar::Double(alpha));
                let (ga, gb) = (a.to_vec::<T>().unwrap(), b.to_vec::<T>().unwrap());
                let got = out.to_vec::<T>().unwrap();
                let al = cast::<f64, M>(alpha);
                for i in 0..n as usize {
                    let want: T = cast(add(cast(ga[i]), cast(gb[i]), al));
                    assert!(
                        got[i] == want,
                        "{dt} {cap:?} n={n} off={off} scalar_b={scalar_b} element {i}"
                    );
                }
            }
        }
    }
}

#[test]
fn half_and_bfloat16_fused_pass_at_every_boundary() {
    for alpha in [1.0, -2.5] {
        for scalar_b in [false, true] {
            check_add::<f16, f32>(alpha, scalar_b, |x, y, a| x + a * y);
            check_add::<bf16, f32>(alpha, scalar_b, |x, y, a| x + a * y);
        }
    }
}

#[test]
fn contiguous_paths_at_every_boundary() {
    for scalar_b in [false, true] {
        check_add::<f32, f32>(1.0, scalar_b, |x, y, a| x + a * y);
        check_add::<f64, f64>(2.0, scalar_b, |x, y, a| x + a * y);
        check_add::<i64, i64>(3.0, scalar_b, |x, y, a| x.wrapping_add(a.wrapping_mul(y)));
    }
}

/// Above STREAM_MIN_BYTES of output, from a misaligned start, with 1 and 2 threads (each
/// thread's half starts at its own alignment): f32, half, bfloat16 and int32 + float32 adds,
/// each element checked.
#[test]
fn streamed_outputs_with_one_and_two_threads() {
    fn run<T: Element + Elem>(n: i64) {
        let a = Tensor::from_slice(
            &(0..n + 3)
                .map(|i| cast::<f64, T>((i % 1000) as f64))
                .collect::<Vec<T>>(),
            &[n + 3],
        )
        .unwrap()
        .narrow(0, 3, n)
        .unwrap();
        let b = Tensor::full(&[n], Scalar::Double(0.5), <T as Elem>::DTYPE).unwrap();
        let out = Tensor::empty(&[n + 1], <T as Elem>::DTYPE)
            .unwrap()
            .narrow(0, 1, n)
            .unwrap();
        F::add_out(&out, &a, &b).unwrap();
        let got = out.to_vec::<T>().unwrap();
        for (i, g) in got.iter().enumerate() {
            // The input is rounded to T first (bfloat16 holds 257 as 256).
            let x: T = cast(((i + 3) % 1000) as f64);
            let want: T = cast(cast::<T, f32>(x) + 0.5);
            assert!(*g == want, "{} n={n} element {i}", <T as Elem>::DTYPE);
        }
    }
    // int32 + float32 into float32 (the fused pass), int32 first and second.
    fn mixed(n: i64) {
        let ints: Vec<i32> = (0..n + 1).map(|i| (i % 1000) as i32 - 500).collect();
        let a = Tensor::from_slice(&ints, &[n + 1])
            .unwrap()
            .narrow(0, 1, n)
            .unwrap();
        let b = Tensor::full(&[n], Scalar::Double(0.25), ratten_core::ScalarType::Float).unwrap();
        let out = Tensor::empty(&[n + 3], ratten_core::ScalarType::Float)
            .unwrap()
            .narrow(0, 3, n)
            .unwrap();
        for (x, y) in [(&a, &b), (&b, &a)] {
            F::add_out(&out, x, y).unwrap();
            let got = out.to_vec::<f32>().unwrap();
            for (i, g) in got.iter().enumerate() {
                let want = ((i + 1) % 1000) as f32 - 500.0 + 0.25;
                assert!(*g == want, "int32 + float32 n={n} element {i}");
            }
        }
    }
    let before = get_num_threads();
    for threads in [1, 2] {
        set_num_threads(threads).unwrap();
        mixed((STREAM_MIN_BYTES / 4) as i64 + 331);
        run::<f32>((STREAM_MIN_BYTES / 4) as i64 + 1037);
        run::<f16>((STREAM_MIN_BYTES / 2) as i64 + 77);
        run::<bf16>((STREAM_MIN_BYTES / 2) as i64 + 5);
    }
    set_num_threads(before as i64).unwrap();
}

/// 1-D runs of at most `SHORT_RUN` elements take the scalar short path (for inputs of the
/// computation type, or all half / bfloat16); each family (float, half, bfloat16, int, bool,
/// complex, a comparison of halves into bool, and mixed int32 + float32, which falls back to
/// the general paths) must give exactly what the vector paths give for the same elements,
/// computed here on runs of 40: contiguous, strided, and with a stride-0 second input.
#[test]
fn short_runs_match_the_vector_paths() {
    fn data<T: Element + Elem>(len: usize, seed: u64) -> Tensor {
        let v: Vec<T> = values(len, seed)
            .into_iter()
            .map(|x| {
                if <T as Elem>::KIND == Kind::Bool {
                    cast::<i64, T>(x.round() as i64 % 2)
                } else {
                    cast::<f64, T>(x)
                }
            })
            .collect();
        Tensor::from_slice(&v, &[len as i64]).unwrap()
    }
    fn check<A: Element + Elem, B: Element + Elem, O: Element + Elem + std::fmt::Debug>(
        name: &str,
        op: impl Fn(&Tensor, &Tensor) -> Tensor,
    ) {
        const LONG: i64 = 40;
        assert!(LONG as usize > SHORT_RUN);
        let (a_all, b_all) = (data::<A>(130, 1), data::<B>(130, 2));
        for (step, scalar_b) in [(1i64, false), (2, false), (1, true), (3, true)] {
            let a = |off: i64, n: i64| {
                a_all
                    .as_strided_with(&[n], &[step], Some(off * step))
                    .unwrap()
            };
            let b = |off: i64, n: i64| {
                if scalar_b {
                    b_all.as_strided_with(&[n], &[0], Some(5)).unwrap()
                } else {
                    b_all
                        .as_strided_with(&[n], &[step], Some(off * step))
                        .unwrap()
                }
            };
            let want = op(&a(0, LONG), &b(0, LONG)).to_vec::<O>().unwrap();
            for n in 0..=SHORT_RUN as i64 + 1 {
                for off in [0, 1, 7, LONG - n] {
                    let got = op(&a(off, n), &b(off, n)).to_vec::<O>().unwrap();
                    let w = &want[off as usize..(off + n) as usize];
                    assert!(
                        got == w,
                        "{name} step={step} scalar_b={scalar_b} n={n} off={off}: {got:?} != {w:?}"
                    );
                }
            }
        }
    }
    check::<f32, f32, f32>("f32 add", |a, b| F::add(a, b).unwrap());
    check::<f64, f64, f64>("f64 mul", |a, b| F::mul(a, b).unwrap());
    check::<f16, f16, f16>("f16 add", |a, b| F::add(a, b).unwrap());
    check::<bf16, bf16, bf16>("bf16 mul", |a, b| F::mul(a, b).unwrap());
    check::<f16, f16, bool>("f16 lt", |a, b| a.lt(b).unwrap());
    check::<i32, i32, i32>("i32 add", |a, b| F::add(a, b).unwrap());
    check::<i8, i8, i8>("i8 mul", |a, b| F::mul(a, b).unwrap());
    check::<bool, bool, bool>("bool add", |a, b| F::add(a, b).unwrap());
    check::<bool, bool, bool>("bool mul", |a, b| F::mul(a, b).unwrap());
    check::<c64, c64, c64>("c64 mul", |a, b| F::mul(a, b).unwrap());
    check::<c128, c128, bool>("c128 eq", |a, b| a.eq(b).unwrap());
    check::<i32, f32, f32>("i32 + f32", |a, b| F::add(a, b).unwrap());
}

/// The tiled loop of a transposed input (one operand moving far along the inner dimension):
/// every dtype family through it (4- and 8-byte inputs of the computation type take the
/// vector transposes, int32 + float32 the casting copy, 1-, 2- and 16-byte types, half and
/// bool the element copy), on shapes with full tiles, partial tiles on either edge and a row
/// pitch wider than the rows, through every capability's kernel, with 1 and 2 threads (whose
/// chunks start mid-row), each element checked against the element-wise reference.
#[test]
fn transposed_tiles_for_every_dtype_family_and_edge() {
    fn data<T: Element + Elem>(n: usize, seed: u64) -> Vec<T> {
        values(n, seed)
            .into_iter()
            .map(|x| {
                if <T as Elem>::KIND == Kind::Bool {
                    cast::<i64, T>(x.round() as i64 % 2)
                } else {
                    cast::<f64, T>(x)
                }
            })
            .collect()
    }
    /// out = a + alpha * b^T with `a` of dtype A, `b` of dtype B, computed in M into O.
    fn check<A, B, O, M>(add: fn(M, M, M) -> M, alpha: f64)
    where
        A: Element + Elem,
        B: Element + Elem,
        O: Element + Elem,
        M: Elem,
    {
        const PAD: i64 = 260;
        for cap in capabilities() {
            for (rows, cols) in [
                (64i64, 64i64),
                (67, 131),
                (130, 65),
                (16, 300),
                (65, 64),
                (200, 97),
            ] {
                let av = data::<A>((rows * cols) as usize, (rows * 3 + cols) as u64);
                let a = Tensor::from_slice(&av, &[rows, cols]).unwrap();
                let bv = data::<B>((cols * (rows + PAD)) as usize, (rows + cols * 5) as u64);
                let b = Tensor::from_slice(&bv, &[cols, rows + PAD])
                    .unwrap()
                    .narrow(1, 3, rows)
                    .unwrap()
                    .t()
                    .unwrap();
                let out = Tensor::empty(&[rows, cols], <O as Elem>::DTYPE).unwrap();
                run_add(cap, &out, &a, &b, &Scalar::Double(alpha));
                let got = out.to_vec::<O>().unwrap();
                let al = cast::<f64, M>(alpha);
                for r in 0..rows as usize {
                    for c in 0..cols as usize {
                        let x = cast::<A, M>(av[r * cols as usize + c]);
                        let y = cast::<B, M>(bv[c * (rows + PAD) as usize + 3 + r]);
                        let want: O = cast(add(x, y, al));
                        assert!(
                            got[r * cols as usize + c] == want,
                            "{} + {} {cap:?} {rows}x{cols} at ({r}, {c})",
                            <A as Elem>::DTYPE,
                            <B as Elem>::DTYPE
                        );
                    }
                }
            }
        }
    }
    fn wrapping<T: Elem>(x: T, y: T, a: T) -> T {
        cast(cast::<T, i64>(x).wrapping_add(cast::<T, i64>(a).wrapping_mul(cast::<T, i64>(y))))
    }
    let before = get_num_threads();
    for threads in [1, 2] {
        set_num_threads(threads).unwrap();
        check::<f32, f32, f32, f32>(|x, y, a| x + a * y, -1.5);
        check::<i32, i32, i32, i32>(wrapping::<i32>, 3.0);
        check::<f64, f64, f64, f64>(|x, y, a| x + a * y, 2.0);
        check::<i64, i64, i64, i64>(wrapping::<i64>, -2.0);
        check::<c64, c64, c64, c64>(|x, y, a| x + a * y, 1.0);
        check::<i32, f32, f32, f32>(|x, y, a| x + a * y, 1.0);
        check::<i8, i8, i8, i8>(wrapping::<i8>, 1.0);
        check::<i16, i16, i16, i16>(wrapping::<i16>, 2.0);
        check::<c128, c128, c128, c128>(|x, y, a| x + a * y, 1.0);
        check::<f16, f16, f16, f32>(|x, y, a| x + a * y, 1.0);
        check::<bool, bool, bool, bool>(|x, y, _| x || y, 1.0);
    }
    set_num_threads(before as i64).unwrap();
}

/// A `rows` x `cols` contiguous operand and a transposed one of the same shape (its storage
/// `cols` x `rows + PAIR_PAD`, narrowed: a row pitch wider than the rows), with their values.
struct TransposedPair<T> {
    a: Tensor,
    bt: Tensor,
    av: Vec<T>,
    bv: Vec<T>,
    rows: usize,
    cols: usize,
}

const PAIR_PAD: usize = 37;

impl<T: Element + Elem> TransposedPair<T> {
    fn new(rows: usize, cols: usize, seed: u64) -> Self {
        let data =
            |n: usize, s: u64| -> Vec<T> { values(n, s).into_iter().map(cast::<f64, T>).collect() };
        let av = data(rows * cols, seed);
        let bv = data(cols * (rows + PAIR_PAD), seed + 1);
        let a = Tensor::from_slice(&av, &[rows as i64, cols as i64]).unwrap();
        let bt = Tensor::from_slice(&bv, &[cols as i64, (rows + PAIR_PAD) as i64])
            .unwrap()
            .narrow(1, 3, rows as i64)
            .unwrap()
            .t()
            .unwrap();
        TransposedPair {
            a,
            bt,
            av,
            bv,
            rows,
            cols,
        }
    }
    fn a_at(&self, r: usize, c: usize) -> T {
        self.av[r * self.cols + c]
    }
    fn b_at(&self, r: usize, c: usize) -> T {
        self.bv[c * (self.rows + PAIR_PAD) + 3 + r]
    }
}

/// Shapes for the fused transposed path: whole 64 x 64 tiles, tile and block edges on either
/// side (odd sizes, fewer rows than a block), and two above the grain size, so that with 2
/// threads each chunk starts mid-row.
const FUSED_SHAPES: [(usize, usize); 8] = [
    (64, 64),
    (67, 131),
    (130, 65),
    (5, 257),
    (33, 70),
    (16, 300),
    (261, 203),
    (190, 311),
];

/// For every capability the CPU has, with 1 and 2 threads, on every shape of
/// [`FUSED_SHAPES`]: `run(cap, pair)` gives an output of `O`s, each element of which must be
/// `want(pair, r, c)`.
fn for_fused_cases<T: Element + Elem, O: Element + Elem + PartialEq + std::fmt::Debug>(
    name: &str,
    run: impl Fn(CpuCapability, &TransposedPair<T>) -> Tensor,
    want: impl Fn(&TransposedPair<T>, usize, usize) -> O,
) {
    let before = get_num_threads();
    for threads in [1, 2] {
        set_num_threads(threads).unwrap();
        for cap in capabilities() {
            for (k, &(rows, cols)) in FUSED_SHAPES.iter().enumerate() {
                let pair = TransposedPair::<T>::new(rows, cols, k as u64 * 13 + 5);
                let got = run(cap, &pair).to_vec::<O>().unwrap();
                assert_eq!(got.len(), rows * cols, "{name}: output size");
                for r in 0..rows {
                    for c in 0..cols {
                        let w = want(&pair, r, c);
                        assert!(
                            got[r * cols + c] == w,
                            "{name} {cap:?} {threads} thread(s) {rows}x{cols} at ({r}, {c}): \
                             {:?} != {w:?}",
                            got[r * cols + c]
                        );
                    }
                }
            }
        }
    }
    set_num_threads(before as i64).unwrap();
}

/// `op(a, b^T)` into a fresh output through `stub`'s kernel for each capability, against
/// `want(a, b)` element by element.
fn binary_fused<T: Element + Elem, O: Element + Elem + PartialEq + std::fmt::Debug>(
    name: &str,
    stub: &DispatchStub<bk::BinaryFn>,
    compare: bool,
    want: fn(T, T) -> O,
) {
    for_fused_cases::<T, O>(
        name,
        |cap, p| {
            let out = Tensor::empty(&[p.rows as i64, p.cols as i64], <O as Elem>::DTYPE).unwrap();
            let config = if compare {
                comparison_op_config(&out, &p.a, &p.bt)
            } else {
                binary_op_config(&out, &p.a, &p.bt)
            };
            let iter = config.unwrap().build_standalone().unwrap();
            with_cpu_capability(cap, || (stub.cpu())(&iter))
                .unwrap()
                .unwrap();
            drop(iter);
            out
        },
        |p, r, c| want(p.a_at(r, c), p.b_at(r, c)),
    );
}

/// The fused transposed path (the op computed straight from the transposed registers) for
/// ops of every kind it takes: float and complex products (4- and 8-byte lanes), integer
/// maxima, a comparison into bool (a result type other than the computation type); and ops
/// it leaves to the tile path: 2-byte lanes (no vector transpose), a mixed-dtype comparison.
#[test]
fn fused_transposed_tiles_for_every_op_kind() {
    binary_fused::<f32, f32>("f32 mul", &bk::MUL_STUB, false, |x, y| x * y);
    binary_fused::<f64, f64>("f64 mul", &bk::MUL_STUB, false, |x, y| x * y);
    binary_fused::<c64, c64>("c64 mul", &bk::MUL_STUB, false, |x, y| x * y);
    binary_fused::<i32, i32>("i32 maximum", &bk::MAXIMUM_STUB, false, |x, y| x.max(y));
    binary_fused::<i64, i64>("i64 maximum", &bk::MAXIMUM_STUB, false, |x, y| x.max(y));
    binary_fused::<f32, bool>("f32 lt", &bk::LT_STUB, true, |x, y| x < y);
    binary_fused::<f64, bool>("f64 ge", &bk::GE_STUB, true, |x, y| x >= y);
    binary_fused::<i16, i16>("i16 maximum", &bk::MAXIMUM_STUB, false, |x, y| x.max(y));
    binary_fused::<f16, bool>("f16 gt", &bk::GT_STUB, true, |x, y| x > y);
}

/// A ternary op (addcmul: `s + v * t1 * t2`) with the transposed operand in each input
/// position, and an in-place add whose output is its contiguous input (`a += b^T`): the fused
/// path reads each block of `a` before it writes it.
#[test]
fn fused_transposed_ternary_and_in_place() {
    use ratten_aten::native::cpu::unary_kernels::ADDCMUL_STUB;
    for position in 0..3 {
        for_fused_cases::<f32, f32>(
            &format!("addcmul, transposed input {position}"),
            |cap, p| {
                let out =
                    Tensor::empty(&[p.rows as i64, p.cols as i64], ScalarType::Float).unwrap();
                let c = F::add(&p.a, &p.a).unwrap();
                let mut ins = [&p.a, &c, &c];
                ins[position] = &p.bt;
                let iter = ternary_op_config(&out, ins[0], ins[1], ins[2])
                    .unwrap()
                    .build_standalone()
                    .unwrap();
                with_cpu_capability(cap, || (ADDCMUL_STUB.cpu())(&iter, &Scalar::Double(0.5)))
                    .unwrap()
                    .unwrap();
                drop(iter);
                out
            },
            |p, r, c| {
                let (a, b) = (p.a_at(r, c), p.b_at(r, c));
                let mut x = [a, a + a, a + a];
                x[position] = b;
                x[0] + 0.5 * x[1] * x[2]
            },
        );
    }
    for_fused_cases::<f32, f32>(
        "f32 a += b^T",
        |cap, p| {
            let a = Tensor::from_slice(&p.av, &[p.rows as i64, p.cols as i64]).unwrap();
            run_add(cap, &a, &a, &p.bt, &Scalar::Double(1.0));
            a
        },
        |p, r, c| p.a_at(r, c) + p.b_at(r, c),
    );
    for_fused_cases::<i64, i64>(
        "i64 a -= 3 b^T",
        |cap, p| {
            let a = Tensor::from_slice(&p.av, &[p.rows as i64, p.cols as i64]).unwrap();
            run_add(cap, &a, &a, &p.bt, &Scalar::Int(-3));
            a
        },
        |p, r, c| p.a_at(r, c).wrapping_sub(p.b_at(r, c).wrapping_mul(3)),
    );
}

/// Both inputs transposed (the fused path takes one): the tile path, for every capability.
#[test]
fn two_transposed_inputs_take_the_tile_path() {
    for_fused_cases::<f32, f32>(
        "f32 a^T^T + b^T",
        |cap, p| {
            let at = p.a.t().unwrap().contiguous().unwrap().t().unwrap();
            let out = Tensor::empty(&[p.rows as i64, p.cols as i64], ScalarType::Float).unwrap();
            run_add(cap, &out, &at, &p.bt, &Scalar::Double(2.0));
            out
        },
        |p, r, c| p.a_at(r, c) + 2.0 * p.b_at(r, c),
    );
}

/// `out = a + alpha * b` through `ADD_STUB`'s kernel for `cap`, on an iterator built as the
/// binary ops build theirs (the iterator is dropped before `out` is read).
fn run_add(cap: CpuCapability, out: &Tensor, a: &Tensor, b: &Tensor, alpha: &Scalar) {
    let iter = binary_op_config(out, a, b)
        .unwrap()
        .build_standalone()
        .unwrap();
    with_cpu_capability(cap, || (bk::ADD_STUB.cpu())(&iter, alpha))
        .unwrap()
        .unwrap();
}

/// `rows` x `cols` contiguous rows starting `off` elements into a fresh buffer (rows start
/// mid-line, as numpy's do 16 bytes in), holding `vals`.
fn offset_matrix<T: Element + Elem>(vals: &[T], rows: usize, cols: usize, off: usize) -> Tensor {
    let mut data = vec![T::default(); off];
    data.extend_from_slice(vals);
    Tensor::from_slice(&data, &[data.len() as i64])
        .unwrap()
        .narrow(0, off as i64, (rows * cols) as i64)
        .unwrap()
        .view(&[rows as i64, cols as i64])
        .unwrap()
}

/// The fused transposed path's block grid, shifted to where the output's rows are
/// line-aligned, and its streamed stores: outputs starting every few elements into a line
/// (grid offsets 0 to 15 and the left / right edge columns they leave), row pitches that are
/// whole lines and ones that are not (no streaming), odd shapes, and outputs of at least
/// `STREAM_MIN_BYTES` (non-temporal stores where the aligned rows allow, for 32- and 64-byte
/// columns: AVX2 and AVX-512, f32 and f64), into out= and in place (`a += b^T` with `a`
/// offset), for every capability and 1 and 2 threads.
#[test]
fn fused_transposed_out_offsets_and_streaming() {
    fn run<T: Element + Elem + std::ops::Add<Output = T> + std::fmt::Debug>(
        shapes: &[(usize, usize)],
        offsets: &[usize],
    ) {
        let before = get_num_threads();
        for threads in [1, 2] {
            set_num_threads(threads).unwrap();
            for cap in capabilities() {
                for (k, &(rows, cols)) in shapes.iter().enumerate() {
                    let p = TransposedPair::<T>::new(rows, cols, k as u64 * 7 + 1);
                    for &off in offsets {
                        let fresh = vec![T::default(); rows * cols];
                        for in_place in [false, true] {
                            let out = if in_place {
                                offset_matrix(&p.av, rows, cols, off)
                            } else {
                                offset_matrix(&fresh, rows, cols, off)
                            };
                            let a = if in_place { &out } else { &p.a };
                            run_add(cap, &out, a, &p.bt, &Scalar::Double(1.0));
                            let got = out.to_vec::<T>().unwrap();
                            for r in 0..rows {
                                for c in 0..cols {
                                    let w = p.a_at(r, c) + p.b_at(r, c);
                                    assert!(
                                        got[r * cols + c] == w,
                                        "{:?} {cap:?} {threads} thread(s) {rows}x{cols} out \
                                         offset {off} in place {in_place} at ({r}, {c}): \
                                         {:?} != {w:?}",
                                        <T as Elem>::DTYPE,
                                        got[r * cols + c]
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
        set_num_threads(before as i64).unwrap();
    }
    // Small: line-pitched rows (64 and 320 f32, 64 f64) and not (131, 100), fewer rows than a
    // block, offsets across a line.
    run::<f32>(
        &[(70, 64), (37, 320), (67, 131), (9, 100)],
        &[0, 1, 5, 12, 15],
    );
    run::<f64>(&[(70, 64), (33, 131)], &[0, 3, 7]);
    // At least STREAM_MIN_BYTES of output: streamed where rows are whole lines apart (2048
    // columns), from a line-aligned start and from numpy's 16 bytes in (4 f32 / 2 f64
    // elements); not streamed where rows are not whole lines apart (2050 columns).
    let big = STREAM_MIN_BYTES / 4 / 2048;
    run::<f32>(&[(big, 2048)], &[0, 4]);
    run::<f32>(&[(big + 3, 2050)], &[4]);
    run::<f64>(&[(big / 2, 2048)], &[2]);
}

/// sin, cos and tan decide per chunk whether a contiguous run takes the vectorised form
/// (every argument below 4.2e8 in magnitude) or the scalar one (libm beyond): every element
/// must have the scalar form's value whichever path, chunk, capability or layout computed it,
/// with huge values, infinities and NaN in some chunks; f16 and bf16 run through f32.
#[test]
fn trigonometry_is_the_scalar_form_on_every_path() {
    use ratten_aten::native::cpu::unary_kernels::{COS_STUB, SIN_STUB, TAN_STUB};
    use ratten_aten::native::cpu::vec_math::{cos_f32, sin_f32, tan_f32};
    use ratten_aten::tensor_iterator::unary_float_op_config;
    type Stub = DispatchStub<ratten_aten::native::cpu::unary_kernels::UnaryFn>;
    type Op = (&'static str, &'static Stub, fn(f32) -> f32, fn(f64) -> f64);
    let ops: [Op; 3] = [
        ("sin", &SIN_STUB, sin_f32, f64::sin),
        ("cos", &COS_STUB, cos_f32, f64::cos),
        ("tan", &TAN_STUB, tan_f32, f64::tan),
    ];
    fn same<T: Elem>(a: T, b: T) -> bool {
        let (x, y) = (cast::<T, f64>(a), cast::<T, f64>(b));
        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
    }
    fn check<T: Element + Elem>(
        cap: CpuCapability,
        stub: &Stub,
        want: impl Fn(T) -> T,
        what: &str,
    ) {
        let dt = <T as Elem>::DTYPE;
        for n in LENGTHS {
            let mut vals = values(n as usize * 2 + 8, n as u64 + 5);
            // Out-of-range arguments in some chunks (the first, one mid-run, the tail).
            for (i, v) in [(0, 1e20), (20, f64::NAN), (40, f64::INFINITY), (41, -5e8)] {
                if n > 40 {
                    vals[i * n as usize / 64] = v;
                }
            }
            for stride in [1i64, 2] {
                let base = view::<T>(&vals, 3, n * stride);
                let a = base.as_strided(&[n], &[stride]).unwrap();
                let ga = a.to_vec::<T>().unwrap();
                let out = Tensor::empty(&[n + 1], dt)
                    .unwrap()
                    .narrow(0, 1, n)
                    .unwrap();
                let iter = unary_float_op_config(&out, &a)
                    .unwrap()
                    .build_standalone()
                    .unwrap();
                with_cpu_capability(cap, || (stub.cpu())(&iter))
                    .unwrap()
                    .unwrap();
                drop(iter);
                let got = out.to_vec::<T>().unwrap();
                // In place, over a contiguous copy.
                let inplace = Tensor::from_slice(&ga, &[n]).unwrap();
                let iter = unary_float_op_config(&inplace, &inplace)
                    .unwrap()
                    .build_standalone()
                    .unwrap();
                with_cpu_capability(cap, || (stub.cpu())(&iter))
                    .unwrap()
                    .unwrap();
                drop(iter);
                let got_inplace = inplace.to_vec::<T>().unwrap();
                for i in 0..n as usize {
                    let w = want(ga[i]);
                    assert!(
                        same(got[i], w) && same(got_inplace[i], w),
                        "{what} {dt} {cap:?} n={n} stride={stride} element {i}: {:?} {:?} want {:?}",
                        cast::<T, f64>(got[i]),
                        cast::<T, f64>(got_inplace[i]),
                        cast::<T, f64>(w)
                    );
                }
            }
        }
    }
    for cap in capabilities() {
        for (name, stub, f32_form, f64_form) in ops {
            check::<f32>(cap, stub, f32_form, name);
            check::<f16>(cap, stub, |x| f16::from_f32(f32_form(x.to_f32())), name);
            check::<bf16>(cap, stub, |x| bf16::from_f32(f32_form(x.to_f32())), name);
            check::<f64>(cap, stub, f64_form, name);
        }
    }
    // Against the f64 functions: within an ulp of f32 on the values the loops saw.
    let xs: Vec<f32> = values(4096, 77).iter().map(|&v| v as f32 * 1e3).collect();
    let t = Tensor::from_slice(&xs, &[xs.len() as i64]).unwrap();
    let s = F::sin(&t).unwrap().to_vec::<f32>().unwrap();
    for (x, y) in xs.iter().zip(&s) {
        let r = (*x as f64).sin();
        let ulp = f32::EPSILON as f64 * r.abs().max(f32::MIN_POSITIVE as f64);
        assert!((*y as f64 - r).abs() <= ulp, "sin({x}) = {y}, want {r}");
    }
}
