//! Small-operator latency: a 1-element f32 add through every layer, with candle-core's add on
//! 1-element tensors as the peer, in one run (issue 6, item 6: functional add through the
//! whole dispatcher under 200 ns).
//!
//! Run: `cargo bench -p ratten-aten --bench small_ops`. After the criterion output, a table of
//! medians (ns) and ratios to candle and to PyTorch's C++ figures on this kind of machine
//! (at::add 770 ns, at::add_out 600 ns, add_ 470 ns) is printed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use ratten_aten::{backends, functions, Tensor};
use ratten_core::Scalar;

/// PyTorch 2.15's figures from C++ on this kind of machine (issue 6), in ns.
const TORCH_ADD: f64 = 770.0;
const TORCH_ADD_OUT: f64 = 600.0;
const TORCH_ADD_: f64 = 470.0;

fn one(v: f32) -> Tensor {
    Tensor::from_slice(&[v], &[1]).unwrap()
}

fn bench(c: &mut Criterion) {
    if let Ok(which) = std::env::var("RATTEN_SMALL_OPS_PROFILE") {
        profile(&which);
        return;
    }
    let a = one(1.5);
    let b = one(2.25);
    let out = one(0.0);
    let acc = one(0.0);
    let alpha = Scalar::Int(1);
    let ca = candle_core::Tensor::new(&[1.5f32], &candle_core::Device::Cpu).unwrap();
    let cb = candle_core::Tensor::new(&[2.25f32], &candle_core::Device::Cpu).unwrap();

    let mut g = c.benchmark_group("small_ops");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g.bench_function("ratten/functions::add", |bn| {
        bn.iter(|| black_box(functions::add(black_box(&a), black_box(&b)).unwrap()))
    });
    g.bench_function("ratten/functions::add_out", |bn| {
        bn.iter(|| {
            functions::add_out(black_box(&out), black_box(&a), black_box(&b)).unwrap();
        })
    });
    g.bench_function("ratten/Tensor::add_", |bn| {
        bn.iter(|| {
            black_box(black_box(&acc).add_(black_box(&b)).unwrap());
        })
    });
    g.bench_function("ratten/backends::cpu::add", |bn| {
        bn.iter(|| black_box(backends::cpu::add(black_box(&a), black_box(&b), &alpha).unwrap()))
    });
    g.bench_function("candle/add", |bn| {
        bn.iter(|| black_box(black_box(&ca).add(black_box(&cb)).unwrap()))
    });
    g.finish();

    summary(&a, &b, &out, &acc, &alpha, &ca, &cb);
}

/// `RATTEN_SMALL_OPS_PROFILE=<variant>`: runs one variant for 3 s and nothing else, for
/// `perf record` (variants: add, add_out, add_, cpu, candle); under `perf stat -e instructions:u`
/// the instruction count per call is a load-independent measure on a shared machine.
fn profile(which: &str) {
    let (a, b, out) = (one(1.5), one(2.25), one(0.0));
    let alpha = Scalar::Int(1);
    let ca = candle_core::Tensor::new(&[1.5f32], &candle_core::Device::Cpu).unwrap();
    let cb = candle_core::Tensor::new(&[2.25f32], &candle_core::Device::Cpu).unwrap();
    // RATTEN_SMALL_OPS_CALLS=n: exactly n calls (for instruction counts under callgrind:
    // the difference of two counts over the difference of calls).
    let calls: Option<u64> = std::env::var("RATTEN_SMALL_OPS_CALLS")
        .ok()
        .and_then(|v| v.parse().ok());
    let t = Instant::now();
    let mut n = 0u64;
    while calls.map_or(t.elapsed() < Duration::from_secs(3), |c| n < c) {
        for _ in 0..1000 {
            match which {
                "add" => drop(black_box(functions::add(&a, &b).unwrap())),
                "add_out" => drop(black_box(functions::add_out(&out, &a, &b).unwrap())),
                "add_" => drop(black_box(out.add_(&b).unwrap())),
                "candle" => drop(black_box(ca.add(&cb).unwrap())),
                _ => drop(black_box(backends::cpu::add(&a, &b, &alpha).unwrap())),
            }
        }
        n += 1000;
    }
    println!(
        "{which}: {n} calls, {:.1} ns per call",
        t.elapsed().as_nanos() as f64 / n as f64
    );
}

/// Median ns per call over 31 batches of 20000 calls (criterion's own estimates are in
/// target/criterion; this gives one table with ratios in the same run).
fn median_ns(mut f: impl FnMut()) -> f64 {
    const BATCH: u32 = 20_000;
    for _ in 0..BATCH {
        f();
    }
    let mut v: Vec<f64> = (0..31)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..BATCH {
                f();
            }
            t.elapsed().as_nanos() as f64 / BATCH as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn summary(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    acc: &Tensor,
    alpha: &Scalar,
    ca: &candle_core::Tensor,
    cb: &candle_core::Tensor,
) {
    let candle = median_ns(|| {
        black_box(black_box(ca).add(black_box(cb)).unwrap());
    });
    let rows: [(&str, f64, Option<f64>); 4] = [
        (
            "functions::add (dispatcher)",
            median_ns(|| {
                black_box(functions::add(black_box(a), black_box(b)).unwrap());
            }),
            Some(TORCH_ADD),
        ),
        (
            "functions::add_out (dispatcher)",
            median_ns(|| {
                functions::add_out(black_box(out), black_box(a), black_box(b)).unwrap();
            }),
            Some(TORCH_ADD_OUT),
        ),
        (
            "Tensor::add_ (dispatcher)",
            median_ns(|| {
                black_box(black_box(acc).add_(black_box(b)).unwrap());
            }),
            Some(TORCH_ADD_),
        ),
        (
            "backends::cpu::add (direct)",
            median_ns(|| {
                black_box(backends::cpu::add(black_box(a), black_box(b), alpha).unwrap());
            }),
            None,
        ),
    ];
    println!("\nsmall_ops summary: 1-element f32, median ns per call");
    println!(
        "{:<40} {:>9} {:>9} {:>9}",
        "variant", "ns", "/candle", "/torch"
    );
    for (name, ns, torch) in rows {
        let vs_torch = torch.map_or("-".to_string(), |t| format!("{:.2}", ns / t));
        println!("{name:<40} {ns:>9.1} {:>9.2} {vs_torch:>9}", ns / candle);
    }
    println!("{:<40} {candle:>9.1} {:>9.2} {:>9}", "candle add", 1.0, "-");
}

criterion_group!(benches, bench);
criterion_main!(benches);
