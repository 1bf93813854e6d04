//! cat's copies of contiguous inputs (PyTorch's `fastCatOutDim0`, `cat_serial_kernel` and
//! `CatArrayBatchedCopy`, in one form for every dim and thread count).
//!
//! Note [cat as block copies]: when the output and every input cat does not skip are
//! contiguous in one memory format (contiguous or channels last) and of one dtype, take the
//! dims in memory order (outermost first) and split them at `dim`: the output is `outer` rows,
//! and each row is the inputs' blocks side by side, input `i` giving `inner_i` contiguous
//! bytes (its sizes from `dim` inwards, multiplied) at offset `o * inner_i` for row `o`. So
//! the whole cat is a walk over the output's bytes in order, each stretch a `memcpy` from
//! one input: along dim 0 there is one row of one block per input, along the last dim there
//! are many rows of short blocks. The walk is split over threads by output bytes, in chunks of
//! whole 4 KiB pages, so a thread's stretches never share a cache line with another's, and it
//! does not matter whether the blocks are few and large or many and small. An output of at
//! least [`STREAM_MIN_BYTES`] is written with non-temporal stores (as the pointwise kernels'
//! outputs, Note [Pointwise kernels at bandwidth]): it does not fit in the last-level cache,
//! so reading each of its lines for ownership first would only add a third of the traffic.

use ratten_core::{Result, TensorAccess};

use crate::dispatch_stub::{kernel_capability, CpuCapability};
use crate::native::cpu::pointwise::STREAM_MIN_BYTES;
use crate::native::cpu::scatter_gather_kernels::SyncPtr;
use crate::native::cpu::simd::{stream_fence, CAN_STREAM};
use crate::native::shape::is_dense_in_order;
use crate::tensor_iterator::parallel::parallel_for;
use crate::Tensor;

/// The unit the walk is split into across threads (a page of the output).
const PAGE: usize = 4096;

/// Output bytes below which the walk stays on one thread (PyTorch's `GRAIN_SIZE` of 4-byte
/// elements).
const GRAIN_BYTES: usize = 32768 * 4;

/// Copies of fewer bytes than this never stream (their peeled head and tail would dominate).
const STREAM_MIN_COPY: usize = 256;

/// One input of the walk: its data and the bytes it gives each output row.
struct Block {
    src: *const u8,
    inner: usize,
}

// SAFETY: a Block is a pointer into a storage the kernel's guard holds locked for reading
// for the whole parallel region, and the workers only read through it.
unsafe impl Send for Block {}
// SAFETY: as above.
unsafe impl Sync for Block {}

/// Copies each input of `inputs` (cat's non-skipped inputs, in order) into `out` along `dim`
/// as block copies (Note [cat as block copies]) when, under the kernel's guard, `out` and every
/// input are dense in the dim order `order` (outermost first), of `out`'s dtype and of its
/// shape but along `dim`. Returns false (nothing written) when they are not: the caller then
/// copies through TensorIterator.
pub fn cat_contiguous_kernel(
    out: &Tensor,
    inputs: &[&Tensor],
    dim: usize,
    order: &[usize],
) -> Result<bool> {
    let reads: Vec<&ratten_core::TensorBase> = inputs.iter().map(|t| t.base()).collect();
    let g = TensorAccess::new(&reads, &[out.base()])?;
    let oa = g.output(0)?;
    let (osz, ost) = (oa.sizes(), oa.strides());
    let nd = osz.len();
    if dim >= nd || order.len() != nd || !is_dense_in_order(osz, ost, order) {
        return Ok(false);
    }
    let es = oa.dtype().element_size();
    // The position of `dim` in memory order.
    let Some(p) = order.iter().position(|&d| d == dim) else {
        return Ok(false);
    };
    let outer: usize = order[..p].iter().map(|&d| osz[d] as usize).product();
    let mut blocks = Vec::with_capacity(inputs.len());
    let mut along = 0i64;
    for i in 0..inputs.len() {
        let ia = g.input(i)?;
        let (isz, ist) = (ia.sizes(), ia.strides());
        let same_shape = isz.len() == nd && (0..nd).all(|d| d == dim || isz[d] == osz[d]);
        if !same_shape || ia.dtype() != oa.dtype() {
            return Ok(false);
        }
        along += isz[dim];
        if ia.numel() == 0 {
            continue;
        }
        if !is_dense_in_order(isz, ist, order) {
            return Ok(false);
        }
        let inner = order[p..]
            .iter()
            .map(|&d| isz[d] as usize)
            .product::<usize>()
            * es;
        let Some(src) = ia.raw_data_ptr() else {
            return Ok(false);
        };
        blocks.push(Block {
            src: src.as_ptr(),
            inner,
        });
    }
    if along != osz[dim] {
        return Ok(false);
    }
    let row: usize = blocks.iter().map(|b| b.inner).sum();
    let total = outer * row;
    let Some(dst) = oa.raw_data_ptr() else {
        return Ok(total == 0);
    };
    if total == 0 {
        return Ok(true);
    }
    // Each block's offset in a row: starts[i]..starts[i + 1].
    let mut starts = Vec::with_capacity(blocks.len() + 1);
    starts.push(0usize);
    for b in &blocks {
        starts.push(starts.last().copied().unwrap_or(0) + b.inner);
    }
    let stream = CAN_STREAM && total >= STREAM_MIN_BYTES;
    let avx = kernel_capability() != CpuCapability::Default;
    let dst = SyncPtr(dst.as_ptr());
    let pages = total.div_ceil(PAGE);
    let grain = GRAIN_BYTES.div_ceil(PAGE) as i64;
    parallel_for(0, pages as i64, grain, |b, e| {
        let begin = b as usize * PAGE;
        let end = (e as usize * PAGE).min(total);
        // SAFETY: `blocks` are the inputs' dense data and `dst` the output's, all checked
        // above against the shapes (each block holds `outer * inner` bytes, the output
        // `outer * row`), under the guard; chunks of the output are disjoint and the inputs
        // share no memory with it (cat's meta refuses overlap).
        unsafe { copy_range(&blocks, &starts, row, dst.get(), begin, end, stream, avx) };
    })?;
    Ok(true)
}

/// The walk over output bytes `[begin, end)` (Note [cat as block copies]).
///
/// # Safety
/// As at the call in [`cat_contiguous_kernel`].
#[allow(clippy::too_many_arguments)]
unsafe fn copy_range(
    blocks: &[Block],
    starts: &[usize],
    row: usize,
    dst: *mut u8,
    begin: usize,
    end: usize,
    stream: bool,
    avx: bool,
) {
    let mut pos = begin;
    let mut o = pos / row;
    let mut r = pos % row;
    // The block holding row offset `r`: starts[j] <= r < starts[j + 1].
    let mut j = starts.partition_point(|&s| s <= r) - 1;
    while pos < end {
        let b = &blocks[j];
        let within = r - starts[j];
        let n = (b.inner - within).min(end - pos);
        // SAFETY: per the contract: `o < outer`, `within + n <= inner`, `pos + n <= total`.
        unsafe {
            copy_bytes(
                b.src.add(o * b.inner + within),
                dst.add(pos),
                n,
                stream,
                avx,
            )
        };
        pos += n;
        r += n;
        if r == starts[j + 1] {
            j += 1;
            if j == blocks.len() {
                (j, r) = (0, 0);
                o += 1;
            }
        }
    }
    if stream {
        stream_fence();
    }
}

/// Copies `n` bytes, with non-temporal stores to the 64-byte lines of `dst` when `stream`.
///
/// # Safety
/// `src` and `dst` hold `n` bytes and do not overlap.
#[inline]
unsafe fn copy_bytes(src: *const u8, dst: *mut u8, n: usize, stream: bool, avx: bool) {
    if !stream || n < STREAM_MIN_COPY {
        // SAFETY: per the contract.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
        return;
    }
    let head = (64 - dst as usize % 64) % 64;
    let body = (n - head) & !63;
    // SAFETY: head + body <= n, and dst + head is 64-byte aligned.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        stream_lines(src.add(head), dst.add(head), body, avx);
        let done = head + body;
        std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), n - done);
    }
}

/// Streams `bytes` (a multiple of 64) from `src` (any alignment) to the 64-byte aligned `dst`.
///
/// # Safety
/// As [`copy_bytes`]; `avx` only when the CPU has AVX.
#[inline]
unsafe fn stream_lines(src: *const u8, dst: *mut u8, bytes: usize, avx: bool) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: forwarded; AVX is part of the AVX2 and AVX512 capabilities.
        unsafe {
            if avx {
                x86::stream_lines_avx(src, dst, bytes)
            } else {
                x86::stream_lines_sse2(src, dst, bytes)
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = avx;
        // SAFETY: forwarded (never reached: CAN_STREAM is false here).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) };
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU has AVX; `src` holds and `dst` (64-byte aligned) takes `bytes` bytes, a
    /// multiple of 64.
    #[target_feature(enable = "avx")]
    pub unsafe fn stream_lines_avx(src: *const u8, dst: *mut u8, bytes: usize) {
        let mut o = 0;
        // SAFETY: o + 64 <= bytes; dst + o is 32-byte aligned.
        unsafe {
            while o < bytes {
                let a = _mm256_loadu_si256(src.add(o).cast());
                let b = _mm256_loadu_si256(src.add(o + 32).cast());
                _mm256_stream_si256(dst.add(o).cast(), a);
                _mm256_stream_si256(dst.add(o + 32).cast(), b);
                o += 64;
            }
        }
    }

    /// # Safety
    /// As [`stream_lines_avx`], without AVX (SSE2 is part of x86_64).
    pub unsafe fn stream_lines_sse2(src: *const u8, dst: *mut u8, bytes: usize) {
        let mut o = 0;
        // SAFETY: o + 64 <= bytes; dst + o is 16-byte aligned.
        unsafe {
            while o < bytes {
                for k in (0..64).step_by(16) {
                    let v = _mm_loadu_si128(src.add(o + k).cast());
                    _mm_stream_si128(dst.add(o + k).cast(), v);
                }
                o += 64;
            }
        }
    }
}
