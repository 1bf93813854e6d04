//! myops' kernels: the meta and the CPU impl of the structured `scaled_add.out`
//! (`self + scale * other`), following the contract in `ratten_aten::structured`.

use ratten_aten::functions;
use ratten_aten::structured::MetaBase;
use ratten_aten::tensor_iterator::infer_size;
use ratten_aten::Tensor;
use ratten_core::{Error, Result, ScalarType, TensorOptions};

/// The meta's state (`structured_inherits: ScaledAddBase`): what impl needs from meta.
#[derive(Debug, Clone)]
pub struct ScaledAddBase {
    pub shape: Vec<i64>,
    pub dtype: ScalarType,
}

/// TORCH_META_FUNC(scaled_add): one floating dtype, broadcast shapes, one device.
pub fn scaled_add_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    other: &Tensor,
    scale: f64,
) -> Result<ScaledAddBase> {
    let dtype = self_.dtype();
    if dtype != other.dtype() || !dtype.is_floating_point() {
        return Err(Error::type_error(format!(
            "myops::scaled_add: expected self and other of one floating dtype, got {} and {}",
            dtype,
            other.dtype()
        )));
    }
    if self_.device() != other.device() {
        return Err(Error::runtime(format!(
            "myops::scaled_add: expected self and other on one device, got {} and {}",
            self_.device(),
            other.device()
        )));
    }
    if !scale.is_finite() {
        return Err(Error::value(format!(
            "myops::scaled_add: scale must be finite, got {scale}"
        )));
    }
    let shape = infer_size(&self_.sizes(), &other.sizes())?.to_vec();
    let options = TensorOptions::new().dtype(dtype).device(self_.device());
    m.set_output_contiguous(0, &shape, options)?;
    Ok(ScaledAddBase { shape, dtype })
}

/// TORCH_IMPL_FUNC(scaled_add_out) for CPU.
pub fn scaled_add_out(
    state: &mut ScaledAddBase,
    self_: &Tensor,
    other: &Tensor,
    scale: f64,
    out: &Tensor,
) -> Result<()> {
    // `out` already has the broadcast shape and dtype meta announced: aten's add with
    // alpha = scale (a TensorIterator op) writes it.
    debug_assert_eq!(out.dtype(), state.dtype);
    functions::add_out_with(out, self_, other, scale)?;
    Ok(())
}
