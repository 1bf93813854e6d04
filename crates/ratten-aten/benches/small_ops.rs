//! Small-operator latency: a 1-element f32 add through every layer, with candle-core's add on
//! 1-element tensors as the peer, in one run (issue 6, item 6: functional add through the
//! whole dispatcher under 200 ns).
//!
//! Run: `cargo bench -p ratten-aten --bench small_ops`. After the criterion output, a table of
//! medians (ns) and ratios to candle (timed in interleaved rounds: the median of each round's
//! ratio) and to PyTorch's C++ figures on this kind of machine (at::add 770 ns, at::add_out
//! 600 ns, add_ 470 ns) is printed.

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

/// Per variant: the median ns per call and the median of its per-round ratios to variant 0
/// (candle), over 31 rounds; each round times every variant for 5000 calls, one after the
/// other, so a noisy moment on a shared machine hits the variants of a round alike
/// (criterion's own estimates, one variant at a time, are in target/criterion).
fn interleaved(fs: &mut [&mut dyn FnMut()]) -> Vec<(f64, f64)> {
    const BATCH: u32 = 5_000;
    const ROUNDS: usize = 31;
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..BATCH {
            f();
        }
        t.elapsed().as_nanos() as f64 / BATCH as f64
    };
    for f in fs.iter_mut() {
        time(*f);
    }
    let mut ns = vec![Vec::with_capacity(ROUNDS); fs.len()];
    for _ in 0..ROUNDS {
        for (k, f) in fs.iter_mut().enumerate() {
            ns[k].push(time(*f));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = ns[0].clone();
    ns.into_iter()
        .map(|v| {
            let ratios = v.iter().zip(&base).map(|(x, b)| x / b).collect();
            (median(v), median(ratios))
        })
        .collect()
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
    let results = interleaved(&mut [
        &mut || {
            black_box(black_box(ca).add(black_box(cb)).unwrap());
        },
        &mut || {
            black_box(functions::add(black_box(a), black_box(b)).unwrap());
        },
        &mut || {
            functions::add_out(black_box(out), black_box(a), black_box(b)).unwrap();
        },
        &mut || {
            black_box(black_box(acc).add_(black_box(b)).unwrap());
        },
        &mut || {
            black_box(backends::cpu::add(black_box(a), black_box(b), alpha).unwrap());
        },
    ]);
    let rows: [(&str, Option<f64>); 5] = [
        ("candle add", None),
        ("functions::add (dispatcher)", Some(TORCH_ADD)),
        ("functions::add_out (dispatcher)", Some(TORCH_ADD_OUT)),
        ("Tensor::add_ (dispatcher)", Some(TORCH_ADD_)),
        ("backends::cpu::add (direct)", None),
    ];
    println!(
        "\nsmall_ops summary: 1-element f32, interleaved rounds; median ns per call and median \
         of the per-round ratios to candle"
    );
    println!(
        "{:<40} {:>9} {:>9} {:>9}",
        "variant", "ns", "/candle", "/torch"
    );
    for ((name, torch), (ns, vs_candle)) in rows.iter().zip(results) {
        let vs_torch = torch.map_or("-".to_string(), |t| format!("{:.2}", ns / t));
        println!("{name:<40} {ns:>9.1} {vs_candle:>9.2} {vs_torch:>9}");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
