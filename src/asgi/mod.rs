//! Hosted ASGI 3 applications: the pieces that know nothing of a connection.
//!
//! A worker that serves an ASGI app instead of a `veter.App` calls it once per
//! request as `app(scope, receive, send)`. The parser, the strictness rules, the
//! timeouts, the output queue and the encoder are the same as for a `veter.App`;
//! only the last step differs. Here:
//!
//! - `scope.rs`: the `http` scope, built in Rust from the parsed head (one dict, its
//!   keys interned, no Python code run for it);
//! - `environ.rs`: a hosted WSGI app's `environ`, built the same way;
//! - `reply.rs`: the messages an app sends, checked, and the response head they
//!   describe.
//!
//! The connection's side (the `receive` and `send` callables, answers delivered in
//! request order, streaming under the write watermarks) is `protocol/asgi.rs`.

pub mod environ;
pub mod reply;
pub mod scope;

use std::sync::atomic::AtomicBool;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// What a worker knows of the ASGI app it serves, frozen at startup.
pub struct Asgi {
    /// The ASGI 3 callable.
    pub app: Py<PyAny>,
    /// `root_path` of every scope (`--root-path`): where a proxy mounts the app.
    pub root_path: String,
    /// The lifespan state: a shallow copy goes into every scope (`scope["state"]`).
    pub state: Option<Py<PyDict>>,
    /// What the core calls for a WebSocket handshake (`veter.hosted.websocket`):
    /// `entry(request, scope=...)`, answering as a `veter.App`'s WebSocket route
    /// does. None: upgrades are served as plain HTTP requests.
    pub websocket: Option<Py<PyAny>>,
    /// Every `http` scope starts as a copy of this one (`scope::template`): its keys
    /// in their final order and what never changes, so building a scope overwrites
    /// values in place instead of growing a new dict key by key.
    pub template: Py<PyDict>,
    /// The app is a WSGI app behind `veter.hosted.wsgi.Bridge` (the ASGI callable
    /// above): a request without a body goes from the core straight to its thread
    /// pool, with the environ built here (no asyncio task, no scope).
    pub wsgi: Option<environ::Wsgi>,
    /// The app's last run on an eagerly started task suspended: the next one is
    /// stepped by `_AsgiRun` (`protocol::asgi::run`), which tells its end from
    /// inside the task, rather than by a done callback's loop turn.
    pub suspends: AtomicBool,
}

impl Asgi {
    /// From the `asgi=` argument of the `Dispatcher`:
    /// `(app, root_path, state, websocket, wsgi)`, `wsgi` None or
    /// `(submit, environ_template)`.
    pub fn from_spec(spec: &Bound<'_, PyAny>) -> PyResult<Self> {
        type Spec = (
            Py<PyAny>,
            String,
            Option<Py<PyDict>>,
            Option<Py<PyAny>>,
            Option<(Py<PyAny>, Py<PyDict>)>,
        );
        let (app, root_path, state, websocket, wsgi): Spec = spec.extract()?;
        let template = scope::template(spec.py(), &root_path)?.unbind();
        Ok(Asgi {
            app,
            root_path,
            state,
            websocket,
            template,
            wsgi: wsgi.map(|(submit, template)| environ::Wsgi { submit, template }),
            suspends: AtomicBool::new(false),
        })
    }
}
