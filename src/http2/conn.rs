//! The server side of one HTTP/2 connection (RFC 9113), sans-IO: bytes read
//! from the socket go in (`received`), events come out (`next_event`), and the
//! frames to write accumulate in one buffer (`output`).
//!
//! # Theory
//!
//! The connection is in one of three phases: waiting for the client preface
//! (the 24 magic bytes), waiting for the client's first frame (which must be
//! SETTINGS), then open. Any connection error ends it: GOAWAY goes into the
//! output, every stream the shell knows gets `Event::Reset`, input is ignored
//! from then on (`dead`) and `is_finished` says to close once the output is
//! written.
//!
//! Streams: the client opens odd ids in increasing order. A stream id above
//! `last_stream` is idle; one at or below it that is not in `streams` is closed
//! (finished, reset, refused or rejected as malformed). Only accepted streams,
//! the ones the shell saw a `Request` or `HeadersTooLarge` for, are stored
//! (`stream.rs` has the per-stream states). So "idle" and "closed" cost no
//! memory, and RFC 9113's frame-on-state table (section 5.1) reads:
//! - DATA: idle -> connection `PROTOCOL_ERROR`; closed or half-closed (remote) ->
//!   stream `STREAM_CLOSED`, except for streams this side reset lately (the
//!   client may have sent before it saw our `RST_STREAM`: ignored);
//! - HEADERS: new id -> a request; stored and receiving -> trailers; stored and
//!   half-closed (remote) -> stream `STREAM_CLOSED`; closed -> connection
//!   `STREAM_CLOSED` (or ignored if we reset it lately);
//! - `RST_STREAM`, `WINDOW_UPDATE`: idle -> connection `PROTOCOL_ERROR`; closed ->
//!   ignored; PRIORITY: always accepted and ignored (a self-dependency is a
//!   stream `PROTOCOL_ERROR`);
//! - CONTINUATION: only right after a HEADERS or CONTINUATION without
//!   `END_HEADERS` on the same stream; anything else in between, or a
//!   CONTINUATION out of place, is a connection `PROTOCOL_ERROR`.
//!
//! Every header block is decoded to its end, whatever becomes of the request
//! (refused, malformed, on a stream being ignored), because HPACK's dynamic
//! table must see every block in order. A block is assembled in one reused
//! buffer, bounded by twice `max_header_list_size` and `max_continuation_frames`
//! (CVE-2024-27316): past either the connection ends with `ENHANCE_YOUR_CALM`,
//! since a block that is not decoded leaves HPACK out of step.
//!
//! Flow control: receiving, each stream's window is given back as the app
//! consumes the body (`consumed`), the connection's as DATA arrives (the stream
//! windows bound what is held, `settings.rs` has the sums). Sending, DATA goes
//! out at once as far as the stream window, the connection window and the
//! peer's frame size allow; the rest waits in the stream's buffer. Streams
//! blocked only on the connection window wait in `queue` and take turns, one
//! frame each (`send.rs`). Invariant: after any call, either the connection
//! window is spent or `queue` is empty.
//!
//! The code: this file the input side's frame loop and errors,
//! `conn/headers.rs` header blocks, `conn/recv.rs` the other frames in,
//! `conn/send.rs` everything the shell sends.
//!
//! What the core holds is bounded: the input buffer by one frame, a header
//! block by the limit above, events by what one `received` call parses, control
//! output by `max_queued_control_bytes`; body bytes buffered for sending are
//! the shell's to bound (`buffered`, `Event::Writable`).

mod headers;
mod recv;
mod send;

use std::collections::VecDeque;
use std::time::Instant;

use rustc_hash::FxHashMap;

use super::error::{ErrorCode, H2Error};
use super::flood::Flood;
use super::frame::{self, flag, kind, Frame, Head, HEADER_LEN, PREFACE};
use super::hpack::{Decoder, Encoder};
use super::request::RequestHead;
use super::settings::{Config, PeerSettings, DEFAULT_WINDOW};
use super::stream::{Fields, Stream};
use headers::PendingBlock;

/// What the shell learns from the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A valid request head (malformed ones are reset by the core and never
    /// surface). `end_stream`: no body follows.
    Request {
        stream: u32,
        head: RequestHead,
        end_stream: bool,
    },
    /// Request body bytes (padding removed). The shell calls `consumed` as the
    /// app reads them, which reopens the stream's window.
    Data {
        stream: u32,
        data: Vec<u8>,
        end_stream: bool,
    },
    /// Trailers ended the request body.
    Trailers { stream: u32, fields: Fields },
    /// The stream ended abnormally (the client reset it, or the core did for a
    /// client error); the shell drops what it keeps for it.
    Reset { stream: u32, code: ErrorCode },
    /// The stream's buffered body fell back to `Config::send_low_water` after
    /// going over it: the shell resumes its producer. (So the shell's pause
    /// mark on `buffered` must be at or above `send_low_water`.)
    Writable { stream: u32 },
    /// The client sent GOAWAY: it opens no more streams.
    GoAway { last_stream: u32, code: ErrorCode },
    /// A request head over `max_header_list_size`. The stream exists and its
    /// body is discarded; the shell answers it (431) or resets it, until then it
    /// counts as open.
    HeadersTooLarge { stream: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Preface,
    FirstSettings,
    Open,
}

/// How many of the streams this side reset are remembered, to ignore what the
/// client sent on them before it saw the reset.
const RECENT_RESETS: usize = 32;

#[allow(clippy::struct_excessive_bools)] // independent facts about the connection's end, each documented
pub struct Connection {
    config: Config,
    phase: Phase,
    /// A connection error was sent: input is ignored.
    dead: bool,
    /// An incomplete frame (or preface) kept from the last read.
    input: Vec<u8>,
    out: Vec<u8>,
    events: VecDeque<Event>,
    streams: FxHashMap<u32, Stream>,
    peer: PeerSettings,
    decoder: Decoder,
    encoder: Encoder,
    /// The header block being assembled from HEADERS and CONTINUATION frames.
    block: Vec<u8>,
    pending: Option<PendingBlock>,
    /// Response header blocks are encoded here, then framed into `out`.
    scratch: Vec<u8>,
    /// The highest stream id the client used (ids at or below it are not idle).
    last_stream: u32,
    /// The highest stream id accepted (GOAWAY's last stream id).
    last_accepted: u32,
    send_window: i64,
    recv_window: i64,
    recv_unannounced: u32,
    /// Streams with data blocked only on the connection window, in turn order.
    queue: VecDeque<u32>,
    goaway_sent: bool,
    goaway_received: bool,
    /// Our SETTINGS were acknowledged (until then the client may assume the
    /// default stream window).
    settings_acked: bool,
    flood: Flood,
    /// Control frame bytes queued since the writer last emptied `out`.
    control_bytes: usize,
    reset_by_us: [u32; RECENT_RESETS],
    reset_next: usize,
    /// Stream id ranges the client skipped (never opened), the last few.
    skipped: VecDeque<(u32, u32)>,
    /// Request heads handed back once read (`recycle`), for the next streams.
    spare_heads: Vec<RequestHead>,
}

impl Connection {
    /// A connection that expects the client preface first. Our SETTINGS (and a
    /// connection `WINDOW_UPDATE` above the default window) are queued at once.
    pub fn new(config: &Config) -> Self {
        let config = config.clamped();
        let mut out = Vec::with_capacity(16 * 1024);
        frame::write_settings(&mut out, &config.advertised());
        let extra = config.connection_window - DEFAULT_WINDOW;
        if extra > 0 {
            frame::write_window_update(&mut out, 0, extra);
        }
        Connection {
            phase: Phase::Preface,
            dead: false,
            input: Vec::new(),
            out,
            events: VecDeque::new(),
            streams: FxHashMap::default(),
            peer: PeerSettings::default(),
            decoder: Decoder::new(config.header_table_size as usize),
            encoder: Encoder::new(),
            block: Vec::new(),
            pending: None,
            scratch: Vec::new(),
            last_stream: 0,
            last_accepted: 0,
            send_window: i64::from(DEFAULT_WINDOW),
            recv_window: i64::from(config.connection_window),
            recv_unannounced: 0,
            queue: VecDeque::new(),
            goaway_sent: false,
            goaway_received: false,
            settings_acked: false,
            flood: Flood::new(&config),
            control_bytes: 0,
            reset_by_us: [0; RECENT_RESETS],
            reset_next: 0,
            skipped: VecDeque::new(),
            spare_heads: Vec::new(),
            config,
        }
    }

    /// A connection upgraded from HTTP/1.1 (`Upgrade: h2c`, RFC 7540 section
    /// 3.2): `http2_settings` is the client's HTTP2-Settings, base64url-decoded.
    /// The upgraded request is stream 1, half-closed (remote), answered by the
    /// shell with `send_headers(1, ..)`. The client still sends the preface.
    pub fn upgraded(config: &Config, http2_settings: &[u8]) -> Result<Self, ErrorCode> {
        let mut c = Connection::new(config);
        if http2_settings.len() % 6 != 0 {
            return Err(ErrorCode::ProtocolError);
        }
        c.apply_settings(http2_settings).map_err(|e| match e {
            H2Error::Connection(code) | H2Error::Stream(_, code) => code,
        })?;
        let window = c.local_window();
        c.streams
            .insert(1, Stream::new(c.peer.initial_window_size, window, true));
        c.last_stream = 1;
        c.last_accepted = 1;
        Ok(c)
    }

    /// Feeds bytes read from the socket: every complete frame is handled, the
    /// rest kept for the next call. Never panics.
    pub fn received(&mut self, data: &[u8], now: Instant) {
        if self.dead {
            return;
        }
        if self.out.is_empty() {
            self.control_bytes = 0;
        }
        self.flood.tick(now);
        if self.input.is_empty() {
            let used = self.process(data);
            if !self.dead {
                self.input.extend_from_slice(&data[used..]);
            }
        } else {
            let mut input = std::mem::take(&mut self.input);
            input.extend_from_slice(data);
            let used = self.process(&input);
            if !self.dead {
                input.drain(..used);
                self.input = input;
            }
        }
    }

    pub fn next_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// A request head the caller has read (`Event::Request`), given back so that
    /// a later stream's head reuses its buffers.
    pub fn recycle(&mut self, head: RequestHead) {
        // As many as one read's streams, at most the usual concurrency.
        if self.spare_heads.len() < 128 {
            self.spare_heads.push(head);
        }
    }

    /// The bytes to write; the caller writes them and clears the vector.
    pub fn output(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// GOAWAY went either way and no stream is left, or a connection error was
    /// sent: close the socket once the output is written.
    pub fn is_finished(&self) -> bool {
        self.dead || ((self.goaway_sent || self.goaway_received) && self.streams.is_empty())
    }

    /// Streams open or half-closed (what `SETTINGS_MAX_CONCURRENT_STREAMS` counts).
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Bytes the core holds from the client's input (an incomplete frame and
    /// a header block being assembled): what the flood tests bound.
    #[cfg(test)]
    pub(crate) fn held_input(&self) -> usize {
        self.input.len() + self.block.len()
    }

    /// The client's settings, as last announced.
    pub fn peer_settings(&self) -> &PeerSettings {
        &self.peer
    }

    /// Handles every complete frame in `buf`; returns the bytes used.
    fn process(&mut self, buf: &[u8]) -> usize {
        let mut at = 0;
        while !self.dead {
            let rest = &buf[at..];
            if self.phase == Phase::Preface {
                let n = rest.len().min(PREFACE.len());
                if rest[..n] != PREFACE[..n] {
                    self.fail(H2Error::protocol());
                } else if n == PREFACE.len() {
                    at += n;
                    self.phase = Phase::FirstSettings;
                    continue;
                }
                break;
            }
            let Some(head) = Head::parse(rest) else { break };
            // Refused from the header alone: an oversized frame is never buffered.
            if head.len > self.config.max_frame_size {
                self.fail(H2Error::frame_size());
                break;
            }
            let end = HEADER_LEN + head.len as usize;
            let Some(payload) = rest.get(HEADER_LEN..end) else {
                break;
            };
            at += end;
            if self.phase == Phase::FirstSettings {
                if head.kind != kind::SETTINGS || head.flags & flag::ACK != 0 {
                    self.fail(H2Error::protocol());
                    break;
                }
                self.phase = Phase::Open;
            }
            if let Err(e) = self.frame(head, payload) {
                self.fail(e);
            }
        }
        at
    }

    fn frame(&mut self, head: Head, payload: &[u8]) -> Result<(), H2Error> {
        if let Some(p) = &self.pending {
            if head.kind != kind::CONTINUATION || head.stream != p.stream {
                return Err(H2Error::protocol());
            }
        }
        match frame::parse(head, payload)? {
            Frame::Data {
                stream,
                data,
                end_stream,
                flow_len,
            } => self.on_data(stream, data, end_stream, flow_len),
            Frame::Headers {
                stream,
                block,
                end_stream,
                end_headers,
                priority,
            } => {
                let self_dependent = priority.is_some_and(|p| p.dependency == stream);
                self.on_headers(stream, block, end_stream, end_headers, self_dependent)
            }
            Frame::Continuation {
                stream,
                block,
                end_headers,
            } => self.on_continuation(stream, block, end_headers),
            Frame::Priority { stream, priority } => {
                self.control()?;
                if priority.dependency == stream {
                    return Err(H2Error::Stream(stream, ErrorCode::ProtocolError));
                }
                Ok(())
            }
            Frame::RstStream { stream, code } => self.on_rst_stream(stream, code),
            Frame::Settings { ack, payload } => self.on_settings(ack, payload),
            Frame::Ping { ack, data } => {
                if !ack {
                    self.control()?;
                    let before = self.out.len();
                    frame::write_ping_ack(&mut self.out, data);
                    self.control_written(before)?;
                }
                Ok(())
            }
            Frame::GoAway {
                last_stream, code, ..
            } => {
                self.goaway_received = true;
                self.events.push_back(Event::GoAway { last_stream, code });
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => self.on_window_update(stream, increment),
            Frame::Unknown => self.control(),
        }
    }

    /// The receive window a new stream starts with: until the client
    /// acknowledged our SETTINGS it may still count on the default window.
    fn local_window(&self) -> u32 {
        if self.settings_acked {
            self.config.initial_window_size
        } else {
            self.config.initial_window_size.max(DEFAULT_WINDOW)
        }
    }

    /// Counts a frame against the control-frame limit.
    fn control(&mut self) -> Result<(), H2Error> {
        if self.flood.control() {
            return Err(H2Error::Connection(ErrorCode::EnhanceYourCalm));
        }
        Ok(())
    }

    /// Counts control output queued since `before` against the queued limit.
    fn control_written(&mut self, before: usize) -> Result<(), H2Error> {
        self.control_bytes += self.out.len() - before;
        if self.control_bytes > self.config.max_queued_control_bytes {
            return Err(H2Error::Connection(ErrorCode::EnhanceYourCalm));
        }
        Ok(())
    }

    fn was_reset_by_us(&self, id: u32) -> bool {
        self.reset_by_us.contains(&id)
    }

    fn fail(&mut self, e: H2Error) {
        match e {
            H2Error::Connection(code) => self.fail_connection(code),
            H2Error::Stream(id, code) => {
                let before = self.out.len();
                let known = self.reset_stream(id, code);
                if known {
                    self.events.push_back(Event::Reset { stream: id, code });
                }
                let flooding = (known && self.flood.reset()) || self.flood.control();
                if flooding || self.control_written(before).is_err() {
                    self.fail_connection(ErrorCode::EnhanceYourCalm);
                }
            }
        }
    }

    /// Sends `RST_STREAM` and forgets the stream; true if it was stored.
    fn reset_stream(&mut self, id: u32, code: ErrorCode) -> bool {
        frame::write_rst_stream(&mut self.out, id, code);
        self.reset_by_us[self.reset_next % RECENT_RESETS] = id;
        self.reset_next = self.reset_next.wrapping_add(1);
        self.streams.remove(&id).is_some()
    }

    fn fail_connection(&mut self, code: ErrorCode) {
        if self.dead {
            return;
        }
        frame::write_goaway(&mut self.out, self.last_accepted, code);
        self.dead = true;
        self.goaway_sent = true;
        self.pending = None;
        self.input = Vec::new();
        self.queue.clear();
        let mut ids: Vec<u32> = self.streams.drain().map(|(id, _)| id).collect();
        ids.sort_unstable();
        for stream in ids {
            self.events.push_back(Event::Reset { stream, code });
        }
    }
}
