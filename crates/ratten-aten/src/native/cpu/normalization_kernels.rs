//! The CPU loops of `crate::native::normalization`: layer_norm's rows (ATen's
//! `layer_norm_kernel.cpp`) and batch_norm's channels (`batch_norm_kernel.cpp`), over contiguous
//! float32 / float64 data. Statistics accumulate in float64 whatever the element type (torch
//! accumulates float32 in float32), so results agree with torch's to the element type's rounding.
//! The front end checks the arguments and allocates; these loops only read slices and fill
//! buffers.

use ratten_core::PodElement;

use crate::native::cpu::elements::Elem;

/// An element type the normalization loops run on (float32, float64).
pub trait NormElem: Elem + PodElement {}
impl NormElem for f32 {}
impl NormElem for f64 {}

/// `1 / sqrt(max(var, 0) + eps)`, torch's `rstd` of layer_norm.
#[inline]
fn rstd_of(var: f64, eps: f64) -> f64 {
    1.0 / (var.max(0.0) + eps).sqrt()
}

/// The mean and biased variance of `row` (two passes: the second over the centred values).
#[inline]
fn moments<T: NormElem>(row: &[T]) -> (f64, f64) {
    let n = row.len() as f64;
    let mean = row.iter().map(|v| v.to_f64()).sum::<f64>() / n;
    let var = row
        .iter()
        .map(|v| {
            let d = v.to_f64() - mean;
            d * d
        })
        .sum::<f64>()
        / n;
    (mean, var)
}

/// layer_norm's forward over `m` rows of `n` elements: `y = (x - mean) * rstd * gamma + beta`
/// per row; returns each row's mean and rstd.
pub fn layer_norm_rows<T: NormElem>(
    x: &[T],
    gamma: Option<&[T]>,
    beta: Option<&[T]>,
    n: usize,
    eps: f64,
    y: &mut [T],
) -> (Vec<f64>, Vec<f64>) {
    let m = x.len().checked_div(n).unwrap_or(0);
    let mut means = Vec::with_capacity(m);
    let mut rstds = Vec::with_capacity(m);
    for (xr, yr) in x
        .chunks_exact(n.max(1))
        .zip(y.chunks_exact_mut(n.max(1)))
        .take(m)
    {
        let (mean, var) = moments(xr);
        let rstd = rstd_of(var, eps);
        for (j, (o, v)) in yr.iter_mut().zip(xr).enumerate() {
            let mut r = (v.to_f64() - mean) * rstd;
            if let Some(g) = gamma {
                r *= g[j].to_f64();
            }
            if let Some(b) = beta {
                r += b[j].to_f64();
            }
            *o = T::from_f64(r);
        }
        means.push(mean);
        rstds.push(rstd);
    }
    (means, rstds)
}

/// layer_norm's backward (`LayerNormBackwardKernelImplInternal`): per row,
/// `dx = rstd * dy * gamma + b * x + c` with `ds = sum(dy * gamma * x)`,
/// `db = sum(dy * gamma)`, `b = (db * mean - ds) * rstd^3 / n`, `c = -b * mean - db * rstd / n`;
/// `dgamma = sum over rows of dy * (x - mean) * rstd`, `dbeta = sum over rows of dy`.
/// Returns `dx` (when asked, `m * n`), `dgamma` and `dbeta` (`n` each, when asked).
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_backward_rows<T: NormElem>(
    dy: &[T],
    x: &[T],
    mean: &[T],
    rstd: &[T],
    gamma: Option<&[T]>,
    n: usize,
    mask: [bool; 3],
) -> (Vec<T>, Vec<f64>, Vec<f64>) {
    let m = mean.len();
    let mut dx = Vec::with_capacity(if mask[0] { m * n } else { 0 });
    let mut dgamma = vec![0.0f64; if mask[1] { n } else { 0 }];
    let mut dbeta = vec![0.0f64; if mask[2] { n } else { 0 }];
    let g = |j: usize| gamma.map_or(1.0, |g| g[j].to_f64());
    for i in 0..m {
        let xr = &x[i * n..(i + 1) * n];
        let dyr = &dy[i * n..(i + 1) * n];
        let mu = mean[i].to_f64();
        let rs = rstd[i].to_f64();
        if mask[1] {
            for (j, (d, v)) in dyr.iter().zip(xr).enumerate() {
                dgamma[j] += d.to_f64() * (v.to_f64() - mu) * rs;
            }
        }
        if mask[2] {
            for (j, d) in dyr.iter().enumerate() {
                dbeta[j] += d.to_f64();
            }
        }
        if mask[0] {
            let mut ds = 0.0;
            let mut db = 0.0;
            for (j, (d, v)) in dyr.iter().zip(xr).enumerate() {
                let dg = d.to_f64() * g(j);
                ds += dg * v.to_f64();
                db += dg;
            }
            let scale = 1.0 / n as f64;
            let b = (db * mu - ds) * rs * rs * rs * scale;
            let c = -b * mu - db * rs * scale;
            for (j, (d, v)) in dyr.iter().zip(xr).enumerate() {
                dx.push(T::from_f64(rs * d.to_f64() * g(j) + b * v.to_f64() + c));
            }
        }
    }
    (dx, dgamma, dbeta)
}

/// The geometry of a contiguous batch_norm input `(N, C, *)`: `outer` = N, `channels` = C,
/// `inner` = the product of the trailing sizes.
#[derive(Clone, Copy, Debug)]
pub struct ChannelGeometry {
    pub outer: usize,
    pub channels: usize,
    pub inner: usize,
}

impl ChannelGeometry {
    /// Calls `f(offset, len)` for each contiguous run of channel `c`.
    #[inline]
    fn runs(&self, c: usize, mut f: impl FnMut(usize)) {
        for o in 0..self.outer {
            f((o * self.channels + c) * self.inner);
        }
    }
}

/// batch_norm's training statistics per channel (`batch_norm_cpu_collect_stats`): the mean and
/// the sum of squared deviations from it.
pub fn batch_norm_collect_stats<T: NormElem>(
    x: &[T],
    geo: ChannelGeometry,
) -> (Vec<f64>, Vec<f64>) {
    let count = (geo.outer * geo.inner) as f64;
    let mut means = Vec::with_capacity(geo.channels);
    let mut var_sums = Vec::with_capacity(geo.channels);
    for c in 0..geo.channels {
        let mut sum = 0.0;
        geo.runs(c, |off| {
            sum += x[off..off + geo.inner]
                .iter()
                .map(|v| v.to_f64())
                .sum::<f64>();
        });
        let mean = sum / count;
        let mut var_sum = 0.0;
        geo.runs(c, |off| {
            var_sum += x[off..off + geo.inner]
                .iter()
                .map(|v| {
                    let d = v.to_f64() - mean;
                    d * d
                })
                .sum::<f64>();
        });
        means.push(mean);
        var_sums.push(var_sum);
    }
    (means, var_sums)
}

/// batch_norm's transform (`batch_norm_cpu_transform_input`): `y = (x - mean) * invstd * w + b`
/// per channel.
pub fn batch_norm_transform<T: NormElem>(
    x: &[T],
    geo: ChannelGeometry,
    mean: &[f64],
    invstd: &[f64],
    weight: Option<&[T]>,
    bias: Option<&[T]>,
    y: &mut [T],
) {
    for c in 0..geo.channels {
        let w = weight.map_or(1.0, |w| w[c].to_f64());
        let b = bias.map_or(0.0, |b| b[c].to_f64());
        // alpha * x + beta, as torch's contiguous kernel folds it.
        let alpha = invstd[c] * w;
        let beta = b - mean[c] * alpha;
        geo.runs(c, |off| {
            for (o, v) in y[off..off + geo.inner]
                .iter_mut()
                .zip(&x[off..off + geo.inner])
            {
                *o = T::from_f64(v.to_f64() * alpha + beta);
            }
        });
    }
}

/// batch_norm's backward per channel (`batch_norm_backward_cpu_template`): with
/// `dotp = sum((x - mean) * dy)` and `sum = sum(dy)`, training:
/// `dx = (dy - sum / n - (x - mean) * dotp * invstd^2 / n) * invstd * w`; evaluation:
/// `dx = dy * invstd * w`; `dweight = dotp * invstd`, `dbias = sum`. `dx` is written into
/// `grad_input` when given.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_backward_channels<T: NormElem>(
    dy: &[T],
    x: &[T],
    geo: ChannelGeometry,
    mean: &[f64],
    invstd: &[f64],
    weight: Option<&[T]>,
    train: bool,
    mut grad_input: Option<&mut [T]>,
) -> (Vec<f64>, Vec<f64>) {
    let n = (geo.outer * geo.inner) as f64;
    let mut dweight = Vec::with_capacity(geo.channels);
    let mut dbias = Vec::with_capacity(geo.channels);
    for c in 0..geo.channels {
        let w = weight.map_or(1.0, |w| w[c].to_f64());
        let (mu, is) = (mean[c], invstd[c]);
        let mut sum = 0.0;
        let mut dotp = 0.0;
        geo.runs(c, |off| {
            for (d, v) in dy[off..off + geo.inner]
                .iter()
                .zip(&x[off..off + geo.inner])
            {
                let d = d.to_f64();
                sum += d;
                dotp += (v.to_f64() - mu) * d;
            }
        });
        if let Some(gi) = grad_input.as_deref_mut() {
            if train {
                let k = dotp * is * is / n;
                let grad_mean = sum / n;
                geo.runs(c, |off| {
                    let run = off..off + geo.inner;
                    for ((o, d), v) in gi[run.clone()]
                        .iter_mut()
                        .zip(&dy[run.clone()])
                        .zip(&x[run])
                    {
                        let proj = (v.to_f64() - mu) * k;
                        *o = T::from_f64((d.to_f64() - grad_mean - proj) * is * w);
                    }
                });
            } else {
                geo.runs(c, |off| {
                    let run = off..off + geo.inner;
                    for (o, d) in gi[run.clone()].iter_mut().zip(&dy[run]) {
                        *o = T::from_f64(d.to_f64() * is * w);
                    }
                });
            }
        }
        dweight.push(dotp * is);
        dbias.push(sum);
    }
    (dweight, dbias)
}

/// The geometry of a contiguous group_norm input `(N, C, HxW)` in `groups` groups of
/// `C / groups` channels.
#[derive(Clone, Copy, Debug)]
pub struct GroupGeometry {
    pub n: usize,
    pub c: usize,
    pub hxw: usize,
    pub groups: usize,
}

/// group_norm's forward (`GroupNormKernelImpl`): per `(n, g)` the mean and rstd of its
/// `C / G * HxW` elements, then `y = (x - mean) * rstd * gamma[c] + beta[c]`.
pub fn group_norm_forward<T: NormElem>(
    x: &[T],
    gamma: Option<&[T]>,
    beta: Option<&[T]>,
    geo: GroupGeometry,
    eps: f64,
    y: &mut [T],
) -> (Vec<f64>, Vec<f64>) {
    let d = geo.c / geo.groups.max(1);
    let block = d * geo.hxw;
    let mut means = Vec::with_capacity(geo.n * geo.groups);
    let mut rstds = Vec::with_capacity(geo.n * geo.groups);
    for ng in 0..geo.n * geo.groups {
        let xs = &x[ng * block..(ng + 1) * block];
        let (mean, var) = if block == 0 { (0.0, 0.0) } else { moments(xs) };
        let rstd = rstd_of(var, eps);
        let g = ng % geo.groups;
        for k in 0..d {
            let ch = g * d + k;
            let w = gamma.map_or(1.0, |w| w[ch].to_f64());
            let b = beta.map_or(0.0, |b| b[ch].to_f64());
            let off = ng * block + k * geo.hxw;
            for (o, v) in y[off..off + geo.hxw].iter_mut().zip(&x[off..off + geo.hxw]) {
                *o = T::from_f64((v.to_f64() - mean) * rstd * w + b);
            }
        }
        means.push(mean);
        rstds.push(rstd);
    }
    (means, rstds)
}

/// group_norm's backward (`GroupNormBackwardKernelImpl`): with per-channel sums
/// `ds = sum(dy * x)`, `db = sum(dy)` over HxW,
/// `dx = rstd * gamma * dy + b * x + c` where per `(n, g)`
/// `b = (sum_c(db * gamma) * mean - sum_c(ds * gamma)) * rstd^3 / (D * HxW)` and
/// `c = -b * mean - sum_c(db * gamma) * rstd / (D * HxW)`;
/// `dgamma[c] = sum_n (ds - db * mean) * rstd`, `dbeta[c] = sum_n db`.
#[allow(clippy::too_many_arguments)]
pub fn group_norm_backward<T: NormElem>(
    dy: &[T],
    x: &[T],
    mean: &[f64],
    rstd: &[f64],
    gamma: Option<&[T]>,
    geo: GroupGeometry,
    mut dx: Option<&mut [T]>,
) -> (Vec<f64>, Vec<f64>) {
    let d = geo.c / geo.groups.max(1);
    let hw = geo.hxw;
    let s = 1.0 / (d * hw) as f64;
    let mut dgamma = vec![0.0; geo.c];
    let mut dbeta = vec![0.0; geo.c];
    for n in 0..geo.n {
        for g in 0..geo.groups {
            let ng = n * geo.groups + g;
            let (mu, rs) = (mean[ng], rstd[ng]);
            let (mut sum_ds_g, mut sum_db_g) = (0.0, 0.0);
            for k in 0..d {
                let ch = g * d + k;
                let off = (n * geo.c + ch) * hw;
                let (mut ds, mut db) = (0.0, 0.0);
                for (dv, xv) in dy[off..off + hw].iter().zip(&x[off..off + hw]) {
                    ds += dv.to_f64() * xv.to_f64();
                    db += dv.to_f64();
                }
                let w = gamma.map_or(1.0, |w| w[ch].to_f64());
                sum_ds_g += ds * w;
                sum_db_g += db * w;
                dgamma[ch] += (ds - db * mu) * rs;
                dbeta[ch] += db;
            }
            if let Some(out) = dx.as_deref_mut() {
                let b = (sum_db_g * mu - sum_ds_g) * rs * rs * rs * s;
                let c = -b * mu - sum_db_g * rs * s;
                for k in 0..d {
                    let ch = g * d + k;
                    let a = rs * gamma.map_or(1.0, |w| w[ch].to_f64());
                    let off = (n * geo.c + ch) * hw;
                    for ((o, dv), xv) in out[off..off + hw]
                        .iter_mut()
                        .zip(&dy[off..off + hw])
                        .zip(&x[off..off + hw])
                    {
                        *o = T::from_f64(a * dv.to_f64() + b * xv.to_f64() + c);
                    }
                }
            }
        }
    }
    (dgamma, dbeta)
}
