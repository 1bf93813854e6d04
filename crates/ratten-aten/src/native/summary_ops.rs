//! bincount (ATen's `SummaryOps.cpp`) and histc (`Histogram.cpp`'s `histogram_histc`, the
//! legacy one-dimensional histogram): the checks, dtypes and bin edges as PyTorch's; the loops
//! are in `native/cpu/summary_kernels.rs`.
//!
//! bincount counts into int64 bins, or sums float32 weights into float32 bins and any other
//! weights (converted) into float64 bins; its size depends on the data, so it refuses meta
//! tensors. histc works in the input's floating dtype: the range is `[min, max]`, or the data's
//! extrema when both are equal, widened when it is a single value; the bins divide it evenly
//! (the edges are `torch.linspace`'s, as PyTorch computes them) and elements outside it are not
//! counted. On meta, histc follows PyTorch's Python meta function (`meta_histc`), whose checks
//! and texts differ from the CPU kernel's.

use ratten_core::scalar::format_g;
use ratten_core::{Error, Result, Scalar, ScalarType};

use crate::generated::operators as ops;
use crate::native::cpu::elements::not_implemented;
use crate::native::cpu::summary_kernels::{bincount_kernel, histc_kernel, integral_min_max};
use crate::native::unique::no_meta_kernel;
use crate::structured::{resize_output, type_meta_name};
use crate::Tensor;

// ---------------------------------------------------------------------------------------------
// bincount

const BINCOUNT_INPUT: &str = "bincount only supports 1-d non-negative integral inputs.";

/// `_bincount_cpu`: how often each value of the 1-D non-negative integral `self_` occurs (or
/// the sum of its `weights`), in `max(self_) + 1` bins, at least `minlength`.
pub fn _bincount_cpu(self_: &Tensor, weights: Option<&Tensor>, minlength: i64) -> Result<Tensor> {
    if self_.is_meta() || weights.is_some_and(|w| w.is_meta()) {
        return Err(no_meta_kernel("bincount"));
    }
    // AT_DISPATCH_INTEGRAL_TYPES comes first: a float input fails before any other check.
    let dt = self_.dtype();
    if !dt.is_integral(false) {
        return Err(not_implemented("bincount_cpu", dt));
    }
    let input = self_.contiguous()?;
    let weights = match weights {
        Some(w) if w.dtype() == ScalarType::Float => Some(w.contiguous()?),
        Some(w) => Some(w.contiguous()?.to_dtype(ScalarType::Double)?),
        None => None,
    };
    if minlength < 0 {
        return Err(Error::runtime("minlength should be >= 0"));
    }
    if input.dim() == 1 && input.numel() == 0 {
        return Tensor::zeros(&[minlength], ScalarType::Long);
    }
    if input.dim() != 1 {
        return Err(Error::runtime(BINCOUNT_INPUT));
    }
    let Some((min, max)) = integral_min_max(&input)? else {
        return Err(Error::runtime(BINCOUNT_INPUT));
    };
    if min < 0 {
        return Err(Error::runtime(BINCOUNT_INPUT));
    }
    if max == i64::MAX {
        return Err(Error::runtime(format!(
            "maximum value of input overflowed, it should be < {} but got {max}",
            i64::MAX
        )));
    }
    if let Some(w) = &weights {
        if w.dim() != 1 || w.sizes()[0] != input.sizes()[0] {
            return Err(Error::runtime(
                "weights should be 1-d and have the same length as input",
            ));
        }
    }
    let nbins = (max + 1).max(minlength);
    let nbins = usize::try_from(nbins)
        .map_err(|_| Error::runtime(format!("bincount: {nbins} bins do not fit in memory")))?;
    bincount_kernel(&input, weights.as_ref(), nbins)
}

// ---------------------------------------------------------------------------------------------
// histc

/// `std::nexttoward(x, lowest)` / `(x, max)` on `$t`: one step down or up, staying at the
/// bound itself.
macro_rules! step {
    ($x:expr, $t:ty, up) => {{
        let x: $t = $x;
        if x == <$t>::MAX {
            x
        } else {
            x.next_up()
        }
    }};
    ($x:expr, $t:ty, down) => {{
        let x: $t = $x;
        if x == <$t>::MIN {
            x
        } else {
            x.next_down()
        }
    }};
}

/// `bins_edges_correction`: widens a range of one value by one on each side, or for float
/// and double by one ulp of the type where that is more.
fn widen_range(dtype: ScalarType, left: f64, right: f64) -> (f64, f64) {
    match dtype {
        ScalarType::Double => (
            step!(left, f64, down).min(left - 1.0),
            step!(right, f64, up).max(right + 1.0),
        ),
        ScalarType::Float => (
            f64::from(step!(left as f32, f32, down)).min(left - 1.0),
            f64::from(step!(right as f32, f32, up)).max(right + 1.0),
        ),
        _ => (left - 1.0, right + 1.0),
    }
}

/// `histc_select_outer_bin_edges`: `[min, max]`, the data's extrema when they are equal, and
/// widened when the range is a single value.
fn histc_range(self_: &Tensor, min: &Scalar, max: &Scalar) -> Result<(f64, f64)> {
    let mut left = min.to_double()?;
    let mut right = max.to_double()?;
    if left == right && self_.numel() > 0 {
        let (lo, hi) = ops::aminmax::call(self_, None, false)?;
        left = lo.item()?.to_double()?;
        right = hi.item()?.to_double()?;
        // PyTorch's vectorised min / max make a NaN of all ones (negative: the message prints
        // "-nan"), which bfloat16's rounding turns into its positive NaN.
        let nan = if self_.dtype() == ScalarType::BFloat16 {
            f64::NAN
        } else {
            -f64::NAN
        };
        if left.is_nan() {
            left = nan;
        }
        if right.is_nan() {
            right = nan;
        }
    }
    if left == right {
        (left, right) = widen_range(self_.dtype(), left, right);
    }
    if !(left.is_finite() && right.is_finite()) {
        return Err(Error::runtime(format!(
            "torch.histc: range of [{}, {}] is not finite",
            format_g(left),
            format_g(right)
        )));
    }
    if left >= right {
        return Err(Error::runtime("torch.histc: max must be larger than min"));
    }
    Ok((left, right))
}

/// `meta_histc` with its `out=` wrapper (`exact_dtype=True`).
fn histc_meta<'a>(
    self_: &Tensor,
    bins: i64,
    min: &Scalar,
    max: &Scalar,
    hist: &'a Tensor,
) -> Result<&'a Tensor> {
    if bins <= 0 {
        return Err(Error::runtime(format!(
            "histc(): bins must be > 0, but got {bins}"
        )));
    }
    if max.to_double()? < min.to_double()? {
        return Err(Error::runtime("histc(): max must be larger than min"));
    }
    if hist.dtype() != self_.dtype() {
        return Err(Error::runtime(format!(
            "Expected out tensor to have dtype torch.{} but got torch.{} instead",
            self_.dtype().python_name(),
            hist.dtype().python_name()
        )));
    }
    resize_output(hist, &[bins])?;
    Ok(hist)
}

/// `histogram_histc_out`: `bins` equal-width bins over the range (see the module doc), counted in
/// `self_`'s floating dtype; `hist` must have that dtype.
pub fn histogram_histc_out<'a>(
    self_: &Tensor,
    bins: i64,
    min: &Scalar,
    max: &Scalar,
    hist: &'a Tensor,
) -> Result<&'a Tensor> {
    if self_.is_meta() || hist.is_meta() {
        return histc_meta(self_, bins, min, max, hist);
    }
    // histogramdd_prepare_out
    if self_.dtype() != hist.dtype() {
        return Err(Error::runtime(format!(
            "torch.histogram: input tensor and hist tensor should have the same dtype, but got input {} and hist {}",
            type_meta_name(self_.dtype()),
            type_meta_name(hist.dtype())
        )));
    }
    if bins <= 0 {
        return Err(Error::runtime(format!(
            "torch.histogram(): bins must be > 0, but got {bins} for dimension 0"
        )));
    }
    let edges_len = bins
        .checked_add(1)
        .ok_or_else(|| Error::runtime(format!("histc: {bins} bins are too many")))?;
    resize_output(hist, &[bins])?;
    let (left, right) = histc_range(self_, min, max)?;
    let edges = Tensor::empty(&[edges_len], (self_.dtype(), self_.device()))?;
    // PyTorch's linspace fills complex64 / complex128 edges, which its histogram kernel then
    // refuses; ratten's linspace has no complex loop, so the refusal comes first here.
    if matches!(
        self_.dtype(),
        ScalarType::ComplexFloat | ScalarType::ComplexDouble
    ) {
        return Err(not_implemented("histogram_cpu", self_.dtype()));
    }
    ops::linspace_out::call(
        &Scalar::Double(left),
        &Scalar::Double(right),
        edges_len,
        &edges,
    )?;
    let input = self_.contiguous()?;
    if hist.is_contiguous() {
        histc_kernel(hist, &input, &edges)?;
    } else {
        let dense = Tensor::empty(&[bins], (hist.dtype(), hist.device()))?;
        histc_kernel(&dense, &input, &edges)?;
        hist.copy_(&dense)?;
    }
    Ok(hist)
}

/// `histogram_histc`: into a fresh contiguous tensor of `self_`'s dtype.
pub fn histogram_histc(self_: &Tensor, bins: i64, min: &Scalar, max: &Scalar) -> Result<Tensor> {
    let hist = Tensor::empty(&[0], (self_.dtype(), self_.device()))?;
    histogram_histc_out(self_, bins, min, max, &hist)?;
    Ok(hist)
}
