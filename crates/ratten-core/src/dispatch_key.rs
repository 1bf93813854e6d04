//! DispatchKey and BackendComponent (c10/core/DispatchKey.h), as in PyTorch 2.15.
//!
//! The numeric values, the priority order and the printed names are PyTorch's: the keys are
//! part of ratten's external surface (dumps, error texts, Python's `torch._C` functions).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Number of values of [`DispatchKey`] (0 ..= EndOfAliasKeys).
pub const NUM_DISPATCH_KEYS: usize = 156;

/// c10::BackendComponent: the low 16 bits of a DispatchKeySet. `InvalidBit` has no bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum BackendComponent {
    InvalidBit = 0,
    CPUBit,
    CUDABit,
    HIPBit,
    XLABit,
    MPSBit,
    IPUBit,
    XPUBit,
    HPUBit,
    VEBit,
    LazyBit,
    MTIABit,
    MAIABit,
    PrivateUse1Bit,
    PrivateUse2Bit,
    PrivateUse3Bit,
    MetaBit,
}

/// `num_backends`: the number of real backend components (bits 0..16 of a key set).
pub const NUM_BACKENDS: u8 = BackendComponent::MetaBit as u8;

/// `num_functionality_keys`, counting Undefined.
pub const NUM_FUNCTIONALITY_KEYS: u8 = DispatchKey::EndOfFunctionalityKeys as u8;

/// `num_runtime_entries`: slots of an operator's dispatch table.
pub const NUM_RUNTIME_ENTRIES: usize =
    NUM_FUNCTIONALITY_KEYS as usize + 6 * (NUM_BACKENDS as usize - 1);

const BACKEND_COMPONENTS: [BackendComponent; 17] = [
    BackendComponent::InvalidBit,
    BackendComponent::CPUBit,
    BackendComponent::CUDABit,
    BackendComponent::HIPBit,
    BackendComponent::XLABit,
    BackendComponent::MPSBit,
    BackendComponent::IPUBit,
    BackendComponent::XPUBit,
    BackendComponent::HPUBit,
    BackendComponent::VEBit,
    BackendComponent::LazyBit,
    BackendComponent::MTIABit,
    BackendComponent::MAIABit,
    BackendComponent::PrivateUse1Bit,
    BackendComponent::PrivateUse2Bit,
    BackendComponent::PrivateUse3Bit,
    BackendComponent::MetaBit,
];

impl BackendComponent {
    /// The component with numeric value `v`, if any.
    pub const fn from_u8(v: u8) -> Option<BackendComponent> {
        if (v as usize) < BACKEND_COMPONENTS.len() {
            Some(BACKEND_COMPONENTS[v as usize])
        } else {
            None
        }
    }

    /// The real components CPUBit ..= MetaBit, lowest first.
    pub fn all() -> impl Iterator<Item = BackendComponent> {
        BACKEND_COMPONENTS[1..].iter().copied()
    }

    /// `toString(BackendComponent)`; MTIA and MAIA print without `Bit`, as in PyTorch.
    pub const fn name(self) -> &'static str {
        match self {
            BackendComponent::InvalidBit => "InvalidBit",
            BackendComponent::CPUBit => "CPUBit",
            BackendComponent::CUDABit => "CUDABit",
            BackendComponent::HIPBit => "HIPBit",
            BackendComponent::XLABit => "XLABit",
            BackendComponent::MPSBit => "MPSBit",
            BackendComponent::IPUBit => "IPUBit",
            BackendComponent::XPUBit => "XPUBit",
            BackendComponent::HPUBit => "HPUBit",
            BackendComponent::VEBit => "VEBit",
            BackendComponent::LazyBit => "LazyBit",
            BackendComponent::MTIABit => "MTIA",
            BackendComponent::MAIABit => "MAIA",
            BackendComponent::PrivateUse1Bit => "PrivateUse1Bit",
            BackendComponent::PrivateUse2Bit => "PrivateUse2Bit",
            BackendComponent::PrivateUse3Bit => "PrivateUse3Bit",
            BackendComponent::MetaBit => "MetaBit",
        }
    }
}

impl fmt::Display for BackendComponent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// c10::DispatchKey: every value of PyTorch 2.15's enum, with the same numbers.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u16)]
pub enum DispatchKey {
    Undefined = 0,
    Dense = 1,
    FPGA = 2,
    Vulkan = 3,
    Metal = 4,
    Quantized = 5,
    CustomRNGKeyId = 6,
    MkldnnCPU = 7,
    Sparse = 8,
    SparseCsr = 9,
    NestedTensor = 10,
    BackendSelect = 11,
    Fake = 12,
    Python = 13,
    FuncTorchDynamicLayerBackMode = 14,
    Functionalize = 15,
    Conjugate = 16,
    Negative = 17,
    ZeroTensor = 18,
    ADInplaceOrView = 19,
    AutogradOther = 20,
    AutogradFunctionality = 21,
    AutogradNestedTensor = 22,
    Tracer = 23,
    AutocastCPU = 24,
    AutocastMTIA = 25,
    AutocastMAIA = 26,
    AutocastXPU = 27,
    AutocastIPU = 28,
    AutocastHPU = 29,
    AutocastXLA = 30,
    AutocastMPS = 31,
    AutocastCUDA = 32,
    AutocastPrivateUse1 = 33,
    FuncTorchBatched = 34,
    BatchedNestedTensor = 35,
    FuncTorchVmapMode = 36,
    Batched = 37,
    VmapMode = 38,
    FuncTorchGradWrapper = 39,
    DeferredInit = 40,
    PythonTLSSnapshot = 41,
    FuncTorchDynamicLayerFrontMode = 42,
    TESTING_ONLY_GenericWrapper = 43,
    TESTING_ONLY_GenericMode = 44,
    PreDispatch = 45,
    PythonDispatcher = 46,
    EndOfFunctionalityKeys = 47,
    StartOfDenseBackends = 48,
    CPU = 49,
    CUDA = 50,
    HIP = 51,
    XLA = 52,
    MPS = 53,
    IPU = 54,
    XPU = 55,
    HPU = 56,
    VE = 57,
    Lazy = 58,
    MTIA = 59,
    MAIA = 60,
    PrivateUse1 = 61,
    PrivateUse2 = 62,
    PrivateUse3 = 63,
    Meta = 64,
    StartOfQuantizedBackends = 65,
    QuantizedCPU = 66,
    QuantizedCUDA = 67,
    QuantizedHIP = 68,
    QuantizedXLA = 69,
    QuantizedMPS = 70,
    QuantizedIPU = 71,
    QuantizedXPU = 72,
    QuantizedHPU = 73,
    QuantizedVE = 74,
    QuantizedLazy = 75,
    QuantizedMTIA = 76,
    QuantizedMAIA = 77,
    QuantizedPrivateUse1 = 78,
    QuantizedPrivateUse2 = 79,
    QuantizedPrivateUse3 = 80,
    QuantizedMeta = 81,
    StartOfSparseBackends = 82,
    SparseCPU = 83,
    SparseCUDA = 84,
    SparseHIP = 85,
    SparseXLA = 86,
    SparseMPS = 87,
    SparseIPU = 88,
    SparseXPU = 89,
    SparseHPU = 90,
    SparseVE = 91,
    SparseLazy = 92,
    SparseMTIA = 93,
    SparseMAIA = 94,
    SparsePrivateUse1 = 95,
    SparsePrivateUse2 = 96,
    SparsePrivateUse3 = 97,
    SparseMeta = 98,
    StartOfSparseCsrBackends = 99,
    SparseCsrCPU = 100,
    SparseCsrCUDA = 101,
    SparseCsrHIP = 102,
    SparseCsrXLA = 103,
    SparseCsrMPS = 104,
    SparseCsrIPU = 105,
    SparseCsrXPU = 106,
    SparseCsrHPU = 107,
    SparseCsrVE = 108,
    SparseCsrLazy = 109,
    SparseCsrMTIA = 110,
    SparseCsrMAIA = 111,
    SparseCsrPrivateUse1 = 112,
    SparseCsrPrivateUse2 = 113,
    SparseCsrPrivateUse3 = 114,
    SparseCsrMeta = 115,
    StartOfNestedTensorBackends = 116,
    NestedTensorCPU = 117,
    NestedTensorCUDA = 118,
    NestedTensorHIP = 119,
    NestedTensorXLA = 120,
    NestedTensorMPS = 121,
    NestedTensorIPU = 122,
    NestedTensorXPU = 123,
    NestedTensorHPU = 124,
    NestedTensorVE = 125,
    NestedTensorLazy = 126,
    NestedTensorMTIA = 127,
    NestedTensorMAIA = 128,
    NestedTensorPrivateUse1 = 129,
    NestedTensorPrivateUse2 = 130,
    NestedTensorPrivateUse3 = 131,
    NestedTensorMeta = 132,
    StartOfAutogradFunctionalityBackends = 133,
    AutogradCPU = 134,
    AutogradCUDA = 135,
    AutogradHIP = 136,
    AutogradXLA = 137,
    AutogradMPS = 138,
    AutogradIPU = 139,
    AutogradXPU = 140,
    AutogradHPU = 141,
    AutogradVE = 142,
    AutogradLazy = 143,
    AutogradMTIA = 144,
    AutogradMAIA = 145,
    AutogradPrivateUse1 = 146,
    AutogradPrivateUse2 = 147,
    AutogradPrivateUse3 = 148,
    AutogradMeta = 149,
    Autograd = 150,
    CompositeImplicitAutograd = 151,
    FuncTorchBatchedDecomposition = 152,
    CompositeImplicitAutogradNestedTensor = 153,
    CompositeExplicitAutograd = 154,
    CompositeExplicitAutogradNonFunctional = 155,
}

/// Every key, indexed by its numeric value.
pub(crate) const ALL_KEYS: [DispatchKey; NUM_DISPATCH_KEYS] = [
    DispatchKey::Undefined,
    DispatchKey::Dense,
    DispatchKey::FPGA,
    DispatchKey::Vulkan,
    DispatchKey::Metal,
    DispatchKey::Quantized,
    DispatchKey::CustomRNGKeyId,
    DispatchKey::MkldnnCPU,
    DispatchKey::Sparse,
    DispatchKey::SparseCsr,
    DispatchKey::NestedTensor,
    DispatchKey::BackendSelect,
    DispatchKey::Fake,
    DispatchKey::Python,
    DispatchKey::FuncTorchDynamicLayerBackMode,
    DispatchKey::Functionalize,
    DispatchKey::Conjugate,
    DispatchKey::Negative,
    DispatchKey::ZeroTensor,
    DispatchKey::ADInplaceOrView,
    DispatchKey::AutogradOther,
    DispatchKey::AutogradFunctionality,
    DispatchKey::AutogradNestedTensor,
    DispatchKey::Tracer,
    DispatchKey::AutocastCPU,
    DispatchKey::AutocastMTIA,
    DispatchKey::AutocastMAIA,
    DispatchKey::AutocastXPU,
    DispatchKey::AutocastIPU,
    DispatchKey::AutocastHPU,
    DispatchKey::AutocastXLA,
    DispatchKey::AutocastMPS,
    DispatchKey::AutocastCUDA,
    DispatchKey::AutocastPrivateUse1,
    DispatchKey::FuncTorchBatched,
    DispatchKey::BatchedNestedTensor,
    DispatchKey::FuncTorchVmapMode,
    DispatchKey::Batched,
    DispatchKey::VmapMode,
    DispatchKey::FuncTorchGradWrapper,
    DispatchKey::DeferredInit,
    DispatchKey::PythonTLSSnapshot,
    DispatchKey::FuncTorchDynamicLayerFrontMode,
    DispatchKey::TESTING_ONLY_GenericWrapper,
    DispatchKey::TESTING_ONLY_GenericMode,
    DispatchKey::PreDispatch,
    DispatchKey::PythonDispatcher,
    DispatchKey::EndOfFunctionalityKeys,
    DispatchKey::StartOfDenseBackends,
    DispatchKey::CPU,
    DispatchKey::CUDA,
    DispatchKey::HIP,
    DispatchKey::XLA,
    DispatchKey::MPS,
    DispatchKey::IPU,
    DispatchKey::XPU,
    DispatchKey::HPU,
    DispatchKey::VE,
    DispatchKey::Lazy,
    DispatchKey::MTIA,
    DispatchKey::MAIA,
    DispatchKey::PrivateUse1,
    DispatchKey::PrivateUse2,
    DispatchKey::PrivateUse3,
    DispatchKey::Meta,
    DispatchKey::StartOfQuantizedBackends,
    DispatchKey::QuantizedCPU,
    DispatchKey::QuantizedCUDA,
    DispatchKey::QuantizedHIP,
    DispatchKey::QuantizedXLA,
    DispatchKey::QuantizedMPS,
    DispatchKey::QuantizedIPU,
    DispatchKey::QuantizedXPU,
    DispatchKey::QuantizedHPU,
    DispatchKey::QuantizedVE,
    DispatchKey::QuantizedLazy,
    DispatchKey::QuantizedMTIA,
    DispatchKey::QuantizedMAIA,
    DispatchKey::QuantizedPrivateUse1,
    DispatchKey::QuantizedPrivateUse2,
    DispatchKey::QuantizedPrivateUse3,
    DispatchKey::QuantizedMeta,
    DispatchKey::StartOfSparseBackends,
    DispatchKey::SparseCPU,
    DispatchKey::SparseCUDA,
    DispatchKey::SparseHIP,
    DispatchKey::SparseXLA,
    DispatchKey::SparseMPS,
    DispatchKey::SparseIPU,
    DispatchKey::SparseXPU,
    DispatchKey::SparseHPU,
    DispatchKey::SparseVE,
    DispatchKey::SparseLazy,
    DispatchKey::SparseMTIA,
    DispatchKey::SparseMAIA,
    DispatchKey::SparsePrivateUse1,
    DispatchKey::SparsePrivateUse2,
    DispatchKey::SparsePrivateUse3,
    DispatchKey::SparseMeta,
    DispatchKey::StartOfSparseCsrBackends,
    DispatchKey::SparseCsrCPU,
    DispatchKey::SparseCsrCUDA,
    DispatchKey::SparseCsrHIP,
    DispatchKey::SparseCsrXLA,
    DispatchKey::SparseCsrMPS,
    DispatchKey::SparseCsrIPU,
    DispatchKey::SparseCsrXPU,
    DispatchKey::SparseCsrHPU,
    DispatchKey::SparseCsrVE,
    DispatchKey::SparseCsrLazy,
    DispatchKey::SparseCsrMTIA,
    DispatchKey::SparseCsrMAIA,
    DispatchKey::SparseCsrPrivateUse1,
    DispatchKey::SparseCsrPrivateUse2,
    DispatchKey::SparseCsrPrivateUse3,
    DispatchKey::SparseCsrMeta,
    DispatchKey::StartOfNestedTensorBackends,
    DispatchKey::NestedTensorCPU,
    DispatchKey::NestedTensorCUDA,
    DispatchKey::NestedTensorHIP,
    DispatchKey::NestedTensorXLA,
    DispatchKey::NestedTensorMPS,
    DispatchKey::NestedTensorIPU,
    DispatchKey::NestedTensorXPU,
    DispatchKey::NestedTensorHPU,
    DispatchKey::NestedTensorVE,
    DispatchKey::NestedTensorLazy,
    DispatchKey::NestedTensorMTIA,
    DispatchKey::NestedTensorMAIA,
    DispatchKey::NestedTensorPrivateUse1,
    DispatchKey::NestedTensorPrivateUse2,
    DispatchKey::NestedTensorPrivateUse3,
    DispatchKey::NestedTensorMeta,
    DispatchKey::StartOfAutogradFunctionalityBackends,
    DispatchKey::AutogradCPU,
    DispatchKey::AutogradCUDA,
    DispatchKey::AutogradHIP,
    DispatchKey::AutogradXLA,
    DispatchKey::AutogradMPS,
    DispatchKey::AutogradIPU,
    DispatchKey::AutogradXPU,
    DispatchKey::AutogradHPU,
    DispatchKey::AutogradVE,
    DispatchKey::AutogradLazy,
    DispatchKey::AutogradMTIA,
    DispatchKey::AutogradMAIA,
    DispatchKey::AutogradPrivateUse1,
    DispatchKey::AutogradPrivateUse2,
    DispatchKey::AutogradPrivateUse3,
    DispatchKey::AutogradMeta,
    DispatchKey::Autograd,
    DispatchKey::CompositeImplicitAutograd,
    DispatchKey::FuncTorchBatchedDecomposition,
    DispatchKey::CompositeImplicitAutogradNestedTensor,
    DispatchKey::CompositeExplicitAutograd,
    DispatchKey::CompositeExplicitAutogradNonFunctional,
];

/// `toString(DispatchKey)`, indexed by numeric value.
const KEY_NAMES: [&str; NUM_DISPATCH_KEYS] = [
    "Undefined",
    "Dense",
    "FPGA",
    "Vulkan",
    "Metal",
    "Quantized",
    "CustomRNGKeyId",
    "MkldnnCPU",
    "Sparse",
    "SparseCsr",
    "NestedTensor",
    "BackendSelect",
    "Fake",
    "Python",
    "FuncTorchDynamicLayerBackMode",
    "Functionalize",
    "Conjugate",
    "Negative",
    "ZeroTensor",
    "ADInplaceOrView",
    "AutogradOther",
    "AutogradFunctionality",
    "AutogradNestedTensor",
    "Tracer",
    "AutocastCPU",
    "AutocastMTIA",
    "AutocastMAIA",
    "AutocastXPU",
    "AutocastIPU",
    "AutocastHPU",
    "AutocastXLA",
    "AutocastMPS",
    "AutocastCUDA",
    "AutocastPrivateUse1",
    "FuncTorchBatched",
    "BatchedNestedTensor",
    "FuncTorchVmapMode",
    "Batched",
    "VmapMode",
    "FuncTorchGradWrapper",
    "DeferredInit",
    "PythonTLSSnapshot",
    "FuncTorchDynamicLayerFrontMode",
    "TESTING_ONLY_GenericWrapper",
    "TESTING_ONLY_GenericMode",
    "PreDispatch",
    "PythonDispatcher",
    "UnknownUnknown",
    "Undefined",
    "CPU",
    "CUDA",
    "HIP",
    "XLA",
    "MPS",
    "IPU",
    "XPU",
    "HPU",
    "VE",
    "Lazy",
    "MTIA",
    "MAIA",
    "PrivateUse1",
    "PrivateUse2",
    "PrivateUse3",
    "Meta",
    "QuantizedUndefined",
    "QuantizedCPU",
    "QuantizedCUDA",
    "QuantizedHIP",
    "QuantizedXLA",
    "QuantizedMPS",
    "QuantizedIPU",
    "QuantizedXPU",
    "QuantizedHPU",
    "QuantizedVE",
    "QuantizedLazy",
    "QuantizedMTIA",
    "QuantizedMAIA",
    "QuantizedPrivateUse1",
    "QuantizedPrivateUse2",
    "QuantizedPrivateUse3",
    "QuantizedMeta",
    "SparseUndefined",
    "SparseCPU",
    "SparseCUDA",
    "SparseHIP",
    "SparseXLA",
    "SparseMPS",
    "SparseIPU",
    "SparseXPU",
    "SparseHPU",
    "SparseVE",
    "SparseLazy",
    "SparseMTIA",
    "SparseMAIA",
    "SparsePrivateUse1",
    "SparsePrivateUse2",
    "SparsePrivateUse3",
    "SparseMeta",
    "SparseCsrUndefined",
    "SparseCsrCPU",
    "SparseCsrCUDA",
    "SparseCsrHIP",
    "SparseCsrXLA",
    "SparseCsrMPS",
    "SparseCsrIPU",
    "SparseCsrXPU",
    "SparseCsrHPU",
    "SparseCsrVE",
    "SparseCsrLazy",
    "SparseCsrMTIA",
    "SparseCsrMAIA",
    "SparseCsrPrivateUse1",
    "SparseCsrPrivateUse2",
    "SparseCsrPrivateUse3",
    "SparseCsrMeta",
    "NestedTensorUndefined",
    "NestedTensorCPU",
    "NestedTensorCUDA",
    "NestedTensorHIP",
    "NestedTensorXLA",
    "NestedTensorMPS",
    "NestedTensorIPU",
    "NestedTensorXPU",
    "NestedTensorHPU",
    "NestedTensorVE",
    "NestedTensorLazy",
    "NestedTensorMTIA",
    "NestedTensorMAIA",
    "NestedTensorPrivateUse1",
    "NestedTensorPrivateUse2",
    "NestedTensorPrivateUse3",
    "NestedTensorMeta",
    "AutogradUndefined",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradHIP",
    "AutogradXLA",
    "AutogradMPS",
    "AutogradIPU",
    "AutogradXPU",
    "AutogradHPU",
    "AutogradVE",
    "AutogradLazy",
    "AutogradMTIA",
    "AutogradMAIA",
    "AutogradPrivateUse1",
    "AutogradPrivateUse2",
    "AutogradPrivateUse3",
    "AutogradMeta",
    "Autograd",
    "CompositeImplicitAutograd",
    "FuncTorchBatchedDecomposition",
    "CompositeImplicitAutogradNestedTensor",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
];

/// The per-backend functionality keys, in enum order (`isPerBackendFunctionalityKey`).
const PER_BACKEND_FUNCTIONALITIES: [DispatchKey; 6] = [
    DispatchKey::Dense,
    DispatchKey::Quantized,
    DispatchKey::Sparse,
    DispatchKey::SparseCsr,
    DispatchKey::NestedTensor,
    DispatchKey::AutogradFunctionality,
];

/// The `StartOf*Backends` placeholders, matching [`PER_BACKEND_FUNCTIONALITIES`].
const START_OF_BACKENDS: [DispatchKey; 6] = [
    DispatchKey::StartOfDenseBackends,
    DispatchKey::StartOfQuantizedBackends,
    DispatchKey::StartOfSparseBackends,
    DispatchKey::StartOfSparseCsrBackends,
    DispatchKey::StartOfNestedTensorBackends,
    DispatchKey::StartOfAutogradFunctionalityBackends,
];

impl DispatchKey {
    /// `EndOfRuntimeBackendKeys`.
    pub const END_OF_RUNTIME_BACKEND_KEYS: DispatchKey = DispatchKey::AutogradMeta;
    /// `StartOfAliasKeys`.
    pub const START_OF_ALIAS_KEYS: DispatchKey = DispatchKey::Autograd;
    /// `EndOfAliasKeys`.
    pub const END_OF_ALIAS_KEYS: DispatchKey = DispatchKey::CompositeExplicitAutogradNonFunctional;
    /// BC alias `CatchAll`.
    pub const CATCH_ALL: DispatchKey = DispatchKey::Undefined;
    /// BC alias `DefaultBackend`.
    pub const DEFAULT_BACKEND: DispatchKey = DispatchKey::CompositeExplicitAutograd;
    /// BC alias `Autocast`.
    pub const AUTOCAST: DispatchKey = DispatchKey::AutocastCUDA;

    /// The key with numeric value `v`, if it is one.
    pub const fn from_u16(v: u16) -> Option<DispatchKey> {
        if (v as usize) < NUM_DISPATCH_KEYS {
            Some(ALL_KEYS[v as usize])
        } else {
            None
        }
    }

    /// All 156 values, in numeric order.
    pub fn all() -> impl Iterator<Item = DispatchKey> {
        ALL_KEYS.iter().copied()
    }

    /// `toString(DispatchKey)`.
    pub const fn name(self) -> &'static str {
        KEY_NAMES[self as usize]
    }

    /// `isAliasDispatchKey`.
    pub const fn is_alias(self) -> bool {
        self as u16 >= DispatchKey::START_OF_ALIAS_KEYS as u16
            && self as u16 <= DispatchKey::END_OF_ALIAS_KEYS as u16
    }

    /// `isPerBackendFunctionalityKey`.
    pub const fn is_per_backend_functionality_key(self) -> bool {
        matches!(
            self,
            DispatchKey::Dense
                | DispatchKey::Quantized
                | DispatchKey::Sparse
                | DispatchKey::SparseCsr
                | DispatchKey::NestedTensor
                | DispatchKey::AutogradFunctionality
        )
    }

    /// The index (0..6) of the per-backend block containing `self`, for the runtime
    /// per-backend keys and the `StartOf*` placeholders.
    const fn per_backend_block(self) -> Option<usize> {
        let v = self as u16;
        if v < DispatchKey::StartOfDenseBackends as u16
            || v > DispatchKey::END_OF_RUNTIME_BACKEND_KEYS as u16
        {
            return None;
        }
        Some(((v - DispatchKey::StartOfDenseBackends as u16) / (NUM_BACKENDS as u16 + 1)) as usize)
    }

    /// `toBackendComponent(DispatchKey)`.
    pub const fn to_backend_component(self) -> BackendComponent {
        match self.per_backend_block() {
            Some(b) => {
                let off = self as u16 - START_OF_BACKENDS[b] as u16;
                BACKEND_COMPONENTS[off as usize]
            }
            None => BackendComponent::InvalidBit,
        }
    }

    /// `toFunctionalityKey(DispatchKey)`.
    pub const fn to_functionality_key(self) -> DispatchKey {
        if self as u16 <= DispatchKey::EndOfFunctionalityKeys as u16 {
            return self;
        }
        match self.per_backend_block() {
            Some(b) => PER_BACKEND_FUNCTIONALITIES[b],
            None => DispatchKey::Undefined,
        }
    }

    /// `toRuntimePerBackendFunctionalityKey(functionality_k, backend_k)`.
    pub const fn to_runtime_per_backend_functionality_key(
        functionality: DispatchKey,
        backend: BackendComponent,
    ) -> DispatchKey {
        let mut i = 0;
        while i < PER_BACKEND_FUNCTIONALITIES.len() {
            if PER_BACKEND_FUNCTIONALITIES[i] as u16 == functionality as u16 {
                return ALL_KEYS[START_OF_BACKENDS[i] as usize + backend as usize];
            }
            i += 1;
        }
        DispatchKey::Undefined
    }

    /// `parseDispatchKey`: PyTorch's names, plus the C++ BC aliases.
    pub fn parse(s: &str) -> Result<DispatchKey> {
        let bc = match s {
            "CatchAll" => Some(DispatchKey::Undefined),
            "CPUTensorId" => Some(DispatchKey::CPU),
            "CUDATensorId" => Some(DispatchKey::CUDA),
            "DefaultBackend" => Some(DispatchKey::CompositeExplicitAutograd),
            "PrivateUse1_PreAutograd" => Some(DispatchKey::AutogradPrivateUse1),
            "PrivateUse2_PreAutograd" => Some(DispatchKey::AutogradPrivateUse2),
            "PrivateUse3_PreAutograd" => Some(DispatchKey::AutogradPrivateUse3),
            "Autocast" => Some(DispatchKey::AutocastCUDA),
            _ => None,
        };
        if let Some(k) = bc {
            return Ok(k);
        }
        ALL_KEYS
            .iter()
            .copied()
            .find(|k| !k.is_placeholder() && k.name() == s)
            .ok_or_else(|| Error::runtime(format!("could not parse dispatch key: {s}")))
    }

    /// The sentinels `EndOfFunctionalityKeys` and `StartOf*Backends`, which are not keys.
    pub const fn is_placeholder(self) -> bool {
        matches!(
            self,
            DispatchKey::EndOfFunctionalityKeys
                | DispatchKey::StartOfDenseBackends
                | DispatchKey::StartOfQuantizedBackends
                | DispatchKey::StartOfSparseBackends
                | DispatchKey::StartOfSparseCsrBackends
                | DispatchKey::StartOfNestedTensorBackends
                | DispatchKey::StartOfAutogradFunctionalityBackends
        )
    }

    /// The runtime keys: Undefined, the non-per-backend functionality keys and the per-backend
    /// instances (those with a slot in an operator's dispatch table).
    pub const fn is_runtime_key(self) -> bool {
        !self.is_placeholder() && !self.is_alias() && !self.is_per_backend_functionality_key()
    }
}

impl fmt::Display for DispatchKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DispatchKey {
    type Err = Error;
    fn from_str(s: &str) -> Result<DispatchKey> {
        DispatchKey::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_matches_pytorch() {
        assert_eq!(DispatchKey::Dense as u16, 1);
        assert_eq!(DispatchKey::Fake as u16, 12);
        assert_eq!(DispatchKey::AutogradFunctionality as u16, 21);
        assert_eq!(DispatchKey::PythonDispatcher as u16, 46);
        assert_eq!(DispatchKey::CPU as u16, 49);
        assert_eq!(DispatchKey::Meta as u16, 64);
        assert_eq!(DispatchKey::QuantizedCPU as u16, 66);
        assert_eq!(DispatchKey::SparseCPU as u16, 83);
        assert_eq!(DispatchKey::SparseCsrCPU as u16, 100);
        assert_eq!(DispatchKey::NestedTensorCPU as u16, 117);
        assert_eq!(DispatchKey::AutogradCPU as u16, 134);
        assert_eq!(DispatchKey::AutogradMeta as u16, 149);
        assert_eq!(
            DispatchKey::CompositeExplicitAutogradNonFunctional as u16,
            155
        );
        assert_eq!(NUM_RUNTIME_ENTRIES, 137);
        assert_eq!(NUM_BACKENDS, 16);
        assert_eq!(NUM_FUNCTIONALITY_KEYS, 47);
        for (i, k) in DispatchKey::all().enumerate() {
            assert_eq!(k as usize, i);
            assert_eq!(DispatchKey::from_u16(i as u16), Some(k));
        }
        assert_eq!(DispatchKey::from_u16(156), None);
    }

    #[test]
    fn names_and_parse_round_trip() {
        for k in DispatchKey::all().filter(|k| !k.is_placeholder()) {
            assert_eq!(DispatchKey::parse(k.name()).unwrap(), k, "{}", k.name());
        }
        assert_eq!(DispatchKey::StartOfDenseBackends.name(), "Undefined");
        assert_eq!(
            DispatchKey::StartOfQuantizedBackends.name(),
            "QuantizedUndefined"
        );
        assert_eq!(
            DispatchKey::StartOfAutogradFunctionalityBackends.name(),
            "AutogradUndefined"
        );
        assert_eq!(
            DispatchKey::AutogradPrivateUse1.to_string(),
            "AutogradPrivateUse1"
        );
        assert_eq!(
            "CatchAll".parse::<DispatchKey>().unwrap(),
            DispatchKey::Undefined
        );
        assert_eq!(
            DispatchKey::parse("DefaultBackend").unwrap(),
            DispatchKey::CompositeExplicitAutograd
        );
        assert_eq!(
            DispatchKey::parse("Autocast").unwrap(),
            DispatchKey::AutocastCUDA
        );
        assert_eq!(
            DispatchKey::parse("PrivateUse1_PreAutograd").unwrap(),
            DispatchKey::AutogradPrivateUse1
        );
        let e = DispatchKey::parse("invalid_key").unwrap_err();
        assert_eq!(e.to_string(), "could not parse dispatch key: invalid_key");
        assert!(DispatchKey::parse("StartOfDenseBackends").is_err());
    }

    #[test]
    fn backend_and_functionality_of_keys() {
        assert_eq!(
            DispatchKey::CPU.to_backend_component(),
            BackendComponent::CPUBit
        );
        assert_eq!(DispatchKey::CPU.to_functionality_key(), DispatchKey::Dense);
        assert_eq!(
            DispatchKey::SparseCsrMeta.to_backend_component(),
            BackendComponent::MetaBit
        );
        assert_eq!(
            DispatchKey::SparseCsrMeta.to_functionality_key(),
            DispatchKey::SparseCsr
        );
        assert_eq!(
            DispatchKey::AutogradXLA.to_functionality_key(),
            DispatchKey::AutogradFunctionality
        );
        assert_eq!(
            DispatchKey::Python.to_functionality_key(),
            DispatchKey::Python
        );
        assert_eq!(
            DispatchKey::Python.to_backend_component(),
            BackendComponent::InvalidBit
        );
        assert_eq!(
            DispatchKey::Autograd.to_functionality_key(),
            DispatchKey::Undefined
        );
        for f in PER_BACKEND_FUNCTIONALITIES {
            for b in BackendComponent::all() {
                let k = DispatchKey::to_runtime_per_backend_functionality_key(f, b);
                assert_eq!(k.to_functionality_key(), f);
                assert_eq!(k.to_backend_component(), b);
            }
        }
        assert_eq!(BackendComponent::MTIABit.to_string(), "MTIA");
        assert_eq!(BackendComponent::CPUBit.to_string(), "CPUBit");
        assert_eq!(
            BackendComponent::from_u8(16),
            Some(BackendComponent::MetaBit)
        );
        assert_eq!(BackendComponent::from_u8(17), None);
    }

    #[test]
    fn runtime_key_count() {
        // Undefined + 40 plain functionality keys + 6 * 16 per-backend instances.
        assert_eq!(
            DispatchKey::all().filter(|k| k.is_runtime_key()).count(),
            137
        );
    }
}
