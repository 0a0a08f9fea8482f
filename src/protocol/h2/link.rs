//! A stream as the session keeps it (`Link`), and the pieces that move its bytes:
//! answer pieces to the core (`send`), body bytes to its connection (`frame_body`,
//! `deliver`), and what to do to that connection afterwards (`After`).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::transport::StreamTransport;
use crate::http2::answer::{Answer, Piece};
use crate::http2::as_h1::{self, BodyMode};
use crate::http2::conn::Connection as H2;
use crate::protocol::Connection;

/// Answer bytes waiting for the client's window above which a stream's writer is
/// paused (`pause_writing`), and below which it resumes.
pub(super) const HIGH_MARK: usize = 256 * 1024;
pub(super) const LOW_MARK: usize = 64 * 1024;

pub(super) struct Link {
    pub(super) conn: Py<Connection>,
    pub(super) transport: Py<StreamTransport>,
    pub(super) answer: Answer,
    pub(super) body: BodyMode,
    /// Body bytes still to come when the length is known.
    pub(super) body_left: u64,
    pub(super) request_ended: bool,
    /// DATA that arrived while the connection paused reading.
    pub(super) held: Vec<u8>,
    pub(super) held_end: bool,
    /// `pause_writing` was called on the connection.
    pub(super) writer_paused: bool,
}

impl Link {
    /// Whether the connection has its request's whole body: the client ended the
    /// stream, or sent all of a known length (an `END_STREAM` may still follow, on an
    /// empty DATA frame, which is then dropped: no reset for a client that did
    /// nothing wrong).
    pub(super) fn body_read(&self) -> bool {
        self.request_ended
            || self.body == BodyMode::None
            || (self.body == BodyMode::Length && self.body_left == 0 && self.held.is_empty())
    }
}

/// What to do to a stream's connection once the session is no longer borrowed.
pub(super) enum After {
    Nothing,
    PauseWriting(Py<Connection>),
    ResumeWriting(Py<Connection>),
    /// The stream is over for its connection: it is told its transport is lost.
    Lose(Py<Connection>),
}

/// One piece of an answer to the core; true when it ends the stream.
pub(super) fn send(core: &mut H2, stream: u32, piece: Piece<'_>) -> bool {
    match piece {
        Piece::Informational { status, fields } => {
            core.send_informational(stream, status, fields);
            false
        }
        Piece::Head {
            status,
            fields,
            end,
        } => {
            core.send_headers(stream, status, fields, end);
            end
        }
        Piece::Data { bytes, end } => {
            core.send_data(stream, bytes, end);
            end
        }
        Piece::Trailers { fields } => {
            core.send_trailers(stream, fields);
            true
        }
    }
}

/// Body bytes as the stream's connection reads them.
pub(super) fn frame_body(mode: BodyMode, data: &[u8], end: bool, out: &mut Vec<u8>) {
    match mode {
        BodyMode::None => {}
        BodyMode::Length | BodyMode::Tunnel => out.extend_from_slice(data),
        BodyMode::Chunked => {
            as_h1::chunk(data, out);
            if end {
                out.extend_from_slice(as_h1::LAST_CHUNK);
            }
        }
    }
}

/// Bytes for whatever reads the stream: its connection (called directly), or the
/// protocol that took its transport over (a WebSocket).
pub(super) fn deliver(
    py: Python<'_>,
    transport: &Py<StreamTransport>,
    bytes: &Bound<'_, PyBytes>,
) -> PyResult<()> {
    let protocol = transport.bind(py).borrow().protocol.clone_ref(py);
    let protocol = protocol.bind(py);
    match protocol.cast::<Connection>() {
        Ok(conn) => Connection::data_received(conn, bytes),
        Err(_) => protocol.call_method1("data_received", (bytes,)).map(drop),
    }
}
