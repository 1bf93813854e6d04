//! Storage (c10::Storage / StorageImpl): the memory that a tensor and all its views share.
//!
//! A StorageImpl carries its own reader-writer access lock (see [`crate::access`]): the data
//! pointer is only handed out under that lock, and it only changes (a resize that needs more
//! memory) under the exclusive lock. Storages only grow, so a view checked in bounds once stays
//! in bounds for as long as the storage lives.

use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::lock_api::RawRwLock as _;
use parking_lot::RawRwLock;

use crate::access::StorageAccess;
use crate::allocator::{allocator_ref, Allocator, AllocatorRef, DataPtr, ALIGNMENT};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::object_cache::CachedArc;

/// c10::StorageImpl.
pub struct StorageImpl {
    pub(crate) lock: RawRwLock,
    /// Replaced only while `lock` is held exclusively; read only while it is held.
    data: UnsafeCell<DataPtr>,
    /// Logical size in bytes. Only grows; always <= data.capacity() (except meta storages,
    /// which own no data).
    nbytes: AtomicUsize,
    allocator: AllocatorRef,
    resizable: bool,
    device: Device,
    /// The alignment the data pointer is guaranteed to have for the storage's whole life:
    /// [`ALIGNMENT`] for allocator memory (also after a grow), the pointer's own alignment
    /// (capped at ALIGNMENT) for foreign memory, which never moves. Tensors check their
    /// dtype's alignment against it (`check_in_bounds_for_storage`).
    alignment: usize,
}

// SAFETY: `data` is only mutated under the exclusive lock and only read under a lock, so
// sharing a StorageImpl between threads cannot race on it; the rest are atomics or immutable.
unsafe impl Sync for StorageImpl {}
// SAFETY: DataPtr is Send; nothing in StorageImpl is tied to a thread.
unsafe impl Send for StorageImpl {}

/// A shared handle to a StorageImpl (cheap to clone). The StorageImpl's block comes from a
/// per-thread cache, and a small CPU storage keeps its data in the same block.
#[derive(Clone)]
pub struct Storage(CachedArc<StorageImpl>);

/// CPU storages of up to this many bytes from the built-in allocator keep their data inside
/// the StorageImpl's block (one allocation for both; a scalar or a tiny tensor).
pub(crate) const INLINE_DATA: usize = 64;

impl Storage {
    /// A storage of `nbytes` bytes from the device's allocator (contents unspecified but
    /// initialised).
    pub fn new(nbytes: usize, device: Device) -> Result<Storage> {
        let allocator = allocator_ref(device.device_type)?;
        Self::with_allocator_ref(nbytes, allocator, device, false)
    }

    /// A storage of `nbytes` zero bytes.
    pub fn new_zeroed(nbytes: usize, device: Device) -> Result<Storage> {
        let allocator = allocator_ref(device.device_type)?;
        Self::with_allocator_ref(nbytes, allocator, device, true)
    }

    /// A resizable storage from a given allocator.
    pub fn with_allocator(
        nbytes: usize,
        allocator: Arc<dyn Allocator>,
        device: Device,
        zeroed: bool,
    ) -> Result<Storage> {
        Self::with_allocator_ref(nbytes, AllocatorRef::Other(allocator), device, zeroed)
    }

    #[inline]
    fn with_allocator_ref(
        nbytes: usize,
        allocator: AllocatorRef,
        device: Device,
        zeroed: bool,
    ) -> Result<Storage> {
        if nbytes > isize::MAX as usize {
            return Err(Error::runtime(format!(
                "Storage size calculation overflowed: {nbytes} bytes"
            )));
        }
        if matches!(allocator, AllocatorRef::Cpu) {
            if let Some(s) = Self::new_small_cpu(nbytes, device) {
                return Ok(s);
            }
        }
        let data = if zeroed {
            allocator.get().allocate_zeroed(nbytes)?
        } else {
            allocator.get().allocate(nbytes)?
        };
        Self::check_data(&data, nbytes, device)?;
        Ok(Storage(CachedArc::new(StorageImpl {
            lock: RawRwLock::INIT,
            data: UnsafeCell::new(data),
            nbytes: AtomicUsize::new(nbytes),
            allocator,
            resizable: true,
            device,
            alignment: ALIGNMENT,
        })))
    }

    /// A storage of `nbytes` (1..=INLINE_DATA) from the built-in CPU allocator, its data in
    /// the StorageImpl's own block (zeroed); None for other sizes. Inlined into `empty`: no
    /// call, no allocator dispatch, nothing to check (the tail's size and alignment are
    /// constants).
    #[inline(always)]
    pub(crate) fn new_small_cpu(nbytes: usize, device: Device) -> Option<Storage> {
        let inline =
            nbytes > 0 && nbytes <= INLINE_DATA && CachedArc::<StorageImpl>::tail_fits(INLINE_DATA);
        if !inline {
            return None;
        }
        Some(Storage(CachedArc::with_tail(INLINE_DATA, |tail| {
            StorageImpl {
                lock: RawRwLock::INIT,
                // SAFETY: the tail is INLINE_DATA zeroed bytes, ALIGNMENT-aligned, owned
                // by this StorageImpl's block alone and alive as long as the StorageImpl
                // (which drops the DataPtr before the block is freed).
                data: UnsafeCell::new(unsafe { DataPtr::borrowed(tail, INLINE_DATA, device) }),
                nbytes: AtomicUsize::new(nbytes),
                allocator: AllocatorRef::Cpu,
                resizable: true,
                device,
                alignment: ALIGNMENT,
            }
        })))
    }

    /// Whether this is a storage of [`Storage::new_small_cpu`] that no other handle (tensor,
    /// guard) holds: its data still in its own block, unlocked. Such a storage can be reused
    /// for a new small tensor by [`Storage::reuse_small_cpu`].
    #[inline]
    pub(crate) fn is_unique_small_cpu(&mut self) -> bool {
        let Some(s) = CachedArc::get_mut(&mut self.0) else {
            return false;
        };
        // Unique, so no guard can hold the lock (a guard keeps a handle or a snapshot, which
        // keeps one); checked anyway, it is one load.
        s.data.get_mut().is_borrowed()
            && s.data.get_mut().capacity() == INLINE_DATA
            && s.resizable
            && matches!(s.allocator, AllocatorRef::Cpu)
            && !s.lock.is_locked()
    }

    /// Turns a storage that [`Storage::is_unique_small_cpu`] accepted into a fresh one of
    /// `nbytes` on `device` (a CPU device), zeroed if asked (else it holds the previous,
    /// initialised bytes, as a reused block does).
    ///
    /// # Safety
    /// `is_unique_small_cpu` must have returned true and nothing may have reached the storage
    /// since (no other handle existed to do so); `nbytes` must be in 1..=INLINE_DATA.
    #[inline]
    pub(crate) unsafe fn reuse_small_cpu(&mut self, nbytes: usize, device: Device, zeroed: bool) {
        debug_assert!(nbytes > 0 && nbytes <= INLINE_DATA);
        // SAFETY: the caller's contract: the only handle.
        let s = unsafe { CachedArc::get_mut_unchecked(&mut self.0) };
        *s.nbytes.get_mut() = nbytes;
        s.device = device;
        let data = s.data.get_mut();
        data.set_device(device);
        if zeroed {
            if let Some(p) = data.get() {
                // SAFETY: the inline tail: INLINE_DATA bytes owned by this storage, which
                // nobody else holds (unique, checked above).
                unsafe { std::ptr::write_bytes(p.as_ptr(), 0, INLINE_DATA) };
            }
        }
    }

    /// Whether new CPU storages come from the built-in allocator (not a replaced one).
    #[inline(always)]
    pub(crate) fn cpu_allocator_is_builtin() -> bool {
        matches!(
            allocator_ref(crate::device::DeviceType::Cpu),
            Ok(AllocatorRef::Cpu)
        )
    }

    /// A storage over memory that is not resizable (like `at::from_blob` with a deleter).
    /// Unlike allocator memory, the pointer need not be [`ALIGNMENT`]-aligned (a numpy buffer
    /// is aligned to its element size only): a tensor over it must have a dtype whose
    /// alignment the pointer meets, which `TensorBase::from_storage` / `set_` check.
    pub fn from_data_ptr(data: DataPtr, nbytes: usize, device: Device) -> Result<Storage> {
        Self::check_room(&data, nbytes, device)?;
        let alignment = data.get().map_or(ALIGNMENT, |p| {
            let addr = p.as_ptr() as usize;
            1usize << addr.trailing_zeros().min(ALIGNMENT.trailing_zeros())
        });
        let allocator = allocator_ref(device.device_type).unwrap_or_else(|_| {
            AllocatorRef::Other(Arc::new(crate::allocator::MetaAllocator) as Arc<dyn Allocator>)
        });
        Ok(Storage(CachedArc::new(StorageImpl {
            lock: RawRwLock::INIT,
            data: UnsafeCell::new(data),
            nbytes: AtomicUsize::new(nbytes),
            allocator,
            resizable: false,
            device,
            alignment,
        })))
    }

    /// The alignment (a power of two, at most [`ALIGNMENT`]) that the data pointer has for
    /// the storage's whole life.
    pub fn alignment(&self) -> usize {
        self.0.alignment
    }

    fn check_room(data: &DataPtr, nbytes: usize, device: Device) -> Result<()> {
        let has_room = data.capacity() >= nbytes || data.get().is_none() && device.is_meta();
        if !has_room {
            return Err(Error::runtime(format!(
                "allocator for {device} returned {} bytes, fewer than the {nbytes} requested",
                data.capacity()
            )));
        }
        Ok(())
    }

    /// Allocator memory: room for `nbytes` and [`ALIGNMENT`]-aligned (the allocator contract).
    fn check_data(data: &DataPtr, nbytes: usize, device: Device) -> Result<()> {
        Self::check_room(data, nbytes, device)?;
        if let Some(p) = data.get() {
            if !(p.as_ptr() as usize).is_multiple_of(ALIGNMENT) {
                return Err(Error::runtime(format!(
                    "allocator for {device} returned memory not aligned to {ALIGNMENT} bytes"
                )));
            }
        }
        Ok(())
    }

    /// Logical size in bytes (`storage.nbytes()`).
    pub fn nbytes(&self) -> usize {
        self.0.nbytes.load(Ordering::Acquire)
    }
    pub fn device(&self) -> Device {
        self.0.device
    }
    pub fn resizable(&self) -> bool {
        self.0.resizable
    }
    /// Whether the storage owns data (false for meta storages and empty ones).
    pub fn has_data(&self) -> bool {
        !self.0.device.is_meta()
    }
    /// `Storage::is_alias_of`: the same StorageImpl.
    pub fn is_alias_of(&self, other: &Storage) -> bool {
        CachedArc::ptr_eq(&self.0, &other.0)
    }
    /// The StorageImpl's address (torch's `untyped_storage()._cdata`): equal for two
    /// handles exactly when they alias, and stable while any handle lives (so an id held
    /// beside a handle is never reused by another storage).
    pub fn id(&self) -> usize {
        std::ptr::from_ref(self.as_impl()) as usize
    }
    /// Number of handles to this StorageImpl.
    pub fn use_count(&self) -> usize {
        CachedArc::strong_count(&self.0)
    }
    pub(crate) fn as_impl(&self) -> &StorageImpl {
        &self.0
    }

    /// Grows the storage to at least `nbytes` (never shrinks), keeping its contents. Takes
    /// the exclusive access lock, so it fails (rather than deadlocks) if this thread is
    /// reading or writing the storage through a live access guard.
    pub fn grow(&self, nbytes: usize) -> Result<()> {
        if nbytes <= self.nbytes() {
            return Ok(());
        }
        if !self.0.resizable {
            return Err(Error::runtime(
                "Trying to resize storage that is not resizable",
            ));
        }
        if nbytes > isize::MAX as usize {
            return Err(Error::runtime(format!(
                "Storage size calculation overflowed: {nbytes} bytes"
            )));
        }
        let guard = StorageAccess::acquire(&[], &[self])?;
        let old = self.nbytes();
        if nbytes <= old {
            return Ok(());
        }
        // SAFETY: we hold the exclusive lock (guard), so nobody reads or writes `data`.
        let data = unsafe { &mut *self.0.data.get() };
        if self.0.device.is_meta() || data.capacity() >= nbytes {
            self.0.nbytes.store(nbytes, Ordering::Release);
            drop(guard);
            return Ok(());
        }
        let new = self.0.allocator.get().allocate(nbytes)?;
        Self::check_data(&new, nbytes, self.0.device)?;
        if let (Some(src), Some(dst)) = (data.get(), new.get()) {
            // SAFETY: both blocks are valid for `old` bytes (old <= capacity of each) and
            // distinct allocations; we hold the exclusive lock on the source.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_ptr(), old) };
        }
        *data = new;
        self.0.nbytes.store(nbytes, Ordering::Release);
        drop(guard);
        Ok(())
    }
}

impl StorageImpl {
    pub(crate) fn raw_lock(&self) -> &RawRwLock {
        &self.lock
    }

    /// The data pointer.
    ///
    /// # Safety
    /// The caller must hold this storage's access lock (shared or exclusive) while it calls
    /// this and for as long as it uses the pointer.
    pub(crate) unsafe fn data_ptr_locked(&self) -> Option<NonNull<u8>> {
        // SAFETY: the caller holds the lock, so no one replaces `data` concurrently.
        unsafe { (*self.data.get()).get() }
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("nbytes", &self.nbytes())
            .field("device", &self.device())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_grows_and_keeps_contents() {
        let s = Storage::new_zeroed(16, Device::CPU).unwrap();
        {
            let g = StorageAccess::acquire(&[], &[&s]).unwrap();
            let p = g.data_ptr(&s).unwrap();
            // SAFETY: 16 bytes, exclusive access.
            unsafe { std::ptr::write_bytes(p.as_ptr(), 7, 16) };
        }
        s.grow(1 << 21).unwrap();
        assert_eq!(s.nbytes(), 1 << 21);
        let g = StorageAccess::acquire(&[&s], &[]).unwrap();
        let p = g.data_ptr(&s).unwrap();
        // SAFETY: 2 MiB valid bytes under a read lock.
        let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), 1 << 21) };
        assert!(bytes[..16].iter().all(|&b| b == 7));
        // A write while this thread reads would alias: refused, not deadlocked.
        let e = s.grow(1 << 22).unwrap_err();
        assert!(e.message().contains("already holds"), "{e}");
    }

    #[test]
    fn meta_storage_has_size_but_no_data() {
        let s = Storage::new(1 << 40, Device::META).unwrap();
        assert_eq!(s.nbytes(), 1 << 40);
        assert!(!s.has_data());
        let g = StorageAccess::acquire(&[&s], &[]).unwrap();
        assert!(g.data_ptr(&s).is_none());
    }

    #[test]
    fn small_storages_are_inline_and_grow_out_of_line() {
        let s = Storage::new(12, Device::CPU).unwrap();
        assert_eq!(s.alignment(), ALIGNMENT);
        let other = Storage::new(64, Device::CPU).unwrap();
        assert_eq!(s.id(), s.clone().id());
        assert_ne!(s.id(), other.id());
        {
            let g = StorageAccess::acquire(&[], &[&s]).unwrap();
            let p = g.data_ptr(&s).unwrap();
            assert_eq!(p.as_ptr() as usize % ALIGNMENT, 0);
            // The data sits in the StorageImpl's own block, right after it.
            let imp = s.as_impl() as *const StorageImpl as usize;
            assert!(p.as_ptr() as usize > imp && (p.as_ptr() as usize) < imp + 4096);
            // SAFETY: 12 bytes (64 in fact), exclusive access.
            unsafe { std::ptr::write_bytes(p.as_ptr(), 5, 12) };
        }
        // Within the inline capacity: no move; beyond it: moved to allocator memory.
        s.grow(64).unwrap();
        s.grow(1000).unwrap();
        let g = StorageAccess::acquire(&[&s], &[]).unwrap();
        let p = g.data_ptr(&s).unwrap();
        // SAFETY: 1000 valid bytes under a read lock.
        let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), 1000) };
        assert!(bytes[..12].iter().all(|&b| b == 5));
        // A zeroed small storage reads zeros even when its block was used before.
        drop(g);
        drop(s);
        let z = Storage::new_zeroed(64, Device::CPU).unwrap();
        let g = StorageAccess::acquire(&[&z], &[]).unwrap();
        let p = g.data_ptr(&z).unwrap();
        // SAFETY: 64 valid bytes under a read lock.
        let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), 64) };
        assert!(bytes.iter().all(|&b| b == 0));
    }
}
