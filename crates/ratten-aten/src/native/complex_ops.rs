//! Complex numbers as views and conjugation (ComplexHelper.h, UnaryOps.cpp's conj family,
//! TensorFactories.cpp's `real` / `imag`): `view_as_real`, `view_as_complex`, `real`, `imag`,
//! `conj`, `_conj`, `conj_physical` (and its out= and in-place forms), `resolve_conj`,
//! `resolve_neg`, `is_conj`, `is_neg`, and `sgn` (z / |z|), with PyTorch's error texts.

use std::borrow::Cow;

use ratten_core::{Error, Result, ScalarType, TensorBase};

use crate::generated::operators as ops;
use crate::native::cpu::complex_kernels::{CONJ_PHYSICAL_STUB, SGN_STUB};
use crate::native::cpu::unary_kernels::SIGN_STUB;
use crate::native::unary_ops::{empty_result, unary_impl, unary_op_meta};
use crate::structured::MetaBase;
use crate::tensor_iterator::{StandaloneOutputs, TensorIteratorBase};
use crate::Tensor;

// Note [Conjugation without a conjugate bit]
// PyTorch conjugates lazily: `conj()` of a complex tensor is a view with the conjugate bit set
// (`_conj`), and kernels that meet the bit either read through it or materialise it
// (`resolve_conj`, `conj_physical`). ratten's TensorImpl has no conjugate (or negative) bit,
// so:
// - `_conj` of a complex tensor returns a new tensor holding the conjugated values (through
//   `conj_physical`), not a view: writing into it does not change `self`, as it would in
//   torch. Its schema still says `Tensor(a)`, as PyTorch's does; autograd formulas only read
//   it. `_conj` of a real tensor is an alias;
// - `conj` is PyTorch's composite: a real tensor is returned itself, a complex one goes
//   through `_conj`;
// - `is_conj` and `is_neg` are always false, so `resolve_conj` and `resolve_neg` return
//   `self`, and `view_as_real` never meets a conjugated tensor;
// - `conj_physical` is the pointwise kernel (complex conjugation; for a real tensor the
//   functional form returns `self`, the out= form copies).
// The views (`view_as_real`, `view_as_complex`, `real`, `imag`) are real views: they share
// `self`'s storage and version counter and are bounds-checked when made, like every view.

fn base(t: &Tensor) -> &TensorBase {
    t.base()
}

fn wrap(b: TensorBase) -> Tensor {
    Tensor::from(b)
}

/// `view_as_real` (CPU and Meta; `_view_as_real_physical`): a complex tensor as its real
/// dtype with a trailing dim of 2 (real, imaginary), every stride doubled.
pub fn view_as_real(self_: &Tensor) -> Result<Tensor> {
    let b = base(self_);
    let dtype = b.dtype();
    if !dtype.is_complex() {
        return Err(Error::type_error(
            "view_as_real is only supported for complex tensors",
        ));
    }
    let mut sizes = b.sizes().to_vec();
    sizes.push(2);
    let doubled = |x: i64| {
        x.checked_mul(2).ok_or_else(|| {
            Error::runtime(format!(
                "view_as_real: the view's strides or storage offset overflow ({x} * 2)"
            ))
        })
    };
    let mut strides = b
        .strides()
        .iter()
        .map(|&s| doubled(s))
        .collect::<Result<Vec<i64>>>()?;
    strides.push(1);
    let offset = doubled(b.storage_offset())?;
    Ok(wrap(b.as_strided_dtype(
        dtype.to_real(),
        &sizes,
        &strides,
        offset,
    )?))
}

/// `view_as_complex` (CPU and Meta): a half, float or double tensor whose last dim has size 2
/// and stride 1 as the complex tensor of those pairs.
pub fn view_as_complex(self_: &Tensor) -> Result<Tensor> {
    let b = base(self_);
    let dtype = b.dtype();
    let complex = match dtype {
        ScalarType::Half => ScalarType::ComplexHalf,
        ScalarType::Float => ScalarType::ComplexFloat,
        ScalarType::Double => ScalarType::ComplexDouble,
        other => {
            return Err(Error::not_implemented(format!(
                "view_as_complex is only supported for half, float and double tensors, but got \
                 a tensor of scalar type: {other}"
            )))
        }
    };
    let old_sizes = b.sizes();
    let Some((&last, rest)) = old_sizes.split_last() else {
        return Err(Error::runtime(
            "Input tensor must have one or more dimensions",
        ));
    };
    if last != 2 {
        return Err(Error::runtime(
            "Tensor must have a last dimension of size 2",
        ));
    }
    let old_strides = b.strides();
    if old_strides[old_strides.len() - 1] != 1 {
        return Err(Error::runtime(
            "Tensor must have a last dimension with stride 1",
        ));
    }
    let mut strides = Vec::with_capacity(rest.len());
    for &s in &old_strides[..old_strides.len() - 1] {
        if s % 2 != 0 {
            return Err(Error::runtime(
                "Tensor must have a stride divisible by 2 for all but last dimension",
            ));
        }
        strides.push(s / 2);
    }
    let offset = b.storage_offset();
    if offset % 2 != 0 {
        return Err(Error::runtime(
            "Tensor must have a storage_offset divisible by 2",
        ));
    }
    Ok(wrap(b.as_strided_dtype(
        complex,
        rest,
        &strides,
        offset / 2,
    )?))
}

/// `real` (CompositeImplicitAutograd): `self` for a real tensor; for a complex one the view
/// `select(view_as_real(self), -1, 0)`.
pub fn real(self_: &Tensor) -> Result<Tensor> {
    if !self_.dtype().is_complex() {
        return Ok(self_.clone());
    }
    let r = ops::view_as_real::call(self_)?;
    ops::select_int::call(&r, -1, 0)
}

/// `imag` (CompositeImplicitAutograd): `select(view_as_real(self), -1, 1)`; refused for real
/// tensors.
pub fn imag(self_: &Tensor) -> Result<Tensor> {
    if !self_.dtype().is_complex() {
        return Err(Error::type_error(
            "imag is not implemented for tensors with non-complex dtypes.",
        ));
    }
    let r = ops::view_as_real::call(self_)?;
    ops::select_int::call(&r, -1, 1)
}

/// `_conj` (CompositeExplicitAutograd): the conjugated values of a complex tensor in a new
/// tensor (PyTorch returns a view with the conjugate bit set; see Note [Conjugation without a
/// conjugate bit]); an alias of a real tensor.
pub fn _conj(self_: &Tensor) -> Result<Tensor> {
    if !self_.dtype().is_complex() {
        return ops::alias::call(self_);
    }
    ops::_conj_physical::call(self_)
}

/// `conj` (CompositeImplicitAutograd; TensorBody's `Tensor::conj`): `self` for a real tensor,
/// `_conj(self)` for a complex one.
pub fn conj(self_: &Tensor) -> Result<Tensor> {
    if !self_.dtype().is_complex() {
        return Ok(self_.clone());
    }
    ops::_conj::call(self_)
}

/// `_conj_physical` (CompositeExplicitAutograd): `conj_physical.out` into a new tensor of
/// `self`'s dtype (`unary_op_impl`).
pub fn _conj_physical(self_: &Tensor) -> Result<Tensor> {
    let result = empty_result(&[self_], self_.dtype(), self_.device())?;
    ops::conj_physical_out::call(self_, &result)?;
    Ok(result)
}

/// `conj_physical` (CompositeImplicitAutograd): `self` for a real tensor (conjugation is the
/// identity there), `_conj_physical(self)` for a complex one.
pub fn conj_physical(self_: &Tensor) -> Result<Tensor> {
    if !self_.dtype().is_complex() {
        return Ok(self_.clone());
    }
    ops::_conj_physical::call(self_)
}

/// `conj_physical.out` (CPU and Meta; `unary_op_impl_out`): `out` of `self`'s dtype; a real
/// `self` is copied.
pub fn conj_physical_out<'a>(self_: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    let sink = StandaloneOutputs::new(&[Some(Cow::Borrowed(out.base()))]);
    let iter =
        TensorIteratorBase::build_borrowing_unary(Some(out.base()), self_.base(), false, &sink)?;
    unary_impl(&CONJ_PHYSICAL_STUB, &iter)?;
    Ok(out)
}

/// `conj_physical_` (CompositeExplicitAutograd): nothing to do for a real tensor.
pub fn conj_physical_(self_: &Tensor) -> Result<&Tensor> {
    if self_.dtype().is_complex() {
        ops::conj_physical_out::call(self_, self_)?;
    }
    Ok(self_)
}

/// `resolve_conj`: `self` (ratten never sets a conjugate bit).
pub fn resolve_conj(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

/// `resolve_neg`: `self` (ratten never sets a negative bit).
pub fn resolve_neg(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

/// `is_conj` (the kernel behind the operator): always false.
pub fn is_conj(_self: &Tensor) -> Result<bool> {
    Ok(false)
}

/// `is_neg` (the kernel behind the operator): always false.
pub fn is_neg(_self: &Tensor) -> Result<bool> {
    Ok(false)
}

/// `TORCH_META_FUNC(sgn)`: `build_borrowing_unary_op` (output and input of one dtype).
pub fn sgn_meta<'a>(m: &'a dyn MetaBase, self_: &'a Tensor) -> Result<TensorIteratorBase<'a>> {
    unary_op_meta(m, self_)
}

/// `TORCH_IMPL_FUNC(sgn_out)`: `z / |z|` (0 at 0) for complex, `sign` otherwise.
pub fn sgn_out(iter: &mut TensorIteratorBase, self_: &Tensor, _out: &Tensor) -> Result<()> {
    if self_.dtype().is_complex() {
        unary_impl(&SGN_STUB, iter)
    } else {
        unary_impl(&SIGN_STUB, iter)
    }
}

impl Tensor {
    /// `conj()`: `self` for a real tensor; for a complex one a tensor of the conjugated values
    /// (Note [Conjugation without a conjugate bit]). TensorBody's hand-written binding
    /// (`manual_cpp_binding`): a real tensor is returned before any dispatch.
    pub fn conj(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Ok(self.clone());
        }
        self.__dispatch_conj()
    }

    /// `is_conj()`: false, ratten has no conjugate bit (Note [Conjugation without a conjugate
    /// bit]).
    pub fn is_conj(&self) -> bool {
        false
    }

    /// `is_neg()`: false, ratten has no negative bit.
    pub fn is_neg(&self) -> bool {
        false
    }
}
