//! `Node` and `Edge` (torch/csrc/autograd/function.h, edge.h): the backward graph.
//!
//! Note [Backward graph ownership]
//! A node owns its `next_edges` (strong `Arc`s to the nodes that take its outputs' gradients
//! further), so a graph is kept alive by its roots: the `grad_fn` of every tensor that still
//! refers to it. A tensor's metadata holds its `grad_fn` strongly; a node saves its own outputs
//! without their `grad_fn` (`SavedVariable` of an output) and a leaf's `AccumulateGrad` is held
//! weakly by the leaf, so there is no cycle and a graph is freed when its last tensor goes.

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;

use parking_lot::Mutex;
use ratten_aten::Tensor;
use ratten_core::{Error, Result};

use crate::input_metadata::InputMetadata;
use smallvec::SmallVec;

/// `variable_list`: gradients, `None` where a gradient is undefined.
pub type VariableList = Vec<Option<Tensor>>;

/// An edge of the backward graph: input `input_nr` of `function` (`torch::autograd::Edge`).
#[derive(Clone, Default)]
pub struct Edge {
    pub function: Option<Arc<dyn Node>>,
    pub input_nr: u32,
}

impl Edge {
    pub fn new(function: Arc<dyn Node>, input_nr: u32) -> Edge {
        Edge {
            function: Some(function),
            input_nr,
        }
    }

    pub fn is_valid(&self) -> bool {
        self.function.is_some()
    }
}

impl std::fmt::Debug for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.function {
            Some(n) => write!(f, "({}, {})", n.name(), self.input_nr),
            None => write!(f, "(None, {})", self.input_nr),
        }
    }
}

/// A node's edges to its inputs' nodes: inline up to two (most operators take one or two
/// tensors), so recording a node allocates no list for them.
pub type EdgeList = SmallVec<[Edge; 2]>;

/// A hook on one input gradient of a node (a tensor's `register_hook`): may replace it.
pub type TensorPreHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// A hook run on a node's gradients after it ran (`register_hook` on a Node).
pub type PostHook = Arc<dyn Fn(&VariableList, &VariableList) -> Result<()> + Send + Sync>;

/// The state every node has (the data members of `torch::autograd::Node`).
pub struct NodeBase {
    sequence_nr: u64,
    next_edges: EdgeList,
    input_metadata: Mutex<SmallVec<[InputMetadata; 1]>>,
    /// The node's hooks, boxed on the first one registered: most nodes have none, and a
    /// small node is cheap to make and move.
    hooks: Mutex<Option<Box<NodeHooks>>>,
    /// The forward operator's trace in anomaly mode.
    anomaly_trace: Option<Box<str>>,
}

#[derive(Default)]
struct NodeHooks {
    /// Hooks per input (output of the forward op), in registration order, with their ids.
    tensor_pre: Vec<(u32, u64, TensorPreHook)>,
    /// `retain_grad` hooks per input: run after the others, one per input.
    retains_grad: Vec<(u32, TensorPreHook)>,
    post: Vec<PostHook>,
}

thread_local! {
    /// `at::sequence_number`: per-thread, increasing with each node created.
    static SEQUENCE_NR: Cell<u64> = const { Cell::new(0) };
}

#[doc(hidden)]
pub fn next_sequence_nr() -> u64 {
    SEQUENCE_NR.with(|c| {
        let n = c.get();
        c.set(n + 1);
        n
    })
}

// Note [Nodes made in place]
// A node is a few hundred bytes, and recording an operator makes one. `Arc::new(Node { .. })`
// builds the value on the stack and copies it into the allocation (rustc allocates after the
// value is made), a copy that cost a tenth of a small operator's recorded call. `new_node!`
// evaluates the fields first (any `?` among them returns before anything is allocated), then
// allocates and writes each field where it lives. It returns a `UniqueNode`: the node before
// anyone else holds it, so saved outputs are filled in through `&mut`, and `into_arc` shares
// it. The macro checks at compile time that every field of the node is given.

/// A node no one else holds yet (made by [`new_node!`]).
pub struct UniqueNode<T>(Arc<T>);

impl<T> UniqueNode<T> {
    /// The node, shared from now on.
    #[inline]
    pub fn into_arc(self) -> Arc<T> {
        self.0
    }
}

impl<T> std::ops::Deref for UniqueNode<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for UniqueNode<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        let ptr = Arc::as_ptr(&self.0).cast_mut();
        // SAFETY: a `UniqueNode` is never cloned and gives its Arc out only by value
        // (`into_arc`), so this Arc is the only owner and `&mut self` is the only access.
        unsafe { &mut *ptr }
    }
}

/// The allocation `new_node!` writes a node into.
#[doc(hidden)]
pub struct NodeSlot<T>(Arc<std::mem::MaybeUninit<T>>);

impl<T> NodeSlot<T> {
    #[inline(always)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        NodeSlot(Arc::new_uninit())
    }

    /// Where the node goes; valid for writes until `assume_init`.
    #[inline(always)]
    pub fn as_mut_ptr(&mut self) -> *mut T {
        Arc::as_ptr(&self.0).cast_mut().cast()
    }

    /// # Safety
    /// Every field of the node was written through `as_mut_ptr`.
    #[inline(always)]
    pub unsafe fn assume_init(self) -> UniqueNode<T> {
        // SAFETY: the caller's.
        UniqueNode(unsafe { self.0.assume_init() })
    }
}

/// Makes a node in its `Arc` (Note [Nodes made in place]):
/// `new_node!(MulBackward0 { next_edges: edges, other: saved, .. })` takes the next sequence
/// number; `new_node!(AccumulateGrad { sequence_nr: n, next_edges: edges, .. })` is given one.
/// The node's `NodeBase` is its field `base`.
#[macro_export]
macro_rules! new_node {
    ($node:ident { sequence_nr: $seq:expr, next_edges: $edges:expr $(, $field:ident $(: $value:expr)?)* $(,)? }) => {{
        let next_edges: $crate::function::EdgeList = ($edges).into();
        let sequence_nr: u64 = $seq;
        $crate::new_node!(@make $node, sequence_nr, next_edges $(, $field $(: $value)?)*)
    }};
    ($node:ident { next_edges: $edges:expr $(, $field:ident $(: $value:expr)?)* $(,)? }) => {{
        let next_edges: $crate::function::EdgeList = ($edges).into();
        let sequence_nr = $crate::function::next_sequence_nr();
        $crate::new_node!(@make $node, sequence_nr, next_edges $(, $field $(: $value)?)*)
    }};
    (@make $node:ident, $seq:ident, $edges:ident $(, $field:ident $(: $value:expr)?)*) => {{
        // Fails to compile when a field of the node is not given.
        #[allow(unreachable_code, dead_code, clippy::diverging_sub_expression)]
        fn every_field_is_given() -> $node {
            $node { base: unreachable!() $(, $field: unreachable!())* }
        }
        #[allow(unused_parens)]
        let ($($field,)*) = ($($crate::new_node!(@value $field $(: $value)?),)*);
        let mut slot = $crate::function::NodeSlot::<$node>::new();
        let node = slot.as_mut_ptr();
        // SAFETY: `node` points to the fresh allocation of `slot`; each field is written once,
        // every field is written (checked above), and then the node is complete.
        unsafe {
            $crate::function::NodeBase::write_to(&raw mut (*node).base, $seq, $edges);
            $((&raw mut (*node).$field).write($field);)*
            slot.assume_init()
        }
    }};
    (@value $field:ident) => { $field };
    (@value $field:ident : $value:expr) => { $value };
}

/// The sequence number AccumulateGrad takes: run as soon as it is ready.
pub const MAX_SEQUENCE_NR: u64 = u64::MAX;

impl NodeBase {
    /// A node taking the next sequence number, with the edges to its inputs' nodes.
    pub fn new(next_edges: impl Into<EdgeList>) -> NodeBase {
        Self::with_sequence_nr(next_sequence_nr(), next_edges)
    }

    pub fn with_sequence_nr(sequence_nr: u64, next_edges: impl Into<EdgeList>) -> NodeBase {
        let mut base = std::mem::MaybeUninit::<NodeBase>::uninit();
        // SAFETY: the slot is valid and aligned, and `write_to` initialises every field.
        unsafe {
            Self::write_to(base.as_mut_ptr(), sequence_nr, next_edges.into());
            base.assume_init()
        }
    }

    /// Writes a new `NodeBase` at `slot` (Note [Nodes made in place]).
    ///
    /// # Safety
    /// `slot` is valid for writes and aligned; what it held is not dropped.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn write_to(slot: *mut NodeBase, sequence_nr: u64, next_edges: EdgeList) {
        // Every field is written below: this exhaustive pattern stops compiling when one is
        // added.
        #[allow(dead_code)]
        fn every_field_is_written(base: NodeBase) {
            let NodeBase {
                sequence_nr: _,
                next_edges: _,
                input_metadata: _,
                hooks: _,
                anomaly_trace: _,
            } = base;
        }
        let anomaly_trace = crate::anomaly_mode::AnomalyMode::is_enabled()
            .then(|| crate::anomaly_mode::current_forward_trace().into_boxed_str());
        // SAFETY: the caller's; each field is written once.
        unsafe {
            (&raw mut (*slot).sequence_nr).write(sequence_nr);
            (&raw mut (*slot).next_edges).write(next_edges);
            (&raw mut (*slot).input_metadata).write(Mutex::new(SmallVec::new()));
            (&raw mut (*slot).hooks).write(Mutex::new(None));
            (&raw mut (*slot).anomaly_trace).write(anomaly_trace);
        }
    }

    /// `add_input_metadata` on a node no one else holds: no lock.
    pub fn add_input_metadata_mut(&mut self, t: &Tensor) -> u32 {
        let m = self.input_metadata.get_mut();
        m.push(InputMetadata::of(t));
        (m.len() - 1) as u32
    }

    pub fn sequence_nr(&self) -> u64 {
        self.sequence_nr
    }

    pub fn next_edges(&self) -> &[Edge] {
        &self.next_edges
    }

    pub fn next_edge(&self, i: usize) -> Option<&Edge> {
        self.next_edges.get(i)
    }

    pub fn num_outputs(&self) -> usize {
        self.next_edges.len()
    }

    pub fn num_inputs(&self) -> usize {
        self.input_metadata.lock().len()
    }

    /// Records the metadata of the next input (an output of the forward op) and returns its
    /// number (`add_input_metadata`).
    pub fn add_input_metadata(&self, t: &Tensor) -> u32 {
        let mut m = self.input_metadata.lock();
        m.push(InputMetadata::of(t));
        (m.len() - 1) as u32
    }

    /// Records an input that is never given a gradient (an undefined output).
    pub fn add_undefined_input(&self) -> u32 {
        let mut m = self.input_metadata.lock();
        m.push(InputMetadata::undefined());
        (m.len() - 1) as u32
    }

    pub fn input_metadata(&self, i: usize) -> Option<InputMetadata> {
        self.input_metadata.lock().get(i).cloned()
    }

    /// `task_should_compute_output`: whether some output in `r` leads anywhere.
    pub fn should_compute_output(&self, r: IndexRange) -> bool {
        (r.start..r.end).any(|i| {
            self.next_edges.get(i).is_some_and(Edge::is_valid)
                && crate::engine::is_needed(&self.next_edges[i])
        })
    }

    /// Runs `f` on the node's hooks, made empty first if it had none.
    fn with_hooks<R>(&self, f: impl FnOnce(&mut NodeHooks) -> R) -> R {
        f(self.hooks.lock().get_or_insert_with(Box::default))
    }

    /// Adds a hook on input `input_nr`'s gradient; returns its id.
    pub fn add_tensor_pre_hook(&self, input_nr: u32, hook: TensorPreHook) -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.with_hooks(|h| h.tensor_pre.push((input_nr, id, hook)));
        id
    }

    pub fn remove_tensor_pre_hook(&self, id: u64) -> bool {
        let mut h = self.hooks.lock();
        let Some(h) = h.as_mut() else {
            return false;
        };
        let before = h.tensor_pre.len();
        h.tensor_pre.retain(|(_, i, _)| *i != id);
        h.tensor_pre.len() != before
    }

    /// Sets the `retain_grad` hook of input `input_nr` (one per input, replaced).
    pub fn set_retains_grad_hook(&self, input_nr: u32, hook: TensorPreHook) {
        self.with_hooks(|h| {
            h.retains_grad.retain(|(i, _)| *i != input_nr);
            h.retains_grad.push((input_nr, hook));
        })
    }

    pub fn has_retains_grad_hook(&self, input_nr: u32) -> bool {
        self.hooks
            .lock()
            .as_ref()
            .is_some_and(|h| h.retains_grad.iter().any(|(i, _)| *i == input_nr))
    }

    pub fn add_post_hook(&self, hook: PostHook) {
        self.with_hooks(|h| h.post.push(hook));
    }

    /// Runs the tensor hooks, then the retain_grad hooks, on the incoming gradients.
    pub(crate) fn call_pre_hooks(&self, grads: &mut VariableList) -> Result<()> {
        // The hooks are copied out before they run: a hook may register others on this node
        // (the retain_grad hooks are read after the tensor hooks ran, as they are run).
        let copy_out = |pick: fn(&NodeHooks) -> Vec<(u32, TensorPreHook)>| {
            self.hooks.lock().as_deref().map(pick).unwrap_or_default()
        };
        let hooks = copy_out(|h| {
            h.tensor_pre
                .iter()
                .map(|(i, _, f)| (*i, f.clone()))
                .collect()
        });
        for (i, h) in hooks {
            if let Some(Some(g)) = grads.get(i as usize) {
                if let Some(new) = h(g)? {
                    grads[i as usize] = Some(new);
                }
            }
        }
        for (i, h) in copy_out(|h| h.retains_grad.clone()) {
            if let Some(Some(g)) = grads.get(i as usize) {
                h(g)?;
            }
        }
        Ok(())
    }

    /// Whether post hooks are registered (the engine keeps a node's incoming gradients past
    /// its `apply` only for them).
    pub(crate) fn has_post_hooks(&self) -> bool {
        self.hooks
            .lock()
            .as_ref()
            .is_some_and(|h| !h.post.is_empty())
    }

    pub(crate) fn call_post_hooks(
        &self,
        outputs: &VariableList,
        inputs: &VariableList,
    ) -> Result<()> {
        let hooks: Vec<PostHook> = match self.hooks.lock().as_ref() {
            None => return Ok(()),
            Some(h) => h.post.clone(),
        };
        for h in hooks {
            h(outputs, inputs)?;
        }
        Ok(())
    }

    pub fn anomaly_trace(&self) -> Option<&str> {
        self.anomaly_trace.as_deref()
    }
}

/// A function of the backward graph (`torch::autograd::Node`): takes the gradients of the
/// forward op's outputs, returns those of its inputs, one per `next_edges` entry.
pub trait Node: Send + Sync + 'static {
    /// PyTorch's class name (`MulBackward0`).
    fn name(&self) -> Cow<'static, str>;
    fn base(&self) -> &NodeBase;
    fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList>;
    /// Frees the saved tensors after a backward without `retain_graph`.
    fn release_variables(&self) {}
    /// The leaf tensor of an `AccumulateGrad` (its `variable`).
    fn accumulate_grad_variable(&self) -> Option<Tensor> {
        None
    }
    /// The forward op's name (`Node::forward_op_name`): `name()` without its `Backward<N>`
    /// suffix, keeping a number other than 0 (`AddBackward1` -> `Add1`).
    fn forward_op_name(&self) -> String {
        forward_op_name(&self.name())
    }
}

/// `Node::forward_op_name` of a node called `name`.
pub fn forward_op_name(name: &str) -> String {
    let Some(pos) = name.rfind("Backward") else {
        return name.to_string();
    };
    let suffix = &name[pos + "Backward".len()..];
    if !suffix.bytes().all(|b| b.is_ascii_digit()) {
        return name.to_string();
    }
    if suffix.is_empty() || suffix == "0" {
        name[..pos].to_string()
    } else {
        format!("{}{suffix}", &name[..pos])
    }
}

/// The address of a node, its identity in the engine's maps.
pub(crate) fn node_key(n: &Arc<dyn Node>) -> usize {
    Arc::as_ptr(n) as *const () as usize
}

/// A range of a node's outputs (`IndexRange`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexRange {
    pub start: usize,
    pub end: usize,
}

/// Hands out consecutive ranges (`IndexRangeGenerator`).
#[derive(Default)]
pub struct IndexRangeGenerator {
    i: usize,
}

impl IndexRangeGenerator {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn range(&mut self, n: usize) -> IndexRange {
        let r = IndexRange {
            start: self.i,
            end: self.i + n,
        };
        self.i += n;
        r
    }

    pub fn size(&self) -> usize {
        self.i
    }
}

/// Puts one gradient at the start of `r`.
pub fn copy_range(out: &mut VariableList, r: IndexRange, t: Option<Tensor>) {
    if r.start < r.end {
        out[r.start] = t;
    }
}

/// Puts gradients at the positions of `r`.
pub fn copy_range_list(out: &mut VariableList, r: IndexRange, ts: Vec<Option<Tensor>>) {
    for (slot, t) in out[r.start..r.end].iter_mut().zip(ts) {
        *slot = t;
    }
}

pub fn any_variable_defined(v: &VariableList) -> bool {
    v.iter().any(Option::is_some)
}

/// An undefined gradient where a formula needs one is an error, never a panic.
pub fn defined(t: &Option<Tensor>) -> Result<&Tensor> {
    t.as_ref()
        .ok_or_else(|| Error::runtime("expected a defined gradient, got an undefined one"))
}

/// torch's error for an operator whose derivative is not implemented.
pub fn not_implemented(name: &str) -> Error {
    Error::not_implemented(format!("the derivative for '{name}' is not implemented."))
}

/// The error of a formula the generator could not translate (its formula text is named).
pub fn not_translated(name: &str, formula: &str) -> Error {
    Error::not_implemented(format!(
        "the derivative for '{name}' is not implemented in ratten: its formula `{formula}` \
         from derivatives.yaml has no Rust translation yet"
    ))
}

/// The node of an operator without a derivative formula (torch's `NotImplemented`): recorded
/// so that the forward works, an error when a backward reaches it.
pub struct NotImplemented {
    base: NodeBase,
    forward_fn: String,
}

impl NotImplemented {
    pub fn new(forward_fn: &str, next_edges: impl Into<EdgeList>) -> NotImplemented {
        NotImplemented {
            base: NodeBase::new(next_edges),
            forward_fn: forward_fn.to_string(),
        }
    }
}

impl Node for NotImplemented {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("torch::autograd::NotImplemented")
    }

    fn base(&self) -> &NodeBase {
        &self.base
    }

    fn apply(self: Arc<Self>, _grads: VariableList) -> Result<VariableList> {
        Err(Error::runtime(format!(
            "derivative for {} is not implemented",
            self.forward_fn
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Probe {
        base: NodeBase,
        name: String,
        sizes: Vec<i64>,
        count: u32,
    }

    fn failing(fail: bool) -> Result<i64> {
        if fail {
            Err(Error::runtime("no"))
        } else {
            Ok(7)
        }
    }

    fn probe(fail: bool, name: &str) -> Result<UniqueNode<Probe>> {
        let count = 7;
        Ok(crate::new_node!(Probe {
            next_edges: EdgeList::new(),
            name: format!("{name}-node"),
            // Reads the argument `name`, not the field given above.
            sizes: vec![name.len() as i64, failing(fail)?],
            count,
        }))
    }

    #[test]
    fn new_node_writes_every_field_in_place() {
        let a = probe(false, "p").unwrap();
        let b = probe(false, "q").unwrap();
        assert_eq!(a.name, "p-node");
        assert_eq!(a.sizes, [1, 7]);
        assert_eq!(a.count, 7);
        assert!(a.base.next_edges().is_empty());
        // Each takes the next sequence number.
        assert_eq!(b.base.sequence_nr(), a.base.sequence_nr() + 1);
        let mut b = b;
        b.name.push('!');
        b.base
            .add_input_metadata_mut(&Tensor::from_slice(&[1.0f32], &[1]).unwrap());
        let shared = b.into_arc();
        assert_eq!(shared.name, "q-node!");
        assert_eq!(Arc::strong_count(&shared), 1);
    }

    #[test]
    fn new_node_returns_an_error_before_allocating() {
        assert!(probe(true, "p").is_err());
    }

    #[test]
    fn fixed_sequence_nr_is_kept() {
        struct Leaf {
            base: NodeBase,
        }
        let n = crate::new_node!(Leaf {
            sequence_nr: MAX_SEQUENCE_NR,
            next_edges: EdgeList::new(),
        });
        assert_eq!(n.base.sequence_nr(), MAX_SEQUENCE_NR);
    }
}
