//! The reduction driver (ATen's `native/cpu/Reduce.h` with the cascade of `SumKernel.cpp`):
//! runs a [`ReduceOp`] over a TensorIterator built in reduction mode
//! (`TensorIteratorConfig::is_reduction`), whose outputs have stride 0 along the reduced
//! dimensions.
//!
//! Note [Reduction driver]: the iterator's dimensions (coalesced, fastest first) split into
//! the *reduced* ones (output stride 0) and the *kept* ones. Each output element is the
//! reduction of the input elements over the reduced dimensions at its kept position. The
//! driver picks one of two forms:
//! - **inner** (the fastest reduced dimension is contiguous in the input, or nothing else is):
//!   each output element reduces its runs along the fastest reduced dimension. A contiguous
//!   run of an op whose elements may be combined in any order ([`ReduceOp::REORDERABLE`]) is
//!   reduced in [`LANES`] independent accumulators (one loop LLVM vectorises) over leaves of
//!   [`LEAF`] elements, and the leaves are combined by a binary-counter cascade: the rounding
//!   error of a float sum grows with the logarithm of its length, not linearly (PyTorch's
//!   cascade sum);
//! - **outer** (the fastest kept dimension is contiguous in the input): a block of adjacent
//!   output elements (as many as fit [`OUTER_BLOCK_BYTES`] of accumulators: a row of the
//!   block is KBs read in one stream) is reduced together, row by row along the reduced
//!   positions, each row one vectorised loop across the block ([`ReduceOp::reduce_row`]);
//!   rows are grouped in [`OUTER_GROUP`]s whose partial results enter the same cascade.
//!
//! An op may replace the lanes of a contiguous leaf ([`ReduceOp::reduce_contiguous`]: var's
//! two passes over the L1-resident leaf) and the per-element step of a row
//! ([`ReduceOp::reduce_row`]: Welford's `1 / n` once per row).
//!
//! Parallelism: over output elements (inner) or blocks (outer) when there are several; a
//! reduction to one element splits its reduced positions among the threads and combines the
//! partial results in order (PyTorch's two-pass reduction). Combining is always
//! `combine(earlier, later)`, so ops that track indices (argmax) keep the first extremum.
//! Every loop runs inside `run_isa` for the CPU capability, up to
//! [`widest_isa`]`::<In>()` (Note [Kernel instantiations]).

use std::mem::size_of;

use ratten_core::{Error, Result};
use smallvec::SmallVec;

use crate::dispatch_stub::{kernel_capability, run_isa, with_isa};
use crate::native::cpu::elements::Elem;
use crate::native::cpu::pointwise::widest_isa;
use crate::tensor_iterator::parallel::{get_num_threads, parallel_for, GRAIN_SIZE};
use crate::tensor_iterator::TensorIteratorBase;

/// Independent accumulators of a contiguous run (for f32, four AVX2 vectors: four dependency
/// chains of vector adds in flight).
pub const LANES: usize = 32;
/// Elements per leaf of the cascade.
pub const LEAF: usize = 2048;
/// The accumulators of one block of the outer form: 4096 f32 sums, so that a 4096-wide
/// float row is one block and the rows of a contiguous matrix are read as one sequential
/// stream (narrower blocks read each row in pieces, and the prefetchers restart at each
/// page); the accumulators still fit L1.
pub const OUTER_BLOCK_BYTES: usize = 16384;
/// Rows per partial result of the outer form's cascade.
pub const OUTER_GROUP: usize = 64;
/// The most outputs a reduction writes (values and indices; min and max; var and mean).
pub const MAX_OUTPUTS: usize = 2;
/// Levels of the cascade: enough for 2^48 leaves.
const CASCADE_DEPTH: usize = 48;

/// One reduction: PyTorch's `ops` object of `binary_kernel_reduce` (`reduce`, `combine`,
/// `project`, and the identity it is started with).
pub trait ReduceOp: Sync {
    /// The element type read from the input.
    type In: Elem;
    /// The accumulator.
    type Acc: Copy + Send + Sync;
    /// Whether elements may be reduced in any order (lanes, cascade leaves): true for every op
    /// but those that track positions, whose `reduce` must see positions in order.
    const REORDERABLE: bool;
    /// Whether the loops are worth compiling per instruction set (up to
    /// [`widest_isa`]`::<In>()`); an op whose loops do not vectorise (index tracking, bytes
    /// tested for truth) is compiled once, for the baseline (Note [Kernel instantiations]).
    const VECTORISED: bool = true;
    /// The accumulator of no elements.
    fn identity(&self) -> Self::Acc;
    /// Adds element `x`, found at position `idx` of the reduced positions.
    fn reduce(&self, acc: Self::Acc, x: Self::In, idx: i64) -> Self::Acc;
    /// Adds row `x[0..accs.len()]` into `accs` element for element, where every accumulator
    /// has reduced the same number of elements so far (the columns of an outer block); `idx`
    /// is the row's reduced position. An op whose step depends on that count (Welford's
    /// `1 / n`) computes it once per row here.
    ///
    /// # Safety
    /// `x` points at `accs.len()` readable, contiguous `In`s.
    #[inline(always)]
    unsafe fn reduce_row(&self, accs: &mut [Self::Acc], x: *const Self::In, idx: i64) {
        for (j, acc) in accs.iter_mut().enumerate() {
            // SAFETY: per the contract.
            let v = unsafe { Self::In::read(x.add(j).cast()) };
            *acc = self.reduce(*acc, v, idx);
        }
    }
    /// The accumulator of `n` contiguous elements from `x` at positions `idx..`, when the op
    /// has a faster way than [`LANES`] accumulators (Welford's two passes over the
    /// L1-resident leaf); `None` takes the lanes. Only asked of [`Self::REORDERABLE`] ops.
    ///
    /// # Safety
    /// `x` points at `n` readable, contiguous `In`s.
    #[inline(always)]
    unsafe fn reduce_contiguous(
        &self,
        x: *const Self::In,
        n: usize,
        idx: i64,
    ) -> Option<Self::Acc> {
        let _ = (x, n, idx);
        None
    }
    /// Combines the accumulators of two ranges, `a` before `b`.
    fn combine(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// Writes the result of `acc` to each output's element at `outs[k]`.
    ///
    /// # Safety
    /// `outs[k]` points at a writable element of output `k`, of the dtype the op was built
    /// for (the kernel checked the iterator's output dtypes).
    unsafe fn project(&self, acc: Self::Acc, outs: &[*mut u8; MAX_OUTPUTS]);
}

/// A dimension of the iteration: its size and each operand's byte stride (outputs first,
/// then the input at `MAX_OUTPUTS`).
#[derive(Clone, Copy, Debug)]
struct Dim {
    size: i64,
    out: [i64; MAX_OUTPUTS],
    input: i64,
}

type Dims = SmallVec<[Dim; 6]>;

/// The iteration split into reduced and kept dimensions (fastest first).
struct Plan {
    reduced: Dims,
    kept: Dims,
}

impl Plan {
    fn of(iter: &TensorIteratorBase) -> Result<Plan> {
        let nout = iter.noutputs();
        if nout == 0 || nout > MAX_OUTPUTS || iter.ninputs() != 1 {
            return Err(Error::runtime(format!(
                "reduction kernels take 1 input and 1 to {MAX_OUTPUTS} outputs, got {} and {nout}",
                iter.ninputs()
            )));
        }
        let shape = iter.shape();
        let mut plan = Plan {
            reduced: Dims::new(),
            kept: Dims::new(),
        };
        for (d, &size) in shape.iter().enumerate() {
            if size == 1 {
                continue;
            }
            let mut out = [0i64; MAX_OUTPUTS];
            for (k, o) in out.iter_mut().enumerate().take(nout) {
                *o = iter.strides(k)[d];
            }
            let dim = Dim {
                size,
                out,
                input: iter.strides(nout)[d],
            };
            if out[0] == 0 {
                plan.reduced.push(dim);
            } else {
                plan.kept.push(dim);
            }
        }
        Ok(plan)
    }

    fn reduced_numel(&self) -> i64 {
        self.reduced.iter().map(|d| d.size).product()
    }

    fn kept_numel(&self) -> i64 {
        self.kept.iter().map(|d| d.size).product()
    }
}

/// The data pointers, shared with the workers of a parallel region.
#[derive(Clone, Copy)]
struct Ptrs {
    out: [*mut u8; MAX_OUTPUTS],
    input: *const u8,
}
// SAFETY: the pointers are read by the workers of one parallel region while the access guard
// that produced them is held by the calling thread; chunks write disjoint output elements.
unsafe impl Send for Ptrs {}
// SAFETY: as above.
unsafe impl Sync for Ptrs {}

/// An input pointer shared with the workers of a parallel region (as [`Ptrs`]).
#[derive(Clone, Copy)]
struct SendPtr(*const u8);
// SAFETY: as `Ptrs`: read while the caller's access guard is held.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

impl SendPtr {
    /// Through a method, so that a closure captures the wrapper, not its field.
    fn get(self) -> *const u8 {
        self.0
    }
}

impl Ptrs {
    #[inline(always)]
    fn offset(self, d: &[i64; MAX_OUTPUTS], input: i64) -> Ptrs {
        let mut out = self.out;
        for (o, dk) in out.iter_mut().zip(d) {
            *o = o.wrapping_offset(*dk as isize);
        }
        Ptrs {
            out,
            input: self.input.wrapping_offset(input as isize),
        }
    }
}

/// Runs `op` over the reduction iterator `iter` (see Note [Reduction driver]). The iterator's
/// outputs must have the dtypes `op` writes; an empty iteration writes nothing (the caller
/// fills the outputs of an empty reduction).
pub fn reduce_kernel<O: ReduceOp>(iter: &TensorIteratorBase, op: O) -> Result<()> {
    if iter.numel() == 0 || iter.is_meta() {
        return Ok(());
    }
    if iter.dtype(iter.noutputs()) != O::In::DTYPE {
        return Err(Error::runtime(format!(
            "reduction kernel for {} given an input of dtype {}",
            O::In::DTYPE,
            iter.dtype(iter.noutputs())
        )));
    }
    let plan = Plan::of(iter)?;
    let cap = kernel_capability();
    iter.with_data_ptrs(|ptrs| {
        let nout = iter.noutputs();
        let mut out = [std::ptr::null_mut(); MAX_OUTPUTS];
        out[..nout].copy_from_slice(&ptrs[..nout]);
        let base = Ptrs {
            out,
            input: ptrs[nout],
        };
        with_isa!(cap, reduce_isa::<O>(), I => drive::<I, O>(&op, &plan, base))
    })?
}

/// The widest instruction set `O`'s loops are compiled for.
const fn reduce_isa<O: ReduceOp>() -> crate::dispatch_stub::CpuCapability {
    if O::VECTORISED {
        widest_isa::<O::In>()
    } else {
        crate::dispatch_stub::CpuCapability::Default
    }
}

/// Chooses the form and the split (Note [Reduction driver]).
#[inline(always)]
fn drive<I: crate::dispatch_stub::Isa, O: ReduceOp>(op: &O, plan: &Plan, base: Ptrs) -> Result<()> {
    let es = size_of::<O::In>() as i64;
    let reduced = plan.reduced_numel();
    let kept = plan.kept_numel();
    let threads = get_num_threads() as i64;
    let outer = plan.kept.first().is_some_and(|d| d.input == es)
        && plan.reduced.first().is_none_or(|d| d.input != es);
    if kept == 1 {
        // One output element: split the reduced positions among the threads.
        let chunks = if threads > 1 && reduced >= 2 * GRAIN_SIZE {
            threads.min(reduced / GRAIN_SIZE)
        } else {
            1
        };
        let per = (reduced + chunks - 1) / chunks;
        let slots: Vec<parking_lot::Mutex<Option<O::Acc>>> =
            (0..chunks).map(|_| parking_lot::Mutex::new(None)).collect();
        let base_in = SendPtr(base.input);
        parallel_for(0, chunks, 1, |b, e| {
            let input = base_in.get();
            for c in b..e {
                let (lo, hi) = (c * per, ((c + 1) * per).min(reduced));
                let acc = run_isa::<I, _>(
                    #[inline(always)]
                    || {
                        // SAFETY: `base` holds the operands' pointers under the guard of
                        // `with_data_ptrs`; positions `lo..hi` are within the iteration.
                        unsafe { reduce_positions(op, &plan.reduced, input, lo, hi) }
                    },
                );
                *slots[c as usize].lock() = Some(acc);
            }
        })?;
        let mut acc = op.identity();
        for slot in slots {
            let part = slot.into_inner();
            acc = op.combine(
                acc,
                part.ok_or_else(|| Error::runtime("reduction chunk not run"))?,
            );
        }
        // SAFETY: the output element of a one-element reduction is at the base pointers.
        unsafe { op.project(acc, &base.out) };
        return Ok(());
    }
    if outer {
        let width = plan.kept[0].size;
        let rows = kept / width;
        let block = outer_block::<O>(width, rows, threads);
        let blocks_per_row = (width + block - 1) / block;
        let items = rows * blocks_per_row;
        let work_per_item = reduced * block.min(width);
        let grain = (GRAIN_SIZE / work_per_item.max(1)).max(1);
        return parallel_for(0, items, grain, |b, e| {
            run_isa::<I, _>(
                #[inline(always)]
                || {
                    for item in b..e {
                        let (row, blk) = (item / blocks_per_row, item % blocks_per_row);
                        let c0 = blk * block;
                        let w = (width - c0).min(block) as usize;
                        let at = kept_offset(&plan.kept[1..], row);
                        let first = &plan.kept[0];
                        let p = base
                            .offset(&at.0, at.1)
                            .offset(&first.out.map(|s| s * c0), first.input * c0);
                        // SAFETY: as above; `w` adjacent output elements from `c0` exist.
                        unsafe { reduce_outer_block(op, &plan.reduced, p, w, first.out) };
                    }
                },
            )
        });
    }
    // Inner form: one output element per item.
    let grain = (GRAIN_SIZE / reduced.max(1)).max(1);
    parallel_for(0, kept, grain, |b, e| {
        run_isa::<I, _>(
            #[inline(always)]
            || {
                for item in b..e {
                    let at = kept_offset(&plan.kept, item);
                    let p = base.offset(&at.0, at.1);
                    // SAFETY: as above.
                    let acc = unsafe { reduce_positions(op, &plan.reduced, p.input, 0, reduced) };
                    // SAFETY: `p.out` are this item's output elements.
                    unsafe { op.project(acc, &p.out) };
                }
            },
        )
    })
}

/// Output elements per block of the outer form: [`OUTER_BLOCK_BYTES`] of accumulators (at
/// least 16), split evenly when the row holds more than one block, and into at least one
/// block per thread when there are too few rows of blocks to go round.
fn outer_block<O: ReduceOp>(width: i64, rows: i64, threads: i64) -> i64 {
    let most = (OUTER_BLOCK_BYTES / size_of::<O::Acc>().max(1)).max(16) as i64;
    let mut blocks = (width + most - 1) / most;
    if rows * blocks < threads {
        blocks = ((threads + rows - 1) / rows).min(width).max(1);
    }
    (width + blocks - 1) / blocks
}

/// The byte offsets (outputs, input) of position `index` of `dims` (row-major with the
/// fastest dimension first).
#[inline(always)]
fn kept_offset(dims: &[Dim], mut index: i64) -> ([i64; MAX_OUTPUTS], i64) {
    let mut out = [0i64; MAX_OUTPUTS];
    let mut input = 0i64;
    for d in dims {
        let i = index % d.size;
        index /= d.size;
        for (o, s) in out.iter_mut().zip(d.out) {
            *o += i * s;
        }
        input += i * d.input;
    }
    (out, input)
}

/// Reduces reduced positions `lo..hi` (row-major over `dims`, fastest first) of the input at
/// `base`, run by run along the fastest dimension.
///
/// # Safety
/// `base` and `dims` describe readable input elements of type `O::In`.
#[inline(always)]
unsafe fn reduce_positions<O: ReduceOp>(
    op: &O,
    dims: &[Dim],
    base: *const u8,
    lo: i64,
    hi: i64,
) -> O::Acc {
    let mut acc = op.identity();
    if dims.is_empty() {
        // A kept-only iteration (every reduced dimension had size 1): the element itself.
        // SAFETY: per the contract.
        let x = unsafe { O::In::read(base) };
        return op.reduce(acc, x, 0);
    }
    let (size0, stride0) = (dims[0].size, dims[0].input);
    let rest = &dims[1..];
    let mut pos = lo;
    while pos < hi {
        let i0 = pos % size0;
        let n = (size0 - i0).min(hi - pos);
        let (_, off) = kept_offset(rest, pos / size0);
        let p = base.wrapping_offset((off + i0 * stride0) as isize);
        // SAFETY: `n` elements from `p` at `stride0` are within the run.
        let run = unsafe { reduce_run(op, p, stride0, n as usize, pos) };
        acc = op.combine(acc, run);
        pos += n;
    }
    acc
}

/// Reduces one run of `n` elements at byte stride `stride` from `p`, whose first element is at
/// reduced position `idx`.
///
/// # Safety
/// The `n` elements are readable `O::In`s.
#[inline(always)]
unsafe fn reduce_run<O: ReduceOp>(op: &O, p: *const u8, stride: i64, n: usize, idx: i64) -> O::Acc {
    let es = size_of::<O::In>();
    if O::REORDERABLE && stride == es as i64 && n >= LANES {
        let mut cascade = Cascade::<O>::new(op);
        let mut done = 0usize;
        while done < n {
            let len = LEAF.min(n - done);
            let at = p.wrapping_add(done * es);
            let i = idx + done as i64;
            // SAFETY: `len` contiguous elements from `done`.
            let leaf = match unsafe { op.reduce_contiguous(at.cast(), len, i) } {
                Some(acc) => acc,
                // SAFETY: as above.
                None => unsafe { lanes_run(op, at, len, i) },
            };
            cascade.push(leaf);
            done += len;
        }
        return cascade.finish();
    }
    let mut acc = op.identity();
    for i in 0..n {
        // SAFETY: per the contract.
        let x = unsafe { O::In::read(p.wrapping_offset(i as isize * stride as isize)) };
        acc = op.reduce(acc, x, idx + i as i64);
    }
    acc
}

/// A contiguous run in [`LANES`] independent accumulators, combined pairwise at the end.
///
/// # Safety
/// `n` contiguous readable `O::In`s from `p`.
#[inline(always)]
unsafe fn lanes_run<O: ReduceOp>(op: &O, p: *const u8, n: usize, idx: i64) -> O::Acc {
    // One array of LANES accumulators, touched only by loops of constant trip count: LLVM
    // keeps it in vector registers (four for f32 under AVX2) and vectorises the body. Any
    // access at a run-time index (a tail into the lanes, a fold of run-time width) would put
    // the array in memory and cut the loop to two floats per add.
    let src = p.cast::<O::In>();
    let id = op.identity();
    let mut lanes = [id; LANES];
    let mut i = 0;
    while i + LANES <= n {
        for (l, acc) in lanes.iter_mut().enumerate() {
            // SAFETY: i + l < i + LANES <= n.
            let x = unsafe { O::In::read(src.add(i + l).cast()) };
            *acc = op.reduce(*acc, x, idx + (i + l) as i64);
        }
        i += LANES;
    }
    let mut tail = id;
    while i < n {
        // SAFETY: i < n.
        let x = unsafe { O::In::read(src.add(i).cast()) };
        tail = op.reduce(tail, x, idx + i as i64);
        i += 1;
    }
    let mut acc = lanes[0];
    for lane in &lanes[1..] {
        acc = op.combine(acc, *lane);
    }
    op.combine(acc, tail)
}

/// A binary-counter cascade of partial results: the partial of `2^k` leaves is combined only
/// with another of `2^k`, so every leaf passes through a logarithmic number of combines.
struct Cascade<'o, O: ReduceOp> {
    op: &'o O,
    stack: [Option<O::Acc>; CASCADE_DEPTH],
    leaves: u64,
}

impl<'o, O: ReduceOp> Cascade<'o, O> {
    #[inline(always)]
    fn new(op: &'o O) -> Self {
        Cascade {
            op,
            stack: [None; CASCADE_DEPTH],
            leaves: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, leaf: O::Acc) {
        let mut acc = leaf;
        let mut level = 0;
        let mut count = self.leaves;
        while count & 1 == 1 && level < CASCADE_DEPTH - 1 {
            if let Some(prev) = self.stack[level].take() {
                acc = self.op.combine(prev, acc);
            }
            count >>= 1;
            level += 1;
        }
        self.stack[level] = Some(acc);
        self.leaves += 1;
    }

    /// Combines what is left, earliest (highest level) first.
    #[inline(always)]
    fn finish(self) -> O::Acc {
        let mut acc = self.op.identity();
        for p in self.stack.iter().rev().flatten() {
            acc = self.op.combine(acc, *p);
        }
        acc
    }
}

/// The outer form: `w` adjacent output elements (input stride `size_of::<In>()`, output
/// strides `out_stride`) reduced over every reduced position, row by row.
///
/// # Safety
/// `p` and `reduced` describe readable input elements and `w` writable output elements.
#[inline(always)]
unsafe fn reduce_outer_block<O: ReduceOp>(
    op: &O,
    reduced: &[Dim],
    p: Ptrs,
    w: usize,
    out_stride: [i64; MAX_OUTPUTS],
) {
    let total: i64 = reduced.iter().map(|d| d.size).product();
    let identity = op.identity();
    let mut group = vec![identity; w];
    // One cascade per column: level k holds the partial of 2^k groups, for all `w` columns.
    let mut levels: Vec<Option<Vec<O::Acc>>> = Vec::new();
    let mut groups_done = 0u64;
    let mut in_group = 0usize;
    let flush =
        |group: &mut Vec<O::Acc>, levels: &mut Vec<Option<Vec<O::Acc>>>, groups_done: &mut u64| {
            let mut acc = std::mem::replace(group, vec![identity; w]);
            let mut level = 0;
            let mut count = *groups_done;
            while count & 1 == 1 {
                if let Some(Some(prev)) = levels.get_mut(level).map(Option::take) {
                    for (a, p) in acc.iter_mut().zip(&prev) {
                        *a = op.combine(*p, *a);
                    }
                }
                count >>= 1;
                level += 1;
            }
            if levels.len() <= level {
                levels.resize(level + 1, None);
            }
            levels[level] = Some(acc);
            *groups_done += 1;
        };
    let src = p.input;
    for pos in 0..total {
        let (_, off) = kept_offset(reduced, pos);
        let row = src.wrapping_offset(off as isize).cast::<O::In>();
        // SAFETY: the `w` elements of the row are the block's inputs.
        unsafe { op.reduce_row(&mut group, row, pos) };
        in_group += 1;
        if in_group == OUTER_GROUP {
            flush(&mut group, &mut levels, &mut groups_done);
            in_group = 0;
        }
    }
    if in_group > 0 {
        flush(&mut group, &mut levels, &mut groups_done);
    }
    let mut result = vec![identity; w];
    for p in levels.iter().rev().flatten() {
        for (r, x) in result.iter_mut().zip(p) {
            *r = op.combine(*r, *x);
        }
    }
    for (j, acc) in result.iter().enumerate() {
        let mut outs = p.out;
        for k in 0..MAX_OUTPUTS {
            outs[k] = outs[k].wrapping_offset(j as isize * out_stride[k] as isize);
        }
        // SAFETY: output element j of the block.
        unsafe { op.project(*acc, &outs) };
    }
}
