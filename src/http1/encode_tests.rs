//! The encoder's tests (`encode.rs`).

use super::*;

const DATE: &DateLine = b"Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n";
const VETER: Common<'static> = Common {
    server_line: b"Server: veter\r\n",
    date_line: DATE,
    request_id: b"",
    request_id_prefix: b"X-Request-ID: ",
    ok_head: b"",
    request_id_name: "X-Request-ID",
};
const NO_SERVER: Common<'static> = Common {
    server_line: b"",
    date_line: DATE,
    request_id: b"",
    request_id_prefix: b"X-Request-ID: ",
    ok_head: b"",
    request_id_name: "X-Request-ID",
};
const KEEP: Framing = Framing {
    version: Version::Http11,
    keep_alive: true,
    head: false,
    upgrade: false,
};

fn encode(parts: &Parts<'_>, framing: Framing, common: Common<'_>) -> String {
    let mut out = Vec::new();
    encode_response(&mut out, parts, framing, common);
    String::from_utf8(out).unwrap()
}

fn parts<'a>(status: u16, headers: &'a [(String, String)], body: &'a [u8]) -> Parts<'a> {
    Parts {
        status,
        content_type: None,
        headers,
        body,
    }
}

#[test]
fn plain_response() {
    let headers = [("X-A".to_owned(), "1".to_owned())];
    let p = Parts {
        content_type: Some("text/plain"),
        ..parts(200, &headers, b"hi")
    };
    assert_eq!(
        encode(&p, KEEP, VETER),
        "HTTP/1.1 200 OK\r\nServer: veter\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nX-A: 1\r\n\r\nhi"
    );
}

#[test]
fn head_keeps_length_drops_body() {
    let framing = Framing { head: true, ..KEEP };
    assert_eq!(
        encode(&parts(200, &[], b"hello"), framing, NO_SERVER),
        "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 5\r\n\r\n"
    );
}

#[test]
fn no_body_statuses() {
    for status in [100_u16, 204, 304] {
        let text = encode(&parts(status, &[], b"ignored"), KEEP, NO_SERVER);
        assert!(!text.contains("Content-Length"), "{text}");
        assert!(text.ends_with("\r\n\r\n"), "{text}");
    }
}

#[test]
fn close_and_http10_keep_alive() {
    let closing = Framing {
        keep_alive: false,
        ..KEEP
    };
    let p = parts(404, &[], b"");
    assert!(encode(&p, closing, VETER).ends_with("Connection: close\r\n\r\n"));
    let old = Framing {
        version: Version::Http10,
        ..KEEP
    };
    assert!(encode(&p, old, VETER).ends_with("Connection: keep-alive\r\n\r\n"));
    assert!(encode(&p, KEEP, VETER).starts_with("HTTP/1.1 404 Not Found\r\n"));
}

#[test]
fn unknown_status_has_empty_reason() {
    assert!(encode(&parts(299, &[], b""), KEEP, NO_SERVER).starts_with("HTTP/1.1 299 \r\n"));
    assert_eq!(reason(299), "");
    assert_eq!(reason(503), "Service Unavailable");
}

#[test]
fn handler_server_and_date_replace_ours() {
    let headers = [
        ("server".to_owned(), "mine".to_owned()),
        ("Date".to_owned(), "then".to_owned()),
    ];
    let text = encode(&parts(200, &headers, b""), KEEP, VETER);
    assert!(!text.contains("veter") && !text.contains("1994"), "{text}");
    assert!(text.contains("server: mine\r\n") && text.contains("Date: then\r\n"));
}

#[test]
fn request_id_line_unless_the_handler_set_one() {
    let common = VETER.with_request_id(b"r1");
    let mut out = Vec::new();
    let sent = encode_response(&mut out, &parts(200, &[], b"hi"), KEEP, common);
    assert_eq!(
        sent,
        Sent {
            status: 200,
            body_bytes: 2
        }
    );
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("X-Request-ID: r1\r\n"));
    let own = [("x-request-id".to_owned(), "mine".to_owned())];
    let text = encode(&parts(200, &own, b""), KEEP, common);
    assert!(
        !text.contains("r1") && text.contains("x-request-id: mine\r\n"),
        "{text}"
    );
    let head = Framing { head: true, ..KEEP };
    let sent = encode_response(&mut Vec::new(), &parts(200, &[], b"hi"), head, common);
    assert_eq!(sent.body_bytes, 0);
}

#[test]
fn encode_ok_writes_what_encode_response_writes() {
    let kinds = [
        (&OK_TEXT, "text/plain; charset=utf-8"),
        (&OK_JSON, "application/json"),
        (&OK_BYTES, "application/octet-stream"),
    ];
    for (kind, content_type) in kinds {
        for keep_alive in [true, false] {
            for version in [Version::Http11, Version::Http10, Version::Http2] {
                for head in [true, false] {
                    let lines = ok_head(VETER.server_line, DATE, b"X-Request-ID: ");
                    let kept = Common {
                        ok_head: &lines,
                        ..VETER
                    };
                    for common in [
                        VETER,
                        NO_SERVER,
                        VETER.with_request_id(b"r1"),
                        kept,
                        kept.with_request_id(b"r1"),
                        // A generated id's length (a copy of its own in `encode_ok`).
                        kept.with_request_id(b"0123456789abcdef0123456789abcdef"),
                    ] {
                        let framing = Framing {
                            version,
                            keep_alive,
                            head,
                            upgrade: false,
                        };
                        let parts = Parts {
                            status: 200,
                            content_type: Some(content_type),
                            headers: &[],
                            body: b"Hello",
                        };
                        let (mut a, mut b) = (Vec::new(), Vec::new());
                        let sent_a = encode_response(&mut a, &parts, framing, common);
                        let sent_b = encode_ok(&mut b, kind, b"Hello", framing, common);
                        assert_eq!(String::from_utf8(a), String::from_utf8(b));
                        assert_eq!(sent_a, sent_b);
                    }
                }
            }
        }
    }
}

#[test]
fn encode_ok_with_writes_what_encode_ok_writes() {
    // Bodies whose length has one, two (the width written ahead), three and four
    // digits, behind what the output already holds (an answer before).
    let text: Vec<u8> = (0..1200u32)
        .map(|i| b'a' + u8::try_from(i % 26).unwrap())
        .collect();
    let lines = ok_head(VETER.server_line, DATE, b"X-Request-ID: ");
    let kept = Common {
        ok_head: &lines,
        ..VETER
    };
    for len in (0..=120).chain([999, 1000, 1200]) {
        let body = &text[..len];
        for keep_alive in [true, false] {
            for version in [Version::Http11, Version::Http10] {
                for head in [true, false] {
                    for common in [VETER, kept.with_request_id(b"r1")] {
                        let framing = Framing {
                            version,
                            keep_alive,
                            head,
                            upgrade: false,
                        };
                        let (mut a, mut b) = (b"before".to_vec(), b"before".to_vec());
                        let sent_a = encode_ok(&mut a, &OK_JSON, body, framing, common);
                        let sent_b = encode_ok_with(&mut b, &OK_JSON, framing, common, |out| {
                            out.extend_from_slice(body);
                            Ok::<(), ()>(())
                        });
                        assert_eq!(String::from_utf8(a), String::from_utf8(b), "{len}");
                        assert_eq!(Ok(sent_a), sent_b);
                    }
                }
            }
        }
    }
}

#[test]
fn encode_ok_with_leaves_the_output_as_it_was_when_the_body_fails() {
    let mut out = b"before".to_vec();
    let failed = encode_ok_with(&mut out, &OK_JSON, KEEP, VETER, |out| {
        out.extend_from_slice(b"{\"partial\":");
        Err("refused")
    });
    assert_eq!(failed, Err("refused"));
    assert_eq!(out, b"before");
}

#[test]
fn date_line_is_imf_fixdate() {
    let line = date_line();
    assert!(line.starts_with(b"Date: ") && line.ends_with(b" GMT\r\n"));
}

#[test]
fn error_response_closes() {
    let mut out = Vec::new();
    encode_error(&mut out, 400, "bad", NO_SERVER);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"));
    assert!(text.contains("Connection: close\r\n"));
    assert!(text.ends_with("\r\n\r\nbad"));
}

#[test]
fn encode_ok_writes_every_length_as_encode_response_does() {
    // Lengths under 100 are written digit by digit, the rest by `itoa`
    // (`put_length`): the edges of each way, and a few beyond.
    let body = vec![b'x'; 100_001];
    let framing = Framing {
        version: Version::Http11,
        keep_alive: true,
        head: false,
        upgrade: false,
    };
    for len in [
        0, 1, 9, 10, 11, 42, 99, 100, 101, 255, 256, 999, 1000, 65_536, 100_001,
    ] {
        let parts = Parts {
            status: 200,
            content_type: Some("text/plain; charset=utf-8"),
            headers: &[],
            body: &body[..len],
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        encode_response(&mut a, &parts, framing, VETER);
        encode_ok(&mut b, &OK_TEXT, &body[..len], framing, VETER);
        assert_eq!(a, b, "{len}");
        let line = format!("\r\nContent-Length: {len}\r\n");
        assert!(b.windows(line.len()).any(|w| w == line.as_bytes()), "{len}");
    }
}
