//! Basic indexing (torch/csrc/autograd/python_variable_indexing.cpp's `applySlicing`):
//! integers, slices, None and Ellipsis become a sequence of views.

use ratten_aten::Tensor;
use ratten_core::{Error, Result};

/// One element of an index tuple.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IndexItem {
    Int(i64),
    /// A Python slice, unpacked (`None` for absent bounds).
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
    },
    None,
    Ellipsis,
}

/// A view step that indexing applies, in order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ViewStep {
    /// `real_dim` is the dimension of the indexed tensor, named in the error message.
    Select {
        dim: i64,
        real_dim: i64,
        index: i64,
    },
    Slice {
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    },
    Unsqueeze {
        dim: i64,
    },
}

/// Plans the views for `items` on a tensor of `ndim` dimensions.
pub fn plan(items: &[IndexItem], ndim: usize) -> Result<Vec<ViewStep>> {
    let specified = items
        .iter()
        .filter(|i| matches!(i, IndexItem::Int(_) | IndexItem::Slice { .. }))
        .count();
    if ndim == 0 && specified > 0 {
        return Err(Error::index(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or \
             `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number",
        ));
    }
    if specified > ndim {
        return Err(Error::index(format!(
            "too many indices for tensor of dimension {ndim}"
        )));
    }
    if items
        .iter()
        .filter(|i| matches!(i, IndexItem::Ellipsis))
        .count()
        > 1
    {
        return Err(Error::index(
            "an index can only have a single ellipsis ('...')",
        ));
    }
    let mut steps = Vec::with_capacity(items.len());
    let mut dim: i64 = 0;
    let mut real_dim: i64 = 0;
    for item in items {
        match *item {
            IndexItem::Int(index) => {
                steps.push(ViewStep::Select {
                    dim,
                    real_dim,
                    index,
                });
                real_dim += 1;
            }
            IndexItem::Slice { start, stop, step } => {
                let step = step.unwrap_or(1);
                if step == 0 {
                    return Err(Error::value("slice step cannot be zero"));
                }
                if step < 0 {
                    return Err(Error::value("step must be greater than zero"));
                }
                steps.push(ViewStep::Slice {
                    dim,
                    start,
                    end: stop,
                    step,
                });
                dim += 1;
                real_dim += 1;
            }
            IndexItem::None => {
                steps.push(ViewStep::Unsqueeze { dim });
                dim += 1;
            }
            IndexItem::Ellipsis => {
                dim += (ndim - specified) as i64;
                real_dim += (ndim - specified) as i64;
            }
        }
    }
    Ok(steps)
}

/// Applies the planned views. A 0-dim result of integer indexing is still a tensor (as torch).
pub fn apply(t: &Tensor, steps: &[ViewStep]) -> Result<Tensor> {
    let mut r = t.clone();
    for s in steps {
        r = match *s {
            ViewStep::Select {
                dim,
                real_dim,
                index,
            } => {
                // applySelect's own check and text (the select op words it differently).
                let size = r.size(dim)?;
                if index < -size || index >= size {
                    return Err(Error::index(format!(
                        "index {index} is out of bounds for dimension {real_dim} with size {size}"
                    )));
                }
                r.select(dim, index)?
            }
            ViewStep::Slice {
                dim,
                start,
                end,
                step,
            } => r.slice_with(dim, start, end, step)?,
            ViewStep::Unsqueeze { dim } => r.unsqueeze(dim)?,
        };
    }
    // `t[...]` and `t[:]` are new tensor objects viewing the same memory, as in torch.
    if steps.is_empty() {
        r = r.alias()?;
    }
    Ok(r)
}

/// One element of an index tuple that may hold advanced indices.
#[derive(Clone, Debug)]
pub enum AdvItem {
    Basic(IndexItem),
    /// An index tensor (integer, or a bool/uint8 mask over its own number of dimensions).
    Tensor(Tensor),
    /// A Python bool: a new dimension of size 1, indexed by `[0]` (True) or `[]` (False).
    Bool(bool),
}

/// torch's `applySlicing` with advanced indices: the basic items become views (an index
/// tensor keeps its dimensions, as a full slice), and the index tensors are returned at the
/// dimension of the view they index, ready for `index` / `index_put_` (None elsewhere; a mask
/// spans its own number of dimensions). Returns None as the list when there is no tensor.
pub fn apply_advanced(
    t: &Tensor,
    items: &[AdvItem],
) -> Result<(Tensor, Option<Vec<Option<Tensor>>>)> {
    let full = IndexItem::Slice {
        start: None,
        stop: None,
        step: None,
    };
    let span = |x: &Tensor| -> usize {
        if matches!(
            x.dtype(),
            ratten_core::ScalarType::Bool | ratten_core::ScalarType::Byte
        ) {
            x.dim()
        } else {
            1
        }
    };
    let mut basic = Vec::with_capacity(items.len());
    let mut specified = 0usize;
    for it in items {
        match it {
            AdvItem::Basic(b) => {
                if matches!(b, IndexItem::Int(_) | IndexItem::Slice { .. }) {
                    specified += 1;
                }
                basic.push(*b);
            }
            AdvItem::Tensor(x) => {
                let k = span(x);
                specified += k;
                basic.extend(std::iter::repeat_n(full, k));
            }
            AdvItem::Bool(_) => basic.push(IndexItem::None),
        }
    }
    let ndim = t.dim();
    // `plan` checks the count (a tensor stands for its full slices), with torch's texts.
    let steps = plan(&basic, ndim)?;
    let view = apply(t, &steps)?;
    // The dimension of `view` each tensor indexes.
    let mut placed: Vec<(usize, Tensor, usize)> = Vec::new();
    let mut dim = 0usize;
    for it in items {
        match it {
            AdvItem::Basic(IndexItem::Int(_)) => {}
            AdvItem::Basic(IndexItem::Slice { .. }) | AdvItem::Basic(IndexItem::None) => dim += 1,
            AdvItem::Basic(IndexItem::Ellipsis) => dim += ndim - specified,
            AdvItem::Tensor(x) => {
                let k = span(x);
                placed.push((dim, x.clone(), k));
                dim += k;
            }
            AdvItem::Bool(b) => {
                let v: Vec<i64> = if *b { vec![0] } else { Vec::new() };
                let n = v.len() as i64;
                placed.push((dim, Tensor::from_vec(v, &[n])?, 1));
                dim += 1;
            }
        }
    }
    if placed.is_empty() {
        return Ok((view, None));
    }
    let mut indices = Vec::new();
    let mut d = 0usize;
    for (pos, x, k) in placed {
        while d < pos {
            indices.push(None);
            d += 1;
        }
        indices.push(Some(x));
        d += k;
    }
    Ok((view, Some(indices)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratten_core::ScalarType;

    fn slice(a: Option<i64>, b: Option<i64>) -> IndexItem {
        IndexItem::Slice {
            start: a,
            stop: b,
            step: None,
        }
    }

    #[test]
    fn ints_slices_none_and_ellipsis() {
        let t = Tensor::arange(24, ScalarType::Long)
            .unwrap()
            .view(&[2, 3, 4])
            .unwrap();
        let r = apply(
            &t,
            &plan(&[IndexItem::Int(1), slice(Some(1), None)], 3).unwrap(),
        )
        .unwrap();
        assert_eq!(r.sizes().as_slice(), &[2, 4]);
        assert_eq!(
            r.to_vec::<i64>().unwrap(),
            vec![16, 17, 18, 19, 20, 21, 22, 23]
        );
        let r = apply(
            &t,
            &plan(&[IndexItem::Ellipsis, IndexItem::Int(-1)], 3).unwrap(),
        )
        .unwrap();
        assert_eq!(r.sizes().as_slice(), &[2, 3]);
        assert_eq!(r.to_vec::<i64>().unwrap(), vec![3, 7, 11, 15, 19, 23]);
        let r = apply(
            &t,
            &plan(&[IndexItem::None, IndexItem::Ellipsis, IndexItem::None], 3).unwrap(),
        )
        .unwrap();
        assert_eq!(r.sizes().as_slice(), &[1, 2, 3, 4, 1]);
        let r = apply(
            &t,
            &plan(
                &[
                    IndexItem::Int(0),
                    IndexItem::Int(2),
                    IndexItem::Slice {
                        start: None,
                        stop: None,
                        step: Some(2),
                    },
                ],
                3,
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(r.to_vec::<i64>().unwrap(), vec![8, 10]);
    }

    #[test]
    fn errors_are_torchs() {
        let e = plan(&[IndexItem::Int(0); 4], 3).unwrap_err();
        assert_eq!(e.kind(), ratten_core::ErrorKind::Index);
        assert_eq!(e.message(), "too many indices for tensor of dimension 3");
        let e = plan(
            &[IndexItem::Slice {
                start: None,
                stop: None,
                step: Some(-1),
            }],
            1,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ratten_core::ErrorKind::Value);
        let t = Tensor::zeros(&[3], ScalarType::Float).unwrap();
        let e = apply(&t, &plan(&[IndexItem::Int(3)], 1).unwrap()).unwrap_err();
        assert_eq!(e.kind(), ratten_core::ErrorKind::Index);
        assert_eq!(
            e.message(),
            "index 3 is out of bounds for dimension 0 with size 3"
        );
    }

    #[test]
    fn advanced_items_become_views_and_placed_indices() {
        let x = Tensor::from_vec((0..24i64).collect(), &[2, 3, 4]).unwrap();
        let idx = Tensor::from_slice(&[0i64, 2], &[2]).unwrap();
        // x[0, :, [0, 2]]: select, then the index tensor on view dim 1
        let items = [
            AdvItem::Basic(IndexItem::Int(0)),
            AdvItem::Basic(slice(None, None)),
            AdvItem::Tensor(idx.clone()),
        ];
        let (v, ind) = apply_advanced(&x, &items).unwrap();
        assert_eq!(v.sizes().to_vec(), vec![3, 4]);
        let ind = ind.unwrap();
        assert_eq!(ind.len(), 2);
        assert!(ind[0].is_none() && ind[1].is_some());
        // x[..., idx] and a bool: Ellipsis covers two dims; True adds one
        let items = [
            AdvItem::Bool(true),
            AdvItem::Basic(IndexItem::Ellipsis),
            AdvItem::Tensor(idx),
        ];
        let (v, ind) = apply_advanced(&x, &items).unwrap();
        assert_eq!(v.sizes().to_vec(), vec![1, 2, 3, 4]);
        let ind = ind.unwrap();
        assert_eq!(ind.len(), 4);
        assert!(ind[0].is_some() && ind[3].is_some());
        // a 2-d mask spans two dims
        let m = Tensor::zeros(&[2, 3], ScalarType::Bool).unwrap();
        let (_, ind) = apply_advanced(&x, &[AdvItem::Tensor(m)]).unwrap();
        assert_eq!(ind.unwrap().len(), 1);
        let m = Tensor::zeros(&[2, 3, 4, 1], ScalarType::Bool).unwrap();
        assert!(apply_advanced(&x, &[AdvItem::Tensor(m)]).is_err());
    }
}
