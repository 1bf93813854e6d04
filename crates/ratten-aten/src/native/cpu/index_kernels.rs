//! The indexing kernels (ATen's `cpu/IndexKernel.cpp` and `index_select_out_cpu_`):
//! `index_select` as row copies, and the advanced-indexing loop of `index` / `index_put_`
//! over a TensorIterator of the result, the restrided source and the index tensors.

use parking_lot::Mutex;
use ratten_core::dtype::{c128, c64};
use ratten_core::{Error, Result, ScalarType, TensorAccess};

use crate::native::cpu::binary_kernels::Arith;
use crate::native::cpu::elements::{cast, not_implemented, Elem};
use crate::native::cpu::reduce_kernels::dispatch_with_opmath;
use crate::native::cpu::scatter_gather_kernels::{copy_elem, with_elem_bytes, SyncPtr};
use crate::tensor_iterator::parallel::{parallel_for, GRAIN_SIZE};
use crate::tensor_iterator::TensorIteratorBase;
use crate::Tensor;

/// An index element type (int64 or int32).
pub trait IndexElem: Copy + Send + Sync + 'static {
    fn get(self) -> i64;
}
impl IndexElem for i64 {
    #[inline(always)]
    fn get(self) -> i64 {
        self
    }
}
impl IndexElem for i32 {
    #[inline(always)]
    fn get(self) -> i64 {
        self as i64
    }
}

/// How `index_select` reports a bad index.
pub type IndexError<'a> = &'a dyn Fn(i64) -> Error;

/// `index_select`: `out.select(dim, i) = self.select(dim, index[i])` for the contiguous 1-D
/// (or 0-d) int64 / int32 `index`. Every index is checked (against `[0, self.size(dim))`)
/// before anything is written; rows are split over threads and copied as whole blocks when
/// the dims after `dim` are dense in both tensors.
pub fn index_select_kernel(
    out: &Tensor,
    self_: &Tensor,
    dim: usize,
    index: &Tensor,
    err: IndexError<'_>,
) -> Result<()> {
    match index.dtype() {
        ScalarType::Long => index_select_typed::<i64>(out, self_, dim, index, err),
        ScalarType::Int => index_select_typed::<i32>(out, self_, dim, index, err),
        d => Err(Error::runtime(format!(
            "index_select(): Expected dtype int32 or int64 for index, got {d}"
        ))),
    }
}

fn nonempty(sizes: &[i64], strides: &[i64]) -> (Vec<i64>, Vec<i64>) {
    if sizes.is_empty() {
        (vec![1], vec![1])
    } else {
        (sizes.to_vec(), strides.to_vec())
    }
}

fn index_select_typed<I: IndexElem + ratten_core::PodElement>(
    out: &Tensor,
    self_: &Tensor,
    dim: usize,
    index: &Tensor,
    err: IndexError<'_>,
) -> Result<()> {
    let g = TensorAccess::new(&[self_, index], &[out])?;
    let idx: &[I] = g.input_slice::<I>(1)?;
    let (sa, oa) = (g.input(0)?, g.output(0)?);
    let (ssz, sst) = nonempty(sa.sizes(), sa.strides());
    let (osz, ost) = nonempty(oa.sizes(), oa.strides());
    let n = idx.len();
    let nd = ssz.len();
    // The shapes the caller promised, checked again under the guard.
    let shape_ok = osz.len() == nd
        && dim < nd
        && (0..nd).all(|d| {
            if d == dim {
                osz[d] == n as i64
            } else {
                osz[d] == ssz[d]
            }
        })
        && sa.dtype() == oa.dtype();
    if !shape_ok {
        return Err(Error::runtime(
            "index_select(): the result's shape does not match self and index",
        ));
    }
    let dim_size = ssz[dim];
    if let Some(&bad) = idx.iter().find(|&&k| k.get() < 0 || k.get() >= dim_size) {
        return Err(err(bad.get()));
    }
    if n == 0 || ssz.contains(&0) {
        return Ok(());
    }
    let (Some(sp), Some(op)) = (sa.raw_data_ptr(), oa.raw_data_ptr()) else {
        return Ok(());
    };
    let es = sa.dtype().element_size() as isize;
    let before = &ssz[..dim];
    let after = &ssz[dim + 1..];
    let n_outer: i64 = before.iter().product();
    let block: i64 = after.iter().product();
    // Whether the dims after `dim` are one dense block in both tensors.
    let dense = |sizes: &[i64], strides: &[i64]| {
        let mut expect = 1i64;
        for (&s, &st) in sizes.iter().zip(strides).rev() {
            if s != 1 && st != expect {
                return false;
            }
            expect *= s;
        }
        true
    };
    let dense_block = dense(after, &sst[dim + 1..]) && dense(after, &ost[dim + 1..]);
    let (sp, op) = (SyncPtr(sp.as_ptr()), SyncPtr(op.as_ptr()));
    let (s_dim, o_dim) = (sst[dim] as isize * es, ost[dim] as isize * es);
    let rows = n_outer * n as i64;
    let grain = (GRAIN_SIZE / block.max(1)).max(1);
    // Rows ahead whose source is prefetched: the rows are random reads, each a miss.
    const AHEAD: usize = 8;
    macro_rules! body {
        ($copy:expr) => {{
            let copy = $copy;
            parallel_for(0, rows, grain, |b, e| {
                let mut o = b / n as i64;
                let mut i = (b % n as i64) as usize;
                // The outer position's offsets (row-major over the dims before `dim`).
                let offsets = |o: i64| {
                    let (mut rem, mut so, mut oo) = (o, 0isize, 0isize);
                    for d in (0..dim).rev() {
                        let c = rem % ssz[d];
                        rem /= ssz[d];
                        so += c as isize * sst[d] as isize * es;
                        oo += c as isize * ost[d] as isize * es;
                    }
                    (so, oo)
                };
                let (mut so, mut oo) = offsets(o);
                for _ in b..e {
                    if i + AHEAD < n {
                        let k = idx[i + AHEAD].get() as isize;
                        prefetch(sp.get().wrapping_offset(so + k * s_dim));
                    }
                    let k = idx[i].get() as isize;
                    // In bounds: `k` was checked against `self.size(dim)`, `i < n` is inside
                    // the result's `dim`, the outer position inside both.
                    copy(
                        sp.get().wrapping_offset(so + k * s_dim),
                        op.get().wrapping_offset(oo + i as isize * o_dim),
                    );
                    i += 1;
                    if i == n {
                        i = 0;
                        o += 1;
                        (so, oo) = offsets(o);
                    }
                }
            })
        }};
    }
    if dense_block {
        let bytes = block as usize * es as usize;
        if block == 1 {
            return with_elem_bytes!(es, E => {
                // SAFETY: one element of the tensors' dtype at each pointer.
                body!(|s: *const u8, o: *mut u8| unsafe { copy_elem::<E>(s, o) })
            });
        }
        // SAFETY: a dense block of `bytes` bytes starts at each pointer (checked above);
        // distinct storages or disjoint memory (the caller refuses overlap).
        return body!(|s: *const u8, o: *mut u8| unsafe {
            std::ptr::copy_nonoverlapping(s, o, bytes)
        });
    }
    // Strided blocks: element by element over the dims after `dim`.
    let (ssa, osa) = (&sst[dim + 1..], &ost[dim + 1..]);
    with_elem_bytes!(es, E => {
        body!(|s: *const u8, o: *mut u8| {
            let mut c = vec![0i64; after.len()];
            let (mut si, mut oi) = (0isize, 0isize);
            for _ in 0..block {
                // SAFETY: an element of the block in each tensor (c < after's sizes).
                unsafe { copy_elem::<E>(s.wrapping_offset(si * es), o.wrapping_offset(oi * es)) };
                for d in (0..after.len()).rev() {
                    c[d] += 1;
                    si += ssa[d] as isize;
                    oi += osa[d] as isize;
                    if c[d] < after[d] {
                        break;
                    }
                    si -= after[d] as isize * ssa[d] as isize;
                    oi -= after[d] as isize * osa[d] as isize;
                    c[d] = 0;
                }
            }
        })
    })
}

/// A hint to load the cache line at `p` (nothing on other architectures).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it reads nothing and never faults, whatever the
    // address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// What the advanced-indexing loop does with each element.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexMode {
    /// `out = src[offset]` (index).
    Get,
    /// `dst[offset] = value` (index_put_).
    Put,
    /// `dst[offset] += value` (index_put_ with accumulate).
    Accumulate,
}

/// `cpu_index_kernel`: the iterator's operands are the output, the (restrided) source and
/// one int64 tensor per indexed dim; `sizes[k]` / `strides[k]` (bytes) are the indexed dims'
/// sizes and strides in the tensor the offsets address (the source for `Get`, the output,
/// which is `self` restrided, for `Put` / `Accumulate`). Negative indices count from the
/// end; any other index outside its dim is an IndexError, and no element outside the
/// tensors is touched. `Put` and `Accumulate` run serially (duplicate indices write one
/// element), in the iterator's order.
pub fn index_kernel(
    iter: &TensorIteratorBase,
    sizes: &[i64],
    strides: &[i64],
    mode: IndexMode,
) -> Result<()> {
    if iter.is_meta() || iter.numel() == 0 {
        return Ok(());
    }
    let nidx = sizes.len();
    if iter.ntensors() != 2 + nidx || (0..nidx).any(|k| iter.dtype(2 + k) != ScalarType::Long) {
        return Err(Error::runtime("index: malformed indexing iterator"));
    }
    let dtype = iter.dtype(0);
    let bad = Mutex::new(None::<(usize, i64)>);
    macro_rules! run {
        ($elem:expr) => {{
            let f = $elem;
            let loop2d = |data: &[*mut u8], st: &[isize], n0: usize, n1: usize| {
                let nt = 2 + nidx;
                for j in 0..n1 {
                    for i in 0..n0 {
                        let at = |k: usize| {
                            data[k].wrapping_offset(i as isize * st[k] + j as isize * st[nt + k])
                        };
                        let mut off = 0isize;
                        for k in 0..nidx {
                            // SAFETY: an element of index tensor k (int64, checked above).
                            let mut v = unsafe { at(2 + k).cast::<i64>().read() };
                            let size = sizes[k];
                            if v < -size || v >= size {
                                bad.lock().get_or_insert((k, v));
                                return;
                            }
                            if v < 0 {
                                v += size;
                            }
                            off += v as isize * strides[k] as isize;
                        }
                        f(at(0), at(1), off);
                    }
                }
            };
            if mode == IndexMode::Get {
                iter.for_each(&loop2d, GRAIN_SIZE)?;
            } else {
                iter.serial_for_each(&loop2d, 0, iter.numel())?;
            }
        }};
    }
    match mode {
        IndexMode::Get => with_elem_bytes!(dtype.element_size(), E => {
            // SAFETY: `src + off` is the element of self the indices name (each checked
            // against its dim, the other dims iterated in range), `out` an element of the
            // result; both of the same dtype.
            run!(|out: *mut u8, src: *mut u8, off: isize| unsafe {
                copy_elem::<E>(src.wrapping_offset(off), out)
            });
            Ok(())
        })?,
        IndexMode::Put => with_elem_bytes!(dtype.element_size(), E => {
            // SAFETY: as for Get, with `dst + off` the element of self written.
            run!(|dst: *mut u8, val: *mut u8, off: isize| unsafe {
                copy_elem::<E>(val, dst.wrapping_offset(off))
            });
            Ok(())
        })?,
        IndexMode::Accumulate => {
            dispatch_with_opmath!(dtype, "index_put", T, M => {
                // SAFETY: as for Put; both elements have self's dtype `T`.
                run!(|dst: *mut u8, val: *mut u8, off: isize| unsafe {
                    let p = dst.wrapping_offset(off);
                    let a: M = cast(T::read(p));
                    let b: M = cast(T::read(val));
                    p.cast::<T>().write(cast(a.add(b)));
                });
                Ok::<(), Error>(())
            })?
        }
    }
    match bad.into_inner() {
        Some((k, v)) => Err(Error::index(format!(
            "index {v} is out of bounds for dimension {k} with size {}",
            sizes[k]
        ))),
        None => Ok(()),
    }
}
