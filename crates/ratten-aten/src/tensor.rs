//! The user-facing Tensor (at::Tensor): a `TensorBase` handle that carries the operator
//! methods. `#[repr(transparent)]`, so `&TensorBase` casts to `&Tensor` for free.

use std::ops::Deref;

use ratten_core::{Result, TensorBase};

/// A tensor: a cheap handle to a TensorImpl (PyTorch's at::Tensor). `clone()` shares the
/// tensor; it never copies data.
#[derive(Clone)]
#[repr(transparent)]
pub struct Tensor(TensorBase);

impl Tensor {
    pub fn from_base(base: TensorBase) -> Tensor {
        Tensor(base)
    }

    /// Views a `&TensorBase` as a `&Tensor` (zero cost).
    pub fn from_base_ref(base: &TensorBase) -> &Tensor {
        // SAFETY: Tensor is #[repr(transparent)] over TensorBase, so both references have the
        // same layout and validity; the lifetime is carried over unchanged.
        unsafe { &*(base as *const TensorBase as *const Tensor) }
    }

    pub fn base(&self) -> &TensorBase {
        &self.0
    }

    pub fn into_base(self) -> TensorBase {
        self.0
    }

    /// `as_strided_`: changes this tensor's geometry in place.
    pub fn as_strided_(
        &self,
        sizes: &[i64],
        strides: &[i64],
        storage_offset: Option<i64>,
    ) -> Result<&Tensor> {
        self.0.as_strided_(sizes, strides, storage_offset)?;
        Ok(self)
    }

    /// `resize_`: contiguous strides for the new sizes, growing the storage if needed.
    pub fn resize_(&self, sizes: &[i64]) -> Result<&Tensor> {
        self.0.resize_(sizes)?;
        Ok(self)
    }
}

impl Deref for Tensor {
    type Target = TensorBase;
    fn deref(&self) -> &TensorBase {
        &self.0
    }
}

impl AsRef<TensorBase> for Tensor {
    fn as_ref(&self) -> &TensorBase {
        &self.0
    }
}

impl From<TensorBase> for Tensor {
    fn from(base: TensorBase) -> Tensor {
        Tensor(base)
    }
}

impl From<Tensor> for TensorBase {
    fn from(t: Tensor) -> TensorBase {
        t.0
    }
}

impl<'a> From<&'a TensorBase> for &'a Tensor {
    fn from(base: &'a TensorBase) -> &'a Tensor {
        Tensor::from_base_ref(base)
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratten_core::{Device, ScalarType};

    #[test]
    fn handle_conversions_share_the_impl() {
        let b = TensorBase::empty(&[2, 3], ScalarType::Float, Device::CPU).unwrap();
        let r: &Tensor = Tensor::from_base_ref(&b);
        assert!(r.is_same(&b));
        assert_eq!(r.sizes().as_slice(), &[2, 3]);
        let t: Tensor = b.clone().into();
        let back: TensorBase = t.clone().into();
        assert!(back.is_same(&b));
        assert_eq!(b.use_count(), 3);
        let v = t.as_strided_with(&[3], &[2], Some(0)).unwrap();
        assert!(v.storage().is_alias_of(&b.storage()));
        t.resize_(&[4, 4]).unwrap();
        assert_eq!(b.sizes().as_slice(), &[4, 4]);
    }
}
