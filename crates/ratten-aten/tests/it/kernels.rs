//! The vectorised CPU kernels against their scalar references: half/bfloat16 conversions over
//! every bit pattern, f16/bf16 add and mul bit-exact on random data for every instruction set
//! the CPU has, the tiled loop (transposed operands) against the untiled one on odd shapes for
//! every dtype and binary op with 1 and 2 threads, and fused mixed-dtype passes.

use half::{bf16, f16};
use ratten_aten::dispatch_stub::{
    detected_cpu_capability, with_cpu_capability, CpuCapability, DispatchStub, IsaAvx2, IsaAvx512,
    IsaDefault,
};
use ratten_aten::functions as F;
use ratten_aten::native::cpu::binary_kernels as bk;
use ratten_aten::native::cpu::{
    cast, f16_to_f32_slice, f32_to_f16_slice, load_block, store_block, Elem,
};
use ratten_aten::tensor_iterator::{
    binary_op_config, comparison_op_config, set_num_threads, TensorIterator,
};
use ratten_aten::Tensor;
use ratten_core::{dispatch_all_types, Scalar, ScalarType};

/// The capabilities this CPU can run (DEFAULT always).
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

/// c10's `round_to_nearest_even` written as PyTorch writes it (with the branch).
fn c10_bf16(v: f32) -> u16 {
    if v.is_nan() {
        return 0x7fc0;
    }
    let u = v.to_bits();
    let bias = ((u >> 16) & 1) + 0x7fff;
    (u.wrapping_add(bias) >> 16) as u16
}

/// f32 bit patterns covering every sign/exponent/top-mantissa combination with the low bits
/// that decide rounding (ties, just below/above ties, sticky bits), NaN payloads and
/// subnormals included.
fn f32_patterns() -> Vec<f32> {
    let lows: [u32; 9] = [0, 1, 0x0fff, 0x1000, 0x1001, 0x7fff, 0x8000, 0x8001, 0xffff];
    let mut v = Vec::with_capacity(65536 * lows.len());
    for hi in 0..=0xffffu32 {
        for lo in lows {
            v.push(f32::from_bits((hi << 16) | lo));
        }
    }
    v
}

/// Runs `f` for each ISA marker the CPU supports.
macro_rules! for_each_isa {
    ($I:ident => $body:block) => {{
        let caps = capabilities();
        {
            type $I = IsaDefault;
            $body
        }
        if caps.contains(&CpuCapability::Avx2) {
            type $I = IsaAvx2;
            $body
        }
        if caps.contains(&CpuCapability::Avx512) {
            type $I = IsaAvx512;
            $body
        }
    }};
}

#[test]
fn f16_to_f32_every_bit_pattern() {
    let src: Vec<f16> = (0..=0xffffu16).map(f16::from_bits).collect();
    for_each_isa!(I => {
        let mut dst = vec![0f32; src.len()];
        // SAFETY: both slices hold src.len() elements; I is supported by this CPU.
        unsafe { f16_to_f32_slice::<I>(src.as_ptr(), dst.as_mut_ptr(), src.len()) };
        for (h, d) in src.iter().zip(&dst) {
            assert_eq!(d.to_bits(), h.to_f32().to_bits(), "{:#06x}", h.to_bits());
        }
    });
}

#[test]
fn f32_to_f16_matches_the_scalar_rounding() {
    let src = f32_patterns();
    for_each_isa!(I => {
        let mut dst = vec![f16::ZERO; src.len()];
        // SAFETY: both slices hold src.len() elements; I is supported by this CPU.
        unsafe { f32_to_f16_slice::<I>(src.as_ptr(), dst.as_mut_ptr(), src.len()) };
        for (v, d) in src.iter().zip(&dst) {
            assert_eq!(
                d.to_bits(),
                f16::from_f32(*v).to_bits(),
                "{:#010x}",
                v.to_bits()
            );
        }
    });
    // Known roundings: ties to even, the largest finite, overflow, subnormals.
    let cases: [(f32, u16); 6] = [
        (1.0 + 1.0 / 2048.0, 0x3c00),
        (1.0 + 3.0 / 2048.0, 0x3c02),
        (65504.0, 0x7bff),
        (65520.0, 0x7c00),
        (5.960_464_5e-8, 0x0001),
        (-0.0, 0x8000),
    ];
    for (v, bits) in cases {
        assert_eq!(f16::from_f32(v).to_bits(), bits, "{v}");
    }
}

#[test]
fn bf16_conversions_are_c10s_for_every_pattern() {
    let src = f32_patterns();
    for_each_isa!(I => {
        let mut dst = vec![bf16::ZERO; src.len()];
        // SAFETY: dst holds src.len() contiguous bf16s (byte stride 2); I is supported.
        unsafe {
            store_block::<I, f32>(ScalarType::BFloat16, dst.as_mut_ptr().cast(), 2, &src)
        };
        for (v, d) in src.iter().zip(&dst) {
            assert_eq!(d.to_bits(), c10_bf16(*v), "{:#010x}", v.to_bits());
        }
        let all: Vec<bf16> = (0..=0xffffu16).map(bf16::from_bits).collect();
        let mut back = vec![0f32; all.len()];
        // SAFETY: `all` holds back.len() contiguous bf16s; I is supported.
        unsafe { load_block::<I, f32>(ScalarType::BFloat16, all.as_ptr().cast(), 2, &mut back) };
        for (b, f) in all.iter().zip(&back) {
            assert_eq!(f.to_bits(), (b.to_bits() as u32) << 16);
        }
    });
    // Through the public operator too (copy with dtype conversion).
    let t = Tensor::from_slice(&src, &[src.len() as i64]).unwrap();
    let b = t
        .to_dtype(ScalarType::BFloat16)
        .unwrap()
        .to_vec::<bf16>()
        .unwrap();
    for (v, d) in src.iter().zip(&b) {
        assert_eq!(d.to_bits(), c10_bf16(*v), "{:#010x}", v.to_bits());
    }
    // c10 rounds a double through float (double rounding included).
    let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
    assert_eq!(cast::<f64, bf16>(x).to_bits(), 0x3f80);
    let y = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
    assert_eq!(cast::<f64, f16>(y).to_bits(), 0x3c00);
}

/// A deterministic pseudo-random generator (xorshift), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f32(&mut self) -> f32 {
        (self.next() % 2_000_001) as f32 / 1000.0 - 1000.0
    }
}

fn build(
    config: ratten_core::Result<ratten_aten::tensor_iterator::TensorIteratorConfig>,
) -> TensorIterator {
    config.unwrap().build_standalone().unwrap()
}

/// Runs a stub's kernel for every capability the CPU has, checking each output against `want`.
fn check_binary_stub(
    stub: &DispatchStub<bk::BinaryFn>,
    a: &Tensor,
    b: &Tensor,
    out_dtype: ScalarType,
    want: &[u16],
) {
    for cap in capabilities() {
        let out = Tensor::empty(&a.sizes(), out_dtype).unwrap();
        let iter = build(binary_op_config(&out, a, b));
        with_cpu_capability(cap, || (stub.cpu())(&iter))
            .unwrap()
            .unwrap();
        let got: Vec<u16> = dispatch_all_types!(out_dtype, T => out
            .to_vec::<T>()
            .unwrap()
            .into_iter()
            .map(|v| {
                // SAFETY: only called with 2-byte dtypes (half, bfloat16).
                unsafe { std::mem::transmute_copy::<T, u16>(&v) }
            })
            .collect());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g, w, "{} {cap:?} element {i}", stub.name());
        }
    }
}

fn reduced_case<T: Elem + ratten_core::Element>(dtype: ScalarType, to_bits: fn(T) -> u16) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Lengths with vector tails and block remainders.
    for n in [1usize, 15, 17, 255, 257, 1000, 4099] {
        let xa: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
        let xb: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
        let a = (Tensor::from_slice(&xa, &[n as i64]).unwrap())
            .to_dtype(dtype)
            .unwrap();
        let b = (Tensor::from_slice(&xb, &[n as i64]).unwrap())
            .to_dtype(dtype)
            .unwrap();
        let va = a.to_vec::<T>().unwrap();
        let vb = b.to_vec::<T>().unwrap();
        // opmath: f32 compute, one rounding to the reduced type.
        let want = |op: fn(f32, f32) -> f32, b_scalar: bool| -> Vec<u16> {
            (0..n)
                .map(|i| {
                    let y = if b_scalar { vb[0] } else { vb[i] };
                    to_bits(T::from_f32(op(va[i].to_f32(), y.to_f32())))
                })
                .collect()
        };
        let add_stub = |x: &Tensor, y: &Tensor, w: &[u16]| {
            for cap in capabilities() {
                let out = Tensor::empty(&[n as i64], dtype).unwrap();
                let iter = build(binary_op_config(&out, x, y));
                with_cpu_capability(cap, || (bk::ADD_STUB.cpu())(&iter, &Scalar::Int(1)))
                    .unwrap()
                    .unwrap();
                let got: Vec<u16> = out
                    .to_vec::<T>()
                    .unwrap()
                    .into_iter()
                    .map(to_bits)
                    .collect();
                assert_eq!(got, w, "add {dtype} {cap:?} n={n}");
            }
        };
        add_stub(&a, &b, &want(|x, y| x + y, false));
        // Scalar operand (stride 0): a 1-element tensor expanded.
        let b0 = b
            .slice_with(0, Some(0), Some(1), 1)
            .unwrap()
            .expand(&[n as i64])
            .unwrap();
        add_stub(&a, &b0, &want(|x, y| x + y, true));
        check_binary_stub(&bk::MUL_STUB, &a, &b, dtype, &want(|x, y| x * y, false));
        check_binary_stub(
            &bk::DIV_TRUE_STUB,
            &a,
            &b,
            dtype,
            &want(|x, y| x / y, false),
        );
    }
}

#[test]
fn f16_add_mul_bit_exact_on_random_data() {
    reduced_case::<f16>(ScalarType::Half, f16::to_bits);
}

#[test]
fn bf16_add_mul_bit_exact_on_random_data() {
    reduced_case::<bf16>(ScalarType::BFloat16, bf16::to_bits);
}

/// Values of a tensor as raw bytes, row-major (for bit-exact comparisons of any dtype).
fn bytes(t: &Tensor) -> Vec<u8> {
    dispatch_all_types!(t.dtype(), T => {
        let v = t.to_vec::<T>().unwrap();
        let mut out = Vec::with_capacity(v.len() * std::mem::size_of::<T>());
        for x in v {
            // SAFETY: T is a plain element type without padding (numbers, bool, complex pairs).
            let b = unsafe {
                std::slice::from_raw_parts((&x as *const T).cast::<u8>(), std::mem::size_of::<T>())
            };
            out.extend_from_slice(b);
        }
        out
    })
}

/// A tensor of `dtype` and `shape` with varied values (small, so every dtype holds them).
fn filled(dtype: ScalarType, shape: &[i64], seed: u64) -> Tensor {
    let n: i64 = shape.iter().product();
    let mut rng = Rng(seed);
    let v: Vec<f64> = (0..n).map(|_| (rng.next() % 9) as f64 + 1.0).collect();
    (Tensor::from_slice(&v, shape).unwrap())
        .to_dtype(dtype)
        .unwrap()
}

const ALL_DTYPES: [ScalarType; 13] = [
    ScalarType::Bool,
    ScalarType::Byte,
    ScalarType::Char,
    ScalarType::Short,
    ScalarType::Int,
    ScalarType::Long,
    ScalarType::Half,
    ScalarType::BFloat16,
    ScalarType::Float,
    ScalarType::Double,
    ScalarType::ComplexHalf,
    ScalarType::ComplexFloat,
    ScalarType::ComplexDouble,
];

/// `out = op(a, b)` via the stub for every capability, each compared with the same op on
/// contiguous copies (the untiled path).
fn tiled_vs_untiled(
    stub: &DispatchStub<bk::BinaryFn>,
    comparison: bool,
    a: &Tensor,
    b: &Tensor,
) -> bool {
    let run = |x: &Tensor, y: &Tensor, cap| -> Option<Vec<u8>> {
        let config = if comparison {
            comparison_op_config(None, x, y)
        } else {
            binary_op_config(None, x, y)
        };
        let iter = build(config);
        with_cpu_capability(cap, || (stub.cpu())(&iter))
            .unwrap()
            .ok()?;
        Some(bytes(&iter.output(0).unwrap().into()))
    };
    let (ac, bc) = (a.contiguous().unwrap(), b.contiguous().unwrap());
    let mut ran = false;
    for cap in capabilities() {
        let want = run(&ac, &bc, cap);
        let got = run(a, b, cap);
        assert_eq!(
            got,
            want,
            "{} {cap:?} {:?} {}",
            stub.name(),
            a.sizes(),
            a.dtype()
        );
        ran |= got.is_some();
    }
    ran
}

/// Shapes `[rows, cols]` for a transposed second operand: thin, odd, empty, and large enough
/// to be split across two threads (above the grain size).
const SHAPES: [[i64; 2]; 7] = [
    [1, 300],
    [300, 1],
    [63, 65],
    [0, 70],
    [70, 0],
    [130, 200],
    [257, 300],
];

#[test]
fn tiled_matches_untiled_for_every_dtype_and_op() {
    let ops: [(&DispatchStub<bk::BinaryFn>, bool); 10] = [
        (&bk::MUL_STUB, false),
        (&bk::DIV_TRUE_STUB, false),
        (&bk::REMAINDER_STUB, false),
        (&bk::FMOD_STUB, false),
        (&bk::MAXIMUM_STUB, false),
        (&bk::MINIMUM_STUB, false),
        (&bk::POW_STUB, false),
        (&bk::EQ_STUB, true),
        (&bk::LT_STUB, true),
        (&bk::GE_STUB, true),
    ];
    for threads in [1, 2] {
        set_num_threads(threads).unwrap();
        for dtype in ALL_DTYPES {
            // Two threads only matter above the grain size (32768 elements).
            let shapes = if threads == 1 {
                &SHAPES[..]
            } else {
                &SHAPES[6..]
            };
            for &shape in shapes {
                let a = filled(dtype, &shape, 1);
                // b is a transposed view: its inner stride is the row length.
                let b = filled(dtype, &[shape[1], shape[0]], 2).t().unwrap();
                for (stub, cmp) in ops {
                    tiled_vs_untiled(stub, cmp, &a, &b);
                }
                // add through its own signature (alpha).
                for cap in capabilities() {
                    let go = |x: &Tensor, y: &Tensor| {
                        let iter = build(binary_op_config(None, x, y));
                        with_cpu_capability(cap, || (bk::ADD_STUB.cpu())(&iter, &Scalar::Int(2)))
                            .unwrap()
                            .unwrap();
                        bytes(&iter.output(0).unwrap().into())
                    };
                    let want = go(&a.contiguous().unwrap(), &b.contiguous().unwrap());
                    assert_eq!(go(&a, &b), want, "add {dtype} {shape:?} {cap:?}");
                }
            }
        }
    }
    set_num_threads(1).unwrap();
}

#[test]
fn tiled_path_on_sliced_and_expanded_operands() {
    for threads in [1, 2] {
        set_num_threads(threads).unwrap();
        for dtype in [ScalarType::Float, ScalarType::Half, ScalarType::Long] {
            // Sliced: every other column of a transposed operand; expanded: a row broadcast
            // against a transposed operand.
            let big = filled(dtype, &[400, 260], 3).t().unwrap();
            let sliced = big.slice_with(1, Some(0), None, 2).unwrap();
            let a = filled(dtype, &sliced.sizes(), 4);
            assert!(tiled_vs_untiled(&bk::MUL_STUB, false, &a, &sliced));
            let row = filled(dtype, &[1, 200], 5).expand(&[260, 200]).unwrap();
            let bt = filled(dtype, &[200, 260], 6).t().unwrap();
            assert!(tiled_vs_untiled(&bk::MAXIMUM_STUB, false, &row, &bt));
            // A transposed output: written in tiles too.
            let out = Tensor::empty(&[260, 200], dtype).unwrap().t().unwrap();
            let x = filled(dtype, &[200, 260], 7);
            let y = filled(dtype, &[200, 260], 8);
            F::add_out(&out, &x, &y).unwrap();
            let want = F::add(&x, &y).unwrap();
            assert_eq!(bytes(&out), bytes(&want));
        }
    }
    set_num_threads(1).unwrap();
}

#[test]
fn mixed_dtypes_in_one_pass() {
    let n = 5000usize;
    let ints: Vec<i32> = (0..n as i32)
        .map(|i| i.wrapping_mul(2_654_435) ^ (1 << 24) | 1)
        .collect();
    let floats: Vec<f32> = (0..n).map(|i| i as f32 * 0.37 - 700.0).collect();
    let ai = Tensor::from_slice(&ints, &[n as i64]).unwrap();
    let bf = Tensor::from_slice(&floats, &[n as i64]).unwrap();
    for cap in capabilities() {
        let out = Tensor::empty(&[n as i64], ScalarType::Float).unwrap();
        let iter = build(binary_op_config(&out, &ai, &bf));
        with_cpu_capability(cap, || (bk::ADD_STUB.cpu())(&iter, &Scalar::Int(1)))
            .unwrap()
            .unwrap();
        let got = out.to_vec::<f32>().unwrap();
        for i in 0..n {
            // c10: the int is cast to float (one rounding), then added.
            let want = ints[i] as f32 + floats[i];
            assert_eq!(got[i].to_bits(), want.to_bits(), "{cap:?} {i}");
        }
        // The other order, and half + float into float.
        let iter = build(binary_op_config(&out, &bf, &ai));
        with_cpu_capability(cap, || (bk::MUL_STUB.cpu())(&iter))
            .unwrap()
            .unwrap();
        let got = out.to_vec::<f32>().unwrap();
        for i in 0..n {
            assert_eq!(got[i].to_bits(), (floats[i] * ints[i] as f32).to_bits());
        }
        let h = bf.to_dtype(ScalarType::Half).unwrap();
        let hv = h.to_vec::<f16>().unwrap();
        let iter = build(binary_op_config(&out, &h, &bf));
        with_cpu_capability(cap, || (bk::ADD_STUB.cpu())(&iter, &Scalar::Int(1)))
            .unwrap()
            .unwrap();
        let got = out.to_vec::<f32>().unwrap();
        for i in 0..n {
            assert_eq!(got[i].to_bits(), (hv[i].to_f32() + floats[i]).to_bits());
        }
    }
}
