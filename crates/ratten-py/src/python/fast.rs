//! Layer 6 (fast paths): the hottest calls, `a + b` (and `-`, `*`, `/`, their reflected and
//! in-place forms) and `ratten.add(a, b, out=c)` (and sub/mul/div), when the arguments are
//! exactly tensors, or a tensor and a Python number. They skip the general argument parser (no
//! `ArgKind` vectors, no keyword strings), borrow the tensors from the frozen Python objects
//! without cloning, and call the typed Rust API directly; anything else falls back to the
//! generated bindings, which give the same results and torch's errors.

use std::cell::RefCell;
use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyDict, PyFloat, PyInt, PyTuple};
use ratten_aten::{functions, Tensor};
use ratten_core::{Device, Result, Scalar};

use super::bindings::{function_index, method_index};
use super::convert::to_scalar;
use super::error::IntoPy;
use super::object::{exact_tensor, gil_serialises, wrap, GilOnly, PyTensor};
use super::python_args::run_maybe_released;

/// The four arithmetic operators with a fast path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

impl Arith {
    pub fn name(self) -> &'static str {
        match self {
            Arith::Add => "add",
            Arith::Sub => "sub",
            Arith::Mul => "mul",
            Arith::Div => "div",
        }
    }

    pub fn functional(self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        match self {
            Arith::Add => functions::add(a, b),
            Arith::Sub => functions::sub(a, b),
            Arith::Mul => functions::mul(a, b),
            Arith::Div => functions::div(a, b),
        }
    }

    /// `number <op> tensor` as torch's reflected operators compute it: `__radd__` and
    /// `__rmul__` are `tensor.add(number)` / `tensor.mul(number)` (the order shows in complex
    /// NaN parts), `__rsub__` is `sub(number, tensor)`, and `__rtruediv__` is
    /// `tensor.reciprocal() * number` (rounded twice, unlike `div(number, tensor)`).
    pub fn reflected(self, tensor: &Tensor, number: &Tensor) -> Result<Tensor> {
        match self {
            Arith::Add | Arith::Mul => self.functional(tensor, number),
            Arith::Sub => functions::sub(number, tensor),
            Arith::Div => functions::mul(&functions::reciprocal(tensor)?, number),
        }
    }

    pub fn out(self, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        match self {
            Arith::Add => functions::add_out(out, a, b).map(|_| ()),
            Arith::Sub => functions::sub_out(out, a, b).map(|_| ()),
            Arith::Mul => functions::mul_out(out, a, b).map(|_| ()),
            Arith::Div => functions::div_out(out, a, b).map(|_| ()),
        }
    }

    pub fn inplace(self, a: &Tensor, b: &Tensor) -> Result<()> {
        match self {
            Arith::Add => a.add_(b).map(|_| ()),
            Arith::Sub => a.sub_(b).map(|_| ()),
            Arith::Mul => a.mul_(b).map(|_| ()),
            Arith::Div => a.div_(b).map(|_| ()),
        }
    }
}

/// A second operand the fast path takes: a tensor (borrowed) or a Python number made into a
/// wrapped-number tensor. `None` for anything else (the caller falls back).
enum Operand<'a> {
    Borrowed(&'a PyTensor),
    Owned(Tensor),
}

impl Operand<'_> {
    fn get(&self) -> &Tensor {
        match self {
            Operand::Borrowed(t) => &t.t,
            Operand::Owned(t) => t,
        }
    }

    /// The element count that decides the GIL (a wrapped number has one element).
    fn gil_numel(&self) -> usize {
        match self {
            Operand::Borrowed(t) => t.gil_numel(),
            Operand::Owned(_) => 1,
        }
    }
}

fn operand<'a>(o: &'a Bound<'_, PyAny>) -> PyResult<Option<Operand<'a>>> {
    if let Some(t) = exact_tensor(o) {
        return Ok(Some(Operand::Borrowed(t)));
    }
    // Exact number types only (bool is an int subclass and promotes differently; numpy
    // scalars and other objects take the general path).
    if o.is_exact_instance_of::<PyFloat>()
        || o.is_exact_instance_of::<PyInt>()
        || o.is_exact_instance_of::<PyBool>()
        || o.is_exact_instance_of::<PyComplex>()
    {
        let s = to_scalar(o)?;
        return Ok(Some(Operand::Owned(wrapped_number(s).py()?)));
    }
    Ok(None)
}

/// The last wrapped-number tensor made per scalar kind, with its version, reused while no one
/// else holds it: making a tensor costs more than a small add. One for the process, used with
/// the GIL held (every caller holds it), so reaching it is no thread-local access (a
/// `__tls_get_addr` call in the extension module); not used without a GIL.
type WrappedCache = RefCell<[Option<(Scalar, Tensor, u32)>; 4]>;
static WRAPPED: GilOnly<WrappedCache> = GilOnly(RefCell::new([None, None, None, None]));

fn same_scalar(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::Bool(x), Scalar::Bool(y)) => x == y,
        (Scalar::Int(x), Scalar::Int(y)) => x == y,
        (Scalar::Double(x), Scalar::Double(y)) => x.to_bits() == y.to_bits(),
        (Scalar::ComplexDouble(x), Scalar::ComplexDouble(y)) => {
            x.re.to_bits() == y.re.to_bits() && x.im.to_bits() == y.im.to_bits()
        }
        _ => false,
    }
}

/// A Python number as a wrapped-number tensor (an input operand only: the fast paths never
/// write it or return it). A cached one is handed out again only when the cache holds the
/// sole reference (no result, view or saved tensor kept it) and its version is unchanged.
pub fn wrapped_number(s: Scalar) -> Result<Tensor> {
    let slot = match s {
        Scalar::Bool(_) => 0,
        Scalar::Int(_) => 1,
        Scalar::Double(_) => 2,
        Scalar::ComplexDouble(_) => 3,
        // Rare enough to go uncached.
        Scalar::UInt64(_) => return Tensor::wrapped_scalar_tensor(s, Device::CPU),
    };
    if !gil_serialises() {
        return Tensor::wrapped_scalar_tensor(s, Device::CPU);
    }
    let cache = &WRAPPED.0;
    if let Some((k, t, v)) = &cache.borrow()[slot] {
        if same_scalar(k, &s) && t.base().use_count() == 1 && t.version() == *v {
            return Ok(t.clone());
        }
    }
    let t = Tensor::wrapped_scalar_tensor(s, Device::CPU)?;
    let v = t.version();
    // The tensor replaced is dropped after the borrow ends (its drop runs no Python code, but
    // nothing else need be reasoned about inside the borrow).
    let old = cache.borrow_mut()[slot].replace((s, t.clone(), v));
    drop(old);
    Ok(t)
}

/// `self <op> other` (or, `reflected`, `other <op> self`); None: not handled here.
pub fn binary(
    slf: &Bound<'_, PyTensor>,
    other: &Bound<'_, PyAny>,
    op: Arith,
    reflected: bool,
) -> PyResult<Option<PyObject>> {
    let py = slf.py();
    let Some(b) = operand(other)? else {
        return Ok(None);
    };
    let n = slf.get().gil_numel().max(b.gil_numel());
    let a = &slf.get().t;
    let b = b.get();
    let r = if reflected {
        run_maybe_released(py, n, || op.reflected(a, b))?
    } else {
        run_maybe_released(py, n, || op.functional(a, b))?
    };
    Ok(Some(wrap(py, r)?.into_any()))
}

/// `self <op>= other`; false: not handled here.
pub fn inplace(slf: &Bound<'_, PyTensor>, other: &Bound<'_, PyAny>, op: Arith) -> PyResult<bool> {
    let Some(b) = operand(other)? else {
        return Ok(false);
    };
    let n = slf.get().gil_numel().max(b.gil_numel());
    let a = &slf.get().t;
    let b = b.get();
    run_maybe_released(slf.py(), n, || op.inplace(a, b))?;
    Ok(true)
}

/// The arithmetic operator of the generated function `index`, if it has a fast path (the
/// indices of add/sub/mul/div are found once).
pub fn arith_of(index: usize) -> Option<Arith> {
    static IDX: OnceLock<[Option<usize>; 4]> = OnceLock::new();
    arith_at(
        index,
        IDX.get_or_init(|| ARITH.map(|a| function_index(a.name()))),
    )
}

/// The operator of generated method `index` when it is add/sub/mul/div (`t.add(u)`).
pub fn method_arith_of(index: usize) -> Option<Arith> {
    static IDX: OnceLock<[Option<usize>; 4]> = OnceLock::new();
    arith_at(
        index,
        IDX.get_or_init(|| ARITH.map(|a| method_index(a.name()))),
    )
}

const ARITH: [Arith; 4] = [Arith::Add, Arith::Sub, Arith::Mul, Arith::Div];

/// The operator whose generated index (in `indices`, in `ARITH`'s order) is `index`.
fn arith_at(index: usize, indices: &[Option<usize>; 4]) -> Option<Arith> {
    ARITH
        .into_iter()
        .zip(indices)
        .find(|(_, i)| **i == Some(index))
        .map(|(a, _)| a)
}

/// What [`arith_call`] produced.
pub enum Called<'py> {
    /// A new tensor (the functional form), still to be wrapped.
    New(Tensor),
    /// The `out=` tensor's object, written.
    Out(Bound<'py, PyAny>),
}

/// `op(x, y)` / `op(x, y, out=o)` with `x` a tensor and `y` a tensor or a Python number;
/// None: not handled here (the generated bindings take it).
pub fn arith_call<'py>(
    py: Python<'py>,
    op: Arith,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Called<'py>>> {
    let Some(a) = exact_tensor(x) else {
        return Ok(None);
    };
    let Some(b) = operand(y)? else {
        return Ok(None);
    };
    let n = a.gil_numel().max(b.gil_numel());
    let (a, b) = (&a.t, b.get());
    match out.filter(|o| !o.is_none()) {
        None => Ok(Some(Called::New(run_maybe_released(py, n, || {
            op.functional(a, b)
        })?))),
        Some(o) => {
            let Some(t) = exact_tensor(o) else {
                return Ok(None);
            };
            let n = n.max(t.gil_numel());
            let t = &t.t;
            run_maybe_released(py, n, || op.out(t, a, b))?;
            Ok(Some(Called::Out(o.clone())))
        }
    }
}

/// `ratten.add(a, b)` / `ratten.add(a, b, out=c)` with tensors or numbers; None: not handled.
pub fn function_fast(
    py: Python<'_>,
    index: usize,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<PyObject>> {
    let Some(op) = arith_of(index) else {
        return Ok(None);
    };
    if args.len() != 2 {
        return Ok(None);
    }
    let x = args.get_borrowed_item(0)?;
    let y = args.get_borrowed_item(1)?;
    let out = match kwargs {
        None => None,
        Some(k) if k.is_empty() => None,
        Some(k) if k.len() == 1 => {
            let Some(o) = k.get_item(pyo3::intern!(py, "out"))? else {
                return Ok(None);
            };
            Some(o)
        }
        Some(_) => return Ok(None),
    };
    Ok(match arith_call(py, op, &x, &y, out.as_ref())? {
        None => None,
        Some(Called::New(t)) => Some(wrap(py, t)?.into_any()),
        Some(Called::Out(o)) => Some(o.unbind()),
    })
}
