//! Request bodies as a stream: `async for chunk in request.stream()` on routes
//! declared with `stream_body=True`.
//!
//! Such a route's handler starts as soon as the head is read; the body's bytes are
//! handed to its `BodyStream` as they arrive (chunked coding decoded, the size limit
//! enforced as usual). When more than `HIGH` bytes wait unread, the connection stops
//! reading from the socket until the handler has taken the stream below `LOW`, so an
//! upload never sits in memory whole, however large.
//!
//! Endings: the body's end stops the iteration; a body over the size limit or badly
//! chunked raises `HTTPException` (413 / 400) in the handler and the connection closes
//! after the answer; a client that goes away raises `ConnectionResetError`. A
//! handler that answers before reading the whole body gets its answer sent with
//! `Connection: close` (the rest of the body is never read).

use pyo3::prelude::*;

use super::{Connection, Reading};
use crate::body_stream::BodyStream;
use crate::dispatcher::Dispatcher;
use crate::http1::body::ChunkedDecoder;
use crate::request::{Body, Parts};
use crate::router::tree::Lookup;

/// How the rest of a streamed body is framed.
pub enum Framing {
    Length { remaining: u64 },
    Chunked(Box<ChunkedDecoder>),
}

/// The connection's side of a body being streamed.
pub struct Upload {
    pub framing: Framing,
    pub stream: Py<BodyStream>,
}

impl Drop for Upload {
    /// However the connection stops reading (closed, answered early, an error), a
    /// handler still waiting for the body learns it will not come.
    fn drop(&mut self) {
        Python::attach(|py| self.stream.get().finish(py, Some((0, String::new()))));
    }
}

impl Dispatcher {
    /// Whether the route for this head takes its body as a stream.
    fn streams_body(&self, py: Python<'_>, parts: &Parts) -> bool {
        if !self.has_stream_routes {
            return false;
        }
        let head = &parts.buf.bind(py).as_bytes()[parts.base..];
        let method = std::str::from_utf8(&head[parts.method.clone()]).unwrap_or("");
        let path = std::str::from_utf8(&head[parts.path.clone()]).unwrap_or("");
        match self.router.lookup(method, path) {
            Lookup::Found { route, .. } => self.routes[route].stream_body,
            _ => false,
        }
    }
}

impl Dispatcher {
    /// Whether the route for this head is a WebSocket route.
    pub(super) fn is_websocket(&self, py: Python<'_>, parts: &Parts) -> bool {
        if !self.has_websocket_routes {
            return false;
        }
        let head = &parts.buf.bind(py).as_bytes()[parts.base..];
        let method = std::str::from_utf8(&head[parts.method.clone()]).unwrap_or("");
        let path = std::str::from_utf8(&head[parts.path.clone()]).unwrap_or("");
        match self.router.lookup(method, path) {
            Lookup::Found { route, .. } => self.routes[route].websocket,
            _ => false,
        }
    }
}

impl Connection {
    pub(super) fn streams_body(&self, py: Python<'_>, parts: &Parts) -> bool {
        self.disp.get().streams_body(py, parts)
    }

    /// Starts the handler of a route that streams its body; the body's bytes then go
    /// to its `BodyStream` as they arrive.
    pub(super) fn start_upload(
        &mut self,
        py: Python<'_>,
        mut parts: Parts,
        length: Option<u64>,
        expect_continue: bool,
        framing: crate::http1::encode::Framing,
    ) -> PyResult<()> {
        let framing_kind = match length {
            Some(n) => Framing::Length { remaining: n },
            None => Framing::Chunked(Box::new(ChunkedDecoder::new(&self.disp.get().limits))),
        };
        let conn = self.self_ref.as_ref().map(|c| c.clone_ref(py).into_any());
        let stream = Py::new(py, BodyStream::new(conn))?;
        parts.body = Body::Stream(stream.clone_ref(py));
        self.reading = Reading::Stream(Box::new(Upload {
            framing: framing_kind,
            stream,
        }));
        if expect_continue {
            self.emit_bytes(crate::http1::encode::CONTINUE.to_vec());
        }
        self.dispatch(py, parts, framing)
    }

    /// Hands the body bytes at `data[*pos..]` to the streamed body being read;
    /// returns whether parsing should go on (the body ended and more may follow).
    pub(super) fn feed_upload(&mut self, py: Python<'_>, data: &[u8], pos: &mut usize) -> bool {
        let Reading::Stream(upload) = &mut self.reading else {
            return true;
        };
        if self.paused_for_upload {
            self.buf.extend_from_slice(&data[*pos..]);
            return false;
        }
        let (bytes, done, error) = match &mut upload.framing {
            Framing::Length { remaining } => {
                let avail = data.len() - *pos;
                let take = usize::try_from(*remaining).map_or(avail, |r| r.min(avail));
                let bytes = data[*pos..*pos + take].to_vec();
                *pos += take;
                *remaining -= take as u64;
                (bytes, *remaining == 0, None)
            }
            Framing::Chunked(decoder) => {
                let mut out = Vec::new();
                match decoder.decode(&data[*pos..], &mut out) {
                    Ok((used, done)) => {
                        *pos += used;
                        (out, done, None)
                    }
                    Err(e) => (out, false, Some((e.status(), e.reason().to_owned()))),
                }
            }
        };
        let stream = upload.stream.clone_ref(py);
        let pause = stream.get().push(py, bytes);
        if let Some(failure) = error {
            // The handler answers (its read raises HTTPException); then the connection
            // closes: where the next request would start is unknown.
            stream.get().finish(py, Some(failure));
            self.stop_after_response();
            return false;
        }
        if done {
            stream.get().finish(py, None);
            self.reading = Reading::Head;
            return true;
        }
        if pause {
            self.paused_for_upload = true;
            self.buf.extend_from_slice(&data[*pos..]);
        }
        false
    }

    /// True when `parts` is a request whose streamed body is still being read: its
    /// answer then closes the connection (the rest of the body is never read).
    pub(super) fn upload_open(parts: &Parts) -> bool {
        matches!(&parts.body, Body::Stream(s) if s.get().is_open())
    }

    /// The body timeout for a streamed body: its handler gets a 408 `HTTPException`.
    pub(super) fn expire_upload(&mut self, py: Python<'_>) {
        if let Reading::Stream(upload) = &self.reading {
            let stream = upload.stream.clone_ref(py);
            stream.get().finish(
                py,
                Some((408, "request body not received in time".to_owned())),
            );
            self.stop_after_response();
        }
    }
}

impl Connection {
    /// Reads again once the handler took a paused upload below `LOW` (called soon
    /// after by the loop, see `BodyStream.__anext__`).
    pub(super) fn resume_upload(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::with_borrow(slf, |this, py| {
            if !this.paused_for_upload {
                return Ok(());
            }
            let more = match &this.reading {
                Reading::Stream(upload) => upload.stream.get().wants_more(),
                _ => true,
            };
            if more {
                this.paused_for_upload = false;
                if !this.buf.is_empty() {
                    let chunk = pyo3::types::PyBytes::new(py, &std::mem::take(&mut this.buf));
                    return this.process(py, &chunk, 0);
                }
            }
            Ok(())
        })
    }
}
