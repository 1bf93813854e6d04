//! `RATTEN_SHOW_DISPATCH_TRACE=1` (like TORCH_SHOW_DISPATCH_TRACE), read when the dispatcher
//! starts, prints each call and redispatch with its key, indented by depth. Its own binary, so
//! the variable is set before the dispatcher's first use.

use ratten_core::{Device, ScalarType, TensorBase};
use ratten_dispatch::{
    capture_dispatch_trace, show_dispatch_trace, CppFunction, DispatchKey, IValue, Library,
    LibraryKind, Stack, TypedOperatorHandle,
};

#[test]
fn env_var_switches_the_trace_on() {
    std::env::set_var("RATTEN_SHOW_DISPATCH_TRACE", "1");
    assert!(show_dispatch_trace());
    let mut m = Library::new(LibraryKind::Def, "trace_env", None, file!(), line!()).unwrap();
    m.def("f(Tensor a) -> Tensor").unwrap();
    let mut c = Library::new(
        LibraryKind::Impl,
        "trace_env",
        Some(DispatchKey::CPU),
        file!(),
        line!(),
    )
    .unwrap();
    c.impl_(
        "f",
        CppFunction::typed::<(TensorBase,), TensorBase, _>(|a: &TensorBase| Ok(a.clone())),
    )
    .unwrap();
    let op = TypedOperatorHandle::<(TensorBase,), TensorBase>::find("trace_env::f", "").unwrap();
    let t = TensorBase::empty(&[1], ScalarType::Float, Device::CPU).unwrap();
    let (r, trace) = capture_dispatch_trace(|| op.call((&t,)));
    r.unwrap();
    // AutogradCPU is the framework fallback, which redispatches boxed below autograd.
    assert_eq!(
        trace,
        " [call] op=[trace_env::f], key=[AutogradCPU]\n  [redispatchBoxed] op=[trace_env::f], key=[CPU]\n"
    );
    let mut stack: Stack = vec![IValue::Tensor(t)];
    let (r, trace) = capture_dispatch_trace(|| op.handle().call_boxed(&mut stack));
    r.unwrap();
    assert_eq!(
        trace,
        " [callBoxed] op=[trace_env::f], key=[AutogradCPU]\n  [redispatchBoxed] op=[trace_env::f], key=[CPU]\n"
    );
}
