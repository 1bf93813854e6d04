//! The copies of flip and tril / triu (ATen's `cpu/FlipKernel.cpp` and `TriangularOps.cpp`'s
//! `apply_triu_tril`): element moves that need no arithmetic, so they work on the element's
//! bytes (1, 2, 4, 8 or 16 of them) whatever the dtype.
//!
//! Note [flip by signed strides]: element `c` of flip's output is element `c'` of `self`,
//! where `c'[d] = size[d] - 1 - c[d]` along a flipped dim. Reading `self` from the element at
//! the far end of every flipped dim, with those dims' strides negated, is that map: the copy
//! is a plain strided copy from a shifted base with signed strides (PyTorch negates the
//! output's strides in its TensorIterator instead; ratten's tensors cannot have negative
//! strides, so the kernel walks the strides itself). The dims are put in the output's memory
//! order and merged where both tensors allow, and each innermost line is one `memcpy`
//! (nothing flipped in it), a reversed copy (the output's innermost dim flipped), or an
//! element loop.

use ratten_core::{Error, Result, TensorAccess};

use crate::native::cpu::scatter_gather_kernels::{with_elem_bytes, SyncPtr};
use crate::tensor_iterator::overlap::is_non_overlapping_and_dense;
use crate::tensor_iterator::parallel::{parallel_for, GRAIN_SIZE};
use crate::Tensor;

/// Copies a line of `n` elements of type `E` from `src` (byte stride `ss`) to `dst` (byte
/// stride `ds`).
///
/// # Safety
/// Every element of both lines is inside its tensor's data; a line may overlap the other only
/// as tril's and triu's in-place callers allow (element by element, in order).
#[inline(always)]
pub(crate) unsafe fn copy_line<E: Copy>(
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    ds: isize,
    n: usize,
) {
    let es = std::mem::size_of::<E>() as isize;
    // SAFETY (all arms): per the contract; unaligned accesses, since an element of a complex
    // dtype is only aligned to its part's size.
    unsafe {
        if ss == es && ds == es {
            std::ptr::copy(src, dst, n * es as usize);
        } else if ss == -es && ds == es {
            let (s, d) = (src.cast::<E>(), dst.cast::<E>());
            for k in 0..n {
                d.add(k).write_unaligned(s.sub(k).read_unaligned());
            }
        } else {
            for k in 0..n as isize {
                dst.offset(k * ds)
                    .cast::<E>()
                    .write_unaligned(src.offset(k * ss).cast::<E>().read_unaligned());
            }
        }
    }
}

/// [`copy_line`] one element after the other, from the first (what a row of tril / triu into
/// an `out` overlapping `self` gives in torch).
///
/// # Safety
/// Every element of both lines is inside its tensor's data.
#[inline(always)]
unsafe fn copy_line_in_order<E: Copy>(
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    ds: isize,
    n: usize,
) {
    for k in 0..n as isize {
        // SAFETY: per the contract.
        unsafe {
            dst.offset(k * ds)
                .cast::<E>()
                .write_unaligned(src.offset(k * ss).cast::<E>().read_unaligned())
        };
    }
}

/// Zeroes a line of `n` elements of `es` bytes at byte stride `ds` (a zero element is all
/// zero bytes in every dtype).
///
/// # Safety
/// Every element of the line is inside its tensor's data.
#[inline(always)]
unsafe fn zero_line(dst: *mut u8, ds: isize, es: usize, n: usize) {
    // SAFETY: per the contract.
    unsafe {
        if ds == es as isize {
            std::ptr::write_bytes(dst, 0, n * es);
        } else {
            for k in 0..n as isize {
                std::ptr::write_bytes(dst.offset(k * ds), 0, es);
            }
        }
    }
}

/// One dim of a copy: its size and the byte strides of the destination and the source.
#[derive(Clone, Copy, Debug)]
struct Dim {
    size: i64,
    dst: isize,
    src: isize,
}

/// `dims` (outermost first) without size-1 dims and with neighbours merged where both strides
/// allow.
fn merge_dims(dims: &[Dim]) -> Vec<Dim> {
    let mut out: Vec<Dim> = Vec::with_capacity(dims.len());
    for &d in dims.iter().filter(|d| d.size != 1) {
        match out.last_mut() {
            Some(o) if o.dst == d.dst * d.size as isize && o.src == d.src * d.size as isize => {
                o.size *= d.size;
                o.dst = d.dst;
                o.src = d.src;
            }
            _ => out.push(d),
        }
    }
    out
}

/// The byte offsets in the destination and the source of line `line` of the outer dims.
fn line_offsets(outer: &[Dim], mut line: i64) -> (isize, isize) {
    let (mut d, mut s) = (0isize, 0isize);
    for dim in outer.iter().rev() {
        let c = (line % dim.size) as isize;
        line /= dim.size;
        d += c * dim.dst;
        s += c * dim.src;
    }
    (d, s)
}

/// flip: `out[c] = self[c']` with `c'` reversed along the dims where `flipped[d]` (Note [flip
/// by signed strides]). `out` has `self`'s shape and dtype and shares no memory with it.
pub fn flip_kernel(out: &Tensor, self_: &Tensor, flipped: &[bool]) -> Result<()> {
    let g = TensorAccess::new(&[self_.base()], &[out.base()])?;
    let (ia, oa) = (g.input(0)?, g.output(0)?);
    let sizes = oa.sizes();
    let nd = sizes.len();
    if ia.sizes() != sizes || ia.dtype() != oa.dtype() || flipped.len() != nd {
        return Err(Error::runtime(
            "flip: the output's shape or dtype does not match self",
        ));
    }
    if oa.numel() == 0 {
        return Ok(());
    }
    let (Some(sp), Some(op)) = (ia.raw_data_ptr(), oa.raw_data_ptr()) else {
        return Ok(());
    };
    let es = oa.dtype().element_size() as isize;
    let (ist, ost) = (ia.strides(), oa.strides());
    let mut base = 0isize;
    let mut dims: Vec<Dim> = (0..nd)
        .map(|d| {
            let src = ist[d] as isize * es;
            if flipped[d] {
                base += (sizes[d] - 1) as isize * src;
            }
            Dim {
                size: sizes[d],
                dst: ost[d] as isize * es,
                src: if flipped[d] { -src } else { src },
            }
        })
        .collect();
    // The output's memory order: the walk writes it in order.
    dims.sort_by_key(|d| std::cmp::Reverse(d.dst.unsigned_abs()));
    let dims = merge_dims(&dims);
    let (inner, outer) = match dims.split_last() {
        Some((i, o)) => (*i, o),
        None => (
            Dim {
                size: 1,
                dst: es,
                src: es,
            },
            &[][..],
        ),
    };
    let lines: i64 = outer.iter().map(|d| d.size).product();
    let n = inner.size as usize;
    let (sp, op) = (SyncPtr(sp.as_ptr()), SyncPtr(op.as_ptr()));
    with_elem_bytes!(es, E => {
        parallel_for(0, lines, (GRAIN_SIZE / inner.size).max(1), |b, e| {
            for line in b..e {
                let (d, s) = line_offsets(outer, line);
                // SAFETY: `line < lines` and the inner line are inside both tensors (their
                // sizes and strides, checked under the guard); the shifted base plus the
                // negated strides reach exactly the elements of `self`; the tensors are
                // disjoint (flip's output is fresh).
                unsafe {
                    copy_line::<E>(
                        sp.get().offset(base + s),
                        inner.src,
                        op.get().offset(d),
                        inner.dst,
                        n,
                    )
                };
            }
        })
    })
}

/// tril (`upper == false`: keeps the elements with `j <= i + k`) or triu (`upper`: keeps
/// `j >= i + k`) of the last two dims, element `(i, j)` of each matrix; the others are zeroed.
/// In place (`out` is `self`) the kept elements are left as they are. Rows are split over
/// threads when `out` is dense and, unless in place, in another storage than `self`.
pub fn triangular_kernel(out: &Tensor, self_: &Tensor, k: i64, upper: bool) -> Result<()> {
    let inplace = out.is_same(self_);
    // An `out` in `self`'s storage (which torch does not refuse) is written element by element
    // in torch's order, so that overlapping rows come out as torch's do.
    let aliased = !inplace && self_.meta().storage().is_alias_of(out.meta().storage());
    let g = TensorAccess::new(&[self_.base()], &[out.base()])?;
    let (ia, oa) = (g.input(0)?, g.output(0)?);
    let sizes = oa.sizes();
    let nd = sizes.len();
    if ia.sizes() != sizes || ia.dtype() != oa.dtype() || nd < 2 {
        return Err(Error::runtime(
            "tril/triu: the output's shape or dtype does not match self",
        ));
    }
    if oa.numel() == 0 {
        return Ok(());
    }
    let (Some(sp), Some(op)) = (ia.raw_data_ptr(), oa.raw_data_ptr()) else {
        return Ok(());
    };
    let es = oa.dtype().element_size();
    let esi = es as isize;
    let (ist, ost) = (ia.strides(), oa.strides());
    let (n, m) = (sizes[nd - 2], sizes[nd - 1]);
    let batch: Vec<Dim> = (0..nd - 2)
        .map(|d| Dim {
            size: sizes[d],
            dst: ost[d] as isize * esi,
            src: ist[d] as isize * esi,
        })
        .collect();
    let (o_row, o_col) = (ost[nd - 2] as isize * esi, ost[nd - 1] as isize * esi);
    let (s_row, s_col) = (ist[nd - 2] as isize * esi, ist[nd - 1] as isize * esi);
    let rows = oa.numel() / m;
    let parallel = is_non_overlapping_and_dense(sizes, ost) && !aliased;
    let grain = if parallel {
        (GRAIN_SIZE / m.max(1)).max(1)
    } else {
        rows
    };
    let (sp, op) = (SyncPtr(sp.as_ptr()), SyncPtr(op.as_ptr()));
    with_elem_bytes!(es, E => {
        parallel_for(0, rows, grain, |b, e| {
            for r in b..e {
                let (d, s) = line_offsets(&batch, r / n);
                let i = r % n;
                // The kept columns [lo, hi) of row i, in [0, m].
                let edge = i.saturating_add(k);
                let (lo, hi) = if upper {
                    (edge.clamp(0, m), m)
                } else {
                    (0, edge.saturating_add(1).clamp(0, m))
                };
                let dst = op.get().wrapping_offset(d + i as isize * o_row);
                let src = sp.get().wrapping_offset(s + i as isize * s_row);
                // SAFETY: row `i` of matrix `r / n` and columns below `m` are inside both
                // tensors (their sizes and strides, checked under the guard); rows run in
                // parallel only when the output's rows are disjoint and `self` is not written.
                unsafe {
                    let copy = |from: usize, to: usize| {
                        let (src, dst) = (
                            src.wrapping_offset(from as isize * s_col),
                            dst.wrapping_offset(from as isize * o_col),
                        );
                        if aliased {
                            copy_line_in_order::<E>(src, s_col, dst, o_col, to - from);
                        } else if !inplace {
                            copy_line::<E>(src, s_col, dst, o_col, to - from);
                        }
                    };
                    let (lo, hi) = (lo as usize, hi as usize);
                    // torch's order: triu zeroes before it copies, tril after.
                    if upper {
                        zero_line(dst, o_col, es, lo);
                        copy(lo, m as usize);
                    } else {
                        copy(0, hi);
                        zero_line(dst.wrapping_offset(hi as isize * o_col), o_col, es, m as usize - hi);
                    }
                }
            }
        })
    })
}
