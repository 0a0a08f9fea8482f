//! The chunked-body decoder, two ways.
//!
//! Raw mode (first byte even): arbitrary bytes, decoded whole and again in pieces
//! whose sizes the input picks; both runs must agree exactly (output, bytes consumed,
//! done, error), since the decoder must not care how TCP split the body.
//!
//! Structured mode (first byte odd): chunks, extensions and trailers built from the
//! input with the grammar of RFC 9112 section 7.1; the decoder must give back exactly
//! the chunk data, stop right after the final CRLF, and accept it (default limits).
#![no_main]

use libfuzzer_sys::fuzz_target;
use veter_fuzz::http1::body::ChunkedDecoder;
use veter_fuzz::http1::error::ParseError;
use veter_fuzz::http1::limits::Limits;
use veter_fuzz::limits_from;

type Outcome = Result<(Vec<u8>, usize, bool), ParseError>;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        raw(rest);
    } else {
        structured(rest);
    }
});

fn raw(data: &[u8]) {
    let (limits, rest) = limits_from(data);
    // The first byte sets the piece sizes of the split run.
    let Some((&step, input)) = rest.split_first() else {
        return;
    };
    let whole = decode_in_pieces(input, input.len().max(1), &limits);
    let pieces = decode_in_pieces(input, usize::from(step % 17) + 1, &limits);
    assert_eq!(whole, pieces);
    if let Ok((out, consumed, done)) = &whole {
        assert!(*consumed <= input.len());
        assert!(out.len() as u64 <= limits.max_body_bytes);
        if !done {
            assert_eq!(*consumed, input.len());
        }
    }
}

fn decode_in_pieces(input: &[u8], step: usize, limits: &Limits) -> Outcome {
    let mut decoder = ChunkedDecoder::new(limits);
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < input.len() {
        let end = (pos + step).min(input.len());
        let (used, done) = decoder.decode(&input[pos..end], &mut out)?;
        assert_eq!(decoder.decoded_len(), out.len() as u64);
        pos += used;
        if done {
            return Ok((out, pos, true));
        }
        assert_eq!(pos, end);
    }
    Ok((out, pos, false))
}

/// Reads the input as a little program: each byte pair adds a chunk, an extension or
/// a trailer, drawing data bytes from the input itself.
fn structured(data: &[u8]) {
    let mut wire = Vec::new();
    let mut expected = Vec::new();
    let mut trailers = Vec::new();
    let mut chunks = 0;
    let mut it = data.chunks(2);
    while let Some(&[op, arg]) = it.next() {
        match op % 4 {
            0 | 1 if chunks < 64 => {
                chunks += 1;
                let len = usize::from(arg) + 1;
                let body: Vec<u8> = (0..len).map(|i| op.wrapping_add(i as u8)).collect();
                let size = if op & 0x10 == 0 {
                    format!("{len:x}")
                } else {
                    format!("00{len:X}")
                };
                wire.extend_from_slice(size.as_bytes());
                wire.extend_from_slice(extension(arg));
                wire.extend_from_slice(b"\r\n");
                wire.extend_from_slice(&body);
                wire.extend_from_slice(b"\r\n");
                expected.extend_from_slice(&body);
            }
            2 if trailers.len() < 200 => {
                trailers.extend_from_slice(b"X-T");
                trailers.extend_from_slice(format!("{arg}").as_bytes());
                trailers.extend_from_slice(if arg & 1 == 0 {
                    b": v \t w\r\n"
                } else {
                    b":\r\n"
                });
            }
            _ => {}
        }
    }
    wire.extend_from_slice(b"0");
    wire.extend_from_slice(extension(data.len() as u8));
    wire.extend_from_slice(b"\r\n");
    wire.extend_from_slice(&trailers);
    wire.extend_from_slice(b"\r\nGET / HTTP/1.1\r\n");
    let end = wire.len() - b"GET / HTTP/1.1\r\n".len();
    for step in [wire.len(), 1, 5] {
        assert_eq!(
            decode_in_pieces(&wire, step, &Limits::default()),
            Ok((expected.clone(), end, true)),
            "{:?}",
            String::from_utf8_lossy(&wire)
        );
    }
}

/// A chunk extension veter accepts, chosen by `arg`: RFC 9112 section 7.1.1 without
/// the BWS around `;` and `=`, which veter refuses (docs/security.md).
fn extension(arg: u8) -> &'static [u8] {
    const EXTENSIONS: [&[u8]; 8] = [
        b"",
        b";a",
        b";name=value",
        b";n=\"quoted \\\" value\"",
        b";a;b=c;d=\"\"",
        b";x=1;y",
        b";!#$%&'*+-.^_`|~=~",
        b";q=\"\\\\\"",
    ];
    EXTENSIONS[usize::from(arg % 8)]
}
