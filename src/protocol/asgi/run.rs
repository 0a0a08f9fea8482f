//! `_AsgiRun`: the coroutine a hosted ASGI app's task runs when tasks do not start
//! eagerly (Python 3.11), or when the app's last run suspended (3.12+: its task
//! ends through the loop, and a done callback would cost a loop turn more). It steps the app's coroutine from Rust (`PyIter_Send`,
//! `src/ffi/iter_send.rs`) and tells the cycle how the app ended the moment it does,
//! in place of `veter.handler_task.run_handler` (a Python coroutine awaiting the
//! app's, then calling `_veter_done`): no frame of its own per step, no method
//! call at the end, no `StopIteration` for the app's return.
//!
//! To the task it is a coroutine like any (`send`, `throw`, `close`, `__await__`;
//! `collections.abc.Coroutine` recognises it), so what a task gives the app is
//! unchanged: the app runs inside the task (`current_task()`), in the task's copy
//! of the context, and is cancelled through it (`throw`). As with `run_handler`,
//! what the app raises is the cycle's to answer and log: an `Exception` ends the
//! task normally, anything else (`CancelledError`, `KeyboardInterrupt`) is raised
//! on to the task after the cycle is told.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::{PyException, PyGeneratorExit, PyStopIteration};
use pyo3::prelude::*;

use super::Cycle;
use crate::ffi::iter_send::{self, Step};

#[pyclass(module = "veter._core", name = "_AsgiRun", frozen)]
pub struct Run {
    /// The app's coroutine.
    coro: Py<PyAny>,
    cycle: Py<Cycle>,
    /// The app's coroutine ended (returned, raised or was closed): told once.
    ended: AtomicBool,
}

impl Run {
    /// A run of `coro`, when it is a native coroutine (None: anything else that
    /// the app returned is awaited by `run_handler` as before).
    pub(super) fn of(coro: &Bound<'_, PyAny>, cycle: &Py<Cycle>) -> Option<Run> {
        iter_send::is_coroutine(coro).then(|| Run {
            coro: coro.clone().unbind(),
            cycle: cycle.clone_ref(coro.py()),
            ended: AtomicBool::new(false),
        })
    }

    /// What one step of the app gave, to the task: `Ok(Some(_))` it suspended
    /// yielding that, `Ok(None)` the task ends normally, `Err` the task raises it.
    fn step(&self, py: Python<'_>, step: PyResult<Step<'_>>) -> PyResult<Option<Py<PyAny>>> {
        let failure = match step {
            Ok(Step::Yielded(value)) => return Ok(Some(value.unbind())),
            Ok(Step::Returned(_)) => None,
            Err(err) => Some(err),
        };
        // A `BaseException` that is not an `Exception` goes on to the task.
        let raised = failure
            .as_ref()
            .filter(|err| !err.is_instance_of::<PyException>(py))
            .map(|err| err.clone_ref(py));
        self.tell(py, failure)?;
        raised.map_or(Ok(None), Err)
    }

    fn tell(&self, py: Python<'_>, failure: Option<PyErr>) -> PyResult<()> {
        if self.ended.swap(true, Ordering::Relaxed) {
            return Ok(());
        }
        Cycle::told(self.cycle.bind(py), failure)
    }
}

/// A task's `send` and `throw` end the coroutine by raising `StopIteration`.
fn or_stop(value: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
    value.ok_or_else(|| PyStopIteration::new_err(()))
}

#[pymethods]
impl Run {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// A task's step (`PyIter_Send(run, None)`): the end is told without an
    /// exception object (None here).
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let none = py.None().into_bound(py);
        self.step(py, iter_send::send(self.coro.bind(py), &none))
    }

    fn send(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_stop(self.step(py, iter_send::send(self.coro.bind(py), value))?)
    }

    /// What a task does to cancel the app (`CancelledError`): into the app's coroutine.
    #[pyo3(signature = (typ, val = None, tb = None))]
    fn throw(
        &self,
        py: Python<'_>,
        typ: &Bound<'_, PyAny>,
        val: Option<&Bound<'_, PyAny>>,
        tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let coro = self.coro.bind(py);
        let thrown = match (val, tb) {
            (None, None) => coro.call_method1(pyo3::intern!(py, "throw"), (typ,)),
            _ => coro.call_method1(pyo3::intern!(py, "throw"), (typ, val, tb)),
        };
        let step = match thrown {
            Ok(value) => Ok(Step::Yielded(value)),
            Err(err) if err.is_instance_of::<PyStopIteration>(py) => {
                Ok(Step::Returned(py.None().into_bound(py)))
            }
            Err(err) => Err(err),
        };
        or_stop(self.step(py, step)?)
    }

    /// Closes the app's coroutine; one that had not ended is told to the cycle as
    /// ended by `GeneratorExit` (what `run_handler` told when it was closed).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.coro
            .bind(py)
            .call_method0(pyo3::intern!(py, "close"))?;
        self.tell(py, Some(PyGeneratorExit::new_err(())))
    }
}
