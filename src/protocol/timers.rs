//! The connection's side of the timeouts (see `timeouts.rs`): checked by the
//! dispatcher's tick, never by a timer of their own.

use std::time::{Duration, Instant};

use pyo3::prelude::*;

use pyo3::types::PyDict;

use super::current::CurrentRequest;
use super::{Completion, Connection, Running, Shared};
use crate::conn::Tick;
use crate::http1::encode;
use crate::response::{Response, TEXT_PLAIN};
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
            if let Some(session) = this.h2.as_ref().map(|s| s.clone_ref(py)) {
                drop(this);
                return super::h2::Session::tick(session.bind(py), now, t);
            }
            if let Some((until, _)) = this.lingering {
                if now < until {
                    return Ok(false);
                }
                let transport = this.transport.as_ref().map(|tr| tr.clone_ref(py));
                drop(this);
                if let Some(transport) = transport {
                    transport.call_method0(py, "close")?;
                }
                return Ok(true);
            }
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
    /// to cancel (cancelled outside the borrow: cancelling may run callbacks). When
    /// the app has middleware (or its own not-found handlers) the 504 goes through
    /// it, as a new task in the handler's place; past the deadline again, or if that
    /// cannot start, the core answers alone.
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
        self.ok_head = self.ok_head_for(&self.date);
        let mut answered = Vec::new();
        let mut through_app = Vec::new();
        for seq in due {
            let Some(slot) = self.core.slot_mut(seq) else {
                continue;
            };
            let Some(run) = slot.pending.take() else {
                continue;
            };
            if self.disp.unmatched.is_some() && !run.core_answer {
                cancel.push(run.task.clone_ref(py));
                through_app.push((seq, run));
                continue;
            }
            let (bytes, sent) = late_answer(&self.disp, &self.date, &run);
            slot.bytes = Some(bytes);
            answered.push((run.request, sent));
            cancel.push(run.task);
        }
        for (request, sent) in answered {
            let req = request.get();
            self.record_response(py, &req.parts, &req.exchange, sent);
        }
        for (seq, run) in through_app {
            if let Err(err) = self.answer_late_through_app(py, seq, &run, now) {
                // The app could not take it: the core answers alone, at once.
                err.print(py);
                let (bytes, sent) = late_answer(&self.disp, &self.date, &run);
                if let Some(slot) = self.core.slot_mut(seq) {
                    slot.bytes = Some(bytes);
                }
                let req = run.request.get();
                self.record_response(py, &req.parts, &req.exchange, sent);
            }
        }
    }

    /// Starts the app's middleware around the deadline's 504 for slot `seq`, as a
    /// task that takes the place of the handler's.
    fn answer_late_through_app(
        &mut self,
        py: Python<'_>,
        seq: u64,
        run: &Running,
        now: Instant,
    ) -> PyResult<()> {
        let disp = self.disp.clone();
        let Some(unmatched) = &disp.unmatched else {
            return Ok(());
        };
        let resp = Response::new_plain(py, 504, b"handler deadline exceeded", TEXT_PLAIN);
        let kwargs = PyDict::new(py);
        kwargs.set_item(pyo3::intern!(py, "answer"), Py::new(py, resp)?)?;
        let request = run.request.bind(py);
        let coro = unmatched.handler.bind(py).call((request,), Some(&kwargs))?;
        // A plain task (never started eagerly: the slot is filled by its completion),
        // carrying the request in its context as the handler's did.
        let _in_task = CurrentRequest::enter(&disp, request)?;
        let task = py
            .import("asyncio")?
            .call_method0("get_running_loop")?
            .call_method1("create_task", (coro,))?;
        let running = Running {
            task: task.clone().unbind(),
            framing: run.framing,
            request: run.request.clone_ref(py),
            core_answer: true,
        };
        if !self.core.rerun(seq, running, now) {
            return Ok(());
        }
        disp.overload.started(py);
        let Some(conn) = self.self_ref.as_ref().map(|c| c.clone_ref(py)) else {
            return Ok(());
        };
        let done = Completion {
            conn,
            seq,
            framing: run.framing,
            request: run.request.clone_ref(py),
            task: std::sync::OnceLock::new(),
        };
        task.call_method1("add_done_callback", (Py::new(py, done)?,))?;
        Ok(())
    }
}

/// The core's own 504 for a handler past its deadline.
fn late_answer(disp: &Shared, date: &encode::DateLine, run: &Running) -> (Vec<u8>, encode::Sent) {
    let parts = encode::Parts {
        status: 504,
        content_type: Some(TEXT_PLAIN),
        headers: &[],
        body: b"handler deadline exceeded",
    };
    let req = run.request.get();
    let common = encode::Common {
        server_line: &disp.server_line,
        date_line: date,
        request_id: req.exchange.id_bytes(),
        ok_head: b"",
        request_id_prefix: disp
            .request_ids
            .as_ref()
            .map_or(b"", |ids| ids.line_prefix()),
        request_id_name: disp.request_ids.as_ref().map_or("", |ids| ids.name()),
    };
    let mut bytes = Vec::new();
    let sent = encode::encode_response(&mut bytes, &parts, run.framing, common);
    (bytes, sent)
}
