//! Embedding and embedding_bag (ATen's Embedding.cpp, EmbeddingBag.cpp), one_hot (Onehot.cpp).

use ratten_core::{Error, Result, Scalar, ScalarType, TensorOptions};

use crate::generated::operators as ops;
use crate::native::view::legacy_type_str;
use crate::Tensor;

/// `checkScalarTypes(name, {indices, "indices", pos}, {kLong, kInt})`.
fn check_indices(name: &str, indices: &Tensor, pos: usize) -> Result<()> {
    if !matches!(indices.dtype(), ScalarType::Long | ScalarType::Int) {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #{pos} 'indices' to have one of the following scalar \
             types: Long, Int; but got {} instead (while checking arguments for {name})",
            legacy_type_str(indices.dtype(), indices.device())
        )));
    }
    Ok(())
}

/// `embedding` (CompositeExplicitAutograd): the rows of `weight` that `indices` name, shaped
/// `indices.shape + weight.shape[1:]`.
pub fn embedding_symint(
    weight: &Tensor,
    indices: &Tensor,
    _padding_idx: i64,
    _scale_grad_by_freq: bool,
    _sparse: bool,
) -> Result<Tensor> {
    if weight.dim() != 2 {
        return Err(Error::runtime("'weight' must be 2-D"));
    }
    check_indices("embedding", indices, 1)?;
    if indices.dim() == 1 {
        return weight.index_select(0, indices);
    }
    let mut size = indices.sizes().to_vec();
    size.extend_from_slice(&weight.sizes()[1..]);
    weight
        .index_select(0, &indices.reshape(&[-1])?)?
        .view(&size)
}

/// `embedding_backward` (CompositeImplicitAutograd). ratten has no sparse tensors, so
/// `sparse=True` is refused.
pub fn embedding_backward_symint(
    grad: &Tensor,
    indices: &Tensor,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
    sparse: bool,
) -> Result<Tensor> {
    if sparse {
        return Err(Error::not_implemented(
            "embedding_backward: sparse gradients are not supported (ratten has no sparse tensors)",
        ));
    }
    ops::embedding_dense_backward::call(grad, indices, num_weights, padding_idx, scale_grad_by_freq)
}

/// `embedding_dense_backward` (CPU and Meta): a `[num_weights, D]` gradient where each row sums
/// the gradient rows of the positions naming it, except `padding_idx`'s; with
/// `scale_grad_by_freq` each contribution is divided by how often its index occurs.
pub fn embedding_dense_backward_cpu(
    grad_output: &Tensor,
    indices: &Tensor,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    check_indices("embedding_backward", indices, 2)?;
    let d = *grad_output.sizes().last().unwrap_or(&1);
    let grad_weight = Tensor::zeros(
        &[num_weights, d],
        TensorOptions::new()
            .dtype(grad_output.dtype())
            .device(grad_output.device()),
    )?;
    if grad_output.is_meta() || indices.is_meta() {
        return Ok(grad_weight);
    }
    let numel = indices.numel();
    let idx = indices.reshape(&[-1])?.to_dtype(ScalarType::Long)?;
    let mut grad = grad_output.contiguous()?.view(&[numel, d])?;
    if padding_idx >= 0 {
        let pad = idx.eq_scalar(padding_idx)?.unsqueeze(1)?;
        grad = grad.masked_fill_scalar(&pad, 0)?;
    }
    if scale_grad_by_freq {
        let ones = Tensor::ones(
            &[numel],
            TensorOptions::new()
                .dtype(grad.dtype())
                .device(grad.device()),
        )?;
        let counts = grad_weight
            .new_zeros(&[num_weights])?
            .index_add(0, &idx, &ones)?;
        let scale = counts.index_select(0, &idx)?.reciprocal()?.unsqueeze(1)?;
        grad = grad.mul(&scale)?;
    }
    grad_weight.index_add_(0, &idx, &grad)?;
    Ok(grad_weight)
}

/// `one_hot` (CompositeImplicitAutograd): int64 `self.shape + [num_classes]`, 1 where the last
/// index equals the value; `num_classes=-1` takes `max + 1`.
pub fn one_hot(self_: &Tensor, num_classes: i64) -> Result<Tensor> {
    if self_.dtype() != ScalarType::Long {
        return Err(Error::runtime(
            "one_hot is only applicable to index tensor of type LongTensor.",
        ));
    }
    let opts = TensorOptions::new()
        .dtype(ScalarType::Long)
        .device(self_.device());
    if self_.is_meta() {
        // torch's functional form for meta tensors.
        let n = if num_classes == -1 {
            self_.max()?.item()?.to_long()? + 1
        } else {
            num_classes
        };
        let index = ops::arange::call(
            &Scalar::Int(n),
            Some(ScalarType::Long),
            None,
            Some(self_.device()),
            None,
        )?;
        return self_.unsqueeze(-1)?.eq(&index)?.to_dtype(ScalarType::Long);
    }
    let mut shape = self_.sizes().to_vec();
    if self_.numel() == 0 {
        if num_classes <= 0 {
            return Err(Error::runtime(
                "Can not infer total number of classes from empty tensor.",
            ));
        }
        shape.push(num_classes);
        return Tensor::zeros(&shape, opts);
    }
    if self_.min()?.item()?.to_long()? < 0 {
        return Err(Error::runtime("Class values must be non-negative."));
    }
    let max = self_.max()?.item()?.to_long()?;
    let num_classes = if num_classes == -1 {
        max + 1
    } else {
        if num_classes <= max {
            return Err(Error::runtime(
                "Class values must be smaller than num_classes.",
            ));
        }
        num_classes
    };
    shape.push(num_classes);
    let ret = Tensor::zeros(&shape, opts)?;
    ret.scatter_value_(-1, &self_.unsqueeze(-1)?, 1)?;
    Ok(ret)
}
