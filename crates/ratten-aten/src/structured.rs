//! Structured kernels (PyTorch's `structured: True`, torchgen's `StructuredRegisterDispatchKey`)
//! and the small runtime the generated operator code stands on.
//!
//! # The structured-kernel contract
//!
//! A structured operator group is one `out=` function declared `structured: True` (for example
//! `add.out`) plus its functional and in-place forms declared `structured_delegate: add.out`.
//! The kernel author writes two functions; the generator writes everything else.
//!
//! * **meta** — PyTorch's `TORCH_META_FUNC(add, Tensor)`. One per group, shared by every
//!   backend and by the Meta key. It is found at `<kernel module>::<name>_meta`, where `<name>`
//!   is the functional overload's unambiguous name in snake case (`add.Tensor` ->
//!   `add_tensor_meta`, `neg` -> `neg_meta`):
//!
//!   ```ignore
//!   pub fn add_tensor_meta<'a>(m: &'a dyn MetaBase, self_: &'a Tensor, other: &'a Tensor,
//!       alpha: &Scalar) -> Result<State<'a>>
//!   ```
//!
//!   It checks the arguments, computes each output's sizes, strides and dtype, and announces
//!   them with [`MetaBase::set_output_raw_strided`] / [`MetaBase::set_output_strided`] /
//!   [`MetaBase::set_output_contiguous`] (exactly once per output). Before that it may look at
//!   the outputs it was given ([`MetaBase::maybe_get_output`]: `None` for the functional form,
//!   `self` for the in-place form, `out` for the out= form), as PyTorch's
//!   `build_borrowing_binary_op(maybe_get_output(), self, other)` does. What it returns is the
//!   state handed to `impl` (PyTorch's meta class object): `()` when there is none, a struct of
//!   `precomputed:` values, or a **TensorIterator**. With `structured_inherits: X` the generated
//!   code annotates the state with the Rust type configured for `X` (for ratten-aten,
//!   `TensorIteratorBase` -> `crate::tensor_iterator::TensorIteratorBase`), so a meta that
//!   returns another type does not compile.
//!
//! * **impl** — PyTorch's `TORCH_IMPL_FUNC(add_out)`. One per backend, named by the out=
//!   entry's `dispatch:` (`CPU: add_out` -> `<kernel module>::add_out`):
//!
//!   ```ignore
//!   pub fn add_out(state: &mut State, self_: &Tensor, other: &Tensor, alpha: &Scalar, out: &Tensor)
//!       -> Result<()>
//!   ```
//!
//!   `out` is the tensor to write: freshly allocated (functional), `self` (in-place), the
//!   user's `out` after resizing, or a proxy with the strides meta asked for (see below). A
//!   TensorIterator state already holds the same outputs, so its impl just runs a DispatchStub
//!   over `state`.
//!
//! ## How a TensorIterator meta fits
//!
//! In PyTorch the meta class inherits `TensorIteratorBase`, which inherits `MetaBase`; the
//! generated wrapper class overrides `set_output_raw_strided`, so when `build()` decides an
//! output's geometry it calls the wrapper, which allocates (functional), checks (in-place) or
//! resizes (out=), and the iterator then reads the tensor back with `maybe_get_output`. ratten
//! has no inheritance, so the wrapper is passed in instead: the meta passes its
//! `m: &'a dyn MetaBase` to the iterator's build (`TensorIteratorConfig::build(m)`), the
//! iterator calls `m.set_output_raw_strided(i, sizes, strides, options)` followed by
//! `m.maybe_get_output(i)` for each output it allocates, borrowing the output from `m` for
//! `'a` as PyTorch's iterator borrows it from itself (Note [Borrowed structured outputs]), and
//! the meta returns the built iterator as the state. The generated code keeps the state in a
//! block that ends before it takes the outputs out of the wrapper. `set_output_raw_strided` never makes a proxy (the iterator copes with
//! any output strides, as in PyTorch); `set_output_strided` does.
//!
//! ## What the generated wrappers do per variant (torchgen's `gen_class_set_output_body`)
//!
//! * functional ([`StructuredFunctional`]): allocate each output with the given sizes, strides
//!   and options, on the device in the options (so Meta inputs give Meta outputs).
//! * in-place ([`StructuredInplace`]): [`check_inplace`] (same dtype, device and sizes as
//!   `self`, PyTorch's "Bad in-place call" errors); `set_output_strided` with strides that
//!   differ from self's computes into a proxy that is copied back.
//! * out= ([`StructuredOut`]): [`resize_out`] — dtype and device must match, a shape mismatch
//!   resizes `out` ([`resize_output`], with PyTorch's deprecation warning through [`warn`]
//!   when `out` had elements) and restrides it to the requested strides; an `out` of the right
//!   shape but other strides gets a proxy (`set_output_strided` only) that
//!   [`StructuredOut::finish`] copies back.
//!
//! The same meta runs under the Meta dispatch key with no impl: every structured operator
//! works on `device="meta"` without code written for it.
//!
//! Note [Small-op latency]: a one-element functional `add` is almost all fixed cost, so each
//! layer of its path does per call only what the answer needs:
//! - the generated function is `#[inline]` and holds the operator's handle in a static; a
//!   typed call skips the autograd fallback's frame (Note [Typed calls skip the autograd
//!   fallback] in ratten-dispatch);
//! - in-place and out= calls return `Aliased` (Note [Aliased returns]): no handle of the
//!   result is cloned and dropped;
//! - the wrappers borrow their outputs and the iterator borrows them from the wrapper
//!   (Note [Borrowed structured outputs]); the iterator borrows its inputs (`Cow`, PyTorch's
//!   `MaybeOwned`) and pins their snapshots with hazard slots instead of counting them;
//! - the build of one output over contiguous same-shape inputs takes the trivial set-up
//!   (Note [TensorIterator trivial build]) straight from the borrowed tensors, without a
//!   config; the iterator's state is one box that a dropped iterator leaves to its thread
//!   for the next build, so it is neither allocated nor copied through meta and wrapper;
//! - a functional output is a recycled spare tensor of this thread when one is free
//!   (ratten-core's object cache), and asking the wrapper for it is one call
//!   (`MetaBase::set_output_raw_strided_and_get`); an in-place or out= wrapper whose output
//!   keeps its sizes is told so (`keep_output_and_get`) and re-reads nothing;
//! - the kernel asks once whether the iterator is trivial with operands of its computation
//!   and result types, and then runs a run of at most `SHORT_RUN` elements element by
//!   element, before any vector set-up, under a `RawAccess` guard that locks in place.
//!
//! `cargo bench -p ratten-aten --bench small_ops` measures the result against candle;
//! instruction counts (`RATTEN_SMALL_OPS_PROFILE=<op>` under callgrind) are the measure
//! that holds on a loaded machine. A profile must run long: the first call initialises the
//! dispatcher's registry once per process.

use std::cell::{OnceCell, RefCell};
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use ratten_core::tensor_impl::{compute_storage_nbytes, contiguous_strides};
use ratten_core::{
    Device, DispatchKeySet, Error, Result, Scalar, ScalarType, TensorAccess, TensorBase,
    TensorOptions,
};
use ratten_dispatch::{IValue, KernelValue, TensorLike};
use ratten_schema::Type;

use crate::tensor_iterator::same_dims;
use crate::Tensor;

/// A wrapper's outputs: inline for up to 2 (nearly every operator), so a call allocates
/// nothing for the wrapper itself.
type OutVec<T> = smallvec::SmallVec<[T; 2]>;

// ---------------------------------------------------------------------------------------------
// Warnings (c10::Warning, c10::WarningHandler).

/// A warning raised by a kernel (`TORCH_WARN`). The Python layer turns these into
/// `UserWarning`s by installing a handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub message: String,
    /// `TORCH_WARN_DEPRECATION` sets this; PyTorch maps it to `DeprecationWarning`.
    pub deprecation: bool,
}

/// Receives warnings (c10::WarningHandler).
pub type WarningHandler = Arc<dyn Fn(&Warning) + Send + Sync>;

fn global_handler() -> &'static RwLock<Option<WarningHandler>> {
    static H: OnceLock<RwLock<Option<WarningHandler>>> = OnceLock::new();
    H.get_or_init(|| RwLock::new(None))
}

thread_local! {
    // Scoped handlers (c10::WarningUtils::WarningHandlerGuard); the innermost wins.
    static LOCAL_HANDLERS: RefCell<Vec<WarningHandler>> = const { RefCell::new(Vec::new()) };
}

/// Sets the process-wide handler (`None`: print to stderr, as c10's default handler does).
pub fn set_warning_handler(handler: Option<WarningHandler>) {
    *global_handler().write() = handler;
}

/// Runs `f` with `handler` receiving this thread's warnings (the innermost scope wins).
pub fn with_warning_handler<T>(handler: WarningHandler, f: impl FnOnce() -> T) -> T {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            LOCAL_HANDLERS.with(|h| h.borrow_mut().pop());
        }
    }
    LOCAL_HANDLERS.with(|h| h.borrow_mut().push(handler));
    let _pop = Pop;
    f()
}

/// Runs `f` and returns what it warned, in order (for tests).
pub fn capture_warnings<T>(f: impl FnOnce() -> T) -> (T, Vec<Warning>) {
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let r = with_warning_handler(Arc::new(move |w: &Warning| sink.lock().push(w.clone())), f);
    let ws = std::mem::take(&mut *seen.lock());
    (r, ws)
}

/// `TORCH_WARN(message)`.
pub fn warn(message: impl Into<String>) {
    emit(Warning {
        message: message.into(),
        deprecation: false,
    });
}

fn emit(w: Warning) {
    let local = LOCAL_HANDLERS.with(|h| h.borrow().last().cloned());
    if let Some(h) = local {
        return h(&w);
    }
    let global = global_handler().read().clone();
    match global {
        Some(h) => h(&w),
        None => eprintln!("Warning: {}", w.message),
    }
}

// ---------------------------------------------------------------------------------------------
// MetaBase and the three wrappers.

/// What a structured kernel's meta function talks to (PyTorch's `at::impl::MetaBase`). The
/// generated code passes one of [`StructuredFunctional`], [`StructuredInplace`] or
/// [`StructuredOut`]; a TensorIterator's build calls it for each output it decides.
///
/// Note [Borrowed structured outputs]: the methods take `&self` (the wrappers keep their
/// outputs in `OnceCell`s), so a meta can hold the wrapper borrowed for the life `'a` of the
/// state it returns, and [`maybe_get_output`](MetaBase::maybe_get_output) of an `&'a` wrapper
/// is an `&'a Tensor`: the TensorIterator a meta builds borrows its outputs from the wrapper,
/// as PyTorch's `TensorIteratorBase::set_output_raw_strided` takes
/// `MaybeOwned<TensorBase>::borrowed(maybe_get_output(i))`, instead of counting a reference
/// to each (two atomic operations per output per call). An output is set once: it cannot be
/// replaced while the state may borrow it.
pub trait MetaBase {
    /// Announces output `idx` with exactly these strides. No proxy is ever made: the caller
    /// (TensorIterator) handles whatever strides the output ends up with.
    fn set_output_raw_strided(
        &self,
        idx: usize,
        sizes: &[i64],
        strides: &[i64],
        options: TensorOptions,
    ) -> Result<()>;

    /// Announces output `idx`; an in-place or out= output whose strides differ from `strides`
    /// is computed into a proxy with these strides and copied back afterwards. By default (a
    /// sink that makes its outputs itself, so never needs a proxy) `set_output_raw_strided`.
    fn set_output_strided(
        &self,
        idx: usize,
        sizes: &[i64],
        strides: &[i64],
        options: TensorOptions,
    ) -> Result<()> {
        self.set_output_raw_strided(idx, sizes, strides, options)
    }

    /// `set_output_contiguous`: `set_output_strided` with contiguous strides.
    fn set_output_contiguous(
        &self,
        idx: usize,
        sizes: &[i64],
        options: TensorOptions,
    ) -> Result<()> {
        let strides = contiguous_strides(sizes);
        self.set_output_strided(idx, sizes, &strides, options)
    }

    /// The tensor output `idx` will be written to: the proxy if there is one, else the given
    /// `self`/`out`, else (functional) the allocated output; `None` before a functional
    /// output is allocated.
    fn maybe_get_output(&self, idx: usize) -> Option<&Tensor>;

    /// How many outputs the operator has.
    fn num_outputs(&self) -> usize;

    /// Announces that output `idx`, a given one (the in-place `self`, the out= `out`: what
    /// `maybe_get_output(idx)` returned before the build), keeps its own `sizes` (and
    /// strides), dtype and device, and returns it: what `set_output_raw_strided_and_get(idx,
    /// sizes, &[], options)` with exactly those does (the default), which for the in-place and
    /// out= wrappers checks and resizes nothing. A TensorIterator calls this where its build
    /// found the given output already of the iteration's shape and dtype (the compact build,
    /// Note [TensorIterator trivial build]), so an out= or in-place call of a small op does
    /// not read the output's metadata once more to learn that nothing changes.
    fn keep_output_and_get(
        &self,
        idx: usize,
        sizes: &[i64],
        options: TensorOptions,
    ) -> Result<Option<&Tensor>> {
        self.set_output_raw_strided_and_get(idx, sizes, &[], options)
    }

    /// `set_output_raw_strided(idx, ..)` and then `maybe_get_output(idx)`, in one call (what a
    /// TensorIterator does with each output; the functional wrapper answers both at once).
    fn set_output_raw_strided_and_get(
        &self,
        idx: usize,
        sizes: &[i64],
        strides: &[i64],
        options: TensorOptions,
    ) -> Result<Option<&Tensor>> {
        self.set_output_raw_strided(idx, sizes, strides, options)?;
        Ok(self.maybe_get_output(idx))
    }
}

fn no_output(idx: usize, n: usize) -> Error {
    Error::runtime(format!(
        "structured kernel: output {idx} was never set by the meta function (the operator has {n} outputs)"
    ))
}

/// `n` empty output slots (the inline buffer filled directly: `collect` costs more).
fn empty_slots(n: usize) -> OutVec<OnceCell<Tensor>> {
    if n <= 2 {
        OutVec::from_buf_and_len([OnceCell::new(), OnceCell::new()], n)
    } else {
        std::iter::repeat_with(OnceCell::new).take(n).collect()
    }
}

/// Fills an output slot, which must be empty (see Note [Borrowed structured outputs]).
fn set_once(slot: &OnceCell<Tensor>, idx: usize, t: Tensor) -> Result<()> {
    slot.set(t).map_err(|_| set_twice(idx))
}

#[cold]
fn set_twice(idx: usize) -> Error {
    Error::runtime(format!(
        "structured kernel: output {idx} was set twice (a meta sets each output once)"
    ))
}

fn check_idx(idx: usize, n: usize) -> Result<()> {
    if idx >= n {
        return Err(index_out_of_range(idx, n));
    }
    Ok(())
}

#[cold]
fn index_out_of_range(idx: usize, n: usize) -> Error {
    Error::index(format!(
        "structured kernel: output index {idx} is out of range for an operator with {n} outputs"
    ))
}

/// The functional wrapper of an operator with `N` outputs: allocates each output (torchgen's
/// `create_out`). The outputs' count is a type parameter, so the slots are a plain array
/// (a small op pays no length checks or spill test for them).
pub struct StructuredFunctional<const N: usize> {
    outputs: [OnceCell<Tensor>; N],
}

impl<const N: usize> Default for StructuredFunctional<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> StructuredFunctional<N> {
    pub fn new() -> Self {
        StructuredFunctional {
            outputs: [const { OnceCell::new() }; N],
        }
    }

    /// The allocated output `idx` (an error if meta did not set it).
    pub fn output(&self, idx: usize) -> Result<&Tensor> {
        check_idx(idx, N)?;
        self.outputs[idx].get().ok_or_else(|| no_output(idx, N))
    }

    /// Takes output `idx` out of the wrapper.
    pub fn take(&mut self, idx: usize) -> Result<Tensor> {
        check_idx(idx, N)?;
        self.outputs[idx].take().ok_or_else(|| no_output(idx, N))
    }
}

impl<const N: usize> MetaBase for StructuredFunctional<N> {
    fn set_output_raw_strided(
        &self,
        idx: usize,
        sizes: &[i64],
        strides: &[i64],
        options: TensorOptions,
    ) -> Result<()> {
        self.set_output_raw_strided_and_get(idx, sizes, strides, options)
            .map(drop)
    }
    fn maybe_get_output(&self, idx: usize) -> Option<&Tensor> {
        self.outputs.get(idx).and_then(OnceCell::get)
    }
    fn num_outputs(&self) -> usize {
        N
    }
    fn set_output_raw_strided_and_get(
        &self,
        idx: usize,
        sizes: &[i64],
        strides: &[i64],
        options: TensorOptions,
    ) -> Result<Option<&Tensor>> {
        check_idx(idx, N)?;
        let slot = &self.outputs[idx];
        if slot.get().is_some() {
            return Err(set_twice(idx));
        }
        set_once(slot, idx, create_out(sizes, strides, options)?)?;
        Ok(slot.get())
    }
}

/// The state shared by the in-place and out= wrappers: the given outputs (borrowed from the
/// caller: no refcount traffic per call) and their proxies, made only when a proxy is (rare:
/// `set_output_strided` asking for strides the output does not have), so that the common
/// call neither builds nor reads a proxy list.
struct GivenOutputs<'a> {
    outputs: OutVec<&'a Tensor>,
    proxies: OnceCell<Box<OutVec<OnceCell<Tensor>>>>,
}

impl<'a> GivenOutputs<'a> {
    fn new(outputs: &[&'a Tensor]) -> Self {
        GivenOutputs {
            outputs: OutVec::from_slice(outputs),
            proxies: OnceCell::new(),
        }
    }
    #[inline]
    fn output(&self, idx: usize) -> Result<&Tensor> {
        let Some(&out) = self.outputs.get(idx) else {
            return Err(index_out_of_range(idx, self.outputs.len()));
        };
        match self.proxies.get() {
            Some(p) => Ok(p[idx].get().unwrap_or(out)),
            None => Ok(out),
        }
    }
    fn maybe_proxy(
        &self,
        idx: usize,
        sizes: &[i64],
        strides: &[i64],
        options: TensorOptions,
    ) -> Result<()> {
        if let Some(p) = maybe_create_proxy(self.outputs[idx], sizes, strides, options)? {
            let n = self.outputs.len();
            set_once(
                &self.proxies.get_or_init(|| Box::new(empty_slots(n)))[idx],
                idx,
                p,
            )?;
        }
        Ok(())
    }
    /// Copies every proxy back into its output.
    fn finish(&mut self) -> Result<()> {
        let Some(mut proxies) = self.proxies.take() else {
            return Ok(());
        };
        for (out, proxy) in self.outputs.iter().zip(proxies.iter_mut()) {
            if let Some(p) = proxy.take() {
                copy_same_dtype(out, &p)?;
            }
        }
        Ok(())
    }
}

/// The in-place wrapper: checks the computed outputs against `self` (torchgen's
/// `check_inplace`), with a proxy when `set_output_strided` asks for other strides.
pub struct StructuredInplace<'a> {
    given: GivenOutputs<'a>,
}

impl<'a> StructuredInplace<'a> {
    pub fn new(outputs: &[&'a Tensor]) -> Self {
        StructuredInplace {
            given: GivenOutputs::new(outputs),
        }
    }
    /// Where impl writes output `idx` (a proxy or `self`).
    pub fn output(&self, idx: usize) -> Result<&Tensor> {
        self.given.output(idx)
    }
    /// Copies proxies back; call after impl.
    pub fn finish(&mut self) -> Result<()> {
        self.given.finish()
    }
}

/// The MetaBase of a wrapper over given outputs (in-place, out=): `$check(out, sizes, strides,
/// options)` is what setting output `idx` does to the given tensor; the TensorIterator's
/// set-and-get is answered in one call (no second dyn call), and `set_output_strided` adds a
/// proxy when the given output lacks the strides asked for.
macro_rules! given_outputs_meta_base {
    ($ty:ident, |$out:ident, $sizes:ident, $strides:ident, $options:ident| $check:block) => {
        impl MetaBase for $ty<'_> {
            fn set_output_raw_strided(
                &self,
                idx: usize,
                sizes: &[i64],
                strides: &[i64],
                options: TensorOptions,
            ) -> Result<()> {
                self.set_output_raw_strided_and_get(idx, sizes, strides, options)
                    .map(drop)
            }
            fn set_output_raw_strided_and_get(
                &self,
                idx: usize,
                $sizes: &[i64],
                $strides: &[i64],
                $options: TensorOptions,
            ) -> Result<Option<&Tensor>> {
                check_idx(idx, self.given.outputs.len())?;
                let $out = self.given.outputs[idx];
                $check?;
                Ok(self.given.output(idx).ok())
            }
            fn keep_output_and_get(
                &self,
                idx: usize,
                sizes: &[i64],
                options: TensorOptions,
            ) -> Result<Option<&Tensor>> {
                check_idx(idx, self.given.outputs.len())?;
                let out = self.given.outputs[idx];
                // The caller read these from `out` itself: the check would pass.
                debug_assert!(
                    options.dtype_or_default() == out.dtype()
                        && options.device_or_default() == out.device()
                        && same_dims(&out.sizes(), sizes),
                    "keep_output_and_get: output {idx} announced with other sizes or options"
                );
                Ok(self.given.output(idx).ok())
            }
            fn set_output_strided(
                &self,
                idx: usize,
                sizes: &[i64],
                strides: &[i64],
                options: TensorOptions,
            ) -> Result<()> {
                self.set_output_raw_strided(idx, sizes, strides, options)?;
                self.given.maybe_proxy(idx, sizes, strides, options)
            }
            fn maybe_get_output(&self, idx: usize) -> Option<&Tensor> {
                self.given.output(idx).ok()
            }
            fn num_outputs(&self) -> usize {
                self.given.outputs.len()
            }
        }
    };
}

given_outputs_meta_base!(StructuredInplace, |out, sizes, _strides, options| {
    check_inplace(out, sizes, options)
});

/// The out= wrapper: resizes `out` when its shape differs (torchgen's `resize_out`), with a
/// proxy when `set_output_strided` asks for strides `out` does not have.
pub struct StructuredOut<'a> {
    given: GivenOutputs<'a>,
}

impl<'a> StructuredOut<'a> {
    pub fn new(outputs: &[&'a Tensor]) -> Self {
        StructuredOut {
            given: GivenOutputs::new(outputs),
        }
    }
    /// Where impl writes output `idx` (a proxy or `out`).
    pub fn output(&self, idx: usize) -> Result<&Tensor> {
        self.given.output(idx)
    }
    /// Copies proxies back; call after impl.
    pub fn finish(&mut self) -> Result<()> {
        self.given.finish()
    }
}

given_outputs_meta_base!(StructuredOut, |out, sizes, strides, options| {
    resize_out(out, sizes, strides, options)
});

/// The key set the generated BackendSelect kernel of a factory redispatches with: the backend
/// of its `device` argument, the CPU when it has none (c10's `computeDispatchKey`).
pub fn backend_select_key_set(device: Option<Device>) -> DispatchKeySet {
    DispatchKeySet::for_backend(device.unwrap_or(Device::CPU).device_type)
}

// ---------------------------------------------------------------------------------------------
// The helpers of the wrappers (RegisterDispatchKey.cpp's create_out, check_inplace, resize_out,
// maybe_create_proxy; Resize.cpp's resize_output).

/// `at::empty_strided(sizes, strides, options)`: a fresh tensor with exactly these strides.
pub fn empty_strided(sizes: &[i64], strides: &[i64], options: TensorOptions) -> Result<Tensor> {
    if sizes.len() != strides.len() {
        return Err(Error::runtime(format!(
            "empty_strided: sizes {sizes:?} and strides {strides:?} have different lengths"
        )));
    }
    let dtype = options.dtype_or_default();
    let device = options.device_or_default();
    if strides == contiguous_strides(sizes).as_slice() {
        return Ok(Tensor::from_base(TensorBase::empty(sizes, dtype, device)?));
    }
    if strides.iter().any(|&s| s < 0) {
        return Err(Error::runtime(format!(
            "empty_strided: negative strides {strides:?} are not supported"
        )));
    }
    let nbytes =
        compute_storage_nbytes(sizes, strides, dtype.element_size(), 0).ok_or_else(|| {
            Error::runtime(format!(
                "Storage size calculation overflowed with sizes={sizes:?} and strides={strides:?}"
            ))
        })?;
    let elems = (nbytes / dtype.element_size() as u64) as i64;
    let t = TensorBase::empty(&[elems], dtype, device)?;
    t.as_strided_(sizes, strides, Some(0))?;
    Ok(Tensor::from_base(t))
}

/// torchgen's `create_out`: an empty tensor (contiguous when `strides` is empty).
pub fn create_out(sizes: &[i64], strides: &[i64], options: TensorOptions) -> Result<Tensor> {
    if strides.is_empty() {
        // What empty_strided does for contiguous strides, without computing and comparing them.
        let (dtype, device) = (options.dtype_or_default(), options.device_or_default());
        return Ok(Tensor::from_base(TensorBase::empty(sizes, dtype, device)?));
    }
    empty_strided(sizes, strides, options)
}

/// The name `caffe2::TypeMeta` prints for a dtype (PyTorch's out=/in-place errors print it).
pub fn type_meta_name(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Byte => "unsigned char",
        ScalarType::Char => "signed char",
        ScalarType::Short => "short int",
        ScalarType::Int => "int",
        ScalarType::Long => "long int",
        ScalarType::Half => "c10::Half",
        ScalarType::Float => "float",
        ScalarType::Double => "double",
        ScalarType::ComplexHalf => "c10::complex<c10::Half>",
        ScalarType::ComplexFloat => "c10::complex<float>",
        ScalarType::ComplexDouble => "c10::complex<double>",
        ScalarType::Bool => "bool",
        ScalarType::BFloat16 => "c10::BFloat16",
        ScalarType::UInt16 => "unsigned short",
        ScalarType::UInt32 => "unsigned int",
        ScalarType::UInt64 => "unsigned long",
    }
}

/// torchgen's `check_inplace`, with PyTorch's messages.
pub fn check_inplace(self_: &Tensor, sizes: &[i64], options: TensorOptions) -> Result<()> {
    let dtype = options.dtype_or_default();
    let device = options.device_or_default();
    if dtype != self_.dtype() {
        return Err(Error::runtime(format!(
            "Bad in-place call: input tensor dtype {} and output tensor dtype {} should match",
            type_meta_name(self_.dtype()),
            type_meta_name(dtype)
        )));
    }
    if device != self_.device() {
        return Err(Error::runtime(format!(
            "Bad in-place call: input tensor device {} and output tensor device {} should match",
            self_.device(),
            device
        )));
    }
    // One snapshot read, the sizes compared in place (no copy, as in `resize_output_check`).
    if !self_.with_meta(|m| same_dims(m.sizes(), sizes)) {
        return Err(Error::runtime(format!(
            "Bad in-place call: input tensor size {:?} and output tensor size {:?} should match",
            self_.sizes().as_slice(),
            sizes
        )));
    }
    Ok(())
}

/// `at::native::resize_output_check`: whether `output` needs resizing to `shape`, warning
/// (PyTorch's deprecation text) when it had elements.
pub fn resize_output_check(output: &Tensor, shape: &[i64]) -> bool {
    // Every out= call asks: one snapshot read, the sizes compared in place (no copy, and no
    // memcmp call for a handful of dims).
    let numel_if_resized =
        output.with_meta(|m| (!same_dims(m.sizes(), shape)).then_some(m.numel()));
    let Some(numel) = numel_if_resized else {
        return false;
    };
    if numel != 0 {
        let sizes = output.sizes();
        warn(format!(
            "An output with one or more elements was resized since it had shape {:?}, which does not match the required output shape {:?}. This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
            sizes.as_slice(),
            shape
        ));
    }
    true
}

/// Runs `f` on `output` when it is contiguous, else on a contiguous temporary of its shape
/// and dtype copied into `output` afterwards: for kernels that write contiguous memory.
pub fn with_contiguous_output(
    output: &Tensor,
    f: impl FnOnce(&Tensor) -> Result<()>,
) -> Result<()> {
    if output.is_contiguous() {
        return f(output);
    }
    let tmp = Tensor::empty(output.sizes().as_slice(), (output.dtype(), output.device()))?;
    f(&tmp)?;
    output.copy_(&tmp)?;
    Ok(())
}

/// `at::native::resize_output`: resizes `output` to `shape` when it differs; whether it did.
pub fn resize_output(output: &Tensor, shape: &[i64]) -> Result<bool> {
    if resize_output_check(output, shape) {
        output.resize_(shape)?;
        return Ok(true);
    }
    Ok(false)
}

/// torchgen's `resize_out`: dtype and device must match; a resize restrides to `strides`.
pub fn resize_out(
    out: &Tensor,
    sizes: &[i64],
    strides: &[i64],
    options: TensorOptions,
) -> Result<()> {
    let dtype = options.dtype_or_default();
    let device = options.device_or_default();
    if dtype != out.dtype() {
        return Err(Error::runtime(format!(
            "Expected out tensor to have dtype {}, but got {} instead",
            type_meta_name(dtype),
            type_meta_name(out.dtype())
        )));
    }
    if device != out.device() {
        return Err(Error::runtime(format!(
            "Expected out tensor to have device {device}, but got {} instead",
            out.device()
        )));
    }
    // Only restride if a resize occurred; otherwise the strides from meta are advisory and the
    // output keeps its own (torchgen's comment).
    if resize_output(out, sizes)? && !strides.is_empty() {
        out.as_strided_(sizes, strides, None)?;
    }
    Ok(())
}

/// torchgen's `maybe_create_proxy`: a fresh tensor with the requested strides when `out` has
/// other strides.
pub fn maybe_create_proxy(
    out: &Tensor,
    sizes: &[i64],
    strides: &[i64],
    options: TensorOptions,
) -> Result<Option<Tensor>> {
    if !strides.is_empty() && out.with_meta(|m| m.strides() != strides) {
        return Ok(Some(empty_strided(sizes, strides, options)?));
    }
    Ok(None)
}

/// `dst.copy_(src)` for tensors of one dtype and one shape (proxy copy-back; generated out=
/// variants). Casting copies belong to the TensorIterator-based `copy_`.
pub fn copy_same_dtype(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.dtype() != src.dtype() || dst.sizes() != src.sizes() {
        return Err(Error::runtime(format!(
            "copy: expected a source of dtype {} and shape {:?}, got dtype {} and shape {:?}",
            dst.dtype(),
            dst.sizes().as_slice(),
            src.dtype(),
            src.sizes().as_slice()
        )));
    }
    if dst.device() != src.device() {
        return Err(Error::runtime(format!(
            "copy: expected a source on device {}, got {}",
            dst.device(),
            src.device()
        )));
    }
    if dst.is_meta() || dst.numel() == 0 || dst.is_same(src) {
        return Ok(());
    }
    let g = TensorAccess::new(&[src], &[dst])?;
    let (s, d) = (g.input(0)?, g.output(0)?);
    let (Some(sp), Some(dp)) = (s.raw_data_ptr(), d.raw_data_ptr()) else {
        return Ok(());
    };
    let sizes = s.sizes();
    let (ss, ds) = (s.strides(), d.strides());
    match dst.element_size() {
        1 => copy_words::<u8>(sp.as_ptr(), dp.as_ptr(), sizes, ss, ds),
        2 => copy_words::<u16>(sp.as_ptr(), dp.as_ptr(), sizes, ss, ds),
        4 => copy_words::<u32>(sp.as_ptr(), dp.as_ptr(), sizes, ss, ds),
        8 => copy_words::<u64>(sp.as_ptr(), dp.as_ptr(), sizes, ss, ds),
        _ => copy_words::<u128>(sp.as_ptr(), dp.as_ptr(), sizes, ss, ds),
    }
    Ok(())
}

/// Strided-to-strided element copy over `W`-sized words (dtype-agnostic).
fn copy_words<W: Copy>(src: *const u8, dst: *mut u8, sizes: &[i64], ss: &[i64], ds: &[i64]) {
    let n: i64 = sizes.iter().product();
    let ndim = sizes.len();
    let mut index = vec![0i64; ndim];
    let (mut so, mut dof): (isize, isize) = (0, 0);
    let (src, dst) = (src as *const W, dst as *mut W);
    for _ in 0..n {
        // SAFETY: `so`/`dof` are sum(index[d] * stride[d]) for an index inside `sizes`, i.e.
        // elements of the two views, which were bounds-checked against their storages when the
        // views were made; the caller's TensorAccess holds the source shared and the
        // destination exclusively. Unaligned accesses because W may be wider than the element
        // type's alignment.
        unsafe {
            let v = std::ptr::read_unaligned(src.offset(so));
            std::ptr::write_unaligned(dst.offset(dof), v);
        }
        for d in (0..ndim).rev() {
            index[d] += 1;
            so += ss[d] as isize;
            dof += ds[d] as isize;
            if index[d] < sizes[d] {
                break;
            }
            so -= (ss[d] * sizes[d]) as isize;
            dof -= (ds[d] * sizes[d]) as isize;
            index[d] = 0;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Boxing glue: how generated code passes ratten-aten's types through the dispatcher.

impl TensorLike for Tensor {
    #[inline]
    fn as_tensor_base(&self) -> &TensorBase {
        self.base()
    }
    #[inline]
    fn from_tensor_base(t: TensorBase) -> Self {
        Tensor::from_base(t)
    }
}

/// A schema argument type that ratten-dispatch has no `KernelValue` for (`Scalar`, `Scalar?`,
/// `ScalarType?`, `float?`, `bool?`). The orphan rule forbids implementing the foreign trait
/// for the foreign types, so generated typed signatures name `Arg<Scalar>` while kernels and
/// callers see the plain borrowed form (`&Scalar`, `Option<&Scalar>`, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct Arg<T>(pub T);

fn expected(what: &str, got: &IValue) -> Error {
    Error::runtime(format!("Expected {what} but got {}", got.tag_kind()))
}

fn scalar_to_ivalue(s: &Scalar) -> IValue {
    match *s {
        Scalar::Bool(b) => IValue::Bool(b),
        Scalar::Int(i) => IValue::Int(i),
        // As `KernelValue for Scalar`: the int64 of the same bits.
        Scalar::UInt64(u) => IValue::Int(u as i64),
        Scalar::Double(d) => IValue::Double(d),
        Scalar::ComplexDouble(z) => IValue::ComplexDouble(z),
    }
}

fn scalar_from_ivalue(v: IValue) -> Result<Scalar> {
    match v {
        IValue::Bool(b) => Ok(Scalar::Bool(b)),
        IValue::Int(i) => Ok(Scalar::Int(i)),
        IValue::Double(d) => Ok(Scalar::Double(d)),
        IValue::ComplexDouble(z) => Ok(Scalar::ComplexDouble(z)),
        other => Err(expected("Scalar", &other)),
    }
}

impl KernelValue for Arg<Scalar> {
    type Ref<'a> = &'a Scalar;
    fn schema_type() -> Type {
        Type::Scalar
    }
    fn ref_to_ivalue(r: &&Scalar) -> IValue {
        scalar_to_ivalue(r)
    }
    fn into_ivalue(self) -> IValue {
        scalar_to_ivalue(&self.0)
    }
    fn from_ivalue(v: IValue) -> Result<Self> {
        scalar_from_ivalue(v).map(Arg)
    }
    fn borrow(&self) -> &Scalar {
        &self.0
    }
}

impl KernelValue for Arg<Option<Scalar>> {
    type Ref<'a> = Option<&'a Scalar>;
    fn schema_type() -> Type {
        Type::optional(Type::Scalar)
    }
    fn ref_to_ivalue(r: &Option<&Scalar>) -> IValue {
        r.map_or(IValue::None, scalar_to_ivalue)
    }
    fn into_ivalue(self) -> IValue {
        self.0.as_ref().map_or(IValue::None, scalar_to_ivalue)
    }
    fn from_ivalue(v: IValue) -> Result<Self> {
        match v {
            IValue::None => Ok(Arg(None)),
            v => scalar_from_ivalue(v).map(|s| Arg(Some(s))),
        }
    }
    fn borrow(&self) -> Option<&Scalar> {
        self.0.as_ref()
    }
}

macro_rules! optional_copy_arg {
    ($t:ty, $schema:expr, $what:expr, $variant:ident) => {
        impl KernelValue for Arg<Option<$t>> {
            type Ref<'a> = Option<$t>;
            fn schema_type() -> Type {
                Type::optional($schema)
            }
            fn ref_to_ivalue(r: &Option<$t>) -> IValue {
                r.map_or(IValue::None, |x| <$t as KernelValue>::into_ivalue(x))
            }
            fn into_ivalue(self) -> IValue {
                Self::ref_to_ivalue(&self.0)
            }
            fn from_ivalue(v: IValue) -> Result<Self> {
                match v {
                    IValue::None => Ok(Arg(None)),
                    v @ IValue::$variant(_) => {
                        <$t as KernelValue>::from_ivalue(v).map(|x| Arg(Some(x)))
                    }
                    other => Err(expected($what, &other)),
                }
            }
            fn borrow(&self) -> Option<$t> {
                self.0
            }
        }
    };
}

optional_copy_arg!(ScalarType, Type::ScalarType, "ScalarType?", Int);
optional_copy_arg!(f64, Type::Float, "float?", Double);
optional_copy_arg!(bool, Type::Bool, "bool?", Bool);
optional_copy_arg!(Device, Type::Device, "Device?", Device);

#[cfg(test)]
mod tests {
    use super::*;

    fn t(sizes: &[i64], dtype: ScalarType) -> Tensor {
        Tensor::from_base(TensorBase::zeros(sizes, dtype, Device::CPU).unwrap())
    }

    #[test]
    fn functional_allocates_with_requested_strides() {
        let mut w = StructuredFunctional::<1>::new();
        assert!(w.maybe_get_output(0).is_none());
        w.set_output_raw_strided(0, &[2, 3], &[1, 2], ScalarType::Long.into())
            .unwrap();
        let o = w.take(0).unwrap();
        assert_eq!(
            (o.sizes().as_slice(), o.strides().as_slice()),
            (&[2i64, 3][..], &[1i64, 2][..])
        );
        assert_eq!(o.dtype(), ScalarType::Long);
        let err = StructuredFunctional::<1>::new().output(0).unwrap_err();
        assert!(err.message().contains("never set"), "{err}");
    }

    #[test]
    fn an_output_is_set_once() {
        // Note [Borrowed structured outputs]: a set output may be borrowed, so it is never
        // replaced.
        let w = StructuredFunctional::<1>::new();
        w.set_output_contiguous(0, &[2], ScalarType::Float.into())
            .unwrap();
        let first = w.output(0).unwrap().clone();
        let e = w
            .set_output_contiguous(0, &[3], ScalarType::Float.into())
            .unwrap_err();
        assert_eq!(
            e.message(),
            "structured kernel: output 0 was set twice (a meta sets each output once)"
        );
        assert!(w.output(0).unwrap().is_same(&first));
        // A proxy too.
        let out = t(&[2, 3], ScalarType::Float);
        let w = StructuredOut::new(&[&out]);
        w.set_output_strided(0, &[2, 3], &[1, 2], ScalarType::Float.into())
            .unwrap();
        let e = w
            .set_output_strided(0, &[2, 3], &[1, 2], ScalarType::Float.into())
            .unwrap_err();
        assert!(e.message().contains("set twice"), "{e}");
    }

    #[test]
    fn the_iterator_borrows_the_wrappers_outputs() {
        // The state a TensorIterator meta returns holds no reference to the outputs (PyTorch's
        // MaybeOwned::borrowed): only the wrapper (functional) or the caller (out=) does.
        let a = t(&[3], ScalarType::Float);
        let b = t(&[3], ScalarType::Float);
        let alpha = Scalar::from(1.0);
        let mut f = StructuredFunctional::<1>::new();
        {
            let it = crate::native::add_tensor_meta(&f, &a, &b, &alpha).unwrap();
            let out = f.output(0).unwrap();
            assert_eq!(out.use_count(), 1);
            assert!(it.output(0).unwrap().is_same(out));
        }
        assert_eq!(f.take(0).unwrap().use_count(), 1);
        let out = t(&[3], ScalarType::Float);
        let w = StructuredOut::new(&[&out]);
        let it = crate::native::add_tensor_meta(&w, &a, &b, &alpha).unwrap();
        assert_eq!(out.use_count(), 1);
        drop(it);
        // The plain TensorIterator owns what it creates (its sink dies with the build).
        let it = crate::tensor_iterator::TensorIterator::binary_op(None, &a, &b).unwrap();
        let made = it.output(0).unwrap();
        assert_eq!(made.use_count(), 2);
    }

    #[test]
    fn inplace_checks_dtype_and_size() {
        let s = t(&[3], ScalarType::Float);
        let w = StructuredInplace::new(&[&s]);
        let e = w
            .set_output_contiguous(0, &[2, 3], ScalarType::Float.into())
            .unwrap_err();
        assert_eq!(
            e.message(),
            "Bad in-place call: input tensor size [3] and output tensor size [2, 3] should match"
        );
        let e = w
            .set_output_contiguous(0, &[3], ScalarType::Long.into())
            .unwrap_err();
        assert_eq!(
            e.message(),
            "Bad in-place call: input tensor dtype float and output tensor dtype long int should match"
        );
        w.set_output_contiguous(0, &[3], ScalarType::Float.into())
            .unwrap();
        assert!(w.output(0).unwrap().is_same(&s));
    }

    #[test]
    fn out_resizes_with_the_deprecation_warning() {
        let out = t(&[2], ScalarType::Float);
        let w = StructuredOut::new(&[&out]);
        let (r, ws) =
            capture_warnings(|| w.set_output_contiguous(0, &[3], ScalarType::Float.into()));
        r.unwrap();
        assert_eq!(out.sizes().as_slice(), &[3]);
        assert_eq!(ws.len(), 1);
        assert!(ws[0].message.starts_with(
            "An output with one or more elements was resized since it had shape [2], which does not match the required output shape [3]. This behavior is deprecated"
        ));
        // A zero-element out is resized silently.
        let empty = t(&[0], ScalarType::Float);
        let (r, ws) = capture_warnings(|| resize_output(&empty, &[4]));
        assert!(r.unwrap());
        assert!(ws.is_empty());
        let e = StructuredOut::new(&[&out])
            .set_output_contiguous(0, &[3], ScalarType::Double.into())
            .unwrap_err();
        assert_eq!(
            e.message(),
            "Expected out tensor to have dtype double, but got float instead"
        );
    }

    #[test]
    fn out_with_other_strides_gets_a_proxy_copied_back() {
        let base = Tensor::from_base(TensorBase::from_slice(&[0i64; 6], &[3, 2]).unwrap());
        let out = Tensor::from_base(base.base().as_strided(&[2, 3], &[1, 2], None).unwrap());
        let mut w = StructuredOut::new(&[&out]);
        w.set_output_contiguous(0, &[2, 3], ScalarType::Long.into())
            .unwrap();
        let p = w.output(0).unwrap().clone();
        assert!(!p.is_same(&out));
        assert_eq!(p.strides().as_slice(), &[3, 1]);
        {
            let mut g = TensorAccess::write(&p).unwrap();
            g.output_slice_mut::<i64>(0)
                .unwrap()
                .copy_from_slice(&[1, 2, 3, 4, 5, 6]);
        }
        w.finish().unwrap();
        // out[i][j] lives at storage index i + 2j.
        assert_eq!(base.to_vec::<i64>().unwrap(), vec![1, 4, 2, 5, 3, 6]);
        // The raw-strided form never proxies.
        let w = StructuredOut::new(&[&out]);
        w.set_output_raw_strided(0, &[2, 3], &[3, 1], ScalarType::Long.into())
            .unwrap();
        assert!(w.output(0).unwrap().is_same(&out));
    }

    #[test]
    fn scalar_args_box_and_unbox() {
        let v = Arg(Scalar::Double(2.5)).into_ivalue();
        assert!(matches!(v, IValue::Double(x) if x == 2.5));
        assert_eq!(
            Arg::<Scalar>::from_ivalue(IValue::Int(3)).unwrap().0,
            Scalar::Int(3)
        );
        let e = Arg::<Scalar>::from_ivalue(IValue::None).unwrap_err();
        assert_eq!(e.message(), "Expected Scalar but got None");
        assert_eq!(
            Arg::<Option<ScalarType>>::from_ivalue(IValue::None)
                .unwrap()
                .0,
            None
        );
        assert_eq!(
            Arg::<Option<ScalarType>>::from_ivalue(IValue::Int(6))
                .unwrap()
                .0,
            Some(ScalarType::Float)
        );
    }
}
