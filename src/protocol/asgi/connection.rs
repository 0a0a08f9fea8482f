//! The connection's side of a hosted ASGI app: calling it on a request, putting
//! its answers in the request's place in the queue, and what its task's end means.

use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Instant;

use pyo3::exceptions::asyncio::CancelledError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::run::Run;
use super::{Answer, Cycle, Ending, Reply, State};
use crate::asgi::environ::{self, Wsgi};
use crate::asgi::{scope, Asgi};
use crate::body_stream::BodyStream;
use crate::http1::encode::Framing;
use crate::protocol::current::CurrentRequest;
use crate::protocol::{Connection, Running, Shared};
use crate::pyrefs;
use crate::request::{Body, Request};

/// Called by asyncio when an app's task that did not finish in its eager start ends
/// (Python 3.12+, an app whose last run did not suspend; otherwise `_AsgiRun`
/// tells the cycle instead).
#[pyclass(module = "veter._core", name = "_AsgiDone", frozen)]
pub struct AsgiDone {
    cycle: Py<Cycle>,
}

#[pymethods]
impl AsgiDone {
    fn __call__(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<()> {
        let failure = task_failure(py, task)?;
        Cycle::finish(&self.cycle, py, failure)
    }
}

impl Connection {
    /// Calls the hosted app on one request (the rest of `dispatch` for it).
    pub(in crate::protocol) fn call_asgi(
        &mut self,
        py: Python<'_>,
        disp: &Shared,
        asgi: &Asgi,
        request: Py<Request>,
        framing: Framing,
    ) -> PyResult<()> {
        let body = match &request.get().parts.body {
            Body::Stream(stream) => Some(stream.clone_ref(py)),
            _ => None,
        };
        if let Some(wsgi) = &asgi.wsgi {
            return self.call_wsgi(py, disp, wsgi, request, framing, body);
        }
        let Some((scope, cycle)) = self.new_cycle(py, asgi, &request, framing, body)? else {
            return Ok(());
        };
        let req = request.bind(py);
        let receive = cycle.getattr(py, pyo3::intern!(py, "receive"))?;
        let send = cycle.getattr(py, pyo3::intern!(py, "send"))?;
        // The task copies the context: the request (and its id) stays visible to it.
        let current = CurrentRequest::enter(disp, req)?;
        // How the app's end is learnt. Without eager tasks (Python 3.11) every task
        // ends through the loop, and telling the cycle from inside it costs less
        // than a done callback's loop turn (1,800 instructions a request): the
        // app's coroutine is stepped by `_AsgiRun` (run.rs; 825 fewer than
        // `run_handler`, which still awaits whatever else an app returns).
        // With them, an app that does not suspend ends in its eager start, where
        // asking the task costs less than the extra coroutine (1,000): there the
        // app's coroutine runs as it is, unless the app's last run suspended (its
        // task then ends through the loop, as on 3.11): `Asgi::suspends`.
        let eager = self.task_kwargs.is_some();
        let stepped = !eager || asgi.suspends.load(Ordering::Relaxed);
        let coro = asgi.app.bind(py).call1((scope, receive, send));
        let coro = if stepped {
            coro.and_then(|coro| {
                if let Some(run) = Run::of(&coro, &cycle) {
                    return Ok(Bound::new(py, run)?.into_any());
                }
                let run = &pyrefs::get(py)?.run_handler;
                run.bind(py).call1((coro, cycle.bind(py)))
            })
        } else {
            coro
        };
        let task = coro.and_then(|coro| self.new_task(py, &coro, true));
        drop(current);
        let task = match task {
            Ok(task) => task,
            Err(err) => {
                self.emit_error(py, &request, err, framing);
                return Ok(());
            }
        };
        let (stash, told) = {
            let mut state = cycle.get().locked();
            (state.stash.take(), state.outcome.take())
        };
        let outcome = match told {
            Some(told) => Some(told.err()),
            // (A stepped app's end is told: not told, it suspended.)
            None if !stepped && task.call_method0(pyo3::intern!(py, "done"))?.is_truthy()? => {
                Some(task_failure(py, &task)?)
            }
            None => None,
        };
        let finished = outcome.is_some();
        if eager {
            asgi.suspends.store(!finished, Ordering::Relaxed);
        }
        match stash {
            Some(answer) => self.asgi_emit(py, answer, &request),
            None if finished => {}
            None => {
                let running = Running {
                    task: task.clone().unbind(),
                    framing,
                    request: request.clone_ref(py),
                    core_answer: false,
                };
                let seq = self.core.reserve(running, Instant::now());
                cycle.get().locked().seq = Some(seq);
            }
        }
        if let Some(failure) = outcome {
            self.asgi_ended_at_once(py, cycle.get(), failure, &request, framing);
            return Ok(());
        }
        self.disp.overload.started(py);
        if stepped {
            cycle.get().locked().watched = true;
        } else {
            let done = Py::new(
                py,
                AsgiDone {
                    cycle: cycle.clone_ref(py),
                },
            )?;
            task.call_method1(pyo3::intern!(py, "add_done_callback"), (done,))?;
        }
        self.cycles.push(cycle);
        Ok(())
    }

    /// The scope of `request` and its cycle (None: the connection is gone).
    /// What a scope takes from the connection: the client (a trusted proxy's word
    /// first), the server, the scheme.
    fn scope_place<'a, 'py>(
        &self,
        py: Python<'py>,
        req: &Request,
        server: &'a Bound<'py, PyAny>,
    ) -> PyResult<scope::Place<'a, 'py>> {
        let client = match req.exchange.forwarded.as_ref().and_then(|f| f.client) {
            // A trusted proxy named the client.
            Some((ip, port)) => (ip.to_string(), port).into_pyobject(py)?.into_any(),
            None => match &self.asgi_place {
                Some((client, _)) => client.bind(py).clone(),
                None => py.None().into_bound(py),
            },
        };
        Ok(scope::Place {
            client,
            server,
            scheme: req.scheme(),
        })
    }

    /// `{"scope": ...}`: the `websocket` scope of a handshake, the keyword the
    /// hosted app's WebSocket entry is called with.
    pub(in crate::protocol) fn websocket_scope<'py>(
        &self,
        py: Python<'py>,
        asgi: &Asgi,
        request: &Py<Request>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let none = py.None().into_bound(py);
        let server = self
            .asgi_place
            .as_ref()
            .map_or(none, |(_, s)| s.bind(py).clone());
        let place = self.scope_place(py, request.get(), &server)?;
        let kwargs = PyDict::new(py);
        kwargs.set_item(
            pyo3::intern!(py, "scope"),
            scope::websocket(py, asgi, request.get(), &place)?,
        )?;
        Ok(kwargs)
    }

    /// A hosted WSGI app's request: its environ and cycle go to the bridge's
    /// thread pool (`Bridge.submit`; the thread reads a body through the cycle's
    /// `receive`), and the answer comes back from the thread in one hop
    /// (`AsgiCycle._wsgi_settled`); no asyncio task.
    fn call_wsgi(
        &mut self,
        py: Python<'_>,
        disp: &Shared,
        wsgi: &Wsgi,
        request: Py<Request>,
        framing: Framing,
        body: Option<Py<BodyStream>>,
    ) -> PyResult<()> {
        let Some(place) = self.wsgi_place.as_deref() else {
            return Ok(());
        };
        let environ = environ::environ(py, wsgi, request.get(), place)?;
        let Some(cycle) = self.make_cycle(py, &request, framing, body, None)? else {
            return Ok(());
        };
        // The request (and its id) goes with the job into the thread's context.
        let current = CurrentRequest::enter(disp, request.bind(py))?;
        let submitted = wsgi.submit.bind(py).call1((environ, cycle.clone_ref(py)));
        drop(current);
        if let Err(err) = submitted {
            self.emit_error(py, &request, err, framing);
            return Ok(());
        }
        // The cycle stands for the job where a task would: the deadline "cancels"
        // it (`AsgiCycle.cancel`), and its 504 takes the slot.
        let running = Running {
            task: cycle.clone_ref(py).into_any(),
            framing,
            request,
            core_answer: false,
        };
        let seq = self.core.reserve(running, Instant::now());
        cycle.get().locked().seq = Some(seq);
        self.disp.overload.started(py);
        self.cycles.push(cycle);
        Ok(())
    }

    fn new_cycle<'py>(
        &mut self,
        py: Python<'py>,
        asgi: &Asgi,
        request: &Py<Request>,
        framing: Framing,
        body: Option<Py<BodyStream>>,
    ) -> PyResult<Option<(Bound<'py, PyDict>, Py<Cycle>)>> {
        let Some(server) = self.asgi_place.as_ref().map(|(_, s)| s.bind(py)) else {
            return Ok(None);
        };
        let place = self.scope_place(py, request.get(), server)?;
        let base = self
            .asgi_scope
            .for_request(py, asgi, request.get(), &place)?;
        let scope = scope::http(py, asgi, request.get(), &place, base.as_ref())?;
        let cycle = self.make_cycle(py, request, framing, body, Some(&scope))?;
        Ok(cycle.map(|cycle| (scope, cycle)))
    }

    /// The cycle of `request` (None: the connection is gone). `scope` is kept when
    /// metrics are on, for the path template the app's router may name there.
    fn make_cycle(
        &self,
        py: Python<'_>,
        request: &Py<Request>,
        framing: Framing,
        body: Option<Py<BodyStream>>,
        scope: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Option<Py<Cycle>>> {
        let Some(conn) = self.self_ref.as_ref().map(|c| c.clone_ref(py)) else {
            return Ok(None);
        };
        let watched = match &self.disp.metrics {
            Some(metrics) => {
                // Counted by method, unless the app's router names a template (`send`).
                let req = request.get();
                let head = &req.parts.buf.bind(py).as_bytes()[req.parts.base..];
                let method = String::from_utf8_lossy(&head[req.parts.method.clone()]);
                req.exchange.set_route(metrics.named(&method));
                scope.map(|s| s.clone().unbind())
            }
            None => None,
        };
        let cycle = Py::new(
            py,
            Cycle {
                conn,
                disp: self.disp.clone(),
                request: request.clone_ref(py),
                scope: watched,
                framing,
                state: Mutex::new(State {
                    body,
                    told_empty: false,
                    reply: Reply::Idle,
                    seq: None,
                    stash: None,
                    writer: None,
                    early: Vec::new(),
                    early_end: None,
                    send_waiter: None,
                    end_waiter: None,
                    left_waiter: None,
                    ending: Ending::Running,
                    watched: false,
                    outcome: None,
                }),
            },
        )?;
        Ok(Some(cycle))
    }

    /// The app's task ended in its eager start: what it did not answer is answered now.
    fn asgi_ended_at_once(
        &mut self,
        py: Python<'_>,
        cycle: &Cycle,
        failure: Option<PyErr>,
        request: &Py<Request>,
        framing: Framing,
    ) {
        let unanswered = matches!(cycle.locked().reply, Reply::Idle | Reply::Started(_));
        if unanswered {
            let err = failure.unwrap_or_else(|| {
                PyRuntimeError::new_err("the ASGI app returned without sending a response")
            });
            self.emit_error(py, request, err, framing);
            cycle.end(py);
        } else if let Some(err) = failure {
            cycle.log_failure(py, err);
        }
    }

    /// An answer made during the app's eager start: queued after what is before it.
    fn asgi_emit(&mut self, py: Python<'_>, answer: Answer, request: &Py<Request>) {
        match answer {
            Answer::Whole {
                bytes,
                sent,
                framing,
            } => {
                self.note_framing(framing);
                let req = request.get();
                self.record_response(py, &req.parts, &req.exchange, sent);
                match self.core.direct() {
                    Some(out) => out.extend_from_slice(&bytes),
                    None => self.core.emit(bytes),
                }
            }
            Answer::Stream {
                head,
                plan,
                framing,
            } => {
                self.note_framing(framing);
                self.queue_stream(head, plan);
            }
        }
    }

    /// An answer made later: it fills the request's reserved slot, unless that
    /// was answered already (its deadline passed).
    pub(super) fn asgi_answer(
        &mut self,
        py: Python<'_>,
        seq: Option<u64>,
        answer: Answer,
        request: &Py<Request>,
    ) {
        if self.core.closed {
            return;
        }
        let Some(slot) = seq.and_then(|seq| self.core.slot_mut(seq)) else {
            return;
        };
        if slot.bytes.is_some() || slot.pending.is_none() {
            return;
        }
        slot.pending = None;
        match answer {
            Answer::Whole {
                bytes,
                sent,
                framing,
            } => {
                slot.bytes = Some(bytes);
                self.core.handler_done();
                if let (false, Some(seq)) = (framing.keep_alive, seq) {
                    self.core.last_answer(seq);
                }
                let req = request.get();
                self.record_response(py, &req.parts, &req.exchange, sent);
            }
            Answer::Stream {
                head,
                plan,
                framing,
            } => {
                slot.bytes = Some(head);
                self.note_stream(&plan, seq);
                if let Some(slot) = seq.and_then(|seq| self.core.slot_mut(seq)) {
                    slot.stream = Some(plan);
                }
                self.core.handler_done();
                if let (false, Some(seq)) = (framing.keep_alive, seq) {
                    self.core.last_answer(seq);
                }
            }
        }
        if let Err(err) = self.drain_buffered(py) {
            err.print(py);
        }
    }

    /// A hosted app's request body failed (over `max_body_bytes`, badly chunked,
    /// too slow): the server answers with its status, as for a `veter.App`, and the
    /// app's `receive` gives `http.disconnect` (frameworks would turn an exception
    /// there into their own 500).
    pub(in crate::protocol) fn asgi_body_failed(
        &mut self,
        py: Python<'_>,
        stream: &Py<BodyStream>,
    ) {
        let Some(err) = stream.get().failure(py) else {
            return;
        };
        let Some(cycle) = self.cycles.iter().find(|c| c.get().reads(stream)) else {
            return;
        };
        let cycle = cycle.clone_ref(py);
        let cycle = cycle.get();
        let Some(seq) = cycle.take_over() else {
            return; // the answer is streaming: the connection closes after it
        };
        self.asgi_failed(py, Some(seq), &cycle.request, err, cycle.framing);
    }

    /// The app ended without answering: a 500 in its place (unless its deadline's
    /// 504 is there already).
    pub(super) fn asgi_failed(
        &mut self,
        py: Python<'_>,
        seq: Option<u64>,
        request: &Py<Request>,
        err: PyErr,
        framing: Framing,
    ) {
        if self.core.closed {
            return;
        }
        let Some(seq) = seq else {
            return;
        };
        let Some(slot) = self.core.slot_mut(seq) else {
            return;
        };
        if slot.bytes.is_some() || slot.pending.is_none() {
            return;
        }
        slot.pending = None;
        self.core.handler_done();
        let mut bytes = Vec::new();
        let req = request.get();
        let framing = self.close_if_upload_unfinished(&req.parts, framing);
        let common = self.common().with_request_id(req.exchange.id_bytes());
        let disp = self.disp.clone();
        let sent = crate::protocol::respond::encode_error(
            py, &disp, common, request, err, framing, &mut bytes,
        );
        self.record_response(py, &req.parts, &req.exchange, sent);
        if let Some(slot) = self.core.slot_mut(seq) {
            slot.bytes = Some(bytes);
        }
        if let Err(err) = self.drain_buffered(py) {
            err.print(py);
        }
    }
}

/// What a finished task raised (a cancelled task: `CancelledError`), or None.
pub(super) fn task_failure(py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<Option<PyErr>> {
    // One call: `exception()` raises `CancelledError` for a cancelled task.
    match task.call_method0(pyo3::intern!(py, "exception")) {
        Ok(exc) if exc.is_none() => Ok(None),
        Ok(exc) => Ok(Some(PyErr::from_value(exc))),
        Err(err) if err.is_instance_of::<CancelledError>(py) => Ok(Some(err)),
        Err(err) => Err(err),
    }
}
