//! The short form: runs of at most [`SHORT_RUN`] elements, computed element by element in
//! scalar code before any of the vector paths' set-up (Note [Pointwise kernels at
//! bandwidth]), for the dtype combinations of [`ShortForm`].

use half::{bf16, f16};
use ratten_core::ScalarType;

use crate::native::cpu::elements::{cast, is_dtype, Elem, Kind};

use super::{each_input, OpN, MAX_OPERANDS};

/// Runs of at most this many elements take [`short_run`]: for them the vector paths' set-up
/// (stride copies, the block buffers, the tiling test, the choice among paths, the call into
/// the ISA trampoline) costs more than the elements.
pub const SHORT_RUN: usize = 16;

/// Which element types the operands of a short run are read and written as (decided once per
/// kernel call from the operands' dtypes).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ShortForm {
    /// Inputs of the computation type `M`, output of the result type `R`.
    Native,
    /// Half (bfloat16) inputs computed in f32, the output half (bfloat16) too, or `R` when
    /// it is bool (a comparison).
    Half,
    HalfToR,
    BFloat16,
    BFloat16ToR,
    /// Anything else (mixed dtypes, complex32, casts through the common dtype): the general
    /// paths.
    None,
}

/// The [`ShortForm`] of a kernel call.
#[inline(always)]
pub(crate) fn short_form<M: Elem, R: Elem, const N: usize>(
    via: Option<ScalarType>,
    dts: &[ScalarType; MAX_OPERANDS],
) -> ShortForm {
    let inputs_are = |d: ScalarType| each_input::<N>(|k| dts[k] == d);
    match via {
        None if dts[0] == R::DTYPE && inputs_are(M::DTYPE) => ShortForm::Native,
        Some(v @ (ScalarType::Half | ScalarType::BFloat16))
            if M::DTYPE == ScalarType::Float && inputs_are(v) =>
        {
            let half = v == ScalarType::Half;
            if dts[0] == v && R::DTYPE == ScalarType::Float {
                if half {
                    ShortForm::Half
                } else {
                    ShortForm::BFloat16
                }
            } else if dts[0] == R::DTYPE && R::KIND == Kind::Bool {
                if half {
                    ShortForm::HalfToR
                } else {
                    ShortForm::BFloat16ToR
                }
            } else {
                ShortForm::None
            }
        }
        _ => ShortForm::None,
    }
}

/// A short 1-D run element by element: inputs read as `A` (any stride, 0 included) and cast
/// to `M`, results cast from `R` and written as `O`. Scalar code, outside the ISA trampoline:
/// for a handful of elements the call into it costs more than vectors save.
///
/// # Safety
/// `p`/`s` are operand pointers and byte strides of a run of `n` elements, operand 0 of
/// element type `O`, the inputs of `A`.
#[inline(always)]
pub(crate) unsafe fn short_run<A: Elem, O: Elem, M: Elem, R: Elem, const N: usize>(
    p: &[*mut u8],
    s: &[isize],
    n: usize,
    f: &impl OpN<M, R, N>,
) {
    let (mut o, os) = (p[0], s[0]);
    let mut q = [std::ptr::null::<u8>(); N];
    let mut qs = [0isize; N];
    for k in 0..N {
        q[k] = p[k + 1].cast_const();
        qs[k] = s[k + 1];
    }
    for _ in 0..n {
        let mut x = [M::default(); N];
        for k in 0..N {
            // SAFETY: per the contract (`Elem::read` normalises bool bytes).
            x[k] = cast::<A, M>(unsafe { A::read(q[k]) });
            q[k] = q[k].wrapping_offset(qs[k]);
        }
        // SAFETY: per the contract.
        unsafe { o.cast::<O>().write(cast::<R, O>(f.call(x))) };
        o = o.wrapping_offset(os);
    }
}

/// An f32 computation giving `d` (the reduced short forms' result types).
const fn f32_giving<M: Elem, R: Elem>(d: ScalarType) -> bool {
    is_dtype::<M>(ScalarType::Float) && is_dtype::<R>(d)
}

/// [`short_run`] for the half and bfloat16 [`ShortForm`]s (out of line: the native form,
/// inlined into the loop closure, is the one a 1-element f32 op takes).
///
/// # Safety
/// As [`short_run`], with the operands' dtypes those `form` was computed from.
#[inline(never)]
pub(crate) unsafe fn short_run_reduced<M: Elem, R: Elem, const N: usize>(
    form: ShortForm,
    p: &[*mut u8],
    s: &[isize],
    n: usize,
    f: &impl OpN<M, R, N>,
) {
    // The half and bfloat16 forms exist for the f32 computation only, into f32 (stored as the
    // reduced type) or bool; they are compiled for those types only (Note [Kernel
    // instantiations]).
    // SAFETY (every arm): the element types are those `short_form` matched.
    unsafe {
        match form {
            ShortForm::Half if const { f32_giving::<M, R>(ScalarType::Float) } => {
                short_run::<f16, f16, M, R, N>(p, s, n, f)
            }
            ShortForm::HalfToR if const { f32_giving::<M, R>(ScalarType::Bool) } => {
                short_run::<f16, R, M, R, N>(p, s, n, f)
            }
            ShortForm::BFloat16 if const { f32_giving::<M, R>(ScalarType::Float) } => {
                short_run::<bf16, bf16, M, R, N>(p, s, n, f)
            }
            ShortForm::BFloat16ToR if const { f32_giving::<M, R>(ScalarType::Bool) } => {
                short_run::<bf16, R, M, R, N>(p, s, n, f)
            }
            // The caller takes the native form inline; computing it here is correct too.
            ShortForm::Native => short_run::<M, R, M, R, N>(p, s, n, f),
            _ => debug_assert!(false, "short_run_reduced: no short form {form:?}"),
        }
    }
}
