//! A hosted ASGI app on the connection: one `Cycle` per request holds its
//! `receive` and `send`, and turns what the app sends into an answer in the
//! request's place in the output queue.
//!
//! When the answer is ready: an app's `send` of its last body runs either inside
//! the connection's own call (an eagerly started task that does not suspend: the
//! connection is borrowed, so the answer waits in the cycle, `stash`, and the
//! shell takes it when the start returns) or from the loop later (the shell has
//! reserved the request's slot by then, `seq`, and the answer fills it at once,
//! before the app's coroutine returns: Starlette's background tasks run after it).
//!
//! A body sent in several messages (`more_body`) is a streamed answer: its head is
//! queued like a `StreamingResponse`'s, and when it reaches the front the core
//! hands the cycle a `StreamWriter` (`_veter_start`); until then the app's `send`
//! waits, and after it `send` waits whenever the client is behind.
//!
//! When the app's run ends (on 3.11 `_AsgiRun` tells the cycle from its task,
//! `run.rs`; with eager tasks, `AsgiDone` or at once): nothing sent yet is a 500 (through the
//! app's error handler, which logs it with the request id); a stream cut short
//! closes the connection. A client that leaves turns every later `send` into a
//! no-op and every `receive` into `http.disconnect`, as uvicorn does; the app's
//! task is not cancelled (its cleanup runs).

mod connection;
mod ending;
mod run;
mod sending;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::{PyConnectionResetError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use smallvec::SmallVec;

use super::stream::{Plan, StreamWriter};
use super::{Connection, Shared};
use crate::asgi::reply::{self, Head, Kind};
use crate::body_stream::{disconnect_message, request_message, BodyStream};
use crate::http1::encode::{self, BodyLength, Framing};
use crate::http1::parse::Version;
use crate::http1::record;
use crate::ready::ready;
use crate::request::Request;

/// What the app has sent so far.
enum Reply {
    Idle,
    Started(Head),
    Streaming,
    Done,
}

/// An answer made by `send`, for the request's place in the queue.
pub(super) enum Answer {
    Whole {
        bytes: Vec<u8>,
        sent: encode::Sent,
        framing: Framing,
    },
    Stream {
        head: Vec<u8>,
        plan: Box<Plan>,
        framing: Framing,
    },
}

struct State {
    /// The body as it arrives (None: the request has none).
    body: Option<Py<BodyStream>>,
    /// The one (empty) body message of a request without a body was given.
    told_empty: bool,
    reply: Reply,
    /// The request's slot in the queue, once reserved (the app suspended first).
    seq: Option<u64>,
    /// An answer made while the connection was busy (see the module doc).
    stash: Option<Answer>,
    /// The stream's writer, once it reached the front.
    writer: Option<Py<StreamWriter>>,
    /// Body pieces sent before the stream reached the front.
    early: Vec<Py<PyBytes>>,
    /// How the stream ends once it starts, when that is known before: `true` well
    /// (the last piece came), `false` cut (the app failed mid-stream).
    early_end: Option<bool>,
    /// A `send` waiting for its stream to start or for the client to catch up.
    send_waiter: Option<Py<PyAny>>,
    /// A `receive` waiting for the end (the answer sent, or the client gone).
    end_waiter: Option<Py<PyAny>>,
    /// A WSGI job's watch (`_veter_left`) waiting for the same end; unlike
    /// `receive`, not woken by the client's end of input.
    left_waiter: Option<Py<PyAny>>,
    ending: Ending,
    /// The connection has let the app's task go on alone (`call_asgi` returned):
    /// its end is handled when `run_handler` tells it (`_veter_done`, Python 3.11).
    watched: bool,
    /// How the app ended, told before it was watched (an eager start that finished):
    /// `call_asgi` takes it. `Err`: what it raised.
    outcome: Option<Result<(), PyErr>>,
}

/// Whether `receive` still waits for the end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    Running,
    /// The answer is complete (or never will be).
    Complete,
    /// The client sent its last byte; it may still read the answer.
    InputEnded,
    /// The client left.
    Gone,
}

/// One request of a hosted ASGI app: its `receive` and `send`.
#[pyclass(module = "veter._core", name = "AsgiCycle", frozen)]
pub struct Cycle {
    conn: Py<Connection>,
    disp: Arc<Shared>,
    request: Py<Request>,
    /// The scope, kept when metrics are on: the app's router may name the path
    /// template there (`scope["route"].path`, as `Starlette` and `FastAPI` do).
    scope: Option<Py<PyDict>>,
    framing: Framing,
    state: Mutex<State>,
}

impl Cycle {
    fn locked(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts the answer under the path template the app's router matched, when
    /// it tells (`scope["route"].path`); else it stays under the method.
    fn count_in_template(&self, py: Python<'_>) {
        let (Some(scope), Some(metrics)) = (&self.scope, &self.disp.metrics) else {
            return;
        };
        let template = scope
            .bind(py)
            .get_item(pyo3::intern!(py, "route"))
            .ok()
            .flatten()
            .and_then(|route| route.getattr(pyo3::intern!(py, "path")).ok())
            .and_then(|path| path.extract::<String>().ok());
        if let Some(template) = template {
            self.request
                .get()
                .exchange
                .set_route(metrics.named(&template));
        }
    }

    /// Whether `stream` is this request's body.
    fn reads(&self, stream: &Py<BodyStream>) -> bool {
        self.locked().body.as_ref().is_some_and(|b| b.is(stream))
    }

    /// The server answers in the app's stead (its body failed): what the app sends
    /// from now on goes nowhere. The request's slot, if the app had not answered.
    fn take_over(&self) -> Option<u64> {
        let mut state = self.locked();
        state.ending = Ending::Gone;
        match state.reply {
            Reply::Idle | Reply::Started(_) => {
                state.reply = Reply::Done;
                state.seq
            }
            Reply::Streaming | Reply::Done => None,
        }
    }

    /// The framing of the answer: closing when the app asked for it, when the
    /// server drains, or when the body was not read to its end.
    fn framing(&self, py: Python<'_>, head: &Head) -> Framing {
        let mut framing = self.framing;
        let draining = self
            .disp
            .last_answers
            .load(std::sync::atomic::Ordering::Relaxed);
        let unread = self
            .locked()
            .body
            .as_ref()
            .is_some_and(|b| !b.get().is_whole());
        if head.close || draining || unread {
            framing.keep_alive = false;
        }
        let _ = py;
        framing
    }

    fn common<'a>(&'a self, date: &'a encode::DateLine, id: &'a [u8]) -> encode::Common<'a> {
        encode::Common {
            server_line: &self.disp.server_line,
            date_line: date,
            request_id: id,
            ok_head: b"",
            request_id_prefix: self
                .disp
                .request_ids
                .as_ref()
                .map_or(b"", |ids| ids.line_prefix()),
            request_id_name: self.disp.request_ids.as_ref().map_or("", |ids| ids.name()),
        }
    }

    /// Encodes the head of `head`'s answer (its body follows, or not, per `length`).
    /// A `whole` answer to an HTTP/2 stream's request is a record (`http1::record`),
    /// which the stream's session reads without searching it; else HTTP/1.1 text.
    fn encode_head(
        &self,
        py: Python<'_>,
        head: &Head,
        length: BodyLength,
        whole: bool,
    ) -> (Vec<u8>, Framing) {
        let framing = self.framing(py, head);
        let date = encode::date_line();
        let req = self.request.get();
        let common = self.common(&date, req.exchange.id_bytes());
        let mut bytes = Vec::with_capacity(256);
        if whole && framing.version == Version::Http2 {
            let pairs: SmallVec<[(&[u8], &[u8]); 8]> = head.fields.pairs().collect();
            if record::fits_head(&pairs, None, &common) {
                // (A whole answer's length is known, or its status forbids a body.)
                let length = match length {
                    BodyLength::Known(n) => Some(n),
                    _ => None,
                };
                record::write_head(&mut bytes, head.status, None, &pairs, length, common);
                return (bytes, framing);
            }
        }
        encode::encode_head_lines(
            &mut bytes,
            head.status,
            head.fields.lines(),
            |name| head.fields.has(name),
            length,
            framing,
            common,
        );
        (bytes, framing)
    }

    /// Hands `answer` to the connection: now, or through the stash when the
    /// connection is busy (this runs inside its call).
    fn deliver(&self, py: Python<'_>, answer: Answer) {
        let conn = self.conn.bind(py);
        if conn.try_borrow_mut().is_err() {
            self.locked().stash = Some(answer);
            return;
        }
        let seq = self.locked().seq;
        let request = &self.request;
        let delivered = Connection::with_borrow_later(conn, |this, py| {
            this.asgi_answer(py, seq, answer, request);
            Ok(())
        });
        if let Err(err) = delivered {
            err.print(py);
        }
    }

    /// The answer is complete (or never will be): a waiting `receive` learns it.
    fn end(&self, py: Python<'_>) {
        let (waiter, left) = {
            let mut state = self.locked();
            if state.ending == Ending::Running {
                state.ending = Ending::Complete;
            }
            (state.end_waiter.take(), state.left_waiter.take())
        };
        if let Some(waiter) = waiter {
            resolve(py, &waiter, disconnect_message(py).map(Bound::into_any));
        }
        if let Some(left) = left {
            resolve(py, &left, Ok(py.None().into_bound(py)));
        }
    }

    /// The client sent its last byte (it may still read): `receive` says
    /// `http.disconnect`, as uvicorn's does; the answer is still written.
    pub(super) fn input_ended(&self, py: Python<'_>) {
        let waiter = {
            let mut state = self.locked();
            if state.ending == Ending::Running {
                state.ending = Ending::InputEnded;
            }
            state.end_waiter.take()
        };
        if let Some(waiter) = waiter {
            resolve(py, &waiter, disconnect_message(py).map(Bound::into_any));
        }
    }

    /// The client left: later sends do nothing, `receive` says so.
    pub(super) fn client_gone(&self, py: Python<'_>) {
        let send_waiter = {
            let mut state = self.locked();
            state.ending = Ending::Gone;
            state.send_waiter.take()
        };
        if let Some(waiter) = send_waiter {
            resolve(py, &waiter, Ok(py.None().into_bound(py)));
        }
        self.end(py);
    }

    /// The app's run ended, with `failure` when it raised (`_veter_done`, or the
    /// run driving it). Before `call_asgi` lets the task go on alone, the outcome
    /// waits for it; after, the end is handled here.
    fn told(slf: &Bound<'_, Self>, failure: Option<PyErr>) -> PyResult<()> {
        {
            let mut state = slf.get().locked();
            if !state.watched {
                state.outcome = Some(failure.map_or(Ok(()), Err));
                return Ok(());
            }
        }
        Cycle::finish(&slf.clone().unbind(), slf.py(), failure)
    }

    /// A future for a `send` to wait on (resolved by `_veter_start` or the drain).
    fn wait_in_send(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let future = new_future(py)?;
        self.locked().send_waiter = Some(future.clone_ref(py));
        Ok(future)
    }
}

#[pymethods]
impl Cycle {
    /// `veter.handler_task.run_handler` says the app ended (`exc`: what it raised;
    /// what it returned means nothing to ASGI). Before `call_asgi` lets the task go
    /// on alone, the outcome waits for it; after, the end is handled here.
    fn _veter_done(
        slf: &Bound<'_, Self>,
        result: &Bound<'_, PyAny>,
        exc: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _ = result;
        Cycle::told(slf, exc.map(PyErr::from_value))
    }

    /// The next message for the app: the body's, then (when the answer is complete
    /// or the client gone) `http.disconnect`. Once the answer is complete it is
    /// `http.disconnect` at once, even with body left unread (the ASGI spec; uvicorn).
    fn receive(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let mut state = self.locked();
        if matches!(state.reply, Reply::Done) {
            return Ok(ready(py, disconnect_message(py)?.into_any().unbind())?.into_any());
        }
        if let Some(body) = &state.body {
            if !body.get().told_end() {
                let body = body.clone_ref(py);
                drop(state);
                return BodyStream::receive(body.bind(py));
            }
        } else if !state.told_empty {
            state.told_empty = true;
            let message = request_message(py, PyBytes::new(py, b"").into_any(), false)?;
            return Ok(ready(py, message.into_any().unbind())?.into_any());
        }
        if state.ending != Ending::Running {
            return Ok(ready(py, disconnect_message(py)?.into_any().unbind())?.into_any());
        }
        if state.end_waiter.is_some() {
            return Err(PyRuntimeError::new_err(
                "ASGI receive() called while another receive() is waiting",
            ));
        }
        let future = new_future(py)?;
        state.end_waiter = Some(future.clone_ref(py));
        Ok(future)
    }

    /// Takes one message of the answer.
    fn send(slf: &Bound<'_, Self>, message: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let fields = reply::read(message)?;
        let mut state = slf.get().locked();
        if state.ending == Ending::Gone {
            // As uvicorn: the client left, so what the app sends goes nowhere.
            return done(py);
        }
        match fields.kind {
            Kind::Start => match state.reply {
                Reply::Idle => {
                    state.reply = Reply::Started(reply::start(&fields)?);
                    drop(state);
                    slf.get().count_in_template(py);
                    done(py)
                }
                Reply::Done => Err(PyRuntimeError::new_err(
                    "ASGI send() after the response was complete",
                )),
                _ => Err(PyRuntimeError::new_err(
                    "ASGI http.response.start sent twice",
                )),
            },
            Kind::Body => Self::send_body(slf, &fields, state),
            Kind::PathSend => {
                let Reply::Started(head) = &mut state.reply else {
                    return Err(PyRuntimeError::new_err(
                        "ASGI http.response.pathsend must follow http.response.start \
                         (and end the response)",
                    ));
                };
                let (path, size) = reply::path_to_send(message)?;
                head.length.get_or_insert(size);
                drop(state);
                // The file goes out with sendfile, or is read from a thread and
                // sent as the body's messages (veter/hosted/pathsend.py).
                let coro = py
                    .import(pyo3::intern!(py, "veter.hosted.pathsend"))?
                    .call_method1(pyo3::intern!(py, "send_file"), (slf, path))?;
                Ok(coro.unbind())
            }
        }
    }

    /// The stream reached the front: what the app sent so far goes out.
    fn _veter_start(
        &self,
        py: Python<'_>,
        writer: Py<StreamWriter>,
        send_body: bool,
    ) -> PyResult<Option<Py<PyAny>>> {
        let _ = send_body;
        let (early, end, waiter) = {
            let mut state = self.locked();
            state.writer = Some(writer.clone_ref(py));
            (
                std::mem::take(&mut state.early),
                state.early_end,
                state.send_waiter.take(),
            )
        };
        let writer = writer.get();
        let mut behind = false;
        for piece in &early {
            match writer.write(py, piece.bind(py)) {
                Ok(b) => behind = b,
                Err(err) if err.is_instance_of::<PyConnectionResetError>(py) => {
                    self.client_gone(py);
                    return Ok(None);
                }
                Err(err) => return Err(err),
            }
        }
        match end {
            Some(false) => writer.end(py, false)?,
            Some(true) => {
                writer.end(py, true)?;
                self.end(py);
            }
            None => {}
        }
        if let Some(waiter) = waiter {
            if behind && end.is_none() {
                writer.wait(py, waiter.bind(py))?;
            } else {
                resolve(py, &waiter, Ok(py.None().into_bound(py)));
            }
        }
        Ok(None)
    }

    /// The writer of this answer's stream once it reached the front (None before,
    /// and once the client has gone): what sends a file past the transport.
    fn _veter_writer(&self, py: Python<'_>) -> Option<Py<StreamWriter>> {
        let state = self.locked();
        if state.ending == Ending::Gone {
            return None;
        }
        state.writer.as_ref().map(|w| w.clone_ref(py))
    }

    /// An awaitable of None once the answer is complete or the client has gone: what
    /// a WSGI job streaming an answer watches to stop (a client that only shut down
    /// its sending side still reads, so its end of input does not count).
    fn _veter_left(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let mut state = self.locked();
        if matches!(state.ending, Ending::Complete | Ending::Gone) {
            return done(py);
        }
        if state.left_waiter.is_some() {
            return Err(PyRuntimeError::new_err("_veter_left() is already awaited"));
        }
        let future = new_future(py)?;
        state.left_waiter = Some(future.clone_ref(py));
        Ok(future)
    }

    /// The client left before the stream could start.
    fn _veter_abandon(&self, py: Python<'_>) {
        self.client_gone(py);
    }

    /// What the deadline calls on a hosted WSGI app's job in place of a task's
    /// `cancel`: a thread cannot be stopped, so nothing (False); the 504 has taken
    /// the request's slot, and the job's answer is dropped when it comes.
    #[expect(clippy::unused_self, reason = "a task's method, called on an instance")]
    fn cancel(&self) -> bool {
        false
    }

    /// A hosted WSGI app's job ended in its thread (called on the loop):
    /// `answer` is its whole answer, `(status, [(name, value), ...], body)`, or
    /// None when the thread streamed it through `send` already.
    fn _wsgi_settled(
        slf: &Bound<'_, Self>,
        answer: Option<(Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyBytes>)>,
    ) -> PyResult<()> {
        let py = slf.py();
        let failure = match answer {
            Some((status, headers, body)) => {
                slf.get().answer_at_once(py, &status, &headers, &body).err()
            }
            None => None,
        };
        Self::finish(&slf.clone().unbind(), py, failure)
    }

    /// A hosted WSGI app's job raised `exc` in its thread (called on the loop).
    fn _wsgi_failed(slf: &Bound<'_, Self>, exc: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::finish(
            &slf.clone().unbind(),
            slf.py(),
            Some(PyErr::from_value(exc.clone())),
        )
    }
}

fn new_future(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(py
        .import("asyncio")?
        .call_method0("get_running_loop")?
        .call_method0("create_future")?
        .unbind())
}

/// Completes `future` with `value` unless it is done (cancelled) already.
fn resolve(py: Python<'_>, future: &Py<PyAny>, value: PyResult<Bound<'_, PyAny>>) {
    let future = future.bind(py);
    let pending = future
        .call_method0("done")
        .and_then(|d| d.is_truthy())
        .is_ok_and(|d| !d);
    if pending {
        if let Ok(value) = value {
            let _ = future.call_method1("set_result", (value,));
        }
    }
}

/// `send`'s answer when nothing is to wait for: an awaitable of None.
fn done(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(ready(py, py.None())?.into_any())
}
