//! The compact form of a trivially built TensorIterator.
//!
//! Note [TensorIterator trivial build]: the common case of a small op is one output and CPU
//! inputs of one dtype and one shape, all contiguous, with the output either undefined or of
//! that shape and dtype and not sharing memory with an input (other than being the same
//! tensor, as in-place ops are). For it, every step of the general pipeline has a known
//! answer: no overlap can exist (a contiguous tensor has no internal overlap; distinct
//! storages cannot overlap), the shape is the common shape, nothing is resized, the common
//! dtype is the inputs' dtype (PyTorch's result_type of equal dtypes, unless every operand is
//! 0-dim and one is a wrapped number, or integers are promoted to float: those take the
//! general path), the fast setup is `Contiguous`, and the iteration is one dimension of
//! `numel` elements at each operand's element size.
//!
//! Such an iterator is kept in this compact form: the operands (tensor and pinned snapshot),
//! their dtypes and strides in fixed arrays, and nothing else (in a box the thread reuses, see
//! [`TrivialBox`]). No `OperandInfo` records, no stride lists: a small op neither writes nor
//! drops them, and its loop reads its data pointers from the operands directly (see Note [Small-op latency] in ARCHITECTURE.md). What
//! a kernel asks of the iterator (dtypes, shape, strides, `for_each`) is answered the same by
//! both forms; `tensor_iterator::tests` builds every trivial case both ways and compares them.

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

impl Drop for TrivialBox<'_> {
    fn drop(&mut self) {
        // SAFETY: the box is initialised from construction until here, and not used after.
        let mut b = unsafe { ManuallyDrop::take(&mut self.0) };
        b.ops = [None, None, None, None];
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
    ops: [Option<PinnedOperand<'a>>; MAX_TRIVIAL],
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
        ops: [None, None, None, None],
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
    /// otherwise returns None having changed nothing (the sink is not called), with the
    /// snapshots it pinned in `pins`. An error is only the sink's (or a sink that made an
    /// output of another shape).
    pub(super) fn try_build(
        config: &mut TensorIteratorConfig<'a>,
        sink: OutputSink<'_, 'a>,
        pins: &mut Pins<'a>,
    ) -> Result<Option<TrivialBox<'a>>> {
        if config.num_outputs != 1
            || config.is_reduction
            || config.static_shape.is_some()
            || config.static_device.is_some()
        {
            return Ok(None);
        }
        let flags = TrivialFlags::of(config);
        Self::try_build_from(&mut config.operands[..], flags, sink, pins)
    }

    /// [`TrivialIter::try_build`] over one output (operand 0) and its inputs, read from `src`
    /// (a config's operands, or tensors a binary op's meta borrows, without a config).
    // Index loops: `k` indexes both `pins` and `src` (a trait, not a slice), and the
    // iterator-adapter form compiled to a call per element.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    pub(super) fn try_build_from<S: TrivialSource<'a> + ?Sized>(
        src: &mut S,
        flags: TrivialFlags,
        sink: OutputSink<'_, 'a>,
        pins: &mut Pins<'a>,
    ) -> Result<Option<TrivialBox<'a>>> {
        #[cfg(test)]
        if super::tests::FORCE_GENERAL_BUILD.with(|c| c.get()) {
            return Ok(None);
        }
        let n = src.len();
        if !(2..=MAX_TRIVIAL).contains(&n) {
            return Ok(None);
        }
        // The inputs: one dtype, CPU, contiguous, the first one's sizes.
        let Some(first_t) = src.get(1) else {
            return Ok(None);
        };
        let dtype = first_t.dtype();
        for k in 1..n {
            let Some(t) = src.get(k) else {
                return Ok(None);
            };
            if t.dtype() != dtype || t.device() != Device::CPU {
                return Ok(None);
            }
            pins[k] = Some(src.pin(k));
            let m = pins[k].as_ref().expect("pinned above");
            let same_shape = k == 1 || {
                let first = pins[1].as_deref().expect("pinned above");
                std::ptr::eq(&**m, first) || same_dims(m.sizes(), first.sizes())
            };
            if !same_shape || !m.is_contiguous() {
                return Ok(None);
            }
        }
        let first = pins[1].as_deref().expect("an input was pinned");
        let sizes = first.sizes();
        // Only all-0-dim operands can be all wrapped numbers (whose result type is not theirs).
        if (sizes.is_empty()
            && flags.promote_inputs_to_common_dtype
            && (1..n).any(|k| src.get(k).is_some_and(|t| t.is_wrapped_number())))
            || (flags.promote_integer_inputs_to_float && dtype.is_integral(true))
        {
            return Ok(None);
        }
        // A given output: of that dtype, shape and layout, and not sharing an input's memory
        // unless it is that input (in-place).
        if let Some(out) = src.get(0) {
            if out.dtype() != dtype || out.device() != Device::CPU {
                return Ok(None);
            }
            pins[0] = Some(src.pin(0));
            let om = pins[0].as_deref().expect("pinned above");
            let first = pins[1].as_deref().expect("an input was pinned");
            if !same_dims(om.sizes(), first.sizes()) || !om.is_contiguous() {
                return Ok(None);
            }
            if flags.check_mem_overlap {
                let out_storage = om.storage();
                for k in 1..n {
                    let input = src.get(k).expect("inputs are defined");
                    let im = pins[k].as_deref().expect("inputs were pinned");
                    if !input.is_same(out) && im.storage().is_alias_of(out_storage) {
                        // Shared memory: the general path decides between full and partial
                        // overlap.
                        return Ok(None);
                    }
                }
            }
        }

        // Trivial: from here on the operands are taken out of `src`.
        let given = match (pins[0].take(), src.take(0)) {
            (Some(meta), Some(tensor)) => Some(PinnedOperand { meta, tensor }),
            _ => None,
        };
        let first = pins[1].as_deref().expect("an input was pinned");
        let ndim = first.sizes().len();
        let numel = first.numel();
        let out_dtype = match &given {
            Some(_) => dtype,
            None => flags.static_dtype.unwrap_or(dtype),
        };
        let output = announce_output(sink, given, out_dtype, first)?;
        // The loop writes `numel` contiguous elements of the output's dtype: a sink that made
        // (or substituted) an output of another shape or layout cannot be iterated like this.
        if !same_dims(output.meta.sizes(), first.sizes()) || !output.meta.is_contiguous() {
            return Err(Error::runtime(format!(
                "TensorIterator: the output set for operand 0 has sizes {} and strides {}, \
                 not the contiguous {}",
                super::fmt_sizes(output.meta.sizes()),
                super::fmt_sizes(output.meta.strides()),
                super::fmt_sizes(first.sizes()),
            )));
        }
        let mut it = TrivialBox::take();
        it.dtypes = [dtype; MAX_TRIVIAL];
        it.stride_bytes = [dtype.element_size() as i64; MAX_TRIVIAL];
        it.ntensors = n as u8;
        it.noutputs = 1;
        it.shape = [numel];
        it.ndim = (ndim > 0) as u8;
        it.coalesced = ndim > 1;
        it.common_dtype = dtype;
        it.dtypes[0] = output.tensor.dtype();
        it.stride_bytes[0] = it.dtypes[0].element_size() as i64;
        fill_empty(&mut it.ops[0], output);
        for k in 1..n {
            let tensor = src.take(k).expect("inputs are defined");
            let meta = pins[k].take().expect("inputs were pinned");
            fill_empty(&mut it.ops[k], PinnedOperand { meta, tensor });
        }
        #[cfg(test)]
        super::tests::TRIVIAL_BUILDS.with(|c| c.set(c.get() + 1));
        Ok(Some(it))
    }

    fn op(&self, k: usize) -> &PinnedOperand<'a> {
        self.ops[k]
            .as_ref()
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
        (arg < self.ntensors()).then(|| &*self.op(arg).tensor)
    }
    pub(super) fn is_cpu_scalar(&self, arg: usize) -> bool {
        self.op(arg).meta.dim() == 0
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
        self.ops[arg..n].rotate_left(1);
        self.dtypes[arg..n].rotate_left(1);
        self.stride_bytes[arg..n].rotate_left(1);
        self.ops[n - 1] = None;
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
        let spec =
            |k: usize| -> SnapshotSpec<'_> { (&*self.op(k).meta, self.dtypes[k], Device::CPU) };
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
fn fill_empty<'a>(slot: &mut Option<PinnedOperand<'a>>, op: PinnedOperand<'a>) {
    debug_assert!(slot.is_none(), "a taken box's operand slots are empty");
    std::mem::forget(slot.replace(op));
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

/// Announces output 0 to the sink (a given output with its own sizes, a new one with the
/// inputs' sizes and `out_dtype`) and returns the operand for the tensor the sink then holds.
#[inline(always)]
fn announce_output<'a>(
    sink: OutputSink<'_, 'a>,
    given: Option<PinnedOperand<'a>>,
    out_dtype: ScalarType,
    first: &TensorMeta,
) -> Result<PinnedOperand<'a>> {
    let (sizes, options) = match &given {
        Some(g) => (
            g.meta.sizes(),
            TensorOptions::new()
                .dtype(g.tensor.dtype())
                .device(g.tensor.device()),
        ),
        None => (
            first.sizes(),
            TensorOptions::new().dtype(out_dtype).device(Device::CPU),
        ),
    };
    let fetched = match sink {
        OutputSink::Borrowed(m) => {
            Fetched::Borrowed(m.set_output_raw_strided_and_get(0, sizes, &[], options)?)
        }
        OutputSink::Local(m) => {
            Fetched::Local(m.set_output_raw_strided_and_get(0, sizes, &[], options)?)
        }
    };
    adopt_fetched(fetched, 0, given)
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

/// A binary op's operands borrowed straight from its meta's arguments (no config is made
/// unless the build turns out general).
pub(super) struct BorrowedBinary<'a> {
    pub(super) out: Option<&'a TensorBase>,
    pub(super) inputs: [&'a TensorBase; 2],
}

impl<'a> BorrowedBinary<'a> {
    #[inline(always)]
    fn tensor(&self, k: usize) -> Option<&'a TensorBase> {
        if k == 0 {
            self.out
        } else {
            Some(self.inputs[k - 1])
        }
    }
}

impl<'a> TrivialSource<'a> for BorrowedBinary<'a> {
    #[inline(always)]
    fn len(&self) -> usize {
        3
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
