//! HTTP/2 frames (RFC 9113 sections 4 and 6), sans-IO: reading the client's
//! frames from a byte slice and writing the server's into an output buffer.
//!
//! Reading is split in two steps so that the connection can refuse a frame by
//! its header alone, before buffering its payload: `Head::parse` reads the nine
//! header bytes, `parse` checks one whole frame (stream identifier rules, fixed
//! lengths, padding) and returns a `Frame` that borrows its payload. Every size
//! or identifier a section 6 MUST forbids is an `H2Error` of the reach the RFC
//! gives it; nothing here panics on any input.
//!
//! Writing appends to a `Vec<u8>` the connection reuses: no allocation per frame.

use super::error::{ErrorCode, H2Error};

/// The client connection preface (section 3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Bytes in a frame header.
pub const HEADER_LEN: usize = 9;
/// `SETTINGS_MAX_FRAME_SIZE`'s initial value and its floor (section 6.5.2).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;
/// The largest frame size either side may allow (2^24-1).
pub const MAX_FRAME_SIZE_LIMIT: u32 = (1 << 24) - 1;
/// The largest flow-control window (2^31-1, section 6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Frame types (section 6).
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags; which apply depends on the type.
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// A frame header (section 4.1), the reserved bit of the stream id dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    /// Reads the header from the first nine bytes of `b`, or `None` if fewer.
    pub fn parse(b: &[u8]) -> Option<Head> {
        let b: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        Some(Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u31(b[5], b[6], b[7], b[8]),
        })
    }

    fn has(self, f: u8) -> bool {
        self.flags & f != 0
    }
}

fn u31(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a & 0x7f, b, c, d])
}

fn u32_at(p: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
}

/// A stream dependency (section 5.3.2, deprecated by RFC 9113 and ignored here
/// except for the self-dependency check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    pub dependency: u32,
    pub exclusive: bool,
    pub weight: u8,
}

impl Priority {
    fn parse(p: &[u8]) -> Priority {
        Priority {
            dependency: u31(p[0], p[1], p[2], p[3]),
            exclusive: p[0] & 0x80 != 0,
            weight: p[4],
        }
    }
}

/// One frame, its payload borrowed from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Data {
        stream: u32,
        data: &'a [u8],
        end_stream: bool,
        /// The whole payload, padding included: what flow control counts.
        flow_len: u32,
    },
    Headers {
        stream: u32,
        block: &'a [u8],
        end_stream: bool,
        end_headers: bool,
        priority: Option<Priority>,
    },
    Priority {
        stream: u32,
        priority: Priority,
    },
    RstStream {
        stream: u32,
        code: ErrorCode,
    },
    Settings {
        ack: bool,
        /// Six-byte (identifier, value) pairs; see `settings::pairs`.
        payload: &'a [u8],
    },
    Ping {
        ack: bool,
        data: [u8; 8],
    },
    GoAway {
        last_stream: u32,
        code: ErrorCode,
        debug: &'a [u8],
    },
    WindowUpdate {
        stream: u32,
        increment: u32,
    },
    Continuation {
        stream: u32,
        block: &'a [u8],
        end_headers: bool,
    },
    /// A type this endpoint does not know: ignored (section 5.5).
    Unknown,
}

/// Checks one frame whose payload is complete. The caller has already refused
/// a length over its `SETTINGS_MAX_FRAME_SIZE`.
pub fn parse(head: Head, payload: &[u8]) -> Result<Frame<'_>, H2Error> {
    let len = payload.len();
    let stream = head.stream;
    let needs_stream = matches!(
        head.kind,
        kind::DATA | kind::HEADERS | kind::PRIORITY | kind::RST_STREAM | kind::CONTINUATION
    );
    if needs_stream && stream == 0 {
        return Err(H2Error::protocol());
    }
    let needs_zero = matches!(head.kind, kind::SETTINGS | kind::PING | kind::GOAWAY);
    if needs_zero && stream != 0 {
        return Err(H2Error::protocol());
    }
    Ok(match head.kind {
        kind::DATA => {
            let data = unpad(head, payload)?;
            Frame::Data {
                stream,
                data,
                end_stream: head.has(flag::END_STREAM),
                flow_len: head.len,
            }
        }
        kind::HEADERS => headers(head, payload)?,
        kind::PRIORITY => {
            // Section 6.3: a wrong length is a stream error only.
            if len != 5 {
                return Err(H2Error::Stream(stream, ErrorCode::FrameSizeError));
            }
            Frame::Priority {
                stream,
                priority: Priority::parse(payload),
            }
        }
        kind::RST_STREAM => {
            if len != 4 {
                return Err(H2Error::frame_size());
            }
            Frame::RstStream {
                stream,
                code: ErrorCode::from_u32(u32_at(payload, 0)),
            }
        }
        kind::SETTINGS => {
            let ack = head.has(flag::ACK);
            if (ack && len != 0) || len % 6 != 0 {
                return Err(H2Error::frame_size());
            }
            Frame::Settings { ack, payload }
        }
        // A client cannot push (section 8.4).
        kind::PUSH_PROMISE => return Err(H2Error::protocol()),
        kind::PING => {
            let data: [u8; 8] = payload.try_into().map_err(|_| H2Error::frame_size())?;
            Frame::Ping {
                ack: head.has(flag::ACK),
                data,
            }
        }
        kind::GOAWAY => {
            if len < 8 {
                return Err(H2Error::frame_size());
            }
            Frame::GoAway {
                last_stream: u31(payload[0], payload[1], payload[2], payload[3]),
                code: ErrorCode::from_u32(u32_at(payload, 4)),
                debug: &payload[8..],
            }
        }
        kind::WINDOW_UPDATE => {
            if len != 4 {
                return Err(H2Error::frame_size());
            }
            Frame::WindowUpdate {
                stream,
                increment: u31(payload[0], payload[1], payload[2], payload[3]),
            }
        }
        kind::CONTINUATION => Frame::Continuation {
            stream,
            block: payload,
            end_headers: head.has(flag::END_HEADERS),
        },
        _ => Frame::Unknown,
    })
}

fn headers(head: Head, payload: &[u8]) -> Result<Frame<'_>, H2Error> {
    let mut block = unpad(head, payload)?;
    let priority = if head.has(flag::PRIORITY) {
        if block.len() < 5 {
            // Padding that eats into the priority fields is a padding error.
            return Err(if head.has(flag::PADDED) {
                H2Error::protocol()
            } else {
                H2Error::frame_size()
            });
        }
        let p = Priority::parse(block);
        block = &block[5..];
        Some(p)
    } else {
        None
    };
    Ok(Frame::Headers {
        stream: head.stream,
        block,
        end_stream: head.has(flag::END_STREAM),
        end_headers: head.has(flag::END_HEADERS),
        priority,
    })
}

/// The payload without its padding (section 6.1): padding as long as the
/// payload or longer is a connection `PROTOCOL_ERROR`.
fn unpad(head: Head, payload: &[u8]) -> Result<&[u8], H2Error> {
    if !head.has(flag::PADDED) {
        return Ok(payload);
    }
    let (&pad, rest) = payload.split_first().ok_or_else(H2Error::frame_size)?;
    let pad = usize::from(pad);
    if pad > rest.len() {
        return Err(H2Error::protocol());
    }
    Ok(&rest[..rest.len() - pad])
}

/// Appends a frame header.
pub fn write_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    // Callers never exceed the peer's max frame size, itself below 2^24.
    debug_assert!(len <= MAX_FRAME_SIZE_LIMIT as usize);
    let len = u32::try_from(len)
        .unwrap_or(MAX_FRAME_SIZE_LIMIT)
        .to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&(stream & MAX_WINDOW).to_be_bytes());
}

/// Appends a SETTINGS frame with these (identifier, value) pairs.
pub fn write_settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    write_head(out, pairs.len() * 6, kind::SETTINGS, 0, 0);
    for &(id, value) in pairs {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub fn write_settings_ack(out: &mut Vec<u8>) {
    write_head(out, 0, kind::SETTINGS, flag::ACK, 0);
}

pub fn write_ping_ack(out: &mut Vec<u8>, data: [u8; 8]) {
    write_head(out, 8, kind::PING, flag::ACK, 0);
    out.extend_from_slice(&data);
}

pub fn write_rst_stream(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    write_head(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_u32().to_be_bytes());
}

pub fn write_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode) {
    write_head(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & MAX_WINDOW).to_be_bytes());
    out.extend_from_slice(&code.to_u32().to_be_bytes());
}

pub fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_head(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & MAX_WINDOW).to_be_bytes());
}

/// Appends one DATA frame; `data` must fit the peer's max frame size.
pub fn write_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    let flags = if end_stream { flag::END_STREAM } else { 0 };
    write_head(out, data.len(), kind::DATA, flags, stream);
    out.extend_from_slice(data);
}

/// Appends a header block as one HEADERS frame, followed by CONTINUATION frames
/// when it is longer than `max_frame` (section 4.3: they go out back to back).
pub fn write_header_block(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame: usize,
) {
    let max_frame = max_frame.max(1);
    let mut chunks = block.chunks(max_frame);
    let first = chunks.next().unwrap_or(&[]);
    let mut flags = if end_stream { flag::END_STREAM } else { 0 };
    if first.len() == block.len() {
        flags |= flag::END_HEADERS;
    }
    write_head(out, first.len(), kind::HEADERS, flags, stream);
    out.extend_from_slice(first);
    let mut sent = first.len();
    for chunk in chunks {
        sent += chunk.len();
        let flags = if sent == block.len() {
            flag::END_HEADERS
        } else {
            0
        };
        write_head(out, chunk.len(), kind::CONTINUATION, flags, stream);
        out.extend_from_slice(chunk);
    }
}
