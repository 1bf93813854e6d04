//! Convolution and pooling against naive reference loops: a property sweep over shapes,
//! stride, padding, dilation, groups, bias and transposition (1-D, 2-D and 3-D), the
//! backward against the same loops' adjoint, padding='same', the pools (max with indices,
//! avg with ceil_mode / count_include_pad / divisor_override, adaptive avg and max) forward
//! and backward, 3-D (unbatched) inputs, dtypes, Meta shapes and torch's error texts.

use crate::common::values;
use proptest::prelude::*;
use ratten_aten::{functions, Tensor};
use ratten_core::{Device, ScalarType};

/// A float64 tensor of `shape` with small integer values (sums of products are exact).
fn tensor(shape: &[i64], seed: u64) -> Tensor {
    let n: i64 = shape.iter().product();
    let data: Vec<f64> = (0..n as u64)
        .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed * 97)) % 7) as f64 - 3.0)
        .collect();
    Tensor::from_vec(data, shape).unwrap()
}

/// Distinct values (for max pooling: no ties, so the index is unique).
fn distinct(shape: &[i64], seed: u64) -> Tensor {
    let n: i64 = shape.iter().product();
    let mut data: Vec<f64> = (0..n).map(|i| i as f64 * 0.25 - 7.0).collect();
    // A fixed permutation: multiply the index by a unit modulo n.
    let unit = (2 * seed + 1) as i64;
    let mut out = vec![0.0; n as usize];
    for (i, v) in data.drain(..).enumerate() {
        let j = ((i as i64 * unit) % n.max(1)) as usize;
        out[j] = v;
    }
    if out.len() > 1 && unit % n.max(1) == 0 {
        out.reverse();
    }
    Tensor::from_vec(out, shape).unwrap()
}

fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= tol * (1.0 + y.abs()))
}

/// One convolution's geometry for the reference loops.
#[derive(Clone, Debug)]
struct Conv {
    dims: usize,
    batch: i64,
    groups: i64,
    cin_g: i64,
    cout_g: i64,
    input: Vec<i64>,
    kernel: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    output_padding: Vec<i64>,
    transposed: bool,
    bias: bool,
}

impl Conv {
    fn input_sizes(&self) -> Vec<i64> {
        let mut s = vec![self.batch, self.groups * self.cin_g];
        s.extend(&self.input);
        s
    }
    fn weight_sizes(&self) -> Vec<i64> {
        let mut s = if self.transposed {
            vec![self.groups * self.cin_g, self.cout_g]
        } else {
            vec![self.groups * self.cout_g, self.cin_g]
        };
        s.extend(&self.kernel);
        s
    }
    fn output_spatial(&self) -> Vec<i64> {
        (0..self.dims)
            .map(|i| {
                let ek = self.dilation[i] * (self.kernel[i] - 1) + 1;
                if self.transposed {
                    (self.input[i] - 1) * self.stride[i] - 2 * self.padding[i]
                        + ek
                        + self.output_padding[i]
                } else {
                    (self.input[i] + 2 * self.padding[i] - ek) / self.stride[i] + 1
                }
            })
            .collect()
    }
    fn output_sizes(&self) -> Vec<i64> {
        let mut s = vec![self.batch, self.groups * self.cout_g];
        s.extend(self.output_spatial());
        s
    }
    fn valid(&self) -> bool {
        let fits = (0..self.dims).all(|i| {
            self.transposed
                || self.input[i] + 2 * self.padding[i] > self.dilation[i] * (self.kernel[i] - 1)
        });
        fits && self.output_spatial().iter().all(|&o| o >= 1)
            && (0..self.dims).all(|i| {
                !self.transposed
                    || self.output_padding[i] < self.stride[i]
                    || self.output_padding[i] < self.dilation[i]
            })
    }

    /// Calls `f(x_index, w_index, y_index)` for every product term of the convolution
    /// (flat indices into the contiguous input, weight and output).
    fn terms(&self, mut f: impl FnMut(usize, usize, usize)) {
        let d = self.dims;
        let pad3 = |v: &[i64], fill: i64| {
            let mut o = vec![fill; 3 - d];
            o.extend(v);
            o
        };
        let ins = pad3(&self.input, 1);
        let outs = pad3(&self.output_spatial(), 1);
        let ks = pad3(&self.kernel, 1);
        let st = pad3(&self.stride, 1);
        let pd = pad3(&self.padding, 0);
        let dl = pad3(&self.dilation, 1);
        let (cin, cout) = (self.groups * self.cin_g, self.groups * self.cout_g);
        let isz = ins.iter().product::<i64>();
        let osz = outs.iter().product::<i64>();
        let ksz = ks.iter().product::<i64>();
        // For a transposed convolution, the "small" side is its input: out positions of the
        // equivalent convolution are the transposed input's positions.
        let (img, col) = if self.transposed {
            (&outs, &ins)
        } else {
            (&ins, &outs)
        };
        for n in 0..self.batch {
            for g in 0..self.groups {
                for co in 0..self.cout_g {
                    for ci in 0..self.cin_g {
                        for kz in 0..ks[0] {
                            for ky in 0..ks[1] {
                                for kx in 0..ks[2] {
                                    let k = (kz * ks[1] + ky) * ks[2] + kx;
                                    for cz in 0..col[0] {
                                        for cy in 0..col[1] {
                                            for cx in 0..col[2] {
                                                let iz = cz * st[0] - pd[0] + kz * dl[0];
                                                let iy = cy * st[1] - pd[1] + ky * dl[1];
                                                let ix = cx * st[2] - pd[2] + kx * dl[2];
                                                if iz < 0
                                                    || iy < 0
                                                    || ix < 0
                                                    || iz >= img[0]
                                                    || iy >= img[1]
                                                    || ix >= img[2]
                                                {
                                                    continue;
                                                }
                                                let ipos = (iz * img[1] + iy) * img[2] + ix;
                                                let cpos = (cz * col[1] + cy) * col[2] + cx;
                                                let (gci, gco) =
                                                    (g * self.cin_g + ci, g * self.cout_g + co);
                                                if self.transposed {
                                                    // x: col side (cin), y: image (cout);
                                                    // weight (cin, cout_g, k).
                                                    let xi = (n * cin + gci) * isz + cpos;
                                                    let yi = (n * cout + gco) * osz + ipos;
                                                    let wi = (gci * self.cout_g + co) * ksz + k;
                                                    f(xi as usize, wi as usize, yi as usize);
                                                } else {
                                                    let xi = (n * cin + gci) * isz + ipos;
                                                    let yi = (n * cout + gco) * osz + cpos;
                                                    let wi = (gco * self.cin_g + ci) * ksz + k;
                                                    f(xi as usize, wi as usize, yi as usize);
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    fn forward(&self, x: &[f64], w: &[f64], b: Option<&[f64]>) -> Vec<f64> {
        let out = self.output_sizes();
        let per: i64 = out[2..].iter().product();
        let mut y = vec![0.0; out.iter().product::<i64>() as usize];
        if let Some(b) = b {
            for (i, v) in y.iter_mut().enumerate() {
                *v = b[(i as i64 / per % out[1]) as usize];
            }
        }
        self.terms(|xi, wi, yi| y[yi] += x[xi] * w[wi]);
        y
    }

    /// (grad_input, grad_weight) of `sum(y * gy)`.
    fn backward(&self, x: &[f64], w: &[f64], gy: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut gx = vec![0.0; x.len()];
        let mut gw = vec![0.0; w.len()];
        self.terms(|xi, wi, yi| {
            gx[xi] += gy[yi] * w[wi];
            gw[wi] += gy[yi] * x[xi];
        });
        (gx, gw)
    }
}

fn conv_strategy() -> impl Strategy<Value = Conv> {
    (1usize..=3, 0u8..4).prop_flat_map(|(dims, kind)| {
        let per_dim = |lo: i64, hi: i64| prop::collection::vec(lo..=hi, dims);
        (
            (1i64..=2, 1i64..=3, 1i64..=2, 1i64..=3),
            per_dim(1, if dims == 3 { 4 } else { 7 }),
            per_dim(1, 3),
            per_dim(1, 3),
            per_dim(0, 2),
            per_dim(1, 2),
            per_dim(0, 1),
            any::<bool>(),
        )
            .prop_map(
                move |(
                    (batch, groups, cin_g, cout_g),
                    input,
                    kernel,
                    stride,
                    padding,
                    dilation,
                    output_padding,
                    bias,
                )| Conv {
                    dims,
                    batch,
                    groups,
                    cin_g,
                    cout_g,
                    input,
                    kernel,
                    stride,
                    padding,
                    dilation,
                    output_padding,
                    transposed: kind == 0,
                    bias,
                },
            )
    })
}

fn run_conv(c: &Conv, x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Tensor {
    let op = if c.transposed {
        c.output_padding.clone()
    } else {
        vec![0; c.dims]
    };
    functions::convolution(
        x,
        w,
        b,
        &c.stride,
        &c.padding,
        &c.dilation,
        c.transposed,
        &op,
        c.groups,
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, .. ProptestConfig::default() })]

    #[test]
    fn convolution_matches_naive_loops(c in conv_strategy()) {
        prop_assume!(c.valid());
        let x = tensor(&c.input_sizes(), 1);
        let w = tensor(&c.weight_sizes(), 2);
        let b = tensor(&[c.groups * c.cout_g], 3);
        let bias = if c.bias { Some(&b) } else { None };
        let y = run_conv(&c, &x, &w, bias);
        prop_assert_eq!(y.sizes().to_vec(), c.output_sizes());
        let bv = values(&b);
        let expect = c.forward(&values(&x), &values(&w), c.bias.then_some(bv.as_slice()));
        prop_assert_eq!(values(&y), expect);

        // The backward: gradients of sum(y * gy).
        let gy = tensor(&c.output_sizes(), 4);
        let op = if c.transposed { c.output_padding.clone() } else { vec![0; c.dims] };
        let bias_sizes = [c.groups * c.cout_g];
        let (gx, gw, gb) = functions::convolution_backward(
            &gy, &x, &w, Some(&bias_sizes), &c.stride, &c.padding, &c.dilation,
            c.transposed, &op, c.groups, &[true, true, true],
        ).unwrap();
        let (ex, ew) = c.backward(&values(&x), &values(&w), &values(&gy));
        prop_assert_eq!(gx.sizes().to_vec(), x.sizes().to_vec());
        prop_assert_eq!(gw.sizes().to_vec(), w.sizes().to_vec());
        prop_assert_eq!(values(&gx), ex);
        prop_assert_eq!(values(&gw), ew);
        let out = c.output_sizes();
        let per: i64 = out[2..].iter().product();
        let mut eb = vec![0.0; out[1] as usize];
        for (i, v) in values(&gy).iter().enumerate() {
            eb[(i as i64 / per % out[1]) as usize] += v;
        }
        prop_assert_eq!(values(&gb), eb);

        // float32 agrees with float64.
        let f = |t: &Tensor| t.to_dtype(ScalarType::Float).unwrap();
        let bf = f(&b);
        let y32 = run_conv(&c, &f(&x), &f(&w), if c.bias { Some(&bf) } else { None });
        prop_assert_eq!(y32.dtype(), ScalarType::Float);
        prop_assert!(close(&values(&y32), &values(&y), 1e-5));

        // Meta: the same sizes, no data.
        let m = |t: &Tensor| Tensor::empty(&t.sizes(), (ScalarType::Float, Device::META)).unwrap();
        let ym = run_conv(&c, &m(&x), &m(&w), None);
        prop_assert!(ym.is_meta());
        prop_assert_eq!(ym.sizes().to_vec(), c.output_sizes());
    }
}

#[test]
fn conv2d_defaults_unbatched_and_strided_input() {
    let x = tensor(&[2, 3, 6, 5], 5);
    let w = tensor(&[4, 3, 3, 2], 6);
    let y = functions::conv2d(&x, &w).unwrap();
    let c = Conv {
        dims: 2,
        batch: 2,
        groups: 1,
        cin_g: 3,
        cout_g: 4,
        input: vec![6, 5],
        kernel: vec![3, 2],
        stride: vec![1, 1],
        padding: vec![0, 0],
        dilation: vec![1, 1],
        output_padding: vec![0, 0],
        transposed: false,
        bias: false,
    };
    assert_eq!(values(&y), c.forward(&values(&x), &values(&w), None));
    // Unbatched: the batch dim is added and removed.
    let y0 = functions::conv2d(&x.select(0, 1).unwrap(), &w).unwrap();
    assert_eq!(y0.sizes().to_vec(), vec![4, 4, 4]);
    assert_eq!(values(&y0), values(&y.select(0, 1).unwrap()));
    // A non-contiguous input (a transposed view) gives the same values.
    let xt = x
        .transpose(2, 3)
        .unwrap()
        .contiguous()
        .unwrap()
        .transpose(2, 3)
        .unwrap();
    assert!(!xt.is_contiguous());
    assert_eq!(values(&functions::conv2d(&xt, &w).unwrap()), values(&y));
    // conv1d / conv3d through their own entry points.
    let x1 = tensor(&[2, 3, 9], 7);
    let w1 = tensor(&[2, 3, 4], 8);
    let y1 = functions::conv1d_with(&x1, &w1, None, &[2], &[1], &[1], 1).unwrap();
    assert_eq!(y1.sizes().to_vec(), vec![2, 2, 4]);
    let x3 = tensor(&[1, 2, 3, 4, 5], 9);
    let w3 = tensor(&[3, 2, 2, 2, 2], 10);
    let y3 = functions::conv3d(&x3, &w3).unwrap();
    assert_eq!(y3.sizes().to_vec(), vec![1, 3, 2, 3, 4]);
}

#[test]
fn padding_same_and_valid() {
    let x = tensor(&[1, 2, 7, 6], 11);
    for (k, d) in [(3, 1), (4, 1), (4, 2), (5, 2), (2, 3)] {
        let w = tensor(&[3, 2, k, k], 12);
        let y = functions::conv2d_padding_with(&x, &w, None, &[1], "same", &[d], 1).unwrap();
        assert_eq!(y.sizes().to_vec(), vec![1, 3, 7, 6], "k={k} d={d}");
        // Reference: zero-pad left by total/2 and right by the rest, then a valid conv.
        let total = d * (k - 1);
        let (l, r) = (total / 2, total - total / 2);
        let padded = Tensor::zeros(&[1, 2, 7 + total, 6 + total], ScalarType::Double).unwrap();
        padded
            .narrow(2, l, 7)
            .unwrap()
            .narrow(3, l, 6)
            .unwrap()
            .copy_(&x)
            .unwrap();
        let _ = r;
        let e = functions::conv2d_with(&padded, &w, None, &[1], &[0], &[d], 1).unwrap();
        assert_eq!(values(&y), values(&e), "k={k} d={d}");
    }
    let w = tensor(&[3, 2, 3, 3], 13);
    let v = functions::conv2d_padding_with(&x, &w, None, &[1], "valid", &[1], 1).unwrap();
    assert_eq!(values(&v), values(&functions::conv2d(&x, &w).unwrap()));
    let err = functions::conv2d_padding_with(&x, &w, None, &[2], "same", &[1], 1)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("padding='same' is not supported for strided convolutions"),
        "{err}"
    );
    let err = functions::conv2d_padding_with(&x, &w, None, &[1], "foo", &[1], 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("Invalid padding string: 'foo'"), "{err}");
}

#[test]
fn conv_transpose2d_output_padding_groups_bias() {
    let x = tensor(&[2, 4, 3, 4], 14);
    let w = tensor(&[4, 3, 3, 2], 15);
    let b = tensor(&[6], 16);
    let y =
        functions::conv_transpose2d_with(&x, &w, Some(&b), &[2, 3], &[1, 0], &[1, 2], 2, &[1, 2])
            .unwrap();
    let c = Conv {
        dims: 2,
        batch: 2,
        groups: 2,
        cin_g: 2,
        cout_g: 3,
        input: vec![3, 4],
        kernel: vec![3, 2],
        stride: vec![2, 3],
        padding: vec![1, 0],
        dilation: vec![1, 2],
        output_padding: vec![1, 2],
        transposed: true,
        bias: true,
    };
    assert_eq!(y.sizes().to_vec(), c.output_sizes());
    let bv = values(&b);
    assert_eq!(values(&y), c.forward(&values(&x), &values(&w), Some(&bv)));
}

#[test]
fn half_types_compute_in_float() {
    let x = tensor(&[1, 2, 5, 5], 17);
    let w = tensor(&[2, 2, 3, 3], 18);
    let y = functions::conv2d(&x, &w).unwrap();
    for dt in [ScalarType::BFloat16, ScalarType::Half] {
        let yh = functions::conv2d(&x.to_dtype(dt).unwrap(), &w.to_dtype(dt).unwrap()).unwrap();
        assert_eq!(yh.dtype(), dt);
        // Small integers: exact in both half types.
        assert_eq!(values(&yh), values(&y), "{dt}");
    }
}

#[test]
fn empty_batch_and_channels() {
    let w = tensor(&[4, 3, 1, 1], 19);
    let b = tensor(&[4], 20);
    let y = functions::conv2d_with(
        &Tensor::zeros(&[0, 3, 5, 5], ScalarType::Double).unwrap(),
        &w,
        Some(&b),
        &[1],
        &[0],
        &[1],
        1,
    )
    .unwrap();
    assert_eq!(y.sizes().to_vec(), vec![0, 4, 5, 5]);
    let err = functions::conv2d(
        &Tensor::zeros(&[1, 3, 0, 5], ScalarType::Double).unwrap(),
        &w,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("Calculated padded input size per channel: (0 x 5). Kernel size: (1 x 1). Kernel size can't be greater than actual input size"),
        "{err}"
    );
}

fn conv_err(
    x: &[i64],
    w: &[i64],
    f: impl Fn(&Tensor, &Tensor) -> ratten_core::Result<Tensor>,
) -> String {
    f(&tensor(x, 1), &tensor(w, 2)).unwrap_err().to_string()
}

#[test]
fn convolution_errors_have_torchs_texts() {
    let cases: Vec<(String, &str)> = vec![
        (
            conv_err(&[1, 3, 5, 5], &[4, 3, 7, 7], functions::conv2d),
            "Calculated padded input size per channel: (5 x 5). Kernel size: (7 x 7). Kernel size can't be greater than actual input size",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 2, 3, 3], functions::conv2d),
            "Given groups=1, weight of size [4, 2, 3, 3], expected input[1, 3, 5, 5] to have 2 channels, but got 3 channels instead",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 3, 3, 3], |x, w| {
                functions::conv2d_with(x, w, Some(&tensor(&[3], 0)), &[1], &[0], &[1], 1)
            }),
            "Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 elements, but got bias of size [3] instead",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 1, 3, 3], |x, w| functions::conv2d_with(x, w, None, &[1], &[0], &[1], 3)),
            "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size [[4, 1, 3, 3]] instead",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[2, 1, 3, 3], |x, w| functions::conv2d_with(x, w, None, &[1], &[0], &[1], 3)),
            "Given groups=3, expected weight to be at least 3 at dimension 0, but got weight of size [2, 1, 3, 3] instead",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 3, 3, 3], |x, w| functions::conv2d_with(x, w, None, &[1, 1, 1], &[0], &[1], 1)),
            "expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, but got stride=[1, 1, 1]",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 3, 3, 3], |x, w| functions::conv2d_with(x, w, None, &[1], &[-1], &[1], 1)),
            "negative padding is not supported",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 3, 3, 3], |x, w| functions::conv2d_with(x, w, None, &[0], &[0], &[1], 1)),
            "non-positive stride is not supported",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 3, 3, 3], |x, w| functions::conv2d_with(x, w, None, &[1], &[0], &[1], 0)),
            "non-positive groups is not supported",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 3, 3, 3], |x, w| functions::conv2d_with(x, w, None, &[1], &[0], &[0, 1], 1)),
            "dilation should be greater than zero, but got [0, 1]",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 3, 3, 3], |x, w| functions::conv2d(x, &w.to_dtype(ScalarType::Float).unwrap())),
            "expected scalar type Double but found Float",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 3, 3, 3], |x, w| {
                functions::conv2d_with(x, w, Some(&tensor(&[4], 0).to_dtype(ScalarType::Float).unwrap()), &[1], &[0], &[1], 1)
            }),
            "Input type (double) and bias type (float) should be the same",
        ),
        (
            conv_err(&[1, 3, 5], &[4, 3, 3], |x, w| {
                functions::conv1d_with(x, w, Some(&tensor(&[4], 0).to_dtype(ScalarType::Float).unwrap()), &[1], &[0], &[1], 1)
            }),
            "Input type (double) and bias type (float) should be the same",
        ),
        (
            conv_err(&[3, 5], &[4, 3, 3, 3], functions::conv2d),
            "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 5]",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[3, 2, 3, 3], |x, w| {
                functions::conv_transpose2d_with(x, w, None, &[1], &[0], &[1], 1, &[1])
            }),
            "output padding must be smaller than either stride or dilation, but got output_padding_height: 1 output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[3, 2, 3, 3], |x, w| {
                functions::conv_transpose2d_with(x, w, None, &[1], &[4], &[0], 1, &[1])
            }),
            "Given input size per channel: (5 x 5). Calculated output size per channel: (-1 x -1). Output size is too small",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[3, 2, 3, 3], |x, w| {
                functions::conv_transpose2d_with(x, w, None, &[1], &[0], &[0], 1, &[0])
            }),
            "dilation should be greater than zero, but got dilation_height: 0, dilation_width: 0",
        ),
        (
            conv_err(&[1, 3, 1, 5, 5], &[3, 2, 1, 3, 3], |x, w| {
                functions::conv_transpose3d_with(x, w, None, &[2], &[0], &[2], 1, &[1])
            }),
            "output padding must be smaller than either stride or dilation, but got output_padding_depth: 2 output_padding_height: 2 output_padding_width: 2 stride_depth: 2 stride_height: 2 stride_width: 2 dilation_depth: 1 dilation_height: 1 dilation_width: 1",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 2, 3, 3], functions::conv_transpose2d),
            "Given transposed=1, weight of size [4, 2, 3, 3], expected input[1, 3, 5, 5] to have 4 channels, but got 3 channels instead",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[3, 2, 3, 3], |x, w| {
                functions::conv_transpose2d_with(x, w, Some(&tensor(&[3], 0)), &[1], &[0], &[0], 1, &[1])
            }),
            "Given transposed=1, weight of size [3, 2, 3, 3], expected bias to be 1-dimensional with 2 elements, but got bias of size [3] instead",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 3], |x, w| {
                functions::convolution(x, w, None, &[1], &[0], &[1], false, &[0], 1)
            }),
            "weight should have at least three dimensions",
        ),
        (
            conv_err(&[1, 3, 5, 5], &[4, 3, 3, 3], |x, w| {
                functions::conv2d(&x.to_dtype(ScalarType::Int).unwrap(), &w.to_dtype(ScalarType::Int).unwrap())
            }),
            "\"slow_conv2d_cpu\" not implemented for 'Int'",
        ),
    ];
    for (err, want) in cases {
        assert!(err.contains(want), "got {err:?}, want {want:?}");
    }
    let g = tensor(&[1, 4, 3, 3], 3);
    let (x, w) = (tensor(&[1, 3, 5, 5], 1), tensor(&[4, 3, 3, 3], 2));
    let bw = |g: &Tensor, op: &[i64]| {
        functions::convolution_backward(
            g,
            &x,
            &w,
            None,
            &[1],
            &[0],
            &[1],
            false,
            op,
            1,
            &[true, true, false],
        )
        .unwrap_err()
        .to_string()
    };
    assert!(bw(&g, &[1])
        .contains("output_padding is not supported for non-transposed convolutions; got: 1 1"));
    assert!(bw(&g.select(0, 0).unwrap(), &[0]).contains(
        "Expected input and grad_output to have the same number of dimensions, but got: 4 and 3"
    ));
    assert!(bw(&tensor(&[1, 4, 2, 3], 0), &[0]).contains(
        "Expected a tensor of dimension 4 and tensor.size[2] == 3 but got: dimension 4 and tensor.size[2] = 2"
    ));
    // output_mask: what is not asked for is empty.
    let (gi, gw, gb) = functions::convolution_backward(
        &g,
        &x,
        &w,
        None,
        &[1],
        &[0],
        &[1],
        false,
        &[0],
        1,
        &[true, false, true],
    )
    .unwrap();
    assert_eq!(gi.sizes().to_vec(), vec![1, 3, 5, 5]);
    assert_eq!(gw.numel(), 0);
    assert_eq!(gb.sizes().to_vec(), vec![4]);
}

// ---------------------------------------------------------------------------------------------
// Pooling

/// torch's pooling_output_shape without its checks.
fn pool_out(input: i64, k: i64, pad: i64, stride: i64, dil: i64, ceil: bool) -> i64 {
    let num = input + 2 * pad - dil * (k - 1) - 1 + if ceil { stride - 1 } else { 0 };
    let mut o = num.div_euclid(stride) + 1;
    if ceil && (o - 1) * stride >= input + pad {
        o -= 1;
    }
    o
}

#[derive(Clone, Debug)]
struct Pool {
    lead: Vec<i64>,
    h: i64,
    w: i64,
    k: [i64; 2],
    s: [i64; 2],
    p: [i64; 2],
    d: [i64; 2],
    ceil: bool,
}

impl Pool {
    fn out(&self) -> [i64; 2] {
        [
            pool_out(
                self.h, self.k[0], self.p[0], self.s[0], self.d[0], self.ceil,
            ),
            pool_out(
                self.w, self.k[1], self.p[1], self.s[1], self.d[1], self.ceil,
            ),
        ]
    }
    fn planes(&self) -> i64 {
        self.lead.iter().product()
    }
    fn sizes(&self) -> Vec<i64> {
        let mut s = self.lead.clone();
        s.extend([self.h, self.w]);
        s
    }
    fn out_sizes(&self) -> Vec<i64> {
        let mut s = self.lead.clone();
        s.extend(self.out());
        s
    }

    /// max pool: values and flat indices (NaN-free inputs).
    fn max(&self, x: &[f64]) -> (Vec<f64>, Vec<i64>) {
        let [oh, ow] = self.out();
        let (mut v, mut ix) = (Vec::new(), Vec::new());
        for pl in 0..self.planes() {
            for oy in 0..oh {
                for ox in 0..ow {
                    // torch's start: the first tap at or after 0 (a window with no tap
                    // inside keeps -inf and this index, even outside the plane).
                    let mut y0 = oy * self.s[0] - self.p[0];
                    while y0 < 0 {
                        y0 += self.d[0];
                    }
                    let mut x0 = ox * self.s[1] - self.p[1];
                    while x0 < 0 {
                        x0 += self.d[1];
                    }
                    let mut best = f64::NEG_INFINITY;
                    let mut bi = y0 * self.w + x0;
                    for ky in 0..self.k[0] {
                        for kx in 0..self.k[1] {
                            let y = oy * self.s[0] - self.p[0] + ky * self.d[0];
                            let xx = ox * self.s[1] - self.p[1] + kx * self.d[1];
                            if y < 0 || xx < 0 || y >= self.h || xx >= self.w {
                                continue;
                            }
                            let val = x[(pl * self.h * self.w + y * self.w + xx) as usize];
                            if val > best {
                                best = val;
                                bi = y * self.w + xx;
                            }
                        }
                    }
                    v.push(best);
                    ix.push(bi);
                }
            }
        }
        (v, ix)
    }

    /// avg pool, torch's divisor rules.
    fn avg(&self, x: &[f64], include_pad: bool, divisor: Option<i64>) -> Vec<f64> {
        let [oh, ow] = self.out();
        let mut v = Vec::new();
        for pl in 0..self.planes() {
            for oy in 0..oh {
                for ox in 0..ow {
                    let (y0, x0) = (oy * self.s[0] - self.p[0], ox * self.s[1] - self.p[1]);
                    let y1 = (y0 + self.k[0]).min(self.h + self.p[0]);
                    let x1 = (x0 + self.k[1]).min(self.w + self.p[1]);
                    let pool = (y1 - y0) * (x1 - x0);
                    let mut sum = 0.0;
                    let mut count = 0;
                    for y in y0.max(0)..y1.min(self.h) {
                        for xx in x0.max(0)..x1.min(self.w) {
                            sum += x[(pl * self.h * self.w + y * self.w + xx) as usize];
                            count += 1;
                        }
                    }
                    let div = divisor.unwrap_or(if include_pad { pool } else { count });
                    v.push(if count == 0 { 0.0 } else { sum / div as f64 });
                }
            }
        }
        v
    }
}

fn pool_strategy(dilated: bool) -> impl Strategy<Value = Pool> {
    (
        prop_oneof![
            (1i64..=3).prop_map(|c| vec![c]),
            (1i64..=2, 1i64..=3).prop_map(|(n, c)| vec![n, c])
        ],
        1i64..=9,
        1i64..=9,
        (1i64..=4, 1i64..=4),
        (1i64..=3, 1i64..=3),
        (0i64..=2, 0i64..=2),
        (1i64..=2, 1i64..=2),
        any::<bool>(),
    )
        .prop_map(move |(lead, h, w, k, s, p, d, ceil)| Pool {
            lead,
            h,
            w,
            k: [k.0, k.1],
            s: [s.0, s.1],
            p: [p.0, p.1],
            d: if dilated { [d.0, d.1] } else { [1, 1] },
            ceil,
        })
}

fn pool_ok(p: &Pool) -> bool {
    let ek = |i: usize| (p.k[i] - 1) * p.d[i] + 1;
    let [oh, ow] = p.out();
    p.p[0] <= ek(0) / 2 && p.p[1] <= ek(1) / 2 && oh >= 1 && ow >= 1
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn max_pool2d_matches_naive_loops(p in pool_strategy(true)) {
        prop_assume!(pool_ok(&p));
        let x = distinct(&p.sizes(), 3);
        let (v, i) = functions::max_pool2d_with_indices_with(
            &x, &p.k, &p.s, &p.p, &p.d, p.ceil,
        ).unwrap();
        let (ev, ei) = p.max(&values(&x));
        prop_assert_eq!(v.sizes().to_vec(), p.out_sizes());
        prop_assert_eq!(i.dtype(), ScalarType::Long);
        prop_assert_eq!(values(&v), ev);
        prop_assert_eq!(i.contiguous().unwrap().to_vec::<i64>().unwrap(), ei.clone());
        let vm = functions::max_pool2d_with(&x, &p.k, &p.s, &p.p, &p.d, p.ceil).unwrap();
        prop_assert_eq!(values(&vm), values(&v));

        // Backward: each gradient lands on its window's maximum.
        let g = tensor(&p.out_sizes(), 5);
        let gi = functions::max_pool2d_with_indices_backward(
            &g, &x, &p.k, &p.s, &p.p, &p.d, p.ceil, &i,
        ).unwrap();
        let mut egi = vec![0.0; x.numel() as usize];
        let per_out = (p.out()[0] * p.out()[1]) as usize;
        for (j, gv) in values(&g).iter().enumerate() {
            let plane = j / per_out;
            if ei[j] < p.h * p.w {
                egi[plane * (p.h * p.w) as usize + ei[j] as usize] += gv;
            }
        }
        prop_assert_eq!(values(&gi), egi);

        // Meta.
        let xm = Tensor::empty(&p.sizes(), (ScalarType::Float, Device::META)).unwrap();
        let (vm, im) = functions::max_pool2d_with_indices_with(&xm, &p.k, &p.s, &p.p, &p.d, p.ceil).unwrap();
        prop_assert_eq!(vm.sizes().to_vec(), p.out_sizes());
        prop_assert_eq!(im.dtype(), ScalarType::Long);
    }

    #[test]
    fn avg_pool2d_matches_naive_loops(
        p in pool_strategy(false),
        include_pad in any::<bool>(),
        divisor in prop_oneof![Just(None), (1i64..=5).prop_map(Some)],
    ) {
        prop_assume!(pool_ok(&p));
        let x = tensor(&p.sizes(), 7);
        let y = functions::avg_pool2d_with(&x, &p.k, &p.s, &p.p, p.ceil, include_pad, divisor).unwrap();
        prop_assert_eq!(y.sizes().to_vec(), p.out_sizes());
        prop_assert!(close(&values(&y), &p.avg(&values(&x), include_pad, divisor), 1e-12));

        // Backward: the adjoint of the forward (sum(y * g) == sum(x * grad_input)).
        let g = tensor(&p.out_sizes(), 8);
        let gi = functions::avg_pool2d_backward(&g, &x, &p.k, &p.s, &p.p, p.ceil, include_pad, divisor).unwrap();
        prop_assert_eq!(gi.sizes().to_vec(), p.sizes());
        let n = x.numel() as usize;
        let mut egi = vec![0.0; n];
        for j in 0..n {
            let mut e = vec![0.0; n];
            e[j] = 1.0;
            let col = p.avg(&e, include_pad, divisor);
            egi[j] = col.iter().zip(values(&g)).map(|(a, b)| a * b).sum();
        }
        prop_assert!(close(&values(&gi), &egi, 1e-12));
    }

    #[test]
    fn adaptive_pools_match_naive_loops(
        lead in prop_oneof![(1i64..=3).prop_map(|c| vec![c]), (1i64..=2, 1i64..=2).prop_map(|(n, c)| vec![n, c])],
        h in 1i64..=9, w in 1i64..=9, oh in 1i64..=6, ow in 1i64..=6,
    ) {
        let mut sizes = lead.clone();
        sizes.extend([h, w]);
        let x = distinct(&sizes, 2);
        let xv = values(&x);
        let planes: i64 = lead.iter().product();
        let (mut eavg, mut emax, mut eidx) = (Vec::new(), Vec::new(), Vec::new());
        for pl in 0..planes {
            for oy in 0..oh {
                let (y0, y1) = ((oy * h) / oh, ((oy + 1) * h + oh - 1) / oh);
                for ox in 0..ow {
                    let (x0, x1) = ((ox * w) / ow, ((ox + 1) * w + ow - 1) / ow);
                    let (mut sum, mut best, mut bi) = (0.0, f64::NEG_INFINITY, -1);
                    for y in y0..y1 {
                        for xx in x0..x1 {
                            let v = xv[(pl * h * w + y * w + xx) as usize];
                            sum += v;
                            if v > best { best = v; bi = y * w + xx; }
                        }
                    }
                    eavg.push(sum / ((y1 - y0) * (x1 - x0)) as f64);
                    emax.push(best);
                    eidx.push(bi);
                }
            }
        }
        let mut out_sizes = lead.clone();
        out_sizes.extend([oh, ow]);
        let a = functions::adaptive_avg_pool2d(&x, &[oh, ow]).unwrap();
        prop_assert_eq!(a.sizes().to_vec(), out_sizes.clone());
        prop_assert!(close(&values(&a), &eavg, 1e-12));
        let a2 = functions::_adaptive_avg_pool2d(&x, &[oh, ow]).unwrap();
        prop_assert!(close(&values(&a2), &eavg, 1e-12));
        let (m, i) = functions::adaptive_max_pool2d(&x, &[oh, ow]).unwrap();
        prop_assert_eq!(values(&m), emax);
        prop_assert_eq!(i.contiguous().unwrap().to_vec::<i64>().unwrap(), eidx.clone());

        // Backward: avg's is its forward's adjoint, max's lands on the maxima.
        let g = tensor(&out_sizes, 9);
        let gv = values(&g);
        let ga = functions::_adaptive_avg_pool2d_backward(&g, &x).unwrap();
        let gm = functions::adaptive_max_pool2d_backward(&g, &x, &i).unwrap();
        let (mut ega, mut egm) = (vec![0.0; xv.len()], vec![0.0; xv.len()]);
        let per = (oh * ow) as usize;
        for pl in 0..planes as usize {
            for oy in 0..oh {
                let (y0, y1) = ((oy * h) / oh, ((oy + 1) * h + oh - 1) / oh);
                for ox in 0..ow {
                    let (x0, x1) = ((ox * w) / ow, ((ox + 1) * w + ow - 1) / ow);
                    let j = pl * per + (oy * ow + ox) as usize;
                    let share = gv[j] / ((y1 - y0) * (x1 - x0)) as f64;
                    for y in y0..y1 {
                        for xx in x0..x1 {
                            ega[pl * (h * w) as usize + (y * w + xx) as usize] += share;
                        }
                    }
                    egm[pl * (h * w) as usize + eidx[j] as usize] += gv[j];
                }
            }
        }
        prop_assert!(close(&values(&ga), &ega, 1e-12));
        prop_assert_eq!(values(&gm), egm);
    }
}

#[test]
fn pooling_dtypes_nan_and_meta() {
    let x = tensor(&[2, 3, 6, 6], 21);
    let y = functions::avg_pool2d(&x, &[2]).unwrap();
    for dt in [ScalarType::Float, ScalarType::BFloat16, ScalarType::Half] {
        let yh = functions::avg_pool2d(&x.to_dtype(dt).unwrap(), &[2]).unwrap();
        assert_eq!(yh.dtype(), dt);
        assert!(close(&values(&yh), &values(&y), 1e-2), "{dt}");
        let m = functions::max_pool2d(&x.to_dtype(dt).unwrap(), &[3]).unwrap();
        assert_eq!(
            values(&m),
            values(&functions::max_pool2d(&x, &[3]).unwrap())
        );
    }
    // NaN wins the max, as torch's `val > max || isnan(val)`.
    let mut d = vec![1.0f32; 16];
    d[5] = f32::NAN;
    let t = Tensor::from_vec(d, &[1, 4, 4]).unwrap();
    let (v, i) = functions::max_pool2d_with_indices(&t, &[2]).unwrap();
    assert!(values(&v)[0].is_nan());
    assert_eq!(i.to_vec::<i64>().unwrap()[0], 5);
    // adaptive_avg_pool2d to 1x1 is a mean over H and W.
    let a = functions::adaptive_avg_pool2d(&x, &[1, 1]).unwrap();
    assert_eq!(a.sizes().to_vec(), vec![2, 3, 1, 1]);
    let m = x.mean_dim_with(Some(&[-1, -2]), true, None).unwrap();
    assert!(close(&values(&a), &values(&m), 1e-12));
    // Meta shapes.
    let xm = Tensor::empty(&[2, 3, 7, 7], (ScalarType::Float, Device::META)).unwrap();
    let am = functions::avg_pool2d_with(&xm, &[3], &[2], &[1], true, true, None).unwrap();
    assert!(am.is_meta());
    assert_eq!(am.sizes().to_vec(), vec![2, 3, 4, 4]);
    let (mm, mi) = functions::adaptive_max_pool2d(&xm, &[3, 2]).unwrap();
    assert_eq!(mm.sizes().to_vec(), vec![2, 3, 3, 2]);
    assert_eq!(mi.dtype(), ScalarType::Long);
    let aa = functions::_adaptive_avg_pool2d(&xm, &[5, 2]).unwrap();
    assert_eq!(aa.sizes().to_vec(), vec![2, 3, 5, 2]);
    // Empty batch.
    let (e, _) = functions::max_pool2d_with_indices(
        &Tensor::zeros(&[0, 2, 4, 4], ScalarType::Float).unwrap(),
        &[2],
    )
    .unwrap();
    assert_eq!(e.sizes().to_vec(), vec![0, 2, 2, 2]);
}

#[test]
fn pooling_errors_have_torchs_texts() {
    let x = tensor(&[1, 3, 5, 5], 1);
    let e = |r: ratten_core::Result<Tensor>| r.unwrap_err().to_string();
    let e2 = |r: ratten_core::Result<(Tensor, Tensor)>| r.unwrap_err().to_string();
    let cases: Vec<(String, &str)> = vec![
        (e(functions::max_pool2d(&x, &[7])), "Given input size: (3x5x5). Calculated output size: (3x0x0). Output size is too small"),
        (e(functions::max_pool2d_with(&x, &[3], &[], &[2], &[1], false)), "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"),
        (e(functions::max_pool2d_with(&x, &[3], &[0], &[0], &[1], false)), "stride should not be zero"),
        (e(functions::max_pool2d(&x, &[1, 2, 3])), "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
        (e(functions::max_pool2d_with(&x, &[2], &[1, 2, 3], &[0], &[1], false)), "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints"),
        (e(functions::max_pool2d_with(&x, &[2], &[], &[1, 2, 3], &[1], false)), "max_pool2d: padding must either be a single int, or a tuple of two ints"),
        (e(functions::max_pool2d_with(&x, &[2], &[], &[0], &[1, 2, 3], false)), "max_pool2d: dilation must be either a single int, or a tuple of two ints"),
        (e(functions::max_pool2d_with(&x, &[2], &[], &[0], &[0], false)), "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"),
        (e(functions::max_pool2d(&tensor(&[5, 5], 0), &[2])), "non-empty 3D or 4D (batch mode) tensor expected for input"),
        (e(functions::max_pool2d(&Tensor::zeros(&[1, 0, 4, 4], ScalarType::Float).unwrap(), &[2])), "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 0, 4, 4]"),
        (e(functions::max_pool2d_with(&x, &[2], &[], &[-1], &[1], false)), "pad must be non-negative, but got pad: -1"),
        (e(functions::max_pool2d(&x.to_dtype(ScalarType::Bool).unwrap(), &[2])), "\"max_pool2d\" not implemented for 'Bool'"),
        (e(functions::avg_pool2d(&x, &[1, 2, 3])), "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
        (e(functions::avg_pool2d_with(&x, &[2], &[], &[0], false, true, Some(0))), "divisor must be not zero"),
        (e(functions::avg_pool2d(&x.to_dtype(ScalarType::Int).unwrap(), &[2])), "\"avg_pool2d\" not implemented for 'Int'"),
        (e(functions::adaptive_avg_pool2d(&x, &[2, 2, 2])), "adaptive_avg_pool2d: output_size must be 2"),
        (e(functions::adaptive_avg_pool2d(&x, &[-1, 2])), "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {-1, 2}"),
        (e(functions::adaptive_avg_pool2d(&tensor(&[5, 5], 0), &[2, 2])), "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [5, 5]"),
        (e(functions::adaptive_avg_pool2d(&Tensor::zeros(&[1, 3, 0, 4], ScalarType::Float).unwrap(), &[2, 2])), "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes [1, 3, 0, 4] with dimension 2 being empty"),
        (e(functions::adaptive_avg_pool2d(&x.to_dtype(ScalarType::Long).unwrap(), &[2, 2])), "\"adaptive_avg_pool2d\" not implemented for 'Long'"),
        (e2(functions::adaptive_max_pool2d(&x, &[2, 2, 2])), "adaptive_max_pool2d(): internal error: output_size.size() must be 2"),
        (e2(functions::adaptive_max_pool2d(&tensor(&[5, 5], 0), &[2, 2])), "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [5, 5]"),
        (e2(functions::adaptive_max_pool2d(&Tensor::zeros(&[1, 0, 3, 4], ScalarType::Float).unwrap(), &[2, 2])), "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes [1, 0, 3, 4] with dimension 1 being empty"),
        (e2(functions::adaptive_max_pool2d(&x.to_dtype(ScalarType::Long).unwrap(), &[2, 2])), "\"adaptive_max_pool2d\" not implemented for 'Long'"),
        (
            e(functions::max_pool2d_with_indices_backward(&tensor(&[1, 3, 2, 2], 0), &x, &[2], &[2], &[0], &[1], false, &Tensor::zeros(&[1, 3, 2, 3], ScalarType::Long).unwrap())),
            "Expected a tensor of dimension 4 and tensor.size[3] == 2 but got: dimension 4 and tensor.size[3] = 3",
        ),
        (
            e(functions::max_pool2d_with_indices_backward(&tensor(&[1, 3, 2, 2], 0).to_dtype(ScalarType::Float).unwrap(), &x, &[2], &[2], &[0], &[1], false, &Tensor::zeros(&[1, 3, 2, 2], ScalarType::Long).unwrap())),
            "expected dtype double for `gradOutput` but got dtype float",
        ),
        (
            e(functions::avg_pool2d_backward(&tensor(&[1, 3, 2, 3], 0), &x, &[2], &[2], &[0], false, true, None)),
            "Expected a tensor of dimension 4 and tensor.size[3] == 2 but got: dimension 4 and tensor.size[3] = 3",
        ),
        (
            e(functions::_adaptive_avg_pool2d_backward(&tensor(&[1, 3, 2, 2], 0).to_dtype(ScalarType::Float).unwrap(), &x)),
            "adaptive_avg_pool2d_backward_out_cpu_template: Expected dtype double for `grad_output` but got dtype float",
        ),
        (
            e(functions::adaptive_max_pool2d_backward(&tensor(&[1, 3, 2, 3], 0).to_dtype(ScalarType::Float).unwrap(), &x, &Tensor::zeros(&[1, 3, 2, 3], ScalarType::Long).unwrap())),
            "expected dtype double for `grad_output` but got dtype float",
        ),
    ];
    for (err, want) in cases {
        assert!(err.contains(want), "got {err:?}, want {want:?}");
    }
}

#[test]
fn forward_in_column_tiles_with_groups_and_bias() {
    // 64 input channels x 5x5 kernels per group: the column buffer is split into tiles of a
    // few output rows, each its own product.
    let c = Conv {
        dims: 2,
        batch: 3,
        groups: 2,
        cin_g: 64,
        cout_g: 3,
        input: vec![21, 40],
        kernel: vec![5, 5],
        stride: vec![1, 1],
        padding: vec![2, 1],
        dilation: vec![1, 1],
        output_padding: vec![0, 0],
        transposed: false,
        bias: true,
    };
    let x = tensor(&c.input_sizes(), 31);
    let w = tensor(&c.weight_sizes(), 32);
    let b = tensor(&[6], 33);
    let y = run_conv(&c, &x, &w, Some(&b));
    let bv = values(&b);
    assert_eq!(values(&y), c.forward(&values(&x), &values(&w), Some(&bv)));
}

#[test]
fn transposed_one_by_one_kernel_with_output_padding() {
    // The image is larger than the columns (output_padding): its extra elements are 0, not
    // whatever the memory held, and each channel lands at its own offset.
    let x = Tensor::from_vec(vec![3.0f64, 1.0], &[1, 1, 2]).unwrap();
    let w = Tensor::from_vec(vec![2.0f64, -1.0], &[1, 2, 1]).unwrap();
    for _ in 0..4 {
        let y = functions::convolution(&x, &w, None, &[1], &[0], &[2], true, &[1], 1).unwrap();
        assert_eq!(y.sizes().to_vec(), vec![1i64, 2, 3]);
        assert_eq!(values(&y), vec![6.0, 2.0, 0.0, -3.0, -1.0, 0.0]);
    }
}
