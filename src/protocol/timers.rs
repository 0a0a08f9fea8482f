//! The connection's side of the timeouts (see `timeouts.rs`): checked by the
//! dispatcher's tick, never by a timer of their own.

use std::time::{Duration, Instant};

use pyo3::prelude::*;

use super::{Connection, Reading, Slot};
use crate::http1::encode;
use crate::response::TEXT_PLAIN;
use crate::timeouts::{expired, Timeouts};

impl Connection {
    /// Enforces the timeouts of this connection (see `timeouts.rs`); returns
    /// whether it is being closed.
    pub fn check_timers(slf: &Bound<'_, Self>, now: Instant, t: &Timeouts) -> PyResult<bool> {
        let py = slf.py();
        let abort = {
            let Ok(mut this) = slf.try_borrow_mut() else {
                return Ok(false);
            };
            if this.closed {
                return Ok(false);
            }
            if this
                .write_paused_since
                .is_some_and(|since| expired(now, since, t.write))
            {
                // The client stopped reading: drop it and what it has not read.
                this.reading = Reading::Stopped;
                this.closed = true;
                this.transport.as_ref().map(|tr| tr.clone_ref(py))
            } else {
                None
            }
        };
        if let Some(transport) = abort {
            transport.call_method0(py, "abort")?;
            return Ok(true);
        }
        let mut cancel = Vec::new();
        let mut closing = false;
        Self::with_borrow(slf, |this, _py| {
            match &this.reading {
                Reading::Head if this.is_idle() => {
                    if expired(now, this.last_activity, t.keepalive) {
                        this.reading = Reading::Stopped;
                        this.closing = true;
                        closing = true;
                    }
                }
                Reading::Head if !this.paused_for_pipeline => {
                    if this
                        .head_started
                        .is_some_and(|since| expired(now, since, t.header))
                    {
                        this.fail_with(408, "request head not received in time");
                        closing = true;
                    }
                }
                Reading::Stream(_) => {
                    if !this.paused_for_upload && expired(now, this.last_activity, t.body) {
                        this.expire_upload(py);
                    }
                }
                Reading::Body(_) => {
                    if expired(now, this.last_activity, t.body) {
                        this.fail_with(408, "request body not received in time");
                        closing = true;
                    }
                }
                Reading::Head | Reading::Upgrading | Reading::Stopped => {}
            }
            if let Some(limit) = t.request {
                this.expire_handlers(py, now, limit, &mut cancel);
            }
            Ok(())
        })?;
        for task in cancel {
            task.call_method0(py, "cancel")?;
        }
        Ok(closing)
    }

    /// Answers 504 for every handler past its deadline and hands back their tasks
    /// to cancel (cancelled outside the borrow: cancelling may run callbacks).
    fn expire_handlers(
        &mut self,
        py: Python<'_>,
        now: Instant,
        limit: Duration,
        cancel: &mut Vec<Py<PyAny>>,
    ) {
        let due = |slot: &Slot| {
            slot.bytes.is_none()
                && slot
                    .pending
                    .as_ref()
                    .is_some_and(|run| expired(now, run.started, limit))
        };
        if !self.queue.iter().any(due) {
            return;
        }
        self.date = encode::date_line();
        let mut answered = Vec::new();
        for slot in &mut self.queue {
            if !due(slot) {
                continue;
            }
            let Some(run) = slot.pending.take() else {
                continue;
            };
            let parts = encode::Parts {
                status: 504,
                content_type: Some(TEXT_PLAIN),
                headers: &[],
                body: b"handler deadline exceeded",
            };
            let req = run.request.get();
            let disp = self.disp.get();
            let common = encode::Common {
                server_line: &disp.server_line,
                date_line: &self.date,
                request_id_line: &req.exchange.id_line,
                request_id_name: disp.request_ids.as_ref().map_or("", |ids| ids.name()),
            };
            let mut bytes = Vec::new();
            let sent = encode::encode_response(&mut bytes, &parts, run.framing, common);
            slot.bytes = Some(bytes);
            answered.push((run.request, sent));
            cancel.push(run.task);
        }
        for (request, sent) in answered {
            let req = request.get();
            self.record_response(py, &req.parts, &req.exchange, sent);
        }
    }
}
