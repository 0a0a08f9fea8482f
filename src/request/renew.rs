//! A kept request object taking its connection's next request in (see
//! `ffi/request_reuse.rs`).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::{Body, Exchange, Parts, Request, SPARE_READ_BYTES};

impl Request {
    /// Whether this request's object may take the next request in (its connection
    /// keeps it, `ffi/request_reuse.rs`): not when it holds a form (its files are
    /// closed when the request is dropped, not at the next request), a body read
    /// across reads, or a read over `SPARE_READ_BYTES` (each kept until the next
    /// request, which may come late or never on an idle connection).
    pub fn reusable(&self, py: Python<'_>) -> bool {
        self.rare.get(py).is_none()
            && !matches!(self.parts.body, Body::Owned(_) | Body::Stream(_))
            && self.parts.buf.bind(py).as_bytes().len() <= SPARE_READ_BYTES
    }

    /// This object taking the next request of its connection in, where it is
    /// (`ffi/request_reuse.rs`): the client and the app stay (one connection's, one
    /// app's), the rest is replaced and the caches emptied. Only for an object
    /// `reusable` said yes to, so nothing else it could hold needs releasing. What
    /// it held is released as `Bound`s: a decref each, where dropping a `Py` first
    /// asks a thread-local whether the thread is attached (callgrind: docs/design.md).
    pub fn renew(
        &mut self,
        py: Python<'_>,
        parts: Parts,
        exchange: Exchange,
        params: Option<Py<PyDict>>,
        route: Option<Py<PyString>>,
    ) {
        let old = std::mem::replace(&mut self.parts, parts);
        drop(old.buf.into_bound(py));
        self.exchange = exchange;
        release(py, std::mem::replace(&mut self.params, params));
        release(py, std::mem::replace(&mut self.route, route));
        release(py, self.query_obj.take());
        release(py, self.body_obj.take());
    }
}

/// Drops `held` as a `Bound` (see `Request::renew`).
fn release<T>(py: Python<'_>, held: Option<Py<T>>) {
    drop(held.map(|obj| obj.into_bound(py)));
}
