//! FunctionsManual (PyTorch's torch/csrc/autograd/FunctionsManual.h/.cpp): the hand-written
//! helpers that the formulas of derivatives.yaml call (`sum_backward`, `mm_mat1_backward`,
//! `handle_r_to_c`, ...).
//!
//! Every tensor operation in here goes through ratten's dispatcher (the generated functions
//! of `ratten_aten::functions` and the Tensor methods), never a kernel: when a helper runs
//! with grad mode on (a backward with `create_graph`), the operations it calls record their
//! own backward nodes, which is what makes double backward work. For the same reason the
//! helpers use out-of-place operators where PyTorch writes into a fresh tensor in place
//! (`masked_fill_`, `scatter_`, ...): the values are the same and no graph needs CopySlices.
//!
//! Note [FunctionsManual signatures]
//! The generator (ratten-gen) reads the top-level `pub fn` items of this file: their names
//! are PyTorch's (without `_symint`), their parameter and return types come from the closed
//! set of AUTOGRAD_CONTRACT.md. Four kinds of parameters go beyond that set because a
//! formula passes them and PyTorch's helper takes them:
//! - `Layout` (`mm_mat1_backward`, `mm_mat2_backward`: the formula passes `mat1.layout()`),
//!   ratten_aten's `native::Layout`;
//! - `Option<&str>` (`rounding_mode` of the div helpers: `str?` in the schema);
//! - `&[Vec<i64>]` and `&[ScalarType]` (`cat_tensors_backward`, `stack_tensors_backward`:
//!   the values `to_args_sizes(tensors)` and `to_args_scalartypes(tensors)` saved at forward
//!   time, also defined here);
//! - `&TensorGeometry` (`as_strided_backward`: the formula passes `TensorGeometry(self)`, the
//!   sizes, strides and offset of the input saved without its data; the struct is here).
//!
//! Note [FunctionsManual overloads]
//! C++ overloads one helper name; Rust cannot. The overload PyTorch's formulas use most
//! keeps the name; each other overload is a separate `pub fn` whose name adds a suffix and
//! that carries `#[doc(alias = "NAME")]` with the C++ name. A call `NAME(args)` in a formula
//! resolves among `NAME` and the functions aliased to it by the number and the types of its
//! arguments (`div_tensor_self_backward(grad, other, self.scalar_type())` with a Scalar
//! `other` is `div_tensor_self_backward_scalar`).

use ratten_aten::functions as F;
use ratten_aten::native::Layout;
use ratten_aten::tensor_iterator::infer_size;
use ratten_aten::Tensor;
use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{torch_check, Error, Result, Scalar, ScalarType, TensorOptions};

// ----------------------------------------------------------------------------------------
// Small tools (not helpers the formulas call)
// ----------------------------------------------------------------------------------------

/// `t.conj()`: the tensor itself for a real tensor (PyTorch returns `self`).
fn conj(t: &Tensor) -> Result<Tensor> {
    if !t.scalar_type().is_complex() {
        return Ok(t.clone());
    }
    ratten_aten::operators::conj::call(t)
}

/// `at::real(t)`: the tensor itself for a real tensor.
fn real(t: &Tensor) -> Result<Tensor> {
    if !t.scalar_type().is_complex() {
        return Ok(t.clone());
    }
    F::real(t)
}

/// `t.sgn()`: `sign` for real tensors, `t / |t|` (0 at 0) for complex ones.
fn sgn(t: &Tensor) -> Result<Tensor> {
    if t.scalar_type().is_complex() {
        F::sgn(t)
    } else {
        F::sign(t)
    }
}

/// `at::zeros(sizes, like.options())`.
fn zeros_like_options(sizes: &[i64], like: &Tensor) -> Result<Tensor> {
    F::zeros_with(
        sizes,
        Some(like.scalar_type()),
        None,
        Some(like.device()),
        None,
    )
}

/// `at::zeros(sizes, options)`.
fn zeros_with_options(sizes: &[i64], options: &TensorOptions) -> Result<Tensor> {
    F::zeros_with(sizes, options.dtype, None, options.device, None)
}

/// `at::scalar_tensor(v, like.options())`.
fn scalar_tensor_like(v: impl Into<Scalar>, like: &Tensor) -> Result<Tensor> {
    F::scalar_tensor_with(v, Some(like.scalar_type()), None, Some(like.device()), None)
}

/// `t.sum(dims, keepdim)` (an empty `dims` reduces every dimension, as in PyTorch).
fn sum_dims(t: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    F::sum_dim_int_list_with(t, Some(dims), keepdim, None)
}

/// `at::dim_list_to_bitset(opt_dims, ndims)`: `None` selects every dimension.
fn dim_list_to_bitset(opt_dims: Option<&[i64]>, ndims: usize) -> Result<Vec<bool>> {
    let mut seen = vec![false; ndims];
    match opt_dims {
        None => seen.iter_mut().for_each(|b| *b = true),
        Some(dims) => {
            for &d in dims {
                let w = maybe_wrap_dim(d, ndims, true)?;
                torch_check!(
                    !seen[w],
                    "dim {w} appears multiple times in the list of dims"
                );
                seen[w] = true;
            }
        }
    }
    Ok(seen)
}

fn scalar_is_one(s: &Scalar) -> Result<bool> {
    if s.is_floating_point() {
        Ok(s.to_double()? == 1.0)
    } else if s.is_integral(true) {
        Ok(s.to_long()? == 1)
    } else {
        Ok(false)
    }
}

/// `reversed_cumsum(w, dim)`: `w.flip(dim).cumsum(dim).flip(dim)`.
fn reversed_cumsum(w: &Tensor, dim: i64) -> Result<Tensor> {
    F::flip(&F::cumsum(&F::flip(w, &[dim])?, dim)?, &[dim])
}

/// `std::numeric_limits<scalar_t>::lowest()` for a floating dtype.
fn lowest(dtype: ScalarType) -> f64 {
    match dtype {
        ScalarType::Double => f64::MIN,
        ScalarType::Half => -65504.0,
        ScalarType::BFloat16 => -3.389_531_389_251_535_5e38,
        _ => f32::MIN as f64,
    }
}

// ----------------------------------------------------------------------------------------
// Complex / scalar plumbing
// ----------------------------------------------------------------------------------------

/// The gradient of a real input whose formula produced a complex value is its real part.
pub fn handle_r_to_c(self_st: ScalarType, gradient_result: &Tensor) -> Result<Tensor> {
    if !self_st.is_complex() && gradient_result.scalar_type().is_complex() {
        return real(gradient_result);
    }
    Ok(gradient_result.clone())
}

/// `handle_r_to_c(const Tensor& self, Tensor gradient_result)` (static in PyTorch: the
/// formulas never call it).
fn handle_r_to_c_tensor(self_: &Tensor, gradient_result: &Tensor) -> Result<Tensor> {
    handle_r_to_c(self_.scalar_type(), gradient_result)
}

/// `t * s`, skipping the multiplication when `s` is a (real) one.
pub fn maybe_multiply(t: &Tensor, s: &Scalar) -> Result<Tensor> {
    if scalar_is_one(s)? {
        return Ok(t.clone());
    }
    F::mul_scalar(t, *s)
}

// ----------------------------------------------------------------------------------------
// Shapes: sum_to, unsqueeze_to, restore_reduced_dims, ...
// ----------------------------------------------------------------------------------------

/// `at::sum_to(tensor, shape)` (ATen/ExpandUtils.h): sums `tensor` down to `shape`, which it
/// must be expandable from (leading dimensions summed away, size-1 dimensions kept).
pub fn sum_to(tensor: &Tensor, shape: &[i64]) -> Result<Tensor> {
    if shape.is_empty() {
        return F::sum(tensor);
    }
    let sizes = tensor.sizes().to_vec();
    torch_check!(
        shape.len() <= sizes.len(),
        "sum_to: shape {shape:?} has more dimensions than the tensor's {sizes:?}"
    );
    let leading = sizes.len() - shape.len();
    let mut reduce_dims: Vec<i64> = (0..leading as i64).collect();
    for (i, &s) in shape.iter().enumerate() {
        let t = sizes[leading + i];
        if s == 1 && t != 1 {
            reduce_dims.push((leading + i) as i64);
        } else {
            torch_check!(
                s == t,
                "sum_to: the tensor of shape {sizes:?} cannot be summed to shape {shape:?}"
            );
        }
    }
    let mut out = tensor.clone();
    if !reduce_dims.is_empty() {
        out = sum_dims(&out, &reduce_dims, true)?;
    }
    if leading > 0 {
        out = out.view(shape)?;
    }
    Ok(out)
}

/// Unsqueezes `self_` at every dimension where `sizes` is 1 (the gradient of `squeeze()`).
pub fn unsqueeze_to(self_: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let mut result = self_.clone();
    for (d, &s) in sizes.iter().enumerate() {
        if s == 1 {
            result = F::unsqueeze(&result, d as i64)?;
        }
    }
    Ok(result)
}

/// `unsqueeze_to(self, int64_t dim, sizes)` (the gradient of `squeeze.dim`).
#[doc(alias = "unsqueeze_to")]
pub fn unsqueeze_to_dim(self_: &Tensor, dim: i64, sizes: &[i64]) -> Result<Tensor> {
    unsqueeze_to_dims(self_, &[dim], sizes)
}

/// `unsqueeze_to(self, IntArrayRef dims, sizes)` (the gradient of `squeeze.dims`).
#[doc(alias = "unsqueeze_to")]
pub fn unsqueeze_to_dims(self_: &Tensor, dims: &[i64], sizes: &[i64]) -> Result<Tensor> {
    let mask = dim_list_to_bitset(Some(dims), sizes.len())?;
    let mut result = self_.clone();
    for (d, &s) in sizes.iter().enumerate() {
        if mask[d] && s == 1 {
            result = F::unsqueeze(&result, d as i64)?;
        }
    }
    Ok(result)
}

/// Unsqueezes `t` at the dimensions `opt_dim` (every one of `n_dims` for `None`) that a
/// reduction without keepdim removed.
pub fn unsqueeze_multiple(t: &Tensor, opt_dim: Option<&[i64]>, n_dims: i64) -> Result<Tensor> {
    if let Some(dim) = opt_dim {
        match dim.len() {
            0 => return Ok(t.clone()),
            1 => return F::unsqueeze(t, dim[0]),
            _ => {}
        }
    }
    let mask = dim_list_to_bitset(opt_dim, n_dims.max(0) as usize)?;
    let mut res = t.clone();
    for (i, &m) in mask.iter().enumerate() {
        if m {
            res = F::unsqueeze(&res, i as i64)?;
        }
    }
    Ok(res)
}

/// Reshapes the result of a reduction over `dims` without keepdim back to the rank of its
/// input, with size 1 at the reduced dimensions.
pub fn restore_reduced_dims(output: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    if keepdim {
        return Ok(output.clone());
    }
    let total_dims = output.dim() + dims.len();
    let mut target_shape = vec![0i64; total_dims];
    for &d in dims {
        let i = maybe_wrap_dim(d, total_dims, true)?;
        target_shape[i] = 1;
    }
    let mut j = 0usize;
    for &s in output.sizes().iter() {
        while j < total_dims && target_shape[j] > 0 {
            j += 1;
        }
        torch_check!(
            j < total_dims,
            "restore_reduced_dims: dims {dims:?} do not fit an output of {} dimensions",
            output.dim()
        );
        target_shape[j] = s;
        j += 1;
    }
    F::reshape(output, &target_shape)
}

/// `(grad / mask.sum(dims, true)) * mask`: a gradient shared evenly by the selected values.
pub fn scale_grad_by_count(grad: &Tensor, mask: &Tensor, dims: &[i64]) -> Result<Tensor> {
    F::mul(&F::div(grad, &sum_dims(mask, dims, true)?)?, mask)
}

/// The number of elements a reduction over `dim` of a tensor of `sizes` combines.
pub fn _safe_size(sizes: &[i64], dim: &[i64]) -> Result<i64> {
    if sizes.is_empty() {
        return Ok(1);
    }
    let mut size = 1i64;
    for &d in dim {
        size *= sizes[maybe_wrap_dim(d, sizes.len(), true)?];
    }
    Ok(size)
}

/// The inverse permutation of `fwd_dims` applied to `grad`.
pub fn permute_backwards(grad: &Tensor, fwd_dims: &[i64]) -> Result<Tensor> {
    let ndims = fwd_dims.len();
    let mut dims = vec![0i64; ndims];
    for (i, &d) in fwd_dims.iter().enumerate() {
        dims[maybe_wrap_dim(d, ndims, true)?] = i as i64;
    }
    F::permute(grad, &dims)
}

/// `list` reversed.
pub fn reverse_list(list: &[i64]) -> Result<Vec<i64>> {
    Ok(list.iter().rev().copied().collect())
}

/// The gradient of `roll(self, shifts, dims)`: `grad` rolled back, the shifts negated, both
/// lists reversed (derivatives.yaml's formula, whose C++ lambda the generator cannot take;
/// listed in the generator's `MANUAL_FORMULAS`).
pub fn roll_backward(grad: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    let shifts: Vec<i64> = shifts.iter().rev().map(|&s| -s).collect();
    F::roll_with(grad, &shifts, &reverse_list(dims)?)
}

/// `t` reversed along `dim` (by `index_select`, so it stays differentiable).
pub fn reverse_dim(t: &Tensor, dim: i64) -> Result<Tensor> {
    let n = t.size(dim)?;
    let index = F::arange_start_step_with(
        n - 1,
        -1,
        -1,
        Some(ScalarType::Long),
        None,
        Some(t.device()),
        None,
    )?;
    F::index_select(t, dim, &index)
}

// ----------------------------------------------------------------------------------------
// Reductions
// ----------------------------------------------------------------------------------------

/// The gradient of `sum(dims, keepdim)`: `grad` broadcast back to `sizes`.
pub fn sum_backward(
    grad: &Tensor,
    sizes: &[i64],
    opt_dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    if !keepdim && !sizes.is_empty() {
        if let Some(dims) = opt_dims {
            if !dims.is_empty() {
                return unsqueeze_multiple(grad, opt_dims, sizes.len() as i64)?.expand(sizes);
            }
        }
    }
    grad.expand(sizes)
}

/// The gradient of `nansum`: `sum_backward`, zero where `self_` is NaN.
pub fn nansum_backward(
    grad: &Tensor,
    self_: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    let g = sum_backward(grad, &self_.sizes(), dims, keepdim)?;
    F::mul(&g, &F::logical_not(&F::isnan(self_)?)?)
}

/// The gradient of `mean(dim, keepdim)`.
pub fn mean_backward(
    grad: &Tensor,
    shape: &[i64],
    opt_dim: Option<&[i64]>,
    numel: i64,
    keepdim: bool,
) -> Result<Tensor> {
    let n = match opt_dim {
        Some(dim) if !dim.is_empty() => _safe_size(shape, dim)?,
        _ => numel,
    };
    F::div_scalar(&sum_backward(grad, shape, opt_dim, keepdim)?, n)
}

/// The gradient of `var(dim, correction, keepdim)`.
pub fn var_backward(
    grad: &Tensor,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    let correction = match correction {
        Some(c) => c.to_double()?,
        None => 1.0,
    };
    let dim = match dim {
        Some(d) if self_.dim() != 0 => d,
        _ => {
            let dof = self_.numel() as f64 - correction;
            if dof <= 0.0 {
                // n == correction makes 2 / (n - correction) infinite: inf * 0 (an input equal
                // to the mean) is NaN, inf * c is inf.
                let at_mean = F::eq(self_, &F::mean(self_)?)?;
                let factor = F::where_scalar(&at_mean, f64::NAN, f64::INFINITY)?;
                return F::mul(grad, &factor);
            }
            let centered = F::sub(self_, &F::mean(self_)?)?;
            return F::mul(&F::mul_scalar(grad, 2.0 / dof)?, &centered);
        }
    };
    let mut grad = grad.clone();
    if !keepdim && self_.dim() > 1 {
        grad = unsqueeze_multiple(&grad, Some(dim), self_.dim() as i64)?;
    }
    let rnumel = _safe_size(&self_.sizes(), dim)? as f64;
    let centered = F::sub(self_, &F::mean_dim_with(self_, Some(dim), true, None)?)?;
    F::mul(
        &F::mul_scalar(&grad, 2.0 / (rnumel - correction))?,
        &centered,
    )
}

/// The gradient of `std`: `var_backward` of `grad / (2 * std)` (0 where std is 0).
pub fn std_backward(
    result: &Tensor,
    grad: &Tensor,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    let grad_var = F::div(grad, &F::mul_scalar(result, 2)?)?;
    let grad_var = F::masked_fill_scalar(&grad_var, &F::eq_scalar(result, 0)?, 0)?;
    var_backward(&grad_var, self_, dim, correction, keepdim)
}

/// The gradient of `var_mean`: either output's gradient may be undefined.
pub fn var_mean_backward(
    gvar: Option<&Tensor>,
    gmean: Option<&Tensor>,
    self_: &Tensor,
    dim_opt: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
) -> Result<Option<Tensor>> {
    let gself = match gvar {
        Some(g) => Some(var_backward(g, self_, dim_opt, correction, keepdim)?),
        None => None,
    };
    add_mean_part(gself, gmean, self_, dim_opt, keepdim)
}

/// The gradient of `std_mean`: either output's gradient may be undefined.
pub fn std_mean_backward(
    gstd: Option<&Tensor>,
    gmean: Option<&Tensor>,
    self_: &Tensor,
    std: &Tensor,
    dim_opt: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
) -> Result<Option<Tensor>> {
    let gself = match gstd {
        Some(g) => Some(std_backward(std, g, self_, dim_opt, correction, keepdim)?),
        None => None,
    };
    add_mean_part(gself, gmean, self_, dim_opt, keepdim)
}

/// `gself + mean_backward(gmean)` for `var_mean` and `std_mean`, either part undefined.
fn add_mean_part(
    gself: Option<Tensor>,
    gmean: Option<&Tensor>,
    self_: &Tensor,
    dim_opt: Option<&[i64]>,
    keepdim: bool,
) -> Result<Option<Tensor>> {
    let Some(gm) = gmean else {
        return Ok(gself);
    };
    let aux = mean_backward(
        gm,
        &self_.sizes(),
        Some(dim_opt.unwrap_or(&[])),
        self_.numel(),
        keepdim,
    )?;
    Ok(Some(add_defined(gself, aux)?))
}

/// `a.defined() ? a + b : b`.
fn add_defined(a: Option<Tensor>, b: Tensor) -> Result<Tensor> {
    match a {
        Some(a) => F::add(&a, &b),
        None => Ok(b),
    }
}

/// The gradient of a reduction to one value (`max()`, `min()`): shared evenly by every
/// element equal to it (NaN counting as equal to a NaN result).
pub fn evenly_distribute_backward(grad: &Tensor, input: &Tensor, value: &Tensor) -> Result<Tensor> {
    let both_nan = F::logical_and(&F::isnan(input)?, &F::isnan(value)?)?;
    let mask = F::logical_or(&F::eq(input, value)?, &both_nan)?;
    F::mul(&mask, &F::div(grad, &F::sum(&mask)?)?)
}

/// The gradient of `amax`/`amin` style `aminmax`: each output's gradient shared evenly by
/// the elements equal to it; either gradient may be undefined.
pub fn aminmax_backward(
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    grad_min: Option<&Tensor>,
    grad_max: Option<&Tensor>,
    min: &Tensor,
    max: &Tensor,
) -> Result<Option<Tensor>> {
    let dims: Vec<i64> = dim.into_iter().collect();
    let mut result: Option<Tensor> = None;
    for (grad, value) in [(grad_min, min), (grad_max, max)] {
        if let Some(g) = grad {
            let reduced_grad = restore_reduced_dims(g, &dims, keepdim)?;
            let reduced_values = restore_reduced_dims(value, &dims, keepdim)?;
            let scaled =
                scale_grad_by_count(&reduced_grad, &F::eq(&reduced_values, self_)?, &dims)?;
            result = Some(add_defined(result, scaled)?);
        }
    }
    Ok(result)
}

/// The gradient of `max.dim`, `min.dim`, `kthvalue`, `sort`, `topk` (PyTorch's ATen
/// operator `value_selecting_reduction_backward`): `grad` scattered to the selected indices.
pub fn value_selecting_reduction_backward(
    grad: &Tensor,
    dim: i64,
    indices: &Tensor,
    sizes: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let grad_in = zeros_like_options(sizes, grad)?;
    if keepdim {
        return F::scatter_src(&grad_in, dim, indices, grad);
    }
    F::scatter_src(
        &grad_in,
        dim,
        &F::unsqueeze(indices, dim)?,
        &F::unsqueeze(grad, dim)?,
    )
}

/// The gradient of `logsumexp`: `grad * exp(self - result)`.
pub fn logsumexp_backward(
    grad: &Tensor,
    self_: &Tensor,
    result: &Tensor,
    dim: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let (mut grad, mut result) = (grad.clone(), result.clone());
    if !keepdim && self_.dim() != 0 {
        grad = unsqueeze_multiple(&grad, Some(dim), self_.dim() as i64)?;
        result = unsqueeze_multiple(&result, Some(dim), self_.dim() as i64)?;
    }
    F::mul(&grad, &conj(&F::exp(&F::sub(self_, &result)?)?)?)
}

/// `prod_safe_zeros_backward`: the gradient of a product along `dim` by exclusive cumulative
/// products from both ends, exact with zeros in the input.
pub fn prod_safe_zeros_backward(grad: &Tensor, inp: &Tensor, dim: i64) -> Result<Tensor> {
    if inp.numel() == 0 {
        return grad.expand_as(inp);
    }
    let d = maybe_wrap_dim(dim, inp.dim(), true)?;
    let size = inp.size(dim)?;
    let mut ones_size = inp.sizes().to_vec();
    ones_size[d] = 1;
    let ones = F::ones_with(
        &ones_size,
        Some(grad.scalar_type()),
        None,
        Some(grad.device()),
        None,
    )?;
    let exclusive_normal_nocp =
        F::cat_with(&[ones.clone(), F::narrow(inp, dim, 0, size - 1)?], dim)?;
    let exclusive_normal = F::cumprod(&exclusive_normal_nocp, dim)?;
    let narrow_reverse = reverse_dim(&F::narrow(inp, dim, 1, size - 1)?, dim)?;
    let exclusive_reverse_nocp = F::cat_with(&[ones, narrow_reverse], dim)?;
    let exclusive_reverse = reverse_dim(&F::cumprod(&exclusive_reverse_nocp, dim)?, dim)?;
    F::mul(
        grad,
        &conj(&F::mul(&exclusive_normal, &exclusive_reverse)?)?,
    )
}

/// Whether `t` holds a zero. On "meta" there is no data: answered true so that the callers
/// take the path that is exact for every input (PyTorch does the same for meta tensors).
fn has_zero(t: &Tensor) -> Result<bool> {
    if t.is_meta() {
        return Ok(true);
    }
    Ok(F::any(&F::eq_scalar(t, 0)?)?.item()?.to_bool())
}

/// The gradient of `prod()`. PyTorch returns zeros outright for two or more zeros when grad
/// mode is off; the safe path used here gives those same zeros.
pub fn prod_backward(grad: &Tensor, input: &Tensor, result: &Tensor) -> Result<Tensor> {
    if input.dim() == 0 {
        return Ok(grad.clone());
    }
    if !has_zero(input)? {
        return F::mul(grad, &conj(&F::div(result, input)?)?);
    }
    let flat = F::reshape(input, &[-1])?;
    prod_safe_zeros_backward(grad, &flat, 0)?.view_as(input)
}

/// `prod_backward(grad, input, result, dim, keepdim)`: the gradient of `prod.dim_int`.
#[doc(alias = "prod_backward")]
pub fn prod_backward_dim(
    grad: &Tensor,
    input: &Tensor,
    result: &Tensor,
    dim: i64,
    keepdim: bool,
) -> Result<Tensor> {
    if input.dim() == 0 {
        return Ok(grad.clone());
    }
    let dim = maybe_wrap_dim(dim, input.dim(), true)? as i64;
    let (mut grad, mut result) = (grad.clone(), result.clone());
    if !keepdim {
        grad = F::unsqueeze(&grad, dim)?;
        result = F::unsqueeze(&result, dim)?;
    }
    if !has_zero(input)? {
        return F::mul(&grad, &conj(&F::div(&result, input)?)?);
    }
    prod_safe_zeros_backward(&grad, input, dim)
}

/// The gradient of `norm(p, dim, keepdim)` over all dimensions (`norm.Scalar`); undefined
/// for p = 0 (the zero norm is piecewise constant).
pub fn norm_backward(
    grad: &Tensor,
    self_: &Tensor,
    p: Option<&Scalar>,
    norm: &Tensor,
) -> Result<Option<Tensor>> {
    norm_backward_dim(grad, self_, p, norm, &[], true)
}

/// `norm_backward(grad, self, p, norm, dim, keepdim)`.
#[doc(alias = "norm_backward")]
pub fn norm_backward_dim(
    grad: &Tensor,
    self_: &Tensor,
    p: Option<&Scalar>,
    norm: &Tensor,
    dim: &[i64],
    keepdim: bool,
) -> Result<Option<Tensor>> {
    let ndim = self_.dim() as i64;
    let p = match p {
        Some(p) => p.to_double()?,
        None => 2.0,
    };
    let (mut grad, mut norm) = (grad.clone(), norm.clone());
    if !keepdim && self_.dim() != 0 {
        grad = unsqueeze_multiple(&grad, Some(dim), ndim)?;
        norm = unsqueeze_multiple(&norm, Some(dim), ndim)?;
    }
    let norm_is_zero = F::eq_scalar(&norm, 0)?;
    let out = if p == 0.0 {
        return Ok(None);
    } else if p == 1.0 {
        F::mul(&sgn(self_)?, &grad)?
    } else if p == 2.0 {
        let scaled = F::masked_fill_scalar(&F::div(self_, &norm)?, &norm_is_zero, 0)?;
        F::mul(&grad, &scaled)?
    } else if p.is_infinite() {
        // The derivative of amax(abs(self)), NaNs respected: an element is selected when its
        // absolute value is the norm or it is NaN.
        let self_abs = F::abs(self_)?;
        let mask = F::logical_or(&F::eq(&self_abs, &norm)?, &F::isnan(&self_abs)?)?;
        let shared = F::mul(&F::div(&grad, &sum_dims(&mask, dim, true)?)?, &mask)?;
        F::mul(&sgn(self_)?, &shared)?
    } else if p < 1.0 {
        let pow = F::pow_tensor_scalar(&F::abs(self_)?, p - 1.0)?;
        let pow = F::masked_fill_scalar(&pow, &F::eq_scalar(self_, 0)?, 0)?;
        let self_scaled = F::mul(&sgn(self_)?, &pow)?;
        F::mul(
            &F::mul(&self_scaled, &grad)?,
            &F::pow_tensor_scalar(&norm, 1.0 - p)?,
        )?
    } else {
        let self_scaled = if p < 2.0 {
            F::mul(
                &sgn(self_)?,
                &F::pow_tensor_scalar(&F::abs(self_)?, p - 1.0)?,
            )?
        } else {
            F::mul(self_, &F::pow_tensor_scalar(&F::abs(self_)?, p - 2.0)?)?
        };
        let scale_v = F::div(&grad, &F::pow_tensor_scalar(&norm, p - 1.0)?)?;
        let scale_v = F::masked_fill_scalar(&scale_v, &norm_is_zero, 0)?;
        F::mul(&self_scaled, &scale_v)?
    };
    Ok(Some(out))
}

/// The gradient of `linalg_vector_norm(ord, dim, keepdim)`; undefined for ord = 0.
pub fn linalg_vector_norm_backward(
    grad: &Tensor,
    self_: &Tensor,
    ord: &Scalar,
    norm: &Tensor,
    opt_dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<Option<Tensor>> {
    norm_backward_dim(
        grad,
        self_,
        Some(ord),
        norm,
        opt_dim.unwrap_or(&[]),
        keepdim,
    )
}

// ----------------------------------------------------------------------------------------
// Scans
// ----------------------------------------------------------------------------------------

/// The gradient of `cumsum`: the reversed cumulative sum of `grad`.
pub fn cumsum_backward(grad: &Tensor, dim: i64) -> Result<Tensor> {
    if grad.numel() <= 1 || grad.size(dim)? == 1 {
        return Ok(grad.clone());
    }
    reversed_cumsum(grad, dim)
}

/// The gradient of `cumprod` (PyTorch's ATen operator `cumprod_backward`). Without zeros in
/// `input`: `reversed_cumsum(output * grad) / input`. With zeros, PyTorch picks an O(n)
/// formula when grad mode is off and this O(n^2) one (which is itself differentiable)
/// otherwise; both give the same values, this one is used always.
pub fn cumprod_backward(
    grad: &Tensor,
    input: &Tensor,
    dim: i64,
    output: &Tensor,
) -> Result<Tensor> {
    if input.numel() <= 1 {
        return Ok(grad.clone());
    }
    let dim = maybe_wrap_dim(dim, input.dim(), true)? as i64;
    let dim_size = input.size(dim)?;
    if dim_size == 1 {
        return Ok(grad.clone());
    }
    let input_conj = conj(input)?;
    let output_conj = conj(output)?;
    if !has_zero(input)? {
        let w = F::mul(&output_conj, grad)?;
        return F::div(&reversed_cumsum(&w, dim)?, &input_conj);
    }
    // grad_input[k] = sum_{j >= k} grad[j] * prod_{i <= j, i != k} input[i]: for each k, the
    // products omitting input[k] are prod(input[..k]) times the cumulative products of
    // input[k+1..], with prod(input[..k]) alone for j = k.
    let mut ones_size = input.sizes().to_vec();
    ones_size[dim as usize] = 1;
    let ones = F::ones_with(
        &[1],
        Some(grad.scalar_type()),
        None,
        Some(grad.device()),
        None,
    )?
    .expand(&ones_size)?;
    let mut grad_inputs = Vec::with_capacity(dim_size as usize);
    for k in 0..dim_size {
        let omitted_products = if k == 0 {
            let prods_from_k_plus_1 =
                F::cumprod(&F::narrow(&input_conj, dim, 1, dim_size - 1)?, dim)?;
            F::cat_with(&[ones.clone(), prods_from_k_plus_1], dim)?
        } else {
            let prods_until_k =
                F::prod_dim_int_with(&F::narrow(&input_conj, dim, 0, k)?, dim, true, None)?;
            if k == dim_size - 1 {
                prods_until_k
            } else {
                let prods_from_k_plus_1 =
                    F::cumprod(&F::narrow(&input_conj, dim, k + 1, dim_size - k - 1)?, dim)?;
                let products = F::mul(
                    &prods_until_k.expand_as(&prods_from_k_plus_1)?,
                    &prods_from_k_plus_1,
                )?;
                F::cat_with(&[prods_until_k, products], dim)?
            }
        };
        let grad_slice = F::narrow(grad, dim, k, dim_size - k)?;
        grad_inputs.push(sum_dims(
            &F::mul(&grad_slice, &omitted_products)?,
            &[dim],
            false,
        )?);
    }
    F::stack_with(&grad_inputs, dim)
}

/// The gradient of `cummax`/`cummin` (PyTorch's ATen operator `cummaxmin_backward`): `grad`
/// accumulated at the indices of the running extremum.
pub fn cummaxmin_backward(
    grad: &Tensor,
    input: &Tensor,
    indices: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    if input.numel() == 0 {
        return Ok(input.clone());
    }
    let result = zeros_like_options(&input.sizes(), input)?;
    F::scatter_add(&result, dim, indices, grad)
}

/// The gradient of `logcumsumexp`, computed in log space with the positive and negative parts
/// of `grad` apart (TensorFlow's formula, as PyTorch).
pub fn logcumsumexp_backward(
    grad: &Tensor,
    self_: &Tensor,
    result: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    if grad.dim() == 0 || grad.numel() == 0 {
        return Ok(grad.clone());
    }
    torch_check!(
        !grad.scalar_type().is_complex(),
        "logcumsumexp_backward: complex gradients need the operator 'conj', which ratten does \
         not declare"
    );
    let reverse_logcumsumexp = |x: &Tensor| -> Result<Tensor> {
        F::flip(&F::logcumsumexp(&F::flip(x, &[dim])?, dim)?, &[dim])
    };
    let grad_min = scalar_tensor_like(lowest(grad.scalar_type()), grad)?;
    let log_abs_grad = F::log(&F::abs(grad)?)?;
    let log_grad_positive = F::r#where(&F::gt_scalar(grad, 0)?, &log_abs_grad, &grad_min)?;
    let log_grad_negative = F::r#where(&F::lt_scalar(grad, 0)?, &log_abs_grad, &grad_min)?;
    let output_pos = F::exp(&F::add(
        &reverse_logcumsumexp(&F::sub(&log_grad_positive, result)?)?,
        self_,
    )?)?;
    let output_neg = F::exp(&F::add(
        &reverse_logcumsumexp(&F::sub(&log_grad_negative, result)?)?,
        self_,
    )?)?;
    F::sub(&output_pos, &output_neg)
}

// ----------------------------------------------------------------------------------------
// Pointwise
// ----------------------------------------------------------------------------------------

/// The gradient of `mul` for one operand: `grad * other.conj()`.
pub fn mul_tensor_backward(grad: &Tensor, other: &Tensor, self_st: ScalarType) -> Result<Tensor> {
    handle_r_to_c(self_st, &F::mul(grad, &conj(other)?)?)
}

/// `mul_tensor_backward(grad, Scalar other, self_st)` (`mul.Scalar`).
#[doc(alias = "mul_tensor_backward")]
pub fn mul_tensor_backward_scalar(
    grad: &Tensor,
    other: &Scalar,
    self_st: ScalarType,
) -> Result<Tensor> {
    handle_r_to_c(self_st, &F::mul_scalar(grad, other.conj())?)
}

/// The gradient of `div` for the dividend: `grad / other.conj()`.
pub fn div_tensor_self_backward(
    grad: &Tensor,
    other: &Tensor,
    self_st: ScalarType,
) -> Result<Tensor> {
    handle_r_to_c(self_st, &F::div(grad, &conj(other)?)?)
}

/// `div_tensor_self_backward(grad, other, self_st, rounding_mode)`: zero with a rounding
/// mode (a rounded quotient is piecewise constant).
#[doc(alias = "div_tensor_self_backward")]
pub fn div_tensor_self_backward_mode(
    grad: &Tensor,
    other: &Tensor,
    self_st: ScalarType,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    if rounding_mode.is_some() {
        return F::zeros_like_with(grad, Some(self_st), None, None, None, None);
    }
    div_tensor_self_backward(grad, other, self_st)
}

/// `div_tensor_self_backward(grad, Scalar other, self_st)` (`div.Scalar`).
#[doc(alias = "div_tensor_self_backward")]
pub fn div_tensor_self_backward_scalar(
    grad: &Tensor,
    other: &Scalar,
    self_st: ScalarType,
) -> Result<Tensor> {
    handle_r_to_c(self_st, &F::div_scalar(grad, other.conj())?)
}

/// `div_tensor_self_backward(grad, Scalar other, self_st, rounding_mode)`
/// (`div.Scalar_mode`).
#[doc(alias = "div_tensor_self_backward")]
pub fn div_tensor_self_backward_scalar_mode(
    grad: &Tensor,
    other: &Scalar,
    self_st: ScalarType,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    if rounding_mode.is_some() {
        return F::zeros_like_with(grad, Some(self_st), None, None, None, None);
    }
    div_tensor_self_backward_scalar(grad, other, self_st)
}

/// The gradient of `div` for the divisor: `-grad * (self / other / other).conj()`.
pub fn div_tensor_other_backward(grad: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let q = F::div(&F::div(self_, other)?, other)?;
    let result = F::mul(&F::neg(grad)?, &conj(&q)?)?;
    handle_r_to_c_tensor(other, &result)
}

/// `div_tensor_other_backward(grad, self, other, rounding_mode)`.
#[doc(alias = "div_tensor_other_backward")]
pub fn div_tensor_other_backward_mode(
    grad: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    if rounding_mode.is_some() {
        return F::zeros_like_with(grad, Some(other.scalar_type()), None, None, None, None);
    }
    div_tensor_other_backward(grad, self_, other)
}

/// The gradient of `pow.Tensor_Scalar`: `grad * (exponent * self^(exponent - 1)).conj()`,
/// zeros for a zero exponent.
pub fn pow_backward(grad: &Tensor, self_: &Tensor, exponent: &Scalar) -> Result<Tensor> {
    if exponent.equal(0.0) {
        return F::zeros_like(self_);
    }
    torch_check!(
        !exponent.is_complex(),
        "pow_backward: a complex exponent needs the operator 'conj', which ratten does not \
         declare"
    );
    let e = exponent.to_double()?;
    let d = F::mul_scalar(&F::pow_tensor_scalar(self_, e - 1.0)?, e)?;
    handle_r_to_c_tensor(self_, &F::mul(grad, &conj(&d)?)?)
}

/// The gradient of `pow.Tensor_Tensor` for the base.
pub fn pow_backward_self(grad: &Tensor, self_: &Tensor, exponent: &Tensor) -> Result<Tensor> {
    let d = F::mul(
        exponent,
        &F::pow_tensor_tensor(self_, &F::sub_scalar(exponent, 1)?)?,
    )?;
    let out = F::r#where(
        &F::eq_scalar(exponent, 0.0)?,
        &scalar_tensor_like(0.0, grad)?,
        &F::mul(grad, &conj(&d)?)?,
    )?;
    handle_r_to_c_tensor(self_, &out)
}

/// Where an exponent is real and non-negative (`exp >= 0`, or for a complex one
/// `imag(exp) == 0 && real(exp) >= 0`).
fn non_negative_real(exponent: &Tensor) -> Result<Tensor> {
    if !exponent.scalar_type().is_complex() {
        return F::ge_scalar(exponent, 0);
    }
    F::logical_and(
        &F::eq_scalar(&F::imag(exponent)?, 0)?,
        &F::ge_scalar(&F::real(exponent)?, 0)?,
    )
}

/// The gradient of `pow.Tensor_Tensor` for the exponent: `grad * (result * log(self))`,
/// zero where the base is 0 and the exponent non-negative.
pub fn pow_backward_exponent(
    grad: &Tensor,
    self_: &Tensor,
    exponent: &Tensor,
    result: &Tensor,
) -> Result<Tensor> {
    let cond = F::logical_and(&F::eq_scalar(self_, 0)?, &non_negative_real(exponent)?)?;
    let promoted = ratten_aten::native::type_properties::result_type(self_, exponent)?;
    let self_p = self_.to_dtype(promoted)?;
    let d = conj(&F::mul(result, &F::log(&self_p)?)?)?;
    let out = F::mul(
        grad,
        &F::r#where(&cond, &scalar_tensor_like(0.0, grad)?, &d)?,
    )?;
    handle_r_to_c_tensor(exponent, &out)
}

/// `pow_backward_exponent(grad, Scalar base, exponent, result)` (`pow.Scalar`).
#[doc(alias = "pow_backward_exponent")]
pub fn pow_backward_exponent_scalar(
    grad: &Tensor,
    base: &Scalar,
    exponent: &Tensor,
    result: &Tensor,
) -> Result<Tensor> {
    // A complex exponent takes the complex logarithm of a real base too.
    let log_base = if base.is_complex() || exponent.scalar_type().is_complex() {
        Scalar::ComplexDouble(base.to_complex_double()?.ln())
    } else {
        Scalar::Double(base.to_double()?.ln())
    };
    let d = conj(&F::mul_scalar(result, log_base)?)?;
    let out = if base.equal(0.0) {
        let cond = non_negative_real(exponent)?;
        F::mul(
            grad,
            &F::r#where(&cond, &scalar_tensor_like(0.0, grad)?, &d)?,
        )?
    } else {
        F::mul(grad, &d)?
    };
    handle_r_to_c_tensor(exponent, &out)
}

/// The gradient of `sgn` (`sgn_backward(self, grad, result)`, also its tangent): for a real
/// input `sgn` is piecewise constant, so zero; for a complex one the part of `gx` tangential
/// to the unit circle, `(gx - sgn * real(gx * sgn.conj())) / |x|`, zero where `x` is 0.
pub fn sgn_backward(x: &Tensor, gx: &Tensor, sgn: &Tensor) -> Result<Tensor> {
    if !x.scalar_type().is_complex() {
        return ratten_aten::functions::zeros_like(gx);
    }
    let abs = F::abs(x)?;
    let radial = F::mul(sgn, &real(&F::mul(gx, &conj(sgn)?)?)?)?;
    let out = F::div(&F::sub(gx, &radial)?, &abs)?;
    F::masked_fill_scalar(&out, &F::eq_scalar(&abs, 0.0)?, 0.0)
}

/// The gradient of `log1p`: `grad / (self + 1).conj()`.
pub fn log1p_backward(grad: &Tensor, self_: &Tensor) -> Result<Tensor> {
    F::div(grad, &conj(&F::add_scalar(self_, 1)?)?)
}

/// The gradient of `clamp(min, max)` with Scalar bounds: `grad` where `self_` lies within.
pub fn clamp_backward(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<&Scalar>,
    max: Option<&Scalar>,
) -> Result<Tensor> {
    let pred = match (min, max) {
        (Some(mn), Some(mx)) => {
            F::logical_and(&F::ge_scalar(self_, *mn)?, &F::le_scalar(self_, *mx)?)?
        }
        (Some(mn), None) => F::ge_scalar(self_, *mn)?,
        (None, Some(mx)) => F::le_scalar(self_, *mx)?,
        (None, None) => return Ok(grad.clone()),
    };
    F::r#where(&pred, grad, &scalar_tensor_like(0.0, grad)?)
}

/// `clamp_backward(grad, self, Tensor min, Tensor max)` (`clamp.Tensor`).
#[doc(alias = "clamp_backward")]
pub fn clamp_backward_tensor(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
) -> Result<Tensor> {
    let pred = match (min, max) {
        (Some(mn), Some(mx)) => F::logical_and(&F::ge(self_, mn)?, &F::le(self_, mx)?)?,
        (Some(mn), None) => F::ge(self_, mn)?,
        (None, Some(mx)) => F::le(self_, mx)?,
        (None, None) => return Ok(grad.clone()),
    };
    F::r#where(&pred, grad, &scalar_tensor_like(0.0, grad)?)
}

/// The gradients of `clamp.Tensor` for `min` and `max`: `grad` where that bound was taken
/// (min loses to max when min > max).
pub fn clamp_backward_min_max(
    grad: Option<&Tensor>,
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
    grad_input_mask: &[bool],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let Some(grad) = grad else {
        return Ok((None, None));
    };
    let want = |i: usize| grad_input_mask.get(i).copied().unwrap_or(false);
    let zero = scalar_tensor_like(0.0, grad)?;
    let mut ret = (None, None);
    match (min, max) {
        (Some(mn), Some(mx)) => {
            if want(0) {
                let pred = F::logical_and(&F::lt(self_, mn)?, &F::lt(mn, mx)?)?;
                ret.0 = Some(F::r#where(&pred, grad, &zero)?);
            }
            if want(1) {
                let pred = F::logical_or(&F::gt(self_, mx)?, &F::lt(mx, mn)?)?;
                ret.1 = Some(F::r#where(&pred, grad, &zero)?);
            }
        }
        (Some(mn), None) if want(0) => ret.0 = Some(F::r#where(&F::lt(self_, mn)?, grad, &zero)?),
        (None, Some(mx)) if want(1) => ret.1 = Some(F::r#where(&F::gt(self_, mx)?, grad, &zero)?),
        _ => {}
    }
    Ok(ret)
}

/// `tensor.masked_fill(mask, value)`. PyTorch fills in place when no graph is being
/// recorded; the out-of-place fill gives the same values and is always safe.
pub fn masked_fill_inplace_if_safe(
    tensor: &Tensor,
    mask: &Tensor,
    value: &Scalar,
) -> Result<Tensor> {
    F::masked_fill_scalar(tensor, mask, *value)
}

// ----------------------------------------------------------------------------------------
// Matrix products
// ----------------------------------------------------------------------------------------

/// The gradient of `mm`/`addmm` for the first matrix: `grad @ mat2^H * alpha`, computed as
/// `(mat2 @ grad^T)^T` when mat1 was column-major so that the gradient is too.
pub fn mm_mat1_backward(
    grad: &Tensor,
    mat2: &Tensor,
    mat1_sizes: &[i64],
    mat1_strides: &[i64],
    mat1_layout: Layout,
    alpha: &Scalar,
) -> Result<Tensor> {
    let alpha = alpha.conj();
    if mat1_layout == Layout::Strided
        && mat1_sizes.len() == 2
        && mat1_strides.len() == 2
        && mat1_strides[0] == 1
        && mat1_strides[1] == mat1_sizes[0]
    {
        let g = F::t(&F::mm(&conj(mat2)?, &F::t(grad)?)?)?;
        return maybe_multiply(&g, &alpha);
    }
    maybe_multiply(&F::mm(grad, &conj(&F::t(mat2)?)?)?, &alpha)
}

/// The gradient of `mm`/`addmm` for the second matrix: `mat1^H @ grad * alpha`.
pub fn mm_mat2_backward(
    grad: &Tensor,
    mat1: &Tensor,
    sizes: &[i64],
    strides: &[i64],
    layout: Layout,
    alpha: &Scalar,
) -> Result<Tensor> {
    let alpha = alpha.conj();
    if layout == Layout::Strided
        && sizes.len() == 2
        && strides.len() == 2
        && strides[0] == 1
        && strides[1] == sizes[0]
    {
        let g = F::t(&F::mm(&F::t(grad)?, &conj(mat1)?)?)?;
        return maybe_multiply(&g, &alpha);
    }
    maybe_multiply(&F::mm(&conj(&F::t(mat1)?)?, grad)?, &alpha)
}

// ----------------------------------------------------------------------------------------
// Shape operators
// ----------------------------------------------------------------------------------------

/// The gradient of `repeat`: `grad` folded into (repeat, size) pairs and summed over the
/// repeats; zeros when a repeat is 0.
pub fn repeat_backward(grad: &Tensor, repeats: &[i64], input_shape: &[i64]) -> Result<Tensor> {
    if repeats.contains(&0) {
        return zeros_like_options(input_shape, grad);
    }
    let input_dims = input_shape.len();
    torch_check!(
        repeats.len() >= input_dims && grad.dim() >= input_dims,
        "repeat_backward: {} repeats for an input of {} dimensions",
        repeats.len(),
        input_dims
    );
    let num_unsqueezed = grad.dim() - input_dims;
    let mut grad = grad.clone();
    for _ in 0..num_unsqueezed {
        grad = sum_dims(&grad, &[0], false)?;
    }
    let mut grad_size = Vec::with_capacity(2 * input_dims);
    let mut sum_dims_list = Vec::new();
    for (d, &size) in input_shape.iter().enumerate() {
        let repeat = repeats[d + num_unsqueezed];
        if repeat != 1 {
            grad_size.push(repeat);
            sum_dims_list.push(grad_size.len() as i64 - 1);
        }
        grad_size.push(size);
    }
    // An empty list would make sum reduce every dimension.
    if !sum_dims_list.is_empty() {
        grad = F::reshape(&grad, &grad_size)?;
        grad = sum_dims(&grad, &sum_dims_list, false)?;
    }
    Ok(grad)
}

/// The gradient of `slice.Tensor`: `grad` placed at the sliced positions of zeros of
/// `input_sizes` (PyTorch's `slice_backward` operator, here as `index_copy` into zeros).
pub fn slice_backward_wrapper(
    grad: &Tensor,
    input_sizes: &[i64],
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    torch_check!(step > 0, "slice step must be positive");
    let d = maybe_wrap_dim(dim, input_sizes.len(), true)?;
    let size = input_sizes.get(d).copied().unwrap_or(1);
    // at::slice's normalisation of start and end.
    let clamp = |v: i64| -> i64 {
        let v = if v < 0 { v + size } else { v };
        v.clamp(0, size)
    };
    let start_val = clamp(start.unwrap_or(0));
    let end_val = clamp(end.unwrap_or(i64::MAX)).max(start_val);
    let index = F::arange_start_step_with(
        start_val,
        end_val,
        step,
        Some(ScalarType::Long),
        None,
        Some(grad.device()),
        None,
    )?;
    let zeros = zeros_like_options(input_sizes, grad)?;
    F::index_copy(&zeros, d as i64, &index, grad)
}

/// The gradient of `split_with_sizes`: the outputs' gradients concatenated, zeros standing in
/// for undefined ones.
pub fn split_with_sizes_backward(
    grads: &[Option<Tensor>],
    split_sizes: &[i64],
    dim: i64,
    sizes: &[i64],
    options: &TensorOptions,
) -> Result<Tensor> {
    let dim = maybe_wrap_dim(dim, sizes.len(), true)?;
    let mut all_defined = Vec::with_capacity(grads.len());
    for (j, g) in grads.iter().enumerate() {
        match g {
            Some(g) => all_defined.push(g.clone()),
            None => {
                let mut grad_size = sizes.to_vec();
                grad_size[dim] = split_sizes.get(j).copied().ok_or_else(|| {
                    Error::runtime(format!(
                        "split_with_sizes_backward: {} gradients for {} split sizes",
                        grads.len(),
                        split_sizes.len()
                    ))
                })?;
                all_defined.push(zeros_with_options(&grad_size, options)?);
            }
        }
    }
    F::cat_with(&all_defined, dim as i64)
}

/// The gradient of `split.Tensor`: `split_with_sizes_backward` with equal pieces and a
/// shorter last one.
pub fn split_backward(
    grads: &[Option<Tensor>],
    split_size: i64,
    dim: i64,
    sizes: &[i64],
    options: &TensorOptions,
) -> Result<Tensor> {
    let d = maybe_wrap_dim(dim, sizes.len(), true)?;
    let dim_size = sizes.get(d).copied().unwrap_or(1);
    let num_splits = grads.len() as i64;
    torch_check!(num_splits > 0, "split_backward: no gradients");
    let mut split_sizes = vec![split_size; grads.len()];
    split_sizes[grads.len() - 1] = split_size - (split_size * num_splits - dim_size);
    split_with_sizes_backward(grads, &split_sizes, d as i64, sizes, options)
}

/// The gradient of `unbind`: the outputs' gradients stacked, zeros for undefined ones.
pub fn unbind_backward(grads: &[Option<Tensor>], dim: i64) -> Result<Tensor> {
    let Some(like) = grads.iter().flatten().next() else {
        return Err(Error::runtime(
            "unbind_backward: every gradient is undefined",
        ));
    };
    let sizes = like.sizes().to_vec();
    let zero = scalar_tensor_like(0, like)?;
    let mut tensors = Vec::with_capacity(grads.len());
    for g in grads {
        tensors.push(match g {
            Some(g) => g.clone(),
            None => zero.expand(&sizes)?,
        });
    }
    F::stack_with(&tensors, dim)
}

/// `to_args_sizes(tensors)`: the sizes of each tensor, saved by `cat` for its backward.
pub fn to_args_sizes(tensors: &[Tensor]) -> Result<Vec<Vec<i64>>> {
    Ok(tensors.iter().map(|t| t.sizes().to_vec()).collect())
}

/// `to_args_scalartypes(tensors)`: the dtype of each tensor, saved by `cat` and `stack`.
pub fn to_args_scalartypes(tensors: &[Tensor]) -> Result<Vec<ScalarType>> {
    Ok(tensors.iter().map(|t| t.scalar_type()).collect())
}

/// The gradients of `cat`: slices of `grad` along `dim` (legacy empty `[0]` inputs get an
/// empty gradient and do not count for the dimension).
pub fn cat_tensors_backward(
    grad: &Tensor,
    sizes: &[Vec<i64>],
    dtypes: &[ScalarType],
    dim: i64,
) -> Result<Vec<Tensor>> {
    // at::legacy_cat_wrap_dim: the first input that is not a 1-d empty tensor gives the rank.
    let rank = sizes
        .iter()
        .find(|s| !(s.len() == 1 && s[0] == 0))
        .map(|s| s.len())
        .unwrap_or(1);
    let dim = maybe_wrap_dim(dim, rank, true)?;
    let grad_is_complex = grad.scalar_type().is_complex();
    let grad_real = if grad_is_complex {
        Some(real(grad)?)
    } else {
        None
    };
    let mut accumulate = 0i64;
    let mut grad_inputs = Vec::with_capacity(sizes.len());
    for (i, shape) in sizes.iter().enumerate() {
        let input_complex = dtypes.get(i).is_some_and(|t| t.is_complex());
        let grad_val = match &grad_real {
            Some(r) if !input_complex => r,
            _ => grad,
        };
        if shape.len() == 1 && shape[0] == 0 {
            grad_inputs.push(zeros_like_options(&[0], grad_val)?);
            continue;
        }
        let size = shape[dim];
        accumulate += size;
        grad_inputs.push(F::narrow(grad_val, dim as i64, accumulate - size, size)?);
    }
    Ok(grad_inputs)
}

/// The gradients of `stack`: `grad.select(dim, i)` for input i.
pub fn stack_tensors_backward(
    grad: &Tensor,
    dim: i64,
    dtypes: &[ScalarType],
) -> Result<Vec<Tensor>> {
    let grad_is_complex = grad.scalar_type().is_complex();
    let mut grad_inputs = Vec::with_capacity(dtypes.len());
    for (i, dtype) in dtypes.iter().enumerate() {
        let mut gr = F::select(grad, dim, i as i64)?;
        if grad_is_complex && !dtype.is_complex() {
            gr = real(&gr)?;
        }
        grad_inputs.push(gr);
    }
    Ok(grad_inputs)
}

/// PyTorch's `TensorGeometry` (ATen/TensorGeometry.h): the sizes, strides and storage offset
/// of a tensor, saved without its data. `as_strided`'s node saves its input's geometry
/// (`TensorGeometry(self)` in the formula).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorGeometry {
    pub sizes: Vec<i64>,
    pub strides: Vec<i64>,
    pub storage_offset: i64,
}

impl TensorGeometry {
    /// `TensorGeometry(t)`.
    pub fn new(t: &Tensor) -> TensorGeometry {
        TensorGeometry {
            sizes: t.sizes().to_vec(),
            strides: t.strides().to_vec(),
            storage_offset: t.storage_offset(),
        }
    }
}

/// Whether a strided geometry (size-0 and size-1 dimensions removed) may address one element
/// twice: walking the dimensions by increasing stride, each stride must exceed the furthest
/// index the smaller ones reach (Note [ Detecting Memory Overlap Within A Strided Tensor ]).
fn maybe_overlapping_memory(sizes: &[i64], strides: &[i64]) -> bool {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| strides[i]);
    let mut max_index_in_slice = 0i64;
    for i in order {
        if strides[i] <= max_index_in_slice {
            return true;
        }
        max_index_in_slice += strides[i] * (sizes[i] - 1);
    }
    false
}

/// The number of storage elements a geometry reaches.
fn min_storage_size(sizes: &[i64], strides: &[i64], storage_offset: i64) -> i64 {
    let mut storage_size = storage_offset + 1;
    for (&size, &stride) in sizes.iter().zip(strides) {
        if size == 0 {
            return storage_offset;
        }
        storage_size += (size - 1) * stride;
    }
    storage_size
}

/// The gradient of `as_strided`: `grad` scattered into a zero "storage" through the output
/// geometry (accumulating where the output overlaps itself), divided where the input
/// geometry reads an element several times, and read back through the input geometry.
pub fn as_strided_backward(
    grad: &Tensor,
    input_geometry: &TensorGeometry,
    sizes: &[i64],
    strides: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    torch_check!(
        sizes.len() == grad.dim() && strides.len() == grad.dim(),
        "as_strided_backward: {} sizes and {} strides for a gradient of {} dimensions",
        sizes.len(),
        strides.len(),
        grad.dim()
    );
    let storage_offset = storage_offset.unwrap_or(input_geometry.storage_offset);
    // The output geometry without size-1 dimensions, expanded (stride 0) ones summed away.
    let mut grad = grad.clone();
    let (mut out_sizes, mut out_strides) = (Vec::new(), Vec::new());
    for i in (0..sizes.len()).rev() {
        let (size, stride) = (sizes[i], strides[i]);
        if size == 0 {
            return zeros_like_options(&input_geometry.sizes, &grad);
        } else if size == 1 {
            grad = F::squeeze_dim(&grad, i as i64)?;
        } else if stride == 0 {
            grad = sum_dims(&grad, &[i as i64], false)?;
        } else {
            out_sizes.insert(0, size);
            out_strides.insert(0, stride);
        }
    }
    let (mut inp_sizes, mut inp_strides) = (Vec::new(), Vec::new());
    for (&size, &stride) in input_geometry
        .sizes
        .iter()
        .zip(&input_geometry.strides)
        .rev()
    {
        if size == 0 {
            return zeros_like_options(&input_geometry.sizes, &grad);
        } else if size != 1 {
            inp_sizes.insert(0, size);
            inp_strides.insert(0, stride);
        }
    }
    let inp_maybe_overlap = maybe_overlapping_memory(&inp_sizes, &inp_strides);

    // A storage covering both geometries, offsets taken from the smaller one.
    let shared_offset = input_geometry.storage_offset.min(storage_offset);
    let inp_effective_offset = input_geometry.storage_offset - shared_offset;
    let out_effective_offset = storage_offset - shared_offset;
    let base_size = min_storage_size(&inp_sizes, &inp_strides, inp_effective_offset).max(
        min_storage_size(&out_sizes, &out_strides, out_effective_offset),
    );
    let flat_indices = F::arange_start_step_with(
        0,
        base_size,
        1,
        Some(ScalarType::Long),
        None,
        Some(grad.device()),
        None,
    )?;
    // PyTorch copies into a strided view of the storage when the output does not overlap
    // itself; index_add into zeros gives the same values either way, out of place.
    let storage = zeros_like_options(&[base_size], &grad)?;
    let out_indices = F::as_strided_with(
        &flat_indices,
        &out_sizes,
        &out_strides,
        Some(out_effective_offset),
    )?;
    let mut storage = F::index_add(
        &storage,
        0,
        &F::reshape(&out_indices, &[-1])?,
        &F::reshape(&grad, &[-1])?,
    )?;
    if inp_maybe_overlap {
        // Each storage element's gradient is shared by the input elements that read it (NaN
        // where none does: those are not visible through the input, as in PyTorch).
        let inp_indices = F::reshape(
            &F::as_strided_with(
                &flat_indices,
                &inp_sizes,
                &inp_strides,
                Some(inp_effective_offset),
            )?,
            &[-1],
        )?;
        let ones = F::ones_like(&inp_indices)?.to_dtype(grad.scalar_type())?;
        let count = F::index_add(
            &zeros_like_options(&[base_size], &grad)?,
            0,
            &inp_indices,
            &ones,
        )?;
        storage = F::div(&storage, &count)?;
    }
    F::as_strided_with(
        &storage,
        &input_geometry.sizes,
        &input_geometry.strides,
        Some(inp_effective_offset),
    )
}

// ----------------------------------------------------------------------------------------
// Indexing
// ----------------------------------------------------------------------------------------

/// The gradient of `index.Tensor`: `grad` accumulated into `zeros_like_self` at `indices`.
pub fn index_backward(
    zeros_like_self: &Tensor,
    indices: &[Option<Tensor>],
    grad: &Tensor,
) -> Result<Tensor> {
    F::index_put_with(zeros_like_self, indices, grad, true)
}

/// The gradient of `gather` (PyTorch's ATen operator `gather_backward`): `grad` accumulated
/// into zeros at `index`.
pub fn gather_backward(
    grad: &Tensor,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    sparse_grad: bool,
) -> Result<Tensor> {
    torch_check!(
        !sparse_grad,
        "gather_backward: sparse_grad=True needs sparse tensors, which ratten does not have"
    );
    let result = zeros_like_options(&self_.sizes(), grad)?;
    F::scatter_add(&result, dim, index, grad)
}

/// The gradient of `index_select` (PyTorch's ATen operator `index_select_backward`): `grad`
/// accumulated into zeros of `self_sizes` at `index`.
pub fn index_select_backward(
    grad: &Tensor,
    self_sizes: &[i64],
    dim: i64,
    index: &Tensor,
) -> Result<Tensor> {
    let zeros = zeros_like_options(self_sizes, grad)?;
    F::index_add(&zeros, dim, index, grad)
}

/// The gradient of `take`: `grad` accumulated into zeros of `self_`'s shape at the flat
/// `indices` (PyTorch's `put_(indices, grad, accumulate=true)`, here by `index_put` on the
/// flattened zeros).
pub fn take_backward(grad: &Tensor, self_: &Tensor, indices: &Tensor) -> Result<Tensor> {
    let flat = F::zeros_like(self_)?.reshape(&[-1])?;
    let index = [Some(F::reshape(indices, &[-1])?)];
    let out = F::index_put_with(&flat, &index, &F::reshape(grad, &[-1])?, true)?;
    F::reshape(&out, &self_.sizes())
}

/// The gradient of `masked_fill.Tensor` for the value: the sum of `grad` where `mask` holds.
pub fn masked_fill_backward(grad: &Tensor, mask: &Tensor) -> Result<Tensor> {
    F::sum(&F::masked_select(grad, mask)?)
}

/// The gradient of `masked_select` (PyTorch's ATen operator `masked_select_backward`):
/// `grad` scattered into zeros of the broadcast shape of input and mask.
pub fn masked_select_backward(grad: &Tensor, input: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let shape = infer_size(&input.sizes(), &mask.sizes())?;
    let zeros = F::zeros_like(&input.expand(&shape)?)?;
    F::masked_scatter(&zeros, mask, grad)
}

/// The gradient of `masked_scatter` for the source (PyTorch's ATen operator
/// `masked_scatter_backward`): the masked elements of `grad`, zero-padded to `sizes`.
pub fn masked_scatter_backward(grad: &Tensor, mask: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let numel: i64 = sizes.iter().product();
    let mut mask_selected = F::masked_select(grad, mask)?;
    let diff_nelem = numel - mask_selected.numel();
    if diff_nelem > 0 {
        let zeros_fillin = zeros_like_options(&[diff_nelem], grad)?;
        mask_selected = F::cat_with(&[mask_selected, zeros_fillin], 0)?;
    }
    mask_selected.view(sizes)
}

/// The gradients of `scatter_reduce.two` for `self` and `src`, for each `reduce`.
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce_backward(
    grad: Option<&Tensor>,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
    result: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let Some(grad) = grad else {
        return Ok((None, None));
    };
    let (mut grad_self, grad_src) = match reduce {
        "sum" => (grad.clone(), F::gather(grad, dim, index)?),
        "prod" => {
            // Exclusive products for the zeros of self and src computed explicitly.
            let masked_self = F::masked_fill_scalar(self_, &F::eq_scalar(self_, 0)?, 1)?;
            let masked_self_result =
                F::scatter_reduce_two_with(&masked_self, dim, index, src, reduce, include_self)?;
            let grad_self = F::div(&F::mul(grad, &masked_self_result)?, &masked_self)?;
            let src_zero = F::eq_scalar(src, 0)?;
            let src_num_zeros = F::gather(
                &F::scatter_add(
                    &F::zeros_like(self_)?,
                    dim,
                    index,
                    &src_zero.to_dtype(self_.scalar_type())?,
                )?,
                dim,
                index,
            )?;
            let src_single_zero = F::bitwise_and(&src_zero, &F::eq_scalar(&src_num_zeros, 1)?)?;
            // Where src holds the only zero of its position, grad * result / src would
            // propagate zeros: its exclusive product is recomputed with that zero masked.
            let masked_src = F::masked_fill_scalar(src, &src_single_zero, 1)?;
            let masked_src_result =
                F::scatter_reduce_two_with(self_, dim, index, &masked_src, reduce, include_self)?;
            let grad_src = F::r#where(
                &src_single_zero,
                &F::gather(&F::mul(grad, &masked_src_result)?, dim, index)?,
                &F::div(
                    &F::gather(&F::mul(grad, result)?, dim, index)?,
                    &F::masked_fill_scalar(src, &src_zero, 1)?,
                )?,
            )?;
            (grad_self, grad_src)
        }
        "mean" => {
            let n = if include_self {
                F::ones_like(grad)?
            } else {
                F::zeros_like(grad)?
            };
            let n = F::scatter_add(&n, dim, index, &F::ones_like(src)?)?;
            let n = F::masked_fill_scalar(&n, &F::eq_scalar(&n, 0)?, 1)?;
            let grad_self = F::div(grad, &n)?;
            let n_src = F::gather(&n, dim, index)?;
            let grad_src = F::div(&F::gather(grad, dim, index)?, &n_src)?;
            (grad_self, grad_src)
        }
        "amax" | "amin" => {
            // The gradient is shared evenly by the values equal to the result.
            let value = F::gather(result, dim, index)?;
            let self_is_result = F::eq(self_, result)?;
            let src_is_result = F::eq(src, &value)?;
            let n_to_distribute = F::scatter_add(
                &self_is_result.to_dtype(self_.scalar_type())?,
                dim,
                index,
                &src_is_result.to_dtype(self_.scalar_type())?,
            )?;
            let grad_distributed = F::div(grad, &n_to_distribute)?;
            let grad_self = F::mul(&self_is_result, &grad_distributed)?;
            let grad_src = F::mul(&src_is_result, &F::gather(&grad_distributed, dim, index)?)?;
            (grad_self, grad_src)
        }
        _ => {
            return Err(Error::runtime(format!(
                "Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got \
                 {reduce}."
            )))
        }
    };
    if !include_self {
        grad_self = F::scatter_value(&grad_self, dim, index, 0)?;
    }
    Ok((Some(grad_self), Some(grad_src)))
}

// ----------------------------------------------------------------------------------------
// Forward mode (the `result:` formulas): `_p` is a primal, `_t` its tangent
// ----------------------------------------------------------------------------------------

/// The tangent of `amax`/`amin`: the mean of the tangents at the selected elements.
pub fn amaxamin_jvp(
    x: &Tensor,
    dx: &Tensor,
    result: &Tensor,
    dim: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let mask = F::eq(x, &restore_reduced_dims(result, dim, keepdim)?)?;
    let selected = F::where_scalar_other(&mask, dx, 0.0)?;
    F::div(
        &sum_dims(&selected, dim, keepdim)?,
        &sum_dims(&mask, dim, keepdim)?,
    )
}

/// The tangent of either output of `aminmax(dim, keepdim)`.
pub fn aminmax_jvp(
    self_p: &Tensor,
    self_t: &Tensor,
    result: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<Tensor> {
    let dims: Vec<i64> = dim.into_iter().collect();
    amaxamin_jvp(self_p, self_t, result, &dims, keepdim)
}

/// The tangent of `max()`/`min()`: the mean of the tangents at the elements equal to the
/// result.
pub fn evenly_read_jvp(fw_grad: &Tensor, input: &Tensor, value: &Tensor) -> Result<Tensor> {
    let mask = F::eq(input, value)?;
    let count = F::sum(&mask)?;
    F::sum(&F::div(&F::mul(fw_grad, &mask)?, &count)?)
}

/// `input.gather(dim, indices)` with `indices` of a reduction without keepdim (the tangent of
/// `max.dim`, `kthvalue`, `sort`, ...).
pub fn gather_with_keepdimed_indices(
    input: &Tensor,
    dim: i64,
    indices: &Tensor,
    keepdim: bool,
) -> Result<Tensor> {
    if keepdim {
        return F::gather(input, dim, indices);
    }
    let out = F::gather(input, dim, &F::unsqueeze(indices, dim)?)?;
    F::squeeze_dim(&out, dim)
}

/// The tangent of `clamp.Tensor`: the tangent of whichever of self, min and max was taken
/// (max wins when min > max). A bound without a tangent contributes zeros.
pub fn clamp_jvp(
    self_p: &Tensor,
    self_t: &Tensor,
    min_p: Option<&Tensor>,
    min_t: Option<&Tensor>,
    max_p: Option<&Tensor>,
    max_t: Option<&Tensor>,
) -> Result<Tensor> {
    let tangent = |p: &Tensor, t: Option<&Tensor>| -> Result<Tensor> {
        match t {
            Some(t) => Ok(t.clone()),
            None => F::zeros_like(p),
        }
    };
    match (min_p, max_p) {
        (Some(mn), Some(mx)) => {
            let (mn_t, mx_t) = (tangent(mn, min_t)?, tangent(mx, max_t)?);
            let inner = F::r#where(&F::gt(self_p, mx)?, &mx_t, self_t)?;
            let inner = F::r#where(&F::lt(self_p, mn)?, &mn_t, &inner)?;
            F::r#where(&F::gt(mn, mx)?, &mx_t, &inner)
        }
        (Some(mn), None) => F::r#where(&F::gt(self_p, mn)?, self_t, &tangent(mn, min_t)?),
        (None, Some(mx)) => F::r#where(&F::lt(self_p, mx)?, self_t, &tangent(mx, max_t)?),
        (None, None) => Ok(self_t.clone()),
    }
}

/// The tangent of `logsumexp`: the softmax-weighted sum of the tangents.
pub fn logsumexp_jvp(
    self_p: &Tensor,
    self_t: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    let dim = dim.unwrap_or(&[]);
    // The exp-normalize trick; amax refuses empty tensors, whose value does not matter.
    let self_p_exp = if self_p.numel() > 0 {
        F::exp(&F::sub(self_p, &F::amax_with(self_p, dim, true)?)?)?
    } else {
        F::exp(self_p)?
    };
    let sumexp_p = sum_dims(&self_p_exp, dim, keepdim)?;
    let sumexp_t = sum_dims(&F::mul(&self_p_exp, self_t)?, dim, keepdim)?;
    F::div(&sumexp_t, &sumexp_p)
}

/// The tangent of `logcumsumexp`: the cumulative softmax-weighted sums of the tangents.
pub fn logcumsumexp_jvp(self_p: &Tensor, self_t: &Tensor, dim: i64) -> Result<Tensor> {
    let self_p_exp = if self_p.scalar_type().is_complex() {
        F::exp(self_p)?
    } else {
        // The exp-normalize trick.
        let (max, _) = F::max_dim_with(self_p, dim, true)?;
        F::exp(&F::sub(self_p, &max)?)?
    };
    let cumsumexp_p = F::cumsum(&self_p_exp, dim)?;
    let cumsumexp_pt = F::cumsum(&F::mul(&self_p_exp, self_t)?, dim)?;
    const EPS: f64 = 1e-13;
    let cumsumexp_pt =
        F::masked_fill_scalar(&cumsumexp_pt, &F::lt_scalar(&cumsumexp_p, EPS)?, 0.0)?;
    F::div(&cumsumexp_pt, &cumsumexp_p)
}

/// The tangent of `cumprod`, exact with zeros in the input: after the first zero of a slice
/// the tangent is the cumulative product with that zero replaced by its tangent.
pub fn cumprod_jvp(self_t: &Tensor, self_p: &Tensor, result: &Tensor, dim: i64) -> Result<Tensor> {
    let gradient = F::mul(&F::cumsum(&F::div(self_t, self_p)?, dim)?, result)?;
    let mask_zeros = F::eq_scalar(self_p, 0)?;
    if self_p.dim() == 0 {
        return F::r#where(&mask_zeros, self_t, &gradient);
    }
    let mask_first_zero = F::logical_and(
        &mask_zeros,
        &F::eq_scalar(&F::cumsum(&mask_zeros, dim)?, 1)?,
    )?;
    let new_grad = F::cumprod(&F::r#where(&mask_first_zero, self_t, self_p)?, dim)?;
    let mask_after_first_zero = F::cumsum(&mask_first_zero, dim)?.to_dtype(ScalarType::Bool)?;
    F::r#where(&mask_after_first_zero, &new_grad, &gradient)
}

/// The tangent of `norm(p)` over every dimension (`norm.Scalar`).
pub fn norm_jvp(
    self_p: &Tensor,
    self_t: &Tensor,
    p: Option<&Scalar>,
    norm: &Tensor,
) -> Result<Tensor> {
    norm_jvp_dim(self_p, self_t, p, norm, &[], true)
}

/// `norm_jvp(self_p, self_t, p, norm, dim, keepdim)`.
#[doc(alias = "norm_jvp")]
pub fn norm_jvp_dim(
    self_p: &Tensor,
    self_t: &Tensor,
    p: Option<&Scalar>,
    norm: &Tensor,
    dim: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let ndim = self_p.dim() as i64;
    let p = match p {
        Some(p) => p.to_double()?,
        None => 2.0,
    };
    let t_conj = conj(self_t)?;
    if p == 0.0 {
        return F::zeros_like(norm);
    }
    if p == 1.0 {
        let result = real(&F::mul(&sgn(self_p)?, &t_conj)?)?;
        return sum_dims(&result, dim, keepdim);
    }
    if p == 2.0 {
        let result = sum_dims(&real(&F::mul(self_p, &t_conj)?)?, dim, keepdim)?;
        let result = F::div(&result, norm)?;
        return F::masked_fill_scalar(&result, &F::eq_scalar(norm, 0)?, 0);
    }
    if p.is_infinite() {
        let mut norm = norm.clone();
        if !keepdim && self_p.dim() != 0 {
            norm = unsqueeze_multiple(&norm, Some(dim), ndim)?;
        }
        let both_nan = F::logical_and(&F::isnan(self_p)?, &F::isnan(&norm)?)?;
        let is_eq_max = F::logical_or(&F::eq(&F::abs(self_p)?, &norm)?, &both_nan)?
            .to_dtype(norm.scalar_type())?;
        let mut nb_max = F::count_nonzero_dim_int_list(&is_eq_max, dim)?;
        if self_p.dim() != 0 {
            nb_max = unsqueeze_multiple(&nb_max, Some(dim), ndim)?;
        }
        let t = real(&F::mul(&sgn(self_p)?, &t_conj)?)?;
        let shared = F::div(&F::mul(&t, &is_eq_max)?, &nb_max)?;
        return sum_dims(&shared, dim, keepdim);
    }
    let abs_p = F::abs(self_p)?;
    if p < 1.0 {
        let pow = F::masked_fill_scalar(
            &F::pow_tensor_scalar(&abs_p, p - 1.0)?,
            &F::eq_scalar(self_p, 0)?,
            0,
        )?;
        let t = real(&F::mul(&sgn(self_p)?, &t_conj)?)?;
        let sumpow_t = sum_dims(&F::mul(&pow, &t)?, dim, keepdim)?;
        return F::mul(&sumpow_t, &F::pow_tensor_scalar(norm, 1.0 - p)?);
    }
    let sumpow_t = if p < 2.0 {
        let t = real(&F::mul(&sgn(self_p)?, &t_conj)?)?;
        sum_dims(
            &F::mul(&F::pow_tensor_scalar(&abs_p, p - 1.0)?, &t)?,
            dim,
            keepdim,
        )?
    } else {
        let t = real(&F::mul(self_p, &t_conj)?)?;
        sum_dims(
            &F::mul(&F::pow_tensor_scalar(&abs_p, p - 2.0)?, &t)?,
            dim,
            keepdim,
        )?
    };
    let out = F::div(&sumpow_t, &F::pow_tensor_scalar(norm, p - 1.0)?)?;
    F::masked_fill_scalar(&out, &F::eq_scalar(norm, 0)?, 0)
}

/// The tangent of `linalg_vector_norm(ord, dim, keepdim)`.
pub fn linalg_vector_norm_jvp(
    self_p: &Tensor,
    self_t: &Tensor,
    ord: &Scalar,
    norm: &Tensor,
    opt_dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    norm_jvp_dim(
        self_p,
        self_t,
        Some(ord),
        norm,
        opt_dim.unwrap_or(&[]),
        keepdim,
    )
}

/// The tangent of `scatter_reduce.two`: linear for "sum" and "mean", the mean of the selected
/// tangents for "amax"/"amin", undefined (not implemented in PyTorch) for "prod".
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce_jvp(
    self_p: &Tensor,
    self_t: &Tensor,
    dim: i64,
    index: &Tensor,
    src_p: &Tensor,
    src_t: &Tensor,
    reduce: &str,
    include_self: bool,
    result: &Tensor,
) -> Result<Option<Tensor>> {
    match reduce {
        "sum" | "mean" => Ok(Some(F::scatter_reduce_two_with(
            self_t,
            dim,
            index,
            src_t,
            reduce,
            include_self,
        )?)),
        "amin" | "amax" => {
            let gather_result = F::gather(result, dim, index)?;
            let mask_self = F::eq(self_p, result)?;
            let mask_src = F::eq(src_p, &gather_result)?;
            let masked_src_t = F::where_scalar_other(&mask_src, src_t, 0.0)?;
            let div = F::scatter_reduce_two_with(
                &mask_self.to_dtype(self_t.scalar_type())?,
                dim,
                index,
                &mask_src.to_dtype(self_t.scalar_type())?,
                "sum",
                include_self,
            )?;
            let num = F::scatter_reduce_two_with(
                &F::where_scalar_other(&mask_self, self_t, 0.0)?,
                dim,
                index,
                &masked_src_t,
                "sum",
                include_self,
            )?;
            Ok(Some(F::div(&num, &div)?))
        }
        _ => Ok(None),
    }
}

// ----------------------------------------------------------------------------------------
// Note [ATen backward operators composed here]
// Some formulas call ATen operators that PyTorch declares in native_functions.yaml with their
// own kernels and derivatives (`sigmoid_backward`, `tanh_backward`, `threshold_backward`,
// `select_backward`, `diagonal_backward`, `unfold_backward`) and that ratten does not
// declare. They are composed here from declared, differentiable operators, so the formulas
// that call them translate and double backward works through their parts. Once ratten
// declares one of these operators, its function here goes, so that the formula calls the
// operator (one fused kernel). The CompositeImplicitAutograd operators of PyTorch that the
// formulas call (`value_selecting_reduction_backward`, `gather_backward`,
// `index_select_backward`, `cumprod_backward`, `cummaxmin_backward`,
// `masked_select_backward`, `masked_scatter_backward`) are above, beside the helpers: in
// PyTorch too they are compositions without a derivative of their own.
// ----------------------------------------------------------------------------------------

/// `sigmoid_backward(grad_output, output)`: `grad_output * (1 - output) * output`, conj.
pub fn sigmoid_backward(grad_output: &Tensor, output: &Tensor) -> Result<Tensor> {
    let d = F::mul(&F::rsub_scalar(output, 1)?, output)?;
    F::mul(grad_output, &conj(&d)?)
}

/// `tanh_backward(grad_output, output)`: `grad_output * (1 - output^2)`, conj.
pub fn tanh_backward(grad_output: &Tensor, output: &Tensor) -> Result<Tensor> {
    let d = F::rsub_scalar(&F::mul(output, output)?, 1)?;
    F::mul(grad_output, &conj(&d)?)
}

/// `threshold_backward(grad_output, self, threshold)`: `grad_output` where `self_` is above
/// `threshold`, 0 elsewhere (the gradient of `relu` with threshold 0).
pub fn threshold_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    threshold: &Scalar,
) -> Result<Tensor> {
    F::where_scalar_self(&F::le_scalar(self_, *threshold)?, 0, grad_output)
}

/// `select_backward(grad, input_sizes, dim, index)`: `grad` placed at `index` along `dim` of
/// zeros of `input_sizes`.
pub fn select_backward(grad: &Tensor, input_sizes: &[i64], dim: i64, index: i64) -> Result<Tensor> {
    let d = maybe_wrap_dim(dim, input_sizes.len(), true)?;
    let size = input_sizes.get(d).copied().unwrap_or(1);
    torch_check!(
        -size <= index && index < size,
        "select(): index {index} out of range for tensor of size {input_sizes:?} at dimension \
         {dim}"
    );
    let index = if index < 0 { index + size } else { index };
    if input_sizes.is_empty() {
        return Ok(grad.clone());
    }
    let index_t = F::full_with(
        &[1],
        index,
        Some(ScalarType::Long),
        None,
        Some(grad.device()),
        None,
    )?;
    let zeros = zeros_like_options(input_sizes, grad)?;
    F::index_copy(&zeros, d as i64, &index_t, &F::unsqueeze(grad, d as i64)?)
}

/// `diagonal_backward(grad, input_sizes, offset, dim1, dim2)`: `grad` placed on the
/// diagonal of zeros of `input_sizes`.
pub fn diagonal_backward(
    grad: &Tensor,
    input_sizes: &[i64],
    offset: i64,
    dim1: i64,
    dim2: i64,
) -> Result<Tensor> {
    let n = input_sizes.len();
    let d1 = maybe_wrap_dim(dim1, n, false)? as i64;
    let d2 = maybe_wrap_dim(dim2, n, false)? as i64;
    torch_check!(
        d1 != d2,
        "diagonal dimensions cannot be identical {dim1}, {dim2}"
    );
    let last = n as i64;
    // The two dimensions last, the others in order: the layout of `diagonal`'s output with
    // its diagonal dimension appended.
    let zeros = zeros_like_options(input_sizes, grad)?;
    let moved = F::movedim_intlist(&zeros, &[d1, d2], &[last - 2, last - 1])?;
    let len = grad.size(-1)?;
    let positions = |shift: i64| {
        F::arange_start_step_with(
            shift,
            shift + len,
            1,
            Some(ScalarType::Long),
            None,
            Some(grad.device()),
            None,
        )
    };
    let mut indices: Vec<Option<Tensor>> = vec![None; n - 2];
    indices.push(Some(positions((-offset).max(0))?));
    indices.push(Some(positions(offset.max(0))?));
    let filled = F::index_put_with(&moved, &indices, grad, false)?;
    F::movedim_intlist(&filled, &[last - 2, last - 1], &[d1, d2])
}

/// `unfold_backward(grad_in, input_sizes, dim, size, step)`: each window's gradient added
/// back at the positions it read (overlapping windows accumulate).
pub fn unfold_backward(
    grad_in: &Tensor,
    input_sizes: &[i64],
    dim: i64,
    size: i64,
    step: i64,
) -> Result<Tensor> {
    if input_sizes.is_empty() {
        // unfold of a 0-d tensor is a [size] view of it (size 0 or 1)
        return F::sum(grad_in);
    }
    let d = maybe_wrap_dim(dim, input_sizes.len(), true)? as i64;
    let n_windows = grad_in.size(d)?;
    // Position of element j of window i: i * step + j.
    let window = F::arange_start_step_with(
        0,
        n_windows * step,
        step,
        Some(ScalarType::Long),
        None,
        Some(grad_in.device()),
        None,
    )?;
    let within = F::arange_start_step_with(
        0,
        size,
        1,
        Some(ScalarType::Long),
        None,
        Some(grad_in.device()),
        None,
    )?;
    let index = F::reshape(
        &F::add(&F::unsqueeze(&window, 1)?, &F::unsqueeze(&within, 0)?)?,
        &[-1],
    )?;
    // [..., n_windows, ..., size] -> [..., n_windows, size, ...] -> [..., n_windows * size, ...]
    let moved = F::movedim(grad_in, -1, d + 1)?;
    let mut flat_sizes = input_sizes.to_vec();
    flat_sizes[d as usize] = n_windows * size;
    let values = F::reshape(&moved, &flat_sizes)?;
    let zeros = zeros_like_options(input_sizes, grad_in)?;
    F::index_add(&zeros, d, &index, &values)
}

// ----------------------------------------------------------------------------------------
// Activations
// ----------------------------------------------------------------------------------------

/// `cond ? t : 0` (PyTorch's `t * cond.type_as(t)`, without the cast).
fn masked_by(t: &Tensor, cond: &Tensor) -> Result<Tensor> {
    F::where_scalar_other(cond, t, 0)
}

/// `infinitely_differentiable_silu_backward(grad_output, input)`:
/// `grad_output * s * (1 + x (1 - s))` with `s = sigmoid(x)`, in differentiable operators.
pub fn infinitely_differentiable_silu_backward(
    grad_output: &Tensor,
    input: &Tensor,
) -> Result<Tensor> {
    let s = F::sigmoid(input)?;
    let inner = F::add_scalar(&F::mul(input, &F::rsub_scalar(&s, 1.0)?)?, 1.0)?;
    F::mul(&F::mul(grad_output, &s)?, &inner)
}

/// `infinitely_differentiable_mish_backward(grad_output, input)`:
/// `grad_output * (t + x s (1 - t^2))` with `s = sigmoid(x)`, `t = tanh(log1p(e^x))`.
pub fn infinitely_differentiable_mish_backward(
    grad_output: &Tensor,
    input: &Tensor,
) -> Result<Tensor> {
    let s = F::sigmoid(input)?;
    let t = F::tanh(&F::log1p(&F::exp(input)?)?)?;
    let one_minus_t2 = F::rsub_scalar(&F::mul(&t, &t)?, 1.0)?;
    let inner = F::add(&t, &F::mul(&F::mul(input, &s)?, &one_minus_t2)?)?;
    F::mul(grad_output, &inner)
}

/// `gelu_double_backward(ggI, gO, input, approximate)`: `ggI * gO * gelu''(input)`.
pub fn gelu_double_backward(
    ggi: &Tensor,
    go: &Tensor,
    input: &Tensor,
    approximate: &str,
) -> Result<Tensor> {
    let d2 = if approximate == "tanh" {
        let beta = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
        let kappa = 0.044715;
        let x2 = F::mul(input, input)?;
        let inner = F::mul_scalar(
            &F::add(input, &F::mul_scalar(&F::mul(&x2, input)?, kappa)?)?,
            beta,
        )?;
        let t = F::tanh(&inner)?;
        // f = x / 2, g = 1 - tanh^2 = sech^2, h = beta (1 + 3 kappa x^2).
        let f = F::mul_scalar(input, 0.5)?;
        let g = F::rsub_scalar(&F::mul(&t, &t)?, 1.0)?;
        let h = F::mul_scalar(
            &F::add_scalar(&F::mul_scalar(&x2, 3.0 * kappa)?, 1.0)?,
            beta,
        )?;
        let f_prime_gh = F::mul_scalar(&F::mul(&g, &h)?, 0.5)?;
        // g' = 2 sech (-sech tanh) h = -2 g tanh h.
        let g_prime = F::mul_scalar(&F::mul(&F::mul(&g, &t)?, &h)?, -2.0)?;
        let g_prime_fh = F::mul(&F::mul(&f, &h)?, &g_prime)?;
        let h_prime = F::mul_scalar(input, 6.0 * kappa * beta)?;
        let h_prime_fg = F::mul(&F::mul(&f, &g)?, &h_prime)?;
        F::add(
            &F::add(&F::mul_scalar(&f_prime_gh, 2.0)?, &g_prime_fh)?,
            &h_prime_fg,
        )?
    } else {
        let k = std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * 0.5;
        let x2 = F::mul(input, input)?;
        let pdf = F::mul_scalar(&F::exp(&F::mul_scalar(&x2, -0.5)?)?, k)?;
        F::sub(&F::mul_scalar(&pdf, 2.0)?, &F::mul(&x2, &pdf)?)?
    };
    F::mul(&F::mul(ggi, go)?, &d2)
}

/// `elu_double_backward(grad, grad_output, alpha, scale, input_scale, is_result,
/// self_or_result)`: the derivative of `elu_backward` with respect to its input (zero where
/// the input is positive).
#[allow(clippy::too_many_arguments)]
pub fn elu_double_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    alpha: &Scalar,
    scale: &Scalar,
    input_scale: &Scalar,
    is_result: bool,
    self_or_result: &Tensor,
) -> Result<Tensor> {
    let negative = F::lt_scalar(self_or_result, 0)?;
    let gg = F::mul_scalar(&F::mul(grad, grad_output)?, *input_scale)?;
    if is_result {
        masked_by(&gg, &negative)
    } else {
        let d = F::elu_backward(&gg, *alpha, *scale, *input_scale, is_result, self_or_result)?;
        masked_by(&d, &negative)
    }
}

/// `glu_double_backward(grad, grad_output, input, dim)`: the gradient of `glu_backward` with
/// respect to `input`.
pub fn glu_double_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    input: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    let d = maybe_wrap_dim(dim, input.dim(), true)?;
    let input_size = input.sizes()[d] / 2;
    let first_half = F::narrow(input, dim, 0, input_size)?;
    let second_half = F::narrow(input, dim, input_size, input_size)?;
    let sig = F::sigmoid(&second_half)?;
    let one_sub_sig = F::rsub_scalar(&sig, 1)?;
    let sig_one_sub_sig = F::mul(&sig, &one_sub_sig)?;
    let ggi_first = F::narrow(grad, dim, 0, input_size)?;
    let ggi_second = F::narrow(grad, dim, input_size, input_size)?;
    let ggi_second_times_first = F::mul(&ggi_second, &first_half)?;
    let gi_first = F::mul(&F::mul(&ggi_second, grad_output)?, &sig_one_sub_sig)?;
    let second_order = F::sub(
        &F::mul(&sig_one_sub_sig, &one_sub_sig)?,
        &F::mul(&F::mul(&sig, &sig)?, &one_sub_sig)?,
    )?;
    let gi_second = F::add(
        &F::mul(
            &F::mul(&ggi_second_times_first, grad_output)?,
            &second_order,
        )?,
        &F::mul(&F::mul(&ggi_first, grad_output)?, &sig_one_sub_sig)?,
    )?;
    F::cat_with(&[gi_first, gi_second], dim)
}

/// `glu_double_backward_grad_output(grad, input, dim)`: the gradient of `glu_backward` with
/// respect to `grad_output`.
pub fn glu_double_backward_grad_output(grad: &Tensor, input: &Tensor, dim: i64) -> Result<Tensor> {
    let d = maybe_wrap_dim(dim, input.dim(), true)?;
    let mut sizes = input.sizes().to_vec();
    sizes[d] /= 2;
    let ones = F::ones_with(
        &sizes,
        Some(input.scalar_type()),
        None,
        Some(input.device()),
        None,
    )?;
    let tmp = F::mul(grad, &F::glu_backward(&ones, input, d as i64)?)?;
    F::add(
        &F::narrow(&tmp, d as i64, 0, sizes[d])?,
        &F::narrow(&tmp, d as i64, sizes[d], sizes[d])?,
    )
}

/// `log_sigmoid_double_backward(grad, input)`: `grad * (s - 1) * s` with `s = sigmoid(x)`.
pub fn log_sigmoid_double_backward(grad: &Tensor, input: &Tensor) -> Result<Tensor> {
    let z = F::sigmoid(input)?;
    F::mul(&F::mul(grad, &F::sub_scalar(&z, 1)?)?, &z)
}

/// `softplus_double_backward(grad, input, beta, threshold)`:
/// `sigmoid_backward(grad, sigmoid(x beta)) * beta` where `x beta < threshold`, else 0.
pub fn softplus_double_backward(
    grad: &Tensor,
    input: &Tensor,
    beta: &Scalar,
    threshold: &Scalar,
) -> Result<Tensor> {
    let x = F::mul_scalar(input, *beta)?;
    let d = F::mul_scalar(&sigmoid_backward(grad, &F::sigmoid(&x)?)?, *beta)?;
    masked_by(&d, &F::lt_scalar(&x, *threshold)?)
}

// End of activations.

// ----------------------------------------------------------------------------------------
// Softmax and losses
// ----------------------------------------------------------------------------------------

/// `at::Reduction::Mean`.
const REDUCTION_MEAN: i64 = 1;
/// `at::Reduction::None`.
const REDUCTION_NONE: i64 = 0;

/// `t.sum(dim, /*keepdim=*/true)`.
fn sum_keepdim(t: &Tensor, dim: i64) -> Result<Tensor> {
    F::sum_dim_int_list_with(t, Some(&[dim]), true, None)
}

/// `t / numel` when the reduction is the mean.
fn mean_scaled(t: Tensor, numel: i64, reduction: i64) -> Result<Tensor> {
    if reduction == REDUCTION_MEAN {
        F::div_scalar(&t, numel as f64)
    } else {
        Ok(t)
    }
}

/// `t * weight` when a weight is given.
fn weighted(t: Tensor, weight: Option<&Tensor>) -> Result<Tensor> {
    match weight {
        Some(w) => F::mul(&t, w),
        None => Ok(t),
    }
}

/// `log(sigmoid(x))` as `min(x, 0) - log1p(exp(-|x|))`, differentiable through the
/// operators it is made of.
fn log_sigmoid_of(x: &Tensor) -> Result<Tensor> {
    F::sub(
        &F::clamp_with(x, None, Some(Scalar::from(0.0)))?,
        &F::log1p(&F::exp(&F::neg(&F::abs(x)?)?)?)?,
    )
}

/// The second derivative of softmax:
/// `gO * g - sum(y * gO, dim) * g - gO * sum(y * g, dim)`.
pub fn softmax_double_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    dim: i64,
    output: &Tensor,
) -> Result<Tensor> {
    let a = F::mul(grad_output, grad)?;
    let b = F::mul(&sum_keepdim(&F::mul(output, grad_output)?, dim)?, grad)?;
    let c = F::mul(grad_output, &sum_keepdim(&F::mul(output, grad)?, dim)?)?;
    F::sub(&F::sub(&a, &b)?, &c)
}

/// The gradient of binary_cross_entropy with respect to its target: `-logit(self) * grad`.
pub fn binary_cross_entropy_target_backward(
    grad: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let logit = F::log(&F::div(self_, &F::rsub_scalar(self_, 1.0)?)?)?;
    let grad_target = weighted(F::mul(&F::neg(&logit)?, grad)?, weight)?;
    mean_scaled(grad_target, target.numel(), reduction)
}

/// The derivative of binary_cross_entropy_backward with respect to `self`.
pub fn binary_cross_entropy_double_backward(
    grad_output: &Tensor,
    grad: &Tensor,
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let eps = 1e-12;
    let inp_pl_eps = F::add_scalar(input, eps)?;
    let one_m_inp_pl_eps = F::add_scalar(&F::rsub_scalar(input, 1.0)?, eps)?;
    // (x^2 - 2 x t + t) / ((x + eps)^2 (1 - x + eps)^2)
    let num = F::add(
        &F::sub(
            &F::mul(input, input)?,
            &F::mul_scalar(&F::mul(input, target)?, 2.0)?,
        )?,
        target,
    )?;
    let den = F::mul(
        &F::pow_tensor_scalar(&inp_pl_eps, 2.0)?,
        &F::pow_tensor_scalar(&one_m_inp_pl_eps, 2.0)?,
    )?;
    let gi = F::mul(&F::div(&num, &den)?, &F::mul(grad, grad_output)?)?;
    mean_scaled(weighted(gi, weight)?, input.numel(), reduction)
}

/// The derivative of binary_cross_entropy_backward with respect to `grad_output`.
pub fn binary_cross_entropy_double_backward_grad_output(
    grad: &Tensor,
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let eps = 1e-12;
    let den = F::mul(
        &F::add_scalar(input, eps)?,
        &F::add_scalar(&F::rsub_scalar(input, 1.0)?, eps)?,
    )?;
    let ggo = F::mul(&F::div(&F::sub(input, target)?, &den)?, grad)?;
    mean_scaled(weighted(ggo, weight)?, input.numel(), reduction)
}

/// The derivative of binary_cross_entropy_backward with respect to `target`.
pub fn binary_cross_entropy_double_backward_target(
    grad: &Tensor,
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let res = weighted(F::neg(&F::mul(grad, grad_output)?)?, weight)?;
    // The denominator is clamped outside the graph, as torch's NoGradGuard does.
    let denom = F::mul(&F::rsub_scalar(self_, 1.0)?, self_)?;
    let clamped = F::clamp(&denom.detach()?, Some(Scalar::from(1e-12)))?;
    let denom = F::add(&denom, &F::sub(&clamped, &denom.detach()?)?)?;
    mean_scaled(F::div(&res, &denom)?, target.numel(), reduction)
}

/// The gradient of binary_cross_entropy_with_logits with respect to `input`:
/// `(sigmoid(x) (1 + (pw - 1) t) - pw t) * grad` (`sigmoid(x) - t` without `pos_weight`).
pub fn binary_cross_entropy_with_logits_backward(
    grad: &Tensor,
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let grad_input = match pos_weight {
        Some(pw) => {
            let t = F::mul(pw, target)?;
            F::sub(
                &F::mul(
                    &F::sub(&F::add_scalar(&t, 1.0)?, target)?,
                    &F::sigmoid(input)?,
                )?,
                &t,
            )?
        }
        None => F::sub(&F::sigmoid(input)?, target)?,
    };
    let grad_input = weighted(F::mul(&grad_input, grad)?, weight)?;
    mean_scaled(grad_input, input.numel(), reduction)
}

/// The gradient of binary_cross_entropy_with_logits with respect to `target`.
pub fn binary_cross_entropy_with_logits_target_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let grad_target = match pos_weight {
        Some(pw) => F::mul(
            &F::sub(
                &log_sigmoid_of(&F::neg(self_)?)?,
                &F::mul(&log_sigmoid_of(self_)?, pw)?,
            )?,
            grad_output,
        )?,
        None => F::mul(&F::neg(self_)?, grad_output)?,
    };
    mean_scaled(weighted(grad_target, weight)?, target.numel(), reduction)
}

/// The derivative of mse_loss_backward with respect to `self`: `2 grad` (over numel for the
/// mean).
pub fn mse_loss_double_backward(grad: &Tensor, input: &Tensor, reduction: i64) -> Result<Tensor> {
    mean_scaled(F::mul_scalar(grad, 2.0)?, input.numel(), reduction)
}

/// The derivative of smooth_l1_loss_backward with respect to `self`: `grad / beta` where
/// `|self - target| < beta`, else 0.
pub fn smooth_l1_loss_double_backward(
    grad: &Tensor,
    input: &Tensor,
    target: &Tensor,
    reduction: i64,
    beta: f64,
) -> Result<Tensor> {
    if beta == 0.0 {
        return F::zeros_like(grad);
    }
    let d = F::abs(&F::sub(input, target)?)?;
    let inside = F::lt_scalar(&d, beta)?.to_dtype(grad.dtype())?;
    let grad_input = F::div_scalar(&F::mul(grad, &inside)?, beta)?;
    mean_scaled(grad_input, input.numel(), reduction)
}

/// The derivative of huber_loss_backward with respect to `self`: `grad` where
/// `|self - target| < delta`, else 0.
pub fn huber_loss_double_backward(
    grad: &Tensor,
    input: &Tensor,
    target: &Tensor,
    reduction: i64,
    delta: f64,
) -> Result<Tensor> {
    let d = F::abs(&F::sub(input, target)?)?;
    let grad_input = F::mul(grad, &F::lt_scalar(&d, delta)?)?;
    mean_scaled(grad_input, input.numel(), reduction)
}

/// The derivative of huber_loss_backward with respect to `grad_output`.
pub fn huber_loss_double_backward_grad_output(
    grad: &Tensor,
    grad_output: &Tensor,
    input: &Tensor,
    target: &Tensor,
    reduction: i64,
    delta: f64,
) -> Result<Tensor> {
    if reduction == REDUCTION_NONE {
        return F::huber_loss_backward(grad, input, target, reduction, delta);
    }
    let r = F::huber_loss_backward(&F::ones_like(grad_output)?, input, target, reduction, delta)?;
    F::sum(&F::mul(&r, grad)?)
}

// End of softmax and losses.

// ----------------------------------------------------------------------------------------
// Convolution and pooling
// ----------------------------------------------------------------------------------------

/// `max_pool2d_backward(grad, self, kernel_size, stride, padding, dilation, ceil_mode)`, the
/// formula of `max_pool2d`'s derivatives.yaml entry. torch declares that operator with an
/// MPS kernel only; ratten does not declare it, and `max_pool2d` is differentiated through its
/// decomposition (`max_pool2d_with_indices`), as torch's is on the CPU. The helper computes
/// the same gradient from the indices of `max_pool2d_with_indices`.
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d_backward(
    grad: &Tensor,
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    let (_, indices) =
        F::max_pool2d_with_indices_with(self_, kernel_size, stride, padding, dilation, ceil_mode)?;
    F::max_pool2d_with_indices_backward(
        grad,
        self_,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
        &indices,
    )
}

/// `convolution_backward` as the formulas of `convolution` and `_convolution` call it: the
/// operator's gradients, those `output_mask` does not ask for undefined (`None`), as torch's
/// operator returns them (ratten's operator returns an empty tensor there, having no undefined
/// tensors).
#[allow(clippy::too_many_arguments)]
pub fn convolution_backward(
    grad_output: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    bias_sizes: Option<&[i64]>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
    output_mask: &[bool],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let want = |i: usize| output_mask.get(i).copied().unwrap_or(false);
    let mask = [want(0), want(1), want(2)];
    let (gi, gw, gb) = F::convolution_backward(
        grad_output,
        input,
        weight,
        bias_sizes,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        &mask,
    )?;
    Ok((
        mask[0].then_some(gi),
        mask[1].then_some(gw),
        mask[2].then_some(gb),
    ))
}

/// `max_pool_double_backward`: the gradient of a max-pool backward with respect to its
/// grad_output, which gathers `grad` at the pooled indices over the last `dim` dims.
pub fn max_pool_double_backward(grad: &Tensor, indices: &Tensor, dim: i64) -> Result<Tensor> {
    let nd = indices.dim() as i64;
    torch_check!(
        nd >= dim,
        "max_pool_double_backward: indices have fewer than {dim} dims"
    );
    if indices.numel() != 0 {
        let mut size: Vec<i64> = indices.sizes()[..(nd - dim) as usize].to_vec();
        size.push(-1);
        let indices_view = indices.view(&size)?;
        grad.contiguous()?
            .view(&size)?
            .gather(-1, &indices_view)?
            .view(&indices.sizes())
    } else {
        F::empty_like_with(indices, Some(grad.scalar_type()), None, None, None, None)
    }
}

// End of convolution and pooling.

// ----------------------------------------------------------------------------------------
// Normalization, dropout, embedding, padding, interpolation
// ----------------------------------------------------------------------------------------

/// `t.sum(dim, keepdim)`.
fn sum_dim(t: &Tensor, dim: i64, keepdim: bool) -> Result<Tensor> {
    t.sum_dim_int_list_with(Some(&[dim]), keepdim, None)
}

/// A 0-dim or `sizes` tensor of ones with `like`'s dtype and device.
fn ones_like_options(sizes: &[i64], like: &Tensor) -> Result<Tensor> {
    F::ones_with(
        sizes,
        Some(like.scalar_type()),
        None,
        Some(like.device()),
        None,
    )
}

/// The gradient of `native_dropout` while grad mode is on (differentiable again):
/// `grad * (mask * scale)` with the mask in the gradient's dtype.
pub fn infinitely_differentiable_native_dropout_backward(
    grad: &Tensor,
    mask: &Tensor,
    scale: f64,
) -> Result<Tensor> {
    grad.mul(&mask.type_as(grad)?.mul_scalar(scale)?)
}

/// The gradient of `native_dropout_backward` for its `grad_output`.
pub fn native_dropout_double_backward(
    ggi: &Tensor,
    grad: &Tensor,
    mask: &Tensor,
    scale: f64,
) -> Result<Tensor> {
    ggi.type_as(grad)?
        .mul(&mask.type_as(grad)?.mul_scalar(scale)?)
}

/// The gradient of `embedding_dense_backward` for its `grad_output`: the rows of `grad` the
/// indices name (padding_idx's rows zero), shaped `indices.shape + [-1]`.
#[doc(alias = "embedding_dense_double_backward_symint")]
pub fn embedding_dense_double_backward(
    grad: &Tensor,
    indices: &Tensor,
    padding_idx: i64,
) -> Result<Tensor> {
    let flat = indices.reshape(&[-1])?;
    let mut gg_weight = grad.index_select(0, &flat)?;
    let mut size = indices.sizes().to_vec();
    size.push(-1);
    if padding_idx >= 0 {
        let pad = flat.eq_scalar(padding_idx)?.reshape(&[-1, 1])?;
        gg_weight = gg_weight.masked_fill_scalar(&pad, 0)?;
    }
    gg_weight.view(&size)
}

/// `sum_exclude_dim1`: the sum over every dim but 1.
fn sum_exclude_dim1(to_sum: &Tensor, keepdim: bool) -> Result<Tensor> {
    let mut r = sum_dim(to_sum, 0, keepdim)?;
    let start_exclusive = if keepdim { 1 } else { 0 };
    let mut dim = r.dim() as i64 - 1;
    while dim > start_exclusive {
        r = sum_dim(&r, dim, keepdim)?;
        dim -= 1;
    }
    Ok(r)
}

/// `unsqueeze_dim1`: `src` (per channel) shaped to broadcast along dim 1 of `target`.
fn unsqueeze_dim1(src: &Tensor, target: &Tensor) -> Result<Tensor> {
    let mut s = src.clone();
    while s.dim() + 1 < target.dim() {
        s = s.unsqueeze(1)?;
    }
    if s.dim() + 1 == target.dim() {
        s = s.unsqueeze(0)?;
    }
    Ok(s)
}

/// `expand_as_dim1`: a per-channel `src` expanded to `target`'s shape along dim 1.
fn expand_as_dim1(src: &Tensor, target: &Tensor) -> Result<Tensor> {
    let mut s = src.clone();
    while s.dim() + 1 < target.dim() {
        s = s.unsqueeze(1)?;
    }
    s.expand_as(target)
}

/// The gradients of `native_batch_norm_backward` (torch's `batchnorm_double_backward`):
/// `(grad input, grad gamma, grad grad_out)` from the gradients `ggi`, `ggg`, `ggb` of its
/// outputs.
#[allow(clippy::too_many_arguments)]
pub fn batchnorm_double_backward(
    input: &Tensor,
    gamma: Option<&Tensor>,
    ggi: Option<&Tensor>,
    ggg: Option<&Tensor>,
    ggb: Option<&Tensor>,
    g_o: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    eps: f64,
    save_mean: Option<&Tensor>,
    save_invstd: Option<&Tensor>,
    output_mask: &[bool],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let affine = gamma.is_some();
    let (gamma_expanded, ggg_expanded, ggb_expanded) = match gamma {
        Some(g) => (
            expand_as_dim1(g, input)?,
            ggg.map(|t| expand_as_dim1(t, input)).transpose()?,
            ggb.map(|t| expand_as_dim1(t, input)).transpose()?,
        ),
        None => (ones_like_options(&[], input)?, None, None),
    };
    let sizes = input.sizes();
    let m = (sizes[0] * sizes[2..].iter().product::<i64>()) as f64;
    let missing = || Error::runtime("batchnorm_double_backward: missing statistics");
    let mu = if training {
        save_mean
            .ok_or_else(missing)?
            .to_dtype(input.scalar_type())?
    } else {
        running_mean.ok_or_else(missing)?.clone()
    };
    let mu = unsqueeze_dim1(&mu, input)?;
    let input_sub_mu = input.sub(&mu)?;
    let invstd = if training {
        save_invstd
            .ok_or_else(missing)?
            .to_dtype(input.scalar_type())?
    } else {
        running_var
            .ok_or_else(missing)?
            .add_scalar(eps)?
            .pow_tensor_scalar(-0.5)?
    };
    let sigma2_eps_neg_1_2 = unsqueeze_dim1(&invstd, input)?;
    let sigma2_eps_neg_1 = sigma2_eps_neg_1_2.pow_tensor_scalar(2)?;
    let sigma2_eps_neg_3_2 = sigma2_eps_neg_1_2.pow_tensor_scalar(3)?;

    let input_mu_sigma2_neg_3_2 = input_sub_mu.mul(&sigma2_eps_neg_3_2)?;
    let g_oinmu_sum = sum_exclude_dim1(&g_o.mul(&input_sub_mu)?, true)?;
    let g_o_sum = sum_exclude_dim1(g_o, true)?;

    let mut g_i: Option<Tensor> = None;
    if let (Some(ggi), true) = (ggi, training) {
        let ggi_sum = sum_exclude_dim1(ggi, true)?;
        let ggiinmu_sum = sum_exclude_dim1(&ggi.mul(&input_sub_mu)?, true)?;
        let all_sub = ggi_sum
            .mul(&g_o_sum)?
            .div_scalar(m)?
            .sub(&sum_exclude_dim1(&g_o.mul(ggi)?, true)?)?
            .add(
                &sigma2_eps_neg_1
                    .mul(&g_oinmu_sum)?
                    .mul(&ggiinmu_sum)?
                    .mul_scalar(3.0 / m)?,
            )?;
        let g_i_0t = input_mu_sigma2_neg_3_2.mul(&all_sub)?.div_scalar(m)?;
        let g_i_1t = ggiinmu_sum
            .mul(&sigma2_eps_neg_3_2)?
            .div_scalar(m)?
            .mul(&g_o_sum.div_scalar(m)?.sub(g_o)?)?;
        let g_i_2t = g_oinmu_sum
            .mul(&sigma2_eps_neg_3_2)?
            .div_scalar(m)?
            .mul(&ggi_sum.div_scalar(m)?.sub(ggi)?)?;
        g_i = Some(gamma_expanded.mul(&g_i_0t.add(&g_i_1t)?.add(&g_i_2t)?)?);
    }

    if let (true, Some(ggg_e)) = (affine, ggg_expanded.as_ref()) {
        let term = if training {
            let t0 = g_o.mul(&sigma2_eps_neg_1_2)?;
            let t1 = sigma2_eps_neg_1_2.mul(&g_o_sum)?.div_scalar(-m)?;
            let t2 = input_mu_sigma2_neg_3_2
                .mul(&sum_exclude_dim1(&g_o.mul(&input_sub_mu)?, true)?)?
                .div_scalar(-m)?;
            ggg_e.mul(&t0.add(&t1)?.add(&t2)?)?
        } else {
            ggg_e.mul(&sigma2_eps_neg_1_2)?.mul(g_o)?
        };
        g_i = Some(add_defined(g_i, term)?);
    }

    // The first backward's grad_input.
    let first_back_grad_input = |g_o: &Tensor, gamma: &Tensor| -> Result<Tensor> {
        let h0 = gamma.mul(&sigma2_eps_neg_1_2)?.div_scalar(m)?;
        let h1 = g_o.mul_scalar(m)?.sub(&sum_exclude_dim1(g_o, true)?)?.sub(
            &input_sub_mu
                .mul(&sigma2_eps_neg_1)?
                .mul(&sum_exclude_dim1(&g_o.mul(&input_sub_mu)?, true)?)?,
        )?;
        h0.mul(&h1)
    };

    let mut g_g: Option<Tensor> = None;
    if let (true, Some(ggi)) = (affine, ggi) {
        g_g = Some(if training {
            let one = ones_like_options(&[], &sigma2_eps_neg_1_2)?;
            sum_exclude_dim1(&ggi.mul(&first_back_grad_input(g_o, &one)?)?, false)?
        } else {
            sum_exclude_dim1(&ggi.mul(g_o)?.mul(&sigma2_eps_neg_1_2)?, false)?
        });
    }

    let mut gg_o: Option<Tensor> = None;
    if let Some(ggi) = ggi {
        gg_o = Some(if training {
            first_back_grad_input(ggi, &gamma_expanded)?
        } else {
            ggi.mul(&sigma2_eps_neg_1_2)?.mul(&gamma_expanded)?
        });
    }
    if let Some(ggg_e) = ggg_expanded.as_ref() {
        let term = ggg_e.mul(&input_sub_mu)?.mul(&sigma2_eps_neg_1_2)?;
        gg_o = Some(add_defined(gg_o, term)?);
    }
    if let Some(ggb_e) = ggb_expanded {
        gg_o = Some(add_defined(gg_o, ggb_e)?);
    }
    torch_check!(
        !(output_mask[1] && g_g.is_none()) || affine,
        "gamma should always be defined when it requires grad"
    );
    Ok((g_i, g_g, gg_o))
}

/// The gradients of `native_layer_norm_backward` (torch's `layer_norm_double_backward`):
/// `(grad input, grad gamma, grad grad_out)`.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_double_backward(
    input_t: &Tensor,
    gamma: Option<&Tensor>,
    ggi: Option<&Tensor>,
    ggg: Option<&Tensor>,
    ggb: Option<&Tensor>,
    g_o_t: &Tensor,
    save_mean_t: &Tensor,
    save_invstd_t: &Tensor,
    normalized_shape: &[i64],
    output_mask: &[bool],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let input_shape = input_t.sizes();
    let axis = input_shape.len() - normalized_shape.len();
    let m_i = input_shape[..axis].iter().product::<i64>();
    let n_i = input_shape[axis..].iter().product::<i64>();
    let n = n_i as f64;
    let input = input_t.reshape(&[m_i, n_i])?;
    let g_o = g_o_t.reshape(&[m_i, n_i])?;
    let save_mean = save_mean_t.reshape(&[m_i, 1])?;
    let save_invstd = save_invstd_t.reshape(&[m_i, 1])?;

    let affine = gamma.is_some();
    let (gamma_expanded, ggg_expanded, ggb_expanded) = match gamma {
        Some(g) => (
            g.reshape(&[1, n_i])?,
            ggg.map(|t| t.reshape(&[1, n_i])).transpose()?,
            ggb.map(|t| t.reshape(&[1, n_i])).transpose()?,
        ),
        None => (ones_like_options(&[1], &input)?, None, None),
    };
    let ggi_expanded = ggi.map(|t| t.reshape(&[m_i, n_i])).transpose()?;

    let mu = save_mean.to_dtype(input.scalar_type())?;
    let input_sub_mu = input.sub(&mu)?;
    let sigma2_eps_neg_1_2 = save_invstd.to_dtype(input.scalar_type())?;
    let sigma2_eps_neg_1 = sigma2_eps_neg_1_2.pow_tensor_scalar(2)?;
    let sigma2_eps_neg_3_2 = sigma2_eps_neg_1_2.pow_tensor_scalar(3)?;

    let input_mu_sigma2_neg_3_2 = input_sub_mu.mul(&sigma2_eps_neg_3_2)?;
    let mut g_i: Option<Tensor> = None;
    if let Some(ggi_e) = ggi_expanded.as_ref() {
        let gxhat = g_o.mul(&gamma_expanded)?;
        let gxhat_mu_sum = sum_dim(&gxhat.mul(&input_sub_mu)?, 1, true)?;
        let gxhat_sum = sum_dim(&gxhat, 1, true)?;
        let ggi_sum = sum_dim(ggi_e, 1, true)?;
        let ggi_mu_sum = sum_dim(&ggi_e.mul(&input_sub_mu)?, 1, true)?;
        let all_sub = ggi_sum
            .mul(&gxhat_sum)?
            .div_scalar(n)?
            .sub(&sum_dim(&ggi_e.mul(&gxhat)?, 1, true)?)?
            .add(
                &sigma2_eps_neg_1
                    .mul(&gxhat_mu_sum)?
                    .mul(&ggi_mu_sum)?
                    .mul_scalar(3.0 / n)?,
            )?;
        let g_i_0t = input_mu_sigma2_neg_3_2.mul(&all_sub)?.div_scalar(n)?;
        let g_i_1t = ggi_mu_sum
            .mul(&sigma2_eps_neg_3_2)?
            .div_scalar(n)?
            .mul(&gxhat_sum.div_scalar(n)?.sub(&gxhat)?)?;
        let g_i_2t = gxhat_mu_sum
            .mul(&sigma2_eps_neg_3_2)?
            .div_scalar(n)?
            .mul(&ggi_sum.div_scalar(n)?.sub(ggi_e)?)?;
        g_i = Some(g_i_0t.add(&g_i_1t)?.add(&g_i_2t)?);
    }
    if let (true, Some(ggg_e)) = (affine, ggg_expanded.as_ref()) {
        let t0 = g_o.mul(ggg_e)?.mul(&sigma2_eps_neg_1_2)?;
        let t1 = sigma2_eps_neg_1_2
            .mul(&sum_dim(&g_o.mul(ggg_e)?, 1, true)?)?
            .div_scalar(-n)?;
        let t2 = input_mu_sigma2_neg_3_2
            .mul(&sum_dim(&g_o.mul(ggg_e)?.mul(&input_sub_mu)?, 1, true)?)?
            .div_scalar(-n)?;
        g_i = Some(add_defined(g_i, t0.add(&t1)?.add(&t2)?)?);
    }
    let g_i = g_i.map(|t| t.reshape_as(input_t)).transpose()?;

    let first_bwd_fn_grad_input = |g_o_local: &Tensor, gamma_local: &Tensor| -> Result<Tensor> {
        let h0 = gamma_local.mul(&sigma2_eps_neg_1_2)?.div_scalar(n)?;
        let h1 = g_o_local
            .mul_scalar(n)?
            .sub(&sum_dim(g_o_local, 1, true)?)?
            .sub(&input_sub_mu.mul(&sigma2_eps_neg_1)?.mul(&sum_dim(
                &g_o_local.mul(&input_sub_mu)?,
                1,
                true,
            )?)?)?;
        h0.mul(&h1)
    };

    let mut g_g: Option<Tensor> = None;
    if let (Some(gm), Some(ggi_e)) = (gamma, ggi_expanded.as_ref()) {
        let one = ones_like_options(&[], &sigma2_eps_neg_1_2)?;
        let gg = first_bwd_fn_grad_input(ggi_e, &one)?;
        g_g = Some(sum_dim(&g_o.mul(&gg)?, 0, false)?.reshape_as(gm)?);
    }

    let mut gg_o: Option<Tensor> = None;
    if let Some(ggi_e) = ggi_expanded.as_ref() {
        gg_o = Some(first_bwd_fn_grad_input(ggi_e, &gamma_expanded)?);
    }
    if let Some(ggg_e) = ggg_expanded.as_ref() {
        let term = ggg_e.mul(&input_sub_mu)?.mul(&sigma2_eps_neg_1_2)?;
        gg_o = Some(add_defined(gg_o, term)?);
    }
    if let Some(ggb_e) = ggb_expanded {
        gg_o = Some(add_defined(gg_o, ggb_e)?);
    }
    let gg_o = gg_o
        .map(|t| t.expand(&[m_i, n_i])?.reshape_as(input_t))
        .transpose()?;
    torch_check!(
        !(output_mask[1] && g_g.is_none()) || affine,
        "gamma should always be defined when it requires grad"
    );
    Ok((g_i, g_g, gg_o))
}

/// The gradient of `constant_pad_nd`: the gradient cropped by the negated padding.
#[doc(alias = "constant_pad_nd_backward_symint")]
pub fn constant_pad_nd_backward(grad: &Tensor, pad: &[i64]) -> Result<Tensor> {
    let negated: Vec<i64> = pad.iter().map(|p| -p).collect();
    F::constant_pad_nd(grad, &negated)
}

/// The gradients of `native_group_norm` (`(input, weight, bias)`) from the gradients of its
/// three outputs, any of which may be undefined, by differentiable operations (torch's
/// `infinitely_differentiable_native_group_norm_backward`, which the formula's dispatcher runs
/// when grad mode is on or the statistics have gradients).
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm_backward_dispatcher(
    d_y: Option<&Tensor>,
    dmean: Option<&Tensor>,
    drstd: Option<&Tensor>,
    x: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
    gamma: Option<&Tensor>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    grad_input_mask: &[bool],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let g = group;
    let d = c / g;
    let s = 1.0 / (d * hxw) as f64;
    let x_tensor = x.reshape(&[n, g, d, hxw])?;
    let mean_tensor = mean.reshape(&[n, g, 1, 1])?;
    let rstd_tensor = rstd.reshape(&[n, g, 1, 1])?;
    let sums = match d_y {
        Some(dy) => {
            let dy_t = dy.reshape(&[n, g, d, hxw])?;
            let ds = sum_dim(&dy_t.mul(&x_tensor)?, 3, false)?.unsqueeze(-1)?;
            let db = sum_dim(&dy_t, 3, false)?.unsqueeze(-1)?;
            Some((dy_t, ds, db))
        }
        None => None,
    };
    let gamma_tensor = gamma.map(|t| t.reshape(&[1, g, d, 1])).transpose()?;
    let mut d_x = None;
    if grad_input_mask[0] {
        let rstd_cube = rstd_tensor.mul(&rstd_tensor)?.mul(&rstd_tensor)?;
        let dvar = drstd
            .map(|dr| rstd_cube.mul_scalar(-0.5)?.mul(&dr.view(&[n, g, 1, 1])?))
            .transpose()?;
        let stats_part = match (dmean, dvar.as_ref()) {
            (Some(dm), Some(dv)) => var_mean_backward(
                Some(dv),
                Some(&dm.view(&[n, g, 1, 1])?),
                &x_tensor,
                Some(&[2, 3]),
                Some(&Scalar::Int(0)),
                true,
            )?,
            _ => None,
        };
        if let Some((dy_t, ds, db)) = sums.as_ref() {
            let a = match gamma_tensor.as_ref() {
                Some(gt) => rstd_tensor.mul(gt)?,
                None => rstd_tensor.clone(),
            };
            let (bs, cs) = match gamma_tensor.as_ref() {
                Some(gt) => (ds.mul(gt)?, db.mul(gt)?),
                None => (ds.clone(), db.clone()),
            };
            let bsum = sum_dim(&bs, 2, false)?.unsqueeze(-2)?;
            let csum = sum_dim(&cs, 2, false)?.unsqueeze(-2)?;
            let b = csum
                .mul(&mean_tensor)?
                .sub(&bsum)?
                .mul(&rstd_cube)?
                .mul_scalar(s)?;
            let cc = b
                .neg()?
                .mul(&mean_tensor)?
                .sub(&csum.mul(&rstd_tensor)?.mul_scalar(s)?)?;
            let mut dx = a.mul(dy_t)?.add(&b.mul(&x_tensor)?)?.add(&cc)?;
            if let Some(sp) = stats_part {
                dx = dx.add(&sp)?;
            }
            d_x = Some(dx.reshape_as(x)?);
        } else if let Some(sp) = stats_part {
            d_x = Some(sp.reshape_as(x)?);
        }
    }
    let mut dgamma = None;
    let mut dbeta = None;
    if let Some((_, ds, db)) = sums.as_ref() {
        if grad_input_mask[1] {
            if let Some(gm) = gamma {
                let t = ds.sub(&db.mul(&mean_tensor)?)?.mul(&rstd_tensor)?;
                dgamma = Some(sum_dim(&t, 0, false)?.reshape_as(gm)?);
            }
        }
        if grad_input_mask[2] {
            if let Some(gm) = gamma {
                dbeta = Some(sum_dim(db, 0, false)?.reshape_as(gm)?);
            } else {
                dbeta = Some(sum_dim(db, 0, false)?.reshape(&[c])?);
            }
        }
    }
    Ok((d_x, dgamma, dbeta))
}

// End of normalization and the rest.

// ---------------------------------------------------------------------------------------------
// Forward-mode AD: the `*_jvp` helpers of the `result:` formulas. They read the tangents of
// tensor-list inputs themselves (`forward_grad::fw_grad`), as PyTorch's do.

/// The tangents of `tensors` (zeros for those without one), or None when none has one.
fn list_tangents(tensors: &[Tensor]) -> Result<Option<Vec<Tensor>>> {
    if !tensors
        .iter()
        .any(|t| crate::forward_grad::fw_grad(t).is_some())
    {
        return Ok(None);
    }
    tensors
        .iter()
        .map(crate::forward_grad::fw_grad_or_zeros)
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// The tangent of `cat(tensors, dim)`.
pub fn cat_jvp(tensors: &[Tensor], dim: i64) -> Result<Option<Tensor>> {
    list_tangents(tensors)?
        .map(|ts| F::cat_with(&ts, dim))
        .transpose()
}

/// The tangent of `stack(tensors, dim)`.
pub fn stack_jvp(tensors: &[Tensor], dim: i64) -> Result<Option<Tensor>> {
    list_tangents(tensors)?
        .map(|ts| F::stack_with(&ts, dim))
        .transpose()
}

/// The halves `a`, `b` of `x` along `dim` (glu's split).
fn glu_halves(x: &Tensor, dim: i64) -> Result<(Tensor, Tensor)> {
    let dim = maybe_wrap_dim(dim, x.dim(), true)? as i64;
    let half = x.size(dim)? / 2;
    Ok((F::narrow(x, dim, 0, half)?, F::narrow(x, dim, half, half)?))
}

/// The tangent of `glu(x, dim)` (`a * sigmoid(b)`): `da sigmoid(b) + db glu (1 - sigmoid(b))`.
pub fn glu_jvp(glu: &Tensor, x: &Tensor, dx: &Tensor, dim: i64) -> Result<Tensor> {
    let (_, b) = glu_halves(x, dim)?;
    let (da, db) = glu_halves(dx, dim)?;
    let sig_b = F::sigmoid(&b)?;
    F::add(
        &F::mul(&sig_b, &da)?,
        &F::mul(&F::mul(&db, glu)?, &F::rsub_scalar(&sig_b, 1.0)?)?,
    )
}

/// The tangent of `glu_backward(grad_glu, x, dim)` in `grad_glu` (`dgrad_glu`) and `x` (`dx`).
pub fn glu_backward_jvp(
    _grad_x: &Tensor,
    grad_glu: &Tensor,
    x: &Tensor,
    dgrad_glu: &Tensor,
    dx: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    let (a, b) = glu_halves(x, dim)?;
    let (da, db) = glu_halves(dx, dim)?;
    let s = F::sigmoid(&b)?;
    // s' = s (1 - s); s'' = s' (1 - 2 s).
    let ds = F::mul(&s, &F::rsub_scalar(&s, 1.0)?)?;
    let dds = F::mul(&ds, &F::rsub_scalar(&F::mul_scalar(&s, 2.0)?, 1.0)?)?;
    // grad_x = cat(grad_glu s, grad_glu a s').
    let first = F::add(
        &F::mul(dgrad_glu, &s)?,
        &F::mul(&F::mul(grad_glu, &ds)?, &db)?,
    )?;
    let second = F::add(
        &F::mul(
            &F::add(&F::mul(dgrad_glu, &a)?, &F::mul(grad_glu, &da)?)?,
            &ds,
        )?,
        &F::mul(&F::mul(&F::mul(grad_glu, &a)?, &dds)?, &db)?,
    )?;
    F::cat_with(&[first, second], dim)
}

/// `apply_loss_reduction(unreduced, reduction)`: the mean or sum of a loss's terms.
pub fn apply_loss_reduction(unreduced: &Tensor, reduction: i64) -> Result<Tensor> {
    match reduction {
        REDUCTION_MEAN => F::mean(unreduced),
        REDUCTION_NONE => Ok(unreduced.clone()),
        _ => F::sum(unreduced),
    }
}

/// The tangent of `convolution`: linear in the input and in the weight and bias together.
#[allow(clippy::too_many_arguments)]
pub fn convolution_jvp(
    input_p: &Tensor,
    input_t: &Tensor,
    weight_p: &Tensor,
    weight_t: &Tensor,
    _bias_p: Option<&Tensor>,
    bias_t: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let conv = |x: &Tensor, w: &Tensor, b: Option<&Tensor>| {
        F::convolution(
            x,
            w,
            b,
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
        )
    };
    F::add(
        &conv(input_t, weight_p, None)?,
        &conv(input_p, weight_t, bias_t)?,
    )
}

/// The tangent of `_convolution` (its backend flags change nothing here).
#[allow(clippy::too_many_arguments)]
pub fn _convolution_jvp(
    input_p: &Tensor,
    input_t: &Tensor,
    weight_p: &Tensor,
    weight_t: &Tensor,
    bias_p: Option<&Tensor>,
    bias_t: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
    _benchmark: bool,
    _deterministic: bool,
    _cudnn_enabled: bool,
    _allow_tf32: bool,
) -> Result<Tensor> {
    convolution_jvp(
        input_p,
        input_t,
        weight_p,
        weight_t,
        bias_p,
        bias_t,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
    )
}

/// The tangent of `convolution_backward`'s bias gradient: `grad_output`'s tangent summed over
/// all but the channels. None when the bias gradient was not computed (an empty tensor).
pub fn convolution_backward_jvp_grad_bias(
    grad_out_t: &Tensor,
    grad_bias: &Tensor,
) -> Result<Option<Tensor>> {
    let dims: Vec<i64> = std::iter::once(0)
        .chain(2..grad_out_t.dim() as i64)
        .collect();
    if grad_out_t.dim() < 3 || grad_bias.sizes().as_slice() != [grad_out_t.size(1)?] {
        return Ok(None);
    }
    sum_dims(grad_out_t, &dims, false).map(Some)
}

/// The tangent of the inverse standard deviation over `dims` (kept):
/// `-invstd^3 sum((dx - mean(dx)) (x - mean)) / n` (PyTorch's `invstd_jvp`).
fn invstd_jvp(
    centered_t: &Tensor,
    centered_p: &Tensor,
    invstd_p: &Tensor,
    dims: &[i64],
    numel: i64,
) -> Result<Tensor> {
    F::div_scalar(
        &F::mul(
            &F::neg(&F::pow_tensor_scalar(invstd_p, 3)?)?,
            &sum_dims(&F::mul(centered_t, centered_p)?, dims, true)?,
        )?,
        numel as f64,
    )
}

/// `dx - mean(dx)` over `dims` (kept).
fn centered_tangent(input_t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    F::sub(input_t, &F::mean_dim_with(input_t, Some(dims), true, None)?)
}

/// The normalization's tangent over `dims`, from the saved mean and inverse standard
/// deviation viewed to broadcast: `(dx - mean(dx)) invstd + (x - mean) dinvstd`.
fn normalized_jvp(
    input_p: &Tensor,
    input_t: &Tensor,
    mean_p: &Tensor,
    invstd_p: &Tensor,
    dims: &[i64],
    numel: i64,
) -> Result<Tensor> {
    let centered_t = centered_tangent(input_t, dims)?;
    let centered_p = F::sub(input_p, mean_p)?;
    let invstd_t = invstd_jvp(&centered_t, &centered_p, invstd_p, dims, numel)?;
    F::add(
        &F::mul(&centered_t, invstd_p)?,
        &F::mul(&centered_p, &invstd_t)?,
    )
}

/// The affine part of a normalization's tangent: `out w + normalized dw + db`, where
/// `normalized` gives `(x - mean) invstd` in the input's shape (computed only with `dw`).
fn affine_jvp(
    out: Tensor,
    normalized: impl FnOnce() -> Result<Tensor>,
    weight_p: Option<&Tensor>,
    weight_t: Option<&Tensor>,
    bias_t: Option<&Tensor>,
    affine_shape: &[i64],
) -> Result<Tensor> {
    let mut out = out;
    if let Some(w) = weight_p {
        out = F::mul(&out, &w.view(affine_shape)?)?;
    }
    if let Some(wt) = weight_t {
        out = F::add(&out, &F::mul(&normalized()?, &wt.view(affine_shape)?)?)?;
    }
    if let Some(bt) = bias_t {
        out = F::add(&out, &bt.view(affine_shape)?)?;
    }
    Ok(out)
}

/// The tangent of `native_layer_norm`'s output.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_jvp(
    input_p: &Tensor,
    input_t: &Tensor,
    weight_p: Option<&Tensor>,
    weight_t: Option<&Tensor>,
    _bias_p: Option<&Tensor>,
    bias_t: Option<&Tensor>,
    saved_mean: &Tensor,
    saved_invstd: &Tensor,
    normalized_shape: &[i64],
) -> Result<Tensor> {
    let sizes = input_t.sizes();
    let axis = sizes.len().saturating_sub(normalized_shape.len());
    let mut view_size = sizes.to_vec();
    let mut affine = sizes.to_vec();
    let mut dims = Vec::new();
    let mut numel = 1;
    for (i, &s) in sizes.iter().enumerate() {
        if i < axis {
            affine[i] = 1;
        } else {
            numel *= s;
            view_size[i] = 1;
            dims.push(i as i64);
        }
    }
    let mean_p = saved_mean.view(&view_size)?;
    let invstd_p = saved_invstd.view(&view_size)?;
    let out = normalized_jvp(input_p, input_t, &mean_p, &invstd_p, &dims, numel)?;
    let normalized = || F::mul(&F::sub(input_p, &mean_p)?, &invstd_p);
    affine_jvp(out, normalized, weight_p, weight_t, bias_t, &affine)
}

/// The tangent of `native_batch_norm`'s output (training: through the batch statistics;
/// evaluation: the running ones are constants).
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_jvp(
    input_p: &Tensor,
    input_t: &Tensor,
    weight_p: Option<&Tensor>,
    weight_t: Option<&Tensor>,
    _bias_p: Option<&Tensor>,
    bias_t: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    saved_mean: &Tensor,
    saved_invstd: &Tensor,
    train: bool,
    eps: f64,
) -> Result<Tensor> {
    let sizes = input_t.sizes();
    let mut view_size = sizes.to_vec();
    let mut dims = Vec::new();
    let mut numel = 1;
    for (i, &s) in sizes.iter().enumerate() {
        if i != 1 {
            numel *= s;
            view_size[i] = 1;
            dims.push(i as i64);
        }
    }
    let (mean_p, invstd_p, out) = match (train, running_mean, running_var) {
        (false, Some(rm), Some(rv)) => {
            let mean_p = rm.view(&view_size)?;
            let invstd_p = F::rsqrt(&F::add_scalar(rv, eps)?)?.view(&view_size)?;
            let out = F::mul(input_t, &invstd_p)?;
            (mean_p, invstd_p, out)
        }
        (false, _, _) => {
            return Err(Error::runtime(
                "batch_norm_jvp: evaluation mode needs the running statistics",
            ))
        }
        (true, _, _) => {
            let mean_p = saved_mean.view(&view_size)?;
            let invstd_p = saved_invstd.view(&view_size)?;
            let out = normalized_jvp(input_p, input_t, &mean_p, &invstd_p, &dims, numel)?;
            (mean_p, invstd_p, out)
        }
    };
    let normalized = || F::mul(&F::sub(input_p, &mean_p)?, &invstd_p);
    affine_jvp(out, normalized, weight_p, weight_t, bias_t, &view_size)
}

/// The tangent of `native_group_norm`'s output: batch normalization of the `N * group` groups,
/// then the per-channel affine part.
#[allow(clippy::too_many_arguments)]
pub fn group_norm_jvp(
    input_p: &Tensor,
    input_t: &Tensor,
    weight_p: Option<&Tensor>,
    weight_t: Option<&Tensor>,
    _bias_p: Option<&Tensor>,
    bias_t: Option<&Tensor>,
    saved_mean: &Tensor,
    saved_invstd: &Tensor,
    group: i64,
) -> Result<Tensor> {
    let sizes = input_p.sizes().to_vec();
    let n = input_p.size(0)?;
    let c = input_p.size(1)?;
    let grouped = [1, n * group, if n != 0 { -1 } else { 1 }];
    let input_p_g = input_p.reshape(&grouped)?;
    let input_t_g = input_t.reshape(&grouped)?;
    let stats = [1, n * group, 1];
    let mean_p = saved_mean.reshape(&stats)?;
    let invstd_p = saved_invstd.reshape(&stats)?;
    let numel = input_p_g.size(2)?;
    let out = normalized_jvp(&input_p_g, &input_t_g, &mean_p, &invstd_p, &[0, 2], numel)?
        .reshape(&sizes)?;
    let mut affine = vec![1; sizes.len()];
    if affine.len() > 1 {
        affine[1] = c;
    }
    let normalized = || F::mul(&F::sub(&input_p_g, &mean_p)?, &invstd_p)?.reshape(&sizes);
    affine_jvp(out, normalized, weight_p, weight_t, bias_t, &affine)
}

/// The tangent of `native_group_norm`'s mean: the groups' means of the input's tangent.
pub fn group_norm_mean_jvp(input_t: &Tensor, mean_p: &Tensor, group: i64) -> Result<Tensor> {
    let n = input_t.size(0)?;
    let grouped = input_t.reshape(&[1, n * group, if n != 0 { -1 } else { 1 }])?;
    F::mean_dim_with(&grouped, Some(&[2]), false, None)?.reshape(&mean_p.sizes())
}

/// The tangent of `native_group_norm`'s inverse standard deviation.
pub fn group_norm_invstd_jvp(
    input_p: &Tensor,
    input_t: &Tensor,
    mean_p: &Tensor,
    invstd_p: &Tensor,
    group: i64,
) -> Result<Tensor> {
    let n = input_p.size(0)?;
    let shape = [1, n * group, if n != 0 { -1 } else { 1 }];
    let input_p_g = input_p.reshape(&shape)?;
    let input_t_g = input_t.reshape(&shape)?;
    let mean_g = mean_p.reshape(&[1, n * group, 1])?;
    let invstd_g = invstd_p.reshape(&[1, n * group, 1])?;
    let centered_t = centered_tangent(&input_t_g, &[2])?;
    let centered_p = F::sub(&input_p_g, &mean_g)?;
    let numel = input_p_g.size(2)?;
    invstd_jvp(&centered_t, &centered_p, &invstd_g, &[2], numel)?.reshape(&invstd_p.sizes())
}
