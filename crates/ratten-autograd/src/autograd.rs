//! `torch::autograd::backward` and `torch::autograd::grad` (torch/csrc/autograd/autograd.cpp),
//! and the autograd methods of a tensor ([`TensorAutogradExt`]).

use std::sync::Arc;

use ratten_aten::Tensor;
use ratten_core::{Error, Result};

use crate::engine;
use crate::function::{Edge, Node, TensorPreHook, VariableList};
use crate::variable;

/// `_make_grads`: the gradient of each root, `ones` for a scalar root given none.
fn make_grads(outputs: &[Tensor], grad_outputs: &[Option<Tensor>]) -> Result<VariableList> {
    if !grad_outputs.is_empty() && grad_outputs.len() != outputs.len() {
        return Err(Error::runtime(format!(
            "grad_tensors should have the same length as tensors: got {} and {}",
            grad_outputs.len(),
            outputs.len()
        )));
    }
    outputs
        .iter()
        .enumerate()
        .map(
            |(i, o)| match grad_outputs.get(i).and_then(Option::as_ref) {
                Some(g) => {
                    if g.sizes() != o.sizes() {
                        return Err(Error::runtime(
                            format!(
                        "Mismatch in shape: grad_output[{i}] has a shape of {:?} and output[{i}] \
                         has a shape of {:?}.",
                        g.sizes().as_slice(),
                        o.sizes().as_slice()
                    )
                            .replace("[]", "torch.Size([])"),
                        ));
                    }
                    Ok(Some(g.clone()))
                }
                None => {
                    if !o.requires_grad() {
                        return Ok(None);
                    }
                    if o.numel() != 1 {
                        return Err(Error::runtime(
                            "grad can be implicitly created only for scalar outputs",
                        ));
                    }
                    Ok(Some(ratten_aten::functions::ones_like(o)?))
                }
            },
        )
        .collect()
}

fn root_edges(outputs: &[Tensor]) -> Result<Vec<Edge>> {
    outputs
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let e = variable::gradient_edge(o);
            if !e.is_valid() {
                return Err(Error::runtime(format!(
                    "element {i} of tensors does not require grad and does not have a grad_fn"
                )));
            }
            Ok(e)
        })
        .collect()
}

/// `torch.autograd.backward`: accumulates the gradients of `tensors` into the leaves' `.grad`
/// (only into `inputs` when given). `retain_graph` defaults to `create_graph`.
pub fn backward(
    tensors: &[Tensor],
    grad_tensors: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: &[Tensor],
) -> Result<()> {
    let grads = make_grads(tensors, grad_tensors)?;
    let roots = root_edges(tensors)?;
    let keep_graph = retain_graph.unwrap_or(create_graph);
    let outputs: Vec<Edge> = inputs
        .iter()
        .map(|t| {
            let e = variable::gradient_edge(t);
            if !e.is_valid() {
                return Err(Error::runtime(
                    "One of the differentiated Tensors does not require grad",
                ));
            }
            Ok(e)
        })
        .collect::<Result<_>>()?;
    engine::execute(
        roots,
        grads,
        keep_graph,
        create_graph,
        !inputs.is_empty(),
        &outputs,
    )?;
    // Inputs that are not leaves get their gradient through the capture path: accumulate it.
    Ok(())
}

/// `torch.autograd.grad`: the gradients of `outputs` with respect to `inputs`, returned instead
/// of accumulated.
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    let grads = make_grads(outputs, grad_outputs)?;
    let roots = root_edges(outputs)?;
    let keep_graph = retain_graph.unwrap_or(create_graph);
    let edges: Vec<Edge> = inputs
        .iter()
        .map(|t| {
            if !t.requires_grad() {
                return Err(Error::runtime(
                    "One of the differentiated Tensors does not require grad",
                ));
            }
            Ok(variable::gradient_edge(t))
        })
        .collect::<Result<_>>()?;
    let res = engine::execute(roots, grads, keep_graph, create_graph, false, &edges)?;
    if !allow_unused && res.iter().any(Option::is_none) {
        return Err(Error::runtime(
            "One of the differentiated Tensors appears to not have been used in the graph. Set \
             allow_unused=True if this is the desired behavior.",
        ));
    }
    Ok(res)
}

/// The autograd methods of a tensor (torch's `Tensor.backward`, `.requires_grad_`, ...).
pub trait TensorAutogradExt {
    /// `requires_grad_(requires_grad)`.
    fn requires_grad_(&self, requires_grad: bool) -> Result<&Tensor>;
    /// `backward()` of a scalar.
    fn backward(&self) -> Result<()>;
    /// `backward(gradient, retain_graph, create_graph, inputs)`.
    fn backward_with(
        &self,
        gradient: Option<&Tensor>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: &[Tensor],
    ) -> Result<()>;
    fn grad_fn(&self) -> Option<Arc<dyn Node>>;
    fn is_leaf(&self) -> bool;
    fn output_nr(&self) -> u32;
    fn retain_grad(&self) -> Result<()>;
    fn retains_grad(&self) -> bool;
    fn register_hook(&self, hook: TensorPreHook) -> Result<u64>;
    /// `_is_view()`.
    fn is_view(&self) -> bool;
    /// `_base`.
    fn view_base(&self) -> Option<Tensor>;
    /// `.grad` as a `Tensor`.
    fn grad_tensor(&self) -> Option<Tensor>;
}

impl TensorAutogradExt for Tensor {
    fn requires_grad_(&self, requires_grad: bool) -> Result<&Tensor> {
        variable::set_requires_grad(self, requires_grad)?;
        Ok(self)
    }

    fn backward(&self) -> Result<()> {
        self.backward_with(None, None, false, &[])
    }

    fn backward_with(
        &self,
        gradient: Option<&Tensor>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: &[Tensor],
    ) -> Result<()> {
        backward(
            std::slice::from_ref(self),
            &[gradient.cloned()],
            retain_graph,
            create_graph,
            inputs,
        )
    }

    fn grad_fn(&self) -> Option<Arc<dyn Node>> {
        variable::grad_fn(self)
    }

    fn is_leaf(&self) -> bool {
        variable::is_leaf(self)
    }

    fn output_nr(&self) -> u32 {
        variable::output_nr(self)
    }

    fn retain_grad(&self) -> Result<()> {
        variable::retain_grad(self)
    }

    fn retains_grad(&self) -> bool {
        variable::retains_grad(self)
    }

    fn register_hook(&self, hook: TensorPreHook) -> Result<u64> {
        variable::register_hook(self, hook)
    }

    fn is_view(&self) -> bool {
        variable::is_view(self)
    }

    fn view_base(&self) -> Option<Tensor> {
        variable::view_base(self)
    }

    fn grad_tensor(&self) -> Option<Tensor> {
        self.grad().map(Tensor::from_base)
    }
}
