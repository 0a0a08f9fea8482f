//! What the connection does to its transport once it is no longer borrowed: write
//! what is ready, pause or resume reading, close, or half-close and linger.

use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::h2::StreamTransport;
use super::{stream, Connection};

/// How the transport ends, when it does.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Closing {
    #[default]
    No,
    Close,
    /// Half-close and linger (`Connection::linger`).
    HalfClose,
}

/// `loop.call_soon`, the dispatcher's `_write_later`, and whether this connection
/// is in the worker's list of connections written at the end of the iteration.
pub(super) struct Later {
    pub(super) call_soon: Py<PyAny>,
    pub(super) writer: Py<PyAny>,
    pub(super) queued: bool,
}

/// What to do with the transport once the connection is no longer borrowed.
/// (Its objects, and those `with_borrow` hands `perform`, are `Bound`: dropping one
/// is a decref, where dropping a `Py` first asks a thread-local whether the thread
/// is attached, ~15 instructions each on the path of every read.)
#[derive(Default)]
pub(super) struct Actions<'py> {
    write: Option<Bound<'py, PyBytes>>,
    close: Closing,
    pause_reading: bool,
    resume_reading: bool,
    /// A streamed response reached the front: its object and whether to send a body.
    start_stream: Option<(Py<PyAny>, bool)>,
}

impl Connection {
    /// Moves every ready response at the front of the queue into `out` and says
    /// what to do with the transport.
    pub(super) fn collect<'py>(&mut self, py: Python<'py>) -> Actions<'py> {
        let actions = self.core.collect(stream::activate);
        let write = actions.write.then(|| {
            // Copied once into the bytes object the transport takes; `out` keeps its
            // capacity for the next batch.
            let bytes = PyBytes::new(py, &self.core.out);
            self.core.out.clear();
            bytes
        });
        Actions {
            write,
            close: if actions.close {
                Closing::Close
            } else {
                Closing::No
            },
            pause_reading: actions.pause_reading,
            resume_reading: actions.resume_reading,
            start_stream: actions.start_stream,
        }
    }

    /// The server closes this connection: whether to half-close instead and keep
    /// reading (and dropping) for `linger_timeout`. A client still sending its
    /// request (a body over the limit, an answer given before the body was read)
    /// would otherwise get a reset, which makes its kernel drop the answer unread.
    fn linger(&mut self, py: Python<'_>) -> bool {
        let Some(limit) = self.disp.linger else {
            return false;
        };
        if self.lingering.is_some() || !(self.may_be_sending || self.core.input_unfinished()) {
            return false; // an idle or drained connection closes at once, as before
        }
        let half_closes = self.transport.as_ref().is_some_and(|t| {
            t.call_method0(py, "can_write_eof")
                .and_then(|v| v.is_truthy(py))
                .unwrap_or(false)
        });
        if half_closes {
            self.lingering = Some((Instant::now() + limit.time, limit.bytes));
        }
        half_closes
    }

    fn perform<'py>(
        transport: Option<Bound<'py, PyAny>>,
        write: Option<Bound<'py, PyAny>>,
        actions: Actions<'py>,
    ) -> PyResult<()> {
        if let (Some(bytes), Some(write)) = (actions.write, write) {
            write.call1((bytes,))?;
        }
        if let Some(t) = transport {
            if actions.close == Closing::HalfClose {
                t.call_method0("write_eof")?;
                t.call_method0("resume_reading")?;
            } else if actions.close == Closing::Close {
                t.call_method0("close")?;
            } else if actions.pause_reading {
                t.call_method0("pause_reading")?;
            } else if actions.resume_reading {
                t.call_method0("resume_reading")?;
            }
        }
        Ok(())
    }

    /// `with_borrow` for an answer a task finished: what is ready is written when
    /// the loop iteration's callbacks are done, one write per connection for every
    /// task that finished in it, rather than one write per task as it finishes;
    /// the iteration's first (`Shared::write_at_once`) is written at once.
    /// Spread over the iteration, those writes each woke the reader on the other
    /// side (a load generator, a proxy), which costs the sender more CPU in the
    /// kernel than the writes themselves (uvloop 0.23 writes at once; 0.22 held
    /// writes to the iteration's end, as this does): docs/design.md.
    pub(in crate::protocol) fn with_borrow_later(
        slf: &Bound<'_, Self>,
        f: impl FnOnce(&mut Self, Python<'_>) -> PyResult<()>,
    ) -> PyResult<()> {
        let py = slf.py();
        let schedule = {
            let mut guard = slf.borrow_mut();
            f(&mut guard, py)?;
            let this = &mut *guard;
            let Some(later) = this.later.as_mut() else {
                // Detached (nothing waits for a write), or an HTTP/2 stream's connection
                // (its session writes once per iteration): what is ready is settled now.
                drop(guard);
                return Self::with_borrow(slf, |_, _| Ok(()));
            };
            if later.queued {
                return Ok(()); // listed already: written with the rest
            }
            // The iteration's first answer is written at once, unless more are still
            // to come on this connection (pipelined requests: one write for them all).
            if this.core.in_flight == 0 && this.disp.write_at_once() {
                drop(guard);
                return Self::with_borrow(slf, |_, _| Ok(()));
            }
            later.queued = true;
            let call = (later.call_soon.clone_ref(py), later.writer.clone_ref(py));
            // The first connection listed in this iteration schedules the write.
            this.disp.write_later(slf.clone().unbind()).then_some(call)
        };
        match schedule {
            Some((call_soon, writer)) => call_soon.call1(py, (writer,)).map(drop),
            None => Ok(()),
        }
    }

    /// Writes what tasks finished for the connections `with_borrow_later` listed.
    pub fn write_later(py: Python<'_>, disp: &super::Shared) {
        for conn in disp.take_writes_later() {
            let conn = conn.bind(py);
            // (A loop callback of its own: no call on the connection is running.)
            match conn.try_borrow_mut() {
                Ok(mut this) => {
                    if let Some(later) = this.later.as_mut() {
                        later.queued = false;
                    }
                }
                Err(_) => continue,
            }
            if let Err(err) = Self::with_borrow(conn, |_, _| Ok(())) {
                err.print(py);
            }
        }
    }

    /// Runs `f` on the borrowed connection, then acts on the transport unborrowed.
    pub(in crate::protocol) fn with_borrow(
        slf: &Bound<'_, Self>,
        f: impl FnOnce(&mut Self, Python<'_>) -> PyResult<()>,
    ) -> PyResult<()> {
        let py = slf.py();
        let (transport, write, mut actions) = {
            let mut this = slf.borrow_mut();
            f(&mut this, py)?;
            if this.h2_stream {
                drop(this);
                return Self::settle_stream(slf);
            }
            let mut actions = this.collect(py);
            if actions.close == Closing::Close && this.linger(py) {
                actions.close = Closing::HalfClose;
            }
            let transport = if actions.close != Closing::No
                || actions.pause_reading
                || actions.resume_reading
            {
                this.transport.as_ref().map(|t| t.bind(py).clone())
            } else {
                None
            };
            (
                transport,
                this.write.as_ref().map(|w| w.bind(py).clone()),
                actions,
            )
        };
        let start = actions.start_stream.take();
        Self::perform(transport, write, actions)?;
        match start {
            Some((obj, send_body)) => Self::start_pump(slf, &obj, send_body),
            None => Ok(()),
        }
    }

    /// `with_borrow`'s second half for an HTTP/2 stream's connection: what is ready
    /// goes to its `StreamTransport` as it is, without a bytes object or a Python
    /// call (the session reads it straight into frames), and `out` gets its buffer
    /// back. (Cold: kept out of the HTTP/1.1 path's way; an HTTP/2 stream pays
    /// for the call, not HTTP/1.1 for the branch's layout.)
    #[cold]
    #[inline(never)]
    fn settle_stream(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let (transport, out, mut actions) = {
            let mut this = slf.borrow_mut();
            let ready = this.core.collect(stream::activate);
            let out = ready.write.then(|| std::mem::take(&mut this.core.out));
            let mut actions = Actions {
                write: None,
                close: if ready.close {
                    Closing::Close
                } else {
                    Closing::No
                },
                pause_reading: ready.pause_reading,
                resume_reading: ready.resume_reading,
                start_stream: ready.start_stream,
            };
            if actions.close == Closing::Close && this.linger(py) {
                actions.close = Closing::HalfClose;
            }
            (
                this.transport.as_ref().map(|t| t.clone_ref(py)),
                out,
                actions,
            )
        };
        if let Some(mut out) = out {
            if let Some(t) = &transport {
                StreamTransport::write_bytes(t.bind(py).cast::<StreamTransport>()?, &out)?;
            }
            out.clear();
            let mut this = slf.borrow_mut();
            if this.core.out.capacity() == 0 {
                this.core.out = out;
            }
        }
        let start = actions.start_stream.take();
        Self::perform(transport.map(|t| t.into_bound(py)), None, actions)?;
        match start {
            Some((obj, send_body)) => Self::start_pump(slf, &obj, send_body),
            None => Ok(()),
        }
    }
}
