//! Layer 1 (objects): the `ratten.Tensor` object, made and unpacked cheaply (torch's
//! `THPVariable` struct, `THPVariable_Wrap` and `THPVariable_Unpack`). The Python API of the
//! type, its methods, is `tensor.rs` on top; this module imports only `error`.
//!
//! [`PyTensor`] is the value pyo3 lays out in every instance. [`wrap`] makes an instance and
//! [`exact_tensor`] / [`any_tensor`] read the tensor out of one; once [`register`] has checked
//! pyo3's layout of the type against a sample object, they do so directly: a pointer
//! comparison for the type (pyo3's `downcast` looks the type object up lazily, ~120
//! instructions) and, for new objects, a free list of up to [`FREE_MAX`] freed instances (as
//! CPython keeps for floats and tuples), so the result of a small op costs no allocator round
//! trip. The free list is filled by this module's `tp_dealloc`, which slots.rs installs with
//! the number slots; it also releases the instance's reference to its type, which pyo3 0.25's
//! deallocator does not. When the layout is not the expected one, or the interpreter runs
//! without a GIL (the free list relies on it), everything goes through pyo3 as usual.

use std::cell::Cell;
use std::mem::size_of;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, OnceLock};

use pyo3::ffi;
use pyo3::prelude::*;
use ratten_aten::Tensor;
use ratten_core::{Device, Scalar, TensorMeta};

use super::error::{panic_error, to_pyerr};

/// `torch.Tensor`: the value inside every `ratten.Tensor` object.
#[pyclass(name = "Tensor", module = "ratten", frozen, weakref)]
pub struct PyTensor {
    /// A metadata snapshot of `t`, kept by [`gil_numel`](Self::gil_numel). Declared before
    /// `t` so that it is dropped first: a tensor whose snapshot is still shared cannot be
    /// kept as a spare for the next small output.
    meta_hint: OnceLock<Arc<TensorMeta>>,
    pub t: Tensor,
}

/// The largest storage a kept snapshot may name: the snapshot keeps its storage alive after a
/// `set_`/`resize_` gives the tensor another one, until the Python object goes.
const META_HINT_MAX_BYTES: usize = 4096;

impl PyTensor {
    pub fn new(t: Tensor) -> PyTensor {
        PyTensor {
            meta_hint: OnceLock::new(),
            t,
        }
    }

    /// `t.numel()` for deciding whether a kernel releases the GIL. Reading the element count
    /// takes a metadata snapshot (a hazard slot published through a thread-local, ~38
    /// instructions); the first call keeps that snapshot (small storages only), and later
    /// calls read it while it is still the tensor's current one, a pointer comparison. After
    /// the tensor's metadata changed every call reads a fresh snapshot, as before.
    #[inline]
    pub fn gil_numel(&self) -> usize {
        match self.meta_hint.get() {
            Some(m) if self.t.is_current_meta(m) => m.numel().max(0) as usize,
            Some(_) => self.t.numel().max(0) as usize,
            None => self.keep_meta(),
        }
    }

    #[cold]
    fn keep_meta(&self) -> usize {
        let m = self.t.meta_arc();
        let n = m.numel().max(0) as usize;
        if m.storage().nbytes() <= META_HINT_MAX_BYTES {
            // Another thread (free-threaded Python) may have kept one first: either serves.
            let _ = self.meta_hint.set(m);
        }
        n
    }
}

/// Where pyo3 puts the `PyTensor` in a `Tensor` instance, and the type's allocation
/// functions (pyo3's).
pub(super) struct ObjectLayout {
    tp: *mut ffi::PyTypeObject,
    /// Byte offset of the `PyTensor` value from the start of the object.
    offset: usize,
    /// Byte offset of the weak-reference list pointer.
    weaklist: usize,
    alloc: ffi::allocfunc,
    free: ffi::freefunc,
    dealloc: ffi::destructor,
}

// SAFETY: the type pointer is a heap type kept alive by the `ratten._C` module for the life of
// the interpreter, only dereferenced with the GIL held (inside slots CPython calls, or in
// functions given `Python`).
unsafe impl Send for ObjectLayout {}
// SAFETY: as for Send; the fields are never mutated after initialisation.
unsafe impl Sync for ObjectLayout {}

static LAYOUT: OnceLock<ObjectLayout> = OnceLock::new();

/// The checked layout, once [`register`] found it to be the expected one.
#[inline]
pub(super) fn layout() -> Option<&'static ObjectLayout> {
    LAYOUT.get()
}

/// Checks the layout when the module is created.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    if LAYOUT.get().is_none() {
        if let Some(l) = probe(m.py())? {
            let _ = LAYOUT.set(l);
        }
    }
    Ok(())
}

/// Reads pyo3's layout of the type and checks it; None when it is not the expected one or the
/// interpreter has no GIL.
fn probe(py: Python<'_>) -> PyResult<Option<ObjectLayout>> {
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
    if !layout_ok {
        return Ok(None);
    }
    // The free list is shared by all threads and guarded by the GIL alone.
    let sys = py.import("sys")?;
    if sys.hasattr("_is_gil_enabled")? && !sys.call_method0("_is_gil_enabled")?.extract::<bool>()? {
        return Ok(None);
    }
    let (Some(alloc), Some(free), Some(dealloc)) = (t.tp_alloc, t.tp_free, t.tp_dealloc) else {
        return Ok(None);
    };
    Ok(Some(ObjectLayout {
        tp,
        offset,
        weaklist: after_value,
        alloc,
        free,
        dealloc,
    }))
}

impl ObjectLayout {
    /// The `Tensor` type object.
    #[inline]
    pub(super) fn type_ptr(&self) -> *mut ffi::PyTypeObject {
        self.tp
    }

    /// The value inside an instance of exactly `Tensor`.
    ///
    /// # Safety
    /// `o` must be an instance of the type, alive for `'a`.
    #[inline]
    pub(super) unsafe fn tensor_of<'a>(&self, o: *mut ffi::PyObject) -> &'a PyTensor {
        // SAFETY: `probe` found the value at `offset` in every instance of the type; it is
        // frozen, so shared references to it are all that exist.
        unsafe { &*o.cast::<u8>().add(self.offset).cast::<PyTensor>() }
    }

    /// Installs this module's `tp_dealloc` (`free_list`) or pyo3's.
    ///
    /// # Safety
    /// The GIL must be held, and the caller must call `PyType_Modified` on the type after.
    pub(super) unsafe fn set_dealloc(&self, free_list: bool) {
        // SAFETY: the caller's contract: no slot of the type is being read concurrently; a
        // heap type's slots are writable, and both functions keep `tp_dealloc`'s contract.
        unsafe { (*self.tp).tp_dealloc = Some(if free_list { tp_dealloc } else { self.dealloc }) };
    }

    /// A new `Tensor` object holding `t`, or null with MemoryError set.
    ///
    /// # Safety
    /// The GIL must be held.
    #[inline]
    pub(super) unsafe fn new_object(&self, t: Tensor) -> *mut ffi::PyObject {
        let free = &FREE.0;
        let n = free.len.get();
        // SAFETY: a listed object is a freed instance of `self.tp` with its value dropped:
        // `PyObject_Init` makes it a new object again (type reference, reference count 1), and
        // its weak list is emptied; `tp_alloc` returns a zeroed instance (with a reference to the
        // type) or null with an exception set. `probe` checked that those fields plus the value
        // at `offset` are what pyo3's initialiser writes.
        unsafe {
            let obj = if n > 0 {
                free.len.set(n - 1);
                let o = ffi::PyObject_Init(free.items[n - 1].get(), self.tp);
                *o.cast::<u8>()
                    .add(self.weaklist)
                    .cast::<*mut ffi::PyObject>() = ptr::null_mut();
                o
            } else {
                let o = (self.alloc)(self.tp, 0);
                if o.is_null() {
                    return o;
                }
                o
            };
            ptr::write(
                obj.cast::<u8>().add(self.offset).cast::<PyTensor>(),
                PyTensor::new(t),
            );
            obj
        }
    }
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

// SAFETY: the free list is used only with the GIL held (in `tp_dealloc`, in `new_object`,
// whose callers hold it), and `probe` refuses an interpreter without a GIL: accesses are
// serialised by the GIL. The same holds for every other `GilOnly` value (see
// `gil_serialises`).
unsafe impl<T> Sync for GilOnly<T> {}

static FREE: GilOnly<FreeList> = GilOnly(FreeList {
    len: Cell::new(0),
    items: [const { Cell::new(ptr::null_mut()) }; FREE_MAX],
});

/// The value of `o` when it is exactly a `Tensor` (a pointer comparison once the layout is
/// checked, instead of pyo3's lazily created type object and type check).
#[inline]
pub fn exact_tensor<'a>(o: &'a Bound<'_, PyAny>) -> Option<&'a PyTensor> {
    match LAYOUT.get() {
        // SAFETY: `o` is a live object (borrowed for 'a); its type is compared first.
        Some(l) => unsafe { (ffi::Py_TYPE(o.as_ptr()) == l.tp).then(|| l.tensor_of(o.as_ptr())) },
        None => o.downcast_exact::<PyTensor>().ok().map(|t| t.get()),
    }
}

/// Whether the layout is checked, which also means the interpreter has a GIL (`probe`
/// refuses otherwise), so that a [`GilOnly`] value may be used with the GIL held.
#[inline]
pub(crate) fn gil_serialises() -> bool {
    LAYOUT.get().is_some()
}

/// The tensor of a `Tensor` object or of an instance of a subclass: the exact type by pointer
/// comparison first (pyo3's `downcast` looks the type object up lazily, ~120 instructions).
#[inline]
pub fn any_tensor<'a>(o: &'a Bound<'_, PyAny>) -> Option<&'a Tensor> {
    exact_tensor(o)
        .map(|p| &p.t)
        .or_else(|| o.downcast::<PyTensor>().ok().map(|t| &t.get().t))
}

/// A new `Tensor` object holding `t` (`THPVariable_Wrap`): from the free list with the
/// checked layout (what pyo3's `Py::new` makes, without its lazy type-object lookup, ~120
/// instructions), else `Py::new`.
pub fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyTensor>> {
    match LAYOUT.get() {
        // SAFETY: the GIL is held (`py`); the object made is an exact `Tensor`, owned here.
        Some(l) => unsafe {
            let o = l.new_object(t);
            if o.is_null() {
                Err(PyErr::fetch(py))
            } else {
                Ok(Py::from_owned_ptr(py, o))
            }
        },
        None => Py::new(py, PyTensor::new(t)),
    }
}

/// `tp_dealloc` of `Tensor`: what pyo3's does (weak references cleared, value dropped, memory
/// freed), keeping the memory in the free list while there is room, and releasing the type
/// reference every instance holds.
unsafe extern "C" fn tp_dealloc(o: *mut ffi::PyObject) {
    let Some(s) = LAYOUT.get() else {
        // Unreachable: installed only after LAYOUT is set. Leaking beats guessing the layout.
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
