//! Access guards: the only way to reach tensor memory.
//!
//! Note [Tensor memory access]: A kernel names, in one call, the tensors it reads and the
//! tensors it writes. The guard deduplicates their storages (a storage both read and written is
//! locked for writing), sorts them by address and takes each storage's reader-writer lock in
//! that global order, so two kernels can never wait on each other in a cycle. While the guard
//! lives, every storage it writes is held exclusively and every storage it reads is held
//! shared: no other thread can write memory this kernel reads, or touch memory it writes. Data
//! pointers and slices borrow the guard, so they cannot outlive it.
//!
//! There are two public entries, and no other way to a tensor's data:
//! - [`TensorAccess::new`] (and its one-tensor forms [`TensorAccess::read`] and
//!   [`TensorAccess::write`]): the safe entry, for every kernel author. The guard snapshots
//!   each tensor's metadata and hands out, per tensor, an [`AccessedTensor`] (sizes, strides,
//!   dtype, typed data pointers) and typed slices of contiguous tensors
//!   ([`TensorAccess::input_slice`], [`TensorAccess::output_slice_mut`]).
//! - [`RawAccess::acquire`]: the engine's entry (TensorIterator's), `unsafe`. It takes metadata
//!   snapshots the caller already holds and writes only their data pointers, with the same
//!   locks, order, nesting rules and refusals; its contract is that each snapshot is given
//!   with its own tensor's dtype and device (a snapshot carries no dtype, and its view was
//!   bounds- and alignment-checked for that dtype only). A kernel author never needs it: a
//!   kernel that iterates goes through TensorIterator, one that does not through
//!   `TensorAccess::new`.
//!
//! Storage-level locking ([`StorageAccess`], for `Storage::grow` and this crate's tests) is
//! crate-private.
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
//! For up to four tensors the guard's tensors and lock keys are written in place (no list
//! is built and moved), sorted by a fixed network, and the guard records what it locked
//! as tagged storage pointers, so its drop is a straight unlock of those plus one store.

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

/// A storage a guard names or holds: the StorageImpl's pointer with tag bits in its low bits
/// ([`WRITE`], [`REENTERED`]). A pointer, not an address, so that unlocking through it keeps
/// the provenance of the reference it came from.
type Key = *const StorageImpl;

/// Tag: the storage is (to be) held for writing.
const WRITE: usize = 1;
/// Tag (only in a guard's [`LockSet`]): a read of a storage this thread already read through
/// an older guard, counted in the table but not locked again.
const REENTERED: usize = 2;
const TAGS: usize = WRITE | REENTERED;

const _: () = assert!(std::mem::align_of::<StorageImpl>() > TAGS);

#[inline(always)]
fn key(imp: &StorageImpl, write: bool) -> Key {
    (imp as *const StorageImpl).map_addr(|a| a | write as usize)
}
#[inline(always)]
fn key_addr(k: Key) -> usize {
    k.addr() & !TAGS
}
#[inline(always)]
fn key_write(k: Key) -> bool {
    k.addr() & WRITE != 0
}
/// The lock order: by address, writers first among equals (so that the first key of a
/// storage decides its mode: "write wins").
#[inline(always)]
fn order(k: Key) -> usize {
    k.addr() ^ WRITE
}
/// The table entry of a guard's key (a re-entered read is a read entry).
#[inline(always)]
fn held_of(k: Key) -> Held {
    k.addr() & !REENTERED
}
#[inline]
fn held_addr(h: Held) -> usize {
    h & !WRITE
}
#[inline]
fn held_write(h: Held) -> bool {
    h & WRITE != 0
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

/// This thread's table. `HELD.try_with` with the fast paths inside its closure was not
/// inlined (a call and a frame per guard, each way); the table's address is taken instead.
///
/// # Safety (of dereferencing the result)
/// The table has no destructor and a const initialiser: it lives, at a fixed address, for as
/// long as its thread. The reference made from the pointer must not leave the current call
/// (nor the thread).
#[inline(always)]
fn held_table() -> *const HeldTable {
    HELD.with(|t| t as *const HeldTable)
}

const _: () = assert!(!std::mem::needs_drop::<HeldTable>());

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
    // later acquisitions read the table, and they fail then (see `lock_general`).
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

fn describe(write: bool) -> &'static str {
    if write {
        "writing"
    } else {
        "reading"
    }
}

/// Distinct storages a guard keeps in place (a kernel names 1-4 tensors).
const LOCKS_INLINE: usize = 4;

/// What one guard holds: one key per distinct storage, in lock order, tagged [`WRITE`] when
/// it is held exclusively and [`REENTERED`] when it was counted but not locked. These keys
/// are exactly the guard's entries of the thread's table. The pointers are kept alive by the
/// guard's owner of the storages (StorageAccess keeps Storage handles, TensorAccess the
/// snapshots that hold them), which outlives the locks; holding no refcount here saves two
/// atomic operations per storage on every kernel call.
///
/// Line-aligned: a guard lives on its kernel's stack, and where the stack put it across two
/// cache lines (one stack alignment in four) a 1-element `add` took ~15% longer (~125 against
/// ~108 ns, the same binary with only the environment's size changed; the time went to the
/// guard's unlock loop, whose key loads follow each locked instruction). On one line, every
/// alignment measured alike.
#[repr(align(64))]
struct LockSet {
    /// The keys in `inline` (while there is no heap part).
    len: Len4,
    /// The keys while there are at most LOCKS_INLINE.
    inline: [Key; LOCKS_INLINE],
    /// All keys once there are more (a box: it keeps the guard small to move).
    // Boxed: a thin pointer, one word in the guard instead of a Vec's three.
    #[allow(clippy::box_collection)]
    heap: Option<Box<Vec<Key>>>,
}

/// A count of 0..=LOCKS_INLINE: an enum, so that a `Result` of a guard keeps its tag in the
/// spare values (one word less to move).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum Len4 {
    Zero,
    One,
    Two,
    Three,
    Four,
}

const _: () = assert!(LOCKS_INLINE == 4);

impl Len4 {
    /// `n` must be at most LOCKS_INLINE (callers count inline slots).
    #[inline(always)]
    fn of(n: usize) -> Len4 {
        match n {
            0 => Len4::Zero,
            1 => Len4::One,
            2 => Len4::Two,
            3 => Len4::Three,
            _ => Len4::Four,
        }
    }
}

impl LockSet {
    #[inline(always)]
    const fn new() -> LockSet {
        LockSet {
            len: Len4::Zero,
            inline: [std::ptr::null(); LOCKS_INLINE],
            heap: None,
        }
    }
    #[inline(always)]
    fn as_slice(&self) -> &[Key] {
        match &self.heap {
            None => &self.inline[..self.len as usize],
            Some(h) => h,
        }
    }
    fn push(&mut self, k: Key) {
        if let Some(h) = &mut self.heap {
            h.push(k);
        } else if (self.len as usize) < LOCKS_INLINE {
            self.inline[self.len as usize] = k;
            self.len = Len4::of(self.len as usize + 1);
        } else {
            let mut h = Box::new(self.inline.to_vec());
            h.push(k);
            self.heap = Some(h);
        }
    }
    #[cfg(test)]
    fn find(&self, imp: &StorageImpl) -> Option<Key> {
        let addr = (imp as *const StorageImpl).addr();
        self.as_slice()
            .iter()
            .copied()
            .find(|&k| key_addr(k) == addr)
    }

    /// Unlocks what the keys say was locked (not the table).
    ///
    /// # Safety
    /// Every storage must be alive and locked by this set in the mode its key says.
    #[inline(always)]
    unsafe fn unlock(&self) {
        for &k in self.as_slice() {
            let tags = k.addr() & TAGS;
            if tags & REENTERED != 0 {
                continue;
            }
            let imp = k.map_addr(|a| a & !TAGS);
            // SAFETY: the caller's contract: alive, and locked in this mode by this set.
            unsafe {
                if tags & WRITE != 0 {
                    (*imp).raw_lock().unlock_exclusive();
                } else {
                    (*imp).raw_lock().unlock_shared();
                }
            }
        }
    }

    /// Releases what [`lock_small`] or [`lock_general`] acquired into this set: the locks,
    /// then its entries of the thread's table.
    ///
    /// # Safety
    /// The set must hold what the lock function left (or be empty), this must be its only
    /// release, and the storages must still be alive.
    #[inline(always)]
    unsafe fn release(&self) {
        let n = self.as_slice().len();
        if n == 0 {
            return;
        }
        // SAFETY: the caller's contract.
        unsafe { self.unlock() };
        // SAFETY: see `held_table`; `t` is used only during this call.
        let t = unsafe { &*held_table() };
        if t.len.get() == n && n <= HELD_INLINE {
            // As many entries as ours: every entry is one of ours.
            t.len.set(0);
        } else {
            release_nested(t, self.as_slice());
        }
    }
}

/// Sorts `keys` in lock order (a sorting network: a kernel names 1-4 tensors, where a general
/// sort's setup costs more than the sorting).
#[inline(always)]
fn sort_small(keys: &mut [Key; LOCKS_INLINE], n: usize) {
    #[inline(always)]
    fn cswap(keys: &mut [Key; LOCKS_INLINE], i: usize, j: usize) {
        let (a, b) = (keys[i], keys[j]);
        let swap = order(a) > order(b);
        keys[i] = if swap { b } else { a };
        keys[j] = if swap { a } else { b };
    }
    match n {
        2 => cswap(keys, 0, 1),
        3 => {
            cswap(keys, 0, 1);
            cswap(keys, 1, 2);
            cswap(keys, 0, 1);
        }
        4 => {
            cswap(keys, 0, 1);
            cswap(keys, 2, 3);
            cswap(keys, 0, 2);
            cswap(keys, 1, 3);
            cswap(keys, 1, 2);
        }
        _ => {}
    }
}

/// Locks the storages of `keys[..n]` (n <= LOCKS_INLINE; deduplicated, in lock order) into
/// `set` (empty) and records them in this thread's table. The caller must keep every storage
/// alive until `set.release()`, which it must call exactly once. On error nothing is held or
/// recorded.
#[inline(always)]
fn lock_small(
    keys: &mut [Key; LOCKS_INLINE],
    n: usize,
    set: &mut LockSet,
) -> std::result::Result<(), Refused> {
    sort_small(keys, n);
    // SAFETY: see `held_table`; `t` is used only during this call.
    let t = unsafe { &*held_table() };
    if t.len.get() == 0 {
        // This thread holds nothing: waiting in address order cannot deadlock, and the
        // storages are new to the table. At most LOCKS_INLINE (< HELD_INLINE) entries.
        let mut prev = 0;
        let mut k = 0;
        for &key in &keys[..n] {
            let addr = key_addr(key);
            if addr == prev {
                continue;
            }
            prev = addr;
            let imp = key.map_addr(|a| a & !TAGS);
            // SAFETY: the caller keeps the storage alive.
            let lock = unsafe { (*imp).raw_lock() };
            if key_write(key) {
                lock.lock_exclusive();
            } else {
                lock.lock_shared();
            }
            set.inline[k] = key;
            t.inline[k].set(held_of(key));
            k += 1;
        }
        set.len = Len4::of(k);
        t.len.set(k);
        return Ok(());
    }
    // Through a local set: the guard's address must not reach an out-of-line call, so that
    // the caller can keep the guard in place (not copied into its Result and out again).
    let mut local = LockSet::new();
    let r = lock_general(&mut keys[..n], &mut local);
    *set = local;
    r
}

/// [`lock_small`] for any number of keys, in any order, and for a thread that already holds
/// storages (nested guards) or is exiting.
#[cold]
#[inline(never)]
fn lock_general(keys: &mut [Key], set: &mut LockSet) -> std::result::Result<(), Refused> {
    keys.sort_unstable_by_key(|&k| order(k));
    HELD.try_with(|t| {
        let mut held = load_table(t, keys.len())?;
        let r = lock_nested(&mut held, keys, set);
        store_table(t, &held);
        r
    })
    .unwrap_or(Err(Refused::ThreadExiting))
}

/// Locks the storages of `keys` (sorted in lock order) into `set` while this thread already
/// holds the storages in `held` (maybe none): re-entered reads are counted, conflicts refused,
/// out-of-order locks only tried. On error nothing new is held, `set` is empty and `held` is
/// unchanged.
fn lock_nested(
    held: &mut Vec<Held>,
    keys: &[Key],
    set: &mut LockSet,
) -> std::result::Result<(), Refused> {
    // Only the first key of each storage counts (it is the writer if any key writes).
    let mut uniq: SmallVec<[Key; 8]> = SmallVec::new();
    for &k in keys {
        if uniq.last().is_none_or(|&l| key_addr(l) != key_addr(k)) {
            uniq.push(k);
        }
    }
    // Decide first, so a refusal leaves nothing half-acquired.
    for &k in &uniq {
        let addr = key_addr(k);
        if let Some(&h) = held.iter().find(|&&h| held_addr(h) == addr) {
            if held_write(h) || key_write(k) {
                return Err(Refused::Alias {
                    held_write: held_write(h),
                    write: key_write(k),
                });
            }
        }
    }
    let max_held = held.iter().map(|&h| held_addr(h)).max().unwrap_or(0);
    for &k in &uniq {
        let addr = key_addr(k);
        if held.iter().any(|&h| held_addr(h) == addr) {
            // A read of a storage this thread reads (checked above).
            set.push(k.map_addr(|a| a | REENTERED));
            continue;
        }
        let imp = k.map_addr(|a| a & !TAGS);
        // SAFETY: the caller keeps the storage alive.
        let lock = unsafe { (*imp).raw_lock() };
        // Waiting is only safe in global (address) order; a nested acquisition below a
        // storage this thread holds may only try.
        let ok = if addr < max_held {
            if key_write(k) {
                lock.try_lock_exclusive()
            } else {
                lock.try_lock_shared()
            }
        } else {
            if key_write(k) {
                lock.lock_exclusive()
            } else {
                lock.lock_shared()
            }
            true
        };
        if !ok {
            // SAFETY: the storages are alive (caller) and the set holds exactly what its
            // keys say.
            unsafe { set.unlock() };
            *set = LockSet::new();
            return Err(Refused::OutOfOrder);
        }
        set.push(k);
    }
    held.extend(set.as_slice().iter().map(|&k| held_of(k)));
    Ok(())
}

/// Removes a guard's entries from the table when other guards on this thread hold entries
/// too.
#[cold]
#[inline(never)]
fn release_nested(t: &HeldTable, keys: &[Key]) {
    // Thread exiting with a spilled table: what is left inline is all that can be kept.
    let Ok(mut held) = load_table(t, 0) else {
        t.len.set(t.len.get().min(HELD_INLINE));
        return;
    };
    for &k in keys {
        let addr = key_addr(k);
        // Every entry of one storage has the same mode (conflicts are refused), so any of
        // them is ours to remove.
        if let Some(i) = held.iter().position(|&h| held_addr(h) == addr) {
            held.swap_remove(i);
        }
    }
    store_table(t, &held);
}

/// Locks on a set of storages, held until drop (crate-private: tensors are reached through
/// [`TensorAccess`] or [`RawAccess`]).
pub(crate) struct StorageAccess {
    locks: LockSet,
    // Dropped after `Drop::drop` released the locks.
    _storages: SmallVec<[Storage; 4]>,
    _not_send: NotSend,
}

impl StorageAccess {
    /// Locks `reads` shared and `writes` exclusively (a storage in both is written).
    pub(crate) fn acquire(reads: &[&Storage], writes: &[&Storage]) -> Result<StorageAccess> {
        let mut keys: SmallVec<[Key; 4]> = writes
            .iter()
            .map(|s| key(s.as_impl(), true))
            .chain(reads.iter().map(|s| key(s.as_impl(), false)))
            .collect();
        let mut locks = LockSet::new();
        // The caller's references keep the storages alive until the clones below do.
        lock_general(&mut keys, &mut locks).map_err(Refused::into_error)?;
        let storages = writes.iter().chain(reads).map(|s| (*s).clone()).collect();
        Ok(StorageAccess {
            locks,
            _storages: storages,
            _not_send: PhantomData,
        })
    }

    /// The data pointer of a storage this guard holds (None for meta or empty storages, or a
    /// storage the guard does not hold).
    #[cfg(test)]
    pub(crate) fn data_ptr(&self, storage: &Storage) -> Option<NonNull<u8>> {
        self.locks.find(storage.as_impl())?;
        // SAFETY: this guard holds the storage's lock until it is dropped; a raw pointer is
        // inert until dereferenced in unsafe code, whose author must not outlive the guard.
        unsafe { storage.as_impl().data_ptr_locked() }
    }

    /// Whether the guard holds `storage` for writing.
    #[cfg(test)]
    pub(crate) fn is_writing(&self, storage: &Storage) -> bool {
        self.locks
            .find(storage.as_impl())
            .is_some_and(|k| k.addr() & TAGS == WRITE)
    }
}

impl Drop for StorageAccess {
    fn drop(&mut self) {
        // SAFETY: a StorageAccess exists only after lock_general filled `locks`; `_storages`
        // keeps the storages alive until after this.
        unsafe { self.locks.release() };
    }
}

/// One tensor as a kernel sees it under a [`TensorAccess`]: a consistent snapshot of its
/// metadata and the data pointer of its locked storage.
pub struct AccessedTensor {
    /// The snapshot, kept alive by the guard this tensor lives in (its [`SnapshotArcs`]); an
    /// AccessedTensor is only ever reached through a reference to its guard.
    meta: NonNull<TensorMeta>,
    /// Whether the tensor is written.
    write: bool,
    dtype: ScalarType,
    device: Device,
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
        let base = unsafe { self.meta().storage().as_impl().data_ptr_locked() }.unwrap_or(DANGLING);
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

/// The snapshots a guard keeps alive (one reference count each, held until after the locks
/// are released): in place for up to INLINE tensors (SmallVec's collect cost more than the
/// reference counting it stores). Never read otherwise.
enum SnapshotArcs {
    Inline([Option<Arc<TensorMeta>>; INLINE]),
    Heap(Vec<Arc<TensorMeta>>),
}

impl SnapshotArcs {
    #[inline(always)]
    fn with_capacity(n: usize) -> SnapshotArcs {
        if n <= INLINE {
            SnapshotArcs::Inline([const { None }; INLINE])
        } else {
            SnapshotArcs::Heap(Vec::with_capacity(n))
        }
    }
    /// Keeps `arc` as the `i`-th snapshot (called for i = 0, 1, ... in order) and returns the
    /// guard's view of it. The snapshot is on the heap: the pointer stays valid when the Arc
    /// moves.
    #[inline(always)]
    fn keep(
        &mut self,
        i: usize,
        arc: Arc<TensorMeta>,
        dtype: ScalarType,
        device: Device,
        writable: bool,
    ) -> AccessedTensor {
        let t = accessed(&arc, dtype, device, writable);
        match self {
            SnapshotArcs::Inline(a) => a[i] = Some(arc),
            SnapshotArcs::Heap(v) => v.push(arc),
        }
        t
    }
}

/// The guard a kernel takes on all its tensors at once: the safe entry to tensor memory (see
/// Note [Tensor memory access]).
///
/// ```
/// use ratten_core::{Device, ScalarType, TensorAccess, TensorBase};
///
/// let a = TensorBase::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
/// let out = TensorBase::empty(&[3], ScalarType::Float, Device::CPU).unwrap();
/// {
///     // `a` read (shared lock), `out` written (exclusive lock), until `g` drops.
///     let mut g = TensorAccess::new(&[&a], &[&out]).unwrap();
///     let x: Vec<f32> = g.input_slice::<f32>(0).unwrap().to_vec();
///     for (o, v) in g.output_slice_mut::<f32>(0).unwrap().iter_mut().zip(x) {
///         *o = 2.0 * v;
///     }
/// }
/// assert_eq!(out.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
/// ```
///
/// Strided tensors are read through [`AccessedTensor::data_ptr`] and their strides.
pub struct TensorAccess {
    tensors: TensorList,
    /// Counts of the tensors read (the first ones) and written; u32 so that the guard stays
    /// small to move (a guard over 2^32 tensors is refused).
    n_reads: u32,
    n_writes: u32,
    locks: LockSet,
    // Dropped after `Drop::drop` released the locks.
    _snapshots: SnapshotArcs,
}

// SAFETY: a shared TensorAccess only hands out metadata (of Sync snapshots), raw pointer
// values and shared slices of storages it holds locked; the locks are released by the owning
// thread's drop (the guard stays !Send: it holds raw pointers), so kernels may share `&guard`
// with their workers.
unsafe impl Sync for TensorAccess {}

impl Drop for TensorAccess {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a TensorAccess is dropped either after its lock function succeeded (the set
        // holds what it locked) or after it failed (the set is empty); `_snapshots` (dropped
        // after this) keeps the snapshots, and so the storages, alive.
        unsafe { self.locks.release() };
    }
}

/// Tensors a guard keeps in place (no allocation): a kernel names 1-4.
const INLINE: usize = 4;

/// A guard's `n` tensors: the first `n` of `inline` while `n <= INLINE`, else all in `heap`.
/// (A hand-made small vector: SmallVec's generic push/extend cost more than the rest of
/// acquiring one tensor, and the tensors are written in place in the guard.)
struct TensorList {
    inline: [MaybeUninit<AccessedTensor>; INLINE],
    /// A box: it keeps the guard small to move.
    // Boxed: a thin pointer, one word in the guard instead of a Vec's three.
    #[allow(clippy::box_collection)]
    heap: Option<Box<Vec<AccessedTensor>>>,
}

// AccessedTensor has no drop glue, so the list's inline part leaks nothing.
const _: () = assert!(!std::mem::needs_drop::<AccessedTensor>());

impl TensorList {
    /// # Safety
    /// `n` must be the count of tensors `acquire` wrote.
    #[inline]
    unsafe fn as_slice(&self, n: usize) -> &[AccessedTensor] {
        match &self.heap {
            // SAFETY: without a heap part the first `n` inline slots are initialised (see
            // `acquire`).
            None => unsafe { std::slice::from_raw_parts(self.inline.as_ptr().cast(), n) },
            Some(h) => h,
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
        let n = nr + writes.len();
        Self::acquire(n, nr, |i, keep| {
            let t = if i < nr { reads[i] } else { writes[i - nr] };
            keep.keep(i, t.meta_arc(), t.dtype(), t.device(), i >= nr)
        })
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
#[inline(always)]
fn accessed(
    meta: &TensorMeta,
    dtype: ScalarType,
    device: Device,
    writable: bool,
) -> AccessedTensor {
    AccessedTensor {
        meta: NonNull::from(meta),
        write: writable,
        dtype,
        device,
    }
}

impl TensorAccess {
    /// Builds the guard's tensors `f(0, keep), ..., f(n - 1, keep)` in place, then locks
    /// their storages and returns the guard; the data pointers are read under the locks
    /// later. `f` must return tensors whose snapshots it gave `keep`.
    #[inline(always)]
    fn acquire(
        n: usize,
        n_reads: usize,
        mut f: impl FnMut(usize, &mut SnapshotArcs) -> AccessedTensor,
    ) -> Result<Self> {
        let (Ok(n_reads32), Ok(n_writes32)) = (u32::try_from(n_reads), u32::try_from(n - n_reads))
        else {
            return Err(Error::runtime(format!(
                "storage access: a guard takes at most {} tensors, got {n}",
                u32::MAX
            )));
        };
        let mut g = TensorAccess {
            tensors: TensorList {
                inline: [const { MaybeUninit::uninit() }; INLINE],
                heap: None,
            },
            // Set once the tensors are written (nothing reads them before).
            n_reads: 0,
            n_writes: 0,
            locks: LockSet::new(),
            _snapshots: SnapshotArcs::with_capacity(n),
        };
        // On refusal nothing is held and the lock set is empty, so dropping `g` releases
        // nothing.
        if n <= INLINE {
            let mut keys = [std::ptr::null(); LOCKS_INLINE];
            for (i, slot) in g.tensors.inline[..n].iter_mut().enumerate() {
                let t = slot.write(f(i, &mut g._snapshots));
                keys[i] = key(t.meta().storage().as_impl(), t.write);
            }
            (g.n_reads, g.n_writes) = (n_reads32, n_writes32);
            lock_small(&mut keys, n, &mut g.locks).map_err(Refused::into_error)?;
        } else {
            let tensors: Vec<AccessedTensor> = (0..n).map(|i| f(i, &mut g._snapshots)).collect();
            let mut keys: Vec<Key> = tensors
                .iter()
                .map(|t| key(t.meta().storage().as_impl(), t.write))
                .collect();
            g.tensors.heap = Some(Box::new(tensors));
            (g.n_reads, g.n_writes) = (n_reads32, n_writes32);
            let mut locks = LockSet::new();
            lock_general(&mut keys, &mut locks).map_err(Refused::into_error)?;
            g.locks = locks;
        }
        Ok(g)
    }

    #[inline]
    fn all(&self) -> &[AccessedTensor] {
        // SAFETY: the counts are those of the tensors `acquire` wrote.
        unsafe {
            self.tensors
                .as_slice(self.n_reads as usize + self.n_writes as usize)
        }
    }

    fn index_error(what: &str, i: usize, n: usize) -> Error {
        Error::index(format!(
            "storage access: {what} {i} is out of range for a guard with {n} {what}s"
        ))
    }

    /// The `i`-th tensor read.
    #[inline]
    pub fn input(&self, i: usize) -> Result<&AccessedTensor> {
        let nr = self.n_reads as usize;
        if i >= nr {
            return Err(Self::index_error("input", i, nr));
        }
        Ok(&self.all()[i])
    }

    /// The `i`-th tensor written.
    #[inline]
    pub fn output(&self, i: usize) -> Result<&AccessedTensor> {
        let n = self.n_writes as usize;
        if i >= n {
            return Err(Self::index_error("output", i, n));
        }
        Ok(&self.all()[self.n_reads as usize + i])
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

/// The engine's guard (see Note [Tensor memory access]): it hands out only the data pointers
/// of the tensors it locks, for TensorIterator, whose loops take raw pointers and strides and
/// never ask the guard for typed slices, a tensor's sizes or its dtype. It locks exactly as
/// [`TensorAccess`] does (the same lock order, nesting table and refusals), but writes no
/// per-tensor record: for the up to four operands of a pointwise op that is the guard's whole
/// cost besides the locks themselves.
#[must_use = "the locks are released when the guard is dropped"]
pub struct RawAccess<'a> {
    locks: LockSet,
    /// The snapshots whose storages are locked: borrowed for the guard's life, which keeps
    /// the storages (and so the locks the set points at) alive.
    _snapshots: PhantomData<&'a TensorMeta>,
    _not_send: NotSend,
}

impl<'a> RawAccess<'a> {
    /// Locks the storages of `specs` (the first `n_writes` for writing, the rest for reading)
    /// and writes each tensor's data pointer (its first element, at the snapshot's storage
    /// offset) into `ptrs[k]`. The pointers are valid while the guard lives: written tensors'
    /// storages are held exclusively, read ones shared. Every element of a spec's view lies at
    /// `ptrs[k] + sum(index[d] * strides[d]) * element_size` inside its storage.
    ///
    /// Refused with an error (nothing held): a meta tensor, a slot count other than
    /// `specs.len()`, or an access that conflicts with what this thread holds (as
    /// [`TensorAccess::new`] refuses it).
    ///
    /// Memory safety does not depend on the snapshot being the tensor's current one: a
    /// snapshot keeps its storage alive, its view was bounds-checked when it was made,
    /// storages only grow, and the data pointer is read under the lock.
    ///
    /// # Safety
    /// Each spec's dtype and device must be those of the tensor its snapshot was taken from
    /// (`TensorBase::meta_pinned`, `meta_arc`, ...). A snapshot carries no dtype, and its view
    /// was bounds- and alignment-checked only for its own tensor's dtype: the element size
    /// places the storage offset, and a wider dtype (or a CPU device for a meta snapshot)
    /// would reach past the storage.
    #[inline]
    pub unsafe fn acquire(
        specs: &[SnapshotSpec<'a>],
        n_writes: usize,
        ptrs: &mut [*mut u8],
    ) -> Result<RawAccess<'a>> {
        let n = specs.len();
        if ptrs.len() != n || n_writes > n {
            return Err(Error::runtime(format!(
                "storage access: {n} tensors ({n_writes} written) need as many pointer slots, \
                 got {}",
                ptrs.len()
            )));
        }
        // A meta tensor has no data: refused before anything is locked, so that from the
        // first lock on nothing fails and the guard is built where it is returned.
        if let Some(&(_, _, device)) = specs.iter().find(|s| s.2.is_meta()) {
            return Err(no_data(device));
        }
        let mut guard = RawAccess {
            locks: LockSet::new(),
            _snapshots: PhantomData,
            _not_send: PhantomData,
        };
        if n <= LOCKS_INLINE {
            let mut keys = [std::ptr::null(); LOCKS_INLINE];
            for (k, spec) in specs.iter().enumerate() {
                keys[k] = key(spec.0.storage().as_impl(), k < n_writes);
            }
            lock_small(&mut keys, n, &mut guard.locks).map_err(Refused::into_error)?;
        } else {
            let mut keys: Vec<Key> = specs
                .iter()
                .enumerate()
                .map(|(k, spec)| key(spec.0.storage().as_impl(), k < n_writes))
                .collect();
            lock_general(&mut keys, &mut guard.locks).map_err(Refused::into_error)?;
        }
        for (p, &(m, dtype, _)) in ptrs.iter_mut().zip(specs) {
            // SAFETY: the guard holds this storage's lock (every spec's storage was locked
            // above) for as long as it lives.
            let base = unsafe { m.storage().as_impl().data_ptr_locked() }.unwrap_or(DANGLING);
            // wrapping_add: as in `AccessedTensor::raw_data_ptr` (an empty view may carry
            // any offset; a view with elements was bounds-checked against the storage).
            *p = base
                .as_ptr()
                .wrapping_add(m.storage_offset() as usize * dtype.element_size());
        }
        Ok(guard)
    }
}

impl Drop for RawAccess<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the set holds what `lock_small`/`lock_general` locked (or nothing, if they
        // failed: then no guard was made), this is its only release, and the borrowed
        // snapshots keep the storages alive.
        unsafe { self.locks.release() };
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
    fn new_gives_typed_slices_and_holds_its_locks() {
        let a = TensorBase::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let out = TensorBase::empty(&[2], ScalarType::Float, Device::CPU).unwrap();
        let mut g = TensorAccess::new(&[&a], &[&out]).unwrap();
        assert_eq!(g.input_slice::<f32>(0).unwrap(), &[1.0, 2.0]);
        g.output_slice_mut::<f32>(0).unwrap()[1] = 7.0;
        assert!(g.output_slice_mut::<i32>(0).is_err()); // wrong dtype
        assert!(g.input(1).is_err() && g.output(1).is_err());
        // Held: a conflicting access on this thread is refused; a nested read of what it
        // reads re-enters.
        assert!(TensorAccess::write(&a).is_err());
        assert!(TensorAccess::read(&out).is_err());
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        drop(g);
        assert_eq!(out.to_vec::<f32>().unwrap()[1], 7.0);
        let _w = TensorAccess::new(&[], &[&a, &out]).unwrap();
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
    fn raw_access_locks_like_new_and_gives_data_pointers() {
        let a = TensorBase::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
        let view = a.as_strided(&[2], &[1], Some(1)).unwrap();
        let out = TensorBase::empty(&[2], ScalarType::Float, Device::CPU).unwrap();
        let (mv, mo) = (view.meta_arc(), out.meta_arc());
        let f = ScalarType::Float;
        let mut ptrs = [std::ptr::null_mut(); 2];
        // SAFETY: both snapshots are of Float CPU tensors.
        let g = unsafe {
            RawAccess::acquire(
                &[(&mo, f, Device::CPU), (&mv, f, Device::CPU)],
                1,
                &mut ptrs,
            )
        }
        .unwrap();
        // SAFETY: the guard holds both storages; the view's pointer is at its offset 1.
        unsafe {
            assert_eq!(*ptrs[1].cast::<f32>(), 2.0);
            *ptrs[0].cast::<f32>() = 9.0;
        }
        // Held as TensorAccess holds: the output refuses everything, the input writes.
        assert!(TensorAccess::read(&out).is_err());
        assert!(TensorAccess::write(&a).is_err());
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);
        drop(g);
        assert_eq!(out.to_vec::<f32>().unwrap()[0], 9.0);
        drop(TensorAccess::new(&[], &[&a, &out]).unwrap());
        // A read and a write of one storage lock it once, for writing.
        let ma = a.meta_arc();
        let mut ptrs = [std::ptr::null_mut(); 2];
        // SAFETY: as above.
        let g = unsafe {
            RawAccess::acquire(
                &[(&ma, f, Device::CPU), (&mv, f, Device::CPU)],
                1,
                &mut ptrs,
            )
        }
        .unwrap();
        assert!(TensorAccess::read(&a).is_err());
        drop(g);
        // A conflict with what this thread holds is refused and leaves nothing held.
        let outer = TensorAccess::write(&out).unwrap();
        let mut ptrs = [std::ptr::null_mut(); 2];
        // SAFETY: as above.
        let e = unsafe {
            RawAccess::acquire(
                &[(&ma, f, Device::CPU), (&mo, f, Device::CPU)],
                1,
                &mut ptrs,
            )
        }
        .err()
        .unwrap();
        assert!(e.message().contains("already holds"), "{e}");
        drop(outer);
        drop(TensorAccess::new(&[], &[&a, &out]).unwrap());
        // More than four tensors take the general path; a wrong slot count is an error.
        let ts: Vec<_> = (0..6)
            .map(|_| TensorBase::empty(&[1], f, Device::CPU).unwrap())
            .collect();
        let ms: Vec<_> = ts.iter().map(|t| t.meta_arc()).collect();
        let specs: Vec<_> = ms.iter().map(|m| (&**m, f, Device::CPU)).collect();
        let mut ptrs = [std::ptr::null_mut(); 6];
        // SAFETY: as above.
        let g = unsafe { RawAccess::acquire(&specs, 2, &mut ptrs) }.unwrap();
        assert!(ptrs.iter().all(|p| !p.is_null()));
        assert!(TensorAccess::read(&ts[0]).is_err());
        assert!(TensorAccess::write(&ts[5]).is_err());
        drop(g);
        drop(TensorAccess::new(&[], &ts.iter().collect::<Vec<_>>()).unwrap());
        // SAFETY: as above.
        assert!(unsafe { RawAccess::acquire(&specs, 2, &mut ptrs[..3]) }.is_err());
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
    fn four_tensors_in_every_order_lock_each_storage_once_in_its_strongest_mode() {
        // Two storages named four times (a view of each): every permutation of the argument
        // order goes through the sorting network and must dedupe to "a written, b read".
        let a = TensorBase::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let b = TensorBase::from_slice(&[3.0f32, 4.0], &[2]).unwrap();
        let (va, vb) = (
            a.as_strided(&[1], &[1], Some(1)).unwrap(),
            b.as_strided(&[1], &[1], Some(1)).unwrap(),
        );
        let names = [&a, &b, &va, &vb];
        let perms = [
            [0, 1, 2, 3],
            [3, 2, 1, 0],
            [1, 3, 0, 2],
            [2, 0, 3, 1],
            [3, 0, 2, 1],
        ];
        for p in perms {
            let reads: Vec<&TensorBase> = p[..3].iter().map(|&i| names[i]).collect();
            // Write whichever of a / va is not already last among the reads, so that a is
            // written through one tensor and read through another in some orders.
            let w = if p[3] == 2 || p[3] == 0 {
                names[p[3]]
            } else {
                &a
            };
            let g = TensorAccess::new(&reads, &[w]).unwrap();
            assert!(g.output(0).unwrap().is_writable());
            // a is held for writing, b for reading: a nested read of b re-enters, any
            // nested access to a is refused.
            assert_eq!(b.to_vec::<f32>().unwrap(), vec![3.0, 4.0]);
            assert!(TensorAccess::read(&a).is_err());
            assert!(TensorAccess::write(&b).is_err());
            drop(g);
            // Fully released: both can be written again, on this thread and another.
            drop(TensorAccess::new(&[], &[&a, &b]).unwrap());
            std::thread::scope(|s| {
                s.spawn(|| drop(TensorAccess::new(&[], &[&a, &b]).unwrap()));
            });
        }
    }

    #[test]
    fn storage_guards_report_what_they_hold() {
        let s1 = Storage::new(8, Device::CPU).unwrap();
        let s2 = Storage::new(8, Device::CPU).unwrap();
        let s3 = Storage::new(8, Device::CPU).unwrap();
        let g = StorageAccess::acquire(&[&s1, &s2], &[&s1]).unwrap();
        assert!(g.is_writing(&s1));
        assert!(!g.is_writing(&s2));
        assert!(g.data_ptr(&s2).is_some());
        assert!(g.data_ptr(&s3).is_none());
        // A nested read of s2 re-enters: held, but not for writing.
        let inner = StorageAccess::acquire(&[&s2, &s3], &[]).unwrap();
        assert!(inner.data_ptr(&s2).is_some() && !inner.is_writing(&s2));
        drop(g);
        // s2 is still read by `inner`.
        assert!(StorageAccess::acquire(&[], &[&s2]).is_err());
        drop(inner);
        drop(StorageAccess::acquire(&[], &[&s1, &s2, &s3]).unwrap());
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
