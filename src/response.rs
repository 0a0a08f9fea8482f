//! The `Response` pyclass: status, headers and body, validated when built so the
//! encoder never has to look at them again.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyMapping, PyString, PyTuple};

use crate::http1::encode::{self, Framing, Parts};
use crate::pyrefs;

pub const TEXT_PLAIN: &str = "text/plain; charset=utf-8";
pub const OCTET_STREAM: &str = "application/octet-stream";
pub const APPLICATION_JSON: &str = "application/json";

/// A `Set-Cookie` value from `veter.cookies.<function>(*args, **attributes)`.
fn cookie_header<'py>(
    py: Python<'py>,
    function: &str,
    args: &Bound<'py, PyTuple>,
    attributes: Option<&Bound<'py, PyDict>>,
) -> PyResult<String> {
    py.import("veter.cookies")?
        .getattr(function)?
        .call(args, attributes)?
        .extract()
}

/// Headers the server owns: a handler setting them would make the framing wrong.
const RESERVED: [&str; 3] = ["content-length", "transfer-encoding", "connection"];

#[pyclass(module = "veter._core", name = "Response")]
pub struct Response {
    status: u16,
    body: Py<PyBytes>,
    content_type: Option<String>,
    headers: Vec<(String, String)>,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A header name must be a token (RFC 9110 5.1).
pub fn check_header_name(name: &str) -> PyResult<()> {
    if name.is_empty() || !name.bytes().all(is_tchar) {
        return Err(PyValueError::new_err(format!(
            "invalid header name {name:?}: must be a non-empty token (letters, digits, !#$%&'*+-.^_`|~)"
        )));
    }
    Ok(())
}

/// A header value may hold visible characters, spaces, tabs and obs-text; CR, LF, NUL
/// and other controls are refused so a handler can never split a response.
pub fn check_header_value(name: &str, value: &str) -> PyResult<()> {
    if let Some(bad) = value
        .bytes()
        .find(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
    {
        return Err(PyValueError::new_err(format!(
            "invalid value for header {name:?}: control character 0x{bad:02x} (CR, LF and NUL are never allowed)"
        )));
    }
    Ok(())
}

/// Checks a header a handler sets (name, value, not one of the server's); returns the
/// name lower-cased. `veter.StreamingResponse`'s setters call it too.
#[pyfunction]
#[pyo3(name = "check_header")]
pub fn check_header_py(name: &str, value: &str) -> PyResult<()> {
    check_header(name, value).map(drop)
}

fn check_header(name: &str, value: &str) -> PyResult<String> {
    check_header_name(name)?;
    check_header_value(name, value)?;
    let lower = name.to_ascii_lowercase();
    if RESERVED.contains(&lower.as_str()) {
        return Err(PyValueError::new_err(format!(
            "header {name:?} is set by the server and cannot be set by a handler"
        )));
    }
    Ok(lower)
}

pub fn check_status(status: i64) -> PyResult<u16> {
    match u16::try_from(status) {
        Ok(s) if (100..=599).contains(&s) => Ok(s),
        _ => Err(PyValueError::new_err(format!(
            "invalid status code {status}: must be between 100 and 599"
        ))),
    }
}

fn body_bytes<'py>(body: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyBytes>, bool)> {
    if let Ok(b) = body.cast::<PyBytes>() {
        return Ok((b.clone(), false));
    }
    if let Ok(s) = body.cast::<PyString>() {
        let bytes = PyBytes::new(body.py(), s.to_str()?.as_bytes());
        return Ok((bytes, true));
    }
    if body.is_none() {
        return Ok((PyBytes::new(body.py(), b""), false));
    }
    if let Ok(view) = body.call_method0("__bytes__") {
        if let Ok(b) = view.cast::<PyBytes>() {
            return Ok((b.clone(), false));
        }
    }
    Err(PyTypeError::new_err(format!(
        "response body must be bytes or str, not {}",
        body.get_type().name()?
    )))
}

impl Response {
    pub fn new_plain(py: Python<'_>, status: u16, body: &[u8], content_type: &str) -> Self {
        Response {
            status,
            body: PyBytes::new(py, body).unbind(),
            content_type: Some(content_type.to_owned()),
            headers: Vec::new(),
        }
    }

    #[must_use]
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Appends the encoded response to `out`.
    pub fn encode_into(
        &self,
        py: Python<'_>,
        out: &mut Vec<u8>,
        framing: Framing,
        common: encode::Common<'_>,
    ) -> encode::Sent {
        let parts = Parts {
            status: self.status,
            content_type: self.content_type.as_deref(),
            headers: &self.headers,
            body: self.body.bind(py).as_bytes(),
        };
        encode::encode_response(out, &parts, framing, common)
    }

    fn push_header(&mut self, name: String, value: String) -> PyResult<()> {
        let lower = check_header(&name, &value)?;
        if lower == "content-type" {
            self.content_type = Some(value);
        } else {
            self.headers.push((name, value));
        }
        Ok(())
    }
}

#[pymethods]
impl Response {
    #[new]
    #[pyo3(signature = (body = None, status = 200, headers = None, content_type = None))]
    fn py_new(
        py: Python<'_>,
        body: Option<&Bound<'_, PyAny>>,
        status: i64,
        headers: Option<&Bound<'_, PyAny>>,
        content_type: Option<String>,
    ) -> PyResult<Self> {
        let status = check_status(status)?;
        let (body, is_text) = match body {
            Some(b) => body_bytes(b)?,
            None => (PyBytes::new(py, b""), false),
        };
        let default_type = if is_text { TEXT_PLAIN } else { OCTET_STREAM };
        let mut response = Response {
            status,
            body: body.unbind(),
            content_type: Some(default_type.to_owned()),
            headers: Vec::new(),
        };
        if let Some(headers) = headers {
            let items = if let Ok(mapping) = headers.cast::<PyMapping>() {
                mapping.items()?.into_any()
            } else {
                headers.clone()
            };
            for item in items.try_iter()? {
                let (name, value): (String, String) = item?.extract()?;
                response.push_header(name, value)?;
            }
        }
        if let Some(ct) = content_type {
            check_header_value("content-type", &ct)?;
            response.content_type = Some(ct);
        }
        Ok(response)
    }

    #[getter]
    fn status(&self) -> u16 {
        self.status
    }

    #[setter]
    fn set_status(&mut self, status: i64) -> PyResult<()> {
        self.status = check_status(status)?;
        Ok(())
    }

    #[getter]
    fn body(&self, py: Python<'_>) -> Py<PyBytes> {
        self.body.clone_ref(py)
    }

    #[setter]
    fn set_body(&mut self, body: &Bound<'_, PyAny>) -> PyResult<()> {
        self.body = body_bytes(body)?.0.unbind();
        Ok(())
    }

    #[getter]
    fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }

    #[setter]
    fn set_content_type(&mut self, value: Option<String>) -> PyResult<()> {
        if let Some(v) = &value {
            check_header_value("content-type", v)?;
        }
        self.content_type = value;
        Ok(())
    }

    /// `veter.response_headers.ResponseHeaders`: a case-insensitive mutable view
    /// whose reads and writes come back to this response's header methods. Made only
    /// when a handler asks, so an answer whose headers are never touched costs the same.
    #[getter]
    fn headers<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        pyrefs::get(py)?.response_headers.bind(py).call1((slf,))
    }

    /// Every field as (name, value), Content-Type first when there is one (the view's
    /// iteration, `getall` and `multi_items`).
    #[pyo3(name = "_header_items")]
    fn header_items(&self) -> Vec<(String, String)> {
        let mut items = Vec::with_capacity(self.headers.len() + 1);
        if let Some(ct) = &self.content_type {
            items.push(("Content-Type".to_owned(), ct.clone()));
        }
        items.extend(self.headers.iter().cloned());
        items
    }

    /// Replaces every header called `name` (case-insensitive) by one with `value`.
    fn set_header(&mut self, name: String, value: String) -> PyResult<()> {
        // Checked before the old fields go: a refused value leaves them as they were.
        check_header(&name, &value)?;
        self.remove_header(&name);
        self.push_header(name, value)
    }

    /// Adds a header, keeping others of the same name (e.g. several Set-Cookie).
    fn add_header(&mut self, name: String, value: String) -> PyResult<()> {
        self.push_header(name, value)
    }

    /// Adds a `Set-Cookie` header, made and checked by `veter.cookies` (not a hot
    /// path: the attributes are keywords of `set_cookie_header`).
    #[pyo3(signature = (key, value = "", **attributes))]
    fn set_cookie(
        &mut self,
        py: Python<'_>,
        key: &str,
        value: &str,
        attributes: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let args = PyTuple::new(py, [key, value])?;
        let header = cookie_header(py, "set_cookie_header", &args, attributes)?;
        self.push_header("Set-Cookie".to_owned(), header)
    }

    /// Adds a `Set-Cookie` header that removes cookie `key` (see `veter.cookies`).
    #[pyo3(signature = (key, **attributes))]
    fn delete_cookie(
        &mut self,
        py: Python<'_>,
        key: &str,
        attributes: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let args = PyTuple::new(py, [key])?;
        let header = cookie_header(py, "delete_cookie_header", &args, attributes)?;
        self.push_header("Set-Cookie".to_owned(), header)
    }

    #[pyo3(signature = (name, default = None))]
    fn get_header(&self, name: &str, default: Option<String>) -> Option<String> {
        if name.eq_ignore_ascii_case("content-type") {
            return self.content_type.clone().or(default);
        }
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
            .or(default)
    }

    /// Removes every header called `name`; returns how many were removed.
    fn remove_header(&mut self, name: &str) -> usize {
        if name.eq_ignore_ascii_case("content-type") {
            return usize::from(self.content_type.take().is_some());
        }
        let before = self.headers.len();
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        before - self.headers.len()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<Response status={} content_type={:?} body={} bytes>",
            self.status,
            self.content_type,
            self.body.bind(py).as_bytes().len()
        )
    }
}
