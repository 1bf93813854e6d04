//! The engine, saved variables, hooks and grad mode on hand-built nodes (the generated nodes
//! are tested in autograd.rs).

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common::values;
use ratten_aten::Tensor;
use ratten_autograd::function::{copy_range, defined, IndexRangeGenerator};
use ratten_autograd::variable_type_utils::{collect_next_edges, set_history};
use ratten_autograd::{
    backward, grad, GradMode, NoGradGuard, Node, NodeBase, SavedVariable, TensorAutogradExt,
    VariableList,
};
use ratten_core::{Result, TensorBase};

fn t(v: &[f64]) -> Tensor {
    Tensor::from_base(TensorBase::from_slice(v, &[v.len() as i64]).unwrap())
}

/// `a * b` with its gradient, written as a generated node would be.
struct MulNode {
    base: NodeBase,
    a: SavedVariable,
    b: SavedVariable,
}

impl Node for MulNode {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("MulBackward0")
    }
    fn base(&self) -> &NodeBase {
        &self.base
    }
    fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList> {
        let this: Arc<dyn Node> = self.clone();
        let mut gen = IndexRangeGenerator::new();
        let a_ix = gen.range(1);
        let b_ix = gen.range(1);
        let mut out = vec![None; gen.size()];
        let g = defined(&grads[0])?;
        if self.base.should_compute_output(a_ix) {
            copy_range(&mut out, a_ix, Some(g.mul(&self.b.unpack(&this)?)?));
        }
        if self.base.should_compute_output(b_ix) {
            copy_range(&mut out, b_ix, Some(g.mul(&self.a.unpack(&this)?)?));
        }
        Ok(out)
    }
    fn release_variables(&self) {
        self.a.reset_data();
        self.b.reset_data();
    }
}

/// Records `a * b` (the shape of a generated Autograd kernel).
fn mul(a: &Tensor, b: &Tensor) -> Tensor {
    let result = {
        let _g = NoGradGuard::new();
        a.mul(b).unwrap()
    };
    if GradMode::is_enabled() && (a.requires_grad() || b.requires_grad()) {
        let node: Arc<dyn Node> = Arc::new(MulNode {
            base: NodeBase::new(collect_next_edges(&[Some(a), Some(b)])),
            a: SavedVariable::new(a, false),
            b: SavedVariable::new(b, false),
        });
        set_history(&[Some(&result)], &node).unwrap();
    }
    result
}

fn sum_all(x: &Tensor) -> Tensor {
    // sum = x . ones, recorded as a mul by a constant then reduced through a node of its own.
    struct SumNode {
        base: NodeBase,
        sizes: Vec<i64>,
    }
    impl Node for SumNode {
        fn name(&self) -> Cow<'static, str> {
            Cow::Borrowed("SumBackward0")
        }
        fn base(&self) -> &NodeBase {
            &self.base
        }
        fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList> {
            Ok(vec![Some(defined(&grads[0])?.expand(&self.sizes)?)])
        }
    }
    let result = {
        let _g = NoGradGuard::new();
        x.sum().unwrap()
    };
    if GradMode::is_enabled() && x.requires_grad() {
        let node: Arc<dyn Node> = Arc::new(SumNode {
            base: NodeBase::new(collect_next_edges(&[Some(x)])),
            sizes: x.sizes().to_vec(),
        });
        set_history(&[Some(&result)], &node).unwrap();
    }
    result
}

#[test]
fn backward_accumulates_into_leaves_in_dependency_order() {
    let x = t(&[1.0, 2.0, 3.0]);
    x.requires_grad_(true).unwrap();
    assert!(x.is_leaf() && x.requires_grad());
    let y = mul(&x, &x); // x^2
    let z = mul(&y, &x); // x^3
    assert_eq!(z.grad_fn().unwrap().name(), "MulBackward0");
    assert!(!z.is_leaf());
    sum_all(&z).backward().unwrap();
    assert_eq!(values(&x.grad_tensor().unwrap()), vec![3.0, 12.0, 27.0]);
    // A second backward through a fresh graph accumulates.
    sum_all(&mul(&x, &x)).backward().unwrap();
    assert_eq!(values(&x.grad_tensor().unwrap()), vec![5.0, 16.0, 33.0]);
}

#[test]
fn a_freed_graph_refuses_a_second_backward_unless_retained() {
    let x = t(&[2.0]);
    x.requires_grad_(true).unwrap();
    let s = sum_all(&mul(&x, &x));
    s.backward_with(None, Some(true), false, &[]).unwrap();
    s.backward().unwrap();
    let e = s.backward().unwrap_err();
    assert!(e
        .message()
        .starts_with("Trying to backward through the graph a second time"));
    assert_eq!(values(&x.grad_tensor().unwrap()), vec![8.0]);
}

#[test]
fn grad_returns_gradients_without_accumulating() {
    let x = t(&[1.0, 2.0]);
    let w = t(&[3.0, 4.0]);
    x.requires_grad_(true).unwrap();
    w.requires_grad_(true).unwrap();
    let s = sum_all(&mul(&x, &w));
    let g = grad(&[s], std::slice::from_ref(&w), &[], None, false, false).unwrap();
    assert_eq!(values(g[0].as_ref().unwrap()), vec![1.0, 2.0]);
    assert!(x.grad().is_none() && w.grad().is_none());
    let unused = t(&[0.0]);
    unused.requires_grad_(true).unwrap();
    let s = sum_all(&mul(&x, &w));
    let e = grad(
        std::slice::from_ref(&s),
        std::slice::from_ref(&unused),
        &[],
        Some(true),
        false,
        false,
    )
    .unwrap_err();
    assert!(e
        .message()
        .contains("appears to not have been used in the graph"));
    let g = grad(&[s], &[unused], &[], None, false, true).unwrap();
    assert!(g[0].is_none());
}

#[test]
fn saved_variables_check_their_version() {
    let x = t(&[1.0, 2.0]);
    x.requires_grad_(true).unwrap();
    let a = t(&[5.0, 6.0]);
    let y = mul(&x, &a);
    a.bump_version();
    let e = sum_all(&y).backward().unwrap_err();
    assert!(
        e.message().starts_with(
            "one of the variables needed for gradient computation has been modified by an \
             inplace operation: [torch.DoubleTensor [2]] is at version 1; expected version 0"
        ),
        "{}",
        e.message()
    );
}

#[test]
fn hooks_see_and_replace_gradients() {
    let x = t(&[1.0, 2.0]);
    x.requires_grad_(true).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    x.register_hook(Arc::new(move |g: &Tensor| {
        c.fetch_add(1, Ordering::SeqCst);
        Ok(Some(g.mul(&t(&[10.0, 10.0]))?))
    }))
    .unwrap();
    let y = mul(&x, &x);
    y.retain_grad().unwrap();
    sum_all(&y).backward().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(values(&x.grad_tensor().unwrap()), vec![20.0, 40.0]);
    assert_eq!(values(&y.grad_tensor().unwrap()), vec![1.0, 1.0]);
}

#[test]
fn requires_grad_rules() {
    let i = Tensor::from_base(TensorBase::from_slice(&[1i64], &[1]).unwrap());
    let e = i.requires_grad_(true).unwrap_err();
    assert_eq!(
        e.message(),
        "only Tensors of floating point and complex dtype can require gradients"
    );
    let x = t(&[1.0]);
    x.requires_grad_(true).unwrap();
    let y = mul(&x, &x);
    let e = y.requires_grad_(false).unwrap_err();
    assert!(e
        .message()
        .starts_with("you can only change requires_grad flags of leaf variables."));
    {
        let _g = NoGradGuard::new();
        assert!(!mul(&x, &x).requires_grad());
    }
    let e = backward(&[t(&[1.0])], &[], None, false, &[]).unwrap_err();
    assert_eq!(
        e.message(),
        "element 0 of tensors does not require grad and does not have a grad_fn"
    );
    let e = mul(&x, &t(&[1.0, 2.0])).backward().unwrap_err();
    assert_eq!(
        e.message(),
        "grad can be implicitly created only for scalar outputs"
    );
}

#[test]
fn graphs_are_freed_with_their_tensors() {
    struct Probe {
        base: NodeBase,
        drops: Arc<AtomicUsize>,
    }
    impl Node for Probe {
        fn name(&self) -> Cow<'static, str> {
            Cow::Borrowed("Probe")
        }
        fn base(&self) -> &NodeBase {
            &self.base
        }
        fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList> {
            Ok(grads)
        }
    }
    impl Drop for Probe {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let x = t(&[1.0]);
    x.requires_grad_(true).unwrap();
    for _ in 0..100 {
        let y = mul(&x, &x);
        let p: Arc<dyn Node> = Arc::new(Probe {
            base: NodeBase::new(collect_next_edges(&[Some(&y)])),
            drops: drops.clone(),
        });
        let z = t(&[0.0]);
        set_history(&[Some(&z)], &p).unwrap();
        z.backward().unwrap();
    }
    assert_eq!(drops.load(Ordering::SeqCst), 100);
    assert_eq!(values(&x.grad_tensor().unwrap()), vec![200.0]);
}
