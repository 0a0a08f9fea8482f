//! The request in the context while its handler runs (`veter.context`).
//!
//! Two ways, decided per route when it is dispatched:
//!
//! - **A task** (an `async def` handler, a `blocking=True` one, a deferred one, a
//!   `def` handler that returned an awaitable): `veter.context.request_var` is set
//!   just before the task is created (asyncio copies the current context into a new
//!   task, so the handler's task and every task it spawns keep seeing the request)
//!   and reset right after, by `Drop`.
//! - **Inline** (a plain `def` handler called from `data_received`): nothing can
//!   switch to other code on this thread until it returns, so the request sits in
//!   a thread-local slot for the duration of the call, which
//!   `veter.context.current_request()` reads when the context variable is unset.
//!   Setting a context variable allocates a new context (a HAMT node) and costs
//!   ~1,000 instructions per request; the slot costs two pointer writes. The one
//!   difference: a task that a plain `def` handler creates does not see the request
//!   (docs/toolkit.md, "Request ids").

use std::cell::RefCell;

use pyo3::prelude::*;

use super::Shared;
use crate::ffi::context_var;
use crate::request::Request;

thread_local! {
    /// The request of the plain `def` handler running on this thread, if any.
    static INLINE: RefCell<Option<Py<Request>>> = const { RefCell::new(None) };
}

/// The request of the plain `def` handler running on this thread (None outside one).
#[pyfunction]
pub fn inline_request(py: Python<'_>) -> Option<Py<Request>> {
    INLINE.with(|slot| slot.borrow().as_ref().map(|r| r.clone_ref(py)))
}

/// The context variable set for a handler that runs as a task, reset by `Drop`.
pub(super) struct CurrentRequest<'py> {
    var: Bound<'py, PyAny>,
    token: Bound<'py, PyAny>,
}

impl<'py> CurrentRequest<'py> {
    /// Sets the context variable (for a handler that becomes a task).
    pub(super) fn enter(disp: &Shared, request: &Bound<'py, Request>) -> PyResult<Self> {
        let py = request.py();
        let var = disp.request_var.bind(py);
        let token = context_var::set(var, request.as_any())?;
        Ok(CurrentRequest {
            var: var.clone(),
            token,
        })
    }
}

impl Drop for CurrentRequest<'_> {
    fn drop(&mut self) {
        // The token was made by `set` in this same context (nothing switches
        // contexts between the two calls on this thread), so reset cannot fail in
        // practice.
        if let Err(err) = context_var::reset(&self.var, &self.token) {
            err.print(self.var.py());
        }
    }
}

/// Runs `run` on `request` with the request in the thread's slot (a plain `def`
/// handler called inline), and puts back what the slot held before (a handler may
/// run a nested dispatch, as the test client does in memory), on unwinding too.
/// One look-up of the thread-local for both: in this dynamically loaded library each
/// is a `__tls_get_addr` call and a check of the key's state (a look-up to set and
/// one to put back measured ~15 instructions more per request, callgrind).
pub(super) fn inline<'py, R>(
    request: Bound<'py, Request>,
    run: impl FnOnce(Bound<'py, Request>) -> R,
) -> R {
    INLINE.with(|slot| {
        let previous = slot.replace(Some(request.clone().unbind()));
        let _restore = Restore {
            slot,
            previous,
            py: request.py(),
        };
        run(request)
    })
}

/// Puts back what the thread's slot held (`inline`).
struct Restore<'a, 'py> {
    slot: &'a RefCell<Option<Py<Request>>>,
    previous: Option<Py<Request>>,
    py: Python<'py>,
}

impl Drop for Restore<'_, '_> {
    fn drop(&mut self) {
        let ours = self.slot.replace(self.previous.take());
        // Dropped as `Bound`: a decref, without a `Py`'s thread-local check of
        // whether the thread is attached (callgrind: docs/design.md).
        drop(ours.map(|r| r.into_bound(self.py)));
    }
}
