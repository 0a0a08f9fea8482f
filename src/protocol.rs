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

use std::time::Instant;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use smallvec::SmallVec;

use crate::access::Entry;
use crate::conn::{self, Begin, Core, Env, Event, Feed};
use crate::dispatcher::{Dispatcher, Route};
use crate::http1::encode::{self, Framing};
use crate::http1::error::ParseError;
use crate::http1::parse::{BodyKind, Head, Version};
use crate::request::{self, Body, Exchange, Request};
use crate::response::{Response, TEXT_PLAIN};
use crate::router::params::ParamValue;
use crate::router::tree::{Lookup, Router};

mod completion;
mod current;
pub use current::inline_request;
mod deferred;
mod respond;
mod stream;
mod timers;
mod upload;

use respond::{encode_error, encode_result, is_coroutine, Encoded};

pub use completion::Completion;
use current::CurrentRequest;
pub use stream::{StreamWriter, Streamed, Upgrade};

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

/// A route lookup kept beyond the input it was made from (a request whose body
/// arrives in later reads): the route is looked up once per request.
enum Routed {
    Found {
        route: usize,
        params: Vec<ParamValue<'static>>,
    },
    NotFound,
    MethodNotAllowed {
        allow: String,
    },
}

impl Routed {
    fn keep(lookup: Lookup<'_>) -> Self {
        match lookup {
            Lookup::Found { route, params } => Routed::Found {
                route,
                params: params.into_iter().map(ParamValue::into_owned).collect(),
            },
            Lookup::NotFound => Routed::NotFound,
            Lookup::MethodNotAllowed { allow } => Routed::MethodNotAllowed {
                allow: allow.to_owned(),
            },
        }
    }

    fn lookup(&mut self) -> Lookup<'_> {
        match self {
            Routed::Found { route, params } => Lookup::Found {
                route: *route,
                params: std::mem::take(params),
            },
            Routed::NotFound => Lookup::NotFound,
            Routed::MethodNotAllowed { allow } => Lookup::MethodNotAllowed { allow },
        }
    }
}

/// A handler still running: its task, how to answer, and its request.
pub struct Running {
    task: Py<PyAny>,
    framing: Framing,
    request: Py<Request>,
}

/// What to do with the transport once the connection is no longer borrowed.
#[derive(Default)]
struct Actions {
    write: Option<Py<PyBytes>>,
    close: bool,
    pause_reading: bool,
    resume_reading: bool,
    /// A streamed response reached the front: its object and whether to send a body.
    start_stream: Option<(Py<PyAny>, bool)>,
}

#[pyclass(module = "veter._core", name = "Connection")]
pub struct Connection {
    disp: Py<Dispatcher>,
    id: u64,
    /// The HTTP state: input, output queue, pauses, timers.
    core: Core<PyShell>,
    transport: Option<Py<PyAny>>,
    write: Option<Py<PyAny>>,
    task_kwargs: Option<Py<PyDict>>,
    create_task: Option<Py<PyAny>>,
    client: Py<PyAny>,
    /// The peer's address as the access log writes it (only when it is on).
    client_text: String,
    /// The peer is a trusted proxy: its requests' proxy headers are read (proxy.rs).
    proxied: bool,
    /// This connection as a Python object, for task completions; cleared when lost.
    self_ref: Option<Py<Connection>>,
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
    /// The `Date` line, refreshed once per read and per finished handler (a new
    /// line only when the second changed: `set_clock`), and its unix second.
    date: encode::DateLine,
    date_second: u64,
    /// The wall clock at `clock.0`: access log times are derived from it, so a line
    /// costs one monotonic clock read (its duration), not two.
    clock: (Instant, std::time::SystemTime),
}

impl Connection {
    fn common(&self) -> encode::Common<'_> {
        let disp = self.disp.get();
        encode::Common {
            server_line: &disp.server_line,
            date_line: &self.date,
            request_id_line: b"",
            request_id_name: disp.request_ids.as_ref().map_or("", |ids| ids.name()),
        }
    }

    /// The id and start of a request about to be routed (see `request_id.rs`).
    fn exchange_for(&self, py: Python<'_>, parts: &request::Parts) -> Exchange {
        let disp = self.disp.get();
        let (id_line, id_start) = match &disp.request_ids {
            Some(ids) => {
                let head = &parts.buf.bind(py).as_bytes()[parts.base..];
                ids.line_for(parts.first_header(head, ids.header.as_bytes()))
            }
            None => (Vec::new(), 0),
        };
        Exchange {
            id_line,
            id_start,
            started: Some(self.core.last_activity),
            route: None,
            forwarded: if self.proxied {
                Self::forwarded(disp, py, parts)
            } else {
                None
            },
            secure: disp.secure,
        }
    }

    /// What a trusted proxy's headers say about this request (proxy.rs).
    #[cold]
    #[inline(never)]
    fn forwarded(
        disp: &Dispatcher,
        py: Python<'_>,
        parts: &request::Parts,
    ) -> Option<Box<crate::proxy::Forwarded>> {
        let trust = disp.proxies.as_ref()?;
        let head = &parts.buf.bind(py).as_bytes()[parts.base..];
        let headers = parts
            .headers
            .iter()
            .map(|h| (&head[h.name.clone()], &head[h.value.clone()]));
        crate::proxy::resolve(trust, headers).map(Box::new)
    }

    /// The clocks read at `now`/`wall`, and the `Date` line for them: a new line
    /// only when the second changed (a compare, not a thread-local cache lookup and
    /// a 37-byte copy per read).
    fn set_clock(&mut self, now: Instant, wall: std::time::SystemTime) {
        let second = wall
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if second != self.date_second {
            self.date = encode::date_line_at(wall);
            self.date_second = second;
        }
        self.clock = (now, wall);
    }

    /// Counts a response for the metrics and writes its access log line (each when on).
    fn record_response(
        &self,
        py: Python<'_>,
        parts: &request::Parts,
        exchange: &Exchange,
        sent: encode::Sent,
    ) {
        let disp = self.disp.get();
        if disp.metrics.is_none() && disp.access.is_none() {
            return;
        }
        let now = Instant::now();
        let took = exchange
            .started
            .map_or_else(Default::default, |s| now.saturating_duration_since(s));
        if let Some(metrics) = &disp.metrics {
            metrics.observe(exchange.route, sent.status, took);
        }
        let Some(access) = &disp.access else {
            return;
        };
        let head = &parts.buf.bind(py).as_bytes()[parts.base..];
        if access.skips(&head[parts.path.clone()]) {
            return;
        }
        let forwarded_client = exchange.forwarded.as_ref().and_then(|f| f.client_text());
        access.record(
            py,
            &Entry {
                client: forwarded_client.as_deref().unwrap_or(&self.client_text),
                method: &head[parts.method.clone()],
                target: &head[parts.target.clone()],
                version: parts.version_text(),
                status: sent.status,
                bytes: sent.body_bytes,
                duration: took,
                request_id: exchange.id_bytes(),
                wall: self.clock.1 + now.saturating_duration_since(self.clock.0),
            },
        );
    }

    pub fn new(py: Python<'_>, disp: Py<Dispatcher>) -> Self {
        let id = disp.get().next_id();
        let now = Instant::now();
        Connection {
            disp,
            id,
            core: Core::new(now),
            transport: None,
            write: None,
            task_kwargs: None,
            create_task: None,
            client: py.None(),
            client_text: String::new(),
            proxied: false,
            self_ref: None,
            served: 0,
            batch_start: now,
            sock: None,
            first_read: true,
            event_loop: None,
            end_iteration: None,
            date: encode::date_line(),
            date_second: 0,
            clock: (now, std::time::SystemTime::now()),
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

    fn framing_for(&self, head: &Head, is_head: bool) -> Framing {
        let shutting = self
            .disp
            .get()
            .last_answers
            .load(std::sync::atomic::Ordering::Relaxed);
        Framing {
            http10: head.version == Version::Http10,
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
            let disp = self.disp.get();
            let env = Env {
                limits: &disp.limits,
                max_pipelined: disp.max_pipelined,
                room: || disp.overload.has_room(),
            };
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
                        let disp = self.disp.clone_ref(py);
                        self.dispatch(py, disp.get(), parts, route.lookup(), framing)?;
                    }
                }
                Event::Upload { bytes } => self.feed_upload(py, bytes),
                Event::UploadEnd { bytes, end, upload } => {
                    Self::end_upload(py, bytes, &end, upload);
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
    fn start_request(
        &mut self,
        py: Python<'_>,
        chunk: &Bound<'_, PyBytes>,
        pos: &mut usize,
        start: usize,
        mut head: Head,
    ) -> PyResult<()> {
        let data = chunk.as_bytes();
        // Ranges stay relative to the head's first byte (`base`): no copying or
        // shifting of the header spans the parser produced.
        let (path, query) = request::split_target(&data[start..], head.target.clone());
        let is_head = &data[start + head.method.start..start + head.method.end] == b"HEAD";
        let mut framing = self.framing_for(&head, is_head);
        // The route is looked up once, here: it decides how the body is read, and
        // the handler is called with what it found.
        let disp_ref = self.disp.clone_ref(py);
        let disp = disp_ref.get();
        let lookup = route_for(&disp.router, &data[start..], &head.method, &path);
        let (websocket, stream_body) = match &lookup {
            Lookup::Found { route, .. } => {
                let route = &disp.routes[*route];
                (route.websocket, route.stream_body)
            }
            _ => (false, false),
        };
        let mut parts = request::Parts {
            buf: chunk.clone().unbind(),
            base: start,
            method: head.method,
            target: head.target,
            path,
            query,
            version: head.version,
            headers: SmallVec::new(),
            body: Body::Empty,
        };
        // Extended in place: collecting into a new SmallVec and moving it into the
        // request measured a 136-byte copy per request.
        parts.headers.extend(head.headers.drain(..));
        self.core.recycle(head.headers);
        parts.body = if matches!(head.body, BodyKind::Empty) {
            if head.upgrade && framing.keep_alive && websocket {
                // Nothing after this head is HTTP if the handler accepts: keep it aside.
                framing.upgrade = true;
                self.core.upgrade(data, pos);
            }
            Body::Empty
        } else if stream_body {
            let body = self.start_upload(py, &head.body, head.expect_continue)?;
            parts.body = body;
            return self.dispatch(py, disp, parts, lookup, framing);
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
                    let route = Routed::keep(lookup);
                    self.core.hold(Pending {
                        parts,
                        framing,
                        route,
                    });
                    return Ok(());
                }
                Begin::Reject(err) => {
                    self.fail(&err);
                    return Ok(());
                }
            }
        };
        self.dispatch(py, disp, parts, lookup, framing)
    }

    /// Answers a request that could not be parsed and stops reading.
    fn fail(&mut self, err: &ParseError) {
        self.fail_with(err.status(), err.reason());
    }

    /// Answers `status` with `reason`, closes after it and stops reading.
    fn fail_with(&mut self, status: u16, reason: &str) {
        let mut bytes = Vec::new();
        let sent = encode::encode_error(&mut bytes, status, reason, self.common());
        if let Some(metrics) = &self.disp.get().metrics {
            metrics.observe(None, sent.status, std::time::Duration::ZERO);
        }
        if let Some(access) = &self.disp.get().access {
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
                        wall: std::time::SystemTime::now(),
                    },
                );
            });
        }
        self.core.emit(bytes);
        self.core.stop_after_response();
    }

    /// An answer with this framing closes the connection after it: read no more.
    fn note_framing(&mut self, framing: Framing) {
        if !framing.keep_alive {
            self.core.stop_after_response();
        }
    }

    /// The framing for an answer to `parts`: closing when its streamed body is still
    /// being read (the rest of it is never read).
    /// The same for any answer but the `101` to a WebSocket handshake, which left
    /// the bytes after it unread.
    fn close_if_upload_open(&mut self, parts: &request::Parts, mut framing: Framing) -> Framing {
        if Self::upload_open(parts) || framing.upgrade {
            framing.keep_alive = false;
            framing.upgrade = false;
            self.note_framing(framing);
        }
        framing
    }

    /// Runs the handler `lookup` found for one complete request (or answers 404,
    /// 405 or 503 itself).
    fn dispatch(
        &mut self,
        py: Python<'_>,
        disp: &Dispatcher,
        parts: request::Parts,
        lookup: Lookup<'_>,
        framing: Framing,
    ) -> PyResult<()> {
        disp.requests_served
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.served += 1;
        self.note_framing(framing);
        let mut exchange = self.exchange_for(py, &parts);
        if disp.overload.queue_timeout.is_some() {
            let since = self.core.waiting_since.unwrap_or(self.batch_start);
            if disp
                .overload
                .too_late(since.elapsed() + disp.overload.queued_work())
            {
                // Waited too long already: a cheap 503 now beats a slow 200 nobody
                // is still waiting for.
                disp.overload.note_shed();
                let resp =
                    Response::new_plain(py, 503, b"Service Unavailable: overloaded", TEXT_PLAIN)
                        .with_header("Retry-After", "1");
                self.emit_response(py, &resp, framing, &parts, &exchange);
                return Ok(());
            }
        }
        let (route, params) = match lookup {
            Lookup::Found { route, params } => {
                exchange.route = Some(route);
                (&disp.routes[route], params)
            }
            Lookup::NotFound => {
                if let Some(unmatched) = &disp.unmatched {
                    let call = Call {
                        path_params: None,
                        extra: None,
                        pattern: None,
                    };
                    return self.call_handler(py, disp, unmatched, parts, exchange, call, framing);
                }
                let resp = Response::new_plain(py, 404, b"Not Found", TEXT_PLAIN);
                self.emit_response(py, &resp, framing, &parts, &exchange);
                return Ok(());
            }
            Lookup::MethodNotAllowed { allow } => {
                if let Some(unmatched) = &disp.unmatched {
                    let extra = PyDict::new(py);
                    extra.set_item(pyo3::intern!(py, "allow"), allow)?;
                    let call = Call {
                        path_params: None,
                        extra: Some(extra),
                        pattern: None,
                    };
                    return self.call_handler(py, disp, unmatched, parts, exchange, call, framing);
                }
                let resp = Response::new_plain(py, 405, b"Method Not Allowed", TEXT_PLAIN)
                    .with_header("Allow", allow);
                self.emit_response(py, &resp, framing, &parts, &exchange);
                return Ok(());
            }
        };
        let kwargs = if params.is_empty() {
            None
        } else {
            let dict = PyDict::new(py);
            for (name, value) in route.param_names.iter().zip(params) {
                match value {
                    ParamValue::Str(s) => dict.set_item(name.bind(py), PyString::new(py, &s))?,
                    ParamValue::Int(i) => dict.set_item(name.bind(py), i)?,
                }
            }
            Some(dict)
        };
        let call = Call {
            path_params: kwargs,
            extra: None,
            pattern: Some(route.pattern.clone_ref(py)),
        };
        self.call_handler(py, disp, route, parts, exchange, call, framing)
    }

    /// Builds the request and runs `route`'s handler on it (the rest of `dispatch`).
    #[allow(clippy::too_many_arguments)] // one request's pieces, moved in once
    fn call_handler(
        &mut self,
        py: Python<'_>,
        disp: &Dispatcher,
        route: &Route,
        parts: request::Parts,
        exchange: Exchange,
        call: Call<'_>,
        framing: Framing,
    ) -> PyResult<()> {
        let Call {
            path_params,
            extra,
            pattern,
        } = call;
        let request = Py::new(
            py,
            Request::new(
                parts,
                exchange,
                path_params.as_ref().map(|d| d.clone().unbind()),
                self.client.clone_ref(py),
                disp.app.clone_ref(py),
                pattern,
            ),
        )?;
        let kwargs = path_params.or(extra);
        // The handler sees this request (current.rs): in the context when it runs as a
        // task, in the thread's slot when a plain `def` handler runs inline.
        let _current = CurrentRequest::for_handler(disp, route.is_async, request.bind(py))?;
        let measure = disp.overload.queue_timeout.is_some() && !route.is_async;
        if measure && disp.overload.saturated() {
            if let Some(run) = &disp.run_deferred {
                // Saturated: read everything first, run this handler after (overload.rs),
                // as a task that carries the request in its context.
                let _in_task = CurrentRequest::enter(disp, request.bind(py))?;
                let handler = route.handler.clone_ref(py);
                return self.defer_handler(py, run, handler, request, kwargs, framing);
            }
        }
        let began = measure.then(Instant::now);
        let called = match &kwargs {
            None => route.handler.bind(py).call1((request.clone_ref(py),)),
            Some(kw) => route
                .handler
                .bind(py)
                .call((request.clone_ref(py),), Some(kw)),
        };
        if let Some(began) = began {
            disp.overload.note_work(began.elapsed());
        }
        let result = match called {
            Ok(r) => r,
            Err(err) => {
                self.emit_error(py, &request, err, framing);
                return Ok(());
            }
        };
        if route.is_async {
            self.start_task(py, &result, request, framing, true)
        } else if is_coroutine(&result) {
            // A `def` handler that returned an awaitable: its task gets the context.
            let _in_task = CurrentRequest::enter(disp, request.bind(py))?;
            self.start_task(py, &result, request, framing, true)
        } else {
            self.emit_result(py, &request, &result, framing);
            Ok(())
        }
    }

    /// Runs `coro` as a task (started eagerly when the dispatcher uses eager tasks
    /// and `eager` allows it) whose answer takes the next slot.
    fn start_task(
        &mut self,
        py: Python<'_>,
        coro: &Bound<'_, PyAny>,
        request: Py<Request>,
        framing: Framing,
        eager: bool,
    ) -> PyResult<()> {
        let kwargs = if eager {
            self.task_kwargs.as_ref()
        } else {
            None
        };
        let task = match (&self.create_task, kwargs) {
            (_, Some(kwargs)) => {
                let task_type = self
                    .disp
                    .get()
                    .eager_task
                    .as_ref()
                    .expect("kwargs imply eager");
                task_type.bind(py).call((coro,), Some(kwargs.bind(py)))
            }
            (Some(create), None) => create.bind(py).call1((coro,)),
            (None, None) => Err(PyTypeError::new_err("connection has no event loop")),
        };
        let task = match task {
            Ok(t) => t,
            Err(err) => {
                self.emit_error(py, &request, err, framing);
                return Ok(());
            }
        };
        if task.call_method0("done")?.is_truthy()? {
            // Finished without suspending (eager start): no loop iteration spent.
            match task.call_method0("result") {
                Ok(result) => self.emit_result(py, &request, &result, framing),
                Err(err) => self.emit_error(py, &request, err, framing),
            }
            return Ok(());
        }
        let running = Running {
            task: task.clone().unbind(),
            framing,
            request: request.clone_ref(py),
        };
        let seq = self.core.reserve(running, Instant::now());
        self.disp.get().overload.started(py);
        let Some(conn) = self.self_ref.as_ref().map(|c| c.clone_ref(py)) else {
            return Err(PyTypeError::new_err("connection is not attached"));
        };
        let done = Completion {
            conn,
            seq,
            framing,
            request,
        };
        task.call_method1("add_done_callback", (Py::new(py, done)?,))?;
        Ok(())
    }

    /// Encodes a handler's return value (or its error) for the slot that is next.
    fn emit_result(
        &mut self,
        py: Python<'_>,
        request: &Py<Request>,
        result: &Bound<'_, PyAny>,
        framing: Framing,
    ) {
        let mut bytes = self.core.direct().map(std::mem::take).unwrap_or_default();
        let req = request.get();
        // Only the answer to a WebSocket route's upgrade request can be a `101`
        // (`framing.upgrade`): no other result is asked (a failed attribute lookup
        // builds and drops an AttributeError, ~4,900 instructions).
        let framing = if framing.upgrade && stream::is_upgrade(result) {
            framing
        } else {
            self.close_if_upload_open(&req.parts, framing)
        };
        let common = self.common().with_request_id(&req.exchange.id_line);
        let sent = match encode_result(py, common, result, framing, &mut bytes) {
            Ok(Encoded::Whole(sent)) => sent,
            Ok(Encoded::Stream(mut plan)) => {
                plan.request = Some(request.clone_ref(py));
                return self.queue_stream(bytes, plan);
            }
            Err(err) => encode_error(
                py,
                self.disp.get(),
                common,
                request,
                err,
                framing,
                &mut bytes,
            ),
        };
        self.record_response(py, &req.parts, &req.exchange, sent);
        match self.core.direct() {
            Some(out) => *out = bytes,
            None => self.core.emit(bytes),
        }
    }

    fn emit_error(&mut self, py: Python<'_>, request: &Py<Request>, err: PyErr, framing: Framing) {
        let mut bytes = Vec::new();
        let req = request.get();
        let framing = self.close_if_upload_open(&req.parts, framing);
        let common = self.common().with_request_id(&req.exchange.id_line);
        let sent = encode_error(
            py,
            self.disp.get(),
            common,
            request,
            err,
            framing,
            &mut bytes,
        );
        self.record_response(py, &req.parts, &req.exchange, sent);
        self.core.emit(bytes);
    }

    /// Emits a response the core made itself (404, 405, 503) for a routed head.
    fn emit_response(
        &mut self,
        py: Python<'_>,
        resp: &Response,
        framing: Framing,
        parts: &request::Parts,
        exchange: &Exchange,
    ) {
        let framing = self.close_if_upload_open(parts, framing);
        let disp = self.disp.get();
        let common = encode::Common {
            server_line: &disp.server_line,
            date_line: &self.date,
            request_id_line: &exchange.id_line,
            request_id_name: disp.request_ids.as_ref().map_or("", |ids| ids.name()),
        };
        let sent = if let Some(out) = self.core.direct() {
            resp.encode_into(py, out, framing, common)
        } else {
            let mut bytes = Vec::new();
            let sent = resp.encode_into(py, &mut bytes, framing, common);
            self.core.emit(bytes);
            sent
        };
        self.record_response(py, parts, exchange, sent);
    }

    /// Moves every ready response at the front of the queue into `out` and says
    /// what to do with the transport.
    fn collect(&mut self, py: Python<'_>) -> Actions {
        let actions = self.core.collect(stream::activate);
        let write = actions.write.then(|| {
            // Copied once into the bytes object the transport takes; `out` keeps its
            // capacity for the next batch.
            let bytes = PyBytes::new(py, &self.core.out).unbind();
            self.core.out.clear();
            bytes
        });
        Actions {
            write,
            close: actions.close,
            pause_reading: actions.pause_reading,
            resume_reading: actions.resume_reading,
            start_stream: actions.start_stream,
        }
    }

    fn perform(
        py: Python<'_>,
        transport: Option<Py<PyAny>>,
        write: Option<Py<PyAny>>,
        actions: Actions,
    ) -> PyResult<()> {
        if let (Some(bytes), Some(write)) = (actions.write, write) {
            write.call1(py, (bytes,))?;
        }
        if let Some(t) = transport {
            if actions.close {
                t.call_method0(py, "close")?;
            } else if actions.pause_reading {
                t.call_method0(py, "pause_reading")?;
            } else if actions.resume_reading {
                t.call_method0(py, "resume_reading")?;
            }
        }
        Ok(())
    }

    /// Runs `f` on the borrowed connection, then acts on the transport unborrowed.
    fn with_borrow(
        slf: &Bound<'_, Self>,
        f: impl FnOnce(&mut Self, Python<'_>) -> PyResult<()>,
    ) -> PyResult<()> {
        let py = slf.py();
        let (transport, write, mut actions) = {
            let mut this = slf.borrow_mut();
            f(&mut this, py)?;
            let actions = this.collect(py);
            let transport = if actions.close || actions.pause_reading || actions.resume_reading {
                this.transport.as_ref().map(|t| t.clone_ref(py))
            } else {
                None
            };
            (
                transport,
                this.write.as_ref().map(|w| w.clone_ref(py)),
                actions,
            )
        };
        let start = actions.start_stream.take();
        Self::perform(py, transport, write, actions)?;
        match start {
            Some((obj, send_body)) => Self::start_pump(slf, &obj, send_body),
            None => Ok(()),
        }
    }

    /// This connection is over (lost, or handed to another protocol): nothing more
    /// is read or written, and the transport <-> protocol and completion cycles break.
    fn detach(&mut self) {
        self.core.detach();
        self.transport = None;
        self.write = None;
        self.self_ref = None;
        self.task_kwargs = None;
        self.create_task = None;
        self.event_loop = None;
        self.end_iteration = None;
    }

    /// Parses input that waited in the buffer (after a pause), as if it just
    /// arrived; returns whether there was any to parse.
    fn drain_buffered(&mut self, py: Python<'_>) -> PyResult<bool> {
        let disp = self.disp.get();
        let env = Env {
            limits: &disp.limits,
            max_pipelined: disp.max_pipelined,
            room: || disp.overload.has_room(),
        };
        let Some(buffered) = self.core.take_buffered(&env) else {
            return Ok(false);
        };
        let chunk = PyBytes::new(py, &buffered);
        self.process(py, &chunk, 0).map(|()| true)
    }
}

/// How `call_handler` calls a handler: with the route's path parameters (which the
/// request shows too), or with keywords of the core's own (`allow` for the app's
/// method-not-allowed answer); the route's pattern, None for no route.
struct Call<'py> {
    path_params: Option<Bound<'py, PyDict>>,
    extra: Option<Bound<'py, PyDict>>,
    pattern: Option<Py<PyString>>,
}

/// The router's answer for a request head whose bytes are `head`: a pattern without
/// parameters straight from the bytes, anything else by the walk.
fn route_for<'a>(
    router: &'a Router,
    head: &'a [u8],
    method: &std::ops::Range<usize>,
    path: &std::ops::Range<usize>,
) -> Lookup<'a> {
    let (method, path) = (&head[method.clone()], &head[path.clone()]);
    match router.exact(method, path) {
        Some(route) => Lookup::Found {
            route,
            params: Vec::new(),
        },
        // The parser only accepts visible ASCII in the method and target.
        None => router.lookup(
            std::str::from_utf8(method).unwrap_or(""),
            std::str::from_utf8(path).unwrap_or(""),
        ),
    }
}

#[pymethods]
impl Connection {
    fn connection_made(slf: &Bound<'_, Self>, transport: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
        let mut this = slf.borrow_mut();
        let disp = this.disp.clone_ref(py);
        let d = disp.get();
        if d.eager_task.is_some() {
            this.task_kwargs = Some(Dispatcher::task_kwargs(py, &event_loop)?.unbind());
        }
        if d.eager_task.is_none() || d.run_deferred.is_some() {
            this.create_task = Some(event_loop.getattr("create_task")?.unbind());
        }
        if d.overload.queue_timeout.is_some() {
            this.end_iteration = Some(disp.bind(py).getattr("_end_iteration")?.unbind());
            this.event_loop = Some(event_loop.clone().unbind());
            let sock = transport.call_method1("get_extra_info", ("socket",))?;
            this.sock = (!sock.is_none()).then(|| sock.unbind());
        }
        let peer = transport.call_method1("get_extra_info", ("peername",))?;
        if let Some(trust) = &d.proxies {
            this.proxied = match peer.cast::<pyo3::types::PyTuple>() {
                Ok(tuple) if !tuple.is_empty() => tuple
                    .get_item(0)?
                    .extract::<String>()
                    .ok()
                    .and_then(|host| host.parse::<std::net::IpAddr>().ok())
                    .is_some_and(|ip| trust.trusts_ip(ip)),
                // A Unix socket's peer: a path, usually empty.
                _ => trust.trusts_unix(),
            };
        }
        if d.access.is_some() {
            // (host, port[, ...]) for TCP; a path (maybe empty) for a Unix socket.
            let host = match peer.cast::<pyo3::types::PyTuple>() {
                Ok(tuple) if !tuple.is_empty() => tuple.get_item(0)?.str()?.to_string(),
                _ => peer.str()?.to_string(),
            };
            this.client_text = host;
        }
        this.client = peer.unbind();
        this.write = Some(transport.getattr("write")?.unbind());
        this.transport = Some(transport.clone().unbind());
        this.self_ref = Some(slf.clone().unbind());
        this.core.last_activity = Instant::now();
        let id = this.id;
        drop(this);
        d.register(id, slf.clone().unbind());
        if d.over_capacity(id, &slf.clone().unbind(), py) {
            // Over the worker's connection cap: accepted, but not served until another
            // connection closes. (Reading cannot be paused here: uvloop starts reading
            // after connection_made returns; the first read is kept and pauses it.)
            slf.borrow_mut().core.pauses.set(conn::Pause::Capacity);
        }
        // A connection accepted just before the drain began (its connection_made runs
        // after the listener closed) is still served: its first response carries
        // `Connection: close`, and the reaper closes it if it sends nothing.
        Ok(())
    }

    fn data_received(slf: &Bound<'_, Self>, data: &Bound<'_, PyBytes>) -> PyResult<()> {
        Self::with_borrow(slf, |this, py| {
            let now = Instant::now();
            this.set_clock(now, std::time::SystemTime::now());
            if let (Some(lp), Some(marker)) = (&this.event_loop, &this.end_iteration) {
                let overload = &this.disp.get().overload;
                let mut since = overload.iteration_start(py, now, lp, marker);
                if this.first_read || overload.may_be_stale(now) {
                    if let Some(sock) = &this.sock {
                        let waited = overload.kernel_wait(py, sock);
                        since = since.min(now.checked_sub(waited).unwrap_or(since));
                    }
                }
                this.first_read = false;
                this.batch_start = since;
            }
            match this
                .core
                .received(data.as_bytes(), now, &this.disp.get().limits)
            {
                Feed::Hold => Ok(()),
                Feed::Direct => this.process(py, data, 0),
                Feed::Joined(joined) => this.process(py, &PyBytes::new(py, &joined), 0),
            }
        })?;
        // Requests held back while a large batch of responses was written: go on
        // with them now unless the transport asked us to pause.
        let mut more = true;
        while more && slf.borrow().core.output_freed() {
            Self::with_borrow(slf, |this, py| {
                more = this.drain_buffered(py)?;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// See `upload.rs`: a paused streamed body may be read again.
    fn _resume_upload(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::resume_upload(slf)
    }

    fn eof_received(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let mut keep_open = false;
        Self::with_borrow(slf, |this, _py| {
            // The client sent everything it will send. Answer what is in flight, then
            // close; an incomplete request is dropped.
            keep_open = this.core.end_of_input();
            Ok(())
        })?;
        Ok(keep_open)
    }

    fn connection_lost(slf: &Bound<'_, Self>, exc: Option<&Bound<'_, PyAny>>) {
        // Why the connection went away does not change what is cleaned up.
        let _ = exc;
        let py = slf.py();
        let (disp, id, pump, unstarted) = {
            let mut this = slf.borrow_mut();
            let pump = this.core.stream.as_mut().and_then(|s| s.task.take());
            // Streamed answers still queued never start: they are told so below.
            let unstarted: Vec<Py<PyAny>> = this
                .core
                .queue
                .iter_mut()
                .filter_map(|slot| slot.stream.take().map(|plan| plan.into_object()))
                .collect();
            this.detach();
            (this.disp.clone_ref(py), this.id, pump, unstarted)
        };
        disp.get().unregister(py, id);
        if let Some(task) = pump {
            // The client is gone: the pump stops and closes its generator.
            if let Err(err) = task.call_method0(py, "cancel") {
                err.print(py);
            }
        }
        for obj in unstarted {
            if let Err(err) = obj.call_method0(py, "_veter_abandon") {
                err.print(py);
            }
        }
    }

    fn pause_writing(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::with_borrow(slf, |this, _py| {
            this.core.set_writing_paused(true, Instant::now());
            Ok(())
        })
    }

    fn resume_writing(slf: &Bound<'_, Self>) -> PyResult<()> {
        let mut waiter = None;
        Self::with_borrow(slf, |this, py| {
            this.core.set_writing_paused(false, Instant::now());
            waiter = this.core.stream.as_mut().and_then(|s| s.waiter.take());
            this.drain_buffered(py).map(drop)
        })?;
        stream::wake(slf.py(), waiter)
    }

    /// Requests in flight on this connection (handlers that have not answered yet).
    #[getter]
    fn in_flight(&self) -> usize {
        self.core.in_flight
    }
}
