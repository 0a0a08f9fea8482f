//! The event loop as the connections see it: the objects each keeps, looked up once
//! per loop, and the kwargs of a request's task.
//!
//! `connection_made` used to import asyncio, ask for the running loop, build the
//! task kwargs and look up `call_soon` and the dispatcher's hooks for each new
//! connection: ~10,000 instructions of a connection's ~15,000 there, the same
//! objects every time. Now the first connection of a loop makes them and the rest
//! share them (one reference each).

use std::sync::Mutex;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

/// The name of a request's task (`asyncio.Task.get_name`).
pub const TASK_NAME: &str = "veter-request";

/// Kwargs for `asyncio.Task(coro, **kwargs)` on one loop, started eagerly or not;
/// made once per loop (`LoopRefs`).
///
/// Every request's task has the same name: without one, Python 3.11 formats a
/// new `Task-N` string per task (~1,400 instructions of a request's ~45,000).
pub(crate) fn task_kwargs<'py>(
    py: Python<'py>,
    event_loop: &Bound<'py, PyAny>,
    eager: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let kwargs = PyDict::new(py);
    kwargs.set_item("loop", event_loop)?;
    kwargs.set_item("name", TASK_NAME)?;
    if eager {
        kwargs.set_item("eager_start", true)?;
    }
    Ok(kwargs)
}

/// The objects of one event loop that a connection keeps.
pub(crate) struct LoopRefs {
    /// The loop these were made for (compared by identity).
    pub event_loop: Py<PyAny>,
    /// Whether the loop had a task factory when these were made.
    pub factory: bool,
    /// Kwargs of an eagerly started task (3.12+, no task factory).
    pub task_kwargs: Option<Py<PyDict>>,
    /// Kwargs of a task the loop starts (no task factory).
    pub plain_task_kwargs: Option<Py<PyDict>>,
    /// `loop.create_task`, when a task factory makes every task.
    pub create_task: Option<Py<PyAny>>,
    pub call_soon: Py<PyAny>,
    /// The dispatcher's `_write_later`.
    pub writer: Py<PyAny>,
    /// The dispatcher's `_end_iteration` (queue timeout only).
    pub end_iteration: Option<Py<PyAny>>,
}

impl LoopRefs {
    fn new(
        py: Python<'_>,
        event_loop: &Bound<'_, PyAny>,
        factory: bool,
        eager: bool,
        dispatcher: &Bound<'_, PyAny>,
        queue_timeout: bool,
    ) -> PyResult<Self> {
        let (task_kwargs, plain_task_kwargs, create_task) = if factory {
            // The loop has a task factory (instrumentation's, or
            // `asyncio.eager_task_factory`): it makes every handler's task, through
            // `create_task`, and decides how it starts.
            (
                None,
                None,
                Some(event_loop.getattr(intern!(py, "create_task"))?.unbind()),
            )
        } else {
            let eager = eager
                .then(|| task_kwargs(py, event_loop, true).map(Bound::unbind))
                .transpose()?;
            (
                eager,
                Some(task_kwargs(py, event_loop, false)?.unbind()),
                None,
            )
        };
        let end_iteration = queue_timeout
            .then(|| {
                dispatcher
                    .getattr(intern!(py, "_end_iteration"))
                    .map(Bound::unbind)
            })
            .transpose()?;
        Ok(LoopRefs {
            event_loop: event_loop.clone().unbind(),
            factory,
            task_kwargs,
            plain_task_kwargs,
            create_task,
            call_soon: event_loop.getattr(intern!(py, "call_soon"))?.unbind(),
            writer: dispatcher.getattr(intern!(py, "_write_later"))?.unbind(),
            end_iteration,
        })
    }

    fn share(&self, py: Python<'_>) -> Self {
        let clone = |o: &Option<Py<PyAny>>| o.as_ref().map(|o| o.clone_ref(py));
        LoopRefs {
            event_loop: self.event_loop.clone_ref(py),
            factory: self.factory,
            task_kwargs: self.task_kwargs.as_ref().map(|o| o.clone_ref(py)),
            plain_task_kwargs: self.plain_task_kwargs.as_ref().map(|o| o.clone_ref(py)),
            create_task: clone(&self.create_task),
            call_soon: self.call_soon.clone_ref(py),
            writer: self.writer.clone_ref(py),
            end_iteration: clone(&self.end_iteration),
        }
    }
}

/// `asyncio.get_running_loop`, looked up once per process.
fn get_running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    static GET: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let get = GET.get_or_try_init(py, || {
        py.import("asyncio")?
            .getattr("get_running_loop")
            .map(Bound::unbind)
    })?;
    get.bind(py).call0()
}

/// The running loop's objects for a new connection: the ones in `cache` (made for
/// an earlier connection) when the loop and its task factory are the same, else new
/// ones, kept there for the next connection. `eager`: tasks may start eagerly;
/// `queue_timeout`: the dispatcher's end-of-iteration marker is wanted.
pub(crate) fn refs_for(
    py: Python<'_>,
    cache: &Mutex<Option<LoopRefs>>,
    eager: bool,
    queue_timeout: bool,
    dispatcher: &Bound<'_, PyAny>,
) -> PyResult<LoopRefs> {
    let event_loop = get_running_loop(py)?;
    let factory = !event_loop
        .call_method0(intern!(py, "get_task_factory"))?
        .is_none();
    if let Some(refs) = lock(cache).as_ref() {
        if refs.event_loop.is(&event_loop) && refs.factory == factory {
            return Ok(refs.share(py));
        }
    }
    // Made without the lock held: the lookups run Python code, which may let
    // another thread (another loop serving the same app) in.
    let refs = LoopRefs::new(py, &event_loop, factory, eager, dispatcher, queue_timeout)?;
    let shared = refs.share(py);
    *lock(cache) = Some(refs);
    Ok(shared)
}

fn lock(cell: &Mutex<Option<LoopRefs>>) -> std::sync::MutexGuard<'_, Option<LoopRefs>> {
    cell.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
