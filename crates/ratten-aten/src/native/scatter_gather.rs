//! gather and the scatter family (ATen's `TensorAdvancedIndexing.cpp` metas and impls, with
//! `ScatterGatherChecks.h`): the shape and dtype rules here, the loops in
//! `native/cpu/scatter_gather_kernels.rs`. All are structured, as in PyTorch, so they work on
//! `device="meta"` through their metas.

use std::sync::Once;

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{Error, Result, Scalar, ScalarType, TensorOptions};

use crate::generated::operators as ops;
use crate::native::cpu::scatter_gather_kernels::{
    gather_kernel, scatter_fill_kernel, scatter_kernel, scatter_oob, scatter_reduce_kernel,
    scatter_reduce_op, scatter_reduce_two_op, scatter_scalar_reduce_kernel, ScatterReduce,
};
use crate::structured::{warn, MetaBase};
use crate::tensor_iterator::overlap::{
    assert_no_internal_overlap, assert_no_partial_overlap, get_overlap_status, MemOverlapStatus,
};
use crate::Tensor;

pub(crate) fn fmt_sizes(s: &[i64]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `at::assert_no_overlap`: `a` and `b` share no memory.
pub(crate) fn assert_no_overlap(a: &Tensor, b: &Tensor) -> Result<()> {
    match get_overlap_status(a, b) {
        MemOverlapStatus::Full | MemOverlapStatus::Partial => Err(Error::runtime(
            "unsupported operation: some elements of the input tensor and the written-to tensor \
             refer to a single memory location. Please clone() the tensor before performing the \
             operation.",
        )),
        _ => Ok(()),
    }
}

/// `ensure_nonempty_dim`.
fn nonempty_dim(t: &Tensor) -> usize {
    t.dim().max(1)
}

/// `ensure_nonempty_size`.
fn nonempty_size(t: &Tensor, d: usize) -> i64 {
    if t.dim() == 0 {
        1
    } else {
        t.sizes()[d]
    }
}

/// `gather_shape_check`.
fn gather_shape_check(self_: &Tensor, dim: usize, index: &Tensor) -> Result<()> {
    let nd = nonempty_dim(self_);
    if nd != nonempty_dim(index) {
        return Err(Error::runtime(
            "Index tensor must have the same number of dimensions as input tensor",
        ));
    }
    for i in (0..nd).filter(|&i| i != dim) {
        if nonempty_size(index, i) > nonempty_size(self_, i) {
            return Err(Error::runtime(format!(
                "Size does not match at dimension {i} expected index {} to be no larger than self {} apart from dimension {dim}",
                fmt_sizes(&index.sizes()),
                fmt_sizes(&self_.sizes())
            )));
        }
    }
    Ok(())
}

/// `scatter_gather_dtype_check`.
fn scatter_gather_dtype_check(
    method: &str,
    self_: &Tensor,
    index: &Tensor,
    src: Option<&Tensor>,
) -> Result<()> {
    if index.numel() != 0 && !matches!(index.dtype(), ScalarType::Long | ScalarType::Int) {
        return Err(Error::runtime(format!(
            "{method}(): Expected dtype int32/int64 for index"
        )));
    }
    if let Some(src) = src {
        if self_.dtype() != src.dtype() {
            return Err(Error::runtime(format!(
                "{method}(): Expected self.dtype to be equal to src.dtype"
            )));
        }
    }
    Ok(())
}

/// `scatter_shape_check`.
fn scatter_shape_check(
    self_: &Tensor,
    dim: usize,
    index: &Tensor,
    src: Option<&Tensor>,
) -> Result<()> {
    if index.numel() == 0 {
        return Ok(());
    }
    let nd = nonempty_dim(self_);
    if nd != nonempty_dim(index) {
        return Err(Error::runtime(
            "Index tensor must have the same number of dimensions as self tensor",
        ));
    }
    let mut wrong = (0..nd).any(|d| d != dim && nonempty_size(index, d) > nonempty_size(self_, d));
    match src {
        Some(src) => {
            if nonempty_dim(src) != nonempty_dim(index) {
                return Err(Error::runtime(
                    "Index tensor must have the same number of dimensions as src tensor",
                ));
            }
            wrong = wrong || (0..nd).any(|d| nonempty_size(index, d) > nonempty_size(src, d));
            if wrong {
                return Err(Error::runtime(format!(
                    "Expected index {} to be no larger than self {} apart from dimension {dim} and to be no larger size than src {}",
                    fmt_sizes(&index.sizes()),
                    fmt_sizes(&self_.sizes()),
                    fmt_sizes(&src.sizes())
                )));
            }
        }
        None if wrong => {
            return Err(Error::runtime(format!(
                "Expected index {} to be no larger than self {} apart from dimension {dim}",
                fmt_sizes(&index.sizes()),
                fmt_sizes(&self_.sizes())
            )))
        }
        None => {}
    }
    Ok(())
}

pub(crate) fn options_of(t: &Tensor) -> TensorOptions {
    TensorOptions::new().dtype(t.dtype()).device(t.device())
}

// ---------------------------------------------------------------------------------------------
// gather

/// TORCH_META_FUNC(gather).
pub fn gather_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    _sparse_grad: bool,
) -> Result<()> {
    let wrapped = maybe_wrap_dim(dim, self_.dim(), true)?;
    let given = m.maybe_get_output(0).cloned();
    m.set_output_raw_strided(0, &index.sizes(), &[], options_of(self_))?;
    if let Some(result) = given {
        assert_no_internal_overlap(&result)?;
        assert_no_overlap(&result, self_)?;
        assert_no_partial_overlap(&result, index)?;
    }
    if index.numel() == 0 {
        return Ok(());
    }
    if !matches!(index.dtype(), ScalarType::Long | ScalarType::Int) {
        return Err(Error::runtime(
            "gather(): Expected dtype int32/int64 for index",
        ));
    }
    gather_shape_check(self_, wrapped, index)
}

/// TORCH_IMPL_FUNC(gather_out).
pub fn gather_out(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    _sparse_grad: bool,
    out: &Tensor,
) -> Result<()> {
    if index.numel() == 0 || out.is_meta() {
        return Ok(());
    }
    let dim = maybe_wrap_dim(dim, self_.dim(), true)?;
    gather_kernel(out, self_, dim, &long_index(index)?)
}

/// The kernels read int64 indices: an int32 index is widened first.
fn long_index(index: &Tensor) -> Result<Tensor> {
    if index.dtype() == ScalarType::Int {
        index.to_dtype(ScalarType::Long)
    } else {
        Ok(index.clone())
    }
}

// ---------------------------------------------------------------------------------------------
// scatter

/// `scatter_meta_impl`.
fn scatter_meta_impl(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: Option<&Tensor>,
    check_reduce: Option<&dyn Fn() -> Result<ScatterReduce>>,
) -> Result<()> {
    let wrapped = maybe_wrap_dim(dim, self_.dim(), true)?;
    scatter_gather_dtype_check("scatter", self_, index, src)?;
    scatter_shape_check(self_, wrapped, index, src)?;
    if let Some(out) = m.maybe_get_output(0) {
        assert_no_internal_overlap(out)?;
        assert_no_overlap(out, index)?;
        if let Some(src) = src {
            assert_no_overlap(out, src)?;
        }
    }
    m.set_output_raw_strided(0, &self_.sizes(), &[], options_of(self_))?;
    if let Some(check) = check_reduce {
        check()?;
    }
    Ok(())
}

/// `scatter_impl`'s common start: `out` holds `self`; whether there is anything to scatter.
fn scatter_prologue(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    out: &Tensor,
) -> Result<Option<(usize, Tensor)>> {
    let dim = maybe_wrap_dim(dim, self_.dim(), true)?;
    if !self_.is_same(out) {
        ops::copy_::call(out, self_, false)?;
    }
    if index.numel() == 0 || out.is_meta() {
        return Ok(None);
    }
    Ok(Some((dim, long_index(index)?)))
}

/// TORCH_META_FUNC2(scatter, src).
pub fn scatter_src_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
) -> Result<()> {
    scatter_meta_impl(m, self_, dim, index, Some(src), None)
}

/// TORCH_IMPL_FUNC(scatter_src_out).
pub fn scatter_src_out(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    out: &Tensor,
) -> Result<()> {
    match scatter_prologue(self_, dim, index, out)? {
        Some((d, index)) => scatter_kernel(out, d, &index, src, &scatter_oob(out, d)),
        None => Ok(()),
    }
}

/// TORCH_META_FUNC2(scatter, value).
pub fn scatter_value_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    _value: &Scalar,
) -> Result<()> {
    scatter_meta_impl(m, self_, dim, index, None, None)
}

/// TORCH_IMPL_FUNC(scatter_value_out).
pub fn scatter_value_out(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    value: &Scalar,
    out: &Tensor,
) -> Result<()> {
    match scatter_prologue(self_, dim, index, out)? {
        Some((d, index)) => scatter_fill_kernel(out, d, &index, value, &scatter_oob(out, d)),
        None => Ok(()),
    }
}

/// TORCH_META_FUNC2(scatter, reduce).
pub fn scatter_reduce_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
) -> Result<()> {
    scatter_meta_impl(
        m,
        self_,
        dim,
        index,
        Some(src),
        Some(&|| scatter_reduce_op(reduce)),
    )
}

/// TORCH_IMPL_FUNC(scatter_reduce_out).
pub fn scatter_reduce_out(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    out: &Tensor,
) -> Result<()> {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        warn(
            "The reduce argument of torch.scatter with Tensor src is deprecated and will be \
             removed in a future PyTorch release. Use torch.scatter_reduce instead for more \
             reduction options.",
        )
    });
    let op = scatter_reduce_op(reduce)?;
    match scatter_prologue(self_, dim, index, out)? {
        Some((d, index)) => {
            scatter_reduce_kernel(out, d, &index, src, op, None, &scatter_oob(out, d))
        }
        None => Ok(()),
    }
}

/// TORCH_META_FUNC2(scatter, value_reduce).
pub fn scatter_value_reduce_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    _value: &Scalar,
    reduce: &str,
) -> Result<()> {
    scatter_meta_impl(
        m,
        self_,
        dim,
        index,
        None,
        Some(&|| scatter_reduce_op(reduce)),
    )
}

/// TORCH_IMPL_FUNC(scatter_value_reduce_out).
pub fn scatter_value_reduce_out(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    value: &Scalar,
    reduce: &str,
    out: &Tensor,
) -> Result<()> {
    let op = scatter_reduce_op(reduce)?;
    match scatter_prologue(self_, dim, index, out)? {
        Some((d, index)) => {
            scatter_scalar_reduce_kernel(out, d, &index, value, op, &scatter_oob(out, d))
        }
        None => Ok(()),
    }
}

/// TORCH_META_FUNC(scatter_add).
pub fn scatter_add_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
) -> Result<()> {
    scatter_meta_impl(
        m,
        self_,
        dim,
        index,
        Some(src),
        Some(&|| scatter_reduce_op("add")),
    )
}

/// TORCH_IMPL_FUNC(scatter_add).
pub fn scatter_add(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    out: &Tensor,
) -> Result<()> {
    match scatter_prologue(self_, dim, index, out)? {
        Some((d, index)) => scatter_reduce_kernel(
            out,
            d,
            &index,
            src,
            ScatterReduce::Sum,
            None,
            &scatter_oob(out, d),
        ),
        None => Ok(()),
    }
}

/// TORCH_META_FUNC2(scatter_reduce, two).
pub fn scatter_reduce_two_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    _include_self: bool,
) -> Result<()> {
    scatter_meta_impl(
        m,
        self_,
        dim,
        index,
        Some(src),
        Some(&|| scatter_reduce_two_op(reduce)),
    )
}

/// TORCH_IMPL_FUNC(scatter_reduce_two): without `include_self` the scattered-to elements
/// start at the reduction's identity; "mean" sums, then divides by the number of values
/// each element received (plus itself when included; an element that received none keeps
/// its value), with floor division for the integer types.
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce_two(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
    out: &Tensor,
) -> Result<()> {
    let op = scatter_reduce_two_op(reduce)?;
    let Some((d, index)) = scatter_prologue(self_, dim, index, out)? else {
        return Ok(());
    };
    if !include_self {
        let dt = out.dtype();
        let init = match op {
            ScatterReduce::Sum | ScatterReduce::Mean => Scalar::Int(0),
            ScatterReduce::Prod => Scalar::Int(1),
            ScatterReduce::Max | ScatterReduce::Min => {
                let max = op == ScatterReduce::Max;
                match dt {
                    ScalarType::Bool => Scalar::Bool(!max),
                    d if d.is_floating_point() => Scalar::Double(if max {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    }),
                    d => {
                        let (lo, hi) = int_range(d);
                        Scalar::Int(if max { lo } else { hi })
                    }
                }
            }
        };
        if !(dt.is_complex() && matches!(op, ScatterReduce::Max | ScatterReduce::Min)) {
            scatter_fill_kernel(out, d, &index, &init, &scatter_oob(out, d))?;
        }
    }
    scatter_reduce_kernel(out, d, &index, src, op, None, &scatter_oob(out, d))?;
    if op == ScatterReduce::Mean {
        let count = if include_self {
            Tensor::ones(&out.sizes(), ScalarType::Long)?
        } else {
            Tensor::zeros(&out.sizes(), ScalarType::Long)?
        };
        let ones = Tensor::ones(&index.sizes(), ScalarType::Long)?;
        scatter_reduce_kernel(
            &count,
            d,
            &index,
            &ones,
            ScatterReduce::Sum,
            None,
            &scatter_oob(out, d),
        )?;
        let zero = ops::eq_Scalar::call(&count, &Scalar::Int(0))?;
        ops::masked_fill__Scalar::call(&count, &zero, &Scalar::Int(1))?;
        if out.dtype().is_floating_point() || out.dtype().is_complex() {
            ops::div__Tensor::call(out, &count)?;
        } else {
            ops::div__Tensor_mode::call(out, &count, Some("floor"))?;
        }
    }
    Ok(())
}

/// The lowest and highest values of an integer dtype.
fn int_range(d: ScalarType) -> (i64, i64) {
    match d {
        ScalarType::Byte => (0, u8::MAX as i64),
        ScalarType::Char => (i8::MIN as i64, i8::MAX as i64),
        ScalarType::Short => (i16::MIN as i64, i16::MAX as i64),
        ScalarType::Int => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}
