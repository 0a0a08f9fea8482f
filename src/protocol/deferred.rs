//! A saturated worker defers its `def` handlers to tasks, so every read of a loop
//! iteration happens before any handler runs and late requests are shed when read
//! (see `overload.rs`).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::Connection;
use crate::http1::encode::Framing;
use crate::request::Request;

impl Connection {
    /// Runs a `def` handler later, as a task, so the rest of this loop iteration's
    /// reads come first (a saturated worker; see `overload.rs`).
    pub(super) fn defer_handler(
        &mut self,
        py: Python<'_>,
        run: &Py<PyAny>,
        handler: Py<PyAny>,
        request: Py<Request>,
        kwargs: Option<Bound<'_, PyDict>>,
        framing: Framing,
    ) -> PyResult<()> {
        let disp = self.disp.clone();
        let coro = run.bind(py).call1((
            self.dispatcher.clone_ref(py),
            handler,
            request.clone_ref(py),
            kwargs,
        ));
        let coro = match coro {
            Ok(coro) => coro,
            Err(err) => {
                self.emit_error(py, &request, err, framing);
                return Ok(());
            }
        };
        disp.overload.defer();
        let before = self.core.in_flight;
        let started = self.start_task(py, &coro, request, framing, false);
        if self.core.in_flight == before {
            // Not queued after all (it failed to start): nothing waits for it.
            disp.overload.deferred_started();
        }
        started
    }
}
