//! The scatter / gather kernels (ATen's `cpu/ScatterGatherKernel.cpp`): one loop over the
//! elements of `index`, which pairs each with the element of the indexed tensor it names
//! along `dim` and the element at the same position in the other tensor (gather's result,
//! scatter's `src`), and an element operation per op (copy, fill, add, multiply, the
//! `scatter_reduce` reductions).
//!
//! Every index is checked against the indexed dimension before its element is touched; the
//! loop runs over the positions of every dim but `dim` in parallel (distinct positions reach
//! distinct elements of the indexed tensor), and along `dim` in order, so duplicate indices
//! of a scatter apply in index order, as PyTorch's CPU kernel does.

use ratten_core::dtype::{c128, c64};
use ratten_core::{Error, Result, Scalar, ScalarType, TensorAccess};

use crate::native::cpu::binary_kernels::Arith;
use crate::native::cpu::elements::{cast, not_implemented, Elem};
use crate::native::cpu::reduce_kernels::{
    dispatch_real_with_opmath, dispatch_with_opmath, Extremum,
};
use crate::tensor_iterator::parallel::{parallel_for, GRAIN_SIZE};
use crate::Tensor;

/// A base pointer that the chunks of a parallel loop share. Sound because every use is
/// inside the access guard that produced it (which outlives the parallel region), and
/// distinct chunks write distinct elements.
#[derive(Clone, Copy)]
pub struct SyncPtr(pub *mut u8);
// SAFETY: see the type's doc.
unsafe impl Send for SyncPtr {}
// SAFETY: see the type's doc.
unsafe impl Sync for SyncPtr {}

impl SyncPtr {
    /// The pointer (a method, so that closures capture the whole `SyncPtr`).
    #[inline(always)]
    pub fn get(self) -> *mut u8 {
        self.0
    }
}

/// Runs `$body` with `$E` a plain-data type of the element size `$size` (1, 2, 4, 8 or 16
/// bytes): the copy kernels move elements of any dtype as these.
macro_rules! with_elem_bytes {
    ($size:expr, $E:ident => $body:expr) => {{
        match $size {
            1 => {
                type $E = u8;
                $body
            }
            2 => {
                type $E = u16;
                $body
            }
            4 => {
                type $E = u32;
                $body
            }
            8 => {
                type $E = u64;
                $body
            }
            16 => {
                type $E = [u64; 2];
                $body
            }
            s => Err(ratten_core::Error::runtime(format!(
                "no element copy for an element size of {s} bytes"
            ))),
        }
    }};
}
pub(crate) use with_elem_bytes;

/// When the loop checks the indices.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexCheck {
    /// All of them before any element is touched (a failed call writes nothing).
    First,
    /// Each as the loop reaches it (gather: only the freshly written result is touched).
    InLoop,
}

/// A tensor's sizes and element strides with PyTorch's `ensure_nonempty_*`: a 0-dim tensor
/// is seen as one element of one dim.
fn geometry(sizes: &[i64], strides: &[i64]) -> (Vec<i64>, Vec<i64>) {
    if sizes.is_empty() {
        (vec![1], vec![0])
    } else {
        (sizes.to_vec(), strides.to_vec())
    }
}

/// The loop: `f(indexed_element, other_element)` for every element of `index` (int64),
/// where `indexed_element` is the element of `indexed` at the index's position with `dim`
/// replaced by the index value, and `other_element` the element of `other` at the index's
/// position (a null pointer without `other`). `indexed` is written when `indexed_written`
/// (scatter), else `other` is (gather). An index outside `[0, indexed.size(dim))` is
/// reported as `err(value)`, before anything is touched when `check` is `First`.
///
/// Shapes are checked again under the guard (index no larger than `indexed` apart from
/// `dim`, no larger than `other` anywhere), so no element outside the tensors is reached.
///
/// # Safety
/// `f` may touch only the two elements it is given, as the dtypes of their tensors.
#[allow(clippy::too_many_arguments)]
pub unsafe fn scatter_gather_loop<F>(
    indexed: &Tensor,
    indexed_written: bool,
    other: Option<&Tensor>,
    index: &Tensor,
    dim: usize,
    check: IndexCheck,
    serial: bool,
    err: &dyn Fn(i64) -> Error,
    f: F,
) -> Result<()>
where
    F: Fn(*mut u8, *mut u8) + Sync,
{
    if index.numel() == 0 {
        return Ok(());
    }
    let g = match (indexed_written, other) {
        (true, Some(o)) => TensorAccess::new(&[index, o], &[indexed])?,
        (true, None) => TensorAccess::new(&[index], &[indexed])?,
        (false, Some(o)) => TensorAccess::new(&[index, indexed], &[o])?,
        (false, None) => return Err(Error::runtime("gather needs a result")),
    };
    let ia = g.input(0)?;
    let (sa, oa) = match (indexed_written, other) {
        (true, Some(_)) => (g.output(0)?, Some(g.input(1)?)),
        (true, None) => (g.output(0)?, None),
        (false, _) => (g.input(1)?, Some(g.output(0)?)),
    };
    if ia.dtype() != ScalarType::Long {
        return Err(Error::runtime("scatter/gather: the index must be int64"));
    }
    let (isz, istr) = geometry(ia.sizes(), ia.strides());
    let (ssz, sstr) = geometry(sa.sizes(), sa.strides());
    let (osz, ostr) = match oa {
        Some(o) => geometry(o.sizes(), o.strides()),
        None => (isz.clone(), vec![0; isz.len()]),
    };
    let nd = isz.len();
    if ssz.len() != nd || osz.len() != nd || dim >= nd {
        return Err(Error::runtime(
            "scatter/gather: index, self and src must have the same number of dimensions",
        ));
    }
    for d in 0..nd {
        if (d != dim && isz[d] > ssz[d]) || isz[d] > osz[d] {
            return Err(Error::runtime(
                "scatter/gather: the index is larger than the tensors it indexes",
            ));
        }
    }
    if isz.contains(&0) {
        return Ok(());
    }
    let (Some(ip), Some(sp)) = (ia.raw_data_ptr(), sa.raw_data_ptr()) else {
        return Ok(()); // meta tensors
    };
    let op = match oa {
        Some(o) => match o.raw_data_ptr() {
            Some(p) => p.as_ptr(),
            None => return Ok(()),
        },
        None => std::ptr::null_mut(),
    };
    let (ip, sp, op) = (SyncPtr(ip.as_ptr()), SyncPtr(sp.as_ptr()), SyncPtr(op));
    let ies = 8isize;
    let ses = sa.dtype().element_size() as isize;
    let oes = oa.map_or(0, |o| o.dtype().element_size() as isize);
    let dim_size = ssz[dim];
    let outer: Vec<usize> = (0..nd).filter(|&d| d != dim).collect();
    let n_outer: i64 = outer.iter().map(|&d| isz[d]).product();
    let inner = isz[dim] as usize;
    let (i_in, s_in, o_in) = (
        istr[dim] as isize * ies,
        sstr[dim] as isize * ses,
        ostr[dim] as isize * oes,
    );

    let dense = i_in == ies && s_in == ses && (o_in == oes || oa.is_none());
    // Rows [b, e) of the outer positions; `touch` false only checks. Returns the first bad
    // index.
    let run = |b: i64, e: i64, touch: bool| -> Option<i64> {
        // Locals: the element writes go through raw pointers, which the compiler cannot
        // tell apart from the captured values, so it would reload those per element.
        let (dense, inner, dim_size, f) = (dense, inner, dim_size as u64, &f);
        let (ses, oes, i_in, s_in, o_in) = (ses, oes, i_in, s_in, o_in);
        let mut coord = vec![0i64; outer.len()];
        let mut rem = b;
        for (c, &d) in coord.iter_mut().zip(&outer).rev() {
            *c = rem % isz[d];
            rem /= isz[d];
        }
        let (mut io, mut so, mut oo) = (0isize, 0isize, 0isize);
        for (c, &d) in coord.iter().zip(&outer) {
            io += *c as isize * istr[d] as isize * ies;
            so += *c as isize * sstr[d] as isize * ses;
            oo += *c as isize * ostr[d] as isize * oes;
        }
        for _ in b..e {
            let irow = ip.get().wrapping_offset(io);
            let srow = sp.get().wrapping_offset(so);
            let orow = op.get().wrapping_offset(oo);
            if dense && touch {
                // The common case (every tensor dense along dim), with the strides known to
                // be the element sizes.
                for j in 0..inner {
                    // SAFETY: as below.
                    let k = unsafe { irow.cast::<i64>().add(j).read() };
                    if k as u64 >= dim_size {
                        return Some(k);
                    }
                    f(
                        srow.wrapping_offset(k as isize * ses),
                        orow.wrapping_offset(j as isize * oes),
                    );
                }
            } else {
                for j in 0..inner {
                    // SAFETY: j < index.size(dim) at an in-bounds outer position of `index`
                    // (checked under the guard), so this is an element of `index`, int64.
                    let k = unsafe { irow.wrapping_offset(j as isize * i_in).cast::<i64>().read() };
                    if k as u64 >= dim_size {
                        return Some(k);
                    }
                    if touch {
                        // The outer position is inside `indexed` (index no larger apart from
                        // dim) and `k` inside its dim; j and the outer position inside `other`.
                        f(
                            srow.wrapping_offset(k as isize * s_in),
                            orow.wrapping_offset(j as isize * o_in),
                        );
                    }
                }
            }
            // Next outer position (row-major).
            for (c, &d) in coord.iter_mut().zip(&outer).rev() {
                *c += 1;
                io += istr[d] as isize * ies;
                so += sstr[d] as isize * ses;
                oo += ostr[d] as isize * oes;
                if *c < isz[d] {
                    break;
                }
                io -= isz[d] as isize * istr[d] as isize * ies;
                so -= isz[d] as isize * sstr[d] as isize * ses;
                oo -= isz[d] as isize * ostr[d] as isize * oes;
                *c = 0;
            }
        }
        None
    };
    let bad = parking_lot::Mutex::new(None::<i64>);
    let drive = |touch: bool| -> Result<()> {
        if serial || n_outer == 1 {
            if let Some(k) = run(0, n_outer, touch) {
                return Err(err(k));
            }
            return Ok(());
        }
        let grain = (GRAIN_SIZE / inner.max(1) as i64).max(1);
        parallel_for(0, n_outer, grain, |b, e| {
            if bad.lock().is_some() {
                return;
            }
            if let Some(k) = run(b, e, touch) {
                bad.lock().get_or_insert(k);
            }
        })?;
        match bad.lock().take() {
            Some(k) => Err(err(k)),
            None => Ok(()),
        }
    };
    if check == IndexCheck::First {
        drive(false)?;
    }
    drive(true)
}

/// The copy of one element of `size` bytes from `from` to `to`.
///
/// # Safety
/// Both must be aligned elements of that size (the dtypes' alignment: complex128 is 8).
#[inline(always)]
pub unsafe fn copy_elem<E: Copy>(from: *const u8, to: *mut u8) {
    // SAFETY: per the contract.
    unsafe { to.cast::<E>().write(from.cast::<E>().read()) }
}

/// `gather`: `result[..., j, ...] = self[..., index[..., j, ...], ...]`.
pub fn gather_kernel(result: &Tensor, self_: &Tensor, dim: usize, index: &Tensor) -> Result<()> {
    let err = |k: i64| {
        Error::runtime(format!(
            "index {k} is out of bounds for dimension {dim} with size {}",
            if self_.dim() == 0 {
                1
            } else {
                self_.sizes()[dim]
            }
        ))
    };
    let serial = false;
    with_elem_bytes!(self_.element_size(), E => {
        // SAFETY: copies one element of self's (= the result's) dtype.
        unsafe {
            scatter_gather_loop(self_, false, Some(result), index, dim, IndexCheck::InLoop, serial, &err,
                |s, o| copy_elem::<E>(s, o))
        }
    })
}

/// PyTorch's scatter error for an index outside `self`'s `dim`.
pub fn scatter_oob(self_: &Tensor, dim: usize) -> impl Fn(i64) -> Error + '_ {
    move |k| {
        Error::runtime(format!(
            "index {k} is out of bounds for dimension {dim} with size {}",
            if self_.dim() == 0 {
                1
            } else {
                self_.sizes()[dim]
            }
        ))
    }
}

/// `scatter` with a tensor source: `self[..., index[..., j, ...], ...] = src[..., j, ...]`.
/// `err` reports an index outside `self`'s `dim`.
pub fn scatter_kernel(
    self_: &Tensor,
    dim: usize,
    index: &Tensor,
    src: &Tensor,
    err: &dyn Fn(i64) -> Error,
) -> Result<()> {
    with_elem_bytes!(self_.element_size(), E => {
        // SAFETY: copies one element of self's (= src's) dtype.
        unsafe {
            scatter_gather_loop(self_, true, Some(src), index, dim, IndexCheck::First, false, err,
                |s, o| copy_elem::<E>(o, s))
        }
    })
}

/// The bytes of `value` as one element of `dtype` (c10's checked conversion).
pub fn scalar_bytes(value: &Scalar, dtype: ScalarType) -> Result<[u8; 16]> {
    let t = Tensor::empty(&[], dtype)?;
    t.fill_(*value)?;
    let g = TensorAccess::read(&t)?;
    let p = g
        .input(0)?
        .raw_data_ptr()
        .ok_or_else(|| Error::runtime("scalar_bytes: no data"))?;
    let mut out = [0u8; 16];
    // SAFETY: `t` is one element of `dtype` (at most 16 bytes) on the CPU, read-locked.
    unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), out.as_mut_ptr(), dtype.element_size()) };
    Ok(out)
}

/// `scatter` with a value: `self[..., index[..., j, ...], ...] = value`.
pub fn scatter_fill_kernel(
    self_: &Tensor,
    dim: usize,
    index: &Tensor,
    value: &Scalar,
    err: &dyn Fn(i64) -> Error,
) -> Result<()> {
    let bytes = scalar_bytes(value, self_.dtype())?;
    with_elem_bytes!(self_.element_size(), E => {
        // SAFETY: `bytes` holds one element of self's dtype; `E` has its size (read
        // unaligned from the array).
        let v: E = unsafe { bytes.as_ptr().cast::<E>().read_unaligned() };
        // SAFETY: writes one element of self's dtype.
        unsafe {
            scatter_gather_loop(self_, true, None, index, dim, IndexCheck::First, false, err,
                |s, _| s.cast::<E>().write(v))
        }
    })
}

/// The reductions of `scatter(reduce=)`, `scatter_add` and `scatter_reduce`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ScatterReduce {
    Sum,
    Prod,
    /// Summed by the kernel; the caller divides by the counts.
    Mean,
    Max,
    Min,
}

/// `scatter(reduce=)`'s operator: "add" or "multiply".
pub fn scatter_reduce_op(reduce: &str) -> Result<ScatterReduce> {
    match reduce {
        "add" => Ok(ScatterReduce::Sum),
        "multiply" => Ok(ScatterReduce::Prod),
        _ => Err(Error::runtime(
            "reduce argument must be either add or multiply.",
        )),
    }
}

/// `scatter_reduce`'s operator.
pub fn scatter_reduce_two_op(reduce: &str) -> Result<ScatterReduce> {
    match reduce {
        "sum" => Ok(ScatterReduce::Sum),
        "prod" => Ok(ScatterReduce::Prod),
        "mean" => Ok(ScatterReduce::Mean),
        "amax" => Ok(ScatterReduce::Max),
        "amin" => Ok(ScatterReduce::Min),
        _ => Err(Error::runtime(format!(
            "reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        ))),
    }
}

/// One reduction step `a op b` in the computation type `M`.
#[inline(always)]
fn combine<M: Arith + Extremum>(op: ScatterReduce, a: M, b: M) -> M {
    match op {
        ScatterReduce::Sum | ScatterReduce::Mean => a.add(b),
        ScatterReduce::Prod => a.mul(b),
        // ReduceMaximum / ReduceMinimum: `isnan(b) ? b : std::max(a, b)`, so a NaN source
        // wins and a NaN self stays.
        ScatterReduce::Max => {
            if b.is_nan() || a.lt(b) {
                b
            } else {
                a
            }
        }
        ScatterReduce::Min => {
            if b.is_nan() || b.lt(a) {
                b
            } else {
                a
            }
        }
    }
}

/// Sum and product only (complex types, which have no ordering).
#[inline(always)]
fn combine_arith<M: Arith>(op: ScatterReduce, a: M, b: M) -> M {
    match op {
        ScatterReduce::Prod => a.mul(b),
        _ => a.add(b),
    }
}

fn reduce_name(op: ScatterReduce, scalar: bool) -> &'static str {
    match (op, scalar) {
        (ScatterReduce::Sum, false) => "scatter_gather_tensor_cpu_reduce_add",
        (ScatterReduce::Prod, false) => "scatter_gather_tensor_cpu_reduce_multiply",
        (ScatterReduce::Mean, _) => "scatter_gather_tensor_cpu_reduce_mean",
        (ScatterReduce::Max, _) => "scatter_gather_tensor_cpu_reduce_amax",
        (ScatterReduce::Min, _) => "scatter_gather_tensor_cpu_reduce_amin",
        (ScatterReduce::Sum, true) => "scatter_gather_scalar_cpu_reduce_add",
        (ScatterReduce::Prod, true) => "scatter_gather_scalar_cpu_reduce_multiply",
    }
}

/// `self[..., index[..., j, ...], ...] op= src[..., j, ...]` (scatter_add, scatter(reduce=),
/// scatter_reduce, and index_add with `alpha`: `src * alpha` is added), for every dtype;
/// amax / amin refuse the complex types, as PyTorch's.
pub fn scatter_reduce_kernel(
    self_: &Tensor,
    dim: usize,
    index: &Tensor,
    src: &Tensor,
    op: ScatterReduce,
    alpha: Option<&Scalar>,
    err: &dyn Fn(i64) -> Error,
) -> Result<()> {
    let name = reduce_name(op, false);
    let dt = self_.dtype();
    let alpha = match alpha {
        Some(a) => Some(scalar_bytes(a, dt)?),
        None => None,
    };
    // One loop per reduction (the operator is not matched per element).
    macro_rules! run_op {
        ($T:ty, $M:ty, $comb:expr) => {{
            let comb = $comb;
            // SAFETY: `alpha` holds one element of self's dtype `$T`.
            let alpha: Option<$M> =
                alpha.map(|b| cast(unsafe { b.as_ptr().cast::<$T>().read_unaligned() }));
            macro_rules! go {
                ($scale:expr) => {{
                    let scale = $scale;
                    // SAFETY: reads and writes one element of self's (= src's) dtype `$T`.
                    unsafe {
                        scatter_gather_loop(
                            self_,
                            true,
                            Some(src),
                            index,
                            dim,
                            IndexCheck::First,
                            false,
                            err,
                            |s, o| {
                                let a: $M = cast(<$T>::read(s));
                                let b: $M = scale(cast(<$T>::read(o)));
                                s.cast::<$T>().write(cast(comb(a, b)));
                            },
                        )
                    }
                }};
            }
            match alpha {
                Some(al) => go!(move |b: $M| b.mul(al)),
                None => go!(|b: $M| b),
            }
        }};
    }
    macro_rules! run {
        ($T:ty, $M:ty, $comb:ident) => {{
            match op {
                ScatterReduce::Sum | ScatterReduce::Mean => {
                    run_op!($T, $M, |a: $M, b: $M| $comb::<$M>(ScatterReduce::Sum, a, b))
                }
                ScatterReduce::Prod => {
                    run_op!($T, $M, |a: $M, b: $M| $comb::<$M>(
                        ScatterReduce::Prod,
                        a,
                        b
                    ))
                }
                ScatterReduce::Max => {
                    run_op!($T, $M, |a: $M, b: $M| $comb::<$M>(ScatterReduce::Max, a, b))
                }
                ScatterReduce::Min => {
                    run_op!($T, $M, |a: $M, b: $M| $comb::<$M>(ScatterReduce::Min, a, b))
                }
            }
        }};
    }
    if dt.is_complex() {
        if matches!(op, ScatterReduce::Max | ScatterReduce::Min) {
            return Err(not_implemented(name, dt));
        }
        return dispatch_with_opmath!(dt, name, T, M => run!(T, M, combine_arith));
    }
    dispatch_real_with_opmath!(dt, name, T, M => run!(T, M, combine))
}

/// `self[..., index[..., j, ...], ...] op= value` (scatter(value, reduce=)).
pub fn scatter_scalar_reduce_kernel(
    self_: &Tensor,
    dim: usize,
    index: &Tensor,
    value: &Scalar,
    op: ScatterReduce,
    err: &dyn Fn(i64) -> Error,
) -> Result<()> {
    let name = reduce_name(op, true);
    let bytes = scalar_bytes(value, self_.dtype())?;
    dispatch_with_opmath!(self_.dtype(), name, T, M => {
        // SAFETY: `bytes` holds one element of self's dtype `T`.
        let v: M = cast(unsafe { bytes.as_ptr().cast::<T>().read_unaligned() });
        // SAFETY: reads and writes one element of self's dtype `T`.
        unsafe {
            scatter_gather_loop(self_, true, None, index, dim, IndexCheck::First, false, err,
                |s, _| {
                    let a: M = cast(T::read(s));
                    s.cast::<T>().write(cast(combine_arith::<M>(op, a, v)));
                })
        }
    })
}
