//! einsum, tensordot and kron (ATen's Linear.cpp): compositions over the matrix products,
//! so autograd records their pieces.
//!
//! Note [einsum as pairwise products]: the equation is parsed with torch's grammar and error
//! texts (subscripts `[a-zA-Z]`, at most one `...` per operand, `->` with an explicit output or
//! the implicit one: the broadcast ellipsis dims, then the subscripts that appear once, upper
//! case before lower case). Each operand is brought into one shared dim order: its repeated
//! subscripts become diagonals, and it is permuted and given size-1 dims for the subscripts it
//! lacks; the order is the output's dims, then the contracted subscripts. The operands are then
//! combined left to right by `sumproduct_pair` (torch's): a dim summed in this step is
//! contracted by one bmm when both sides have it, and summed beforehand when only one does;
//! dims in both that are still needed become the bmm's batch. The contraction order is always
//! left to right; the `path=` argument (torch's opt_einsum order) is checked and otherwise
//! not used.

use ratten_core::{Error, Result};

use crate::functions as F;
use crate::generated::operators as ops;
use crate::Tensor;

/// The number of subscript labels: `A`-`Z` then `a`-`z`.
const TOTAL_LABELS: usize = 52;

fn label_of(c: u8) -> Option<usize> {
    match c {
        b'A'..=b'Z' => Some((c - b'A') as usize),
        b'a'..=b'z' => Some((c - b'a') as usize + 26),
        _ => None,
    }
}

fn char_of(label: usize) -> char {
    if label < 26 {
        (b'A' + label as u8) as char
    } else {
        (b'a' + (label - 26) as u8) as char
    }
}

/// One operand's (or the output's) subscripts: labels, with `ELLIPSIS` where `...` stood.
const ELLIPSIS: usize = usize::MAX;

fn invalid_subscript(index: usize) -> Error {
    Error::runtime(format!(
        "einsum(): invalid subscript given at index {index} in the equation string, subscripts \
         must be in [a-zA-Z]"
    ))
}

/// The subscripts of each operand, and of the output when explicit.
type Subscripts = (Vec<Vec<usize>>, Option<Vec<usize>>);

/// The subscripts of the operands (`lhs`, starting at byte 0 of the equation) and of the
/// output when explicit.
fn parse(equation: &str) -> Result<Subscripts> {
    let bytes = equation.as_bytes();
    let arrow = equation.find("->");
    let lhs_end = arrow.unwrap_or(bytes.len());
    let mut ops_labels = vec![Vec::new()];
    let mut found_ell = false;
    let mut dots = 0;
    let mut i = 0;
    while i < lhs_end {
        let c = bytes[i];
        match c {
            b' ' => {}
            b'.' => {
                let op = ops_labels.len() - 1;
                if found_ell {
                    return Err(Error::runtime(format!(
                        "einsum(): found '.' for operand {op} for which an ellipsis was already \
                         found"
                    )));
                }
                dots += 1;
                if dots == 3 {
                    ops_labels[op].push(ELLIPSIS);
                    found_ell = true;
                    dots = 0;
                }
                if !(i + 1 < lhs_end && bytes[i + 1] == b'.') && dots != 0 {
                    return Err(Error::runtime(format!(
                        "einsum(): found '.' for operand {op} that is not part of any ellipsis"
                    )));
                }
            }
            b',' => {
                ops_labels.push(Vec::new());
                found_ell = false;
            }
            _ => match label_of(c) {
                Some(l) => ops_labels.last_mut().expect("one operand at least").push(l),
                None => return Err(invalid_subscript(i)),
            },
        }
        i += 1;
    }
    let Some(arrow) = arrow else {
        return Ok((ops_labels, None));
    };
    let mut out = Vec::new();
    let mut found_ell = false;
    let mut dots = 0;
    let mut seen = [false; TOTAL_LABELS];
    let mut i = arrow + 2;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b' ' => {}
            b'.' => {
                if found_ell {
                    return Err(Error::runtime(
                        "einsum(): found '.' for output but an ellipsis (...) was already found",
                    ));
                }
                dots += 1;
                if dots == 3 {
                    out.push(ELLIPSIS);
                    found_ell = true;
                    dots = 0;
                }
                if !(i + 1 < bytes.len() && bytes[i + 1] == b'.') && dots != 0 {
                    return Err(Error::runtime(
                        "einsum(): found '.' for output that is not part of any ellipsis (...)",
                    ));
                }
            }
            _ => match label_of(c) {
                Some(l) => {
                    if seen[l] {
                        return Err(Error::runtime(format!(
                            "einsum(): output subscript {} appears more than once in the output",
                            c as char
                        )));
                    }
                    seen[l] = true;
                    out.push(l);
                }
                None => return Err(invalid_subscript(i)),
            },
        }
        i += 1;
    }
    Ok((ops_labels, Some(out)))
}

/// `sumproduct_pair`: `(left * right).sum(sum_dims)` with the summed dims kept (size 1), by one
/// bmm. Both operands have the same number of dims (sizes 1 or equal).
fn sumproduct_pair(left: &Tensor, right: &Tensor, sum_dims: &[bool]) -> Result<Tensor> {
    let dim = left.dim();
    let (mut left, mut right) = (left.clone(), right.clone());
    let (mut lro, mut lo, mut ro, mut sum) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut lro_size, mut lo_size, mut ro_size, mut sum_size) = (1i64, 1i64, 1i64, 1i64);
    for (i, &summed) in sum_dims.iter().enumerate().take(dim) {
        let (ls, rs) = (left.sizes()[i], right.sizes()[i]);
        let (sl, sr) = (ls != 1, rs != 1);
        if summed {
            if sl && sr {
                sum.push(i);
                sum_size *= ls;
            } else if sl {
                left = F::sum_dim_int_list_with(&left, Some(&[i as i64]), true, None)?;
            } else if sr {
                right = F::sum_dim_int_list_with(&right, Some(&[i as i64]), true, None)?;
            }
        } else if sl && sr {
            lro.push(i);
            lro_size *= ls;
        } else if sl {
            lo.push(i);
            lo_size *= ls;
        } else if sr {
            ro.push(i);
            ro_size *= rs;
        }
    }
    // The remaining (size-1) dims go anywhere; put them with `ro` for the output's order.
    let placed: Vec<usize> = lro
        .iter()
        .chain(&lo)
        .chain(&sum)
        .chain(&ro)
        .copied()
        .collect();
    let rest: Vec<usize> = (0..dim).filter(|d| !placed.contains(d)).collect();
    let ro_all: Vec<usize> = ro.iter().chain(&rest).copied().collect();
    let as_i64 = |v: Vec<usize>| v.into_iter().map(|d| d as i64).collect::<Vec<_>>();
    // left: [lro, lo, sum, ro...], right: [lro, sum, ro..., lo]
    let lperm = as_i64(
        lro.iter()
            .chain(&lo)
            .chain(&sum)
            .chain(&ro_all)
            .copied()
            .collect(),
    );
    let rperm = as_i64(
        lro.iter()
            .chain(&sum)
            .chain(&ro_all)
            .chain(&lo)
            .copied()
            .collect(),
    );
    let l = left
        .permute(&lperm)?
        .reshape(&[lro_size, lo_size, sum_size])?;
    let r = right
        .permute(&rperm)?
        .reshape(&[lro_size, sum_size, ro_size])?;
    let prod = ops::bmm::call(&l, &r)?;
    // Back to [lro, lo, sum (1), ro...] sizes, then to the original dim order.
    let size_of = |d: usize| {
        if sum.contains(&d) {
            1
        } else if lo.contains(&d) {
            left.sizes()[d]
        } else {
            left.sizes()[d].max(right.sizes()[d])
        }
    };
    let out_sizes: Vec<i64> = lperm.iter().map(|&d| size_of(d as usize)).collect();
    let out = prod.view(&out_sizes)?;
    let mut inverse = vec![0i64; dim];
    for (pos, &d) in lperm.iter().enumerate() {
        inverse[d as usize] = pos as i64;
    }
    out.permute(&inverse)
}

/// `einsum` (CompositeImplicitAutograd).
pub fn einsum(equation: &str, tensors: &[Tensor], path: Option<&[i64]>) -> Result<Tensor> {
    if tensors.is_empty() {
        return Err(Error::runtime(
            "einsum(): must provide at least one operand",
        ));
    }
    let (op_labels, explicit_out) = parse(equation)?;
    if op_labels.len() < tensors.len() {
        return Err(Error::runtime(
            "einsum(): more operands were provided than specified in the equation",
        ));
    }
    if op_labels.len() > tensors.len() {
        return Err(Error::runtime(
            "einsum(): fewer operands were provided than specified in the equation",
        ));
    }
    if let Some(p) = path {
        let expected = 2 * (tensors.len().saturating_sub(1));
        if p.len() != expected {
            return Err(Error::runtime(format!(
                "einsum(): expected the contraction path to have {expected} elements, got {}",
                p.len()
            )));
        }
    }
    // Per operand: the label of each of its dims (ELLIPSIS for each ellipsis dim), checked
    // against its rank.
    let mut ell_dims = 0usize;
    let mut label_count = [0usize; TOTAL_LABELS];
    let mut label_size = [1i64; TOTAL_LABELS];
    let mut dims_of: Vec<Vec<usize>> = Vec::with_capacity(tensors.len());
    for (i, (labels, t)) in op_labels.iter().zip(tensors).enumerate() {
        let ndim = t.dim();
        let nlabels = labels.iter().filter(|&&l| l != ELLIPSIS).count();
        let has_ell = labels.contains(&ELLIPSIS);
        if has_ell {
            if nlabels > ndim {
                return Err(Error::runtime(format!(
                    "einsum(): the number of subscripts in the equation ({nlabels}) is more than \
                     the number of dimensions ({ndim}) for operand {i}"
                )));
            }
        } else if nlabels != ndim {
            return Err(Error::runtime(format!(
                "einsum(): the number of subscripts in the equation ({nlabels}) does not match \
                 the number of dimensions ({ndim}) for operand {i} and no ellipsis was given"
            )));
        }
        let n_ell = ndim - nlabels;
        ell_dims = ell_dims.max(n_ell);
        let mut dims = Vec::with_capacity(ndim);
        for &l in labels {
            if l == ELLIPSIS {
                dims.extend(std::iter::repeat_n(ELLIPSIS, n_ell));
            } else {
                dims.push(l);
            }
        }
        for (d, &l) in dims.iter().enumerate() {
            if l == ELLIPSIS {
                continue;
            }
            let s = t.sizes()[d];
            label_count[l] += 1;
            let prev = label_size[l];
            if prev != 1 && s != 1 && prev != s {
                return Err(Error::runtime(format!(
                    "einsum(): subscript {} has size {s} for operand {i} which does not \
                     broadcast with previously seen size {prev}",
                    char_of(l)
                )));
            }
            if s != 1 {
                label_size[l] = s;
            }
        }
        dims_of.push(dims);
    }
    // The output's labels (ELLIPSIS standing for all ellipsis dims).
    let out_labels: Vec<usize> = match explicit_out {
        Some(out) => {
            for &l in &out {
                if l != ELLIPSIS && label_count[l] == 0 {
                    return Err(Error::runtime(format!(
                        "einsum(): output subscript {} does not appear in the equation for any \
                         input operand",
                        char_of(l)
                    )));
                }
            }
            out
        }
        None => {
            let mut out = Vec::new();
            if ell_dims > 0 {
                out.push(ELLIPSIS);
            }
            out.extend((0..TOTAL_LABELS).filter(|&l| label_count[l] == 1));
            out
        }
    };
    // The shared order: output dims (the ellipsis expanded to `ell_dims`), then contracted
    // labels, then the ellipsis dims when the output drops them.
    let out_has_ell = out_labels.contains(&ELLIPSIS);
    let mut order: Vec<usize> = Vec::new(); // label, or ELLIPSIS - k for ellipsis dim k
    for &l in &out_labels {
        if l == ELLIPSIS {
            order.extend((0..ell_dims).map(|k| ELLIPSIS - k));
        } else {
            order.push(l);
        }
    }
    let n_out = order.len();
    for (l, &count) in label_count.iter().enumerate() {
        if count > 0 && !out_labels.contains(&l) {
            order.push(l);
        }
    }
    if !out_has_ell {
        order.extend((0..ell_dims).map(|k| ELLIPSIS - k));
    }
    // Each operand permuted into `order`, with size-1 dims for what it lacks.
    let mut aligned = Vec::with_capacity(tensors.len());
    for (t, dims) in tensors.iter().zip(&dims_of) {
        let n_ell = dims.iter().filter(|&&l| l == ELLIPSIS).count();
        // Name each dim: ellipsis dims right-aligned against `ell_dims`.
        let mut names: Vec<usize> = Vec::with_capacity(dims.len());
        let mut k = 0;
        for &l in dims {
            if l == ELLIPSIS {
                names.push(ELLIPSIS - (ell_dims - n_ell + k));
                k += 1;
            } else {
                names.push(l);
            }
        }
        // Repeated labels: take the diagonal (moved to the last dim), until none repeats.
        let mut t = t.clone();
        loop {
            let dup = (0..names.len()).find_map(|a| {
                ((a + 1)..names.len())
                    .find(|&b| names[b] == names[a])
                    .map(|b| (a, b))
            });
            let Some((a, b)) = dup else { break };
            t = t.diagonal_with(0, a as i64, b as i64)?;
            let l = names[a];
            names.remove(b);
            names.remove(a);
            names.push(l);
        }
        let mut perm = Vec::with_capacity(order.len());
        let mut shape = Vec::with_capacity(order.len());
        for &o in &order {
            match names.iter().position(|&n| n == o) {
                Some(p) => {
                    perm.push(p as i64);
                    shape.push(t.sizes()[p]);
                }
                None => shape.push(1),
            }
        }
        let permuted = t.permute(&perm)?;
        aligned.push(permuted.reshape(&shape)?);
    }
    // The last operand that has each dim of `order` (size > 1 or named there).
    let has = |i: usize, d: usize| aligned[i].sizes()[d] != 1;
    let last_use: Vec<usize> = (0..order.len())
        .map(|d| (0..aligned.len()).rev().find(|&i| has(i, d)).unwrap_or(0))
        .collect();
    let mut result = aligned[0].clone();
    if aligned.len() == 1 {
        let sum_dims: Vec<i64> = (n_out..order.len()).map(|d| d as i64).collect();
        if !sum_dims.is_empty() {
            result = F::sum_dim_int_list_with(&result, Some(&sum_dims), true, None)?;
        }
    } else {
        for (i, operand) in aligned.iter().enumerate().skip(1) {
            let sum_dims: Vec<bool> = (0..order.len())
                .map(|d| d >= n_out && last_use[d] <= i)
                .collect();
            result = sumproduct_pair(&result, operand, &sum_dims)?;
        }
        // A contracted dim only the first operand had was not summed by any pair.
        let rest: Vec<i64> = (n_out..order.len())
            .filter(|&d| result.sizes()[d] != 1)
            .map(|d| d as i64)
            .collect();
        if !rest.is_empty() {
            result = F::sum_dim_int_list_with(&result, Some(&rest), true, None)?;
        }
    }
    // Drop the contracted dims (size 1 now) and broadcast the output's dims to their size.
    let out_shape: Vec<i64> = (0..n_out)
        .map(|d| {
            let o = order[d];
            if o > TOTAL_LABELS {
                // An ellipsis dim: the broadcast of the operands' sizes.
                aligned.iter().map(|t| t.sizes()[d]).max().unwrap_or(1)
            } else {
                label_size[o]
            }
        })
        .collect();
    let kept = result.reshape(&result.sizes()[..n_out])?;
    if kept.sizes().as_slice() == out_shape.as_slice() {
        Ok(kept)
    } else {
        // A dim that only broadcast (size 1 everywhere it was computed).
        kept.expand(&out_shape)?.contiguous()
    }
}

// ---------------------------------------------------------------------------------------------
// tensordot

/// `tensordot` (CompositeImplicitAutograd): the contracted dims moved last in `self` and first
/// in `other`, one mm.
pub fn tensordot(
    self_: &Tensor,
    other: &Tensor,
    dims_self: &[i64],
    dims_other: &[i64],
) -> Result<Tensor> {
    if dims_self.len() != dims_other.len() {
        return Err(Error::runtime(
            "both dimension lists should have same length",
        ));
    }
    if self_.dtype() != other.dtype() {
        return Err(Error::runtime("both inputs should have same dtype"));
    }
    let wrap = |d: i64, n: usize| ratten_core::tensor_impl::maybe_wrap_dim(d, n, true);
    let d1: Vec<usize> = dims_self
        .iter()
        .map(|&d| wrap(d, self_.dim()))
        .collect::<Result<_>>()?;
    let d2: Vec<usize> = dims_other
        .iter()
        .map(|&d| wrap(d, other.dim()))
        .collect::<Result<_>>()?;
    for (dims, n) in [(&d1, self_.dim()), (&d2, other.dim())] {
        let mut seen = vec![false; n];
        for &d in dims.iter() {
            if seen[d] {
                return Err(Error::runtime(format!(
                    "dim {d} appears multiple times in the list"
                )));
            }
            seen[d] = true;
        }
    }
    let (mut t1, mut t2) = (self_.clone(), other.clone());
    let mut csize = 1i64;
    for (&a, &b) in d1.iter().zip(&d2) {
        let (s1, s2) = (self_.sizes()[a], other.sizes()[b]);
        if s2 == 1 {
            t1 = F::sum_dim_int_list_with(&t1, Some(&[a as i64]), true, None)?;
        } else if s1 == 1 {
            t2 = F::sum_dim_int_list_with(&t2, Some(&[b as i64]), true, None)?;
        } else if s1 != s2 {
            return Err(Error::runtime(format!(
                "contracted dimensions need to match, but first has size {s1} in dim {a} and \
                 second has size {s2} in dim {b}"
            )));
        } else {
            csize *= s1;
        }
    }
    let (mut p1, mut p2, mut rsizes) = (Vec::new(), Vec::new(), Vec::new());
    let (mut size1, mut size2) = (1i64, 1i64);
    for i in 0..self_.dim() {
        if !d1.contains(&i) {
            p1.push(i as i64);
            size1 *= t1.sizes()[i];
            rsizes.push(t1.sizes()[i]);
        }
    }
    p1.extend(d1.iter().map(|&d| d as i64));
    p2.extend(d2.iter().map(|&d| d as i64));
    for i in 0..other.dim() {
        if !d2.contains(&i) {
            p2.push(i as i64);
            size2 *= t2.sizes()[i];
            rsizes.push(t2.sizes()[i]);
        }
    }
    let t1 = t1.permute(&p1)?.reshape(&[size1, csize])?;
    let t2 = t2.permute(&p2)?.reshape(&[csize, size2])?;
    ops::mm::call(&t1, &t2)?.reshape(&rsizes)
}

/// `tensordot.out`.
pub fn tensordot_out<'a>(
    self_: &Tensor,
    other: &Tensor,
    dims_self: &[i64],
    dims_other: &[i64],
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let r = tensordot(self_, other, dims_self, dims_other)?;
    crate::structured::resize_output(out, r.sizes().as_slice())?;
    out.copy_(&r)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// kron

/// The views kron multiplies: `self` as `[a0, 1, a1, 1, ...]`, `other` as `[1, b0, 1, b1, ...]`
/// (the shorter padded with leading 1s), and the result's shape `[a0 b0, a1 b1, ...]`.
fn kron_views(self_: &Tensor, other: &Tensor) -> Result<(Tensor, Tensor, Vec<i64>)> {
    let maxdim = self_.dim().max(other.dim());
    let (pad_a, pad_b) = (maxdim - self_.dim(), maxdim - other.dim());
    let (mut ar, mut br, mut rr) = (vec![1; 2 * maxdim], vec![1; 2 * maxdim], vec![1; maxdim]);
    for i in 0..maxdim {
        ar[2 * i] = if i >= pad_a {
            self_.sizes()[i - pad_a]
        } else {
            1
        };
        br[2 * i + 1] = if i >= pad_b {
            other.sizes()[i - pad_b]
        } else {
            1
        };
        rr[i] = ar[2 * i] * br[2 * i + 1];
    }
    Ok((self_.reshape(&ar)?, other.reshape(&br)?, rr))
}

/// `kron` (CompositeImplicitAutograd): the Kronecker product, as one broadcast multiply.
pub fn kron(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let (a, b, shape) = kron_views(self_, other)?;
    F::mul(&a, &b)?.reshape(&shape)
}

/// `kron.out`.
pub fn kron_out<'a>(self_: &Tensor, other: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    let (a, b, shape) = kron_views(self_, other)?;
    crate::structured::resize_output(out, &shape)?;
    let mul_shape: Vec<i64> = a
        .sizes()
        .iter()
        .zip(b.sizes().iter())
        .map(|(x, y)| x * y)
        .collect();
    let view = out.view(&mul_shape)?;
    ops::mul_out::call(&a, &b, &view)?;
    Ok(out)
}
