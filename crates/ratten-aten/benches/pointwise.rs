//! Pointwise operators through the public API (`ratten_aten::functions`, what users call)
//! against the peers (candle-core, ndarray), with the machine's memory bandwidth measured in
//! the same run as the ceiling (a 64 MB memcpy).
//!
//! Run: `cargo bench -p ratten-aten --bench pointwise`; `crates/ratten-aten/benches/summary.py`
//! (or reading `target/criterion/*/new/estimates.json`) gives the medians. Every ratten case is
//! run with 1 and 2 intra-op threads.
//!
//! `RATTEN_POINTWISE_INTERLEAVED=<rounds>` runs instead the cases the bandwidth aims are about
//! (memcpy, f32 out= and functional, int32 + float32 into out=, 4096x4096 with a transposed
//! operand and the 4096x1 + 1x4096 broadcast, ndarray and candle beside them)
//! round-robin, one call of each per round, and prints per-case medians and ratios: every case
//! sees the same moments of a shared machine's load, which criterion's case-after-case runs do
//! not.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use half::{bf16, f16};
use ratten_aten::functions as F;
use ratten_aten::tensor_iterator::set_num_threads;
use ratten_aten::Tensor;
use ratten_core::ScalarType;

const N: usize = 16 * 1024 * 1024;
const SIDE: usize = 4096;

fn f32_tensor(shape: &[i64], n: usize) -> Tensor {
    let v: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    Tensor::from_slice(&v, shape).unwrap()
}

fn bench(c: &mut Criterion) {
    if let Some(rounds) = std::env::var("RATTEN_POINTWISE_INTERLEAVED")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        interleaved(rounds.max(3));
        return;
    }
    let mut g = c.benchmark_group("pointwise");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    // The ceiling: copying 64 MB reads 64 MB and writes 64 MB (add moves 1.5x that).
    let src = vec![1.0f32; N];
    let mut dst = vec![0.0f32; N];
    g.bench_function("ceiling/memcpy_64MB", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
    drop((src, dst));

    let a = f32_tensor(&[N as i64], N);
    let bt = f32_tensor(&[N as i64], N);
    let out = Tensor::empty(&[N as i64], ScalarType::Float).unwrap();
    let a2 = f32_tensor(&[SIDE as i64, SIDE as i64], N);
    let b2 = f32_tensor(&[SIDE as i64, SIDE as i64], N);
    let b2t = b2.t().unwrap();
    let out2 = Tensor::empty(&[SIDE as i64, SIDE as i64], ScalarType::Float).unwrap();
    let ai = a.to_dtype(ScalarType::Int).unwrap();
    let ah = a.to_dtype(ScalarType::Half).unwrap();
    let outh = Tensor::empty(&[N as i64], ScalarType::Half).unwrap();
    let ab = a.to_dtype(ScalarType::BFloat16).unwrap();
    let outb = Tensor::empty(&[N as i64], ScalarType::BFloat16).unwrap();
    let col = f32_tensor(&[SIDE as i64, 1], SIDE);
    let row = f32_tensor(&[1, SIDE as i64], SIDE);
    let s1 = f32_tensor(&[1], 1);

    for threads in [1i64, 2] {
        set_num_threads(threads).unwrap();
        let id = |name: &str| BenchmarkId::new(format!("ratten/{name}"), threads);
        g.bench_function(id("add_out_f32_16M"), |b| {
            b.iter(|| F::add_out(&out, &a, &bt).unwrap())
        });
        g.bench_function(id("add_f32_16M_functional"), |b| {
            b.iter(|| black_box(F::add(&a, &bt).unwrap()))
        });
        g.bench_function(id("add_out_4096sq_transposed"), |b| {
            b.iter(|| F::add_out(&out2, &a2, &b2t).unwrap())
        });
        g.bench_function(id("add_out_i32_f32_16M"), |b| {
            b.iter(|| F::add_out(&out, &ai, &bt).unwrap())
        });
        g.bench_function(id("add_out_f16_16M"), |b| {
            b.iter(|| F::add_out(&outh, &ah, &ah).unwrap())
        });
        g.bench_function(id("add_out_bf16_16M"), |b| {
            b.iter(|| F::add_out(&outb, &ab, &ab).unwrap())
        });
        g.bench_function(id("add_out_bcast_4096x1_1x4096"), |b| {
            b.iter(|| F::add_out(&out2, &col, &row).unwrap())
        });
        g.bench_function(id("add_1elem_functional"), |b| {
            b.iter(|| black_box(F::add(&s1, &s1).unwrap()))
        });
    }
    set_num_threads(1).unwrap();

    // ndarray (single-threaded: Zip without its rayon feature).
    {
        use ndarray::{Array1, Array2, Zip};
        let x: Array1<f32> = Array1::from_iter((0..N).map(|i| (i % 1000) as f32 * 0.5));
        let y = x.clone();
        let mut o = Array1::<f32>::zeros(N);
        g.bench_function("ndarray/add_out_f32_16M", |b| {
            b.iter(|| {
                Zip::from(&mut o)
                    .and(&x)
                    .and(&y)
                    .for_each(|o, &p, &q| *o = p + q)
            })
        });
        g.bench_function("ndarray/add_f32_16M_functional", |b| {
            b.iter(|| black_box(&x + &y))
        });
        let xi: Array1<i32> = x.mapv(|v| v as i32);
        g.bench_function("ndarray/add_out_i32_f32_16M", |b| {
            b.iter(|| {
                Zip::from(&mut o)
                    .and(&xi)
                    .and(&y)
                    .for_each(|o, &p, &q| *o = p as f32 + q)
            })
        });
        let xh: Array1<f16> = x.mapv(f16::from_f32);
        let mut oh = Array1::<f16>::from_elem(N, f16::ZERO);
        g.bench_function("ndarray/add_out_f16_16M", |b| {
            b.iter(|| {
                Zip::from(&mut oh)
                    .and(&xh)
                    .and(&xh)
                    .for_each(|o, &p, &q| *o = p + q)
            })
        });
        let xb: Array1<bf16> = x.mapv(bf16::from_f32);
        let mut ob = Array1::<bf16>::from_elem(N, bf16::ZERO);
        g.bench_function("ndarray/add_out_bf16_16M", |b| {
            b.iter(|| {
                Zip::from(&mut ob)
                    .and(&xb)
                    .and(&xb)
                    .for_each(|o, &p, &q| *o = p + q)
            })
        });
        let m: Array2<f32> = x.clone().into_shape_with_order((SIDE, SIDE)).unwrap();
        let n2 = m.clone();
        let mut o2 = Array2::<f32>::zeros((SIDE, SIDE));
        g.bench_function("ndarray/add_out_4096sq_transposed", |b| {
            b.iter(|| {
                Zip::from(&mut o2)
                    .and(&m)
                    .and(n2.t())
                    .for_each(|o, &p, &q| *o = p + q)
            })
        });
        let c = Array2::<f32>::ones((SIDE, 1));
        let r = Array2::<f32>::ones((1, SIDE));
        g.bench_function("ndarray/add_out_bcast_4096x1_1x4096", |b| {
            b.iter(|| {
                Zip::from(&mut o2)
                    .and_broadcast(&c)
                    .and_broadcast(&r)
                    .for_each(|o, &p, &q| *o = p + q)
            })
        });
        let e = Array1::<f32>::ones(1);
        g.bench_function("ndarray/add_1elem_functional", |b| {
            b.iter(|| black_box(&e + &e))
        });
    }

    // candle (functional only: candle has no out=; int32 is not a candle dtype, so
    // int32 + float32 is timed as u32 -> f32 conversion plus add).
    {
        use candle_core::{DType, Device, Tensor as CTensor};
        let dev = Device::Cpu;
        let v: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 0.5).collect();
        let x = CTensor::from_vec(v.clone(), N, &dev).unwrap();
        let y = x.clone();
        g.bench_function("candle/add_f32_16M_functional", |b| {
            b.iter(|| black_box(x.add(&y).unwrap()))
        });
        let xu = x.to_dtype(DType::U32).unwrap();
        g.bench_function("candle/add_u32_f32_16M_functional", |b| {
            b.iter(|| black_box(xu.to_dtype(DType::F32).unwrap().add(&y).unwrap()))
        });
        let xh = x.to_dtype(DType::F16).unwrap();
        g.bench_function("candle/add_f16_16M_functional", |b| {
            b.iter(|| black_box(xh.add(&xh).unwrap()))
        });
        let xb = x.to_dtype(DType::BF16).unwrap();
        g.bench_function("candle/add_bf16_16M_functional", |b| {
            b.iter(|| black_box(xb.add(&xb).unwrap()))
        });
        let m = CTensor::from_vec(v, (SIDE, SIDE), &dev).unwrap();
        let mt = m.t().unwrap();
        g.bench_function("candle/add_4096sq_transposed_functional", |b| {
            b.iter(|| black_box(m.add(&mt).unwrap()))
        });
        let c = CTensor::ones((SIDE, 1), DType::F32, &dev).unwrap();
        let r = CTensor::ones((1, SIDE), DType::F32, &dev).unwrap();
        g.bench_function("candle/add_bcast_4096x1_1x4096_functional", |b| {
            b.iter(|| black_box(c.broadcast_add(&r).unwrap()))
        });
        let e = CTensor::ones(1, DType::F32, &dev).unwrap();
        g.bench_function("candle/add_1elem_functional", |b| {
            b.iter(|| black_box(e.add(&e).unwrap()))
        });
    }
    g.finish();
}

/// The interleaved table (see the module docs).
fn interleaved(rounds: usize) {
    use ndarray::{Array1, Zip};
    use std::time::Instant;
    let src = vec![1.0f32; N];
    let mut dst = vec![0.0f32; N];
    let a = f32_tensor(&[N as i64], N);
    let bt = f32_tensor(&[N as i64], N);
    let out = Tensor::empty(&[N as i64], ScalarType::Float).unwrap();
    let ai = a.to_dtype(ScalarType::Int).unwrap();
    let x: Array1<f32> = Array1::from_iter((0..N).map(|i| (i % 1000) as f32 * 0.5));
    let y = x.clone();
    let xi: Array1<i32> = x.mapv(|v| v as i32);
    let mut o = Array1::<f32>::zeros(N);
    let cx = candle_core::Tensor::from_vec(x.to_vec(), N, &candle_core::Device::Cpu).unwrap();
    let side = SIDE as i64;
    let a2 = f32_tensor(&[side, side], N);
    let b2t = f32_tensor(&[side, side], N).t().unwrap();
    let out2 = Tensor::empty(&[side, side], ScalarType::Float).unwrap();
    let (col, row) = (f32_tensor(&[side, 1], SIDE), f32_tensor(&[1, side], SIDE));
    // The 2-D peers: ndarray (into out, single-threaded) and candle (functional).
    let m2 = x.clone().into_shape_with_order((SIDE, SIDE)).unwrap();
    let n2 = m2.clone();
    // Shared by the two ndarray out= cases.
    let o2 = std::cell::RefCell::new(ndarray::Array2::<f32>::zeros((SIDE, SIDE)));
    let (nc, nr) = (
        ndarray::Array2::<f32>::ones((SIDE, 1)),
        ndarray::Array2::<f32>::ones((1, SIDE)),
    );
    let cm = cx.reshape((SIDE, SIDE)).unwrap();
    let cmt = cm.t().unwrap();
    let cc = candle_core::Tensor::ones((SIDE, 1), candle_core::DType::F32, cx.device()).unwrap();
    let cr = candle_core::Tensor::ones((1, SIDE), candle_core::DType::F32, cx.device()).unwrap();

    type Case<'a> = (&'static str, i64, Box<dyn FnMut() + 'a>);
    let mut cases: Vec<Case> = Vec::new();
    cases.push((
        "memcpy 64 MB",
        1,
        Box::new(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        }),
    ));
    for threads in [1i64, 2] {
        let (a, bt, out, ai) = (&a, &bt, &out, &ai);
        cases.push((
            "ratten f32 out=",
            threads,
            Box::new(move || {
                F::add_out(out, a, bt).unwrap();
            }),
        ));
        cases.push((
            "ratten f32 functional",
            threads,
            Box::new(move || drop(black_box(F::add(a, bt).unwrap()))),
        ));
        cases.push((
            "ratten i32+f32 out=",
            threads,
            Box::new(move || {
                F::add_out(out, ai, bt).unwrap();
            }),
        ));
        let (a2, b2t, out2, col, row) = (&a2, &b2t, &out2, &col, &row);
        cases.push((
            "ratten transposed out=",
            threads,
            Box::new(move || {
                F::add_out(out2, a2, b2t).unwrap();
            }),
        ));
        cases.push((
            "ratten transposed func",
            threads,
            Box::new(move || drop(black_box(F::add(a2, b2t).unwrap()))),
        ));
        cases.push((
            "ratten bcast out=",
            threads,
            Box::new(move || {
                F::add_out(out2, col, row).unwrap();
            }),
        ));
        cases.push((
            "ratten bcast func",
            threads,
            Box::new(move || drop(black_box(F::add(col, row).unwrap()))),
        ));
    }
    cases.push((
        "ndarray f32 out=",
        1,
        Box::new(|| {
            Zip::from(&mut o)
                .and(&x)
                .and(&y)
                .for_each(|o, &p, &q| *o = p + q)
        }),
    ));
    cases.push((
        "ndarray f32 functional",
        1,
        Box::new(|| drop(black_box(&x + &y))),
    ));
    cases.push((
        "candle f32 functional",
        1,
        Box::new(|| drop(black_box(cx.add(&cx).unwrap()))),
    ));
    let mut xi_out = Array1::<f32>::zeros(N);
    let y_ref = &y;
    cases.push((
        "ndarray i32+f32 out=",
        1,
        Box::new(move || {
            Zip::from(&mut xi_out)
                .and(&xi)
                .and(y_ref)
                .for_each(|o, &p, &q| *o = p as f32 + q)
        }),
    ));

    {
        let (m2, n2, nc, nr, o2) = (&m2, &n2, &nc, &nr, &o2);
        cases.push((
            "ndarray transposed out=",
            1,
            Box::new(move || {
                Zip::from(&mut *o2.borrow_mut())
                    .and(m2)
                    .and(n2.t())
                    .for_each(|o, &p, &q| *o = p + q)
            }),
        ));
        cases.push((
            "ndarray bcast out=",
            1,
            Box::new(move || {
                Zip::from(&mut *o2.borrow_mut())
                    .and_broadcast(nc)
                    .and_broadcast(nr)
                    .for_each(|o, &p, &q| *o = p + q)
            }),
        ));
    }
    cases.push((
        "candle transposed func",
        1,
        Box::new(|| drop(black_box(cm.add(&cmt).unwrap()))),
    ));
    cases.push((
        "candle bcast func",
        1,
        Box::new(|| drop(black_box(cc.broadcast_add(&cr).unwrap()))),
    ));

    let mut times = vec![Vec::with_capacity(rounds); cases.len()];
    for round in 0..rounds + 1 {
        for (k, (_, threads, f)) in cases.iter_mut().enumerate() {
            set_num_threads(*threads).unwrap();
            let t = Instant::now();
            f();
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if round > 0 {
                // Round 0 warms caches, page tables and the allocator's block cache.
                times[k].push(ms);
            }
        }
    }
    set_num_threads(1).unwrap();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|p, q| p.total_cmp(q));
        v[v.len() / 2]
    };
    let medians: Vec<f64> = times.iter_mut().map(median).collect();
    let find = |name: &str, th: i64| {
        cases
            .iter()
            .position(|(n, t, _)| *n == name && *t == th)
            .map(|k| medians[k])
    };
    let memcpy = medians[0];
    println!("interleaved medians over {rounds} rounds (one call of each case per round)");
    println!(
        "{:<26} {:>7} {:>10} {:>10}",
        "case", "threads", "ms", "/ memcpy"
    );
    for (k, (name, threads, _)) in cases.iter().enumerate() {
        println!(
            "{:<26} {:>7} {:>10.2} {:>10.2}",
            name,
            threads,
            medians[k],
            medians[k] / memcpy
        );
    }
    for (mine, peer) in [
        ("ratten transposed out=", "ndarray transposed out="),
        ("ratten transposed func", "candle transposed func"),
        ("ratten bcast out=", "ndarray bcast out="),
        ("ratten bcast func", "candle bcast func"),
        ("ratten i32+f32 out=", "ndarray i32+f32 out="),
        ("ratten f32 out=", "ndarray f32 out="),
        ("ratten f32 functional", "candle f32 functional"),
    ] {
        for th in [1, 2] {
            if let (Some(m), Some(p)) = (find(mine, th), find(peer, 1)) {
                println!("{mine} ({th} thread(s)) / {peer} = {:.2}", m / p);
            }
        }
    }
    for th in [1, 2] {
        if let (Some(f), Some(o)) = (
            find("ratten f32 functional", th),
            find("ratten f32 out=", th),
        ) {
            println!("{th} thread(s): ratten functional / out= = {:.2}", f / o);
        }
        if let (Some(i), Some(o)) = (find("ratten i32+f32 out=", th), find("ratten f32 out=", th)) {
            println!(
                "{th} thread(s): ratten i32+f32 out= / f32 out= = {:.2}",
                i / o
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
