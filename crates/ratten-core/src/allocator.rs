//! The allocator interface (c10::Allocator) and the per-device allocators: a caching,
//! huge-page-aware CPU allocator, the Meta allocator (no data), and a settable slot per device
//! type (PrivateUse1 registers its own with [`set_allocator`]).
//!
//! Invariant every allocator keeps: all `capacity` bytes of a [`DataPtr`] are initialised
//! (zeroed by the OS, by `alloc_zeroed`, or written before). Reading back a tensor made by
//! `empty` therefore yields stale-but-defined values, never uninitialised memory, so safe code
//! cannot observe undefined behaviour through `empty`.

use std::alloc::Layout;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::device::{Device, DeviceType};
use crate::error::{Error, Result};

/// Every allocation is aligned to at least this many bytes (a cache line, and AVX-512 loads).
pub const ALIGNMENT: usize = 64;

/// How a DataPtr frees its memory: a plain function (the CPU allocator's own blocks: no heap
/// allocation for the deleter itself) or a boxed closure (custom allocators, `from_raw`).
enum Deleter {
    Fn(fn(NonNull<u8>, usize)),
    Boxed(Box<dyn FnOnce(NonNull<u8>, usize) + Send + Sync>),
}

/// An owning pointer to device memory with the function that frees it (c10::DataPtr).
pub struct DataPtr {
    ptr: Option<NonNull<u8>>,
    capacity: usize,
    deleter: Option<Deleter>,
    zeroed: bool,
    device: Device,
}

// SAFETY: a DataPtr owns its memory exclusively (like a Box<[u8]>); who may read or write the
// memory is decided by the StorageImpl's access lock, not by the pointer.
unsafe impl Send for DataPtr {}
// SAFETY: shared references to a DataPtr only expose the pointer value, never the memory.
unsafe impl Sync for DataPtr {}

impl DataPtr {
    /// A DataPtr that owns no memory (Meta tensors, zero-byte storages).
    pub fn empty(device: Device) -> Self {
        DataPtr {
            ptr: None,
            capacity: 0,
            deleter: None,
            zeroed: true,
            device,
        }
    }

    /// Memory owned by someone else for at least the DataPtr's life (a storage's inline
    /// tail): nothing is freed on drop.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `capacity` initialised bytes, aligned to
    /// [`ALIGNMENT`], for as long as the DataPtr lives, and used by nobody else.
    pub(crate) unsafe fn borrowed(ptr: NonNull<u8>, capacity: usize, device: Device) -> Self {
        DataPtr {
            ptr: Some(ptr),
            capacity,
            deleter: None,
            zeroed: true,
            device,
        }
    }

    /// Wraps memory from a custom allocator.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `capacity` bytes until `deleter` is called,
    /// and all `capacity` bytes must be initialised (zeroed if `zeroed`). No one else may
    /// access the memory while the DataPtr lives. An allocator's memory must also be aligned
    /// to [`ALIGNMENT`] (checked by `Storage`); foreign memory given to
    /// `Storage::from_data_ptr` may be aligned less (tensors over it check their dtype's
    /// alignment).
    pub unsafe fn from_raw(
        ptr: NonNull<u8>,
        capacity: usize,
        deleter: impl FnOnce(NonNull<u8>, usize) + Send + Sync + 'static,
        zeroed: bool,
        device: Device,
    ) -> Self {
        DataPtr {
            ptr: Some(ptr),
            capacity,
            deleter: Some(Deleter::Boxed(Box::new(deleter))),
            zeroed,
            device,
        }
    }

    /// Whether the memory belongs to someone else (a storage's inline tail, see
    /// [`DataPtr::borrowed`]): no allocator memory, nothing freed.
    pub(crate) fn is_borrowed(&self) -> bool {
        self.deleter.is_none() && self.ptr.is_some()
    }
    pub(crate) fn set_device(&mut self, device: Device) {
        self.device = device;
    }

    /// The start of the memory, or None when it owns none.
    pub fn get(&self) -> Option<NonNull<u8>> {
        self.ptr
    }
    /// Usable bytes (at least what was asked for).
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// Whether the memory is known to be all zero bytes (fresh from the OS).
    pub fn is_zeroed(&self) -> bool {
        self.zeroed
    }
    pub fn device(&self) -> Device {
        self.device
    }
}

impl Drop for DataPtr {
    #[inline]
    fn drop(&mut self) {
        // Memory without a deleter (empty, or a storage's inline tail) needs nothing.
        let Some(deleter) = self.deleter.take() else {
            return;
        };
        if let Some(ptr) = self.ptr {
            match deleter {
                Deleter::Fn(f) => f(ptr, self.capacity),
                Deleter::Boxed(f) => f(ptr, self.capacity),
            }
        }
    }
}

impl std::fmt::Debug for DataPtr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataPtr")
            .field("ptr", &self.ptr)
            .field("capacity", &self.capacity)
            .field("device", &self.device)
            .finish()
    }
}

/// c10::Allocator: hands out memory for storages of one device type.
pub trait Allocator: Send + Sync {
    /// At least `nbytes` initialised bytes, aligned to [`ALIGNMENT`].
    fn allocate(&self, nbytes: usize) -> Result<DataPtr>;

    /// At least `nbytes` zero bytes. The default clears an ordinary allocation.
    fn allocate_zeroed(&self, nbytes: usize) -> Result<DataPtr> {
        let mut d = self.allocate(nbytes)?;
        if let (false, Some(p)) = (d.zeroed, d.ptr) {
            // SAFETY: `p` is valid for `capacity` bytes and owned by `d` alone.
            unsafe { std::ptr::write_bytes(p.as_ptr(), 0, d.capacity) };
        }
        d.zeroed = true;
        Ok(d)
    }
}

fn oom(nbytes: usize) -> Error {
    Error::runtime(format!(
        "DefaultCPUAllocator: not enough memory: you tried to allocate {nbytes} bytes."
    ))
}

/// Allocations from this size up go through the mmap + block cache path.
pub const LARGE_ALLOCATION: usize = 1 << 20;
const HUGE_PAGE: usize = 2 << 20;
/// Default bound on the bytes the CPU cache keeps for reuse.
pub const DEFAULT_CACHE_LIMIT: usize = 1 << 30;

/// Free ranges of mapped memory that large allocations reuse (Note [The large-block cache]).
///
/// Every range is a multiple of 2 MiB at a 2 MiB boundary. Ranges are coalesced: no two are
/// adjacent. Each is listed twice, by address (to merge a freed block with its neighbours)
/// and by (length, address) (for best fit).
struct BlockCache {
    by_addr: BTreeMap<usize, usize>,
    by_size: BTreeSet<(usize, usize)>,
    cached_bytes: usize,
    limit: usize,
}

// Note [The large-block cache]
// A freed large block stays mapped, in the cache, so that the next large allocation reuses
// pages that are already faulted in. The cache behaves like a heap, not like lists of exact
// sizes:
// - An allocation takes the smallest cached range that holds it, and its tail stays cached.
// - A freed block merges with the cached ranges beside it.
// So a training step's two phases share memory: the forward's activations are carved from
// the ranges the last step's weight gradients left, and they merge back into ranges a weight
// gradient fits in as the backward frees them. Exact-size lists kept both phases' blocks at
// once, above the peak of the memory in use.
// A miss means no cached range holds the request. Every cached range then goes back to the
// OS before more is mapped: what is cached cannot serve the request, and keeping it would
// hold two phases' memory at once.
// The cache is bounded by `limit`; a block freed beyond it is unmapped at once.
impl BlockCache {
    const fn new() -> Self {
        BlockCache {
            by_addr: BTreeMap::new(),
            by_size: BTreeSet::new(),
            cached_bytes: 0,
            limit: DEFAULT_CACHE_LIMIT,
        }
    }

    /// Takes `size` bytes from the smallest range that holds them, leaving its tail cached.
    fn take(&mut self, size: usize) -> Option<usize> {
        let &(len, addr) = self.by_size.range((size, 0)..).next()?;
        self.remove(addr, len);
        if len > size {
            self.link(addr + size, len - size);
        }
        self.cached_bytes -= size;
        Some(addr)
    }

    /// Caches the block at `addr` of `size` bytes, merged with the ranges beside it.
    fn put(&mut self, mut addr: usize, mut size: usize) {
        self.cached_bytes += size;
        let before = self
            .by_addr
            .range(..addr)
            .next_back()
            .map(|(&a, &l)| (a, l));
        if let Some((a, l)) = before.filter(|&(a, l)| a + l == addr) {
            self.remove(a, l);
            addr = a;
            size += l;
        }
        if let Some(l) = self.by_addr.get(&(addr + size)).copied() {
            self.remove(addr + size, l);
            size += l;
        }
        self.link(addr, size);
    }

    /// `size` bytes from the cache, or on a miss every cached range (all are then smaller
    /// than `size`), taken out for the caller to unmap before it maps more.
    fn take_or_drain(&mut self, size: usize) -> std::result::Result<usize, BTreeMap<usize, usize>> {
        self.take(size).ok_or_else(|| self.drain())
    }

    /// Takes every cached range out, by address.
    fn drain(&mut self) -> BTreeMap<usize, usize> {
        self.by_size.clear();
        self.cached_bytes = 0;
        std::mem::take(&mut self.by_addr)
    }

    /// Takes the largest cached range out (to trim the cache).
    fn pop_largest(&mut self) -> Option<(usize, usize)> {
        let (len, addr) = self.by_size.pop_last()?;
        self.by_addr.remove(&addr);
        self.cached_bytes -= len;
        Some((addr, len))
    }

    fn link(&mut self, addr: usize, len: usize) {
        self.by_addr.insert(addr, len);
        self.by_size.insert((len, addr));
    }

    fn remove(&mut self, addr: usize, len: usize) {
        self.by_addr.remove(&addr);
        self.by_size.remove(&(len, addr));
    }
}

static CPU_CACHE: Mutex<BlockCache> = Mutex::new(BlockCache::new());

/// The CPU allocator. Small allocations use the global allocator (`alloc_zeroed`, 64-byte
/// aligned). Large ones are 2 MiB-aligned anonymous mappings advised for transparent huge
/// pages (one page fault per 2 MiB instead of per 4 KiB), and freed large blocks are kept in a
/// bounded, thread-safe cache that later large allocations are carved from, so that they reuse
/// memory whose pages are already mapped: no mmap, no page faults (Note [The large-block
/// cache]).
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuAllocator;

impl CpuAllocator {
    fn small(nbytes: usize, zeroed_needed: bool) -> Result<DataPtr> {
        match small_class(nbytes) {
            Some(class) => {
                SmallCache::data_block(&SMALL_CACHE, class, zeroed_needed, release_small)
            }
            None => Self::medium(nbytes, zeroed_needed),
        }
    }

    /// Blocks above the small classes and below the mmap threshold: power-of-two classes
    /// from 8 KiB to 1 MiB, reused from a per-thread cache (see `MediumCache`), else the
    /// global allocator.
    fn medium(nbytes: usize, zeroed_needed: bool) -> Result<DataPtr> {
        let class = MediumCache::class_of(nbytes).ok_or_else(|| oom(nbytes))?;
        MediumCache::data_block(&MEDIUM_CACHE, class, zeroed_needed, release_medium)
    }

    fn large(nbytes: usize, zeroed_needed: bool) -> Result<DataPtr> {
        let size = nbytes
            .checked_add(HUGE_PAGE - 1)
            .ok_or_else(|| oom(nbytes))?
            & !(HUGE_PAGE - 1);
        let reused = CPU_CACHE.lock().take_or_drain(size);
        let (addr, capacity, zeroed) = match reused {
            Ok(addr) => {
                if zeroed_needed {
                    // SAFETY: the range taken is mapped memory of `size` bytes owned by no one.
                    unsafe { std::ptr::write_bytes(addr as *mut u8, 0, nbytes) };
                }
                (addr, size, zeroed_needed)
            }
            Err(released) => {
                unmap_cached_ranges(released);
                (map_huge(size).ok_or_else(|| oom(nbytes))?, size, true)
            }
        };
        Ok(DataPtr {
            // SAFETY: mappings are never at address 0.
            ptr: Some(unsafe { NonNull::new_unchecked(addr as *mut u8) }),
            capacity,
            deleter: Some(Deleter::Fn(release_large)),
            zeroed,
            device: Device::CPU,
        })
    }
}

// Small-block reuse. A 1-element op allocates its output's few bytes on every call; taking
// them from a per-thread free list (no lock, no glibc memalign) instead of the global
// allocator is a large share of a small op's cost. Blocks come in power-of-two classes from
// 64 bytes to 4 KiB; each thread keeps at most SMALL_CACHE_PER_CLASS blocks per class and
// frees the rest. A reused block holds what its last user wrote (initialised, not zeroed).

/// The smallest class (one cache line, the alignment).
pub(crate) const SMALL_MIN: usize = ALIGNMENT;
/// Number of classes: 64 B << 0 ..= 64 B << 6 (4 KiB).
pub(crate) const SMALL_CLASSES: usize = 7;
const SMALL_CACHE_PER_CLASS: usize = 64;

/// The class of an allocation of `nbytes` (> 0), or None above the largest class.
pub(crate) fn small_class(nbytes: usize) -> Option<usize> {
    SmallCache::class_of(nbytes)
}

pub(crate) fn small_layout(class: usize) -> Layout {
    SmallCache::layout(class)
}

/// One class's free blocks: a fixed array, so that push and pop are a bounds check and a
/// store or load.
struct ClassList<const PER_CLASS: usize> {
    len: Cell<usize>,
    /// The first `len` are live blocks of the class (pointers, not addresses: they keep
    /// their provenance).
    blocks: [Cell<*mut u8>; PER_CLASS],
}

/// A per-thread cache of blocks in `CLASSES` power-of-two size classes from `MIN` bytes, at
/// most `PER_CLASS` blocks each, all ALIGNMENT-aligned (Cells, not a RefCell: no borrow flag
/// to set and clear; nothing in it is ever borrowed across a call).
pub(crate) struct ClassCache<const MIN: usize, const CLASSES: usize, const PER_CLASS: usize> {
    lists: [ClassList<PER_CLASS>; CLASSES],
}

/// Small data blocks and object blocks (`object_cache.rs`): 64 B to 4 KiB.
pub(crate) type SmallCache = ClassCache<SMALL_MIN, SMALL_CLASSES, SMALL_CACHE_PER_CLASS>;

// Medium data blocks, 8 KiB to 1 MiB (below LARGE_ALLOCATION). glibc's `calloc` zeroes a
// reused heap block on every call: for a 100K-element f32 output that memset was a quarter of
// the op (6 of 22 us). A cached block is reused as it was left (initialised, not zeroed, as
// the large blocks are), so a functional op of that size costs what its out= form does. Two
// blocks per class bound what a thread keeps to ~4 MiB.
const MEDIUM_MIN: usize = 8 << 10;
const MEDIUM_CLASSES: usize = 8;
const MEDIUM_CACHE_PER_CLASS: usize = 2;
type MediumCache = ClassCache<MEDIUM_MIN, MEDIUM_CLASSES, MEDIUM_CACHE_PER_CLASS>;
const _: () = assert!(MEDIUM_MIN << (MEDIUM_CLASSES - 1) == LARGE_ALLOCATION);
const _: () = assert!(SMALL_MIN << SMALL_CLASSES == MEDIUM_MIN);

impl<const MIN: usize, const CLASSES: usize, const PER_CLASS: usize>
    ClassCache<MIN, CLASSES, PER_CLASS>
{
    /// A data block of `class` from `cache` (as its last user left it, or zeroed when
    /// `zeroed_needed`), else a new zeroed one from the global allocator; `release` puts it
    /// back when its DataPtr drops.
    #[inline]
    fn data_block(
        cache: &'static std::thread::LocalKey<Self>,
        class: usize,
        zeroed_needed: bool,
        release: fn(NonNull<u8>, usize),
    ) -> Result<DataPtr> {
        let capacity = Self::size_of(class);
        let reused = cache.try_with(|c| c.pop(class)).ok().flatten();
        let (p, zeroed) = match reused {
            Some(p) => {
                if zeroed_needed {
                    // SAFETY: a cached block is a live allocation of `capacity` bytes that
                    // nobody else references (it left its DataPtr when it was cached).
                    unsafe { std::ptr::write_bytes(p.as_ptr(), 0, capacity) };
                }
                (p, zeroed_needed)
            }
            None => {
                // SAFETY: the layout is not zero-sized (capacity >= MIN >= ALIGNMENT).
                let p = unsafe { std::alloc::alloc_zeroed(Self::layout(class)) };
                (NonNull::new(p).ok_or_else(|| oom(capacity))?, true)
            }
        };
        Ok(DataPtr {
            ptr: Some(p),
            capacity,
            deleter: Some(Deleter::Fn(release)),
            zeroed,
            device: Device::CPU,
        })
    }

    /// Empty lists (a `const fn`, so the thread-locals need no lazy initialisation).
    pub(crate) const fn new() -> Self {
        ClassCache {
            lists: [const {
                ClassList {
                    len: Cell::new(0),
                    blocks: [const { Cell::new(std::ptr::null_mut()) }; PER_CLASS],
                }
            }; CLASSES],
        }
    }

    /// The class of an allocation of `nbytes` (> 0), or None above the largest class.
    #[inline]
    fn class_of(nbytes: usize) -> Option<usize> {
        let class = nbytes.div_ceil(MIN).next_power_of_two().trailing_zeros() as usize;
        (class < CLASSES).then_some(class)
    }

    #[inline]
    fn size_of(class: usize) -> usize {
        MIN << class
    }

    #[inline]
    fn layout(class: usize) -> Layout {
        debug_assert!(class < CLASSES);
        // SAFETY: the size is a power of two times MIN (a power of two, at least ALIGNMENT),
        // at most a few MiB, well below isize::MAX.
        unsafe { Layout::from_size_align_unchecked(MIN << class, ALIGNMENT) }
    }

    #[inline]
    pub(crate) fn pop(&self, class: usize) -> Option<NonNull<u8>> {
        let list = &self.lists[class];
        let n = list.len.get();
        if n == 0 {
            return None;
        }
        list.len.set(n - 1);
        // Only non-null blocks are pushed.
        NonNull::new(list.blocks[n - 1].get())
    }
    /// Keeps `block` unless the class's list is full.
    #[inline]
    pub(crate) fn push(&self, class: usize, block: NonNull<u8>) -> bool {
        let list = &self.lists[class];
        let n = list.len.get();
        if n == PER_CLASS {
            return false;
        }
        list.blocks[n].set(block.as_ptr());
        list.len.set(n + 1);
        true
    }
}

impl<const MIN: usize, const CLASSES: usize, const PER_CLASS: usize> Drop
    for ClassCache<MIN, CLASSES, PER_CLASS>
{
    fn drop(&mut self) {
        for class in 0..CLASSES {
            while let Some(block) = self.pop(class) {
                // SAFETY: cached blocks were allocated with this class's layout and are
                // referenced by nobody.
                unsafe { std::alloc::dealloc(block.as_ptr(), Self::layout(class)) };
            }
        }
    }
}

thread_local! {
    static SMALL_CACHE: SmallCache = const { SmallCache::new() };
    static MEDIUM_CACHE: MediumCache = const { MediumCache::new() };
}

/// Frees a small block: into this thread's list for its class, or to the global allocator
/// when the list is full or the thread is exiting.
fn release_small(p: NonNull<u8>, capacity: usize) {
    let class = capacity.trailing_zeros() as usize - SMALL_MIN.trailing_zeros() as usize;
    let cached = SMALL_CACHE.try_with(|c| c.push(class, p)).unwrap_or(false);
    if !cached {
        // SAFETY: the block was allocated with this class's layout and is no longer used.
        unsafe { std::alloc::dealloc(p.as_ptr(), small_layout(class)) };
    }
}

/// Frees a medium block: into this thread's list for its class, or to the global allocator
/// when the list is full or the thread is exiting.
fn release_medium(p: NonNull<u8>, capacity: usize) {
    let class = (capacity / MEDIUM_MIN).trailing_zeros() as usize;
    let cached = MEDIUM_CACHE.try_with(|c| c.push(class, p)).unwrap_or(false);
    if !cached {
        // SAFETY: `medium` allocated the block with this class's layout (its capacity is the
        // class size), and the owner no longer uses it.
        unsafe { std::alloc::dealloc(p.as_ptr(), MediumCache::layout(class)) };
    }
}

/// Maps `size` bytes (a multiple of 2 MiB) at a 2 MiB boundary and advises huge pages.
fn map_huge(size: usize) -> Option<usize> {
    let len = size.checked_add(HUGE_PAGE)?;
    // SAFETY: an anonymous private mapping with no address hint touches no existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let start = p as usize;
    let aligned = (start + HUGE_PAGE - 1) & !(HUGE_PAGE - 1);
    let head = aligned - start;
    let tail = len - head - size;
    // SAFETY: head and tail are the unused ends of the mapping made above; the advice only
    // affects that mapping and is a hint (its failure is harmless).
    unsafe {
        if head > 0 {
            libc::munmap(p, head);
        }
        if tail > 0 {
            libc::munmap((aligned + size) as *mut libc::c_void, tail);
        }
        libc::madvise(aligned as *mut libc::c_void, size, libc::MADV_HUGEPAGE);
    }
    Some(aligned)
}

fn release_large(p: NonNull<u8>, size: usize) {
    let mut cache = CPU_CACHE.lock();
    if cache.cached_bytes + size <= cache.limit {
        cache.put(p.as_ptr() as usize, size);
        return;
    }
    drop(cache);
    // SAFETY: `p` is mapped memory of `size` bytes (a block `large` handed out) that nobody
    // uses any more.
    unsafe { libc::munmap(p.as_ptr().cast(), size) };
}

/// Returns ranges taken out of the cache to the OS.
fn unmap_cached_ranges(released: BTreeMap<usize, usize>) {
    for (addr, len) in released {
        // SAFETY: a range of the cache, taken out of it by the caller.
        unsafe { unmap_cached_block(addr, len) };
    }
}

/// Returns a range taken out of the cache to the OS.
///
/// # Safety
/// `addr` is a range of `size` bytes that was in the cache and that the caller has taken out
/// of it (so nothing uses it or hands it out again).
unsafe fn unmap_cached_block(addr: usize, size: usize) {
    // SAFETY: a cached range is mapped memory of `size` bytes that nobody uses (the
    // contract).
    unsafe { libc::munmap(addr as *mut libc::c_void, size) };
}

/// Bytes currently held by the CPU block cache.
pub fn cpu_cache_bytes() -> usize {
    CPU_CACHE.lock().cached_bytes
}

/// Sets the bound on the CPU block cache (0 disables caching) and trims it to fit, largest
/// ranges first.
pub fn set_cpu_cache_limit(limit: usize) {
    let mut cache = CPU_CACHE.lock();
    cache.limit = limit;
    while cache.cached_bytes > limit {
        let Some((addr, len)) = cache.pop_largest() else {
            break;
        };
        // SAFETY: a range of the cache, just taken out of it.
        unsafe { unmap_cached_block(addr, len) };
    }
}

/// Returns every cached CPU block to the OS (like `torch.cuda.empty_cache` for the CPU).
pub fn empty_cpu_cache() {
    let released = CPU_CACHE.lock().drain();
    unmap_cached_ranges(released);
}

impl Allocator for CpuAllocator {
    fn allocate(&self, nbytes: usize) -> Result<DataPtr> {
        match nbytes {
            0 => Ok(DataPtr::empty(Device::CPU)),
            n if n < LARGE_ALLOCATION => Self::small(n, false),
            n => Self::large(n, false),
        }
    }
    fn allocate_zeroed(&self, nbytes: usize) -> Result<DataPtr> {
        match nbytes {
            0 => Ok(DataPtr::empty(Device::CPU)),
            n if n < LARGE_ALLOCATION => Self::small(n, true),
            n => Self::large(n, true),
        }
    }
}

/// The Meta allocator: storages of meta tensors have a size but no data.
#[derive(Debug, Default, Clone, Copy)]
pub struct MetaAllocator;

impl Allocator for MetaAllocator {
    fn allocate(&self, _nbytes: usize) -> Result<DataPtr> {
        Ok(DataPtr::empty(Device::META))
    }
}

static ALLOCATORS: RwLock<[Option<Arc<dyn Allocator>>; 4]> = RwLock::new([None, None, None, None]);

/// Set once a CPU allocator is installed: until then a CPU storage uses [`CpuAllocator`]
/// without reading the table or counting a reference (see [`AllocatorRef`]).
static CPU_REPLACED: AtomicBool = AtomicBool::new(false);

/// The allocator a storage keeps (to grow with): the built-in CPU allocator, named without a
/// reference count, or any other by its Arc.
#[derive(Clone)]
pub(crate) enum AllocatorRef {
    Cpu,
    Other(Arc<dyn Allocator>),
}

impl AllocatorRef {
    #[inline]
    pub(crate) fn get(&self) -> &dyn Allocator {
        match self {
            AllocatorRef::Cpu => &CpuAllocator,
            AllocatorRef::Other(a) => &**a,
        }
    }
}

/// [`get_allocator`] for a storage.
#[inline]
pub(crate) fn allocator_ref(device_type: DeviceType) -> Result<AllocatorRef> {
    if device_type == DeviceType::Cpu && !CPU_REPLACED.load(Ordering::Acquire) {
        return Ok(AllocatorRef::Cpu);
    }
    get_allocator(device_type).map(AllocatorRef::Other)
}

fn slot(t: DeviceType) -> usize {
    match t {
        DeviceType::Cpu => 0,
        DeviceType::Cuda => 1,
        DeviceType::Meta => 2,
        DeviceType::PrivateUse1 => 3,
    }
}

/// `c10::SetAllocator`: installs the allocator for a device type (replacing the CPU one is
/// allowed, as in PyTorch; Meta's cannot be replaced because meta tensors have no data).
pub fn set_allocator(device_type: DeviceType, allocator: Arc<dyn Allocator>) -> Result<()> {
    if device_type == DeviceType::Meta {
        return Err(Error::runtime(
            "set_allocator: the Meta device has no data and its allocator cannot be replaced",
        ));
    }
    ALLOCATORS.write()[slot(device_type)] = Some(allocator);
    if device_type == DeviceType::Cpu {
        // After the table holds it: a storage that sees the flag finds the new allocator.
        CPU_REPLACED.store(true, Ordering::Release);
    }
    Ok(())
}

/// `c10::GetAllocator`: the allocator for a device type.
pub fn get_allocator(device_type: DeviceType) -> Result<Arc<dyn Allocator>> {
    if let Some(a) = &ALLOCATORS.read()[slot(device_type)] {
        return Ok(a.clone());
    }
    // Shared defaults: an `Arc::new` of the zero-sized allocator would still allocate its
    // reference counts on every storage.
    static CPU: std::sync::OnceLock<Arc<dyn Allocator>> = std::sync::OnceLock::new();
    static META: std::sync::OnceLock<Arc<dyn Allocator>> = std::sync::OnceLock::new();
    match device_type {
        DeviceType::Cpu => Ok(CPU.get_or_init(|| Arc::new(CpuAllocator)).clone()),
        DeviceType::Meta => Ok(META.get_or_init(|| Arc::new(MetaAllocator)).clone()),
        DeviceType::Cuda => Err(Error::runtime("Torch not compiled with CUDA enabled")),
        DeviceType::PrivateUse1 => Err(Error::runtime(
            "no allocator is registered for the privateuseone device; register one with \
             ratten_core::allocator::set_allocator(DeviceType::PrivateUse1, ...)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_allocations_are_aligned_and_zeroed() {
        for n in [
            1,
            3,
            64,
            1000,
            4096,
            LARGE_ALLOCATION - 1,
            LARGE_ALLOCATION,
            5 << 20,
        ] {
            let d = CpuAllocator.allocate(n).unwrap();
            let p = d.get().unwrap();
            assert_eq!(p.as_ptr() as usize % ALIGNMENT, 0, "{n} bytes");
            assert!(d.capacity() >= n);
            // SAFETY: the DataPtr owns `capacity` initialised bytes.
            let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), d.capacity()) };
            if d.is_zeroed() {
                assert!(bytes.iter().all(|&b| b == 0), "{n} bytes");
            }
        }
        assert!(CpuAllocator.allocate(0).unwrap().get().is_none());
    }

    #[test]
    fn medium_blocks_are_reused_per_thread_and_zeroed_on_request() {
        assert_eq!(MediumCache::class_of(4097), Some(0));
        assert_eq!(MediumCache::class_of(8 << 10), Some(0));
        assert_eq!(MediumCache::class_of(400_000), Some(6));
        assert_eq!(MediumCache::class_of(LARGE_ALLOCATION - 1), Some(7));
        assert_eq!(MediumCache::class_of(LARGE_ALLOCATION + 1), None);
        // Run on a fresh thread so that its cache starts empty.
        std::thread::spawn(|| {
            let a = CpuAllocator.allocate(400_000).unwrap();
            assert_eq!(a.capacity(), 512 << 10);
            let pa = a.get().unwrap();
            // SAFETY: the DataPtr owns `capacity` bytes and nobody else uses them.
            unsafe { std::ptr::write_bytes(pa.as_ptr(), 0xAB, a.capacity()) };
            drop(a);
            // Reused as it was left (no memset), in any size of the class.
            let b = CpuAllocator.allocate(300_000).unwrap();
            assert_eq!(b.get(), Some(pa));
            assert!(!b.is_zeroed());
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(pa.as_ptr(), b.capacity()) };
            assert!(bytes.iter().all(|&x| x == 0xAB));
            drop(b);
            let z = CpuAllocator.allocate_zeroed(262_145).unwrap();
            assert_eq!(z.get(), Some(pa));
            assert!(z.is_zeroed());
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(pa.as_ptr(), z.capacity()) };
            assert!(bytes.iter().all(|&x| x == 0));
            // More blocks than the class keeps: the extra ones go back to the global allocator.
            let held: Vec<DataPtr> = (0..MEDIUM_CACHE_PER_CLASS + 2)
                .map(|_| CpuAllocator.allocate(300_000).unwrap())
                .collect();
            drop(held);
            drop(z);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn small_blocks_are_reused_per_thread_and_zeroed_on_request() {
        assert_eq!(small_class(1), Some(0));
        assert_eq!(small_class(64), Some(0));
        assert_eq!(small_class(65), Some(1));
        assert_eq!(small_class(4096), Some(6));
        assert_eq!(small_class(4097), None);
        let first = CpuAllocator.allocate(12).unwrap();
        assert_eq!(first.capacity(), 64);
        let p = first.get().unwrap();
        // SAFETY: `first` owns 64 bytes.
        unsafe { std::ptr::write_bytes(p.as_ptr(), 0xCD, 64) };
        drop(first);
        let again = CpuAllocator.allocate(40).unwrap();
        assert_eq!(again.get(), Some(p), "the freed block is reused");
        assert!(!again.is_zeroed());
        drop(again);
        let zeroed = CpuAllocator.allocate_zeroed(40).unwrap();
        assert_eq!(zeroed.get(), Some(p));
        // SAFETY: `zeroed` owns 64 initialised bytes.
        let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), 64) };
        assert!(zeroed.is_zeroed() && bytes.iter().all(|&b| b == 0));
        // A medium block (above the small classes) has its own class size; a new one (this
        // test's thread has cached none) is zeroed.
        let m = CpuAllocator.allocate(10_000).unwrap();
        assert_eq!(m.capacity(), 16 << 10);
        assert!(m.is_zeroed());
    }

    #[test]
    fn large_blocks_are_reused_and_zeroed_on_request() {
        let n = 7 << 20;
        let first = CpuAllocator.allocate(n).unwrap();
        let addr = first.get().unwrap();
        // SAFETY: `first` owns n bytes.
        unsafe { std::ptr::write_bytes(addr.as_ptr(), 0xAB, n) };
        drop(first);
        // Other tests allocate concurrently; a reuse of some block of this size is enough,
        // and whichever block comes back must be zero when asked.
        let second = CpuAllocator.allocate_zeroed(n).unwrap();
        let p = second.get().unwrap();
        // SAFETY: `second` owns at least n bytes.
        let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), n) };
        assert!(bytes.iter().all(|&b| b == 0));
        assert_eq!(p.as_ptr() as usize % HUGE_PAGE, 0);
    }

    #[test]
    fn the_block_cache_is_bounded() {
        // Other tests allocate concurrently; only the bound is checked here.
        set_cpu_cache_limit(6 << 20);
        let blocks: Vec<_> = (0..4)
            .map(|_| CpuAllocator.allocate(3 << 20).unwrap())
            .collect();
        drop(blocks);
        assert!(cpu_cache_bytes() <= 6 << 20);
        empty_cpu_cache();
        set_cpu_cache_limit(DEFAULT_CACHE_LIMIT);
    }

    const MB2: usize = HUGE_PAGE;

    /// The cache's ranges in address order, after checking that both indexes list the same
    /// ranges, that none are adjacent or overlap, and that `cached_bytes` is their sum.
    fn ranges(c: &BlockCache) -> Vec<(usize, usize)> {
        let by_addr: Vec<_> = c.by_addr.iter().map(|(&a, &l)| (a, l)).collect();
        let mut by_size: Vec<_> = c.by_size.iter().map(|&(l, a)| (a, l)).collect();
        by_size.sort();
        assert_eq!(by_addr, by_size);
        for w in by_addr.windows(2) {
            assert!(w[0].0 + w[0].1 < w[1].0, "adjacent or overlapping: {w:?}");
        }
        assert_eq!(c.cached_bytes, by_addr.iter().map(|r| r.1).sum::<usize>());
        by_addr
    }

    #[test]
    fn freed_blocks_merge_with_their_neighbours() {
        let mut c = BlockCache::new();
        let base = 1 << 40;
        c.put(base + 2 * MB2, MB2);
        c.put(base + 6 * MB2, 2 * MB2);
        assert_eq!(
            ranges(&c),
            [(base + 2 * MB2, MB2), (base + 6 * MB2, 2 * MB2)]
        );
        // Between the two, touching both: one range.
        c.put(base + 3 * MB2, 3 * MB2);
        assert_eq!(ranges(&c), [(base + 2 * MB2, 6 * MB2)]);
        // Before it, touching it.
        c.put(base, 2 * MB2);
        assert_eq!(ranges(&c), [(base, 8 * MB2)]);
        // Apart from it.
        c.put(base + 9 * MB2, MB2);
        assert_eq!(ranges(&c), [(base, 8 * MB2), (base + 9 * MB2, MB2)]);
    }

    #[test]
    fn allocations_take_the_smallest_range_that_holds_them_and_leave_its_tail() {
        let mut c = BlockCache::new();
        let base = 1 << 40;
        c.put(base, 8 * MB2);
        c.put(base + 10 * MB2, 2 * MB2);
        c.put(base + 20 * MB2, 3 * MB2);
        // Two pages: the exact range, not a piece of a larger one.
        assert_eq!(c.take(2 * MB2), Some(base + 10 * MB2));
        // One page: the smallest range holding it (3 pages); its tail stays.
        assert_eq!(c.take(MB2), Some(base + 20 * MB2));
        assert_eq!(ranges(&c), [(base, 8 * MB2), (base + 21 * MB2, 2 * MB2)]);
        // Larger than every range: a miss.
        assert_eq!(c.take(9 * MB2), None);
        // A weight gradient's block serves four activations, and takes them back whole.
        let pieces: Vec<_> = (0..4).map(|_| c.take(2 * MB2).unwrap()).collect();
        assert_eq!(pieces[0], base + 21 * MB2);
        assert_eq!(&pieces[1..], [base, base + 2 * MB2, base + 4 * MB2]);
        assert_eq!(ranges(&c), [(base + 6 * MB2, 2 * MB2)]);
        for &p in pieces[1..].iter().rev() {
            c.put(p, 2 * MB2);
        }
        assert_eq!(ranges(&c), [(base, 8 * MB2)]);
        assert_eq!(c.take(8 * MB2), Some(base));
        assert_eq!(c.pop_largest(), None);
    }

    #[test]
    fn a_miss_takes_every_cached_range_out() {
        let mut c = BlockCache::new();
        let base = 1 << 40;
        c.put(base, 2 * MB2);
        c.put(base + 4 * MB2, 3 * MB2);
        assert_eq!(c.take_or_drain(2 * MB2), Ok(base));
        c.put(base, 2 * MB2);
        // Larger than every range: all of them come out, for the caller to unmap.
        let released = c.take_or_drain(4 * MB2).unwrap_err();
        assert_eq!(
            released.into_iter().collect::<Vec<_>>(),
            [(base, 2 * MB2), (base + 4 * MB2, 3 * MB2)]
        );
        assert_eq!(ranges(&c), []);
        assert_eq!(c.cached_bytes, 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Against a reference that tracks each page: a taken range is free pages and becomes
        /// used; the cache always holds exactly the free pages, coalesced.
        #[test]
        fn the_cache_holds_exactly_the_free_pages(
            ops in proptest::collection::vec((proptest::bool::ANY, 1usize..6), 1..80)
        ) {
            const PAGES: usize = 64;
            let base = 1 << 40;
            let mut c = BlockCache::new();
            let mut free = [true; PAGES];
            c.put(base, PAGES * MB2);
            let mut used: Vec<(usize, usize)> = Vec::new();
            for (i, &(alloc, pages)) in ops.iter().enumerate() {
                if alloc || used.is_empty() {
                    let best = ranges(&c).into_iter().filter(|r| r.1 >= pages * MB2)
                        .min_by_key(|&(a, l)| (l, a));
                    let got = c.take(pages * MB2);
                    proptest::prop_assert_eq!(got, best.map(|r| r.0));
                    if let Some(a) = got {
                        let first = (a - base) / MB2;
                        for f in &mut free[first..first + pages] {
                            proptest::prop_assert!(*f, "handed out a used page");
                            *f = false;
                        }
                        used.push((a, pages));
                    }
                } else {
                    let (a, pages) = used.swap_remove(i % used.len());
                    let first = (a - base) / MB2;
                    free[first..first + pages].fill(true);
                    c.put(a, pages * MB2);
                }
                // The reference's free pages, as maximal runs.
                let mut runs = Vec::new();
                let mut p = 0;
                while p < PAGES {
                    if free[p] {
                        let start = p;
                        while p < PAGES && free[p] {
                            p += 1;
                        }
                        runs.push((base + start * MB2, (p - start) * MB2));
                    } else {
                        p += 1;
                    }
                }
                proptest::prop_assert_eq!(ranges(&c), runs);
            }
        }
    }

    #[test]
    fn meta_has_no_data_and_cuda_is_refused() {
        assert!(MetaAllocator.allocate(1 << 40).unwrap().get().is_none());
        let e = get_allocator(DeviceType::Cuda).err().unwrap();
        assert_eq!(e.message(), "Torch not compiled with CUDA enabled");
        assert!(set_allocator(DeviceType::Meta, Arc::new(MetaAllocator)).is_err());
    }
}
