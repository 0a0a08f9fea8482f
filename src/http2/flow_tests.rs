//! Flow control both ways (RFC 9113 sections 5.2 and 6.9).

use super::conn::Event;
use super::error::ErrorCode;
use super::frame::{flag, kind};
use super::settings::{id, Config};
use super::testing::*;

fn client() -> Client {
    Client::new(&Config::default())
}

/// A client with stream `id` open and its response head sent.
fn answering(c: &mut Client, id: u32) {
    let get = c.get(id, "/");
    c.send(&get);
    c.conn.send_headers(id, 200, &[], false);
}

fn data_lens(frames: &[Out]) -> Vec<(u32, usize)> {
    frames
        .iter()
        .filter(|f| f.kind == kind::DATA)
        .map(|f| (f.stream, f.payload.len()))
        .collect()
}

#[test]
fn data_goes_out_within_the_windows_and_the_rest_waits() {
    let mut c = client();
    c.send(&settings(&[(id::INITIAL_WINDOW_SIZE, 10)]));
    answering(&mut c, 1);
    c.frames();
    c.conn.send_data(1, b"0123456789abcdef", true);
    assert_eq!(data_lens(&c.frames()), [(1, 10)]);
    assert_eq!(c.conn.buffered(1), 6);
    c.send(&window_update(1, 4));
    let out = c.frames();
    assert_eq!(data_lens(&out), [(1, 4)]);
    assert_eq!(out[0].flags, 0);
    c.send(&window_update(1, 100));
    let out = c.frames();
    assert_eq!(out[0].payload, b"ef");
    assert_eq!(out[0].flags, flag::END_STREAM);
    assert_eq!(c.conn.open_streams(), 0);
}

#[test]
fn data_is_framed_by_the_peers_max_frame_size() {
    let mut c = client();
    c.send(&settings(&[(id::MAX_FRAME_SIZE, 16_384)]));
    answering(&mut c, 1);
    c.frames();
    c.conn.send_data(1, &vec![7; 40_000], false);
    assert_eq!(
        data_lens(&c.frames()),
        [(1, 16_384), (1, 16_384), (1, 7_232)]
    );
    // A long header block is split into CONTINUATION frames.
    let get = c.get(3, "/");
    c.send(&get);
    // `~` takes 13 bits in Huffman code: the encoder sends it raw.
    let long = vec![b'~'; 20_000];
    c.conn.send_headers(3, 200, &[(b"x-long", &long)], true);
    let out = c.frames();
    let kinds: Vec<(u8, u8)> = out.iter().map(|f| (f.kind, f.flags)).collect();
    assert_eq!(
        kinds,
        [
            (kind::HEADERS, flag::END_STREAM),
            (kind::CONTINUATION, flag::END_HEADERS)
        ]
    );
    let block: Vec<u8> = out.iter().flat_map(|f| f.payload.clone()).collect();
    assert_eq!(c.decode(&block)[1].1.len(), 20_000);
}

#[test]
fn the_connection_window_is_shared_one_frame_per_stream_per_turn() {
    let mut c = client();
    c.send(&settings(&[
        (id::INITIAL_WINDOW_SIZE, 1 << 20),
        (id::MAX_FRAME_SIZE, 16_384),
    ]));
    answering(&mut c, 1);
    answering(&mut c, 3);
    c.frames();
    // The connection window starts at 65,535: stream 1 takes it all.
    c.conn.send_data(1, &vec![1; 100_000], true);
    c.conn.send_data(3, &vec![3; 100_000], true);
    let first: usize = data_lens(&c.frames()).iter().map(|(_, n)| n).sum();
    assert_eq!(first, 65_535);
    c.send(&window_update(0, 65_536));
    let turns: Vec<u32> = data_lens(&c.frames()).iter().map(|(s, _)| *s).collect();
    assert_eq!(turns, [1, 3, 1, 3]);
}

#[test]
fn writable_when_the_buffer_falls_back_to_the_low_water_mark() {
    let config = Config {
        send_low_water: 100,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    c.send(&settings(&[(id::INITIAL_WINDOW_SIZE, 0)]));
    answering(&mut c, 1);
    c.conn.send_data(1, &[0; 150], false);
    assert_eq!(c.conn.buffered(1), 150);
    c.events();
    c.send(&window_update(1, 20));
    assert!(c.events().is_empty());
    c.send(&window_update(1, 40));
    assert_eq!(c.events(), [Event::Writable { stream: 1 }]);
    assert_eq!(c.conn.buffered(1), 90);
}

#[test]
fn initial_window_changes_apply_to_open_streams_even_below_zero() {
    let mut c = client();
    c.send(&settings(&[(id::INITIAL_WINDOW_SIZE, 3)]));
    answering(&mut c, 1);
    c.frames();
    c.conn.send_data(1, b"abcdef", true);
    assert_eq!(data_lens(&c.frames()), [(1, 3)]);
    // 3 -> 2: the window is now -1; a `WINDOW_UPDATE` of 2 lets one byte out.
    c.send(&settings(&[(id::INITIAL_WINDOW_SIZE, 2)]));
    c.send(&window_update(1, 2));
    let out = c.frames();
    assert_eq!(data_lens(&out), [(1, 1)]);
    c.send(&settings(&[(id::INITIAL_WINDOW_SIZE, 10)]));
    assert_eq!(data_lens(&c.frames()), [(1, 2)]);
    assert_eq!(c.conn.open_streams(), 0);
}

#[test]
fn windows_above_2_pow_31_minus_1_are_flow_control_errors() {
    let mut c = client();
    c.send(&window_update(0, (1 << 31) - 1));
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::FlowControlError);

    let mut c = client();
    answering(&mut c, 1);
    c.send(&window_update(1, (1 << 31) - 1));
    assert_eq!(resets(&c.frames()), [(1, ErrorCode::FlowControlError)]);
    assert!(!c.conn.is_finished());

    let mut c = client();
    answering(&mut c, 1);
    c.send(&window_update(1, (1 << 31) - 1 - 65_535));
    c.send(&settings(&[(id::INITIAL_WINDOW_SIZE, 65_536)]));
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::FlowControlError);
}

#[test]
fn a_window_update_of_zero_is_a_protocol_error_of_its_reach() {
    let mut c = client();
    c.send(&window_update(0, 0));
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::ProtocolError);

    let mut c = client();
    answering(&mut c, 1);
    c.send(&window_update(1, 0));
    assert_eq!(resets(&c.frames()), [(1, ErrorCode::ProtocolError)]);
}

#[test]
fn receive_windows_are_enforced_and_given_back() {
    let config = Config {
        initial_window_size: 65_535,
        connection_window: 65_535,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    let h = c.headers(1, &request("/", "POST"), false);
    c.send(&h);
    c.send(&data(1, &vec![0; 16_384], false));
    c.send(&data(1, &vec![0; 16_384], false));
    // Half the connection window arrived: it is given back at once.
    let out = c.frames();
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].kind, out[0].stream), (kind::WINDOW_UPDATE, 0));
    assert_eq!(out[0].u32_at(0), 32_768);
    // The stream's comes back only as the app consumes.
    c.conn.consumed(1, 32_000);
    assert!(c.frames().is_empty());
    c.conn.consumed(1, 768);
    let out = c.frames();
    assert_eq!((out[0].kind, out[0].stream), (kind::WINDOW_UPDATE, 1));
    assert_eq!(out[0].u32_at(0), 32_768);
    // Over the stream's window: 65,535 - 32,768 + 32,768 = 65,535 left.
    c.send(&data(1, &vec![0; 16_384], false));
    c.send(&data(1, &vec![0; 16_384], false));
    c.send(&data(1, &vec![0; 16_384], false));
    c.send(&data(1, &vec![0; 16_384], false));
    c.send(&data(1, &vec![0; 16_384], false));
    assert_eq!(resets(&c.frames()), [(1, ErrorCode::FlowControlError)]);
}

#[test]
fn data_over_the_connection_window_ends_the_connection() {
    let config = Config {
        initial_window_size: 1 << 20,
        connection_window: 65_535,
        max_frame_size: 1 << 17,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    let h = c.headers(1, &request("/", "POST"), false);
    c.send(&h);
    c.send(&data(1, &vec![0; 70_000], false));
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::FlowControlError);
}

#[test]
fn padding_is_credited_at_once() {
    let config = Config {
        initial_window_size: 100,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    c.send(&frame(kind::SETTINGS, flag::ACK, 0, &[]));
    let h = c.headers(1, &request("/", "POST"), false);
    c.send(&h);
    let mut padded = vec![60];
    padded.extend([b'x'; 10]);
    padded.extend([0; 60]);
    c.send(&frame(kind::DATA, flag::PADDED, 1, &padded));
    let out = c.frames();
    assert_eq!((out[0].kind, out[0].stream), (kind::WINDOW_UPDATE, 1));
    assert_eq!(out[0].u32_at(0), 61);
    assert!(matches!(&c.events()[1], Event::Data { data, .. } if data.len() == 10));
}
