//! The loop forms of the pointwise driver: what one 2-D loop of TensorIterator (`n0` x `n1`
//! elements, operand pointers and byte strides) runs, for an element-wise op ([`OpN`])
//! computed in `M` giving `R`, compiled for an instruction set `I`.
//!
//! [`loop_2d`] walks the loop row by row ([`run_n`]), or, when an input moves with a large
//! stride along the inner dimension but a small one along the outer (a transposed operand),
//! in `TILE` x `TILE` tiles ([`tiled`]) so that the lines of that operand are reused from L1
//! and the TLB is not thrashed. Per row, [`run_n`] takes
//! - a **contiguous** form ([`contiguous`]) when every operand has the computation type and
//!   unit stride (a plain indexed loop that LLVM vectorises for the stub's ISA), one input of
//!   stride 0 (its value hoisted) included, and for int32 with float32 (cast in registers);
//! - the **reduced** form ([`reduced`]) when every operand is half, or every one bfloat16
//!   (their "opmath" type f32, converted in registers);
//! - otherwise the **block** path: up to [`BLOCK`] elements of each input are loaded into an
//!   L1-resident buffer of the computation type (casting from the input's dtype, any stride,
//!   [`block`]), computed with the same vectorised body, and stored to the output (casting to
//!   its dtype). This is the strided fallback and the fused casting pass in one.
//!
//! Runs of at most `SHORT_RUN` elements take the scalar [`short`] form, which the driver calls
//! before any of this. Every function a loop runs through is `#[inline(always)]` down to the
//! op (Note [Closures and target features]), except the per-dtype conversions of [`block`],
//! which are compiled once per ISA and computation type.
//!
//! Note [Kernel instantiations]: every kernel's loops are compiled for each computation type,
//! result type, arity and ISA they are called with, and each such instantiation compiles
//! every loop form it can reach: the build time of this crate is the number of forms reached
//! times the number of kernels. So a kernel is not generic over the ISA (a closure written in
//! a function generic over `I` is a distinct type per `I`, and everything it reaches would be
//! compiled once per ISA); the driver instantiates the 2-D loop for each ISA up to
//! [`widest_isa`](crate::native::cpu::pointwise::widest_isa)`::<M>()`, the ISAs measured to
//! earn their speed for that type, and everything before the loop (dtype dispatch, checks,
//! short runs) once. A form that only some types can take is likewise guarded by a
//! condition the compiler decides while instantiating: an inline `const { .. }` block, or a
//! comparison of constants (`N >= 3`), not a call such as a derived `==` on [`ScalarType`]
//! (see [`is_dtype`](crate::native::cpu::elements::is_dtype)). A branch whose constant
//! condition is false is not instantiated at all. So the half / bfloat16 forms exist for f32
//! computations only, a hoisted third input for ternary ops only, the int32 + float32 pair for
//! f32 binary ops only, and the fused transposed tiles for the one block side of the element
//! size and ISA (none for the DEFAULT ISA or elements other than 4 and 8 bytes). Loops are
//! written without `std::array::from_fn` and range adaptors: each call site of those is a
//! generic instantiation per kernel (with its closures), larger than the plain loop it stands
//! for. `cargo llvm-lines -p ratten-aten --lib` counts what each function costs.

/// Runs `$body` with `$I` bound to each ISA marker the CPU supports (the loop forms' tests).
#[cfg(test)]
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

pub mod block;
pub mod contiguous;
pub mod reduced;
pub mod short;
pub mod tiled;

use std::mem::MaybeUninit;

use half::{bf16, f16};
use ratten_core::ScalarType;

use crate::dispatch_stub::Isa;
use crate::native::cpu::elements::{is_dtype, Elem, Kind};

use block::{load_block, round_via, store_block};
use contiguous::{direct_run, fused_pair_run, NO_SCALAR};
use reduced::reduced_run;
use tiled::{tiled_2d, wants_tiling};

/// Elements per block of the block path (fits three buffers of complex doubles in L1).
pub const BLOCK: usize = 256;

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
pub(crate) struct Scratch<M, R, const N: usize> {
    ins: MaybeUninit<[[M; BLOCK]; N]>,
    out: MaybeUninit<[R; BLOCK]>,
    /// How many leading elements of every buffer are initialised.
    ready: usize,
}

impl<M: Elem, R: Elem, const N: usize> Scratch<M, R, N> {
    #[inline(always)]
    pub(crate) fn new() -> Self {
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
    pub(crate) fn get(&mut self, len: usize) -> ([&mut [M]; N], &mut [R]) {
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
    let direct =
        M::KIND != Kind::Bool && dts[0] == R::DTYPE && each_input::<N>(|k| dts[k] == M::DTYPE);
    if direct && s[0] == er {
        // SAFETY (all branches): the strides tested are those each path assumes.
        if each_input::<N>(|k| s[k] == em) {
            return unsafe { direct_run::<I, M, R, N, NO_SCALAR>(p, n, f, stream) };
        }
        if N >= 2 && each_input::<N>(|k| s[k] == em || s[k] == 0) {
            // The one input of stride 0, if only one has it (its index among the inputs).
            let mut scalar = None;
            let mut zeros = 0;
            for k in 0..N {
                if s[k + 1] == 0 {
                    zeros += 1;
                    scalar = Some(k);
                }
            }
            match scalar {
                _ if zeros != 1 => {}
                Some(0) => return unsafe { direct_run::<I, M, R, N, 0>(p, n, f, stream) },
                Some(1) => return unsafe { direct_run::<I, M, R, N, 1>(p, n, f, stream) },
                // Only a ternary op has a third input (Note [Kernel instantiations]).
                Some(2) if N >= 3 => {
                    return unsafe { direct_run::<I, M, R, N, 2>(p, n, f, stream) }
                }
                _ => {}
            }
        }
    }
    // Half or bfloat16 throughout (the common dtype, computed in f32), contiguous: compiled
    // for the f32 computation only (Note [Kernel instantiations]).
    if const { is_dtype::<M>(ScalarType::Float) && is_dtype::<R>(ScalarType::Float) } {
        if let Some(v) = via {
            let et = 2;
            if s[0] == et
                && dts[0] == v
                && each_input::<N>(|k| dts[k] == v && (s[k] == et || s[k] == 0))
            {
                // SAFETY: the dtypes and strides reduced_run assumes, tested above.
                match v {
                    ScalarType::Half => {
                        return unsafe {
                            reduced_run::<I, f16, M, R, N>(p, s, n, f, stream, scratch)
                        }
                    }
                    ScalarType::BFloat16 => {
                        return unsafe {
                            reduced_run::<I, bf16, M, R, N>(p, s, n, f, stream, scratch)
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    // int32 with float32 into float32 (contiguous): cast in registers inside the one loop
    // (vcvtdq2ps), the common mixed pair that the block path would stage through L1.
    if const { N == 2 && is_dtype::<M>(ScalarType::Float) }
        && via.is_none()
        && dts[0] == R::DTYPE
        && s[0] == er
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

/// Whether `pred(k)` holds for every input operand `k` (1 to `N`): a plain loop, which
/// compiles to less than a range adaptor's per call site.
#[inline(always)]
pub(crate) fn each_input<const N: usize>(pred: impl Fn(usize) -> bool) -> bool {
    let mut k = 1;
    while k <= N {
        if !pred(k) {
            return false;
        }
        k += 1;
    }
    true
}

/// `dst[i] = f(src[0][i], .., src[N-1][i])` for `i < len`: one loop over contiguous runs of
/// the computation type, which LLVM vectorises.
///
/// # Safety
/// Each `src[k]` holds `len` readable `M`s and `dst` `len` writable `R`s (`dst` may be one of
/// the inputs, element for element, as for in-place ops).
#[inline(always)]
pub(crate) unsafe fn compute_run<M: Elem, R: Elem, const N: usize>(
    src: &[*const M; N],
    dst: *mut R,
    len: usize,
    f: &impl OpN<M, R, N>,
) {
    // SAFETY: the same contract.
    unsafe { f.call_run(src, dst, len) }
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
pub(crate) unsafe fn loop_2d<I: Isa, M: Elem, R: Elem, const N: usize>(
    via: Option<ScalarType>,
    dts: &[ScalarType; MAX_OPERANDS],
    data: &[*mut u8],
    strides: &[isize],
    n0: usize,
    n1: usize,
    f: &impl OpN<M, R, N>,
    stream: bool,
) {
    // Values round through the reduced common dtype only when they are computed in its
    // opmath type; a kernel computing in another type (copy's destination type: a negative
    // half into uint64 wraps above half's range) keeps its values.
    let via = via.filter(|_| matches!(M::DTYPE, ScalarType::Float | ScalarType::ComplexFloat));
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
