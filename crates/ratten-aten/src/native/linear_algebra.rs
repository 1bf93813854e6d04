//! Matrix products (ATen's LinearAlgebra.cpp, Blas.cpp and Linear.cpp): the structured
//! mm / addmm / bmm / baddbmm / addmv, the CPU kernels dot / vdot / addbmm, and the
//! compositions PyTorch builds on them (mv, outer, matmul, linear).
//!
//! Note [Matrix products]: every product ends in one of two seams of `native::cpu::blas`:
//! `gemm` (c = beta * c + alpha * a @ b on 2-D strided views, Note [GEMM backend]) or `dot`.
//! The meta functions reproduce PyTorch's checks in its order (dims, shapes, then dtypes for
//! mm; dtypes first for addmm), so an error names what torch's names. `matmul` follows
//! `_matmul_impl`: 1-D and 2-D cases go to dot / mv / mm, a batched operand against a matrix
//! or vector is folded into one mm when that needs no copy (`should_fold`), and everything
//! else broadcasts the batch dims and runs bmm.

use ratten_core::dtype::c128;
use ratten_core::{Error, Result, Scalar, ScalarType};

use crate::generated::operators as ops;
use crate::native::cpu::blas;
use crate::native::scatter_gather::options_of;
use crate::structured::{resize_output, type_meta_name, MetaBase};
use crate::Tensor;

fn is_zero(s: &Scalar) -> Result<bool> {
    Ok(s.to_complex_double()? == c128::new(0.0, 0.0))
}

/// `self` expanded to `sizes` (`expand_size`, whose errors are expand's).
fn expand_size(self_: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    if self_.sizes().as_slice() == sizes {
        return Ok(self_.clone());
    }
    self_.expand(sizes)
}

// ---------------------------------------------------------------------------------------------
// mm, addmm

/// The checks mm and addmm share: two matrices whose inner sizes agree (the first is named
/// `self` in the dims message, as torch's meta functions name it).
fn check_matrix_product(op: &str, mat1: &Tensor, mat2: &Tensor) -> Result<()> {
    for (t, name) in [(mat1, "self"), (mat2, "mat2")] {
        if t.dim() != 2 {
            return Err(Error::runtime(format!(
                "{op}: {name} must be a matrix, got {}-D tensor",
                t.dim()
            )));
        }
    }
    let (a, b) = (mat1.sizes(), mat2.sizes());
    if a[1] != b[0] {
        return Err(Error::runtime(format!(
            "{op}: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            a[0], a[1], b[0], b[1]
        )));
    }
    Ok(())
}

/// TORCH_META_FUNC(mm).
pub fn mm_meta(m: &dyn MetaBase, self_: &Tensor, mat2: &Tensor) -> Result<()> {
    check_matrix_product("mm", self_, mat2)?;
    let (a, b) = (self_.sizes(), mat2.sizes());
    if self_.dtype() != mat2.dtype() {
        return Err(Error::runtime(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            type_meta_name(self_.dtype()),
            type_meta_name(mat2.dtype())
        )));
    }
    m.set_output_raw_strided(0, &[a[0], b[1]], &[], options_of(self_))
}

/// TORCH_IMPL_FUNC(mm_out_cpu): `addmm_impl_cpu_(out, out, self, mat2, 0, 1)`.
pub fn mm_out_cpu(_state: &mut (), self_: &Tensor, mat2: &Tensor, out: &Tensor) -> Result<()> {
    addmm_impl_cpu(out, out, self_, mat2, &Scalar::Int(0), &Scalar::Int(1))
}

/// TORCH_META_FUNC(addmm) (ADDMM_META).
pub fn addmm_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    _beta: &Scalar,
    _alpha: &Scalar,
) -> Result<()> {
    if self_.dtype() != mat2.dtype() {
        return Err(Error::runtime(format!(
            "self and mat2 must have the same dtype, but got {} and {}",
            self_.dtype(),
            mat2.dtype()
        )));
    }
    if mat1.dtype() != mat2.dtype() {
        return Err(Error::runtime(format!(
            "mat1 and mat2 must have the same dtype, but got {} and {}",
            mat1.dtype(),
            mat2.dtype()
        )));
    }
    check_matrix_product("addmm", mat1, mat2)?;
    let (a, b) = (mat1.sizes(), mat2.sizes());
    m.set_output_raw_strided(0, &[a[0], b[1]], &[], options_of(mat1))
}

/// TORCH_IMPL_FUNC(addmm_out_cpu): `self` broadcast to the product's shape.
pub fn addmm_out_cpu(
    _state: &mut (),
    self_: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    beta: &Scalar,
    alpha: &Scalar,
    out: &Tensor,
) -> Result<()> {
    let b_self = expand_size(self_, &[mat1.size(0)?, mat2.size(1)?])?;
    addmm_impl_cpu(out, &b_self, mat1, mat2, beta, alpha)
}

/// `addmm_impl_cpu_`: `result = beta * self + alpha * (m1 @ m2)`, `self` of the result's shape.
fn addmm_impl_cpu(
    result: &Tensor,
    self_: &Tensor,
    m1: &Tensor,
    m2: &Tensor,
    beta: &Scalar,
    alpha: &Scalar,
) -> Result<()> {
    if m1.dtype() != m2.dtype() {
        return Err(Error::runtime(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            type_meta_name(m1.dtype()),
            type_meta_name(m2.dtype())
        )));
    }
    let (s, a, b) = (self_.sizes(), m1.sizes(), m2.sizes());
    if s[0] != a[0] || s[1] != b[1] {
        return Err(Error::runtime(format!(
            "input shape is incompatible with matrix multiplication ({}x{} @ {}x{} != {}x{})",
            a[0], a[1], b[0], b[1], s[0], s[1]
        )));
    }
    resize_output(result, &s)?;
    if result.numel() == 0 || result.is_meta() {
        return Ok(());
    }
    if matches!(result.dtype(), ScalarType::Bool | ScalarType::ComplexHalf) {
        return Err(Error::not_implemented(format!(
            "\"addmm_impl_cpu_\" not implemented for '{}'",
            result.dtype()
        )));
    }
    let beta_zero = is_zero(beta)?;
    // [a, 0] x [0, b]: no product, only the scaled input.
    if a[1] == 0 {
        if beta_zero {
            result.zero_()?;
        } else {
            if !self_.is_same(result) {
                result.copy_(self_)?;
            }
            result.mul_scalar_(*beta)?;
        }
        return Ok(());
    }
    if !beta_zero && !self_.is_same(result) {
        result.copy_(self_)?;
    }
    blas::gemm(result, m1, m2, alpha, beta)
}

// ---------------------------------------------------------------------------------------------
// bmm, baddbmm, addbmm

/// `common_checks_baddbmm_bmm`: 3-D operands with matching batch and contraction sizes; the
/// output is set (or checked, for the in-place overload).
fn common_checks_baddbmm_bmm(
    m: &dyn MetaBase,
    batch1: &Tensor,
    batch2: &Tensor,
    self_baddbmm: Option<&Tensor>,
) -> Result<()> {
    if batch1.dim() != 3 {
        return Err(Error::runtime("batch1 must be a 3D tensor"));
    }
    if batch2.dim() != 3 {
        return Err(Error::runtime("batch2 must be a 3D tensor"));
    }
    let (s1, s2) = (batch1.sizes(), batch2.sizes());
    let (bs, contraction) = (s1[0], s1[2]);
    let output_size = [bs, s1[1], s2[2]];
    if s2[0] != bs || s2[1] != contraction {
        return Err(Error::runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{bs}, {contraction}] \
             but got: [{}, {}].",
            s2[0], s2[1]
        )));
    }
    m.set_output_raw_strided(0, &output_size, &[], options_of(batch2))?;
    if let Some(self_) = self_baddbmm {
        if self_.dim() != 3 {
            return Err(Error::runtime("self must be a 3D tensor"));
        }
        if self_.sizes().as_slice() != output_size {
            return Err(Error::runtime(format!(
                "Expected an input tensor shape with shape {output_size:?} but got shape: {:?}",
                self_.sizes().as_slice()
            )));
        }
    }
    Ok(())
}

/// TORCH_META_FUNC(bmm).
pub fn bmm_meta(m: &dyn MetaBase, self_: &Tensor, mat2: &Tensor) -> Result<()> {
    common_checks_baddbmm_bmm(m, self_, mat2, None)
}

/// TORCH_IMPL_FUNC(bmm_out_cpu).
pub fn bmm_out_cpu(_state: &mut (), self_: &Tensor, mat2: &Tensor, out: &Tensor) -> Result<()> {
    bmm_out_or_baddbmm(out, self_, mat2, &Scalar::Int(0), &Scalar::Int(1), true)
}

/// TORCH_META_FUNC(baddbmm).
pub fn baddbmm_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    _beta: &Scalar,
    _alpha: &Scalar,
) -> Result<()> {
    let expanded = if batch1.dim() == 3 && batch2.dim() == 3 {
        Some(expand_size(
            self_,
            &[batch1.size(0)?, batch1.size(1)?, batch2.size(2)?],
        )?)
    } else {
        None
    };
    if self_.dtype() != batch1.dtype() {
        return Err(Error::runtime(format!(
            "Input dtypes must be the same, got: input {}, batch1: {}, batch2: {}",
            type_meta_name(self_.dtype()),
            type_meta_name(batch1.dtype()),
            type_meta_name(batch2.dtype())
        )));
    }
    common_checks_baddbmm_bmm(m, batch1, batch2, expanded.as_ref())
}

/// TORCH_IMPL_FUNC(baddbmm_out_cpu): `self` (broadcast) copied in unless beta is 0, then the
/// products accumulated onto it.
pub fn baddbmm_out_cpu(
    _state: &mut (),
    self_: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: &Scalar,
    alpha: &Scalar,
    out: &Tensor,
) -> Result<()> {
    if !is_zero(beta)? && !self_.is_same(out) {
        let b_self = expand_size(self_, &out.sizes())?;
        out.copy_(&b_self)?;
    }
    bmm_out_or_baddbmm(out, batch1, batch2, beta, alpha, false)
}

/// `bmm_out_or_baddbmm_`: one product per batch into `result` (which holds `self` already for
/// baddbmm).
fn bmm_out_or_baddbmm(
    result: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: &Scalar,
    alpha: &Scalar,
    is_bmm: bool,
) -> Result<()> {
    if batch1.dtype() != batch2.dtype() {
        return Err(Error::runtime(format!(
            "expected scalar type {} but found {}",
            batch1.dtype(),
            batch2.dtype()
        )));
    }
    let name = if is_bmm { "bmm" } else { "baddbmm" };
    if matches!(batch1.dtype(), ScalarType::Bool | ScalarType::ComplexHalf) {
        return Err(Error::not_implemented(format!(
            "\"{name}\" not implemented for '{}'",
            batch1.dtype()
        )));
    }
    if result.numel() == 0 || result.is_meta() {
        return Ok(());
    }
    if batch1.size(2)? == 0 {
        if is_bmm || is_zero(beta)? {
            result.zero_()?;
        } else {
            result.mul_scalar_(*beta)?;
        }
        return Ok(());
    }
    let beta = if is_bmm { Scalar::Int(0) } else { *beta };
    blas::gemm_batched(result, batch1, batch2, alpha, &beta)
}

/// `addbmm_impl_`: `result = beta * self + alpha * sum_b batch1[b] @ batch2[b]`.
fn addbmm_impl(
    result: &Tensor,
    self_: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: &Scalar,
    alpha: &Scalar,
) -> Result<()> {
    if batch1.dim() != 3 {
        return Err(Error::runtime("batch1 must be a 3D tensor"));
    }
    if batch2.dim() != 3 {
        return Err(Error::runtime("batch2 must be a 3D tensor"));
    }
    let (s1, s2) = (batch1.sizes(), batch2.sizes());
    if s1[0] != s2[0] {
        return Err(Error::runtime(format!(
            "batch1 and batch2 must have same number of batches, got {} and {}",
            s1[0], s2[0]
        )));
    }
    if s1[2] != s2[1] {
        return Err(Error::runtime(format!(
            "Incompatible matrix sizes for bmm ({}x{} and {}x{})",
            s1[1], s1[2], s2[1], s2[2]
        )));
    }
    if self_.size(0)? != s1[1] || self_.size(1)? != s2[2] {
        return Err(Error::runtime(
            "self tensor does not match matmul output shape",
        ));
    }
    result.resize_(&self_.sizes())?;
    let beta_zero = is_zero(beta)?;
    if !beta_zero && !self_.is_same(result) {
        result.copy_(self_)?;
    }
    if s1[0] == 0 {
        if beta_zero {
            result.zero_()?;
        } else {
            result.mul_scalar_(*beta)?;
        }
        return Ok(());
    }
    let mut adjusted_beta = *beta;
    for b in 0..s1[0] {
        ops::addmm_::call(
            result,
            &batch1.select(0, b)?,
            &batch2.select(0, b)?,
            &adjusted_beta,
            alpha,
        )?;
        // Accumulate onto the first product.
        adjusted_beta = Scalar::Int(1);
    }
    Ok(())
}

/// `addbmm.out`.
pub fn addbmm_out<'a>(
    self_: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: &Scalar,
    alpha: &Scalar,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let b_self = expand_size(self_, &[batch1.size(1)?, batch2.size(2)?])?;
    addbmm_impl(out, &b_self, batch1, batch2, beta, alpha)?;
    Ok(out)
}

/// `addbmm_`.
pub fn addbmm_<'a>(
    self_: &'a Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: &Scalar,
    alpha: &Scalar,
) -> Result<&'a Tensor> {
    addbmm_out(self_, batch1, batch2, beta, alpha, self_)
}

/// `addbmm`.
pub fn addbmm(
    self_: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: &Scalar,
    alpha: &Scalar,
) -> Result<Tensor> {
    let result = Tensor::empty(&[0], (self_.dtype(), self_.device()))?;
    addbmm_out(self_, batch1, batch2, beta, alpha, &result)?;
    Ok(result)
}

// ---------------------------------------------------------------------------------------------
// addmv, mv

/// TORCH_META_FUNC(addmv).
pub fn addmv_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    mat: &Tensor,
    vec: &Tensor,
    _beta: &Scalar,
    _alpha: &Scalar,
) -> Result<()> {
    if !(mat.dim() == 2 && vec.dim() == 1 && self_.dim() <= 1) {
        return Err(Error::runtime(format!(
            "vector + matrix @ vector expected, got {}, {}, {}",
            self_.dim(),
            mat.dim(),
            vec.dim()
        )));
    }
    let (ms, vs) = (mat.sizes(), vec.sizes());
    if !(ms[1] == vs[0] && (ms[0] == self_.numel() || self_.numel() == 1)) {
        return Err(Error::runtime(format!(
            "size mismatch, got input ({}), mat ({}x{}), vec ({})",
            self_.size(0)?,
            ms[0],
            ms[1],
            vs[0]
        )));
    }
    if self_.dtype() != mat.dtype() || mat.dtype() != vec.dtype() {
        return Err(Error::runtime(format!(
            "addmv input tensors must have the same dtype, but got {}, {}, and {}",
            self_.dtype(),
            mat.dtype(),
            vec.dtype()
        )));
    }
    m.set_output_raw_strided(0, &[ms[0]], &[], options_of(vec))
}

/// TORCH_IMPL_FUNC(addmv_out_cpu): a product with a one-column matrix.
pub fn addmv_out_cpu(
    _state: &mut (),
    self_: &Tensor,
    mat: &Tensor,
    vec: &Tensor,
    beta: &Scalar,
    alpha: &Scalar,
    out: &Tensor,
) -> Result<()> {
    let b_self = expand_size(self_, &[mat.size(0)?])?;
    if out.is_meta() {
        return Ok(());
    }
    if matches!(mat.dtype(), ScalarType::Bool | ScalarType::ComplexHalf) {
        return Err(Error::not_implemented(format!(
            "\"addmv_impl_cpu\" not implemented for '{}'",
            mat.dtype()
        )));
    }
    let beta_zero = is_zero(beta)?;
    if mat.numel() == 0 {
        // NaNs of `self` do not propagate when beta is 0.
        if beta_zero {
            out.zero_()?;
        } else {
            out.copy_(&b_self)?;
            out.mul_scalar_(*beta)?;
        }
        return Ok(());
    }
    if !out.is_same(&b_self) && !beta_zero {
        out.copy_(&b_self)?;
    }
    if out.numel() != 0 {
        blas::gemm(&out.unsqueeze(1)?, mat, &vec.unsqueeze(1)?, alpha, beta)?;
    }
    Ok(())
}

/// `mv` (CompositeExplicitAutograd): `addmv_` into a fresh vector with beta 0.
pub fn mv(self_: &Tensor, vec: &Tensor) -> Result<Tensor> {
    let result = Tensor::empty(&[self_.size(0)?], (vec.dtype(), vec.device()))?;
    ops::addmv_::call(&result, self_, vec, &Scalar::Int(0), &Scalar::Int(1))?;
    Ok(result)
}

/// `mv.out`: `self` of addmv must have the right size even when `out` does not.
pub fn mv_out<'a>(self_: &Tensor, vec: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    let zero = Scalar::Int(0);
    let one = Scalar::Int(1);
    if out.dim() > 1 || out.numel() != self_.size(0)? || out.numel() != 1 {
        let self_addmv = Tensor::empty(&[self_.size(0)?], (vec.dtype(), vec.device()))?;
        ops::addmv_out::call(&self_addmv, self_, vec, &zero, &one, out)?;
    } else {
        ops::addmv_out::call(out, self_, vec, &zero, &one, out)?;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// dot, vdot, outer

/// `dot_check`.
fn dot_check(self_: &Tensor, other: &Tensor) -> Result<()> {
    if self_.dim() != 1 || other.dim() != 1 {
        return Err(Error::runtime(format!(
            "1D tensors expected, but got {}D and {}D tensors",
            self_.dim(),
            other.dim()
        )));
    }
    if self_.dtype() != other.dtype() {
        return Err(Error::runtime(format!(
            "dot : expected both vectors to have same dtype, but found {} and {}",
            self_.dtype(),
            other.dtype()
        )));
    }
    let (a, b) = (self_.numel(), other.numel());
    if a != b {
        return Err(Error::runtime(format!(
            "inconsistent tensor size, expected tensor [{a}] and src [{b}] to have the same \
             number of elements, but got {a} and {b} elements respectively"
        )));
    }
    Ok(())
}

/// `dot`: the 0-dim inner product of two vectors of one dtype.
pub fn dot(self_: &Tensor, tensor: &Tensor) -> Result<Tensor> {
    dot_check(self_, tensor)?;
    blas::dot(self_, tensor, false)
}

/// `vdot`: `dot` with `self` conjugated.
pub fn vdot(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    dot_check(self_, other)?;
    blas::dot(self_, other, self_.dtype().is_complex())
}

/// `dot.out` / `vdot.out`: the result's dtype must be the inputs'.
fn dot_like_out(result: Tensor, out: &Tensor) -> Result<&Tensor> {
    if out.dtype() != result.dtype() {
        return Err(Error::runtime(format!(
            "result dtype {} does not match input dtype {}",
            out.dtype(),
            result.dtype()
        )));
    }
    resize_output(out, &[])?;
    out.copy_(&result)?;
    Ok(out)
}

/// `dot.out`.
pub fn dot_out<'a>(self_: &Tensor, tensor: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    dot_like_out(ops::dot::call(self_, tensor)?, out)
}

/// `vdot.out`.
pub fn vdot_out<'a>(self_: &Tensor, other: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    dot_like_out(ops::vdot::call(self_, other)?, out)
}

fn check_1d(t: &Tensor, arg: &str, f: &str) -> Result<()> {
    if t.dim() != 1 {
        return Err(Error::runtime(format!(
            "{f}: Expected 1-D argument {arg}, but got {}-D",
            t.dim()
        )));
    }
    Ok(())
}

/// `outer` (CompositeImplicitAutograd): `self` as a column times `vec2`, with type promotion.
pub fn outer(self_: &Tensor, vec2: &Tensor) -> Result<Tensor> {
    check_1d(self_, "self", "outer")?;
    check_1d(vec2, "vec2", "outer")?;
    ops::mul_Tensor::call(&self_.reshape(&[self_.size(0)?, 1])?, vec2)
}

/// `outer.out`.
pub fn outer_out<'a>(self_: &Tensor, vec2: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    check_1d(self_, "self", "outer")?;
    check_1d(vec2, "vec2", "outer")?;
    ops::mul_out::call(&self_.reshape(&[self_.size(0)?, 1])?, vec2, out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// matmul, linear

/// `should_fold`: a batched operand against a matrix or vector becomes one mm when its batch
/// dims fold into rows without a copy.
fn should_fold(tensor1: &Tensor, tensor2: &Tensor) -> Result<bool> {
    let tensor1_larger = tensor1.dim() >= tensor2.dim();
    let t1 = if tensor1_larger {
        tensor1.clone()
    } else {
        tensor2.transpose(-2, -1)?
    };
    let dim_t1 = t1.dim();
    let dim_t2 = if tensor1_larger {
        tensor2.dim()
    } else {
        tensor1.dim()
    };
    if !(dim_t1 >= 3 && dim_t2 <= 2) {
        return Ok(false);
    }
    // Folding a 2-D @ N-D product would need the transposed result copied back.
    if tensor1.dim() == 2 {
        return Ok(false);
    }
    if t1.numel() == 0 {
        return Ok(true);
    }
    let (sizes, strides) = (t1.sizes(), t1.strides());
    Ok((0..dim_t1 - 2).all(|i| strides[i] == strides[i + 1] * sizes[i + 1]))
}

/// `_matmul_impl`, writing into `out` when given.
fn matmul_impl(out: Option<&Tensor>, tensor1: &Tensor, tensor2: &Tensor) -> Result<Tensor> {
    let (dim1, dim2) = (tensor1.dim(), tensor2.dim());
    if dim1 == 0 || dim2 == 0 {
        return Err(Error::runtime(format!(
            "both arguments to matmul need to be at least 1D, but they are {dim1}D and {dim2}D"
        )));
    }
    match (dim1, dim2, out) {
        (1, 1, None) => return ops::dot::call(tensor1, tensor2),
        (1, 1, Some(o)) => {
            ops::dot_out::call(tensor1, tensor2, o)?;
            return Ok(o.clone());
        }
        (2, 1, None) => return ops::mv::call(tensor1, tensor2),
        (2, 1, Some(o)) => {
            ops::mv_out::call(tensor1, tensor2, o)?;
            return Ok(o.clone());
        }
        (1, 2, None) => return ops::mm::call(&tensor1.unsqueeze(0)?, tensor2)?.squeeze_dim(0),
        (1, 2, Some(o)) => {
            ops::mm_out::call(&tensor1.unsqueeze(0)?, tensor2, o)?;
            // `squeeze_(0)`: `out` keeps its storage, now shaped as the vector.
            let (sizes, strides) = (o.sizes(), o.strides());
            o.as_strided_(&sizes[1..], &strides[1..], None)?;
            return Ok(o.clone());
        }
        (2, 2, None) => return ops::mm::call(tensor1, tensor2),
        (2, 2, Some(o)) => {
            ops::mm_out::call(tensor1, tensor2, o)?;
            return Ok(o.clone());
        }
        _ => {}
    }
    if should_fold(tensor1, tensor2)? {
        let transpose = dim2 > dim1;
        let t1 = if transpose {
            tensor2.transpose(-2, -1)?
        } else {
            tensor1.clone()
        };
        let t2 = if !transpose {
            tensor2.clone()
        } else if dim1 == 2 {
            tensor1.t()?
        } else {
            tensor1.clone()
        };
        let sizes1 = t1.sizes();
        let mut output_shape: Vec<i64> = sizes1[..sizes1.len() - 1].to_vec();
        let folded_dim1: i64 = output_shape.iter().product();
        let t2_is_matrix = t2.dim() == 2;
        if t2_is_matrix {
            output_shape.push(t2.size(1)?);
        }
        let t1_folded = t1.reshape(&[folded_dim1, sizes1[sizes1.len() - 1]])?;
        return match out {
            None => {
                if t2_is_matrix {
                    let output =
                        ops::_unsafe_view::call(&ops::mm::call(&t1_folded, &t2)?, &output_shape)?;
                    if transpose {
                        output.transpose(-2, -1)?.contiguous()
                    } else {
                        Ok(output)
                    }
                } else {
                    ops::_unsafe_view::call(&ops::mv::call(&t1_folded, &t2)?, &output_shape)
                }
            }
            Some(o) => {
                resize_output(o, &output_shape)?;
                let reshaped = if t2_is_matrix {
                    o.reshape(&[folded_dim1, t2.size(-1)?])?
                } else {
                    o.reshape(&[folded_dim1])?
                };
                if t2_is_matrix {
                    ops::mm_out::call(&t1_folded, &t2, &reshaped)?;
                } else {
                    ops::mv_out::call(&t1_folded, &t2, &reshaped)?;
                }
                if !reshaped.storage().is_alias_of(&o.storage()) {
                    o.copy_(&reshaped)?;
                }
                Ok(o.clone())
            }
        };
    }
    // Broadcast the batch dims and run bmm.
    let (s1, s2) = (tensor1.sizes(), tensor2.sizes());
    let n = if dim1 > 1 { s1[dim1 - 2] } else { 1 };
    let m1 = s1[dim1 - 1];
    let batch1 = &s1[..dim1.saturating_sub(2)];
    let m2 = if dim2 > 1 { s2[dim2 - 2] } else { s2[0] };
    let p = if dim2 > 1 { s2[dim2 - 1] } else { 1 };
    let batch2 = &s2[..dim2.saturating_sub(2)];
    let mut output_shape = crate::tensor_iterator::infer_size(batch1, batch2)?;
    let batch_product: i64 = output_shape.iter().product();
    let mut expand1 = output_shape.clone();
    expand1.extend([n, m1]);
    let tensor1_expanded = tensor1.expand(&expand1)?.reshape(&[batch_product, n, m1])?;
    let vector_rhs = dim2 == 1;
    let mut expand2 = output_shape.clone();
    if vector_rhs {
        expand2.push(m2);
    } else {
        expand2.extend([m2, p]);
    }
    let tensor2_expanded = if vector_rhs {
        tensor2
            .expand(&expand2)?
            .reshape(&[batch_product, m2])?
            .unsqueeze(2)?
    } else {
        tensor2.expand(&expand2)?.reshape(&[batch_product, m2, p])?
    };
    if dim1 > 1 {
        output_shape.push(n);
    }
    if dim2 > 1 {
        output_shape.push(p);
    }
    match out {
        None => {
            let mut product = ops::bmm::call(&tensor1_expanded, &tensor2_expanded)?;
            if vector_rhs {
                product = product.squeeze_dim(-1)?;
            }
            ops::_unsafe_view::call(&product, &output_shape)
        }
        Some(o) => {
            resize_output(o, &output_shape)?;
            let mut reshaped = o.reshape(&[batch_product, n, p])?;
            ops::bmm_out::call(&tensor1_expanded, &tensor2_expanded, &reshaped)?;
            if vector_rhs {
                reshaped = reshaped.squeeze_dim(-1)?;
            }
            if !reshaped.storage().is_alias_of(&o.storage()) {
                o.copy_(&reshaped.view(&output_shape)?)?;
            }
            Ok(o.clone())
        }
    }
}

/// `matmul` (CompositeImplicitAutograd).
pub fn matmul(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    matmul_impl(None, self_, other)
}

/// `matmul.out`.
pub fn matmul_out<'a>(self_: &Tensor, other: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    matmul_impl(Some(out), self_, other)?;
    Ok(out)
}

/// `_flatten_nd_linear`: the leading dims of `input` folded into rows for one addmm.
fn flatten_nd_linear(input: &Tensor, weight: &Tensor, bias: &Tensor) -> Result<Tensor> {
    let sizes = input.sizes();
    let (lead, last) = sizes.split_at(sizes.len() - 1);
    let flattened: i64 = lead.iter().product();
    let inp = input.reshape(&[flattened, last[0]])?;
    let result = ops::addmm::call(bias, &inp, &weight.t()?, &Scalar::Int(1), &Scalar::Int(1))?;
    let mut new_size = lead.to_vec();
    if weight.dim() == 2 {
        new_size.push(result.size(1)?);
    }
    result.view(&new_size)
}

/// `linear` (CompositeImplicitAutograd): `input @ weight.T + bias`, fused into addmm where
/// PyTorch fuses it.
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let (input_dim, weight_dim) = (input.dim(), weight.dim());
    if input_dim == 0 || weight_dim == 0 {
        return Err(Error::runtime(format!(
            "both arguments to linear need to be at least 1D, but they are {input_dim}D and \
             {weight_dim}D"
        )));
    }
    if let Some(bias) = bias {
        if input_dim == 2 {
            return ops::addmm::call(bias, input, &weight.t()?, &Scalar::Int(1), &Scalar::Int(1));
        }
        if input.is_contiguous() && (input_dim == 3 || bias.dim() == 1) {
            return flatten_nd_linear(input, weight, bias);
        }
    }
    let output = ops::matmul::call(input, &weight.t()?)?;
    match bias {
        Some(bias) => {
            output.add_(bias)?;
            Ok(output)
        }
        None => Ok(output),
    }
}

/// `linear.out`.
pub fn linear_out<'a>(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    if let (2, Some(bias)) = (input.dim(), bias) {
        ops::addmm_out::call(
            bias,
            input,
            &weight.t()?,
            &Scalar::Int(1),
            &Scalar::Int(1),
            out,
        )?;
        return Ok(out);
    }
    ops::matmul_out::call(input, &weight.t()?, out)?;
    if let Some(bias) = bias {
        out.add_(bias)?;
    }
    Ok(out)
}
