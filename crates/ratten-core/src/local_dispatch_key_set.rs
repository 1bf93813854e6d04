//! Thread-local included/excluded dispatch key sets (c10/core/impl/LocalDispatchKeySet.h).
//!
//! As in PyTorch the thread-local value is stored XOR-ed with the defaults, so that the
//! zero-initialised state means "the defaults" and the `thread_local!` needs no lazy init.

use std::cell::Cell;
use std::marker::PhantomData;

use crate::dispatch_key::DispatchKey;
use crate::dispatch_key_set::DispatchKeySet;

/// `default_included_set`: {BackendSelect, ADInplaceOrView}.
pub const DEFAULT_INCLUDED_SET: DispatchKeySet =
    DispatchKeySet::from_keys(&[DispatchKey::BackendSelect, DispatchKey::ADInplaceOrView]);

/// `default_excluded_set`: the Autocast keys (autocast is off by default).
pub const DEFAULT_EXCLUDED_SET: DispatchKeySet = DispatchKeySet::from_keys(&[
    DispatchKey::AutocastCPU,
    DispatchKey::AutocastMPS,
    DispatchKey::AutocastCUDA,
    DispatchKey::AutocastXPU,
    DispatchKey::AutocastIPU,
    DispatchKey::AutocastHPU,
    DispatchKey::AutocastXLA,
    DispatchKey::AutocastPrivateUse1,
    DispatchKey::AutocastMTIA,
    DispatchKey::AutocastMAIA,
]);

/// `PODLocalDispatchKeySet`: the raw thread-local words (XOR-ed with the defaults).
#[derive(Clone, Copy)]
struct PodLocalDispatchKeySet {
    included: u64,
    excluded: u64,
}

thread_local! {
    static RAW_LOCAL_DISPATCH_KEY_SET: Cell<PodLocalDispatchKeySet> =
        const { Cell::new(PodLocalDispatchKeySet { included: 0, excluded: 0 }) };
}

/// `LocalDispatchKeySet`: a snapshot of the current thread's included and excluded keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalDispatchKeySet {
    pub included: DispatchKeySet,
    pub excluded: DispatchKeySet,
}

/// `tls_local_dispatch_key_set()`.
#[inline]
pub fn tls_local_dispatch_key_set() -> LocalDispatchKeySet {
    let raw = RAW_LOCAL_DISPATCH_KEY_SET.with(|c| c.get());
    LocalDispatchKeySet {
        included: DispatchKeySet::from_raw(raw.included ^ DEFAULT_INCLUDED_SET.raw_repr()),
        excluded: DispatchKeySet::from_raw(raw.excluded ^ DEFAULT_EXCLUDED_SET.raw_repr()),
    }
}

/// `_force_tls_local_dispatch_key_set`: replace the whole thread-local state.
pub fn force_tls_local_dispatch_key_set(ks: LocalDispatchKeySet) {
    RAW_LOCAL_DISPATCH_KEY_SET.with(|c| {
        c.set(PodLocalDispatchKeySet {
            included: ks.included.raw_repr() ^ DEFAULT_INCLUDED_SET.raw_repr(),
            excluded: ks.excluded.raw_repr() ^ DEFAULT_EXCLUDED_SET.raw_repr(),
        })
    })
}

fn set_included(ks: DispatchKeySet) {
    let cur = tls_local_dispatch_key_set();
    force_tls_local_dispatch_key_set(LocalDispatchKeySet {
        included: ks,
        excluded: cur.excluded,
    });
}

fn set_excluded(ks: DispatchKeySet) {
    let cur = tls_local_dispatch_key_set();
    force_tls_local_dispatch_key_set(LocalDispatchKeySet {
        included: cur.included,
        excluded: ks,
    });
}

pub fn tls_is_dispatch_key_excluded(k: DispatchKey) -> bool {
    tls_local_dispatch_key_set().excluded.has(k)
}
pub fn tls_is_dispatch_key_included(k: DispatchKey) -> bool {
    tls_local_dispatch_key_set().included.has(k)
}
pub fn tls_is_dispatch_keyset_excluded(ks: DispatchKeySet) -> bool {
    tls_local_dispatch_key_set().excluded.has_all(ks)
}
pub fn tls_is_dispatch_keyset_non_empty(ks: DispatchKeySet) -> bool {
    tls_local_dispatch_key_set().included.has_any(ks)
}

/// `tls_set_dispatch_key_excluded(k, desired_state)`.
pub fn tls_set_dispatch_key_excluded(k: DispatchKey, desired: bool) {
    let cur = tls_local_dispatch_key_set().excluded;
    set_excluded(if desired { cur.add(k) } else { cur.remove(k) });
}

/// `tls_set_dispatch_key_included(k, desired_state)`.
pub fn tls_set_dispatch_key_included(k: DispatchKey, desired: bool) {
    let cur = tls_local_dispatch_key_set().included;
    set_included(if desired { cur.add(k) } else { cur.remove(k) });
}

/// `IncludeDispatchKeyGuard`: adds keys to the included set for its lifetime; on drop removes
/// exactly the keys it added. Not `Send`: it restores this thread's state.
pub struct IncludeDispatchKeyGuard {
    added: DispatchKeySet,
    _not_send: PhantomData<*const ()>,
}

impl IncludeDispatchKeyGuard {
    pub fn new(include: impl Into<DispatchKeySet>) -> Self {
        let include = include.into();
        let cur = tls_local_dispatch_key_set().included;
        let added = include - cur;
        if !added.is_empty() {
            set_included(cur | added);
        }
        IncludeDispatchKeyGuard {
            added,
            _not_send: PhantomData,
        }
    }
}

impl Drop for IncludeDispatchKeyGuard {
    fn drop(&mut self) {
        if !self.added.is_empty() {
            set_included(tls_local_dispatch_key_set().included - self.added);
        }
    }
}

/// `ExcludeDispatchKeyGuard`: adds keys to the excluded set for its lifetime.
pub struct ExcludeDispatchKeyGuard {
    added: DispatchKeySet,
    _not_send: PhantomData<*const ()>,
}

impl ExcludeDispatchKeyGuard {
    pub fn new(exclude: impl Into<DispatchKeySet>) -> Self {
        let exclude = exclude.into();
        let cur = tls_local_dispatch_key_set().excluded;
        let added = exclude - cur;
        if !added.is_empty() {
            set_excluded(cur | added);
        }
        ExcludeDispatchKeyGuard {
            added,
            _not_send: PhantomData,
        }
    }
}

impl Drop for ExcludeDispatchKeyGuard {
    fn drop(&mut self) {
        if !self.added.is_empty() {
            set_excluded(tls_local_dispatch_key_set().excluded - self.added);
        }
    }
}

/// `ForceDispatchKeyGuard`: sets the whole thread-local state, restoring the old one on drop.
pub struct ForceDispatchKeyGuard {
    saved: LocalDispatchKeySet,
    _not_send: PhantomData<*const ()>,
}

impl ForceDispatchKeyGuard {
    pub fn new(ks: LocalDispatchKeySet) -> Self {
        let saved = tls_local_dispatch_key_set();
        force_tls_local_dispatch_key_set(ks);
        ForceDispatchKeyGuard {
            saved,
            _not_send: PhantomData,
        }
    }
}

impl Drop for ForceDispatchKeyGuard {
    fn drop(&mut self) {
        force_tls_local_dispatch_key_set(self.saved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_guards() {
        let d = tls_local_dispatch_key_set();
        assert_eq!(d.included, DEFAULT_INCLUDED_SET);
        assert_eq!(d.excluded, DEFAULT_EXCLUDED_SET);
        assert!(tls_is_dispatch_key_included(DispatchKey::BackendSelect));
        assert!(tls_is_dispatch_key_excluded(DispatchKey::AutocastCPU));
        {
            let _g = ExcludeDispatchKeyGuard::new(DispatchKey::AutogradFunctionality);
            assert!(tls_is_dispatch_key_excluded(
                DispatchKey::AutogradFunctionality
            ));
            {
                // Nested guard on the same key adds nothing and removes nothing.
                let _g2 = ExcludeDispatchKeyGuard::new(DispatchKey::AutogradFunctionality);
            }
            assert!(tls_is_dispatch_key_excluded(
                DispatchKey::AutogradFunctionality
            ));
            let _i = IncludeDispatchKeyGuard::new(DispatchKey::Python);
            assert!(tls_is_dispatch_key_included(DispatchKey::Python));
        }
        assert_eq!(tls_local_dispatch_key_set(), d);
        tls_set_dispatch_key_excluded(DispatchKey::AutocastCPU, false);
        assert!(!tls_is_dispatch_key_excluded(DispatchKey::AutocastCPU));
        tls_set_dispatch_key_excluded(DispatchKey::AutocastCPU, true);
        {
            let _f = ForceDispatchKeyGuard::new(LocalDispatchKeySet {
                included: DispatchKeySet::empty(),
                excluded: DispatchKeySet::empty(),
            });
            assert!(!tls_is_dispatch_key_included(DispatchKey::BackendSelect));
        }
        assert_eq!(tls_local_dispatch_key_set(), d);
        // Another thread starts from the defaults.
        let _g = ExcludeDispatchKeyGuard::new(DispatchKey::Python);
        let other = std::thread::spawn(tls_local_dispatch_key_set)
            .join()
            .unwrap();
        assert_eq!(other, d);
    }
}
