//! A separate binary that only depends on the crate: static registrations (the crate's own
//! framework fallbacks, and this file's `torch_library!` blocks) are present at the first
//! use of the dispatcher, with no registration call by the user.

use ratten_core::{Device, ScalarType, TensorBase};
use ratten_dispatch::{
    torch_library, torch_library_fragment, torch_library_impl, CppFunction, DispatchKey,
    Dispatcher, TypedOperatorHandle,
};
use ratten_schema::OperatorName;

torch_library!(static_test, |m| {
    m.def("twice(Tensor a, int n) -> int")?;
});

torch_library_fragment!(static_test, |m| {
    m.def("other(Tensor a) -> Tensor")?;
});

torch_library_impl!(static_test, CPU, |m| {
    m.impl_(
        "twice",
        CppFunction::typed::<(TensorBase, i64), i64, _>(|_a: &TensorBase, n: i64| Ok(2 * n)),
    )?;
});

torch_library_impl!(_, FPGA, |m| {
    m.fallback(CppFunction::fallthrough())?;
});

#[test]
fn static_registrations_are_present_before_first_dispatch() {
    let d = Dispatcher::singleton();
    assert!(
        d.static_registration_errors().is_empty(),
        "{:?}",
        d.static_registration_errors()
    );
    let names = d.get_all_op_names();
    assert!(names.contains(&OperatorName::new("static_test::twice", "")));
    assert!(names.contains(&OperatorName::new("static_test::other", "")));
    let op = TypedOperatorHandle::<(TensorBase, i64), i64>::find("static_test::twice", "").unwrap();
    let t = TensorBase::empty(&[1], ScalarType::Float, Device::CPU).unwrap();
    assert_eq!(op.call((&t, 21)).unwrap(), 42);
    let table = op.handle().dump_computed_table();
    // The crate's own framework fallbacks and this file's fallthrough fallback.
    assert!(table.contains("CPU: registered at "), "{table}");
    assert!(
        table.contains("FPGA: fallthrough registered at "),
        "{table}"
    );
    assert!(table.contains(
        "BackendSelect: fallthrough registered at aten/src/ATen/core/BackendSelectFallbackKernel.cpp:3 [backend fallback]\n"
    ));
    assert!(table.contains(
        "ADInplaceOrView: fallthrough registered at aten/src/ATen/core/VariableFallbackKernel.cpp:103 [backend fallback]\n"
    ));
    assert!(table.contains(
        "AutogradCPU: registered at aten/src/ATen/core/VariableFallbackKernel.cpp:66 [backend fallback]\n"
    ));
    assert!(op.handle().has_kernel_for_dispatch_key(DispatchKey::CPU));
    assert!(op.handle().dump_state().starts_with(
        "name: static_test::twice\nschema: static_test::twice(Tensor a, int n) -> int\ndebug: registered at crates/ratten-dispatch/tests/static_registration.rs:"
    ) || op.handle().dump_state().contains("static_registration.rs:"));
}
