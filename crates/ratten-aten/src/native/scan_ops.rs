//! The cumulative ops (ATen's `ReduceOps.cpp` cumsum / cumprod / logcumsumexp and
//! `TensorCompare.cpp`'s cummax / cummin): shape and dtype rules here, the running
//! accumulation along each line in `native/cpu/scan_kernels.rs`.

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{Error, Result, ScalarType, TensorOptions};

use crate::generated::operators as ops;
use crate::native::cpu::scan_kernels::{
    cummax_kernel, cummin_kernel, cumprod_kernel, cumsum_kernel, logcumsumexp_kernel,
};
use crate::structured::{resize_output, MetaBase};
use crate::Tensor;

/// `meta_func_cum_ops`: the input's shape; `dtype=`, else a given output's dtype, else int64
/// for integral inputs.
fn cum_meta(m: &dyn MetaBase, self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<()> {
    maybe_wrap_dim(dim, self_.dim(), true)?;
    let out_dtype = match (dtype, m.maybe_get_output(0)) {
        (Some(d), _) => d,
        (None, Some(r)) => r.dtype(),
        (None, None) if self_.dtype().is_integral(true) => ScalarType::Long,
        (None, None) => self_.dtype(),
    };
    let options = TensorOptions::new().dtype(out_dtype).device(self_.device());
    m.set_output_raw_strided(0, &self_.sizes(), &[], options)
}

/// `impl_func_cum_ops`.
fn cum_impl(
    self_: &Tensor,
    dim: i64,
    out: &Tensor,
    kernel: fn(&Tensor, &Tensor, usize) -> Result<()>,
) -> Result<()> {
    if out.is_meta() {
        return Ok(());
    }
    if self_.dim() == 0 {
        ops::copy_::call(out, self_, false)?;
        return Ok(());
    }
    if self_.numel() == 0 {
        out.zero_()?;
        return Ok(());
    }
    let dim = maybe_wrap_dim(dim, self_.dim(), true)?;
    let input = if self_.dtype() == out.dtype() {
        self_.clone()
    } else {
        self_.to_dtype(out.dtype())?
    };
    kernel(out, &input, dim)
}

/// TORCH_META_FUNC(cumsum).
pub fn cumsum_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
) -> Result<()> {
    cum_meta(m, self_, dim, dtype)
}
/// TORCH_IMPL_FUNC(cumsum_out): accumulated in f64 for f32 inputs, as PyTorch's CPU kernel.
pub fn cumsum_out(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    cum_impl(self_, dim, out, cumsum_kernel)
}
/// TORCH_META_FUNC(cumprod).
pub fn cumprod_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
) -> Result<()> {
    cum_meta(m, self_, dim, dtype)
}
/// TORCH_IMPL_FUNC(cumprod_out).
pub fn cumprod_out(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    cum_impl(self_, dim, out, cumprod_kernel)
}

/// `check_scalar_type_device_layout_equal`.
fn check_same_dtype(out: &Tensor, dtype: ScalarType) -> Result<()> {
    if out.dtype() != dtype {
        return Err(Error::runtime(format!(
            "Expected out tensor to have dtype {}, but got {} instead",
            dtype.name(),
            out.dtype().name()
        )));
    }
    Ok(())
}

fn cum_extremum_out(
    self_: &Tensor,
    dim: i64,
    values: &Tensor,
    indices: &Tensor,
    helper: fn(&Tensor, &Tensor, &Tensor, i64) -> Result<()>,
) -> Result<()> {
    check_same_dtype(values, self_.dtype())?;
    check_same_dtype(indices, ScalarType::Long)?;
    resize_output(values, &self_.sizes())?;
    resize_output(indices, &self_.sizes())?;
    if self_.dim() == 0 {
        if !values.is_meta() {
            ops::copy_::call(values, self_, false)?;
            indices.zero_()?;
        }
    } else if self_.numel() != 0 {
        let d = maybe_wrap_dim(dim, self_.dim(), true)? as i64;
        helper(self_, values, indices, d)?;
    }
    Ok(())
}

/// `cummax` (CompositeExplicitAutograd).
pub fn cummax(self_: &Tensor, dim: i64) -> Result<(Tensor, Tensor)> {
    let values = Tensor::empty(&self_.sizes(), (self_.dtype(), self_.device()))?;
    let indices = Tensor::empty(&self_.sizes(), (ScalarType::Long, self_.device()))?;
    ops::cummax_out::call(self_, dim, &values, &indices)?;
    Ok((values, indices))
}
/// `cummax.out`.
pub fn cummax_out(
    self_: &Tensor,
    dim: i64,
    values: &Tensor,
    indices: &Tensor,
) -> Result<(Tensor, Tensor)> {
    cum_extremum_out(self_, dim, values, indices, |s, v, i, d| {
        ops::_cummax_helper::call(s, v, i, d)
    })?;
    Ok((values.clone(), indices.clone()))
}
/// `cummin`.
pub fn cummin(self_: &Tensor, dim: i64) -> Result<(Tensor, Tensor)> {
    let values = Tensor::empty(&self_.sizes(), (self_.dtype(), self_.device()))?;
    let indices = Tensor::empty(&self_.sizes(), (ScalarType::Long, self_.device()))?;
    ops::cummin_out::call(self_, dim, &values, &indices)?;
    Ok((values, indices))
}
/// `cummin.out`.
pub fn cummin_out(
    self_: &Tensor,
    dim: i64,
    values: &Tensor,
    indices: &Tensor,
) -> Result<(Tensor, Tensor)> {
    cum_extremum_out(self_, dim, values, indices, |s, v, i, d| {
        ops::_cummin_helper::call(s, v, i, d)
    })?;
    Ok((values.clone(), indices.clone()))
}
/// `cummax_helper_cpu` (`_cummax_helper`).
pub fn cummax_helper_cpu(
    self_: &Tensor,
    values: &Tensor,
    indices: &Tensor,
    dim: i64,
) -> Result<()> {
    if values.is_meta() {
        return Ok(());
    }
    cummax_kernel(
        values,
        indices,
        self_,
        maybe_wrap_dim(dim, self_.dim(), true)?,
    )
}
/// `cummin_helper_cpu`.
pub fn cummin_helper_cpu(
    self_: &Tensor,
    values: &Tensor,
    indices: &Tensor,
    dim: i64,
) -> Result<()> {
    if values.is_meta() {
        return Ok(());
    }
    cummin_kernel(
        values,
        indices,
        self_,
        maybe_wrap_dim(dim, self_.dim(), true)?,
    )
}

/// `logcumsumexp` (CompositeExplicitAutograd).
pub fn logcumsumexp(self_: &Tensor, dim: i64) -> Result<Tensor> {
    ops::_logcumsumexp::call(self_, dim)
}
/// `logcumsumexp.out`.
pub fn logcumsumexp_out<'a>(self_: &Tensor, dim: i64, out: &'a Tensor) -> Result<&'a Tensor> {
    check_same_dtype(out, self_.dtype())?;
    ops::_logcumsumexp_out::call(self_, dim, out)?;
    Ok(out)
}
/// `_logcumsumexp_cpu`.
pub fn _logcumsumexp_cpu(self_: &Tensor, dim: i64) -> Result<Tensor> {
    let result = Tensor::empty(&self_.sizes(), (self_.dtype(), self_.device()))?;
    _logcumsumexp_out_cpu(self_, dim, &result)?;
    Ok(result)
}
/// `_logcumsumexp_out_cpu`.
pub fn _logcumsumexp_out_cpu<'a>(self_: &Tensor, dim: i64, out: &'a Tensor) -> Result<&'a Tensor> {
    // The kernel's dtypes are checked first, empty inputs included, as PyTorch's dispatch.
    if !self_.dtype().is_floating_point() {
        return Err(crate::native::cpu::not_implemented(
            "logcumsumexp_out_cpu",
            self_.dtype(),
        ));
    }
    resize_output(out, &self_.sizes())?;
    if out.is_meta() || self_.numel() == 0 {
        return Ok(out);
    }
    if self_.dim() == 0 {
        let s = self_.reshape(&[1])?;
        logcumsumexp_kernel(&out.reshape(&[1])?, &s, 0)?;
        return Ok(out);
    }
    let d = maybe_wrap_dim(dim, self_.dim(), true)?;
    logcumsumexp_kernel(out, self_, d)?;
    Ok(out)
}
