//! The loop-lag monitor's watchdog thread (python/veter/lagmonitor.py drives it).
//!
//! It notices an event loop that has not turned for the threshold without costing an
//! idle worker anything: the thread holds no GIL, and it does not wake the loop to
//! learn that it is idle. Every `period` it checks that the core has read since the
//! last look (a counter, `turned`), or else looks at the loop thread's current system
//! call (`/proc/self/task/<tid>/syscall`): a loop waiting in `epoll_wait` is idle, so
//! alive. A loop that is not waiting is either busy or blocked; the thread then asks
//! it to turn (one byte down a socket the loop reads with `add_reader`) and calls it
//! blocked once it has neither answered nor waited for the threshold. Where the system
//! call cannot be read (another OS, a locked-down /proc) every period asks, which is
//! what the old design cost always: a wakeup of the loop a period.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The system calls an event loop waits in: `epoll_wait`, `epoll_pwait`, `epoll_pwait2`.
#[cfg(target_arch = "x86_64")]
const WAIT_CALLS: &[i64] = &[232, 281, 441];
#[cfg(target_arch = "aarch64")]
const WAIT_CALLS: &[i64] = &[22, 441];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const WAIT_CALLS: &[i64] = &[];

/// Reads the core has taken from the loop: a loop that reads is turning, so the
/// watchdog need not look at it. Written by the loop thread only (a plain load and
/// store, no locked add); a watchdog that misses an update sees the next one. One
/// count per process: veter runs one loop a process (a program running several loops
/// in threads would have each watchdog take any loop's reads as its own's). The
/// connections read it too (`reads`): the first answer a task finishes after a read
/// is written at once, later ones at the loop iteration's end (`Shared::write_at_once`).
static TURNS: AtomicU64 = AtomicU64::new(0);

/// The loop handed the core some bytes (every `data_received`).
#[inline]
pub fn turned() {
    TURNS.store(
        TURNS.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
}

/// How many times the loop has handed the core bytes (wraps).
#[inline]
pub fn reads() -> u64 {
    TURNS.load(Ordering::Relaxed)
}

/// What the loop thread and the watchdog share.
struct Shared {
    /// Pings the loop has answered.
    answered: AtomicU64,
    /// Pings sent.
    asked: AtomicU64,
    /// Set by `stop`; the watchdog waits on `wake` so that stopping is prompt.
    stopped: Mutex<bool>,
    wake: Condvar,
}

/// The watchdog: `LagWatch(threshold, period, loop_tid, on_stall)` starts its thread;
/// the loop calls `answer` when `fileno()` is readable; `on_stall(seconds)` is called
/// (from the watchdog thread, with the GIL) once per stall, when the loop has been
/// blocked for `threshold` seconds.
#[pyclass(frozen, module = "veter._core")]
pub struct LagWatch {
    shared: Arc<Shared>,
    /// The loop's end of the ping socket; closed by `stop`.
    reader: Mutex<Option<UnixStream>>,
    fd: i32,
    thread: Mutex<Option<JoinHandle<()>>>,
}

#[pymethods]
impl LagWatch {
    #[new]
    fn new(threshold: f64, period: f64, loop_tid: i64, on_stall: Py<PyAny>) -> PyResult<Self> {
        if !(threshold > 0.0 && period > 0.0 && threshold.is_finite() && period.is_finite()) {
            return Err(PyValueError::new_err(
                "threshold and period must be positive seconds",
            ));
        }
        let (reader, writer) = UnixStream::pair()?;
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
        let shared = Arc::new(Shared {
            answered: AtomicU64::new(0),
            asked: AtomicU64::new(0),
            stopped: Mutex::new(false),
            wake: Condvar::new(),
        });
        let watch = Watch {
            shared: Arc::clone(&shared),
            writer,
            threshold: Duration::from_secs_f64(threshold),
            period: Duration::from_secs_f64(period),
            syscall: File::open(format!("/proc/self/task/{loop_tid}/syscall")).ok(),
            on_stall,
        };
        let thread = std::thread::Builder::new()
            .name("veter-lag-watch".into())
            .spawn(move || watch.run())?;
        Ok(Self {
            shared,
            fd: reader.as_raw_fd(),
            reader: Mutex::new(Some(reader)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The socket the loop reads (`loop.add_reader(watch.fileno(), watch.answer)`).
    fn fileno(&self) -> i32 {
        self.fd
    }

    /// The loop turned: take the ping and count it answered.
    fn answer(&self) {
        let reader = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(mut reader) = reader.as_ref() else {
            return;
        };
        let mut buf = [0u8; 64];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
        }
        self.shared.answered.fetch_add(1, Ordering::Release);
    }

    /// How many times the watchdog has asked the loop to turn (an idle loop is not asked).
    #[getter]
    fn pings(&self) -> u64 {
        self.shared.asked.load(Ordering::Relaxed)
    }

    /// Stop the thread and wait for it (without the GIL: a report may be waiting for
    /// it), then close the socket. The loop must have stopped reading it.
    fn stop(&self, py: Python<'_>) {
        *self
            .shared
            .stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_all();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            py.detach(|| {
                let _ = thread.join();
            });
        }
        self.reader
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

/// The watchdog thread's own state.
struct Watch {
    shared: Arc<Shared>,
    writer: UnixStream,
    threshold: Duration,
    period: Duration,
    /// The loop thread's `/proc/self/task/<tid>/syscall`, kept open and read again
    /// from its start each time (no path walk per look); None where it cannot be had.
    syscall: Option<File>,
    on_stall: Py<PyAny>,
}

impl Watch {
    fn run(self) {
        let mut seen = self.shared.answered.load(Ordering::Acquire);
        let mut turns = TURNS.load(Ordering::Relaxed);
        let mut alive_at = Instant::now();
        let mut asked = false;
        let mut reported = false;
        while self.sleep() {
            let now = Instant::now();
            let answered = self.shared.answered.load(Ordering::Acquire);
            let turned = TURNS.load(Ordering::Relaxed);
            if answered != seen || turned != turns || self.loop_waits() {
                seen = answered;
                turns = turned;
                alive_at = now;
                asked = false;
                reported = false;
                continue;
            }
            if !asked {
                asked = self.ask();
            }
            let blocked = now.duration_since(alive_at);
            if !reported && blocked >= self.threshold {
                reported = true;
                Python::attach(|py| {
                    if let Err(err) = self.on_stall.call1(py, (blocked.as_secs_f64(),)) {
                        err.write_unraisable(py, None);
                    }
                });
            }
        }
    }

    /// Wait a period; false once stopped.
    fn sleep(&self) -> bool {
        let stopped = self
            .shared
            .stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (stopped, _) = self
            .shared
            .wake
            .wait_timeout_while(stopped, self.period, |stopped| !*stopped)
            .unwrap_or_else(PoisonError::into_inner);
        !*stopped
    }

    /// Whether the loop thread is waiting for events now (so not blocked).
    fn loop_waits(&self) -> bool {
        let Some(file) = &self.syscall else {
            return false;
        };
        // The call's number comes first ("232 0x3 ..."), or "running", or "-1 ..."
        // when the thread is in no system call.
        let mut buf = [0u8; 32];
        let Ok(len) = file.read_at(&mut buf, 0) else {
            return false;
        };
        let text = std::str::from_utf8(&buf[..len]).unwrap_or("");
        let call = text
            .split_ascii_whitespace()
            .next()
            .and_then(|n| n.parse::<i64>().ok());
        call.is_some_and(|call| WAIT_CALLS.contains(&call))
    }

    /// Ask the loop to turn; whether the ping went out.
    fn ask(&self) -> bool {
        match (&self.writer).write(&[1]) {
            Ok(1) => {
                self.shared.asked.fetch_add(1, Ordering::Relaxed);
                true
            }
            Ok(_) => false,
            Err(err) => err.kind() == ErrorKind::WouldBlock,
        }
    }
}
