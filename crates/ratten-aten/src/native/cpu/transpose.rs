//! Block transposes for the tiled loop (see Note [Pointwise kernels at bandwidth]): a block
//! of a transposed operand is copied into an L1 tile with in-register transposes (16x16 for
//! 4-byte elements and 8x8 for 8-byte ones with AVX-512, 8x8 and 4x4 with AVX2) instead of
//! element by element. Elements are moved as raw bits, so one routine serves every dtype of
//! a size (float32, int32; float64, int64, complex64).

use crate::dispatch_stub::{CpuCapability, Isa};

/// Whether [`transpose_into`] has a vector form for elements of `es` bytes under `I`
/// (otherwise the element-by-element copy is all it does).
#[inline(always)]
pub const fn has_vector_form<I: Isa>(es: usize) -> bool {
    cfg!(target_arch = "x86_64")
        && matches!(I::CAP, CpuCapability::Avx2 | CpuCapability::Avx512)
        && matches!(es, 4 | 8)
}

/// The side of the square block that [`with_block_t`] transposes in registers for elements of
/// `es` bytes under `I` (16 for 4-byte and 8 for 8-byte elements with AVX-512, 8 and 4 with
/// AVX2), or 0 where there is no vector form.
#[inline(always)]
pub const fn block_side<I: Isa>(es: usize) -> usize {
    if !has_vector_form::<I>(es) {
        return 0;
    }
    match (I::CAP, es) {
        (CpuCapability::Avx512, 4) => 16,
        (CpuCapability::Avx512, 8) | (CpuCapability::Avx2, 4) => 8,
        (CpuCapability::Avx2, 8) => 4,
        _ => 0,
    }
}

/// Transposes the `K` x `K` block at `src` (`K` rows `rs` bytes apart, each of `K` contiguous
/// elements of `T`) in registers and hands it over whole: `block(v)` with
/// `v[c][r] = src[r][c]`. This is the fused form of the tiled loop: the consumer computes
/// the op straight from the transposed registers, with no store to an L1 tile and reload.
/// Elements are moved as raw bits (any `T` of 4 or 8 bytes).
///
/// Where `K` is not [`block_side`] of `T`'s size under `I`, the block is gathered element by
/// element (correct, but without the vector transpose).
///
/// # Safety
/// The `K` x `K` elements of `src` are readable, and `I` is supported by the CPU.
#[inline(always)]
pub unsafe fn with_block_t<I: Isa, T: Copy, const K: usize>(
    src: *const u8,
    rs: isize,
    block: impl FnOnce([[T; K]; K]),
) {
    // The one form for `I`, `T` and `K`, chosen while compiling so that the others are not
    // instantiated (Note [Kernel instantiations]).
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY (every arm): forwarded contract; each arm runs only under the capability
        // that has its features, for the element size and side it transposes.
        unsafe {
            match const { vector_block_form::<I, T, K>() } {
                AVX512_4_BYTES => return x86::block_t32_avx512(src, rs, block),
                AVX512_8_BYTES => return x86::block_t64_avx512(src, rs, block),
                AVX2_4_BYTES => return x86::block_t32_avx2(src, rs, block),
                AVX2_8_BYTES => return x86::block_t64_avx2(src, rs, block),
                _ => {}
            }
        }
    }
    // SAFETY: element (0, 0) of the block of the contract (every element is written below).
    let mut v = [[unsafe { src.cast::<T>().read_unaligned() }; K]; K];
    for (c, vc) in v.iter_mut().enumerate() {
        for (r, x) in vc.iter_mut().enumerate() {
            // SAFETY: element (r, c) of the block of the contract.
            *x = unsafe {
                src.wrapping_offset(r as isize * rs)
                    .cast::<T>()
                    .add(c)
                    .read_unaligned()
            };
        }
    }
    block(v);
}

// The in-register transposes [`with_block_t`] chooses among (`vector_block_form`): numbers,
// not an enum, so that a match on the constant is decided while instantiating.
const NO_VECTOR_FORM: u8 = 0;
const AVX512_4_BYTES: u8 = 1;
const AVX512_8_BYTES: u8 = 2;
const AVX2_4_BYTES: u8 = 3;
const AVX2_8_BYTES: u8 = 4;

/// Which in-register transpose [`with_block_t`] uses for `K` x `K` blocks of `T` under `I`.
const fn vector_block_form<I: Isa, T, const K: usize>() -> u8 {
    let es = size_of::<T>();
    if !has_vector_form::<I>(es) || block_side::<I>(es) != K {
        return NO_VECTOR_FORM;
    }
    match (I::CAP, es) {
        (CpuCapability::Avx512, 4) => AVX512_4_BYTES,
        (CpuCapability::Avx512, 8) => AVX512_8_BYTES,
        (CpuCapability::Avx2, 4) => AVX2_4_BYTES,
        (CpuCapability::Avx2, 8) => AVX2_8_BYTES,
        _ => NO_VECTOR_FORM,
    }
}

/// Whether [`stream_block`] writes `bytes` (one column of a transposed block, computed) with
/// one non-temporal store under `I`: 32 bytes with AVX2 or AVX-512, 64 with AVX-512.
#[inline(always)]
pub fn can_stream_block<I: Isa>(bytes: usize) -> bool {
    cfg!(target_arch = "x86_64")
        && matches!(
            (I::CAP, bytes),
            (CpuCapability::Avx512, 32 | 64) | (CpuCapability::Avx2, 32)
        )
}

/// Writes `v` (one vector register's worth of elements) to `dst` with a non-temporal store:
/// the line is written past the caches, without first being read for ownership (see
/// `STREAM_MIN_BYTES` in `native/cpu/mod.rs`). The caller ends its stores with an `sfence`.
///
/// # Safety
/// `dst` is aligned to `size_of::<V>()` and holds that many writable bytes;
/// [`can_stream_block`] holds for `size_of::<V>()` under `I`, and `I` is supported by the CPU.
#[inline(always)]
pub unsafe fn stream_block<I: Isa, V: Copy>(dst: *mut u8, v: V) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        use std::mem::transmute_copy;
        // SAFETY (every arm): per the contract (alignment, size, the capability's features);
        // `transmute_copy` reads `V` as the register of its size.
        unsafe {
            match (I::CAP, size_of::<V>()) {
                (CpuCapability::Avx512, 64) => {
                    return _mm512_stream_si512(dst.cast(), transmute_copy::<V, __m512i>(&v))
                }
                (CpuCapability::Avx512 | CpuCapability::Avx2, 32) => {
                    return _mm256_stream_si256(dst.cast(), transmute_copy::<V, __m256i>(&v))
                }
                _ => {}
            }
        }
    }
    // SAFETY: per the contract (never reached where `can_stream_block` holds).
    unsafe { dst.cast::<V>().write_unaligned(v) };
}

/// `dst[c][r] = src[r][c]` for `r < rows`, `c < cols`, elements of `es` bytes: `src` has
/// `rows` rows `rs` bytes apart, each of `cols` contiguous elements; `dst` gets `cols` rows
/// `dpitch` bytes apart, each of `rows` contiguous elements.
///
/// # Safety
/// Those elements of `src` are readable and of `dst` writable, the two do not overlap, and
/// `I` is supported by the CPU.
pub unsafe fn transpose_into<I: Isa>(
    es: usize,
    src: *const u8,
    rs: isize,
    rows: usize,
    cols: usize,
    dst: *mut u8,
    dpitch: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY (every arm): forwarded contract; the vector forms run only under the
        // capability that has their features.
        unsafe {
            match (I::CAP, es) {
                (CpuCapability::Avx512, 4) => {
                    return x86::t32_avx512(src, rs, rows, cols, dst, dpitch)
                }
                (CpuCapability::Avx512, 8) => {
                    return x86::t64_avx512(src, rs, rows, cols, dst, dpitch)
                }
                (CpuCapability::Avx2, 4) => return x86::t32_avx2(src, rs, rows, cols, dst, dpitch),
                (CpuCapability::Avx2, 8) => return x86::t64_avx2(src, rs, rows, cols, dst, dpitch),
                _ => {}
            }
        }
    }
    // SAFETY: forwarded contract.
    unsafe { scalar(es, src, rs, 0, rows, 0, cols, dst, dpitch) }
}

/// The element-by-element transpose of the part `r0..rows` x `c0..cols` (the whole block, or
/// the edges the vector forms leave).
///
/// # Safety
/// As [`transpose_into`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn scalar(
    es: usize,
    src: *const u8,
    rs: isize,
    r0: usize,
    rows: usize,
    c0: usize,
    cols: usize,
    dst: *mut u8,
    dpitch: usize,
) {
    #[inline(always)]
    unsafe fn each<T: Copy>(
        src: *const u8,
        rs: isize,
        (r0, rows): (usize, usize),
        (c0, cols): (usize, usize),
        dst: *mut u8,
        dpitch: usize,
    ) {
        for r in r0..rows {
            let row = src.wrapping_offset(r as isize * rs).cast::<T>();
            for c in c0..cols {
                // SAFETY: per the contract of `transpose_into` (unaligned: operands need not
                // be aligned to their element size's multiple of the tile).
                unsafe {
                    let v = row.add(c).read_unaligned();
                    dst.add(c * dpitch).cast::<T>().add(r).write_unaligned(v);
                }
            }
        }
    }
    let (r, c) = ((r0, rows), (c0, cols));
    // SAFETY (every arm): forwarded contract; each arm moves elements of exactly `es` bytes.
    unsafe {
        match es {
            1 => each::<u8>(src, rs, r, c, dst, dpitch),
            2 => each::<u16>(src, rs, r, c, dst, dpitch),
            4 => each::<u32>(src, rs, r, c, dst, dpitch),
            8 => each::<u64>(src, rs, r, c, dst, dpitch),
            16 => each::<u128>(src, rs, r, c, dst, dpitch),
            _ => {
                for rr in r0..rows {
                    for cc in c0..cols {
                        std::ptr::copy_nonoverlapping(
                            src.wrapping_offset(rr as isize * rs).add(cc * es),
                            dst.add(cc * dpitch + rr * es),
                            es,
                        );
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// The `K` x `K` blocks: `body(r, c)` for each full block, then the element-by-element
    /// copy of the right and bottom edges.
    ///
    /// # Safety
    /// As `transpose_into`; `body` transposes the block at (r, c).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn blocks<const K: usize>(
        es: usize,
        src: *const u8,
        rs: isize,
        rows: usize,
        cols: usize,
        dst: *mut u8,
        dpitch: usize,
        mut body: impl FnMut(usize, usize),
    ) {
        let (fr, fc) = (rows - rows % K, cols - cols % K);
        let mut r = 0;
        while r < fr {
            let mut c = 0;
            while c < fc {
                body(r, c);
                c += K;
            }
            r += K;
        }
        // SAFETY: forwarded contract (the edges: columns fc.. of every row, then rows fr..
        // of the first fc columns).
        unsafe {
            super::scalar(es, src, rs, 0, rows, fc, cols, dst, dpitch);
            super::scalar(es, src, rs, fr, rows, 0, fc, dst, dpitch);
        }
    }

    /// 16x16 transpose of 4-byte elements in zmm registers (unpack, shuffle, then two lane
    /// shuffles: 64 shuffles for 256 elements).
    #[inline(always)]
    unsafe fn tr16(r: &mut [__m512; 16]) {
        // SAFETY: register-only AVX-512F operations; the caller has AVX-512F.
        unsafe {
            let mut t = [_mm512_setzero_ps(); 16];
            for i in 0..8 {
                t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
                t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
            }
            for i in 0..4 {
                r[4 * i] = _mm512_shuffle_ps::<0x44>(t[4 * i], t[4 * i + 2]);
                r[4 * i + 1] = _mm512_shuffle_ps::<0xEE>(t[4 * i], t[4 * i + 2]);
                r[4 * i + 2] = _mm512_shuffle_ps::<0x44>(t[4 * i + 1], t[4 * i + 3]);
                r[4 * i + 3] = _mm512_shuffle_ps::<0xEE>(t[4 * i + 1], t[4 * i + 3]);
            }
            for h in [0, 8] {
                for i in 0..4 {
                    t[h + i] = _mm512_shuffle_f32x4::<0x88>(r[h + i], r[h + 4 + i]);
                    t[h + 4 + i] = _mm512_shuffle_f32x4::<0xDD>(r[h + i], r[h + 4 + i]);
                }
            }
            for i in 0..8 {
                r[i] = _mm512_shuffle_f32x4::<0x88>(t[i], t[8 + i]);
                r[8 + i] = _mm512_shuffle_f32x4::<0xDD>(t[i], t[8 + i]);
            }
        }
    }

    /// Rows `r..r + K` of a block (`rs` bytes apart), each loaded from byte `off` on by `load`.
    ///
    /// # Safety
    /// `load` may read a vector at each of those `K` addresses.
    #[inline(always)]
    unsafe fn load_rows<V: Copy, const K: usize>(
        src: *const u8,
        rs: isize,
        r: usize,
        off: usize,
        load: impl Fn(*const u8) -> V,
    ) -> [V; K] {
        let row = |k: usize| src.wrapping_offset((r + k) as isize * rs).wrapping_add(off);
        let mut v = [load(row(0)); K];
        for (k, x) in v.iter_mut().enumerate().skip(1) {
            *x = load(row(k));
        }
        v
    }

    /// 8x8 transpose of 8-byte elements in zmm registers.
    #[inline(always)]
    unsafe fn tr8_pd512(v: &mut [__m512d; 8]) {
        // SAFETY: register-only AVX-512F operations; the caller has AVX-512F.
        unsafe {
            let mut t = [_mm512_setzero_pd(); 8];
            for i in 0..4 {
                t[2 * i] = _mm512_unpacklo_pd(v[2 * i], v[2 * i + 1]);
                t[2 * i + 1] = _mm512_unpackhi_pd(v[2 * i], v[2 * i + 1]);
            }
            // 128-bit lanes: pairs of rows (0,2), (1,3), (4,6), (5,7), then across halves.
            for h in [0, 4] {
                for i in 0..2 {
                    v[h + i] = _mm512_shuffle_f64x2::<0x88>(t[h + i], t[h + 2 + i]);
                    v[h + 2 + i] = _mm512_shuffle_f64x2::<0xDD>(t[h + i], t[h + 2 + i]);
                }
            }
            for i in 0..4 {
                t[i] = _mm512_shuffle_f64x2::<0x88>(v[i], v[4 + i]);
                t[4 + i] = _mm512_shuffle_f64x2::<0xDD>(v[i], v[4 + i]);
            }
            *v = t;
        }
    }

    /// 8x8 transpose of 4-byte elements in ymm registers.
    #[inline(always)]
    unsafe fn tr8_ps256(v: &mut [__m256; 8]) {
        // SAFETY: register-only AVX operations; the caller has AVX2.
        unsafe {
            let mut t = [_mm256_setzero_ps(); 8];
            for i in 0..4 {
                t[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);
                t[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
            }
            for i in 0..2 {
                v[4 * i] = _mm256_shuffle_ps::<0x44>(t[4 * i], t[4 * i + 2]);
                v[4 * i + 1] = _mm256_shuffle_ps::<0xEE>(t[4 * i], t[4 * i + 2]);
                v[4 * i + 2] = _mm256_shuffle_ps::<0x44>(t[4 * i + 1], t[4 * i + 3]);
                v[4 * i + 3] = _mm256_shuffle_ps::<0xEE>(t[4 * i + 1], t[4 * i + 3]);
            }
            for i in 0..4 {
                t[i] = _mm256_permute2f128_ps::<0x20>(v[i], v[4 + i]);
                t[4 + i] = _mm256_permute2f128_ps::<0x31>(v[i], v[4 + i]);
            }
            *v = t;
        }
    }

    /// 4x4 transpose of 8-byte elements in ymm registers.
    #[inline(always)]
    unsafe fn tr4_pd256(v: &mut [__m256d; 4]) {
        // SAFETY: register-only AVX operations; the caller has AVX2.
        unsafe {
            let t0 = _mm256_unpacklo_pd(v[0], v[1]);
            let t1 = _mm256_unpackhi_pd(v[0], v[1]);
            let t2 = _mm256_unpacklo_pd(v[2], v[3]);
            let t3 = _mm256_unpackhi_pd(v[2], v[3]);
            *v = [
                _mm256_permute2f128_pd::<0x20>(t0, t2),
                _mm256_permute2f128_pd::<0x20>(t1, t3),
                _mm256_permute2f128_pd::<0x31>(t0, t2),
                _mm256_permute2f128_pd::<0x31>(t1, t3),
            ];
        }
    }

    /// Hands the `L` transposed registers to `block` as `K` arrays of `K` elements of `T`
    /// (the same bits).
    ///
    /// # Safety
    /// `[[T; K]; K]` has the size of `[V; L]`.
    #[inline(always)]
    unsafe fn hand_over<V, T: Copy, const L: usize, const K: usize>(
        v: &[V; L],
        block: impl FnOnce([[T; K]; K]),
    ) {
        // SAFETY: per the contract, the arrays are a bit-copy of the registers
        // (`transmute_copy` checks that they are no larger).
        block(unsafe { std::mem::transmute_copy::<[V; L], [[T; K]; K]>(v) });
    }

    /// `with_block_t` for 4-byte elements, 16x16, AVX-512.
    ///
    /// # Safety
    /// As `with_block_t`; `T` has 4 bytes, `K` is 16; the CPU has AVX-512F.
    #[inline(always)]
    pub(super) unsafe fn block_t32_avx512<T: Copy, const K: usize>(
        src: *const u8,
        rs: isize,
        block: impl FnOnce([[T; K]; K]),
    ) {
        // SAFETY: 16 rows of 16 elements of the block; [T; 16] of 4 bytes is a zmm register.
        unsafe {
            let mut v = load_rows::<__m512, 16>(src, rs, 0, 0, |p| _mm512_loadu_ps(p.cast()));
            tr16(&mut v);
            hand_over(&v, block);
        }
    }

    /// `with_block_t` for 8-byte elements, 8x8, AVX-512.
    ///
    /// # Safety
    /// As `with_block_t`; `T` has 8 bytes, `K` is 8; the CPU has AVX-512F.
    #[inline(always)]
    pub(super) unsafe fn block_t64_avx512<T: Copy, const K: usize>(
        src: *const u8,
        rs: isize,
        block: impl FnOnce([[T; K]; K]),
    ) {
        // SAFETY: 8 rows of 8 elements of the block; [T; 8] of 8 bytes is a zmm register.
        unsafe {
            let mut v = load_rows::<__m512d, 8>(src, rs, 0, 0, |p| _mm512_loadu_pd(p.cast()));
            tr8_pd512(&mut v);
            hand_over(&v, block);
        }
    }

    /// `with_block_t` for 4-byte elements, 8x8, AVX2.
    ///
    /// # Safety
    /// As `with_block_t`; `T` has 4 bytes, `K` is 8; the CPU has AVX2.
    #[inline(always)]
    pub(super) unsafe fn block_t32_avx2<T: Copy, const K: usize>(
        src: *const u8,
        rs: isize,
        block: impl FnOnce([[T; K]; K]),
    ) {
        // SAFETY: 8 rows of 8 elements of the block; [T; 8] of 4 bytes is a ymm register.
        unsafe {
            let mut v = load_rows::<__m256, 8>(src, rs, 0, 0, |p| _mm256_loadu_ps(p.cast()));
            tr8_ps256(&mut v);
            hand_over(&v, block);
        }
    }

    /// `with_block_t` for 8-byte elements, 4x4, AVX2.
    ///
    /// # Safety
    /// As `with_block_t`; `T` has 8 bytes, `K` is 4; the CPU has AVX2.
    #[inline(always)]
    pub(super) unsafe fn block_t64_avx2<T: Copy, const K: usize>(
        src: *const u8,
        rs: isize,
        block: impl FnOnce([[T; K]; K]),
    ) {
        // SAFETY: 4 rows of 4 elements of the block; [T; 4] of 8 bytes is a ymm register.
        unsafe {
            let mut v = load_rows::<__m256d, 4>(src, rs, 0, 0, |p| _mm256_loadu_pd(p.cast()));
            tr4_pd256(&mut v);
            hand_over(&v, block);
        }
    }

    /// Writes the `K` columns of a transposed block (from a `block_t*`) as rows `c..c + K` of
    /// `dst`, at element `r`: the store half of `transpose_into`.
    ///
    /// # Safety
    /// Those `K` runs of `K` elements of `T` lie inside `dst` (per `transpose_into`'s contract).
    #[inline(always)]
    unsafe fn store_block<T: Copy, const K: usize>(
        lanes: [[T; K]; K],
        dst: *mut u8,
        dpitch: usize,
        r: usize,
        c: usize,
    ) {
        for (k, lane) in lanes.iter().enumerate() {
            // SAFETY: per the contract.
            unsafe {
                dst.add((c + k) * dpitch + r * size_of::<T>())
                    .cast::<[T; K]>()
                    .write_unaligned(*lane)
            };
        }
    }

    /// # Safety
    /// As `transpose_into`, 4-byte elements; the CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn t32_avx512(
        src: *const u8,
        rs: isize,
        rows: usize,
        cols: usize,
        dst: *mut u8,
        dpitch: usize,
    ) {
        // SAFETY: 16x16 blocks: each reads rows r..r+16, elements c..c+16, and writes rows
        // c..c+16, elements r..r+16 of dst, all inside the block of the contract.
        unsafe {
            blocks::<16>(4, src, rs, rows, cols, dst, dpitch, |r, c| {
                let at = src.wrapping_offset(r as isize * rs).wrapping_add(c * 4);
                block_t32_avx512::<u32, 16>(at, rs, |b| store_block(b, dst, dpitch, r, c));
            })
        }
    }

    /// # Safety
    /// As `transpose_into`, 8-byte elements; the CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn t64_avx512(
        src: *const u8,
        rs: isize,
        rows: usize,
        cols: usize,
        dst: *mut u8,
        dpitch: usize,
    ) {
        // SAFETY: 8x8 blocks of 8 bytes: each reads rows r..r+8, elements c..c+8, and writes rows
        // c..c+8, elements r..r+8 of dst, all inside the block of the contract.
        unsafe {
            blocks::<8>(8, src, rs, rows, cols, dst, dpitch, |r, c| {
                let at = src.wrapping_offset(r as isize * rs).wrapping_add(c * 8);
                block_t64_avx512::<u64, 8>(at, rs, |b| store_block(b, dst, dpitch, r, c));
            })
        }
    }

    /// # Safety
    /// As `transpose_into`, 4-byte elements; the CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn t32_avx2(
        src: *const u8,
        rs: isize,
        rows: usize,
        cols: usize,
        dst: *mut u8,
        dpitch: usize,
    ) {
        // SAFETY: 8x8 blocks: each reads rows r..r+8, elements c..c+8, and writes rows
        // c..c+8, elements r..r+8 of dst, all inside the block of the contract.
        unsafe {
            blocks::<8>(4, src, rs, rows, cols, dst, dpitch, |r, c| {
                let at = src.wrapping_offset(r as isize * rs).wrapping_add(c * 4);
                block_t32_avx2::<u32, 8>(at, rs, |b| store_block(b, dst, dpitch, r, c));
            })
        }
    }

    /// # Safety
    /// As `transpose_into`, 8-byte elements; the CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn t64_avx2(
        src: *const u8,
        rs: isize,
        rows: usize,
        cols: usize,
        dst: *mut u8,
        dpitch: usize,
    ) {
        // SAFETY: 4x4 blocks of 8 bytes: each reads rows r..r+4, elements c..c+4, and writes rows
        // c..c+4, elements r..r+4 of dst, all inside the block of the contract.
        unsafe {
            blocks::<4>(8, src, rs, rows, cols, dst, dpitch, |r, c| {
                let at = src.wrapping_offset(r as isize * rs).wrapping_add(c * 8);
                block_t64_avx2::<u64, 4>(at, rs, |b| store_block(b, dst, dpitch, r, c));
            })
        }
    }
}

/// Asks for the lines of `rows` rows (`rs` bytes apart) of `bytes` bytes each from `src` to be
/// brought into the cache (every line a row touches, from any alignment): the next tile's
/// rows of a transposed operand, each a short run on its own page, which the hardware
/// prefetchers do not fetch ahead.
#[inline(always)]
pub fn prefetch_rows(src: *const u8, rs: isize, rows: usize, bytes: usize) {
    prefetch_rows_to::<{ PREFETCH_L1 }>(src, rs, rows, bytes)
}

/// As [`prefetch_rows`], into L2 only (`prefetcht1`). For the fused transposed blocks, which
/// ask for 2-3 lines per output line: prefetches into L1 hold one of its few miss buffers
/// each until the line arrives, and filled them (the standalone 4096x4096 f32 add took
/// 1.45x as long with `prefetcht0` at the same distance); from L2 the loads' own misses
/// are short.
#[inline(always)]
pub fn prefetch_rows_l2(src: *const u8, rs: isize, rows: usize, bytes: usize) {
    prefetch_rows_to::<{ PREFETCH_L2 }>(src, rs, rows, bytes)
}

/// The cache levels [`prefetch_rows_to`] fetches into.
const PREFETCH_L1: u8 = 0;
const PREFETCH_L2: u8 = 1;

#[inline(always)]
fn prefetch_rows_to<const LEVEL: u8>(src: *const u8, rs: isize, rows: usize, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for r in 0..rows {
        let start = src.wrapping_offset(r as isize * rs);
        // From the start of the first line, so that an unaligned run's last line is asked for.
        let lead = start as usize % 64;
        let row = start.wrapping_sub(lead);
        let (mut b, bytes) = (0, bytes + lead);
        while b < bytes {
            let p = row.wrapping_add(b).cast();
            // SAFETY: a prefetch is a hint; it never faults, whatever the address.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0, _MM_HINT_T1};
                if LEVEL == PREFETCH_L2 {
                    _mm_prefetch::<{ _MM_HINT_T1 }>(p)
                } else {
                    _mm_prefetch::<{ _MM_HINT_T0 }>(p)
                }
            };
            b += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (src, rs, rows, bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch_stub::{detected_cpu_capability, IsaAvx2, IsaAvx512, IsaDefault};

    /// Every capability the CPU has, on blocks of every element size, with full blocks and
    /// edges, a row stride wider than the row, and a destination pitch wider than its rows.
    fn check<I: Isa>() {
        for es in [1usize, 2, 4, 8, 16] {
            for (rows, cols) in [
                (16, 16),
                (64, 64),
                (17, 33),
                (3, 70),
                (40, 5),
                (1, 1),
                (8, 4),
            ] {
                let rs = cols * es + 24;
                let src: Vec<u8> = (0..rows * rs).map(|i| (i * 7 + 3) as u8).collect();
                let dpitch = rows * es + 8;
                let mut dst = vec![0u8; cols * dpitch];
                // SAFETY: the buffers hold the blocks described; the capability is supported
                // (checked by the caller).
                unsafe {
                    transpose_into::<I>(
                        es,
                        src.as_ptr(),
                        rs as isize,
                        rows,
                        cols,
                        dst.as_mut_ptr(),
                        dpitch,
                    )
                };
                for r in 0..rows {
                    for c in 0..cols {
                        let s = &src[r * rs + c * es..][..es];
                        let d = &dst[c * dpitch + r * es..][..es];
                        assert_eq!(s, d, "{:?} es {es} {rows}x{cols} at ({r}, {c})", I::CAP);
                    }
                }
            }
        }
    }

    #[test]
    fn transposes_match_the_element_copy() {
        check::<IsaDefault>();
        let cap = detected_cpu_capability();
        if cap >= CpuCapability::Avx2 {
            check::<IsaAvx2>();
        }
        if cap >= CpuCapability::Avx512 {
            check::<IsaAvx512>();
        }
        assert!(!has_vector_form::<IsaDefault>(4));
        assert!(!has_vector_form::<IsaAvx512>(2));
    }
}
