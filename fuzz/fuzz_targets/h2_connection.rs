//! The HTTP/2 server connection (src/http2/conn.rs) fed arbitrary frames.
//!
//! The first byte picks the limits (defaults or small ones) and the read size;
//! the rest follows a valid preface and SETTINGS frame (so every input reaches
//! the frame layer) and is fed in pieces. A shell answers every request with a
//! body, consumes request bodies and answers `HeadersTooLarge` with 431.
//! Beyond "no panic": the output is always whole frames, none over the largest
//! frame size the protocol allows.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use veter_fuzz::http2::frame::{Head, HEADER_LEN, MAX_FRAME_SIZE_LIMIT, PREFACE};
use veter_fuzz::http2::{Config, Connection, ErrorCode, Event};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let config = if mode & 1 == 0 {
        Config::default()
    } else {
        Config {
            max_concurrent_streams: 3,
            max_header_list_size: 200,
            initial_window_size: 100,
            connection_window: 65_535,
            max_continuation_frames: 3,
            max_resets_per_window: 5,
            max_control_frames_per_window: 20,
            max_queued_control_bytes: 300,
            send_low_water: 10,
            ..Config::default()
        }
    };
    let piece = usize::from(mode >> 1) + 1;
    let mut conn = Connection::new(&config);
    let mut now = Instant::now();
    let mut hello = PREFACE.to_vec();
    hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    conn.received(&hello, now);
    for chunk in rest.chunks(piece) {
        conn.received(chunk, now);
        now += Duration::from_millis(50);
        while let Some(event) = conn.next_event() {
            match event {
                Event::Request { stream, end_stream, .. } => {
                    conn.send_headers(stream, 200, &[(b"server", b"fuzz")], false);
                    conn.send_data(stream, &[b'x'; 300], end_stream);
                    if !end_stream && stream % 4 == 1 {
                        conn.reset(stream, ErrorCode::Cancel);
                    }
                }
                Event::Data { stream, data, end_stream } => {
                    conn.consumed(stream, data.len());
                    if end_stream {
                        conn.send_trailers(stream, &[(b"x-end", b"1")]);
                    }
                }
                Event::HeadersTooLarge { stream } => conn.send_headers(stream, 431, &[], true),
                Event::Trailers { stream, .. } => conn.send_data(stream, b"", true),
                Event::Writable { stream } => {
                    let _ = conn.buffered(stream);
                }
                Event::Reset { .. } | Event::GoAway { .. } => {}
            }
        }
        let out = std::mem::take(conn.output());
        let mut rest = &out[..];
        while let Some(head) = Head::parse(rest) {
            assert!(head.len <= MAX_FRAME_SIZE_LIMIT);
            let end = HEADER_LEN + head.len as usize;
            assert!(rest.len() >= end, "a partial frame in the output");
            rest = &rest[end..];
        }
        assert!(rest.is_empty(), "a partial frame header in the output");
        if conn.is_finished() {
            break;
        }
    }
});
