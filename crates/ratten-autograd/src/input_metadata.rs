//! `InputMetadata` (torch/csrc/autograd/input_metadata.h): what a node expects of the
//! gradient of each of its inputs, checked by the engine on every incoming gradient.

use ratten_aten::Tensor;
use ratten_core::{Device, DimVec, Error, Result, ScalarType};

use crate::function::Node;
use crate::functions_manual::sum_to;

#[derive(Clone, Debug, PartialEq)]
pub struct InputMetadata {
    /// Inline up to 6 dims: recording a node allocates no shape.
    shape: DimVec,
    dtype: ScalarType,
    device: Device,
    /// An output that never gets a gradient (an undefined tensor in the forward).
    undefined: bool,
}

impl InputMetadata {
    pub fn of(t: &Tensor) -> InputMetadata {
        InputMetadata {
            shape: t.sizes(),
            dtype: t.scalar_type(),
            device: t.device(),
            undefined: false,
        }
    }

    pub fn undefined() -> InputMetadata {
        InputMetadata {
            shape: DimVec::new(),
            dtype: ScalarType::Float,
            device: Device::CPU,
            undefined: true,
        }
    }

    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }

    pub fn device(&self) -> Device {
        self.device
    }

    pub fn is_undefined(&self) -> bool {
        self.undefined
    }

    /// Whether `shape` broadcasts to this input's shape (`is_expandable_to_shape`).
    fn is_expandable_to(&self, grad: &[i64]) -> bool {
        if grad.len() < self.shape.len() {
            return false;
        }
        // `self.shape` must be expandable to `grad` (the gradient is summed back down).
        let off = grad.len() - self.shape.len();
        self.shape
            .iter()
            .zip(&grad[off..])
            .all(|(&s, &g)| s == g || s == 1)
    }
}

fn shape_str(s: &[i64]) -> String {
    format!(
        "[{}]",
        s.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
    )
}

/// The engine's `validate_outputs`: each gradient a node returned, checked against what the
/// node it flows into expects (shape reduced when it broadcast, dtype cast, device equal), with
/// torch's errors.
pub fn validate_outputs(
    node: &dyn Node,
    next: &[crate::function::Edge],
    grads: &mut [Option<Tensor>],
) -> Result<()> {
    if next.len() != grads.len() {
        return Err(Error::runtime(format!(
            "invalid number of gradients - expected {}, but got {}",
            next.len(),
            grads.len()
        )));
    }
    for (i, (edge, grad)) in next.iter().zip(grads.iter_mut()).enumerate() {
        let Some(f) = &edge.function else { continue };
        let Some(g) = grad.as_ref() else { continue };
        let Some(meta) = f.base().input_metadata(edge.input_nr as usize) else {
            continue;
        };
        if meta.is_undefined() {
            continue;
        }
        let mut g = g.clone();
        let gs = g.sizes();
        if gs.as_slice() != meta.shape.as_slice() {
            if !meta.is_expandable_to(&gs) {
                return Err(Error::runtime(format!(
                    "Function {} returned an invalid gradient at index {} - got {} but expected \
                     shape compatible with {}",
                    node.name(),
                    i,
                    shape_str(&gs),
                    shape_str(&meta.shape)
                )));
            }
            g = sum_to(&g, &meta.shape)?;
        }
        if g.device() != meta.device {
            return Err(Error::runtime(format!(
                "Function {} returned an invalid gradient at index {} - expected device {} but \
                 got {}",
                node.name(),
                i,
                meta.device,
                g.device()
            )));
        }
        if g.scalar_type() != meta.dtype {
            g = g.to_dtype(meta.dtype)?;
        }
        *grad = Some(g);
    }
    Ok(())
}
