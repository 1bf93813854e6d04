//! Device and DeviceType (c10::Device), parsed from and printed as PyTorch's strings.
//! TODO(core helper): complete parsing/printing, errors, tests.

/// c10::DeviceType, for the device types ratten knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceType {
    Cpu,
    Cuda,
    Meta,
    PrivateUse1,
}

/// c10::Device: a type and an optional index (-1 means "current").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    pub device_type: DeviceType,
    pub index: i8,
}

impl Device {
    pub const CPU: Device = Device {
        device_type: DeviceType::Cpu,
        index: -1,
    };
    pub const META: Device = Device {
        device_type: DeviceType::Meta,
        index: -1,
    };
}
