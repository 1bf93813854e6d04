//! Reductions against the machine's read bandwidth, measured in the same run: the float32 sum
//! of 16M contiguous elements, sum over dim 0 and over dim 1 of a 4096x4096 float32 matrix,
//! var and std over each dim, with 1 and 2 intra-op threads.
//!
//! Run: `cargo bench -p ratten-aten --bench reductions` (`RATTEN_REDUCTIONS_ROUNDS=<n>`, default
//! 15). The cases run round-robin, one call of each per round, so every case sees the same
//! moments of the machine's load; printed are the median time per call and the fraction of the
//! read bandwidth it reaches (bytes read / time, over the bandwidth probe's bytes / time).
//! The probe reads 64 MB with 8 independent accumulators per thread (a pure load stream, as
//! fast as the loads can issue), split across the same number of threads as the case.
//! Against torch and numpy: `python python/bench/bench_reductions.py`.

use std::hint::black_box;
use std::time::Instant;

use ratten_aten::tensor_iterator::parallel::{parallel_for, set_num_threads};
use ratten_aten::{operators, Tensor};
use ratten_core::{ScalarType, TensorAccess};

const N: usize = 16 * 1024 * 1024;
const SIDE: i64 = 4096;

/// Reads every byte of `v` (the bandwidth probe), `threads` ways.
fn read_all(v: &[i64]) -> i64 {
    let acc = std::sync::atomic::AtomicI64::new(0);
    parallel_for(0, v.len() as i64, 1 << 20, |b, e| {
        let chunk = &v[b as usize..e as usize];
        let mut s = [0i64; 8];
        for c in chunk.chunks_exact(8) {
            for k in 0..8 {
                s[k] = s[k].wrapping_add(c[k]);
            }
        }
        let t = s.iter().fold(0i64, |a, &x| a.wrapping_add(x));
        acc.fetch_add(t, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    acc.into_inner()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

type Case<'a> = (&'a str, usize, Box<dyn Fn() + 'a>);

fn main() {
    let rounds: usize = std::env::var("RATTEN_REDUCTIONS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15)
        .max(3);
    // The probe reads a tensor's memory: the same allocator (2 MB-aligned mappings, huge pages
    // where the kernel gives them) as the cases' inputs.
    let probe_t = Tensor::ones(&[N as i64 / 2], ScalarType::Long).unwrap();
    let probe_guard = TensorAccess::read(probe_t.base()).unwrap();
    let probe: &[i64] = probe_guard.input_slice::<i64>(0).unwrap();
    let flat: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 0.001).collect();
    let x = Tensor::from_slice(&flat, &[N as i64]).unwrap();
    let m = x.view(&[SIDE, SIDE]).unwrap();
    let small = x.narrow(0, 0, 1 << 18).unwrap().contiguous().unwrap();
    let bytes = N * 4;
    let dim = |d: i64| -> Vec<i64> { vec![d] };
    let cases: Vec<Case> = vec![
        (
            "read bandwidth (64 MB)",
            bytes,
            Box::new(|| {
                black_box(read_all(black_box(probe)));
            }),
        ),
        (
            "sum 16M f32",
            bytes,
            Box::new(|| {
                black_box(x.sum().unwrap());
            }),
        ),
        (
            "sum 4096x4096 dim 0",
            bytes,
            Box::new(|| {
                black_box(
                    operators::sum_dim_IntList::call(&m, Some(&dim(0)), false, None).unwrap(),
                );
            }),
        ),
        (
            "sum 4096x4096 dim 1",
            bytes,
            Box::new(|| {
                black_box(
                    operators::sum_dim_IntList::call(&m, Some(&dim(1)), false, None).unwrap(),
                );
            }),
        ),
        (
            "var 4096x4096 dim 0",
            bytes,
            Box::new(|| {
                black_box(operators::var_correction::call(&m, Some(&dim(0)), None, false).unwrap());
            }),
        ),
        (
            "var 4096x4096 dim 1",
            bytes,
            Box::new(|| {
                black_box(operators::var_correction::call(&m, Some(&dim(1)), None, false).unwrap());
            }),
        ),
        (
            "std 4096x4096 dim 1",
            bytes,
            Box::new(|| {
                black_box(operators::std_correction::call(&m, Some(&dim(1)), None, false).unwrap());
            }),
        ),
        (
            "amax 4096x4096 dim 1",
            bytes,
            Box::new(|| {
                black_box(operators::amax::call(&m, &dim(1), false).unwrap());
            }),
        ),
        (
            "mean 16M f32",
            bytes,
            Box::new(|| {
                black_box(x.mean().unwrap());
            }),
        ),
        // In cache (1 MB, 16 calls per round): the loops' own rate.
        (
            "sum 256K f32 (in cache)",
            16 * (1 << 20),
            Box::new(|| {
                for _ in 0..16 {
                    black_box(small.sum().unwrap());
                }
            }),
        ),
        (
            "amax 256K f32 (in cache)",
            16 * (1 << 20),
            Box::new(|| {
                for _ in 0..16 {
                    black_box(small.amax().unwrap());
                }
            }),
        ),
    ];
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    println!("reductions, {rounds} interleaved rounds, CPU: {cpu}");
    for threads in [1, 2] {
        set_num_threads(threads).unwrap();
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
        for (_, _, f) in &cases {
            f();
        }
        for r in 0..rounds {
            for k in 0..cases.len() {
                let i = (k + r) % cases.len();
                let t0 = Instant::now();
                (cases[i].2)();
                times[i].push(t0.elapsed().as_secs_f64());
            }
        }
        let meds: Vec<f64> = times.into_iter().map(median).collect();
        let bw = cases[0].1 as f64 / meds[0];
        println!("\n{threads} thread(s): read bandwidth {:.1} GB/s", bw / 1e9);
        println!("{:<26} {:>10} {:>12}", "case", "median", "of read bw");
        for (k, (name, b, _)) in cases.iter().enumerate() {
            let gbs = *b as f64 / meds[k];
            println!("{name:<26} {:>8.3} ms {:>11.2}x", meds[k] * 1e3, gbs / bw);
        }
    }
}
