//! The core's cost per request, for the record (ignored by default):
//! `cargo test --release --lib http2::bench_tests -- --ignored --nocapture`.

use std::time::Instant;

use super::conn::{Connection, Event};
use super::frame::{flag, kind};
use super::settings::Config;
use super::testing::*;

#[test]
#[ignore = "a measurement, not a test"]
fn requests_through_the_core() {
    const BATCH: u32 = 32;
    const ROUNDS: u32 = 20_000;
    let mut client = Client::raw(&Config::default());
    let mut conn = Connection::new(&Config::default());
    let mut hello = super::frame::PREFACE.to_vec();
    hello.extend(settings(&[]));
    conn.received(&hello, client.now);
    conn.output().clear();
    let fields = [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "example.com"),
        (":path", "/plaintext"),
        ("user-agent", "h2load nghttp2/1.52.0"),
        ("accept", "*/*"),
    ];
    let mut stream = 1;
    let mut requests = 0_u64;
    let mut out_bytes = 0;
    let started = Instant::now();
    for _ in 0..ROUNDS {
        // A batch of requests in one read, as a multiplexing client sends them.
        let mut input = Vec::new();
        for _ in 0..BATCH {
            let block = client.block(&fields);
            let flags = flag::END_HEADERS | flag::END_STREAM;
            input.extend(frame(kind::HEADERS, flags, stream, &block));
            stream += 2;
        }
        conn.received(&input, client.now);
        while let Some(event) = conn.next_event() {
            if let Event::Request { stream, .. } = event {
                let headers: [(&[u8], &[u8]); 2] =
                    [(b"content-type", b"text/plain"), (b"content-length", b"13")];
                conn.send_headers(stream, 200, &headers, false);
                conn.send_data(stream, b"Hello, World!", true);
                requests += 1;
            }
        }
        out_bytes += conn.output().len();
        conn.output().clear();
        // Give back the connection window the bodies took, as a client does.
        conn.received(&window_update(0, BATCH * 13), client.now);
    }
    let elapsed = started.elapsed();
    assert_eq!(requests, u64::from(BATCH * ROUNDS));
    assert_eq!(conn.open_streams(), 0);
    #[allow(clippy::cast_precision_loss)]
    let per = elapsed.as_nanos() as f64 / requests as f64;
    println!("{requests} requests, {out_bytes} bytes out, {per:.0} ns per request (client encoding included)");
}
