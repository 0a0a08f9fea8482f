//! The request-head parser on arbitrary bytes (with small limits half the time).
//!
//! Beyond "no panic", it checks what the connection relies on:
//! - an accepted head lies inside the buffer, its ranges in order, its method a
//!   token and its header names and values free of CR, LF and NUL;
//! - the verdict does not depend on how the bytes arrived: every prefix of an
//!   accepted head is "need more", and bytes after the head change nothing;
//! - a rejection stays a rejection (with the same error) when more bytes follow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use veter_fuzz::http1::parse::{parse_head, Head};
use veter_fuzz::limits_from;

fuzz_target!(|data: &[u8]| {
    let (limits, buf) = limits_from(data);
    match parse_head(buf, &limits) {
        Ok(Some(head)) => {
            check_head(buf, &head);
            for cut in 0..head.len {
                assert_eq!(
                    parse_head(&buf[..cut], &limits),
                    Ok(None),
                    "a prefix ({cut} bytes) of an accepted head was not 'need more'"
                );
            }
            let mut longer = buf[..head.len].to_vec();
            longer.extend_from_slice(b"\r\nX");
            assert_eq!(parse_head(&longer, &limits), Ok(Some(head)));
        }
        Ok(None) => {}
        Err(err) => {
            let mut longer = buf.to_vec();
            longer.extend_from_slice(b"\r\n\r\n");
            assert_eq!(parse_head(&longer, &limits), Err(err));
        }
    }
});

fn check_head(buf: &[u8], head: &Head) {
    assert!(head.len <= buf.len());
    assert!(head.method.start < head.method.end);
    assert!(head.method.end < head.target.start);
    assert!(head.target.start < head.target.end && head.target.end < head.len);
    let clean = |r: &std::ops::Range<usize>| {
        assert!(r.start <= r.end && r.end <= head.len);
        assert!(!buf[r.clone()]
            .iter()
            .any(|b| matches!(b, b'\r' | b'\n' | 0)));
    };
    clean(&head.method);
    clean(&head.target);
    for h in &head.headers {
        clean(&h.name);
        clean(&h.value);
        assert!(!h.name.is_empty());
        assert!(!buf[h.name.clone()].contains(&b':'));
        let value = &buf[h.value.clone()];
        assert!(!value.starts_with(b" ") && !value.ends_with(b" "));
    }
}
