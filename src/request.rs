//! The `Request` pyclass: a view over bytes the parser already validated.
//!
//! Nothing becomes a Python object until a handler asks for it: the request keeps a
//! reference to the `bytes` object the head arrived in (no copy when a whole request
//! came in one read) plus byte ranges, and builds `method`, `path`, `headers`, `query`
//! and the rest on first access, caching each one.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use smallvec::SmallVec;

use crate::http1::parse::{HeaderSpan, Version};
use crate::proxy::Forwarded;
use crate::pyrefs;
use crate::query_pick::QueryPick;
use crate::ready::{ready, Ready};
use rare::Rare;

mod rare;
mod renew;
pub use crate::target::{percent_decode, split_target};

/// What the server keeps about one request for its response: its id and when it
/// began (for the access log).
pub struct Exchange {
    /// The request's id, echoed in the response (`Id::Off` when ids are off).
    pub id: crate::request_id::Id,
    /// When the request was routed (None when nothing measures it).
    pub started: Option<Instant>,
    /// The router's index of the route that matched, or the metrics slot a hosted
    /// app's answer counts in (`set_route`); `NO_ROUTE`: none.
    pub route: AtomicUsize,
    /// What trusted proxy headers said (None: no proxy, or none believed).
    pub forwarded: Option<Box<Forwarded>>,
    /// The connection came over TLS.
    pub secure: bool,
}

/// The largest read a kept request object may hold on to (`Request::reusable`): an
/// idle keep-alive connection keeps at most this much of its last read alive.
pub const SPARE_READ_BYTES: usize = 4096;

/// `Exchange::route` when no route matched.
pub const NO_ROUTE: usize = usize::MAX;

impl Exchange {
    /// The route (or metrics slot) the request's answer counts in.
    pub fn route(&self) -> Option<usize> {
        let route = self.route.load(Ordering::Relaxed);
        (route != NO_ROUTE).then_some(route)
    }

    /// Counts the answer in `route` (the request itself is shared, hence atomic).
    pub fn set_route(&self, route: usize) {
        self.route.store(route, Ordering::Relaxed);
    }

    /// The request id, or "" when ids are off.
    pub fn id(&self) -> &str {
        self.id.as_str()
    }

    /// The id's bytes (no UTF-8 check: ids are ASCII by construction), or empty.
    pub fn id_bytes(&self) -> &[u8] {
        self.id.as_bytes()
    }
}

impl Parts {
    /// The value of the first header named `name` (lowercase), if any.
    pub fn first_header<'a>(&self, head: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .find(|h| head[h.name.clone()].eq_ignore_ascii_case(name))
            .map(|h| &head[h.value.clone()])
    }

    pub fn version_text(&self) -> &'static str {
        match self.version {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
            Version::Http2 => "HTTP/2.0",
        }
    }
}

/// Where the body of a request lives.
pub enum Body {
    Empty,
    /// A range of the same `bytes` object the head is in.
    Slice(Range<usize>),
    /// Collected across reads or decoded from chunks.
    Owned(Vec<u8>),
    /// Read by the handler as it arrives (`request.stream()`; see protocol/upload.rs).
    Stream(Py<crate::body_stream::BodyStream>),
}

/// The parsed head of one request, owned by the connection until it is dispatched.
pub struct Parts {
    pub buf: Py<PyBytes>,
    /// Where the head starts in `buf`; every range below is relative to it.
    pub base: usize,
    pub method: Range<usize>,
    pub target: Range<usize>,
    pub path: Range<usize>,
    pub query: Option<Range<usize>>,
    pub version: Version,
    /// Header spans; up to 4 live inline in the request (no allocation). More inline
    /// made the request object larger than the small-object allocator serves, which
    /// measured slower (callgrind, instructions per request).
    pub headers: SmallVec<[HeaderSpan; 4]>,
    pub body: Body,
}

/// A request's parts where they were built, until the `Request` object takes them
/// (`take`, once). The shell passes this down by reference: moving `Parts` by value
/// through `dispatch` and `call_handler` measured one more 256-byte copy per request
/// (callgrind), as LLVM cannot elide a move out of a local whose address escaped.
pub struct Built(Option<Parts>);

impl Built {
    pub fn new(parts: Parts) -> Self {
        Built(Some(parts))
    }

    /// The parts, until taken.
    pub fn get(&self) -> &Parts {
        self.0
            .as_ref()
            .expect("a request's parts are read before they are taken")
    }

    pub fn get_mut(&mut self) -> &mut Parts {
        self.0
            .as_mut()
            .expect("a request's parts are changed before they are taken")
    }

    /// The parts, moved out for the request object (the one move).
    pub fn take(&mut self) -> Parts {
        self.0.take().expect("a request's parts are taken once")
    }
}

/// Whether an `Upgrade` header of the head in `buf` names `websocket` (RFC 6455
/// section 4.2.1; token names compare case-insensitively).
pub fn upgrades_to_websocket(buf: &[u8], headers: &[crate::http1::parse::HeaderSpan]) -> bool {
    headers.iter().any(|h| {
        buf[h.name.clone()].eq_ignore_ascii_case(b"upgrade")
            && buf[h.value.clone()]
                .split(|&b| b == b',')
                .any(|token| token.trim_ascii().eq_ignore_ascii_case(b"websocket"))
    })
}

fn latin1(bytes: &[u8]) -> String {
    // Header values may carry obs-text; decode it byte-for-byte like the WSGI/ASGI
    // servers do, so nothing is lost and a handler can re-encode if it must.
    if bytes.is_ascii() {
        // ASCII is valid UTF-8.
        String::from_utf8(bytes.to_vec()).unwrap_or_default()
    } else {
        bytes.iter().map(|&b| char::from(b)).collect()
    }
}

#[pyclass(module = "veter._core", name = "Request", frozen, freelist = 64)]
pub struct Request {
    pub parts: Parts,
    pub exchange: Exchange,
    params: Option<Py<PyDict>>,
    client: Py<PyAny>,
    app: Py<PyAny>,
    route: Option<Py<PyString>>,
    // The two caches the guard's scenarios read (`query_get`, `post1k`) stay inline;
    // the rest wait behind one box (`Rare`).
    query_obj: PyOnceLock<Py<PyAny>>,
    body_obj: PyOnceLock<Py<PyBytes>>,
    rare: PyOnceLock<Box<Rare>>,
}

impl Drop for Request {
    fn drop(&mut self) {
        // A form's files are closed when the request is done with: the disk space
        // of a spooled file is freed now, not whenever the collector gets to it.
        if let Some(form) = self.rare.get_mut().and_then(|rare| rare.form_obj.take()) {
            Python::attach(|py| {
                if let Err(e) = form.bind(py).call_method0("_release") {
                    e.write_unraisable(py, None);
                }
            });
        }
    }
}

impl Request {
    pub fn new(
        parts: Parts,
        exchange: Exchange,
        params: Option<Py<PyDict>>,
        client: Py<PyAny>,
        app: Py<PyAny>,
        route: Option<Py<PyString>>,
    ) -> Self {
        Request {
            parts,
            exchange,
            params,
            client,
            app,
            route,
            query_obj: PyOnceLock::new(),
            body_obj: PyOnceLock::new(),
            rare: PyOnceLock::new(),
        }
    }

    fn rare(&self, py: Python<'_>) -> &Rare {
        self.rare.get_or_init(py, || Box::new(Rare::new()))
    }

    fn bytes<'a>(&'a self, py: Python<'a>) -> &'a [u8] {
        &self.parts.buf.bind(py).as_bytes()[self.parts.base..]
    }

    fn header_values<'a>(
        &'a self,
        py: Python<'a>,
        name: &[u8],
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        let buf = self.bytes(py);
        let name = name.to_vec();
        self.parts
            .headers
            .iter()
            .filter(move |h| buf[h.name.clone()].eq_ignore_ascii_case(&name))
            .map(move |h| &buf[h.value.clone()])
    }

    fn body_bytes(&self, py: Python<'_>) -> PyResult<Py<PyBytes>> {
        if matches!(self.parts.body, Body::Stream(_)) {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "this route streams its body (stream_body=True): read it with `async for chunk in request.stream()`",
            ));
        }
        Ok(self
            .body_obj
            .get_or_init(py, || match &self.parts.body {
                Body::Empty | Body::Stream(_) => PyBytes::new(py, b"").unbind(),
                Body::Slice(r) => PyBytes::new(py, &self.bytes(py)[r.clone()]).unbind(),
                Body::Owned(v) => PyBytes::new(py, v).unbind(),
            })
            .clone_ref(py))
    }

    fn charset(&self, py: Python<'_>) -> String {
        let Some(ct) = self.header_values(py, b"content-type").next() else {
            return "utf-8".to_owned();
        };
        let ct = latin1(ct);
        ct.split(';')
            .skip(1)
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
            .map_or_else(
                || "utf-8".to_owned(),
                |(_, v)| v.trim().trim_matches('"').to_owned(),
            )
    }
}

#[pymethods]
impl Request {
    #[getter]
    fn method(&self, py: Python<'_>) -> Py<PyString> {
        self.rare(py)
            .method_str
            .get_or_init(py, || {
                let m = &self.bytes(py)[self.parts.method.clone()];
                PyString::new(py, std::str::from_utf8(m).unwrap_or("")).unbind()
            })
            .clone_ref(py)
    }

    /// The percent-decoded path, without the query string.
    #[getter]
    fn path(&self, py: Python<'_>) -> Py<PyString> {
        self.rare(py)
            .path_str
            .get_or_init(py, || {
                let raw = &self.bytes(py)[self.parts.path.clone()];
                PyString::new(py, &percent_decode(raw)).unbind()
            })
            .clone_ref(py)
    }

    /// The path exactly as received (still percent-encoded), as bytes.
    #[getter]
    fn raw_path<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.bytes(py)[self.parts.path.clone()])
    }

    /// The request target exactly as received (path and query), as str.
    #[getter]
    fn target(&self, py: Python<'_>) -> String {
        latin1(&self.bytes(py)[self.parts.target.clone()])
    }

    #[getter]
    fn query_string(&self, py: Python<'_>) -> String {
        self.parts
            .query
            .as_ref()
            .map_or_else(String::new, |r| latin1(&self.bytes(py)[r.clone()]))
    }

    #[getter]
    fn query(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.query_obj
            .get_or_try_init(py, || {
                // Parsed here, pairs and index both, for QueryParams to take as
                // they are (building them in Python cost ~21,000 instructions for
                // three parameters).
                let raw = self
                    .parts
                    .query
                    .as_ref()
                    .map_or(&b""[..], |r| &self.bytes(py)[r.clone()]);
                let items = PyList::empty(py);
                let index = PyDict::new(py);
                for (name, value) in crate::target::parse_query(raw) {
                    let name = PyString::new(py, &name);
                    let value = PyString::new(py, &value);
                    items.append((&name, &value))?;
                    match index.get_item(&name)? {
                        Some(values) => values.cast::<PyList>()?.append(&value)?,
                        None => index.set_item(&name, PyList::new(py, [&value])?)?,
                    }
                }
                Ok(pyrefs::get(py)?
                    .query_params
                    .bind(py)
                    .call_method1("_from_parsed", (items, index))?
                    .unbind())
            })
            .map(|o| o.clone_ref(py))
    }

    #[getter]
    fn headers(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.rare(py)
            .headers_obj
            .get_or_try_init(py, || {
                let buf = self.bytes(py);
                let list = PyList::empty(py);
                for h in &self.parts.headers {
                    let pair = PyTuple::new(
                        py,
                        [latin1(&buf[h.name.clone()]), latin1(&buf[h.value.clone()])],
                    )?;
                    list.append(pair)?;
                }
                Ok(pyrefs::get(py)?.headers.bind(py).call1((list,))?.unbind())
            })
            .map(|o| o.clone_ref(py))
    }

    #[getter]
    fn cookies(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.rare(py)
            .cookies_obj
            .get_or_try_init(py, || {
                let joined = self
                    .header_values(py, b"cookie")
                    .map(latin1)
                    .collect::<Vec<_>>()
                    .join("; ");
                Ok(pyrefs::get(py)?
                    .parse_cookies
                    .bind(py)
                    .call1((joined,))?
                    .unbind())
            })
            .map(|o| o.clone_ref(py))
    }

    /// The query values `pick` names, into `into` (a typed handler's: the query
    /// mapping is not built for them).
    fn pick_query(
        &self,
        py: Python<'_>,
        pick: &QueryPick,
        into: &Bound<'_, PyDict>,
    ) -> PyResult<()> {
        let raw = self
            .parts
            .query
            .as_ref()
            .map_or(&b""[..], |r| &self.bytes(py)[r.clone()]);
        pick.fill(py, raw, into)
    }

    /// The first value of header `name` (case-insensitive), without building the
    /// whole headers mapping.
    #[pyo3(signature = (name, default = None))]
    fn header(&self, py: Python<'_>, name: &str, default: Option<String>) -> Option<String> {
        self.header_values(py, name.as_bytes())
            .next()
            .map(latin1)
            .or(default)
    }

    #[getter]
    fn http_version(&self) -> &'static str {
        match self.parts.version {
            Version::Http10 => "1.0",
            Version::Http11 => "1.1",
            Version::Http2 => "2",
        }
    }

    /// The request id (from the incoming `X-Request-ID` when well formed, generated
    /// otherwise), or None when request ids are off.
    #[getter]
    fn id(&self) -> Option<&str> {
        let id = self.exchange.id();
        (!id.is_empty()).then_some(id)
    }

    /// (host, port) of the client: the peer, or, behind a trusted proxy with proxy
    /// headers on, the address the proxy named (port 0 when it gave none). None
    /// when the transport does not know the peer.
    #[getter]
    fn client(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some((ip, port)) = self.exchange.forwarded.as_ref().and_then(|f| f.client) {
            return Ok((ip.to_string(), port)
                .into_pyobject(py)?
                .into_any()
                .unbind());
        }
        Ok(self.client.clone_ref(py))
    }

    /// "http" or "https" (or "ws"/"wss", as a trusted proxy said): how the client
    /// reached the server.
    #[getter]
    pub fn scheme(&self) -> &'static str {
        match self.exchange.forwarded.as_ref().and_then(|f| f.scheme) {
            Some(scheme) => scheme,
            None if self.exchange.secure => "https",
            None => "http",
        }
    }

    /// The host the client asked for, with its port when it gave one: from a trusted
    /// proxy's headers, else the `Host` header; None when neither names one.
    #[getter]
    fn host(&self, py: Python<'_>) -> Option<String> {
        if let Some(host) = self
            .exchange
            .forwarded
            .as_ref()
            .and_then(|f| f.host.clone())
        {
            return Some(host);
        }
        self.header_values(py, b"host")
            .next()
            .filter(|h| !h.is_empty())
            .map(latin1)
    }

    /// The whole URL as the client asked for it: scheme, host and target (the
    /// target alone when the request named no host). Build absolute redirects from
    /// it: behind a trusted proxy it carries the scheme and host the proxy was asked for.
    #[getter]
    fn url(&self, py: Python<'_>) -> String {
        let target = self.target(py);
        match self.host(py) {
            Some(host) if target.starts_with('/') => format!("{}://{host}{target}", self.scheme()),
            _ => target,
        }
    }

    #[getter]
    fn path_params(&self, py: Python<'_>) -> Py<PyDict> {
        match &self.params {
            Some(p) => p.clone_ref(py),
            None => PyDict::new(py).unbind(),
        }
    }

    /// The route pattern that matched (e.g. "/items/{id:int}").
    #[getter]
    fn route(&self, py: Python<'_>) -> Option<Py<PyString>> {
        self.route.as_ref().map(|r| r.clone_ref(py))
    }

    #[getter]
    fn app(&self, py: Python<'_>) -> Py<PyAny> {
        self.app.clone_ref(py)
    }

    #[getter]
    fn state(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.rare(py)
            .state_obj
            .get_or_try_init(py, || {
                Ok::<_, PyErr>(pyrefs::get(py)?.state.bind(py).call0()?.unbind())
            })
            .map(|o| o.clone_ref(py))
    }

    /// The whole body as bytes (awaitable).
    fn body(&self, py: Python<'_>) -> PyResult<Py<Ready>> {
        ready(py, self.body_bytes(py)?.into_any())
    }

    /// The body as an async iterator of `bytes` pieces: as they arrive on routes
    /// declared with `stream_body=True`, in one piece otherwise.
    fn stream(&self, py: Python<'_>) -> PyResult<Py<crate::body_stream::BodyStream>> {
        if let Body::Stream(stream) = &self.parts.body {
            return Ok(stream.clone_ref(py));
        }
        let body = self.body_bytes(py)?;
        Py::new(
            py,
            crate::body_stream::BodyStream::complete(body.bind(py).as_bytes().to_vec()),
        )
    }

    /// The body parsed as a form (awaitable, `veter.FormData`): urlencoded or
    /// multipart, read by `veter.forms.read_form` under the `form_*` settings. Read
    /// once: later calls give the same form.
    fn form(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if let Some(form) = slf
            .get()
            .rare
            .get(py)
            .and_then(|rare| rare.form_obj.get(py))
        {
            return Ok(ready(py, form.clone_ref(py))?.into_any());
        }
        Ok(py
            .import("veter.forms")?
            .getattr("read_form")?
            .call1((slf,))?
            .unbind())
    }

    /// Keeps the form `read_form` made, for the next `form()`.
    fn _set_form(&self, py: Python<'_>, form: Py<PyAny>) {
        let _ = self.rare(py).form_obj.set(py, form);
    }

    /// The body decoded with the Content-Type charset, utf-8 by default (awaitable).
    fn text(&self, py: Python<'_>) -> PyResult<Py<Ready>> {
        let body = self.body_bytes(py)?;
        let charset = self.charset(py);
        let text = body.bind(py).call_method1("decode", (charset,))?;
        ready(py, text.unbind())
    }

    /// The body parsed as JSON (awaitable); invalid JSON raises
    /// `HTTPException(400)`, so a handler need not catch it.
    fn json(&self, py: Python<'_>) -> PyResult<Py<Ready>> {
        let body = self.body_bytes(py)?;
        let refs = pyrefs::get(py)?;
        match refs.json_loads.bind(py).call1((body,)) {
            Ok(value) => ready(py, value.unbind()),
            Err(e) => {
                let detail = format!("request body is not valid JSON: {}", e.value(py));
                let exc = refs.http_exception.bind(py).call1((400, detail))?;
                Err(PyErr::from_value(exc))
            }
        }
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let target = latin1(&self.bytes(py)[self.parts.target.clone()]);
        let method = std::str::from_utf8(&self.bytes(py)[self.parts.method.clone()])
            .unwrap_or("?")
            .to_owned();
        format!("<Request {method} {target}>")
    }
}
