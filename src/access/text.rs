//! The access log's numbers as text: the time (from the `Stamp` the log file
//! keeps, `logtime.rs`), the response size, durations in milliseconds and
//! statuses, written with the three-digit table rather than divisions.

use std::time::Duration;

use crate::logtime::{three_digits, Stamp};

/// Writes `value`'s decimal digits to end just before `buf[end]`, three at a time
/// from the table, and returns where they begin (`buf[..end]` must hold 21 bytes:
/// the 20 digits of `u64::MAX` and the leading zeros of its first three).
#[inline]
pub(super) fn digits_ending_at(buf: &mut [u8], end: usize, mut value: u64) -> usize {
    let mut at = end;
    while value >= 1000 {
        at -= 3;
        buf[at..at + 3].copy_from_slice(&three_digits(value % 1000));
        value /= 1000;
    }
    at -= 3;
    buf[at..at + 3].copy_from_slice(&three_digits(value));
    at + 2 - usize::from(value >= 10) - usize::from(value >= 100)
}

/// Appends the time `wall` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
pub(super) fn push_time(out: &mut Vec<u8>, wall: Duration, stamp: &mut Stamp) {
    out.extend_from_slice(stamp.text_of(wall));
}

/// Microseconds in `duration` (u64: 584,942 years; `as_micros` is a u128).
fn micros(duration: Duration) -> u64 {
    duration
        .as_secs()
        .saturating_mul(1_000_000)
        .saturating_add(u64::from(duration.subsec_micros()))
}

/// `duration` in milliseconds with microsecond precision when under 10 ms
/// (`7.001`), most answers: a fixed-size copy.
#[inline]
pub(super) fn short_millis(duration: Duration) -> Option<[u8; 5]> {
    let micros = micros(duration);
    let whole = u8::try_from(micros / 1000).ok().filter(|&w| w < 10)?;
    let [f1, f2, f3] = three_digits(micros % 1000);
    Some([b'0' + whole, b'.', f1, f2, f3])
}

/// Appends `duration` in milliseconds with microsecond precision (`12.345`).
pub(super) fn push_millis(out: &mut Vec<u8>, duration: Duration) {
    if let Some(text) = short_millis(duration) {
        out.extend_from_slice(&text);
        return;
    }
    let micros = micros(duration);
    out.extend_from_slice(itoa::Buffer::new().format(micros / 1000).as_bytes());
    let [f1, f2, f3] = three_digits(micros % 1000);
    out.extend_from_slice(&[b'.', f1, f2, f3]);
}

/// Appends an HTTP status (three digits).
#[inline]
pub(super) fn push_status(out: &mut Vec<u8>, status: u16) {
    if (100..1000).contains(&status) {
        out.extend_from_slice(&three_digits(u64::from(status)));
    } else {
        out.extend_from_slice(itoa::Buffer::new().format(status).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_and_duration_formats() {
        let mut stamp = Stamp::NONE;
        let cache = &mut stamp;
        let mut out = Vec::new();
        push_time(&mut out, Duration::from_millis(1_795_357_501_007), cache);
        assert_eq!(String::from_utf8(out).unwrap(), "2026-11-22T14:25:01.007Z");
        // The cached second, then a new one.
        let mut out = Vec::new();
        push_time(&mut out, Duration::from_millis(1_795_357_501_999), cache);
        push_time(
            &mut out,
            Duration::from_micros(1_795_357_501_999_999),
            cache,
        );
        push_time(&mut out, Duration::from_secs(951_782_400), cache);
        push_time(&mut out, Duration::from_secs(951_782_401), cache);
        assert_eq!(
            out,
            b"2026-11-22T14:25:01.999Z2026-11-22T14:25:01.999Z2000-02-29T00:00:00.000Z2000-02-29T00:00:01.000Z"
        );
        for (micros, text) in [
            (12_045, "12.045"),
            (0, "0.000"),
            (9_999, "9.999"),
            (10_000, "10.000"),
            (123_456_789, "123456.789"),
        ] {
            let mut out = Vec::new();
            push_millis(&mut out, Duration::from_micros(micros));
            assert_eq!(String::from_utf8(out).unwrap(), text);
        }
        for value in [
            0,
            7,
            10,
            99,
            100,
            999,
            1000,
            1001,
            13_000,
            999_999,
            1 << 40,
            u64::MAX,
        ] {
            let mut buf = [b'x'; 24];
            let start = digits_ending_at(&mut buf, 21, value);
            assert_eq!(&buf[start..21], value.to_string().as_bytes());
            assert_eq!(&buf[21..], b"xxx");
        }
        for status in [0, 7, 99, 100, 200, 404, 999, 1000, 65_535] {
            let mut out = Vec::new();
            push_status(&mut out, status);
            assert_eq!(out, status.to_string().as_bytes());
        }
    }
}
