//! The CPU loops of `crate::native::softmax` (ATen's `cpu/SoftMaxKernel.cpp` and
//! `host_softmax`): softmax, log_softmax and their backward over contiguous tensors viewed as
//! `[outer, dim, inner]`.
//!
//! Note [Softmax loops]: a line along `dim` takes three passes, as PyTorch's vectorised kernels
//! do: its maximum, the sum of `exp(x - max)`, then the output. Along the last dim (`inner == 1`)
//! a line is a contiguous row, reduced over `chunks_exact(LANES)` in `LANES` independent
//! accumulators (no index arithmetic or bounds checks in the body, so the compiler keeps the
//! accumulators in vector registers; the sum's order is fixed, so a row's result does not depend
//! on the thread that computes it), and softmax and log_softmax of float / double store each `exp`
//! in the output while summing it (one pass, `LANES` accumulators), then scale it (softmax) or
//! overwrite it with `x - max - log(sum)` (log_softmax): one `exp` per element. That pass's tail
//! runs through the same lanes, padded with `-inf`: a tail loop indexing the accumulators by its
//! length would keep them in memory for the whole row. A row's maximum is a plain `max`, one
//! instruction per vector: a NaN it skips still gives the row's NaNs through `exp(NaN)` in the
//! sum. Along another dim the `inner` lines of one outer index are computed side by side in blocks
//! of `BLOCK` lines, each pass a loop over `dim` whose body runs over the contiguous block
//! (vectorised across lines). float16 and bfloat16 compute in float (PyTorch's `acc_type`) and
//! round once, at the store: a work item's lines are widened side by side into a float buffer with
//! the vector conversions of `simd::Reduced`, the float loops run on it, and the result is rounded
//! back (PyTorch's reduced kernels also keep a float buffer; converting element by element with
//! `half`'s scalar functions left float16 softmax at 20x torch's time). The exponential and
//! logarithm are `vec_math`'s branch-free forms (the `exp` of the forward and of log_softmax's
//! backward is `exp_u20_f32`, a division-free polynomial within 2 ulp, as PyTorch's softmax
//! forward takes `Vectorized::exp_u20` (its backward takes the 1-ulp `exp`; `exp_f32`'s division
//! made that loop compute-bound); its multiply-adds are fused in the AVX2 and AVX-512 loops, as
//! PyTorch's vector form fuses them: the exponential pass of a row runs 20% faster); every loop
//! runs inside `run_isa` for the CPU capability.

use half::{bf16, f16};
use ratten_core::access::TensorAccess;
use ratten_core::{Error, PodElement, Result, ScalarType};

use crate::dispatch_stub::{kernel_capability, run_isa, with_isa, CpuCapability, Isa};
use crate::native::cpu::elements::not_implemented;
use crate::native::cpu::scatter_gather_kernels::SyncPtr;
use crate::native::cpu::simd::Reduced;
use crate::native::cpu::vec_math::{exp_f64, exp_u20_f32, exp_u20_fused_f32, log_f32, log_f64};
use crate::tensor_iterator::parallel::{parallel_for, GRAIN_SIZE};
use crate::Tensor;

/// Independent accumulators of a row reduction.
const LANES: usize = 16;
/// Lines computed side by side along a dim other than the last.
const BLOCK: usize = 256;

/// The computation type of the softmax family (PyTorch's `acc_type` on the CPU).
pub trait Acc:
    Copy
    + Send
    + Sync
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    const NEG_INF: Self;
    /// `exp` in loops compiled for `I` (the forward's `exp(x - max)`, log_softmax's backward
    /// `exp(y)`): f32's division-free polynomial (within 2 ulp, PyTorch's softmax `exp_u20`),
    /// its multiply-adds fused where `I` has FMA; f64's `exp`.
    fn exp_u20<I: Isa>(self) -> Self;
    fn ln(self) -> Self;
    /// The larger of the two, NaN if either is (`vec::maximum`).
    fn maximum(self, other: Self) -> Self;
}

impl Acc for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    const NEG_INF: f32 = f32::NEG_INFINITY;
    #[inline(always)]
    fn exp_u20<I: Isa>(self) -> f32 {
        if I::CAP as u8 >= CpuCapability::Avx2 as u8 {
            exp_u20_fused_f32(self)
        } else {
            exp_u20_f32(self)
        }
    }
    #[inline(always)]
    fn ln(self) -> f32 {
        log_f32(self)
    }
    #[inline(always)]
    fn maximum(self, other: f32) -> f32 {
        if self > other || self.is_nan() {
            self
        } else {
            other
        }
    }
}

impl Acc for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    const NEG_INF: f64 = f64::NEG_INFINITY;
    #[inline(always)]
    fn exp_u20<I: Isa>(self) -> f64 {
        exp_f64(self)
    }
    #[inline(always)]
    fn ln(self) -> f64 {
        log_f64(self)
    }
    #[inline(always)]
    fn maximum(self, other: f64) -> f64 {
        if self > other || self.is_nan() {
            self
        } else {
            other
        }
    }
}

/// An element type the softmax family stores, and the type it computes in.
pub trait Stored: PodElement + Copy + Send + Sync {
    type A: Acc;
    fn load(self) -> Self::A;
    fn store(a: Self::A) -> Self;
    /// The slice as computation-type elements, when they are the same type (float, double).
    fn as_acc(s: &[Self]) -> Option<&[Self::A]>;
    fn as_acc_mut(s: &mut [Self]) -> Option<&mut [Self::A]>;
    /// `src` widened into `dst` (as many elements as the shorter holds).
    ///
    /// # Safety
    /// The CPU supports `I` (as inside `run_isa::<I, _>`).
    unsafe fn widen<I: Isa>(src: &[Self], dst: &mut [Self::A]);
    /// `src` rounded into `dst` (as many elements as the shorter holds).
    ///
    /// # Safety
    /// As [`Stored::widen`].
    unsafe fn narrow<I: Isa>(src: &[Self::A], dst: &mut [Self]);
}

macro_rules! impl_stored_as_itself {
    ($t:ty) => {
        impl Stored for $t {
            type A = $t;
            #[inline(always)]
            fn load(self) -> $t {
                self
            }
            #[inline(always)]
            fn store(a: $t) -> $t {
                a
            }
            #[inline(always)]
            fn as_acc(s: &[$t]) -> Option<&[$t]> {
                Some(s)
            }
            #[inline(always)]
            fn as_acc_mut(s: &mut [$t]) -> Option<&mut [$t]> {
                Some(s)
            }
            #[inline(always)]
            unsafe fn widen<I: Isa>(src: &[$t], dst: &mut [$t]) {
                let n = src.len().min(dst.len());
                dst[..n].copy_from_slice(&src[..n]);
            }
            #[inline(always)]
            unsafe fn narrow<I: Isa>(src: &[$t], dst: &mut [$t]) {
                let n = src.len().min(dst.len());
                dst[..n].copy_from_slice(&src[..n]);
            }
        }
    };
}
impl_stored_as_itself!(f32);
impl_stored_as_itself!(f64);

macro_rules! impl_stored_reduced {
    ($t:ty) => {
        impl Stored for $t {
            type A = f32;
            #[inline(always)]
            fn load(self) -> f32 {
                self.to_f32()
            }
            #[inline(always)]
            fn store(a: f32) -> $t {
                <$t>::from_f32(a)
            }
            #[inline(always)]
            fn as_acc(_: &[$t]) -> Option<&[f32]> {
                None
            }
            #[inline(always)]
            fn as_acc_mut(_: &mut [$t]) -> Option<&mut [f32]> {
                None
            }
            #[inline(always)]
            unsafe fn widen<I: Isa>(src: &[$t], dst: &mut [f32]) {
                let n = src.len().min(dst.len());
                // SAFETY: both slices hold `n` elements; the caller vouches for `I`.
                unsafe { <$t as Reduced>::to_f32_run::<I>(src.as_ptr(), dst.as_mut_ptr(), n) }
            }
            #[inline(always)]
            unsafe fn narrow<I: Isa>(src: &[f32], dst: &mut [$t]) {
                let n = src.len().min(dst.len());
                // SAFETY: as in `widen`.
                unsafe { <$t as Reduced>::from_f32_run::<I>(src.as_ptr(), dst.as_mut_ptr(), n) }
            }
        }
    };
}
impl_stored_reduced!(f16);
impl_stored_reduced!(bf16);

/// Runs `$body` with `$T` bound to the element type of `$dt` (float, double, half, bfloat16),
/// or refuses with torch's text naming `$name`.
macro_rules! dispatch_softmax_types {
    ($dt:expr, $name:expr, $T:ident => $body:expr) => {
        match $dt {
            ScalarType::Float => {
                type $T = f32;
                $body
            }
            ScalarType::Double => {
                type $T = f64;
                $body
            }
            ScalarType::Half => {
                type $T = f16;
                $body
            }
            ScalarType::BFloat16 => {
                type $T = bf16;
                $body
            }
            dt => Err(not_implemented($name, dt)),
        }
    };
}

/// `[outer, dim, inner]` of a contiguous tensor along `dim`.
fn split_dims(sizes: &[i64], dim: usize) -> (usize, usize, usize) {
    let outer: i64 = sizes[..dim].iter().product();
    let inner: i64 = sizes[dim + 1..].iter().product();
    (outer as usize, sizes[dim] as usize, inner as usize)
}

/// Combines the `LANES` accumulators pairwise.
#[inline(always)]
fn combine_lanes<A: Acc>(mut acc: [A; LANES], step: impl Fn(A, A) -> A) -> A {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            acc[l] = step(acc[l], acc[l + width]);
        }
    }
    acc[0]
}

/// The reduction of `map(x[i])` over a row in `LANES` accumulators (element `i` goes to lane
/// `i % LANES`), combined pairwise. The row is taken in `chunks_exact(LANES)`, so the body
/// has no bounds checks and each lane is a vector element.
#[inline(always)]
fn lanes_reduce<S: Copy, A: Acc>(
    x: &[S],
    init: A,
    map: impl Fn(S) -> A,
    step: impl Fn(A, A) -> A,
) -> A {
    let mut acc = [init; LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = step(*a, map(v));
        }
    }
    for (a, &v) in acc.iter_mut().zip(tail) {
        *a = step(*a, map(v));
    }
    combine_lanes(acc, step)
}

/// `lanes_reduce` over two rows of one length, element by element.
#[inline(always)]
fn lanes_reduce2<S: Copy, A: Acc>(
    x: &[S],
    y: &[S],
    init: A,
    map: impl Fn(S, S) -> A,
    step: impl Fn(A, A) -> A,
) -> A {
    let mut acc = [init; LANES];
    let (cx, cy) = (x.chunks_exact(LANES), y.chunks_exact(LANES));
    let (tx, ty) = (cx.remainder(), cy.remainder());
    for (a, b) in cx.zip(cy) {
        for ((s, &u), &v) in acc.iter_mut().zip(a).zip(b) {
            *s = step(*s, map(u, v));
        }
    }
    for ((s, &u), &v) in acc.iter_mut().zip(tx).zip(ty) {
        *s = step(*s, map(u, v));
    }
    combine_lanes(acc, step)
}

/// `exp(x[l] - max)` into `y[l]` and onto `acc[l]`, for each lane `l`.
#[inline(always)]
fn exp_store_lanes<I: Isa, A: Acc>(
    x: &[A; LANES],
    y: &mut [A; LANES],
    acc: &mut [A; LANES],
    max: A,
) {
    for l in 0..LANES {
        let e = (x[l] - max).exp_u20::<I>();
        y[l] = e;
        acc[l] = acc[l] + e;
    }
}

/// Stores `exp(x - max)` in `y` and returns its sum, in one pass: `LANES` at a time, each
/// lane's sum in its own accumulator (the order of `lanes_reduce`).
///
/// The tail goes through the same lanes, padded with `-inf` (whose `exp` adds an exact 0 to
/// the lanes past the row's end): `acc` is then only ever read and written whole, which lets
/// the compiler keep it in a register. A tail loop indexing `acc` by its length kept it in
/// memory, and the loop's sum then went through a store and a load per vector.
#[inline(always)]
fn exp_store_sum<I: Isa, A: Acc>(x: &[A], y: &mut [A], max: A) -> A {
    let mut acc = [A::ZERO; LANES];
    let (xc, xt) = x.as_chunks::<LANES>();
    let (yc, yt) = y.as_chunks_mut::<LANES>();
    for (xs, ys) in xc.iter().zip(yc) {
        exp_store_lanes::<I, A>(xs, ys, &mut acc, max);
    }
    if !xt.is_empty() {
        let mut xp = [A::NEG_INF; LANES];
        xp[..xt.len()].copy_from_slice(xt);
        let mut yp = [A::ZERO; LANES];
        exp_store_lanes::<I, A>(&xp, &mut yp, &mut acc, max);
        let n = yt.len().min(xt.len());
        yt[..n].copy_from_slice(&yp[..n]);
    }
    combine_lanes(acc, |a, b| a + b)
}

/// softmax (or log_softmax, `LOG`) of one contiguous row: each `exp(x - max)` is stored in the
/// output and summed there (the exponential loop is a plain map, which vectorises); log_softmax
/// then overwrites the row with `x - (max + log(sum))`.
#[inline(always)]
fn row_forward<I: Isa, A: Acc, const LOG: bool>(x: &[A], y: &mut [A]) {
    // A plain `max` (one instruction per vector): a NaN it skips still makes the row NaN,
    // through `exp(NaN)` in the sum.
    let max = lanes_reduce(x, A::NEG_INF, |v| v, |a, b| if a > b { a } else { b });
    let sum = exp_store_sum::<I, A>(x, y, max);
    if LOG {
        let shift = max + sum.ln();
        for (o, &v) in y.iter_mut().zip(x) {
            *o = v - shift;
        }
    } else {
        let inv = A::ONE / sum;
        for o in y.iter_mut() {
            *o = *o * inv;
        }
    }
}

/// softmax (or log_softmax) of the `w` lines `j0..j0 + w` of one outer block
/// (`x[d * inner + j]`), side by side.
#[inline(always)]
fn block_forward<I: Isa, A: Acc, const LOG: bool>(
    x: &[A],
    y: &mut [A],
    dim: usize,
    inner: usize,
    j0: usize,
    w: usize,
) {
    let mut max = [A::NEG_INF; BLOCK];
    let mut sum = [A::ZERO; BLOCK];
    let (max, sum) = (&mut max[..w], &mut sum[..w]);
    for d in 0..dim {
        let row = &x[d * inner + j0..][..w];
        for (m, &v) in max.iter_mut().zip(row) {
            *m = m.maximum(v);
        }
    }
    for d in 0..dim {
        let row = &x[d * inner + j0..][..w];
        for ((s, &m), &v) in sum.iter_mut().zip(max.iter()).zip(row) {
            *s = *s + (v - m).exp_u20::<I>();
        }
    }
    if LOG {
        for (s, &m) in sum.iter_mut().zip(max.iter()) {
            *s = m + s.ln();
        }
    } else {
        for s in sum.iter_mut() {
            *s = A::ONE / *s;
        }
    }
    for d in 0..dim {
        let row = &x[d * inner + j0..][..w];
        let out = &mut y[d * inner + j0..][..w];
        for (((o, &v), &m), &s) in out.iter_mut().zip(row).zip(max.iter()).zip(sum.iter()) {
            *o = if LOG {
                v - s
            } else {
                (v - m).exp_u20::<I>() * s
            };
        }
    }
}

/// The backward of one contiguous row: `gi = y * (g - sum(g * y))` for softmax,
/// `gi = g - exp(y) * sum(g)` for log_softmax.
#[inline(always)]
fn row_backward<I: Isa, A: Acc, const LOG: bool>(g: &[A], y: &[A], gi: &mut [A]) {
    if LOG {
        let sum = lanes_reduce(g, A::ZERO, |v| v, |a, b| a + b);
        for ((o, &gv), &yv) in gi.iter_mut().zip(g).zip(y) {
            *o = gv - yv.exp_u20::<I>() * sum;
        }
    } else {
        let sum = lanes_reduce2(g, y, A::ZERO, |a, b| a * b, |a, b| a + b);
        for ((o, &gv), &yv) in gi.iter_mut().zip(g).zip(y) {
            *o = yv * (gv - sum);
        }
    }
}

/// The backward of the `w` lines `j0..j0 + w` of one outer block, side by side.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_backward<I: Isa, A: Acc, const LOG: bool>(
    g: &[A],
    y: &[A],
    gi: &mut [A],
    dim: usize,
    inner: usize,
    j0: usize,
    w: usize,
) {
    let mut sum = [A::ZERO; BLOCK];
    let sum = &mut sum[..w];
    for d in 0..dim {
        let (gr, yr) = (&g[d * inner + j0..][..w], &y[d * inner + j0..][..w]);
        for ((s, &gv), &yv) in sum.iter_mut().zip(gr).zip(yr) {
            *s = if LOG { *s + gv } else { *s + gv * yv };
        }
    }
    for d in 0..dim {
        let (gr, yr) = (&g[d * inner + j0..][..w], &y[d * inner + j0..][..w]);
        let out = &mut gi[d * inner + j0..][..w];
        for (((o, &gv), &yv), &s) in out.iter_mut().zip(gr).zip(yr).zip(sum.iter()) {
            *o = if LOG {
                gv - yv.exp_u20::<I>() * s
            } else {
                yv * (gv - s)
            };
        }
    }
}

/// The lines of one work item: a row (`inner == 1`, so `w == 1`) or `w` lines from `j0` of an
/// outer block.
#[derive(Clone, Copy)]
struct Lines {
    dim: usize,
    inner: usize,
    j0: usize,
    w: usize,
}

impl Lines {
    /// The same lines side by side (`dim` runs of `w`), as [`Lines::widen`] lays them: a row
    /// stays a row.
    fn packed(self) -> Lines {
        Lines {
            dim: self.dim,
            inner: self.w,
            j0: 0,
            w: self.w,
        }
    }

    /// How many elements the lines hold.
    fn len(self) -> usize {
        self.dim * self.w
    }

    /// The elements of `x` these lines take, widened side by side into `dst`: one run when
    /// they are all of `x` (a row, or every line of a block), else one per `dim` index.
    ///
    /// # Safety
    /// As [`Stored::widen`].
    #[inline(always)]
    unsafe fn widen<I: Isa, S: Stored>(self, x: &[S], dst: &mut [S::A]) {
        if self.w == self.inner {
            // SAFETY: forwarded contract.
            return unsafe { S::widen::<I>(x, dst) };
        }
        for d in 0..self.dim {
            let run = &x[d * self.inner + self.j0..][..self.w];
            // SAFETY: forwarded contract.
            unsafe { S::widen::<I>(run, &mut dst[d * self.w..][..self.w]) };
        }
    }

    /// The inverse of [`Lines::widen`]: `src`, packed, rounded into these lines of `y`.
    ///
    /// # Safety
    /// As [`Stored::widen`].
    #[inline(always)]
    unsafe fn narrow<I: Isa, S: Stored>(self, src: &[S::A], y: &mut [S]) {
        if self.w == self.inner {
            // SAFETY: forwarded contract.
            return unsafe { S::narrow::<I>(src, y) };
        }
        for d in 0..self.dim {
            let run = &mut y[d * self.inner + self.j0..][..self.w];
            // SAFETY: forwarded contract.
            unsafe { S::narrow::<I>(&src[d * self.w..][..self.w], run) };
        }
    }
}

#[inline(always)]
fn forward_lines<I: Isa, A: Acc, const LOG: bool>(x: &[A], y: &mut [A], l: Lines) {
    if l.inner == 1 {
        row_forward::<I, A, LOG>(x, y);
    } else {
        block_forward::<I, A, LOG>(x, y, l.dim, l.inner, l.j0, l.w);
    }
}

#[inline(always)]
fn backward_lines<I: Isa, A: Acc, const LOG: bool>(g: &[A], y: &[A], gi: &mut [A], l: Lines) {
    if l.inner == 1 {
        row_backward::<I, A, LOG>(g, y, gi);
    } else {
        block_backward::<I, A, LOG>(g, y, gi, l.dim, l.inner, l.j0, l.w);
    }
}

/// The work items of `[outer, dim, inner]`: rows when `inner == 1`, else blocks of up to
/// `BLOCK` lines of one outer index. Returns (items, blocks per outer index).
fn work_items(outer: usize, inner: usize) -> (usize, usize) {
    let per = inner.div_ceil(BLOCK);
    (outer * per, per)
}

fn check_contiguous(ts: &[&Tensor], sizes: &[i64]) -> Result<()> {
    for t in ts {
        if !t.is_contiguous() || t.sizes().as_slice() != sizes {
            return Err(Error::runtime(
                "softmax kernel: operands must be contiguous and of one shape",
            ));
        }
    }
    Ok(())
}

fn forward_typed<S: Stored, const LOG: bool>(
    output: &Tensor,
    input: &Tensor,
    dim: usize,
) -> Result<()> {
    let (outer, d, inner) = split_dims(input.sizes().as_slice(), dim);
    let mut g = TensorAccess::new(&[input.base()], &[output.base()])?;
    let y_all = g.output_slice_mut::<S>(0)?;
    let n = y_all.len();
    let y_ptr = SyncPtr(y_all.as_mut_ptr().cast());
    let x = g.input_slice::<S>(0)?;
    if x.len() != n || n != outer * d * inner {
        return Err(Error::runtime("softmax kernel: operand sizes differ"));
    }
    let (items, per) = work_items(outer, inner);
    let grain = (GRAIN_SIZE as usize / (d * inner.min(BLOCK)).max(1)).max(1) as i64;
    let cap = kernel_capability();
    parallel_for(0, items as i64, grain, |b, e| {
        with_isa!(cap, CpuCapability::Avx512, I => run_isa::<I, _>(
            #[inline(always)]
            || {
                // The float lines of reduced types, grown to the largest item.
                let mut scratch: Vec<S::A> = Vec::new();
                for item in b as usize..e as usize {
                    let (o, blk) = (item / per, item % per);
                    let base = o * d * inner;
                    let len = d * inner;
                    // SAFETY: the elements `base..base + len` of the output (outer index `o`)
                    // lie inside the guarded, contiguous output of `n` elements; items of
                    // distinct outer indices write disjoint ranges, and the blocks of one
                    // outer index write disjoint lines (only `j0..j0 + w` of each row).
                    let y = unsafe {
                        std::slice::from_raw_parts_mut(y_ptr.get().cast::<S>().add(base), len)
                    };
                    let xs = &x[base..base + len];
                    let j0 = blk * BLOCK;
                    let lines = Lines { dim: d, inner, j0, w: (inner - j0).min(BLOCK) };
                    if let (Some(xa), Some(ya)) = (S::as_acc(xs), S::as_acc_mut(y)) {
                        forward_lines::<I, S::A, LOG>(xa, ya, lines);
                        continue;
                    }
                    // Reduced types: the lines widened side by side, the float loops, one
                    // rounding at the store (PyTorch's float buffer in its reduced kernels).
                    let m = lines.len();
                    scratch.resize(2 * m, S::A::ZERO);
                    let (xa, ya) = scratch.split_at_mut(m);
                    // SAFETY: inside `run_isa::<I, _>`, which checked I against the CPU.
                    unsafe { lines.widen::<I, S>(xs, xa) };
                    forward_lines::<I, S::A, LOG>(xa, ya, lines.packed());
                    // SAFETY: as above.
                    unsafe { lines.narrow::<I, S>(ya, y) };
                }
            }
        ))
    })
}

fn backward_typed<S: Stored, const LOG: bool>(
    grad_input: &Tensor,
    grad: &Tensor,
    output: &Tensor,
    dim: usize,
) -> Result<()> {
    let (outer, d, inner) = split_dims(grad.sizes().as_slice(), dim);
    let mut g = TensorAccess::new(&[grad.base(), output.base()], &[grad_input.base()])?;
    let gi_all = g.output_slice_mut::<S>(0)?;
    let n = gi_all.len();
    let gi_ptr = SyncPtr(gi_all.as_mut_ptr().cast());
    let (gs, ys) = (g.input_slice::<S>(0)?, g.input_slice::<S>(1)?);
    if gs.len() != n || ys.len() != n || n != outer * d * inner {
        return Err(Error::runtime(
            "softmax backward kernel: operand sizes differ",
        ));
    }
    let (items, per) = work_items(outer, inner);
    let grain = (GRAIN_SIZE as usize / (d * inner.min(BLOCK)).max(1)).max(1) as i64;
    let cap = kernel_capability();
    parallel_for(0, items as i64, grain, |b, e| {
        with_isa!(cap, CpuCapability::Avx512, I => run_isa::<I, _>(
            #[inline(always)]
            || {
                // The float lines of reduced types, grown to the largest item.
                let mut scratch: Vec<S::A> = Vec::new();
                for item in b as usize..e as usize {
                    let (o, blk) = (item / per, item % per);
                    let base = o * d * inner;
                    let len = d * inner;
                    // SAFETY: as in `forward_typed`: disjoint lines of the guarded output.
                    let gi = unsafe {
                        std::slice::from_raw_parts_mut(gi_ptr.get().cast::<S>().add(base), len)
                    };
                    let (gr, yr) = (&gs[base..base + len], &ys[base..base + len]);
                    let j0 = blk * BLOCK;
                    let lines = Lines { dim: d, inner, j0, w: (inner - j0).min(BLOCK) };
                    if let (Some(ga), Some(ya), Some(gia)) =
                        (S::as_acc(gr), S::as_acc(yr), S::as_acc_mut(gi))
                    {
                        backward_lines::<I, S::A, LOG>(ga, ya, gia, lines);
                        continue;
                    }
                    // Reduced types: as in `forward_typed`.
                    let m = lines.len();
                    scratch.resize(3 * m, S::A::ZERO);
                    let (ga, rest) = scratch.split_at_mut(m);
                    let (ya, gia) = rest.split_at_mut(m);
                    // SAFETY: inside `run_isa::<I, _>`, which checked I against the CPU.
                    unsafe {
                        lines.widen::<I, S>(gr, ga);
                        lines.widen::<I, S>(yr, ya);
                    }
                    backward_lines::<I, S::A, LOG>(ga, ya, gia, lines.packed());
                    // SAFETY: as above.
                    unsafe { lines.narrow::<I, S>(gia, gi) };
                }
            }
        ))
    })
}

/// softmax (`log == false`) or log_softmax of the contiguous `input` along `dim` into the
/// contiguous `output` of the same shape and dtype.
pub fn softmax_kernel(output: &Tensor, input: &Tensor, dim: usize, log: bool) -> Result<()> {
    check_contiguous(&[output, input], input.sizes().as_slice())?;
    let last = dim + 1 == input.dim();
    let name = match (log, last) {
        (false, true) => "softmax_lastdim_kernel_impl",
        (false, false) => "softmax_kernel_impl",
        (true, true) => "log_softmax_lastdim_kernel_impl",
        (true, false) => "log_softmax_kernel_impl",
    };
    dispatch_softmax_types!(input.dtype(), name, T => if log {
        forward_typed::<T, true>(output, input, dim)
    } else {
        forward_typed::<T, false>(output, input, dim)
    })
}

/// The backward of softmax (`log == false`) or log_softmax: `grad_input` from the contiguous
/// `grad` and `output` along `dim`.
pub fn softmax_backward_kernel(
    grad_input: &Tensor,
    grad: &Tensor,
    output: &Tensor,
    dim: usize,
    log: bool,
) -> Result<()> {
    check_contiguous(&[grad_input, grad, output], grad.sizes().as_slice())?;
    let last = dim + 1 == grad.dim();
    let name = match (log, last) {
        (false, true) => "softmax_backward_lastdim_kernel_impl",
        (false, false) => "softmax_backward_kernel_impl",
        (true, true) => "log_softmax_backward_lastdim_kernel_impl",
        (true, false) => "log_softmax_backward_kernel_impl",
    };
    dispatch_softmax_types!(grad.dtype(), name, T => if log {
        backward_typed::<T, true>(grad_input, grad, output, dim)
    } else {
        backward_typed::<T, false>(grad_input, grad, output, dim)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch_stub::{IsaAvx2, IsaDefault};

    /// The same bits, or NaN both (a NaN's sign and payload are not part of the contract).
    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// `exp_store_sum`'s padded tail: for every tail length, each stored `exp` and the sum are
    /// bit-identical to the element-wise `exp` and to `lanes_reduce`'s lane order, with `-inf`,
    /// `inf` and NaN among the elements (a NaN sum must stay NaN).
    fn check_exp_store_sum<I: Isa>() {
        let specials = [
            f32::NEG_INFINITY,
            f32::INFINITY,
            f32::NAN,
            -0.0,
            88.0,
            -104.0,
        ];
        for len in 0..=3 * LANES + 5 {
            for special in std::iter::once(None).chain(specials.iter().copied().map(Some)) {
                let mut x: Vec<f32> = (0..len)
                    .map(|i| ((i * 37 % 23) as f32 - 11.0) / 3.0)
                    .collect();
                if let (Some(s), true) = (special, len > 0) {
                    x[len - 1] = s;
                }
                let max = lanes_reduce(
                    &x,
                    f32::NEG_INFINITY,
                    |v| v,
                    |a, b| if a > b { a } else { b },
                );
                let mut y = vec![7.0f32; len];
                let sum = exp_store_sum::<I, f32>(&x, &mut y, max);
                let want = lanes_reduce(&x, 0.0, |v| (v - max).exp_u20::<I>(), |a, b| a + b);
                assert!(same(sum, want), "sum, len {len}, special {special:?}");
                for (i, (&o, &v)) in y.iter().zip(&x).enumerate() {
                    let e = (v - max).exp_u20::<I>();
                    assert!(same(o, e), "y[{i}], len {len}, special {special:?}");
                }
            }
        }
    }

    #[test]
    fn exp_store_sum_pads_its_tail_without_changing_a_bit() {
        check_exp_store_sum::<IsaDefault>();
        // The fused form outside its target features is a slower `mul_add`, not another result.
        check_exp_store_sum::<IsaAvx2>();
    }
}
