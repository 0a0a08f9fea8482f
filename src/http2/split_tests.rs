//! A realistic exchange fed whole, split in two at every byte boundary, and
//! byte by byte: the events and the output must not depend on how reads fall.

use std::time::Instant;

use super::conn::{Connection, Event};
use super::error::ErrorCode;
use super::frame::{flag, kind, Head, HEADER_LEN, PREFACE};
use super::settings::{id, Config};
use super::testing::*;

fn exchange() -> Vec<u8> {
    let mut c = Client::raw(&Config::default());
    let mut bytes = PREFACE.to_vec();
    bytes.extend(settings(&[
        (id::INITIAL_WINDOW_SIZE, 1 << 20),
        (id::HEADER_TABLE_SIZE, 0),
    ]));
    bytes.extend(window_update(0, 1 << 20));
    bytes.extend(frame(kind::SETTINGS, flag::ACK, 0, &[]));
    // A POST whose head spans HEADERS and CONTINUATION.
    let mut post = request("/upload", "POST");
    post.extend([("content-length", "9"), ("user-agent", "split-test/1.0")]);
    let block = c.block(&post);
    let (a, b) = block.split_at(block.len() / 2);
    bytes.extend(frame(kind::HEADERS, 0, 1, a));
    bytes.extend(frame(kind::CONTINUATION, flag::END_HEADERS, 1, b));
    // Padded DATA (3 padding bytes), then plain DATA, then trailers.
    bytes.extend(frame(
        kind::DATA,
        flag::PADDED,
        1,
        &[3, b'a', b'b', b'c', 0, 0, 0],
    ));
    bytes.extend(data(1, b"defghi", false));
    let trailers = c.headers(1, &[("x-checksum", "abc")], true);
    bytes.extend(trailers);
    bytes.extend(frame(kind::PING, 0, 0, b"pingpong"));
    let get = c.get(3, "/index.html");
    bytes.extend(get);
    bytes.extend(frame(kind::PRIORITY, 0, 5, &[0, 0, 0, 3, 32]));
    let cancelled = c.headers(5, &request("/gone", "POST"), false);
    bytes.extend(cancelled);
    bytes.extend(rst(5, ErrorCode::Cancel));
    bytes.extend(frame(0xfa, 0, 0, b"unknown"));
    bytes
}

/// Feeds the pieces; the app answers each request as it surfaces and consumes
/// every body byte. Returns the events and the output frames by stream (in
/// order within each stream: how the app's answers interleave with the
/// connection's acks depends on where reads end, and may).
fn run(pieces: &[&[u8]]) -> (Vec<Event>, Vec<Vec<u8>>) {
    let mut conn = Connection::new(&Config::default());
    let now = Instant::now();
    let mut events = Vec::new();
    let mut out = Vec::new();
    for piece in pieces {
        conn.received(piece, now);
        while let Some(e) = conn.next_event() {
            match &e {
                Event::Request {
                    stream,
                    end_stream: true,
                    ..
                } => {
                    conn.send_headers(*stream, 200, &[(b"server", b"veter")], false);
                    conn.send_data(*stream, b"hello", true);
                }
                Event::Data { stream, data, .. } => conn.consumed(*stream, data.len()),
                Event::Trailers { stream, .. } => conn.send_headers(*stream, 204, &[], true),
                _ => {}
            }
            events.push(e);
        }
        out.append(conn.output());
    }
    assert!(!conn.is_finished());
    let mut frames = Vec::new();
    let mut rest = &out[..];
    while let Some(head) = Head::parse(rest) {
        let end = HEADER_LEN + head.len as usize;
        frames.push((head.stream, rest[..end].to_vec()));
        rest = &rest[end..];
    }
    assert!(rest.is_empty());
    frames.sort_by_key(|(stream, _)| *stream);
    (events, frames.into_iter().map(|(_, f)| f).collect())
}

#[test]
fn the_same_exchange_however_it_is_split() {
    let bytes = exchange();
    let (events, out) = run(&[&bytes]);
    let kinds: Vec<String> = events
        .iter()
        .map(|e| {
            format!("{e:?}")
                .split_whitespace()
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        ["Request", "Data", "Data", "Trailers", "Request", "Request", "Reset"]
    );
    for at in 0..=bytes.len() {
        let (a, b) = bytes.split_at(at);
        assert_eq!(run(&[a, b]), (events.clone(), out.clone()), "split at {at}");
    }
    let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(run(&bytewise), (events, out));
}
