//! The nn operators of issue 27's speed aims, from Rust: conv2d 3x3 64->64 (padding 1) on
//! 8x64x56x56, max_pool2d 3x3 stride 2 padding 1 on the same input, and softmax / log_softmax
//! (and their backward) over the rows of 4096x1024, float32, with 1 and 2 intra-op threads.
//! candle-core runs beside them where it has the op (conv2d; max_pool2d without padding, on
//! the input padded once outside the timing; softmax and log_softmax composed from its
//! max / exp / sum ops, which is how candle-nn writes them on the CPU), on its own thread
//! count (every core), so its column is printed in the 2-thread table only (this bench's
//! machines have two cores).
//!
//! Run: `cargo bench -p ratten-aten --bench nn` (`RATTEN_NN_ROUNDS=<n>`, default 11). The
//! cases run round-robin, one call each per round; printed are the median time per call and
//! the ratio ratten / candle (below 1: ratten is faster). Against torch (oneDNN, its softmax
//! kernels): `python python/bench/bench_conv.py` and `python python/bench/bench_softmax_loss.py`.

use std::hint::black_box;
use std::time::Instant;

use candle_core::{DType, Device, Tensor as CTensor, D};
use ratten_aten::tensor_iterator::parallel::set_num_threads;
use ratten_aten::{operators, Tensor};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// `n` values spread over about [-2, 2].
fn values(n: usize, seed: u64) -> Vec<f32> {
    (0..n as u64)
        .map(|i| ((i.wrapping_add(seed).wrapping_mul(2654435761)) % 1000) as f32 / 250.0 - 2.0)
        .collect()
}

struct Case<'a> {
    name: &'a str,
    ratten: Box<dyn Fn() + 'a>,
    candle: Option<Box<dyn Fn() + 'a>>,
}

fn candle_softmax(x: &CTensor, log: bool) -> CTensor {
    let shifted = x.broadcast_sub(&x.max_keepdim(D::Minus1).unwrap()).unwrap();
    let e = shifted.exp().unwrap();
    let s = e.sum_keepdim(D::Minus1).unwrap();
    if log {
        shifted.broadcast_sub(&s.log().unwrap()).unwrap()
    } else {
        e.broadcast_div(&s).unwrap()
    }
}

fn main() {
    let rounds: usize = std::env::var("RATTEN_NN_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11)
        .max(3);
    let (n, c, hw) = (8usize, 64usize, 56usize);
    let xv = values(n * c * hw * hw, 1);
    let wv: Vec<f32> = values(c * c * 9, 2).iter().map(|v| v * 0.05).collect();
    let x = Tensor::from_slice(&xv, &[n as i64, c as i64, hw as i64, hw as i64]).unwrap();
    let w = Tensor::from_slice(&wv, &[c as i64, c as i64, 3, 3]).unwrap();
    let rows = Tensor::from_slice(&values(4096 * 1024, 3), &[4096, 1024]).unwrap();
    let grad = Tensor::from_slice(&values(4096 * 1024, 4), &[4096, 1024]).unwrap();
    let sm = operators::_softmax::call(&rows, 1, false).unwrap();
    let lsm = operators::_log_softmax::call(&rows, 1, false).unwrap();

    let dev = Device::Cpu;
    let cx = CTensor::from_vec(xv.clone(), (n, c, hw, hw), &dev).unwrap();
    let cw = CTensor::from_vec(wv, (c, c, 3, 3), &dev).unwrap();
    // max_pool2d's padding 1 as -inf borders (candle's pool has no padding argument).
    let cx_pad = cx
        .pad_with_same(2, 1, 1)
        .and_then(|t| t.pad_with_same(3, 1, 1))
        .unwrap();
    let pad_value = CTensor::full(f32::NEG_INFINITY, (n, c, hw + 2, hw + 2), &dev).unwrap();
    let inner = CTensor::ones((n, c, hw, hw), DType::U8, &dev)
        .and_then(|t| t.pad_with_zeros(2, 1, 1))
        .and_then(|t| t.pad_with_zeros(3, 1, 1))
        .unwrap();
    let cx_pad = inner.where_cond(&cx_pad, &pad_value).unwrap();
    let crows = CTensor::from_vec(values(4096 * 1024, 3), (4096, 1024), &dev).unwrap();

    let cases = [
        Case {
            name: "conv2d 3x3 64-64 8x56x56",
            ratten: Box::new(|| {
                black_box(
                    operators::conv2d::call(&x, &w, None, &[1, 1], &[1, 1], &[1, 1], 1).unwrap(),
                );
            }),
            candle: Some(Box::new(|| {
                black_box(cx.conv2d(&cw, 1, 1, 1, 1).unwrap());
            })),
        },
        Case {
            name: "max_pool2d 3x3 s2 p1",
            ratten: Box::new(|| {
                black_box(
                    operators::max_pool2d::call(&x, &[3, 3], &[2, 2], &[1, 1], &[1, 1], false)
                        .unwrap(),
                );
            }),
            candle: Some(Box::new(|| {
                black_box(cx_pad.max_pool2d_with_stride(3, 2).unwrap());
            })),
        },
        Case {
            name: "softmax rows 4096x1024",
            ratten: Box::new(|| {
                black_box(operators::_softmax::call(&rows, 1, false).unwrap());
            }),
            candle: Some(Box::new(|| {
                black_box(candle_softmax(&crows, false));
            })),
        },
        Case {
            name: "log_softmax rows",
            ratten: Box::new(|| {
                black_box(operators::_log_softmax::call(&rows, 1, false).unwrap());
            }),
            candle: Some(Box::new(|| {
                black_box(candle_softmax(&crows, true));
            })),
        },
        Case {
            name: "softmax bwd rows",
            ratten: Box::new(|| {
                black_box(
                    operators::_softmax_backward_data::call(&grad, &sm, 1, rows.dtype()).unwrap(),
                );
            }),
            candle: None,
        },
        Case {
            name: "log_softmax bwd rows",
            ratten: Box::new(|| {
                black_box(
                    operators::_log_softmax_backward_data::call(&grad, &lsm, 1, rows.dtype())
                        .unwrap(),
                );
            }),
            candle: None,
        },
    ];
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    println!("nn ops (float32), {rounds} interleaved rounds, CPU: {cpu}");
    for threads in [1, 2] {
        set_num_threads(threads).unwrap();
        // Every function timed: ratten's, then candle's (2 threads only).
        let mut fns: Vec<(usize, &dyn Fn())> = Vec::new();
        for (k, case) in cases.iter().enumerate() {
            fns.push((k, &*case.ratten));
        }
        if threads == 2 {
            for (k, case) in cases.iter().enumerate() {
                if let Some(f) = &case.candle {
                    fns.push((cases.len() + k, &**f));
                }
            }
        }
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); 2 * cases.len()];
        for (_, f) in &fns {
            f();
        }
        for r in 0..rounds {
            for j in 0..fns.len() {
                let (slot, f) = fns[(j + r) % fns.len()];
                let t0 = Instant::now();
                f();
                times[slot].push(t0.elapsed().as_secs_f64());
            }
        }
        println!("\n{threads} thread(s)");
        println!(
            "{:<26} {:>12} {:>12} {:>10}",
            "case", "ratten", "candle", "/candle"
        );
        for (k, case) in cases.iter().enumerate() {
            let r = median(times[k].clone());
            let other = &times[cases.len() + k];
            if other.is_empty() {
                println!(
                    "{:<26} {:>9.3} ms {:>12} {:>10}",
                    case.name,
                    r * 1e3,
                    "-",
                    "-"
                );
            } else {
                let cm = median(other.clone());
                println!(
                    "{:<26} {:>9.3} ms {:>9.3} ms {:>9.2}x",
                    case.name,
                    r * 1e3,
                    cm * 1e3,
                    r / cm
                );
            }
        }
    }
}
