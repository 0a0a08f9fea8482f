//! A connection's clocks: the monotonic one read once per read, the wall clock once
//! a second (its `Date` line and the access log's times: docs/design.md, "Timers").

use std::time::Instant;

use super::Connection;
use crate::http1::encode;

impl Connection {
    /// `encode::ok_head` for this connection's lines (empty when request ids are
    /// off: then `encode_ok` writes the lines one by one).
    pub(super) fn ok_head_for(&self, date: &encode::DateLine) -> Vec<u8> {
        let disp = &*self.disp;
        disp.request_ids.as_ref().map_or_else(Vec::new, |ids| {
            encode::ok_head(&disp.server_line, date, ids.line_prefix())
        })
    }

    /// The clocks at `now`, a monotonic reading. The wall clock is read only when
    /// its second may have changed (`next_second`): the `Date` line changes with the
    /// second and nothing else, and the access log's times are the last wall reading
    /// plus the monotonic time since (a wall clock stepped by hand or by NTP shows
    /// within a second). One clock read per read, not two (callgrind: docs/design.md).
    pub(super) fn set_clock(&mut self, now: Instant) {
        if now >= self.next_second {
            self.read_wall(now);
        } else if self.disp.access.is_some() {
            self.clock = (now, self.wall.1 + (now - self.wall.0));
        }
    }

    /// Reads the wall clock (at `now` on the monotonic one), and makes a new `Date`
    /// line when its second changed.
    #[inline(never)] // once a second
    fn read_wall(&mut self, now: Instant) {
        let wall = std::time::SystemTime::now();
        let unix = unix_time(wall);
        let second = unix.as_secs();
        if second != self.date_second {
            self.date = encode::date_line_at(wall);
            self.ok_head = self.ok_head_for(&self.date);
            self.date_second = second;
        }
        // (`subsec_nanos` is under a second: no underflow.)
        let to_next =
            std::time::Duration::from_nanos(1_000_000_000 - u64::from(unix.subsec_nanos()));
        self.next_second = now + to_next;
        self.wall = (now, unix);
        self.clock = (now, unix);
    }
}

/// `wall` as time since the Unix epoch (zero before it).
pub(super) fn unix_time(wall: std::time::SystemTime) -> std::time::Duration {
    wall.duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}
