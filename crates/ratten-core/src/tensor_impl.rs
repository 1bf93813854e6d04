//! TensorImpl and the `TensorBase` handle (c10::TensorImpl, at::TensorBase).
//!
//! Metadata that PyTorch mutates in place (resize_, as_strided_, set_) lives in one immutable
//! [`TensorMeta`] snapshot, an `Arc` in a [`SnapshotCell`]: a read takes no lock and no atomic
//! read-modify-write (it names the snapshot in a per-thread hazard slot while it looks, see
//! [`crate::snapshot`]), and yields a consistent (storage, sizes, strides, offset) tuple;
//! `meta_arc()` adds one reference count, [`TensorBase::with_meta`] borrows. A write builds a
//! new snapshot and swaps it in (writers serialise on the cell's mutex); the replaced one is
//! freed only when no reader names it. A reader holding an old snapshot keeps it valid: a
//! kernel that started before a resize finishes on the old, still in-bounds, view. A held
//! snapshot never blocks a writer, even on the same thread.
//!
//! A small CPU tensor (data inside its storage's block) whose TensorImpl, snapshot and
//! storage nobody else holds is not torn down when its last handle drops: the whole of it is
//! kept as a spare, and the next small `empty` on that thread rewrites its geometry, dtype and
//! storage size (a few stores) instead of building three objects; the blocks of the objects
//! that are torn down are kept too. The caches, what they may hold and when, are
//! Note [Per-thread object caches] (`object_cache.rs`); this module supplies the two steps
//! that touch a TensorImpl's fields: [`TensorImpl::prepare_spare`] (what a spare must not
//! keep) and `TensorImpl::reuse_spare` (making it fresh).
//!
//! A TensorImpl has a slot for autograd metadata (c10's `autograd_meta_`), empty until an
//! autograd implementation fills it: see [`crate::autograd_meta`].
//!
//! (An `ArcSwap` gave wait-free reads too, but destroying one scans every thread's debt
//! slots, which every temporary tensor paid; a SnapshotCell's drop scans nothing, since no
//! reader can outlive the tensor it borrows.)

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use smallvec::SmallVec;

use crate::access::TensorAccess;
use crate::autograd_meta::AutogradMetaSlot;
use crate::device::{Device, DeviceType};
use crate::dispatch_key_set::DispatchKeySet;
use crate::dtype::{Element, ScalarType};
use crate::error::{Error, Result};
use crate::object_cache::{self, CachedArc};
use crate::scalar::{Scalar, ScalarConvert};
use crate::snapshot::SnapshotCell;
use crate::storage::{Storage, INLINE_DATA};

/// Sizes or strides: up to 6 dimensions inline, no heap allocation.
pub type DimVec = SmallVec<[i64; 6]>;

/// A consistent snapshot of a tensor's view of its storage.
pub struct TensorMeta {
    storage: Storage,
    dims: Dims,
    storage_offset: i64,
    numel: i64,
    is_contiguous: bool,
}

impl std::fmt::Debug for TensorMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorMeta")
            .field("storage", &self.storage)
            .field("sizes", &self.sizes())
            .field("strides", &self.strides())
            .field("storage_offset", &self.storage_offset)
            .field("numel", &self.numel)
            .field("is_contiguous", &self.is_contiguous)
            .finish()
    }
}

/// Dimensions kept in place (sizes and strides of up to this many dimensions).
const INLINE_DIMS: usize = 6;

/// Sizes and strides: in place for up to INLINE_DIMS dimensions (sizes in the first half of
/// `inline`, strides in the second), else on the heap (sizes then strides). Unlike two
/// SmallVecs, a new tensor's dims are written element by element into the snapshot's block:
/// no buffers built on the stack and moved, no capacity words.
struct Dims {
    ndim: usize,
    inline: [i64; 2 * INLINE_DIMS],
    heap: Option<Box<[i64]>>,
}

impl Dims {
    fn new(sizes: &[i64], strides: &[i64]) -> Dims {
        let ndim = sizes.len();
        if ndim <= INLINE_DIMS {
            let mut inline = [0; 2 * INLINE_DIMS];
            inline[..ndim].copy_from_slice(sizes);
            inline[INLINE_DIMS..INLINE_DIMS + ndim].copy_from_slice(strides);
            Dims {
                ndim,
                inline,
                heap: None,
            }
        } else {
            Dims {
                ndim,
                inline: [0; 2 * INLINE_DIMS],
                heap: Some(sizes.iter().chain(strides).copied().collect()),
            }
        }
    }
    #[inline(always)]
    fn sizes(&self) -> &[i64] {
        match &self.heap {
            None => &self.inline[..self.ndim.min(INLINE_DIMS)],
            Some(h) => &h[..self.ndim],
        }
    }
    #[inline]
    fn strides(&self) -> &[i64] {
        match &self.heap {
            None => &self.inline[INLINE_DIMS..INLINE_DIMS + self.ndim.min(INLINE_DIMS)],
            Some(h) => &h[self.ndim..],
        }
    }
}

impl TensorMeta {
    /// The snapshot of a fresh contiguous tensor (`empty`), built in its Arc: strides
    /// computed here, numel given (already checked by the caller).
    #[inline]
    fn contiguous(storage: Storage, sizes: &[i64], numel: i64) -> Arc<TensorMeta> {
        // A recycled snapshot block (see `object_cache::recycle_meta`), else a new one; either
        // way unique and uninitialised, written field by field (building the snapshot on the
        // stack and moving it into `Arc::new` cost memcpy calls for its ~150 bytes).
        let block = object_cache::meta_block();
        let p = Arc::into_raw(block).cast::<TensorMeta>().cast_mut();
        // SAFETY: `p` points at the uninitialised TensorMeta of an Arc nobody else can see
        // (fresh, or taken from the cache, which holds only unique ones); every field is
        // written once, after which it is initialised, and the Arc is rebuilt from the
        // pointer it came from (MaybeUninit<T> has T's size and alignment).
        unsafe {
            std::ptr::addr_of_mut!((*p).storage).write(storage);
            std::ptr::addr_of_mut!((*p).numel).write(numel);
            std::ptr::addr_of_mut!((*p).is_contiguous).write(true);
            std::ptr::addr_of_mut!((*p).storage_offset).write(0);
            let dims = std::ptr::addr_of_mut!((*p).dims);
            let n = sizes.len();
            if n <= INLINE_DIMS {
                // Row-major strides (0 sizes count as 1), written from the last dimension.
                let inline = std::ptr::addr_of_mut!((*dims).inline);
                inline.write([0; 2 * INLINE_DIMS]);
                let inline = &mut *inline;
                let mut stride = 1i64;
                for d in (0..n).rev() {
                    inline[d] = sizes[d];
                    inline[INLINE_DIMS + d] = stride;
                    stride = stride.saturating_mul(sizes[d].max(1));
                }
                std::ptr::addr_of_mut!((*dims).heap).write(None);
                std::ptr::addr_of_mut!((*dims).ndim).write(n);
            } else {
                dims.write(Dims::new(sizes, &contiguous_strides(sizes)));
            }
            Arc::from_raw(p)
        }
    }

    /// Takes the snapshot at `p` apart in place for its block to be reused: moves the storage
    /// out (returned) and drops the dimension vectors; afterwards no field is live.
    ///
    /// # Safety
    /// `p` must point at an initialised TensorMeta that nobody else can reach (a unique Arc's),
    /// and must be treated as uninitialised afterwards.
    pub(crate) unsafe fn take_apart(p: *mut TensorMeta) -> Storage {
        // SAFETY: the caller's contract: initialised, unreachable by others, never read again.
        unsafe {
            let storage = std::ptr::read(std::ptr::addr_of!((*p).storage));
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*p).dims));
            storage
        }
    }

    fn new(storage: Storage, sizes: &[i64], strides: &[i64], storage_offset: i64) -> Self {
        TensorMeta {
            storage,
            // Checked by every constructor (safe_compute_numel); saturate rather than wrap.
            numel: safe_compute_numel(sizes).unwrap_or(i64::MAX),
            is_contiguous: compute_contiguous(sizes, strides),
            dims: Dims::new(sizes, strides),
            storage_offset,
        }
    }
    pub fn storage(&self) -> &Storage {
        &self.storage
    }
    #[inline]
    pub fn sizes(&self) -> &[i64] {
        self.dims.sizes()
    }
    #[inline]
    pub fn strides(&self) -> &[i64] {
        self.dims.strides()
    }
    /// Number of dimensions.
    #[inline]
    pub fn dim(&self) -> usize {
        self.dims.ndim
    }
    pub fn storage_offset(&self) -> i64 {
        self.storage_offset
    }
    pub fn numel(&self) -> i64 {
        self.numel
    }
    pub fn is_contiguous(&self) -> bool {
        self.is_contiguous
    }
}

/// `TensorImpl::compute_contiguous`: row-major, ignoring dimensions of size 1; any tensor
/// with no elements is contiguous.
pub fn compute_contiguous(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.contains(&0) {
        return true;
    }
    let mut expected = 1i64;
    for (&size, &stride) in sizes.iter().zip(strides).rev() {
        if size != 1 {
            if stride != expected {
                return false;
            }
            expected = expected.saturating_mul(size);
        }
    }
    true
}

/// Row-major strides for `sizes` (`c10::contiguous_strides`), treating 0 sizes as 1.
pub fn contiguous_strides(sizes: &[i64]) -> DimVec {
    let mut strides: DimVec = smallvec::smallvec![1; sizes.len()];
    for d in (0..sizes.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1].saturating_mul(sizes[d + 1].max(1));
    }
    strides
}

/// `check_size_nonnegative`.
pub fn check_size_nonnegative(sizes: &[i64]) -> Result<()> {
    if let Some(&x) = sizes.iter().find(|&&x| x < 0) {
        return Err(Error::runtime(format!(
            "Trying to create tensor with negative dimension {x}: {sizes:?}"
        )));
    }
    Ok(())
}

/// `computeStorageNbytes(sizes, strides, itemsize, offset)`: bytes needed from the start of
/// the storage, or None on overflow. 0 for a tensor with no elements.
pub fn compute_storage_nbytes(
    sizes: &[i64],
    strides: &[i64],
    itemsize: usize,
    storage_offset: i64,
) -> Option<u64> {
    let mut extent: u64 = 1;
    for (&size, &stride) in sizes.iter().zip(strides) {
        if size == 0 {
            return Some(0);
        }
        let span = (size as u64 - 1).checked_mul(stride as u64)?;
        extent = extent.checked_add(span)?;
    }
    extent
        .checked_add(storage_offset as u64)?
        .checked_mul(itemsize as u64)
}

/// `checkInBoundsForStorage`, with PyTorch's message. Requires non-negative sizes, strides
/// and offset (checked by the callers).
pub fn check_in_bounds_for_storage(
    sizes: &[i64],
    strides: &[i64],
    storage_offset: i64,
    dtype: ScalarType,
    storage: &Storage,
) -> Result<()> {
    let itemsize = dtype.element_size();
    // Foreign memory (Storage::from_data_ptr) may be aligned less than allocator memory; a
    // kernel reading T through a misaligned pointer would be undefined behaviour.
    let align = if dtype.is_complex() {
        itemsize / 2
    } else {
        itemsize
    };
    if storage.alignment() < align {
        return Err(Error::runtime(format!(
            "setStorage: the storage's data is aligned to {} bytes, but dtype {dtype} needs {align}",
            storage.alignment()
        )));
    }
    let overflow = || {
        Error::runtime(format!(
            "Storage size calculation overflowed with sizes={sizes:?} and strides={strides:?}"
        ))
    };
    let without_offset =
        compute_storage_nbytes(sizes, strides, itemsize, 0).ok_or_else(overflow)?;
    if without_offset == 0 {
        // A tensor with no elements may sit anywhere.
        return Ok(());
    }
    let with_offset =
        compute_storage_nbytes(sizes, strides, itemsize, storage_offset).ok_or_else(overflow)?;
    let have = storage.nbytes() as u64;
    if with_offset > have {
        return Err(Error::runtime(format!(
            "setStorage: sizes {sizes:?}, strides {strides:?}, storage offset {storage_offset}, \
             and itemsize {itemsize} requiring a storage size of {with_offset} are out of \
             bounds for storage of size {have}"
        )));
    }
    Ok(())
}

/// `safe_compute_numel`: the product of the sizes, refusing overflow (an expanded view can
/// have more elements than its storage has bytes).
pub fn safe_compute_numel(sizes: &[i64]) -> Result<i64> {
    if sizes.contains(&0) {
        return Ok(0);
    }
    sizes
        .iter()
        .try_fold(1i64, |acc, &s| acc.checked_mul(s))
        .ok_or_else(|| Error::runtime("numel: integer multiplication overflow"))
}

/// `checkAsStridedArgs`.
pub fn check_as_strided_args(sizes: &[i64], strides: &[i64], storage_offset: i64) -> Result<()> {
    if sizes.len() != strides.len() {
        return Err(Error::runtime("mismatch in length of strides and shape"));
    }
    if strides.iter().any(|&s| s < 0) {
        return Err(Error::runtime(format!(
            "as_strided: Negative strides are not supported at the moment, got strides: {strides:?}"
        )));
    }
    if storage_offset < 0 {
        return Err(Error::runtime(format!(
            "Tensor: invalid storage offset {storage_offset}"
        )));
    }
    check_size_nonnegative(sizes)?;
    safe_compute_numel(sizes).map(|_| ())
}

/// `c10::maybe_wrap_dim`: maps a possibly negative `dim` into `0..ndim`. A 0-dim tensor
/// accepts dims -1 and 0 when `wrap_scalar`.
pub fn maybe_wrap_dim(dim: i64, ndim: usize, wrap_scalar: bool) -> Result<usize> {
    let mut n = ndim as i64;
    if n == 0 {
        if !wrap_scalar {
            return Err(Error::index(format!(
                "Dimension specified as {dim} but tensor has no dimensions"
            )));
        }
        n = 1;
    }
    let (min, max) = (-n, n - 1);
    if dim < min || dim > max {
        return Err(Error::index(format!(
            "Dimension out of range (expected to be in range of [{min}, {max}], but got {dim})"
        )));
    }
    Ok(if dim < 0 { dim + n } else { dim } as usize)
}

/// The version counter shared by a tensor and its views (c10::VariableVersion). In-place
/// operations bump it; autograd compares it with the value it saved.
///
/// A TensorImpl creates its counter lazily, the first time it is bumped, asked for, or
/// shared with a view: most tensors (temporaries, outputs of functional ops) never are,
/// and a counter not yet created reads 0 as a fresh one would. A view is always given its
/// base's (then created) counter, so sharing is exactly PyTorch's.
#[derive(Clone, Debug, Default)]
pub struct VersionCounter(Arc<AtomicU32>);

impl VersionCounter {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn current(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
    /// Whether two handles share one counter.
    pub fn is_shared_with(&self, other: &VersionCounter) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// c10::TensorImpl (strided layout).
pub struct TensorImpl {
    /// Read without locks; replaced under the cell's writer mutex. Taken out (once) by
    /// `Drop` to recycle the snapshot.
    meta: ManuallyDrop<SnapshotCell<TensorMeta>>,
    dtype: ScalarType,
    device: Device,
    key_set: DispatchKeySet,
    /// Created on first use (see [`VersionCounter`]).
    version_counter: OnceLock<VersionCounter>,
    is_wrapped_number: AtomicBool,
    /// c10's `autograd_meta_`: empty until an autograd implementation sets it (Note [Autograd
    /// metadata slot]).
    autograd_meta: AutogradMetaSlot,
}

impl TensorImpl {
    /// The element type (`dtype()`), for code that holds the implementation only (the
    /// autograd metadata's `set_requires_grad` check).
    #[inline]
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }

    fn new(
        storage: Storage,
        dtype: ScalarType,
        sizes: &[i64],
        strides: &[i64],
        storage_offset: i64,
        version_counter: OnceLock<VersionCounter>,
    ) -> TensorImpl {
        let meta = TensorMeta::new(storage, sizes, strides, storage_offset);
        let mut imp = Self::with_meta(Arc::new(meta), dtype);
        imp.version_counter = version_counter;
        imp
    }

    #[inline]
    fn with_meta(meta: Arc<TensorMeta>, dtype: ScalarType) -> TensorImpl {
        let device = meta.storage.device();
        TensorImpl {
            meta: ManuallyDrop::new(SnapshotCell::new(meta)),
            dtype,
            device,
            key_set: tensor_key_set(device.device_type),
            version_counter: OnceLock::new(),
            is_wrapped_number: AtomicBool::new(false),
            autograd_meta: AutogradMetaSlot::new(),
        }
    }

    #[inline]
    pub(crate) fn autograd_meta_slot(&self) -> &AutogradMetaSlot {
        &self.autograd_meta
    }
}

/// `DispatchKeySet::for_tensor`, computed once per device type (it is pure; a race only
/// stores the same value twice). 0 marks "not yet": a tensor's set always has its backend.
#[inline]
fn tensor_key_set(device_type: DeviceType) -> DispatchKeySet {
    static CACHE: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
    let slot = &CACHE[match device_type {
        DeviceType::Cpu => 0,
        DeviceType::Cuda => 1,
        DeviceType::Meta => 2,
        DeviceType::PrivateUse1 => 3,
    }];
    match slot.load(Ordering::Relaxed) {
        0 => {
            let ks = DispatchKeySet::for_tensor(device_type);
            slot.store(ks.raw_repr(), Ordering::Relaxed);
            ks
        }
        raw => DispatchKeySet::from_raw(raw),
    }
}

impl Drop for TensorImpl {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `meta` is taken exactly once, here, and the TensorImpl is not used after.
        let meta = unsafe { ManuallyDrop::take(&mut self.meta) }.into_inner();
        object_cache::recycle_meta(meta);
    }
}

impl TensorImpl {
    /// Whether this TensorImpl, reached through its only handle, can be kept whole as a spare
    /// for the next small `empty` on this thread: its snapshot and its storage held by nobody
    /// else, the storage a small CPU one (data in its own block), the dims in place. Clears
    /// what a fresh tensor does not have (a version counter, the wrapped-number mark, the
    /// autograd metadata). See Note [Per-thread object caches].
    #[inline]
    pub(crate) fn prepare_spare(&mut self) -> bool {
        let Some(m) = self.meta.unique_mut() else {
            return false;
        };
        if m.dims.heap.is_some() || !m.storage.is_unique_small_cpu() {
            return false;
        }
        self.version_counter.take();
        *self.is_wrapped_number.get_mut() = false;
        self.autograd_meta.clear();
        true
    }

    /// Makes a spare the fresh contiguous tensor `empty(sizes, dtype, device)` would make:
    /// `numel` elements of `nbytes` bytes on a CPU device. Nothing is checked again: what
    /// `prepare_spare` accepted cannot have changed, since nothing could reach the spare.
    ///
    /// # Safety
    /// `spare` must come from `object_cache::take_spare` (so `prepare_spare` accepted it and it
    /// is its only handle); `nbytes` in 1..=INLINE_DATA; at most INLINE_DIMS sizes.
    #[inline]
    unsafe fn reuse_spare(
        spare: &mut CachedArc<TensorImpl>,
        sizes: &[i64],
        numel: i64,
        nbytes: usize,
        dtype: ScalarType,
        device: Device,
        zeroed: bool,
    ) {
        let n = sizes.len();
        debug_assert!(n <= INLINE_DIMS);
        // SAFETY (the three accesses): the caller's contract. The spare's handle, snapshot and
        // storage were each found unique by `prepare_spare`, and a spare is reachable only
        // from the cache, so they still are.
        let imp = unsafe { CachedArc::get_mut_unchecked(spare) };
        let m = unsafe { imp.meta.unique_mut_unchecked() };
        unsafe { m.storage.reuse_small_cpu(nbytes, device, zeroed) };
        // Row-major strides (0 sizes count as 1), as `TensorMeta::contiguous` writes them;
        // the slots past `n` keep old values, which nothing reads (sizes/strides slice [..n]).
        let mut stride = 1i64;
        for d in (0..n).rev() {
            m.dims.inline[d] = sizes[d];
            m.dims.inline[INLINE_DIMS + d] = stride;
            stride = stride.saturating_mul(sizes[d].max(1));
        }
        m.dims.ndim = n;
        m.numel = numel;
        m.is_contiguous = true;
        m.storage_offset = 0;
        imp.dtype = dtype;
        imp.device = device;
        imp.key_set = tensor_key_set(device.device_type);
    }
}

/// A cheap, clonable handle to a TensorImpl (at::TensorBase). Cloning shares the tensor (as
/// PyTorch's `Tensor b = a;` does); it never copies data.
#[derive(Clone)]
pub struct TensorBase(
    // Taken out by `Drop`, which may keep the TensorImpl as a spare (see
    // `object_cache::release_tensor`).
    ManuallyDrop<CachedArc<TensorImpl>>,
);

impl Drop for TensorBase {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: taken exactly once, here; the field is not used after.
        let t = unsafe { ManuallyDrop::take(&mut self.0) };
        object_cache::release_tensor(t);
    }
}

/// A borrowed metadata snapshot (see [`TensorBase::meta`]).
pub type MetaRef = Arc<TensorMeta>;

impl TensorBase {
    /// `at::empty`: a contiguous tensor of unspecified (but initialised) contents.
    #[inline]
    pub fn empty(sizes: &[i64], dtype: ScalarType, device: Device) -> Result<TensorBase> {
        Self::empty_impl(sizes, dtype, device, false)
    }

    /// A contiguous tensor of zero bytes (all-zero is 0, 0.0, false and 0+0j for every dtype).
    pub fn zeros(sizes: &[i64], dtype: ScalarType, device: Device) -> Result<TensorBase> {
        Self::empty_impl(sizes, dtype, device, true)
    }

    fn empty_impl(
        sizes: &[i64],
        dtype: ScalarType,
        device: Device,
        zeroed: bool,
    ) -> Result<TensorBase> {
        // One pass for both checks: a negative size (reported first, as
        // check_size_nonnegative does) and the element count's overflow.
        let mut numel = Some(1u64);
        for &s in sizes {
            if s < 0 {
                check_size_nonnegative(sizes)?;
            }
            numel = numel.and_then(|n| n.checked_mul(s as u64));
        }
        let overflow = || {
            Error::runtime(format!(
                "Storage size calculation overflowed with sizes={sizes:?}"
            ))
        };
        let numel = numel.ok_or_else(overflow)?;
        let nbytes = numel
            .checked_mul(dtype.element_size() as u64)
            .filter(|&n| n <= isize::MAX as u64)
            .ok_or_else(overflow)? as usize;
        // A small CPU tensor (a scalar, an op on a few elements): a spare of this thread made
        // fresh, else one whose storage's block holds the data (already zeroed, so `zeroed`
        // needs nothing more).
        let small_cpu = device.device_type == DeviceType::Cpu
            && nbytes > 0
            && nbytes <= INLINE_DATA
            && Storage::cpu_allocator_is_builtin();
        if small_cpu && sizes.len() <= INLINE_DIMS {
            if let Some(mut t) = object_cache::take_spare() {
                // SAFETY: a popped spare; nbytes and the dims were checked just above. numel
                // fits i64: numel * element_size <= isize::MAX was checked above.
                unsafe {
                    TensorImpl::reuse_spare(
                        &mut t,
                        sizes,
                        numel as i64,
                        nbytes,
                        dtype,
                        device,
                        zeroed,
                    )
                };
                return Ok(TensorBase(ManuallyDrop::new(t)));
            }
        }
        let small = small_cpu
            .then(|| Storage::new_small_cpu(nbytes, device))
            .flatten();
        let storage = if let Some(s) = small {
            s
        } else if zeroed {
            Storage::new_zeroed(nbytes, device)?
        } else {
            Storage::new(nbytes, device)?
        };
        // numel fits i64: numel * element_size <= isize::MAX was checked above.
        let meta = TensorMeta::contiguous(storage, sizes, numel as i64);
        // Built inside the block (not moved into it): saves a memcpy call per tensor.
        Ok(TensorBase(ManuallyDrop::new(CachedArc::with_tail(
            0,
            |_| TensorImpl::with_meta(meta, dtype),
        ))))
    }

    /// A tensor viewing `storage` (checked: sizes, strides and offset must be in bounds).
    pub fn from_storage(
        storage: Storage,
        dtype: ScalarType,
        sizes: &[i64],
        strides: &[i64],
        storage_offset: i64,
    ) -> Result<TensorBase> {
        check_as_strided_args(sizes, strides, storage_offset)?;
        check_in_bounds_for_storage(sizes, strides, storage_offset, dtype, &storage)?;
        Ok(Self::from_impl(TensorImpl::new(
            storage,
            dtype,
            sizes,
            strides,
            storage_offset,
            OnceLock::new(),
        )))
    }

    /// A contiguous tensor holding a copy of `data` with shape `sizes`.
    pub fn from_slice<T: Element>(data: &[T], sizes: &[i64]) -> Result<TensorBase> {
        check_size_nonnegative(sizes)?;
        let numel = sizes
            .iter()
            .try_fold(1u64, |acc, &s| acc.checked_mul(s as u64));
        if numel != Some(data.len() as u64) {
            return Err(Error::runtime(format!(
                "shape '{sizes:?}' is invalid for input of size {}",
                data.len()
            )));
        }
        let t = Self::empty(sizes, T::DTYPE, Device::CPU)?;
        if !data.is_empty() {
            let g = TensorAccess::write(&t)?;
            let dst = g.output(0)?.data_ptr_mut::<T>()?;
            // SAFETY: `dst` points at numel == data.len() contiguous elements of T, locked
            // exclusively; the source is a distinct Rust slice.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        }
        Ok(t)
    }

    /// Like [`from_slice`](Self::from_slice), taking the Vec.
    pub fn from_vec<T: Element>(data: Vec<T>, sizes: &[i64]) -> Result<TensorBase> {
        Self::from_slice(&data, sizes)
    }

    pub fn from_impl(imp: TensorImpl) -> TensorBase {
        TensorBase(ManuallyDrop::new(CachedArc::new(imp)))
    }

    pub fn unsafe_get_tensor_impl(&self) -> &TensorImpl {
        &self.0
    }

    /// A consistent snapshot of storage, sizes, strides and offset (lock-free: one
    /// reference count increment, and one decrement when dropped).
    #[inline]
    pub fn meta(&self) -> MetaRef {
        self.0.meta.load()
    }

    /// The snapshot as an owned Arc (what access guards keep).
    #[inline]
    pub fn meta_arc(&self) -> Arc<TensorMeta> {
        self.0.meta.load()
    }

    /// The snapshot, held without a reference count for as long as the handle lives (a
    /// hazard slot of this thread pins it; see [`crate::snapshot::Pinned`]). What a holder of
    /// the geometry for a while keeps (TensorIterator's operands); `!Send`.
    #[inline]
    pub fn meta_pinned(&self) -> crate::snapshot::Pinned<'_, TensorMeta> {
        self.0.meta.pin()
    }

    /// [`TensorBase::meta_pinned`] not bound to this handle's borrow.
    ///
    /// # Safety
    /// The tensor's implementation (hence its snapshot cell) must outlive the returned handle:
    /// some handle of this tensor must be kept alive until the pinned snapshot is dropped.
    #[inline]
    pub unsafe fn meta_pinned_unbounded(&self) -> crate::snapshot::Pinned<'static, TensorMeta> {
        // SAFETY: the caller keeps a handle, hence the implementation and its cell, alive.
        unsafe { self.0.meta.pin_unbounded() }
    }

    /// Whether `snapshot` (kept alive by the caller) is this tensor's current snapshot.
    #[inline]
    pub fn is_current_meta_ref(&self, snapshot: &TensorMeta) -> bool {
        self.0.meta.is_current_ptr(snapshot)
    }

    /// Whether `snapshot` is this tensor's current metadata snapshot, without counting a
    /// reference (for a caller that kept a snapshot and must know whether the tensor was
    /// restrided since; TensorIterator does not need it: its loops use the build's geometry).
    #[inline]
    pub fn is_current_meta(&self, snapshot: &Arc<TensorMeta>) -> bool {
        self.0.meta.is_current(snapshot)
    }

    /// Runs `f` on the current snapshot, borrowed: no reference count, no lock, no atomic
    /// read-modify-write (a hazard slot of this thread names the snapshot while `f` runs).
    /// Cheaper than [`meta_arc`](Self::meta_arc) when the snapshot is not kept. `f` may do
    /// anything, even change this tensor's metadata: the borrowed snapshot stays valid.
    #[inline]
    pub fn with_meta<R>(&self, f: impl FnOnce(&TensorMeta) -> R) -> R {
        self.0.meta.with(f)
    }

    pub fn sizes(&self) -> DimVec {
        self.with_meta(|m| DimVec::from_slice(m.sizes()))
    }
    pub fn strides(&self) -> DimVec {
        self.with_meta(|m| DimVec::from_slice(m.strides()))
    }
    /// `size(dim)`, with a negative dim counting from the end.
    pub fn size(&self, dim: i64) -> Result<i64> {
        self.with_meta(|m| Ok(m.sizes()[maybe_wrap_dim(dim, m.dim(), false)?]))
    }
    /// `stride(dim)`, with a negative dim counting from the end.
    pub fn stride(&self, dim: i64) -> Result<i64> {
        self.with_meta(|m| Ok(m.strides()[maybe_wrap_dim(dim, m.dim(), false)?]))
    }
    pub fn storage_offset(&self) -> i64 {
        self.with_meta(|m| m.storage_offset)
    }
    pub fn dim(&self) -> usize {
        self.with_meta(|m| m.dim())
    }
    pub fn numel(&self) -> i64 {
        self.with_meta(|m| m.numel)
    }
    pub fn is_contiguous(&self) -> bool {
        self.with_meta(|m| m.is_contiguous)
    }
    pub fn storage(&self) -> Storage {
        self.with_meta(|m| m.storage.clone())
    }
    pub fn dtype(&self) -> ScalarType {
        self.0.dtype
    }
    /// Same as [`dtype`](Self::dtype) (PyTorch's C++ name).
    pub fn scalar_type(&self) -> ScalarType {
        self.0.dtype
    }
    pub fn element_size(&self) -> usize {
        self.0.dtype.element_size()
    }
    /// `numel * element_size`.
    pub fn nbytes(&self) -> usize {
        (self.numel() as usize).saturating_mul(self.element_size())
    }
    pub fn device(&self) -> Device {
        self.0.device
    }
    pub fn is_cpu(&self) -> bool {
        self.0.device.is_cpu()
    }
    pub fn is_meta(&self) -> bool {
        self.0.device.is_meta()
    }
    pub fn key_set(&self) -> DispatchKeySet {
        self.0.key_set
    }
    /// `_version`.
    pub fn version(&self) -> u32 {
        self.0
            .version_counter
            .get()
            .map_or(0, VersionCounter::current)
    }
    /// The counter this tensor shares with its views (created here if it was not yet).
    pub fn version_counter(&self) -> &VersionCounter {
        self.0.version_counter.get_or_init(VersionCounter::new)
    }
    /// Marks an in-place modification (ADInplaceOrView does this for every mutated tensor).
    pub fn bump_version(&self) {
        self.version_counter().bump()
    }
    /// Whether this 0-dim tensor was made from a Python/Rust number (type promotion treats
    /// wrapped numbers like scalars).
    pub fn is_wrapped_number(&self) -> bool {
        self.0.is_wrapped_number.load(Ordering::Relaxed)
    }
    /// `set_wrapped_number`; only 0-dim tensors can be wrapped numbers.
    pub fn set_wrapped_number(&self, value: bool) -> Result<()> {
        if value && self.dim() != 0 {
            return Err(Error::runtime(format!(
                "set_wrapped_number: only a 0-dim tensor can be a wrapped number, got a \
                 {}-dim tensor",
                self.dim()
            )));
        }
        self.0.is_wrapped_number.store(value, Ordering::Relaxed);
        Ok(())
    }
    /// Whether both handles are the same TensorImpl (`is_same`).
    pub fn is_same(&self, other: &TensorBase) -> bool {
        CachedArc::ptr_eq(&self.0, &other.0)
    }
    /// Number of handles to this TensorImpl.
    pub fn use_count(&self) -> usize {
        CachedArc::strong_count(&self.0)
    }

    /// `as_strided`: a view of the same storage (sharing the version counter) with the given
    /// geometry; `storage_offset` defaults to this tensor's. Bounds are checked.
    pub fn as_strided(
        &self,
        sizes: &[i64],
        strides: &[i64],
        storage_offset: Option<i64>,
    ) -> Result<TensorBase> {
        let m = self.meta();
        let offset = storage_offset.unwrap_or(m.storage_offset);
        check_as_strided_args(sizes, strides, offset)?;
        check_in_bounds_for_storage(sizes, strides, offset, self.0.dtype, &m.storage)?;
        let mut imp = TensorImpl::new(
            m.storage.clone(),
            self.0.dtype,
            sizes,
            strides,
            offset,
            OnceLock::from(self.version_counter().clone()),
        );
        imp.key_set = self.0.key_set;
        Ok(Self::from_impl(imp))
    }

    /// A view of the same storage read as another dtype (`view.dtype`): bounds-checked with
    /// `dtype`'s element size, sharing the version counter.
    pub fn as_strided_dtype(
        &self,
        dtype: ScalarType,
        sizes: &[i64],
        strides: &[i64],
        storage_offset: i64,
    ) -> Result<TensorBase> {
        let m = self.meta();
        check_as_strided_args(sizes, strides, storage_offset)?;
        check_in_bounds_for_storage(sizes, strides, storage_offset, dtype, &m.storage)?;
        let mut imp = TensorImpl::new(
            m.storage.clone(),
            dtype,
            sizes,
            strides,
            storage_offset,
            OnceLock::from(self.version_counter().clone()),
        );
        imp.key_set = self.0.key_set;
        Ok(Self::from_impl(imp))
    }

    /// A view with the same geometry as this tensor (`alias`): a new TensorImpl sharing
    /// storage and version counter.
    pub fn alias(&self) -> TensorBase {
        let m = self.meta();
        let mut imp = TensorImpl::new(
            m.storage.clone(),
            self.0.dtype,
            m.sizes(),
            m.strides(),
            m.storage_offset,
            OnceLock::from(self.version_counter().clone()),
        );
        imp.key_set = self.0.key_set;
        Self::from_impl(imp)
    }

    fn replace_meta(&self, f: impl FnOnce(&TensorMeta) -> Result<TensorMeta>) -> Result<()> {
        let mut w = self.0.meta.write();
        let new = f(w.current())?;
        w.store(Arc::new(new));
        Ok(())
    }

    /// `as_strided_`: changes this tensor's geometry in place (bounds-checked).
    pub fn as_strided_(
        &self,
        sizes: &[i64],
        strides: &[i64],
        storage_offset: Option<i64>,
    ) -> Result<()> {
        self.replace_meta(|m| {
            let offset = storage_offset.unwrap_or(m.storage_offset);
            check_as_strided_args(sizes, strides, offset)?;
            check_in_bounds_for_storage(sizes, strides, offset, self.0.dtype, &m.storage)?;
            Ok(TensorMeta::new(m.storage.clone(), sizes, strides, offset))
        })
    }

    /// `resize_`: new sizes with contiguous strides, keeping the storage offset; the storage
    /// grows (under its exclusive lock) if it is too small. Same sizes: a no-op.
    pub fn resize_(&self, sizes: &[i64]) -> Result<()> {
        check_size_nonnegative(sizes)?;
        let strides = contiguous_strides(sizes);
        loop {
            let m = self.meta_arc();
            if m.sizes() == sizes {
                return Ok(());
            }
            let need = compute_storage_nbytes(
                sizes,
                &strides,
                self.0.dtype.element_size(),
                m.storage_offset,
            )
            .filter(|&n| n <= isize::MAX as u64)
            .ok_or_else(|| {
                Error::runtime(format!(
                    "Storage size calculation overflowed with sizes={sizes:?}"
                ))
            })?;
            // Grow before taking the metadata writer lock: waiting for the storage lock while
            // holding it could deadlock against a thread that holds the storage and wants to
            // change this tensor's metadata.
            m.storage.grow(need as usize)?;
            let mut w = self.0.meta.write();
            let now = w.current();
            if !now.storage.is_alias_of(&m.storage) || now.storage_offset != m.storage_offset {
                // A concurrent set_/as_strided_ moved the tensor: redo with the new storage.
                continue;
            }
            w.store(Arc::new(TensorMeta::new(
                m.storage.clone(),
                sizes,
                &strides,
                m.storage_offset,
            )));
            return Ok(());
        }
    }

    /// `set_(source, storage_offset, size, stride)`: makes this tensor view `storage`.
    pub fn set_(
        &self,
        storage: &Storage,
        storage_offset: i64,
        sizes: &[i64],
        strides: &[i64],
    ) -> Result<()> {
        if storage.device() != self.0.device {
            return Err(Error::runtime(format!(
                "Attempted to set the storage of a tensor on device \"{}\" to a storage on \
                 different device \"{}\".  This is no longer allowed; the devices must match.",
                self.0.device,
                storage.device()
            )));
        }
        check_as_strided_args(sizes, strides, storage_offset)?;
        check_in_bounds_for_storage(sizes, strides, storage_offset, self.0.dtype, storage)?;
        self.replace_meta(|_| {
            Ok(TensorMeta::new(
                storage.clone(),
                sizes,
                strides,
                storage_offset,
            ))
        })
    }

    /// `set_(source)`: makes this tensor share `source`'s storage and geometry.
    pub fn set_from(&self, source: &TensorBase) -> Result<()> {
        if source.dtype() != self.dtype() {
            return Err(Error::runtime(format!(
                "Could not set tensor of type {} to a tensor of type {}",
                self.dtype(),
                source.dtype()
            )));
        }
        let m = source.meta();
        self.set_(&m.storage, m.storage_offset, m.sizes(), m.strides())
    }

    /// `item()`: the value of a one-element tensor as a Scalar (Bool, Int for integral
    /// dtypes, Double for floating, ComplexDouble for complex).
    pub fn item(&self) -> Result<Scalar> {
        let numel = self.numel();
        if numel != 1 {
            return Err(Error::runtime(format!(
                "a Tensor with {numel} elements cannot be converted to Scalar"
            )));
        }
        if self.is_meta() {
            return Err(Error::runtime(
                "Tensor.item() cannot be called on meta tensors",
            ));
        }
        if !self.device().is_cpu() {
            return Err(Error::runtime(format!(
                "item: expected a tensor on cpu, got one on {}",
                self.device()
            )));
        }
        let g = TensorAccess::read(self)?;
        let t = g.input(0)?;
        crate::dispatch_all_types!(self.dtype(), T => {
            let p = t.data_ptr::<T>()?;
            // SAFETY: a one-element view, bounds-checked, read under the shared lock.
            Ok(unsafe { read_element::<T>(p) }.to_scalar())
        })
    }

    /// Reads the elements in row-major order. `T` must be the element type of the dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::runtime(format!(
                "expected scalar type {} but found {}",
                T::DTYPE,
                self.dtype()
            )));
        }
        if !self.device().is_cpu() {
            return Err(Error::runtime(format!(
                "to_vec: expected a tensor on cpu, got one on {}",
                self.device()
            )));
        }
        let g = TensorAccess::read(self)?;
        let t = g.input(0)?;
        let n = t.numel() as usize;
        if n == 0 {
            return Ok(Vec::new());
        }
        let base = t.data_ptr::<T>()?;
        let mut out = Vec::new();
        out.try_reserve_exact(n).map_err(|_| {
            Error::runtime(format!(
                "to_vec: not enough memory for {n} elements of {}",
                self.dtype()
            ))
        })?;
        let sizes = t.sizes();
        let strides = t.strides();
        let mut index: DimVec = smallvec::smallvec![0; sizes.len()];
        let mut offset: isize = 0;
        for _ in 0..n {
            // SAFETY: `offset` is sum(index[d] * strides[d]) for an index inside `sizes`, an
            // element of the bounds-checked view, read under the shared lock.
            out.push(unsafe { read_element::<T>(base.offset(offset)) });
            // Advance the row-major index, updating the offset incrementally.
            for d in (0..sizes.len()).rev() {
                index[d] += 1;
                offset += strides[d] as isize;
                if index[d] < sizes[d] {
                    break;
                }
                offset -= strides[d] as isize * sizes[d] as isize;
                index[d] = 0;
            }
        }
        Ok(out)
    }
}

/// Reads one element. A `bool` is read as a byte and normalised (storage bytes may come from
/// any dtype, and a byte other than 0 or 1 is not a valid `bool`).
///
/// # Safety
/// `p` must be valid for reading one initialised `T`.
pub(crate) unsafe fn read_element<T: Element>(p: *const T) -> T {
    if T::DTYPE == ScalarType::Bool {
        // SAFETY: the caller guarantees one readable byte; T is bool (checked through its
        // dtype), so transmute_copy between bool and T is the identity.
        unsafe {
            let b = std::ptr::read(p as *const u8) != 0;
            std::mem::transmute_copy::<bool, T>(&b)
        }
    } else {
        // SAFETY: the caller guarantees a readable initialised T; every bit pattern is valid
        // for the non-bool element types.
        unsafe { std::ptr::read(p) }
    }
}

impl std::fmt::Debug for TensorBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = self.meta();
        f.debug_struct("TensorBase")
            .field("sizes", &m.sizes())
            .field("strides", &m.strides())
            .field("storage_offset", &m.storage_offset)
            .field("dtype", &self.0.dtype)
            .field("device", &self.0.device)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::StorageAccess;

    #[test]
    fn empty_has_contiguous_strides() {
        let t = TensorBase::empty(&[2, 3, 4], ScalarType::Float, Device::CPU).unwrap();
        assert_eq!(t.sizes().as_slice(), &[2, 3, 4]);
        assert_eq!(t.strides().as_slice(), &[12, 4, 1]);
        assert_eq!((t.dim(), t.numel(), t.element_size()), (3, 24, 4));
        assert!(t.is_contiguous());
        assert_eq!(t.storage().nbytes(), 96);
        let z = TensorBase::empty(&[0, 3], ScalarType::Long, Device::CPU).unwrap();
        assert_eq!(z.strides().as_slice(), &[3, 1]);
        let e = TensorBase::empty(&[2, -1], ScalarType::Float, Device::CPU).unwrap_err();
        assert_eq!(
            e.message(),
            "Trying to create tensor with negative dimension -1: [2, -1]"
        );
        let e = TensorBase::empty(&[1 << 40, 1 << 40], ScalarType::Float, Device::CPU).unwrap_err();
        assert!(
            e.message()
                .starts_with("Storage size calculation overflowed"),
            "{e}"
        );
    }

    #[test]
    fn views_share_storage_and_version() {
        let t = TensorBase::from_slice(&[1i64, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
        let v = t.as_strided(&[3, 2], &[1, 3], Some(0)).unwrap();
        assert_eq!(v.to_vec::<i64>().unwrap(), vec![1, 4, 2, 5, 3, 6]);
        assert!(!v.is_contiguous());
        assert!(v.storage().is_alias_of(&t.storage()));
        v.bump_version();
        assert_eq!(t.version(), 1);
        let e = t.as_strided(&[2, 3], &[3, 1], Some(1)).unwrap_err();
        assert_eq!(
            e.message(),
            "setStorage: sizes [2, 3], strides [3, 1], storage offset 1, and itemsize 8 \
             requiring a storage size of 56 are out of bounds for storage of size 48"
        );
        let e = t.as_strided(&[2], &[-1], None).unwrap_err();
        assert_eq!(
            e.message(),
            "as_strided: Negative strides are not supported at the moment, got strides: [-1]"
        );
        // An empty view may sit anywhere.
        assert!(t.as_strided(&[0, 5], &[100, 100], Some(1000)).is_ok());
        // Stride 0 views can have more elements than bytes, but not more than i64 holds.
        let e = t
            .as_strided(&[1 << 40, 1 << 40], &[0, 0], Some(0))
            .unwrap_err();
        assert_eq!(e.message(), "numel: integer multiplication overflow");
        let big = t.as_strided(&[1 << 30, 1 << 30], &[0, 0], Some(0)).unwrap();
        assert_eq!(big.numel(), 1 << 60);
        assert!(big.to_vec::<i64>().is_err()); // 8 EiB: an error, not an abort
    }

    #[test]
    fn resize_grows_storage_and_set_checks_devices() {
        let t = TensorBase::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let view = t.alias();
        t.resize_(&[2, 3]).unwrap();
        assert_eq!(t.strides().as_slice(), &[3, 1]);
        assert!(t.storage().nbytes() >= 24);
        assert_eq!(&t.to_vec::<f32>().unwrap()[..2], &[1.0, 2.0]);
        // The old view still sees its two elements.
        assert_eq!(view.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        let meta = TensorBase::empty(&[4], ScalarType::Float, Device::META).unwrap();
        let e = t.set_(&meta.storage(), 0, &[4], &[1]).unwrap_err();
        assert!(
            e.message().starts_with("Attempted to set the storage"),
            "{e}"
        );
        t.set_from(&view).unwrap();
        assert_eq!(t.sizes().as_slice(), &[2]);
    }

    #[test]
    fn wrapped_numbers_are_zero_dim() {
        let t = TensorBase::from_slice(&[3i64], &[]).unwrap();
        t.set_wrapped_number(true).unwrap();
        assert!(t.is_wrapped_number());
        let u = TensorBase::from_slice(&[3i64], &[1]).unwrap();
        assert!(u.set_wrapped_number(true).is_err());
        assert_eq!(t.item().unwrap(), Scalar::Int(3));
        let e = TensorBase::from_slice(&[1u8, 2], &[2])
            .unwrap()
            .item()
            .unwrap_err();
        assert_eq!(
            e.message(),
            "a Tensor with 2 elements cannot be converted to Scalar"
        );
        let m = TensorBase::empty(&[], ScalarType::Float, Device::META).unwrap();
        assert_eq!(
            m.item().unwrap_err().message(),
            "Tensor.item() cannot be called on meta tensors"
        );
        let b = TensorBase::from_slice(&[true], &[]).unwrap();
        assert_eq!(b.item().unwrap(), Scalar::Bool(true));
    }

    #[test]
    fn wrap_dim_messages() {
        assert_eq!(maybe_wrap_dim(-1, 3, false).unwrap(), 2);
        assert_eq!(
            maybe_wrap_dim(3, 3, false).unwrap_err().message(),
            "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
        );
        assert_eq!(maybe_wrap_dim(-1, 0, true).unwrap(), 0);
        assert!(maybe_wrap_dim(0, 0, false).is_err());
    }

    #[test]
    fn the_lazy_version_counter_is_shared_like_an_eager_one() {
        let t = TensorBase::empty(&[3], ScalarType::Float, Device::CPU).unwrap();
        assert_eq!(t.version(), 0);
        t.bump_version();
        t.bump_version();
        // A view made after bumps sees them, and later bumps either way are shared.
        let v = t.as_strided(&[2], &[1], Some(1)).unwrap();
        assert_eq!(v.version(), 2);
        v.bump_version();
        assert_eq!(t.version(), 3);
        assert!(t.version_counter().is_shared_with(v.version_counter()));
        // A view of a never-bumped tensor shares too (the counter is created for it).
        let u = TensorBase::empty(&[3], ScalarType::Float, Device::CPU).unwrap();
        let w = u.alias();
        assert_eq!(w.version(), 0);
        u.bump_version();
        assert_eq!(w.version(), 1);
        // Unrelated tensors do not share.
        assert!(!t.version_counter().is_shared_with(u.version_counter()));
    }

    #[test]
    fn empty_matches_the_general_constructor() {
        for sizes in [
            &[][..],
            &[0],
            &[1],
            &[2, 0, 3],
            &[2, 3, 4],
            &[1, 2, 1, 3, 1, 2, 2],
        ] {
            let t = TensorBase::empty(sizes, ScalarType::Double, Device::CPU).unwrap();
            assert_eq!(t.strides(), contiguous_strides(sizes), "{sizes:?}");
            assert_eq!(t.numel(), safe_compute_numel(sizes).unwrap());
            assert!(t.is_contiguous());
            assert_eq!(t.storage().nbytes(), t.numel() as usize * 8);
        }
    }

    #[test]
    fn empty_checks_sizes_in_one_pass_with_the_usual_messages() {
        let f = ScalarType::Float;
        // A negative size is reported as such even after an overflowing product.
        let e = TensorBase::empty(&[i64::MAX, 4, -2], f, Device::CPU).unwrap_err();
        assert!(e.message().contains("negative dimension -2"), "{e}");
        let e = TensorBase::empty(&[1 << 40, 1 << 40], f, Device::CPU).unwrap_err();
        assert!(e.message().contains("overflowed"), "{e}");
        let e = TensorBase::empty(&[1 << 62, 2], f, Device::CPU).unwrap_err();
        assert!(e.message().contains("overflowed"), "{e}");
        // Small CPU tensors (data inside the storage's block) of every size up to the
        // block's capacity, zeroed or not, after the blocks held other data.
        for n in 1..=17 {
            let t = TensorBase::empty(&[n], f, Device::CPU).unwrap();
            let g = TensorAccess::write(&t).unwrap();
            let len = g.output(0).unwrap().numel() as usize;
            let p = g.output(0).unwrap().data_ptr_mut::<f32>().unwrap();
            // SAFETY: `len` elements of the locked output.
            unsafe { std::slice::from_raw_parts_mut(p, len).fill(7.0) };
        }
        for n in 1..=17 {
            let z = TensorBase::zeros(&[n], f, Device::CPU).unwrap();
            assert_eq!(z.to_vec::<f32>().unwrap(), vec![0.0; n as usize]);
            assert_eq!(z.storage().nbytes(), 4 * n as usize);
        }
    }

    #[test]
    fn spare_tensors_come_back_fresh_and_shared_ones_are_never_reused() {
        let f = ScalarType::Float;
        // A dropped tensor with a created version counter and the wrapped-number mark: the
        // next small tensors on this thread are fresh (new counter, no mark, new geometry).
        let t = TensorBase::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
        t.bump_version();
        let counter = t.version_counter().clone();
        let w = TensorBase::from_slice(&[5i64], &[]).unwrap();
        w.set_wrapped_number(true).unwrap();
        drop((t, w));
        for sizes in [&[2, 2][..], &[], &[0], &[3, 1, 2]] {
            let u = TensorBase::zeros(sizes, ScalarType::Double, Device::CPU).unwrap();
            assert_eq!(u.version(), 0);
            assert!(!u.version_counter().is_shared_with(&counter));
            assert!(!u.is_wrapped_number());
            assert_eq!(u.sizes().as_slice(), sizes);
            assert_eq!(u.strides(), contiguous_strides(sizes));
            assert_eq!(u.storage_offset(), 0);
            assert!(u.is_contiguous());
            assert_eq!(u.dtype(), ScalarType::Double);
            assert_eq!(u.key_set(), DispatchKeySet::for_tensor(DeviceType::Cpu));
            assert_eq!(u.storage().nbytes(), u.numel() as usize * 8);
            assert!(u.to_vec::<f64>().unwrap().iter().all(|&x| x == 0.0));
        }
        // A view outliving its base keeps the storage: the base is not reused, and neither
        // is the view's storage while a snapshot of it is held.
        let base = TensorBase::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
        let view = base.as_strided(&[2], &[2], Some(1)).unwrap();
        let held = view.meta_arc();
        drop(base);
        let fresh: Vec<_> = (0..4)
            .map(|_| TensorBase::empty(&[4], f, Device::CPU).unwrap())
            .collect();
        for t in &fresh {
            assert!(!t.storage().is_alias_of(&view.storage()));
            let g = TensorAccess::write(t).unwrap();
            let p = g.output(0).unwrap().data_ptr_mut::<f32>().unwrap();
            // SAFETY: 4 elements of the locked output.
            unsafe { std::slice::from_raw_parts_mut(p, 4).fill(-1.0) };
        }
        drop(view);
        assert_eq!((held.sizes(), held.strides()), (&[2][..], &[2][..]));
        assert_eq!(held.storage_offset(), 1);
        let g = StorageAccess::acquire(&[held.storage()], &[]).unwrap();
        let p = g.data_ptr(held.storage()).unwrap().cast::<f32>();
        // SAFETY: the storage holds 4 floats, read-locked.
        assert_eq!(
            unsafe { std::slice::from_raw_parts(p.as_ptr(), 4) },
            &[1.0, 2.0, 3.0, 4.0]
        );
    }

    #[test]
    fn dims_past_the_inline_ones_live_on_the_heap() {
        let t = TensorBase::from_slice(&(0..128i32).collect::<Vec<_>>(), &[2; 7]).unwrap();
        assert_eq!(t.dim(), 7);
        assert_eq!(t.strides().as_slice(), &[64, 32, 16, 8, 4, 2, 1]);
        // A view with more dimensions than kept in place, and one with fewer again.
        let v = t
            .as_strided(
                &[2, 2, 2, 2, 2, 2, 2, 2],
                &[64, 32, 16, 8, 4, 2, 1, 0],
                Some(0),
            )
            .unwrap();
        assert_eq!(v.sizes().as_slice(), &[2; 8]);
        assert_eq!(v.stride(-1).unwrap(), 0);
        assert_eq!(v.meta_arc().dim(), 8);
        assert_eq!(v.to_vec::<i32>().unwrap()[..4], [0, 0, 1, 1]);
        v.as_strided_(&[4, 32], &[32, 1], Some(0)).unwrap();
        assert_eq!(
            (v.sizes().as_slice(), v.strides().as_slice()),
            (&[4, 32][..], &[32, 1][..])
        );
        let shown = format!("{:?}", v.meta_arc());
        assert!(shown.contains("sizes: [4, 32]"), "{shown}");
    }

    #[test]
    fn recycled_snapshots_release_their_storage_and_shared_ones_stay_intact() {
        let t = TensorBase::empty(&[4], ScalarType::Float, Device::CPU).unwrap();
        let s = t.storage();
        assert_eq!(s.use_count(), 2);
        drop(t);
        // The snapshot may be cached for reuse, but not with the tensor's storage.
        assert_eq!(s.use_count(), 1);
        // A snapshot someone else holds is not recycled: it keeps its storage and geometry.
        let held = {
            let t = TensorBase::empty(&[2, 3], ScalarType::Float, Device::CPU).unwrap();
            t.meta_arc()
        };
        for _ in 0..3 {
            let u = TensorBase::empty(&[5], ScalarType::Int, Device::CPU).unwrap();
            assert_eq!(
                (u.sizes().as_slice(), u.strides().as_slice()),
                (&[5][..], &[1][..])
            );
            assert_eq!(u.storage().nbytes(), 20);
        }
        assert_eq!((held.sizes(), held.strides()), (&[2, 3][..], &[3, 1][..]));
        assert_eq!(held.storage().nbytes(), 24);
        // Snapshots are recycled across many tensors without mixing them up.
        let ts: Vec<_> = (1..50)
            .map(|n| TensorBase::zeros(&[n], ScalarType::Long, Device::CPU).unwrap())
            .collect();
        for (i, t) in ts.iter().enumerate() {
            assert_eq!(t.numel(), i as i64 + 1);
            assert_eq!(t.to_vec::<i64>().unwrap(), vec![0; i + 1]);
        }
    }

    #[test]
    fn is_current_meta_follows_geometry_changes() {
        let t = TensorBase::empty(&[4], ScalarType::Float, Device::CPU).unwrap();
        let m = t.meta_arc();
        assert!(t.is_current_meta(&m));
        t.as_strided_(&[2], &[2], Some(0)).unwrap();
        assert!(!t.is_current_meta(&m));
        assert!(t.is_current_meta(&t.meta_arc()));
    }
}
