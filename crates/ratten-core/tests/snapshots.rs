//! Lock-free metadata snapshots (`SnapshotCell`, `TensorBase::with_meta` / `meta_arc`) and the
//! recycled snapshot and object blocks: reads under concurrent resize_/set_/as_strided_ see a
//! consistent, live snapshot; a replaced snapshot lives as long as someone holds or borrows
//! it; tensors made on one thread may be dropped on another.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use ratten_core::{Device, ScalarType, Storage, TensorAccess, TensorBase};

fn cpu(sizes: &[i64]) -> TensorBase {
    TensorBase::zeros(sizes, ScalarType::Float, Device::CPU).unwrap()
}

/// What every snapshot of the tensors below must satisfy, whatever the writers do: it is
/// one of the geometries written, and it fits its own storage.
fn check_consistent(m: &ratten_core::TensorMeta) {
    let sizes = m.sizes();
    let ok = matches!(sizes, [64] | [8, 8] | [3, 5] | [300]);
    assert!(ok, "unexpected sizes {sizes:?}");
    assert_eq!(m.numel(), sizes.iter().product::<i64>(), "torn numel");
    assert_eq!(m.strides().len(), sizes.len(), "torn strides");
    let need = (m.storage_offset() + m.numel()) as usize * 4;
    assert!(m.storage().nbytes() >= need, "snapshot past its storage");
}

#[test]
fn borrowed_and_counted_reads_are_consistent_under_resize_and_set() {
    let t = cpu(&[64]);
    let other = Storage::new_zeroed(64 * 4, Device::CPU).unwrap();
    let stop = AtomicBool::new(false);
    let done = AtomicUsize::new(0);
    let start = Barrier::new(3);
    thread::scope(|s| {
        s.spawn(|| {
            start.wait();
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                match i % 4 {
                    0 => t.resize_(&[3, 5]).unwrap(),
                    // Grows the storage (a reallocation under the storage's lock).
                    1 => t.resize_(&[300]).unwrap(),
                    2 => t.set_(&other, 0, &[8, 8], &[8, 1]).unwrap(),
                    _ => t.as_strided_(&[64], &[1], Some(0)).unwrap(),
                }
                i = i.wrapping_add(1);
            }
        });
        for _ in 0..2 {
            s.spawn(|| {
                start.wait();
                for _ in 0..if cfg!(miri) { 20 } else { 5_000 } {
                    t.with_meta(check_consistent);
                    check_consistent(&t.meta_arc());
                    // The plain reads each come from one snapshot too.
                    let n = t.numel();
                    assert!([64, 64, 15, 300].contains(&n), "numel {n}");
                    let sizes = t.sizes();
                    assert!(matches!(sizes.as_slice(), [64] | [8, 8] | [3, 5] | [300]));
                    // A guard on a snapshot reads within it while the geometry changes.
                    let g = TensorAccess::read(&t).unwrap();
                    let x = g.input(0).unwrap();
                    assert_eq!(x.numel(), x.sizes().iter().product::<i64>());
                }
                // The last reader done stops the writer.
                if done.fetch_add(1, Ordering::SeqCst) == 1 {
                    stop.store(true, Ordering::Relaxed);
                }
            });
        }
    });
}

#[test]
fn a_replaced_snapshot_lives_while_held_or_borrowed() {
    let t = TensorBase::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let old_storage = t.storage();
    let held = t.meta_arc();
    let other = Storage::new_zeroed(16, Device::CPU).unwrap();
    t.set_(&other, 0, &[2], &[1]).unwrap();
    assert!(!t.is_current_meta(&held));
    // The held snapshot still has its geometry and keeps its storage alive.
    assert_eq!(held.sizes(), &[4]);
    assert!(held.storage().is_alias_of(&old_storage));
    drop(t);
    assert_eq!(held.storage().nbytes(), 16);
    assert_eq!(old_storage.use_count(), 2);
    drop(held);
    assert_eq!(old_storage.use_count(), 1);

    // A borrow taken before a replace on the same thread stays valid through it, and the
    // replaced snapshot (and its storage) is released once nothing borrows it.
    let t = TensorBase::from_slice(&[5i64, 6], &[2]).unwrap();
    let first = t.storage();
    t.with_meta(|m| {
        t.set_(&Storage::new_zeroed(8, Device::CPU).unwrap(), 0, &[1], &[1])
            .unwrap();
        t.resize_(&[3]).unwrap();
        assert_eq!(m.sizes(), &[2]);
        assert!(m.storage().is_alias_of(&first));
        assert_eq!(t.sizes().as_slice(), &[3]);
        // Nested borrows see the current snapshot.
        t.with_meta(|now| assert_eq!(now.sizes(), &[3]));
    });
    t.as_strided_(&[1], &[1], Some(0)).unwrap();
    assert_eq!(
        first.use_count(),
        1,
        "the replaced snapshot was not released"
    );
}

#[test]
fn a_borrow_on_one_thread_does_not_block_writers_on_others() {
    let t = cpu(&[64]);
    let borrowed = Barrier::new(2);
    let written = Barrier::new(2);
    thread::scope(|s| {
        s.spawn(|| {
            t.with_meta(|m| {
                borrowed.wait();
                // The other thread replaces (and would free) this snapshot meanwhile.
                written.wait();
                assert_eq!(m.sizes(), &[64]);
                assert_eq!(m.storage().nbytes(), 256);
            });
        });
        s.spawn(|| {
            borrowed.wait();
            t.resize_(&[8, 8]).unwrap();
            t.set_(&Storage::new_zeroed(4, Device::CPU).unwrap(), 0, &[1], &[1])
                .unwrap();
            written.wait();
        });
    });
    assert_eq!(t.sizes().as_slice(), &[1]);
}

#[test]
fn tensors_made_on_one_thread_drop_on_another() {
    // Snapshot and object blocks are recycled per thread: a tensor dropped on another thread
    // goes to that thread's caches, and the tensors made from them there are intact.
    let made: Vec<TensorBase> = (1..40)
        .map(|n| TensorBase::from_slice(&vec![n as i32; n], &[n as i64]).unwrap())
        .collect();
    let held: Vec<_> = made.iter().step_by(3).map(|t| t.meta_arc()).collect();
    let storages: Vec<_> = made.iter().map(|t| t.storage()).collect();
    thread::spawn(move || {
        drop(made);
        let again: Vec<TensorBase> = (1..40)
            .map(|n| TensorBase::from_slice(&vec![-(n as i32); n], &[n as i64]).unwrap())
            .collect();
        for (i, t) in again.iter().enumerate() {
            assert_eq!(t.to_vec::<i32>().unwrap(), vec![-(i as i32 + 1); i + 1]);
        }
    })
    .join()
    .unwrap();
    // Held snapshots survived the drops; unheld tensors released their storages.
    for (k, m) in held.iter().enumerate() {
        assert_eq!(m.numel(), 3 * k as i64 + 1);
    }
    for (i, s) in storages.iter().enumerate() {
        let expected = if i % 3 == 0 { 2 } else { 1 };
        assert_eq!(s.use_count(), expected, "storage {i}");
    }
}

#[test]
fn many_short_threads_read_and_write_metadata() {
    let t = Arc::new(cpu(&[64]));
    for round in 0..if cfg!(miri) { 3 } else { 20 } {
        let handles: Vec<_> = (0..4)
            .map(|k| {
                let t = t.clone();
                thread::spawn(move || {
                    if k == 0 {
                        let sizes: &[i64] = if round % 2 == 0 { &[8, 8] } else { &[64] };
                        t.as_strided_(sizes, if sizes.len() == 2 { &[8, 1] } else { &[1] }, None)
                            .unwrap();
                    }
                    t.with_meta(check_consistent);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
    t.with_meta(check_consistent);
}
