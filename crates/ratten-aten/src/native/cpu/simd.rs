//! The instructions the loops use by hand (everything else is LLVM's vectorisation of plain
//! loops under the stub's target features): half <-> f32 conversion, as out-of-line slice
//! conversions and as the register runs of [`Reduced`] that are inlined into the loops, and
//! non-temporal (streaming) stores of whole cache lines.

use std::mem::MaybeUninit;

use half::{bf16, f16};

use super::elements::{bf16_to_f32, f32_to_bf16, Elem};
use crate::dispatch_stub::{CpuCapability, Isa};

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
/// caches (see [`STREAM_MIN_BYTES`](super::pointwise::STREAM_MIN_BYTES)), where the line would be evicted unread anyway.
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

/// Whether non-temporal stores are available (x86_64 only).
pub(crate) const CAN_STREAM: bool = cfg!(target_arch = "x86_64");

/// Bytes of output computed into L1 per streamed chunk (8 lines).
pub(crate) const STREAM_CHUNK: usize = 512;

/// The L1 buffer a chunk is computed into before it is streamed out (line-aligned, as the
/// aligned loads of [`stream_copy`] need).
#[repr(C, align(64))]
pub(crate) struct ChunkBuf([MaybeUninit<u8>; STREAM_CHUNK]);

impl ChunkBuf {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        ChunkBuf([MaybeUninit::uninit(); STREAM_CHUNK])
    }
    #[inline(always)]
    pub(crate) fn ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr().cast()
    }
    #[inline(always)]
    pub(crate) fn ptr_const(&self) -> *const u8 {
        self.0.as_ptr().cast()
    }
}

/// Streams `bytes` (a multiple of 32) from a [`ChunkBuf`] to the 64-byte-aligned `dst`.
///
/// # Safety
/// `src` is a [`ChunkBuf`] whose first `bytes` bytes are initialised; `dst` is 64-byte aligned
/// and holds `bytes` writable bytes; `I` is supported by the CPU.
#[inline(always)]
pub(crate) unsafe fn stream_copy<I: Isa>(src: *const u8, dst: *mut u8, bytes: usize) {
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
pub(crate) fn stream_fence() {
    #[cfg(target_arch = "x86_64")]
    simd_stream::fence();
}

/// Elements to compute with ordinary stores before `p` (elements of `es` bytes) is 64-byte
/// aligned, at most `n`.
#[inline(always)]
pub(crate) fn peel_to_line(p: *const u8, es: usize, n: usize) -> usize {
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

/// A reduced float type (half, bfloat16) whose runs [`reduced_run`](super::loops::reduced::reduced_run) converts to and from f32.
pub(crate) trait Reduced: Elem {
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
