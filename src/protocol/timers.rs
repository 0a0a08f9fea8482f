//! The connection's side of the timeouts (see `timeouts.rs`): checked by the
//! dispatcher's tick, never by a timer of their own.

use std::time::{Duration, Instant};

use pyo3::prelude::*;

use super::Connection;
use crate::conn::Tick;
use crate::http1::encode;
use crate::response::TEXT_PLAIN;
use crate::timeouts::Timeouts;

impl Connection {
    /// Enforces the timeouts of this connection (see `timeouts.rs`); returns
    /// whether it is being closed.
    pub fn check_timers(slf: &Bound<'_, Self>, now: Instant, t: &Timeouts) -> PyResult<bool> {
        let py = slf.py();
        let tick = {
            let Ok(mut this) = slf.try_borrow_mut() else {
                return Ok(false);
            };
            let tick = this.core.tick(now, t);
            if tick == Tick::Abort {
                // The client stopped reading: drop it and what it has not read.
                let transport = this.transport.as_ref().map(|tr| tr.clone_ref(py));
                drop(this);
                if let Some(transport) = transport {
                    transport.call_method0(py, "abort")?;
                }
                return Ok(true);
            }
            tick
        };
        let mut cancel = Vec::new();
        Self::with_borrow(slf, |this, py| {
            match tick {
                Tick::Late(reason) => this.fail_with(408, reason),
                Tick::UploadLate => this.expire_upload(py),
                Tick::Nothing | Tick::Close | Tick::Abort => {}
            }
            if let Some(limit) = t.request {
                this.expire_handlers(py, now, limit, &mut cancel);
            }
            Ok(())
        })?;
        for task in cancel {
            task.call_method0(py, "cancel")?;
        }
        Ok(matches!(tick, Tick::Close | Tick::Late(_)))
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
        let due = self.core.overdue(now, limit);
        if due.is_empty() {
            return;
        }
        self.date = encode::date_line();
        let mut answered = Vec::new();
        for seq in due {
            let Some(slot) = self.core.slot_mut(seq) else {
                continue;
            };
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
            let disp = &*self.disp;
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
