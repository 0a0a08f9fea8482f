//! A request body as the core reads it: its framing (a length, or chunked coding),
//! and where its bytes go (collected before the handler runs, or handed to it as
//! they arrive).

use crate::http1::body::ChunkedDecoder;
use crate::http1::error::ParseError;
use crate::http1::limits::Limits;
use crate::http1::parse::BodyKind;

/// How the rest of a request body is framed.
pub enum BodyFraming {
    Length { remaining: u64 },
    Chunked(Box<ChunkedDecoder>),
}

impl BodyFraming {
    pub(super) fn new(kind: &BodyKind, limits: &Limits) -> Option<Self> {
        match kind {
            BodyKind::Empty => None,
            BodyKind::Length(n) => Some(BodyFraming::Length { remaining: *n }),
            BodyKind::Chunked => Some(BodyFraming::Chunked(Box::new(ChunkedDecoder::new(limits)))),
        }
    }

    /// Takes body bytes from `data` into `out`; returns the bytes used and whether
    /// the body is complete.
    pub(super) fn take(
        &mut self,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(usize, bool), ParseError> {
        match self {
            BodyFraming::Length { remaining } => {
                let take = usize::try_from(*remaining).map_or(data.len(), |r| r.min(data.len()));
                out.extend_from_slice(&data[..take]);
                *remaining -= take as u64;
                Ok((take, *remaining == 0))
            }
            BodyFraming::Chunked(decoder) => decoder.decode(data, out),
        }
    }
}

/// A request body being collected before its handler runs.
pub struct Collecting<H> {
    /// The request, from `hold`.
    pub(super) held: Option<H>,
    pub(super) framing: BodyFraming,
    pub(super) data: Vec<u8>,
}

impl<H> Collecting<H> {
    /// The held request and its complete body (`None`: the shell never called `hold`).
    pub fn into_parts(self) -> (Option<H>, Vec<u8>) {
        (self.held, self.data)
    }
}

/// A request body handed to its running handler as it arrives.
pub struct Streaming<U> {
    pub upload: U,
    pub(super) framing: BodyFraming,
}
