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

use super::Connection;
use crate::body_stream::BodyStream;
use crate::http1::error::ParseError;
use crate::http1::parse::BodyKind;
use crate::request::{Body, Parts};

/// The reader of a body being streamed, as the connection core holds it.
pub struct Upload {
    pub stream: Py<BodyStream>,
}

impl Drop for Upload {
    /// However the connection stops reading (closed, answered early, an error), a
    /// handler still waiting for the body learns it will not come.
    fn drop(&mut self) {
        Python::attach(|py| self.stream.get().finish(py, Some((0, String::new()))));
    }
}

impl Connection {
    /// The body of a request whose route streams it: its bytes go to a `BodyStream`
    /// as they arrive (the handler starts at once).
    pub(super) fn start_upload(
        &mut self,
        py: Python<'_>,
        kind: &BodyKind,
        expect_continue: bool,
    ) -> PyResult<Body> {
        let conn = self.self_ref.as_ref().map(|c| c.clone_ref(py).into_any());
        // A hosted ASGI app reads it as messages (`receive`).
        let stream = if self.disp.asgi.is_some() {
            BodyStream::for_asgi(conn)
        } else {
            BodyStream::new(conn)
        };
        let stream = Py::new(py, stream)?;
        let body = Body::Stream(stream.clone_ref(py));
        let limits = &self.disp.limits;
        self.core
            .stream_body(Upload { stream }, kind, expect_continue, limits);
        Ok(body)
    }

    /// Hands body bytes to the streamed body being read; pauses reading when more
    /// than its high mark waits unread.
    pub(super) fn feed_upload(&mut self, py: Python<'_>, bytes: Vec<u8>) {
        let Some(upload) = self.core.upload() else {
            return;
        };
        let stream = upload.stream.clone_ref(py);
        if stream.get().push(py, bytes) {
            self.core.pauses.set(crate::conn::Pause::Upload);
        }
    }

    /// The streamed body's last bytes: it is complete, or broken (the handler's read
    /// raises `HTTPException` and the connection closes after its answer: where the
    /// next request would start is unknown).
    pub(super) fn end_upload(
        py: Python<'_>,
        bytes: Vec<u8>,
        end: &Result<(), ParseError>,
        upload: Upload,
    ) {
        let failure = end
            .as_ref()
            .err()
            .map(|e| (e.status(), e.reason().to_owned()));
        upload.stream.get().push_last(py, bytes, failure);
    }

    /// True when `parts` is a request whose streamed body was not read to its end
    /// (still arriving, or failed): its answer then closes the connection, since the
    /// rest of the body is never read.
    pub(super) fn upload_unfinished(parts: &Parts) -> bool {
        matches!(&parts.body, Body::Stream(s) if !s.get().is_whole())
    }

    /// The body timeout for a streamed body: its handler gets a 408 `HTTPException`.
    pub(super) fn expire_upload(&mut self, py: Python<'_>) {
        if let Some(upload) = self.core.upload() {
            let stream = upload.stream.clone_ref(py);
            stream.get().finish(
                py,
                Some((408, "request body not received in time".to_owned())),
            );
            self.core.stop_after_response();
            self.may_be_sending = true;
            if self.disp.asgi.is_some() {
                self.asgi_body_failed(py, &stream);
            }
        }
    }
}

impl Connection {
    /// Reads again once the handler took a paused upload below `LOW` (called soon
    /// after by the loop, see `BodyStream.__anext__`).
    pub(super) fn resume_upload(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::with_borrow(slf, |this, py| {
            if !this.core.pauses.contains(crate::conn::Pause::Upload) {
                return Ok(());
            }
            let more = this
                .core
                .upload()
                .map_or(true, |upload| upload.stream.get().wants_more());
            if !more {
                return Ok(());
            }
            match this.core.resume_upload() {
                Some(held) => this.process(py, &pyo3::types::PyBytes::new(py, &held), 0),
                None => Ok(()),
            }
        })
    }
}
