//! A binary that only depends on the `ratten` facade sees every static registration of the
//! generated code (schemas and kernels), before it calls any operator.

use ratten::{ScalarType, Tensor};
use ratten_core::DispatchKey;
use ratten_dispatch::Dispatcher;

#[test]
fn aten_schemas_and_kernels_are_registered_statically() {
    // Touch the facade only through a factory, never through generated code.
    let t = Tensor::zeros(&[2], ScalarType::Float).unwrap();
    assert_eq!(t.numel(), 2);
    let d = Dispatcher::singleton();
    assert!(
        d.static_registration_errors().is_empty(),
        "{:?}",
        d.static_registration_errors()
    );
    let add = d
        .find_schema_or_throw("aten::add", "Tensor")
        .expect("aten::add.Tensor is defined");
    assert_eq!(
        add.schema().unwrap().to_string(),
        "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    );
    for (name, overload) in [
        ("aten::add", "Tensor"),
        ("aten::add_", "Tensor"),
        ("aten::add", "out"),
        ("aten::neg", ""),
        ("aten::argmax", "out"),
    ] {
        let op = d.find_schema_or_throw(name, overload).unwrap();
        assert!(
            op.has_kernel_for_dispatch_key(DispatchKey::CPU),
            "{name}.{overload} has no CPU kernel"
        );
        assert!(
            op.has_kernel_for_dispatch_key(DispatchKey::Meta),
            "{name}.{overload} has no Meta kernel"
        );
    }
    let scalar = d.find_schema_or_throw("aten::add", "Scalar").unwrap();
    assert!(scalar.has_kernel_for_dispatch_key(DispatchKey::CompositeExplicitAutograd));
    // The out= variant generated from `autogen: add.Scalar_out`.
    assert!(d.find_schema_or_throw("aten::add", "Scalar_out").is_ok());
}
