//! The log's time text, `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC), kept per millisecond
//! in a `Stamp`, and the three-digit table it and the access log's numbers are
//! written with. A module of its own so that `LogFile`, which keeps the `Stamp`
//! under its lock, and `access`, which writes it, do not depend on each other.

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
pub fn three_digits(value: u64) -> [u8; 3] {
    let at = usize::try_from(value).unwrap_or(0).min(999) * 3;
    [DIGITS3[at], DIGITS3[at + 1], DIGITS3[at + 2]]
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
    pub fn text_of(&mut self, wall: Duration) -> &[u8; 24] {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(civil(20_779), (2026, 11, 22));
    }
}
