//! The shell's common answer, a `200` with a body and no headers of the
//! handler's (a `str`, `bytes` or JSON answer), written with its lines that cannot
//! vary joined: `encode_ok`, and `encode_ok_with` for a body written in place.

use super::{encode_response, Common, DateLine, Framing, Parts, Sent, Version};

/// The first lines of a `200` of `encode_ok` up to its request id: kept by a
/// connection and made again when its `Date` line changes (once a second).
pub fn ok_head(server_line: &[u8], date_line: &DateLine, request_id_prefix: &[u8]) -> Vec<u8> {
    [
        b"HTTP/1.1 200 OK\r\n",
        server_line,
        date_line,
        request_id_prefix,
    ]
    .concat()
}

/// What the shell's common answers (a handler's `str`, `bytes`, JSON) say before
/// their length, written as one piece each (`encode_ok`).
pub struct OkKind {
    /// `\r\nContent-Type: ...\r\nContent-Length: `, then zeros up to
    /// `LINES_ROOM`: the CRLF ends the line before (the request id's, after
    /// `ok_head`); without it the lines start a line. Copied whole, a length known
    /// at compile time (a few stores), then cut back to `len`: a copy of a length
    /// known only at run time is a `memcpy` call (callgrind: ~10 instructions more).
    lines: [u8; LINES_ROOM],
    len: usize,
    /// The content type alone, for an answer to an HTTP/2 stream (a record).
    content_type: &'static str,
}

const LINES_ROOM: usize = 64;

impl OkKind {
    const fn new(lines: &[u8], content_type: &'static str) -> Self {
        let mut padded = [0u8; LINES_ROOM];
        let mut i = 0;
        while i < lines.len() {
            padded[i] = lines[i];
            i += 1;
        }
        OkKind {
            lines: padded,
            len: lines.len(),
            content_type,
        }
    }

    fn lines(&self) -> &[u8] {
        &self.lines[..self.len]
    }
}

pub const OK_TEXT: OkKind = OkKind::new(
    b"\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ",
    "text/plain; charset=utf-8",
);
pub const OK_JSON: OkKind = OkKind::new(
    b"\r\nContent-Type: application/json\r\nContent-Length: ",
    "application/json",
);
pub const OK_BYTES: OkKind = OkKind::new(
    b"\r\nContent-Type: application/octet-stream\r\nContent-Length: ",
    "application/octet-stream",
);

/// Appends a `200` with `body` and no headers of the handler's: what
/// `encode_response` writes for it, byte for byte (tests below), with the lines
/// that cannot vary joined (~100 instructions less per answer, callgrind).
pub fn encode_ok(
    out: &mut Vec<u8>,
    kind: &OkKind,
    body: &[u8],
    framing: Framing,
    common: Common<'_>,
) -> Sent {
    if framing.version == Version::Http2 {
        // A record for the stream (`encode_record`), as every whole answer to one.
        let parts = Parts {
            status: 200,
            content_type: Some(kind.content_type),
            headers: &[],
            body,
        };
        return encode_response(out, &parts, framing, common);
    }
    out.reserve(160 + common.ok_head.len() + body.len());
    put_ok_lines(out, kind, common);
    put_length(out, body.len());
    end_head!(out, framing, "\r\n");
    let body_bytes = if framing.head {
        0
    } else {
        out.extend_from_slice(body);
        body.len()
    };
    Sent {
        status: 200,
        body_bytes,
    }
}

/// `n` in decimal. A length under 100 (a short answer's) is its digits written
/// as a copy of a known length: `itoa` measured ~20 instructions more for one
/// (callgrind, pipelined).
#[inline]
fn put_length(out: &mut Vec<u8>, n: usize) {
    match u8::try_from(n) {
        Ok(n @ 0..=9) => out.push(b'0' + n),
        Ok(n @ 10..=99) => out.extend_from_slice(&[b'0' + n / 10, b'0' + n % 10]),
        _ => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
    }
}

/// `encode_ok`'s lines up to the body's length (HTTP/1). In each of its two
/// callers: called, it cost `plaintext` 16 instructions more (callgrind, 3.11).
#[allow(clippy::inline_always)]
#[inline(always)]
fn put_ok_lines(out: &mut Vec<u8>, kind: &OkKind, common: Common<'_>) {
    if common.ok_head.is_empty() || common.request_id.is_empty() {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        out.extend_from_slice(common.server_line);
        out.extend_from_slice(common.date_line);
        common.put_request_id(out);
        out.extend_from_slice(&kind.lines()[2..]);
    } else {
        out.extend_from_slice(common.ok_head);
        // A generated id (32 digits) as a copy of a known length (see `OkKind`).
        match <&[u8; 32]>::try_from(common.request_id) {
            Ok(id) => out.extend_from_slice(id),
            Err(_) => out.extend_from_slice(common.request_id),
        }
        out.extend_from_slice(&kind.lines);
        out.truncate(out.len() - (LINES_ROOM - kind.len));
    }
}

/// `encode_ok` for a body that `write` appends to `out` itself, behind the head,
/// so that it is not made elsewhere and copied (the JSON writer's). Its length,
/// which comes first, is written as two digits ahead and set when the body is
/// there; a body of another width of length (under 10 bytes, or 100 and over)
/// is moved by one or more bytes then. When `write` fails, `out` is cut back to
/// what it was and its error returned. For HTTP/1 only (an HTTP/2 stream's answer is
/// a record: `encode_ok`).
pub fn encode_ok_with<E>(
    out: &mut Vec<u8>,
    kind: &OkKind,
    framing: Framing,
    common: Common<'_>,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<Sent, E> {
    debug_assert!(framing.version != Version::Http2);
    let start = out.len();
    out.reserve(160 + common.ok_head.len());
    put_ok_lines(out, kind, common);
    let digits = out.len();
    end_head!(out, framing, "00\r\n");
    let body_start = out.len();
    if let Err(err) = write(out) {
        out.truncate(start);
        return Err(err);
    }
    let body_len = out.len() - body_start;
    if let (10..=99, Ok(tens), Ok(ones)) = (
        body_len,
        u8::try_from(body_len / 10),
        u8::try_from(body_len % 10),
    ) {
        out[digits] = b'0' + tens;
        out[digits + 1] = b'0' + ones;
    } else {
        let mut width = itoa::Buffer::new();
        out.splice(
            digits..digits + 2,
            width.format(body_len).as_bytes().iter().copied(),
        );
    }
    let body_bytes = if framing.head {
        out.truncate(out.len() - body_len);
        0
    } else {
        body_len
    };
    Ok(Sent {
        status: 200,
        body_bytes,
    })
}
