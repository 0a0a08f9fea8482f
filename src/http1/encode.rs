//! Response encoding: status line, headers and body into one byte buffer.
//!
//! The encoder writes into a caller-owned `Vec<u8>` so that every response ready
//! after one read lands in the same buffer and goes out with one transport write.
//! Header names and values were validated when the response was built (see
//! `response.rs`); nothing here re-checks them.

use std::cell::RefCell;

use super::parse::Version;
use std::time::{SystemTime, UNIX_EPOCH};

/// Ends a head: `$prefix` (what the line before still needs), then the
/// `Connection` line the framing asks for, then the blank line. One constant per
/// branch, not one slice picked by the branches: a copy of a length known here is
/// a few stores, a slice of either length a `memcpy` call (callgrind: pipelined
/// 2,526 -> 2,500 per request).
macro_rules! end_head {
    ($out:expr, $framing:expr, $prefix:literal) => {
        if !$framing.keep_alive {
            $out.extend_from_slice(concat!($prefix, "Connection: close\r\n\r\n").as_bytes());
        } else if $framing.version == Version::Http10 {
            $out.extend_from_slice(concat!($prefix, "Connection: keep-alive\r\n\r\n").as_bytes());
        } else {
            $out.extend_from_slice(concat!($prefix, "\r\n").as_bytes());
        }
    };
}

#[path = "encode_ok.rs"]
mod ok;
pub use ok::{encode_ok, encode_ok_with, ok_head, OkKind, OK_BYTES, OK_JSON, OK_TEXT};

/// Declares the status table once: `reason()` and the precomputed status lines
/// both come from it.
macro_rules! statuses {
    ($($code:literal => $reason:literal,)*) => {
        /// The reason phrase sent for `status`; unknown codes get an empty phrase,
        /// which RFC 9112 allows.
        pub fn reason(status: u16) -> &'static str {
            match status {
                $($code => $reason,)*
                _ => "",
            }
        }

        /// The whole status line (`HTTP/1.1 200 OK\r\n`) for known codes.
        fn status_line(status: u16) -> Option<&'static [u8]> {
            match status {
                $($code => Some(concat!("HTTP/1.1 ", stringify!($code), " ", $reason, "\r\n").as_bytes()),)*
                _ => None,
            }
        }
    };
}

statuses! {
    100 => "Continue",
    101 => "Switching Protocols",
    200 => "OK",
    201 => "Created",
    202 => "Accepted",
    203 => "Non-Authoritative Information",
    204 => "No Content",
    205 => "Reset Content",
    206 => "Partial Content",
    300 => "Multiple Choices",
    301 => "Moved Permanently",
    302 => "Found",
    303 => "See Other",
    304 => "Not Modified",
    307 => "Temporary Redirect",
    308 => "Permanent Redirect",
    400 => "Bad Request",
    401 => "Unauthorized",
    402 => "Payment Required",
    403 => "Forbidden",
    404 => "Not Found",
    405 => "Method Not Allowed",
    406 => "Not Acceptable",
    407 => "Proxy Authentication Required",
    408 => "Request Timeout",
    409 => "Conflict",
    410 => "Gone",
    411 => "Length Required",
    412 => "Precondition Failed",
    413 => "Content Too Large",
    414 => "URI Too Long",
    415 => "Unsupported Media Type",
    416 => "Range Not Satisfiable",
    417 => "Expectation Failed",
    418 => "I'm a teapot",
    421 => "Misdirected Request",
    422 => "Unprocessable Content",
    425 => "Too Early",
    426 => "Upgrade Required",
    428 => "Precondition Required",
    429 => "Too Many Requests",
    431 => "Request Header Fields Too Large",
    451 => "Unavailable For Legal Reasons",
    500 => "Internal Server Error",
    501 => "Not Implemented",
    502 => "Bad Gateway",
    503 => "Service Unavailable",
    504 => "Gateway Timeout",
    505 => "HTTP Version Not Supported",
}

/// Whether a response with this status never carries a body (RFC 9110 6.4.1).
pub fn status_forbids_body(status: u16) -> bool {
    status < 200 || status == 204 || status == 304
}

/// `Date: <IMF-fixdate>\r\n`: 6 + 29 + 2 bytes.
pub type DateLine = [u8; 37];

thread_local! {
    /// (unix second, formatted `Date` line). Each loop thread keeps its own copy, so
    /// no lock is taken.
    static DATE: RefCell<(u64, DateLine)> = const { RefCell::new((0, [0; 37])) };
}

/// The current `Date` header line, formatted at most once a second.
///
/// Connections call this once per read (and per finished handler), not once per
/// response: a batch of pipelined responses shares one clock read, and the copy
/// they keep avoids a thread-local lookup per response.
pub fn date_line() -> DateLine {
    date_line_at(SystemTime::now())
}

/// The `Date` line for `now` (callers that also need the time read the clock once).
pub fn date_line_at(now: SystemTime) -> DateLine {
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != secs {
            let text = httpdate::fmt_http_date(now);
            // IMF-fixdate is always 29 bytes for years 1970-9999.
            if text.len() == 29 {
                let mut line = [0; 37];
                line[..6].copy_from_slice(b"Date: ");
                line[6..35].copy_from_slice(text.as_bytes());
                line[35..].copy_from_slice(b"\r\n");
                *cached = (secs, line);
            }
        }
        cached.1
    })
}

/// What the connection decided about framing for one response.
#[derive(Debug, Clone, Copy)]
#[allow(clippy::struct_excessive_bools)] // four independent facts about one request
#[repr(C)] // laid out as when `version` was the bool `http10`: the HTTP/1.1 path compiles as it did
pub struct Framing {
    /// The request's version: an HTTP/1.0 one is answered with `HTTP/1.0`-compatible
    /// keep-alive signalling; a whole answer to an HTTP/2 stream's is written as a
    /// record (`http1::record`), not as HTTP/1.1 text. (A field, not a fifth bool:
    /// `Framing` stays four bytes, passed in one register.)
    pub version: Version,
    /// The connection stays open after this response.
    pub keep_alive: bool,
    /// HEAD request: send the headers of the GET response but no body.
    pub head: bool,
    /// A WebSocket handshake on a WebSocket route: its answer may be the `101`
    /// that hands the connection over (any other answer closes it).
    pub upgrade: bool,
}

/// Everything the encoder needs about one response.
pub struct Parts<'a> {
    pub status: u16,
    pub content_type: Option<&'a str>,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

/// What every response of a connection shares: precomputed lines.
#[derive(Clone, Copy)]
pub struct Common<'a> {
    /// `Server: ...\r\n`, or empty for no Server header.
    pub server_line: &'a [u8],
    pub date_line: &'a DateLine,
    /// This response's request id (the line is `request_id_prefix`, it, CRLF), or
    /// empty for none.
    pub request_id: &'a [u8],
    /// `X-Request-ID: `, as the id's line starts.
    pub request_id_prefix: &'a [u8],
    /// What `encode_ok` starts a `200` with when the response has a request id
    /// (`ok_head`: the status, Server and Date lines and the id line's prefix),
    /// kept by the connection; empty: written piece by piece.
    pub ok_head: &'a [u8],
    /// The request-id header's name, to leave ours out when the handler set one.
    pub request_id_name: &'a str,
}

impl<'a> Common<'a> {
    /// The same lines with this request's id.
    #[must_use]
    pub fn with_request_id(self, id: &'a [u8]) -> Self {
        Common {
            request_id: id,
            ..self
        }
    }

    /// Appends the request id's line, when there is an id.
    fn put_request_id(&self, out: &mut Vec<u8>) {
        if !self.request_id.is_empty() {
            out.extend_from_slice(self.request_id_prefix);
            out.extend_from_slice(self.request_id);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// What was sent, for the access log and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    pub status: u16,
    /// Body bytes sent (0 for HEAD and for statuses without a body).
    pub body_bytes: usize,
}

fn has_header<N: AsRef<[u8]>, V>(headers: &[(N, V)], name: &str) -> bool {
    headers
        .iter()
        .any(|(n, _)| n.as_ref().eq_ignore_ascii_case(name.as_bytes()))
}

/// Appends one whole response to `out`.
pub fn encode_response(
    out: &mut Vec<u8>,
    parts: &Parts<'_>,
    framing: Framing,
    common: Common<'_>,
) -> Sent {
    if framing.version == Version::Http2 {
        if let Some(sent) = encode_record(out, parts, framing, common) {
            return sent;
        }
    }
    let status = parts.status;
    let no_body = status_forbids_body(status);
    let send_body = !no_body && !framing.head;
    out.reserve(160 + if send_body { parts.body.len() } else { 0 });
    let mut digits = itoa::Buffer::new();
    if let Some(line) = status_line(status) {
        out.extend_from_slice(line);
    } else {
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(digits.format(status).as_bytes());
        out.extend_from_slice(b" \r\n");
    }
    // A handler may set its own Server or Date; then ours is left out.
    let custom = !parts.headers.is_empty();
    if !(custom && has_header(parts.headers, "server")) {
        out.extend_from_slice(common.server_line);
    }
    if !(custom && has_header(parts.headers, "date")) {
        out.extend_from_slice(common.date_line);
    }
    if !(custom && has_header(parts.headers, common.request_id_name)) {
        common.put_request_id(out);
    }
    if let Some(ct) = parts.content_type {
        if !no_body || status == 304 {
            out.extend_from_slice(b"Content-Type: ");
            out.extend_from_slice(ct.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    // 1xx and 204 must not carry Content-Length; 304 may, but its body length would
    // describe the selected representation, which we do not know, so it is omitted.
    if !no_body {
        out.extend_from_slice(b"Content-Length: ");
        out.extend_from_slice(digits.format(parts.body.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in parts.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    end_head!(out, framing, "");
    if send_body {
        out.extend_from_slice(parts.body);
    }
    Sent {
        status,
        body_bytes: if send_body { parts.body.len() } else { 0 },
    }
}

/// `encode_response` for an HTTP/2 stream: None when a field is too long for a
/// record (then it is written as HTTP/1.1 text, which the stream reads too).
#[inline(never)]
fn encode_record(
    out: &mut Vec<u8>,
    parts: &Parts<'_>,
    framing: Framing,
    common: Common<'_>,
) -> Option<Sent> {
    use super::record;
    record::fits(parts, &common).then(|| record::write(out, parts, framing.head, common))
}

/// How the body of a streamed response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyLength {
    /// `Transfer-Encoding: chunked` (HTTP/1.1 clients).
    Chunked,
    /// `Content-Length`, given by the handler.
    Known(u64),
    /// No length: the body ends when the connection closes (HTTP/1.0 clients).
    UntilClose,
    /// The status forbids a body: neither header.
    Absent,
}

/// Appends the head of a response whose body follows separately (streaming), or
/// of a hosted app's response (its headers are bytes).
pub fn encode_head<N: AsRef<[u8]>, V: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    status: u16,
    content_type: Option<&str>,
    headers: &[(N, V)],
    length: BodyLength,
    framing: Framing,
    common: Common<'_>,
) {
    let fields = |out: &mut Vec<u8>| {
        for (name, value) in headers {
            out.extend_from_slice(name.as_ref());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_ref());
            out.extend_from_slice(b"\r\n");
        }
    };
    let own = |name: &str| has_header(headers, name);
    head_with(
        out,
        status,
        content_type,
        own,
        fields,
        length,
        framing,
        common,
    );
}

/// `encode_head` of a head whose own fields are written already, as `lines`
/// (`name: value\r\n` each): a hosted app's, copied once from its bytes.
/// `has(name)`: whether `lines` hold a field of that name (the app's own Server,
/// Date or request id wins over the server's).
pub fn encode_head_lines(
    out: &mut Vec<u8>,
    status: u16,
    lines: &[u8],
    has: impl Fn(&str) -> bool,
    length: BodyLength,
    framing: Framing,
    common: Common<'_>,
) {
    let fields = |out: &mut Vec<u8>| out.extend_from_slice(lines);
    head_with(out, status, None, has, fields, length, framing, common);
}

#[allow(clippy::too_many_arguments)]
fn head_with(
    out: &mut Vec<u8>,
    status: u16,
    content_type: Option<&str>,
    has_header: impl Fn(&str) -> bool,
    fields: impl FnOnce(&mut Vec<u8>),
    length: BodyLength,
    framing: Framing,
    common: Common<'_>,
) {
    let mut digits = itoa::Buffer::new();
    if let Some(line) = status_line(status) {
        out.extend_from_slice(line);
    } else {
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(digits.format(status).as_bytes());
        out.extend_from_slice(b" \r\n");
    }
    if !has_header("server") {
        out.extend_from_slice(common.server_line);
    }
    if !has_header("date") {
        out.extend_from_slice(common.date_line);
    }
    if !(common.request_id.is_empty() || has_header(common.request_id_name)) {
        common.put_request_id(out);
    }
    if let Some(ct) = content_type {
        if !status_forbids_body(status) || status == 304 {
            out.extend_from_slice(b"Content-Type: ");
            out.extend_from_slice(ct.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    match length {
        BodyLength::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        BodyLength::Known(n) => {
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(digits.format(n).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        BodyLength::UntilClose | BodyLength::Absent => {}
    }
    fields(out);
    if !framing.keep_alive || length == BodyLength::UntilClose {
        out.extend_from_slice(b"Connection: close\r\n\r\n");
    } else if framing.version == Version::Http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n\r\n");
    } else {
        out.extend_from_slice(b"\r\n");
    }
}

/// The interim response sent when a client asked `Expect: 100-continue`.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// A plain-text error response that closes the connection (parse errors, internal
/// failures that happen before a handler could answer).
pub fn encode_error(out: &mut Vec<u8>, status: u16, message: &str, common: Common<'_>) -> Sent {
    let parts = Parts {
        status,
        content_type: Some("text/plain; charset=utf-8"),
        headers: &[],
        body: message.as_bytes(),
    };
    let framing = Framing {
        version: Version::Http11,
        keep_alive: false,
        head: false,
        upgrade: false,
    };
    encode_response(out, &parts, framing, common)
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
