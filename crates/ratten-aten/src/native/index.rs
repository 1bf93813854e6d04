//! Indexing by tensors (ATen's `TensorAdvancedIndexing.cpp`, `IndexingUtils.h`,
//! `Indexing.cpp`'s `nonzero`): advanced indexing (`index.Tensor`, `x[idx]`;
//! `index_put_`, `x[idx] = v`), `nonzero` / `argwhere`, `take`, the masked operators and the
//! `index_*` operators along one dim.
//!
//! Note [Advanced indexing]: `indices[d]` indexes dimension `d` of `self` (None: the whole
//! dimension). A bool or uint8 index is a mask over as many dimensions as it has, replaced by
//! its `nonzero()` columns (`expandTensors`, so a mask is data-dependent and refused on
//! meta). The index tensors are broadcast together (shape `B`); when they index adjacent
//! dimensions the result puts `B` where those dimensions were, otherwise `B` comes first
//! (`transposeToFront`), as in torch and numpy. As PyTorch's `AdvancedIndex`, `self` is then
//! restrided with stride 0 over `B` and each index tensor viewed with ones around `B`, so a
//! TensorIterator runs over the result, the restrided `self` and the indices together; the
//! kernel adds `index * stride` per indexed dim (`native/cpu/index_kernels.rs`).

use ratten_core::{Error, Result, Scalar, ScalarType, TensorAccess};

use crate::generated::operators as ops;
use crate::native::cpu::index_kernels::{index_kernel, index_select_kernel, IndexMode};
use crate::native::cpu::refuse_unsigned;
use crate::native::cpu::scatter_gather_kernels::{
    copy_elem, scalar_bytes, scatter_fill_kernel, scatter_kernel, scatter_oob,
    scatter_reduce_kernel, with_elem_bytes, ScatterReduce,
};
use crate::native::scatter_gather::{assert_no_overlap, fmt_sizes, options_of};
use crate::structured::{resize_output, warn, MetaBase};
use crate::tensor_iterator::overlap::{
    assert_no_internal_overlap, assert_no_partial_overlap, has_internal_overlap, MemOverlap,
};
use crate::tensor_iterator::{
    infer_size, MaybeOwnedOutput, TensorIteratorBase, TensorIteratorConfig,
};
use crate::Tensor;
use ratten_core::tensor_impl::maybe_wrap_dim;

/// c10's `TypeMeta` name of a dtype, as some of PyTorch's messages print it.
fn typemeta_name(d: ScalarType) -> &'static str {
    match d {
        ScalarType::Byte => "unsigned char",
        ScalarType::Char => "signed char",
        ScalarType::Short => "short int",
        ScalarType::Int => "int",
        ScalarType::Long => "long int",
        ScalarType::Half => "c10::Half",
        ScalarType::BFloat16 => "c10::BFloat16",
        ScalarType::Float => "float",
        ScalarType::Double => "double",
        ScalarType::ComplexFloat => "c10::complex<float>",
        ScalarType::ComplexDouble => "c10::complex<double>",
        ScalarType::Bool => "bool",
        _ => "unknown",
    }
}

/// The broadcast shape of `a` and `b` (`infer_size`).
fn broadcast2(a: &[i64], b: &[i64]) -> Result<Vec<i64>> {
    Ok(infer_size(a, b)?.to_vec())
}

// ---------------------------------------------------------------------------------------------
// nonzero, argwhere

const NONZERO_META: &str = "The register_meta function for torch.nonzero() raises unimplemented by default, as a correct data-independent implementation does not exist. This implementation returns a fake value, assuming all elements of the tensor are non-zero. To enable this registration, please set 'torch.fx.experimental._config.meta_nonzero_assume_all_nonzero' to True.";

/// The row-major indices of `self`'s non-zero elements as `[ndim, n]` values (each dim's
/// column contiguous), and `n`.
fn nonzero_columns(self_: &Tensor) -> Result<(Vec<i64>, i64)> {
    if self_.is_meta() {
        return Err(Error::not_implemented(NONZERO_META));
    }
    let mask = if self_.dtype() == ScalarType::Bool {
        self_.clone()
    } else {
        ops::ne_Scalar::call(self_, &Scalar::Int(0))?
    };
    let flags = mask.contiguous()?.to_vec::<bool>()?;
    let sizes = self_.sizes().to_vec();
    let ndim = sizes.len();
    let n = flags.iter().filter(|&&f| f).count();
    let mut cols = vec![0i64; ndim * n];
    let mut index = vec![0i64; ndim];
    let mut r = 0usize;
    for &f in &flags {
        if f {
            for (d, &i) in index.iter().enumerate() {
                cols[d * n + r] = i;
            }
            r += 1;
        }
        for d in (0..ndim).rev() {
            index[d] += 1;
            if index[d] < sizes[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok((cols, n as i64))
}

/// `nonzero_cpu`: the int64 `[n, self.dim()]` indices of the non-zero elements, in row-major
/// order (NaN counts as non-zero), with PyTorch's column-major strides. Refused on meta (the
/// size depends on the data).
pub fn nonzero_cpu(self_: &Tensor) -> Result<Tensor> {
    refuse_unsigned("nonzero_count_cpu", self_.dtype())?;
    let (cols, n) = nonzero_columns(self_)?;
    let ndim = self_.dim() as i64;
    Tensor::from_vec(cols, &[ndim, n])?.t()
}

/// `nonzero_out_cpu`.
pub fn nonzero_out_cpu<'a>(self_: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    refuse_unsigned("nonzero_count_cpu", self_.dtype())?;
    if out.dtype() != ScalarType::Long {
        return Err(Error::runtime(format!(
            "nonzero: Expected out tensor to have scalar type Long but got scalar type{}",
            out.dtype().name()
        )));
    }
    let r = nonzero_cpu(self_)?;
    resize_output(out, &r.sizes())?;
    ops::copy_::call(out, &r, false)?;
    Ok(out)
}

/// `argwhere` (CompositeImplicitAutograd): `self.nonzero()`.
pub fn argwhere(self_: &Tensor) -> Result<Tensor> {
    ops::nonzero::call(self_)
}

// ---------------------------------------------------------------------------------------------
// index.Tensor, index_put_

/// `checkIndexTensorTypes` and `expandTensors`: masks become their nonzero columns, int32
/// indices int64.
fn expand_indices(self_: &Tensor, indices: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
    let sizes = self_.sizes().to_vec();
    let mut out: Vec<Option<Tensor>> = Vec::new();
    for idx in indices {
        let Some(t) = idx else {
            out.push(None);
            continue;
        };
        match t.dtype() {
            ScalarType::Bool | ScalarType::Byte => {
                if t.dtype() == ScalarType::Byte {
                    warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.");
                }
                let d = out.len();
                let k = t.dim();
                for j in 0..k {
                    let src = d + j;
                    if src >= sizes.len() || t.sizes()[j] != sizes[src] {
                        return Err(Error::index(format!(
                            "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at index {src}",
                            fmt_sizes(&t.sizes()),
                            fmt_sizes(&sizes),
                        )));
                    }
                }
                let nz = ops::nonzero::call(t)?;
                for j in 0..k {
                    out.push(Some(nz.select(1, j as i64)?));
                }
            }
            ScalarType::Long => out.push(Some(t.clone())),
            ScalarType::Int => out.push(Some(t.to_dtype(ScalarType::Long)?)),
            _ => {
                return Err(Error::index(
                    "tensors used as indices must be long, int, byte or bool tensors",
                ))
            }
        }
    }
    Ok(out)
}

/// PyTorch's `AdvancedIndex` (see Note [Advanced indexing]).
struct AdvancedIndex {
    /// `self` (transposed to front when needed) with stride 0 over the broadcast shape.
    src: Tensor,
    /// The index tensors, viewed with ones around the broadcast shape.
    indices: Vec<Tensor>,
    indexed_sizes: Vec<i64>,
    /// In bytes.
    indexed_strides: Vec<i64>,
}

/// `make_info`.
fn make_info(self_: &Tensor, orig: &[Option<Tensor>]) -> Result<AdvancedIndex> {
    let mut indices = expand_indices(self_, orig)?;
    if indices.len() > self_.dim() {
        return Err(Error::index(format!(
            "too many indices for tensor of dimension {} (got {})",
            self_.dim(),
            indices.len()
        )));
    }
    // expand_outplace
    let shapes: Vec<Vec<i64>> = indices
        .iter()
        .flatten()
        .map(|t| t.sizes().to_vec())
        .collect();
    let mut bshape: Vec<i64> = Vec::new();
    for s in &shapes {
        bshape =
            broadcast2(&bshape, s).map_err(|_| {
                Error::index(format!(
                "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                shapes.iter().map(|s| fmt_sizes(s)).collect::<Vec<_>>().join(", ")
            ))
            })?;
    }
    for t in indices.iter_mut().flatten() {
        *t = t.expand(&bshape)?;
    }
    indices.resize(self_.dim(), None);
    // hasContiguousSubspace / transposeToFront
    let defined: Vec<usize> = (0..indices.len())
        .filter(|&d| indices[d].is_some())
        .collect();
    let contiguous = defined.windows(2).all(|w| w[1] == w[0] + 1);
    let mut src = self_.clone();
    if !contiguous {
        let mut order: Vec<i64> = defined.iter().map(|&d| d as i64).collect();
        order.extend(
            (0..indices.len())
                .filter(|d| indices[*d].is_none())
                .map(|d| d as i64),
        );
        src = src.permute(&order)?;
        let mut moved: Vec<Option<Tensor>> = defined.iter().map(|&d| indices[d].clone()).collect();
        moved.resize(indices.len(), None);
        indices = moved;
    }
    // AdvancedIndex::AdvancedIndex
    let es = src.element_size() as i64;
    let (mut before, mut after, mut nindexed) = (0usize, 0usize, 0usize);
    let mut indexed_sizes = Vec::new();
    let mut indexed_strides = Vec::new();
    let (ssizes, sstrides) = (src.sizes().to_vec(), src.strides().to_vec());
    for (d, idx) in indices.iter().enumerate() {
        match idx {
            None if nindexed == 0 => before += 1,
            None => after += 1,
            Some(_) => {
                nindexed += 1;
                indexed_sizes.push(ssizes[d]);
                indexed_strides.push(sstrides[d] * es);
            }
        }
    }
    if indexed_sizes.contains(&0) && !bshape.contains(&0) {
        return Err(Error::index(
            "index is out of bounds for dimension with size 0",
        ));
    }
    // restride_src
    let end = before + nindexed;
    let mut shape: Vec<i64> = ssizes[..before].to_vec();
    shape.extend_from_slice(&bshape);
    shape.extend_from_slice(&ssizes[end..]);
    let mut strides: Vec<i64> = sstrides[..before].to_vec();
    strides.extend(std::iter::repeat_n(0, bshape.len()));
    strides.extend_from_slice(&sstrides[end..]);
    let restrided = src.as_strided(&shape, &strides)?;
    // reshape_indexer
    let mut views = Vec::new();
    for t in indices.iter().flatten() {
        let mut s = vec![1i64; before];
        s.extend_from_slice(&t.sizes());
        s.extend(std::iter::repeat_n(1, after));
        views.push(t.reshape(&s)?);
    }
    Ok(AdvancedIndex {
        src: restrided,
        indices: views,
        indexed_sizes,
        indexed_strides,
    })
}

/// The state of `index.Tensor`'s impl: the iterator, as PyTorch's meta class inherits it.
/// The precomputed sizes and strides are recomputed by the impl ([`indexed_dims`]).
///
/// TORCH_PRECOMPUTE_META_FUNC2(index, Tensor).
pub fn index_tensor_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    indices: &'a [Option<Tensor>],
) -> Result<TensorIteratorBase<'a>> {
    if indices.len() > self_.dim() {
        return Err(Error::index(format!(
            "too many indices for tensor of dimension {} (got {})",
            self_.dim(),
            indices.len()
        )));
    }
    let dev = self_.device();
    if indices
        .iter()
        .flatten()
        .any(|t| !(t.device().is_cpu() || t.device() == dev))
    {
        return Err(Error::runtime(format!(
            "indices should be either on cpu or on the same device as the indexed tensor ({dev})"
        )));
    }
    let given = m.maybe_get_output(0);
    if let Some(result) = given {
        assert_no_internal_overlap(result)?;
        assert_no_overlap(result, self_)?;
        for t in indices.iter().flatten() {
            assert_no_overlap(result, t)?;
        }
        if result.dtype() != self_.dtype() {
            return Err(Error::runtime(format!(
                "index_out: self ({}) and result ({}) must have the same scalar type",
                self_.dtype().name(),
                result.dtype().name()
            )));
        }
    }
    let info = make_info(self_, indices)?;
    let mut config = TensorIteratorConfig::new()
        .set_check_mem_overlap(false)
        .check_all_same_dtype(false)
        .add_output(MaybeOwnedOutput(
            given.map(|t| std::borrow::Cow::Borrowed(t.base())),
        ))?
        .add_input(info.src.clone());
    for t in info.indices {
        config = config.add_input(t);
    }
    if given.is_none() {
        config = config.declare_static_dtype_and_device(info.src.dtype(), info.src.device())?;
    }
    config.build(m)
}

/// The sizes and byte strides of the dims of `self` that `indices` index, in order (a mask
/// indexes as many dims as it has), without expanding masks.
fn indexed_dims(self_: &Tensor, indices: &[Option<Tensor>]) -> (Vec<i64>, Vec<i64>) {
    let (sizes, strides) = (self_.sizes().to_vec(), self_.strides().to_vec());
    let es = self_.element_size() as i64;
    let (mut is, mut ist) = (Vec::new(), Vec::new());
    let mut d = 0usize;
    for idx in indices {
        let k = match idx {
            None => {
                d += 1;
                continue;
            }
            Some(t) if matches!(t.dtype(), ScalarType::Bool | ScalarType::Byte) => t.dim(),
            Some(_) => 1,
        };
        for j in d..(d + k).min(sizes.len()) {
            is.push(sizes[j]);
            ist.push(strides[j] * es);
        }
        d += k;
    }
    (is, ist)
}

/// TORCH_IMPL_FUNC(index_out).
pub fn index_out(
    iter: &mut TensorIteratorBase,
    self_: &Tensor,
    indices: &[Option<Tensor>],
    _out: &Tensor,
) -> Result<()> {
    let (sizes, strides) = indexed_dims(self_, indices);
    index_kernel(iter, &sizes, &strides, IndexMode::Get)
}

/// `canDispatchToMaskedFill`: a single mask index and a one-element value run as
/// `masked_fill_`, with the mask unsqueezed over the dims after it.
fn masked_fill_mask(
    self_: &Tensor,
    indices: &[Option<Tensor>],
    value: &Tensor,
) -> Result<Option<Tensor>> {
    if !(value.numel() == 1 && value.device().is_cpu()) {
        return Ok(None);
    }
    let mut num_ind = 0usize;
    let mut mask: Option<Tensor> = None;
    for i in indices {
        match i {
            None => num_ind += 1,
            Some(index) => {
                if !matches!(index.dtype(), ScalarType::Byte | ScalarType::Bool)
                    || index.device() != self_.device()
                    || mask.is_some()
                {
                    return Ok(None);
                }
                for j in 0..index.dim() {
                    let src = num_ind + j;
                    if src >= self_.dim() || index.sizes()[j] != self_.sizes()[src] {
                        return Err(Error::index(format!(
                            "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at index {src}",
                            fmt_sizes(&index.sizes()),
                            fmt_sizes(&self_.sizes())
                        )));
                    }
                }
                num_ind += index.dim();
                mask = Some(index.clone());
            }
        }
    }
    let Some(mut mask) = mask else {
        return Ok(None);
    };
    for _ in num_ind..self_.dim() {
        mask = mask.unsqueeze(-1)?;
    }
    if mask.dtype() != ScalarType::Bool {
        mask = mask.to_dtype(ScalarType::Bool)?;
    }
    Ok(Some(mask))
}

/// `_index_put_impl_` (CPU and Meta): `self[indices] = values` (`+=` with `accumulate`).
/// Every index is checked before anything is written; duplicate indices write in the
/// iterator's order (the last one wins without `accumulate`).
pub fn _index_put_impl_<'a>(
    self_: &'a Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
    _unsafe: bool,
) -> Result<&'a Tensor> {
    refuse_unsigned("index_put", self_.dtype())?;
    if indices.len() > self_.dim() {
        return Err(Error::index(format!(
            "too many indices for tensor of dimension {} (got {})",
            self_.dim(),
            indices.len()
        )));
    }
    if has_internal_overlap(self_) == MemOverlap::Yes {
        warn("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before performing this operation. This also applies to advanced indexing e.g. tensor[indices] = tensor");
    }
    if !accumulate {
        if let Some(mask) = masked_fill_mask(self_, indices, values)? {
            let v = values.item()?;
            ops::masked_fill__Scalar::call(self_, &mask, &v)?;
            return Ok(self_);
        }
    }
    assert_no_overlap(self_, values)?;
    for t in indices.iter().flatten() {
        assert_no_overlap(self_, t)?;
    }
    let info = make_info(self_, indices)?;
    // make_index_put_iterator
    let target = info.src.sizes().to_vec();
    let expandable = values.dim() <= target.len()
        && values
            .sizes()
            .iter()
            .rev()
            .zip(target.iter().rev())
            .all(|(&v, &t)| v == t || v == 1);
    if !expandable {
        return Err(Error::runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_sizes(&values.sizes()),
            fmt_sizes(&target)
        )));
    }
    if values.dtype() != self_.dtype() {
        return Err(Error::runtime(format!(
            "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
            self_.dtype().name(),
            values.dtype().name()
        )));
    }
    if self_.is_meta() {
        return Ok(self_);
    }
    // Checked before the loop writes: no element of self changes on a bad index.
    for (k, t) in info.indices.iter().enumerate() {
        let size = info.indexed_sizes[k];
        let vals = t.contiguous()?.to_vec::<i64>()?;
        if let Some(&v) = vals.iter().find(|&&v| v < -size || v >= size) {
            return Err(Error::index(format!(
                "index {v} is out of bounds for dimension {k} with size {size}"
            )));
        }
    }
    let mut config = TensorIteratorConfig::new()
        .set_check_mem_overlap(false)
        .resize_outputs(false)
        .check_all_same_dtype(false)
        .add_output(info.src.base())?
        .add_input(values.base());
    for t in &info.indices {
        config = config.add_input(t.base());
    }
    let iter = config.build_standalone()?.into_base();
    let mode = if accumulate {
        IndexMode::Accumulate
    } else {
        IndexMode::Put
    };
    index_kernel(&iter, &info.indexed_sizes, &info.indexed_strides, mode)?;
    Ok(self_)
}

/// `index_put_` (CompositeExplicitAutograd).
pub fn index_put_<'a>(
    self_: &'a Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<&'a Tensor> {
    ops::_index_put_impl_::call(self_, indices, values, accumulate, false)?;
    Ok(self_)
}

/// `index_put` (CompositeExplicitAutograd): on a clone of `self`.
pub fn index_put(
    self_: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    let r = ops::clone::call(self_, None)?;
    ops::index_put_::call(&r, indices, values, accumulate)?;
    Ok(r)
}

// ---------------------------------------------------------------------------------------------
// take

/// `take_out`: `out = self.flatten()[index]` in the index's shape; negative indices count
/// from the end.
pub fn take_out<'a>(self_: &Tensor, index: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    refuse_unsigned("take_cpu", self_.dtype())?;
    if index.dtype() != ScalarType::Long {
        return Err(Error::runtime(format!(
            "take(): Expected a long tensor for index, but got {}",
            index.dtype().name()
        )));
    }
    if self_.dtype() != out.dtype() {
        return Err(Error::runtime(format!(
            "take(): self and out expected to have the same dtype, but got self.dtype = {} and out.dtype = {}",
            self_.dtype().name(),
            out.dtype().name()
        )));
    }
    assert_no_internal_overlap(out)?;
    assert_no_overlap(out, index)?;
    assert_no_overlap(out, self_)?;
    resize_output(out, &index.sizes())?;
    if index.numel() == 0 || out.is_meta() {
        return Ok(out);
    }
    let n = self_.numel();
    if n == 0 {
        return Err(Error::index("take(): tried to take from an empty tensor."));
    }
    let src = self_.contiguous()?;
    let idx = index.contiguous()?;
    let dst = if out.is_contiguous() {
        out.clone()
    } else {
        Tensor::empty(&out.sizes(), (out.dtype(), out.device()))?
    };
    {
        let g = TensorAccess::new(&[&src, &idx], &[&dst])?;
        let iv: &[i64] = g.input_slice::<i64>(1)?;
        if let Some(&v) = iv.iter().find(|&&v| v < -n || v >= n) {
            return Err(Error::index(format!(
                "out of range: tried to access index {v} on a tensor of {n} elements."
            )));
        }
        let (sa, oa) = (g.input(0)?, g.output(0)?);
        if sa.numel() != n || oa.numel() != iv.len() as i64 {
            return Err(Error::runtime("take(): tensors changed during the call"));
        }
        let (Some(sp), Some(op)) = (sa.raw_data_ptr(), oa.raw_data_ptr()) else {
            return Ok(out);
        };
        let es = self_.element_size();
        with_elem_bytes!(es, E => {
            for (i, &v) in iv.iter().enumerate() {
                let k = if v < 0 { v + n } else { v } as usize;
                // SAFETY: k < numel of the contiguous source, i < numel of the contiguous
                // result (checked above); elements of the same dtype.
                unsafe { copy_elem::<E>(sp.as_ptr().add(k * es), op.as_ptr().add(i * es)) };
            }
            Ok::<(), Error>(())
        })?;
    }
    if !dst.is_same(out) {
        ops::copy_::call(out, &dst, false)?;
    }
    Ok(out)
}

/// `take`.
pub fn take(self_: &Tensor, index: &Tensor) -> Result<Tensor> {
    let out = Tensor::empty(&index.sizes(), (self_.dtype(), self_.device()))?;
    take_out(self_, index, &out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// masked_fill, masked_scatter, masked_select

/// `masked_fill_impl_cpu`.
fn masked_fill_impl(self_: &Tensor, mask: &Tensor, value: &Scalar) -> Result<()> {
    if mask.dtype() != ScalarType::Bool {
        return Err(Error::runtime(format!(
            "masked_fill_ only supports boolean masks, but got mask with dtype {}",
            typemeta_name(mask.dtype())
        )));
    }
    if has_internal_overlap(self_) == MemOverlap::Yes {
        warn("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar");
    }
    assert_no_partial_overlap(self_, mask)?;
    let iter = TensorIteratorConfig::new()
        .set_check_mem_overlap(false)
        .check_all_same_dtype(false)
        .resize_outputs(false)
        .add_output(self_.base())?
        .add_input(mask.base())
        .build_standalone()?;
    if iter.is_meta() {
        return Ok(());
    }
    let bytes = scalar_bytes(value, self_.dtype())?;
    with_elem_bytes!(self_.element_size(), E => {
        // SAFETY: `bytes` holds one element of self's dtype, of `E`'s size.
        let v: E = unsafe { bytes.as_ptr().cast::<E>().read_unaligned() };
        let loop2d = |data: &[*mut u8], st: &[isize], n0: usize, n1: usize| {
            for j in 0..n1 {
                for i in 0..n0 {
                    let o = data[0].wrapping_offset(i as isize * st[0] + j as isize * st[2]);
                    let m = data[1].wrapping_offset(i as isize * st[1] + j as isize * st[3]);
                    // SAFETY: an element of self (of `E`'s size) and of the bool mask, at the
                    // iterator's positions.
                    unsafe {
                        if m.read() != 0 {
                            o.cast::<E>().write(v);
                        }
                    }
                }
            }
        };
        iter.for_each(&loop2d, crate::tensor_iterator::parallel::GRAIN_SIZE)
    })
}

/// `masked_fill__cpu` (Scalar).
#[allow(non_snake_case)]
pub fn masked_fill__cpu_scalar<'a>(
    self_: &'a Tensor,
    mask: &Tensor,
    value: &Scalar,
) -> Result<&'a Tensor> {
    masked_fill_impl(self_, mask, value)?;
    Ok(self_)
}

/// `masked_fill__cpu` (Tensor): a 0-dim value.
#[allow(non_snake_case)]
pub fn masked_fill__cpu<'a>(
    self_: &'a Tensor,
    mask: &Tensor,
    value: &Tensor,
) -> Result<&'a Tensor> {
    if value.dim() != 0 {
        return Err(Error::runtime(format!(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            value.dim()
        )));
    }
    if self_.is_meta() || value.is_meta() {
        masked_fill_impl(self_, mask, &Scalar::Int(0))?;
        return Ok(self_);
    }
    masked_fill_impl(self_, mask, &value.item()?)?;
    Ok(self_)
}

/// `expand_outplace(mask, self)` then a contiguous clone of the expanded `self`.
fn expanded_clone(self_: &Tensor, mask: &Tensor) -> Result<(Tensor, Tensor)> {
    let shape = broadcast2(&mask.sizes(), &self_.sizes())?;
    let m = mask.expand(&shape)?;
    let r = Tensor::empty(&shape, (self_.dtype(), self_.device()))?;
    ops::copy_::call(&r, &self_.expand(&shape)?, false)?;
    Ok((r, m))
}

/// `masked_fill` (Scalar, CompositeExplicitAutograd).
pub fn masked_fill_scalar(self_: &Tensor, mask: &Tensor, value: &Scalar) -> Result<Tensor> {
    let (r, m) = expanded_clone(self_, mask)?;
    ops::masked_fill__Scalar::call(&r, &m, value)?;
    Ok(r)
}

/// `masked_fill` (Tensor, CompositeExplicitAutograd).
pub fn masked_fill(self_: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    let (r, m) = expanded_clone(self_, mask)?;
    ops::masked_fill__Tensor::call(&r, &m, value)?;
    Ok(r)
}

/// The direction of [`masked_copy`]: `masked_select` packs the masked elements of the source
/// into a dense destination; `masked_scatter_` unpacks a dense source into the masked
/// elements of the destination.
#[derive(Clone, Copy, PartialEq)]
enum MaskedCopy {
    Pack,
    Unpack,
}

/// Walks `flags` (one per element of the masked side, which is contiguous; `ones` of them set)
/// and copies each masked element to or from the next element of the dense side.
fn masked_copy(
    flags: &[bool],
    ones: usize,
    src: &Tensor,
    dst: &Tensor,
    direction: MaskedCopy,
    what: &str,
) -> Result<()> {
    let g = TensorAccess::new(&[src], &[dst])?;
    let (sa, da) = (g.input(0)?, g.output(0)?);
    let (masked, dense) = match direction {
        MaskedCopy::Pack => (sa.numel(), da.numel()),
        MaskedCopy::Unpack => (da.numel(), sa.numel()),
    };
    if masked != flags.len() as i64 || dense < ones as i64 {
        return Err(Error::runtime(format!(
            "{what}: tensors changed during the call"
        )));
    }
    let (Some(sp), Some(dp)) = (sa.raw_data_ptr(), da.raw_data_ptr()) else {
        return Ok(());
    };
    let es = src.element_size();
    with_elem_bytes!(es, E => {
        let mut k = 0usize;
        for (i, &f) in flags.iter().enumerate() {
            if f {
                let (from, to) = match direction {
                    MaskedCopy::Pack => (i, k),
                    MaskedCopy::Unpack => (k, i),
                };
                // SAFETY: i < flags.len() = numel of the contiguous masked side, and
                // k < ones <= numel of the contiguous dense side (both checked above); the
                // two tensors are distinct storages held by `g`.
                unsafe { copy_elem::<E>(sp.as_ptr().add(from * es), dp.as_ptr().add(to * es)) };
                k += 1;
            }
        }
        Ok::<(), Error>(())
    })
}

/// `masked_scatter__cpu`: the elements of `self` where the mask (broadcast to `self`) is true
/// take the first elements of `source`, in row-major order.
#[allow(non_snake_case)]
pub fn masked_scatter__cpu<'a>(
    self_: &'a Tensor,
    mask: &Tensor,
    source: &Tensor,
) -> Result<&'a Tensor> {
    assert_no_internal_overlap(self_)?;
    if self_.dtype() != source.dtype() {
        return Err(Error::runtime(format!(
            "masked_scatter: expected self and source to have same dtypes but got{} and {}",
            self_.dtype().name(),
            source.dtype().name()
        )));
    }
    if mask.dtype() != ScalarType::Bool {
        return Err(Error::runtime(format!(
            "masked_scatter_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype().name()
        )));
    }
    let b_mask = mask.expand(&self_.sizes())?;
    if self_.numel() == 0 || self_.is_meta() {
        return Ok(self_);
    }
    let flags = b_mask.contiguous()?.to_vec::<bool>()?;
    let ones = flags.iter().filter(|&&f| f).count();
    if ones as i64 > source.numel() {
        return Err(Error::runtime(
            "Number of elements of source < number of ones in mask",
        ));
    }
    let src = source.contiguous()?;
    let dst = if self_.is_contiguous() {
        self_.clone()
    } else {
        self_.contiguous()?
    };
    masked_copy(
        &flags,
        ones,
        &src,
        &dst,
        MaskedCopy::Unpack,
        "masked_scatter_",
    )?;
    if !dst.is_same(self_) {
        ops::copy_::call(self_, &dst, false)?;
    }
    Ok(self_)
}

/// `masked_scatter` (CompositeExplicitAutograd).
pub fn masked_scatter(self_: &Tensor, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
    let (r, m) = expanded_clone(self_, mask)?;
    ops::masked_scatter_::call(&r, &m, source)?;
    Ok(r)
}

const MASKED_SELECT_META: &str = "aten::masked_select: attempted to run this operator with Meta tensors, but there was no fake impl or Meta kernel registered. You may have run into this message while using an operator with PT2 compilation APIs (torch.compile/torch.export); in order to use this operator with those APIs you'll need to add a fake impl. Please see the following for next steps:  https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html";

/// `masked_select_out_cpu`: the elements of `self` where `mask` is true (both broadcast
/// together), in row-major order, as a 1-D tensor. Refused on meta.
pub fn masked_select_out_cpu<'a>(
    self_: &Tensor,
    mask: &Tensor,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    if self_.is_meta() || mask.is_meta() || out.is_meta() {
        return Err(Error::not_implemented(MASKED_SELECT_META));
    }
    if mask.dtype() != ScalarType::Bool {
        return Err(Error::runtime(
            "masked_select: expected BoolTensor for mask",
        ));
    }
    if self_.dtype() != out.dtype() {
        return Err(Error::runtime(
            "masked_select(): self and result must have the same scalar type",
        ));
    }
    assert_no_internal_overlap(out)?;
    assert_no_overlap(out, self_)?;
    assert_no_overlap(out, mask)?;
    let shape = broadcast2(&mask.sizes(), &self_.sizes())?;
    let flags = mask.expand(&shape)?.contiguous()?.to_vec::<bool>()?;
    let src = self_.expand(&shape)?.contiguous()?;
    let n = flags.iter().filter(|&&f| f).count();
    resize_output(out, &[n as i64])?;
    let dst = if out.is_contiguous() {
        out.clone()
    } else {
        Tensor::empty(&[n as i64], (out.dtype(), out.device()))?
    };
    masked_copy(&flags, n, &src, &dst, MaskedCopy::Pack, "masked_select")?;
    if !dst.is_same(out) {
        ops::copy_::call(out, &dst, false)?;
    }
    Ok(out)
}

/// `masked_select_cpu`.
pub fn masked_select_cpu(self_: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let out = Tensor::empty(&[0], (self_.dtype(), self_.device()))?;
    masked_select_out_cpu(self_, mask, &out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// index_select

/// `index_select_out_cpu_`. Negative indices are refused, as PyTorch's CPU kernel does.
pub fn index_select_out_cpu_<'a>(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let dim = maybe_wrap_dim(dim, self_.dim(), true)?;
    let numel = index.numel();
    if index.dim() > 1 {
        return Err(Error::index(
            "index_select(): Index is supposed to be a vector",
        ));
    }
    if !matches!(index.dtype(), ScalarType::Long | ScalarType::Int) {
        return Err(Error::runtime(
            "index_select(): Expected dtype int32 or int64 for index",
        ));
    }
    if self_.dtype() != out.dtype() {
        return Err(Error::runtime(
            "index_select(): self and result must have the same scalar type",
        ));
    }
    assert_no_internal_overlap(out)?;
    assert_no_overlap(out, self_)?;
    assert_no_overlap(out, index)?;
    let mut size = self_.sizes().to_vec();
    if self_.dim() > 0 {
        size[dim] = numel;
    }
    resize_output(out, &size)?;
    if out.is_meta() || self_.is_meta() {
        return Ok(out);
    }
    let index = index.contiguous()?;
    let axis = if self_.dim() == 0 {
        1
    } else {
        self_.sizes()[dim]
    };
    // PyTorch's contiguous dim-1 path checks with its own message.
    let dim1 = self_.dim() > 1 && dim == 1 && out.is_contiguous();
    let err = move |k: i64| {
        if dim1 {
            Error::runtime(format!(
                "INDICES element is out of DATA bounds, id={k} axis_dim={axis}"
            ))
        } else {
            Error::index("index out of range in self")
        }
    };
    if self_.dim() > 1 && (numel == 0 || self_.numel() == 0) {
        return Ok(out);
    }
    index_select_kernel(out, self_, dim, &index, &err)?;
    Ok(out)
}

/// `index_select_cpu_`.
pub fn index_select_cpu_(self_: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let out = Tensor::empty(&[0], (self_.dtype(), self_.device()))?;
    index_select_out_cpu_(self_, dim, index, &out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// index_add, index_copy, index_fill

/// `index` (1-D or 0-d, int64) viewed over `shape` for the scatter loop: `index[i]` at every
/// position whose `dim` coordinate is `i` (stride 0 along the other dims).
fn index_along(index: &Tensor, shape: &[i64], dim: usize) -> Result<Tensor> {
    let idx = if index.dtype() == ScalarType::Long {
        index.clone()
    } else {
        index.to_dtype(ScalarType::Long)?
    };
    let mut strides = vec![0i64; shape.len()];
    strides[dim] = if idx.dim() > 0 { idx.strides()[0] } else { 1 };
    idx.as_strided(shape, &strides)
}

/// `t`, viewed with one dim when it has none.
fn nonzero_dim(t: &Tensor) -> Result<Tensor> {
    if t.dim() == 0 {
        t.unsqueeze(0)
    } else {
        Ok(t.clone())
    }
}

/// `index_func_meta_impl` for index_add.
///
/// TORCH_PRECOMPUTE_META_FUNC(index_add): the state is the wrapped dim.
pub fn index_add_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    _alpha: &Scalar,
) -> Result<usize> {
    let dim = maybe_wrap_dim(dim, self_.dim(), true)?;
    let numel = index.numel();
    if index.dim() > 1 {
        return Err(Error::index(format!(
            "index_add_(): Index is supposed to be a vector, but got dim: {} with type: {} and size: {}",
            index.dim(),
            index.dtype().name(),
            fmt_sizes(&index.sizes())
        )));
    }
    if !matches!(index.dtype(), ScalarType::Long | ScalarType::Int) {
        return Err(Error::runtime(format!(
            "index_add_(): Expected dtype int32/int64 for index but got: {}",
            index.dtype().name()
        )));
    }
    if self_.dtype() != source.dtype() {
        return Err(Error::runtime(format!(
            "index_add_(): self ({}) and source ({}) must have the same scalar type",
            self_.dtype().name(),
            source.dtype().name()
        )));
    }
    if !(dim == 0 || dim < source.dim()) {
        return Err(Error::runtime(format!(
            "index_add_(): Indexing dim {dim} is out of bounds of the source tensor with dim {}",
            source.dim()
        )));
    }
    let src_n = if source.dim() == 0 {
        1
    } else {
        source.sizes()[dim]
    };
    if numel != src_n {
        return Err(Error::runtime(format!(
            "index_add_(): Number of indices ({numel}) should be equal to source.size(dim): ({src_n}), for dim: {dim}"
        )));
    }
    let mut ss = self_.sizes().to_vec();
    let mut cs = source.sizes().to_vec();
    if source.dim() != 0 && self_.dim() != 0 {
        ss.remove(dim);
        cs.remove(dim);
    }
    if ss != cs {
        return Err(Error::runtime(format!(
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {} source.shape = {}",
            fmt_sizes(&self_.sizes()),
            fmt_sizes(&source.sizes())
        )));
    }
    let given = m.maybe_get_output(0).cloned();
    m.set_output_raw_strided(0, &self_.sizes(), &[], options_of(self_))?;
    if let Some(result) = given {
        assert_no_internal_overlap(&result)?;
        assert_no_overlap(&result, index)?;
        assert_no_overlap(&result, source)?;
    }
    Ok(dim)
}

/// TORCH_IMPL_FUNC(index_add_cpu_out): a scatter_add of `source * alpha` along `dim`.
pub fn index_add_cpu_out(
    state: &mut usize,
    self_: &Tensor,
    _dim: i64,
    index: &Tensor,
    source: &Tensor,
    alpha: &Scalar,
    out: &Tensor,
) -> Result<()> {
    refuse_unsigned("index_add_", self_.dtype())?;
    let dim = *state;
    if !out.is_same(self_) {
        ops::copy_::call(out, self_, false)?;
    }
    if index.numel() == 0 || out.is_meta() {
        return Ok(());
    }
    let (res, src) = (nonzero_dim(out)?, nonzero_dim(source)?);
    let idx = index_along(index, &src.sizes(), dim)?;
    let one = matches!(alpha, Scalar::Int(1)) || matches!(alpha, Scalar::Double(x) if *x == 1.0);
    let alpha = if one { None } else { Some(alpha) };
    // PyTorch's kernel for a 1-d result has its own message.
    let oob = scatter_oob(&res, dim);
    let one_d = out.dim() <= 1;
    let err = |k: i64| {
        if one_d {
            Error::index("index out of range in self")
        } else {
            oob(k)
        }
    };
    scatter_reduce_kernel(&res, dim, &idx, &src, ScatterReduce::Sum, alpha, &err)
}

/// TORCH_PRECOMPUTE_META_FUNC(index_copy): the state is the wrapped dim.
pub fn index_copy_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
) -> Result<usize> {
    let dim = maybe_wrap_dim(dim, self_.dim(), true)?;
    let given = m.maybe_get_output(0).cloned();
    m.set_output_raw_strided(0, &self_.sizes(), &[], options_of(self_))?;
    if let Some(result) = given {
        assert_no_internal_overlap(&result)?;
        assert_no_overlap(&result, index)?;
        assert_no_overlap(&result, source)?;
    }
    if index.dim() >= 2 {
        return Err(Error::index(format!(
            "index_copy_(): Index should have dimension 1 or 0 (got {})",
            index.dim()
        )));
    }
    let num = index.numel();
    if source.dim() == 0 && num != 1 {
        return Err(Error::index(format!(
            "index_copy_(): When source is scalar, index should have one element (got {num})"
        )));
    } else if source.dim() != self_.dim() && source.dim() != 0 && self_.dim() != 0 {
        return Err(Error::index(format!(
            "index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality ({}), destination dimensionality ({})",
            source.dim(),
            self_.dim()
        )));
    }
    if index.dtype() != ScalarType::Long {
        return Err(Error::runtime(format!(
            "index_copy_(): Expected a long tensor for index, but got {}",
            index.dtype().name()
        )));
    }
    if self_.dtype() != source.dtype() {
        return Err(Error::runtime(format!(
            "index_copy_(): self and source expected to have the same dtype, but got (self) {} and (source) {}",
            self_.dtype().name(),
            source.dtype().name()
        )));
    }
    let mut ss = self_.sizes().to_vec();
    if !ss.is_empty() {
        ss.remove(dim);
    }
    let mut cs = source.sizes().to_vec();
    if !cs.is_empty() {
        cs.remove(dim.min(cs.len() - 1));
    }
    if ss != cs {
        // c10 prints a std::vector with spaces.
        let j = |v: &[i64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        return Err(Error::runtime(format!(
            "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: {} at dimension {dim} and source slice shape: {} at dimension 0.",
            j(&ss),
            j(&cs)
        )));
    }
    if source.dim() != 0 && num != source.sizes()[dim] {
        return Err(Error::index(format!(
            "index_copy_(): Number of indices ({num}) should be equal to source.size(dim) ({})",
            source.sizes()[dim]
        )));
    }
    Ok(dim)
}

/// TORCH_IMPL_FUNC(index_copy_out): a scatter of `source` along `dim` (the last of duplicate
/// indices wins).
pub fn index_copy_out(
    state: &mut usize,
    self_: &Tensor,
    _dim: i64,
    index: &Tensor,
    source: &Tensor,
    out: &Tensor,
) -> Result<()> {
    refuse_unsigned("index_copy_cpu", self_.dtype())?;
    let dim = *state;
    if !out.is_same(self_) {
        ops::copy_::call(out, self_, false)?;
    }
    if index.numel() == 0 || out.is_meta() {
        return Ok(());
    }
    let (res, src) = (nonzero_dim(out)?, nonzero_dim(source)?);
    let idx = index_along(index, &src.sizes(), dim)?;
    let size = res.sizes()[dim];
    let err = move |k: i64| {
        Error::index(format!(
            "index_copy_(): index {k} is out of bounds for dimension {dim} with size {size}"
        ))
    };
    scatter_kernel(&res, dim, &idx, &src, &err)
}

/// `index_fill_` (int_Scalar): negative indices count from the end.
pub fn index_fill_int_scalar_<'a>(
    self_: &'a Tensor,
    dim: i64,
    index: &Tensor,
    value: &Scalar,
) -> Result<&'a Tensor> {
    refuse_unsigned("index_fill_cpu", self_.dtype())?;
    if index.dtype() != ScalarType::Long {
        return Err(Error::index(
            "index_fill_(): Expected dtype int64 for index.",
        ));
    }
    assert_no_overlap(self_, index)?;
    if has_internal_overlap(self_) == MemOverlap::Yes {
        warn("Use of index_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar");
    }
    if !self_.dtype().is_complex() && matches!(value, Scalar::ComplexDouble(_)) {
        return Err(Error::runtime(
            "index_fill_(): Converting complex Scalar to non-complex type is not supported",
        ));
    }
    let s = nonzero_dim(self_)?;
    let dim = maybe_wrap_dim(dim, s.dim(), true)?;
    if index.dim() > 1 {
        return Err(Error::runtime("Index has to be a vector/scalar"));
    }
    if self_.is_meta() || index.numel() == 0 {
        return Ok(self_);
    }
    let size = s.sizes()[dim];
    let mut vals = index.contiguous()?.to_vec::<i64>()?;
    for v in vals.iter_mut() {
        if *v < -size || *v >= size {
            return Err(Error::index(format!(
                "index {v} is out of bounds for dimension {dim} with size {size}"
            )));
        }
        if *v < 0 {
            *v += size;
        }
    }
    let n = vals.len() as i64;
    let wrapped = Tensor::from_vec(vals, &[n])?;
    let mut shape = s.sizes().to_vec();
    shape[dim] = n;
    let idx = index_along(&wrapped, &shape, dim)?;
    let err = scatter_oob(&s, dim);
    scatter_fill_kernel(&s, dim, &idx, value, &err)?;
    Ok(self_)
}

/// `index_fill_` (int_Tensor): a 0-dim value.
pub fn index_fill_int_tensor_<'a>(
    self_: &'a Tensor,
    dim: i64,
    index: &Tensor,
    value: &Tensor,
) -> Result<&'a Tensor> {
    if value.dim() != 0 {
        return Err(Error::runtime(format!(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            value.dim()
        )));
    }
    let v = if value.is_meta() || self_.is_meta() {
        Scalar::Int(0)
    } else {
        value.item()?
    };
    index_fill_int_scalar_(self_, dim, index, &v)
}

/// `index_fill` (int_Scalar, CompositeExplicitAutograd).
pub fn index_fill_int_scalar(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    value: &Scalar,
) -> Result<Tensor> {
    let r = ops::clone::call(self_, None)?;
    ops::index_fill__int_Scalar::call(&r, dim, index, value)?;
    Ok(r)
}

/// `index_fill` (int_Tensor, CompositeExplicitAutograd).
pub fn index_fill_int_tensor(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    value: &Tensor,
) -> Result<Tensor> {
    let r = ops::clone::call(self_, None)?;
    ops::index_fill__int_Tensor::call(&r, dim, index, value)?;
    Ok(r)
}
