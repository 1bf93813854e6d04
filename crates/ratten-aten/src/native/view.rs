//! View operators and their stride rules (aten/src/ATen/native/TensorShape.cpp,
//! ATen/TensorUtils.cpp `computeStride`, ATen/ExpandUtils.cpp, c10 `maybe_wrap_dim`).
//!
//! The geometry of every view is computed here by pure functions over sizes and strides, so
//! the rules can be tested as a table without tensors; the kernels below apply them through
//! the bounds-checked `as_strided` (Note [View operators]).

use ratten_core::tensor_impl::{contiguous_strides, maybe_wrap_dim, TensorBase};
use ratten_core::{torch_check, torch_check_index, Device, DeviceType, Error, Result, ScalarType};

use crate::generated::operators as ops;
use crate::native::MemoryFormat;
use crate::structured::empty_strided;
use crate::tensor_iterator::overlap::is_non_overlapping_and_dense;
use crate::Tensor;

fn base(t: &Tensor) -> &TensorBase {
    t.base()
}

fn wrap(b: TensorBase) -> Tensor {
    Tensor::from_base(b)
}

/// The geometry of a view: what `as_strided` receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewGeometry {
    pub sizes: Vec<i64>,
    pub strides: Vec<i64>,
    pub storage_offset: i64,
}

/// Formats a list as c10's `operator<<(ostream&, ArrayRef)` does: `[2, 3]`.
pub fn fmt_list(v: &[i64]) -> String {
    let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// The number of elements of `sizes`, refusing products that overflow i64.
pub fn checked_numel(sizes: &[i64]) -> Result<i64> {
    sizes.iter().try_fold(1i64, |acc, &s| {
        acc.checked_mul(s).ok_or_else(|| {
            Error::runtime(format!(
                "numel: integer multiplication overflow for sizes {}",
                fmt_list(sizes)
            ))
        })
    })
}

/// `at::infer_size`: resolves one `-1` in `shape` against `numel`.
pub fn infer_size(shape: &[i64], numel: i64) -> Result<Vec<i64>> {
    let mut newsize: i64 = 1;
    let mut infer_dim: Option<usize> = None;
    for (dim, &s) in shape.iter().enumerate() {
        if s == -1 {
            torch_check!(infer_dim.is_none(), "only one dimension can be inferred");
            infer_dim = Some(dim);
        } else if s >= 0 {
            // An overflowing product cannot equal any real numel; saturate and fail below.
            newsize = newsize.saturating_mul(s);
        } else {
            return Err(Error::runtime(format!("invalid shape dimension {s}")));
        }
    }
    let mut res = shape.to_vec();
    if numel == newsize || (infer_dim.is_some() && newsize > 0 && numel % newsize == 0) {
        if let Some(d) = infer_dim {
            torch_check!(
                newsize != 0,
                "cannot reshape tensor of 0 elements into shape {} because the unspecified \
                 dimension size -1 can be any value and is ambiguous",
                fmt_list(shape)
            );
            res[d] = numel / newsize;
        }
        return Ok(res);
    }
    Err(Error::runtime(format!(
        "shape '{}' is invalid for input of size {}",
        fmt_list(shape),
        numel
    )))
}

/// `at::detail::computeStride`: the strides that let a tensor of `oldshape`/`oldstride` be
/// viewed as `newshape` without copying, or `None` when a new dimension would span two
/// non-contiguous chunks of the old one. `newshape` must have the same numel.
pub fn compute_stride(oldshape: &[i64], oldstride: &[i64], newshape: &[i64]) -> Option<Vec<i64>> {
    if oldshape.is_empty() {
        return Some(vec![1; newshape.len()]);
    }
    let numel: i64 = oldshape.iter().product();
    if numel == 0 && oldshape == newshape {
        return Some(oldstride.to_vec());
    }
    let mut newstride = vec![0i64; newshape.len()];
    if numel == 0 {
        // Strides are arbitrary for an empty tensor; use those of a fresh contiguous one.
        for view_d in (0..newshape.len()).rev() {
            newstride[view_d] = if view_d == newshape.len() - 1 {
                1
            } else {
                newshape[view_d + 1]
                    .max(1)
                    .saturating_mul(newstride[view_d + 1])
            };
        }
        return Some(newstride);
    }
    let mut view_d = newshape.len() as i64 - 1;
    // The stride of the innermost dimension of the current contiguous chunk.
    let mut chunk_base_stride = *oldstride.last()?;
    let mut tensor_numel: i64 = 1;
    let mut view_numel: i64 = 1;
    for tensor_d in (0..oldshape.len()).rev() {
        tensor_numel = tensor_numel.saturating_mul(oldshape[tensor_d]);
        // At the end of a chunk of old dims that are contiguous with each other, place the
        // new dims that cover the same elements.
        if tensor_d == 0
            || (oldshape[tensor_d - 1] != 1
                && oldstride[tensor_d - 1] != tensor_numel.saturating_mul(chunk_base_stride))
        {
            while view_d >= 0 && (view_numel < tensor_numel || newshape[view_d as usize] == 1) {
                newstride[view_d as usize] = view_numel.saturating_mul(chunk_base_stride);
                view_numel = view_numel.saturating_mul(newshape[view_d as usize]);
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = oldstride[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(newstride)
}

/// The message `view` gives when `compute_stride` fails.
pub const VIEW_INCOMPATIBLE: &str = "view size is not compatible with input tensor's size and \
     stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) \
     instead.";

/// `view(size)`: the inferred sizes and the strides that alias the input, or PyTorch's error.
pub fn view_geometry(
    sizes: &[i64],
    strides: &[i64],
    shape: &[i64],
) -> Result<(Vec<i64>, Vec<i64>)> {
    let numel = checked_numel(sizes)?;
    let inferred = infer_size(shape, numel)?;
    match compute_stride(sizes, strides, &inferred) {
        Some(st) => Ok((inferred, st)),
        None => Err(Error::runtime(VIEW_INCOMPATIBLE)),
    }
}

/// `at::inferExpandGeometry`: sizes and strides of `expand(sizes)`; new and broadcast dims get
/// stride 0, `-1` keeps an existing size. `type_str` names the tensor in the count error, as
/// `toString()` does in PyTorch (`torch.FloatTensor`).
pub fn expand_geometry(
    tensor_sizes: &[i64],
    tensor_strides: &[i64],
    sizes: &[i64],
    type_str: &str,
) -> Result<(Vec<i64>, Vec<i64>)> {
    torch_check!(
        sizes.len() >= tensor_sizes.len(),
        "expand({}{{{}}}, size={}): the number of sizes provided ({}) must be greater or equal \
         to the number of dimensions in the tensor ({})",
        type_str,
        fmt_list(tensor_sizes),
        fmt_list(sizes),
        sizes.len(),
        tensor_sizes.len()
    );
    let ndim = sizes.len();
    let tensor_dim = tensor_sizes.len() as i64;
    let mut out_sizes = vec![0i64; ndim];
    let mut out_strides = vec![0i64; ndim];
    if tensor_dim == 0 {
        // A 0-dim tensor takes the sizes as given, all strides 0 (as_strided then refuses
        // negative sizes).
        return Ok((sizes.to_vec(), out_strides));
    }
    for i in (0..ndim).rev() {
        let offset = (ndim - 1 - i) as i64;
        let dim = tensor_dim - 1 - offset;
        let mut size = if dim >= 0 {
            tensor_sizes[dim as usize]
        } else {
            1
        };
        let mut stride = if dim >= 0 {
            tensor_strides[dim as usize]
        } else {
            out_sizes[i + 1].saturating_mul(out_strides[i + 1])
        };
        let mut target = sizes[i];
        if target == -1 {
            torch_check!(
                dim >= 0,
                "The expanded size of the tensor ({}) isn't allowed in a leading, non-existing \
                 dimension {}",
                target,
                i
            );
            target = size;
        }
        if size != target {
            torch_check!(
                size == 1,
                "The expanded size of the tensor ({}) must match the existing size ({}) at \
                 non-singleton dimension {}.  Target sizes: {}.  Tensor sizes: {}",
                target,
                size,
                i,
                fmt_list(sizes),
                fmt_list(tensor_sizes)
            );
            torch_check!(
                target >= 0,
                "Trying to create tensor with negative dimension {}: {}",
                target,
                fmt_list(sizes)
            );
            size = target;
            stride = 0;
        }
        out_sizes[i] = size;
        out_strides[i] = stride;
    }
    Ok((out_sizes, out_strides))
}

/// `transpose(dim0, dim1)`.
pub fn transpose_geometry(
    sizes: &[i64],
    strides: &[i64],
    dim0: i64,
    dim1: i64,
) -> Result<(Vec<i64>, Vec<i64>)> {
    let n = sizes.len() as i64;
    let d0 = maybe_wrap_dim(dim0, n as usize, true)?;
    let d1 = maybe_wrap_dim(dim1, n as usize, true)?;
    let (mut sz, mut st) = (sizes.to_vec(), strides.to_vec());
    if n > 0 {
        sz.swap(d0, d1);
        st.swap(d0, d1);
    }
    Ok((sz, st))
}

/// `t()`: transpose of a tensor with at most 2 dims.
pub fn t_geometry(sizes: &[i64], strides: &[i64]) -> Result<(Vec<i64>, Vec<i64>)> {
    torch_check!(
        sizes.len() <= 2,
        "t() expects a tensor with <= 2 dimensions, but self is {}D",
        sizes.len()
    );
    if sizes.len() < 2 {
        return Ok((sizes.to_vec(), strides.to_vec()));
    }
    transpose_geometry(sizes, strides, 0, 1)
}

/// `permute(dims)`.
pub fn permute_geometry(
    sizes: &[i64],
    strides: &[i64],
    dims: &[i64],
) -> Result<(Vec<i64>, Vec<i64>)> {
    let ndim = sizes.len();
    torch_check!(
        ndim == dims.len(),
        "permute(sparse_coo): number of dimensions in the tensor input does not match the \
         length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to \
         len(dims) = {}",
        ndim,
        dims.len()
    );
    let mut seen = vec![false; ndim];
    let mut out_sizes = Vec::with_capacity(ndim);
    let mut out_strides = Vec::with_capacity(ndim);
    for &d in dims {
        let d = maybe_wrap_dim(d, ndim, true)?;
        torch_check!(!seen[d], "permute(): duplicate dims are not allowed.");
        seen[d] = true;
        out_sizes.push(sizes[d]);
        out_strides.push(strides[d]);
    }
    Ok((out_sizes, out_strides))
}

/// `squeeze()`: drops every dim of size 1.
pub fn squeeze_all_geometry(sizes: &[i64], strides: &[i64]) -> (Vec<i64>, Vec<i64>) {
    sizes
        .iter()
        .zip(strides)
        .filter(|(&s, _)| s != 1)
        .map(|(&s, &st)| (s, st))
        .unzip()
}

/// `squeeze(dims)` (and `squeeze(dim)` with one dim): drops the listed dims that have size 1;
/// others are kept silently, as in PyTorch.
pub fn squeeze_dims_geometry(
    sizes: &[i64],
    strides: &[i64],
    dims: &[i64],
) -> Result<(Vec<i64>, Vec<i64>)> {
    let ndim = sizes.len();
    let mut mask = vec![false; ndim.max(1)];
    for &d in dims {
        let w = maybe_wrap_dim(d, ndim, true)?;
        torch_check!(
            !mask[w],
            "dim {} appears multiple times in the list of dims",
            w
        );
        mask[w] = true;
    }
    let mut out_sizes = Vec::with_capacity(ndim);
    let mut out_strides = Vec::with_capacity(ndim);
    for d in 0..ndim {
        if !(mask[d] && sizes[d] == 1) {
            out_sizes.push(sizes[d]);
            out_strides.push(strides[d]);
        }
    }
    Ok((out_sizes, out_strides))
}

/// `unsqueeze(dim)` (`inferUnsqueezeGeometry`): the new dim has size 1 and the stride that keeps
/// the tensor contiguous if it was.
pub fn unsqueeze_geometry(
    sizes: &[i64],
    strides: &[i64],
    dim: i64,
) -> Result<(Vec<i64>, Vec<i64>)> {
    let d = maybe_wrap_dim(dim, sizes.len() + 1, true)?;
    let new_stride = if d >= sizes.len() {
        1
    } else {
        sizes[d].saturating_mul(strides[d])
    };
    let (mut sz, mut st) = (sizes.to_vec(), strides.to_vec());
    sz.insert(d, 1);
    st.insert(d, new_stride);
    Ok((sz, st))
}

/// `slice(dim, start, end, step)` with PyTorch's clamping of `start`/`end`.
pub fn slice_geometry(
    sizes: &[i64],
    strides: &[i64],
    storage_offset: i64,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<ViewGeometry> {
    let ndim = sizes.len();
    torch_check_index!(ndim != 0, "slice() cannot be applied to a 0-dim tensor.");
    let d = maybe_wrap_dim(dim, ndim, true)?;
    let mut start_val = start.unwrap_or(0);
    let mut end_val = end.unwrap_or(i64::MAX);
    torch_check!(step > 0, "slice step must be positive");
    let size = sizes[d];
    if start_val < 0 {
        start_val += size;
    }
    if end_val < 0 {
        end_val += size;
    }
    if start_val < 0 {
        start_val = 0;
    } else if start_val >= size {
        start_val = size;
    }
    if end_val < start_val {
        end_val = start_val;
    } else if end_val >= size {
        end_val = size;
    }
    let len = end_val - start_val;
    let (mut sz, mut st) = (sizes.to_vec(), strides.to_vec());
    // (len + step - 1) / step, written so a huge step cannot overflow.
    sz[d] = if len == 0 { 0 } else { (len - 1) / step + 1 };
    st[d] = strides[d].saturating_mul(step);
    Ok(ViewGeometry {
        sizes: sz,
        strides: st,
        storage_offset: storage_offset.saturating_add(start_val.saturating_mul(strides[d])),
    })
}

/// `narrow(dim, start, length)`: checks its arguments and returns the `slice` it is.
pub fn narrow_geometry(
    sizes: &[i64],
    strides: &[i64],
    storage_offset: i64,
    dim: i64,
    start: i64,
    length: i64,
) -> Result<ViewGeometry> {
    torch_check!(
        !sizes.is_empty(),
        "narrow() cannot be applied to a 0-dim tensor."
    );
    torch_check!(length >= 0, "narrow(): length must be non-negative.");
    let d = maybe_wrap_dim(dim, sizes.len(), true)?;
    let cur_size = sizes[d];
    torch_check_index!(
        -cur_size <= start && start <= cur_size,
        "start out of range (expected to be in range of [{}, {}], but got {})",
        -cur_size,
        cur_size,
        start
    );
    let start = if start < 0 { start + cur_size } else { start };
    torch_check!(
        start <= cur_size - length,
        "start ({}) + length ({}) exceeds dimension size ({}).",
        start,
        length,
        cur_size
    );
    slice_geometry(
        sizes,
        strides,
        storage_offset,
        d as i64,
        Some(start),
        Some(start + length),
        1,
    )
}

/// `select(dim, index)`: drops `dim`, moving the offset to `index`.
pub fn select_geometry(
    sizes: &[i64],
    strides: &[i64],
    storage_offset: i64,
    dim: i64,
    index: i64,
) -> Result<ViewGeometry> {
    let ndim = sizes.len();
    torch_check_index!(ndim != 0, "select() cannot be applied to a 0-dim tensor.");
    let d = maybe_wrap_dim(dim, ndim, true)?;
    let size = sizes[d];
    // `size <= -1 - index` rather than `index < -size`, so i64::MIN does not overflow.
    torch_check_index!(
        !(size <= -1 - index || size <= index),
        "select(): index {} out of range for tensor of size {} at dimension {}",
        index,
        fmt_list(sizes),
        d
    );
    let index = if index < 0 { index + size } else { index };
    let (mut sz, mut st) = (sizes.to_vec(), strides.to_vec());
    sz.remove(d);
    st.remove(d);
    Ok(ViewGeometry {
        sizes: sz,
        strides: st,
        storage_offset: storage_offset.saturating_add(index.saturating_mul(strides[d])),
    })
}

/// `flatten(start_dim, end_dim)`: the target shape (which `reshape` then applies), or `None`
/// when the tensor is returned unchanged (`start_dim == end_dim`).
pub fn flatten_shape(sizes: &[i64], start_dim: i64, end_dim: i64) -> Result<Option<Vec<i64>>> {
    let s = maybe_wrap_dim(start_dim, sizes.len(), true)?;
    let e = maybe_wrap_dim(end_dim, sizes.len(), true)?;
    torch_check!(
        s <= e,
        "flatten() has invalid args: start_dim cannot come after end_dim"
    );
    if sizes.is_empty() {
        return Ok(Some(vec![1]));
    }
    if s == e {
        return Ok(None);
    }
    let slice_numel = checked_numel(&sizes[s..=e])?;
    let mut shape = Vec::with_capacity(sizes.len() - (e - s));
    shape.extend_from_slice(&sizes[..s]);
    shape.push(slice_numel);
    shape.extend_from_slice(&sizes[e + 1..]);
    Ok(Some(shape))
}

/// PyTorch's legacy type string of a tensor (`Tensor::toString()` as Python shows it):
/// `torch.FloatTensor`, `torch.cuda.LongTensor`, `torch.meta.HalfTensor`.
pub fn legacy_type_str(dtype: ScalarType, device: Device) -> String {
    match device.device_type {
        DeviceType::Cpu => format!("torch.{}Tensor", dtype.name()),
        other => format!("torch.{}.{}Tensor", other, dtype.name()),
    }
}

// Note [View operators]
// The view operators are declared in native_functions.yaml as PyTorch declares them and reach
// these kernels through the dispatcher (CompositeExplicitAutograd for most, CPU and Meta for
// `view`, `as_strided` and `unfold`, CompositeImplicitAutograd for the compositions such as
// `reshape`, `flatten`, `split.sizes`). Each computes its geometry with the pure functions
// above and makes the view with the bounds-checked `as_strided`, so a view shares its base's
// storage and version counter and works unchanged on meta tensors. `reshape`, `contiguous`
// and `clone` copy when they must, through the dispatcher too.

fn view_at(self_: &Tensor, g: ViewGeometry) -> Result<Tensor> {
    Ok(wrap(base(self_).as_strided(
        &g.sizes,
        &g.strides,
        Some(g.storage_offset),
    )?))
}

fn view_with(self_: &Tensor, sizes: &[i64], strides: &[i64]) -> Result<Tensor> {
    Ok(wrap(base(self_).as_strided(sizes, strides, None)?))
}

/// `as_strided(size, stride, storage_offset=None)` (CPU and Meta: PyTorch's
/// `as_strided_tensorimpl`).
pub fn as_strided_tensorimpl(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    Ok(wrap(base(self_).as_strided(
        size,
        stride,
        storage_offset,
    )?))
}

/// `view(size)`: the same data with a new shape (one `-1` is inferred); an error when the
/// strides cannot express it (use `reshape`).
pub fn view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    let b = base(self_);
    let (sizes, strides) = view_geometry(&b.sizes(), &b.strides(), size)?;
    view_with(self_, &sizes, &strides)
}

/// `view.dtype(dtype)`: the same bytes read as another dtype; the last dim scales by the
/// ratio of the element sizes (TensorConversions.cpp's `view_dtype`).
pub fn view_dtype(self_: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    let b = base(self_);
    let from = b.dtype();
    if from == dtype {
        return Ok(self_.clone());
    }
    let (old, new) = (from.element_size() as i64, dtype.element_size() as i64);
    let mut sizes = b.sizes().to_vec();
    let mut strides = b.strides().to_vec();
    let mut offset = b.storage_offset();
    let what = format!(
        "to view {} as {} (different element sizes)",
        from.name(),
        dtype.name()
    );
    if old != new {
        let ndim = sizes.len();
        torch_check!(ndim > 0, "self.dim() cannot be 0 {what}");
        let last = ndim - 1;
        if old > new {
            let ratio = old / new;
            torch_check!(
                strides[last] == 1,
                "self.stride(-1) must be 1 {what}, but got {}",
                strides[last]
            );
            for s in &mut strides[..last] {
                *s *= ratio;
            }
            sizes[last] *= ratio;
            offset *= ratio;
        } else {
            let ratio = new / old;
            torch_check!(
                sizes[last] % ratio == 0,
                "self.size(-1) must be divisible by {ratio} {what}, but got {}",
                sizes[last]
            );
            torch_check!(
                offset % ratio == 0,
                "self.storage_offset() must be divisible by {ratio} {what}, but got {offset}"
            );
            torch_check!(
                strides[last] == 1,
                "self.stride(-1) must be 1 {what}, but got {}",
                strides[last]
            );
            for (d, s) in strides[..last].iter_mut().enumerate() {
                torch_check!(
                    *s % ratio == 0,
                    "self.stride({d}) must be divisible by {ratio} {what}, but got {s}"
                );
                *s /= ratio;
            }
            sizes[last] /= ratio;
            offset /= ratio;
        }
    }
    Ok(wrap(b.as_strided_dtype(dtype, &sizes, &strides, offset)?))
}

/// `view_as(other)`.
pub fn view_as(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    ops::view::call(self_, &base(other).sizes())
}

/// `reshape(shape)`: a view when the strides allow it, else a contiguous copy
/// (`_reshape_copy`, here `clone` then `_unsafe_view`).
pub fn reshape(self_: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let b = base(self_);
    let sizes = b.sizes();
    let inferred = infer_size(shape, checked_numel(&sizes)?)?;
    match compute_stride(&sizes, &b.strides(), &inferred) {
        Some(_) => ops::view::call(self_, &inferred),
        None => {
            let copy = ops::clone::call(self_, Some(MemoryFormat::Contiguous))?;
            ops::_unsafe_view::call(&copy, &inferred)
        }
    }
}

/// `reshape_as(other)`.
pub fn reshape_as(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    ops::reshape::call(self_, &base(other).sizes())
}

/// `_unsafe_view(size)`: `view` whose result autograd treats as a new tensor, not a view.
pub fn _unsafe_view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    view(self_, size)
}

/// `transpose(dim0, dim1)`.
pub fn transpose(self_: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    let b = base(self_);
    let (sz, st) = transpose_geometry(&b.sizes(), &b.strides(), dim0, dim1)?;
    view_with(self_, &sz, &st)
}

/// `t()`: transposes a 2-D tensor; 0-D and 1-D tensors are returned as views unchanged.
pub fn t(self_: &Tensor) -> Result<Tensor> {
    let b = base(self_);
    let (sz, st) = t_geometry(&b.sizes(), &b.strides())?;
    view_with(self_, &sz, &st)
}

/// `permute(dims)`.
pub fn permute(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let b = base(self_);
    let (sz, st) = permute_geometry(&b.sizes(), &b.strides(), dims)?;
    view_with(self_, &sz, &st)
}

/// `movedim(source, destination)` with lists: the moved dims land at `destination` in order,
/// the others keep their order (TensorShape.cpp's `movedim`).
pub fn movedim_intlist(self_: &Tensor, source: &[i64], destination: &[i64]) -> Result<Tensor> {
    let ndim = base(self_).dim();
    torch_check!(
        source.len() == destination.len(),
        "movedim: Invalid source or destination dims: source ({} dims) should contain the same \
         number of dims as destination ({} dims)",
        fmt_list(source),
        fmt_list(destination)
    );
    let wrap_all = |v: &[i64]| -> Result<Vec<usize>> {
        v.iter().map(|&d| maybe_wrap_dim(d, ndim, true)).collect()
    };
    let (src, dst) = (wrap_all(source)?, wrap_all(destination)?);
    let repeated = |v: &[usize]| (1..v.len()).any(|i| v[..i].contains(&v[i]));
    torch_check!(
        !repeated(&src),
        "movedim: repeated dim in `source` ({})",
        fmt_list(source)
    );
    torch_check!(
        !repeated(&dst),
        "movedim: repeated dim in `destination` ({})",
        fmt_list(destination)
    );
    let n = ndim;
    let mut order: Vec<Option<i64>> = vec![None; n];
    for (s, d) in src.iter().zip(&dst) {
        order[*d] = Some(*s as i64);
    }
    let mut rest = (0..n).filter(|i| !src.contains(i)).map(|i| i as i64);
    let perm: Vec<i64> = order
        .into_iter()
        .map(|o| o.or_else(|| rest.next()).unwrap_or(0))
        .collect();
    ops::permute::call(self_, &perm)
}

/// `movedim(source, destination)` with one dim each.
pub fn movedim(self_: &Tensor, source: i64, destination: i64) -> Result<Tensor> {
    ops::movedim_intlist::call(self_, &[source], &[destination])
}

/// `expand(size, implicit=False)`: broadcasts size-1 and new leading dims with stride 0; `-1`
/// keeps a size. `implicit` only tells autograd how the expand arose.
pub fn expand(self_: &Tensor, size: &[i64], _implicit: bool) -> Result<Tensor> {
    let b = base(self_);
    let (sz, st) = expand_geometry(
        &b.sizes(),
        &b.strides(),
        size,
        &legacy_type_str(b.dtype(), b.device()),
    )?;
    view_with(self_, &sz, &st)
}

/// `expand_as(other)`.
pub fn expand_as(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    ops::expand::call(self_, &base(other).sizes(), false)
}

/// `squeeze()`: drops all dims of size 1.
pub fn squeeze(self_: &Tensor) -> Result<Tensor> {
    let b = base(self_);
    let (sz, st) = squeeze_all_geometry(&b.sizes(), &b.strides());
    view_with(self_, &sz, &st)
}

/// `squeeze(dim)`: drops `dim` if it has size 1.
pub fn squeeze_dim(self_: &Tensor, dim: i64) -> Result<Tensor> {
    squeeze_dims(self_, &[dim])
}

/// `squeeze(dims)`: drops those of `dims` that have size 1.
pub fn squeeze_dims(self_: &Tensor, dim: &[i64]) -> Result<Tensor> {
    let b = base(self_);
    let (sz, st) = squeeze_dims_geometry(&b.sizes(), &b.strides(), dim)?;
    view_with(self_, &sz, &st)
}

/// `unsqueeze(dim)`: inserts a dim of size 1 at `dim` (in `[-dim()-1, dim()]`).
pub fn unsqueeze(self_: &Tensor, dim: i64) -> Result<Tensor> {
    let b = base(self_);
    let (sz, st) = unsqueeze_geometry(&b.sizes(), &b.strides(), dim)?;
    view_with(self_, &sz, &st)
}

/// `narrow(dim, start, length)`.
pub fn narrow(self_: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    let b = base(self_);
    // Checked here for its text; the slice below would clamp.
    narrow_geometry(
        &b.sizes(),
        &b.strides(),
        b.storage_offset(),
        dim,
        start,
        length,
    )?;
    let dim = maybe_wrap_dim(dim, b.dim(), false)?;
    let start = if start < 0 {
        start + b.sizes()[dim]
    } else {
        start
    };
    ops::slice_Tensor::call(self_, dim as i64, Some(start), Some(start + length), 1)
}

/// `narrow(dim, start: Tensor, length)`: `start` is a 0-dim integral tensor.
pub fn narrow_tensor(self_: &Tensor, dim: i64, start: &Tensor, length: i64) -> Result<Tensor> {
    torch_check!(
        start.dim() == 0 && start.dtype().is_integral(false),
        "start must be an 0-dim integral Tensor."
    );
    torch_check!(
        !start.is_meta(),
        "narrow(): a meta `start` tensor has no value to read"
    );
    let st = ops::to_dtype::call(start, ScalarType::Long, false, false, None)?;
    let v = st.contiguous()?.to_vec::<i64>()?;
    ops::narrow::call(self_, dim, v[0], length)
}

/// `slice(dim=0, start=None, end=None, step=1)` (Python's `t[start:end:step]` on `dim`), with
/// PyTorch's clamping of out-of-range bounds.
pub fn slice(
    self_: &Tensor,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    let b = base(self_);
    let g = slice_geometry(
        &b.sizes(),
        &b.strides(),
        b.storage_offset(),
        dim,
        start,
        end,
        step,
    )?;
    view_at(self_, g)
}

/// `select(dim, index)` (Python's `t[index]` on `dim`): removes `dim`.
pub fn select(self_: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    let b = base(self_);
    let g = select_geometry(&b.sizes(), &b.strides(), b.storage_offset(), dim, index)?;
    view_at(self_, g)
}

/// `flatten(start_dim=0, end_dim=-1)`: merges the dims in between (a view when possible, as
/// `reshape`); a 0-dim tensor becomes 1-D.
pub fn flatten(self_: &Tensor, start_dim: i64, end_dim: i64) -> Result<Tensor> {
    match flatten_shape(&base(self_).sizes(), start_dim, end_dim)? {
        Some(shape) => ops::reshape::call(self_, &shape),
        // Nothing to merge: the tensor itself, as PyTorch returns `self`.
        None => Ok(self_.clone()),
    }
}

/// `unflatten(dim, sizes)`: splits `dim` into `sizes` (one `-1` inferred).
pub fn unflatten(self_: &Tensor, dim: i64, sizes: &[i64]) -> Result<Tensor> {
    let b = base(self_);
    let shape = b.sizes();
    let d = maybe_wrap_dim(dim, shape.len(), true)?;
    torch_check!(!sizes.is_empty(), "unflatten: sizes must be non-empty");
    let inferred = match infer_size(sizes, shape[d]) {
        Ok(v) => v,
        Err(e) if e.message().starts_with("shape '") => {
            return Err(Error::runtime(format!(
                "unflatten: Provided sizes {} don't multiply up to the size of dim {dim} ({}) in \
                 the input tensor",
                fmt_list(sizes),
                shape[d]
            )))
        }
        Err(e) => {
            return Err(Error::runtime(format!(
                "unflatten got an unexpected error:\n{}",
                e.message()
            )))
        }
    };
    let mut new_shape: Vec<i64> = shape[..d].to_vec();
    new_shape.extend_from_slice(&inferred);
    new_shape.extend_from_slice(&shape[d + 1..]);
    ops::view::call(self_, &new_shape)
}

/// `unfold(dimension, size, step)`: a new last dim of windows of `size` every `step` along
/// `dimension` (a 0-dim tensor is treated as 1-D).
pub fn unfold(self_: &Tensor, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    let b = base(self_);
    let (sizes, strides) = (b.sizes(), b.strides());
    let ndim = sizes.len();
    let d = maybe_wrap_dim(dimension, ndim.max(1), true)?;
    let (dim_size, dim_stride) = if ndim == 0 {
        (1, 1)
    } else {
        (sizes[d], strides[d])
    };
    torch_check!(
        size <= dim_size,
        "maximum size for tensor at dimension {d} is {dim_size} but size is {size}"
    );
    torch_check!(step > 0, "step is {step} but must be > 0");
    torch_check!(size >= 0, "size is {size} but must be >= 0");
    let mut new_sizes = sizes.to_vec();
    let mut new_strides = strides.to_vec();
    if ndim > 0 {
        new_sizes[d] = (dim_size - size) / step + 1;
        new_strides[d] = step * dim_stride;
    }
    new_sizes.push(size);
    new_strides.push(dim_stride);
    view_with(self_, &new_sizes, &new_strides)
}

/// `diagonal(offset=0, dim1=0, dim2=1)`: the diagonal of the `dim1` x `dim2` planes as a new
/// last dim.
pub fn diagonal(self_: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let b = base(self_);
    let (sizes, strides) = (b.sizes(), b.strides());
    let ndim = sizes.len();
    let d1 = maybe_wrap_dim(dim1, ndim, true)?;
    let d2 = maybe_wrap_dim(dim2, ndim, true)?;
    torch_check!(
        d1 != d2,
        "diagonal dimensions cannot be identical {dim1}, {dim2}"
    );
    let mut storage_offset = b.storage_offset();
    let diag_size = if offset >= 0 {
        (sizes[d1]).min(sizes[d2] - offset).max(0)
    } else {
        (sizes[d1] + offset).min(sizes[d2]).max(0)
    };
    if diag_size > 0 {
        storage_offset += if offset >= 0 {
            offset * strides[d2]
        } else {
            -offset * strides[d1]
        };
    }
    let (hi, lo) = (d1.max(d2), d1.min(d2));
    let mut new_sizes = sizes.to_vec();
    let mut new_strides = strides.to_vec();
    for k in [hi, lo] {
        new_sizes.remove(k);
        new_strides.remove(k);
    }
    new_sizes.push(diag_size);
    new_strides.push(strides[d1] + strides[d2]);
    view_at(
        self_,
        ViewGeometry {
            sizes: new_sizes,
            strides: new_strides,
            storage_offset,
        },
    )
}

/// `split(split_size, dim=0)`: pieces of `split_size` along `dim`, the last one shorter.
pub fn split(self_: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    let b = base(self_);
    torch_check_index!(
        b.dim() != 0,
        "split expects at least a 1-dimensional tensor"
    );
    torch_check!(
        split_size >= 0,
        "split expects split_size be non-negative, but got split_size={split_size}"
    );
    let d = maybe_wrap_dim(dim, b.dim(), false)?;
    let dim_size = b.sizes()[d];
    torch_check!(
        split_size > 0 || dim_size == 0,
        "split_size can only be 0 if dimension size is 0, but got dimension size of {dim_size}"
    );
    // An empty dim still gives one (empty) piece, as torch.
    let num_splits = if split_size == 0 {
        1
    } else {
        ((dim_size + split_size - 1) / split_size).max(1)
    };
    let mut sizes = vec![split_size; num_splits as usize];
    if let Some(last) = sizes.last_mut() {
        *last = split_size - (split_size * num_splits - dim_size);
    }
    ops::split_with_sizes::call(self_, &sizes, d as i64)
}

/// `split(split_sizes: list, dim=0)`.
pub fn split_sizes(self_: &Tensor, split_size: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    ops::split_with_sizes::call(self_, split_size, dim)
}

/// `split_with_sizes(split_sizes, dim=0)`: consecutive pieces of the given sizes, which must
/// sum to the size of `dim`.
pub fn split_with_sizes(self_: &Tensor, split_sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    let b = base(self_);
    torch_check_index!(
        b.dim() != 0,
        "split expects at least a 1-dimensional tensor"
    );
    let d = maybe_wrap_dim(dim, b.dim(), false)?;
    let dim_size = b.sizes()[d];
    torch_check!(
        split_sizes.iter().all(|&s| s >= 0),
        "split_with_sizes expects split_sizes have only non-negative entries, but got \
         split_sizes={}",
        fmt_list(split_sizes)
    );
    let total = split_sizes
        .iter()
        .try_fold(0i64, |a, &s| a.checked_add(s))
        .unwrap_or(i64::MAX);
    torch_check!(
        total == dim_size,
        "split_with_sizes expects split_sizes to sum exactly to {dim_size} (input tensor's size \
         at dimension {dim}), but got split_sizes={}",
        fmt_list(split_sizes)
    );
    let mut start = 0;
    split_sizes
        .iter()
        .map(|&len| {
            let piece = ops::narrow::call(self_, d as i64, start, len);
            start += len;
            piece
        })
        .collect()
}

/// `chunk(chunks, dim=0)`: `split` with pieces of `ceil(size / chunks)`.
pub fn chunk(self_: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    let b = base(self_);
    torch_check!(b.dim() > 0, "chunk expects at least a 1-dimensional tensor");
    torch_check!(
        chunks > 0,
        "chunk expects `chunks` to be greater than 0, got: {chunks}"
    );
    let d = maybe_wrap_dim(dim, b.dim(), false)?;
    let dim_size = b.sizes()[d];
    let split_size = (dim_size + chunks - 1) / chunks;
    if split_size == 0 && dim_size == 0 {
        // Every chunk is empty: `chunks` pieces, as torch.
        let sizes = vec![0; chunks as usize];
        return ops::split_with_sizes::call(self_, &sizes, d as i64);
    }
    ops::split_Tensor::call(self_, split_size, d as i64)
}

/// `unbind(dim=0)`: the slices along `dim`, each without it.
pub fn unbind(self_: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    let b = base(self_);
    let d = maybe_wrap_dim(dim, b.dim(), false)?;
    let n = b.sizes()[d];
    (0..n)
        .map(|i| ops::select_int::call(self_, d as i64, i))
        .collect()
}

/// `alias()`: a view with the same geometry.
pub fn alias(self_: &Tensor) -> Result<Tensor> {
    Ok(wrap(base(self_).alias()))
}

/// `detach()`: an alias; the autograd layer gives it no history.
pub fn detach(self_: &Tensor) -> Result<Tensor> {
    Ok(wrap(base(self_).alias()))
}

/// The strides `memory_format` gives a tensor of `sizes` (`Contiguous`, `ChannelsLast` for
/// 4-D, `ChannelsLast3d` for 5-D); None for `Preserve`.
pub fn memory_format_strides(
    sizes: &[i64],
    memory_format: MemoryFormat,
) -> Result<Option<Vec<i64>>> {
    let channels_last = |rank: usize, name: &str| -> Result<Vec<i64>> {
        torch_check!(
            sizes.len() == rank,
            "required rank {rank} tensor to use {name} format"
        );
        // Order from the fastest: C, then the spatial dims from the last, then N.
        let mut order = vec![1usize];
        order.extend((2..rank).rev());
        order.push(0);
        let mut strides = vec![0i64; rank];
        let mut acc = 1i64;
        for d in order {
            strides[d] = acc;
            acc = acc.saturating_mul(sizes[d].max(1));
        }
        Ok(strides)
    };
    Ok(match memory_format {
        MemoryFormat::Contiguous => Some(contiguous_strides(sizes).to_vec()),
        MemoryFormat::Preserve => None,
        MemoryFormat::ChannelsLast => Some(channels_last(4, "channels_last")?),
        MemoryFormat::ChannelsLast3d => Some(channels_last(5, "channels_last_3d")?),
    })
}

/// Whether `self_` already has the layout `memory_format` asks for.
fn is_contiguous_as(self_: &Tensor, memory_format: MemoryFormat) -> Result<bool> {
    let b = base(self_);
    Ok(match memory_format_strides(&b.sizes(), memory_format)? {
        None => true,
        Some(_) if memory_format == MemoryFormat::Contiguous => b.is_contiguous(),
        Some(want) => {
            let (sizes, strides) = (b.sizes(), b.strides());
            (0..sizes.len()).all(|d| sizes[d] <= 1 || strides[d] == want[d])
        }
    })
}

/// `contiguous(memory_format=contiguous_format)`: this tensor when it already has that layout,
/// else a copy with it (CompositeImplicitAutograd).
pub fn contiguous(self_: &Tensor, memory_format: MemoryFormat) -> Result<Tensor> {
    torch_check!(
        memory_format != MemoryFormat::Preserve,
        "preserve memory format is unsupported by the contiguous operator"
    );
    if is_contiguous_as(self_, memory_format)? {
        return Ok(self_.clone());
    }
    ops::clone::call(self_, Some(memory_format))
}

/// `clone(memory_format=None)`: a copy. `Preserve` (the default) keeps the strides of a
/// non-overlapping and dense tensor and makes others contiguous.
pub fn clone(self_: &Tensor, memory_format: Option<MemoryFormat>) -> Result<Tensor> {
    let b = base(self_);
    let sizes = b.sizes();
    let format = memory_format.unwrap_or(MemoryFormat::Preserve);
    let strides = match memory_format_strides(&sizes, format)? {
        Some(s) => s,
        None if is_non_overlapping_and_dense(&sizes, &b.strides()) => b.strides().to_vec(),
        None => contiguous_strides(&sizes).to_vec(),
    };
    let out = empty_strided(&sizes, &strides, (b.dtype(), b.device()).into())?;
    if b.numel() > 0 {
        ops::copy_::call(&out, self_, false)?;
    }
    Ok(out)
}

impl Tensor {
    /// `contiguous()`: this tensor when it is contiguous, else a contiguous copy (PyTorch's
    /// hand-written `TensorBase::contiguous`, `manual_cpp_binding` in the yaml: the check
    /// runs before any dispatch).
    pub fn contiguous(&self) -> Result<Tensor> {
        if base(self).is_contiguous() {
            return Ok(self.clone());
        }
        self.__dispatch_contiguous()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratten_core::ErrorKind;

    #[test]
    fn compute_stride_cases() {
        // contiguous split and merge
        assert_eq!(compute_stride(&[2, 3], &[3, 1], &[6]), Some(vec![1]));
        assert_eq!(compute_stride(&[6], &[1], &[2, 3]), Some(vec![3, 1]));
        // transposed: merging fails, splitting the inner dim works
        assert_eq!(compute_stride(&[3, 2], &[1, 3], &[6]), None);
        assert_eq!(
            compute_stride(&[3, 4], &[1, 3], &[3, 2, 2]),
            Some(vec![1, 6, 3])
        );
        // size-1 dims are free
        assert_eq!(
            compute_stride(&[2, 1, 3], &[3, 7, 1], &[1, 6, 1]),
            Some(vec![6, 1, 1])
        );
        // empty tensors
        assert_eq!(compute_stride(&[0, 3], &[5, 1], &[0, 3]), Some(vec![5, 1]));
        assert_eq!(compute_stride(&[0, 3], &[3, 1], &[3, 0]), Some(vec![1, 1]));
        // 0-dim
        assert_eq!(compute_stride(&[], &[], &[1, 1]), Some(vec![1, 1]));
    }

    #[test]
    fn infer_size_errors() {
        assert_eq!(infer_size(&[-1, 3], 6), Ok(vec![2, 3]));
        assert_eq!(
            infer_size(&[-1, -1], 6).unwrap_err().message(),
            "only one dimension can be inferred"
        );
        assert_eq!(
            infer_size(&[2, 5], 6).unwrap_err().message(),
            "shape '[2, 5]' is invalid for input of size 6"
        );
        assert_eq!(
            infer_size(&[-1, 4], 6).unwrap_err().message(),
            "shape '[-1, 4]' is invalid for input of size 6"
        );
        assert_eq!(
            infer_size(&[2, -2], 6).unwrap_err().message(),
            "invalid shape dimension -2"
        );
        assert_eq!(
            infer_size(&[-1, 0], 0).unwrap_err().message(),
            "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified \
             dimension size -1 can be any value and is ambiguous"
        );
    }

    #[test]
    fn slice_clamps_like_pytorch() {
        let g = slice_geometry(&[10], &[1], 0, 0, Some(-3), None, 1).unwrap();
        assert_eq!((g.sizes, g.storage_offset), (vec![3], 7));
        let g = slice_geometry(&[10], &[1], 0, 0, Some(20), Some(30), 1).unwrap();
        assert_eq!((g.sizes, g.storage_offset), (vec![0], 10));
        let g = slice_geometry(&[10], &[2], 4, 0, Some(1), Some(8), 3).unwrap();
        assert_eq!(
            g,
            ViewGeometry {
                sizes: vec![3],
                strides: vec![6],
                storage_offset: 6
            }
        );
        let g = slice_geometry(&[10], &[1], 0, 0, Some(5), Some(2), 1).unwrap();
        assert_eq!(g.sizes, vec![0]);
        let g = slice_geometry(&[10], &[1], 0, 0, None, None, i64::MAX).unwrap();
        assert_eq!(g.sizes, vec![1]);
        assert_eq!(
            slice_geometry(&[10], &[1], 0, 0, None, None, 0)
                .unwrap_err()
                .message(),
            "slice step must be positive"
        );
    }

    #[test]
    fn select_extreme_index() {
        let e = select_geometry(&[3], &[1], 0, 0, i64::MIN).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Index);
        assert!(e
            .message()
            .starts_with("select(): index -9223372036854775808 out of range"));
    }
}
