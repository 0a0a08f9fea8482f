//! One step of a coroutine driven from Rust: `PyIter_Send` (the C API), which tells
//! the coroutine's end by a status and its return value, not by raising and
//! catching a `StopIteration` as `coro.send(value)` called as a method does.

use pyo3::ffi;
use pyo3::prelude::*;

/// What one step of a coroutine gave.
pub enum Step<'py> {
    /// It suspended, yielding this (to the task driving it: a future, or None).
    Yielded(Bound<'py, PyAny>),
    /// It ended, returning this.
    Returned(Bound<'py, PyAny>),
}

/// Whether `obj` is a native coroutine (`async def`'s), exactly: what `send` steps
/// without asking for its `__await__`.
pub fn is_coroutine(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `obj` is a live reference (a `Bound` holds it, and the GIL) for the
    // call, which only reads its type.
    unsafe { ffi::PyCoro_CheckExact(obj.as_ptr()) != 0 }
}

/// Resumes `coro` (a coroutine or a generator, or an iterator when `value` is
/// None) with `value`: one step, or its exception.
pub fn send<'py>(coro: &Bound<'py, PyAny>, value: &Bound<'py, PyAny>) -> PyResult<Step<'py>> {
    let py = coro.py();
    let mut out: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: `coro` and `value` are live references (held by their `Bound`s, with
    // the GIL) for the call; `PyIter_Send` borrows them and only writes `out`.
    let status = unsafe { ffi::PyIter_Send(coro.as_ptr(), value.as_ptr(), &raw mut out) };
    let yielded = match status {
        ffi::PySendResult::PYGEN_ERROR => return Err(PyErr::fetch(py)),
        ffi::PySendResult::PYGEN_NEXT => true,
        ffi::PySendResult::PYGEN_RETURN => false,
    };
    // SAFETY: on PYGEN_NEXT and PYGEN_RETURN, `PyIter_Send` set `out` to a new
    // (strong) reference that nothing else owns: the `Bound` takes it over and
    // releases it once. (`from_owned_ptr` panics rather than accept a NULL.)
    let got = unsafe { Bound::from_owned_ptr(py, out) };
    Ok(if yielded {
        Step::Yielded(got)
    } else {
        Step::Returned(got)
    })
}
