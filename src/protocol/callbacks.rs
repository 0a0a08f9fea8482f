//! The asyncio protocol's callbacks: each turns into calls on the connection's core
//! and, once the connection is no longer borrowed, into transport calls.

use std::time::Instant;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::{h2, stream, Connection};
use crate::conn::{self, Feed};

#[pymethods]
impl Connection {
    pub(crate) fn connection_made(
        slf: &Bound<'_, Self>,
        transport: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let py = slf.py();
        let mut this = slf.borrow_mut();
        let disp = this.disp.clone();
        let d = &*disp;
        let refs = crate::event_loop::refs_for(
            py,
            &d.loop_refs,
            d.eager_tasks,
            d.overload.queue_timeout.is_some(),
            this.dispatcher.bind(py),
        )?;
        this.task_kwargs = refs.task_kwargs;
        this.plain_task_kwargs = refs.plain_task_kwargs;
        this.create_task = refs.create_task;
        // An HTTP/2 stream's answers are settled as they are made: its session holds
        // the socket's write to the iteration's end itself (`Session::flush_soon`).
        this.later = (!this.h2_stream).then(|| super::transport::Later {
            call_soon: refs.call_soon,
            writer: refs.writer,
            queued: false,
        });
        if d.overload.queue_timeout.is_some() {
            this.end_iteration = refs.end_iteration;
            this.event_loop = Some(refs.event_loop);
            let sock =
                transport.call_method1(intern!(py, "get_extra_info"), (intern!(py, "socket"),))?;
            this.sock = (!sock.is_none()).then(|| sock.unbind());
        }
        let peer =
            transport.call_method1(intern!(py, "get_extra_info"), (intern!(py, "peername"),))?;
        if let Some(trust) = &d.proxies {
            this.proxied = match peer.cast::<pyo3::types::PyTuple>() {
                Ok(tuple) if !tuple.is_empty() => tuple
                    .get_item(0)?
                    .extract::<String>()
                    .ok()
                    .and_then(|host| host.parse::<std::net::IpAddr>().ok())
                    .is_some_and(|ip| trust.trusts_ip(ip)),
                // A Unix socket's peer: a path, usually empty.
                _ => trust.trusts_unix(),
            };
        }
        if d.access.is_some() {
            // (host, port[, ...]) for TCP; a path (maybe empty) for a Unix socket.
            let host = match peer.cast::<pyo3::types::PyTuple>() {
                Ok(tuple) if !tuple.is_empty() => tuple.get_item(0)?.str()?.to_string(),
                _ => peer.str()?.to_string(),
            };
            this.client_text = host;
        }
        if let Some(asgi) = &d.asgi {
            let sockname = transport
                .call_method1(intern!(py, "get_extra_info"), (intern!(py, "sockname"),))?;
            let (client, server) = (address_pair(&peer, false)?, address_pair(&sockname, true)?);
            if asgi.wsgi.is_some() {
                let place = crate::asgi::environ::Place::new(client.bind(py), server.bind(py))?;
                this.wsgi_place = Some(Box::new(place));
            }
            this.asgi_place = Some((client, server));
        }
        this.client = peer.unbind();
        this.write = Some(transport.getattr(intern!(py, "write"))?.unbind());
        this.transport = Some(transport.clone().unbind());
        this.self_ref = Some(slf.clone().unbind());
        this.core.last_activity = Instant::now();
        let id = this.id;
        let h2_stream = this.h2_stream;
        this.sniffing = !h2_stream && d.http2.is_some() && (d.h2c || !d.http1);
        drop(this);
        d.register(id, slf.clone().unbind());
        // (ALPN only over TLS: a clear-text transport has no SSL object to ask.)
        if !h2_stream && d.http2.is_some() && d.secure && h2::alpn_chose_h2(transport)? {
            return Self::start_h2(slf, &[]);
        }
        if !h2_stream && d.over_capacity(id, &slf.clone().unbind(), py) {
            // Over the worker's connection cap: accepted, but not served until another
            // connection closes. (Reading cannot be paused here: uvloop starts reading
            // after connection_made returns; the first read is kept and pauses it.)
            slf.borrow_mut().core.pauses.set(conn::Pause::Capacity);
        }
        // A connection accepted just before the drain began (its connection_made runs
        // after the listener closed) is still served: its first response carries
        // `Connection: close`, and the reaper closes it if it sends nothing.
        Ok(())
    }

    pub(crate) fn data_received(slf: &Bound<'_, Self>, data: &Bound<'_, PyBytes>) -> PyResult<()> {
        crate::lagwatch::turned();
        {
            let this = slf.borrow();
            if let Some(session) = &this.h2 {
                let session = session.clone_ref(slf.py());
                drop(this);
                return h2::Session::data_received(session.bind(slf.py()), data.as_bytes());
            }
            if this.sniffing {
                drop(this);
                return Self::sniff_received(slf, data);
            }
        }
        let mut upgrade = false;
        Self::with_borrow(slf, |this, py| {
            if let Some((_, left)) = &mut this.lingering {
                // Closing: what the client still sends is dropped, up to a budget.
                *left = left.saturating_sub(data.as_bytes().len());
                if *left == 0 {
                    if let Some(t) = &this.transport {
                        t.call_method0(py, "close")?;
                    }
                }
                return Ok(());
            }
            let now = Instant::now();
            this.set_clock(now);
            if let (Some(lp), Some(marker)) = (&this.event_loop, &this.end_iteration) {
                let overload = &this.disp.overload;
                let mut since = overload.iteration_start(py, now, lp, marker);
                if this.first_read || overload.may_be_stale(now) {
                    if let Some(sock) = &this.sock {
                        let waited = overload.kernel_wait(py, sock);
                        since = since.min(now.checked_sub(waited).unwrap_or(since));
                    }
                }
                this.first_read = false;
                this.batch_start = since;
            }
            let done = match this.core.received(data.as_bytes(), now, &this.disp.limits) {
                Feed::Hold => Ok(()),
                Feed::Direct => this.process(py, data, 0),
                Feed::Joined(joined) => this.process(py, &PyBytes::new(py, &joined), 0),
            };
            upgrade = this.h2_upgrade.is_some();
            done
        })?;
        if upgrade {
            return Self::switch_to_h2c(slf);
        }
        // Requests held back while a large batch of responses was written: go on
        // with them now unless the transport asked us to pause.
        let mut more = true;
        while more && slf.borrow().core.output_freed() {
            Self::with_borrow(slf, |this, py| {
                more = this.drain_buffered(py)?;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// See `upload.rs`: a paused streamed body may be read again.
    fn _resume_upload(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::resume_upload(slf)
    }

    fn eof_received(slf: &Bound<'_, Self>) -> PyResult<bool> {
        if slf.borrow().h2.is_some() {
            return Ok(false); // the client is done with every stream: close
        }
        let mut keep_open = false;
        let mut cycles = Vec::new();
        Self::with_borrow(slf, |this, py| {
            this.may_be_sending = false;
            if this.lingering.is_some() {
                return Ok(()); // the client has read the answer and closed: close too
            }
            // The client sent everything it will send. Answer what is in flight, then
            // close; an incomplete request is dropped.
            keep_open = this.core.end_of_input();
            cycles = this.cycles.iter().map(|c| c.clone_ref(py)).collect();
            Ok(())
        })?;
        // A hosted ASGI app learns it as uvicorn tells it: `receive` says
        // http.disconnect (its answer, if it still sends one, is written).
        for cycle in cycles {
            cycle.get().input_ended(slf.py());
        }
        Ok(keep_open)
    }

    fn connection_lost(slf: &Bound<'_, Self>, exc: Option<&Bound<'_, PyAny>>) {
        // Why the connection went away does not change what is cleaned up.
        let _ = exc;
        let py = slf.py();
        let session = slf.borrow_mut().h2.take();
        if let Some(session) = session {
            if let Err(err) = h2::Session::connection_lost(session.bind(py)) {
                err.print(py);
            }
        }
        let (disp, id, pump, waiter, unstarted, cycles) = {
            let mut this = slf.borrow_mut();
            let pump = this.core.stream.as_mut().and_then(|s| s.task.take());
            // A send waiting for the transport's room (an app streaming to a client
            // that stopped reading): no room comes now, so it is let go below.
            let waiter = this.core.stream.as_mut().and_then(|s| s.waiter.take());
            // Streamed answers still queued never start: they are told so below.
            let unstarted: Vec<Py<PyAny>> = this
                .core
                .queue
                .iter_mut()
                .filter_map(|slot| slot.stream.take().map(|plan| plan.into_object()))
                .collect();
            this.detach();
            let cycles = std::mem::take(&mut this.cycles);
            (this.disp.clone(), this.id, pump, waiter, unstarted, cycles)
        };
        for cycle in cycles {
            cycle.get().client_gone(py);
        }
        if let Err(err) = stream::wake(py, waiter) {
            err.print(py);
        }
        Connection::leave(py, &disp, id);
        if let Some(task) = pump {
            // The client is gone: the pump stops and closes its generator.
            if let Err(err) = task.call_method0(py, "cancel") {
                err.print(py);
            }
        }
        for obj in unstarted {
            if let Err(err) = obj.call_method0(py, "_veter_abandon") {
                err.print(py);
            }
        }
    }

    fn pause_writing(slf: &Bound<'_, Self>) -> PyResult<()> {
        if let Some(session) = slf.borrow().h2.as_ref() {
            return h2::Session::set_writing_paused(session.bind(slf.py()), true);
        }
        Self::with_borrow(slf, |this, _py| {
            this.core.set_writing_paused(true, Instant::now());
            Ok(())
        })
    }

    fn resume_writing(slf: &Bound<'_, Self>) -> PyResult<()> {
        if let Some(session) = slf.borrow().h2.as_ref() {
            return h2::Session::set_writing_paused(session.bind(slf.py()), false);
        }
        let mut waiter = None;
        Self::with_borrow(slf, |this, py| {
            this.core.set_writing_paused(false, Instant::now());
            waiter = this.core.stream.as_mut().and_then(|s| s.waiter.take());
            this.drain_buffered(py).map(drop)
        })?;
        stream::wake(slf.py(), waiter)
    }

    /// Requests in flight on this connection (handlers that have not answered yet).
    #[getter]
    fn in_flight(&self) -> usize {
        self.core.in_flight
    }
}

impl Connection {
    /// The first bytes of a clear-text connection, read until they tell HTTP/2's
    /// preface from an HTTP/1.1 request (almost always at once, in the first read).
    fn sniff_received(slf: &Bound<'_, Self>, data: &Bound<'_, PyBytes>) -> PyResult<()> {
        let py = slf.py();
        let joined = {
            let mut this = slf.borrow_mut();
            (!this.sniffed.is_empty()).then(|| {
                let mut joined = std::mem::take(&mut this.sniffed);
                joined.extend_from_slice(data.as_bytes());
                joined
            })
        };
        let bytes = joined.as_deref().unwrap_or(data.as_bytes());
        match h2::sniff(bytes) {
            h2::Sniff::Unsure => {
                slf.borrow_mut().sniffed = bytes.to_vec();
                Ok(())
            }
            h2::Sniff::Http2 => Self::start_h2(slf, bytes),
            h2::Sniff::Http1 if !slf.borrow().disp.http1 => {
                // HTTP/2 only: nothing else is answered.
                let transport = {
                    let mut this = slf.borrow_mut();
                    this.sniffing = false;
                    this.core.abort();
                    this.transport.as_ref().map(|t| t.clone_ref(py))
                };
                match transport {
                    Some(t) => t.call_method0(py, "close").map(drop),
                    None => Ok(()),
                }
            }
            h2::Sniff::Http1 => {
                slf.borrow_mut().sniffing = false;
                match joined {
                    None => Self::data_received(slf, data),
                    Some(joined) => Self::data_received(slf, &PyBytes::new(py, &joined)),
                }
            }
        }
    }

    /// A request asked for `Upgrade: h2c` (`wants_h2c`): `101`, then HTTP/2, the
    /// request itself answered on stream 1.
    fn switch_to_h2c(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let (upgrade, rest, transport, disp, dispatcher) = {
            let mut this = slf.borrow_mut();
            let Some(upgrade) = this.h2_upgrade.take() else {
                return Ok(());
            };
            let Some(transport) = this.transport.as_ref().map(|t| t.clone_ref(py)) else {
                return Ok(());
            };
            let rest = this.core.take_kept();
            (
                upgrade,
                rest,
                transport,
                this.disp.clone(),
                this.dispatcher.clone_ref(py),
            )
        };
        let Some(config) = disp.http2.as_ref() else {
            return Ok(());
        };
        let Ok(core) = crate::http2::Connection::upgraded(config, &upgrade.settings) else {
            // HTTP2-Settings that are no valid SETTINGS: the request is refused.
            let answer = PyBytes::new(
                py,
                b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
            transport.call_method1(py, "write", (answer,))?;
            slf.borrow_mut().core.abort();
            return transport.call_method0(py, "close").map(drop);
        };
        let switching = PyBytes::new(py, crate::http2::upgrade::SWITCHING);
        transport.call_method1(py, "write", (switching,))?;
        let session = h2::Session::new(py, disp.clone(), dispatcher, transport, core)?;
        let session = Py::new(py, session)?;
        slf.borrow_mut().h2 = Some(session.clone_ref(py));
        let is_head = upgrade.head.starts_with(b"HEAD ");
        h2::Session::start_upgraded(session.bind(py), &upgrade.head, is_head)?;
        if rest.is_empty() {
            h2::Session::flush(session.bind(py))
        } else {
            h2::Session::data_received(session.bind(py), &rest)
        }
    }

    /// The client speaks HTTP/2: a session takes every callback from now on.
    fn start_h2(slf: &Bound<'_, Self>, first: &[u8]) -> PyResult<()> {
        let py = slf.py();
        let session = {
            let mut this = slf.borrow_mut();
            this.sniffing = false;
            let disp = this.disp.clone();
            let Some(config) = disp.http2.as_ref() else {
                return Ok(());
            };
            let Some(transport) = this.transport.as_ref().map(|t| t.clone_ref(py)) else {
                return Ok(());
            };
            let session = h2::Session::new(
                py,
                disp.clone(),
                this.dispatcher.clone_ref(py),
                transport,
                crate::http2::Connection::new(config),
            )?;
            let session = Py::new(py, session)?;
            this.h2 = Some(session.clone_ref(py));
            session
        };
        if first.is_empty() {
            h2::Session::flush(session.bind(py))
        } else {
            h2::Session::data_received(session.bind(py), first)
        }
    }
}

/// A socket's address as an ASGI scope gives it: `(host, port)` (an IPv6 address's
/// flow info and scope id left out), `(path, None)` for the server's Unix socket,
/// None for a peer without an address (a Unix socket's).
fn address_pair(address: &Bound<'_, PyAny>, server: bool) -> PyResult<Py<PyAny>> {
    let py = address.py();
    if let Ok(tuple) = address.cast::<pyo3::types::PyTuple>() {
        if tuple.len() >= 2 {
            return Ok((tuple.get_item(0)?, tuple.get_item(1)?)
                .into_pyobject(py)?
                .into_any()
                .unbind());
        }
    }
    if !server || address.is_none() {
        return Ok(py.None());
    }
    Ok((address, py.None()).into_pyobject(py)?.into_any().unbind())
}
