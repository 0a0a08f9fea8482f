//! `BodyStream`: a request body read as it arrives (`async for piece in
//! request.stream()`), or a whole body already read, served the same way.
//!
//! The connection pushes pieces in (`push`, which says when it should stop reading)
//! and ends the stream (`finish`); the reader takes them with `__anext__`. Below
//! `LOW` bytes waiting, a paused connection is asked to read again: through its
//! Python method `_resume_upload`, so this module needs nothing of the connection.

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
            }),
        }
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
                drop(state);
                let _ = waiter.call_method1(py, "set_result", (PyBytes::new(py, &bytes),));
                return false;
            }
        }
        state.buffered += bytes.len();
        state.chunks.push_back(bytes);
        state.buffered > HIGH
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

    pub fn is_open(&self) -> bool {
        matches!(self.locked().end, End::Open)
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
}
