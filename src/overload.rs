//! Overload control for one worker: a cap on handlers in flight, and shedding of
//! requests that have already waited too long.
//!
//! - `max_concurrency`: above it, a connection with a new request stops being read
//!   (its bytes stay in its buffer, the rest in the kernel) and queues here; finished
//!   handlers wake the queue in arrival order.
//! - `queue_timeout`: a request whose wait before its handler would start is already
//!   longer gets `503` with `Retry-After` at once, costing only that encoding. The
//!   wait is known exactly for connections queued here; for requests read in a busy
//!   loop iteration it is estimated from when the iteration began (the first read
//!   after the previous iteration's end, marked with one `call_soon` per iteration),
//!   which never overstates the wait.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::protocol::Connection;

pub struct Overload {
    /// 0: no cap.
    pub max_concurrency: usize,
    pub queue_timeout: Option<Duration>,
    in_flight: AtomicUsize,
    waiting: Mutex<VecDeque<Py<Connection>>>,
    iteration_start: Mutex<Option<Instant>>,
    marker_pending: AtomicBool,
    shed: AtomicU64,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Single-threaded use under the GIL; a poisoned lock only means a panic elsewhere.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Overload {
    pub fn new(max_concurrency: usize, queue_timeout: Option<Duration>) -> Self {
        Overload {
            max_concurrency,
            queue_timeout,
            in_flight: AtomicUsize::new(0),
            waiting: Mutex::new(VecDeque::new()),
            iteration_start: Mutex::new(None),
            marker_pending: AtomicBool::new(false),
            shed: AtomicU64::new(0),
        }
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub fn shed_count(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }

    pub fn note_shed(&self) {
        self.shed.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether a new handler may start now.
    pub fn has_room(&self) -> bool {
        self.max_concurrency == 0 || self.in_flight() < self.max_concurrency
    }

    pub fn started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    pub fn finished(&self) {
        let _ = self
            .in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// Queues a connection that has a request to handle but no room for it.
    pub fn wait(&self, conn: Py<Connection>) {
        locked(&self.waiting).push_back(conn);
    }

    /// The next queued connection, while there is room for one more handler.
    pub fn next_waiting(&self) -> Option<Py<Connection>> {
        if !self.has_room() {
            return None;
        }
        locked(&self.waiting).pop_front()
    }

    /// When the current loop iteration began reading; `event_loop` gets a marker
    /// callback that ends the iteration, scheduled once per iteration.
    pub fn iteration_start(
        &self,
        py: Python<'_>,
        now: Instant,
        event_loop: &Py<PyAny>,
        marker: &Py<PyAny>,
    ) -> Instant {
        if self.queue_timeout.is_none() {
            return now;
        }
        if !self.marker_pending.swap(true, Ordering::Relaxed) {
            *locked(&self.iteration_start) = Some(now);
            if event_loop.call_method1(py, "call_soon", (marker,)).is_err() {
                self.marker_pending.store(false, Ordering::Relaxed);
            }
            return now;
        }
        locked(&self.iteration_start).unwrap_or(now)
    }

    /// Called by the marker: the iteration that read requests is over.
    pub fn end_iteration(&self) {
        self.marker_pending.store(false, Ordering::Relaxed);
    }

    /// Whether a request that has waited `waited` should be shed.
    pub fn too_late(&self, waited: Duration) -> bool {
        self.queue_timeout.is_some_and(|limit| waited > limit)
    }
}
