//! The `environ` of a hosted WSGI app's request (PEP 3333), built from its parsed
//! head as the ASGI scope is: a copy of a per-worker template that holds what never
//! changes (`wsgi.*`, `SCRIPT_NAME`), and the request's own keys written into it.
//! Strings are PEP 3333's "native strings": the bytes read as Latin-1.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::scope::method;
use crate::request::Request;
use crate::target::percent_decode_bytes;

/// What a worker knows of the WSGI app it serves (`veter.hosted.wsgi.Bridge`).
pub struct Wsgi {
    /// `submit(environ, cycle)`: hands a request without a body to the thread pool.
    pub submit: Py<PyAny>,
    /// Every environ starts as a copy of this one (the keys that never change).
    pub template: Py<PyDict>,
}

/// The environ keys that come from the connection, made once per connection.
pub struct Place {
    /// `SERVER_NAME` and `SERVER_PORT`: the listening socket's.
    pub server: (Py<PyString>, Py<PyString>),
    /// `REMOTE_ADDR` and `REMOTE_PORT`: the peer's (None: a Unix socket).
    pub remote: Option<(Py<PyString>, Py<PyString>)>,
}

impl Place {
    /// From the connection's `client` and `server` pairs of the ASGI scope:
    /// `(host, port)`, `(path, None)` or None.
    pub fn new(client: &Bound<'_, PyAny>, server: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = client.py();
        let server = if server.is_none() {
            (PyString::new(py, "localhost"), PyString::new(py, "80"))
        } else {
            let port = server.get_item(1)?;
            let port = if port.is_none() {
                PyString::new(py, "0")
            } else {
                port.str()?
            };
            (server.get_item(0)?.str()?, port)
        };
        let remote = if client.is_none() {
            None
        } else {
            Some((
                client.get_item(0)?.str()?.unbind(),
                client.get_item(1)?.str()?.unbind(),
            ))
        };
        Ok(Place {
            server: (server.0.unbind(), server.1.unbind()),
            remote,
        })
    }
}

/// The environ of `request`: everything but `wsgi.input` (the bridge's).
pub fn environ<'py>(
    py: Python<'py>,
    wsgi: &Wsgi,
    request: &Request,
    place: &Place,
) -> PyResult<Bound<'py, PyDict>> {
    let parts = &request.parts;
    let head = &parts.buf.bind(py).as_bytes()[parts.base..];
    let env = wsgi.template.bind(py).copy()?;
    env.set_item(
        pyo3::intern!(py, "REQUEST_METHOD"),
        method(py, &head[parts.method.clone()]),
    )?;
    let path = percent_decode_bytes(&head[parts.path.clone()]);
    env.set_item(pyo3::intern!(py, "PATH_INFO"), latin1(py, &path))?;
    let query: &[u8] = parts.query.clone().map_or(b"", |q| &head[q]);
    env.set_item(pyo3::intern!(py, "QUERY_STRING"), latin1(py, query))?;
    env.set_item(pyo3::intern!(py, "SERVER_NAME"), place.server.0.bind(py))?;
    env.set_item(pyo3::intern!(py, "SERVER_PORT"), place.server.1.bind(py))?;
    let protocol = match parts.version {
        crate::http1::parse::Version::Http10 => pyo3::intern!(py, "HTTP/1.0"),
        crate::http1::parse::Version::Http11 => pyo3::intern!(py, "HTTP/1.1"),
        crate::http1::parse::Version::Http2 => pyo3::intern!(py, "HTTP/2"),
    };
    env.set_item(pyo3::intern!(py, "SERVER_PROTOCOL"), protocol)?;
    env.set_item(pyo3::intern!(py, "wsgi.url_scheme"), request.scheme())?;
    match request.exchange.forwarded.as_ref().and_then(|f| f.client) {
        // A trusted proxy named the client.
        Some((ip, port)) => {
            env.set_item(pyo3::intern!(py, "REMOTE_ADDR"), ip.to_string())?;
            env.set_item(pyo3::intern!(py, "REMOTE_PORT"), port.to_string())?;
        }
        None => {
            if let Some((addr, port)) = &place.remote {
                env.set_item(pyo3::intern!(py, "REMOTE_ADDR"), addr.bind(py))?;
                env.set_item(pyo3::intern!(py, "REMOTE_PORT"), port.bind(py))?;
            }
        }
    }
    let id = request.exchange.id();
    if !id.is_empty() {
        env.set_item(pyo3::intern!(py, "veter.request_id"), id)?;
    }
    for span in &parts.headers {
        let Some(key) = header_key(py, &head[span.name.clone()]) else {
            continue;
        };
        let value = &head[span.value.clone()];
        match env.get_item(&key)? {
            // A repeated header: one value, joined as HTTP allows (cookies by "; ").
            Some(first) => {
                let sep = if key.to_str()? == "HTTP_COOKIE" {
                    "; "
                } else {
                    ","
                };
                let joined = format!("{}{sep}{}", first.str()?.to_str()?, latin1_text(value));
                env.set_item(&key, joined)?;
            }
            None => env.set_item(&key, latin1(py, value))?,
        }
    }
    Ok(env)
}

/// The environ key of a request header: `CONTENT_TYPE`, `CONTENT_LENGTH`, else
/// `HTTP_` and the name upper-cased with `-` as `_`. None for a name with `_` in
/// it: `HTTP_X_FOO` cannot tell `x-foo` from `x_foo`, so a client could pass one
/// that a proxy in front filters only as the other (gunicorn and nginx drop them).
fn header_key<'py>(py: Python<'py>, name: &[u8]) -> Option<Bound<'py, PyString>> {
    if name.eq_ignore_ascii_case(b"content-type") {
        return Some(pyo3::intern!(py, "CONTENT_TYPE").clone());
    }
    if name.eq_ignore_ascii_case(b"content-length") {
        return Some(pyo3::intern!(py, "CONTENT_LENGTH").clone());
    }
    if name.contains(&b'_') {
        return None;
    }
    if name.eq_ignore_ascii_case(b"host") {
        return Some(pyo3::intern!(py, "HTTP_HOST").clone());
    }
    let mut key = String::with_capacity(5 + name.len());
    key.push_str("HTTP_");
    // A token: ASCII, checked by the parser.
    key.extend(name.iter().map(|&b| match b {
        b'-' => '_',
        _ => char::from(b.to_ascii_uppercase()),
    }));
    // Interned: the app's lookups of the same key then compare by identity.
    Some(PyString::intern(py, &key))
}

/// `bytes.decode("latin-1")`.
fn latin1<'py>(py: Python<'py>, raw: &[u8]) -> Bound<'py, PyString> {
    PyString::new(py, &latin1_text(raw))
}

fn latin1_text(raw: &[u8]) -> Cow<'_, str> {
    if raw.is_ascii() {
        if let Ok(text) = std::str::from_utf8(raw) {
            return Cow::Borrowed(text);
        }
    }
    Cow::Owned(raw.iter().map(|&b| char::from(b)).collect())
}
