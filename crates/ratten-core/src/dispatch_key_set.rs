//! DispatchKeySet (c10/core/DispatchKeySet.h): a 64-bit set with PyTorch's exact layout.
//!
//! Bits 0..16 are backend components (CPU = bit 0 .. Meta = bit 15); bit `15 + k` is
//! functionality key `k` (Dense = 1 .. PythonDispatcher = 46). A per-backend runtime key such as
//! AutogradCUDA is one functionality bit plus one backend bit, so a set `{CPU, AutogradCUDA}`
//! also "has" CUDA and AutogradCPU: that cross product is PyTorch's semantics too.

use std::fmt;

use crate::device::DeviceType;
use crate::dispatch_key::{
    BackendComponent, DispatchKey, NUM_BACKENDS, NUM_FUNCTIONALITY_KEYS, NUM_RUNTIME_ENTRIES,
};

/// `full_backend_mask`: all backend bits.
pub const FULL_BACKEND_MASK: u64 = (1u64 << NUM_BACKENDS) - 1;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DispatchKeySet {
    repr: u64,
}

const fn bit_width(x: u64) -> u32 {
    64 - x.leading_zeros()
}

const fn key_repr(k: DispatchKey) -> u64 {
    let v = k as u16;
    if v == 0 {
        0
    } else if v <= DispatchKey::EndOfFunctionalityKeys as u16 {
        1u64 << (NUM_BACKENDS as u16 + v - 1)
    } else if v <= DispatchKey::END_OF_RUNTIME_BACKEND_KEYS as u16 {
        let f = k.to_functionality_key() as u16;
        let functionality_val = 1u64 << (NUM_BACKENDS as u16 + f - 1);
        let b = k.to_backend_component() as u8;
        let backend_val = if b == 0 { 0 } else { 1u64 << (b - 1) };
        functionality_val + backend_val
    } else {
        // Alias keys are not representable: the empty set, as in PyTorch.
        0
    }
}

impl DispatchKeySet {
    /// `DispatchKeySet(FULL)`: every functionality and backend bit.
    pub const FULL: DispatchKeySet = DispatchKeySet {
        repr: (1u64 << (NUM_BACKENDS + NUM_FUNCTIONALITY_KEYS - 1)) - 1,
    };

    pub const fn empty() -> Self {
        DispatchKeySet { repr: 0 }
    }
    /// `DispatchKeySet(RAW, x)`.
    pub const fn from_raw(repr: u64) -> Self {
        DispatchKeySet { repr }
    }
    pub const fn raw_repr(self) -> u64 {
        self.repr
    }
    /// `DispatchKeySet(DispatchKey)`; Undefined and alias keys give the empty set.
    pub const fn from_key(k: DispatchKey) -> Self {
        DispatchKeySet { repr: key_repr(k) }
    }
    /// `DispatchKeySet(BackendComponent)`.
    pub const fn from_backend(b: BackendComponent) -> Self {
        if b as u8 == 0 {
            DispatchKeySet { repr: 0 }
        } else {
            DispatchKeySet {
                repr: 1u64 << (b as u8 - 1),
            }
        }
    }
    /// `DispatchKeySet({k1, k2, ...})`.
    pub const fn from_keys(ks: &[DispatchKey]) -> Self {
        let mut repr = 0;
        let mut i = 0;
        while i < ks.len() {
            repr |= key_repr(ks[i]);
            i += 1;
        }
        DispatchKeySet { repr }
    }
    /// `DispatchKeySet(FULL_AFTER, t)`: every functionality bit below `t`'s functionality
    /// ("LSB after t are OK, but not t itself") plus all backend bits.
    pub const fn full_after(t: DispatchKey) -> Self {
        let f = t.to_functionality_key() as u16;
        let fbit = NUM_BACKENDS as u16 + f - 1;
        DispatchKeySet {
            repr: ((1u64 << fbit) - 1) | FULL_BACKEND_MASK,
        }
    }

    pub const fn is_empty(self) -> bool {
        self.repr == 0
    }
    /// `has(k)`: every bit of `DispatchKeySet(k)` is in the set.
    pub const fn has(self, k: DispatchKey) -> bool {
        let r = key_repr(k);
        self.repr & r == r
    }
    pub const fn has_backend(self, b: BackendComponent) -> bool {
        let r = DispatchKeySet::from_backend(b).repr;
        self.repr & r == r
    }
    pub const fn has_all(self, ks: DispatchKeySet) -> bool {
        self.repr & ks.repr == ks.repr
    }
    /// `has_any`: the set shares a bit with `ks`. PyTorch requires `ks` to be either only
    /// functionality bits or only backend bits (or a backend-less set).
    pub const fn has_any(self, ks: DispatchKeySet) -> bool {
        self.repr & ks.repr != 0
    }
    pub const fn union(self, o: DispatchKeySet) -> Self {
        DispatchKeySet {
            repr: self.repr | o.repr,
        }
    }
    pub const fn intersection(self, o: DispatchKeySet) -> Self {
        DispatchKeySet {
            repr: self.repr & o.repr,
        }
    }
    /// `operator-`: the bits of `self` not in `o`.
    pub const fn difference(self, o: DispatchKeySet) -> Self {
        DispatchKeySet {
            repr: self.repr & !o.repr,
        }
    }
    pub const fn add(self, k: DispatchKey) -> Self {
        DispatchKeySet {
            repr: self.repr | key_repr(k),
        }
    }
    /// `remove(k)`: removes only `k`'s functionality bit; backend bits stay, as in PyTorch.
    pub const fn remove(self, k: DispatchKey) -> Self {
        DispatchKeySet {
            repr: self.repr & !(key_repr(k) & !FULL_BACKEND_MASK),
        }
    }
    pub const fn remove_backend(self, b: BackendComponent) -> Self {
        DispatchKeySet {
            repr: self.repr & !DispatchKeySet::from_backend(b).repr,
        }
    }

    /// `highestFunctionalityKey`.
    pub const fn highest_functionality_key(self) -> DispatchKey {
        let idx = bit_width(self.repr);
        if idx < NUM_BACKENDS as u32 + 1 {
            return DispatchKey::Undefined;
        }
        match DispatchKey::from_u16((idx - NUM_BACKENDS as u32) as u16) {
            Some(k) => k,
            None => DispatchKey::Undefined,
        }
    }
    /// `highestBackendKey`.
    pub const fn highest_backend_key(self) -> BackendComponent {
        let idx = bit_width(self.repr & FULL_BACKEND_MASK);
        match BackendComponent::from_u8(idx as u8) {
            Some(b) => b,
            None => BackendComponent::InvalidBit,
        }
    }
    /// `highestPriorityTypeId`: the key a call dispatches to, found in constant time (two
    /// leading-zero counts).
    #[inline]
    pub const fn highest_priority_type_id(self) -> DispatchKey {
        let f = self.highest_functionality_key();
        if f.is_per_backend_functionality_key() {
            DispatchKey::to_runtime_per_backend_functionality_key(f, self.highest_backend_key())
        } else {
            f
        }
    }

    /// `getDispatchTableIndexForDispatchKeySet`: the slot (0..137) of the highest-priority key.
    #[inline]
    pub fn get_dispatch_table_index(self) -> usize {
        // The table is padded to 64 entries so that the index needs no bounds check; the
        // padding maps the impossible bits 62 and 63 to slot 0.
        let functionality_idx = bit_width(self.repr >> NUM_BACKENDS) as usize & 63;
        let (offset, mask) = OFFSETS_AND_MASKS[functionality_idx];
        let backend_idx = bit_width((self.repr & mask) >> 1) as usize;
        offset as usize + backend_idx
    }

    /// The runtime keys in the set, lowest priority first (PyTorch's iterator).
    pub fn iter(self) -> Iter {
        Iter {
            repr: self.repr,
            functionality_bit: NUM_BACKENDS as u32,
            backend_bit: 0,
        }
    }

    /// The backend key of `device_type` alone (c10's `computeDispatchKey` for a strided
    /// tensor): what a BackendSelect kernel redispatches a factory to.
    pub fn for_backend(device_type: DeviceType) -> Self {
        DispatchKeySet::from_key(match device_type {
            DeviceType::Cpu => DispatchKey::CPU,
            DeviceType::Cuda => DispatchKey::CUDA,
            DeviceType::Meta => DispatchKey::Meta,
            DeviceType::PrivateUse1 => DispatchKey::PrivateUse1,
        })
    }

    /// The key set a new tensor on `device_type` carries: its backend key plus
    /// `getAutogradRelatedKeySetFromBackend` (the autograd key and ADInplaceOrView), as
    /// TensorImpl's constructor computes it.
    pub fn for_tensor(device_type: DeviceType) -> Self {
        let k = match device_type {
            DeviceType::Cpu => DispatchKey::CPU,
            DeviceType::Cuda => DispatchKey::CUDA,
            DeviceType::Meta => DispatchKey::Meta,
            DeviceType::PrivateUse1 => DispatchKey::PrivateUse1,
        };
        DispatchKeySet::from_key(k).union(get_autograd_related_key_set_from_backend(
            k.to_backend_component(),
        ))
    }
}

/// `offsetsAndMasks()`: per functionality index, the first table slot and the backend mask.
const OFFSETS_AND_MASKS: [(u16, u64); 64] = {
    let mut t = [(0u16, 0u64); 64];
    let mut i = 1;
    while i < NUM_FUNCTIONALITY_KEYS as usize {
        let prev = t[i - 1];
        let offset = prev.0 + if prev.1 == 0 { 1 } else { NUM_BACKENDS as u16 };
        let k = match DispatchKey::from_u16(i as u16) {
            Some(k) => k,
            None => DispatchKey::Undefined,
        };
        let mask = if k.is_per_backend_functionality_key() {
            FULL_BACKEND_MASK
        } else {
            0
        };
        t[i] = (offset, mask);
        i += 1;
    }
    assert!(t[NUM_FUNCTIONALITY_KEYS as usize - 1].0 as usize == NUM_RUNTIME_ENTRIES - 1);
    t
};

/// `getDispatchTableIndexForDispatchKey`: the table slot of a runtime key, or `None` for
/// alias keys, placeholders and the per-backend functionality building blocks.
pub fn get_dispatch_table_index_for_dispatch_key(k: DispatchKey) -> Option<usize> {
    if k == DispatchKey::Undefined {
        return Some(0);
    }
    if !k.is_runtime_key() {
        return None;
    }
    Some(DispatchKeySet::from_key(k).get_dispatch_table_index())
}

/// Iterator over the runtime keys of a [`DispatchKeySet`], lowest priority first.
#[derive(Clone)]
pub struct Iter {
    repr: u64,
    functionality_bit: u32,
    backend_bit: u32,
}

impl Iterator for Iter {
    type Item = DispatchKey;
    fn next(&mut self) -> Option<DispatchKey> {
        loop {
            let fbits = self.repr & !((1u64 << self.functionality_bit) - 1) & !FULL_BACKEND_MASK;
            if fbits == 0 {
                return None;
            }
            let fbit = fbits.trailing_zeros();
            let f = DispatchKey::from_u16((fbit + 1 - NUM_BACKENDS as u32) as u16)?;
            if !f.is_per_backend_functionality_key() {
                self.functionality_bit = fbit + 1;
                self.backend_bit = 0;
                return Some(f);
            }
            let bbits = self.repr & FULL_BACKEND_MASK & !((1u64 << self.backend_bit) - 1);
            if bbits == 0 {
                // No (further) backend instance of this functionality.
                self.functionality_bit = fbit + 1;
                self.backend_bit = 0;
                continue;
            }
            let bbit = bbits.trailing_zeros();
            self.functionality_bit = fbit;
            self.backend_bit = bbit + 1;
            let b = BackendComponent::from_u8(bbit as u8 + 1)?;
            return Some(DispatchKey::to_runtime_per_backend_functionality_key(f, b));
        }
    }
}

impl IntoIterator for DispatchKeySet {
    type Item = DispatchKey;
    type IntoIter = Iter;
    fn into_iter(self) -> Iter {
        self.iter()
    }
}

impl std::ops::BitOr for DispatchKeySet {
    type Output = DispatchKeySet;
    fn bitor(self, o: DispatchKeySet) -> DispatchKeySet {
        self.union(o)
    }
}
impl std::ops::BitAnd for DispatchKeySet {
    type Output = DispatchKeySet;
    fn bitand(self, o: DispatchKeySet) -> DispatchKeySet {
        self.intersection(o)
    }
}
impl std::ops::Sub for DispatchKeySet {
    type Output = DispatchKeySet;
    fn sub(self, o: DispatchKeySet) -> DispatchKeySet {
        self.difference(o)
    }
}
impl From<DispatchKey> for DispatchKeySet {
    fn from(k: DispatchKey) -> Self {
        DispatchKeySet::from_key(k)
    }
}

/// `operator<<(DispatchKeySet)`: `DispatchKeySet(CPU, AutogradCPU)`, highest priority first.
impl fmt::Display for DispatchKeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<DispatchKey> = self.iter().collect();
        f.write_str("DispatchKeySet(")?;
        for (i, k) in keys.iter().rev().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(k.name())?;
        }
        f.write_str(")")
    }
}
impl fmt::Debug for DispatchKeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `autograd_dispatch_keyset` (no backend bits).
pub const AUTOGRAD_DISPATCH_KEYSET: DispatchKeySet = DispatchKeySet::from_keys(&[
    DispatchKey::AutogradFunctionality,
    DispatchKey::AutogradOther,
    DispatchKey::AutogradNestedTensor,
]);

/// `autogradother_backends`: backend keys whose autograd key is AutogradOther.
pub const AUTOGRADOTHER_BACKENDS: DispatchKeySet = DispatchKeySet::from_raw(
    DispatchKeySet::from_keys(&[
        DispatchKey::FPGA,
        DispatchKey::Vulkan,
        DispatchKey::Metal,
        DispatchKey::CustomRNGKeyId,
        DispatchKey::MkldnnCPU,
        DispatchKey::Sparse,
        DispatchKey::SparseCsr,
        DispatchKey::Quantized,
    ])
    .raw_repr()
        | FULL_BACKEND_MASK,
);

/// `backend_dispatch_keyset`.
pub const BACKEND_DISPATCH_KEYSET: DispatchKeySet =
    AUTOGRADOTHER_BACKENDS.union(DispatchKeySet::from_key(DispatchKey::Dense));

/// `non_functional_backend_dispatch_keyset`.
pub const NON_FUNCTIONAL_BACKEND_DISPATCH_KEYSET: DispatchKeySet = BACKEND_DISPATCH_KEYSET
    .remove(DispatchKey::Sparse)
    .remove_backend(BackendComponent::XLABit)
    .remove_backend(BackendComponent::LazyBit);

/// `math_dispatch_keyset`.
pub const MATH_DISPATCH_KEYSET: DispatchKeySet = BACKEND_DISPATCH_KEYSET
    .union(AUTOGRAD_DISPATCH_KEYSET)
    .union(DispatchKeySet::from_key(DispatchKey::NestedTensor));

/// `nested_dispatch_keyset`.
pub const NESTED_DISPATCH_KEYSET: DispatchKeySet = DispatchKeySet::from_raw(
    DispatchKeySet::from_keys(&[DispatchKey::AutogradNestedTensor, DispatchKey::NestedTensor])
        .raw_repr()
        | FULL_BACKEND_MASK,
);

/// `after_autograd_keyset`.
pub const AFTER_AUTOGRAD_KEYSET: DispatchKeySet =
    DispatchKeySet::full_after(DispatchKey::AutogradOther);

/// `after_ADInplaceOrView_keyset`.
pub const AFTER_AD_INPLACE_OR_VIEW_KEYSET: DispatchKeySet =
    DispatchKeySet::full_after(DispatchKey::ADInplaceOrView);

/// `isBackendDispatchKey`.
pub const fn is_backend_dispatch_key(k: DispatchKey) -> bool {
    !matches!(k, DispatchKey::Undefined | DispatchKey::NestedTensor)
        && !k.is_alias()
        && BACKEND_DISPATCH_KEYSET.has(k)
}

/// `getRuntimeDispatchKeySet`: the runtime keys an alias key stands for (a runtime key stands
/// for itself). Undefined gives the empty set (PyTorch asserts instead).
pub const fn get_runtime_dispatch_key_set(t: DispatchKey) -> DispatchKeySet {
    match t {
        DispatchKey::Autograd => {
            DispatchKeySet::from_raw(AUTOGRAD_DISPATCH_KEYSET.raw_repr() | FULL_BACKEND_MASK)
        }
        DispatchKey::CompositeImplicitAutograd => MATH_DISPATCH_KEYSET,
        DispatchKey::CompositeImplicitAutogradNestedTensor => NESTED_DISPATCH_KEYSET,
        DispatchKey::CompositeExplicitAutograd => BACKEND_DISPATCH_KEYSET,
        DispatchKey::CompositeExplicitAutogradNonFunctional => {
            NON_FUNCTIONAL_BACKEND_DISPATCH_KEYSET
        }
        DispatchKey::FuncTorchBatchedDecomposition => {
            DispatchKeySet::from_key(DispatchKey::FuncTorchBatched)
        }
        _ => DispatchKeySet::from_key(t),
    }
}

/// `runtimeDispatchKeySetHas(alias, k)`.
pub const fn runtime_dispatch_key_set_has(t: DispatchKey, k: DispatchKey) -> bool {
    match t {
        DispatchKey::Autograd => AUTOGRAD_DISPATCH_KEYSET.has(k.to_functionality_key()),
        DispatchKey::CompositeImplicitAutograd => MATH_DISPATCH_KEYSET.has(k),
        DispatchKey::CompositeImplicitAutogradNestedTensor => NESTED_DISPATCH_KEYSET.has(k),
        DispatchKey::CompositeExplicitAutograd => {
            !matches!(k, DispatchKey::NestedTensor) && BACKEND_DISPATCH_KEYSET.has(k)
        }
        DispatchKey::CompositeExplicitAutogradNonFunctional => {
            !matches!(k, DispatchKey::NestedTensor) && NON_FUNCTIONAL_BACKEND_DISPATCH_KEYSET.has(k)
        }
        DispatchKey::FuncTorchBatchedDecomposition => matches!(k, DispatchKey::FuncTorchBatched),
        _ => t as u16 == k as u16,
    }
}

/// `isIncludedInAlias(k, alias)`: whether runtime key `k` is covered by `alias`. Undefined is
/// never included (it cannot be in a key set).
pub const fn is_included_in_alias(k: DispatchKey, alias: DispatchKey) -> bool {
    !matches!(k, DispatchKey::Undefined) && runtime_dispatch_key_set_has(alias, k)
}

/// `getAutogradRelatedKeySetFromBackend`: the autograd key of a backend plus ADInplaceOrView.
pub const fn get_autograd_related_key_set_from_backend(b: BackendComponent) -> DispatchKeySet {
    let ad = DispatchKeySet::from_key(DispatchKey::ADInplaceOrView);
    let k = match b {
        BackendComponent::CPUBit => DispatchKey::AutogradCPU,
        BackendComponent::IPUBit => DispatchKey::AutogradIPU,
        BackendComponent::XPUBit => DispatchKey::AutogradXPU,
        BackendComponent::CUDABit => DispatchKey::AutogradCUDA,
        BackendComponent::XLABit => DispatchKey::AutogradXLA,
        BackendComponent::LazyBit => DispatchKey::AutogradLazy,
        BackendComponent::MetaBit => DispatchKey::AutogradMeta,
        BackendComponent::MPSBit => DispatchKey::AutogradMPS,
        BackendComponent::HPUBit => DispatchKey::AutogradHPU,
        BackendComponent::MTIABit => DispatchKey::AutogradMTIA,
        BackendComponent::MAIABit => DispatchKey::AutogradMAIA,
        BackendComponent::PrivateUse1Bit => DispatchKey::AutogradPrivateUse1,
        BackendComponent::PrivateUse2Bit => DispatchKey::AutogradPrivateUse2,
        BackendComponent::PrivateUse3Bit => DispatchKey::AutogradPrivateUse3,
        _ => DispatchKey::AutogradOther,
    };
    DispatchKeySet::from_key(k).union(ad)
}

/// `getAutogradKeyFromBackend`.
pub const fn get_autograd_key_from_backend(b: BackendComponent) -> DispatchKey {
    get_autograd_related_key_set_from_backend(b).highest_priority_type_id()
}

/// `getBackendKeySetFromAutograd`: the backend keys whose autograd key is `t`.
pub const fn get_backend_key_set_from_autograd(t: DispatchKey) -> DispatchKeySet {
    match t {
        DispatchKey::AutogradCPU => DispatchKeySet::from_key(DispatchKey::CPU),
        DispatchKey::AutogradCUDA => DispatchKeySet::from_key(DispatchKey::CUDA),
        DispatchKey::AutogradXLA => DispatchKeySet::from_key(DispatchKey::XLA),
        DispatchKey::AutogradLazy => DispatchKeySet::from_key(DispatchKey::Lazy),
        DispatchKey::AutogradMeta => DispatchKeySet::from_key(DispatchKey::Meta),
        DispatchKey::AutogradMPS => DispatchKeySet::from_key(DispatchKey::MPS),
        DispatchKey::AutogradHPU => DispatchKeySet::from_key(DispatchKey::HPU),
        DispatchKey::AutogradIPU => DispatchKeySet::from_key(DispatchKey::IPU),
        DispatchKey::AutogradXPU => DispatchKeySet::from_key(DispatchKey::XPU),
        DispatchKey::AutogradMAIA => DispatchKeySet::from_key(DispatchKey::MAIA),
        DispatchKey::AutogradPrivateUse1 => DispatchKeySet::from_key(DispatchKey::PrivateUse1),
        DispatchKey::AutogradPrivateUse2 => DispatchKeySet::from_key(DispatchKey::PrivateUse2),
        DispatchKey::AutogradPrivateUse3 => DispatchKeySet::from_key(DispatchKey::PrivateUse3),
        DispatchKey::AutogradNestedTensor => DispatchKeySet::from_raw(
            DispatchKeySet::from_key(DispatchKey::NestedTensor).raw_repr() | FULL_BACKEND_MASK,
        ),
        DispatchKey::AutogradOther => AUTOGRADOTHER_BACKENDS,
        _ => DispatchKeySet::empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(ks: DispatchKeySet) -> String {
        ks.iter().map(|k| k.name()).collect::<Vec<_>>().join(" ")
    }

    const FULL_ORDER: &str = "CPU CUDA HIP XLA MPS IPU XPU HPU VE Lazy MTIA MAIA PrivateUse1 PrivateUse2 PrivateUse3 Meta FPGA Vulkan Metal QuantizedCPU QuantizedCUDA QuantizedHIP QuantizedXLA QuantizedMPS QuantizedIPU QuantizedXPU QuantizedHPU QuantizedVE QuantizedLazy QuantizedMTIA QuantizedMAIA QuantizedPrivateUse1 QuantizedPrivateUse2 QuantizedPrivateUse3 QuantizedMeta CustomRNGKeyId MkldnnCPU SparseCPU SparseCUDA SparseHIP SparseXLA SparseMPS SparseIPU SparseXPU SparseHPU SparseVE SparseLazy SparseMTIA SparseMAIA SparsePrivateUse1 SparsePrivateUse2 SparsePrivateUse3 SparseMeta SparseCsrCPU SparseCsrCUDA SparseCsrHIP SparseCsrXLA SparseCsrMPS SparseCsrIPU SparseCsrXPU SparseCsrHPU SparseCsrVE SparseCsrLazy SparseCsrMTIA SparseCsrMAIA SparseCsrPrivateUse1 SparseCsrPrivateUse2 SparseCsrPrivateUse3 SparseCsrMeta NestedTensorCPU NestedTensorCUDA NestedTensorHIP NestedTensorXLA NestedTensorMPS NestedTensorIPU NestedTensorXPU NestedTensorHPU NestedTensorVE NestedTensorLazy NestedTensorMTIA NestedTensorMAIA NestedTensorPrivateUse1 NestedTensorPrivateUse2 NestedTensorPrivateUse3 NestedTensorMeta BackendSelect Fake Python FuncTorchDynamicLayerBackMode Functionalize Conjugate Negative ZeroTensor ADInplaceOrView AutogradOther AutogradCPU AutogradCUDA AutogradHIP AutogradXLA AutogradMPS AutogradIPU AutogradXPU AutogradHPU AutogradVE AutogradLazy AutogradMTIA AutogradMAIA AutogradPrivateUse1 AutogradPrivateUse2 AutogradPrivateUse3 AutogradMeta AutogradNestedTensor Tracer AutocastCPU AutocastMTIA AutocastMAIA AutocastXPU AutocastIPU AutocastHPU AutocastXLA AutocastMPS AutocastCUDA AutocastPrivateUse1 FuncTorchBatched BatchedNestedTensor FuncTorchVmapMode Batched VmapMode FuncTorchGradWrapper DeferredInit PythonTLSSnapshot FuncTorchDynamicLayerFrontMode TESTING_ONLY_GenericWrapper TESTING_ONLY_GenericMode PreDispatch PythonDispatcher";

    #[test]
    fn full_set_iterates_in_pytorch_order() {
        assert_eq!(DispatchKeySet::FULL.raw_repr(), (1u64 << 62) - 1);
        assert_eq!(names(DispatchKeySet::FULL), FULL_ORDER);
        assert_eq!(DispatchKeySet::FULL.iter().count(), 136);
    }

    /// The table index of each runtime key: the reference's column, which for the full set
    /// equals 1 + its position in iteration order.
    #[test]
    fn table_indices_match_reference() {
        assert_eq!(
            get_dispatch_table_index_for_dispatch_key(DispatchKey::Undefined),
            Some(0)
        );
        let expect = [
            (DispatchKey::CPU, 1),
            (DispatchKey::Meta, 16),
            (DispatchKey::FPGA, 17),
            (DispatchKey::Metal, 19),
            (DispatchKey::QuantizedCPU, 20),
            (DispatchKey::QuantizedMeta, 35),
            (DispatchKey::CustomRNGKeyId, 36),
            (DispatchKey::MkldnnCPU, 37),
            (DispatchKey::SparseCPU, 38),
            (DispatchKey::SparseCsrCPU, 54),
            (DispatchKey::NestedTensorCPU, 70),
            (DispatchKey::BackendSelect, 86),
            (DispatchKey::Fake, 87),
            (DispatchKey::ADInplaceOrView, 94),
            (DispatchKey::AutogradOther, 95),
            (DispatchKey::AutogradCPU, 96),
            (DispatchKey::AutogradMeta, 111),
            (DispatchKey::AutogradNestedTensor, 112),
            (DispatchKey::Tracer, 113),
            (DispatchKey::AutocastCPU, 114),
            (DispatchKey::PythonDispatcher, 136),
        ];
        for (k, i) in expect {
            assert_eq!(get_dispatch_table_index_for_dispatch_key(k), Some(i), "{k}");
        }
        for (pos, k) in DispatchKeySet::FULL.iter().enumerate() {
            assert_eq!(
                get_dispatch_table_index_for_dispatch_key(k),
                Some(pos + 1),
                "{k}"
            );
        }
        assert_eq!(
            get_dispatch_table_index_for_dispatch_key(DispatchKey::Autograd),
            None
        );
        assert_eq!(
            get_dispatch_table_index_for_dispatch_key(DispatchKey::Dense),
            None
        );
    }

    #[test]
    fn bit_layout_and_highest_priority() {
        assert_eq!(
            DispatchKeySet::from_key(DispatchKey::CPU).raw_repr(),
            (1 << 16) | 1
        );
        assert_eq!(
            DispatchKeySet::from_key(DispatchKey::Meta).raw_repr(),
            (1 << 16) | (1 << 15)
        );
        assert_eq!(
            DispatchKeySet::from_key(DispatchKey::PythonDispatcher).raw_repr(),
            1 << 61
        );
        assert!(DispatchKeySet::from_key(DispatchKey::Autograd).is_empty());
        assert!(DispatchKeySet::from_key(DispatchKey::Undefined).is_empty());
        for k in DispatchKey::all().filter(|k| k.is_runtime_key() && *k != DispatchKey::Undefined) {
            let s = DispatchKeySet::from_key(k);
            assert_eq!(s.highest_priority_type_id(), k);
            assert_eq!(s.iter().collect::<Vec<_>>(), vec![k]);
        }
        let cpu = DispatchKeySet::for_tensor(DeviceType::Cpu);
        assert_eq!(names(cpu), "CPU ADInplaceOrView AutogradCPU");
        assert_eq!(cpu.highest_priority_type_id(), DispatchKey::AutogradCPU);
        assert_eq!(
            cpu.to_string(),
            "DispatchKeySet(AutogradCPU, ADInplaceOrView, CPU)"
        );
        let meta = DispatchKeySet::for_tensor(DeviceType::Meta);
        assert_eq!(names(meta), "Meta ADInplaceOrView AutogradMeta");
        let pu1 = DispatchKeySet::for_tensor(DeviceType::PrivateUse1);
        assert_eq!(
            names(pu1),
            "PrivateUse1 ADInplaceOrView AutogradPrivateUse1"
        );
        assert_eq!(
            names(DispatchKeySet::for_tensor(DeviceType::Cuda)),
            "CUDA ADInplaceOrView AutogradCUDA"
        );
        // Highest backend bit wins: Meta over CPU.
        let both = DispatchKeySet::from_keys(&[DispatchKey::CPU, DispatchKey::Meta]);
        assert_eq!(both.highest_priority_type_id(), DispatchKey::Meta);
        assert!(DispatchKeySet::empty().highest_priority_type_id() == DispatchKey::Undefined);
        assert_eq!(DispatchKeySet::empty().get_dispatch_table_index(), 0);
        // remove() keeps backend bits.
        assert_eq!(
            cpu.remove(DispatchKey::AutogradCPU)
                .remove(DispatchKey::ADInplaceOrView),
            DispatchKeySet::from_key(DispatchKey::CPU)
        );
        // Cross product: {CPU, AutogradCUDA} has CUDA and AutogradCPU.
        let x = DispatchKeySet::from_keys(&[DispatchKey::CPU, DispatchKey::AutogradCUDA]);
        assert!(x.has(DispatchKey::CUDA) && x.has(DispatchKey::AutogradCPU));
    }

    #[test]
    fn alias_expansion_matches_reference() {
        let ag = get_runtime_dispatch_key_set(DispatchKey::Autograd);
        assert_eq!(names(ag), "AutogradOther AutogradCPU AutogradCUDA AutogradHIP AutogradXLA AutogradMPS AutogradIPU AutogradXPU AutogradHPU AutogradVE AutogradLazy AutogradMTIA AutogradMAIA AutogradPrivateUse1 AutogradPrivateUse2 AutogradPrivateUse3 AutogradMeta AutogradNestedTensor");
        let cea = names(get_runtime_dispatch_key_set(
            DispatchKey::CompositeExplicitAutograd,
        ));
        let idx = FULL_ORDER.find(" NestedTensorCPU").unwrap();
        assert_eq!(cea, &FULL_ORDER[..idx]);
        let math = names(get_runtime_dispatch_key_set(
            DispatchKey::CompositeImplicitAutograd,
        ));
        assert_eq!(math, format!("{} {}", &FULL_ORDER[..FULL_ORDER.find(" BackendSelect").unwrap()], "AutogradOther AutogradCPU AutogradCUDA AutogradHIP AutogradXLA AutogradMPS AutogradIPU AutogradXPU AutogradHPU AutogradVE AutogradLazy AutogradMTIA AutogradMAIA AutogradPrivateUse1 AutogradPrivateUse2 AutogradPrivateUse3 AutogradMeta AutogradNestedTensor"));
        assert_eq!(names(get_runtime_dispatch_key_set(DispatchKey::CompositeExplicitAutogradNonFunctional)), "CPU CUDA HIP MPS IPU XPU HPU VE MTIA MAIA PrivateUse1 PrivateUse2 PrivateUse3 Meta FPGA Vulkan Metal QuantizedCPU QuantizedCUDA QuantizedHIP QuantizedMPS QuantizedIPU QuantizedXPU QuantizedHPU QuantizedVE QuantizedMTIA QuantizedMAIA QuantizedPrivateUse1 QuantizedPrivateUse2 QuantizedPrivateUse3 QuantizedMeta CustomRNGKeyId MkldnnCPU SparseCsrCPU SparseCsrCUDA SparseCsrHIP SparseCsrMPS SparseCsrIPU SparseCsrXPU SparseCsrHPU SparseCsrVE SparseCsrMTIA SparseCsrMAIA SparseCsrPrivateUse1 SparseCsrPrivateUse2 SparseCsrPrivateUse3 SparseCsrMeta");
        assert_eq!(names(get_runtime_dispatch_key_set(DispatchKey::CompositeImplicitAutogradNestedTensor)), "NestedTensorCPU NestedTensorCUDA NestedTensorHIP NestedTensorXLA NestedTensorMPS NestedTensorIPU NestedTensorXPU NestedTensorHPU NestedTensorVE NestedTensorLazy NestedTensorMTIA NestedTensorMAIA NestedTensorPrivateUse1 NestedTensorPrivateUse2 NestedTensorPrivateUse3 NestedTensorMeta AutogradNestedTensor");
        assert_eq!(
            names(get_runtime_dispatch_key_set(
                DispatchKey::FuncTorchBatchedDecomposition
            )),
            "FuncTorchBatched"
        );
        assert_eq!(names(AUTOGRADOTHER_BACKENDS), "FPGA Vulkan Metal QuantizedCPU QuantizedCUDA QuantizedHIP QuantizedXLA QuantizedMPS QuantizedIPU QuantizedXPU QuantizedHPU QuantizedVE QuantizedLazy QuantizedMTIA QuantizedMAIA QuantizedPrivateUse1 QuantizedPrivateUse2 QuantizedPrivateUse3 QuantizedMeta CustomRNGKeyId MkldnnCPU SparseCPU SparseCUDA SparseHIP SparseXLA SparseMPS SparseIPU SparseXPU SparseHPU SparseVE SparseLazy SparseMTIA SparseMAIA SparsePrivateUse1 SparsePrivateUse2 SparsePrivateUse3 SparseMeta SparseCsrCPU SparseCsrCUDA SparseCsrHIP SparseCsrXLA SparseCsrMPS SparseCsrIPU SparseCsrXPU SparseCsrHPU SparseCsrVE SparseCsrLazy SparseCsrMTIA SparseCsrMAIA SparseCsrPrivateUse1 SparseCsrPrivateUse2 SparseCsrPrivateUse3 SparseCsrMeta");
        // isIncludedInAlias agrees with the expansion for every alias and runtime key.
        for alias in DispatchKey::all().filter(|k| k.is_alias()) {
            let set = get_runtime_dispatch_key_set(alias);
            for k in DispatchKeySet::FULL.iter() {
                let in_set = set.iter().any(|x| x == k);
                assert_eq!(is_included_in_alias(k, alias), in_set, "{k} in {alias}");
            }
            assert!(!is_included_in_alias(DispatchKey::Undefined, alias));
        }
        let backend: Vec<_> = DispatchKeySet::FULL
            .iter()
            .filter(|k| is_backend_dispatch_key(*k))
            .collect();
        assert_eq!(backend.len(), 69);
        assert_eq!(backend.last(), Some(&DispatchKey::SparseCsrMeta));
    }

    #[test]
    fn autograd_backend_mappings() {
        let expect = [
            (BackendComponent::CPUBit, DispatchKey::AutogradCPU),
            (BackendComponent::CUDABit, DispatchKey::AutogradCUDA),
            (BackendComponent::HIPBit, DispatchKey::AutogradOther),
            (BackendComponent::XLABit, DispatchKey::AutogradXLA),
            (BackendComponent::MPSBit, DispatchKey::AutogradMPS),
            (BackendComponent::IPUBit, DispatchKey::AutogradIPU),
            (BackendComponent::XPUBit, DispatchKey::AutogradXPU),
            (BackendComponent::HPUBit, DispatchKey::AutogradHPU),
            (BackendComponent::VEBit, DispatchKey::AutogradOther),
            (BackendComponent::LazyBit, DispatchKey::AutogradLazy),
            (BackendComponent::MTIABit, DispatchKey::AutogradMTIA),
            (BackendComponent::MAIABit, DispatchKey::AutogradMAIA),
            (
                BackendComponent::PrivateUse1Bit,
                DispatchKey::AutogradPrivateUse1,
            ),
            (
                BackendComponent::PrivateUse2Bit,
                DispatchKey::AutogradPrivateUse2,
            ),
            (
                BackendComponent::PrivateUse3Bit,
                DispatchKey::AutogradPrivateUse3,
            ),
            (BackendComponent::MetaBit, DispatchKey::AutogradMeta),
        ];
        for (b, k) in expect {
            assert_eq!(get_autograd_key_from_backend(b), k, "{b}");
        }
        assert_eq!(
            names(get_backend_key_set_from_autograd(DispatchKey::AutogradCPU)),
            "CPU"
        );
        assert!(get_backend_key_set_from_autograd(DispatchKey::AutogradHIP).is_empty());
        assert!(get_backend_key_set_from_autograd(DispatchKey::AutogradMTIA).is_empty());
        assert!(get_backend_key_set_from_autograd(DispatchKey::CPU).is_empty());
        assert_eq!(
            get_backend_key_set_from_autograd(DispatchKey::AutogradOther),
            AUTOGRADOTHER_BACKENDS
        );
        assert_eq!(
            names(get_backend_key_set_from_autograd(DispatchKey::AutogradNestedTensor)),
            "NestedTensorCPU NestedTensorCUDA NestedTensorHIP NestedTensorXLA NestedTensorMPS NestedTensorIPU NestedTensorXPU NestedTensorHPU NestedTensorVE NestedTensorLazy NestedTensorMTIA NestedTensorMAIA NestedTensorPrivateUse1 NestedTensorPrivateUse2 NestedTensorPrivateUse3 NestedTensorMeta"
        );
        let after = AFTER_AUTOGRAD_KEYSET;
        assert!(after.has(DispatchKey::ADInplaceOrView) && after.has(DispatchKey::CPU));
        assert!(!after.has(DispatchKey::AutogradOther) && !after.has(DispatchKey::AutogradCPU));
    }
}
