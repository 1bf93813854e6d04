//! Intra-op parallelism (ATen/Parallel.h): `set_num_threads` / `get_num_threads` and
//! `parallel_for`, on a pool of the chosen size less one (the calling thread works too) whose
//! workers spin for a while after each region before they sleep, as OpenMP's do.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use ratten_core::{Error, Result};

/// `at::internal::GRAIN_SIZE`: the least work (elements) that warrants parallelism.
pub const GRAIN_SIZE: i64 = 32768;

/// How many chunks per thread a region is cut into at most (see `parallel_for`).
const CHUNKS_PER_THREAD: i64 = 4;

/// How long a worker spins for the next region before it sleeps (OpenMP's `KMP_BLOCKTIME`,
/// whose default is 200 ms; short here so that an idle process burns little CPU).
pub const SPIN_TIME: Duration = Duration::from_micros(100);

/// 0 = not set yet: the machine's available parallelism.
static NUM_THREADS: AtomicUsize = AtomicUsize::new(0);
static POOL: Mutex<Option<Arc<Pool>>> = Mutex::new(None);

/// `torch.get_num_threads()`: threads used for intra-op parallelism (default: the number of
/// CPUs available to the process).
pub fn get_num_threads() -> usize {
    match NUM_THREADS.load(Ordering::Relaxed) {
        0 => default_num_threads(),
        n => n,
    }
}

/// The CPUs available to the process, read once: `available_parallelism` reads the affinity
/// mask and cgroup quota files on every call (microseconds), and `for_each` asks for every
/// op above the grain size. PyTorch also fixes its default at start-up.
fn default_num_threads() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The most intra-op threads [`set_num_threads`] takes. torch passes any count to OpenMP;
/// here each is an OS thread of the pool, and a count in the millions exhausts the machine's
/// processes, so the count is bounded (far above any CPU count a process gets).
pub const MAX_NUM_THREADS: usize = 1024;

/// `torch.set_num_threads(n)`: n must be positive ("Expected positive number of threads"),
/// and at most [`MAX_NUM_THREADS`].
pub fn set_num_threads(n: i64) -> Result<()> {
    if n <= 0 {
        return Err(Error::runtime("Expected positive number of threads"));
    }
    if n as u64 > MAX_NUM_THREADS as u64 {
        return Err(Error::runtime(format!(
            "set_num_threads: {n} threads is more than ratten's limit of {MAX_NUM_THREADS} \
             intra-op threads"
        )));
    }
    NUM_THREADS.store(n as usize, Ordering::Relaxed);
    Ok(())
}

/// What the workers of a [`Pool`] share: the region on offer, published by bumping `epoch`.
struct Shared {
    /// The latest region (kept until the next one replaces it; a region that has closed is
    /// never entered, see [`Region::work`]).
    region: Mutex<Option<Arc<Region>>>,
    /// Bumped once per region; workers wait for it to change.
    epoch: AtomicU64,
    /// Workers asleep (or about to be) on `wake`.
    sleepers: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
    /// Set when the pool is replaced (another thread count): its workers exit.
    shutdown: AtomicBool,
}

impl Shared {
    /// A worker: waits for each new region (spinning up to [`SPIN_TIME`], then asleep) and
    /// takes its share of it.
    fn worker(&self) {
        IN_PARALLEL.with(|f| f.set(true));
        let mut seen = self.epoch.load(Ordering::SeqCst);
        loop {
            let now = self.wait_for_epoch(seen);
            if self.shutdown.load(Ordering::SeqCst) {
                return;
            }
            seen = now;
            let region = self.region.lock().clone();
            if let Some(r) = region {
                r.work();
            }
        }
    }

    /// Returns the first epoch other than `seen` (or `seen` at shutdown): spins for
    /// [`SPIN_TIME`], so that back-to-back regions find the worker awake, then sleeps.
    fn wait_for_epoch(&self, seen: u64) -> u64 {
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            let e = self.epoch.load(Ordering::Acquire);
            if e != seen || self.shutdown.load(Ordering::Relaxed) {
                return e;
            }
            std::hint::spin_loop();
            spins += 1;
            // Reading the clock costs about 20 ns: once per 64 pauses.
            if spins.is_multiple_of(64) && start.elapsed() >= SPIN_TIME {
                break;
            }
        }
        let mut guard = self.sleep.lock();
        // With `sleepers` raised before the epoch is read again (both SeqCst), either this
        // read sees the new epoch or the publisher sees a sleeper and notifies under the
        // lock, which it cannot take before `wait` has released it: no wake-up is lost.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        loop {
            let e = self.epoch.load(Ordering::SeqCst);
            if e != seen || self.shutdown.load(Ordering::SeqCst) {
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
                return e;
            }
            self.wake.wait(&mut guard);
        }
    }

    /// Offers `region` to the workers.
    fn publish(&self, region: Arc<Region>) {
        *self.region.lock() = Some(region);
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = self.sleep.lock();
            self.wake.notify_all();
        }
    }
}

/// `n - 1` workers for `n` threads: the calling thread takes a share of every parallel region
/// itself, as OpenMP's master thread does in ATen.
struct Pool {
    workers: usize,
    shared: Arc<Shared>,
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        let _guard = self.shared.sleep.lock();
        self.shared.wake.notify_all();
    }
}

impl Pool {
    /// Starts `workers` workers (none left running on an error).
    fn new(workers: usize) -> Result<Arc<Pool>> {
        let shared = Arc::new(Shared {
            region: Mutex::new(None),
            epoch: AtomicU64::new(0),
            sleepers: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            shutdown: AtomicBool::new(false),
        });
        // Dropped on an error below, the pool stops the workers already started.
        let p = Arc::new(Pool {
            workers,
            shared: shared.clone(),
        });
        for i in 0..workers {
            let s = shared.clone();
            std::thread::Builder::new()
                .name(format!("ratten-intraop-{i}"))
                .spawn(move || s.worker())
                .map_err(|e| {
                    Error::runtime(format!("could not start the intra-op thread pool: {e}"))
                })?;
        }
        Ok(p)
    }
}

/// The pool for `n` threads (replacing one of another size, whose workers exit).
fn pool(n: usize) -> Result<Arc<Pool>> {
    let workers = n.saturating_sub(1).max(1);
    let mut guard = POOL.lock();
    if let Some(p) = guard.as_ref() {
        if p.workers == workers {
            return Ok(p.clone());
        }
    }
    let p = Pool::new(workers)?;
    *guard = Some(p.clone());
    Ok(p)
}

thread_local! {
    /// ATen's `in_parallel_region()`: true on the pool's workers, and on the calling thread
    /// while it runs its share of a region.
    static IN_PARALLEL: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is inside a parallel region (nested regions run serially, as in
/// ATen).
pub fn in_parallel_region() -> bool {
    IN_PARALLEL.with(Cell::get)
}

/// Note [parallel_for without waiting for sleepers]: a region's chunks are claimed from a
/// shared counter by the calling thread and by the workers, to whom it is offered by bumping an
/// epoch. The caller starts at once; a worker that comes late finds nothing left and never
/// touches the region, so a region never costs more than running it serially plus the offer,
/// and the caller waits only for chunks a worker actually claimed. (A rayon `scope` instead
/// waits for every spawned job to be scheduled, which on a busy machine costs tens of
/// microseconds: 100K-element adds took 3x PyTorch's time.) After a region, workers spin on
/// the epoch for `SPIN_TIME` before they sleep on a condition variable, as OpenMP's threads
/// do (its `KMP_BLOCKTIME`): back-to-back ops find them awake instead of paying a wake-up
/// (tens of microseconds, by which time the caller had done the whole op alone), while a
/// process that stops computing spins for at most that long. The region's closure lives on
/// the caller's stack: workers reach it through `Region::body` only between registering in
/// `active` and leaving it, and the caller closes the region and waits for `active == 0`
/// before returning or unwinding.
struct Region {
    body: *const (dyn Fn(i64, i64) + Sync),
    begin: i64,
    end: i64,
    chunk: i64,
    chunks: i64,
    next: AtomicI64,
    active: AtomicUsize,
    open: AtomicBool,
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

// SAFETY: `body` is only dereferenced under the protocol of Note [parallel_for without waiting
// for sleepers], while the caller keeps the closure (which is `Sync`) alive.
unsafe impl Send for Region {}
// SAFETY: as above; every other field is thread-safe.
unsafe impl Sync for Region {}

impl Region {
    /// Claims and runs chunks until none is left. Returns false if the body panicked.
    ///
    /// # Safety
    /// The caller must be registered in `active` with the region seen open (or be the thread
    /// that owns the region), so `body` is alive.
    unsafe fn run_chunks(&self) -> bool {
        loop {
            let c = self.next.fetch_add(1, Ordering::Relaxed);
            if c >= self.chunks {
                return true;
            }
            let b = self.begin + c * self.chunk;
            let e = (b + self.chunk).min(self.end);
            // SAFETY: the function's contract keeps `body` alive.
            let body = unsafe { &*self.body };
            if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(b, e))) {
                // Stop handing out chunks; the caller re-raises the first panic.
                self.next.store(self.chunks, Ordering::Relaxed);
                self.panic.lock().get_or_insert(p);
                return false;
            }
        }
    }

    /// A worker's part.
    fn work(&self) {
        self.active.fetch_add(1, Ordering::SeqCst);
        if self.open.load(Ordering::SeqCst) {
            // SAFETY: registered in `active` while the region was open: the caller waits for
            // us before the body goes away.
            unsafe { self.run_chunks() };
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    /// The caller's closing: no new worker may enter, and those inside finish.
    fn close_and_wait(&self) {
        self.open.store(false, Ordering::SeqCst);
        let mut spins = 0u32;
        while self.active.load(Ordering::SeqCst) != 0 {
            if spins < 1 << 12 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// `at::parallel_for(begin, end, grain_size, f)`: splits `[begin, end)` into at most 4 chunks
/// per thread of `get_num_threads()` and at most one per `grain_size` elements, and runs
/// `f(chunk_begin, chunk_end)` on each, the calling thread and the workers claiming chunks in
/// turn. Serial when the range is small, one thread is configured, or we are
/// already inside a parallel region. See Note [parallel_for without waiting for sleepers].
pub fn parallel_for<F>(begin: i64, end: i64, grain_size: i64, f: F) -> Result<()>
where
    F: Fn(i64, i64) + Sync,
{
    if begin >= end {
        return Ok(());
    }
    let n = end - begin;
    let grain = grain_size.max(1);
    if n <= grain || in_parallel_region() {
        f(begin, end);
        return Ok(());
    }
    let threads = get_num_threads();
    if threads == 1 {
        f(begin, end);
        return Ok(());
    }
    // As ATen, at most one chunk per `grain` elements (rounded up), but up to 4 per thread
    // rather than one: chunks are claimed, not assigned, so a worker that wakes late still
    // takes a share instead of leaving the caller alone.
    let chunks = (threads as i64 * CHUNKS_PER_THREAD).min((n + grain - 1) / grain);
    let chunk = (n + chunks - 1) / chunks;
    let chunks = (n + chunk - 1) / chunk;
    let pool = pool(threads)?;
    run_region(&pool, begin, end, chunk, chunks, &f);
    Ok(())
}

/// Runs `chunks` chunks of `chunk` elements of `[begin, end)` on the calling thread and the
/// workers of `pool`, re-raising the first panic of any chunk.
fn run_region(
    pool: &Pool,
    begin: i64,
    end: i64,
    chunk: i64,
    chunks: i64,
    f: &(dyn Fn(i64, i64) + Sync),
) {
    // SAFETY: only the lifetime is erased; see Note [parallel_for without waiting for
    // sleepers] for why the pointer is never used after `f` is gone.
    let body: *const (dyn Fn(i64, i64) + Sync + 'static) = unsafe { std::mem::transmute(f) };
    let region = Arc::new(Region {
        body,
        begin,
        end,
        chunk,
        chunks,
        next: AtomicI64::new(0),
        active: AtomicUsize::new(0),
        open: AtomicBool::new(true),
        panic: Mutex::new(None),
    });
    pool.shared.publish(region.clone());
    let was_in_parallel = IN_PARALLEL.with(|p| p.replace(true));
    // SAFETY: this thread owns the region and `f` is alive for this whole call.
    unsafe { region.run_chunks() };
    IN_PARALLEL.with(|p| p.set(was_in_parallel));
    region.close_and_wait();
    let panic = region.panic.lock().take();
    if let Some(p) = panic {
        std::panic::resume_unwind(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI64;

    #[test]
    fn covers_the_range_once() {
        let sum = AtomicI64::new(0);
        parallel_for(0, 100_000, 1000, |b, e| {
            sum.fetch_add((b..e).sum::<i64>(), Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(sum.load(Ordering::Relaxed), (0..100_000i64).sum::<i64>());
        assert!(set_num_threads(0).is_err());
        // Refused counts change nothing (the count is read before and after).
        let before = NUM_THREADS.load(Ordering::Relaxed);
        for n in [-1, MAX_NUM_THREADS as i64 + 1, 1_000_000, i64::MAX] {
            let e = set_num_threads(n).unwrap_err();
            assert_eq!(e.kind(), ratten_core::ErrorKind::Runtime);
        }
        assert_eq!(NUM_THREADS.load(Ordering::Relaxed), before);
    }

    /// Many regions back to back (late workers must find nothing and leave the finished
    /// regions alone), each covering its range exactly once, with 2 and 4 threads; nested
    /// regions run serially.
    #[test]
    fn back_to_back_regions_and_nesting() {
        let before = NUM_THREADS.load(Ordering::Relaxed);
        for threads in [2, 4] {
            set_num_threads(threads).unwrap();
            for round in 0..200i64 {
                let n = 1000 + round * 37;
                let hits: Vec<AtomicI64> = (0..n).map(|_| AtomicI64::new(0)).collect();
                parallel_for(0, n, 100, |b, e| {
                    for h in &hits[b as usize..e as usize] {
                        h.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .unwrap();
                assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
            }
            let nested_parallel = AtomicI64::new(0);
            parallel_for(0, 10_000, 10, |_, _| {
                assert!(in_parallel_region());
                parallel_for(0, 1000, 1, |b, e| {
                    if (b, e) != (0, 1000) {
                        nested_parallel.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .unwrap();
            })
            .unwrap();
            assert_eq!(nested_parallel.load(Ordering::Relaxed), 0);
            assert!(!in_parallel_region());
        }
        NUM_THREADS.store(before, Ordering::Relaxed);
    }

    /// Workers stop spinning (asleep, counted in `sleepers`) once `SPIN_TIME` has passed
    /// without a region, wake for the next one, and exit when their pool is dropped.
    #[test]
    fn workers_sleep_after_spinning_and_exit_with_the_pool() {
        let p = Pool::new(2).unwrap();
        let asleep = |p: &Pool| {
            let t = Instant::now();
            while p.shared.sleepers.load(Ordering::SeqCst) != p.workers {
                assert!(
                    t.elapsed() < Duration::from_secs(10),
                    "workers still spinning"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        for round in 0..3i64 {
            asleep(&p);
            let hits: Vec<AtomicI64> = (0..3000).map(|_| AtomicI64::new(0)).collect();
            run_region(&p, 0, 3000, 100, 30, &|b, e| {
                for h in &hits[b as usize..e as usize] {
                    h.fetch_add(1 + round, Ordering::Relaxed);
                }
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1 + round));
        }
        let shared = p.shared.clone();
        drop(p);
        let t = Instant::now();
        // Each worker holds a clone of `shared` until it exits.
        while Arc::strong_count(&shared) != 1 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "workers did not exit"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A panic in any chunk reaches the caller after every chunk in flight has finished.
    #[test]
    fn a_panicking_chunk_reaches_the_caller() {
        let before = NUM_THREADS.load(Ordering::Relaxed);
        set_num_threads(2).unwrap();
        for which in [0i64, 5000] {
            let r = std::panic::catch_unwind(|| {
                parallel_for(0, 10_000, 100, |b, e| {
                    if (b..e).contains(&which) {
                        panic!("chunk with {which}");
                    }
                })
            });
            let msg = r.unwrap_err();
            assert_eq!(
                msg.downcast_ref::<String>().map(String::as_str),
                Some(format!("chunk with {which}").as_str())
            );
            assert!(!in_parallel_region());
        }
        NUM_THREADS.store(before, Ordering::Relaxed);
    }
}
