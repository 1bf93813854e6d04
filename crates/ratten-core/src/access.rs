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
//!
//! Cost: the common case (this thread holds nothing yet) is one thread-local access on
//! acquire and one on release, one CAS per distinct storage each way (parking_lot's lock
//! word: reader count + writer bit), and a store per storage into the table's in-place
//! part; the nesting checks (and a table that spilled past its in-place part) run only on
//! the cold path. A refusal is a one-byte reason until it leaves the module as an Error.
//! [`TensorAccess::from_snapshot_refs`] borrows the caller's metadata snapshots instead of
//! taking a reference count on each.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::Arc;

use parking_lot::lock_api::RawRwLock as _;
use smallvec::SmallVec;

use crate::device::Device;
use crate::dtype::{Element, PodElement, ScalarType};
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageImpl};
use crate::tensor_impl::{TensorBase, TensorMeta};

/// One storage held by one live guard of this thread: its StorageImpl's address with the
/// low bit set when it is held for writing (a StorageImpl is at least 8-aligned). A storage
/// re-entered by nested reads appears once per guard: the table is a multiset, so a guard's
/// release removes exactly its own entries, and when the table holds as many entries as the
/// releasing guard has, they are all its own (the common, unnested case: cleared at once).
type Held = usize;

const _: () = assert!(std::mem::align_of::<StorageImpl>() >= 2);

#[inline]
fn held_entry(imp: *const StorageImpl, write: bool) -> Held {
    imp as usize | write as usize
}
#[inline]
fn held_addr(h: Held) -> usize {
    h & !1
}
#[inline]
fn held_write(h: Held) -> bool {
    h & 1 != 0
}

/// Entries the table keeps in place; more (deep nesting, a guard over many storages) spill
/// into a Vec.
const HELD_INLINE: usize = 16;

/// The per-thread nesting table: `len` entries, the first HELD_INLINE of them in `inline`,
/// the rest in `HELD_SPILL`. Cells without drop glue, so that reaching the table is a plain
/// thread-local access (no destructor-registration check) on every guard.
struct HeldTable {
    len: Cell<usize>,
    inline: [Cell<Held>; HELD_INLINE],
}

thread_local! {
    static HELD: HeldTable = const {
        HeldTable {
            len: Cell::new(0),
            inline: [const { Cell::new(0) }; HELD_INLINE],
        }
    };
    /// Accessed only by `load_table`/`store_table`, which call no other code while they
    /// borrow it.
    static HELD_SPILL: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

/// The whole table as a Vec (the slow paths work on it).
fn load_table(t: &HeldTable, extra: usize) -> std::result::Result<Vec<Held>, Refused> {
    let len = t.len.get();
    let mut v = Vec::with_capacity(len + extra);
    v.extend(t.inline.iter().take(len).map(Cell::get));
    if len > HELD_INLINE {
        HELD_SPILL
            .try_with(|s| v.extend(s.borrow().iter().copied()))
            .map_err(|_| Refused::ThreadExiting)?;
    }
    Ok(v)
}

/// Writes a table back (inline part first).
fn store_table(t: &HeldTable, v: &[Held]) {
    for (c, &h) in t.inline.iter().zip(v) {
        c.set(h);
    }
    let spill = v.get(HELD_INLINE..).unwrap_or(&[]);
    let stored = HELD_SPILL.try_with(|s| {
        let mut s = s.borrow_mut();
        s.clear();
        s.extend_from_slice(spill);
    });
    // While the thread exits, entries past the inline part are lost: only this thread's
    // later acquisitions read the table, and they fail then (see `lock_sorted`).
    let len = if stored.is_ok() {
        v.len()
    } else {
        v.len().min(HELD_INLINE)
    };
    t.len.set(len);
}

/// Why a guard was refused (an Error is made from it only on that cold path: a small
/// Result keeps the hot path's return cheap).
#[derive(Clone, Copy, Debug)]
enum Refused {
    /// A nested access conflicts with a storage this thread holds.
    Alias {
        held_write: bool,
        write: bool,
    },
    /// A nested access would wait out of lock order.
    OutOfOrder,
    ThreadExiting,
}

impl Refused {
    #[cold]
    fn into_error(self) -> Error {
        match self {
            Refused::Alias { held_write, write } => Error::runtime(format!(
                "storage access: this thread already holds a storage for {} and a nested \
                 access for {} would alias it; acquire all tensors of a kernel in one \
                 TensorAccess",
                describe(held_write),
                describe(write)
            )),
            Refused::OutOfOrder => Error::runtime(
                "storage access: a nested access on this thread would wait for a storage out \
                 of lock order and could deadlock; acquire all tensors of a kernel in one \
                 TensorAccess",
            ),
            Refused::ThreadExiting => Error::runtime(
                "storage access: this thread is exiting and can no longer acquire storages",
            ),
        }
    }
}

/// `!Send` (the thread-local bookkeeping belongs to the acquiring thread) but `Sync`, so a
/// kernel may share `&guard` (and slices borrowed from it) with its worker threads.
type NotSend = PhantomData<std::sync::MutexGuard<'static, ()>>;

/// What a guard did with one storage it names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    /// Nothing (yet), or the same storage is held through another item of this guard.
    None,
    /// Locked shared by this item.
    Shared,
    /// Locked exclusively by this item.
    Exclusive,
    /// Already read by this thread through an older guard: counted, not relocked.
    Reentered,
}

/// One storage a guard names. The pointer is kept alive by the guard's owner of the storage
/// (StorageAccess keeps Storage handles, TensorAccess the metadata snapshots that hold
/// them), which outlives the locks; holding no refcount here saves two atomic operations
/// per storage on every kernel call.
#[derive(Clone, Copy)]
struct LockItem {
    imp: *const StorageImpl,
    write: bool,
    role: Role,
}

impl LockItem {
    #[inline]
    fn new(storage: &StorageImpl, write: bool) -> LockItem {
        LockItem {
            imp: storage,
            write,
            role: Role::None,
        }
    }
    /// The global lock order: by address, writers first among equals (so that the first of
    /// a storage's items decides its mode: "write wins").
    #[inline]
    fn key(&self) -> (usize, bool) {
        (self.imp as usize, !self.write)
    }
    /// Whether this item holds an entry of the thread's table.
    #[inline]
    fn counted(&self) -> bool {
        self.role != Role::None
    }
}

/// Items reach the lock machinery through this accessor, so that a TensorAccess can keep
/// them inside its tensors (one array, one move) and a StorageAccess in a plain list.
trait HasLockItem {
    fn item(&self) -> LockItem;
    fn set_role(&mut self, role: Role);
}

impl HasLockItem for LockItem {
    #[inline]
    fn item(&self) -> LockItem {
        *self
    }
    #[inline]
    fn set_role(&mut self, role: Role) {
        self.role = role;
    }
}

fn describe(write: bool) -> &'static str {
    if write {
        "writing"
    } else {
        "reading"
    }
}

/// Locks the storages of `items` (deduplicated, in address order) and records them in this
/// thread's table. The caller must keep every storage alive until [`unlock_all`], which it
/// must call exactly once if this succeeds. On error nothing is held or recorded.
#[inline]
fn lock_all<T: HasLockItem>(items: &mut [T]) -> std::result::Result<(), Refused> {
    let n = items.len();
    if n == 1 {
        return lock_sorted(items, std::iter::once(0));
    }
    if n <= PACKED_MAX {
        // The lock order as plain integers: (address, reader bit, index) packed into one
        // u64 per item, so sorting compares integers, not tuples through indices.
        let mut keys = [0u64; PACKED_MAX];
        let mut fits = true;
        for (i, (k, x)) in keys.iter_mut().zip(items.iter()).enumerate() {
            let it = x.item();
            let addr = it.imp as u64;
            fits &= addr < 1 << (64 - PACKED_SHIFT);
            *k = addr << PACKED_SHIFT | (!it.write as u64) << 8 | i as u64;
        }
        if fits {
            let keys = &mut keys[..n];
            // Insertion sort: a kernel names 1-4 tensors, where a general sort's setup
            // costs more than the sorting.
            for i in 1..n {
                let k = keys[i];
                let mut j = i;
                while j > 0 && keys[j - 1] > k {
                    keys[j] = keys[j - 1];
                    j -= 1;
                }
                keys[j] = k;
            }
            return lock_sorted(items, keys.iter().map(|&k| (k & 0xff) as usize));
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by_key(|&i| items[i].item().key());
    lock_sorted(items, order.iter().copied())
}

/// Up to this many items are ordered by packed keys (the index takes 8 bits, the reader
/// bit one more: addresses below 2^55, which every 64-bit target's user space is).
const PACKED_MAX: usize = 8;
const PACKED_SHIFT: u32 = 9;

#[inline]
fn lock_sorted<T: HasLockItem>(
    items: &mut [T],
    order: impl Iterator<Item = usize> + Clone,
) -> std::result::Result<(), Refused> {
    HELD.try_with(|t| {
        if t.len.get() != 0 || items.len() > HELD_INLINE {
            let mut held = load_table(t, items.len())?;
            let r = lock_nested(&mut held, items, order);
            store_table(t, &held);
            return r;
        }
        // This thread holds nothing: waiting in address order cannot deadlock.
        let mut prev = std::ptr::null();
        let mut k = 0;
        for i in order {
            let x = &mut items[i];
            let it = x.item();
            if it.imp == prev {
                continue;
            }
            prev = it.imp;
            // SAFETY: the caller keeps the storage alive.
            let lock = unsafe { (*it.imp).raw_lock() };
            if it.write {
                lock.lock_exclusive();
                x.set_role(Role::Exclusive);
            } else {
                lock.lock_shared();
                x.set_role(Role::Shared);
            }
            if let Some(c) = t.inline.get(k) {
                c.set(held_entry(it.imp, it.write));
            }
            k += 1;
        }
        t.len.set(k);
        Ok(())
    })
    .unwrap_or(Err(Refused::ThreadExiting))
}

/// Locks `items` while this thread already holds the storages in `held`: re-entered reads
/// are counted, conflicts refused, out-of-order locks only tried. On error nothing new is
/// held and the table is unchanged.
#[cold]
#[inline(never)]
fn lock_nested<T: HasLockItem>(
    held: &mut Vec<Held>,
    items: &mut [T],
    order: impl Iterator<Item = usize> + Clone,
) -> std::result::Result<(), Refused> {
    let order: SmallVec<[usize; 8]> = order.collect();
    // Decide first, so a refusal leaves nothing half-acquired. Only the first item of each
    // storage counts (it is the writer if any item writes).
    let mut prev = std::ptr::null();
    for &i in &order {
        let it = items[i].item();
        if it.imp == prev {
            continue;
        }
        prev = it.imp;
        let addr = it.imp as usize;
        if let Some(&h) = held.iter().find(|&&h| held_addr(h) == addr) {
            if held_write(h) || it.write {
                return Err(Refused::Alias {
                    held_write: held_write(h),
                    write: it.write,
                });
            }
        }
    }
    let max_held = held.iter().map(|&h| held_addr(h)).max().unwrap_or(0);
    let mut prev = std::ptr::null();
    for (k, &i) in order.iter().enumerate() {
        let x = &mut items[i];
        let it = x.item();
        if it.imp == prev {
            continue;
        }
        prev = it.imp;
        let addr = it.imp as usize;
        if held.iter().any(|&h| held_addr(h) == addr) {
            // A read of a storage this thread reads (checked above).
            x.set_role(Role::Reentered);
            continue;
        }
        // SAFETY: the caller keeps the storage alive.
        let lock = unsafe { (*it.imp).raw_lock() };
        // Waiting is only safe in global (address) order; a nested acquisition below a
        // storage this thread holds may only try.
        let ok = if addr < max_held {
            if it.write {
                lock.try_lock_exclusive()
            } else {
                lock.try_lock_shared()
            }
        } else {
            if it.write {
                lock.lock_exclusive()
            } else {
                lock.lock_shared()
            }
            true
        };
        if !ok {
            for &j in &order[..k] {
                let y = &mut items[j];
                // SAFETY: the storages are alive (caller) and each item holds what its role
                // says.
                unsafe { unlock(&y.item()) };
                y.set_role(Role::None);
            }
            return Err(Refused::OutOfOrder);
        }
        x.set_role(if it.write {
            Role::Exclusive
        } else {
            Role::Shared
        });
    }
    for it in items.iter().map(|x| x.item()).filter(|it| it.counted()) {
        held.push(held_entry(it.imp, it.write));
    }
    Ok(())
}

/// # Safety
/// `it.imp` must be alive, and locked by `it` in the mode its role says.
#[inline]
unsafe fn unlock(it: &LockItem) {
    // SAFETY: the caller guarantees the storage is alive and that this item holds exactly
    // this lock in this mode.
    unsafe {
        match it.role {
            Role::Shared => (*it.imp).raw_lock().unlock_shared(),
            Role::Exclusive => (*it.imp).raw_lock().unlock_exclusive(),
            Role::None | Role::Reentered => {}
        }
    }
}

/// Releases what [`lock_all`] acquired for `items`.
///
/// # Safety
/// `lock_all(items)` must have succeeded, this must be its only release, and the storages
/// must still be alive.
#[inline]
unsafe fn unlock_all<T: HasLockItem>(items: &[T]) {
    let mut n = 0;
    for x in items {
        let it = x.item();
        // SAFETY: the caller's contract: each role is what lock_all left.
        unsafe { unlock(&it) };
        n += it.counted() as usize;
    }
    let _ = HELD.try_with(|t| {
        let len = t.len.get();
        if len == n && len <= HELD_INLINE {
            // Every entry is one of ours.
            t.len.set(0);
        } else {
            release_nested(t, items);
        }
    });
}

/// Releases a guard's entries from the table when other guards on this thread hold entries
/// too.
#[cold]
#[inline(never)]
fn release_nested<T: HasLockItem>(t: &HeldTable, items: &[T]) {
    // Thread exiting with a spilled table: what is left inline is all that can be kept.
    let Ok(mut held) = load_table(t, 0) else {
        t.len.set(t.len.get().min(HELD_INLINE));
        return;
    };
    for it in items.iter().map(|x| x.item()).filter(|it| it.counted()) {
        let addr = it.imp as usize;
        // Every entry of one storage has the same mode (conflicts are refused), so any of
        // them is ours to remove.
        if let Some(i) = held.iter().position(|&h| held_addr(h) == addr) {
            held.swap_remove(i);
        }
    }
    store_table(t, &held);
}

/// Locks on a set of storages, held until drop.
pub struct StorageAccess {
    items: SmallVec<[LockItem; 4]>,
    // Dropped after `Drop::drop` released the locks.
    _storages: SmallVec<[Storage; 4]>,
    _not_send: NotSend,
}

impl StorageAccess {
    /// Locks `reads` shared and `writes` exclusively (a storage in both is written).
    pub fn acquire(reads: &[&Storage], writes: &[&Storage]) -> Result<StorageAccess> {
        let mut items: SmallVec<[LockItem; 4]> = writes
            .iter()
            .map(|s| LockItem::new(s.as_impl(), true))
            .chain(reads.iter().map(|s| LockItem::new(s.as_impl(), false)))
            .collect();
        // The caller's references keep the storages alive until the clones below do.
        lock_all(&mut items).map_err(Refused::into_error)?;
        let storages = writes.iter().chain(reads).map(|s| (*s).clone()).collect();
        Ok(StorageAccess {
            items,
            _storages: storages,
            _not_send: PhantomData,
        })
    }

    fn holds(&self, storage: &StorageImpl) -> Option<&LockItem> {
        self.items
            .iter()
            .filter(|it| it.counted())
            .find(|it| std::ptr::eq(it.imp, storage))
    }

    /// The data pointer of a storage this guard holds (None for meta or empty storages, or a
    /// storage the guard does not hold).
    pub fn data_ptr(&self, storage: &Storage) -> Option<NonNull<u8>> {
        self.holds(storage.as_impl())?;
        // SAFETY: this guard holds the storage's lock until it is dropped; a raw pointer is
        // inert until dereferenced in unsafe code, whose author must not outlive the guard.
        unsafe { storage.as_impl().data_ptr_locked() }
    }

    /// Whether the guard holds `storage` for writing.
    pub fn is_writing(&self, storage: &Storage) -> bool {
        self.holds(storage.as_impl())
            .is_some_and(|it| it.role == Role::Exclusive)
    }
}

impl Drop for StorageAccess {
    fn drop(&mut self) {
        // SAFETY: a StorageAccess exists only after lock_all succeeded; `_storages` keeps
        // the storages alive until after this.
        unsafe { unlock_all(&self.items) };
    }
}

/// One tensor as a kernel sees it under a [`TensorAccess`]: a consistent snapshot of its
/// metadata and the data pointer of its locked storage.
pub struct AccessedTensor {
    /// The snapshot, kept alive by the guard this tensor lives in (its own Arc or the
    /// caller's borrow, see [`OwnedSnapshots`] / [`BorrowedSnapshots`]); an AccessedTensor is
    /// only ever reached through a reference to its guard.
    meta: NonNull<TensorMeta>,
    /// The snapshot's StorageImpl (cached: it orders the locks).
    imp: *const StorageImpl,
    /// Whether the tensor is written.
    write: bool,
    /// What the guard did with the storage.
    role: Role,
    dtype: ScalarType,
    device: Device,
}

impl HasLockItem for AccessedTensor {
    #[inline]
    fn item(&self) -> LockItem {
        LockItem {
            imp: self.imp,
            write: self.write,
            role: self.role,
        }
    }
    #[inline]
    fn set_role(&mut self, role: Role) {
        self.role = role;
    }
}

impl AccessedTensor {
    #[inline]
    fn meta(&self) -> &TensorMeta {
        // SAFETY: the guard that owns this AccessedTensor keeps the snapshot alive (see the
        // field), and `&self` borrows that guard.
        unsafe { self.meta.as_ref() }
    }
    pub fn sizes(&self) -> &[i64] {
        self.meta().sizes()
    }
    pub fn strides(&self) -> &[i64] {
        self.meta().strides()
    }
    pub fn storage_offset(&self) -> i64 {
        self.meta().storage_offset()
    }
    pub fn numel(&self) -> i64 {
        self.meta().numel()
    }
    pub fn dim(&self) -> usize {
        self.meta().sizes().len()
    }
    pub fn is_contiguous(&self) -> bool {
        self.meta().is_contiguous()
    }
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }
    pub fn device(&self) -> Device {
        self.device
    }
    pub fn is_writable(&self) -> bool {
        self.write
    }

    /// Pointer to the element at the storage offset, untyped. None for meta tensors. A
    /// storage of zero bytes yields a dangling, aligned pointer (its views have no elements).
    #[inline]
    pub fn raw_data_ptr(&self) -> Option<NonNull<u8>> {
        if self.device.is_meta() {
            return None;
        }
        // SAFETY: the guard that owns this tensor holds its storage's lock (every tensor's
        // storage is acquired) for as long as it lives, and `&self` borrows the guard.
        let base = unsafe { (*self.imp).data_ptr_locked() }.unwrap_or(DANGLING);
        let off = self.meta().storage_offset() as usize * self.dtype.element_size();
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
        if !self.write {
            return Err(Error::runtime(
                "storage access: this tensor was acquired for reading only",
            ));
        }
        Ok(self.check_typed::<T>()?.as_ptr() as *mut T)
    }

    fn contiguous_len(&self) -> Result<usize> {
        if !self.meta().is_contiguous() {
            return Err(Error::runtime(
                "storage access: a slice needs a contiguous tensor",
            ));
        }
        Ok(self.meta().numel() as usize)
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

/// What keeps a [`TensorAccess`]'s snapshots alive: its own reference counts (the default,
/// from [`TensorAccess::new`] and [`TensorAccess::from_snapshots`]).
pub struct OwnedSnapshots(
    // Never read: held only so that the snapshots outlive the guard's locks.
    #[allow(dead_code)] SnapshotArcs,
);

/// The Arcs an owning guard keeps: in place for up to INLINE tensors (SmallVec's collect
/// cost more than the reference counting it stores).
enum SnapshotArcs {
    Inline([Option<Arc<TensorMeta>>; INLINE]),
    Heap(Vec<Arc<TensorMeta>>),
}

impl OwnedSnapshots {
    /// Keeps `f(i)` for `i < n` and builds the guard's tensor list from them in one pass.
    #[inline]
    fn build(
        n: usize,
        n_reads: usize,
        mut f: impl FnMut(usize) -> (Arc<TensorMeta>, ScalarType, Device),
    ) -> (TensorList, OwnedSnapshots) {
        let mut arcs = if n <= INLINE {
            SnapshotArcs::Inline([const { None }; INLINE])
        } else {
            SnapshotArcs::Heap(Vec::with_capacity(n))
        };
        let tensors = TensorList::build(n, |i| {
            let (arc, dtype, device) = f(i);
            // The snapshot is on the heap: the pointer stays valid when the Arc moves.
            let t = accessed(&arc, dtype, device, i >= n_reads);
            match &mut arcs {
                SnapshotArcs::Inline(a) => a[i] = Some(arc),
                SnapshotArcs::Heap(v) => v.push(arc),
            }
            t
        });
        (tensors, OwnedSnapshots(arcs))
    }
}

/// What keeps a [`TensorAccess`]'s snapshots alive: the caller's borrow of them, for `'a`
/// (from [`TensorAccess::from_snapshot_refs`]). Saves two atomic operations per tensor.
pub struct BorrowedSnapshots<'a>(PhantomData<&'a TensorMeta>);

/// The guard a kernel takes on all its tensors at once (see the module docs). `Keep` says
/// what keeps the tensors' metadata snapshots alive; code that does not care names it
/// `TensorAccess` (owned snapshots).
pub struct TensorAccess<Keep = OwnedSnapshots> {
    tensors: TensorList,
    n_reads: usize,
    // Dropped after `Drop::drop` released the locks.
    _keep: Keep,
}

// SAFETY: a shared TensorAccess only hands out metadata (of Sync snapshots), raw pointer
// values and shared slices of storages it holds locked; the locks are released by the owning
// thread's drop (the guard stays !Send: AccessedTensor holds raw pointers), so kernels may
// share `&guard` with their workers.
unsafe impl<Keep: Sync> Sync for TensorAccess<Keep> {}

impl<Keep> Drop for TensorAccess<Keep> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a TensorAccess exists only after lock_all succeeded on its tensors; `Keep`
        // (dropped after this) keeps the snapshots, and so the storages, alive.
        unsafe { unlock_all(self.tensors.as_slice()) };
    }
}

/// Tensors a guard keeps in place (no allocation): a kernel names 1-4.
const INLINE: usize = 4;

/// A guard's tensors. (A hand-made small vector: SmallVec's generic push/extend cost more
/// than the rest of acquiring one tensor.)
enum TensorList {
    Inline {
        len: usize,
        /// The first `len` are initialised.
        items: [MaybeUninit<AccessedTensor>; INLINE],
    },
    Heap(Vec<AccessedTensor>),
}

impl TensorList {
    /// The list `f(0), ..., f(n - 1)`.
    #[inline]
    fn build(n: usize, mut f: impl FnMut(usize) -> AccessedTensor) -> TensorList {
        if n <= INLINE {
            let mut items = [const { MaybeUninit::uninit() }; INLINE];
            for (i, slot) in items[..n].iter_mut().enumerate() {
                slot.write(f(i));
            }
            TensorList::Inline { len: n, items }
        } else {
            TensorList::Heap((0..n).map(f).collect())
        }
    }
    #[inline]
    fn as_slice(&self) -> &[AccessedTensor] {
        match self {
            // SAFETY: `build` initialised the first `len` slots (AccessedTensor has no drop
            // glue, so nothing is leaked or dropped twice).
            TensorList::Inline { len, items } => unsafe {
                std::slice::from_raw_parts(items.as_ptr().cast(), *len)
            },
            TensorList::Heap(v) => v,
        }
    }
    #[inline]
    fn as_mut_slice(&mut self) -> &mut [AccessedTensor] {
        match self {
            // SAFETY: as in `as_slice`.
            TensorList::Inline { len, items } => unsafe {
                std::slice::from_raw_parts_mut(items.as_mut_ptr().cast(), *len)
            },
            TensorList::Heap(v) => v,
        }
    }
}

/// One tensor to acquire, given by its metadata snapshot, with its dtype and device.
pub type SnapshotSpec<'a> = (&'a TensorMeta, ScalarType, Device);

impl TensorAccess {
    /// Acquires `reads` for reading and `writes` for writing, in one step.
    pub fn new(reads: &[&TensorBase], writes: &[&TensorBase]) -> Result<TensorAccess> {
        // Each tensor's metadata is snapshotted once: storage, sizes, strides and offset stay
        // consistent for the guard's lifetime even if another thread resizes it.
        let nr = reads.len();
        let (tensors, keep) = OwnedSnapshots::build(nr + writes.len(), nr, |i| {
            let t = if i < nr { reads[i] } else { writes[i - nr] };
            (t.meta_arc(), t.dtype(), t.device())
        });
        Self::acquire(tensors, nr, keep)
    }

    /// Acquires tensors given by metadata snapshots the caller already holds (TensorIterator
    /// keeps the snapshots it computed its strides from), as `(snapshot, dtype, device)`.
    /// Saves one snapshot load per tensor; [`from_snapshot_refs`](TensorAccess::from_snapshot_refs)
    /// also saves the reference counts. Memory safety does not depend on the snapshot being
    /// current: a snapshot keeps its storage alive, its view was checked in bounds when it
    /// was made, storages only grow, and the data pointer is read under the lock.
    ///
    /// # Safety
    /// Each `(snapshot, dtype, device)` must belong together: the snapshot taken from a tensor
    /// (`TensorBase::meta_arc`) whose `dtype()` and `device()` are the ones given. A snapshot
    /// carries no dtype, and its view was bounds- and alignment-checked only for its own
    /// tensor's dtype: another dtype (a wider one, or a CPU device for a meta snapshot) would
    /// give slices outside the storage.
    #[inline]
    pub unsafe fn from_snapshots(
        reads: &[(&Arc<TensorMeta>, ScalarType, Device)],
        writes: &[(&Arc<TensorMeta>, ScalarType, Device)],
    ) -> Result<TensorAccess> {
        let nr = reads.len();
        let (tensors, keep) = OwnedSnapshots::build(nr + writes.len(), nr, |i| {
            let (m, d, dev) = if i < nr { reads[i] } else { writes[i - nr] };
            (m.clone(), d, dev)
        });
        Self::acquire(tensors, nr, keep)
    }

    /// A guard that only reads one tensor.
    pub fn read(t: &TensorBase) -> Result<TensorAccess> {
        Self::new(&[t], &[])
    }

    /// A guard that only writes one tensor.
    pub fn write(t: &TensorBase) -> Result<TensorAccess> {
        Self::new(&[], &[t])
    }
}

/// An AccessedTensor not yet locked. `meta` must be kept alive by the guard it goes into
/// (a heap snapshot: it stays put when the guard moves).
#[inline]
fn accessed(
    meta: &TensorMeta,
    dtype: ScalarType,
    device: Device,
    writable: bool,
) -> AccessedTensor {
    AccessedTensor {
        meta: NonNull::from(meta),
        imp: meta.storage().as_impl(),
        write: writable,
        role: Role::None,
        dtype,
        device,
    }
}

impl<'a> TensorAccess<BorrowedSnapshots<'a>> {
    /// Like [`from_snapshots`](TensorAccess::from_snapshots), borrowing the snapshots for the
    /// guard's lifetime instead of counting references to them: the fastest way to acquire
    /// a kernel's tensors (TensorIterator's).
    ///
    /// # Safety
    /// As for [`from_snapshots`](TensorAccess::from_snapshots): each snapshot with its own
    /// tensor's dtype and device.
    #[inline]
    pub unsafe fn from_snapshot_refs(
        reads: &[SnapshotSpec<'a>],
        writes: &[SnapshotSpec<'a>],
    ) -> Result<TensorAccess<BorrowedSnapshots<'a>>> {
        let nr = reads.len();
        let tensors = TensorList::build(nr + writes.len(), |i| {
            let (m, d, dev) = if i < nr { reads[i] } else { writes[i - nr] };
            accessed(m, d, dev, i >= nr)
        });
        Self::acquire(tensors, nr, BorrowedSnapshots(PhantomData))
    }
}

impl<Keep> TensorAccess<Keep> {
    /// Locks the tensors' storages and reads their data pointers under the locks. `keep`
    /// must keep every tensor's snapshot alive.
    #[inline]
    fn acquire(tensors: TensorList, n_reads: usize, keep: Keep) -> Result<Self> {
        // The snapshots (kept by `keep`, or the caller's until then) keep the storages alive.
        let mut g = TensorAccess {
            tensors,
            n_reads,
            _keep: keep,
        };
        // Locked in place (one move of the tensor list fewer). On refusal nothing is held and
        // every role is None, so dropping `g` releases nothing.
        lock_all(g.tensors.as_mut_slice()).map_err(Refused::into_error)?;
        Ok(g)
    }

    fn index_error(what: &str, i: usize, n: usize) -> Error {
        Error::index(format!(
            "storage access: {what} {i} is out of range for a guard with {n} {what}s"
        ))
    }

    /// The `i`-th tensor read.
    #[inline]
    pub fn input(&self, i: usize) -> Result<&AccessedTensor> {
        if i >= self.n_reads {
            return Err(Self::index_error("input", i, self.n_reads));
        }
        Ok(&self.tensors.as_slice()[i])
    }

    /// The `i`-th tensor written.
    #[inline]
    pub fn output(&self, i: usize) -> Result<&AccessedTensor> {
        let all = self.tensors.as_slice();
        let n = all.len() - self.n_reads;
        if i >= n {
            return Err(Self::index_error("output", i, n));
        }
        Ok(&all[self.n_reads + i])
    }

    /// The elements of a contiguous input as a slice. A storage that is also written through
    /// this guard can only be sliced immutably while no mutable slice is live (the borrow of
    /// `self` enforces it).
    pub fn input_slice<T: PodElement>(&self, i: usize) -> Result<&[T]> {
        let t = self.input(i)?;
        let len = t.contiguous_len()?;
        let p = t.data_ptr::<T>()?;
        // SAFETY: p points at `len` initialised, in-bounds elements of type T (dtype checked,
        // every bit pattern valid for PodElement), aligned (the storage's alignment was
        // checked against the dtype when the view was made); the storage is locked at least
        // shared for the guard's lifetime, and no mutable slice can coexist because that
        // needs `&mut self`.
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
        // SAFETY: both snapshots are of Float CPU tensors.
        let mut g = unsafe {
            TensorAccess::from_snapshots(
                &[(&ma, ScalarType::Float, Device::CPU)],
                &[(&mo, ScalarType::Float, Device::CPU)],
            )
        }
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

    #[test]
    fn from_snapshot_refs_borrows_and_locks_like_new() {
        let a = TensorBase::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let out = TensorBase::empty(&[2], ScalarType::Float, Device::CPU).unwrap();
        let (ma, mo) = (a.meta_arc(), out.meta_arc());
        let (fa, fo) = (Arc::strong_count(&ma), Arc::strong_count(&mo));
        let f = ScalarType::Float;
        // SAFETY: both snapshots are of Float CPU tensors.
        let mut g = unsafe {
            TensorAccess::from_snapshot_refs(&[(&ma, f, Device::CPU)], &[(&mo, f, Device::CPU)])
        }
        .unwrap();
        // No reference is counted: the guard borrows the snapshots.
        assert_eq!((Arc::strong_count(&ma), Arc::strong_count(&mo)), (fa, fo));
        assert_eq!(g.input_slice::<f32>(0).unwrap(), &[1.0, 2.0]);
        g.output_slice_mut::<f32>(0).unwrap()[0] = 5.0;
        assert!(TensorAccess::write(&a).is_err());
        assert!(TensorAccess::read(&out).is_err());
        // A nested read of what it reads re-enters.
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        drop(g);
        assert_eq!(out.to_vec::<f32>().unwrap()[0], 5.0);
        let _w = TensorAccess::new(&[], &[&a, &out]).unwrap();
    }

    #[test]
    fn guards_released_out_of_order_keep_the_table_right() {
        let t = |n| TensorBase::empty(&[n], ScalarType::Float, Device::CPU).unwrap();
        let (a, b, c) = (t(1), t(2), t(3));
        let g1 = TensorAccess::new(&[&a, &b], &[]).unwrap();
        let g2 = TensorAccess::new(&[&b], &[]).unwrap();
        // Storages above or below the held ones: granted (try-locked if out of order).
        let g3 = TensorAccess::new(&[], &[&c]).unwrap();
        drop(g1);
        // b is still read by g2, c written by g3; a is free again.
        assert!(TensorAccess::write(&b).is_err());
        assert!(TensorAccess::read(&c).is_err());
        drop(TensorAccess::write(&a).unwrap());
        drop(g3);
        drop(TensorAccess::write(&c).unwrap());
        drop(g2);
        // Everything released: the fast path again, for all three at once.
        drop(TensorAccess::new(&[], &[&a, &b, &c]).unwrap());
    }

    #[test]
    fn a_refused_nested_access_leaves_nothing_held() {
        let t = |n| TensorBase::empty(&[n], ScalarType::Float, Device::CPU).unwrap();
        let (a, b) = (t(1), t(1));
        let outer = TensorAccess::new(&[], &[&a]).unwrap();
        // b would be locked first (or after); a conflicts: refused before locking b.
        assert!(TensorAccess::new(&[&b], &[&a]).is_err());
        // b is free: another thread can write it while `outer` lives.
        std::thread::scope(|s| {
            s.spawn(|| drop(TensorAccess::write(&b).unwrap()));
        });
        drop(outer);
    }

    #[test]
    fn nesting_past_the_inline_table_spills_and_releases_in_any_order() {
        // 20 storages held by one guard: more than the table keeps in place.
        let ts: Vec<_> = (0..20i64)
            .map(|i| TensorBase::from_slice(&[i], &[1]).unwrap())
            .collect();
        let reads: Vec<&TensorBase> = ts[..18].iter().collect();
        let outer = TensorAccess::new(&reads, &[&ts[18]]).unwrap();
        // Nested reads re-enter (also of entries in the spilled part), conflicts are refused.
        let inner = TensorAccess::new(&reads[10..], &[]).unwrap();
        assert_eq!(ts[17].to_vec::<i64>().unwrap(), vec![17]);
        assert!(TensorAccess::write(&ts[2]).is_err());
        assert!(TensorAccess::read(&ts[18]).is_err());
        let third = TensorAccess::write(&ts[19]).unwrap();
        // Released out of order: each guard removes exactly its own entries.
        drop(outer);
        assert!(TensorAccess::write(&ts[11]).is_err()); // still read by `inner`
        drop(TensorAccess::write(&ts[2]).unwrap());
        drop(TensorAccess::write(&ts[18]).unwrap());
        drop(inner);
        assert!(TensorAccess::read(&ts[19]).is_err());
        drop(third);
        // All released: the fast path again, for all of them at once.
        let all: Vec<&TensorBase> = ts.iter().collect();
        drop(TensorAccess::new(&[], &all).unwrap());
        drop(TensorAccess::new(&all[..3], &[]).unwrap());
    }

    #[test]
    fn many_tensors_in_one_guard() {
        // More than the inline capacity and the insertion-sort bound, with repeats.
        let ts: Vec<_> = (0..12i32)
            .map(|i| TensorBase::from_slice(&[i], &[1]).unwrap())
            .collect();
        let reads: Vec<&TensorBase> = ts.iter().chain(&ts[..3]).collect();
        let writes = [&ts[11], &ts[0]];
        let g = TensorAccess::new(&reads, &writes).unwrap();
        assert_eq!(g.input_slice::<i32>(5).unwrap(), &[5]);
        assert!(g.output(1).unwrap().is_writable());
        // ts[0] is written (write wins), so a nested read of it is refused; ts[5] re-enters.
        assert!(TensorAccess::read(&ts[0]).is_err());
        assert_eq!(ts[5].to_vec::<i32>().unwrap(), vec![5]);
        drop(g);
        drop(TensorAccess::new(&[], &reads).unwrap());
    }
}
