//! The loops of bincount (ATen's `SummaryOps.cpp`, `_bincount_cpu_template`) and histc
//! (`HistogramKernel.cpp`, `histogramdd_cpu_contiguous` with `LINEAR_INTERPOLATION`). The
//! checks and the choice of bin edges are the front end's (`native/summary_ops.rs`).

use std::ops::{Add, Div, Mul, Sub};

use half::{bf16, f16};
use parking_lot::Mutex;
use ratten_core::{Error, PodElement, Result, ScalarType, TensorAccess};

use crate::native::cpu::elements::{not_implemented, Elem};
use crate::native::cpu::unique_kernels::dispatch_types;
use crate::tensor_iterator::parallel::{get_num_threads, parallel_for};
use crate::Tensor;

// ---------------------------------------------------------------------------------------------
// bincount

/// Runs `$body` with `$T` the element type of bincount's integral dtype `$dt`
/// (`AT_DISPATCH_INTEGRAL_TYPES`, which leaves bool out).
macro_rules! dispatch_integral {
    ($dt:expr, $T:ident => $body:expr) => {
        dispatch_types!($dt, "bincount_cpu", [
            Byte => u8, Char => i8, Short => i16, Int => i32, Long => i64,
        ], $T => $body)
    };
}

/// The smallest and largest values of the contiguous integral `input` (bincount's dtypes, else
/// `"bincount_cpu" not implemented`), `None` when it is empty.
pub fn integral_min_max(input: &Tensor) -> Result<Option<(i64, i64)>> {
    dispatch_integral!(input.dtype(), T => {
        let g = TensorAccess::read(input.base())?;
        let values = g.input_slice::<T>(0)?;
        let lo = values.iter().copied().min();
        let hi = values.iter().copied().max();
        Ok(lo.zip(hi).map(|(lo, hi)| (Elem::to_i64(lo), Elem::to_i64(hi))))
    })
}

/// `n` zeros, or an error where the allocation fails (a `vec!` would abort the process).
fn zeros_vec<W: Copy + Default>(n: usize) -> Result<Vec<W>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        Error::runtime(format!(
            "DefaultCPUAllocator: not enough memory: you tried to allocate {} bytes.",
            n.saturating_mul(std::mem::size_of::<W>())
        ))
    })?;
    v.resize(n, W::default());
    Ok(v)
}

/// Adds each weight to the bin its value names; a value outside the bins is an error.
fn add_to_bins<T: Elem, W: Copy + Add<Output = W>>(
    values: &[T],
    weights: impl Iterator<Item = W>,
    out: &mut [W],
) -> Result<()> {
    for (&v, w) in values.iter().zip(weights) {
        let v = v.to_i64();
        let slot = usize::try_from(v)
            .ok()
            .and_then(|i| out.get_mut(i))
            .ok_or_else(|| Error::index(format!("bincount: value {v} outside the bins")))?;
        *slot = *slot + w;
    }
    Ok(())
}

/// The bins of `_bincount_cpu_template`: `nbins` int64 counts of each value of the contiguous
/// integral `input` (all in `[0, nbins)`), or with `weights` (float32 or float64, one per value,
/// contiguous) the sum of the weights of each value, in the weights' dtype.
pub fn bincount_kernel(input: &Tensor, weights: Option<&Tensor>, nbins: usize) -> Result<Tensor> {
    let len = [nbins as i64];
    dispatch_integral!(input.dtype(), T => {
        let mut reads = vec![input.base()];
        reads.extend(weights.map(|w| w.base()));
        let g = TensorAccess::new(&reads, &[])?;
        let values = g.input_slice::<T>(0)?;
        match weights.map(|w| w.dtype()) {
            None => {
                let mut out = zeros_vec::<i64>(nbins)?;
                add_to_bins(values, std::iter::repeat(1i64), &mut out)?;
                Tensor::from_vec(out, &len)
            }
            Some(ScalarType::Float) => {
                let mut out = zeros_vec::<f32>(nbins)?;
                add_to_bins(values, g.input_slice::<f32>(1)?.iter().copied(), &mut out)?;
                Tensor::from_vec(out, &len)
            }
            Some(_) => {
                let mut out = zeros_vec::<f64>(nbins)?;
                add_to_bins(values, g.input_slice::<f64>(1)?.iter().copied(), &mut out)?;
                Tensor::from_vec(out, &len)
            }
        }
    })
}

// ---------------------------------------------------------------------------------------------
// histc

/// A floating element type histc counts in: its arithmetic rounds to the type after each
/// operation, as c10's Half and BFloat16 operators do.
trait HistElem:
    Elem
    + PodElement
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
{
}
impl HistElem for f16 {}
impl HistElem for bf16 {}
impl HistElem for f32 {}
impl HistElem for f64 {}

/// At most this many elements go to one thread (`HISTOGRAM_GRAIN_SIZE`, of one-column input).
const HISTOGRAM_GRAIN_SIZE: usize = 200;

/// Counts `input` into `bins` bins between `left` and `right` (the first and last bin edges,
/// in the input's type): `(x - left) * bins / (right - left)` in the input's type, truncated;
/// values outside `[left, right]` and NaN are skipped, `right` goes to the last bin. As
/// PyTorch's, the input is cut into one piece per thread (at most one per 200 elements), each
/// counting in the input's type (so float16 and bfloat16 counts stop growing where the type's
/// precision ends), and the pieces' counts are summed.
fn histc_linear<T: HistElem>(input: &[T], left: T, right: T, bins: usize) -> Result<Vec<T>> {
    let n = input.len();
    let pieces = get_num_threads()
        .min(n.div_ceil(HISTOGRAM_GRAIN_SIZE))
        .max(1);
    let len = n.div_ceil(pieces).max(1);
    let bins_t = T::from_i64(bins as i64);
    let one = T::from_i64(1);
    let span = right - left;
    let counts = (0..pieces)
        .map(|_| zeros_vec::<T>(bins).map(Mutex::new))
        .collect::<Result<Vec<_>>>()?;
    parallel_for(0, pieces as i64, 1, |b, e| {
        for p in b as usize..e as usize {
            let mut local = counts[p].lock();
            for &x in &input[(p * len).min(n)..((p + 1) * len).min(n)] {
                if !(x >= left && x <= right) {
                    continue;
                }
                let q = ((x - left) * bins_t / span).to_f64();
                // Truncated, q is a bin or `bins` (rounding up at `right`), unless the
                // arithmetic overflowed: PyTorch's cast would then write outside its
                // histogram; such elements are skipped here.
                if !(q > -1.0 && q < bins as f64 + 1.0) {
                    continue;
                }
                let pos = (q as usize).min(bins - 1);
                local[pos] = local[pos] + one;
            }
        }
    })?;
    let mut total = zeros_vec::<f64>(bins)?;
    for piece in counts {
        for (t, v) in total.iter_mut().zip(piece.into_inner()) {
            *t += v.to_f64();
        }
    }
    Ok(total.into_iter().map(T::from_f64).collect())
}

/// The histc loop (`histogramdd_out_cpu_template<LINEAR_INTERPOLATION>`): writes into `hist`
/// (contiguous, `edges.numel() - 1` elements, `input`'s dtype) the counts of the contiguous
/// `input` between the first and last of the bin `edges` (`torch.linspace` over the range).
/// Floating dtypes only: `"histogram_cpu" not implemented` for others.
pub fn histc_kernel(hist: &Tensor, input: &Tensor, edges: &Tensor) -> Result<()> {
    macro_rules! run {
        ($t:ty) => {{
            let mut g = TensorAccess::new(&[input.base(), edges.base()], &[hist.base()])?;
            let e = g.input_slice::<$t>(1)?;
            let (Some(&left), Some(&right)) = (e.first(), e.last()) else {
                return Err(Error::runtime("histc: no bin edges"));
            };
            let bins = e.len() - 1;
            let counts = histc_linear::<$t>(g.input_slice::<$t>(0)?, left, right, bins)?;
            let out = g.output_slice_mut::<$t>(0)?;
            if out.len() != bins {
                return Err(Error::runtime("histc: the histogram does not fit the bins"));
            }
            out.copy_from_slice(&counts);
            Ok(())
        }};
    }
    match input.dtype() {
        ScalarType::Half => run!(f16),
        ScalarType::BFloat16 => run!(bf16),
        ScalarType::Float => run!(f32),
        ScalarType::Double => run!(f64),
        d => Err(not_implemented("histogram_cpu", d)),
    }
}
