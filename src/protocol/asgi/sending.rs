//! What a hosted app sends becoming its answer: a whole answer in one message
//! (or a WSGI app's, given at once), or a stream whose pieces follow.

use pyo3::exceptions::{PyConnectionResetError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::{done, new_future, Answer, Cycle, Ending, Reply, State};
use crate::asgi::reply::{self, Head};
use crate::http1::encode::{self, BodyLength};
use crate::protocol::stream::Plan;
use std::sync::MutexGuard;

impl Cycle {
    pub(super) fn send_body(
        slf: &Bound<'_, Self>,
        message: &reply::Message<'_>,
        mut state: MutexGuard<'_, State>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let (body, more) = reply::body(message)?;
        match std::mem::replace(&mut state.reply, Reply::Done) {
            Reply::Idle => {
                state.reply = Reply::Idle;
                Err(PyRuntimeError::new_err(
                    "ASGI http.response.body sent before http.response.start",
                ))
            }
            Reply::Done => Err(PyRuntimeError::new_err(
                "ASGI send() after the response was complete",
            )),
            Reply::Started(head) if !more => {
                drop(state);
                this.answer_whole(py, &head, body.as_ref())
                    .inspect_err(|_| this.locked().reply = Reply::Idle)
            }
            Reply::Started(head) => {
                state.reply = Reply::Streaming;
                if let Some(piece) = body.filter(|b| !b.as_bytes().is_empty()) {
                    state.early.push(piece.unbind());
                }
                drop(state);
                Self::start_stream(slf, &head).inspect_err(|_| this.locked().reply = Reply::Idle)
            }
            Reply::Streaming => {
                let Some(writer) = state.writer.as_ref().map(|w| w.clone_ref(py)) else {
                    // Not at the front yet: kept for it, and the app waits.
                    state.reply = if more { Reply::Streaming } else { Reply::Done };
                    if let Some(piece) = body.filter(|b| !b.as_bytes().is_empty()) {
                        state.early.push(piece.unbind());
                    }
                    if !more {
                        state.early_end = Some(true);
                    }
                    drop(state);
                    return this.wait_in_send(py);
                };
                state.reply = if more { Reply::Streaming } else { Reply::Done };
                drop(state);
                let writer = writer.get();
                let mut behind = false;
                if let Some(piece) = &body {
                    match writer.write(py, piece) {
                        Ok(b) => behind = b,
                        Err(err) if err.is_instance_of::<PyConnectionResetError>(py) => {
                            this.client_gone(py);
                            return done(py);
                        }
                        Err(err) => return Err(err),
                    }
                }
                if !more {
                    writer.end(py, true)?;
                    this.end(py);
                    return done(py);
                }
                if behind {
                    let future = new_future(py)?;
                    writer.wait(py, future.bind(py))?;
                    return Ok(future);
                }
                done(py)
            }
        }
    }

    /// A whole answer given at once (a WSGI app's), checked as an ASGI app's
    /// `http.response.start` and last `http.response.body` would be.
    pub(super) fn answer_at_once(
        &self,
        py: Python<'_>,
        status: &Bound<'_, PyAny>,
        headers: &Bound<'_, PyAny>,
        body: &Bound<'_, PyBytes>,
    ) -> PyResult<()> {
        let mut state = self.locked();
        if state.ending == Ending::Gone {
            return Ok(()); // the client left: nowhere to send it
        }
        if !matches!(state.reply, Reply::Idle) {
            return Err(PyRuntimeError::new_err(
                "a whole answer came after the response had started",
            ));
        }
        let head = reply::head(status, Some(headers))?;
        state.reply = Reply::Done;
        drop(state);
        self.answer_whole(py, &head, Some(body))
            .inspect_err(|_| self.locked().reply = Reply::Idle)
            .map(drop)
    }

    /// The whole answer, in one message.
    fn answer_whole(
        &self,
        py: Python<'_>,
        head: &Head,
        body: Option<&Bound<'_, PyBytes>>,
    ) -> PyResult<Py<PyAny>> {
        let piece: &[u8] = body.map_or(b"", |b| b.as_bytes());
        let length = reply::length(head, Some(piece.len()), self.framing)?;
        let (mut bytes, framing) = self.encode_head(py, head, length, true);
        let with_body = !framing.head && length != BodyLength::Absent;
        if with_body {
            bytes.extend_from_slice(piece);
        }
        let sent = encode::Sent {
            status: head.status,
            body_bytes: if with_body { piece.len() } else { 0 },
        };
        self.deliver(
            py,
            Answer::Whole {
                bytes,
                sent,
                framing,
            },
        );
        self.end(py);
        done(py)
    }

    /// The first of several body messages: the answer becomes a stream, and the
    /// app waits until it reaches the front.
    fn start_stream(slf: &Bound<'_, Self>, head: &Head) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let length = reply::length(head, None, this.framing)?;
        let (bytes, framing) = this.encode_head(py, head, length, false);
        let with_body = !framing.head && length != BodyLength::Absent;
        let plan = Plan::hosted(
            slf.clone().into_any().unbind(),
            head.status,
            this.request.clone_ref(py),
            length,
            with_body,
        );
        let waiting = this.wait_in_send(py)?;
        this.deliver(
            py,
            Answer::Stream {
                head: bytes,
                plan: Box::new(plan),
                framing,
            },
        );
        Ok(waiting)
    }
}
