//! The request in the context while its handler runs (`veter.context.request_var`).
//!
//! Set just before the handler is called (or its task created: asyncio copies the
//! current context into a new task, so the handler's task and every task it spawns
//! keep seeing the request) and reset right after, on every path, by `Drop`.

use pyo3::prelude::*;

use crate::dispatcher::Dispatcher;
use crate::request::Request;

pub(super) struct CurrentRequest<'py> {
    reset: Bound<'py, PyAny>,
    token: Bound<'py, PyAny>,
}

impl<'py> CurrentRequest<'py> {
    pub(super) fn enter(disp: &Dispatcher, request: &Bound<'py, Request>) -> PyResult<Self> {
        let py = request.py();
        let token = disp.request_var_set.bind(py).call1((request,))?;
        Ok(CurrentRequest {
            reset: disp.request_var_reset.bind(py).clone(),
            token,
        })
    }
}

impl Drop for CurrentRequest<'_> {
    fn drop(&mut self) {
        // The token was made by `set` in this same context (nothing switches contexts
        // between the two calls on this thread), so reset cannot fail in practice.
        if let Err(err) = self.reset.call1((&self.token,)) {
            err.print(self.reset.py());
        }
    }
}
