//! The connection's state machine, without I/O and without Python (sans-IO, in the
//! manner of h11's `Connection` and hyper's `proto::h1::Conn`).
//!
//! Theory. A connection reads requests and writes responses in the same order:
//! - Input: bytes come in (`received`, then `next_event` in a loop); events come out:
//!   a parsed head (`Event::Head`), a collected body (`Event::Collected`), pieces of a
//!   body handed out as it arrives (`Event::Upload`), a request that cannot be parsed
//!   (`Event::Reject`: the core has already stopped reading), or `Event::Wait` (all
//!   input used, or kept in `buf` because a head is incomplete or a pause holds it).
//!   After a head the shell routes it and says how its body is read:
//!   `begin_body` (collected), `stream_body` (handed out) or `upgrade` (a WebSocket
//!   handshake: what follows is not HTTP and waits in `buf`).
//! - Reading is one enum (`Reading`): a head, a body being collected, a body being
//!   streamed, an upgrade being answered, or stopped. Once stopped (an error, a
//!   response that closes, end of input) nothing more is parsed, so nothing
//!   pipelined after a rejected request is ever answered.
//! - Output (`output.rs`): responses are queued by sequence number in request order;
//!   a running handler leaves a hole that responses behind it wait for. What is ready
//!   collects in `out`, written with one transport call per batch.
//! - Pauses (`pauses.rs`): every reason to stop parsing is one member of one set;
//!   `blocked` says which reason applies before a head is parsed, and
//!   `should_pause_reading` is the one predicate for the transport.
//! - Time (`timers.rs`): `tick(now)` applies the timeouts; handlers' deadlines are
//!   found by `overdue`.
//!
//! The shell (`protocol.rs`) turns asyncio callbacks into calls here and the core's
//! answers into transport calls; what it keeps per request (its Python objects) the
//! core holds as opaque values of the `Shell` types.

use std::mem;
use std::ops::Range;
use std::time::Instant;

use crate::http1::body::ChunkedDecoder;
use crate::http1::encode;
use crate::http1::error::ParseError;
use crate::http1::limits::Limits;
use crate::http1::parse::{self, BodyKind, Head};

mod body;
pub mod output;
pub mod pauses;
mod timers;

#[cfg(any(test, fuzzing))]
pub mod drive;
#[cfg(test)]
mod tests;

pub use body::{BodyFraming, Collecting, Streaming};
pub use output::{Actions, Slot};
pub use pauses::{Pause, Pauses};
pub use timers::Tick;

/// What the shell keeps in the core, opaque to it.
pub trait Shell {
    /// A request whose body is being collected.
    type Held;
    /// The reader of a body handed to its handler as it arrives.
    type Upload;
    /// A handler still running (a hole in the output queue).
    type Running;
    /// A streamed response waiting in the queue for its turn.
    type Plan;
    /// The streamed response being written.
    type Active;
}

pub enum Reading<S: Shell> {
    Head,
    Body(Box<Collecting<S::Held>>),
    Stream(Box<Streaming<S::Upload>>),
    /// A WebSocket handshake is being answered: what the client sends meanwhile
    /// waits in `buf` for the WebSocket protocol (or is dropped if it is refused).
    Upgrading,
    Stopped,
}

/// What the core needs to know of the server at each step.
pub struct Env<'a, R: Fn() -> bool> {
    pub limits: &'a Limits,
    pub max_pipelined: usize,
    /// Whether a handler slot of the worker is free (`max_concurrency`); asked only
    /// when it matters.
    pub room: R,
}

/// What the input gave.
pub enum Event<H, U> {
    /// Nothing more to do with this input.
    Wait,
    /// A head parsed at `data[start..]`; the input position is already after it.
    /// The shell answers with `begin_body`, `stream_body` or `upgrade`.
    Head { head: Head, start: usize },
    /// The body of a held request is complete (`into_parts` gives both).
    Collected(Box<Collecting<H>>),
    /// Bytes of a streamed body (its reader is `upload()`).
    Upload { bytes: Vec<u8> },
    /// The last bytes of a streamed body, which is complete (`Ok`) or broken (then
    /// the connection closes after the answer); its reader is handed back.
    UploadEnd {
        bytes: Vec<u8>,
        end: Result<(), ParseError>,
        upload: U,
    },
    /// The connection first waits for a handler slot: the shell queues it.
    Queued,
    /// The request cannot be parsed: answer the error, then close. Reading has
    /// stopped and the buffer is dropped.
    Reject(ParseError),
}

/// A body as the request gets it.
#[derive(Debug, PartialEq, Eq)]
pub enum Body {
    Empty,
    /// Whole in the input given to `begin_body`, at this range of it.
    Slice(Range<usize>),
    Owned(Vec<u8>),
}

/// What `begin_body` did with a request.
pub enum Begin {
    /// Its body is complete: dispatch it now.
    Ready(Body),
    /// Its body is being collected: give the request to `hold` (`Event::Collected`
    /// hands it back with the body).
    Collecting,
    /// Its body is malformed: answer the error (reading has stopped).
    Reject(ParseError),
}

/// What to do with newly received bytes (`received`).
pub enum Feed {
    /// Nothing: reading has stopped, or the bytes wait in the buffer.
    Hold,
    /// The buffer is empty: parse the new bytes where they are.
    Direct,
    /// The buffered bytes with the new ones appended: parse these.
    Joined(Vec<u8>),
}

#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts: closing, closed, reading paused, input cut short"
)]
pub struct Core<S: Shell> {
    pub reading: Reading<S>,
    /// Input not parsed yet (an incomplete head, or input held by a pause).
    pub buf: Vec<u8>,
    pub pauses: Pauses,
    /// The responses in request order (`output.rs`).
    pub queue: std::collections::VecDeque<Slot<S::Running, S::Plan>>,
    /// Bytes ready to write in this batch.
    pub out: Vec<u8>,
    next_seq: u64,
    /// Handlers of this connection that have not answered yet.
    pub in_flight: usize,
    /// A response that closes the connection has been emitted.
    pub closing: bool,
    /// The client may still be sending what will not be read: reading stopped in
    /// the middle of a request (its body, or bytes pipelined after it), input came
    /// after reading stopped, or an answer ended a connection the client asked to
    /// keep (see `input_unfinished`).
    cut_short: bool,
    /// The transport is closed or handed over: nothing more is written.
    pub closed: bool,
    /// Whether the transport's reading is paused now.
    pub reading_paused: bool,
    /// The streamed response being written; responses behind it wait.
    pub stream: Option<S::Active>,
    /// When bytes were last received.
    pub last_activity: Instant,
    /// When the first byte of the incomplete head arrived.
    head_started: Option<Instant>,
    /// Since when the transport has been above its high watermark.
    write_paused_since: Option<Instant>,
    /// When this connection began waiting for a handler slot.
    pub waiting_since: Option<Instant>,
    /// What the parser reuses between heads (the header spans, the last Host).
    scratch: parse::Scratch,
}

impl<S: Shell> Core<S> {
    pub fn new(now: Instant) -> Self {
        Core {
            reading: Reading::Head,
            buf: Vec::new(),
            pauses: Pauses::default(),
            queue: std::collections::VecDeque::new(),
            out: Vec::new(),
            next_seq: 0,
            in_flight: 0,
            closing: false,
            cut_short: false,
            closed: false,
            reading_paused: false,
            stream: None,
            last_activity: now,
            head_started: None,
            write_paused_since: None,
            waiting_since: None,
            scratch: parse::Scratch::default(),
        }
    }

    /// No request is under way and nothing waits to be written.
    pub fn is_idle(&self) -> bool {
        !self.pauses.contains(Pause::Capacity)
            && matches!(self.reading, Reading::Head)
            && self.buf.is_empty()
            && self.queue.is_empty()
            && self.in_flight == 0
            && self.out.is_empty()
    }

    pub fn is_stopped(&self) -> bool {
        matches!(self.reading, Reading::Stopped)
    }

    /// Bytes arrived at `now`: says where to parse them from.
    pub fn received(&mut self, data: &[u8], now: Instant, limits: &Limits) -> Feed {
        self.last_activity = now;
        if self.is_stopped() {
            // Not read: the client is still sending, so the close will linger.
            self.cut_short = true;
            return Feed::Hold;
        }
        if self.pauses.contains(Pause::Capacity) {
            self.buf.extend_from_slice(data);
            return Feed::Hold;
        }
        if self.buf.is_empty() {
            return Feed::Direct;
        }
        // An incomplete head waits in `buf`: a head can only complete on a new LF,
        // so skip re-parsing until one arrives (unless the limits need checking).
        self.buf.extend_from_slice(data);
        let head_cap = limits.max_start_line + limits.max_header_bytes;
        if self.pauses.holding()
            || (matches!(self.reading, Reading::Head)
                && !data.contains(&b'\n')
                && self.buf.len() <= head_cap)
        {
            return Feed::Hold;
        }
        Feed::Joined(mem::take(&mut self.buf))
    }

    /// The reason that keeps the next head from being parsed now, if any.
    fn blocked(&self, env: &Env<'_, impl Fn() -> bool>) -> Option<Pause> {
        if self.in_flight >= env.max_pipelined {
            Some(Pause::Pipeline)
        } else if !(env.room)() {
            Some(Pause::Concurrency)
        } else if self.pauses.contains(Pause::Transport)
            || self.out.len() >= output::OUTPUT_HIGH
            || self.stream.is_some()
        {
            // Responses are piling up faster than the client reads them: answer
            // nothing more until they are written, so a client that pipelines and
            // never reads costs bounded memory.
            Some(Pause::Output)
        } else {
            None
        }
    }

    /// The next event from `data[*pos..]`; `*pos` moves past what was used (what is
    /// kept in `buf` counts as used).
    pub fn next_event(
        &mut self,
        data: &[u8],
        pos: &mut usize,
        env: &Env<'_, impl Fn() -> bool>,
    ) -> Event<S::Held, S::Upload> {
        let rest = &data[*pos..];
        match &mut self.reading {
            Reading::Stopped => {
                *pos = data.len();
                Event::Wait
            }
            Reading::Upgrading => {
                self.keep(data, pos);
                Event::Wait
            }
            Reading::Stream(streaming) => {
                if rest.is_empty() {
                    return Event::Wait;
                }
                if self.pauses.contains(Pause::Upload) {
                    self.keep(data, pos);
                    return Event::Wait;
                }
                let mut bytes = Vec::new();
                let end = match streaming.framing.take(rest, &mut bytes) {
                    Ok((used, done)) => {
                        *pos += used;
                        if !done {
                            return Event::Upload { bytes };
                        }
                        Ok(())
                    }
                    Err(e) => Err(e),
                };
                let reading = if end.is_ok() && !self.closing {
                    Reading::Head
                } else {
                    // The request was the connection's last (`last_request`), or
                    // where the next one would start is unknown: close after the
                    // handler's answer (draining what the client sent after it).
                    self.cut_short |= *pos < data.len();
                    self.closing = true;
                    self.buf.clear();
                    Reading::Stopped
                };
                let Reading::Stream(streaming) = mem::replace(&mut self.reading, reading) else {
                    unreachable!("matched above")
                };
                Event::UploadEnd {
                    bytes,
                    end,
                    upload: streaming.upload,
                }
            }
            Reading::Body(collecting) => {
                match collecting.framing.take(rest, &mut collecting.data) {
                    Ok((used, done)) => {
                        *pos += used;
                        if !done {
                            return Event::Wait;
                        }
                    }
                    Err(e) => return self.reject(e),
                }
                let Reading::Body(collecting) = mem::replace(&mut self.reading, Reading::Head)
                else {
                    unreachable!("matched above")
                };
                Event::Collected(collecting)
            }
            Reading::Head => {
                if rest.is_empty() {
                    return Event::Wait;
                }
                if let Some(reason) = self.blocked(env) {
                    self.keep(data, pos);
                    if reason == Pause::Concurrency && !self.pauses.contains(reason) {
                        self.pauses.set(reason);
                        self.waiting_since.get_or_insert(self.last_activity);
                        return Event::Queued;
                    }
                    self.pauses.set(reason);
                    return Event::Wait;
                }
                match parse::parse_head_reusing(rest, env.limits, &mut self.scratch) {
                    Ok(Some(head)) => {
                        self.head_started = None;
                        let start = *pos;
                        *pos += head.len;
                        Event::Head { head, start }
                    }
                    Ok(None) => {
                        self.keep(data, pos);
                        self.head_started.get_or_insert(self.last_activity);
                        Event::Wait
                    }
                    Err(e) => self.reject(e),
                }
            }
        }
    }

    /// Keeps the rest of the input for later.
    fn keep(&mut self, data: &[u8], pos: &mut usize) {
        self.buf.extend_from_slice(&data[*pos..]);
        *pos = data.len();
    }

    fn reject(&mut self, err: ParseError) -> Event<S::Held, S::Upload> {
        self.stop_after_response();
        Event::Reject(err)
    }

    /// Hands back a parsed head's header vector, so the next head costs no allocation.
    pub fn recycle(&mut self, headers: Vec<parse::HeaderSpan>) {
        self.scratch.headers = headers;
    }

    /// Reads the body of the request just parsed (`kind`) from `data[*pos..]`:
    /// whole if it is there, else collected as it arrives.
    pub fn begin_body(
        &mut self,
        kind: &BodyKind,
        expect_continue: bool,
        data: &[u8],
        pos: &mut usize,
        limits: &Limits,
    ) -> Begin {
        let rest = &data[*pos..];
        let framing = match kind {
            BodyKind::Empty => return Begin::Ready(Body::Empty),
            BodyKind::Length(n) => {
                if rest.len() as u64 >= *n {
                    // n <= rest.len(), which is a usize.
                    let end = *pos + usize::try_from(*n).unwrap_or(usize::MAX);
                    let body = Body::Slice(*pos..end);
                    *pos = end;
                    return Begin::Ready(body);
                }
                BodyFraming::Length { remaining: *n }
            }
            BodyKind::Chunked => BodyFraming::Chunked(Box::new(ChunkedDecoder::new(limits))),
        };
        let mut collecting = Collecting {
            held: None,
            framing,
            data: Vec::new(),
        };
        match collecting.framing.take(rest, &mut collecting.data) {
            Ok((used, done)) => {
                *pos += used;
                if done {
                    return Begin::Ready(Body::Owned(collecting.data));
                }
            }
            Err(e) => {
                self.stop_after_response();
                return Begin::Reject(e);
            }
        }
        if expect_continue {
            self.emit(encode::CONTINUE.to_vec());
        }
        self.reading = Reading::Body(Box::new(collecting));
        Begin::Collecting
    }

    /// Keeps the request whose body `begin_body` began collecting.
    pub fn hold(&mut self, held: S::Held) {
        if let Reading::Body(collecting) = &mut self.reading {
            collecting.held = Some(held);
        }
    }

    /// The request just parsed hands its body (`kind`, not empty) to its handler as
    /// it arrives, through `upload` (`Event::Upload`).
    pub fn stream_body(
        &mut self,
        upload: S::Upload,
        kind: &BodyKind,
        expect_continue: bool,
        limits: &Limits,
    ) {
        let Some(framing) = BodyFraming::new(kind, limits) else {
            return;
        };
        self.reading = Reading::Stream(Box::new(Streaming { upload, framing }));
        if expect_continue {
            self.emit(encode::CONTINUE.to_vec());
        }
    }

    /// The request just parsed is a WebSocket handshake being answered: what follows
    /// it waits in `buf`.
    pub fn upgrade(&mut self, data: &[u8], pos: &mut usize) {
        self.reading = Reading::Upgrading;
        self.keep(data, pos);
    }

    /// What `upgrade` kept: the bytes after the head, for the protocol that takes over.
    pub fn take_kept(&mut self) -> Vec<u8> {
        mem::take(&mut self.buf)
    }

    /// The upload being read, if any.
    pub fn upload(&self) -> Option<&S::Upload> {
        match &self.reading {
            Reading::Stream(streaming) => Some(&streaming.upload),
            _ => None,
        }
    }

    /// Buffered input to parse now that pauses may have cleared, if nothing still
    /// holds it.
    pub fn take_buffered(&mut self, env: &Env<'_, impl Fn() -> bool>) -> Option<Vec<u8>> {
        if self.buf.is_empty()
            || self.in_flight >= env.max_pipelined
            || (self.pauses.contains(Pause::Concurrency) && !(env.room)())
            || self.output_held()
            || self.pauses.contains(Pause::Upload)
            || self.pauses.contains(Pause::Capacity)
            || matches!(self.reading, Reading::Stopped | Reading::Upgrading)
        {
            return None;
        }
        self.pauses.clear(Pause::Pipeline);
        self.pauses.clear(Pause::Output);
        self.pauses.clear(Pause::Concurrency);
        Some(mem::take(&mut self.buf))
    }

    /// Output that must drain before more requests are parsed: the transport is
    /// paused or a streamed response is being written.
    fn output_held(&self) -> bool {
        self.pauses.contains(Pause::Transport) || self.stream.is_some()
    }

    /// Requests held back while a large batch was written may go on now.
    pub fn output_freed(&self) -> bool {
        self.pauses.contains(Pause::Output) && !self.output_held() && !self.closed
    }

    /// A streamed body's reader took it below its low mark: reading may go on.
    pub fn resume_upload(&mut self) -> Option<Vec<u8>> {
        self.pauses.clear(Pause::Upload);
        (!self.buf.is_empty()).then(|| mem::take(&mut self.buf))
    }

    /// No more input will be read: answer what is in flight, then close.
    pub fn end_of_input(&mut self) -> bool {
        let cut_short = self.cut_short;
        self.stop_after_response();
        // The client has sent all it will: nothing of it is left to drain.
        self.cut_short = cut_short;
        !self.queue.is_empty()
    }

    /// The request just parsed (or answered) is the connection's last (HTTP/1.0,
    /// `Connection: close`, a drain): nothing after it is parsed, and the
    /// connection closes after the responses queued. A body being handed to its
    /// handler as it arrives is still read to its end: a hosted app reads every
    /// body that way, and the last request of a connection is what a stock proxy
    /// sends (nginx speaks HTTP/1.0 upstream).
    pub fn last_request(&mut self) {
        if matches!(self.reading, Reading::Stream(_)) {
            self.closing = true;
        } else {
            self.stop_after_response();
        }
    }

    /// Whether the client may still be sending what this connection will not read:
    /// a request's body (still arriving, or cut short) or what it pipelined after
    /// it. Closing such a connection at once would reset it, and the client's
    /// kernel would drop the answer unread: the shell lingers instead.
    pub fn input_unfinished(&self) -> bool {
        self.cut_short || matches!(self.reading, Reading::Body(_) | Reading::Stream(_))
    }

    /// The client may still be sending when the connection closes (it asked to keep
    /// the connection, and the answer ends it): the close lingers.
    pub fn may_be_sending(&mut self) {
        self.cut_short = true;
    }

    /// Closes the connection after the responses already queued; reads no more.
    pub fn stop_after_response(&mut self) {
        self.cut_short |=
            !self.buf.is_empty() || matches!(self.reading, Reading::Body(_) | Reading::Stream(_));
        self.closing = true;
        self.reading = Reading::Stopped;
        self.buf.clear();
    }

    /// The transport was aborted: nothing more is read or written.
    pub fn abort(&mut self) {
        self.reading = Reading::Stopped;
        self.closed = true;
    }

    /// The connection is over (lost, or handed to another protocol).
    pub fn detach(&mut self) {
        self.closed = true;
        self.reading = Reading::Stopped;
        self.buf = Vec::new();
        self.out = Vec::new();
        self.queue.clear();
    }

    pub fn writing_paused(&self) -> bool {
        self.pauses.contains(Pause::Transport)
    }

    /// The transport went above (`true`) or below its high watermark at `now`.
    pub fn set_writing_paused(&mut self, paused: bool, now: Instant) {
        if paused {
            self.pauses.set(Pause::Transport);
            self.write_paused_since = Some(now);
        } else {
            self.pauses.clear(Pause::Transport);
            self.write_paused_since = None;
        }
    }
}
