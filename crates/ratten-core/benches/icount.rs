//! Fixed-cost probe for instruction counting: `icount <case> <n>` runs one case `n` times.
//! Run it under `valgrind --tool=callgrind` for two values of `n`; the difference of the
//! totals divided by the difference of `n` is the cost of one call, independent of load.
//! (A plain `cargo bench` runs each case once, as a smoke test.)

// SAFETY (every `RawAccess::acquire` call below): each snapshot is `meta_arc()` of a Float CPU
// tensor, passed with Float and CPU.
use std::hint::black_box;

use ratten_core::{Device, RawAccess, ScalarType, TensorAccess, TensorBase};

fn run(case: &str, n: usize) -> bool {
    let t = |n| TensorBase::empty(&[n], ScalarType::Float, Device::CPU).unwrap();
    let (a, b, out) = (t(1), t(1), t(1));
    let (ma, mb, mo) = (a.meta_arc(), b.meta_arc(), out.meta_arc());
    let f = ScalarType::Float;
    let cpu = Device::CPU;
    match case {
        "empty" => {
            for _ in 0..n {
                black_box(TensorBase::empty(black_box(&[1]), f, cpu).unwrap());
            }
        }
        "raw3" => {
            for _ in 0..n {
                let mut ptrs = [std::ptr::null_mut(); 3];
                let g = unsafe {
                    RawAccess::acquire(&[(&mo, f, cpu), (&ma, f, cpu), (&mb, f, cpu)], 1, &mut ptrs)
                }
                .unwrap();
                drop(black_box((g, ptrs)));
            }
        }
        "raw1" => {
            for _ in 0..n {
                let mut ptrs = [std::ptr::null_mut(); 1];
                let g = unsafe { RawAccess::acquire(&[(&ma, f, cpu)], 0, &mut ptrs) }.unwrap();
                drop(black_box((g, ptrs)));
            }
        }
        "new3" => {
            for _ in 0..n {
                black_box(TensorAccess::new(&[&a, &b], &[&out]).unwrap());
            }
        }
        "read1" => {
            for _ in 0..n {
                black_box(TensorAccess::read(&a).unwrap());
            }
        }
        "meta_arc" => {
            for _ in 0..n {
                black_box(black_box(&a).meta_arc());
            }
        }
        "with_meta" => {
            for _ in 0..n {
                black_box(black_box(&a).with_meta(|m| m.numel()));
            }
        }
        "numel" => {
            for _ in 0..n {
                black_box(black_box(&a).numel());
            }
        }
        _ => return false,
    }
    true
}

const CASES: [&str; 8] = [
    "empty",
    "raw3",
    "new3",
    "read1",
    "raw1",
    "meta_arc",
    "with_meta",
    "numel",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; then run every case once.
    match (args.first(), args.get(1).and_then(|n| n.parse().ok())) {
        (Some(case), Some(n)) if run(case, n) => {}
        _ => {
            for case in CASES {
                assert!(run(case, 1));
            }
        }
    }
}
