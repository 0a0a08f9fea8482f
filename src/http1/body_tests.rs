//! Tests for `body.rs` (kept apart so the module stays readable).

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
fn decode_every_way(input: &[u8], limits: &Limits) -> Result<Option<(Vec<u8>, usize)>, ParseError> {
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
        // Extensions: names, token and quoted values (no whitespace around them).
        (b"5;a\r\nhello\r\n0\r\n\r\n", b"hello"),
        (b"5;a=b;c\r\nhello\r\n0;last\r\n\r\n", b"hello"),
        (b"5;a=b;c=\"x y\\\"z\"\r\nhello\r\n0\r\n\r\n", b"hello"),
        (b"5;a=\"\"\r\nhello\r\n0\r\n\r\n", b"hello"),
        (b"5;a=\"caf\xc3\xa9\"\r\nhello\r\n0\r\n\r\n", b"hello"),
        // Trailers are validated and dropped.
        (
            b"5\r\nhello\r\n0\r\nX-Sum: abc\r\nX-Empty:\r\n\r\n",
            b"hello",
        ),
        (b"5\r\nhello\r\n0\r\nX-Bin: \t\x80\xff \r\n\r\n", b"hello"),
        // Names that only start like a forbidden trailer field are fine.
        (
            b"0\r\nHosts: a\r\nContent-Lengths: 1\r\nTransfer-Encoding-X: c\r\n\r\n",
            b"",
        ),
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
        (b"5g\r\n", size.clone()),
        // No whitespace anywhere in a chunk-size line (RFC 9112 allows BWS around
        // `;` and `=`; we do not, see body.rs).
        (b"5 \r\nhello\r\n0\r\n\r\n", size.clone()),
        (b"5\t\r\nhello\r\n0\r\n\r\n", size.clone()),
        (b"5 ;a\r\nhello\r\n0\r\n\r\n", size),
        (b"5; a\r\nhello\r\n0\r\n\r\n", ext.clone()),
        (b"5;a =b\r\nhello\r\n0\r\n\r\n", ext.clone()),
        (b"5;a= b\r\nhello\r\n0\r\n\r\n", ext.clone()),
        (b"5;a=b ;c\r\nhello\r\n0\r\n\r\n", ext.clone()),
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
        // Framing and routing fields may not come as trailers, in any case.
        (
            b"0\r\nContent-Length: 5\r\n\r\n",
            bad("forbidden field in trailer"),
        ),
        (
            b"0\r\nTRANSFER-ENCODING: chunked\r\n\r\n",
            bad("forbidden field in trailer"),
        ),
        (
            b"0\r\nX: 1\r\nhost: a\r\n\r\n",
            bad("forbidden field in trailer"),
        ),
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
        max_chunk_count: 3,
        ..Limits::default()
    };
    let table: &[(&[u8], Result<usize, ParseError>)] = &[
        // Body total: 10 allowed, 11 refused at the size line, before the data.
        (b"5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n", Ok(10)),
        (b"5\r\nhello\r\n6\r\n", Err(ParseError::PayloadTooLarge)),
        (b"b\r\n", Err(ParseError::PayloadTooLarge)),
        (b"ffffffffffffffff\r\n", Err(ParseError::PayloadTooLarge)),
        // Extension bytes per line: 6 allowed (";a=bcd" and ";a;b;c"), 7 refused.
        (b"1;a=bcd\r\nx\r\n0;a=bcd\r\n\r\n", Ok(1)),
        (b"1;a;b;c\r\nx\r\n0\r\n\r\n", Ok(1)),
        (b"1;a=bcde\r\n", Err(bad("chunk extensions too long"))),
        // Trailer bytes: "X: 1234\r\n" is 9, one too many; "X: 123\r\n" is 8.
        (b"0\r\nX: 123\r\n\r\n", Ok(0)),
        // Chunks, the last one included: 3 allowed, a 4th size line refused.
        (b"1\r\na\r\n1\r\nb\r\n0\r\n\r\n", Ok(2)),
        (
            b"1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n",
            Err(ParseError::PayloadTooLarge),
        ),
        (
            b"1\r\na\r\n1\r\nb\r\n1\r\nc\r\n1\r\n",
            Err(ParseError::PayloadTooLarge),
        ),
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
        b"5;a=\"b\\\"c\"\r\nhello\r\n1;x\r\n!\r\n0\r\nX: y\r\n\r\n",
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
