//! The vectorised CPU kernels (aten/src/ATen/native/cpu): element casts, the loop drivers that
//! TensorIterator's 2-D loops run (`cpu_kernel` / `cpu_kernel_vec`), and the kernels behind
//! the pointwise DispatchStubs.
//!
//! One driver serves every dtype combination: per 2-D loop call it takes
//! - the **contiguous fast path** when every operand has the computation type and unit
//!   strides (a plain indexed loop that LLVM vectorises for the stub's ISA),
//! - the **scalar-operand path** when one input has stride 0 (its value is hoisted),
//! - otherwise the **block path**: up to `BLOCK` elements of each input are loaded into an
//!   L1-resident buffer of the computation type (casting from the input's dtype, any stride),
//!   computed with the same vectorised body, and stored to the output (casting to its dtype).
//!   This is the strided fallback and the fused casting pass in one; half and bfloat16 are
//!   computed in f32 this way (their "opmath" type).
//!
//! When an input moves with a large stride along the inner dimension but a small one along the
//! outer (a transposed operand), the 2-D loop is walked in `TILE`x`TILE` tiles so the lines of
//! that operand are reused from L1 and the TLB is not thrashed.

pub mod binary_kernels;
pub mod unary_kernels;

use half::{bf16, f16};
use num_complex::Complex;
use ratten_core::dtype::{c128, c32, c64};
use ratten_core::{dispatch_all_types, Error, Result, ScalarType};

use crate::dispatch_stub::{run_isa, Isa};
use crate::tensor_iterator::{TensorIteratorBase, GRAIN_SIZE};

/// Elements per block of the block path (fits three buffers of complex doubles in L1).
pub const BLOCK: usize = 256;
/// Tile edge for transposed operands.
pub const TILE: usize = 64;

/// The kind of an element type (c10's categories).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Bool,
    Int,
    Float,
    Complex,
}

/// An element type the kernels read, write and compute in, with c10's `static_cast`
/// conversions through the widest type of each kind.
pub trait Elem: Copy + Send + Sync + Default + PartialEq + 'static {
    const KIND: Kind;
    const DTYPE: ScalarType;
    fn to_i64(self) -> i64;
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
    fn to_c(self) -> c128;
    fn to_bool(self) -> bool;
    fn from_i64(v: i64) -> Self;
    fn from_f32(v: f32) -> Self;
    fn from_f64(v: f64) -> Self;
    fn from_c(v: c128) -> Self;
    fn from_bool(v: bool) -> Self;
    /// Reads an element from tensor memory.
    ///
    /// # Safety
    /// `p` must point at a readable, aligned element of this type.
    #[inline(always)]
    unsafe fn read(p: *const u8) -> Self {
        // SAFETY: per the contract.
        unsafe { p.cast::<Self>().read() }
    }
}

macro_rules! elem_int {
    ($($t:ty => $d:ident),*) => {$(
        impl Elem for $t {
            const KIND: Kind = Kind::Int;
            const DTYPE: ScalarType = ScalarType::$d;
            #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)] fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)] fn to_c(self) -> c128 { Complex::new(self as f64, 0.0) }
            #[inline(always)] fn to_bool(self) -> bool { self != 0 }
            #[inline(always)] fn from_i64(v: i64) -> Self { v as $t }
            // c10 goes through int64 for narrow targets (x86 truncation semantics); Rust's
            // `as` saturates where C++ is undefined (out-of-range floats).
            #[inline(always)] fn from_f32(v: f32) -> Self { v as i64 as $t }
            #[inline(always)] fn from_f64(v: f64) -> Self { v as i64 as $t }
            #[inline(always)] fn from_c(v: c128) -> Self { v.re as i64 as $t }
            #[inline(always)] fn from_bool(v: bool) -> Self { v as $t }
        }
    )*};
}
elem_int!(u8 => Byte, i8 => Char, i16 => Short, i32 => Int, i64 => Long);

macro_rules! elem_float {
    ($($t:ty => $d:ident),*) => {$(
        impl Elem for $t {
            const KIND: Kind = Kind::Float;
            const DTYPE: ScalarType = ScalarType::$d;
            #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)] fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)] fn to_c(self) -> c128 { Complex::new(self as f64, 0.0) }
            #[inline(always)] fn to_bool(self) -> bool { self != 0.0 }
            #[inline(always)] fn from_i64(v: i64) -> Self { v as $t }
            #[inline(always)] fn from_f32(v: f32) -> Self { v as $t }
            #[inline(always)] fn from_f64(v: f64) -> Self { v as $t }
            #[inline(always)] fn from_c(v: c128) -> Self { v.re as $t }
            #[inline(always)] fn from_bool(v: bool) -> Self { v as u8 as $t }
        }
    )*};
}
elem_float!(f32 => Float, f64 => Double);

impl Elem for f16 {
    const KIND: Kind = Kind::Float;
    const DTYPE: ScalarType = ScalarType::Half;
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self.to_f32() as i64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    #[inline(always)]
    fn to_c(self) -> c128 {
        Complex::new(self.to_f64(), 0.0)
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self.to_f32() != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        f16::from_f32(v as f32)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    #[inline(always)]
    fn from_c(v: c128) -> Self {
        f16::from_f64(v.re)
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        f16::from_f32(v as u8 as f32)
    }
}

/// bfloat16 -> f32 is a shift (vectorises).
#[inline(always)]
pub fn bf16_to_f32(x: bf16) -> f32 {
    f32::from_bits((x.to_bits() as u32) << 16)
}

/// f32 -> bfloat16, round to nearest even, NaN kept quiet (c10's `round_to_nearest_even`);
/// branch-free so it vectorises.
#[inline(always)]
pub fn f32_to_bf16(v: f32) -> bf16 {
    let b = v.to_bits();
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    let nan = ((b >> 16) as u16) | 0x0040;
    bf16::from_bits(if v.is_nan() { nan } else { rounded })
}

impl Elem for bf16 {
    const KIND: Kind = Kind::Float;
    const DTYPE: ScalarType = ScalarType::BFloat16;
    #[inline(always)]
    fn to_i64(self) -> i64 {
        bf16_to_f32(self) as i64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16_to_f32(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        bf16_to_f32(self) as f64
    }
    #[inline(always)]
    fn to_c(self) -> c128 {
        Complex::new(self.to_f64(), 0.0)
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        bf16_to_f32(self) != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        f32_to_bf16(v as f32)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f32_to_bf16(v)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
    #[inline(always)]
    fn from_c(v: c128) -> Self {
        bf16::from_f64(v.re)
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        f32_to_bf16(v as u8 as f32)
    }
}

impl Elem for bool {
    const KIND: Kind = Kind::Bool;
    const DTYPE: ScalarType = ScalarType::Bool;
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as u8 as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn to_c(self) -> c128 {
        Complex::new(self as u8 as f64, 0.0)
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_c(v: c128) -> Self {
        v.re != 0.0 || v.im != 0.0
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        v
    }
    /// A byte that is not 0 or 1 (memory written as another dtype) still reads as a bool.
    #[inline(always)]
    unsafe fn read(p: *const u8) -> Self {
        // SAFETY: per the contract (one readable byte).
        unsafe { p.read() != 0 }
    }
}

macro_rules! elem_complex {
    ($($t:ty => $d:ident, $r:ty),*) => {$(
        impl Elem for $t {
            const KIND: Kind = Kind::Complex;
            const DTYPE: ScalarType = ScalarType::$d;
            #[inline(always)] fn to_i64(self) -> i64 { self.re.to_f64() as i64 }
            #[inline(always)] fn to_f32(self) -> f32 { self.re.to_f32() }
            #[inline(always)] fn to_f64(self) -> f64 { self.re.to_f64() }
            #[inline(always)] fn to_c(self) -> c128 { Complex::new(self.re.to_f64(), self.im.to_f64()) }
            #[inline(always)] fn to_bool(self) -> bool { self.re.to_f64() != 0.0 || self.im.to_f64() != 0.0 }
            #[inline(always)] fn from_i64(v: i64) -> Self { Complex::new(<$r>::from_i64(v), <$r>::default()) }
            #[inline(always)] fn from_f32(v: f32) -> Self { Complex::new(<$r>::from_f32(v), <$r>::default()) }
            #[inline(always)] fn from_f64(v: f64) -> Self { Complex::new(<$r>::from_f64(v), <$r>::default()) }
            #[inline(always)] fn from_c(v: c128) -> Self { Complex::new(<$r>::from_f64(v.re), <$r>::from_f64(v.im)) }
            #[inline(always)] fn from_bool(v: bool) -> Self { Self::from_i64(v as i64) }
        }
    )*};
}
elem_complex!(c32 => ComplexHalf, f16, c64 => ComplexFloat, f32, c128 => ComplexDouble, f64);

/// c10's `static_cast<D>(s)` between any two element types.
#[inline(always)]
pub fn cast<S: Elem, D: Elem>(s: S) -> D {
    if S::DTYPE == D::DTYPE {
        // SAFETY: equal dtypes mean equal element types (the Elem impls are one per dtype).
        return unsafe { std::mem::transmute_copy::<S, D>(&s) };
    }
    let wide = matches!(S::DTYPE, ScalarType::Double | ScalarType::ComplexDouble);
    match D::KIND {
        Kind::Complex => D::from_c(s.to_c()),
        Kind::Bool => D::from_bool(s.to_bool()),
        Kind::Int => match S::KIND {
            Kind::Bool | Kind::Int => D::from_i64(s.to_i64()),
            Kind::Float | Kind::Complex => D::from_f64(s.to_f64()),
        },
        Kind::Float => match S::KIND {
            Kind::Bool | Kind::Int => {
                if std::mem::size_of::<S>() <= 4 {
                    D::from_f64(s.to_f64())
                } else {
                    D::from_i64(s.to_i64())
                }
            }
            Kind::Float | Kind::Complex => {
                if wide {
                    D::from_f64(s.to_f64())
                } else {
                    D::from_f32(s.to_f32())
                }
            }
        },
    }
}

/// Loads `dst.len()` elements of element type `T` from `p` (byte stride `s`) as `M`.
///
/// # Safety
/// Every `p + i * s` for `i < dst.len()` must be a readable element of `T`.
#[inline(always)]
unsafe fn load_block_t<T: Elem, M: Elem>(p: *const u8, s: isize, dst: &mut [M]) {
    let n = dst.len();
    let es = std::mem::size_of::<T>() as isize;
    if s == 0 {
        // SAFETY: per the contract.
        let v = cast::<T, M>(unsafe { T::read(p) });
        dst.fill(v);
    } else if s == es {
        if T::DTYPE == ScalarType::Half && M::DTYPE == ScalarType::Float {
            // SAFETY: T is f16 and M is f32 (checked by dtype); `p` holds n contiguous f16s.
            unsafe {
                let src = std::slice::from_raw_parts(p.cast::<f16>(), n);
                let d = std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<f32>(), n);
                half::slice::HalfFloatSliceExt::convert_to_f32_slice(src, d);
            }
            return;
        }
        for (i, d) in dst.iter_mut().enumerate() {
            // SAFETY: contiguous elements, per the contract.
            *d = cast::<T, M>(unsafe { T::read(p.offset(i as isize * es)) });
        }
    } else {
        for (i, d) in dst.iter_mut().enumerate() {
            // SAFETY: per the contract.
            *d = cast::<T, M>(unsafe { T::read(p.offset(i as isize * s)) });
        }
    }
}

/// Stores `src` as element type `T` at `p` (byte stride `s`).
///
/// # Safety
/// Every `p + i * s` for `i < src.len()` must be a writable element of `T`.
#[inline(always)]
unsafe fn store_block_t<T: Elem, M: Elem>(p: *mut u8, s: isize, src: &[M]) {
    let n = src.len();
    let es = std::mem::size_of::<T>() as isize;
    if s == es && T::DTYPE == ScalarType::Half && M::DTYPE == ScalarType::Float {
        // SAFETY: T is f16 and M is f32 (checked by dtype); `p` holds n contiguous f16s.
        unsafe {
            let d = std::slice::from_raw_parts_mut(p.cast::<f16>(), n);
            let s = std::slice::from_raw_parts(src.as_ptr().cast::<f32>(), n);
            half::slice::HalfFloatSliceExt::convert_from_f32_slice(d, s);
        }
        return;
    }
    for (i, v) in src.iter().enumerate() {
        // SAFETY: per the contract.
        unsafe { p.offset(i as isize * s).cast::<T>().write(cast::<M, T>(*v)) };
    }
}

/// `load_block_t` for a run-time dtype, compiled once per (ISA, computation type) and shared
/// by every kernel (not inlined: one call per block of `BLOCK` elements).
///
/// # Safety
/// As `load_block_t`, with `T` the element type of `dt`.
#[inline(never)]
pub unsafe fn load_block<I: Isa, M: Elem>(dt: ScalarType, p: *const u8, s: isize, dst: &mut [M]) {
    dispatch_all_types!(dt, T => run_isa::<I, _>(
        #[inline(always)]
        // SAFETY: forwarded contract.
        || unsafe { load_block_t::<T, M>(p, s, dst) }
    ))
}

/// `store_block_t` for a run-time dtype (compiled once per ISA and computation type).
///
/// # Safety
/// As `store_block_t`, with `T` the element type of `dt`.
#[inline(never)]
pub unsafe fn store_block<I: Isa, M: Elem>(dt: ScalarType, p: *mut u8, s: isize, src: &[M]) {
    dispatch_all_types!(dt, T => run_isa::<I, _>(
        #[inline(always)]
        // SAFETY: forwarded contract.
        || unsafe { store_block_t::<T, M>(p, s, src) }
    ))
}

/// Rounds values computed in an opmath type through the reduced common dtype `via` (half,
/// bfloat16, complex32), as PyTorch's temporaries of the common dtype do: an input of another
/// dtype is first cast to the common dtype, and a result is stored in the common dtype before
/// it is cast to an output of another dtype (`half(33000) + half(33000)` into a float64 `out`
/// is inf).
#[inline(never)]
pub fn round_via<M: Elem>(via: ScalarType, buf: &mut [M]) {
    dispatch_all_types!(via, T => {
        for x in buf.iter_mut() {
            *x = cast::<T, M>(cast::<M, T>(*x));
        }
    })
}

/// The dtype results must be rounded through, if any (see [`round_via`]).
pub fn reduced_common(iter: &TensorIteratorBase) -> Option<ScalarType> {
    iter.common_dtype().filter(|d| {
        matches!(
            d,
            ScalarType::Half | ScalarType::BFloat16 | ScalarType::ComplexHalf
        )
    })
}

/// The computation ("opmath") type of a dtype: half, bfloat16 -> f32, complex32 -> complex64.
pub fn opmath_dtype(dt: ScalarType) -> ScalarType {
    match dt {
        ScalarType::Half | ScalarType::BFloat16 => ScalarType::Float,
        ScalarType::ComplexHalf => ScalarType::ComplexFloat,
        d => d,
    }
}

/// Runs `$body` with `$M` bound to the opmath type of `$dt` (see [`opmath_dtype`]).
#[macro_export]
macro_rules! dispatch_opmath {
    ($dt:expr, $M:ident => $body:expr) => {{
        use $crate::native::cpu::opmath_dtype;
        match opmath_dtype($dt) {
            ratten_core::ScalarType::Byte => {
                type $M = u8;
                $body
            }
            ratten_core::ScalarType::Char => {
                type $M = i8;
                $body
            }
            ratten_core::ScalarType::Short => {
                type $M = i16;
                $body
            }
            ratten_core::ScalarType::Int => {
                type $M = i32;
                $body
            }
            ratten_core::ScalarType::Long => {
                type $M = i64;
                $body
            }
            ratten_core::ScalarType::Float => {
                type $M = f32;
                $body
            }
            ratten_core::ScalarType::Double => {
                type $M = f64;
                $body
            }
            ratten_core::ScalarType::ComplexFloat => {
                type $M = ratten_core::dtype::c64;
                $body
            }
            ratten_core::ScalarType::ComplexDouble => {
                type $M = ratten_core::dtype::c128;
                $body
            }
            ratten_core::ScalarType::Bool => {
                type $M = bool;
                $body
            }
            // opmath_dtype never returns the reduced types.
            ratten_core::ScalarType::Half
            | ratten_core::ScalarType::BFloat16
            | ratten_core::ScalarType::ComplexHalf => unreachable!("opmath of a reduced type"),
        }
    }};
}

/// The `AT_DISPATCH` error: `"add_stub" not implemented for 'Bool'` (NotImplementedError).
pub fn not_implemented(kernel: &str, dt: ScalarType) -> Error {
    Error::not_implemented(format!("\"{kernel}\" not implemented for '{dt}'"))
}

/// Whether the 2-D loop should be tiled: some operand moves far along the inner dimension but
/// little along the outer one (a transposed operand).
#[inline(always)]
fn wants_tiling(strides: &[isize], nt: usize, n0: usize, n1: usize) -> bool {
    if n0 < TILE || n1 < TILE {
        return false;
    }
    (0..nt).any(|k| {
        let (s0, s1) = (strides[k].unsigned_abs(), strides[nt + k].unsigned_abs());
        s0 > 256 && s1 < s0
    })
}

/// Walks a 2-D loop row by row (or in tiles), calling `row(ptrs, n)` on runs along the inner
/// dimension.
///
/// # Safety
/// `data`/`strides` must describe a valid 2-D loop of `n0` x `n1` elements.
#[inline(always)]
pub unsafe fn walk_2d<const NT: usize>(
    data: &[*mut u8],
    strides: &[isize],
    n0: usize,
    n1: usize,
    mut row: impl FnMut(&[*mut u8; NT], usize),
) {
    let mut p = [std::ptr::null_mut::<u8>(); NT];
    let at = |k: usize, i: usize, j: usize| -> *mut u8 {
        data[k]
            .wrapping_offset(i as isize * strides[k])
            .wrapping_offset(j as isize * strides[NT + k])
    };
    if wants_tiling(strides, NT, n0, n1) {
        let mut j0 = 0;
        while j0 < n1 {
            let j1 = (j0 + TILE).min(n1);
            let mut i0 = 0;
            while i0 < n0 {
                let len = TILE.min(n0 - i0);
                for j in j0..j1 {
                    for (k, pk) in p.iter_mut().enumerate() {
                        *pk = at(k, i0, j);
                    }
                    row(&p, len);
                }
                i0 += TILE;
            }
            j0 = j1;
        }
        return;
    }
    for j in 0..n1 {
        for (k, pk) in p.iter_mut().enumerate() {
            *pk = at(k, 0, j);
        }
        row(&p, n0);
    }
}

/// The unary driver: `out = f(a)` computed in `M`, written as `R` (then cast to the output's
/// dtype). Operand 0 is the output.
///
/// # Safety
/// `ptrs` are operand pointers from a TensorIterator loop, `n` elements along `s`.
#[inline(always)]
pub unsafe fn unary_row<I: Isa, M: Elem, R: Elem>(
    via: Option<ScalarType>,
    dts: &[ScalarType; 2],
    p: &[*mut u8; 2],
    s: [isize; 2],
    n: usize,
    f: &impl Fn(M) -> R,
) {
    let (em, er) = (size_of::<M>() as isize, size_of::<R>() as isize);
    let direct = dts[0] == R::DTYPE && dts[1] == M::DTYPE && M::KIND != Kind::Bool;
    if direct && s[0] == er && s[1] == em {
        let (o, a) = (p[0].cast::<R>(), p[1].cast_const().cast::<M>());
        for i in 0..n {
            // SAFETY: contiguous runs of n elements of the right types.
            unsafe { o.add(i).write(f(a.add(i).read())) };
        }
        return;
    }
    let mut ba = [M::default(); BLOCK];
    let mut br = [R::default(); BLOCK];
    let mut start = 0;
    while start < n {
        let len = BLOCK.min(n - start);
        // SAFETY: the block lies within the run.
        unsafe {
            load_block::<I, M>(
                dts[1],
                p[1].offset(start as isize * s[1]),
                s[1],
                &mut ba[..len],
            );
        }
        if let Some(v) = via {
            if dts[1] != v {
                round_via(v, &mut ba[..len]);
            }
        }
        for i in 0..len {
            br[i] = f(ba[i]);
        }
        if let Some(v) = via {
            if dts[0] != v && R::KIND != Kind::Bool {
                round_via(v, &mut br[..len]);
            }
        }
        // SAFETY: as above.
        unsafe {
            store_block::<I, R>(dts[0], p[0].offset(start as isize * s[0]), s[0], &br[..len])
        };
        start += len;
    }
}

/// The binary driver: `out = f(a, b)`, with the contiguous, scalar-operand and block paths.
///
/// # Safety
/// As [`unary_row`].
#[inline(always)]
pub unsafe fn binary_row<I: Isa, M: Elem, R: Elem>(
    via: Option<ScalarType>,
    dts: &[ScalarType; 3],
    p: &[*mut u8; 3],
    s: [isize; 3],
    n: usize,
    f: &impl Fn(M, M) -> R,
) {
    let (em, er) = (size_of::<M>() as isize, size_of::<R>() as isize);
    let direct =
        dts[0] == R::DTYPE && dts[1] == M::DTYPE && dts[2] == M::DTYPE && M::KIND != Kind::Bool;
    if direct && s[0] == er {
        let o = p[0].cast::<R>();
        let (a, b) = (p[1].cast_const().cast::<M>(), p[2].cast_const().cast::<M>());
        // SAFETY (all three loops): runs of n elements of the right types, at the strides
        // tested by each branch.
        if s[1] == em && s[2] == em {
            for i in 0..n {
                unsafe { o.add(i).write(f(a.add(i).read(), b.add(i).read())) };
            }
            return;
        }
        if s[1] == 0 && s[2] == em {
            let x = unsafe { a.read() };
            for i in 0..n {
                unsafe { o.add(i).write(f(x, b.add(i).read())) };
            }
            return;
        }
        if s[2] == 0 && s[1] == em {
            let y = unsafe { b.read() };
            for i in 0..n {
                unsafe { o.add(i).write(f(a.add(i).read(), y)) };
            }
            return;
        }
    }
    let mut ba = [M::default(); BLOCK];
    let mut bb = [M::default(); BLOCK];
    let mut br = [R::default(); BLOCK];
    let mut start = 0;
    while start < n {
        let len = BLOCK.min(n - start);
        // SAFETY: the block lies within the run.
        unsafe {
            load_block::<I, M>(
                dts[1],
                p[1].offset(start as isize * s[1]),
                s[1],
                &mut ba[..len],
            );
            load_block::<I, M>(
                dts[2],
                p[2].offset(start as isize * s[2]),
                s[2],
                &mut bb[..len],
            );
        }
        if let Some(v) = via {
            if dts[1] != v {
                round_via(v, &mut ba[..len]);
            }
            if dts[2] != v {
                round_via(v, &mut bb[..len]);
            }
        }
        for i in 0..len {
            br[i] = f(ba[i], bb[i]);
        }
        if let Some(v) = via {
            if dts[0] != v && R::KIND != Kind::Bool {
                round_via(v, &mut br[..len]);
            }
        }
        // SAFETY: as above.
        unsafe {
            store_block::<I, R>(dts[0], p[0].offset(start as isize * s[0]), s[0], &br[..len])
        };
        start += len;
    }
}

/// The ternary driver: `out = f(a, b, c)` (contiguous and block paths).
///
/// # Safety
/// As [`unary_row`].
#[inline(always)]
pub unsafe fn ternary_row<I: Isa, M: Elem, R: Elem>(
    via: Option<ScalarType>,
    dts: &[ScalarType; 4],
    p: &[*mut u8; 4],
    s: [isize; 4],
    n: usize,
    f: &impl Fn(M, M, M) -> R,
) {
    let mut ba = [M::default(); BLOCK];
    let mut bb = [M::default(); BLOCK];
    let mut bc = [M::default(); BLOCK];
    let mut br = [R::default(); BLOCK];
    let mut start = 0;
    while start < n {
        let len = BLOCK.min(n - start);
        // SAFETY: the block lies within the run.
        unsafe {
            load_block::<I, M>(
                dts[1],
                p[1].offset(start as isize * s[1]),
                s[1],
                &mut ba[..len],
            );
            load_block::<I, M>(
                dts[2],
                p[2].offset(start as isize * s[2]),
                s[2],
                &mut bb[..len],
            );
            load_block::<I, M>(
                dts[3],
                p[3].offset(start as isize * s[3]),
                s[3],
                &mut bc[..len],
            );
        }
        if let Some(v) = via {
            for (k, buf) in [&mut ba, &mut bb, &mut bc].into_iter().enumerate() {
                if dts[k + 1] != v {
                    round_via(v, &mut buf[..len]);
                }
            }
        }
        for i in 0..len {
            br[i] = f(ba[i], bb[i], bc[i]);
        }
        if let Some(v) = via {
            if dts[0] != v && R::KIND != Kind::Bool {
                round_via(v, &mut br[..len]);
            }
        }
        // SAFETY: as above.
        unsafe {
            store_block::<I, R>(dts[0], p[0].offset(start as isize * s[0]), s[0], &br[..len])
        };
        start += len;
    }
}

fn check_arity(iter: &TensorIteratorBase, ninputs: usize) -> Result<()> {
    if iter.noutputs() != 1 || iter.ninputs() != ninputs {
        return Err(Error::runtime(format!(
            "cpu_kernel: expected 1 output and {ninputs} inputs, got {} and {}",
            iter.noutputs(),
            iter.ninputs()
        )));
    }
    Ok(())
}

/// `cpu_kernel` for a unary op, compiled for `I`.
pub fn cpu_unary<I: Isa, M: Elem, R: Elem>(
    iter: &TensorIteratorBase,
    f: impl Fn(M) -> R + Sync,
) -> Result<()> {
    check_arity(iter, 1)?;
    let dts = [iter.dtype(0), iter.dtype(1)];
    let via = reduced_common(iter);
    iter.for_each(
        &|data, strides, n0, n1| {
            run_isa::<I, _>(
                #[inline(always)]
                || {
                    // SAFETY: TensorIterator hands a valid 2-D loop over its operands.
                    unsafe {
                        walk_2d::<2>(
                            data,
                            strides,
                            n0,
                            n1,
                            #[inline(always)]
                            |p, n| {
                                unary_row::<I, M, R>(via, &dts, p, [strides[0], strides[1]], n, &f)
                            },
                        )
                    }
                },
            )
        },
        GRAIN_SIZE,
    )
}

/// `cpu_kernel_vec` for a binary op, compiled for `I`.
pub fn cpu_binary<I: Isa, M: Elem, R: Elem>(
    iter: &TensorIteratorBase,
    f: impl Fn(M, M) -> R + Sync,
) -> Result<()> {
    check_arity(iter, 2)?;
    let dts = [iter.dtype(0), iter.dtype(1), iter.dtype(2)];
    let via = reduced_common(iter);
    iter.for_each(
        &|data, strides, n0, n1| {
            run_isa::<I, _>(
                #[inline(always)]
                || {
                    // SAFETY: TensorIterator hands a valid 2-D loop over its operands.
                    unsafe {
                        walk_2d::<3>(
                            data,
                            strides,
                            n0,
                            n1,
                            #[inline(always)]
                            |p, n| {
                                binary_row::<I, M, R>(
                                    via,
                                    &dts,
                                    p,
                                    [strides[0], strides[1], strides[2]],
                                    n,
                                    &f,
                                )
                            },
                        )
                    }
                },
            )
        },
        GRAIN_SIZE,
    )
}

/// `cpu_kernel` for a ternary op, compiled for `I`.
pub fn cpu_ternary<I: Isa, M: Elem, R: Elem>(
    iter: &TensorIteratorBase,
    f: impl Fn(M, M, M) -> R + Sync,
) -> Result<()> {
    check_arity(iter, 3)?;
    let dts = [iter.dtype(0), iter.dtype(1), iter.dtype(2), iter.dtype(3)];
    let via = reduced_common(iter);
    iter.for_each(
        &|data, strides, n0, n1| {
            run_isa::<I, _>(
                #[inline(always)]
                || {
                    // SAFETY: TensorIterator hands a valid 2-D loop over its operands.
                    unsafe {
                        walk_2d::<4>(
                            data,
                            strides,
                            n0,
                            n1,
                            #[inline(always)]
                            |p, n| {
                                let s = [strides[0], strides[1], strides[2], strides[3]];
                                ternary_row::<I, M, R>(via, &dts, p, s, n, &f)
                            },
                        )
                    }
                },
            )
        },
        GRAIN_SIZE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_static_cast() {
        assert_eq!(cast::<f32, u8>(300.0), 44);
        assert_eq!(cast::<f64, i8>(-1.9), -1);
        assert_eq!(cast::<i64, i8>(300), 44);
        assert!(cast::<f32, bool>(0.5));
        assert!(!cast::<c64, bool>(Complex::new(0.0, 0.0)));
        assert_eq!(cast::<bool, f32>(true), 1.0);
        assert_eq!(cast::<c128, f32>(Complex::new(2.5, 1.0)), 2.5);
        assert_eq!(cast::<i32, f32>(16777217), 16777216.0);
        assert_eq!(cast::<f32, bf16>(1.0), bf16::from_f32(1.0));
        for v in [
            1.0f32,
            -3.3,
            1e30,
            65504.0,
            1.0 + 1.0 / 256.0,
            f32::INFINITY,
        ] {
            assert_eq!(f32_to_bf16(v), bf16::from_f32(v), "{v}");
        }
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
        assert_eq!(cast::<f16, f32>(f16::from_f32(1.5)), 1.5);
    }
}
