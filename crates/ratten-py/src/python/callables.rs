//! Layer 7 (callables): the Python objects of the generated bindings: module functions
//! (`_GeneratedFunction`, `ratten.add`), Tensor methods as method descriptors
//! (`_GeneratedMethod`, `Tensor.add`) and bound methods (`_BoundMethod`, `t.add`), with their
//! CPython vectorcall entries, so that calls skip building an argument tuple and dict and
//! add/sub/mul/div on plain tensors go straight to `fast.rs`. Every other call is parsed and
//! dispatched by `bindings.rs`.

use std::mem::size_of;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::bindings::{call_generated, method_self, method_signature_strings};
use super::error::{raise, raise_panic};
use super::fast::{arith_call, arith_of, function_fast, method_arith_of, Arith, Called};
use super::object::{layout, wrap, ObjectLayout};
use super::python_args::{releases_gil, split_kwargs};
use crate::generated::signatures;

// A generated module function (`ratten.add`).
// (A `//` comment: a class docstring would hide the per-object `__doc__` getter.)
#[pyclass(name = "_GeneratedFunction", module = "ratten", frozen)]
pub struct GeneratedFunction {
    pub(crate) index: usize,
    /// The operator when the function is add/sub/mul/div (they have a fast path), found once
    /// here rather than on every call.
    pub(crate) arith: Option<Arith>,
    /// CPython's per-object vectorcall entry: the type's `tp_vectorcall_offset` points here
    /// once `register` has installed it, so calls skip building an argument tuple and dict.
    vectorcall: Option<pyo3::ffi::vectorcallfunc>,
}

impl GeneratedFunction {
    pub(crate) fn new(index: usize) -> Self {
        let arith = arith_of(index);
        GeneratedFunction {
            index,
            arith,
            // add/sub/mul/div get an entry of their own, specialised for the operator.
            vectorcall: Some(function_vectorcall_for(arith)),
        }
    }

    /// Address of the vectorcall field (for `register` to find its offset in the object).
    pub(crate) fn vectorcall_field(&self) -> *const Option<pyo3::ffi::vectorcallfunc> {
        &self.vectorcall
    }
}

#[pymethods]
impl GeneratedFunction {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyObject> {
        // Hot path: `ratten.add(a, b, out=c)` with plain tensors (see fast.rs).
        if let Some(r) = function_fast(py, self.index, args, kwargs)? {
            return Ok(r);
        }
        let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
        call_generated(py, self.index, None, &args, &split_kwargs(kwargs)?)
    }
    #[getter]
    fn __name__(&self) -> &'static str {
        signatures::FUNCTIONS[self.index].name
    }
    /// torch's signature strings of this function.
    #[getter]
    fn signatures(&self) -> Vec<&'static str> {
        signatures::FUNCTIONS[self.index].signatures.to_vec()
    }
    /// The docstring: the signatures, a one-line summary and the declarations.
    #[getter]
    fn __doc__(&self, py: Python<'_>) -> PyResult<String> {
        docstring(py, &signatures::FUNCTIONS[self.index])
    }
    fn __repr__(&self) -> String {
        format!(
            "<built-in method {} of ratten>",
            signatures::FUNCTIONS[self.index].name
        )
    }
}

// A generated Tensor method, as a descriptor on the Tensor type (`Tensor.add`).
// (A `//` comment: a class docstring would hide the per-object `__doc__` getter.)
#[pyclass(name = "_GeneratedMethod", module = "ratten", frozen)]
pub struct GeneratedMethod {
    pub(crate) index: usize,
    /// As [`GeneratedFunction`]'s: `register` makes the type a vectorcall-able method descriptor
    /// (`Py_TPFLAGS_METHOD_DESCRIPTOR`), so `t.add(u)` calls `Tensor.add(t, u)` without
    /// binding a method object or building an argument tuple, as CPython's own methods.
    vectorcall: Option<pyo3::ffi::vectorcallfunc>,
}

impl GeneratedMethod {
    pub(crate) fn new(index: usize) -> Self {
        GeneratedMethod {
            index,
            vectorcall: Some(generated_method_vectorcall),
        }
    }

    /// Address of the vectorcall field (for `register` to find its offset in the object).
    pub(crate) fn vectorcall_field(&self) -> *const Option<pyo3::ffi::vectorcallfunc> {
        &self.vectorcall
    }
}

#[pymethods]
impl GeneratedMethod {
    /// The unbound call `Tensor.add(t, u, alpha=2)` (what a method descriptor's call means;
    /// `t.add(u)` arrives here, or at the vectorcall entry, with `t` first).
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyObject> {
        let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let this = method_self(self.index, args.first())?;
        call_generated(
            py,
            self.index,
            Some(this),
            &args[1..],
            &split_kwargs(kwargs)?,
        )
    }
    fn __get__(
        slf: &Bound<'_, Self>,
        obj: Option<&Bound<'_, PyAny>>,
        _owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        let py = slf.py();
        let Some(obj) = obj.filter(|o| !o.is_none()) else {
            return Ok(slf.clone().into_any().unbind());
        };
        Ok(Py::new(py, BoundMethod::new(slf.get().index, obj.clone().unbind()))?.into_any())
    }
    #[getter]
    fn signatures(&self) -> Vec<&'static str> {
        method_signature_strings(self.index).to_vec()
    }
    #[getter]
    fn __doc__(&self, py: Python<'_>) -> PyResult<String> {
        docstring(py, &signatures::METHODS[self.index])
    }
}

// A generated method bound to its tensor (`t.add`).
// (A `//` comment: a class docstring would hide the per-object `__doc__` getter.)
#[pyclass(name = "_BoundMethod", module = "ratten", frozen)]
pub struct BoundMethod {
    pub(crate) index: usize,
    this: PyObject,
    /// As [`GeneratedFunction`]'s (`register` installs `tp_vectorcall_offset`).
    vectorcall: Option<pyo3::ffi::vectorcallfunc>,
}

impl BoundMethod {
    pub(crate) fn new(index: usize, this: PyObject) -> Self {
        BoundMethod {
            index,
            this,
            vectorcall: Some(bound_method_vectorcall),
        }
    }

    pub(crate) fn this_ptr(&self) -> *mut pyo3::ffi::PyObject {
        self.this.as_ptr()
    }

    /// Address of the vectorcall field (for `register` to find its offset in the object).
    pub(crate) fn vectorcall_field(&self) -> *const Option<pyo3::ffi::vectorcallfunc> {
        &self.vectorcall
    }
}

#[pymethods]
impl BoundMethod {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyObject> {
        let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let this = self.this.bind(py);
        call_generated(py, self.index, Some(this), &args, &split_kwargs(kwargs)?)
    }
    fn __repr__(&self) -> String {
        format!(
            "<built-in method {} of Tensor object>",
            signatures::METHODS[self.index].name
        )
    }
    #[getter]
    fn __doc__(&self, py: Python<'_>) -> PyResult<String> {
        docstring(py, &signatures::METHODS[self.index])
    }
}

/// A generated binding's docstring: its Python signatures (as torch prints them), the one-line
/// summary from `ratten._docs.SUMMARIES`, and the native schemas it calls.
fn docstring(py: Python<'_>, b: &crate::arg_parser::Binding) -> PyResult<String> {
    static SUMMARIES: pyo3::sync::GILOnceCell<Py<PyDict>> = pyo3::sync::GILOnceCell::new();
    let summaries = SUMMARIES.get_or_try_init(py, || -> PyResult<Py<PyDict>> {
        Ok(py
            .import("ratten._docs")?
            .getattr("SUMMARIES")?
            .downcast_into::<PyDict>()?
            .unbind())
    })?;
    let summary: Option<String> = summaries
        .bind(py)
        .get_item(b.name)?
        .map(|s| s.extract())
        .transpose()?;
    let mut doc = b.signatures.join("\n");
    if let Some(s) = summary {
        doc.push_str("\n\n");
        doc.push_str(&s);
    }
    doc.push_str("\n\nDeclared as:\n");
    for schema in b.schemas {
        doc.push_str(&format!("    {schema}\n"));
    }
    Ok(doc)
}

/// The interned str `"out"` (kept alive by pyo3's `intern!` cell for the process), stored
/// when the vectorcall entries are installed: the keyword name of a call written
/// `f(.., out=c)`, compared by pointer. Null before (no call matches it then).
static OUT_NAME: AtomicPtr<ffi::PyObject> = AtomicPtr::new(ptr::null_mut());

/// Makes `_GeneratedFunction` objects vectorcall-able, and `_GeneratedMethod` objects
/// vectorcall-able method descriptors.
fn install_vectorcall(py: Python<'_>) -> PyResult<()> {
    OUT_NAME.store(pyo3::intern!(py, "out").as_ptr(), Ordering::Relaxed);
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
                    return match wrap(py, t) {
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
        if let Some(s) = layout() {
            if ffi::PyVectorcall_NARGS(nargsf) == 2 {
                let out = if kwnames.is_null() {
                    Some(ptr::null_mut())
                } else if ffi::PyTuple_GET_SIZE(kwnames) == 1
                    && ffi::PyTuple_GET_ITEM(kwnames, 0) == OUT_NAME.load(Ordering::Relaxed)
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
    s: &ObjectLayout,
    op: Arith,
    x: *mut ffi::PyObject,
    y: *mut ffi::PyObject,
    out: *mut ffi::PyObject,
) -> Option<*mut ffi::PyObject> {
    // SAFETY: per the function's contract; types are compared before any value is read.
    unsafe {
        let tp = s.type_ptr();
        if ffi::Py_TYPE(x) != tp || ffi::Py_TYPE(y) != tp {
            return None;
        }
        let (a, b) = (s.tensor_of(x), s.tensor_of(y));
        let n = a.gil_numel().max(b.gil_numel());
        if out.is_null() {
            if releases_gil(n) {
                return None;
            }
            return Some(
                match catch_unwind(AssertUnwindSafe(|| op.functional(&a.t, &b.t))) {
                    Ok(Ok(t)) => s.new_object(t),
                    Ok(Err(e)) => raise(e),
                    Err(p) => raise_panic(p),
                },
            );
        }
        if ffi::Py_TYPE(out) != tp {
            return None;
        }
        let o = s.tensor_of(out);
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
                        Some(Called::New(t)) => return Ok(wrap(py, t)?.into_ptr()),
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
/// `ratten._C._generated_functions(module="")`: name -> function of the declarations with
/// that `python_module` (`""`: the top-level namespace; `"nn"`: torch's `torch._C._nn`).
#[pyfunction]
#[pyo3(signature = (module = ""))]
fn _generated_functions<'py>(py: Python<'py>, module: &str) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (i, b) in signatures::FUNCTIONS.iter().enumerate() {
        if b.module == module {
            d.set_item(b.name, Py::new(py, GeneratedFunction::new(i))?)?;
        }
    }
    Ok(d)
}

/// `ratten._C._generated_methods()`: name -> method descriptor, for the Tensor class.
#[pyfunction]
fn _generated_methods(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (i, b) in signatures::METHODS.iter().enumerate() {
        d.set_item(b.name, Py::new(py, GeneratedMethod::new(i))?)?;
    }
    Ok(d)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GeneratedFunction>()?;
    m.add_class::<GeneratedMethod>()?;
    m.add_class::<BoundMethod>()?;
    m.add_function(wrap_pyfunction!(_generated_functions, m)?)?;
    m.add_function(wrap_pyfunction!(_generated_methods, m)?)?;
    install_vectorcall(m.py())
}
