//! The parser's and the connection core's own source files, compiled into this crate
//! so the fuzz targets test exactly the code the server runs, without PyO3.

// The server's `src/http1/mod.rs`: its modules (parser, decoders, encoder) resolve
// next to it, so these are the very files the extension is built from.
#[path = "../../src/http1/mod.rs"]
pub mod http1;

// HTTP/2's sans-IO modules (HPACK, frames, the server connection).
#[path = "../../src/http2/mod.rs"]
pub mod http2;

// The connection core (no PyO3 in it) and what it uses, with its test shell
// (`conn::drive`, compiled under cargo-fuzz's `--cfg fuzzing`).
#[path = "../../src/conn/mod.rs"]
pub mod conn;
#[path = "../../src/timeouts.rs"]
pub mod timeouts;

use http1::limits::Limits;

/// Small limits picked by the fuzzer's first bytes, so that every limit check is
/// reached by short inputs; returns the limits and the rest of the input.
pub fn limits_from(data: &[u8]) -> (Limits, &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return (Limits::default(), data);
    };
    if selector & 0x80 == 0 {
        // Half the inputs run with the defaults, as the server does.
        return (Limits::default(), rest);
    }
    let Some((knobs, rest)) = rest.split_first_chunk::<7>() else {
        return (Limits::default(), rest);
    };
    let small = |k: u8| usize::from(k) + 1;
    let limits = Limits {
        max_start_line: small(knobs[0]),
        max_header_count: usize::from(knobs[1] % 16) + 1,
        max_header_bytes: small(knobs[2]),
        max_body_bytes: u64::from(knobs[3]),
        max_chunk_ext_bytes: usize::from(knobs[4]),
        max_trailer_bytes: usize::from(knobs[5]),
        max_chunk_count: u64::from(knobs[6] % 8) + 1,
    };
    (limits, rest)
}
