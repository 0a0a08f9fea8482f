//! `veter._core`: the native HTTP/1.1 core of veter.
//!
//! Only the module definition lives here; see `conn/` for the connection's state
//! machine, `protocol.rs` for the asyncio protocol around it, `http1/` for the
//! sans-IO parser and encoder and `router/` for routing (docs/design.md).

pub mod access;
pub mod asgi;
pub mod body_stream;
pub mod conn;
pub mod dispatcher;
pub mod event_loop;
pub mod ffi;
pub mod http1;
pub mod http2;
pub mod json_check;
pub mod json_fast;
pub mod lagwatch;
pub mod logfile;
pub mod logtime;
pub mod metrics;
pub mod overload;
pub mod protocol;
pub mod proxy;
pub mod pyrefs;
pub mod query_pick;
pub mod ready;
pub mod request;
pub mod request_id;
pub mod response;
pub mod router;
pub mod settings;
pub mod shared;
pub mod target;
pub mod timeouts;
pub mod websocket;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<dispatcher::Dispatcher>()?;
    m.add_class::<protocol::Connection>()?;
    m.add_class::<protocol::AsgiCycle>()?;
    m.add_class::<protocol::Http2Session>()?;
    m.add_class::<protocol::StreamTransport>()?;
    m.add_class::<protocol::StreamWriter>()?;
    m.add_class::<protocol::Streamed>()?;
    m.add_class::<protocol::Upgrade>()?;
    m.add_class::<body_stream::BodyStream>()?;
    m.add_class::<request::Request>()?;
    m.add_class::<query_pick::QueryPick>()?;
    m.add_class::<ready::Ready>()?;
    m.add_class::<response::Response>()?;
    m.add_class::<logfile::LogFile>()?;
    m.add_class::<lagwatch::LagWatch>()?;
    m.add_class::<websocket::WebSocketProtocol>()?;
    m.add_function(wrap_pyfunction!(protocol::inline_request, m)?)?;
    m.add_function(wrap_pyfunction!(response::check_header_py, m)?)?;
    m.add_function(wrap_pyfunction!(json_check::json_refusal, m)?)?;
    m.add_function(wrap_pyfunction!(json_fast::json_fast, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The instruction budgets (tests/perf) hold for optimised builds only.
    m.add("OPTIMIZED", !cfg!(debug_assertions))?;
    Ok(())
}
