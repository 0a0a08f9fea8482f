//! The connection core, byte by byte: tables of inputs and what must come out,
//! each fed whole and in every split (TCP may cut anywhere).

use std::time::Duration;

use super::drive::{Driver, Handlers};
use super::{Pause, Tick};
use crate::timeouts::Timeouts;

const GET_A: &str = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
const GET_B: &str = "GET /b HTTP/1.1\r\nHost: x\r\n\r\n";

fn limits_of_time() -> Timeouts {
    Timeouts {
        keepalive: Duration::from_secs(5),
        header: Duration::from_secs(10),
        body: Duration::from_secs(10),
        write: Duration::from_secs(10),
        request: Some(Duration::from_secs(30)),
    }
}

/// Feeds `input` in pieces that end at `cuts`, with handlers that answer at once.
fn run_split(input: &[u8], cuts: &[usize]) -> Driver {
    let mut d = Driver::new(Handlers::Inline);
    let mut from = 0;
    for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
        if cut > from {
            d.feed(&input[from..cut]);
            from = cut;
        }
    }
    d
}

/// The same events and output for `input` whole, byte by byte and split at every
/// single position.
fn check_every_split(input: &str, log: &[&str], written: &str) {
    let bytes = input.as_bytes();
    let mut splits: Vec<Vec<usize>> = vec![vec![], (1..bytes.len()).collect()];
    splits.extend((1..bytes.len()).map(|i| vec![i]));
    for cuts in splits {
        let d = run_split(bytes, &cuts);
        assert_eq!(d.log, log, "{input:?} cut at {cuts:?}");
        assert_eq!(d.written_text(), written, "{input:?} cut at {cuts:?}");
    }
}

#[test]
fn requests_and_bodies_in_every_split() {
    let table: &[(&str, &[&str], &str)] = &[
        (GET_A, &["GET /a []"], "R /a\n"),
        (
            "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
            &["GET /a []", "GET /b []"],
            "R /a\nR /b\n",
        ),
        (
            "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
            &["POST /p [hello]", "GET /b []"],
            "R /p\nR /b\n",
        ),
        (
            "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: v\r\n\r\n",
            &["POST /c [abcde]"],
            "R /c\n",
        ),
        (
            "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
            &["GET /a []"],
            "R /a\n",
        ),
        (
            "GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
            &["GET /a []"],
            "R /a\n",
        ),
    ];
    for (input, log, written) in table {
        check_every_split(input, log, written);
    }
}

#[test]
fn parse_errors_answer_once_and_nothing_after() {
    let table: &[(&str, u16)] = &[
        ("GET / HTTP/1.1\r\n\r\n", 400),             // no Host
        ("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400), // double space
        ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        ("G\x00T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", 400),
        (
            "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            400,
        ),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            501,
        ),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n",
            413,
        ),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            400,
        ),
    ];
    for (bad, status) in table {
        // A valid request before the bad one is answered; the one after never is.
        let input = format!("{GET_A}{bad}{GET_B}");
        let log = ["GET /a []".to_owned(), format!("reject {status}")];
        let log: Vec<&str> = log.iter().map(String::as_str).collect();
        check_every_split(&input, &log, &format!("R /a\nE {status}\n"));
        let d = run_split(input.as_bytes(), &[]);
        assert!(d.closed, "{bad:?} closes");
        assert!(d.core.is_stopped());
    }
}

#[test]
fn head_over_the_limits() {
    let mut d = Driver::new(Handlers::Inline);
    d.limits.max_start_line = 32;
    let long = format!("GET /{} HTTP/1.1\r\n", "a".repeat(64));
    // No LF seen yet but the line is over the limit: rejected without waiting.
    d.feed(&long.as_bytes()[..40]);
    assert_eq!(d.log, ["reject 414"]);
    assert!(d.closed);
}

#[test]
fn responses_leave_in_request_order() {
    let mut d = Driver::new(Handlers::Later);
    d.feed(format!("{GET_A}{GET_B}").as_bytes());
    assert_eq!(d.log, ["GET /a []", "GET /b []"]);
    assert_eq!(d.core.in_flight, 2);
    assert_eq!(d.written_text(), "");
    // /b answers first: it waits for /a.
    let slot = d.core.queue.get_mut(1).unwrap();
    slot.bytes = Some(b"R /b\n".to_vec());
    slot.pending = None;
    d.core.handler_done();
    d.flush();
    assert_eq!(d.written_text(), "");
    d.finish_next();
    assert_eq!(d.written_text(), "R /a\nR /b\n");
    assert!(d.core.is_idle());
}

#[test]
fn pipeline_pause_holds_input_and_reading() {
    let mut d = Driver::new(Handlers::Later);
    d.max_pipelined = 1;
    d.feed(format!("{GET_A}{GET_B}").as_bytes());
    assert_eq!(d.log, ["GET /a []"]);
    assert!(d.core.pauses.contains(Pause::Pipeline));
    assert!(d.reading_paused);
    // A head timeout does not run against a request held by the pause.
    d.advance(Duration::from_secs(60));
    assert_eq!(d.core.tick(d.now, &limits_of_time()), Tick::Nothing);
    d.finish_next();
    assert_eq!(d.log, ["GET /a []", "GET /b []"]);
    assert!(!d.core.pauses.contains(Pause::Pipeline));
    d.finish_next();
    assert_eq!(d.written_text(), "R /a\nR /b\n");
    assert!(!d.reading_paused);
}

#[test]
fn concurrency_pause_queues_once() {
    let mut d = Driver::new(Handlers::Inline);
    d.room = false;
    d.feed(GET_A.as_bytes());
    d.feed(GET_B.as_bytes());
    assert_eq!(d.log, ["queued"]);
    assert!(d.core.queued_for_slot());
    assert!(d.reading_paused);
    assert!(d.core.waiting_since.is_some());
    d.drain();
    assert_eq!(d.log, ["queued"], "no room yet");
    d.room = true;
    d.drain();
    assert_eq!(d.log, ["queued", "GET /a []", "GET /b []"]);
    assert!(!d.reading_paused);
}

#[test]
fn transport_pause_holds_requests_until_it_drains() {
    let mut d = Driver::new(Handlers::Inline);
    d.feed(GET_A.as_bytes());
    d.core.set_writing_paused(true, d.now);
    d.feed(GET_B.as_bytes());
    assert_eq!(d.log, ["GET /a []"]);
    assert!(d.reading_paused);
    d.core.set_writing_paused(false, d.now);
    d.drain();
    assert_eq!(d.log, ["GET /a []", "GET /b []"]);
    assert_eq!(d.written_text(), "R /a\nR /b\n");
}

#[test]
fn a_large_batch_waits_for_its_write() {
    let mut d = Driver::new(Handlers::Inline);
    let n = super::output::OUTPUT_HIGH / "R /a\n".len() + 10;
    d.feed(GET_A.repeat(n).as_bytes());
    // Everything is answered, in batches of about OUTPUT_HIGH bytes.
    assert_eq!(d.log.len(), n);
    assert_eq!(d.written.len(), n * "R /a\n".len());
}

#[test]
fn timeouts_close_or_answer_408() {
    let t = limits_of_time();
    // Idle past keep-alive: closed without a response.
    let mut d = Driver::new(Handlers::Inline);
    d.feed(GET_A.as_bytes());
    d.advance(Duration::from_secs(6));
    assert_eq!(d.core.tick(d.now, &t), Tick::Close);
    d.flush();
    assert!(d.closed);
    // A head that never completes (slowloris).
    let mut d = Driver::new(Handlers::Inline);
    d.feed(b"GET / HTTP/1.1\r\nHo");
    d.advance(Duration::from_secs(5));
    assert_eq!(d.core.tick(d.now, &t), Tick::Nothing);
    d.advance(Duration::from_secs(6));
    assert_eq!(
        d.core.tick(d.now, &t),
        Tick::Late("request head not received in time")
    );
    assert!(d.core.is_stopped());
    // A body that stops coming.
    let mut d = Driver::new(Handlers::Inline);
    d.feed(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
    d.advance(Duration::from_secs(11));
    assert_eq!(
        d.core.tick(d.now, &t),
        Tick::Late("request body not received in time")
    );
    // A client that stops reading.
    let mut d = Driver::new(Handlers::Inline);
    d.feed(GET_A.as_bytes());
    d.core.set_writing_paused(true, d.now);
    d.advance(Duration::from_secs(11));
    assert_eq!(d.core.tick(d.now, &t), Tick::Abort);
    assert!(d.core.closed);
    // A handler past its deadline.
    let mut d = Driver::new(Handlers::Later);
    d.feed(GET_A.as_bytes());
    d.advance(Duration::from_secs(31));
    assert_eq!(
        d.core.overdue(d.now, Duration::from_secs(30)).as_slice(),
        [0]
    );
    assert_eq!(d.core.tick(d.now, &t), Tick::Nothing);
}

#[test]
fn end_of_input_answers_what_is_in_flight() {
    let mut d = Driver::new(Handlers::Later);
    d.feed(format!("{GET_A}GET /inc").as_bytes());
    assert!(
        d.core.end_of_input(),
        "keep the transport open for the answer"
    );
    d.flush();
    assert!(!d.closed);
    d.finish_next();
    assert!(d.closed);
    assert_eq!(d.written_text(), "R /a\n");
}

#[test]
fn expect_continue_only_when_the_body_is_not_there() {
    let head = "POST /p HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
    let d = run_split(format!("{head}abc").as_bytes(), &[]);
    assert_eq!(d.written_text(), "R /p\n");
    let d = run_split(format!("{head}abc").as_bytes(), &[head.len()]);
    assert_eq!(d.written_text(), "HTTP/1.1 100 Continue\r\n\r\nR /p\n");
}

#[test]
fn streamed_bodies_come_out_as_they_arrive() {
    let mut d = Driver::new(Handlers::Later);
    d.stream_prefix = Some("/up");
    d.feed(b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nab");
    assert_eq!(d.log, ["POST /up [<streamed>]", "upload /up [ab]"]);
    d.feed(b"cd");
    d.core.pauses.set(Pause::Upload);
    d.feed(b"ef");
    d.feed(GET_B.as_bytes());
    assert_eq!(d.log, ["POST /up [<streamed>]", "upload /up [abcd]"]);
    assert!(d.reading_paused);
    let held = d.core.resume_upload().unwrap();
    d.feed(&held);
    assert_eq!(d.log[1..], ["upload /up [abcdef] end", "GET /b []"]);
    // A broken chunked body: the reader learns it, and the connection closes.
    let mut d = Driver::new(Handlers::Inline);
    d.stream_prefix = Some("/up");
    d.feed(b"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\nzz\r\n");
    d.feed(GET_B.as_bytes());
    assert_eq!(
        d.log,
        ["POST /up [<streamed>]", "upload /up [ab] error 400"]
    );
    assert!(d.closed);
}

#[test]
fn the_last_request_streams_its_whole_body_then_reads_nothing() {
    // HTTP/1.0 and `Connection: close` (what a stock nginx sends upstream): the
    // body of the connection's last request is still handed out to its end, in
    // every split, and nothing pipelined after it is parsed.
    let inputs = [
        "POST /up HTTP/1.0\r\nContent-Length: 6\r\n\r\nabcdefGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST /up HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
    ];
    for input in inputs {
        let bytes = input.as_bytes();
        let mut splits: Vec<Vec<usize>> = vec![vec![], (1..bytes.len()).collect()];
        splits.extend((1..bytes.len()).map(|i| vec![i]));
        for cuts in splits {
            let mut d = Driver::new(Handlers::Later);
            d.stream_prefix = Some("/up");
            let mut from = 0;
            for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
                if cut > from {
                    d.feed(&bytes[from..cut]);
                    from = cut;
                }
            }
            let log = ["POST /up [<streamed>]", "upload /up [abcdef] end"];
            assert_eq!(d.log, log, "{input:?} cut at {cuts:?}");
            assert!(!d.closed, "{input:?} cut at {cuts:?}");
            d.finish_next();
            assert_eq!(d.written_text(), "R /up\n", "{input:?} cut at {cuts:?}");
            assert!(d.closed, "{input:?} cut at {cuts:?}");
        }
    }
    // Its malformed framing is found as on any other request.
    let mut d = Driver::new(Handlers::Later);
    d.stream_prefix = Some("/up");
    d.feed(b"POST /up HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n2x\r\nab\r\n");
    assert_eq!(d.log, ["POST /up [<streamed>]", "upload /up [] error 400"]);
    // A handler that answers before the body is read: the connection closes after
    // the answer, the rest of the body unread.
    let mut d = Driver::new(Handlers::Later);
    d.stream_prefix = Some("/up");
    d.feed(b"POST /up HTTP/1.0\r\nContent-Length: 6\r\n\r\nab");
    d.finish_next();
    assert!(d.closed);
    assert_eq!(d.written_text(), "R /up\n");
}

#[test]
fn an_upgrade_keeps_what_follows_for_the_next_protocol() {
    let mut d = Driver::new(Handlers::Inline);
    d.websocket_prefix = Some("/ws");
    d.feed(
        b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x05",
    );
    d.feed(b"hello");
    assert_eq!(d.log, ["upgrade /ws"]);
    assert_eq!(d.core.buf, b"\x81\x05hello");
    assert!(d.reading_paused, "the frames wait in the kernel meanwhile");
}

#[test]
fn over_capacity_reads_nothing_until_admitted() {
    let mut d = Driver::new(Handlers::Inline);
    d.core.pauses.set(Pause::Capacity);
    d.feed(GET_A.as_bytes());
    assert!(d.log.is_empty());
    assert!(d.reading_paused);
    d.core.pauses.clear(Pause::Capacity);
    d.drain();
    assert_eq!(d.log, ["GET /a []"]);
}
