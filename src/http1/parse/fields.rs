//! The header fields of a request head (RFC 9112 section 5, RFC 9110 sections 5-7):
//! each line checked as it is scanned, and what the fields decide about the request
//! (Host, framing, connection options, expectations) gathered once per field and
//! judged when the head is complete.

use std::ops::Range;

use super::super::error::ParseError;
use super::super::limits::Limits;
use super::{
    at_cr, bad, invalid_byte, is_token, scan, scan_words, unplain_field_value, valid_authority,
    AtCr, BodyKind, HeaderSpan, Version, FIELD_VALUE, TCHAR,
};

/// Parses field lines from `start` up to and including the empty line that ends the
/// head; returns the index just past it. One pass, like the request line: the name
/// must stop at `:`, the value at CR, the CR be followed by LF.
pub(super) fn parse_fields(
    buf: &[u8],
    start: usize,
    limits: &Limits,
    headers: &mut Vec<HeaderSpan>,
    fields: &mut Fields,
) -> Result<Option<usize>, ParseError> {
    // The whole header section, final CRLF included, must end before limit_end.
    let limit_end = start.saturating_add(limits.max_header_bytes);
    let section = &buf[..buf.len().min(limit_end)];
    let more = || {
        if buf.len() >= limit_end {
            Err(ParseError::HeaderFieldsTooLarge)
        } else {
            Ok(None)
        }
    };
    let mut pos = start;
    loop {
        let name_end = scan(section, pos, TCHAR);
        match section.get(name_end) {
            Some(b':') if name_end > pos => {}
            None => return more(),
            Some(b'\r') => {
                return match at_cr(section, name_end) {
                    AtCr::LineEnd if name_end == pos => Ok(Some(pos + 2)),
                    AtCr::LineEnd => Err(bad("header line without colon")),
                    AtCr::NeedMore => more(),
                    AtCr::BareCr => Err(bad("bare CR in request head")),
                }
            }
            Some(b':') => return Err(bad("empty header name")),
            // RFC 9112 section 5.2 lets a server replace obs-fold with SP; we reject,
            // which also covers whitespace between the request line and the first
            // field (section 2.2).
            Some(b' ' | b'\t') if name_end == pos => return Err(bad("obs-fold in header")),
            // RFC 9112 section 5.1: MUST be rejected (a smuggling vector).
            Some(b' ' | b'\t') => return Err(bad("whitespace before colon in header")),
            Some(&b) => return Err(invalid_byte(b, "invalid header name")),
        }
        if headers.len() == limits.max_header_count {
            return Err(ParseError::HeaderFieldsTooLarge);
        }
        let mut value_start = name_end + 1;
        // The one SP clients put after the colon, stepped over before the scan.
        if section.get(value_start) == Some(&b' ') {
            value_start += 1;
        }
        let cr = scan_words(section, value_start, FIELD_VALUE, unplain_field_value);
        match section.get(cr) {
            Some(b'\r') => {}
            None => return more(),
            Some(&b) => return Err(invalid_byte(b, "invalid byte in header value")),
        }
        match at_cr(section, cr) {
            AtCr::LineEnd => {}
            AtCr::NeedMore => return more(),
            AtCr::BareCr => return Err(bad("bare CR in request head")),
        }
        // OWS trimmed off the slice (the bounds are checked once, not per step).
        let mut value = &section[value_start..cr];
        while let [b' ' | b'\t', rest @ ..] = value {
            value = rest;
            value_start += 1;
        }
        while let [rest @ .., b' ' | b'\t'] = value {
            value = rest;
        }
        let value_end = value_start + value.len();
        fields.on_field(buf, pos..name_end, value_start..value_end)?;
        headers.push(HeaderSpan {
            name: pos..name_end,
            value: value_start..value_end,
        });
        pos = cr + 2;
    }
}

/// `a == b`, for the short values a head repeats (a Host of 8 to 16 bytes, as
/// `127.0.0.1:8000` or `example.com`): two word compares, where the slice compare
/// is a `bcmp` call (~15 instructions more per request, callgrind).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (8..=16).contains(&n) {
        // Always 8 bytes (n >= 8): the `map_or` default is never taken.
        let word =
            |s: &[u8], at: usize| <[u8; 8]>::try_from(&s[at..at + 8]).map_or(0, u64::from_ne_bytes);
        return word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8);
    }
    a == b
}

/// `name` is `host` in any case, as one word compare: OR-ing 0x20 into a byte maps
/// only `X` and `x` onto `x`, for every letter, so against a word of lowercase
/// letters it is `eq_ignore_ascii_case` exactly, for any bytes (every request has
/// a Host: the byte loop measured ~12 instructions more, callgrind).
fn is_host(name: &[u8]) -> bool {
    <[u8; 4]>::try_from(name)
        .is_ok_and(|w| u32::from_le_bytes(w) | 0x2020_2020 == u32::from_le_bytes(*b"host"))
}

/// Elements of a comma-separated list (RFC 9110 section 5.6.1) with OWS trimmed;
/// empty elements come out as empty slices for the caller to judge.
pub(super) fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(trim_ows)
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// What the header fields decide about the request, gathered line by line and judged
/// once the head is complete (`body`), so the order of the fields does not matter.
#[allow(clippy::struct_excessive_bools)] // each bool is one independent fact set by one field
pub(super) struct Fields<'s> {
    version: Version,
    host: bool,
    /// The connection's last Host value found valid (`Scratch::host`).
    known_host: &'s [u8],
    /// Where a Host value that is valid but not `known_host` is in the buffer.
    pub(super) new_valid_host: Option<Range<usize>>,
    content_length: Option<u64>,
    transfer_encoding: bool,
    chunked_count: u32,
    chunked_last: bool,
    other_coding: bool,
    close: bool,
    keep_alive: bool,
    connection_upgrade: bool,
    upgrade: bool,
    pub(super) expect_continue: bool,
}

impl<'s> Fields<'s> {
    pub(super) fn new(version: Version, known_host: &'s [u8]) -> Self {
        Self {
            version,
            host: false,
            known_host,
            new_valid_host: None,
            content_length: None,
            transfer_encoding: false,
            chunked_count: 0,
            chunked_last: false,
            other_coding: false,
            close: false,
            keep_alive: false,
            connection_upgrade: false,
            upgrade: false,
            expect_continue: false,
        }
    }

    pub(super) fn on_field(
        &mut self,
        buf: &[u8],
        name: Range<usize>,
        value_at: Range<usize>,
    ) -> Result<(), ParseError> {
        let (name, value) = (&buf[name], &buf[value_at.clone()]);
        // Dispatch on length first: most fields are none of these and are ruled out
        // by one integer compare.
        match name.len() {
            4 if is_host(name) => self.on_host(value, value_at),
            6 if name.eq_ignore_ascii_case(b"expect") => {
                self.expect_continue |= self.version == Version::Http11
                    && list_elements(value).any(|e| e.eq_ignore_ascii_case(b"100-continue"));
                Ok(())
            }
            7 if name.eq_ignore_ascii_case(b"upgrade") => {
                self.upgrade |= !value.is_empty();
                Ok(())
            }
            10 if name.eq_ignore_ascii_case(b"connection") => self.on_connection(value),
            14 if name.eq_ignore_ascii_case(b"content-length") => self.on_content_length(value),
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                self.on_transfer_encoding(value)
            }
            _ => Ok(()),
        }
    }

    /// RFC 9112 section 3.2: more than one Host, or an invalid one, is a 400 for any
    /// version. An empty value is allowed (for targets without an authority).
    fn on_host(&mut self, value: &[u8], at: Range<usize>) -> Result<(), ParseError> {
        if self.host {
            return Err(bad("more than one Host header"));
        }
        self.host = true;
        if value.is_empty() || same_bytes(value, self.known_host) {
            return Ok(());
        }
        if valid_authority(value, false) {
            self.new_valid_host = Some(at);
            Ok(())
        } else {
            Err(bad("invalid Host header"))
        }
    }

    fn on_connection(&mut self, value: &[u8]) -> Result<(), ParseError> {
        for option in list_elements(value) {
            if option.is_empty() {
                // RFC 9110 section 5.6.1: recipients must accept empty elements.
                continue;
            }
            if !is_token(option) {
                return Err(bad("invalid Connection header"));
            }
            if option.eq_ignore_ascii_case(b"close") {
                self.close = true;
            } else if option.eq_ignore_ascii_case(b"keep-alive") {
                self.keep_alive = true;
            } else if option.eq_ignore_ascii_case(b"upgrade") {
                self.connection_upgrade = true;
            }
        }
        Ok(())
    }

    /// Stricter than RFC 9112 section 6.3, which lets a recipient accept repeated
    /// equal values (`5, 5` or two `5` lines): any second value is a 400, because a
    /// lenient parser behind a strict one (or the reverse) is how smuggling starts.
    fn on_content_length(&mut self, value: &[u8]) -> Result<(), ParseError> {
        if self.content_length.is_some() {
            return Err(bad("more than one Content-Length"));
        }
        // Digits by hand: a general integer parser would accept `+5` or `_`.
        if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
            return Err(bad("invalid Content-Length"));
        }
        let mut n: u64 = 0;
        for &d in value {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(d - b'0')))
                // A length that does not fit a u64 is certainly over the body limit.
                .ok_or(ParseError::PayloadTooLarge)?;
        }
        self.content_length = Some(n);
        Ok(())
    }

    /// Several Transfer-Encoding lines are one list in order (RFC 9110 section 5.3);
    /// whether it is acceptable is judged in `body` once all are seen. Stricter than
    /// RFC 9110 section 5.6.1: an empty list element here is a 400, not skipped.
    fn on_transfer_encoding(&mut self, value: &[u8]) -> Result<(), ParseError> {
        if self.version == Version::Http10 {
            // RFC 9112 section 6.1: a 1.0 recipient might not understand it, and a
            // proxy chain may disagree on framing; the RFC allows treating it as faulty.
            return Err(bad("Transfer-Encoding in an HTTP/1.0 request"));
        }
        self.transfer_encoding = true;
        for coding in list_elements(value) {
            if !is_token(coding) {
                return Err(bad("invalid Transfer-Encoding"));
            }
            self.chunked_last = coding.eq_ignore_ascii_case(b"chunked");
            if self.chunked_last {
                self.chunked_count = self.chunked_count.saturating_add(1);
            } else {
                self.other_coding = true;
            }
        }
        Ok(())
    }

    /// The framing verdict (RFC 9112 section 6.3). 400s come before 501 and 413:
    /// a request we cannot frame is malformed before it is unsupported or too big.
    pub(super) fn body(&self, limits: &Limits) -> Result<BodyKind, ParseError> {
        if self.version == Version::Http11 && !self.host {
            return Err(bad("missing Host header"));
        }
        if self.transfer_encoding {
            if self.content_length.is_some() {
                return Err(bad("both Content-Length and Transfer-Encoding"));
            }
            if !self.chunked_last || self.chunked_count != 1 {
                return Err(bad("chunked must be the final transfer coding, once"));
            }
            if self.other_coding {
                return Err(ParseError::NotImplemented(
                    "transfer coding not implemented",
                ));
            }
            return Ok(BodyKind::Chunked);
        }
        match self.content_length {
            None | Some(0) => Ok(BodyKind::Empty),
            Some(n) if n > limits.max_body_bytes => Err(ParseError::PayloadTooLarge),
            Some(n) => Ok(BodyKind::Length(n)),
        }
    }

    /// RFC 9110 section 7.8: an Upgrade in an HTTP/1.0 request MUST be ignored.
    pub(super) fn upgrade(&self) -> bool {
        self.version == Version::Http11 && self.connection_upgrade && self.upgrade
    }

    pub(super) fn keep_alive(&self) -> bool {
        match self.version {
            Version::Http11 | Version::Http2 => !self.close,
            Version::Http10 => self.keep_alive && !self.close,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_host;

    #[test]
    fn is_host_is_a_case_insensitive_compare_for_every_byte() {
        for a in 0..=255u8 {
            // Each position takes every byte, the others stay a valid `Host`.
            for at in 0..4 {
                let mut name = *b"HoSt";
                name[at] = a;
                let expected = name.eq_ignore_ascii_case(b"host");
                assert_eq!(is_host(&name), expected, "{name:?}");
            }
        }
        assert!(!is_host(b"hos") && !is_host(b"hostt") && !is_host(b""));
    }
}
