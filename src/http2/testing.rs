//! A test client for the connection tests: builds client frames, parses the
//! server's output back into frames and decodes its header blocks.

use std::time::{Duration, Instant};

use super::conn::{Connection, Event};
use super::error::ErrorCode;
use super::frame::{flag, kind, write_head, Head, HEADER_LEN, PREFACE};
use super::hpack;
use super::settings::Config;

/// A frame as the server wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Out {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Out {
    pub fn u32_at(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }

    /// `RST_STREAM`'s or GOAWAY's error code.
    pub fn code(&self) -> ErrorCode {
        let at = if self.kind == kind::GOAWAY { 4 } else { 0 };
        ErrorCode::from_u32(self.u32_at(at))
    }
}

/// One client frame's bytes.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_head(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out
}

pub fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut payload = Vec::new();
    for &(id, value) in pairs {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    frame(kind::SETTINGS, 0, 0, &payload)
}

pub fn window_update(stream: u32, increment: u32) -> Vec<u8> {
    frame(kind::WINDOW_UPDATE, 0, stream, &increment.to_be_bytes())
}

pub fn rst(stream: u32, code: ErrorCode) -> Vec<u8> {
    frame(kind::RST_STREAM, 0, stream, &code.to_u32().to_be_bytes())
}

pub fn data(stream: u32, body: &[u8], end_stream: bool) -> Vec<u8> {
    let flags = if end_stream { flag::END_STREAM } else { 0 };
    frame(kind::DATA, flags, stream, body)
}

pub struct Client {
    pub conn: Connection,
    encoder: hpack::Encoder,
    decoder: hpack::Decoder,
    pub now: Instant,
}

impl Client {
    /// A connection past the preface and the SETTINGS exchange, its output taken.
    pub fn new(config: &Config) -> Client {
        let mut c = Client::raw(config);
        let mut hello = PREFACE.to_vec();
        hello.extend(settings(&[]));
        hello.extend(frame(kind::SETTINGS, flag::ACK, 0, &[]));
        c.send(&hello);
        let out = c.frames();
        assert_eq!(out[0].kind, kind::SETTINGS);
        assert!(out
            .iter()
            .any(|f| f.kind == kind::SETTINGS && f.flags == flag::ACK));
        c
    }

    /// A connection that has seen nothing yet.
    pub fn raw(config: &Config) -> Client {
        Client {
            conn: Connection::new(config),
            encoder: hpack::Encoder::new(),
            decoder: hpack::Decoder::new(4096),
            now: Instant::now(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.conn.received(bytes, self.now);
    }

    pub fn later(&mut self, by: Duration) {
        self.now += by;
    }

    /// A header block as a client would encode it.
    pub fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        for (n, v) in fields {
            self.encoder.encode(n.as_bytes(), v.as_bytes(), &mut block);
        }
        block
    }

    /// A HEADERS frame (`END_HEADERS`) with these fields.
    pub fn headers(&mut self, stream: u32, fields: &[(&str, &str)], end_stream: bool) -> Vec<u8> {
        let block = self.block(fields);
        let flags = flag::END_HEADERS | if end_stream { flag::END_STREAM } else { 0 };
        frame(kind::HEADERS, flags, stream, &block)
    }

    /// A GET for `path` on `stream`, without body.
    pub fn get(&mut self, stream: u32, path: &str) -> Vec<u8> {
        self.headers(stream, &request(path, "GET"), true)
    }

    /// The server's output since the last call, as frames.
    pub fn frames(&mut self) -> Vec<Out> {
        let bytes = std::mem::take(self.conn.output());
        let mut out = Vec::new();
        let mut rest = &bytes[..];
        while let Some(head) = Head::parse(rest) {
            let end = HEADER_LEN + head.len as usize;
            out.push(Out {
                kind: head.kind,
                flags: head.flags,
                stream: head.stream,
                payload: rest[HEADER_LEN..end].to_vec(),
            });
            rest = &rest[end..];
        }
        assert!(rest.is_empty(), "a partial frame in the output");
        out
    }

    pub fn events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.conn.next_event()).collect()
    }

    /// Decodes a response header block (HEADERS + CONTINUATION payloads).
    pub fn decode(&mut self, block: &[u8]) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        self.decoder
            .decode(block, usize::MAX, |n, v| {
                fields.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                ));
            })
            .unwrap();
        fields
    }
}

/// A request's pseudo-header fields.
pub fn request(path: &str, method: &'static str) -> Vec<(&'static str, &'static str)> {
    let path: &'static str = Box::leak(path.to_owned().into_boxed_str());
    vec![
        (":method", method),
        (":scheme", "https"),
        (":authority", "example.com"),
        (":path", path),
    ]
}

/// The only GOAWAY among these frames, or a panic.
pub fn goaway(frames: &[Out]) -> &Out {
    let found: Vec<&Out> = frames.iter().filter(|f| f.kind == kind::GOAWAY).collect();
    assert_eq!(found.len(), 1, "{frames:?}");
    found[0]
}

/// The `RST_STREAM` frames among these, as (stream, code).
pub fn resets(frames: &[Out]) -> Vec<(u32, ErrorCode)> {
    frames
        .iter()
        .filter(|f| f.kind == kind::RST_STREAM)
        .map(|f| (f.stream, f.code()))
        .collect()
}
