//! Small-operator latency: a 1-element f32 add through every layer, with candle-core's add on
//! 1-element tensors as the peer, in one run (issue 6, item 6: functional add through the
//! whole dispatcher under 200 ns).
//!
//! Run: `cargo bench -p ratten-aten --bench small_ops`. After the criterion output, a table of
//! medians (ns) and ratios to candle (timed in interleaved rounds: the median of each round's
//! ratio) and to PyTorch's C++ figures on this kind of machine (at::add 770 ns, at::add_out
//! 600 ns, add_ 470 ns) is printed, then the same for every pointwise operator both libraries
//! have (1-element f32, functional: ratten through the dispatcher against candle's method).
//! `cargo bench -p ratten-aten --bench small_ops -- summary` prints only the tables.

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
    if std::env::args().any(|a| a == "summary") {
        let (a, b, out, acc) = (one(1.5), one(2.25), one(0.0), one(0.0));
        let alpha = Scalar::Int(1);
        let ca = candle_core::Tensor::new(&[1.5f32], &candle_core::Device::Cpu).unwrap();
        let cb = candle_core::Tensor::new(&[2.25f32], &candle_core::Device::Cpu).unwrap();
        summary(&a, &b, &out, &acc, &alpha, &ca, &cb);
        ops_summary(&a, &b, &ca, &cb);
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
    ops_summary(&a, &b, &ca, &cb);
}

/// `RATTEN_SMALL_OPS_PROFILE=<variant>`: runs one variant for 3 s and nothing else, for
/// `perf record` (variants: add, add_out, add_, cpu, candle, and the functional abs, relu,
/// exp, neg, sub, eq, candle_exp, and sin_64k: sin of 64K f32); under `perf stat -e instructions:u`
/// the instruction count per call is a load-independent measure on a shared machine.
fn profile(which: &str) {
    let (a, b, out) = (one(1.5), one(2.25), one(0.0));
    let alpha = Scalar::Int(1);
    let ca = candle_core::Tensor::new(&[1.5f32], &candle_core::Device::Cpu).unwrap();
    let cb = candle_core::Tensor::new(&[2.25f32], &candle_core::Device::Cpu).unwrap();
    // RATTEN_SMALL_OPS_CALLS=n: exactly n calls (for instruction counts under callgrind:
    // the difference of two counts over the difference of calls).
    let big = Tensor::from_slice(
        &(0..65536)
            .map(|i| (i % 97) as f32 * 0.25)
            .collect::<Vec<_>>(),
        &[65536],
    )
    .unwrap();
    let calls: Option<u64> = std::env::var("RATTEN_SMALL_OPS_CALLS")
        .ok()
        .and_then(|v| v.parse().ok());
    // The variant is chosen once: a `match` on the name per call would add string compares
    // (more for the later arms) to what is measured.
    let mut f: Box<dyn FnMut()> = match which {
        "add" => Box::new(|| drop(black_box(functions::add(&a, &b).unwrap()))),
        "add_out" => Box::new(|| {
            black_box(functions::add_out(&out, &a, &b).unwrap());
        }),
        "add_" => Box::new(|| {
            black_box(out.add_(&b).unwrap());
        }),
        "candle" => Box::new(|| drop(black_box(ca.add(&cb).unwrap()))),
        "abs" => Box::new(|| drop(black_box(functions::abs(&a).unwrap()))),
        "relu" => Box::new(|| drop(black_box(functions::relu(&a).unwrap()))),
        "exp" => Box::new(|| drop(black_box(functions::exp(&a).unwrap()))),
        "neg" => Box::new(|| drop(black_box(functions::neg(&a).unwrap()))),
        "sub" => Box::new(|| drop(black_box(functions::sub(&a, &b).unwrap()))),
        "eq" => Box::new(|| drop(black_box(functions::eq(&a, &b).unwrap()))),
        "candle_exp" => Box::new(|| drop(black_box(ca.exp().unwrap()))),
        "sin_64k" => Box::new(|| drop(black_box(functions::sin(&big).unwrap()))),
        _ => Box::new(|| drop(black_box(backends::cpu::add(&a, &b, &alpha).unwrap()))),
    };
    let t = Instant::now();
    let mut n = 0u64;
    while calls.map_or(t.elapsed() < Duration::from_secs(3), |c| n < c) {
        for _ in 0..1000 {
            f();
        }
        n += 1000;
    }
    println!(
        "{which}: {n} calls, {:.1} ns per call",
        t.elapsed().as_nanos() as f64 / n as f64
    );
}

/// Per variant: the median ns per call and the median of its per-round ratios to variant 0
/// (candle), over 31 rounds; each round times every variant for 5000 calls (fewer, down to
/// about a millisecond's worth, for slow calls), one after the other, so a noisy moment on a
/// shared machine hits the variants of a round alike (criterion's own estimates, one variant
/// at a time, are in target/criterion).
fn interleaved(fs: &mut [&mut dyn FnMut()]) -> Vec<(f64, f64)> {
    const ROUNDS: usize = 31;
    // Up to 5000 calls a batch, fewer for slow calls (a batch of about a millisecond).
    let mut batch: u32 = 5_000;
    let time = |f: &mut dyn FnMut(), batch: u32| {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        t.elapsed().as_nanos() as f64 / batch as f64
    };
    for f in fs.iter_mut() {
        let ns = time(*f, 20);
        batch = batch.min((1e6 / ns.max(1.0)) as u32).max(20);
    }
    let time = |f: &mut dyn FnMut()| time(f, batch);
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

/// Every pointwise operator ratten and candle both have, one pair at a time: 1-element f32,
/// functional (ratten's `functions::*` through the dispatcher, candle's method), each pair
/// timed in interleaved rounds; the median of the per-round ratios ratten / candle.
fn ops_summary(a: &Tensor, b: &Tensor, ca: &candle_core::Tensor, cb: &candle_core::Tensor) {
    type Pair<'x> = (&'static str, Box<dyn FnMut() + 'x>, Box<dyn FnMut() + 'x>);
    macro_rules! binary {
        ($name:literal, $r:expr, $c:expr) => {
            (
                $name,
                Box::new(|| drop(black_box($r(black_box(a), black_box(b)).unwrap())))
                    as Box<dyn FnMut()>,
                Box::new(|| drop(black_box($c(black_box(ca), black_box(cb)).unwrap())))
                    as Box<dyn FnMut()>,
            )
        };
    }
    macro_rules! unary {
        ($name:literal, $r:expr, $c:expr) => {
            (
                $name,
                Box::new(|| drop(black_box($r(black_box(a)).unwrap()))) as Box<dyn FnMut()>,
                Box::new(|| drop(black_box($c(black_box(ca)).unwrap()))) as Box<dyn FnMut()>,
            )
        };
    }
    use candle_core::Tensor as C;
    let pairs: Vec<Pair<'_>> = vec![
        binary!("add", functions::add, C::add),
        binary!("sub", functions::sub, C::sub),
        binary!("mul", functions::mul, C::mul),
        binary!("div", functions::div, C::div),
        binary!("maximum", functions::maximum, C::maximum),
        binary!("minimum", functions::minimum, C::minimum),
        binary!("eq", functions::eq, C::eq),
        binary!("lt", functions::lt, C::lt),
        unary!("neg", functions::neg, C::neg),
        unary!("abs", functions::abs, C::abs),
        unary!("exp", functions::exp, C::exp),
        unary!("log", functions::log, C::log),
        unary!("sqrt", functions::sqrt, C::sqrt),
        unary!("sin", functions::sin, C::sin),
        unary!("cos", functions::cos, C::cos),
        unary!("tanh", functions::tanh, C::tanh),
        unary!("relu", functions::relu, C::relu),
    ];
    // Beyond one element: where fixed costs stop dominating (1K, 64K f32).
    let sized = |n: usize| {
        let v: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25 + 0.5).collect();
        let r = Tensor::from_slice(&v, &[n as i64]).unwrap();
        let c = candle_core::Tensor::from_vec(v, n, &candle_core::Device::Cpu).unwrap();
        (r, c)
    };
    let ((a1k, ca1k), (b1k, cb1k)) = (sized(1024), sized(1024));
    let ((a64k, ca64k), (b64k, cb64k)) = (sized(65536), sized(65536));
    let mut pairs = pairs;
    for (name, (x, y, cx, cy)) in [
        ("add 1K", (&a1k, &b1k, &ca1k, &cb1k)),
        ("add 64K", (&a64k, &b64k, &ca64k, &cb64k)),
    ] {
        pairs.push((
            name,
            Box::new(move || {
                drop(black_box(
                    functions::add(black_box(x), black_box(y)).unwrap(),
                ))
            }),
            Box::new(move || drop(black_box(black_box(cx).add(black_box(cy)).unwrap()))),
        ));
    }
    type RattenUnary = fn(&Tensor) -> ratten_core::Result<Tensor>;
    type CandleUnary = fn(&C) -> candle_core::Result<C>;
    let unaries: [(&str, RattenUnary, CandleUnary, &Tensor, &C); 6] = [
        ("exp 1K", functions::exp, C::exp, &a1k, &ca1k),
        ("exp 64K", functions::exp, C::exp, &a64k, &ca64k),
        ("log 64K", functions::log, C::log, &a64k, &ca64k),
        ("tanh 64K", functions::tanh, C::tanh, &a64k, &ca64k),
        ("sin 64K", functions::sin, C::sin, &a64k, &ca64k),
        ("cos 64K", functions::cos, C::cos, &a64k, &ca64k),
    ];
    for (name, r, c, x, cx) in unaries {
        pairs.push((
            name,
            Box::new(move || drop(black_box(r(black_box(x)).unwrap()))),
            Box::new(move || drop(black_box(c(black_box(cx)).unwrap()))),
        ));
    }
    println!(
        "\nsmall_ops per operator: f32, functional (1 element unless named); median ns per call \
         and median of the per-round ratios ratten / candle"
    );
    println!(
        "{:<10} {:>10} {:>10} {:>9}",
        "op", "ratten ns", "candle ns", "/candle"
    );
    for (name, mut r, mut c) in pairs {
        let res = interleaved(&mut [&mut *c, &mut *r]);
        println!(
            "{name:<10} {:>10.1} {:>10.1} {:>9.2}",
            res[1].0, res[0].0, res[1].1
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
