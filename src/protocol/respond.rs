//! Turning what a handler returned (or raised) into response bytes.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use super::stream;
use super::Shared;
use crate::ffi::ascii_text::ascii_text;
use crate::http1::encode::{self, Framing};
use crate::http1::parse::Version;
use crate::json_fast;
use crate::pyrefs;
use crate::request::Request;
use crate::response::{Response, TEXT_PLAIN};

pub fn is_coroutine(obj: &Bound<'_, PyAny>) -> bool {
    // Only on the slow path of a sync-declared handler returning an awaitable.
    !obj.is_instance_of::<PyString>()
        && !obj.is_instance_of::<PyBytes>()
        && !obj.is_instance_of::<PyDict>()
        && !obj.is_instance_of::<PyList>()
        && !obj.is_instance_of::<Response>()
        && obj.hasattr("send").unwrap_or(false)
        && obj.hasattr("throw").unwrap_or(false)
        && obj.hasattr("__await__").unwrap_or(false)
}

/// What encoding a handler's result produced.
pub enum Encoded {
    /// A whole response.
    Whole(encode::Sent),
    /// The head of a streamed response; its body follows when it reaches the front.
    Stream(Box<stream::Plan>),
}

/// Turns what a handler returned into response bytes.
pub fn encode_result(
    py: Python<'_>,
    common: encode::Common<'_>,
    result: &Bound<'_, PyAny>,
    framing: Framing,
    out: &mut Vec<u8>,
) -> PyResult<Encoded> {
    let whole = |out: &mut Vec<u8>, body: &[u8], kind: &encode::OkKind| {
        Encoded::Whole(encode::encode_ok(out, kind, body, framing, common))
    };
    // The two answers handlers give most, by their exact type first (one pointer
    // compared each; a failed cast to `Response` costs more): a str, and a dict
    // or list of the common shapes, written by the core (json_fast.rs); anything
    // else in it, and subclasses, go to orjson below.
    if let Some(s) = json_fast::exact::<PyString>(result) {
        // A compact ASCII str's bytes read where they are (`ffi/ascii_text.rs`):
        // `to_str` is a call and its checks for the same bytes (callgrind below).
        let text = match ascii_text(s) {
            Some(text) => text,
            None => s.to_str()?.as_bytes(),
        };
        return Ok(whole(out, text, &encode::OK_TEXT));
    }
    if result.is_exact_instance_of::<PyDict>() || result.is_exact_instance_of::<PyList>() {
        // HTTP/1: written straight behind the head; an HTTP/2 stream's record
        // needs the body whole first.
        let sent = if framing.version == Version::Http2 {
            json_fast::with_encoded(result, |json| whole(out, json, &encode::OK_JSON))
        } else {
            encode::encode_ok_with(out, &encode::OK_JSON, framing, common, |out| {
                json_fast::write_into(result, out)
            })
            .ok()
            .map(Encoded::Whole)
        };
        if let Some(sent) = sent {
            return Ok(sent);
        }
    }
    if let Ok(resp) = result.cast::<Response>() {
        return Ok(Encoded::Whole(
            resp.borrow().encode_into(py, out, framing, common),
        ));
    }
    if let Ok(s) = result.cast::<PyString>() {
        // The str's own UTF-8 (for ASCII, its data): no bytes object in between.
        return Ok(whole(out, s.to_str()?.as_bytes(), &encode::OK_TEXT));
    }
    if let Ok(b) = result.cast::<PyBytes>() {
        return Ok(whole(out, b.as_bytes(), &encode::OK_BYTES));
    }
    if result.is_instance_of::<PyDict>() || result.is_instance_of::<PyList>() {
        let json = pyrefs::get(py)?.json_dumps.bind(py).call1((result,))?;
        return Ok(whole(
            out,
            json.cast::<PyBytes>()?.as_bytes(),
            &encode::OK_JSON,
        ));
    }
    if stream::is_stream(result) {
        return stream::plan(common, result, framing, out).map(|p| Encoded::Stream(Box::new(p)));
    }
    Err(PyTypeError::new_err(format!(
        "handler returned {}; return a Response, StreamingResponse, str, bytes, dict or list",
        result.get_type().name()?
    )))
}

/// Asks the app's error handler for a response to `err`; falls back to a plain 500.
pub fn encode_error(
    py: Python<'_>,
    disp: &Shared,
    common: encode::Common<'_>,
    request: &Py<Request>,
    err: PyErr,
    framing: Framing,
    out: &mut Vec<u8>,
) -> encode::Sent {
    let handled = disp
        .error_handler
        .bind(py)
        .call1((request.clone_ref(py), err.value(py)))
        .and_then(|resp| {
            let resp = resp.cast::<Response>()?;
            Ok(resp.borrow().encode_into(py, out, framing, common))
        });
    match handled {
        Ok(sent) => sent,
        Err(inner) => {
            inner.print(py);
            Response::new_plain(py, 500, b"Internal Server Error", TEXT_PLAIN)
                .encode_into(py, out, framing, common)
        }
    }
}
