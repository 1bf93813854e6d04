//! The pooling loops of `crate::native::pooling` (ATen's MaxPoolKernel.cpp, AvgPoolKernel.cpp,
//! AdaptiveAvgPoolKernel.cpp, AdaptiveMaxPoolKernel.cpp, contiguous layout): one plane (an
//! `(n, c)` pair) at a time, planes split over threads. Every tensor reaching them is
//! contiguous; half types are computed in float by the front end. im2col and col2im live in
//! `convolution_kernels.rs`.

use ratten_core::access::TensorAccess;
use ratten_core::{Error, Result, ScalarType};

use crate::tensor_iterator::parallel::parallel_for;
use crate::tensor_iterator::GRAIN_SIZE;
use crate::Tensor;

/// Element types the pooling loops run on.
pub trait PoolElement:
    ratten_core::dtype::PodElement + Copy + Default + PartialOrd + Send + Sync + 'static
{
    fn neg_infinity() -> Self;
    fn is_nan(self) -> bool;
    fn add(self, other: Self) -> Self;
    fn div_i64(self, d: i64) -> Self;
}

macro_rules! pool_element {
    ($($t:ty),*) => {$(impl PoolElement for $t {
        fn neg_infinity() -> Self {
            <$t>::NEG_INFINITY
        }
        #[inline(always)]
        fn is_nan(self) -> bool {
            <$t>::is_nan(self)
        }
        #[inline(always)]
        fn add(self, other: Self) -> Self {
            self + other
        }
        #[inline(always)]
        fn div_i64(self, d: i64) -> Self {
            self / d as $t
        }
    })*};
}
pool_element!(f32, f64);

macro_rules! int_pool_element {
    ($($t:ty),*) => {$(impl PoolElement for $t {
        fn neg_infinity() -> Self {
            <$t>::MIN
        }
        #[inline(always)]
        fn is_nan(self) -> bool {
            false
        }
        #[inline(always)]
        fn add(self, other: Self) -> Self {
            self.wrapping_add(other)
        }
        #[inline(always)]
        fn div_i64(self, d: i64) -> Self {
            (self as i64 / d) as $t
        }
    })*};
}
int_pool_element!(i64, i32, i16, i8, u8);

/// A pointer shared with the workers of a parallel region.
#[derive(Clone, Copy)]
struct SyncPtr<T>(*mut T);
// SAFETY: used by the workers of one parallel region while the caller holds the access guard
// that produced it; each plane's output is written by the chunk that owns the plane only.
unsafe impl<T> Send for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SyncPtr<T> {}
impl<T> SyncPtr<T> {
    #[inline(always)]
    fn get(self) -> *mut T {
        self.0
    }
}

/// The 2-D pooling window parameters.
#[derive(Clone, Copy, Debug)]
pub struct Pool2d {
    pub kh: i64,
    pub kw: i64,
    pub dh: i64,
    pub dw: i64,
    pub pad_h: i64,
    pub pad_w: i64,
    pub dil_h: i64,
    pub dil_w: i64,
}

/// Sizes of one plane pair: input `ih x iw`, output `oh x ow`.
#[derive(Clone, Copy, Debug)]
pub struct Planes {
    pub planes: usize,
    pub ih: usize,
    pub iw: usize,
    pub oh: usize,
    pub ow: usize,
}

fn not_implemented(name: &str, dtype: ScalarType) -> Error {
    Error::not_implemented(format!("\"{name}\" not implemented for '{dtype}'"))
}

/// Runs `f(plane)` for every plane, split over threads by the work per plane.
fn for_each_plane<F: Fn(usize) + Sync>(planes: usize, work: usize, f: F) -> Result<()> {
    let grain = (GRAIN_SIZE as usize / work.max(1)).max(1);
    parallel_for(0, planes as i64, grain as i64, |b, e| {
        for p in b..e {
            f(p as usize);
        }
    })
}

/// Calls `f::<T>` for the loops' element type of `dtype`, or gives torch's refusal naming
/// `name`.
macro_rules! typed {
    ($name:expr, $dtype:expr, $f:ident, $($args:expr),*) => {
        match $dtype {
            ScalarType::Float => $f::<f32>($($args),*),
            ScalarType::Double => $f::<f64>($($args),*),
            other => Err(not_implemented($name, other)),
        }
    };
}

/// [`typed!`] over the floating types and every integer type (max pooling).
macro_rules! typed_all {
    ($name:expr, $dtype:expr, $f:ident, $($args:expr),*) => {
        match $dtype {
            ScalarType::Float => $f::<f32>($($args),*),
            ScalarType::Double => $f::<f64>($($args),*),
            ScalarType::Long => $f::<i64>($($args),*),
            ScalarType::Int => $f::<i32>($($args),*),
            ScalarType::Short => $f::<i16>($($args),*),
            ScalarType::Char => $f::<i8>($($args),*),
            ScalarType::Byte => $f::<u8>($($args),*),
            other => Err(not_implemented($name, other)),
        }
    };
}

/// [`typed!`] over the floating types and int64 (avg pooling).
macro_rules! typed_long {
    ($name:expr, $dtype:expr, $f:ident, $($args:expr),*) => {
        match $dtype {
            ScalarType::Float => $f::<f32>($($args),*),
            ScalarType::Double => $f::<f64>($($args),*),
            ScalarType::Long => $f::<i64>($($args),*),
            other => Err(not_implemented($name, other)),
        }
    };
}

/// max_pool2d: values and flat `h * iw + w` indices of each window's maximum (NaN wins).
pub fn max_pool2d_kernel(
    input: &Tensor,
    out: &Tensor,
    indices: &Tensor,
    sz: Planes,
    p: Pool2d,
) -> Result<()> {
    typed_all!(
        "max_pool2d",
        input.dtype(),
        max_pool2d_typed,
        input,
        out,
        indices,
        sz,
        p
    )
}

fn max_pool2d_typed<T: PoolElement>(
    input: &Tensor,
    out: &Tensor,
    indices: &Tensor,
    sz: Planes,
    p: Pool2d,
) -> Result<()> {
    let mut g = TensorAccess::new(&[input.base()], &[out.base(), indices.base()])?;
    let src = SyncPtr(g.input_slice::<T>(0)?.as_ptr() as *mut T);
    let dst = SyncPtr(g.output_slice_mut::<T>(0)?.as_mut_ptr());
    let ind = SyncPtr(g.output_slice_mut::<i64>(1)?.as_mut_ptr());
    let (ih, iw, oh, ow) = (sz.ih as i64, sz.iw as i64, sz.oh, sz.ow);
    let work = oh * ow * (p.kh * p.kw) as usize;
    for_each_plane(sz.planes, work, |plane| {
        // SAFETY: the guard holds the input shared and both outputs exclusively; they are
        // contiguous with `planes` planes of the given sizes, so each plane's slices are in
        // bounds, and each plane is written by one chunk only.
        let (x, y, yi) = unsafe {
            (
                std::slice::from_raw_parts(src.get().add(plane * sz.ih * sz.iw), sz.ih * sz.iw),
                std::slice::from_raw_parts_mut(dst.get().add(plane * oh * ow), oh * ow),
                std::slice::from_raw_parts_mut(ind.get().add(plane * oh * ow), oh * ow),
            )
        };
        for oy in 0..oh {
            let mut h0 = oy as i64 * p.dh - p.pad_h;
            let h1 = (h0 + (p.kh - 1) * p.dil_h + 1).min(ih);
            while h0 < 0 {
                h0 += p.dil_h;
            }
            for ox in 0..ow {
                let mut w0 = ox as i64 * p.dw - p.pad_w;
                let w1 = (w0 + (p.kw - 1) * p.dil_w + 1).min(iw);
                while w0 < 0 {
                    w0 += p.dil_w;
                }
                let mut best = T::neg_infinity();
                let mut best_i = h0 * iw + w0;
                let mut h = h0;
                while h < h1 {
                    let mut w = w0;
                    while w < w1 {
                        let i = h * iw + w;
                        let v = x[i as usize];
                        if v > best || v.is_nan() {
                            best = v;
                            best_i = i;
                        }
                        w += p.dil_w;
                    }
                    h += p.dil_h;
                }
                y[oy * ow + ox] = best;
                yi[oy * ow + ox] = best_i;
            }
        }
    })
}

/// The backward of max_pool2d and adaptive_max_pool2d: each output gradient added to the
/// input element its index names. An index outside the plane (what torch's forward gives a
/// window with no tap inside the input, dilation stepping over it) adds nothing, as in
/// torch.
pub fn max_pool_backward_kernel(
    name: &str,
    grad_output: &Tensor,
    indices: &Tensor,
    grad_input: &Tensor,
    sz: Planes,
) -> Result<()> {
    typed!(
        name,
        grad_output.dtype(),
        max_pool_backward_typed,
        grad_output,
        indices,
        grad_input,
        sz
    )
}

fn max_pool_backward_typed<T: PoolElement>(
    grad_output: &Tensor,
    indices: &Tensor,
    grad_input: &Tensor,
    sz: Planes,
) -> Result<()> {
    let mut g = TensorAccess::new(&[grad_output.base(), indices.base()], &[grad_input.base()])?;
    let plane_in = sz.ih * sz.iw;
    let plane_out = sz.oh * sz.ow;
    let idx = SyncPtr(g.input_slice::<i64>(1)?.as_ptr() as *mut i64);
    let go = SyncPtr(g.input_slice::<T>(0)?.as_ptr() as *mut T);
    let gi = g.output_slice_mut::<T>(0)?;
    gi.fill(T::default());
    let gi = SyncPtr(gi.as_mut_ptr());
    for_each_plane(sz.planes, plane_out, |plane| {
        // SAFETY: contiguous operands of `planes` planes under the guard; each grad_input
        // plane is written by one chunk only.
        let (gop, ip, gip) = unsafe {
            (
                std::slice::from_raw_parts(go.get().add(plane * plane_out), plane_out),
                std::slice::from_raw_parts(idx.get().add(plane * plane_out), plane_out),
                std::slice::from_raw_parts_mut(gi.get().add(plane * plane_in), plane_in),
            )
        };
        for (v, &i) in gop.iter().zip(ip) {
            if let Some(d) = usize::try_from(i).ok().and_then(|i| gip.get_mut(i)) {
                *d = d.add(*v);
            }
        }
    })
}

/// avg_pool2d's options.
#[derive(Clone, Copy, Debug)]
pub struct AvgOptions {
    pub count_include_pad: bool,
    pub divisor_override: Option<i64>,
}

/// The window of output `(oy, ox)` clipped to the input, and its divisor (torch's
/// `avg_pool2d` kernel); `None` for a window entirely in the padding.
#[inline(always)]
fn avg_window(
    oy: usize,
    ox: usize,
    sz: &Planes,
    p: &Pool2d,
    o: &AvgOptions,
) -> Option<(usize, usize, usize, usize, i64)> {
    let (ih, iw) = (sz.ih as i64, sz.iw as i64);
    let mut h0 = oy as i64 * p.dh - p.pad_h;
    let mut w0 = ox as i64 * p.dw - p.pad_w;
    let mut h1 = (h0 + p.kh).min(ih + p.pad_h);
    let mut w1 = (w0 + p.kw).min(iw + p.pad_w);
    let pool_size = (h1 - h0) * (w1 - w0);
    h0 = h0.max(0);
    w0 = w0.max(0);
    h1 = h1.min(ih);
    w1 = w1.min(iw);
    if h0 >= h1 || w0 >= w1 {
        return None;
    }
    let divide = match o.divisor_override {
        Some(d) => d,
        None if o.count_include_pad => pool_size,
        None => (h1 - h0) * (w1 - w0),
    };
    Some((h0 as usize, h1 as usize, w0 as usize, w1 as usize, divide))
}

/// avg_pool2d.
pub fn avg_pool2d_kernel(
    input: &Tensor,
    out: &Tensor,
    sz: Planes,
    p: Pool2d,
    o: AvgOptions,
) -> Result<()> {
    typed_long!(
        "avg_pool2d",
        input.dtype(),
        avg_pool2d_typed,
        input,
        out,
        sz,
        p,
        o
    )
}

fn avg_pool2d_typed<T: PoolElement>(
    input: &Tensor,
    out: &Tensor,
    sz: Planes,
    p: Pool2d,
    o: AvgOptions,
) -> Result<()> {
    let mut g = TensorAccess::new(&[input.base()], &[out.base()])?;
    let src = SyncPtr(g.input_slice::<T>(0)?.as_ptr() as *mut T);
    let dst = SyncPtr(g.output_slice_mut::<T>(0)?.as_mut_ptr());
    let (pi, po) = (sz.ih * sz.iw, sz.oh * sz.ow);
    for_each_plane(sz.planes, po * (p.kh * p.kw) as usize, |plane| {
        // SAFETY: as in `max_pool2d_typed`.
        let (x, y) = unsafe {
            (
                std::slice::from_raw_parts(src.get().add(plane * pi), pi),
                std::slice::from_raw_parts_mut(dst.get().add(plane * po), po),
            )
        };
        for oy in 0..sz.oh {
            for ox in 0..sz.ow {
                y[oy * sz.ow + ox] = match avg_window(oy, ox, &sz, &p, &o) {
                    None => T::default(),
                    Some((h0, h1, w0, w1, div)) => {
                        let mut sum = T::default();
                        for h in h0..h1 {
                            for v in &x[h * sz.iw + w0..h * sz.iw + w1] {
                                sum = sum.add(*v);
                            }
                        }
                        sum.div_i64(div)
                    }
                };
            }
        }
    })
}

/// avg_pool2d_backward: each output gradient spread evenly over its window.
pub fn avg_pool2d_backward_kernel(
    grad_output: &Tensor,
    grad_input: &Tensor,
    sz: Planes,
    p: Pool2d,
    o: AvgOptions,
) -> Result<()> {
    typed_long!(
        "avg_pool2d_backward_out_frame",
        grad_output.dtype(),
        avg_pool2d_backward_typed,
        grad_output,
        grad_input,
        sz,
        p,
        o
    )
}

fn avg_pool2d_backward_typed<T: PoolElement>(
    grad_output: &Tensor,
    grad_input: &Tensor,
    sz: Planes,
    p: Pool2d,
    o: AvgOptions,
) -> Result<()> {
    let mut g = TensorAccess::new(&[grad_output.base()], &[grad_input.base()])?;
    let src = SyncPtr(g.input_slice::<T>(0)?.as_ptr() as *mut T);
    let dst = g.output_slice_mut::<T>(0)?;
    dst.fill(T::default());
    let dst = SyncPtr(dst.as_mut_ptr());
    let (pi, po) = (sz.ih * sz.iw, sz.oh * sz.ow);
    for_each_plane(sz.planes, po * (p.kh * p.kw) as usize, |plane| {
        // SAFETY: as in `max_pool2d_typed`.
        let (go, gi) = unsafe {
            (
                std::slice::from_raw_parts(src.get().add(plane * po), po),
                std::slice::from_raw_parts_mut(dst.get().add(plane * pi), pi),
            )
        };
        for oy in 0..sz.oh {
            for ox in 0..sz.ow {
                if let Some((h0, h1, w0, w1, div)) = avg_window(oy, ox, &sz, &p, &o) {
                    let v = go[oy * sz.ow + ox].div_i64(div);
                    for h in h0..h1 {
                        for d in &mut gi[h * sz.iw + w0..h * sz.iw + w1] {
                            *d = d.add(v);
                        }
                    }
                }
            }
        }
    })
}

/// `start_index` / `end_index` of adaptive pooling: output `a` of `b` over `c` inputs
/// covers `[floor(a c / b), ceil((a + 1) c / b))`.
#[inline(always)]
fn adaptive_range(a: usize, b: usize, c: usize) -> (usize, usize) {
    let start = (a * c) / b;
    let end = ((a + 1) * c).div_ceil(b);
    (start, end)
}

/// adaptive_avg_pool2d.
pub fn adaptive_avg_pool2d_kernel(input: &Tensor, out: &Tensor, sz: Planes) -> Result<()> {
    typed!(
        "adaptive_avg_pool2d",
        input.dtype(),
        adaptive_avg_pool2d_typed,
        input,
        out,
        sz
    )
}

fn adaptive_avg_pool2d_typed<T: PoolElement>(
    input: &Tensor,
    out: &Tensor,
    sz: Planes,
) -> Result<()> {
    let mut g = TensorAccess::new(&[input.base()], &[out.base()])?;
    let src = SyncPtr(g.input_slice::<T>(0)?.as_ptr() as *mut T);
    let dst = SyncPtr(g.output_slice_mut::<T>(0)?.as_mut_ptr());
    let (pi, po) = (sz.ih * sz.iw, sz.oh * sz.ow);
    for_each_plane(sz.planes, pi.max(po), |plane| {
        // SAFETY: as in `max_pool2d_typed`.
        let (x, y) = unsafe {
            (
                std::slice::from_raw_parts(src.get().add(plane * pi), pi),
                std::slice::from_raw_parts_mut(dst.get().add(plane * po), po),
            )
        };
        for oy in 0..sz.oh {
            let (h0, h1) = adaptive_range(oy, sz.oh, sz.ih);
            for ox in 0..sz.ow {
                let (w0, w1) = adaptive_range(ox, sz.ow, sz.iw);
                let mut sum = T::default();
                for h in h0..h1 {
                    for v in &x[h * sz.iw + w0..h * sz.iw + w1] {
                        sum = sum.add(*v);
                    }
                }
                y[oy * sz.ow + ox] = sum.div_i64(((h1 - h0) * (w1 - w0)) as i64);
            }
        }
    })
}

/// adaptive_avg_pool2d's backward.
pub fn adaptive_avg_pool2d_backward_kernel(
    grad_output: &Tensor,
    grad_input: &Tensor,
    sz: Planes,
) -> Result<()> {
    typed!(
        "adaptive_avg_pool2d_backward_cpu",
        grad_output.dtype(),
        adaptive_avg_pool2d_backward_typed,
        grad_output,
        grad_input,
        sz
    )
}

fn adaptive_avg_pool2d_backward_typed<T: PoolElement>(
    grad_output: &Tensor,
    grad_input: &Tensor,
    sz: Planes,
) -> Result<()> {
    let mut g = TensorAccess::new(&[grad_output.base()], &[grad_input.base()])?;
    let src = SyncPtr(g.input_slice::<T>(0)?.as_ptr() as *mut T);
    let dst = g.output_slice_mut::<T>(0)?;
    dst.fill(T::default());
    let dst = SyncPtr(dst.as_mut_ptr());
    let (pi, po) = (sz.ih * sz.iw, sz.oh * sz.ow);
    for_each_plane(sz.planes, pi.max(po), |plane| {
        // SAFETY: as in `max_pool2d_typed`.
        let (go, gi) = unsafe {
            (
                std::slice::from_raw_parts(src.get().add(plane * po), po),
                std::slice::from_raw_parts_mut(dst.get().add(plane * pi), pi),
            )
        };
        for oy in 0..sz.oh {
            let (h0, h1) = adaptive_range(oy, sz.oh, sz.ih);
            for ox in 0..sz.ow {
                let (w0, w1) = adaptive_range(ox, sz.ow, sz.iw);
                let v = go[oy * sz.ow + ox].div_i64(((h1 - h0) * (w1 - w0)) as i64);
                for h in h0..h1 {
                    for d in &mut gi[h * sz.iw + w0..h * sz.iw + w1] {
                        *d = d.add(v);
                    }
                }
            }
        }
    })
}

/// adaptive_max_pool2d: values and flat indices of each window's maximum (NaN wins).
pub fn adaptive_max_pool2d_kernel(
    input: &Tensor,
    out: &Tensor,
    indices: &Tensor,
    sz: Planes,
) -> Result<()> {
    typed!(
        "adaptive_max_pool2d",
        input.dtype(),
        adaptive_max_pool2d_typed,
        input,
        out,
        indices,
        sz
    )
}

fn adaptive_max_pool2d_typed<T: PoolElement>(
    input: &Tensor,
    out: &Tensor,
    indices: &Tensor,
    sz: Planes,
) -> Result<()> {
    let mut g = TensorAccess::new(&[input.base()], &[out.base(), indices.base()])?;
    let src = SyncPtr(g.input_slice::<T>(0)?.as_ptr() as *mut T);
    let dst = SyncPtr(g.output_slice_mut::<T>(0)?.as_mut_ptr());
    let ind = SyncPtr(g.output_slice_mut::<i64>(1)?.as_mut_ptr());
    let (pi, po) = (sz.ih * sz.iw, sz.oh * sz.ow);
    for_each_plane(sz.planes, pi.max(po), |plane| {
        // SAFETY: as in `max_pool2d_typed`.
        let (x, y, yi) = unsafe {
            (
                std::slice::from_raw_parts(src.get().add(plane * pi), pi),
                std::slice::from_raw_parts_mut(dst.get().add(plane * po), po),
                std::slice::from_raw_parts_mut(ind.get().add(plane * po), po),
            )
        };
        for oy in 0..sz.oh {
            let (h0, h1) = adaptive_range(oy, sz.oh, sz.ih);
            for ox in 0..sz.ow {
                let (w0, w1) = adaptive_range(ox, sz.ow, sz.iw);
                let mut best = T::neg_infinity();
                let mut best_i = h0 * sz.iw + w0;
                for h in h0..h1 {
                    for w in w0..w1 {
                        let v = x[h * sz.iw + w];
                        if v > best || v.is_nan() {
                            best = v;
                            best_i = h * sz.iw + w;
                        }
                    }
                }
                y[oy * sz.ow + ox] = best;
                yi[oy * sz.ow + ox] = best_i as i64;
            }
        }
    })
}
