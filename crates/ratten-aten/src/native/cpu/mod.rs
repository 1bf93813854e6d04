//! The vectorised CPU kernels (aten/src/ATen/native/cpu): element casts, the loop drivers that
//! TensorIterator's 2-D loops run (`cpu_kernel` / `cpu_kernel_vec`), and the kernels behind
//! the pointwise DispatchStubs.
//!
//! One driver serves every dtype combination: per 2-D loop call it takes
//! - the **contiguous fast path** when every operand has the computation type and unit
//!   strides (a plain indexed loop that LLVM vectorises for the stub's ISA),
//! - the **scalar-operand path** when one input has stride 0 (its value is hoisted),
//! - otherwise the **block path**: up to `BLOCK` elements of each input are loaded into an
//!   L1-resident buffer of the computation type (casting from the input's dtype, any stride),
//!   computed with the same vectorised body, and stored to the output (casting to its dtype).
//!   This is the strided fallback and the fused casting pass in one; half and bfloat16 are
//!   computed in f32 this way (their "opmath" type).
//!
//! When an input moves with a large stride along the inner dimension but a small one along the
//! outer (a transposed operand), the 2-D loop is walked in `TILE`x`TILE` tiles so the lines of
//! that operand are reused from L1 and the TLB is not thrashed.

pub mod binary_kernels;
pub mod transpose;
pub mod unary_kernels;
pub mod vec_math;

use half::{bf16, f16};
use num_complex::Complex;
use ratten_core::dtype::{c128, c32, c64};
use ratten_core::{dispatch_all_types, Error, Result, ScalarType};

use std::mem::MaybeUninit;

use crate::dispatch_stub::{run_isa, CpuCapability, Isa};
use crate::tensor_iterator::{TensorIteratorBase, GRAIN_SIZE};

/// Elements per block of the block path (fits three buffers of complex doubles in L1).
pub const BLOCK: usize = 256;
/// Tile edge for transposed operands.
pub const TILE: usize = 64;

/// The kind of an element type (c10's categories).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Bool,
    Int,
    Float,
    Complex,
}

/// An element type the kernels read, write and compute in, with c10's `static_cast`
/// conversions through the widest type of each kind.
pub trait Elem: Copy + Send + Sync + Default + PartialEq + 'static {
    const KIND: Kind;
    const DTYPE: ScalarType;
    fn to_i64(self) -> i64;
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
    fn to_c(self) -> c128;
    fn to_bool(self) -> bool;
    fn from_i64(v: i64) -> Self;
    fn from_f32(v: f32) -> Self;
    fn from_f64(v: f64) -> Self;
    fn from_c(v: c128) -> Self;
    fn from_bool(v: bool) -> Self;
    /// Reads an element from tensor memory.
    ///
    /// # Safety
    /// `p` must point at a readable, aligned element of this type.
    #[inline(always)]
    unsafe fn read(p: *const u8) -> Self {
        // SAFETY: per the contract.
        unsafe { p.cast::<Self>().read() }
    }
}

/// `static_cast<T>(v)` of a float to an integer as PyTorch's CPU build computes it on x86: a
/// 64-bit target takes the 64-bit truncating conversion, a narrower one the 32-bit conversion
/// and keeps its low bits; NaN and values out of the conversion's range give its "integer
/// indefinite" value, the minimum (`torch.tensor([inf, nan]).to(torch.int32)` is
/// `[-2147483648, -2147483648]`, `torch.tensor([1e10]).to(torch.int16)` is `[0]`). In range
/// this is plain truncation (300.0 as uint8 is 44).
#[inline(always)]
fn x86_float_to_int<T: Copy + 'static>(v: f64) -> T
where
    i64: AsPrimitive<T>,
{
    // 2^63, exactly representable.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let wide = std::mem::size_of::<T>() == 8;
    let r = if wide {
        if (-TWO_63..TWO_63).contains(&v) {
            v as i64
        } else {
            i64::MIN
        }
    } else if v > -2_147_483_649.0 && v < 2_147_483_648.0 {
        v as i32 as i64
    } else {
        i32::MIN as i64
    };
    r.as_()
}

/// `i64 as T` for the integer element types (wrapping to the low bits).
trait AsPrimitive<T> {
    fn as_(self) -> T;
}
macro_rules! as_primitive {
    ($($t:ty),*) => {$(
        impl AsPrimitive<$t> for i64 {
            #[inline(always)]
            fn as_(self) -> $t {
                self as $t
            }
        }
    )*};
}
as_primitive!(u8, i8, i16, i32, i64);

macro_rules! elem_int {
    ($($t:ty => $d:ident),*) => {$(
        impl Elem for $t {
            const KIND: Kind = Kind::Int;
            const DTYPE: ScalarType = ScalarType::$d;
            #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)] fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)] fn to_c(self) -> c128 { Complex::new(self as f64, 0.0) }
            #[inline(always)] fn to_bool(self) -> bool { self != 0 }
            #[inline(always)] fn from_i64(v: i64) -> Self { v as $t }
            // C++'s `static_cast` as x86 compiles it (see `x86_float_to_int`); Rust's `as`
            // saturates instead.
            #[inline(always)] fn from_f32(v: f32) -> Self { x86_float_to_int::<$t>(v as f64) }
            #[inline(always)] fn from_f64(v: f64) -> Self { x86_float_to_int::<$t>(v) }
            #[inline(always)] fn from_c(v: c128) -> Self { x86_float_to_int::<$t>(v.re) }
            #[inline(always)] fn from_bool(v: bool) -> Self { v as $t }
        }
    )*};
}
elem_int!(u8 => Byte, i8 => Char, i16 => Short, i32 => Int, i64 => Long);

macro_rules! elem_float {
    ($($t:ty => $d:ident),*) => {$(
        impl Elem for $t {
            const KIND: Kind = Kind::Float;
            const DTYPE: ScalarType = ScalarType::$d;
            #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)] fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)] fn to_c(self) -> c128 { Complex::new(self as f64, 0.0) }
            #[inline(always)] fn to_bool(self) -> bool { self != 0.0 }
            #[inline(always)] fn from_i64(v: i64) -> Self { v as $t }
            #[inline(always)] fn from_f32(v: f32) -> Self { v as $t }
            #[inline(always)] fn from_f64(v: f64) -> Self { v as $t }
            #[inline(always)] fn from_c(v: c128) -> Self { v.re as $t }
            #[inline(always)] fn from_bool(v: bool) -> Self { v as u8 as $t }
        }
    )*};
}
elem_float!(f32 => Float, f64 => Double);

impl Elem for f16 {
    const KIND: Kind = Kind::Float;
    const DTYPE: ScalarType = ScalarType::Half;
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self.to_f32() as i64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    #[inline(always)]
    fn to_c(self) -> c128 {
        Complex::new(self.to_f64(), 0.0)
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self.to_f32() != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        f16::from_f32(v as f32)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    // c10::Half has only a float constructor: a double is rounded to float first (double
    // rounding included), not straight to half as `half::f16::from_f64` does.
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        f16::from_f32(v as f32)
    }
    #[inline(always)]
    fn from_c(v: c128) -> Self {
        f16::from_f32(v.re as f32)
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        f16::from_f32(v as u8 as f32)
    }
}

/// bfloat16 -> f32 is a shift (vectorises).
#[inline(always)]
pub fn bf16_to_f32(x: bf16) -> f32 {
    f32::from_bits((x.to_bits() as u32) << 16)
}

/// f32 -> bfloat16 exactly as c10's `round_to_nearest_even`: round to nearest even, every
/// NaN becomes 0x7FC0. Integer arithmetic only and branch-free, so LLVM vectorises it with
/// integer instructions (no float compare or vcvtneps2bf16, which treats denormal inputs as
/// zero and would differ from c10).
#[inline(always)]
pub fn f32_to_bf16(v: f32) -> bf16 {
    let b = v.to_bits();
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    let is_nan = (b & 0x7fff_ffff) > 0x7f80_0000;
    bf16::from_bits(if is_nan { 0x7fc0 } else { rounded })
}

impl Elem for bf16 {
    const KIND: Kind = Kind::Float;
    const DTYPE: ScalarType = ScalarType::BFloat16;
    #[inline(always)]
    fn to_i64(self) -> i64 {
        bf16_to_f32(self) as i64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16_to_f32(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        bf16_to_f32(self) as f64
    }
    #[inline(always)]
    fn to_c(self) -> c128 {
        Complex::new(self.to_f64(), 0.0)
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        bf16_to_f32(self) != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        f32_to_bf16(v as f32)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f32_to_bf16(v)
    }
    // As c10::BFloat16: through float.
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        f32_to_bf16(v as f32)
    }
    #[inline(always)]
    fn from_c(v: c128) -> Self {
        f32_to_bf16(v.re as f32)
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        f32_to_bf16(v as u8 as f32)
    }
}

impl Elem for bool {
    const KIND: Kind = Kind::Bool;
    const DTYPE: ScalarType = ScalarType::Bool;
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as u8 as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn to_c(self) -> c128 {
        Complex::new(self as u8 as f64, 0.0)
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_c(v: c128) -> Self {
        v.re != 0.0 || v.im != 0.0
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        v
    }
    /// A byte that is not 0 or 1 (memory written as another dtype) still reads as a bool.
    #[inline(always)]
    unsafe fn read(p: *const u8) -> Self {
        // SAFETY: per the contract (one readable byte).
        unsafe { p.read() != 0 }
    }
}

macro_rules! elem_complex {
    ($($t:ty => $d:ident, $r:ty),*) => {$(
        impl Elem for $t {
            const KIND: Kind = Kind::Complex;
            const DTYPE: ScalarType = ScalarType::$d;
            #[inline(always)] fn to_i64(self) -> i64 { self.re.to_f64() as i64 }
            #[inline(always)] fn to_f32(self) -> f32 { self.re.to_f32() }
            #[inline(always)] fn to_f64(self) -> f64 { self.re.to_f64() }
            #[inline(always)] fn to_c(self) -> c128 { Complex::new(self.re.to_f64(), self.im.to_f64()) }
            #[inline(always)] fn to_bool(self) -> bool { self.re.to_f64() != 0.0 || self.im.to_f64() != 0.0 }
            #[inline(always)] fn from_i64(v: i64) -> Self { Complex::new(<$r>::from_i64(v), <$r>::default()) }
            #[inline(always)] fn from_f32(v: f32) -> Self { Complex::new(<$r>::from_f32(v), <$r>::default()) }
            #[inline(always)] fn from_f64(v: f64) -> Self { Complex::new(<$r>::from_f64(v), <$r>::default()) }
            #[inline(always)] fn from_c(v: c128) -> Self { Complex::new(<$r>::from_f64(v.re), <$r>::from_f64(v.im)) }
            #[inline(always)] fn from_bool(v: bool) -> Self { Self::from_i64(v as i64) }
        }
    )*};
}
elem_complex!(c32 => ComplexHalf, f16, c64 => ComplexFloat, f32, c128 => ComplexDouble, f64);

/// c10's `static_cast<D>(s)` between any two element types.
#[inline(always)]
pub fn cast<S: Elem, D: Elem>(s: S) -> D {
    if S::DTYPE == D::DTYPE {
        // SAFETY: equal dtypes mean equal element types (the Elem impls are one per dtype).
        return unsafe { std::mem::transmute_copy::<S, D>(&s) };
    }
    let wide = matches!(S::DTYPE, ScalarType::Double | ScalarType::ComplexDouble);
    match D::KIND {
        Kind::Complex => D::from_c(s.to_c()),
        Kind::Bool => D::from_bool(s.to_bool()),
        Kind::Int => match S::KIND {
            Kind::Bool | Kind::Int => D::from_i64(s.to_i64()),
            Kind::Float | Kind::Complex => D::from_f64(s.to_f64()),
        },
        Kind::Float => match S::KIND {
            Kind::Bool | Kind::Int => {
                // i32 -> f64 is exact, so (x as f64) as f32 == x as f32: take the one
                // instruction (vcvtdq2ps) for float targets.
                if std::mem::size_of::<S>() <= 4 && D::DTYPE == ScalarType::Float {
                    D::from_f32(s.to_f32())
                } else if std::mem::size_of::<S>() <= 4 {
                    D::from_f64(s.to_f64())
                } else {
                    D::from_i64(s.to_i64())
                }
            }
            Kind::Float | Kind::Complex => {
                if wide {
                    D::from_f64(s.to_f64())
                } else {
                    D::from_f32(s.to_f32())
                }
            }
        },
    }
}

/// Vectorised conversions of contiguous runs between the reduced float types and f32 (the
/// casts the block path does for half inputs and outputs). Each has an AVX-512 and an F16C
/// form; the tails and the DEFAULT capability use the scalar conversion, which gives the same
/// bits (vcvtph2ps is exact; vcvtps2ph rounds to nearest even, handles subnormals, and quiets
/// NaNs keeping the payload's top bits, as `half`'s conversion does).
#[cfg(target_arch = "x86_64")]
mod simd_half {
    use half::f16;
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU has AVX-512F; `src`/`dst` hold `n` elements.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn f16_to_f32_avx512(src: *const u16, dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY (whole body): i + 16 <= n in the loop, i < n in the tail.
        unsafe {
            while i + 16 <= n {
                let h = _mm256_loadu_si256(src.add(i).cast());
                _mm512_storeu_ps(dst.add(i), _mm512_cvtph_ps(h));
                i += 16;
            }
            while i < n {
                dst.add(i).write(f16::from_bits(src.add(i).read()).to_f32());
                i += 1;
            }
        }
    }

    /// # Safety
    /// The CPU has AVX-512F; `src`/`dst` hold `n` elements.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn f32_to_f16_avx512(src: *const f32, dst: *mut u16, n: usize) {
        let mut i = 0;
        // SAFETY (whole body): as above.
        unsafe {
            while i + 16 <= n {
                let v = _mm512_loadu_ps(src.add(i));
                let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
                _mm256_storeu_si256(dst.add(i).cast(), h);
                i += 16;
            }
            while i < n {
                dst.add(i).write(f16::from_f32(src.add(i).read()).to_bits());
                i += 1;
            }
        }
    }

    /// # Safety
    /// The CPU has AVX and F16C; `src`/`dst` hold `n` elements.
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    pub unsafe fn f16_to_f32_f16c(src: *const u16, dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY (whole body): i + 8 <= n in the loop, i < n in the tail.
        unsafe {
            while i + 8 <= n {
                let h = _mm_loadu_si128(src.add(i).cast());
                _mm256_storeu_ps(dst.add(i), _mm256_cvtph_ps(h));
                i += 8;
            }
            while i < n {
                dst.add(i).write(f16::from_bits(src.add(i).read()).to_f32());
                i += 1;
            }
        }
    }

    /// # Safety
    /// The CPU has AVX and F16C; `src`/`dst` hold `n` elements.
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    pub unsafe fn f32_to_f16_f16c(src: *const f32, dst: *mut u16, n: usize) {
        let mut i = 0;
        // SAFETY (whole body): as above.
        unsafe {
            while i + 8 <= n {
                let v = _mm256_loadu_ps(src.add(i));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
                _mm_storeu_si128(dst.add(i).cast(), h);
                i += 8;
            }
            while i < n {
                dst.add(i).write(f16::from_f32(src.add(i).read()).to_bits());
                i += 1;
            }
        }
    }
}

/// Non-temporal stores: whole 64-byte lines written past the caches (no read for ownership
/// of the line, no eviction of the inputs' lines). Used only for outputs far larger than the
/// caches (see [`STREAM_MIN_BYTES`]), where the line would be evicted unread anyway.
#[cfg(target_arch = "x86_64")]
mod simd_stream {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU has AVX; `src` and `dst` are 32-byte aligned and hold `bytes` bytes, a multiple
    /// of 32; `src` is initialised.
    #[target_feature(enable = "avx")]
    #[inline]
    pub unsafe fn copy_avx(src: *const u8, dst: *mut u8, bytes: usize) {
        let mut o = 0;
        // SAFETY: o + 32 <= bytes, both aligned, per the contract.
        unsafe {
            while o < bytes {
                _mm256_stream_si256(dst.add(o).cast(), _mm256_load_si256(src.add(o).cast()));
                o += 32;
            }
        }
    }

    /// # Safety
    /// As [`copy_avx`] with 16 for 32 (SSE2 is part of x86_64).
    #[inline]
    pub unsafe fn copy_sse2(src: *const u8, dst: *mut u8, bytes: usize) {
        let mut o = 0;
        // SAFETY: o + 16 <= bytes, both aligned, per the contract.
        unsafe {
            while o < bytes {
                _mm_stream_si128(dst.add(o).cast(), _mm_load_si128(src.add(o).cast()));
                o += 16;
            }
        }
    }

    /// Orders the streamed stores before any later store (and before the thread reports its
    /// chunk done): non-temporal stores are weakly ordered.
    #[inline]
    pub fn fence() {
        // SAFETY: sfence has no preconditions (SSE is part of x86_64).
        unsafe { _mm_sfence() }
    }
}

/// Half of this machine's 32 MiB L3. A kernel call writes its contiguous outputs with
/// non-temporal stores when its operands together span at least twice this
/// ([`streams`]): the op does not fit in the last-level cache, so its output is evicted before
/// anything reads it again, and reading each output line for ownership before overwriting it
/// (a quarter of an add's memory traffic) is wasted. An output of this size with an input of
/// its element size always streams. Smaller ops use ordinary stores and stay cached for the
/// next op. PyTorch never streams (see Note [Pointwise kernels at bandwidth]).
///
/// Measured (session 8, f32 add into out on numpy memory, ratten/torch, 1 / 2 threads): with
/// the old rule (output alone at least this), 3.9M elements (47 MiB touched, not streamed)
/// took 1.10x / 1.19x torch's time, while 4.3M (streamed) took 0.83x / 0.82x.
pub const STREAM_MIN_BYTES: usize = 16 << 20;

/// Whether a kernel call over `iter` (operands of dtypes `dts`) streams its output (see
/// [`STREAM_MIN_BYTES`]): the bytes its operands span, at least twice that. An input broadcast
/// along a dimension (stride 0) is not counted: it repeats what it spans.
#[inline]
fn streams(iter: &TensorIteratorBase, dts: &[ScalarType]) -> bool {
    let numel = iter.numel().max(0) as usize;
    // Every operand counted whole bounds the span: a small op stops here.
    let per_element: usize = dts.iter().map(|d| d.element_size()).sum();
    if numel.saturating_mul(per_element) < 2 * STREAM_MIN_BYTES {
        return false;
    }
    streams_spanned(iter, dts, numel)
}

#[inline(never)]
fn streams_spanned(iter: &TensorIteratorBase, dts: &[ScalarType], numel: usize) -> bool {
    let shape = iter.shape();
    let spanned: usize = dts
        .iter()
        .enumerate()
        .filter(|&(k, _)| {
            let strides = iter.strides(k);
            k == 0 || !shape.iter().zip(strides).any(|(&n, &s)| n > 1 && s == 0)
        })
        .map(|(_, d)| numel.saturating_mul(d.element_size()))
        .fold(0usize, usize::saturating_add);
    spanned >= 2 * STREAM_MIN_BYTES
}

/// Whether non-temporal stores are available (x86_64 only).
const CAN_STREAM: bool = cfg!(target_arch = "x86_64");

/// Bytes of output computed into L1 per streamed chunk (8 lines).
const STREAM_CHUNK: usize = 512;

/// The L1 buffer a chunk is computed into before it is streamed out (line-aligned, as the
/// aligned loads of [`stream_copy`] need).
#[repr(C, align(64))]
struct ChunkBuf([MaybeUninit<u8>; STREAM_CHUNK]);

impl ChunkBuf {
    #[inline(always)]
    fn new() -> Self {
        ChunkBuf([MaybeUninit::uninit(); STREAM_CHUNK])
    }
    #[inline(always)]
    fn ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr().cast()
    }
}

/// Streams `bytes` (a multiple of 32) from a [`ChunkBuf`] to the 64-byte-aligned `dst`.
///
/// # Safety
/// `src` is a [`ChunkBuf`] whose first `bytes` bytes are initialised; `dst` is 64-byte aligned
/// and holds `bytes` writable bytes; `I` is supported by the CPU.
#[inline(always)]
unsafe fn stream_copy<I: Isa>(src: *const u8, dst: *mut u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: forwarded contract; AVX is part of both the AVX2 and AVX512 capabilities.
        match I::CAP {
            CpuCapability::Avx2 | CpuCapability::Avx512 => unsafe {
                simd_stream::copy_avx(src, dst, bytes)
            },
            CpuCapability::Default => unsafe { simd_stream::copy_sse2(src, dst, bytes) },
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: forwarded contract (never reached: CAN_STREAM is false here).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) };
    }
}

/// Ends a run of [`stream_copy`]s.
#[inline(always)]
fn stream_fence() {
    #[cfg(target_arch = "x86_64")]
    simd_stream::fence();
}

/// Elements to compute with ordinary stores before `p` (elements of `es` bytes) is 64-byte
/// aligned, at most `n`.
#[inline(always)]
fn peel_to_line(p: *const u8, es: usize, n: usize) -> usize {
    let mis = p as usize % 64;
    if mis == 0 || !mis.is_multiple_of(es) {
        // An element straddling the alignment never gets there: no streaming (n elements).
        return if mis == 0 { 0 } else { n };
    }
    ((64 - mis) / es).min(n)
}

/// Converts `n` contiguous halves to f32 with the instructions of `I`.
///
/// # Safety
/// `src`/`dst` hold `n` elements; `I` is supported by the CPU (as for every stub variant).
#[inline(always)]
pub unsafe fn f16_to_f32_slice<I: Isa>(src: *const f16, dst: *mut f32, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: forwarded contract; the capability was checked against the CPU.
        match I::CAP {
            CpuCapability::Avx512 => {
                return unsafe { simd_half::f16_to_f32_avx512(src.cast(), dst, n) }
            }
            CpuCapability::Avx2 => {
                return unsafe { simd_half::f16_to_f32_f16c(src.cast(), dst, n) }
            }
            CpuCapability::Default => {}
        }
    }
    for i in 0..n {
        // SAFETY: forwarded contract.
        unsafe { dst.add(i).write(src.add(i).read().to_f32()) };
    }
}

/// Converts `n` contiguous f32s to halves (round to nearest even) with the instructions of `I`.
///
/// # Safety
/// As [`f16_to_f32_slice`].
#[inline(always)]
pub unsafe fn f32_to_f16_slice<I: Isa>(src: *const f32, dst: *mut f16, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: forwarded contract; the capability was checked against the CPU.
        match I::CAP {
            CpuCapability::Avx512 => {
                return unsafe { simd_half::f32_to_f16_avx512(src, dst.cast(), n) }
            }
            CpuCapability::Avx2 => {
                return unsafe { simd_half::f32_to_f16_f16c(src, dst.cast(), n) }
            }
            CpuCapability::Default => {}
        }
    }
    for i in 0..n {
        // SAFETY: forwarded contract.
        unsafe { dst.add(i).write(f16::from_f32(src.add(i).read())) };
    }
}

/// Loads `dst.len()` elements of element type `T` from `p` (byte stride `s`) as `M`.
///
/// # Safety
/// Every `p + i * s` for `i < dst.len()` must be a readable element of `T`; `I` is supported.
#[inline(always)]
unsafe fn load_block_t<I: Isa, T: Elem, M: Elem>(p: *const u8, s: isize, dst: &mut [M]) {
    let n = dst.len();
    let es = std::mem::size_of::<T>() as isize;
    if s == 0 {
        // SAFETY: per the contract.
        let v = cast::<T, M>(unsafe { T::read(p) });
        dst.fill(v);
    } else if s == es {
        if T::DTYPE == ScalarType::Half && M::DTYPE == ScalarType::Float {
            // SAFETY: T is f16 and M is f32 (checked by dtype); `p` holds n contiguous f16s.
            unsafe { f16_to_f32_slice::<I>(p.cast(), dst.as_mut_ptr().cast(), n) };
            return;
        }
        for (i, d) in dst.iter_mut().enumerate() {
            // SAFETY: contiguous elements, per the contract.
            *d = cast::<T, M>(unsafe { T::read(p.offset(i as isize * es)) });
        }
    } else {
        for (i, d) in dst.iter_mut().enumerate() {
            // SAFETY: per the contract.
            *d = cast::<T, M>(unsafe { T::read(p.offset(i as isize * s)) });
        }
    }
}

/// Stores `src` as element type `T` at `p` (byte stride `s`).
///
/// # Safety
/// Every `p + i * s` for `i < src.len()` must be a writable element of `T`; `I` is supported.
#[inline(always)]
unsafe fn store_block_t<I: Isa, T: Elem, M: Elem>(p: *mut u8, s: isize, src: &[M]) {
    let n = src.len();
    let es = std::mem::size_of::<T>() as isize;
    if s == es && T::DTYPE == ScalarType::Half && M::DTYPE == ScalarType::Float {
        // SAFETY: T is f16 and M is f32 (checked by dtype); `p` holds n contiguous f16s.
        unsafe { f32_to_f16_slice::<I>(src.as_ptr().cast(), p.cast(), n) };
        return;
    }
    if s == es {
        let d = p.cast::<T>();
        for (i, v) in src.iter().enumerate() {
            // SAFETY: per the contract (contiguous).
            unsafe { d.add(i).write(cast::<M, T>(*v)) };
        }
        return;
    }
    for (i, v) in src.iter().enumerate() {
        // SAFETY: per the contract.
        unsafe { p.offset(i as isize * s).cast::<T>().write(cast::<M, T>(*v)) };
    }
}

/// `load_block_t` for a run-time dtype, compiled once per (ISA, computation type) and shared
/// by every kernel (not inlined: one call per block of `BLOCK` elements).
///
/// # Safety
/// As `load_block_t`, with `T` the element type of `dt`.
#[inline(never)]
pub unsafe fn load_block<I: Isa, M: Elem>(dt: ScalarType, p: *const u8, s: isize, dst: &mut [M]) {
    dispatch_all_types!(dt, T => run_isa::<I, _>(
        #[inline(always)]
        // SAFETY: forwarded contract.
        || unsafe { load_block_t::<I, T, M>(p, s, dst) }
    ))
}

/// `store_block_t` for a run-time dtype (compiled once per ISA and computation type).
///
/// # Safety
/// As `store_block_t`, with `T` the element type of `dt`.
#[inline(never)]
pub unsafe fn store_block<I: Isa, M: Elem>(dt: ScalarType, p: *mut u8, s: isize, src: &[M]) {
    dispatch_all_types!(dt, T => run_isa::<I, _>(
        #[inline(always)]
        // SAFETY: forwarded contract.
        || unsafe { store_block_t::<I, T, M>(p, s, src) }
    ))
}

/// Rounds values computed in an opmath type through the reduced common dtype `via` (half,
/// bfloat16, complex32), as PyTorch's temporaries of the common dtype do: an input of another
/// dtype is first cast to the common dtype, and a result is stored in the common dtype before
/// it is cast to an output of another dtype (`half(33000) + half(33000)` into a float64 `out`
/// is inf).
#[inline(never)]
pub fn round_via<M: Elem>(via: ScalarType, buf: &mut [M]) {
    dispatch_all_types!(via, T => {
        for x in buf.iter_mut() {
            *x = cast::<T, M>(cast::<M, T>(*x));
        }
    })
}

/// The dtype results must be rounded through, if any (see [`round_via`]).
pub fn reduced_common(iter: &TensorIteratorBase) -> Option<ScalarType> {
    iter.common_dtype().filter(|d| {
        matches!(
            d,
            ScalarType::Half | ScalarType::BFloat16 | ScalarType::ComplexHalf
        )
    })
}

/// The computation ("opmath") type of a dtype: half, bfloat16 -> f32, complex32 -> complex64.
pub fn opmath_dtype(dt: ScalarType) -> ScalarType {
    match dt {
        ScalarType::Half | ScalarType::BFloat16 => ScalarType::Float,
        ScalarType::ComplexHalf => ScalarType::ComplexFloat,
        d => d,
    }
}

/// Runs `$body` with `$M` bound to the opmath type of `$dt` (see [`opmath_dtype`]).
#[macro_export]
macro_rules! dispatch_opmath {
    ($dt:expr, $M:ident => $body:expr) => {{
        use $crate::native::cpu::opmath_dtype;
        match opmath_dtype($dt) {
            ratten_core::ScalarType::Byte => {
                type $M = u8;
                $body
            }
            ratten_core::ScalarType::Char => {
                type $M = i8;
                $body
            }
            ratten_core::ScalarType::Short => {
                type $M = i16;
                $body
            }
            ratten_core::ScalarType::Int => {
                type $M = i32;
                $body
            }
            ratten_core::ScalarType::Long => {
                type $M = i64;
                $body
            }
            ratten_core::ScalarType::Float => {
                type $M = f32;
                $body
            }
            ratten_core::ScalarType::Double => {
                type $M = f64;
                $body
            }
            ratten_core::ScalarType::ComplexFloat => {
                type $M = ratten_core::dtype::c64;
                $body
            }
            ratten_core::ScalarType::ComplexDouble => {
                type $M = ratten_core::dtype::c128;
                $body
            }
            ratten_core::ScalarType::Bool => {
                type $M = bool;
                $body
            }
            // opmath_dtype never returns the reduced types.
            ratten_core::ScalarType::Half
            | ratten_core::ScalarType::BFloat16
            | ratten_core::ScalarType::ComplexHalf => unreachable!("opmath of a reduced type"),
        }
    }};
}

/// The `AT_DISPATCH` error: `"add_stub" not implemented for 'Bool'` (NotImplementedError).
pub fn not_implemented(kernel: &str, dt: ScalarType) -> Error {
    Error::not_implemented(format!("\"{kernel}\" not implemented for '{dt}'"))
}

/// The refusal of a kernel PyTorch's CPU build has no complex32 case for (its `AT_DISPATCH`
/// list leaves `kComplexHalf` out, as for div, pow, lerp and the exp family): `"kernel" not
/// implemented for 'ComplexHalf'` when `dt` is complex32. The kernels compute in opmath types,
/// where complex32 would otherwise run as complex64.
pub fn refuse_complex32(kernel: &str, dt: ScalarType) -> Result<()> {
    if dt == ScalarType::ComplexHalf {
        return Err(not_implemented(kernel, dt));
    }
    Ok(())
}

/// The most operands a pointwise kernel has (one output and up to three inputs).
pub const MAX_OPERANDS: usize = 4;

/// An element-wise function of `N` inputs computed in `M` giving `R`: the arity-generic form
/// of the lambdas `cpu_kernel` / `cpu_kernel_vec` take (PyTorch reads the arity from
/// `function_traits`; here [`Op1`], [`Op2`] and [`Op3`] wrap closures of each arity).
pub trait OpN<M, R, const N: usize>: Sync {
    fn call(&self, x: [M; N]) -> R;

    /// `dst[i] = call(src[0][i], .., src[N-1][i])` for `i < len`: a contiguous run of the
    /// computation type, one loop LLVM vectorises. An op whose vector form covers only part
    /// of its domain overrides it to decide per chunk (Note [Vectorised transcendentals]);
    /// whatever it does, each element's value must be `call`'s (a value does not depend on
    /// the path that computed it).
    ///
    /// # Safety
    /// Each `src[k]` holds `len` readable `M`s and `dst` `len` writable `R`s (`dst` may be one
    /// of the inputs, element for element, as for in-place ops: element `i` is read before
    /// it is written).
    #[inline(always)]
    unsafe fn call_run(&self, src: &[*const M; N], dst: *mut R, len: usize)
    where
        M: Elem,
    {
        for i in 0..len {
            let mut x = [M::default(); N];
            for (xk, sk) in x.iter_mut().zip(src) {
                // SAFETY: per the contract.
                *xk = unsafe { sk.add(i).read() };
            }
            // SAFETY: per the contract.
            unsafe { dst.add(i).write(self.call(x)) };
        }
    }
}
/// A unary closure as an [`OpN`].
pub struct Op1<F>(pub F);
/// A binary closure as an [`OpN`].
pub struct Op2<F>(pub F);
/// A ternary closure as an [`OpN`].
pub struct Op3<F>(pub F);
impl<M, R, F: Fn(M) -> R + Sync> OpN<M, R, 1> for Op1<F> {
    #[inline(always)]
    fn call(&self, [a]: [M; 1]) -> R {
        (self.0)(a)
    }
}
impl<M, R, F: Fn(M, M) -> R + Sync> OpN<M, R, 2> for Op2<F> {
    #[inline(always)]
    fn call(&self, [a, b]: [M; 2]) -> R {
        (self.0)(a, b)
    }
}
impl<M, R, F: Fn(M, M, M) -> R + Sync> OpN<M, R, 3> for Op3<F> {
    #[inline(always)]
    fn call(&self, [a, b, c]: [M; 3]) -> R {
        (self.0)(a, b, c)
    }
}

/// The L1 buffers of the block path, cleared on first use only: a loop that takes the
/// contiguous path never touches them (a 1-element op does not pay for clearing 3 KB), and a
/// tiled loop clears them once per 2-D loop, not once per row.
///
/// Line-aligned (every buffer is a multiple of 64 bytes, so each starts on a line): at the
/// stack's 8-byte alignment every 64-byte vector store into them split across two lines,
/// which made the half / bfloat16 passes about 3x slower, by where the caller's stack
/// happened to end.
#[repr(C, align(64))]
struct Scratch<M, R, const N: usize> {
    ins: MaybeUninit<[[M; BLOCK]; N]>,
    out: MaybeUninit<[R; BLOCK]>,
    /// How many leading elements of every buffer are initialised.
    ready: usize,
}

impl<M: Elem, R: Elem, const N: usize> Scratch<M, R, N> {
    #[inline(always)]
    fn new() -> Self {
        Scratch {
            ins: MaybeUninit::uninit(),
            out: MaybeUninit::uninit(),
            ready: 0,
        }
    }

    /// The first `len` (at most BLOCK) elements of each input buffer and of the output
    /// buffer. Only what a call needs is initialised (once): a 1-element op must not clear
    /// 256-element buffers.
    #[inline(always)]
    fn get(&mut self, len: usize) -> ([&mut [M]; N], &mut [R]) {
        let len = len.min(BLOCK);
        let ins = self.ins.as_mut_ptr().cast::<M>();
        let out = self.out.as_mut_ptr().cast::<R>();
        if self.ready < len {
            for i in self.ready..len {
                for k in 0..N {
                    // SAFETY: k * BLOCK + i < N * BLOCK, inside `ins`.
                    unsafe { ins.add(k * BLOCK + i).write(M::default()) };
                }
                // SAFETY: i < BLOCK, inside `out`.
                unsafe { out.add(i).write(R::default()) };
            }
            self.ready = len;
        }
        // SAFETY: each slice covers `len` initialised elements of its own buffer (input k at
        // k * BLOCK, the output in its own field), so the N + 1 borrows are disjoint, and they
        // borrow `self` mutably for their lifetime.
        let bufs = std::array::from_fn(|k| unsafe {
            std::slice::from_raw_parts_mut(ins.add(k * BLOCK), len)
        });
        (bufs, unsafe { std::slice::from_raw_parts_mut(out, len) })
    }
}

/// Marks "no hoisted input" for [`contiguous_run`].
const NO_SCALAR: usize = usize::MAX;

/// The contiguous fast path: every operand has the computation type and unit stride, except
/// input `S` (if `S < N`), which has stride 0 and is read once.
///
/// # Safety
/// `p[0]` holds `n` writable `R`s, `p[1..=N]` hold `n` readable `M`s (one for input `S`).
#[inline(always)]
unsafe fn contiguous_run<M: Elem, R: Elem, const N: usize, const S: usize>(
    p: &[*mut u8; MAX_OPERANDS],
    n: usize,
    f: &impl OpN<M, R, N>,
) {
    let o = p[0].cast::<R>();
    let mut ins = [std::ptr::null::<M>(); N];
    let mut hoisted = [M::default(); N];
    if S >= N {
        for k in 0..N {
            ins[k] = p[k + 1].cast_const().cast::<M>();
        }
        // SAFETY: per the contract, every input holds `n` elements.
        return unsafe { f.call_run(&ins, o, n) };
    }
    for k in 0..N {
        ins[k] = p[k + 1].cast_const().cast::<M>();
        if k == S {
            // SAFETY: per the contract (input S holds one element).
            hoisted[k] = unsafe { ins[k].read() };
        }
    }
    for i in 0..n {
        let mut x = hoisted;
        for k in 0..N {
            if k != S {
                // SAFETY: per the contract.
                x[k] = unsafe { ins[k].add(i).read() };
            }
        }
        // SAFETY: per the contract.
        unsafe { o.add(i).write(f.call(x)) };
    }
}

/// The operand pointers of a contiguous run advanced by `i` elements, with the output replaced
/// by `out` (input `S`, of stride 0, stays).
#[inline(always)]
fn advanced<M, const N: usize, const S: usize>(
    p: &[*mut u8; MAX_OPERANDS],
    i: usize,
    out: *mut u8,
) -> [*mut u8; MAX_OPERANDS] {
    let mut q = *p;
    q[0] = out;
    for k in 0..N {
        if k != S {
            q[k + 1] = p[k + 1].wrapping_add(i * size_of::<M>());
        }
    }
    q
}

/// The streaming skeleton of [`direct_run`] and [`fused_pair_run`]: `run(i, dst, len)` computes
/// elements `i..i + len` of a run of `n` elements with outputs of `er` bytes into `dst`. With
/// `stream` set (and at least two chunks), the first elements up to a 64-byte boundary of
/// `out` are written in place with ordinary stores, then chunks of [`STREAM_CHUNK`] bytes are
/// computed into an L1 buffer and streamed out whole lines at a time, then the tail is written
/// in place; otherwise the whole run is written in place.
///
/// `run` must be `#[inline(always)]` (Note [Closures and target features]): it is called from
/// three places, and LLVM left a large one out of line.
///
/// # Safety
/// `out` holds `n` writable elements of `er` bytes, and `run(i, dst, len)` may be called with
/// any `dst` holding `len` writable elements (`out + i * er`, or the chunk buffer); `I` is
/// supported by the CPU.
#[inline(always)]
unsafe fn streamed<I: Isa>(
    out: *mut u8,
    er: usize,
    n: usize,
    stream: bool,
    run: impl Fn(usize, *mut u8, usize),
) {
    let ch = STREAM_CHUNK / er;
    if !stream || n < 2 * ch {
        return run(0, out, n);
    }
    let peel = peel_to_line(out, er, n);
    // SAFETY (whole body): every range below lies within the run's n elements; the chunk
    // buffer holds `ch` elements (STREAM_CHUNK bytes) and is fully written before it is
    // streamed.
    unsafe {
        run(0, out, peel);
        let mut buf = ChunkBuf::new();
        let mut i = peel;
        while i + ch <= n {
            run(i, buf.ptr(), ch);
            stream_copy::<I>(buf.ptr(), out.add(i * er), STREAM_CHUNK);
            i += ch;
        }
        stream_fence();
        run(i, out.add(i * er), n - i);
    }
}

/// [`contiguous_run`], with the output written by non-temporal stores when `stream` is set
/// (see [`streamed`]).
///
/// # Safety
/// As [`contiguous_run`]; `I` is supported by the CPU.
#[inline(always)]
unsafe fn direct_run<I: Isa, M: Elem, R: Elem, const N: usize, const S: usize>(
    p: &[*mut u8; MAX_OPERANDS],
    n: usize,
    f: &impl OpN<M, R, N>,
    stream: bool,
) {
    // SAFETY: forwarded contract; `run` computes elements i.. of the inputs into `dst`.
    unsafe {
        streamed::<I>(
            p[0],
            size_of::<R>(),
            n,
            stream,
            // Note [Closures and target features].
            #[inline(always)]
            |i, dst, len| contiguous_run::<M, R, N, S>(&advanced::<M, N, S>(p, i, dst), len, f),
        )
    }
}

/// Elements per chunk of [`reduced_run_streamed`] (three f32 buffers of 256 bytes for a binary op).
const REDUCED_CHUNK: usize = 64;

/// A reduced float type (half, bfloat16) whose runs [`reduced_run`] converts to and from f32.
trait Reduced: Elem {
    /// # Safety
    /// `src` holds `n` readable elements, `dst` `n` writable f32s; `I` is supported.
    unsafe fn to_f32_run<I: Isa>(src: *const Self, dst: *mut f32, n: usize);
    /// # Safety
    /// `src` holds `n` readable f32s, `dst` `n` writable elements; `I` is supported.
    unsafe fn from_f32_run<I: Isa>(src: *const f32, dst: *mut Self, n: usize);
}

// The vector conversions are written here with the intrinsics (not by calling `simd_half`),
// so that they are inlined into the ISA trampoline with the rest of the chunk: a call per
// 64 elements, with the `vzeroupper` before it, cost the half pass a third of its speed.
impl Reduced for f16 {
    #[inline(always)]
    unsafe fn to_f32_run<I: Isa>(src: *const Self, dst: *mut f32, n: usize) {
        let mut i = 0;
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: i + width <= n; this body only runs inlined into the trampoline of
            // I's capability, which has AVX-512F (AVX512) or F16C (AVX2).
            unsafe {
                match I::CAP {
                    CpuCapability::Avx512 => {
                        while i + 16 <= n {
                            let h = _mm256_loadu_si256(src.add(i).cast());
                            _mm512_storeu_ps(dst.add(i), _mm512_cvtph_ps(h));
                            i += 16;
                        }
                    }
                    CpuCapability::Avx2 => {
                        while i + 8 <= n {
                            let h = _mm_loadu_si128(src.add(i).cast());
                            _mm256_storeu_ps(dst.add(i), _mm256_cvtph_ps(h));
                            i += 8;
                        }
                    }
                    CpuCapability::Default => {}
                }
            }
        }
        if i < n {
            // SAFETY: forwarded contract (the rest of the run).
            unsafe { f16_to_f32_slice::<I>(src.add(i), dst.add(i), n - i) }
        }
    }
    #[inline(always)]
    unsafe fn from_f32_run<I: Isa>(src: *const f32, dst: *mut Self, n: usize) {
        let mut i = 0;
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: as in to_f32_run.
            unsafe {
                match I::CAP {
                    CpuCapability::Avx512 => {
                        while i + 16 <= n {
                            let v = _mm512_loadu_ps(src.add(i));
                            let h = _mm512_cvtps_ph::<
                                { _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC },
                            >(v);
                            _mm256_storeu_si256(dst.add(i).cast(), h);
                            i += 16;
                        }
                    }
                    CpuCapability::Avx2 => {
                        while i + 8 <= n {
                            let v = _mm256_loadu_ps(src.add(i));
                            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
                            _mm_storeu_si128(dst.add(i).cast(), h);
                            i += 8;
                        }
                    }
                    CpuCapability::Default => {}
                }
            }
        }
        if i < n {
            // SAFETY: forwarded contract (the rest of the run).
            unsafe { f32_to_f16_slice::<I>(src.add(i), dst.add(i), n - i) }
        }
    }
}

// bfloat16 <-> f32 are integer shifts and adds, which LLVM vectorises for the ISA.
impl Reduced for bf16 {
    #[inline(always)]
    unsafe fn to_f32_run<I: Isa>(src: *const Self, dst: *mut f32, n: usize) {
        for i in 0..n {
            // SAFETY: forwarded contract.
            unsafe { dst.add(i).write(bf16_to_f32(src.add(i).read())) };
        }
    }
    #[inline(always)]
    unsafe fn from_f32_run<I: Isa>(src: *const f32, dst: *mut Self, n: usize) {
        for i in 0..n {
            // SAFETY: forwarded contract.
            unsafe { dst.add(i).write(f32_to_bf16(src.add(i).read())) };
        }
    }
}

/// Elements per step of the register-fused form of [`reduced_run`]: one AVX-512 vector of
/// f32 (two AVX2 ones).
const REDUCED_VEC: usize = 16;

/// The fused half / bfloat16 pass: every operand has the reduced type `T` (the common dtype,
/// computed in f32 = `M` = `R`), the output and all but stride-0 inputs contiguous. No
/// rounding through the common dtype is needed: inputs already have it and results are
/// stored straight into it.
///
/// Note [Register-fused reduced runs]: a run that is not streamed is converted, computed and
/// converted back [`REDUCED_VEC`] elements at a time in stack arrays that LLVM keeps in
/// registers (load halves, widen, op, narrow, store: what PyTorch's `Vectorized<Half>` loops
/// do). Staging chunks through L1 buffers instead stores every element three times (widened
/// inputs, f32 result, narrowed output): on a machine whose 512-bit stores take two cycles
/// that bound a cached f16 add at ~2.3 elements a cycle, 1.16-1.19x PyTorch's time at 64K-1M
/// elements; fused it is 0.58-0.78x. A streamed run is bound by memory and keeps the staged
/// form ([`reduced_run_streamed`]): its non-temporal stores want whole line-aligned chunks,
/// and the fused steps inlined into that loop made it 4-13% slower at 16M.
///
/// # Safety
/// As [`run_n`], with every operand of dtype `T`, `s[0] == size_of::<T>()` and each input
/// stride `size_of::<T>()` or 0; `M` and `R` are f32.
#[inline(always)]
unsafe fn reduced_run<I: Isa, T: Reduced, M: Elem, R: Elem, const N: usize>(
    p: &[*mut u8; MAX_OPERANDS],
    s: &[isize; MAX_OPERANDS],
    n: usize,
    f: &impl OpN<M, R, N>,
    stream: bool,
    scratch: &mut Scratch<M, R, N>,
) {
    if stream && CAN_STREAM && n >= 4 * REDUCED_CHUNK {
        // SAFETY: forwarded contract.
        return unsafe { reduced_run_streamed::<I, T, M, R, N>(p, s, n, f, scratch) };
    }
    let et = size_of::<T>();
    let mut hoisted = [M::default(); N];
    for (k, h) in hoisted.iter_mut().enumerate() {
        if s[k + 1] == 0 {
            // SAFETY: input k + 1 holds one T.
            *h = cast::<T, M>(unsafe { p[k + 1].cast::<T>().read() });
        }
    }
    let mut done = 0;
    while done + REDUCED_VEC <= n {
        let mut x = [[M::default(); REDUCED_VEC]; N];
        for (k, xk) in x.iter_mut().enumerate() {
            if s[k + 1] == 0 {
                *xk = [hoisted[k]; REDUCED_VEC];
            } else {
                // SAFETY: REDUCED_VEC contiguous Ts of input k + 1 from done; M is f32.
                unsafe {
                    T::to_f32_run::<I>(
                        p[k + 1].add(done * et).cast::<T>(),
                        xk.as_mut_ptr().cast::<f32>(),
                        REDUCED_VEC,
                    )
                };
            }
        }
        let mut o = [R::default(); REDUCED_VEC];
        let xs: [*const M; N] = std::array::from_fn(|k| x[k].as_ptr());
        // SAFETY: each xs[k] and `o` hold REDUCED_VEC elements; the output's REDUCED_VEC Ts
        // from `done` are written after every input of them was read (in-place ops alias
        // element for element); R is f32.
        unsafe {
            compute_run::<M, R, N>(&xs, o.as_mut_ptr(), REDUCED_VEC, f);
            T::from_f32_run::<I>(
                o.as_ptr().cast::<f32>(),
                p[0].add(done * et).cast::<T>(),
                REDUCED_VEC,
            );
        }
        done += REDUCED_VEC;
    }
    if done < n {
        // The last (fewer than REDUCED_VEC) elements through the staged form.
        let mut q = *p;
        for (k, qk) in q.iter_mut().enumerate().take(N + 1) {
            if k == 0 || s[k] != 0 {
                // SAFETY: `done` elements into each moving operand, which holds n.
                *qk = unsafe { qk.add(done * et) };
            }
        }
        // SAFETY: forwarded contract, for the remaining n - done elements.
        unsafe { reduced_run_streamed::<I, T, M, R, N>(&q, s, n - done, f, scratch) };
    }
}

/// The staged form of [`reduced_run`]: chunks of [`REDUCED_CHUNK`] elements are converted,
/// computed and converted back while they are in L1, reading all inputs and writing the
/// output in one interleaved stream (the block path reads each input a block at a time and
/// stages the result, which leaves the memory system idle between its phases: 1.5-2x slower
/// at 16M elements), streamed with non-temporal stores from the first line-aligned chunk
/// when `n >= 4 * REDUCED_CHUNK`: [`reduced_run`] passes such an `n` only for an op that
/// streams (otherwise only its last, fewer than [`REDUCED_VEC`], elements).
///
/// # Safety
/// As [`reduced_run`].
#[inline(always)]
unsafe fn reduced_run_streamed<I: Isa, T: Reduced, M: Elem, R: Elem, const N: usize>(
    p: &[*mut u8; MAX_OPERANDS],
    s: &[isize; MAX_OPERANDS],
    n: usize,
    f: &impl OpN<M, R, N>,
    scratch: &mut Scratch<M, R, N>,
) {
    const { assert!(REDUCED_CHUNK <= BLOCK && 2 * REDUCED_CHUNK <= STREAM_CHUNK) };
    let et = size_of::<T>();
    let (mut ins, out) = scratch.get(n.min(REDUCED_CHUNK));
    let mut src = [std::ptr::null::<M>(); N];
    for (k, buf) in ins.iter_mut().enumerate() {
        if s[k + 1] == 0 {
            // A hoisted input: converted once, the whole buffer.
            // SAFETY: input k + 1 holds one T.
            buf.fill(cast::<T, M>(unsafe { p[k + 1].cast::<T>().read() }));
        }
        src[k] = buf.as_ptr();
    }
    let peel = if CAN_STREAM && n >= 4 * REDUCED_CHUNK {
        peel_to_line(p[0], et, n)
    } else {
        n
    };
    let mut half_buf = ChunkBuf::new();
    let mut streamed = false;
    let mut start = 0;
    while start < n {
        let len = if start < peel {
            (peel - start).min(REDUCED_CHUNK)
        } else {
            REDUCED_CHUNK.min(n - start)
        };
        for (k, buf) in ins.iter_mut().enumerate() {
            if s[k + 1] != 0 {
                // SAFETY: `len` contiguous Ts of input k + 1 from `start`; M is f32.
                unsafe {
                    T::to_f32_run::<I>(
                        p[k + 1].add(start * et).cast::<T>(),
                        buf.as_mut_ptr().cast::<f32>(),
                        len,
                    )
                };
            }
        }
        // SAFETY: each src holds at least len Ms, `out` len Rs.
        unsafe { compute_run::<M, R, N>(&src, out.as_mut_ptr(), len, f) };
        // SAFETY: `len` contiguous Ts of the output from `start`; R is f32.
        let dst = unsafe { p[0].add(start * et) };
        if start >= peel && len == REDUCED_CHUNK {
            // SAFETY: the chunk buffer holds REDUCED_CHUNK Ts (asserted above), fully written
            // before it is streamed to the line-aligned `dst` (start >= peel).
            unsafe {
                T::from_f32_run::<I>(out.as_ptr().cast::<f32>(), half_buf.ptr().cast::<T>(), len);
                stream_copy::<I>(half_buf.ptr(), dst, len * et);
            }
            streamed = true;
        } else {
            // SAFETY: as above.
            unsafe { T::from_f32_run::<I>(out.as_ptr().cast::<f32>(), dst.cast::<T>(), len) };
        }
        start += len;
    }
    if streamed {
        stream_fence();
    }
}

/// One run of `n` elements along the inner dimension: the contiguous path, the scalar-operand
/// path (one input of stride 0 hoisted), or the block path (inputs loaded and cast into L1
/// buffers of `M`, computed, results cast and stored: the strided loop and the fused casting
/// pass in one).
///
/// # Safety
/// `p`/`s` are operand pointers and byte strides from a TensorIterator loop with at least `n`
/// elements along `s`; operand `k` has dtype `dts[k]`; `I` is supported by the CPU.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn run_n<I: Isa, M: Elem, R: Elem, const N: usize>(
    via: Option<ScalarType>,
    dts: &[ScalarType; MAX_OPERANDS],
    p: &[*mut u8; MAX_OPERANDS],
    s: &[isize; MAX_OPERANDS],
    n: usize,
    f: &impl OpN<M, R, N>,
    scratch: &mut Scratch<M, R, N>,
    stream: bool,
) {
    let (em, er) = (size_of::<M>() as isize, size_of::<R>() as isize);
    // bool inputs go through the block path, which normalises bytes other than 0/1.
    let direct = M::KIND != Kind::Bool && dts[0] == R::DTYPE && (1..=N).all(|k| dts[k] == M::DTYPE);
    if direct && s[0] == er {
        // SAFETY (all branches): the strides tested are those each path assumes.
        if (1..=N).all(|k| s[k] == em) {
            return unsafe { direct_run::<I, M, R, N, NO_SCALAR>(p, n, f, stream) };
        }
        if N >= 2 && (1..=N).all(|k| s[k] == em || s[k] == 0) {
            let zeros = (1..=N).filter(|&k| s[k] == 0).count();
            if zeros == 1 {
                match (1..=N).position(|k| s[k] == 0) {
                    Some(0) => return unsafe { direct_run::<I, M, R, N, 0>(p, n, f, stream) },
                    Some(1) => return unsafe { direct_run::<I, M, R, N, 1>(p, n, f, stream) },
                    Some(2) => return unsafe { direct_run::<I, M, R, N, 2>(p, n, f, stream) },
                    _ => {}
                }
            }
        }
    }
    // Half or bfloat16 throughout (the common dtype, computed in f32), contiguous.
    if let Some(v) = via {
        let et = 2;
        if M::DTYPE == ScalarType::Float
            && R::DTYPE == ScalarType::Float
            && s[0] == et
            && (0..=N).all(|k| dts[k] == v)
            && (1..=N).all(|k| s[k] == et || s[k] == 0)
        {
            // SAFETY: the dtypes and strides reduced_run assumes, tested above.
            match v {
                ScalarType::Half => {
                    return unsafe { reduced_run::<I, f16, M, R, N>(p, s, n, f, stream, scratch) }
                }
                ScalarType::BFloat16 => {
                    return unsafe { reduced_run::<I, bf16, M, R, N>(p, s, n, f, stream, scratch) }
                }
                _ => {}
            }
        }
    }
    // int32 with float32 into float32 (contiguous): cast in registers inside the one loop
    // (vcvtdq2ps), the common mixed pair that the block path would stage through L1.
    if N == 2 && M::DTYPE == ScalarType::Float && via.is_none() && dts[0] == R::DTYPE && s[0] == er
    {
        let contiguous = |q: usize, es: isize| s[q] == es;
        match (dts[1], dts[2]) {
            (ScalarType::Int, ScalarType::Float) if contiguous(1, 4) && contiguous(2, em) => {
                // SAFETY: contiguous runs of the tested dtypes.
                return unsafe { fused_pair_run::<I, i32, M, M, R, N>(p, n, f, stream) };
            }
            (ScalarType::Float, ScalarType::Int) if contiguous(1, em) && contiguous(2, 4) => {
                // SAFETY: as above.
                return unsafe { fused_pair_run::<I, M, i32, M, R, N>(p, n, f, stream) };
            }
            _ => {}
        }
    }
    // Operands already in the computation type with unit stride are read (written) in place;
    // only the others go through the L1 buffers (int32 + float32 casts one input, in blocks).
    let in_place =
        |q: usize| M::KIND != Kind::Bool && via.is_none() && dts[q] == M::DTYPE && s[q] == em;
    let out_in_place = dts[0] == R::DTYPE && s[0] == er && (via.is_none() || R::KIND == Kind::Bool);
    let (mut ins, out) = scratch.get(n);
    let mut start = 0;
    while start < n {
        let len = BLOCK.min(n - start);
        let mut src = [std::ptr::null::<M>(); N];
        for (k, buf) in ins.iter_mut().enumerate() {
            let q = k + 1;
            // SAFETY: the block lies within the run.
            let at = unsafe { p[q].offset(start as isize * s[q]) };
            if in_place(q) {
                src[k] = at.cast_const().cast::<M>();
                continue;
            }
            // SAFETY: as above.
            unsafe { load_block::<I, M>(dts[q], at, s[q], &mut buf[..len]) };
            if let Some(v) = via {
                if dts[q] != v {
                    round_via(v, &mut buf[..len]);
                }
            }
            src[k] = buf.as_ptr();
        }
        // SAFETY: as above.
        let o = unsafe { p[0].offset(start as isize * s[0]) };
        if out_in_place {
            // SAFETY: `src` holds len readable Ms each, `o` len writable Rs.
            unsafe { compute_run::<M, R, N>(&src, o.cast::<R>(), len, f) };
        } else {
            // SAFETY: as above, into the buffer.
            unsafe { compute_run::<M, R, N>(&src, out.as_mut_ptr(), len, f) };
            if let Some(v) = via {
                if dts[0] != v && R::KIND != Kind::Bool {
                    round_via(v, &mut out[..len]);
                }
            }
            // SAFETY: as above.
            unsafe { store_block::<I, R>(dts[0], o, s[0], &out[..len]) };
        }
        start += len;
    }
}

/// [`fused_pair`], with the output written by non-temporal stores when `stream` is set (see
/// [`streamed`]): int32 + float32 into a large float32 out= moves as few bytes as the float32
/// add.
///
/// # Safety
/// As [`fused_pair`]; `I` is supported by the CPU.
#[inline(always)]
unsafe fn fused_pair_run<I: Isa, A: Elem, B: Elem, M: Elem, R: Elem, const N: usize>(
    p: &[*mut u8; MAX_OPERANDS],
    n: usize,
    f: &impl OpN<M, R, N>,
    stream: bool,
) {
    // SAFETY: forwarded contract; `run` computes elements i.. of the inputs into `dst`.
    unsafe {
        streamed::<I>(
            p[0],
            size_of::<R>(),
            n,
            stream,
            // Note [Closures and target features].
            #[inline(always)]
            |i, dst, len| {
                let mut q = *p;
                q[0] = dst;
                q[1] = p[1].wrapping_add(i * size_of::<A>());
                q[2] = p[2].wrapping_add(i * size_of::<B>());
                fused_pair::<A, B, M, R, N>(&q, len, f)
            },
        )
    }
}

/// A binary run whose inputs have element types `A` and `B` (contiguous), cast to `M` as they
/// are read.
///
/// # Safety
/// `p[0]` holds `n` writable `R`s, `p[1]` `n` readable `A`s, `p[2]` `n` readable `B`s; N is 2.
#[inline(always)]
unsafe fn fused_pair<A: Elem, B: Elem, M: Elem, R: Elem, const N: usize>(
    p: &[*mut u8; MAX_OPERANDS],
    n: usize,
    f: &impl OpN<M, R, N>,
) {
    let o = p[0].cast::<R>();
    let (a, b) = (p[1].cast_const().cast::<A>(), p[2].cast_const().cast::<B>());
    for i in 0..n {
        let mut x = [M::default(); N];
        for (k, xk) in x.iter_mut().enumerate() {
            // SAFETY: per the contract.
            *xk = unsafe {
                if k == 0 {
                    cast::<A, M>(a.add(i).read())
                } else {
                    cast::<B, M>(b.add(i).read())
                }
            };
        }
        // SAFETY: per the contract.
        unsafe { o.add(i).write(f.call(x)) };
    }
}

/// `dst[i] = f(src[0][i], .., src[N-1][i])` for `i < len`: one loop over contiguous runs of
/// the computation type, which LLVM vectorises.
///
/// # Safety
/// Each `src[k]` holds `len` readable `M`s and `dst` `len` writable `R`s (`dst` may be one of
/// the inputs, element for element, as for in-place ops).
#[inline(always)]
unsafe fn compute_run<M: Elem, R: Elem, const N: usize>(
    src: &[*const M; N],
    dst: *mut R,
    len: usize,
    f: &impl OpN<M, R, N>,
) {
    // SAFETY: the same contract.
    unsafe { f.call_run(src, dst, len) }
}

/// Whether the 2-D loop should be tiled: some operand moves far along the inner dimension
/// but little along the outer one (a transposed operand).
#[inline(always)]
fn wants_tiling(s0: &[isize], s1: &[isize], n0: usize, n1: usize) -> bool {
    if n0 < TILE || n1 < 2 {
        return false;
    }
    s0.iter()
        .zip(s1)
        .any(|(a, b)| a.unsigned_abs() > 256 && b.unsigned_abs() < a.unsigned_abs())
}

/// Whether input operand `q` is transposed: it moves far along the inner dimension and less
/// along the outer one.
#[inline(always)]
fn is_transposed(s0: &[isize; MAX_OPERANDS], s1: &[isize; MAX_OPERANDS], q: usize) -> bool {
    s0[q].unsigned_abs() > 256 && s1[q].unsigned_abs() < s0[q].unsigned_abs()
}

/// The input (index `k` among the inputs) whose tiles [`fused_2d`] can compute straight from
/// the transposed registers: the only transposed input, of the computation type and
/// contiguous along the outer dimension, with every other input of the computation type and
/// contiguous along the inner dimension, and the output of the result type, contiguous
/// along the inner dimension (no casting anywhere, not bool).
#[inline(always)]
fn fused_input<I: Isa, M: Elem, R: Elem, const N: usize>(
    via: Option<ScalarType>,
    dts: &[ScalarType; MAX_OPERANDS],
    s0: &[isize; MAX_OPERANDS],
    s1: &[isize; MAX_OPERANDS],
) -> Option<usize> {
    let (em, er) = (size_of::<M>() as isize, size_of::<R>() as isize);
    if via.is_some() || M::KIND == Kind::Bool || dts[0] != R::DTYPE || s0[0] != er {
        return None;
    }
    if transpose::block_side::<I>(em as usize) == 0 {
        return None;
    }
    let mut found = None;
    for k in 0..N {
        let q = k + 1;
        if dts[q] != M::DTYPE {
            return None;
        }
        if is_transposed(s0, s1, q) {
            if found.is_some() || s1[q] != em {
                return None;
            }
            found = Some(k);
        } else if s0[q] != em {
            return None;
        }
    }
    found
}

/// Rows of the output (the outer dimension) per tile of [`fused_2d`]: a tile reads
/// `FUSED_TILE_J` elements of each of its `TILE` rows of the transposed operand, so each
/// visit to one of that operand's 4 KB pages takes a kilobyte of f32, not the 256 bytes of
/// square 64x64 tiles. In the standalone loop 128 and 256 rows were a few percent faster
/// than 64, and 512 (128 KB of each operand per tile) much slower.
const FUSED_TILE_J: usize = 256;

/// The fused form of [`tiled_2d`] for the operands [`fused_input`] accepts, input `t` being
/// the transposed one: each `K` x `K` block of it is transposed in registers
/// (`transpose::with_block_t`), and each of its columns is combined at once with the `K`
/// elements of the other inputs along the inner dimension and stored to the output, so the
/// transposed operand is never stored to and reloaded from an L1 tile.
///
/// What makes it run near the memory's speed on numpy's arrays (4 KB pages, rows starting
/// 16 bytes into a line), measured in a standalone loop of the 4096x4096 f32 add (see Note
/// [Pointwise kernels at bandwidth]):
/// - the block grid along the inner dimension starts where the output's rows are 64-byte
///   aligned (`ioff` elements in; those first and the last partial columns are computed
///   element by element), so no store, and for equal offsets no load of the other inputs,
///   splits across two lines;
/// - with `stream` (outputs above `STREAM_MIN_BYTES`) and every output row line-aligned,
///   each computed column is written by one non-temporal store (no read for ownership);
/// - tiles of `TILE` x [`FUSED_TILE_J`];
/// - every load of a block before any of its stores, and the lines of the block two blocks
///   ahead along the inner dimension prefetched into L2 (`transpose::prefetch_rows_l2`), for
///   every operand (each is a short run on its own 4 KB page, which the hardware prefetchers
///   do not fetch ahead).
///
/// # Safety
/// As [`tiled_2d`], with `t` from [`fused_input`] for these operands and `K` the
/// `transpose::block_side` of `M` under `I`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn fused_2d<I: Isa, M: Elem, R: Elem, const N: usize, const K: usize>(
    t: usize,
    data: &[*mut u8],
    s0: &[isize; MAX_OPERANDS],
    s1: &[isize; MAX_OPERANDS],
    n0: usize,
    n1: usize,
    f: &impl OpN<M, R, N>,
    stream: bool,
) {
    let tq = t + 1;
    let at = |k: usize, i: usize, j: usize| -> *mut u8 {
        data[k]
            .wrapping_offset(i as isize * s0[k])
            .wrapping_offset(j as isize * s1[k])
    };
    // One element (i, j) (the edges of the grid).
    let one = |i: usize, j: usize| {
        let x: [M; N] = std::array::from_fn(|k| {
            // SAFETY: element (i, j) of input k, inside the 2-D loop, of type M.
            unsafe { at(k + 1, i, j).cast::<M>().read_unaligned() }
        });
        // SAFETY: element (i, j) of the output, of type R.
        unsafe { at(0, i, j).cast::<R>().write_unaligned(f.call(x)) };
    };
    let es = |k: usize| {
        if k == 0 {
            size_of::<R>()
        } else {
            size_of::<M>()
        }
    };
    let er = size_of::<R>();
    // The grid of whole blocks along the inner dimension: [ioff, iend).
    let ioff = match peel_to_line(data[0], er, n0) {
        p if p >= n0 => 0,
        p => p,
    };
    let iend = ioff + (n0 - ioff) / K * K;
    // Streaming needs every column store of every row on a line boundary of its size.
    let stream = stream
        && CAN_STREAM
        && transpose::can_stream_block::<I>(K * er)
        && s1[0].rem_euclid(64) == 0
        && (data[0] as usize + ioff * er).is_multiple_of(K * er);
    // The columns left of and right of the grid, row by row (contiguous in the output).
    for j in 0..n1 {
        for i in (0..ioff).chain(iend..n0) {
            one(i, j);
        }
    }
    let mut j0 = 0;
    while j0 < n1 {
        let lj = FUSED_TILE_J.min(n1 - j0);
        let fj = lj - lj % K;
        let mut i0 = ioff;
        while i0 < iend {
            let li = TILE.min(iend - i0);
            let mut c = 0;
            while c < fj {
                let mut r = 0;
                while r < li {
                    let (i, j) = (i0 + r, j0 + c);
                    // Two blocks ahead along the inner dimension (into the next tile near
                    // this one's end), a block at a time (a whole tile asked for at once
                    // filled the miss buffers and stalled): K rows of K elements of the
                    // transposed input, K elements of K rows of the other operands (not of
                    // a streamed output, which is never read).
                    let ni = i + 2 * K;
                    if ni < iend {
                        transpose::prefetch_rows_l2(at(tq, ni, j), s0[tq], K, K * es(tq));
                        for k in (0..=N).filter(|&k| k != tq && (k != 0 || !stream)) {
                            transpose::prefetch_rows_l2(at(k, ni, j), s1[k], K, K * es(k));
                        }
                    }
                    // SAFETY: the K x K block at (i, j) of input t lies in the grid; its
                    // column cc holds elements i..i + K of column j + cc, which the other
                    // operands hold contiguously (unit stride along the inner dimension) at
                    // (i, j + cc); with `stream`, the output's K elements there start on a
                    // boundary of their size (checked above for row 0; rows are whole lines
                    // apart).
                    unsafe {
                        transpose::with_block_t::<I, M, K>(at(tq, i, j), s0[tq], |cols| {
                            // Every load of the block before any store: the rows of the
                            // output and of the other inputs sit at equal offsets in their
                            // 4 KB pages (numpy's arrays), and a load issued after a store to
                            // an address equal in its low 12 bits waits for that store.
                            let x: [[[M; K]; N]; K] = std::array::from_fn(|cc| {
                                std::array::from_fn(|k| {
                                    if k == t {
                                        cols[cc]
                                    } else {
                                        at(k + 1, i, j + cc).cast::<[M; K]>().read_unaligned()
                                    }
                                })
                            });
                            for (cc, xc) in x.iter().enumerate() {
                                let y: [R; K] = std::array::from_fn(|l| {
                                    f.call(std::array::from_fn(|k| xc[k][l]))
                                });
                                let dst = at(0, i, j + cc);
                                if stream {
                                    transpose::stream_block::<I, [R; K]>(dst, y);
                                } else {
                                    dst.cast::<[R; K]>().write_unaligned(y);
                                }
                            }
                        })
                    };
                    r += K;
                }
                c += K;
            }
            i0 += TILE;
        }
        // The rows of the tile that are not a whole block: the transposed operand is read
        // along its contiguous direction (j innermost).
        for i in ioff..iend {
            for j in j0 + fj..j0 + lj {
                one(i, j);
            }
        }
        j0 += lj;
    }
    if stream {
        stream_fence();
    }
}

/// The tiled form of [`loop_2d`]. A transposed input is first copied into an L1 tile of `M`
/// by reading along its contiguous (outer) direction, a line at a time; the rows of the tile
/// are then computed from it. Gathering it row by row instead would keep `TILE` lines live
/// whose addresses differ by a multiple of 4 KB for power-of-two shapes, which share one L1
/// set and evict each other.
///
/// An input already of the computation type, contiguous along the outer dimension, is moved
/// into its tile with in-register block transposes (`transpose::transpose_into`: 16x16 /
/// 8x8 blocks with AVX-512, 8x8 / 4x4 with AVX2, for 4- and 8-byte elements), and the next
/// tile's rows of it are prefetched; the element-by-element copy with a strided scatter took
/// 2-3x as long as the rest of the add, more on 4 KB pages (see Note [Pointwise kernels at
/// bandwidth]).
///
/// Where no operand needs a cast and one input alone is transposed, [`fused_2d`] computes the
/// op straight from the transposed registers instead (no tile at all); this form is the
/// general one (casts, 1-, 2- and 16-byte or bool elements, several transposed inputs, the
/// DEFAULT capability).
///
/// `stream` (the output is larger than `STREAM_MIN_BYTES`) lets [`fused_2d`] write it with
/// non-temporal stores.
///
/// # Safety
/// As [`loop_2d`], with `s0`/`s1` the inner and outer byte strides.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn tiled_2d<I: Isa, M: Elem, R: Elem, const N: usize>(
    via: Option<ScalarType>,
    dts: &[ScalarType; MAX_OPERANDS],
    data: &[*mut u8],
    s0: &[isize; MAX_OPERANDS],
    s1: &[isize; MAX_OPERANDS],
    n0: usize,
    n1: usize,
    f: &impl OpN<M, R, N>,
    scratch: &mut Scratch<M, R, N>,
    stream: bool,
) {
    if let Some(t) = fused_input::<I, M, R, N>(via, dts, s0, s1) {
        // SAFETY (every arm): forwarded contract; `t` from `fused_input`, `K` the block side
        // of M under I.
        unsafe {
            match transpose::block_side::<I>(size_of::<M>()) {
                16 => return fused_2d::<I, M, R, N, 16>(t, data, s0, s1, n0, n1, f, stream),
                8 => return fused_2d::<I, M, R, N, 8>(t, data, s0, s1, n0, n1, f, stream),
                4 => return fused_2d::<I, M, R, N, 4>(t, data, s0, s1, n0, n1, f, stream),
                _ => {}
            }
        }
    }
    const TT: usize = TILE * TILE;
    let nt = N + 1;
    let at = |k: usize, i: usize, j: usize| -> *mut u8 {
        data[k]
            .wrapping_offset(i as isize * s0[k])
            .wrapping_offset(j as isize * s1[k])
    };
    let (em, er) = (size_of::<M>() as isize, size_of::<R>() as isize);
    let in_place =
        |q: usize| M::KIND != Kind::Bool && via.is_none() && dts[q] == M::DTYPE && s0[q] == em;
    let out_in_place =
        dts[0] == R::DTYPE && s0[0] == er && (via.is_none() || R::KIND == Kind::Bool);
    let mut transposed = [false; N];
    for (k, t) in transposed.iter_mut().enumerate() {
        *t = is_transposed(s0, s1, k + 1);
    }
    // Transposed inputs already of the computation type, contiguous along the outer
    // dimension, whose tiles are moved as raw bits with vector transposes.
    let mut raw = [false; N];
    for (k, r) in raw.iter_mut().enumerate() {
        let q = k + 1;
        *r = transposed[k]
            && M::KIND != Kind::Bool
            && via.is_none()
            && dts[q] == M::DTYPE
            && s1[q] == em
            && transpose::has_vector_form::<I>(em as usize);
    }
    // One TILE x TILE tile of M per transposed input (heap: up to 3 x 64 KB for complex
    // doubles), allocated once per 2-D loop.
    let mut tiles: Vec<M> = if transposed.iter().any(|&t| t) {
        vec![M::default(); N * TT]
    } else {
        Vec::new()
    };
    let mut line = [M::default(); TILE];
    let mut p = [std::ptr::null_mut::<u8>(); MAX_OPERANDS];
    let mut j0 = 0;
    while j0 < n1 {
        let lj = TILE.min(n1 - j0);
        let mut i0 = 0;
        while i0 < n0 {
            let li = TILE.min(n0 - i0);
            for k in (0..N).filter(|&k| transposed[k]) {
                let q = k + 1;
                let tile = &mut tiles[k * TT..(k + 1) * TT];
                if raw[k] {
                    // SAFETY: li rows (s0 apart) of lj contiguous elements of M's dtype,
                    // inside the 2-D loop, into the tile's li x lj corner (rows TILE apart).
                    unsafe {
                        transpose::transpose_into::<I>(
                            em as usize,
                            at(q, i0, j0),
                            s0[q],
                            li,
                            lj,
                            tile.as_mut_ptr().cast(),
                            TILE * em as usize,
                        )
                    };
                    // The next tile's rows of this operand: each is a short run on its own
                    // page (4 KB pages on numpy's memory), which the hardware prefetchers
                    // do not fetch ahead.
                    if i0 + TILE < n0 {
                        let rows = TILE.min(n0 - i0 - TILE);
                        transpose::prefetch_rows(
                            at(q, i0 + TILE, j0),
                            s0[q],
                            rows,
                            lj * em as usize,
                        );
                    }
                    continue;
                }
                for ii in 0..li {
                    // SAFETY: lj elements along the outer dimension, inside the 2-D loop.
                    unsafe {
                        load_block::<I, M>(dts[q], at(q, i0 + ii, j0), s1[q], &mut line[..lj])
                    };
                    if let Some(v) = via {
                        if dts[q] != v {
                            round_via(v, &mut line[..lj]);
                        }
                    }
                    for (jj, x) in line[..lj].iter().enumerate() {
                        tile[jj * TILE + ii] = *x;
                    }
                }
            }
            for jj in 0..lj {
                for (k, pk) in p[..nt].iter_mut().enumerate() {
                    *pk = at(k, i0, j0 + jj);
                }
                let (mut ins, out) = scratch.get(BLOCK);
                let mut src = [std::ptr::null::<M>(); N];
                for (k, buf) in ins.iter_mut().enumerate() {
                    let q = k + 1;
                    if transposed[k] {
                        src[k] = tiles[k * TT + jj * TILE..].as_ptr();
                    } else if in_place(q) {
                        src[k] = p[q].cast_const().cast::<M>();
                    } else {
                        // SAFETY: li elements along the inner dimension, inside the loop.
                        unsafe { load_block::<I, M>(dts[q], p[q], s0[q], &mut buf[..li]) };
                        if let Some(v) = via {
                            if dts[q] != v {
                                round_via(v, &mut buf[..li]);
                            }
                        }
                        src[k] = buf.as_ptr();
                    }
                }
                if out_in_place {
                    // SAFETY: li elements of each operand (tile rows hold TILE).
                    unsafe { compute_run::<M, R, N>(&src, p[0].cast::<R>(), li, f) };
                } else {
                    // SAFETY: as above, into the buffer.
                    unsafe { compute_run::<M, R, N>(&src, out.as_mut_ptr(), li, f) };
                    if let Some(v) = via {
                        if dts[0] != v && R::KIND != Kind::Bool {
                            round_via(v, &mut out[..li]);
                        }
                    }
                    // SAFETY: as above, for the output.
                    unsafe { store_block::<I, R>(dts[0], p[0], s0[0], &out[..li]) };
                }
            }
            i0 += TILE;
        }
        j0 += lj;
    }
}

/// One 2-D loop of `n0` x `n1` elements (what TensorIterator's `for_each` hands a kernel):
/// row by row, or, when an operand is transposed, in `TILE` x `TILE` tiles so that the lines
/// of that operand are reused from L1 and the TLB is not thrashed.
///
/// # Safety
/// `data`/`strides` describe a valid 2-D loop over `N + 1` operands of dtypes `dts`; `I` is
/// supported by the CPU.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn loop_2d<I: Isa, M: Elem, R: Elem, const N: usize>(
    via: Option<ScalarType>,
    dts: &[ScalarType; MAX_OPERANDS],
    data: &[*mut u8],
    strides: &[isize],
    n0: usize,
    n1: usize,
    f: &impl OpN<M, R, N>,
    stream: bool,
) {
    let nt = N + 1;
    let mut s0 = [0isize; MAX_OPERANDS];
    let mut s1 = [0isize; MAX_OPERANDS];
    s0[..nt].copy_from_slice(&strides[..nt]);
    s1[..nt].copy_from_slice(&strides[nt..2 * nt]);
    let mut scratch = Scratch::<M, R, N>::new();
    let mut p = [std::ptr::null_mut::<u8>(); MAX_OPERANDS];
    let at = |k: usize, i: usize, j: usize| -> *mut u8 {
        data[k]
            .wrapping_offset(i as isize * s0[k])
            .wrapping_offset(j as isize * s1[k])
    };
    if wants_tiling(&s0[..nt], &s1[..nt], n0, n1) {
        // SAFETY: forwarded contract.
        unsafe {
            tiled_2d::<I, M, R, N>(via, dts, data, &s0, &s1, n0, n1, f, &mut scratch, stream)
        };
        return;
    }
    for j in 0..n1 {
        for (k, pk) in p[..nt].iter_mut().enumerate() {
            *pk = at(k, 0, j);
        }
        // SAFETY: row j of the 2-D loop.
        unsafe { run_n::<I, M, R, N>(via, dts, &p, &s0, n0, f, &mut scratch, stream) };
    }
}

/// Runs of at most this many elements take [`short_run`]: for them the vector paths' set-up
/// (stride copies, the block buffers, the tiling test, the choice among paths, the call into
/// the ISA trampoline) costs more than the elements.
pub const SHORT_RUN: usize = 16;

/// Which element types the operands of a short run are read and written as (decided once per
/// kernel call from the operands' dtypes).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ShortForm {
    /// Inputs of the computation type `M`, output of the result type `R`.
    Native,
    /// Half (bfloat16) inputs computed in f32, the output half (bfloat16) too, or `R` when
    /// it is bool (a comparison).
    Half,
    HalfToR,
    BFloat16,
    BFloat16ToR,
    /// Anything else (mixed dtypes, complex32, casts through the common dtype): the general
    /// paths.
    None,
}

/// The [`ShortForm`] of a kernel call.
#[inline(always)]
fn short_form<M: Elem, R: Elem, const N: usize>(
    via: Option<ScalarType>,
    dts: &[ScalarType; MAX_OPERANDS],
) -> ShortForm {
    let inputs_are = |d: ScalarType| dts[1..=N].iter().all(|&x| x == d);
    match via {
        None if dts[0] == R::DTYPE && inputs_are(M::DTYPE) => ShortForm::Native,
        Some(v @ (ScalarType::Half | ScalarType::BFloat16))
            if M::DTYPE == ScalarType::Float && inputs_are(v) =>
        {
            let half = v == ScalarType::Half;
            if dts[0] == v && R::DTYPE == ScalarType::Float {
                if half {
                    ShortForm::Half
                } else {
                    ShortForm::BFloat16
                }
            } else if dts[0] == R::DTYPE && R::KIND == Kind::Bool {
                if half {
                    ShortForm::HalfToR
                } else {
                    ShortForm::BFloat16ToR
                }
            } else {
                ShortForm::None
            }
        }
        _ => ShortForm::None,
    }
}

/// A short 1-D run element by element: inputs read as `A` (any stride, 0 included) and cast
/// to `M`, results cast from `R` and written as `O`. Scalar code, outside the ISA trampoline:
/// for a handful of elements the call into it costs more than vectors save.
///
/// # Safety
/// `p`/`s` are operand pointers and byte strides of a run of `n` elements, operand 0 of
/// element type `O`, the inputs of `A`.
#[inline(always)]
unsafe fn short_run<A: Elem, O: Elem, M: Elem, R: Elem, const N: usize>(
    p: &[*mut u8],
    s: &[isize],
    n: usize,
    f: &impl OpN<M, R, N>,
) {
    let (mut o, os) = (p[0], s[0]);
    let mut q: [*const u8; N] = std::array::from_fn(|k| p[k + 1].cast_const());
    let qs: [isize; N] = std::array::from_fn(|k| s[k + 1]);
    for _ in 0..n {
        let mut x = [M::default(); N];
        for k in 0..N {
            // SAFETY: per the contract (`Elem::read` normalises bool bytes).
            x[k] = cast::<A, M>(unsafe { A::read(q[k]) });
            q[k] = q[k].wrapping_offset(qs[k]);
        }
        // SAFETY: per the contract.
        unsafe { o.cast::<O>().write(cast::<R, O>(f.call(x))) };
        o = o.wrapping_offset(os);
    }
}

/// [`short_run`] for the half and bfloat16 [`ShortForm`]s (out of line: the native form,
/// inlined into the loop closure, is the one a 1-element f32 op takes).
///
/// # Safety
/// As [`short_run`], with the operands' dtypes those `form` was computed from.
#[inline(never)]
unsafe fn short_run_reduced<M: Elem, R: Elem, const N: usize>(
    form: ShortForm,
    p: &[*mut u8],
    s: &[isize],
    n: usize,
    f: &impl OpN<M, R, N>,
) {
    // SAFETY (every arm): the element types are those `short_form` matched.
    unsafe {
        match form {
            ShortForm::Half => short_run::<f16, f16, M, R, N>(p, s, n, f),
            ShortForm::HalfToR => short_run::<f16, R, M, R, N>(p, s, n, f),
            ShortForm::BFloat16 => short_run::<bf16, bf16, M, R, N>(p, s, n, f),
            ShortForm::BFloat16ToR => short_run::<bf16, R, M, R, N>(p, s, n, f),
            // The caller takes the native form inline; computing it here is correct too.
            ShortForm::Native => short_run::<M, R, M, R, N>(p, s, n, f),
            ShortForm::None => debug_assert!(false, "short_run_reduced: no short form"),
        }
    }
}

fn check_arity(iter: &TensorIteratorBase, ninputs: usize) -> Result<()> {
    if iter.noutputs() != 1 || iter.ninputs() != ninputs {
        return Err(Error::runtime(format!(
            "cpu_kernel: expected 1 output and {ninputs} inputs, got {} and {}",
            iter.noutputs(),
            iter.ninputs()
        )));
    }
    Ok(())
}

/// `cpu_kernel_vec` of any arity, compiled for `I`: `out = f(inputs...)` computed in `M`,
/// giving `R` (then cast to the output's dtype). Operand 0 is the output.
pub fn cpu_kernel_n<I: Isa, M: Elem, R: Elem, const N: usize>(
    iter: &TensorIteratorBase,
    f: impl OpN<M, R, N>,
) -> Result<()> {
    const { assert!(N >= 1 && N < MAX_OPERANDS, "1 to 3 inputs") };
    // A small op of a compact iterator whose operands are already `M` and `R`: its run, with
    // nothing else to decide (Note [Pointwise kernels at bandwidth]).
    let native_run = |data: &[*mut u8], strides: &[isize], n0: usize| {
        // SAFETY: TensorIterator hands a valid 1-D run of n0 elements over its operands, whose
        // dtypes it checked: the inputs `M`, the output `R`.
        unsafe { short_run::<M, R, M, R, N>(data, strides, n0, &f) }
    };
    if let Some(r) = iter.with_trivial_run_of(N, M::DTYPE, R::DTYPE, SHORT_RUN, native_run) {
        return r;
    }
    check_arity(iter, N)?;
    let mut dts = [ScalarType::Bool; MAX_OPERANDS];
    for (k, d) in dts[..=N].iter_mut().enumerate() {
        *d = iter.dtype(k);
    }
    let via = reduced_common(iter);
    let short = short_form::<M, R, N>(via, &dts);
    // A run of at most SHORT_RUN elements is computed element by element, before any vector
    // set-up (Note [Pointwise kernels at bandwidth]).
    let short_run_of = |data: &[*mut u8], strides: &[isize], n0: usize| {
        // SAFETY: TensorIterator hands a valid 1-D run of n0 elements over its operands,
        // whose dtypes are `dts`, from which `short` was computed.
        unsafe {
            if short == ShortForm::Native {
                short_run::<M, R, M, R, N>(data, strides, n0, &f);
            } else {
                short_run_reduced::<M, R, N>(short, data, strides, n0, &f);
            }
        }
    };
    let numel = iter.numel();
    if short != ShortForm::None && numel > 0 && numel as usize <= SHORT_RUN {
        // A small op of a compact iterator: its run, without the `dyn` loop.
        if let Some(r) = iter.with_trivial_run(short_run_of) {
            return r;
        }
    }
    let stream = CAN_STREAM && streams(iter, &dts[..=N]);
    iter.for_each(
        &|data, strides, n0, n1| {
            if n1 == 1 && n0 <= SHORT_RUN && short != ShortForm::None {
                short_run_of(data, strides, n0);
                return;
            }
            run_isa::<I, _>(
                #[inline(always)]
                || {
                    // SAFETY: TensorIterator hands a valid 2-D loop over its operands, whose
                    // dtypes are `dts`; the stub chose `I` for this CPU.
                    unsafe { loop_2d::<I, M, R, N>(via, &dts, data, strides, n0, n1, &f, stream) }
                },
            )
        },
        GRAIN_SIZE,
    )
}

/// `cpu_kernel` for a unary op, compiled for `I`.
pub fn cpu_unary<I: Isa, M: Elem, R: Elem>(
    iter: &TensorIteratorBase,
    f: impl Fn(M) -> R + Sync,
) -> Result<()> {
    cpu_kernel_n::<I, M, R, 1>(iter, Op1(f))
}

/// `cpu_kernel_vec` for a binary op, compiled for `I`.
pub fn cpu_binary<I: Isa, M: Elem, R: Elem>(
    iter: &TensorIteratorBase,
    f: impl Fn(M, M) -> R + Sync,
) -> Result<()> {
    cpu_kernel_n::<I, M, R, 2>(iter, Op2(f))
}

/// `cpu_kernel` for a ternary op, compiled for `I`.
pub fn cpu_ternary<I: Isa, M: Elem, R: Elem>(
    iter: &TensorIteratorBase,
    f: impl Fn(M, M, M) -> R + Sync,
) -> Result<()> {
    cpu_kernel_n::<I, M, R, 3>(iter, Op3(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The streaming rule counts the bytes the operands span: an add that does not fit in L3
    /// streams even when its output alone is below STREAM_MIN_BYTES; a broadcast input is not
    /// counted; a small op does not stream.
    #[test]
    fn streaming_follows_the_bytes_spanned() {
        use crate::tensor_iterator::TensorIterator;
        use ratten_core::{Device, TensorBase};
        let f32s = |n: i64| TensorBase::empty(&[n], ScalarType::Float, Device::CPU).unwrap();
        let decide = |it: &TensorIteratorBase| {
            let dts: Vec<ScalarType> = (0..it.ntensors()).map(|k| it.dtype(k)).collect();
            streams(it, &dts)
        };
        // 3.9M f32 + f32: 15.6 MiB out (below STREAM_MIN_BYTES), 47 MiB spanned.
        let n = 39 * (1 << 20) / 10;
        let (a, b) = (f32s(n), f32s(n));
        assert!(decide(&TensorIterator::binary_op(None, &a, &b).unwrap()));
        // 2M: 24 MiB spanned, which stays cached.
        let (a, b) = (f32s(1 << 21), f32s(1 << 21));
        assert!(!decide(&TensorIterator::binary_op(None, &a, &b).unwrap()));
        // 3.9M + a broadcast scalar: 31 MiB, not 47.
        let (a, one) = (f32s(n), f32s(1));
        assert!(!decide(&TensorIterator::binary_op(None, &a, &one).unwrap()));
        // A unary op of STREAM_MIN_BYTES out: 2 x STREAM_MIN_BYTES spanned.
        let a = f32s((STREAM_MIN_BYTES / 4) as i64);
        assert!(decide(&TensorIterator::unary_op(None, &a).unwrap()));
        let one = f32s(1);
        assert!(!decide(&TensorIterator::unary_op(None, &one).unwrap()));
    }

    #[test]
    fn casts_follow_static_cast() {
        assert_eq!(cast::<f32, u8>(300.0), 44);
        assert_eq!(cast::<f64, i8>(-1.9), -1);
        assert_eq!(cast::<i64, i8>(300), 44);
        assert!(cast::<f32, bool>(0.5));
        assert!(!cast::<c64, bool>(Complex::new(0.0, 0.0)));
        assert_eq!(cast::<bool, f32>(true), 1.0);
        assert_eq!(cast::<c128, f32>(Complex::new(2.5, 1.0)), 2.5);
        assert_eq!(cast::<i32, f32>(16777217), 16777216.0);
        // NaN and out-of-range floats: x86's integer indefinite (torch's values).
        assert_eq!(cast::<f32, i32>(f32::INFINITY), i32::MIN);
        assert_eq!(cast::<f32, i32>(f32::NAN), i32::MIN);
        assert_eq!(cast::<f64, i64>(9.3e18), i64::MIN);
        assert_eq!(cast::<f64, i64>(-(2f64.powi(63))), i64::MIN);
        assert_eq!(cast::<f32, i16>(1e10), 0);
        assert_eq!(cast::<f64, i32>(-2147483648.9), i32::MIN);
        assert_eq!(cast::<f64, i32>(2147483647.9), i32::MAX);
        assert_eq!(cast::<f32, u8>(-1.0), 255);
        assert_eq!(cast::<f32, bf16>(1.0), bf16::from_f32(1.0));
        for v in [
            1.0f32,
            -3.3,
            1e30,
            65504.0,
            1.0 + 1.0 / 256.0,
            f32::INFINITY,
        ] {
            assert_eq!(f32_to_bf16(v), bf16::from_f32(v), "{v}");
        }
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
        assert_eq!(cast::<f16, f32>(f16::from_f32(1.5)), 1.5);
    }

    /// Runs `$body` with `$I` bound to each ISA marker the CPU supports.
    macro_rules! for_each_isa {
        ($I:ident => $body:block) => {{
            let cap = crate::dispatch_stub::detected_cpu_capability();
            {
                type $I = crate::dispatch_stub::IsaDefault;
                $body
            }
            if cap >= CpuCapability::Avx2 {
                type $I = crate::dispatch_stub::IsaAvx2;
                $body
            }
            if cap >= CpuCapability::Avx512 {
                type $I = crate::dispatch_stub::IsaAvx512;
                $body
            }
        }};
    }

    /// Streamed stores (forced here; kernels stream only above STREAM_MIN_BYTES) give the same
    /// elements as ordinary ones, for every output misalignment, element size and length
    /// around the chunk, with the hoisted-scalar form, and touch nothing outside the run.
    #[test]
    fn streamed_direct_runs_match() {
        fn check<I: Isa, T: Elem, R: Elem>(f: impl Fn(T, T) -> R + Sync + Copy, lens: &[usize]) {
            let vals = |n: usize, m: usize| -> Vec<T> {
                (0..n).map(|i| T::from_i64(((i * m) % 97) as i64)).collect()
            };
            for &n in lens {
                for off in 0..(64 / size_of::<R>()).max(1) + 1 {
                    let (a, b) = (vals(n + 8, 3), vals(n + 8, 5));
                    let mut out = vec![R::default(); n + off + 8];
                    let sentinel = f(T::from_i64(1), T::from_i64(90));
                    for x in out.iter_mut() {
                        *x = sentinel;
                    }
                    let mut p = [std::ptr::null_mut::<u8>(); MAX_OPERANDS];
                    p[0] = out[off..].as_mut_ptr().cast();
                    p[1] = a.as_ptr().cast_mut().cast();
                    p[2] = b.as_ptr().cast_mut().cast();
                    let op = Op2(f);
                    // SAFETY: out holds n Rs from off, a and b n Ts; I is supported.
                    run_isa::<I, _>(|| unsafe {
                        direct_run::<I, T, R, 2, NO_SCALAR>(&p, n, &op, true)
                    });
                    for i in 0..n {
                        assert!(
                            out[off + i] == f(a[i], b[i]),
                            "{:?} n={n} off={off} i={i}",
                            I::CAP
                        );
                    }
                    assert!(out[..off]
                        .iter()
                        .chain(&out[off + n..])
                        .all(|&x| x == sentinel));
                    // b hoisted (stride 0).
                    // SAFETY: as above; input 1 (b) is read once.
                    run_isa::<I, _>(|| unsafe { direct_run::<I, T, R, 2, 1>(&p, n, &op, true) });
                    for i in 0..n {
                        assert!(
                            out[off + i] == f(a[i], b[0]),
                            "{:?} n={n} off={off} i={i}",
                            I::CAP
                        );
                    }
                }
            }
        }
        let lens = [0, 1, 100, 127, 128, 129, 255, 256, 257, 383, 1000, 4099];
        for_each_isa!(I => {
            check::<I, f32, f32>(|x, y| x + y, &lens);
            check::<I, f64, f64>(|x, y| x * y - 1.0, &lens);
            check::<I, i16, i16>(|x, y| x.wrapping_sub(y), &lens);
            check::<I, f32, bool>(|x, y| x < y, &lens);
            check::<I, c128, c128>(|x, y| x * y, &lens);
        });
    }

    /// The fused half / bfloat16 pass, streamed and not, register-fused steps and buffered
    /// rests, with a hoisted (stride-0) input and in place, against the element-wise cast.
    #[test]
    fn reduced_runs_match() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        enum Form {
            Plain,
            HoistedB,
            InPlace,
        }
        fn check<I: Isa, T: Reduced>(stream: bool) {
            let forms = [Form::Plain, Form::HoistedB, Form::InPlace];
            for n in [
                0usize, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 300, 1000, 2049, 4109,
            ] {
                for off in [0usize, 1, 5, 31, 32] {
                    for form in forms {
                        let a: Vec<T> = (0..n)
                            .map(|i| T::from_f64(i as f64 * 0.37 - 50.0))
                            .collect();
                        let b: Vec<T> = (0..n.max(1))
                            .map(|i| T::from_f64(i as f64 * 1.9 + 0.125))
                            .collect();
                        let b_at = |i: usize| b[if form == Form::HoistedB { 0 } else { i }];
                        let mut out = vec![T::from_f64(-7.0); n + off + 4];
                        // In place: `a` lives in `out` (the output is input 1).
                        out[off..off + n].copy_from_slice(&a);
                        let mut p = [std::ptr::null_mut::<u8>(); MAX_OPERANDS];
                        p[0] = out[off..].as_mut_ptr().cast();
                        p[1] = if form == Form::InPlace {
                            p[0]
                        } else {
                            a.as_ptr().cast_mut().cast()
                        };
                        p[2] = b.as_ptr().cast_mut().cast();
                        let mut s = [0isize; MAX_OPERANDS];
                        s[..3].fill(2);
                        if form == Form::HoistedB {
                            s[2] = 0;
                        }
                        let op = Op2(|x: f32, y: f32| x * 3.0 + y);
                        let mut scratch = Scratch::<f32, f32, 2>::new();
                        // SAFETY: n contiguous Ts per operand (one for a hoisted b); the
                        // in-place output aliases input 1 element for element; I is
                        // supported.
                        run_isa::<I, _>(|| unsafe {
                            reduced_run::<I, T, f32, f32, 2>(&p, &s, n, &op, stream, &mut scratch)
                        });
                        for i in 0..n {
                            let want = T::from_f32(a[i].to_f32() * 3.0 + b_at(i).to_f32());
                            assert!(
                                out[off + i] == want,
                                "{:?} {} {form:?} n={n} off={off} i={i}",
                                I::CAP,
                                T::DTYPE
                            );
                        }
                        assert!(out[..off]
                            .iter()
                            .chain(&out[off + n..])
                            .all(|&x| x == T::from_f64(-7.0)));
                    }
                }
            }
        }
        for_each_isa!(I => {
            for stream in [false, true] {
                check::<I, f16>(stream);
                check::<I, bf16>(stream);
            }
        });
    }
}
