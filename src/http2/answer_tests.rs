use super::*;

/// What the pieces said, owned: (kind, status, fields, bytes, end).
#[derive(Debug, Default, PartialEq, Eq)]
struct Seen {
    informational: Vec<u16>,
    status: Option<u16>,
    fields: Vec<(String, String)>,
    head_end: bool,
    body: Vec<u8>,
    ended: bool,
    trailers: Vec<(String, String)>,
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

fn read_split(answer: &[u8], head_request: bool, split: usize) -> Result<Seen, Malformed> {
    let mut seen = Seen::default();
    let mut reader = Answer::new(head_request);
    let mut emit = |piece: Piece<'_>| match piece {
        Piece::Informational { status, .. } => seen.informational.push(status),
        Piece::Head {
            status,
            fields,
            end,
        } => {
            seen.status = Some(status);
            seen.fields = fields.iter().map(|(n, v)| (text(n), text(v))).collect();
            seen.head_end = end;
            seen.ended |= end;
        }
        Piece::Data { bytes, end } => {
            assert!(!seen.ended, "data after the end");
            seen.body.extend_from_slice(bytes);
            seen.ended |= end;
        }
        Piece::Trailers { fields } => {
            seen.trailers = fields.iter().map(|(n, v)| (text(n), text(v))).collect();
            seen.ended = true;
        }
    };
    let (a, b) = answer.split_at(split.min(answer.len()));
    reader.feed(a, &mut emit)?;
    reader.feed(b, &mut emit)?;
    Ok(seen)
}

/// Every split of `answer` in two reads the same.
fn read(answer: &[u8], head_request: bool) -> Seen {
    let whole = read_split(answer, head_request, answer.len()).unwrap();
    for split in 0..answer.len() {
        assert_eq!(
            read_split(answer, head_request, split).unwrap(),
            whole,
            "split at {split}"
        );
    }
    whole
}

#[test]
fn a_sized_answer_is_a_head_and_its_body_ending_the_stream() {
    let seen = read(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: keep-alive\r\nX-A:  b \r\n\r\nhello",
        false,
    );
    assert_eq!(seen.status, Some(200));
    assert_eq!(
        seen.fields,
        [
            ("content-type", "text/plain"),
            ("content-length", "5"),
            ("x-a", "b")
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
    );
    assert_eq!(seen.body, b"hello");
    assert!(seen.ended && !seen.head_end);
}

#[test]
fn an_empty_answer_ends_with_its_head() {
    for (answer, head_request) in [
        (&b"HTTP/1.1 204 No Content\r\n\r\n"[..], false),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", false),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n", true),
        (b"HTTP/1.1 304 Not Modified\r\netag: x\r\n\r\n", false),
    ] {
        let seen = read(answer, head_request);
        assert!(seen.head_end, "{}", text(answer));
    }
}

#[test]
fn a_chunked_answer_is_unchunked_and_its_trailers_kept() {
    let seen = read(
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n1;x=y\r\n!\r\n0\r\n\r\n",
        false,
    );
    assert_eq!(seen.body, b"hello!");
    assert!(seen.ended && seen.trailers.is_empty());
    assert!(seen.fields.is_empty());
    let seen = read(
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nGrpc-Status: 0\r\nx: y\r\n\r\n",
        false,
    );
    assert_eq!(seen.body, b"ok");
    assert_eq!(
        seen.trailers,
        [("grpc-status", "0"), ("x", "y")].map(|(n, v)| (n.to_owned(), v.to_owned()))
    );
}

#[test]
fn informational_answers_come_before_the_answer() {
    let seen = read(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok",
        false,
    );
    assert_eq!(seen.informational, [100]);
    assert_eq!(seen.status, Some(201));
    assert_eq!(seen.body, b"ok");
}

#[test]
fn a_101_is_a_200_and_then_a_tunnel() {
    let mut reader = Answer::new(false);
    let mut pieces = Vec::new();
    reader
        .feed(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: abc\r\nSec-WebSocket-Protocol: chat\r\n\r\n\x81\x02hi",
            &mut |p| match p {
                Piece::Head { status, fields, end } => {
                    let names: Vec<String> = fields.iter().map(|(n, _)| text(n)).collect();
                    pieces.push(format!("{status} {} {end}", names.join(",")));
                }
                Piece::Data { bytes, end } => pieces.push(format!("{bytes:?} {end}")),
                other => panic!("{other:?}"),
            },
        )
        .unwrap();
    assert_eq!(
        pieces,
        [
            "200 sec-websocket-protocol false",
            "[129, 2, 104, 105] false"
        ]
    );
    assert_eq!(
        reader.closed(),
        Some(Piece::Data {
            bytes: &[],
            end: true
        })
    );
}

#[test]
fn an_answer_without_length_ends_when_the_connection_closes() {
    let mut reader = Answer::new(false);
    let mut body = Vec::new();
    reader
        .feed(b"HTTP/1.1 200 OK\r\n\r\nsome", &mut |p| {
            if let Piece::Data { bytes, .. } = p {
                body.extend_from_slice(bytes);
            }
        })
        .unwrap();
    assert_eq!(body, b"some");
    assert!(!reader.is_done());
    assert!(reader.closed().is_some());
    assert!(reader.is_done());
}

#[test]
fn a_cut_answer_is_not_ended_by_the_close() {
    let mut reader = Answer::new(false);
    reader
        .feed(
            b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nabc",
            &mut |_| {},
        )
        .unwrap();
    assert!(reader.started());
    assert_eq!(reader.closed(), None);
}

#[test]
fn what_veter_never_writes_is_malformed() {
    for answer in [
        &b"HTTP/2 200\r\n\r\n"[..],
        b"HTTP/1.1 2x0 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nab",
        b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nab",
    ] {
        assert!(
            read_split(answer, false, answer.len()).is_err(),
            "{}",
            text(answer)
        );
    }
}

/// A content-length is read as `str::parse::<u64>` reads it, without the UTF-8
/// check `number` leaves out.
#[test]
fn a_content_length_reads_as_a_parsed_number() {
    let max = u64::MAX.to_string();
    let over = "18446744073709551616";
    for value in [
        "0",
        "13",
        "+7",
        "0013",
        "",
        "+",
        "-1",
        "1 ",
        " 1",
        "1a",
        "++1",
        "\u{e9}",
        &max,
        over,
        "00000000000000000000000042",
    ] {
        let want = value.parse::<u64>().ok();
        assert_eq!(number(value.as_bytes()).ok(), want, "{value:?}");
    }
    assert!(number(b"1\xff").is_err());
}

mod records {
    use super::*;
    use crate::http1::encode::{encode_response, Common, DateLine, Framing, Parts};
    use crate::http1::parse::Version;

    const DATE: &DateLine = b"Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n";

    fn common(id: &'static [u8]) -> Common<'static> {
        Common {
            server_line: b"Server: veter\r\n",
            date_line: DATE,
            request_id: id,
            request_id_prefix: b"X-Request-ID: ",
            ok_head: b"",
            request_id_name: "X-Request-ID",
        }
    }

    fn framing(head: bool, h2: bool) -> Framing {
        Framing {
            version: if h2 { Version::Http2 } else { Version::Http11 },
            keep_alive: true,
            head,
            upgrade: false,
        }
    }

    /// The answer `parts` makes, read from its record and from its HTTP/1.1 text.
    fn both(parts: &Parts<'_>, head: bool, common: Common<'_>) -> (Vec<u8>, Seen, Seen) {
        let mut record = Vec::new();
        let sent = encode_response(&mut record, parts, framing(head, true), common);
        let mut text = Vec::new();
        let sent_text = encode_response(&mut text, parts, framing(head, false), common);
        assert_eq!(sent, sent_text);
        assert_ne!(record, text);
        let from_record = read_split(&record, head, record.len()).unwrap();
        (record, from_record, read(&text, head))
    }

    #[test]
    fn a_record_reads_as_the_http1_text_of_the_same_answer() {
        let headers = [
            ("X-Custom".to_owned(), "a value".to_owned()),
            ("set-cookie".to_owned(), "a=1".to_owned()),
            ("Connection".to_owned(), "close".to_owned()),
        ];
        let cases: [(Parts<'_>, bool, &'static [u8]); 6] = [
            (
                Parts {
                    status: 200,
                    content_type: Some("text/plain; charset=utf-8"),
                    headers: &[],
                    body: b"Hello, World!",
                },
                false,
                b"0123456789abcdef0000000000000001",
            ),
            (
                Parts {
                    status: 201,
                    content_type: None,
                    headers: &headers,
                    body: b"",
                },
                false,
                b"",
            ),
            (
                Parts {
                    status: 200,
                    content_type: Some("application/json"),
                    headers: &[],
                    body: b"{}",
                },
                true,
                b"",
            ),
            (
                Parts {
                    status: 204,
                    content_type: Some("text/plain"),
                    headers: &headers,
                    body: b"ignored",
                },
                false,
                b"",
            ),
            (
                Parts {
                    status: 304,
                    content_type: Some("text/plain"),
                    headers: &[],
                    body: b"ignored",
                },
                false,
                b"",
            ),
            (
                Parts {
                    status: 599,
                    content_type: None,
                    headers: &[("Server".to_owned(), "mine".to_owned())],
                    body: b"x",
                },
                false,
                b"given",
            ),
        ];
        for (parts, head, id) in &cases {
            let (record, from_record, from_text) = both(parts, *head, common(id));
            assert_eq!(from_record, from_text, "{record:?}");
            assert!(from_record.ended);
        }
    }

    #[test]
    fn a_hosted_apps_head_reads_the_same_from_its_record_and_its_text() {
        use crate::http1::encode::{encode_head, BodyLength};
        use crate::http1::record;
        type Fields = Vec<(Vec<u8>, Vec<u8>)>;
        /// Status, fields, length, body, whether the request was HEAD, request id.
        type Case<'a> = (u16, &'a Fields, BodyLength, &'a [u8], bool, &'static [u8]);
        let fields = |pairs: &[(&str, &str)]| -> Fields {
            pairs
                .iter()
                .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect()
        };
        let plain = fields(&[("content-type", "text/plain")]);
        // Values with whitespace around them (ASGI allows it): HTTP/2 sends them trimmed.
        let spaced = fields(&[("X-Spaced", " \tpadded value\t "), ("set-cookie", "a=1")]);
        let own = fields(&[
            ("server", "app"),
            ("date", "then"),
            ("x-request-id", "mine"),
        ]);
        let cases: [Case<'_>; 7] = [
            (
                200,
                &plain,
                BodyLength::Known(13),
                b"Hello, World!",
                false,
                b"0123",
            ),
            (201, &spaced, BodyLength::Known(0), b"", false, b""),
            (200, &plain, BodyLength::Known(5), b"", true, b"id"),
            (204, &spaced, BodyLength::Absent, b"", false, b""),
            (304, &plain, BodyLength::Absent, b"", false, b"id"),
            (599, &own, BodyLength::Known(1), b"x", false, b"given"),
            (200, &Vec::new(), BodyLength::Known(2), b"ok", false, b""),
        ];
        for (status, headers, length, body, head, id) in cases {
            let common = common(id);
            assert!(record::fits_head(headers, None, &common));
            let known = match length {
                BodyLength::Known(n) => Some(n),
                _ => None,
            };
            let mut from_record = Vec::new();
            record::write_head(&mut from_record, status, None, headers, known, common);
            from_record.extend_from_slice(body);
            let mut from_text = Vec::new();
            encode_head(
                &mut from_text,
                status,
                None,
                headers,
                length,
                framing(head, false),
                common,
            );
            from_text.extend_from_slice(body);
            let seen = read_split(&from_record, head, from_record.len()).unwrap();
            assert_eq!(seen, read(&from_text, head), "{from_record:?}");
            assert!(seen.ended);
            let spaced_value = seen.fields.iter().find(|(n, _)| n == "x-spaced");
            assert!(spaced_value.map_or(true, |(_, v)| v == "padded value"));
        }
    }

    #[test]
    fn a_record_with_fields_too_long_for_it_is_written_as_text() {
        let long_name = [("x".repeat(128), "v".to_owned())];
        let long_value = [("x".to_owned(), "v".repeat(65_536))];
        for headers in [&long_name[..], &long_value[..]] {
            let parts = Parts {
                status: 200,
                content_type: None,
                headers,
                body: b"ok",
            };
            let mut out = Vec::new();
            encode_response(&mut out, &parts, framing(false, true), common(b""));
            assert!(out.starts_with(b"HTTP/1.1 200 OK\r\n"));
            assert_eq!(read(&out, false).status, Some(200));
        }
    }

    #[test]
    fn a_record_cut_short_or_with_an_unknown_tag_is_malformed() {
        let parts = Parts {
            status: 200,
            content_type: Some("text/plain"),
            headers: &[("X-A".to_owned(), "b".to_owned())],
            body: b"body",
        };
        let mut record = Vec::new();
        encode_response(&mut record, &parts, framing(false, true), common(b""));
        let fields_end = record.len() - parts.body.len();
        for cut in 1..fields_end {
            assert!(
                read_split(&record[..cut], false, cut).is_err(),
                "cut at {cut}"
            );
        }
        let mut unknown = record.clone();
        assert_eq!(unknown[3], 0x80, "the Server field comes first");
        unknown[3] = 0x8f;
        assert!(read_split(&unknown, false, unknown.len()).is_err());
        let mut status = record;
        status[1..3].copy_from_slice(&42u16.to_be_bytes());
        assert!(read_split(&status, false, status.len()).is_err());
    }
}
