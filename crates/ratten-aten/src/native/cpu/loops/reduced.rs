//! The half / bfloat16 form: runs whose every operand has the reduced common dtype (computed
//! in f32), converted, computed and converted back in registers, or in L1 chunks when the
//! output is streamed (Note [Register-fused reduced runs]).

use crate::dispatch_stub::Isa;
use crate::native::cpu::elements::{cast, Elem};
use crate::native::cpu::simd::{
    peel_to_line, stream_copy, stream_fence, ChunkBuf, Reduced, CAN_STREAM, STREAM_CHUNK,
};

use super::{compute_run, OpN, Scratch, BLOCK, MAX_OPERANDS};

/// Elements per chunk of [`reduced_run_streamed`] (three f32 buffers of 256 bytes for a binary op).
const REDUCED_CHUNK: usize = 64;

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
/// As [`run_n`](super::run_n), with every operand of dtype `T`, `s[0] == size_of::<T>()` and each input
/// stride `size_of::<T>()` or 0; `M` and `R` are f32.
#[inline(always)]
pub(crate) unsafe fn reduced_run<I: Isa, T: Reduced, M: Elem, R: Elem, const N: usize>(
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
        let mut xs = [std::ptr::null::<M>(); N];
        for (xsk, xk) in xs.iter_mut().zip(&x) {
            *xsk = xk.as_ptr();
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch_stub::{run_isa, CpuCapability};
    use crate::native::cpu::loops::Op2;
    use half::{bf16, f16};

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
