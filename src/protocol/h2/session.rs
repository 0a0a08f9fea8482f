//! An HTTP/2 connection's session: the sans-IO HTTP/2 core (`http2::conn`) between
//! the socket and one HTTP/1.1 connection per stream.
//!
//! Theory. The connection that took the socket (`Connection`, the asyncio protocol)
//! hands every callback to its session once it knows the client speaks HTTP/2 (the
//! preface, or ALPN `h2`). The session feeds the bytes to the HTTP/2 core and acts
//! on its events: a request's head is written as HTTP/1.1 (`http2::as_h1`) to a
//! `Connection` of its own (taken from `idle`, or made), whose transport is a
//! `StreamTransport`; the stream's DATA follows as its body. What that connection
//! writes back is read as an answer (`http2::answer`) and framed by the core. So
//! routing, handlers (native, hosted ASGI and WSGI), request ids, timeouts,
//! deadlines, overload shedding, the access log and metrics serve HTTP/2 streams
//! as they serve HTTP/1.1 requests, with the same code.
//!
//! State per stream (`Link`): its connection and transport, the answer being read,
//! how DATA is passed on (`BodyMode`), whether the request has ended, DATA held while
//! the connection paused reading (its flow-control window is not replenished until
//! it reads again: backpressure reaches the client), and whether its writer was
//! paused because too much of its answer waits for the client's window.
//!
//! A stream's connection goes back to `idle` when its answer is sent and its
//! request read to the end, and serves a later stream. Otherwise (the client reset
//! the stream, the answer ended first, the connection closed) it is told its
//! transport was lost and is dropped.
//!
//! Writes: what the core queues during one read goes out in one `transport.write`
//! after the read's events are handled; answers written later (tasks) schedule one
//! `flush` per loop iteration.
//!
//! Borrowing: the session is never borrowed while a stream's connection runs (it
//! writes back into the session), so events are taken out first and handled
//! unborrowed.

use std::sync::Arc;
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rustc_hash::FxHashMap;

use super::link::{deliver, frame_body, send, After, Link, HIGH_MARK, LOW_MARK};
use super::transport::StreamTransport;
use crate::http2::answer::Answer;
use crate::http2::as_h1::{self, BodyMode};
use crate::http2::conn::{Connection as H2, Event};
use crate::http2::error::ErrorCode;
use crate::protocol::{Connection, Shared};

mod lifecycle;

#[pyclass(module = "veter._core", name = "Http2Session")]
#[allow(clippy::struct_excessive_bools)] // independent facts of the session's life
pub struct Session {
    core: H2,
    disp: Arc<Shared>,
    dispatcher: Py<PyAny>,
    transport: Py<PyAny>,
    /// `transport.write`, looked up once.
    write: Py<PyAny>,
    streams: FxHashMap<u32, Link>,
    /// Connections that served a stream and wait for the next, with their transports.
    idle: Vec<(Py<Connection>, Py<StreamTransport>)>,
    /// Answer readers of ended streams, their buffers kept for the next.
    answers: Vec<Answer>,
    /// Handling the events of a read: the write comes after them.
    dispatching: bool,
    call_soon: Py<PyAny>,
    /// `self._flush`, made once (a cycle, broken when the socket is lost).
    flush_cb: Option<Py<PyAny>>,
    flush_queued: bool,
    /// The socket's buffer is full (`pause_writing`), since this instant: what the
    /// core queues stays in it (so that its limit on unread control frames holds),
    /// and the write timeout applies.
    writing_paused: Option<Instant>,
    pub(super) last_activity: Instant,
    going_away: bool,
    closed: bool,
    /// Half-closed after the last frame, reading (and dropping) until the client
    /// closes too or this instant passes: a close with its input unread would reset
    /// the connection, and the client could lose the frames before it (a GOAWAY).
    linger_until: Option<Instant>,
    /// Bytes the lingering session may still read and drop (`linger_bytes`).
    linger_left: usize,
    /// The head being written for a stream's connection (its capacity kept).
    scratch: Vec<u8>,
    /// The events of a read, taken from the core before they are handled (the
    /// vector kept for the next read).
    events: Vec<Event>,
}

/// How long a finished session reads after its half-close, at most.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);
/// What it reads and drops meanwhile, at most, when `linger_bytes` is off.
const LINGER_BYTES: usize = 4 << 20;

impl Session {
    pub fn new(
        py: Python<'_>,
        disp: Arc<Shared>,
        dispatcher: Py<PyAny>,
        transport: Py<PyAny>,
        core: H2,
    ) -> PyResult<Self> {
        let call_soon = py
            .import("asyncio")?
            .call_method0("get_running_loop")?
            .getattr("call_soon")?
            .unbind();
        let write = transport.getattr(py, "write")?;
        Ok(Session {
            core,
            disp,
            dispatcher,
            transport,
            write,
            streams: FxHashMap::default(),
            idle: Vec::new(),
            answers: Vec::new(),
            dispatching: false,
            call_soon,
            flush_cb: None,
            flush_queued: false,
            writing_paused: None,
            last_activity: Instant::now(),
            going_away: false,
            closed: false,
            linger_until: None,
            linger_left: 0,
            scratch: Vec::new(),
            events: Vec::new(),
        })
    }

    pub(super) fn buffered(&self, stream: u32) -> usize {
        if stream == 0 {
            0
        } else {
            self.core.buffered(stream)
        }
    }

    /// Bytes from the socket.
    pub fn data_received(slf: &Bound<'_, Self>, data: &[u8]) -> PyResult<()> {
        let mut events = {
            let mut this = slf.borrow_mut();
            if this.closed {
                // Lingering: dropped, up to a budget, then the connection is cut.
                if this.linger_until.is_some() {
                    this.linger_left = this.linger_left.saturating_sub(data.len());
                    if this.linger_left == 0 {
                        this.linger_until = None;
                        let transport = this.transport.clone_ref(slf.py());
                        drop(this);
                        transport.call_method0(slf.py(), "abort")?;
                    }
                }
                return Ok(());
            }
            let now = Instant::now();
            this.last_activity = now;
            this.core.received(data, now);
            this.dispatching = true;
            let mut events = std::mem::take(&mut this.events);
            while let Some(event) = this.core.next_event() {
                events.push(event);
            }
            events
        };
        let result = Self::handle(slf, &mut events);
        let mut this = slf.borrow_mut();
        this.dispatching = false;
        if this.events.capacity() == 0 {
            this.events = events; // empty, its capacity kept for the next read
        }
        drop(this);
        result?;
        Self::flush(slf)
    }

    fn handle(slf: &Bound<'_, Self>, events: &mut Vec<Event>) -> PyResult<()> {
        for event in events.drain(..) {
            match event {
                Event::Request {
                    stream,
                    head,
                    end_stream,
                } => Self::start_stream(slf, stream, head, end_stream)?,
                Event::Data {
                    stream,
                    data,
                    end_stream,
                } => Self::pass_data(slf, stream, &data, end_stream)?,
                Event::Trailers { stream, .. } => Self::pass_data(slf, stream, &[], true)?,
                Event::Reset { stream, .. } => {
                    let link = slf.borrow_mut().streams.remove(&stream);
                    if let Some(link) = link {
                        Self::lose(slf, link)?;
                    }
                }
                Event::Writable { stream } => {
                    let after = slf.borrow_mut().writer_room(slf.py(), stream);
                    Self::after(slf.py(), after)?;
                }
                Event::HeadersTooLarge { stream } => {
                    let mut this = slf.borrow_mut();
                    let fields: [(&[u8], &[u8]); 1] = [(b"content-length", b"0")];
                    this.core.send_headers(stream, 431, &fields, true);
                }
                Event::GoAway { .. } => {}
            }
        }
        Ok(())
    }

    /// A new stream: its head goes to an idle connection, or a new one.
    fn start_stream(
        slf: &Bound<'_, Self>,
        stream: u32,
        head: crate::http2::request::RequestHead,
        end_stream: bool,
    ) -> PyResult<()> {
        let py = slf.py();
        let (conn, transport, bytes) = {
            let mut guard = slf.borrow_mut();
            let this = &mut *guard;
            let (conn, transport) = if let Some(pair) = this.idle.pop() {
                pair
            } else {
                drop(guard);
                let pair = Self::new_stream_connection(slf)?;
                guard = slf.borrow_mut();
                pair
            };
            let this = &mut *guard;
            {
                let mut t = transport.bind(py).borrow_mut();
                t.stream = stream;
            }
            this.scratch.clear();
            let body = as_h1::write_head(
                as_h1::Head {
                    method: head.method(),
                    path: head.path(),
                    authority: head.authority(),
                    protocol: head.protocol(),
                    fields: || head.fields(),
                    content_length: head.content_length,
                    end_stream,
                },
                &mut this.scratch,
            );
            let is_head = head.method() == b"HEAD";
            let body_left = head.content_length.unwrap_or(0);
            this.core.recycle(head);
            let answer = match this.answers.pop() {
                Some(mut answer) => {
                    answer.reset(is_head);
                    answer
                }
                None => Answer::new(is_head),
            };
            this.streams.insert(
                stream,
                Link {
                    conn: conn.clone_ref(py),
                    transport: transport.clone_ref(py),
                    answer,
                    body,
                    body_left,
                    request_ended: end_stream,
                    held: Vec::new(),
                    held_end: false,
                    writer_paused: false,
                },
            );
            (conn, transport, PyBytes::new(py, &this.scratch))
        };
        let _ = transport;
        Connection::data_received(conn.bind(py), &bytes)
    }

    /// Stream 1 of a connection upgraded from HTTP/1.1 (`Upgrade: h2c`): the request
    /// that asked for it, already read whole (`head`, without its upgrade fields).
    pub fn start_upgraded(slf: &Bound<'_, Self>, head: &[u8], is_head: bool) -> PyResult<()> {
        let py = slf.py();
        let (conn, transport) = Self::new_stream_connection(slf)?;
        transport.bind(py).borrow_mut().stream = 1;
        slf.borrow_mut().streams.insert(
            1,
            Link {
                conn: conn.clone_ref(py),
                transport,
                answer: Answer::new(is_head),
                body: BodyMode::None,
                body_left: 0,
                request_ended: true,
                held: Vec::new(),
                held_end: false,
                writer_paused: false,
            },
        );
        slf.borrow_mut().dispatching = true;
        let result = Connection::data_received(conn.bind(py), &PyBytes::new(py, head));
        slf.borrow_mut().dispatching = false;
        result
    }

    /// A connection for streams: made as the worker makes one for a socket, with
    /// a `StreamTransport` as its transport.
    fn new_stream_connection(
        slf: &Bound<'_, Self>,
    ) -> PyResult<(Py<Connection>, Py<StreamTransport>)> {
        let py = slf.py();
        let (disp, dispatcher, real) = {
            let this = slf.borrow();
            (
                this.disp.clone(),
                this.dispatcher.clone_ref(py),
                this.transport.clone_ref(py),
            )
        };
        let mut conn = Connection::new(py, disp, dispatcher);
        conn.h2_stream = true;
        let conn = Py::new(py, conn)?;
        let transport = Py::new(
            py,
            StreamTransport {
                session: Some(slf.clone().unbind()),
                stream: 0,
                real,
                protocol: conn.clone_ref(py).into_any(),
                closing: false,
                reading: true,
            },
        )?;
        Connection::connection_made(conn.bind(py), transport.bind(py).as_any())?;
        Ok((conn, transport))
    }

    /// Request body bytes (and its end) for a stream's connection.
    fn pass_data(slf: &Bound<'_, Self>, stream: u32, data: &[u8], end: bool) -> PyResult<()> {
        let py = slf.py();
        let (conn, bytes) = {
            let mut guard = slf.borrow_mut();
            let this = &mut *guard;
            let Some(link) = this.streams.get_mut(&stream) else {
                return Ok(());
            };
            link.request_ended |= end;
            link.body_left = link.body_left.saturating_sub(data.len() as u64);
            let reading = link.transport.bind(py).borrow().reading;
            if !reading || !link.held.is_empty() {
                link.held.extend_from_slice(data);
                link.held_end |= end;
                return Ok(());
            }
            this.core.consumed(stream, data.len());
            this.scratch.clear();
            frame_body(link.body, data, end, &mut this.scratch);
            if this.scratch.is_empty() {
                return Ok(());
            }
            (
                link.transport.clone_ref(py),
                PyBytes::new(py, &this.scratch),
            )
        };
        deliver(py, &conn, &bytes)
    }

    /// A stream's connection paused or resumed reading its body.
    pub(super) fn set_reading(slf: &Bound<'_, Self>, stream: u32, reading: bool) -> PyResult<()> {
        if !reading {
            return Ok(()); // DATA is held from now on (`pass_data`)
        }
        let py = slf.py();
        let (conn, bytes) = {
            let mut guard = slf.borrow_mut();
            let this = &mut *guard;
            let Some(link) = this.streams.get_mut(&stream) else {
                return Ok(());
            };
            if link.held.is_empty() && !link.held_end {
                return Ok(());
            }
            let held = std::mem::take(&mut link.held);
            let end = std::mem::take(&mut link.held_end);
            this.core.consumed(stream, held.len());
            this.scratch.clear();
            frame_body(link.body, &held, end, &mut this.scratch);
            (
                link.transport.clone_ref(py),
                PyBytes::new(py, &this.scratch),
            )
        };
        deliver(py, &conn, &bytes)?;
        Self::flush_soon(slf)
    }

    /// What a stream's connection wrote: its answer, read and framed.
    pub(super) fn stream_write(slf: &Bound<'_, Self>, stream: u32, data: &[u8]) -> PyResult<()> {
        let after = {
            let mut guard = slf.borrow_mut();
            let this = &mut *guard;
            let Some(link) = this.streams.get_mut(&stream) else {
                return Ok(()); // the stream was reset: its answer goes nowhere
            };
            let core = &mut this.core;
            let mut ended = false;
            let read = link.answer.feed(data, &mut |piece| {
                ended |= send(core, stream, piece);
            });
            if read.is_err() {
                this.core.reset(stream, ErrorCode::InternalError);
                let link = this.streams.remove(&stream);
                link.map_or(After::Nothing, |l| After::Lose(l.conn))
            } else if link.answer.is_done() {
                this.finish_stream(slf.py(), stream)
            } else if !link.writer_paused && this.core.buffered(stream) > HIGH_MARK {
                link.writer_paused = true;
                After::PauseWriting(link.conn.clone_ref(slf.py()))
            } else {
                After::Nothing
            }
        };
        Self::after(slf.py(), after)?;
        Self::flush_soon(slf)
    }

    /// The stream's answer is complete: its connection serves the next stream if
    /// its request was read to the end too.
    fn finish_stream(&mut self, py: Python<'_>, stream: u32) -> After {
        let Some(link) = self.streams.remove(&stream) else {
            return After::Nothing;
        };
        if !link.body_read() {
            // The answer came first (RFC 9113 8.1): the client stops sending.
            self.core.discard_body(stream);
            return After::Lose(link.conn);
        }
        let mut t = link.transport.bind(py).borrow_mut();
        if t.closing {
            return After::Lose(link.conn.clone_ref(py));
        }
        t.stream = 0;
        drop(t);
        if self.answers.len() < 64 {
            self.answers.push(link.answer);
        }
        self.idle.push((link.conn, link.transport));
        After::Nothing
    }

    /// A stream's connection closed its transport.
    pub(super) fn stream_closed(
        slf: &Bound<'_, Self>,
        transport: &Bound<'_, StreamTransport>,
        stream: u32,
        abort: bool,
    ) -> PyResult<()> {
        let py = slf.py();
        let lost = {
            let mut guard = slf.borrow_mut();
            let this = &mut *guard;
            if stream == 0 {
                // An idle connection (its keep-alive time is up).
                let at = this.idle.iter().position(|(_, t)| t.is(transport));
                at.map(|i| this.idle.swap_remove(i).0.into_any())
            } else if let Some(mut link) = this.streams.remove(&stream) {
                let core = &mut this.core;
                match link.answer.closed() {
                    Some(piece) if !abort => {
                        send(core, stream, piece);
                        // A WebSocket's client ends its side after the close
                        // handshake: no reset cuts it short.
                        if !link.body_read() && link.body != BodyMode::Tunnel {
                            core.discard_body(stream);
                        }
                    }
                    _ => core.reset(stream, ErrorCode::InternalError),
                }
                Some(link.transport.bind(py).borrow().protocol.clone_ref(py))
            } else {
                None
            }
        };
        transport.borrow_mut().session = None;
        if let Some(conn) = lost {
            // As a transport does, the connection learns it on a later callback.
            let call_soon = slf.borrow().call_soon.clone_ref(py);
            let lost = conn.bind(py).getattr("connection_lost")?;
            call_soon.call1(py, (lost, py.None()))?;
        }
        Self::flush_soon(slf)
    }

    fn writer_room(&mut self, py: Python<'_>, stream: u32) -> After {
        match self.streams.get_mut(&stream) {
            Some(link) if link.writer_paused && self.core.buffered(stream) <= LOW_MARK => {
                link.writer_paused = false;
                After::ResumeWriting(link.conn.clone_ref(py))
            }
            _ => After::Nothing,
        }
    }

    fn after(py: Python<'_>, after: After) -> PyResult<()> {
        match after {
            After::Nothing => Ok(()),
            After::PauseWriting(conn) => conn.bind(py).call_method0("pause_writing").map(drop),
            After::ResumeWriting(conn) => conn.bind(py).call_method0("resume_writing").map(drop),
            After::Lose(conn) => {
                let conn = conn.bind(py);
                conn.call_method1("connection_lost", (py.None(),)).map(drop)
            }
        }
    }

    /// Tells a stream's connection its transport is lost.
    fn lose(slf: &Bound<'_, Self>, link: Link) -> PyResult<()> {
        let py = slf.py();
        // Whatever reads the stream now: its connection, or a WebSocket that took
        // the transport over.
        let protocol = {
            let mut t = link.transport.bind(py).borrow_mut();
            t.closing = true;
            t.session = None;
            t.protocol.clone_ref(py)
        };
        let _ = slf;
        protocol
            .bind(py)
            .call_method1("connection_lost", (py.None(),))
            .map(drop)
    }
}

#[pymethods]
impl Session {
    fn _flush(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::flush(slf)
    }
}
