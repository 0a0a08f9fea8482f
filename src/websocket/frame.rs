//! WebSocket frames (RFC 6455 section 5), sans-IO: reading a client's masked
//! frames and writing the server's unmasked ones.
//!
//! The reader is strict where the RFC says MUST: reserved bits (RSV1 is allowed only
//! when permessage-deflate was negotiated, and only the caller knows where),
//! unknown opcodes, unmasked client frames, fragmented or oversized control frames
//! and 64-bit lengths with the top bit set are protocol errors.
//! A frame longer than the message limit is refused from its header, before any
//! of its payload is buffered.

/// Frame opcodes (RFC 6455 section 5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    Continuation,
    Text,
    Binary,
    Close,
    Ping,
    Pong,
}

impl Opcode {
    fn from_bits(bits: u8) -> Option<Self> {
        Some(match bits {
            0x0 => Opcode::Continuation,
            0x1 => Opcode::Text,
            0x2 => Opcode::Binary,
            0x8 => Opcode::Close,
            0x9 => Opcode::Ping,
            0xA => Opcode::Pong,
            _ => return None,
        })
    }

    pub fn bits(self) -> u8 {
        match self {
            Opcode::Continuation => 0x0,
            Opcode::Text => 0x1,
            Opcode::Binary => 0x2,
            Opcode::Close => 0x8,
            Opcode::Ping => 0x9,
            Opcode::Pong => 0xA,
        }
    }

    pub fn is_control(self) -> bool {
        matches!(self, Opcode::Close | Opcode::Ping | Opcode::Pong)
    }
}

/// Why a connection must be failed, as a close code and a reason for the peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub code: u16,
    pub reason: &'static str,
}

pub const PROTOCOL_ERROR: u16 = 1002;
pub const INVALID_PAYLOAD: u16 = 1007;
pub const TOO_BIG: u16 = 1009;

fn protocol_error(reason: &'static str) -> Failure {
    Failure {
        code: PROTOCOL_ERROR,
        reason,
    }
}

/// A frame's header, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub fin: bool,
    /// RSV1: with permessage-deflate, the first frame of a compressed message.
    pub rsv1: bool,
    pub opcode: Opcode,
    pub mask: [u8; 4],
    /// Bytes the header itself took.
    pub header_len: usize,
    pub payload_len: usize,
}

/// Reads a frame header from the start of `data`: `Ok(None)` when more bytes are
/// needed. `max_payload` bounds a data frame's payload; `rsv1_allowed` when an
/// extension (permessage-deflate) gave RSV1 a meaning.
pub fn read_header(
    data: &[u8],
    max_payload: usize,
    rsv1_allowed: bool,
) -> Result<Option<Header>, Failure> {
    if data.len() < 2 {
        return Ok(None);
    }
    let (b0, b1) = (data[0], data[1]);
    let reserved = if rsv1_allowed { 0x30 } else { 0x70 };
    if b0 & reserved != 0 {
        return Err(protocol_error("reserved bits set without an extension"));
    }
    let opcode = Opcode::from_bits(b0 & 0x0F).ok_or_else(|| protocol_error("unknown opcode"))?;
    let fin = b0 & 0x80 != 0;
    if b1 & 0x80 == 0 {
        return Err(protocol_error("client frames must be masked"));
    }
    let short = u64::from(b1 & 0x7F);
    let (len, at) = match short {
        126 => {
            if data.len() < 4 {
                return Ok(None);
            }
            (u64::from(u16::from_be_bytes([data[2], data[3]])), 4)
        }
        127 => {
            if data.len() < 10 {
                return Ok(None);
            }
            let mut be = [0u8; 8];
            be.copy_from_slice(&data[2..10]);
            let n = u64::from_be_bytes(be);
            if n >> 63 != 0 {
                return Err(protocol_error("64-bit payload length has its top bit set"));
            }
            (n, 10)
        }
        n => (n, 2),
    };
    let rsv1 = b0 & 0x40 != 0;
    if rsv1 && !matches!(opcode, Opcode::Text | Opcode::Binary) {
        return Err(protocol_error(
            "RSV1 set on a frame that does not start a message",
        ));
    }
    if opcode.is_control() {
        if !fin {
            return Err(protocol_error("control frames cannot be fragmented"));
        }
        if len > 125 {
            return Err(protocol_error("control frame payload over 125 bytes"));
        }
    } else if len > max_payload as u64 {
        return Err(Failure {
            code: TOO_BIG,
            reason: "message too big",
        });
    }
    if data.len() < at + 4 {
        return Ok(None);
    }
    let mut mask = [0u8; 4];
    mask.copy_from_slice(&data[at..at + 4]);
    Ok(Some(Header {
        fin,
        rsv1,
        opcode,
        mask,
        header_len: at + 4,
        // Bounded by max_payload (a usize) or 125 above.
        payload_len: usize::try_from(len).unwrap_or(usize::MAX),
    }))
}

/// Appends `payload` unmasked with `mask` to `out`. `offset` is the position of
/// `payload[0]` within its frame's payload (so a frame may be unmasked in pieces).
pub fn unmask_into(payload: &[u8], mask: [u8; 4], offset: usize, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(payload);
    unmask(&mut out[start..], mask, offset);
}

/// XORs `data` in place with `mask`, starting at mask position `offset % 4`.
pub fn unmask(data: &mut [u8], mask: [u8; 4], offset: usize) {
    let mut rotated = [0u8; 4];
    for (i, byte) in rotated.iter_mut().enumerate() {
        *byte = mask[(offset + i) % 4];
    }
    let word = u64::from_ne_bytes([
        rotated[0], rotated[1], rotated[2], rotated[3], rotated[0], rotated[1], rotated[2],
        rotated[3],
    ]);
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut v = [0u8; 8];
        v.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(v) ^ word).to_ne_bytes());
    }
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= rotated[i % 4];
    }
}

/// Appends a server frame (never masked) holding `payload` to `out`; `compressed`
/// sets RSV1 (a permessage-deflate message).
pub fn write_frame(out: &mut Vec<u8>, opcode: Opcode, fin: bool, compressed: bool, payload: &[u8]) {
    out.reserve(payload.len() + 10);
    out.push(if fin { 0x80 } else { 0 } | if compressed { 0x40 } else { 0 } | opcode.bits());
    let n = payload.len();
    if n < 126 {
        // Fits in seven bits.
        out.push(u8::try_from(n).unwrap_or(0));
    } else if let Ok(short) = u16::try_from(n) {
        out.push(126);
        out.extend_from_slice(&short.to_be_bytes());
    } else {
        out.push(127);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
    out.extend_from_slice(payload);
}

/// Whether a close code may be sent by a peer (RFC 6455 section 7.4 and the IANA
/// registry: 1004-1006 and 1015 are reserved, never sent on the wire).
pub fn is_valid_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// Reads a close frame's payload: `(code, reason)`; an empty payload is 1005.
pub fn parse_close(payload: &[u8]) -> Result<(u16, String), Failure> {
    match payload.len() {
        0 => Ok((1005, String::new())),
        1 => Err(protocol_error("close frame with a one-byte payload")),
        _ => {
            let code = u16::from_be_bytes([payload[0], payload[1]]);
            if !is_valid_close_code(code) {
                return Err(protocol_error("invalid close code"));
            }
            let reason = std::str::from_utf8(&payload[2..]).map_err(|_| Failure {
                code: INVALID_PAYLOAD,
                reason: "close reason is not valid UTF-8",
            })?;
            Ok((code, reason.to_owned()))
        }
    }
}

/// The payload of a close frame with `code` and `reason` (cut to fit 125 bytes at
/// a character boundary); 1005 means "no status": an empty payload.
pub fn close_payload(code: u16, reason: &str) -> Vec<u8> {
    if code == 1005 {
        return Vec::new();
    }
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = Vec::with_capacity(2 + end);
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&reason.as_bytes()[..end]);
    out
}

/// UTF-8 check of a text message whose bytes arrive in pieces (reads, frames,
/// inflated output): each piece is checked once, as it arrives, so bad bytes fail
/// the message at once however long it is. A character cut between pieces is kept
/// (at most three bytes) and finished with the next piece's first bytes.
#[derive(Default)]
pub struct Utf8Check {
    cut: [u8; 4],
    cut_len: usize,
}

fn invalid_text() -> Failure {
    Failure {
        code: INVALID_PAYLOAD,
        reason: "text message is not valid UTF-8",
    }
}

/// Bytes of a character starting with `lead` (0 for a byte no character starts with).
fn char_width(lead: u8) -> usize {
    match lead {
        0x00..=0x7F => 1,
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 0,
    }
}

impl Utf8Check {
    /// Checks the next `piece` of the message; `complete` when it is the last (a cut
    /// character is then an error too).
    pub fn feed(&mut self, piece: &[u8], complete: bool) -> Result<(), Failure> {
        let mut rest = piece;
        if self.cut_len > 0 {
            let width = char_width(self.cut[0]);
            let take = (width - self.cut_len).min(rest.len());
            self.cut[self.cut_len..self.cut_len + take].copy_from_slice(&rest[..take]);
            self.cut_len += take;
            rest = &rest[take..];
            match std::str::from_utf8(&self.cut[..self.cut_len]) {
                Ok(_) => self.cut_len = 0,
                Err(e) if e.error_len().is_some() => return Err(invalid_text()),
                // Still cut (the piece was shorter than the character's rest).
                Err(_) => {
                    return if complete {
                        Err(invalid_text())
                    } else {
                        Ok(())
                    }
                }
            }
        }
        match std::str::from_utf8(rest) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_some() || complete => Err(invalid_text()),
            Err(e) => {
                let tail = &rest[e.valid_up_to()..];
                self.cut[..tail.len()].copy_from_slice(tail);
                self.cut_len = tail.len();
                Ok(())
            }
        }
    }

    pub fn reset(&mut self) {
        self.cut_len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(opcode: u8, fin: bool, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
        let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
        let n = payload.len();
        if let Ok(short @ 0..=125) = u8::try_from(n) {
            out.push(0x80 | short);
        } else if let Ok(medium) = u16::try_from(n) {
            out.push(0x80 | 0x7e);
            out.extend_from_slice(&medium.to_be_bytes());
        } else {
            out.push(0x80 | 0x7f);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
        out.extend_from_slice(&mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        out
    }

    #[test]
    fn reads_and_unmasks_frames_of_each_length_form() {
        for n in [0usize, 5, 125, 126, 1000, 65535, 65536, 70000] {
            let payload: Vec<u8> = (0..n).map(|i| u8::try_from(i % 251).unwrap_or(0)).collect();
            let frame = masked(0x2, true, &payload, [1, 2, 3, 250]);
            let h = read_header(&frame, 1 << 20, false).unwrap().unwrap();
            assert_eq!((h.fin, h.opcode, h.payload_len), (true, Opcode::Binary, n));
            let mut out = Vec::new();
            unmask_into(&frame[h.header_len..], h.mask, 0, &mut out);
            assert_eq!(out, payload);
            // Every prefix of the header asks for more bytes.
            for cut in 0..h.header_len {
                assert_eq!(read_header(&frame[..cut], 1 << 20, false), Ok(None));
            }
        }
    }

    #[test]
    fn unmasking_in_pieces_matches_unmasking_at_once() {
        let payload: Vec<u8> = (0..101u8).collect();
        let frame = masked(0x1, true, &payload, [9, 8, 7, 6]);
        let h = read_header(&frame, 1000, false).unwrap().unwrap();
        let body = &frame[h.header_len..];
        for split in [1, 3, 8, 50, 100] {
            let mut out = Vec::new();
            unmask_into(&body[..split], h.mask, 0, &mut out);
            unmask_into(&body[split..], h.mask, split, &mut out);
            assert_eq!(out, payload);
        }
    }

    #[test]
    fn rejects_what_the_rfc_forbids() {
        let cases: [(&[u8], u16); 7] = [
            (&[0xC1, 0x80, 0, 0, 0, 0], PROTOCOL_ERROR), // RSV1
            (&[0x83, 0x80, 0, 0, 0, 0], PROTOCOL_ERROR), // opcode 3
            (&[0x81, 0x00], PROTOCOL_ERROR),             // unmasked
            (&[0x09, 0x80, 0, 0, 0, 0], PROTOCOL_ERROR), // fragmented ping
            (&[0x89, 0xFE, 0, 126, 0, 0, 0, 0], PROTOCOL_ERROR), // ping of 126
            (
                &[0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0],
                PROTOCOL_ERROR,
            ), // top length bit
            (&[0x82, 0xFE, 0x10, 0x00, 0, 0, 0, 0], TOO_BIG), // 4096 > 1000
        ];
        for (bytes, code) in cases {
            assert_eq!(
                read_header(bytes, 1000, false).unwrap_err().code,
                code,
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn writes_unmasked_frames() {
        let mut out = Vec::new();
        write_frame(&mut out, Opcode::Text, true, false, b"hi");
        assert_eq!(out, b"\x81\x02hi");
        out.clear();
        write_frame(&mut out, Opcode::Binary, false, false, &[0; 300]);
        assert_eq!(&out[..4], &[0x02, 126, 1, 44]);
        out.clear();
        write_frame(&mut out, Opcode::Binary, true, false, &vec![0; 70000]);
        assert_eq!(&out[..10], &[0x82, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70]);
    }

    #[test]
    fn close_payloads() {
        assert_eq!(parse_close(b""), Ok((1005, String::new())));
        assert_eq!(parse_close(b"\x03\xe8bye"), Ok((1000, "bye".into())));
        assert_eq!(parse_close(b"\x03").unwrap_err().code, PROTOCOL_ERROR);
        assert_eq!(parse_close(b"\x03\xed").unwrap_err().code, PROTOCOL_ERROR); // 1005
        assert_eq!(
            parse_close(b"\x03\xe8\xff").unwrap_err().code,
            INVALID_PAYLOAD
        );
        for code in [999u16, 1004, 1006, 1015, 1016, 2999, 5000] {
            assert!(!is_valid_close_code(code), "{code}");
        }
        for code in [1000u16, 1001, 1003, 1007, 1011, 3000, 4999] {
            assert!(is_valid_close_code(code), "{code}");
        }
        let long = "é".repeat(100);
        let p = close_payload(1000, &long);
        assert!(p.len() <= 125);
        assert!(std::str::from_utf8(&p[2..]).is_ok());
        assert!(close_payload(1005, "x").is_empty());
    }

    #[test]
    fn rsv1_only_where_deflate_allows_it() {
        let compressed_text = [0xC1, 0x80, 0, 0, 0, 0];
        let h = read_header(&compressed_text, 1000, true).unwrap().unwrap();
        assert!(h.rsv1);
        for bytes in [
            [0xC0, 0x80, 0, 0, 0, 0], // RSV1 on a continuation
            [0xC9, 0x80, 0, 0, 0, 0], // RSV1 on a ping
            [0xA1, 0x80, 0, 0, 0, 0], // RSV2
            [0x91, 0x80, 0, 0, 0, 0], // RSV3
        ] {
            assert_eq!(
                read_header(&bytes, 1000, true).unwrap_err().code,
                PROTOCOL_ERROR
            );
        }
        let mut out = Vec::new();
        write_frame(&mut out, Opcode::Text, true, true, b"x");
        assert_eq!(out, b"\xc1\x01x");
    }

    #[test]
    fn utf8_check_accepts_cut_characters_until_the_end() {
        let text = "aκόσμε€𝄞".as_bytes();
        // Every way of cutting the text in two or three pieces is accepted.
        for i in 0..=text.len() {
            for j in i..=text.len() {
                let mut check = Utf8Check::default();
                assert!(check.feed(&text[..i], false).is_ok());
                assert!(check.feed(&text[i..j], false).is_ok());
                assert!(check.feed(&text[j..], true).is_ok(), "{i} {j}");
            }
        }
        let mut check = Utf8Check::default();
        assert!(check.feed(&text[..2], true).is_err()); // ends inside κ
        let mut check = Utf8Check::default();
        assert!(check.feed(b"ab\xff", false).is_err());
        let mut check = Utf8Check::default();
        assert!(check.feed(b"\xed\xa0\x80", false).is_err()); // a surrogate
    }

    #[test]
    fn utf8_check_fails_at_the_first_bad_piece() {
        // A surrogate cut after its first byte fails when its second arrives.
        let mut check = Utf8Check::default();
        assert!(check.feed(b"ok \xed", false).is_ok());
        assert!(check.feed(b"\xa0", false).is_err());
        // So does a four-byte character past U+10FFFF, one byte at a time.
        let mut check = Utf8Check::default();
        assert!(check.feed(b"\xf4", false).is_ok());
        assert!(check.feed(b"\x90", false).is_err());
        // A continuation byte with nothing to continue fails in the piece it is in.
        let mut check = Utf8Check::default();
        assert!(check.feed(b"fine", false).is_ok());
        assert!(check.feed(b"\x80 and more", false).is_err());
    }
}
