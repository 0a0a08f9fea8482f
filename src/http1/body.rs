//! Request body decoders: the chunked transfer coding (RFC 9112 section 7.1), and a
//! one-line helper for Content-Length framing.
//!
//! # Theory
//!
//! ```text
//! chunked-body = *chunk last-chunk trailer-section CRLF
//! chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! last-chunk   = 1*("0") [ chunk-ext ] CRLF
//! chunk-ext    = *( ";" ext-name [ "=" ext-val ] )   ; RFC: BWS around ";" and "="
//! ```
//!
//! All the decoder's state is in `ChunkedDecoder`: one `State` (a position in the
//! grammar above, one variant each), the size of the chunk being read, the body bytes
//! produced so far, and byte counters for the extension and trailer limits. Chunk data
//! is copied in bulk; everything else (size lines, extensions, trailers: a few bytes
//! per chunk) is walked one byte at a time. So the decoder never buffers a partial
//! line, needs no lookahead, and gives identical results however the input is split.
//!
//! Strictness follows the parser's (see parse.rs): whatever two implementations could
//! read differently (whitespace after the size, a bare LF, bytes after chunk data,
//! an extension that is not `token [= token / quoted-string]`) is a 400, because a
//! disagreement about where a chunk ends is a smuggling vector. Stricter than RFC
//! 9112 section 7.1.1: no whitespace at all in a chunk-size line (the RFC allows BWS
//! around `;` and `=`; h11 and several proxies do not, and "5 ;x" read by one of them
//! and "5" by another is such a disagreement). Extensions and trailers are validated,
//! then dropped: nothing above this layer sees them, and a trailer may not carry the
//! framing or routing fields (Content-Length, Transfer-Encoding, Host; RFC 9110
//! section 6.5.1) that an intermediary merging trailers into the head would act on.
//!
//! After an error the decoder keeps returning that error.

use super::error::ParseError;
use super::limits::Limits;
use super::parse::{has_class, FIELD_VALUE, QDTEXT, TCHAR};

/// Leading zeros do not count toward the 16 significant hex digits a `u64` holds
/// (overflow catches those), but each still costs a byte: cap the whole size field so
/// an endless run of zeros is rejected instead of read forever.
const MAX_SIZE_DIGITS: u32 = 32;

/// Where the decoder is in the chunked grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In chunk-size hex digits (`size_digits` so far, maybe none yet).
    Size,
    /// After `;`: the first byte of an extension name.
    ExtNameStart,
    /// In an extension name.
    ExtName,
    /// After `=`: a token or a quoted-string.
    ExtValueStart,
    /// In a token extension value.
    ExtToken,
    /// In a quoted-string extension value.
    ExtQuoted,
    /// After a backslash in a quoted-string.
    ExtQuotedEscape,
    /// Just after the closing quote.
    ExtAfterQuoted,
    /// CR of the chunk-size line seen; LF must follow.
    SizeLf,
    /// In chunk data, this many bytes to go (never 0).
    Data { remaining: u64 },
    /// Chunk data done; CR must follow.
    DataCr,
    /// Chunk data and CR done; LF must follow.
    DataLf,
    /// At the start of a trailer line (a field, or the final empty line).
    TrailerStart,
    /// In a trailer field name.
    TrailerName,
    /// In a trailer field value.
    TrailerValue,
    /// CR of a trailer field line seen; LF must follow.
    TrailerLf,
    /// CR of the final empty line seen; LF must follow.
    FinalLf,
    /// The whole chunked body has been read.
    Done,
}

/// Incremental chunked decoder. Feed it any slices; it keeps state across calls.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// The chunk-size being read or the size of the current chunk.
    size: u64,
    size_digits: u32,
    ext_bytes: usize,
    trailer_bytes: usize,
    /// The trailer field name being read, lower-cased, as far as it fits.
    trailer_name: TrailerName,
    /// Chunk-size lines completed so far (the last chunk's included).
    chunks: u64,
    decoded: u64,
    error: Option<ParseError>,
    max_body_bytes: u64,
    max_chunk_ext_bytes: usize,
    max_trailer_bytes: usize,
    max_chunk_count: u64,
}

impl ChunkedDecoder {
    /// A decoder at the start of a chunked body, with the limits it needs copied.
    #[must_use]
    pub fn new(limits: &Limits) -> Self {
        Self {
            state: State::Size,
            size: 0,
            size_digits: 0,
            ext_bytes: 0,
            trailer_bytes: 0,
            trailer_name: TrailerName::default(),
            chunks: 0,
            decoded: 0,
            error: None,
            max_body_bytes: limits.max_body_bytes,
            max_chunk_ext_bytes: limits.max_chunk_ext_bytes,
            max_trailer_bytes: limits.max_trailer_bytes,
            max_chunk_count: limits.max_chunk_count,
        }
    }

    /// Decodes from `input`, appending body bytes to `out`. Returns the bytes consumed
    /// from `input` and whether the body is complete (last chunk and trailer section
    /// read; trailers validated, then dropped). When done, the bytes after `consumed`
    /// belong to the next pipelined request; otherwise all of `input` was consumed.
    ///
    /// # Errors
    ///
    /// 400 for malformed framing, 413 when the decoded total would exceed
    /// `max_body_bytes` or the chunks `max_chunk_count`, 431 for trailers over
    /// `max_trailer_bytes`. The error is sticky: later calls return it again.
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(usize, bool), ParseError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let mut pos = 0;
        while pos < input.len() {
            match self.state {
                State::Done => break,
                State::Data { remaining } => {
                    let available = &input[pos..];
                    let n = usize::try_from(remaining)
                        .map_or(available.len(), |r| r.min(available.len()));
                    out.extend_from_slice(&available[..n]);
                    pos += n;
                    let n = n as u64; // usize fits u64 on every target we build for
                    self.decoded += n;
                    self.state = if remaining == n {
                        State::DataCr
                    } else {
                        State::Data {
                            remaining: remaining - n,
                        }
                    };
                }
                _ => {
                    let byte = input[pos];
                    pos += 1;
                    match self.step(byte) {
                        Ok(next) => self.state = next,
                        Err(e) => {
                            self.error = Some(e.clone());
                            return Err(e);
                        }
                    }
                }
            }
        }
        Ok((pos, self.state == State::Done))
    }

    /// Body bytes produced so far.
    #[must_use]
    pub fn decoded_len(&self) -> u64 {
        self.decoded
    }

    /// One byte outside chunk data; returns the next state.
    fn step(&mut self, b: u8) -> Result<State, ParseError> {
        match self.state {
            State::Size => self.size_byte(b),
            State::ExtNameStart
            | State::ExtName
            | State::ExtValueStart
            | State::ExtToken
            | State::ExtQuoted
            | State::ExtQuotedEscape
            | State::ExtAfterQuoted => self.extension_byte(b),
            State::SizeLf => match b {
                b'\n' => self.end_size_line(),
                _ => Err(bad("bare CR in chunk line")),
            },
            State::DataCr => match b {
                b'\r' => Ok(State::DataLf),
                b'\n' => Err(bad("bare LF after chunk data")),
                _ => Err(bad("chunk data not followed by CRLF")),
            },
            State::DataLf => match b {
                b'\n' => {
                    self.size = 0;
                    self.size_digits = 0;
                    self.ext_bytes = 0;
                    Ok(State::Size)
                }
                _ => Err(bad("bare CR after chunk data")),
            },
            State::FinalLf => match b {
                b'\n' => Ok(State::Done),
                _ => Err(bad("bare CR in trailer section")),
            },
            State::TrailerStart | State::TrailerName | State::TrailerValue | State::TrailerLf => {
                self.trailer_byte(b)
            }
            // `decode` handles these without calling `step`.
            State::Data { .. } | State::Done => Ok(self.state),
        }
    }

    fn size_byte(&mut self, b: u8) -> Result<State, ParseError> {
        if let Some(digit) = hex_value(b) {
            self.size_digits += 1;
            if self.size_digits > MAX_SIZE_DIGITS {
                return Err(bad("chunk size has too many digits"));
            }
            // Hex by hand: no sign, no `0x`, no whitespace, and overflow is an error.
            self.size = self
                .size
                .checked_mul(16)
                .and_then(|s| s.checked_add(digit))
                .ok_or(bad("chunk size overflows"))?;
            return Ok(State::Size);
        }
        if self.size_digits == 0 {
            return Err(bad("invalid chunk size"));
        }
        // No whitespace anywhere in the line (see the module docs).
        let next = match b {
            b'\r' => return Ok(State::SizeLf),
            b';' => State::ExtNameStart,
            b'\n' => return Err(bad("bare LF in chunk line")),
            _ => return Err(bad("invalid chunk size")),
        };
        self.count_extension_byte()?;
        Ok(next)
    }

    fn extension_byte(&mut self, b: u8) -> Result<State, ParseError> {
        let next = extension_transition(self.state, b)?;
        if next != State::SizeLf {
            self.count_extension_byte()?;
        }
        Ok(next)
    }

    /// Every extension byte counts, from the first `;` to just before the CR.
    fn count_extension_byte(&mut self) -> Result<(), ParseError> {
        self.ext_bytes += 1;
        if self.ext_bytes > self.max_chunk_ext_bytes {
            return Err(bad("chunk extensions too long"));
        }
        Ok(())
    }

    /// The chunk-size line is complete: check the running total before reading any of
    /// the data, so an oversized body is refused without buffering it.
    fn end_size_line(&mut self) -> Result<State, ParseError> {
        self.chunks += 1;
        if self.chunks > self.max_chunk_count {
            return Err(ParseError::PayloadTooLarge);
        }
        match self.decoded.checked_add(self.size) {
            Some(total) if total <= self.max_body_bytes => {}
            _ => return Err(ParseError::PayloadTooLarge),
        }
        Ok(if self.size == 0 {
            State::TrailerStart
        } else {
            State::Data {
                remaining: self.size,
            }
        })
    }

    /// Trailer fields follow the header rules of parse.rs (token name, colon without
    /// whitespace before it, no obs-fold, field-value bytes, CRLF only), and may not be
    /// one of the fields named in `TrailerName::forbidden`.
    fn trailer_byte(&mut self, b: u8) -> Result<State, ParseError> {
        let next = match (self.state, b) {
            // The final empty line is not counted: max_trailer_bytes = 0 means "none".
            (State::TrailerStart, b'\r') => return Ok(State::FinalLf),
            (State::TrailerStart | State::TrailerName, t) if has_class(t, TCHAR) => {
                if self.state == State::TrailerStart {
                    self.trailer_name = TrailerName::default();
                }
                self.trailer_name.push(t);
                State::TrailerName
            }
            (State::TrailerName, b':') if self.trailer_name.forbidden() => {
                return Err(bad("forbidden field in trailer"))
            }
            (State::TrailerStart, b' ' | b'\t') => return Err(bad("obs-fold in trailer")),
            (State::TrailerStart, b':') => return Err(bad("empty trailer name")),
            (State::TrailerName, b':') => State::TrailerValue,
            (State::TrailerName, b' ' | b'\t') => {
                return Err(bad("whitespace before colon in trailer"))
            }
            (State::TrailerValue, b'\r') => State::TrailerLf,
            (State::TrailerValue, v) if has_class(v, FIELD_VALUE) => State::TrailerValue,
            (State::TrailerLf, b'\n') => State::TrailerStart,
            (State::TrailerLf, _) => return Err(bad("bare CR in trailer section")),
            (_, b'\n') => return Err(bad("bare LF in trailer section")),
            _ => return Err(bad("invalid trailer field")),
        };
        self.trailer_bytes += 1;
        if self.trailer_bytes > self.max_trailer_bytes {
            return Err(ParseError::HeaderFieldsTooLarge);
        }
        Ok(next)
    }
}

/// The start of a trailer field name, lower-cased: enough to recognise the fields a
/// trailer may not carry without buffering names of any length.
#[derive(Debug, Clone, Copy, Default)]
struct TrailerName {
    bytes: [u8; 17],
    len: usize,
}

impl TrailerName {
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = b.to_ascii_lowercase();
        }
        self.len = self.len.saturating_add(1);
    }

    /// Framing and routing fields (RFC 9110 section 6.5.1 forbids them in trailers):
    /// dropped here anyway, but a proxy that merges trailers into the head would act
    /// on them.
    fn forbidden(&self) -> bool {
        let name = &self.bytes[..self.len.min(self.bytes.len())];
        self.len <= self.bytes.len()
            && matches!(name, b"content-length" | b"transfer-encoding" | b"host")
    }
}

/// One byte of `chunk-ext` (or the CR that ends the line) in extension state `s`.
// The table reads as one grammar rule per row; merging rows by target state would
// hide the grammar, so identical arm bodies are intended.
#[allow(clippy::match_same_arms)]
fn extension_transition(s: State, b: u8) -> Result<State, ParseError> {
    let tchar = has_class(b, TCHAR);
    Ok(match (s, b) {
        (State::ExtName | State::ExtToken | State::ExtAfterQuoted, b';') => State::ExtNameStart,
        (State::ExtNameStart | State::ExtName, _) if tchar => State::ExtName,
        (State::ExtName, b'=') => State::ExtValueStart,
        (State::ExtValueStart, b'"') => State::ExtQuoted,
        (State::ExtValueStart | State::ExtToken, _) if tchar => State::ExtToken,
        (State::ExtQuoted, b'"') => State::ExtAfterQuoted,
        (State::ExtQuoted, b'\\') => State::ExtQuotedEscape,
        (State::ExtQuoted, _) if has_class(b, QDTEXT) => State::ExtQuoted,
        // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text ): the field-value bytes.
        (State::ExtQuotedEscape, _) if has_class(b, FIELD_VALUE) => State::ExtQuoted,
        // The line may end after a name or a value, never after `;` or `=`.
        (State::ExtName | State::ExtToken | State::ExtAfterQuoted, b'\r') => State::SizeLf,
        (_, b'\n') => return Err(bad("bare LF in chunk line")),
        _ => return Err(bad("invalid chunk extension")),
    })
}

fn hex_value(b: u8) -> Option<u64> {
    match b {
        b'0'..=b'9' => Some(u64::from(b - b'0')),
        b'a'..=b'f' => Some(u64::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u64::from(b - b'A' + 10)),
        _ => None,
    }
}

fn bad(reason: &'static str) -> ParseError {
    ParseError::BadRequest(reason)
}

/// Content-Length framing needs no state machine: of `available` buffered bytes, the
/// first `min(remaining, available)` belong to a body with `remaining` bytes to go.
#[must_use]
pub fn length_take(remaining: u64, available: usize) -> usize {
    usize::try_from(remaining).map_or(available, |r| r.min(available))
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
