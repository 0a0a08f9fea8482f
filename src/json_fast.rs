//! A handler's `dict` or `list` answer written as JSON by the core itself, for the
//! shapes handlers return most; everything else is left to orjson.
//!
//! Why: `orjson.dumps` costs ~1,030 instructions for `{"message": "Hello, World!"}`
//! measured alone (`benchmarks/micro/json_alone.py`, the `bytes` object it returns
//! included), and the core then copied that object's data and freed it. Here the
//! value is walked directly and its text written straight behind the head (HTTP/1,
//! `write_into`) or to a reused buffer (an HTTP/2 record, `with_encoded`): no
//! Python call and no Python object.
//!
//! What is written here: exact `dict` with exact `str` keys, exact `list` and
//! `tuple` (as arrays), exact `str`, exact `int` in the `i64` range, `bool` and
//! `None`, nested at most `MAX_DEPTH` containers deep. Anything else anywhere in
//! the value (a float, a subclass of any of these, a non-`str` key, an int out of
//! range, a `str` with a lone surrogate, deeper nesting) makes the whole value
//! `Fallback`: the caller hands it to orjson, so what orjson does with it (its
//! output, or its error for a value it refuses) is what the client gets, unchanged.
//!
//! The contract is byte-identity with `orjson.dumps(value)` (veter passes no
//! options) for every value written here: no spaces; `"` and `\` escaped with a
//! backslash; `\b \t \n \f \r` in their short form and every other control
//! character below 0x20 as `\u00xx` (lowercase hex); DEL and everything else as
//! the string's UTF-8, unescaped; keys in the dict's order. `tests/test_json_fast.py`
//! checks it against orjson over random values (hypothesis).
//!
//! No Python code runs while a value is walked (only type checks, reads of `str`
//! data and `int` values), so a dict cannot change under the walk.

use std::cell::RefCell;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};
use pyo3::PyTypeInfo;

use crate::ffi::ascii_text::ascii_text;
use crate::ffi::dict_next::next_item;

/// Containers nested deeper than this are left to orjson (whose own limit, and
/// error for cycles, then apply as before).
pub const MAX_DEPTH: usize = 32;

/// A scratch buffer that grew past this is dropped after use, so that one big
/// answer does not hold its memory for the thread's life.
const KEEP_CAPACITY: usize = 64 * 1024;

/// Keys remembered (a power of two), and the longest text of one (`"key":`).
const KEY_SLOTS: usize = 64;
const KEY_BYTES: usize = 32;

/// The value holds something this encoder leaves to orjson.
#[derive(Debug, PartialEq, Eq)]
pub struct Fallback;

/// What the encoder keeps between answers, per thread.
struct Scratch {
    /// The text of an answer encoded whole before it is written (`with_encoded`:
    /// an HTTP/2 stream's record, `json_fast`).
    buf: Vec<u8>,
    keys: Keys,
}

/// Dict keys already written, by the identity of their `str` object: a handler's
/// keys are nearly always the same constants from its code, so most keys are
/// found here and copied, not read and scanned again (~150 instructions a key).
/// Each slot holds a reference to its key, so the key cannot be freed and its
/// address given to another string while it is here; a `str` is immutable, so
/// its text cannot change either. A key that maps to a taken slot replaces it.
/// A thread that ends lets its keys go through `PyO3`'s pool of deferred releases
/// (applied when a thread next holds the GIL).
struct Keys {
    slots: [Option<Key>; KEY_SLOTS],
}

struct Key {
    string: Py<PyString>,
    len: u8,
    text: [u8; KEY_BYTES],
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = const {
        RefCell::new(Scratch {
            buf: Vec::new(),
            keys: Keys { slots: [const { None }; KEY_SLOTS] },
        })
    };
}

/// Encodes `value` (an exact `dict` or `list`, else `Fallback`) and hands its
/// text to `then`; `None` when it is left to orjson.
pub fn with_encoded<R>(value: &Bound<'_, PyAny>, then: impl FnOnce(&[u8]) -> R) -> Option<R> {
    SCRATCH.with(|cell| {
        // Never re-entered (nothing here calls Python), but a busy buffer is no
        // reason to fail: orjson answers then.
        let mut scratch = cell.try_borrow_mut().ok()?;
        let Scratch { buf, keys } = &mut *scratch;
        buf.clear();
        let mut writer = Writer { out: buf, keys };
        let done = writer.top(value).ok().map(|()| then(buf));
        if buf.capacity() > KEEP_CAPACITY {
            *buf = Vec::new();
        }
        done
    })
}

/// Appends `value` (an exact `dict` or `list`, else `Fallback`) to `out`, where
/// an answer's head is already; on `Fallback`, `out` holds a partial text the
/// caller cuts off.
pub fn write_into(value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> Result<(), Fallback> {
    SCRATCH.with(|cell| {
        // Never re-entered (nothing here calls Python), but a busy cell is no
        // reason to fail: orjson answers then.
        let mut scratch = cell.try_borrow_mut().map_err(|_| Fallback)?;
        Writer {
            out,
            keys: &mut scratch.keys,
        }
        .top(value)
    })
}

/// `_core.json_fast(value)`: the text written here for `value`, or None when it is
/// left to orjson. For the differential tests (`tests/test_json_fast.py`).
#[pyfunction]
pub fn json_fast<'py>(value: &Bound<'py, PyAny>) -> Option<Bound<'py, PyBytes>> {
    with_encoded(value, |text| PyBytes::new(value.py(), text))
}

/// `value` as a `T` if its type is exactly `T` (a failed `cast_exact` would make
/// an error value, with a reference to the type, only to drop it).
pub fn exact<'a, 'py, T: PyTypeInfo>(value: &'a Bound<'py, PyAny>) -> Option<&'a Bound<'py, T>> {
    if value.is_exact_instance_of::<T>() {
        value.cast_exact::<T>().ok()
    } else {
        None
    }
}

struct Writer<'w> {
    out: &'w mut Vec<u8>,
    keys: &'w mut Keys,
}

impl Writer<'_> {
    /// Writes `value` if it is an exact `dict` or `list` of the shapes above; on
    /// `Fallback`, the buffer holds a partial text the caller discards.
    fn top(&mut self, value: &Bound<'_, PyAny>) -> Result<(), Fallback> {
        if let Some(dict) = exact::<PyDict>(value) {
            self.object(dict, 1)
        } else if let Some(list) = exact::<PyList>(value) {
            self.array(list.iter(), 1)
        } else {
            Err(Fallback)
        }
    }

    fn any(&mut self, value: &Bound<'_, PyAny>, depth: usize) -> Result<(), Fallback> {
        // Ordered by how often handlers return them; every test is one type pointer
        // compared (bool is its own exact type, so an exact int is never a bool).
        let out = &mut *self.out;
        if let Some(s) = exact::<PyString>(value) {
            string(s, out)
        } else if value.is_exact_instance_of::<PyInt>() {
            let n: i64 = value.extract().map_err(|_| Fallback)?;
            out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            Ok(())
        } else if value.is_none() {
            out.extend_from_slice(b"null");
            Ok(())
        } else if let Some(b) = exact::<PyBool>(value) {
            out.extend_from_slice(if b.is_true() { b"true" } else { b"false" });
            Ok(())
        } else if depth >= MAX_DEPTH {
            Err(Fallback)
        } else if let Some(dict) = exact::<PyDict>(value) {
            self.object(dict, depth + 1)
        } else if let Some(list) = exact::<PyList>(value) {
            self.array(list.iter(), depth + 1)
        } else if let Some(tuple) = exact::<PyTuple>(value) {
            self.array(tuple.iter(), depth + 1)
        } else {
            Err(Fallback)
        }
    }

    fn object(&mut self, dict: &Bound<'_, PyDict>, depth: usize) -> Result<(), Fallback> {
        self.out.push(b'{');
        // As many items as it holds: the last call, which only finds the end, is
        // not made.
        let mut pos = 0;
        for i in 0..dict.len() {
            let Some((key, value)) = next_item(dict, &mut pos) else {
                break;
            };
            if i > 0 {
                self.out.push(b',');
            }
            self.key(exact::<PyString>(&key).ok_or(Fallback)?)?;
            self.any(&value, depth)?;
        }
        self.out.push(b'}');
        Ok(())
    }

    /// Writes `"key":`, from the remembered keys when it is there.
    fn key(&mut self, key: &Bound<'_, PyString>) -> Result<(), Fallback> {
        let slot = &mut self.keys.slots[(key.as_ptr() as usize >> 4) & (KEY_SLOTS - 1)];
        if let Some(known) = slot {
            if known.string.is(key) {
                // All of `text` (a copy of a length known here is a few stores, of
                // the key's own length a `memcpy` call), then the rest cut off.
                let end = self.out.len() + usize::from(known.len);
                self.out.extend_from_slice(&known.text);
                self.out.truncate(end);
                return Ok(());
            }
        }
        remember(key, slot, self.out)
    }

    fn array<'py>(
        &mut self,
        items: impl Iterator<Item = Bound<'py, PyAny>>,
        depth: usize,
    ) -> Result<(), Fallback> {
        self.out.push(b'[');
        for (i, item) in items.enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.any(&item, depth)?;
        }
        self.out.push(b']');
        Ok(())
    }
}

/// Writes a key not remembered, and remembers it in `slot` (the key it holds,
/// if any, is let go). Apart from `key` so that what only a miss needs (the key
/// written, the slot's old reference dropped) costs the hit nothing.
#[cold]
#[inline(never)]
fn remember(
    key: &Bound<'_, PyString>,
    slot: &mut Option<Key>,
    out: &mut Vec<u8>,
) -> Result<(), Fallback> {
    let start = out.len();
    string(key, out)?;
    out.push(b':');
    let text = &out[start..];
    if let Ok(len) = u8::try_from(text.len()) {
        if text.len() <= KEY_BYTES {
            let mut copy = [0; KEY_BYTES];
            copy[..text.len()].copy_from_slice(text);
            *slot = Some(Key {
                string: key.clone().unbind(),
                len,
                text: copy,
            });
        }
    }
    Ok(())
}

/// What each byte of a string's UTF-8 becomes: 0 itself, else the letter written
/// after the backslash (`u` for `\u00xx`). Bytes of multi-byte characters are all
/// 0x80 or above, so they are never escaped.
const ESCAPE: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes `s` quoted: compact ASCII of one to two words without a byte to escape
/// (most short keys and values) here, in a few operations of known size; any
/// other string in `other_string`.
#[inline]
fn string(s: &Bound<'_, PyString>, out: &mut Vec<u8>) -> Result<(), Fallback> {
    if let Some(text) = ascii_text(s) {
        if let (Some(first), Some(last)) = (text.first_chunk::<8>(), text.last_chunk::<8>()) {
            let len = text.len();
            let (first, last) = (u64::from_ne_bytes(*first), u64::from_ne_bytes(*last));
            if len <= 16 && !ascii_word_needs_escape(first) && !ascii_word_needs_escape(last) {
                // The quoted text assembled in a piece of a known size (the two
                // words overlap when shorter than 16), appended whole, then cut
                // back to its length: no copy of a length known only here.
                let mut piece = [b'"'; 18];
                piece[1..9].copy_from_slice(&first.to_ne_bytes());
                piece[len - 7..=len].copy_from_slice(&last.to_ne_bytes());
                piece[len + 1] = b'"';
                let end = out.len() + len + 2;
                out.extend_from_slice(&piece);
                out.truncate(end);
                return Ok(());
            }
        }
    }
    other_string(s, out)
}

/// `string` for the rest: compact ASCII is still read in place; anything else is
/// asked for its UTF-8, which a lone surrogate does not have: orjson refuses it.
#[inline(never)]
fn other_string(s: &Bound<'_, PyString>, out: &mut Vec<u8>) -> Result<(), Fallback> {
    if let Some(text) = ascii_text(s) {
        if ascii_needs_escape(text) {
            quote_into(text, true, out);
        } else {
            out.reserve(text.len() + 2);
            out.push(b'"');
            copy_short(text, out);
            out.push(b'"');
        }
    } else {
        escape_into(s.to_str().map_err(|_| Fallback)?.as_bytes(), out);
    }
    Ok(())
}

/// Appends `text`; one of up to 32 bytes as two overlapping pieces of a length
/// known here (a few stores each, where a copy of `text`'s own length is a
/// `memcpy` call): the first piece, cut back to where the last one starts.
#[inline]
fn copy_short(text: &[u8], out: &mut Vec<u8>) {
    let end = out.len() + text.len();
    match (
        text.len(),
        text.first_chunk::<16>(),
        text.last_chunk::<16>(),
    ) {
        (..=16, ..) => match (text.first_chunk::<8>(), text.last_chunk::<8>()) {
            (Some(first), Some(last)) => {
                out.extend_from_slice(first);
                out.truncate(end - 8);
                out.extend_from_slice(last);
            }
            _ => out.extend_from_slice(text),
        },
        (..=32, Some(first), Some(last)) => {
            out.extend_from_slice(first);
            out.truncate(end - 16);
            out.extend_from_slice(last);
        }
        _ => out.extend_from_slice(text),
    }
}

/// Appends `text` as a JSON string, quoted and escaped as orjson does.
pub fn escape_into(text: &[u8], out: &mut Vec<u8>) {
    quote_into(text, needs_escape(text), out);
}

/// Appends `text` quoted, escaped byte by byte if `escape` (it has a byte to escape).
#[inline(never)]
fn quote_into(text: &[u8], escape: bool, out: &mut Vec<u8>) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    if escape {
        escape_each(text, out);
    } else {
        out.extend_from_slice(text);
    }
    out.push(b'"');
}

const ONES: u64 = u64::from_ne_bytes([1; 8]);
const HIGHS: u64 = ONES * 0x80;

/// Whether a byte of `word` is zero. Exact as a whole (a byte may be flagged
/// wrongly only above a byte that is zero), which is all that is asked here.
const fn has_zero(word: u64) -> bool {
    word.wrapping_sub(ONES) & !word & HIGHS != 0
}

/// Whether any of the eight bytes of `word` is escaped: below 0x20, `"` or `\`.
const fn word_needs_escape(word: u64) -> bool {
    // Below 0x20: subtracting 0x20 borrows into the high bit of such a byte
    // (the has-zero test shifted by 0x20, exact for any bound up to 0x80).
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS != 0;
    control || has_zero(word ^ (ONES * b'"' as u64)) || has_zero(word ^ (ONES * b'\\' as u64))
}

/// Whether `text` has a byte to escape, eight bytes at a time: most strings
/// have none and are copied whole.
fn needs_escape(text: &[u8]) -> bool {
    let mut words = text.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(word);
        if word_needs_escape(u64::from_ne_bytes(bytes)) {
            return true;
        }
    }
    let rest = words.remainder();
    let mut bytes = [b' '; 8];
    if rest.is_empty() {
        return false;
    } else if let Some(last) = text.last_chunk::<8>() {
        // The last eight bytes, some of them seen already.
        bytes = *last;
    } else {
        // A short string, padded with spaces (never escaped).
        bytes[..rest.len()].copy_from_slice(rest);
    }
    word_needs_escape(u64::from_ne_bytes(bytes))
}

/// `word_needs_escape` for eight ASCII bytes (below 0x80), in half the operations:
/// a byte's subtraction sets its high bit only when it is below what is
/// subtracted, or when a byte below it borrowed, which only one that is escaped
/// does (the first borrow of each subtraction is exact). The high bit of a byte
/// itself, which the general test must mask, is never set here.
const fn ascii_word_needs_escape(word: u64) -> bool {
    let control = word.wrapping_sub(ONES * 0x20);
    let quote = (word ^ (ONES * b'"' as u64)).wrapping_sub(ONES);
    let backslash = (word ^ (ONES * b'\\' as u64)).wrapping_sub(ONES);
    (control | quote | backslash) & HIGHS != 0
}

/// `needs_escape` for ASCII text (a compact ASCII `str`'s).
fn ascii_needs_escape(text: &[u8]) -> bool {
    if let Some(last) = text.last_chunk::<8>() {
        let mut words = text.chunks_exact(8);
        // The last eight bytes as a word of their own, some of them seen already.
        words.any(|word| {
            ascii_word_needs_escape(u64::from_ne_bytes(word.try_into().unwrap_or([0; 8])))
        }) || (!words.remainder().is_empty() && ascii_word_needs_escape(u64::from_ne_bytes(*last)))
    } else {
        // Shorter than a word: byte by byte (a padded copy would be a `memcpy` call).
        text.iter().any(|&byte| ESCAPE[usize::from(byte)] != 0)
    }
}

/// The escaping itself, byte by byte, for a string that has something to escape.
fn escape_each(text: &[u8], out: &mut Vec<u8>) {
    let mut start = 0;
    for (i, &byte) in text.iter().enumerate() {
        let letter = ESCAPE[usize::from(byte)];
        if letter == 0 {
            continue;
        }
        out.extend_from_slice(&text[start..i]);
        if letter == b'u' {
            let hex = [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 15)]];
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex[0], hex[1]]);
        } else {
            out.extend_from_slice(&[b'\\', letter]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&text[start..]);
}

#[cfg(test)]
mod tests {
    use super::{ascii_needs_escape, copy_short, escape_into, needs_escape, ESCAPE};

    fn escaped(text: &str) -> String {
        let mut out = Vec::new();
        escape_into(text.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_text_is_quoted_only() {
        assert_eq!(escaped(""), r#""""#);
        assert_eq!(escaped("Hello, World!"), r#""Hello, World!""#);
        assert_eq!(escaped("é\u{2028}😀\u{7f}"), "\"é\u{2028}😀\u{7f}\"");
    }

    #[test]
    fn the_word_test_finds_what_the_table_escapes() {
        // Every byte, at every position of a word and of the padded rest.
        for len in 1..=17 {
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut text = vec![b'a'; len];
                    text[at] = byte;
                    assert_eq!(
                        needs_escape(&text),
                        ESCAPE[usize::from(byte)] != 0,
                        "{text:?}"
                    );
                }
            }
        }
        assert!(!needs_escape(b""));
    }

    #[test]
    fn short_copies_are_the_text() {
        let text: Vec<u8> = (0..40).collect();
        for len in 0..=40 {
            let mut out = b"head".to_vec();
            copy_short(&text[..len], &mut out);
            assert_eq!(out[..4], *b"head");
            assert_eq!(out[4..], text[..len]);
        }
    }

    #[test]
    fn the_ascii_word_test_finds_what_the_table_escapes() {
        // Every ASCII byte at every position, in short strings (byte by byte), in
        // whole words and in an overlapping last word; and two escaped bytes, so
        // that a borrow from the lower cannot hide the upper or flag a clean word.
        for len in 0..=24 {
            assert!(!ascii_needs_escape(&vec![b'a'; len]));
            for at in 0..len {
                for byte in 0..0x80u8 {
                    let mut text = vec![b' '; len];
                    text[at] = byte;
                    let escaped = ESCAPE[usize::from(byte)] != 0;
                    assert_eq!(ascii_needs_escape(&text), escaped, "{text:?}");
                    for low in 0..at {
                        text[low] = 0;
                        assert!(ascii_needs_escape(&text), "{text:?}");
                        text[low] = b'~';
                    }
                }
            }
        }
    }

    #[test]
    fn quotes_backslashes_and_controls_are_escaped_as_orjson_does() {
        assert_eq!(escaped(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(escaped("\u{8}\t\n\u{c}\r"), r#""\b\t\n\f\r""#);
        assert_eq!(
            escaped("\u{0}\u{1}\u{b}\u{1f}x"),
            r#""\u0000\u0001\u000b\u001fx""#
        );
    }
}
