//! A stream's answer, written as HTTP/1.1 by the stream's connection, read back
//! into what HTTP/2 sends: a head (status and fields), body bytes, trailers.
//!
//! The bytes come from veter's own encoder (`http1/encode.rs`) and its streamed
//! answers, so they are well formed (a whole answer of the core's comes as a
//! record, `http1/record.rs`: its fields already apart, read with the same rules);
//! this reader still checks what it relies on and reports anything else as
//! `Malformed` (the stream is then reset, never answered with guesses). State: `Head` (bytes up to the blank line are kept in
//! `buf`), then the body by its framing: `Length` (bytes left), `Chunks` (a chunk
//! size line, chunk data, its CRLF, trailers), `Tunnel` (after a `101`: the bytes
//! of a WebSocket, as they are), `UntilClose` (no length: the body ends with the
//! connection), `Done`.
//!
//! HTTP/1.1's connection-specific fields (`connection`, `keep-alive`,
//! `transfer-encoding`, `upgrade`, `proxy-connection`) are dropped and names are
//! lowercased (RFC 9113 8.2); a `101` becomes the `200` of RFC 8441.

use std::ops::Range;

use memchr::memmem;
use smallvec::SmallVec;

use crate::http1::record;

#[path = "answer_lines.rs"]
mod lines;
use lines::{number, status_of};

/// One thing to send on the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A `1xx` answer other than `101` (`100 Continue`, `103 Early Hints`).
    Informational { status: u16, fields: Fields<'a> },
    /// The answer's head; `end`: there is no body.
    Head {
        status: u16,
        fields: Fields<'a>,
        end: bool,
    },
    /// Body bytes; `end`: the last of them (the slice may be empty).
    Data { bytes: &'a [u8], end: bool },
    /// The body's end, with trailer fields.
    Trailers { fields: Fields<'a> },
}

/// Fields as (lowercase name, value).
pub type Fields<'a> = &'a [(&'a [u8], &'a [u8])];

/// The answer's bytes are not what veter writes.
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    Chunks(Chunk),
    Tunnel,
    UntilClose,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading a size line (kept in `buf`).
    Size,
    /// Chunk data still to come.
    Data(u64),
    /// The CRLF after a chunk's data (bytes of it still expected).
    DataEnd(u8),
    /// Trailer fields up to the blank line (kept in `buf`).
    Trailers,
}

/// The reader of one answer (one per stream).
pub struct Answer {
    state: State,
    /// The request was `HEAD`: the answer has no body whatever its fields say.
    head_request: bool,
    /// Bytes of an incomplete head, size line or trailer block.
    buf: Vec<u8>,
    /// Lowercased names and values of the fields being handed out.
    names: Vec<u8>,
}

/// A kept field's lowercase name: veter's own (a constant) or copied into `names`.
enum Name {
    Known(&'static [u8]),
    Copied(Range<usize>),
}

/// What a head's fields said: those kept (name, value in the head), and its framing.
struct Found {
    spans: SmallVec<[(Name, Range<usize>); 12]>,
    length: Option<u64>,
    chunked: bool,
}

impl Found {
    fn new() -> Self {
        Found {
            spans: SmallVec::new(),
            length: None,
            chunked: false,
        }
    }

    /// A field with its value at `value` in `head`, as its role says.
    #[inline]
    fn add(
        &mut self,
        name: Name,
        role: Role,
        value: Range<usize>,
        head: &[u8],
    ) -> Result<(), Malformed> {
        match role {
            Role::Kept => self.spans.push((name, value)),
            Role::Length => {
                self.length = Some(number(&head[value.clone()])?);
                self.spans.push((name, value));
            }
            Role::Coding => self.chunked = head[value].eq_ignore_ascii_case(b"chunked"),
            Role::Dropped => {}
        }
        Ok(())
    }
}

/// What the reader does with a field.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Kept,
    /// `content-length`: kept, and it frames the body.
    Length,
    /// `transfer-encoding`: it frames the body, and is dropped.
    Coding,
    /// HTTP/1.1's own (`connection`, `keep-alive`, `upgrade`, `proxy-connection`):
    /// they do not exist in HTTP/2.
    Dropped,
}

/// A lowercase name's role.
fn role_of(name: &[u8]) -> Role {
    match name {
        b"content-length" => Role::Length,
        b"transfer-encoding" => Role::Coding,
        b"connection" | b"keep-alive" | b"upgrade" | b"proxy-connection" => Role::Dropped,
        _ => Role::Kept,
    }
}

/// The names veter's encoder writes (`http1/encode.rs`), lowercased and given their
/// role without a copy or a second comparison; None for any other name.
fn known(name: &[u8]) -> Option<(&'static [u8], Role)> {
    Some(match name {
        b"Server" => (b"server", Role::Kept),
        b"Date" => (b"date", Role::Kept),
        b"X-Request-ID" => (b"x-request-id", Role::Kept),
        b"Content-Type" => (b"content-type", Role::Kept),
        b"Content-Length" => (b"content-length", Role::Length),
        b"Connection" => (b"connection", Role::Dropped),
        b"Transfer-Encoding" => (b"transfer-encoding", Role::Coding),
        _ => return None,
    })
}

impl Answer {
    pub fn new(head_request: bool) -> Self {
        Answer {
            state: State::Head,
            head_request,
            buf: Vec::new(),
            names: Vec::new(),
        }
    }

    /// Ready for another stream's answer, its buffers' capacity kept.
    pub fn reset(&mut self, head_request: bool) {
        self.state = State::Head;
        self.head_request = head_request;
        self.buf.clear();
        self.names.clear();
    }

    /// The whole answer has been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Whether the head has been read (something was sent on the stream).
    pub fn started(&self) -> bool {
        self.state != State::Head
    }

    /// The connection closed: an answer without a length ends here (`Some` with the
    /// piece to send); any other unfinished answer was cut short (`None`).
    pub fn closed(&mut self) -> Option<Piece<'static>> {
        match self.state {
            State::UntilClose | State::Tunnel => {
                self.state = State::Done;
                Some(Piece::Data {
                    bytes: &[],
                    end: true,
                })
            }
            _ => None,
        }
    }

    /// Reads `data`, handing each piece to `emit` in order.
    pub fn feed(
        &mut self,
        mut data: &[u8],
        emit: &mut dyn FnMut(Piece<'_>),
    ) -> Result<(), Malformed> {
        while !data.is_empty() {
            match self.state {
                State::Done => return Err(Malformed("bytes after the answer's end")),
                State::Head if self.buf.is_empty() && data[0] == record::MARK => {
                    // A whole answer of the core's own, its fields already apart.
                    data = &data[self.read_record(data, emit)?..];
                }
                State::Head if self.buf.is_empty() => {
                    // Almost always: the whole head in this write, read where it is
                    // (its lines are read until the blank one: no search for it first).
                    if let Some(len) = self.read_head(data, emit)? {
                        data = &data[len..];
                    } else {
                        self.buf.extend_from_slice(data);
                        return Ok(());
                    }
                }
                State::Head => {
                    let Some(used) = self.take_block(data) else {
                        return Ok(());
                    };
                    data = &data[used..];
                    let head = std::mem::take(&mut self.buf);
                    let read = self.read_head(&head, emit);
                    self.buf = head;
                    self.buf.clear();
                    if read?.is_none() {
                        return Err(Malformed("a head without its blank line"));
                    }
                }
                State::Length(left) => {
                    let take = usize::try_from(left).map_or(data.len(), |l| l.min(data.len()));
                    let left = left - take as u64;
                    emit(Piece::Data {
                        bytes: &data[..take],
                        end: left == 0,
                    });
                    data = &data[take..];
                    self.state = if left == 0 {
                        State::Done
                    } else {
                        State::Length(left)
                    };
                }
                State::Tunnel | State::UntilClose => {
                    emit(Piece::Data {
                        bytes: data,
                        end: false,
                    });
                    return Ok(());
                }
                State::Chunks(chunk) => data = self.read_chunks(chunk, data, emit)?,
            }
        }
        Ok(())
    }

    /// Moves bytes up to and including a blank line into `buf`; the count used from
    /// `data` once `buf` holds a whole block, None while it does not.
    fn take_block(&mut self, data: &[u8]) -> Option<usize> {
        let before = self.buf.len();
        self.buf.extend_from_slice(data);
        // The blank line may straddle the two pieces: search from a little before.
        let from = before.saturating_sub(3);
        let at = memmem::find(&self.buf[from..], b"\r\n\r\n")? + from + 4;
        self.buf.truncate(at);
        Some(at - before)
    }

    /// A head at the start of `head`, read line by line up to its blank line: its
    /// pieces, and the state its framing says; the head's length, or None (and
    /// nothing emitted) when `head` ends before its blank line.
    fn read_head(
        &mut self,
        head: &[u8],
        emit: &mut dyn FnMut(Piece<'_>),
    ) -> Result<Option<usize>, Malformed> {
        let Some(line_end) = memchr::memchr(b'\n', head) else {
            return Ok(None);
        };
        let status = status_of(
            head[..line_end]
                .strip_suffix(b"\r")
                .unwrap_or(&head[..line_end]),
        )?;
        let mut found = Found::new();
        self.names.clear();
        let mut at = line_end + 1;
        let len = loop {
            let Some(n) = memchr::memchr(b'\n', &head[at..]) else {
                return Ok(None);
            };
            let line_end = at + n;
            let line = &head[at..line_end];
            let line_at = at;
            at = line_end + 1;
            if line == b"\r" {
                break at; // the blank line
            }
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let colon = memchr::memchr(b':', line).ok_or(Malformed("a field line without ':'"))?;
            let raw = &line[colon + 1..];
            let value = raw.trim_ascii();
            let value_at = line_at + colon + 1 + (raw.len() - raw.trim_ascii_start().len());
            self.field(
                status,
                &line[..colon],
                value_at..value_at + value.len(),
                head,
                &mut found,
            )?;
        };
        self.finish_head(status, head, &found, emit);
        Ok(Some(len))
    }

    /// A record (`http1/record.rs`) at the start of `data`, read as `read_head` reads
    /// text: its length up to the body.
    fn read_record(
        &mut self,
        data: &[u8],
        emit: &mut dyn FnMut(Piece<'_>),
    ) -> Result<usize, Malformed> {
        let mut found = Found::new();
        self.names.clear();
        let read = record::read(data, |status, field| match field.name {
            record::Name::Own(tag) => {
                let lower = record::OWN[usize::from(tag & 0x7f)];
                let role = if tag == record::CONTENT_LENGTH {
                    Role::Length
                } else {
                    Role::Kept
                };
                found.add(Name::Known(lower), role, field.value, data)
            }
            record::Name::Raw(name) => self.field(status, name, field.value, data, &mut found),
        })?;
        let Some((status, len)) = read else {
            return Err(Malformed("a record cut short or out of its bounds"));
        };
        self.finish_head(status, data, &found, emit);
        Ok(len)
    }

    /// One field of a head, its name as written and its value at `value` in `head`:
    /// kept (its name lowercased) or dropped, and what it says of the framing.
    fn field(
        &mut self,
        status: u16,
        name: &[u8],
        value: Range<usize>,
        head: &[u8],
        found: &mut Found,
    ) -> Result<(), Malformed> {
        let (name, role) = if let Some((lower, role)) = known(name) {
            (Name::Known(lower), role)
        } else {
            let name_at = self.names.len();
            self.names.extend_from_slice(name);
            self.names[name_at..].make_ascii_lowercase();
            let lower = &self.names[name_at..];
            let role = if status == 101 && lower == b"sec-websocket-accept" {
                Role::Dropped
            } else {
                role_of(lower)
            };
            (Name::Copied(name_at..self.names.len()), role)
        };
        found.add(name, role, value, head)
    }

    /// Emits the head `found` in `head` describes, and moves on to its body.
    fn finish_head(
        &mut self,
        status: u16,
        head: &[u8],
        found: &Found,
        emit: &mut dyn FnMut(Piece<'_>),
    ) {
        let fields: SmallVec<[(&[u8], &[u8]); 12]> = found
            .spans
            .iter()
            .map(|(n, v)| {
                let name = match n {
                    Name::Known(name) => name,
                    Name::Copied(range) => &self.names[range.clone()],
                };
                (name, &head[v.clone()])
            })
            .collect();
        if (100..200).contains(&status) && status != 101 {
            emit(Piece::Informational {
                status,
                fields: &fields,
            });
            self.state = State::Head;
        } else if status == 101 {
            emit(Piece::Head {
                status: 200,
                fields: &fields,
                end: false,
            });
            self.state = State::Tunnel;
        } else {
            let no_body = self.head_request || status == 204 || status == 304;
            self.state = if no_body || found.length == Some(0) {
                State::Done
            } else if found.chunked {
                State::Chunks(Chunk::Size)
            } else if let Some(length) = found.length {
                State::Length(length)
            } else {
                State::UntilClose
            };
            emit(Piece::Head {
                status,
                fields: &fields,
                end: self.state == State::Done,
            });
        }
    }

    fn read_chunks<'d>(
        &mut self,
        chunk: Chunk,
        data: &'d [u8],
        emit: &mut dyn FnMut(Piece<'_>),
    ) -> Result<&'d [u8], Malformed> {
        match chunk {
            Chunk::Size => {
                let before = self.buf.len();
                self.buf.extend_from_slice(data);
                let Some(at) = memmem::find(&self.buf, b"\r\n") else {
                    if self.buf.len() > 64 {
                        return Err(Malformed("a chunk size line over 64 bytes"));
                    }
                    return Ok(&[]);
                };
                let line = &self.buf[..at];
                let digits = line
                    .split(|&b| b == b';')
                    .next()
                    .unwrap_or(line)
                    .trim_ascii();
                let size = std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| u64::from_str_radix(d, 16).ok())
                    .ok_or(Malformed("a chunk size that is not hexadecimal"))?;
                let used = at + 2 - before;
                self.buf.clear();
                self.state = State::Chunks(if size == 0 {
                    Chunk::Trailers
                } else {
                    Chunk::Data(size)
                });
                Ok(&data[used..])
            }
            Chunk::Data(left) => {
                let take = usize::try_from(left).map_or(data.len(), |l| l.min(data.len()));
                emit(Piece::Data {
                    bytes: &data[..take],
                    end: false,
                });
                let left = left - take as u64;
                self.state = State::Chunks(if left == 0 {
                    Chunk::DataEnd(2)
                } else {
                    Chunk::Data(left)
                });
                Ok(&data[take..])
            }
            Chunk::DataEnd(left) => {
                let expected: &[u8] = if left == 2 { b"\r\n" } else { b"\n" };
                let take = expected.len().min(data.len());
                if data[..take] != expected[..take] {
                    return Err(Malformed("chunk data not followed by CRLF"));
                }
                let left = left - u8::try_from(take).unwrap_or(left);
                self.state = State::Chunks(if left == 0 {
                    Chunk::Size
                } else {
                    Chunk::DataEnd(left)
                });
                Ok(&data[take..])
            }
            Chunk::Trailers => {
                // No trailers: the block is just CRLF.
                if self.buf.is_empty() && data.starts_with(b"\r\n") {
                    self.state = State::Done;
                    emit(Piece::Data {
                        bytes: &[],
                        end: true,
                    });
                    return Ok(&data[2..]);
                }
                if self.buf == b"\r" && data.starts_with(b"\n") {
                    self.buf.clear();
                    self.state = State::Done;
                    emit(Piece::Data {
                        bytes: &[],
                        end: true,
                    });
                    return Ok(&data[1..]);
                }
                // Trailer lines end with a blank line: put a fake status line in
                // front so that `take_block` finds "\r\n\r\n" in an empty block too.
                let Some(used) = self.take_trailers(data) else {
                    return Ok(&[]);
                };
                self.emit_trailers(emit)?;
                Ok(&data[used..])
            }
        }
    }

    fn take_trailers(&mut self, data: &[u8]) -> Option<usize> {
        if self.buf.is_empty() && data.first() == Some(&b'\r') && data.len() == 1 {
            self.buf.push(b'\r');
            return None;
        }
        self.take_block(data)
    }

    fn emit_trailers(&mut self, emit: &mut dyn FnMut(Piece<'_>)) -> Result<(), Malformed> {
        let block = std::mem::take(&mut self.buf);
        self.names.clear();
        let mut spans = Vec::new();
        for line in block[..block.len() - 2].split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let colon =
                memchr::memchr(b':', line).ok_or(Malformed("a trailer line without ':'"))?;
            let at = self.names.len();
            self.names
                .extend(line[..colon].iter().map(u8::to_ascii_lowercase));
            spans.push((at..self.names.len(), line[colon + 1..].trim_ascii()));
        }
        let fields: Vec<(&[u8], &[u8])> = spans
            .iter()
            .map(|(n, v)| (&self.names[n.clone()], *v))
            .collect();
        emit(Piece::Trailers { fields: &fields });
        self.state = State::Done;
        Ok(())
    }
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
