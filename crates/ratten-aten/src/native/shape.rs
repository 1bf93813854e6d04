//! Joining and repeating (ATen's `TensorShape.cpp` and `Repeat`'s `repeat` / `tile`): cat
//! (structured, with PyTorch's precomputed flags), stack, hstack, vstack, repeat and tile.
//! The shapes, dtypes and PyTorch's checks are here; cat's copies of contiguous inputs are
//! `native/cpu/cat_kernels.rs` (Note [cat as block copies]).
//!
//! Note [Legacy cat skipping]: a 1-D tensor of shape `(0,)` is "skipped" by cat wherever it
//! is: it takes no part in the shape checks, the wrapping of `dim` or the copies, though its
//! dtype still takes part in the result's promotion and it still refuses to be 0-dim. Before
//! empty tensors of other shapes existed it was the only empty tensor, and PyTorch keeps the
//! rule for it alone (`cat_should_skip_tensor`).

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{torch_check, Error, Result, TensorOptions};

use crate::generated::operators as ops;
use crate::native::cpu::cat_kernels::cat_contiguous_kernel;
use crate::native::type_properties::{
    can_cast, result_type_of_state, update_result_type_state, ResultTypeState,
};
use crate::native::view::{compute_stride, fmt_list, memory_format_strides};
use crate::native::MemoryFormat;
use crate::structured::{resize_output, MetaBase};
use crate::tensor_iterator::overlap::{
    assert_no_internal_overlap, assert_no_overlap, is_non_overlapping_and_dense,
};
use crate::Tensor;

// ---------------------------------------------------------------------------------------------
// Memory formats (c10's `suggest_memory_format` and `is_contiguous(memory_format)`)

/// The dims of a tensor of rank `ndim` from the outermost to the innermost in memory when it is
/// contiguous in `format` (channels last: N, the spatial dims, C).
pub fn memory_format_order(format: MemoryFormat, ndim: usize) -> Vec<usize> {
    match format {
        MemoryFormat::ChannelsLast | MemoryFormat::ChannelsLast3d if ndim >= 3 => {
            let mut order = vec![0];
            order.extend(2..ndim);
            order.push(1);
            order
        }
        _ => (0..ndim).collect(),
    }
}

/// Whether a tensor of `sizes` and `strides` is dense in the dim order `order` (outermost
/// first); a dim of size 1 may have any stride.
pub fn is_dense_in_order(sizes: &[i64], strides: &[i64], order: &[usize]) -> bool {
    let mut expected = 1i64;
    for &d in order.iter().rev() {
        if sizes[d] != 1 {
            if strides[d] != expected {
                return false;
            }
            expected = expected.saturating_mul(sizes[d]);
        }
    }
    true
}

/// `is_channels_last_strides_2d_s4` / `_3d_s5`: whether the strides look like channels last
/// (PyTorch's heuristic, which leaves the ambiguous cases to the contiguous format).
fn is_channels_last_strides(sizes: &[i64], strides: &[i64]) -> bool {
    let order: &[usize] = match sizes.len() {
        4 => &[1, 3, 2, 0],
        5 => &[1, 4, 3, 2, 0],
        _ => return false,
    };
    if strides[1] == 0 {
        return false;
    }
    let mut min = 0i64;
    for &d in order {
        if sizes[d] == 0 || strides[d] < min {
            return false;
        }
        // N111 tensors and NHW1 slices have equal strides: contiguous, by convention.
        if d == 0 && min == strides[1] {
            return false;
        }
        min = strides[d];
        if sizes[d] > 1 {
            min = min.saturating_mul(sizes[d]);
        }
    }
    true
}

/// `TensorBase::suggest_memory_format()`.
pub fn suggest_memory_format(t: &Tensor) -> MemoryFormat {
    t.with_meta(|m| {
        if !is_channels_last_strides(m.sizes(), m.strides()) {
            MemoryFormat::Contiguous
        } else if m.dim() == 4 {
            MemoryFormat::ChannelsLast
        } else {
            MemoryFormat::ChannelsLast3d
        }
    })
}

/// `empty_like(self, memory_format=torch.preserve_format)` as PyTorch decides it: `self`'s
/// strides when it is dense or empty (PyTorch's TensorImpl counts every empty tensor as
/// contiguous, so as dense), else the strides of the format `self` suggests.
pub fn empty_like_preserve(self_: &Tensor) -> Result<Tensor> {
    let (sizes, strides) = (self_.sizes(), self_.strides());
    let strides = if self_.numel() == 0 || is_non_overlapping_and_dense(&sizes, &strides) {
        strides.to_vec()
    } else {
        memory_format_strides(&sizes, suggest_memory_format(self_))?.unwrap_or_default()
    };
    ops::empty_strided::call(
        &sizes,
        &strides,
        Some(self_.dtype()),
        None,
        Some(self_.device()),
        None,
    )
}

/// `TensorBase::is_contiguous(memory_format)`.
pub fn is_contiguous_memory_format(t: &Tensor, format: MemoryFormat) -> bool {
    match format {
        MemoryFormat::Contiguous | MemoryFormat::Preserve => t.is_contiguous(),
        MemoryFormat::ChannelsLast | MemoryFormat::ChannelsLast3d => t.with_meta(|m| {
            let rank = if format == MemoryFormat::ChannelsLast {
                4
            } else {
                5
            };
            m.dim() == rank
                && is_dense_in_order(m.sizes(), m.strides(), &memory_format_order(format, rank))
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// cat

/// `cat_should_skip_tensor` (Note [Legacy cat skipping]).
pub fn cat_should_skip_tensor(t: &Tensor) -> bool {
    t.with_meta(|m| m.dim() == 1 && m.sizes()[0] == 0)
}

/// `legacy_cat_wrap_dim`: `dim` wrapped against the first tensor cat does not skip; unchanged
/// when it skips them all.
pub fn legacy_cat_wrap_dim(dim: i64, tensors: &[Tensor]) -> Result<i64> {
    match tensors.iter().find(|t| !cat_should_skip_tensor(t)) {
        Some(t) => Ok(maybe_wrap_dim(dim, t.dim(), true)? as i64),
        None => Ok(dim),
    }
}

/// `cat_compute_output_memory_format`: the inputs' common suggested format, contiguous when
/// one of them suggests it or two disagree.
fn cat_compute_output_memory_format(tensors: &[Tensor]) -> MemoryFormat {
    let mut format = None;
    for t in tensors {
        let f = suggest_memory_format(t);
        if f == MemoryFormat::Contiguous || format.is_some_and(|g| g != f) {
            return MemoryFormat::Contiguous;
        }
        format = Some(f);
    }
    format.unwrap_or(MemoryFormat::Contiguous)
}

/// `check_cat_shape_except_dim`.
fn check_cat_shape_except_dim(
    first: &Tensor,
    second: &Tensor,
    dim: usize,
    index: usize,
) -> Result<()> {
    let (a, b) = (first.sizes(), second.sizes());
    torch_check!(
        a.len() == b.len(),
        "Tensors must have same number of dimensions: got {} and {}",
        a.len(),
        b.len()
    );
    for d in (0..a.len()).filter(|&d| d != dim) {
        torch_check!(
            a[d] == b[d],
            "Sizes of tensors must match except in dimension {dim}. Expected size {} but got size {} for tensor number {index} in the list.",
            a[d],
            b[d]
        );
    }
    Ok(())
}

/// What cat's meta precomputes for its impl (PyTorch's `precomputed:` fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatState {
    /// The wrapped dim.
    pub dim: usize,
    /// The first tensor cat does not skip (`tensors.len()` when it skips them all).
    pub valid: usize,
    /// Every input cat does not skip, and the output, are contiguous in `memory_format` (cat
    /// copies them as blocks). PyTorch's flag is false as soon as one tensor is skipped; the
    /// block copies need no such rule.
    pub all_contiguous: bool,
    /// Every input has the output's dtype.
    pub all_same_dtype: bool,
    /// Every input cat does not skip has the sizes and strides of `tensors[valid]`.
    pub all_same_sizes_and_stride: bool,
    pub memory_format: MemoryFormat,
}

/// TORCH_PRECOMPUTE_META_FUNC(cat): checks, the output's shape (the inputs' with the sizes
/// along `dim` summed), its dtype (the inputs' promoted type, or `out`'s when it can hold
/// that) and its memory format.
pub fn cat_meta(m: &dyn MetaBase, tensors: &[Tensor], dim: i64) -> Result<CatState> {
    for (i, t) in tensors.iter().enumerate() {
        torch_check!(
            t.dim() > 0,
            "zero-dimensional tensor (at position {i}) cannot be concatenated"
        );
    }
    let dim = legacy_cat_wrap_dim(dim, tensors)?;
    let Some(first) = tensors.first() else {
        return Err(Error::value(
            "torch.cat(): expected a non-empty list of Tensors",
        ));
    };
    let valid = tensors
        .iter()
        .position(|t| !cat_should_skip_tensor(t))
        .unwrap_or(tensors.len());
    let memory_format = cat_compute_output_memory_format(tensors);

    let mut state = ResultTypeState::default();
    for t in tensors {
        update_result_type_state(t, &mut state)?;
    }
    let mut out_dtype = result_type_of_state(&state)?.unwrap_or(first.dtype());
    let given = m.maybe_get_output(0).cloned();
    let mut all_contiguous = true;
    if let Some(out) = &given {
        if !can_cast(out_dtype, out.dtype()) {
            return Err(Error::type_error(format!(
                "torch.cat(): input types can't be cast to the desired output type {}",
                out.dtype()
            )));
        }
        out_dtype = out.dtype();
        all_contiguous = is_contiguous_memory_format(out, memory_format);
    }
    let device = first.device();
    if let Some(t) = tensors.iter().find(|t| t.device() != device) {
        return Err(Error::runtime(format!(
            "Tensor on device {} is not on the expected device {device}!",
            t.device()
        )));
    }

    let mut sizes = vec![0i64];
    let mut all_same_dtype = true;
    let mut all_same_sizes_and_stride = true;
    let found_valid = valid < tensors.len();
    let dim = dim as usize;
    if found_valid {
        let v = &tensors[valid];
        let (vs, vst) = (v.sizes(), v.strides());
        let mut size_at_dim = 0i64;
        for (i, t) in tensors.iter().enumerate() {
            all_same_dtype &= t.dtype() == out_dtype;
            if cat_should_skip_tensor(t) {
                continue;
            }
            check_cat_shape_except_dim(v, t, dim, i)?;
            size_at_dim = size_at_dim
                .checked_add(t.sizes()[dim])
                .ok_or_else(|| Error::runtime("cat: the output's size overflows int64"))?;
            all_contiguous &= is_contiguous_memory_format(t, memory_format);
            all_same_sizes_and_stride &= t.sizes() == vs && t.strides() == vst;
        }
        sizes = vs.to_vec();
        sizes[dim] = size_at_dim;
    } else {
        all_same_dtype = tensors.iter().all(|t| t.dtype() == out_dtype);
    }
    let strides = match memory_format {
        MemoryFormat::Contiguous | MemoryFormat::Preserve => Vec::new(),
        f => memory_format_strides(&sizes, f)?.unwrap_or_default(),
    };
    let options = TensorOptions::new()
        .dtype(out_dtype)
        .device(tensors.get(valid).unwrap_or(first).device());
    m.set_output_raw_strided(0, &sizes, &strides, options)?;
    // The overlap checks come after `out` was resized, as in PyTorch.
    if let (Some(out), true) = (&given, found_valid) {
        assert_no_internal_overlap(out)?;
        for t in tensors {
            assert_no_overlap(out, t)?;
        }
    }
    Ok(CatState {
        dim,
        valid,
        all_contiguous,
        all_same_dtype,
        all_same_sizes_and_stride,
        memory_format,
    })
}

/// TORCH_IMPL_FUNC(cat_out_cpu): contiguous inputs of the output's dtype are copied as blocks
/// (Note [cat as block copies]); any other input is copied (and cast) into its slice of the
/// output by TensorIterator's copy.
pub fn cat_out_cpu(
    state: &mut CatState,
    tensors: &[Tensor],
    _dim: i64,
    result: &Tensor,
) -> Result<()> {
    if result.numel() == 0 {
        return Ok(());
    }
    let dim = state.dim;
    let inputs: Vec<&Tensor> = tensors
        .iter()
        .filter(|t| !cat_should_skip_tensor(t))
        .collect();
    if state.all_contiguous && state.all_same_dtype {
        let order = memory_format_order(state.memory_format, result.dim());
        if cat_contiguous_kernel(result, &inputs, dim, &order)? {
            return Ok(());
        }
    }
    let mut offset = 0i64;
    for t in inputs {
        let n = t.sizes()[dim];
        let slice = ops::narrow::call(result, dim as i64, offset, n)?;
        ops::copy_::call(&slice, t, false)?;
        offset += n;
    }
    Ok(())
}

/// `concat` (CompositeImplicitAutograd), an alias of `cat`.
pub fn concat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    ops::cat::call(tensors, dim)
}

/// `concat.out`.
pub fn concat_out<'a>(tensors: &[Tensor], dim: i64, out: &'a Tensor) -> Result<&'a Tensor> {
    ops::cat_out::call(tensors, dim, out)?;
    Ok(out)
}

/// `concatenate` (CompositeImplicitAutograd), an alias of `cat`.
pub fn concatenate(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    ops::cat::call(tensors, dim)
}

/// `concatenate.out`.
pub fn concatenate_out<'a>(tensors: &[Tensor], dim: i64, out: &'a Tensor) -> Result<&'a Tensor> {
    ops::cat_out::call(tensors, dim, out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// stack, hstack, vstack

/// `check_stack_inputs`: every tensor has the first one's sizes.
fn check_stack_inputs(tensors: &[Tensor]) -> Result<()> {
    let entry = tensors[0].sizes();
    for (i, t) in tensors.iter().enumerate().skip(1) {
        let s = t.sizes();
        torch_check!(
            s == entry,
            "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {i}",
            fmt_list(&entry),
            fmt_list(&s)
        );
    }
    Ok(())
}

/// `get_stack_inputs`: the tensors unsqueezed at `dim`, after the size check.
fn get_stack_inputs(tensors: &[Tensor], dim: i64) -> Result<Vec<Tensor>> {
    check_stack_inputs(tensors)?;
    tensors.iter().map(|t| t.unsqueeze(dim)).collect()
}

/// What `stack` and `stack.out` check first: `dim` wrapped against the stacked rank, and, when
/// the new dim comes before the last, the stacked shape (the tensors checked equal in size).
fn stack_shape(tensors: &[Tensor], dim: i64) -> Result<(usize, Option<Vec<i64>>)> {
    torch_check!(!tensors.is_empty(), "stack expects a non-empty TensorList");
    let nd = tensors[0].dim();
    let wrapped = maybe_wrap_dim(dim, nd + 1, true)?;
    if wrapped == nd {
        return Ok((wrapped, None));
    }
    check_stack_inputs(tensors)?;
    let mut result_sizes = tensors[0].sizes().to_vec();
    result_sizes.insert(wrapped, tensors.len() as i64);
    Ok((wrapped, Some(result_sizes)))
}

/// `stack` (CompositeExplicitAutograd): a cat along `dim` viewed with the new dim split off
/// (one can always split a dim with a view); at the last position, a cat of the unsqueezed
/// tensors.
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    match stack_shape(tensors, dim)? {
        (wrapped, Some(result_sizes)) => {
            ops::cat::call(tensors, wrapped as i64)?.view(&result_sizes)
        }
        (_, None) => ops::cat::call(&get_stack_inputs(tensors, dim)?, dim),
    }
}

/// `stack` on meta: the same composition, whose cat and view run on meta.
pub fn stack_meta(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    stack(tensors, dim)
}

/// `stack.out`: `out` is resized to the stacked shape first; when it can be viewed with the
/// cat's shape, the tensors are cat into that view, else the unsqueezed ones into `out`.
pub fn stack_out<'a>(tensors: &[Tensor], dim: i64, out: &'a Tensor) -> Result<&'a Tensor> {
    if let (wrapped, Some(result_sizes)) = stack_shape(tensors, dim)? {
        resize_output(out, &result_sizes)?;
        let mut cat_sizes = tensors[0].sizes().to_vec();
        cat_sizes[wrapped] *= tensors.len() as i64;
        if compute_stride(&out.sizes(), &out.strides(), &cat_sizes).is_some() {
            let view = out.view(&cat_sizes)?;
            ops::cat_out::call(tensors, wrapped as i64, &view)?;
            return Ok(out);
        }
    }
    ops::cat_out::call(&get_stack_inputs(tensors, dim)?, dim, out)?;
    Ok(out)
}

/// `atleast_1d` of each tensor (a 0-dim tensor viewed as `[1]`).
fn atleast_1d(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    tensors
        .iter()
        .map(|t| {
            if t.dim() == 0 {
                t.reshape(&[1])
            } else {
                Ok(t.clone())
            }
        })
        .collect()
}

/// `atleast_2d` of each tensor (0-dim as `[1, 1]`, 1-dim as a row).
fn atleast_2d(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    tensors
        .iter()
        .map(|t| match t.dim() {
            0 => t.reshape(&[1, 1]),
            1 => t.unsqueeze(0),
            _ => Ok(t.clone()),
        })
        .collect()
}

/// The cat dim of `hstack`: 0 for 1-D tensors, else 1.
fn hstack_inputs(tensors: &[Tensor]) -> Result<(Vec<Tensor>, i64)> {
    torch_check!(!tensors.is_empty(), "hstack expects a non-empty TensorList");
    let rep = atleast_1d(tensors)?;
    let dim = if rep[0].dim() == 1 { 0 } else { 1 };
    Ok((rep, dim))
}

fn vstack_inputs(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    torch_check!(!tensors.is_empty(), "vstack expects a non-empty TensorList");
    atleast_2d(tensors)
}

/// `hstack` (CompositeImplicitAutograd): cat along the columns (dim 1, or dim 0 for 1-D
/// tensors) of the tensors made at least 1-D.
pub fn hstack(tensors: &[Tensor]) -> Result<Tensor> {
    let (rep, dim) = hstack_inputs(tensors)?;
    ops::cat::call(&rep, dim)
}

/// `hstack.out`.
pub fn hstack_out<'a>(tensors: &[Tensor], out: &'a Tensor) -> Result<&'a Tensor> {
    let (rep, dim) = hstack_inputs(tensors)?;
    ops::cat_out::call(&rep, dim, out)?;
    Ok(out)
}

/// `vstack` (CompositeImplicitAutograd): cat along dim 0 of the tensors made at least 2-D.
pub fn vstack(tensors: &[Tensor]) -> Result<Tensor> {
    ops::cat::call(&vstack_inputs(tensors)?, 0)
}

/// `vstack.out`.
pub fn vstack_out<'a>(tensors: &[Tensor], out: &'a Tensor) -> Result<&'a Tensor> {
    ops::cat_out::call(&vstack_inputs(tensors)?, 0, out)?;
    Ok(out)
}

/// `row_stack` (CompositeImplicitAutograd), an alias of `vstack`.
pub fn row_stack(tensors: &[Tensor]) -> Result<Tensor> {
    ops::vstack::call(tensors)
}

/// `row_stack.out`.
pub fn row_stack_out<'a>(tensors: &[Tensor], out: &'a Tensor) -> Result<&'a Tensor> {
    ops::vstack_out::call(tensors, out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// repeat, tile

/// `repeat` (CompositeExplicitAutograd): the result viewed as a grid of `self`-shaped tiles
/// (an `unfold` per dim) and filled by one broadcasting copy of `self`, as PyTorch does.
pub fn repeat(self_: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    let nd = self_.dim();
    torch_check!(
        repeats.len() >= nd,
        "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
    );
    if self_.is_meta() {
        // torch's meta function checks this itself, with its own text.
        if let Some((i, r)) = repeats.iter().enumerate().find(|(_, &r)| r < 0) {
            return Err(Error::runtime(format!(
                "Repeats cannot be negative, found {r} at index {i}"
            )));
        }
    }
    let new_dims = repeats.len() - nd;
    let mut padded = vec![1i64; new_dims];
    padded.extend_from_slice(&self_.sizes());
    let mut target = Vec::with_capacity(repeats.len());
    for (&p, &r) in padded.iter().zip(repeats) {
        target.push(p.checked_mul(r).ok_or_else(|| {
            Error::runtime(format!(
                "repeat: the output's size overflows int64 (sizes {} repeated {})",
                fmt_list(&padded),
                fmt_list(repeats)
            ))
        })?);
    }
    let xtensor = self_.expand(&padded)?;
    let result = Tensor::empty(&target, (self_.dtype(), self_.device()))?;
    if repeats.contains(&0) {
        return Ok(result);
    }
    let mut urtensor = result.alias()?;
    for (i, &size_i) in padded.iter().enumerate() {
        // unfold refuses a step of 0; with size 0 the step does not matter.
        urtensor = urtensor.unfold(i as i64, size_i, size_i.max(1))?;
    }
    let src = xtensor.expand(&urtensor.sizes())?;
    ops::copy_::call(&urtensor, &src, false)?;
    Ok(result)
}

/// `tile` (CompositeImplicitAutograd): `repeat` with `dims` padded with leading ones to
/// `self`'s rank, as `numpy.tile`.
pub fn tile_symint(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let nd = self_.dim();
    if nd > dims.len() {
        let mut reps = vec![1i64; nd - dims.len()];
        reps.extend_from_slice(dims);
        return self_.repeat(&reps);
    }
    self_.repeat(dims)
}
