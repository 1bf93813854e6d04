//! The CPU loops of `crate::native::loss`: nll_loss and nll_loss2d forward and backward
//! (ATen's LossNLL.cpp and LossNLL2d.cpp), both over one layout: the input as
//! `[batch, classes, spatial]` and the target as `[batch, spatial]` (`spatial` is 1 for
//! nll_loss's 1-D and 2-D inputs). The pointwise losses compose existing operators.

use ratten_core::access::TensorAccess;
use ratten_core::{Error, Result, ScalarType};

use crate::native::cpu::elements::not_implemented;
use crate::native::cpu::softmax_kernels::{Acc, Stored};
use crate::Tensor;

/// `at::Reduction`.
pub const REDUCTION_NONE: i64 = 0;
pub const REDUCTION_MEAN: i64 = 1;
pub const REDUCTION_SUM: i64 = 2;

/// The geometry of an nll_loss call: `[batch, classes, spatial]`.
#[derive(Clone, Copy, Debug)]
pub struct NllShape {
    pub batch: usize,
    pub classes: usize,
    pub spatial: usize,
}

macro_rules! dispatch_nll_types {
    ($dt:expr, $name:expr, $T:ident => $body:expr) => {{
        use half::{bf16, f16};
        match $dt {
            ScalarType::Float => {
                type $T = f32;
                $body
            }
            ScalarType::Double => {
                type $T = f64;
                $body
            }
            ScalarType::Half => {
                type $T = f16;
                $body
            }
            ScalarType::BFloat16 => {
                type $T = bf16;
                $body
            }
            dt => Err(not_implemented($name, dt)),
        }
    }};
}

/// The class of every target element (int64 or uint8), contiguous.
fn targets(target: &Tensor) -> Result<Vec<i64>> {
    let g = TensorAccess::read(target.base())?;
    Ok(match target.dtype() {
        ScalarType::Long => g.input_slice::<i64>(0)?.to_vec(),
        ScalarType::Byte => g
            .input_slice::<u8>(0)?
            .iter()
            .map(|&b| i64::from(b))
            .collect(),
        dt => {
            return Err(Error::runtime(format!(
                "expected target dtype to be Long or Byte, but got {dt}"
            )))
        }
    })
}

fn out_of_bounds(t: i64) -> Error {
    Error::index(format!("Target {t} is out of bounds."))
}

/// The weights of the classes (contiguous, `classes` elements), as the computation type.
fn weights<S: Stored>(weight: Option<&Tensor>) -> Result<Option<Vec<S::A>>> {
    match weight {
        None => Ok(None),
        Some(w) => {
            let g = TensorAccess::read(w.base())?;
            Ok(Some(
                g.input_slice::<S>(0)?.iter().map(|v| v.load()).collect(),
            ))
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn forward_typed<S: Stored>(
    output: &Tensor,
    total_weight: &Tensor,
    input: &Tensor,
    target: &[i64],
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    shape: NllShape,
) -> Result<()> {
    let NllShape {
        batch,
        classes,
        spatial,
    } = shape;
    let w = weights::<S>(weight)?;
    let one = S::A::ONE;
    let weight_of = |t: usize| w.as_ref().map_or(one, |w| w[t]);
    let mut g = TensorAccess::new(&[input.base()], &[output.base(), total_weight.base()])?;
    // The values to write: per element for reduction none, else (loss, total weight).
    let (vals, total) = {
        let x = g.input_slice::<S>(0)?;
        let at = |n: usize, t: usize, s: usize| x[(n * classes + t) * spatial + s].load();
        if reduction == REDUCTION_NONE {
            let mut vals = Vec::with_capacity(batch * spatial);
            for n in 0..batch {
                for s in 0..spatial {
                    let t = target[n * spatial + s];
                    if t == ignore_index {
                        vals.push(S::A::ZERO);
                        continue;
                    }
                    if t < 0 || t as usize >= classes {
                        return Err(out_of_bounds(t));
                    }
                    let t = t as usize;
                    vals.push(S::A::ZERO - at(n, t, s) * weight_of(t));
                }
            }
            (vals, S::A::ZERO)
        } else {
            let (mut loss, mut total) = (S::A::ZERO, S::A::ZERO);
            for (i, &t) in target.iter().enumerate() {
                if t == ignore_index {
                    continue;
                }
                if t < 0 || t as usize >= classes {
                    return Err(out_of_bounds(t));
                }
                let (n, s, t) = (i / spatial, i % spatial, t as usize);
                let wt = weight_of(t);
                loss = loss - at(n, t, s) * wt;
                total = total + wt;
            }
            if reduction == REDUCTION_MEAN {
                // An empty target gives 0 / 0: NaN, as torch's.
                loss = loss / total;
            }
            (vec![loss], total)
        }
    };
    for (o, v) in g.output_slice_mut::<S>(0)?.iter_mut().zip(vals) {
        *o = S::store(v);
    }
    g.output_slice_mut::<S>(1)?[0] = S::store(total);
    Ok(())
}

/// nll_loss (`name` "nll_loss_out_frame") or nll_loss2d forward: `output` (`[batch, spatial]`
/// for reduction none, else one element) and `total_weight` (one element), from the
/// contiguous `input` and `target`. Indices are checked before anything is written.
#[allow(clippy::too_many_arguments)]
pub fn nll_loss_forward_kernel(
    name: &str,
    output: &Tensor,
    total_weight: &Tensor,
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    shape: NllShape,
) -> Result<()> {
    let target = targets(target)?;
    dispatch_nll_types!(input.dtype(), name, T => forward_typed::<T>(
        output, total_weight, input, &target, weight, reduction, ignore_index, shape
    ))
}

#[allow(clippy::too_many_arguments)]
fn backward_typed<S: Stored>(
    grad_input: &Tensor,
    grad_output: &Tensor,
    target: &[i64],
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
    shape: NllShape,
) -> Result<()> {
    let NllShape {
        batch,
        classes,
        spatial,
    } = shape;
    let w = weights::<S>(weight)?;
    let one = S::A::ONE;
    let weight_of = |t: usize| w.as_ref().map_or(one, |w| w[t]);
    for &t in target {
        if t != ignore_index && (t < 0 || t as usize >= classes) {
            return Err(out_of_bounds(t));
        }
    }
    let mut g = TensorAccess::new(
        &[grad_output.base(), total_weight.base()],
        &[grad_input.base()],
    )?;
    let go: Vec<S::A> = g.input_slice::<S>(0)?.iter().map(|v| v.load()).collect();
    let tw = g.input_slice::<S>(1)?[0].load();
    let gi = g.output_slice_mut::<S>(0)?;
    gi.fill(S::store(S::A::ZERO));
    let scale = if reduction == REDUCTION_NONE {
        None
    } else if reduction == REDUCTION_MEAN {
        Some(go[0] / tw)
    } else {
        Some(go[0])
    };
    for n in 0..batch {
        for s in 0..spatial {
            let i = n * spatial + s;
            let t = target[i];
            if t == ignore_index {
                continue;
            }
            let t = t as usize;
            let gv = scale.unwrap_or_else(|| go[i]);
            gi[(n * classes + t) * spatial + s] = S::store(S::A::ZERO - weight_of(t) * gv);
        }
    }
    Ok(())
}

/// nll_loss or nll_loss2d backward: the contiguous `grad_input` (`[batch, classes, spatial]`),
/// zero except at the targets.
#[allow(clippy::too_many_arguments)]
pub fn nll_loss_backward_kernel(
    name: &str,
    grad_input: &Tensor,
    grad_output: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
    shape: NllShape,
) -> Result<()> {
    let target = targets(target)?;
    dispatch_nll_types!(grad_input.dtype(), name, T => backward_typed::<T>(
        grad_input, grad_output, &target, weight, reduction, ignore_index, total_weight, shape
    ))
}
