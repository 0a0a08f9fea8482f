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

pub(super) enum CurrentRequest<'py> {
    Context {
        var: Bound<'py, PyAny>,
        token: Bound<'py, PyAny>,
    },
    /// Holds what the slot held before (a handler may run a nested dispatch, as
    /// the test client does in memory), put back by `Drop`.
    Inline(Option<Py<Request>>, Python<'py>),
}

impl<'py> CurrentRequest<'py> {
    /// Sets the context variable (for a handler that becomes a task).
    pub(super) fn enter(disp: &Shared, request: &Bound<'py, Request>) -> PyResult<Self> {
        let py = request.py();
        let var = disp.request_var.bind(py);
        let token = context_var::set(var, request.as_any())?;
        Ok(CurrentRequest::Context {
            var: var.clone(),
            token,
        })
    }

    /// The context variable for a handler that runs as a task, the slot otherwise.
    pub(super) fn for_handler(
        disp: &Shared,
        is_async: bool,
        request: &Bound<'py, Request>,
    ) -> PyResult<Self> {
        if is_async {
            Self::enter(disp, request)
        } else {
            Ok(Self::inline(request))
        }
    }

    /// Fills the thread's slot (for a plain `def` handler called inline).
    pub(super) fn inline(request: &Bound<'py, Request>) -> Self {
        let previous = INLINE.with(|slot| slot.replace(Some(request.clone().unbind())));
        CurrentRequest::Inline(previous, request.py())
    }
}

impl Drop for CurrentRequest<'_> {
    fn drop(&mut self) {
        match self {
            CurrentRequest::Context { var, token } => {
                // The token was made by `set` in this same context (nothing switches
                // contexts between the two calls on this thread), so reset cannot
                // fail in practice.
                if let Err(err) = context_var::reset(var, token) {
                    err.print(var.py());
                }
            }
            CurrentRequest::Inline(previous, py) => {
                let previous = previous.take();
                let ours = INLINE.with(|slot| slot.replace(previous));
                // Dropped as `Bound`: a decref, without a `Py`'s thread-local check of
                // whether the thread is attached (callgrind: docs/design.md).
                drop(ours.map(|r| r.into_bound(*py)));
            }
        }
    }
}
