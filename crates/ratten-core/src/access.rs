//! Access guards: the only way to reach tensor memory.
//!
//! A kernel names, in one call, the tensors it reads and the tensors it writes. The guard
//! deduplicates their storages (a storage both read and written is locked for writing),
//! sorts them by address and takes each storage's reader-writer lock in that global order, so
//! two kernels can never wait on each other in a cycle. While the guard lives, every storage it
//! writes is held exclusively and every storage it reads is held shared: no other thread can
//! write memory this kernel reads, or touch memory it writes. Data pointers and slices borrow
//! the guard, so they cannot outlive it.
//!
//! Nested acquisition on one thread (a kernel that calls `to_vec` on a tensor it is writing,
//! say) is tracked in a thread-local table:
//! - a nested read of a storage this thread already reads is granted without relocking
//!   (re-locking a fair RwLock behind a waiting writer would deadlock);
//! - a nested access that conflicts with what this thread holds (write after read, anything
//!   after write) is refused with an error, since its pointers would alias live borrows;
//! - a nested access to new storages that would break the global order only tries the locks
//!   and fails with an error instead of waiting, so it cannot close a deadlock cycle.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

use parking_lot::lock_api::RawRwLock as _;
use smallvec::SmallVec;

use crate::device::Device;
use crate::dtype::{Element, PodElement, ScalarType};
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageImpl};
use crate::tensor_impl::{TensorBase, TensorMeta};

#[derive(Clone, Copy)]
struct Held {
    addr: usize,
    write: bool,
    count: u32,
}

thread_local! {
    // A Vec keeps its capacity across guards, so steady state does not allocate.
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

/// `!Send` (the thread-local bookkeeping belongs to the acquiring thread) but `Sync`, so a
/// kernel may share `&guard` (and slices borrowed from it) with its worker threads.
type NotSend = PhantomData<std::sync::MutexGuard<'static, ()>>;

/// One locked storage. The pointer is kept alive by the owner of the [`LockSet`]
/// (StorageAccess keeps Storage handles, TensorAccess the metadata snapshots that hold them),
/// which drops the LockSet first; holding no refcount here saves two atomic operations per
/// storage on every kernel call.
struct Entry {
    imp: *const StorageImpl,
    write: bool,
    /// False when this thread already held the storage and we only counted a re-entry.
    locked: bool,
}

/// The locks a guard holds, released on drop.
struct LockSet {
    entries: SmallVec<[Entry; 4]>,
    _not_send: NotSend,
}

fn describe(write: bool) -> &'static str {
    if write {
        "writing"
    } else {
        "reading"
    }
}

impl LockSet {
    /// Locks the storages in `wanted` (address, storage, write). The caller must keep every
    /// storage alive until the LockSet is dropped.
    fn acquire(wanted: &mut SmallVec<[(usize, &StorageImpl, bool); 4]>) -> Result<LockSet> {
        let mut set = LockSet {
            entries: SmallVec::new(),
            _not_send: PhantomData,
        };
        set.lock_all(wanted)?;
        Ok(set)
    }

    /// Locks `wanted` into `self.entries` (which must be empty). On error nothing is held.
    fn lock_all(&mut self, wanted: &mut SmallVec<[(usize, &StorageImpl, bool); 4]>) -> Result<()> {
        // Sort by address, writers first among equals, then keep the first of each address:
        // "write wins".
        wanted.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.2.cmp(&a.2)));
        wanted.dedup_by(|b, a| a.0 == b.0);

        HELD.with(|held| {
            let mut held = held.borrow_mut();
            // Decide first, so a refusal leaves nothing half-acquired.
            let mut max_held = None;
            if !held.is_empty() {
                for &(addr, _, write) in wanted.iter() {
                    if let Some(h) = held.iter().find(|h| h.addr == addr) {
                        if h.write || write {
                            return Err(Error::runtime(format!(
                                "storage access: this thread already holds a storage for {} \
                                 and a nested access for {} would alias it; acquire all \
                                 tensors of a kernel in one TensorAccess",
                                describe(h.write),
                                describe(write)
                            )));
                        }
                    }
                }
                max_held = held.iter().map(|h| h.addr).max();
            }
            let entries = &mut self.entries;
            for &(addr, storage, write) in wanted.iter() {
                let reentry = max_held.is_some() && held.iter().any(|h| h.addr == addr);
                if reentry {
                    entries.push(Entry {
                        imp: storage,
                        write,
                        locked: false,
                    });
                    continue;
                }
                let lock = storage.raw_lock();
                // Waiting is only safe in global (address) order; a nested acquisition below
                // a storage this thread holds may only try.
                let ok = if max_held.is_some_and(|m| addr < m) {
                    if write {
                        lock.try_lock_exclusive()
                    } else {
                        lock.try_lock_shared()
                    }
                } else {
                    if write {
                        lock.lock_exclusive()
                    } else {
                        lock.lock_shared()
                    }
                    true
                };
                if !ok {
                    for e in entries.iter() {
                        // SAFETY: the storages are alive (caller) and locked by us.
                        unsafe { unlock(e) };
                    }
                    entries.clear();
                    return Err(Error::runtime(
                        "storage access: a nested access on this thread would wait for a \
                         storage out of lock order and could deadlock; acquire all tensors of \
                         a kernel in one TensorAccess",
                    ));
                }
                entries.push(Entry {
                    imp: storage,
                    write,
                    locked: true,
                });
            }
            for e in entries.iter() {
                let addr = e.imp as usize;
                match held.iter_mut().find(|h| h.addr == addr) {
                    Some(h) => h.count += 1,
                    None => held.push(Held {
                        addr,
                        write: e.write,
                        count: 1,
                    }),
                }
            }
            Ok(())
        })
    }

    fn holds(&self, storage: &StorageImpl) -> Option<&Entry> {
        self.entries.iter().find(|e| std::ptr::eq(e.imp, storage))
    }
}

/// # Safety
/// `e.imp` must be alive, and locked by `e` if `e.locked`.
unsafe fn unlock(e: &Entry) {
    if !e.locked {
        return;
    }
    // SAFETY: the caller guarantees the storage is alive and that this entry holds exactly
    // this lock in this mode.
    unsafe {
        let lock = (*e.imp).raw_lock();
        if e.write {
            lock.unlock_exclusive()
        } else {
            lock.unlock_shared()
        }
    }
}

impl Drop for LockSet {
    fn drop(&mut self) {
        // Release in reverse order of acquisition.
        for e in self.entries.iter().rev() {
            // SAFETY: the owner keeps the storages alive until after this drop.
            unsafe { unlock(e) };
        }
        let _ = HELD.try_with(|held| {
            let mut held = held.borrow_mut();
            for e in &self.entries {
                let addr = e.imp as usize;
                if let Some(i) = held.iter().position(|h| h.addr == addr) {
                    held[i].count -= 1;
                    if held[i].count == 0 {
                        held.swap_remove(i);
                    }
                }
            }
        });
    }
}

/// Locks on a set of storages, held until drop.
pub struct StorageAccess {
    // Declared first: dropped (unlocked) before the handles that keep the storages alive.
    locks: LockSet,
    _storages: SmallVec<[Storage; 4]>,
}

impl StorageAccess {
    /// Locks `reads` shared and `writes` exclusively (a storage in both is written).
    pub fn acquire(reads: &[&Storage], writes: &[&Storage]) -> Result<StorageAccess> {
        let mut wanted: SmallVec<[(usize, &StorageImpl, bool); 4]> = SmallVec::new();
        for (list, write) in [(writes, true), (reads, false)] {
            for s in list {
                wanted.push((s.addr(), s.as_impl(), write));
            }
        }
        let locks = LockSet::acquire(&mut wanted)?;
        let storages = writes.iter().chain(reads).map(|s| (*s).clone()).collect();
        Ok(StorageAccess {
            locks,
            _storages: storages,
        })
    }

    /// The data pointer of a storage this guard holds (None for meta or empty storages, or a
    /// storage the guard does not hold).
    pub fn data_ptr(&self, storage: &Storage) -> Option<NonNull<u8>> {
        self.locks.holds(storage.as_impl())?;
        // SAFETY: this guard holds the storage's lock until it is dropped; a raw pointer is
        // inert until dereferenced in unsafe code, whose author must not outlive the guard.
        unsafe { storage.as_impl().data_ptr_locked() }
    }

    /// Whether the guard holds `storage` for writing.
    pub fn is_writing(&self, storage: &Storage) -> bool {
        self.locks.holds(storage.as_impl()).is_some_and(|e| e.write)
    }
}

/// One tensor as a kernel sees it under a [`TensorAccess`]: a consistent snapshot of its
/// metadata and the data pointer of its locked storage.
pub struct AccessedTensor {
    meta: Arc<TensorMeta>,
    dtype: ScalarType,
    device: Device,
    base: Option<NonNull<u8>>,
    writable: bool,
}

impl AccessedTensor {
    pub fn sizes(&self) -> &[i64] {
        self.meta.sizes()
    }
    pub fn strides(&self) -> &[i64] {
        self.meta.strides()
    }
    pub fn storage_offset(&self) -> i64 {
        self.meta.storage_offset()
    }
    pub fn numel(&self) -> i64 {
        self.meta.numel()
    }
    pub fn dim(&self) -> usize {
        self.meta.sizes().len()
    }
    pub fn is_contiguous(&self) -> bool {
        self.meta.is_contiguous()
    }
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }
    pub fn device(&self) -> Device {
        self.device
    }
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// Pointer to the element at the storage offset, untyped. None for meta tensors. A
    /// storage of zero bytes yields a dangling, aligned pointer (its views have no elements).
    pub fn raw_data_ptr(&self) -> Option<NonNull<u8>> {
        if self.device.is_meta() {
            return None;
        }
        let base = self.base.unwrap_or(DANGLING);
        let off = self.meta.storage_offset() as usize * self.dtype.element_size();
        // wrapping_add: an empty view may carry any offset; a view with elements was
        // bounds-checked (offset included) against the storage, which never shrinks, so for
        // it this is an in-bounds add.
        NonNull::new(base.as_ptr().wrapping_add(off))
    }

    fn check_typed<T: Element>(&self) -> Result<NonNull<u8>> {
        if T::DTYPE != self.dtype {
            return Err(Error::runtime(format!(
                "expected scalar type {} but found {}",
                T::DTYPE,
                self.dtype
            )));
        }
        self.raw_data_ptr().ok_or_else(|| no_data(self.device))
    }

    /// Typed pointer to the first element (at the storage offset), for reading. Elements are
    /// at `ptr + sum(index[d] * strides[d])`; every such address is inside the storage.
    pub fn data_ptr<T: Element>(&self) -> Result<*const T> {
        Ok(self.check_typed::<T>()?.as_ptr() as *const T)
    }

    /// Typed pointer for writing; an error for a tensor the guard only reads.
    pub fn data_ptr_mut<T: Element>(&self) -> Result<*mut T> {
        if !self.writable {
            return Err(Error::runtime(
                "storage access: this tensor was acquired for reading only",
            ));
        }
        Ok(self.check_typed::<T>()?.as_ptr() as *mut T)
    }

    fn contiguous_len(&self) -> Result<usize> {
        if !self.meta.is_contiguous() {
            return Err(Error::runtime(
                "storage access: a slice needs a contiguous tensor",
            ));
        }
        Ok(self.meta.numel() as usize)
    }
}

/// Stands in for the data of zero-byte storages: non-null and aligned for every dtype.
const DANGLING: NonNull<u8> = NonNull::<CacheLine>::dangling().cast();

#[repr(align(64))]
struct CacheLine;

fn no_data(device: Device) -> Error {
    Error::runtime(format!(
        "Cannot access data pointer of Tensor that doesn't have storage (device {device})"
    ))
}

/// The guard a kernel takes on all its tensors at once (see the module docs).
pub struct TensorAccess {
    // Declared first: unlocked before the snapshots that keep the storages alive are dropped.
    _locks: LockSet,
    tensors: SmallVec<[AccessedTensor; 4]>,
    n_reads: usize,
}

// SAFETY: a shared TensorAccess only hands out metadata, raw pointer values and shared
// slices of storages it holds locked; the locks are released by the owning thread's drop
// (the guard stays !Send), so kernels may share `&guard` with their worker threads.
unsafe impl Sync for TensorAccess {}

impl TensorAccess {
    /// Acquires `reads` for reading and `writes` for writing, in one step.
    pub fn new(reads: &[&TensorBase], writes: &[&TensorBase]) -> Result<TensorAccess> {
        // Each tensor's metadata is snapshotted once: storage, sizes, strides and offset stay
        // consistent for the guard's lifetime even if another thread resizes it.
        let snap = |t: &&TensorBase| (t.meta_arc(), t.dtype(), t.device());
        Self::acquire(reads.len(), reads.iter().map(snap), writes.iter().map(snap))
    }

    /// Acquires tensors given by metadata snapshots the caller already holds (TensorIterator
    /// keeps the snapshots it computed its strides from), as `(snapshot, dtype, device)`.
    /// Saves one snapshot load per tensor. Memory safety does not depend on the snapshot
    /// being current: a snapshot keeps its storage alive, its view was checked in bounds
    /// when it was made, storages only grow, and the data pointer is read under the lock.
    pub fn from_snapshots(
        reads: &[(&Arc<TensorMeta>, ScalarType, Device)],
        writes: &[(&Arc<TensorMeta>, ScalarType, Device)],
    ) -> Result<TensorAccess> {
        let snap = |&(m, d, dev): &(&Arc<TensorMeta>, ScalarType, Device)| (m.clone(), d, dev);
        Self::acquire(reads.len(), reads.iter().map(snap), writes.iter().map(snap))
    }

    fn acquire(
        n_reads: usize,
        reads: impl Iterator<Item = (Arc<TensorMeta>, ScalarType, Device)>,
        writes: impl Iterator<Item = (Arc<TensorMeta>, ScalarType, Device)>,
    ) -> Result<TensorAccess> {
        // Built in place (the guard is a few hundred bytes; moving it costs more than the
        // locking).
        let mut access = TensorAccess {
            _locks: LockSet {
                entries: SmallVec::new(),
                _not_send: PhantomData,
            },
            tensors: SmallVec::new(),
            n_reads,
        };
        let tagged = reads.map(|s| (s, false)).chain(writes.map(|s| (s, true)));
        for ((meta, dtype, device), writable) in tagged {
            access.tensors.push(AccessedTensor {
                meta,
                dtype,
                device,
                base: None,
                writable,
            });
        }
        {
            let mut wanted: SmallVec<[(usize, &StorageImpl, bool); 4]> = SmallVec::new();
            for t in &access.tensors {
                let s = t.meta.storage();
                wanted.push((s.addr(), s.as_impl(), t.writable));
            }
            // The snapshots in `access.tensors` keep the storages alive.
            access._locks.lock_all(&mut wanted)?;
        }
        for t in access.tensors.iter_mut() {
            // SAFETY: the guard holds this storage's lock (every tensor's storage was
            // acquired) for as long as it lives.
            t.base = unsafe { t.meta.storage().as_impl().data_ptr_locked() };
        }
        Ok(access)
    }

    /// A guard that only reads one tensor.
    pub fn read(t: &TensorBase) -> Result<TensorAccess> {
        Self::new(&[t], &[])
    }

    /// A guard that only writes one tensor.
    pub fn write(t: &TensorBase) -> Result<TensorAccess> {
        Self::new(&[], &[t])
    }

    fn index_error(what: &str, i: usize, n: usize) -> Error {
        Error::index(format!(
            "storage access: {what} {i} is out of range for a guard with {n} {what}s"
        ))
    }

    /// The `i`-th tensor read.
    pub fn input(&self, i: usize) -> Result<&AccessedTensor> {
        if i >= self.n_reads {
            return Err(Self::index_error("input", i, self.n_reads));
        }
        Ok(&self.tensors[i])
    }

    /// The `i`-th tensor written.
    pub fn output(&self, i: usize) -> Result<&AccessedTensor> {
        let n = self.tensors.len() - self.n_reads;
        if i >= n {
            return Err(Self::index_error("output", i, n));
        }
        Ok(&self.tensors[self.n_reads + i])
    }

    /// The elements of a contiguous input as a slice. A storage that is also written through
    /// this guard can only be sliced immutably while no mutable slice is live (the borrow of
    /// `self` enforces it).
    pub fn input_slice<T: PodElement>(&self, i: usize) -> Result<&[T]> {
        let t = self.input(i)?;
        let len = t.contiguous_len()?;
        let p = t.data_ptr::<T>()?;
        // SAFETY: p points at `len` initialised, in-bounds elements of type T (dtype checked,
        // every bit pattern valid for PodElement), aligned (64-byte base + whole elements);
        // the storage is locked at least shared for the guard's lifetime, and no mutable
        // slice can coexist because that needs `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(p, len) })
    }

    /// The elements of a contiguous output as a mutable slice.
    pub fn output_slice_mut<T: PodElement>(&mut self, i: usize) -> Result<&mut [T]> {
        let t = self.output(i)?;
        let len = t.contiguous_len()?;
        let p = t.data_ptr_mut::<T>()?;
        // SAFETY: as in `input_slice`; the storage is locked exclusively, and `&mut self`
        // guarantees no other slice from this guard is live.
        Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_conflicts_are_refused_and_reads_reenter() {
        let a = TensorBase::empty(&[4], ScalarType::Float, Device::CPU).unwrap();
        let b = TensorBase::empty(&[4], ScalarType::Float, Device::CPU).unwrap();
        let outer = TensorAccess::new(&[&a], &[&b]).unwrap();
        // Read of a storage this thread reads: granted.
        let again = TensorAccess::read(&a).unwrap();
        drop(again);
        // Write of a storage this thread reads, or any access to one it writes: refused.
        let e = TensorAccess::write(&a).err().unwrap();
        assert!(e.message().contains("already holds"), "{e}");
        assert!(TensorAccess::read(&b).is_err());
        let view = b.as_strided(&[2], &[1], Some(2)).unwrap();
        assert!(TensorAccess::read(&view).is_err());
        drop(outer);
        // All released: both can be written now.
        let _w = TensorAccess::new(&[], &[&a, &b]).unwrap();
    }

    #[test]
    fn from_snapshots_locks_like_new() {
        let a = TensorBase::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let out = TensorBase::empty(&[2], ScalarType::Float, Device::CPU).unwrap();
        let (ma, mo) = (a.meta_arc(), out.meta_arc());
        let mut g = TensorAccess::from_snapshots(
            &[(&ma, ScalarType::Float, Device::CPU)],
            &[(&mo, ScalarType::Float, Device::CPU)],
        )
        .unwrap();
        assert_eq!(g.input_slice::<f32>(0).unwrap(), &[1.0, 2.0]);
        g.output_slice_mut::<f32>(0).unwrap()[1] = 7.0;
        // Held: a conflicting access on this thread is refused, as with `new`.
        assert!(TensorAccess::write(&a).is_err());
        assert!(TensorAccess::read(&out).is_err());
        drop(g);
        assert_eq!(out.to_vec::<f32>().unwrap()[1], 7.0);
    }

    #[test]
    fn write_wins_when_one_storage_is_read_and_written() {
        let a = TensorBase::empty(&[4], ScalarType::Int, Device::CPU).unwrap();
        let v = a.as_strided(&[2], &[2], Some(0)).unwrap();
        let mut g = TensorAccess::new(&[&v], &[&a]).unwrap();
        g.output_slice_mut::<i32>(0)
            .unwrap()
            .copy_from_slice(&[1, 2, 3, 4]);
        let x = g.input(0).unwrap();
        assert!(x.data_ptr_mut::<i32>().is_err());
        let p = x.data_ptr::<i32>().unwrap();
        // SAFETY: element 1 of the view is at stride 2, inside the 4-element storage.
        assert_eq!(unsafe { *p.add(2) }, 3);
        assert!(g.input_slice::<i32>(0).is_err()); // not contiguous
        assert!(g.input(0).unwrap().data_ptr::<f32>().is_err()); // wrong dtype
    }
}
