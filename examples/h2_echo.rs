//! A development-only HTTP/2 (prior knowledge, cleartext) server over the
//! sans-IO core, for h2spec: `cargo run --example h2_echo -- 127.0.0.1:8999`.
//! A thread per connection, blocking I/O. Every request is answered 200 with a
//! small body once its body has arrived; a POST's body is echoed back.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use veter_core::http2::{Config, Connection, Event};

fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8999".into());
    let listener = TcpListener::bind(&addr).expect("bind");
    eprintln!("h2_echo listening on {addr}");
    for socket in listener.incoming().flatten() {
        std::thread::spawn(move || serve(socket));
    }
}

fn serve(mut socket: TcpStream) {
    let mut conn = Connection::new(&Config::default());
    // Request bodies by stream, and whether the request was a POST.
    let mut bodies: HashMap<u32, (bool, Vec<u8>)> = HashMap::new();
    let mut buf = vec![0; 64 * 1024];
    loop {
        if write_out(&mut conn, &mut socket).is_err() {
            return;
        }
        if conn.is_finished() {
            return linger(socket);
        }
        let n = match socket.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        conn.received(&buf[..n], Instant::now());
        while let Some(event) = conn.next_event() {
            match event {
                Event::Request {
                    stream,
                    head,
                    end_stream,
                } => {
                    bodies.insert(stream, (head.method() == b"POST", Vec::new()));
                    if end_stream {
                        answer(&mut conn, &mut bodies, stream);
                    }
                }
                Event::Data {
                    stream,
                    data,
                    end_stream,
                } => {
                    conn.consumed(stream, data.len());
                    if let Some((_, body)) = bodies.get_mut(&stream) {
                        body.extend_from_slice(&data);
                    }
                    if end_stream {
                        answer(&mut conn, &mut bodies, stream);
                    }
                }
                Event::Trailers { stream, .. } => answer(&mut conn, &mut bodies, stream),
                Event::HeadersTooLarge { stream } => {
                    conn.send_headers(stream, 431, &[], true);
                }
                Event::Reset { stream, .. } => {
                    bodies.remove(&stream);
                }
                Event::Writable { .. } | Event::GoAway { .. } => {}
            }
        }
    }
}

fn answer(conn: &mut Connection, bodies: &mut HashMap<u32, (bool, Vec<u8>)>, stream: u32) {
    let Some((post, body)) = bodies.remove(&stream) else {
        return;
    };
    let body = if post {
        body
    } else {
        b"hello from veter h2\n".to_vec()
    };
    let length = body.len().to_string();
    let headers: [(&[u8], &[u8]); 2] = [
        (b"content-type", b"text/plain"),
        (b"content-length", length.as_bytes()),
    ];
    conn.send_headers(stream, 200, &headers, false);
    conn.send_data(stream, &body, true);
}

/// Closes after the output is written without a TCP reset: a close with
/// unread input resets the connection and may destroy what was written, so
/// shut down the write side and read what the client still sends, briefly.
fn linger(mut socket: TcpStream) {
    let _ = socket.shutdown(Shutdown::Write);
    let _ = socket.set_read_timeout(Some(Duration::from_secs(1)));
    let mut buf = [0; 4096];
    while matches!(socket.read(&mut buf), Ok(n) if n > 0) {}
}

fn write_out(conn: &mut Connection, socket: &mut TcpStream) -> std::io::Result<()> {
    let out = conn.output();
    if !out.is_empty() {
        socket.write_all(out)?;
        out.clear();
    }
    Ok(())
}
