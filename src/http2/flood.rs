//! Rate limits against HTTP/2 floods: counts of costly client behaviour per
//! fixed time window (the caller's clock, `Connection::received`'s `now`).
//!
//! Two counters, each with a limit from `Config`:
//! - resets: streams the client resets after they were accepted (Rapid Reset,
//!   CVE-2023-44487) plus accepted streams the server resets for the client's
//!   errors (the same attack made to look like the server's doing);
//! - control: frames that cost the server work or output but make no progress
//!   on any request (SETTINGS, PING, PRIORITY, unknown types, empty DATA,
//!   HEADERS and CONTINUATION, each `RST_STREAM` a client error makes us send).
//!
//! A fixed window lets a burst of up to twice a limit straddle a boundary;
//! that is within the same order as the limit, which is what matters here.

use std::time::{Duration, Instant};

use super::settings::Config;

pub struct Flood {
    window: Duration,
    max_resets: u32,
    max_control: u32,
    start: Option<Instant>,
    resets: u32,
    control: u32,
}

impl Flood {
    pub fn new(config: &Config) -> Self {
        Flood {
            window: config.flood_window,
            max_resets: config.max_resets_per_window,
            max_control: config.max_control_frames_per_window,
            start: None,
            resets: 0,
            control: 0,
        }
    }

    /// Starts a new window when the current one is over.
    pub fn tick(&mut self, now: Instant) {
        let current = self
            .start
            .is_some_and(|s| now.saturating_duration_since(s) < self.window);
        if !current {
            self.start = Some(now);
            self.resets = 0;
            self.control = 0;
        }
    }

    /// Counts one reset; true when over the limit.
    pub fn reset(&mut self) -> bool {
        self.resets = self.resets.saturating_add(1);
        self.resets > self.max_resets
    }

    /// Counts one control frame; true when over the limit.
    pub fn control(&mut self) -> bool {
        self.control = self.control.saturating_add(1);
        self.control > self.max_control
    }
}
