//! CPython number slots for `Tensor`'s `+ - * /` and their in-place forms, written against the
//! C API so that `a + b` on small tensors costs little more than the Rust op.
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
//! `tp_dealloc` is replaced too: it keeps up to [`FREE_MAX`] freed `Tensor` objects for reuse
//! (as CPython does for floats and tuples), so the result of a small op costs no allocator
//! round trip, and it releases the instance's reference to its type, which pyo3 0.25's
//! deallocator does not.
//!
//! Installation checks pyo3's object layout against a sample object and leaves pyo3's slots in
//! place when it differs from the one these slots read and write, or when the interpreter runs
//! without a GIL (the free list relies on it).

use std::any::Any;
use std::cell::Cell;
use std::mem::size_of;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use ratten_aten::Tensor;
use ratten_core::{Device, Scalar};

use super::fast::{arith_call, method_arith_of, wrapped_number, Arith, Called};
use super::python_args::{
    call_generated, method_self, releases_gil, BoundMethod, GeneratedFunction, GeneratedMethod,
};
use super::tensor::PyTensor;
use super::to_pyerr;

/// pyo3's slot functions, the type, and where the `PyTensor` lies in an instance.
struct Slots {
    tp: *mut ffi::PyTypeObject,
    /// Byte offset of the `PyTensor` value from the start of the object.
    offset: usize,
    /// Byte offset of the weak-reference list pointer.
    weaklist: usize,
    /// The interned str `"out"` (kept alive by pyo3's `intern!` cell for the process): the
    /// keyword name of a call written `f(.., out=c)`, compared by pointer.
    out_name: *mut ffi::PyObject,
    alloc: ffi::allocfunc,
    free: ffi::freefunc,
    dealloc: ffi::destructor,
    add: ffi::binaryfunc,
    sub: ffi::binaryfunc,
    mul: ffi::binaryfunc,
    div: ffi::binaryfunc,
    iadd: ffi::binaryfunc,
    isub: ffi::binaryfunc,
    imul: ffi::binaryfunc,
    idiv: ffi::binaryfunc,
}

// SAFETY: the type pointer is a heap type kept alive by the `ratten._C` module for the life of
// the interpreter, `out_name` an interned str kept by a static; both are only dereferenced
// with the GIL held (inside slots CPython calls).
unsafe impl Send for Slots {}
// SAFETY: as for Send; the fields are never mutated after initialisation.
unsafe impl Sync for Slots {}

static SLOTS: OnceLock<Slots> = OnceLock::new();

/// Reads pyo3's slots and checks the layout; None when the layout is not the expected one.
fn probe(py: Python<'_>) -> PyResult<Option<Slots>> {
    let ty = py.get_type::<PyTensor>();
    let tp = ty.as_type_ptr();
    let sample = Py::new(
        py,
        PyTensor::new(
            Tensor::wrapped_scalar_tensor(Scalar::Int(0), Device::CPU).map_err(to_pyerr)?,
        ),
    )?;
    let obj = sample.as_ptr() as usize;
    let value = sample.get() as *const PyTensor as usize;
    let Some(offset) = value.checked_sub(obj) else {
        return Ok(None);
    };
    // SAFETY: `tp` is the live type object of `PyTensor`; we hold the GIL.
    let t = unsafe { &*tp };
    // The layout pyo3 gives a frozen, `Send`, non-subclassable class with a weakref slot and no
    // `__dict__`: the value, then zero-sized checkers, then the weak-list pointer, nothing
    // else. A freshly allocated (zeroed) object with the value written at `offset` is then
    // exactly what pyo3's own initialiser produces.
    let word = size_of::<usize>();
    let after_value = (offset + size_of::<PyTensor>()).next_multiple_of(word);
    let layout_ok = t.tp_basicsize >= 0
        && t.tp_basicsize as usize == after_value + word
        && t.tp_weaklistoffset >= 0
        && t.tp_weaklistoffset as usize == after_value
        && t.tp_itemsize == 0
        && t.tp_flags & ffi::Py_TPFLAGS_BASETYPE == 0
        && t.tp_flags & ffi::Py_TPFLAGS_HAVE_GC == 0
        && t.tp_dictoffset == 0;
    if !layout_ok || t.tp_as_number.is_null() {
        return Ok(None);
    }
    // SAFETY: checked non-null; a heap type's number methods live in the type object.
    let n = unsafe { &*t.tp_as_number };
    // The free list is shared by all threads and guarded by the GIL alone.
    let sys = py.import("sys")?;
    if sys.hasattr("_is_gil_enabled")? && !sys.call_method0("_is_gil_enabled")?.extract::<bool>()? {
        return Ok(None);
    }
    let (Some(alloc), Some(free), Some(dealloc)) = (t.tp_alloc, t.tp_free, t.tp_dealloc) else {
        return Ok(None);
    };
    let (Some(add), Some(sub), Some(mul), Some(div)) =
        (n.nb_add, n.nb_subtract, n.nb_multiply, n.nb_true_divide)
    else {
        return Ok(None);
    };
    let (Some(iadd), Some(isub), Some(imul), Some(idiv)) = (
        n.nb_inplace_add,
        n.nb_inplace_subtract,
        n.nb_inplace_multiply,
        n.nb_inplace_true_divide,
    ) else {
        return Ok(None);
    };
    Ok(Some(Slots {
        tp,
        offset,
        weaklist: after_value,
        out_name: pyo3::intern!(py, "out").as_ptr(),
        alloc,
        free,
        dealloc,
        add,
        sub,
        mul,
        div,
        iadd,
        isub,
        imul,
        idiv,
    }))
}

/// Puts these slots (`enable`) or pyo3's back into the type. Returns whether these are active
/// afterwards: false when pyo3's layout is not the one they were written for.
pub fn set_enabled(py: Python<'_>, enable: bool) -> PyResult<bool> {
    let s = match SLOTS.get() {
        Some(s) => s,
        None => match probe(py)? {
            Some(s) => SLOTS.get_or_init(|| s),
            None => return Ok(false),
        },
    };
    let on =
        |ours: ffi::binaryfunc, theirs: ffi::binaryfunc| Some(if enable { ours } else { theirs });
    // SAFETY: the GIL is held, so no slot of the type is being read concurrently; the number
    // methods of a heap type are writable, and the functions stored keep the slots' contract.
    unsafe {
        (*s.tp).tp_dealloc = Some(if enable { tp_dealloc } else { s.dealloc });
        let n = &mut *(*s.tp).tp_as_number;
        n.nb_add = on(nb_add, s.add);
        n.nb_subtract = on(nb_subtract, s.sub);
        n.nb_multiply = on(nb_multiply, s.mul);
        n.nb_true_divide = on(nb_true_divide, s.div);
        n.nb_inplace_add = on(nb_inplace_add, s.iadd);
        n.nb_inplace_subtract = on(nb_inplace_subtract, s.isub);
        n.nb_inplace_multiply = on(nb_inplace_multiply, s.imul);
        n.nb_inplace_true_divide = on(nb_inplace_true_divide, s.idiv);
        ffi::PyType_Modified(s.tp);
    }
    Ok(enable)
}

/// Installs the slots when the module is created.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    set_enabled(m.py(), true)?;
    install_vectorcall(m.py())?;
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

/// The value inside an instance of exactly `Tensor`.
///
/// # Safety
/// `o` must be an instance of `s.tp`, alive for `'a`.
#[inline]
unsafe fn tensor_of<'a>(s: &Slots, o: *mut ffi::PyObject) -> &'a PyTensor {
    // SAFETY: `probe` found the value at `offset` in every instance of the type; it is frozen,
    // so shared references to it are all that exist.
    unsafe { &*o.cast::<u8>().add(s.offset).cast::<PyTensor>() }
}

/// How many freed `Tensor` objects are kept for reuse.
const FREE_MAX: usize = 64;

/// Freed `Tensor` objects (their memory, type still set, value dropped), newest last.
struct FreeList {
    len: Cell<usize>,
    items: [Cell<*mut ffi::PyObject>; FREE_MAX],
}

/// A value only touched with the GIL held.
pub(crate) struct GilOnly<T>(pub(crate) T);

// SAFETY: the free list is used only inside CPython slots (`tp_dealloc` and the number slots),
// which run with the GIL held, and `probe` refuses to install them on an interpreter without
// a GIL: accesses are serialised by the GIL.
unsafe impl<T> Sync for GilOnly<T> {}

static FREE: GilOnly<FreeList> = GilOnly(FreeList {
    len: Cell::new(0),
    items: [const { Cell::new(ptr::null_mut()) }; FREE_MAX],
});

/// The value of `o` when it is exactly a `Tensor` (a pointer comparison once the slots are
/// set up, instead of pyo3's lazily created type object and type check).
#[inline]
pub fn exact_tensor<'a>(o: &'a Bound<'_, PyAny>) -> Option<&'a PyTensor> {
    match SLOTS.get() {
        // SAFETY: `o` is a live object (borrowed for 'a); its type is compared first.
        Some(s) => unsafe { (ffi::Py_TYPE(o.as_ptr()) == s.tp).then(|| tensor_of(s, o.as_ptr())) },
        None => o.downcast_exact::<PyTensor>().ok().map(|t| t.get()),
    }
}

/// Whether these slots are installed, which also means the interpreter has a GIL (`probe`
/// refuses otherwise), so that a [`GilOnly`] value may be used with the GIL held.
#[inline]
pub(crate) fn gil_serialises() -> bool {
    SLOTS.get().is_some()
}

/// The tensor of a `Tensor` object or of an instance of a subclass: the exact type by pointer
/// comparison first (pyo3's `downcast` looks the type object up lazily, ~120 instructions).
#[inline]
pub fn any_tensor<'a>(o: &'a Bound<'_, PyAny>) -> Option<&'a Tensor> {
    exact_tensor(o)
        .map(|p| &p.t)
        .or_else(|| o.downcast::<PyTensor>().ok().map(|t| &t.get().t))
}

/// A new `Tensor` object holding `t`: from the free list with the probed layout (what pyo3's
/// `Py::new` makes, without its lazy type-object lookup, ~120 instructions), else `Py::new`.
pub(crate) fn new_tensor(py: Python<'_>, t: Tensor) -> PyResult<Py<PyTensor>> {
    match SLOTS.get() {
        // SAFETY: the GIL is held (`py`); the object made is an exact `Tensor`, owned here.
        Some(s) => unsafe {
            let o = new_object(s, t);
            if o.is_null() {
                Err(PyErr::fetch(py))
            } else {
                Ok(Py::from_owned_ptr(py, o))
            }
        },
        None => Py::new(py, PyTensor::new(t)),
    }
}

/// A new `Tensor` object holding `t`, or null with MemoryError set.
///
/// # Safety
/// The GIL must be held.
#[inline]
unsafe fn new_object(s: &Slots, t: Tensor) -> *mut ffi::PyObject {
    let free = &FREE.0;
    let n = free.len.get();
    // SAFETY: a listed object is a freed instance of `s.tp` with its value dropped:
    // `PyObject_Init` makes it a new object again (type reference, reference count 1), and
    // its weak list is emptied; `tp_alloc` returns a zeroed instance (with a reference to the
    // type) or null with an exception set. `probe` checked that those fields plus the value
    // at `offset` are what pyo3's initialiser writes.
    unsafe {
        let obj = if n > 0 {
            free.len.set(n - 1);
            let o = ffi::PyObject_Init(free.items[n - 1].get(), s.tp);
            *o.cast::<u8>().add(s.weaklist).cast::<*mut ffi::PyObject>() = ptr::null_mut();
            o
        } else {
            let o = (s.alloc)(s.tp, 0);
            if o.is_null() {
                return o;
            }
            o
        };
        ptr::write(
            obj.cast::<u8>().add(s.offset).cast::<PyTensor>(),
            PyTensor::new(t),
        );
        obj
    }
}

/// `tp_dealloc` of `Tensor`: what pyo3's does (weak references cleared, value dropped, memory
/// freed), keeping the memory in the free list while there is room, and releasing the type
/// reference every instance holds.
unsafe extern "C" fn tp_dealloc(o: *mut ffi::PyObject) {
    let Some(s) = SLOTS.get() else {
        // Unreachable: installed only after SLOTS is set. Leaking beats guessing the layout.
        return;
    };
    // SAFETY: CPython calls tp_dealloc once, with the GIL held, on an instance of the type
    // whose reference count reached zero; `probe` found the weak list and value offsets.
    unsafe {
        if !(*o.cast::<u8>().add(s.weaklist).cast::<*mut ffi::PyObject>()).is_null() {
            ffi::PyObject_ClearWeakRefs(o);
        }
        let value = o.cast::<u8>().add(s.offset).cast::<PyTensor>();
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| ptr::drop_in_place(value))) {
            Python::with_gil(|py| panic_error(p).write_unraisable(py, None));
        }
        let tp = ffi::Py_TYPE(o);
        let free = &FREE.0;
        let n = free.len.get();
        if n < FREE_MAX {
            free.items[n].set(o);
            free.len.set(n + 1);
        } else {
            (s.free)(o.cast());
        }
        ffi::Py_DECREF(tp.cast());
    }
}

/// Raises `e` (a ratten error as torch's exception class) and returns null.
#[cold]
fn raise(e: ratten_core::Error) -> *mut ffi::PyObject {
    Python::with_gil(|py| to_pyerr(e).restore(py));
    ptr::null_mut()
}

/// A panic's payload as pyo3's PanicException (as pyo3's trampoline makes it).
#[cold]
fn panic_error(payload: Box<dyn Any + Send>) -> PyErr {
    let msg = if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        "panic from Rust code".to_string()
    };
    PanicException::new_err(msg)
}

/// Raises a panic's payload as PanicException and returns null.
#[cold]
fn raise_panic(payload: Box<dyn Any + Send>) -> *mut ffi::PyObject {
    Python::with_gil(|py| panic_error(payload).restore(py));
    ptr::null_mut()
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
    orig: impl Fn(&Slots) -> ffi::binaryfunc,
) -> *mut ffi::PyObject {
    let Some(s) = SLOTS.get() else {
        // Unreachable: the slots are installed only after SLOTS is set.
        // SAFETY: NotImplemented is immortal-ish; the slot returns a new reference.
        return unsafe { ffi::Py_NewRef(ffi::Py_NotImplemented()) };
    };
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per the slot contract; types are compared before any tensor is read.
        unsafe {
            let (vt, wt) = (ffi::Py_TYPE(v) == s.tp, ffi::Py_TYPE(w) == s.tp);
            if vt && wt {
                let (a, b) = (tensor_of(s, v), tensor_of(s, w));
                if releases_gil(a.gil_numel().max(b.gil_numel())) {
                    return Outcome::Fallback;
                }
                Outcome::Done(op.functional(&a.t, &b.t))
            } else if vt || wt {
                let (t, n) = if vt { (v, w) } else { (w, v) };
                let Some(x) = exact_number(n) else {
                    return Outcome::Fallback;
                };
                let a = tensor_of(s, t);
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
        Ok(Outcome::Done(Ok(t))) => unsafe { new_object(s, t) },
        Ok(Outcome::Done(Err(e))) => raise(e),
        // SAFETY: pyo3's slot, called under the same contract.
        Ok(Outcome::Fallback) => unsafe { orig(s)(v, w) },
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
    orig: impl Fn(&Slots) -> ffi::binaryfunc,
) -> *mut ffi::PyObject {
    let Some(s) = SLOTS.get() else {
        // SAFETY: as in `binary`.
        return unsafe { ffi::Py_NewRef(ffi::Py_NotImplemented()) };
    };
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per the slot contract; types are compared before any tensor is read.
        unsafe {
            if ffi::Py_TYPE(v) != s.tp {
                return Outcome::Fallback;
            }
            let a = tensor_of(s, v);
            if ffi::Py_TYPE(w) == s.tp {
                let b = tensor_of(s, w);
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
        Ok(Outcome::Fallback) => unsafe { orig(s)(v, w) },
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

/// Makes `_GeneratedFunction` objects vectorcall-able, and `_GeneratedMethod` objects
/// vectorcall-able method descriptors.
fn install_vectorcall(py: Python<'_>) -> PyResult<()> {
    let f = Py::new(py, GeneratedFunction::new(0))?;
    install_vectorcall_on(
        py.get_type::<GeneratedFunction>().as_type_ptr(),
        f.as_ptr(),
        f.get().vectorcall_field() as usize,
        0,
    );
    let m = Py::new(py, GeneratedMethod::new(0))?;
    install_vectorcall_on(
        py.get_type::<GeneratedMethod>().as_type_ptr(),
        m.as_ptr(),
        m.get().vectorcall_field() as usize,
        ffi::Py_TPFLAGS_METHOD_DESCRIPTOR,
    );
    let b = Py::new(py, BoundMethod::new(0, py.None()))?;
    install_vectorcall_on(
        py.get_type::<BoundMethod>().as_type_ptr(),
        b.as_ptr(),
        b.get().vectorcall_field() as usize,
        0,
    );
    Ok(())
}

/// Points type `tp`'s `tp_vectorcall_offset` at the field at address `field` of its instance
/// `sample`, and adds `extra_flags`; nothing when the type already has a vectorcall offset, has
/// no `tp_call` to fall back on, or the field is not inside the object (calls then keep going
/// through pyo3's `tp_call`, and attribute access binds methods as before).
fn install_vectorcall_on(
    tp: *mut ffi::PyTypeObject,
    sample: *mut ffi::PyObject,
    field: usize,
    extra_flags: std::ffi::c_ulong,
) -> bool {
    let Some(offset) = field.checked_sub(sample as usize) else {
        return false;
    };
    // SAFETY: `tp` is a live type object; the GIL is held, so no call reads it meanwhile.
    unsafe {
        let t = &mut *tp;
        let fits = t.tp_basicsize >= 0
            && offset + size_of::<Option<ffi::vectorcallfunc>>() <= t.tp_basicsize as usize;
        if !fits || t.tp_vectorcall_offset != 0 || t.tp_call.is_none() {
            return false;
        }
        t.tp_vectorcall_offset = offset as ffi::Py_ssize_t;
        t.tp_flags |= ffi::Py_TPFLAGS_HAVE_VECTORCALL | extra_flags;
        ffi::PyType_Modified(tp);
    }
    true
}

/// Whether `name` (an entry of a call's keyword names) is `out`.
///
/// # Safety
/// `name` must be a valid str object and the GIL held.
unsafe fn is_out(py: Python<'_>, name: *mut ffi::PyObject) -> bool {
    // Keyword names in code objects are interned: the pointer comparison nearly always
    // decides.
    let out = pyo3::intern!(py, "out");
    // SAFETY: per the function's contract.
    name == out.as_ptr()
        || unsafe { ffi::PyUnicode_CompareWithASCIIString(name, c"out".as_ptr()) == 0 }
}

/// The vectorcall entry of `_GeneratedFunction`: `ratten.add(a, b)` and
/// `ratten.add(a, b, out=c)` (and sub/mul/div) go to the fast path of fast.rs without an
/// argument tuple or keyword dict; every other call is passed to the type's `tp_call` (pyo3's
/// `__call__`) with the tuple and dict built here.
///
/// # Safety
/// CPython's vectorcall contract: `callable` a `_GeneratedFunction`, `args` holding the
/// positional then keyword values, `kwnames` null or a tuple of str, the GIL held.
pub(crate) unsafe extern "C" fn generated_function_vectorcall(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: per the vectorcall contract (CPython holds the GIL while it calls; nothing owned
    // by pyo3's reference pool is dropped on the fast path: results leave as raw pointers).
    unsafe {
        let nargs = ffi::PyVectorcall_NARGS(nargsf) as usize;
        let nkw = if kwnames.is_null() {
            0
        } else {
            ffi::PyTuple_GET_SIZE(kwnames) as usize
        };
        let py = Python::assume_gil_acquired();
        let fast =
            nargs == 2 && (nkw == 0 || (nkw == 1 && is_out(py, ffi::PyTuple_GET_ITEM(kwnames, 0))));
        let f = Borrowed::from_ptr(py, callable);
        let op = f.downcast_unchecked::<GeneratedFunction>().get().arith;
        if let (true, Some(op)) = (fast, op) {
            // All-Tensor calls were tried by `arith_vectorcall` already (which falls back here
            // for numbers, subclasses and a keyword name that is not the interned "out").
            let r = catch_unwind(AssertUnwindSafe(|| {
                let x = Borrowed::from_ptr(py, *args);
                let y = Borrowed::from_ptr(py, *args.add(1));
                let out = (nkw == 1).then(|| Borrowed::from_ptr(py, *args.add(2)));
                arith_call(py, op, &x, &y, out.as_deref())
            }));
            match r {
                Ok(Ok(Some(Called::New(t)))) => {
                    return match new_tensor(py, t) {
                        Ok(o) => o.into_ptr(),
                        Err(e) => {
                            e.restore(py);
                            ptr::null_mut()
                        }
                    };
                }
                Ok(Ok(Some(Called::Out(o)))) => return o.into_ptr(),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    Python::with_gil(|py| e.restore(py));
                    return ptr::null_mut();
                }
                Err(p) => return raise_panic(p),
            }
        }
        call_with_tuple(callable, args, nargs, kwnames, nkw)
    }
}

/// The vectorcall entry of the generated function of `op`: one specialised per operator for
/// add/sub/mul/div (the operator a constant, no field read), the general one otherwise.
pub(crate) fn function_vectorcall_for(op: Option<Arith>) -> ffi::vectorcallfunc {
    match op {
        Some(Arith::Add) => arith_vectorcall::<0>,
        Some(Arith::Sub) => arith_vectorcall::<1>,
        Some(Arith::Mul) => arith_vectorcall::<2>,
        Some(Arith::Div) => arith_vectorcall::<3>,
        None => generated_function_vectorcall,
    }
}

/// The operator of [`arith_vectorcall`]'s const parameter (enums cannot be const parameters).
const fn arith_from(code: u8) -> Arith {
    match code {
        0 => Arith::Add,
        1 => Arith::Sub,
        2 => Arith::Mul,
        _ => Arith::Div,
    }
}

/// The vectorcall entry of `ratten.add` (and sub/mul/div, `OP` as in [`arith_from`]), in the
/// manner of a METH_FASTCALL|METH_KEYWORDS function: `op(a, b)` and `op(a, b, out=c)` with
/// exactly `Tensor`s read the keyword names directly (the interned `"out"`, compared by
/// pointer) and run [`tensors_call`]; every other call goes to
/// [`generated_function_vectorcall`] unchanged (numbers, other keywords, subclasses, errors).
///
/// # Safety
/// As [`generated_function_vectorcall`].
unsafe extern "C" fn arith_vectorcall<const OP: u8>(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: per the vectorcall contract; `args` holds 2 positional values, then one value
    // per keyword name.
    unsafe {
        if let Some(s) = SLOTS.get() {
            if ffi::PyVectorcall_NARGS(nargsf) == 2 {
                let out = if kwnames.is_null() {
                    Some(ptr::null_mut())
                } else if ffi::PyTuple_GET_SIZE(kwnames) == 1
                    && ffi::PyTuple_GET_ITEM(kwnames, 0) == s.out_name
                {
                    Some(*args.add(2))
                } else {
                    None
                };
                if let Some(out) = out {
                    if let Some(r) = tensors_call(s, arith_from(OP), *args, *args.add(1), out) {
                        return r;
                    }
                }
            }
        }
        generated_function_vectorcall(callable, args, nargsf, kwnames)
    }
}

/// `op(x, y)` (`out` null) or `op(x, y, out=out)` when all are exactly `Tensor`s small enough
/// for the GIL to stay held: the shape of `ratten.add(a, b, out=c)` that is timed, handled on
/// the objects as they are (no `Bound` wrappers, no operand enum, no `PyResult` plumbing).
/// None: not this case, [`arith_call`] decides.
///
/// # Safety
/// Valid objects (`out` may be null) and the GIL held.
#[inline(always)]
unsafe fn tensors_call(
    s: &Slots,
    op: Arith,
    x: *mut ffi::PyObject,
    y: *mut ffi::PyObject,
    out: *mut ffi::PyObject,
) -> Option<*mut ffi::PyObject> {
    // SAFETY: per the function's contract; types are compared before any value is read.
    unsafe {
        let tp = s.tp;
        if ffi::Py_TYPE(x) != tp || ffi::Py_TYPE(y) != tp {
            return None;
        }
        let (a, b) = (tensor_of(s, x), tensor_of(s, y));
        let n = a.gil_numel().max(b.gil_numel());
        if out.is_null() {
            if releases_gil(n) {
                return None;
            }
            return Some(
                match catch_unwind(AssertUnwindSafe(|| op.functional(&a.t, &b.t))) {
                    Ok(Ok(t)) => new_object(s, t),
                    Ok(Err(e)) => raise(e),
                    Err(p) => raise_panic(p),
                },
            );
        }
        if ffi::Py_TYPE(out) != tp {
            return None;
        }
        let o = tensor_of(s, out);
        if releases_gil(n.max(o.gil_numel())) {
            return None;
        }
        Some(
            match catch_unwind(AssertUnwindSafe(|| op.out(&o.t, &a.t, &b.t))) {
                // `out=` returns the out tensor's object itself.
                Ok(Ok(())) => ffi::Py_NewRef(out),
                Ok(Err(e)) => raise(e),
                Err(p) => raise_panic(p),
            },
        )
    }
}

/// The vectorcall entry of `_GeneratedMethod`, a method descriptor: `t.add(u)` arrives as
/// `Tensor.add(t, u)`. add/sub/mul/div with one operand and no keywords take the fast path of
/// fast.rs; every other call goes to the generated method's argument parser with the
/// arguments as they are (no tuple, no dict, no bound method object).
///
/// # Safety
/// CPython's vectorcall contract: `callable` a `_GeneratedMethod`, `args` holding the
/// positional then keyword values, `kwnames` null or a tuple of str, the GIL held.
pub(crate) unsafe extern "C" fn generated_method_vectorcall(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: per the vectorcall contract.
    unsafe {
        let py = Python::assume_gil_acquired();
        let m = Borrowed::from_ptr(py, callable);
        let index = m.downcast_unchecked::<GeneratedMethod>().get().index;
        let nargs = ffi::PyVectorcall_NARGS(nargsf) as usize;
        if nargs == 0 {
            method_self(index, None).unwrap_err().restore(py);
            return ptr::null_mut();
        }
        method_vectorcall(py, index, *args, args.add(1), nargs - 1, kwnames)
    }
}

/// The vectorcall entry of `_BoundMethod` (`m = t.add; m(u)`, and `t.add(u)` itself while the
/// Tensor type's custom attribute lookup keeps CPython from calling the descriptor directly).
///
/// # Safety
/// As [`generated_method_vectorcall`], with `callable` a `_BoundMethod`.
pub(crate) unsafe extern "C" fn bound_method_vectorcall(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: per the vectorcall contract.
    unsafe {
        let py = Python::assume_gil_acquired();
        let m = Borrowed::from_ptr(py, callable);
        let m = m.downcast_unchecked::<BoundMethod>().get();
        let nargs = ffi::PyVectorcall_NARGS(nargsf) as usize;
        method_vectorcall(py, m.index, m.this_ptr(), args, nargs, kwnames)
    }
}

/// `this.<method index>(*args[..nargs], **{kwnames: args[nargs..]})`: add/sub/mul/div with one
/// operand and no keywords take the fast path of fast.rs; every other call goes to the
/// generated method's argument parser with the arguments as they are (no tuple, no dict).
///
/// # Safety
/// `this` and the `nargs` + len(kwnames) objects at `args` are valid, `kwnames` is null or a
/// tuple of str, and the GIL is held.
unsafe fn method_vectorcall(
    py: Python<'_>,
    index: usize,
    this: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: per the function's contract.
    unsafe {
        let nkw = if kwnames.is_null() {
            0
        } else {
            ffi::PyTuple_GET_SIZE(kwnames) as usize
        };
        let r = catch_unwind(AssertUnwindSafe(|| -> PyResult<*mut ffi::PyObject> {
            let this = Borrowed::from_ptr(py, this).to_owned();
            if nargs == 1 && nkw == 0 {
                if let Some(op) = method_arith_of(index) {
                    let y = Borrowed::from_ptr(py, *args);
                    match arith_call(py, op, &this, &y, None)? {
                        Some(Called::New(t)) => return Ok(new_tensor(py, t)?.into_ptr()),
                        Some(Called::Out(o)) => return Ok(o.into_ptr()),
                        None => {}
                    }
                }
            }
            let this = method_self(index, Some(&this))?;
            let all: Vec<Bound<'_, PyAny>> = (0..nargs + nkw)
                .map(|i| Borrowed::from_ptr(py, *args.add(i)).to_owned())
                .collect();
            let (positional, keyword_values) = all.split_at(nargs);
            let kwargs = keyword_values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let k = ffi::PyTuple_GET_ITEM(kwnames, i as ffi::Py_ssize_t);
                    Ok((Borrowed::from_ptr(py, k).extract::<String>()?, v.clone()))
                })
                .collect::<PyResult<Vec<_>>>()?;
            Ok(call_generated(py, index, Some(this), positional, &kwargs)?.into_ptr())
        }));
        match r {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => {
                e.restore(py);
                ptr::null_mut()
            }
            Err(p) => raise_panic(p),
        }
    }
}

/// `callable(*args, **kwargs)` through the type's `tp_call`, from vectorcall arguments.
///
/// # Safety
/// As [`generated_function_vectorcall`].
#[cold]
unsafe fn call_with_tuple(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: usize,
    kwnames: *mut ffi::PyObject,
    nkw: usize,
) -> *mut ffi::PyObject {
    // SAFETY: per the vectorcall contract; every object created here is released on all paths.
    unsafe {
        let Some(call) = (*ffi::Py_TYPE(callable)).tp_call else {
            // Unreachable: install_vectorcall requires tp_call.
            return ptr::null_mut();
        };
        let tuple = ffi::PyTuple_New(nargs as ffi::Py_ssize_t);
        if tuple.is_null() {
            return tuple;
        }
        for i in 0..nargs {
            let a = *args.add(i);
            ffi::PyTuple_SET_ITEM(tuple, i as ffi::Py_ssize_t, ffi::Py_NewRef(a));
        }
        let mut kwargs = ptr::null_mut();
        if nkw > 0 {
            kwargs = ffi::PyDict_New();
            if kwargs.is_null() {
                ffi::Py_DECREF(tuple);
                return kwargs;
            }
            for i in 0..nkw {
                let k = ffi::PyTuple_GET_ITEM(kwnames, i as ffi::Py_ssize_t);
                if ffi::PyDict_SetItem(kwargs, k, *args.add(nargs + i)) < 0 {
                    ffi::Py_DECREF(tuple);
                    ffi::Py_DECREF(kwargs);
                    return ptr::null_mut();
                }
            }
        }
        let r = call(callable, tuple, kwargs);
        ffi::Py_DECREF(tuple);
        if !kwargs.is_null() {
            ffi::Py_DECREF(kwargs);
        }
        r
    }
}
