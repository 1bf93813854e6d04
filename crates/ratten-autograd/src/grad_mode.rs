//! Grad mode and inference mode (c10's `GradMode`, `AutoGradMode`, `NoGradGuard`,
//! `InferenceMode`, and ATen's `AutoDispatchBelowAutograd` guards).
//!
//! Note [Grad mode and dispatch keys]
//! As in PyTorch, two mechanisms stop autograd from recording:
//! - *grad mode* is a thread-local flag. With it off (`no_grad`), the Autograd kernels still
//!   run but `compute_requires_grad` answers false, so no node is recorded; version counters
//!   and views are still tracked.
//! - *inference mode* and the kernels' own redispatch exclude the Autograd keys (and
//!   ADInplaceOrView) from the thread's dispatch key set, so the dispatcher skips those kernels
//!   altogether: nothing is recorded and no version counter moves.

use std::cell::Cell;

use ratten_core::dispatch_key_set::AUTOGRAD_DISPATCH_KEYSET;
use ratten_core::local_dispatch_key_set::{
    tls_is_dispatch_key_excluded, tls_local_dispatch_key_set, ExcludeDispatchKeyGuard,
    ForceDispatchKeyGuard, LocalDispatchKeySet,
};
use ratten_core::{DispatchKey, DispatchKeySet};

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE_MODE: Cell<bool> = const { Cell::new(false) };
}

/// `autograd_dispatch_keyset_with_ADInplaceOrView`.
pub const AUTOGRAD_DISPATCH_KEYSET_WITH_AD_INPLACE_OR_VIEW: DispatchKeySet =
    AUTOGRAD_DISPATCH_KEYSET.add(DispatchKey::ADInplaceOrView);

/// c10's `GradMode`: the thread's grad mode.
pub struct GradMode;

impl GradMode {
    #[inline]
    pub fn is_enabled() -> bool {
        GRAD_ENABLED.with(Cell::get)
    }

    pub fn set_enabled(enabled: bool) {
        GRAD_ENABLED.with(|g| g.set(enabled));
    }
}

/// Sets grad mode for its scope (`AutoGradMode`).
pub struct AutoGradMode {
    prev: bool,
}

impl AutoGradMode {
    pub fn new(enabled: bool) -> AutoGradMode {
        let prev = GradMode::is_enabled();
        GradMode::set_enabled(enabled);
        AutoGradMode { prev }
    }
}

impl Drop for AutoGradMode {
    fn drop(&mut self) {
        GradMode::set_enabled(self.prev);
    }
}

/// `torch.no_grad()` (`NoGradGuard`).
pub struct NoGradGuard(#[allow(dead_code)] AutoGradMode);

impl NoGradGuard {
    pub fn new() -> NoGradGuard {
        NoGradGuard(AutoGradMode::new(false))
    }
}

impl Default for NoGradGuard {
    fn default() -> Self {
        Self::new()
    }
}

/// `torch.inference_mode()` (c10's `InferenceMode`): grad mode off and the Autograd and
/// ADInplaceOrView keys excluded; `InferenceMode::new(false)` turns both back on inside.
pub struct InferenceMode {
    _grad: AutoGradMode,
    _keys: ForceDispatchKeyGuard,
    prev: bool,
}

impl InferenceMode {
    pub fn new(enabled: bool) -> InferenceMode {
        let prev = INFERENCE_MODE.with(Cell::get);
        INFERENCE_MODE.with(|m| m.set(enabled));
        let grad = AutoGradMode::new(if enabled {
            false
        } else {
            GradMode::is_enabled()
        });
        let cur = tls_local_dispatch_key_set();
        let keys = ForceDispatchKeyGuard::new(LocalDispatchKeySet {
            included: cur.included,
            excluded: if enabled {
                cur.excluded | AUTOGRAD_DISPATCH_KEYSET_WITH_AD_INPLACE_OR_VIEW
            } else {
                cur.excluded - AUTOGRAD_DISPATCH_KEYSET_WITH_AD_INPLACE_OR_VIEW
            },
        });
        InferenceMode {
            _grad: grad,
            _keys: keys,
            prev,
        }
    }

    /// `InferenceMode::is_enabled()`.
    pub fn is_enabled() -> bool {
        INFERENCE_MODE.with(Cell::get)
            && tls_is_dispatch_key_excluded(DispatchKey::AutogradFunctionality)
    }
}

impl Drop for InferenceMode {
    fn drop(&mut self) {
        INFERENCE_MODE.with(|m| m.set(self.prev));
    }
}

/// ATen's `AutoDispatchBelowADInplaceOrView`: what a kernel of the Autograd key holds around
/// its redispatch, so that composite kernels below it do not record again.
pub struct AutoDispatchBelowADInplaceOrView(#[allow(dead_code)] ExcludeDispatchKeyGuard);

impl AutoDispatchBelowADInplaceOrView {
    #[inline]
    pub fn new() -> Self {
        AutoDispatchBelowADInplaceOrView(ExcludeDispatchKeyGuard::new(
            AUTOGRAD_DISPATCH_KEYSET_WITH_AD_INPLACE_OR_VIEW,
        ))
    }
}

impl Default for AutoDispatchBelowADInplaceOrView {
    fn default() -> Self {
        Self::new()
    }
}

/// ATen's `AutoDispatchBelowAutograd`: excludes the Autograd keys only.
pub struct AutoDispatchBelowAutograd(#[allow(dead_code)] ExcludeDispatchKeyGuard);

impl AutoDispatchBelowAutograd {
    #[inline]
    pub fn new() -> Self {
        AutoDispatchBelowAutograd(ExcludeDispatchKeyGuard::new(AUTOGRAD_DISPATCH_KEYSET))
    }
}

impl Default for AutoDispatchBelowAutograd {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_restore_the_previous_state() {
        assert!(GradMode::is_enabled());
        {
            let _g = NoGradGuard::new();
            assert!(!GradMode::is_enabled());
            {
                let _e = AutoGradMode::new(true);
                assert!(GradMode::is_enabled());
            }
            assert!(!GradMode::is_enabled());
        }
        assert!(GradMode::is_enabled());
        {
            let _i = InferenceMode::new(true);
            assert!(InferenceMode::is_enabled() && !GradMode::is_enabled());
            {
                let _o = InferenceMode::new(false);
                assert!(!InferenceMode::is_enabled());
            }
        }
        assert!(!InferenceMode::is_enabled() && GradMode::is_enabled());
    }
}
