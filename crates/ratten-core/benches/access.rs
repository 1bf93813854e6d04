//! The fixed costs every kernel call pays: the storage access guard (acquire + release for a
//! kernel's tensors) and making (and dropping) an output tensor.

// SAFETY (every `RawAccess::acquire` call below): each snapshot is `meta_arc()` of a Float CPU
// tensor, passed with Float and CPU.
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use ratten_core::{Device, RawAccess, ScalarType, TensorAccess, TensorBase};

fn bench(c: &mut Criterion) {
    let t = |n| TensorBase::empty(&[n], ScalarType::Float, Device::CPU).unwrap();
    let (a, b, out) = (t(1024), t(1024), t(1024));
    let view = a.as_strided(&[512], &[2], Some(0)).unwrap();
    let mut g = c.benchmark_group("access_guard");
    g.bench_function("tensor_access_2_reads_1_write", |bch| {
        bch.iter(|| black_box(TensorAccess::new(&[&a, &b], &[&out]).unwrap()))
    });
    let (ma, mb, mo) = (a.meta_arc(), b.meta_arc(), out.meta_arc());
    let (f, cpu) = (ScalarType::Float, Device::CPU);
    g.bench_function("raw_access_2_reads_1_write", |bch| {
        bch.iter(|| {
            let mut ptrs = [std::ptr::null_mut(); 3];
            let g = unsafe {
                RawAccess::acquire(&[(&mo, f, cpu), (&ma, f, cpu), (&mb, f, cpu)], 1, &mut ptrs)
            }
            .unwrap();
            black_box((g, ptrs))
        })
    });
    g.bench_function("raw_access_1_read", |bch| {
        bch.iter(|| {
            let mut ptrs = [std::ptr::null_mut(); 1];
            let g = unsafe { RawAccess::acquire(&[(&ma, f, cpu)], 0, &mut ptrs) }.unwrap();
            black_box((g, ptrs))
        })
    });
    g.bench_function("tensor_access_in_place_3_tensors_2_storages", |bch| {
        // a += view-of-a * b: three tensors, two distinct storages after deduplication.
        bch.iter(|| black_box(TensorAccess::new(&[&view, &b], &[&a]).unwrap()))
    });
    g.bench_function("tensor_access_1_read", |bch| {
        bch.iter(|| black_box(TensorAccess::read(&a).unwrap()))
    });
    // Baseline: what a kernel does anyway (read metadata snapshots of three tensors).
    g.bench_function("baseline_3_meta_snapshots", |bch| {
        bch.iter(|| black_box((a.meta_arc(), b.meta_arc(), out.meta_arc())))
    });
    g.finish();
    let mut g = c.benchmark_group("new_tensor");
    g.bench_function("empty_1_float_and_drop", |bch| {
        bch.iter(|| black_box(TensorBase::empty(black_box(&[1]), f, cpu).unwrap()))
    });
    g.bench_function("empty_1000_float_and_drop", |bch| {
        bch.iter(|| black_box(TensorBase::empty(black_box(&[1000]), f, cpu).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
