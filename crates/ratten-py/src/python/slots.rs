//! Layer 7 (number slots): CPython number slots for `Tensor`'s `+ - * /` and their in-place
//! forms, written against the C API so that `a + b` on small tensors costs little more than
//! the Rust op.
//!
//! pyo3's generated slots are correct but heavy for a 1-element add: the trampoline (GIL-count
//! bookkeeping in a thread-local), the generic argument extraction (a lazily created type
//! object looked up per call, subtype checks), `__add__` returning `NotImplemented` before
//! `__radd__` is tried, and the result's `Py::new`. These slots handle the common cases
//! (both operands exactly `Tensor`, or a tensor and an exact Python `bool`/`int`/`float`/
//! `complex`, on a tensor small enough that the GIL stays held) directly and hand everything
//! else to pyo3's slots, saved at installation, so results and errors stay those of the
//! general path. `Tensor.__add__` and friends, looked up by name, remain pyo3's.
//!
//! They are installed together with `object.rs`'s `tp_dealloc` (the free list of `Tensor`
//! objects), and only when `object.rs` found pyo3's layout of the type to be the one these
//! slots read and write (which also means the interpreter has a GIL).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use ratten_core::Scalar;

use super::error::{raise, raise_panic};
use super::fast::{wrapped_number, Arith};
use super::object::{layout, ObjectLayout};
use super::python_args::releases_gil;

/// pyo3's number slot functions, saved when these replace them.
struct NumberSlots {
    add: ffi::binaryfunc,
    sub: ffi::binaryfunc,
    mul: ffi::binaryfunc,
    div: ffi::binaryfunc,
    iadd: ffi::binaryfunc,
    isub: ffi::binaryfunc,
    imul: ffi::binaryfunc,
    idiv: ffi::binaryfunc,
}

static NUMBER: OnceLock<NumberSlots> = OnceLock::new();

/// Reads pyo3's number slots of the type; None when one is missing.
fn probe(l: &ObjectLayout) -> Option<NumberSlots> {
    // SAFETY: the type object is alive (see `ObjectLayout`); callers hold the GIL.
    let t = unsafe { &*l.type_ptr() };
    if t.tp_as_number.is_null() {
        return None;
    }
    // SAFETY: checked non-null; a heap type's number methods live in the type object.
    let n = unsafe { &*t.tp_as_number };
    let (Some(add), Some(sub), Some(mul), Some(div)) =
        (n.nb_add, n.nb_subtract, n.nb_multiply, n.nb_true_divide)
    else {
        return None;
    };
    let (Some(iadd), Some(isub), Some(imul), Some(idiv)) = (
        n.nb_inplace_add,
        n.nb_inplace_subtract,
        n.nb_inplace_multiply,
        n.nb_inplace_true_divide,
    ) else {
        return None;
    };
    Some(NumberSlots {
        add,
        sub,
        mul,
        div,
        iadd,
        isub,
        imul,
        idiv,
    })
}

/// Puts these slots and the free-list deallocator (`enable`) or pyo3's back into the type.
/// Returns whether these are active afterwards: false when pyo3's layout is not the one they
/// were written for.
pub fn set_enabled(_py: Python<'_>, enable: bool) -> PyResult<bool> {
    let Some(l) = layout() else {
        return Ok(false);
    };
    let s = match NUMBER.get() {
        Some(s) => s,
        None => match probe(l) {
            Some(s) => NUMBER.get_or_init(|| s),
            None => return Ok(false),
        },
    };
    let on =
        |ours: ffi::binaryfunc, theirs: ffi::binaryfunc| Some(if enable { ours } else { theirs });
    // SAFETY: the GIL is held (`_py`), so no slot of the type is being read concurrently; the
    // number methods of a heap type are writable, and the functions stored keep the slots'
    // contract; `PyType_Modified` follows `set_dealloc`, as it asks.
    unsafe {
        l.set_dealloc(enable);
        let tp = l.type_ptr();
        let n = &mut *(*tp).tp_as_number;
        n.nb_add = on(nb_add, s.add);
        n.nb_subtract = on(nb_subtract, s.sub);
        n.nb_multiply = on(nb_multiply, s.mul);
        n.nb_true_divide = on(nb_true_divide, s.div);
        n.nb_inplace_add = on(nb_inplace_add, s.iadd);
        n.nb_inplace_subtract = on(nb_inplace_subtract, s.isub);
        n.nb_inplace_multiply = on(nb_inplace_multiply, s.imul);
        n.nb_inplace_true_divide = on(nb_inplace_true_divide, s.idiv);
        ffi::PyType_Modified(tp);
    }
    Ok(enable)
}

/// Installs the slots when the module is created (after `object::register` checked the
/// layout).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    set_enabled(m.py(), true)?;
    m.add_function(wrap_pyfunction!(_set_fast_number_slots, m)?)?;
    Ok(())
}

/// `ratten._C._set_fast_number_slots(flag)`: switch between these slots and pyo3's (for tests
/// and measurements); returns whether these are active.
#[pyfunction]
fn _set_fast_number_slots(py: Python<'_>, flag: bool) -> PyResult<bool> {
    set_enabled(py, flag)
}

/// A Python number of an exact builtin type as a Scalar; None for anything else (subclasses,
/// numpy scalars, ints beyond 64 bits), which the general path handles.
///
/// # Safety
/// `o` must be a valid object and the GIL held.
#[inline]
unsafe fn exact_number(o: *mut ffi::PyObject) -> Option<Scalar> {
    // SAFETY: per the function's contract.
    unsafe {
        let tp = ffi::Py_TYPE(o);
        if tp == ptr::addr_of_mut!(ffi::PyFloat_Type) {
            Some(Scalar::Double(ffi::PyFloat_AS_DOUBLE(o)))
        } else if tp == ptr::addr_of_mut!(ffi::PyLong_Type) {
            let mut overflow = 0;
            let v = ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow);
            // An exact int cannot fail otherwise; an overflow takes the general path, which
            // raises torch's error.
            (overflow == 0).then_some(Scalar::Int(v))
        } else if tp == ptr::addr_of_mut!(ffi::PyBool_Type) {
            Some(Scalar::Bool(o == ffi::Py_True()))
        } else if tp == ptr::addr_of_mut!(ffi::PyComplex_Type) {
            let c = (*o.cast::<ffi::PyComplexObject>()).cval;
            Some(Scalar::ComplexDouble(num_complex::Complex64::new(
                c.real, c.imag,
            )))
        } else {
            None
        }
    }
}

/// What the fast path made of the operands.
enum Outcome<T> {
    /// Not handled: pyo3's slot decides.
    Fallback,
    Done(ratten_core::Result<T>),
}

/// `v <op> w` where CPython found this slot on `v` or on `w`.
///
/// # Safety
/// A CPython binary number slot's contract: valid objects, GIL held.
#[inline(always)]
unsafe fn binary(
    v: *mut ffi::PyObject,
    w: *mut ffi::PyObject,
    op: Arith,
    orig: impl Fn(&NumberSlots) -> ffi::binaryfunc,
) -> *mut ffi::PyObject {
    let (Some(s), Some(saved)) = (layout(), NUMBER.get()) else {
        // Unreachable: the slots are installed only after both are set.
        // SAFETY: NotImplemented is immortal-ish; the slot returns a new reference.
        return unsafe { ffi::Py_NewRef(ffi::Py_NotImplemented()) };
    };
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per the slot contract; types are compared before any tensor is read.
        unsafe {
            let tp = s.type_ptr();
            let (vt, wt) = (ffi::Py_TYPE(v) == tp, ffi::Py_TYPE(w) == tp);
            if vt && wt {
                let (a, b) = (s.tensor_of(v), s.tensor_of(w));
                if releases_gil(a.gil_numel().max(b.gil_numel())) {
                    return Outcome::Fallback;
                }
                Outcome::Done(op.functional(&a.t, &b.t))
            } else if vt || wt {
                let (t, n) = if vt { (v, w) } else { (w, v) };
                let Some(x) = exact_number(n) else {
                    return Outcome::Fallback;
                };
                let a = s.tensor_of(t);
                if releases_gil(a.gil_numel()) {
                    return Outcome::Fallback;
                }
                let a = &a.t;
                let b = match wrapped_number(x) {
                    Ok(b) => b,
                    Err(e) => return Outcome::Done(Err(e)),
                };
                // `number <op> tensor`: torch's reflected operator (`Arith::reflected`).
                Outcome::Done(if vt {
                    op.functional(a, &b)
                } else {
                    op.reflected(a, &b)
                })
            } else {
                Outcome::Fallback
            }
        }
    }));
    match r {
        // SAFETY: the GIL is held (slot contract).
        Ok(Outcome::Done(Ok(t))) => unsafe { s.new_object(t) },
        Ok(Outcome::Done(Err(e))) => raise(e),
        // SAFETY: pyo3's slot, called under the same contract.
        Ok(Outcome::Fallback) => unsafe { orig(saved)(v, w) },
        Err(p) => raise_panic(p),
    }
}

/// `v <op>= w`; CPython calls this only with `v` an instance of the type.
///
/// # Safety
/// A CPython binary number slot's contract: valid objects, GIL held.
#[inline(always)]
unsafe fn inplace(
    v: *mut ffi::PyObject,
    w: *mut ffi::PyObject,
    op: Arith,
    orig: impl Fn(&NumberSlots) -> ffi::binaryfunc,
) -> *mut ffi::PyObject {
    let (Some(s), Some(saved)) = (layout(), NUMBER.get()) else {
        // SAFETY: as in `binary`.
        return unsafe { ffi::Py_NewRef(ffi::Py_NotImplemented()) };
    };
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per the slot contract; types are compared before any tensor is read.
        unsafe {
            let tp = s.type_ptr();
            if ffi::Py_TYPE(v) != tp {
                return Outcome::Fallback;
            }
            let a = s.tensor_of(v);
            if ffi::Py_TYPE(w) == tp {
                let b = s.tensor_of(w);
                if releases_gil(a.gil_numel().max(b.gil_numel())) {
                    return Outcome::Fallback;
                }
                return Outcome::Done(op.inplace(&a.t, &b.t));
            }
            let Some(x) = exact_number(w) else {
                return Outcome::Fallback;
            };
            if releases_gil(a.gil_numel()) {
                return Outcome::Fallback;
            }
            Outcome::Done(wrapped_number(x).and_then(|b| op.inplace(&a.t, &b)))
        }
    }));
    match r {
        // The result of `a op= b` is `a` itself (the object, not a new wrapper).
        Ok(Outcome::Done(Ok(()))) => {
            // SAFETY: `v` is a valid object; the slot returns a new reference.
            unsafe { ffi::Py_NewRef(v) }
        }
        Ok(Outcome::Done(Err(e))) => raise(e),
        // SAFETY: pyo3's slot, called under the same contract.
        Ok(Outcome::Fallback) => unsafe { orig(saved)(v, w) },
        Err(p) => raise_panic(p),
    }
}

macro_rules! slot {
    ($name:ident, $kind:ident, $op:expr, $orig:ident) => {
        unsafe extern "C" fn $name(
            v: *mut ffi::PyObject,
            w: *mut ffi::PyObject,
        ) -> *mut ffi::PyObject {
            // SAFETY: CPython calls number slots with valid objects and the GIL held.
            unsafe { $kind(v, w, $op, |s| s.$orig) }
        }
    };
}

slot!(nb_add, binary, Arith::Add, add);
slot!(nb_subtract, binary, Arith::Sub, sub);
slot!(nb_multiply, binary, Arith::Mul, mul);
slot!(nb_true_divide, binary, Arith::Div, div);
slot!(nb_inplace_add, inplace, Arith::Add, iadd);
slot!(nb_inplace_subtract, inplace, Arith::Sub, isub);
slot!(nb_inplace_multiply, inplace, Arith::Mul, imul);
slot!(nb_inplace_true_divide, inplace, Arith::Div, idiv);
