//! tril and triu (ATen's `TriangularOps.cpp`), structured as in PyTorch: the meta here, the
//! row loop in `native/cpu/shape_kernels.rs`.

use ratten_core::{torch_check, Result, TensorOptions};

use crate::native::cpu::shape_kernels::triangular_kernel;
use crate::structured::MetaBase;
use crate::Tensor;

/// The shared meta: a matrix (or a batch of them) in, a contiguous output of its shape.
fn triangular_meta(m: &dyn MetaBase, self_: &Tensor, name: &str) -> Result<()> {
    torch_check!(
        self_.dim() >= 2,
        "{name}: input tensor must have at least 2 dimensions"
    );
    let options = TensorOptions::new()
        .dtype(self_.dtype())
        .device(self_.device());
    m.set_output_raw_strided(0, &self_.sizes(), &[], options)
}

/// TORCH_META_FUNC(tril).
pub fn tril_meta(m: &dyn MetaBase, self_: &Tensor, _diagonal: i64) -> Result<()> {
    triangular_meta(m, self_, "tril")
}

/// TORCH_META_FUNC(triu).
pub fn triu_meta(m: &dyn MetaBase, self_: &Tensor, _diagonal: i64) -> Result<()> {
    triangular_meta(m, self_, "triu")
}

/// TORCH_IMPL_FUNC(tril_cpu): element `(i, j)` of each matrix kept where `j <= i + diagonal`,
/// zeroed elsewhere.
pub fn tril_cpu(_state: &mut (), self_: &Tensor, diagonal: i64, result: &Tensor) -> Result<()> {
    crate::native::cpu::refuse_unsigned("tril", self_.dtype())?;
    triangular_kernel(result, self_, diagonal, false)
}

/// TORCH_IMPL_FUNC(triu_cpu): element `(i, j)` kept where `j >= i + diagonal`.
pub fn triu_cpu(_state: &mut (), self_: &Tensor, diagonal: i64, result: &Tensor) -> Result<()> {
    crate::native::cpu::refuse_unsigned("triu", self_.dtype())?;
    triangular_kernel(result, self_, diagonal, true)
}
