//! Caps on what one request may make us buffer or parse.
//!
//! Every cap has its own status code so a client (and an operator reading logs) can
//! tell which limit was hit: 414 for the request line, 431 for header fields and
//! trailers, 413 for the body and for the number of chunks, 400 for chunk extensions
//! (RFC 9112 names no status for those; they are a framing detail, not content). The
//! numbers are copied into the parser and decoders at setup, never looked up per byte.

/// Configurable parser limits. `Default` gives the values documented on each field.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Request line including its CRLF, in bytes (default 8192). Exceeded: 414.
    pub max_start_line: usize,
    /// Number of header field lines (default 100). Exceeded: 431.
    pub max_header_count: usize,
    /// Bytes of all header lines after the request line, including the empty line
    /// that ends the head (default 16384). Exceeded: 431.
    pub max_header_bytes: usize,
    /// Body bytes, from Content-Length or the decoded chunked total
    /// (default 10 MiB). Exceeded: 413.
    pub max_body_bytes: u64,
    /// Bytes of extensions on one chunk-size line (default 1024). Exceeded: 400.
    pub max_chunk_ext_bytes: usize,
    /// Bytes of trailer field lines after the last chunk, not counting the final
    /// empty line, so 0 means "no trailers" (default 16384). Exceeded: 431.
    pub max_trailer_bytes: usize,
    /// Chunks in one chunked body, the last (zero-size) chunk included (default
    /// 16384). Exceeded: 413. Each chunk costs a size line on the wire that
    /// `max_body_bytes` does not count, so without this cap a 1-byte-per-chunk body
    /// would make us read and parse several times `max_body_bytes`.
    pub max_chunk_count: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_start_line: 8192,
            max_header_count: 100,
            max_header_bytes: 16384,
            max_body_bytes: 10 * 1024 * 1024,
            max_chunk_ext_bytes: 1024,
            max_trailer_bytes: 16384,
            max_chunk_count: 16384,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Limits;

    #[test]
    fn defaults_match_the_documented_values() {
        let l = Limits::default();
        assert_eq!(l.max_start_line, 8192);
        assert_eq!(l.max_header_count, 100);
        assert_eq!(l.max_header_bytes, 16384);
        assert_eq!(l.max_body_bytes, 10_485_760);
        assert_eq!(l.max_chunk_ext_bytes, 1024);
        assert_eq!(l.max_trailer_bytes, 16384);
        assert_eq!(l.max_chunk_count, 16384);
    }
}
