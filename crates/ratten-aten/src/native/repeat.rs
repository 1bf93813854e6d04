//! repeat_interleave (ATen's `Repeat.cpp` and `Repeat.h`): the index form over a 1-D tensor of
//! counts (`repeat_interleave(repeats)`: each position `i` written `repeats[i]` times), and the
//! two forms over a tensor, which select from it with that index (a tensor of counts) or copy
//! it expanded (one count).

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{torch_check, Error, Result, ScalarType};

use crate::generated::operators as ops;
use crate::native::MemoryFormat;
use crate::Tensor;

/// `repeat_interleave.Tensor` (CPU and Meta): `[0] * repeats[0] + [1] * repeats[1] + ...` in
/// the dtype of `repeats` (any integer dtype). `output_size`, when given, must be the total;
/// on meta it is required, as torch's meta function requires it.
pub fn repeat_interleave_cpu(repeats: &Tensor, output_size: Option<i64>) -> Result<Tensor> {
    let dtype = repeats.dtype();
    if repeats.is_meta() {
        let Some(n) = output_size else {
            return Err(Error::runtime(
                "cannot repeat_interleave a meta tensor without output_size",
            ));
        };
        return Tensor::empty(&[n], (dtype, repeats.device()));
    }
    if !matches!(
        dtype,
        ScalarType::Byte
            | ScalarType::Char
            | ScalarType::Short
            | ScalarType::Int
            | ScalarType::Long
    ) {
        return Err(Error::not_implemented(format!(
            "\"repeat_interleave_cpu\" not implemented for '{dtype}'"
        )));
    }
    torch_check!(
        repeats.dim() == 1,
        "repeat_interleave only accept 1D vector as repeat"
    );
    if repeats.numel() == 0 {
        return ops::empty_like::call(
            repeats,
            None,
            None,
            None,
            None,
            Some(MemoryFormat::Contiguous),
        );
    }
    let counts = repeats
        .to_dtype(ScalarType::Long)?
        .contiguous()?
        .to_vec::<i64>()?;
    // The running sums (PyTorch's `cumsum`, which wraps in int64 as this does).
    let ends: Vec<i64> = counts
        .iter()
        .scan(0i64, |acc, &c| {
            *acc = acc.wrapping_add(c);
            Some(*acc)
        })
        .collect();
    let required = ends[ends.len() - 1];
    let negative = counts.iter().any(|&c| c < 0);
    let total = match output_size {
        Some(n) => n,
        None => {
            torch_check!(!negative, "repeats can not be negative");
            required
        }
    };
    let result = Tensor::empty(&[total], (dtype, repeats.device()))?;
    torch_check!(
        total == required,
        "allocated size does not match required size"
    );
    torch_check!(!negative, "repeats can not be negative");
    let mut index = Vec::with_capacity(total as usize);
    for (i, &c) in counts.iter().enumerate() {
        index.extend(std::iter::repeat_n(i as i64, c as usize));
    }
    // `i` stored as the dtype of `repeats` (a static_cast in PyTorch's kernel).
    let values = Tensor::from_vec(index, &[total])?.to_dtype(dtype)?;
    ops::copy_::call(&result, &values, false)?;
    Ok(result)
}

/// `repeat_interleave.self_Tensor` (CompositeImplicitAutograd): `self` (flattened without
/// `dim`) with slice `i` along `dim` repeated `repeats[i]` times (one count for every slice
/// when `repeats` has one element).
pub fn repeat_interleave_symint_self_tensor(
    self_: &Tensor,
    repeats: &Tensor,
    dim: Option<i64>,
    output_size: Option<i64>,
) -> Result<Tensor> {
    let (input, dim) = match dim {
        Some(d) => (self_.clone(), d),
        None => (self_.flatten()?, 0),
    };
    let rd = repeats.dim();
    let repeats_ = if rd == 0 || (rd == 1 && repeats.sizes()[0] == 1) {
        repeats.reshape(&[1])?.expand(&[input.size(dim)?])?
    } else if rd == 1 {
        let (r, s) = (repeats.sizes()[0], input.size(dim)?);
        torch_check!(
            r == s,
            "repeats must have the same size as input along dim, but got repeats.size(0) = {r} and input.size({dim}) = {s}"
        );
        repeats.clone()
    } else {
        return Err(Error::runtime("repeats must be 0-dim or 1-dim tensor"));
    };
    let index = ops::repeat_interleave_Tensor::call(&repeats_, output_size)?;
    input.index_select(dim, &index)
}

/// `repeat_interleave.self_int` (CompositeImplicitAutograd): each slice of `self` along `dim`
/// (of `self` flattened without `dim`) `repeats` times, as a contiguous copy of `self`
/// expanded along a new dim after `dim`.
pub fn repeat_interleave_symint_self_int(
    self_: &Tensor,
    repeats: i64,
    dim: Option<i64>,
    output_size: Option<i64>,
) -> Result<Tensor> {
    let input = if dim.is_some() {
        self_.clone()
    } else {
        self_.flatten()?
    };
    let d = maybe_wrap_dim(dim.unwrap_or(0), self_.dim(), true)? as i64;
    torch_check!(repeats >= 0, "Repeats must be non-negative");
    let input = input.unsqueeze(d + 1)?;
    let mut expand_shape = input.sizes().to_vec();
    expand_shape[d as usize + 1] = repeats;
    let input = input.expand(&expand_shape)?;
    if let Some(n) = output_size {
        let calculated = repeats.saturating_mul(expand_shape[d as usize]);
        torch_check!(
            n == calculated,
            "repeat_interleave: Invalid output_size, expected {calculated} but got {n}"
        );
    }
    input
        .clone_with(Some(MemoryFormat::Contiguous))?
        .flatten_with(d, d + 1)
}
