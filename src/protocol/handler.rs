//! Running a handler: the route's handler called on its request (inline, or as a
//! task whose completion fills its place in the output queue), and its result turned
//! into bytes, the one place that does so (with `respond.rs`). The core's own answers
//! (404, 405, the shed 503) are encoded here too.

use std::time::Instant;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::current::{self, CurrentRequest};
use super::respond::{encode_error, encode_result, is_coroutine, Encoded};
use super::Shared;
use super::{stream, Completion, Connection, Running};
use crate::ffi::request_reuse;
use crate::http1::encode::{self, Framing};
use crate::pyrefs;
use crate::request::{self, Exchange, Request};
use crate::response::{Response, TEXT_PLAIN};
use crate::router::params::ParamValue;
use crate::router::tree::Lookup;
use crate::shared::Route;

impl Connection {
    /// Runs the handler `lookup` found for one complete request, or answers 404, 405
    /// or the shed 503 itself (through the app's `unmatched` handler when it has
    /// middleware or its own not-found or method-not-allowed handler).
    pub(super) fn dispatch(
        &mut self,
        py: Python<'_>,
        disp: &Shared,
        parts: &mut request::Built,
        lookup: Lookup<'_>,
        framing: Framing,
    ) -> PyResult<()> {
        disp.requests_served
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.served += 1;
        self.note_framing(framing);
        let exchange = self.exchange_for(py, parts.get());
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
                if let Some(unmatched) = &disp.unmatched {
                    // The app's middleware sees the core's answer (the handler does
                    // not run): a CORS header on it lets a browser read it.
                    let extra = PyDict::new(py);
                    extra.set_item(pyo3::intern!(py, "answer"), Py::new(py, resp)?)?;
                    let call = Call {
                        path_params: None,
                        extra: Some(extra),
                        pattern: None,
                    };
                    return self.call_handler(py, disp, unmatched, parts, exchange, call, framing);
                }
                self.emit_response(py, &resp, framing, parts.get(), &exchange);
                return Ok(());
            }
        }
        // A hosted app gets every request but those of veter's own routes (metrics).
        if let (Some(hosted), false) = (&disp.hosted, matches!(lookup, Lookup::Found { .. })) {
            let call = Call {
                path_params: None,
                extra: None,
                pattern: None,
            };
            let route = match &disp.hosted_ws {
                // A WebSocket handshake (see `Connection::process`).
                Some(entry) if framing.upgrade => entry,
                _ => hosted,
            };
            return self.call_handler(py, disp, route, parts, exchange, call, framing);
        }
        let (route, params) = match lookup {
            Lookup::Found { route, params } => {
                exchange.set_route(route);
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
                self.emit_response(py, &resp, framing, parts.get(), &exchange);
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
                self.emit_response(py, &resp, framing, parts.get(), &exchange);
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
    pub(super) fn call_handler(
        &mut self,
        py: Python<'_>,
        disp: &Shared,
        route: &Route,
        parts: &mut request::Built,
        exchange: Exchange,
        call: Call<'_>,
        framing: Framing,
    ) -> PyResult<()> {
        let Call {
            path_params,
            extra,
            pattern,
        } = call;
        // The one place a request object is made: a second one (for hosted apps) had
        // LLVM keep `Py::new` out of line, +15 instructions per request (callgrind).
        // Held as `Bound`: dropping it is a decref, where a `Py` first asks a
        // thread-local whether the thread is attached (callgrind: docs/design.md).
        let params = path_params.as_ref().map(|d| d.clone().unbind());
        // The connection's spare object takes the request in where it is: built and
        // moved in whole, the ~400-byte value measured two copies and a full drop.
        let request = match self.spare.take() {
            Some(spare) => {
                let pieces = (parts.take(), exchange, params, pattern);
                let renewed =
                    request_reuse::renew(spare.into_bound(py), pieces, |request, pieces| {
                        let (parts, exchange, params, route) = pieces;
                        request.renew(py, parts, exchange, params, route);
                    });
                match renewed {
                    Ok(request) => request,
                    Err((parts, exchange, params, route)) => {
                        self.new_request(py, disp, parts, exchange, params, route)?
                    }
                }
            }
            // No spare (an `async def` handler's request, a connection's first): the
            // value is built where it is placed, not moved through a `Result` first
            // (callgrind: async +90 that way).
            None => self.new_request(py, disp, parts.take(), exchange, params, pattern)?,
        };
        let mut kwargs = path_params.or(extra);
        if let Some(asgi) = &disp.asgi {
            if disp.hosted.as_ref().is_some_and(|h| std::ptr::eq(h, route)) {
                return self.call_asgi(py, disp, asgi, request.unbind(), framing);
            }
            if disp
                .hosted_ws
                .as_ref()
                .is_some_and(|w| std::ptr::eq(w, route))
            {
                kwargs = Some(self.websocket_scope(py, asgi, request.as_unbound())?);
            }
        }
        // The handler sees this request (current.rs): in the context when it runs as a
        // task, in the thread's slot when a plain `def` handler runs inline.
        if route.is_async {
            let _current = CurrentRequest::enter(disp, &request)?;
            return self
                .invoke(py, disp, route, request, kwargs, framing)
                .map(drop);
        }
        let answered = current::inline(request, |request| {
            self.invoke(py, disp, route, request, kwargs, framing)
        })?;
        // Kept for the next request only when the answer left nobody else holding
        // it (a handler that kept its request keeps it as it was): checked once the
        // slot has let go of it.
        if let Some(request) = answered {
            if request_reuse::sole_reference(&request) && request.get().reusable(py) {
                self.spare = Some(request.unbind());
            }
        }
        Ok(())
    }

    /// Calls `route`'s handler on `request` (the rest of `call_handler`) and answers
    /// it, or starts its task; gives the request back when its answer was emitted
    /// here (the connection may keep it for the next request).
    // Into `call_handler`, as the code it was: out of line, its call measured ~50
    // instructions more per request than the slot's look-up saves (callgrind).
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn invoke<'py>(
        &mut self,
        py: Python<'py>,
        disp: &Shared,
        route: &Route,
        request: Bound<'py, Request>,
        kwargs: Option<Bound<'py, PyDict>>,
        framing: Framing,
    ) -> PyResult<Option<Bound<'py, Request>>> {
        let measure = disp.overload.queue_timeout.is_some() && !route.is_async;
        if measure && disp.overload.saturated() {
            if let Some(run) = &disp.run_deferred {
                // Saturated: read everything first, run this handler after (overload.rs),
                // as a task that carries the request in its context.
                let _in_task = CurrentRequest::enter(disp, &request)?;
                let handler = route.handler.clone_ref(py);
                return self
                    .defer_handler(py, run, handler, request.unbind(), kwargs, framing)
                    .map(|()| None);
            }
        }
        let began = measure.then(Instant::now);
        let called = match &kwargs {
            None => route.handler.bind(py).call1((&request,)),
            Some(kw) => route.handler.bind(py).call((&request,), Some(kw)),
        };
        if let Some(began) = began {
            disp.overload.note_work(began.elapsed());
        }
        let result = match called {
            Ok(r) => r,
            Err(err) => {
                self.emit_error(py, request.as_unbound(), err, framing);
                return Ok(None);
            }
        };
        if route.is_async {
            self.start_task(py, &result, request.unbind(), framing, true)
                .map(|()| None)
        } else if is_coroutine(&result) {
            // A `def` handler that returned an awaitable: its task gets the context.
            let _in_task = CurrentRequest::enter(disp, &request)?;
            self.start_task(py, &result, request.unbind(), framing, true)
                .map(|()| None)
        } else {
            self.emit_result(py, request.as_unbound(), &result, framing);
            Ok(Some(request))
        }
    }

    /// A new request object (no spare to renew).
    #[inline(always)] // as the one `Py::new` site of `call_handler` (see there)
    #[allow(clippy::inline_always)]
    fn new_request<'py>(
        &self,
        py: Python<'py>,
        disp: &Shared,
        parts: request::Parts,
        exchange: Exchange,
        params: Option<Py<PyDict>>,
        route: Option<Py<PyString>>,
    ) -> PyResult<Bound<'py, Request>> {
        let client = self.client.clone_ref(py);
        let value = Request::new(
            parts,
            exchange,
            params,
            client,
            disp.app.clone_ref(py),
            route,
        );
        Bound::new(py, value)
    }

    /// Runs `coro` as a task (started eagerly when the dispatcher uses eager tasks
    /// and `eager` allows it) whose answer takes the next slot.
    pub(super) fn start_task(
        &mut self,
        py: Python<'_>,
        coro: &Bound<'_, PyAny>,
        request: Py<Request>,
        framing: Framing,
        eager: bool,
    ) -> PyResult<()> {
        if !(eager && self.task_kwargs.is_some()) {
            return self.start_later_task(py, coro, request, framing);
        }
        let task = match self.new_task(py, coro, eager) {
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
            core_answer: false,
        };
        let seq = self.core.reserve(running, Instant::now());
        self.disp.overload.started(py);
        let Some(conn) = self.self_ref.as_ref().map(|c| c.clone_ref(py)) else {
            return Err(PyTypeError::new_err("connection is not attached"));
        };
        let done = Completion {
            conn,
            seq,
            framing,
            request,
            task: std::sync::OnceLock::new(),
        };
        task.call_method1("add_done_callback", (Py::new(py, done)?,))?;
        Ok(())
    }

    /// `start_task` for a task that is not started eagerly (every one on Python
    /// 3.11): it runs in a later loop turn, so its slot is reserved now, and it runs
    /// `veter.handler_task.run_handler`, which hands the handler's result to the
    /// completion from inside the task: no done-callback's loop turn, no call to ask
    /// the task (1,900 instructions a request on 3.11).
    fn start_later_task(
        &mut self,
        py: Python<'_>,
        coro: &Bound<'_, PyAny>,
        request: Py<Request>,
        framing: Framing,
    ) -> PyResult<()> {
        let Some(conn) = self.self_ref.as_ref().map(|c| c.clone_ref(py)) else {
            return Err(PyTypeError::new_err("connection is not attached"));
        };
        // Nothing reserves between here and `reserve` below: the number holds.
        let seq = self.core.next_seq();
        let done = Py::new(
            py,
            Completion {
                conn,
                seq,
                framing,
                request: request.clone_ref(py),
                task: std::sync::OnceLock::new(),
            },
        )?;
        let task = pyrefs::get(py)?
            .run_handler
            .bind(py)
            .call1((coro, done.bind(py)))
            .and_then(|runner| self.new_task(py, &runner, false));
        let task = match task {
            Ok(t) => t,
            Err(err) => {
                self.emit_error(py, &request, err, framing);
                return Ok(());
            }
        };
        let _ = done.get().task.set(task.clone().unbind());
        let running = Running {
            task: task.unbind(),
            framing,
            request,
            core_answer: false,
        };
        let reserved = self.core.reserve(running, Instant::now());
        debug_assert_eq!(reserved, seq, "a slot was reserved while the task was made");
        self.disp.overload.started(py);
        Ok(())
    }

    /// A task for `coro`, started eagerly when the dispatcher uses eager tasks and
    /// `eager` allows it.
    pub(super) fn new_task<'py>(
        &self,
        py: Python<'py>,
        coro: &Bound<'py, PyAny>,
        eager: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let kwargs = match &self.task_kwargs {
            Some(kwargs) if eager => Some(kwargs),
            _ => self.plain_task_kwargs.as_ref(),
        };
        match (kwargs, &self.create_task) {
            (Some(kwargs), _) => self
                .disp
                .task_type
                .bind(py)
                .call((coro,), Some(kwargs.bind(py))),
            (None, Some(create)) => create.bind(py).call1((coro,)),
            (None, None) => Err(PyTypeError::new_err("connection has no event loop")),
        }
    }

    /// Encodes a handler's return value (or its error) for the slot that is next.
    pub(super) fn emit_result(
        &mut self,
        py: Python<'_>,
        request: &Py<Request>,
        result: &Bound<'_, PyAny>,
        framing: Framing,
    ) {
        let req = request.get();
        // Only the answer to a WebSocket route's upgrade request can be a `101`
        // (`framing.upgrade`): no other result is asked (a failed attribute lookup
        // builds and drops an AttributeError, ~4,900 instructions).
        let framing = if framing.upgrade && stream::is_upgrade(result) {
            framing
        } else {
            self.close_if_upload_unfinished(&req.parts, framing)
        };
        // Encoded where it goes: into the batch (`out`) when nothing waits before
        // it, else into bytes of its own for its slot. Taking `out` out and putting
        // it back (as `common()` borrows all of `self`) measured ~15 instructions
        // more per request (callgrind, pipelined).
        let Connection {
            core,
            disp,
            date,
            ok_head,
            ..
        } = self;
        let common = Self::common_of(disp, date, ok_head).with_request_id(req.exchange.id_bytes());
        let mut own = Vec::new();
        let direct = core.direct();
        let queued = direct.is_none();
        let out = direct.unwrap_or(&mut own);
        let sent = match encode_result(py, common, result, framing, out) {
            Ok(Encoded::Whole(sent)) => sent,
            Ok(Encoded::Stream(mut plan)) => {
                plan.request = Some(request.clone_ref(py));
                // The stream's head follows what the batch held, as one piece.
                let head = std::mem::take(out);
                return self.queue_stream(head, plan);
            }
            Err(err) => encode_error(py, disp, common, request, err, framing, out),
        };
        self.record_response(py, &req.parts, &req.exchange, sent);
        if queued {
            self.core.emit(own);
        }
    }

    pub(super) fn emit_error(
        &mut self,
        py: Python<'_>,
        request: &Py<Request>,
        err: PyErr,
        framing: Framing,
    ) {
        let mut bytes = Vec::new();
        let req = request.get();
        let framing = self.close_if_upload_unfinished(&req.parts, framing);
        let common = self.common().with_request_id(req.exchange.id_bytes());
        let sent = encode_error(py, &self.disp, common, request, err, framing, &mut bytes);
        self.record_response(py, &req.parts, &req.exchange, sent);
        self.core.emit(bytes);
    }

    /// Emits a response the core made itself (404, 405, 503) for a routed head.
    pub(super) fn emit_response(
        &mut self,
        py: Python<'_>,
        resp: &Response,
        framing: Framing,
        parts: &request::Parts,
        exchange: &Exchange,
    ) {
        let framing = self.close_if_upload_unfinished(parts, framing);
        let disp = &*self.disp;
        let common = encode::Common {
            server_line: &disp.server_line,
            date_line: &self.date,
            request_id: exchange.id_bytes(),
            ok_head: b"",
            request_id_prefix: disp
                .request_ids
                .as_ref()
                .map_or(b"", |ids| ids.line_prefix()),
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
}

/// How `call_handler` calls a handler: with the route's path parameters (which the
/// request shows too), or with keywords of the core's own (`allow` for the app's
/// method-not-allowed answer); the route's pattern, None for no route.
pub(super) struct Call<'py> {
    path_params: Option<Bound<'py, PyDict>>,
    extra: Option<Bound<'py, PyDict>>,
    pattern: Option<Py<PyString>>,
}
