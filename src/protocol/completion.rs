//! Finishing a handler that suspended: its task's done-callback (or, for a task not
//! started eagerly, `veter.handler_task.run_handler` from inside the task) writes
//! the answer into the connection's queue, in request order, and frees its handler
//! slot.

use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use super::respond::{encode_error, encode_result, Encoded};
use super::{stream, Connection};
use crate::http1::encode::Framing;
use crate::request::Request;

/// Called by asyncio when a suspended handler's task finishes, or by `run_handler`.
#[pyclass(module = "veter._core", name = "_Completion", frozen)]
pub struct Completion {
    pub(super) conn: Py<Connection>,
    pub(super) seq: u64,
    pub(super) framing: Framing,
    pub(super) request: Py<Request>,
    /// The task `run_handler` runs in (set once it is made): what the slot's running
    /// handler is compared with. Unset for a done-callback, which is given its task.
    pub(super) task: OnceLock<Py<PyAny>>,
}

#[pymethods]
impl Completion {
    fn __call__(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<()> {
        self.complete(py, task, task.call_method0("result"))
    }

    /// `run_handler`: the handler returned `result`, or raised `exc`.
    fn _veter_done(
        &self,
        py: Python<'_>,
        result: Bound<'_, PyAny>,
        exc: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let Some(task) = self.task.get() else {
            return Ok(()); // not made by `start_task`: nothing waits for it
        };
        let outcome = match exc {
            Some(exc) => Err(PyErr::from_value(exc)),
            None => Ok(result),
        };
        self.complete(py, task.bind(py), outcome)
    }
}

impl Completion {
    fn complete<'py>(
        &self,
        py: Python<'py>,
        task: &Bound<'py, PyAny>,
        outcome: PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<()> {
        let mut outcome = Some(outcome);
        let conn = self.conn.bind(py);
        let disp = conn.borrow().disp.clone();
        disp.overload.finished(py);
        let mut unsent = None;
        Connection::with_borrow_later(conn, |this, py| {
            this.core.handler_done();
            this.set_clock(std::time::Instant::now());
            if this.core.closed {
                // The client left first: a streamed answer is told it will never start.
                unsent = outcome
                    .take()
                    .and_then(Result::ok)
                    .filter(stream::is_stream)
                    .map(Bound::unbind);
                return Ok(());
            }
            let Some(slot) = this.core.slot_mut(self.seq) else {
                return Ok(());
            };
            let owns = slot
                .pending
                .as_ref()
                .is_some_and(|run| run.task.bind(py).is(task));
            if slot.bytes.is_some() || !owns {
                // Already answered at its deadline (a 504, or the app's middleware
                // answering it); the cancelled task ends here.
                return this.drain_buffered(py).map(drop);
            }
            slot.pending = None;
            let disp = this.disp.clone();
            let mut framing = self.framing;
            if disp.last_answers.load(std::sync::atomic::Ordering::Relaxed) {
                // Draining: this response is the connection's last.
                framing.keep_alive = false;
            }
            this.note_framing(framing);
            let mut bytes = Vec::new();
            let req = self.request.get();
            let result = outcome
                .take()
                .unwrap_or_else(|| Err(PyRuntimeError::new_err("the handler's end came twice")));
            let framing = match &result {
                Ok(r) if framing.upgrade && stream::is_upgrade(r) => framing,
                _ => this.close_if_upload_unfinished(&req.parts, framing),
            };
            let common = this.common().with_request_id(req.exchange.id_bytes());
            let encoded =
                result.and_then(|result| encode_result(py, common, &result, framing, &mut bytes));
            let mut plan = None;
            match encoded {
                Ok(Encoded::Whole(sent)) => {
                    this.record_response(py, &req.parts, &req.exchange, sent);
                }
                Ok(Encoded::Stream(mut p)) => {
                    p.request = Some(self.request.clone_ref(py));
                    plan = Some(p);
                }
                Err(err) => {
                    let sent =
                        encode_error(py, &disp, common, &self.request, err, framing, &mut bytes);
                    this.record_response(py, &req.parts, &req.exchange, sent);
                }
            }
            if let Some(plan) = &plan {
                this.note_stream(plan, Some(self.seq));
            }
            if let Some(slot) = this.core.slot_mut(self.seq) {
                slot.bytes = Some(bytes);
                slot.stream = plan;
            }
            this.drain_buffered(py).map(drop)
        })?;
        if let Some(obj) = unsent {
            obj.call_method0(py, "_veter_abandon")?;
        }
        // A handler slot freed: let connections waiting for one go on, in order.
        while let Some(waiting) = disp.overload.next_waiting() {
            Connection::with_borrow(waiting.bind(py), |this, py| {
                let resumed = this.drain_buffered(py).map(drop);
                this.core.waiting_since = None;
                resumed
            })?;
        }
        Ok(())
    }
}
