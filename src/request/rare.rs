//! The request's caches most requests never fill (see `Rare`).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;

/// The caches most requests never fill, allocated on the first access to any of
/// them. Eight inline caches made the request ~500 bytes, each one moved into the
/// object and checked again when it was dropped: callgrind counted the box's
/// saving on a request that reads none of them (docs/design.md).
pub(super) struct Rare {
    pub(super) method_str: PyOnceLock<Py<PyString>>,
    pub(super) path_str: PyOnceLock<Py<PyString>>,
    pub(super) headers_obj: PyOnceLock<Py<PyAny>>,
    pub(super) cookies_obj: PyOnceLock<Py<PyAny>>,
    pub(super) state_obj: PyOnceLock<Py<PyAny>>,
    pub(super) form_obj: PyOnceLock<Py<PyAny>>,
}

impl Rare {
    pub(super) fn new() -> Self {
        Rare {
            method_str: PyOnceLock::new(),
            path_str: PyOnceLock::new(),
            headers_obj: PyOnceLock::new(),
            cookies_obj: PyOnceLock::new(),
            state_obj: PyOnceLock::new(),
            form_obj: PyOnceLock::new(),
        }
    }
}
