//! The safety guarantees of storage access: aligned allocations, views that cannot reach
//! outside their storage, no torn reads under concurrent overlapping writes, and nested
//! acquisitions refused instead of deadlocking.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use ratten_core::allocator::{set_allocator, Allocator, DataPtr, ALIGNMENT};
use ratten_core::{
    Device, DeviceType, RawAccess, Result, ScalarType, Storage, TensorAccess, TensorBase,
};

fn cpu(sizes: &[i64], dtype: ScalarType) -> TensorBase {
    TensorBase::empty(sizes, dtype, Device::CPU).unwrap()
}

#[test]
fn allocations_are_aligned_to_64_bytes() {
    for dtype in ScalarType::ALL {
        for n in [1i64, 3, 17, 1000, 100_000, 1 << 20, 3 << 20] {
            let t = cpu(&[n], dtype);
            let g = TensorAccess::read(&t).unwrap();
            let p = g.input(0).unwrap().raw_data_ptr().unwrap();
            assert_eq!(p.as_ptr() as usize % ALIGNMENT, 0, "{dtype} x {n}");
        }
    }
    // Zero-byte storages give a non-null, aligned pointer too.
    let t = cpu(&[0], ScalarType::ComplexDouble);
    let g = TensorAccess::read(&t).unwrap();
    assert_eq!(
        g.input(0).unwrap().raw_data_ptr().unwrap().as_ptr() as usize % ALIGNMENT,
        0
    );
}

#[test]
fn views_outside_their_storage_are_refused() {
    let t = cpu(&[4, 5], ScalarType::Float); // 80 bytes
    let refuse = |sizes: &[i64], strides: &[i64], offset| {
        t.as_strided(sizes, strides, Some(offset))
            .unwrap_err()
            .message()
            .to_string()
    };
    assert_eq!(
        refuse(&[4, 5], &[5, 1], 1),
        "setStorage: sizes [4, 5], strides [5, 1], storage offset 1, and itemsize 4 requiring \
         a storage size of 84 are out of bounds for storage of size 80"
    );
    assert_eq!(
        refuse(&[2, 2], &[100, 1], 0),
        "setStorage: sizes [2, 2], strides [100, 1], storage offset 0, and itemsize 4 \
         requiring a storage size of 408 are out of bounds for storage of size 80"
    );
    assert_eq!(
        refuse(&[3], &[-1], 2),
        "as_strided: Negative strides are not supported at the moment, got strides: [-1]"
    );
    assert_eq!(refuse(&[3], &[1], -1), "Tensor: invalid storage offset -1");
    assert_eq!(
        refuse(&[3], &[1, 1], 0),
        "mismatch in length of strides and shape"
    );
    assert!(refuse(&[-3], &[1], 0).starts_with("Trying to create tensor with negative dimension"));
    // Overflowing geometry is refused, not wrapped around into bounds.
    assert!(refuse(&[i64::MAX, 2], &[i64::MAX, 1], 0).contains("overflow"));
    // In-place geometry changes and set_ are checked the same way.
    assert!(t.as_strided_(&[100], &[1], Some(0)).is_err());
    assert_eq!(t.sizes().as_slice(), &[4, 5]);
    let small = Storage::new(8, Device::CPU).unwrap();
    assert!(t.set_(&small, 0, &[4], &[1]).is_err());
    // The last element exactly is fine; views of views stay inside the base storage.
    let v = t.as_strided(&[5], &[1], Some(15)).unwrap();
    assert!(v.as_strided(&[5], &[1], Some(16)).is_err());
}

#[test]
fn views_stay_in_bounds_after_the_base_is_resized() {
    let t = TensorBase::from_slice(&[1i32, 2, 3, 4], &[4]).unwrap();
    let v = t.as_strided(&[2], &[1], Some(2)).unwrap();
    t.resize_(&[1000]).unwrap(); // reallocates: the view must follow the storage
    assert_eq!(v.to_vec::<i32>().unwrap(), vec![3, 4]);
    t.resize_(&[1]).unwrap(); // shrinking the tensor never shrinks the storage
    assert_eq!(v.to_vec::<i32>().unwrap(), vec![3, 4]);
    assert!(t.storage().nbytes() >= 4000);
}

#[test]
fn overlapping_writers_and_readers_never_tear() {
    const N: i64 = 1 << 14;
    const ROUNDS: i64 = 300;
    let base = TensorBase::zeros(&[N], ScalarType::Long, Device::CPU).unwrap();
    // Two writers on overlapping views, readers on the overlap and on the whole tensor.
    let left = base.as_strided(&[N * 3 / 4], &[1], Some(0)).unwrap();
    let right = base.as_strided(&[N * 3 / 4], &[1], Some(N / 4)).unwrap();
    let middle = base.as_strided(&[N / 2], &[1], Some(N / 4)).unwrap();
    let strided = base.as_strided(&[N / 8], &[4], Some(N / 4)).unwrap();
    let start = Arc::new(Barrier::new(5));
    let done = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for (w, view) in [left, right].into_iter().enumerate() {
        let start = start.clone();
        handles.push(thread::spawn(move || {
            start.wait();
            for round in 0..ROUNDS {
                let stamp = round * 2 + w as i64 + 1;
                let mut g = TensorAccess::write(&view).unwrap();
                // Written element by element: a reader without the lock would see halves.
                for x in g.output_slice_mut::<i64>(0).unwrap() {
                    *x = stamp;
                }
            }
        }));
    }
    let mut readers = Vec::new();
    for view in [middle, strided, base.clone()] {
        let (start, done) = (start.clone(), done.clone());
        let whole = view.numel() == N;
        readers.push(thread::spawn(move || {
            start.wait();
            let mut checks = 0u64;
            while !done.load(Ordering::Acquire) || checks < 10 {
                let v = view.to_vec::<i64>().unwrap();
                if whole {
                    // The overlap [N/4, 3N/4) is written whole by either writer.
                    let mid = &v[(N / 4) as usize..(N * 3 / 4) as usize];
                    assert!(mid.iter().all(|&x| x == mid[0]), "torn read of the overlap");
                } else {
                    assert!(v.iter().all(|&x| x == v[0]), "torn read: {:?}", &v[..4]);
                }
                checks += 1;
            }
            checks
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() >= 10);
    }
}

#[test]
fn kernels_on_shared_storages_in_any_argument_order_do_not_deadlock() {
    let a = TensorBase::zeros(&[64], ScalarType::Float, Device::CPU).unwrap();
    let b = TensorBase::zeros(&[64], ScalarType::Float, Device::CPU).unwrap();
    let mut hs = Vec::new();
    for flip in [false, true, false, true] {
        let (a, b) = (a.clone(), b.clone());
        hs.push(thread::spawn(move || {
            for _ in 0..2000 {
                // Lock order is by address, not by argument position.
                let (r, w) = if flip { (&a, &b) } else { (&b, &a) };
                let mut g = TensorAccess::new(&[r], &[w]).unwrap();
                let x = g.input_slice::<f32>(0).unwrap()[0];
                g.output_slice_mut::<f32>(0).unwrap()[0] = x + 1.0;
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn nested_conflicting_access_is_an_error() {
    let t = TensorBase::from_slice(&[1.0f64, 2.0, 3.0], &[3]).unwrap();
    let view = t.as_strided(&[2], &[1], Some(1)).unwrap();
    let g = TensorAccess::write(&t).unwrap();
    // Reading back a tensor this thread is writing would alias the writer's memory.
    let e = view.to_vec::<f64>().unwrap_err();
    assert!(
        e.message()
            .starts_with("storage access: this thread already holds"),
        "{e}"
    );
    assert!(t.item().is_err());
    // Growing the storage needs the exclusive lock: refused, not deadlocked.
    assert!(t.resize_(&[100]).is_err());
    drop(g);
    assert_eq!(view.to_vec::<f64>().unwrap(), vec![2.0, 3.0]);
    // Nested reads are fine.
    let r = TensorAccess::read(&t).unwrap();
    assert_eq!(view.to_vec::<f64>().unwrap(), vec![2.0, 3.0]);
    drop(r);
}

/// A PrivateUse1 allocator over the global allocator, to check the per-device slot and that
/// misaligned memory is refused.
struct TestAllocator {
    misalign: bool,
}

impl Allocator for TestAllocator {
    fn allocate(&self, nbytes: usize) -> Result<DataPtr> {
        let layout = std::alloc::Layout::from_size_align(nbytes.max(1) + 64, 64).unwrap();
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let shift = if self.misalign { 8 } else { 0 };
        let p = NonNull::new(p).unwrap();
        // SAFETY: zeroed block of nbytes + 64 bytes, freed by the deleter with its layout.
        Ok(unsafe {
            DataPtr::from_raw(
                NonNull::new_unchecked(p.as_ptr().add(shift)),
                nbytes,
                move |q: NonNull<u8>, _| std::alloc::dealloc(q.as_ptr().sub(shift), layout),
                true,
                Device::privateuse1(0).unwrap(),
            )
        })
    }
}

#[test]
fn privateuse1_uses_the_registered_allocator() {
    let dev = Device::privateuse1(0).unwrap();
    set_allocator(
        DeviceType::PrivateUse1,
        Arc::new(TestAllocator { misalign: true }),
    )
    .unwrap();
    let e = TensorBase::empty(&[4], ScalarType::Float, dev).unwrap_err();
    assert!(e.message().contains("not aligned to 64 bytes"), "{e}");
    set_allocator(
        DeviceType::PrivateUse1,
        Arc::new(TestAllocator { misalign: false }),
    )
    .unwrap();
    let t = TensorBase::zeros(&[4], ScalarType::Float, dev).unwrap();
    assert_eq!(t.device().to_string(), "privateuseone:0");
    let g = TensorAccess::read(&t).unwrap();
    let p = g.input(0).unwrap().data_ptr::<f32>().unwrap();
    // SAFETY: 4 zeroed floats under the read lock.
    assert_eq!(unsafe { *p.add(3) }, 0.0);
}

mod random_views {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever geometry is asked for, an accepted view (and any view of it) only
        /// addresses bytes inside its storage.
        #[test]
        fn accepted_views_stay_inside_the_storage(
            numel in 0i64..64,
            sizes in proptest::collection::vec(0i64..6, 0..4),
            strides in proptest::collection::vec(-2i64..12, 0..4),
            offset in -2i64..70,
            dtype_index in 0usize..13,
        ) {
            let dtype = ScalarType::ALL[dtype_index];
            let t = TensorBase::empty(&[numel], dtype, Device::CPU).unwrap();
            let n = sizes.len().min(strides.len());
            let (sizes, strides) = (&sizes[..n], &strides[..n]);
            if let Ok(v) = t.as_strided(sizes, strides, Some(offset)) {
                let storage_bytes = t.storage().nbytes() as i64;
                if v.numel() > 0 {
                    let last: i64 = offset
                        + sizes.iter().zip(strides).map(|(s, st)| (s - 1) * st).sum::<i64>();
                    prop_assert!(strides.iter().all(|&s| s >= 0) && offset >= 0);
                    prop_assert!((last + 1) * dtype.element_size() as i64 <= storage_bytes);
                    // Reading it back touches every element through the guard.
                    let read = ratten_core::dispatch_all_types!(dtype, T => v.to_vec::<T>().unwrap().len());
                    prop_assert_eq!(read as i64, v.numel());
                } else {
                    prop_assert!(sizes.contains(&0));
                }
            } else {
                // Refused: then it really would reach outside, or is malformed.
                let malformed = strides.iter().any(|&s| s < 0) || offset < 0;
                let empty = sizes.contains(&0);
                let last: i64 = offset
                    + sizes.iter().zip(strides).map(|(s, st)| (s - 1) * st).sum::<i64>();
                prop_assert!(
                    malformed
                        || (!empty
                            && (last + 1) * dtype.element_size() as i64
                                > t.storage().nbytes() as i64)
                );
            }
        }
    }
}

/// Metadata snapshots are consistent while other threads restride the tensor: a reader sees
/// either the old or the new (sizes, strides) pair, never a mix, and holding a snapshot does
/// not block a writer on the same thread.
#[test]
fn metadata_snapshots_are_consistent_under_concurrent_restriding() {
    let t = cpu(&[64], ScalarType::Float);
    let held = t.meta();
    // A held snapshot does not block this thread's own writer.
    t.as_strided_(&[8, 8], &[8, 1], Some(0)).unwrap();
    assert_eq!(held.sizes(), &[64]);
    assert_eq!(t.sizes().as_slice(), &[8, 8]);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (t, stop) = (t.clone(), stop.clone());
        thread::spawn(move || {
            let mut flip = false;
            while !stop.load(Ordering::Relaxed) {
                if flip {
                    t.as_strided_(&[8, 8], &[8, 1], Some(0)).unwrap();
                } else {
                    t.as_strided_(&[4, 16], &[1, 4], Some(0)).unwrap();
                }
                flip = !flip;
            }
        })
    };
    for _ in 0..20_000 {
        let m = t.meta();
        let ok = (m.sizes() == [8, 8] && m.strides() == [8, 1])
            || (m.sizes() == [4, 16] && m.strides() == [1, 4]);
        assert!(ok, "torn metadata: {:?} {:?}", m.sizes(), m.strides());
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

/// Foreign memory (a numpy buffer, `from_blob`) is only as aligned as its elements need: a
/// tensor may view it with a dtype whose alignment the pointer meets, never with a larger one
/// (reading an f64 through a 4-aligned pointer would be undefined behaviour).
#[test]
fn foreign_storage_alignment_is_checked_per_dtype() {
    use ratten_core::{Storage, TensorBase};
    use std::ptr::NonNull;
    let layout = std::alloc::Layout::from_size_align(64 + 16, 64).unwrap();
    // SAFETY: non-zero size.
    let block = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).unwrap();
    // SAFETY: the block has 80 zeroed bytes; [4, 20) is inside it, and the deleter frees the
    // block with its own layout.
    let dp = unsafe {
        DataPtr::from_raw(
            NonNull::new_unchecked(block.as_ptr().add(4)),
            16,
            move |q: NonNull<u8>, _| std::alloc::dealloc(q.as_ptr().sub(4), layout),
            true,
            Device::CPU,
        )
    };
    let storage = Storage::from_data_ptr(dp, 16, Device::CPU).unwrap();
    assert_eq!(storage.alignment(), 4);
    let f = TensorBase::from_storage(storage.clone(), ScalarType::Float, &[4], &[1], 0).unwrap();
    assert_eq!(f.numel(), 4);
    let c = TensorBase::from_storage(storage.clone(), ScalarType::ComplexFloat, &[2], &[1], 0);
    assert!(
        c.is_ok(),
        "complex64 needs 4-byte alignment (its components)"
    );
    let e =
        TensorBase::from_storage(storage.clone(), ScalarType::Double, &[2], &[1], 0).unwrap_err();
    assert!(
        e.message()
            .contains("aligned to 4 bytes, but dtype Double needs 8"),
        "{e}"
    );
    let e = f.set_(&storage, 0, &[2], &[1]);
    assert!(e.is_ok());
    let d = TensorBase::empty(&[2], ScalarType::Double, Device::CPU).unwrap();
    assert!(d.set_(&storage, 0, &[2], &[1]).is_err());
}

#[test]
fn the_engines_guard_excludes_other_threads_until_it_drops() {
    let a = TensorBase::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let out = cpu(&[2], ScalarType::Float);
    let (ma, mo) = (a.meta_pinned(), out.meta_pinned());
    let f = ScalarType::Float;
    let mut ptrs = [std::ptr::null_mut(); 2];
    // SAFETY: both snapshots are of Float CPU tensors, passed with Float and CPU.
    let g = unsafe {
        RawAccess::acquire(
            &[(&mo, f, Device::CPU), (&ma, f, Device::CPU)],
            1,
            &mut ptrs,
        )
    }
    .unwrap();
    // SAFETY: the guard holds `out` exclusively and `a` shared; both have two floats.
    unsafe {
        let x = std::slice::from_raw_parts(ptrs[1].cast::<f32>(), 2);
        let o = std::slice::from_raw_parts_mut(ptrs[0].cast::<f32>(), 2);
        o[0] = x[0] + x[1];
    }
    let reader_done = AtomicBool::new(false);
    thread::scope(|s| {
        // Another thread's read of the output waits for the guard; a read of the input does not.
        s.spawn(|| drop(TensorAccess::read(&a).unwrap()));
        let waiter = s.spawn(|| {
            let r = TensorAccess::read(&out).unwrap();
            reader_done.store(true, Ordering::SeqCst);
            drop(r);
        });
        thread::sleep(std::time::Duration::from_millis(50));
        assert!(!reader_done.load(Ordering::SeqCst));
        drop(g);
        waiter.join().unwrap();
    });
    assert_eq!(out.to_vec::<f32>().unwrap()[0], 3.0);
}

#[test]
fn a_guard_excludes_other_threads_and_is_shared_with_workers() {
    let a = TensorBase::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let out = cpu(&[4], ScalarType::Float);
    let g = TensorAccess::new(&[&a], &[&out]).unwrap();
    // Workers read through `&guard`.
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| assert_eq!(g.input_slice::<f32>(0).unwrap(), &[1.0, 2.0, 3.0, 4.0]));
        }
    });
    let writer_done = AtomicBool::new(false);
    thread::scope(|s| {
        // Another thread's write of the output waits for the guard.
        let waiter = s.spawn(|| {
            let w = TensorAccess::write(&out).unwrap();
            writer_done.store(true, Ordering::SeqCst);
            drop(w);
        });
        thread::sleep(std::time::Duration::from_millis(50));
        assert!(!writer_done.load(Ordering::SeqCst));
        drop(g);
        waiter.join().unwrap();
    });
    assert!(writer_done.load(Ordering::SeqCst));
}
