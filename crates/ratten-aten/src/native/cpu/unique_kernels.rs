//! The loops of the unique family (ATen's `Unique.cpp` templates): the groups of equal
//! elements of a sorted line (`unique_cpu_sorted_template`), of runs in a line
//! (`unique_consecutive_cpu_template`) and of the rows of a matrix, sorted or in order
//! (`_unique_dim_cpu_template`). The front ends, which sort, reshape and allocate, are in
//! `native/unique.rs`.
//!
//! Equality is C++'s `==` on the element type (NaN is unequal to itself, so every NaN is its
//! own group; -0.0 equals 0.0, and a group shows its first element); rows are ordered by the
//! sorting kernels' integer keys (Note [Sorting by integer keys]), which is torch's element
//! order with NaN greatest. Bool tensors arrive viewed as uint8.

use std::sync::atomic::{AtomicUsize, Ordering};

use half::{bf16, f16};
use parking_lot::Mutex;
use ratten_core::{PodElement, Result, ScalarType, TensorAccess};

use crate::native::cpu::scatter_gather_kernels::SyncPtr;
use crate::native::cpu::sort_kernels::SortElem;
use crate::tensor_iterator::parallel::{get_num_threads, parallel_for, GRAIN_SIZE};
use crate::Tensor;

/// An element type the unique kernels compare: `==` is C++'s, and `key` orders as torch's
/// sort does.
pub trait UniqueElem: PodElement + PartialEq {
    /// The sorting kernels' order-preserving key (NaN greatest, -0.0 as 0.0).
    fn key(self) -> u64;
    /// A 1-D tensor of `values`, of `dtype` (this type's, or Bool for uint8 bits).
    fn into_tensor(values: Vec<Self>, dtype: ScalarType) -> Result<Tensor> {
        let n = values.len() as i64;
        debug_assert_eq!(dtype, Self::DTYPE);
        Tensor::from_vec(values, &[n])
    }
}

macro_rules! unique_elem_int {
    ($($t:ty => $bits:ty),*) => {$(
        impl UniqueElem for $t {
            #[inline(always)]
            fn key(self) -> u64 {
                <$t as SortElem>::key(self as $bits)
            }
        }
    )*};
}
unique_elem_int!(i8 => u8, i16 => u16, i32 => u32, i64 => u64, u16 => u16, u32 => u32, u64 => u64);

impl UniqueElem for u8 {
    #[inline(always)]
    fn key(self) -> u64 {
        <u8 as SortElem>::key(self)
    }
    fn into_tensor(values: Vec<u8>, dtype: ScalarType) -> Result<Tensor> {
        let n = values.len() as i64;
        if dtype == ScalarType::Bool {
            let flags: Vec<bool> = values.into_iter().map(|b| b != 0).collect();
            return Tensor::from_vec(flags, &[n]);
        }
        Tensor::from_vec(values, &[n])
    }
}

macro_rules! unique_elem_float {
    ($($t:ty),*) => {$(
        impl UniqueElem for $t {
            #[inline(always)]
            fn key(self) -> u64 {
                <$t as SortElem>::key(self.to_bits())
            }
        }
    )*};
}
unique_elem_float!(f16, bf16, f32, f64);

/// Runs `$body` with `$T` the element type the list pairs with `$dt` (an `AT_DISPATCH` list
/// as `Dtype => type`); other dtypes are refused as `AT_DISPATCH` refuses them in kernel
/// `$name`. The loops of searchsorted and bincount dispatch through it too.
macro_rules! dispatch_types {
    ($dt:expr, $name:expr, [$($d:ident => $t:ty),+ $(,)?], $T:ident => $body:expr) => {
        match $dt {
            $(ratten_core::ScalarType::$d => {
                type $T = $t;
                $body
            })+
            d => Err($crate::native::cpu::elements::not_implemented($name, d)),
        }
    };
}
pub(crate) use dispatch_types;

/// Runs `$body` with `$T` the [`UniqueElem`] that holds `$dt`'s elements (uint8 for Bool);
/// complex dtypes are refused as in kernel `$name`.
macro_rules! dispatch_unique {
    ($dt:expr, $name:expr, $T:ident => $body:expr) => {
        $crate::native::cpu::unique_kernels::dispatch_types!($dt, $name, [
            Bool => u8, Byte => u8, Char => i8, Short => i16, Int => i32, Long => i64,
            Half => half::f16, BFloat16 => half::bf16, Float => f32, Double => f64,
            UInt16 => u16, UInt32 => u32, UInt64 => u64,
        ], $T => $body)
    };
}
pub(crate) use dispatch_unique;

/// `t` as the dtype its [`UniqueElem`] reads: a uint8 view of a Bool tensor, else `t`.
pub fn as_elements(t: &Tensor) -> Result<Tensor> {
    if t.dtype() == ScalarType::Bool {
        t.view_dtype(ScalarType::Byte)
    } else {
        Ok(t.clone())
    }
}

/// `[0, n)` cut into pieces of about `grain` elements, at most four per thread (the bounds,
/// one more than the pieces).
fn pieces(n: usize, grain: usize) -> Vec<usize> {
    let max = (get_num_threads() * 4).max(1);
    let k = n.div_ceil(grain.max(1)).clamp(1, max);
    let len = n.div_ceil(k).max(1);
    let mut bounds: Vec<usize> = (0..k).map(|c| (c * len).min(n)).collect();
    bounds.push(n);
    bounds.dedup();
    if bounds.len() == 1 {
        bounds.push(n);
    }
    bounds
}

/// What [`unique_sorted`] returns: the first element of each group, and the group sizes when
/// asked for.
pub struct Groups {
    pub values: Tensor,
    pub counts: Option<Tensor>,
}

/// The groups of equal elements of `sorted` (a contiguous 1-D tensor, sorted ascending as
/// torch sorts; Bool viewed as uint8), as `unique_cpu_sorted_template`. With `inverse`, also
/// writes into it (int64, contiguous, `sorted`'s length) each element's group, at the
/// position `perm` (the sort's indices, a permutation) gives it. `dtype` is the values' dtype.
///
/// The line is cut into pieces: each counts its groups in parallel, then writes its groups
/// at the offset the counts before it give.
pub fn unique_sorted(
    sorted: &Tensor,
    perm: &Tensor,
    inverse: Option<&Tensor>,
    counts: bool,
    dtype: ScalarType,
) -> Result<Groups> {
    dispatch_unique!(sorted.dtype(), "unique", T => {
        let mut reads = vec![sorted.base()];
        if inverse.is_some() {
            reads.push(perm.base());
        }
        let writes: Vec<_> = inverse.iter().map(|t| t.base()).collect();
        let g = TensorAccess::new(&reads, &writes)?;
        let s = g.input_slice::<T>(0)?;
        let perm = if inverse.is_some() { Some(g.input_slice::<i64>(1)?) } else { None };
        let inv = match inverse {
            Some(_) => {
                let t = g.output(0)?;
                if t.numel() as usize != s.len() || !t.is_contiguous() {
                    return Err(ratten_core::Error::runtime(
                        "unique: the inverse must be contiguous with one element per input",
                    ));
                }
                Some(SyncPtr(t.data_ptr_mut::<i64>()?.cast()))
            }
            None => None,
        };
        let (values, group_counts) = groups_of_sorted::<T>(s, perm, inv, counts)?;
        let counts = match group_counts {
            Some(c) => {
                let n = c.len() as i64;
                Some(Tensor::from_vec(c, &[n])?)
            }
            None => None,
        };
        Ok(Groups { values: T::into_tensor(values, dtype)?, counts })
    })
}

/// The loop of [`unique_sorted`] over the elements `s`: the first element of each group, the
/// group sizes when `counts`, and with `inv` the group of each element written at `perm[i]`.
fn groups_of_sorted<T: UniqueElem>(
    s: &[T],
    perm: Option<&[i64]>,
    inv: Option<SyncPtr>,
    counts: bool,
) -> Result<(Vec<T>, Option<Vec<i64>>)> {
    let n = s.len();
    let starts_group = |i: usize| i == 0 || s[i] != s[i - 1];
    let bounds = pieces(n, GRAIN_SIZE as usize);
    let k = bounds.len() - 1;
    let piece_groups: Vec<AtomicUsize> = (0..k).map(|_| AtomicUsize::new(0)).collect();
    parallel_for(0, k as i64, 1, |b, e| {
        for c in b as usize..e as usize {
            let g = (bounds[c]..bounds[c + 1])
                .filter(|&i| starts_group(i))
                .count();
            piece_groups[c].store(g, Ordering::Relaxed);
        }
    })?;
    let mut offsets = Vec::with_capacity(k + 1);
    let mut total = 0usize;
    for g in &piece_groups {
        offsets.push(total);
        total += g.load(Ordering::Relaxed);
    }
    offsets.push(total);

    let mut values = vec![T::default(); total];
    // Where each group starts in `s`; one more entry (n) closes the last group.
    let mut starts = if counts {
        vec![0i64; total + 1]
    } else {
        Vec::new()
    };
    {
        // Each piece owns its groups' slots: disjoint slices, locked once by their piece.
        let mut value_parts = Vec::with_capacity(k);
        let mut start_parts = Vec::with_capacity(k);
        let mut rest_v: &mut [T] = &mut values;
        let mut rest_s: &mut [i64] = if counts {
            &mut starts[..total]
        } else {
            &mut []
        };
        for c in 0..k {
            let len = offsets[c + 1] - offsets[c];
            let (head, tail) = std::mem::take(&mut rest_v).split_at_mut(len);
            value_parts.push(Mutex::new(head));
            rest_v = tail;
            let slen = if counts { len } else { 0 };
            let (head, tail) = std::mem::take(&mut rest_s).split_at_mut(slen);
            start_parts.push(Mutex::new(head));
            rest_s = tail;
        }
        parallel_for(0, k as i64, 1, |b, e| {
            for c in b as usize..e as usize {
                let mut vals = value_parts[c].lock();
                let mut st = start_parts[c].lock();
                // Groups begun in this piece; an element before the first belongs to the last
                // group of the pieces before (offsets[c] - 1).
                let mut j = 0usize;
                for i in bounds[c]..bounds[c + 1] {
                    if starts_group(i) {
                        vals[j] = s[i];
                        if counts {
                            st[j] = i as i64;
                        }
                        j += 1;
                    }
                    if let (Some(inv), Some(perm)) = (inv, perm) {
                        let p = perm[i] as usize;
                        // `perm` is the sort's permutation of [0, n): `p` is in bounds, and no
                        // other element (so no other piece) writes it.
                        if p < n {
                            let group = (offsets[c] + j) as i64 - 1;
                            // SAFETY: `inv` is the start of the inverse's n contiguous int64
                            // elements, held for writing by the caller's guard for the whole
                            // region; p < n, and each p is written once (see above).
                            unsafe { inv.get().cast::<i64>().add(p).write(group) };
                        }
                    }
                }
            }
        })?;
    }
    if !counts {
        return Ok((values, None));
    }
    starts[total] = n as i64;
    let group_counts = starts.windows(2).map(|w| w[1] - w[0]).collect();
    Ok((values, Some(group_counts)))
}

/// `unique_consecutive_cpu_template`: the first element of each run of equal elements of the
/// contiguous 1-D `s`, the run of each element (when `inverse`) and the run lengths (when
/// `counts`).
pub fn runs<T: UniqueElem>(s: &[T], inverse: bool, counts: bool) -> (Vec<T>, Vec<i64>, Vec<i64>) {
    let mut values = Vec::new();
    let mut inv = Vec::with_capacity(if inverse { s.len() } else { 0 });
    let mut lengths = Vec::new();
    let mut start = 0usize;
    for (i, &v) in s.iter().enumerate() {
        if i == 0 || v != s[i - 1] {
            if i > 0 && counts {
                lengths.push((i - start) as i64);
            }
            values.push(v);
            start = i;
        }
        if inverse {
            inv.push(values.len() as i64 - 1);
        }
    }
    if counts && !s.is_empty() {
        lengths.push((s.len() - start) as i64);
    }
    (values, inv, lengths)
}

/// `_unique_dim_cpu_template`'s grouping of the `n` rows of `m` elements of the row-major `data`:
/// the rows are sorted (lexicographically by key, stable) unless `consecutive`, and equal
/// neighbours (every element `==`) form a group. Returns the first row of each group in order,
/// each row's group and the group sizes.
pub fn row_groups<T: UniqueElem>(
    data: &[T],
    n: usize,
    m: usize,
    consecutive: bool,
) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let row = |r: usize| &data[r * m..(r + 1) * m];
    let mut order: Vec<usize> = (0..n).collect();
    if !consecutive {
        order.sort_by(|&a, &b| {
            row(a)
                .iter()
                .map(|&v| v.key())
                .cmp(row(b).iter().map(|&v| v.key()))
        });
    }
    let mut firsts = Vec::new();
    let mut inverse = vec![0i64; n];
    let mut counts = Vec::new();
    for (k, &r) in order.iter().enumerate() {
        if k == 0 || row(order[k - 1]) != row(r) {
            firsts.push(r as i64);
            counts.push(0i64);
        }
        inverse[r] = firsts.len() as i64 - 1;
        if let Some(c) = counts.last_mut() {
            *c += 1;
        }
    }
    (firsts, inverse, counts)
}
