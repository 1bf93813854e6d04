//! Memory overlap checks (aten/src/ATen/MemoryOverlap.cpp), with PyTorch's error texts.

use ratten_core::{Error, Result, TensorBase};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOverlap {
    No,
    Yes,
    TooHard,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOverlapStatus {
    Full,
    Partial,
    No,
    TooHard,
}

/// `is_non_overlapping_and_dense`: the elements tile a contiguous block of memory, in some
/// order of the dimensions.
pub fn is_non_overlapping_and_dense(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.len() == 1 {
        return sizes[0] < 2 || strides[0] == 1;
    }
    let mut perm: smallvec::SmallVec<[usize; 6]> = (0..sizes.len()).collect();
    // Sort by stride, keeping size-1 dims where they are "not a problem": they sort last.
    perm.sort_by(|&a, &b| {
        if sizes[a] < 2 {
            return std::cmp::Ordering::Greater;
        }
        if sizes[b] < 2 {
            return std::cmp::Ordering::Less;
        }
        strides[a].cmp(&strides[b])
    });
    let mut require = 1i64;
    for &d in &perm {
        if sizes[d] < 2 {
            return true;
        }
        if strides[d] != require {
            return false;
        }
        require = require.saturating_mul(sizes[d]);
    }
    true
}

/// `has_internal_overlap`.
pub fn has_internal_overlap(t: &TensorBase) -> MemOverlap {
    // A borrowed read: no reference counted.
    t.with_meta(|m| {
        // c10 calls an empty tensor contiguous (so non-overlapping and dense): an in-place op
        // on an expanded view with no elements is not refused.
        if m.sizes().contains(&0) || is_non_overlapping_and_dense(m.sizes(), m.strides()) {
            return MemOverlap::No;
        }
        if m.sizes()
            .iter()
            .zip(m.strides())
            .any(|(&s, &st)| s > 1 && st == 0)
        {
            return MemOverlap::Yes;
        }
        MemOverlap::TooHard
    })
}

/// `assert_no_internal_overlap`.
pub fn assert_no_internal_overlap(t: &TensorBase) -> Result<()> {
    if has_internal_overlap(t) == MemOverlap::Yes {
        return Err(Error::runtime(
            "unsupported operation: more than one element of the written-to tensor refers to a \
             single memory location. Please clone() the tensor before performing the operation.",
        ));
    }
    Ok(())
}

/// `get_overlap_status(a, b)`.
pub fn get_overlap_status(a: &TensorBase, b: &TensorBase) -> MemOverlapStatus {
    if a.is_same(b) {
        return MemOverlapStatus::Full;
    }
    let (ma, mb) = (a.meta(), b.meta());
    if ma.numel() == 0 || mb.numel() == 0 {
        return MemOverlapStatus::No;
    }
    if !is_non_overlapping_and_dense(ma.sizes(), ma.strides())
        || !is_non_overlapping_and_dense(mb.sizes(), mb.strides())
    {
        return MemOverlapStatus::TooHard;
    }
    if !ma.storage().is_alias_of(mb.storage()) {
        return MemOverlapStatus::No;
    }
    let (ea, eb) = (a.element_size() as i64, b.element_size() as i64);
    let a_start = ma.storage_offset() * ea;
    let b_start = mb.storage_offset() * eb;
    let a_end = a_start + ma.numel() * ea;
    let b_end = b_start + mb.numel() * eb;
    if a_start == b_start && a_end == b_end {
        if ma.strides() == mb.strides() {
            return MemOverlapStatus::Full;
        }
        return MemOverlapStatus::Partial;
    }
    if a_start < b_end && b_start < a_end {
        return MemOverlapStatus::Partial;
    }
    MemOverlapStatus::No
}

/// `assert_no_partial_overlap`.
pub fn assert_no_partial_overlap(a: &TensorBase, b: &TensorBase) -> Result<()> {
    if get_overlap_status(a, b) == MemOverlapStatus::Partial {
        return Err(Error::runtime(
            "unsupported operation: some elements of the input tensor and the written-to tensor \
             refer to a single memory location. Please clone() the tensor before performing the \
             operation.",
        ));
    }
    Ok(())
}

/// `assert_no_overlap`: `a` and `b` share no element, fully or partly.
pub fn assert_no_overlap(a: &TensorBase, b: &TensorBase) -> Result<()> {
    if matches!(
        get_overlap_status(a, b),
        MemOverlapStatus::Partial | MemOverlapStatus::Full
    ) {
        return Err(Error::runtime(
            "unsupported operation: some elements of the input tensor and the written-to tensor \
             refer to a single memory location. Please clone() the tensor before performing the \
             operation.",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratten_core::{Device, ScalarType};

    #[test]
    fn dense_and_overlap() {
        assert!(is_non_overlapping_and_dense(&[2, 3], &[3, 1]));
        assert!(is_non_overlapping_and_dense(&[2, 3], &[1, 2]));
        assert!(!is_non_overlapping_and_dense(&[2, 3], &[4, 1]));
        assert!(is_non_overlapping_and_dense(&[], &[]));
        let c = TensorBase::empty(&[6], ScalarType::Float, Device::CPU).unwrap();
        let a = c.as_strided(&[3], &[1], Some(1)).unwrap();
        let b = c.as_strided(&[3], &[1], Some(0)).unwrap();
        assert_eq!(get_overlap_status(&a, &b), MemOverlapStatus::Partial);
        assert!(assert_no_partial_overlap(&a, &b).is_err());
        let d = c.as_strided(&[3], &[1], Some(3)).unwrap();
        assert_eq!(get_overlap_status(&b, &d), MemOverlapStatus::No);
        let e = c.as_strided(&[3], &[0], Some(0)).unwrap();
        assert_eq!(has_internal_overlap(&e), MemOverlap::Yes);
        assert!(assert_no_internal_overlap(&e)
            .unwrap_err()
            .message()
            .starts_with("unsupported operation: more than one element"));
    }
}
