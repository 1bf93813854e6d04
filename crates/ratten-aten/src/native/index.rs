//! Advanced indexing (aten/src/ATen/native/TensorAdvancedIndexing.cpp, IndexingUtils.h):
//! `index` (`x[idx]`), `index_put_` (`x[idx] = v`, accumulate=False) and `nonzero`.
//!
//! `indices[d]` indexes dimension `d` of `self` (None: the whole dimension). A bool or uint8
//! index is a mask over as many dimensions as it has, replaced by its `nonzero()` columns
//! (`expandTensors`). The index tensors are broadcast together (shape `B`); when they index
//! adjacent dimensions the result puts `B` where those dimensions were, otherwise `B` comes
//! first (`transposeToFront`), as in torch and numpy.
//!
//! Not declared in native_functions.yaml yet (no dispatcher entry, no autograd): these are
//! plain CPU functions the Python binding calls. The copy loops move element bytes, so every
//! dtype works.

use ratten_core::{Error, ErrorKind, Result, ScalarType, TensorAccess};

use super::copy::to_dtype;
use crate::Tensor;

/// `torch.nonzero(self)`: the int64 `[n, self.dim()]` indices of the non-zero elements, in
/// row-major order (NaN counts as non-zero).
pub fn nonzero(self_: &Tensor) -> Result<Tensor> {
    check_cpu(self_, "nonzero")?;
    let mask = as_bool(self_)?;
    let flags = mask.to_vec::<bool>()?;
    let sizes = self_.sizes().to_vec();
    let ndim = sizes.len();
    let mut out = Vec::new();
    let mut n = 0i64;
    let mut index = vec![0i64; ndim];
    for &f in &flags {
        if f {
            out.extend_from_slice(&index);
            n += 1;
        }
        for d in (0..ndim).rev() {
            index[d] += 1;
            if index[d] < sizes[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Tensor::from_vec(out, &[n, ndim as i64])
}

fn check_cpu(t: &Tensor, what: &str) -> Result<()> {
    if t.device().is_cpu() {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::NotImplemented,
            format!(
                "{what}: ratten implements it for CPU tensors only, got a tensor on {}",
                t.device()
            ),
        ))
    }
}

fn as_bool(t: &Tensor) -> Result<Tensor> {
    if t.dtype() == ScalarType::Bool {
        Ok(t.clone())
    } else {
        to_dtype(t, ScalarType::Bool, false, false, None)
    }
}

fn fmt_sizes(s: &[i64]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The indexing plan shared by `index` and `index_put_`.
struct Plan {
    /// Per dimension of `self`: the (wrapped, bounds-checked) index values, broadcast to `B`
    /// and flattened, or None for a dimension taken whole.
    values: Vec<Option<Vec<i64>>>,
    /// The broadcast shape `B` of the index tensors.
    bshape: Vec<i64>,
    /// The result's axes: a dimension of `self` taken whole, or a dimension of `B`.
    axes: Vec<Axis>,
    out_sizes: Vec<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Axis {
    Plain(usize),
    Broadcast(usize),
}

/// torch's `expandTensors`: masks become their nonzero columns; int32 becomes int64.
fn expand_indices(self_: &Tensor, indices: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
    let sizes = self_.sizes().to_vec();
    let mut out: Vec<Option<Tensor>> = Vec::new();
    for idx in indices {
        let Some(t) = idx else {
            out.push(None);
            continue;
        };
        check_cpu(t, "index")?;
        match t.dtype() {
            ScalarType::Bool | ScalarType::Byte => {
                let d = out.len();
                let k = t.dim();
                if d + k > sizes.len() {
                    return Err(Error::index(format!(
                        "too many indices for tensor of dimension {} (got {})",
                        sizes.len(),
                        d + k
                    )));
                }
                for j in 0..k {
                    if t.sizes()[j] != sizes[d + j] {
                        return Err(Error::index(format!(
                            "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at index {}",
                            fmt_sizes(&t.sizes()),
                            fmt_sizes(&sizes),
                            d + j
                        )));
                    }
                }
                let nz = nonzero(t)?.to_vec::<i64>()?;
                let n = nz.len() / k.max(1);
                for j in 0..k {
                    let col: Vec<i64> = (0..n).map(|r| nz[r * k + j]).collect();
                    out.push(Some(Tensor::from_vec(col, &[n as i64])?));
                }
            }
            ScalarType::Long => out.push(Some(t.clone())),
            ScalarType::Int | ScalarType::Short | ScalarType::Char => {
                out.push(Some(to_dtype(t, ScalarType::Long, false, false, None)?))
            }
            other => {
                return Err(Error::index(format!(
                    "tensors used as indices must be long, int, byte or bool tensors (got {other})"
                )))
            }
        }
    }
    if out.len() > sizes.len() {
        return Err(Error::index(format!(
            "too many indices for tensor of dimension {} (got {})",
            sizes.len(),
            out.len()
        )));
    }
    out.resize(sizes.len(), None);
    Ok(out)
}

fn broadcast_shapes(shapes: &[Vec<i64>]) -> Result<Vec<i64>> {
    let nd = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut b = vec![1i64; nd];
    for s in shapes {
        for (i, &x) in s.iter().enumerate() {
            let j = nd - s.len() + i;
            if b[j] == 1 {
                b[j] = x;
            } else if x != 1 && x != b[j] {
                return Err(Error::index(format!(
                    "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                    shapes.iter().map(|s| fmt_sizes(s)).collect::<Vec<_>>().join(", ")
                )));
            }
        }
    }
    Ok(b)
}

fn plan(self_: &Tensor, indices: &[Option<Tensor>]) -> Result<Plan> {
    check_cpu(self_, "index")?;
    let idx = expand_indices(self_, indices)?;
    let sizes = self_.sizes().to_vec();
    let adv: Vec<usize> = (0..idx.len()).filter(|&d| idx[d].is_some()).collect();
    if adv.is_empty() {
        return Err(Error::index(
            "index: expected at least one index tensor (use a view for basic indexing)",
        ));
    }
    let shapes: Vec<Vec<i64>> = adv
        .iter()
        .filter_map(|&d| idx[d].as_ref().map(|t| t.sizes().to_vec()))
        .collect();
    let bshape = broadcast_shapes(&shapes)?;
    let mut values = vec![None; sizes.len()];
    for &d in &adv {
        let Some(t) = &idx[d] else { continue };
        let mut v = t.expand(&bshape)?.contiguous()?.to_vec::<i64>()?;
        let size = sizes[d];
        for x in v.iter_mut() {
            if *x < -size || *x >= size {
                return Err(Error::index(format!(
                    "index {x} is out of bounds for dimension {d} with size {size}"
                )));
            }
            if *x < 0 {
                *x += size;
            }
        }
        values[d] = Some(v);
    }
    let adjacent = adv.windows(2).all(|w| w[1] == w[0] + 1);
    let bdims: Vec<Axis> = (0..bshape.len()).map(Axis::Broadcast).collect();
    let mut axes = Vec::new();
    if adjacent {
        axes.extend((0..adv[0]).map(Axis::Plain));
        axes.extend(bdims);
        axes.extend((adv[adv.len() - 1] + 1..sizes.len()).map(Axis::Plain));
    } else {
        axes.extend(bdims);
        axes.extend(
            (0..sizes.len())
                .filter(|d| !adv.contains(d))
                .map(Axis::Plain),
        );
    }
    let out_sizes = axes
        .iter()
        .map(|a| match *a {
            Axis::Plain(d) => sizes[d],
            Axis::Broadcast(j) => bshape[j],
        })
        .collect();
    Ok(Plan {
        values,
        bshape,
        axes,
        out_sizes,
    })
}

impl Plan {
    /// Calls `f(k, element offset in self)` for every result element `k`, in row-major order.
    fn for_each(&self, self_strides: &[i64], mut f: impl FnMut(usize, isize)) {
        let n: i64 = self.out_sizes.iter().product();
        let nd = self.axes.len();
        let mut index = vec![0i64; nd];
        let mut bindex = vec![0i64; self.bshape.len()];
        for k in 0..n.max(0) as usize {
            // The position in B (row-major) and the offset of the whole dimensions.
            for (a, &i) in self.axes.iter().zip(&index) {
                if let Axis::Broadcast(j) = *a {
                    bindex[j] = i;
                }
            }
            let mut blin = 0i64;
            for (j, &i) in bindex.iter().enumerate() {
                blin = blin * self.bshape[j] + i;
            }
            let mut off = 0i64;
            for (a, &i) in self.axes.iter().zip(&index) {
                if let Axis::Plain(d) = *a {
                    off += i * self_strides[d];
                }
            }
            for (d, v) in self.values.iter().enumerate() {
                if let Some(v) = v {
                    off += v[blin as usize] * self_strides[d];
                }
            }
            f(k, off as isize);
            for d in (0..nd).rev() {
                index[d] += 1;
                if index[d] < self.out_sizes[d] {
                    break;
                }
                index[d] = 0;
            }
        }
    }
}

/// `torch.Tensor.index(indices)` (`x[idx]` with tensors): a new tensor.
pub fn index(self_: &Tensor, indices: &[Option<Tensor>]) -> Result<Tensor> {
    let p = plan(self_, indices)?;
    let out = Tensor::empty(&p.out_sizes, self_.dtype())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let g = TensorAccess::new(&[self_], &[&out])?;
    let (s, d) = (g.input(0)?, g.output(0)?);
    let (Some(sp), Some(dp)) = (s.raw_data_ptr(), d.raw_data_ptr()) else {
        return Ok(out);
    };
    let esize = self_.element_size();
    let strides = s.strides().to_vec();
    p.for_each(&strides, |k, off| {
        // SAFETY: `off` is sum(i[d] * strides[d]) for in-bounds indices of `self` (the index
        // values were checked against the sizes, the other axes range over them), so the
        // source element is inside the bounds-checked view; `k < out.numel()` is inside the
        // freshly allocated contiguous output. Shared lock on the source, exclusive on the
        // output (distinct storages), both held by `g`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                sp.as_ptr().offset(off * esize as isize),
                dp.as_ptr().add(k * esize),
                esize,
            );
        }
    });
    drop(g);
    Ok(out)
}

/// `torch.Tensor.index_put_(indices, values, accumulate=False)` (`x[idx] = v`): writes
/// `values` (broadcast to the indexing result's shape, converted to `self`'s dtype) into the
/// indexed elements. Every index is checked before anything is written. With duplicate
/// indices the last write wins.
pub fn index_put_<'a>(
    self_: &'a Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<&'a Tensor> {
    if accumulate {
        return Err(Error::new(
            ErrorKind::NotImplemented,
            "index_put_: accumulate=True is not implemented in ratten",
        ));
    }
    let p = plan(self_, indices)?;
    check_cpu(values, "index_put_")?;
    // A copy: values may alias self (`x[i] = x`), and must be self's dtype and p's shape.
    let vals = to_dtype(values, self_.dtype(), false, true, None)?;
    let vals = vals.expand(&p.out_sizes).map_err(|_| {
        Error::runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_sizes(&values.sizes()),
            fmt_sizes(&p.out_sizes)
        ))
    })?;
    let vals = vals.contiguous()?;
    if vals.numel() == 0 {
        return Ok(self_);
    }
    let g = TensorAccess::new(&[&vals], &[self_])?;
    let (s, d) = (g.input(0)?, g.output(0)?);
    let (Some(sp), Some(dp)) = (s.raw_data_ptr(), d.raw_data_ptr()) else {
        return Ok(self_);
    };
    let esize = self_.element_size();
    let strides = d.strides().to_vec();
    p.for_each(&strides, |k, off| {
        // SAFETY: as in `index`, with the roles swapped: `off` addresses an in-bounds element
        // of `self` (exclusively locked), `k` one of the contiguous copy `vals` (a distinct,
        // shared-locked storage).
        unsafe {
            std::ptr::copy_nonoverlapping(
                sp.as_ptr().add(k * esize),
                dp.as_ptr().offset(off * esize as isize),
                esize,
            );
        }
    });
    drop(g);
    Ok(self_)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long(v: &[i64]) -> Tensor {
        Tensor::from_slice(v, &[v.len() as i64]).unwrap()
    }

    #[test]
    fn nonzero_lists_indices_row_major() {
        let t = Tensor::from_slice(&[0.0f32, 1.0, 0.0, f32::NAN], &[2, 2]).unwrap();
        let nz = nonzero(&t).unwrap();
        assert_eq!(nz.sizes().to_vec(), vec![2, 2]);
        assert_eq!(nz.to_vec::<i64>().unwrap(), vec![0, 1, 1, 1]);
    }

    #[test]
    fn adjacent_indices_stay_in_place_separated_go_first() {
        let x = Tensor::from_vec((0..24i64).collect(), &[2, 3, 4]).unwrap();
        // x[:, [0, 2]] -> [2, 2, 4]
        let r = index(&x, &[None, Some(long(&[0, 2]))]).unwrap();
        assert_eq!(r.sizes().to_vec(), vec![2, 2, 4]);
        assert_eq!(r.to_vec::<i64>().unwrap()[..8], [0, 1, 2, 3, 8, 9, 10, 11]);
        // x[[0, 1], :, [1, 3]] -> separated: [2, 3]
        let r = index(&x, &[Some(long(&[0, 1])), None, Some(long(&[1, 3]))]).unwrap();
        assert_eq!(r.sizes().to_vec(), vec![2, 3]);
        assert_eq!(r.to_vec::<i64>().unwrap(), vec![1, 5, 9, 15, 19, 23]);
        // broadcasting index tensors: [[0], [1]] with [0, 2] -> [2, 2]
        let col = Tensor::from_slice(&[0i64, 1], &[2, 1]).unwrap();
        let r = index(&x, &[Some(col), Some(long(&[0, 2]))]).unwrap();
        assert_eq!(r.sizes().to_vec(), vec![2, 2, 4]);
        // negative indices wrap
        let r = index(&x, &[Some(long(&[-1]))]).unwrap();
        assert_eq!(r.to_vec::<i64>().unwrap()[0], 12);
    }

    #[test]
    fn masks_and_errors() {
        let x = Tensor::from_slice(&[1.0f64, -2.0, 3.0], &[3]).unwrap();
        let m = Tensor::from_slice(&[true, false, true], &[3]).unwrap();
        let r = index(&x, &[Some(m)]).unwrap();
        assert_eq!(r.to_vec::<f64>().unwrap(), vec![1.0, 3.0]);
        let e = index(&x, &[Some(long(&[5]))]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Index);
        assert_eq!(
            e.message(),
            "index 5 is out of bounds for dimension 0 with size 3"
        );
        let bad = Tensor::from_slice(&[true, false], &[2]).unwrap();
        let e = index(&x, &[Some(bad)]).unwrap_err();
        assert_eq!(
            e.message(),
            "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3] at index 0"
        );
        let e = index(&x, &[Some(long(&[0])), Some(long(&[0]))]).unwrap_err();
        assert_eq!(
            e.message(),
            "too many indices for tensor of dimension 1 (got 2)"
        );
        let f = Tensor::from_slice(&[0.0f32], &[1]).unwrap();
        assert_eq!(index(&x, &[Some(f)]).unwrap_err().kind(), ErrorKind::Index);
        let z = Tensor::zeros(&[2, 2], ScalarType::Float).unwrap();
        let e = index(&z, &[Some(long(&[0, 1])), Some(long(&[0, 1, 0]))]).unwrap_err();
        assert!(e
            .message()
            .starts_with("shape mismatch: indexing tensors could not be broadcast"));
    }

    #[test]
    fn index_put_writes_and_checks_first() {
        let x = Tensor::zeros(&[3, 2], ScalarType::Float).unwrap();
        let v = Tensor::from_slice(&[7.0f64], &[1]).unwrap();
        index_put_(&x, &[Some(long(&[0, 2]))], &v, false).unwrap();
        assert_eq!(
            x.to_vec::<f32>().unwrap(),
            vec![7.0, 7.0, 0.0, 0.0, 7.0, 7.0]
        );
        // out of bounds: nothing written
        let e = index_put_(&x, &[Some(long(&[1, 3]))], &v, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Index);
        assert_eq!(x.to_vec::<f32>().unwrap()[2], 0.0);
        // mask assignment with a broadcast row
        let m = Tensor::from_slice(&[false, true, false], &[3]).unwrap();
        let row = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        index_put_(&x, &[Some(m)], &row, false).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap()[2..4], [1.0, 2.0]);
        let wrong = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
        assert!(index_put_(&x, &[Some(long(&[0]))], &wrong, false).is_err());
        assert_eq!(
            index_put_(&x, &[Some(long(&[0]))], &v, true)
                .unwrap_err()
                .kind(),
            ErrorKind::NotImplemented
        );
    }
}
