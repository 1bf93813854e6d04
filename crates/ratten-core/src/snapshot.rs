//! [`SnapshotCell`]: a slot holding an `Arc<T>` that readers load without a lock or any
//! atomic read-modify-write, while writers (serialised by a mutex) replace it.
//!
//! The problem every such slot solves: a reader loads the pointer and then clones the Arc (or
//! reads through it); a writer may swap in a new value and drop the old one in between. Here
//! readers announce the pointer they are about to use in one of their thread's *hazard slots*
//! (hazard pointers, Michael 2004), and a writer never frees a replaced value that some slot
//! names: it keeps it in the cell's *retired* list and frees it at a later write, or when the
//! cell itself is dropped (a reader borrows the cell, so then no reader can be left).
//!
//! Reader (`with`, `load`): store the pointer into the next free slot of this thread, a store
//! fence, reload the pointer; if it is unchanged, no writer can have freed it (the writer
//! checks the slots after its swap), else retry with the new one. The slot is cleared when the
//! reader is done. No read-modify-write: a load, two stores and the fence.
//!
//! The fence is the cost that remains, and it is made asymmetric where the OS allows it: on
//! Linux, `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` makes every running thread of the
//! process execute a full memory barrier, so a writer that calls it may pair with readers that
//! only prevent compiler reordering (the scheme of folly's hazptr and liburcu). Readers then
//! pay no fence instruction at all; writers pay one system call (~0.4 us) — and only when
//! some other thread has ever read a cell (a program whose other threads never read tensor
//! metadata pays nothing). Where membarrier is unavailable (or under Miri) readers execute a
//! real `SeqCst` fence and writers one too: the classic, portable hazard-pointer handshake.
//!
//! Each thread has [`SLOTS`] hazard slots, taken in any order and given back in any order (a
//! bitmask of slots in use): one per read in progress (`with`, `load`) and one per [`Pinned`]
//! value alive on the thread. A reader that finds none free (or runs while its thread is
//! exiting) clones the Arc under the writer mutex instead, which is always correct and merely
//! slower.
//!
//! [`Pinned`] is a read that lasts as long as a value: a holder of a cell's value for a while
//! (TensorIterator keeps each operand's snapshot for its lifetime) pays neither the reference
//! count's two atomic read-modify-writes nor anything but the hazard's plain stores. It is
//! `!Send` (its slot is its thread's), so it is dropped on the thread that made it.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

/// Hazard slots per thread: reads in progress plus pinned values served without the mutex.
pub(crate) const SLOTS: usize = 16;

/// One thread's hazard slots. Blocks are never freed (they are few: one per thread alive at
/// once); a block whose thread exited is reused by the next new thread.
struct ThreadSlots {
    /// Addresses being read (0: free). Written only by the owning thread; read by writers.
    slots: [AtomicUsize; SLOTS],
    /// Bitmask of the slots in use by the owning thread (only the owner touches it; atomic
    /// only to keep the block `Sync` in the registry).
    used: AtomicUsize,
    /// Whether a live thread owns the block.
    owned: AtomicBool,
}

/// Every slot block ever made.
static REGISTRY: Mutex<Vec<&'static ThreadSlots>> = Mutex::new(Vec::new());
/// Blocks owned by live threads: a writer that sees at most its own may skip the scan.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// This thread's block, taken on its first read and given back when the thread exits.
struct Local(Cell<Option<&'static ThreadSlots>>);

impl Drop for Local {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            // A block with a slot still in use (cannot happen: thread-local destructors do
            // not run inside a read) stays owned forever rather than be reused while named.
            if b.used.load(Ordering::Relaxed) == 0 {
                b.owned.store(false, Ordering::Release);
                LIVE.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

thread_local! {
    static LOCAL: Local = const { Local(Cell::new(None)) };
}

/// Takes a free block (or makes one) for this thread.
#[cold]
#[inline(never)]
fn register() -> &'static ThreadSlots {
    let mut reg = REGISTRY.lock();
    // Before any slot of this thread is written: a writer that reads LIVE without seeing
    // this increment swapped its pointer before our first reload (see `writer_must_scan`).
    LIVE.fetch_add(1, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    asymmetric_init();
    let block = match reg
        .iter()
        .find(|b| !b.owned.load(Ordering::Acquire))
        .copied()
    {
        Some(b) => b,
        None => {
            let b: &'static ThreadSlots = Box::leak(Box::new(ThreadSlots {
                slots: [const { AtomicUsize::new(0) }; SLOTS],
                used: AtomicUsize::new(0),
                owned: AtomicBool::new(false),
            }));
            reg.push(b);
            b
        }
    };
    block.owned.store(true, Ordering::Release);
    block
}

/// This thread's block, or None while the thread is exiting.
#[inline(always)]
fn local_slots() -> Option<&'static ThreadSlots> {
    LOCAL
        .try_with(|l| match l.0.get() {
            Some(b) => b,
            None => {
                let b = register();
                l.0.set(Some(b));
                b
            }
        })
        .ok()
}

/// Whether the asymmetric fence is in use: decided once, by the first registration, under
/// the registry lock; every reader registers (takes that lock) before its first read, and
/// every writer that scans takes it too, so all of them see the same, final value.
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);

#[cfg(all(target_os = "linux", not(miri)))]
mod membarrier {
    // From <linux/membarrier.h>.
    const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    pub(super) fn register() -> bool {
        // SAFETY: a system call with integer arguments; it touches no memory of ours.
        unsafe { libc::syscall(libc::SYS_membarrier, CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 }
    }
    pub(super) fn barrier() -> bool {
        // SAFETY: as above.
        unsafe { libc::syscall(libc::SYS_membarrier, CMD_PRIVATE_EXPEDITED, 0, 0) == 0 }
    }
}

/// Registers for membarrier once per process (called with the registry lock held).
fn asymmetric_init() {
    static TRIED: AtomicBool = AtomicBool::new(false);
    if TRIED.swap(true, Ordering::Relaxed) {
        return;
    }
    #[cfg(all(target_os = "linux", not(miri)))]
    if membarrier::register() {
        ASYMMETRIC.store(true, Ordering::SeqCst);
    }
}

/// The reader's half of the handshake, between publishing the hazard and reloading.
#[inline(always)]
fn reader_fence() {
    if ASYMMETRIC.load(Ordering::Relaxed) {
        // The writer's membarrier orders this thread's slot store before its reload.
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// The writer's half, between the swap and reading the slots.
fn writer_fence() {
    #[cfg(all(target_os = "linux", not(miri)))]
    if ASYMMETRIC.load(Ordering::SeqCst) {
        if membarrier::barrier() {
            return;
        }
        // A registered process cannot get an error here; should it, readers that already
        // skip their fence cannot be fixed up, so do not return silently unordered.
        std::process::abort();
    }
    fence(Ordering::SeqCst);
}

/// A hazard slot held by a reader; clears it (and its bit) on drop, also on unwinding.
/// `!Send` (the raw-pointer marker): the bitmask is the owning thread's alone.
struct Hazard {
    block: &'static ThreadSlots,
    slot: usize,
    _owner_thread: PhantomData<*const ()>,
}

impl Drop for Hazard {
    #[inline]
    fn drop(&mut self) {
        // Release: the reader's uses of the value happen before a writer that sees 0 frees it.
        self.block.slots[self.slot].store(0, Ordering::Release);
        let used = self.block.used.load(Ordering::Relaxed);
        self.block
            .used
            .store(used & !(1 << self.slot), Ordering::Relaxed);
    }
}

/// A slot holding an `Arc<T>`: lock-free reads, mutex-serialised replacement (see the module
/// docs).
pub struct SnapshotCell<T> {
    /// From `Arc::into_raw`; the cell owns that one strong count.
    ptr: AtomicPtr<T>,
    /// Serialises writers; holds replaced values that a reader may still be using.
    writer: Mutex<Vec<Arc<T>>>,
    _owns: PhantomData<Arc<T>>,
}

// SAFETY: as for Arc<T> (shared between threads, dropped by any): T must be Send + Sync.
unsafe impl<T: Send + Sync> Send for SnapshotCell<T> {}
// SAFETY: as above; the pointer is only replaced atomically and freed under the hazard
// protocol.
unsafe impl<T: Send + Sync> Sync for SnapshotCell<T> {}

impl<T> SnapshotCell<T> {
    pub fn new(value: Arc<T>) -> Self {
        SnapshotCell {
            ptr: AtomicPtr::new(Arc::into_raw(value).cast_mut()),
            writer: Mutex::new(Vec::new()),
            _owns: PhantomData,
        }
    }

    /// Runs `f` on the current value, borrowed (no reference counted). `f` may do anything,
    /// even replace this cell's value (the borrowed one stays valid until `f` returns).
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        match self.protect() {
            // SAFETY: `protect` published `p` in a hazard slot that `_h` keeps until after
            // `f`, and validated it after publishing: no writer frees it meanwhile.
            Some((p, _h)) => f(unsafe { &*p }),
            None => f(&self.load_locked()),
        }
    }

    /// The current value, as a new strong reference.
    #[inline]
    pub fn load(&self) -> Arc<T> {
        match self.protect() {
            Some((p, h)) => {
                // SAFETY: `p` came from Arc::into_raw and is kept alive by the hazard (see
                // `with`); the increment makes the returned Arc own its own count.
                let arc = unsafe {
                    Arc::increment_strong_count(p);
                    Arc::from_raw(p)
                };
                drop(h);
                arc
            }
            None => self.load_locked(),
        }
    }

    /// Whether `other` is the current value (no protection needed: `other` keeps its own
    /// allocation alive, so no other value can share its address).
    #[inline]
    pub fn is_current(&self, other: &Arc<T>) -> bool {
        std::ptr::eq(self.ptr.load(Ordering::Acquire), Arc::as_ptr(other))
    }

    /// The current value, held for as long as the returned handle lives without counting a
    /// reference (a hazard slot of this thread names it; an owned reference when none is
    /// free). The handle borrows the cell: the cell's own reference (which it drops without
    /// looking at hazards) must outlive it.
    #[inline(always)]
    pub fn pin(&self) -> Pinned<'_, T> {
        // SAFETY: the returned handle borrows `self`, so the cell outlives it.
        unsafe { self.pin_unbounded() }
    }

    /// [`SnapshotCell::pin`] without the borrow, for a holder that keeps the cell alive by
    /// other means (TensorIterator keeps an owned operand's tensor beside its snapshot).
    ///
    /// # Safety
    /// The cell must not be dropped before the returned handle, whatever lifetime the caller
    /// picks (a cell drops its value without looking at hazards; a handle converted by
    /// `to_arc` or cloned is unaffected).
    #[inline(always)]
    pub unsafe fn pin_unbounded<'x>(&self) -> Pinned<'x, T> {
        match self.protect() {
            Some((ptr, hazard)) => Pinned {
                ptr,
                keep: PinnedKeep::Hazard(hazard),
                _cell: PhantomData,
            },
            None => Pinned::owned(self.load_locked()),
        }
    }

    /// Whether `value` is the current value (see [`SnapshotCell::is_current`]); `value` must be
    /// kept alive by the caller (a pinned or counted reference).
    #[inline]
    pub fn is_current_ptr(&self, value: &T) -> bool {
        std::ptr::eq(self.ptr.load(Ordering::Acquire), value)
    }

    /// Publishes the current pointer in a hazard slot of this thread. None when the thread's
    /// slots are all in use or it is exiting.
    #[inline(always)]
    fn protect(&self) -> Option<(*const T, Hazard)> {
        let block = local_slots()?;
        let used = block.used.load(Ordering::Relaxed);
        let free = !used & ((1usize << SLOTS) - 1);
        if free == 0 {
            return None;
        }
        let index = free.trailing_zeros() as usize;
        block.used.store(used | (1 << index), Ordering::Relaxed);
        let h = Hazard {
            block,
            slot: index,
            _owner_thread: PhantomData,
        };
        let slot = &block.slots[index];
        let mut p = self.ptr.load(Ordering::Acquire);
        loop {
            // Release: a writer that reads this value (rather than the 0 that ended this
            // thread's previous read in the slot) must also see that read finished before
            // it frees that read's value; a later plain store would not carry the earlier
            // release.
            slot.store(p as usize, Ordering::Release);
            reader_fence();
            let q = self.ptr.load(Ordering::Acquire);
            if q == p {
                return Some((p, h));
            }
            p = q;
        }
    }

    /// The fallback read: writers free only under the mutex, so holding it pins the value.
    #[cold]
    fn load_locked(&self) -> Arc<T> {
        let _w = self.writer.lock();
        let p = self.ptr.load(Ordering::Acquire);
        // SAFETY: `p` is the cell's own reference (from Arc::into_raw), which no writer can
        // release while we hold the mutex.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }

    /// Takes the writer lock: the value cannot change until the guard is dropped.
    pub fn write(&self) -> CellWriter<'_, T> {
        CellWriter {
            cell: self,
            retired: self.writer.lock(),
        }
    }

    /// The value, mutably, when the cell is its only holder (one strong count, no weak
    /// one) and no replaced value is retired. `&mut self` excludes every reader of the cell,
    /// and nobody else can reach the value.
    #[inline]
    pub(crate) fn unique_mut(&mut self) -> Option<&mut T> {
        if !self.writer.get_mut().is_empty() {
            return None;
        }
        let p = *self.ptr.get_mut();
        // SAFETY: `p` came from Arc::into_raw and the cell's count keeps it alive;
        // ManuallyDrop: the count stays the cell's.
        let arc = std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(p) });
        if Arc::strong_count(&arc) != 1 || Arc::weak_count(&arc) != 0 {
            return None;
        }
        // Pairs with the Release decrements of the handles dropped before: their reads of
        // the value happen before our writes.
        fence(Ordering::Acquire);
        // SAFETY: the cell's reference is the only one (no other strong or weak count, and
        // none can be made without one), and `&mut self` excludes the cell's readers; `p`
        // has the provenance of the Arc's allocation (from `into_raw`).
        Some(unsafe { &mut *p })
    }

    /// [`SnapshotCell::unique_mut`] without the checks.
    ///
    /// # Safety
    /// `unique_mut` must have succeeded on this cell, and nothing may have reached the cell
    /// or its value since.
    #[inline]
    pub(crate) unsafe fn unique_mut_unchecked(&mut self) -> &mut T {
        // SAFETY: the caller's contract: as in `unique_mut`.
        unsafe { &mut **self.ptr.get_mut() }
    }

    /// Consumes the cell, returning its value (retired values are dropped).
    #[inline]
    pub fn into_inner(self) -> Arc<T> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the cell is not used again (ManuallyDrop, fields read once each); the
        // pointer's count is handed to the returned Arc.
        unsafe {
            let writer = std::ptr::read(&this.writer);
            drop(writer.into_inner());
            Arc::from_raw(this.ptr.load(Ordering::Relaxed))
        }
    }
}

impl<T> Drop for SnapshotCell<T> {
    fn drop(&mut self) {
        // SAFETY: the cell's own strong count; `&mut self`: no reader or writer is left, so
        // no hazard can name any of these values.
        drop(unsafe { Arc::from_raw(self.ptr.load(Ordering::Relaxed)) });
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SnapshotCell<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with(|v| f.debug_tuple("SnapshotCell").field(v).finish())
    }
}

/// A value of a [`SnapshotCell`] held without a reference count while this handle lives: a
/// hazard slot of this thread names it, so no writer frees it meanwhile (an owned `Arc` when
/// the thread had no free slot). `!Send`: dropped on the thread that pinned it, whose slot it
/// gives back. Sharing `&Pinned` with other threads is fine (they only read the value).
/// `'c` is the cell's borrow (`'static` for an owned `Arc` and for `pin_unbounded`).
pub struct Pinned<'c, T> {
    /// The value, whichever way it is kept (read without looking at `keep`: a deref is one
    /// load, and a TensorIterator reads its operands' snapshots many times per build).
    ptr: *const T,
    keep: PinnedKeep<T>,
    _cell: PhantomData<&'c ()>,
}

/// What keeps a pinned value alive.
enum PinnedKeep<T> {
    /// `ptr` came from the cell's `Arc::into_raw` and was validated after the hazard published
    /// it (see `SnapshotCell::with`); the hazard is kept for its drop, which gives the slot back.
    Hazard(#[allow(dead_code)] Hazard),
    /// `ptr` is this Arc's.
    Owned(Arc<T>),
}

impl<T> Pinned<'_, T> {
    #[inline(always)]
    fn owned(a: Arc<T>) -> Self {
        Pinned {
            ptr: Arc::as_ptr(&a),
            keep: PinnedKeep::Owned(a),
            _cell: PhantomData,
        }
    }
}

// SAFETY: `&Pinned<T>` only gives `&T` (never the slot), and the value stays alive until the
// owner drops the handle on its own thread; so sharing it is sharing `&T`.
unsafe impl<T: Sync + Send> Sync for Pinned<'_, T> {}

impl<T> Pinned<'_, T> {
    /// A counted reference to the value.
    #[inline]
    pub fn to_arc(&self) -> Arc<T> {
        match &self.keep {
            PinnedKeep::Hazard(_) => {
                // SAFETY: `ptr` came from Arc::into_raw and the hazard keeps it alive; the
                // increment makes the returned Arc own its own count.
                unsafe {
                    Arc::increment_strong_count(self.ptr);
                    Arc::from_raw(self.ptr)
                }
            }
            PinnedKeep::Owned(a) => a.clone(),
        }
    }

    /// Whether both name the same value.
    #[inline]
    pub fn ptr_eq(&self, other: &Pinned<'_, T>) -> bool {
        std::ptr::eq(&**self, &**other)
    }
}

impl<T> From<Arc<T>> for Pinned<'static, T> {
    fn from(a: Arc<T>) -> Self {
        Pinned::owned(a)
    }
}

impl<T> std::ops::Deref for Pinned<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: `keep` keeps the value alive until the handle is dropped: the hazard names
        // `ptr` (see the type's doc), or the Arc it came from is held.
        unsafe { &*self.ptr }
    }
}

impl<'c, T> Clone for Pinned<'c, T> {
    /// The clone holds a counted reference (a second hazard slot is not worth it).
    fn clone(&self) -> Self {
        Pinned::owned(self.to_arc())
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Pinned<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Pinned").field(&**self).finish()
    }
}

/// Exclusive write access to a [`SnapshotCell`].
pub struct CellWriter<'a, T> {
    cell: &'a SnapshotCell<T>,
    retired: MutexGuard<'a, Vec<Arc<T>>>,
}

impl<T> CellWriter<'_, T> {
    /// The current value (stable while the writer lock is held).
    pub fn current(&self) -> &T {
        // SAFETY: values are freed only by a writer, and we are the only one.
        unsafe { &*self.cell.ptr.load(Ordering::Acquire) }
    }

    /// Installs `new`; the replaced value is released once no reader uses it. Values freed
    /// here are dropped after every lock of this module is released (their drop may run any
    /// code, such as a storage deleter), but while the writer lock is still held.
    pub fn store(&mut self, new: Arc<T>) {
        let old = self
            .cell
            .ptr
            .swap(Arc::into_raw(new).cast_mut(), Ordering::SeqCst);
        // SAFETY: the cell's reference to the old value, now ours.
        self.retired.push(unsafe { Arc::from_raw(old) });
        let free = collect_unhazarded(&mut self.retired);
        drop(free);
    }
}

/// Removes from `retired` the values no hazard slot names, and returns them.
fn collect_unhazarded<T>(retired: &mut Vec<Arc<T>>) -> Vec<Arc<T>> {
    if !writer_must_scan() {
        // Only this thread can name them, in its own slots (a writer nested in a read).
        let own = local_slots();
        let named =
            |p: usize| own.is_some_and(|b| b.slots.iter().any(|s| s.load(Ordering::Relaxed) == p));
        return drain_unnamed(retired, named);
    }
    // The registry lock first: every thread's registration (and with the first one the
    // choice of fence, ASYMMETRIC) happened before it or will see our swap when it registers.
    let reg = REGISTRY.lock();
    writer_fence();
    let named = |p: usize| {
        reg.iter()
            .any(|b| b.slots.iter().any(|s| s.load(Ordering::Acquire) == p))
    };
    let free = drain_unnamed(retired, named);
    drop(reg);
    free
}

fn drain_unnamed<T>(retired: &mut Vec<Arc<T>>, named: impl Fn(usize) -> bool) -> Vec<Arc<T>> {
    let mut free = Vec::new();
    let mut i = 0;
    while i < retired.len() {
        if named(Arc::as_ptr(&retired[i]) as usize) {
            i += 1;
        } else {
            free.push(retired.swap_remove(i));
        }
    }
    free
}

/// Whether a thread other than this one may hold hazards: more than one registered thread,
/// or one that is not this thread. (A thread registers before its first hazard; see
/// `register` for why a stale count cannot hide a reader that will see the old pointer.)
fn writer_must_scan() -> bool {
    match LIVE.load(Ordering::SeqCst) {
        0 => false,
        1 => !LOCAL.try_with(|l| l.0.get().is_some()).unwrap_or(false),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// A value whose drop is observable.
    struct Probe(u64, Arc<AtomicU64>);
    impl Drop for Probe {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn reads_see_the_current_value_and_replaced_ones_are_freed() {
        let drops = Arc::new(AtomicU64::new(0));
        let cell = SnapshotCell::new(Arc::new(Probe(1, drops.clone())));
        assert_eq!(cell.with(|p| p.0), 1);
        let held = cell.load();
        cell.write().store(Arc::new(Probe(2, drops.clone())));
        assert_eq!(cell.with(|p| p.0), 2);
        // The held reference keeps the old value alive; the cell released its own.
        assert_eq!((held.0, drops.load(Ordering::SeqCst)), (1, 0));
        assert!(!cell.is_current(&held));
        drop(held);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(cell.is_current(&cell.load()));
        drop(cell);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_borrowed_value_survives_a_replace_inside_the_read() {
        let drops = Arc::new(AtomicU64::new(0));
        let cell = SnapshotCell::new(Arc::new(Probe(1, drops.clone())));
        cell.with(|old| {
            cell.write().store(Arc::new(Probe(2, drops.clone())));
            // Still readable: retired, not freed.
            assert_eq!(old.0, 1);
            assert_eq!(drops.load(Ordering::SeqCst), 0);
            assert_eq!(cell.with(|p| p.0), 2);
        });
        // The next write frees it (no hazard names it any more).
        cell.write().store(Arc::new(Probe(3, drops.clone())));
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        let v = cell.into_inner();
        assert_eq!((v.0, drops.load(Ordering::SeqCst)), (3, 2));
    }

    #[test]
    fn reads_nested_past_the_slots_fall_back_to_the_mutex() {
        let cell = SnapshotCell::new(Arc::new(7u32));
        fn nest(cell: &SnapshotCell<u32>, left: usize) -> u32 {
            if left == 0 {
                return cell.load().as_ref() + cell.with(|v| *v);
            }
            cell.with(|v| *v + nest(cell, left - 1))
        }
        assert_eq!(nest(&cell, SLOTS + 3), 7 * (SLOTS as u32 + 5));
        // All slots were released: a writer can free the old value at once.
        let drops = Arc::new(AtomicU64::new(0));
        let cell = SnapshotCell::new(Arc::new(Probe(0, drops.clone())));
        cell.with(|_| cell.with(|_| ()));
        cell.write().store(Arc::new(Probe(1, drops.clone())));
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn pinned_values_outlive_writes_and_are_released_in_any_order() {
        let drops = Arc::new(AtomicU64::new(0));
        let a = SnapshotCell::new(Arc::new(Probe(1, drops.clone())));
        let b = SnapshotCell::new(Arc::new(Probe(10, drops.clone())));
        let pa = a.pin();
        let pb = b.pin();
        assert!(a.is_current_ptr(&pa) && b.is_current_ptr(&pb));
        a.write().store(Arc::new(Probe(2, drops.clone())));
        b.write().store(Arc::new(Probe(11, drops.clone())));
        // Both pinned old values are retired, not freed.
        assert_eq!((pa.0, pb.0, drops.load(Ordering::SeqCst)), (1, 10, 0));
        assert!(!a.is_current_ptr(&pa));
        // Released first-in first-out (not nested): each slot is given back on its own.
        drop(pa);
        a.write().store(Arc::new(Probe(3, drops.clone())));
        assert_eq!(drops.load(Ordering::SeqCst), 2); // values 1 and 2
        assert_eq!(pb.0, 10);
        let counted = pb.to_arc();
        drop(pb);
        b.write().store(Arc::new(Probe(12, drops.clone())));
        // 10 is still counted; 11 is freed.
        assert_eq!((counted.0, drops.load(Ordering::SeqCst)), (10, 3));
        drop(counted);
        assert_eq!(drops.load(Ordering::SeqCst), 4);
        assert_eq!(local_slots().unwrap().used.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn pins_past_the_slots_hold_counted_references() {
        let cell = SnapshotCell::new(Arc::new(5u32));
        let pins: Vec<Pinned<'_, u32>> = (0..SLOTS + 4).map(|_| cell.pin()).collect();
        assert!(pins.iter().all(|p| **p == 5 && p.ptr_eq(&pins[0])));
        // Every slot is taken: a read still works (through the mutex).
        assert_eq!(cell.with(|v| *v), 5);
        let clone = pins[0].clone();
        drop(pins);
        assert_eq!(*clone, 5);
        assert_eq!(local_slots().unwrap().used.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_pinned_value_is_readable_from_other_threads() {
        let cell = SnapshotCell::new(Arc::new(42u64));
        let pinned = cell.pin();
        cell.write().store(Arc::new(43));
        let sum: u64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2).map(|_| s.spawn(|| *pinned + 1)).collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(sum, 86);
        assert_eq!(cell.with(|v| *v), 43);
    }

    #[test]
    fn a_panicking_reader_releases_its_slot() {
        let cell = SnapshotCell::new(Arc::new(1u8));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cell.with(|_| panic!("reader panics"));
        }));
        assert!(r.is_err());
        let b = local_slots().unwrap();
        assert_eq!(b.used.load(Ordering::Relaxed), 0);
        assert!(b.slots.iter().all(|s| s.load(Ordering::Relaxed) == 0));
    }

    #[test]
    fn concurrent_readers_and_writers_never_see_a_freed_value() {
        // Each value checks on drop that nobody reads it: readers hold a reader count on
        // it while they look.
        struct Checked {
            n: u64,
            readers: AtomicU64,
        }
        impl Drop for Checked {
            fn drop(&mut self) {
                assert_eq!(self.readers.load(Ordering::SeqCst), 0, "freed while read");
            }
        }
        let new = |n| {
            Arc::new(Checked {
                n,
                readers: AtomicU64::new(0),
            })
        };
        let cell = SnapshotCell::new(new(0));
        let rounds = if cfg!(miri) { 30 } else { 3000 };
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    let mut last = 0;
                    for _ in 0..rounds {
                        let n = cell.with(|v| {
                            v.readers.fetch_add(1, Ordering::SeqCst);
                            let n = v.n;
                            std::hint::spin_loop();
                            v.readers.fetch_sub(1, Ordering::SeqCst);
                            n
                        });
                        // Values only grow: a reader never sees an older one after a newer.
                        assert!(n >= last);
                        last = n;
                        let a = cell.load();
                        assert!(a.n >= last);
                    }
                });
            }
            s.spawn(|| {
                for i in 1..=rounds as u64 {
                    cell.write().store(new(i));
                }
            });
        });
        assert_eq!(cell.with(|v| v.n), rounds as u64);
    }

    #[test]
    fn exited_threads_give_their_slots_back() {
        let cell = SnapshotCell::new(Arc::new(5i32));
        for _ in 0..4 {
            std::thread::scope(|s| {
                s.spawn(|| assert_eq!(cell.with(|v| *v), 5));
            });
        }
        // Blocks are reused: no more of them than threads that ever ran at once (this
        // test's threads, and other tests' running in parallel).
        let n = REGISTRY.lock().len();
        assert!(n <= 64, "{n} slot blocks");
        cell.write().store(Arc::new(6));
        assert_eq!(cell.with(|v| *v), 6);
    }
}
