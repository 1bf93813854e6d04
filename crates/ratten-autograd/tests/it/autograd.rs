//! The generated autograd kernels and nodes through the dispatcher: gradients of real
//! operators, views and in-place ops, double backward, torch's errors.

use crate::common::{close, values};
use ratten_aten::{functions as F, Tensor};
use ratten_autograd::{ensure_initialized, grad, NoGradGuard, TensorAutogradExt};
use ratten_core::TensorBase;

fn t(v: &[f64], sizes: &[i64]) -> Tensor {
    ensure_initialized();
    Tensor::from_base(TensorBase::from_slice(v, sizes).unwrap())
}

fn leaf(v: &[f64], sizes: &[i64]) -> Tensor {
    let x = t(v, sizes);
    x.requires_grad_(true).unwrap();
    x
}

#[test]
fn mul_and_sum_record_their_nodes() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = x.mul(&x).unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "MulBackward0");
    let s = y.sum().unwrap();
    assert_eq!(s.grad_fn().unwrap().name(), "SumBackward0");
    s.backward().unwrap();
    close(&values(&x.grad_tensor().unwrap()), &[2.0, 4.0, 6.0]);
}

#[test]
fn matmul_broadcasting_and_reductions() {
    let a = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = leaf(&[1.0, 0.5, -1.0], &[3, 1]);
    let y = a.mm(&b).unwrap().add(&t(&[1.0], &[1])).unwrap();
    y.mean().unwrap().backward().unwrap();
    // d mean(a@b)/da = b^T / 2 in each row; d/db = column sums of a / 2.
    close(
        &values(&a.grad_tensor().unwrap()),
        &[0.5, 0.25, -0.5, 0.5, 0.25, -0.5],
    );
    close(&values(&b.grad_tensor().unwrap()), &[2.5, 3.5, 4.5]);
}

#[test]
fn in_place_on_a_view_of_a_non_leaf_rebases_the_history() {
    // y = x.clone(); y[0].mul_(2); y.sum().backward() -> x.grad = [2, 1, 1]
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = x.clone_with(None).unwrap();
    let v = y.select(0, 0).unwrap();
    assert!(v.is_view());
    assert!(v.view_base().unwrap().is_same(&y));
    v.mul_(&t(&[2.0], &[])).unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "torch::autograd::CopySlices");
    y.sum().unwrap().backward().unwrap();
    close(&values(&x.grad_tensor().unwrap()), &[2.0, 1.0, 1.0]);
}

#[test]
fn in_place_on_a_leaf_and_modified_saved_tensors_are_refused() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let e = x.mul_(&t(&[2.0], &[])).unwrap_err();
    assert_eq!(
        e.message(),
        "a leaf Variable that requires grad is being used in an in-place operation."
    );
    let v = x.select(0, 0).unwrap();
    let e = v.mul_(&t(&[2.0], &[])).unwrap_err();
    assert_eq!(
        e.message(),
        "a view of a leaf Variable that requires grad is being used in an in-place operation."
    );
    let y = x.exp().unwrap();
    let z = y.mul(&y).unwrap();
    y.mul_(&t(&[2.0], &[])).unwrap();
    let e = z.sum().unwrap().backward().unwrap_err();
    assert!(
        e.message().starts_with(
            "one of the variables needed for gradient computation has been modified by an \
             inplace operation: [torch.DoubleTensor [2]], which is output 0 of Mul, is \
             at version 1; expected version 0 instead."
        ),
        "{}",
        e.message()
    );
}

#[test]
fn double_backward_through_the_generated_nodes() {
    let x = leaf(&[1.5, -2.0], &[2]);
    let y = x.mul(&x).unwrap().mul(&x).unwrap().sum().unwrap(); // sum x^3
    let g = grad(&[y], std::slice::from_ref(&x), &[], None, true, false).unwrap();
    let g = g[0].clone().unwrap();
    close(&values(&g), &[3.0 * 2.25, 3.0 * 4.0]);
    assert!(g.requires_grad());
    let gg = grad(
        &[g.sum().unwrap()],
        std::slice::from_ref(&x),
        &[],
        None,
        false,
        false,
    )
    .unwrap();
    close(&values(gg[0].as_ref().unwrap()), &[6.0 * 1.5, 6.0 * -2.0]);
}

#[test]
fn views_record_their_base_and_share_the_version() {
    let base = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let v = base.transpose(0, 1).unwrap();
    assert!(v.is_view() && v.view_base().unwrap().is_same(&base));
    let vv = v.select(0, 1).unwrap();
    assert!(
        vv.view_base().unwrap().is_same(&base),
        "_base is never a view"
    );
    assert!(!base.is_view() && base.view_base().is_none());
    let before = base.version();
    vv.mul_(&t(&[3.0], &[])).unwrap();
    assert_eq!(base.version(), before + 1);
    let nograd = {
        let _g = NoGradGuard::new();
        let x = leaf(&[1.0, 2.0], &[2]);
        let y = x.mul(&t(&[1.0], &[])).unwrap();
        assert!(!y.requires_grad());
        x
    };
    assert!(nograd.requires_grad());
}

#[test]
fn integer_outputs_and_non_differentiable_ops_carry_no_history() {
    let x = leaf(&[3.0, 1.0, 2.0], &[3]);
    let idx = x.argmax_with(None, false).unwrap();
    assert!(!idx.requires_grad() && idx.grad_fn().is_none());
    let (values_, indices) = x.max_dim_with(0, false).unwrap();
    assert_eq!(values_.grad_fn().unwrap().name(), "MaxBackward0");
    assert!(indices.grad_fn().is_none());
    values_.backward().unwrap();
    close(&values(&x.grad_tensor().unwrap()), &[1.0, 0.0, 0.0]);
    let _ = F::zeros(&[1]).unwrap();
}
