//! A typed handler's JSON body looked over before it is decoded.
//!
//! The decoders (msgspec, pydantic-core) recurse once per level of nesting: a
//! body of 100,000 `[` reaches Python's recursion limit inside msgspec and came
//! out as a `RecursionError` (a 500). One pass over the bytes here refuses, with
//! the reason for a 400, what no decoder should be handed:
//!
//! - nesting deeper than `max_depth` (the `max_json_depth` setting);
//! - bytes that are not UTF-8 (RFC 8259 §8.1), even inside a field the model
//!   ignores (msgspec skips such a field without reading its text);
//! - outside strings, a byte no JSON text holds there (`NaN`, `Infinity`, a
//!   BOM), which pydantic-core would otherwise accept for an `Any` field.
//!
//! It does not parse: a body it passes may still be invalid JSON (`[}`), and the
//! decoder says so. Its work is one pass over the body, which `max_body_bytes`
//! bounds. Sans-IO: bytes in, a reason or nothing out; tested with byte tables.

use pyo3::prelude::*;

/// Why a body is not handed to the decoder.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Nesting passes the limit at this byte offset.
    TooDeep { limit: usize, at: usize },
    /// The body is not UTF-8 from this byte offset.
    NotUtf8 { at: usize },
    /// A byte JSON does not have outside a string.
    Unexpected { byte: u8, at: usize },
}

impl Refusal {
    /// The reason, for the 400's detail.
    pub fn message(&self) -> String {
        match self {
            Refusal::TooDeep { limit, at } => {
                format!("nested deeper than {limit} levels at byte {at} (max_json_depth)")
            }
            Refusal::NotUtf8 { at } => format!("not UTF-8 at byte {at}"),
            Refusal::Unexpected { byte, at } if byte.is_ascii_graphic() => {
                format!("unexpected character '{}' at byte {at}", char::from(*byte))
            }
            Refusal::Unexpected { byte, at } => {
                format!("unexpected byte 0x{byte:02x} at byte {at}")
            }
        }
    }
}

/// What a byte outside strings is to the pass, one table lookup per byte: JSON's
/// structure, or what else a JSON text may hold there (whitespace, numbers, the
/// letters of `true`, `false` and `null`), or a byte it may not.
const OTHER: u8 = 0;
const QUOTE: u8 = 1;
const OPEN: u8 = 2;
const CLOSE: u8 = 3;
const BAD: u8 = 4;

const fn classes() -> [u8; 256] {
    let mut table = [BAD; 256];
    let allowed = b",: \t\r\n0123456789+-.eEtruefalsn";
    let mut i = 0;
    while i < allowed.len() {
        table[allowed[i] as usize] = OTHER;
        i += 1;
    }
    table[b'"' as usize] = QUOTE;
    table[b'[' as usize] = OPEN;
    table[b'{' as usize] = OPEN;
    table[b']' as usize] = CLOSE;
    table[b'}' as usize] = CLOSE;
    table
}

static CLASS: [u8; 256] = classes();

/// Checks `body` (see the module doc): Ok, or the first reason to refuse it.
pub fn check(body: &[u8], max_depth: usize) -> Result<(), Refusal> {
    if let Err(error) = std::str::from_utf8(body) {
        return Err(Refusal::NotUtf8 {
            at: error.valid_up_to(),
        });
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < body.len() {
        let byte = body[i];
        match CLASS[usize::from(byte)] {
            OTHER => {}
            QUOTE => {
                // To the closing quote: skip whole runs of text, and the byte after
                // each backslash (an escaped quote does not end the string).
                i += 1;
                loop {
                    // Unterminated (no quote, or a backslash last): the decoder says so.
                    let Some(at) = body
                        .get(i..)
                        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                    else {
                        return Ok(());
                    };
                    i += at;
                    if body[i] == b'"' {
                        break;
                    }
                    i += 2;
                }
            }
            OPEN => {
                depth += 1;
                if depth > max_depth {
                    return Err(Refusal::TooDeep {
                        limit: max_depth,
                        at: i,
                    });
                }
            }
            CLOSE => depth = depth.saturating_sub(1),
            _ => return Err(Refusal::Unexpected { byte, at: i }),
        }
        i += 1;
    }
    Ok(())
}

#[pyfunction]
pub fn json_refusal(body: &[u8], max_depth: usize) -> Option<String> {
    check(body, max_depth)
        .err()
        .map(|refusal| refusal.message())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_a_decoder_may_have() {
        for body in [
            &b""[..],
            b"{}",
            b"[1, 2.5e-3, -0, true, false, null]",
            b"{\"a\": {\"b\": [[[]]]}}",
            b" \t\r\n{\"x\": \"[[[[{{{{\"}",
            b"\"caf\xc3\xa9 \\\" [[[\"",
            b"{\"nan\": \"NaN\", \"q\": \"\\\\\"}",
            b"[}", // not JSON, but the decoder says so
            b"]]]]",
        ] {
            assert_eq!(
                check(body, 8),
                Ok(()),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn depth_is_counted_outside_strings_only() {
        assert_eq!(check(b"[[[]]]", 3), Ok(()));
        assert_eq!(
            check(b"[[[[]]]]", 3),
            Err(Refusal::TooDeep { limit: 3, at: 3 })
        );
        assert_eq!(
            check(b"{\"a\":{\"b\":[{}]}}", 3),
            Err(Refusal::TooDeep { limit: 3, at: 11 })
        );
        assert_eq!(check(b"[[[]]][[[]]]", 3), Ok(()));
        assert_eq!(check(b"[\"\\\"[[[[\"]", 1), Ok(()));
        // An escaped backslash ends before the quote, which closes the string.
        assert_eq!(
            check(b"[\"\\\\\",[[]]]", 2),
            Err(Refusal::TooDeep { limit: 2, at: 7 })
        );
        let deep = vec![b'['; 100_000];
        assert_eq!(
            check(&deep, 200),
            Err(Refusal::TooDeep {
                limit: 200,
                at: 200
            })
        );
    }

    #[test]
    fn bytes_json_has_not() {
        assert_eq!(
            check(b"{\"a\": \"\xff\"}", 64),
            Err(Refusal::NotUtf8 { at: 7 })
        );
        assert_eq!(
            check(b"[\"\xed\xa0\x80\"]", 64),
            Err(Refusal::NotUtf8 { at: 2 })
        );
        assert_eq!(
            check(b"{\"a\": NaN}", 64),
            Err(Refusal::Unexpected { byte: b'N', at: 6 })
        );
        assert_eq!(
            check(b"[-Infinity]", 64),
            Err(Refusal::Unexpected { byte: b'I', at: 2 })
        );
        assert_eq!(
            check(b"\xef\xbb\xbf{}", 64),
            Err(Refusal::Unexpected { byte: 0xef, at: 0 })
        );
        assert_eq!(
            check(b"[1]\x00", 64),
            Err(Refusal::Unexpected { byte: 0, at: 3 })
        );
    }

    #[test]
    fn an_unterminated_string_or_escape_ends_the_scan() {
        assert_eq!(check(b"[\"abc", 64), Ok(()));
        assert_eq!(check(b"[\"abc\\", 64), Ok(()));
    }

    #[test]
    fn messages_name_the_setting_and_the_place() {
        assert_eq!(
            Refusal::TooDeep {
                limit: 200,
                at: 200
            }
            .message(),
            "nested deeper than 200 levels at byte 200 (max_json_depth)"
        );
        assert_eq!(
            Refusal::Unexpected { byte: b'N', at: 6 }.message(),
            "unexpected character 'N' at byte 6"
        );
        assert_eq!(
            Refusal::Unexpected { byte: 0, at: 3 }.message(),
            "unexpected byte 0x00 at byte 3"
        );
        assert_eq!(Refusal::NotUtf8 { at: 7 }.message(), "not UTF-8 at byte 7");
    }
}
