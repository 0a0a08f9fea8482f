//! Frame reading and writing, byte by byte (RFC 9113 section 6).

use super::error::{ErrorCode, H2Error};
use super::frame::*;

fn parse_bytes(bytes: &[u8]) -> Result<Frame<'_>, H2Error> {
    let head = Head::parse(bytes).expect("a whole header");
    parse(head, &bytes[HEADER_LEN..HEADER_LEN + head.len as usize])
}

const CONN_PROTOCOL: H2Error = H2Error::Connection(ErrorCode::ProtocolError);
const CONN_SIZE: H2Error = H2Error::Connection(ErrorCode::FrameSizeError);

#[test]
fn head_reads_length_type_flags_and_drops_the_reserved_bit() {
    let head = Head::parse(&[0x01, 0x02, 0x03, 0x09, 0x05, 0x80, 0, 0, 0x07]).unwrap();
    assert_eq!(
        head,
        Head {
            len: 0x0001_0203,
            kind: kind::CONTINUATION,
            flags: 0x05,
            stream: 7
        }
    );
    assert_eq!(Head::parse(&[0; 8]), None);
}

#[test]
#[allow(clippy::too_many_lines)] // one table row per frame type
fn each_frame_type_reads_from_its_bytes() {
    let table: &[(&[u8], Frame<'_>)] = &[
        (
            &[0, 0, 3, 0, 1, 0, 0, 0, 1, b'a', b'b', b'c'],
            Frame::Data {
                stream: 1,
                data: b"abc",
                end_stream: true,
                flow_len: 3,
            },
        ),
        // Padded DATA: pad length 2, flow control counts all 6 bytes.
        (
            &[0, 0, 6, 0, 0x08, 0, 0, 0, 3, 2, b'h', b'i', b'!', 0, 0],
            Frame::Data {
                stream: 3,
                data: b"hi!",
                end_stream: false,
                flow_len: 6,
            },
        ),
        (
            &[0, 0, 2, 1, 0x05, 0, 0, 0, 1, 0x82, 0x84],
            Frame::Headers {
                stream: 1,
                block: &[0x82, 0x84],
                end_stream: true,
                end_headers: true,
                priority: None,
            },
        ),
        // HEADERS with PADDED and PRIORITY: pad 1, exclusive dependency on 3, weight 15.
        (
            &[
                0, 0, 9, 1, 0x2c, 0, 0, 0, 5, 1, 0x80, 0, 0, 3, 15, 0x82, 0x84, 0,
            ],
            Frame::Headers {
                stream: 5,
                block: &[0x82, 0x84],
                end_stream: false,
                end_headers: true,
                priority: Some(Priority {
                    dependency: 3,
                    exclusive: true,
                    weight: 15,
                }),
            },
        ),
        (
            &[0, 0, 5, 2, 0, 0, 0, 0, 3, 0, 0, 0, 1, 200],
            Frame::Priority {
                stream: 3,
                priority: Priority {
                    dependency: 1,
                    exclusive: false,
                    weight: 200,
                },
            },
        ),
        (
            &[0, 0, 4, 3, 0, 0, 0, 0, 1, 0, 0, 0, 8],
            Frame::RstStream {
                stream: 1,
                code: ErrorCode::Cancel,
            },
        ),
        (
            &[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 10],
            Frame::Settings {
                ack: false,
                payload: &[0, 4, 0, 0, 0, 10],
            },
        ),
        (
            &[0, 0, 0, 4, 1, 0, 0, 0, 0],
            Frame::Settings {
                ack: true,
                payload: &[],
            },
        ),
        (
            &[0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
            Frame::Ping {
                ack: false,
                data: [1, 2, 3, 4, 5, 6, 7, 8],
            },
        ),
        (
            &[
                0, 0, 10, 7, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0x63, b'h', b'i',
            ],
            Frame::GoAway {
                last_stream: 9,
                code: ErrorCode::Unknown(0x63),
                debug: b"hi",
            },
        ),
        (
            &[0, 0, 4, 8, 0, 0, 0, 0, 0, 0x80, 0, 0x10, 0],
            Frame::WindowUpdate {
                stream: 0,
                increment: 0x1000,
            },
        ),
        (
            &[0, 0, 1, 9, 0x04, 0, 0, 0, 1, 0x82],
            Frame::Continuation {
                stream: 1,
                block: &[0x82],
                end_headers: true,
            },
        ),
        (&[0, 0, 1, 0xfa, 0xff, 0, 0, 0, 1, 0], Frame::Unknown),
    ];
    for (bytes, expected) in table {
        assert_eq!(parse_bytes(bytes), Ok(*expected), "{bytes:?}");
    }
}

#[test]
fn malformed_frames_are_errors_of_the_reach_the_rfc_gives() {
    let stream_size = |id| H2Error::Stream(id, ErrorCode::FrameSizeError);
    let table: &[(&[u8], H2Error)] = &[
        // Stream-bound types on stream 0.
        (&[0, 0, 1, 0, 0, 0, 0, 0, 0, 0], CONN_PROTOCOL),
        (&[0, 0, 1, 1, 4, 0, 0, 0, 0, 0x82], CONN_PROTOCOL),
        (&[0, 0, 5, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1], CONN_PROTOCOL),
        (&[0, 0, 4, 3, 0, 0, 0, 0, 0, 0, 0, 0, 8], CONN_PROTOCOL),
        (&[0, 0, 1, 9, 4, 0, 0, 0, 0, 0x82], CONN_PROTOCOL),
        // Connection-bound types on a stream.
        (&[0, 0, 0, 4, 0, 0, 0, 0, 1], CONN_PROTOCOL),
        (
            &[0, 0, 8, 6, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
            CONN_PROTOCOL,
        ),
        (
            &[0, 0, 8, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
            CONN_PROTOCOL,
        ),
        // Padding as long as the payload.
        (&[0, 0, 3, 0, 8, 0, 0, 0, 1, 3, 0, 0], CONN_PROTOCOL),
        (&[0, 0, 3, 1, 0x0c, 0, 0, 0, 1, 3, 0, 0], CONN_PROTOCOL),
        (&[0, 0, 0, 0, 8, 0, 0, 0, 1], CONN_SIZE),
        // Fixed lengths.
        (&[0, 0, 4, 2, 0, 0, 0, 0, 1, 0, 0, 0, 3], stream_size(1)),
        (&[0, 0, 3, 3, 0, 0, 0, 0, 1, 0, 0, 8], CONN_SIZE),
        (&[0, 0, 5, 4, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0], CONN_SIZE),
        (&[0, 0, 6, 4, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1], CONN_SIZE),
        (&[0, 0, 7, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7], CONN_SIZE),
        (&[0, 0, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0], CONN_SIZE),
        (&[0, 0, 3, 8, 0, 0, 0, 0, 1, 0, 0, 1], CONN_SIZE),
        (&[0, 0, 2, 1, 0x24, 0, 0, 0, 1, 0, 0], CONN_SIZE),
        // A client cannot push.
        (&[0, 0, 4, 5, 4, 0, 0, 0, 1, 0, 0, 0, 2], CONN_PROTOCOL),
    ];
    for (bytes, expected) in table {
        assert_eq!(parse_bytes(bytes), Err(*expected), "{bytes:?}");
    }
}

#[test]
fn control_frames_are_written_byte_for_byte() {
    let mut out = Vec::new();
    write_settings(&mut out, &[(3, 100), (4, 0x0004_0000)]);
    write_settings_ack(&mut out);
    write_ping_ack(&mut out, *b"12345678");
    write_rst_stream(&mut out, 5, ErrorCode::RefusedStream);
    write_goaway(&mut out, 7, ErrorCode::EnhanceYourCalm);
    write_window_update(&mut out, 0, 0x7fff_0000);
    #[rustfmt::skip]
    let expected: &[u8] = &[
        0, 0, 12, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100, 0, 4, 0, 4, 0, 0,
        0, 0, 0, 4, 1, 0, 0, 0, 0,
        0, 0, 8, 6, 1, 0, 0, 0, 0, b'1', b'2', b'3', b'4', b'5', b'6', b'7', b'8',
        0, 0, 4, 3, 0, 0, 0, 0, 5, 0, 0, 0, 7,
        0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0x0b,
        0, 0, 4, 8, 0, 0, 0, 0, 0, 0x7f, 0xff, 0, 0,
    ];
    assert_eq!(out, expected);
}

#[test]
fn data_and_header_blocks_are_framed_within_the_frame_size() {
    let mut out = Vec::new();
    write_data(&mut out, 3, b"xy", true);
    assert_eq!(out, [0, 0, 2, 0, 1, 0, 0, 0, 3, b'x', b'y']);

    out.clear();
    write_header_block(&mut out, 1, b"abc", true, 16_384);
    assert_eq!(out, [0, 0, 3, 1, 5, 0, 0, 0, 1, b'a', b'b', b'c']);

    // Split: HEADERS (no `END_HEADERS`) then CONTINUATIONs, the last with it.
    out.clear();
    write_header_block(&mut out, 1, b"abcde", false, 2);
    #[rustfmt::skip]
    let expected: &[u8] = &[
        0, 0, 2, 1, 0, 0, 0, 0, 1, b'a', b'b',
        0, 0, 2, 9, 0, 0, 0, 0, 1, b'c', b'd',
        0, 0, 1, 9, 4, 0, 0, 0, 1, b'e',
    ];
    assert_eq!(out, expected);
}

#[test]
fn written_frames_read_back() {
    let mut out = Vec::new();
    write_rst_stream(&mut out, 9, ErrorCode::Unknown(0xabc));
    assert_eq!(
        parse_bytes(&out),
        Ok(Frame::RstStream {
            stream: 9,
            code: ErrorCode::Unknown(0xabc)
        })
    );
    for code in 0..0x10 {
        assert_eq!(ErrorCode::from_u32(code).to_u32(), code);
    }
}
