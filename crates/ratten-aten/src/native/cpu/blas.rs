//! The matrix-product seam (ATen's `cpublas::gemm` and `dot_impl`): every matrix product
//! (mm, addmm, bmm, baddbmm, addmv, and through them matmul, linear, ...) ends in [`gemm`],
//! every inner product in [`dot`].
//!
//! Note [GEMM backend]: float32, float64, float16, complex64 and complex128 run on the `gemm`
//! crate (packed, cache-blocked micro-kernels chosen at run time for AVX2 / AVX-512 / NEON),
//! which reads any row and column strides, so transposed and sliced operands are never copied.
//! Measured beside `faer` and `matrixmultiply` on float32 (python/bench/bench_matmul.py
//! compares with torch), it was the fastest of the three at every size. Its threads are
//! rayon's: a product runs on `get_num_threads()` of them, or on the calling thread alone
//! inside a parallel region (bmm over batches). bfloat16 is computed in float32 and rounded
//! once, as torch's kernels accumulate it. Integer dtypes (which BLAS lacks; torch loops too)
//! run a row-by-row loop that the compiler vectorises, with wrapping arithmetic as C++'s.

use half::f16;
use ratten_core::access::TensorAccess;
use ratten_core::allocator::{Allocator, CpuAllocator};
use ratten_core::dtype::{c128, c64};
use ratten_core::{Error, Result, Scalar, ScalarType};

use crate::tensor_iterator::get_num_threads;
use crate::tensor_iterator::overlap::is_non_overlapping_and_dense;
use crate::tensor_iterator::parallel::{in_parallel_region, parallel_for};
use crate::Tensor;

/// Products below this many multiply-adds stay on the calling thread: waking workers costs
/// more than they save.
const PARALLEL_MIN_FLOPS: usize = 1 << 18;

/// The `AT_DISPATCH` refusal of a dtype the product has no kernel for.
fn not_implemented(name: &str, dtype: ScalarType) -> Error {
    Error::not_implemented(format!("\"{name}\" not implemented for '{dtype}'"))
}

/// `c = beta * c + alpha * (a @ b)` for 2-D `a` (m x k), `b` (k x n) and `c` (m x n) of one
/// dtype, any strides. `c` is not read when `beta` is 0 (its NaNs do not propagate); `k` may
/// be 0. `c` may share storage with `a` or `b`: the product is then formed aside first.
pub fn gemm(c: &Tensor, a: &Tensor, b: &Tensor, alpha: &Scalar, beta: &Scalar) -> Result<()> {
    let (_, m, k, n) = product_dims("gemm", c, a, b, 2)?;
    if c.numel() == 0 || c.is_meta() {
        return Ok(());
    }
    let beta_zero = beta.to_complex_double()? == c128::new(0.0, 0.0);
    let storage = c.storage();
    let aliased = storage.is_alias_of(&a.storage()) || storage.is_alias_of(&b.storage());
    if aliased || !is_non_overlapping_and_dense(&c.sizes(), &c.strides()) {
        let tmp = Tensor::empty(&[m, n], (c.dtype(), c.device()))?;
        if !beta_zero {
            tmp.copy_(c)?;
        }
        gemm(&tmp, a, b, alpha, beta)?;
        c.copy_(&tmp)?;
        return Ok(());
    }
    let dims = (m as usize, n as usize, k as usize);
    let read_c = !beta_zero;
    match c.dtype() {
        ScalarType::Float => gemm_crate::<f32>(c, a, b, dims, alpha.to()?, beta.to()?, read_c),
        ScalarType::Double => gemm_crate::<f64>(c, a, b, dims, alpha.to()?, beta.to()?, read_c),
        ScalarType::Half => gemm_crate::<f16>(c, a, b, dims, alpha.to()?, beta.to()?, read_c),
        ScalarType::ComplexFloat => {
            gemm_crate::<c64>(c, a, b, dims, alpha.to()?, beta.to()?, read_c)
        }
        ScalarType::ComplexDouble => {
            gemm_crate::<c128>(c, a, b, dims, alpha.to()?, beta.to()?, read_c)
        }
        ScalarType::BFloat16 => {
            let f = |t: &Tensor| t.to_dtype(ScalarType::Float);
            let c32 = if beta_zero {
                Tensor::empty(&[m, n], (ScalarType::Float, c.device()))?
            } else {
                f(c)?
            };
            gemm(&c32, &f(a)?, &f(b)?, alpha, beta)?;
            c.copy_(&c32)?;
            Ok(())
        }
        ScalarType::Byte => gemm_integer::<u8>(c, a, b, dims, alpha, beta, read_c),
        ScalarType::Char => gemm_integer::<i8>(c, a, b, dims, alpha, beta, read_c),
        ScalarType::Short => gemm_integer::<i16>(c, a, b, dims, alpha, beta, read_c),
        ScalarType::Int => gemm_integer::<i32>(c, a, b, dims, alpha, beta, read_c),
        ScalarType::Long => gemm_integer::<i64>(c, a, b, dims, alpha, beta, read_c),
        other => Err(not_implemented("addmm_impl_cpu_", other)),
    }
}

/// The element types the `gemm` crate multiplies.
trait GemmElement:
    ratten_core::dtype::Element
    + Copy
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + 'static
{
}
impl GemmElement for f32 {}
impl GemmElement for f64 {}
impl GemmElement for f16 {}
impl GemmElement for c64 {}
impl GemmElement for c128 {}

/// The (batches, m, k, n) of `c = a @ b` over operands of `dim` dims (2, or 3 with the batch
/// first; batches is 1 for 2) and one dtype, or the error naming the seam.
fn product_dims(
    seam: &str,
    c: &Tensor,
    a: &Tensor,
    b: &Tensor,
    dim: usize,
) -> Result<(i64, i64, i64, i64)> {
    let fits = [a, b, c].iter().all(|t| t.dim() == dim)
        && {
            let (sa, sb, sc) = (a.sizes(), b.sizes(), c.sizes());
            let batch = dim - 2;
            sa[..batch] == sb[..batch]
                && sa[..batch] == sc[..batch]
                && sa[batch + 1] == sb[batch]
                && sc[batch] == sa[batch]
                && sc[batch + 1] == sb[batch + 1]
        }
        && a.dtype() == c.dtype()
        && b.dtype() == c.dtype();
    if !fits {
        return Err(Error::runtime(format!(
            "{seam}: operands do not fit: {:?} @ {:?} into {:?}",
            a.sizes(),
            b.sizes(),
            c.sizes()
        )));
    }
    let sa = a.sizes();
    let batches = if dim == 3 { sa[0] } else { 1 };
    Ok((batches, sa[dim - 2], sa[dim - 1], b.sizes()[dim - 1]))
}

/// One product on the `gemm` crate (Note [GEMM backend]).
#[allow(clippy::too_many_arguments)]
fn gemm_crate<T: GemmElement>(
    c: &Tensor,
    a: &Tensor,
    b: &Tensor,
    (m, n, k): (usize, usize, usize),
    alpha: T,
    beta: T,
    read_c: bool,
) -> Result<()> {
    let g = TensorAccess::new(&[a.base(), b.base()], &[c.base()])?;
    let (ga, gb, gc) = (g.input(0)?, g.input(1)?, g.output(0)?);
    let operands = Operands {
        a: (ga.data_ptr::<T>()?, ga.strides()[0], ga.strides()[1]),
        b: (gb.data_ptr::<T>()?, gb.strides()[0], gb.strides()[1]),
        c: (gc.data_ptr_mut::<T>()?, gc.strides()[0], gc.strides()[1]),
    };
    let threads = if in_parallel_region() || m * n * k < PARALLEL_MIN_FLOPS {
        1
    } else {
        get_num_threads()
    };
    if threads > 1 && m * n * k < SPLIT_MAX_FLOPS {
        // SAFETY: as below.
        return unsafe { split_product(&operands, (m, n, k), alpha, beta, read_c, threads) };
    }
    // SAFETY: the guard holds `a` and `b` shared and `c` exclusively for the call; the three
    // views were bounds-checked for their sizes and strides when made and the sizes were
    // checked against (m, n, k) by the caller, which also made sure `c` neither shares
    // storage with `a` or `b` nor overlaps itself.
    unsafe { operands.run((m, n, k), alpha, beta, read_c, threads) };
    Ok(())
}

/// Below this many multiply-adds a product on several threads is split by us, into one block
/// of rows (or columns) of `c` per thread: the crate's own split works in cache-sized blocks
/// and leaves a thread idle when the product fits in one (measured by
/// python/bench/bench_matmul.py: mm 256 and the 64x784x256 layer ran no faster on 2 threads).
const SPLIT_MAX_FLOPS: usize = 1 << 26;

/// `c = beta * c + alpha * a @ b` as `threads` products over the blocks of the longer of c's
/// rows and columns, side by side.
///
/// # Safety
/// `operands` must satisfy [`Operands::run`]'s contract for the (m, n, k) product.
unsafe fn split_product<T: GemmElement>(
    operands: &Operands<T>,
    (m, n, k): (usize, usize, usize),
    alpha: T,
    beta: T,
    read_c: bool,
    threads: usize,
) -> Result<()> {
    let by_rows = m >= n;
    let len = if by_rows { m } else { n };
    // Blocks of whole micro-tiles (a multiple of 16 rows or columns) where the length allows.
    let block = len.div_ceil(threads).next_multiple_of(16).min(len).max(1);
    let parts = len.div_ceil(block);
    // The row strides of `a` and `c`, the column strides of `b` and `c`.
    let (a_row, c_row, b_col, c_col) = (operands.a.1, operands.c.1, operands.b.2, operands.c.2);
    parallel_for(0, parts as i64, 1, |lo, hi| {
        for part in lo as usize..hi as usize {
            let start = part * block;
            let size = block.min(len - start);
            let off = start as i64;
            let (sub, dims) = if by_rows {
                (operands.offset(off * a_row, 0, off * c_row), (size, n, k))
            } else {
                (operands.offset(0, off * b_col, off * c_col), (m, size, k))
            };
            // SAFETY: `operands` satisfies `run`'s contract for the whole product (this
            // function's contract); a block of rows of `a` and `c` (or columns of `b` and `c`) lies
            // inside those matrices, and the blocks of `c` are disjoint, one per task.
            unsafe { sub.run(dims, alpha, beta, read_c, 1) };
        }
    })
}

/// The base pointers and (row, column) strides of one product's operands.
struct Operands<T> {
    a: (*const T, i64, i64),
    b: (*const T, i64, i64),
    c: (*mut T, i64, i64),
}

// SAFETY: `Operands` is addresses and strides; what may be read or written through them, and
// from which thread, is the contract of `run`, which its callers uphold.
unsafe impl<T> Send for Operands<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Operands<T> {}

impl<T> Operands<T> {
    /// The operands of a sub-product (a block of rows or columns, or one batch): each base
    /// moved by its own number of elements, the strides kept. The addresses are computed with
    /// wrapping arithmetic; they are used only under `run`'s contract.
    fn offset(&self, a: i64, b: i64, c: i64) -> Operands<T> {
        Operands {
            a: (self.a.0.wrapping_offset(a as isize), self.a.1, self.a.2),
            b: (self.b.0.wrapping_offset(b as isize), self.b.1, self.b.2),
            c: (self.c.0.wrapping_offset(c as isize), self.c.1, self.c.2),
        }
    }
}

// Note [Operand layouts in the gemm crate]
// The crate computes column-major: given a row-major `c` it multiplies the transposes
// instead (c^T = b^T a^T), so its left operand is then b^T. It packs its left operand
// cheaply when that operand is contiguous down its columns, and otherwise gathers it
// element by element; its right operand is read in place when contiguous along k, and
// gathered into panels otherwise. A weight used transposed (linear: `x @ w.t()`) is
// contiguous along k in both operands. The crate's route then gathers all of `w` (n x k),
// costing 10% at the 64x784x256 layer on one thread and more on two. Formed column-major
// in a scratch block instead, the product gathers only `x` (m x k) and then transposes the
// m x n result into `c`. For products of few rows (SCRATCH_MAX_ROWS) `Operands::run` takes
// whichever route moves fewer elements.

/// The crate's gather of its left operand (n x k) weighs against a product of m x n x k only
/// for few rows m: on float32 with k = 784 and n = 256 (python/bench/bench_matmul.py's
/// layer), forming the product aside was 10-40% faster up to 128 rows and tied at 256; it was
/// slower at 512 rows (512 x 2048 x 2048), where the crate packs for more rows per gather.
const SCRATCH_MAX_ROWS: usize = 128;

impl<T: GemmElement> Operands<T> {
    /// `c = beta * c + alpha * a @ b` (`c` unread unless `read_c`) on `threads` of rayon's
    /// threads.
    ///
    /// # Safety
    /// The pointers must address live (m x k), (k x n) and (m x n) matrices with these
    /// strides, `c`'s elements distinct from each other and from `a`'s and `b`'s, and no
    /// other access to `c` may run during the call.
    unsafe fn run(
        &self,
        (m, n, k): (usize, usize, usize),
        alpha: T,
        beta: T,
        read_c: bool,
        threads: usize,
    ) {
        if self.moves_less_through_scratch((m, n, k), read_c) {
            // Without memory for the scratch block the crate's own route still works.
            let scratch = CpuAllocator.allocate(m * n * std::mem::size_of::<T>()).ok();
            if let Some(tmp) = scratch.as_ref().and_then(|block| block.get()) {
                let tmp = tmp.as_ptr().cast::<T>();
                let column_major = Operands {
                    a: self.a,
                    b: self.b,
                    c: (tmp, 1, m as i64),
                };
                // SAFETY: the scratch block holds m x n elements (allocated above, aligned
                // for any element type), distinct from `a` and `b`, and owned by this call.
                // Its column-major layout is the crate's own: this call takes the crate's
                // route.
                unsafe { column_major.run((m, n, k), alpha, beta, false, threads) };
                // SAFETY: the crate wrote every element of the scratch block (`read_dst`
                // false); `c`'s elements are distinct and this call's alone (the contract).
                unsafe { self.transpose_into_c(tmp, (m, n), beta, read_c) };
                return;
            }
        }
        let parallelism = if threads > 1 {
            gemm::Parallelism::Rayon(threads)
        } else {
            gemm::Parallelism::None
        };
        let ((ap, ars, acs), (bp, brs, bcs), (cp, crs, ccs)) = (self.a, self.b, self.c);
        // SAFETY: the caller's contract. The crate computes `dst = alpha * dst + beta * lhs @
        // rhs`: torch's beta is its alpha and torch's alpha its beta; `read_dst` false leaves
        // `dst` unread; the crate writes each element of `dst` once.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                cp,
                ccs as isize,
                crs as isize,
                read_c,
                ap,
                acs as isize,
                ars as isize,
                bp,
                bcs as isize,
                brs as isize,
                beta,
                alpha,
                false,
                false,
                false,
                parallelism,
            );
        }
    }

    /// Whether forming the product column-major in a scratch block, then transposing it into
    /// `c`, gathers fewer elements than the crate's route for this `c` (Note [Operand
    /// layouts in the gemm crate]).
    fn moves_less_through_scratch(&self, (m, n, k): (usize, usize, usize), read_c: bool) -> bool {
        let ((_, a_rs, a_cs), (_, b_rs, b_cs), (_, c_rs, c_cs)) = (self.a, self.b, self.c);
        // A column-oriented `c` is the crate's own layout: no transposes are multiplied.
        // Small products take the crate's kernels that pack nothing (vector products, dot
        // products of a few rows), which this count does not describe.
        if c_cs.abs() >= c_rs.abs() || m * n * k < PARALLEL_MIN_FLOPS || m > SCRATCH_MAX_ROWS {
            return false;
        }
        let gathered = |strided: bool, elements: usize| if strided { elements } else { 0 };
        // Row-major `c`: the crate's left operand is b^T, its right a^T.
        let crate_route = gathered(b_cs != 1, n * k) + gathered(a_cs != 1, m * k);
        let scratch_route = gathered(a_rs != 1, m * k)
            + gathered(b_rs != 1, n * k)
            + m * n * if read_c { 2 } else { 1 };
        scratch_route < crate_route
    }

    /// `c = beta * c + tmp^T` (`c` unread unless `read_c`), `tmp` column-major m x n.
    ///
    /// # Safety
    /// `tmp` must address m x n initialised elements that nothing writes meanwhile; `c` as in
    /// [`Operands::run`].
    unsafe fn transpose_into_c(
        &self,
        tmp: *const T,
        (m, n): (usize, usize),
        beta: T,
        read_c: bool,
    ) {
        let (c, c_rs, c_cs) = self.c;
        // Blocks of rows, so that the columns of `tmp` they read stay in cache.
        const BLOCK: usize = 16;
        for i0 in (0..m).step_by(BLOCK) {
            for j in 0..n {
                for i in i0..(i0 + BLOCK).min(m) {
                    // SAFETY: i < m and j < n index inside both matrices (the contract).
                    unsafe {
                        let value = *tmp.add(j * m + i);
                        let out = c.wrapping_offset(
                            i as isize * c_rs as isize + j as isize * c_cs as isize,
                        );
                        *out = if read_c { beta * *out + value } else { value };
                    }
                }
            }
        }
    }
}

/// `c[i] = beta * c[i] + alpha * (a[i] @ b[i])` for 3-D `a` (B x m x k), `b` (B x k x n) and
/// `c` (B x m x n) of one dtype, any strides (bmm and baddbmm). Small products on the `gemm`
/// crate run side by side, one batch per thread, under one access guard; large ones one
/// after another, each on all threads. Other cases (integers, bfloat16, an output that
/// overlaps itself or an input) take [`gemm`] batch by batch.
pub fn gemm_batched(
    c: &Tensor,
    a: &Tensor,
    b: &Tensor,
    alpha: &Scalar,
    beta: &Scalar,
) -> Result<()> {
    let (batches, m, k, n) = product_dims("gemm_batched", c, a, b, 3)?;
    if c.numel() == 0 || c.is_meta() {
        return Ok(());
    }
    let storage = c.storage();
    let separate = !storage.is_alias_of(&a.storage())
        && !storage.is_alias_of(&b.storage())
        && is_non_overlapping_and_dense(&c.sizes(), &c.strides());
    let dims = (m as usize, n as usize, k as usize);
    let read_c = beta.to_complex_double()? != c128::new(0.0, 0.0);
    macro_rules! batched {
        ($t:ty) => {
            gemm_crate_batched::<$t>(c, a, b, dims, alpha.to()?, beta.to()?, read_c)
        };
    }
    match c.dtype() {
        ScalarType::Float if separate => batched!(f32),
        ScalarType::Double if separate => batched!(f64),
        ScalarType::Half if separate => batched!(f16),
        ScalarType::ComplexFloat if separate => batched!(c64),
        ScalarType::ComplexDouble if separate => batched!(c128),
        _ => (0..batches).try_for_each(|i| {
            gemm(
                &c.select(0, i)?,
                &a.select(0, i)?,
                &b.select(0, i)?,
                alpha,
                beta,
            )
        }),
    }
}

/// [`gemm_batched`] on the `gemm` crate.
fn gemm_crate_batched<T: GemmElement>(
    c: &Tensor,
    a: &Tensor,
    b: &Tensor,
    (m, n, k): (usize, usize, usize),
    alpha: T,
    beta: T,
    read_c: bool,
) -> Result<()> {
    let g = TensorAccess::new(&[a.base(), b.base()], &[c.base()])?;
    let (ga, gb, gc) = (g.input(0)?, g.input(1)?, g.output(0)?);
    let (ast, bst, cst) = (ga.strides(), gb.strides(), gc.strides());
    let first = Operands {
        a: (ga.data_ptr::<T>()?, ast[1], ast[2]),
        b: (gb.data_ptr::<T>()?, bst[1], bst[2]),
        c: (gc.data_ptr_mut::<T>()?, cst[1], cst[2]),
    };
    let batches = c.size(0)?;
    // Batch `i` of each operand, within the guarded views.
    let operands = |i: i64| first.offset(i * ast[0], i * bst[0], i * cst[0]);
    let small = m * n * k < PARALLEL_MIN_FLOPS;
    if small && batches > 1 && !in_parallel_region() {
        // Enough batches per task that waking a thread pays off.
        let grain = (PARALLEL_MIN_FLOPS / (m * n * k).max(1)).max(1) as i64;
        return parallel_for(0, batches, grain, |lo, hi| {
            for i in lo..hi {
                // SAFETY: batch `i` of each guarded view lies inside it (bounds-checked with
                // its sizes and strides when the view was made); `c` overlaps neither itself
                // nor `a` / `b` (checked by the caller), so its batches are disjoint and each
                // task writes only its own.
                unsafe { operands(i).run((m, n, k), alpha, beta, read_c, 1) };
            }
        });
    }
    let threads = if small || in_parallel_region() {
        1
    } else {
        get_num_threads()
    };
    for i in 0..batches {
        // SAFETY: as above; one batch at a time.
        unsafe { operands(i).run((m, n, k), alpha, beta, read_c, threads) };
    }
    Ok(())
}

/// Integer element types: wrapping multiply-add, as C++'s arithmetic in torch's loops.
trait IntElement: ratten_core::dtype::Element + ratten_core::scalar::ScalarConvert + Copy {
    fn mul_add(self, a: Self, b: Self) -> Self;
    fn zero() -> Self;
}

macro_rules! int_element {
    ($($t:ty),*) => {$(impl IntElement for $t {
        #[inline(always)]
        fn mul_add(self, a: Self, b: Self) -> Self {
            self.wrapping_add(a.wrapping_mul(b))
        }
        fn zero() -> Self {
            0
        }
    })*};
}
int_element!(u8, i8, i16, i32, i64);

/// Integer products: for each row of `a`, the rows of `b` scaled and summed (a loop over
/// contiguous rows, which the compiler vectorises).
fn gemm_integer<T: IntElement>(
    c: &Tensor,
    a: &Tensor,
    b: &Tensor,
    (m, n, k): (usize, usize, usize),
    alpha: &Scalar,
    beta: &Scalar,
    read_c: bool,
) -> Result<()> {
    let (alpha, beta): (T, T) = (alpha.to()?, beta.to()?);
    let av = a.contiguous()?.to_vec::<T>()?;
    let bv = b.contiguous()?.to_vec::<T>()?;
    let mut out = if read_c {
        c.contiguous()?.to_vec::<T>()?
    } else {
        vec![T::zero(); m * n]
    };
    let mut acc = vec![T::zero(); n];
    for i in 0..m {
        acc.fill(T::zero());
        for p in 0..k {
            let aip = av[i * k + p];
            for (s, &bv) in acc.iter_mut().zip(&bv[p * n..(p + 1) * n]) {
                *s = s.mul_add(aip, bv);
            }
        }
        for (o, &s) in out[i * n..(i + 1) * n].iter_mut().zip(&acc) {
            let scaled = T::zero().mul_add(alpha, s);
            *o = if read_c {
                scaled.mul_add(beta, *o)
            } else {
                scaled
            };
        }
    }
    c.copy_(&Tensor::from_vec(out, &[m as i64, n as i64])?)?;
    Ok(())
}

/// `dot_impl` / `vdot_impl`: the 0-dim sum of `conj(a[i]) * b[i]` (conjugated only when
/// `conj_a`) over 1-D `a` and `b` of one dtype and length. float32 and float64 accumulate in
/// eight lanes of their own type (as BLAS's dot does), float16 and bfloat16 in float32 (torch's
/// `dot_with_fp32_arith`), integers with wrapping arithmetic.
pub fn dot(a: &Tensor, b: &Tensor, conj_a: bool) -> Result<Tensor> {
    let dtype = a.dtype();
    let out = Tensor::empty(&[], (dtype, a.device()))?;
    if a.is_meta() {
        return Ok(out);
    }
    let value: Scalar = match dtype {
        ScalarType::Float => Scalar::from(with_slices(a, b, dot_lanes::<f32>)? as f64),
        ScalarType::Double => Scalar::from(with_slices(a, b, dot_lanes::<f64>)?),
        ScalarType::Half | ScalarType::BFloat16 => {
            let f = |t: &Tensor| t.to_dtype(ScalarType::Float);
            let v = with_slices(&f(a)?, &f(b)?, dot_lanes::<f32>)?;
            // Rounded once to the element type, as the float sum is stored.
            return out.fill_(Scalar::from(v as f64)).cloned();
        }
        ScalarType::ComplexFloat => Scalar::from(with_slices(a, b, |x: &[c64], y| {
            x.iter().zip(y).fold(c64::new(0.0, 0.0), |s, (&p, &q)| {
                s + if conj_a { p.conj() } else { p } * q
            })
        })?),
        ScalarType::ComplexDouble => Scalar::from(with_slices(a, b, |x: &[c128], y| {
            x.iter().zip(y).fold(c128::new(0.0, 0.0), |s, (&p, &q)| {
                s + if conj_a { p.conj() } else { p } * q
            })
        })?),
        ScalarType::Byte => Scalar::from(with_slices(a, b, dot_integer::<u8>)? as i64),
        ScalarType::Char => Scalar::from(with_slices(a, b, dot_integer::<i8>)? as i64),
        ScalarType::Short => Scalar::from(with_slices(a, b, dot_integer::<i16>)? as i64),
        ScalarType::Int => Scalar::from(with_slices(a, b, dot_integer::<i32>)? as i64),
        ScalarType::Long => Scalar::from(with_slices(a, b, dot_integer::<i64>)?),
        other => return Err(not_implemented(if conj_a { "vdot" } else { "dot" }, other)),
    };
    out.fill_(value)?;
    Ok(out)
}

/// Runs `f` on the elements of `a` and `b` as slices (contiguous copies of strided ones).
fn with_slices<T: ratten_core::dtype::PodElement, R>(
    a: &Tensor,
    b: &Tensor,
    f: impl FnOnce(&[T], &[T]) -> R,
) -> Result<R> {
    let (a, b) = (a.contiguous()?, b.contiguous()?);
    let g = TensorAccess::new(&[a.base(), b.base()], &[])?;
    Ok(f(g.input_slice::<T>(0)?, g.input_slice::<T>(1)?))
}

/// A sum of products in eight independent lanes (vectorised), the lanes then added in order.
fn dot_lanes<T>(x: &[T], y: &[T]) -> T
where
    T: num_traits::Float,
{
    let mut lanes = [T::zero(); 8];
    let (xc, yc) = (x.chunks_exact(8), y.chunks_exact(8));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (p, q) in xc.zip(yc) {
        for l in 0..8 {
            lanes[l] = lanes[l] + p[l] * q[l];
        }
    }
    let mut sum = lanes.iter().fold(T::zero(), |s, &l| s + l);
    for (&p, &q) in xr.iter().zip(yr) {
        sum = sum + p * q;
    }
    sum
}

fn dot_integer<T: IntElement>(x: &[T], y: &[T]) -> T {
    x.iter()
        .zip(y)
        .fold(T::zero(), |s, (&p, &q)| s.mul_add(p, q))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operands of a product with these (row, column) strides; the addresses are never
    /// read.
    fn layout(a: (i64, i64), b: (i64, i64), c: (i64, i64)) -> Operands<f32> {
        Operands {
            a: (std::ptr::null(), a.0, a.1),
            b: (std::ptr::null(), b.0, b.1),
            c: (std::ptr::null_mut(), c.0, c.1),
        }
    }

    #[test]
    fn only_a_product_of_few_rows_with_a_transposed_weight_goes_through_scratch() {
        let (m, k, n) = (64, 784, 256);
        let linear = layout((k as i64, 1), (1, k as i64), (n as i64, 1));
        assert!(linear.moves_less_through_scratch((m, n, k), false));
        assert!(linear.moves_less_through_scratch((m, n, k), true));
        // A row-major weight is read by the crate without a gather.
        let row_major = layout((k as i64, 1), (n as i64, 1), (n as i64, 1));
        assert!(!row_major.moves_less_through_scratch((m, n, k), false));
        // Many rows amortise the gather; a small product packs nothing.
        assert!(!linear.moves_less_through_scratch((512, n, k), false));
        assert!(!linear.moves_less_through_scratch((4, 8, 16), false));
        // A column-major output is the crate's own layout.
        let column_major_c = layout((k as i64, 1), (1, k as i64), (1, m as i64));
        assert!(!column_major_c.moves_less_through_scratch((m, n, k), false));
        // The weight gradient of linear (`g.t() @ x`): the crate's route gathers less.
        let grad_w = layout((1, 128), (2048, 1), (2048, 1));
        assert!(!grad_w.moves_less_through_scratch((128, 2048, 512), false));
    }
}
