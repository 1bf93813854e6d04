//! TensorIterator (aten/src/ATen/TensorIterator.{h,cpp}): the engine under every pointwise
//! operator. It broadcasts the operands, computes the common dtype, checks memory overlap and
//! safe casting, allocates or resizes outputs with the strides PyTorch would give them,
//! reorders and coalesces dimensions, and then drives a 2-D inner loop over **byte** strides,
//! split across threads above [`GRAIN_SIZE`].
//!
//! The build pipeline is PyTorch's: populate operands, mark outputs, memory overlaps, shape,
//! resize marks, types, fast setup or (strides, reorder, allocate, coalesce).
//!
//! Deliberate difference from PyTorch on the CPU: no temporaries are made for inputs or outputs
//! whose dtype differs from the common dtype. Each operand keeps its own dtype
//! ([`TensorIteratorBase::dtype`]) and the kernels cast while they stream (in L1-sized blocks),
//! so `int32 + float32 -> float32` is one pass over memory. The result is the same: inputs are
//! cast to the common dtype, the op computes in it, and the result is cast to each output.
//!
//! Note [One iterator for reductions and multi-output kernels]: a built iterator is in one of
//! two forms, the compact one of a trivial build (`trivial.rs`) or the general one, and every
//! accessor answers the same for both. The compact form exists only for one output over
//! contiguous same-shape, same-dtype inputs: a reduction (`is_reduction`) or a build of
//! several outputs always takes the general pipeline, so the reduction driver
//! (`native/cpu/reduce.rs`) and the multi-output kernels (max.dim, aminmax, var_mean, the
//! cumulative ops) are written once, against the accessors (`shape`, `strides`, `dtype`,
//! `with_data_ptrs`, `for_each`), and never see the compact form.
//!
//! Outputs are created through a [`MetaBase`] (PyTorch's `set_output_raw_strided` virtual):
//! a structured meta passes its generated wrapper to [`TensorIteratorConfig::build`];
//! [`TensorIteratorConfig::build_standalone`] uses [`StandaloneOutputs`], the plain
//! `TensorIterator`'s behaviour (create with `empty_strided`, resize an `out=`).

pub mod overlap;
pub mod parallel;
mod trivial;

use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::mem::ManuallyDrop;

use ratten_core::access::SnapshotSpec;
use ratten_core::snapshot::Pinned;
use ratten_core::tensor_impl::{contiguous_strides, DimVec, TensorMeta};
use ratten_core::{
    can_cast, get_default_dtype, Device, Error, RawAccess, Result, ScalarType, TensorBase,
    TensorOptions,
};
use smallvec::SmallVec;

use crate::native::type_properties::{
    result_type_of_state, update_result_type_state, ResultTypeState,
};
use crate::structured::{create_out, resize_output, MetaBase};
use crate::Tensor;
pub use parallel::{get_num_threads, parallel_for, set_num_threads, GRAIN_SIZE, MAX_NUM_THREADS};
use trivial::{BorrowedOperands, Pins, TrivialBox, TrivialFlags, TrivialIter};

/// Operand lists: outputs first, then inputs; up to 4 inline.
type OpVec<T> = SmallVec<[T; 4]>;

/// `strides` (one per dimension of a tensor of `sizes`, times `scale`) aligned to the
/// broadcast `shape`: leading dimensions the tensor lacks, and its size-1 dimensions that
/// broadcast, get 0 (`compute_strides`'s rule).
fn broadcast_strides(sizes: &[i64], strides: &[i64], scale: i64, shape: &[i64]) -> DimVec {
    let offset = shape.len() - sizes.len();
    let mut sb = DimVec::from_elem(0, shape.len());
    for i in 0..sizes.len() {
        if !(sizes[i] == 1 && shape[offset + i] != 1) {
            sb[offset + i] = strides[i] * scale;
        }
    }
    sb
}

/// Formats sizes as PyTorch prints an IntArrayRef: `[2, 3]`.
pub(crate) fn fmt_sizes(s: &[i64]) -> String {
    let v: Vec<String> = s.iter().map(|x| x.to_string()).collect();
    format!("[{}]", v.join(", "))
}

// ---------------------------------------------------------------------------------------------
// Output creation (MetaBase::set_output_raw_strided)
// ---------------------------------------------------------------------------------------------

/// The plain TensorIterator's outputs (`TensorIteratorBase::set_output_raw_strided` of the
/// non-structured `TensorIterator`): an undefined output is created with `empty_strided`, a
/// defined one is resized when its shape differs (with the deprecation warning) and then takes
/// the requested strides. Unlike the structured out= wrapper it accepts an output of any dtype
/// (the kernels cast into it).
///
/// A given output is kept as the config holds it (a borrowed one is not counted again), and
/// slots for up to two outputs sit in place: a small op's plain build neither allocates nor
/// counts a reference for its sink.
#[derive(Clone, Debug, Default)]
pub struct StandaloneOutputs<'a> {
    /// One slot per output: the given tensor (a copy of the config's operand), or empty until
    /// the iterator creates it.
    given: SmallVec<[Option<Cow<'a, TensorBase>>; 2]>,
    created: SmallVec<[OnceCell<Tensor>; 2]>,
}

impl<'a> StandaloneOutputs<'a> {
    /// The sink for outputs given as `outputs` (`None`: to create).
    pub fn new(outputs: &[Option<Cow<'a, TensorBase>>]) -> Self {
        if let [one] = outputs {
            // The inline buffers filled directly (`collect` costs more).
            return StandaloneOutputs {
                given: SmallVec::from_buf_and_len([one.clone(), None], 1),
                created: SmallVec::from_buf_and_len([OnceCell::new(), OnceCell::new()], 1),
            };
        }
        StandaloneOutputs {
            given: outputs.iter().cloned().collect(),
            created: outputs.iter().map(|_| OnceCell::new()).collect(),
        }
    }

    fn slot(&self, idx: usize) -> Result<(Option<&Tensor>, &OnceCell<Tensor>)> {
        match (self.given.get(idx), self.created.get(idx)) {
            (Some(g), Some(c)) => Ok((g.as_deref().map(Tensor::from_base_ref), c)),
            _ => Err(Error::index(format!(
                "TensorIterator: output index {idx} is out of range for {} outputs",
                self.given.len()
            ))),
        }
    }
}

impl MetaBase for StandaloneOutputs<'_> {
    fn set_output_raw_strided(
        &self,
        idx: usize,
        sizes: &[i64],
        strides: &[i64],
        options: TensorOptions,
    ) -> Result<()> {
        match self.slot(idx)? {
            (Some(t), _) => {
                if resize_output(t, sizes)? && !strides.is_empty() {
                    t.as_strided_(sizes, strides, None)?;
                }
            }
            (None, slot) => {
                if slot.get().is_none() {
                    // Empty just above, and nothing else fills it in between.
                    let _ = slot.set(create_out(sizes, strides, options)?);
                }
            }
        }
        Ok(())
    }
    fn keep_output_and_get(
        &self,
        idx: usize,
        _sizes: &[i64],
        _options: TensorOptions,
    ) -> Result<Option<&Tensor>> {
        // A given output that keeps its sizes: nothing to resize (the default's
        // `resize_output` would find the sizes equal).
        Ok(self.slot(idx)?.0)
    }
    fn maybe_get_output(&self, idx: usize) -> Option<&Tensor> {
        match self.slot(idx).ok()? {
            (Some(t), _) => Some(t),
            (None, c) => c.get(),
        }
    }
    fn num_outputs(&self) -> usize {
        self.given.len()
    }
}

/// Where a build's outputs come from (see Note [Borrowed structured outputs] in
/// structured.rs).
#[derive(Clone, Copy)]
enum OutputSink<'s, 'a> {
    /// A structured wrapper borrowed for the iterator's life: the operands borrow the outputs
    /// it holds (no reference counted).
    Borrowed(&'a dyn MetaBase),
    /// A sink that dies with the build (the plain TensorIterator's): the operands own a
    /// reference to each output.
    Local(&'s dyn MetaBase),
}

impl<'a> OutputSink<'_, 'a> {
    #[inline]
    fn meta(&self) -> &dyn MetaBase {
        match *self {
            OutputSink::Borrowed(m) => m,
            OutputSink::Local(m) => m,
        }
    }
}

/// An output operand as the config takes it: PyTorch's `add_output(const TensorBase&)` borrows
/// the tensor for the iterator's lifetime, `add_owned_output(TensorBase)` owns it (the
/// iterator's operands are `MaybeOwned`, here `Cow`). `None` is an output the iterator
/// allocates.
pub trait OutputOperand<'a> {
    fn into_operand(self) -> Option<Cow<'a, TensorBase>>;
}
/// An input operand: borrowed (`add_input`) or owned (`add_owned_input`, e.g. a wrapped
/// number made inside a meta function: PyTorch's
/// `build_borrowing_except_last_argument_comparison_op`).
pub trait InputOperand<'a> {
    fn into_operand(self) -> Cow<'a, TensorBase>;
    /// The tensor when the operand borrows one for `'a`.
    #[inline(always)]
    fn borrowed(&self) -> Option<&'a TensorBase> {
        None
    }
}
impl<'a> InputOperand<'a> for &'a TensorBase {
    fn into_operand(self) -> Cow<'a, TensorBase> {
        Cow::Borrowed(self)
    }
    #[inline(always)]
    fn borrowed(&self) -> Option<&'a TensorBase> {
        Some(*self)
    }
}
impl<'a> InputOperand<'a> for &'a Tensor {
    fn into_operand(self) -> Cow<'a, TensorBase> {
        Cow::Borrowed(self.base())
    }
    #[inline(always)]
    fn borrowed(&self) -> Option<&'a TensorBase> {
        Some(self.base())
    }
}
impl<'a> InputOperand<'a> for Cow<'a, TensorBase> {
    fn into_operand(self) -> Cow<'a, TensorBase> {
        self
    }
}
impl<'a> InputOperand<'a> for TensorBase {
    fn into_operand(self) -> Cow<'a, TensorBase> {
        Cow::Owned(self)
    }
}
impl<'a> InputOperand<'a> for Tensor {
    fn into_operand(self) -> Cow<'a, TensorBase> {
        Cow::Owned(self.into_base())
    }
}

impl<'a> OutputOperand<'a> for Option<&'a TensorBase> {
    fn into_operand(self) -> Option<Cow<'a, TensorBase>> {
        self.map(Cow::Borrowed)
    }
}
impl<'a> OutputOperand<'a> for &'a Tensor {
    fn into_operand(self) -> Option<Cow<'a, TensorBase>> {
        Some(Cow::Borrowed(self.base()))
    }
}
impl<'a> OutputOperand<'a> for &'a TensorBase {
    fn into_operand(self) -> Option<Cow<'a, TensorBase>> {
        Some(Cow::Borrowed(self))
    }
}
/// An output operand already in `MaybeOwned` form: owned (`add_owned_output`: a structured
/// meta's output, which the iterator cannot borrow from the wrapper it also calls back) or
/// borrowed (that output when it is one of the borrowed inputs, as in-place ops have it).
pub struct MaybeOwnedOutput<'a>(pub Option<Cow<'a, TensorBase>>);
impl<'a> OutputOperand<'a> for MaybeOwnedOutput<'a> {
    fn into_operand(self) -> Option<Cow<'a, TensorBase>> {
        self.0
    }
}

// ---------------------------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------------------------

/// `TensorIteratorConfig`: operands and flags. Outputs must be added before inputs.
#[derive(Clone, Debug)]
pub struct TensorIteratorConfig<'a> {
    /// The operands as added (outputs first; `None` is an output to allocate). Inline up to
    /// four: a trivial build moves them into its compact form, the general one into its
    /// `OperandInfo` records.
    operands: OpVec<Option<Cow<'a, TensorBase>>>,
    num_outputs: usize,
    num_inputs: usize,
    /// Boxed: the config is passed by value through the builder calls, so it is kept small.
    static_shape: Option<Box<[i64]>>,
    static_dtype: Option<ScalarType>,
    static_device: Option<Device>,
    check_mem_overlap: bool,
    allow_cpu_scalars: bool,
    is_reduction: bool,
    resize_outputs: bool,
    check_all_same_dtype: bool,
    check_all_same_device: bool,
    enforce_safe_casting_to_output: bool,
    enforce_linear_iteration: bool,
    promote_inputs_to_common_dtype: bool,
    promote_integer_inputs_to_float: bool,
    cast_common_dtype_to_outputs: bool,
}

impl Default for TensorIteratorConfig<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> TensorIteratorConfig<'a> {
    #[inline]
    pub fn new() -> Self {
        TensorIteratorConfig {
            operands: OpVec::new(),
            num_outputs: 0,
            num_inputs: 0,
            static_shape: None,
            static_dtype: None,
            static_device: None,
            check_mem_overlap: true,
            allow_cpu_scalars: false,
            is_reduction: false,
            resize_outputs: true,
            check_all_same_dtype: true,
            check_all_same_device: true,
            enforce_safe_casting_to_output: false,
            enforce_linear_iteration: false,
            promote_inputs_to_common_dtype: false,
            promote_integer_inputs_to_float: false,
            cast_common_dtype_to_outputs: false,
        }
    }

    /// `add_output` / `add_owned_output`: a borrowed output (`Option<&TensorBase>`, `&Tensor`)
    /// or an owned one (`MaybeOwnedOutput`); an undefined one, `None`, is allocated by the
    /// iterator.
    #[inline(always)]
    pub fn add_output(mut self, t: impl OutputOperand<'a>) -> Result<Self> {
        self.push_output(t.into_operand())?;
        Ok(self)
    }
    /// `add_input` / `add_const_input` (ratten never writes inputs, so they are the same).
    #[inline(always)]
    pub fn add_input(mut self, t: impl InputOperand<'a>) -> Self {
        self.push_input(t.into_operand());
        self
    }

    // The builder methods take and return the config by value, as PyTorch's chained calls
    // read; the work is done in place by these (a config moved through a chain of
    // non-inlined calls is copied at each, ~20 instructions a call on a small op).
    #[inline(always)]
    fn push_output(&mut self, t: Option<Cow<'a, TensorBase>>) -> Result<()> {
        if self.num_inputs != 0 {
            return Err(Error::runtime(
                "Keep in mind that you have to add all outputs first before adding any input. \
                 For more details, see https://github.com/pytorch/pytorch/wiki/How-to-use-TensorIterator.",
            ));
        }
        self.operands.push(t);
        self.num_outputs += 1;
        Ok(())
    }
    #[inline(always)]
    fn push_input(&mut self, t: Cow<'a, TensorBase>) {
        self.operands.push(Some(t));
        self.num_inputs += 1;
    }
    #[inline]
    pub fn add_const_input(self, t: impl InputOperand<'a>) -> Self {
        self.add_input(t)
    }
    #[inline]
    pub fn set_check_mem_overlap(mut self, v: bool) -> Self {
        self.check_mem_overlap = v;
        self
    }
    #[inline]
    pub fn check_all_same_dtype(mut self, v: bool) -> Self {
        self.check_all_same_dtype = v;
        self
    }
    #[inline]
    pub fn check_all_same_device(mut self, v: bool) -> Self {
        self.check_all_same_device = v;
        self
    }
    /// Also turns off `check_all_same_dtype`, as PyTorch does.
    #[inline]
    pub fn promote_inputs_to_common_dtype(mut self, v: bool) -> Self {
        self.promote_inputs_to_common_dtype = v;
        if v {
            self.check_all_same_dtype = false;
        }
        self
    }
    #[inline]
    pub fn promote_integer_inputs_to_float(mut self, v: bool) -> Self {
        self.promote_integer_inputs_to_float = v;
        self
    }
    /// Also turns off `check_all_same_dtype`, as PyTorch does.
    #[inline]
    pub fn cast_common_dtype_to_outputs(mut self, v: bool) -> Self {
        self.cast_common_dtype_to_outputs = v;
        if v {
            self.check_all_same_dtype = false;
        }
        self
    }
    #[inline]
    pub fn enforce_safe_casting_to_output(mut self, v: bool) -> Self {
        self.enforce_safe_casting_to_output = v;
        self
    }
    #[inline]
    pub fn enforce_linear_iteration(mut self, v: bool) -> Self {
        self.enforce_linear_iteration = v;
        self
    }
    #[inline]
    pub fn allow_cpu_scalars(mut self, v: bool) -> Self {
        self.allow_cpu_scalars = v;
        self
    }
    #[inline]
    pub fn resize_outputs(mut self, v: bool) -> Self {
        self.resize_outputs = v;
        self
    }
    #[inline]
    pub fn is_reduction(mut self, v: bool) -> Self {
        self.is_reduction = v;
        self
    }
    /// `declare_static_dtype(dtype)`: outputs get this dtype; requires
    /// `check_all_same_dtype(false)` first, as in PyTorch.
    pub fn declare_static_dtype(mut self, dtype: ScalarType) -> Result<Self> {
        if self.check_all_same_dtype {
            return Err(Error::runtime(
                "check_all_same_dtype(false) must be called before declare_static_dtype(...)",
            ));
        }
        self.static_dtype = Some(dtype);
        Ok(self)
    }
    pub fn declare_static_device(mut self, device: Device) -> Self {
        self.static_device = Some(device);
        self
    }
    pub fn declare_static_dtype_and_device(
        self,
        dtype: ScalarType,
        device: Device,
    ) -> Result<Self> {
        Ok(self
            .declare_static_dtype(dtype)?
            .declare_static_device(device))
    }
    /// `declare_static_shape(shape)`: no broadcasting, no resizing.
    pub fn declare_static_shape(mut self, shape: &[i64]) -> Self {
        self.static_shape = Some(shape.into());
        self.resize_outputs = false;
        self
    }

    /// Builds with the plain TensorIterator's outputs (PyTorch's `TensorIteratorConfig::build()`
    /// returning a `TensorIterator`).
    pub fn build_standalone(self) -> Result<TensorIterator<'a>> {
        let sink = StandaloneOutputs::new(&self.operands[..self.num_outputs]);
        let base = TensorIteratorBase::build_with(self, OutputSink::Local(&sink))?;
        Ok(TensorIterator { base })
    }

    /// Builds, announcing outputs to `m` (a structured kernel's generated wrapper): the
    /// iterator calls `m.set_output_raw_strided(i, ..)` then `m.maybe_get_output(i)`, and
    /// borrows the output from `m` (see Note [Borrowed structured outputs]).
    #[inline(always)]
    pub fn build(self, m: &'a dyn MetaBase) -> Result<TensorIteratorBase<'a>> {
        TensorIteratorBase::build(self, m)
    }
}

// ---------------------------------------------------------------------------------------------
// The iterator
// ---------------------------------------------------------------------------------------------

/// `OperandInfo`.
#[derive(Clone, Debug)]
pub struct OperandInfo<'a> {
    /// The metadata snapshot of the tensor (None for an output not yet allocated), taken once
    /// when the build starts (by the trivial attempt) or the output is created: every build step reads geometry from it (one
    /// snapshot load per operand instead of one per question), and after the build it is the
    /// geometry the strides were computed from, whose storages the loops lock.
    ///
    /// Pinned, not counted: a hazard slot of this thread holds it for the iterator's lifetime
    /// (no atomic read-modify-write per operand; this makes the iterator `!Send`). A borrowed
    /// operand's pin borrows for `'a`; an owned operand's is unbounded, which is sound because
    /// `tensor` (declared after this field, so dropped after it) keeps the tensor alive, and
    /// `set_output` sets this field before it replaces `tensor`.
    meta: Option<Pinned<'a, TensorMeta>>,
    /// The tensor (None only for an output not yet allocated during the build).
    pub tensor: Option<Cow<'a, TensorBase>>,
    /// Byte strides in iteration order (broadcast dims 0); after the build, `ndim()` long.
    pub stride_bytes: DimVec,
    /// The dtype the operand should have (the common dtype for allocated outputs).
    pub target_dtype: Option<ScalarType>,
    /// The operand tensor's actual dtype: what the kernels read or write.
    pub current_dtype: Option<ScalarType>,
    pub device: Option<Device>,
    pub is_output: bool,
    pub will_resize: bool,
    pub is_read_write: bool,
    pub is_const: bool,
}

impl<'a> OperandInfo<'a> {
    /// An operand for `tensor`, with its snapshot `pin` when one was pinned already.
    #[inline]
    fn new(
        tensor: Option<Cow<'a, TensorBase>>,
        is_const: bool,
        pin: Option<Pinned<'a, TensorMeta>>,
    ) -> Self {
        let dtype = tensor.as_ref().map(|t| t.dtype());
        let device = tensor.as_ref().map(|t| t.device());
        let meta = pin.or_else(|| tensor.as_ref().map(pin_operand));
        OperandInfo {
            meta,
            tensor,
            stride_bytes: DimVec::new(),
            target_dtype: dtype,
            current_dtype: dtype,
            device,
            is_output: false,
            will_resize: false,
            is_read_write: false,
            is_const,
        }
    }
}

/// The snapshot of an operand's tensor, pinned for as long as the operand holds the tensor.
#[inline(always)]
fn pin_operand<'a>(t: &Cow<'a, TensorBase>) -> Pinned<'a, TensorMeta> {
    match t {
        Cow::Borrowed(t) => t.meta_pinned(),
        // SAFETY: the operand keeps `t` for as long as its `meta` (see that field's doc).
        Cow::Owned(t) => unsafe { t.meta_pinned_unbounded() },
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FastSetupType {
    None,
    Contiguous,
    ChannelsLast,
    NonOverlappingDense,
}

/// `TensorIteratorBase`: the built iterator, in one of two forms that answer every question
/// the same way: the compact form of a trivial build (Note [TensorIterator trivial build] in
/// `trivial.rs`: no per-operand records) or the general one.
#[derive(Clone, Debug)]
pub struct TensorIteratorBase<'a> {
    repr: Repr<'a>,
}

#[derive(Clone, Debug)]
enum Repr<'a> {
    General(General<'a>),
    Trivial(TrivialBox<'a>),
}

/// The general form: PyTorch's state, `OperandInfo` records and all.
///
/// The state is boxed: a structured kernel's meta function returns the iterator through
/// several layers (build, the op's meta, the generated wrapper), and moving ~600 bytes at each
/// costs more than a pointer. A dropped iterator leaves its box, emptied, in a one-slot
/// per-thread spare that the next build on the thread reuses, so the steady state of a loop
/// of ops neither allocates the state nor copies it (see Note [Small-op latency] in
/// structured.rs).
#[derive(Clone, Debug)]
struct General<'a> {
    /// Always initialised; taken out only in `Drop`.
    s: ManuallyDrop<Box<IterState<'a>>>,
}

thread_local! {
    static SPARE_STATE: Cell<Option<Box<IterState<'static>>>> = const { Cell::new(None) };
}

impl Drop for General<'_> {
    fn drop(&mut self) {
        // SAFETY: `s` is initialised from construction until here, and not used after.
        let state = unsafe { ManuallyDrop::take(&mut self.s) }.into_spare();
        // At thread exit the slot may be gone: the box is then simply freed.
        let _ = SPARE_STATE.try_with(move |slot| slot.set(Some(state)));
    }
}

impl<'a> IterState<'a> {
    /// An empty state, reusing the thread's spare box when there is one.
    fn take(num_outputs: usize, is_reduction: bool) -> Box<IterState<'a>> {
        match SPARE_STATE.try_with(Cell::take).ok().flatten() {
            Some(mut spare) => {
                spare.num_outputs = num_outputs;
                spare.is_reduction = is_reduction;
                spare
            }
            None => Self::new_box(num_outputs, is_reduction),
        }
    }

    /// The box emptied and relabelled `'static`: a dropped iterator's state becomes the
    /// thread's spare (the other way, `'static` to `'a`, is a plain coercion).
    fn into_spare(mut self: Box<Self>) -> Box<IterState<'static>> {
        self.clear(0, false);
        // SAFETY: `clear` emptied the operands, the only fields that borrow for `'a`; what is
        // left holds no reference, and lifetimes do not change a type's layout.
        unsafe { std::mem::transmute::<Box<IterState<'a>>, Box<IterState<'static>>>(self) }
    }

    fn new_box(num_outputs: usize, is_reduction: bool) -> Box<IterState<'a>> {
        Box::new(IterState {
            operands: Vec::with_capacity(4),
            num_outputs,
            shape: DimVec::new(),
            perm: DimVec::new(),
            has_coalesced_dimensions: false,
            common_dtype: None,
            common_device: Device::CPU,
            all_ops_same_shape: false,
            all_ops_are_scalars: false,
            is_reduction,
            is_meta: false,
        })
    }

    /// Releases the operands and resets every field to `take`'s values.
    fn clear(&mut self, num_outputs: usize, is_reduction: bool) {
        self.operands.clear();
        self.shape.clear();
        self.perm.clear();
        self.num_outputs = num_outputs;
        self.has_coalesced_dimensions = false;
        self.common_dtype = None;
        self.common_device = Device::CPU;
        self.all_ops_same_shape = false;
        self.all_ops_are_scalars = false;
        self.is_reduction = is_reduction;
        self.is_meta = false;
    }
}

#[derive(Clone, Debug)]
struct IterState<'a> {
    /// A Vec, not a SmallVec: the state box is reused (see `SPARE_STATE`), so its capacity
    /// is too, and a Vec's push and index do not branch on inline-or-heap.
    operands: Vec<OperandInfo<'a>>,
    num_outputs: usize,
    shape: DimVec,
    perm: DimVec,
    has_coalesced_dimensions: bool,
    common_dtype: Option<ScalarType>,
    common_device: Device,
    all_ops_same_shape: bool,
    all_ops_are_scalars: bool,
    is_reduction: bool,
    is_meta: bool,
}

/// The plain `TensorIterator` (outputs created by the iterator itself).
#[derive(Clone, Debug)]
pub struct TensorIterator<'a> {
    base: TensorIteratorBase<'a>,
}

impl<'a> std::ops::Deref for TensorIterator<'a> {
    type Target = TensorIteratorBase<'a>;
    fn deref(&self) -> &TensorIteratorBase<'a> {
        &self.base
    }
}
impl<'a> std::ops::DerefMut for TensorIterator<'a> {
    fn deref_mut(&mut self) -> &mut TensorIteratorBase<'a> {
        &mut self.base
    }
}
impl<'a> TensorIterator<'a> {
    pub fn into_base(self) -> TensorIteratorBase<'a> {
        self.base
    }

    /// `TensorIterator::binary_op(out, a, b)`, out undefined = allocated.
    pub fn binary_op(
        out: Option<&'a TensorBase>,
        a: &'a TensorBase,
        b: &'a TensorBase,
    ) -> Result<Self> {
        binary_op_config(out, a, b)?.build_standalone()
    }
    /// `TensorIterator::binary_float_op`.
    pub fn binary_float_op(
        out: Option<&'a TensorBase>,
        a: &'a TensorBase,
        b: &'a TensorBase,
    ) -> Result<Self> {
        binary_op_config(out, a, b)?
            .promote_integer_inputs_to_float(true)
            .build_standalone()
    }
    /// `TensorIterator::comparison_op`.
    pub fn comparison_op(
        out: Option<&'a TensorBase>,
        a: &'a TensorBase,
        b: &'a TensorBase,
    ) -> Result<Self> {
        comparison_op_config(out, a, b)?.build_standalone()
    }
    /// `TensorIterator::unary_op`.
    pub fn unary_op(out: Option<&'a TensorBase>, a: &'a TensorBase) -> Result<Self> {
        unary_op_config(out, a)?.build_standalone()
    }
    /// `TensorIterator::unary_float_op`.
    pub fn unary_float_op(out: Option<&'a TensorBase>, a: &'a TensorBase) -> Result<Self> {
        unary_float_op_config(out, a)?.build_standalone()
    }
    /// `TensorIterator::nullary_op`.
    pub fn nullary_op(out: &'a TensorBase) -> Result<Self> {
        nullary_op_config(out)?.build_standalone()
    }
    /// `TensorIterator::borrowing_nullary_op`-style ternary config (`build_ternary_op`).
    pub fn ternary_op(
        out: Option<&'a TensorBase>,
        a: &'a TensorBase,
        b: &'a TensorBase,
        c: &'a TensorBase,
    ) -> Result<Self> {
        ternary_op_config(out, a, b, c)?.build_standalone()
    }

    /// The i-th output (allocated by the build when it was undefined).
    pub fn output(&self, i: usize) -> Result<TensorBase> {
        self.base.output(i)
    }
}

/// `BINARY_OP_CONFIG` with the operands added.
pub fn binary_op_config<'a>(
    out: impl OutputOperand<'a>,
    a: impl InputOperand<'a>,
    b: impl InputOperand<'a>,
) -> Result<TensorIteratorConfig<'a>> {
    // The flags as the chained setters would leave them, written in place (see `push_output`).
    let mut c = TensorIteratorConfig::new();
    c.check_mem_overlap = true;
    c.allow_cpu_scalars = true;
    c.promote_inputs_to_common_dtype = true;
    c.cast_common_dtype_to_outputs = true;
    c.check_all_same_dtype = false;
    c.enforce_safe_casting_to_output = true;
    c.push_output(out.into_operand())?;
    c.push_input(a.into_operand());
    c.push_input(b.into_operand());
    Ok(c)
}

/// `BINARY_FLOAT_OP_CONFIG`.
pub fn binary_float_op_config<'a>(
    out: impl OutputOperand<'a>,
    a: impl InputOperand<'a>,
    b: impl InputOperand<'a>,
) -> Result<TensorIteratorConfig<'a>> {
    let mut c = binary_op_config(out, a, b)?;
    c.promote_integer_inputs_to_float = true;
    Ok(c)
}

/// `build_comparison_op`: a bool output unless `out` says otherwise ("Note [special-case bool
/// outputs]": a bool `out` is written directly, another dtype gets the cast).
pub fn comparison_op_config<'a>(
    out: impl OutputOperand<'a>,
    a: impl InputOperand<'a>,
    b: impl InputOperand<'a>,
) -> Result<TensorIteratorConfig<'a>> {
    let mut config = TensorIteratorConfig::new()
        .set_check_mem_overlap(true)
        .allow_cpu_scalars(true)
        .promote_inputs_to_common_dtype(true);
    let out = MaybeOwnedOutput(out.into_operand());
    match &out.0 {
        None => config = config.declare_static_dtype(ScalarType::Bool)?,
        Some(o) if o.dtype() != ScalarType::Bool => {
            config = config.cast_common_dtype_to_outputs(true)
        }
        Some(_) => {}
    }
    Ok(config
        .add_output(out)?
        .add_const_input(a)
        .add_const_input(b))
}

/// `UNARY_OP_CONFIG`.
pub fn unary_op_config<'a>(
    out: impl OutputOperand<'a>,
    a: impl InputOperand<'a>,
) -> Result<TensorIteratorConfig<'a>> {
    Ok(TensorIteratorConfig::new()
        .set_check_mem_overlap(true)
        .cast_common_dtype_to_outputs(false)
        .enforce_safe_casting_to_output(false)
        .check_all_same_dtype(true)
        .add_output(out)?
        .add_const_input(a))
}

/// `UNARY_FLOAT_OP_CONFIG`.
pub fn unary_float_op_config<'a>(
    out: impl OutputOperand<'a>,
    a: impl InputOperand<'a>,
) -> Result<TensorIteratorConfig<'a>> {
    Ok(TensorIteratorConfig::new()
        .set_check_mem_overlap(true)
        .promote_inputs_to_common_dtype(true)
        .cast_common_dtype_to_outputs(true)
        .enforce_safe_casting_to_output(true)
        .promote_integer_inputs_to_float(true)
        .add_output(out)?
        .add_const_input(a))
}

/// `NULLARY_OP_CONFIG`.
pub fn nullary_op_config<'a>(out: &'a TensorBase) -> Result<TensorIteratorConfig<'a>> {
    TensorIteratorConfig::new()
        .set_check_mem_overlap(true)
        .check_all_same_dtype(false)
        .resize_outputs(false)
        .add_output(Some(out))
}

/// `build_ternary_op`.
pub fn ternary_op_config<'a>(
    out: impl OutputOperand<'a>,
    a: impl InputOperand<'a>,
    b: impl InputOperand<'a>,
    c: impl InputOperand<'a>,
) -> Result<TensorIteratorConfig<'a>> {
    Ok(TensorIteratorConfig::new()
        .promote_inputs_to_common_dtype(true)
        .cast_common_dtype_to_outputs(true)
        .enforce_safe_casting_to_output(true)
        .add_output(out)?
        .add_const_input(a)
        .add_const_input(b)
        .add_const_input(c))
}

/// The 2-D inner loop: `(data, strides, size0, size1)`. `data[k]` points at operand k's first
/// element; `strides[k]` is its byte stride along the inner dimension and
/// `strides[ntensors + k]` along the outer one. Element `(i, j)` of operand k is at
/// `data[k] + i * strides[k] + j * strides[ntensors + k]`.
pub type Loop2d<'a> = dyn Fn(&[*mut u8], &[isize], usize, usize) + Sync + 'a;

/// Base pointers that may cross to worker threads. Sound because the RawAccess guard that
/// produced them outlives the parallel region and holds every written storage exclusively.
struct SharedPtrs(OpVec<*mut u8>);
// SAFETY: see the type's doc: the pointers are only dereferenced inside the guard's lifetime,
// and distinct chunks write disjoint elements (outputs have no internal overlap).
unsafe impl Send for SharedPtrs {}
// SAFETY: as above.
unsafe impl Sync for SharedPtrs {}

impl SharedPtrs {
    fn get(&self) -> &[*mut u8] {
        &self.0
    }
}

impl<'a> TensorIteratorBase<'a> {
    /// `TensorIteratorBase::build(config)`, with the outputs borrowed from `sink`.
    #[inline(always)]
    pub fn build(config: TensorIteratorConfig<'a>, sink: &'a dyn MetaBase) -> Result<Self> {
        Self::build_with(config, OutputSink::Borrowed(sink))
    }

    /// Inlined, so that the config stays where its maker wrote it (both builds take it by
    /// reference).
    #[inline(always)]
    fn build_with(mut config: TensorIteratorConfig<'a>, sink: OutputSink<'_, 'a>) -> Result<Self> {
        match TrivialIter::try_build(&mut config, sink)? {
            Ok(t) => Ok(TensorIteratorBase {
                repr: Repr::Trivial(t),
            }),
            Err(pins) => Self::build_general(&mut config, sink, pins),
        }
    }

    /// `build_borrowing_binary_op(out, a, b)` (`build_borrowing_binary_float_op` when
    /// `float`) for tensors the op's meta borrows: the compact build is tried straight from
    /// them, and a config is made only when the build is general. A small op so skips making,
    /// reading and dropping a config (Note [Small-op latency] in structured.rs).
    pub fn build_borrowing_binary(
        out: Option<&'a TensorBase>,
        a: &'a TensorBase,
        b: &'a TensorBase,
        float: bool,
        m: &'a dyn MetaBase,
    ) -> Result<Self> {
        let flags = TrivialFlags {
            promote_integer_inputs_to_float: float,
            ..TrivialFlags::BINARY_OP
        };
        Self::build_borrowing(out, [a, b], flags, m, || {
            if float {
                binary_float_op_config(out, a, b)
            } else {
                binary_op_config(out, a, b)
            }
        })
    }

    /// `build_borrowing_comparison_op(out, a, b)`, as
    /// [`build_borrowing_binary`](Self::build_borrowing_binary).
    pub fn build_borrowing_comparison(
        out: Option<&'a TensorBase>,
        a: &'a TensorBase,
        b: &'a TensorBase,
        m: &'a dyn MetaBase,
    ) -> Result<Self> {
        let flags = TrivialFlags::comparison_op(out);
        Self::build_borrowing(out, [a, b], flags, m, || comparison_op_config(out, a, b))
    }

    /// `build_borrowing_unary_op(out, a)` (`build_borrowing_unary_float_op` when `float`),
    /// as [`build_borrowing_binary`](Self::build_borrowing_binary): no config unless the build
    /// is general.
    pub fn build_borrowing_unary(
        out: Option<&'a TensorBase>,
        a: &'a TensorBase,
        float: bool,
        m: &'a dyn MetaBase,
    ) -> Result<Self> {
        let flags = if float {
            TrivialFlags::UNARY_FLOAT_OP
        } else {
            TrivialFlags::UNARY_OP
        };
        Self::build_borrowing(out, [a], flags, m, || {
            if float {
                unary_float_op_config(out, a)
            } else {
                unary_op_config(out, a)
            }
        })
    }

    /// The compact build of borrowed operands with `flags` (the flags of the config `config`
    /// makes), else the general build of that config.
    #[inline(always)]
    fn build_borrowing<const N: usize>(
        out: Option<&'a TensorBase>,
        inputs: [&'a TensorBase; N],
        flags: TrivialFlags,
        m: &'a dyn MetaBase,
        config: impl FnOnce() -> Result<TensorIteratorConfig<'a>>,
    ) -> Result<Self> {
        let sink = OutputSink::Borrowed(m);
        let mut src = BorrowedOperands { out, inputs };
        match TrivialIter::try_build_from(&mut src, flags, sink)? {
            Ok(t) => Ok(TensorIteratorBase {
                repr: Repr::Trivial(t),
            }),
            Err(pins) => Self::build_general(&mut config()?, sink, pins),
        }
    }

    /// The general pipeline.
    #[inline(never)]
    fn build_general(
        config: &mut TensorIteratorConfig<'a>,
        sink: OutputSink<'_, 'a>,
        pins: Pins<'a>,
    ) -> Result<Self> {
        let mut it = General::from_config(config, pins);
        let config = &*config;
        it.populate_operands(config);
        it.mark_outputs();
        it.compute_mem_overlaps(config)?;
        it.compute_shape(config)?;
        it.mark_resize_outputs(config)?;
        it.compute_types(config)?;
        if !it.fast_set_up(config, sink)? {
            it.compute_strides();
            it.reorder_dimensions(config);
            it.allocate_or_resize_outputs(sink)?;
            if !it.s.is_meta {
                it.coalesce_dimensions();
            }
        }
        // Every operand exists now (its snapshot was refreshed when an output was set).
        if it.s.operands.iter().any(|op| op.meta.is_none()) {
            return Err(Error::runtime(
                "TensorIterator: an output was not allocated by the output sink",
            ));
        }
        Ok(TensorIteratorBase {
            repr: Repr::General(it),
        })
    }
}

impl<'a> General<'a> {
    /// The state (the thread's spare box when there is one) with the config's operands as
    /// `OperandInfo` records, reusing the snapshots a trivial attempt pinned.
    fn from_config(config: &mut TensorIteratorConfig<'a>, mut pins: Pins<'a>) -> Self {
        let mut s = IterState::take(config.num_outputs, config.is_reduction);
        let num_outputs = config.num_outputs;
        for (k, t) in config.operands.drain(..).enumerate() {
            let pin = pins.get_mut(k).and_then(Option::take);
            s.operands.push(OperandInfo::new(t, k >= num_outputs, pin));
        }
        General {
            s: ManuallyDrop::new(s),
        }
    }

    /// Sets the state's flags from the config (the operands are already in the state).
    fn populate_operands(&mut self, config: &TensorIteratorConfig) {
        let s = &mut *self.s;
        s.num_outputs = config.num_outputs;
        s.is_reduction = config.is_reduction;
        s.is_meta = s
            .operands
            .iter()
            .any(|op| op.device.is_some_and(|d| d.is_meta()));
    }

    fn mark_outputs(&mut self) {
        for i in 0..self.s.num_outputs {
            self.s.operands[i].is_output = true;
            let Some(out) = self.s.operands[i].tensor.as_deref().cloned() else {
                continue;
            };
            // An input that is the same tensor as an output makes it read-write.
            for j in self.s.num_outputs..self.s.operands.len() {
                if self.s.operands[j]
                    .tensor
                    .as_ref()
                    .is_some_and(|t| t.is_same(&out))
                {
                    self.s.operands[i].is_read_write = true;
                }
            }
        }
    }

    fn compute_mem_overlaps(&self, config: &TensorIteratorConfig) -> Result<()> {
        if !config.check_mem_overlap {
            return Ok(());
        }
        for i in 0..self.s.num_outputs {
            let Some(out) = &self.s.operands[i].tensor else {
                continue;
            };
            overlap::assert_no_internal_overlap(out)?;
            for j in self.s.num_outputs..self.s.operands.len() {
                let input = self.s.operands[j]
                    .tensor
                    .as_ref()
                    .expect("inputs are defined");
                if !input.is_same(out) {
                    overlap::assert_no_partial_overlap(out, input)?;
                }
            }
        }
        Ok(())
    }

    fn compute_shape(&mut self, config: &TensorIteratorConfig) -> Result<()> {
        let st = &mut **self.s;
        if let Some(s) = &config.static_shape {
            st.shape = DimVec::from_slice(s);
            return Ok(());
        }
        st.all_ops_same_shape = true;
        let mut has_scalars = false;
        let mut has_tensors = false;
        let mut first = true;
        for op in st.operands.iter() {
            let Some(m) = &op.meta else { continue };
            // Outputs being resized do not take part in the shape ("This preserves the legacy
            // behavior where torch.add(..., out=dst) resizes the destination tensor").
            if config.resize_outputs && op.is_output {
                continue;
            }
            let sizes = m.sizes();
            if sizes.is_empty() {
                has_scalars = true;
            } else {
                has_tensors = true;
            }
            if has_scalars && has_tensors {
                st.all_ops_same_shape = false;
            }
            if first {
                st.shape = DimVec::from_slice(sizes);
                first = false;
            } else if st.shape.as_slice() != sizes {
                st.all_ops_same_shape = false;
                st.shape = infer_size(&st.shape, sizes)?;
            }
        }
        st.all_ops_are_scalars = !has_tensors;
        Ok(())
    }

    fn mark_resize_outputs(&mut self, config: &TensorIteratorConfig) -> Result<()> {
        let st = &mut **self.s;
        if config.static_shape.is_some() {
            return Ok(());
        }
        for i in 0..st.num_outputs {
            let op = &mut st.operands[i];
            let Some(m) = op.meta.clone() else { continue };
            let sizes = m.sizes();
            if sizes != st.shape.as_slice() {
                if config.resize_outputs && !op.is_read_write {
                    op.will_resize = true;
                    continue;
                }
                // For reductions, output size does not match the shape: that is fine.
                if !st.is_reduction {
                    return Err(Error::runtime(format!(
                        "output with shape {} doesn't match the broadcast shape {}",
                        fmt_sizes(sizes),
                        fmt_sizes(&st.shape)
                    )));
                }
            }
        }
        Ok(())
    }

    fn compute_common_dtype(&self) -> Result<Option<ScalarType>> {
        let mut state = ResultTypeState::default();
        for op in &self.s.operands[self.s.num_outputs..] {
            if let Some(t) = &op.tensor {
                update_result_type_state(t, &mut state)?;
            }
        }
        result_type_of_state(&state)
    }

    fn compute_types(&mut self, config: &TensorIteratorConfig) -> Result<()> {
        let mut common_device = Device::CPU;
        let mut common_dtype: Option<ScalarType> = None;
        let mut output_dtype: Option<ScalarType> = None;
        let mut has_different_input_dtypes = false;
        let mut has_different_output_dtypes = false;
        let mut has_undefined_outputs = false;

        for op in self.s.operands.iter_mut() {
            if op.target_dtype.is_none() {
                // An undefined output: its dtype is static or inferred below.
                if let Some(d) = config.static_dtype {
                    op.target_dtype = Some(d);
                } else {
                    has_undefined_outputs = true;
                }
                if let Some(d) = config.static_device {
                    op.device = Some(d);
                }
                if has_undefined_outputs || op.device.is_none() {
                    continue;
                }
            }
            let Some(t) = &op.tensor else { continue };
            if common_device.is_cpu() && !t.is_cpu() {
                common_device = t.device();
            }
            if !op.is_output {
                // The common dtype starts as the first defined input's dtype.
                if op.target_dtype != common_dtype {
                    if common_dtype.is_none() {
                        common_dtype = op.target_dtype;
                    } else {
                        has_different_input_dtypes = true;
                    }
                }
            } else if op.target_dtype != output_dtype {
                if output_dtype.is_none() {
                    output_dtype = op.target_dtype;
                } else {
                    has_different_output_dtypes = true;
                }
            }
        }

        if config.check_all_same_dtype
            && (has_different_input_dtypes
                || has_different_output_dtypes
                || (common_dtype != output_dtype && output_dtype.is_some()))
        {
            for op in &self.s.operands {
                if op.tensor.is_none() {
                    continue;
                }
                if op.target_dtype != common_dtype {
                    return Err(Error::runtime(format!(
                        "Found dtype {} but expected {}",
                        op.target_dtype.map_or("Undefined", |d| d.name()),
                        common_dtype.map_or("Undefined", |d| d.name())
                    )));
                }
            }
        }

        if !has_undefined_outputs
            && !config.check_all_same_device
            && !config.promote_inputs_to_common_dtype
            && !config.cast_common_dtype_to_outputs
            && !config.enforce_safe_casting_to_output
        {
            self.s.common_dtype = if has_different_input_dtypes {
                None
            } else {
                common_dtype
            };
            self.s.common_device = common_device;
            return Ok(());
        }

        if (has_different_input_dtypes || self.s.all_ops_are_scalars)
            && config.promote_inputs_to_common_dtype
        {
            common_dtype = self.compute_common_dtype()?;
        }
        if config.promote_integer_inputs_to_float
            && common_dtype.is_some_and(|d| d.is_integral(true))
        {
            common_dtype = Some(get_default_dtype());
        }
        if has_different_input_dtypes && !config.promote_inputs_to_common_dtype {
            // Nothing to compute in: PyTorch asserts this cannot be reached through its configs.
            if has_undefined_outputs
                || config.enforce_safe_casting_to_output
                || config.cast_common_dtype_to_outputs
            {
                return Err(Error::runtime(
                    "TensorIterator: inputs of different dtypes need promote_inputs_to_common_dtype",
                ));
            }
        }
        self.s.common_dtype = common_dtype;
        self.s.common_device = common_device;

        let max_cpu_scalars = usize::from(config.allow_cpu_scalars);
        let mut cpu_scalars = 0usize;
        for op in self.s.operands.iter_mut() {
            let type_defined = op.target_dtype.is_some();
            let device_defined = op.device.is_some();
            if !type_defined {
                op.target_dtype = common_dtype;
            }
            if !device_defined {
                op.device = Some(common_device);
            }
            if !type_defined && !device_defined {
                continue;
            }
            let Some(t) = &op.tensor else { continue };
            if config.check_all_same_device {
                let dev = op.device.unwrap_or(common_device);
                if !common_device.is_cpu()
                    && config.allow_cpu_scalars
                    && !op.is_output
                    && t.dim() == 0
                    && t.is_cpu()
                {
                    if cpu_scalars >= max_cpu_scalars {
                        return Err(Error::runtime(
                            "Trying to pass too many CPU scalars to non-CPU kernel!",
                        ));
                    }
                    cpu_scalars += 1;
                } else if dev != common_device {
                    return Err(Error::runtime(format!(
                        "Expected all tensors to be on the same device, but found at least two \
                         devices, {common_device} and {dev}!"
                    )));
                }
            }
            if config.enforce_safe_casting_to_output && op.is_output {
                if let (Some(common), Some(cur)) = (common_dtype, op.current_dtype) {
                    if cur != common && !can_cast(common, cur) {
                        return Err(Error::runtime(format!(
                            "result type {common} can't be cast to the desired output type {cur}"
                        )));
                    }
                }
            }
            // CPU temporaries: none. Inputs keep their dtype and the kernels cast while they
            // stream (see the module docs); an output keeps its dtype and receives the cast
            // result.
        }
        Ok(())
    }

    fn compute_fast_setup_type(&self, config: &TensorIteratorConfig) -> FastSetupType {
        if self.s.is_reduction || !self.s.all_ops_same_shape {
            return FastSetupType::None;
        }
        let all_contiguous = self
            .s
            .operands
            .iter()
            .filter(|op| !op.will_resize)
            .all(|op| op.meta.as_ref().is_none_or(|m| m.is_contiguous()));
        if config.enforce_linear_iteration {
            return if all_contiguous {
                FastSetupType::Contiguous
            } else {
                FastSetupType::None
            };
        }
        if all_contiguous {
            return FastSetupType::Contiguous;
        }
        let defined: OpVec<&TensorBase> = self
            .s
            .operands
            .iter()
            .filter(|op| !op.will_resize)
            .filter_map(|op| op.tensor.as_deref())
            .collect();
        if defined.iter().all(|t| is_channels_last_contiguous(t)) {
            return FastSetupType::ChannelsLast;
        }
        // All non-overlapping-and-dense with identical strides.
        let mut prev_strides: Option<DimVec> = None;
        for t in &defined {
            let m = t.meta();
            if !overlap::is_non_overlapping_and_dense(m.sizes(), m.strides()) {
                return FastSetupType::None;
            }
            let s = DimVec::from_slice(m.strides());
            if let Some(p) = &prev_strides {
                if *p != s {
                    return FastSetupType::None;
                }
            }
            prev_strides = Some(s);
        }
        FastSetupType::NonOverlappingDense
    }

    /// `fast_set_up`: when every operand has the same shape and the same dense layout, the
    /// iteration is one flat dimension.
    fn fast_set_up(
        &mut self,
        config: &TensorIteratorConfig,
        sink: OutputSink<'_, 'a>,
    ) -> Result<bool> {
        let setup = self.compute_fast_setup_type(config);
        if setup == FastSetupType::None {
            return Ok(false);
        }
        let shape = self.s.shape.clone();
        match setup {
            FastSetupType::Contiguous | FastSetupType::ChannelsLast => {
                let strides: DimVec = if setup == FastSetupType::Contiguous {
                    DimVec::new()
                } else {
                    channels_last_strides(&shape)
                };
                for i in 0..self.s.num_outputs {
                    self.set_output(sink, i, &shape, &strides)?;
                }
            }
            FastSetupType::NonOverlappingDense => {
                // Outputs take the strides of the last defined input (searched from the back).
                let strides = self
                    .s
                    .operands
                    .iter()
                    .rev()
                    .find(|op| op.tensor.is_some() && !op.is_output)
                    .or_else(|| self.s.operands.iter().rev().find(|op| op.tensor.is_some()))
                    .and_then(|op| op.tensor.as_ref())
                    .map(|t| t.strides())
                    .unwrap_or_default();
                for i in 0..self.s.num_outputs {
                    self.set_output(sink, i, &shape, &strides)?;
                }
            }
            FastSetupType::None => unreachable!("handled above"),
        }
        self.collapse_to_one_dimension();
        Ok(true)
    }

    /// The end of the fast setup: every operand is dense in one layout, so the iteration is
    /// one flat dimension with element-size strides (a 0-dim shape stays 0-dim).
    fn collapse_to_one_dimension(&mut self) {
        let s = &mut *self.s;
        if s.shape.len() > 1 {
            s.has_coalesced_dimensions = true;
        }
        if !s.shape.is_empty() {
            let numel: i64 = s.shape.iter().product();
            s.shape = DimVec::from_slice(&[numel]);
            s.perm = DimVec::from_slice(&[0]);
            for op in s.operands.iter_mut() {
                op.stride_bytes = DimVec::from_slice(&[dtype_size(op) as i64]);
            }
        }
    }

    /// Calls the sink for output `i` and adopts the tensor it made.
    fn set_output(
        &mut self,
        sink: OutputSink<'_, 'a>,
        i: usize,
        sizes: &[i64],
        strides: &[i64],
    ) -> Result<()> {
        let op = &self.s.operands[i];
        // A given output is announced with its own dtype (PyTorch's `original_options(op)`);
        // a new one with the target dtype.
        let dtype = match &op.tensor {
            Some(t) => t.dtype(),
            None => op.target_dtype.ok_or_else(|| {
                Error::runtime("TensorIterator: output dtype could not be inferred")
            })?,
        };
        let device = match &op.tensor {
            Some(t) => t.device(),
            None => op.device.unwrap_or(self.s.common_device),
        };
        let will_resize = op.will_resize;
        let options = TensorOptions::new().dtype(dtype).device(device);
        // A defined output that keeps its shape is passed with its own sizes (the structured
        // wrapper checks it): its snapshot is lent (taken out and put back, no refcount).
        let own = if will_resize {
            None
        } else {
            self.s.operands[i].meta.take()
        };
        let announced = match &own {
            Some(m) => sink
                .meta()
                .set_output_raw_strided(i, m.sizes(), &[], options),
            None => sink
                .meta()
                .set_output_raw_strided(i, sizes, strides, options),
        };
        if own.is_some() {
            self.s.operands[i].meta = own;
        }
        announced?;
        let op = &mut self.s.operands[i];
        let created = op.tensor.is_none();
        // Taken out (snapshot first) and put back: the operand of the tensor the sink holds.
        let given = match (op.meta.take(), op.tensor.take()) {
            (Some(meta), Some(tensor)) => Some(PinnedOperand { meta, tensor }),
            _ => None,
        };
        let out = adopt_output(sink, i, given)?;
        if created {
            op.current_dtype = Some(out.tensor.dtype());
        }
        op.meta = Some(out.meta);
        op.tensor = Some(out.tensor);
        if op.current_dtype.is_none() {
            op.current_dtype = op.target_dtype;
        }
        Ok(())
    }

    /// `compute_strides`: byte strides aligned to the broadcast shape (0 for broadcast dims).
    fn compute_strides(&mut self) {
        let st = &mut **self.s;
        for op in st.operands.iter_mut() {
            let Some(t) = &op.tensor else { continue };
            if op.will_resize {
                continue;
            }
            let m = t.meta();
            let es = t.element_size() as i64;
            op.stride_bytes = broadcast_strides(m.sizes(), m.strides(), es, &st.shape);
        }
    }

    /// `reorder_dimensions`: fastest-moving dimension first (by the inputs' strides, in the
    /// order they were added), so outputs follow the layout of the first input.
    fn reorder_dimensions(&mut self, config: &TensorIteratorConfig) {
        let ndim = self.s.shape.len();
        self.s.perm = (0..ndim).rev().map(|d| d as i64).collect();
        if config.enforce_linear_iteration || ndim <= 1 {
            if ndim > 1 {
                self.permute_dimensions();
            }
            return;
        }
        let layout = self.layout_strides(config);
        // should_swap(dim0, dim1): 1 = swap, -1 = keep, 0 = ambiguous.
        let should_swap = |it: &Self, dim0: usize, dim1: usize| -> i32 {
            for (k, op) in it.s.operands.iter().enumerate() {
                if op.tensor.is_none() || op.will_resize {
                    continue;
                }
                let strides = layout
                    .as_ref()
                    .and_then(|l| l[k].as_ref())
                    .unwrap_or(&op.stride_bytes);
                let s0 = strides[dim0];
                let s1 = strides[dim1];
                if it.s.is_reduction && op.is_output {
                    // Reduced dimensions move to the front.
                    if (s0 == 0) != (s1 == 0) {
                        return if s1 == 0 { 1 } else { -1 };
                    }
                }
                if s0 == 0 || s1 == 0 {
                    continue;
                }
                if s0 < s1 {
                    return -1;
                }
                if s0 > s1 {
                    return 1;
                }
                if it.s.shape[dim0] > it.s.shape[dim1] {
                    return 1;
                }
            }
            0
        };
        // Insertion sort with support for ambiguous comparisons.
        for i in 1..ndim {
            let mut dim1 = i;
            let mut dim0 = i as i64 - 1;
            while dim0 >= 0 {
                let c = should_swap(
                    self,
                    self.s.perm[dim0 as usize] as usize,
                    self.s.perm[dim1] as usize,
                );
                if c > 0 {
                    self.s.perm.swap(dim0 as usize, dim1);
                    dim1 = dim0 as usize;
                } else if c < 0 {
                    break;
                }
                dim0 -= 1;
            }
        }
        self.permute_dimensions();
    }

    /// The strides the dimension order is decided by, where they are not the operand's own
    /// (None: its own; None overall: every operand's own), in elements (only their order
    /// within one operand counts). PyTorch replaces a CPU input of another dtype than the
    /// common one by a temporary `input.to(common_dtype)` (layout preserved when the input is
    /// non-overlapping and dense, else contiguous), and an output of another dtype (with
    /// `cast_common_dtype_to_outputs`) by a contiguous temporary; ratten casts while
    /// streaming instead (see this module's doc), but orders the dimensions
    /// by the temporaries' strides so that the result's layout is PyTorch's: an expanded int8
    /// input compared with a complex32 one gives a row-major result, not the other's layout.
    fn layout_strides(
        &self,
        config: &TensorIteratorConfig,
    ) -> Option<SmallVec<[Option<DimVec>; 4]>> {
        let st = &*self.s;
        let (Some(common), Device::CPU) = (st.common_dtype, st.common_device) else {
            return None;
        };
        // Nothing is built unless some operand would have had a temporary (the common case,
        // every tensor of the common dtype, computes nothing).
        let mut layout: Option<SmallVec<[Option<DimVec>; 4]>> = None;
        for (k, op) in st.operands.iter().enumerate() {
            let temporary = if op.is_output {
                config.cast_common_dtype_to_outputs
            } else {
                config.promote_inputs_to_common_dtype
            };
            let Some(m) = op.meta.as_deref() else {
                continue;
            };
            let (sizes, strides) = (m.sizes(), m.strides());
            if !temporary
                || op.current_dtype == Some(common)
                || sizes.is_empty()
                || (!op.is_output && overlap::is_non_overlapping_and_dense(sizes, strides))
            {
                continue;
            }
            // The temporary is contiguous in the tensor's own shape.
            let sb = broadcast_strides(sizes, &contiguous_strides(sizes), 1, &st.shape);
            layout.get_or_insert_with(|| smallvec::smallvec![None; st.operands.len()])[k] =
                Some(sb);
        }
        layout
    }

    /// Applies `perm` to the shape and every operand's strides.
    fn permute_dimensions(&mut self) {
        let perm = self.s.perm.clone();
        let apply = |v: &DimVec| -> DimVec { perm.iter().map(|&p| v[p as usize]).collect() };
        self.s.shape = apply(&self.s.shape);
        for op in self.s.operands.iter_mut() {
            if op.stride_bytes.len() == perm.len() {
                op.stride_bytes = apply(&op.stride_bytes);
            }
        }
    }

    /// `invert_perm`: from iteration order back to the tensor's dimension order.
    fn invert_perm(&self, input: &[i64]) -> DimVec {
        let mut res = DimVec::from_elem(0, input.len());
        for (dim, &p) in self.s.perm.iter().enumerate() {
            res[p as usize] = input[dim];
        }
        res
    }

    /// `allocate_or_resize_outputs`.
    fn allocate_or_resize_outputs(&mut self, sink: OutputSink<'_, 'a>) -> Result<()> {
        let ndim = self.s.shape.len();
        for i in 0..self.s.num_outputs {
            let op = &self.s.operands[i];
            if op.tensor.is_none() || op.will_resize {
                let dtype = op.target_dtype.ok_or_else(|| {
                    Error::runtime("TensorIterator: output dtype could not be inferred")
                })?;
                let es = dtype.element_size() as i64;
                // Contiguous strides in iteration order.
                let mut stride_bytes = DimVec::from_elem(0, ndim);
                let mut next = es;
                for d in 0..ndim {
                    stride_bytes[d] = next;
                    next *= self.s.shape[d].max(1);
                }
                let inverted = self
                    .s
                    .perm
                    .iter()
                    .enumerate()
                    .all(|(j, &p)| p as usize == ndim - j - 1);
                let tensor_shape = self.invert_perm(&self.s.shape);
                if inverted {
                    self.set_output(sink, i, &tensor_shape, &[])?;
                } else {
                    let mut tensor_stride = self.invert_perm(&stride_bytes);
                    for s in tensor_stride.iter_mut() {
                        *s /= es;
                    }
                    self.set_output(sink, i, &tensor_shape, &tensor_stride)?;
                }
                let st = &mut **self.s;
                let op = &mut st.operands[i];
                let t = op.tensor.as_ref().expect("set_output adopted the tensor");
                // The sink may have been given an out= tensor of another dtype (it keeps its
                // dtype: the kernels cast into it); recompute its byte strides from the tensor.
                let tes = t.element_size() as i64;
                let ts = t.strides();
                let tsz = t.sizes();
                let mut sb = DimVec::from_elem(0, ndim);
                for d in 0..ndim {
                    let td = st.perm[d] as usize;
                    sb[d] = if tsz[td] == 1 { 0 } else { ts[td] * tes };
                }
                op.stride_bytes = sb;
                op.current_dtype = Some(t.dtype());
            } else {
                let t = op.tensor.as_deref().cloned().expect("checked above");
                self.set_output(sink, i, &t.sizes(), &[])?;
            }
        }
        Ok(())
    }

    /// `coalesce_dimensions`: merges adjacent dimensions that are contiguous with each other
    /// in every operand (`shape[n] * stride[n] == stride[n + 1]`, or a size-1 dimension).
    fn coalesce_dimensions(&mut self) {
        let ndim = self.s.shape.len();
        if ndim <= 1 {
            return;
        }
        let can_coalesce = |it: &Self, dim0: usize, dim1: usize| -> bool {
            let (s0, s1) = (it.s.shape[dim0], it.s.shape[dim1]);
            if s0 == 1 || s1 == 1 {
                return true;
            }
            it.s.operands
                .iter()
                .all(|op| s0 * op.stride_bytes[dim0] == op.stride_bytes[dim1])
        };
        let mut prev_dim = 0usize;
        for dim in 1..ndim {
            if can_coalesce(self, prev_dim, dim) {
                if self.s.shape[prev_dim] == 1 {
                    for op in self.s.operands.iter_mut() {
                        op.stride_bytes[prev_dim] = op.stride_bytes[dim];
                    }
                }
                self.s.shape[prev_dim] *= self.s.shape[dim];
            } else {
                prev_dim += 1;
                if prev_dim != dim {
                    for op in self.s.operands.iter_mut() {
                        op.stride_bytes[prev_dim] = op.stride_bytes[dim];
                    }
                    self.s.shape[prev_dim] = self.s.shape[dim];
                }
            }
        }
        self.s.shape.truncate(prev_dim + 1);
        for op in self.s.operands.iter_mut() {
            op.stride_bytes.truncate(prev_dim + 1);
        }
        self.s.has_coalesced_dimensions = true;
    }
}

// ---------------------------------------------------------------------------------------------
// Accessors (both forms)
// ---------------------------------------------------------------------------------------------

impl<'a> TensorIteratorBase<'a> {
    pub fn ndim(&self) -> usize {
        self.shape().len()
    }
    /// The iteration shape (after reordering and coalescing: fastest dimension first).
    pub fn shape(&self) -> &[i64] {
        match &self.repr {
            Repr::General(g) => &g.s.shape,
            Repr::Trivial(t) => t.shape(),
        }
    }
    pub fn numel(&self) -> i64 {
        match &self.repr {
            Repr::General(g) => g.numel(),
            Repr::Trivial(t) => t.numel(),
        }
    }
    pub fn ntensors(&self) -> usize {
        match &self.repr {
            Repr::General(g) => g.s.operands.len(),
            Repr::Trivial(t) => t.ntensors(),
        }
    }
    pub fn noutputs(&self) -> usize {
        match &self.repr {
            Repr::General(g) => g.s.num_outputs,
            Repr::Trivial(t) => t.noutputs(),
        }
    }
    pub fn ninputs(&self) -> usize {
        self.ntensors() - self.noutputs()
    }
    /// The byte strides of operand `arg` in iteration order (`ndim()` long).
    pub fn strides(&self, arg: usize) -> &[i64] {
        match &self.repr {
            Repr::General(g) => &g.s.operands[arg].stride_bytes,
            Repr::Trivial(t) => t.strides(arg),
        }
    }
    /// The dtype operand `arg` holds (what a kernel reads or writes there).
    pub fn dtype(&self, arg: usize) -> ScalarType {
        match &self.repr {
            Repr::General(g) => {
                let op = &g.s.operands[arg];
                op.current_dtype
                    .or(op.target_dtype)
                    .expect("every operand has a dtype after the build")
            }
            Repr::Trivial(t) => t.dtype(arg),
        }
    }
    /// The dtype the op computes in (None when the inputs differ and no promotion was asked).
    pub fn common_dtype(&self) -> Option<ScalarType> {
        match &self.repr {
            Repr::General(g) => g.s.common_dtype,
            Repr::Trivial(t) => Some(t.common_dtype()),
        }
    }
    /// `common_dtype()` or an error naming the op (for kernels that need one).
    pub fn computation_dtype(&self) -> Result<ScalarType> {
        self.common_dtype()
            .ok_or_else(|| Error::runtime("TensorIterator: the inputs have no common dtype"))
    }
    pub fn input_dtype(&self, i: usize) -> ScalarType {
        self.dtype(self.noutputs() + i)
    }
    pub fn device(&self) -> Device {
        match &self.repr {
            Repr::General(g) => g.s.common_device,
            Repr::Trivial(_) => Device::CPU,
        }
    }
    /// The device type a DispatchStub selects its kernel by.
    pub fn device_type(&self) -> ratten_core::DeviceType {
        self.device().device_type
    }
    pub fn is_meta(&self) -> bool {
        match &self.repr {
            Repr::General(g) => g.s.is_meta,
            Repr::Trivial(_) => false,
        }
    }
    pub fn has_coalesced_dimensions(&self) -> bool {
        match &self.repr {
            Repr::General(g) => g.s.has_coalesced_dimensions,
            Repr::Trivial(t) => t.has_coalesced_dimensions(),
        }
    }
    /// Operand `arg`'s tensor (None for an operand that does not exist).
    fn operand_tensor(&self, arg: usize) -> Option<&TensorBase> {
        match &self.repr {
            Repr::General(g) => g.s.operands.get(arg).and_then(|op| op.tensor.as_deref()),
            Repr::Trivial(t) => t.tensor(arg),
        }
    }
    /// The i-th output tensor.
    pub fn output(&self, i: usize) -> Result<TensorBase> {
        (i < self.noutputs())
            .then(|| self.operand_tensor(i).cloned())
            .flatten()
            .ok_or_else(|| Error::index(format!("TensorIterator: no output {i}")))
    }
    /// The i-th input tensor.
    pub fn input(&self, i: usize) -> Result<TensorBase> {
        self.operand_tensor(self.noutputs() + i)
            .cloned()
            .ok_or_else(|| Error::index(format!("TensorIterator: no input {i}")))
    }
    /// Whether operand `arg` is a 0-dim CPU tensor (a scalar a kernel may read once).
    pub fn is_cpu_scalar(&self, arg: usize) -> bool {
        match &self.repr {
            Repr::General(g) => g.s.operands[arg]
                .tensor
                .as_ref()
                .is_some_and(|t| t.dim() == 0 && t.is_cpu()),
            Repr::Trivial(t) => t.is_cpu_scalar(arg),
        }
    }
    /// Whether operand `arg` is the same value at every position (all strides 0).
    pub fn is_scalar(&self, arg: usize) -> bool {
        self.strides(arg).iter().all(|&s| s == 0)
    }
    /// Whether every operand is contiguous in the single iteration dimension.
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 1 {
            return true;
        }
        if self.ndim() != 1 {
            return false;
        }
        (0..self.ntensors()).all(|i| self.strides(i)[0] == self.dtype(i).element_size() as i64)
    }

    /// Removes operand `arg` (PyTorch's `remove_operand`, used to drop a scalar input after
    /// reading it).
    pub fn remove_operand(&mut self, arg: usize) {
        match &mut self.repr {
            Repr::General(g) => {
                g.s.operands.remove(arg);
                if arg < g.s.num_outputs {
                    g.s.num_outputs -= 1;
                }
            }
            Repr::Trivial(t) => t.remove_operand(arg),
        }
    }

    /// Reads the value of a CPU scalar operand as a `Scalar` (`scalar_value`).
    pub fn scalar_value(&self, arg: usize) -> Result<ratten_core::Scalar> {
        self.operand_tensor(arg)
            .ok_or_else(|| Error::runtime("TensorIterator: undefined operand"))?
            .item()
    }

    /// `for_each(loop, grain_size)`: runs `loop` over every element, in parallel chunks when
    /// there are at least `grain_size` elements and more than one thread. A no-op for meta
    /// tensors and empty iterations.
    ///
    /// The loops use the geometry captured at the build (the snapshots the strides were
    /// computed from), as PyTorch's TensorIterator uses the data pointers and strides it
    /// captured: an operand restrided after the build does not change what an already built
    /// iterator does. Memory safety does not depend on it: a snapshot keeps its storage alive,
    /// its view was checked in bounds when it was made, and storages only grow.
    pub fn for_each(&self, loop2d: &Loop2d<'_>, grain_size: i64) -> Result<()> {
        match &self.repr {
            Repr::General(g) => g.for_each(loop2d, grain_size),
            Repr::Trivial(t) => t.for_each(loop2d, grain_size),
        }
    }

    /// For a compactly built iterator (Note [TensorIterator trivial build]), runs
    /// `f(data, strides, numel)` over its one contiguous run on this thread, under the access
    /// guard: `for_each` below its grain size, with a closure that is inlined rather than
    /// called through `dyn` (a kernel's short-run path). `None` for the general form.
    #[inline]
    pub fn with_trivial_run<R>(
        &self,
        f: impl FnOnce(&[*mut u8], &[isize], usize) -> R,
    ) -> Option<Result<R>> {
        match &self.repr {
            Repr::Trivial(t) => Some(t.run_serial(f)),
            Repr::General(_) => None,
        }
    }

    /// A kernel's shortest path: [`TensorIteratorBase::with_trivial_run`] when this is a compact
    /// iterator of one output of dtype `output` and `ninputs` inputs of dtype `input` over 1
    /// to `max_numel` elements, so that the kernel needs to ask nothing else of it. `None`
    /// otherwise (the kernel takes its general path, which computes the same).
    #[inline]
    pub fn with_trivial_run_of<R>(
        &self,
        ninputs: usize,
        input: ScalarType,
        output: ScalarType,
        max_numel: usize,
        f: impl FnOnce(&[*mut u8], &[isize], usize) -> R,
    ) -> Option<Result<R>> {
        match &self.repr {
            Repr::Trivial(t) if t.is_short_run_of(ninputs, input, output, max_numel) => {
                Some(t.run_serial(f))
            }
            _ => None,
        }
    }

    /// Runs `f` with every operand's data pointer (outputs first) while one access guard holds
    /// them all: the entry of drivers that walk the iterator's geometry themselves (the
    /// reduction driver, `native/cpu/reduce.rs`), reading it from [`Self::shape`] and
    /// [`Self::strides`]. The pointers are valid only inside `f` (and the parallel regions it
    /// runs). Reduction and multi-output iterators are always in the general form (Note
    /// [TensorIterator trivial build]): a compact iterator runs its one run the same way.
    pub fn with_data_ptrs<R>(&self, f: impl FnOnce(&[*mut u8]) -> R) -> Result<R> {
        match &self.repr {
            Repr::General(g) => g.with_acquired(f),
            Repr::Trivial(t) => t.run_serial(|ptrs, _, _| f(ptrs)),
        }
    }

    /// `serial_for_each(loop, range)`: runs `loop` over `[begin, end)` on this thread.
    pub fn serial_for_each(&self, loop2d: &Loop2d<'_>, begin: i64, end: i64) -> Result<()> {
        if end <= begin || self.is_meta() {
            return Ok(());
        }
        if begin < 0 || end > self.numel() {
            return Err(Error::index(format!(
                "serial_for_each: range [{begin}, {end}) is outside [0, {})",
                self.numel()
            )));
        }
        match &self.repr {
            Repr::General(g) => g.with_acquired(|ptrs| {
                // SAFETY: pointers from the guard held during this closure; range checked
                // above.
                unsafe { g.serial_for_each_ptrs(ptrs, loop2d, begin, end) };
            }),
            Repr::Trivial(t) => t.serial_for_each(loop2d, begin, end),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Loops of the general form
// ---------------------------------------------------------------------------------------------

impl<'a> General<'a> {
    fn numel(&self) -> i64 {
        self.s.shape.iter().product()
    }
    fn ntensors(&self) -> usize {
        self.s.operands.len()
    }
    fn ndim(&self) -> usize {
        self.s.shape.len()
    }

    /// Runs `f` with every operand's data pointer while one access guard holds them all
    /// (inputs read, outputs written). The guard stays in this frame (returning it would copy
    /// it). See `TensorIteratorBase::for_each` on the geometry used.
    fn with_acquired<R>(&self, f: impl FnOnce(&[*mut u8]) -> R) -> Result<R> {
        // Up to 4 operands (every pointwise op) the lists live on the stack.
        const INLINE: usize = 4;
        let ops = &self.s.operands;
        fn spec<'o>(op: &'o OperandInfo<'_>) -> Result<SnapshotSpec<'o>> {
            match (&op.tensor, &op.meta) {
                (Some(t), Some(built)) => Ok((&**built, t.dtype(), t.device())),
                _ => Err(Error::runtime("TensorIterator: an operand is undefined")),
            }
        }
        let n_writes = self.s.num_outputs;
        // SAFETY (of both `acquire`s): each snapshot was taken from the operand's own tensor
        // (`operands[k].meta` is `operands[k].tensor`'s pinned snapshot, refreshed when an
        // output is set), whose dtype and device never change, and those are what is passed
        // with it. The guard borrows the snapshots, which the iterator holds for longer.
        if ops.len() <= INLINE {
            let first = spec(ops.first().ok_or_else(|| {
                Error::runtime("TensorIterator: an iterator without operands has no loop")
            })?)?;
            let mut specs = [first; INLINE];
            for (k, op) in ops.iter().enumerate().skip(1) {
                specs[k] = spec(op)?;
            }
            // SAFETY: see above.
            return unsafe { with_guard(&specs[..ops.len()], n_writes, f) };
        }
        let specs = ops.iter().map(spec).collect::<Result<OpVec<_>>>()?;
        // SAFETY: see above.
        unsafe { with_guard(&specs, n_writes, f) }
    }

    /// The strides of a 1-D run of at most 4 operands, as a 2-D loop takes them (the outer ones
    /// 0), on the stack.
    fn inner_strides(&self) -> [isize; 8] {
        let mut strides = [0isize; 8];
        for (k, op) in self.s.operands.iter().take(4).enumerate() {
            strides[k] = op.stride_bytes.first().copied().unwrap_or(0) as isize;
        }
        strides
    }

    /// The strides passed to a 2-D loop (always at least 2-D).
    fn loop_strides(&self) -> SmallVec<[isize; 8]> {
        let nt = self.ntensors();
        let mut s = SmallVec::from_elem(0isize, 2 * nt);
        for (k, op) in self.s.operands.iter().enumerate() {
            s[k] = op.stride_bytes.first().copied().unwrap_or(0) as isize;
            s[nt + k] = op.stride_bytes.get(1).copied().unwrap_or(0) as isize;
        }
        s
    }

    /// `for_each` of the general form.
    fn for_each(&self, loop2d: &Loop2d<'_>, grain_size: i64) -> Result<()> {
        let numel = self.numel();
        if numel == 0 || self.s.is_meta {
            return Ok(());
        }
        let serial = numel < grain_size || get_num_threads() == 1;
        let nt = self.s.operands.len();
        if serial && self.s.shape.len() <= 1 && nt <= 4 {
            // The common case (every small op): one run, its strides on the stack.
            let strides = self.inner_strides();
            // SAFETY (of the loop's use of the pointers): they come from the guard
            // `with_acquired` holds during this closure and address `numel` elements of each
            // operand at its stride.
            return self.with_acquired(|ptrs| loop2d(ptrs, &strides[..2 * nt], numel as usize, 1));
        }
        self.with_acquired(|ptrs| {
            if serial {
                // SAFETY: the pointers come from the guard `with_acquired` holds during this
                // closure, and address the operands' elements at the iterator's strides.
                unsafe { self.serial_for_each_ptrs(ptrs, loop2d, 0, numel) };
                Ok(())
            } else {
                let shared = SharedPtrs(OpVec::from_slice(ptrs));
                parallel_for(0, numel, grain_size, |b, e| {
                    // SAFETY: as above; the guard outlives the parallel region, and chunks are
                    // disjoint ranges of the outputs.
                    unsafe { self.serial_for_each_ptrs(shared.get(), loop2d, b, e) };
                })
            }
        })?
    }

    /// # Safety
    /// `base` must hold the operands' data pointers under a live access guard.
    unsafe fn serial_for_each_ptrs(
        &self,
        base: &[*mut u8],
        loop2d: &Loop2d<'_>,
        begin: i64,
        end: i64,
    ) {
        let nt = self.ntensors();
        let ndim = self.ndim();
        if ndim <= 1 && nt <= 4 {
            // The common case (every small op): one run, strides and pointers on the stack.
            let strides = self.inner_strides();
            let mut ptrs = [std::ptr::null_mut::<u8>(); 4];
            for k in 0..nt {
                ptrs[k] = base[k].wrapping_offset(begin as isize * strides[k]);
            }
            loop2d(&ptrs[..nt], &strides[..2 * nt], (end - begin) as usize, 1);
            return;
        }
        let strides = self.loop_strides();
        let mut ptrs: OpVec<*mut u8> = OpVec::from_elem(std::ptr::null_mut(), nt);
        if ndim <= 1 {
            for k in 0..nt {
                ptrs[k] = base[k].wrapping_offset(begin as isize * strides[k]);
            }
            loop2d(&ptrs, &strides, (end - begin) as usize, 1);
            return;
        }
        // DimCounter.
        let shape = &self.s.shape;
        let mut values: DimVec = DimVec::from_elem(0, ndim);
        let mut rem = begin;
        for d in 0..ndim {
            values[d] = rem % shape[d];
            rem /= shape[d];
        }
        let mut offset = begin;
        while offset < end {
            for k in 0..nt {
                let sb = &self.s.operands[k].stride_bytes;
                let mut off = 0isize;
                for d in 0..ndim {
                    off += (values[d] * sb[d]) as isize;
                }
                ptrs[k] = base[k].wrapping_offset(off);
            }
            let step0 = (shape[0] - values[0]).min(end - offset);
            let mut step1 = 1;
            if step0 == shape[0] {
                step1 = (shape[1] - values[1]).min((end - offset) / shape[0]);
            }
            loop2d(&ptrs, &strides, step0 as usize, step1 as usize);
            // increment
            offset += step0 * step1;
            let (mut i, mut overflow) = (0usize, step0);
            if step1 != 1 {
                i = 1;
                overflow = step1;
            }
            while i < ndim && overflow > 0 {
                let mut value = values[i] + overflow;
                if value >= shape[i] {
                    overflow = 1;
                    value -= shape[i];
                } else {
                    overflow = 0;
                }
                values[i] = value;
                i += 1;
            }
        }
    }
}

/// Runs `f` with the data pointers of `specs` while one access guard holds them all (the first
/// `n_writes` written, the rest read); the guard stays in this frame (returning it would copy
/// it). Both forms' loops take their pointers here.
///
/// # Safety
/// As [`RawAccess::acquire`]: each spec's dtype and device are those of the tensor its
/// snapshot was taken from.
#[inline(always)]
unsafe fn with_guard<R>(
    specs: &[SnapshotSpec<'_>],
    n_writes: usize,
    f: impl FnOnce(&[*mut u8]) -> R,
) -> Result<R> {
    const INLINE: usize = 4;
    let n = specs.len();
    if n <= INLINE {
        let mut ptrs = [std::ptr::null_mut::<u8>(); INLINE];
        // SAFETY: the caller's contract.
        let g = unsafe { RawAccess::acquire(specs, n_writes, &mut ptrs[..n])? };
        let r = f(&ptrs[..n]);
        drop(g);
        return Ok(r);
    }
    let mut ptrs: OpVec<*mut u8> = OpVec::from_elem(std::ptr::null_mut(), n);
    // SAFETY: the caller's contract.
    let g = unsafe { RawAccess::acquire(specs, n_writes, &mut ptrs)? };
    let r = f(&ptrs);
    drop(g);
    Ok(r)
}

/// An operand's tensor with the snapshot its iteration uses.
#[derive(Clone, Debug)]
struct PinnedOperand<'a> {
    /// Declared before `tensor`, so dropped first: an owned tensor's snapshot is pinned
    /// unbounded and must be let go while the tensor still lives (as `OperandInfo::meta`).
    meta: Pinned<'a, TensorMeta>,
    tensor: Cow<'a, TensorBase>,
}

/// After the sink was told about output `i`: the operand for the tensor it now holds (see
/// [`adopt_fetched`]).
#[inline(always)]
fn adopt_output<'a>(
    sink: OutputSink<'_, 'a>,
    i: usize,
    given: Option<PinnedOperand<'a>>,
) -> Result<PinnedOperand<'a>> {
    let fetched = match sink {
        OutputSink::Borrowed(m) => Fetched::Borrowed(m.maybe_get_output(i)),
        OutputSink::Local(m) => Fetched::Local(m.maybe_get_output(i)),
    };
    adopt_fetched(fetched, i, given)
}

/// The tensor a sink holds for an output: borrowed from a structured wrapper for `'a`, or from
/// a local sink for less (then the operand owns a reference).
enum Fetched<'s, 'a> {
    Borrowed(Option<&'a Tensor>),
    Local(Option<&'s Tensor>),
}

/// The operand for the output the sink holds (`fetched`). The given output itself (out=,
/// in-place) is kept as it was added (borrowed when it was), with its snapshot unless the sink
/// restrided it; otherwise the tensor the sink made (or put in its place) is adopted: borrowed
/// from a structured wrapper for `'a`, owned from a local sink. Inlined: out of line,
/// returning the operand through memory cost a 1-element add 22 more instructions (2,227
/// against 2,205).
#[inline(always)]
fn adopt_fetched<'a>(
    fetched: Fetched<'_, 'a>,
    i: usize,
    given: Option<PinnedOperand<'a>>,
) -> Result<PinnedOperand<'a>> {
    let not_created = || {
        Error::runtime(format!(
            "TensorIterator: output {i} was not created by set_output"
        ))
    };
    let (t, borrowed): (&TensorBase, Option<&'a TensorBase>) = match fetched {
        Fetched::Borrowed(t) => {
            let t = t.ok_or_else(not_created)?.base();
            (t, Some(t))
        }
        Fetched::Local(t) => (t.ok_or_else(not_created)?.base(), None),
    };
    if let Some(PinnedOperand { meta, tensor }) = given {
        if tensor.is_same(t) {
            let meta = if tensor.is_current_meta_ref(&meta) {
                meta
            } else {
                drop(meta);
                pin_operand(&tensor)
            };
            return Ok(PinnedOperand { meta, tensor });
        }
        // The sink put another tensor in its place: the snapshot goes first (see `meta`).
        drop(meta);
        drop(tensor);
    }
    Ok(match borrowed {
        Some(t) => PinnedOperand {
            meta: t.meta_pinned(),
            tensor: Cow::Borrowed(t),
        },
        None => {
            let t = t.clone();
            // SAFETY: `t` becomes the operand's tensor, dropped after its `meta`.
            let meta = unsafe { t.meta_pinned_unbounded() };
            PinnedOperand {
                meta,
                tensor: Cow::Owned(t),
            }
        }
    })
}

/// `a == b` for the short size lists of small ops, without the `memcmp` call slices use.
#[inline]
pub(crate) fn same_dims(a: &[i64], b: &[i64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The element size of an operand's current (else target) dtype.
#[inline]
fn dtype_size(op: &OperandInfo) -> usize {
    op.current_dtype
        .or(op.target_dtype)
        .map_or(1, |d| d.element_size())
}

/// `infer_size` (ExpandUtils.cpp): NumPy broadcasting aligned from the right, with PyTorch's
/// error text.
pub fn infer_size(a: &[i64], b: &[i64]) -> Result<DimVec> {
    let ndim = a.len().max(b.len());
    let mut out = DimVec::from_elem(0, ndim);
    for i in (0..ndim).rev() {
        let offset = ndim - 1 - i;
        let da = a.len() as i64 - 1 - offset as i64;
        let db = b.len() as i64 - 1 - offset as i64;
        let sa = if da >= 0 { a[da as usize] } else { 1 };
        let sb = if db >= 0 { b[db as usize] } else { 1 };
        if sa != sb && sa != 1 && sb != 1 {
            return Err(Error::runtime(format!(
                "The size of tensor a ({sa}) must match the size of tensor b ({sb}) at \
                 non-singleton dimension {i}"
            )));
        }
        out[i] = if sa == 1 { sb } else { sa };
    }
    Ok(out)
}

fn channels_last_strides(sizes: &[i64]) -> DimVec {
    if sizes.len() != 4 {
        return DimVec::new();
    }
    let (c, h, w) = (sizes[1].max(1), sizes[2].max(1), sizes[3].max(1));
    DimVec::from_slice(&[h * w * c, 1, w * c, c])
}

fn is_channels_last_contiguous(t: &TensorBase) -> bool {
    let sizes = t.sizes();
    if sizes.len() != 4 {
        return false;
    }
    let strides = t.strides();
    let expected = channels_last_strides(&sizes);
    (0..4).all(|d| sizes[d] == 1 || strides[d] == expected[d])
}

#[cfg(test)]
mod tests;
