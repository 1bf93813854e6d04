//! The activations (ATen's Activation.cpp and GatedLinearUnit.cpp): gelu, silu, mish, the elu
//! family (elu, selu, celu), leaky_relu, hardtanh and relu6, hardsigmoid, hardswish, softplus,
//! log_sigmoid and glu, with the `*_backward` operators their derivatives call.
//!
//! The structured ones have PyTorch's metas (a unary or binary TensorIterator) and impls (the
//! stub over it); the others are the CPU kernels PyTorch writes by hand, registered for Meta
//! too (their iterators are built on meta tensors and the loops skipped), as relu is.

use std::borrow::Cow;

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{Error, Result, Scalar, ScalarType};

use crate::dispatch_stub::DispatchStub;
use crate::generated::operators as ops;
use crate::native::binary_ops::given_output_ref;
use crate::native::cpu::activation_kernels::{
    ActFn, GeluType, ELU_BACKWARD_STUB, ELU_STUB, GELU_BACKWARD_STUB, GELU_STUB, GLU_BACKWARD_STUB,
    GLU_STUB, HARDSIGMOID_BACKWARD_STUB, HARDSIGMOID_STUB, HARDSWISH_BACKWARD_STUB, HARDSWISH_STUB,
    HARDTANH_BACKWARD_STUB, LEAKY_RELU_BACKWARD_STUB, LEAKY_RELU_STUB, LOG_SIGMOID_BACKWARD_STUB,
    LOG_SIGMOID_BUFFER_STUB, LOG_SIGMOID_OUTPUT_STUB, MISH_BACKWARD_STUB, MISH_STUB,
    SILU_BACKWARD_STUB, SILU_STUB, SOFTPLUS_BACKWARD_STUB, SOFTPLUS_STUB,
};
use crate::native::unary_ops::{unary_impl, unary_op_meta};
use crate::structured::MetaBase;
use crate::tensor_iterator::{
    binary_op_config, MaybeOwnedOutput, TensorIterator, TensorIteratorBase, TensorIteratorConfig,
};
use crate::Tensor;

/// `SELU_ALPHA` and `SELU_SCALE` (Activation.cpp).
const SELU_ALPHA: f64 = 1.673_263_242_354_377_4;
const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

/// `build_borrowing_binary_op(maybe_get_output(), a, b)`.
fn binary_meta<'a>(
    m: &'a dyn MetaBase,
    a: &'a Tensor,
    b: &'a Tensor,
) -> Result<TensorIteratorBase<'a>> {
    TensorIteratorBase::build_borrowing_binary(given_output_ref(m), a.base(), b.base(), false, m)
}

/// `get_gelutype_enum`.
pub fn get_gelutype_enum(approximate: &str) -> Result<GeluType> {
    match approximate {
        "none" => Ok(GeluType::None),
        "tanh" => Ok(GeluType::Tanh),
        _ => Err(Error::runtime(
            "approximate argument must be either none or tanh.",
        )),
    }
}

/// Runs an activation stub on a built iterator (nothing to compute on meta tensors).
fn run(iter: &TensorIteratorBase, f: impl FnOnce(&TensorIteratorBase) -> Result<()>) -> Result<()> {
    if iter.is_meta() {
        return Ok(());
    }
    f(iter)
}

// ---------------------------------------------------------------------------------------------
// The structured ones: TORCH_META_FUNC / TORCH_IMPL_FUNC
// ---------------------------------------------------------------------------------------------

/// `TORCH_META_FUNC(gelu)`.
pub fn gelu_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    _approximate: &str,
) -> Result<TensorIteratorBase<'a>> {
    unary_op_meta(m, self_)
}
/// `TORCH_IMPL_FUNC(gelu_out_cpu)`.
pub fn gelu_out_cpu(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    approximate: &str,
    _out: &Tensor,
) -> Result<()> {
    let ty = get_gelutype_enum(approximate)?;
    run(iter, |it| (GELU_STUB.get(it.device_type())?)(it, ty))
}

/// `TORCH_META_FUNC(gelu_backward)`.
pub fn gelu_backward_meta<'a>(
    m: &'a dyn MetaBase,
    grad_output: &'a Tensor,
    self_: &'a Tensor,
    _approximate: &str,
) -> Result<TensorIteratorBase<'a>> {
    binary_meta(m, grad_output, self_)
}
/// `TORCH_IMPL_FUNC(gelu_backward_out_cpu)`.
pub fn gelu_backward_out_cpu(
    iter: &mut TensorIteratorBase,
    _grad_output: &Tensor,
    _self: &Tensor,
    approximate: &str,
    _grad_input: &Tensor,
) -> Result<()> {
    let ty = get_gelutype_enum(approximate)?;
    run(iter, |it| {
        (GELU_BACKWARD_STUB.get(it.device_type())?)(it, ty)
    })
}

/// Defines the meta and impl of a structured unary activation without arguments.
macro_rules! structured_unary_act {
    ($($name:literal, $meta:ident, $imp:ident, $stub:ident;)*) => {$(
        #[doc = concat!("`TORCH_META_FUNC(", $name, ")`.")]
        pub fn $meta<'a>(m: &'a dyn MetaBase, self_: &'a Tensor) -> Result<TensorIteratorBase<'a>> {
            unary_op_meta(m, self_)
        }
        #[doc = concat!("`TORCH_IMPL_FUNC(", $name, "_out)`.")]
        pub fn $imp(iter: &mut TensorIteratorBase, _self: &Tensor, _out: &Tensor) -> Result<()> {
            unary_impl(&$stub, iter)
        }
    )*};
}
structured_unary_act! {
    "silu", silu_meta, silu_out, SILU_STUB;
    "mish", mish_meta, mish_out, MISH_STUB;
    "hardsigmoid", hardsigmoid_meta, hardsigmoid_out, HARDSIGMOID_STUB;
}

/// Defines the meta and impl of a structured `(grad_output, self)` backward.
macro_rules! structured_binary_act {
    ($($name:literal, $meta:ident, $imp:ident, $stub:ident;)*) => {$(
        #[doc = concat!("`TORCH_META_FUNC(", $name, ")`.")]
        pub fn $meta<'a>(
            m: &'a dyn MetaBase,
            grad_output: &'a Tensor,
            self_: &'a Tensor,
        ) -> Result<TensorIteratorBase<'a>> {
            binary_meta(m, grad_output, self_)
        }
        #[doc = concat!("`TORCH_IMPL_FUNC(", $name, "_out)`.")]
        pub fn $imp(
            iter: &mut TensorIteratorBase,
            _grad_output: &Tensor,
            _self: &Tensor,
            _grad_input: &Tensor,
        ) -> Result<()> {
            unary_impl(&$stub, iter)
        }
    )*};
}
structured_binary_act! {
    "silu_backward", silu_backward_meta, silu_backward_out, SILU_BACKWARD_STUB;
    "hardsigmoid_backward", hardsigmoid_backward_meta, hardsigmoid_backward_out,
        HARDSIGMOID_BACKWARD_STUB;
}

/// `TORCH_META_FUNC(elu)`.
pub fn elu_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    _alpha: &Scalar,
    _scale: &Scalar,
    _input_scale: &Scalar,
) -> Result<TensorIteratorBase<'a>> {
    unary_op_meta(m, self_)
}
/// `TORCH_IMPL_FUNC(elu_out)`.
pub fn elu_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    alpha: &Scalar,
    scale: &Scalar,
    input_scale: &Scalar,
    _out: &Tensor,
) -> Result<()> {
    run(iter, |it| {
        (ELU_STUB.get(it.device_type())?)(it, alpha, scale, input_scale)
    })
}

/// `TORCH_META_FUNC(elu_backward)`: an in-place forward with a negative alpha saved its
/// result, from which the input cannot be told.
pub fn elu_backward_meta<'a>(
    m: &'a dyn MetaBase,
    grad_output: &'a Tensor,
    alpha: &Scalar,
    _scale: &Scalar,
    _input_scale: &Scalar,
    is_result: bool,
    self_or_result: &'a Tensor,
) -> Result<TensorIteratorBase<'a>> {
    if is_result && alpha.to::<f64>()? < 0.0 {
        return Err(Error::runtime(
            "In-place elu backward calculation is triggered with a negative slope which is not \
             supported. This is caused by calling in-place forward function with a negative \
             slope, please call out-of-place version instead.",
        ));
    }
    binary_meta(m, grad_output, self_or_result)
}
/// `TORCH_IMPL_FUNC(elu_backward_out)`.
#[allow(clippy::too_many_arguments)]
pub fn elu_backward_out(
    iter: &mut TensorIteratorBase,
    _grad_output: &Tensor,
    alpha: &Scalar,
    scale: &Scalar,
    input_scale: &Scalar,
    is_result: bool,
    _self_or_result: &Tensor,
    _grad_input: &Tensor,
) -> Result<()> {
    run(iter, |it| {
        (ELU_BACKWARD_STUB.get(it.device_type())?)(it, alpha, scale, input_scale, is_result)
    })
}

/// `TORCH_META_FUNC(leaky_relu)`.
pub fn leaky_relu_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    _negative_slope: &Scalar,
) -> Result<TensorIteratorBase<'a>> {
    unary_op_meta(m, self_)
}
/// `TORCH_IMPL_FUNC(leaky_relu_out)`.
pub fn leaky_relu_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    negative_slope: &Scalar,
    _out: &Tensor,
) -> Result<()> {
    run(iter, |it| {
        (LEAKY_RELU_STUB.get(it.device_type())?)(it, negative_slope)
    })
}

/// `TORCH_META_FUNC(leaky_relu_backward)`: the iterator is over (self_or_result, grad_output).
pub fn leaky_relu_backward_meta<'a>(
    m: &'a dyn MetaBase,
    grad_output: &'a Tensor,
    self_: &'a Tensor,
    negative_slope: &Scalar,
    self_is_result: bool,
) -> Result<TensorIteratorBase<'a>> {
    if self_is_result && negative_slope.to::<f64>()? < 0.0 {
        return Err(Error::runtime(
            "In-place leakyReLu backward calculation is triggered with a negative slope which is \
             not supported. This is caused by calling in-place forward function with a negative \
             slope, please call out-of-place version instead. File an issue at \
             https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu \
             backward calculation with negative slope",
        ));
    }
    binary_meta(m, self_, grad_output)
}
/// `TORCH_IMPL_FUNC(leaky_relu_backward_out)`.
pub fn leaky_relu_backward_out(
    iter: &mut TensorIteratorBase,
    _grad_output: &Tensor,
    _self: &Tensor,
    negative_slope: &Scalar,
    _self_is_result: bool,
    _grad_input: &Tensor,
) -> Result<()> {
    run(iter, |it| {
        (LEAKY_RELU_BACKWARD_STUB.get(it.device_type())?)(it, negative_slope)
    })
}

/// `TORCH_META_FUNC(softplus)`.
pub fn softplus_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    _beta: &Scalar,
    _threshold: &Scalar,
) -> Result<TensorIteratorBase<'a>> {
    unary_op_meta(m, self_)
}
/// `TORCH_IMPL_FUNC(softplus_out)`.
pub fn softplus_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    beta: &Scalar,
    threshold: &Scalar,
    _out: &Tensor,
) -> Result<()> {
    run(iter, |it| {
        (SOFTPLUS_STUB.get(it.device_type())?)(it, beta, threshold)
    })
}

/// `TORCH_META_FUNC(softplus_backward)`.
pub fn softplus_backward_meta<'a>(
    m: &'a dyn MetaBase,
    grad_output: &'a Tensor,
    self_: &'a Tensor,
    _beta: &Scalar,
    _threshold: &Scalar,
) -> Result<TensorIteratorBase<'a>> {
    binary_meta(m, grad_output, self_)
}
/// `TORCH_IMPL_FUNC(softplus_backward_out)`.
pub fn softplus_backward_out(
    iter: &mut TensorIteratorBase,
    _grad_output: &Tensor,
    _self: &Tensor,
    beta: &Scalar,
    threshold: &Scalar,
    _grad_input: &Tensor,
) -> Result<()> {
    run(iter, |it| {
        (SOFTPLUS_BACKWARD_STUB.get(it.device_type())?)(it, beta, threshold)
    })
}

/// The wrapped `dim` and half size of glu's input, with PyTorch's checks.
fn glu_halves(self_: &Tensor, dim: i64) -> Result<(usize, i64)> {
    if self_.dim() == 0 {
        return Err(Error::runtime("glu does not support 0-dimensional tensors"));
    }
    let wrap_dim = maybe_wrap_dim(dim, self_.dim(), true)?;
    let n_in = self_.sizes()[wrap_dim];
    if n_in % 2 != 0 {
        return Err(Error::runtime(format!(
            "Halving dimension must be even, but dimension {wrap_dim} is size {n_in}"
        )));
    }
    Ok((wrap_dim, n_in / 2))
}

/// `TORCH_META_FUNC(glu)`: a binary iterator over the two halves of `self` along `dim`.
pub fn glu_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    dim: i64,
) -> Result<TensorIteratorBase<'a>> {
    let (d, half) = glu_halves(self_, dim)?;
    let first = ops::narrow::call(self_, d as i64, 0, half)?;
    let second = ops::narrow::call(self_, d as i64, half, half)?;
    let out = MaybeOwnedOutput(given_output_ref(m).map(Cow::Borrowed));
    binary_op_config(out, first, second)?.build(m)
}
/// `TORCH_IMPL_FUNC(glu_out)`.
pub fn glu_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    _dim: i64,
    _out: &Tensor,
) -> Result<()> {
    unary_impl(&GLU_STUB, iter)
}

// ---------------------------------------------------------------------------------------------
// The CPU (and Meta) kernels written by hand
// ---------------------------------------------------------------------------------------------

/// Runs `stub` over a plain iterator (none for meta tensors).
fn run_plain(stub: &DispatchStub<ActFn>, iter: &TensorIteratorBase) -> Result<()> {
    unary_impl(stub, iter)
}

/// `hardtanh_out`: `clamp_out` with the bounds as integers for an integral `self` (so that
/// they cause no type promotion); bool is refused.
pub fn hardtanh_out<'a>(
    self_: &Tensor,
    min_val: &Scalar,
    max_val: &Scalar,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let dt = self_.dtype();
    if dt == ScalarType::Bool {
        return Err(Error::not_implemented(
            "Bool inputs not supported for hardtanh",
        ));
    }
    let (lo, hi) = if dt.is_integral(false) {
        (
            Scalar::Int(min_val.to_long()?),
            Scalar::Int(max_val.to_long()?),
        )
    } else {
        (*min_val, *max_val)
    };
    ops::clamp_out::call(self_, Some(&lo), Some(&hi), out)?;
    Ok(out)
}
/// `hardtanh`: into `empty_like(self)`.
pub fn hardtanh(self_: &Tensor, min_val: &Scalar, max_val: &Scalar) -> Result<Tensor> {
    let result = crate::generated::functions::empty_like(self_)?;
    hardtanh_out(self_, min_val, max_val, &result)?;
    Ok(result)
}
/// `hardtanh_`: `hardtanh_out(self, self)`.
pub fn hardtanh_<'a>(self_: &'a Tensor, min_val: &Scalar, max_val: &Scalar) -> Result<&'a Tensor> {
    hardtanh_out(self_, min_val, max_val, self_)
}

/// `hardtanh_backward` (`TensorIterator::borrowing_binary_op(grad_input, grad_output, self)`).
fn hardtanh_backward_into(
    grad_input: Option<&Tensor>,
    grad_output: &Tensor,
    self_: &Tensor,
    min_val: &Scalar,
    max_val: &Scalar,
) -> Result<Tensor> {
    let iter = TensorIterator::binary_op(
        grad_input.map(Tensor::base),
        grad_output.base(),
        self_.base(),
    )?;
    run(&iter, |it| {
        (HARDTANH_BACKWARD_STUB.get(it.device_type())?)(it, min_val, max_val)
    })?;
    Ok(Tensor::from_base(iter.output(0)?))
}
/// `hardtanh_backward.grad_input`.
pub fn hardtanh_backward_out<'a>(
    grad_output: &Tensor,
    self_: &Tensor,
    min_val: &Scalar,
    max_val: &Scalar,
    grad_input: &'a Tensor,
) -> Result<&'a Tensor> {
    hardtanh_backward_into(Some(grad_input), grad_output, self_, min_val, max_val)?;
    Ok(grad_input)
}
/// `hardtanh_backward`.
pub fn hardtanh_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    min_val: &Scalar,
    max_val: &Scalar,
) -> Result<Tensor> {
    hardtanh_backward_into(None, grad_output, self_, min_val, max_val)
}

/// `hardswish` (`TensorIterator::unary_op(result, self)`).
pub fn hardswish(self_: &Tensor) -> Result<Tensor> {
    let iter = TensorIterator::unary_op(None, self_.base())?;
    run_plain(&HARDSWISH_STUB, &iter)?;
    Ok(Tensor::from_base(iter.output(0)?))
}
/// `hardswish.out`.
pub fn hardswish_out<'a>(self_: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    let iter = TensorIterator::unary_op(Some(out.base()), self_.base())?;
    run_plain(&HARDSWISH_STUB, &iter)?;
    Ok(out)
}
/// `hardswish_`.
pub fn hardswish_(self_: &Tensor) -> Result<&Tensor> {
    let iter = TensorIterator::unary_op(Some(self_.base()), self_.base())?;
    run_plain(&HARDSWISH_STUB, &iter)?;
    Ok(self_)
}
/// `hardswish_backward`.
pub fn hardswish_backward(grad_output: &Tensor, self_: &Tensor) -> Result<Tensor> {
    let iter = TensorIterator::binary_op(None, grad_output.base(), self_.base())?;
    run_plain(&HARDSWISH_BACKWARD_STUB, &iter)?;
    Ok(Tensor::from_base(iter.output(0)?))
}

/// `mish_backward` (CPU): `TensorIterator::binary_op(grad_input, grad_output, self)`.
pub fn mish_backward(grad_output: &Tensor, self_: &Tensor) -> Result<Tensor> {
    let iter = TensorIterator::binary_op(None, grad_output.base(), self_.base())?;
    run_plain(&MISH_BACKWARD_STUB, &iter)?;
    Ok(Tensor::from_base(iter.output(0)?))
}
/// `math_mish_backward` (CompositeImplicitAutograd, what autograd differentiates):
/// `grad * (tanh(softplus(x)) + x sigmoid(x) (1 - tanh(softplus(x))^2))`.
pub fn math_mish_backward(grad_output: &Tensor, self_: &Tensor) -> Result<Tensor> {
    let one = Scalar::Int(1);
    let t = ops::tanh::call(&ops::softplus::call(self_, &one, &Scalar::Int(20))?)?;
    let s = ops::sigmoid::call(self_)?;
    let t2 = ops::mul_Tensor::call(&t, &t)?;
    let inner = ops::mul_Tensor::call(
        &ops::mul_Tensor::call(self_, &s)?,
        &ops::rsub_Scalar::call(&t2, &one, &one)?,
    )?;
    ops::mul_Tensor::call(grad_output, &ops::add_Tensor::call(&t, &inner, &one)?)
}
/// `math_silu_backward` (CompositeImplicitAutograd, what autograd differentiates):
/// `grad * (sigmoid(x) (1 + x (1 - sigmoid(x))))`.
pub fn math_silu_backward(grad_output: &Tensor, self_: &Tensor) -> Result<Tensor> {
    let one = Scalar::Int(1);
    let s = ops::sigmoid::call(self_)?;
    let inner = ops::add_Scalar::call(
        &ops::mul_Tensor::call(self_, &ops::rsub_Scalar::call(&s, &one, &one)?)?,
        &one,
        &one,
    )?;
    ops::mul_Tensor::call(grad_output, &ops::mul_Tensor::call(&s, &inner)?)
}

/// The loops of `log_sigmoid_forward` into a contiguous `result` and `buffer` of `input`'s
/// shape: `buffer = e^-|x|`, then `result = min(x, 0) - log1p(buffer)` (PyTorch computes
/// both in one loop; the values are the same).
fn log_sigmoid_loops(input: &Tensor, result: &Tensor, buffer: &Tensor) -> Result<()> {
    let b = TensorIteratorConfig::new()
        .add_output(buffer)?
        .add_const_input(input)
        .build_standalone()?;
    run_plain(&LOG_SIGMOID_BUFFER_STUB, &b)?;
    let r = TensorIteratorConfig::new()
        .add_output(result)?
        .add_const_input(input)
        .add_const_input(buffer)
        .build_standalone()?;
    run_plain(&LOG_SIGMOID_OUTPUT_STUB, &r)
}

/// `log_sigmoid_forward` (CPU): the output and the buffer `e^-|x|` the backward reads, both
/// contiguous.
pub fn log_sigmoid_forward_cpu(input: &Tensor) -> Result<(Tensor, Tensor)> {
    let result = Tensor::empty(&input.sizes(), (input.dtype(), input.device()))?;
    let buffer = Tensor::empty(&input.sizes(), (input.dtype(), input.device()))?;
    log_sigmoid_loops(input, &result, &buffer)?;
    Ok((result, buffer))
}

/// `log_sigmoid_forward.output`: `output` resized to the input's shape (computed through a
/// contiguous temporary when it is not contiguous), `buffer` resized contiguous.
pub fn log_sigmoid_forward_out_cpu(
    input: &Tensor,
    output: &Tensor,
    buffer: &Tensor,
) -> Result<(Tensor, Tensor)> {
    let sizes = input.sizes();
    crate::structured::resize_output(output, &sizes)?;
    buffer.resize_(&sizes)?;
    if !buffer.is_contiguous() {
        return Err(Error::runtime(
            "Contiguous buffer required for log_sigmoid with out parameter",
        ));
    }
    if output.is_contiguous() {
        log_sigmoid_loops(input, output, buffer)?;
    } else {
        let tmp = Tensor::empty(&sizes, (output.dtype(), output.device()))?;
        log_sigmoid_loops(input, &tmp, buffer)?;
        ops::copy_::call(output, &tmp, false)?;
    }
    Ok((output.clone(), buffer.clone()))
}

/// `log_sigmoid` (CompositeImplicitAutograd): the output of `log_sigmoid_forward`.
pub fn log_sigmoid(self_: &Tensor) -> Result<Tensor> {
    Ok(ops::log_sigmoid_forward::call(self_)?.0)
}
/// `log_sigmoid.out`.
pub fn log_sigmoid_out<'a>(self_: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    let buffer = Tensor::empty(&[0], (self_.dtype(), self_.device()))?;
    ops::log_sigmoid_forward_output::call(self_, out, &buffer)?;
    Ok(out)
}

/// `log_sigmoid_backward` over (input, buffer, grad_output), operands of one dtype.
fn log_sigmoid_backward_into(
    grad_input: &Tensor,
    grad_output: &Tensor,
    input: &Tensor,
    buffer: &Tensor,
) -> Result<()> {
    let iter = TensorIteratorConfig::new()
        .add_output(grad_input)?
        .add_const_input(input)
        .add_const_input(buffer)
        .add_const_input(grad_output)
        .build_standalone()?;
    run_plain(&LOG_SIGMOID_BACKWARD_STUB, &iter)
}
/// `log_sigmoid_backward` (CPU), into `empty_like(grad_output)`.
pub fn log_sigmoid_backward_cpu(
    grad_output: &Tensor,
    self_: &Tensor,
    buffer: &Tensor,
) -> Result<Tensor> {
    let grad_input = crate::generated::functions::empty_like(grad_output)?;
    log_sigmoid_backward_into(&grad_input, grad_output, self_, buffer)?;
    Ok(grad_input)
}
/// `log_sigmoid_backward.grad_input`.
pub fn log_sigmoid_backward_cpu_out<'a>(
    grad_output: &Tensor,
    self_: &Tensor,
    buffer: &Tensor,
    grad_input: &'a Tensor,
) -> Result<&'a Tensor> {
    log_sigmoid_backward_into(grad_input, grad_output, self_, buffer)?;
    Ok(grad_input)
}

/// `glu_backward.grad_input` (CPU): the first half of the gradient is `sigmoid(b) * grad`,
/// the second `(1 - sigmoid(b)) sigmoid(b) a grad`.
pub fn glu_backward_cpu_out<'a>(
    grad_output: &Tensor,
    self_: &Tensor,
    dim: i64,
    grad_input: &'a Tensor,
) -> Result<&'a Tensor> {
    let (d, half) = glu_halves(self_, dim)?;
    crate::structured::resize_output(grad_input, &self_.sizes())?;
    let d = d as i64;
    let first = ops::narrow::call(self_, d, 0, half)?;
    let second = ops::narrow::call(self_, d, half, half)?;
    let g_first = ops::narrow::call(grad_input, d, 0, half)?;
    let g_second = ops::narrow::call(grad_input, d, half, half)?;
    ops::sigmoid_out::call(&second, &g_first)?;
    let iter = TensorIteratorConfig::new()
        .add_output(&g_second)?
        .add_const_input(&g_first)
        .add_const_input(&first)
        .add_const_input(grad_output)
        .build_standalone()?;
    run_plain(&GLU_BACKWARD_STUB, &iter)?;
    ops::mul__Tensor::call(&g_first, grad_output)?;
    Ok(grad_input)
}
/// `glu_backward` (CPU).
pub fn glu_backward_cpu(grad_output: &Tensor, self_: &Tensor, dim: i64) -> Result<Tensor> {
    let grad_input = Tensor::empty(&[0], (self_.dtype(), self_.device()))?;
    glu_backward_cpu_out(grad_output, self_, dim, &grad_input)?;
    Ok(grad_input)
}

// ---------------------------------------------------------------------------------------------
// Compositions
// ---------------------------------------------------------------------------------------------

/// `relu6` = `hardtanh(self, 0, 6)`.
pub fn relu6(self_: &Tensor) -> Result<Tensor> {
    ops::hardtanh::call(self_, &Scalar::Int(0), &Scalar::Int(6))
}
/// `relu6_` = `hardtanh_(self, 0, 6)`.
pub fn relu6_(self_: &Tensor) -> Result<&Tensor> {
    ops::hardtanh_::call(self_, &Scalar::Int(0), &Scalar::Int(6))?;
    Ok(self_)
}

/// `selu` = `elu(self, SELU_ALPHA, SELU_SCALE)`.
pub fn selu(self_: &Tensor) -> Result<Tensor> {
    ops::elu::call(
        self_,
        &Scalar::Double(SELU_ALPHA),
        &Scalar::Double(SELU_SCALE),
        &Scalar::Int(1),
    )
}
/// `selu_` = `elu_(self, SELU_ALPHA, SELU_SCALE)`.
pub fn selu_(self_: &Tensor) -> Result<&Tensor> {
    ops::elu_::call(
        self_,
        &Scalar::Double(SELU_ALPHA),
        &Scalar::Double(SELU_SCALE),
        &Scalar::Int(1),
    )?;
    Ok(self_)
}

/// celu's `1 / alpha`, refused for 0.
fn celu_inv_alpha(alpha: &Scalar) -> Result<Scalar> {
    let a = alpha.to::<f64>()?;
    if a == 0.0 {
        return Err(Error::runtime(
            "ZeroDivisionError: alpha cannot be 0 for CELU",
        ));
    }
    Ok(Scalar::Double(1.0 / a))
}
/// `celu` (CompositeExplicitAutograd) = `elu(self, alpha, 1, 1 / alpha)`.
pub fn celu(self_: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    let inv = celu_inv_alpha(alpha)?;
    ops::elu::call(self_, alpha, &Scalar::Double(1.0), &inv)
}
/// `celu_` = `elu_(self, alpha, 1, 1 / alpha)`.
pub fn celu_<'a>(self_: &'a Tensor, alpha: &Scalar) -> Result<&'a Tensor> {
    let inv = celu_inv_alpha(alpha)?;
    ops::elu_::call(self_, alpha, &Scalar::Double(1.0), &inv)?;
    Ok(self_)
}
