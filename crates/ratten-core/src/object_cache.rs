//! Per-thread object caches: why making and dropping a small tensor costs a few stores
//! rather than three malloc/free pairs.
//!
//! Note [Per-thread object caches]: a pointwise op on a few elements makes one output tensor
//! (a TensorImpl, its metadata snapshot, a StorageImpl with the data in its own block) and
//! drops its temporaries. Three caches, each a fixed array of Cells in a `const`-initialised
//! thread-local (no lazy initialisation, no borrow flag, no lock), keep what a dropped tensor
//! leaves for the next one made on the same thread:
//!
//! 1. **Object blocks** (behind [`CachedArc`], the handle of TensorImpl and StorageImpl):
//!    blocks of the size classes 64 B .. 4 KiB, at most 64 per class.
//!    - *Contents:* memory whose value was dropped in place: uninitialised bytes that no
//!      handle, pointer or other cache refers to. Kept apart from the allocator's data
//!      blocks (`allocator.rs`), which must never hold uninitialised bytes.
//!    - *Reuse:* by the next [`CachedArc`] of that class made on the thread that dropped the
//!      last handle (blocks migrate between threads with their values; every thread frees
//!      into its own cache).
//! 2. **Snapshot blocks** ([`meta_block`], [`recycle_meta`]): at most 32 unique
//!    `Arc<MaybeUninit<TensorMeta>>`.
//!    - *Contents:* a block whose strong count is 1 and weak count 0 and whose TensorMeta was
//!      taken apart in place (`TensorMeta::take_apart`): its storage moved out (and released),
//!      its dimension vectors dropped. It holds nothing and nobody can reach it.
//!    - *Reuse:* the next `TensorBase::empty` on the thread writes a new TensorMeta into it
//!      field by field. A snapshot someone else still holds (a guard, an iterator, `meta_arc`)
//!      is never recycled: its counts say so, and it is dropped normally when they go.
//! 3. **Spare tensors** ([`take_spare`], [`release_tensor`]): at most 16 whole small tensors
//!    (TensorImpl, snapshot and storage still linked).
//!    - *Contents:* the only handle of a TensorImpl that `TensorImpl::prepare_spare` accepted:
//!      its snapshot and its storage held by nobody else, the storage a small CPU one from
//!      the built-in allocator (data in its own block, unlocked), the dimensions in place. What
//!      a fresh tensor does not have is cleared before it is kept: the version counter, the
//!      wrapped-number mark and the autograd metadata (dropped there, so a spare never
//!      carries another tensor's `AutogradMetaInterface`, grad or graph).
//!    - *Reuse:* the next small CPU `empty`/`zeros` on the thread rewrites the spare's
//!      geometry, dtype, device and storage size (`TensorImpl::reuse_spare`) instead of
//!      building three objects. Nothing can observe the difference: a spare is reachable
//!      only from the cache, and a reused one is indistinguishable from a fresh one.
//!
//! *Thread exit:* each cache's destructor drops what it holds as any last handle would (a
//! spare tensor's drop recycles into the snapshot and object caches while they still exist).
//! Every cache is reached with `try_with`, so a value dropped while the thread's caches are
//! being destroyed (in another thread-local's destructor) is freed directly instead.
//! Nothing is leaked and nothing is cached across threads.
//!
//! Related per-thread state, each documented where it lives: the allocator's data-block
//! caches (`allocator.rs`: small and medium data blocks, initialised bytes), the hazard
//! slots of metadata readers (`snapshot.rs`), and the access guards' nesting table
//! (`access.rs`).

use std::alloc::Layout;
use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::allocator::{
    small_class, small_layout, SmallCache, ALIGNMENT, SMALL_CLASSES, SMALL_MIN,
};
use crate::tensor_impl::{TensorImpl, TensorMeta};

// ---------------------------------------------------------------------------------------------
// 1. Object blocks
// ---------------------------------------------------------------------------------------------

thread_local! {
    static OBJECT_CACHE: SmallCache = const { SmallCache::new() };
}

/// A block of class `class` (uninitialised), ALIGNMENT-aligned; aborts on out-of-memory as
/// `Arc::new` does.
#[inline]
fn object_alloc(class: usize) -> NonNull<u8> {
    if let Some(block) = OBJECT_CACHE.try_with(|c| c.pop(class)).ok().flatten() {
        // Cached blocks are live allocations of the class's layout, owned by nobody.
        return block;
    }
    let layout = small_layout(class);
    // SAFETY: the layout is not zero-sized.
    let p = unsafe { std::alloc::alloc(layout) };
    NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

/// # Safety
/// `p` must come from `object_alloc(class)` and be used by nobody any more.
#[inline]
unsafe fn object_free(p: NonNull<u8>, class: usize) {
    let cached = OBJECT_CACHE.try_with(|c| c.push(class, p)).unwrap_or(false);
    if !cached {
        // SAFETY: the caller's contract: allocated with this class's layout, unused.
        unsafe { std::alloc::dealloc(p.as_ptr(), small_layout(class)) };
    }
}

#[repr(C)]
struct CachedInner<T> {
    count: AtomicUsize,
    /// The block's small class (to free it into the right list).
    class: usize,
    value: T,
}

/// A reference-counted pointer like `Arc<T>` (strong references only) whose block comes
/// from a per-thread cache instead of malloc, optionally with an ALIGNMENT-aligned tail of
/// extra bytes in the same block (a small storage's data). A tensor's TensorImpl and
/// StorageImpl are made and dropped on every op; two malloc/free pairs were a third of
/// making a tensor.
pub(crate) struct CachedArc<T> {
    ptr: NonNull<CachedInner<T>>,
    _owns: PhantomData<CachedInner<T>>,
}

// SAFETY: as for Arc<T>: the value is shared between the handles' threads (T: Sync) and
// dropped by whichever thread drops the last handle (T: Send); the count is atomic.
unsafe impl<T: Send + Sync> Send for CachedArc<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for CachedArc<T> {}

/// The offset of a CachedArc's tail: the inner value rounded up to ALIGNMENT.
const fn tail_offset<T>() -> usize {
    std::mem::size_of::<CachedInner<T>>().next_multiple_of(ALIGNMENT)
}

impl<T> CachedArc<T> {
    /// A handle to `value`.
    #[inline]
    pub(crate) fn new(value: T) -> Self {
        Self::with_tail(0, |_| value)
    }

    /// A handle to `make(tail)`, where `tail` points at `tail_bytes` initialised (zero)
    /// bytes, ALIGNMENT-aligned, in the same block, alive as long as the value.
    /// `tail_bytes` must be 0 or fit a small block with the value (callers check
    /// [`CachedArc::tail_fits`]); otherwise this aborts like an allocation failure.
    #[inline]
    pub(crate) fn with_tail(tail_bytes: usize, make: impl FnOnce(NonNull<u8>) -> T) -> Self {
        const { assert!(std::mem::align_of::<CachedInner<T>>() <= ALIGNMENT) };
        let total = if tail_bytes == 0 {
            std::mem::size_of::<CachedInner<T>>()
        } else {
            tail_offset::<T>() + tail_bytes
        };
        let Some(class) = small_class(total.max(1)) else {
            std::alloc::handle_alloc_error(
                Layout::from_size_align(total, ALIGNMENT).unwrap_or(Layout::new::<u8>()),
            )
        };
        let block = object_alloc(class);
        // SAFETY: the block has room for the inner value (and the tail when asked): the
        // class holds `total` bytes; the tail starts inside it.
        let tail = unsafe { NonNull::new_unchecked(block.as_ptr().add(tail_offset::<T>())) };
        if tail_bytes > 0 {
            // SAFETY: `tail_bytes` bytes from `tail` lie inside the block (see above), which
            // nobody else uses.
            unsafe { std::ptr::write_bytes(tail.as_ptr(), 0, tail_bytes) };
        }
        let ptr = block.cast::<CachedInner<T>>();
        // SAFETY: the block is ALIGNMENT-aligned (>= the inner's alignment, asserted above)
        // and large enough; writing initialises it.
        unsafe {
            ptr.as_ptr().write(CachedInner {
                count: AtomicUsize::new(1),
                class,
                value: make(tail),
            })
        };
        CachedArc {
            ptr,
            _owns: PhantomData,
        }
    }

    /// The value, mutably, when this is its only handle (none other can appear: a clone
    /// needs a handle, and `&mut` excludes this one's).
    #[inline]
    pub(crate) fn get_mut(this: &mut Self) -> Option<&mut T> {
        // Acquire pairs with the Release decrements of the handles dropped before: their uses
        // of the value happen before ours.
        if this.inner().count.load(Ordering::Acquire) != 1 {
            return None;
        }
        // SAFETY: the only handle, borrowed mutably: nobody else can reach the value.
        Some(unsafe { &mut (*this.ptr.as_ptr()).value })
    }

    /// Releases this handle when others remain (None: nothing more to do); gives it back,
    /// still counted once, when it is the last one (for the caller to reuse or drop). The
    /// shared case is a load and one decrement, with no call into the value's destructor.
    #[inline(always)]
    pub(crate) fn release_unless_last(this: Self) -> Option<Self> {
        let count = &this.inner().count;
        if count.load(Ordering::Acquire) == 1 {
            return Some(this);
        }
        if count.fetch_sub(1, Ordering::Release) != 1 {
            std::mem::forget(this);
            return None;
        }
        // The others were dropped meanwhile: this is the last handle after all. Pairs with
        // their Release decrements; nobody else can see the count, so ours is restored.
        std::sync::atomic::fence(Ordering::Acquire);
        count.store(1, Ordering::Relaxed);
        Some(this)
    }

    /// [`CachedArc::get_mut`] without the check.
    ///
    /// # Safety
    /// This must be the value's only handle.
    #[inline]
    pub(crate) unsafe fn get_mut_unchecked(this: &mut Self) -> &mut T {
        // SAFETY: the caller's contract: nobody else can reach the value.
        unsafe { &mut (*this.ptr.as_ptr()).value }
    }

    /// The handle as a raw pointer (its count goes with it; see [`CachedArc::from_raw`]).
    #[inline]
    pub(crate) fn into_raw(this: Self) -> *mut () {
        let p = this.ptr.as_ptr().cast();
        std::mem::forget(this);
        p
    }

    /// # Safety
    /// `p` must come from [`CachedArc::into_raw`] of the same `T`, and be used only once.
    #[inline]
    pub(crate) unsafe fn from_raw(p: *mut ()) -> Self {
        CachedArc {
            // SAFETY: the caller's contract: a pointer from `into_raw`, never null.
            ptr: unsafe { NonNull::new_unchecked(p.cast()) },
            _owns: PhantomData,
        }
    }

    /// Whether a tail of `tail_bytes` fits a small block together with a `T`.
    pub(crate) const fn tail_fits(tail_bytes: usize) -> bool {
        tail_offset::<T>() + tail_bytes <= SMALL_MIN << (SMALL_CLASSES - 1)
    }

    #[inline]
    fn inner(&self) -> &CachedInner<T> {
        // SAFETY: the block stays alive while any handle (this one) exists.
        unsafe { self.ptr.as_ref() }
    }

    pub(crate) fn strong_count(this: &Self) -> usize {
        this.inner().count.load(Ordering::Acquire)
    }

    pub(crate) fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }
}

impl<T> Clone for CachedArc<T> {
    #[inline]
    fn clone(&self) -> Self {
        // Relaxed, as Arc: a new handle is made from an existing one, which keeps the value
        // alive; no other memory is published by the increment.
        let old = self.inner().count.fetch_add(1, Ordering::Relaxed);
        if old > isize::MAX as usize {
            // As Arc: a leaked-handle overflow would later free a live value.
            std::process::abort();
        }
        CachedArc {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl<T> Drop for CachedArc<T> {
    #[inline]
    fn drop(&mut self) {
        // A count of 1 is our handle alone: no other can appear (a clone needs a handle), so
        // the last drop of an object that was never shared costs no read-modify-write.
        if self.inner().count.load(Ordering::Acquire) != 1
            && self.inner().count.fetch_sub(1, Ordering::Release) != 1
        {
            return;
        }
        // Pairs with the other handles' Release decrements: their uses of the value happen
        // before it is destroyed.
        std::sync::atomic::fence(Ordering::Acquire);
        let class = self.inner().class;
        // SAFETY: this was the last handle: nobody else can reach the value or the block.
        unsafe {
            std::ptr::drop_in_place(&mut (*self.ptr.as_ptr()).value);
            object_free(self.ptr.cast(), class);
        }
    }
}

impl<T> std::ops::Deref for CachedArc<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner().value
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Snapshot blocks (and the stack both they and the spares are kept in)
// ---------------------------------------------------------------------------------------------

/// A handle that a [`HandleStack`] can keep as a raw pointer.
///
/// # Safety
/// `from_parked(into_parked(h))` must give `h` back: the pointer owns what the handle owned.
unsafe trait ParkedHandle: Sized {
    fn into_parked(self) -> *mut ();
    /// # Safety
    /// `p` must come from [`ParkedHandle::into_parked`] of this type, and be taken back once.
    unsafe fn from_parked(p: *mut ()) -> Self;
}

// SAFETY: `Arc::from_raw` of `Arc::into_raw`'s pointer is the same Arc.
unsafe impl<T> ParkedHandle for Arc<T> {
    #[inline]
    fn into_parked(self) -> *mut () {
        Arc::into_raw(self).cast_mut().cast()
    }
    #[inline]
    unsafe fn from_parked(p: *mut ()) -> Self {
        // SAFETY: the caller's contract: a pointer from `into_parked`, taken back once.
        unsafe { Arc::from_raw(p.cast_const().cast()) }
    }
}

// SAFETY: `CachedArc::from_raw` of `CachedArc::into_raw`'s pointer is the same handle.
unsafe impl<T> ParkedHandle for CachedArc<T> {
    #[inline]
    fn into_parked(self) -> *mut () {
        CachedArc::into_raw(self)
    }
    #[inline]
    unsafe fn from_parked(p: *mut ()) -> Self {
        // SAFETY: the caller's contract: a pointer from `into_parked` of a `CachedArc<T>`.
        unsafe { CachedArc::from_raw(p) }
    }
}

/// A bounded per-thread stack of parked handles (the free lists of [`MetaCache`] and
/// [`SpareTensors`]): a fixed array of Cells whose first `len` hold handles, so push and pop
/// are a bounds check and a load or store, with no borrow flag and no Vec to grow. What it
/// still holds when its thread exits is dropped as any last handle is.
struct HandleStack<T: ParkedHandle, const N: usize> {
    len: Cell<usize>,
    items: [Cell<*mut ()>; N],
    _owns: PhantomData<T>,
}

impl<T: ParkedHandle, const N: usize> HandleStack<T, N> {
    const fn new() -> Self {
        HandleStack {
            len: Cell::new(0),
            items: [const { Cell::new(std::ptr::null_mut()) }; N],
            _owns: PhantomData,
        }
    }
    #[inline]
    fn pop(&self) -> Option<T> {
        let n = self.len.get().checked_sub(1)?;
        self.len.set(n);
        let p = self.items.get(n)?.get();
        // SAFETY: the first `len` cells hold `into_parked` pointers (see `push`); this takes
        // one out (len was lowered first).
        Some(unsafe { T::from_parked(p) })
    }
    /// Keeps `h` unless the stack is full, else gives it back.
    #[inline]
    fn push(&self, h: T) -> Option<T> {
        let n = self.len.get();
        let Some(cell) = self.items.get(n) else {
            return Some(h);
        };
        cell.set(h.into_parked());
        self.len.set(n + 1);
        None
    }
}

impl<T: ParkedHandle, const N: usize> Drop for HandleStack<T, N> {
    fn drop(&mut self) {
        while let Some(h) = self.pop() {
            drop(h);
        }
    }
}

/// Snapshot blocks (see Note [Per-thread object caches]): an `Arc<TensorMeta>` is public API
/// (so not in a `CachedArc` block), and its malloc/free pair was a fifth of making a tensor.
/// Only [`recycle_meta`] pushes.
type MetaCache = HandleStack<Arc<MaybeUninit<TensorMeta>>, META_CACHE_LEN>;

const META_CACHE_LEN: usize = 32;

thread_local! {
    static META_CACHE: MetaCache = const { MetaCache::new() };
}

/// A unique, uninitialised snapshot block for a new tensor: a recycled one of this thread's,
/// else a fresh allocation.
#[inline]
pub(crate) fn meta_block() -> Arc<MaybeUninit<TensorMeta>> {
    META_CACHE
        .try_with(MetaCache::pop)
        .ok()
        .flatten()
        .unwrap_or_else(Arc::new_uninit)
}

/// Drops a TensorImpl's snapshot handle, keeping the block for reuse when it was the last
/// handle. No atomic read-modify-write: uniqueness is read from the counts.
#[inline]
pub(crate) fn recycle_meta(meta: Arc<TensorMeta>) {
    // Only our handle, and no Weak that could be upgraded: nobody else can reach it or make
    // a new handle. (A clone can only be made from a handle, and ours is the only one.)
    if Arc::strong_count(&meta) != 1 || Arc::weak_count(&meta) != 0 {
        drop(meta);
        return;
    }
    // Pairs with the Release decrements of the handles dropped before: their reads of the
    // snapshot happen before it is reused.
    fence(Ordering::Acquire);
    let p = Arc::into_raw(meta).cast_mut();
    // SAFETY: the Arc is unique (checked above), so the TensorMeta may be taken apart in
    // place; afterwards the block is an Arc of an uninitialised TensorMeta (same size and
    // alignment), which drops nothing.
    let (storage, block) = unsafe {
        let storage = TensorMeta::take_apart(p);
        (storage, Arc::from_raw(p.cast::<MaybeUninit<TensorMeta>>()))
    };
    let mut slot = Some(block);
    let _ = META_CACHE.try_with(|c| {
        if let Some(b) = slot.take() {
            slot = c.push(b);
        }
    });
    drop(slot);
    // Dropped here, outside the cache's borrow: freeing it may run an allocator's deleter,
    // which may make tensors.
    drop(storage);
}

// ---------------------------------------------------------------------------------------------
// 3. Spare tensors
// ---------------------------------------------------------------------------------------------

/// Spare tensors (see Note [Per-thread object caches]). Each is the only handle of a
/// TensorImpl that `prepare_spare` accepted (see `push`): nothing else reaches it, its
/// snapshot or its storage.
struct SpareTensors(HandleStack<CachedArc<TensorImpl>, SPARE_TENSORS>);

const SPARE_TENSORS: usize = 16;

impl SpareTensors {
    #[inline]
    fn pop(&self) -> Option<CachedArc<TensorImpl>> {
        self.0.pop()
    }
    /// Keeps `t` unless the cache is full, else gives it back.
    ///
    /// # Safety
    /// `t` must be the only handle of its TensorImpl, and `prepare_spare` must have accepted
    /// it (`reuse_spare` relies on both without checking).
    #[inline]
    unsafe fn push(&self, t: CachedArc<TensorImpl>) -> Option<CachedArc<TensorImpl>> {
        self.0.push(t)
    }
}

thread_local! {
    static SPARE: SpareTensors = const { SpareTensors(HandleStack::new()) };
}

/// A spare tensor of this thread, for `TensorImpl::reuse_spare` to make fresh; None when the
/// cache is empty (or the thread is exiting).
#[inline]
pub(crate) fn take_spare() -> Option<CachedArc<TensorImpl>> {
    SPARE.try_with(SpareTensors::pop).ok().flatten()
}

/// Releases a tensor handle (`TensorBase`'s drop): a handle of a tensor others still hold is
/// released in place; the last one is kept as a spare when `prepare_spare` accepts it and
/// the cache has room, else dropped.
#[inline]
pub(crate) fn release_tensor(t: CachedArc<TensorImpl>) {
    // A handle of a tensor others still hold (an operand's clone): released in place.
    let Some(mut t) = CachedArc::release_unless_last(t) else {
        return;
    };
    if CachedArc::get_mut(&mut t).is_some_and(TensorImpl::prepare_spare) {
        // SAFETY: `get_mut` found `t` the only handle and `prepare_spare` accepted it.
        match SPARE.try_with(|s| unsafe { s.push(t) }) {
            Ok(None) => return,
            Ok(Some(back)) => t = back,
            // The thread is exiting; the closure (and `t` in it) was dropped unused.
            Err(_) => return,
        }
    }
    drop(t);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_unless_last_counts_like_drop_and_hands_back_the_last_handle() {
        let a = CachedArc::new(vec![1u8, 2, 3]);
        let b = a.clone();
        let c = a.clone();
        assert_eq!(CachedArc::strong_count(&a), 3);
        assert!(CachedArc::release_unless_last(b).is_none());
        // Released on other threads too: the last one is handed back, counted once.
        std::thread::scope(|s| {
            s.spawn(move || assert!(CachedArc::release_unless_last(c).is_none()));
        });
        let mut last = CachedArc::release_unless_last(a).expect("the last handle");
        assert_eq!(CachedArc::strong_count(&last), 1);
        assert_eq!(CachedArc::get_mut(&mut last).map(|v| v.len()), Some(3));
        drop(last);
    }

    #[test]
    fn cached_arcs_count_share_and_recycle_their_blocks() {
        use std::sync::atomic::AtomicUsize;
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Counted(u64);
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::SeqCst);
            }
        }
        let a = CachedArc::new(Counted(7));
        let b = a.clone();
        assert_eq!(CachedArc::strong_count(&a), 2);
        assert!(CachedArc::ptr_eq(&a, &b));
        drop(a);
        assert_eq!((b.0, DROPS.load(Ordering::SeqCst)), (7, 0));
        let block = &*b as *const Counted as usize;
        drop(b);
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
        // The block went to this thread's cache and comes back for the next object.
        let c = CachedArc::new(Counted(8));
        assert_eq!(&*c as *const Counted as usize, block);
        // Handles cross threads; the last drop (on another thread) destroys the value.
        let d = c.clone();
        std::thread::spawn(move || drop(d)).join().unwrap();
        drop(c);
        assert_eq!(DROPS.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_cached_arc_tail_is_zeroed_aligned_and_separate() {
        assert!(CachedArc::<[u64; 3]>::tail_fits(64));
        assert!(!CachedArc::<[u64; 3]>::tail_fits(8192));
        let mut seen = None;
        let x = CachedArc::with_tail(64, |tail| {
            seen = Some(tail);
            [1u64, 2, 3]
        });
        let tail = seen.unwrap();
        assert_eq!(tail.as_ptr() as usize % ALIGNMENT, 0);
        let value_end = &*x as *const [u64; 3] as usize + 24;
        assert!(tail.as_ptr() as usize >= value_end);
        // SAFETY: the tail is 64 initialised bytes alive as long as `x`.
        let bytes = unsafe { std::slice::from_raw_parts(tail.as_ptr(), 64) };
        assert!(bytes.iter().all(|&b| b == 0));
        assert_eq!(*x, [1, 2, 3]);
    }

    fn impl_addr(t: &crate::tensor_impl::TensorBase) -> usize {
        t.unsafe_get_tensor_impl() as *const TensorImpl as usize
    }

    #[test]
    fn handle_stacks_are_bounded_and_drop_what_they_hold_at_thread_exit() {
        use std::sync::atomic::AtomicUsize;
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Counted;
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::SeqCst);
            }
        }
        thread_local! {
            static STACK: HandleStack<Arc<Counted>, 2> = const { HandleStack::new() };
        }
        std::thread::spawn(|| {
            STACK.with(|s| {
                assert!(s.push(Arc::new(Counted)).is_none());
                assert!(s.push(Arc::new(Counted)).is_none());
                // Full: handed back (and dropped here).
                assert!(s.push(Arc::new(Counted)).is_some());
                assert_eq!(DROPS.load(Ordering::SeqCst), 1);
                let top = s.pop().expect("a kept handle");
                assert!(s.push(top).is_none());
            });
        })
        .join()
        .unwrap();
        // The thread's exit dropped the two it still held.
        assert_eq!(DROPS.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn snapshot_blocks_are_reused_only_when_nobody_else_holds_them() {
        use crate::device::Device;
        use crate::dtype::ScalarType;
        use crate::tensor_impl::TensorBase;
        // A fresh thread: its caches start empty. 1000 floats: too large to be a spare, so
        // the TensorImpl is torn down and its snapshot block recycled.
        std::thread::spawn(|| {
            let big = || TensorBase::empty(&[1000], ScalarType::Float, Device::CPU).unwrap();
            let meta_addr = |t: &TensorBase| Arc::as_ptr(&t.meta_arc()) as usize;
            let t = big();
            let block = meta_addr(&t);
            drop(t);
            let u = big();
            assert_eq!(meta_addr(&u), block, "the emptied block is reused");
            // A snapshot held elsewhere keeps its block, storage and geometry.
            let held = u.meta_arc();
            drop(u);
            let w = big();
            assert_ne!(meta_addr(&w), block);
            assert_eq!((held.sizes(), held.storage().nbytes()), (&[1000][..], 4000));
            assert_eq!(held.storage().use_count(), 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn spares_come_back_newest_first_and_the_cache_is_bounded() {
        use crate::device::Device;
        use crate::dtype::ScalarType;
        use crate::tensor_impl::TensorBase;
        std::thread::spawn(|| {
            let small = || TensorBase::empty(&[2], ScalarType::Float, Device::CPU).unwrap();
            let ts: Vec<TensorBase> = (0..SPARE_TENSORS + 4).map(|_| small()).collect();
            let addrs: Vec<usize> = ts.iter().map(impl_addr).collect();
            // Dropped in order: the first SPARE_TENSORS are kept, the rest torn down.
            drop(ts);
            let again: Vec<TensorBase> = (0..SPARE_TENSORS + 4).map(|_| small()).collect();
            let kept = &addrs[..SPARE_TENSORS];
            for (k, t) in again.iter().take(SPARE_TENSORS).enumerate() {
                assert_eq!(impl_addr(t), kept[SPARE_TENSORS - 1 - k], "spare {k}");
            }
            assert!(again[SPARE_TENSORS..]
                .iter()
                .all(|t| !kept.contains(&impl_addr(t))));
            // A tensor whose storage a view shares is not kept (its storage is never handed
            // to a new tensor).
            let t = small();
            let view = t.alias();
            drop(t);
            assert!(!small().storage().is_alias_of(&view.storage()));
            drop(view);
        })
        .join()
        .unwrap();
    }
}
