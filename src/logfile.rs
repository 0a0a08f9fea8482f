//! `LogFile`: whole log lines, buffered per process, appended without locks.
//!
//! Several worker processes write to one file without losing, tearing or
//! interleaving lines, and without a cross-process lock:
//! - the file is opened with `O_APPEND`, so each `write(2)` lands at the end as one
//!   piece (Linux holds the inode lock for a whole write on a regular file);
//! - lines are gathered in a per-process buffer and written only as whole lines:
//!   at the end of the loop iteration that produced them (the server schedules
//!   `flush` with `call_soon` when the buffer stops being empty) or at once when
//!   the buffer passes its size;
//! - on a pipe (stdout under a supervisor) each write is at most `PIPE_BUF` bytes
//!   cut at line ends, the size the kernel keeps whole.
//!
//! Rotation: the master renames the file, then tells workers to `reopen`; lines
//! written in between land in the renamed file, so none are lost.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::logtime::Stamp;

/// The largest write a pipe keeps whole (POSIX `PIPE_BUF` on Linux).
const PIPE_BUF: usize = 4096;

enum Target {
    /// A file veter opened (path given): closed when replaced or dropped.
    Owned { file: File, path: String },
    /// A descriptor owned by someone else (stdout, stderr), written with Python's
    /// `os.write` (once per flush) so this crate needs no `unsafe`; never closed.
    Borrowed { fd: i32, os_write: Py<PyAny> },
    /// After `close()`: lines are counted as dropped.
    Closed,
}

impl Target {
    fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        match self {
            Target::Owned { file, .. } => write_all(file, data),
            Target::Borrowed { fd, os_write } => write_borrowed(*fd, os_write, data),
            Target::Closed => Err(std::io::Error::other("log file is closed")),
        }
    }
}

/// Writes all of `data` to a descriptor someone else owns, with `os.write`. Out
/// of line: inlined, the thread-local that `Python::attach` reads was looked up at
/// the top of every flush, whatever the target (~20 instructions).
#[inline(never)]
fn write_borrowed(fd: i32, os_write: &Py<PyAny>, data: &[u8]) -> std::io::Result<()> {
    Python::attach(|py| {
        let mut rest = data;
        while !rest.is_empty() {
            let chunk = pyo3::types::PyBytes::new(py, rest);
            match os_write
                .call1(py, (fd, chunk))
                .and_then(|n| n.extract::<usize>(py))
            {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => rest = &rest[n.min(rest.len())..],
                Err(err) if err.is_instance_of::<pyo3::exceptions::PyInterruptedError>(py) => {}
                Err(err) if err.is_instance_of::<pyo3::exceptions::PyBlockingIOError>(py) => {
                    std::thread::yield_now();
                }
                Err(err) => return Err(std::io::Error::other(err.to_string())),
            }
        }
        Ok(())
    })
}

struct Inner {
    target: Target,
    buf: Vec<u8>,
    /// Largest single write: `PIPE_BUF` on pipes, the buffer size otherwise.
    max_write: usize,
    /// The access log's time text of the last millisecond written: kept under the
    /// buffer's lock, so that a line takes one lock, not two.
    stamp: Stamp,
    /// Records appended (counted under the lock: no atomic add per line).
    lines: u64,
}

#[pyclass(module = "veter._core", name = "LogFile", frozen, weakref)]
pub struct LogFile {
    inner: Mutex<Inner>,
    buffer_bytes: usize,
    /// Called (no arguments) when the buffer stops being empty; None: write at once.
    scheduler: Mutex<Option<Py<PyAny>>>,
    scheduled: AtomicBool,
    /// Lines dropped because the write failed (disk full, closed descriptor).
    dropped: AtomicU64,
}

fn open_append(path: &str) -> PyResult<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| PyOSError::new_err(format!("cannot open log file {path}: {e}")))
}

fn max_write_for(file: &File, buffer_bytes: usize) -> usize {
    let is_pipe = file
        .metadata()
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_socket());
    if is_pipe {
        PIPE_BUF
    } else {
        buffer_bytes.max(PIPE_BUF)
    }
}

/// Writes all of `data`, retrying short writes and interruptions.
fn write_all(file: &mut File, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        match file.write(data) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Inner {
    /// Writes the buffer in pieces of at most `max_write` bytes cut after a newline.
    /// Returns the number of lines lost to a failed write.
    fn flush(&mut self) -> u64 {
        let mut start = 0;
        let mut lost = 0;
        let data = std::mem::take(&mut self.buf);
        while start < data.len() {
            let mut end = data.len().min(start + self.max_write);
            if end < data.len() {
                // Cut after the last newline in the piece; a single longer line goes alone.
                end = match memchr::memrchr(b'\n', &data[start..end]) {
                    Some(i) => start + i + 1,
                    None => memchr::memchr(b'\n', &data[end..]).map_or(data.len(), |i| end + i + 1),
                };
            }
            if self.target.write_all(&data[start..end]).is_err() {
                lost += bytecount(&data[start..end]);
            }
            start = end;
        }
        self.buf = data;
        self.buf.clear();
        lost
    }
}

fn bytecount(data: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', data).count() as u64
}

impl LogFile {
    fn locked(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends one record; `build` writes it and its newline into the buffer
    /// (with the time text kept for the access log's lines).
    pub fn append_with(&self, py: Python<'_>, build: impl FnOnce(&mut Vec<u8>, &mut Stamp)) {
        let (was_empty, full) = {
            let mut guard = self.locked();
            let inner = &mut *guard;
            let was_empty = inner.buf.is_empty();
            build(&mut inner.buf, &mut inner.stamp);
            inner.lines += 1;
            (was_empty, inner.buf.len() >= self.buffer_bytes)
        };
        if full {
            self.flush_now();
        } else if was_empty {
            self.schedule(py);
        }
    }

    fn schedule(&self, py: Python<'_>) {
        // A `Bound` clone: dropping it is a plain decref, where dropping a `Py`
        // first asks a thread-local whether this thread is attached.
        let scheduler = self
            .scheduler
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|s| s.bind(py).clone());
        match scheduler {
            None => self.flush_now(),
            Some(s) => {
                if !self.scheduled.swap(true, Ordering::Relaxed) && s.call0().is_err() {
                    self.scheduled.store(false, Ordering::Relaxed);
                    self.flush_now();
                }
            }
        }
    }

    fn flush_now(&self) {
        let lost = self.locked().flush();
        if lost > 0 {
            self.dropped.fetch_add(lost, Ordering::Relaxed);
        }
    }
}

#[pymethods]
impl LogFile {
    /// `destination`: a path (opened for appending, created if missing) or a file
    /// descriptor the caller keeps open (1 for stdout, 2 for stderr).
    #[new]
    #[pyo3(signature = (destination, *, buffer_bytes = 65536))]
    fn new(destination: &Bound<'_, PyAny>, buffer_bytes: usize) -> PyResult<Self> {
        if buffer_bytes == 0 {
            return Err(PyValueError::new_err("buffer_bytes must be at least 1"));
        }
        let py = destination.py();
        let (target, max_write) = if let Ok(fd) = destination.extract::<i32>() {
            if fd < 0 {
                return Err(PyValueError::new_err("file descriptor must be >= 0"));
            }
            let os = py.import("os")?;
            let mode: u32 = os
                .call_method1("fstat", (fd,))?
                .getattr("st_mode")?
                .extract()?;
            let stat = py.import("stat")?;
            let is_pipe = stat.call_method1("S_ISFIFO", (mode,))?.is_truthy()?
                || stat.call_method1("S_ISSOCK", (mode,))?.is_truthy()?;
            let max_write = if is_pipe {
                PIPE_BUF
            } else {
                buffer_bytes.max(PIPE_BUF)
            };
            let os_write = os.getattr("write")?.unbind();
            (Target::Borrowed { fd, os_write }, max_write)
        } else {
            let path: String = destination.extract()?;
            if path.is_empty() {
                return Err(PyValueError::new_err("log file path is empty"));
            }
            let file = open_append(&path)?;
            let max_write = max_write_for(&file, buffer_bytes);
            (Target::Owned { file, path }, max_write)
        };
        Ok(LogFile {
            inner: Mutex::new(Inner {
                target,
                buf: Vec::with_capacity(buffer_bytes.min(1 << 20)),
                max_write,
                stamp: Stamp::NONE,
                lines: 0,
            }),
            buffer_bytes,
            scheduler: Mutex::new(None),
            scheduled: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
        })
    }

    /// Appends one record (a trailing newline is added). A record with newlines
    /// inside (a traceback) is kept together in one write unless it is larger
    /// than the buffer.
    fn write(&self, py: Python<'_>, record: &str) {
        let record = record.strip_suffix('\n').unwrap_or(record);
        self.append_with(py, |buf, _| {
            buf.extend_from_slice(record.as_bytes());
            buf.push(b'\n');
        });
    }

    /// Writes the buffered lines now.
    fn flush(&self) {
        self.scheduled.store(false, Ordering::Relaxed);
        self.flush_now();
    }

    /// `scheduler()` is called when the buffer stops being empty and must arrange
    /// a `flush()` soon (the server passes `lambda: loop.call_soon(log.flush)`).
    /// None: every line is written at once.
    fn set_scheduler(&self, scheduler: Option<Py<PyAny>>) {
        self.flush_now();
        self.scheduled.store(false, Ordering::Relaxed);
        *self
            .scheduler
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = scheduler;
    }

    /// Flushes, then opens the path again (after the file was renamed by rotation
    /// or logrotate). A descriptor given by the caller is kept as it is.
    fn reopen(&self) -> PyResult<()> {
        let mut inner = self.locked();
        let lost = inner.flush();
        self.dropped.fetch_add(lost, Ordering::Relaxed);
        if let Target::Owned { path, .. } = &inner.target {
            let path = path.clone();
            let file = open_append(&path)?;
            inner.max_write = max_write_for(&file, self.buffer_bytes);
            inner.target = Target::Owned { file, path };
        }
        Ok(())
    }

    /// Writes what is buffered and closes the file (a descriptor given by the
    /// caller is left open). Lines written afterwards are dropped.
    fn close(&self) {
        let mut inner = self.locked();
        let lost = inner.flush();
        self.dropped.fetch_add(lost, Ordering::Relaxed);
        inner.target = Target::Closed;
    }

    /// The path, or None for a descriptor given by the caller.
    #[getter]
    fn path(&self) -> Option<String> {
        match &self.locked().target {
            Target::Owned { path, .. } => Some(path.clone()),
            Target::Borrowed { .. } | Target::Closed => None,
        }
    }

    #[getter]
    fn fileno(&self) -> i32 {
        match &self.locked().target {
            Target::Owned { file, .. } => file.as_raw_fd(),
            Target::Borrowed { fd, .. } => *fd,
            Target::Closed => -1,
        }
    }

    /// Lines appended since this object was made.
    #[getter]
    fn lines(&self) -> u64 {
        self.locked().lines
    }

    /// Lines lost because a write failed.
    #[getter]
    fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Bytes waiting in the buffer.
    #[getter]
    fn buffered(&self) -> usize {
        self.locked().buf.len()
    }
}

impl Drop for LogFile {
    fn drop(&mut self) {
        self.flush_now();
    }
}
