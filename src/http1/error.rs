//! The one error type of the HTTP/1 parsing layer.
//!
//! Every variant is a verdict on the request and carries the status code to answer
//! with; the connection is closed after any of them, because once framing is in
//! doubt nothing after the error in the buffer can be trusted (RFC 9112 section 9.6
//! and the architecture's smuggling rules). The `&'static str` reasons are short,
//! fixed texts safe to send to the client: they never echo request bytes.

use std::fmt;

/// Why a request head or body was rejected; `status()` is the response code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// 400: malformed syntax or framing; the text says which rule was broken.
    BadRequest(&'static str),
    /// 413: Content-Length or the decoded chunked body exceeds `max_body_bytes`.
    PayloadTooLarge,
    /// 414: the request line exceeds `max_start_line`.
    UriTooLong,
    /// 431: too many header fields, or header or trailer bytes over their limit.
    HeaderFieldsTooLarge,
    /// 501: well-formed, but asks for something we do not implement (a transfer
    /// coding other than chunked).
    NotImplemented(&'static str),
    /// 505: a well-formed `HTTP/x.y` version other than 1.0 and 1.1.
    VersionNotSupported,
}

impl ParseError {
    /// The HTTP status code to answer with.
    #[must_use]
    pub fn status(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::PayloadTooLarge => 413,
            Self::UriTooLong => 414,
            Self::HeaderFieldsTooLarge => 431,
            Self::NotImplemented(_) => 501,
            Self::VersionNotSupported => 505,
        }
    }

    /// A short text for the error response body; never contains request bytes.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::BadRequest(reason) | Self::NotImplemented(reason) => reason,
            Self::PayloadTooLarge => "payload too large",
            Self::UriTooLong => "request line too long",
            Self::HeaderFieldsTooLarge => "request header fields too large",
            Self::VersionNotSupported => "HTTP version not supported",
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status(), self.reason())
    }
}

impl std::error::Error for ParseError {}

#[cfg(test)]
mod tests {
    use super::ParseError;

    #[test]
    fn status_and_reason_table() {
        let table = [
            (
                ParseError::BadRequest("bare LF in header"),
                400,
                "bare LF in header",
            ),
            (ParseError::PayloadTooLarge, 413, "payload too large"),
            (ParseError::UriTooLong, 414, "request line too long"),
            (
                ParseError::HeaderFieldsTooLarge,
                431,
                "request header fields too large",
            ),
            (ParseError::NotImplemented("gzip"), 501, "gzip"),
            (
                ParseError::VersionNotSupported,
                505,
                "HTTP version not supported",
            ),
        ];
        for (err, status, reason) in table {
            assert_eq!(err.status(), status);
            assert_eq!(err.reason(), reason);
            assert_eq!(err.to_string(), format!("{status} {reason}"));
        }
    }
}
