//! View operators and their stride rules (aten/src/ATen/native/TensorShape.cpp,
//! ATen/TensorUtils.cpp `computeStride`, ATen/ExpandUtils.cpp, c10 `maybe_wrap_dim`).
//!
//! The geometry of every view is computed here by pure functions over sizes and strides, so
//! the rules can be tested as a table without tensors; the `Tensor` methods below apply them
//! through the bounds-checked `as_strided`.

use ratten_core::access::TensorAccess;
use ratten_core::tensor_impl::{contiguous_strides, maybe_wrap_dim, TensorBase};
use ratten_core::{torch_check, torch_check_index, Device, DeviceType, Error, Result, ScalarType};

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

/// Copies the elements of `src` in row-major order into the contiguous `dst` (same dtype and
/// sizes), bytewise per element so every dtype (bool included) is moved without being
/// interpreted.
fn strided_copy_into(src: &TensorBase, dst: &TensorBase) -> Result<()> {
    torch_check!(
        src.dtype() == dst.dtype() && src.sizes() == dst.sizes() && dst.is_contiguous(),
        "strided copy: expected a contiguous destination of the same dtype and sizes"
    );
    if src.is_meta() || dst.is_meta() || src.numel() == 0 {
        return Ok(());
    }
    let g = TensorAccess::new(&[src], &[dst])?;
    let (s, d) = (g.input(0)?, g.output(0)?);
    let esize = src.element_size();
    let (Some(sp), Some(dp)) = (s.raw_data_ptr(), d.raw_data_ptr()) else {
        return Ok(());
    };
    let sizes = s.sizes();
    let strides = s.strides();
    match esize {
        1 => copy_elements::<u8>(sp.as_ptr(), dp.as_ptr(), sizes, strides),
        2 => copy_elements::<u16>(sp.as_ptr(), dp.as_ptr(), sizes, strides),
        4 => copy_elements::<u32>(sp.as_ptr(), dp.as_ptr(), sizes, strides),
        8 => copy_elements::<u64>(sp.as_ptr(), dp.as_ptr(), sizes, strides),
        _ => copy_elements::<u128>(sp.as_ptr(), dp.as_ptr(), sizes, strides),
    }
    Ok(())
}

/// The strided-to-contiguous loop of [`strided_copy_into`], over `W`-sized element words.
fn copy_elements<W: Copy>(src: *const u8, dst: *mut u8, sizes: &[i64], strides: &[i64]) {
    let n: i64 = sizes.iter().product();
    let ndim = sizes.len();
    let mut index = vec![0i64; ndim];
    let mut offset: isize = 0;
    let (src, dst) = (src as *const W, dst as *mut W);
    for i in 0..n as usize {
        // SAFETY: `offset` is sum(index[d] * strides[d]) for an index inside `sizes`, i.e. an
        // element of the source view, which was bounds-checked against its storage when it was
        // made; `i < numel` is inside the contiguous destination. Both storages are locked by
        // the caller's TensorAccess (source shared, destination exclusive), and they differ
        // (the destination is freshly allocated). Unaligned accesses because a W word may be
        // wider than the element type's alignment (complex32 has 2-byte alignment).
        unsafe {
            let v = std::ptr::read_unaligned(src.offset(offset));
            std::ptr::write_unaligned(dst.add(i), v);
        }
        for d in (0..ndim).rev() {
            index[d] += 1;
            offset += strides[d] as isize;
            if index[d] < sizes[d] {
                break;
            }
            offset -= (strides[d] * sizes[d]) as isize;
            index[d] = 0;
        }
    }
}

impl Tensor {
    fn view_with(&self, sizes: &[i64], strides: &[i64]) -> Result<Tensor> {
        Ok(wrap(base(self).as_strided(sizes, strides, None)?))
    }

    fn view_at(&self, g: ViewGeometry) -> Result<Tensor> {
        Ok(wrap(base(self).as_strided(
            &g.sizes,
            &g.strides,
            Some(g.storage_offset),
        )?))
    }

    /// `view(shape)`: the same data with a new shape (one `-1` is inferred); an error when the
    /// strides cannot express it (use `reshape`).
    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        let b = base(self);
        let (sizes, strides) = view_geometry(&b.sizes(), &b.strides(), shape)?;
        self.view_with(&sizes, &strides)
    }

    /// `view_as(other)`.
    pub fn view_as(&self, other: &Tensor) -> Result<Tensor> {
        self.view(&base(other).sizes())
    }

    /// `reshape(shape)`: a view when the strides allow it, else a contiguous copy.
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let b = base(self);
        let sizes = b.sizes();
        let inferred = infer_size(shape, checked_numel(&sizes)?)?;
        match compute_stride(&sizes, &b.strides(), &inferred) {
            Some(strides) => self.view_with(&inferred, &strides),
            None => {
                let copy = self.contiguous_copy()?;
                let st = contiguous_strides(&inferred);
                copy.view_with(&inferred, &st)
            }
        }
    }

    /// `reshape_as(other)`.
    pub fn reshape_as(&self, other: &Tensor) -> Result<Tensor> {
        self.reshape(&base(other).sizes())
    }

    /// `transpose(dim0, dim1)`.
    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<Tensor> {
        let b = base(self);
        let (sz, st) = transpose_geometry(&b.sizes(), &b.strides(), dim0, dim1)?;
        self.view_with(&sz, &st)
    }

    /// `t()`: transposes a 2-D tensor; 0-D and 1-D tensors are returned as views unchanged.
    pub fn t(&self) -> Result<Tensor> {
        let b = base(self);
        let (sz, st) = t_geometry(&b.sizes(), &b.strides())?;
        self.view_with(&sz, &st)
    }

    /// `permute(dims)`.
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        let b = base(self);
        let (sz, st) = permute_geometry(&b.sizes(), &b.strides(), dims)?;
        self.view_with(&sz, &st)
    }

    /// `expand(sizes)`: broadcasts size-1 and new leading dims with stride 0; `-1` keeps a size.
    pub fn expand(&self, sizes: &[i64]) -> Result<Tensor> {
        let b = base(self);
        let (sz, st) = expand_geometry(
            &b.sizes(),
            &b.strides(),
            sizes,
            &legacy_type_str(b.dtype(), b.device()),
        )?;
        self.view_with(&sz, &st)
    }

    /// `expand_as(other)`.
    pub fn expand_as(&self, other: &Tensor) -> Result<Tensor> {
        self.expand(&base(other).sizes())
    }

    /// `squeeze()`: drops all dims of size 1.
    pub fn squeeze(&self) -> Result<Tensor> {
        let b = base(self);
        let (sz, st) = squeeze_all_geometry(&b.sizes(), &b.strides());
        self.view_with(&sz, &st)
    }

    /// `squeeze(dim)`: drops `dim` if it has size 1.
    pub fn squeeze_dim(&self, dim: i64) -> Result<Tensor> {
        self.squeeze_dims(&[dim])
    }

    /// `squeeze(dims)`: drops those of `dims` that have size 1.
    pub fn squeeze_dims(&self, dims: &[i64]) -> Result<Tensor> {
        let b = base(self);
        let (sz, st) = squeeze_dims_geometry(&b.sizes(), &b.strides(), dims)?;
        self.view_with(&sz, &st)
    }

    /// `unsqueeze(dim)`: inserts a dim of size 1 at `dim` (in `[-dim()-1, dim()]`).
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let b = base(self);
        let (sz, st) = unsqueeze_geometry(&b.sizes(), &b.strides(), dim)?;
        self.view_with(&sz, &st)
    }

    /// `narrow(dim, start, length)`.
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        let b = base(self);
        let g = narrow_geometry(
            &b.sizes(),
            &b.strides(),
            b.storage_offset(),
            dim,
            start,
            length,
        )?;
        self.view_at(g)
    }

    /// `slice(dim, start, end, step)` (Python's `t[start:end:step]` on `dim`), with PyTorch's
    /// clamping of out-of-range bounds; `None` means the start / the end.
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        let b = base(self);
        let g = slice_geometry(
            &b.sizes(),
            &b.strides(),
            b.storage_offset(),
            dim,
            start,
            end,
            step,
        )?;
        self.view_at(g)
    }

    /// `select(dim, index)` (Python's `t[index]` on `dim`): removes `dim`.
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        let b = base(self);
        let g = select_geometry(&b.sizes(), &b.strides(), b.storage_offset(), dim, index)?;
        self.view_at(g)
    }

    /// `flatten(start_dim, end_dim)`: merges the dims in between (a view when possible, as
    /// `reshape`); a 0-dim tensor becomes 1-D.
    pub fn flatten(&self, start_dim: i64, end_dim: i64) -> Result<Tensor> {
        match flatten_shape(&base(self).sizes(), start_dim, end_dim)? {
            Some(shape) => self.reshape(&shape),
            None => Ok(self.clone()),
        }
    }

    /// `contiguous()`: this tensor when it is contiguous, else a contiguous copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        if base(self).is_contiguous() {
            return Ok(self.clone());
        }
        self.contiguous_copy()
    }

    /// A fresh contiguous tensor with this tensor's values (`clone(MemoryFormat::Contiguous)`).
    fn contiguous_copy(&self) -> Result<Tensor> {
        let b = base(self);
        let out = TensorBase::empty(&b.sizes(), b.dtype(), b.device())?;
        strided_copy_into(b, &out)?;
        Ok(wrap(out))
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
