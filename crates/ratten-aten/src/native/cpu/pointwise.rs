//! The pointwise driver (Loops.h's `cpu_kernel` / `cpu_kernel_vec`): [`cpu_kernel_n`] checks
//! a TensorIterator's operands against the op, decides once per call what every loop needs
//! (the operands' dtypes, the reduced common dtype results are rounded through, the short
//! form, whether outputs are streamed), and runs the iterator's loops through the loop forms
//! of [`super::loops`].
//!
//! Note [Pointwise kernels at bandwidth]: what keeps a large pointwise op at the memory's
//! speed (found by timing against torch on the same memory, `python/bench/bench.py
//! --same-memory`, so that kernels and allocators are told apart):
//! - the block path's `Scratch` buffers are line-aligned (`#[repr(C, align(64))]`, every
//!   buffer a multiple of 64 bytes): a vector store split across two lines made the pass
//!   several times slower, depending on where the caller's stack ended;
//! - half and bfloat16 operands of the common dtype are converted to f32 in registers and
//!   back in one interleaved pass (`loops::reduced`), not staged through L1 buffers; the
//!   conversions are the same (round to nearest even), so results are bit-identical;
//! - when a call's operands together span at least twice `STREAM_MIN_BYTES` (an input of
//!   stride 0 not counted), contiguous outputs are written with non-temporal stores from a
//!   line-aligned L1 buffer, with an `sfence` at the end of each run: an ordinary store
//!   first reads the line for ownership, which a stream of this size would evict unread.
//!   Below the threshold outputs stay cached for the next op, as in PyTorch;
//! - a transposed operand is read through in-register block transposes (`transpose.rs`),
//!   and when one input alone is transposed and nothing is cast, the op is computed straight
//!   from the transposed registers (`loops::tiled`'s fused form): the block grid is shifted
//!   so that the output's rows are line-aligned, the next blocks are prefetched into L2, and
//!   outputs above the streaming threshold are stored non-temporally;
//! - runs of at most `SHORT_RUN` elements are computed before any of this set-up.
//!
//! The pointwise bench (`cargo bench -p ratten-aten --bench pointwise`) prints these cases
//! beside memcpy, torch, ndarray and candle.

use ratten_core::{Error, Result, ScalarType};

use super::elements::{Elem, Kind};
use super::loops::short::{short_form, short_run, short_run_reduced, ShortForm, SHORT_RUN};
use super::loops::{loop_2d, Op1, Op2, Op3, OpN, MAX_OPERANDS};
use super::simd::CAN_STREAM;
use crate::dispatch_stub::{kernel_capability, run_isa, with_isa, CpuCapability};
use crate::tensor_iterator::{TensorIteratorBase, GRAIN_SIZE};

/// Half of this machine's 32 MiB L3. A kernel call writes its contiguous outputs with
/// non-temporal stores when its operands together span at least twice this
/// ([`streams`]): the op does not fit in the last-level cache, so its output is evicted before
/// anything reads it again, and reading each output line for ownership before overwriting it
/// (a quarter of an add's memory traffic) is wasted. An output of this size with an input of
/// its element size always streams. Smaller ops use ordinary stores and stay cached for the
/// next op. PyTorch never streams (see Note [Pointwise kernels at bandwidth]).
///
/// The span of all operands decides, not the output alone: an add of 4M f32 elements into
/// out touches 47 MiB and gains from streaming although its output is 16 MiB.
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

/// The dtype results must be rounded through, if any (see [`round_via`](super::loops::block::round_via)).
pub fn reduced_common(iter: &TensorIteratorBase) -> Option<ScalarType> {
    iter.common_dtype().filter(|d| {
        matches!(
            d,
            ScalarType::Half | ScalarType::BFloat16 | ScalarType::ComplexHalf
        )
    })
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

/// The widest instruction set the loops of computation type `M` are compiled for (Note
/// [Kernel instantiations]); a CPU with more runs this one. Measured with the loops alone
/// against the DEFAULT (SSE2) build on an AVX2 machine: integer arithmetic gains up to 2x in
/// L1 from AVX2 (multiplies 1.6x to 2.5x: SSE2 has no 32-bit vector multiply), complex at
/// most 1.26x, bool nothing; beyond L1 every type runs at the memory's speed either way. The
/// floating types (which half and bfloat16 compute in) keep every ISA; integers stop at AVX2
/// (what AVX-512 would add to them was not measured), and so does complex64, whose 8-byte
/// elements a transposed operand reads through the in-register block transposes, which
/// exist from AVX2 on (`transpose::has_vector_form`).
pub const fn widest_isa<M: Elem>() -> CpuCapability {
    match M::KIND {
        Kind::Float => CpuCapability::Avx512,
        Kind::Int => CpuCapability::Avx2,
        Kind::Complex if std::mem::size_of::<M>() == 8 => CpuCapability::Avx2,
        Kind::Bool | Kind::Complex => CpuCapability::Default,
    }
}

/// `cpu_kernel_vec` of any arity: `out = f(inputs...)` computed in `M`, giving `R` (then cast
/// to the output's dtype), its loops compiled for each instruction set up to
/// [`widest_isa`]`::<M>()` and run in the one the CPU capability selects. Operand 0 is the
/// output.
pub fn cpu_kernel_n<M: Elem, R: Elem, const N: usize>(
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
    let cap = kernel_capability();
    iter.for_each(
        &|data, strides, n0, n1| {
            if n1 == 1 && n0 <= SHORT_RUN && short != ShortForm::None {
                short_run_of(data, strides, n0);
                return;
            }
            with_isa!(cap, widest_isa::<M>(), I => run_isa::<I, _>(
                #[inline(always)]
                || {
                    // SAFETY: TensorIterator hands a valid 2-D loop over its operands, whose
                    // dtypes are `dts`; `cap` is at most what this CPU has.
                    unsafe { loop_2d::<I, M, R, N>(via, &dts, data, strides, n0, n1, &f, stream) }
                },
            ))
        },
        GRAIN_SIZE,
    )
}

/// `cpu_kernel` for a unary op.
pub fn cpu_unary<M: Elem, R: Elem>(
    iter: &TensorIteratorBase,
    f: impl Fn(M) -> R + Sync,
) -> Result<()> {
    cpu_kernel_n::<M, R, 1>(iter, Op1(f))
}

/// `cpu_kernel_vec` for a binary op.
pub fn cpu_binary<M: Elem, R: Elem>(
    iter: &TensorIteratorBase,
    f: impl Fn(M, M) -> R + Sync,
) -> Result<()> {
    cpu_kernel_n::<M, R, 2>(iter, Op2(f))
}

/// `cpu_kernel` for a ternary op.
pub fn cpu_ternary<M: Elem, R: Elem>(
    iter: &TensorIteratorBase,
    f: impl Fn(M, M, M) -> R + Sync,
) -> Result<()> {
    cpu_kernel_n::<M, R, 3>(iter, Op3(f))
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
}
