//! Registering a name for the PrivateUse1 backend (process-wide, so in its own test binary).

use ratten_core::device::{get_privateuse1_backend, register_privateuse1_backend};
use ratten_core::{Device, DeviceType, ScalarType, TensorBase};

#[test]
fn a_registered_name_parses_and_prints() {
    assert_eq!(get_privateuse1_backend(), "privateuseone");
    assert_eq!(
        register_privateuse1_backend("cuda").unwrap_err().message(),
        "Cannot register privateuse1 backend with in-tree device name: cuda"
    );
    register_privateuse1_backend("npu").unwrap();
    register_privateuse1_backend("npu").unwrap();
    assert_eq!(
        register_privateuse1_backend("foo").unwrap_err().message(),
        "torch.register_privateuse1_backend() has already been set! Current backend: npu"
    );
    let d: Device = "npu:1".parse().unwrap();
    assert_eq!(d.device_type, DeviceType::PrivateUse1);
    assert_eq!(d.to_string(), "npu:1");
    // The generic name still parses.
    assert_eq!(Device::parse("privateuseone:1").unwrap(), d);
    // Without an allocator, making a tensor there is an error, not a crash.
    assert!(TensorBase::empty(&[2], ScalarType::Float, d).is_err());
}
