//! A `str`'s text read from the object itself when the interpreter keeps it as
//! compact ASCII (one byte a character, right behind the object's header): the
//! common case for JSON keys and values, whose bytes then are already their UTF-8.
//! `PyUnicode_AsUTF8AndSize` returns the same bytes for such a string, through a
//! call and its checks (~27 instructions a string, callgrind: `json` 4,319 ->
//! 4,292 on 3.11).
//!
//! Compiled for the versions whose `PyASCIIObject` layout `pyo3-ffi` describes
//! (up to 3.13; it reads no bitfield on 3.14 and later): there, and for any other
//! string, `None`, and the caller takes `PyUnicode_AsUTF8AndSize`'s answer.

use pyo3::prelude::*;
use pyo3::types::PyString;

/// `s`'s characters as bytes, if `s` is a compact ASCII string.
#[cfg(not(any(Py_LIMITED_API, Py_3_14, PyPy, GraalPy)))]
#[inline]
pub fn ascii_text<'a>(s: &'a Bound<'_, PyString>) -> Option<&'a [u8]> {
    use pyo3::ffi;

    let op = s.as_ptr();
    // SAFETY: `op` is a live `str` (the `Bound` holds a reference, with the GIL),
    // so its `PyASCIIObject` header can be read; a compact ASCII string is always
    // ready (3.11) and never changes kind, length or data once made.
    if unsafe { ffi::PyUnicode_IS_COMPACT_ASCII(op) } == 0 {
        return None;
    }
    // SAFETY: as above; the length of a ready string is its count of characters,
    // never negative.
    let len = usize::try_from(unsafe { ffi::PyUnicode_GET_LENGTH(op) }).ok()?;
    // SAFETY: a compact ASCII string keeps its `len` one-byte characters (and a
    // NUL) right behind its `PyASCIIObject` header, in the same allocation, for
    // as long as the object lives: at least `'a`, for which the `Bound` (so a
    // reference to it) is borrowed. A `str` is immutable: nothing writes them.
    Some(unsafe {
        std::slice::from_raw_parts(op.cast::<ffi::PyASCIIObject>().add(1).cast::<u8>(), len)
    })
}

/// On versions whose header layout is not described here: always `None`.
#[cfg(any(Py_LIMITED_API, Py_3_14, PyPy, GraalPy))]
#[inline]
pub fn ascii_text<'a>(_s: &'a Bound<'_, PyString>) -> Option<&'a [u8]> {
    None
}
