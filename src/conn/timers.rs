//! The connection's timeouts (see `timeouts.rs`), applied by `tick`: called by the
//! server's tick, never by a timer of their own.

use std::time::Instant;

use super::{Core, Pause, Reading, Shell};
use crate::timeouts::{expired, Timeouts};

/// What a tick found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    Nothing,
    /// The client stopped reading for longer than the write timeout: drop it and
    /// what it has not read (reading has stopped).
    Abort,
    /// Idle past the keep-alive timeout: close (reading has stopped).
    Close,
    /// A request head or body came too slowly: answer `408` with this reason, then
    /// close.
    Late(&'static str),
    /// A streamed body came too slowly: the shell fails its handler's reads with
    /// `408`, then calls `stop_after_response`.
    UploadLate,
}

impl<S: Shell> Core<S> {
    /// Applies the timeouts at `now` (handlers' deadlines: `overdue`).
    pub fn tick(&mut self, now: Instant, t: &Timeouts) -> Tick {
        if self.closed {
            return Tick::Nothing;
        }
        if self
            .write_paused_since
            .is_some_and(|since| expired(now, since, t.write))
        {
            self.abort();
            return Tick::Abort;
        }
        match &self.reading {
            Reading::Head if self.is_idle() => {
                if expired(now, self.last_activity, t.keepalive) {
                    self.reading = Reading::Stopped;
                    self.closing = true;
                    return Tick::Close;
                }
            }
            Reading::Head if !self.pauses.contains(Pause::Pipeline) => {
                if self
                    .head_started
                    .is_some_and(|since| expired(now, since, t.header))
                {
                    self.stop_after_response();
                    return Tick::Late("request head not received in time");
                }
            }
            Reading::Stream(_) => {
                if !self.pauses.contains(Pause::Upload) && expired(now, self.last_activity, t.body)
                {
                    return Tick::UploadLate;
                }
            }
            Reading::Body(_) => {
                if expired(now, self.last_activity, t.body) {
                    self.stop_after_response();
                    return Tick::Late("request body not received in time");
                }
            }
            Reading::Head | Reading::Upgrading | Reading::Stopped => {}
        }
        Tick::Nothing
    }
}
