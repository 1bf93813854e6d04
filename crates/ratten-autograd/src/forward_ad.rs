//! Forward-mode AD's user API (`torch.autograd.forward_ad` and the operators under it:
//! `_make_dual`, `_unpack_dual`, `_fw_primal`): dual tensors within a level
//! (Note [Forward AD levels]). The tangents themselves are propagated by the generated
//! Autograd kernels from derivatives.yaml's `result:` formulas.
//!
//! ```
//! use ratten_autograd::forward_ad::{dual_level, make_dual, unpack_dual};
//! # ratten_autograd::ensure_initialized(); ratten_autograd::ensure_linked();
//! let x = ratten_aten::Tensor::from_slice(&[3.0f64, 2.0], &[2]).unwrap();
//! let t = ratten_aten::Tensor::from_slice(&[1.0f64, 0.0], &[2]).unwrap();
//! let level = dual_level().unwrap();
//! let d = make_dual(&x, &t, level.level()).unwrap();
//! let y = d.mul(&d).unwrap();
//! let (_, tangent) = unpack_dual(&y, level.level()).unwrap();
//! let tangent = tangent.unwrap();
//! assert_eq!(tangent.select(0, 0).unwrap().item().unwrap().to_double().unwrap(), 6.0);
//! ```

use ratten_aten::Tensor;
use ratten_core::{Error, Result};

use crate::forward_grad::{self, ForwardFormulaGuard, LEVEL};
use crate::variable::{is_differentiable_type, set_fw_differentiable};

pub use crate::forward_grad::{current_level, enter_dual_level, exit_dual_level};

/// An open level, closed when dropped (`with dual_level():`).
pub struct DualLevel {
    level: u64,
}

impl DualLevel {
    pub fn level(&self) -> u64 {
        self.level
    }
}

impl Drop for DualLevel {
    fn drop(&mut self) {
        // The level is the open one: closing it cannot fail.
        let _ = exit_dual_level(self.level);
    }
}

/// Opens a level for the guard's lifetime.
pub fn dual_level() -> Result<DualLevel> {
    enter_dual_level().map(|level| DualLevel { level })
}

fn check_level(level: u64, what: &str) -> Result<()> {
    if current_level() != Some(level) {
        return Err(Error::runtime(format!(
            "Trying to {what} for forward AD but no level exists, make sure to enter_dual_level() first."
        )));
    }
    Ok(())
}

/// `make_dual(tensor, tangent, level=)`: a view of `primal` whose tangent is `tangent`
/// (`_make_dual`: the view keeps `primal`'s backward history).
pub fn make_dual(primal: &Tensor, tangent: &Tensor, level: u64) -> Result<Tensor> {
    check_level(level, "create a dual Tensor")?;
    if !is_differentiable_type(primal.scalar_type()) {
        return Err(Error::value(format!(
            "Expected primal to be floating point or complex, but got: {}",
            primal.scalar_type().python_name()
        )));
    }
    if !is_differentiable_type(tangent.scalar_type()) {
        return Err(Error::value(format!(
            "Expected tangent to be floating point or complex, but got: {}",
            tangent.scalar_type().python_name()
        )));
    }
    if primal.fw_grad(level).is_some() {
        return Err(Error::runtime(format!(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the same level {level} is not supported."
        )));
    }
    let dual = {
        let _formula = ForwardFormulaGuard::new();
        ratten_aten::functions::alias(primal)?
    };
    forward_grad::set_fw_grad(&dual, tangent, false)?;
    Ok(dual)
}

/// `_fw_primal(t, level)`: a view of `t` without its tangent, keeping its backward history.
pub fn fw_primal(t: &Tensor, level: u64) -> Result<Tensor> {
    if level != LEVEL {
        return Err(Error::runtime("Invalid level given to _fw_primal"));
    }
    let primal = {
        let _formula = ForwardFormulaGuard::new();
        ratten_aten::functions::alias(t)?
    };
    set_fw_differentiable(&primal, false);
    Ok(primal)
}

/// `unpack_dual(tensor, level=)`: the primal (a view without tangent) and the tangent, which
/// is the tensor given to `make_dual` itself.
pub fn unpack_dual(t: &Tensor, level: u64) -> Result<(Tensor, Option<Tensor>)> {
    if current_level() != Some(level) {
        return Ok((t.clone(), None));
    }
    Ok((fw_primal(t, level)?, forward_grad::fw_grad(t)))
}
