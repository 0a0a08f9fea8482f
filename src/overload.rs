//! Overload control for one worker: a cap on handlers in flight, and shedding of
//! requests that have already waited too long.
//!
//! - `max_concurrency`: above it, a connection with a new request stops being read
//!   (its bytes stay in its buffer, the rest in the kernel) and queues here; finished
//!   handlers wake the queue in arrival order. Reaching the cap and falling below it
//!   are reported to a callback (the server stops and resumes accepting, so the other
//!   workers take new connections meanwhile).
//! - `queue_timeout`: a request whose wait before its handler would start is already
//!   longer gets `503` with `Retry-After` at once, costing only that encoding. The
//!   wait is known exactly for connections queued here; for requests read in a busy
//!   loop iteration it is estimated from when the iteration began (the first read
//!   after the previous iteration's end, marked with one `call_soon` per iteration),
//!   which never overstates the wait.
//! - Bytes that waited in the kernel before the loop read them (the loop was busy, or
//!   the connection was still in the accept queue: uvloop accepts one connection per
//!   iteration) are invisible to that estimate. When they may have waited longer than
//!   the timeout (a connection's first read, or the previous reading iteration began
//!   more than `queue_timeout` ago), the kernel is asked: `TCP_INFO`'s
//!   `tcpi_last_data_recv` is the age of the last segment received, in jiffies shown
//!   as milliseconds; one jiffy is subtracted so it never overstates either.
//! - A saturated worker (the handlers of the previous reading iteration ran longer
//!   than half the queue timeout) defers its `def` handlers to tasks, so every read
//!   of an iteration happens before any handler runs; a request is then shed at read
//!   time when its wait so far plus the work queued ahead of it (deferred handlers x
//!   their recent average cost) is past the timeout, instead of after that work.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

/// `C`: what waits for a handler slot (the connection; generic so that this module
/// needs nothing of the protocol).
pub struct Overload<C> {
    /// 0: no cap.
    pub max_concurrency: usize,
    pub queue_timeout: Option<Duration>,
    in_flight: AtomicUsize,
    waiting: Mutex<VecDeque<C>>,
    iteration_start: Mutex<Option<Instant>>,
    /// When the reading iteration before the current one began.
    previous_start: Mutex<Option<Instant>>,
    marker_pending: AtomicBool,
    shed: AtomicU64,
    /// One kernel jiffy in ms: the smallest non-zero `tcpi_last_data_recv` seen,
    /// starting from 10 (HZ=100, the coarsest common kernel tick).
    jiffy_ms: AtomicU32,
    /// Handler time (ns) since the current reading iteration began, and in the one before.
    work_ns: AtomicU64,
    last_work_ns: AtomicU64,
    /// Deferred `def` handlers not started yet, and the recent average cost of a
    /// `def` handler (ns).
    deferred: AtomicUsize,
    cost_ns: AtomicU64,
    /// Called with `True` when `max_concurrency` is reached, `False` when below it again.
    on_saturation: Mutex<Option<Py<PyAny>>>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Single-threaded use under the GIL; a poisoned lock only means a panic elsewhere.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<C> Overload<C> {
    pub fn new(max_concurrency: usize, queue_timeout: Option<Duration>) -> Self {
        Overload {
            max_concurrency,
            queue_timeout,
            in_flight: AtomicUsize::new(0),
            waiting: Mutex::new(VecDeque::new()),
            iteration_start: Mutex::new(None),
            previous_start: Mutex::new(None),
            marker_pending: AtomicBool::new(false),
            shed: AtomicU64::new(0),
            jiffy_ms: AtomicU32::new(10),
            work_ns: AtomicU64::new(0),
            last_work_ns: AtomicU64::new(0),
            deferred: AtomicUsize::new(0),
            cost_ns: AtomicU64::new(0),
            on_saturation: Mutex::new(None),
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

    pub fn started(&self, py: Python<'_>) {
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        if self.max_concurrency > 0 && now == self.max_concurrency {
            self.report_saturation(py, true);
        }
    }

    pub fn finished(&self, py: Python<'_>) {
        let before = self
            .in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        if self.max_concurrency > 0 && before == Ok(self.max_concurrency) {
            self.report_saturation(py, false);
        }
    }

    pub fn set_saturation_callback(&self, callback: Option<Py<PyAny>>) {
        *locked(&self.on_saturation) = callback;
    }

    fn report_saturation(&self, py: Python<'_>, saturated: bool) {
        let callback = locked(&self.on_saturation)
            .as_ref()
            .map(|c| c.clone_ref(py));
        if let Some(callback) = callback {
            if let Err(err) = callback.call1(py, (saturated,)) {
                err.write_unraisable(py, Some(callback.bind(py)));
            }
        }
    }

    /// Queues a connection that has a request to handle but no room for it.
    pub fn wait(&self, conn: C) {
        locked(&self.waiting).push_back(conn);
    }

    /// The next queued connection, while there is room for one more handler.
    pub fn next_waiting(&self) -> Option<C> {
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
            let previous = locked(&self.iteration_start).replace(now);
            *locked(&self.previous_start) = previous;
            let work = self.work_ns.swap(0, Ordering::Relaxed);
            self.last_work_ns.store(work, Ordering::Relaxed);
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

    /// Whether bytes read now may have waited in the kernel longer than the queue
    /// timeout: data that arrived after the previous reading iteration began was
    /// read in it or is younger than it.
    pub fn may_be_stale(&self, now: Instant) -> bool {
        let Some(limit) = self.queue_timeout else {
            return false;
        };
        match *locked(&self.previous_start) {
            Some(start) => now.duration_since(start) > limit,
            None => true,
        }
    }

    /// How long the bytes just read on `sock` waited in the kernel, at least (zero
    /// when the kernel cannot tell).
    pub fn kernel_wait(&self, py: Python<'_>, sock: &Py<PyAny>) -> Duration {
        let Some(age_ms) = last_data_recv_ms(py, sock) else {
            return Duration::ZERO;
        };
        if age_ms > 0 {
            self.jiffy_ms.fetch_min(age_ms, Ordering::Relaxed);
        }
        let jiffy = self.jiffy_ms.load(Ordering::Relaxed);
        Duration::from_millis(u64::from(age_ms.saturating_sub(jiffy)))
    }

    /// Records `spent` in a `def` handler: for the saturation test, and for the
    /// handlers' recent average cost (an exponentially weighted mean, 1/8 per call).
    pub fn note_work(&self, spent: Duration) {
        let ns = u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX);
        self.work_ns.fetch_add(ns, Ordering::Relaxed);
        let old = self.cost_ns.load(Ordering::Relaxed);
        let new = if old == 0 { ns } else { old - old / 8 + ns / 8 };
        self.cost_ns.store(new, Ordering::Relaxed);
    }

    /// Whether `def` handlers should be deferred: the handlers of the previous reading
    /// iteration ran for more than half the queue timeout.
    pub fn saturated(&self) -> bool {
        self.queue_timeout.is_some_and(|limit| {
            let half = u64::try_from(limit.as_nanos() / 2).unwrap_or(u64::MAX);
            self.last_work_ns.load(Ordering::Relaxed) > half
                || self.deferred.load(Ordering::Relaxed) > 0
        })
    }

    pub fn defer(&self) {
        self.deferred.fetch_add(1, Ordering::Relaxed);
    }

    pub fn deferred_started(&self) {
        let _ = self
            .deferred
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// How long the deferred handlers queued now will take, by their recent cost.
    pub fn queued_work(&self) -> Duration {
        let queued = self.deferred.load(Ordering::Relaxed) as u64;
        Duration::from_nanos(queued.saturating_mul(self.cost_ns.load(Ordering::Relaxed)))
    }

    /// Whether a request that has waited `waited` should be shed.
    pub fn too_late(&self, waited: Duration) -> bool {
        self.queue_timeout.is_some_and(|limit| waited > limit)
    }
}

/// `tcpi_last_data_recv` of a TCP socket: milliseconds since its last data segment.
#[cfg(target_os = "linux")]
fn last_data_recv_ms(py: Python<'_>, sock: &Py<PyAny>) -> Option<u32> {
    const IPPROTO_TCP: i32 = 6;
    const TCP_INFO: i32 = 11;
    // struct tcp_info: 8 bytes of u8 fields, then u32s; last_data_recv is the 12th.
    const OFFSET: usize = 52;
    let info = sock
        .call_method1(py, "getsockopt", (IPPROTO_TCP, TCP_INFO, OFFSET + 4))
        .ok()?;
    let bytes = info.cast_bound::<pyo3::types::PyBytes>(py).ok()?.as_bytes();
    let raw: [u8; 4] = bytes.get(OFFSET..OFFSET + 4)?.try_into().ok()?;
    Some(u32::from_ne_bytes(raw))
}

#[cfg(not(target_os = "linux"))]
fn last_data_recv_ms(_py: Python<'_>, _sock: &Py<PyAny>) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overload(max_concurrency: usize, queue_timeout_ms: Option<u64>) -> Overload<&'static str> {
        Overload::new(max_concurrency, queue_timeout_ms.map(Duration::from_millis))
    }

    #[test]
    fn waiting_connections_leave_in_arrival_order_while_there_is_room() {
        let o = overload(0, None);
        o.wait("a");
        o.wait("b");
        assert!(o.has_room());
        assert_eq!(o.next_waiting(), Some("a"));
        assert_eq!(o.next_waiting(), Some("b"));
        assert_eq!(o.next_waiting(), None);
    }

    #[test]
    fn no_waiting_connection_leaves_without_room() {
        let o = overload(1, None);
        o.in_flight.store(1, Ordering::Relaxed);
        o.wait("a");
        assert!(!o.has_room());
        assert_eq!(o.next_waiting(), None);
        o.in_flight.store(0, Ordering::Relaxed);
        assert_eq!(o.next_waiting(), Some("a"));
    }

    #[test]
    fn requests_are_shed_only_past_the_queue_timeout() {
        assert!(!overload(0, None).too_late(Duration::from_secs(3600)));
        let o = overload(0, Some(50));
        assert!(!o.too_late(Duration::from_millis(50)));
        assert!(o.too_late(Duration::from_millis(51)));
    }

    #[test]
    fn queued_work_is_the_deferred_count_times_the_recent_cost() {
        let o = overload(0, Some(50));
        o.note_work(Duration::from_millis(8));
        assert_eq!(o.queued_work(), Duration::ZERO);
        o.defer();
        o.defer();
        assert_eq!(o.queued_work(), Duration::from_millis(16));
        // The cost moves by an eighth of the difference per handler.
        o.note_work(Duration::from_millis(16));
        assert_eq!(o.queued_work(), Duration::from_millis(18));
        o.deferred_started();
        assert_eq!(o.queued_work(), Duration::from_millis(9));
    }

    #[test]
    fn saturated_when_deferred_handlers_wait_or_the_last_iteration_worked_half_the_timeout() {
        let o = overload(0, Some(50));
        assert!(!o.saturated());
        o.defer();
        assert!(o.saturated());
        o.deferred_started();
        o.last_work_ns.store(25_000_001, Ordering::Relaxed);
        assert!(o.saturated());
        assert!(!overload(0, None).saturated());
    }
}
