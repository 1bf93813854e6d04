//! Allocating 64 MB: ratten's `Tensor::zeros` and `Tensor::empty` + a first write, against a
//! plain `Vec<f32>` (`vec![0.0; n]`, and `Vec::with_capacity` + write), in one run.
//!
//! "First write" fills every element, so every page is touched: the cost users pay before
//! they can read their data. The `uncached` variants disable ratten's block cache to show
//! the huge-page path alone.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ratten_aten::Tensor;
use ratten_core::allocator::{set_cpu_cache_limit, DEFAULT_CACHE_LIMIT};
use ratten_core::{ScalarType, TensorAccess};

const N: usize = 16 << 20; // 16 Mi f32 = 64 MiB

fn write_all(t: &Tensor) {
    let mut g = TensorAccess::write(t).expect("fresh tensor");
    g.output_slice_mut::<f32>(0).expect("f32").fill(1.0);
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("alloc_64MB");
    g.sample_size(30);
    g.measurement_time(Duration::from_secs(6));
    g.warm_up_time(Duration::from_secs(1));
    let sizes = [N as i64];

    set_cpu_cache_limit(DEFAULT_CACHE_LIMIT);
    g.bench_function("ratten_zeros", |b| {
        b.iter(|| black_box(Tensor::zeros(&sizes, ScalarType::Float).unwrap()))
    });
    g.bench_function("ratten_zeros_then_write", |b| {
        b.iter(|| {
            let t = Tensor::zeros(&sizes, ScalarType::Float).unwrap();
            write_all(&t);
            black_box(t)
        })
    });
    g.bench_function("ratten_empty_then_write", |b| {
        b.iter(|| {
            let t = Tensor::empty(&sizes, ScalarType::Float).unwrap();
            write_all(&t);
            black_box(t)
        })
    });

    set_cpu_cache_limit(0);
    g.bench_function("ratten_zeros_uncached", |b| {
        b.iter(|| black_box(Tensor::zeros(&sizes, ScalarType::Float).unwrap()))
    });
    g.bench_function("ratten_empty_then_write_uncached", |b| {
        b.iter(|| {
            let t = Tensor::empty(&sizes, ScalarType::Float).unwrap();
            write_all(&t);
            black_box(t)
        })
    });
    set_cpu_cache_limit(DEFAULT_CACHE_LIMIT);

    g.bench_function("vec_zeroed", |b| b.iter(|| black_box(vec![0.0f32; N])));
    g.bench_function("vec_zeroed_then_write", |b| {
        b.iter(|| {
            let mut v = vec![0.0f32; N];
            v.fill(1.0);
            black_box(v)
        })
    });
    g.bench_function("vec_with_capacity_then_write", |b| {
        b.iter(|| {
            let mut v: Vec<f32> = Vec::with_capacity(N);
            v.resize(N, 1.0);
            black_box(v)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
