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
//! `bytes`, through `receive`, and sends through `send`.
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

#[pymethods]
impl WebSocketProtocol {
    #[new]
    #[pyo3(signature = (
        disconnect, *, max_message, max_queue, deflate = false, deflate_window_bits = 15,
        deflate_level = 1, deflate_min_size = 0,
    ))]
    #[allow(clippy::fn_params_excessive_bools)]
    fn new(
        disconnect: Py<PyAny>,
        max_message: usize,
        max_queue: usize,
        deflate: bool,
        deflate_window_bits: u8,
        deflate_level: u32,
        deflate_min_size: usize,
    ) -> PyResult<Self> {
        if !(9..=15).contains(&deflate_window_bits) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "deflate_window_bits must be 9 to 15, got {deflate_window_bits}"
            )));
        }
        if !(1..=9).contains(&deflate_level) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "deflate_level must be 1 to 9, got {deflate_level}"
            )));
        }
        let deflate_settings = deflate.then_some(deflate::Settings {
            window_bits: deflate_window_bits,
            level: deflate_level,
            min_size: deflate_min_size,
        });
        Ok(WebSocketProtocol {
            transport: None,
            write: None,
            early: Vec::new(),
            lost: false,
            buf: Vec::new(),
            frame: None,
            message: Vec::new(),
            message_kind: None,
            compressed: false,
            utf8: frame::Utf8Check::default(),
            deflate_settings,
            deflate: None,
            inbox: VecDeque::new(),
            inbox_bytes: 0,
            receiver: None,
            receiver_stops: false,
            drain_waiters: Vec::new(),
            close_waiters: Vec::new(),
            sent_close: false,
            received_close: false,
            failed: false,
            pending_failure: None,
            handed: false,
            code: None,
            reason: String::new(),
            writing_paused: false,
            reading_paused: false,
            pongs: 0,
            max_message,
            max_queue,
            disconnect,
            messages_in: 0,
            messages_out: 0,
            compressed_in: 0,
            compressed_out: 0,
        })
    }

    /// Answers the client's `Sec-WebSocket-Extensions` (its values joined with
    /// commas) before the `101`: the header value to send back when
    /// permessage-deflate is agreed (it is then on for this connection), or None.
    fn negotiate(&mut self, offers: &str) -> Option<String> {
        let settings = self.deflate_settings?;
        let agreement = deflate::negotiate(offers, &settings)?;
        self.deflate = Some(Deflate {
            deflater: deflate::Deflater::new(&agreement, &settings),
            inflater: deflate::Inflater::new(&agreement),
            unmasked: Vec::new(),
            packed: Vec::new(),
        });
        Some(agreement.header())
    }

    /// Whether permessage-deflate was agreed.
    #[getter]
    fn compression(&self) -> bool {
        self.deflate.is_some()
    }

    /// Takes over `transport` (called by the HTTP connection after the `101`);
    /// `rest`: bytes the client sent after its handshake.
    fn _attach(slf: &Bound<'_, Self>, transport: &Bound<'_, PyAny>, rest: &[u8]) -> PyResult<()> {
        {
            let mut this = slf.borrow_mut();
            this.write = Some(transport.getattr("write")?.unbind());
            this.transport = Some(transport.clone().unbind());
        }
        let early = std::mem::take(&mut slf.borrow_mut().early);
        Self::perform(
            slf,
            Effects {
                write: early,
                ..Effects::default()
            },
        )?;
        if !rest.is_empty() {
            Self::data_received(slf, rest)?;
        }
        Ok(())
    }

    /// The connection went away before the handshake's answer was sent.
    fn _abandon(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::connection_lost(slf, None)
    }

    #[allow(clippy::unused_self)] // asyncio calls it on the protocol object
    fn connection_made(&self, transport: &Bound<'_, PyAny>) {
        // `_attach` does the work: the transport changes hands with set_protocol,
        // which does not call this.
        let _ = transport;
    }

    fn data_received(slf: &Bound<'_, Self>, data: &[u8]) -> PyResult<()> {
        Self::with_effects(slf, |this, py, fx| {
            if this.ended() {
                return Ok(());
            }
            if this.buf.is_empty() {
                let used = this.parse(py, fx, data)?;
                if !this.ended() {
                    this.buf.extend_from_slice(&data[used..]);
                }
            } else {
                this.buf.extend_from_slice(data);
                let buf = std::mem::take(&mut this.buf);
                let used = this.parse(py, fx, &buf)?;
                if !this.ended() {
                    this.buf = buf;
                    this.buf.drain(..used);
                }
            }
            Ok(())
        })
    }

    #[allow(clippy::unused_self)] // asyncio calls it on the protocol object
    fn eof_received(&self) -> bool {
        false
    }

    fn connection_lost(slf: &Bound<'_, Self>, exc: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let _ = exc;
        let py = slf.py();
        let (drain, closed) = {
            let mut this = slf.borrow_mut();
            this.lost = true;
            if this.code.is_none() {
                this.code = Some(1006);
            }
            this.transport = None;
            this.write = None;
            this.buf = Vec::new();
            this.message = Vec::new();
            this.early = Vec::new();
            this.wake_receiver(py)?;
            (
                std::mem::take(&mut this.drain_waiters),
                std::mem::take(&mut this.close_waiters),
            )
        };
        Self::settle(py, drain)?;
        Self::settle(py, closed)
    }

    fn pause_writing(&mut self) {
        self.writing_paused = true;
    }

    fn resume_writing(slf: &Bound<'_, Self>) -> PyResult<()> {
        let waiters = {
            let mut this = slf.borrow_mut();
            this.writing_paused = false;
            std::mem::take(&mut this.drain_waiters)
        };
        Self::settle(slf.py(), waiters)
    }

    /// The next message (`str` or `bytes`), or None after parking `future`, which
    /// then gets the message or the disconnect. Raises the disconnect when the
    /// peer closed and every message before its close has been received.
    fn receive(slf: &Bound<'_, Self>, future: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        match Self::take_next(slf, || Ok(future.clone()), false)? {
            Taken::Message(message) => Ok(Some(message)),
            Taken::Parked(_) => Ok(None),
            Taken::Ended => Err(slf.borrow().disconnect_error(slf.py())),
        }
    }

    /// One step of `async for message in ws`: an awaitable of the next message
    /// (already done when one is waiting, else a future made by `create_future`
    /// and parked until it comes). Raises `StopAsyncIteration`, at once or through
    /// the future, when no message will come.
    fn anext(slf: &Bound<'_, Self>, create_future: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match Self::take_next(slf, || create_future.call0(), true)? {
            Taken::Message(message) => Ok(crate::ready::ready(slf.py(), message)?.into_any()),
            Taken::Parked(future) => Ok(future),
            Taken::Ended => Err(PyStopAsyncIteration::new_err(())),
        }
    }

    /// Sends one message: `str` as text, `bytes` (or bytearray, memoryview) as
    /// binary, or as text with `text=True` (the caller vouches that they are
    /// UTF-8, as JSON from orjson is). Returns whether the transport is above its
    /// high watermark (the caller then waits in `wait_writable`).
    #[pyo3(signature = (data, *, text = false))]
    fn send(slf: &Bound<'_, Self>, data: &Bound<'_, PyAny>, text: bool) -> PyResult<bool> {
        let py = slf.py();
        let mut fx = Effects::default();
        {
            let mut this = slf.borrow_mut();
            if this.sent_close || this.lost {
                return Err(this.disconnect_error(py));
            }
            if let Ok(text) = data.cast::<PyString>() {
                this.queue_message(&mut fx, Opcode::Text, text.to_str()?.as_bytes());
            } else if let Ok(bytes) = data.cast::<PyBytes>() {
                let opcode = if text { Opcode::Text } else { Opcode::Binary };
                this.queue_message(&mut fx, opcode, bytes.as_bytes());
            } else {
                let bytes: Vec<u8> = data.extract().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "a WebSocket message is str or bytes, not {}",
                        data.get_type()
                            .name()
                            .map_or_else(|_| "?".into(), |n| n.to_string())
                    ))
                })?;
                this.queue_message(&mut fx, Opcode::Binary, &bytes);
            }
            this.messages_out += 1;
        }
        Self::perform(slf, fx)?;
        let this = slf.borrow();
        if let Some(t) = &this.transport {
            // A transport whose peer reset drops writes silently; report it now, so
            // a sender that never awaits does not spin.
            if t.call_method0(py, intern!(py, "is_closing"))?
                .is_truthy(py)?
                && !this.sent_close
            {
                return Err(this.disconnect_error(py));
            }
        }
        Ok(this.writing_paused)
    }

    /// Sends a ping carrying `data` (at most 125 bytes).
    fn ping(slf: &Bound<'_, Self>, data: &[u8]) -> PyResult<()> {
        if data.len() > 125 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "a ping carries at most 125 bytes",
            ));
        }
        Self::with_effects(slf, |this, py, fx| {
            if this.sent_close || this.lost {
                return Err(this.disconnect_error(py));
            }
            this.queue_frame(fx, Opcode::Ping, data);
            Ok(())
        })
    }

    /// Starts the closing handshake with `code` and `reason` (once; later calls do
    /// nothing). The transport closes when the peer answers, or at once if it
    /// already sent its close.
    fn close(slf: &Bound<'_, Self>, code: u16, reason: &str) -> PyResult<()> {
        if !(frame::is_valid_close_code(code) || code == 1005) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{code} is not a close code an endpoint may send"
            )));
        }
        Self::with_effects(slf, |this, py, fx| {
            if this.lost {
                return Ok(());
            }
            if let Some(failure) = this.pending_failure.take() {
                // The handler closes before taking what came before the bad bytes.
                return this.fail_now(py, fx, &failure);
            }
            if this.code.is_none() && !this.received_close {
                this.code = Some(code);
                reason.clone_into(&mut this.reason);
            }
            this.send_close(fx, code, reason);
            Ok(())
        })
    }

    /// Closes the transport at once (a peer that does not answer the close).
    fn abort(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let transport = slf.borrow().transport.as_ref().map(|t| t.clone_ref(py));
        if let Some(t) = transport {
            t.call_method0(py, intern!(py, "abort"))?;
        }
        Ok(())
    }

    /// Parks `future` until the transport drains (or the connection is lost).
    fn wait_writable(&mut self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.writing_paused && !self.lost {
            self.drain_waiters.push(future.clone().unbind());
        } else {
            let py = future.py();
            future.call_method1(intern!(py, "set_result"), (py.None(),))?;
        }
        Ok(())
    }

    /// Parks `future` until the connection is gone.
    fn wait_closed(&mut self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.lost {
            let py = future.py();
            future.call_method1(intern!(py, "set_result"), (py.None(),))?;
        } else {
            self.close_waiters.push(future.clone().unbind());
        }
        Ok(())
    }

    /// The close code: the peer's, or the one this side sent or failed with;
    /// 1006 when the connection was lost without one; None while open.
    #[getter]
    fn close_code(&self) -> Option<u16> {
        self.code
    }

    #[getter]
    fn close_reason(&self) -> &str {
        &self.reason
    }

    /// Pongs received so far (the keep-alive ping compares it).
    #[getter]
    fn pongs(&self) -> u64 {
        self.pongs
    }

    #[getter]
    fn closing(&self) -> bool {
        self.sent_close || self.ended()
    }

    #[getter]
    fn lost(&self) -> bool {
        self.lost
    }

    #[getter]
    fn attached(&self) -> bool {
        self.transport.is_some()
    }

    /// Messages received and sent (for metrics).
    #[getter]
    fn counts(&self) -> (u64, u64) {
        (self.messages_in, self.messages_out)
    }

    /// Messages received and sent compressed (permessage-deflate).
    #[getter]
    fn compressed_counts(&self) -> (u64, u64) {
        (self.compressed_in, self.compressed_out)
    }
}
