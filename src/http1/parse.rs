//! Sans-IO parser for the head of an HTTP/1.1 request (RFC 9112 sections 2-6).
//!
//! # Theory
//!
//! The parser keeps no state between calls. It is handed everything the connection
//! has buffered and answers one of three things:
//!
//! - `Ok(Some(head))`: `buf[..head.len]` is a complete, valid head. Every range in
//!   `head` points into `buf`; the body (framed by `head.body`) and any pipelined
//!   request start at `head.len`.
//! - `Ok(None)`: no verdict yet; call again with more bytes. Only returned while
//!   every complete line seen so far is valid and no limit is already certain to be
//!   exceeded, so a client cannot park an oversized or malformed head in our buffer.
//! - `Err(e)`: answer `e.status()` and close. Nothing after this point in the buffer
//!   may be processed: once framing is in doubt the next "request" could be the tail
//!   of a smuggled one.
//!
//! Re-parsing from the start after `Ok(None)` costs at most the limits (a head is
//! capped at `max_start_line + max_header_bytes`), and in the common case the whole
//! head arrives in one read and is parsed once.
//!
//! # Why strict
//!
//! A proxy in front of us and this parser must agree byte for byte on where each
//! request ends. Every place the RFCs let implementations differ (two lengths, a
//! coding before `chunked`, whitespace before the colon, obs-fold, bare CR or LF) is a
//! place two parsers can disagree, so each is a 400 here rather than a guess. Where
//! we are stricter than RFC 9110/9112 or h11 the rule says so in a comment.
//!
//! # Speed
//!
//! One pass: each part of a line is scanned with its byte class (one table lookup
//! per byte, or 8 bytes per step for the long runs: targets and values) and must stop
//! exactly at the byte the grammar expects next, so finding the line end and
//! validating the line are the same loop, and no scan ever looks past the limit.
//! Nothing is copied and no `String` is built; the only allocation is the headers
//! `Vec`, which `parse_head_reusing` recycles. A connection's requests repeat one
//! `Host` value: the last one found valid is kept in the same `Scratch`, and the
//! same bytes are not validated again (the verdict on equal bytes cannot differ).

use std::net::Ipv6Addr;
use std::ops::Range;

use memchr::memchr;

mod fields;

use super::error::ParseError;
use super::limits::Limits;
use fields::{parse_fields, Fields};

/// The HTTP versions we speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
    /// Never parsed: the version of a request an HTTP/2 stream carries (its HTTP/1.1
    /// head is written by `http2::as_h1`, and the shell marks it).
    Http2,
}

/// How the body that follows the head is framed (RFC 9112 section 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// No body: no framing header, or `Content-Length: 0`.
    Empty,
    /// Exactly this many bytes (never 0, never above `max_body_bytes`).
    Length(u64),
    /// `Transfer-Encoding: chunked`; decode with `body::ChunkedDecoder`.
    Chunked,
}

/// One header field line, as offsets into the buffer given to the parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderSpan {
    pub name: Range<usize>,
    /// Leading and trailing OWS already stripped; may be empty.
    pub value: Range<usize>,
}

/// A parsed request head. Ranges are offsets into the parsed buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: Range<usize>,
    pub target: Range<usize>,
    pub version: Version,
    pub headers: Vec<HeaderSpan>,
    pub body: BodyKind,
    /// 1.1: true unless Connection has `close`; 1.0: true only with `keep-alive`
    /// (and no `close`).
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request. RFC 9110 section 10.1.1 says to
    /// ignore it on 1.0. Other expectations are ignored too (as h11 does) instead of
    /// a 417: the handler still sees the header and may refuse.
    pub expect_continue: bool,
    /// HTTP/1.1, Connection has the `upgrade` token and a non-empty Upgrade header is
    /// present (RFC 9110 section 7.8 says to ignore Upgrade on 1.0).
    pub upgrade: bool,
    /// Bytes consumed by the head, from the request line to the final CRLF CRLF.
    pub len: usize,
}

/// Parses a request head from the start of `buf`; see the module docs for the three
/// possible answers.
///
/// # Errors
///
/// The request is invalid or over a limit; answer `status()` and close.
pub fn parse_head(buf: &[u8], limits: &Limits) -> Result<Option<Head>, ParseError> {
    parse_head_reusing(buf, limits, &mut Scratch::default())
}

/// What one connection's parser keeps between heads: the headers vector to refill,
/// and the last `Host` value found valid.
#[derive(Debug, Default)]
pub struct Scratch {
    /// Filled by each parse; on `Ok(Some(head))` it moves into `head.headers`, so
    /// hand that back here once done with the request.
    pub headers: Vec<HeaderSpan>,
    host: Vec<u8>,
}

/// Like [`parse_head`], with everything a connection can reuse in `scratch`: on
/// `Ok(Some(head))` the header vector moves into `head.headers` (hand it back to
/// `scratch.headers` to parse the next head without allocating).
///
/// # Errors
///
/// The request is invalid or over a limit; answer `status()` and close.
#[inline(never)] // one function of its own: inlined into its caller, its header loop
                 // measured slower (callgrind, headers20)
pub fn parse_head_reusing(
    buf: &[u8],
    limits: &Limits,
    scratch: &mut Scratch,
) -> Result<Option<Head>, ParseError> {
    scratch.headers.clear();
    let Some(line_start) = check_line_start(buf)? else {
        return Ok(None);
    };
    let Some(line) = parse_request_line(buf, line_start, limits)? else {
        return Ok(None);
    };
    let mut fields = Fields::new(line.version, &scratch.host);
    let Some(len) = parse_fields(buf, line.end, limits, &mut scratch.headers, &mut fields)? else {
        return Ok(None);
    };
    let head = Head {
        method: line.method,
        target: line.target,
        version: line.version,
        headers: Vec::new(),
        body: fields.body(limits)?,
        keep_alive: fields.keep_alive(),
        expect_continue: fields.expect_continue,
        upgrade: fields.upgrade(),
        len,
    };
    if let Some(host) = fields.new_valid_host {
        scratch.host.clear();
        scratch.host.extend_from_slice(&buf[host]);
    }
    Ok(Some(Head {
        headers: std::mem::take(&mut scratch.headers),
        ..head
    }))
}

// ---------------------------------------------------------------------------------
// Byte classes: one 256-entry table, one lookup per byte on the hot path. Shared with
// body.rs, which validates chunk extensions and trailers with the same rules.

/// tchar, RFC 9110 section 5.6.2: methods, field names, list tokens.
pub(super) const TCHAR: u8 = 1;
/// field-vchar, SP, HTAB (RFC 9110 section 5.5): header and trailer values.
pub(super) const FIELD_VALUE: u8 = 1 << 1;
/// Visible ASCII 0x21-0x7E: the request target.
const TARGET: u8 = 1 << 2;
/// reg-name characters (RFC 3986 section 3.2.2) other than `%`.
const REG_NAME: u8 = 1 << 3;
/// qdtext, RFC 9110 section 5.6.4: inside a quoted-string.
pub(super) const QDTEXT: u8 = 1 << 4;

static CLASS: [u8; 256] = build_classes();

const fn build_classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let alnum = matches!(b, 0x30..=0x39 | 0x41..=0x5A | 0x61..=0x7A);
        if alnum {
            t[b] |= TCHAR | REG_NAME;
        }
        if matches!(b, 0x09 | 0x20..=0x7E | 0x80..=0xFF) {
            t[b] |= FIELD_VALUE;
        }
        if matches!(b, 0x21..=0x7E) {
            t[b] |= TARGET;
        }
        // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
        if matches!(b, 0x09 | 0x20 | 0x21 | 0x23..=0x5B | 0x5D..=0x7E | 0x80..=0xFF) {
            t[b] |= QDTEXT;
        }
        b += 1;
    }
    t = mark(t, b"!#$%&'*+-.^_`|~", TCHAR);
    mark(t, b"-._~!$&'()*+,;=", REG_NAME)
}

const fn mark(mut table: [u8; 256], bytes: &[u8], class: u8) -> [u8; 256] {
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] |= class;
        i += 1;
    }
    table
}

#[inline]
pub(super) fn has_class(b: u8, class: u8) -> bool {
    CLASS[usize::from(b)] & class != 0
}

/// Index of the first byte at or after `from` not in `class` (or `buf.len()`).
#[inline]
fn scan(buf: &[u8], from: usize, class: u8) -> usize {
    buf[from..]
        .iter()
        .position(|&b| !has_class(b, class))
        .map_or(buf.len(), |i| from + i)
}

/// Like `scan`, but 8 bytes a step: `unplain` marks the bytes of a little-endian
/// word that may not be in `class` (the lowest mark is exact, see below), so a run
/// of plain words costs one test each and the first doubtful byte is found with one
/// `trailing_zeros`, not a byte loop. A doubtful byte that is in `class` after all
/// (a tab in a value, say) is stepped over. Values and targets are the long runs of
/// a head, and this is where the parser spends its time.
#[inline]
fn scan_words(buf: &[u8], from: usize, class: u8, unplain: fn(u64) -> u64) -> usize {
    let mut i = from;
    while let Some(Ok(word)) = buf.get(i..i + 8).map(<[u8; 8]>::try_from) {
        let marks = unplain(u64::from_le_bytes(word));
        if marks == 0 {
            i += 8;
            continue;
        }
        // A mark is a byte's high bit: its index is the bit's over 8.
        let at = i + (marks.trailing_zeros() / 8) as usize;
        if !has_class(buf[at], class) {
            return at;
        }
        i = at + 1;
    }
    scan(buf, i, class)
}

// SWAR tests from "Bit Twiddling Hacks" (hasless / hasmore), as masks: the high bit
// of each byte that matches, and maybe of bytes above one that does (a borrow or
// carry moves up, never down), so the lowest mark is exact and none means none.
const ONES: u64 = u64::from_ne_bytes([1; 8]);
const HIGH_BITS: u64 = ONES * 0x80;

/// Marks bytes below `n` (n <= 128).
#[inline]
fn bytes_below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH_BITS
}

/// Marks bytes above `n` (n <= 127).
#[inline]
fn bytes_above(x: u64, n: u8) -> u64 {
    (x.wrapping_add(ONES * u64::from(127 - n)) | x) & HIGH_BITS
}

/// Marks all but the bytes 0x20-0x7E and 0x80-0xFF: field-value bytes (HTAB is
/// marked, and judged by its class).
fn unplain_field_value(x: u64) -> u64 {
    bytes_below(x, 0x20) | bytes_below(x ^ (ONES * 0x7F), 1)
}

/// Marks all but the bytes 0x21-0x7E: request-target bytes.
fn unplain_target(x: u64) -> u64 {
    bytes_below(x, 0x21) | bytes_above(x, 0x7E)
}

/// A token (RFC 9110 5.6.2): a method or a header name.
pub fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| has_class(b, TCHAR))
}

fn bad(reason: &'static str) -> ParseError {
    ParseError::BadRequest(reason)
}

/// Names the framing-critical bytes (NUL, CR) when one made a line invalid, so logs
/// say "bare CR" rather than a generic reason.
#[cold]
fn invalid_byte(b: u8, otherwise: &'static str) -> ParseError {
    match b {
        0 => bad("NUL byte in request head"),
        b'\r' => bad("bare CR in request head"),
        b'\n' => bad("bare LF in request head"),
        _ => bad(otherwise),
    }
}

// ---------------------------------------------------------------------------------
// Request line.

/// Returns where the request line starts: at the first byte, always.
///
/// Stricter than RFC 9112 section 2.2, which lets a server skip empty lines before
/// the request line (a CRLF some old clients sent after a POST body): h11 refuses
/// them, and we are never more lenient than h11 (docs/security.md). So a CR or LF
/// as the first byte is a 400 at once, whatever follows it.
fn check_line_start(buf: &[u8]) -> Result<Option<usize>, ParseError> {
    match buf {
        [] => Ok(None),
        [b'\r', b'\n', ..] => Err(bad("empty line before the request line")),
        [b'\r', ..] => Err(bad("bare CR in request head")),
        [b'\n', ..] => Err(bad("bare LF in request head")),
        _ => Ok(Some(0)),
    }
}

/// The parts of a request line, and the index just past its LF.
struct RequestLine {
    method: Range<usize>,
    target: Range<usize>,
    version: Version,
    end: usize,
}

/// What a CR found at `cr` in `line` turns out to be, once the next byte is known.
enum AtCr {
    /// CRLF: the line ends here.
    LineEnd,
    /// The CR is the last byte we may look at; wait for more.
    NeedMore,
    /// Anything but LF follows.
    BareCr,
}

fn at_cr(line: &[u8], cr: usize) -> AtCr {
    match line.get(cr + 1) {
        Some(b'\n') => AtCr::LineEnd,
        None => AtCr::NeedMore,
        Some(_) => AtCr::BareCr,
    }
}

/// `HTTP/1.1\r\n` or `HTTP/1.0\r\n` (10 bytes), read as one word and the CRLF: two
/// compares instead of a byte-wise match of both strings (~15 instructions less per
/// request, callgrind).
fn known_version(ten: &[u8]) -> Option<Version> {
    const HTTP11: u64 = u64::from_le_bytes(*b"HTTP/1.1");
    const HTTP10: u64 = u64::from_le_bytes(*b"HTTP/1.0");
    let (word, crlf) = ten.split_first_chunk::<8>()?;
    if crlf != b"\r\n" {
        return None;
    }
    match u64::from_le_bytes(*word) {
        HTTP11 => Some(Version::Http11),
        HTTP10 => Some(Version::Http10),
        _ => None,
    }
}

/// `method SP request-target SP HTTP-version CRLF` from `start`, in one pass: each
/// part is scanned with its byte class and must stop at the byte the grammar expects
/// next. Running out of bytes mid-line is `Ok(None)`, unless the window stopped at
/// the limit rather than at the end of `buf`: then the line cannot fit (414).
/// Invalid bytes are rejected as soon as they arrive, so a TLS handshake on the
/// plain port is answered at once instead of waiting for a timeout.
fn parse_request_line(
    buf: &[u8],
    start: usize,
    limits: &Limits,
) -> Result<Option<RequestLine>, ParseError> {
    // The line including CRLF may be max_start_line long: never look further,
    // however much the client has sent.
    let limit_end = start.saturating_add(limits.max_start_line);
    let line = &buf[..buf.len().min(limit_end)];
    let more = || {
        if buf.len() >= limit_end {
            Err(ParseError::UriTooLong)
        } else {
            Ok(None)
        }
    };
    // `GET ` as one compare: the scan below stops at the same byte for it.
    let method_end = if line[start..].starts_with(b"GET ") {
        start + 3
    } else {
        scan(line, start, TCHAR)
    };
    match line.get(method_end) {
        Some(b' ') if method_end > start => {}
        None => return more(),
        Some(b'\r') if method_end > start => {
            return match at_cr(line, method_end) {
                AtCr::LineEnd => Err(bad("missing request target")),
                AtCr::NeedMore => more(),
                AtCr::BareCr => Err(bad("bare CR in request head")),
            }
        }
        Some(&b) => return Err(invalid_byte(b, "invalid method")),
    }
    let target_start = method_end + 1;
    let target_end = scan_words(line, target_start, TARGET, unplain_target);
    match line.get(target_end) {
        Some(b' ') if target_end > target_start => {}
        Some(b' ') => return Err(bad("more than one space in request line")),
        None => return more(),
        Some(b'\r') if target_end > target_start => {
            return match at_cr(line, target_end) {
                // `GET /path` alone is an HTTP/0.9 request, which we do not speak.
                AtCr::LineEnd => Err(bad("missing HTTP version")),
                AtCr::NeedMore => more(),
                AtCr::BareCr => Err(bad("bare CR in request head")),
            };
        }
        Some(&b) => return Err(invalid_byte(b, "invalid request target")),
    }
    let version_start = target_end + 1;
    // The two versions clients send, with their CRLF, as one compare each: the
    // same verdict the scan below gives these bytes (all of them TARGET bytes up
    // to a CR, a known version, then LF), and within the line's limit (`line`).
    let known = line
        .get(version_start..version_start + 10)
        .and_then(known_version);
    if let Some(version) = known {
        check_target_form(&buf[start..method_end], &buf[target_start..target_end])?;
        return Ok(Some(RequestLine {
            method: start..method_end,
            target: target_start..target_end,
            version,
            end: version_start + 10,
        }));
    }
    let cr = scan(line, version_start, TARGET);
    match line.get(cr) {
        Some(b'\r') => {}
        // No need to wait for the CR of something that is already not a version.
        None if cr - version_start > 8 => return Err(bad("invalid HTTP version")),
        None => return more(),
        Some(&b) => return Err(invalid_byte(b, "invalid HTTP version")),
    }
    let version = parse_version(&line[version_start..cr])?;
    match at_cr(line, cr) {
        AtCr::LineEnd => {}
        AtCr::NeedMore => return more(),
        AtCr::BareCr => return Err(bad("bare CR in request head")),
    }
    check_target_form(&buf[start..method_end], &buf[target_start..target_end])?;
    Ok(Some(RequestLine {
        method: start..method_end,
        target: target_start..target_end,
        version,
        end: cr + 2,
    }))
}

#[inline(always)] // into the parser's own function; out of line it measured more
#[allow(clippy::inline_always)]
fn parse_version(v: &[u8]) -> Result<Version, ParseError> {
    match v {
        b"HTTP/1.1" => Ok(Version::Http11),
        b"HTTP/1.0" => Ok(Version::Http10),
        // Well-formed but another version: 505 tells the client what went wrong.
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            Err(ParseError::VersionNotSupported)
        }
        _ => Err(bad("invalid HTTP version")),
    }
}

/// RFC 9112 section 3.2: which target form goes with which method.
#[inline(always)] // as parse_version
#[allow(clippy::inline_always)]
fn check_target_form(method: &[u8], target: &[u8]) -> Result<(), ParseError> {
    // Methods are case-sensitive (RFC 9110 section 9.1): `connect` is some other
    // method, and its `host:port` target fails the absolute-form check below.
    if method == b"CONNECT" {
        return if valid_authority(target, true) {
            Ok(())
        } else {
            Err(bad("CONNECT needs an authority-form target"))
        };
    }
    match target {
        [b'/', ..] => Ok(()),
        b"*" if method == b"OPTIONS" => Ok(()),
        b"*" => Err(bad("asterisk-form target is only for OPTIONS")),
        _ if valid_absolute_form(target) => Ok(()),
        _ => Err(bad("invalid request target")),
    }
}

/// absolute-form, as a proxy would send it. Only http and https: we are an origin
/// server, and RFC 9110 section 4.2 requires a non-empty host for both. Userinfo is
/// rejected (RFC 9110 section 4.2.4 says to treat it as an error).
fn valid_absolute_form(target: &[u8]) -> bool {
    let rest = if starts_with_ignore_case(target, b"http://") {
        &target[7..]
    } else if starts_with_ignore_case(target, b"https://") {
        &target[8..]
    } else {
        return false;
    };
    let authority_end = rest
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(rest.len());
    valid_authority(&rest[..authority_end], false)
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// `host [":" port]` with a non-empty host: reg-name (which covers IPv4) or
/// `[IPv6]`. `IPvFuture` and zone identifiers are rejected; no client sends them.
/// The port may be empty unless `port_required` (RFC 3986 `port = *DIGIT`; CONNECT
/// needs a real one), and must be at most 65535.
fn valid_authority(v: &[u8], port_required: bool) -> bool {
    let (host_ok, port) = if let Some(rest) = v.strip_prefix(b"[") {
        let Some(close) = memchr(b']', rest) else {
            return false;
        };
        let port = match &rest[close + 1..] {
            [] => None,
            [b':', port @ ..] => Some(port),
            _ => return false,
        };
        (is_ipv6(&rest[..close]), port)
    } else {
        match memchr(b':', v) {
            Some(i) => (valid_reg_name(&v[..i]), Some(&v[i + 1..])),
            None => (valid_reg_name(v), None),
        }
    };
    host_ok
        && match port {
            None => !port_required,
            Some(p) => valid_port(p, port_required),
        }
}

fn is_ipv6(s: &[u8]) -> bool {
    std::str::from_utf8(s).is_ok_and(|s| s.parse::<Ipv6Addr>().is_ok())
}

fn valid_reg_name(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            let hex = |j: usize| s.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return false;
            }
            i += 3;
        } else if has_class(s[i], REG_NAME) {
            i += 1;
        } else {
            return false;
        }
    }
    !s.is_empty()
}

fn valid_port(p: &[u8], required: bool) -> bool {
    if p.is_empty() {
        return !required;
    }
    // At most 5 digits, so the value cannot overflow a u32.
    p.len() <= 5
        && p.iter().all(u8::is_ascii_digit)
        && p.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0')) <= 65535
}

// ---------------------------------------------------------------------------------
#[cfg(test)]
#[path = "parse_scan_tests.rs"]
mod scan_tests;
#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
