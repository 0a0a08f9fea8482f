//! Python objects the core calls, imported once per interpreter.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

pub struct PyRefs {
    pub headers: Py<PyAny>,
    pub query_params: Py<PyAny>,
    pub parse_cookies: Py<PyAny>,
    pub state: Py<PyAny>,
    pub json_loads: Py<PyAny>,
    pub json_dumps: Py<PyAny>,
    pub http_exception: Py<PyAny>,
    pub response_headers: Py<PyAny>,
    /// `veter.handler_task.run_handler`: a suspending handler's task when it is
    /// not started eagerly (`handler.rs`, `start_task`).
    pub run_handler: Py<PyAny>,
}

static REFS: PyOnceLock<PyRefs> = PyOnceLock::new();

pub fn get(py: Python<'_>) -> PyResult<&PyRefs> {
    REFS.get_or_try_init(py, || {
        let ds = py.import("veter.datastructures")?;
        let orjson = py.import("orjson")?;
        let exceptions = py.import("veter.exceptions")?;
        Ok(PyRefs {
            headers: ds.getattr("Headers")?.unbind(),
            query_params: ds.getattr("QueryParams")?.unbind(),
            parse_cookies: ds.getattr("parse_cookies")?.unbind(),
            state: ds.getattr("State")?.unbind(),
            json_loads: orjson.getattr("loads")?.unbind(),
            json_dumps: orjson.getattr("dumps")?.unbind(),
            http_exception: exceptions.getattr("HTTPException")?.unbind(),
            response_headers: py
                .import("veter.response_headers")?
                .getattr("ResponseHeaders")?
                .unbind(),
            run_handler: py
                .import("veter.handler_task")?
                .getattr("run_handler")?
                .unbind(),
        })
    })
}
