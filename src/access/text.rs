//! The access log's numbers as text: the time (`YYYY-MM-DDTHH:MM:SS.mmmZ`, UTC,
//! kept per millisecond in a `Stamp`), durations in milliseconds and statuses,
//! written with a three-digit table rather than divisions.

use std::time::Duration;

/// The time text of the last millisecond written, `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC):
/// the lines of one millisecond copy it, the first of the next rewrites its last
/// five bytes, and the first of the next second formats the date too.
pub struct Stamp {
    /// Milliseconds since the Unix epoch (`u64::MAX`: none yet).
    millis: u64,
    text: [u8; 24],
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 1..=31, 1..=12
    (year, month as u32, day as u32)
}

/// The last two decimal digits of `value`.
fn two_digits(value: u64) -> [u8; 2] {
    [
        b'0' + u8::try_from(value / 10 % 10).unwrap_or(0),
        b'0' + u8::try_from(value % 10).unwrap_or(0),
    ]
}

/// `000` to `999`, three bytes each: a number under 1000 is written with one
/// lookup instead of three divisions.
#[allow(clippy::cast_possible_truncation)] // digits: 0..=9
const DIGITS3: [u8; 3000] = {
    let mut table = [0; 3000];
    let mut n = 0;
    while n < 1000 {
        table[3 * n] = b'0' + (n / 100) as u8;
        table[3 * n + 1] = b'0' + (n / 10 % 10) as u8;
        table[3 * n + 2] = b'0' + (n % 10) as u8;
        n += 1;
    }
    table
};

/// The three digits of `value` (under 1000).
#[inline]
pub(super) fn three_digits(value: u64) -> [u8; 3] {
    let at = usize::try_from(value).unwrap_or(0).min(999) * 3;
    [DIGITS3[at], DIGITS3[at + 1], DIGITS3[at + 2]]
}

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

/// `YYYY-MM-DDTHH:MM:SS` of the unix second `secs` (UTC).
fn second_text(secs: u64) -> [u8; 19] {
    let (year, month, day) = civil(i64::try_from(secs / 86_400).unwrap_or(0));
    let rem = secs % 86_400;
    let year = u64::try_from(year).unwrap_or(0);
    let [y1, y2] = two_digits(year / 100);
    let [y3, y4] = two_digits(year);
    let [mo1, mo2] = two_digits(u64::from(month));
    let [d1, d2] = two_digits(u64::from(day));
    let [h1, h2] = two_digits(rem / 3600);
    let [mi1, mi2] = two_digits(rem / 60 % 60);
    let [s1, s2] = two_digits(rem % 60);
    [
        y1, y2, y3, y4, b'-', mo1, mo2, b'-', d1, d2, b'T', h1, h2, b':', mi1, mi2, b':', s1, s2,
    ]
}

impl Stamp {
    pub const NONE: Stamp = Stamp {
        millis: u64::MAX,
        text: [0; 24],
    };

    /// The text of `wall` (since the Unix epoch), formatted when its millisecond
    /// is not the one kept.
    #[inline]
    pub(super) fn text_of(&mut self, wall: Duration) -> &[u8; 24] {
        let millis = wall.as_secs() * 1000 + u64::from(wall.subsec_millis());
        if millis != self.millis {
            self.update(millis);
        }
        &self.text
    }

    #[cold]
    #[inline(never)]
    fn update(&mut self, millis: u64) {
        let secs = millis / 1000;
        if secs != self.millis / 1000 {
            self.text[..19].copy_from_slice(&second_text(secs));
        }
        let [m1, m2, m3] = three_digits(millis % 1000);
        self.text[19..].copy_from_slice(&[b'.', m1, m2, m3, b'Z']);
        self.millis = millis;
    }
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
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(civil(20_779), (2026, 11, 22));
    }

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
