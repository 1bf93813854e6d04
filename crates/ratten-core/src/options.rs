//! TensorOptions (c10::TensorOptions), for dtype and device only: the options a factory
//! takes. Unset fields take torch's defaults (float32, cpu).

#[cfg(doc)]
use crate::default_dtype::get_default_complex_dtype;
use crate::default_dtype::get_default_dtype;
use crate::device::{Device, DeviceType};
use crate::dtype::ScalarType;

/// The initial `torch.get_default_dtype()`; factories read the current setting
/// ([`get_default_dtype`]).
pub const DEFAULT_DTYPE: ScalarType = ScalarType::Float;

/// The initial default complex dtype (`torch.full(.., 1j)` gives complex64); factories read
/// the current setting ([`get_default_complex_dtype`]).
pub const DEFAULT_COMPLEX_DTYPE: ScalarType = ScalarType::ComplexFloat;

/// Options for factories: `TensorOptions::new().dtype(ScalarType::Long).device(Device::META)`.
/// A `ScalarType`, a `Device` or a `(ScalarType, Device)` converts into options, so factories
/// accept `Tensor::zeros(&[2], ScalarType::Int)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TensorOptions {
    pub dtype: Option<ScalarType>,
    pub device: Option<Device>,
}

impl TensorOptions {
    pub const fn new() -> Self {
        TensorOptions {
            dtype: None,
            device: None,
        }
    }
    pub const fn dtype(mut self, dtype: ScalarType) -> Self {
        self.dtype = Some(dtype);
        self
    }
    pub const fn device(mut self, device: Device) -> Self {
        self.device = Some(device);
        self
    }
    /// The dtype, or the default dtype (`torch.get_default_dtype()`, float32 unless changed).
    #[inline]
    pub fn dtype_or_default(&self) -> ScalarType {
        self.dtype.unwrap_or_else(get_default_dtype)
    }
    /// The device, or cpu.
    #[inline]
    pub fn device_or_default(&self) -> Device {
        self.device.unwrap_or(Device::CPU)
    }
}

impl From<ScalarType> for TensorOptions {
    fn from(dtype: ScalarType) -> Self {
        TensorOptions::new().dtype(dtype)
    }
}

impl From<Device> for TensorOptions {
    fn from(device: Device) -> Self {
        TensorOptions::new().device(device)
    }
}

impl From<DeviceType> for TensorOptions {
    fn from(device_type: DeviceType) -> Self {
        TensorOptions::new().device(device_type.into())
    }
}

/// `()` means "all defaults": `Tensor::zeros(&[2, 3], ())`.
impl From<()> for TensorOptions {
    fn from(_: ()) -> Self {
        TensorOptions::new()
    }
}

impl From<(ScalarType, Device)> for TensorOptions {
    fn from((dtype, device): (ScalarType, Device)) -> Self {
        TensorOptions::new().dtype(dtype).device(device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_conversions() {
        let o = TensorOptions::default();
        assert_eq!(
            (o.dtype_or_default(), o.device_or_default()),
            (ScalarType::Float, Device::CPU)
        );
        let o: TensorOptions = (ScalarType::Long, Device::META).into();
        assert_eq!(
            o,
            TensorOptions::new()
                .dtype(ScalarType::Long)
                .device(Device::META)
        );
        let o: TensorOptions = DeviceType::Meta.into();
        assert_eq!(o.device, Some(Device::META));
    }
}
