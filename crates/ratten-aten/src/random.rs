//! The CPU generator and the random fills behind `rand`/`randn` (PyTorch's
//! `CPUGeneratorImpl`, `at::mt19937`, core/TransformationHelper.h and
//! native/cpu/DistributionTemplates.h), reproducing torch's sequences: the same engine, the
//! same bits per sample, the same Box-Muller variants (per element with a cached second
//! sample below 16 elements, `normal_fill` in blocks of 16 from 16 elements on).

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use half::{bf16, f16};
use num_complex::Complex;
use ratten_core::access::TensorAccess;
use ratten_core::dtype::{c128, c32, c64};
use ratten_core::tensor_impl::TensorBase;
use ratten_core::{torch_check, Error, Result, ScalarType, TensorOptions};

use crate::Tensor;

/// PyTorch's `default_rng_seed_val`.
pub const DEFAULT_RNG_SEED: u64 = 67280421310721;

const MT_N: usize = 624;
const MT_M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// The 32-bit Mersenne Twister, identical to `std::mt19937` and PyTorch's `at::mt19937`.
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; MT_N],
    index: usize,
}

impl Mt19937 {
    /// Seeds as `at::mt19937(seed)`: only the low 32 bits of the seed enter the state.
    pub fn new(seed: u64) -> Self {
        let mut state = [0u32; MT_N];
        state[0] = (seed & 0xffff_ffff) as u32;
        for j in 1..MT_N {
            let prev = state[j - 1];
            state[j] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(j as u32);
        }
        Mt19937 { state, index: MT_N }
    }

    fn twist(&mut self) {
        for i in 0..MT_N {
            let y = (self.state[i] & UPPER_MASK) | (self.state[(i + 1) % MT_N] & LOWER_MASK);
            let mut v = self.state[(i + MT_M) % MT_N] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= MATRIX_A;
            }
            self.state[i] = v;
        }
        self.index = 0;
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= MT_N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

/// The state of a CPU generator (`CPUGeneratorImpl`): the engine, its seed and the cached
/// second Box-Muller sample of `normal_distribution<double>` (the only one the CPU kernels use).
#[derive(Clone)]
pub struct CpuGeneratorImpl {
    engine: Mt19937,
    seed: u64,
    next_double_normal_sample: Option<f64>,
}

impl CpuGeneratorImpl {
    pub fn new(seed: u64) -> Self {
        CpuGeneratorImpl {
            engine: Mt19937::new(seed),
            seed,
            next_double_normal_sample: None,
        }
    }

    /// `set_current_seed`: restarts the engine and drops the cached normal samples.
    pub fn set_current_seed(&mut self, seed: u64) {
        *self = CpuGeneratorImpl::new(seed);
    }

    pub fn current_seed(&self) -> u64 {
        self.seed
    }

    /// `random()`: 32 bits.
    pub fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }

    /// `random64()`: two draws, the first in the high half.
    pub fn random64(&mut self) -> u64 {
        let hi = self.engine.next_u32() as u64;
        let lo = self.engine.next_u32() as u64;
        (hi << 32) | lo
    }

    /// One sample of `at::normal_distribution<double>`, using and refilling the cached second
    /// Box-Muller value as PyTorch does.
    pub fn normal_double(&mut self, mean: f64, std: f64) -> f64 {
        if let Some(v) = self.next_double_normal_sample.take() {
            return v * std + mean;
        }
        let u1 = uniform_f64(self.random64());
        let u2 = uniform_f64(self.random64());
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_double_normal_sample = Some(r * theta.sin());
        r * theta.cos() * std + mean
    }
}

/// `uniform_real<double>` of [0, 1): the low 53 bits scaled by 2^-53.
fn uniform_f64(bits: u64) -> f64 {
    (bits & ((1u64 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A handle to a CPU generator (`torch.Generator`): clones share the state.
#[derive(Clone)]
pub struct Generator {
    inner: Arc<Mutex<CpuGeneratorImpl>>,
}

impl Default for Generator {
    fn default() -> Self {
        Generator::new()
    }
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Generator(device='cpu', initial_seed={})",
            self.initial_seed()
        )
    }
}

impl Generator {
    /// A new generator with PyTorch's default seed, as `torch.Generator()`.
    pub fn new() -> Self {
        Generator::with_seed(DEFAULT_RNG_SEED)
    }

    pub fn with_seed(seed: u64) -> Self {
        Generator {
            inner: Arc::new(Mutex::new(CpuGeneratorImpl::new(seed))),
        }
    }

    /// Locks the state. A panic while the lock was held cannot leave the state invalid (every
    /// update is a plain assignment), so a poisoned lock is taken over.
    pub fn lock(&self) -> MutexGuard<'_, CpuGeneratorImpl> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `Generator.manual_seed(seed)`.
    pub fn manual_seed(&self, seed: u64) -> &Self {
        self.lock().set_current_seed(seed);
        self
    }

    /// `Generator.initial_seed()`.
    pub fn initial_seed(&self) -> u64 {
        self.lock().current_seed()
    }

    /// `Generator.seed()`: reseeds from a non-deterministic source and returns the seed.
    pub fn seed(&self) -> u64 {
        let seed = nondeterministic_seed();
        self.manual_seed(seed);
        seed
    }
}

/// A seed from the clock and the address space layout, as `c10::detail::getNonDeterministicRandom`
/// falls back to when no hardware source is used.
fn nondeterministic_seed() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    h.finish()
}

/// The process-wide default CPU generator (`at::detail::getDefaultCPUGenerator()`).
pub fn default_generator() -> &'static Generator {
    static DEFAULT: OnceLock<Generator> = OnceLock::new();
    DEFAULT.get_or_init(Generator::new)
}

/// `torch.manual_seed(seed)`: reseeds the default generator.
pub fn manual_seed(seed: u64) {
    default_generator().manual_seed(seed);
}

/// `torch.initial_seed()`.
pub fn initial_seed() -> u64 {
    default_generator().initial_seed()
}

/// A floating element type that `uniform_`/`normal_` fill, with PyTorch's bits per sample
/// (`std::numeric_limits<T>::digits`) and accumulation type (`dist_acctype`).
pub trait RandomFloat: Copy + Default {
    /// Draws one `uniform_real_distribution<T>(from, to)` sample.
    fn uniform(gen: &mut CpuGeneratorImpl, from: f64, to: f64) -> Self;
    /// `normal_fill_16<T>` on 16 uniform values in place.
    fn normal_fill_16(data: &mut [Self], mean: f64, std: f64);
    fn from_f64(v: f64) -> Self;
}

impl RandomFloat for f32 {
    fn uniform(gen: &mut CpuGeneratorImpl, from: f64, to: f64) -> Self {
        let x = (gen.random() & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32);
        let (from, to) = (from as f32, to as f32);
        x * (to - from) + from
    }
    /// Follows `normal_fill_16_AVX2`, the path x86 builds of PyTorch take for float: theta in
    /// float from a float 2*pi, and a fused multiply-add for `* std + mean`. (Its vector log
    /// and sincos approximations may differ from libm's in the last bit.)
    fn normal_fill_16(data: &mut [Self], mean: f64, std: f64) {
        let (mean, std) = (mean as f32, std as f32);
        let two_pi = (2.0f64 * std::f64::consts::PI) as f32;
        for j in 0..8 {
            let u1 = 1.0 - data[j];
            let u2 = data[j + 8];
            let radius = (-2.0 * u1.ln()).sqrt();
            let theta = two_pi * u2;
            data[j] = (radius * theta.cos()).mul_add(std, mean);
            data[j + 8] = (radius * theta.sin()).mul_add(std, mean);
        }
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl RandomFloat for f64 {
    fn uniform(gen: &mut CpuGeneratorImpl, from: f64, to: f64) -> Self {
        uniform_f64(gen.random64()) * (to - from) + from
    }
    fn normal_fill_16(data: &mut [Self], mean: f64, std: f64) {
        for j in 0..8 {
            let u1 = 1.0 - data[j];
            let u2 = data[j + 8];
            let radius = (-2.0 * u1.ln()).sqrt();
            let theta = 2.0 * std::f64::consts::PI * u2;
            data[j] = radius * theta.cos() * std + mean;
            data[j + 8] = radius * theta.sin() * std + mean;
        }
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}

/// Half and BFloat16: float accumulation, rounding to the element type wherever PyTorch's
/// code assigns to a `scalar_t`.
macro_rules! reduced_random_float {
    ($t:ty, $digits:expr) => {
        impl RandomFloat for $t {
            fn uniform(gen: &mut CpuGeneratorImpl, from: f64, to: f64) -> Self {
                let x =
                    (gen.random() & ((1 << $digits) - 1)) as f32 * (1.0 / (1u32 << $digits) as f32);
                let (from, to) = (<$t>::from_f64(from).to_f32(), <$t>::from_f64(to).to_f32());
                <$t>::from_f32(x * (to - from) + from)
            }
            fn normal_fill_16(data: &mut [Self], mean: f64, std: f64) {
                let (mean, std) = (<$t>::from_f64(mean).to_f32(), <$t>::from_f64(std).to_f32());
                let round = |v: f32| <$t>::from_f32(v).to_f32();
                for j in 0..8 {
                    let u1 = round(1.0 - data[j].to_f32());
                    let u2 = data[j + 8].to_f32();
                    let radius = round((-2.0 * u1.ln()).sqrt());
                    let theta = round((2.0f64 * std::f64::consts::PI * u2 as f64) as f32);
                    data[j] = <$t>::from_f32(radius * theta.cos() * std + mean);
                    data[j + 8] = <$t>::from_f32(radius * theta.sin() * std + mean);
                }
            }
            fn from_f64(v: f64) -> Self {
                <$t>::from_f64(v)
            }
        }
    };
}
reduced_random_float!(f16, 11);
reduced_random_float!(bf16, 8);

/// `uniform_(from, to)` on contiguous data, in order (PyTorch's serial CPU kernel).
pub fn uniform_fill<T: RandomFloat>(
    gen: &mut CpuGeneratorImpl,
    data: &mut [T],
    from: f64,
    to: f64,
) {
    for x in data.iter_mut() {
        *x = T::uniform(gen, from, to);
    }
}

/// `normal_(mean, std)` on contiguous data: `normal_fill` (uniforms first, then Box-Muller in
/// blocks of 16, the last block recomputed over the tail) from 16 elements on, else one
/// `normal_distribution<double>` sample per element.
pub fn normal_fill<T: RandomFloat>(
    gen: &mut CpuGeneratorImpl,
    data: &mut [T],
    mean: f64,
    std: f64,
) {
    let size = data.len();
    if size >= 16 {
        uniform_fill(gen, data, 0.0, 1.0);
        let mut i = 0;
        while i + 16 <= size {
            T::normal_fill_16(&mut data[i..i + 16], mean, std);
            i += 16;
        }
        if !size.is_multiple_of(16) {
            let tail = &mut data[size - 16..];
            uniform_fill(gen, tail, 0.0, 1.0);
            T::normal_fill_16(tail, mean, std);
        }
    } else {
        for x in data.iter_mut() {
            *x = T::from_f64(gen.normal_double(mean, std));
        }
    }
}

/// The `AT_DISPATCH` refusal for a dtype a random kernel has no loop for.
fn not_implemented(kernel: &str, dtype: ScalarType) -> Error {
    Error::not_implemented(format!("\"{kernel}\" not implemented for '{dtype}'"))
}

/// What a random kernel draws.
#[derive(Clone, Copy)]
enum Dist {
    Uniform { from: f64, to: f64 },
    Normal { mean: f64, std: f64 },
}

/// TensorIterator's traversal order for a single output (`reorder_dimensions`): `perm[0]` is
/// the innermost dim. Dims are sorted by stride, smallest innermost, equal strides putting the
/// smaller size inside, stride-0 dims left where they are; so a permuted dense tensor is
/// visited in memory order, as PyTorch's serial random kernels visit it.
pub fn iteration_order(sizes: &[i64], strides: &[i64]) -> Vec<usize> {
    let ndim = sizes.len();
    let mut perm: Vec<usize> = (0..ndim).rev().collect();
    let should_swap = |d0: usize, d1: usize| -> i32 {
        let (s0, s1) = (strides[d0], strides[d1]);
        if s0 == 0 || s1 == 0 {
            0
        } else if s0 < s1 {
            -1
        } else if s0 > s1 || sizes[d0] > sizes[d1] {
            1
        } else {
            0
        }
    };
    for i in 1..ndim {
        let mut dim1 = i;
        for dim0 in (0..i).rev() {
            let c = should_swap(perm[dim0], perm[dim1]);
            if c > 0 {
                perm.swap(dim0, dim1);
                dim1 = dim0;
            } else if c < 0 {
                break;
            }
        }
    }
    perm
}

/// Element offsets (relative to the first element) in [`iteration_order`].
fn offsets_in_iteration_order(sizes: &[i64], strides: &[i64]) -> Vec<i64> {
    let perm = iteration_order(sizes, strides);
    let n: i64 = sizes.iter().product();
    let mut out = Vec::with_capacity(n.max(0) as usize);
    if n <= 0 {
        return out;
    }
    let mut counter = vec![0i64; perm.len()];
    let mut off = 0i64;
    loop {
        out.push(off);
        // perm[0] is the fastest-moving dim.
        let mut k = 0;
        loop {
            if k == perm.len() {
                return out;
            }
            let d = perm[k];
            counter[k] += 1;
            off += strides[d];
            if counter[k] < sizes[d] {
                break;
            }
            off -= strides[d] * sizes[d];
            counter[k] = 0;
            k += 1;
        }
    }
}

/// Draws `dist` into `data` as PyTorch's kernel for a tensor of that layout would:
/// `contiguous` selects the blocked `normal_fill` from 16 elements on.
fn draw<T: RandomFloat>(gen: &mut CpuGeneratorImpl, data: &mut [T], dist: Dist, contiguous: bool) {
    match dist {
        Dist::Uniform { from, to } => uniform_fill(gen, data, from, to),
        Dist::Normal { mean, std } if contiguous => normal_fill(gen, data, mean, std),
        Dist::Normal { mean, std } => {
            for x in data.iter_mut() {
                *x = T::from_f64(gen.normal_double(mean, std));
            }
        }
    }
}

/// `at::assert_no_internal_overlap` for a tensor about to be written.
fn assert_no_internal_overlap(t: &TensorBase) -> Result<()> {
    let (sizes, strides) = (t.sizes(), t.strides());
    torch_check!(
        !sizes
            .iter()
            .zip(strides.iter())
            .any(|(&sz, &st)| st == 0 && sz > 1),
        "unsupported operation: more than one element of the written-to tensor refers to a \
         single memory location. Please clone() the tensor before performing the operation."
    );
    Ok(())
}

/// Fills `t` (a floating or complex tensor; complex ones through their real view) with `dist`.
fn fill_random(t: &TensorBase, generator: Option<&Generator>, dist: Dist) -> Result<()> {
    if t.is_meta() || t.numel() == 0 {
        return Ok(());
    }
    assert_no_internal_overlap(t)?;
    let gen = generator.unwrap_or_else(|| default_generator());
    let mut access = TensorAccess::write(t)?;
    let mut state = gen.lock();
    let st = &mut *state;
    if t.is_contiguous() {
        // Complex tensors are filled as their real view (`view_as_real`): 2 values each.
        match t.dtype() {
            ScalarType::Float => draw(st, access.output_slice_mut::<f32>(0)?, dist, true),
            ScalarType::Double => draw(st, access.output_slice_mut::<f64>(0)?, dist, true),
            ScalarType::Half => draw(st, access.output_slice_mut::<f16>(0)?, dist, true),
            ScalarType::BFloat16 => draw(st, access.output_slice_mut::<bf16>(0)?, dist, true),
            ScalarType::ComplexFloat => {
                let s = complex_as_real(access.output_slice_mut::<c64>(0)?);
                draw(st, s, dist, true)
            }
            ScalarType::ComplexDouble => {
                let s = complex_as_real(access.output_slice_mut::<c128>(0)?);
                draw(st, s, dist, true)
            }
            ScalarType::ComplexHalf => {
                let s = complex_as_real(access.output_slice_mut::<c32>(0)?);
                draw(st, s, dist, true)
            }
            other => return Err(not_implemented("random fill", other)),
        }
        return Ok(());
    }
    // Strided: draw in TensorIterator's order into a buffer, then scatter.
    let out = access.output(0)?;
    let (mut sizes, mut strides) = (out.sizes().to_vec(), out.strides().to_vec());
    if t.dtype().is_complex() {
        // view_as_real: strides in real elements, plus the (re, im) dim.
        strides.iter_mut().for_each(|s| *s *= 2);
        sizes.push(2);
        strides.push(1);
    }
    let offsets = offsets_in_iteration_order(&sizes, &strides);
    let Some(base) = out.raw_data_ptr() else {
        return Ok(());
    };
    match t.dtype().to_real() {
        ScalarType::Float => scatter::<f32>(st, base.as_ptr(), &offsets, dist),
        ScalarType::Double => scatter::<f64>(st, base.as_ptr(), &offsets, dist),
        ScalarType::Half => scatter::<f16>(st, base.as_ptr(), &offsets, dist),
        ScalarType::BFloat16 => scatter::<bf16>(st, base.as_ptr(), &offsets, dist),
        other => return Err(not_implemented("random fill", other)),
    }
    Ok(())
}

/// Draws `offsets.len()` values and writes them at `base + offsets[i]` (in `R` elements).
fn scatter<R: RandomFloat>(gen: &mut CpuGeneratorImpl, base: *mut u8, offsets: &[i64], dist: Dist) {
    let mut values = vec![R::default(); offsets.len()];
    draw(gen, &mut values, dist, false);
    let base = base as *mut R;
    for (&off, v) in offsets.iter().zip(values) {
        // SAFETY: each offset is sum(index[d] * strides[d]) over the tensor's (real-view)
        // sizes, an element of the view, which was bounds-checked against its storage; `base`
        // is the element at the storage offset of a tensor this thread holds for writing
        // (TensorAccess::write). R is the dtype's real element type, so the address is
        // aligned. An overlapping view just writes one location twice.
        unsafe { base.offset(off as isize).write(v) };
    }
}

/// `view_as_real` of a contiguous complex slice.
fn complex_as_real<R>(s: &mut [Complex<R>]) -> &mut [R] {
    let len = s.len() * 2;
    // SAFETY: num_complex::Complex<R> is #[repr(C)] { re: R, im: R }, so a slice of n complex
    // values is a slice of 2n R values with the same alignment; the borrow is carried over.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut R, len) }
}

impl Tensor {
    /// `uniform_(from, to, generator)`: fills this tensor with samples of U[from, to), in
    /// PyTorch's order and precision (a strided tensor in TensorIterator's order). Floating
    /// and complex dtypes.
    pub fn uniform_(&self, from: f64, to: f64, generator: Option<&Generator>) -> Result<&Self> {
        uniform_impl(self.base(), from, to, generator)?;
        self.base().bump_version();
        Ok(self)
    }

    /// `normal_(mean, std, generator)`: fills this tensor with samples of N(mean, std^2)
    /// (complex tensors: real and imaginary parts each with std/sqrt(2), as PyTorch).
    pub fn normal_(&self, mean: f64, std: f64, generator: Option<&Generator>) -> Result<&Self> {
        normal_impl(self.base(), mean, std, generator)?;
        self.base().bump_version();
        Ok(self)
    }

    /// `torch.rand(sizes, dtype=, device=)`: uniform samples in [0, 1) from the default
    /// generator (float32 on the CPU by default).
    pub fn rand(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        Self::rand_with(sizes, options, None)
    }

    /// `torch.rand(sizes, generator=, dtype=, device=)`.
    pub fn rand_with(
        sizes: &[i64],
        options: impl Into<TensorOptions>,
        generator: Option<&Generator>,
    ) -> Result<Tensor> {
        let t = Tensor::empty(sizes, options)?;
        uniform_impl(t.base(), 0.0, 1.0, generator)?;
        Ok(t)
    }

    /// `torch.randn(sizes, dtype=, device=)`: standard normal samples from the default
    /// generator.
    pub fn randn(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        Self::randn_with(sizes, options, None)
    }

    /// `torch.randn(sizes, generator=, dtype=, device=)`.
    pub fn randn_with(
        sizes: &[i64],
        options: impl Into<TensorOptions>,
        generator: Option<&Generator>,
    ) -> Result<Tensor> {
        let t = Tensor::empty(sizes, options)?;
        normal_impl(t.base(), 0.0, 1.0, generator)?;
        Ok(t)
    }
}

fn uniform_impl(t: &TensorBase, from: f64, to: f64, generator: Option<&Generator>) -> Result<()> {
    let real = t.dtype().to_real();
    if !real.is_floating_point() {
        return Err(not_implemented("check_uniform_bounds", t.dtype()));
    }
    torch_check!(
        from <= to,
        "uniform_ expects to return a [from, to) range, but found from={} > to={}",
        from,
        to
    );
    fill_random(t, generator, Dist::Uniform { from, to })
}

fn normal_impl(t: &TensorBase, mean: f64, std: f64, generator: Option<&Generator>) -> Result<()> {
    torch_check!(
        std >= 0.0,
        "normal expects std >= 0.0, but found std {}",
        std
    );
    let mut std = std;
    if t.dtype().is_complex() {
        std /= std::f64::consts::SQRT_2;
    } else if !t.dtype().is_floating_point() {
        return Err(not_implemented("normal_kernel_cpu", t.dtype()));
    }
    fill_random(t, generator, Dist::Normal { mean, std })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_matches_std() {
        // The C++ standard requires the 10000th output of a default-seeded (5489) mt19937.
        let mut e = Mt19937::new(5489);
        let mut last = 0;
        for _ in 0..10000 {
            last = e.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
        let mut e = Mt19937::new(0);
        assert_eq!(e.next_u32(), 2_357_136_044);
    }

    #[test]
    fn uniform_floats_follow_torch() {
        let mut g = CpuGeneratorImpl::new(0);
        let mut v = [0f32; 3];
        uniform_fill(&mut g, &mut v, 0.0, 1.0);
        let shown: Vec<String> = v.iter().map(|x| format!("{x:.4}")).collect();
        assert_eq!(shown, ["0.4963", "0.7682", "0.0885"]);
    }

    fn shown<T: Copy + Into<f64>>(v: &[T]) -> Vec<String> {
        v.iter().map(|&x| format!("{:.4}", x.into())).collect()
    }

    #[test]
    fn normal_sequences_follow_torch() {
        // torch.manual_seed(0); torch.randn(2, 3): per-element Box-Muller with the cached sine.
        let mut g = CpuGeneratorImpl::new(0);
        let mut v = [0f32; 6];
        normal_fill(&mut g, &mut v, 0.0, 1.0);
        assert_eq!(
            shown(&v),
            ["1.5410", "-0.2934", "-2.1788", "0.5684", "-1.0845", "-1.3986"]
        );
        // torch.manual_seed(0); torch.randn(4, 4): normal_fill over one block of 16.
        let mut g = CpuGeneratorImpl::new(0);
        let mut v = [0f32; 16];
        normal_fill(&mut g, &mut v, 0.0, 1.0);
        assert_eq!(
            shown(&v),
            [
                "-1.1258", "-1.1524", "-0.2506", "-0.4339", "0.8487", "0.6920", "-0.3160",
                "-2.1152", "0.3223", "-1.2633", "0.3500", "0.3081", "0.1198", "1.2377", "1.1168",
                "-0.2473"
            ]
        );
    }

    #[test]
    fn iteration_order_follows_strides() {
        assert_eq!(iteration_order(&[2, 3], &[3, 1]), [1, 0]);
        assert_eq!(iteration_order(&[2, 3], &[1, 2]), [0, 1]);
        assert_eq!(iteration_order(&[4, 3, 2], &[1, 8, 4]), [0, 2, 1]);
        // stride 0 leaves the order alone
        assert_eq!(iteration_order(&[2, 3], &[0, 1]), [1, 0]);
        assert_eq!(
            offsets_in_iteration_order(&[2, 3], &[1, 2]),
            [0, 1, 2, 3, 4, 5]
        );
        assert_eq!(offsets_in_iteration_order(&[2, 2], &[4, 2]), [0, 2, 4, 6]);
    }

    #[test]
    fn reseeding_clears_the_cached_normal() {
        let g = Generator::with_seed(3);
        let a = g.lock().normal_double(0.0, 1.0);
        g.manual_seed(3);
        let b = g.lock().normal_double(0.0, 1.0);
        assert_eq!(a, b);
        assert_eq!(g.initial_seed(), 3);
    }
}
