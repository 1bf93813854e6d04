//! The Dispatcher (ATen/core/dispatch/Dispatcher.h, OperatorEntry.h): the operator table,
//! registration, the computed dispatch tables, calls and introspection.
//!
//! Note [Concurrency]
//! All registration runs under one dispatcher-wide mutex (as PyTorch's `guard_->mutex`).
//! Calls take no lock: each operator's dispatch table is an array of atomic pointers to
//! immutable `KernelFunction`s. A registration computes the new entries and stores each
//! pointer with release ordering; a call loads it with acquire ordering, so it sees either
//! the old kernel or the new one, never a torn one. A kernel that is deregistered may still be
//! running on another thread, so its `KernelFunction` is moved to a graveyard that is never
//! freed (registrations are few; this is PyTorch's LeftRight trade-off without the second
//! copy). Operator entries are leaked for the same reason: an `OperatorHandle` is a plain
//! `&'static` and an operator that disappears keeps its (empty) entry for a later `def`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Once};

use parking_lot::{Mutex, RwLock};
use ratten_core::dispatch_key::{NUM_BACKENDS, NUM_DISPATCH_KEYS, NUM_RUNTIME_ENTRIES};
use ratten_core::dispatch_key_set::{
    get_autograd_key_from_backend, get_backend_key_set_from_autograd,
    get_dispatch_table_index_for_dispatch_key, get_runtime_dispatch_key_set,
    is_backend_dispatch_key, is_included_in_alias, AFTER_AUTOGRAD_KEYSET, AUTOGRADOTHER_BACKENDS,
};
use ratten_core::local_dispatch_key_set::tls_local_dispatch_key_set;
use ratten_core::{BackendComponent, DispatchKey, DispatchKeySet, Error, Result};
use ratten_schema::{FunctionSchema, OperatorName};

use crate::ivalue::{KernelArgs, KernelReturn, Stack};
use crate::kernel_function::{
    clone_with_real_types, find_schema_differences, infer_function_schema, KernelFunction,
};
use crate::library::{CppFunction, Library, LibraryKind, StaticLibraryInit};

/// c10::AliasAnalysisKind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AliasAnalysisKind {
    InternalSpecialCase,
    Conservative,
    FromSchema,
    PureFunction,
}

impl AliasAnalysisKind {
    pub fn name(self) -> &'static str {
        match self {
            AliasAnalysisKind::InternalSpecialCase => "INTERNAL_SPECIAL_CASE",
            AliasAnalysisKind::Conservative => "CONSERVATIVE",
            AliasAnalysisKind::FromSchema => "FROM_SCHEMA",
            AliasAnalysisKind::PureFunction => "PURE_FUNCTION",
        }
    }
    /// `parseAliasAnalysisKind` of the Python bindings: `""` means FROM_SCHEMA.
    pub fn parse(s: &str) -> Result<AliasAnalysisKind> {
        match s {
            "CONSERVATIVE" => Ok(AliasAnalysisKind::Conservative),
            "FROM_SCHEMA" | "" => Ok(AliasAnalysisKind::FromSchema),
            "PURE_FUNCTION" => Ok(AliasAnalysisKind::PureFunction),
            "INTERNAL_SPECIAL_CASE" => Ok(AliasAnalysisKind::InternalSpecialCase),
            _ => Err(Error::runtime(format!(
                "Unknown alias analysis kind '{s}'; expected CONSERVATIVE, FROM_SCHEMA or PURE_FUNCTION"
            ))),
        }
    }
}

impl fmt::Display for AliasAnalysisKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `debugString(file, line)`: an explicit debug string wins, else `registered at file:line`.
pub fn debug_string(debug: &str, file: &str, line: u32) -> String {
    if debug.is_empty() {
        format!("registered at {file}:{line}")
    } else {
        debug.to_string()
    }
}

struct AnnotatedSchema {
    schema: FunctionSchema,
    debug: String,
    /// `None`: never set, printed as `CONSERVATIVE (default)`.
    alias: Option<AliasAnalysisKind>,
}

#[derive(Clone)]
struct AnnotatedKernel {
    id: u64,
    kernel: Arc<KernelFunction>,
    inferred: Option<FunctionSchema>,
    debug: String,
}

#[derive(Default)]
struct EntryState {
    schema: Option<AnnotatedSchema>,
    /// Kernels per DispatchKey value, newest first.
    kernels: Vec<Vec<AnnotatedKernel>>,
    /// The non-alias keys with kernels (few), so `hasKernelForAnyDispatchKey` is cheap.
    kernel_keys: Vec<DispatchKey>,
    def_count: usize,
    def_and_impl_count: usize,
}

/// OperatorEntry: one operator's canonical state and its computed dispatch table.
pub(crate) struct OperatorEntry {
    name: OperatorName,
    name_str: String,
    /// One slot per runtime key; never null (missing kernels point at MISSING).
    table: [AtomicPtr<KernelFunction>; NUM_RUNTIME_ENTRIES],
    /// DispatchKeyExtractor's `nonFallthroughKeys_`.
    non_fallthrough: AtomicU64,
    /// `nonFallthroughKeysPerBackend_`.
    non_fallthrough_per_backend: [AtomicU64; NUM_BACKENDS as usize],
    requires_per_backend: AtomicBool,
    /// What a typed call ANDs into its key set, by the set's highest backend component b:
    /// without the autograd bits while Autograd<b>'s and AutogradOther's slots are the
    /// framework's autograd fallback (or fallthroughs), else FULL. See Note [Typed calls skip
    /// the autograd fallback].
    typed_autograd_skip: [AtomicU64; NUM_BACKENDS as usize + 1],
    /// Number of schema arguments (for boxed key extraction); usize::MAX without a schema.
    num_args: AtomicUsize,
    state: Mutex<EntryState>,
}

static MISSING: LazyLock<Arc<KernelFunction>> =
    LazyLock::new(|| Arc::new(KernelFunction::missing()));

static AMBIGUOUS_AUTOGRADOTHER: LazyLock<Arc<KernelFunction>> = LazyLock::new(|| {
    Arc::new(KernelFunction::from_boxed(|op, _ks, _stack| {
        Err(Error::runtime(format!(
            "{} has kernels registered to both CompositeImplicitAutograd and a backend mapped to AutogradOther. \
This makes the backend kernel unreachable; the dispatcher will always prefer the CompositeImplicitAutograd lowering \
(see Note [Ambiguity in AutogradOther kernel]). If you want to override CompositeImplicitAutograd, please open an issue \
to request a dedicated Autograd dispatch key for the backend.\n\
If you only want to run inference instead of training, in C++, add `c10::InferenceMode mode;` before model.forward(). \
Note this guard is only available in C++ but not Python at present.\nCanonical state\n~~~~~~~~~~~\n{}\n\n",
            op.operator_name(),
            op.dump_state()
        )))
    }))
});

const AMBIGUOUS_DEBUG: &str = "ambiguous_autogradother";

/// What `computeDispatchTableEntryWithDebug` returns: kernel, debug, provenance.
struct Computed<'a> {
    kernel: &'a Arc<KernelFunction>,
    debug: &'a str,
    provenance: &'static str,
}

impl OperatorEntry {
    fn new(name: OperatorName) -> OperatorEntry {
        let missing = Arc::as_ptr(&MISSING) as *mut KernelFunction;
        OperatorEntry {
            name_str: name.to_string(),
            name,
            table: std::array::from_fn(|_| AtomicPtr::new(missing)),
            non_fallthrough: AtomicU64::new(DispatchKeySet::FULL.raw_repr()),
            non_fallthrough_per_backend: std::array::from_fn(|_| {
                AtomicU64::new(DispatchKeySet::FULL.raw_repr())
            }),
            requires_per_backend: AtomicBool::new(false),
            typed_autograd_skip: std::array::from_fn(|_| {
                AtomicU64::new(DispatchKeySet::FULL.raw_repr())
            }),
            num_args: AtomicUsize::new(usize::MAX),
            state: Mutex::new(EntryState {
                kernels: vec![Vec::new(); NUM_DISPATCH_KEYS],
                ..EntryState::default()
            }),
        }
    }

    /// `computeDispatchKeySet`: ((args' keys | TLS included) - TLS excluded) & the
    /// non-fallthrough mask.
    #[inline(always)]
    fn compute_dispatch_key_set(&self, ks: DispatchKeySet) -> DispatchKeySet {
        let tls = tls_local_dispatch_key_set();
        let base = (ks | tls.included) - tls.excluded;
        let mask = if self.requires_per_backend.load(Ordering::Relaxed) {
            let b = base.highest_backend_key() as usize;
            if b == 0 {
                self.non_fallthrough.load(Ordering::Relaxed)
            } else {
                self.non_fallthrough_per_backend[b - 1].load(Ordering::Relaxed)
            }
        } else {
            self.non_fallthrough.load(Ordering::Relaxed)
        };
        base & DispatchKeySet::from_raw(mask)
    }

    /// `lookup`: the table slot of the highest-priority key of `ks`.
    #[inline(always)]
    fn lookup(&self, ks: DispatchKeySet) -> &KernelFunction {
        let p = self.table[ks.get_dispatch_table_index()].load(Ordering::Acquire);
        // SAFETY: slots are never null and always point at a KernelFunction owned by an Arc
        // that is never dropped while the entry lives (kernel lists, fallbacks, the statics,
        // or the dispatcher's graveyard); entries are leaked, so the reference is valid.
        unsafe { &*p }
    }

    fn get_kernel(st: &EntryState, k: DispatchKey) -> Option<&AnnotatedKernel> {
        st.kernels[k as usize].first()
    }

    fn has_kernel_for_dispatch_key(st: &EntryState, k: DispatchKey) -> bool {
        !st.kernels[k as usize].is_empty()
    }

    fn has_kernel_for_any_dispatch_key(st: &EntryState, ks: DispatchKeySet) -> bool {
        st.kernel_keys.iter().any(|k| ks.has(*k))
    }

    /// `computeDispatchTableEntryWithDebug`: PyTorch's precedence, see
    /// dispatch_dump_format.md section 3.
    fn compute<'a>(st: &'a EntryState, ds: &'a DispatcherState, k: DispatchKey) -> Computed<'a> {
        use DispatchKey as K;
        let from = |a: &'a AnnotatedKernel, provenance| Computed {
            kernel: &a.kernel,
            debug: &a.debug,
            provenance,
        };
        // 1. Direct registration.
        if let Some(a) = Self::get_kernel(st, k) {
            return from(a, "kernel");
        }
        let undefined = k == K::Undefined;
        // 2.1 / 2.2: CompositeExplicitAutogradNonFunctional, CompositeExplicitAutograd.
        for alias in [
            K::CompositeExplicitAutogradNonFunctional,
            K::CompositeExplicitAutograd,
        ] {
            if undefined || is_included_in_alias(k, alias) {
                if let Some(a) = Self::get_kernel(st, alias) {
                    return from(a, "default backend kernel");
                }
            }
        }
        let has_backend_kernel =
            Self::has_kernel_for_any_dispatch_key(st, get_backend_key_set_from_autograd(k))
                || Self::has_kernel_for_dispatch_key(st, K::CompositeExplicitAutograd);
        // 2.3a: CompositeImplicitAutogradNestedTensor (never for Undefined).
        if !undefined && is_included_in_alias(k, K::CompositeImplicitAutogradNestedTensor) {
            if let Some(a) = Self::get_kernel(st, K::CompositeImplicitAutogradNestedTensor) {
                return from(a, "nested kernel");
            }
        }
        // 2.3: CompositeImplicitAutograd.
        if undefined || is_included_in_alias(k, K::CompositeImplicitAutograd) {
            if let Some(a) = Self::get_kernel(st, K::CompositeImplicitAutograd) {
                if k == K::AutogradOther
                    && Self::has_kernel_for_any_dispatch_key(st, AUTOGRADOTHER_BACKENDS)
                {
                    return Computed {
                        kernel: &AMBIGUOUS_AUTOGRADOTHER,
                        debug: AMBIGUOUS_DEBUG,
                        provenance: "ambiguous autogradother",
                    };
                } else if !has_backend_kernel {
                    return from(a, "math kernel");
                }
            }
        }
        // 2.4: Autograd.
        if is_included_in_alias(k, K::Autograd) {
            if let Some(a) = Self::get_kernel(st, K::Autograd) {
                return from(a, "autograd kernel");
            }
        }
        // 2.5: FuncTorchBatchedDecomposition.
        if is_included_in_alias(k, K::FuncTorchBatchedDecomposition) {
            if let Some(a) = Self::get_kernel(st, K::FuncTorchBatchedDecomposition) {
                return from(a, "batched kernel");
            }
        }
        // 3. Backend fallback.
        if let Some(ix) = get_dispatch_table_index_for_dispatch_key(k) {
            if let Some(a) = &ds.fallbacks[ix] {
                return from(a, "backend fallback");
            }
        }
        // 4. Missing.
        Computed {
            kernel: &MISSING,
            debug: "",
            provenance: "missing",
        }
    }

    /// `updateDispatchTableEntry_`.
    fn update_entry(&self, st: &EntryState, ds: &DispatcherState, k: DispatchKey) {
        let Some(ix) = get_dispatch_table_index_for_dispatch_key(k) else {
            return;
        };
        let c = Self::compute(st, ds, k);
        let fallthrough = c.kernel.is_fallthrough();
        self.table[ix].store(
            Arc::as_ptr(c.kernel) as *mut KernelFunction,
            Ordering::Release,
        );
        self.set_operator_has_fallthrough_for_key(k, fallthrough);
    }

    /// `DispatchKeyExtractor::setOperatorHasFallthroughForKey`.
    fn set_operator_has_fallthrough_for_key(&self, k: DispatchKey, has_fallthrough: bool) {
        let upd = |a: &AtomicU64| {
            let cur = DispatchKeySet::from_raw(a.load(Ordering::Relaxed));
            let new = if has_fallthrough {
                cur.remove(k)
            } else {
                cur.add(k)
            };
            a.store(new.raw_repr(), Ordering::Relaxed);
        };
        upd(&self.non_fallthrough);
        if k.to_functionality_key().is_per_backend_functionality_key() {
            let b = k.to_backend_component() as usize;
            if b == 0 {
                return;
            }
            upd(&self.non_fallthrough_per_backend[b - 1]);
            let first = self.non_fallthrough_per_backend[0].load(Ordering::Relaxed);
            let differs = self
                .non_fallthrough_per_backend
                .iter()
                .any(|a| a.load(Ordering::Relaxed) != first);
            self.requires_per_backend.store(differs, Ordering::Relaxed);
        } else {
            for a in &self.non_fallthrough_per_backend {
                upd(a);
            }
        }
    }

    /// `updateDispatchTable_`: exactly the entries a registration to `k` can affect.
    fn update_table(&self, st: &EntryState, ds: &DispatcherState, k: DispatchKey) {
        self.update_table_entries(st, ds, k);
        self.update_typed_autograd_skip();
    }

    /// The typed-call masks (Note [Typed calls skip the autograd fallback]) from the table as
    /// it is now: for the highest backend b, the autograd bits may be skipped only while
    /// Autograd<b>'s and AutogradOther's slots both redispatch exactly as the fallback does (a
    /// missing slot, an autograd kernel or a math kernel in either keeps the full path).
    fn update_typed_autograd_skip(&self) {
        let redispatches_below = |k: DispatchKey| {
            get_dispatch_table_index_for_dispatch_key(k).is_some_and(|ix| {
                // SAFETY: as in `lookup`: slots point at leaked, never-freed kernels.
                let f = unsafe { &*self.table[ix].load(Ordering::Acquire) };
                f.is_fallthrough() || f.typed_redispatch_mask() == Some(AFTER_AUTOGRAD_KEYSET)
            })
        };
        let other = redispatches_below(DispatchKey::AutogradOther);
        for (b, mask) in self.typed_autograd_skip.iter().enumerate() {
            let skip = other
                && BackendComponent::from_u8(b as u8)
                    .filter(|&c| c != BackendComponent::InvalidBit)
                    .is_some_and(|c| redispatches_below(get_autograd_key_from_backend(c)));
            let m = if skip {
                TYPED_AUTOGRAD_SKIP
            } else {
                DispatchKeySet::FULL.raw_repr()
            };
            mask.store(m, Ordering::Relaxed);
        }
    }

    fn update_table_entries(&self, st: &EntryState, ds: &DispatcherState, k: DispatchKey) {
        use DispatchKey as K;
        if k == K::Undefined {
            self.update_entry(st, ds, k);
            return;
        }
        for rk in get_runtime_dispatch_key_set(k) {
            self.update_entry(st, ds, rk);
        }
        if matches!(
            k,
            K::CompositeImplicitAutograd
                | K::CompositeExplicitAutograd
                | K::CompositeExplicitAutogradNonFunctional
        ) {
            self.update_entry(st, ds, K::Undefined);
        }
        if is_backend_dispatch_key(k) {
            self.update_entry(
                st,
                ds,
                get_autograd_key_from_backend(k.to_backend_component()),
            );
        }
        // Note [Refresh AutogradOther and AutogradNestedTensor]
        // AutogradOther's entry depends on kernels for any key in autogradother_backends (the
        // ambiguity check and has_backend_kernel), AutogradNestedTensor's on NestedTensor*
        // kernels; PyTorch refreshes only the backend's own autograd key (AutogradCPU for
        // QuantizedCPU), which leaves these two stale until another registration touches them
        // (its invariant check does not notice because the test kernels share one function).
        if !k.is_alias() && AUTOGRADOTHER_BACKENDS.has(k) {
            self.update_entry(st, ds, K::AutogradOther);
        }
        if k.to_functionality_key() == K::NestedTensor {
            self.update_entry(st, ds, K::AutogradNestedTensor);
        }
        // has_backend_kernel is also true when a CompositeExplicitAutograd kernel exists, which
        // changes the choice of the math kernel for every key CompositeImplicitAutograd covers
        // (autograd keys, and NestedTensor* which CompositeExplicitAutograd does not cover).
        if k == K::CompositeExplicitAutograd {
            for ak in get_runtime_dispatch_key_set(K::CompositeImplicitAutograd) {
                self.update_entry(st, ds, ak);
            }
        }
    }

    /// `updateDispatchTableFull_`.
    fn update_table_full(&self, st: &EntryState, ds: &DispatcherState) {
        self.update_table(st, ds, DispatchKey::Undefined);
        for k in DispatchKeySet::FULL {
            self.update_table(st, ds, k);
        }
    }

    fn dump_state(st: &EntryState, name: &OperatorName) -> String {
        let mut s = format!("name: {name}\n");
        match &st.schema {
            Some(a) => {
                s += &format!("schema: {}\n", a.schema);
                s += &format!("debug: {}\n", a.debug);
                match a.alias {
                    Some(k) => s += &format!("alias analysis kind: {k}\n"),
                    None => s += "alias analysis kind: CONSERVATIVE (default)\n",
                }
            }
            None => s += "schema: (none)\n",
        }
        for k in DispatchKey::all() {
            for (i, a) in st.kernels[k as usize].iter().enumerate() {
                s += &format!(
                    "{}{}{}: {} :: {} [ {}]\n",
                    k,
                    if k.is_alias() { "[alias]" } else { "" },
                    if i > 0 { " (inactive)" } else { "" },
                    a.debug,
                    a.inferred
                        .as_ref()
                        .map_or("(none)".to_string(), |s| s.to_string()),
                    a.kernel.dump_state()
                );
            }
        }
        s
    }

    fn dump_computed_table(st: &EntryState, ds: &DispatcherState) -> String {
        let mut s = String::new();
        for k in std::iter::once(DispatchKey::Undefined).chain(DispatchKeySet::FULL) {
            let c = Self::compute(st, ds, k);
            if c.kernel.is_valid() {
                s += &format!(
                    "{}: {}{} [{}]\n",
                    k,
                    if c.kernel.is_fallthrough() {
                        "fallthrough "
                    } else {
                        ""
                    },
                    c.debug,
                    c.provenance
                );
            }
        }
        s
    }

    fn list_all_dispatch_keys(&self) -> String {
        let keys: Vec<String> = DispatchKeySet::FULL
            .iter()
            .filter(|k| {
                get_dispatch_table_index_for_dispatch_key(*k).is_some_and(|ix| {
                    // SAFETY: see `lookup`.
                    unsafe { &*self.table[ix].load(Ordering::Acquire) }.is_valid()
                })
            })
            .map(|k| k.to_string())
            .collect();
        format!("[{}]", keys.join(", "))
    }
}

struct DispatcherState {
    /// Backend fallbacks by runtime table index.
    fallbacks: Vec<Option<AnnotatedKernel>>,
    /// TORCH_LIBRARY namespaces and where they were registered.
    libraries: HashMap<String, String>,
    /// Kernels no longer referenced by registrations but possibly still running.
    graveyard: Vec<Arc<KernelFunction>>,
    next_id: u64,
    warned_override: bool,
}

/// The dispatcher singleton.
pub struct Dispatcher {
    guard: Mutex<DispatcherState>,
    operators: RwLock<HashMap<OperatorName, &'static OperatorEntry>>,
}

static DISPATCHER: LazyLock<Dispatcher> = LazyLock::new(|| {
    if let Ok(v) = std::env::var("RATTEN_SHOW_DISPATCH_TRACE") {
        SHOW_DISPATCH_TRACE.store(!v.is_empty() && v != "0", Ordering::Relaxed);
    }
    Dispatcher {
        guard: Mutex::new(DispatcherState {
            fallbacks: vec![None; NUM_RUNTIME_ENTRIES],
            libraries: HashMap::new(),
            graveyard: Vec::new(),
            next_id: 0,
            warned_override: false,
        }),
        operators: RwLock::new(HashMap::new()),
    }
});

static STATIC_INIT: Once = Once::new();
thread_local! {
    static IN_STATIC_INIT: Cell<bool> = const { Cell::new(false) };
}
/// Libraries created by static registration live for the whole process.
static STATIC_LIBRARIES: Mutex<Vec<Library>> = Mutex::new(Vec::new());
static STATIC_ERRORS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// RAII handle of one registration; dropping it undoes the registration.
#[must_use = "dropping the handle undoes the registration"]
pub struct RegistrationHandle {
    undo: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl RegistrationHandle {
    fn new(undo: impl FnOnce() + Send + Sync + 'static) -> Self {
        RegistrationHandle {
            undo: Some(Box::new(undo)),
        }
    }
}

impl Drop for RegistrationHandle {
    fn drop(&mut self) {
        if let Some(f) = self.undo.take() {
            f();
        }
    }
}

impl fmt::Debug for RegistrationHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RegistrationHandle")
    }
}

fn check_schema(
    name: &OperatorName,
    from_def: &FunctionSchema,
    from_def_debug: &str,
    inferred: &FunctionSchema,
    inferred_debug: &str,
) -> Result<()> {
    let from_def = clone_with_real_types(from_def);
    let inferred = clone_with_real_types(inferred);
    match find_schema_differences(&from_def, &inferred) {
        None => Ok(()),
        Some(reason) => Err(Error::runtime(format!(
            "Inferred operator schema for a C++ kernel function doesn't match the expected function schema.\n  operator: {name}\n  expected schema: {from_def}\n    {from_def_debug}\n  inferred schema: {inferred}\n    {inferred_debug}\n  reason: {reason}"
        ))),
    }
}

impl Dispatcher {
    /// The process-wide dispatcher. The first call runs every static registration
    /// (`torch_library!` and friends) before returning.
    pub fn singleton() -> &'static Dispatcher {
        let d: &'static Dispatcher = &DISPATCHER;
        if !STATIC_INIT.is_completed() && !IN_STATIC_INIT.with(|c| c.get()) {
            STATIC_INIT.call_once(|| {
                IN_STATIC_INIT.with(|c| c.set(true));
                run_static_registrations(d);
                IN_STATIC_INIT.with(|c| c.set(false));
            });
        }
        d
    }

    /// Errors raised by static registrations (they cannot be returned to anyone).
    pub fn static_registration_errors(&self) -> Vec<String> {
        STATIC_ERRORS.lock().clone()
    }

    fn find_or_register_name(
        &self,
        name: &OperatorName,
        ds: &DispatcherState,
    ) -> &'static OperatorEntry {
        if let Some(e) = self.operators.read().get(name) {
            return e;
        }
        let mut ops = self.operators.write();
        if let Some(e) = ops.get(name) {
            return e;
        }
        let entry: &'static OperatorEntry = Box::leak(Box::new(OperatorEntry::new(name.clone())));
        {
            let st = entry.state.lock();
            entry.update_table_full(&st, ds);
        }
        ops.insert(name.clone(), entry);
        entry
    }

    /// `findOp`: the operator if it has a definition or any kernel.
    pub fn find_op(&self, name: &OperatorName) -> Option<OperatorHandle> {
        let e = *self.operators.read().get(name)?;
        (e.state.lock().def_and_impl_count > 0).then_some(OperatorHandle { entry: e })
    }

    /// `findSchema`: the operator if it has a definition.
    pub fn find_schema(&self, name: &OperatorName) -> Option<OperatorHandle> {
        let e = *self.operators.read().get(name)?;
        e.state
            .lock()
            .schema
            .is_some()
            .then_some(OperatorHandle { entry: e })
    }

    /// `findSchemaOrThrow(name, overload)`.
    pub fn find_schema_or_throw(&self, name: &str, overload: &str) -> Result<OperatorHandle> {
        let on = OperatorName::new(name, overload);
        match self.find_schema(&on) {
            Some(h) => Ok(h),
            None => {
                if self.find_op(&on).is_some() {
                    Err(Error::runtime(format!(
                        "Could not find schema for {name}.{overload} but we found an implementation; did you forget to def() the operator?"
                    )))
                } else {
                    Err(Error::runtime(format!(
                        "Could not find schema for {name}.{overload}"
                    )))
                }
            }
        }
    }

    /// `getAllOpNames`: every operator with a definition or a kernel, sorted.
    pub fn get_all_op_names(&self) -> Vec<OperatorName> {
        let mut v: Vec<OperatorName> = self
            .operators
            .read()
            .iter()
            .filter(|(_, e)| e.state.lock().def_and_impl_count > 0)
            .map(|(n, _)| n.clone())
            .collect();
        v.sort();
        v
    }

    /// `getRegistrationsForDispatchKey`: operators with a kernel registered directly to `k`
    /// (all operators for `None`), as `ns::name.overload`, sorted.
    pub fn get_registrations_for_dispatch_key(&self, k: Option<DispatchKey>) -> Vec<String> {
        let mut v: Vec<String> = self
            .operators
            .read()
            .iter()
            .filter(|(_, e)| {
                let st = e.state.lock();
                st.def_and_impl_count > 0
                    && k.is_none_or(|k| OperatorEntry::has_kernel_for_dispatch_key(&st, k))
            })
            .map(|(n, _)| n.to_string())
            .collect();
        v.sort();
        v
    }

    /// `findDanglingImpls`: operators with kernels but no definition.
    pub fn find_dangling_impls(&self) -> Vec<OperatorHandle> {
        let mut v: Vec<OperatorHandle> = self
            .operators
            .read()
            .values()
            .filter(|e| {
                let st = e.state.lock();
                st.def_and_impl_count > 0 && st.schema.is_none()
            })
            .map(|e| OperatorHandle { entry: e })
            .collect();
        v.sort_by(|a, b| a.entry.name.cmp(&b.entry.name));
        v
    }

    /// `registerLibrary`: claims a namespace for one TORCH_LIBRARY block.
    pub fn register_library(&'static self, ns: &str, debug: String) -> Result<RegistrationHandle> {
        let mut ds = self.guard.lock();
        if let Some(prev) = ds.libraries.get(ns) {
            return Err(Error::runtime(format!(
                "Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please put all of your definitions in a single TORCH_LIBRARY block.  If you were trying to specify implementations, consider using TORCH_LIBRARY_IMPL (which can be duplicated).  If you really intended to define operators for a single namespace in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to explicitly indicate this.  Previous registration of TORCH_LIBRARY was {prev}; latest registration was {debug}"
            )));
        }
        ds.libraries.insert(ns.to_string(), debug);
        let ns = ns.to_string();
        Ok(RegistrationHandle::new(move || {
            self.guard.lock().libraries.remove(&ns);
        }))
    }

    /// `registerDef`: defines an operator's schema.
    pub fn register_def(
        &'static self,
        schema: FunctionSchema,
        debug: String,
        alias: Option<AliasAnalysisKind>,
    ) -> Result<RegistrationHandle> {
        let ds = self.guard.lock();
        let entry = self.find_or_register_name(&schema.name, &ds);
        let mut st = entry.state.lock();
        if st.def_count > 0 {
            let orig = st.schema.as_ref().map_or("", |s| s.debug.as_str());
            return Err(Error::runtime(format!(
                "Tried to register an operator ({schema}) with the same name and overload name multiple times. Each overload's schema should only be registered with a single call to def(). Duplicate registration: {debug}. Original registration: {orig}"
            )));
        }
        for list in &st.kernels {
            for k in list {
                if let Some(inf) = &k.inferred {
                    check_schema(&entry.name, &schema, &debug, inf, &k.debug)?;
                }
            }
        }
        entry
            .num_args
            .store(schema.arguments.len(), Ordering::Relaxed);
        st.schema = Some(AnnotatedSchema {
            schema,
            debug,
            alias,
        });
        st.def_count += 1;
        st.def_and_impl_count += 1;
        Ok(RegistrationHandle::new(move || {
            let _ds = self.guard.lock();
            let mut st = entry.state.lock();
            st.def_count -= 1;
            st.def_and_impl_count -= 1;
            if st.def_count == 0 {
                st.schema = None;
                entry.num_args.store(usize::MAX, Ordering::Relaxed);
            }
        }))
    }

    /// `registerImpl`: adds a kernel for `key` (`None`: catch-all, stored under
    /// CompositeImplicitAutograd).
    pub fn register_impl(
        &'static self,
        name: OperatorName,
        key: Option<DispatchKey>,
        kernel: KernelFunction,
        inferred: Option<FunctionSchema>,
        debug: String,
    ) -> Result<RegistrationHandle> {
        let mut ds = self.guard.lock();
        let entry = self.find_or_register_name(&name, &ds);
        let mut st = entry.state.lock();
        if let (Some(s), Some(inf)) = (&st.schema, &inferred) {
            check_schema(&entry.name, &s.schema, &s.debug, inf, &debug)?;
        }
        let dk = key.unwrap_or(DispatchKey::CompositeImplicitAutograd);
        if !st.kernels[dk as usize].is_empty()
            && !matches!(key, Some(DispatchKey::Meta) | Some(DispatchKey::MTIA))
            && !ds.warned_override
        {
            ds.warned_override = true;
            let (op, op_debug) = match &st.schema {
                Some(s) => (s.schema.to_string(), s.debug.clone()),
                None => (entry.name.to_string(), "no debug info".to_string()),
            };
            eprintln!(
                "Warning: Warning only once for all operators,  other operators may also be overridden.\n  Overriding a previously registered kernel for the same operator and the same dispatch key\n  operator: {op}\n    {op_debug}\n  dispatch key: {}\n  previous kernel: {}\n       new kernel: {debug}",
                key.map_or("(catch all)".to_string(), |k| k.to_string()),
                st.kernels[dk as usize][0].debug
            );
        }
        let id = ds.next_id;
        ds.next_id += 1;
        if st.kernels[dk as usize].is_empty() && !dk.is_alias() {
            st.kernel_keys.push(dk);
        }
        st.kernels[dk as usize].insert(
            0,
            AnnotatedKernel {
                id,
                kernel: Arc::new(kernel),
                inferred,
                debug,
            },
        );
        match key {
            Some(k) => entry.update_table(&st, &ds, k),
            None => entry.update_table_full(&st, &ds),
        }
        st.def_and_impl_count += 1;
        Ok(RegistrationHandle::new(move || {
            let mut ds = self.guard.lock();
            let mut st = entry.state.lock();
            let list = &mut st.kernels[dk as usize];
            if let Some(pos) = list.iter().position(|a| a.id == id) {
                let removed = list.remove(pos);
                let now_empty = list.is_empty();
                ds.graveyard.push(removed.kernel);
                if now_empty {
                    st.kernel_keys.retain(|k| *k != dk);
                }
            }
            entry.update_table(&st, &ds, dk);
            st.def_and_impl_count -= 1;
        }))
    }

    /// `registerFallback`: one boxed kernel for a whole runtime key, for every operator.
    pub fn register_fallback(
        &'static self,
        key: DispatchKey,
        kernel: KernelFunction,
        debug: String,
    ) -> Result<RegistrationHandle> {
        let Some(ix) = get_dispatch_table_index_for_dispatch_key(key) else {
            return Err(Error::runtime(format!(
                "Tried to register a backend fallback for {key}, which is not a runtime dispatch key (alias keys are expanded by Library::fallback)"
            )));
        };
        let mut ds = self.guard.lock();
        if let Some(prev) = &ds.fallbacks[ix] {
            return Err(Error::runtime(format!(
                "Tried to register multiple backend fallbacks for the same dispatch key {key}; previous registration {}, new registration {debug}",
                prev.debug
            )));
        }
        let id = ds.next_id;
        ds.next_id += 1;
        ds.fallbacks[ix] = Some(AnnotatedKernel {
            id,
            kernel: Arc::new(kernel),
            inferred: None,
            debug,
        });
        self.update_fallback_everywhere(&ds, key);
        Ok(RegistrationHandle::new(move || {
            let mut ds = self.guard.lock();
            if let Some(old) = ds.fallbacks[ix].take() {
                ds.graveyard.push(old.kernel);
            }
            self.update_fallback_everywhere(&ds, key);
        }))
    }

    fn update_fallback_everywhere(&self, ds: &DispatcherState, key: DispatchKey) {
        for e in self.operators.read().values() {
            let st = e.state.lock();
            e.update_table(&st, ds, key);
        }
    }

    /// `torch._C._dispatch_dump(name)`: `dumpState()` of `ns::op[.overload]`, "" if absent.
    pub fn dump_state_by_name(&self, name: &str) -> Result<String> {
        Ok(self
            .find_op(&parse_operator_name(name)?)
            .map_or(String::new(), |h| h.dump_state()))
    }

    /// `torch._C._dispatch_dump_table(name)`: `dumpComputedTable()`, "" if absent.
    pub fn dump_table_by_name(&self, name: &str) -> Result<String> {
        Ok(self
            .find_op(&parse_operator_name(name)?)
            .map_or(String::new(), |h| h.dump_computed_table()))
    }

    /// `torch._C._dispatch_check_invariants(name)`.
    pub fn check_invariants_by_name(&self, name: &str) -> Result<()> {
        match self.find_op(&parse_operator_name(name)?) {
            Some(h) => h.check_invariants(),
            None => Ok(()),
        }
    }

    /// `torch._C._dispatch_print_registrations_for_dispatch_key(key="")`: one operator
    /// name per line.
    pub fn registrations_for_dispatch_key_str(&self, key: &str) -> Result<String> {
        let k = if key.is_empty() {
            None
        } else {
            Some(DispatchKey::parse(key)?)
        };
        Ok(self
            .get_registrations_for_dispatch_key(k)
            .into_iter()
            .map(|n| n + "\n")
            .collect())
    }

    /// `_dispatch_check_all_invariants`.
    pub fn check_all_invariants(&self) -> Result<()> {
        let ops: Vec<&'static OperatorEntry> = self.operators.read().values().copied().collect();
        for e in ops {
            OperatorHandle { entry: e }.check_invariants()?;
        }
        Ok(())
    }
}

fn run_static_registrations(d: &'static Dispatcher) {
    for init in inventory::iter::<StaticLibraryInit> {
        let lib = Library::new_in(
            d,
            init.kind,
            init.ns,
            init.dispatch_key,
            init.file,
            init.line,
        );
        let result = lib.and_then(|mut lib| {
            (init.init)(&mut lib)?;
            Ok(lib)
        });
        match result {
            Ok(lib) => STATIC_LIBRARIES.lock().push(lib),
            Err(e) => {
                let msg = format!(
                    "static registration {} ({}) at {}:{} failed: {e}",
                    init.kind, init.ns, init.file, init.line
                );
                eprintln!("ratten: {msg}");
                STATIC_ERRORS.lock().push(msg);
            }
        }
    }
}

/// A handle to an operator (`c10::OperatorHandle`): cheap to copy, valid forever.
#[derive(Clone, Copy)]
pub struct OperatorHandle {
    entry: &'static OperatorEntry,
}

impl fmt::Debug for OperatorHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OperatorHandle({})", self.entry.name_str)
    }
}

impl PartialEq for OperatorHandle {
    fn eq(&self, o: &Self) -> bool {
        std::ptr::eq(self.entry, o.entry)
    }
}

impl OperatorHandle {
    pub fn operator_name(&self) -> &OperatorName {
        &self.entry.name
    }
    pub fn has_schema(&self) -> bool {
        self.entry.state.lock().schema.is_some()
    }
    pub fn schema(&self) -> Option<FunctionSchema> {
        self.entry
            .state
            .lock()
            .schema
            .as_ref()
            .map(|s| s.schema.clone())
    }
    /// The debug string of the definition.
    pub fn debug(&self) -> Option<String> {
        self.entry
            .state
            .lock()
            .schema
            .as_ref()
            .map(|s| s.debug.clone())
    }
    pub fn alias_analysis(&self) -> Option<AliasAnalysisKind> {
        let st = self.entry.state.lock();
        st.schema
            .as_ref()
            .map(|s| s.alias.unwrap_or(AliasAnalysisKind::Conservative))
    }
    /// `hasKernelForDispatchKey`: a kernel registered directly to `k` (alias keys included).
    pub fn has_kernel_for_dispatch_key(&self, k: DispatchKey) -> bool {
        OperatorEntry::has_kernel_for_dispatch_key(&self.entry.state.lock(), k)
    }
    /// Whether typed calls skip the autograd keys (every autograd slot is the framework's
    /// autograd fallback or a fallthrough; Note [Typed calls skip the autograd fallback]).
    /// For tensors of backend `b` (its highest backend component).
    pub fn typed_call_skips_autograd(&self, b: BackendComponent) -> bool {
        self.entry.typed_autograd_skip[b as usize].load(Ordering::Relaxed)
            != DispatchKeySet::FULL.raw_repr()
    }
    /// `hasComputedKernelForDispatchKey`: whether the runtime table has a kernel for `k`.
    pub fn has_computed_kernel_for_dispatch_key(&self, k: DispatchKey) -> Result<bool> {
        if k.is_alias() {
            return Err(Error::runtime(
                "Alias keys do not have runtime kernel registrations.",
            ));
        }
        let ix = get_dispatch_table_index_for_dispatch_key(k)
            .ok_or_else(|| Error::runtime(format!("{k} is not a runtime dispatch key")))?;
        // SAFETY: see `OperatorEntry::lookup`.
        Ok(unsafe { &*self.entry.table[ix].load(Ordering::Acquire) }.is_valid())
    }

    /// `dumpState()`: the canonical state, PyTorch's exact text.
    pub fn dump_state(&self) -> String {
        OperatorEntry::dump_state(&self.entry.state.lock(), &self.entry.name)
    }

    /// `dumpComputedTable()`: the runtime table with provenance, PyTorch's exact text.
    pub fn dump_computed_table(&self) -> String {
        let ds = Dispatcher::singleton().guard.lock();
        let st = self.entry.state.lock();
        OperatorEntry::dump_computed_table(&st, &ds)
    }

    /// `listAllDispatchKeys()`: `[CPU, AutogradCPU, ...]`.
    pub fn list_all_dispatch_keys(&self) -> String {
        self.entry.list_all_dispatch_keys()
    }

    /// `checkInvariants()`: the stored table equals what the state computes.
    pub fn check_invariants(&self) -> Result<()> {
        let ds = Dispatcher::singleton().guard.lock();
        let st = self.entry.state.lock();
        if let Some(s) = &st.schema {
            if s.schema.name != self.entry.name {
                return Err(Error::runtime(OperatorEntry::dump_state(
                    &st,
                    &self.entry.name,
                )));
            }
        }
        for k in std::iter::once(DispatchKey::Undefined).chain(DispatchKeySet::FULL) {
            let Some(ix) = get_dispatch_table_index_for_dispatch_key(k) else {
                continue;
            };
            let expected = OperatorEntry::compute(&st, &ds, k);
            let actual = self.entry.table[ix].load(Ordering::Acquire);
            // SAFETY: see `OperatorEntry::lookup`.
            let same = std::ptr::eq(Arc::as_ptr(expected.kernel), actual)
                || expected.kernel.same_as(unsafe { &*actual });
            if !same {
                return Err(Error::runtime(format!(
                    "Canonical state\n~~~~~~~~~~~\n{}\n\nComputed table:\n~~~~~~~~~~~\n{}\nStale entry: {k} holds {}",
                    OperatorEntry::dump_state(&st, &self.entry.name),
                    OperatorEntry::dump_computed_table(&st, &ds),
                    // SAFETY: see `OperatorEntry::lookup`.
                    Self::describe_kernel(&st, &ds, unsafe { &*actual })
                )));
            }
        }
        Ok(())
    }

    fn describe_kernel(st: &EntryState, ds: &DispatcherState, k: &KernelFunction) -> String {
        let all = st
            .kernels
            .iter()
            .flatten()
            .chain(ds.fallbacks.iter().flatten());
        for a in all {
            if std::ptr::eq(Arc::as_ptr(&a.kernel), k) {
                return a.debug.clone();
            }
        }
        if k.is_valid() {
            "an unregistered kernel".into()
        } else {
            "missing".into()
        }
    }

    /// `reportError`: PyTorch's missing-kernel error for a call that reached key `k`.
    pub fn report_error(&self, k: DispatchKey) -> Error {
        let name = &self.entry.name_str;
        let keys = self.entry.list_all_dispatch_keys();
        let table = self.dump_computed_table();
        if k == DispatchKey::Undefined {
            return Error::not_implemented(format!(
                "There were no tensor arguments to this function (e.g., you passed an empty list of Tensors), but no fallback function is registered for schema {name}.  This usually means that this function requires a non-empty list of Tensors, or that you (the operator writer) forgot to register a fallback function.  Available functions are {keys}.\n\n{table}"
            ));
        }
        Error::not_implemented(format!(
            "Could not run '{name}' with arguments from the '{k}' backend. This could be because the operator doesn't exist for this backend, or was omitted during the selective/custom build process (if using custom build). If you are a Facebook employee using PyTorch on mobile, please visit https://fburl.com/ptmfixes for possible resolutions. '{name}' is only available for these backends: {keys}.\n\n{table}"
        ))
    }

    /// `callBoxed`: computes the key set from the tensors among the schema's arguments on the
    /// stack, and calls that kernel.
    pub fn call_boxed(&self, stack: &mut Stack) -> Result<()> {
        let e = self.entry;
        let n = e.num_args.load(Ordering::Relaxed).min(stack.len());
        let args_ks = stack[stack.len() - n..]
            .iter()
            .fold(DispatchKeySet::empty(), |a, v| a | v.key_set());
        let ks = e.compute_dispatch_key_set(args_ks);
        let kernel = e.lookup(ks);
        if SHOW_DISPATCH_TRACE.load(Ordering::Relaxed) {
            let _g = TraceGuard::enter("[callBoxed]", &e.name_str, ks);
            return kernel.call_boxed(self, ks, stack);
        }
        kernel.call_boxed(self, ks, stack)
    }

    /// The kernel in the table slot of the highest key of `ks`.
    #[inline(always)]
    pub(crate) fn lookup_kernel(&self, ks: DispatchKeySet) -> &KernelFunction {
        self.entry.lookup(ks)
    }

    /// `redispatchBoxed`: calls the kernel for the highest key of `ks` as given (no TLS,
    /// no mask): the caller has removed the keys it handled.
    pub fn redispatch_boxed(&self, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
        let e = self.entry;
        let kernel = e.lookup(ks);
        if SHOW_DISPATCH_TRACE.load(Ordering::Relaxed) {
            let _g = TraceGuard::enter("[redispatchBoxed]", &e.name_str, ks);
            return kernel.call_boxed(self, ks, stack);
        }
        kernel.call_boxed(self, ks, stack)
    }

    /// `typed<R(Args...)>()`: a handle for typed calls with argument types `A` (a tuple) and
    /// return `R`. Checked against the definition when there is one.
    pub fn typed<A: KernelArgs, R: KernelReturn>(&self) -> Result<TypedOperatorHandle<A, R>> {
        if let Some(s) = &self.entry.state.lock().schema {
            let inferred = infer_function_schema::<A, R>();
            if let Some(reason) = find_schema_differences(&s.schema, &inferred) {
                return Err(Error::runtime(format!(
                    "\nTried to access or call an operator with a wrong signature.\n  operator: {}\n    {}\n  accessed/called as: {inferred}\n  reason: {reason}",
                    s.schema, s.debug
                )));
            }
            if let Some(k) = R::ALIASED_ARG {
                check_aliased_return(&s.schema, k)?;
            }
        }
        Ok(TypedOperatorHandle {
            op: *self,
            _sig: PhantomData,
        })
    }
}

/// A typed call returning [`Aliased<k>`](crate::ivalue::Aliased) gives back argument `k`
/// instead of the kernel's return: that is only the same thing when the schema says so, with
/// one return written through the same alias set as argument `k` (`Tensor(a!) out) ->
/// Tensor(a!)`).
fn check_aliased_return(schema: &FunctionSchema, k: usize) -> Result<()> {
    let written = |a: Option<&ratten_schema::AliasInfo>| {
        a.filter(|a| a.is_write)
            .and_then(|a| a.before_sets.first().cloned())
    };
    let ret = schema
        .returns
        .first()
        .and_then(|r| written(r.alias_info.as_ref()));
    let arg = schema
        .arguments
        .get(k)
        .and_then(|a| written(a.alias_info.as_ref()));
    if schema.returns.len() == 1 && ret.is_some() && ret == arg {
        return Ok(());
    }
    Err(Error::runtime(format!(
        "\nTried to access or call an operator with a wrong signature.\n  operator: {schema}\n  reason: the call returns argument {k} itself (Aliased<{k}>), but the schema's return is not that argument, written"
    )))
}

/// A handle for typed calls: `A` is the tuple of argument types (`(TensorBase, TensorBase)`),
/// `R` the return; calls take `A`'s borrowed forms (`(&a, &b)`).
pub struct TypedOperatorHandle<A, R> {
    op: OperatorHandle,
    _sig: PhantomData<fn(A) -> R>,
}

impl<A, R> Clone for TypedOperatorHandle<A, R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A, R> Copy for TypedOperatorHandle<A, R> {}

impl<A, R> fmt::Debug for TypedOperatorHandle<A, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TypedOperatorHandle({})", self.op.entry.name_str)
    }
}

impl<A: KernelArgs, R: KernelReturn> TypedOperatorHandle<A, R> {
    /// Finds `name.overload` and checks its schema against `(A, R)`.
    pub fn find(name: &str, overload: &str) -> Result<Self> {
        Dispatcher::singleton()
            .find_schema_or_throw(name, overload)?
            .typed::<A, R>()
    }

    pub fn handle(&self) -> &OperatorHandle {
        &self.op
    }

    /// `Dispatcher::call`: the dispatch key set from the tensor arguments and the thread-local
    /// sets, then one table lookup and (for a kernel registered with `(A, R)`) one virtual call.
    ///
    /// While the operator's autograd slots are all the framework's autograd fallback, the
    /// call goes straight to the kernel below them (Note [Typed calls skip the autograd
    /// fallback]).
    ///
    /// Always inlined: its out-of-line home is each operator's `operators::*::call` (PyTorch's
    /// `at::_ops::add_Tensor::call`), one frame for the whole dispatch.
    #[inline(always)]
    pub fn call(&self, args: A::Refs<'_>) -> Result<R> {
        let e = self.op.entry;
        let ks = e.compute_dispatch_key_set(A::key_set(&args));
        if SHOW_DISPATCH_TRACE.load(Ordering::Relaxed) {
            return self.call_traced("[call]", ks, args);
        }
        let skip = if ks.raw_repr() & ABOVE_AUTOGRAD == 0 {
            e.typed_autograd_skip[ks.highest_backend_key() as usize].load(Ordering::Relaxed)
        } else {
            DispatchKeySet::FULL.raw_repr()
        };
        let ks = ks & DispatchKeySet::from_raw(skip);
        e.lookup(ks).call_typed::<A, R>(&self.op, ks, args)
    }

    /// The traced path, out of line so the fast path stays small.
    #[cold]
    #[inline(never)]
    fn call_traced(&self, label: &'static str, ks: DispatchKeySet, args: A::Refs<'_>) -> Result<R> {
        let e = self.op.entry;
        let _g = TraceGuard::enter(label, &e.name_str, ks);
        e.lookup(ks).call_typed::<A, R>(&self.op, ks, args)
    }

    /// `Dispatcher::redispatch`: calls the kernel for the highest key of `ks` as given.
    /// A kernel at key K redispatches with `ks & DispatchKeySet::full_after(K)` (or
    /// `ks.remove(K)`).
    #[inline]
    pub fn redispatch(&self, ks: DispatchKeySet, args: A::Refs<'_>) -> Result<R> {
        if SHOW_DISPATCH_TRACE.load(Ordering::Relaxed) {
            return self.call_traced("[redispatch]", ks, args);
        }
        self.op
            .entry
            .lookup(ks)
            .call_typed::<A, R>(&self.op, ks, args)
    }
}

// Note [Typed calls skip the autograd fallback]
// The framework's autograd fallback only redispatches with `ks & AFTER_AUTOGRAD_KEYSET`
// (Note [Typed calls through the autograd fallback] in kernel_function.rs). Take a key set
// with no functionality key above AutogradFunctionality (AutogradNestedTensor included) and
// highest backend b. Its highest key is AutogradCPU-like (Autograd<b>), AutogradOther, or a
// key below them. If the slots of Autograd<b> and AutogradOther are both that fallback (or
// fallthroughs), the call would reach the kernel for `ks - autograd keys` with exactly that
// key set, so a typed call goes there at once: one lookup and one frame shorter, a tenth of
// a 1-element add. The per-backend masks are recomputed whenever the table changes; an
// operator with an autograd or math kernel for those keys, a missing slot (a backend without
// the fallback), a key above autograd in the set, or the dispatch trace on (which shows the
// autograd step as PyTorch's does) takes the full path. Boxed calls and `redispatch` always
// take it.

/// What a skipping typed call ANDs into its key set: all but the autograd keys it skips.
const TYPED_AUTOGRAD_SKIP: u64 = DispatchKeySet::FULL.raw_repr()
    & !DispatchKeySet::from_keys(&[
        DispatchKey::AutogradFunctionality,
        DispatchKey::AutogradOther,
    ])
    .raw_repr();

/// Functionality keys above AutogradFunctionality (a typed call with any of them takes the
/// full path).
const ABOVE_AUTOGRAD: u64 = !(AFTER_AUTOGRAD_KEYSET.raw_repr()
    | DispatchKeySet::from_keys(&[
        DispatchKey::AutogradFunctionality,
        DispatchKey::AutogradOther,
    ])
    .raw_repr());

// ---------------------------------------------------------------------------------------
// Dispatch trace (TORCH_SHOW_DISPATCH_TRACE).

static SHOW_DISPATCH_TRACE: AtomicBool = AtomicBool::new(false);

thread_local! {
    static TRACE_DEPTH: Cell<usize> = const { Cell::new(0) };
    static TRACE_CAPTURE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Whether the dispatch trace is on (`RATTEN_SHOW_DISPATCH_TRACE=1` at start-up).
pub fn show_dispatch_trace() -> bool {
    // Reading the dispatcher initialises the flag from the environment.
    let _ = Dispatcher::singleton();
    SHOW_DISPATCH_TRACE.load(Ordering::Relaxed)
}

/// Switches the dispatch trace on or off at run time.
pub fn set_show_dispatch_trace(on: bool) {
    let _ = Dispatcher::singleton();
    SHOW_DISPATCH_TRACE.store(on, Ordering::Relaxed);
}

/// Runs `f` with the trace lines of this thread collected into a string instead of stderr.
pub fn capture_dispatch_trace<T>(f: impl FnOnce() -> T) -> (T, String) {
    let prev = TRACE_CAPTURE.with(|c| c.borrow_mut().replace(String::new()));
    let r = f();
    let out = TRACE_CAPTURE.with(|c| std::mem::replace(&mut *c.borrow_mut(), prev));
    (r, out.unwrap_or_default())
}

/// `DispatchTraceNestingGuard` plus `_print_dispatch_trace`: prints
/// `<depth spaces><label> op=[name], key=[Key]` and nests the calls made inside.
struct TraceGuard;

impl TraceGuard {
    fn enter(label: &str, op: &str, ks: DispatchKeySet) -> TraceGuard {
        let depth = TRACE_DEPTH.with(|d| {
            let v = d.get() + 1;
            d.set(v);
            v
        });
        let line = format!(
            "{}{label} op=[{op}], key=[{}]\n",
            " ".repeat(depth),
            ks.highest_priority_type_id()
        );
        let captured = TRACE_CAPTURE.with(|c| match c.borrow_mut().as_mut() {
            Some(s) => {
                s.push_str(&line);
                true
            }
            None => false,
        });
        if !captured {
            eprint!("{line}");
        }
        TraceGuard
    }
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        TRACE_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

// ---------------------------------------------------------------------------------------
// Framework fallbacks: what PyTorch registers in BackendSelectFallbackKernel.cpp and
// VariableFallbackKernel.cpp. Without them every call would stop at BackendSelect or
// ADInplaceOrView (in the default TLS included set) or at the tensor's Autograd key. The
// debug strings are PyTorch 2.15's, so full dumps compare equal with PyTorch's.

/// The mask a typed call through a boxed kernel of type `F` may redispatch with instead of
/// boxing: `AFTER_AUTOGRAD_KEYSET` for the framework's autograd fallback (whose whole effect
/// is that redispatch), None for every other boxed kernel. See Note [Typed calls through the
/// autograd fallback] in kernel_function.rs.
pub(crate) fn typed_redispatch_mask<F: 'static>() -> Option<DispatchKeySet> {
    fn type_id_of<T: 'static>(_: &T) -> std::any::TypeId {
        std::any::TypeId::of::<T>()
    }
    (std::any::TypeId::of::<F>() == type_id_of(&autograd_fallback)).then_some(AFTER_AUTOGRAD_KEYSET)
}

/// Whether the dispatch trace is on, without initialising the dispatcher (a typed call has a
/// handle, so the dispatcher exists already).
#[inline(always)]
pub(crate) fn show_dispatch_trace_fast() -> bool {
    SHOW_DISPATCH_TRACE.load(Ordering::Relaxed)
}

/// `autograd_fallback` without autograd: redispatch below the autograd keys.
fn autograd_fallback(op: &OperatorHandle, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    op.redispatch_boxed(ks & AFTER_AUTOGRAD_KEYSET, stack)
}

fn register_framework_fallbacks(m: &mut Library, key: DispatchKey) -> Result<()> {
    const VF: &str = "registered at aten/src/ATen/core/VariableFallbackKernel.cpp";
    use DispatchKey as K;
    let f = match key {
        K::BackendSelect => CppFunction::fallthrough()
            .debug("registered at aten/src/ATen/core/BackendSelectFallbackKernel.cpp:3"),
        K::ADInplaceOrView => CppFunction::fallthrough().debug(format!("{VF}:103")),
        _ => {
            let line = match key {
                K::AutogradOther => 62,
                K::AutogradCPU => 66,
                K::AutogradXPU => 70,
                K::AutogradCUDA => 74,
                K::AutogradMTIA => 78,
                K::AutogradMAIA => 82,
                K::AutogradXLA => 86,
                K::AutogradLazy => 90,
                K::AutogradMPS => 94,
                K::AutogradMeta => 98,
                K::AutogradHPU => 107,
                _ => 111,
            };
            CppFunction::boxed(autograd_fallback).debug(format!("{VF}:{line}"))
        }
    };
    m.fallback(f)?;
    Ok(())
}

macro_rules! framework_fallback {
    ($($key:ident)*) => {
        $(
            inventory::submit! {
                StaticLibraryInit {
                    kind: LibraryKind::Impl,
                    ns: "_",
                    dispatch_key: Some(DispatchKey::$key),
                    file: file!(),
                    line: line!(),
                    init: |m| register_framework_fallbacks(m, DispatchKey::$key),
                }
            }
        )*
    };
}

framework_fallback!(
    BackendSelect ADInplaceOrView AutogradOther AutogradCPU AutogradXPU AutogradCUDA
    AutogradMTIA AutogradMAIA AutogradXLA AutogradLazy AutogradMPS AutogradMeta AutogradHPU
    AutogradPrivateUse1
);

/// `torch::jit::parseName`: `ns::op` or `ns::op.overload`.
pub fn parse_operator_name(name: &str) -> Result<OperatorName> {
    OperatorName::parse(name)
        .map_err(|e| Error::runtime(format!("could not parse operator name '{name}': {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_analysis_kinds_and_debug_strings() {
        assert_eq!(
            AliasAnalysisKind::parse("").unwrap(),
            AliasAnalysisKind::FromSchema
        );
        assert_eq!(
            AliasAnalysisKind::parse("PURE_FUNCTION")
                .unwrap()
                .to_string(),
            "PURE_FUNCTION"
        );
        assert!(AliasAnalysisKind::parse("pure").is_err());
        assert_eq!(
            debug_string("", "/dev/null", 0),
            "registered at /dev/null:0"
        );
        assert_eq!(debug_string("fn_cpu", "/dev/null", 0), "fn_cpu");
        assert_eq!(
            parse_operator_name("aten::add.Tensor").unwrap(),
            OperatorName::new("aten::add", "Tensor")
        );
    }

    #[test]
    fn only_the_autograd_fallback_redispatches_typed() {
        assert_eq!(
            typed_redispatch_mask::<fn(&OperatorHandle, DispatchKeySet, &mut Stack) -> Result<()>>(
            ),
            None
        );
        let k = KernelFunction::from_boxed(autograd_fallback);
        assert!(k.dump_state().contains("boxed"));
        assert_eq!(k.typed_redispatch_mask(), Some(AFTER_AUTOGRAD_KEYSET));
        let other = KernelFunction::from_boxed(|op: &OperatorHandle, ks, st: &mut Stack| {
            op.redispatch_boxed(ks, st)
        });
        assert_eq!(other.typed_redispatch_mask(), None);
    }

    #[test]
    fn fallback_to_non_runtime_key_is_rejected() {
        let d = Dispatcher::singleton();
        let e = d
            .register_fallback(
                DispatchKey::Autograd,
                KernelFunction::fallthrough(),
                "x".into(),
            )
            .unwrap_err();
        assert!(e.to_string().contains("not a runtime dispatch key"), "{e}");
        assert_eq!(d.dump_state_by_name("__nothing__::here").unwrap(), "");
        assert!(d.registrations_for_dispatch_key_str("nope").is_err());
    }
}
