//! Layer 1 (value types): `ratten.dtype`, `ratten.device` and `ratten.memory_format`, with
//! their own conversions ([`parse_device`], [`dtype_object`]). Imports only `error`; the
//! functions on dtypes (`result_type`, ...) are `functions.rs`.

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};
use ratten_aten::native::MemoryFormat;
use ratten_core::{Device, ScalarType};

use super::error::IntoPy;

/// `torch.dtype`: one object per dtype, module attributes `ratten.float32`, ...
#[pyclass(name = "dtype", module = "ratten", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDtype {
    pub st: ScalarType,
}

#[pymethods]
impl PyDtype {
    pub fn __repr__(&self) -> String {
        format!("ratten.{}", self.st.python_name())
    }
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.st.is_floating_point()
    }
    #[getter]
    fn is_complex(&self) -> bool {
        self.st.is_complex()
    }
    #[getter]
    fn is_signed(&self) -> bool {
        self.st.is_signed()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.st.element_size()
    }
    /// Pickled by name: `ratten.float32` comes back as itself (also under copy/deepcopy).
    fn __reduce__(&self) -> &'static str {
        self.st.python_name()
    }
    // torch's method names; a pyclass method cannot take `self` by value.
    #[allow(clippy::wrong_self_convention)]
    fn to_real(&self) -> PyDtype {
        PyDtype {
            st: self.st.to_real(),
        }
    }
    #[allow(clippy::wrong_self_convention)]
    fn to_complex(&self) -> PyResult<PyDtype> {
        self.st
            .to_complex()
            .map(|st| PyDtype { st })
            .ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "to_complex is not supported for {}",
                    self.__repr__()
                ))
            })
    }
}

/// `torch.device`. Strings are accepted wherever a device is expected.
#[pyclass(name = "device", module = "ratten", frozen)]
#[derive(Clone, Copy)]
pub struct PyDevice {
    pub d: Device,
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (spec, index=None))]
    fn new(spec: &Bound<'_, PyAny>, index: Option<i64>) -> PyResult<PyDevice> {
        let mut d = parse_device(spec)?;
        if let Some(i) = index {
            let i = i8::try_from(i).map_err(|_| {
                pyo3::exceptions::PyRuntimeError::new_err(format!("Device index {i} out of range"))
            })?;
            d = Device::new(d.device_type, i).py()?;
        }
        Ok(PyDevice { d })
    }
    #[getter]
    fn r#type(&self) -> String {
        self.d.device_type.to_string()
    }
    #[getter]
    fn index(&self) -> Option<i64> {
        self.d.has_index().then_some(self.d.index as i64)
    }
    fn __repr__(&self) -> String {
        self.d.repr()
    }
    /// Pickled as `ratten.device("cpu:0")`.
    fn __reduce__<'py>(&self, py: Python<'py>) -> (Bound<'py, pyo3::types::PyType>, (String,)) {
        (py.get_type::<PyDevice>(), (self.d.to_string(),))
    }
    fn __str__(&self) -> String {
        self.d.to_string()
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        parse_device(other).is_ok_and(|o| o == self.d)
    }
    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.d.to_string().hash(&mut h);
        h.finish()
    }
}

/// A device from a `ratten.device`, a string (`"cpu"`, `"cuda:1"`) or an index.
pub fn parse_device(obj: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(d) = obj.downcast::<PyDevice>() {
        return Ok(d.get().d);
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Device::parse(s.to_str()?).py();
    }
    if let Ok(i) = obj.extract::<i64>() {
        // torch: a bare index means a CUDA device.
        let i = i8::try_from(i)
            .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("Device index out of range"))?;
        return Device::cuda(i).py();
    }
    Err(PyTypeError::new_err(format!(
        "Expected a torch.device, a string or an int, got {}",
        obj.get_type().name()?
    )))
}

static DTYPES: pyo3::sync::GILOnceCell<Vec<(ScalarType, Py<PyDtype>)>> =
    pyo3::sync::GILOnceCell::new();

/// The one `ratten.dtype` object of `st` (so `t.dtype is ratten.float32`).
pub fn dtype_object(py: Python<'_>, st: ScalarType) -> PyResult<Py<PyDtype>> {
    let all = DTYPES.get_or_try_init(py, || {
        ScalarType::ALL
            .iter()
            .map(|&st| Ok((st, Py::new(py, PyDtype { st })?)))
            .collect::<PyResult<Vec<_>>>()
    })?;
    all.iter()
        .find(|(s, _)| *s == st)
        .map(|(_, o)| o.clone_ref(py))
        .ok_or_else(|| PyTypeError::new_err(format!("no dtype object for {st}")))
}

/// `torch.memory_format`: `ratten.contiguous_format`, `ratten.preserve_format`,
/// `ratten.channels_last`, `ratten.channels_last_3d` (one object each; no constructor).
#[pyclass(name = "memory_format", module = "ratten", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyMemoryFormat {
    /// c10's value (`MemoryFormat as u8`).
    code: u8,
}

/// The memory formats and their module attribute names, in c10's order.
const MEMORY_FORMATS: [(MemoryFormat, &str); 4] = [
    (MemoryFormat::Contiguous, "contiguous_format"),
    (MemoryFormat::Preserve, "preserve_format"),
    (MemoryFormat::ChannelsLast, "channels_last"),
    (MemoryFormat::ChannelsLast3d, "channels_last_3d"),
];

impl PyMemoryFormat {
    pub fn format(&self) -> MemoryFormat {
        MEMORY_FORMATS
            .iter()
            .find(|(f, _)| *f as u8 == self.code)
            .map_or(MemoryFormat::Preserve, |(f, _)| *f)
    }
    fn name(&self) -> &'static str {
        MEMORY_FORMATS
            .iter()
            .find(|(f, _)| *f as u8 == self.code)
            .map_or("preserve_format", |(_, n)| n)
    }
}

#[pymethods]
impl PyMemoryFormat {
    fn __repr__(&self) -> String {
        format!("ratten.{}", self.name())
    }
    fn __str__(&self) -> String {
        self.__repr__()
    }
}

/// `torch.Generator`: a handle to a CPU random generator (clones share its state).
#[pyclass(name = "Generator", module = "ratten", frozen)]
pub struct PyGenerator {
    pub g: ratten_aten::random::Generator,
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device=None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> PyResult<PyGenerator> {
        if let Some(d) = device {
            let d = parse_device(d)?;
            if d.device_type != ratten_core::DeviceType::Cpu {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "ratten has no generator for device {d}"
                )));
            }
        }
        Ok(PyGenerator {
            g: ratten_aten::random::Generator::new(),
        })
    }
    fn manual_seed<'py>(
        slf: Bound<'py, Self>,
        seed: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        check_long(seed, "manual_seed expected a long")?;
        let s = seed_value(seed)?;
        slf.get().g.manual_seed(s);
        Ok(slf)
    }
    fn initial_seed(&self) -> u64 {
        self.g.initial_seed()
    }
    fn seed(&self) -> u64 {
        self.g.seed()
    }
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice { d: Device::CPU }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGenerator>()?;
    m.add_class::<PyDtype>()?;
    m.add_class::<PyDevice>()?;
    m.add_class::<PyMemoryFormat>()?;
    for (f, name) in MEMORY_FORMATS {
        m.add(name, Py::new(m.py(), PyMemoryFormat { code: f as u8 })?)?;
    }
    let py = m.py();
    let dtypes = pyo3::types::PyDict::new(py);
    for st in ScalarType::ALL {
        dtypes.set_item(st.python_name(), dtype_object(py, st)?)?;
    }
    // torch's aliases.
    for (alias, name) in [
        ("float", "float32"),
        ("double", "float64"),
        ("half", "float16"),
        ("short", "int16"),
        ("int", "int32"),
        ("long", "int64"),
        ("cfloat", "complex64"),
        ("cdouble", "complex128"),
        ("chalf", "complex32"),
    ] {
        let st = ScalarType::from_name(name)
            .ok_or_else(|| PyTypeError::new_err(format!("unknown dtype {name}")))?;
        dtypes.set_item(alias, dtype_object(py, st)?)?;
    }
    m.add("_dtypes", dtypes)?;
    Ok(())
}

/// A seed as torch's `THPUtils_unpackUInt64`-style reading takes it: an int in
/// [-2**63, 2**64), a negative one wrapping modulo 2**64; outside it torch's ValueError.
pub(crate) fn seed_value(seed: &Bound<'_, PyAny>) -> PyResult<u64> {
    let s: i128 = seed
        .extract()
        .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))?;
    if !(i64::MIN as i128..1i128 << 64).contains(&s) {
        return Err(PyValueError::new_err("Overflow when unpacking long long"));
    }
    Ok(s.rem_euclid(1i128 << 64) as u64)
}

/// torch's `THPUtils_checkLong`: an int that is not a bool, else `{what} expected/expects`
/// torch's message (`set_num_threads expects an int, but got float`).
pub(crate) fn check_long(obj: &Bound<'_, PyAny>, message: &str) -> PyResult<()> {
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
        return Ok(());
    }
    Err(PyRuntimeError::new_err(format!(
        "{message}, but got {}",
        obj.get_type().name()?
    )))
}
