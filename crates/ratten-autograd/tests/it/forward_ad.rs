//! Forward-mode AD: dual tensors, tangents propagated by the generated kernels from
//! derivatives.yaml's `result:` formulas, views and in-place operators, and torch's errors.

use crate::common::{close, values};
use ratten_aten::Tensor;
use ratten_autograd::forward_ad::{
    dual_level, enter_dual_level, exit_dual_level, make_dual, unpack_dual,
};
use ratten_core::TensorBase;

fn t(v: &[f64], sizes: &[i64]) -> Tensor {
    ratten_autograd::ensure_initialized();
    ratten_autograd::ensure_linked();
    Tensor::from_base(TensorBase::from_slice(v, sizes).unwrap())
}

/// Forward AD is process-wide: the tests that open a level run one at a time.
static LEVEL_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LEVEL_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The tangent of `f` at `x` in direction `v`, by central differences.
fn finite_jvp(f: &dyn Fn(&Tensor) -> Tensor, x: &[f64], v: &[f64], sizes: &[i64]) -> Vec<f64> {
    let h = 1e-6;
    let plus: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + h * b).collect();
    let minus: Vec<f64> = x.iter().zip(v).map(|(a, b)| a - h * b).collect();
    let fp = values(&f(&t(&plus, sizes)));
    let fm = values(&f(&t(&minus, sizes)));
    fp.iter()
        .zip(&fm)
        .map(|(a, b)| (a - b) / (2.0 * h))
        .collect()
}

fn check_jvp(name: &str, f: &dyn Fn(&Tensor) -> Tensor, x: &[f64], v: &[f64], sizes: &[i64]) {
    let expected = finite_jvp(f, x, v, sizes);
    let _g = lock();
    let level = dual_level().unwrap();
    let d = make_dual(&t(x, sizes), &t(v, sizes), level.level()).unwrap();
    let (_, tangent) = unpack_dual(&f(&d), level.level()).unwrap();
    let tangent = tangent.unwrap_or_else(|| panic!("{name}: no tangent"));
    let got = values(&tangent);
    for (g, e) in got.iter().zip(&expected) {
        assert!(
            (g - e).abs() < 1e-5 * (1.0 + e.abs()),
            "{name}: {got:?} vs {expected:?}"
        );
    }
}

#[test]
fn tangents_follow_the_formulas() {
    let x = [0.5, -1.25, 2.0, 0.75, 1.5, -0.5];
    let v = [1.0, 0.5, -2.0, 0.25, -1.0, 3.0];
    let s = [2, 3];
    check_jvp("mul", &|a| a.mul(a).unwrap(), &x, &v, &s);
    check_jvp("exp", &|a| a.exp().unwrap(), &x, &v, &s);
    check_jvp(
        "sin/tanh",
        &|a| a.sin().unwrap().tanh().unwrap(),
        &x,
        &v,
        &s,
    );
    check_jvp(
        "sum.dim",
        &|a| a.sum_dim_int_list(Some(&[1])).unwrap(),
        &x,
        &v,
        &s,
    );
    check_jvp("mm", &|a| a.mm(&a.t().unwrap()).unwrap(), &x, &v, &s);
    check_jvp(
        "softmax",
        &|a| ratten_aten::functions::softmax(a, 1).unwrap(),
        &x,
        &v,
        &s,
    );
    check_jvp(
        "transpose view",
        &|a| a.t().unwrap().mul(&a.t().unwrap()).unwrap(),
        &x,
        &v,
        &s,
    );
    check_jvp("div", &|a| a.div(&a.exp().unwrap()).unwrap(), &x, &v, &s);
}

#[test]
fn in_place_ops_update_the_tangent() {
    let _g = lock();
    let level = dual_level().unwrap();
    let x = t(&[1.0, 2.0, 3.0], &[3]);
    let d = make_dual(&x, &t(&[1.0, 1.0, 1.0], &[3]), 0).unwrap();
    let y = ratten_aten::functions::clone(&d).unwrap();
    y.mul_(&d).unwrap();
    let (_, ty) = unpack_dual(&y, level.level()).unwrap();
    close(&values(&ty.unwrap()), &[2.0, 4.0, 6.0]);

    // An in-place op on a view of a tensor without tangent gives the base one.
    let b = t(&[0.0; 6], &[2, 3]);
    let row = b.select(0, 0).unwrap();
    row.copy_(&d).unwrap();
    let (_, tb) = unpack_dual(&b, 0).unwrap();
    close(&values(&tb.unwrap()), &[1.0, 1.0, 1.0, 0.0, 0.0, 0.0]);
    // A view made before gets the base's tangent when asked.
    let b2 = t(&[0.0; 6], &[2, 3]);
    let other_row = b2.select(0, 1).unwrap();
    b2.select(0, 0).unwrap().add_(&d).unwrap();
    let (_, tv) = unpack_dual(&other_row, 0).unwrap();
    close(&values(&tv.unwrap()), &[0.0, 0.0, 0.0]);
}

#[test]
fn leaving_the_level_drops_the_tangents() {
    let _g = lock();
    let x = t(&[1.0, 2.0], &[2]);
    let tangent = t(&[1.0, 1.0], &[2]);
    let level = enter_dual_level().unwrap();
    let d = make_dual(&x, &tangent, level).unwrap();
    let (_, got) = unpack_dual(&d, level).unwrap();
    assert!(got.unwrap().is_same(&tangent));
    assert_eq!(
        enter_dual_level().unwrap_err().to_string(),
        "Nested forward mode AD is not supported at the moment"
    );
    exit_dual_level(level).unwrap();
    assert!(d.fw_grad(0).is_none());
    let (p, t2) = unpack_dual(&d, 0).unwrap();
    assert!(t2.is_none() && p.is_same(&d));
}

#[test]
fn torch_errors() {
    let _g = lock();
    let x = t(&[1.0, 2.0], &[2]);
    let e = make_dual(&x, &x, 0).unwrap_err().to_string();
    assert!(e.contains("no level exists"), "{e}");
    let level = dual_level().unwrap();
    let e = make_dual(&x, &t(&[1.0], &[1]), 0).unwrap_err().to_string();
    assert_eq!(e, "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size [2] while the given forward gradient is of size [1].");
    let ints = Tensor::from_base(TensorBase::from_slice(&[1i64, 2], &[2]).unwrap());
    let e = make_dual(&ints, &x, 0).unwrap_err().to_string();
    assert_eq!(
        e,
        "Expected primal to be floating point or complex, but got: int64"
    );
    let d = make_dual(&x, &x, level.level()).unwrap();
    let e = make_dual(&d, &x, 0).unwrap_err().to_string();
    assert!(
        e.starts_with("Making a dual Tensor based on a Tensor that already has a forward gradient"),
        "{e}"
    );
    let out = t(&[0.0, 0.0], &[2]);
    let e = ratten_aten::operators::mul_out::call(&d, &d, &out).unwrap_err();
    assert_eq!(e.kind(), ratten_core::ErrorKind::NotImplemented);
    assert_eq!(e.message(), "Trying to use forward AD with mul_out that does not support it because it is an out= function");
}

struct Cube;

impl ratten_autograd::custom_function::Function for Cube {
    fn name() -> &'static str {
        "Cube"
    }
    fn forward(
        ctx: &mut ratten_autograd::custom_function::AutogradContext,
        inputs: &[Tensor],
    ) -> ratten_core::Result<Vec<Tensor>> {
        ctx.save_for_backward(&inputs[..1]);
        ctx.saved_data
            .insert("x".into(), Box::new(inputs[0].clone()));
        Ok(vec![inputs[0].mul(&inputs[0])?.mul(&inputs[0])?])
    }
    fn backward(
        ctx: &mut ratten_autograd::custom_function::AutogradContext,
        grads: Vec<Option<Tensor>>,
    ) -> ratten_core::Result<Vec<Option<Tensor>>> {
        let x = &ctx.get_saved_variables()?[0];
        let g = grads[0].clone().unwrap();
        Ok(vec![Some(g.mul(&x.mul(x)?.mul_scalar(3.0)?)?)])
    }
    fn jvp(
        ctx: &mut ratten_autograd::custom_function::AutogradContext,
        tangents: Vec<Option<Tensor>>,
    ) -> ratten_core::Result<Vec<Option<Tensor>>> {
        let x = ctx.saved_data["x"]
            .downcast_ref::<Tensor>()
            .unwrap()
            .clone();
        let t = tangents[0].clone().unwrap();
        Ok(vec![Some(t.mul(&x.mul(&x)?.mul_scalar(3.0)?)?)])
    }
}

struct NoJvp;

impl ratten_autograd::custom_function::Function for NoJvp {
    fn name() -> &'static str {
        "NoJvp"
    }
    fn forward(
        _ctx: &mut ratten_autograd::custom_function::AutogradContext,
        inputs: &[Tensor],
    ) -> ratten_core::Result<Vec<Tensor>> {
        Ok(vec![inputs[0].mul_scalar(2.0)?])
    }
    fn backward(
        _ctx: &mut ratten_autograd::custom_function::AutogradContext,
        grads: Vec<Option<Tensor>>,
    ) -> ratten_core::Result<Vec<Option<Tensor>>> {
        Ok(vec![grads[0]
            .as_ref()
            .map(|g| g.mul_scalar(2.0))
            .transpose()?])
    }
}

#[test]
fn custom_functions_give_tangents_through_jvp() {
    use ratten_autograd::custom_function::apply;
    let _g = lock();
    let level = dual_level().unwrap();
    let d = make_dual(&t(&[1.0, 2.0], &[2]), &t(&[1.0, 0.5], &[2]), level.level()).unwrap();
    let y = apply::<Cube>(std::slice::from_ref(&d)).unwrap();
    let (_, ty) = unpack_dual(&y[0], 0).unwrap();
    close(&values(&ty.unwrap()), &[3.0, 6.0]);
    let e = apply::<NoJvp>(&[d]).unwrap_err();
    assert!(
        e.message()
            .starts_with("You must implement the jvp function"),
        "{e}"
    );
}
