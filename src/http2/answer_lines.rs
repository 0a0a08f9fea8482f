//! The few head values an answer's reader takes apart: the status line's code and
//! a content-length (`answer.rs`).

use super::Malformed;

/// The status code of an HTTP/1.x status line (100 to 999).
pub(super) fn status_of(line: &[u8]) -> Result<u16, Malformed> {
    let code = line
        .strip_prefix(b"HTTP/1.1 ")
        .or_else(|| line.strip_prefix(b"HTTP/1.0 "))
        .ok_or(Malformed("not an HTTP/1.1 status line"))?;
    match code.get(..3) {
        Some(digits) if digits.iter().all(u8::is_ascii_digit) => {
            let n = digits
                .iter()
                .fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
            if n >= 100 {
                Ok(n)
            } else {
                Err(Malformed("a status under 100"))
            }
        }
        _ => Err(Malformed("a status that is not three digits")),
    }
}

/// A content-length's value as `str::parse::<u64>` reads it (an optional `+`, then
/// digits, no overflow), read from the bytes without a UTF-8 check first (that
/// check and the parse cost ~70 instructions per answer).
pub(super) fn number(value: &[u8]) -> Result<u64, Malformed> {
    const NOT_A_NUMBER: Malformed = Malformed("a content-length that is not a number");
    let digits = value.strip_prefix(b"+").unwrap_or(value);
    if digits.is_empty() {
        return Err(NOT_A_NUMBER);
    }
    digits.iter().try_fold(0u64, |n, &d| {
        if d.is_ascii_digit() {
            n.checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(d - b'0')))
                .ok_or(NOT_A_NUMBER)
        } else {
            Err(NOT_A_NUMBER)
        }
    })
}
