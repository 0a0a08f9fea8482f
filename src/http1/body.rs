//! Request body decoders: the chunked transfer coding (RFC 9112 section 7.1), and a
//! one-line helper for Content-Length framing.
//!
//! # Theory
//!
//! ```text
//! chunked-body = *chunk last-chunk trailer-section CRLF
//! chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! last-chunk   = 1*("0") [ chunk-ext ] CRLF
//! chunk-ext    = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )
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
//! disagreement about where a chunk ends is a smuggling vector. Extensions and
//! trailers are validated, then dropped: nothing above this layer sees them.
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
    /// BWS after the size or an extension value: only more BWS or `;` may follow.
    ExtWs,
    /// After `;`: BWS or the first byte of an extension name.
    ExtNameStart,
    /// In an extension name.
    ExtName,
    /// BWS after an extension name: `=`, `;` or more BWS.
    ExtNameWs,
    /// After `=`: BWS, a token or a quoted-string.
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
    decoded: u64,
    error: Option<ParseError>,
    max_body_bytes: u64,
    max_chunk_ext_bytes: usize,
    max_trailer_bytes: usize,
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
            decoded: 0,
            error: None,
            max_body_bytes: limits.max_body_bytes,
            max_chunk_ext_bytes: limits.max_chunk_ext_bytes,
            max_trailer_bytes: limits.max_trailer_bytes,
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
    /// `max_body_bytes`, 431 for trailers over `max_trailer_bytes`. The error is
    /// sticky: later calls return it again.
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
            State::ExtWs
            | State::ExtNameStart
            | State::ExtName
            | State::ExtNameWs
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
        // No whitespace may end the line: BWS is only allowed before a `;`.
        let next = match b {
            b'\r' => return Ok(State::SizeLf),
            b';' => State::ExtNameStart,
            b' ' | b'\t' => State::ExtWs,
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

    /// Every extension byte counts, from the first `;` or BWS to just before the CR.
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
    /// whitespace before it, no obs-fold, field-value bytes, CRLF only).
    fn trailer_byte(&mut self, b: u8) -> Result<State, ParseError> {
        let next = match (self.state, b) {
            // The final empty line is not counted: max_trailer_bytes = 0 means "none".
            (State::TrailerStart, b'\r') => return Ok(State::FinalLf),
            (State::TrailerStart | State::TrailerName, t) if has_class(t, TCHAR) => {
                State::TrailerName
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

/// One byte of `chunk-ext` (or the CR that ends the line) in extension state `s`.
// The table reads as one grammar rule per row; merging rows by target state would
// hide the grammar, so identical arm bodies are intended.
#[allow(clippy::match_same_arms)]
fn extension_transition(s: State, b: u8) -> Result<State, ParseError> {
    let tchar = has_class(b, TCHAR);
    Ok(match (s, b) {
        (State::ExtWs, b' ' | b'\t') => State::ExtWs,
        (
            State::ExtWs
            | State::ExtName
            | State::ExtNameWs
            | State::ExtToken
            | State::ExtAfterQuoted,
            b';',
        ) => State::ExtNameStart,
        (State::ExtNameStart, b' ' | b'\t') => State::ExtNameStart,
        (State::ExtNameStart | State::ExtName, _) if tchar => State::ExtName,
        (State::ExtName | State::ExtNameWs, b' ' | b'\t') => State::ExtNameWs,
        (State::ExtName | State::ExtNameWs, b'=') => State::ExtValueStart,
        (State::ExtValueStart, b' ' | b'\t') => State::ExtValueStart,
        (State::ExtValueStart, b'"') => State::ExtQuoted,
        (State::ExtValueStart | State::ExtToken, _) if tchar => State::ExtToken,
        (State::ExtToken | State::ExtAfterQuoted, b' ' | b'\t') => State::ExtWs,
        (State::ExtQuoted, b'"') => State::ExtAfterQuoted,
        (State::ExtQuoted, b'\\') => State::ExtQuotedEscape,
        (State::ExtQuoted, _) if has_class(b, QDTEXT) => State::ExtQuoted,
        // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text ): the field-value bytes.
        (State::ExtQuotedEscape, _) if has_class(b, FIELD_VALUE) => State::ExtQuoted,
        // The line may end after a name or a value, never after BWS, `;` or `=`.
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
mod tests {
    use super::super::error::ParseError;
    use super::super::limits::Limits;
    use super::{length_take, ChunkedDecoder};

    fn bad(reason: &'static str) -> ParseError {
        ParseError::BadRequest(reason)
    }

    /// Feeds `input` in pieces of `step` bytes. `Ok(Some((body, consumed)))` when the
    /// body completed, `Ok(None)` when the input ran out first.
    fn feed(
        input: &[u8],
        step: usize,
        limits: &Limits,
    ) -> Result<Option<(Vec<u8>, usize)>, ParseError> {
        let mut decoder = ChunkedDecoder::new(limits);
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < input.len() {
            let end = (pos + step).min(input.len());
            let (consumed, done) = decoder.decode(&input[pos..end], &mut out)?;
            pos += consumed;
            assert_eq!(decoder.decoded_len(), out.len() as u64);
            if done {
                return Ok(Some((out, pos)));
            }
            assert_eq!(pos, end, "an unfinished decoder consumes everything");
        }
        Ok(None)
    }

    /// Runs `input` whole, byte by byte and in a few other splits; all must agree.
    fn decode_every_way(
        input: &[u8],
        limits: &Limits,
    ) -> Result<Option<(Vec<u8>, usize)>, ParseError> {
        let whole = feed(input, input.len().max(1), limits);
        for step in [1, 2, 3, 7, 64] {
            assert_eq!(
                feed(input, step, limits),
                whole,
                "step {step}: {:?}",
                String::from_utf8_lossy(input)
            );
        }
        whole
    }

    #[test]
    fn decodes_valid_bodies_the_same_however_split() {
        let table: &[(&[u8], &[u8])] = &[
            (b"0\r\n\r\n", b""),
            (b"5\r\nhello\r\n0\r\n\r\n", b"hello"),
            (b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", b"hello world"),
            (
                b"A\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n",
                b"0123456789abcdefghij",
            ),
            (b"0005\r\nhello\r\n000\r\n\r\n", b"hello"),
            (b"3\r\n\r\n\n\r\n0\r\n\r\n", b"\r\n\n"),
            // Extensions: names, token and quoted values, BWS around `;` and `=`.
            (b"5;a\r\nhello\r\n0\r\n\r\n", b"hello"),
            (b"5;a=b;c\r\nhello\r\n0;last\r\n\r\n", b"hello"),
            (
                b"5 ; a = b ;\tc=\"x y\\\"z\"\r\nhello\r\n0\r\n\r\n",
                b"hello",
            ),
            (b"5;a=\"\"\r\nhello\r\n0\r\n\r\n", b"hello"),
            (b"5;a=\"caf\xc3\xa9\"\r\nhello\r\n0\r\n\r\n", b"hello"),
            // Trailers are validated and dropped.
            (
                b"5\r\nhello\r\n0\r\nX-Sum: abc\r\nX-Empty:\r\n\r\n",
                b"hello",
            ),
            (b"5\r\nhello\r\n0\r\nX-Bin: \t\x80\xff \r\n\r\n", b"hello"),
        ];
        for (input, body) in table {
            let got = decode_every_way(input, &Limits::default());
            assert_eq!(
                got,
                Ok(Some((body.to_vec(), input.len()))),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn stops_at_the_end_of_the_body() {
        let input = b"3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
        let got = decode_every_way(input, &Limits::default());
        assert_eq!(got, Ok(Some((b"abc".to_vec(), 13))));
        // A finished decoder consumes nothing more.
        let mut decoder = ChunkedDecoder::new(&Limits::default());
        let mut out = Vec::new();
        assert_eq!(decoder.decode(input, &mut out), Ok((13, true)));
        assert_eq!(decoder.decode(b"more", &mut out), Ok((0, true)));
        assert_eq!(out, b"abc");
    }

    #[test]
    fn every_proper_prefix_needs_more_data() {
        let input = b"5;a=\"b\"\r\nhello\r\n1\r\n!\r\n0\r\nX: y\r\n\r\n";
        for cut in 0..input.len() {
            assert_eq!(
                feed(&input[..cut], 1, &Limits::default()),
                Ok(None),
                "cut at {cut}"
            );
            assert_eq!(
                feed(&input[..cut], cut.max(1), &Limits::default()),
                Ok(None),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn rejects_invalid_framing() {
        let size = bad("invalid chunk size");
        let ext = bad("invalid chunk extension");
        let table: &[(&[u8], ParseError)] = &[
            // Chunk size: 1*HEXDIG, by hand.
            (b"\r\n", size.clone()),
            (b"g\r\n", size.clone()),
            (b" 5\r\nhello\r\n0\r\n\r\n", size.clone()),
            (b"+5\r\nhello\r\n0\r\n\r\n", size.clone()),
            (b"-5\r\nhello\r\n0\r\n\r\n", size.clone()),
            (b"0x5\r\nhello\r\n0\r\n\r\n", size.clone()),
            (b"5_0\r\n", size.clone()),
            (b"5g\r\n", size),
            (b"5 \r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5\t\r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"10000000000000000\r\n", bad("chunk size overflows")),
            (b"fffffffffffffffff\r\n", bad("chunk size overflows")),
            (
                b"000000000000000000000000000000001\r\n",
                bad("chunk size has too many digits"),
            ),
            // Chunk-size line endings.
            (b"5\nhello\r\n0\r\n\r\n", bad("bare LF in chunk line")),
            (b"5\rhello\r\n0\r\n\r\n", bad("bare CR in chunk line")),
            (b"5;a\nhello\r\n", bad("bare LF in chunk line")),
            // Extensions.
            (b"5;\r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5;=b\r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5;a=\r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5;a=b c\r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5;a b\r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5;a=b \r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5;a=\"b\r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5;a=\"b\"c\r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5;a=\"\\\x01\"\r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5;a@b\r\nhello\r\n0\r\n\r\n", ext.clone()),
            (b"5;a=b\x00\r\nhello\r\n0\r\n\r\n", ext),
            // Chunk data must be followed by exactly CRLF.
            (
                b"5\r\nhelloX\r\n0\r\n\r\n",
                bad("chunk data not followed by CRLF"),
            ),
            (b"5\r\nhello\n0\r\n\r\n", bad("bare LF after chunk data")),
            (b"5\r\nhello\rX0\r\n\r\n", bad("bare CR after chunk data")),
            (
                b"3\r\nhello\r\n0\r\n\r\n",
                bad("chunk data not followed by CRLF"),
            ),
            // Trailers.
            (b"0\r\nX: y\n\r\n", bad("bare LF in trailer section")),
            (b"0\r\nX: y\rz\r\n\r\n", bad("bare CR in trailer section")),
            (b"0\r\n\rX", bad("bare CR in trailer section")),
            (b"0\r\n\n", bad("bare LF in trailer section")),
            (
                b"0\r\nX : y\r\n\r\n",
                bad("whitespace before colon in trailer"),
            ),
            (b"0\r\nX: y\r\n folded\r\n\r\n", bad("obs-fold in trailer")),
            (b"0\r\n: y\r\n\r\n", bad("empty trailer name")),
            (b"0\r\nX\r\n\r\n", bad("invalid trailer field")),
            (b"0\r\nX(: y\r\n\r\n", bad("invalid trailer field")),
            (b"0\r\nX: a\x00b\r\n\r\n", bad("invalid trailer field")),
            (b"0\r\nX: a\x7fb\r\n\r\n", bad("invalid trailer field")),
        ];
        for (input, want) in table {
            let got = decode_every_way(input, &Limits::default());
            assert_eq!(
                got,
                Err(want.clone()),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn limits_have_exact_edges() {
        let limits = Limits {
            max_body_bytes: 10,
            max_chunk_ext_bytes: 6,
            max_trailer_bytes: 8,
            ..Limits::default()
        };
        let table: &[(&[u8], Result<usize, ParseError>)] = &[
            // Body total: 10 allowed, 11 refused at the size line, before the data.
            (b"5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n", Ok(10)),
            (b"5\r\nhello\r\n6\r\n", Err(ParseError::PayloadTooLarge)),
            (b"b\r\n", Err(ParseError::PayloadTooLarge)),
            (b"ffffffffffffffff\r\n", Err(ParseError::PayloadTooLarge)),
            // Extension bytes per line: 6 allowed (";a=bcd" and " ;a=bc"), 7 refused.
            (b"1;a=bcd\r\nx\r\n0;a=bcd\r\n\r\n", Ok(1)),
            (b"1 ;a=bc\r\nx\r\n0\r\n\r\n", Ok(1)),
            (b"1;a=bcde\r\n", Err(bad("chunk extensions too long"))),
            // Trailer bytes: "X: 1234\r\n" is 9, one too many; "X: 123\r\n" is 8.
            (b"0\r\nX: 123\r\n\r\n", Ok(0)),
            (
                b"0\r\nX: 1234\r\n\r\n",
                Err(ParseError::HeaderFieldsTooLarge),
            ),
        ];
        for (input, want) in table {
            let got = decode_every_way(input, &limits).map(|r| r.unwrap().0.len());
            assert_eq!(&got, want, "{:?}", String::from_utf8_lossy(input));
        }
        let no_trailers = Limits {
            max_trailer_bytes: 0,
            ..Limits::default()
        };
        assert_eq!(
            feed(b"0\r\n\r\n", 1, &no_trailers),
            Ok(Some((Vec::new(), 5)))
        );
        assert_eq!(
            feed(b"0\r\nX: y\r\n\r\n", 1, &no_trailers),
            Err(ParseError::HeaderFieldsTooLarge)
        );
    }

    #[test]
    fn errors_are_sticky() {
        let mut decoder = ChunkedDecoder::new(&Limits::default());
        let mut out = Vec::new();
        assert_eq!(
            decoder.decode(b"x", &mut out),
            Err(bad("invalid chunk size"))
        );
        assert_eq!(
            decoder.decode(b"0\r\n\r\n", &mut out),
            Err(bad("invalid chunk size"))
        );
    }

    #[test]
    fn large_chunks_are_copied_in_bulk() {
        let data = vec![b'z'; 100_000];
        let mut input = format!("{:x}\r\n", data.len()).into_bytes();
        input.extend_from_slice(&data);
        input.extend_from_slice(b"\r\n0\r\n\r\n");
        let got = decode_every_way(&input, &Limits::default());
        assert_eq!(got, Ok(Some((data, input.len()))));
    }

    /// Mutated valid bodies must never panic and must decode the same however split.
    #[test]
    fn mutated_bodies_never_panic_and_ignore_splits() {
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let corpus: &[&[u8]] = &[
            b"5;a=\"b\\\"c\"\r\nhello\r\n1 ; x\r\n!\r\n0\r\nX: y\r\n\r\n",
            b"a\r\n0123456789\r\n0\r\n\r\n",
        ];
        let interesting = b"\r\n \t;=\"\\:\x00\x7f\x800119afAFgxX";
        for _ in 0..5_000 {
            let mut raw = corpus[usize::try_from(next() % 2).unwrap()].to_vec();
            for _ in 0..=next() % 3 {
                let at = usize::try_from(next() % (raw.len() as u64 + 1)).unwrap();
                let byte = interesting[usize::try_from(next() % interesting.len() as u64).unwrap()];
                match next() % 3 {
                    0 if at < raw.len() => raw[at] = byte,
                    1 if at < raw.len() => {
                        raw.remove(at);
                    }
                    _ => raw.insert(at, byte),
                }
            }
            decode_every_way(&raw, &Limits::default()).ok();
        }
    }

    #[test]
    fn length_take_table() {
        let table = [
            (0, 10, 0),
            (5, 10, 5),
            (10, 5, 5),
            (u64::MAX, 7, 7),
            (3, 0, 0),
        ];
        for (remaining, available, want) in table {
            assert_eq!(length_take(remaining, available), want);
        }
    }
}
