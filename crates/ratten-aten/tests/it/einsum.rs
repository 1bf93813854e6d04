//! einsum, tensordot and kron against a naive reference: einsum by the definition (a loop over
//! every assignment of the subscripts, a property test over random equations), torch's
//! equation errors, tensordot's dims forms and kron's shapes.

use std::collections::BTreeMap;

use crate::common::values;
use proptest::prelude::*;
use ratten_aten::{functions as F, Tensor};
use ratten_core::ScalarType;

fn tensor(shape: &[i64], seed: u64) -> Tensor {
    let n: i64 = shape.iter().product();
    let data: Vec<f64> = (0..n as u64)
        .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed * 97)) % 7) as f64 - 3.0)
        .collect();
    Tensor::from_vec(data, shape).unwrap()
}

/// einsum by its definition, for equations without ellipsis: the sum over every assignment
/// of the labels of the product of the operands' elements.
fn naive_einsum(inputs: &[&str], output: &str, ops: &[Tensor]) -> (Vec<i64>, Vec<f64>) {
    let mut size: BTreeMap<char, i64> = BTreeMap::new();
    for (labels, t) in inputs.iter().zip(ops) {
        for (c, &s) in labels.chars().zip(t.sizes().iter()) {
            let e = size.entry(c).or_insert(1);
            *e = (*e).max(s);
        }
    }
    let labels: Vec<char> = size.keys().copied().collect();
    let vals: Vec<Vec<f64>> = ops.iter().map(values).collect();
    let out_shape: Vec<i64> = output.chars().map(|c| size[&c]).collect();
    let out_n: i64 = out_shape.iter().product();
    let mut out = vec![0.0; out_n as usize];
    let total: i64 = labels.iter().map(|c| size[c]).product();
    for flat in 0..total {
        let mut assign = BTreeMap::new();
        let mut r = flat;
        for c in labels.iter().rev() {
            assign.insert(*c, r % size[c]);
            r /= size[c];
        }
        let mut prod = 1.0;
        for ((lab, t), v) in inputs.iter().zip(ops).zip(&vals) {
            let mut idx = 0i64;
            for (c, (&s, &st)) in lab.chars().zip(
                t.sizes()
                    .iter()
                    .zip(t.contiguous().unwrap().strides().iter()),
            ) {
                let i = if s == 1 { 0 } else { assign[&c] };
                idx += i * st;
            }
            prod *= v[idx as usize];
        }
        let mut oi = 0i64;
        for c in output.chars() {
            oi = oi * size[&c] + assign[&c];
        }
        out[oi as usize] += prod;
    }
    (out_shape, out)
}

fn check(equation: &str, shapes: &[&[i64]]) {
    let ops: Vec<Tensor> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| tensor(s, i as u64 + 1))
        .collect();
    let (lhs, rhs) = equation.split_once("->").unwrap();
    let inputs: Vec<&str> = lhs.split(',').collect();
    let got = F::einsum(equation, &ops).unwrap();
    let (shape, want) = naive_einsum(&inputs, rhs, &ops);
    assert_eq!(got.sizes().as_slice(), shape.as_slice(), "{equation}");
    assert_eq!(values(&got), want, "{equation}");
}

#[test]
fn einsum_common_equations() {
    check("ij,jk->ik", &[&[2, 3], &[3, 4]]);
    check("ij,jk->", &[&[2, 3], &[3, 4]]);
    check("ii->i", &[&[3, 3]]);
    check("ii->", &[&[3, 3]]);
    check("ij->ji", &[&[2, 3]]);
    check("bij,bjk->bik", &[&[2, 2, 3], &[2, 3, 4]]);
    check("i,j->ij", &[&[3], &[4]]);
    check("i,i->", &[&[3], &[3]]);
    check("i,i->", &[&[3], &[1]]);
    check("bn,anm,bm->ba", &[&[2, 3], &[4, 3, 5], &[2, 5]]);
    check("iij,jk->ik", &[&[2, 2, 3], &[3, 2]]);
    check("ij,ij->ij", &[&[2, 3], &[2, 3]]);
    check("ab,cd->", &[&[2, 3], &[4, 1]]);
}

#[test]
fn einsum_implicit_output_and_ellipsis() {
    let a = tensor(&[2, 3], 1);
    let b = tensor(&[3, 4], 2);
    let implicit = F::einsum("ij,jk", &[a.clone(), b.clone()]).unwrap();
    assert_eq!(values(&implicit), values(&F::mm(&a, &b).unwrap()));
    // Upper case sorts before lower case in the implicit output.
    let t = F::einsum("bA", std::slice::from_ref(&a)).unwrap();
    assert_eq!(values(&t), values(&a.t().unwrap()));
    let x = tensor(&[5, 2, 3], 3);
    let e = F::einsum("...ij,jk", &[x.clone(), b.clone()]).unwrap();
    assert_eq!(e.sizes().as_slice(), &[5, 2, 4]);
    assert_eq!(values(&e), values(&F::matmul(&x, &b).unwrap()));
    let s = F::einsum("...ij->...", std::slice::from_ref(&x)).unwrap();
    assert_eq!(
        values(&s),
        values(&F::sum_dim_int_list(&x, Some(&[1, 2])).unwrap())
    );
    let d = F::einsum("i...i", &[tensor(&[3, 2, 3], 4)]).unwrap();
    assert_eq!(d.sizes().as_slice(), &[2]);
    let w = F::einsum(" i j , j k -> i k ", &[a.clone(), b.clone()]).unwrap();
    assert_eq!(values(&w), values(&F::mm(&a, &b).unwrap()));
}

#[test]
fn einsum_errors_are_torchs() {
    let a = tensor(&[2, 3], 1);
    let b = tensor(&[3, 4], 2);
    let err = |eq: &str, ops: &[Tensor]| F::einsum(eq, ops).unwrap_err().to_string();
    assert_eq!(
        err("ij,jk", std::slice::from_ref(&a)),
        "einsum(): fewer operands were provided than specified in the equation"
    );
    assert_eq!(
        err("ij", &[a.clone(), b.clone()]),
        "einsum(): more operands were provided than specified in the equation"
    );
    assert_eq!(err("ij,jk", &[a.clone(), tensor(&[4, 4], 1)]), "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3");
    assert_eq!(
        err("ij,jk->ikk", &[a.clone(), b.clone()]),
        "einsum(): output subscript k appears more than once in the output"
    );
    assert_eq!(
        err("ij,jk->iz", &[a.clone(), b.clone()]),
        "einsum(): output subscript z does not appear in the equation for any input operand"
    );
    assert_eq!(err("i1,jk", &[a.clone(), b.clone()]), "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]");
    assert_eq!(err("ijk,jk", &[a.clone(), b.clone()]), "einsum(): the number of subscripts in the equation (3) does not match the number of dimensions (2) for operand 0 and no ellipsis was given");
    assert_eq!(
        err("i.j", std::slice::from_ref(&a)),
        "einsum(): found '.' for operand 0 that is not part of any ellipsis"
    );
    assert_eq!(err("ij->j->i", std::slice::from_ref(&a)), "einsum(): invalid subscript given at index 5 in the equation string, subscripts must be in [a-zA-Z]");
    assert_eq!(
        err("ij", &[]),
        "einsum(): must provide at least one operand"
    );
}

#[test]
fn tensordot_and_kron() {
    let a = tensor(&[2, 3, 4], 1);
    let b = tensor(&[4, 3, 5], 2);
    let t = F::tensordot(&a, &b, &[1, 2], &[1, 0]).unwrap();
    assert_eq!(t.sizes().as_slice(), &[2, 5]);
    let want = F::einsum("ijk,kjl->il", &[a.clone(), b.clone()]).unwrap();
    assert_eq!(values(&t), values(&want));
    let err = F::tensordot(&a, &b, &[0], &[0]).unwrap_err().to_string();
    assert_eq!(err, "contracted dimensions need to match, but first has size 2 in dim 0 and second has size 4 in dim 0");
    let err = F::tensordot(&a, &b, &[1, 0], &[0]).unwrap_err().to_string();
    assert_eq!(err, "both dimension lists should have same length");
    let err = F::tensordot(&a, &b.to_dtype(ScalarType::Float).unwrap(), &[2], &[0])
        .unwrap_err()
        .to_string();
    assert_eq!(err, "both inputs should have same dtype");
    // kron: block (i, j) of the result is a[i, j] * b.
    let x = tensor(&[2, 3], 3);
    let y = tensor(&[3, 2], 4);
    let k = F::kron(&x, &y).unwrap();
    assert_eq!(k.sizes().as_slice(), &[6, 6]);
    let (xv, yv, kv) = (values(&x), values(&y), values(&k));
    for i in 0..6 {
        for j in 0..6 {
            assert_eq!(
                kv[i * 6 + j],
                xv[(i / 3) * 3 + j / 2] * yv[(i % 3) * 2 + j % 2]
            );
        }
    }
    let k1 = F::kron(&tensor(&[2], 1), &y).unwrap();
    assert_eq!(k1.sizes().as_slice(), &[3, 4]);
    let out = Tensor::empty(&[0], ScalarType::Double).unwrap();
    F::kron_out(&out, &x, &y).unwrap();
    assert_eq!(out.sizes().as_slice(), &[6, 6]);
    assert_eq!(values(&out), kv);
}

/// A random equation over up to three operands of up to three subscripts from `abcd`.
fn equation() -> impl Strategy<Value = (Vec<String>, String, BTreeMap<char, i64>)> {
    let operand = prop::collection::vec(prop::sample::select(vec!['a', 'b', 'c', 'd']), 1..4);
    (
        prop::collection::vec(operand, 1..4),
        prop::collection::vec(1i64..4, 4),
        any::<u8>(),
    )
        .prop_map(|(ops, sizes, pick)| {
            let size: BTreeMap<char, i64> = ['a', 'b', 'c', 'd'].into_iter().zip(sizes).collect();
            let inputs: Vec<String> = ops.iter().map(|o| o.iter().collect()).collect();
            let mut used: Vec<char> = ops.iter().flatten().copied().collect();
            used.sort();
            used.dedup();
            let output: String = used
                .iter()
                .enumerate()
                .filter(|(i, _)| pick & (1 << i) != 0)
                .map(|(_, c)| *c)
                .collect();
            (inputs, output, size)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn einsum_matches_definition((inputs, output, size) in equation()) {
        let ops: Vec<Tensor> = inputs
            .iter()
            .enumerate()
            .map(|(i, lab)| {
                let shape: Vec<i64> = lab.chars().map(|c| size[&c]).collect();
                tensor(&shape, i as u64 + 5)
            })
            .collect();
        let refs: Vec<&str> = inputs.iter().map(|s| s.as_str()).collect();
        let equation = format!("{}->{}", inputs.join(","), output);
        let got = F::einsum(&equation, &ops).unwrap();
        let (shape, want) = naive_einsum(&refs, &output, &ops);
        let got_shape = got.sizes().to_vec();
        prop_assert_eq!(got_shape, shape);
        prop_assert_eq!(values(&got), want);
    }
}
