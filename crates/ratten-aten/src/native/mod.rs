//! Native kernels (aten/src/ATen/native).

pub mod binary_ops;
pub mod copy;
pub mod cpu;
pub mod einsum;
pub mod factory;
pub mod index;
pub mod linear_algebra;
pub mod pointwise;
pub mod reduce_ops;
pub mod reduce_utils;
pub mod repeat;
pub mod scan_ops;
pub mod scatter_gather;
pub mod shape;
pub mod sorting;
pub mod tensor_compare;
pub mod transformations;
pub mod triangular;
pub mod type_properties;
pub mod unary_ops;
pub mod view;

// The kernels `native_functions.yaml` names (`crate::native::<kernel>`), and the argument types
// its schemas use that ratten-core lacks.
pub use crate::random::{
    bernoulli, bernoulli_, bernoulli_float_, bernoulli_out, bernoulli_p, exponential_, multinomial,
    multinomial_out, normal_, normal_float_float, normal_float_float_out, normal_float_tensor,
    normal_float_tensor_out, normal_tensor_float, normal_tensor_float_out, normal_tensor_tensor,
    normal_tensor_tensor_out, rand, rand_generator, rand_generator_out, rand_like, rand_out,
    randint, randint_generator, randint_generator_out, randint_like, randint_like_low_dtype,
    randint_low, randint_low_generator, randint_low_generator_out, randint_low_out, randint_out,
    randn, randn_generator, randn_generator_out, randn_like, randn_out, random_, random_from_,
    random_to_, randperm, randperm_generator, randperm_out, randperm_out_cpu, uniform_,
};
pub use binary_ops::*;
pub use copy::{
    copy, copy_, copy_meta, to_device, to_dtype, to_dtype_layout, to_other, type_as, Layout,
    MemoryFormat,
};
pub use einsum::*;
pub use factory::*;
pub use index::*;
pub use linear_algebra::*;
pub use pointwise::*;
pub use reduce_ops::*;
pub use repeat::*;
pub use scan_ops::*;
pub use scatter_gather::*;
pub use shape::*;
pub use sorting::*;
pub use tensor_compare::*;
pub use transformations::*;
pub use triangular::*;
pub use unary_ops::*;
pub use view::*;

// The unique family, searchsorted / bucketize, bincount / histc.
pub mod bucketization;
pub mod summary_ops;
pub mod unique;
pub use bucketization::*;
pub use summary_ops::*;
pub use unique::*;

// Complex views and conjugation, sgn; the new_* factories and zero_; operator aliases (ger).
pub mod aliases;
pub mod complex_ops;
pub mod new_factories;
pub use aliases::*;
pub use complex_ops::*;
pub use new_factories::*;

// Activations.
pub mod activation;
pub use activation::*;

// Softmax and the losses.
pub mod loss;
pub mod softmax;
pub use loss::*;
pub use softmax::*;

// Convolution and pooling.
pub mod convolution;
pub mod pooling;
pub use convolution::*;
pub use pooling::*;

// Normalization, dropout, embedding, one_hot, padding and interpolation.
pub mod dropout;
pub mod embedding;
pub mod normalization;
pub mod padding;
pub mod upsample;
pub use dropout::*;
pub use embedding::*;
pub use normalization::*;
pub use padding::*;
pub use upsample::*;
