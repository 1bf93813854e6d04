//! Matrix products against a naive reference: matmul over every rank combination with
//! broadcast batch dims and transposed operands (a property test), the addmm family's beta /
//! alpha rules, integer and complex dtypes, batches of small products, aliased outputs, meta.

use crate::common::values;
use proptest::prelude::*;
use ratten_aten::{functions, Tensor};
use ratten_core::{Device, ScalarType};

/// A float64 tensor of `shape` with small integer values (products are exact).
fn tensor(shape: &[i64], seed: u64) -> Tensor {
    let n: i64 = shape.iter().product();
    let data: Vec<f64> = (0..n as u64)
        .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed * 97)) % 7) as f64 - 3.0)
        .collect();
    Tensor::from_vec(data, shape).unwrap()
}

/// torch.matmul's semantics written out: 1-D operands promoted to matrices and the added dim
/// removed, batch dims broadcast, one naive product per batch.
fn naive_matmul(a: &Tensor, b: &Tensor) -> (Vec<i64>, Vec<f64>) {
    let (mut sa, mut sb) = (a.sizes().to_vec(), b.sizes().to_vec());
    let (da, db) = (sa.len(), sb.len());
    if da == 1 {
        sa.insert(0, 1);
    }
    if db == 1 {
        sb.push(1);
    }
    let (n, k, p) = (sa[sa.len() - 2], sa[sa.len() - 1], sb[sb.len() - 1]);
    let (ba, bb) = (&sa[..sa.len() - 2], &sb[..sb.len() - 2]);
    let nd = ba.len().max(bb.len());
    let pad = |s: &[i64]| {
        let mut v = vec![1; nd - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (pa, pb) = (pad(ba), pad(bb));
    let batch: Vec<i64> = pa.iter().zip(&pb).map(|(&x, &y)| x.max(y)).collect();
    let (va, vb) = (values(a), values(b));
    let nbatch: i64 = batch.iter().product();
    let mut out = Vec::new();
    for flat in 0..nbatch {
        let mut idx = vec![0; nd];
        let mut r = flat;
        for d in (0..nd).rev() {
            idx[d] = r % batch[d];
            r /= batch[d];
        }
        let offset = |pads: &[i64]| {
            idx.iter()
                .zip(pads)
                .fold(0, |o, (&i, &s)| o * s + if s == 1 { 0 } else { i })
        };
        let (oa, ob) = (offset(&pa) * n * k, offset(&pb) * k * p);
        for i in 0..n {
            for j in 0..p {
                out.push(
                    (0..k)
                        .map(|q| va[(oa + i * k + q) as usize] * vb[(ob + q * p + j) as usize])
                        .sum(),
                );
            }
        }
    }
    let mut shape = batch;
    if da > 1 {
        shape.push(n);
    }
    if db > 1 {
        shape.push(p);
    }
    (shape, out)
}

fn operand() -> impl Strategy<Value = (Vec<i64>, bool)> {
    (1usize..=4, any::<bool>()).prop_flat_map(|(rank, transposed)| {
        (prop::collection::vec(1i64..=3, rank), Just(transposed))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn matmul_matches_the_reference(
        (mut sa, ta) in operand(),
        (mut sb, tb) in operand(),
        k in 1i64..=5,
    ) {
        // Make the contraction sizes agree and the batch dims broadcastable.
        let (ra, rb) = (sa.len(), sb.len());
        sa[ra - 1] = k;
        if rb == 1 { sb[0] = k } else { sb[rb - 2] = k }
        let (ba, bb) = (ra.saturating_sub(2), rb.saturating_sub(2));
        for d in 0..ba.min(bb) {
            let (ia, ib) = (ba - 1 - d, bb - 1 - d);
            if sa[ia] != sb[ib] && sa[ia] != 1 && sb[ib] != 1 { sb[ib] = 1; }
        }
        // A transposed operand has the same values, stored column-major in its last two dims.
        let make = |s: &[i64], t: bool, seed| {
            let x = tensor(s, seed);
            if t && s.len() >= 2 {
                x.transpose(-1, -2).unwrap().contiguous().unwrap().transpose(-1, -2).unwrap()
            } else {
                x
            }
        };
        let (a, b) = (make(&sa, ta, 1), make(&sb, tb, 2));
        let got = functions::matmul(&a, &b).unwrap();
        let (shape, want) = naive_matmul(&a, &b);
        prop_assert_eq!(got.sizes().to_vec(), shape);
        prop_assert_eq!(values(&got), want);
    }
}

#[test]
fn addmm_family_scales_and_ignores_self_when_beta_is_zero() {
    let (a, b) = (tensor(&[3, 4], 1), tensor(&[4, 2], 2));
    let (_, ab) = naive_matmul(&a, &b);
    let c = tensor(&[3, 2], 3);
    let got = functions::addmm_with(&c, &a, &b, 0.5, 2).unwrap();
    let cv = values(&c);
    let want: Vec<f64> = cv.iter().zip(&ab).map(|(c, p)| 0.5 * c + 2.0 * p).collect();
    assert_eq!(values(&got), want);
    let nan = Tensor::full(&[3, 2], f64::NAN, ScalarType::Double).unwrap();
    let got = functions::addmm_with(&nan, &a, &b, 0, 1).unwrap();
    assert_eq!(values(&got), ab);
    // In place, with the output also an operand: formed aside, then written.
    let sq = tensor(&[3, 3], 4);
    let (_, sq2) = naive_matmul(&sq, &sq);
    sq.addmm_with_(&sq, &sq, 0, 1).unwrap();
    assert_eq!(values(&sq), sq2);
    // addbmm sums the batch of products; an empty contraction leaves beta * self.
    let (b1, b2) = (tensor(&[2, 3, 4], 5), tensor(&[2, 4, 2], 6));
    let got = functions::addbmm_with(&c, &b1, &b2, 1, 1).unwrap();
    let (_, p) = naive_matmul(&b1, &b2);
    let want: Vec<f64> = (0..6).map(|i| cv[i] + p[i] + p[i + 6]).collect();
    assert_eq!(values(&got), want);
    let empty = functions::addmm_with(&c, &tensor(&[3, 0], 0), &tensor(&[0, 2], 0), 3, 1).unwrap();
    assert_eq!(
        values(&empty),
        cv.iter().map(|v| 3.0 * v).collect::<Vec<_>>()
    );
}

#[test]
fn integer_complex_and_reduced_dtypes() {
    let a = Tensor::from_vec(vec![1i64, 2, 3, 4], &[2, 2]).unwrap();
    let got = a.mm(&a).unwrap();
    assert_eq!(got.dtype(), ScalarType::Long);
    assert_eq!(got.to_vec::<i64>().unwrap(), [7, 10, 15, 22]);
    let h = a.to_dtype(ScalarType::Half).unwrap();
    assert_eq!(values(&h.mm(&h).unwrap()), [7.0, 10.0, 15.0, 22.0]);
    let bf = a.to_dtype(ScalarType::BFloat16).unwrap();
    assert_eq!(values(&bf.mm(&bf).unwrap()), [7.0, 10.0, 15.0, 22.0]);
    let c = a.to_dtype(ScalarType::ComplexDouble).unwrap();
    assert_eq!(c.mm(&c).unwrap().dtype(), ScalarType::ComplexDouble);
    let v = Tensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap();
    assert_eq!(v.dot(&v).unwrap().to_vec::<i32>().unwrap(), [14]);
    let bools = Tensor::ones(&[2, 2], ScalarType::Bool).unwrap();
    let err = bools.mm(&bools).unwrap_err().to_string();
    assert!(
        err.contains("\"addmm_impl_cpu_\" not implemented for 'Bool'"),
        "{err}"
    );
}

/// baddbmm's reference: `beta * c + alpha * a[i] @ b[i]` per batch, from naive products.
fn naive_baddbmm(c: &Tensor, a: &Tensor, b: &Tensor, beta: f64, alpha: f64) -> Vec<f64> {
    let (_, prod) = naive_matmul(a, b);
    values(c)
        .iter()
        .zip(prod)
        .map(|(&c, p)| beta * c + alpha * p)
        .collect()
}

#[test]
fn batched_products_side_by_side_match_the_reference() {
    // Small products (side by side on the threads, one guard) with transposed batches and
    // operands, and large ones (each on all threads), for float64, float32 and complex.
    for threads in [1, 2] {
        ratten_aten::tensor_iterator::parallel::set_num_threads(threads).unwrap();
        for (batches, m, k, n) in [(33, 4, 6, 5), (3, 70, 64, 80), (1, 2, 3, 4)] {
            let a = tensor(&[m, batches, k], 1).transpose(0, 1).unwrap();
            let b = tensor(&[batches, n, k], 2).transpose(1, 2).unwrap();
            let (_, want) = naive_matmul(&a, &b);
            assert_eq!(values(&a.bmm(&b).unwrap()), want, "{batches}x{m}x{k}x{n}");
            let a32 = a.to_dtype(ScalarType::Float).unwrap();
            let b32 = b.to_dtype(ScalarType::Float).unwrap();
            assert_eq!(values(&a32.bmm(&b32).unwrap()), want);
            let ac = a.to_dtype(ScalarType::ComplexDouble).unwrap();
            let bc = b.to_dtype(ScalarType::ComplexDouble).unwrap();
            let got = ac.bmm(&bc).unwrap().to_dtype(ScalarType::Double).unwrap();
            assert_eq!(values(&got), want);
            // baddbmm reads `self`; an output that is a transposed view takes the
            // batch-by-batch path and must give the same values.
            let c = tensor(&[batches, m, n], 3);
            let got = functions::baddbmm_with(&c, &a, &b, 2, 3).unwrap();
            assert_eq!(values(&got), naive_baddbmm(&c, &a, &b, 2.0, 3.0));
            let out = Tensor::empty(&[batches, n, m], ScalarType::Double)
                .unwrap()
                .transpose(1, 2)
                .unwrap();
            functions::bmm_out(&out, &a, &b).unwrap();
            assert_eq!(values(&out), want);
        }
    }
    ratten_aten::tensor_iterator::parallel::set_num_threads(2).unwrap();
}

#[test]
fn products_split_across_threads_match_the_reference() {
    // Between the parallel threshold and the split limit, a product on two threads is split
    // into blocks of rows (m >= n) or of columns; with transposed operands and `addmm`
    // reading `self`.
    ratten_aten::tensor_iterator::parallel::set_num_threads(2).unwrap();
    for (m, k, n) in [(100, 64, 50), (70, 64, 80), (33, 100, 97)] {
        let a = tensor(&[k, m], 1).t().unwrap();
        let b = tensor(&[n, k], 2).t().unwrap();
        let (_, want) = naive_matmul(&a, &b);
        assert_eq!(values(&a.mm(&b).unwrap()), want, "{m}x{k}x{n}");
        let (a32, b32) = (
            a.to_dtype(ScalarType::Float).unwrap(),
            b.to_dtype(ScalarType::Float).unwrap(),
        );
        let got32 = values(&a32.mm(&b32).unwrap());
        assert!(got32
            .iter()
            .zip(&want)
            .all(|(g, w)| (g - w).abs() <= 1e-3 * w.abs().max(1.0)));
        let c = tensor(&[m, n], 3);
        let got = functions::addmm_with(&c, &a, &b, 2, 3).unwrap();
        let want_addmm: Vec<f64> = values(&c)
            .iter()
            .zip(&want)
            .map(|(c, p)| 2.0 * c + 3.0 * p)
            .collect();
        assert_eq!(values(&got), want_addmm);
    }
}

#[test]
fn bmm_of_many_small_products_and_shapes_on_meta() {
    // Many small products, one after the other.
    let (a, b) = (tensor(&[64, 3, 5], 7), tensor(&[64, 5, 2], 8));
    let (_, want) = naive_matmul(&a, &b);
    assert_eq!(values(&a.bmm(&b).unwrap()), want);
    let m = Tensor::empty(&[5, 2, 3], (ScalarType::Float, Device::META)).unwrap();
    let w = Tensor::empty(&[3, 4], (ScalarType::Float, Device::META)).unwrap();
    let out = functions::matmul(&m, &w).unwrap();
    assert_eq!(
        (out.sizes().to_vec(), out.device()),
        (vec![5i64, 2, 4], Device::META)
    );
    let err = functions::mm(&m.select(0, 0).unwrap(), &m.select(0, 0).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
        "{err}"
    );
}

#[test]
fn products_of_a_transposed_weight_match_the_reference() {
    // linear's layout: `x @ w.t()`, both operands contiguous along k and fewer rows than
    // columns. The product is formed column-major aside and transposed into the output
    // (Note [Operand layouts in the gemm crate]), on one thread and split across two, for
    // mm, addmm reading `self` with beta and alpha, and every dtype on the gemm crate.
    for threads in [1, 2] {
        ratten_aten::tensor_iterator::parallel::set_num_threads(threads).unwrap();
        for (m, k, n) in [(8, 200, 300), (17, 300, 130), (64, 70, 90)] {
            let x = tensor(&[m, k], 1);
            let w = tensor(&[n, k], 2);
            let wt = w.t().unwrap();
            let (_, want) = naive_matmul(&x, &wt);
            assert_eq!(values(&x.mm(&wt).unwrap()), want, "{m}x{k}x{n}");
            let c = tensor(&[m, n], 3);
            let got = functions::addmm_with(&c, &x, &wt, 0.5, 2).unwrap();
            let want_addmm: Vec<f64> = values(&c)
                .iter()
                .zip(&want)
                .map(|(c, p)| 0.5 * c + 2.0 * p)
                .collect();
            assert_eq!(values(&got), want_addmm);
            for dtype in [
                ScalarType::Float,
                ScalarType::Half,
                ScalarType::ComplexFloat,
                ScalarType::ComplexDouble,
            ] {
                let (xd, wd) = (x.to_dtype(dtype).unwrap(), wt.to_dtype(dtype).unwrap());
                let got = xd.mm(&wd).unwrap().to_dtype(ScalarType::Double).unwrap();
                // Half rounds each sum of up to 300 products of values in [-3, 3].
                let tol = if dtype == ScalarType::Half { 4.0 } else { 1e-3 };
                for (g, w) in values(&got).iter().zip(&want) {
                    assert!((g - w).abs() <= tol, "{dtype}: {g} against {w}");
                }
            }
        }
    }
    ratten_aten::tensor_iterator::parallel::set_num_threads(2).unwrap();
}
