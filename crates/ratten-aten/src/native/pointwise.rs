//! Ternary pointwise operators: `where`, `lerp`, `addcmul`, `addcdiv` (TensorCompare.cpp,
//! Lerp.cpp, PointwiseOps.cpp), with PyTorch's checks.

use ratten_core::{Error, Result, Scalar, ScalarType};

use crate::native::binary_ops::{given_output, run_functional, run_inplace, run_out};
use crate::native::cpu::unary_kernels::{
    ADDCDIV_STUB, ADDCMUL_STUB, LERP_SCALAR_STUB, LERP_TENSOR_STUB, WHERE_STUB,
};
use crate::native::type_properties::result_type;
use crate::structured::MetaBase;
use crate::tensor_iterator::{ternary_op_config, TensorIteratorBase, TensorIteratorConfig};
use crate::Tensor;

/// `torch.where(condition, self, other)`: condition must be bool; the result has the
/// promoted dtype of `self` and `other`.
pub fn where_(condition: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    if condition.dtype() != ScalarType::Bool {
        return Err(Error::runtime(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            condition.dtype()
        )));
    }
    let dtype = result_type(self_, other);
    let iter = TensorIteratorConfig::new()
        .check_all_same_dtype(false)
        .declare_static_dtype(dtype)?
        .add_output(None)?
        .add_const_input(condition)
        .add_const_input(self_)
        .add_const_input(other)
        .build_standalone()?;
    (WHERE_STUB.get(iter.device_type())?)(&iter)?;
    iter.output(0).map(Tensor::from_base)
}

/// `torch.where(condition, self, other, out=out)`: `out` must have the result dtype.
pub fn where_out(
    condition: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    out: &Tensor,
) -> Result<Tensor> {
    if condition.dtype() != ScalarType::Bool {
        return Err(Error::runtime(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            condition.dtype()
        )));
    }
    let dtype = result_type(self_, other);
    if out.dtype() != dtype {
        return Err(Error::runtime(format!(
            "Expected out type to be {dtype} but got {}",
            out.dtype()
        )));
    }
    let iter = TensorIteratorConfig::new()
        .check_all_same_dtype(false)
        .add_output(Some(out))?
        .add_const_input(condition)
        .add_const_input(self_)
        .add_const_input(other)
        .build_standalone()?;
    (WHERE_STUB.get(iter.device_type())?)(&iter)?;
    Ok(out.clone())
}

/// `TORCH_META_FUNC(lerp_Scalar)`: `end` must have `self`'s dtype.
pub fn lerp_scalar_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    end: &Tensor,
) -> Result<TensorIteratorBase> {
    if self_.dtype() != end.dtype() {
        return Err(Error::runtime(format!(
            "expected dtype {} for `end` but got dtype {}",
            self_.dtype(),
            end.dtype()
        )));
    }
    let out = given_output(m);
    TensorIteratorConfig::new()
        .add_output(out.as_ref())?
        .add_const_input(self_)
        .add_const_input(end)
        .build(m)
}

/// `TORCH_META_FUNC(lerp_Tensor)`.
pub fn lerp_tensor_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    end: &Tensor,
    weight: &Tensor,
) -> Result<TensorIteratorBase> {
    for (what, t) in [("end", end), ("weight", weight)] {
        if self_.dtype() != t.dtype() {
            return Err(Error::runtime(format!(
                "expected dtype {} for `{what}` but got dtype {}",
                self_.dtype(),
                t.dtype()
            )));
        }
    }
    let out = given_output(m);
    TensorIteratorConfig::new()
        .add_output(out.as_ref())?
        .add_const_input(self_)
        .add_const_input(end)
        .add_const_input(weight)
        .build(m)
}

/// `torch.lerp(self, end, weight)` with a Scalar weight.
pub fn lerp(self_: &Tensor, end: &Tensor, weight: &Scalar) -> Result<Tensor> {
    run_functional(
        Box::new(|m| lerp_scalar_meta(m, self_, end)),
        Box::new(|it| (LERP_SCALAR_STUB.get(it.device_type())?)(it, weight)),
    )
}
/// `self.lerp_(end, weight)`.
pub fn lerp_(self_: &Tensor, end: &Tensor, weight: &Scalar) -> Result<Tensor> {
    run_inplace(
        self_,
        Box::new(|m| lerp_scalar_meta(m, self_, end)),
        Box::new(|it| (LERP_SCALAR_STUB.get(it.device_type())?)(it, weight)),
    )
}
/// `torch.lerp(self, end, weight)` with a Tensor weight.
pub fn lerp_tensor(self_: &Tensor, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
    run_functional(
        Box::new(|m| lerp_tensor_meta(m, self_, end, weight)),
        Box::new(|it| (LERP_TENSOR_STUB.get(it.device_type())?)(it)),
    )
}

/// `TORCH_META_FUNC(addcmul)`: `build_ternary_op`.
pub fn addcmul_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    t1: &Tensor,
    t2: &Tensor,
) -> Result<TensorIteratorBase> {
    let out = given_output(m);
    ternary_op_config(out.as_ref(), self_, t1, t2)?.build(m)
}

/// `TORCH_META_FUNC(addcdiv)`: integer division is refused with PyTorch's message.
pub fn addcdiv_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    t1: &Tensor,
    t2: &Tensor,
) -> Result<TensorIteratorBase> {
    if t1.dtype().is_integral(true) && t2.dtype().is_integral(true) {
        return Err(Error::runtime(
            "Integer division with addcdiv is no longer supported, and in a future release \
             addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv \
             behavior can be implemented as (input + value * torch.trunc(tensor1 / \
             tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / \
             tensor2) for float inputs. The future addcdiv behavior is just the latter \
             implementation: (input + value * tensor1 / tensor2), for all dtypes.",
        ));
    }
    addcmul_meta(m, self_, t1, t2)
}

/// `torch.addcmul(self, tensor1, tensor2, value=1)`.
pub fn addcmul(self_: &Tensor, t1: &Tensor, t2: &Tensor, value: &Scalar) -> Result<Tensor> {
    run_functional(
        Box::new(|m| addcmul_meta(m, self_, t1, t2)),
        Box::new(|it| (ADDCMUL_STUB.get(it.device_type())?)(it, value)),
    )
}
/// `self.addcmul_(tensor1, tensor2, value)`.
pub fn addcmul_(self_: &Tensor, t1: &Tensor, t2: &Tensor, value: &Scalar) -> Result<Tensor> {
    run_inplace(
        self_,
        Box::new(|m| addcmul_meta(m, self_, t1, t2)),
        Box::new(|it| (ADDCMUL_STUB.get(it.device_type())?)(it, value)),
    )
}
/// `torch.addcmul(..., out=out)`.
pub fn addcmul_out(
    self_: &Tensor,
    t1: &Tensor,
    t2: &Tensor,
    value: &Scalar,
    out: &Tensor,
) -> Result<Tensor> {
    run_out(
        out,
        Box::new(|m| addcmul_meta(m, self_, t1, t2)),
        Box::new(|it| (ADDCMUL_STUB.get(it.device_type())?)(it, value)),
    )
}
/// `torch.addcdiv(self, tensor1, tensor2, value=1)`.
pub fn addcdiv(self_: &Tensor, t1: &Tensor, t2: &Tensor, value: &Scalar) -> Result<Tensor> {
    run_functional(
        Box::new(|m| addcdiv_meta(m, self_, t1, t2)),
        Box::new(|it| (ADDCDIV_STUB.get(it.device_type())?)(it, value)),
    )
}
/// `self.addcdiv_(tensor1, tensor2, value)`.
pub fn addcdiv_(self_: &Tensor, t1: &Tensor, t2: &Tensor, value: &Scalar) -> Result<Tensor> {
    run_inplace(
        self_,
        Box::new(|m| addcdiv_meta(m, self_, t1, t2)),
        Box::new(|it| (ADDCDIV_STUB.get(it.device_type())?)(it, value)),
    )
}
