//! The connection's state machine: preface, SETTINGS, requests and responses,
//! stream states and the errors section 5.1 prescribes.

use super::conn::{Connection, Event};
use super::error::ErrorCode;
use super::frame::{flag, kind, PREFACE};
use super::settings::{id, Config};
use super::testing::*;

fn client() -> Client {
    Client::new(&Config::default())
}

#[test]
fn the_server_speaks_first_with_its_settings_and_window() {
    let mut c = Client::raw(&Config::default());
    let out = c.frames();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].kind, kind::SETTINGS);
    let pairs: Vec<(u16, u32)> = out[0]
        .payload
        .chunks(6)
        .map(|p| {
            let id = u16::from_be_bytes([p[0], p[1]]);
            (id, u32::from_be_bytes([p[2], p[3], p[4], p[5]]))
        })
        .collect();
    assert_eq!(
        pairs,
        [
            (id::MAX_CONCURRENT_STREAMS, 100),
            (id::INITIAL_WINDOW_SIZE, 256 * 1024),
            (id::MAX_HEADER_LIST_SIZE, 16 * 1024),
            (id::ENABLE_CONNECT_PROTOCOL, 1),
        ]
    );
    assert_eq!((out[1].kind, out[1].stream), (kind::WINDOW_UPDATE, 0));
    assert_eq!(out[1].u32_at(0), 1024 * 1024 - 65_535);
}

#[test]
fn a_bad_preface_is_a_protocol_error_as_soon_as_it_differs() {
    let mut c = Client::raw(&Config::default());
    c.frames();
    c.send(b"PRI * HTTP/2.0\r\n");
    assert!(c.frames().is_empty() && !c.conn.is_finished());
    c.send(b"GET / HTTP/1.1\r\n");
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::ProtocolError);
    assert!(c.conn.is_finished());
}

#[test]
fn the_first_frame_must_be_settings() {
    let mut c = Client::raw(&Config::default());
    c.frames();
    let mut bytes = PREFACE.to_vec();
    bytes.extend(frame(kind::PING, 0, 0, &[0; 8]));
    c.send(&bytes);
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::ProtocolError);
}

#[test]
fn settings_are_acknowledged_and_pings_answered() {
    let mut c = client();
    c.send(&settings(&[(id::MAX_FRAME_SIZE, 20_000), (0x99, 7)]));
    c.send(&frame(kind::PING, 0, 0, b"abcdefgh"));
    c.send(&frame(kind::PING, flag::ACK, 0, b"abcdefgh"));
    let out = c.frames();
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].kind, out[0].flags), (kind::SETTINGS, flag::ACK));
    assert_eq!((out[1].kind, out[1].flags), (kind::PING, flag::ACK));
    assert_eq!(out[1].payload, b"abcdefgh");
    assert_eq!(c.conn.peer_settings().max_frame_size, 20_000);
}

#[test]
fn bad_settings_values_end_the_connection() {
    let cases = [
        (id::ENABLE_PUSH, 2, ErrorCode::ProtocolError),
        (
            id::INITIAL_WINDOW_SIZE,
            1 << 31,
            ErrorCode::FlowControlError,
        ),
        (id::MAX_FRAME_SIZE, 16_383, ErrorCode::ProtocolError),
        (id::MAX_FRAME_SIZE, 1 << 24, ErrorCode::ProtocolError),
    ];
    for (setting, value, code) in cases {
        let mut c = client();
        c.send(&settings(&[(setting, value)]));
        assert_eq!(goaway(&c.frames()).code(), code, "{setting} = {value}");
    }
}

#[test]
fn a_get_surfaces_as_a_request_and_is_answered() {
    let mut c = client();
    let get = c.headers(
        1,
        &[
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "example.com"),
            (":path", "/a?b"),
            ("accept", "*/*"),
            ("cookie", "a=1"),
        ],
        true,
    );
    c.send(&get);
    let events = c.events();
    let [Event::Request {
        stream: 1,
        head,
        end_stream: true,
    }] = &events[..]
    else {
        panic!("{events:?}");
    };
    assert_eq!(
        (head.method(), head.scheme(), head.path()),
        (&b"GET"[..], &b"https"[..], &b"/a?b"[..])
    );
    assert_eq!(head.authority(), Some(&b"example.com"[..]));
    let fields: Vec<_> = head.fields().collect();
    assert_eq!(
        fields,
        [(&b"accept"[..], &b"*/*"[..]), (&b"cookie"[..], &b"a=1"[..])]
    );
    assert_eq!(c.conn.open_streams(), 1);

    c.conn
        .send_headers(1, 200, &[(b"content-type", b"text/plain")], false);
    c.conn.send_data(1, b"hello", true);
    let out = c.frames();
    assert_eq!(out.len(), 2);
    assert_eq!(
        (out[0].kind, out[0].flags, out[0].stream),
        (kind::HEADERS, flag::END_HEADERS, 1)
    );
    let fields = c.decode(&out[0].payload);
    assert_eq!(
        fields,
        [
            (":status".into(), "200".into()),
            ("content-type".into(), "text/plain".into())
        ]
    );
    assert_eq!((out[1].kind, out[1].flags), (kind::DATA, flag::END_STREAM));
    assert_eq!(out[1].payload, b"hello");
    assert_eq!(c.conn.open_streams(), 0);
}

#[test]
fn a_post_body_and_its_trailers_surface_in_order() {
    let mut c = client();
    let mut fields = request("/up", "POST");
    fields.push(("content-length", "6"));
    let h = c.headers(3, &fields, false);
    c.send(&h);
    c.send(&data(3, b"abc", false));
    c.send(&data(3, b"def", false));
    let trailers = c.headers(3, &[("x-sum", "1")], true);
    c.send(&trailers);
    let events = c.events();
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(
        matches!(&events[0], Event::Request { stream: 3, head, end_stream: false }
        if head.content_length == Some(6))
    );
    assert_eq!(
        events[1],
        Event::Data {
            stream: 3,
            data: b"abc".to_vec(),
            end_stream: false
        }
    );
    assert_eq!(
        events[3],
        Event::Trailers {
            stream: 3,
            fields: vec![(b"x-sum".to_vec(), b"1".to_vec())]
        }
    );
    // Half-closed (remote) until the response ends.
    assert_eq!(c.conn.open_streams(), 1);
    c.conn.send_headers(3, 204, &[], true);
    assert_eq!(c.conn.open_streams(), 0);
}

#[test]
fn a_body_other_than_its_content_length_resets_the_stream() {
    for (body, end) in [(&b"abcd"[..], false), (&b"ab"[..], true)] {
        let mut c = client();
        let mut fields = request("/", "POST");
        fields.push(("content-length", "3"));
        let h = c.headers(1, &fields, false);
        c.send(&h);
        c.send(&data(1, body, end));
        assert_eq!(resets(&c.frames()), [(1, ErrorCode::ProtocolError)]);
        let events = c.events();
        assert_eq!(
            events.last(),
            Some(&Event::Reset {
                stream: 1,
                code: ErrorCode::ProtocolError
            })
        );
        assert_eq!(c.conn.open_streams(), 0);
    }
}

#[test]
fn malformed_requests_are_reset_and_never_surface() {
    let mut c = client();
    let bad = c.headers(1, &[(":method", "GET"), (":path", "/")], true);
    c.send(&bad);
    let upper = c.headers(3, &[(":method", "GET"), ("X-Up", "1")], true);
    c.send(&upper);
    assert_eq!(
        resets(&c.frames()),
        [(1, ErrorCode::ProtocolError), (3, ErrorCode::ProtocolError)]
    );
    assert!(c.events().is_empty());
    // The connection goes on.
    let get = c.get(5, "/");
    c.send(&get);
    assert_eq!(c.events().len(), 1);
}

#[test]
fn stream_id_rules() {
    // Even id, then an id going backwards: connection `PROTOCOL_ERROR`.
    let mut c = client();
    let even = c.get(2, "/");
    c.send(&even);
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::ProtocolError);

    let mut c = client();
    let (five, three) = (c.get(5, "/"), c.get(3, "/"));
    c.send(&five);
    c.send(&three);
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::ProtocolError);

    // A HEADERS on a stream closed normally: connection `STREAM_CLOSED`.
    let mut c = client();
    let get = c.get(1, "/");
    c.send(&get);
    c.conn.send_headers(1, 200, &[], true);
    c.frames();
    let again = c.get(1, "/");
    c.send(&again);
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::StreamClosed);
}

#[test]
fn frames_on_idle_streams_are_connection_errors() {
    for bytes in [
        data(1, b"x", true),
        rst(1, ErrorCode::Cancel),
        window_update(1, 10),
        frame(kind::CONTINUATION, flag::END_HEADERS, 1, &[0x82]),
    ] {
        let mut c = client();
        c.send(&bytes);
        assert_eq!(goaway(&c.frames()).code(), ErrorCode::ProtocolError);
        assert!(c.conn.is_finished());
    }
}

#[test]
fn half_closed_remote_refuses_data_and_headers_with_stream_closed() {
    let mut c = client();
    let get = c.get(1, "/");
    c.send(&get);
    c.send(&data(1, b"x", true));
    assert_eq!(resets(&c.frames()), [(1, ErrorCode::StreamClosed)]);
    let events = c.events();
    assert_eq!(
        events[1],
        Event::Reset {
            stream: 1,
            code: ErrorCode::StreamClosed
        }
    );

    let mut c = client();
    let get = c.get(1, "/");
    c.send(&get);
    let again = c.get(1, "/");
    c.send(&again);
    assert_eq!(resets(&c.frames()), [(1, ErrorCode::StreamClosed)]);
    assert!(!c.conn.is_finished());
}

#[test]
fn a_client_reset_surfaces_and_later_frames_get_stream_closed() {
    let mut c = client();
    let h = c.headers(1, &request("/", "POST"), false);
    c.send(&h);
    c.send(&rst(1, ErrorCode::Cancel));
    c.send(&window_update(1, 5));
    assert!(c.frames().is_empty());
    assert_eq!(
        c.events()[1],
        Event::Reset {
            stream: 1,
            code: ErrorCode::Cancel
        }
    );
    c.send(&data(1, b"late", true));
    assert_eq!(resets(&c.frames()), [(1, ErrorCode::StreamClosed)]);
}

#[test]
fn frames_on_a_stream_the_server_reset_are_ignored() {
    let mut c = client();
    let h = c.headers(1, &request("/", "POST"), false);
    c.send(&h);
    c.conn.reset(1, ErrorCode::Cancel);
    assert_eq!(resets(&c.frames()), [(1, ErrorCode::Cancel)]);
    c.send(&data(1, b"in flight", false));
    let trailers = c.headers(1, &[("x", "y")], true);
    c.send(&trailers);
    assert!(c.frames().is_empty());
    assert_eq!(c.events().len(), 1);
    assert!(!c.conn.is_finished());
}

#[test]
fn continuation_sequencing() {
    let mut c = client();
    let block = c.block(&request("/", "GET"));
    let (a, b) = block.split_at(3);
    c.send(&frame(kind::HEADERS, flag::END_STREAM, 1, a));
    c.send(&frame(kind::CONTINUATION, 0, 1, &b[..1]));
    assert!(c.events().is_empty());
    c.send(&frame(kind::CONTINUATION, flag::END_HEADERS, 1, &b[1..]));
    assert!(matches!(c.events()[..], [Event::Request { stream: 1, .. }]));

    // Anything but a CONTINUATION of the same stream in between.
    for between in [
        frame(kind::PRIORITY, 0, 1, &[0, 0, 0, 0, 1]),
        frame(kind::CONTINUATION, flag::END_HEADERS, 3, &[]),
        frame(0xfa, 0, 0, &[]),
    ] {
        let mut c = client();
        let block = c.block(&request("/", "GET"));
        c.send(&frame(kind::HEADERS, flag::END_STREAM, 1, &block));
        c.send(&between);
        assert_eq!(goaway(&c.frames()).code(), ErrorCode::ProtocolError);
    }
}

#[test]
fn hpack_errors_end_the_connection_with_compression_error() {
    let mut c = client();
    // Indexed field 0 is invalid (RFC 7541 section 6.1).
    c.send(&frame(kind::HEADERS, flag::END_HEADERS, 1, &[0x80]));
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::CompressionError);
}

#[test]
fn priority_is_ignored_but_self_dependency_is_a_stream_error() {
    let mut c = client();
    c.send(&frame(kind::PRIORITY, 0, 9, &[0, 0, 0, 1, 16]));
    assert!(c.frames().is_empty());
    c.send(&frame(kind::PRIORITY, 0, 11, &[0, 0, 0, 11, 16]));
    assert_eq!(resets(&c.frames()), [(11, ErrorCode::ProtocolError)]);
    let block = c.block(&request("/", "GET"));
    let mut payload = vec![0, 0, 0, 13, 16];
    payload.extend(&block);
    c.send(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM | flag::PRIORITY,
        13,
        &payload,
    ));
    assert_eq!(resets(&c.frames()), [(13, ErrorCode::ProtocolError)]);
    assert!(c.events().is_empty());
}

#[test]
fn streams_over_the_limit_are_refused() {
    let config = Config {
        max_concurrent_streams: 2,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    for id in [1, 3, 5] {
        let h = c.headers(id, &request("/", "POST"), false);
        c.send(&h);
    }
    assert_eq!(resets(&c.frames()), [(5, ErrorCode::RefusedStream)]);
    assert_eq!(c.events().len(), 2);
    assert_eq!(c.conn.open_streams(), 2);
}

#[test]
fn oversized_frames_are_refused_from_their_header() {
    let mut c = client();
    // Only the header of a 16385-byte frame: refused before its payload.
    c.send(&[0, 0x40, 0x01, 0, 0, 0, 0, 0, 1]);
    assert_eq!(goaway(&c.frames()).code(), ErrorCode::FrameSizeError);
}

#[test]
fn goaway_both_ways() {
    let mut c = client();
    let get = c.get(1, "/");
    c.send(&get);
    c.conn.go_away(ErrorCode::NoError);
    let out = c.frames();
    assert_eq!(goaway(&out).u32_at(0), 1);
    // A new stream after GOAWAY is ignored; stream 1 finishes.
    let late = c.get(3, "/");
    c.send(&late);
    assert_eq!(c.events().len(), 1);
    assert!(!c.conn.is_finished());
    c.conn.send_headers(1, 200, &[], true);
    assert!(c.conn.is_finished());

    let mut c = client();
    c.send(&frame(kind::GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 0x63]));
    assert_eq!(
        c.events(),
        [Event::GoAway {
            last_stream: 0,
            code: ErrorCode::Unknown(0x63)
        }]
    );
    assert!(c.conn.is_finished());
}

#[test]
fn a_connection_error_resets_every_stream_for_the_shell() {
    let mut c = client();
    for id in [1, 3] {
        let h = c.headers(id, &request("/", "POST"), false);
        c.send(&h);
    }
    c.events();
    c.send(&frame(kind::PING, 0, 1, &[0; 8]));
    assert_eq!(goaway(&c.frames()).u32_at(0), 3);
    let reset = |stream| Event::Reset {
        stream,
        code: ErrorCode::ProtocolError,
    };
    assert_eq!(c.events(), [reset(1), reset(3)]);
    assert!(c.conn.is_finished());
    // Input after that is ignored.
    let get = c.get(5, "/");
    c.send(&get);
    assert!(c.frames().is_empty() && c.events().is_empty());
}

#[test]
fn headers_too_large_surface_for_a_431_and_the_body_is_dropped() {
    let config = Config {
        max_header_list_size: 200,
        ..Config::default()
    };
    let mut c = Client::new(&config);
    let mut fields = request("/", "POST");
    let big = "v".repeat(150);
    fields.push(("x-big", &big));
    let h = c.headers(1, &fields, false);
    c.send(&h);
    assert_eq!(c.events(), [Event::HeadersTooLarge { stream: 1 }]);
    c.send(&data(1, b"body", false));
    assert!(c.events().is_empty());
    c.conn.send_headers(1, 431, &[], true);
    let out = c.frames();
    assert_eq!(out[0].kind, kind::HEADERS);
    assert_eq!(resets(&out), [(1, ErrorCode::NoError)]);
    assert_eq!(c.conn.open_streams(), 0);
}

#[test]
fn upgraded_connections_start_with_stream_one_half_closed() {
    // HTTP2-Settings: `INITIAL_WINDOW_SIZE` = 10.
    let mut conn = Connection::upgraded(&Config::default(), &[0, 4, 0, 0, 0, 10]).unwrap();
    assert_eq!(conn.open_streams(), 1);
    conn.send_headers(1, 200, &[], false);
    conn.send_data(1, b"0123456789abc", true);
    assert_eq!(conn.buffered(1), 3);
    assert!(Connection::upgraded(&Config::default(), &[0, 4, 0]).is_err());
    assert!(Connection::upgraded(&Config::default(), &[0, 2, 0, 0, 0, 2]).is_err());
}

#[test]
fn unknown_frames_and_flags_are_ignored() {
    let mut c = client();
    c.send(&frame(0xfa, 0xff, 0, b"whatever"));
    c.send(&frame(kind::PING, 0xfe, 0, &[0; 8]));
    let out = c.frames();
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].kind, out[0].flags), (kind::PING, flag::ACK));
}

#[test]
fn informational_responses_and_trailers_go_out() {
    let mut c = client();
    let get = c.get(1, "/");
    c.send(&get);
    c.conn.send_informational(1, 103, &[(b"link", b"</a>")]);
    c.conn.send_headers(1, 200, &[], false);
    c.conn.send_data(1, b"x", false);
    c.conn.send_trailers(1, &[(b"grpc-status", b"0")]);
    let out = c.frames();
    let kinds: Vec<(u8, u8)> = out.iter().map(|f| (f.kind, f.flags)).collect();
    assert_eq!(
        kinds,
        [
            (kind::HEADERS, flag::END_HEADERS),
            (kind::HEADERS, flag::END_HEADERS),
            (kind::DATA, 0),
            (kind::HEADERS, flag::END_HEADERS | flag::END_STREAM)
        ]
    );
    assert_eq!(c.decode(&out[0].payload)[0].1, "103");
    assert_eq!(
        c.decode(&out[3].payload),
        [("grpc-status".into(), "0".into())]
    );
    assert_eq!(c.conn.open_streams(), 0);
}

#[test]
fn a_discarded_body_is_reset_only_after_the_whole_answer_is_out() {
    // The client's window is 10 bytes; the app answers 13 and will not read the body.
    let mut c = Client::new(&Config::default());
    c.send(&settings(&[(4, 10)]));
    let h = c.headers(1, &request("/", "POST"), false);
    c.send(&h);
    c.frames();
    c.events();
    c.conn.send_headers(1, 200, &[], false);
    c.conn.send_data(1, b"0123456789abc", true);
    c.conn.discard_body(1);
    let out = c.frames();
    assert!(resets(&out).is_empty(), "reset before the answer was out");
    assert_eq!(c.conn.buffered(1), 3);
    // DATA the client still sends is dropped, not handed out.
    c.send(&data(1, b"body", false));
    assert!(c.events().is_empty());
    c.send(&window_update(1, 100));
    let out = c.frames();
    let last = out.iter().rfind(|f| f.kind == kind::DATA).unwrap();
    assert_eq!(
        (last.payload.as_slice(), last.flags & flag::END_STREAM),
        (&b"abc"[..], flag::END_STREAM)
    );
    assert_eq!(resets(&out), [(1, ErrorCode::NoError)]);
    assert_eq!(c.conn.open_streams(), 0);
}
