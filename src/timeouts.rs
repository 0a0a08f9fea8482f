//! Connection timeouts, checked by the server's tick (a few times a second) rather
//! than by a timer per connection or per request.
//!
//! What each one bounds:
//! - `keepalive`: an idle connection between requests;
//! - `header`: from the first byte of a request head to its end (slowloris);
//! - `body`: silence while a request body is incomplete;
//! - `write`: how long the transport may stay above its high watermark because the
//!   client does not read (its buffered responses are bounded by the watermark, and
//!   reading from it is paused meanwhile);
//! - `request`: a handler's deadline; the task is cancelled and the client gets 504.

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub keepalive: Duration,
    pub header: Duration,
    pub body: Duration,
    pub write: Duration,
    /// `None`: handlers have no deadline.
    pub request: Option<Duration>,
}

/// How long, and for how many bytes, a connection the server closes keeps reading
/// (and dropping) what the client still sends after a half-close, so that the
/// client reads the last answer instead of a reset (`Connection::linger`).
#[derive(Debug, Clone, Copy)]
pub struct Linger {
    pub time: Duration,
    pub bytes: usize,
}

/// Converts a setting in seconds; 0 means "no limit" where `allow_off` says so.
pub fn seconds(name: &str, value: f64, allow_off: bool) -> Result<Option<Duration>, String> {
    if value.is_finite() && value > 0.0 {
        Ok(Some(Duration::from_secs_f64(value)))
    } else if allow_off && value == 0.0 {
        Ok(None)
    } else if allow_off {
        Err(format!(
            "{name} must be a number of seconds >= 0 (0: no limit)"
        ))
    } else {
        Err(format!("{name} must be a positive number of seconds"))
    }
}

/// Whether `since` lies more than `limit` before `now`.
pub fn expired(now: Instant, since: Instant, limit: Duration) -> bool {
    now.saturating_duration_since(since) > limit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_parsing() {
        assert_eq!(
            seconds("x", 1.5, false),
            Ok(Some(Duration::from_millis(1500)))
        );
        assert_eq!(seconds("x", 0.0, true), Ok(None));
        assert!(seconds("x", 0.0, false).is_err());
        assert!(seconds("x", -1.0, true).is_err());
        assert!(seconds("x", f64::NAN, true).is_err());
    }

    #[test]
    fn expiry() {
        let start = Instant::now();
        let later = start + Duration::from_secs(2);
        assert!(expired(later, start, Duration::from_secs(1)));
        assert!(!expired(later, start, Duration::from_secs(2)));
        assert!(!expired(start, later, Duration::from_secs(1)));
    }
}
