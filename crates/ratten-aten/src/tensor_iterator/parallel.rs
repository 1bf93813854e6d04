//! Intra-op parallelism (ATen/Parallel.h): `set_num_threads` / `get_num_threads` and
//! `parallel_for`, on a rayon pool of the chosen size.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use ratten_core::{Error, Result};

/// `at::internal::GRAIN_SIZE`: the least work (elements) that warrants parallelism.
pub const GRAIN_SIZE: i64 = 32768;

/// 0 = not set yet: the machine's available parallelism.
static NUM_THREADS: AtomicUsize = AtomicUsize::new(0);
static POOL: Mutex<Option<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(None);

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

/// `torch.set_num_threads(n)`: n must be positive ("Expected positive number of threads").
pub fn set_num_threads(n: i64) -> Result<()> {
    if n <= 0 {
        return Err(Error::runtime("Expected positive number of threads"));
    }
    NUM_THREADS.store(n as usize, Ordering::Relaxed);
    Ok(())
}

fn pool(n: usize) -> Result<Arc<rayon::ThreadPool>> {
    let mut guard = POOL.lock();
    if let Some((size, p)) = guard.as_ref() {
        if *size == n {
            return Ok(p.clone());
        }
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("ratten-intraop-{i}"))
            .build()
            .map_err(|e| {
                Error::runtime(format!("could not start the intra-op thread pool: {e}"))
            })?,
    );
    *guard = Some((n, p.clone()));
    Ok(p)
}

/// Whether the calling thread is one of ratten's intra-op workers (nested parallel regions
/// run serially, as in ATen).
fn in_parallel_region() -> bool {
    rayon::current_thread_index().is_some()
        && std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("ratten-intraop-"))
}

/// `at::parallel_for(begin, end, grain_size, f)`: splits `[begin, end)` into at most
/// `get_num_threads()` chunks of at least `grain_size` and runs `f(chunk_begin, chunk_end)` on
/// each, in parallel. Serial when the range is small, one thread is configured, or we are
/// already inside a parallel region.
pub fn parallel_for<F>(begin: i64, end: i64, grain_size: i64, f: F) -> Result<()>
where
    F: Fn(i64, i64) + Sync,
{
    if begin >= end {
        return Ok(());
    }
    let n = end - begin;
    let threads = get_num_threads();
    if n <= grain_size.max(1) || threads == 1 || in_parallel_region() {
        f(begin, end);
        return Ok(());
    }
    let max_chunks = (n + grain_size.max(1) - 1) / grain_size.max(1);
    let chunks = (threads as i64).min(max_chunks);
    let chunk = (n + chunks - 1) / chunks;
    let pool = pool(threads)?;
    pool.scope(|s| {
        for c in 1..chunks {
            let (b, e) = (begin + c * chunk, (begin + (c + 1) * chunk).min(end));
            if b < e {
                let f = &f;
                s.spawn(move |_| f(b, e));
            }
        }
        // The calling thread is not a pool worker; it takes no chunk itself, but the first
        // chunk runs on the pool too so every chunk sees the same (worker) context.
        let f = &f;
        s.spawn(move |_| f(begin, (begin + chunk).min(end)));
    });
    Ok(())
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
    }
}
