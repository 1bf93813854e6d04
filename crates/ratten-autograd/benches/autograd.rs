//! Autograd's overhead through the Rust API, beside PyTorch's figures for the same cases
//! (issue 28, measured on this kind of machine from Python, where torch's C++ costs most of
//! the time): a 1-element `a * b` with and without requires_grad, forward + backward of a
//! 100-operator elementwise chain (per operator), `backward()`'s fixed cost, and a training
//! step of a 64-128-10 MLP on a batch of 64.
//!
//! Run: `cargo bench -p ratten-autograd --bench autograd`. Prints medians over rounds and the
//! ratios (below 1: ratten is faster). `python python/bench/bench_autograd.py` runs both
//! libraries side by side from Python.

use std::hint::black_box;
use std::time::Instant;

use ratten_aten::{functions as F, Tensor};
use ratten_autograd::{ensure_initialized, TensorAutogradExt};
use ratten_core::Scalar;

/// torch 2.15 on this kind of machine, in us (issue 28).
const TORCH_MUL: f64 = 1.27;
const TORCH_MUL_RG: f64 = 2.48;
const TORCH_CHAIN_PER_OP: f64 = 5.85;
const TORCH_BACKWARD_FIXED: f64 = 48.0 + 3.2;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The median over `rounds` of the mean time (us) of `n` calls of `f`, divided by `per`.
fn time(rounds: usize, n: usize, per: f64, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..rounds)
            .map(|_| {
                let t0 = Instant::now();
                for _ in 0..n {
                    f();
                }
                t0.elapsed().as_secs_f64() * 1e6 / n as f64 / per
            })
            .collect(),
    )
}

fn one(v: f32) -> Tensor {
    Tensor::from_slice(&[v], &[1]).unwrap()
}

fn main() {
    ensure_initialized();
    ratten_aten::tensor_iterator::set_num_threads(1).ok();
    let (a, b) = (one(1.5), one(2.0));
    let ar = one(1.5);
    ar.requires_grad_(true).unwrap();
    let mul = time(15, 20000, 1.0, || {
        black_box(a.mul(&b).unwrap());
    });
    let mul_rg = time(15, 20000, 1.0, || {
        black_box(ar.mul(&b).unwrap());
    });
    let x = one(0.5);
    x.requires_grad_(true).unwrap();
    let (c1, c2, c3) = (
        Scalar::Double(1.001),
        Scalar::Double(0.5),
        Scalar::Double(0.25),
    );
    let chain = time(9, 50, 100.0, || {
        let mut y = x.clone();
        for _ in 0..25 {
            y = y.mul_scalar(c1).unwrap();
            y = y.add_scalar(c2).unwrap();
            y = y.sin().unwrap();
            y = y.sub_scalar(c3).unwrap();
        }
        y.backward().unwrap();
    });
    let one_node = one(2.0);
    one_node.requires_grad_(true).unwrap();
    let y1 = one_node.mul_scalar(Scalar::Double(3.0)).unwrap();
    let backward = time(9, 2000, 1.0, || {
        y1.backward_with(None, Some(true), false, &[]).unwrap();
    });
    let xb = F::randn(&[64, 64]).unwrap();
    let tb = F::randn(&[64, 10]).unwrap();
    let w1 = F::randn(&[64, 128])
        .unwrap()
        .mul_scalar(Scalar::Double(0.1))
        .unwrap();
    let w2 = F::randn(&[128, 10])
        .unwrap()
        .mul_scalar(Scalar::Double(0.1))
        .unwrap();
    let b1 = F::zeros(&[128]).unwrap();
    let b2 = F::zeros(&[10]).unwrap();
    for p in [&w1, &w2, &b1, &b2] {
        p.requires_grad_(true).unwrap();
    }
    let mlp = time(9, 50, 1.0, || {
        let h = xb.matmul(&w1).unwrap().add(&b1).unwrap().tanh().unwrap();
        let out = h.matmul(&w2).unwrap().add(&b2).unwrap();
        let d = out.sub(&tb).unwrap();
        d.mul(&d).unwrap().mean().unwrap().backward().unwrap();
        for p in [&w1, &w2, &b1, &b2] {
            p.set_grad(None).unwrap();
        }
    });
    println!("autograd through the Rust API, 1 thread (medians, us)");
    println!(
        "{:<26}{:>10}{:>10}{:>8}",
        "case", "ratten", "torch", "ratio"
    );
    let row = |name: &str, r: f64, t: Option<f64>| match t {
        Some(t) => println!("{name:<26}{r:>10.3}{t:>10.2}{:>8.2}", r / t),
        None => println!("{name:<26}{r:>10.3}{:>10}{:>8}", "-", "-"),
    };
    row("mul 1-element", mul, Some(TORCH_MUL));
    row("mul 1-element, rg", mul_rg, Some(TORCH_MUL_RG));
    row("  rg / no grad", mul_rg / mul, None);
    row("chain100 fwd+bwd per op", chain, Some(TORCH_CHAIN_PER_OP));
    row("backward of 1 node", backward, Some(TORCH_BACKWARD_FIXED));
    row("mlp 64-128-10 step", mlp, None);
}
