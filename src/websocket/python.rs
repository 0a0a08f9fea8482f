//! `WebSocketProtocol`'s Python side: the asyncio protocol callbacks the transport
//! calls (`data_received`, `connection_lost`, flow control) and what the handler's
//! `veter.websockets.WebSocket` calls (`receive`, `anext`, `send`, `ping`, `close`,
//! and the state it reads). The state machine they drive is in `mod.rs`.

use std::collections::VecDeque;

use pyo3::exceptions::{PyStopAsyncIteration, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::frame::{self, Opcode};
use super::{deflate, Deflate, Effects, Taken, WebSocketProtocol};

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
        crate::lagwatch::turned();
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
