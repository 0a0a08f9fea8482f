//! HTTP/2 error codes (RFC 9113 section 7) and how far an error reaches
//! (section 5.4): a stream error resets one stream, a connection error ends the
//! connection with GOAWAY.

/// An error code as carried by `RST_STREAM` and `GOAWAY`. Codes this endpoint
/// does not know are kept as `Unknown` (section 7: they carry no special meaning).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    NoError,
    ProtocolError,
    InternalError,
    FlowControlError,
    SettingsTimeout,
    StreamClosed,
    FrameSizeError,
    RefusedStream,
    Cancel,
    CompressionError,
    ConnectError,
    EnhanceYourCalm,
    InadequateSecurity,
    Http11Required,
    Unknown(u32),
}

impl ErrorCode {
    pub fn from_u32(code: u32) -> Self {
        match code {
            0x0 => ErrorCode::NoError,
            0x1 => ErrorCode::ProtocolError,
            0x2 => ErrorCode::InternalError,
            0x3 => ErrorCode::FlowControlError,
            0x4 => ErrorCode::SettingsTimeout,
            0x5 => ErrorCode::StreamClosed,
            0x6 => ErrorCode::FrameSizeError,
            0x7 => ErrorCode::RefusedStream,
            0x8 => ErrorCode::Cancel,
            0x9 => ErrorCode::CompressionError,
            0xa => ErrorCode::ConnectError,
            0xb => ErrorCode::EnhanceYourCalm,
            0xc => ErrorCode::InadequateSecurity,
            0xd => ErrorCode::Http11Required,
            other => ErrorCode::Unknown(other),
        }
    }

    pub fn to_u32(self) -> u32 {
        match self {
            ErrorCode::NoError => 0x0,
            ErrorCode::ProtocolError => 0x1,
            ErrorCode::InternalError => 0x2,
            ErrorCode::FlowControlError => 0x3,
            ErrorCode::SettingsTimeout => 0x4,
            ErrorCode::StreamClosed => 0x5,
            ErrorCode::FrameSizeError => 0x6,
            ErrorCode::RefusedStream => 0x7,
            ErrorCode::Cancel => 0x8,
            ErrorCode::CompressionError => 0x9,
            ErrorCode::ConnectError => 0xa,
            ErrorCode::EnhanceYourCalm => 0xb,
            ErrorCode::InadequateSecurity => 0xc,
            ErrorCode::Http11Required => 0xd,
            ErrorCode::Unknown(other) => other,
        }
    }
}

/// A protocol violation found in the peer's input, and its reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum H2Error {
    /// Ends the connection: GOAWAY with this code, then close.
    Connection(ErrorCode),
    /// Resets one stream (`RST_STREAM`); the connection goes on.
    Stream(u32, ErrorCode),
}

impl H2Error {
    pub(crate) fn protocol() -> Self {
        H2Error::Connection(ErrorCode::ProtocolError)
    }

    pub(crate) fn frame_size() -> Self {
        H2Error::Connection(ErrorCode::FrameSizeError)
    }
}
