//! Calls through the dispatcher: typed and boxed, conversions both ways, fallthrough,
//! fallbacks, thread-local key sets, redispatch, the missing-kernel error, the trace and
//! run-time registration under concurrent calls.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use ratten_core::dispatch_key_set::AFTER_AUTOGRAD_KEYSET;
use ratten_core::local_dispatch_key_set::{ExcludeDispatchKeyGuard, IncludeDispatchKeyGuard};
use ratten_core::{BackendComponent, Device, ScalarType, TensorBase};
use ratten_dispatch::{
    capture_dispatch_trace, set_show_dispatch_trace, CppFunction, DispatchKey, DispatchKeySet,
    Dispatcher, IValue, Library, Result, Stack, TypedOperatorHandle,
};

static SERIAL: Mutex<()> = Mutex::new(());

fn cpu() -> TensorBase {
    TensorBase::empty(&[2], ScalarType::Float, Device::CPU).unwrap()
}
fn meta() -> TensorBase {
    TensorBase::empty(&[2], ScalarType::Float, Device::META).unwrap()
}

type T2 = (TensorBase, TensorBase);

fn impl_lib(ns: &str, key: DispatchKey) -> Library {
    Library::new(
        ratten_dispatch::LibraryKind::Impl,
        ns,
        Some(key),
        file!(),
        line!(),
    )
    .unwrap()
}

fn tag_kernel(tag: i64) -> CppFunction {
    CppFunction::typed::<T2, i64, _>(move |_a: &TensorBase, _b: &TensorBase| Ok(tag))
}

#[test]
fn typed_call_goes_through_autograd_fallback_to_cpu() {
    let _s = SERIAL.lock();
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Def,
        "calls1",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m.def("f(Tensor a, Tensor b) -> int").unwrap();
    let mut cpu_lib = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls1",
        Some(DispatchKey::CPU),
        file!(),
        line!(),
    )
    .unwrap();
    cpu_lib.impl_("f", tag_kernel(1)).unwrap();
    let mut meta_lib = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls1",
        Some(DispatchKey::Meta),
        file!(),
        line!(),
    )
    .unwrap();
    meta_lib.impl_("f", tag_kernel(2)).unwrap();

    let op = TypedOperatorHandle::<T2, i64>::find("calls1::f", "").unwrap();
    let (a, b) = (cpu(), cpu());
    // AutogradCPU (framework fallback, boxed) -> redispatch -> CPU (typed kernel, boxed call).
    assert_eq!(op.call((&a, &b)).unwrap(), 1);
    // Meta wins over CPU: the highest backend bit.
    assert_eq!(op.call((&a, &meta())).unwrap(), 2);
    // Below autograd: straight to the kernel, unboxed.
    let _g = ExcludeDispatchKeyGuard::new(DispatchKey::AutogradFunctionality);
    assert_eq!(op.call((&a, &b)).unwrap(), 1);

    // Boxed call of a typed kernel.
    let mut stack: Stack = vec![IValue::Tensor(a.clone()), IValue::Tensor(b.clone())];
    op.handle().call_boxed(&mut stack).unwrap();
    assert!(matches!(stack.as_slice(), [IValue::Int(1)]));
}

#[test]
fn boxed_kernel_serves_typed_calls_and_missing_kernel_errors() {
    let _s = SERIAL.lock();
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Def,
        "calls2",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m.def("g(Tensor a, int n) -> int").unwrap();
    let op = TypedOperatorHandle::<(TensorBase, i64), i64>::find("calls2::g", "").unwrap();
    let a = cpu();
    let e = op.call((&a, 3)).unwrap_err();
    assert_eq!(e.kind(), ratten_core::ErrorKind::NotImplemented);
    let msg = e.to_string();
    assert!(
        msg.starts_with("Could not run 'calls2::g' with arguments from the 'CPU' backend. This could be because the operator doesn't exist for this backend, or was omitted during the selective/custom build process (if using custom build). If you are a Facebook employee using PyTorch on mobile, please visit https://fburl.com/ptmfixes for possible resolutions. 'calls2::g' is only available for these backends: [BackendSelect, ADInplaceOrView, AutogradOther, AutogradCPU, AutogradCUDA, AutogradXLA, AutogradMPS, AutogradXPU, AutogradHPU, AutogradLazy, AutogradMTIA, AutogradMAIA, AutogradPrivateUse1, AutogradMeta].\n\nBackendSelect: fallthrough registered at aten/src/ATen/core/BackendSelectFallbackKernel.cpp:3 [backend fallback]\n"),
        "{msg}"
    );
    let mut imp = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls2",
        Some(DispatchKey::CPU),
        file!(),
        line!(),
    )
    .unwrap();
    imp.impl_(
        "g",
        CppFunction::boxed(|_op, _ks, stack: &mut Stack| {
            let n = match stack.pop() {
                Some(IValue::Int(n)) => n,
                other => panic!("unexpected {other:?}"),
            };
            stack.pop();
            stack.push(IValue::Int(n * 10));
            Ok(())
        }),
    )
    .unwrap();
    assert_eq!(op.call((&a, 4)).unwrap(), 40);
    // No tensors and no kernel for Undefined: PyTorch's "no tensor arguments" error.
    let mut m2 = Library::new(
        ratten_dispatch::LibraryKind::Def,
        "calls2b",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m2.def("h(int n) -> int").unwrap();
    let h = TypedOperatorHandle::<(i64,), i64>::find("calls2b::h", "").unwrap();
    let msg = {
        // Without the default TLS keys the call reaches Undefined.
        let _g = ExcludeDispatchKeyGuard::new(DispatchKeySet::from_keys(&[
            DispatchKey::BackendSelect,
            DispatchKey::ADInplaceOrView,
        ]));
        h.call((1,)).unwrap_err().to_string()
    };
    assert!(msg.starts_with("There were no tensor arguments to this function (e.g., you passed an empty list of Tensors), but no fallback function is registered for schema calls2b::h.  This usually means that this function requires a non-empty list of Tensors, or that you (the operator writer) forgot to register a fallback function.  Available functions are [BackendSelect, ADInplaceOrView, "), "{msg}");
    // A CompositeExplicitAutograd kernel serves Undefined.
    let mut m3 = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls2b",
        Some(DispatchKey::CompositeExplicitAutograd),
        file!(),
        line!(),
    )
    .unwrap();
    m3.impl_(
        "h",
        CppFunction::typed::<(i64,), i64, _>(|n: i64| Ok(n + 1)),
    )
    .unwrap();
    assert_eq!(h.call((1,)).unwrap(), 2);
}

#[test]
fn wrong_typed_signature_is_rejected() {
    let _s = SERIAL.lock();
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Def,
        "calls3",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m.def("k(Tensor a) -> Tensor").unwrap();
    let e = Dispatcher::singleton()
        .find_schema_or_throw("calls3::k", "")
        .unwrap()
        .typed::<(i64,), i64>()
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("reason: Type mismatch in argument 1: Tensor vs int"),
        "{e}"
    );
    let e = Dispatcher::singleton()
        .find_schema_or_throw("calls3::nope", "")
        .unwrap_err();
    assert_eq!(e.to_string(), "Could not find schema for calls3::nope.");
}

#[test]
fn chain_of_keys_redispatches_and_trace_prints_each_hop() {
    let _s = SERIAL.lock();
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Def,
        "calls4",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m.def("add(Tensor a, Tensor b) -> int").unwrap();
    let op = TypedOperatorHandle::<T2, i64>::find("calls4::add", "").unwrap();
    let mut ag = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls4",
        Some(DispatchKey::AutogradCPU),
        file!(),
        line!(),
    )
    .unwrap();
    ag.impl_(
        "add",
        CppFunction::typed_with_keyset::<T2, i64, _>(
            move |ks: DispatchKeySet, a: &TensorBase, b: &TensorBase| {
                let op = TypedOperatorHandle::<T2, i64>::find("calls4::add", "")?;
                Ok(100 + op.redispatch(ks & AFTER_AUTOGRAD_KEYSET, (a, b))?)
            },
        ),
    )
    .unwrap();
    let mut adv = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls4",
        Some(DispatchKey::ADInplaceOrView),
        file!(),
        line!(),
    )
    .unwrap();
    adv.impl_(
        "add",
        CppFunction::typed_with_keyset::<T2, i64, _>(
            move |ks: DispatchKeySet, a: &TensorBase, b: &TensorBase| {
                let op = TypedOperatorHandle::<T2, i64>::find("calls4::add", "")?;
                Ok(10
                    + op.redispatch(
                        ks & DispatchKeySet::full_after(DispatchKey::ADInplaceOrView),
                        (a, b),
                    )?)
            },
        ),
    )
    .unwrap();
    let mut c = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls4",
        Some(DispatchKey::CPU),
        file!(),
        line!(),
    )
    .unwrap();
    c.impl_("add", tag_kernel(1)).unwrap();
    let (a, b) = (cpu(), cpu());
    set_show_dispatch_trace(true);
    let (r, trace) = capture_dispatch_trace(|| op.call((&a, &b)));
    set_show_dispatch_trace(false);
    assert_eq!(r.unwrap(), 111);
    assert_eq!(
        trace,
        " [call] op=[calls4::add], key=[AutogradCPU]\n  [redispatch] op=[calls4::add], key=[ADInplaceOrView]\n   [redispatch] op=[calls4::add], key=[CPU]\n"
    );
    // A fallthrough on AutogradCPU for this operator skips that kernel's key.
    let mut ft = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls4",
        Some(DispatchKey::AutogradCPU),
        file!(),
        line!(),
    )
    .unwrap();
    ft.impl_("add", CppFunction::fallthrough()).unwrap();
    assert_eq!(op.call((&a, &b)).unwrap(), 11);
    drop(ft);
    assert_eq!(op.call((&a, &b)).unwrap(), 111);
}

#[test]
fn fallthrough_fallback_and_tls_include_exclude() {
    let _s = SERIAL.lock();
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Def,
        "calls5",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m.def("f(Tensor a, Tensor b) -> int").unwrap();
    let op = TypedOperatorHandle::<T2, i64>::find("calls5::f", "").unwrap();
    let mut c = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls5",
        Some(DispatchKey::CPU),
        file!(),
        line!(),
    )
    .unwrap();
    c.impl_("f", tag_kernel(1)).unwrap();
    // A boxed backend fallback for Python that records and redispatches below itself.
    let hits = Arc::new(AtomicUsize::new(0));
    let h2 = hits.clone();
    let mut fb = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "_",
        Some(DispatchKey::Python),
        file!(),
        line!(),
    )
    .unwrap();
    fb.fallback(CppFunction::boxed(move |op, ks, stack| {
        h2.fetch_add(1, Ordering::SeqCst);
        op.redispatch_boxed(ks & DispatchKeySet::full_after(DispatchKey::Python), stack)
    }))
    .unwrap();
    let (a, b) = (cpu(), cpu());
    assert_eq!(op.call((&a, &b)).unwrap(), 1);
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    {
        let _inc = IncludeDispatchKeyGuard::new(DispatchKey::Python);
        assert_eq!(op.call((&a, &b)).unwrap(), 1);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        let _exc = ExcludeDispatchKeyGuard::new(DispatchKey::Python);
        assert_eq!(op.call((&a, &b)).unwrap(), 1);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }
    assert!(op
        .handle()
        .dump_computed_table()
        .contains("\nPython: registered at "));
    drop(fb);
    assert!(!op.handle().dump_computed_table().contains("\nPython: "));
    {
        // With the Python fallback gone the slot is missing: PyTorch's error names Python.
        let _inc = IncludeDispatchKeyGuard::new(DispatchKey::Python);
        let e = op.call((&a, &b)).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("Could not run 'calls5::f' with arguments from the 'Python' backend."));
    }
    // A fallthrough fallback skips the key for every operator.
    let mut ftl = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "_",
        Some(DispatchKey::Python),
        file!(),
        line!(),
    )
    .unwrap();
    ftl.fallback_fallthrough("").unwrap();
    let _inc = IncludeDispatchKeyGuard::new(DispatchKey::Python);
    assert_eq!(op.call((&a, &b)).unwrap(), 1);
}

#[test]
fn kernels_newest_first_and_operator_disappears() {
    let _s = SERIAL.lock();
    let name = ratten_schema::OperatorName::new("calls6::f", "");
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Fragment,
        "calls6",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m.def("f(Tensor a, Tensor b) -> int").unwrap();
    let op = TypedOperatorHandle::<T2, i64>::find("calls6::f", "").unwrap();
    let mut k1 = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls6",
        Some(DispatchKey::CPU),
        file!(),
        line!(),
    )
    .unwrap();
    k1.impl_("f", tag_kernel(1)).unwrap();
    let mut k2 = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls6",
        Some(DispatchKey::CPU),
        file!(),
        line!(),
    )
    .unwrap();
    k2.impl_("f", tag_kernel(2)).unwrap();
    let (a, b) = (cpu(), cpu());
    assert_eq!(op.call((&a, &b)).unwrap(), 2);
    drop(k2);
    assert_eq!(op.call((&a, &b)).unwrap(), 1);
    drop(m);
    assert!(Dispatcher::singleton().find_schema(&name).is_none());
    assert!(Dispatcher::singleton().find_op(&name).is_some());
    drop(k1);
    assert!(Dispatcher::singleton().find_op(&name).is_none());
    // The same name can be defined again.
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Fragment,
        "calls6",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m.def("f(Tensor a) -> Tensor").unwrap();
    assert!(Dispatcher::singleton().find_schema(&name).is_some());
}

#[test]
fn library_errors_name_the_block() {
    let _s = SERIAL.lock();
    let _a = Library::new(ratten_dispatch::LibraryKind::Def, "calls7", None, "a.rs", 1).unwrap();
    let e = Library::new(ratten_dispatch::LibraryKind::Def, "calls7", None, "b.rs", 2).unwrap_err();
    assert_eq!(e.to_string(), "Only a single TORCH_LIBRARY can be used to register the namespace calls7; please put all of your definitions in a single TORCH_LIBRARY block.  If you were trying to specify implementations, consider using TORCH_LIBRARY_IMPL (which can be duplicated).  If you really intended to define operators for a single namespace in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to explicitly indicate this.  Previous registration of TORCH_LIBRARY was registered at a.rs:1; latest registration was registered at b.rs:2");
    let mut i = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls7",
        Some(DispatchKey::CPU),
        "c.rs",
        3,
    )
    .unwrap();
    let e = i.def("x(Tensor a) -> Tensor").unwrap_err();
    assert_eq!(e.to_string(), "def(\"calls7::x\"): Cannot define an operator inside of a TORCH_LIBRARY_IMPL block.  All def()s should be placed in the (unique) TORCH_LIBRARY block for their namespace.  (Error occurred while processing TORCH_LIBRARY_IMPL block at c.rs:3)".replace("calls7::x", "x"));
    let e = i.impl_("other::x", tag_kernel(0)).unwrap_err();
    assert!(e.to_string().starts_with("Explicitly provided namespace (other) in operator name does not match namespace of enclosing TORCH_LIBRARY_IMPL block (calls7)."), "{e}");
    let e = i.fallback(CppFunction::fallthrough()).unwrap_err();
    assert!(e.to_string().starts_with("fallback(...): Fallback functions which apply to only a single namespace (you specified calls7) are not supported."), "{e}");
    let e = i
        .impl_("x", tag_kernel(0).dispatch_key(Some(DispatchKey::CUDA)))
        .unwrap_err();
    assert!(e.to_string().contains("Explicitly provided dispatch key (CUDA) is inconsistent with the dispatch key of the enclosing TORCH_LIBRARY_IMPL block (CPU)."), "{e}");
}

/// Registration at run time while other threads call: each call sees the old or the new
/// kernel, never anything else.
#[test]
fn registration_is_safe_under_concurrent_calls() {
    let _s = SERIAL.lock();
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Def,
        "calls8",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m.def("f(Tensor a, Tensor b) -> int").unwrap();
    let mut base = Library::new(
        ratten_dispatch::LibraryKind::Impl,
        "calls8",
        Some(DispatchKey::CPU),
        file!(),
        line!(),
    )
    .unwrap();
    base.impl_("f", tag_kernel(1)).unwrap();
    let op = TypedOperatorHandle::<T2, i64>::find("calls8::f", "").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let seen_new = Arc::new(AtomicUsize::new(0));
    let mut threads = Vec::new();
    for _ in 0..3 {
        let stop = stop.clone();
        let seen_new = seen_new.clone();
        threads.push(std::thread::spawn(move || {
            let (a, b) = (cpu(), cpu());
            let _g = ExcludeDispatchKeyGuard::new(DispatchKey::AutogradFunctionality);
            let mut calls = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let r = op.call((&a, &b)).expect("call failed during registration");
                assert!(r == 1 || r == 2, "torn dispatch: {r}");
                if r == 2 {
                    seen_new.fetch_add(1, Ordering::Relaxed);
                }
                calls += 1;
            }
            calls
        }));
    }
    for i in 0..200 {
        let mut l = Library::new(
            ratten_dispatch::LibraryKind::Impl,
            "calls8",
            Some(DispatchKey::CPU),
            file!(),
            line!(),
        )
        .unwrap();
        l.impl_("f", tag_kernel(2)).unwrap();
        // Also churn alias-key registrations, which rewrite many slots.
        let mut l2 = Library::new(
            ratten_dispatch::LibraryKind::Impl,
            "calls8",
            Some(DispatchKey::CompositeExplicitAutograd),
            file!(),
            line!(),
        )
        .unwrap();
        l2.impl_("f", tag_kernel(2)).unwrap();
        if i % 2 == 0 {
            std::thread::yield_now();
        }
        drop(l2);
        drop(l);
    }
    stop.store(true, Ordering::Relaxed);
    let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(total > 0);
    op.handle().check_invariants().unwrap();
    let (a, b) = (cpu(), cpu());
    let _g = ExcludeDispatchKeyGuard::new(DispatchKey::AutogradFunctionality);
    assert_eq!(op.call((&a, &b)).unwrap(), 1);
}

#[test]
fn ivalue_conversions_both_ways() -> Result<()> {
    let _s = SERIAL.lock();
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Def,
        "calls9",
        None,
        file!(),
        line!(),
    )?;
    m.def_fn(
        "mix",
        CppFunction::typed::<
            (TensorBase, Vec<i64>, Option<TensorBase>, f64, bool, String),
            (i64, f64),
            _,
        >(
            |_t: &TensorBase, l: &[i64], o: Option<&TensorBase>, x: f64, flag: bool, s: &str| {
                Ok((
                    l.iter().sum::<i64>() + o.map_or(0, |_| 100) + s.len() as i64,
                    if flag { x * 2.0 } else { x },
                ))
            },
        ),
    )?;
    let h = Dispatcher::singleton().find_schema_or_throw("calls9::mix", "")?;
    assert_eq!(
        h.schema().unwrap().to_string(),
        "calls9::mix(Tensor _0, int[] _1, Tensor? _2, float _3, bool _4, str _5) -> (int _0, float _1)"
    );
    let t = cpu();
    let mut stack: Stack = vec![
        IValue::Tensor(t.clone()),
        IValue::IntList(vec![1, 2, 3]),
        IValue::None,
        IValue::Double(1.5),
        IValue::Bool(true),
        IValue::String("abc".into()),
    ];
    h.call_boxed(&mut stack)?;
    assert!(
        matches!(stack.as_slice(), [IValue::Int(9), IValue::Double(d)] if *d == 3.0),
        "{stack:?}"
    );
    // A wrongly typed stack gives PyTorch's conversion error.
    let mut bad: Stack = vec![
        IValue::Int(1),
        IValue::IntList(vec![]),
        IValue::None,
        IValue::Double(0.0),
        IValue::Bool(false),
        IValue::String("".into()),
    ];
    let e = h.call_boxed(&mut bad).unwrap_err();
    assert_eq!(e.to_string(), "Expected Tensor but got Int");
    Ok(())
}

/// Note [Typed calls skip the autograd fallback]: a typed call goes straight below the autograd
/// keys only while every autograd slot is the framework's fallback, and the kernel it reaches
/// sees the key set the fallback's redispatch would have given it.
#[test]
fn typed_call_skips_the_autograd_fallback_only_while_it_is_the_whole_autograd_step() {
    let _s = SERIAL.lock();
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Def,
        "calls_skip",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m.def("f(Tensor a, Tensor b) -> int").unwrap();
    let op = TypedOperatorHandle::<T2, i64>::find("calls_skip::f", "").unwrap();
    // Without a CPU kernel the autograd slots are the fallback already (a missing kernel is
    // reported from CPU either way).
    let mut c = impl_lib("calls_skip", DispatchKey::CPU);
    // The CPU kernel reports the key set it was called with.
    c.impl_(
        "f",
        CppFunction::typed_with_keyset::<T2, i64, _>(
            |ks: DispatchKeySet, _a: &TensorBase, _b: &TensorBase| Ok(ks.raw_repr() as i64),
        ),
    )
    .unwrap();
    let skips = |c: BackendComponent| op.handle().typed_call_skips_autograd(c);
    let (a, b) = (cpu(), cpu());
    let boxed = |op: &TypedOperatorHandle<T2, i64>| {
        let mut stack: Stack = vec![IValue::Tensor(a.clone()), IValue::Tensor(b.clone())];
        op.handle().call_boxed(&mut stack).unwrap();
        match stack.as_slice() {
            [IValue::Int(v)] => *v,
            other => panic!("unexpected stack {other:?}"),
        }
    };
    assert!(skips(BackendComponent::CPUBit));
    // A backend without the autograd fallback (IPU: its slot is missing) keeps the full path,
    // and so does a key set without a backend.
    assert!(!skips(BackendComponent::IPUBit));
    assert!(!skips(BackendComponent::InvalidBit));
    let seen = op.call((&a, &b)).unwrap();
    // The boxed call runs the fallback's redispatch: the same key set reaches the kernel.
    assert_eq!(seen, boxed(&op));
    let seen = DispatchKeySet::from_raw(seen as u64);
    assert!(seen.has(DispatchKey::CPU));
    assert!(!seen.has(DispatchKey::AutogradCPU));

    // An autograd kernel for another backend: that backend's calls take the full path, CPU's
    // still skip.
    let mut cuda_ag = impl_lib("calls_skip", DispatchKey::AutogradCUDA);
    cuda_ag.impl_("f", tag_kernel(7)).unwrap();
    assert!(!skips(BackendComponent::CUDABit));
    assert!(skips(BackendComponent::CPUBit));
    assert_eq!(op.call((&a, &b)).unwrap(), seen.raw_repr() as i64);
    drop(cuda_ag);
    assert!(skips(BackendComponent::CUDABit));
    assert!(skips(BackendComponent::CPUBit));

    // An AutogradOther kernel (a sparse tensor's autograd key) stops every backend skipping.
    let mut other_ag = impl_lib("calls_skip", DispatchKey::AutogradOther);
    other_ag.impl_("f", tag_kernel(8)).unwrap();
    assert!(!skips(BackendComponent::CPUBit));
    assert_eq!(op.call((&a, &b)).unwrap(), seen.raw_repr() as i64);
    drop(other_ag);
    assert!(skips(BackendComponent::CPUBit));

    // An AutogradCPU kernel is called, and skipping resumes once it is gone.
    let mut ag = impl_lib("calls_skip", DispatchKey::AutogradCPU);
    ag.impl_("f", tag_kernel(100)).unwrap();
    assert!(!skips(BackendComponent::CPUBit));
    assert_eq!(op.call((&a, &b)).unwrap(), 100);
    drop(ag);
    assert!(skips(BackendComponent::CPUBit));
    assert_eq!(op.call((&a, &b)).unwrap(), seen.raw_repr() as i64);

    // A key above autograd in the set: its kernel sees the autograd key, as without skipping.
    let mut tr = impl_lib("calls_skip", DispatchKey::Tracer);
    tr.impl_(
        "f",
        CppFunction::typed_with_keyset::<T2, i64, _>(
            |ks: DispatchKeySet, _a: &TensorBase, _b: &TensorBase| {
                Ok(if ks.has(DispatchKey::AutogradCPU) {
                    -1
                } else {
                    -2
                })
            },
        ),
    )
    .unwrap();
    {
        let _g = IncludeDispatchKeyGuard::new(DispatchKey::Tracer);
        assert_eq!(op.call((&a, &b)).unwrap(), -1);
    }
    // The trace still shows the autograd step.
    set_show_dispatch_trace(true);
    let (r, trace) = capture_dispatch_trace(|| op.call((&a, &b)));
    set_show_dispatch_trace(false);
    assert_eq!(r.unwrap(), seen.raw_repr() as i64);
    assert!(
        trace.starts_with(" [call] op=[calls_skip::f], key=[AutogradCPU]\n"),
        "{trace}"
    );
}

/// Note [Aliased returns]: a typed call of an operator returning its written argument gets
/// the `Aliased` marker (no handle counted); boxed callers get that argument itself; a boxed
/// kernel serves the typed call; the handle refuses `Aliased` for a schema that does not say
/// the return is that argument.
#[test]
fn aliased_returns_give_back_the_argument() {
    use ratten_dispatch::Aliased;
    type Args = (TensorBase, i64, TensorBase);
    let _s = SERIAL.lock();
    let mut m = Library::new(
        ratten_dispatch::LibraryKind::Def,
        "calls_alias",
        None,
        file!(),
        line!(),
    )
    .unwrap();
    m.def("fill_out(Tensor self, int v, *, Tensor(a!) out) -> Tensor(a!)")
        .unwrap();
    m.def("plain(Tensor self, int v, Tensor out) -> Tensor")
        .unwrap();
    m.def("boxed_out(Tensor self, int v, *, Tensor(a!) out) -> Tensor(a!)")
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let mut cpu_lib = impl_lib("calls_alias", DispatchKey::CPU);
    cpu_lib
        .impl_(
            "fill_out",
            CppFunction::typed::<Args, Aliased<2>, _>(
                move |_s: &TensorBase, _v: i64, _out: &TensorBase| {
                    seen.fetch_add(1, Ordering::SeqCst);
                    Ok(Aliased)
                },
            ),
        )
        .unwrap();
    let (a, out) = (cpu(), cpu());

    let op = TypedOperatorHandle::<Args, Aliased<2>>::find("calls_alias::fill_out", "").unwrap();
    assert_eq!(op.call((&a, 3, &out)).unwrap(), Aliased);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Boxed: the stack holds `out` itself, not a new tensor.
    let mut stack: Stack = vec![
        IValue::Tensor(a.clone()),
        IValue::Int(3),
        IValue::Tensor(out.clone()),
    ];
    op.handle().call_boxed(&mut stack).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    match stack.as_slice() {
        [IValue::Tensor(t)] => assert!(t.is_same(&out)),
        other => panic!("expected out on the stack, got {other:?}"),
    }

    // A boxed kernel serves the typed call; what it leaves must be one tensor.
    let mut boxed_lib = impl_lib("calls_alias", DispatchKey::CPU);
    boxed_lib
        .impl_(
            "boxed_out",
            CppFunction::boxed(|_op, _ks, stack: &mut Stack| {
                let out = stack.pop().unwrap();
                let v = stack.pop().unwrap();
                stack.pop();
                stack.push(if matches!(v, IValue::Int(0)) {
                    IValue::Int(0)
                } else {
                    out
                });
                Ok(())
            }),
        )
        .unwrap();
    let bop = TypedOperatorHandle::<Args, Aliased<2>>::find("calls_alias::boxed_out", "").unwrap();
    assert_eq!(bop.call((&a, 1, &out)).unwrap(), Aliased);
    assert_eq!(
        bop.call((&a, 0, &out)).unwrap_err().to_string(),
        "Expected Tensor but got Int"
    );

    // Only a schema whose one return is argument 2, written, can be called as Aliased<2>.
    let e = TypedOperatorHandle::<Args, Aliased<2>>::find("calls_alias::plain", "").unwrap_err();
    assert!(
        e.to_string().contains(
            "reason: the call returns argument 2 itself (Aliased<2>), but the schema's return is not that argument, written"
        ),
        "{e}"
    );
    let e = TypedOperatorHandle::<Args, Aliased<0>>::find("calls_alias::fill_out", "").unwrap_err();
    assert!(e.to_string().contains("Aliased<0>"), "{e}");
    // As a plain Tensor return, the same schema is fine (a boxed call of the typed kernel).
    let op_t = TypedOperatorHandle::<Args, TensorBase>::find("calls_alias::fill_out", "").unwrap();
    assert!(op_t.call((&a, 3, &out)).unwrap().is_same(&out));
}
