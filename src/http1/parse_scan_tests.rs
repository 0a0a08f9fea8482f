//! Tests of `parse.rs`'s word-at-a-time scan of targets and values (apart from
//! `parse_tests.rs`, which stays under 600 lines).

use super::super::limits::Limits;
use super::parse_head;

/// `scan_words` finds a value's or target's end from the lowest doubtful byte of a
/// word: a tab, a DEL, a control byte or an obs-text byte at every offset of the
/// first three words must get the verdict the byte-wise grammar gives it.
#[test]
fn every_offset_of_a_doubtful_byte_gets_the_bytewise_verdict() {
    for at in 0..24 {
        for (byte, value_ok, target_ok) in [
            (b'\t', true, false),
            (0x7F, false, false),
            (0x01, false, false),
            (0x80, true, false),
            (0xFF, true, false),
            (b'~', true, true),
        ] {
            let mut value = b"abcdefghijklmnopqrstuvwxyz".to_vec();
            value[at] = byte;
            let mut raw = b"GET / HTTP/1.1\r\nHost: h\r\nX: ".to_vec();
            raw.extend_from_slice(&value);
            raw.extend_from_slice(b"\r\n\r\n");
            let parsed = parse_head(&raw, &Limits::default());
            match parsed {
                Ok(Some(head)) => {
                    assert!(value_ok, "value byte {byte:#x} at {at} accepted");
                    let span = &head.headers[1].value;
                    // A tab at either end is OWS, trimmed.
                    let trimmed = value.trim_ascii();
                    assert_eq!(&raw[span.clone()], trimmed, "value byte {byte:#x} at {at}");
                }
                other => assert!(!value_ok, "value byte {byte:#x} at {at}: {other:?}"),
            }
            let mut target = b"/abcdefghijklmnopqrstuvwxyz".to_vec();
            target[at + 1] = byte;
            let mut raw = b"GET ".to_vec();
            raw.extend_from_slice(&target);
            raw.extend_from_slice(b" HTTP/1.1\r\nHost: h\r\n\r\n");
            match parse_head(&raw, &Limits::default()) {
                Ok(Some(head)) => {
                    assert!(target_ok, "target byte {byte:#x} at {at} accepted");
                    assert_eq!(&raw[head.target], &target[..]);
                }
                other => assert!(!target_ok, "target byte {byte:#x} at {at}: {other:?}"),
            }
        }
    }
}
