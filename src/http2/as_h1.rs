//! An HTTP/2 request as the HTTP/1.1 bytes its stream's connection reads.
//!
//! Each HTTP/2 stream is served by an HTTP/1.1 connection of its own (the shell's
//! `protocol/h2/`), so every front end (native handlers, hosted ASGI and WSGI),
//! and everything around them (routing, request ids, timeouts, overload, access
//! log), serves HTTP/2 unchanged. This module writes the head that connection
//! parses, from a request the HTTP/2 layer has already validated (RFC 9113 8.1-8.3),
//! and frames the body's DATA for it. The HTTP/1.1 parser then applies its own
//! rules on top (a value it refuses is answered 400 on the stream).
//!
//! Mapping (RFC 9113 8.3.1 and 8.2.3): `:authority` becomes `Host` (a `host` field
//! is kept only when there is no `:authority`); `cookie` fields, which HTTP/2 may
//! split, are joined with "; "; a body of unknown length is chunked; an extended
//! CONNECT for `websocket` (RFC 8441) becomes the HTTP/1.1 handshake, after which
//! the stream carries the WebSocket's bytes both ways.

/// How the stream's DATA reaches its HTTP/1.1 connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyMode {
    /// The request has no body (the head ended the stream).
    None,
    /// `content-length` was given: DATA goes as it is.
    Length,
    /// No length: each DATA becomes a chunk, the stream's end the last chunk.
    Chunked,
    /// A WebSocket over the stream: bytes go as they are, both ways.
    Tunnel,
}

/// The key of the synthesized handshake. RFC 8441 has no key: the accept value
/// the HTTP/1.1 side computes from it is dropped from the answer.
const WEBSOCKET_KEY: &[u8] = b"dGhlIHNhbXBsZSBub25jZQ==";

/// What the head is made from.
pub struct Head<'a, F> {
    pub method: &'a [u8],
    pub path: &'a [u8],
    pub authority: Option<&'a [u8]>,
    /// `:protocol` of an extended CONNECT.
    pub protocol: Option<&'a [u8]>,
    /// The regular fields in order (lowercase names), as often as they are asked for.
    pub fields: F,
    pub content_length: Option<u64>,
    /// The HEADERS frame ended the stream: no body.
    pub end_stream: bool,
}

/// Appends the HTTP/1.1 head for `head` to `out` and says how its body goes.
pub fn write_head<'a, F, I>(head: Head<'a, F>, out: &mut Vec<u8>) -> BodyMode
where
    F: Fn() -> I,
    I: Iterator<Item = (&'a [u8], &'a [u8])>,
{
    let websocket = head
        .protocol
        .is_some_and(|p| p.eq_ignore_ascii_case(b"websocket"));
    let method = if websocket { &b"GET"[..] } else { head.method };
    out.extend_from_slice(method);
    out.push(b' ');
    out.extend_from_slice(head.path);
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    match head.authority {
        Some(authority) => out.extend_from_slice(authority),
        None => {
            if let Some((_, value)) = (head.fields)().find(|(n, _)| *n == b"host") {
                out.extend_from_slice(value);
            }
        }
    }
    out.extend_from_slice(b"\r\n");
    let mut cookies = 0;
    for (name, value) in (head.fields)() {
        if name == b"host" || name == b"content-length" {
            continue;
        }
        if name == b"cookie" {
            cookies += 1;
            continue;
        }
        line(out, name, value);
    }
    if cookies > 0 {
        out.extend_from_slice(b"cookie: ");
        let mut first = true;
        for (_, value) in (head.fields)().filter(|(n, _)| *n == b"cookie") {
            if !first {
                out.extend_from_slice(b"; ");
            }
            first = false;
            out.extend_from_slice(value);
        }
        out.extend_from_slice(b"\r\n");
    }
    let mode = if websocket {
        out.extend_from_slice(b"upgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-key: ");
        out.extend_from_slice(WEBSOCKET_KEY);
        out.extend_from_slice(b"\r\n");
        BodyMode::Tunnel
    } else if let Some(length) = head.content_length {
        let mut digits = itoa::Buffer::new();
        line(out, b"content-length", digits.format(length).as_bytes());
        if length == 0 {
            BodyMode::None
        } else {
            BodyMode::Length
        }
    } else if head.end_stream {
        BodyMode::None
    } else {
        out.extend_from_slice(b"transfer-encoding: chunked\r\n");
        BodyMode::Chunked
    };
    out.extend_from_slice(b"\r\n");
    mode
}

fn line(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends `data` as one chunk (nothing for no data: an empty chunk would end the body).
pub fn chunk(data: &[u8], out: &mut Vec<u8>) {
    if data.is_empty() {
        return;
    }
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// The chunked body's end.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn head<'a>(
        method: &'a [u8],
        fields: &'a [(&'a [u8], &'a [u8])],
        content_length: Option<u64>,
        end_stream: bool,
    ) -> (Vec<u8>, BodyMode) {
        let mut out = Vec::new();
        let mode = write_head(
            Head {
                method,
                path: b"/a?b=1",
                authority: Some(b"example.com"),
                protocol: None,
                fields: || fields.iter().map(|(n, v)| (*n, *v)),
                content_length,
                end_stream,
            },
            &mut out,
        );
        (out, mode)
    }

    #[test]
    fn a_get_has_host_from_the_authority_and_no_body() {
        let (out, mode) = head(
            b"GET",
            &[(b"accept", b"*/*"), (b"host", b"other")],
            None,
            true,
        );
        assert_eq!(
            out,
            b"GET /a?b=1 HTTP/1.1\r\nhost: example.com\r\naccept: */*\r\n\r\n"
        );
        assert_eq!(mode, BodyMode::None);
    }

    #[test]
    fn a_body_of_unknown_length_is_chunked_and_a_known_one_is_not() {
        let (out, mode) = head(b"POST", &[], None, false);
        assert!(out.ends_with(b"transfer-encoding: chunked\r\n\r\n"));
        assert_eq!(mode, BodyMode::Chunked);
        let (out, mode) = head(b"POST", &[(b"content-length", b"5")], Some(5), false);
        assert!(out.ends_with(b"\r\ncontent-length: 5\r\n\r\n"));
        assert_eq!(
            out.windows(14).filter(|w| w == b"content-length").count(),
            1
        );
        assert_eq!(mode, BodyMode::Length);
        let (_, mode) = head(b"POST", &[], Some(0), false);
        assert_eq!(mode, BodyMode::None);
    }

    #[test]
    fn split_cookies_are_joined() {
        let (out, _) = head(
            b"GET",
            &[(b"cookie", b"a=1"), (b"x", b"y"), (b"cookie", b"b=2")],
            None,
            true,
        );
        assert!(out.ends_with(b"x: y\r\ncookie: a=1; b=2\r\n\r\n"));
    }

    #[test]
    fn without_an_authority_the_host_field_is_used() {
        let mut out = Vec::new();
        let fields: [(&[u8], &[u8]); 1] = [(b"host", b"h.example")];
        write_head(
            Head {
                method: b"GET",
                path: b"/",
                authority: None,
                protocol: None,
                fields: || fields.iter().copied(),
                content_length: None,
                end_stream: true,
            },
            &mut out,
        );
        assert_eq!(out, b"GET / HTTP/1.1\r\nhost: h.example\r\n\r\n");
    }

    #[test]
    fn an_extended_connect_is_a_websocket_handshake() {
        let mut out = Vec::new();
        let fields: [(&[u8], &[u8]); 2] = [
            (b"sec-websocket-version", b"13"),
            (b"sec-websocket-protocol", b"chat"),
        ];
        let mode = write_head(
            Head {
                method: b"CONNECT",
                path: b"/ws",
                authority: Some(b"h"),
                protocol: Some(b"websocket"),
                fields: || fields.iter().copied(),
                content_length: None,
                end_stream: false,
            },
            &mut out,
        );
        assert_eq!(mode, BodyMode::Tunnel);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("GET /ws HTTP/1.1\r\nhost: h\r\n"));
        assert!(text.contains("upgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-key: "));
    }

    #[test]
    fn chunks() {
        let mut out = Vec::new();
        chunk(b"", &mut out);
        chunk(b"hello world, 17 b", &mut out);
        out.extend_from_slice(LAST_CHUNK);
        assert_eq!(out, b"11\r\nhello world, 17 b\r\n0\r\n\r\n");
    }
}
