//! Ternary pointwise operators and fills: `where`, `lerp`, `addcmul`, `addcdiv`
//! (TensorCompare.cpp, Lerp.cpp, PointwiseOps.cpp) and the `fill_` kernels (Fill.cpp), as the
//! kernels `native_functions.yaml` names.

use ratten_core::{Error, Result, Scalar, ScalarType};

use crate::generated::operators as ops;
use crate::native::binary_ops::given_output;
use crate::native::cpu::unary_kernels::{
    ADDCDIV_STUB, ADDCMUL_STUB, LERP_SCALAR_STUB, LERP_TENSOR_STUB, WHERE_STUB,
};
use crate::native::type_properties::result_type;
use crate::structured::MetaBase;
use crate::tensor_iterator::{ternary_op_config, TensorIteratorBase, TensorIteratorConfig};
use crate::Tensor;

// ---------------------------------------------------------------------------------------------
// where
// ---------------------------------------------------------------------------------------------

/// PyTorch accepts a bool condition, and a uint8 one with a (deprecation) warning; the kernel
/// reads either as "nonzero".
fn check_condition(condition: &Tensor) -> Result<()> {
    match condition.dtype() {
        ScalarType::Bool => Ok(()),
        ScalarType::Byte => {
            crate::structured::warn(
                "where received a uint8 condition tensor. This behavior is deprecated and will \
                 be removed in a future version of PyTorch. Use a boolean condition instead.",
            );
            Ok(())
        }
        dt => Err(Error::runtime(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {dt}"
        ))),
    }
}

/// `where_self_out` (CPU and Meta): the values in the promoted dtype of `self` and `other`,
/// which `out` must have.
pub fn where_self_out<'a>(
    condition: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let dtype = result_type(self_, other)?;
    if out.dtype() != dtype {
        return Err(Error::runtime(format!(
            "Expected out type to be {dtype} but got {}",
            out.dtype()
        )));
    }
    check_condition(condition)?;
    let iter = TensorIteratorConfig::new()
        .check_all_same_dtype(false)
        .add_output(out)?
        .add_const_input(condition)
        .add_const_input(self_)
        .add_const_input(other)
        .build_standalone()?;
    if !iter.is_meta() {
        (WHERE_STUB.get(iter.device_type())?)(&iter)?;
    }
    Ok(out)
}

/// `where.self` (CPU and Meta).
pub fn r#where(condition: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let dtype = result_type(self_, other)?;
    let device = if self_.dim() == 0 && !other.is_meta() {
        other.device()
    } else {
        self_.device()
    };
    let out = crate::native::unary_ops::empty_result(&[condition, self_, other], dtype, device)?;
    where_self_out(condition, self_, other, &out)?;
    Ok(out)
}

/// `where.ScalarSelf` (CompositeImplicitAutograd): the number is a wrapped number on the
/// other operand's device, as PyTorch's `wrapped_scalar_tensor(self, other.device())`.
pub fn where_scalar_self(condition: &Tensor, self_: &Scalar, other: &Tensor) -> Result<Tensor> {
    // PyTorch makes the number a tensor of the result dtype: it must fit it
    // (`where(c, int8_tensor, 1000)` is an overflow error).
    self_.check_fits(crate::native::type_properties::result_type_scalar(
        other, self_,
    )?)?;
    let s = Tensor::wrapped_scalar_tensor(*self_, other.device())?;
    ops::where_self::call(condition, &s, other)
}
/// `where.ScalarOther`.
pub fn where_scalar_other(condition: &Tensor, self_: &Tensor, other: &Scalar) -> Result<Tensor> {
    // As in `where_scalar_self`.
    other.check_fits(crate::native::type_properties::result_type_scalar(
        self_, other,
    )?)?;
    let o = Tensor::wrapped_scalar_tensor(*other, self_.device())?;
    ops::where_self::call(condition, self_, &o)
}
/// `where.Scalar`: both numbers wrapped on the condition's device.
pub fn where_scalar(condition: &Tensor, self_: &Scalar, other: &Scalar) -> Result<Tensor> {
    let s = Tensor::wrapped_scalar_tensor(*self_, condition.device())?;
    let o = Tensor::wrapped_scalar_tensor(*other, condition.device())?;
    ops::where_self::call(condition, &s, &o)
}

// ---------------------------------------------------------------------------------------------
// lerp
// ---------------------------------------------------------------------------------------------

// PyTorch's lerp checks print `self.dtype()`, a caffe2::TypeMeta.
use crate::structured::type_meta_name;

fn check_same_dtype(self_: &Tensor, what: &str, t: &Tensor) -> Result<()> {
    if self_.dtype() != t.dtype() {
        return Err(Error::runtime(format!(
            "expected dtype {} for `{what}` but got dtype {}",
            type_meta_name(self_.dtype()),
            type_meta_name(t.dtype())
        )));
    }
    Ok(())
}

/// `TORCH_META_FUNC(lerp_Scalar)`: `end` must have `self`'s dtype.
pub fn lerp_scalar_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    end: &'a Tensor,
    _weight: &Scalar,
) -> Result<TensorIteratorBase<'a>> {
    check_same_dtype(self_, "end", end)?;
    // `build_binary_op`: an out= of another dtype the result can be cast to is accepted.
    crate::tensor_iterator::binary_op_config(given_output(m), self_, end)?.build(m)
}

/// `TORCH_IMPL_FUNC(lerp_Scalar)`.
pub fn lerp_scalar(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    _end: &Tensor,
    weight: &Scalar,
    _out: &Tensor,
) -> Result<()> {
    (LERP_SCALAR_STUB.get(iter.device_type())?)(iter, weight)
}

/// `TORCH_META_FUNC(lerp_Tensor)`: `end` must have `self`'s dtype, and so must `weight` unless
/// it is 0-dim: a 0-dim weight takes part in type promotion (as a CPU scalar), with the
/// result cast to the output.
pub fn lerp_tensor_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    end: &'a Tensor,
    weight: &'a Tensor,
) -> Result<TensorIteratorBase<'a>> {
    check_same_dtype(self_, "end", end)?;
    let promote_weight = weight.dim() == 0;
    if !promote_weight {
        check_same_dtype(self_, "weight", weight)?;
    }
    let out = given_output(m);
    TensorIteratorConfig::new()
        .allow_cpu_scalars(true)
        .promote_inputs_to_common_dtype(promote_weight)
        .enforce_safe_casting_to_output(promote_weight)
        .cast_common_dtype_to_outputs(promote_weight)
        .add_output(out)?
        .add_const_input(self_)
        .add_const_input(end)
        .add_const_input(weight)
        .build(m)
}

/// `TORCH_IMPL_FUNC(lerp_Tensor)`.
pub fn lerp_tensor(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    _end: &Tensor,
    _weight: &Tensor,
    _out: &Tensor,
) -> Result<()> {
    (LERP_TENSOR_STUB.get(iter.device_type())?)(iter)
}

// ---------------------------------------------------------------------------------------------
// addcmul / addcdiv
// ---------------------------------------------------------------------------------------------

/// `TORCH_META_FUNC(addcmul)`: `build_ternary_op`.
pub fn addcmul_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    tensor1: &'a Tensor,
    tensor2: &'a Tensor,
    _value: &Scalar,
) -> Result<TensorIteratorBase<'a>> {
    let out = given_output(m);
    ternary_op_config(out, self_, tensor1, tensor2)?.build(m)
}

/// `TORCH_IMPL_FUNC(addcmul_out)`.
pub fn addcmul_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    _tensor1: &Tensor,
    _tensor2: &Tensor,
    value: &Scalar,
    _out: &Tensor,
) -> Result<()> {
    (ADDCMUL_STUB.get(iter.device_type())?)(iter, value)
}

/// `TORCH_META_FUNC(addcdiv)`: integer division is refused with PyTorch's message.
pub fn addcdiv_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    tensor1: &'a Tensor,
    tensor2: &'a Tensor,
    value: &Scalar,
) -> Result<TensorIteratorBase<'a>> {
    if tensor1.dtype().is_integral(true) && tensor2.dtype().is_integral(true) {
        return Err(Error::runtime(
            // PyTorch's text has two spaces in "future  release".
            "Integer division with addcdiv is no longer supported, and in a future  release \
             addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv \
             behavior can be implemented as (input + value * torch.trunc(tensor1 / \
             tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / \
             tensor2) for float inputs. The future addcdiv behavior is just the latter \
             implementation: (input + value * tensor1 / tensor2), for all dtypes.",
        ));
    }
    addcmul_meta(m, self_, tensor1, tensor2, value)
}

/// `TORCH_IMPL_FUNC(addcdiv_out)`.
pub fn addcdiv_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    _tensor1: &Tensor,
    _tensor2: &Tensor,
    value: &Scalar,
    _out: &Tensor,
) -> Result<()> {
    (ADDCDIV_STUB.get(iter.device_type())?)(iter, value)
}

// ---------------------------------------------------------------------------------------------
// fill_ / fill
// ---------------------------------------------------------------------------------------------

/// `fill_.Scalar` (CPU): the value is converted with c10's checks first, so an overflow leaves
/// the tensor untouched.
pub fn fill_scalar_<'a>(self_: &'a Tensor, value: &Scalar) -> Result<&'a Tensor> {
    crate::native::factory::fill_scalar_checked(self_, value)?;
    Ok(self_)
}

/// `fill_.Tensor` (CPU): `value` must be 0-dim; on the same device PyTorch copies it into
/// `self` (`self.copy_(value)`, a clone first when it aliases `self`), so the value is cast
/// as `copy_` casts (a complex value's real part into a real tensor), not checked as a
/// Scalar would be.
pub fn fill_<'a>(self_: &'a Tensor, value: &Tensor) -> Result<&'a Tensor> {
    if value.dim() != 0 {
        return Err(Error::runtime(format!(
            "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
            value.dim()
        )));
    }
    if self_.device() != value.device() {
        return fill_scalar_(self_, &value.item()?);
    }
    if self_.storage().is_alias_of(&value.storage()) {
        let v = crate::native::copy::empty_like_dtype(value, value.dtype())?;
        ops::copy_::call(&v, value, false)?;
        ops::copy_::call(self_, &v, false)?;
    } else {
        ops::copy_::call(self_, value, false)?;
    }
    Ok(self_)
}

/// `fill_meta_` for `fill_.Scalar`: nothing to write on a meta tensor.
pub fn fill_meta_scalar_<'a>(self_: &'a Tensor, _value: &Scalar) -> Result<&'a Tensor> {
    Ok(self_)
}

/// `fill_meta_` for `fill_.Tensor`: the dimension check only.
pub fn fill_meta_<'a>(self_: &'a Tensor, value: &Tensor) -> Result<&'a Tensor> {
    if value.dim() != 0 {
        return Err(Error::runtime(format!(
            "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
            value.dim()
        )));
    }
    Ok(self_)
}

/// `fill.Scalar` (CompositeExplicitAutograd): `empty_like(self).fill_(value)`.
pub fn fill_scalar(self_: &Tensor, value: &Scalar) -> Result<Tensor> {
    let r = crate::native::copy::empty_like_dtype(self_, self_.dtype())?;
    ops::fill__Scalar::call(&r, value)?;
    Ok(r)
}

/// `fill.Tensor`.
pub fn fill(self_: &Tensor, value: &Tensor) -> Result<Tensor> {
    let r = crate::native::copy::empty_like_dtype(self_, self_.dtype())?;
    ops::fill__Tensor::call(&r, value)?;
    Ok(r)
}
