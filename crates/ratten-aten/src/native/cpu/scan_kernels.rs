//! The cumulative ops' kernels (ATen's `ReduceOpsKernel.cpp` `cpu_cum_base_kernel` and
//! `TensorCompare.cpp`'s `cummax_cummin_helper`): a TensorIterator over every dim but `dim`
//! hands each line along `dim` to a running accumulation. Accumulation types are PyTorch's
//! CPU `acc_type`: f64 for f32 (and f64), f32 for half and bfloat16, complex128 for
//! complex64, int64 for the integer types.

use std::borrow::Cow;

use half::{bf16, f16};
use ratten_core::dtype::{c128, c64};
use ratten_core::{Result, ScalarType, TensorBase};

use crate::native::cpu::binary_kernels::Arith;
use crate::native::cpu::elements::{cast, not_implemented, Elem};
use crate::native::cpu::reduce_kernels::{
    dispatch_real_with_opmath, dispatch_with_opmath, Extremum,
};
use crate::tensor_iterator::{MaybeOwnedOutput, TensorIteratorConfig};
use crate::Tensor;

/// `t` without dimension `dim` (its first element's view of every line along `dim`) and
/// `dim`'s byte stride.
fn squash(t: &Tensor, dim: usize) -> Result<(TensorBase, isize)> {
    let mut sizes = t.sizes().to_vec();
    let mut strides = t.strides().to_vec();
    let stride = strides[dim] as isize * t.element_size() as isize;
    sizes.remove(dim);
    strides.remove(dim);
    Ok((t.as_strided(&sizes, &strides)?.into_base(), stride))
}

/// What [`cum_base_kernel`] runs per line: the lines' first elements, their strides, the length.
pub type LineFn<'a> = dyn Fn(&[*mut u8], &[isize], usize) + Sync + 'a;

/// `cpu_cum_base_kernel`: runs `line(ptrs, strides, n)` for every line along `dim`, where
/// `ptrs` are the first elements of the line in each of `outputs` and then `input`, `strides`
/// their byte strides along `dim`, and `n` the line's length. `input` must have `dim`'s size
/// in every output; lines run in parallel.
///
/// # Safety
/// `line` may touch only the `n` elements of each line at those strides, as the dtypes of
/// the tensors they belong to.
pub unsafe fn cum_base_kernel(
    outputs: &[&Tensor],
    input: &Tensor,
    dim: usize,
    line: &LineFn<'_>,
) -> Result<()> {
    let n = input.sizes()[dim] as usize;
    let mut config = TensorIteratorConfig::new()
        .set_check_mem_overlap(false)
        .check_all_same_dtype(false)
        .resize_outputs(false);
    let mut along: Vec<isize> = Vec::with_capacity(outputs.len() + 1);
    for o in outputs {
        let (view, s) = squash(o, dim)?;
        along.push(s);
        config = config.add_output(MaybeOwnedOutput(Some(Cow::Owned(view))))?;
    }
    let (view, s) = squash(input, dim)?;
    along.push(s);
    let iter = config.add_const_input(view).build_standalone()?;
    if iter.is_meta() {
        return Ok(());
    }
    let nt = along.len();
    // A grain of lines so that each chunk has about 32K elements.
    let grain = (32768 / n.max(1)).max(1) as i64;
    let body = |data: &[*mut u8], strides: &[isize], n0: usize, n1: usize| {
        let mut ptrs: smallvec::SmallVec<[*mut u8; 3]> = smallvec::SmallVec::from_slice(data);
        for j in 0..n1 {
            for i in 0..n0 {
                for k in 0..nt {
                    ptrs[k] = data[k]
                        .wrapping_offset(i as isize * strides[k] + j as isize * strides[nt + k]);
                }
                line(&ptrs, &along, n);
            }
        }
    };
    iter.for_each(&body, grain)
}

/// The accumulation type of a cumulative sum or product of `T`.
pub trait CumAcc: Elem {
    type Acc: Arith;
}
macro_rules! cum_acc {
    ($($t:ty => $a:ty),*) => {$( impl CumAcc for $t { type Acc = $a; } )*};
}
cum_acc!(u8 => i64, i8 => i64, i16 => i64, i32 => i64, i64 => i64, bool => bool,
    f16 => f32, bf16 => f32, f32 => f64, f64 => f64, c64 => c128, c128 => c128);

/// cumsum (`PROD` false) or cumprod of a line of `T` (the result's dtype; the input has been
/// converted to it).
fn cum_accumulate<T: CumAcc, const PROD: bool>(
    outputs: &[&Tensor],
    input: &Tensor,
    dim: usize,
) -> Result<()> {
    let line = |p: &[*mut u8], s: &[isize], n: usize| {
        let mut acc: T::Acc = T::Acc::from_i64(i64::from(PROD));
        for i in 0..n {
            // SAFETY: element i of the input line and of the output line (cum_base_kernel).
            unsafe {
                let x: T::Acc = cast(T::read(p[1].wrapping_offset(i as isize * s[1])));
                acc = if PROD { acc.mul(x) } else { acc.add(x) };
                p[0].wrapping_offset(i as isize * s[0])
                    .cast::<T>()
                    .write(cast(acc));
            }
        }
    };
    // SAFETY: `line` touches the lines' elements only, as `T` (both tensors have dtype `T`).
    unsafe { cum_base_kernel(outputs, input, dim, &line) }
}

/// `cumsum_stub`: `result` and `self_` (of the result's dtype) along `dim`.
pub fn cumsum_kernel(result: &Tensor, self_: &Tensor, dim: usize) -> Result<()> {
    dispatch_with_opmath!(result.dtype(), "cumsum_out_cpu", T, _M => cum_accumulate::<T, false>(&[result], self_, dim))
}

/// `cumprod_stub`.
pub fn cumprod_kernel(result: &Tensor, self_: &Tensor, dim: usize) -> Result<()> {
    dispatch_with_opmath!(result.dtype(), "cumprod_out_cpu", T, _M => cum_accumulate::<T, true>(&[result], self_, dim))
}

/// `cummax_cummin_helper`: the running maximum (`MAX`) or minimum and the index where it was
/// last reached (ties take the later index; NaN, once seen, stays, each NaN taking its index).
fn cum_extremum<T: Elem, M: Extremum, const MAX: bool>(
    values: &Tensor,
    indices: &Tensor,
    self_: &Tensor,
    dim: usize,
) -> Result<()> {
    let line = |p: &[*mut u8], s: &[isize], n: usize| {
        // SAFETY (whole body): elements i < n of each line (cum_base_kernel); values and input
        // have dtype `T`, indices int64.
        unsafe {
            let mut out: M = cast(T::read(p[2]));
            let mut idx = 0i64;
            for i in 0..n {
                let cur: M = cast(T::read(p[2].wrapping_offset(i as isize * s[2])));
                // std::greater_equal / std::less_equal.
                let better = cur == out || if MAX { cur.gt(out) } else { cur.lt(out) };
                if cur.is_nan() || (!out.is_nan() && better) {
                    out = cur;
                    idx = i as i64;
                }
                p[0].wrapping_offset(i as isize * s[0])
                    .cast::<T>()
                    .write(cast(out));
                p[1].wrapping_offset(i as isize * s[1])
                    .cast::<i64>()
                    .write(idx);
            }
        }
    };
    // SAFETY: as above.
    unsafe { cum_base_kernel(&[values, indices], self_, dim, &line) }
}

/// `cummax_helper_cpu`.
pub fn cummax_kernel(values: &Tensor, indices: &Tensor, self_: &Tensor, dim: usize) -> Result<()> {
    dispatch_real_with_opmath!(self_.dtype(), "cummax_cpu", T, M =>
        cum_extremum::<T, M, true>(values, indices, self_, dim))
}

/// `cummin_helper_cpu`.
pub fn cummin_kernel(values: &Tensor, indices: &Tensor, self_: &Tensor, dim: usize) -> Result<()> {
    dispatch_real_with_opmath!(self_.dtype(), "cummin_cpu", T, M =>
        cum_extremum::<T, M, false>(values, indices, self_, dim))
}

/// `_log_add_exp_helper`.
#[inline]
fn log_add_exp(x: f64, y: f64) -> f64 {
    let (min, max) = if y.is_nan() {
        (y, y)
    } else {
        (x.min(y), x.max(y))
    };
    if min != max || min.is_finite() {
        max + (min - max).exp().ln_1p()
    } else {
        x
    }
}

/// `logcumsumexp_stub` for the floating types, accumulated as PyTorch's `acc_type` (f64 for
/// f32 and f64; f32 for half and bfloat16, rounded per step).
fn logcumsumexp_typed<T: Elem, const WIDE: bool>(
    result: &Tensor,
    self_: &Tensor,
    dim: usize,
) -> Result<()> {
    let line = |p: &[*mut u8], s: &[isize], n: usize| {
        let mut acc = f64::NEG_INFINITY;
        for i in 0..n {
            // SAFETY: elements i < n of each line, as `T` (cum_base_kernel).
            unsafe {
                let x = T::read(p[1].wrapping_offset(i as isize * s[1])).to_f64();
                acc = log_add_exp(x, acc);
                if !WIDE {
                    acc = acc as f32 as f64;
                }
                p[0].wrapping_offset(i as isize * s[0])
                    .cast::<T>()
                    .write(T::from_f64(acc));
            }
        }
    };
    // SAFETY: as above.
    unsafe { cum_base_kernel(&[result], self_, dim, &line) }
}

/// `logcumsumexp_stub`.
pub fn logcumsumexp_kernel(result: &Tensor, self_: &Tensor, dim: usize) -> Result<()> {
    match self_.dtype() {
        ScalarType::Half => logcumsumexp_typed::<f16, false>(result, self_, dim),
        ScalarType::BFloat16 => logcumsumexp_typed::<bf16, false>(result, self_, dim),
        ScalarType::Float => logcumsumexp_typed::<f32, true>(result, self_, dim),
        ScalarType::Double => logcumsumexp_typed::<f64, true>(result, self_, dim),
        d => Err(not_implemented("logcumsumexp_out_cpu", d)),
    }
}
