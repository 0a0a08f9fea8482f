//! The `http` scope of one request (ASGI 3, HTTP spec 2.3), built from its parsed
//! head: what uvicorn and Granian give an app, key for key, so an app moved onto
//! veter sees the same dict.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use super::Asgi;
use crate::http1::parse::Version;
use crate::request::{percent_decode, Request};

/// `scope["asgi"]` of an `http` scope: one dict for every scope, as `extensions`
/// (apps read it; a copy per request cost ~250 instructions a request).
static ASGI_VERSION: pyo3::sync::PyOnceLock<Py<PyDict>> = pyo3::sync::PyOnceLock::new();

/// `scope["extensions"]` of an `http` scope: `http.response.pathsend`. One dict for
/// every scope (apps read it; a copy per request would cost every request).
static EXTENSIONS: pyo3::sync::PyOnceLock<Py<PyDict>> = pyo3::sync::PyOnceLock::new();

/// Everything of the scope that does not come from the request itself.
pub struct Place<'a, 'py> {
    /// `(host, port)` of the client, as the request shows it (a trusted proxy's word
    /// included), or None.
    pub client: Bound<'py, PyAny>,
    /// `(host, port)` of the listening socket (`(path, None)` for a Unix socket), or None.
    pub server: &'a Bound<'py, PyAny>,
    /// "http" or "https".
    pub scheme: &'static str,
}

/// The dict every `http` scope of a worker is copied from: every key, in the order
/// uvicorn gives them, with the values that never change (`type`, `asgi`,
/// `root_path`, `extensions`), the most common ones of the rest (`method` GET,
/// `query_string` empty: `http` does not store them again, ~100 instructions
/// each), and None for what `http` always overwrites.
pub fn template<'py>(py: Python<'py>, root_path: &str) -> PyResult<Bound<'py, PyDict>> {
    let scope = PyDict::new(py);
    let none = py.None();
    scope.set_item(pyo3::intern!(py, "type"), pyo3::intern!(py, "http"))?;
    let version = ASGI_VERSION.get_or_try_init(py, || {
        let version = PyDict::new(py);
        version.set_item("version", "3.0")?;
        version.set_item("spec_version", "2.3")?;
        Ok::<_, PyErr>(version.unbind())
    })?;
    scope.set_item(pyo3::intern!(py, "asgi"), version.bind(py))?;
    scope.set_item(pyo3::intern!(py, "method"), method(py, b"GET"))?;
    for key in [
        pyo3::intern!(py, "scheme"),
        pyo3::intern!(py, "path"),
        pyo3::intern!(py, "raw_path"),
    ] {
        scope.set_item(key, &none)?;
    }
    scope.set_item(pyo3::intern!(py, "query_string"), PyBytes::new(py, b""))?;
    scope.set_item(pyo3::intern!(py, "root_path"), root_path)?;
    for key in [
        pyo3::intern!(py, "headers"),
        pyo3::intern!(py, "client"),
        pyo3::intern!(py, "server"),
        pyo3::intern!(py, "state"),
    ] {
        scope.set_item(key, &none)?;
    }
    let extensions = EXTENSIONS.get_or_try_init(py, || {
        let extensions = PyDict::new(py);
        extensions.set_item("http.response.pathsend", PyDict::new(py))?;
        Ok::<_, PyErr>(extensions.unbind())
    })?;
    scope.set_item(pyo3::intern!(py, "extensions"), extensions.bind(py))?;
    Ok(scope)
}

/// A connection's own scope template: the worker's with what its requests share
/// already set (`http_version`, `scheme`, `client`, `server`), made at its second
/// request (a connection that serves one does not pay for it) and used while its
/// requests keep those (a request whose client a trusted proxy names does not).
#[derive(Default)]
pub struct ConnectionBase {
    /// The template, and the version and scheme (https) it was made for.
    made: Option<(Py<PyDict>, Version, bool)>,
    /// A request of this connection was given a scope already.
    seen: bool,
}

impl ConnectionBase {
    /// The template for `request`'s scope, if it can have one (see the type's doc).
    pub fn for_request<'py>(
        &mut self,
        py: Python<'py>,
        asgi: &Asgi,
        request: &Request,
        place: &Place<'_, 'py>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let forwarded = request
            .exchange
            .forwarded
            .as_ref()
            .is_some_and(|f| f.client.is_some());
        if forwarded {
            return Ok(None);
        }
        let (version, https) = (request.parts.version, place.scheme == "https");
        if let Some((template, v, h)) = &self.made {
            if *v == version && *h == https {
                return Ok(Some(template.bind(py).clone()));
            }
        }
        if !std::mem::replace(&mut self.seen, true) {
            return Ok(None);
        }
        let template = asgi.template.bind(py).copy()?;
        set_shared(py, &template, version, place)?;
        self.made = Some((template.clone().unbind(), version, https));
        Ok(Some(template))
    }
}

/// What a connection's requests share, into `scope`.
fn set_shared<'py>(
    py: Python<'py>,
    scope: &Bound<'py, PyDict>,
    version: Version,
    place: &Place<'_, 'py>,
) -> PyResult<()> {
    let http_version = match version {
        Version::Http10 => pyo3::intern!(py, "1.0"),
        Version::Http11 => pyo3::intern!(py, "1.1"),
        Version::Http2 => pyo3::intern!(py, "2"),
    };
    scope.set_item(pyo3::intern!(py, "http_version"), http_version)?;
    let scheme = if place.scheme == "https" {
        pyo3::intern!(py, "https")
    } else {
        pyo3::intern!(py, "http")
    };
    scope.set_item(pyo3::intern!(py, "scheme"), scheme)?;
    scope.set_item(pyo3::intern!(py, "client"), &place.client)?;
    scope.set_item(pyo3::intern!(py, "server"), place.server)
}

/// The scope dict for `request` (its `type` is "http"); `base`, the connection's
/// template when it has one for this request (`ConnectionBase`).
pub fn http<'py>(
    py: Python<'py>,
    asgi: &Asgi,
    request: &Request,
    place: &Place<'_, 'py>,
    base: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let parts = &request.parts;
    let buf = parts.buf.bind(py).as_bytes();
    let head = &buf[parts.base..];
    let scope = if let Some(base) = base {
        base.copy()?
    } else {
        let scope = asgi.template.bind(py).copy()?;
        set_shared(py, &scope, parts.version, place)?;
        scope
    };
    let raw_method = &head[parts.method.clone()];
    if raw_method != b"GET" {
        // (The template's is GET.)
        scope.set_item(pyo3::intern!(py, "method"), method(py, raw_method))?;
    }
    let raw_path = &head[parts.path.clone()];
    // uvicorn's way: root_path leads both path and raw_path.
    // Most paths have no escape and are ASCII: the text is the bytes themselves,
    // made a `str` without a Rust `String` in between.
    let path = match std::str::from_utf8(raw_path) {
        Ok(text) if !raw_path.contains(&b'%') => std::borrow::Cow::Borrowed(text),
        _ => std::borrow::Cow::Owned(percent_decode(raw_path)),
    };
    if asgi.root_path.is_empty() {
        scope.set_item(pyo3::intern!(py, "path"), PyString::new(py, &path))?;
        scope.set_item(pyo3::intern!(py, "raw_path"), PyBytes::new(py, raw_path))?;
    } else {
        scope.set_item(
            pyo3::intern!(py, "path"),
            format!("{}{path}", asgi.root_path),
        )?;
        let mut full = Vec::with_capacity(asgi.root_path.len() + raw_path.len());
        full.extend_from_slice(asgi.root_path.as_bytes());
        full.extend_from_slice(raw_path);
        scope.set_item(pyo3::intern!(py, "raw_path"), PyBytes::new(py, &full))?;
    }
    let query: &[u8] = parts.query.clone().map_or(b"", |q| &head[q]);
    if !query.is_empty() {
        // (The template's is empty.)
        scope.set_item(pyo3::intern!(py, "query_string"), PyBytes::new(py, query))?;
    }
    scope.set_item(pyo3::intern!(py, "headers"), headers(py, request, head)?)?;
    let state = match &asgi.state {
        Some(state) => state.bind(py).copy()?,
        None => PyDict::new(py),
    };
    let id = request.exchange.id();
    if !id.is_empty() {
        state.set_item(pyo3::intern!(py, "request_id"), id)?;
    }
    scope.set_item(pyo3::intern!(py, "state"), state)?;
    Ok(scope)
}

/// The `websocket` scope of a handshake (ASGI WebSocket spec 2.4): the `http`
/// scope's keys but `method`, the `ws`/`wss` scheme, the subprotocols the client
/// offered, and the denial extension (`websocket.http.response`).
pub fn websocket<'py>(
    py: Python<'py>,
    asgi: &Asgi,
    request: &Request,
    place: &Place<'_, 'py>,
) -> PyResult<Bound<'py, PyDict>> {
    let scope = http(py, asgi, request, place, None)?;
    scope.set_item(pyo3::intern!(py, "type"), pyo3::intern!(py, "websocket"))?;
    scope.del_item(pyo3::intern!(py, "method"))?;
    let scheme = if place.scheme == "https" { "wss" } else { "ws" };
    scope.set_item(pyo3::intern!(py, "scheme"), scheme)?;
    let version = PyDict::new(py);
    version.set_item("version", "3.0")?;
    version.set_item("spec_version", "2.4")?;
    scope.set_item(pyo3::intern!(py, "asgi"), version)?;
    let parts = &request.parts;
    let head = &parts.buf.bind(py).as_bytes()[parts.base..];
    let offered = PyList::empty(py);
    for span in &parts.headers {
        if head[span.name.clone()].eq_ignore_ascii_case(b"sec-websocket-protocol") {
            for token in head[span.value.clone()].split(|&b| b == b',') {
                let token = token.trim_ascii();
                if !token.is_empty() {
                    offered.append(PyString::new(py, &String::from_utf8_lossy(token)))?;
                }
            }
        }
    }
    scope.set_item(pyo3::intern!(py, "subprotocols"), offered)?;
    let extensions = PyDict::new(py);
    extensions.set_item("websocket.http.response", PyDict::new(py))?;
    scope.set_item(pyo3::intern!(py, "extensions"), extensions)?;
    Ok(scope)
}

/// The method as a `str`; the common ones are interned (no new string).
pub(super) fn method<'py>(py: Python<'py>, raw: &[u8]) -> Bound<'py, PyString> {
    match raw {
        b"GET" => pyo3::intern!(py, "GET").clone(),
        b"POST" => pyo3::intern!(py, "POST").clone(),
        b"HEAD" => pyo3::intern!(py, "HEAD").clone(),
        b"PUT" => pyo3::intern!(py, "PUT").clone(),
        b"DELETE" => pyo3::intern!(py, "DELETE").clone(),
        b"PATCH" => pyo3::intern!(py, "PATCH").clone(),
        b"OPTIONS" => pyo3::intern!(py, "OPTIONS").clone(),
        // A token: ASCII, checked by the parser.
        _ => PyString::new(py, &String::from_utf8_lossy(raw)),
    }
}

/// `[(name, value), ...]` as received, names lowercased (bytes, per the spec).
fn headers<'py>(py: Python<'py>, request: &Request, head: &[u8]) -> PyResult<Bound<'py, PyList>> {
    let spans = &request.parts.headers;
    let mut pairs = Vec::with_capacity(spans.len());
    for span in spans {
        let name = &head[span.name.clone()];
        let name = match common_name(py, name)? {
            Some(known) => known,
            None => PyBytes::new_with(py, name.len(), |out| {
                for (o, b) in out.iter_mut().zip(name) {
                    *o = b.to_ascii_lowercase();
                }
                Ok(())
            })?,
        };
        let value = PyBytes::new(py, &head[span.value.clone()]);
        pairs.push(PyTuple::new(py, [name.into_any(), value.into_any()])?);
    }
    PyList::new(py, pairs)
}

/// The names most requests carry, lowercased once per worker: shared by every
/// scope instead of made per request.
const COMMON_NAMES: [&[u8]; 12] = [
    b"host",
    b"user-agent",
    b"accept",
    b"accept-encoding",
    b"accept-language",
    b"connection",
    b"content-type",
    b"content-length",
    b"cookie",
    b"x-forwarded-for",
    b"x-request-id",
    b"authorization",
];

static COMMON: pyo3::sync::PyOnceLock<Vec<Py<PyBytes>>> = pyo3::sync::PyOnceLock::new();

fn common_name<'py>(py: Python<'py>, name: &[u8]) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let Some(i) = COMMON_NAMES
        .iter()
        .position(|known| known.eq_ignore_ascii_case(name))
    else {
        return Ok(None);
    };
    let common = COMMON.get_or_try_init(py, || {
        Ok::<_, PyErr>(
            COMMON_NAMES
                .iter()
                .map(|n| PyBytes::new(py, n).unbind())
                .collect(),
        )
    })?;
    Ok(Some(common[i].bind(py).clone()))
}
