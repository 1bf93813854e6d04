//! User-defined functions (`custom_function::Function`): forward, backward, saved tensors,
//! needs_input_grad, mark_dirty, mark_non_differentiable.

use crate::common::values;
use ratten_aten::Tensor;
use ratten_autograd::custom_function::{apply, AutogradContext, Function};
use ratten_autograd::{ensure_initialized, TensorAutogradExt};
use ratten_core::{Result, TensorBase};

fn t(v: &[f64]) -> Tensor {
    ensure_initialized();
    Tensor::from_base(TensorBase::from_slice(v, &[v.len() as i64]).unwrap())
}

/// `exp` with its derivative from the saved output, as PyTorch's custom-function example.
struct Exp;

impl Function for Exp {
    fn name() -> &'static str {
        "Exp"
    }
    fn forward(ctx: &mut AutogradContext, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let r = inputs[0].exp()?;
        ctx.save_for_backward(std::slice::from_ref(&r));
        Ok(vec![r])
    }
    fn backward(ctx: &mut AutogradContext, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let saved = ctx.get_saved_variables()?;
        Ok(vec![g[0].as_ref().map(|g| g.mul(&saved[0])).transpose()?])
    }
}

/// `a * b`, differentiable in `a` only; also returns a non-differentiable mask.
struct ScaleAndMask;

impl Function for ScaleAndMask {
    fn name() -> &'static str {
        "ScaleAndMask"
    }
    fn forward(ctx: &mut AutogradContext, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        assert!(ctx.needs_input_grad(0) && !ctx.needs_input_grad(1));
        let out = inputs[0].mul(&inputs[1])?;
        let mask = out.gt_scalar(0.0)?;
        ctx.mark_non_differentiable(std::slice::from_ref(&mask));
        ctx.save_for_backward(&[inputs[1].clone()]);
        Ok(vec![out, mask])
    }
    fn backward(ctx: &mut AutogradContext, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let b = ctx.get_saved_variables()?.remove(0);
        Ok(vec![g[0].as_ref().map(|g| g.mul(&b)).transpose()?, None])
    }
}

#[test]
fn a_custom_function_records_its_node() {
    let x = t(&[0.0, 1.0]);
    x.requires_grad_(true).unwrap();
    let y = apply::<Exp>(std::slice::from_ref(&x)).unwrap().remove(0);
    assert_eq!(y.grad_fn().unwrap().name(), "ExpBackward");
    y.sum().unwrap().backward().unwrap();
    let g = values(&x.grad_tensor().unwrap());
    assert!((g[0] - 1.0).abs() < 1e-12 && (g[1] - std::f64::consts::E).abs() < 1e-12);
}

#[test]
fn non_differentiable_outputs_and_inputs_without_grad() {
    let a = t(&[1.0, -2.0]);
    a.requires_grad_(true).unwrap();
    let b = t(&[3.0, 4.0]);
    let mut outs = apply::<ScaleAndMask>(&[a.clone(), b]).unwrap();
    let mask = outs.pop().unwrap();
    let out = outs.pop().unwrap();
    assert!(!mask.requires_grad() && out.requires_grad());
    out.sum().unwrap().backward().unwrap();
    assert_eq!(values(&a.grad_tensor().unwrap()), vec![3.0, 4.0]);
    // Without an input requiring grad nothing is recorded.
    let plain = apply::<Exp>(&[t(&[0.0])]).unwrap().remove(0);
    assert!(plain.grad_fn().is_none());
}
