//! Forward-mode AD state (torch/csrc/autograd/forward_grad.h/.cpp: `ForwardADLevel`,
//! `ForwardGrad`) and what the generated Autograd kernels use to propagate tangents.
//!
//! Note [Forward AD levels]
//! A tangent lives in its tensor's metadata, in a [`ForwardGrad`] cell, for one level. A level
//! is entered and exited globally (PyTorch's levels are process-wide, not per thread), and
//! only one may be open at a time, as in PyTorch ("Nested forward mode AD is not supported at
//! the moment"). The open level keeps a weak reference to every cell given a tangent while it
//! is open; exiting it empties them, so no tangent outlives its level.
//!
//! Note [Forward formulas run without forward AD]
//! A generated kernel computes an output's tangent from derivatives.yaml's `result:` formula
//! after the call. The formula's own operators must not propagate tangents again (PyTorch
//! gives them the primals, `_fw_primal` views without a tangent): [`ForwardFormulaGuard`]
//! turns the check every kernel makes ([`any_fw_grad_defined`]) off for the thread while the
//! formula runs. Tangents stay readable (`cat_jvp` reads those of its list), and the formula
//! still records a backward graph when its operands require grad.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use ratten_aten::Tensor;
use ratten_core::{Error, Result, TensorBase};

/// The one level forward AD supports (PyTorch's hard-coded level 0).
pub const LEVEL: u64 = 0;

/// A tensor's tangent at the open level (`ForwardGrad`).
#[derive(Default)]
pub struct ForwardGrad {
    value: Mutex<Option<TensorBase>>,
}

impl ForwardGrad {
    pub fn value(&self) -> Option<TensorBase> {
        self.value.lock().clone()
    }

    pub fn set_value(&self, v: TensorBase) {
        *self.value.lock() = Some(v);
    }

    fn reset(&self) {
        // Dropped outside the lock: a tangent's own metadata may hold cells too.
        let old = self.value.lock().take();
        drop(old);
    }
}

/// The open level (`ForwardADLevel`): the cells that got a tangent while it is open.
struct ForwardADLevel {
    grads: Vec<Weak<ForwardGrad>>,
}

static OPEN_LEVEL: Mutex<Option<ForwardADLevel>> = Mutex::new(None);
/// Whether a level is open: read without the lock by every kernel call.
static ANY_LEVEL: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// How many forward formulas this thread is inside (Note [Forward formulas run without
    /// forward AD]).
    static IN_FORMULA: Cell<u32> = const { Cell::new(0) };
    /// `c10::AutogradState`'s forward grad mode: off, tensors show no tangent at all.
    static FW_GRAD_MODE: Cell<bool> = const { Cell::new(true) };
}

/// Whether forward grad mode is on for this thread (`torch._C._is_fwd_grad_enabled`).
pub fn fw_grad_mode() -> bool {
    FW_GRAD_MODE.with(Cell::get)
}

/// Turns forward grad mode on or off for this thread (`torch._C._set_fwd_grad_enabled`): a
/// custom Function's forward runs with it off, its `jvp` gives the tangents.
pub fn set_fw_grad_mode(enabled: bool) {
    FW_GRAD_MODE.with(|m| m.set(enabled));
}

/// Opens a level (`ForwardADLevel::get_next_idx`, `torch._C._enter_dual_level`).
pub fn enter_dual_level() -> Result<u64> {
    let mut open = OPEN_LEVEL.lock();
    if open.is_some() {
        return Err(Error::runtime(
            "Nested forward mode AD is not supported at the moment",
        ));
    }
    *open = Some(ForwardADLevel { grads: Vec::new() });
    ANY_LEVEL.store(true, Ordering::Release);
    Ok(LEVEL)
}

/// Closes `level`, dropping every tangent set in it (`ForwardADLevel::release_idx`).
pub fn exit_dual_level(level: u64) -> Result<()> {
    let grads = {
        let mut open = OPEN_LEVEL.lock();
        if level != LEVEL || open.is_none() {
            return Err(Error::runtime(
                "Exiting a forward AD level that is not the last that was created is not support. Ensure they are released in the reverse order they were created.",
            ));
        }
        ANY_LEVEL.store(false, Ordering::Release);
        open.take().map(|l| l.grads).unwrap_or_default()
    };
    for g in grads.iter().filter_map(Weak::upgrade) {
        g.reset();
    }
    Ok(())
}

/// The open level, if any.
pub fn current_level() -> Option<u64> {
    OPEN_LEVEL.lock().as_ref().map(|_| LEVEL)
}

/// Registers a cell with the open level; an error when `level` is not open.
pub(crate) fn register(level: u64, grad: &Arc<ForwardGrad>) -> Result<()> {
    let mut open = OPEN_LEVEL.lock();
    match open.as_mut() {
        Some(l) if level == LEVEL => {
            // Cells of dead tensors are pruned as the list grows.
            if l.grads.len() >= 64 && l.grads.len().is_power_of_two() {
                l.grads.retain(|w| w.strong_count() > 0);
            }
            l.grads.push(Arc::downgrade(grad));
            Ok(())
        }
        _ => Err(Error::runtime(format!(
            "Trying to set a forward gradient at level {level}, but no such forward AD level exists, make sure to enter_dual_level() first."
        ))),
    }
}

/// Sets forward grad mode for its lifetime, then restores it (`c10::AutoFwGradMode`).
pub struct AutoFwGradMode {
    prev: bool,
}

impl AutoFwGradMode {
    pub fn new(enabled: bool) -> AutoFwGradMode {
        let prev = fw_grad_mode();
        set_fw_grad_mode(enabled);
        AutoFwGradMode { prev }
    }
}

impl Drop for AutoFwGradMode {
    fn drop(&mut self) {
        set_fw_grad_mode(self.prev);
    }
}

/// Turns tangent propagation off for this thread while a forward formula runs
/// (Note [Forward formulas run without forward AD]).
pub struct ForwardFormulaGuard(());

impl ForwardFormulaGuard {
    #[allow(clippy::new_without_default)]
    pub fn new() -> ForwardFormulaGuard {
        IN_FORMULA.with(|c| c.set(c.get() + 1));
        ForwardFormulaGuard(())
    }
}

impl Drop for ForwardFormulaGuard {
    fn drop(&mut self) {
        IN_FORMULA.with(|c| c.set(c.get() - 1));
    }
}

/// Whether kernels propagate tangents now: a level is open and no formula is running.
#[inline]
pub fn forward_ad_active() -> bool {
    ANY_LEVEL.load(Ordering::Acquire)
        && IN_FORMULA.with(|c| c.get() == 0)
        && FW_GRAD_MODE.with(Cell::get)
}

/// `isFwGradDefined`.
#[inline]
pub fn is_fw_grad_defined(t: Option<&Tensor>) -> bool {
    forward_ad_active() && t.is_some_and(|t| t.fw_grad(LEVEL).is_some())
}

/// Whether some input has a tangent (the generated `_any_has_forward_grad_*`).
#[inline]
pub fn any_fw_grad_defined(ts: &[Option<&Tensor>]) -> bool {
    forward_ad_active() && ts.iter().flatten().any(|t| t.fw_grad(LEVEL).is_some())
}

/// `isFwGradDefinedTensorList`.
#[inline]
pub fn any_fw_grad_defined_list(ts: &[Tensor]) -> bool {
    forward_ad_active() && ts.iter().any(|t| t.fw_grad(LEVEL).is_some())
}

/// `isFwGradDefinedTensorList` of a list of optional tensors.
#[inline]
pub fn any_fw_grad_defined_opt_list(ts: &[Option<Tensor>]) -> bool {
    forward_ad_active() && ts.iter().flatten().any(|t| t.fw_grad(LEVEL).is_some())
}

/// `x_t` of a formula: the tangent of `t`, or zeros of its shape (PyTorch's
/// `_efficientzerotensor`).
pub fn fw_grad_or_zeros(t: &Tensor) -> Result<Tensor> {
    match t.fw_grad(LEVEL) {
        Some(g) => Ok(Tensor::from_base(g)),
        None => ratten_aten::functions::zeros_like(t),
    }
}

/// `x_t` of an optional input: None when the input is.
pub fn opt_fw_grad_or_zeros(t: Option<&Tensor>) -> Result<Option<Tensor>> {
    t.map(fw_grad_or_zeros).transpose()
}

/// `x_t_raw`: the tangent if there is one.
pub fn fw_grad(t: &Tensor) -> Option<Tensor> {
    t.fw_grad(LEVEL).map(Tensor::from_base)
}

/// Gives output `t` the tangent `new_grad` (`_set_fw_grad(new, level 0, is_inplace_op)`).
/// An output a backward operator did not compute (`output_mask` false: ratten's empty `[0]`
/// for PyTorch's undefined tensor) gets none, as torch skips undefined outputs.
pub fn set_fw_grad(t: &Tensor, new_grad: &Tensor, is_inplace_op: bool) -> Result<()> {
    if t.dim() == 1 && t.numel() == 0 && new_grad.sizes() != t.sizes() {
        return Ok(());
    }
    t.set_fw_grad(new_grad, LEVEL, is_inplace_op)
}

/// [`set_fw_grad`] of an optional tangent (an undefined one sets nothing).
pub fn set_opt_fw_grad(t: &Tensor, new_grad: Option<&Tensor>, is_inplace_op: bool) -> Result<()> {
    match new_grad {
        Some(g) => set_fw_grad(t, g, is_inplace_op),
        None => Ok(()),
    }
}

/// [`set_fw_grad`] of each output of a list.
pub fn set_fw_grad_list(ts: &[Tensor], new_grads: &[Tensor], is_inplace_op: bool) -> Result<()> {
    if ts.len() != new_grads.len() {
        return Err(Error::runtime(format!(
            "forward AD: {} tangents were computed for {} outputs",
            new_grads.len(),
            ts.len()
        )));
    }
    for (t, g) in ts.iter().zip(new_grads) {
        set_fw_grad(t, g, is_inplace_op)?;
    }
    Ok(())
}

/// The error of an operator whose inputs have tangents but that has no forward formula
/// (torchgen's `emit_forbid_fw_derivatives`).
pub fn forward_ad_not_implemented(name: &str) -> Error {
    Error::not_implemented(format!(
        "Trying to use forward AD with {name} that does not support it because it has not been implemented yet."
    ))
}

/// The error of an out= operator whose inputs have tangents.
pub fn forward_ad_out_refused(name: &str) -> Error {
    Error::not_implemented(format!(
        "Trying to use forward AD with {name} that does not support it because it is an out= function"
    ))
}
