//! `fill_stub` (FillKernel.cpp): the nullary loop behind `fill_` and `zero_`, at the memory's
//! speed (Note [fill at bandwidth]).

use ratten_core::access::TensorAccess;
use ratten_core::dtype::{c128, c64};
use ratten_core::{Result, Scalar, ScalarType, TensorBase};

use super::binary_kernels::stub;
use super::pointwise::STREAM_MIN_BYTES;
use super::simd::{peel_to_line, stream_copy, stream_fence, ChunkBuf, CAN_STREAM, STREAM_CHUNK};
use super::unary_kernels::ScalarFn;
use crate::dispatch_stub::{
    kernel_capability, run_isa, with_isa, CpuCapability, DispatchStub, Isa,
};
use crate::tensor_iterator::{TensorIteratorBase, GRAIN_SIZE};

// Note [fill at bandwidth]
// A fill reads nothing, so its speed is the store bandwidth. Each 2-D loop row that is a
// contiguous run is written as one slice: `write_bytes` (memset) when the value's bytes are
// all zero (`zero_`, `zeros`), else a `slice::fill` that LLVM vectorises. A call whose output
// spans at least twice STREAM_MIN_BYTES (the pointwise kernels' streaming rule: it does not
// fit in the last-level cache) writes its runs with non-temporal stores of a line-aligned
// chunk holding the value's pattern, after ordinary stores up to the first line boundary:
// an ordinary store would first read each line for ownership, doubling the traffic. Strided
// rows (a transposed or expanded output) are written element by element.

/// Writes `v` at each of the `n0 x n1` elements of a 2-D loop whose only operand is `data[0]`.
///
/// # Safety
/// `data[0]`, `strides` and the counts describe a valid 2-D loop over a writable output of
/// element type `T`; `I` is supported by the CPU.
#[inline(always)]
unsafe fn fill_2d<I: Isa, T: Copy>(
    v: T,
    zero: bool,
    chunk: Option<&ChunkBuf>,
    data: &[*mut u8],
    strides: &[isize],
    n0: usize,
    n1: usize,
) {
    let es = std::mem::size_of::<T>();
    for j in 0..n1 {
        let row = data[0].wrapping_offset(j as isize * strides[1]);
        if strides[0] == es as isize {
            // SAFETY: a contiguous run of n0 writable, aligned elements of T.
            unsafe { fill_run::<I, T>(v, zero, chunk, row, n0) };
        } else {
            for i in 0..n0 {
                let p = row.wrapping_offset(i as isize * strides[0]);
                // SAFETY: element (i, j) of the output of a valid 2-D loop.
                unsafe { p.cast::<T>().write(v) };
            }
        }
    }
}

/// Writes `v` at the `n` contiguous elements from `p`.
///
/// # Safety
/// `p` holds `n` writable elements of `T`, aligned; `I` is supported by the CPU; `chunk`, if
/// given, holds `STREAM_CHUNK` bytes of `v` repeated.
#[inline(always)]
unsafe fn fill_run<I: Isa, T: Copy>(
    v: T,
    zero: bool,
    chunk: Option<&ChunkBuf>,
    p: *mut u8,
    n: usize,
) {
    let es = std::mem::size_of::<T>();
    let (mut p, mut n) = (p, n);
    if let Some(chunk) = chunk {
        let peel = peel_to_line(p, es, n);
        // SAFETY: the first `peel` of the run's elements.
        unsafe { fill_plain(v, zero, p, peel) };
        // SAFETY: still inside the run.
        p = unsafe { p.add(peel * es) };
        n -= peel;
        let lines = n * es / STREAM_CHUNK;
        if lines > 0 {
            for k in 0..lines {
                // SAFETY: `p` is now 64-byte aligned (or `n` is 0 after a full peel, and then
                // `lines` is 0); each chunk lies inside the run; the chunk buffer is
                // initialised with the pattern, and STREAM_CHUNK is a multiple of every
                // element size, so the pattern stays in phase.
                unsafe {
                    stream_copy::<I>(chunk.ptr_const(), p.add(k * STREAM_CHUNK), STREAM_CHUNK)
                };
            }
            stream_fence();
            // SAFETY: still inside the run.
            p = unsafe { p.add(lines * STREAM_CHUNK) };
            n -= lines * STREAM_CHUNK / es;
        }
    }
    // SAFETY: the rest of the run.
    unsafe { fill_plain(v, zero, p, n) };
}

/// Ordinary stores of `v` at `n` contiguous elements from `p`.
///
/// # Safety
/// As [`fill_run`].
#[inline(always)]
unsafe fn fill_plain<T: Copy>(v: T, zero: bool, p: *mut u8, n: usize) {
    if zero {
        // SAFETY: `n` writable elements; an all-zero byte pattern is `v` itself.
        unsafe { std::ptr::write_bytes(p, 0, n * std::mem::size_of::<T>()) };
    } else {
        // SAFETY: `n` writable, aligned elements of T.
        unsafe { std::slice::from_raw_parts_mut(p.cast::<T>(), n) }.fill(v);
    }
}

/// Whether `v`'s bytes are all zero (0, 0.0, false, 0 + 0i; not -0.0).
fn is_zero_bits<T: Copy>(v: &T) -> bool {
    // SAFETY: the element types have no padding (integers, floats, bool, pairs of floats),
    // so every byte of `v` is initialised.
    let bytes = unsafe {
        std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>())
    };
    bytes.iter().all(|&b| b == 0)
}

fn fill_typed<T: Copy + Send + Sync>(iter: &TensorIteratorBase, v: T) -> Result<()> {
    let zero = is_zero_bits(&v);
    let es = std::mem::size_of::<T>();
    let stream =
        CAN_STREAM && (iter.numel().max(0) as usize).saturating_mul(es) >= 2 * STREAM_MIN_BYTES;
    let chunk = stream.then(|| {
        let mut c = ChunkBuf::new();
        let p = c.ptr().cast::<T>();
        for k in 0..STREAM_CHUNK / es {
            // SAFETY: k * es < STREAM_CHUNK, the buffer is 64-byte aligned, so each element is
            // aligned and inside it.
            unsafe { p.add(k).write(v) };
        }
        c
    });
    let chunk = chunk.as_ref();
    let cap = kernel_capability();
    iter.for_each(
        &|data, strides, n0, n1| {
            with_isa!(cap, CpuCapability::Avx512, I => run_isa::<I, _>(
                #[inline(always)]
                || {
                    // SAFETY: TensorIterator hands a valid 2-D loop over its one output, whose
                    // dtype is T's; `cap` is at most what this CPU has.
                    unsafe { fill_2d::<I, T>(v, zero, chunk, data, strides, n0, n1) }
                },
            ))
        },
        GRAIN_SIZE,
    )
}

/// `fill_stub`: writes one value (converted by c10's checked conversion in the front end).
fn fill_kernel(iter: &TensorIteratorBase, value: &Scalar) -> Result<()> {
    let dt = iter.dtype(0);
    let value = fill_value(dt, value)?;
    ratten_core::dispatch_all_types!(dt, T => {
        let v: T = ratten_core::ScalarConvert::from_scalar(&value)?;
        fill_typed::<T>(iter, v)
    })
}

/// The value a fill of `dt` converts: PyTorch converts a complex32 fill value to
/// complex<float> with the overflow check and then casts it without one (70000 becomes
/// inf + 0j; 1e300 is refused as complex<float>).
fn fill_value(dt: ScalarType, value: &Scalar) -> Result<Scalar> {
    if dt != ScalarType::ComplexHalf {
        return Ok(*value);
    }
    let z: c64 = ratten_core::ScalarConvert::from_scalar(value)?;
    let h = |x: f32| half::f16::from_f32(x).to_f64();
    Ok(Scalar::ComplexDouble(c128::new(h(z.re), h(z.im))))
}

/// `at::detail::scalar_fill`: the one element of a 1-element CPU tensor written directly, as
/// PyTorch's `fill_out` does for it (no TensorIterator; `scalar_tensor` and every wrapped
/// number of a `Tensor op Scalar` call go through here).
pub fn scalar_fill(self_: &TensorBase, value: &Scalar) -> Result<()> {
    let dt = self_.dtype();
    let value = fill_value(dt, value)?;
    let g = TensorAccess::write(self_)?;
    let out = g.output(0)?;
    ratten_core::dispatch_all_types!(dt, T => {
        let v: T = ratten_core::ScalarConvert::from_scalar(&value)?;
        let p = out.data_ptr_mut::<T>()?;
        // SAFETY: the guard holds the tensor's storage exclusively, and `data_ptr_mut`
        // checked T against its dtype and the element at the storage offset against the
        // storage's bounds (the tensor has one element, at that offset).
        unsafe { p.write(v) };
        Ok(())
    })
}
stub!(FILL_STUB, "fill_stub", ScalarFn, fill_kernel);
