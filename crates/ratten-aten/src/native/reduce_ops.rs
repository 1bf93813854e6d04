//! `argmax` as a structured kernel with a simple loop: the demonstration of an optional `dim`.

use std::cmp::Ordering;

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{Error, Result, ScalarType, TensorBase, TensorOptions};

use super::simple_loops::{read_values, Value};
use crate::structured::{copy_same_dtype, MetaBase};
use crate::Tensor;

/// What meta hands to impl: the wrapped reduction dim, if any.
#[derive(Debug, Clone)]
pub struct ArgmaxState {
    pub dim: Option<usize>,
}

/// TORCH_META_FUNC(argmax): `check_argmax_argmin` then `resize_reduction(..., kLong)`.
pub fn argmax_meta(
    m: &mut dyn MetaBase,
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
fn cmp(a: Value, b: Value) -> Ordering {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        },
        (x, y) => x.as_i64().cmp(&y.as_i64()),
    }
}

/// TORCH_IMPL_FUNC(argmax_out) for CPU.
pub fn argmax_out(
    state: &mut ArgmaxState,
    self_: &Tensor,
    _dim: Option<i64>,
    _keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    let compute = if self_.dtype().is_floating_point() {
        ScalarType::Double
    } else {
        ScalarType::Long
    };
    let vals = read_values(self_, compute)?;
    let sizes = self_.sizes();
    let (outer, n, inner) = match state.dim {
        Some(d) if !sizes.is_empty() => (
            sizes[..d].iter().product::<i64>() as usize,
            sizes[d] as usize,
            sizes[d + 1..].iter().product::<i64>() as usize,
        ),
        _ => (1, vals.len(), 1),
    };
    let mut result = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut best = 0usize;
            for k in 1..n {
                let v = vals[(o * n + k) * inner + i];
                if cmp(v, vals[(o * n + best) * inner + i]) == Ordering::Greater {
                    best = k;
                }
            }
            result.push(best as i64);
        }
    }
    let r = Tensor::from_base(TensorBase::from_vec(result, &out.sizes())?);
    copy_same_dtype(out, &r)
}
