//! The end of a hosted app's run (`_veter_done` from its task, or `AsgiDone`) or WSGI job: what it left unanswered or
//! unfinished, and its failure in the log.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use super::{Cycle, Ending, Reply};
use crate::protocol::Connection;

impl Cycle {
    /// The app's run ended (its task, or a WSGI app's job in its thread), with
    /// `failure` when it raised; the worker's count of running requests drops and
    /// the connection forgets the cycle.
    pub(super) fn finish(
        cycle: &Py<Cycle>,
        py: Python<'_>,
        failure: Option<PyErr>,
    ) -> PyResult<()> {
        let this = cycle.get();
        this.disp.overload.finished(py);
        let ended = this.ended(py, failure);
        if let Ok(mut conn) = this.conn.bind(py).try_borrow_mut() {
            conn.cycles.retain(|c| !c.is(cycle));
        }
        ended
    }

    /// An answer the app never made is a 500, a stream it did not finish is cut.
    fn ended(&self, py: Python<'_>, failure: Option<PyErr>) -> PyResult<()> {
        let (reply, writer, seq, gone) = {
            let mut state = self.locked();
            let reply = std::mem::replace(&mut state.reply, Reply::Done);
            if matches!(reply, Reply::Streaming) {
                state.early_end = Some(false);
            }
            (
                reply,
                state.writer.as_ref().map(|w| w.clone_ref(py)),
                state.seq,
                state.ending == Ending::Gone,
            )
        };
        match reply {
            Reply::Done => {
                if let Some(err) = failure {
                    // After the answer: only the log can tell.
                    self.log_failure(py, err);
                }
            }
            Reply::Idle | Reply::Started(_) => {
                let err = failure.unwrap_or_else(|| {
                    PyRuntimeError::new_err("the ASGI app returned without sending a response")
                });
                let request = &self.request;
                let framing = self.framing;
                Connection::with_borrow(self.conn.bind(py), |this, py| {
                    this.asgi_failed(py, seq, request, err, framing);
                    Ok(())
                })?;
            }
            Reply::Streaming => {
                match failure {
                    Some(err) => self.log_failure(py, err),
                    // Stopping a stream for a client that left is what apps should do.
                    None if gone => {}
                    None => self.log_failure(
                        py,
                        PyRuntimeError::new_err(
                            "the ASGI app returned before its response was complete",
                        ),
                    ),
                }
                if let Some(writer) = writer {
                    writer.get().end(py, false)?;
                }
            }
        }
        self.end(py);
        Ok(())
    }

    pub(super) fn log_failure(&self, py: Python<'_>, err: PyErr) {
        // The app's error handler logs it with the request id; its answer is dropped.
        let handled = self
            .disp
            .error_handler
            .bind(py)
            .call1((self.request.clone_ref(py), err.value(py)));
        if let Err(inner) = handled {
            inner.print(py);
        }
    }
}
