//! One stream's state (RFC 9113 section 5.1) and flow-control windows
//! (section 5.2, 6.9).
//!
//! A server stream starts `open` (a client HEADERS frame) or `half-closed
//! (remote)` (one with `END_STREAM`). Each side ends on its own: `recv_closed`
//! when the client's `END_STREAM` arrives, `send_closed` when ours goes out.
//! With both, the stream is closed and the connection forgets it; idle and
//! closed streams are never stored (the connection tells them apart by the
//! highest stream id the client used).
//!
//! Windows are `i64`: a `SETTINGS_INITIAL_WINDOW_SIZE` decrease may take the send
//! window below zero (section 6.9.2), and sums are checked against 2^31-1
//! without overflow.

use super::frame::MAX_WINDOW;

/// Response trailers waiting for the buffered body ahead of them. They are
/// kept as fields, not encoded, because HPACK blocks must be encoded in the
/// order they go on the wire.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Debug)]
#[allow(clippy::struct_excessive_bools)] // each flag is one documented part of the state above
pub struct Stream {
    /// The client's `END_STREAM` arrived (or the stream was refused input).
    pub recv_closed: bool,
    /// Our `END_STREAM` went out.
    pub send_closed: bool,
    /// The response head went out (DATA before it is a caller error, dropped).
    pub headers_sent: bool,
    /// Request body bytes are dropped, not surfaced (the request was answered
    /// without reading it, e.g. after `HeadersTooLarge`).
    pub discard: bool,
    /// Credit the client has left to send on this stream.
    pub recv_window: i64,
    /// Bytes the app consumed (or padding) not yet given back by `WINDOW_UPDATE`.
    pub recv_unannounced: u32,
    /// The request's content-length, checked against the DATA total.
    pub content_length: Option<u64>,
    pub received: u64,
    /// What the client lets us send on this stream.
    pub send_window: i64,
    /// Body bytes the windows did not let out yet: `pending[pending_at..]`.
    pending: Vec<u8>,
    pending_at: usize,
    /// `END_STREAM` (or the trailers) goes out once `pending` is empty.
    pub end_pending: bool,
    pub trailers: Option<Fields>,
    /// In the connection's send queue.
    pub queued: bool,
    /// Buffered data went over the low-water mark: say `Writable` when it is back.
    pub want_writable: bool,
}

impl Stream {
    pub fn new(send_window: u32, recv_window: u32, end_stream: bool) -> Stream {
        Stream {
            recv_closed: end_stream,
            send_closed: false,
            headers_sent: false,
            discard: false,
            recv_window: i64::from(recv_window),
            recv_unannounced: 0,
            content_length: None,
            received: 0,
            send_window: i64::from(send_window),
            pending: Vec::new(),
            pending_at: 0,
            end_pending: false,
            trailers: None,
            queued: false,
            want_writable: false,
        }
    }

    /// Both sides ended: the stream is closed.
    pub fn is_closed(&self) -> bool {
        self.recv_closed && self.send_closed
    }

    pub fn pending(&self) -> &[u8] {
        &self.pending[self.pending_at..]
    }

    pub fn pending_len(&self) -> usize {
        self.pending.len() - self.pending_at
    }

    pub fn buffer(&mut self, data: &[u8]) {
        self.pending.extend_from_slice(data);
    }

    /// Drops `n` sent bytes from the front of the buffer, without moving the
    /// rest each time: the buffer is reset when empty and compacted when the
    /// sent part is most of it.
    pub fn advance(&mut self, n: usize) {
        self.pending_at += n;
        if self.pending_at >= self.pending.len() {
            self.pending.clear();
            self.pending_at = 0;
        } else if self.pending_at > self.pending.len() / 2 {
            self.pending.drain(..self.pending_at);
            self.pending_at = 0;
        }
    }

    /// Something waits to go out: body bytes, or the end (trailers, `END_STREAM`).
    pub fn has_output(&self) -> bool {
        !self.send_closed && (self.pending_len() > 0 || self.end_pending)
    }

    /// Adds a `WINDOW_UPDATE` increment; false if the window would exceed 2^31-1.
    pub fn grow_send_window(&mut self, by: i64) -> bool {
        self.send_window += by;
        self.send_window <= i64::from(MAX_WINDOW)
    }
}
