//! The connection's output: responses in request order.
//!
//! Each request takes the next sequence number. An answer ready at once goes
//! straight into `out` when nothing is queued before it; otherwise it waits in its
//! slot. A running handler holds an empty slot (a hole): the answers behind it wait,
//! so pipelined responses always leave in request order. A streamed response's slot
//! stays at the front while its body is written. `collect` moves everything ready at
//! the front into `out` and says what the transport should do.

use std::time::{Duration, Instant};

use smallvec::SmallVec;

use super::{Core, Pause, Reading, Shell};
use crate::timeouts::expired;

/// Bytes of responses gathered in one go before the rest of a pipelined batch waits
/// for them to be written.
pub const OUTPUT_HIGH: usize = 256 * 1024;

/// One response's place in the queue.
pub struct Slot<R, P> {
    pub seq: u64,
    /// Its bytes, once known.
    pub bytes: Option<Vec<u8>>,
    /// The handler it waits for, while that runs.
    pub pending: Option<R>,
    /// When that handler started (its deadline counts from here).
    pub started: Option<Instant>,
    /// A streamed response: its body follows `bytes`.
    pub stream: Option<P>,
}

/// What the transport should do after a call into the core.
#[allow(clippy::struct_excessive_bools)] // one flag per transport call
pub struct Actions<P> {
    /// `out` holds bytes to write.
    pub write: bool,
    pub close: bool,
    pub pause_reading: bool,
    pub resume_reading: bool,
    /// A streamed response reached the front: what starts writing its body.
    pub start_stream: Option<P>,
}

impl<S: Shell> Core<S> {
    /// Queues `bytes` after everything before them.
    pub fn emit(&mut self, bytes: Vec<u8>) {
        if self.queue.is_empty() {
            self.out.extend_from_slice(&bytes);
        } else {
            let seq = self.take_seq();
            self.queue.push_back(Slot {
                seq,
                bytes: Some(bytes),
                pending: None,
                started: None,
                stream: None,
            });
        }
    }

    /// Where an answer ready now can be encoded directly: `out`, when nothing is
    /// queued before it.
    pub fn direct(&mut self) -> Option<&mut Vec<u8>> {
        self.queue.is_empty().then_some(&mut self.out)
    }

    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// The number `reserve` will give next.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Holds the next place for a handler still running; returns its number.
    pub fn reserve(&mut self, running: S::Running, now: Instant) -> u64 {
        let seq = self.take_seq();
        self.queue.push_back(Slot {
            seq,
            bytes: None,
            pending: Some(running),
            started: Some(now),
            stream: None,
        });
        self.in_flight += 1;
        seq
    }

    /// Slot `seq` now waits for another running handler (its first one was given up).
    pub fn rerun(&mut self, seq: u64, running: S::Running, now: Instant) -> bool {
        let Some(slot) = self.slot_mut(seq) else {
            return false;
        };
        slot.pending = Some(running);
        slot.started = Some(now);
        self.in_flight += 1;
        true
    }

    /// Queues a streamed response: `head` holds its head.
    pub fn queue_stream(&mut self, head: Vec<u8>, plan: S::Plan) {
        let seq = self.take_seq();
        self.queue.push_back(Slot {
            seq,
            bytes: Some(head),
            pending: None,
            started: None,
            stream: Some(plan),
        });
    }

    pub fn slot_mut(&mut self, seq: u64) -> Option<&mut Slot<S::Running, S::Plan>> {
        self.queue.iter_mut().find(|s| s.seq == seq)
    }

    /// The answer in slot `seq` is the connection's last (a hosted app's
    /// `connection: close`, known only when it answers): the requests queued after
    /// it are dropped unanswered, and nothing after it is read. When it is the last
    /// request read, a body still arriving for it is read on (`last_request`): its
    /// app may stream the answer while it reads.
    pub fn last_answer(&mut self, seq: u64) {
        let later = self.queue.iter().any(|s| s.seq > seq);
        let dropped = self
            .queue
            .iter()
            .filter(|s| s.seq > seq && s.pending.is_some())
            .count();
        self.queue.retain(|s| s.seq <= seq);
        self.in_flight = self.in_flight.saturating_sub(dropped);
        if later {
            self.stop_after_response();
        } else {
            self.last_request();
        }
    }

    /// The handler of slot `seq` finished (answered or not).
    pub fn handler_done(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// The slots whose handler has run longer than `limit` at `now`.
    pub fn overdue(&self, now: Instant, limit: Duration) -> SmallVec<[u64; 4]> {
        self.queue
            .iter()
            .filter(|slot| {
                slot.bytes.is_none()
                    && slot.pending.is_some()
                    && slot.started.is_some_and(|t| expired(now, t, limit))
            })
            .map(|slot| slot.seq)
            .collect()
    }

    /// The streamed response at the front ended: `complete` false cuts it short
    /// (the connection closes without what was pipelined behind it). Returns
    /// whether the connection goes on.
    pub fn end_stream(&mut self, complete: bool) -> bool {
        if self.closed {
            return false;
        }
        self.queue.pop_front();
        if !complete {
            self.queue.clear();
            self.stop_after_response();
        }
        complete
    }

    /// The reading pause the transport should be in now.
    pub fn should_pause_reading(&self) -> bool {
        self.pauses.stop_reading()
            || (!self.buf.is_empty()
                && (self.stream.is_some() || matches!(self.reading, Reading::Upgrading)))
    }

    /// Moves the ready responses at the front of the queue into `out` and says what
    /// the transport should do. The shell writes `out` and clears it. A streamed
    /// response that reaches the front becomes the active stream (`begin` makes it
    /// from its plan, with what the shell needs to start it).
    pub fn collect<T>(&mut self, begin: impl FnOnce(S::Plan) -> (S::Active, T)) -> Actions<T> {
        let mut start_stream = None;
        let mut begin = Some(begin);
        while self.stream.is_none() {
            let Some(front) = self.queue.front_mut() else {
                break;
            };
            let Some(bytes) = front.bytes.take() else {
                break;
            };
            self.out.extend_from_slice(&bytes);
            if let Some(plan) = front.stream.take() {
                // Its head goes out now; the slot stays at the front until its body ends.
                if let Some(begin) = begin.take() {
                    let (active, start) = begin(plan);
                    self.stream = Some(active);
                    start_stream = Some(start);
                }
                break;
            }
            self.queue.pop_front();
        }
        let mut actions = Actions {
            write: !self.out.is_empty() && !self.closed,
            close: false,
            pause_reading: false,
            resume_reading: false,
            start_stream,
        };
        if self.closed {
            return actions;
        }
        if self.closing && self.queue.is_empty() {
            actions.close = true;
            self.closed = true;
            return actions;
        }
        let want = self.should_pause_reading();
        if want != self.reading_paused {
            self.reading_paused = want;
            actions.pause_reading = want;
            actions.resume_reading = !want;
        }
        actions
    }

    /// Whether the connection now waits for a handler slot of the worker.
    pub fn queued_for_slot(&self) -> bool {
        self.pauses.contains(Pause::Concurrency)
    }
}
