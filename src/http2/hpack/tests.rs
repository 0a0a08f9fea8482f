//! HPACK tests: every `Error` from a crafted block, the HPACK bomb, the encoder's
//! policy on the wire, random round trips through table size changes, and a micro
//! benchmark (ignored; run it in release). The RFC's own examples are in
//! `rfc_tests.rs`, the Huffman code's in `huffman_tests.rs`.

use std::time::{Duration, Instant};

use super::{Decoder, Encoder, Error};

pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Bytes from hex digits; spaces are ignored.
pub fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .map(|b| u8::try_from(char::from(b).to_digit(16).expect("hex digit")).unwrap())
        .collect();
    digits.chunks(2).map(|p| p[0] << 4 | p[1]).collect()
}

/// Decodes a block with no list size limit to speak of; returns the fields.
pub fn decode_all(decoder: &mut Decoder, block: &[u8]) -> Result<Fields, Error> {
    let mut fields = Vec::new();
    decoder.decode(block, usize::MAX, |n, v| {
        fields.push((n.to_vec(), v.to_vec()));
    })?;
    Ok(fields)
}

fn decode_err(decoder: &mut Decoder, block: &str) -> Error {
    decode_all(decoder, &hex(block)).expect_err(block)
}

#[test]
fn integer_errors() {
    let mut d = Decoder::new(4096);
    // Truncated: a full prefix and no continuation, or a continuation bit and no more.
    assert_eq!(decode_err(&mut d, "ff"), Error::Integer);
    assert_eq!(decode_err(&mut d, "ff 80"), Error::Integer);
    // Overflow: a prefix continued by far more bytes than any value needs.
    assert_eq!(
        decode_err(&mut d, "ff ffffffffffffffffffffffffffff 01"),
        Error::Integer
    );
    // Five continuation bytes, but a value past u32::MAX.
    assert_eq!(decode_err(&mut d, "ff ffffffff7f"), Error::Integer);
    // A string length that overflows.
    assert_eq!(decode_err(&mut d, "04 ff ffffffff7f"), Error::Integer);
    // Padding with zero continuations is still a valid (small) index: 127 + 0 = 127,
    // past the tables.
    assert_eq!(decode_err(&mut d, "ff 80 80 00"), Error::Index);
}

#[test]
fn string_errors() {
    let mut d = Decoder::new(4096);
    // The name's length says 5, two bytes follow.
    assert_eq!(decode_err(&mut d, "40 05 6162"), Error::String);
    // No value at all after the name.
    assert_eq!(decode_err(&mut d, "40 01 61"), Error::String);
    assert_eq!(decode_err(&mut d, "04"), Error::String);
    // A Huffman-coded value shorter than its length.
    assert_eq!(decode_err(&mut d, "04 83 1f"), Error::String);
}

#[test]
fn huffman_errors() {
    let mut d = Decoder::new(4096);
    // :path (index 4, without indexing) with Huffman values:
    // EOS (thirty ones) in the string.
    assert_eq!(decode_err(&mut d, "04 84 ffffffff"), Error::Huffman);
    // 'a' (00011) then padding 000: not ones.
    assert_eq!(decode_err(&mut d, "04 81 18"), Error::Huffman);
    // 'a' then eleven ones: padding over 7 bits.
    assert_eq!(decode_err(&mut d, "04 82 1fff"), Error::Huffman);
    // A whole byte of ones and nothing else.
    assert_eq!(decode_err(&mut d, "04 81 ff"), Error::Huffman);
    // 'a' with its 3 bits of padding is fine.
    assert_eq!(
        decode_all(&mut d, &hex("04 81 1f")).unwrap(),
        vec![(b":path".to_vec(), b"a".to_vec())]
    );
}

#[test]
fn index_errors() {
    let mut d = Decoder::new(4096);
    assert_eq!(decode_err(&mut d, "80"), Error::Index);
    // 62: the first dynamic index, on an empty table.
    assert_eq!(decode_err(&mut d, "be"), Error::Index);
    // A literal whose name is dynamic index 62.
    assert_eq!(decode_err(&mut d, "7e 0161"), Error::Index);
    assert_eq!(decode_err(&mut d, "0f 2f 0161"), Error::Index);
    // Once an entry is added, 62 is it and 63 is past it.
    decode_all(&mut d, &hex("40 0178 0179")).unwrap();
    assert_eq!(
        decode_all(&mut d, &hex("be")).unwrap(),
        vec![(b"x".to_vec(), b"y".to_vec())]
    );
    assert_eq!(decode_err(&mut d, "bf"), Error::Index);
}

#[test]
fn table_size_update_errors() {
    let mut d = Decoder::new(100);
    // Above our limit.
    assert_eq!(decode_err(&mut d, "3f 46"), Error::TableSizeUpdate);
    // At the limit, then 0 then back: fine, at the start of a block.
    decode_all(&mut d, &hex("3f 45 20 3f 45 82")).unwrap();
    assert_eq!(d.table_max_size(), 100);
    // After a field.
    assert_eq!(decode_err(&mut d, "82 20"), Error::TableSizeUpdate);
    // Our limit went down: the next block must start with an update.
    let mut d = Decoder::new(4096);
    decode_all(&mut d, &hex("40 0178 0179")).unwrap();
    d.set_max_table_size(0);
    assert_eq!(d.table_size(), 0);
    assert_eq!(decode_err(&mut d, "82"), Error::TableSizeUpdate);
    assert_eq!(decode_all(&mut d, &hex("20 82")).unwrap().len(), 1);
    assert_eq!(decode_all(&mut d, &hex("82")).unwrap().len(), 1);
}

#[test]
fn error_display() {
    for e in [
        Error::Integer,
        Error::String,
        Error::Huffman,
        Error::Index,
        Error::TableSizeUpdate,
        Error::ListTooLarge,
    ] {
        assert!(!e.to_string().is_empty());
        let _: &dyn std::error::Error = &e;
    }
}

/// One 4 KiB entry indexed 10,000 times: emitting stops at the limit, the block is
/// still decoded to its end (quickly: the indexed path copies nothing) and the
/// table is left in sync.
#[test]
fn hpack_bomb() {
    let value = vec![b'v'; 4096 - 32 - 1];
    let mut block = hex("40 0178");
    super::integer::encode(value.len(), 7, 0, &mut block);
    block.extend_from_slice(&value);
    block.extend(std::iter::repeat_n(0xbe, 10_000));
    let mut d = Decoder::new(4096);
    let mut emitted = 0;
    let start = Instant::now();
    let result = d.decode(&block, 16 * 1024, |n, v| {
        assert_eq!((n, v), (&b"x"[..], &value[..]));
        emitted += 1;
    });
    let elapsed = start.elapsed();
    assert_eq!(result, Err(Error::ListTooLarge));
    // 4 fields of 4,096 bytes each fill 16 KiB exactly.
    assert_eq!(emitted, 4);
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    assert_eq!(d.table_size(), 4096);
    // In sync: the next block still finds the entry.
    assert_eq!(
        decode_all(&mut d, &[0xbe]).unwrap(),
        vec![(b"x".to_vec(), value.clone())]
    );
}

/// Past the limit, literals with indexing still go into the table.
#[test]
fn list_too_large_keeps_the_table() {
    let mut d = Decoder::new(4096);
    let mut names = Vec::new();
    // "a" = "b" twice with indexing: 34 bytes each, limit 40.
    let result = d.decode(&hex("40 0161 0162 40 0163 0164 82"), 40, |n, _| {
        names.push(n.to_vec());
    });
    assert_eq!(result, Err(Error::ListTooLarge));
    assert_eq!(names, vec![b"a".to_vec()]);
    assert_eq!(d.table_entries().count(), 2);
    assert_eq!(
        decode_all(&mut d, &hex("be")).unwrap(),
        vec![(b"c".to_vec(), b"d".to_vec())]
    );
    // At the limit exactly is fine.
    let mut d = Decoder::new(4096);
    assert_eq!(d.decode(&hex("40 0161 0162"), 34, |_, _| {}), Ok(()));
}

/// An entry that names an entry which its own insertion evicts (4.4).
#[test]
fn insertion_evicting_its_own_name() {
    let mut d = Decoder::new(4096);
    decode_all(&mut d, &hex("3f 11 40 0361 6263 0178")).unwrap(); // size 48, "abc"="x"
    assert_eq!(d.table_size(), 36);
    // "abc" (index 62) = "yyyyyyyyy": 44 > 48 - 36, so "abc"="x" is evicted.
    let got = decode_all(&mut d, &hex("7e 09 797979797979797979")).unwrap();
    assert_eq!(got, vec![(b"abc".to_vec(), b"yyyyyyyyy".to_vec())]);
    let entries: Fields = d
        .table_entries()
        .map(|(n, v)| (n.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(entries, got);
    // An entry larger than the table empties it.
    decode_all(&mut d, &hex("40 01 61 10 61616161616161616161616161616161")).unwrap();
    assert_eq!((d.table_size(), d.table_entries().count()), (0, 0));
}

fn encode_one(e: &mut Encoder, name: &str, value: &str) -> Vec<u8> {
    let mut out = Vec::new();
    e.encode(name.as_bytes(), value.as_bytes(), &mut out);
    out
}

#[test]
fn encoder_policy_on_the_wire() {
    let mut e = Encoder::new();
    let mut out = Vec::new();
    for status in [200, 204, 206, 304, 400, 404, 500] {
        e.encode_status(status, &mut out);
    }
    assert_eq!(out, hex("88 89 8a 8b 8c 8d 8e"));
    // 201: literal with indexing, name :status (8), value Huffman-coded (2 bytes, not
    // 3), then one byte.
    let mut out = Vec::new();
    e.encode_status(201, &mut out);
    assert_eq!(out, hex("48 82 1003"));
    out.clear();
    e.encode_status(201, &mut out);
    assert_eq!(out, hex("be"));
    // date: indexed (name 33), a repeat is one byte.
    let date = "Mon, 21 Oct 2013 20:13:21 GMT";
    assert_eq!(encode_one(&mut e, "date", date)[0], 0x61);
    assert_eq!(encode_one(&mut e, "date", date), hex("be"));
    // content-length: without indexing, name by static index 28 (4-bit prefix).
    assert_eq!(
        encode_one(&mut e, "content-length", "13"),
        hex("0f0d 02 3133")
    );
    // x-request-id: its first field indexed (so that its name is in the table),
    // the later ones without indexing, the name by its dynamic index (62): 0x0f 0x2f.
    let first = encode_one(&mut e, "x-request-id", "abc");
    assert_eq!(first[0], 0x40);
    let second = encode_one(&mut e, "x-request-id", "abd");
    assert_eq!(second[..2], hex("0f2f"));
    assert_eq!(encode_one(&mut e, "x-request-id", "abe")[..2], hex("0f2f"));
    // set-cookie: never indexed, name 55.
    assert_eq!(encode_one(&mut e, "set-cookie", "a=b")[..2], hex("1f28"));
    assert_eq!(encode_one(&mut e, "authorization", "x")[..2], hex("1f08"));
    assert_eq!(encode_one(&mut e, "cookie", "x")[..2], hex("1f11"));
    // Only three entries were added: 201, the date and the first x-request-id.
    assert_eq!(e.table_entries().count(), 3);
    // A custom name is indexed whole and by name afterwards.
    assert_eq!(encode_one(&mut e, "x-custom", "1")[0], 0x40);
    assert_eq!(encode_one(&mut e, "x-custom", "2")[0], 0x7e); // 0x40 | 62
                                                              // Huffman only when shorter: bytes with long codes go raw.
    let raw = encode_one(&mut e, "content-length", "\u{7f}\u{7f}");
    assert_eq!(raw, hex("0f0d 02 7f7f"));
    // A value too large for a quarter of the table is not indexed.
    let big = "v".repeat(1100);
    assert_eq!(encode_one(&mut e, "x-big", &big)[0], 0x00);
}

/// Blocks written with `encode_at` (its memo of the last block) are the bytes
/// `encode` writes for the same table, block after block, while the date changes
/// (an insertion that moves every dynamic index), the request id changes each
/// time, and the peer's table size changes.
#[test]
fn encoding_at_places_writes_what_encoding_writes() {
    let (mut memo, mut plain) = (Encoder::new(), Encoder::new());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for round in 0..40u32 {
        if round == 25 {
            memo.set_peer_max_table_size(100);
            plain.set_peer_max_table_size(100);
        }
        let date = format!("Mon, 21 Oct 2013 20:13:{:02} GMT", round / 4);
        let id = format!("{round:032x}");
        let fields = [
            ("server", "veter"),
            ("date", date.as_str()),
            ("x-request-id", id.as_str()),
            ("content-type", "text/plain; charset=utf-8"),
            ("content-length", if round % 3 == 0 { "13" } else { "2" }),
        ];
        a.clear();
        b.clear();
        memo.begin_block(&mut a);
        plain.begin_block(&mut b);
        for (place, (n, v)) in fields.iter().enumerate() {
            memo.encode_at(place, n.as_bytes(), v.as_bytes(), &mut a);
            plain.encode(n.as_bytes(), v.as_bytes(), &mut b);
        }
        assert_eq!(a, b, "round {round}");
    }
}

#[test]
fn encoder_signals_size_updates() {
    let mut e = Encoder::new();
    let mut out = Vec::new();
    // The default: nothing to signal.
    e.set_peer_max_table_size(4096);
    e.set_peer_max_table_size(1 << 20);
    e.begin_block(&mut out);
    assert!(out.is_empty());
    encode_one(&mut e, "server", "veter");
    // 0 then 4096: both, the smallest first, once.
    e.set_peer_max_table_size(0);
    e.set_peer_max_table_size(100);
    e.set_peer_max_table_size(4096);
    assert_eq!(e.table_size(), 0);
    e.begin_block(&mut out);
    assert_eq!(out, hex("20 3fe11f"));
    out.clear();
    e.begin_block(&mut out);
    assert!(out.is_empty());
    // One shrink: one update.
    e.set_peer_max_table_size(256);
    e.begin_block(&mut out);
    assert_eq!(out, hex("3fe101"));
}

/// xorshift64*: deterministic, no crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `min..max` bytes drawn from `alphabet`.
    fn bytes(&mut self, min: usize, max: usize, alphabet: &[u8]) -> Vec<u8> {
        let len = min + self.below(max - min);
        (0..len).map(|_| *self.pick(alphabet)).collect()
    }
}

/// Random field lists through an encoder and a decoder, with table size changes
/// (several between two blocks, some above the encoder's cap) on the way: the
/// fields come back, and the two tables stay equal. A third of the blocks repeat
/// the one before with a value or two changed, and half the blocks are written with
/// `encode_at`, so the encoder's memo of the last block (`memo.rs`) is used across
/// insertions and size changes.
#[test]
fn random_round_trips() {
    const NAMES: [&str; 14] = [
        ":status",
        "content-type",
        "date",
        "server",
        "content-length",
        "x-request-id",
        "set-cookie",
        "cookie",
        "vary",
        "x-custom",
        "accept",
        ":method",
        "cache-control",
        "x-a-rather-long-header-name-for-tests",
    ];
    const SIZES: [usize; 8] = [0, 1, 33, 100, 256, 1000, 4096, 65536];
    let all_bytes: Vec<u8> = (0..=255).collect();
    let text = b"abcdefghijklmnopqrstuvwxyz0123456789-_/;=, ".to_vec();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new(4096);
    let mut recent: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut last: Fields = Vec::new();
    let mut block = Vec::new();
    for round in 0..3000 {
        if rng.below(10) == 0 {
            for _ in 0..=rng.below(3) {
                let size = *rng.pick(&SIZES);
                decoder.set_max_table_size(size);
                encoder.set_peer_max_table_size(size);
            }
        }
        let mut fields: Fields = Vec::new();
        let repeat = round > 0 && rng.below(3) == 0;
        if repeat {
            fields.clone_from(&last);
            for _ in 0..rng.below(3) {
                if !fields.is_empty() {
                    let i = rng.below(fields.len());
                    fields[i].1 = rng.bytes(0, 30, &text);
                }
            }
        }
        for _ in 0..if repeat { 0 } else { rng.below(12) } {
            let field = match rng.below(4) {
                0 if !recent.is_empty() => rng.pick(&recent).clone(),
                1 => (
                    rng.pick(&NAMES).as_bytes().to_vec(),
                    rng.bytes(0, 40, &all_bytes),
                ),
                2 => (rng.bytes(1, 20, b"abcxyz-"), rng.bytes(0, 300, &text)),
                _ => (
                    rng.pick(&NAMES).as_bytes().to_vec(),
                    rng.bytes(0, 30, &text),
                ),
            };
            if recent.len() < 50 {
                recent.push(field.clone());
            } else {
                recent[rng.below(50)] = field.clone();
            }
            fields.push(field);
        }
        block.clear();
        encoder.begin_block(&mut block);
        let status = *rng.pick(&[200u16, 201, 404, 503, 999]);
        encoder.encode_status(status, &mut block);
        let at_places = rng.below(2) == 0;
        for (place, (n, v)) in fields.iter().enumerate() {
            if at_places {
                encoder.encode_at(place, n, v, &mut block);
            } else {
                encoder.encode(n, v, &mut block);
            }
        }
        last.clone_from(&fields);
        let got = decode_all(&mut decoder, &block).unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(
            got[0],
            (b":status".to_vec(), status.to_string().into_bytes())
        );
        assert_eq!(got[1..], fields[..], "round {round}");
        assert!(
            encoder.table_entries().eq(decoder.table_entries()),
            "round {round}"
        );
        assert_eq!(encoder.table_size(), decoder.table_size());
    }
}

/// The fields h2load sends, and a small response's.
const REQUEST: [(&str, &str); 6] = [
    (":method", "GET"),
    (":path", "/"),
    (":scheme", "http"),
    (":authority", "127.0.0.1:8000"),
    ("user-agent", "h2load nghttp2/1.52.0"),
    ("accept", "*/*"),
];

/// A small response's fields, after `:status` 200.
const RESPONSE: [(&str, &str); 4] = [
    ("content-type", "text/plain; charset=utf-8"),
    ("content-length", "13"),
    ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
    ("server", "veter"),
];

fn encode_response(e: &mut Encoder, out: &mut Vec<u8>) {
    out.clear();
    e.begin_block(out);
    e.encode_status(200, out);
    for (n, v) in RESPONSE {
        e.encode(n.as_bytes(), v.as_bytes(), out);
    }
}

/// The mean time of `f` over `n` runs, the best of five such rounds (the machine is
/// shared: the best round is the one least disturbed).
fn time(n: u32, mut f: impl FnMut()) -> Duration {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..n {
                f();
            }
            start.elapsed() / n
        })
        .min()
        .unwrap_or_default()
}

/// Nanoseconds per block: decoding h2load's request (the first on a connection, and
/// a repeat, when the table has it), encoding a small response (the same two ways).
/// `cargo test --release --lib hpack -- --ignored --nocapture`
#[test]
#[ignore = "a benchmark: run it in release"]
fn bench_typical_blocks() {
    const N: u32 = 300_000;
    let mut encoder = Encoder::new();
    let mut first = Vec::new();
    encoder.begin_block(&mut first);
    for (n, v) in REQUEST {
        encoder.encode(n.as_bytes(), v.as_bytes(), &mut first);
    }
    let mut repeat = Vec::new();
    for (n, v) in REQUEST {
        encoder.encode(n.as_bytes(), v.as_bytes(), &mut repeat);
    }
    let mut count = 0usize;
    let mut sink = |n: &[u8], v: &[u8]| count += n.len() + v.len();
    let new_decoder = time(N, || {
        let mut d = Decoder::new(4096);
        d.decode(std::hint::black_box(&first), 65536, &mut sink)
            .unwrap();
    });
    // On a warm decoder, size updates to 0 and back empty the table first.
    let mut emptied = hex("20 3fe11f");
    emptied.extend_from_slice(&first);
    let mut d = Decoder::new(4096);
    let warm_first = time(N, || {
        d.decode(std::hint::black_box(&emptied), 65536, &mut sink)
            .unwrap();
    });
    let repeated = time(N, || {
        d.decode(std::hint::black_box(&repeat), 65536, &mut sink)
            .unwrap();
    });
    let mut out = Vec::with_capacity(256);
    let new_encoder = time(N, || {
        encode_response(&mut Encoder::new(), &mut out);
        std::hint::black_box(&out);
    });
    let first_response = out.len();
    let mut e = Encoder::new();
    let steady = time(N, || {
        encode_response(&mut e, &mut out);
        std::hint::black_box(&out);
    });
    println!(
        "hpack decode, h2load's request: {new_decoder:?} first on a new decoder (its creation \
         included), {warm_first:?} first on a warm one ({} bytes), {repeated:?} repeated ({} \
         bytes)\nhpack encode, 200 + 4 fields: {new_encoder:?} on a new encoder ({first_response} \
         bytes), {steady:?} repeated ({} bytes)",
        first.len(),
        repeat.len(),
        out.len()
    );
    assert!(count > 0);
}

/// The policy's static indices name the fields they mean.
#[test]
fn policy_indices_name_their_fields() {
    use super::encode::tests_support::policy_of;
    for name in [
        "authorization",
        "cookie",
        "proxy-authorization",
        "set-cookie",
    ] {
        assert_eq!(policy_of(name), "never", "{name}");
    }
    for name in [
        ":path",
        "age",
        "content-length",
        "content-range",
        "etag",
        "last-modified",
        "location",
        "x-request-id",
        "traceparent",
    ] {
        assert_eq!(policy_of(name), "without", "{name}");
    }
    for name in [
        "date",
        "server",
        "content-type",
        "vary",
        ":status",
        "x-custom",
    ] {
        assert_eq!(policy_of(name), "incremental", "{name}");
    }
}
