//! Request and trailer checks (RFC 9113 section 8), as a table.

use super::request::{RequestBuilder, RequestHead, TrailersBuilder};

fn build(fields: &[(&str, &str)], connect_protocol: bool) -> Result<RequestHead, &'static str> {
    let mut b = RequestBuilder::new(connect_protocol);
    for (n, v) in fields {
        b.field(n.as_bytes(), v.as_bytes());
    }
    b.finish()
}

const GET: [(&str, &str); 4] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "a.example"),
    (":path", "/"),
];

fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut f = GET.to_vec();
    f.extend_from_slice(extra);
    f
}

#[test]
fn valid_requests() {
    let table: Vec<Vec<(&str, &str)>> = vec![
        GET.to_vec(),
        vec![(":method", "GET"), (":scheme", "http"), (":path", "/x")],
        vec![(":method", "OPTIONS"), (":scheme", "https"), (":path", "*")],
        vec![(":method", "CONNECT"), (":authority", "a.example:443")],
        with(&[
            ("te", "trailers"),
            ("content-length", "5"),
            ("content-length", "5"),
        ]),
        with(&[("host", "A.example"), ("x-tab", "a\tb"), ("empty", "")]),
        with(&[("cookie", "a=1"), ("cookie", "b=2")]),
    ];
    for fields in &table {
        assert!(build(fields, false).is_ok(), "{fields:?}");
    }
    let ws = build(
        &[
            (":method", "CONNECT"),
            (":protocol", "websocket"),
            (":scheme", "https"),
            (":path", "/chat"),
            (":authority", "a.example"),
        ],
        true,
    )
    .unwrap();
    assert_eq!(ws.protocol(), Some(&b"websocket"[..]));
}

#[test]
fn the_head_keeps_every_part() {
    let h = build(&with(&[("accept", "*/*"), ("content-length", "12")]), false).unwrap();
    assert_eq!(h.method(), b"GET");
    assert_eq!(h.scheme(), b"https");
    assert_eq!(h.authority(), Some(&b"a.example"[..]));
    assert_eq!(h.path(), b"/");
    assert_eq!(h.protocol(), None);
    assert_eq!(h.content_length, Some(12));
    assert_eq!(h.field(b"accept"), Some(&b"*/*"[..]));
    assert_eq!(h.fields().len(), 2);
}

#[test]
fn malformed_requests() {
    let table: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (vec![(":scheme", "https"), (":path", "/")], "no :method"),
        (vec![(":method", "GET"), (":path", "/")], "no :scheme"),
        (vec![(":method", "GET"), (":scheme", "https")], "no :path"),
        (
            vec![(":method", "GET"), (":scheme", "https"), (":path", "")],
            "no :path",
        ),
        (
            vec![
                (":method", "GET"),
                (":scheme", "https"),
                ("accept", "*/*"),
                (":path", "/"),
            ],
            "pseudo-header after a regular field",
        ),
        (with(&[]).dup(":path", "/x"), "duplicate pseudo-header"),
        (with(&[]).dup(":method", "GET"), "duplicate :method"),
        (with(&[]).dup(":status", "200"), "unknown pseudo-header"),
        (with(&[]).dup(":protocol", "ws"), "unknown pseudo-header"),
        (
            vec![(":method", "GET"), (":scheme", "https"), (":path", "*")],
            ":path * without OPTIONS",
        ),
        (
            vec![(":method", "GET"), (":scheme", "https"), (":path", "a")],
            ":path not absolute",
        ),
        (
            vec![(":method", "G T"), (":scheme", "https"), (":path", "/")],
            "bad :method",
        ),
        (
            vec![(":method", "CONNECT"), (":authority", "a"), (":path", "/")],
            "CONNECT takes :authority only",
        ),
        (with(&[("X-Up", "1")]), "bad field name"),
        (with(&[("a b", "1")]), "bad field name"),
        (with(&[("", "1")]), "bad field name"),
        (
            with(&[("connection", "close")]),
            "connection-specific field",
        ),
        (with(&[("keep-alive", "5")]), "connection-specific field"),
        (
            with(&[("proxy-connection", "x")]),
            "connection-specific field",
        ),
        (
            with(&[("transfer-encoding", "chunked")]),
            "connection-specific field",
        ),
        (with(&[("upgrade", "h2c")]), "connection-specific field"),
        (with(&[("te", "gzip")]), "te other than trailers"),
        (with(&[("x", "a\0b")]), "forbidden byte in a value"),
        (with(&[("x", "a\rb")]), "forbidden byte in a value"),
        (with(&[("x", "a\nb")]), "forbidden byte in a value"),
        // Values of 32 bytes and more are searched another way (`check_value`).
        (
            with(&[("x", "0123456789abcdef0123456789abcdef\0")]),
            "forbidden byte in a value",
        ),
        (
            with(&[("x", "0123456789abcdef0123456789abcdef\r1")]),
            "forbidden byte in a value",
        ),
        (
            with(&[("x", "0123456789abcdef0123456789abcde\n")]),
            "forbidden byte in a value",
        ),
        (with(&[("x", " a")]), "whitespace around a value"),
        (with(&[("x", "a\t")]), "whitespace around a value"),
        (with(&[("content-length", "1x")]), "bad content-length"),
        (with(&[("content-length", "")]), "bad content-length"),
        (with(&[("content-length", "+1")]), "bad content-length"),
        (
            with(&[("content-length", "99999999999999999999")]),
            "bad content-length",
        ),
        (
            with(&[("content-length", "1"), ("content-length", "2")]),
            "content-length values differ",
        ),
        (
            with(&[("host", "b.example")]),
            "host differs from :authority",
        ),
    ];
    for (fields, why) in &table {
        assert_eq!(build(fields, false).err(), Some(*why), "{fields:?}");
    }
    // Extended CONNECT needs CONNECT and all four pseudo-headers.
    let get_protocol = with(&[]).dup(":protocol", "websocket");
    assert_eq!(
        build(&get_protocol, true).err(),
        Some(":protocol without CONNECT and :authority")
    );
}

trait Edit {
    fn dup(self, name: &'static str, value: &'static str) -> Self;
}

impl Edit for Vec<(&'static str, &'static str)> {
    /// Inserts a pseudo-header among the others.
    fn dup(mut self, name: &'static str, value: &'static str) -> Self {
        self.insert(1, (name, value));
        self
    }
}

#[test]
fn trailers_refuse_pseudo_headers_and_connection_fields() {
    let mut ok = TrailersBuilder::default();
    ok.field(b"grpc-status", b"0");
    assert_eq!(
        ok.finish(),
        Ok(vec![(b"grpc-status".to_vec(), b"0".to_vec())])
    );
    for (name, value) in [
        (":path", "/"),
        ("connection", "x"),
        ("Bad", "1"),
        ("x", "\n"),
    ] {
        let mut t = TrailersBuilder::default();
        t.field(name.as_bytes(), value.as_bytes());
        assert!(t.finish().is_err(), "{name}");
    }
}

/// A head built in the buffers of one that served before (`RequestBuilder::reusing`)
/// is the head a new builder makes: nothing of the old one (its pseudo-header
/// fields, fields, content-length) is left over, and what it refuses is refused.
#[test]
fn a_reused_head_is_a_new_head() {
    let heads: Vec<Vec<(&str, &str)>> = vec![
        with(&[("content-length", "5"), ("x-a", "1"), ("host", "a.example")]),
        vec![(":method", "CONNECT"), (":authority", "a.example:443")],
        vec![(":method", "GET"), (":scheme", "http"), (":path", "/x")],
        with(&[("cookie", "a=1")]),
        vec![(":method", "GET"), (":path", "/")],
    ];
    let mut spare = None;
    for fields in &heads {
        let fresh = build(fields, false);
        let mut b = RequestBuilder::reusing(spare.take(), false);
        for (n, v) in fields {
            b.field(n.as_bytes(), v.as_bytes());
        }
        let reused = b.finish();
        assert_eq!(reused, fresh, "{fields:?}");
        spare = reused
            .ok()
            .or_else(|| build(&with(&[("x-old", "1")]), false).ok());
    }
}
