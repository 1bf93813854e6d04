//! The CPU loops of `crate::native::upsample`: the source positions (and for linear
//! interpolation the weights) of every output position along one spatial dim, computed as
//! ATen's UpSample.h computes them (`nearest_idx`, `area_pixel_compute_scale`,
//! `area_pixel_compute_source_index`, `compute_source_index_and_lambda`), in float for
//! float32 / float16 / bfloat16 inputs and in double for float64. The front end gathers and
//! weights along these positions and scatters back for the backward.

/// `compute_scales_value`: `1 / scale` when a positive scale is given, else `in / out`.
fn compute_scales_value_f32(scale: Option<f64>, input: i64, output: i64) -> f32 {
    match scale {
        Some(s) if s > 0.0 => (1.0 / s) as f32,
        _ => input as f32 / output as f32,
    }
}

fn compute_scales_value_f64(scale: Option<f64>, input: i64, output: i64) -> f64 {
    match scale {
        Some(s) if s > 0.0 => 1.0 / s,
        _ => input as f64 / output as f64,
    }
}

/// `nearest_idx` for every output position: the identity when the sizes are equal, `j >> 1`
/// for a doubling, else `min(floor(j * scale), input - 1)` in float.
pub fn nearest_indices(input: i64, output: i64, scale: Option<f64>) -> Vec<i64> {
    (0..output)
        .map(|j| {
            if output == input {
                j
            } else if output == 2 * input {
                j >> 1
            } else {
                let s = compute_scales_value_f32(scale, input, output);
                (((j as f32) * s).floor() as i64).min(input - 1)
            }
        })
        .collect()
}

/// The two source positions of each output position and their weights
/// (`compute_source_index_and_lambda`): `(i0, i1, lambda0, lambda1)` as four vectors.
pub struct LinearTaps {
    pub i0: Vec<i64>,
    pub i1: Vec<i64>,
    pub l0: Vec<f64>,
    pub l1: Vec<f64>,
}

/// The linear-interpolation taps along one dim. `double` selects the float64 arithmetic
/// (a float64 input), else float's.
pub fn linear_taps(
    input: i64,
    output: i64,
    align_corners: bool,
    scale: Option<f64>,
    double: bool,
) -> LinearTaps {
    let mut taps = LinearTaps {
        i0: Vec::with_capacity(output as usize),
        i1: Vec::with_capacity(output as usize),
        l0: Vec::with_capacity(output as usize),
        l1: Vec::with_capacity(output as usize),
    };
    for j in 0..output {
        let (i0, l1) = if output == input {
            // torch's shortcut: the same size copies.
            (j, 0.0)
        } else if double {
            let s = if align_corners {
                if output > 1 {
                    (input - 1) as f64 / (output - 1) as f64
                } else {
                    0.0
                }
            } else {
                compute_scales_value_f64(scale, input, output)
            };
            let real = if align_corners {
                s * j as f64
            } else {
                (s * (j as f64 + 0.5) - 0.5).max(0.0)
            };
            let i0 = (real as i64).min(input - 1);
            (i0, (real - i0 as f64).clamp(0.0, 1.0))
        } else {
            let s = if align_corners {
                if output > 1 {
                    (input - 1) as f32 / (output - 1) as f32
                } else {
                    0.0
                }
            } else {
                compute_scales_value_f32(scale, input, output)
            };
            let real = if align_corners {
                s * j as f32
            } else {
                (s * (j as f32 + 0.5) - 0.5).max(0.0)
            };
            let i0 = (real as i64).min(input - 1);
            (i0, (real - i0 as f32).clamp(0.0, 1.0) as f64)
        };
        let i1 = if output == input {
            i0
        } else {
            i0 + i64::from(i0 < input - 1)
        };
        taps.i0.push(i0);
        taps.i1.push(i1);
        taps.l1.push(l1);
        taps.l0.push(if double {
            1.0 - l1
        } else {
            (1.0f32 - l1 as f32) as f64
        });
    }
    taps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_and_linear_positions() {
        assert_eq!(nearest_indices(3, 6, None), vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(nearest_indices(4, 3, None), vec![0, 1, 2]);
        assert_eq!(nearest_indices(3, 5, Some(1.7)), vec![0, 0, 1, 1, 2]);
        let t = linear_taps(2, 4, false, None, true);
        assert_eq!(t.i0, vec![0, 0, 0, 1]);
        assert_eq!(t.i1, vec![1, 1, 1, 1]);
        // The last position reads index 1 twice (i1 stays at the edge) with weight 0.25.
        assert_eq!(t.l1, vec![0.0, 0.25, 0.75, 0.25]);
        let a = linear_taps(3, 5, true, None, true);
        assert_eq!(a.l1, vec![0.0, 0.5, 0.0, 0.5, 0.0]);
        assert_eq!(a.i0, vec![0, 0, 1, 1, 2]);
    }
}
