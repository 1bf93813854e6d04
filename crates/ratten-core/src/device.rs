//! Device and DeviceType (c10::Device), parsed from and printed as PyTorch's strings
//! (`cpu`, `meta`, `cuda:1`, `privateuseone:0`), with c10/core/Device.cpp's error texts.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// c10::DeviceType, for the device types ratten knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceType {
    Cpu,
    Cuda,
    Meta,
    PrivateUse1,
}

/// The device type names c10 accepts at the start of a device string, in its order (used in
/// the "Expected one of ..." message).
const C10_DEVICE_TYPE_NAMES: [&str; 20] = [
    "cpu",
    "cuda",
    "ipu",
    "xpu",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "hip",
    "ve",
    "fpga",
    "maia",
    "xla",
    "lazy",
    "vulkan",
    "mps",
    "meta",
    "hpu",
    "mtia",
    "privateuseone",
];

static PRIVATEUSE1_NAME: OnceLock<&'static str> = OnceLock::new();

/// `c10::register_privateuse1_backend`: gives the PrivateUse1 device type a name (`"npu"`), used
/// when parsing and printing devices. Set once per process; the same name again is fine.
pub fn register_privateuse1_backend(name: &str) -> Result<()> {
    const IN_TREE: [&str; 6] = ["cpu", "cuda", "hip", "mps", "xpu", "mtia"];
    if IN_TREE.contains(&name) {
        return Err(Error::runtime(format!(
            "Cannot register privateuse1 backend with in-tree device name: {name}"
        )));
    }
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphabetic() || c == b'_') {
        return Err(Error::runtime(format!(
            "Invalid privateuse1 backend name: '{name}'"
        )));
    }
    let current = *PRIVATEUSE1_NAME.get_or_init(|| Box::leak(name.to_string().into_boxed_str()));
    if current != name {
        return Err(Error::runtime(format!(
            "torch.register_privateuse1_backend() has already been set! Current backend: {current}"
        )));
    }
    Ok(())
}

/// `c10::get_privateuse1_backend()`: the registered name, or `privateuseone`.
pub fn get_privateuse1_backend() -> &'static str {
    PRIVATEUSE1_NAME.get().copied().unwrap_or("privateuseone")
}

impl DeviceType {
    /// `DeviceTypeName(type, /*lower_case=*/true)` (PrivateUse1 prints its registered name).
    pub fn name(self) -> &'static str {
        match self {
            DeviceType::Cpu => "cpu",
            DeviceType::Cuda => "cuda",
            DeviceType::Meta => "meta",
            DeviceType::PrivateUse1 => get_privateuse1_backend(),
        }
    }

    /// c10's `parse_type`: the device type named `s`.
    pub fn parse(s: &str) -> Result<DeviceType> {
        match s {
            "cpu" => Ok(DeviceType::Cpu),
            "cuda" => Ok(DeviceType::Cuda),
            "meta" => Ok(DeviceType::Meta),
            "privateuseone" => Ok(DeviceType::PrivateUse1),
            other if other == get_privateuse1_backend() => Ok(DeviceType::PrivateUse1),
            other if C10_DEVICE_TYPE_NAMES.contains(&other) => Err(Error::runtime(format!(
                "ratten does not support the '{other}' device type (supported: cpu, cuda, \
                 meta, privateuseone)"
            ))),
            other => Err(Error::runtime(format!(
                "Expected one of {} device type at start of device string: {other}",
                C10_DEVICE_TYPE_NAMES.join(", ")
            ))),
        }
    }
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
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

    /// A device with an index (-1 for none). Indices below -1 are refused.
    pub fn new(device_type: DeviceType, index: i8) -> Result<Device> {
        if index < -1 {
            return Err(Error::runtime(format!(
                "Device index must be -1 or non-negative, got {index}"
            )));
        }
        Ok(Device { device_type, index })
    }

    /// `cuda:index`.
    pub fn cuda(index: i8) -> Result<Device> {
        Self::new(DeviceType::Cuda, index)
    }

    /// `privateuseone:index`.
    pub fn privateuse1(index: i8) -> Result<Device> {
        Self::new(DeviceType::PrivateUse1, index)
    }

    /// Parses PyTorch's device string: `([a-zA-Z_]+)(?::([1-9]\d*|0))?`.
    pub fn parse(s: &str) -> Result<Device> {
        if s.is_empty() {
            return Err(Error::runtime("Device string must not be empty"));
        }
        let invalid = || Error::runtime(format!("Invalid device string: '{s}'"));
        let (name, index) = match s.split_once(':') {
            Some((name, index)) => (name, Some(index)),
            None => (s, None),
        };
        if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphabetic() || c == b'_') {
            return Err(invalid());
        }
        let index = match index {
            None => -1,
            Some(ix) => {
                let digits_ok = !ix.is_empty()
                    && ix.bytes().all(|c| c.is_ascii_digit())
                    && (ix == "0" || !ix.starts_with('0'));
                if !digits_ok {
                    return Err(invalid());
                }
                // c10 narrows with a cast (wrapping above 127); ratten refuses instead.
                ix.parse::<i8>().map_err(|_| {
                    Error::runtime(format!(
                        "Could not parse device index '{ix}' in device string '{s}'"
                    ))
                })?
            }
        };
        Ok(Device {
            device_type: DeviceType::parse(name)?,
            index,
        })
    }

    pub fn has_index(&self) -> bool {
        self.index != -1
    }
    pub fn is_cpu(&self) -> bool {
        self.device_type == DeviceType::Cpu
    }
    pub fn is_cuda(&self) -> bool {
        self.device_type == DeviceType::Cuda
    }
    pub fn is_meta(&self) -> bool {
        self.device_type == DeviceType::Meta
    }
    pub fn is_privateuseone(&self) -> bool {
        self.device_type == DeviceType::PrivateUse1
    }

    /// Python's `repr(torch.device(...))`: `device(type='cuda', index=0)`.
    pub fn repr(&self) -> String {
        if self.has_index() {
            format!(
                "device(type='{}', index={})",
                self.device_type.name(),
                self.index
            )
        } else {
            format!("device(type='{}')", self.device_type.name())
        }
    }
}

impl fmt::Display for Device {
    /// `Device::str()`: `cpu`, `cuda:0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.device_type.name())?;
        if self.has_index() {
            write!(f, ":{}", self.index)?;
        }
        Ok(())
    }
}

impl FromStr for Device {
    type Err = Error;
    fn from_str(s: &str) -> Result<Device> {
        Device::parse(s)
    }
}

impl From<DeviceType> for Device {
    fn from(device_type: DeviceType) -> Device {
        Device {
            device_type,
            index: -1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for s in [
            "cpu",
            "meta",
            "cuda",
            "cuda:0",
            "cuda:7",
            "cuda:127",
            "privateuseone",
            "privateuseone:3",
            "cpu:0",
        ] {
            let d: Device = s.parse().unwrap();
            assert_eq!(d.to_string(), s);
        }
        let d = Device::parse("cuda:1").unwrap();
        assert_eq!(d, Device::cuda(1).unwrap());
        assert_eq!(d.repr(), "device(type='cuda', index=1)");
        assert_eq!(Device::CPU.repr(), "device(type='cpu')");
    }

    #[test]
    fn errors_follow_c10() {
        let msg = |s: &str| Device::parse(s).unwrap_err().message().to_string();
        assert_eq!(msg(""), "Device string must not be empty");
        for bad in [
            "cuda:", "cuda:01", ":0", "cuda:-1", "cuda:1:2", "cu da", "cuda:a", "9",
        ] {
            assert_eq!(msg(bad), format!("Invalid device string: '{bad}'"), "{bad}");
        }
        assert_eq!(
            msg("cuda:300"),
            "Could not parse device index '300' in device string 'cuda:300'"
        );
        assert_eq!(
            msg("gpu"),
            "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, \
             maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start \
             of device string: gpu"
        );
        assert!(msg("xpu:0").contains("does not support"));
        assert!(Device::new(DeviceType::Cuda, -2).is_err());
    }
}
