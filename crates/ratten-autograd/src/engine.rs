//! The engine (torch/csrc/autograd/engine.cpp): runs a backward graph.
//!
//! Note [Engine]
//! As PyTorch's engine, for one call (a graph task):
//! 1. a `GraphRoot` node hands the root gradients to the roots' edges;
//! 2. dependencies are counted over the graph reachable from it (how many edges lead into
//!    each node);
//! 3. for `grad(outputs, inputs)` the edges of the inputs are *captured* (their gradient is
//!    returned instead of accumulated) and only the nodes on a path to a captured edge run
//!    (`exec_info`; `Node::should_compute_output` reads it through [`is_needed`]);
//! 4. a ready queue ordered by sequence number (the latest forward op first; AccumulateGrad,
//!    whose number is the largest, as soon as it is ready) runs each node when all its
//!    incoming gradients are in its input buffer; gradients are checked against what the next
//!    node expects (`validate_outputs`), summed into the next buffers, and a node whose count
//!    drops to zero becomes ready.
//!
//! Grad mode during the run is `create_graph`. Without `retain_graph` every node that ran frees
//! its saved variables. The CPU work runs on the calling thread (PyTorch's CPU device thread is
//! the caller too); an error inside a node stops the task and reaches the caller, named after
//! the node, with the forward trace in anomaly mode.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::BinaryHeap;
use std::sync::Arc;

use ratten_aten::Tensor;
use ratten_core::{Error, Result};

use crate::anomaly_mode::AnomalyMode;
use crate::function::{node_key, Edge, Node, NodeBase, VariableList};
use crate::grad_mode::AutoGradMode;
use crate::input_metadata::validate_outputs;

/// The engine's maps are keyed by node addresses (`node_key`) and looked up a few times per
/// node and backward: foldhash's fast hasher, not SipHash (a few percent of a backward).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;

/// The node that hands the root gradients to the roots (`GraphRoot`).
struct GraphRoot {
    base: NodeBase,
    grads: parking_lot::Mutex<VariableList>,
}

impl Node for GraphRoot {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("torch::autograd::GraphRoot")
    }
    fn base(&self) -> &NodeBase {
        &self.base
    }
    fn apply(self: Arc<Self>, _grads: VariableList) -> Result<VariableList> {
        Ok(std::mem::take(&mut *self.grads.lock()))
    }
}

thread_local! {
    /// The `exec_info` of the graph tasks running on this thread (innermost last): the keys of
    /// the nodes that must run. Empty set stack entry means "everything runs".
    static EXEC_INFO: RefCell<Vec<Option<Arc<HashSet<usize>>>>> = const { RefCell::new(Vec::new()) };
}

/// Whether the node at the end of `edge` takes part in the running graph task (`exec_info`).
pub fn is_needed(edge: &Edge) -> bool {
    let Some(f) = &edge.function else {
        return false;
    };
    EXEC_INFO.with(|e| match e.borrow().last() {
        Some(Some(set)) => set.contains(&node_key(f)),
        _ => true,
    })
}

pub(crate) struct ExecInfoGuard;

impl ExecInfoGuard {
    pub(crate) fn push(info: Option<Arc<HashSet<usize>>>) -> ExecInfoGuard {
        EXEC_INFO.with(|e| e.borrow_mut().push(info));
        ExecInfoGuard
    }
}

impl Drop for ExecInfoGuard {
    fn drop(&mut self) {
        EXEC_INFO.with(|e| {
            e.borrow_mut().pop();
        });
    }
}

/// The graph reachable from `root`: every node by key, and the number of edges into each.
fn compute_dependencies(
    root: &Arc<dyn Node>,
) -> (HashMap<usize, Arc<dyn Node>>, HashMap<usize, usize>) {
    let mut nodes: HashMap<usize, Arc<dyn Node>> = HashMap::default();
    let mut deps: HashMap<usize, usize> = HashMap::default();
    let mut stack = vec![root.clone()];
    nodes.insert(node_key(root), root.clone());
    while let Some(n) = stack.pop() {
        for e in n.base().next_edges() {
            if let Some(f) = &e.function {
                let k = node_key(f);
                *deps.entry(k).or_insert(0) += 1;
                if let Entry::Vacant(v) = nodes.entry(k) {
                    v.insert(f.clone());
                    stack.push(f.clone());
                }
            }
        }
    }
    (nodes, deps)
}

/// `init_to_execute`: the nodes that must run so that every node in `targets` is reached
/// (those with a path to one of them), targets included when `run_targets`.
fn nodes_to_execute(
    root: &Arc<dyn Node>,
    nodes: &HashMap<usize, Arc<dyn Node>>,
    targets: &HashSet<usize>,
    run_targets: bool,
) -> HashSet<usize> {
    // Post-order over the graph: a node is needed when one of its children is a target or
    // needed.
    let mut needed: HashSet<usize> = HashSet::default();
    let mut visited: HashSet<usize> = HashSet::default();
    let mut stack: Vec<(usize, bool)> = vec![(node_key(root), false)];
    while let Some((k, children_done)) = stack.pop() {
        let n = &nodes[&k];
        if children_done {
            let any = n.base().next_edges().iter().any(|e| {
                e.function.as_ref().is_some_and(|f| {
                    let c = node_key(f);
                    needed.contains(&c) || targets.contains(&c)
                })
            });
            if any || (run_targets && targets.contains(&k)) {
                needed.insert(k);
            }
            continue;
        }
        if !visited.insert(k) {
            continue;
        }
        stack.push((k, true));
        for e in n.base().next_edges() {
            if let Some(f) = &e.function {
                let c = node_key(f);
                if !visited.contains(&c) {
                    stack.push((c, false));
                }
            }
        }
    }
    needed
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Ready {
    sequence_nr: u64,
    key: usize,
}

fn add_to_buffer(buf: &mut [Option<Tensor>], i: usize, g: Tensor) -> Result<()> {
    let Some(slot) = buf.get_mut(i) else {
        return Err(Error::runtime(format!(
            "invalid gradient index {i} for a node with {} inputs",
            buf.len()
        )));
    };
    *slot = Some(match slot.take() {
        None => g,
        Some(old) => old.add(&g)?,
    });
    Ok(())
}

fn check_nan(node: &dyn Node, outputs: &VariableList) -> Result<()> {
    for (i, g) in outputs.iter().enumerate() {
        let Some(g) = g else { continue };
        if !(g.scalar_type().is_floating_point() || g.scalar_type().is_complex()) {
            continue;
        }
        let has_nan = g.isnan()?.any()?.item()?.to_bool();
        if has_nan {
            return Err(Error::runtime(format!(
                "Function '{}' returned nan values in its {}th output.",
                node.name(),
                i
            )));
        }
    }
    Ok(())
}

fn with_anomaly_context(node: &dyn Node, e: Error) -> Error {
    match node.base().anomaly_trace() {
        Some(trace) if AnomalyMode::is_enabled() => Error::new(
            e.kind(),
            format!(
                "{}\n\nError detected in {}. Traceback of forward call that caused the error:\n{}",
                e.message(),
                node.name(),
                trace
            ),
        ),
        _ => e,
    }
}

/// Runs the graph behind `roots` with the root gradients `grads` (`Engine::execute`).
/// With `outputs`, returns the gradients flowing into those edges (captured, not accumulated,
/// unless `accumulate_grad`, where only the nodes leading to them run and the leaves among them
/// accumulate); without, runs everything reachable and returns nothing.
pub fn execute(
    roots: Vec<Edge>,
    grads: VariableList,
    keep_graph: bool,
    create_graph: bool,
    accumulate_grad: bool,
    outputs: &[Edge],
) -> Result<VariableList> {
    crate::variable::ensure_initialized();
    if roots.len() != grads.len() {
        return Err(Error::runtime(format!(
            "got {} roots but {} gradients",
            roots.len(),
            grads.len()
        )));
    }
    let root_node = Arc::new(GraphRoot {
        base: NodeBase::with_sequence_nr(crate::function::MAX_SEQUENCE_NR, roots),
        grads: parking_lot::Mutex::new(Vec::new()),
    });
    {
        let mut g = grads;
        validate_outputs(&*root_node, root_node.base().next_edges(), &mut g)?;
        *root_node.grads.lock() = g;
    }
    let root: Arc<dyn Node> = root_node;
    let _grad_mode = AutoGradMode::new(create_graph);

    let (nodes, mut deps) = compute_dependencies(&root);

    // Captures: (node key, input_nr) -> output index.
    let mut captures: HashMap<(usize, u32), Vec<usize>> = HashMap::default();
    let mut captured: VariableList = vec![None; outputs.len()];
    let exec_info = if outputs.is_empty() {
        None
    } else {
        let mut targets = HashSet::default();
        for (i, e) in outputs.iter().enumerate() {
            let Some(f) = &e.function else { continue };
            let k = node_key(f);
            targets.insert(k);
            if !accumulate_grad {
                captures.entry((k, e.input_nr)).or_default().push(i);
            }
        }
        // `run`: the nodes that execute; `compute`: the nodes whose incoming gradients are
        // computed (those that run, and the captured ones).
        let mut run = nodes_to_execute(&root, &nodes, &targets, accumulate_grad);
        run.insert(node_key(&root));
        let mut compute = run.clone();
        compute.extend(targets.iter().copied());
        Some((run, Arc::new(compute)))
    };
    let _exec = ExecInfoGuard::push(exec_info.as_ref().map(|(_, c)| c.clone()));

    let mut buffers: HashMap<usize, VariableList> = HashMap::default();
    let mut ready = BinaryHeap::new();
    ready.push(Ready {
        sequence_nr: root.base().sequence_nr(),
        key: node_key(&root),
    });

    while let Some(Ready { key, .. }) = ready.pop() {
        let node = nodes[&key].clone();
        let mut inputs = buffers
            .remove(&key)
            .unwrap_or_else(|| vec![None; node.base().num_inputs()]);
        node.base()
            .call_pre_hooks(&mut inputs)
            .map_err(|e| with_anomaly_context(&*node, e))?;
        if let Some((run, _)) = &exec_info {
            for (i, g) in inputs.iter().enumerate() {
                if let Some(idx) = captures.get(&(key, i as u32)) {
                    for &o in idx {
                        captured[o] = g.clone();
                    }
                }
            }
            if !run.contains(&key) {
                continue;
            }
        }
        // The incoming gradients go into `apply` (freed as soon as it is done with them);
        // a copy of the list is kept only for post hooks, which see them.
        let hook_inputs = if node.base().has_post_hooks() {
            inputs.clone()
        } else {
            Vec::new()
        };
        let mut outs = node
            .clone()
            .apply(inputs)
            .map_err(|e| with_anomaly_context(&*node, e))?;
        if AnomalyMode::is_enabled() && AnomalyMode::should_check_nan() {
            check_nan(&*node, &outs)?;
        }
        validate_outputs(&*node, node.base().next_edges(), &mut outs)
            .map_err(|e| with_anomaly_context(&*node, e))?;
        if !keep_graph {
            node.release_variables();
        }
        node.base().call_post_hooks(&outs, &hook_inputs)?;
        for (edge, g) in node.base().next_edges().iter().zip(outs) {
            let Some(f) = &edge.function else { continue };
            let k = node_key(f);
            if let Some(g) = g {
                let buf = buffers
                    .entry(k)
                    .or_insert_with(|| vec![None; f.base().num_inputs().max(1)]);
                add_to_buffer(buf, edge.input_nr as usize, g)?;
            }
            let d = deps.get_mut(&k).ok_or_else(|| {
                Error::runtime("dependency not found for a node of the backward graph")
            })?;
            *d -= 1;
            if *d == 0 {
                ready.push(Ready {
                    sequence_nr: f.base().sequence_nr(),
                    key: k,
                });
            }
        }
    }
    Ok(captured)
}
