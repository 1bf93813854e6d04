//! Operators PyTorch keeps as CompositeImplicitAutograd aliases of others (LinearAlgebra.cpp's
//! `ger` of `outer`).

use ratten_core::Result;

use crate::generated::operators as ops;
use crate::Tensor;

/// `ger(vec2)`: `outer(self, vec2)`.
pub fn ger(self_: &Tensor, vec2: &Tensor) -> Result<Tensor> {
    ops::outer::call(self_, vec2)
}

/// `ger.out`: `outer.out`.
pub fn ger_out<'a>(self_: &Tensor, vec2: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    ops::outer_out::call(self_, vec2, out)?;
    Ok(out)
}
