//! `argmax` (ReduceOps.cpp) as a structured kernel: the meta computes the reduced shape, the
//! impl reads the input once in its comparison type and scans each reduced row.

use std::cmp::Ordering;

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{Error, Result, ScalarType, TensorBase, TensorOptions};

use crate::structured::{copy_same_dtype, MetaBase};
use crate::Tensor;

/// What meta hands to impl: the wrapped reduction dim, if any.
#[derive(Debug, Clone)]
pub struct ArgmaxState {
    pub dim: Option<usize>,
}

/// TORCH_META_FUNC(argmax): `check_argmax_argmin` then `resize_reduction(..., kLong)`.
pub fn argmax_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<ArgmaxState> {
    let sizes = self_.sizes();
    let wrapped = match dim {
        Some(d) => {
            let w = maybe_wrap_dim(d, sizes.len(), true)?;
            if !sizes.is_empty() && sizes[w] == 0 {
                return Err(Error::index(format!(
                    "argmax(): Expected reduction dim {w} to have non-zero size."
                )));
            }
            Some(w)
        }
        None => {
            if self_.numel() == 0 {
                return Err(Error::index(
                    "argmax(): Expected reduction dim to be specified for input.numel() == 0.",
                ));
            }
            None
        }
    };
    if self_.dtype().is_complex() {
        return Err(Error::runtime(format!(
            "\"argmax_cpu\" not implemented for '{}'",
            self_.dtype()
        )));
    }
    let shape: Vec<i64> = match (wrapped, sizes.is_empty()) {
        (_, true) => Vec::new(),
        (None, false) if keepdim => vec![1; sizes.len()],
        (None, false) => Vec::new(),
        (Some(w), false) => sizes
            .iter()
            .enumerate()
            .filter_map(|(i, &s)| {
                if i == w {
                    keepdim.then_some(1)
                } else {
                    Some(s)
                }
            })
            .collect(),
    };
    let options = TensorOptions::new()
        .dtype(ScalarType::Long)
        .device(self_.device());
    m.set_output_raw_strided(0, &shape, &[], options)?;
    Ok(ArgmaxState { dim: wrapped })
}

/// Orders values as argmax does: NaN above everything.
fn cmp_f64(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
    }
}

/// The elements of `t` in row-major order, read as `dtype` (a contiguous copy through
/// `copy_`, which casts).
fn read_as<T: ratten_core::Element>(t: &Tensor, dtype: ScalarType) -> Result<Vec<T>> {
    let c = Tensor::empty(&t.sizes(), (dtype, t.device()))?;
    crate::native::copy::copy_(&c, t, false)?;
    c.to_vec::<T>()
}

/// The index of the largest element of each row (`outer` x `n` x `inner` layout).
fn argmax_rows<T: Copy>(
    vals: &[T],
    (outer, n, inner): (usize, usize, usize),
    greater: impl Fn(T, T) -> bool,
) -> Vec<i64> {
    let mut result = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut best = 0usize;
            for k in 1..n {
                if greater(
                    vals[(o * n + k) * inner + i],
                    vals[(o * n + best) * inner + i],
                ) {
                    best = k;
                }
            }
            result.push(best as i64);
        }
    }
    result
}

/// TORCH_IMPL_FUNC(argmax_out) for CPU.
pub fn argmax_out(
    state: &mut ArgmaxState,
    self_: &Tensor,
    _dim: Option<i64>,
    _keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    let sizes = self_.sizes();
    let layout = match state.dim {
        Some(d) if !sizes.is_empty() => (
            sizes[..d].iter().product::<i64>() as usize,
            sizes[d] as usize,
            sizes[d + 1..].iter().product::<i64>() as usize,
        ),
        _ => (1, self_.numel() as usize, 1),
    };
    let result = if self_.dtype().is_floating_point() {
        let vals = read_as::<f64>(self_, ScalarType::Double)?;
        argmax_rows(&vals, layout, |a, b| cmp_f64(a, b) == Ordering::Greater)
    } else {
        let vals = read_as::<i64>(self_, ScalarType::Long)?;
        argmax_rows(&vals, layout, |a, b| a > b)
    };
    let r = Tensor::from_base(TensorBase::from_vec(result, &out.sizes())?);
    copy_same_dtype(out, &r)
}
