//! Binary pointwise operators (BinaryOps.cpp) with PyTorch's meta/impl split.
//!
//! Each structured operator has
//! - a **meta** function `<name>_meta(m, args..) -> Result<TensorIteratorBase>` that checks the
//!   arguments and builds the TensorIterator, announcing outputs to `m` (the generated
//!   functional / in-place / out= wrapper of `crate::structured`);
//! - an **impl** function `<name>_out_impl(iter, args..)` that runs the DispatchStub on the
//!   built iterator;
//! - convenience front ends for the three variants (`add`, `add_`, `add_out`), which run
//!   meta + impl through `StructuredFunctional` / `StructuredInplace` / `StructuredOut` exactly
//!   as the generated code does. Scalar overloads wrap the number (`wrapped_scalar_tensor`).

use ratten_core::{Device, Error, Result, Scalar, ScalarType, TensorBase};

use crate::dispatch_stub::DispatchStub;
use crate::native::cpu::binary_kernels::{
    BinaryFn, ADD_STUB, BITWISE_AND_STUB, BITWISE_OR_STUB, BITWISE_XOR_STUB, DIV_FLOOR_STUB,
    DIV_TRUE_STUB, DIV_TRUNC_STUB, EQ_STUB, FMOD_STUB, GE_STUB, GT_STUB, LE_STUB, LOGICAL_AND_STUB,
    LOGICAL_OR_STUB, LOGICAL_XOR_STUB, LT_STUB, MAXIMUM_STUB, MINIMUM_STUB, MUL_STUB, NE_STUB,
    POW_STUB, REMAINDER_STUB,
};
use crate::structured::{MetaBase, StructuredFunctional, StructuredInplace, StructuredOut};
use crate::tensor_iterator::{
    binary_float_op_config, binary_op_config, comparison_op_config, TensorIteratorBase,
};
use crate::Tensor;

/// A meta function: builds the iterator, announcing outputs to the wrapper.
pub type MetaFn<'a> = dyn FnOnce(&mut dyn MetaBase) -> Result<TensorIteratorBase> + 'a;
/// An impl function: runs the kernel on the built iterator.
pub type ImplFn<'a> = dyn FnOnce(&TensorIteratorBase) -> Result<()> + 'a;

/// The functional variant (what the generated code does for `add.Tensor`).
pub fn run_functional(meta: Box<MetaFn<'_>>, imp: Box<ImplFn<'_>>) -> Result<Tensor> {
    let mut m = StructuredFunctional::new(1);
    let iter = meta(&mut m)?;
    imp(&iter)?;
    m.take(0)
}

/// The in-place variant (`add_.Tensor`): the output is `self`.
pub fn run_inplace(self_: &Tensor, meta: Box<MetaFn<'_>>, imp: Box<ImplFn<'_>>) -> Result<Tensor> {
    let mut m = StructuredInplace::new(&[self_]);
    let iter = meta(&mut m)?;
    imp(&iter)?;
    m.finish()?;
    Ok(self_.clone())
}

/// The out= variant (`add.out`).
pub fn run_out(out: &Tensor, meta: Box<MetaFn<'_>>, imp: Box<ImplFn<'_>>) -> Result<Tensor> {
    let mut m = StructuredOut::new(&[out]);
    let iter = meta(&mut m)?;
    imp(&iter)?;
    m.finish()?;
    Ok(out.clone())
}

/// The output the wrapper already has (`maybe_get_output()`), as the iterator's operand.
pub fn given_output(m: &dyn MetaBase) -> Option<TensorBase> {
    m.maybe_get_output(0).map(|t| t.base().clone())
}

/// `wrapped_scalar_tensor(s)` on the CPU.
pub fn wrap_scalar(s: &Scalar) -> Result<Tensor> {
    Tensor::wrapped_scalar_tensor(*s, Device::CPU)
}

/// Runs a stub for the iterator's device.
pub fn call_stub(stub: &DispatchStub<BinaryFn>, iter: &TensorIteratorBase) -> Result<()> {
    (stub.get(iter.device_type())?)(iter)
}

/// `alpha_check` (BinaryOps.h), on the iterator's common dtype.
pub fn alpha_check(dtype: ScalarType, alpha: &Scalar) -> Result<()> {
    if alpha.is_boolean() && dtype != ScalarType::Bool {
        return Err(Error::runtime(
            "Boolean alpha only supported for Boolean results.",
        ));
    }
    if !(dtype.is_floating_point() || dtype.is_complex() || alpha.is_integral(true)) {
        return Err(Error::runtime(
            "For integral input tensors, argument alpha must not be a floating point number.",
        ));
    }
    if !dtype.is_complex() && alpha.is_complex() {
        return Err(Error::runtime(
            "For non-complex input tensors, argument alpha must not be a complex number.",
        ));
    }
    Ok(())
}

/// `sub_check` (BinaryOps.h): NotImplementedError for bool operands.
pub fn sub_check(self_: &TensorBase, other: &TensorBase) -> Result<()> {
    if self_.dtype() == ScalarType::Bool && other.dtype() == ScalarType::Bool {
        return Err(Error::not_implemented(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` \
             or `logical_xor()` operator instead.",
        ));
    }
    if self_.dtype() == ScalarType::Bool || other.dtype() == ScalarType::Bool {
        return Err(Error::not_implemented(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are \
             trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// add / sub / rsub / mul / div
// ---------------------------------------------------------------------------------------------

/// `TORCH_META_FUNC2(add, Tensor)`.
pub fn add_tensor_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    other: &Tensor,
    alpha: &Scalar,
) -> Result<TensorIteratorBase> {
    let out = given_output(m);
    let iter = binary_op_config(out.as_ref(), self_, other)?.build(m)?;
    alpha_check(iter.computation_dtype()?, alpha)?;
    Ok(iter)
}

/// `TORCH_IMPL_FUNC(add_out)`.
pub fn add_out_impl(iter: &TensorIteratorBase, alpha: &Scalar) -> Result<()> {
    (ADD_STUB.get(iter.device_type())?)(iter, alpha)
}

/// `TORCH_META_FUNC2(sub, Tensor)`.
pub fn sub_tensor_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    other: &Tensor,
    alpha: &Scalar,
) -> Result<TensorIteratorBase> {
    sub_check(self_, other)?;
    add_tensor_meta(m, self_, other, alpha)
}

/// `TORCH_IMPL_FUNC(sub_out)`: `add_stub` with `-alpha`.
pub fn sub_out_impl(iter: &TensorIteratorBase, alpha: &Scalar) -> Result<()> {
    add_out_impl(iter, &alpha.neg()?)
}

/// `TORCH_META_FUNC2(mul, Tensor)`.
pub fn mul_tensor_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    other: &Tensor,
) -> Result<TensorIteratorBase> {
    let out = given_output(m);
    binary_op_config(out.as_ref(), self_, other)?.build(m)
}

/// `TORCH_META_FUNC2(div, Tensor_mode)` (and `div.Tensor` with `None`).
pub fn div_tensor_mode_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    other: &Tensor,
    rounding_mode: Option<&str>,
) -> Result<TensorIteratorBase> {
    let out = given_output(m);
    match rounding_mode {
        None => binary_float_op_config(out.as_ref(), self_, other)?.build(m),
        Some("trunc") | Some("floor") => binary_op_config(out.as_ref(), self_, other)?.build(m),
        Some(mode) => Err(Error::runtime(format!(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found \
             '{mode}'"
        ))),
    }
}

/// `TORCH_IMPL_FUNC(div_out_mode)`.
pub fn div_out_mode_impl(iter: &TensorIteratorBase, rounding_mode: Option<&str>) -> Result<()> {
    match rounding_mode {
        None => call_stub(&DIV_TRUE_STUB, iter),
        Some("trunc") => call_stub(&DIV_TRUNC_STUB, iter),
        _ => call_stub(&DIV_FLOOR_STUB, iter),
    }
}

/// A meta that builds `BINARY_OP_CONFIG` (mul, remainder, fmod, pow, bitwise ops).
pub fn binary_op_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    other: &Tensor,
) -> Result<TensorIteratorBase> {
    let out = given_output(m);
    binary_op_config(out.as_ref(), self_, other)?.build(m)
}

/// `TORCH_META_FUNC(maximum)` / `minimum`: no complex.
pub fn max_min_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    other: &Tensor,
    name: &str,
) -> Result<TensorIteratorBase> {
    if self_.dtype().is_complex() || other.dtype().is_complex() {
        return Err(Error::runtime(format!(
            "{name} not implemented for complex tensors."
        )));
    }
    binary_op_meta(m, self_, other)
}

/// `build_borrowing_comparison_op` (eq, ne, lt, le, gt, ge, and the logical ops).
pub fn comparison_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    other: &Tensor,
) -> Result<TensorIteratorBase> {
    let out = given_output(m);
    comparison_op_config(out.as_ref(), self_, other)?.build(m)
}

// ---------------------------------------------------------------------------------------------
// Front ends
// ---------------------------------------------------------------------------------------------

/// Which variant a front end runs.
#[derive(Clone, Copy)]
enum Variant<'a> {
    Functional,
    Inplace,
    Out(&'a Tensor),
}

fn run<'a>(
    v: Variant<'_>,
    self_: &Tensor,
    meta: Box<MetaFn<'a>>,
    imp: Box<ImplFn<'a>>,
) -> Result<Tensor> {
    match v {
        Variant::Functional => run_functional(meta, imp),
        Variant::Inplace => run_inplace(self_, meta, imp),
        Variant::Out(o) => run_out(o, meta, imp),
    }
}

fn add_v(v: Variant<'_>, a: &Tensor, b: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    run(
        v,
        a,
        Box::new(|m| add_tensor_meta(m, a, b, alpha)),
        Box::new(|it| add_out_impl(it, alpha)),
    )
}
fn sub_v(v: Variant<'_>, a: &Tensor, b: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    run(
        v,
        a,
        Box::new(|m| sub_tensor_meta(m, a, b, alpha)),
        Box::new(|it| sub_out_impl(it, alpha)),
    )
}
fn stub_v(
    v: Variant<'_>,
    a: &Tensor,
    b: &Tensor,
    meta: fn(&mut dyn MetaBase, &Tensor, &Tensor) -> Result<TensorIteratorBase>,
    stub: &'static DispatchStub<BinaryFn>,
) -> Result<Tensor> {
    run(
        v,
        a,
        Box::new(move |m| meta(m, a, b)),
        Box::new(move |it| call_stub(stub, it)),
    )
}
fn div_v(v: Variant<'_>, a: &Tensor, b: &Tensor, mode: Option<&str>) -> Result<Tensor> {
    run(
        v,
        a,
        Box::new(move |m| div_tensor_mode_meta(m, a, b, mode)),
        Box::new(move |it| div_out_mode_impl(it, mode)),
    )
}

/// Defines the functional / in-place / out= front ends of a two-tensor operator and its
/// Scalar overloads.
macro_rules! binary_front_ends {
    ($(#[$doc:meta])* $name:ident, $name_:ident, $name_out:ident, $name_s:ident, $name_s_:ident,
     |$v:ident, $a:ident, $b:ident| $body:expr) => {
        $(#[$doc])*
        pub fn $name($a: &Tensor, $b: &Tensor) -> Result<Tensor> {
            let $v = Variant::Functional;
            $body
        }
        /// In-place variant.
        pub fn $name_($a: &Tensor, $b: &Tensor) -> Result<Tensor> {
            let $v = Variant::Inplace;
            $body
        }
        /// out= variant.
        pub fn $name_out($a: &Tensor, $b: &Tensor, out: &Tensor) -> Result<Tensor> {
            let $v = Variant::Out(out);
            $body
        }
        /// Scalar `other` (a wrapped number).
        pub fn $name_s($a: &Tensor, other: &Scalar) -> Result<Tensor> {
            let w = wrap_scalar(other)?;
            let $b = &w;
            let $v = Variant::Functional;
            $body
        }
        /// In-place with a Scalar `other`.
        pub fn $name_s_($a: &Tensor, other: &Scalar) -> Result<Tensor> {
            let w = wrap_scalar(other)?;
            let $b = &w;
            let $v = Variant::Inplace;
            $body
        }
    };
}

/// `torch.add(self, other, alpha=1)`.
pub fn add(a: &Tensor, b: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    add_v(Variant::Functional, a, b, alpha)
}
/// `self.add_(other, alpha)`.
pub fn add_(a: &Tensor, b: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    add_v(Variant::Inplace, a, b, alpha)
}
/// `torch.add(self, other, alpha, out=out)`.
pub fn add_out(a: &Tensor, b: &Tensor, alpha: &Scalar, out: &Tensor) -> Result<Tensor> {
    add_v(Variant::Out(out), a, b, alpha)
}
/// `add.Scalar`.
pub fn add_scalar(a: &Tensor, other: &Scalar, alpha: &Scalar) -> Result<Tensor> {
    add(a, &wrap_scalar(other)?, alpha)
}
/// `add_.Scalar`.
pub fn add_scalar_(a: &Tensor, other: &Scalar, alpha: &Scalar) -> Result<Tensor> {
    add_(a, &wrap_scalar(other)?, alpha)
}
/// `torch.sub(self, other, alpha=1)`.
pub fn sub(a: &Tensor, b: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    sub_v(Variant::Functional, a, b, alpha)
}
/// `self.sub_(other, alpha)`.
pub fn sub_(a: &Tensor, b: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    sub_v(Variant::Inplace, a, b, alpha)
}
/// `torch.sub(..., out=out)`.
pub fn sub_out(a: &Tensor, b: &Tensor, alpha: &Scalar, out: &Tensor) -> Result<Tensor> {
    sub_v(Variant::Out(out), a, b, alpha)
}
/// `sub.Scalar`.
pub fn sub_scalar(a: &Tensor, other: &Scalar, alpha: &Scalar) -> Result<Tensor> {
    sub(a, &wrap_scalar(other)?, alpha)
}
/// `sub_.Scalar`.
pub fn sub_scalar_(a: &Tensor, other: &Scalar, alpha: &Scalar) -> Result<Tensor> {
    sub_(a, &wrap_scalar(other)?, alpha)
}
/// `torch.rsub(self, other, alpha)` = `other - alpha * self`.
pub fn rsub(a: &Tensor, b: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    sub(b, a, alpha)
}
/// `rsub.Scalar`.
pub fn rsub_scalar(a: &Tensor, other: &Scalar, alpha: &Scalar) -> Result<Tensor> {
    sub(&wrap_scalar(other)?, a, alpha)
}
/// `torch.rsub(..., out=out)`.
pub fn rsub_out(a: &Tensor, b: &Tensor, alpha: &Scalar, out: &Tensor) -> Result<Tensor> {
    sub_out(b, a, alpha, out)
}

/// `torch.div(self, other, rounding_mode=None)`.
pub fn div(a: &Tensor, b: &Tensor, rounding_mode: Option<&str>) -> Result<Tensor> {
    div_v(Variant::Functional, a, b, rounding_mode)
}
/// `self.div_(other, rounding_mode)`.
pub fn div_(a: &Tensor, b: &Tensor, rounding_mode: Option<&str>) -> Result<Tensor> {
    div_v(Variant::Inplace, a, b, rounding_mode)
}
/// `torch.div(..., out=out)`.
pub fn div_out(
    a: &Tensor,
    b: &Tensor,
    rounding_mode: Option<&str>,
    out: &Tensor,
) -> Result<Tensor> {
    div_v(Variant::Out(out), a, b, rounding_mode)
}
/// `div.Scalar_mode`.
pub fn div_scalar(a: &Tensor, other: &Scalar, rounding_mode: Option<&str>) -> Result<Tensor> {
    div(a, &wrap_scalar(other)?, rounding_mode)
}
/// `div_.Scalar_mode`.
pub fn div_scalar_(a: &Tensor, other: &Scalar, rounding_mode: Option<&str>) -> Result<Tensor> {
    div_(a, &wrap_scalar(other)?, rounding_mode)
}

binary_front_ends!(
    /// `torch.mul(self, other)`.
    mul, mul_, mul_out, mul_scalar, mul_scalar_,
    |v, a, b| stub_v(v, a, b, mul_tensor_meta, &MUL_STUB)
);
binary_front_ends!(
    /// `torch.remainder(self, other)` (Python's `%`).
    remainder, remainder_, remainder_out, remainder_scalar, remainder_scalar_,
    |v, a, b| stub_v(v, a, b, binary_op_meta, &REMAINDER_STUB)
);
binary_front_ends!(
    /// `torch.fmod(self, other)` (C's `%`).
    fmod, fmod_, fmod_out, fmod_scalar, fmod_scalar_,
    |v, a, b| stub_v(v, a, b, binary_op_meta, &FMOD_STUB)
);
binary_front_ends!(
    /// `torch.pow(self, exponent)` (Tensor_Tensor / Tensor_Scalar).
    pow, pow_, pow_out, pow_scalar, pow_scalar_,
    |v, a, b| stub_v(v, a, b, binary_op_meta, &POW_STUB)
);
binary_front_ends!(
    /// `torch.maximum(self, other)`.
    maximum, maximum_, maximum_out, maximum_scalar, maximum_scalar_,
    |v, a, b| stub_v(v, a, b, |m, a, b| max_min_meta(m, a, b, "maximum"), &MAXIMUM_STUB)
);
binary_front_ends!(
    /// `torch.minimum(self, other)`.
    minimum, minimum_, minimum_out, minimum_scalar, minimum_scalar_,
    |v, a, b| stub_v(v, a, b, |m, a, b| max_min_meta(m, a, b, "minimum"), &MINIMUM_STUB)
);
binary_front_ends!(
    /// `torch.eq(self, other)`: bool result.
    eq, eq_, eq_out, eq_scalar, eq_scalar_,
    |v, a, b| stub_v(v, a, b, comparison_meta, &EQ_STUB)
);
binary_front_ends!(
    /// `torch.ne`.
    ne, ne_, ne_out, ne_scalar, ne_scalar_,
    |v, a, b| stub_v(v, a, b, comparison_meta, &NE_STUB)
);
binary_front_ends!(
    /// `torch.lt`.
    lt, lt_, lt_out, lt_scalar, lt_scalar_,
    |v, a, b| stub_v(v, a, b, comparison_meta, &LT_STUB)
);
binary_front_ends!(
    /// `torch.le`.
    le, le_, le_out, le_scalar, le_scalar_,
    |v, a, b| stub_v(v, a, b, comparison_meta, &LE_STUB)
);
binary_front_ends!(
    /// `torch.gt`.
    gt, gt_, gt_out, gt_scalar, gt_scalar_,
    |v, a, b| stub_v(v, a, b, comparison_meta, &GT_STUB)
);
binary_front_ends!(
    /// `torch.ge`.
    ge, ge_, ge_out, ge_scalar, ge_scalar_,
    |v, a, b| stub_v(v, a, b, comparison_meta, &GE_STUB)
);
binary_front_ends!(
    /// `torch.logical_and`: bool result (inputs of any dtype read as bool).
    logical_and, logical_and_, logical_and_out, logical_and_scalar, logical_and_scalar_,
    |v, a, b| stub_v(v, a, b, comparison_meta, &LOGICAL_AND_STUB)
);
binary_front_ends!(
    /// `torch.logical_or`.
    logical_or, logical_or_, logical_or_out, logical_or_scalar, logical_or_scalar_,
    |v, a, b| stub_v(v, a, b, comparison_meta, &LOGICAL_OR_STUB)
);
binary_front_ends!(
    /// `torch.logical_xor`.
    logical_xor, logical_xor_, logical_xor_out, logical_xor_scalar, logical_xor_scalar_,
    |v, a, b| stub_v(v, a, b, comparison_meta, &LOGICAL_XOR_STUB)
);
binary_front_ends!(
    /// `torch.bitwise_and` (integral and bool dtypes).
    bitwise_and, bitwise_and_, bitwise_and_out, bitwise_and_scalar, bitwise_and_scalar_,
    |v, a, b| stub_v(v, a, b, binary_op_meta, &BITWISE_AND_STUB)
);
binary_front_ends!(
    /// `torch.bitwise_or`.
    bitwise_or, bitwise_or_, bitwise_or_out, bitwise_or_scalar, bitwise_or_scalar_,
    |v, a, b| stub_v(v, a, b, binary_op_meta, &BITWISE_OR_STUB)
);
binary_front_ends!(
    /// `torch.bitwise_xor`.
    bitwise_xor, bitwise_xor_, bitwise_xor_out, bitwise_xor_scalar, bitwise_xor_scalar_,
    |v, a, b| stub_v(v, a, b, binary_op_meta, &BITWISE_XOR_STUB)
);
