//! The connection's shell: an asyncio protocol implemented in Rust around the
//! connection core (`conn/`), which holds all of its HTTP state.
//!
//! The shell turns asyncio's callbacks into calls on the core, and the core's
//! events into Python: it routes each head, builds the request, calls the handler
//! (inline, or as a task whose completion fills its place in the output queue), and
//! is the one place that turns a handler's result into bytes (`respond.rs`). After
//! each call it carries out what the core asks of the transport (`collect`: write,
//! close, pause or resume reading) in one go.
//!
//! Borrowing: Python calls into a connection one at a time (the loop is single
//! threaded), but `transport.write` may call `pause_writing` synchronously, so the
//! `RefCell`-like borrow of the connection is always released before calling the
//! transport. Handlers run while the connection is borrowed; they cannot reach it.

use std::sync::Arc;
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use smallvec::SmallVec;

use crate::access::Entry;
use crate::conn::{self, Begin, Core, Env, Event};
use crate::http1::encode::{self, Framing};
use crate::http1::error::ParseError;
use crate::http1::parse::{BodyKind, Head, Version};
use crate::request::{self, Body, Request};
use crate::router::tree::Lookup;

mod asgi;
mod callbacks;
mod clock;
use clock::unix_time;
mod completion;
mod current;
pub use current::inline_request;
mod deferred;
mod h2;
mod handler;
mod observe;
mod respond;
mod route;
use route::{route_for, Routed};
mod stream;
mod timers;
mod transport;
mod upload;

pub use asgi::Cycle as AsgiCycle;
pub use completion::Completion;
pub use h2::{Session as Http2Session, StreamTransport};
pub use stream::{StreamWriter, Streamed, Upgrade};

/// What a connection reads of the worker (see `shared.rs`).
pub type Shared = crate::shared::Shared<Py<Connection>>;

/// What the shell keeps in the core.
pub struct PyShell;

impl conn::Shell for PyShell {
    type Held = Pending;
    type Upload = upload::Upload;
    type Running = Running;
    type Plan = Box<stream::Plan>;
    type Active = stream::Active;
}

/// A request whose body is being collected, with its route.
pub struct Pending {
    parts: request::Parts,
    framing: Framing,
    route: Routed,
}

/// A handler still running: its task, how to answer, and its request.
pub struct Running {
    task: Py<PyAny>,
    framing: Framing,
    request: Py<Request>,
    /// The app's middleware around an answer of the core's (the deadline's 504):
    /// past the deadline again, the core answers without it.
    core_answer: bool,
}

#[pyclass(module = "veter._core", name = "Connection")]
#[allow(clippy::struct_excessive_bools)] // independent facts of one connection
pub struct Connection {
    /// What the worker's connections share (routes, settings, overload, registry).
    disp: Arc<Shared>,
    /// The Python `Dispatcher` that made this connection (handed to deferred handlers
    /// and asked for its end-of-iteration marker).
    dispatcher: Py<PyAny>,
    id: u64,
    /// The HTTP state: input, output queue, pauses, timers.
    core: Core<PyShell>,
    transport: Option<Py<PyAny>>,
    write: Option<Py<PyAny>>,
    /// Kwargs of an eagerly started task (Python 3.12+).
    task_kwargs: Option<Py<PyDict>>,
    /// Kwargs of a task started by the loop, made by `asyncio.Task` itself (None:
    /// the loop has a task factory, so `create_task` makes them).
    plain_task_kwargs: Option<Py<PyDict>>,
    create_task: Option<Py<PyAny>>,
    client: Py<PyAny>,
    /// The last request object, kept when its handler's answer left nobody else
    /// holding it: the next request is written into it (`ffi/request_reuse.rs`).
    spare: Option<Py<Request>>,
    /// The peer's address as the access log writes it (only when it is on).
    client_text: String,
    /// The peer is a trusted proxy: its requests' proxy headers are read (proxy.rs).
    proxied: bool,
    /// This connection as a Python object, for task completions; cleared when lost.
    self_ref: Option<Py<Connection>>,
    /// `client` and `server` of a hosted ASGI app's scopes: `(host, port)` of the
    /// peer and of the listening socket, made once per connection.
    asgi_place: Option<(Py<PyAny>, Py<PyAny>)>,
    /// A hosted ASGI app's scope template for this connection (its second request
    /// on): the worker's template with `http_version`, `scheme`, `client` and
    /// `server` set (`asgi/connection.rs`, `new_cycle`).
    asgi_scope: crate::asgi::scope::ConnectionBase,
    /// The same for a hosted WSGI app's environ (`SERVER_NAME`, `REMOTE_ADDR`...).
    wsgi_place: Option<Box<crate::asgi::environ::Place>>,
    /// The requests of a hosted ASGI app still running (told when the client leaves).
    cycles: Vec<Py<asgi::Cycle>>,
    /// Half-closed by the server, reading and dropping until the client closes
    /// too, this instant passes or this many more bytes came (`linger`).
    lingering: Option<(Instant, usize)>,
    /// Whether the client may still be sending when the server closes: a request
    /// refused or answered before its body was read (`linger`). False once the
    /// client has half-closed (`eof_received`).
    may_be_sending: bool,
    /// Requests dispatched on this connection.
    served: u64,
    /// When the loop iteration that read the current bytes began (queue timeout).
    batch_start: Instant,
    /// The transport's socket, asked how long bytes waited in the kernel (queue timeout).
    sock: Option<Py<PyAny>>,
    /// No bytes read yet: the first request may have waited in the accept queue.
    first_read: bool,
    event_loop: Option<Py<PyAny>>,
    end_iteration: Option<Py<PyAny>>,
    /// How an answer a task finished is written at the end of the loop iteration
    /// (`with_borrow_later`); None once detached, and for an HTTP/2 stream's connection.
    later: Option<transport::Later>,
    /// The `Date` line, checked once per read and per finished handler (`set_clock`),
    /// and its unix second.
    date: encode::DateLine,
    date_second: u64,
    /// `encode::ok_head` with `date` (see `ok_head_for`).
    ok_head: Vec<u8>,
    /// When the wall clock's second may change next, on the monotonic clock: until
    /// then the wall clock is not read (`set_clock`).
    next_second: Instant,
    /// The wall clock (since the Unix epoch) when it was last read, at `wall.0`.
    wall: (Instant, std::time::Duration),
    /// The wall clock (since the Unix epoch) at `clock.0`, the last read: access log
    /// times are derived from it, so a line costs one monotonic clock read (its
    /// duration), not two. Kept only while the access log is on (its one reader).
    clock: (Instant, std::time::Duration),
    /// The client speaks HTTP/2: every callback goes to this session (`h2/`).
    h2: Option<Py<h2::Session>>,
    /// This connection serves the streams of an HTTP/2 session, one at a time.
    h2_stream: bool,
    /// Its first bytes will say whether the client speaks HTTP/2 (h2c): `sniffed`
    /// keeps them until they do.
    sniffing: bool,
    sniffed: Vec<u8>,
    /// A request asked for `Upgrade: h2c` and gets it once the connection is no
    /// longer borrowed (`switch_to_h2c`).
    h2_upgrade: Option<Box<crate::http2::upgrade::Upgrade>>,
}

impl Connection {
    fn common(&self) -> encode::Common<'_> {
        Self::common_of(&self.disp, &self.date, &self.ok_head)
    }

    /// `common()` from the fields it reads, so that the core's output can be
    /// borrowed at the same time (`emit_result`).
    fn common_of<'a>(
        disp: &'a Shared,
        date: &'a encode::DateLine,
        ok_head: &'a [u8],
    ) -> encode::Common<'a> {
        encode::Common {
            server_line: &disp.server_line,
            date_line: date,
            request_id: b"",
            request_id_prefix: disp
                .request_ids
                .as_ref()
                .map_or(b"", |ids| ids.line_prefix()),
            ok_head,
            request_id_name: disp.request_ids.as_ref().map_or("", |ids| ids.name()),
        }
    }

    pub fn new(py: Python<'_>, disp: Arc<Shared>, dispatcher: Py<PyAny>) -> Self {
        let id = disp.next_id();
        let now = Instant::now();
        Connection {
            disp,
            dispatcher,
            id,
            core: Core::new(now),
            transport: None,
            write: None,
            task_kwargs: None,
            plain_task_kwargs: None,
            create_task: None,
            client: py.None(),
            spare: None,
            client_text: String::new(),
            proxied: false,
            self_ref: None,
            asgi_place: None,
            asgi_scope: crate::asgi::scope::ConnectionBase::default(),
            wsgi_place: None,
            cycles: Vec::new(),
            lingering: None,
            may_be_sending: false,
            served: 0,
            batch_start: now,
            sock: None,
            first_read: true,
            event_loop: None,
            end_iteration: None,
            later: None,
            date: encode::date_line(),
            date_second: 0,
            ok_head: Vec::new(),
            // The first read reads the wall clock.
            next_second: now,
            wall: (now, std::time::Duration::ZERO),
            clock: (now, std::time::Duration::ZERO),
            h2: None,
            h2_stream: false,
            sniffing: false,
            sniffed: Vec::new(),
            h2_upgrade: None,
        }
    }

    /// Lets a connection that waited for a slot under `max_connections` be read.
    pub fn admit(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::with_borrow(slf, |this, py| {
            this.core.pauses.clear(conn::Pause::Capacity);
            this.core.last_activity = Instant::now();
            this.drain_buffered(py).map(drop)
        })
    }

    /// Takes connection `id` out of the registry (it closed, or became a WebSocket)
    /// and admits the connections that waited for its slot under `max_connections`.
    pub fn leave(py: Python<'_>, disp: &Shared, id: u64) {
        for waiting in disp.unregister(py, id) {
            if let Err(err) = Connection::admit(waiting.bind(py)) {
                err.print(py);
            }
        }
    }

    pub fn abort(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let transport = {
            let Ok(mut this) = slf.try_borrow_mut() else {
                return Ok(());
            };
            this.core.abort();
            this.transport.as_ref().map(|t| t.clone_ref(py))
        };
        if let Some(t) = transport {
            t.call_method0(py, "abort")?;
        }
        Ok(())
    }

    /// Whether `head` (at the start of `buf`) asks for `Upgrade: h2c` and gets it:
    /// HTTP/2 and its upgrade are on, the request has no body, and nothing is in
    /// flight before it. Its upgrade is kept in `h2_upgrade`.
    fn wants_h2c(&mut self, head: &Head, buf: &[u8]) -> bool {
        if !self.disp.h2c_upgrade
            || self.disp.http2.is_none()
            || self.h2_stream
            || !matches!(head.body, BodyKind::Empty)
            || self.core.in_flight > 0
            || !self.core.queue.is_empty()
        {
            return false;
        }
        let line_end = memchr::memchr(b'\n', buf).unwrap_or(0);
        let line = buf[..line_end]
            .strip_suffix(b"\r")
            .unwrap_or(&buf[..line_end]);
        match crate::http2::upgrade::requested(buf, line, &head.headers) {
            Some(upgrade) => {
                self.h2_upgrade = Some(Box::new(upgrade));
                true
            }
            None => false,
        }
    }

    fn framing_for(&self, head: &Head, is_head: bool) -> Framing {
        let shutting = self
            .disp
            .last_answers
            .load(std::sync::atomic::Ordering::Relaxed);
        Framing {
            version: head.version,
            keep_alive: head.keep_alive && !shutting,
            head: is_head,
            upgrade: false,
        }
    }

    /// Parses and dispatches everything complete in `chunk[pos..]`.
    fn process(
        &mut self,
        py: Python<'_>,
        chunk: &Bound<'_, PyBytes>,
        mut pos: usize,
    ) -> PyResult<()> {
        let data = chunk.as_bytes();
        loop {
            let disp = &*self.disp;
            let env = env(disp);
            match self.core.next_event(data, &mut pos, &env) {
                Event::Wait => return Ok(()),
                Event::Head { head, start } => {
                    self.start_request(py, chunk, &mut pos, start, head)?;
                }
                Event::Collected(collected) => {
                    if let (Some(pending), body) = collected.into_parts() {
                        let Pending {
                            mut parts,
                            framing,
                            mut route,
                        } = pending;
                        parts.body = Body::Owned(body);
                        let disp = self.disp.clone();
                        let mut parts = request::Built::new(parts);
                        self.dispatch(py, &disp, &mut parts, route.lookup(), framing)?;
                    }
                }
                Event::Upload { bytes } => self.feed_upload(py, bytes),
                Event::UploadEnd { bytes, end, upload } => {
                    let stream = upload.stream.clone_ref(py);
                    Self::end_upload(py, bytes, &end, upload);
                    if end.is_err() {
                        self.may_be_sending = true; // the rest of the body is not read
                        if disp.asgi.is_some() {
                            self.asgi_body_failed(py, &stream);
                        }
                    }
                }
                Event::Queued => {
                    // Every handler slot of this worker is taken: wait in line.
                    if let Some(me) = &self.self_ref {
                        disp.overload.wait(me.clone_ref(py));
                    }
                }
                Event::Reject(err) => self.fail(&err),
            }
        }
    }

    /// Handles the head parsed at `chunk[start..]` (`*pos` is after it).
    // Into `process`, its one caller: left out of line (as LLVM chose once
    // `split_target` changed), the head is passed by copy and the pair cost ~35
    // instructions more per request (pipelined, callgrind).
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn start_request(
        &mut self,
        py: Python<'_>,
        chunk: &Bound<'_, PyBytes>,
        pos: &mut usize,
        start: usize,
        mut head: Head,
    ) -> PyResult<()> {
        let data = chunk.as_bytes();
        // The head's bytes, sliced once: each `&data[start..]` is a bounds check.
        let at = &data[start..];
        if self.h2_stream {
            head.version = Version::Http2;
            // The chunked framing `http2::as_h1` gives a body of unknown length is
            // this connection's own: HTTP/2 has no Transfer-Encoding to show the app.
            if head.body == BodyKind::Chunked {
                head.headers
                    .retain(|h| !at[h.name.clone()].eq_ignore_ascii_case(b"transfer-encoding"));
            }
        }
        if head.upgrade && self.wants_h2c(&head, at) {
            self.core.upgrade(data, pos);
            return Ok(());
        }
        // Ranges stay relative to the head's first byte (`base`): no copying or
        // shifting of the header spans the parser produced.
        let (path, query) = request::split_target(at, head.target.clone());
        let is_head = &at[head.method.clone()] == b"HEAD";
        let mut framing = self.framing_for(&head, is_head);
        // The route is looked up once, here: it decides how the body is read, and
        // the handler is called with what it found.
        let disp_ref = self.disp.clone();
        let disp = &*disp_ref;
        let lookup = route_for(&disp.router, at, &head.method, &path);
        let (websocket, stream_body) = match &lookup {
            Lookup::Found { route, .. } => {
                let route = &disp.routes[*route];
                (route.websocket, route.stream_body)
            }
            // A hosted ASGI app reads every body as it arrives (`receive`); its
            // WebSocket handshakes go to the WebSocket entry, when it has one.
            _ if disp.asgi.is_some() => (
                disp.hosted_ws.is_some()
                    && head.upgrade
                    && request::upgrades_to_websocket(at, &head.headers),
                true,
            ),
            _ => (false, false),
        };
        // The body is decided before the request's parts exist, so `parts` is built
        // once and moved once (into `dispatch`, or `hold`): a move decided inside
        // an assignment to `parts.body` measured one 256-byte copy per request.
        let mut collecting = false;
        let body = if matches!(head.body, BodyKind::Empty) {
            if head.upgrade && framing.keep_alive && websocket {
                // Nothing after this head is HTTP if the handler accepts: keep it aside.
                framing.upgrade = true;
                self.core.upgrade(data, pos);
            }
            Body::Empty
        } else if stream_body {
            self.start_upload(py, &head.body, head.expect_continue)?
        } else {
            match self
                .core
                .begin_body(&head.body, head.expect_continue, data, pos, &disp.limits)
            {
                Begin::Ready(conn::Body::Empty) => Body::Empty,
                Begin::Ready(conn::Body::Slice(range)) => {
                    Body::Slice(range.start - start..range.end - start)
                }
                Begin::Ready(conn::Body::Owned(bytes)) => Body::Owned(bytes),
                Begin::Collecting => {
                    collecting = true;
                    Body::Empty
                }
                Begin::Reject(err) => {
                    self.fail(&err);
                    return Ok(());
                }
            }
        };
        let mut parts = request::Built::new(request::Parts {
            buf: chunk.clone().unbind(),
            base: start,
            method: head.method,
            target: head.target,
            path,
            query,
            version: head.version,
            headers: SmallVec::new(),
            body,
        });
        // Extended in place: collecting into a new SmallVec and moving it into the
        // request measured a 136-byte copy per request.
        parts.get_mut().headers.extend(head.headers.drain(..));
        self.core.recycle(head.headers);
        if collecting {
            let route = Routed::keep(lookup);
            self.core.hold(Pending {
                parts: parts.take(),
                framing,
                route,
            });
            return Ok(());
        }
        self.dispatch(py, disp, &mut parts, lookup, framing)
    }

    /// Answers a request that could not be parsed and stops reading.
    fn fail(&mut self, err: &ParseError) {
        self.fail_with(err.status(), err.reason());
    }

    /// Answers `status` with `reason`, closes after it and stops reading.
    fn fail_with(&mut self, status: u16, reason: &str) {
        self.may_be_sending = true;
        let mut bytes = Vec::new();
        let sent = encode::encode_error(&mut bytes, status, reason, self.common());
        if let Some(metrics) = &self.disp.metrics {
            metrics.observe(None, sent.status, std::time::Duration::ZERO);
        }
        if let Some(access) = &self.disp.access {
            Python::attach(|py| {
                access.record(
                    py,
                    &Entry {
                        client: &self.client_text,
                        method: b"",
                        target: b"",
                        version: "-",
                        status: sent.status,
                        bytes: sent.body_bytes,
                        duration: std::time::Duration::ZERO,
                        request_id: b"",
                        wall: unix_time(std::time::SystemTime::now()),
                    },
                );
            });
        }
        self.core.emit(bytes);
        self.core.stop_after_response();
    }

    /// A request or answer with this framing is the connection's last: read
    /// nothing after it (its own streamed body is still read, `Core::last_request`).
    fn note_framing(&mut self, framing: Framing) {
        if !framing.keep_alive {
            self.core.last_request();
        }
    }

    /// The framing for an answer to `parts`: closing when its streamed body was not
    /// read to its end (still arriving, or failed: the rest of it is never read).
    /// The same for any answer but the `101` to a WebSocket handshake, which left
    /// the bytes after it unread.
    #[inline] // its common answer (no streamed body, no upgrade) is one check
    fn close_if_upload_unfinished(
        &mut self,
        parts: &request::Parts,
        mut framing: Framing,
    ) -> Framing {
        if Self::upload_unfinished(parts) || framing.upgrade {
            self.may_be_sending |= !framing.upgrade;
            framing.keep_alive = false;
            framing.upgrade = false;
            self.note_framing(framing);
        }
        framing
    }

    /// This connection is over (lost, or handed to another protocol): nothing more
    /// is read or written, and the transport <-> protocol and completion cycles break.
    fn detach(&mut self) {
        self.core.detach();
        self.transport = None;
        self.write = None;
        self.self_ref = None;
        self.task_kwargs = None;
        self.plain_task_kwargs = None;
        self.create_task = None;
        self.event_loop = None;
        self.end_iteration = None;
        self.later = None;
    }

    /// Parses input that waited in the buffer (after a pause), as if it just
    /// arrived; returns whether there was any to parse.
    fn drain_buffered(&mut self, py: Python<'_>) -> PyResult<bool> {
        let disp = &*self.disp;
        let env = env(disp);
        let Some(buffered) = self.core.take_buffered(&env) else {
            return Ok(false);
        };
        let chunk = PyBytes::new(py, &buffered);
        self.process(py, &chunk, 0).map(|()| true)
    }
}

/// What the core asks of the worker while it reads: its limits, and whether a
/// handler slot is free.
fn env(disp: &Shared) -> Env<'_, impl Fn() -> bool + Copy + '_> {
    Env {
        limits: &disp.limits,
        max_pipelined: disp.max_pipelined,
        room: || disp.overload.has_room(),
    }
}
