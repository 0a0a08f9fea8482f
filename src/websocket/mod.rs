//! WebSocket connections (RFC 6455): the protocol a connection switches to after `101`.
//!
//! The HTTP connection hands its transport over (`StreamWriter.upgrade`, see
//! `protocol/stream.rs`); from then on this object is the transport's protocol.
//! Frames are parsed, unmasked and checked here; a data frame's payload is taken
//! as its bytes arrive (never waiting for the whole frame), inflated when the
//! message is compressed (permessage-deflate, `deflate.rs`) and checked as UTF-8
//! when it is text, so a bad message fails at its first bad byte; fragments are
//! joined into messages; pings are answered and the close handshake is done
//! without Python. Python (`veter.websockets`) sees whole messages, `str` or
//! `bytes`, through `receive`, and sends through `send` (those methods and the
//! transport's callbacks are in `python.rs`).
//!
//! State, all of it here:
//! - `attached`: the transport, or none yet (frames sent before are held in
//!   `early` and written when it arrives) or none any more (`lost`);
//! - `buf`: bytes of an incomplete frame header or control frame; `frame`: the data
//!   frame whose payload is arriving; `message`: the message being received (its
//!   fragments joined, inflated if `compressed`);
//! - `deflate`: the compressor and inflater, once permessage-deflate is agreed in
//!   the handshake (`negotiate`);
//! - `inbox`: messages not yet received by Python; above `max_queue` bytes the
//!   transport stops reading until Python catches up (backpressure);
//! - closing: `sent_close` / `received_close`; once both are true (or the
//!   connection failed) the transport is closed; `code` / `reason` say why.
//!
//! Borrowing: `transport.write` may call `pause_writing` synchronously, so every
//! call into the transport happens after the borrow is released (`Effects`).

pub mod deflate;
pub mod frame;
mod python;

use std::collections::VecDeque;

use pyo3::exceptions::PyStopAsyncIteration;
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use frame::{Failure, Opcode};

/// A data frame whose payload is arriving.
#[derive(Clone, Copy)]
struct InFrame {
    fin: bool,
    mask: [u8; 4],
    /// Payload bytes still to come.
    remaining: usize,
    /// Payload bytes taken so far (the mask's position).
    offset: usize,
}

/// permessage-deflate, once agreed.
struct Deflate {
    deflater: deflate::Deflater,
    inflater: deflate::Inflater,
    /// A compressed frame's payload, unmasked, before it is inflated.
    unmasked: Vec<u8>,
    /// A message being compressed.
    packed: Vec<u8>,
}

/// The next message for `receive` or `anext`.
enum Taken {
    Message(Py<PyAny>),
    /// None yet: this future was parked for it.
    Parked(Py<PyAny>),
    /// None will come.
    Ended,
}

/// What to do with the transport once the connection is no longer borrowed.
#[derive(Default)]
struct Effects {
    write: Vec<u8>,
    close: bool,
    pause_reading: bool,
    resume_reading: bool,
}

#[pyclass(module = "veter._core", name = "WebSocketProtocol")]
#[allow(clippy::struct_excessive_bools)] // each flag is one documented part of the state above
pub struct WebSocketProtocol {
    transport: Option<Py<PyAny>>,
    write: Option<Py<PyAny>>,
    early: Vec<u8>,
    lost: bool,
    buf: Vec<u8>,
    frame: Option<InFrame>,
    message: Vec<u8>,
    message_kind: Option<Opcode>,
    /// The message being received is compressed (its first frame had RSV1).
    compressed: bool,
    utf8: frame::Utf8Check,
    /// The server's permessage-deflate settings (None: not offered).
    deflate_settings: Option<deflate::Settings>,
    deflate: Option<Deflate>,
    inbox: VecDeque<(Py<PyAny>, usize)>,
    inbox_bytes: usize,
    receiver: Option<Py<PyAny>>,
    /// The parked receiver is `async for`'s step: when no message will come it
    /// gets `StopAsyncIteration` (iteration ends) instead of the disconnect.
    receiver_stops: bool,
    drain_waiters: Vec<Py<PyAny>>,
    close_waiters: Vec<Py<PyAny>>,
    sent_close: bool,
    received_close: bool,
    /// The connection failed (protocol error, message too big, ...): nothing more is read.
    failed: bool,
    /// A failure found behind messages the handler has not taken yet: it is carried
    /// out (close frame, then the transport closes) when the handler next asks for a
    /// message and there is none, so the answers to the good messages go out first.
    pending_failure: Option<Failure>,
    /// A message was handed to a waiting `receive` and the handler has not asked
    /// again since (it may still answer it).
    handed: bool,
    code: Option<u16>,
    reason: String,
    writing_paused: bool,
    reading_paused: bool,
    pongs: u64,
    max_message: usize,
    max_queue: usize,
    /// `veter.websockets.WebSocketDisconnect`, raised to Python with (code, reason).
    disconnect: Py<PyAny>,
    messages_in: u64,
    messages_out: u64,
    /// Of those, the ones that were compressed on the wire.
    compressed_in: u64,
    compressed_out: u64,
}

impl WebSocketProtocol {
    /// Reading is over: a close was received, the connection failed (or will once
    /// the handler has taken what came before), or it is lost.
    fn ended(&self) -> bool {
        self.received_close || self.failed || self.lost || self.pending_failure.is_some()
    }

    fn disconnect_error(&self, py: Python<'_>) -> PyErr {
        let code = self.code.unwrap_or(1006);
        match self.disconnect.bind(py).call1((code, self.reason.as_str())) {
            Ok(exc) => PyErr::from_value(exc),
            Err(err) => err,
        }
    }

    /// Sends a close frame (once) and, when the peer's close has been seen or the
    /// connection failed, closes the transport after it.
    fn send_close(&mut self, fx: &mut Effects, code: u16, reason: &str) {
        if !self.sent_close {
            self.sent_close = true;
            let payload = frame::close_payload(code, reason);
            self.queue_frame(fx, Opcode::Close, &payload);
        }
        if self.received_close || self.failed {
            fx.close = true;
        }
    }

    fn queue_frame(&mut self, fx: &mut Effects, opcode: Opcode, payload: &[u8]) {
        self.queue(fx, opcode, false, payload);
    }

    fn queue(&mut self, fx: &mut Effects, opcode: Opcode, compressed: bool, payload: &[u8]) {
        if self.transport.is_some() {
            frame::write_frame(&mut fx.write, opcode, true, compressed, payload);
        } else if !self.lost {
            frame::write_frame(&mut self.early, opcode, true, compressed, payload);
        }
    }

    /// Queues a data message, compressed when deflate is agreed and it is long enough.
    fn queue_message(&mut self, fx: &mut Effects, opcode: Opcode, payload: &[u8]) {
        match &mut self.deflate {
            Some(d) if payload.len() >= d.deflater.min_size => {
                let mut packed = std::mem::take(&mut d.packed);
                packed.clear();
                d.deflater.compress(payload, &mut packed);
                self.compressed_out += 1;
                self.queue(fx, opcode, true, &packed);
                if let Some(d) = &mut self.deflate {
                    if packed.capacity() <= 64 * 1024 {
                        d.packed = packed;
                    }
                }
            }
            _ => self.queue(fx, opcode, false, payload),
        }
    }

    /// Fails the connection: a close frame with `failure`'s code, then the transport closes.
    fn fail(&mut self, py: Python<'_>, fx: &mut Effects, failure: &Failure) -> PyResult<()> {
        if !self.failed && (self.handed || !self.inbox.is_empty()) {
            // Good messages came before the bad bytes: let the handler have them.
            self.pending_failure.get_or_insert_with(|| failure.clone());
            self.buf.clear();
            self.message.clear();
            self.frame = None;
            return Ok(());
        }
        self.fail_now(py, fx, failure)
    }

    /// Fails the connection without waiting for the handler.
    fn fail_now(&mut self, py: Python<'_>, fx: &mut Effects, failure: &Failure) -> PyResult<()> {
        self.pending_failure = None;
        self.failed = true;
        if self.code.is_none() {
            self.code = Some(failure.code);
            failure.reason.clone_into(&mut self.reason);
        }
        self.buf.clear();
        self.message.clear();
        self.send_close(fx, failure.code, failure.reason);
        self.wake_receiver(py)
    }

    /// Takes what it can of `data`: whole control frames, data frame headers and
    /// every payload byte of data frames; returns how many bytes it used (the rest
    /// is an incomplete header or control frame).
    fn parse(&mut self, py: Python<'_>, fx: &mut Effects, data: &[u8]) -> PyResult<usize> {
        let mut pos = 0;
        while !self.ended() {
            if let Some(mut f) = self.frame {
                let n = f.remaining.min(data.len() - pos);
                if n == 0 && f.remaining > 0 {
                    break;
                }
                let piece = &data[pos..pos + n];
                pos += n;
                if let Err(failure) = self.take_payload(piece, f.mask, f.offset) {
                    self.fail(py, fx, &failure)?;
                    break;
                }
                f.offset += n;
                f.remaining -= n;
                if f.remaining > 0 {
                    self.frame = Some(f);
                    break;
                }
                self.frame = None;
                if f.fin {
                    match self.end_message(py) {
                        Ok((message, size)) => self.deliver(py, fx, message, size)?,
                        Err(failure) => {
                            self.fail(py, fx, &failure)?;
                            break;
                        }
                    }
                }
                continue;
            }
            let room = self.max_message.saturating_sub(self.message.len());
            // A compressed frame may be a little longer than what it inflates to.
            let bound = if self.deflate.is_some() {
                room.saturating_add(room / 64 + 64)
            } else {
                room
            };
            let header = match frame::read_header(&data[pos..], bound, self.deflate.is_some()) {
                Ok(Some(h)) => h,
                Ok(None) => break,
                Err(failure) => {
                    self.fail(py, fx, &failure)?;
                    break;
                }
            };
            if header.opcode.is_control() {
                let end = pos + header.header_len + header.payload_len;
                if data.len() < end {
                    break;
                }
                let payload = &data[pos + header.header_len..end];
                pos = end;
                let mut plain = Vec::with_capacity(payload.len());
                frame::unmask_into(payload, header.mask, 0, &mut plain);
                self.on_control(py, fx, header.opcode, &plain)?;
                continue;
            }
            if let Err(failure) = self.begin_frame(&header, room) {
                self.fail(py, fx, &failure)?;
                break;
            }
            pos += header.header_len;
            self.frame = Some(InFrame {
                fin: header.fin,
                mask: header.mask,
                remaining: header.payload_len,
                offset: 0,
            });
        }
        Ok(pos)
    }

    /// A data frame's header: checks it continues (or starts) a message as it should.
    fn begin_frame(&mut self, header: &frame::Header, room: usize) -> Result<(), frame::Failure> {
        match (header.opcode, self.message_kind) {
            (Opcode::Continuation, Some(_)) => {}
            (Opcode::Continuation, None) => {
                return Err(frame::Failure {
                    code: frame::PROTOCOL_ERROR,
                    reason: "continuation frame without a message to continue",
                });
            }
            (_, Some(_)) => {
                return Err(frame::Failure {
                    code: frame::PROTOCOL_ERROR,
                    reason: "new message before the last one ended",
                });
            }
            (kind, None) => {
                self.message_kind = Some(kind);
                self.compressed = header.rsv1;
            }
        }
        if !self.compressed && header.payload_len > room {
            return Err(frame::Failure {
                code: frame::TOO_BIG,
                reason: "message too big",
            });
        }
        Ok(())
    }

    /// The next bytes of a data frame's payload, `offset` bytes into it.
    fn take_payload(
        &mut self,
        piece: &[u8],
        mask: [u8; 4],
        offset: usize,
    ) -> Result<(), frame::Failure> {
        let start = self.message.len();
        match (&mut self.deflate, self.compressed) {
            (Some(d), true) => {
                d.unmasked.clear();
                frame::unmask_into(piece, mask, offset, &mut d.unmasked);
                d.inflater
                    .inflate(&d.unmasked, &mut self.message, self.max_message)?;
            }
            _ => frame::unmask_into(piece, mask, offset, &mut self.message),
        }
        if self.message_kind == Some(Opcode::Text) {
            self.utf8.feed(&self.message[start..], false)?;
        }
        Ok(())
    }

    /// The last frame of a message has been taken: the message, and its size.
    fn end_message(&mut self, py: Python<'_>) -> Result<(Py<PyAny>, usize), frame::Failure> {
        let kind = self.message_kind.take().unwrap_or(Opcode::Binary);
        let start = self.message.len();
        if let (Some(d), true) = (&mut self.deflate, self.compressed) {
            d.inflater.finish(&mut self.message, self.max_message)?;
            self.compressed_in += 1;
        }
        self.compressed = false;
        if kind == Opcode::Text {
            self.utf8.feed(&self.message[start..], true)?;
        }
        self.utf8.reset();
        let size = self.message.len();
        let message = if kind == Opcode::Text {
            // Checked above, piece by piece, so Python's decoding (which must read
            // the bytes to build the str) is the only other pass over them.
            PyString::from_bytes(py, &self.message)
                .map_err(|_| frame::Failure {
                    code: frame::INVALID_PAYLOAD,
                    reason: "invalid UTF-8 in a text message",
                })?
                .into_any()
                .unbind()
        } else {
            PyBytes::new(py, &self.message).into_any().unbind()
        };
        if self.message.capacity() > 64 * 1024 {
            self.message = Vec::new();
        } else {
            self.message.clear();
        }
        self.messages_in += 1;
        Ok((message, size))
    }

    fn on_control(
        &mut self,
        py: Python<'_>,
        fx: &mut Effects,
        opcode: Opcode,
        payload: &[u8],
    ) -> PyResult<()> {
        match opcode {
            Opcode::Ping => {
                if !self.sent_close {
                    self.queue_frame(fx, Opcode::Pong, payload);
                }
            }
            Opcode::Pong => self.pongs += 1,
            _ => match frame::parse_close(payload) {
                Ok((code, reason)) => {
                    self.received_close = true;
                    if self.code.is_none() {
                        self.code = Some(code);
                        self.reason = reason;
                    }
                    // Echo the peer's code (RFC 6455 section 5.5.1), then close.
                    self.send_close(fx, code, "");
                    self.wake_receiver(py)?;
                }
                Err(failure) => self.fail(py, fx, &failure)?,
            },
        }
        Ok(())
    }

    fn deliver(
        &mut self,
        py: Python<'_>,
        fx: &mut Effects,
        message: Py<PyAny>,
        size: usize,
    ) -> PyResult<()> {
        if self.inbox.is_empty() {
            if let Some(waiter) = self.receiver.take() {
                let waiter = waiter.bind(py);
                if !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
                    waiter.call_method1(intern!(py, "set_result"), (message,))?;
                    self.handed = true;
                    return Ok(());
                }
            }
        }
        self.inbox.push_back((message, size));
        self.inbox_bytes += size;
        if self.inbox_bytes > self.max_queue && !self.reading_paused {
            self.reading_paused = true;
            fx.pause_reading = true;
        }
        Ok(())
    }

    /// A parked `receive` learns that no message will come.
    fn wake_receiver(&mut self, py: Python<'_>) -> PyResult<()> {
        if !self.inbox.is_empty() {
            return Ok(());
        }
        if let Some(waiter) = self.receiver.take() {
            let waiter = waiter.bind(py);
            if !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
                let exc = if self.receiver_stops {
                    PyStopAsyncIteration::new_err(()).into_value(py)
                } else {
                    self.disconnect_error(py).into_value(py)
                };
                waiter.call_method1(intern!(py, "set_exception"), (exc,))?;
            }
        }
        Ok(())
    }

    fn perform(slf: &Bound<'_, Self>, fx: Effects) -> PyResult<()> {
        let py = slf.py();
        let (transport, write) = {
            let this = slf.borrow();
            (
                this.transport.as_ref().map(|t| t.clone_ref(py)),
                this.write.as_ref().map(|w| w.clone_ref(py)),
            )
        };
        let Some(transport) = transport else {
            return Ok(());
        };
        if let (false, Some(write)) = (fx.write.is_empty(), write) {
            write.call1(py, (PyBytes::new(py, &fx.write),))?;
        }
        if fx.close {
            transport.call_method0(py, intern!(py, "close"))?;
        } else if fx.pause_reading {
            transport.call_method0(py, intern!(py, "pause_reading"))?;
        } else if fx.resume_reading {
            transport.call_method0(py, intern!(py, "resume_reading"))?;
        }
        Ok(())
    }

    fn with_effects(
        slf: &Bound<'_, Self>,
        f: impl FnOnce(&mut Self, Python<'_>, &mut Effects) -> PyResult<()>,
    ) -> PyResult<()> {
        let mut fx = Effects::default();
        {
            let mut this = slf.borrow_mut();
            f(&mut this, slf.py(), &mut fx)?;
        }
        Self::perform(slf, fx)
    }

    /// What `receive` and `anext` share: takes the next waiting message, or
    /// parks the future `park` makes (`stops`: it is `async for`'s), or says that
    /// no message will come.
    fn take_next<'py>(
        slf: &Bound<'py, Self>,
        park: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
        stops: bool,
    ) -> PyResult<Taken> {
        let py = slf.py();
        let mut fx = Effects::default();
        let taken = {
            let mut this = slf.borrow_mut();
            this.handed = false;
            if this.inbox.is_empty() {
                if let Some(failure) = this.pending_failure.take() {
                    this.fail_now(py, &mut fx, &failure)?;
                }
            }
            if let Some((message, size)) = this.inbox.pop_front() {
                this.inbox_bytes = this.inbox_bytes.saturating_sub(size);
                if this.reading_paused && this.inbox_bytes <= this.max_queue / 2 && !this.ended() {
                    this.reading_paused = false;
                    fx.resume_reading = true;
                }
                Taken::Message(message)
            } else if this.ended() {
                Taken::Ended
            } else {
                let waiting = match &this.receiver {
                    // A receive that was cancelled (a timeout) left its future done.
                    Some(w) => !w.bind(py).call_method0(intern!(py, "done"))?.is_truthy()?,
                    None => false,
                };
                if waiting {
                    return Err(PyTypeError::new_err(
                        "another task is already waiting in receive() on this WebSocket",
                    ));
                }
                let future = park()?.unbind();
                this.receiver = Some(future.clone_ref(py));
                this.receiver_stops = stops;
                Taken::Parked(future)
            }
        };
        Self::perform(slf, fx)?;
        Ok(taken)
    }

    fn settle(py: Python<'_>, waiters: Vec<Py<PyAny>>) -> PyResult<()> {
        for waiter in waiters {
            let waiter = waiter.bind(py);
            if !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
                waiter.call_method1(intern!(py, "set_result"), (py.None(),))?;
            }
        }
        Ok(())
    }
}
