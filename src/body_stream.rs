//! `BodyStream`: a request body read as it arrives (`async for piece in
//! request.stream()`), or a whole body already read, served the same way.
//!
//! The connection pushes pieces in (`push`, which says when it should stop reading)
//! and ends the stream (`finish`); the reader takes them with `__anext__`. Below
//! `LOW` bytes waiting, a paused connection is asked to read again: through its
//! Python method `_resume_upload`, so this module needs nothing of the connection.
//!
//! For a hosted ASGI app the same stream is read as messages (`receive`): each
//! piece is an `http.request` dict with `more_body`, the end is one with
//! `more_body` false, a client that left gives `http.disconnect`.

use std::collections::VecDeque;
use std::sync::Mutex;

use pyo3::exceptions::{PyConnectionResetError, PyStopAsyncIteration};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::pyrefs;

/// Bytes waiting unread above which the connection stops reading.
pub const HIGH: usize = 1 << 20;
/// ... and below which it reads again.
pub const LOW: usize = 256 * 1024;

enum End {
    Open,
    Done,
    /// An HTTP error (status, reason) raised in the handler as `HTTPException`.
    Failed(u16, String),
    Gone,
}

struct State {
    chunks: VecDeque<Vec<u8>>,
    buffered: usize,
    end: End,
    waiter: Option<Py<PyAny>>,
    /// The connection, to read again after a pause (cleared at the end).
    conn: Option<Py<PyAny>>,
    /// Read as ASGI messages (`receive`), not as pieces (`__anext__`).
    messages: bool,
    /// The last message (`more_body` false, or a disconnect) has been handed out.
    told_end: bool,
}

#[pyclass(module = "veter._core", name = "BodyStream", frozen)]
pub struct BodyStream {
    state: Mutex<State>,
}

impl BodyStream {
    fn locked(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn new(conn: Option<Py<PyAny>>) -> Self {
        BodyStream {
            state: Mutex::new(State {
                chunks: VecDeque::new(),
                buffered: 0,
                end: End::Open,
                waiter: None,
                conn,
                messages: false,
                told_end: false,
            }),
        }
    }

    /// A stream read by an ASGI app's `receive`, as messages.
    pub fn for_asgi(conn: Option<Py<PyAny>>) -> Self {
        let stream = BodyStream::new(conn);
        stream.locked().messages = true;
        stream
    }

    /// A stream holding a whole body already read (a route without `stream_body`).
    pub fn complete(body: Vec<u8>) -> Self {
        let stream = BodyStream::new(None);
        {
            let mut state = stream.locked();
            if !body.is_empty() {
                state.buffered = body.len();
                state.chunks.push_back(body);
            }
            state.end = End::Done;
        }
        stream
    }

    /// Hands `bytes` to the reader; returns whether the connection should pause.
    pub fn push(&self, py: Python<'_>, bytes: Vec<u8>) -> bool {
        if bytes.is_empty() {
            return false;
        }
        let mut state = self.locked();
        if let Some(waiter) = state.waiter.take() {
            if !is_done(py, &waiter) {
                let messages = state.messages;
                drop(state);
                let piece = PyBytes::new(py, &bytes).into_any();
                let value = if messages {
                    request_message(py, piece, true).map(Bound::into_any)
                } else {
                    Ok(piece)
                };
                if let Ok(value) = value {
                    let _ = waiter.call_method1(py, "set_result", (value,));
                }
                return false;
            }
        }
        state.buffered += bytes.len();
        state.chunks.push_back(bytes);
        state.buffered > HIGH
    }

    /// The body's last bytes and its end (`None`) or failure. An ASGI reader
    /// waiting for the next message gets the last piece with `more_body` false,
    /// not the piece and then an empty last message a loop trip later.
    pub fn push_last(&self, py: Python<'_>, bytes: Vec<u8>, failure: Option<(u16, String)>) {
        if failure.is_none() && !bytes.is_empty() {
            let mut state = self.locked();
            let waiting = state.messages
                && matches!(state.end, End::Open)
                && state.waiter.as_ref().is_some_and(|w| !is_done(py, w));
            if waiting {
                let waiter = state.waiter.take();
                state.end = End::Done;
                state.conn = None;
                state.told_end = true;
                drop(state);
                let message = request_message(py, PyBytes::new(py, &bytes).into_any(), false);
                if let (Some(waiter), Ok(message)) = (waiter, message) {
                    let _ = waiter.call_method1(py, "set_result", (message,));
                }
                return;
            }
        }
        self.push(py, bytes);
        self.finish(py, failure);
    }

    /// The body ended (`None`) or failed.
    pub fn finish(&self, py: Python<'_>, failure: Option<(u16, String)>) {
        let mut state = self.locked();
        if !matches!(state.end, End::Open) {
            return;
        }
        state.end = match failure {
            None => End::Done,
            Some((0, _)) => End::Gone,
            Some((status, reason)) => End::Failed(status, reason),
        };
        state.conn = None;
        let waiter = state.waiter.take();
        if state.messages {
            if let Some(waiter) = waiter.filter(|w| !is_done(py, w)) {
                state.told_end = true;
                let last = last_message(py, &state.end);
                drop(state);
                match last {
                    Ok(message) => {
                        let _ = waiter.call_method1(py, "set_result", (message,));
                    }
                    Err(err) => {
                        let _ = waiter.call_method1(py, "set_exception", (err.value(py),));
                    }
                }
            }
            return;
        }
        let error = end_error(py, &state.end);
        drop(state);
        if let Some(waiter) = waiter {
            if !is_done(py, &waiter) {
                if let Some(err) = error {
                    let _ = waiter.call_method1(py, "set_exception", (err.value(py),));
                }
            }
        }
    }

    /// The `HTTPException` the body failed with (over the limit, badly chunked,
    /// too slow), or None.
    pub fn failure(&self, py: Python<'_>) -> Option<PyErr> {
        let state = self.locked();
        matches!(state.end, End::Failed(..))
            .then(|| end_error(py, &state.end))
            .flatten()
    }

    /// Whether the body was received to its end (not still arriving, failed, or
    /// cut short by the client).
    pub fn is_whole(&self) -> bool {
        matches!(self.locked().end, End::Done)
    }
}

fn is_done(py: Python<'_>, future: &Py<PyAny>) -> bool {
    future
        .call_method0(py, "done")
        .and_then(|d| d.is_truthy(py))
        .unwrap_or(true)
}

/// What a finished stream raises in its reader (None: nothing, it ended well...
/// except that a waiting reader must stop: `StopAsyncIteration`).
fn end_error(py: Python<'_>, end: &End) -> Option<PyErr> {
    match end {
        End::Open => None,
        End::Done => Some(PyStopAsyncIteration::new_err(())),
        End::Gone => Some(PyConnectionResetError::new_err(
            "the client went away before sending the whole body",
        )),
        End::Failed(status, reason) => Some(
            pyrefs::get(py)
                .and_then(|refs| {
                    refs.http_exception
                        .bind(py)
                        .call1((*status, reason.as_str()))
                })
                .map_or_else(|e| e, PyErr::from_value),
        ),
    }
}

#[pymethods]
impl BodyStream {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The next piece (an awaitable), or `StopAsyncIteration` at the end.
    fn __anext__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let mut state = this.locked();
        if let Some(chunk) = state.chunks.pop_front() {
            state.buffered -= chunk.len();
            let resume = state.buffered < LOW && state.conn.is_some();
            let conn = if resume {
                state.conn.as_ref().map(|c| c.clone_ref(py))
            } else {
                None
            };
            drop(state);
            if let Some(conn) = conn {
                // Not now: this may run inside the connection's own call (an eagerly
                // started handler); the loop calls it back right after.
                let resume = conn.bind(py).getattr("_resume_upload")?;
                py.import("asyncio")?
                    .call_method0("get_running_loop")?
                    .call_method1("call_soon", (resume,))?;
            }
            let ready = crate::ready::ready(py, PyBytes::new(py, &chunk).into_any().unbind())?;
            return Ok(ready.into_any());
        }
        if let Some(err) = end_error(py, &state.end) {
            return Err(err);
        }
        if state.waiter.is_some() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the request body is already being read by another task",
            ));
        }
        let future = py
            .import("asyncio")?
            .call_method0("get_running_loop")?
            .call_method0("create_future")?;
        state.waiter = Some(future.clone().unbind());
        Ok(future.unbind())
    }
}

impl BodyStream {
    pub fn wants_more(&self) -> bool {
        self.locked().buffered < LOW
    }

    /// The last message has been handed out: `receive` now waits for the end.
    pub fn told_end(&self) -> bool {
        self.locked().told_end
    }

    /// The next ASGI message (an awaitable): `http.request` with the next piece,
    /// the last one with `more_body` false, or `http.disconnect`.
    pub fn receive(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let mut state = slf.get().locked();
        if let Some(chunk) = state.chunks.pop_front() {
            state.buffered -= chunk.len();
            let more = !(state.chunks.is_empty() && matches!(state.end, End::Done));
            if !more {
                state.told_end = true;
            }
            let conn = (state.buffered < LOW)
                .then(|| state.conn.as_ref().map(|c| c.clone_ref(py)))
                .flatten();
            drop(state);
            if let Some(conn) = conn {
                // Not now: this may run inside the connection's own call.
                let resume = conn.bind(py).getattr("_resume_upload")?;
                py.import("asyncio")?
                    .call_method0("get_running_loop")?
                    .call_method1("call_soon", (resume,))?;
            }
            let message = request_message(py, PyBytes::new(py, &chunk).into_any(), more)?;
            return Ok(crate::ready::ready(py, message.into_any().unbind())?.into_any());
        }
        if !matches!(state.end, End::Open) {
            state.told_end = true;
            let message = last_message(py, &state.end)?;
            return Ok(crate::ready::ready(py, message.unbind())?.into_any());
        }
        if state.waiter.is_some() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "ASGI receive() called while another receive() is waiting",
            ));
        }
        let future = py
            .import("asyncio")?
            .call_method0("get_running_loop")?
            .call_method0("create_future")?;
        state.waiter = Some(future.clone().unbind());
        Ok(future.unbind())
    }
}

/// `{"type": "http.request", "body": piece, "more_body": more}`.
pub fn request_message<'py>(
    py: Python<'py>,
    piece: Bound<'py, PyAny>,
    more: bool,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let message = pyo3::types::PyDict::new(py);
    message.set_item(pyo3::intern!(py, "type"), pyo3::intern!(py, "http.request"))?;
    message.set_item(pyo3::intern!(py, "body"), piece)?;
    message.set_item(pyo3::intern!(py, "more_body"), more)?;
    Ok(message)
}

/// `{"type": "http.disconnect"}`.
pub fn disconnect_message(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let message = pyo3::types::PyDict::new(py);
    message.set_item(
        pyo3::intern!(py, "type"),
        pyo3::intern!(py, "http.disconnect"),
    )?;
    Ok(message)
}

/// What `receive` gives at the end of the body: its last (empty) message, or a
/// disconnect when the client left or the body failed.
fn last_message<'py>(py: Python<'py>, end: &End) -> PyResult<Bound<'py, PyAny>> {
    match end {
        End::Open | End::Done => {
            Ok(request_message(py, PyBytes::new(py, b"").into_any(), false)?.into_any())
        }
        // A failed body (over the size limit, badly chunked, too slow) is answered
        // by the server (`Connection::asgi_body_failed`): the app sees the client go.
        End::Gone | End::Failed(..) => Ok(disconnect_message(py)?.into_any()),
    }
}
