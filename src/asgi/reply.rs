//! What an ASGI app sends for an `http` scope, checked as it arrives: every
//! problem is an exception in the app's `send` call that names it (a bad status,
//! a header with CR or LF, a message of the wrong type), never bytes on the wire.
//!
//! The server owns the framing: an app's `content-length` is read and written by
//! the encoder (and held to), its `transfer-encoding` and `connection` are
//! replaced by the server's own (`connection: close` from the app is honoured).

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyBytesMethods, PyDict, PyList, PyString, PyTuple};

use crate::http1::encode::{self, BodyLength, Framing};
use crate::http1::parse::is_token;

/// A message's `type`, for an `http` scope.
pub enum Kind {
    Start,
    Body,
    /// `http.response.pathsend`: the body is a file's content.
    PathSend,
}

/// A message an app passed to `send`, its fields read in one pass over the dict
/// (one `PyDict_Next` per key in place of a lookup per field: the app's literal's
/// keys are the interned names themselves, so most compare by pointer).
pub struct Message<'py> {
    pub kind: Kind,
    status: Option<Bound<'py, PyAny>>,
    headers: Option<Bound<'py, PyAny>>,
    body: Option<Bound<'py, PyAny>>,
    more_body: Option<Bound<'py, PyAny>>,
}

/// The fields of `message` (a dict), its `type` checked, or a clear error.
pub fn read<'py>(message: &Bound<'py, PyAny>) -> PyResult<Message<'py>> {
    let py = message.py();
    let Ok(dict) = message.cast::<PyDict>() else {
        return Err(PyTypeError::new_err(format!(
            "ASGI send() takes a dict message, got {}",
            message.get_type().name()?
        )));
    };
    let names = [
        pyo3::intern!(py, "type"),
        pyo3::intern!(py, "status"),
        pyo3::intern!(py, "headers"),
        pyo3::intern!(py, "body"),
        pyo3::intern!(py, "more_body"),
    ];
    let mut fields: [Option<Bound<'py, PyAny>>; 5] = Default::default();
    for (key, value) in dict.iter() {
        let at = match names.iter().position(|name| key.is(name)) {
            Some(at) => Some(at),
            // An equal key that is another object (made at run time).
            None => key.cast::<PyString>().ok().and_then(|key| {
                let key = key.to_str().ok()?;
                names
                    .iter()
                    .position(|name| name.to_str().is_ok_and(|n| n == key))
            }),
        };
        if let Some(at) = at {
            fields[at] = Some(value);
        }
    }
    let [kind, status, headers, body, more_body] = fields;
    Ok(Message {
        kind: kind_of(kind)?,
        status,
        headers,
        body,
        more_body,
    })
}

/// The `type` of a message, or a clear error.
fn kind_of(kind: Option<Bound<'_, PyAny>>) -> PyResult<Kind> {
    let Some(kind) = kind else {
        return Err(PyValueError::new_err("ASGI message has no 'type' key"));
    };
    let Ok(kind) = kind.cast::<PyString>() else {
        return Err(PyTypeError::new_err("ASGI message 'type' must be a str"));
    };
    match kind.to_str()? {
        "http.response.start" => Ok(Kind::Start),
        "http.response.body" => Ok(Kind::Body),
        "http.response.pathsend" => Ok(Kind::PathSend),
        other => Err(PyValueError::new_err(format!(
            "ASGI message type {other:?} is not one an http scope can send \
             (expected 'http.response.start', 'http.response.body' or 'http.response.pathsend')"
        ))),
    }
}

/// The response an `http.response.start` described.
pub struct Head {
    pub status: u16,
    /// The app's headers, less those the server writes itself.
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// Its `content-length`, if it gave one.
    pub length: Option<u64>,
    /// It asked for `connection: close`.
    pub close: bool,
}

/// Reads an `http.response.start` message.
pub fn start(message: &Message<'_>) -> PyResult<Head> {
    let Some(status) = &message.status else {
        return Err(PyValueError::new_err(
            "ASGI http.response.start has no 'status'",
        ));
    };
    head(status, message.headers.as_ref())
}

/// The response head of `status` and `headers` (an iterable of `(name, value)`
/// bytes pairs, or None), checked as an `http.response.start`'s are; a hosted
/// WSGI app's answer comes this way too.
pub fn head(status: &Bound<'_, PyAny>, headers: Option<&Bound<'_, PyAny>>) -> PyResult<Head> {
    let status = status
        .extract::<i64>()
        .map_err(|_| PyTypeError::new_err("ASGI http.response.start 'status' must be an int"))?;
    let status = match u16::try_from(status) {
        Ok(s) if (100..=599).contains(&s) => s,
        _ => {
            return Err(PyValueError::new_err(format!(
                "ASGI http.response.start 'status' {status} is not an HTTP status (100-599)"
            )))
        }
    };
    let mut head = Head {
        status,
        headers: Vec::new(),
        length: None,
        close: false,
    };
    let Some(headers) = headers else {
        return Ok(head);
    };
    // Almost always a list of 2-tuples: read in place, no iterator objects.
    if let Ok(list) = headers.cast::<PyList>() {
        head.headers.reserve(list.len());
        for pair in list.iter() {
            add_pair(&mut head, &pair)?;
        }
    } else {
        for pair in headers.try_iter()? {
            add_pair(&mut head, &pair?)?;
        }
    }
    Ok(head)
}

/// One `(name, value)` pair of an `http.response.start`'s headers into `head`.
fn add_pair(head: &mut Head, pair: &Bound<'_, PyAny>) -> PyResult<()> {
    let bad_pair =
        || PyTypeError::new_err("ASGI response headers must be pairs of bytes [name, value]");
    let (name, value) = match pair.cast::<PyTuple>() {
        Ok(tuple) if tuple.len() == 2 => (tuple.get_borrowed_item(0)?, tuple.get_borrowed_item(1)?),
        Ok(_) => return Err(bad_pair()),
        Err(_) => {
            let (name, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                pair.extract().map_err(|_| bad_pair())?;
            return add_field(head, &name, &value);
        }
    };
    add_field(head, &name, &value)
}

/// A header's name and value, checked, into `head` (or its framing fields read).
fn add_field(head: &mut Head, name: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let name = header_bytes(name, "name")?;
    let value = header_bytes(value, "value")?;
    check_name(name)?;
    check_value(name, value)?;
    if name.eq_ignore_ascii_case(b"content-length") {
        let n = digits(value).ok_or_else(|| {
            PyValueError::new_err(format!(
                "ASGI response header content-length {:?} is not a length",
                String::from_utf8_lossy(value)
            ))
        })?;
        if head.length.is_some_and(|m| m != n) {
            return Err(PyValueError::new_err(
                "ASGI response has two different content-length headers",
            ));
        }
        head.length = Some(n);
    } else if name.eq_ignore_ascii_case(b"connection") {
        head.close |= value
            .split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
    } else if !name.eq_ignore_ascii_case(b"transfer-encoding") {
        head.headers.push((name.to_vec(), value.to_vec()));
    }
    Ok(())
}

/// Reads an `http.response.body` message: its body and `more_body`.
pub fn body<'py>(message: &Message<'py>) -> PyResult<(Option<Bound<'py, PyBytes>>, bool)> {
    let body = match &message.body {
        None => None,
        Some(b) => match b.cast::<PyBytes>() {
            Ok(b) => Some(b.clone()),
            // bytearray and memoryview are bytes-like too.
            Err(_)
                if b.is_instance_of::<pyo3::types::PyByteArray>()
                    || b.is_instance_of::<pyo3::types::PyMemoryView>() =>
            {
                Some(PyBytes::new(b.py(), &b.extract::<Vec<u8>>()?))
            }
            Err(_) => {
                return Err(PyTypeError::new_err(format!(
                    "ASGI http.response.body 'body' must be bytes, got {}",
                    b.get_type().name()?
                )));
            }
        },
    };
    let more = match &message.more_body {
        None => false,
        Some(m) => m.is_truthy()?,
    };
    Ok((body, more))
}

fn header_bytes<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<&'a [u8]> {
    obj.cast::<PyBytes>()
        .map(PyBytesMethods::as_bytes)
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "ASGI response header {what}s must be bytes, got {}",
                obj.get_type()
                    .name()
                    .map_or_else(|_| "?".into(), |n| n.to_string())
            ))
        })
}

fn check_name(name: &[u8]) -> PyResult<()> {
    if !is_token(name) {
        return Err(PyValueError::new_err(format!(
            "ASGI response header name {:?} is not a token",
            String::from_utf8_lossy(name)
        )));
    }
    Ok(())
}

fn check_value(name: &[u8], value: &[u8]) -> PyResult<()> {
    if let Some(bad) = value
        .iter()
        .find(|&&b| (b < 0x20 && b != b'\t') || b == 0x7f)
    {
        return Err(PyValueError::new_err(format!(
            "ASGI response header {:?} has control character 0x{bad:02x} in its value \
             (CR, LF and NUL are never allowed)",
            String::from_utf8_lossy(name)
        )));
    }
    Ok(())
}

/// The file of an `http.response.pathsend` message: its path (absolute, as the
/// extension asks) and size.
pub fn path_to_send(message: &Bound<'_, PyAny>) -> PyResult<(String, u64)> {
    let py = message.py();
    let path = message
        .get_item(pyo3::intern!(py, "path"))
        .map_err(|_| PyValueError::new_err("ASGI http.response.pathsend has no 'path'"))?;
    let Ok(path) = path.extract::<String>() else {
        return Err(PyTypeError::new_err(
            "ASGI http.response.pathsend 'path' must be a str",
        ));
    };
    if !std::path::Path::new(&path).is_absolute() {
        return Err(PyValueError::new_err(format!(
            "ASGI http.response.pathsend 'path' must be absolute, got {path:?}"
        )));
    }
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => Ok((path, meta.len())),
        Ok(_) => Err(PyValueError::new_err(format!(
            "ASGI http.response.pathsend: {path:?} is not a regular file"
        ))),
        Err(err) => Err(pyo3::exceptions::PyOSError::new_err(format!(
            "ASGI http.response.pathsend: {path:?}: {err}"
        ))),
    }
}

/// A decimal length: digits only (no sign, no spaces), without overflow.
fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 19 {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0'))
    })
}

/// How a response with this head is delimited when its whole body is `body_len`
/// bytes (`None`: it is streamed, its length unknown).
pub fn length(head: &Head, body_len: Option<usize>, framing: Framing) -> PyResult<BodyLength> {
    if encode::status_forbids_body(head.status) {
        return Ok(BodyLength::Absent);
    }
    if let Some(declared) = head.length {
        if let Some(n) = body_len {
            // A HEAD answer's body is not sent, so its declared length stands.
            if n as u64 != declared && !(framing.head && n == 0) {
                return Err(PyRuntimeError::new_err(format!(
                    "ASGI response body is {n} bytes but its content-length says {declared}"
                )));
            }
        }
        return Ok(BodyLength::Known(declared));
    }
    Ok(match body_len {
        Some(n) => BodyLength::Known(n as u64),
        None if framing.version == crate::http1::parse::Version::Http10 => BodyLength::UntilClose,
        None => BodyLength::Chunked,
    })
}
