//! The request target: split into its path and query, and percent-decoded.

use std::ops::Range;

/// Splits a request target into its path and query ranges (offsets into `buf`).
/// absolute-form (`http://host/p?q`) routes on its path; asterisk and authority
/// forms route on the whole target.
pub fn split_target(buf: &[u8], target: Range<usize>) -> (Range<usize>, Option<Range<usize>>) {
    let bytes = &buf[target.clone()];
    let mut start = 0;
    if bytes.first() != Some(&b'/') {
        if let Some(scheme_end) = memchr::memmem::find(bytes, b"://") {
            let after = scheme_end + 3;
            start = memchr::memchr2(b'/', b'?', &bytes[after..]).map_or(bytes.len(), |i| after + i);
        }
    }
    match memchr::memchr(b'?', &bytes[start..]) {
        Some(q) => (
            target.start + start..target.start + start + q,
            Some(target.start + start + q + 1..target.end),
        ),
        None => (target.start + start..target.end, None),
    }
}

/// Percent-decodes `raw` (no `+` to space: that is a query-string convention).
/// Invalid escapes are kept as they are; invalid UTF-8 is replaced.
pub fn percent_decode(raw: &[u8]) -> String {
    if !raw.contains(&b'%') {
        return String::from_utf8_lossy(raw).into_owned();
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' && i + 2 < raw.len() {
            let hi = (raw[i + 1] as char).to_digit(16);
            let lo = (raw[i + 2] as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hi, lo) {
                // Both digits are < 16, so the value fits in a byte.
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_origin_form() {
        let buf = b"/a/b?x=1";
        assert_eq!(split_target(buf, 0..buf.len()), (0..4, Some(5..8)));
        let buf = b"/a";
        assert_eq!(split_target(buf, 0..2), (0..2, None));
    }

    #[test]
    fn split_absolute_form() {
        let buf = b"http://h:1/p?q";
        assert_eq!(split_target(buf, 0..buf.len()), (10..12, Some(13..14)));
        let buf = b"http://h";
        assert_eq!(split_target(buf, 0..buf.len()), (8..8, None));
    }

    #[test]
    fn decode_percent() {
        assert_eq!(percent_decode(b"/a%20b"), "/a b");
        assert_eq!(percent_decode(b"/a%2"), "/a%2");
        assert_eq!(percent_decode(b"/%zz"), "/%zz");
        assert_eq!(percent_decode(b"/plain"), "/plain");
    }
}
