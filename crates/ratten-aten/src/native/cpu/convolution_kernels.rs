//! The CPU loops of `crate::native::convolution`: im2col / col2im over up to three spatial
//! dims and the products on the `gemm` crate.
//!
//! Note [Convolution as im2col + GEMM]: a convolution relates an "image" (the convolution's
//! input; the transposed convolution's output) to a "column side" (the convolution's output;
//! the transposed convolution's input). For one batch element and group, with
//! `kd = image channels per group * kernel elements` and `p` the column side's spatial size,
//! im2col lays the image out as a `kd x p` matrix whose column `q` holds the image elements
//! the kernel sees at output position `q` (zeros in the padding), and the weight of group `g`
//! is a `(column channels per group) x kd` matrix in both layouts (`(C_out, C_in/g, k..)` and,
//! transposed, `(C_in, C_out/g, k..)`). Three products cover forward and backward of both:
//! - [`im2col_gemm`]: `column side = W_g @ im2col(image)` (convolution; grad of the transposed
//!   convolution's input);
//! - [`gemm_col2im`]: `image = col2im(W_g^T @ column side)` (transposed convolution; grad of
//!   the convolution's input), col2im being im2col's adjoint (it sums overlapping windows);
//! - [`weight_grad`]: `W_g = sum over n of column side @ im2col(image)^T`.
//!
//! Spatial dims are padded to three with leading 1s, so conv1d, conv2d and conv3d share one
//! loop. Batch elements run in parallel when there are at least two (each with its own column
//! buffer, one GEMM thread each); a single batch element runs its GEMM on the threads. A
//! 1x1 kernel with unit stride and no padding reads the image itself as its columns.

use std::sync::Mutex;

use ratten_core::access::TensorAccess;
use ratten_core::{Error, Result, ScalarType};

use crate::tensor_iterator::get_num_threads;
use crate::tensor_iterator::parallel::{in_parallel_region, parallel_for};
use crate::Tensor;

/// The geometry of one convolution, spatial dims padded to three with leading 1s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvShape {
    pub batch: usize,
    pub groups: usize,
    /// Channels of the image side (all groups).
    pub img_c: usize,
    /// Channels of the column side (all groups).
    pub col_c: usize,
    /// Spatial sizes of the image side.
    pub img: [usize; 3],
    /// Spatial sizes of the column side.
    pub col: [usize; 3],
    pub kernel: [usize; 3],
    pub stride: [usize; 3],
    pub pad: [usize; 3],
    pub dilation: [usize; 3],
}

impl ConvShape {
    fn img_cg(&self) -> usize {
        self.img_c / self.groups
    }
    fn col_cg(&self) -> usize {
        self.col_c / self.groups
    }
    fn img_numel(&self) -> usize {
        self.img.iter().product()
    }
    fn col_numel(&self) -> usize {
        self.col.iter().product()
    }
    fn kernel_numel(&self) -> usize {
        self.kernel.iter().product()
    }
    /// Rows of the column matrix of one group.
    fn kd(&self) -> usize {
        self.img_cg() * self.kernel_numel()
    }
    /// Whether im2col is the identity (the columns are the image): a 1x1 kernel at stride 1
    /// without padding, and an image of the columns' size (a transposed convolution's
    /// `output_padding` makes the image larger; its extra elements take no column).
    fn is_pointwise(&self) -> bool {
        self.kernel == [1, 1, 1]
            && self.stride == [1, 1, 1]
            && self.pad == [0, 0, 0]
            && self.img == self.col
    }
}

/// Element types the loops run on (the front end computes half types in float).
pub trait ConvElement:
    ratten_core::dtype::PodElement + Copy + Default + Send + Sync + 'static
{
    fn one() -> Self;
    fn add(self, other: Self) -> Self;
}
impl ConvElement for f32 {
    fn one() -> Self {
        1.0
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
}
impl ConvElement for f64 {
    fn one() -> Self {
        1.0
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
}

/// A pointer shared with the workers of a parallel region.
#[derive(Clone, Copy)]
struct SyncPtr<T>(*mut T);
// SAFETY: the pointers are used by the workers of one parallel region while the access guard
// that produced them is held by the calling thread; each chunk writes the elements of its own
// batch elements only (or buffers of its own).
unsafe impl<T> Send for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    /// Through a method, so that a closure captures the wrapper, not its field.
    #[inline(always)]
    fn get(self) -> *mut T {
        self.0
    }
}

/// The range `[lo, hi)` of output positions `o` whose input position `o * stride + off`
/// lies in `[0, size)`, clamped to `[0, n)`.
#[inline(always)]
fn valid_range(n: usize, size: usize, stride: usize, off: isize) -> (usize, usize) {
    let s = stride as isize;
    let lo = if off >= 0 { 0 } else { ((-off) + s - 1) / s };
    let room = size as isize - off;
    let hi = if room <= 0 { 0 } else { (room + s - 1) / s };
    let lo = (lo as usize).min(n);
    let hi = (hi as usize).min(n).max(lo);
    (lo, hi)
}

/// im2col of one group's image (`channels x img`) into `cols` (`channels * kernel x col`).
fn im2col<T: ConvElement>(s: &ConvShape, channels: usize, src: &[T], cols: &mut [T]) {
    im2col_rows(s, channels, src, cols, 0, s.col[0] * s.col[1]);
}

/// im2col restricted to the column side's rows `[r0, r1)` (a row: one `(z, y)` pair, `ow`
/// positions), into `cols` of `channels * kernel x (r1 - r0) * ow`.
fn im2col_rows<T: ConvElement>(
    s: &ConvShape,
    channels: usize,
    src: &[T],
    cols: &mut [T],
    r0: usize,
    r1: usize,
) {
    let [id, ih, iw] = s.img;
    let [_, oh, ow] = s.col;
    let p = (r1 - r0) * ow;
    let zero = T::default();
    let mut row = 0;
    for c in 0..channels {
        let plane = &src[c * id * ih * iw..(c + 1) * id * ih * iw];
        for kz in 0..s.kernel[0] {
            for ky in 0..s.kernel[1] {
                for kx in 0..s.kernel[2] {
                    let dst = &mut cols[row * p..(row + 1) * p];
                    row += 1;
                    let off_z = (kz * s.dilation[0]) as isize - s.pad[0] as isize;
                    let off_y = (ky * s.dilation[1]) as isize - s.pad[1] as isize;
                    let off_x = (kx * s.dilation[2]) as isize - s.pad[2] as isize;
                    let (xlo, xhi) = valid_range(ow, iw, s.stride[2], off_x);
                    for r in r0..r1 {
                        let (oz, oy) = (r / oh, r % oh);
                        let iz = (oz * s.stride[0]) as isize + off_z;
                        {
                            let iy = (oy * s.stride[1]) as isize + off_y;
                            let seg = &mut dst[(r - r0) * ow..(r - r0 + 1) * ow];
                            if iz < 0 || iz >= id as isize || iy < 0 || iy >= ih as isize {
                                seg.fill(zero);
                                continue;
                            }
                            let base = (iz as usize * ih + iy as usize) * iw;
                            let line = &plane[base..base + iw];
                            seg[..xlo].fill(zero);
                            seg[xhi..].fill(zero);
                            if xhi > xlo {
                                let start = (xlo as isize * s.stride[2] as isize + off_x) as usize;
                                if s.stride[2] == 1 {
                                    seg[xlo..xhi].copy_from_slice(&line[start..start + xhi - xlo]);
                                } else {
                                    let st = s.stride[2];
                                    for (j, v) in seg[xlo..xhi].iter_mut().enumerate() {
                                        *v = line[start + j * st];
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// col2im, im2col's adjoint: adds each column element into the image element it was read
/// from (`dst` must hold the starting values, zeros for a plain col2im).
fn col2im<T: ConvElement>(s: &ConvShape, channels: usize, cols: &[T], dst: &mut [T]) {
    let [id, ih, iw] = s.img;
    let [od, oh, ow] = s.col;
    let p = od * oh * ow;
    let mut row = 0;
    for c in 0..channels {
        let plane = &mut dst[c * id * ih * iw..(c + 1) * id * ih * iw];
        for kz in 0..s.kernel[0] {
            for ky in 0..s.kernel[1] {
                for kx in 0..s.kernel[2] {
                    let src = &cols[row * p..(row + 1) * p];
                    row += 1;
                    let off_z = (kz * s.dilation[0]) as isize - s.pad[0] as isize;
                    let off_y = (ky * s.dilation[1]) as isize - s.pad[1] as isize;
                    let off_x = (kx * s.dilation[2]) as isize - s.pad[2] as isize;
                    let (xlo, xhi) = valid_range(ow, iw, s.stride[2], off_x);
                    if xhi <= xlo {
                        continue;
                    }
                    for oz in 0..od {
                        let iz = (oz * s.stride[0]) as isize + off_z;
                        if iz < 0 || iz >= id as isize {
                            continue;
                        }
                        for oy in 0..oh {
                            let iy = (oy * s.stride[1]) as isize + off_y;
                            if iy < 0 || iy >= ih as isize {
                                continue;
                            }
                            let seg = &src[(oz * oh + oy) * ow..(oz * oh + oy + 1) * ow];
                            let base = (iz as usize * ih + iy as usize) * iw;
                            let line = &mut plane[base..base + iw];
                            let start = (xlo as isize * s.stride[2] as isize + off_x) as usize;
                            let st = s.stride[2];
                            if st == 1 {
                                for (d, v) in line[start..start + xhi - xlo]
                                    .iter_mut()
                                    .zip(&seg[xlo..xhi])
                                {
                                    *d = d.add(*v);
                                }
                            } else {
                                for (j, v) in seg[xlo..xhi].iter().enumerate() {
                                    let d = &mut line[start + j * st];
                                    *d = d.add(*v);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One product `dst = (read_dst ? dst : 0) + lhs @ rhs` on the `gemm` crate, every operand
/// given as (pointer, row stride, column stride) in elements.
///
/// # Safety
/// The pointers must address `m x k`, `k x n` and `m x n` elements at the given strides,
/// `dst` must not overlap the other two nor itself, and nothing else may access `dst` during
/// the call.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_raw<T: ConvElement>(
    (m, n, k): (usize, usize, usize),
    dst: (*mut T, isize, isize),
    read_dst: bool,
    lhs: (*const T, isize, isize),
    rhs: (*const T, isize, isize),
    threads: usize,
) {
    let parallelism = if threads > 1 && m * n * k >= (1 << 18) {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    // SAFETY: the caller's contract; the crate computes `dst = alpha dst + beta lhs @ rhs`
    // (alpha = 1 read only when `read_dst`).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.0,
            dst.2,
            dst.1,
            read_dst,
            lhs.0,
            lhs.2,
            lhs.1,
            rhs.0,
            rhs.2,
            rhs.1,
            T::one(),
            T::one(),
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// The forward's column buffer, in elements: tiles of whole output rows stay within it, so
/// the columns a GEMM reads are still in cache from im2col.
const IM2COL_TILE: usize = 1 << 17;

/// How a batch is split: in parallel over batch elements (one GEMM thread each), or one
/// element at a time with the GEMM on all threads.
fn plan(batch: usize) -> (bool, usize) {
    let threads = if in_parallel_region() {
        1
    } else {
        get_num_threads()
    };
    if threads > 1 && batch >= 2 {
        (true, 1)
    } else {
        (false, threads)
    }
}

/// Runs `f(n, gemm_threads)` for every batch element as [`plan`] decides.
fn for_each_batch<F: Fn(usize, usize) + Sync>(batch: usize, f: F) -> Result<()> {
    let (par, threads) = plan(batch);
    if par {
        parallel_for(0, batch as i64, 1, |b, e| {
            for n in b..e {
                f(n as usize, 1);
            }
        })
    } else {
        for n in 0..batch {
            f(n, threads);
        }
        Ok(())
    }
}

/// `dtype` as the loops' element type, or torch's refusal naming `name`.
fn check_dtype(name: &str, dtype: ScalarType) -> Result<()> {
    match dtype {
        ScalarType::Float | ScalarType::Double => Ok(()),
        other => Err(Error::not_implemented(format!(
            "\"{name}\" not implemented for '{other}'"
        ))),
    }
}

/// `column side = W_g @ im2col(image) (+ bias)` for every batch element and group, into the
/// contiguous `colside`. `image`, `weight` and `bias` are contiguous, of `colside`'s dtype.
pub fn im2col_gemm(
    name: &str,
    s: &ConvShape,
    image: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    colside: &Tensor,
) -> Result<()> {
    check_dtype(name, colside.dtype())?;
    match colside.dtype() {
        ScalarType::Double => im2col_gemm_typed::<f64>(s, image, weight, bias, colside),
        _ => im2col_gemm_typed::<f32>(s, image, weight, bias, colside),
    }
}

fn im2col_gemm_typed<T: ConvElement>(
    s: &ConvShape,
    image: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    colside: &Tensor,
) -> Result<()> {
    let mut reads = vec![image.base(), weight.base()];
    if let Some(b) = bias {
        reads.push(b.base());
    }
    let mut g = TensorAccess::new(&reads, &[colside.base()])?;
    let img: &[T] = g.input_slice(0)?;
    let w: &[T] = g.input_slice(1)?;
    let b: Option<&[T]> = if bias.is_some() {
        Some(g.input_slice(2)?)
    } else {
        None
    };
    let (img, w, b) = (img.as_ptr(), w.as_ptr(), b.map(|b| b.as_ptr()));
    let out = g.output_slice_mut::<T>(0)?;
    let out_len = out.len();
    let out = SyncPtr(out.as_mut_ptr());
    let (img, w) = (SyncPtr(img as *mut T), SyncPtr(w as *mut T));
    let b = b.map(|p| SyncPtr(p as *mut T));
    let (icg, ccg, kd, p, ip) = (s.img_cg(), s.col_cg(), s.kd(), s.col_numel(), s.img_numel());
    debug_assert_eq!(out_len, s.batch * s.col_c * p);
    let pointwise = s.is_pointwise();
    let ow = s.col[2];
    let rows = s.col[0] * s.col[1];
    // Column tiles of whole rows that keep the buffer within IM2COL_TILE elements.
    let tile_rows = (IM2COL_TILE / (kd * ow).max(1)).clamp(1, rows.max(1));
    for_each_batch(s.batch, |n, threads| {
        let mut cols = if pointwise {
            Vec::new()
        } else {
            vec![T::default(); kd * tile_rows * ow]
        };
        for grp in 0..s.groups {
            // SAFETY: the guard holds the image, weight and bias shared and the output
            // exclusively; they are contiguous with the sizes `s` describes (checked by the
            // front end), so these offsets stay in bounds, and each batch element's output
            // block is written by one chunk only.
            unsafe {
                let img_ng = img.get().add((n * s.img_c + grp * icg) * ip) as *const T;
                let out_ng = out.get().add((n * s.col_c + grp * ccg) * p);
                let w_g = w.get().add(grp * ccg * kd) as *const T;
                if let Some(b) = b {
                    let out_blk = std::slice::from_raw_parts_mut(out_ng, ccg * p);
                    for c in 0..ccg {
                        let v = *b.get().add(grp * ccg + c);
                        out_blk[c * p..(c + 1) * p].fill(v);
                    }
                }
                if pointwise {
                    gemm_raw(
                        (ccg, p, kd),
                        (out_ng, p as isize, 1),
                        b.is_some(),
                        (w_g, kd as isize, 1),
                        (img_ng, p as isize, 1),
                        threads,
                    );
                    continue;
                }
                let src = std::slice::from_raw_parts(img_ng, icg * ip);
                let mut r0 = 0;
                while r0 < rows {
                    let r1 = (r0 + tile_rows).min(rows);
                    let q = (r1 - r0) * ow;
                    im2col_rows(s, icg, src, &mut cols[..kd * q], r0, r1);
                    gemm_raw(
                        (ccg, q, kd),
                        (out_ng.add(r0 * ow), p as isize, 1),
                        b.is_some(),
                        (w_g, kd as isize, 1),
                        (cols.as_ptr(), q as isize, 1),
                        threads,
                    );
                    r0 = r1;
                }
            }
        }
    })
}

/// `image = col2im(W_g^T @ column side) (+ bias)` for every batch element and group, into
/// the contiguous `image`. Operands contiguous, of `image`'s dtype.
pub fn gemm_col2im(
    name: &str,
    s: &ConvShape,
    colside: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    image: &Tensor,
) -> Result<()> {
    check_dtype(name, image.dtype())?;
    match image.dtype() {
        ScalarType::Double => gemm_col2im_typed::<f64>(s, colside, weight, bias, image),
        _ => gemm_col2im_typed::<f32>(s, colside, weight, bias, image),
    }
}

fn gemm_col2im_typed<T: ConvElement>(
    s: &ConvShape,
    colside: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    image: &Tensor,
) -> Result<()> {
    let mut reads = vec![colside.base(), weight.base()];
    if let Some(b) = bias {
        reads.push(b.base());
    }
    let mut g = TensorAccess::new(&reads, &[image.base()])?;
    let src = SyncPtr(g.input_slice::<T>(0)?.as_ptr() as *mut T);
    let w = SyncPtr(g.input_slice::<T>(1)?.as_ptr() as *mut T);
    let b = if bias.is_some() {
        Some(SyncPtr(g.input_slice::<T>(2)?.as_ptr() as *mut T))
    } else {
        None
    };
    let out = SyncPtr(g.output_slice_mut::<T>(0)?.as_mut_ptr());
    let (icg, ccg, kd, p, ip) = (s.img_cg(), s.col_cg(), s.kd(), s.col_numel(), s.img_numel());
    let pointwise = s.is_pointwise();
    for_each_batch(s.batch, |n, threads| {
        let mut cols = if pointwise {
            Vec::new()
        } else {
            vec![T::default(); kd * p]
        };
        for grp in 0..s.groups {
            // SAFETY: as in `im2col_gemm_typed`: contiguous operands of the sizes `s`
            // describes, the guard held, each batch element's image block written by one
            // chunk only.
            unsafe {
                let src_ng = src.get().add((n * s.col_c + grp * ccg) * p) as *const T;
                let img_ng = out.get().add((n * s.img_c + grp * icg) * ip);
                let w_g = w.get().add(grp * ccg * kd) as *const T;
                if pointwise {
                    gemm_raw(
                        (kd, p, ccg),
                        (img_ng, p as isize, 1),
                        false,
                        (w_g, 1, kd as isize),
                        (src_ng, p as isize, 1),
                        threads,
                    );
                } else {
                    gemm_raw(
                        (kd, p, ccg),
                        (cols.as_mut_ptr(), p as isize, 1),
                        false,
                        (w_g, 1, kd as isize),
                        (src_ng, p as isize, 1),
                        threads,
                    );
                    let dst = std::slice::from_raw_parts_mut(img_ng, icg * ip);
                    dst.fill(T::default());
                    col2im(s, icg, &cols, dst);
                }
                if let Some(b) = b {
                    let dst = std::slice::from_raw_parts_mut(img_ng, icg * ip);
                    for c in 0..icg {
                        let v = *b.get().add(grp * icg + c);
                        for x in &mut dst[c * ip..(c + 1) * ip] {
                            *x = x.add(v);
                        }
                    }
                }
            }
        }
    })
}

/// `W_g = sum over n of column side[n, g] @ im2col(image[n, g])^T`, into the contiguous
/// `grad_weight` (`col_c x kd` per group). Operands contiguous, of `grad_weight`'s dtype.
pub fn weight_grad(
    name: &str,
    s: &ConvShape,
    colside: &Tensor,
    image: &Tensor,
    grad_weight: &Tensor,
) -> Result<()> {
    check_dtype(name, grad_weight.dtype())?;
    match grad_weight.dtype() {
        ScalarType::Double => weight_grad_typed::<f64>(s, colside, image, grad_weight),
        _ => weight_grad_typed::<f32>(s, colside, image, grad_weight),
    }
}

fn weight_grad_typed<T: ConvElement>(
    s: &ConvShape,
    colside: &Tensor,
    image: &Tensor,
    grad_weight: &Tensor,
) -> Result<()> {
    let mut g = TensorAccess::new(&[colside.base(), image.base()], &[grad_weight.base()])?;
    let src = SyncPtr(g.input_slice::<T>(0)?.as_ptr() as *mut T);
    let img = SyncPtr(g.input_slice::<T>(1)?.as_ptr() as *mut T);
    let gw = g.output_slice_mut::<T>(0)?;
    gw.fill(T::default());
    let (icg, ccg, kd, p, ip) = (s.img_cg(), s.col_cg(), s.kd(), s.col_numel(), s.img_numel());
    let wlen = s.col_c * kd;
    let pointwise = s.is_pointwise();
    // Accumulates batch elements [b, e) into `acc` (`col_c x kd`, read when `read`).
    let accumulate = |b: usize, e: usize, acc: *mut T, mut read: bool, threads: usize| {
        let mut cols = if pointwise {
            Vec::new()
        } else {
            vec![T::default(); kd * p]
        };
        for n in b..e {
            for grp in 0..s.groups {
                // SAFETY: contiguous operands of the sizes `s` describes, under the guard;
                // `acc` is this chunk's own accumulator (or the output, when serial).
                unsafe {
                    let src_ng = src.get().add((n * s.col_c + grp * ccg) * p) as *const T;
                    let img_ng = img.get().add((n * s.img_c + grp * icg) * ip) as *const T;
                    let rhs = if pointwise {
                        img_ng
                    } else {
                        im2col(
                            s,
                            icg,
                            std::slice::from_raw_parts(img_ng, icg * ip),
                            &mut cols,
                        );
                        cols.as_ptr()
                    };
                    gemm_raw(
                        (ccg, kd, p),
                        (acc.add(grp * ccg * kd), kd as isize, 1),
                        read,
                        (src_ng, p as isize, 1),
                        (rhs, 1, p as isize),
                        threads,
                    );
                }
            }
            read = true;
        }
    };
    let (par, threads) = plan(s.batch);
    if !par {
        accumulate(0, s.batch, gw.as_mut_ptr(), false, threads);
        return Ok(());
    }
    // One accumulator per chunk of the batch, summed at the end.
    let partial: Mutex<Vec<Vec<T>>> = Mutex::new(Vec::new());
    let nthreads = get_num_threads().min(s.batch);
    let per = s.batch.div_ceil(nthreads);
    parallel_for(0, nthreads as i64, 1, |b, e| {
        for t in b..e {
            let (lo, hi) = (t as usize * per, ((t as usize + 1) * per).min(s.batch));
            if lo >= hi {
                continue;
            }
            let mut acc = vec![T::default(); wlen];
            accumulate(lo, hi, acc.as_mut_ptr(), false, 1);
            partial.lock().unwrap_or_else(|e| e.into_inner()).push(acc);
        }
    })?;
    for acc in partial.into_inner().unwrap_or_else(|e| e.into_inner()) {
        for (d, v) in gw.iter_mut().zip(&acc) {
            *d = d.add(*v);
        }
    }
    Ok(())
}
