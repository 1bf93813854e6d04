//! myops::scaled_add's autograd, generated from examples/myops/derivatives.yaml: the backward
//! node and its gradients (broadcast inputs, finite differences, double backward), the
//! in-place and out= kernels with torch's errors, forward-mode AD, and the generated code's
//! staleness.

use std::path::Path;

use myops::TensorMyopsExt;
use ratten_aten::Tensor;
use ratten_autograd::forward_ad::{dual_level, make_dual, unpack_dual};
use ratten_autograd::{ensure_initialized, grad, TensorAutogradExt};
use ratten_core::{ErrorKind, ScalarType};

fn t(v: &[f64], sizes: &[i64]) -> Tensor {
    ensure_initialized();
    Tensor::from_slice(v, sizes).unwrap()
}

fn leaf(v: &[f64], sizes: &[i64]) -> Tensor {
    let x = t(v, sizes);
    x.requires_grad_(true).unwrap();
    x
}

fn values(x: &Tensor) -> Vec<f64> {
    x.contiguous().unwrap().to_vec::<f64>().unwrap()
}

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

#[test]
fn backward_gives_both_gradients_summed_to_the_broadcast_inputs() {
    let a = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = leaf(&[10.0, 20.0, 30.0], &[3]);
    let y = a.scaled_add_with(&b, 0.5).unwrap();
    assert!(y.requires_grad() && !y.is_leaf());
    let node = y.grad_fn().expect("scaled_add records its node");
    assert_eq!(node.name(), "ScaledAddBackward0");
    // d/da of sum(w * y) is w; d/db is scale * w summed over the broadcast rows.
    let w = t(&[1.0, -1.0, 2.0, 0.5, 3.0, -2.0], &[2, 3]);
    y.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    close(&values(&a.grad_tensor().unwrap()), &values(&w), 0.0);
    let gb = b.grad_tensor().unwrap();
    assert_eq!(gb.sizes().as_slice(), &[3]);
    close(&values(&gb), &[0.75, 1.0, 0.0], 1e-15);
    // The default scale is 1.0, and only the inputs that require grad get an edge.
    let c = t(&[1.0, 1.0, 1.0], &[3]);
    let z = myops::scaled_add(&c, &b).unwrap();
    assert_eq!(z.grad_fn().unwrap().name(), "ScaledAddBackward0");
    let g = grad(
        &[z.sum().unwrap()],
        std::slice::from_ref(&b),
        &[],
        None,
        false,
        false,
    )
    .unwrap();
    close(&values(g[0].as_ref().unwrap()), &[1.0, 1.0, 1.0], 0.0);
}

#[test]
fn without_inputs_that_require_grad_nothing_is_recorded() {
    let a = t(&[1.0, 2.0], &[2]);
    let y = a.scaled_add_with(&a, 2.0).unwrap();
    assert!(!y.requires_grad());
    assert!(y.grad_fn().is_none());
    assert_eq!(values(&y), vec![3.0, 6.0]);
}

/// Central differences of `f` (a scalar function of `a` and `b`) against its gradients.
#[test]
fn gradients_match_finite_differences() {
    let scale = -1.75;
    let av = [0.3, -1.2, 2.5, 0.7, -0.4, 1.1];
    let bv = [1.5, -0.25];
    let weights = t(&[0.2, -1.0, 0.7, 1.3, -0.6, 2.0], &[3, 2]);
    // f(a, b) = sum(w * scaled_add(a, b, scale)^2): non-linear, so the gradients depend on
    // the point.
    let f = |a: &Tensor, b: &Tensor| -> Tensor {
        let y = a.scaled_add_with(b, scale).unwrap();
        y.mul(&y).unwrap().mul(&weights).unwrap().sum().unwrap()
    };
    let a = leaf(&av, &[3, 2]);
    let b = leaf(&bv, &[2]);
    let g = grad(&[f(&a, &b)], &[a, b], &[], None, false, false).unwrap();
    let (ga, gb) = (
        values(g[0].as_ref().unwrap()),
        values(g[1].as_ref().unwrap()),
    );
    let h = 1e-6;
    let value = |a: &[f64], b: &[f64]| -> f64 { values(&f(&t(a, &[3, 2]), &t(b, &[2])))[0] };
    let numeric = |x: &[f64], i: usize, at: &dyn Fn(&[f64]) -> f64| {
        let (mut plus, mut minus) = (x.to_vec(), x.to_vec());
        plus[i] += h;
        minus[i] -= h;
        (at(&plus) - at(&minus)) / (2.0 * h)
    };
    let na: Vec<f64> = (0..av.len())
        .map(|i| numeric(&av, i, &|x| value(x, &bv)))
        .collect();
    let nb: Vec<f64> = (0..bv.len())
        .map(|i| numeric(&bv, i, &|x| value(&av, x)))
        .collect();
    close(&ga, &na, 1e-6);
    close(&gb, &nb, 1e-6);
}

#[test]
fn double_backward_through_the_node() {
    // z = sum(scaled_add(x, x, s)^2) = (1 + s)^2 sum(x^2): dz/dx = 2 (1 + s)^2 x, and the
    // backward of that (with create_graph, the node's `grad * scale` records) is 2 (1 + s)^2.
    let s = 0.5;
    let x = leaf(&[1.0, -2.0, 3.0], &[3]);
    let y = x.scaled_add_with(&x, s).unwrap();
    let z = y.mul(&y).unwrap().sum().unwrap();
    let g = grad(&[z], std::slice::from_ref(&x), &[], None, true, false).unwrap();
    let g = g[0].clone().unwrap();
    assert!(g.requires_grad(), "create_graph records the backward");
    let k = 2.0 * (1.0 + s) * (1.0 + s);
    close(&values(&g), &[k, -2.0 * k, 3.0 * k], 1e-12);
    g.sum().unwrap().backward().unwrap();
    close(&values(&x.grad_tensor().unwrap()), &[k, k, k], 1e-12);
}

#[test]
fn in_place_on_a_non_leaf_rebases_its_history() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let b = leaf(&[4.0], &[1]);
    let y = x.mul_scalar(2.0).unwrap();
    let version = y.version();
    y.scaled_add_with_(&b, 3.0).unwrap();
    assert_eq!(
        y.version(),
        version + 1,
        "ADInplaceOrView bumps the version"
    );
    assert_eq!(y.grad_fn().unwrap().name(), "ScaledAddBackward0");
    assert_eq!(values(&y), vec![14.0, 16.0, 18.0]);
    y.sum().unwrap().backward().unwrap();
    close(&values(&x.grad_tensor().unwrap()), &[2.0, 2.0, 2.0], 0.0);
    close(&values(&b.grad_tensor().unwrap()), &[9.0], 0.0);
}

#[test]
fn in_place_on_a_leaf_that_requires_grad_is_refused() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let e = x.scaled_add_(&t(&[1.0, 1.0], &[2])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Runtime);
    assert_eq!(
        e.message(),
        "a leaf Variable that requires grad is being used in an in-place operation."
    );
    assert_eq!(values(&x), vec![1.0, 2.0], "nothing is written");
}

#[test]
fn out_refuses_arguments_that_require_grad() {
    let a = leaf(&[1.0, 2.0], &[2]);
    let out = Tensor::empty(&[2], ScalarType::Double).unwrap();
    let e = myops::scaled_add_out(&out, &a, &a).unwrap_err();
    assert_eq!(
        e.message(),
        "scaled_add(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
    );
    // Without grad the out= kernel writes and bumps the output's version.
    let c = t(&[1.0, 2.0], &[2]);
    let version = out.version();
    myops::scaled_add_out_with(&out, &c, &c, 2.0).unwrap();
    assert_eq!(values(&out), vec![3.0, 6.0]);
    assert_eq!(out.version(), version + 1);
}

#[test]
fn forward_mode_gives_the_tangent() {
    // Forward AD's level is process-wide; this is the file's only test that opens one.
    let level = dual_level().unwrap();
    let l = level.level();
    let x = make_dual(
        &t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]),
        &t(&[0.1, 0.2, 0.3, 0.4], &[2, 2]),
        l,
    )
    .unwrap();
    let y = make_dual(&t(&[5.0, 6.0], &[2]), &t(&[1.0, -1.0], &[2]), l).unwrap();
    let r = x.scaled_add_with(&y, 2.0).unwrap();
    let (primal, tangent) = unpack_dual(&r, l).unwrap();
    close(&values(&primal), &[11.0, 14.0, 13.0, 16.0], 0.0);
    // tangent = x_t + scale * y_t, broadcast.
    close(&values(&tangent.unwrap()), &[2.1, -1.8, 2.3, -1.6], 1e-15);
    // An input without a tangent counts as zero.
    let r = myops::scaled_add_with(&t(&[1.0, 1.0], &[2]), &y, -1.0).unwrap();
    close(
        &values(&unpack_dual(&r, l).unwrap().1.unwrap()),
        &[-1.0, 1.0],
        0.0,
    );
    // In place: the tangent of `self` becomes self_t + scale * other_t.
    let z = make_dual(&t(&[0.0, 0.0], &[2]), &t(&[1.0, 1.0], &[2]), l).unwrap();
    z.scaled_add_with_(&y, 3.0).unwrap();
    close(
        &values(&unpack_dual(&z, l).unwrap().1.unwrap()),
        &[4.0, -2.0],
        0.0,
    );
    // out= refuses tangents, as torch's out= kernels do.
    let out = Tensor::empty(&[2], ScalarType::Double).unwrap();
    let e = myops::scaled_add_out(&out, &y, &y).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplemented);
    assert_eq!(
        e.message(),
        "Trying to use forward AD with scaled_add_out that does not support it because it is an out= function"
    );
    drop(level);
}

#[test]
fn autograd_kernels_are_registered_under_myops() {
    use ratten_core::DispatchKey;
    use ratten_dispatch::Dispatcher;
    use ratten_schema::OperatorName;
    let d = Dispatcher::singleton();
    for (name, inplace_or_view) in [("", false), ("out", true)] {
        let op = d
            .find_schema(&OperatorName::new("myops::scaled_add", name))
            .expect("myops::scaled_add is defined");
        assert!(op.has_kernel_for_dispatch_key(DispatchKey::Autograd));
        assert_eq!(
            op.has_kernel_for_dispatch_key(DispatchKey::ADInplaceOrView),
            inplace_or_view
        );
    }
    assert!(
        d.static_registration_errors().is_empty(),
        "{:?}",
        d.static_registration_errors()
    );
}

#[test]
fn generated_autograd_code_is_fresh() {
    use ratten_gen::codegen::{generate_from_path, stale_files, GenOptions};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = root.join("../..");
    let mut opts = GenOptions::out_of_tree_autograd(
        "myops",
        workspace.join("crates/ratten-autograd/src/functions_manual.rs"),
        workspace.join("crates/ratten-aten/native_functions.yaml"),
    );
    opts.inherits.insert(
        "ScaledAddBase".into(),
        "crate::kernels::ScaledAddBase".into(),
    );
    opts.source_label =
        "examples/myops/native_functions.yaml and examples/myops/derivatives.yaml".into();
    let files = generate_from_path(
        &root.join("native_functions.yaml"),
        None,
        Some(&root.join("derivatives.yaml")),
        &opts,
    )
    .unwrap_or_else(|e| panic!("myops' autograd code does not generate: {e:?}"));
    let stale = stale_files(&files, &root.join("src/generated_autograd"));
    assert!(
        stale.is_empty(),
        "examples/myops/src/generated_autograd is stale: {stale:?}; see derivatives.yaml for the command"
    );
}
