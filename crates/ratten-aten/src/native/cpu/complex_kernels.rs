//! The complex kernels of UnaryOpsKernel.cpp: `conj_physical` (`conj_kernel`) and `sgn`
//! (`sgn_kernel`), behind their DispatchStubs. Both compute complex32 in complex64 (the
//! driver converts), as PyTorch's `AT_DISPATCH_COMPLEX_TYPES_AND(kComplexHalf, ...)` does.

use num_traits::Float;
use ratten_core::dtype::{c128, c64};
use ratten_core::{Result, ScalarType};

use super::binary_kernels::stub;
use super::unary_kernels::{UnaryFn, COPY_STUB};
use super::{cpu_unary, opmath_dtype};
use crate::dispatch_stub::DispatchStub;
use crate::tensor_iterator::TensorIteratorBase;

/// `conj_kernel`: `re - i im` for complex dtypes; every other dtype is copied (conjugation is
/// the identity on real numbers: PyTorch's `direct_copy_kernel`).
fn conj_kernel(iter: &TensorIteratorBase) -> Result<()> {
    match opmath_dtype(iter.dtype(0)) {
        ScalarType::ComplexFloat => cpu_unary::<c64, c64>(iter, |z: c64| z.conj()),
        ScalarType::ComplexDouble => cpu_unary::<c128, c128>(iter, |z: c128| z.conj()),
        _ => (COPY_STUB.get(iter.device_type())?)(iter),
    }
}
stub!(
    /// `conj_physical_stub`.
    CONJ_PHYSICAL_STUB,
    "conj_physical_stub",
    UnaryFn,
    conj_kernel
);

/// `sgn_impl`: `z / |z|`, and 0 at 0. |z| is the hypotenuse without intermediate overflow
/// (`1e30 + 1e30j` has a sign), each part divided by it as PyTorch's vectorised `sgn` divides
/// (its scalar path multiplies by a reciprocal and can differ in the last bit).
#[inline(always)]
fn sgn_of<T: Float>(re: T, im: T) -> (T, T) {
    let r = re.hypot(im);
    if r == T::zero() {
        (T::zero(), T::zero())
    } else {
        (re / r, im / r)
    }
}

/// `sgn_kernel` (complex dtypes only: `sgn_out` runs `sign_stub` for the others).
fn sgn_kernel(iter: &TensorIteratorBase) -> Result<()> {
    match opmath_dtype(iter.dtype(0)) {
        ScalarType::ComplexFloat => cpu_unary::<c64, c64>(iter, |z: c64| {
            let (re, im) = sgn_of(z.re, z.im);
            c64::new(re, im)
        }),
        ScalarType::ComplexDouble => cpu_unary::<c128, c128>(iter, |z: c128| {
            let (re, im) = sgn_of(z.re, z.im);
            c128::new(re, im)
        }),
        other => Err(super::not_implemented("sgn_cpu", other)),
    }
}
stub!(
    /// `sgn_stub`.
    SGN_STUB,
    "sgn_stub",
    UnaryFn,
    sgn_kernel
);
