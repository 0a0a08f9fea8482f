//! Tests of the Huffman code table and coder.

use super::super::Error;
use super::{decode, encode, encode_short, encoded_len, Resumable, CODES, SHORT};

/// Appendix B is a canonical Huffman code: sorted by (length, symbol), each code is
/// the previous one plus one, shifted left by the growth in length. Checking that
/// against the typed-in table catches any typo in it, and that it is complete.
#[test]
fn table_is_the_canonical_code_of_its_lengths() {
    let mut order: Vec<usize> = (0..CODES.len()).collect();
    order.sort_by_key(|&sym| (CODES[sym].1, sym));
    let mut code = 0u32;
    let mut len = CODES[order[0]].1;
    for &sym in &order {
        code <<= CODES[sym].1 - len;
        len = CODES[sym].1;
        assert_eq!(CODES[sym].0, code, "symbol {sym}");
        code += 1;
    }
    // Complete: the last code is all ones (EOS, thirty of them).
    assert_eq!((code - 1, len), (0x3fff_ffff, 30));
}

#[test]
fn every_byte_round_trips() {
    let all: Vec<u8> = (0..=255).collect();
    for input in [
        &all[..],
        b"",
        b"a",
        b"www.example.com",
        b"\x00\xff\x0a\x0d\x16",
    ] {
        let mut coded = Vec::new();
        encode(input, &mut coded);
        assert_eq!(coded.len(), encoded_len(input));
        let mut back = Vec::new();
        decode(&coded, &mut back).unwrap();
        assert_eq!(back, input);
    }
    // Each byte alone, so that each code's padding is exercised.
    for b in 0..=255u8 {
        let mut coded = Vec::new();
        encode(&[b], &mut coded);
        let mut back = Vec::new();
        decode(&coded, &mut back).unwrap();
        assert_eq!(back, [b]);
    }
}

#[test]
fn a_short_coding_is_the_coding_when_it_is_shorter_and_none_otherwise() {
    let mut inputs: Vec<Vec<u8>> = vec![
        b"0123456789abcdef0000000000000001".to_vec(),
        b"13".to_vec(),
        b"text/plain; charset=utf-8".to_vec(),
        b"Sun, 06 Nov 1994 08:49:37 GMT".to_vec(),
        Vec::new(),
    ];
    // Every length up to SHORT - 1 of a cheap byte (5 bits), of a dear one (up
    // to 30 bits) and of a mix, so that the cut-off falls at every place.
    for len in 0..SHORT {
        inputs.push(vec![b'a'; len]);
        inputs.push(vec![0xff; len]);
        inputs.push((0..len).map(|i| [b'e', b'~', b'0', 0x80][i % 4]).collect());
    }
    for b in 0..=255u8 {
        inputs.push(vec![b]);
        inputs.push(vec![b'e', b, b'e', b'e', b'e', b'e', b'e', b'e', b'e']);
    }
    for input in inputs {
        let mut whole = Vec::new();
        encode(&input, &mut whole);
        let mut buf = [0; SHORT];
        let short = (input.len() < SHORT).then(|| encode_short(&input, &mut buf));
        match short {
            None => {}
            Some(Some(len)) => assert_eq!(&buf[..len], &whole[..], "{input:?}"),
            Some(None) => assert!(whole.len() >= input.len(), "{input:?}"),
        }
        if input.len() < SHORT && whole.len() < input.len() {
            assert!(matches!(short, Some(Some(_))), "{input:?}");
        }
    }
}

/// One `Resumable` fed value after value writes what `encode_short` writes for
/// each: request ids (a fixed half, a counter: most digits shared with the one
/// before), values that part at every place, change length, or give the coding up
/// part way (so that its marks stop short), in an order that mixes them.
#[test]
fn a_resumed_coding_is_the_short_coding() {
    let mut values: Vec<Vec<u8>> = Vec::new();
    for n in 0..300u64 {
        values.push(format!("9f86d081884c7d65{n:016x}").into_bytes());
    }
    values.push(format!("9f86d081884c7d65{:016x}", u64::MAX).into_bytes());
    values.push(b"0000000000000000ffffffffffffffff".to_vec());
    let base: Vec<u8> = (0..SHORT - 1)
        .map(|i| b"0123456789abcdef-~"[i * 7 % 18])
        .collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for round in 0..3000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let len = usize::try_from(state % SHORT as u64).unwrap();
        let mut v = base[..len].to_vec();
        if len > 0 {
            // A byte changed somewhere, sometimes to one whose code is long (a
            // coding given up there or later).
            let at = usize::try_from((state >> 8) % len as u64).unwrap();
            v[at] = if round % 3 == 0 { 0x80 } else { b'a' };
        }
        values.push(v);
        if round % 5 == 0 {
            values.push(vec![0xff; len]);
        }
    }
    // A coding given up part way (its marks past there are an older value's), then
    // a value sharing more than that with it.
    let given_up = [b"aaaa".as_slice(), &[0xff; 6]].concat();
    values.extend([
        vec![b'a'; 120],
        given_up.clone(),
        [given_up.as_slice(), &[b'a'; 100]].concat(),
    ]);
    let mut coder = Resumable::default();
    for (i, value) in values.iter().enumerate() {
        let mut buf = [0; SHORT];
        let want = encode_short(value, &mut buf).map(|len| buf[..len].to_vec());
        let got = coder.encode(value).map(<[u8]>::to_vec);
        assert_eq!(got, want, "value {i}: {value:?}");
    }
}

#[test]
fn rfc_strings() {
    // C.4.1's authority and C.4.2's no-cache.
    for (coded, text) in [
        (
            &[
                0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
            ][..],
            &b"www.example.com"[..],
        ),
        (&[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf][..], b"no-cache"),
    ] {
        let mut out = Vec::new();
        encode(text, &mut out);
        assert_eq!(out, coded);
        decode(coded, &mut out).unwrap();
        assert_eq!(out, text);
    }
}

#[test]
fn eos_and_padding_are_refused() {
    let mut out = Vec::new();
    // EOS alone (30 ones, 2 of padding), and after a symbol.
    assert_eq!(
        decode(&[0xff, 0xff, 0xff, 0xff], &mut out),
        Err(Error::Huffman)
    );
    assert_eq!(
        decode(&[0x1f, 0xff, 0xff, 0xff, 0xff], &mut out),
        Err(Error::Huffman)
    );
    // Padding of 8 ones.
    assert_eq!(decode(&[0xff], &mut out), Err(Error::Huffman));
    // '0' (00000) padded with zeros, then with ones but one zero among them.
    assert_eq!(decode(&[0x00], &mut out), Err(Error::Huffman));
    assert_eq!(decode(&[0x06], &mut out), Err(Error::Huffman));
    decode(&[0x07], &mut out).unwrap();
    assert_eq!(out, b"0");
    // Seven ones of padding after a code ending on a byte boundary is too long
    // only when it spills: 'a' 'a' ... ; a full extra byte is refused.
    assert_eq!(decode(&[0x07, 0xff], &mut out), Err(Error::Huffman));
}

/// Nanoseconds to decode a 21-byte user-agent, best of five rounds.
/// `cargo test --release --lib huffman -- --ignored --nocapture`
#[test]
#[ignore = "a benchmark: run it in release"]
fn bench_decode() {
    let mut coded = Vec::new();
    encode(b"h2load nghttp2/1.52.0", &mut coded);
    let mut out = Vec::new();
    let best = (0..5)
        .map(|_| {
            let start = std::time::Instant::now();
            for _ in 0..1_000_000 {
                decode(std::hint::black_box(&coded), &mut out).unwrap();
            }
            start.elapsed() / 1_000_000
        })
        .min()
        .unwrap();
    println!("huffman decode, {} bytes: {best:?}", coded.len());
}
