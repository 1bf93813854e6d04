//! The CPU loops of `crate::native::padding`: for reflection and replication padding, the
//! source position of every output position along one padded dim. The front end gathers with
//! `index_select` along those positions (forward) and scatters back with `index_add`
//! (backward), which sums the gradient of every output that read an input element.

/// How an out-of-range position maps back into `[0, size)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// Mirror without repeating the edge: `-1 -> 1`, `size -> size - 2`.
    Reflect,
    /// Repeat the edge: clamp to `[0, size - 1]`.
    Replicate,
}

/// The source index of each of the `size + pad_l + pad_r` output positions (ATen's
/// `reflection_pad1d_out_frame` / `replication_pad1d_out_frame` index arithmetic). For
/// `Reflect`, `pad_l` and `pad_r` are less than `size` (checked by the front end).
pub fn pad_source_indices(size: i64, pad_l: i64, pad_r: i64, mode: PadMode) -> Vec<i64> {
    let out = size + pad_l + pad_r;
    (0..out.max(0))
        .map(|j| {
            let i = j - pad_l;
            match mode {
                PadMode::Reflect => {
                    let i = i.abs();
                    if i >= size {
                        2 * (size - 1) - i
                    } else {
                        i
                    }
                }
                PadMode::Replicate => i.clamp(0, size - 1),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_and_replicate_indices() {
        assert_eq!(
            pad_source_indices(4, 2, 3, PadMode::Reflect),
            vec![2, 1, 0, 1, 2, 3, 2, 1, 0]
        );
        assert_eq!(
            pad_source_indices(3, 2, 1, PadMode::Replicate),
            vec![0, 0, 0, 1, 2, 2]
        );
        // Negative padding crops.
        assert_eq!(pad_source_indices(5, -1, -2, PadMode::Reflect), vec![1, 2]);
    }
}
