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
use ratten_core::{torch_check, Device, Error, Result, ScalarType, TensorOptions};

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

/// `Generator?` arguments: `IValue::Generator` holds the handle (a shared state).
impl ratten_dispatch::KernelValue for crate::structured::Arg<Option<Generator>> {
    type Ref<'a> = Option<&'a Generator>;
    fn schema_type() -> ratten_schema::Type {
        ratten_schema::Type::optional(ratten_schema::Type::Generator)
    }
    fn ref_to_ivalue(r: &Option<&Generator>) -> ratten_dispatch::IValue {
        r.map_or(ratten_dispatch::IValue::None, |g| {
            ratten_dispatch::IValue::Generator(Arc::new(g.clone()))
        })
    }
    fn into_ivalue(self) -> ratten_dispatch::IValue {
        Self::ref_to_ivalue(&self.0.as_ref())
    }
    fn from_ivalue(v: ratten_dispatch::IValue) -> Result<Self> {
        match v {
            ratten_dispatch::IValue::None => Ok(crate::structured::Arg(None)),
            ratten_dispatch::IValue::Generator(g) => g
                .downcast_ref::<Generator>()
                .map(|g| crate::structured::Arg(Some(g.clone())))
                .ok_or_else(|| Error::runtime("Expected a CPU Generator")),
            other => Err(Error::runtime(format!(
                "Expected Generator? but got {}",
                other.tag_kind()
            ))),
        }
    }
    fn borrow(&self) -> Option<&Generator> {
        self.0.as_ref()
    }
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
        x.mul_add(to - from, from)
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
        uniform_f64(gen.random64()).mul_add(to - from, from)
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
                // Drawn as float (24 bits, a fused multiply-add) and rounded, as torch 2.15.
                let x = (gen.random() & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32);
                let (from, to) = (<$t>::from_f64(from).to_f32(), <$t>::from_f64(to).to_f32());
                <$t>::from_f32(x.mul_add(to - from, from))
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

// Note [Random operators]
// The random factories and samplers are declared with PyTorch's entries. The in-place
// samplers (`uniform_`, `normal_`, `random_`, `bernoulli_`) are the CPU (and Meta, where they
// do nothing) kernels that draw from the generator; everything else composes them as
// TensorFactories.cpp and Distributions.cpp do (`rand` is `empty(...).uniform_(0, 1)`,
// `randint` is `random_(low, high)`, `normal(mean: Tensor, std)` draws N(0, std) and adds the
// mean), so the same seed gives torch's numbers. Samplers draw element by element in
// TensorIterator's order (`cpu_serial_kernel`), with torch's transformations of the 32- or
// 64-bit words (`uniform_int_from_to`, `uniform_real_distribution`). `bernoulli_` with a
// scalar `p` and `exponential_` follow torch's kernels for builds without MKL (and for
// non-Intel CPUs); MKL builds on Intel CPUs draw from MKL's own stream, which no other library
// reproduces. `multinomial` composes them as Distributions.cpp does: `topk(p / q)` with
// `q = exponential_()` without replacement, a double uniform per sample with replacement.

/// `uniform_real_distribution<double>(0, 1)`: 53 bits of a 64-bit word.
fn draw_uniform_f64(gen: &mut CpuGeneratorImpl) -> f64 {
    uniform_f64(gen.random64())
}

/// `uniform_real_distribution<float>(0, 1)`: 24 bits of a 32-bit word.
fn uniform_f32(gen: &mut CpuGeneratorImpl) -> f32 {
    (gen.random() & ((1u32 << 24) - 1)) as f32 * (2f32).powi(-24)
}

/// Writes `sample(i)` (as the bits of one element of `T`) at every element of `t`, element `i`
/// in TensorIterator's order, under the generator's lock.
fn fill_serial<T: ratten_core::dtype::PodElement>(
    t: &TensorBase,
    generator: Option<&Generator>,
    mut sample: impl FnMut(&mut CpuGeneratorImpl, usize) -> T,
) -> Result<()> {
    if t.is_meta() || t.numel() == 0 {
        return Ok(());
    }
    assert_no_internal_overlap(t)?;
    let gen = generator.unwrap_or_else(|| default_generator());
    let mut access = TensorAccess::write(t)?;
    let mut state = gen.lock();
    if t.is_contiguous() {
        for (i, x) in access.output_slice_mut::<T>(0)?.iter_mut().enumerate() {
            *x = sample(&mut state, i);
        }
        return Ok(());
    }
    let out = access.output(0)?;
    let offsets = offsets_in_iteration_order(out.sizes(), out.strides());
    let Some(base) = out.raw_data_ptr() else {
        return Ok(());
    };
    let base = base.as_ptr() as *mut T;
    for (i, &off) in offsets.iter().enumerate() {
        let v = sample(&mut state, i);
        // SAFETY: as in `scatter`: each offset is an element of the bounds-checked view, `base`
        // its storage-offset element, held for writing by `access`; T is the dtype's element
        // type (bool as its byte), so the address is aligned.
        unsafe { base.offset(off as isize).write(v) };
    }
    Ok(())
}

/// Runs `$body` with `$t` the element type of `$dtype` (bool as u8), for every real dtype.
macro_rules! dispatch_real_and_bool {
    ($dtype:expr, $kernel:expr, $t:ident => $body:expr) => {
        match $dtype {
            ScalarType::Bool | ScalarType::Byte => {
                type $t = u8;
                $body
            }
            ScalarType::Char => {
                type $t = i8;
                $body
            }
            ScalarType::Short => {
                type $t = i16;
                $body
            }
            ScalarType::Int => {
                type $t = i32;
                $body
            }
            ScalarType::Long => {
                type $t = i64;
                $body
            }
            ScalarType::Float => {
                type $t = f32;
                $body
            }
            ScalarType::Double => {
                type $t = f64;
                $body
            }
            ScalarType::Half => {
                type $t = f16;
                $body
            }
            ScalarType::BFloat16 => {
                type $t = bf16;
                $body
            }
            other => Err(not_implemented($kernel, other)),
        }
    };
}

/// An integer value as an element (`static_cast<scalar_t>(int64_t)`; bool as 0 / 1).
trait FromI64: Copy {
    fn from_i64(v: i64) -> Self;
}

macro_rules! from_i64_as {
    ($($t:ty),*) => {$(impl FromI64 for $t {
        fn from_i64(v: i64) -> Self {
            v as $t
        }
    })*};
}
from_i64_as!(u8, i8, i16, i32, i64, u16, u32, u64, f32, f64);

impl FromI64 for f16 {
    fn from_i64(v: i64) -> Self {
        f16::from_f32(v as f32)
    }
}

impl FromI64 for bf16 {
    fn from_i64(v: i64) -> Self {
        bf16::from_f32(v as f32)
    }
}

/// The mantissa digits of a floating dtype (`std::numeric_limits<T>::digits`), or the largest
/// value of an integral one.
fn random_upper_bound(dtype: ScalarType) -> u64 {
    match dtype {
        ScalarType::Bool => 1,
        ScalarType::Byte => u8::MAX as u64,
        ScalarType::Char => i8::MAX as u64,
        ScalarType::Short => i16::MAX as u64,
        ScalarType::Int => i32::MAX as u64,
        ScalarType::Long => i64::MAX as u64,
        ScalarType::UInt16 => u16::MAX as u64,
        ScalarType::UInt32 => u32::MAX as u64,
        ScalarType::Float => 1 << 24,
        ScalarType::Double => 1 << 53,
        ScalarType::Half => 1 << 11,
        ScalarType::BFloat16 => 1 << 8,
        _ => 0,
    }
}

/// A bool tensor is drawn as bytes of the same layout (so in the same order), then copied.
fn bool_as_bytes(t: &Tensor) -> Result<Option<Tensor>> {
    if t.dtype() != ScalarType::Bool || t.is_meta() {
        return Ok(None);
    }
    crate::functions::empty_like_with(t, Some(ScalarType::Byte), None, None, None, None).map(Some)
}

/// `uniform_(from=0, to=1, generator=None)`: U[from, to), in PyTorch's order and precision.
pub fn uniform_<'a>(
    self_: &'a Tensor,
    from: f64,
    to: f64,
    generator: Option<&Generator>,
) -> Result<&'a Tensor> {
    uniform_impl(self_.base(), from, to, generator)?;
    Ok(self_)
}

/// `normal_(mean=0, std=1, generator=None)`: N(mean, std^2) (complex tensors: real and
/// imaginary parts each with std/sqrt(2), as PyTorch).
pub fn normal_<'a>(
    self_: &'a Tensor,
    mean: f64,
    std: f64,
    generator: Option<&Generator>,
) -> Result<&'a Tensor> {
    normal_impl(self_.base(), mean, std, generator)?;
    Ok(self_)
}

/// `random_()`: integers in [0, 2^digits] for floating dtypes, [0, max] for integral ones
/// (`uniform_int_distribution`: a 64-bit word for int64 and double, else 32 bits).
pub fn random_<'a>(self_: &'a Tensor, generator: Option<&Generator>) -> Result<&'a Tensor> {
    if let Some(bytes) = bool_as_bytes(self_)? {
        random_full(&bytes, ScalarType::Bool, generator)?;
        self_.copy_(&bytes)?;
        return Ok(self_);
    }
    random_full(self_, self_.dtype(), generator)?;
    Ok(self_)
}

/// `random_()` of `t` drawn as for `dtype` (bool tensors are drawn into bytes).
fn random_full(t: &Tensor, dtype: ScalarType, generator: Option<&Generator>) -> Result<()> {
    let bound = random_upper_bound(dtype);
    let wide = matches!(dtype, ScalarType::Long | ScalarType::Double);
    dispatch_real_and_bool!(t.dtype(), "random_kernel_cpu", T => fill_serial::<T>(
        t.base(),
        generator,
        |g, _| {
            let word = if wide { g.random64() } else { g.random() as u64 };
            let v = if dtype == ScalarType::Bool { word & 1 } else { word % (bound + 1) };
            T::from_i64(v as i64)
        },
    ))
}

/// `random_(from, to=None)`: integers in [from, to) (`to` None: up to the dtype's bound,
/// inclusive; from = int64 min: the full 64-bit range).
pub fn random_from_<'a>(
    self_: &'a Tensor,
    from: i64,
    to: Option<i64>,
    generator: Option<&Generator>,
) -> Result<&'a Tensor> {
    let dtype = self_.dtype();
    let range: Option<u64> = match to {
        Some(to) => {
            torch_check!(
                from < to,
                "random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"
            );
            Some(to.wrapping_sub(from) as u64)
        }
        None if from != i64::MIN => {
            let to_inc = random_upper_bound(dtype) as i64;
            torch_check!(
                from <= to_inc,
                "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' \
                 casted to dtype, but got from={from} > to_inc={to_inc}"
            );
            Some((to_inc.wrapping_sub(from) as u64).wrapping_add(1))
        }
        None => None,
    };
    // The range is the tensor's dtype's; a bool tensor is drawn into bytes of its layout.
    let bytes = bool_as_bytes(self_)?;
    let target = bytes.as_ref().unwrap_or(self_);
    macro_rules! fill {
        ($t:ty) => {
            fill_serial::<$t>(target.base(), generator, |g, _| match range {
                // `uniform_int_from_to`: a 64-bit word for ranges of 2^32 and more.
                Some(r) if r >= 1u64 << 32 => <$t>::from_i64((g.random64() % r) as i64 + from),
                Some(r) => <$t>::from_i64((g.random() as u64 % r) as i64 + from),
                None => <$t>::from_i64(g.random64() as i64),
            })
        };
    }
    // torch draws the barebones unsigned types from a range, not over all 64 bits.
    match (target.dtype(), range) {
        (d, None) if d.is_barebones_unsigned() => {
            return Err(crate::native::cpu::elements::not_implemented(
                "random_full_64_bits_range_kernel_cpu",
                d,
            ));
        }
        (ScalarType::UInt16, _) => fill!(u16),
        (ScalarType::UInt32, _) => fill!(u32),
        (ScalarType::UInt64, _) => fill!(u64),
        (d, _) => dispatch_real_and_bool!(d, "random_from_to_kernel_cpu", T => fill!(T)),
    }?;
    if let Some(bytes) = &bytes {
        self_.copy_(bytes)?;
    }
    Ok(self_)
}

/// `random_(to)`: integers in [0, to).
pub fn random_to_<'a>(
    self_: &'a Tensor,
    to: i64,
    generator: Option<&Generator>,
) -> Result<&'a Tensor> {
    random_from_(self_, 0, Some(to), generator)
}

/// `bernoulli_(p: float = 0.5)`: ones with probability `p` (a double uniform per element).
pub fn bernoulli_float_<'a>(
    self_: &'a Tensor,
    p: f64,
    generator: Option<&Generator>,
) -> Result<&'a Tensor> {
    torch_check!(
        (0.0..=1.0).contains(&p),
        "bernoulli_ expects p to be in [0, 1], but got p={p}"
    );
    if let Some(bytes) = bool_as_bytes(self_)? {
        bernoulli_float_(&bytes, p, generator)?;
        self_.copy_(&bytes)?;
        return Ok(self_);
    }
    dispatch_real_and_bool!(self_.dtype(), "bernoulli_scalar_cpu_", T => fill_serial::<T>(
        self_.base(),
        generator,
        |g, _| T::from_i64((draw_uniform_f64(g) < p) as i64),
    ))?;
    Ok(self_)
}

/// `bernoulli_(p: Tensor)`: ones with the probabilities of `p` (broadcast to `self`); a double
/// `p` draws double uniforms, others float ones. A non-contiguous `self` is drawn in row-major
/// order.
pub fn bernoulli_<'a>(
    self_: &'a Tensor,
    p: &Tensor,
    generator: Option<&Generator>,
) -> Result<&'a Tensor> {
    torch_check!(
        p.dtype().is_floating_point(),
        "expected probabilities tensor to have floating type, got {}",
        p.dtype()
    );
    if self_.is_meta() {
        return Ok(self_);
    }
    let probs = p
        .expand(&self_.sizes())?
        .to_dtype(ScalarType::Double)?
        .contiguous()?
        .to_vec::<f64>()?;
    let double = p.dtype() == ScalarType::Double;
    let target = if self_.is_contiguous() && self_.dtype() != ScalarType::Bool {
        self_.clone()
    } else {
        let dtype = (self_.dtype() == ScalarType::Bool).then_some(ScalarType::Byte);
        crate::functions::empty_like_with(
            self_,
            dtype,
            None,
            None,
            None,
            Some(crate::native::MemoryFormat::Contiguous),
        )?
    };
    dispatch_real_and_bool!(self_.dtype(), "bernoulli_tensor_cpu_self_", T => fill_serial::<T>(
        target.base(),
        generator,
        |g, i| {
            let hit = if double {
                draw_uniform_f64(g) < probs[i]
            } else {
                uniform_f32(g) < probs[i] as f32
            };
            T::from_i64(hit as i64)
        },
    ))?;
    if !target.is_same(self_) {
        self_.copy_(&target)?;
    }
    Ok(self_)
}

/// `exponential_(lambd=1)`: `-1/lambd * log1p(-u)` with `u` a double uniform per element,
/// rounded to the element type (torch's kernel without MKL, which it also runs on non-Intel
/// CPUs; see Note [Random operators]).
pub fn exponential_<'a>(
    self_: &'a Tensor,
    lambd: f64,
    generator: Option<&Generator>,
) -> Result<&'a Tensor> {
    torch_check!(
        lambd > 0.0,
        "exponential_ expects lambda > 0.0, but found lambda={}",
        ratten_core::scalar::format_g(lambd)
    );
    let dtype = self_.dtype();
    torch_check!(
        dtype.is_floating_point(),
        "Exponential distribution is a continuous probability distribution. dtype must be a \
         floating point but you specified {dtype}"
    );
    let sample = move |g: &mut CpuGeneratorImpl| -1.0 / lambd * (-draw_uniform_f64(g)).ln_1p();
    let t = self_.base();
    match dtype {
        ScalarType::Float => fill_serial::<f32>(t, generator, |g, _| sample(g) as f32),
        ScalarType::Double => fill_serial::<f64>(t, generator, |g, _| sample(g)),
        // `static_cast<Half>(double)` converts through float.
        ScalarType::Half => {
            fill_serial::<f16>(t, generator, |g, _| f16::from_f32(sample(g) as f32))
        }
        ScalarType::BFloat16 => {
            fill_serial::<bf16>(t, generator, |g, _| bf16::from_f32(sample(g) as f32))
        }
        other => Err(not_implemented("exponential_cpu", other)),
    }?;
    Ok(self_)
}

/// `multinomial(self, num_samples, replacement=False)`: a Long tensor of category indices.
pub fn multinomial(
    self_: &Tensor,
    num_samples: i64,
    replacement: bool,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    let result = crate::functions::empty_with(
        &[0],
        Some(ScalarType::Long),
        None,
        Some(self_.device()),
        None,
        None,
    )?;
    multinomial_out(self_, num_samples, replacement, generator, &result)?;
    Ok(result)
}

/// `multinomial(..., out=)` (Distributions.cpp): without replacement (or for one sample) the
/// Gumbel trick, `topk(p / q)` with `q ~ Exp(1)`; with replacement a binary search of a
/// double uniform in each row's normalised cumulative distribution.
pub fn multinomial_out<'a>(
    self_: &Tensor,
    num_samples: i64,
    replacement: bool,
    generator: Option<&Generator>,
    result: &'a Tensor,
) -> Result<&'a Tensor> {
    torch_check!(
        result.device() == self_.device(),
        "multinomial arguments must have the same device"
    );
    torch_check!(
        self_.dim() > 0 && self_.dim() <= 2,
        "prob_dist must be 1 or 2 dim"
    );
    torch_check!(
        self_.dtype().is_floating_point(),
        "multinomial only supports floating-point dtypes for input, got: {}",
        self_.dtype()
    );
    torch_check!(
        result.dtype() == ScalarType::Long,
        "multinomial expects Long tensor out, got: {}",
        result.dtype()
    );
    torch_check!(num_samples > 0, "cannot sample n_sample <= 0 samples");
    let n_categories = self_.size(-1)?;
    torch_check!(
        replacement || num_samples <= n_categories,
        "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
    );
    // FLOAT32_MAX_CONSECUTIVE_INT: indices are compared as floats on some devices.
    torch_check!(
        n_categories <= 1 << 24,
        "number of categories cannot exceed 2^24"
    );
    if self_.dim() == 1 {
        result.resize_(&[num_samples])?;
    } else {
        result.resize_(&[self_.size(0)?, num_samples])?;
    }
    if result.numel() == 0 || self_.is_meta() {
        return Ok(result);
    }

    if !replacement || num_samples == 1 {
        // torch checks `max < inf & min >= 0` (NaN fails both), then that no row sums to 0.
        // torch's `self.max()` of an empty tensor is the first to refuse.
        torch_check!(
            n_categories > 0,
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no \
             identity."
        );
        let probs = self_
            .to_dtype(ScalarType::Double)?
            .contiguous()?
            .to_vec::<f64>()?;
        torch_check!(
            probs.iter().all(|p| (0.0..f64::INFINITY).contains(p)),
            "probability tensor contains either `inf`, `nan` or element < 0"
        );
        let row = n_categories.max(1) as usize;
        torch_check!(
            !probs.chunks(row).any(|r| r.iter().all(|&p| p == 0.0)),
            "invalid multinomial distribution (sum of probabilities <= 0)"
        );
        // s = argmax(log p - log(-log u)) = argmax(p / q), q ~ Exp(1).
        let q = crate::functions::empty_like(self_)?;
        q.exponential_with_(1.0, generator)?;
        crate::generated::operators::div_out::call(self_, &q, &q)?;
        if num_samples == 1 {
            crate::generated::operators::argmax_out::call(&q, Some(-1), true, result)?;
        } else {
            let values = crate::functions::empty_with(
                &result.sizes(),
                Some(self_.dtype()),
                None,
                Some(self_.device()),
                None,
                None,
            )?;
            crate::generated::operators::topk_values::call(
                &q,
                num_samples,
                -1,
                true,
                true,
                &values,
                result,
            )?;
        }
        return Ok(result);
    }

    torch_check!(
        n_categories > 0,
        "invalid multinomial distribution (sum of probabilities <= 0)"
    );
    let samples = match self_.dtype() {
        ScalarType::Double => {
            let probs = self_.contiguous()?.to_vec::<f64>()?;
            multinomial_with_replacement(&probs, n_categories as usize, num_samples, generator)?
        }
        // Float, and Half / BFloat16 accumulated in float as torch's reduced-precision kernel.
        _ => {
            let probs = self_
                .to_dtype(ScalarType::Float)?
                .contiguous()?
                .to_vec::<f32>()?;
            multinomial_with_replacement(&probs, n_categories as usize, num_samples, generator)?
        }
    };
    let sizes = result.sizes();
    result.copy_(&Tensor::from_vec(samples, &sizes)?)?;
    Ok(result)
}

/// `multinomial_with_replacement_apply` over rows of `n_categories` probabilities in `T`
/// (float or double, as torch's cumulative distribution), drawing `n_sample` per row.
fn multinomial_with_replacement<T>(
    probs: &[T],
    n_categories: usize,
    n_sample: i64,
    generator: Option<&Generator>,
) -> Result<Vec<i64>>
where
    T: num_traits::Float + Into<f64>,
{
    let gen = generator.unwrap_or_else(|| default_generator());
    let mut state = gen.lock();
    let mut cum_dist = vec![T::zero(); n_categories];
    let mut out = Vec::with_capacity(probs.len() / n_categories * n_sample as usize);
    for row in probs.chunks(n_categories) {
        let mut sum = T::zero();
        for (c, &val) in cum_dist.iter_mut().zip(row) {
            torch_check!(
                val >= T::zero(),
                "invalid multinomial distribution (encountering probability entry < 0)"
            );
            torch_check!(
                val.is_finite(),
                "invalid multinomial distribution (encountering probability entry = infinity \
                 or NaN)"
            );
            sum = sum + val;
            *c = sum;
        }
        torch_check!(
            sum > T::zero(),
            "invalid multinomial distribution (sum of probabilities <= 0)"
        );
        for c in cum_dist.iter_mut() {
            *c = *c / sum;
        }
        // The last bucket holds the rest of the mass, whatever the rounding.
        cum_dist[n_categories - 1] = T::one();
        for _ in 0..n_sample {
            let u = draw_uniform_f64(&mut state);
            // The first slot whose cumulative probability is >= u.
            out.push(cum_dist.partition_point(|&c| c.into() < u) as i64);
        }
    }
    Ok(out)
}

/// `bernoulli(self)`: a tensor like `self` of ones with the probabilities in `self`.
pub fn bernoulli(self_: &Tensor, generator: Option<&Generator>) -> Result<Tensor> {
    let out = crate::functions::empty_like_with(
        self_,
        None,
        None,
        None,
        None,
        Some(crate::native::MemoryFormat::Contiguous),
    )?;
    out.bernoulli_with_(self_, generator)?;
    Ok(out)
}

/// `bernoulli(self, out=)`.
pub fn bernoulli_out<'a>(
    self_: &Tensor,
    generator: Option<&Generator>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    out.resize_(&self_.sizes())?;
    out.bernoulli_with_(self_, generator)
}

/// `bernoulli(self, p: float)`: a tensor like `self` of ones with probability `p`.
pub fn bernoulli_p(self_: &Tensor, p: f64, generator: Option<&Generator>) -> Result<Tensor> {
    let out = crate::functions::empty_like_with(
        self_,
        None,
        None,
        None,
        None,
        Some(crate::native::MemoryFormat::Contiguous),
    )?;
    out.bernoulli_float_with_(p, generator)?;
    Ok(out)
}

type Opts = (
    Option<ScalarType>,
    Option<crate::native::Layout>,
    Option<Device>,
    Option<bool>,
);

fn empty_of(size: &[i64], (dtype, layout, device, pin): Opts) -> Result<Tensor> {
    crate::generated::operators::empty_memory_format::call(size, dtype, layout, device, pin, None)
}

/// `rand(size, ...)`: U[0, 1) samples.
pub fn rand(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    rand_generator(size, None, dtype, layout, device, pin_memory)
}

/// `rand(size, generator=, ...)`.
pub fn rand_generator(
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let t = empty_of(size, (dtype, layout, device, pin_memory))?;
    t.uniform_with_(0.0, 1.0, generator)?;
    Ok(t)
}

/// `rand(size, out=)`.
pub fn rand_out<'a>(size: &[i64], out: &'a Tensor) -> Result<&'a Tensor> {
    rand_generator_out(size, None, out)
}

/// `rand(size, generator=, out=)`.
pub fn rand_generator_out<'a>(
    size: &[i64],
    generator: Option<&Generator>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    out.resize_(size)?;
    out.uniform_with_(0.0, 1.0, generator)
}

/// `rand_like(self, ...)`.
pub fn rand_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<crate::native::MemoryFormat>,
) -> Result<Tensor> {
    let t =
        crate::functions::empty_like_with(self_, dtype, layout, device, pin_memory, memory_format)?;
    t.uniform_with_(0.0, 1.0, None)?;
    Ok(t)
}

/// `randn(size, ...)`: standard normal samples.
pub fn randn(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randn_generator(size, None, dtype, layout, device, pin_memory)
}

/// `randn(size, generator=, ...)`.
pub fn randn_generator(
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let t = empty_of(size, (dtype, layout, device, pin_memory))?;
    t.normal_with_(0.0, 1.0, generator)?;
    Ok(t)
}

/// `randn(size, out=)`.
pub fn randn_out<'a>(size: &[i64], out: &'a Tensor) -> Result<&'a Tensor> {
    randn_generator_out(size, None, out)
}

/// `randn(size, generator=, out=)`.
pub fn randn_generator_out<'a>(
    size: &[i64],
    generator: Option<&Generator>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    out.resize_(size)?;
    out.normal_with_(0.0, 1.0, generator)
}

/// `randn_like(self, ...)`.
pub fn randn_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<crate::native::MemoryFormat>,
) -> Result<Tensor> {
    let t =
        crate::functions::empty_like_with(self_, dtype, layout, device, pin_memory, memory_format)?;
    t.normal_with_(0.0, 1.0, None)?;
    Ok(t)
}

/// `randint(high, size, dtype=long, ...)`.
pub fn randint(
    high: i64,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randint_low_generator(0, high, size, None, dtype, layout, device, pin_memory)
}

/// `randint(high, size, generator=, ...)`.
pub fn randint_generator(
    high: i64,
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randint_low_generator(0, high, size, generator, dtype, layout, device, pin_memory)
}

/// `randint(low, high, size, ...)`.
pub fn randint_low(
    low: i64,
    high: i64,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randint_low_generator(low, high, size, None, dtype, layout, device, pin_memory)
}

/// `randint(low, high, size, generator=, dtype=long, ...)`: `empty(size).random_(low, high)`.
#[allow(clippy::too_many_arguments)]
pub fn randint_low_generator(
    low: i64,
    high: i64,
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = Some(dtype.unwrap_or(ScalarType::Long));
    let t = empty_of(size, (dtype, layout, device, pin_memory))?;
    t.random_from_with_(low, Some(high), generator)?;
    Ok(t)
}

/// `randint(high, size, out=)`.
pub fn randint_out<'a>(high: i64, size: &[i64], out: &'a Tensor) -> Result<&'a Tensor> {
    randint_low_generator_out(0, high, size, None, out)
}

/// `randint(high, size, generator=, out=)`.
pub fn randint_generator_out<'a>(
    high: i64,
    size: &[i64],
    generator: Option<&Generator>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    randint_low_generator_out(0, high, size, generator, out)
}

/// `randint(low, high, size, out=)`.
pub fn randint_low_out<'a>(
    low: i64,
    high: i64,
    size: &[i64],
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    randint_low_generator_out(low, high, size, None, out)
}

/// `randint(low, high, size, generator=, out=)`.
pub fn randint_low_generator_out<'a>(
    low: i64,
    high: i64,
    size: &[i64],
    generator: Option<&Generator>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    out.resize_(size)?;
    out.random_from_with_(low, Some(high), generator)
}

/// `randint_like(self, high, ...)`.
pub fn randint_like(
    self_: &Tensor,
    high: i64,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<crate::native::MemoryFormat>,
) -> Result<Tensor> {
    randint_like_low_dtype(
        self_,
        0,
        high,
        dtype,
        layout,
        device,
        pin_memory,
        memory_format,
    )
}

/// `randint_like(self, low, high, ...)`.
#[allow(clippy::too_many_arguments)]
pub fn randint_like_low_dtype(
    self_: &Tensor,
    low: i64,
    high: i64,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<crate::native::MemoryFormat>,
) -> Result<Tensor> {
    let t =
        crate::functions::empty_like_with(self_, dtype, layout, device, pin_memory, memory_format)?;
    t.random_from_with_(low, Some(high), None)?;
    Ok(t)
}

/// `randperm(n, dtype=long, ...)`.
pub fn randperm(
    n: i64,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randperm_generator(n, None, dtype, layout, device, pin_memory)
}

/// `randperm(n, generator=, dtype=long, ...)`.
pub fn randperm_generator(
    n: i64,
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    torch_check!(n >= 0, "n must be non-negative, got{n}");
    let dtype = Some(dtype.unwrap_or(ScalarType::Long));
    let t = empty_of(&[n], (dtype, layout, device, pin_memory))?;
    crate::generated::operators::randperm_generator_out::call(n, generator, &t)?;
    Ok(t)
}

/// `randperm(n, out=)`.
pub fn randperm_out(n: i64, out: &Tensor) -> Result<&Tensor> {
    crate::generated::operators::randperm_generator_out::call(n, None, out)?;
    Ok(out)
}

/// `randperm(n, generator=, out=)` (`randperm_cpu`): below 2^32 / 20 elements, the identity
/// shuffled by swapping element `i` with one of `i..n` chosen by `random() % (n - i)`; above,
/// the inside-out Fisher-Yates shuffle with 64-bit words.
pub fn randperm_out_cpu<'a>(
    n: i64,
    generator: Option<&Generator>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    torch_check!(n >= 0, "n must be non-negative, got{n}");
    let dtype = out.dtype();
    // torch's "randperm" dispatch list has no barebones unsigned types.
    if dtype.is_barebones_unsigned() {
        out.resize_(&[n])?;
        return Err(not_implemented("randperm", dtype));
    }
    let bound = random_upper_bound(dtype);
    torch_check!(
        dtype != ScalarType::Bool && (n as u64) <= bound.saturating_add(1),
        "n is too large for result tensor type: '{}'",
        crate::native::view::legacy_type_str(dtype, out.device())
    );
    out.resize_(&[n])?;
    if out.is_meta() || n == 0 {
        return Ok(out);
    }
    let gen = generator.unwrap_or_else(|| default_generator());
    let perm: Vec<i64> = {
        let mut g = gen.lock();
        let n_us = n as usize;
        if (n as u64) < u32::MAX as u64 / 20 {
            let mut r: Vec<i64> = (0..n).collect();
            for i in 0..n_us.saturating_sub(1) {
                let z = g.random() as usize % (n_us - i);
                r.swap(i, z + i);
            }
            r
        } else {
            let mut r = vec![0i64; n_us];
            for i in 0..n_us {
                let z = (g.random64() % (i as u64 + 1)) as usize;
                r[i] = r[z];
                r[z] = i as i64;
            }
            r
        }
    };
    out.copy_(&Tensor::from_vec(perm, &[n])?)?;
    Ok(out)
}

/// `CHECK_NORMAL_TENSOR_STD`.
fn check_normal_std_tensor(std: &Tensor) -> Result<()> {
    torch_check!(
        !std.dtype().is_complex(),
        "normal expects standard deviation to be non-complex"
    );
    if std.numel() > 0 && !std.is_meta() {
        let min = std
            .min()?
            .to_dtype(ScalarType::Double)?
            .item()?
            .to::<f64>()?;
        torch_check!(min >= 0.0, "normal expects all elements of std >= 0.0");
    }
    Ok(())
}

/// `normal(mean: Tensor, std: float = 1, out=)`: N(0, std) samples plus `mean`.
pub fn normal_tensor_float_out<'a>(
    mean: &Tensor,
    std: f64,
    generator: Option<&Generator>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    torch_check!(std >= 0.0, "normal expects std >= 0.0, but found std {std}");
    crate::structured::resize_output(out, &mean.sizes())?;
    out.normal_with_(0.0, std, generator)?;
    out.add_(mean)
}

/// `normal(mean: Tensor, std: float = 1)`.
pub fn normal_tensor_float(
    mean: &Tensor,
    std: f64,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    let out = crate::functions::empty_like_with(
        mean,
        None,
        None,
        None,
        None,
        Some(crate::native::MemoryFormat::Contiguous),
    )?;
    normal_tensor_float_out(mean, std, generator, &out)?;
    Ok(out)
}

/// `normal(mean: float, std: Tensor, out=)`: standard normal samples times `std` plus `mean`.
pub fn normal_float_tensor_out<'a>(
    mean: f64,
    std: &Tensor,
    generator: Option<&Generator>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    check_normal_std_tensor(std)?;
    crate::structured::resize_output(out, &std.sizes())?;
    out.normal_with_(0.0, 1.0, generator)?;
    out.mul_(std)?;
    let mean_t =
        crate::functions::full_with(&[], mean, Some(out.dtype()), None, Some(out.device()), None)?;
    out.add_(&mean_t)
}

/// `normal(mean: float, std: Tensor)`.
pub fn normal_float_tensor(
    mean: f64,
    std: &Tensor,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    let out = crate::functions::empty_like_with(
        std,
        None,
        None,
        None,
        None,
        Some(crate::native::MemoryFormat::Contiguous),
    )?;
    normal_float_tensor_out(mean, std, generator, &out)?;
    Ok(out)
}

/// `normal(mean: Tensor, std: Tensor, out=)`: standard normal samples of the broadcast shape,
/// times `std`, plus `mean`.
pub fn normal_tensor_tensor_out<'a>(
    mean: &Tensor,
    std: &Tensor,
    generator: Option<&Generator>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    check_normal_std_tensor(std)?;
    let shape = crate::tensor_iterator::infer_size(&mean.sizes(), &std.sizes())?;
    crate::structured::resize_output(out, &shape)?;
    out.normal_with_(0.0, 1.0, generator)?;
    out.mul_(std)?;
    out.add_(mean)
}

/// `normal(mean: Tensor, std: Tensor)`.
pub fn normal_tensor_tensor(
    mean: &Tensor,
    std: &Tensor,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    let out = crate::functions::empty_with(
        &[0],
        Some(mean.dtype()),
        None,
        Some(mean.device()),
        None,
        None,
    )?;
    normal_tensor_tensor_out(mean, std, generator, &out)?;
    Ok(out)
}

/// `normal(mean: float, std: float, size, ...)`.
#[allow(clippy::too_many_arguments)]
pub fn normal_float_float(
    mean: f64,
    std: f64,
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<crate::native::Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let t = empty_of(size, (dtype, layout, device, pin_memory))?;
    t.normal_with_(mean, std, generator)?;
    Ok(t)
}

/// `normal(mean: float, std: float, size, out=)`.
pub fn normal_float_float_out<'a>(
    mean: f64,
    std: f64,
    size: &[i64],
    generator: Option<&Generator>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    out.resize_(size)?;
    out.normal_with_(mean, std, generator)
}

impl Tensor {
    /// `torch.rand(sizes, dtype=, device=)`: U[0, 1) samples from the default generator.
    pub fn rand(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        Self::rand_with(sizes, options, None)
    }

    /// `torch.rand(sizes, generator=, dtype=, device=)`.
    pub fn rand_with(
        sizes: &[i64],
        options: impl Into<TensorOptions>,
        generator: Option<&Generator>,
    ) -> Result<Tensor> {
        let o = options.into();
        crate::generated::operators::rand_generator::call(
            sizes, generator, o.dtype, None, o.device, None,
        )
    }

    /// `torch.randn(sizes, dtype=, device=)`: standard normal samples.
    pub fn randn(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        Self::randn_with(sizes, options, None)
    }

    /// `torch.randn(sizes, generator=, dtype=, device=)`.
    pub fn randn_with(
        sizes: &[i64],
        options: impl Into<TensorOptions>,
        generator: Option<&Generator>,
    ) -> Result<Tensor> {
        let o = options.into();
        crate::generated::operators::randn_generator::call(
            sizes, generator, o.dtype, None, o.device, None,
        )
    }
}

fn uniform_impl(t: &TensorBase, from: f64, to: f64, generator: Option<&Generator>) -> Result<()> {
    let real = t.dtype().to_real();
    if !real.is_floating_point() {
        return Err(not_implemented("check_uniform_bounds", t.dtype()));
    }
    check_uniform_bounds(real, from, to)?;
    fill_random(t, generator, Dist::Uniform { from, to })
}

/// ATen's `check_uniform_bounds`: `from` and `to` finite values of the (real) dtype, in
/// order, and `to - from` within its range (U[-inf, inf) has no meaning); NaN fails the
/// first check, as in ATen.
fn check_uniform_bounds(real: ScalarType, from: f64, to: f64) -> Result<()> {
    use ratten_core::scalar::format_g;
    let (max, cpp_name) = match real {
        ScalarType::Half => (f64::from(f16::MAX), "c10::Half"),
        ScalarType::BFloat16 => (f64::from(bf16::MAX), "c10::BFloat16"),
        ScalarType::Float => (f64::from(f32::MAX), "float"),
        _ => (f64::MAX, "double"),
    };
    for (v, name) in [(from, "from"), (to, "to")] {
        torch_check!(
            v >= -max && v <= max,
            "{} is out of bounds for {}",
            name,
            cpp_name
        );
    }
    torch_check!(
        from <= to,
        "uniform_ expects to return a [from, to) range, but found from={} > to={}",
        format_g(from),
        format_g(to)
    );
    torch_check!(
        to - from <= max,
        "uniform_ expects to-from <= std::numeric_limits<{}>::max(), but found to={} and from={} \
         which result in to-from to exceed the limit",
        real,
        format_g(to),
        format_g(from)
    );
    Ok(())
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
    fn uniform_bounds_as_aten() {
        let msg = |dtype, from, to| {
            let t = Tensor::zeros(&[2], dtype).unwrap();
            uniform_(&t, from, to, None)
                .unwrap_err()
                .message()
                .to_string()
        };
        let inf = f64::INFINITY;
        assert_eq!(
            msg(ScalarType::Float, -inf, inf),
            "from is out of bounds for float"
        );
        assert_eq!(
            msg(ScalarType::Float, 0.0, inf),
            "to is out of bounds for float"
        );
        assert_eq!(
            msg(ScalarType::Double, f64::NAN, 1.0),
            "from is out of bounds for double"
        );
        assert_eq!(
            msg(ScalarType::Half, -1e6, 0.0),
            "from is out of bounds for c10::Half"
        );
        assert_eq!(
            msg(ScalarType::Float, 2.0, 1.0),
            "uniform_ expects to return a [from, to) range, but found from=2 > to=1"
        );
        assert_eq!(
            msg(ScalarType::Double, -1e308, 1e308),
            "uniform_ expects to-from <= std::numeric_limits<Double>::max(), but found \
             to=1e+308 and from=-1e+308 which result in to-from to exceed the limit"
        );
        // In range: filled, within [from, to].
        let t = Tensor::zeros(&[64], ScalarType::Double).unwrap();
        uniform_(&t, -1e300, 1e300, None).unwrap();
        assert!(t.to_vec::<f64>().unwrap().iter().all(|v| v.abs() <= 1e300));
    }

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
