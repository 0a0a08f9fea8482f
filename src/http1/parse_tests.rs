//! Tests for `parse.rs` (kept apart so the module stays readable).

use super::super::error::ParseError;
use super::super::limits::Limits;
use super::{parse_head, parse_head_reusing, BodyKind, Head, HeaderSpan, Scratch, Version};

fn bad(reason: &'static str) -> ParseError {
    ParseError::BadRequest(reason)
}

fn ok(raw: &[u8]) -> Head {
    match parse_head(raw, &Limits::default()) {
        Ok(Some(head)) => head,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(raw)),
    }
}

fn s(buf: &[u8], r: std::ops::Range<usize>) -> &str {
    std::str::from_utf8(&buf[r]).unwrap()
}

/// One valid request and what the parser must make of it.
struct Good {
    raw: &'static [u8],
    method: &'static str,
    target: &'static str,
    version: Version,
    body: BodyKind,
    keep_alive: bool,
    expect_continue: bool,
    upgrade: bool,
}

const fn good(raw: &'static [u8], method: &'static str, target: &'static str) -> Good {
    Good {
        raw,
        method,
        target,
        version: Version::Http11,
        body: BodyKind::Empty,
        keep_alive: true,
        expect_continue: false,
        upgrade: false,
    }
}

fn good_table() -> Vec<Good> {
    use BodyKind::{Chunked, Length};
    use Version::Http10;
    vec![
        good(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET", "/"),
        good(b"GET /p?q=1&r=%20 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", "GET", "/p?q=1&r=%20"),
        // Any token is a method; methods are case-sensitive, so this is not GET.
        good(b"get / HTTP/1.1\r\nHost: a\r\n\r\n", "get", "/"),
        good(b"M-SEARCH!#$%&'*+.^_`|~ / HTTP/1.1\r\nHost: a\r\n\r\n", "M-SEARCH!#$%&'*+.^_`|~", "/"),
        Good { body: Length(5), ..good(b"POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", "POST", "/f") },
        Good { body: Length(7), ..good(b"POST / HTTP/1.1\r\nHost: a\r\ncontent-length: 007\r\n\r\n", "POST", "/") },
        good(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", "POST", "/"),
        Good { body: Chunked, ..good(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", "POST", "/") },
        Good { body: Chunked, ..good(b"POST / HTTP/1.1\r\nHost: a\r\nTRANSFER-ENCODING:  Chunked \r\n\r\n", "POST", "/") },
        Good { version: Http10, keep_alive: false, ..good(b"GET / HTTP/1.0\r\n\r\n", "GET", "/") },
        Good { version: Http10, ..good(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", "GET", "/") },
        Good { version: Http10, keep_alive: false, ..good(b"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", "GET", "/") },
        Good { keep_alive: false, ..good(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", "GET", "/") },
        Good { keep_alive: false, ..good(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, , CLOSE,\r\n\r\n", "GET", "/") },
        Good { upgrade: true, ..good(b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n", "GET", "/ws") },
        good(b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n", "GET", "/ws"),
        good(b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade:\r\n\r\n", "GET", "/ws"),
        Good { version: Version::Http10, ..good(b"GET /ws HTTP/1.0\r\nConnection: upgrade, keep-alive\r\nUpgrade: websocket\r\n\r\n", "GET", "/ws") },
        Good { expect_continue: true, body: Length(3), ..good(b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n", "PUT", "/") },
        // Unknown expectations are ignored (like h11), 100-continue in 1.0 too.
        good(b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: something-else\r\n\r\n", "PUT", "/"),
        Good { version: Http10, keep_alive: false, ..good(b"PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", "PUT", "/") },
        good(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", "OPTIONS", "*"),
        good(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", "CONNECT", "example.com:443"),
        good(b"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n", "CONNECT", "[::1]:443"),
        good(b"GET http://example.com/x?y HTTP/1.1\r\nHost: example.com\r\n\r\n", "GET", "http://example.com/x?y"),
        good(b"GET HTTPS://EXAMPLE.com:8443 HTTP/1.1\r\nHost: ignored\r\n\r\n", "GET", "HTTPS://EXAMPLE.com:8443"),
        good(b"GET / HTTP/1.1\r\nHost: \r\n\r\n", "GET", "/"),
        good(b"GET / HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\n", "GET", "/"),
        good(b"GET / HTTP/1.1\r\nHost: 10.0.0.1:\r\n\r\n", "GET", "/"),
        good(b"GET / HTTP/1.1\r\nHost: xn--bcher-kva.example%2D1\r\n\r\n", "GET", "/"),
        good(b"GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\nX-Bin: caf\xc3\xa9 \x80\xff\r\n\r\n", "GET", "/"),
    ]
}

#[test]
fn accepts_valid_requests() {
    for case in good_table() {
        let head = ok(case.raw);
        let what = String::from_utf8_lossy(case.raw);
        assert_eq!(s(case.raw, head.method.clone()), case.method, "{what}");
        assert_eq!(s(case.raw, head.target.clone()), case.target, "{what}");
        assert_eq!(head.version, case.version, "{what}");
        assert_eq!(head.body, case.body, "{what}");
        assert_eq!(head.keep_alive, case.keep_alive, "{what}");
        assert_eq!(head.expect_continue, case.expect_continue, "{what}");
        assert_eq!(head.upgrade, case.upgrade, "{what}");
        let skipped = case
            .raw
            .iter()
            .position(|&b| b != b'\r' && b != b'\n')
            .unwrap();
        let end = skipped
            + case.raw[skipped..]
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .unwrap()
            + 4;
        assert_eq!(head.len, end, "{what}");
    }
}

#[test]
fn every_proper_prefix_of_a_valid_request_needs_more_data() {
    for case in good_table() {
        let len = ok(case.raw).len;
        for cut in 0..len {
            assert_eq!(
                parse_head(&case.raw[..cut], &Limits::default()),
                Ok(None),
                "{:?} cut at {cut}",
                String::from_utf8_lossy(case.raw)
            );
        }
    }
}

#[test]
fn header_spans_point_at_trimmed_values() {
    let raw = b"GET / HTTP/1.1\r\nHost:a\r\nX-A: \t spaced \t \r\nX-Empty:  \r\nX-B:v\r\n\r\n";
    let head = ok(raw);
    let got: Vec<(&str, &str)> = head
        .headers
        .iter()
        .map(|h| (s(raw, h.name.clone()), s(raw, h.value.clone())))
        .collect();
    assert_eq!(
        got,
        [
            ("Host", "a"),
            ("X-A", "spaced"),
            ("X-Empty", ""),
            ("X-B", "v")
        ]
    );
}

#[test]
fn pipelined_requests_stop_at_the_next_one() {
    let raw = b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiGET /3 HTTP/1.1\r\nHost: a\r\n\r\nGET /4 HT";
    let mut pos = 0;
    let mut targets = Vec::new();
    let mut spare = Scratch::default();
    while let Some(head) = parse_head_reusing(&raw[pos..], &Limits::default(), &mut spare).unwrap()
    {
        targets.push(s(&raw[pos..], head.target.clone()).to_owned());
        pos += head.len;
        if let BodyKind::Length(n) = head.body {
            pos += usize::try_from(n).unwrap();
        }
        spare.headers = head.headers;
    }
    assert_eq!(targets, ["/1", "/2", "/3"]);
    assert_eq!(&raw[pos..], b"GET /4 HT");
}

#[test]
fn parse_head_reusing_reuses_the_vector() {
    let raw = b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n";
    let mut spare = Scratch {
        headers: Vec::<HeaderSpan>::with_capacity(32),
        ..Scratch::default()
    };
    let ptr = spare.headers.as_ptr();
    let head = parse_head_reusing(raw, &Limits::default(), &mut spare)
        .unwrap()
        .unwrap();
    assert_eq!(head.headers.as_ptr(), ptr);
    assert_eq!(head.headers.len(), 3);
    assert!(spare.headers.is_empty());
}

#[test]
fn a_remembered_host_is_only_a_shortcut_for_equal_bytes() {
    let limits = Limits::default();
    let mut scratch = Scratch::default();
    let mut parse = |raw: &[u8]| {
        let got = parse_head_reusing(raw, &limits, &mut scratch).map(|h| h.map(|h| h.len));
        if let Ok(Some(_)) = got {
            scratch.headers.clear();
        }
        got
    };
    let ok = b"GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n";
    assert_eq!(parse(ok), Ok(Some(ok.len())));
    assert_eq!(parse(ok), Ok(Some(ok.len())));
    // Anything else is judged in full, before and after a remembered value.
    let invalid = bad("invalid Host header");
    for host in [
        "example.com:8080x",
        "example.com:80800",
        "exa mple.com",
        "example.com:8080 x",
        // As long as the remembered value, one byte apart at each end and in the
        // middle (its two words of 8 are compared).
        "example.com:808x",
        "<xample.com:8080",
        "example com:8080",
        "example.c m:8080",
    ] {
        let raw = format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n");
        assert_eq!(parse(raw.as_bytes()), Err(invalid.clone()), "{host}");
        assert_eq!(parse(ok), Ok(Some(ok.len())));
    }
    // A second Host is refused even when both equal the remembered one.
    let twice = b"GET / HTTP/1.1\r\nHost: example.com:8080\r\nHost: example.com:8080\r\n\r\n";
    assert_eq!(parse(twice), Err(bad("more than one Host header")));
    // A new valid value replaces the remembered one.
    let other = b"GET / HTTP/1.1\r\nHost: [::1]:9\r\n\r\n";
    assert_eq!(parse(other), Ok(Some(other.len())));
    assert_eq!(parse(ok), Ok(Some(ok.len())));
}

/// Requests that must be rejected, and with what.
fn bad_table() -> Vec<(&'static [u8], ParseError)> {
    use ParseError::{NotImplemented, PayloadTooLarge, VersionNotSupported};
    let unimpl = NotImplemented("transfer coding not implemented");
    let te_order = bad("chunked must be the final transfer coding, once");
    let bad_cl = bad("invalid Content-Length");
    let bad_host = bad("invalid Host header");
    let bad_te = bad("invalid Transfer-Encoding");
    vec![
        // Request line.
        (b"G@T / HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid method")),
        (b" GET / HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid method")),
        (b"GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid method")),
        (b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", bad("more than one space in request line")),
        (b"GET /  HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid HTTP version")),
        (b"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", bad("invalid HTTP version")),
        (b"GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid request target")),
        (b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid request target")),
        (b"GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid request target")),
        (b"GET /\x00 HTTP/1.1\r\nHost: a\r\n\r\n", bad("NUL byte in request head")),
        (b"GET /\r HTTP/1.1\r\nHost: a\r\n\r\n", bad("bare CR in request head")),
        (b"GET / HTTP/1.1\rX\r\nHost: a\r\n\r\n", bad("bare CR in request head")),
        (b"GET / HTTP/1.1\nHost: a\r\n\r\n", bad("bare LF in request head")),
        (b"GET /\r\n\r\n", bad("missing HTTP version")),
        (b"GET\r\n\r\n", bad("missing request target")),
        (b"GET / http/1.1\r\nHost: a\r\n\r\n", bad("invalid HTTP version")),
        (b"GET / HTTP/1.10\r\nHost: a\r\n\r\n", bad("invalid HTTP version")),
        (b"GET / HTTP/1\r\nHost: a\r\n\r\n", bad("invalid HTTP version")),
        (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", VersionNotSupported),
        (b"GET / HTTP/1.2\r\nHost: a\r\n\r\n", VersionNotSupported),
        (b"GET / HTTP/0.9\r\n\r\n", VersionNotSupported),
        // Target forms.
        (b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", bad("asterisk-form target is only for OPTIONS")),
        (b"OPTIONS *x HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid request target")),
        (b"CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", bad("CONNECT needs an authority-form target")),
        (b"CONNECT example.com HTTP/1.1\r\nHost: a\r\n\r\n", bad("CONNECT needs an authority-form target")),
        (b"CONNECT example.com: HTTP/1.1\r\nHost: a\r\n\r\n", bad("CONNECT needs an authority-form target")),
        (b"GET example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid request target")),
        (b"GET ftp://example.com/ HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid request target")),
        (b"GET http://user@example.com/ HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid request target")),
        (b"GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", bad("invalid request target")),
        // Line endings before the request line.
        // No empty line before the request line (stricter than RFC 9112 section 2.2).
        (b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", bad("empty line before the request line")),
        (b"\r\n", bad("empty line before the request line")),
        (b"\r", bad("bare CR in request head")),
        (b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", bad("bare LF in request head")),
        (b"\r\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", bad("bare CR in request head")),
        // Field lines.
        (b"GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", bad("bare LF in request head")),
        (b"GET / HTTP/1.1\r\nHost: a\r\n\n", bad("bare LF in request head")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", bad("bare CR in request head")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", bad("NUL byte in request head")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n", bad("invalid byte in header value")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: \x7f\r\n\r\n", bad("invalid byte in header value")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX : y\r\n\r\n", bad("whitespace before colon in header")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX\t: y\r\n\r\n", bad("whitespace before colon in header")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n folded\r\n\r\n", bad("obs-fold in header")),
        (b"GET / HTTP/1.1\r\n\tHost: a\r\n\r\n", bad("obs-fold in header")),
        (b"GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n", bad("empty header name")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", bad("header line without colon")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX(Y): v\r\n\r\n", bad("invalid header name")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX\x00: v\r\n\r\n", bad("NUL byte in request head")),
        // Host.
        (b"GET / HTTP/1.1\r\n\r\n", bad("missing Host header")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", bad("more than one Host header")),
        (b"GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n", bad("more than one Host header")),
        (b"GET / HTTP/1.1\r\nHost: exa mple.com\r\n\r\n", bad_host.clone()),
        (b"GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", bad_host.clone()),
        (b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", bad_host.clone()),
        (b"GET / HTTP/1.1\r\nHost: :80\r\n\r\n", bad_host.clone()),
        (b"GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n", bad_host.clone()),
        (b"GET / HTTP/1.1\r\nHost: a:65536\r\n\r\n", bad_host.clone()),
        (b"GET / HTTP/1.1\r\nHost: a:1:2\r\n\r\n", bad_host.clone()),
        (b"GET / HTTP/1.1\r\nHost: a%2\r\n\r\n", bad_host.clone()),
        (b"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", bad_host.clone()),
        (b"GET / HTTP/1.1\r\nHost: [zz::1]\r\n\r\n", bad_host.clone()),
        (b"GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n", bad_host),
        // Content-Length: digits by hand, one value, under the limit.
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", bad_cl.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\n", bad_cl.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n", bad_cl.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5_0\r\n\r\n", bad_cl.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5 0\r\n\r\n", bad_cl.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", bad_cl.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5,5\r\n\r\n", bad_cl.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", bad_cl),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", bad("more than one Content-Length")),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10485761\r\n\r\n", PayloadTooLarge),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n", PayloadTooLarge),
        // Transfer-Encoding.
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", bad("both Content-Length and Transfer-Encoding")),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", bad("both Content-Length and Transfer-Encoding")),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", bad("Transfer-Encoding in an HTTP/1.0 request")),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", unimpl.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity, chunked\r\n\r\n", unimpl.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", unimpl),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", te_order.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", te_order.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", te_order.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", te_order.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n", te_order),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", bad_te.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\n\r\n", bad_te.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked,\r\n\r\n", bad_te.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", bad_te.clone()),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", bad_te),
        // Connection.
        (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close, @\r\n\r\n", bad("invalid Connection header")),
        (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: clo se\r\n\r\n", bad("invalid Connection header")),
    ]
}

#[test]
fn rejects_invalid_requests() {
    let mut wrong = Vec::new();
    for (raw, want) in bad_table() {
        let got = parse_head(raw, &Limits::default());
        if got != Err(want.clone()) {
            wrong.push(format!(
                "{:?}: got {got:?}, want {want:?}",
                String::from_utf8_lossy(raw)
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn errors_in_complete_lines_are_reported_before_the_head_ends() {
    let table: &[(&[u8], ParseError)] = &[
        (b"\x16\x03\x01\x02\x00", bad("invalid method")),
        (b"GET /\x00", bad("NUL byte in request head")),
        (b"GET /\r/", bad("bare CR in request head")),
        (b"GET / HTTP/1.1\n", bad("bare LF in request head")),
        (b"GET / HTTP/3.0\r\n", ParseError::VersionNotSupported),
        (b"GET / HTTP/1.1111", bad("invalid HTTP version")),
        (b"GET / HTTP/1.1\r\r", bad("bare CR in request head")),
        (
            b"GET / HTTP/1.1\r\nX: a\x00",
            bad("NUL byte in request head"),
        ),
        (
            b"GET / HTTP/1.1\r\nX: a\r\t",
            bad("bare CR in request head"),
        ),
        (
            b"GET / HTTP/1.1\r\nX : y\r\n",
            bad("whitespace before colon in header"),
        ),
        (
            b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\nHo",
            bad("more than one Content-Length"),
        ),
    ];
    for (raw, want) in table {
        assert_eq!(
            parse_head(raw, &Limits::default()),
            Err(want.clone()),
            "{raw:?}"
        );
    }
}

fn small_limits() -> Limits {
    Limits {
        max_start_line: 20,
        max_header_count: 2,
        max_header_bytes: 30,
        max_body_bytes: 100,
        ..Limits::default()
    }
}

#[test]
fn limits_have_exact_edges_and_their_own_status() {
    use ParseError::{HeaderFieldsTooLarge, PayloadTooLarge, UriTooLong};
    // "GET /123456 HTTP/1.1\r\n" is 22 bytes; with Host "a" the fields are 11.
    let l = Limits {
        max_start_line: 22,
        ..small_limits()
    };
    let table: &[(&Limits, &[u8], Result<(), ParseError>)] = &[
        (&l, b"GET /123456 HTTP/1.1\r\nHost: a\r\n\r\n", Ok(())),
        (
            &l,
            b"GET /1234567 HTTP/1.1\r\nHost: a\r\n\r\n",
            Err(UriTooLong),
        ),
        // Incomplete: 22 bytes without an LF can only grow past the limit.
        (&l, b"GET /1234567 HTTP/1.1\r", Err(UriTooLong)),
        (&l, b"GET /1234567 HTTP/1.", Ok(())),
        // Header bytes: 30 exactly (9 + 19 + 2), then 31.
        (
            &l,
            b"GET / HTTP/1.1\r\nHost: a\r\nX: 12345678901234\r\n\r\n",
            Ok(()),
        ),
        (
            &l,
            b"GET / HTTP/1.1\r\nHost: a\r\nX: 123456789012345\r\n\r\n",
            Err(HeaderFieldsTooLarge),
        ),
        (
            &l,
            b"GET / HTTP/1.1\r\nHost: a\r\nX: 123456789012345\r\n\r",
            Err(HeaderFieldsTooLarge),
        ),
        (
            &l,
            b"GET / HTTP/1.1\r\nHost: a\r\nX: 12345678901234567890123",
            Err(HeaderFieldsTooLarge),
        ),
        (
            &l,
            b"GET / HTTP/1.1\r\nHost: a\r\nX: 12345678901234\r\n\r",
            Ok(()),
        ),
        // Header count: 2 allowed, 3 rejected, even before the head is complete.
        (&l, b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\n\r\n", Ok(())),
        (
            &l,
            b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n",
            Err(HeaderFieldsTooLarge),
        ),
        (
            &l,
            b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n",
            Err(HeaderFieldsTooLarge),
        ),
    ];
    for (limits, raw, want) in table {
        let got = parse_head(raw, limits).map(|_| ());
        assert_eq!(&got, want, "{:?}", String::from_utf8_lossy(raw));
    }
    // Body: max_body_bytes allowed, one more rejected.
    let body = |n: &str| format!("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {n}\r\n\r\n");
    let l = Limits {
        max_body_bytes: 100,
        ..Limits::default()
    };
    let got = parse_head(body("100").as_bytes(), &l).map(|h| h.map(|h| h.body));
    assert_eq!(got, Ok(Some(BodyKind::Length(100))));
    assert_eq!(parse_head(body("101").as_bytes(), &l), Err(PayloadTooLarge));
    assert_eq!(
        ok(body("10485760").as_bytes()).body,
        BodyKind::Length(10_485_760)
    );
}

#[test]
fn huge_buffers_are_not_scanned_past_the_limits() {
    // A megabyte without an LF is judged from the first max_start_line bytes.
    let mut raw = b"GET /".to_vec();
    raw.resize(1 << 20, b'a');
    assert_eq!(
        parse_head(&raw, &Limits::default()),
        Err(ParseError::UriTooLong)
    );
    let mut raw = b"GET / HTTP/1.1\r\nX: ".to_vec();
    raw.resize(1 << 20, b'a');
    assert_eq!(
        parse_head(&raw, &Limits::default()),
        Err(ParseError::HeaderFieldsTooLarge)
    );
}

/// A small deterministic fuzzer: mutated valid requests must never panic, and a
/// head that parses must be self-consistent (in-bounds ranges, the same result
/// from exactly `buf[..len]`, and `Ok(None)` from any shorter prefix).
#[test]
fn mutated_requests_never_panic_and_parse_consistently() {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let corpus = good_table();
    let interesting = b"\r\n \t:,;\x00\x7f\x80/*?@[]0123456789aAzZ-_";
    let limits = Limits::default();
    for _ in 0..20_000 {
        let mut raw = corpus[usize::try_from(next() % corpus.len() as u64).unwrap()]
            .raw
            .to_vec();
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
        if let Ok(Some(head)) = parse_head(&raw, &limits) {
            assert!(head.len <= raw.len());
            for r in [&head.method, &head.target]
                .into_iter()
                .chain(head.headers.iter().flat_map(|h| [&h.name, &h.value]))
            {
                assert!(r.start <= r.end && r.end <= head.len);
            }
            assert_eq!(
                parse_head(&raw[..head.len], &limits),
                Ok(Some(head.clone()))
            );
            let cut = usize::try_from(next() % head.len as u64).unwrap();
            assert_eq!(
                parse_head(&raw[..cut], &limits),
                Ok(None),
                "{raw:?} at {cut}"
            );
        }
    }
}

/// Times parses of a typical small request. Run with
/// `cargo test --release -- --ignored --nocapture bench_parse`.
#[test]
#[ignore = "micro-benchmark; run explicitly in release mode"]
fn bench_parse() {
    let raw = b"GET /api/items/42?page=2 HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: wrk/4.2\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n\r\n";
    let limits = Limits::default();
    let mut spare = Scratch::default();
    let n = 1_000_000u32;
    let start = std::time::Instant::now();
    for _ in 0..n {
        let head = parse_head_reusing(std::hint::black_box(raw), &limits, &mut spare)
            .unwrap()
            .unwrap();
        spare.headers = std::hint::black_box(head).headers;
    }
    let ns = start.elapsed().as_nanos() / u128::from(n);
    println!(
        "parse_head_reusing: {ns} ns/parse ({} bytes, 5 headers)",
        raw.len()
    );
}
