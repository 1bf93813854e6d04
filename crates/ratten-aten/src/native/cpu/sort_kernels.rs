//! The sorting kernels (ATen's `native/cpu/SortingKernel.cpp` `sort_kernel` / `topk_kernel`,
//! `TopKImpl.h`, and the loop of `Sorting.cpp`'s `kthvalue_out_impl_cpu`): a TensorIterator
//! over every dim but `dim` hands each line along `dim` to a per-line routine, lines in
//! parallel (PyTorch's `_dim_apply`).
//!
//! Note [Sorting by integer keys]
//! Every element is mapped to an unsigned integer key whose order is PyTorch's comparison
//! order (`SortElem::key`): integers by flipping the sign bit, floats by the sign-magnitude
//! bit trick, with -0.0 given +0.0's key (torch's `<` calls them equal) and every NaN the
//! greatest key (torch's comparators put NaN above +inf; descending puts it first). A line is
//! then sorted as `(key, index)` pairs packed into one integer (key in the high bits): the
//! packed values are distinct, so any sort of them, stable or not, gives the order of a stable
//! sort by key. Descending sorts and `largest=True` invert the key, which keeps equal elements
//! in index order. Long lines take a least-significant-digit radix sort over the key's bytes
//! (bytes on which every key agrees are skipped), short ones `sort_unstable`. The sorted
//! values are recovered from the keys (the mapping is a bijection except for ±0.0 and NaN,
//! which are read back from the line as it was), so writing them costs no random reads.
//! topk keeps a bounded heap when k is small against the line (one streaming pass), else
//! selects with `select_nth_unstable`; kthvalue selects. Ties in topk and kthvalue thus go
//! to the lowest index (PyTorch leaves them to its quickselect).

use std::borrow::Cow;
use std::collections::BinaryHeap;

use half::{bf16, f16};
use ratten_core::{Result, ScalarType, TensorBase};

use crate::native::cpu::elements::not_implemented;
use crate::tensor_iterator::{MaybeOwnedOutput, TensorIteratorConfig, GRAIN_SIZE};
use crate::Tensor;

// ---------------------------------------------------------------------------------------------
// Keys

/// An element type the sorting kernels order, through an order-preserving integer key
/// (Note [Sorting by integer keys]).
pub trait SortElem: Copy + Send + Sync + 'static {
    /// The element's storage, copied bit for bit (`bool` as its byte).
    type Bits: Copy + Default + Send + Sync + 'static;
    /// The key's width in bits.
    const KEY_BITS: u32;
    /// The key: greater elements have greater keys, equal elements (all NaNs, ±0.0) equal keys.
    fn key(b: Self::Bits) -> u64;
    /// The element of `key` when it has one element only (every key but ±0.0's and NaN's).
    fn unkey(key: u64) -> Option<Self::Bits>;
}

macro_rules! int_keys {
    ($($t:ty => $bits:ty, $flip:expr);* $(;)?) => {$(
        impl SortElem for $t {
            type Bits = $bits;
            const KEY_BITS: u32 = <$bits>::BITS;
            #[inline(always)]
            fn key(b: $bits) -> u64 {
                (b ^ $flip) as u64
            }
            #[inline(always)]
            fn unkey(key: u64) -> Option<$bits> {
                Some((key as $bits) ^ $flip)
            }
        }
    )*};
}
int_keys!(u8 => u8, 0; i8 => u8, 0x80; i16 => u16, 0x8000; i32 => u32, 0x8000_0000;
    i64 => u64, 0x8000_0000_0000_0000; u16 => u16, 0; u32 => u32, 0; u64 => u64, 0);

impl SortElem for bool {
    type Bits = u8;
    const KEY_BITS: u32 = 8;
    #[inline(always)]
    fn key(b: u8) -> u64 {
        u64::from(b != 0)
    }
    #[inline(always)]
    fn unkey(key: u64) -> Option<u8> {
        Some(key as u8)
    }
}

macro_rules! float_keys {
    ($($t:ty => $bits:ty, $signed:ty, $exp:expr);* $(;)?) => {$(
        impl SortElem for $t {
            type Bits = $bits;
            const KEY_BITS: u32 = <$bits>::BITS;
            #[inline(always)]
            fn key(b: $bits) -> u64 {
                // Branch-free (selects): the sign of random data is unpredictable.
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                let abs = b & !SIGN;
                // -0.0 sorts as +0.0.
                let b = if abs == 0 { 0 } else { b };
                // Negative: all bits flipped; positive: the sign bit set.
                let mask = (((b as $signed) >> (<$bits>::BITS - 1)) as $bits) | SIGN;
                let k = if abs > $exp { <$bits>::MAX } else { b ^ mask };
                k as u64
            }
            #[inline(always)]
            fn unkey(key: u64) -> Option<$bits> {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                let k = key as $bits;
                if k == <$bits>::MAX || k == SIGN {
                    None
                } else if k & SIGN != 0 {
                    Some(k & !SIGN)
                } else {
                    Some(!k)
                }
            }
        }
    )*};
}
float_keys!(f16 => u16, i16, 0x7c00; bf16 => u16, i16, 0x7f80; f32 => u32, i32, 0x7f80_0000;
    f64 => u64, i64, 0x7ff0_0000_0000_0000);

/// The mask that inverts a key of `E` (a descending sort, topk's `largest`).
#[inline(always)]
fn key_mask<E: SortElem>() -> u64 {
    u64::MAX >> (64 - E::KEY_BITS)
}

// ---------------------------------------------------------------------------------------------
// Packed (key, index) pairs and the radix sort

/// A key and an index packed into one integer, the key in the high bits: ordering the packed
/// values orders by key, then by index.
pub trait Packed: Copy + Ord + Default + Send + Sync + 'static {
    /// Where the key starts.
    const KEY_SHIFT: u32;
    /// The longest line whose indices fit.
    const MAX_LEN: usize;
    fn pack(key: u64, idx: usize) -> Self;
    fn idx(self) -> usize;
    fn key(self) -> u64;
    /// Byte `b` of the key (0: the least significant).
    fn byte(self, b: u32) -> usize;
}

impl Packed for u64 {
    const KEY_SHIFT: u32 = 32;
    const MAX_LEN: usize = 1 << 32;
    #[inline(always)]
    fn pack(key: u64, idx: usize) -> u64 {
        (key << 32) | idx as u64
    }
    #[inline(always)]
    fn idx(self) -> usize {
        self as u32 as usize
    }
    #[inline(always)]
    fn key(self) -> u64 {
        self >> 32
    }
    #[inline(always)]
    fn byte(self, b: u32) -> usize {
        ((self >> (32 + 8 * b)) & 0xff) as usize
    }
}

impl Packed for u128 {
    const KEY_SHIFT: u32 = 64;
    const MAX_LEN: usize = usize::MAX;
    #[inline(always)]
    fn pack(key: u64, idx: usize) -> u128 {
        (u128::from(key) << 64) | idx as u128
    }
    #[inline(always)]
    fn idx(self) -> usize {
        self as u64 as usize
    }
    #[inline(always)]
    fn key(self) -> u64 {
        (self >> 64) as u64
    }
    #[inline(always)]
    fn byte(self, b: u32) -> usize {
        ((self >> (64 + 8 * b)) as u64 & 0xff) as usize
    }
}

/// Lines at least this long are radix sorted; shorter ones compared.
pub const RADIX_MIN: usize = 256;

/// The byte histograms of the keys of a line, one per key byte.
type Histograms = [[u32; 256]; 8];

/// Least-significant-digit radix sort of `a` by its keys' `key_bytes` bytes, whose histograms
/// are `counts`; `tmp` is scratch of `a`'s length. Stable, so the indices of equal keys stay
/// in order. Returns the buffer that holds the result.
fn radix_sort<'a, P: Packed>(
    a: &'a mut [P],
    tmp: &'a mut [P],
    counts: &Histograms,
    key_bytes: u32,
) -> &'a [P] {
    let n = a.len();
    let (mut src, mut dst) = (a, tmp);
    for b in 0..key_bytes {
        let count = &counts[b as usize];
        // A byte on which every key agrees orders nothing.
        if count[src[0].byte(b)] as usize == n {
            continue;
        }
        let mut offsets = [0u32; 256];
        let mut sum = 0u32;
        for (o, &c) in offsets.iter_mut().zip(count) {
            *o = sum;
            sum += c;
        }
        for &p in src.iter() {
            let d = p.byte(b);
            dst[offsets[d] as usize] = p;
            offsets[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
    }
    src
}

/// Sorts `items` (packed keys of `key_bytes` bytes, their histograms in `counts` when
/// `counted`), with `tmp` as scratch; returns the sorted slice.
fn sort_packed<'a, P: Packed>(
    items: &'a mut [P],
    tmp: &'a mut Vec<P>,
    counts: &Histograms,
    key_bytes: u32,
) -> &'a [P] {
    if items.len() < RADIX_MIN {
        items.sort_unstable();
        return items;
    }
    let n = items.len();
    // Every pass writes all of its destination before reading it: stale contents are fine.
    if tmp.len() < n {
        tmp.resize(n, P::default());
    }
    radix_sort(items, &mut tmp[..n], counts, key_bytes)
}

/// Per-thread scratch of the line routines, reused across the lines of a chunk.
struct Scratch<B, P> {
    bits: Vec<B>,
    items: Vec<P>,
    tmp: Vec<P>,
}

impl<B, P> Default for Scratch<B, P> {
    fn default() -> Self {
        Scratch {
            bits: Vec::new(),
            items: Vec::new(),
            tmp: Vec::new(),
        }
    }
}

/// Reads element `i` of a line.
///
/// # Safety
/// `p + i * stride` must be a readable element of type `B` (alignment not required).
#[inline(always)]
unsafe fn at<B: Copy>(p: *const u8, stride: isize, i: usize) -> B {
    // SAFETY: per the contract.
    unsafe {
        p.wrapping_offset(i as isize * stride)
            .cast::<B>()
            .read_unaligned()
    }
}

/// Writes element `i` of a line.
///
/// # Safety
/// `p + i * stride` must be a writable element of type `B` (alignment not required).
#[inline(always)]
unsafe fn put<B: Copy>(p: *mut u8, stride: isize, i: usize, v: B) {
    // SAFETY: per the contract.
    unsafe {
        p.wrapping_offset(i as isize * stride)
            .cast::<B>()
            .write_unaligned(v)
    }
}

/// Copies a line of `n` elements into `bits` and its packed keys (inverted by `flip`) into
/// `items`, counting the key bytes' histograms when `count`.
///
/// # Safety
/// `src` at `stride` must address `n` readable elements of `E`.
unsafe fn load_line<E: SortElem, P: Packed>(
    s: &mut Scratch<E::Bits, P>,
    counts: &mut Histograms,
    count: bool,
    src: *const u8,
    stride: isize,
    n: usize,
    flip: u64,
) {
    s.bits.clear();
    s.items.clear();
    s.bits.reserve(n);
    s.items.reserve(n);
    if count {
        for c in counts.iter_mut().take((E::KEY_BITS / 8) as usize) {
            c.fill(0);
        }
    }
    for i in 0..n {
        // SAFETY: element i of the line (the contract).
        let b: E::Bits = unsafe { at(src, stride, i) };
        let key = E::key(b) ^ flip;
        s.bits.push(b);
        s.items.push(P::pack(key, i));
        if count {
            for (j, c) in counts
                .iter_mut()
                .take((E::KEY_BITS / 8) as usize)
                .enumerate()
            {
                c[((key >> (8 * j)) & 0xff) as usize] += 1;
            }
        }
    }
}

/// Writes `items` (the chosen pairs, in order) as values and int64 indices.
///
/// # Safety
/// `vals` / `idxs` at their strides must address `items.len()` writable elements of `E` /
/// int64; `bits` holds the line the indices point into.
unsafe fn store_line<E: SortElem, P: Packed>(
    items: &[P],
    bits: &[E::Bits],
    flip: u64,
    vals: *mut u8,
    vs: isize,
    idxs: *mut u8,
    is: isize,
) {
    for (j, &p) in items.iter().enumerate() {
        let i = p.idx();
        let v = E::unkey(p.key() ^ flip).unwrap_or_else(|| bits[i]);
        // SAFETY: element j of each output line (the contract).
        unsafe {
            put(vals, vs, j, v);
            put(idxs, is, j, i as i64);
        }
    }
}

/// Sorts one line of `n` elements of `E` into `vals` / `idxs` (torch's `sort_kernel_impl`,
/// stable in every case).
///
/// # Safety
/// As [`load_line`] for `src` and [`store_line`] for the outputs (`n` elements each). The
/// input is read whole before anything is written, so the outputs may be the input.
#[allow(clippy::too_many_arguments)]
unsafe fn sort_line<E: SortElem, P: Packed>(
    s: &mut Scratch<E::Bits, P>,
    src: *const u8,
    ss: isize,
    n: usize,
    descending: bool,
    vals: *mut u8,
    vs: isize,
    idxs: *mut u8,
    is: isize,
) {
    let flip = if descending { key_mask::<E>() } else { 0 };
    let mut counts = [[0u32; 256]; 8];
    // SAFETY: the contract.
    unsafe { load_line::<E, P>(s, &mut counts, n >= RADIX_MIN, src, ss, n, flip) };
    let Scratch { bits, items, tmp } = s;
    let sorted = sort_packed(items, tmp, &counts, E::KEY_BITS / 8);
    // SAFETY: the contract.
    unsafe { store_line::<E, P>(sorted, bits, flip, vals, vs, idxs, is) };
}

/// The `k` best elements of a line of `n`: the greatest (`largest`) or smallest, NaN counting
/// as greatest, ties to the lower index; in order when `sorted` (torch's `topk_impl_loop`).
///
/// # Safety
/// As [`sort_line`], with `k` elements in each output.
#[allow(clippy::too_many_arguments)]
unsafe fn topk_line<E: SortElem, P: Packed>(
    s: &mut Scratch<E::Bits, P>,
    src: *const u8,
    ss: isize,
    n: usize,
    k: usize,
    largest: bool,
    sorted: bool,
    vals: *mut u8,
    vs: isize,
    idxs: *mut u8,
    is: isize,
) {
    if k == 0 {
        return;
    }
    let flip = if largest { key_mask::<E>() } else { 0 };
    // Smaller ranks are better.
    // SAFETY (of every read below): elements < n of the input line.
    let rank = |i: usize| E::key(unsafe { at(src, ss, i) }) ^ flip;
    if k.saturating_mul(64) <= n {
        // torch's partial_sort case: a max-heap of the k best so far, its top the worst; a
        // later element enters only with a strictly better key (its index is greater).
        let mut heap: BinaryHeap<P> = (0..k).map(|i| P::pack(rank(i), i)).collect();
        let mut worst = heap.peek().map_or(0, |p| p.key());
        for i in k..n {
            let r = rank(i);
            if r < worst {
                if let Some(mut top) = heap.peek_mut() {
                    *top = P::pack(r, i);
                }
                worst = heap.peek().map_or(0, |p| p.key());
            }
        }
        let best = heap.into_sorted_vec();
        // Read every chosen element before writing any (the outputs may alias the input).
        s.bits.clear();
        s.bits.extend(best.iter().map(|p| {
            // SAFETY: p.idx() < n.
            unsafe { at::<E::Bits>(src, ss, p.idx()) }
        }));
        for (j, (&p, &b)) in best.iter().zip(&s.bits).enumerate() {
            // SAFETY: j < k, the outputs' length (the contract).
            unsafe {
                put(vals, vs, j, b);
                put(idxs, is, j, p.idx() as i64);
            }
        }
        return;
    }
    let mut counts = [[0u32; 256]; 8];
    let radix = sorted && k >= RADIX_MIN && k * 2 >= n;
    // SAFETY: the contract.
    unsafe { load_line::<E, P>(s, &mut counts, radix, src, ss, n, flip) };
    let Scratch { bits, items, tmp } = s;
    let chosen: &[P] = if radix {
        // Most of the line is kept: sort it all.
        &sort_packed(items, tmp, &counts, E::KEY_BITS / 8)[..k]
    } else {
        if k < n {
            items.select_nth_unstable(k - 1);
        }
        let best = &mut items[..k];
        if sorted {
            best.sort_unstable();
        }
        best
    };
    // SAFETY: the contract.
    unsafe { store_line::<E, P>(chosen, bits, flip, vals, vs, idxs, is) };
}

/// The `k`-th smallest element (1-based) of a line of `n` and its index, NaN counting as
/// greatest, ties to the lower index (torch's quick_select in `kthvalue_out_impl_cpu`).
///
/// # Safety
/// As [`sort_line`], with one element in each output.
#[allow(clippy::too_many_arguments)]
unsafe fn kthvalue_line<E: SortElem, P: Packed>(
    s: &mut Scratch<E::Bits, P>,
    src: *const u8,
    ss: isize,
    n: usize,
    k: usize,
    val: *mut u8,
    idx: *mut u8,
) {
    let mut counts = [[0u32; 256]; 8];
    // SAFETY: the contract.
    unsafe { load_line::<E, P>(s, &mut counts, false, src, ss, n, 0) };
    let (_, &mut p, _) = s.items.select_nth_unstable(k - 1);
    // SAFETY: the contract.
    unsafe { store_line::<E, P>(&[p], &s.bits, 0, val, 0, idx, 0) };
}

// ---------------------------------------------------------------------------------------------
// The walk over lines

/// `t` without dimension `dim` (its first element's view of every line along `dim`) and
/// `dim`'s byte stride.
fn squash(t: &Tensor, dim: usize) -> Result<(TensorBase, isize)> {
    let mut sizes = t.sizes().to_vec();
    let mut strides = t.strides().to_vec();
    let stride = strides[dim] as isize * t.element_size() as isize;
    sizes.remove(dim);
    strides.remove(dim);
    Ok((t.as_strided(&sizes, &strides)?.into_base(), stride))
}

/// `_dim_apply` (`declare_static_shape(sizes, squash_dims=dim)`): runs `line(scratch, ptrs)`
/// for every line along `dim`, where `ptrs` are the lines' first elements in each of `outputs`
/// and then `input`; `strides` receives their byte strides along `dim`. Every tensor has the
/// same sizes but along `dim`. Lines run in parallel, about `GRAIN_SIZE` elements (of lines of
/// `len`) per task; each task has its own `S`.
///
/// # Safety
/// `line` may touch only the elements of each line (at those strides, of the lengths the
/// tensors have along `dim`), as the dtypes of the tensors they belong to.
unsafe fn for_each_line<S: Default>(
    outputs: &[&Tensor],
    input: &Tensor,
    dim: usize,
    len: usize,
    line: impl Fn(&mut S, &[*mut u8], &[isize]) + Sync,
) -> Result<()> {
    let mut config = TensorIteratorConfig::new()
        .set_check_mem_overlap(false)
        .check_all_same_dtype(false)
        .resize_outputs(false);
    let mut along: smallvec::SmallVec<[isize; 3]> = smallvec::SmallVec::new();
    for o in outputs {
        let (view, s) = squash(o, dim)?;
        along.push(s);
        config = config.add_output(MaybeOwnedOutput(Some(Cow::Owned(view))))?;
    }
    let (view, s) = squash(input, dim)?;
    along.push(s);
    let iter = config.add_const_input(view).build_standalone()?;
    if iter.is_meta() {
        return Ok(());
    }
    let nt = along.len();
    let grain = (GRAIN_SIZE / len.max(1) as i64).max(1);
    let body = |data: &[*mut u8], strides: &[isize], n0: usize, n1: usize| {
        let mut scratch = S::default();
        let mut ptrs: smallvec::SmallVec<[*mut u8; 3]> = smallvec::SmallVec::from_slice(data);
        for j in 0..n1 {
            for i in 0..n0 {
                for k in 0..nt {
                    ptrs[k] = data[k]
                        .wrapping_offset(i as isize * strides[k] + j as isize * strides[nt + k]);
                }
                line(&mut scratch, &ptrs, &along);
            }
        }
    };
    iter.for_each(&body, grain)
}

/// Runs `$body` with `$E` the element type of `$dt` among the real types, `$P` the packing
/// its keys take for lines of `$n`.
macro_rules! dispatch_sort {
    ($dt:expr, $name:expr, $bool:expr, $n:expr, $E:ident, $P:ident => $body:expr) => {{
        macro_rules! with_packing {
            ($t:ty) => {{
                type $E = $t;
                if <$t as SortElem>::KEY_BITS <= 32 && $n <= <u64 as Packed>::MAX_LEN {
                    type $P = u64;
                    $body
                } else {
                    type $P = u128;
                    $body
                }
            }};
        }
        match $dt {
            // sort takes bool and the barebones unsigned types; topk and kthvalue do not
            // (torch's dispatch lists).
            ScalarType::Bool if $bool => with_packing!(bool),
            ScalarType::UInt16 if $bool => with_packing!(u16),
            ScalarType::UInt32 if $bool => with_packing!(u32),
            ScalarType::UInt64 if $bool => with_packing!(u64),
            ScalarType::Byte => with_packing!(u8),
            ScalarType::Char => with_packing!(i8),
            ScalarType::Short => with_packing!(i16),
            ScalarType::Int => with_packing!(i32),
            ScalarType::Long => with_packing!(i64),
            ScalarType::Half => with_packing!(f16),
            ScalarType::BFloat16 => with_packing!(bf16),
            ScalarType::Float => with_packing!(f32),
            ScalarType::Double => with_packing!(f64),
            d => Err(not_implemented($name, d)),
        }
    }};
}

/// `sort_stub`: sorts every line of `input` along `dim` into `values` and `indices` (both of
/// `input`'s shape; `values` may be `input`). Stable whatever `stable` says.
pub fn sort_kernel(
    input: &Tensor,
    values: &Tensor,
    indices: &Tensor,
    dim: usize,
    descending: bool,
) -> Result<()> {
    let n = input.sizes()[dim] as usize;
    if input.numel() == 0 {
        return Ok(());
    }
    dispatch_sort!(input.dtype(), "sort_cpu", true, n, E, P => {
        let line = |s: &mut Scratch<<E as SortElem>::Bits, P>, p: &[*mut u8], st: &[isize]| {
            // SAFETY: the lines of values, indices and input, n elements each, of their dtypes.
            unsafe { sort_line::<E, P>(s, p[2], st[2], n, descending, p[0], st[0], p[1], st[1]) }
        };
        // SAFETY: `line` touches the n elements of each line, as E, int64 and E.
        unsafe { for_each_line(&[values, indices], input, dim, n, line) }
    })
}

/// `topk_stub`: the `k` best elements of every line of `input` along `dim` into `values` and
/// `indices` (`input`'s shape with `k` along `dim`).
#[allow(clippy::too_many_arguments)]
pub fn topk_kernel(
    values: &Tensor,
    indices: &Tensor,
    input: &Tensor,
    k: usize,
    dim: usize,
    largest: bool,
    sorted: bool,
) -> Result<()> {
    let n = input.sizes()[dim] as usize;
    dispatch_sort!(input.dtype(), "topk_cpu", false, n, E, P => {
        if values.numel() == 0 {
            return Ok(());
        }
        let line = |s: &mut Scratch<<E as SortElem>::Bits, P>, p: &[*mut u8], st: &[isize]| {
            // SAFETY: the lines of values and indices (k elements) and input (n), of their
            // dtypes.
            unsafe {
                topk_line::<E, P>(s, p[2], st[2], n, k, largest, sorted, p[0], st[0], p[1], st[1])
            }
        };
        // SAFETY: as above.
        unsafe { for_each_line(&[values, indices], input, dim, n, line) }
    })
}

/// The loop of `kthvalue_out_impl_cpu`: the `k`-th smallest element of every line of `input`
/// along `dim` into `values` and `indices` (`input`'s shape with 1 along `dim`).
pub fn kthvalue_kernel(
    values: &Tensor,
    indices: &Tensor,
    input: &Tensor,
    k: usize,
    dim: usize,
) -> Result<()> {
    let n = input.sizes()[dim] as usize;
    dispatch_sort!(input.dtype(), "kthvalue_cpu", false, n, E, P => {
        if values.numel() == 0 {
            return Ok(());
        }
        let line = |s: &mut Scratch<<E as SortElem>::Bits, P>, p: &[*mut u8], st: &[isize]| {
            // SAFETY: one element of values and indices, the n of the input line, of their
            // dtypes.
            unsafe { kthvalue_line::<E, P>(s, p[2], st[2], n, k, p[0], p[1]) }
        };
        // SAFETY: as above.
        unsafe { for_each_line(&[values, indices], input, dim, n, line) }
    })
}
