//! Streamed responses: a handler returns an object whose class derives from `Streamed`
//! (`veter.StreamingResponse`); its head is encoded here and queued like any
//! response. When it reaches the front of the connection's queue, the
//! connection writes the head and starts the object's pump (a Python task) with a
//! `StreamWriter`; responses behind it wait until the pump calls `end`.
//!
//! Backpressure: `write` reports whether the transport is above its high
//! watermark; the pump then parks on a future (`wait`) that `resume_writing`
//! completes, so a slow client pauses the generator instead of growing memory.
//! When the client goes away, `connection_lost` cancels the pump, which closes
//! the generator.

use pyo3::exceptions::{PyConnectionResetError, PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use super::Connection;
use crate::http1::encode::{self, BodyLength, Framing};
use crate::http1::parse::Version;
use crate::request::Request;
use crate::response::{check_header_name, check_header_value, check_status};

/// A streamed response whose head is encoded, waiting for its turn.
pub struct Plan {
    obj: Py<PyAny>,
    status: u16,
    /// The request it answers, for the access log and metrics (set by the caller).
    pub request: Option<Py<Request>>,
    length: BodyLength,
    send_body: bool,
    upgrade: bool,
}

impl Plan {
    /// A streamed answer whose head the caller encoded: a hosted app's, which
    /// `obj` (its cycle) writes once it reaches the front.
    pub fn hosted(
        obj: Py<PyAny>,
        status: u16,
        request: Py<Request>,
        length: BodyLength,
        send_body: bool,
    ) -> Self {
        Plan {
            obj,
            status,
            request: Some(request),
            length,
            send_body,
            upgrade: false,
        }
    }

    /// The response object, for a plan that will never start (its connection is gone).
    pub fn into_object(self) -> Py<PyAny> {
        self.obj
    }
}

/// The stream being written (the front of the queue is its placeholder slot).
pub struct Active {
    length: BodyLength,
    status: u16,
    request: Option<Py<Request>>,
    /// Body bytes written so far (without chunk framing).
    written: usize,
    /// Bytes still owed under `Content-Length`.
    remaining: u64,
    send_body: bool,
    upgrade: bool,
    pub(super) task: Option<Py<PyAny>>,
    pub(super) waiter: Option<Py<PyAny>>,
}

/// The base class of every answer the core streams (`veter.StreamingResponse` and
/// what derives from it): the core knows them by their type, a check of the object's
/// type pointer, instead of looking up a marker attribute. Subclasses implement
/// `_veter_start` and `_veter_abandon` (their contract is in `_core.pyi`).
#[pyclass(module = "veter._core", name = "Streamed", subclass)]
pub struct Streamed;

#[pymethods]
impl Streamed {
    /// Takes whatever the subclass's `__init__` takes; the base holds nothing.
    #[new]
    #[pyo3(signature = (*args, **kwargs))]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        let _ = (args, kwargs);
        Streamed
    }

    /// Starts the body once the head is written (a subclass's task, or None).
    #[allow(clippy::unused_self)] // abstract: every subclass overrides it
    fn _veter_start(
        &self,
        writer: &Bound<'_, PyAny>,
        send_body: bool,
    ) -> PyResult<Option<Py<PyAny>>> {
        let _ = (writer, send_body);
        Err(PyNotImplementedError::new_err(
            "a Streamed subclass implements _veter_start",
        ))
    }

    /// The client left before the answer could start.
    #[allow(clippy::unused_self)] // abstract: every subclass overrides it
    fn _veter_abandon(&self) -> PyResult<()> {
        Err(PyNotImplementedError::new_err(
            "a Streamed subclass implements _veter_abandon",
        ))
    }
}

/// The base class of the `101` of an accepted WebSocket handshake
/// (`veter.websockets`): a stream without a body whose start hands the connection
/// over (`StreamWriter.upgrade`).
#[pyclass(module = "veter._core", name = "Upgrade", extends = Streamed, subclass)]
pub struct Upgrade;

#[pymethods]
impl Upgrade {
    #[new]
    #[pyo3(signature = (*args, **kwargs))]
    fn new(
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyClassInitializer<Self> {
        let _ = (args, kwargs);
        PyClassInitializer::from(Streamed).add_subclass(Upgrade)
    }
}

pub fn is_stream(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<Streamed>()
}

pub fn is_upgrade(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<Upgrade>()
}

const RESERVED: [&str; 3] = ["content-length", "transfer-encoding", "connection"];

/// Encodes the head of a streamed response into `out`.
pub fn plan(
    common: encode::Common<'_>,
    obj: &Bound<'_, PyAny>,
    framing: Framing,
    out: &mut Vec<u8>,
) -> PyResult<Plan> {
    let status = check_status(obj.getattr("status")?.extract()?)?;
    let upgrade = is_upgrade(obj);
    if upgrade != (status == 101) {
        return Err(PyValueError::new_err(
            "status 101 is sent only by WebSocket.accept()",
        ));
    }
    if upgrade && !framing.upgrade {
        return Err(PyValueError::new_err(
            "WebSocket.accept() answers only a WebSocket handshake (GET with Upgrade: websocket)",
        ));
    }
    let content_type: Option<String> = obj.getattr("content_type")?.extract()?;
    let declared: Option<u64> = obj.getattr("content_length")?.extract()?;
    // The pairs behind `StreamingResponse.headers` (a mapping view).
    let headers: Vec<(String, String)> = obj.getattr("_veter_headers")?.extract()?;
    for (name, value) in &headers {
        check_header_name(name)?;
        check_header_value(name, value)?;
        if !upgrade && RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(PyValueError::new_err(format!(
                "header {name:?} is set by the server and cannot be set by a handler"
            )));
        }
    }
    if let Some(ct) = &content_type {
        check_header_value("content-type", ct)?;
    }
    // The 101 goes out as is: its own `Connection: Upgrade`, no framing headers.
    let framing = if upgrade {
        Framing {
            keep_alive: true,
            version: match framing.version {
                Version::Http10 => Version::Http11,
                other => other,
            },
            ..framing
        }
    } else {
        framing
    };
    let length = if encode::status_forbids_body(status) {
        BodyLength::Absent
    } else if let Some(n) = declared {
        BodyLength::Known(n)
    } else if framing.version == Version::Http10 {
        BodyLength::UntilClose
    } else {
        BodyLength::Chunked
    };
    encode::encode_head(
        out,
        status,
        content_type.as_deref(),
        &headers,
        length,
        framing,
        common,
    );
    Ok(Plan {
        obj: obj.clone().unbind(),
        status,
        request: None,
        length,
        send_body: !framing.head && length != BodyLength::Absent,
        upgrade,
    })
}

/// The front slot's stream begins: its state while it is written, and what the
/// pump needs to start.
#[allow(clippy::boxed_local)] // queued plans are boxed (the queue's slots stay small)
pub fn activate(plan: Box<Plan>) -> (Active, (Py<PyAny>, bool)) {
    let active = Active {
        length: plan.length,
        status: plan.status,
        request: plan.request,
        written: 0,
        remaining: match plan.length {
            BodyLength::Known(n) => n,
            _ => 0,
        },
        send_body: plan.send_body,
        upgrade: plan.upgrade,
        task: None,
        waiter: None,
    };
    (active, (plan.obj, plan.send_body))
}

impl Connection {
    /// Queues a streamed response: `head` holds its head (and anything before it).
    pub(super) fn queue_stream(&mut self, head: Vec<u8>, plan: Box<Plan>) {
        self.note_stream(&plan, None);
        self.core.queue_stream(head, plan);
    }

    /// Marks the plan of a finished handler's slot (`seq`; None: the slot about to
    /// be queued, the last): a body whose length an HTTP/1.0 client is not told ends
    /// with the connection, so that answer is the last: the requests after it are
    /// dropped unanswered (their answers would be read as part of its body).
    pub(super) fn note_stream(&mut self, plan: &Plan, seq: Option<u64>) {
        if plan.length == BodyLength::UntilClose {
            // The client asked for keep-alive and may have sent its next request
            // already: unread, it would turn the close into a reset that cuts this
            // answer's end (the body is ended by the close).
            self.core.may_be_sending();
            match seq {
                Some(seq) => self.core.last_answer(seq),
                None => self.core.last_request(),
            }
        }
    }

    /// Starts the pump of a stream that reached the front (connection unborrowed).
    pub(super) fn start_pump(
        slf: &Bound<'_, Self>,
        obj: &Py<PyAny>,
        send_body: bool,
    ) -> PyResult<()> {
        let py = slf.py();
        let writer = Py::new(
            py,
            StreamWriter {
                conn: slf.clone().unbind(),
            },
        )?;
        match obj.call_method1(py, "_veter_start", (writer, send_body)) {
            Ok(task) => {
                // A hosted app's stream has no pump of its own (None): its app's task
                // writes, and is not cancelled when the client leaves.
                if !task.is_none(py) {
                    if let Some(active) = slf.borrow_mut().core.stream.as_mut() {
                        active.task = Some(task);
                    }
                }
                Ok(())
            }
            Err(err) => {
                err.print(py);
                StreamWriter::finish(slf, false)
            }
        }
    }
}

/// What a stream's pump writes through (`veter.StreamingResponse` holds one while
/// it runs).
#[pyclass(module = "veter._core", name = "StreamWriter", frozen)]
pub struct StreamWriter {
    conn: Py<Connection>,
}

impl StreamWriter {
    fn finish(conn: &Bound<'_, Connection>, ok: bool) -> PyResult<()> {
        Connection::with_borrow(conn, |this, py| {
            let Some(active) = this.core.stream.take() else {
                return Ok(());
            };
            if let Some(request) = &active.request {
                // Logged when the body ends (or is cut): its length and duration are known now.
                let req = request.get();
                let sent = encode::Sent {
                    status: active.status,
                    body_bytes: active.written,
                };
                this.record_response(py, &req.parts, &req.exchange, sent);
            }
            let complete = ok
                && (!active.send_body
                    || !matches!(active.length, BodyLength::Known(_))
                    || active.remaining == 0);
            // Cut short, the body ends without its last chunk, so the client sees an
            // incomplete response, and what was pipelined behind it is dropped.
            if !this.core.end_stream(complete) {
                return Ok(());
            }
            if active.send_body && active.length == BodyLength::Chunked {
                this.core.out.extend_from_slice(b"0\r\n\r\n");
            }
            this.drain_buffered(py).map(drop)
        })
    }
}

#[pymethods]
impl StreamWriter {
    /// Writes one piece of the body; returns whether the client is behind (the
    /// caller should then `wait`). Raises `ConnectionResetError` once the client
    /// has gone.
    pub(super) fn write(&self, py: Python<'_>, data: &Bound<'_, PyBytes>) -> PyResult<bool> {
        let conn = self.conn.bind(py);
        let (write, transport, payload) = {
            let mut this = conn.borrow_mut();
            if this.core.closed {
                return Err(PyConnectionResetError::new_err("the client disconnected"));
            }
            let Some(active) = this.core.stream.as_mut() else {
                return Err(PyValueError::new_err("the stream has ended"));
            };
            let bytes = data.as_bytes();
            if !active.send_body || bytes.is_empty() {
                return Ok(false);
            }
            active.written += bytes.len();
            let payload = match active.length {
                BodyLength::Chunked => {
                    let mut framed = Vec::with_capacity(bytes.len() + 20);
                    framed.extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
                    framed.extend_from_slice(bytes);
                    framed.extend_from_slice(b"\r\n");
                    PyBytes::new(py, &framed)
                }
                BodyLength::Known(_) => {
                    let n = bytes.len() as u64;
                    if n > active.remaining {
                        return Err(PyValueError::new_err(
                            "the streamed body is longer than its content_length",
                        ));
                    }
                    active.remaining -= n;
                    data.clone()
                }
                BodyLength::UntilClose | BodyLength::Absent => data.clone(),
            };
            let (Some(write), Some(transport)) = (
                this.write.as_ref().map(|w| w.clone_ref(py)),
                this.transport.as_ref().map(|t| t.clone_ref(py)),
            ) else {
                return Err(PyConnectionResetError::new_err("the client disconnected"));
            };
            (write, transport, payload)
        };
        write.call1(py, (payload,))?;
        // A transport whose peer went away drops writes silently and reports the
        // loss only on a later loop turn: a generator that never awaits would spin.
        if transport.call_method0(py, "is_closing")?.is_truthy(py)? {
            return Err(PyConnectionResetError::new_err("the client disconnected"));
        }
        Ok(conn.borrow().core.writing_paused())
    }

    /// The socket's descriptor, the write timeout (seconds) and the body bytes still
    /// owed, when the rest of the body may go past the transport (`os.sendfile` on
    /// the socket, which the caller reports with `_sent_out_of_band`); `None` when
    /// it may not (TLS, a chunked or absent body, the client gone). In place of the
    /// descriptor, `-1` while the transport still holds bytes of its own (written
    /// first: try again after the loop turns), `-2` when the answer has no body to
    /// send (a HEAD request's).
    /// Nothing else is written on this connection while the stream is active: the
    /// answers behind it wait in the queue.
    fn _sendfile_socket(&self, py: Python<'_>) -> PyResult<Option<(i64, f64, u64)>> {
        let conn = self.conn.bind(py);
        let (transport, timeout, owed) = {
            let this = conn.borrow();
            let Some(active) = this.core.stream.as_ref() else {
                return Ok(None);
            };
            if !active.send_body && !this.core.closed {
                return Ok(Some((-2, 0.0, 0)));
            }
            let owed = (!active.upgrade && matches!(active.length, BodyLength::Known(_)))
                .then_some(active.remaining);
            match (&this.transport, owed) {
                (Some(t), Some(owed)) if !this.core.closed && this.core.out.is_empty() => (
                    t.clone_ref(py),
                    this.disp.timeouts.write.as_secs_f64(),
                    owed,
                ),
                _ => return Ok(None),
            }
        };
        let transport = transport.bind(py);
        let extra = pyo3::intern!(py, "get_extra_info");
        if !transport.call_method1(extra, ("sslcontext",))?.is_none() {
            return Ok(None);
        }
        let socket = transport.call_method1(extra, ("socket",))?;
        if socket.is_none() {
            return Ok(None);
        }
        let buffered: usize = transport
            .call_method0(pyo3::intern!(py, "get_write_buffer_size"))?
            .extract()?;
        if buffered > 0 {
            return Ok(Some((-1, timeout, owed)));
        }
        let fd: i64 = socket
            .call_method0(pyo3::intern!(py, "fileno"))?
            .extract()?;
        Ok(Some((fd, timeout, owed)))
    }

    /// Counts `n` body bytes the caller sent past the transport (see
    /// `_sendfile_socket`). Raises `ConnectionResetError` once the connection is
    /// closed (so `n = 0` asks whether it still is).
    fn _sent_out_of_band(&self, py: Python<'_>, n: u64) -> PyResult<()> {
        let mut this = self.conn.bind(py).borrow_mut();
        if this.core.closed {
            return Err(PyConnectionResetError::new_err("the client disconnected"));
        }
        let Some(active) = this.core.stream.as_mut() else {
            return Err(PyValueError::new_err("the stream has ended"));
        };
        if n > active.remaining {
            return Err(PyValueError::new_err(
                "the streamed body is longer than its content_length",
            ));
        }
        active.remaining -= n;
        active.written += usize::try_from(n).unwrap_or(usize::MAX);
        Ok(())
    }

    /// Parks `future` until the transport drains below its low watermark.
    pub(super) fn wait(&self, py: Python<'_>, future: &Bound<'_, PyAny>) -> PyResult<()> {
        let conn = self.conn.bind(py);
        let ready = {
            let mut this = conn.borrow_mut();
            let paused = this.core.writing_paused() && !this.core.closed;
            if let (true, Some(active)) = (paused, this.core.stream.as_mut()) {
                active.waiter = Some(future.clone().unbind());
                false
            } else {
                true
            }
        };
        if ready {
            future.call_method1("set_result", (py.None(),))?;
        }
        Ok(())
    }

    /// Hands the connection to `protocol` after an accepted WebSocket handshake
    /// (its `101` has been written): the transport switches protocol and gets the
    /// bytes the client sent after the handshake. This connection is done.
    fn upgrade(&self, py: Python<'_>, protocol: &Bound<'_, PyAny>) -> PyResult<()> {
        let conn = self.conn.bind(py);
        let (transport, rest, resume, disp, id) = {
            let mut this = conn.borrow_mut();
            if this.core.closed {
                return Err(PyConnectionResetError::new_err("the client disconnected"));
            }
            if !this.core.stream.as_ref().is_some_and(|a| a.upgrade) {
                return Err(PyValueError::new_err(
                    "only the answer to an accepted WebSocket handshake can upgrade",
                ));
            }
            let Some(active) = this.core.stream.take() else {
                return Ok(());
            };
            if let Some(request) = &active.request {
                let req = request.get();
                let sent = encode::Sent {
                    status: 101,
                    body_bytes: 0,
                };
                this.record_response(py, &req.parts, &req.exchange, sent);
            }
            let rest = std::mem::take(&mut this.core.buf);
            let resume = this.core.reading_paused;
            let transport = this.transport.take();
            this.detach();
            (transport, rest, resume, this.disp.clone(), this.id)
        };
        Connection::leave(py, &disp, id);
        let Some(transport) = transport else {
            return Err(PyConnectionResetError::new_err("the client disconnected"));
        };
        transport.call_method1(py, "set_protocol", (protocol,))?;
        if resume {
            transport.call_method0(py, "resume_reading")?;
        }
        protocol.call_method1("_attach", (transport, PyBytes::new(py, &rest)))?;
        Ok(())
    }

    /// Ends the body: `ok` false (the generator failed or was cancelled) closes
    /// the connection without completing the response.
    pub(super) fn end(&self, py: Python<'_>, ok: bool) -> PyResult<()> {
        Self::finish(self.conn.bind(py), ok)
    }
}

/// Wakes a pump parked in `wait` (after `resume_writing`).
pub fn wake(py: Python<'_>, waiter: Option<Py<PyAny>>) -> PyResult<()> {
    if let Some(fut) = waiter {
        let fut = fut.bind(py);
        if !fut.call_method0("done")?.is_truthy()? {
            fut.call_method1("set_result", (py.None(),))?;
        }
    }
    Ok(())
}
