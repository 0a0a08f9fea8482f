//! Request and trailer checks (RFC 9113 section 8), as a table.

use super::hpack::{Decoder, Encoder, Origin, STATIC};
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

/// Values a static name is tried with: valid ones, and one for every value rule.
const VALUES: [&str; 14] = [
    "GET",
    "a.example",
    "b.example",
    "/",
    "*",
    "x",
    "5",
    "",
    "trailers",
    "G T",
    " a",
    "a\t",
    "a\0b",
    "99999999999999999999",
];

/// Fields a static entry is tried after: none, the pseudo-header fields, or a
/// regular field too (with extended CONNECT on and off).
fn contexts() -> Vec<Vec<(&'static str, &'static str)>> {
    vec![
        vec![],
        vec![(":method", "GET")],
        GET.to_vec(),
        with(&[("content-length", "5")]),
        with(&[("accept", "*/*")]),
        vec![(":method", "CONNECT"), (":authority", "a.example")],
    ]
}

/// A head built with `field` throughout, or with the last field `decoded` as
/// the decoder hands it over (`origin`).
fn build_last(
    before: &[(&str, &str)],
    last: (&[u8], &[u8]),
    origin: Origin,
    connect_protocol: bool,
) -> Result<RequestHead, &'static str> {
    let mut b = RequestBuilder::new(connect_protocol);
    for (n, v) in before {
        b.field(n.as_bytes(), v.as_bytes());
    }
    b.decoded(last.0, last.1, origin);
    // Close what the context left open, so that `finish` judges the field too.
    b.field(b"x-after", b"1");
    b.finish()
}

/// A field whose name (or whole entry) is the static table's gets the verdict
/// and head `field` gives it, for every entry, in every context.
#[test]
fn static_entries_get_the_verdicts_of_their_bytes() {
    for connect_protocol in [false, true] {
        for before in contexts() {
            for (i, &(name, value)) in STATIC.iter().enumerate() {
                let index = u8::try_from(i + 1).unwrap();
                let plain = build_last(&before, (name, value), Origin::Other, connect_protocol);
                let fast = build_last(
                    &before,
                    (name, value),
                    Origin::Static(index),
                    connect_protocol,
                );
                assert_eq!(fast, plain, "entry {index} after {before:?}");
                for v in VALUES {
                    let field = (name, v.as_bytes());
                    let plain = build_last(&before, field, Origin::Other, connect_protocol);
                    let fast =
                        build_last(&before, field, Origin::StaticName(index), connect_protocol);
                    assert_eq!(fast, plain, "name {index}, value {v:?}, after {before:?}");
                }
            }
        }
    }
}

/// What a request block comes to, through the decoder and the builder, with
/// or without what the decoder knows of each field's origin; also checks that
/// origin against the static table.
fn judge(decoder: &mut Decoder, block: &[u8], with_origin: bool) -> String {
    let mut b = RequestBuilder::new(false);
    let result = if with_origin {
        decoder.decode_with_origin(block, 300, |n, v, origin| {
            match origin {
                Origin::Static(i) => assert_eq!(STATIC[usize::from(i) - 1], (n, v)),
                Origin::StaticName(i) => assert_eq!(STATIC[usize::from(i) - 1].0, n),
                Origin::Other => {}
            }
            b.decoded(n, v, origin);
        })
    } else {
        decoder.decode(block, 300, |n, v| b.field(n, v))
    };
    format!("{result:?} {:?}", result.ok().map(|()| b.finish()))
}

/// Random request blocks, valid and not (fields of the static table's names
/// with good and bad values, indexed whole or by name, Huffman-coded or not,
/// added to the dynamic table or not, and stray bytes), judged the same with
/// the decoder's origins as without: two decoders kept in step.
#[test]
fn random_blocks_get_the_same_verdicts_with_origins() {
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        usize::try_from(rng % n as u64).unwrap()
    };
    let mut plain = Decoder::new(4096);
    let mut fast = Decoder::new(4096);
    let mut verdicts = std::collections::HashSet::new();
    for _ in 0..20_000 {
        let mut block = Vec::new();
        if next(2) == 0 {
            // A valid start: GET, http, / and :authority a.example.
            block.extend_from_slice(b"\x82\x86\x84\x01\x09a.example");
        }
        for _ in 0..next(8) {
            let index = 1 + next(STATIC.len() + 4);
            match next(6) {
                0 => block.push(0x80 | u8::try_from(index).unwrap()),
                1 => block.push(u8::try_from(next(256)).unwrap()),
                k => {
                    // A literal field by name index (with indexing, without, never),
                    // its value raw or Huffman-coded.
                    let prefix = [(0x40, 6), (0x00, 4), (0x10, 4)][k % 3];
                    integer(index, prefix.1, prefix.0, &mut block);
                    let value = VALUES[next(VALUES.len())].as_bytes();
                    if next(2) == 0 {
                        integer(value.len(), 7, 0, &mut block);
                        block.extend_from_slice(value);
                    } else {
                        let mut e = Encoder::new();
                        let mut coded = Vec::new();
                        e.encode(b"x-h", value, &mut coded);
                        // The encoder's literal "x-h" is its first entry: skip
                        // its first byte and the name, keep the value.
                        block.extend_from_slice(&coded[5..]);
                    }
                }
            }
        }
        let a = judge(&mut plain, &block, false);
        let b = judge(&mut fast, &block, true);
        assert_eq!(a, b, "{block:02x?}");
        if a.starts_with("Err") && !a.contains("ListTooLarge") {
            // A connection error: both decoders' tables are out of step with any
            // peer; start both afresh.
            plain = Decoder::new(4096);
            fast = Decoder::new(4096);
        }
        verdicts.insert(a.split(' ').take(3).collect::<String>());
    }
    // The blocks reached accepted heads, several kinds of malformed ones, and
    // decoding errors.
    assert!(
        verdicts.iter().any(|v| v.contains("Ok(RequestHead")),
        "{verdicts:?}"
    );
    assert!(verdicts.len() > 10, "{verdicts:?}");
}

/// An HPACK integer with an N-bit prefix (RFC 7541 5.1), for hand-made blocks.
fn integer(value: usize, prefix_bits: u32, flags: u8, out: &mut Vec<u8>) {
    let mask = (1usize << prefix_bits) - 1;
    if value < mask {
        out.push(flags | u8::try_from(value).unwrap());
        return;
    }
    out.push(flags | u8::try_from(mask).unwrap());
    let mut rest = value - mask;
    while rest >= 0x80 {
        out.push(0x80 | u8::try_from(rest & 0x7f).unwrap());
        rest >>= 7;
    }
    out.push(u8::try_from(rest).unwrap());
}
