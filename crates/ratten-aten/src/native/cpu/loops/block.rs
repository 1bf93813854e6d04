//! The block path's converted loads and stores: a run of any dtype and byte stride read into
//! (or written from) a buffer of the computation type, casting each element, and the rounding
//! of computed values through a reduced common dtype. The block path of `run_n` and the tiled
//! loop stage every operand that needs a cast or a gather through these.

use ratten_core::{dispatch_all_types, ScalarType};

use crate::dispatch_stub::{run_isa, Isa};
use crate::native::cpu::elements::{cast, Elem};
use crate::native::cpu::simd::{f16_to_f32_slice, f32_to_f16_slice};

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
