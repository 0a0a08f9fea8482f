//! The transport an HTTP/2 stream's HTTP/1.1 connection writes to.
//!
//! It looks to that connection (and to a WebSocket or streamed answer that takes
//! it over) like an asyncio transport; what it is given goes to the HTTP/2
//! session (`session.rs`), which reads the answer back (`http2::answer`) and frames
//! it. One lives as long as its connection, across the streams that connection
//! serves in turn; `stream` is 0 while it waits in the session's pool.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::session::Session;

#[pyclass(module = "veter._core", name = "StreamTransport")]
pub struct StreamTransport {
    /// The session; None once it has let go of this transport.
    pub(super) session: Option<Py<Session>>,
    /// The stream served now (0: none, the connection is idle).
    pub(super) stream: u32,
    /// The session's own transport, asked for `get_extra_info`.
    pub(super) real: Py<PyAny>,
    /// The protocol that reads from this transport (the connection, or what took it over).
    pub(super) protocol: Py<PyAny>,
    pub(super) closing: bool,
    pub(super) reading: bool,
}

// An asyncio transport's methods, some of which have nothing to read here.
#[allow(clippy::unused_self)]
#[pymethods]
impl StreamTransport {
    fn write(slf: &Bound<'_, Self>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(bytes) = data.cast::<PyBytes>() {
            Self::write_bytes(slf, bytes.as_bytes())
        } else {
            let bytes: Vec<u8> = data.extract()?;
            Self::write_bytes(slf, &bytes)
        }
    }

    fn writelines(slf: &Bound<'_, Self>, lines: &Bound<'_, PyAny>) -> PyResult<()> {
        for item in lines.try_iter()? {
            Self::write(slf, &item?)?;
        }
        Ok(())
    }

    fn close(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::end(slf, false)
    }

    fn abort(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::end(slf, true)
    }

    fn is_closing(&self) -> bool {
        self.closing
    }

    fn can_write_eof(&self) -> bool {
        false
    }

    fn write_eof(&self) -> PyResult<()> {
        Err(pyo3::exceptions::PyNotImplementedError::new_err(
            "an HTTP/2 stream is not half-closed by its connection",
        ))
    }

    fn pause_reading(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::set_reading(slf, false)
    }

    fn resume_reading(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::set_reading(slf, true)
    }

    fn is_reading(&self) -> bool {
        self.reading && !self.closing
    }

    /// What the session's transport says, but no socket: the stream shares it,
    /// so nothing may write to it past the session (`sendfile`, the queue timeout's
    /// kernel wait).
    #[pyo3(signature = (name, default=None))]
    fn get_extra_info(
        &self,
        py: Python<'_>,
        name: &str,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let default = default.unwrap_or_else(|| py.None());
        if name == "socket" {
            return Ok(default);
        }
        self.real
            .call_method1(py, "get_extra_info", (name, default))
    }

    fn set_protocol(&mut self, protocol: Py<PyAny>) {
        self.protocol = protocol;
    }

    fn get_protocol(&self, py: Python<'_>) -> Py<PyAny> {
        self.protocol.clone_ref(py)
    }

    /// Answer bytes not yet sent (waiting for the peer's flow-control window).
    fn get_write_buffer_size(slf: &Bound<'_, Self>) -> usize {
        let this = slf.borrow();
        match &this.session {
            Some(s) => s.bind(slf.py()).borrow().buffered(this.stream),
            None => 0,
        }
    }

    #[pyo3(signature = (high=None, low=None))]
    fn set_write_buffer_limits(&self, high: Option<usize>, low: Option<usize>) {
        // The session's marks apply to every stream (`session.rs`).
        let _ = (high, low);
    }

    fn __repr__(&self) -> String {
        format!("<StreamTransport stream={}>", self.stream)
    }
}

impl StreamTransport {
    /// `write` without a bytes object: the stream's connection calls it directly.
    pub(crate) fn write_bytes(slf: &Bound<'_, Self>, data: &[u8]) -> PyResult<()> {
        let py = slf.py();
        let (session, stream) = {
            let this = slf.borrow();
            if this.closing {
                return Ok(());
            }
            match &this.session {
                Some(s) => (s.clone_ref(py), this.stream),
                None => return Ok(()),
            }
        };
        Session::stream_write(session.bind(py), stream, data)
    }

    fn end(slf: &Bound<'_, Self>, abort: bool) -> PyResult<()> {
        let py = slf.py();
        let (session, stream) = {
            let mut this = slf.borrow_mut();
            if this.closing {
                return Ok(());
            }
            this.closing = true;
            (this.session.as_ref().map(|s| s.clone_ref(py)), this.stream)
        };
        if let Some(session) = session {
            Session::stream_closed(session.bind(py), slf, stream, abort)?;
        }
        Ok(())
    }

    fn set_reading(slf: &Bound<'_, Self>, reading: bool) -> PyResult<()> {
        let py = slf.py();
        let (session, stream) = {
            let mut this = slf.borrow_mut();
            if this.reading == reading {
                return Ok(());
            }
            this.reading = reading;
            (this.session.as_ref().map(|s| s.clone_ref(py)), this.stream)
        };
        match session {
            Some(session) if stream != 0 => Session::set_reading(session.bind(py), stream, reading),
            _ => Ok(()),
        }
    }
}
