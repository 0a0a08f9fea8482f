//! The session's writes and its life: flushing what the core queued, the socket's
//! backpressure, the server tick (keep-alive, write timeout, drain) and the end.

use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::{Link, Session, LINGER, LINGER_BYTES};
use crate::http2::error::ErrorCode;
use crate::protocol::Connection;
use crate::timeouts::Timeouts;

impl Session {
    /// Writes what the core queued: now when no read is being handled, else after it.
    pub(super) fn flush_soon(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let (call, cb) = {
            let mut this = slf.borrow_mut();
            if this.dispatching || this.flush_queued || this.core.output().is_empty() {
                return Ok(());
            }
            this.flush_queued = true;
            let cb = if let Some(cb) = &this.flush_cb {
                cb.clone_ref(py)
            } else {
                let cb = slf.getattr("_flush")?.unbind();
                this.flush_cb = Some(cb.clone_ref(py));
                cb
            };
            (this.call_soon.clone_ref(py), cb)
        };
        call.call1(py, (cb,)).map(drop)
    }

    /// Writes what the core queued, and closes the socket once the core is done.
    pub fn flush(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        // (`Bound`s: dropping one is a decref, without `Py`'s check of the thread.)
        let (write, close, abort, transport) = {
            let mut this = slf.borrow_mut();
            this.flush_queued = false;
            let finished = this.core.is_finished();
            let paused = this.writing_paused.is_some();
            let out = this.core.output();
            let bytes = (!out.is_empty() && !paused).then(|| {
                let b = PyBytes::new(py, out);
                out.clear();
                b
            });
            let close = finished && !this.closed;
            if close {
                this.closed = true;
            }
            let write = bytes.map(|b| (this.write.bind(py).clone(), b));
            let transport = close.then(|| this.transport.bind(py).clone());
            (write, close, close && paused, transport)
        };
        if let Some((write, bytes)) = write {
            write.call1((bytes,))?;
        }
        let Some(transport) = transport else {
            return Ok(());
        };
        if abort {
            // Done (a connection error, often the client's not reading) while the
            // socket takes nothing more: nothing left would ever be read.
            return transport.call_method0("abort").map(drop);
        }
        if close {
            if transport.call_method0("can_write_eof")?.is_truthy()? {
                transport.call_method0("write_eof")?;
                let mut this = slf.borrow_mut();
                this.linger_until = Some(Instant::now() + LINGER);
                this.linger_left = this.disp.linger.map_or(LINGER_BYTES, |l| l.bytes);
            } else {
                transport.call_method0("close")?;
            }
        }
        Ok(())
    }

    /// The socket is gone: every stream's connection learns it.
    pub fn connection_lost(slf: &Bound<'_, Self>) -> PyResult<()> {
        let (links, idle) = {
            let mut this = slf.borrow_mut();
            this.closed = true;
            this.flush_cb = None;
            let links: Vec<Link> = this.streams.drain().map(|(_, l)| l).collect();
            (links, std::mem::take(&mut this.idle))
        };
        for link in links {
            Self::lose(slf, link)?;
        }
        let py = slf.py();
        for (conn, transport) in idle {
            {
                let mut t = transport.bind(py).borrow_mut();
                t.closing = true;
                t.session = None;
            }
            conn.bind(py)
                .call_method1("connection_lost", (py.None(),))?;
        }
        Ok(())
    }

    /// The socket's buffer is full (or has room again): every stream's writer waits.
    pub fn set_writing_paused(slf: &Bound<'_, Self>, paused: bool) -> PyResult<()> {
        let py = slf.py();
        let conns: Vec<Py<Connection>> = {
            let mut this = slf.borrow_mut();
            this.writing_paused = paused.then(Instant::now);
            this.streams
                .values()
                .filter(|l| !l.writer_paused)
                .map(|l| l.conn.clone_ref(py))
                .collect()
        };
        let method = if paused {
            "pause_writing"
        } else {
            "resume_writing"
        };
        for conn in conns {
            conn.bind(py).call_method0(method)?;
        }
        if paused {
            Ok(())
        } else {
            Self::flush(slf) // what the core queued meanwhile
        }
    }

    /// The server tick: an idle session closes after the keep-alive time; a
    /// draining one sends GOAWAY and closes once its streams are done.
    pub fn tick(slf: &Bound<'_, Self>, now: Instant, t: &Timeouts) -> PyResult<bool> {
        let idle_out = {
            let mut this = slf.borrow_mut();
            if this.closed {
                let over = this.linger_until.is_some_and(|until| now >= until);
                if over {
                    this.linger_until = None;
                    let transport = this.transport.clone_ref(slf.py());
                    drop(this);
                    // Unsent bytes after the linger: the client is not reading, and
                    // a close would wait for it forever.
                    let unsent = transport
                        .call_method0(slf.py(), "get_write_buffer_size")?
                        .extract::<usize>(slf.py())?;
                    let how = if unsent == 0 { "close" } else { "abort" };
                    transport.call_method0(slf.py(), how)?;
                }
                return Ok(over);
            }
            let draining = this
                .disp
                .last_answers
                .load(std::sync::atomic::Ordering::Relaxed);
            if this
                .writing_paused
                .is_some_and(|since| now.saturating_duration_since(since) >= t.write)
            {
                // The client stopped reading: drop it and what it has not read.
                this.closed = true;
                let transport = this.transport.clone_ref(slf.py());
                drop(this);
                transport.call_method0(slf.py(), "abort")?;
                return Ok(true);
            }
            let idle = this.streams.is_empty()
                && now.saturating_duration_since(this.last_activity) >= t.keepalive;
            if (draining || idle) && !this.going_away {
                this.going_away = true;
                this.core.go_away(ErrorCode::NoError);
            }
            idle
        };
        Self::flush(slf)?;
        Ok(idle_out)
    }
}
