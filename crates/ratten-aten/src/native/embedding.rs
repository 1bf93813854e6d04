//! Embedding and embedding_bag (ATen's Embedding.cpp, EmbeddingBag.cpp), one_hot (Onehot.cpp).

use ratten_core::access::TensorAccess;
use ratten_core::{Error, Result, Scalar, ScalarType, TensorOptions};

use crate::generated::operators as ops;
use crate::native::cpu::softmax_kernels::{Acc, Stored};
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

// embedding_bag (ATen's EmbeddingBag.cpp). The CPU kernels follow torch's non-fbgemm paths:
// each index adds its weight row (times its per-sample weight) into its bag's row, in index
// order, in the computation type (float for half / bfloat16), rounded once at the store;
// mode 'max' keeps the first largest element per feature and its row index.

const MODE_SUM: i64 = 0;
const MODE_MEAN: i64 = 1;
const MODE_MAX: i64 = 2;

/// The computation types' conversions from and to double (torch's `double scale`).
trait Scale: Acc {
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl Scale for f32 {
    #[inline(always)]
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Scale for f64 {
    #[inline(always)]
    fn from_f64(v: f64) -> f64 {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}

/// Runs `$body` with `$T` bound to the element type of `$dt` among the types embedding_bag
/// takes (float, double, half, bfloat16).
macro_rules! dispatch_bag_types {
    ($dt:expr, $name:expr, $T:ident => $body:expr) => {{
        use ratten_core::half::{bf16, f16};
        match $dt {
            ScalarType::Float => {
                type $T = f32;
                $body
            }
            ScalarType::Double => {
                type $T = f64;
                $body
            }
            ScalarType::Half => {
                type $T = f16;
                $body
            }
            ScalarType::BFloat16 => {
                type $T = bf16;
                $body
            }
            dt => Err(crate::native::cpu::elements::not_implemented($name, dt)),
        }
    }};
}

/// `checkScalarTypes(name, {t, arg, pos}, types)` with torch's text.
fn check_scalar_types(
    name: &str,
    t: &Tensor,
    arg: &str,
    pos: usize,
    types: &[ScalarType],
    names: &str,
) -> Result<()> {
    if !types.contains(&t.dtype()) {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #{pos} '{arg}' to have one of the following scalar \
             types: {names}; but got {} instead (while checking arguments for {name})",
            legacy_type_str(t.dtype(), t.device())
        )));
    }
    Ok(())
}

/// `checkSameType(name, {a, a_name, 1}, {b, b_name, 1})` with torch's text.
fn check_same_type(name: &str, a: &Tensor, a_name: &str, b: &Tensor, b_name: &str) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #1 '{a_name}' to have the same type as tensor for \
             argument #1 '{b_name}'; but type {} does not equal {} (while checking arguments \
             for {name})",
            legacy_type_str(a.dtype(), a.device()),
            legacy_type_str(b.dtype(), b.device())
        )));
    }
    Ok(())
}

/// `checkContiguous(name, {t, arg, 1})` with torch's text.
fn check_contiguous_arg(name: &str, t: &Tensor, arg: &str) -> Result<()> {
    if !t.is_contiguous() {
        return Err(Error::runtime(format!(
            "Expected contiguous tensor, but got non-contiguous tensor for argument #1 '{arg}' \
             (while checking arguments for {name})"
        )));
    }
    Ok(())
}

fn check_index_types(indices: &Tensor, offsets: &Tensor) -> Result<()> {
    let idx = [ScalarType::Long, ScalarType::Int];
    check_scalar_types("embedding_bag", indices, "indices", 1, &idx, "Long, Int")?;
    check_scalar_types("embedding_bag", offsets, "offsets", 1, &idx, "Long, Int")?;
    check_same_type("embedding_bag", indices, "indices", offsets, "offsets")
}

/// torch's `promoteIndicesAndOffsets`: both as their promoted type.
fn promote_indices_and_offsets(indices: &Tensor, offsets: &Tensor) -> Result<(Tensor, Tensor)> {
    let common = ratten_core::promote_types(offsets.dtype(), indices.dtype())?;
    let cast = |t: &Tensor| {
        if t.dtype() == common {
            Ok(t.clone())
        } else {
            t.to_dtype(common)
        }
    };
    Ok((cast(indices)?, cast(offsets)?))
}

/// The elements of an index tensor (int32 or int64, any layout) as i64, in order.
fn index_values(t: &Tensor) -> Result<Vec<i64>> {
    let t = t.contiguous()?;
    let g = TensorAccess::read(t.base())?;
    Ok(match t.dtype() {
        ScalarType::Long => g.input_slice::<i64>(0)?.to_vec(),
        ScalarType::Int => g
            .input_slice::<i32>(0)?
            .iter()
            .map(|&v| i64::from(v))
            .collect(),
        dt => {
            return Err(Error::runtime(format!(
                "embedding_bag: unexpected index dtype {dt}"
            )))
        }
    })
}

/// The elements of a floating tensor (any layout) in its computation type.
fn float_values<S: Stored>(t: &Tensor) -> Result<Vec<S::A>> {
    let t = t.contiguous()?;
    let g = TensorAccess::read(t.base())?;
    Ok(g.input_slice::<S>(0)?.iter().map(|v| v.load()).collect())
}

/// Writes `vals` into the contiguous tensor `t` of the same element count.
fn store_values<T: ratten_core::PodElement>(t: &Tensor, vals: &[T]) -> Result<()> {
    let mut g = TensorAccess::write(t.base())?;
    let out = g.output_slice_mut::<T>(0)?;
    if out.len() != vals.len() {
        return Err(Error::runtime("embedding_bag: output size mismatch"));
    }
    out.copy_from_slice(vals);
    Ok(())
}

/// Writes index values into an int32 or int64 contiguous tensor.
fn store_index_values(t: &Tensor, vals: &[i64]) -> Result<()> {
    match t.dtype() {
        ScalarType::Int => {
            let v: Vec<i32> = vals.iter().map(|&x| x as i32).collect();
            store_values(t, &v)
        }
        _ => store_values(t, vals),
    }
}

/// torch's `make_offset2bag`: the bag of every index, `[0 0 1 1 2]` from offsets `[0 2 4]`
/// over 5 indices (an offset past the end adds nothing).
fn make_offset2bag(offsets: &[i64], n: usize) -> Result<Vec<i64>> {
    let mut marks = vec![0i64; n + 1];
    for &o in offsets {
        if o < 0 || o as usize > n {
            return Err(Error::index("index out of range in self"));
        }
        marks[o as usize] += 1;
    }
    marks[0] -= 1;
    let mut acc = 0;
    for m in marks.iter_mut() {
        acc += *m;
        *m = acc;
    }
    marks.truncate(n);
    Ok(marks)
}

fn index_error(idx: i64) -> Error {
    Error::runtime(format!(
        "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be {idx}"
    ))
}

/// The bag sums (or maxima) of one weight dtype: `(output, max_indices)` values, with
/// `bag_size` decremented for each padded index.
#[allow(clippy::too_many_arguments)]
fn bag_forward_typed<S: Stored>(
    output: &Tensor,
    max_indices: &Tensor,
    weight: &Tensor,
    idx: &[i64],
    offset2bag: &[i64],
    bag_size: &mut [i64],
    mode: i64,
    per_sample_weights: Option<&Tensor>,
    padding_idx: i64,
) -> Result<()> {
    let (num_bags, d) = (output.sizes()[0] as usize, output.sizes()[1] as usize);
    let vocab = weight.sizes()[0];
    let w = weight.contiguous()?;
    let wg = TensorAccess::read(w.base())?;
    let ws = wg.input_slice::<S>(0)?;
    let psw = per_sample_weights.map(float_values::<S>).transpose()?;
    let mut acc = vec![S::A::ZERO; num_bags * d];
    let mut arg = vec![0i64; if mode == MODE_MAX { num_bags * d } else { 0 }];
    let mut seen = vec![false; if mode == MODE_MAX { num_bags } else { 0 }];
    for (i, (&word, &bag)) in idx.iter().zip(offset2bag).enumerate() {
        if word < 0 || word >= vocab {
            return Err(index_error(word));
        }
        if bag < 0 || bag >= num_bags as i64 {
            // Indices before the first bag exist only without bags (no offsets).
            continue;
        }
        let bag = bag as usize;
        if word == padding_idx {
            bag_size[bag] -= 1;
            continue;
        }
        let row = &ws[word as usize * d..][..d];
        let out = &mut acc[bag * d..][..d];
        if mode == MODE_MAX {
            let first = !seen[bag];
            seen[bag] = true;
            let am = &mut arg[bag * d..][..d];
            for ((o, a), &v) in out.iter_mut().zip(am.iter_mut()).zip(row) {
                let v = v.load();
                if first || v > *o {
                    *o = v;
                    *a = word;
                }
            }
        } else if let Some(p) = &psw {
            let s = p[i];
            for (o, &v) in out.iter_mut().zip(row) {
                *o = *o + v.load() * s;
            }
        } else {
            for (o, &v) in out.iter_mut().zip(row) {
                *o = *o + v.load();
            }
        }
    }
    drop(wg);
    let stored: Vec<S> = acc.into_iter().map(S::store).collect();
    store_values(output, &stored)?;
    if mode == MODE_MAX {
        store_index_values(max_indices, &arg)?;
    }
    Ok(())
}

/// torch's `_embedding_bag_cpu_impl`: `(output, offset2bag, bag_size, max_indices)`.
#[allow(clippy::too_many_arguments)]
fn embedding_bag_cpu_impl(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    mode: i64,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: i64,
    requires_grad: bool,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    if !(MODE_SUM..=MODE_MAX).contains(&mode) {
        return Err(Error::runtime("`mode` must be sum, mean, or max."));
    }
    if indices.dim() != 1 && indices.dim() != 2 {
        return Err(Error::runtime(format!(
            "input has to be a 1D or 2D Tensor, but got Tensor of dimension {}",
            indices.dim()
        )));
    }
    if indices.dim() == 1 && offsets.dim() != 1 {
        return Err(Error::runtime(format!(
            "offsets has to be a 1D Tensor, but got Tensor of dimension {}",
            offsets.dim()
        )));
    }
    let (indices, offsets) = promote_indices_and_offsets(indices, offsets)?;
    check_index_types(&indices, &offsets)?;
    check_scalar_types(
        "embedding_bag",
        weight,
        "weight",
        1,
        &[
            ScalarType::Half,
            ScalarType::BFloat16,
            ScalarType::Float,
            ScalarType::Double,
        ],
        "Half, BFloat16, Float, Double",
    )?;
    if weight.dim() != 2 {
        return Err(Error::runtime("'weight' must be 2-D"));
    }
    let meta = weight.is_meta() || indices.is_meta() || offsets.is_meta();
    let n_offsets = offsets.sizes().first().copied().unwrap_or(0);
    let n_indices = indices.sizes()[0];
    let offs = if meta {
        Vec::new()
    } else {
        index_values(&offsets)?
    };
    if !meta && n_offsets > 0 {
        let (first, last) = (offs[0], offs[offs.len() - 1]);
        if first != 0 {
            return Err(Error::runtime(format!(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start \
                 from position 0. However, got {first}\n[ {}{{}} ]",
                legacy_type_str(offsets.dtype(), offsets.device())
            )));
        }
        if last > n_indices {
            return Err(Error::runtime(format!(
                "offsets[-1] can not be greater than input's length {n_indices} but got \
                 offsets[-1] of {last}"
            )));
        }
    }
    if let Some(p) = per_sample_weights {
        if mode != MODE_SUM {
            return Err(Error::runtime(
                "embedding_bag: per_sample_weights only supported with mode='sum'",
            ));
        }
        check_same_type("embedding_bag", weight, "weight", p, "per_sample_weights")?;
        if p.dim() != 1 {
            return Err(Error::runtime(
                "Expected per_sample_weights.value().dim() == 1 to be true, but got false.  \
                 (Could this error message be improved?  If so, please report an enhancement \
                 request to PyTorch.)",
            ));
        }
        if p.numel() != indices.numel() {
            return Err(Error::runtime(
                "Expected per_sample_weights.value().numel() == indices.numel() to be true, but \
                 got false.  (Could this error message be improved?  If so, please report an \
                 enhancement request to PyTorch.)",
            ));
        }
    }
    if include_last_offset && n_offsets < 1 {
        return Err(Error::runtime(
            "include_last_offset: number of offset should be at least 1",
        ));
    }
    let num_bags = if include_last_offset {
        n_offsets - 1
    } else {
        n_offsets
    };
    let d = weight.sizes()[1];
    let idx_opts = TensorOptions::new()
        .dtype(offsets.dtype())
        .device(offsets.device());
    let output = Tensor::zeros(
        &[num_bags, d],
        TensorOptions::new()
            .dtype(weight.dtype())
            .device(weight.device()),
    )?;
    // torch skips offset2bag on its fast sum path (float / half / bfloat16 rows of stride 1,
    // no padding index, per-sample weights of stride 1): the result is then empty.
    let fast_path_sum = matches!(
        weight.dtype(),
        ScalarType::Float | ScalarType::Half | ScalarType::BFloat16
    ) && weight.strides()[1] == 1
        && padding_idx < 0
        && per_sample_weights.is_none_or(|p| p.strides()[0] == 1);
    let want_offset2bag = mode != MODE_SUM || !fast_path_sum;
    // A 2-D `indices` (torch.embedding_bag called directly) is read as its flattened values.
    let n_values = indices.numel();
    let offset2bag = Tensor::zeros(&[if want_offset2bag { n_values } else { 0 }], idx_opts)?;
    let bag_size_len = if requires_grad || mode != MODE_SUM {
        num_bags
    } else {
        n_offsets
    };
    let bag_size = Tensor::zeros(&[bag_size_len], idx_opts)?;
    let max_indices = if mode == MODE_MAX {
        Tensor::zeros(&[num_bags, d], idx_opts)?
    } else {
        Tensor::zeros(&[bag_size_len], idx_opts)?
    };
    if meta {
        return Ok((output, offset2bag, bag_size, max_indices));
    }
    let mut idx = index_values(&indices)?;
    // torch's fast sum path bounds the last bag by the last offset when include_last_offset
    // is set (its other paths run the last bag to the end of `indices`).
    if mode == MODE_SUM && fast_path_sum && include_last_offset {
        idx.truncate(offs[offs.len() - 1].max(0) as usize);
    }
    let bag_offs = &offs[..num_bags as usize];
    let o2b = make_offset2bag(bag_offs, idx.len())?;
    // Each bag's size: the distance to the next offset (the last bag runs to the end).
    let mut sizes: Vec<i64> = (0..num_bags as usize)
        .map(|b| {
            if b + 1 < num_bags as usize {
                offs[b + 1] - offs[b]
            } else {
                n_values - offs[b]
            }
        })
        .collect();
    dispatch_bag_types!(weight.dtype(), "embedding_bag_cpu", T => bag_forward_typed::<T>(
        &output,
        &max_indices,
        weight,
        &idx,
        &o2b,
        &mut sizes,
        mode,
        per_sample_weights,
        padding_idx,
    ))?;
    if want_offset2bag {
        store_index_values(&offset2bag, &o2b)?;
    }
    if mode != MODE_SUM {
        store_index_values(&bag_size, &sizes)?;
    }
    if mode == MODE_MEAN {
        let divisor = bag_size
            .clamp(Some(Scalar::Int(1)))?
            .to_dtype(output.dtype())?
            .unsqueeze(1)?;
        output.div_(&divisor)?;
        max_indices.copy_(&bag_size)?;
    }
    Ok((output, offset2bag, bag_size, max_indices))
}

/// `_embedding_bag` (CPU and Meta): the forward that records what the backward needs.
#[allow(clippy::too_many_arguments)]
pub fn _embedding_bag_cpu(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    _scale_grad_by_freq: bool,
    mode: i64,
    _sparse: bool,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: i64,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    embedding_bag_cpu_impl(
        weight,
        indices,
        offsets,
        mode,
        per_sample_weights,
        include_last_offset,
        padding_idx,
        true,
    )
}

/// `_embedding_bag_forward_only` (CPU and Meta): the forward when the weight needs no grad.
#[allow(clippy::too_many_arguments)]
pub fn _embedding_bag_forward_only_cpu(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    _scale_grad_by_freq: bool,
    mode: i64,
    _sparse: bool,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: i64,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    embedding_bag_cpu_impl(
        weight,
        indices,
        offsets,
        mode,
        per_sample_weights,
        include_last_offset,
        padding_idx,
        false,
    )
}

/// `embedding_bag.padding_idx` (CompositeImplicitAutograd): checks and wraps `padding_idx`,
/// makes `indices` and `offsets` contiguous, and calls `_embedding_bag` when the weight
/// requires grad, else `_embedding_bag_forward_only`.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag_padding_idx(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let padding_idx = match padding_idx {
        None => -1,
        Some(p) => {
            let n = weight.sizes().first().copied().unwrap_or(0);
            if p < -n || p >= n {
                return Err(Error::runtime(format!(
                    "padding_idx must be within the number of embeddings, -{n} through {}, but \
                     got {p}",
                    n - 1
                )));
            }
            if p < 0 {
                p + n
            } else {
                p
            }
        }
    };
    let (indices, offsets) = (indices.contiguous()?, offsets.contiguous()?);
    if weight.requires_grad() {
        ops::_embedding_bag::call(
            weight,
            &indices,
            &offsets,
            scale_grad_by_freq,
            mode,
            sparse,
            per_sample_weights,
            include_last_offset,
            padding_idx,
        )
    } else {
        ops::_embedding_bag_forward_only::call(
            weight,
            &indices,
            &offsets,
            scale_grad_by_freq,
            mode,
            sparse,
            per_sample_weights,
            include_last_offset,
            padding_idx,
        )
    }
}

/// `embedding_bag` (CompositeImplicitAutograd): `embedding_bag.padding_idx` without one.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    embedding_bag_padding_idx(
        weight,
        indices,
        offsets,
        scale_grad_by_freq,
        mode,
        sparse,
        per_sample_weights,
        include_last_offset,
        None,
    )
}

/// The offset2bag a backward uses: the forward's, or (when the forward's fast path left it
/// empty) computed from `offsets`.
fn backward_offset2bag(
    indices: &Tensor,
    offsets: &Tensor,
    offset2bag: &Tensor,
) -> Result<Vec<i64>> {
    if indices.numel() != 0 && offset2bag.numel() == 0 {
        make_offset2bag(&index_values(offsets)?, indices.numel() as usize)
    } else {
        let idx = [ScalarType::Long, ScalarType::Int];
        check_scalar_types(
            "embedding_bag",
            offset2bag,
            "offset2bag",
            1,
            &idx,
            "Long, Int",
        )?;
        check_contiguous_arg("embedding_bag", offset2bag, "offset2bag")?;
        index_values(offset2bag)
    }
}

/// `_embedding_bag_backward` (CPU and Meta): checks the index tensors, rebuilds offset2bag
/// when the forward skipped it, and calls the dense backward. ratten has no sparse tensors,
/// so `sparse=True` is refused.
#[allow(clippy::too_many_arguments)]
pub fn _embedding_bag_backward_symint(
    grad: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    offset2bag: &Tensor,
    bag_size: &Tensor,
    maximum_indices: &Tensor,
    num_weights: i64,
    scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<&Tensor>,
    padding_idx: i64,
) -> Result<Tensor> {
    let (indices, offsets) = promote_indices_and_offsets(indices, offsets)?;
    check_index_types(&indices, &offsets)?;
    check_contiguous_arg("embedding_bag", &indices, "indices")?;
    check_contiguous_arg("embedding_bag", &offsets, "offsets")?;
    if sparse {
        return Err(Error::not_implemented(
            "_embedding_bag_backward: sparse gradients are not supported (ratten has no sparse \
             tensors)",
        ));
    }
    let offset2bag = if grad.is_meta() || indices.is_meta() || offsets.is_meta() {
        offset2bag.clone()
    } else {
        let o2b = backward_offset2bag(&indices, &offsets, offset2bag)?;
        let t = Tensor::zeros(
            &[o2b.len() as i64],
            TensorOptions::new().dtype(ScalarType::Long),
        )?;
        store_values(&t, &o2b)?;
        t
    };
    ops::_embedding_bag_dense_backward::call(
        grad,
        &indices,
        &offset2bag,
        bag_size,
        maximum_indices,
        num_weights,
        scale_grad_by_freq,
        mode,
        per_sample_weights,
        padding_idx,
    )
}

/// The gradient rows of one dtype: sum / mean scatter each bag's gradient row onto the rows
/// its indices name; max sends each feature's gradient to the row that won it.
#[allow(clippy::too_many_arguments)]
fn bag_backward_typed<S: Stored>(
    grad_weight: &Tensor,
    grad: &Tensor,
    idx: &[i64],
    offset2bag: &[i64],
    bag_size: &[i64],
    max_indices: &[i64],
    scale_grad_by_freq: bool,
    mode: i64,
    per_sample_weights: Option<&Tensor>,
    padding_idx: i64,
) -> Result<()>
where
    S::A: Scale,
{
    let (num_weights, d) = (
        grad_weight.sizes()[0] as usize,
        grad_weight.sizes()[1] as usize,
    );
    let g = float_values::<S>(grad)?;
    let n_bags = grad.sizes().first().copied().unwrap_or(0) as usize;
    let mut acc = vec![S::A::ZERO; num_weights * d];
    let out_of_range = |w: i64| {
        Error::index(format!(
            "embedding_bag backward: index {w} is out of range for {num_weights} rows"
        ))
    };
    if mode == MODE_MAX {
        for (b, &size) in bag_size.iter().enumerate() {
            if size == 0 {
                continue;
            }
            for k in 0..d {
                let w = max_indices[b * d + k];
                if w < 0 || w as usize >= num_weights {
                    return Err(out_of_range(w));
                }
                let o = &mut acc[w as usize * d + k];
                *o = *o + g[b * d + k];
            }
        }
    } else {
        let psw = per_sample_weights.map(float_values::<S>).transpose()?;
        let mut counts = vec![0i64; if scale_grad_by_freq { num_weights } else { 0 }];
        if scale_grad_by_freq {
            for &w in idx {
                if w < 0 || w as usize >= num_weights {
                    return Err(out_of_range(w));
                }
                counts[w as usize] += 1;
            }
        }
        for (j, (&w, &bag)) in idx.iter().zip(offset2bag).enumerate() {
            if w == padding_idx {
                continue;
            }
            if w < 0 || w as usize >= num_weights {
                return Err(out_of_range(w));
            }
            if bag < 0 || bag as usize >= n_bags {
                continue;
            }
            let mut scale = 1.0f64;
            if let Some(p) = &psw {
                scale = p[j].to_f64();
            }
            if scale_grad_by_freq {
                scale /= counts[w as usize] as f64;
            }
            let bag = bag as usize;
            if mode == MODE_MEAN && bag_size[bag] != 0 {
                scale /= bag_size[bag] as f64;
            }
            let s = <S::A as Scale>::from_f64(scale);
            let src = &g[bag * d..][..d];
            for (o, &v) in acc[w as usize * d..][..d].iter_mut().zip(src) {
                *o = *o + v * s;
            }
        }
    }
    let stored: Vec<S> = acc.into_iter().map(S::store).collect();
    store_values(grad_weight, &stored)
}

/// `_embedding_bag_dense_backward` (CPU and Meta): the `[num_weights, D]` gradient of the
/// weight.
#[allow(clippy::too_many_arguments)]
pub fn _embedding_bag_dense_backward_cpu(
    grad: &Tensor,
    indices: &Tensor,
    offset2bag: &Tensor,
    bag_size: &Tensor,
    maximum_indices: &Tensor,
    num_weights: i64,
    scale_grad_by_freq: bool,
    mode: i64,
    per_sample_weights: Option<&Tensor>,
    padding_idx: i64,
) -> Result<Tensor> {
    let grad = grad.contiguous()?;
    check_scalar_types(
        "embedding_bag",
        &grad,
        "grad_",
        1,
        &[
            ScalarType::Half,
            ScalarType::BFloat16,
            ScalarType::Float,
            ScalarType::Double,
        ],
        "Half, BFloat16, Float, Double",
    )?;
    let d = grad.sizes().get(1).copied().unwrap_or(0);
    let grad_weight = Tensor::zeros(
        &[num_weights, d],
        TensorOptions::new()
            .dtype(grad.dtype())
            .device(grad.device()),
    )?;
    if grad.is_meta() || indices.is_meta() {
        return Ok(grad_weight);
    }
    let idx = index_values(indices)?;
    let o2b = if mode == MODE_MAX {
        Vec::new()
    } else {
        index_values(offset2bag)?
    };
    let sizes = index_values(bag_size)?;
    let maxi = if mode == MODE_MAX {
        index_values(maximum_indices)?
    } else {
        Vec::new()
    };
    dispatch_bag_types!(grad.dtype(), "embedding_bag_backward", T => bag_backward_typed::<T>(
        &grad_weight,
        &grad,
        &idx,
        &o2b,
        &sizes,
        &maxi,
        scale_grad_by_freq,
        mode,
        per_sample_weights,
        padding_idx,
    ))?;
    Ok(grad_weight)
}

/// `_embedding_bag_per_sample_weights_backward` (CPU and Meta): the gradient of each sample's
/// weight, the dot product of its bag's gradient row and its weight row (0 for padding).
#[allow(clippy::too_many_arguments)]
pub fn _embedding_bag_per_sample_weights_backward_cpu(
    grad: &Tensor,
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    offset2bag: &Tensor,
    mode: i64,
    padding_idx: i64,
) -> Result<Tensor> {
    if mode != MODE_SUM {
        return Err(Error::runtime(
            "embedding_bag_backward: per_sample_weights only supported for mode='sum'",
        ));
    }
    let (indices, offsets) = promote_indices_and_offsets(indices, offsets)?;
    let n = indices.sizes().first().copied().unwrap_or(0);
    let output = Tensor::zeros(
        &[n],
        TensorOptions::new()
            .dtype(grad.dtype())
            .device(grad.device()),
    )?;
    let idx_types = [ScalarType::Long, ScalarType::Int];
    check_scalar_types(
        "embedding_bag",
        &indices,
        "indices",
        1,
        &idx_types,
        "Long, Int",
    )?;
    check_contiguous_arg("embedding_bag", &indices, "indices")?;
    if grad.is_meta() || weight.is_meta() || indices.is_meta() {
        return Ok(output);
    }
    let o2b = backward_offset2bag(&indices, &offsets, offset2bag)?;
    let idx = index_values(&indices)?;
    dispatch_bag_types!(grad.dtype(), "_embedding_bag_per_sample_weights_backward_cpu", T => {
        let (vocab, d) = (weight.sizes()[0] as usize, weight.sizes()[1] as usize);
        let n_bags = grad.sizes()[0] as usize;
        let g = float_values::<T>(grad)?;
        let w = float_values::<T>(weight)?;
        let vals: Vec<T> = idx
            .iter()
            .zip(&o2b)
            .map(|(&word, &bag)| {
                if word == padding_idx || bag < 0 || bag as usize >= n_bags {
                    return Ok(T::store(<T as Stored>::A::ZERO));
                }
                if word < 0 || word as usize >= vocab {
                    return Err(index_error(word));
                }
                let (gr, wr) = (&g[bag as usize * d..][..d], &w[word as usize * d..][..d]);
                let mut s = <T as Stored>::A::ZERO;
                for (&a, &b) in gr.iter().zip(wr) {
                    s += a * b;
                }
                Ok(T::store(s))
            })
            .collect::<Result<_>>()?;
        store_values(&output, &vals)
    })?;
    Ok(output)
}
