//! The vectorised CPU kernels (aten/src/ATen/native/cpu) and the pieces they are built from:
//!
//! - [`elements`]: the element types ([`Elem`]) with c10's casts between them, the half /
//!   bfloat16 helpers, the computation ("opmath") type of a dtype, the dispatch errors;
//! - [`simd`]: the instructions used by hand (half <-> f32 conversion, streaming stores);
//! - [`loops`]: the loop forms that one 2-D loop of TensorIterator runs (contiguous, hoisted
//!   scalar, fused int32 + float32, half / bfloat16 in registers, the casting block path,
//!   tiled and fused transposes, short runs);
//! - [`pointwise`]: the driver [`cpu_kernel_n`] (`cpu_kernel` / `cpu_kernel_vec`, with
//!   [`cpu_unary`], [`cpu_binary`], [`cpu_ternary`]) that runs a TensorIterator through them;
//! - [`reduce`]: the reduction driver [`reduce::reduce_kernel`] (PyTorch's `Reduce.h` with
//!   its cascade sum) that runs a [`reduce::ReduceOp`] over an iterator in reduction mode,
//!   and [`reduce_kernels`], the reductions behind their DispatchStubs; [`scan_kernels`], the
//!   cumulative ops (a running accumulation along each line of one dim); [`sort_kernels`], the
//!   sorting family (sort, topk, kthvalue along each line, by integer keys);
//! - [`scatter_gather_kernels`]: gather and the scatter family (one loop over the index, an
//!   element operation per op); [`index_kernels`]: `index_select`'s row copies and the
//!   advanced-indexing loop of `index` / `index_put_`;
//! - [`binary_kernels`], [`unary_kernels`]: the kernels behind the pointwise DispatchStubs,
//!   with [`vec_math`] (branch-free transcendentals) and [`transpose`] (in-register block
//!   transposes).
//!
//! A kernel is written once and names the computation type `M` and result type `R` of its op;
//! the driver serves every dtype combination of the operands around it (half and bfloat16 are
//! computed in f32 this way) and compiles its loops for each instruction set (`Isa`) up to
//! [`widest_isa`]`::<M>()`, running the one the CPU capability selects.

pub mod binary_kernels;
pub mod blas;
pub mod cat_kernels;
pub mod complex_kernels;
pub mod elements;
pub mod fill_kernels;
pub mod index_kernels;
pub mod loops;
pub mod pointwise;
pub mod reduce;
pub mod reduce_kernels;
pub mod scan_kernels;
pub mod scatter_gather_kernels;
pub mod shape_kernels;
pub mod simd;
pub mod sort_kernels;
pub mod transpose;
pub mod unary_kernels;
pub mod vec_math;

// The kernel author's names, at `native::cpu`.
pub use elements::{
    bf16_to_f32, cast, f32_to_bf16, not_implemented, opmath_dtype, refuse_complex32,
    refuse_unsigned, Elem, Kind,
};
pub use loops::block::{load_block, round_via, store_block};
pub use loops::short::SHORT_RUN;
pub use loops::tiled::TILE;
pub use loops::{Op1, Op2, Op3, OpN, BLOCK, MAX_OPERANDS};
pub use pointwise::{
    cpu_binary, cpu_kernel_n, cpu_ternary, cpu_unary, reduced_common, widest_isa, STREAM_MIN_BYTES,
};
pub use simd::{f16_to_f32_slice, f32_to_f16_slice};

// The loops of unique, searchsorted, bincount and histc.
pub mod bucketization_kernels;
pub mod summary_kernels;
pub mod unique_kernels;

// The activations' pointwise kernels.
pub mod activation_kernels;

// The softmax family's and the losses' loops.
pub mod loss_kernels;
pub mod softmax_kernels;

// im2col / col2im and the pooling windows.
pub mod convolution_kernels;
pub mod pooling_kernels;

// The normalization statistics, embedding rows, padding and interpolation loops.
pub mod normalization_kernels;
pub mod padding_kernels;
pub mod upsample_kernels;
