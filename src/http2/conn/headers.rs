//! Header blocks in: HEADERS and CONTINUATION frames assembled, decoded, and
//! turned into a request, trailers, or a stream reset (see the theory in
//! `conn.rs`).

use super::{Connection, Event};
use crate::http2::error::{ErrorCode, H2Error};
use crate::http2::hpack;
use crate::http2::request::{RequestBuilder, TrailersBuilder};
use crate::http2::stream::Stream;

/// How many ranges of skipped stream ids are remembered.
const SKIPPED_RANGES: usize = 8;

/// What a header block being received will be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BlockKind {
    /// A new request on an accepted stream.
    Request,
    /// Trailers on a stream still receiving.
    Trailers,
    /// Decoded for HPACK's sake, then the stream is reset with this code.
    Refuse(ErrorCode),
    /// Decoded for HPACK's sake, then dropped.
    Ignore,
}

/// A header block whose `END_HEADERS` has not arrived.
#[derive(Clone, Copy, Debug)]
pub(super) struct PendingBlock {
    pub stream: u32,
    end_stream: bool,
    kind: BlockKind,
    continuations: u32,
}

impl Connection {
    pub(super) fn on_headers(
        &mut self,
        id: u32,
        block: &[u8],
        end_stream: bool,
        end_headers: bool,
        self_dependent: bool,
    ) -> Result<(), H2Error> {
        if id % 2 == 0 {
            return Err(H2Error::protocol());
        }
        let mut kind = if let Some(s) = self.streams.get(&id) {
            if s.recv_closed {
                BlockKind::Refuse(ErrorCode::StreamClosed)
            } else {
                BlockKind::Trailers
            }
        } else if id <= self.last_stream {
            if self
                .skipped
                .iter()
                .any(|&(low, high)| (low..=high).contains(&id))
            {
                // Never opened: a stream id going backwards (section 5.1.1).
                return Err(H2Error::protocol());
            }
            if !self.was_reset_by_us(id) {
                return Err(H2Error::Connection(ErrorCode::StreamClosed));
            }
            BlockKind::Ignore
        } else {
            self.note_skipped(id);
            self.last_stream = id;
            if self.goaway_sent {
                BlockKind::Ignore
            } else if self.streams.len() >= self.config.max_concurrent_streams as usize {
                BlockKind::Refuse(ErrorCode::RefusedStream)
            } else {
                BlockKind::Request
            }
        };
        if self_dependent {
            kind = BlockKind::Refuse(ErrorCode::ProtocolError);
        }
        let pending = PendingBlock {
            stream: id,
            end_stream,
            kind,
            continuations: 0,
        };
        if end_headers {
            // The common case: the whole block in one frame, decoded in place.
            return self.finish_block(pending, block);
        }
        if block.is_empty() {
            self.control()?;
        }
        self.block.clear();
        self.append(block)?;
        self.pending = Some(pending);
        Ok(())
    }

    pub(super) fn on_continuation(
        &mut self,
        id: u32,
        fragment: &[u8],
        end_headers: bool,
    ) -> Result<(), H2Error> {
        // `frame` already checked that a pending block's stream matches.
        let Some(mut pending) = self.pending.take() else {
            return Err(H2Error::protocol());
        };
        debug_assert_eq!(pending.stream, id);
        pending.continuations += 1;
        if pending.continuations > self.config.max_continuation_frames {
            return Err(H2Error::Connection(ErrorCode::EnhanceYourCalm));
        }
        if fragment.is_empty() && !end_headers {
            self.control()?;
        }
        self.append(fragment)?;
        if !end_headers {
            self.pending = Some(pending);
            return Ok(());
        }
        let block = std::mem::take(&mut self.block);
        let done = self.finish_block(pending, &block);
        self.block = block;
        done
    }

    /// Adds a fragment to the block being assembled, within the raw limit.
    fn append(&mut self, fragment: &[u8]) -> Result<(), H2Error> {
        let limit = 2 * self.config.max_header_list_size as usize;
        if self.block.len() + fragment.len() > limit {
            return Err(H2Error::Connection(ErrorCode::EnhanceYourCalm));
        }
        self.block.extend_from_slice(fragment);
        Ok(())
    }

    fn finish_block(&mut self, p: PendingBlock, block: &[u8]) -> Result<(), H2Error> {
        let id = p.stream;
        let max = self.config.max_header_list_size as usize;
        match p.kind {
            BlockKind::Request => {
                let mut request = RequestBuilder::reusing(
                    self.spare_heads.pop(),
                    self.config.enable_connect_protocol,
                );
                let decoded = self
                    .decoder
                    .decode_with_origin(block, max, |n, v, o| request.decoded(n, v, o));
                let mut stream = Stream::new(
                    self.peer.initial_window_size,
                    self.local_window(),
                    p.end_stream,
                );
                match decoded {
                    Ok(()) => {}
                    Err(hpack::Error::ListTooLarge) => {
                        stream.discard = true;
                        self.accept(id, stream);
                        self.events.push_back(Event::HeadersTooLarge { stream: id });
                        return Ok(());
                    }
                    Err(_) => return Err(H2Error::Connection(ErrorCode::CompressionError)),
                }
                let Ok(head) = request.finish() else {
                    return Err(H2Error::Stream(id, ErrorCode::ProtocolError));
                };
                if p.end_stream && head.content_length.is_some_and(|n| n != 0) {
                    return Err(H2Error::Stream(id, ErrorCode::ProtocolError));
                }
                stream.content_length = head.content_length;
                self.accept(id, stream);
                self.events.push_back(Event::Request {
                    stream: id,
                    head,
                    end_stream: p.end_stream,
                });
                Ok(())
            }
            BlockKind::Trailers => {
                let mut trailers = TrailersBuilder::default();
                match self.decoder.decode(block, max, |n, v| trailers.field(n, v)) {
                    Ok(()) => {}
                    Err(hpack::Error::ListTooLarge) => {
                        return Err(H2Error::Stream(id, ErrorCode::ProtocolError));
                    }
                    Err(_) => return Err(H2Error::Connection(ErrorCode::CompressionError)),
                }
                // Section 8.1: a second HEADERS must end the stream.
                let fields = match trailers.finish() {
                    Ok(fields) if p.end_stream => fields,
                    _ => return Err(H2Error::Stream(id, ErrorCode::ProtocolError)),
                };
                let Some(s) = self.streams.get_mut(&id) else {
                    return Ok(());
                };
                if s.content_length.is_some_and(|n| n != s.received) {
                    return Err(H2Error::Stream(id, ErrorCode::ProtocolError));
                }
                s.recv_closed = true;
                let (closed, discard) = (s.is_closed(), s.discard);
                if closed {
                    self.streams.remove(&id);
                }
                if !discard {
                    self.events
                        .push_back(Event::Trailers { stream: id, fields });
                }
                Ok(())
            }
            BlockKind::Refuse(code) => {
                self.discard_block(block)?;
                Err(H2Error::Stream(id, code))
            }
            BlockKind::Ignore => self.discard_block(block),
        }
    }

    /// Remembers the ids a new stream id jumped over (the last few ranges), to
    /// tell a stream id going backwards from a HEADERS on a closed stream.
    fn note_skipped(&mut self, id: u32) {
        let next = if self.last_stream == 0 {
            1
        } else {
            self.last_stream + 2
        };
        if id > next {
            if self.skipped.len() == SKIPPED_RANGES {
                self.skipped.pop_front();
            }
            self.skipped.push_back((next, id - 2));
        }
    }

    fn accept(&mut self, id: u32, stream: Stream) {
        self.streams.insert(id, stream);
        self.last_accepted = id;
    }

    /// Decodes a block only to keep the HPACK table in step with the client.
    fn discard_block(&mut self, block: &[u8]) -> Result<(), H2Error> {
        let max = self.config.max_header_list_size as usize;
        match self.decoder.decode(block, max, |_, _| {}) {
            Ok(()) | Err(hpack::Error::ListTooLarge) => Ok(()),
            Err(_) => Err(H2Error::Connection(ErrorCode::CompressionError)),
        }
    }
}
