//! Factories (aten/src/ATen/native/TensorFactories.cpp, RangeFactories.cpp, RangeUtils.h):
//! empty, zeros, ones, full, arange, eye, tensors from data, 0-dim scalar tensors, wrapped
//! numbers, and `fill_` (`fill_.Scalar`'s checks), with PyTorch's dtype inference and error
//! texts.
//!
//! Dtype defaults follow torch: float32 unless the values say otherwise (`full` with an int
//! fill is int64, `arange` over integers is int64).

use ratten_core::default_dtype::{get_default_complex_dtype, get_default_dtype};
use ratten_core::dtype::PodElement;
use ratten_core::scalar::format_g;
use ratten_core::{
    torch_check, Device, Element, Error, Result, Scalar, ScalarType, TensorAccess, TensorBase,
    TensorOptions,
};

use crate::generated::operators as ops;
use crate::native::view::memory_format_strides;
use crate::native::{Layout, MemoryFormat};
use crate::structured::empty_strided;
use crate::tensor_iterator::overlap::is_non_overlapping_and_dense;
use crate::Tensor;

/// The `AT_DISPATCH` error for a dtype a kernel does not handle (NotImplementedError).
fn dispatch_error(kernel: &str, dtype: ScalarType) -> Error {
    Error::not_implemented(format!("\"{kernel}\" not implemented for '{dtype}'"))
}

/// Writes `f(i)` at the i-th element of a contiguous tensor.
fn fill_contiguous_with<T: PodElement>(
    g: &mut TensorAccess,
    mut f: impl FnMut(usize) -> T,
) -> Result<()> {
    for (i, x) in g.output_slice_mut::<T>(0)?.iter_mut().enumerate() {
        *x = f(i);
    }
    Ok(())
}

// Note [Factories]
// The factories are declared with PyTorch's entries and reach these kernels through the
// dispatcher. Having no tensor argument, `empty.memory_format` and `empty_strided` (the only
// ones with backend kernels) get their key from a generated BackendSelect kernel that reads
// the `device` argument; the others are CompositeExplicitAutograd compositions of `empty` and
// an out= or in-place kernel, as in TensorFactories.cpp, so they run on every backend
// (meta included) through those. The `Tensor::zeros(sizes, options)`-style associated
// functions below are C++'s TensorOptions overloads: they call the operators.

/// The checks of the options ratten does not have (sparse layouts, pinned memory).
fn check_strided(fname: &str, layout: Option<Layout>, pin_memory: Option<bool>) -> Result<()> {
    if layout.is_some_and(|l| l != Layout::Strided) {
        return Err(Error::not_implemented(format!(
            "{fname}(): ratten has only strided tensors, got layout {layout:?}"
        )));
    }
    if pin_memory == Some(true) {
        return Err(Error::not_implemented(format!(
            "{fname}(): ratten has no pinned memory"
        )));
    }
    Ok(())
}

fn empty_generic(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Device,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    check_strided("empty", layout, pin_memory)?;
    let dtype = dtype.unwrap_or_else(get_default_dtype);
    match memory_format.unwrap_or(MemoryFormat::Contiguous) {
        MemoryFormat::Contiguous => TensorBase::empty(size, dtype, device).map(Tensor::from),
        MemoryFormat::Preserve => Err(Error::runtime("unsupported memory format Preserve")),
        format => {
            ratten_core::tensor_impl::check_size_nonnegative(size)?;
            let strides = memory_format_strides(size, format)?.unwrap_or_default();
            empty_strided(size, &strides, (dtype, device).into())
        }
    }
}

/// `empty.memory_format` on the CPU (`empty_cpu`).
pub fn empty_cpu(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    empty_generic(size, dtype, layout, Device::CPU, pin_memory, memory_format)
}

/// `empty.memory_format` on meta: the geometry without storage.
pub fn empty_meta(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    empty_generic(size, dtype, layout, Device::META, pin_memory, memory_format)
}

fn empty_strided_generic(
    size: &[i64],
    stride: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Device,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    check_strided("empty_strided", layout, pin_memory)?;
    ratten_core::tensor_impl::check_size_nonnegative(size)?;
    let dtype = dtype.unwrap_or_else(get_default_dtype);
    empty_strided(size, stride, (dtype, device).into())
}

/// `empty_strided` on the CPU.
pub fn empty_strided_cpu(
    size: &[i64],
    stride: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    empty_strided_generic(size, stride, dtype, layout, Device::CPU, pin_memory)
}

/// `empty_strided` on meta.
pub fn empty_strided_meta(
    size: &[i64],
    stride: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    empty_strided_generic(size, stride, dtype, layout, Device::META, pin_memory)
}

/// `empty_like(self, dtype=, layout=, device=, pin_memory=, memory_format=)`: a tensor of
/// `self`'s shape; `Preserve` (the default) keeps the strides of a non-overlapping and dense
/// `self`, else makes it contiguous.
pub fn empty_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    check_strided("empty_like", layout, pin_memory)?;
    let dtype = dtype.unwrap_or(self_.dtype());
    let device = device.unwrap_or(self_.device());
    let sizes = self_.sizes();
    let strides =
        match memory_format_strides(&sizes, memory_format.unwrap_or(MemoryFormat::Preserve))? {
            Some(s) => s,
            None if is_non_overlapping_and_dense(&sizes, &self_.strides()) => {
                self_.strides().to_vec()
            }
            None => {
                return ops::empty_memory_format::call(
                    &sizes,
                    Some(dtype),
                    None,
                    Some(device),
                    None,
                    None,
                )
            }
        };
    ops::empty_strided::call(&sizes, &strides, Some(dtype), None, Some(device), None)
}

fn empty_options(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    ops::empty_memory_format::call(size, dtype, layout, device, pin_memory, None)
}

/// `zeros(size, dtype=, layout=, device=, pin_memory=)`.
pub fn zeros(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let t = empty_options(size, dtype, layout, device, pin_memory)?;
    t.zero_()?;
    Ok(t)
}

/// `zeros(size, out=)`: `out` resized to `size`, then zeroed.
pub fn zeros_out<'a>(size: &[i64], out: &'a Tensor) -> Result<&'a Tensor> {
    out.resize_(size)?;
    out.zero_()
}

/// `zeros_like(self, ...)`.
pub fn zeros_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let t = ops::empty_like::call(self_, dtype, layout, device, pin_memory, memory_format)?;
    t.zero_()?;
    Ok(t)
}

/// `ones(size, ...)`.
pub fn ones(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    ops::full::call(
        size,
        &Scalar::Int(1),
        dtype.or(Some(get_default_dtype())),
        layout,
        device,
        pin_memory,
    )
}

/// `ones(size, out=)`.
pub fn ones_out<'a>(size: &[i64], out: &'a Tensor) -> Result<&'a Tensor> {
    out.resize_(size)?;
    out.fill_(1i64)
}

/// `ones_like(self, ...)`.
pub fn ones_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let t = ops::empty_like::call(self_, dtype, layout, device, pin_memory, memory_format)?;
    t.fill_(1i64)?;
    Ok(t)
}

/// The dtype `full` gives a value when none is asked for (`infer_full_options`): bool ->
/// bool, integer -> int64, complex -> the default complex dtype, float -> the default dtype.
fn full_dtype(value: &Scalar) -> ScalarType {
    match value {
        Scalar::Bool(_) => ScalarType::Bool,
        // c10's `isIntegral`: a uint64 above int64's range asks for int64 too (and overflows).
        Scalar::Int(_) | Scalar::UInt64(_) => ScalarType::Long,
        Scalar::ComplexDouble(_) => get_default_complex_dtype(),
        Scalar::Double(_) => get_default_dtype(),
    }
}

/// `full(size, fill_value, dtype=, ...)`; without a dtype, [`full_dtype`].
pub fn full(
    size: &[i64],
    fill_value: &Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or_else(|| full_dtype(fill_value));
    let t = empty_options(size, Some(dtype), layout, device, pin_memory)?;
    t.fill_(*fill_value)?;
    Ok(t)
}

/// `full(size, fill_value, out=)`.
pub fn full_out<'a>(size: &[i64], fill_value: &Scalar, out: &'a Tensor) -> Result<&'a Tensor> {
    out.resize_(size)?;
    out.fill_(*fill_value)
}

/// `full_like(self, fill_value, ...)`: `self`'s dtype unless one is given.
pub fn full_like(
    self_: &Tensor,
    fill_value: &Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let t = ops::empty_like::call(self_, dtype, layout, device, pin_memory, memory_format)?;
    t.fill_(*fill_value)?;
    Ok(t)
}

/// `scalar_tensor(s, ...)`: a 0-dim tensor, of the default dtype unless one is given (the
/// value's kind does not choose it, as in torch).
pub fn scalar_tensor(
    s: &Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let t = empty_options(&[], dtype, layout, device, pin_memory)?;
    t.fill_(*s)?;
    Ok(t)
}

/// `arange(end, ...)`: `0, 1, ..., end - 1`.
pub fn arange(
    end: &Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    arange_start_step(
        &Scalar::Int(0),
        end,
        &Scalar::Int(1),
        dtype,
        layout,
        device,
        pin_memory,
    )
}

/// `arange(start, end, ...)`.
pub fn arange_start(
    start: &Scalar,
    end: &Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    arange_start_step(
        start,
        end,
        &Scalar::Int(1),
        dtype,
        layout,
        device,
        pin_memory,
    )
}

/// `arange(start, end, step, ...)`: without a dtype, int64 when all three are integers (or
/// bools), else the default dtype; then `arange.start_out`.
pub fn arange_start_step(
    start: &Scalar,
    end: &Scalar,
    step: &Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let integral = [start, end, step].iter().all(|s| s.is_integral(true));
    let dtype = match dtype {
        None if integral => Some(ScalarType::Long),
        d => d,
    };
    let t = empty_options(&[0], dtype, layout, device, pin_memory)?;
    ops::arange_start_out::call(start, end, step, &t)?;
    Ok(t)
}

/// `arange(end, out=)`.
pub fn arange_out<'a>(end: &Scalar, out: &'a Tensor) -> Result<&'a Tensor> {
    ops::arange_start_out::call(&Scalar::Int(0), end, &Scalar::Int(1), out)?;
    Ok(out)
}

/// Resizes the out= tensor of a range factory to `[size]`, with torch's warning when it had
/// another non-zero number of elements.
fn resize_range_out(fname: &str, out: &Tensor, size: i64) -> Result<()> {
    let numel = out.numel();
    if numel != size {
        if numel > 0 && fname == "arange" {
            crate::structured::warn(format!(
                "The number of elements in the out tensor of shape {} is {numel} which does not \
                 match the computed number of elements {size}. Note that this may occur as a \
                 result of rounding error. The out tensor will be resized to a tensor of shape \
                 ({size},).",
                crate::native::view::fmt_list(&out.sizes())
            ));
        }
        out.resize_(&[size])?;
    }
    Ok(())
}

/// Writes `f(i)` for `i` in `0..n` into `out` (1-D): directly when it is contiguous, else
/// through a contiguous temporary copied back.
fn fill_range<T: PodElement>(out: &Tensor, f: impl Fn(i64) -> T + Sync) -> Result<()> {
    if out.is_meta() || out.numel() == 0 {
        return Ok(());
    }
    let target = if out.is_contiguous() {
        out.clone()
    } else {
        ops::empty_like::call(out, None, None, None, None, Some(MemoryFormat::Contiguous))?
    };
    {
        let mut g = TensorAccess::write(&target)?;
        fill_contiguous_with::<T>(&mut g, |i| f(i as i64))?;
    }
    if !target.is_same(out) {
        ops::copy_::call(out, &target, false)?;
    }
    Ok(())
}

/// The vector loop of `cpu_serial_kernel_vec` as the range kernels run it: over the first
/// `n - n % (2 * lanes)` elements, each vector of `lanes` elements is computed from a base
/// value at its first element plus multiples of the step; the rest element by element.
/// `lanes` is the width of PyTorch's AVX2 `Vectorized<T>` (32 bytes): the range kernels are
/// registered with `REGISTER_DISPATCH`, which gives AVX512 CPUs the AVX2 kernel (only
/// `ALSO_REGISTER_AVX512_DISPATCH` kernels are compiled for AVX512), and the scalar build's
/// `Vectorized` is 32 bytes too. Computing values the same way gives torch's roundings (a
/// single-threaded kernel's: torch splits ranges of more than 32768 elements across threads,
/// each starting its own vector loop).
#[derive(Clone, Copy)]
struct VectorLanes {
    lanes: i64,
    vectorized: i64,
}

impl VectorLanes {
    fn of<T>(n: i64) -> VectorLanes {
        let lanes = (32 / std::mem::size_of::<T>()) as i64;
        VectorLanes {
            lanes,
            vectorized: n - n % (2 * lanes),
        }
    }

    /// The vector's first element and the lane of element `i`, or None in the scalar tail.
    fn split(self, i: i64) -> Option<(i64, i64)> {
        (i < self.vectorized).then(|| (i - i % self.lanes, i % self.lanes))
    }
}

/// `arange(start, end, step, out=)` (RangeFactories.cpp's `arange_out`): `ceil((end - start)
/// / step)` values `start + i * step`, computed in the accumulate type (int64 for integers,
/// double for float and double, float for half and bfloat16), vector by vector as the
/// kernel does ([`VectorLanes`]).
pub fn arange_start_out<'a>(
    start: &Scalar,
    end: &Scalar,
    step: &Scalar,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    if [start, end, step].iter().any(|s| s.is_complex()) {
        return Err(Error::not_implemented(
            "arange: complex start, end or step is not supported by ratten",
        ));
    }
    let dtype = out.dtype();
    if !(dtype.is_floating_point() || dtype.is_integral(false)) {
        return Err(dispatch_error("arange_cpu", dtype));
    }
    let size = compute_arange_size(start, end, step, dtype)?;
    resize_range_out("arange", out, size)?;
    macro_rules! int_fill {
        ($t:ty) => {{
            let (a, s) = (start.to::<i64>()?, step.to::<i64>()?);
            fill_range::<$t>(out, move |i| a.wrapping_add(s.wrapping_mul(i)) as $t)
        }};
    }
    // Half and bfloat16 accumulate in float; a vector's base is rounded to the type, and its
    // lanes add multiples of the step, fused for half, not for bfloat16 (as torch's loops).
    macro_rules! reduced_arange {
        ($t:ty, $fused:expr) => {{
            let (a, s) = (start.to::<f32>()?, step.to::<f32>()?);
            let lanes = VectorLanes::of::<$t>(size);
            fill_range(out, move |i| match lanes.split(i) {
                Some((i0, j)) => {
                    let base = <$t>::from_f32(s.mul_add(i0 as f32, a)).to_f32();
                    <$t>::from_f32(if $fused {
                        (j as f32).mul_add(s, base)
                    } else {
                        base + j as f32 * s
                    })
                }
                None => <$t>::from_f32(s.mul_add(i as f32, a)),
            })
        }};
    }
    match dtype {
        ScalarType::Byte => int_fill!(u8),
        ScalarType::Char => int_fill!(i8),
        ScalarType::Short => int_fill!(i16),
        ScalarType::Int => int_fill!(i32),
        ScalarType::Long => int_fill!(i64),
        ScalarType::Float => {
            let (a, s) = (start.to::<f64>()?, step.to::<f64>()?);
            let lanes = VectorLanes::of::<f32>(size);
            fill_range::<f32>(out, move |i| match lanes.split(i) {
                Some((i0, j)) => {
                    (j as f64).mul_add(s, f64::from(s.mul_add(i0 as f64, a) as f32)) as f32
                }
                None => s.mul_add(i as f64, a) as f32,
            })
        }
        ScalarType::Double => {
            let (a, s) = (start.to::<f64>()?, step.to::<f64>()?);
            let lanes = VectorLanes::of::<f64>(size);
            fill_range::<f64>(out, move |i| match lanes.split(i) {
                Some((i0, j)) => (j as f64).mul_add(s, s.mul_add(i0 as f64, a)),
                None => s.mul_add(i as f64, a),
            })
        }
        ScalarType::Half => reduced_arange!(half::f16, true),
        ScalarType::BFloat16 => reduced_arange!(half::bf16, false),
        other => Err(dispatch_error("arange_cpu", other)),
    }?;
    Ok(out)
}

/// `linspace(start, end, steps, ...)`: of the default dtype unless one is given.
pub fn linspace(
    start: &Scalar,
    end: &Scalar,
    steps: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    torch_check!(steps >= 0, "number of steps must be non-negative");
    let t = empty_options(&[steps], dtype, layout, device, pin_memory)?;
    ops::linspace_out::call(start, end, steps, &t)?;
    Ok(t)
}

/// `linspace(start, end, steps, out=)` (RangeFactoriesKernel.cpp): `step = (end - start) /
/// (steps - 1)` in the element type (double for integers, float for half and bfloat16); the
/// first half counts up from
/// `start`, the second down from `end`, each value one fused multiply-add as the vectorised
/// kernel's build contracts it.
pub fn linspace_out<'a>(
    start: &Scalar,
    end: &Scalar,
    steps: i64,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    torch_check!(steps >= 0, "number of steps must be non-negative");
    resize_range_out("linspace", out, steps)?;
    if steps == 0 || out.is_meta() {
        return Ok(out);
    }
    let dtype = out.dtype();
    if steps == 1 {
        out.fill_(*start)?;
        return Ok(out);
    }
    let half = steps / 2;
    macro_rules! int_fill {
        ($t:ty) => {{
            let (a, b) = (start.to::<$t>()? as f64, end.to::<$t>()? as f64);
            let step = (b - a) / (steps - 1) as f64;
            fill_range::<$t>(out, move |i| {
                let v = if i < half {
                    step.mul_add(i as f64, a)
                } else {
                    (-step).mul_add((steps - i - 1) as f64, b)
                };
                v as $t
            })
        }};
    }
    macro_rules! float_fill {
        ($t:ty) => {{
            let (a, b) = (start.to::<$t>()?, end.to::<$t>()?);
            let step = (b - a) / (steps - 1) as $t;
            fill_range::<$t>(out, move |i| {
                if i < half {
                    step.mul_add(i as $t, a)
                } else {
                    (-step).mul_add((steps - i - 1) as $t, b)
                }
            })
        }};
    }
    macro_rules! reduced_fill {
        ($t:ty, $fused:expr) => {{
            // Half and bfloat16 compute in float (their opmath type) and round the value to
            // the type; torch's bfloat16 loop fuses the multiply-add, its half loop does not.
            let (a, b) = (
                <$t>::from_f32(start.to::<f32>()?).to_f32(),
                <$t>::from_f32(end.to::<f32>()?).to_f32(),
            );
            let step = (b - a) / (steps - 1) as f32;
            let mul_add = |x: f32, k: f32, y: f32| if $fused { x.mul_add(k, y) } else { x * k + y };
            fill_range::<$t>(out, move |i| {
                <$t>::from_f32(if i < half {
                    mul_add(step, i as f32, a)
                } else {
                    mul_add(-step, (steps - i - 1) as f32, b)
                })
            })
        }};
    }
    match dtype {
        ScalarType::Byte => int_fill!(u8),
        ScalarType::Char => int_fill!(i8),
        ScalarType::Short => int_fill!(i16),
        ScalarType::Int => int_fill!(i32),
        ScalarType::Long => int_fill!(i64),
        ScalarType::Float => float_fill!(f32),
        ScalarType::Double => float_fill!(f64),
        ScalarType::Half => reduced_fill!(half::f16, false),
        ScalarType::BFloat16 => reduced_fill!(half::bf16, true),
        other => Err(dispatch_error("linspace_cpu", other)),
    }?;
    Ok(out)
}

/// `logspace(start, end, steps, base=10.0, ...)`.
#[allow(clippy::too_many_arguments)]
pub fn logspace(
    start: &Scalar,
    end: &Scalar,
    steps: i64,
    base: f64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    torch_check!(steps >= 0, "number of steps must be non-negative");
    let t = empty_options(&[steps], dtype, layout, device, pin_memory)?;
    ops::logspace_out::call(start, end, steps, base, &t)?;
    Ok(t)
}

/// `logspace(start, end, steps, base, out=)` (RangeFactories.cpp): `base` to the powers of
/// the linspace, computed in double with `start` and `end` first cast to the element type.
pub fn logspace_out<'a>(
    start: &Scalar,
    end: &Scalar,
    steps: i64,
    base: f64,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    torch_check!(steps >= 0, "number of steps must be non-negative");
    resize_range_out("logspace", out, steps)?;
    if steps == 0 || out.is_meta() {
        return Ok(out);
    }
    let dtype = out.dtype();
    if steps == 1 {
        out.fill_(base.powf(start.to::<f64>()?))?;
        return Ok(out);
    }
    let half = steps / 2;
    macro_rules! pow_fill {
        ($t:ty, $cast:ty, $diff:expr, $from:expr) => {{
            let (sa, sb) = (start.to::<$cast>()?, end.to::<$cast>()?);
            let (a, b) = (as_double::<$cast>(sa), as_double::<$cast>(sb));
            // `end - start` in the element type (integers promoted to int), then double.
            let diff: fn($cast, $cast) -> f64 = $diff;
            let step = diff(sb, sa) / (steps - 1) as f64;
            let from: fn(f64) -> $t = $from;
            fill_range::<$t>(out, move |i| {
                let e = if i < half {
                    a + step * i as f64
                } else {
                    b - step * (steps - i - 1) as f64
                };
                from(base.powf(e))
            })
        }};
    }
    match dtype {
        ScalarType::Byte => pow_fill!(u8, u8, |b, a| (b as i32 - a as i32) as f64, |v| v as u8),
        ScalarType::Char => pow_fill!(i8, i8, |b, a| (b as i32 - a as i32) as f64, |v| v as i8),
        ScalarType::Short => {
            pow_fill!(i16, i16, |b, a| (b as i32 - a as i32) as f64, |v| v as i16)
        }
        ScalarType::Int => pow_fill!(i32, i32, |b, a| b.wrapping_sub(a) as f64, |v| v as i32),
        ScalarType::Long => pow_fill!(i64, i64, |b, a| b.wrapping_sub(a) as f64, |v| v as i64),
        ScalarType::Float => pow_fill!(f32, f32, |b, a| (b - a) as f64, |v| v as f32),
        ScalarType::Double => pow_fill!(f64, f64, |b, a| b - a, |v| v),
        ScalarType::Half => pow_fill!(
            half::f16,
            half::f16,
            |b, a| half::f16::from_f32(b.to_f32() - a.to_f32()).to_f64(),
            half::f16::from_f64
        ),
        ScalarType::BFloat16 => pow_fill!(
            half::bf16,
            half::bf16,
            |b, a| half::bf16::from_f32(b.to_f32() - a.to_f32()).to_f64(),
            half::bf16::from_f64
        ),
        other => Err(dispatch_error("logspace_cpu", other)),
    }?;
    Ok(out)
}

/// An element as double (`static_cast<double>`), through the scalar conversions.
fn as_double<T: ratten_core::Element>(x: T) -> f64 {
    x.to_scalar().to::<f64>().unwrap_or(f64::NAN)
}

/// `eye(n, ...)`: the n x n identity.
pub fn eye(
    n: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    eye_m(n, n, dtype, layout, device, pin_memory)
}

/// `eye(n, m, ...)`: ones on the main diagonal of an n x m matrix.
pub fn eye_m(
    n: i64,
    m: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let t = empty_options(&[0], dtype, layout, device, pin_memory)?;
    ops::eye_m_out::call(n, m, &t)?;
    Ok(t)
}

/// `eye(n, out=)`.
pub fn eye_out_cpu(n: i64, out: &Tensor) -> Result<&Tensor> {
    eye_out_cpu_m(n, n, out)
}

/// `eye(n, m, out=)`: `out` resized to n x m, zeroed, its diagonal set to one.
pub fn eye_out_cpu_m(n: i64, m: i64, out: &Tensor) -> Result<&Tensor> {
    torch_check!(n >= 0, "n must be greater or equal to 0, got {n}");
    torch_check!(m >= 0, "m must be greater or equal to 0, got {m}");
    out.resize_(&[n, m])?;
    if out.is_meta() {
        return Ok(out);
    }
    out.zero_()?;
    // torch's "eye" dispatch list has no barebones unsigned types (zero_ ran before it).
    if out.dtype().is_barebones_unsigned() {
        return Err(Error::not_implemented(format!(
            "\"eye\" not implemented for '{}'",
            out.dtype()
        )));
    }
    out.diagonal()?.fill_(1i64)?;
    Ok(out)
}

impl Tensor {
    /// `torch.empty(sizes, dtype=, device=)`: contents unspecified (but initialised memory).
    pub fn empty(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        let o = options.into();
        ops::empty_memory_format::call(sizes, o.dtype, None, o.device, None, None)
    }

    /// `torch.zeros`.
    pub fn zeros(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        let o = options.into();
        ops::zeros::call(sizes, o.dtype, None, o.device, None)
    }

    /// `torch.ones`.
    pub fn ones(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        let o = options.into();
        ops::ones::call(sizes, o.dtype, None, o.device, None)
    }

    /// `torch.full(sizes, fill_value)`; without a dtype, inferred from the value as torch
    /// does (bool, int64, the default complex dtype, the default dtype).
    pub fn full(
        sizes: &[i64],
        fill_value: impl Into<Scalar>,
        options: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let o = options.into();
        ops::full::call(sizes, &fill_value.into(), o.dtype, None, o.device, None)
    }

    /// A CPU tensor holding a copy of `data` with shape `sizes` (numel must match).
    pub fn from_slice<T: Element>(data: &[T], sizes: &[i64]) -> Result<Tensor> {
        TensorBase::from_slice(data, sizes).map(Tensor::from)
    }

    /// Like [`from_slice`](Self::from_slice), taking a Vec.
    pub fn from_vec<T: Element>(data: Vec<T>, sizes: &[i64]) -> Result<Tensor> {
        TensorBase::from_slice(&data, sizes).map(Tensor::from)
    }

    /// `torch.scalar_tensor(s)`: a 0-dim tensor, float32 unless a dtype is given.
    pub fn scalar_tensor(
        s: impl Into<Scalar>,
        options: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let o = options.into();
        ops::scalar_tensor::call(&s.into(), o.dtype, None, o.device, None)
    }

    /// `wrapped_scalar_tensor(s)`: the 0-dim tensor a number becomes when it is passed where a
    /// Tensor is expected (double -> float64, int -> int64, bool, complex -> complex128),
    /// marked as a wrapped number for type promotion.
    pub fn wrapped_scalar_tensor(s: impl Into<Scalar>, device: Device) -> Result<Tensor> {
        let s = s.into();
        let t = Self::scalar_tensor(s, (s.scalar_type(), device))?;
        t.set_wrapped_number(true)?;
        Ok(t)
    }

    /// `torch.arange(end)`: `0, 1, ..., end - 1`.
    pub fn arange(end: impl Into<Scalar>, options: impl Into<TensorOptions>) -> Result<Tensor> {
        let o = options.into();
        ops::arange::call(&end.into(), o.dtype, None, o.device, None)
    }

    /// `torch.arange(start, end)`.
    pub fn arange_start(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        options: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let o = options.into();
        ops::arange_start::call(&start.into(), &end.into(), o.dtype, None, o.device, None)
    }

    /// `torch.arange(start, end, step)`.
    pub fn arange_start_step(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        options: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let o = options.into();
        ops::arange_start_step::call(
            &start.into(),
            &end.into(),
            &step.into(),
            o.dtype,
            None,
            o.device,
            None,
        )
    }

    /// `torch.eye(n)`.
    pub fn eye(n: i64, options: impl Into<TensorOptions>) -> Result<Tensor> {
        let o = options.into();
        ops::eye::call(n, o.dtype, None, o.device, None)
    }

    /// `torch.eye(n, m)`.
    pub fn eye_m(n: i64, m: i64, options: impl Into<TensorOptions>) -> Result<Tensor> {
        let o = options.into();
        ops::eye_m::call(n, m, o.dtype, None, o.device, None)
    }

    /// `fill_(value)`: writes `value` (converted with c10's overflow checks) into every
    /// element: the `fill_.Scalar` operator, through the dispatcher (its CPU kernel is
    /// [`fill_scalar_checked`]; on meta it writes nothing).
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<&Tensor> {
        ops::fill__Scalar::call(self, &value.into())?;
        Ok(self)
    }
}

/// `fill_.Scalar` on the CPU: `value` converted with c10's checks first (an overflow leaves
/// the tensor untouched), then written through TensorIterator's nullary loop
/// (`native::copy::fill_`).
pub fn fill_scalar_checked(self_: &Tensor, value: &Scalar) -> Result<()> {
    let mut value = *value;
    let dtype = self_.dtype();
    // The checks are those of PyTorch's two paths:
    // - a 1-element CPU tensor goes through `scalar_fill`, whose half / bfloat16 cast goes
    //   through double (a complex value with an imaginary part is refused as "double")
    //   and then casts without the overflow check (1e300 becomes inf): the value is
    //   rounded here the way that cast rounds, and then passes the check; complex32 is
    //   checked as c10::complex<c10::Half>;
    // - otherwise the fill kernel converts a complex32 value to its opmath
    //   complex<float> with the check (1e300 is refused, 70000 becomes inf+0j).
    if self_.numel() == 1 && !self_.is_meta() {
        if matches!(dtype, ScalarType::Half | ScalarType::BFloat16) {
            value.check_fits(ScalarType::Double)?;
            value = unchecked_reduced_value(dtype, value);
        }
        value.check_fits(dtype)?;
    } else if dtype == ScalarType::ComplexHalf {
        value.check_fits(ScalarType::ComplexFloat)?;
    } else {
        value.check_fits(dtype)?;
    }
    if !self_.is_meta() {
        crate::native::copy::fill_(self_, &value)?;
    }
    Ok(())
}

/// `value` as an unchecked `static_cast` to half or bfloat16 leaves it (through float, as
/// c10's constructors go), so that c10's overflow check then passes; other dtypes keep
/// `value`.
fn unchecked_reduced_value(dtype: ScalarType, value: Scalar) -> Scalar {
    // The real part: the caller has refused a complex value with an imaginary part.
    let re = match value {
        Scalar::Bool(b) => b as u8 as f64,
        Scalar::Int(i) => i as f64,
        Scalar::UInt64(u) => u as f64,
        Scalar::Double(d) => d,
        Scalar::ComplexDouble(z) => z.re,
    };
    match dtype {
        ScalarType::Half => Scalar::Double(half::f16::from_f32(re as f32).to_f64()),
        ScalarType::BFloat16 => Scalar::Double(half::bf16::from_f32(re as f32).to_f64()),
        _ => value,
    }
}

/// `compute_arange_size` with `arange_check_bounds` (RangeUtils.h), for real arguments.
fn compute_arange_size(
    start: &Scalar,
    end: &Scalar,
    step: &Scalar,
    dtype: ScalarType,
) -> Result<i64> {
    // Validation in double precision.
    let (ds, de, dp) = (start.to::<f64>()?, end.to::<f64>()?, step.to::<f64>()?);
    if dp == 0.0 || dp.is_nan() {
        return Err(Error::runtime("step must be nonzero"));
    }
    if !(ds.is_finite() && de.is_finite()) {
        return Err(Error::runtime(format!(
            "unsupported range: {} -> {}",
            format_g(ds),
            format_g(de)
        )));
    }
    if !((dp > 0.0 && de >= ds) || (dp < 0.0 && de <= ds)) {
        return Err(Error::runtime(
            "upper bound and lower bound inconsistent with step sign",
        ));
    }
    let all_int = [start, end, step].iter().all(|s| s.is_integral(false));
    let size_d = if dtype == ScalarType::Long && all_int {
        // int64 has more precision than double: compute the count exactly.
        let (a, b, s) = (start.to::<i64>()?, end.to::<i64>()?, step.to::<i64>()?);
        let sgn = s.signum();
        let num = (b as i128) - (a as i128) + (s as i128) - (sgn as i128);
        (num / s as i128) as f64
    } else {
        ((de - ds) / dp).ceil()
    };
    if !(size_d >= 0.0 && size_d <= i64::MAX as f64) {
        return Err(Error::runtime("invalid size, possible overflow?"));
    }
    Ok(size_d as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arange_size_rules() {
        let size = |a: Scalar, b: Scalar, s: Scalar, d| compute_arange_size(&a, &b, &s, d).unwrap();
        assert_eq!(
            size(0i64.into(), 10i64.into(), 3i64.into(), ScalarType::Long),
            4
        );
        assert_eq!(
            size(10i64.into(), 0i64.into(), (-3i64).into(), ScalarType::Long),
            4
        );
        assert_eq!(
            size(0.0.into(), 1.0.into(), 0.1.into(), ScalarType::Float),
            10
        );
        assert_eq!(
            size(0i64.into(), 0i64.into(), 1i64.into(), ScalarType::Long),
            0
        );
        // The exact int64 count survives values beyond double precision.
        let big = (1i64 << 60) + 1;
        assert_eq!(
            size(
                0i64.into(),
                big.into(),
                (1i64 << 59).into(),
                ScalarType::Long
            ),
            3
        );
    }

    #[test]
    fn fill_walks_strided_views() {
        let t = Tensor::zeros(&[3, 3], ScalarType::Int).unwrap();
        let column = t.as_strided_with(&[3], &[3], Some(1)).unwrap();
        column.fill_(7i64).unwrap();
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 7, 0, 0, 7, 0, 0, 7, 0]);
        // An overflowing value leaves the tensor untouched.
        let e = column.fill_(1i64 << 40).unwrap_err();
        assert_eq!(
            e.message(),
            "value cannot be converted to type int without overflow"
        );
        assert_eq!(t.to_vec::<i32>().unwrap()[1], 7);
    }
}
