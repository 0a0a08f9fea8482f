//! HTTP/2 in the shell: a connection that finds the client speaks HTTP/2 hands
//! itself over to a `Session` (`session.rs`), which serves each stream through an
//! HTTP/1.1 `Connection` of its own over a `StreamTransport` (`transport.rs`).
//!
//! How a connection finds out (`Connection::connection_made`, `data_received`):
//! over TLS, ALPN chose `h2`; in clear text, its first bytes are the HTTP/2
//! preface (h2c with prior knowledge). Each is a setting (`http2`, `h2c`).

use pyo3::prelude::*;

mod link;
mod session;
mod transport;

pub use session::Session;
pub use transport::StreamTransport;

/// Whether TLS's ALPN chose `h2` for this transport.
pub fn alpn_chose_h2(transport: &Bound<'_, PyAny>) -> PyResult<bool> {
    let ssl = transport.call_method1("get_extra_info", ("ssl_object",))?;
    if ssl.is_none() {
        return Ok(false);
    }
    let chosen = ssl.call_method0("selected_alpn_protocol")?;
    Ok(!chosen.is_none() && chosen.extract::<String>()? == "h2")
}

/// The client connection preface (RFC 9113 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What the first bytes of a clear-text connection say.
#[derive(Debug, PartialEq, Eq)]
pub enum Sniff {
    /// The HTTP/2 preface (or as much of it as has come).
    Http2,
    /// Too few bytes to tell: wait for more.
    Unsure,
    Http1,
}

/// Reads the first bytes of a clear-text connection.
pub fn sniff(first: &[u8]) -> Sniff {
    let n = first.len().min(PREFACE.len());
    if first[..n] != PREFACE[..n] {
        Sniff::Http1
    } else if n == PREFACE.len() {
        Sniff::Http2
    } else {
        Sniff::Unsure
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preface_is_told_apart_from_http1_at_its_first_byte_that_differs() {
        assert_eq!(sniff(b"GET / HTTP/1.1\r\n"), Sniff::Http1);
        assert_eq!(sniff(b"PRI * HTTP/1.1\r\n"), Sniff::Http1);
        assert_eq!(
            sniff(b"GET / HTTP/2.0\r\n"),
            Sniff::Http1,
            "505, from the HTTP/1.1 parser"
        );
        assert_eq!(sniff(b"INVALID CONNECTION PREFACE\r\n\r\n"), Sniff::Http1);
        assert_eq!(sniff(b"PRI * HT"), Sniff::Unsure);
        assert_eq!(sniff(b"P"), Sniff::Unsure);
        assert_eq!(sniff(PREFACE), Sniff::Http2);
        assert_eq!(
            sniff(&[PREFACE, b"\x00\x00\x00\x04"].concat()),
            Sniff::Http2
        );
    }
}
