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

/// The app's header fields, less those the server writes itself, as HTTP/1.1
/// lines (`name: value\r\n`) in one buffer: each name and value is copied once,
/// from the app's bytes, and an HTTP/1.1 head takes them all in one copy (no
/// buffer per name and value). They split back into pairs without doubt (a
/// token has no `:`, a checked value no CR) for an HTTP/2 stream's record.
#[derive(Default)]
pub struct Fields {
    lines: Vec<u8>,
    /// What `has` asks first, so that most calls answer without reading the
    /// lines: bit n of the first set, a name is n bytes long (bit 63: 63 or
    /// more); of the second, a name's first byte is n (its low six bits, of its
    /// lower case: `Date` and `date` set the same).
    lengths: u64,
    firsts: u64,
}

fn length_bit(name: &[u8]) -> u64 {
    1 << name.len().min(63)
}

fn first_bit(name: &[u8]) -> u64 {
    name.first()
        .map_or(0, |&b| 1 << (b.to_ascii_lowercase() & 63))
}

impl Fields {
    fn push(&mut self, name: &[u8], value: &[u8]) {
        self.lines.extend_from_slice(name);
        self.lines.extend_from_slice(b": ");
        self.lines.extend_from_slice(value);
        self.lines.extend_from_slice(b"\r\n");
        self.lengths |= length_bit(name);
        self.firsts |= first_bit(name);
    }

    /// The fields as HTTP/1.1 header lines.
    pub fn lines(&self) -> &[u8] {
        &self.lines
    }

    /// Whether a field is named `name` (ASCII case ignored).
    #[inline]
    pub fn has(&self, name: &str) -> bool {
        let name_bytes = name.as_bytes();
        self.lengths & length_bit(name_bytes) != 0
            && self.firsts & first_bit(name_bytes) != 0
            && self
                .pairs()
                .any(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
    }

    /// The `(name, value)` pairs, in the app's order.
    pub fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut rest = self.lines.as_slice();
        std::iter::from_fn(move || {
            let colon = rest.iter().position(|&b| b == b':')?;
            let (name, after) = rest.split_at(colon);
            let after = &after[2..];
            let cr = after.iter().position(|&b| b == b'\r')?;
            rest = &after[cr + 2..];
            Some((name, &after[..cr]))
        })
    }
}

/// The response an `http.response.start` described.
pub struct Head {
    pub status: u16,
    /// The app's headers, less those the server writes itself.
    pub fields: Fields,
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
        fields: Fields::default(),
        length: None,
        close: false,
    };
    let Some(headers) = headers else {
        return Ok(head);
    };
    // Almost always a list of 2-tuples: read in place, no iterator objects.
    if let Ok(list) = headers.cast::<PyList>() {
        // Room for a few typical fields at once, not a reallocation per field.
        head.fields.lines.reserve(48 * list.len());
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
    if is_named(name, b"content-length") {
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
    } else if is_named(name, b"connection") {
        head.close |= value
            .split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
    } else if !is_named(name, b"transfer-encoding") {
        head.fields.push(name, value);
    }
    Ok(())
}

/// Whether the token `name` is `lower` (lower case letters and `-`), case
/// ignored, without a branch per byte: a tchar with its 0x20 bit set is a lower case
/// letter only if it is that letter in either case, and `-` only if it is `-`
/// (the one other byte that becomes `-` is CR, not a tchar).
fn is_named(name: &[u8], lower: &[u8]) -> bool {
    name.len() == lower.len()
        && name
            .iter()
            .zip(lower)
            .fold(0, |diff, (&a, &b)| diff | ((a | 0x20) ^ b))
            == 0
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

/// tchar (RFC 9110 5.6.2) by byte: 1 if it is one, else 0.
static TCHAR: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        if matches!(b, 0x30..=0x39 | 0x41..=0x5A | 0x61..=0x7A) {
            table[b] = 1;
        }
        b += 1;
    }
    let others = b"!#$%&'*+-.^_`|~";
    let mut i = 0;
    while i < others.len() {
        table[others[i] as usize] = 1;
        i += 1;
    }
    table
};

/// A token: one table lookup a byte, and no branch per byte (names are short,
/// and almost always good).
fn is_token(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().fold(1, |ok, &b| ok & TCHAR[usize::from(b)]) == 1
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
    if let Some(bad) = first_control(value) {
        return Err(PyValueError::new_err(format!(
            "ASGI response header {:?} has control character 0x{bad:02x} in its value \
             (CR, LF and NUL are never allowed)",
            String::from_utf8_lossy(name)
        )));
    }
    Ok(())
}

/// Whether `b` may not be in a field value: a control byte other than HTAB, or DEL.
fn is_control(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

const ONES: u64 = u64::from_ne_bytes([1; 8]);

/// The first byte of `value` that `is_control`, eight bytes a step: a value is
/// checked in every `http.response.start`, and most are longer than a word.
/// `marks` (the SWAR "has less" test of "Bit Twiddling Hacks") sets the high bit
/// of each byte below 0x20 or equal to 0x7F, and maybe of bytes above one that
/// is (a borrow moves up, never down): the lowest mark is exact, none means none.
/// A marked HTAB is allowed after all: the scan goes on after it.
fn first_control(value: &[u8]) -> Option<u8> {
    let marks = |x: u64| {
        let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & (ONES * 0x80);
        below(x, 0x20) | below(x ^ (ONES * 0x7f), 1)
    };
    let mut rest = value;
    while let Some((word, tail)) = rest.split_first_chunk::<8>() {
        let found = marks(u64::from_le_bytes(*word));
        if found == 0 {
            rest = tail;
            continue;
        }
        let at = (found.trailing_zeros() / 8) as usize;
        if word[at] != b'\t' {
            return Some(word[at]);
        }
        rest = &rest[at + 1..];
    }
    rest.iter().copied().find(|&b| is_control(b))
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

#[cfg(test)]
mod tests {
    use super::{first_control, is_control, is_named, is_token, Fields};

    /// Every token of the framing names' lengths that `is_named` takes is the
    /// name in some case: each byte changed at each place is refused unless it
    /// is the same letter in the other case.
    #[test]
    fn is_named_is_eq_ignore_ascii_case_for_tokens() {
        for lower in [&b"content-length"[..], b"connection", b"transfer-encoding"] {
            assert!(is_named(lower, lower));
            assert!(is_named(&lower.to_ascii_uppercase(), lower));
            assert!(!is_named(&lower[1..], lower));
            for at in 0..lower.len() {
                for b in (0..=255u8).filter(|&b| is_token(&[b])) {
                    let mut name = lower.to_vec();
                    name[at] = b;
                    assert_eq!(is_named(&name, lower), name.eq_ignore_ascii_case(lower));
                }
            }
        }
    }

    #[test]
    fn fields_split_back_into_their_pairs() {
        let pairs: [(&[u8], &[u8]); 4] = [
            (b"content-type", b"text/plain; a=b:c"),
            (b"x-empty", b""),
            (b"Server", b"app\t1"),
            (
                b"x-long-name-of-sixty-four-bytes-or-more-xxxxxxxxxxxxxxxxxxxxxxxxxx",
                b"v",
            ),
        ];
        let mut fields = Fields::default();
        for (name, value) in pairs {
            fields.push(name, value);
        }
        assert_eq!(fields.pairs().collect::<Vec<_>>(), pairs);
        assert_eq!(
            fields.lines(),
            b"content-type: text/plain; a=b:c\r\nx-empty: \r\nServer: app\t1\r\n\
              x-long-name-of-sixty-four-bytes-or-more-xxxxxxxxxxxxxxxxxxxxxxxxxx: v\r\n"
        );
        assert!(fields.has("server") && fields.has("X-EMPTY") && fields.has("content-type"));
        assert!(!fields.has("date") && !fields.has("x-emptz") && !fields.has("content-typ"));
        // Of a name's length and first byte, but another name.
        assert!(!fields.has("x-empty-like-content-t") && !fields.has("serves"));
        assert!(!fields.has("content-tzpe") && !fields.has("x-request-id"));
        assert!(fields.has("x-long-name-of-sixty-four-bytes-or-more-xxxxxxxxxxxxxxxxxxxxxxxxxx"));
        assert!(!fields.has("x-long-name-of-sixty-four-bytes-or-more-xxxxxxxxxxxxxxxxxxxxxxxxxy"));
        assert!(!Fields::default().has("server"));
        assert_eq!(Fields::default().pairs().count(), 0);
    }

    #[test]
    fn is_token_is_the_parser_s() {
        for b in 0..=255u8 {
            for name in [vec![b], vec![b'x', b], vec![b, b'x', b'y']] {
                assert_eq!(
                    is_token(&name),
                    crate::http1::parse::is_token(&name),
                    "{name:?}"
                );
            }
        }
        assert!(!is_token(b""));
    }

    /// Every byte at every place of values up to three words long (and a tab or
    /// a control byte before it) is found as a byte loop finds it.
    #[test]
    fn first_control_finds_what_a_byte_loop_finds() {
        for len in 1..=24 {
            for at in 0..len {
                for b in 0..=255u8 {
                    for lead in [b'a', b'\t', 0x80, 0x00] {
                        let mut value = vec![b'v'; len];
                        value[at] = b;
                        if at > 0 {
                            value[at - 1] = lead;
                        }
                        let expected = value.iter().copied().find(|&b| is_control(b));
                        assert_eq!(first_control(&value), expected, "{value:?}");
                    }
                }
            }
        }
        assert_eq!(first_control(b""), None);
    }
}
