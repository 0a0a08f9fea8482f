//! The flood limits: each attack is run until the limit answers it.

use std::time::Duration;

use super::conn::Event;
use super::error::ErrorCode;
use super::frame::{flag, kind};
use super::settings::Config;
use super::testing::*;

fn calm(c: &mut Client) -> bool {
    c.frames()
        .iter()
        .any(|f| f.kind == kind::GOAWAY && f.code() == ErrorCode::EnhanceYourCalm)
}

#[test]
fn rapid_reset_is_answered_with_enhance_your_calm() {
    let config = Config {
        max_resets_per_window: 50,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    let mut id = 1;
    let mut open_and_reset = |c: &mut Client, n| {
        for _ in 0..n {
            let h = c.headers(id, &request("/", "POST"), false);
            c.send(&h);
            c.send(&rst(id, ErrorCode::Cancel));
            id += 2;
        }
    };
    open_and_reset(&mut c, 50);
    assert!(!calm(&mut c));
    // A new window starts the count again.
    c.later(Duration::from_millis(1_001));
    open_and_reset(&mut c, 50);
    assert!(!calm(&mut c));
    open_and_reset(&mut c, 1);
    assert!(calm(&mut c));
    assert!(c.conn.is_finished());
}

#[test]
fn server_resets_caused_by_the_client_count_as_resets() {
    // "MadeYouReset": streams the client makes the server reset.
    let config = Config {
        max_resets_per_window: 10,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    for i in 0..11 {
        let id = 1 + 2 * i;
        let h = c.headers(id, &request("/", "POST"), false);
        c.send(&h);
        c.send(&window_update(id, 0));
    }
    assert!(calm(&mut c));
}

#[test]
fn continuation_flood_is_cut_by_frame_count_and_by_size() {
    // Many empty CONTINUATION frames.
    let mut c = Client::new(&Config::default());
    c.send(&frame(kind::HEADERS, 0, 1, &[0x82]));
    for _ in 0..32 {
        c.send(&frame(kind::CONTINUATION, 0, 1, &[]));
    }
    assert!(!calm(&mut c));
    c.send(&frame(kind::CONTINUATION, 0, 1, &[]));
    assert!(calm(&mut c));

    // An endless block: never more than twice the header list limit is held.
    let config = Config {
        max_continuation_frames: 1_000,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    c.send(&frame(kind::HEADERS, 0, 1, &[0x82]));
    let mut held = 0;
    for _ in 0..10 {
        c.send(&frame(kind::CONTINUATION, 0, 1, &[0x40; 4_000]));
        held = held.max(c.conn.held_input());
    }
    assert!(held <= 2 * 16 * 1024);
    assert!(calm(&mut c));
}

#[test]
fn an_hpack_bomb_is_stopped_by_the_list_limit() {
    let mut c = Client::new(&Config::default());
    // GET https / (static), then x-bomb: 4,000 bytes, added to the dynamic table.
    let mut first = vec![0x82, 0x87, 0x84, 0x40, 6];
    first.extend(b"x-bomb");
    first.extend([0x7f, 0xa1, 0x1e]);
    first.extend([b'b'; 4_000]);
    c.send(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &first,
    ));
    assert!(matches!(c.events()[..], [Event::Request { stream: 1, .. }]));
    // 100 one-byte references to it: 400 KB decoded from 103 bytes.
    let mut bomb = vec![0x82, 0x87, 0x84];
    bomb.extend([0xbe; 100]);
    c.send(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        3,
        &bomb,
    ));
    assert_eq!(c.events(), [Event::HeadersTooLarge { stream: 3 }]);
    assert!(!c.conn.is_finished());
}

/// Sends `n` copies of a frame, then says whether the server lost its calm.
fn flood(config: &Config, setup: &[Vec<u8>], bytes: &[u8], n: usize) -> bool {
    let mut c = Client::new(config);
    for s in setup {
        c.send(s);
    }
    for _ in 0..n {
        c.send(bytes);
        // The writer keeps up: only the rate limit applies.
        c.frames();
        if c.conn.is_finished() {
            return true;
        }
    }
    false
}

#[test]
fn control_frame_floods_are_rate_limited() {
    let config = Config {
        max_control_frames_per_window: 100,
        ..Config::default()
    };
    let mut open = Client::new(&config);
    let post = open.headers(1, &request("/", "POST"), false);
    let cases = [
        ("ping", frame(kind::PING, 0, 0, &[0; 8])),
        ("settings", settings(&[])),
        ("priority", frame(kind::PRIORITY, 0, 3, &[0, 0, 0, 1, 1])),
        ("unknown", frame(0xfa, 0, 0, &[])),
        ("empty data", data(1, &[], false)),
        ("empty headers", frame(kind::HEADERS, 0, 1, &[])),
    ];
    for (name, bytes) in &cases {
        let setup = [post.clone()];
        // An empty HEADERS without `END_HEADERS` is followed by CONTINUATIONs.
        let bytes = if *name == "empty headers" {
            let mut b = bytes.clone();
            b.extend(frame(kind::CONTINUATION, flag::END_HEADERS, 1, &[]));
            b
        } else {
            bytes.clone()
        };
        assert!(!flood(&config, &setup, &bytes, 90), "{name}");
        assert!(flood(&config, &setup, &bytes, 101), "{name}");
    }
}

#[test]
fn control_output_the_writer_does_not_take_is_capped() {
    let config = Config {
        max_queued_control_bytes: 170,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    for _ in 0..10 {
        c.send(&frame(kind::PING, 0, 0, &[0; 8]));
    }
    assert!(!c.conn.is_finished());
    c.send(&frame(kind::PING, 0, 0, &[0; 8]));
    assert!(calm(&mut c));
}

#[test]
fn malformed_request_floods_are_rate_limited() {
    let config = Config {
        max_control_frames_per_window: 20,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    for i in 0..21 {
        let bad = c.headers(1 + 2 * i, &[(":method", "GET")], true);
        c.send(&bad);
    }
    assert!(calm(&mut c));
}
