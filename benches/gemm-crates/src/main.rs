//! float32 matrix products at the sizes issue benchmarks name, with 1 and 2 threads: ratten's
//! `mm` (through its dispatcher), the `gemm`, `faer` and `matrixmultiply` crates called
//! directly, and torch's `mm` (a python3 subprocess, skipped when torch does not import). Each
//! figure is GFLOPS (median of 7 timed batches) and its fraction of the FMA peak measured
//! first in the same run (12 independent AVX2 FMA chains per thread); the last column is
//! ratten's GFLOPS over torch's (above 1: ratten is faster). matrixmultiply reads its thread
//! count once per process, from MATMUL_NUM_THREADS (its default is every core): each thread
//! count runs in a child process of its own, with that variable set.

use std::process::Command;
use std::time::Instant;

use ratten_aten::tensor_iterator::set_num_threads;
use ratten_aten::{functions, Tensor};
use ratten_core::ScalarType;

const SHAPES: [(usize, usize, usize); 4] = [
    (256, 256, 256),
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (64, 784, 256),
];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// GFLOPS of `f` (one product of `flops`): batches of calls lasting at least 50 ms.
fn gflops(mut f: impl FnMut(), flops: f64) -> f64 {
    f();
    let mut reps = 1;
    loop {
        let t = Instant::now();
        (0..reps).for_each(|_| f());
        if t.elapsed().as_secs_f64() > 0.05 {
            break;
        }
        reps *= 2;
    }
    let times = (0..7)
        .map(|_| {
            let t = Instant::now();
            (0..reps).for_each(|_| f());
            t.elapsed().as_secs_f64() / reps as f64
        })
        .collect();
    flops / median(times) / 1e9
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_chains(iters: usize) -> f32 {
    use std::arch::x86_64::*;
    let mut acc = [_mm256_set1_ps(0.0); 12];
    let (a, b) = (_mm256_set1_ps(0.999), _mm256_set1_ps(0.001));
    for _ in 0..iters {
        for r in acc.iter_mut() {
            *r = _mm256_fmadd_ps(*r, a, b);
        }
    }
    let mut s = _mm256_setzero_ps();
    for r in acc {
        s = _mm256_add_ps(s, r);
    }
    let mut o = [0f32; 8];
    _mm256_storeu_ps(o.as_mut_ptr(), s);
    o.iter().sum()
}

/// The float32 FMA peak of `threads` cores, in GFLOPS.
fn fma_peak(threads: usize) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        let iters = 20_000_000;
        let times = (0..3)
            .map(|_| {
                let t = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        // SAFETY: AVX2 and FMA were detected above.
                        s.spawn(|| std::hint::black_box(unsafe { fma_chains(iters) }));
                    }
                });
                t.elapsed().as_secs_f64()
            })
            .collect();
        return (iters * 12 * 16 * threads) as f64 / median(times) / 1e9;
    }
    f64::NAN
}

const TORCH: &str = r#"
import sys, time, statistics, torch
threads, m, k, n = map(int, sys.argv[1:])
torch.set_num_threads(threads)
a, b = torch.rand(m, k), torch.rand(k, n)
torch.mm(a, b)
reps = 1
while True:
    t = time.perf_counter()
    for _ in range(reps): torch.mm(a, b)
    if time.perf_counter() - t > 0.05: break
    reps *= 2
v = []
for _ in range(7):
    t = time.perf_counter()
    for _ in range(reps): torch.mm(a, b)
    v.append((time.perf_counter() - t) / reps)
print(2 * m * k * n / statistics.median(v) / 1e9)
"#;

fn torch_gflops(threads: usize, (m, k, n): (usize, usize, usize)) -> Option<f64> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(python)
        .args(["-c", TORCH])
        .args([threads, m, k, n].map(|v| v.to_string()))
        .output()
        .ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

fn main() {
    if let Ok(threads) = std::env::var(CHILD_THREADS) {
        run(threads.parse().expect("a thread count"));
        return;
    }
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    println!("float32 GEMM, GFLOPS (fraction of the FMA peak); CPU: {cpu}");
    for threads in ["1", "2"] {
        let exe = std::env::current_exe().expect("the bench's own path");
        let status = Command::new(exe)
            .env(CHILD_THREADS, threads)
            .env("MATMUL_NUM_THREADS", threads)
            .status()
            .expect("the bench's child process");
        assert!(status.success(), "the {threads}-thread run failed");
    }
}

/// Set in the child process that measures one thread count.
const CHILD_THREADS: &str = "RATTEN_GEMM_BENCH_THREADS";

/// Every library at `threads` threads.
fn run(threads: usize) {
    set_num_threads(threads as i64).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let peak = fma_peak(threads);
    println!("\n{threads} thread(s): FMA peak {peak:.1} GFLOPS");
    println!(
        "{:<16}{:>16}{:>16}{:>16}{:>16}{:>16}{:>21}",
        "m x k x n", "ratten", "gemm", "faer", "matrixmultiply", "torch", "GFLOPS ratten/torch"
    );
    for (m, k, n) in SHAPES {
        let flops = 2.0 * (m * k * n) as f64;
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.1).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.1).collect();
        let mut c = vec![0f32; m * n];
        let (ta, tb) = (
            Tensor::from_vec(a.clone(), &[m as i64, k as i64]).unwrap(),
            Tensor::from_vec(b.clone(), &[k as i64, n as i64]).unwrap(),
        );
        let tc = Tensor::empty(&[m as i64, n as i64], ScalarType::Float).unwrap();
        let ratten = gflops(
            || {
                functions::mm_out(&tc, &ta, &tb).unwrap();
            },
            flops,
        );
        let par = if threads == 1 {
            gemm::Parallelism::None
        } else {
            gemm::Parallelism::Rayon(threads)
        };
        let gemm_crate = pool.install(|| {
            gflops(
                || unsafe {
                    // SAFETY: the three buffers hold m*k, k*n and m*n elements, row-major.
                    gemm::gemm(
                        m,
                        n,
                        k,
                        c.as_mut_ptr(),
                        1,
                        n as isize,
                        false,
                        a.as_ptr(),
                        1,
                        k as isize,
                        b.as_ptr(),
                        1,
                        n as isize,
                        0.0f32,
                        1.0f32,
                        false,
                        false,
                        false,
                        par,
                    )
                },
                flops,
            )
        });
        let fpar = if threads == 1 {
            faer::Par::Seq
        } else {
            faer::Par::rayon(threads)
        };
        let faer = pool.install(|| {
            gflops(
                || {
                    faer::linalg::matmul::matmul(
                        faer::MatMut::from_row_major_slice_mut(&mut c, m, n),
                        faer::Accum::Replace,
                        faer::MatRef::from_row_major_slice(&a, m, k),
                        faer::MatRef::from_row_major_slice(&b, k, n),
                        1.0f32,
                        fpar,
                    )
                },
                flops,
            )
        });
        // Its thread count is this process's MATMUL_NUM_THREADS (see `main`).
        let mm = gflops(
            || unsafe {
                // SAFETY: as for gemm above.
                matrixmultiply::sgemm(
                    m,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    k as isize,
                    1,
                    b.as_ptr(),
                    n as isize,
                    1,
                    0.0,
                    c.as_mut_ptr(),
                    n as isize,
                    1,
                )
            },
            flops,
        );
        let torch = torch_gflops(threads, (m, k, n));
        let cell = |g: f64| format!("{g:.1} ({:.2})", g / peak);
        println!(
            "{:<16}{:>16}{:>16}{:>16}{:>16}{:>16}{:>21}",
            format!("{m}x{k}x{n}"),
            cell(ratten),
            cell(gemm_crate),
            cell(faer),
            cell(mm),
            torch.map_or("-".into(), cell),
            torch.map_or("-".into(), |t| format!("{:.2}x", ratten / t)),
        );
    }
}
