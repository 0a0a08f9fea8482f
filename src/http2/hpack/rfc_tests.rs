//! The examples of RFC 7541 Appendix C, decoded: the fields, then the dynamic table
//! (entries newest first, and its size) after each block. Also C.1's integers, the
//! encoder reproducing C.4's first request byte for byte, and blocks from another
//! implementation (python-hpack) decoded.

use super::tests::{decode_all, hex, Fields};
use super::{integer, Decoder, Encoder};

/// Decodes `block` and checks the fields, the table's entries and its size.
fn step(
    decoder: &mut Decoder,
    block: &str,
    fields: &[(&str, &str)],
    table: &[(&str, &str)],
    size: usize,
) {
    let got = decode_all(decoder, &hex(block)).expect(block);
    assert_eq!(got, owned(fields), "fields of {block}");
    let entries: Fields = decoder
        .table_entries()
        .map(|(n, v)| (n.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(entries, owned(table), "table after {block}");
    assert_eq!(decoder.table_size(), size, "table size after {block}");
}

fn owned(fields: &[(&str, &str)]) -> Fields {
    fields
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

#[test]
fn c1_integers() {
    // C.1.1: 10 in a 5-bit prefix; C.1.2: 1337 in a 5-bit prefix; C.1.3: 42 at an
    // octet boundary (8-bit prefix).
    for (value, prefix, bytes) in [
        (10, 5, &[0x0a][..]),
        (1337, 5, &[0x1f, 0x9a, 0x0a][..]),
        (42, 8, &[0x2a][..]),
    ] {
        let mut out = Vec::new();
        integer::encode(value, prefix, 0, &mut out);
        assert_eq!(out, bytes);
        assert_eq!(integer::decode(bytes, prefix), Ok((value, bytes.len())));
    }
}

#[test]
fn c2_field_representations() {
    // C.2.1 literal with indexing.
    let mut d = Decoder::new(4096);
    let custom = [("custom-key", "custom-header")];
    step(
        &mut d,
        "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
        &custom,
        &custom,
        55,
    );
    // C.2.2 literal without indexing.
    let mut d = Decoder::new(4096);
    step(
        &mut d,
        "040c 2f73 616d 706c 652f 7061 7468",
        &[(":path", "/sample/path")],
        &[],
        0,
    );
    // C.2.3 literal never indexed.
    let mut d = Decoder::new(4096);
    step(
        &mut d,
        "1008 7061 7373 776f 7264 0673 6563 7265 74",
        &[("password", "secret")],
        &[],
        0,
    );
    // C.2.4 indexed.
    let mut d = Decoder::new(4096);
    step(&mut d, "82", &[(":method", "GET")], &[], 0);
}

const AUTHORITY: (&str, &str) = (":authority", "www.example.com");
const NO_CACHE: (&str, &str) = ("cache-control", "no-cache");
const CUSTOM: (&str, &str) = ("custom-key", "custom-value");
const REQ1: [(&str, &str); 4] = [
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    AUTHORITY,
];
const REQ2: [(&str, &str); 5] = [
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    AUTHORITY,
    NO_CACHE,
];
const REQ3: [(&str, &str); 5] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    AUTHORITY,
    CUSTOM,
];

/// C.3 (plain) and C.4 (Huffman): three requests on one connection.
fn requests(blocks: [&str; 3]) {
    let mut d = Decoder::new(4096);
    step(&mut d, blocks[0], &REQ1, &[AUTHORITY], 57);
    step(&mut d, blocks[1], &REQ2, &[NO_CACHE, AUTHORITY], 110);
    step(
        &mut d,
        blocks[2],
        &REQ3,
        &[CUSTOM, NO_CACHE, AUTHORITY],
        164,
    );
}

#[test]
fn c3_requests_without_huffman() {
    requests([
        "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "8286 84be 5808 6e6f 2d63 6163 6865",
        "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ]);
}

#[test]
fn c4_requests_with_huffman() {
    requests([
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ]);
}

const DATE1: (&str, &str) = ("date", "Mon, 21 Oct 2013 20:13:21 GMT");
const DATE2: (&str, &str) = ("date", "Mon, 21 Oct 2013 20:13:22 GMT");
const LOCATION: (&str, &str) = ("location", "https://www.example.com");
const PRIVATE: (&str, &str) = ("cache-control", "private");
const COOKIE: (&str, &str) = (
    "set-cookie",
    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
);

/// C.5 (plain) and C.6 (Huffman): three responses with a 256-byte table, so
/// entries are evicted.
fn responses(blocks: [&str; 3]) {
    let mut d = Decoder::new(256);
    step(
        &mut d,
        blocks[0],
        &[(":status", "302"), PRIVATE, DATE1, LOCATION],
        &[LOCATION, DATE1, PRIVATE, (":status", "302")],
        222,
    );
    step(
        &mut d,
        blocks[1],
        &[(":status", "307"), PRIVATE, DATE1, LOCATION],
        &[(":status", "307"), LOCATION, DATE1, PRIVATE],
        222,
    );
    step(
        &mut d,
        blocks[2],
        &[
            (":status", "200"),
            PRIVATE,
            DATE2,
            LOCATION,
            ("content-encoding", "gzip"),
            COOKIE,
        ],
        &[COOKIE, ("content-encoding", "gzip"), DATE2],
        215,
    );
}

#[test]
fn c5_responses_without_huffman() {
    responses([
        "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 \
         2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 \
         6c65 2e63 6f6d",
        "4803 3330 37c1 c0bf",
        "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d \
         54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 \
         5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e \
         3d31",
    ]);
}

#[test]
fn c6_responses_with_huffman() {
    responses([
        "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 \
         2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        "4883 640e ffc1 c0bf",
        "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab \
         77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f \
         9587 3160 65c0 03ed 4ee5 b106 3d50 07",
    ]);
}

/// The encoder, given C.4's first request, writes C.4's bytes: the same indices and
/// the same (shorter) Huffman coding of the authority, indexed incrementally.
#[test]
fn encoder_reproduces_c4_1() {
    let mut e = Encoder::new();
    let mut out = Vec::new();
    e.begin_block(&mut out);
    for (n, v) in REQ1 {
        e.encode(n.as_bytes(), v.as_bytes(), &mut out);
    }
    assert_eq!(out, hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"));
    // The second request finds the authority in the dynamic table.
    let mut out = Vec::new();
    for (n, v) in REQ1 {
        e.encode(n.as_bytes(), v.as_bytes(), &mut out);
    }
    assert_eq!(out, hex("8286 84be"));
}

/// Blocks from an independent encoder, python-hpack (written by
/// `scripts/hpack_python_blocks.py`): Huffman on and off, never-indexed fields,
/// table size updates, arbitrary bytes in values; decoded in sequence on one
/// decoder, each gives back the fields it was made from.
#[test]
fn python_hpack_blocks_decode() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("testdata/python_hpack.json")).expect("JSON");
    let unhex = |v: &serde_json::Value| hex(v.as_str().expect("a hex string"));
    let blocks = doc["blocks"].as_array().expect("blocks");
    let mut d = Decoder::new(4096);
    let mut updates = 0;
    for (i, b) in blocks.iter().enumerate() {
        let block = unhex(&b["block"]);
        updates += usize::from(block.first().is_some_and(|&x| x & 0xe0 == 0x20));
        let want: Fields = b["fields"]
            .as_array()
            .expect("fields")
            .iter()
            .map(|f| (unhex(&f[0]), unhex(&f[1])))
            .collect();
        assert_eq!(decode_all(&mut d, &block), Ok(want), "block {i}");
    }
    assert_eq!(blocks.len(), 150);
    // The file does exercise size updates (and so evictions on both sides).
    assert!(updates >= 5, "{updates}");
}
