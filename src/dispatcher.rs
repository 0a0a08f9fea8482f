//! The `Dispatcher` pyclass: the protocol factory handed to `loop.create_server`.
//!
//! It holds what the worker's connections share (`shared.rs`), makes one
//! `Connection` per accepted socket, and drives them all: the timeouts' tick,
//! graceful shutdown and the final abort. It is the only module above the protocol.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::logfile::LogFile;
use crate::metrics::Label;
use crate::protocol::Connection;
use crate::settings::ServerSettings;
use crate::shared::{RouteSpec, Shared};

#[pyclass(module = "veter._core", name = "Dispatcher", frozen)]
pub struct Dispatcher {
    shared: Arc<Shared<Py<Connection>>>,
}

#[pymethods]
impl Dispatcher {
    /// `routes`: (methods, pattern, handler, `is_async`, `stream_body`) in registration order.
    /// `config`: the server's `ServerConfig` (read by attribute, see `settings.rs`).
    #[new]
    /// `unmatched`: an async handler called as `handler(request)` for a path no route
    /// has and `handler(request, allow=...)` for a method none takes.
    /// `asgi`: `(app, root_path, state, websocket)` of a hosted ASGI app, served instead
    /// of routes.
    #[pyo3(signature = (
        routes, app, error_handler, config, *, access_log = None, access_log_skip = Vec::new(),
        eager_tasks = None, unmatched = None, asgi = None
    ))]
    #[allow(clippy::too_many_arguments)] // the settings are one; the rest are what the app hands over
    fn new(
        py: Python<'_>,
        routes: Vec<RouteSpec>,
        app: Py<PyAny>,
        error_handler: Py<PyAny>,
        config: ServerSettings,
        access_log: Option<Py<LogFile>>,
        access_log_skip: Vec<String>,
        eager_tasks: Option<bool>,
        unmatched: Option<Py<PyAny>>,
        asgi: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut shared = Shared::new(
            py,
            routes,
            app,
            error_handler,
            config,
            access_log,
            access_log_skip,
            eager_tasks,
            unmatched,
        )?;
        if let Some(spec) = &asgi {
            shared.host(py, crate::asgi::Asgi::from_spec(spec)?);
        }
        Ok(Dispatcher {
            shared: Arc::new(shared),
        })
    }

    /// The protocol factory: one `Connection` per accepted socket.
    fn __call__(slf: &Bound<'_, Self>) -> Connection {
        let shared = Arc::clone(&slf.get().shared);
        Connection::new(slf.py(), shared, slf.clone().into_any().unbind())
    }

    #[getter]
    fn connection_count(&self) -> usize {
        self.shared.connection_count()
    }

    /// Requests routed to a handler, a 404 or a 405 since the dispatcher was built.
    #[getter]
    fn requests_served(&self) -> u64 {
        self.shared.requests_served.load(Ordering::Relaxed)
    }

    /// Handlers of this worker that suspended and have not finished.
    #[getter]
    fn in_flight(&self) -> usize {
        self.shared.overload.in_flight()
    }

    /// Requests answered 503 because they waited longer than the queue timeout.
    #[getter]
    fn shed_count(&self) -> u64 {
        self.shared.overload.shed_count()
    }

    /// Writes the answers tasks finished since it was scheduled, one write per
    /// connection (`Connection::with_borrow_later`).
    fn _write_later(&self, py: Python<'_>) {
        crate::protocol::Connection::write_later(py, &self.shared);
    }

    /// Marks the end of a loop iteration that read requests (see `overload.rs`).
    fn _end_iteration(&self) {
        self.shared.overload.end_iteration();
    }

    /// `callback(True)` when this worker reaches `max_concurrency` handlers in
    /// flight, `callback(False)` when it falls below again (None: no callback).
    fn set_saturation_callback(&self, callback: Option<Py<PyAny>>) {
        self.shared.overload.set_saturation_callback(callback);
    }

    /// A deferred `def` handler starts (called by `veter.concurrency.run_deferred`).
    fn _deferred_started(&self) {
        self.shared.overload.deferred_started();
    }

    /// A deferred `def` handler ran for `seconds`.
    fn _deferred_cost(&self, seconds: f64) {
        self.shared
            .overload
            .note_work(Duration::from_secs_f64(seconds.max(0.0)));
    }

    /// Responses by route and status and latency buckets by route (see
    /// `metrics.rs`), or None when metrics are off. Routes are given by pattern
    /// (None: no route matched).
    fn metrics_snapshot<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(metrics) = &self.shared.metrics else {
            return Ok(None);
        };
        let routes = &self.shared.routes;
        let snapshot = metrics.snapshot(py, |label| match label {
            Label::Route(r) => routes.get(r).map(|r| r.pattern.bind(py).clone().into_any()),
            Label::Unmatched => None,
            Label::Named(name) => Some(PyString::new(py, name).into_any()),
        })?;
        Ok(Some(snapshot))
    }

    /// The access log's file, or None when the access log is off.
    #[getter]
    fn access_log(&self, py: Python<'_>) -> Option<Py<LogFile>> {
        self.shared.access.as_ref().map(|a| a.file.clone_ref(py))
    }

    #[getter]
    fn eager_tasks(&self) -> bool {
        self.shared.eager_tasks
    }

    /// Enforces the connection timeouts (idle keep-alive, header, body, write,
    /// handler deadline). Called a few times a second by the server; returns how
    /// many connections it closed.
    fn tick(&self, py: Python<'_>) -> PyResult<usize> {
        let now = Instant::now();
        let mut closed = 0;
        // Draining changes no timeout: an idle connection is closed when its
        // keep-alive time is up, as it would have been anyway (see `shutdown`).
        for conn in self.shared.snapshot(py) {
            if Connection::check_timers(conn.bind(py), now, &self.shared.timeouts)? {
                closed += 1;
            }
        }
        Ok(closed)
    }

    /// Starts a graceful shutdown: from now on every response is its connection's
    /// last (`Connection: close`). Idle keep-alive connections are not closed now:
    /// a client may be sending its next request on one at this very moment, and a
    /// close would lose it (a reset the client cannot safely retry if it was a
    /// POST). They close when their keep-alive time is up, as they would have
    /// anyway, so a client sees nothing it does not already handle. `on_drained`
    /// is called once no connection is left (at once if there is none).
    fn shutdown(&self, py: Python<'_>, on_drained: Py<PyAny>) {
        *self
            .shared
            .on_drained
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(on_drained);
        self.shared.last_answers.store(true, Ordering::Relaxed);
        self.shared.shutting_down.store(true, Ordering::Relaxed);
        if self.shared.connection_count() == 0 {
            self.shared.fire_drained(py);
        }
    }

    /// The instance is leaving (the drain delay): requests are still served, but
    /// every answer from now on carries `Connection: close`, so keep-alive clients
    /// reconnect, through the load balancer, to an instance that stays.
    fn close_keepalive(&self) {
        self.shared.last_answers.store(true, Ordering::Relaxed);
    }

    /// Closes every connection now (after the graceful timeout ran out).
    fn abort_all(&self, py: Python<'_>) -> PyResult<usize> {
        let conns = self.shared.snapshot(py);
        for conn in &conns {
            Connection::abort(conn.bind(py))?;
        }
        Ok(conns.len())
    }
}
