//! A whole answer as an HTTP/2 stream's connection writes it: its status and
//! fields already apart, so that the session frames them without reading HTTP/1.1
//! text back (`http2/answer.rs` reads both).
//!
//! The core's encoder (`http1::encode::encode_response`) writes this instead of
//! the HTTP/1.1 head when the answer's `Framing` says it goes to an HTTP/2 stream,
//! and so does a hosted app's cycle for a whole answer (`write_head`, its body
//! after it); everything else (streamed answers, what Python writes, the
//! `100 Continue`) stays HTTP/1.1 text. The fields are the ones the HTTP/1.1 head
//! would have had, in its order and spelling (so `answer.rs` applies the same rules
//! to both), less `Connection`, which HTTP/2 drops anyway. (It lives beside the
//! encoder that writes it: `http2` uses `http1`, not the other way round.)
//!
//! ```text
//! 0x00                        no HTTP/1.1 head starts with it
//! status                      u16, big-endian
//! per field: tag              u8: 1..=127 the name's length, or 0x80 | k for
//!                             veter's own name OWN[k]
//!            value length     u16, big-endian
//!            the field as HTTP/1.1 writes it: name ": " value "\r\n"
//! 0x00                        the end of the fields
//! body                        as its content-length says
//! ```
//!
//! Each field keeps its HTTP/1.1 line so that the encoder copies the lines it
//! keeps ready (`Server`, `Date`, the request id) as they are, and the lengths in
//! front of it so that the reader finds the name and value without a search. A tag
//! names veter's own fields so that the reader takes their lowercase name and
//! role without comparing bytes. An answer with a name or value too long for its
//! length byte(s) is written as HTTP/1.1 text instead. A record is handed to the
//! session in one write, whole (`Connection::settle_stream`): one cut short is
//! malformed, not waited for.

use super::encode::{status_forbids_body, Common, Parts, Sent};

/// The first byte of a record.
pub const MARK: u8 = 0;

/// veter's own names, lowercase, by their tag's low bits.
pub const OWN: [&[u8]; 4] = [b"server", b"date", b"content-type", b"content-length"];
const SERVER: u8 = 0x80;
const DATE: u8 = 0x81;
const CONTENT_TYPE: u8 = 0x82;
/// The tag of `content-length`, whose value frames the body.
pub const CONTENT_LENGTH: u8 = 0x83;

/// The longest name a tag gives the length of.
const MAX_NAME: usize = 0x7f;
/// `Server: ` and the line's CRLF.
const SERVER_LINE: usize = 10;

/// Whether every field of `parts` fits the record's lengths.
pub fn fits(parts: &Parts<'_>, common: &Common<'_>) -> bool {
    fits_head(parts.headers, parts.content_type, common)
}

/// Whether a head of `headers` (and `content_type`) fits the record's lengths.
pub fn fits_head<N: AsRef<[u8]>, V: AsRef<[u8]>>(
    headers: &[(N, V)],
    content_type: Option<&str>,
    common: &Common<'_>,
) -> bool {
    let value = |v: &[u8]| u16::try_from(v.len()).is_ok();
    let field = |n: &[u8], v: &[u8]| !n.is_empty() && n.len() <= MAX_NAME && value(v);
    headers.iter().all(|(n, v)| field(n.as_ref(), v.as_ref()))
        && content_type.map_or(true, |ct| value(ct.as_bytes()))
        && (common.server_line.is_empty()
            || (common.server_line.len() >= SERVER_LINE && value(common.server_line)))
        && (common.request_id.is_empty()
            || (!common.request_id_name.is_empty()
                && common.request_id_name.len() <= MAX_NAME
                && value(common.request_id)))
}

/// Appends `parts` as a record (the caller checked `fits`); what `encode_response`
/// would have sent.
pub fn write(out: &mut Vec<u8>, parts: &Parts<'_>, head_request: bool, common: Common<'_>) -> Sent {
    let status = parts.status;
    let no_body = status_forbids_body(status);
    let send_body = !no_body && !head_request;
    out.reserve(128 + if send_body { parts.body.len() } else { 0 });
    let length = (!no_body).then_some(parts.body.len() as u64);
    write_head(
        out,
        status,
        parts.content_type,
        parts.headers,
        length,
        common,
    );
    if send_body {
        out.extend_from_slice(parts.body);
    }
    Sent {
        status,
        body_bytes: if send_body { parts.body.len() } else { 0 },
    }
}

/// Appends a record's status and fields, up to its body (the caller checked
/// `fits_head`): the fields `encode::encode_head` writes as text, in its order,
/// with `length` as the `content-length` (None: none). A value is written without
/// the whitespace around it, as the reader of the text takes it (RFC 9113 8.2.1:
/// an HTTP/2 field value neither starts nor ends with it).
pub fn write_head<N: AsRef<[u8]>, V: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    status: u16,
    content_type: Option<&str>,
    headers: &[(N, V)],
    length: Option<u64>,
    common: Common<'_>,
) {
    out.push(MARK);
    out.extend_from_slice(&status.to_be_bytes());
    // As `encode_response`: a handler's own Server, Date or request id wins.
    let custom = !headers.is_empty();
    let has = |name: &str| {
        custom
            && headers
                .iter()
                .any(|(n, _)| n.as_ref().eq_ignore_ascii_case(name.as_bytes()))
    };
    if !common.server_line.is_empty() && !has("server") {
        line(out, SERVER, common.server_line, SERVER_LINE);
    }
    if !has("date") {
        line(out, DATE, common.date_line, "Date: \r\n".len());
    }
    if !(common.request_id.is_empty() || has(common.request_id_name)) {
        let name = tag(common.request_id_name.len());
        field(out, name, common.request_id_prefix, common.request_id);
    }
    if let Some(ct) = content_type {
        if !status_forbids_body(status) || status == 304 {
            field(out, CONTENT_TYPE, b"Content-Type: ", ct.as_bytes());
        }
    }
    if let Some(length) = length {
        let mut digits = itoa::Buffer::new();
        field(
            out,
            CONTENT_LENGTH,
            b"Content-Length: ",
            digits.format(length).as_bytes(),
        );
    }
    for (name, value) in headers {
        let name = name.as_ref();
        let value = value.as_ref().trim_ascii();
        out.extend_from_slice(&head(tag(name.len()), value.len()));
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.push(0);
}

/// The tag of a name this long (`fits` checked it is at most `MAX_NAME`).
#[allow(clippy::cast_possible_truncation)]
fn tag(name_len: usize) -> u8 {
    name_len as u8
}

/// A field's tag and value length.
#[allow(clippy::cast_possible_truncation)] // checked by `fits`
fn head(tag: u8, value_len: usize) -> [u8; 3] {
    let [hi, lo] = (value_len as u16).to_be_bytes();
    [tag, hi, lo]
}

/// A field from one of `Common`'s lines, copied whole (`framing`: the bytes of the
/// line that are not its value).
fn line(out: &mut Vec<u8>, tag: u8, line: &[u8], framing: usize) {
    out.extend_from_slice(&head(tag, line.len() - framing));
    out.extend_from_slice(line);
}

/// A field of veter's own, `name: ` given with its colon and space.
fn field(out: &mut Vec<u8>, tag: u8, name: &[u8], value: &[u8]) {
    out.extend_from_slice(&head(tag, value.len()));
    out.extend_from_slice(name);
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// A field's name in a record.
pub enum Name<'a> {
    /// One of `OWN`, by its tag.
    Own(u8),
    /// As the handler wrote it.
    Raw(&'a [u8]),
}

/// One field read from a record: its name and where its value is.
pub struct Field<'a> {
    pub name: Name<'a>,
    pub value: std::ops::Range<usize>,
}

/// Reads a record's fields from `data` (which starts with `MARK`): its status, then
/// each field through `each`; the length of the record up to its body. None when
/// `data` ends inside it, its status is not three digits, or a tag names no field.
pub fn read<E>(
    data: &[u8],
    mut each: impl FnMut(u16, Field<'_>) -> Result<(), E>,
) -> Result<Option<(u16, usize)>, E> {
    let Some(&[_, hi, lo]) = data.get(..3) else {
        return Ok(None);
    };
    let status = u16::from_be_bytes([hi, lo]);
    if !(100..1000).contains(&status) {
        return Ok(None);
    }
    let mut at = 3;
    loop {
        let Some(&[tag, hi, lo]) = data.get(at..at + 3) else {
            // (The end's single byte is always followed by the rest of the record.)
            return Ok(if data.get(at) == Some(&0) {
                Some((status, at + 1))
            } else {
                None
            });
        };
        if tag == 0 {
            return Ok(Some((status, at + 1)));
        }
        let name_at = at + 3;
        let (name, name_len) = if tag & 0x80 == 0 {
            (None, usize::from(tag))
        } else {
            match OWN.get(usize::from(tag & 0x7f)) {
                Some(own) => (Some(tag), own.len()),
                None => return Ok(None),
            }
        };
        let value_at = name_at + name_len + 2;
        let end = value_at + usize::from(u16::from_be_bytes([hi, lo]));
        if end + 2 > data.len() {
            return Ok(None);
        }
        let name = match name {
            Some(tag) => Name::Own(tag),
            None => Name::Raw(&data[name_at..name_at + name_len]),
        };
        each(
            status,
            Field {
                name,
                value: value_at..end,
            },
        )?;
        at = end + 2;
    }
}
