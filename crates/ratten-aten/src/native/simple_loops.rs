//! The simple element loops behind the demonstration operators of the code generator (add,
//! mul, neg, argmax, ...): one value at a time, through a dynamically typed [`Value`], over
//! any strides. Correct for every dtype and layout, not fast; the vectorised kernels come from
//! TensorIterator and DispatchStub.

use half::{bf16, f16};
use num_complex::Complex;
use ratten_core::dtype::{c128, c32, c64};
use ratten_core::type_promotion::promote_skip_undefined;
use ratten_core::{
    get_default_complex_dtype, get_default_dtype, promote_types, Error, Result, ScalarType,
    TensorAccess, TensorBase,
};

use crate::Tensor;

/// One element, in the category an operation computes in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    Complex(c128),
}

impl Value {
    pub fn as_bool(self) -> bool {
        match self {
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Float(f) => f != 0.0,
            Value::Complex(z) => z.re != 0.0 || z.im != 0.0,
        }
    }
    pub fn as_i64(self) -> i64 {
        match self {
            Value::Bool(b) => b as i64,
            Value::Int(i) => i,
            Value::Float(f) => f as i64,
            Value::Complex(z) => z.re as i64,
        }
    }
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Bool(b) => b as i64 as f64,
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
            Value::Complex(z) => z.re,
        }
    }
    pub fn as_complex(self) -> c128 {
        match self {
            Value::Complex(z) => z,
            v => Complex::new(v.as_f64(), 0.0),
        }
    }
    /// This value in the computation category of `dtype`.
    pub fn to_category(self, dtype: ScalarType) -> Value {
        if dtype == ScalarType::Bool {
            Value::Bool(self.as_bool())
        } else if dtype.is_complex() {
            Value::Complex(self.as_complex())
        } else if dtype.is_floating_point() {
            Value::Float(self.as_f64())
        } else {
            Value::Int(self.as_i64())
        }
    }
}

type LoadFn = unsafe fn(*const u8) -> Value;
type StoreFn = unsafe fn(*mut u8, Value);

macro_rules! load_store {
    ($load:ident, $store:ident, $t:ty, |$x:ident| $to_value:expr, |$v:ident| $from_value:expr) => {
        /// # Safety
        /// `p` points at a readable element of this type (possibly unaligned).
        unsafe fn $load(p: *const u8) -> Value {
            // SAFETY: guaranteed by the caller.
            let $x: $t = unsafe { std::ptr::read_unaligned(p as *const $t) };
            $to_value
        }
        /// # Safety
        /// `p` points at a writable element of this type (possibly unaligned).
        unsafe fn $store(p: *mut u8, $v: Value) {
            let x: $t = $from_value;
            // SAFETY: guaranteed by the caller.
            unsafe { std::ptr::write_unaligned(p as *mut $t, x) }
        }
    };
}

load_store!(
    load_u8,
    store_u8,
    u8,
    |x| Value::Int(x as i64),
    |v| v.as_i64() as u8
);
load_store!(
    load_i8,
    store_i8,
    i8,
    |x| Value::Int(x as i64),
    |v| v.as_i64() as i8
);
load_store!(
    load_i16,
    store_i16,
    i16,
    |x| Value::Int(x as i64),
    |v| v.as_i64() as i16
);
load_store!(
    load_i32,
    store_i32,
    i32,
    |x| Value::Int(x as i64),
    |v| v.as_i64() as i32
);
load_store!(load_i64, store_i64, i64, |x| Value::Int(x), |v| v.as_i64());
load_store!(
    load_f16,
    store_f16,
    f16,
    |x| Value::Float(x.to_f64()),
    |v| f16::from_f64(v.as_f64())
);
load_store!(
    load_bf16,
    store_bf16,
    bf16,
    |x| Value::Float(x.to_f64()),
    |v| bf16::from_f64(v.as_f64())
);
load_store!(
    load_f32,
    store_f32,
    f32,
    |x| Value::Float(x as f64),
    |v| v.as_f64() as f32
);
load_store!(load_f64, store_f64, f64, |x| Value::Float(x), |v| v
    .as_f64());
load_store!(
    load_c32,
    store_c32,
    c32,
    |x| Value::Complex(Complex::new(x.re.to_f64(), x.im.to_f64())),
    |v| {
        let z = v.as_complex();
        Complex::new(f16::from_f64(z.re), f16::from_f64(z.im))
    }
);
load_store!(
    load_c64,
    store_c64,
    c64,
    |x| Value::Complex(Complex::new(x.re as f64, x.im as f64)),
    |v| {
        let z = v.as_complex();
        Complex::new(z.re as f32, z.im as f32)
    }
);
load_store!(load_c128, store_c128, c128, |x| Value::Complex(x), |v| v
    .as_complex());

/// # Safety
/// `p` points at a readable byte.
unsafe fn load_bool(p: *const u8) -> Value {
    // SAFETY: guaranteed by the caller; read as a byte so any stored bit pattern is sound.
    Value::Bool(unsafe { *p } != 0)
}
/// # Safety
/// `p` points at a writable byte.
unsafe fn store_bool(p: *mut u8, v: Value) {
    // SAFETY: guaranteed by the caller.
    unsafe { *p = v.as_bool() as u8 }
}

fn loader(t: ScalarType) -> LoadFn {
    match t {
        ScalarType::Byte => load_u8,
        ScalarType::Char => load_i8,
        ScalarType::Short => load_i16,
        ScalarType::Int => load_i32,
        ScalarType::Long => load_i64,
        ScalarType::Half => load_f16,
        ScalarType::Float => load_f32,
        ScalarType::Double => load_f64,
        ScalarType::ComplexHalf => load_c32,
        ScalarType::ComplexFloat => load_c64,
        ScalarType::ComplexDouble => load_c128,
        ScalarType::Bool => load_bool,
        ScalarType::BFloat16 => load_bf16,
    }
}

fn storer(t: ScalarType) -> StoreFn {
    match t {
        ScalarType::Byte => store_u8,
        ScalarType::Char => store_i8,
        ScalarType::Short => store_i16,
        ScalarType::Int => store_i32,
        ScalarType::Long => store_i64,
        ScalarType::Half => store_f16,
        ScalarType::Float => store_f32,
        ScalarType::Double => store_f64,
        ScalarType::ComplexHalf => store_c32,
        ScalarType::ComplexFloat => store_c64,
        ScalarType::ComplexDouble => store_c128,
        ScalarType::Bool => store_bool,
        ScalarType::BFloat16 => store_bf16,
    }
}

/// `out[i] = f(inputs[0][i], inputs[1][i], ...)` over `out`'s shape; every input must already
/// have `out`'s sizes (expand it first). Inputs are read in `compute`'s category.
pub fn pointwise(
    out: &Tensor,
    inputs: &[&Tensor],
    compute: ScalarType,
    f: impl Fn(&[Value]) -> Result<Value>,
) -> Result<()> {
    for t in inputs {
        if t.sizes() != out.sizes() {
            return Err(Error::runtime(format!(
                "pointwise: input of shape {:?} does not match the output shape {:?}",
                t.sizes().as_slice(),
                out.sizes().as_slice()
            )));
        }
    }
    if out.is_meta() || out.numel() == 0 {
        return Ok(());
    }
    let reads: Vec<&TensorBase> = inputs.iter().map(|t| t.base()).collect();
    let g = TensorAccess::new(&reads, &[out.base()])?;
    let o = g.output(0)?;
    let sizes = o.sizes().to_vec();
    let ndim = sizes.len();
    let mut ptrs = Vec::with_capacity(inputs.len());
    let mut strides = Vec::with_capacity(inputs.len());
    let mut loads = Vec::with_capacity(inputs.len());
    for i in 0..inputs.len() {
        let t = g.input(i)?;
        let Some(p) = t.raw_data_ptr() else {
            return Ok(());
        };
        let es = t.dtype().element_size() as isize;
        ptrs.push(p.as_ptr() as *const u8);
        strides.push(
            t.strides()
                .iter()
                .map(|&s| s as isize * es)
                .collect::<Vec<_>>(),
        );
        loads.push(loader(t.dtype()));
    }
    let Some(op) = o.raw_data_ptr() else {
        return Ok(());
    };
    let oes = o.dtype().element_size() as isize;
    let ostrides: Vec<isize> = o.strides().iter().map(|&s| s as isize * oes).collect();
    let store = storer(o.dtype());
    let mut offsets = vec![0isize; inputs.len()];
    let mut ooff: isize = 0;
    let mut index = vec![0i64; ndim];
    let mut vals = vec![Value::Bool(false); inputs.len()];
    for _ in 0..o.numel() {
        for k in 0..inputs.len() {
            // SAFETY: offsets[k] is sum(index[d] * stride[d]) in bytes for an index inside the
            // input's sizes, an element of a view bounds-checked against its storage; the
            // guard holds every input storage at least shared.
            vals[k] = unsafe { loads[k](ptrs[k].offset(offsets[k])) }.to_category(compute);
        }
        let r = f(&vals)?;
        // SAFETY: as above for the output, whose storage the guard holds exclusively. An input
        // aliasing the output (in-place) was read at this same element just before.
        unsafe { store(op.as_ptr().offset(ooff), r) };
        for d in (0..ndim).rev() {
            index[d] += 1;
            ooff += ostrides[d];
            for k in 0..inputs.len() {
                offsets[k] += strides[k][d];
            }
            if index[d] < sizes[d] {
                break;
            }
            ooff -= ostrides[d] * sizes[d] as isize;
            for k in 0..inputs.len() {
                offsets[k] -= strides[k][d] * sizes[d] as isize;
            }
            index[d] = 0;
        }
    }
    Ok(())
}

/// Reads every element of `t` in row-major order, in `compute`'s category.
pub fn read_values(t: &Tensor, compute: ScalarType) -> Result<Vec<Value>> {
    if t.is_meta() {
        return Err(Error::runtime("read_values: a meta tensor has no data"));
    }
    let c = Tensor::from_base(TensorBase::empty(&t.sizes(), compute, t.device())?);
    pointwise(&c, &[t], compute, |v| Ok(v[0]))?;
    let out = std::cell::RefCell::new(Vec::with_capacity(t.numel() as usize));
    pointwise(&c, &[&c], compute, |v| {
        out.borrow_mut().push(v[0]);
        Ok(v[0])
    })?;
    Ok(out.into_inner())
}

/// `infer_size`: the broadcast shape of two shapes, with PyTorch's error.
pub fn broadcast_shapes(a: &[i64], b: &[i64]) -> Result<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let da = (i + a.len()).checked_sub(n).map(|j| a[j]).unwrap_or(1);
        let db = (i + b.len()).checked_sub(n).map(|j| b[j]).unwrap_or(1);
        if da != db && da != 1 && db != 1 {
            return Err(Error::runtime(format!(
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
            )));
        }
        *o = if da == 1 { db } else { da };
    }
    Ok(out)
}

fn combine_categories(
    higher: Option<ScalarType>,
    lower: Option<ScalarType>,
) -> Result<Option<ScalarType>> {
    let Some(h) = higher else { return Ok(lower) };
    if h.is_complex() {
        return Ok(Some(h));
    }
    if let Some(l) = lower {
        if l.is_complex() {
            // Preserve the value type of the higher category if it is floating.
            if h.is_floating_point() {
                return h
                    .to_complex()
                    .map(Some)
                    .ok_or_else(|| Error::runtime(format!("Unknown Complex ScalarType for {h}")));
            }
            return Ok(Some(l));
        }
    }
    if h.is_floating_point() {
        return Ok(Some(h));
    }
    if h == ScalarType::Bool || lower.is_some_and(|l| l.is_floating_point()) {
        return Ok(promote_skip_undefined(Some(h), lower));
    }
    Ok(Some(h))
}

/// `at::result_type` for tensors: dimensioned tensors first, then zero-dim tensors and
/// wrapped numbers only when they are of a higher category.
pub fn result_type(tensors: &[&Tensor]) -> Result<ScalarType> {
    let (mut dim, mut zero, mut wrapped) = (None, None, None);
    for t in tensors {
        let mut current = t.dtype();
        if t.is_wrapped_number() {
            if current.is_complex() {
                current = get_default_complex_dtype();
            } else if current.is_floating_point() {
                current = get_default_dtype();
            }
        }
        if t.dim() > 0 {
            dim = Some(dim.map_or(current, |d| promote_types(d, current)));
        } else if t.is_wrapped_number() {
            wrapped = Some(wrapped.map_or(current, |d| promote_types(d, current)));
        } else {
            zero = Some(zero.map_or(current, |d| promote_types(d, current)));
        }
    }
    let r = combine_categories(dim, combine_categories(zero, wrapped)?)?;
    r.ok_or_else(|| Error::runtime("result_type: no tensors"))
}

/// The devices of a binary op must agree, except that a zero-dim CPU tensor may join any.
pub fn check_same_device(a: &Tensor, b: &Tensor) -> Result<()> {
    if a.device() == b.device() {
        return Ok(());
    }
    let cpu_scalar = |t: &Tensor| t.dim() == 0 && t.device().is_cpu();
    if cpu_scalar(a) || cpu_scalar(b) {
        return Ok(());
    }
    Err(Error::runtime(format!(
        "Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
        a.device(),
        b.device()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratten_core::Device;

    #[test]
    fn broadcast_and_promotion() {
        assert_eq!(broadcast_shapes(&[2, 1], &[3]).unwrap(), vec![2, 3]);
        assert_eq!(
            broadcast_shapes(&[2], &[3]).unwrap_err().message(),
            "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
        );
        let i = Tensor::from_base(TensorBase::zeros(&[2], ScalarType::Long, Device::CPU).unwrap());
        let f0 =
            Tensor::from_base(TensorBase::zeros(&[], ScalarType::Double, Device::CPU).unwrap());
        let w = Tensor::wrapped_scalar_tensor(1.5, Device::CPU).unwrap();
        let b = Tensor::from_base(TensorBase::zeros(&[2], ScalarType::Bool, Device::CPU).unwrap());
        // A zero-dim double of a higher category gives its own dtype; a wrapped double the
        // default dtype.
        assert_eq!(result_type(&[&i, &f0]).unwrap(), ScalarType::Double);
        assert_eq!(result_type(&[&i, &w]).unwrap(), ScalarType::Float);
        assert_eq!(result_type(&[&b, &i]).unwrap(), ScalarType::Long);
        let wi = Tensor::wrapped_scalar_tensor(3, Device::CPU).unwrap();
        assert_eq!(result_type(&[&b, &wi]).unwrap(), ScalarType::Long);
    }
}
