//! The contiguous forms: runs whose operands are read and written in place with unit stride
//! (one input may be hoisted with stride 0), a plain loop that LLVM vectorises for the stub's
//! ISA, and int32 with float32 cast in registers in the same loop; each with the output
//! optionally streamed past the caches in line-aligned chunks ([`streamed`]).

use crate::dispatch_stub::Isa;
use crate::native::cpu::elements::{cast, Elem};
use crate::native::cpu::simd::{peel_to_line, stream_copy, stream_fence, ChunkBuf, STREAM_CHUNK};

use super::{OpN, MAX_OPERANDS};

/// Marks "no hoisted input" for [`contiguous_run`].
pub(crate) const NO_SCALAR: usize = usize::MAX;

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
pub(crate) unsafe fn direct_run<I: Isa, M: Elem, R: Elem, const N: usize, const S: usize>(
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

/// [`fused_pair`], with the output written by non-temporal stores when `stream` is set (see
/// [`streamed`]): int32 + float32 into a large float32 out= moves as few bytes as the float32
/// add.
///
/// # Safety
/// As [`fused_pair`]; `I` is supported by the CPU.
#[inline(always)]
pub(crate) unsafe fn fused_pair_run<I: Isa, A: Elem, B: Elem, M: Elem, R: Elem, const N: usize>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch_stub::{run_isa, CpuCapability};
    use crate::native::cpu::loops::Op2;
    use ratten_core::dtype::c128;

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
}
