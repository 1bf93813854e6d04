//! `SavedVariable` (torch/csrc/autograd/saved_variable.h/.cpp): a tensor a backward node keeps
//! from the forward call, with the version it had, so that an in-place change before the
//! backward is an error instead of a wrong gradient.
//!
//! An input is kept as it is (its own history comes with it). An output is kept as an alias
//! without metadata (keeping the output itself would make a cycle: output -> grad_fn -> saved
//! output), and gets its history back on unpack from the node that saved it
//! (Note [Backward graph ownership]).

use std::sync::Arc;

use parking_lot::Mutex;
use ratten_aten::Tensor;
use ratten_core::{Error, Result};

use crate::function::{Edge, Node};
use crate::variable;

/// torch's `ERR_BACKWARD_TWICE`.
pub const ERR_BACKWARD_TWICE: &str = "Trying to backward through the graph a second time (or \
directly access saved tensors after they have already been freed). Saved intermediate values of \
the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you \
need to backward through the graph a second time or if you need to access saved tensors after \
calling backward.";

enum State {
    /// Nothing was saved (an undefined tensor).
    Undefined,
    Saved(Saved),
    /// Freed after a backward without `retain_graph`.
    Released,
}

struct Saved {
    data: Tensor,
    version: u32,
    is_output: bool,
    output_nr: u32,
    /// An output's tangent, given back to it on unpack (the alias has no metadata).
    fw_grad: Option<Tensor>,
}

pub struct SavedVariable {
    state: Mutex<State>,
}

impl Default for SavedVariable {
    fn default() -> Self {
        SavedVariable {
            state: Mutex::new(State::Undefined),
        }
    }
}

impl SavedVariable {
    /// Saves `t`; `is_output` when `t` is an output of the node that saves it (it is then
    /// output `output_nr(t)`: number 0 until its history is set, see [`Self::new_output`]).
    pub fn new(t: &Tensor, is_output: bool) -> SavedVariable {
        if is_output {
            return Self::new_output(t, variable::output_nr(t));
        }
        let saved = Saved {
            data: t.clone(),
            version: t.version(),
            is_output: false,
            output_nr: variable::output_nr(t),
            fw_grad: None,
        };
        SavedVariable {
            state: Mutex::new(State::Saved(saved)),
        }
    }

    /// Saves an output that is number `output_nr` of the node that saves it (its history is set
    /// after the node is made).
    pub fn new_output(t: &Tensor, output_nr: u32) -> SavedVariable {
        let saved = Saved {
            data: Tensor::from_base(ratten_core::TensorBase::alias(t)),
            version: t.version(),
            is_output: true,
            output_nr,
            fw_grad: None,
        };
        SavedVariable {
            state: Mutex::new(State::Saved(saved)),
        }
    }

    pub fn new_opt(t: Option<&Tensor>, is_output: bool) -> SavedVariable {
        t.map_or_else(SavedVariable::default, |t| Self::new(t, is_output))
    }

    /// Whether a tensor was saved (undefined ones are saved as nothing).
    pub fn is_defined(&self) -> bool {
        !matches!(*self.state.lock(), State::Undefined)
    }

    /// The saved tensor, with its history (`unpack`); torch's errors when it was freed or
    /// modified in place since.
    pub fn unpack(&self, saved_for: &Arc<dyn Node>) -> Result<Tensor> {
        self.unpack_opt(saved_for)?
            .ok_or_else(|| Error::runtime("unpack: the saved tensor is undefined"))
    }

    pub fn unpack_opt(&self, saved_for: &Arc<dyn Node>) -> Result<Option<Tensor>> {
        let st = self.state.lock();
        let saved = match &*st {
            State::Undefined => return Ok(None),
            State::Released => return Err(Error::runtime(ERR_BACKWARD_TWICE)),
            State::Saved(s) => s,
        };
        let current = saved.data.version();
        if current != saved.version {
            let type_str = type_string(&saved.data);
            let sizes = saved
                .data
                .sizes()
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            // torch names the node whose output the tensor is now: an input's current
            // grad_fn (an in-place op since made it the output of another), an output's node.
            let grad_fn = if saved.is_output {
                Some(saved_for.clone())
            } else {
                variable::grad_fn(&saved.data)
            };
            let whose = match grad_fn {
                Some(f) => format!(
                    ", which is output {} of {},",
                    saved.output_nr,
                    f.forward_op_name()
                ),
                None => String::new(),
            };
            let hint = if crate::anomaly_mode::AnomalyMode::is_enabled() {
                "Hint: the backtrace further above shows the operation that failed to compute \
                 its gradient. The variable in question was changed in there or anywhere later. \
                 Good luck!"
            } else {
                "Hint: enable anomaly detection to find the operation that failed to compute its \
                 gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
            };
            return Err(Error::runtime(format!(
                "one of the variables needed for gradient computation has been modified by an \
                 inplace operation: [{type_str} [{sizes}]]{whose} is at version {current}; \
                 expected version {} instead. {hint}",
                saved.version
            )));
        }
        if !saved.is_output {
            return Ok(Some(saved.data.clone()));
        }
        // An output: a fresh alias whose history is the node that saved it.
        let t = Tensor::from_base(ratten_core::TensorBase::alias(&saved.data));
        variable::set_gradient_edge(&t, Edge::new(saved_for.clone(), saved.output_nr))?;
        if let Some(g) = &saved.fw_grad {
            if crate::forward_grad::current_level().is_some() {
                crate::forward_grad::set_fw_grad(&t, g, false)?;
            }
        }
        Ok(Some(t))
    }

    /// Keeps the tangent `output` has now, for an output saved before its tangent was set
    /// (the generated kernels save outputs, then compute tangents; torch's SavedVariable
    /// saves `fw_grad` too).
    pub fn save_fw_grad(&self, output: &Tensor) {
        if let State::Saved(s) = &mut *self.state.lock() {
            if s.is_output {
                s.fw_grad = crate::forward_grad::fw_grad(output);
            }
        }
    }

    /// Frees the saved tensor (`reset_data`); a later unpack is ERR_BACKWARD_TWICE.
    pub fn reset_data(&self) {
        let mut st = self.state.lock();
        if matches!(*st, State::Saved(_)) {
            *st = State::Released;
        }
    }
}

/// Unpacks a saved list of tensors.
pub fn unpack_list(v: &[SavedVariable], saved_for: &Arc<dyn Node>) -> Result<Vec<Tensor>> {
    v.iter().map(|s| s.unpack(saved_for)).collect()
}

/// Unpacks a saved list of optional tensors.
pub fn unpack_opt_list(
    v: &[SavedVariable],
    saved_for: &Arc<dyn Node>,
) -> Result<Vec<Option<Tensor>>> {
    v.iter().map(|s| s.unpack_opt(saved_for)).collect()
}

/// The saved form of a list of tensors (`Tensor[]` inputs and outputs).
pub fn saved_list(ts: &[Tensor], is_output: bool) -> Vec<SavedVariable> {
    ts.iter()
        .map(|t| SavedVariable::new(t, is_output))
        .collect()
}

/// The saved form of a list of optional tensors (`Tensor?[]` inputs).
pub fn saved_opt_list(ts: &[Option<Tensor>], is_output: bool) -> Vec<SavedVariable> {
    ts.iter()
        .map(|t| SavedVariable::new_opt(t.as_ref(), is_output))
        .collect()
}

/// torch's legacy type string (`torch.FloatTensor`) of a tensor.
pub fn type_string(t: &Tensor) -> String {
    use ratten_core::ScalarType as S;
    let name = match t.scalar_type() {
        S::Float => "Float",
        S::Double => "Double",
        S::Half => "Half",
        S::BFloat16 => "BFloat16",
        S::ComplexFloat => "ComplexFloat",
        S::ComplexDouble => "ComplexDouble",
        S::Long => "Long",
        S::Int => "Int",
        S::Short => "Short",
        S::Char => "Char",
        S::Byte => "Byte",
        S::Bool => "Bool",
        other => other.name(),
    };
    format!("torch.{name}Tensor")
}
