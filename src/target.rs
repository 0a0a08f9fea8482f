//! The request target: split into its path and query, percent-decoded, and the
//! query string parsed into its pairs.

use std::borrow::Cow;
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
    match find_query(buf, target.start + start, target.end) {
        Some(q) => (
            target.start + start..target.start + start + q,
            Some(target.start + start + q + 1..target.end),
        ),
        None => (target.start + start..target.end, None),
    }
}

/// Where the `?` that starts the query is in `buf[from..end]`, if any. Most paths
/// are short (`/`, `/api/items`): their first 8 bytes are one word, tested for `?`
/// at once, where a `memchr` call's setup cost 39 instructions per request for a
/// 1-byte target (pipelined, callgrind) and a byte loop ~25. The word may reach
/// past `end` (a parsed head's target is followed by at least its version line);
/// bytes there are not looked at. Longer targets go on with `memchr`.
fn find_query(buf: &[u8], from: usize, end: usize) -> Option<usize> {
    const WORD: usize = 8;
    if let Some(Ok(word)) = buf.get(from..from + WORD).map(<[u8; WORD]>::try_from) {
        // "Bit Twiddling Hacks" haszero on the word xor `?`s: the lowest mark is
        // exact (a borrow moves up, never down), so `trailing_zeros` finds the first.
        const ONES: u64 = u64::from_ne_bytes([1; WORD]);
        let x = u64::from_le_bytes(word) ^ (ONES * u64::from(b'?'));
        let marks = x.wrapping_sub(ONES) & !x & (ONES * 0x80);
        let first = (marks.trailing_zeros() / 8) as usize;
        if first < WORD && from + first < end {
            return Some(first);
        }
        if end - from <= WORD {
            return None;
        }
        return memchr::memchr(b'?', &buf[from + WORD..end]).map(|i| WORD + i);
    }
    memchr::memchr(b'?', &buf[from..end])
}

/// Percent-decodes `raw` (no `+` to space: that is a query-string convention).
/// Invalid escapes are kept as they are; invalid UTF-8 is replaced.
pub fn percent_decode(raw: &[u8]) -> String {
    String::from_utf8_lossy(&percent_decode_bytes(raw)).into_owned()
}

/// Percent-decodes `raw` to bytes, as Python's `urllib.parse.unquote_to_bytes`
/// does: invalid escapes are kept as they are; `raw` itself when it has none.
pub fn percent_decode_bytes(raw: &[u8]) -> Cow<'_, [u8]> {
    if !raw.contains(&b'%') {
        return Cow::Borrowed(raw);
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
    Cow::Owned(out)
}

/// The (name, value) pairs of a query string, as Python's
/// `urllib.parse.parse_qsl(latin1(raw), keep_blank_values=True)` gives them: split
/// on `&`, empty parts skipped, a part without `=` a name with an empty value, `+`
/// a space, `%XX` runs decoded as UTF-8 (invalid sequences replaced), invalid
/// escapes kept, and bytes sent unescaped above ASCII taken as Latin-1.
pub fn parse_query(raw: &[u8]) -> Vec<(String, String)> {
    query_pairs(raw)
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect()
}

/// `parse_query`'s pairs, lazily, each part borrowed from `raw` when it needs no
/// decoding (the common case: no allocation for a name compared and dropped).
pub fn query_pairs(raw: &[u8]) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    raw.split(|&b| b == b'&')
        .filter(|part| !part.is_empty())
        .map(|part| match memchr::memchr(b'=', part) {
            Some(eq) => (unquote_plus(&part[..eq]), unquote_plus(&part[eq + 1..])),
            None => (unquote_plus(part), Cow::Borrowed("")),
        })
}

fn unquote_plus(raw: &[u8]) -> Cow<'_, str> {
    if raw.is_ascii() && !raw.contains(&b'%') && !raw.contains(&b'+') {
        // ASCII is valid UTF-8.
        return Cow::Borrowed(std::str::from_utf8(raw).unwrap_or_default());
    }
    let mut out = String::with_capacity(raw.len());
    let mut run: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%' && i + 2 < raw.len() {
            let hi = (raw[i + 1] as char).to_digit(16);
            let lo = (raw[i + 2] as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hi, lo) {
                run.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                i += 3;
                continue;
            }
        }
        if !run.is_empty() {
            out.push_str(&String::from_utf8_lossy(&run));
            run.clear();
        }
        out.push(if b == b'+' { ' ' } else { char::from(b) });
        i += 1;
    }
    if !run.is_empty() {
        out.push_str(&String::from_utf8_lossy(&run));
    }
    Cow::Owned(out)
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
    fn split_finds_the_first_question_mark_at_any_length() {
        // Either side of `find_query`'s one word, alone in the buffer or followed
        // by bytes (a `?` among them) that are not the target's.
        for len in [0, 1, 6, 7, 8, 9, 15, 16, 17, 40] {
            for after in [&b""[..], b" HTTP/1.1?\r\n", b"?"] {
                let mut target = vec![b'a'; len];
                target.insert(0, b'/');
                let n = target.len();
                let plain = [&target[..], after].concat();
                assert_eq!(split_target(&plain, 0..n), (0..n, None), "{len}");
                let shifted = [b"GET ", &plain[..]].concat();
                assert_eq!(split_target(&shifted, 4..n + 4), (4..n + 4, None), "{len}");
                for at in 1..=n {
                    let mut with = target.clone();
                    with.insert(at, b'?');
                    with.extend_from_slice(b"x?y");
                    let m = with.len();
                    with.extend_from_slice(after);
                    let split = split_target(&with, 0..m);
                    assert_eq!(split, (0..at, Some(at + 1..m)), "{len} {at}");
                }
            }
        }
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

    #[test]
    fn query_pairs_as_parse_qsl_gives_them() {
        let pairs = |q: &[u8]| parse_query(q);
        let owned = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect()
        };
        assert_eq!(pairs(b"a=1&b=2"), owned(&[("a", "1"), ("b", "2")]));
        assert_eq!(
            pairs(b"&&flag&=x&a=1=2&"),
            owned(&[("flag", ""), ("", "x"), ("a", "1=2")])
        );
        assert_eq!(pairs(b"q=a+b%2B%C3%A9"), owned(&[("q", "a b+\u{e9}")]));
        assert_eq!(pairs(b"bad=%zz%4"), owned(&[("bad", "%zz%4")]));
        assert_eq!(pairs(b"x=%C3x%A9"), owned(&[("x", "\u{fffd}x\u{fffd}")]));
        assert_eq!(pairs(b"l=\xe9"), owned(&[("l", "\u{e9}")]));
        assert!(pairs(b"").is_empty());
    }
}
