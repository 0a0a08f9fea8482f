//! The sending side: response heads, bodies under flow control, trailers,
//! window updates for consumed request bodies, resets and GOAWAY.
//!
//! Fairness: a stream's body goes out at once as far as the windows allow
//! (when the connection window is open no other stream is waiting, by the
//! invariant in `conn.rs`). A stream left with data and stream credit but no
//! connection credit joins `queue`; when the connection window reopens, the
//! queue is served one frame per stream per turn, so one large body cannot
//! keep the others waiting.

use super::{Connection, Event};
use crate::http2::error::ErrorCode;
use crate::http2::frame;
use crate::http2::stream::Stream;

impl Connection {
    /// The response head. `headers`: lowercase names, without the
    /// connection-specific ones. `end_stream` when no body follows.
    pub fn send_headers(
        &mut self,
        stream: u32,
        status: u16,
        headers: &[(&[u8], &[u8])],
        end_stream: bool,
    ) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        if s.headers_sent || s.send_closed {
            return;
        }
        s.headers_sent = true;
        self.write_block(stream, Some(status), headers.iter().copied(), end_stream);
        if end_stream {
            self.ended(stream);
        }
    }

    /// An interim (1xx, not 101) response before the final head.
    pub fn send_informational(&mut self, stream: u32, status: u16, headers: &[(&[u8], &[u8])]) {
        let open = self
            .streams
            .get(&stream)
            .is_some_and(|s| !s.headers_sent && !s.send_closed);
        if open && (100..200).contains(&status) && status != 101 {
            self.write_block(stream, Some(status), headers.iter().copied(), false);
        }
    }

    /// Body bytes: framed now as far as both send windows and the client's
    /// max frame size allow, the rest buffered in the stream until
    /// `WINDOW_UPDATE` frames let it out.
    pub fn send_data(&mut self, stream: u32, data: &[u8], end_stream: bool) {
        let max_frame = self.peer.max_frame_size as usize;
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        if !s.headers_sent || s.send_closed || s.end_pending {
            return;
        }
        let mut rest = data;
        if s.pending_len() == 0 {
            let room = self.send_window.min(s.send_window).max(0);
            let n = rest.len().min(usize::try_from(room).unwrap_or(0));
            let all = n == rest.len();
            if n > 0 {
                let mut sent = 0;
                for chunk in rest[..n].chunks(max_frame) {
                    sent += chunk.len();
                    frame::write_data(&mut self.out, stream, chunk, end_stream && all && sent == n);
                }
                self.send_window -= wide(n);
                s.send_window -= wide(n);
            } else if rest.is_empty() && end_stream {
                frame::write_data(&mut self.out, stream, &[], true);
            }
            if all {
                if end_stream {
                    self.ended(stream);
                }
                return;
            }
            rest = &rest[n..];
        }
        s.buffer(rest);
        s.end_pending = end_stream;
        if s.pending_len() > self.config.send_low_water {
            s.want_writable = true;
        }
        if s.send_window > 0 && !s.queued {
            s.queued = true;
            self.queue.push_back(stream);
        }
        self.flush();
    }

    /// Trailers end the response (after any buffered body).
    pub fn send_trailers(&mut self, stream: u32, fields: &[(&[u8], &[u8])]) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        if !s.headers_sent || s.send_closed || s.end_pending {
            return;
        }
        if s.pending_len() > 0 {
            s.end_pending = true;
            s.trailers = Some(
                fields
                    .iter()
                    .map(|(n, v)| (n.to_vec(), v.to_vec()))
                    .collect(),
            );
            return;
        }
        self.write_block(stream, None, fields.iter().copied(), true);
        self.ended(stream);
    }

    /// Body bytes buffered for the stream and not sent yet.
    pub fn buffered(&self, stream: u32) -> usize {
        self.streams.get(&stream).map_or(0, Stream::pending_len)
    }

    /// The app consumed `n` bytes of the stream's request body: its window is
    /// given back with a `WINDOW_UPDATE` once half of it is consumed.
    pub fn consumed(&mut self, stream: u32, n: usize) {
        let window = self.local_window();
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        if s.recv_closed || self.dead {
            return;
        }
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        s.recv_unannounced = s.recv_unannounced.saturating_add(n);
        if s.recv_unannounced >= window / 2 {
            let increment = s.recv_unannounced.min(frame::MAX_WINDOW);
            frame::write_window_update(&mut self.out, stream, increment);
            s.recv_window += i64::from(increment);
            s.recv_unannounced -= increment;
        }
    }

    /// Resets a stream from the server side (`RST_STREAM`); no event follows.
    pub fn reset(&mut self, stream: u32, code: ErrorCode) {
        if !self.dead && self.streams.contains_key(&stream) {
            self.reset_stream(stream, code);
        }
    }

    /// The answer is complete (or will be) and the rest of the request's body will
    /// not be read: DATA that still comes is dropped (its window given back), and
    /// the stream is reset with `NO_ERROR` (section 8.1) once the answer's
    /// `END_STREAM` is out, not before, so no answer byte waiting for the client's
    /// window is lost.
    pub fn discard_body(&mut self, stream: u32) {
        if self.dead {
            return;
        }
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        s.discard = true;
        if s.send_closed && !s.recv_closed {
            self.reset_stream(stream, ErrorCode::NoError);
        }
    }

    /// GOAWAY with the highest stream accepted: streams opened after it are
    /// ignored. With `NO_ERROR` the open streams finish; any other code ends the
    /// connection now.
    pub fn go_away(&mut self, code: ErrorCode) {
        if self.dead || self.goaway_sent {
            return;
        }
        if code != ErrorCode::NoError {
            self.fail_connection(code);
            return;
        }
        frame::write_goaway(&mut self.out, self.last_accepted, code);
        self.goaway_sent = true;
    }

    /// Encodes a header block and frames it (HEADERS + CONTINUATION).
    fn write_block<'a>(
        &mut self,
        stream: u32,
        status: Option<u16>,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        end_stream: bool,
    ) {
        let mut block = std::mem::take(&mut self.scratch);
        block.clear();
        self.encoder.begin_block(&mut block);
        if let Some(status) = status {
            self.encoder.encode_status(status, &mut block);
        }
        for (place, (name, value)) in fields.enumerate() {
            self.encoder.encode_at(place, name, value, &mut block);
        }
        let max_frame = self.peer.max_frame_size as usize;
        frame::write_header_block(&mut self.out, stream, &block, end_stream, max_frame);
        self.scratch = block;
    }

    /// Our `END_STREAM` went out: the stream closes if the client's side has
    /// too. A request whose body is being discarded is reset (`NO_ERROR`,
    /// section 8.1) so the client stops sending it.
    pub(super) fn ended(&mut self, stream: u32) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        s.send_closed = true;
        s.end_pending = false;
        if s.recv_closed {
            self.streams.remove(&stream);
        } else if s.discard {
            self.reset_stream(stream, ErrorCode::NoError);
        }
    }

    /// Queues every stream that has output and stream credit (after the
    /// initial window grew).
    pub(super) fn schedule_all(&mut self) {
        let mut ready: Vec<u32> = self
            .streams
            .iter()
            .filter(|(_, s)| s.has_output() && s.send_window > 0 && !s.queued)
            .map(|(&id, _)| id)
            .collect();
        ready.sort_unstable();
        for id in ready {
            if let Some(s) = self.streams.get_mut(&id) {
                s.queued = true;
            }
            self.queue.push_back(id);
        }
    }

    /// Sends queued streams' data, one frame per stream per turn, while the
    /// connection window lasts.
    pub(super) fn flush(&mut self) {
        let max_frame = self.peer.max_frame_size as usize;
        while self.send_window > 0 {
            let Some(id) = self.queue.pop_front() else {
                break;
            };
            let Some(s) = self.streams.get_mut(&id) else {
                continue;
            };
            s.queued = false;
            if s.send_window <= 0 || !s.has_output() {
                continue;
            }
            let room = self.send_window.min(s.send_window);
            let n = s
                .pending_len()
                .min(max_frame)
                .min(usize::try_from(room).unwrap_or(0));
            let last = n == s.pending_len();
            let end = last && s.end_pending && s.trailers.is_none();
            frame::write_data(&mut self.out, id, &s.pending()[..n], end);
            s.advance(n);
            self.send_window -= wide(n);
            s.send_window -= wide(n);
            if s.want_writable && s.pending_len() <= self.config.send_low_water {
                s.want_writable = false;
                self.events.push_back(Event::Writable { stream: id });
            }
            if !last {
                if s.send_window > 0 {
                    s.queued = true;
                    self.queue.push_back(id);
                }
            } else if s.end_pending {
                if let Some(trailers) = s.trailers.take() {
                    let fields = trailers.iter().map(|(n, v)| (n.as_slice(), v.as_slice()));
                    self.write_block(id, None, fields, true);
                }
                self.ended(id);
            }
        }
    }
}

/// A byte count as a window amount (counts here are bounded by windows, < 2^31).
fn wide(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
