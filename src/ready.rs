//! `Ready`: an awaitable whose value is already known, so awaiting it costs no loop
//! iteration (`await request.body()` once the body is read, a waiting WebSocket
//! message, a buffered piece of a streamed body).

use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;

/// An awaitable whose result is already known: `await request.body()` costs no
/// loop iteration because the body was read before the handler started.
#[pyclass(module = "veter._core", name = "Ready", frozen)]
pub struct Ready {
    value: Py<PyAny>,
}

#[pymethods]
impl Ready {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if self.value.is_none(py) {
            // Ended without an exception object: the result is None (`await send(...)`
            // of a hosted app costs no StopIteration).
            return Ok(None);
        }
        Err(PyStopIteration::new_err((self.value.clone_ref(py),)))
    }

    /// The result, without awaiting: it is already known (`request.body().value`
    /// in a plain `def` handler).
    #[getter]
    fn value(&self, py: Python<'_>) -> Py<PyAny> {
        self.value.clone_ref(py)
    }

    fn send(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        // The result is already known; whatever is sent in is ignored. (A method, not
        // the slot: the end is always the exception here.)
        let _ = value;
        Err(PyStopIteration::new_err((self.value.clone_ref(py),)))
    }
}

/// The one `Ready` of None: it holds nothing else, so every `await send(...)` of a
/// hosted app can share it instead of making one.
static NONE: pyo3::sync::PyOnceLock<Py<Ready>> = pyo3::sync::PyOnceLock::new();

pub fn ready(py: Python<'_>, value: Py<PyAny>) -> PyResult<Py<Ready>> {
    if value.is_none(py) {
        let none = NONE.get_or_try_init(py, || Py::new(py, Ready { value }))?;
        return Ok(none.clone_ref(py));
    }
    Py::new(py, Ready { value })
}
