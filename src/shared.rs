//! What the connections of one worker share, frozen at startup: the routes, the
//! settings the core reads, overload control, observation (request ids, access log,
//! metrics) and the registry of open connections.
//!
//! Built once from the app's route list and settings (STYLE 3 and 5: decide at setup,
//! the router stores indices). Generic over the connection (`C`), so that it sits
//! below the protocol: the `Dispatcher` pyclass (`dispatcher.rs`) holds it and makes
//! connections, and each connection reads it.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::access::AccessLog;
use crate::http1::limits::Limits;
use crate::logfile::LogFile;
use crate::metrics::Metrics;
use crate::overload::Overload;
use crate::proxy::TrustedProxies;
use crate::request_id::RequestIds;
use crate::router::tree::Router;
use crate::settings::ServerSettings;
use crate::timeouts::{self, Timeouts};

/// A connection as the registry keeps it: a Python reference, cloned under the GIL.
pub trait Handle {
    #[must_use]
    fn clone_ref(&self, py: Python<'_>) -> Self;
}

impl<T> Handle for Py<T> {
    fn clone_ref(&self, py: Python<'_>) -> Self {
        Py::clone_ref(self, py)
    }
}

/// A route as Python gives it: a `veter.routing.Endpoint`, read by attribute.
#[derive(FromPyObject)]
pub struct RouteSpec {
    methods: Vec<String>,
    path: String,
    /// The handler with the app's middleware around it.
    target: Py<PyAny>,
    is_async: bool,
    stream_body: bool,
    websocket: bool,
}

/// One handler, as the core calls it.
pub struct Route {
    pub handler: Py<PyAny>,
    pub is_async: bool,
    /// The handler starts at the head and reads the body as a stream (`upload.rs`).
    pub stream_body: bool,
    /// A WebSocket route: an upgrade request to it stops HTTP parsing until its
    /// handler answers (`101` hands the connection over; anything else closes it).
    pub websocket: bool,
    pub pattern: Py<PyString>,
    pub param_names: Vec<Py<PyString>>,
}

/// What every connection of a worker reads: `C` is the connection (generic, so this
/// module needs nothing of the protocol).
#[allow(clippy::struct_excessive_bools)] // independent settings and states
pub struct Shared<C> {
    pub router: Router,
    pub routes: Vec<Route>,
    /// The app's answer to requests no route takes (404, 405), when it has one (app
    /// middleware, or its own not-found or method-not-allowed handler); else the
    /// core answers them itself.
    pub unmatched: Option<Route>,
    /// The hosted ASGI app this worker serves instead of routes (None: a `veter.App`),
    /// and the route every request takes to it.
    pub asgi: Option<crate::asgi::Asgi>,
    pub hosted: Option<Route>,
    /// The hosted app's WebSocket handshakes (`Asgi::websocket`), or None.
    pub hosted_ws: Option<Route>,
    pub limits: Limits,
    /// `Server: <value>\r\n`, or empty when the header is off.
    pub server_line: Vec<u8>,
    pub timeouts: Timeouts,
    /// The lingering close (None: off).
    pub linger: Option<crate::timeouts::Linger>,
    pub max_pipelined: usize,
    pub app: Py<PyAny>,
    pub error_handler: Py<PyAny>,
    /// Handlers' tasks start eagerly (Python 3.12+, unless turned off).
    pub eager_tasks: bool,
    /// `asyncio.Task`: a handler's task is made by calling it (see
    /// `Connection::new_task`).
    pub task_type: Py<PyAny>,
    /// `veter.concurrency.run_deferred`, when a queue timeout may defer `def` handlers.
    pub run_deferred: Option<Py<PyAny>>,
    pub shutting_down: AtomicBool,
    /// Every answer from now on is its connection's last (`Connection: close`): set
    /// by `shutdown` and, earlier, by `close_keepalive` (the drain delay).
    pub last_answers: AtomicBool,
    pub overload: Overload<C>,
    /// Request ids (None: off).
    pub request_ids: Option<RequestIds>,
    /// The access log (None: off).
    pub access: Option<AccessLog>,
    /// Request figures for the metrics endpoint (None: off).
    pub metrics: Option<Metrics>,
    /// Peers whose proxy headers are believed (None: proxy headers off); proxy.rs.
    pub proxies: Option<TrustedProxies>,
    /// Connections arrive over TLS (the scheme a request has without proxy headers).
    pub secure: bool,
    /// HTTP/2's limits, or None when HTTP/2 is off.
    pub http2: Option<crate::http2::settings::Config>,
    /// Clear-text HTTP/2 by prior knowledge (with `http2`).
    pub h2c: bool,
    /// HTTP/1.1 is served (else HTTP/2 only).
    pub http1: bool,
    /// Clear-text HTTP/2 by `Upgrade: h2c` (with `http2`).
    pub h2c_upgrade: bool,
    /// `veter.context.request_var` (a `ContextVar`): the request while its handler
    /// runs (set and reset through `ffi::context_var`).
    pub request_var: Py<PyAny>,
    /// Open connections served at once (0: no cap); the others wait unread.
    pub max_connections: usize,
    capacity_waiting: Mutex<VecDeque<(u64, C)>>,
    /// Requests routed so far (for recycling by request count and for metrics).
    pub requests_served: AtomicU64,
    next_id: AtomicU64,
    connections: Mutex<HashMap<u64, C>>,
    pub on_drained: Mutex<Option<Py<PyAny>>>,
    /// Connections with answers finished by tasks during this loop iteration, each
    /// written once when the iteration's callbacks are done (`write_later`).
    writes_later: Mutex<Vec<C>>,
    /// `lagwatch::reads()` when an answer a task finished was last written at once.
    written_at_read: AtomicU64,
    /// The event loop's objects every connection keeps, made by the loop's first
    /// connection (`event_loop.rs`).
    pub(crate) loop_refs: Mutex<Option<crate::event_loop::LoopRefs>>,
}

impl<C: Handle> Shared<C> {
    /// Serves the ASGI app `asgi` instead of routes.
    pub fn host(&mut self, py: Python<'_>, asgi: crate::asgi::Asgi) {
        let route = |handler: &Py<PyAny>, websocket: bool| Route {
            handler: handler.clone_ref(py),
            is_async: true,
            stream_body: !websocket,
            websocket,
            pattern: PyString::intern(py, "").unbind(),
            param_names: Vec::new(),
        };
        self.hosted = Some(route(&asgi.app, false));
        self.hosted_ws = asgi.websocket.as_ref().map(|entry| route(entry, true));
        self.asgi = Some(asgi);
    }

    #[allow(clippy::too_many_arguments)] // the settings are one; the rest are what the app hands over
    pub fn new(
        py: Python<'_>,
        routes: Vec<RouteSpec>,
        app: Py<PyAny>,
        error_handler: Py<PyAny>,
        config: ServerSettings,
        access_log: Option<Py<LogFile>>,
        access_log_skip: Vec<String>,
        eager_tasks: Option<bool>,
        unmatched: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let timeouts = config.timeouts()?;
        let linger = config.linger()?;
        let queue_timeout = timeouts::seconds("queue_timeout", config.queue_timeout, true)
            .map_err(PyValueError::new_err)?;
        let limits = config.limits()?;
        if config.max_pipelined == 0 {
            return Err(PyValueError::new_err("max_pipelined must be at least 1"));
        }
        if let Some(h) = &config.server_header {
            crate::response::check_header_value("server", h)?;
        }
        let observe = Observe::new(
            py,
            config.request_id_header.as_deref(),
            access_log,
            &config.access_log_format,
            access_log_skip,
        )?;
        let proxies = config
            .proxy_headers
            .then(|| TrustedProxies::parse(&config.forwarded_allow_ips))
            .transpose()
            .map_err(PyValueError::new_err)?;
        let (tree, table) = build_routes(py, routes)?;
        let route_count = table.len();
        let supports_eager = py.version_info() >= (3, 12);
        let eager = match eager_tasks {
            Some(true) if !supports_eager => {
                return Err(PyValueError::new_err(
                    "eager_tasks needs Python 3.12 or newer",
                ));
            }
            Some(flag) => flag,
            None => supports_eager,
        };
        let task_type = py.import("asyncio")?.getattr("Task")?.unbind();
        let run_deferred = if queue_timeout.is_some() {
            Some(
                py.import("veter.concurrency")?
                    .getattr("run_deferred")?
                    .unbind(),
            )
        } else {
            None
        };
        let unmatched = unmatched.map(|handler| Route {
            handler,
            is_async: true,
            stream_body: false,
            websocket: false,
            pattern: PyString::intern(py, "").unbind(),
            param_names: Vec::new(),
        });
        let http2 = config.http2();
        Ok(Shared {
            router: tree,
            unmatched,
            asgi: None,
            hosted: None,
            hosted_ws: None,
            routes: table,
            limits,
            server_line: config
                .server_header
                .map_or_else(Vec::new, |h| format!("Server: {h}\r\n").into_bytes()),
            timeouts,
            linger,
            max_pipelined: config.max_pipelined,
            app,
            error_handler,
            eager_tasks: eager,
            task_type,
            run_deferred,
            shutting_down: AtomicBool::new(false),
            last_answers: AtomicBool::new(false),
            overload: Overload::new(config.max_concurrency, queue_timeout),
            request_ids: observe.request_ids,
            access: observe.access,
            metrics: config
                .metrics_path
                .is_some()
                .then(|| Metrics::new(route_count)),
            proxies,
            secure: config.ssl_certfile.is_some(),
            http2,
            h2c: config.h2c,
            http1: config.http1,
            h2c_upgrade: config.h2c_upgrade,
            request_var: observe.request_var,
            max_connections: config.max_connections,
            capacity_waiting: Mutex::new(VecDeque::new()),
            requests_served: AtomicU64::new(0),
            next_id: AtomicU64::new(0),
            connections: Mutex::new(HashMap::new()),
            on_drained: Mutex::new(None),
            writes_later: Mutex::new(Vec::new()),
            written_at_read: AtomicU64::new(u64::MAX),
            loop_refs: Mutex::new(None),
        })
    }
}

impl<C: Handle> Shared<C> {
    pub fn register(&self, id: u64, conn: C) {
        self.lock().insert(id, conn);
    }

    /// A connection closed: returns the connections accepted over the cap that may
    /// now be served, in order (the caller admits them).
    pub fn unregister(&self, py: Python<'_>, id: u64) -> Vec<C> {
        let (now_empty, open) = {
            let mut conns = self.lock();
            conns.remove(&id);
            (conns.is_empty(), conns.len())
        };
        if now_empty && self.shutting_down.load(Ordering::Relaxed) {
            self.fire_drained(py);
        }
        // A slot freed: serve the connections accepted over the cap, in order.
        if self.max_connections > 0 {
            let mut waiting = self
                .capacity_waiting
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            waiting.retain(|(waiting_id, _)| *waiting_id != id);
            let mut active = open.saturating_sub(waiting.len());
            let mut resume = Vec::new();
            while active < self.max_connections {
                let Some((_, conn)) = waiting.pop_front() else {
                    break;
                };
                resume.push(conn);
                active += 1;
            }
            return resume;
        }
        Vec::new()
    }

    /// Whether a connection just registered is over `max_connections`; if so it
    /// waits (unread) for a slot.
    pub fn over_capacity(&self, id: u64, conn: &C, py: Python<'_>) -> bool {
        if self.max_connections == 0 {
            return false;
        }
        let mut waiting = self
            .capacity_waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let open = self.lock().len();
        if open.saturating_sub(waiting.len()) <= self.max_connections {
            return false;
        }
        waiting.push_back((id, conn.clone_ref(py)));
        true
    }

    /// Adds `conn` to the connections written at the end of this loop iteration;
    /// true for the first (the caller schedules the write).
    pub fn write_later(&self, conn: C) -> bool {
        let mut later = self
            .writes_later
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        later.push(conn);
        later.len() == 1
    }

    /// Whether an answer a task just finished is written at once rather than at the
    /// end of the loop iteration: the first since the loop last read is (and
    /// takes the turn); later ones wait. A read happens between two iterations'
    /// callbacks, so at most one such write is made in an iteration, at its first
    /// finished task, and the others still go out together at its end; one request
    /// an iteration goes out without the end's handle (docs/design.md).
    pub fn write_at_once(&self) -> bool {
        let read = crate::lagwatch::reads();
        self.written_at_read.swap(read, Ordering::Relaxed) != read
    }

    /// The connections `write_later` collected, emptying the list.
    pub fn take_writes_later(&self) -> Vec<C> {
        std::mem::take(
            &mut *self
                .writes_later
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, C>> {
        // A poisoned lock only means a panic happened while it was held; the map
        // itself is still consistent (inserts and removes are single calls).
        self.connections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn snapshot(&self, py: Python<'_>) -> Vec<C> {
        self.lock().values().map(|c| c.clone_ref(py)).collect()
    }

    pub fn fire_drained(&self, py: Python<'_>) {
        let cb = self
            .on_drained
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(cb) = cb {
            if let Err(err) = cb.call0(py) {
                err.print(py);
            }
        }
    }

    pub fn connection_count(&self) -> usize {
        self.lock().len()
    }
}

/// The router and the route table, from the app's endpoints.
fn build_routes(py: Python<'_>, routes: Vec<RouteSpec>) -> PyResult<(Router, Vec<Route>)> {
    let mut tree = Router::new();
    let mut table = Vec::with_capacity(routes.len());
    for (index, spec) in routes.into_iter().enumerate() {
        let methods: Vec<&str> = spec.methods.iter().map(String::as_str).collect();
        tree.add(&methods, &spec.path, index)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let param_names = tree
            .param_names(index)
            .iter()
            .map(|n| PyString::intern(py, n).unbind())
            .collect();
        table.push(Route {
            handler: spec.target,
            is_async: spec.is_async,
            stream_body: spec.stream_body,
            websocket: spec.websocket,
            pattern: PyString::new(py, &spec.path).unbind(),
            param_names,
        });
    }
    Ok((tree, table))
}

/// What the dispatcher needs to identify and log requests (built in `new`).
struct Observe {
    request_ids: Option<RequestIds>,
    access: Option<AccessLog>,
    request_var: Py<PyAny>,
}

impl Observe {
    fn new(
        py: Python<'_>,
        request_id_header: Option<&str>,
        access_log: Option<Py<LogFile>>,
        access_log_format: &str,
        access_log_skip: Vec<String>,
    ) -> PyResult<Self> {
        if let Some(name) = request_id_header {
            crate::response::check_header_name(name)?;
        }
        let access = access_log
            .map(|file| AccessLog::new(file, access_log_format, access_log_skip))
            .transpose()?;
        let request_var = py.import("veter.context")?.getattr("request_var")?;
        Ok(Observe {
            request_ids: request_id_header.map(RequestIds::new),
            access,
            request_var: request_var.unbind(),
        })
    }
}
