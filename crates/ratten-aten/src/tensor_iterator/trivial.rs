//! The compact form of a trivially built TensorIterator.
//!
//! Note [TensorIterator trivial build]: the common case of a small op is one output and CPU
//! inputs of one dtype and one shape, all contiguous (beside at most one wrapped number, see
//! below), with the output either undefined or of that shape and dtype and not sharing memory
//! with an input (other than being the same tensor, as in-place ops are). For it, every step
//! of the general pipeline has a known answer: no overlap can exist (a contiguous tensor has no internal overlap; distinct
//! storages cannot overlap), the shape is the common shape, nothing is resized, the common
//! dtype is the inputs' dtype (PyTorch's result_type of equal dtypes, unless every operand is
//! 0-dim and one is a wrapped number, or integers are promoted to float: those take the
//! general path), the fast setup is `Contiguous`, and the iteration is one dimension of
//! `numel` elements at each operand's element size.
//!
//! Such an iterator is kept in this compact form: the operands (tensor and pinned snapshot),
//! their dtypes and strides in fixed arrays, and nothing else (in a box the thread reuses, see
//! [`TrivialBox`]). No `OperandInfo` records, no stride lists: a small op neither writes nor
//! drops them, and its loop reads its data pointers from the operands directly (see Note [Small-op latency] in structured.rs). What
//! a kernel asks of the iterator (dtypes, shape, strides, `for_each`) is answered the same by
//! both forms; `tensor_iterator::tests` builds every trivial case both ways and compares them.
//!
//! Note [Wrapped numbers in a compact build]: `x * 2.0` reaches the iterator as `x` and a
//! wrapped number (the 0-dim double tensor the binding made of `2.0`). The general pipeline
//! would broadcast it to `x`'s shape at stride 0, keep it in its own dtype (the kernels cast
//! while they stream) and compute in `x`'s dtype whenever the wrapped number's category (bool,
//! integer, floating, complex) is not above `x`'s (`type_properties::wrapped_number_keeps`,
//! PyTorch's `combine_categories`). The compact build gives exactly that
//! answer for one such operand beside inputs that are trivial among themselves, when the op
//! promotes its inputs: the operand keeps its dtype, its stride is 0, and nothing else
//! changes. Every scalar op of a small-op loop (an autograd chain's `y * 1.001`, a backward's
//! `grad * 3`) is then built without the general pipeline.

use std::borrow::Cow;
use std::cell::Cell;
use std::mem::ManuallyDrop;

use ratten_core::access::SnapshotSpec;
use ratten_core::snapshot::Pinned;
use ratten_core::tensor_impl::TensorMeta;
use ratten_core::{Device, Error, Result, ScalarType, TensorBase, TensorOptions};

use super::parallel::{get_num_threads, parallel_for};
use super::{
    adopt_fetched, pin_operand, same_dims, with_guard, Fetched, Loop2d, OutputSink, PinnedOperand,
    SharedPtrs, TensorIteratorConfig,
};
use crate::native::type_properties::wrapped_number_keeps;

/// The most operands a compact iterator holds (one output and up to three inputs: every
/// pointwise op of issue 6).
pub(super) const MAX_TRIVIAL: usize = 4;

/// The pinned snapshots a failed attempt made, handed to the general build (operand k's at k)
/// so that it does not pin again.
pub(super) type Pins<'a> = [Option<Pinned<'a, TensorMeta>>; MAX_TRIVIAL];

/// A compact iterator in a box that, when dropped, is emptied and kept as this thread's spare
/// for the next trivial build (as the general form's state is): the iterator is returned
/// through build, the op's meta and the generated wrapper as one pointer, and a loop of small
/// ops neither allocates nor copies it.
pub(super) struct TrivialBox<'a>(ManuallyDrop<Box<TrivialIter<'a>>>);

thread_local! {
    static SPARE_TRIVIAL: Cell<Option<Box<TrivialIter<'static>>>> = const { Cell::new(None) };
}

impl<'a> TrivialBox<'a> {
    /// An empty compact iterator, in the thread's spare box when there is one.
    fn take() -> TrivialBox<'a> {
        let b = match SPARE_TRIVIAL.try_with(Cell::take).ok().flatten() {
            Some(b) => b,
            None => Box::new(TrivialIter::EMPTY),
        };
        TrivialBox(ManuallyDrop::new(b))
    }
}

impl<'a> TrivialBox<'a> {
    /// The snapshots pinned so far, for the general build (this box then goes back to the
    /// thread as its spare).
    fn into_pins(mut self) -> Pins<'a> {
        std::mem::take(&mut self.metas)
    }
}

impl Drop for TrivialBox<'_> {
    fn drop(&mut self) {
        // SAFETY: the box is initialised from construction until here, and not used after.
        let mut b = unsafe { ManuallyDrop::take(&mut self.0) };
        // The snapshots first (see `TrivialIter::metas`).
        b.metas = [None, None, None, None];
        b.tensors = [None, None, None, None];
        // SAFETY: the operands, the only fields that borrow for `'a`, were just dropped; what
        // is left holds no reference, and lifetimes do not change a type's layout.
        let spare =
            unsafe { std::mem::transmute::<Box<TrivialIter<'_>>, Box<TrivialIter<'static>>>(b) };
        // At thread exit the slot may be gone: the box is then simply freed.
        let _ = SPARE_TRIVIAL.try_with(move |slot| slot.set(Some(spare)));
    }
}

impl Clone for TrivialBox<'_> {
    fn clone(&self) -> Self {
        TrivialBox(ManuallyDrop::new(Box::new((**self.0).clone())))
    }
}

impl std::fmt::Debug for TrivialBox<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self.0).fmt(f)
    }
}

impl<'a> std::ops::Deref for TrivialBox<'a> {
    type Target = TrivialIter<'a>;
    fn deref(&self) -> &TrivialIter<'a> {
        &self.0
    }
}

impl<'a> std::ops::DerefMut for TrivialBox<'a> {
    fn deref_mut(&mut self) -> &mut TrivialIter<'a> {
        &mut self.0
    }
}

/// A trivially built iterator (Note [TensorIterator trivial build]).
#[derive(Clone, Debug)]
pub(super) struct TrivialIter<'a> {
    /// Each operand's snapshot, pinned where the build reads it (no pinned value is moved
    /// after it is made: moving these records through the stack, written field by field and
    /// read back in 16-byte pieces, stalled a 1-element add on failed store-to-load
    /// forwarding). Declared before `tensors`, so dropped first: an owned tensor's snapshot
    /// is pinned unbounded and must be let go while the tensor still lives (as
    /// `PinnedOperand::meta`).
    metas: Pins<'a>,
    /// Each operand's tensor (borrowed, or owned when the sink made it for a local build).
    tensors: [Option<Cow<'a, TensorBase>>; MAX_TRIVIAL],
    /// Each operand's tensor's dtype (what the kernels read or write there).
    dtypes: [ScalarType; MAX_TRIVIAL],
    /// Each operand's byte stride along the one dimension: its element size.
    stride_bytes: [i64; MAX_TRIVIAL],
    ntensors: u8,
    noutputs: u8,
    /// The iteration shape: `[numel]`, or `[]` when every operand is 0-dim.
    shape: [i64; 1],
    ndim: u8,
    /// Whether the operands had more than one dimension (collapsed into one).
    coalesced: bool,
    common_dtype: ScalarType,
}

impl<'a> TrivialIter<'a> {
    const EMPTY: TrivialIter<'static> = TrivialIter {
        metas: [None, None, None, None],
        tensors: [None, None, None, None],
        dtypes: [ScalarType::Bool; MAX_TRIVIAL],
        stride_bytes: [0; MAX_TRIVIAL],
        ntensors: 0,
        noutputs: 0,
        shape: [0],
        ndim: 0,
        coalesced: false,
        common_dtype: ScalarType::Bool,
    };

    /// Builds the compact iterator when `config` is trivial, announcing the output to `sink`;
    /// otherwise returns, having changed nothing (the sink is not called), the snapshots it
    /// pinned (operand k's at k) for the general build. An error is only the sink's (or a
    /// sink that made an output of another shape).
    pub(super) fn try_build(
        config: &mut TensorIteratorConfig<'a>,
        sink: OutputSink<'_, 'a>,
    ) -> Result<Result<TrivialBox<'a>, Pins<'a>>> {
        if config.num_outputs != 1
            || config.is_reduction
            || config.static_shape.is_some()
            || config.static_device.is_some()
        {
            return Ok(Err([None, None, None, None]));
        }
        let flags = TrivialFlags::of(config);
        Self::try_build_from(&mut config.operands[..], flags, sink)
    }

    /// [`TrivialIter::try_build`] over one output (operand 0) and its inputs, read from `src`
    /// (a config's operands, or tensors a binary op's meta borrows, without a config). The
    /// snapshots are pinned straight into the box the iterator is returned in.
    // Index loops: `k` indexes both the box's slots and `src` (a trait, not a slice), and the
    // iterator-adapter form compiled to a call per element.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    pub(super) fn try_build_from<S: TrivialSource<'a> + ?Sized>(
        src: &mut S,
        flags: TrivialFlags,
        sink: OutputSink<'_, 'a>,
    ) -> Result<Result<TrivialBox<'a>, Pins<'a>>> {
        #[cfg(test)]
        if super::tests::FORCE_GENERAL_BUILD.with(|c| c.get()) {
            return Ok(Err([None, None, None, None]));
        }
        let n = src.len();
        if !(2..=MAX_TRIVIAL).contains(&n) {
            return Ok(Err([None, None, None, None]));
        }
        // At most one wrapped number beside the tensor inputs (`x * 2.0`, Note [Wrapped numbers
        // in a compact build]); the first other input is the reference for dtype and shape.
        let scalar = if n >= 3 && flags.promote_inputs_to_common_dtype {
            (1..n).find(|&k| src.get(k).is_some_and(TensorBase::is_wrapped_number))
        } else {
            None
        };
        let r = if scalar == Some(1) { 2 } else { 1 };
        // The inputs: one dtype, CPU, contiguous, the reference's sizes.
        let Some(first_t) = src.get(r) else {
            return Ok(Err([None, None, None, None]));
        };
        let dtype = first_t.dtype();
        let mut scalar_dtype = dtype;
        let mut it = TrivialBox::take();
        for k in 1..n {
            let Some(t) = src.get(k) else {
                return Ok(Err(it.into_pins()));
            };
            if t.device() != Device::CPU {
                return Ok(Err(it.into_pins()));
            }
            if Some(k) == scalar {
                scalar_dtype = t.dtype();
                fill_empty(&mut it.metas[k], src.pin(k));
                if !wrapped_number_keeps(scalar_dtype, dtype) || it.meta(k).dim() != 0 {
                    return Ok(Err(it.into_pins()));
                }
                continue;
            }
            if t.dtype() != dtype {
                return Ok(Err(it.into_pins()));
            }
            fill_empty(&mut it.metas[k], src.pin(k));
            let m = it.meta(k);
            let same_shape = k == r || {
                let first = it.meta(r);
                std::ptr::eq(m, first) || same_dims(m.sizes(), first.sizes())
            };
            if !same_shape || !m.is_contiguous() {
                return Ok(Err(it.into_pins()));
            }
        }
        let sizes = it.meta(r).sizes();
        // Only all-0-dim operands can be all wrapped numbers (whose result type is not theirs).
        if (sizes.is_empty()
            && flags.promote_inputs_to_common_dtype
            && (1..n)
                .any(|k| Some(k) != scalar && src.get(k).is_some_and(|t| t.is_wrapped_number())))
            || (flags.promote_integer_inputs_to_float && dtype.is_integral(true))
        {
            return Ok(Err(it.into_pins()));
        }
        // A given output: of that dtype, shape and layout, and not sharing an input's memory
        // unless it is that input (in-place).
        if let Some(out) = src.get(0) {
            if out.dtype() != dtype || out.device() != Device::CPU {
                return Ok(Err(it.into_pins()));
            }
            fill_empty(&mut it.metas[0], src.pin(0));
            let om = it.meta(0);
            if !same_dims(om.sizes(), it.meta(r).sizes()) || !om.is_contiguous() {
                return Ok(Err(it.into_pins()));
            }
            if flags.check_mem_overlap {
                let out_storage = om.storage();
                for k in 1..n {
                    let input = src.get(k).expect("inputs are defined");
                    if !input.is_same(out) && it.meta(k).storage().is_alias_of(out_storage) {
                        // Shared memory: the general path decides between full and partial
                        // overlap.
                        return Ok(Err(it.into_pins()));
                    }
                }
            }
        }

        // Trivial: from here on the operands are taken out of `src`.
        let first = it.meta(r);
        let ndim = first.sizes().len();
        let numel = first.numel();
        announce_output(&mut it, src, sink, r, flags.static_dtype.unwrap_or(dtype))?;
        let (om, first) = (it.meta(0), it.meta(r));
        // The loop writes `numel` contiguous elements of the output's dtype: a sink that made
        // (or substituted) an output of another shape or layout cannot be iterated like this.
        if !same_dims(om.sizes(), first.sizes()) || !om.is_contiguous() {
            return Err(Error::runtime(format!(
                "TensorIterator: the output set for operand 0 has sizes {} and strides {}, \
                 not the contiguous {}",
                super::fmt_sizes(om.sizes()),
                super::fmt_sizes(om.strides()),
                super::fmt_sizes(first.sizes()),
            )));
        }
        it.dtypes = [dtype; MAX_TRIVIAL];
        it.stride_bytes = [dtype.element_size() as i64; MAX_TRIVIAL];
        it.ntensors = n as u8;
        it.noutputs = 1;
        it.shape = [numel];
        it.ndim = (ndim > 0) as u8;
        it.coalesced = ndim > 1;
        it.common_dtype = dtype;
        it.dtypes[0] = it.tensors[0].as_deref().expect("the output is set").dtype();
        it.stride_bytes[0] = it.dtypes[0].element_size() as i64;
        if let Some(k) = scalar {
            // The wrapped number: one value at stride 0, read in its own dtype (the kernels cast
            // while they stream, as for any input of another dtype).
            it.dtypes[k] = scalar_dtype;
            it.stride_bytes[k] = 0;
        }
        for k in 1..n {
            fill_empty(&mut it.tensors[k], src.take(k).expect("inputs are defined"));
        }
        #[cfg(test)]
        super::tests::TRIVIAL_BUILDS.with(|c| c.set(c.get() + 1));
        Ok(Ok(it))
    }

    /// Operand `k`'s pinned snapshot (pinned by the build).
    #[inline(always)]
    fn meta(&self, k: usize) -> &TensorMeta {
        self.metas[k]
            .as_deref()
            .expect("the operands a compact build reads are pinned")
    }

    /// Operand `k`'s tensor.
    #[inline(always)]
    fn tensor_at(&self, k: usize) -> &TensorBase {
        self.tensors[k]
            .as_deref()
            .expect("operands 0..ntensors of a compact iterator are set")
    }

    pub(super) fn ntensors(&self) -> usize {
        self.ntensors as usize
    }
    pub(super) fn noutputs(&self) -> usize {
        self.noutputs as usize
    }
    pub(super) fn shape(&self) -> &[i64] {
        &self.shape[..self.ndim as usize]
    }
    pub(super) fn numel(&self) -> i64 {
        self.shape[0]
    }
    pub(super) fn has_coalesced_dimensions(&self) -> bool {
        self.coalesced
    }
    pub(super) fn common_dtype(&self) -> ScalarType {
        self.common_dtype
    }
    pub(super) fn dtype(&self, arg: usize) -> ScalarType {
        assert!(arg < self.ntensors(), "operand {arg} of {}", self.ntensors);
        self.dtypes[arg]
    }
    /// Operand `arg`'s byte strides (`ndim()` long).
    pub(super) fn strides(&self, arg: usize) -> &[i64] {
        assert!(arg < self.ntensors(), "operand {arg} of {}", self.ntensors);
        &self.stride_bytes[arg..arg + self.ndim as usize]
    }
    pub(super) fn tensor(&self, arg: usize) -> Option<&TensorBase> {
        (arg < self.ntensors()).then(|| self.tensor_at(arg))
    }
    pub(super) fn is_cpu_scalar(&self, arg: usize) -> bool {
        self.meta(arg).dim() == 0
    }

    /// Whether the iteration is one output of dtype `output` and `ninputs` inputs of dtype
    /// `input` over 1 to `max_numel` elements.
    #[inline]
    pub(super) fn is_short_run_of(
        &self,
        ninputs: usize,
        input: ScalarType,
        output: ScalarType,
        max_numel: usize,
    ) -> bool {
        self.noutputs == 1
            && self.ntensors() == ninputs + 1
            && ninputs < MAX_TRIVIAL
            && self.dtypes[0] == output
            && self.dtypes[1..=ninputs].iter().all(|&d| d == input)
            && (1..=max_numel as i64).contains(&self.numel())
    }

    /// `remove_operand`: the operands after `arg` move down one.
    pub(super) fn remove_operand(&mut self, arg: usize) {
        let n = self.ntensors();
        assert!(arg < n, "operand {arg} of {n}");
        self.metas[arg..n].rotate_left(1);
        self.tensors[arg..n].rotate_left(1);
        self.dtypes[arg..n].rotate_left(1);
        self.stride_bytes[arg..n].rotate_left(1);
        self.metas[n - 1] = None;
        self.tensors[n - 1] = None;
        self.ntensors -= 1;
        if arg < self.noutputs() {
            self.noutputs -= 1;
        }
    }

    /// The inner strides of the one-dimensional run, as a 2-D loop takes them (the outer ones
    /// 0).
    #[inline(always)]
    fn loop_strides(&self) -> [isize; 2 * MAX_TRIVIAL] {
        let mut s = [0isize; 2 * MAX_TRIVIAL];
        for (k, &b) in self.stride_bytes[..self.ntensors()].iter().enumerate() {
            s[k] = b as isize;
        }
        s
    }

    /// Runs `f(data, strides, numel)` over the one run on this thread, under the access guard
    /// (what `for_each` does below its grain size, through a closure the caller's code can
    /// inline).
    #[inline]
    pub(super) fn run_serial<R>(
        &self,
        f: impl FnOnce(&[*mut u8], &[isize], usize) -> R,
    ) -> Result<R> {
        let n = self.ntensors();
        let strides = self.loop_strides();
        let numel = self.numel() as usize;
        self.with_acquired(|ptrs| f(ptrs, &strides[..2 * n], numel))
    }

    /// Runs `f` with every operand's data pointer while one access guard holds them all
    /// (`TensorIteratorBase::with_acquired` of the general form).
    #[inline]
    fn with_acquired<R>(&self, f: impl FnOnce(&[*mut u8]) -> R) -> Result<R> {
        let n = self.ntensors();
        let spec = |k: usize| -> SnapshotSpec<'_> { (self.meta(k), self.dtypes[k], Device::CPU) };
        let mut specs = [spec(0); MAX_TRIVIAL];
        // An index loop: the iterator-adapter form (`enumerate().take(n).skip(1)`) compiled to
        // a call per element.
        #[allow(clippy::needless_range_loop)]
        for k in 1..n {
            specs[k] = spec(k);
        }
        // SAFETY: each snapshot is its operand tensor's pinned snapshot (refreshed when the
        // output was set), and `dtypes[k]` and the CPU are that tensor's dtype and device; the
        // guard borrows the snapshots, which the iterator holds for longer.
        unsafe { with_guard(&specs[..n], self.noutputs(), f) }
    }

    pub(super) fn for_each(&self, loop2d: &Loop2d<'_>, grain_size: i64) -> Result<()> {
        let numel = self.numel();
        if numel == 0 {
            return Ok(());
        }
        let n = self.ntensors();
        let strides = self.loop_strides();
        if numel < grain_size || get_num_threads() == 1 {
            // SAFETY (of the loop's use of the pointers): they come from the guard
            // `with_acquired` holds during this closure and address `numel` contiguous
            // elements of each operand.
            return self.with_acquired(|ptrs| loop2d(ptrs, &strides[..2 * n], numel as usize, 1));
        }
        self.with_acquired(|ptrs| {
            let shared = SharedPtrs(ptrs.into());
            parallel_for(0, numel, grain_size, |b, e| {
                // SAFETY: as above; the guard outlives the parallel region, and chunks are
                // disjoint ranges of the output.
                unsafe { run_range(shared.get(), &strides[..2 * n], loop2d, b, e) };
            })
        })?
    }

    pub(super) fn serial_for_each(&self, loop2d: &Loop2d<'_>, begin: i64, end: i64) -> Result<()> {
        let n = self.ntensors();
        let strides = self.loop_strides();
        self.with_acquired(|ptrs| {
            // SAFETY: pointers from the guard held during this closure; the caller checked
            // the range against `numel`.
            unsafe { run_range(ptrs, &strides[..2 * n], loop2d, begin, end) };
        })
    }
}

/// Puts `op` into a slot of a box just taken (all slots empty), without the drop of the old
/// value an assignment would check for.
#[inline(always)]
fn fill_empty<T>(slot: &mut Option<T>, value: T) {
    debug_assert!(slot.is_none(), "a taken box's operand slots are empty");
    std::mem::forget(slot.replace(value));
}

/// Runs `loop2d` over elements `[begin, end)` of a one-dimensional iteration.
///
/// # Safety
/// `base` must hold the operands' data pointers under a live access guard, each addressing at
/// least `end` elements at its stride in `strides`.
unsafe fn run_range(
    base: &[*mut u8],
    strides: &[isize],
    loop2d: &Loop2d<'_>,
    begin: i64,
    end: i64,
) {
    let mut ptrs = [std::ptr::null_mut::<u8>(); MAX_TRIVIAL];
    for (k, p) in ptrs.iter_mut().enumerate().take(base.len()) {
        *p = base[k].wrapping_offset(begin as isize * strides[k]);
    }
    loop2d(&ptrs[..base.len()], strides, (end - begin) as usize, 1);
}

/// Announces output 0 to the sink and puts the tensor the sink then holds, with its pinned
/// snapshot, in the box's slot 0: a given output (pinned by the build) keeps its sizes, dtype
/// and device; a new one has the sizes of input `reference` and `out_dtype`.
#[inline(always)]
fn announce_output<'a, S: TrivialSource<'a> + ?Sized>(
    it: &mut TrivialIter<'a>,
    src: &mut S,
    sink: OutputSink<'_, 'a>,
    reference: usize,
    out_dtype: ScalarType,
) -> Result<()> {
    let Some(given) = src.get(0) else {
        // A new output, of the reference input's sizes (the box holds the pin they are read
        // from).
        let options = TensorOptions::new().dtype(out_dtype).device(Device::CPU);
        let sizes = it.meta(reference).sizes();
        let fetched = match sink {
            OutputSink::Borrowed(m) => {
                Fetched::Borrowed(m.set_output_raw_strided_and_get(0, sizes, &[], options)?)
            }
            OutputSink::Local(m) => {
                Fetched::Local(m.set_output_raw_strided_and_get(0, sizes, &[], options)?)
            }
        };
        return adopt_new(it, fetched);
    };
    // A given output keeps its sizes, dtype and device (the build checked they are the
    // iteration's): the sink is told so, and has nothing to check or resize.
    let options = TensorOptions::new()
        .dtype(given.dtype())
        .device(given.device());
    let sizes = it.meta(0).sizes();
    let fetched = match sink {
        OutputSink::Borrowed(m) => Fetched::Borrowed(m.keep_output_and_get(0, sizes, options)?),
        OutputSink::Local(m) => Fetched::Local(m.keep_output_and_get(0, sizes, options)?),
    };
    let kept = match &fetched {
        Fetched::Borrowed(t) => t.is_some_and(|t| t.base().is_same(given)),
        Fetched::Local(t) => t.is_some_and(|t| t.base().is_same(given)),
    };
    if kept && given.is_current_meta_ref(it.meta(0)) {
        // The common case: the given tensor, its snapshot as pinned.
        fill_empty(
            &mut it.tensors[0],
            src.take(0).expect("the output is defined"),
        );
        return Ok(());
    }
    // The sink restrided the output or put another tensor in its place.
    let meta = it.metas[0].take().expect("the given output was pinned");
    let tensor = src.take(0).expect("the output is defined");
    let op = adopt_fetched(fetched, 0, Some(PinnedOperand { meta, tensor }))?;
    it.metas[0] = Some(op.meta);
    it.tensors[0] = Some(op.tensor);
    Ok(())
}

/// Puts the output the sink made (`fetched`) in the box's slot 0, pinned where it lies.
#[inline(always)]
fn adopt_new<'a>(it: &mut TrivialIter<'a>, fetched: Fetched<'_, 'a>) -> Result<()> {
    let not_created = || Error::runtime("TensorIterator: output 0 was not created by set_output");
    match fetched {
        Fetched::Borrowed(t) => {
            let t = t.ok_or_else(not_created)?.base();
            fill_empty(&mut it.metas[0], t.meta_pinned());
            fill_empty(&mut it.tensors[0], Cow::Borrowed(t));
        }
        Fetched::Local(t) => {
            let t = t.ok_or_else(not_created)?.base().clone();
            fill_empty(&mut it.tensors[0], Cow::Owned(t));
            let owned = it.tensors[0].as_ref().expect("just set");
            // An owned tensor: pinned unbounded, let go before the tensor (see `metas`).
            fill_empty(&mut it.metas[0], pin_operand(owned));
        }
    }
    Ok(())
}

/// What a compact build needs of a config's flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TrivialFlags {
    pub(super) check_mem_overlap: bool,
    pub(super) promote_inputs_to_common_dtype: bool,
    pub(super) promote_integer_inputs_to_float: bool,
    pub(super) static_dtype: Option<ScalarType>,
}

impl TrivialFlags {
    /// `BINARY_OP_CONFIG`'s (a test checks them against `binary_op_config`).
    pub(super) const BINARY_OP: TrivialFlags = TrivialFlags {
        check_mem_overlap: true,
        promote_inputs_to_common_dtype: true,
        promote_integer_inputs_to_float: false,
        static_dtype: None,
    };
    /// `UNARY_OP_CONFIG`'s (checked against `unary_op_config` by the same test).
    pub(super) const UNARY_OP: TrivialFlags = TrivialFlags {
        check_mem_overlap: true,
        promote_inputs_to_common_dtype: false,
        promote_integer_inputs_to_float: false,
        static_dtype: None,
    };
    /// `UNARY_FLOAT_OP_CONFIG`'s.
    pub(super) const UNARY_FLOAT_OP: TrivialFlags = TrivialFlags {
        check_mem_overlap: true,
        promote_inputs_to_common_dtype: true,
        promote_integer_inputs_to_float: true,
        static_dtype: None,
    };

    /// `build_comparison_op`'s for an output `out` (a bool result when it is undefined).
    #[inline(always)]
    pub(super) fn comparison_op(out: Option<&TensorBase>) -> TrivialFlags {
        TrivialFlags {
            static_dtype: if out.is_none() {
                Some(ScalarType::Bool)
            } else {
                None
            },
            ..TrivialFlags::BINARY_OP
        }
    }

    #[inline(always)]
    pub(super) fn of(config: &TensorIteratorConfig<'_>) -> TrivialFlags {
        TrivialFlags {
            check_mem_overlap: config.check_mem_overlap,
            promote_inputs_to_common_dtype: config.promote_inputs_to_common_dtype,
            promote_integer_inputs_to_float: config.promote_integer_inputs_to_float,
            static_dtype: config.static_dtype,
        }
    }
}

/// The operands a compact build reads: operand 0 is the output (`None`: to allocate), the
/// rest inputs. `take` is called once per operand, and only when the build is trivial.
pub(super) trait TrivialSource<'a> {
    fn len(&self) -> usize;
    fn get(&self, k: usize) -> Option<&TensorBase>;
    /// Operand `k`'s snapshot, pinned for as long as the operand (as taken) is held.
    fn pin(&self, k: usize) -> Pinned<'a, TensorMeta>;
    fn take(&mut self, k: usize) -> Option<Cow<'a, TensorBase>>;
}

/// A config's operands.
impl<'a> TrivialSource<'a> for [Option<Cow<'a, TensorBase>>] {
    #[inline(always)]
    fn len(&self) -> usize {
        <[_]>::len(self)
    }
    #[inline(always)]
    fn get(&self, k: usize) -> Option<&TensorBase> {
        self[k].as_deref()
    }
    #[inline(always)]
    fn pin(&self, k: usize) -> Pinned<'a, TensorMeta> {
        pin_operand(self[k].as_ref().expect("only defined operands are pinned"))
    }
    #[inline(always)]
    fn take(&mut self, k: usize) -> Option<Cow<'a, TensorBase>> {
        self[k].take()
    }
}

/// A unary or binary op's operands borrowed straight from its meta's arguments (no config is
/// made unless the build turns out general).
pub(super) struct BorrowedOperands<'a, const N: usize> {
    pub(super) out: Option<&'a TensorBase>,
    pub(super) inputs: [&'a TensorBase; N],
}

impl<'a, const N: usize> BorrowedOperands<'a, N> {
    #[inline(always)]
    fn tensor(&self, k: usize) -> Option<&'a TensorBase> {
        if k == 0 {
            self.out
        } else {
            Some(self.inputs[k - 1])
        }
    }
}

impl<'a, const N: usize> TrivialSource<'a> for BorrowedOperands<'a, N> {
    #[inline(always)]
    fn len(&self) -> usize {
        N + 1
    }
    #[inline(always)]
    fn get(&self, k: usize) -> Option<&TensorBase> {
        self.tensor(k)
    }
    #[inline(always)]
    fn pin(&self, k: usize) -> Pinned<'a, TensorMeta> {
        self.tensor(k)
            .expect("only defined operands are pinned")
            .meta_pinned()
    }
    #[inline(always)]
    fn take(&mut self, k: usize) -> Option<Cow<'a, TensorBase>> {
        self.tensor(k).map(Cow::Borrowed)
    }
}
