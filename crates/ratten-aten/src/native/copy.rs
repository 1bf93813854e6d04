//! `copy_` with dtype conversion and broadcasting (Copy.cpp), the functional `copy`, the `to`
//! overloads (TensorConversions.cpp) and `fill_` through the fill stub, plus the `Layout` and
//! `MemoryFormat` argument types `to` takes.

use ratten_core::{Device, DeviceType, Error, Result, Scalar, ScalarType, TensorOptions};
use ratten_dispatch::{IValue, KernelValue};
use ratten_schema::Type;

use crate::native::cpu::fill_kernels::{scalar_fill, FILL_STUB};
use crate::native::cpu::unary_kernels::COPY_STUB;
use crate::structured::Arg;
use crate::tensor_iterator::{nullary_op_config, TensorIteratorConfig};
use crate::Tensor;

/// c10's `MemoryFormat` (the integer values are c10's, as IValues carry them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryFormat {
    Contiguous = 0,
    Preserve = 1,
    ChannelsLast = 2,
    ChannelsLast3d = 3,
}

/// c10's `Layout` (only `Strided` exists in ratten; the others name what PyTorch has).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Strided = 0,
    Sparse = 1,
    SparseCsr = 2,
    Mkldnn = 3,
    SparseCsc = 4,
    SparseBsr = 5,
    SparseBsc = 6,
    Jagged = 7,
}

impl MemoryFormat {
    const ALL: [MemoryFormat; 4] = [
        MemoryFormat::Contiguous,
        MemoryFormat::Preserve,
        MemoryFormat::ChannelsLast,
        MemoryFormat::ChannelsLast3d,
    ];
}

impl Layout {
    const ALL: [Layout; 8] = [
        Layout::Strided,
        Layout::Sparse,
        Layout::SparseCsr,
        Layout::Mkldnn,
        Layout::SparseCsc,
        Layout::SparseBsr,
        Layout::SparseBsc,
        Layout::Jagged,
    ];
}

/// `Layout?` / `MemoryFormat?` arguments: IValue ints, as in c10.
macro_rules! optional_enum_arg {
    ($t:ty, $schema:expr, $what:literal) => {
        impl KernelValue for Arg<Option<$t>> {
            type Ref<'a> = Option<$t>;
            fn schema_type() -> Type {
                Type::optional($schema)
            }
            fn ref_to_ivalue(r: &Option<$t>) -> IValue {
                r.map_or(IValue::None, |x| IValue::Int(x as i64))
            }
            fn into_ivalue(self) -> IValue {
                Self::ref_to_ivalue(&self.0)
            }
            fn from_ivalue(v: IValue) -> Result<Self> {
                match v {
                    IValue::None => Ok(Arg(None)),
                    IValue::Int(i) => <$t>::ALL
                        .iter()
                        .copied()
                        .find(|x| *x as i64 == i)
                        .map(|x| Arg(Some(x)))
                        .ok_or_else(|| Error::runtime(format!("Unknown {} value {i}", $what))),
                    other => Err(Error::runtime(format!(
                        "Expected {}? but got {}",
                        $what,
                        other.tag_kind()
                    ))),
                }
            }
            fn borrow(&self) -> Option<$t> {
                self.0
            }
        }
    };
}

/// `Layout` / `MemoryFormat` arguments.
macro_rules! enum_arg {
    ($t:ty, $schema:expr, $what:literal) => {
        impl KernelValue for Arg<$t> {
            type Ref<'a> = $t;
            fn schema_type() -> Type {
                $schema
            }
            fn ref_to_ivalue(r: &$t) -> IValue {
                IValue::Int(*r as i64)
            }
            fn into_ivalue(self) -> IValue {
                IValue::Int(self.0 as i64)
            }
            fn from_ivalue(v: IValue) -> Result<Self> {
                match Arg::<Option<$t>>::from_ivalue(v)? {
                    Arg(Some(x)) => Ok(Arg(x)),
                    Arg(None) => Err(Error::runtime(concat!("Expected ", $what, " but got None"))),
                }
            }
            fn borrow(&self) -> $t {
                self.0
            }
        }
    };
}

enum_arg!(MemoryFormat, Type::MemoryFormat, "MemoryFormat");
enum_arg!(Layout, Type::Layout, "Layout");
optional_enum_arg!(MemoryFormat, Type::MemoryFormat, "MemoryFormat");
optional_enum_arg!(Layout, Type::Layout, "Layout");

/// `self.copy_(src)` (CompositeExplicitAutograd): `src` broadcasts to `self`'s shape and is
/// cast to `self`'s dtype, in one pass. Overlap between `self` and `src` is refused with
/// PyTorch's messages; a meta `self` gets no data, a meta `src` cannot give any.
pub fn copy_<'a>(self_: &'a Tensor, src: &Tensor, _non_blocking: bool) -> Result<&'a Tensor> {
    if self_.is_same(src) {
        return Ok(self_);
    }
    if src.is_meta() && !self_.is_meta() {
        return Err(Error::not_implemented(
            "Cannot copy out of meta tensor; no data!",
        ));
    }
    let iter = TensorIteratorConfig::new()
        .set_check_mem_overlap(true)
        .check_all_same_dtype(false)
        .check_all_same_device(false)
        .resize_outputs(false)
        .add_output(self_)?
        .add_const_input(src)
        .build_standalone()?;
    if iter.numel() == 0 || self_.is_meta() {
        return Ok(self_);
    }
    (COPY_STUB.get(iter.device_type())?)(&iter)?;
    Ok(self_)
}

/// `copy` (CompositeExplicitAutogradNonFunctional): a fresh tensor like `self` holding `src`.
pub fn copy(self_: &Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
    let r = empty_like_dtype(self_, self_.dtype())?;
    copy_(&r, src, non_blocking)?;
    Ok(r)
}

/// `copy_meta` (Meta): shapes and dtypes only.
pub fn copy_meta(self_: &Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
    copy(self_, src, non_blocking)
}

/// `empty_like(self, dtype)` keeping a dense layout (`MemoryFormat::Preserve`).
pub fn empty_like_dtype(self_: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    empty_like_on(self_, dtype, self_.device(), MemoryFormat::Preserve)
}

fn empty_like_on(
    self_: &Tensor,
    dtype: ScalarType,
    device: Device,
    format: MemoryFormat,
) -> Result<Tensor> {
    let m = self_.meta();
    if format == MemoryFormat::Preserve
        && crate::tensor_iterator::overlap::is_non_overlapping_and_dense(m.sizes(), m.strides())
    {
        crate::structured::empty_strided(
            m.sizes(),
            m.strides(),
            TensorOptions::new().dtype(dtype).device(device),
        )
    } else {
        Tensor::empty(m.sizes(), (dtype, device))
    }
}

/// `to_impl` (TensorConversions.cpp): `self` itself when nothing changes and no copy is asked,
/// else `_to_copy` (a new tensor, then `copy_`).
fn to_impl(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    if let Some(l) = layout.filter(|l| *l != Layout::Strided) {
        return Err(Error::not_implemented(format!(
            "to(): ratten tensors are strided; layout {l:?} is not supported"
        )));
    }
    if pin_memory == Some(true) {
        return Err(Error::runtime(
            "Cannot pin memory: ratten has no accelerator to pin memory for",
        ));
    }
    let format = memory_format.unwrap_or(MemoryFormat::Preserve);
    if matches!(
        format,
        MemoryFormat::ChannelsLast | MemoryFormat::ChannelsLast3d
    ) {
        return Err(Error::not_implemented(format!(
            "to(): memory_format {format:?} is not supported by ratten"
        )));
    }
    let dtype = dtype.unwrap_or(self_.dtype());
    let device = device.unwrap_or(self_.device());
    let same_device = device.device_type == self_.device().device_type;
    let layout_ok = format == MemoryFormat::Preserve || self_.is_contiguous();
    if !copy && dtype == self_.dtype() && same_device && layout_ok {
        return Ok(self_.clone());
    }
    if self_.is_meta() && device.device_type != DeviceType::Meta {
        return Err(Error::not_implemented(
            "Cannot copy out of meta tensor; no data!",
        ));
    }
    let r = empty_like_on(self_, dtype, device, format)?;
    copy_(&r, self_, false)?;
    Ok(r)
}

/// `to.dtype` (CompositeImplicitAutograd).
pub fn to_dtype(
    self_: &Tensor,
    dtype: ScalarType,
    _non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    to_impl(self_, Some(dtype), None, None, None, copy, memory_format)
}

/// `to.other`: `other`'s dtype and device.
pub fn to_other(
    self_: &Tensor,
    other: &Tensor,
    _non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    to_impl(
        self_,
        Some(other.dtype()),
        None,
        Some(other.device()),
        None,
        copy,
        memory_format,
    )
}

/// `type_as` (CompositeImplicitAutograd): `self.to(other.options())`, other's dtype and device
/// through `to.dtype_layout`.
pub fn type_as(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::generated::operators::to_dtype_layout::call(
        self_,
        Some(other.dtype()),
        None,
        Some(other.device()),
        None,
        false,
        false,
        None,
    )
}

/// `to.device` (CPU and Meta are ratten's devices).
pub fn to_device(
    self_: &Tensor,
    device: Device,
    dtype: ScalarType,
    _non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    to_impl(
        self_,
        Some(dtype),
        None,
        Some(device),
        None,
        copy,
        memory_format,
    )
}

/// `to.dtype_layout`: every option optional.
#[allow(clippy::too_many_arguments)]
pub fn to_dtype_layout(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    _non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    to_impl(
        self_,
        dtype,
        layout,
        device,
        pin_memory,
        copy,
        memory_format,
    )
}

/// `self.fill_(value)` through TensorIterator's nullary loop (any strides, in parallel above
/// the grain size); `Tensor::fill_` converts the value with c10's checks first.
pub fn fill_(self_: &Tensor, value: &Scalar) -> Result<Tensor> {
    if self_.numel() == 1 && self_.device() == Device::CPU {
        // PyTorch's fill_out writes a 1-element CPU tensor directly (`scalar_fill`).
        scalar_fill(self_.base(), value)?;
        return Ok(self_.clone());
    }
    // PyTorch's fill_out: "Fill is idempotent, so overlap is okay" (an expanded tensor fills).
    let iter = nullary_op_config(self_)?
        .set_check_mem_overlap(false)
        .build_standalone()?;
    (FILL_STUB.get(iter.device_type())?)(&iter, value)?;
    Ok(self_.clone())
}
