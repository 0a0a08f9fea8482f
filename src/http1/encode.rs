//! Response encoding: status line, headers and body into one byte buffer.
//!
//! The encoder writes into a caller-owned `Vec<u8>` so that every response ready
//! after one read lands in the same buffer and goes out with one transport write.
//! Header names and values were validated when the response was built (see
//! `response.rs`); nothing here re-checks them.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// The reason phrase sent for `status`; unknown codes get an empty phrase, which
/// RFC 9112 allows.
pub fn reason(status: u16) -> &'static str {
    match status {
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
        _ => "",
    }
}

/// Whether a response with this status never carries a body (RFC 9110 6.4.1).
pub fn status_forbids_body(status: u16) -> bool {
    status < 200 || status == 204 || status == 304
}

thread_local! {
    /// (unix second, formatted IMF-fixdate). Each loop thread keeps its own copy, so
    /// no lock is taken.
    static DATE: RefCell<(u64, [u8; 29])> = const { RefCell::new((0, [0; 29])) };
}

/// Re-reads the clock and rebuilds the cached `Date` value if the second changed.
///
/// The connection calls this once per read (and per finished handler), not once per
/// response: a batch of pipelined responses shares one clock read, and the string is
/// formatted at most once a second.
pub fn refresh_date() {
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != secs {
            let text = httpdate::fmt_http_date(now);
            // IMF-fixdate is always 29 bytes for years 1970-9999.
            if let Ok(bytes) = <[u8; 29]>::try_from(text.as_bytes()) {
                *cached = (secs, bytes);
            }
        }
    });
}

/// Appends the cached `Date` value (29 bytes, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn push_date(out: &mut Vec<u8>) {
    DATE.with(|cell| {
        let cached = cell.borrow();
        if cached.0 == 0 {
            drop(cached);
            refresh_date();
            out.extend_from_slice(&cell.borrow().1);
        } else {
            out.extend_from_slice(&cached.1);
        }
    });
}

/// What the connection decided about framing for one response.
#[derive(Debug, Clone, Copy)]
pub struct Framing {
    /// HTTP/1.0 request: answer with `HTTP/1.0`-compatible keep-alive signalling.
    pub http10: bool,
    /// The connection stays open after this response.
    pub keep_alive: bool,
    /// HEAD request: send the headers of the GET response but no body.
    pub head: bool,
}

/// Everything the encoder needs about one response.
pub struct Parts<'a> {
    pub status: u16,
    pub content_type: Option<&'a str>,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
    /// The `Server` header value (`None`: no header).
    pub server: Option<&'a str>,
}

/// Appends one whole response to `out`.
pub fn encode_response(out: &mut Vec<u8>, parts: &Parts<'_>, framing: Framing) {
    let status = parts.status;
    out.reserve(128 + parts.body.len());
    out.extend_from_slice(b"HTTP/1.1 ");
    let mut digits = itoa::Buffer::new();
    out.extend_from_slice(digits.format(status).as_bytes());
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
    if let Some(server) = parts.server {
        out.extend_from_slice(b"Server: ");
        out.extend_from_slice(server.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Date: ");
    push_date(out);
    out.extend_from_slice(b"\r\n");
    let no_body = status_forbids_body(status);
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
    if !framing.keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if framing.http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if !no_body && !framing.head {
        out.extend_from_slice(parts.body);
    }
}

/// The interim response sent when a client asked `Expect: 100-continue`.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// A plain-text error response that closes the connection (parse errors, internal
/// failures that happen before a handler could answer).
pub fn encode_error(out: &mut Vec<u8>, status: u16, message: &str, server: Option<&str>) {
    let parts = Parts {
        status,
        content_type: Some("text/plain; charset=utf-8"),
        headers: &[],
        body: message.as_bytes(),
        server,
    };
    let framing = Framing {
        http10: false,
        keep_alive: false,
        head: false,
    };
    encode_response(out, &parts, framing);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(parts: &Parts<'_>, framing: Framing) -> String {
        let mut out = Vec::new();
        encode_response(&mut out, parts, framing);
        let text = String::from_utf8(out).unwrap();
        // Replace the date so the tables below are stable.
        let start = text.find("Date: ").unwrap() + 6;
        format!("{}<date>{}", &text[..start], &text[start + 29..])
    }

    const KEEP: Framing = Framing {
        http10: false,
        keep_alive: true,
        head: false,
    };

    #[test]
    fn plain_response() {
        let parts = Parts {
            status: 200,
            content_type: Some("text/plain"),
            headers: &[("X-A".into(), "1".into())],
            body: b"hi",
            server: Some("veter"),
        };
        assert_eq!(
            encode(&parts, KEEP),
            "HTTP/1.1 200 OK\r\nServer: veter\r\nDate: <date>\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nX-A: 1\r\n\r\nhi"
        );
    }

    #[test]
    fn head_keeps_length_drops_body() {
        let parts = Parts {
            status: 200,
            content_type: None,
            headers: &[],
            body: b"hello",
            server: None,
        };
        let framing = Framing { head: true, ..KEEP };
        assert_eq!(
            encode(&parts, framing),
            "HTTP/1.1 200 OK\r\nDate: <date>\r\nContent-Length: 5\r\n\r\n"
        );
    }

    #[test]
    fn no_body_statuses() {
        for status in [204_u16, 304] {
            let parts = Parts {
                status,
                content_type: None,
                headers: &[],
                body: b"ignored",
                server: None,
            };
            let text = encode(&parts, KEEP);
            assert!(!text.contains("Content-Length"), "{text}");
            assert!(text.ends_with("\r\n\r\n"), "{text}");
        }
    }

    #[test]
    fn close_and_http10_keep_alive() {
        let parts = Parts {
            status: 404,
            content_type: None,
            headers: &[],
            body: b"",
            server: None,
        };
        let closing = Framing {
            keep_alive: false,
            ..KEEP
        };
        assert!(encode(&parts, closing).contains("Connection: close\r\n"));
        let old = Framing {
            http10: true,
            ..KEEP
        };
        assert!(encode(&parts, old).contains("Connection: keep-alive\r\n"));
        assert!(encode(&parts, KEEP).starts_with("HTTP/1.1 404 Not Found\r\n"));
    }

    #[test]
    fn date_is_imf_fixdate() {
        let mut out = Vec::new();
        push_date(&mut out);
        assert_eq!(out.len(), 29);
        assert!(out.ends_with(b" GMT"));
    }

    #[test]
    fn error_response_closes() {
        let mut out = Vec::new();
        encode_error(&mut out, 400, "bad", None);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\nbad"));
    }
}
