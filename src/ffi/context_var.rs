//! A context variable set and reset from Rust (`PyContextVar_Set`,
//! `PyContextVar_Reset`, the C API): what `var.set(value)` and `var.reset(token)`
//! do, without a bound method's call and its argument tuple (~470 instructions a
//! request that becomes a task, Python 3.11).

use pyo3::ffi;
use pyo3::prelude::*;

/// `var.set(value)`: its token. `var` that is not a `ContextVar` is a `TypeError`.
pub fn set<'py>(var: &Bound<'py, PyAny>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = var.py();
    // SAFETY: `var` and `value` are live references (held by their `Bound`s, with
    // the GIL) for the call; `PyContextVar_Set` checks that `var` is a context
    // variable (TypeError otherwise), borrows both and returns a new reference to
    // the token, or NULL with an exception set.
    let token = unsafe { ffi::PyContextVar_Set(var.as_ptr(), value.as_ptr()) };
    // SAFETY: `token` is the new (strong) reference just returned, owned by nothing
    // else, or NULL (an error, fetched).
    unsafe { Bound::from_owned_ptr_or_err(py, token) }
}

/// `var.reset(token)`: `var` back to what it was before the `set` that gave `token`.
pub fn reset(var: &Bound<'_, PyAny>, token: &Bound<'_, PyAny>) -> PyResult<()> {
    // SAFETY: `var` and `token` are live references (held by their `Bound`s, with
    // the GIL) for the call; `PyContextVar_Reset` checks both types (TypeError),
    // that the token is this variable's and unused (ValueError, RuntimeError),
    // borrows both and returns -1 with an exception set on failure.
    let status = unsafe { ffi::PyContextVar_Reset(var.as_ptr(), token.as_ptr()) };
    if status < 0 {
        return Err(PyErr::fetch(var.py()));
    }
    Ok(())
}
