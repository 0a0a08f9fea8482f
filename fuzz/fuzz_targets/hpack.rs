//! HPACK (RFC 7541), two ways.
//!
//! Raw mode (first byte even): arbitrary header blocks, length-prefixed, through one
//! decoder with small limits the input picks. Beyond "no panic": the table never
//! exceeds its maximum nor the maximum we allowed; the fields emitted stay within the
//! list size limit, and `ListTooLarge` comes exactly when the whole block's list is
//! over it; after any other error the connection is over, so decoding stops.
//!
//! Round-trip mode (first byte odd): the input is read as field lists and table size
//! changes; each list goes through the encoder and back through a decoder, which
//! must give the same fields and hold the same table as the encoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use veter_fuzz::http2::hpack::{Decoder, Encoder, Error};

const SIZES: [usize; 8] = [0, 1, 32, 64, 100, 256, 4096, 65536];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        raw(mode, rest);
    } else {
        round_trip(rest);
    }
});

fn raw(mode: u8, data: &[u8]) {
    let max_table_size = SIZES[usize::from(mode >> 1) % SIZES.len()];
    let max_list_size = [0, 40, 200, 4096, usize::MAX][usize::from(mode >> 4) % 5];
    let mut decoder = Decoder::new(max_table_size);
    let mut rest = data;
    while let Some((&len, tail)) = rest.split_first() {
        let (block, tail) = tail.split_at(usize::from(len).min(tail.len()));
        rest = tail;
        let mut emitted = 0usize;
        let result = decoder.decode(block, max_list_size, |n, v| {
            emitted += n.len() + v.len() + 32;
        });
        assert!(emitted <= max_list_size);
        assert!(decoder.table_size() <= decoder.table_max_size());
        assert!(decoder.table_max_size() <= max_table_size);
        match result {
            Ok(()) | Err(Error::ListTooLarge) => {}
            Err(_) => return,
        }
        // The table's own accounting agrees with its entries.
        let size: usize = decoder.table_entries().map(|(n, v)| n.len() + v.len() + 32).sum();
        assert_eq!(size, decoder.table_size());
    }
}

/// Field lists from the input: each list is a count, then per field a selector byte
/// and bytes drawn from the input; a count byte with the top bit set changes the
/// table size instead.
fn round_trip(data: &[u8]) {
    const NAMES: [&[u8]; 8] = [
        b":status",
        b"content-type",
        b"date",
        b"x-request-id",
        b"set-cookie",
        b"server",
        b"accept-encoding",
        b"x-custom",
    ];
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new(4096);
    let mut it = data.iter().copied();
    let mut block = Vec::new();
    while let Some(count) = it.next() {
        if count & 0x80 != 0 {
            let size = SIZES[usize::from(count) % SIZES.len()];
            encoder.set_peer_max_table_size(size);
            decoder.set_max_table_size(size);
            continue;
        }
        let mut fields = Vec::new();
        for _ in 0..count % 16 {
            let Some(sel) = it.next() else { break };
            let name = if sel & 0x80 == 0 {
                NAMES[usize::from(sel) % NAMES.len()].to_vec()
            } else {
                it.by_ref().take(usize::from(sel & 0x0f) + 1).collect()
            };
            let value: Vec<u8> = it.by_ref().take(usize::from(sel >> 3 & 0x0f)).collect();
            fields.push((name, value));
        }
        block.clear();
        encoder.begin_block(&mut block);
        for (n, v) in &fields {
            encoder.encode(n, v, &mut block);
        }
        let mut got = Vec::new();
        decoder
            .decode(&block, usize::MAX, |n, v| got.push((n.to_vec(), v.to_vec())))
            .expect("the decoder refused the encoder's block");
        assert_eq!(got, fields);
        assert!(encoder.table_entries().eq(decoder.table_entries()));
    }
}
