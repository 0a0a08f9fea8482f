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
