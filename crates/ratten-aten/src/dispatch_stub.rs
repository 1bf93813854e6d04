//! DispatchStub (aten/src/ATen/native/DispatchStub.{h,cpp}): one kernel slot per device; on the
//! CPU, one kernel per instruction set (DEFAULT, AVX2, AVX512), chosen at run time from the
//! CPU's features. `RATTEN_CPU_CAPABILITY` (or PyTorch's `ATEN_CPU_CAPABILITY`) =
//! `default` / `avx2` / `avx512` caps the choice; [`get_cpu_capability`] reports it (as
//! `torch.backends.cpu.get_cpu_capability()` does).
//!
//! A stub may hold a kernel per capability ([`DispatchStub::new`]) or one kernel that picks
//! its instruction set itself ([`DispatchStub::with_cpu_kernel`]): the pointwise kernels do,
//! their driver compiling the loops of each computation type for the ISAs that earn their
//! speed on it ([`with_isa`], Note [Kernel instantiations]) and running them at
//! [`kernel_capability`]. The loops are written once, generic over an [`Isa`] marker, and
//! compiled under `#[target_feature(enable = ...)]` for that ISA ([`run_isa`]) so LLVM
//! vectorises each for its width.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::OnceLock;

use parking_lot::RwLock;
use ratten_core::{DeviceType, Error, Result};

/// `at::native::CPUCapability`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CpuCapability {
    Default,
    Avx2,
    Avx512,
}

impl CpuCapability {
    /// The name `torch.backends.cpu.get_cpu_capability()` prints.
    pub fn name(self) -> &'static str {
        match self {
            CpuCapability::Default => "DEFAULT",
            CpuCapability::Avx2 => "AVX2",
            CpuCapability::Avx512 => "AVX512",
        }
    }

    fn parse(s: &str) -> Option<CpuCapability> {
        match s.to_ascii_lowercase().as_str() {
            "default" => Some(CpuCapability::Default),
            "avx2" => Some(CpuCapability::Avx2),
            "avx512" => Some(CpuCapability::Avx512),
            _ => None,
        }
    }
}

/// What this CPU supports (PyTorch needs avx512f/bw/vl/dq for AVX512 and avx2+fma for AVX2).
pub fn detected_cpu_capability() -> CpuCapability {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512dq")
        {
            return CpuCapability::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return CpuCapability::Avx2;
        }
    }
    CpuCapability::Default
}

/// `compute_cpu_capability`: the environment variable, capped at what the CPU supports (an
/// unknown value is ignored, as PyTorch warns and ignores it).
fn compute_cpu_capability() -> CpuCapability {
    let detected = detected_cpu_capability();
    let env = std::env::var("RATTEN_CPU_CAPABILITY")
        .or_else(|_| std::env::var("ATEN_CPU_CAPABILITY"))
        .ok();
    match env.as_deref().and_then(CpuCapability::parse) {
        Some(requested) => requested.min(detected),
        None => {
            if let Some(v) = env {
                crate::structured::warn(format!(
                    "ignoring invalid value for ATEN_CPU_CAPABILITY: {v}"
                ));
            }
            detected
        }
    }
}

static CAPABILITY: OnceLock<CpuCapability> = OnceLock::new();

/// The capability every CPU stub uses (fixed at first use).
pub fn get_cpu_capability() -> CpuCapability {
    *CAPABILITY.get_or_init(compute_cpu_capability)
}

thread_local! {
    static CAPABILITY_CAP: Cell<Option<CpuCapability>> = const { Cell::new(None) };
}

/// The capability the CPU kernels of this thread run at: [`get_cpu_capability`], or the cap
/// [`with_cpu_capability`] set. Kernels that pick their instruction set themselves (the
/// pointwise driver) read it once per call, before any work is split across threads.
#[inline]
pub fn kernel_capability() -> CpuCapability {
    match CAPABILITY_CAP.try_with(Cell::get) {
        Ok(Some(cap)) => cap,
        _ => get_cpu_capability(),
    }
}

/// Runs `f` with this thread's CPU kernels at capability `cap` (what the tests use to compare
/// the instruction sets; a capability the CPU lacks is refused).
pub fn with_cpu_capability<R>(cap: CpuCapability, f: impl FnOnce() -> R) -> Result<R> {
    if cap > detected_cpu_capability() {
        return Err(Error::runtime(format!(
            "with_cpu_capability: this CPU does not support {}",
            cap.name()
        )));
    }
    struct Restore(Option<CpuCapability>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CAPABILITY_CAP.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CAPABILITY_CAP.with(|c| c.replace(Some(cap))));
    Ok(f())
}

/// A kernel slot per device (`DispatchStub<FnPtr>`), declared as a `static`. The CPU
/// kernels are given at the declaration (one per capability); other devices register theirs at
/// run time with [`register`](Self::register) (`REGISTER_DISPATCH`).
pub struct DispatchStub<F: Copy + Send + Sync + 'static> {
    name: &'static str,
    cpu_default: F,
    cpu_avx2: F,
    cpu_avx512: F,
    /// The CPU kernel of [`get_cpu_capability`], chosen at the first call: one load per call
    /// afterwards (PyTorch caches the pointer in the stub the same way).
    cpu: OnceLock<F>,
    others: OnceLock<RwLock<HashMap<DeviceType, F>>>,
}

impl<F: Copy + Send + Sync + 'static> DispatchStub<F> {
    pub const fn new(name: &'static str, cpu_default: F, cpu_avx2: F, cpu_avx512: F) -> Self {
        DispatchStub {
            name,
            cpu_default,
            cpu_avx2,
            cpu_avx512,
            cpu: OnceLock::new(),
            others: OnceLock::new(),
        }
    }

    /// A stub with one CPU kernel for every capability: a kernel that picks its instruction
    /// set itself, as the pointwise driver does per computation type (Note [Kernel
    /// instantiations]).
    pub const fn with_cpu_kernel(name: &'static str, cpu: F) -> Self {
        Self::new(name, cpu, cpu, cpu)
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The CPU kernel for a capability.
    pub fn cpu_kernel(&self, cap: CpuCapability) -> F {
        match cap {
            CpuCapability::Default => self.cpu_default,
            CpuCapability::Avx2 => self.cpu_avx2,
            CpuCapability::Avx512 => self.cpu_avx512,
        }
    }

    /// `REGISTER_DISPATCH` for a non-CPU device (replaces an earlier registration).
    pub fn register(&self, device: DeviceType, kernel: F) -> Result<()> {
        if device == DeviceType::Cpu {
            return Err(Error::runtime(format!(
                "DispatchStub {}: CPU kernels are fixed at the declaration",
                self.name
            )));
        }
        self.others
            .get_or_init(|| RwLock::new(HashMap::new()))
            .write()
            .insert(device, kernel);
        Ok(())
    }

    /// The kernel for `device` (`DispatchStub::get_call_ptr`). Inlined: the CPU case is a
    /// compare and a load in the caller.
    #[inline(always)]
    pub fn get(&self, device: DeviceType) -> Result<F> {
        if device == DeviceType::Cpu {
            return Ok(self.cpu());
        }
        self.get_other(device)
    }

    /// The CPU kernel for [`get_cpu_capability`].
    #[inline(always)]
    pub fn cpu(&self) -> F {
        match self.cpu.get() {
            Some(f) => *f,
            None => self.init_cpu(),
        }
    }

    #[cold]
    #[inline(never)]
    fn init_cpu(&self) -> F {
        *self
            .cpu
            .get_or_init(|| self.cpu_kernel(get_cpu_capability()))
    }

    #[inline(never)]
    fn get_other(&self, device: DeviceType) -> Result<F> {
        self.others
            .get()
            .and_then(|m| m.read().get(&device).copied())
            .ok_or_else(|| {
                Error::runtime(format!(
                    "DispatchStub: missing kernel for {device} (stub {})",
                    self.name
                ))
            })
    }
}

/// The instruction set a kernel variant is compiled for (a type-level [`CpuCapability`]).
pub trait Isa: Send + Sync + 'static {
    const CAP: CpuCapability;
}
pub struct IsaDefault;
pub struct IsaAvx2;
pub struct IsaAvx512;
impl Isa for IsaDefault {
    const CAP: CpuCapability = CpuCapability::Default;
}
impl Isa for IsaAvx2 {
    const CAP: CpuCapability = CpuCapability::Avx2;
}
impl Isa for IsaAvx512 {
    const CAP: CpuCapability = CpuCapability::Avx512;
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn run_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn run_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Runs `f` compiled for `I`'s instruction set: `f` (an `#[inline(always)]` closure whose
/// callees are `#[inline(always)]`) is inlined into a `#[target_feature]` trampoline, so its
/// loops are vectorised for that ISA.
///
/// Only called through a stub whose capability was checked against the CPU
/// ([`get_cpu_capability`] never exceeds [`detected_cpu_capability`]).
///
/// Note [Closures and target features]: a closure is compiled with the target features of
/// the function it is *written* in, not of the trampoline it is inlined into. One that LLVM
/// leaves out of line (a closure called from several places, such as the `run` of the
/// kernels' streaming skeleton) is compiled for the baseline, SSE2, whatever the stub's
/// capability: 180 kernel instances' contiguous loops ran so in the AVX-512 kernels (a 64K
/// f32 `sin` took 81 us at every capability; 25 us once fixed). Every closure and function
/// a kernel's loops run through is therefore `#[inline(always)]`. (Entering the trampoline
/// again from such a closure also works, but costs two calls per piece: per 512-byte
/// streamed chunk, a measurable share of a 16M-element add.)
#[inline(always)]
pub fn run_isa<I: Isa, R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        match I::CAP {
            CpuCapability::Default => f(),
            // SAFETY: a kernel compiled for AVX2/AVX512 is only selected when the CPU has
            // those features (the capability is capped at the detected one), and the
            // tests call variants only after checking `detected_cpu_capability`.
            CpuCapability::Avx2 => unsafe { run_avx2(f) },
            // SAFETY: as above.
            CpuCapability::Avx512 => unsafe { run_avx512(f) },
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        f()
    }
}

/// Runs `$body` with `$I` bound to the ISA marker of capability `$cap` (a [`CpuCapability`]
/// the CPU has: [`kernel_capability`]'s), capped at `$widest`, a constant: the
/// variants above it are not compiled at all (Note [Kernel instantiations]), and a CPU above
/// it runs the widest one compiled.
macro_rules! with_isa {
    ($cap:expr, $widest:expr, $I:ident => $body:expr) => {{
        use $crate::dispatch_stub::CpuCapability as Cap;
        let cap: Cap = $cap;
        // `const` conditions first: the compiler decides them while instantiating.
        if const { $widest as u8 >= Cap::Avx512 as u8 } && matches!(cap, Cap::Avx512) {
            type $I = $crate::dispatch_stub::IsaAvx512;
            $body
        } else if const { $widest as u8 >= Cap::Avx2 as u8 }
            && matches!(cap, Cap::Avx2 | Cap::Avx512)
        {
            type $I = $crate::dispatch_stub::IsaAvx2;
            $body
        } else {
            type $I = $crate::dispatch_stub::IsaDefault;
            $body
        }
    }};
}
pub(crate) use with_isa;

#[cfg(test)]
mod tests {
    use super::*;

    fn k<I: Isa>() -> CpuCapability {
        run_isa::<I, _>(|| I::CAP)
    }
    static STUB: DispatchStub<fn() -> CpuCapability> =
        DispatchStub::new("test_stub", k::<IsaDefault>, k::<IsaAvx2>, k::<IsaAvx512>);

    #[test]
    fn with_cpu_capability_caps_this_thread_only() {
        let detected = detected_cpu_capability();
        let outer = kernel_capability();
        let inner = with_cpu_capability(CpuCapability::Default, || {
            let here = kernel_capability();
            let other = std::thread::spawn(kernel_capability).join().unwrap();
            (here, other)
        })
        .unwrap();
        assert_eq!(inner, (CpuCapability::Default, get_cpu_capability()));
        assert_eq!(kernel_capability(), outer);
        if detected < CpuCapability::Avx512 {
            let e = with_cpu_capability(CpuCapability::Avx512, || ()).unwrap_err();
            assert!(e.message().contains("does not support AVX512"), "{e}");
        }
    }

    /// The ISA `with_isa!` selects for a capability, capped at the widest compiled.
    #[test]
    fn with_isa_caps_at_the_widest_variant() {
        use CpuCapability::*;
        let all = |cap| with_isa!(cap, CpuCapability::Avx512, I => I::CAP);
        let up_to_avx2 = |cap| with_isa!(cap, CpuCapability::Avx2, I => I::CAP);
        let default_only = |cap| with_isa!(cap, CpuCapability::Default, I => I::CAP);
        assert_eq!(all(Avx512), Avx512);
        assert_eq!(all(Avx2), Avx2);
        assert_eq!(all(Default), Default);
        assert_eq!(up_to_avx2(Avx512), Avx2);
        assert_eq!(up_to_avx2(Default), Default);
        assert_eq!(default_only(Avx512), Default);
        assert_eq!(default_only(Avx2), Default);
    }

    #[test]
    fn picks_the_cpu_kernel_and_reports_missing_devices() {
        let cap = get_cpu_capability();
        assert!(cap <= detected_cpu_capability());
        assert_eq!((STUB.get(DeviceType::Cpu).unwrap())(), cap);
        assert_eq!((STUB.cpu())(), cap);
        let e = STUB.get(DeviceType::Cuda).unwrap_err();
        assert!(e.message().contains("missing kernel for cuda"), "{e}");
        STUB.register(DeviceType::Cuda, k::<IsaDefault>).unwrap();
        assert_eq!(
            (STUB.get(DeviceType::Cuda).unwrap())(),
            CpuCapability::Default
        );
        assert!(STUB.register(DeviceType::Cpu, k::<IsaDefault>).is_err());
        assert_eq!(CpuCapability::parse("AVX512"), Some(CpuCapability::Avx512));
        assert_eq!(CpuCapability::Avx2.name(), "AVX2");
    }
}
