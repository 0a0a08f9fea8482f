//! permessage-deflate (RFC 7692), sans-IO: the handshake's negotiation, and
//! compressing and inflating message payloads.
//!
//! Negotiation: the client's `Sec-WebSocket-Extensions` lists offers in its order
//! of preference; the first `permessage-deflate` offer whose parameters are all
//! known, unrepeated and valid is accepted, and the answer says what both sides
//! promise. An offer that breaks a rule is declined (RFC 7692 section 5), never
//! half-accepted.
//!
//! Windows: the server compresses with at most its configured window, or less when
//! the client asks (`server_max_window_bits`). zlib cannot compress with a 256-byte
//! window (8 bits), so when 8 is agreed the server writes stored blocks, which refer
//! to no earlier bytes and are valid for any window. The server inflates with the
//! largest window (15), which reads whatever window the client compresses with, so
//! it never needs to ask for `client_max_window_bits`.
//!
//! Without context takeover a message owes nothing to the ones before, so any
//! compressor or inflater will do: those connections borrow them from a per-thread
//! pool for one message and give them back reset, instead of keeping their own. The
//! pool's few are hot in the CPU cache, where a thousand connections' own states
//! (about 180 KiB each) are cold; measured with 1,000 clients echoing 2 KiB of JSON,
//! resetting each connection's own compressor cost more than the compression. A
//! connection with context takeover keeps its own, as it must.
//!
//! Limits: inflating stops as soon as the message passes its size limit, and its
//! buffer never grows past the limit (plus one byte), so a small frame that would
//! inflate to gigabytes costs at most the limit in memory.

use std::cell::RefCell;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::frame::{Failure, INVALID_PAYLOAD, TOO_BIG};

/// What every deflated message ends with before the sender strips it (RFC 7692 7.2.1).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// The server's side of the negotiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Largest compression window the server uses, 9..=15 (memory per connection).
    pub window_bits: u8,
    /// zlib level, 1 (fastest) ..= 9 (smallest).
    pub level: u32,
    /// Messages shorter than this are sent uncompressed.
    pub min_size: usize,
}

/// What both sides promised for one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Agreement {
    /// The server resets its compressor after each message.
    pub server_no_context_takeover: bool,
    /// The client resets its compressor after each message (so the server may
    /// reset its inflater too).
    pub client_no_context_takeover: bool,
    /// The server's compression window, 8..=15.
    pub server_window_bits: u8,
}

impl Agreement {
    /// The `Sec-WebSocket-Extensions` value of the `101`.
    pub fn header(&self) -> String {
        let mut out = String::from("permessage-deflate");
        if self.server_no_context_takeover {
            out.push_str("; server_no_context_takeover");
        }
        if self.client_no_context_takeover {
            out.push_str("; client_no_context_takeover");
        }
        if self.server_window_bits < 15 {
            out.push_str("; server_max_window_bits=");
            out.push_str(&self.server_window_bits.to_string());
        }
        out
    }
}

/// One offer's parameters, as the client sent them.
#[derive(Default)]
struct Offer {
    server_no_context_takeover: bool,
    client_no_context_takeover: bool,
    server_max_window_bits: Option<u8>,
    client_max_window_bits: bool,
}

/// The agreement for the first acceptable `permessage-deflate` offer in `offers`
/// (the header's values joined with commas), or None to decline them all.
pub fn negotiate(offers: &str, settings: &Settings) -> Option<Agreement> {
    for element in split_outside_quotes(offers, b',') {
        let mut parts = split_outside_quotes(element, b';').into_iter();
        let name = parts.next().unwrap_or("").trim();
        if !name.eq_ignore_ascii_case("permessage-deflate") {
            continue;
        }
        let Some(offer) = read_offer(parts) else {
            continue;
        };
        let server_window_bits = offer
            .server_max_window_bits
            .map_or(settings.window_bits, |asked| {
                asked.min(settings.window_bits)
            });
        // client_max_window_bits, with or without a value, needs no answer: the
        // server inflates with the largest window.
        let _ = offer.client_max_window_bits;
        return Some(Agreement {
            server_no_context_takeover: offer.server_no_context_takeover,
            client_no_context_takeover: offer.client_no_context_takeover,
            server_window_bits,
        });
    }
    None
}

/// An offer's parameters, or None when one is unknown, repeated or has a bad value.
fn read_offer<'a>(params: impl Iterator<Item = &'a str>) -> Option<Offer> {
    let mut offer = Offer::default();
    let mut seen = [false; 4];
    for param in params {
        let (name, value) = match param.split_once('=') {
            Some((n, v)) => (n.trim(), Some(unquote(v.trim())?)),
            None => (param.trim(), None),
        };
        let slot = match name.to_ascii_lowercase().as_str() {
            "server_no_context_takeover" if value.is_none() => {
                offer.server_no_context_takeover = true;
                0
            }
            "client_no_context_takeover" if value.is_none() => {
                offer.client_no_context_takeover = true;
                1
            }
            "server_max_window_bits" => {
                offer.server_max_window_bits = Some(window_bits(value?)?);
                2
            }
            "client_max_window_bits" => {
                if let Some(v) = value {
                    window_bits(v)?;
                }
                offer.client_max_window_bits = true;
                3
            }
            _ => return None,
        };
        if std::mem::replace(&mut seen[slot], true) {
            return None;
        }
    }
    Some(offer)
}

/// A window size as RFC 7692 writes it: "8" to "15", no sign, no leading zero.
fn window_bits(value: &str) -> Option<u8> {
    if value.starts_with('0') || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value
        .parse::<u8>()
        .ok()
        .filter(|bits| (8..=15).contains(bits))
}

/// A token, or a quoted string's content (whose escapes RFC 7692's values never need).
fn unquote(value: &str) -> Option<&str> {
    match value.strip_prefix('"') {
        Some(rest) => rest
            .strip_suffix('"')
            .filter(|inner| !inner.contains(['"', '\\'])),
        None => Some(value),
    }
}

/// Splits `text` at `sep` where it is not inside a quoted string.
fn split_outside_quotes(text: &str, sep: u8) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, b) in text.bytes().enumerate() {
        if b == b'"' {
            quoted = !quoted;
        } else if b == sep && !quoted {
            out.push(&text[start..i]);
            start = i + 1;
        }
    }
    out.push(&text[start..]);
    out
}

/// Compressors and inflaters lent for one message, by (level, window bits) for
/// compressors; at most `POOL_KEEP` of each are kept.
#[derive(Default)]
struct Pool {
    compressors: Vec<((u32, u8), Compress)>,
    inflaters: Vec<Decompress>,
}

const POOL_KEEP: usize = 8;

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// The sending side: compresses whole messages.
pub struct Deflater {
    /// The connection's own compressor (context takeover), or None: one is borrowed
    /// from the pool for each message.
    own: Option<Compress>,
    level: u32,
    bits: u8,
    pub min_size: usize,
}

fn new_compressor((level, bits): (u32, u8)) -> Compress {
    Compress::new_with_window_bits(Compression::new(level), false, bits)
}

impl Deflater {
    pub fn new(agreement: &Agreement, settings: &Settings) -> Self {
        // zlib cannot compress with an 8-bit window: stored blocks need none.
        let (level, bits) = match agreement.server_window_bits {
            8 => (0, 9),
            bits => (settings.level, bits),
        };
        Deflater {
            own: (!agreement.server_no_context_takeover).then(|| new_compressor((level, bits))),
            level,
            bits,
            min_size: settings.min_size,
        }
    }

    /// Appends `data` deflated (the payload of a frame with RSV1 set) to `out`.
    pub fn compress(&mut self, data: &[u8], out: &mut Vec<u8>) {
        if let Some(own) = &mut self.own {
            deflate_message(own, data, out);
            return;
        }
        let key = (self.level, self.bits);
        let borrowed = POOL.with_borrow_mut(|pool| {
            let at = pool.compressors.iter().position(|(k, _)| *k == key)?;
            Some(pool.compressors.swap_remove(at).1)
        });
        let mut compressor = borrowed.unwrap_or_else(|| new_compressor(key));
        deflate_message(&mut compressor, data, out);
        compressor.reset();
        POOL.with_borrow_mut(|pool| {
            if pool.compressors.len() < POOL_KEEP {
                pool.compressors.push((key, compressor));
            }
        });
    }
}

/// Appends `data` deflated with `compress` (a sync flush, TAIL stripped) to `out`.
fn deflate_message(compress: &mut Compress, data: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    let before = compress.total_in();
    loop {
        let done = usize::try_from(compress.total_in() - before).unwrap_or(usize::MAX);
        out.reserve(64 + (data.len() - done) / 2);
        // A sync flush writes everything out and ends with TAIL; it is complete
        // when every input byte is taken and the output did not fill up.
        let status = compress.compress_vec(&data[done..], out, FlushCompress::Sync);
        debug_assert!(status.is_ok(), "deflate never fails on valid state");
        let taken = usize::try_from(compress.total_in() - before).unwrap_or(usize::MAX);
        if taken == data.len() && out.len() < out.capacity() {
            break;
        }
    }
    if out[start..].ends_with(&TAIL) {
        out.truncate(out.len() - TAIL.len());
    }
    if out.len() == start {
        // zlib writes nothing for a second flush with no input in between; an
        // empty message is one empty block (RFC 7692 section 7.2.3.6).
        out.push(0x00);
    }
}

/// The receiving side: inflates a message's frames as their bytes arrive.
pub struct Inflater {
    /// The inflater of the message being read: the connection's own (context
    /// takeover), or one borrowed from the pool until the message ends.
    decompress: Option<Decompress>,
    /// No context takeover: borrow per message.
    borrow: bool,
    /// The client ended its deflate stream (a final block) inside this message.
    ended: bool,
}

fn bad_data() -> Failure {
    Failure {
        code: INVALID_PAYLOAD,
        reason: "invalid compressed data",
    }
}

impl Inflater {
    pub fn new(agreement: &Agreement) -> Self {
        let borrow = agreement.client_no_context_takeover;
        Inflater {
            decompress: (!borrow).then(new_inflater),
            borrow,
            ended: false,
        }
    }

    /// Inflates `input` (part of a compressed message) onto `out`; fails with 1009
    /// as soon as `out` would pass `limit` bytes.
    pub fn inflate(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), Failure> {
        let decompress = self.decompress.get_or_insert_with(|| {
            POOL.with_borrow_mut(|pool| pool.inflaters.pop())
                .unwrap_or_else(new_inflater)
        });
        let before = decompress.total_in();
        loop {
            let taken = usize::try_from(decompress.total_in() - before).unwrap_or(usize::MAX);
            let rest = &input[taken..];
            if self.ended {
                // The client ended its stream (a final block): nothing may follow.
                return if rest.is_empty() {
                    Ok(())
                } else {
                    Err(bad_data())
                };
            }
            if out.len() == out.capacity() {
                // Room grows with what is there (doubling), never past one byte over
                // the limit, which tells "at the limit" from "over it".
                let room = out.len().max(8 * rest.len()).max(1024);
                let room = room.min((limit + 1).saturating_sub(out.len()));
                if room == 0 {
                    return Err(too_big());
                }
                out.reserve_exact(room);
            }
            let status = decompress
                .decompress_vec(rest, out, FlushDecompress::None)
                .map_err(|_| bad_data())?;
            if out.len() > limit {
                return Err(too_big());
            }
            if status == Status::StreamEnd {
                self.ended = true;
            } else if out.len() < out.capacity() {
                // zlib stops early only when the output is full: with room left,
                // every input byte is taken (a cut code waits inside zlib).
                return Ok(());
            }
        }
    }

    /// Ends a message: inflates the stripped tail, then resets when the client
    /// promised not to take its context over (giving a borrowed inflater back) or
    /// ended its stream.
    pub fn finish(&mut self, out: &mut Vec<u8>, limit: usize) -> Result<(), Failure> {
        if !self.ended {
            self.inflate(&TAIL, out, limit)?;
        }
        if let Some(decompress) = &mut self.decompress {
            if self.borrow || self.ended {
                decompress.reset(false);
            }
        }
        self.ended = false;
        if self.borrow {
            if let Some(decompress) = self.decompress.take() {
                POOL.with_borrow_mut(|pool| {
                    if pool.inflaters.len() < POOL_KEEP {
                        pool.inflaters.push(decompress);
                    }
                });
            }
        }
        Ok(())
    }
}

fn new_inflater() -> Decompress {
    Decompress::new_with_window_bits(false, 15)
}

fn too_big() -> Failure {
    Failure {
        code: TOO_BIG,
        reason: "message too big",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: Settings = Settings {
        window_bits: 15,
        level: 1,
        min_size: 0,
    };

    fn agreed(offers: &str) -> Option<Agreement> {
        negotiate(offers, &SETTINGS)
    }

    #[test]
    fn accepts_the_first_valid_offer() {
        let plain = agreed("permessage-deflate").unwrap();
        assert_eq!(plain.header(), "permessage-deflate");
        let a =
            agreed("x-webkit-deflate-frame, permessage-deflate; client_max_window_bits").unwrap();
        assert_eq!(a, plain);
        let a = agreed(
            "permessage-deflate; server_max_window_bits=7, permessage-deflate; server_no_context_takeover",
        )
        .unwrap();
        assert!(a.server_no_context_takeover);
        assert_eq!(a.header(), "permessage-deflate; server_no_context_takeover");
        let a = agreed(
            "PerMessage-Deflate ; client_no_context_takeover ; server_max_window_bits=\"10\"",
        )
        .unwrap();
        assert_eq!(
            a.header(),
            "permessage-deflate; client_no_context_takeover; server_max_window_bits=10"
        );
    }

    #[test]
    fn declines_what_rfc_7692_forbids() {
        for offer in [
            "",
            "deflate-frame",
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; server_max_window_bits=08",
            "permessage-deflate; server_max_window_bits=+9",
            "permessage-deflate; client_max_window_bits=7",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; server_no_context_takeover=1",
            "permessage-deflate; mystery",
            "permessage-deflate; server_max_window_bits=\"10",
        ] {
            assert_eq!(agreed(offer), None, "{offer:?}");
        }
    }

    #[test]
    fn the_server_window_is_the_smaller_of_setting_and_request() {
        let small = Settings {
            window_bits: 12,
            ..SETTINGS
        };
        let a = negotiate("permessage-deflate", &small).unwrap();
        assert_eq!(a.header(), "permessage-deflate; server_max_window_bits=12");
        let a = negotiate("permessage-deflate; server_max_window_bits=9", &small).unwrap();
        assert_eq!(a.server_window_bits, 9);
    }

    fn roundtrip(agreement: Agreement, messages: &[&[u8]]) {
        let mut deflater = Deflater::new(&agreement, &SETTINGS);
        let mut inflater = Inflater::new(&agreement);
        for message in messages {
            let mut wire = Vec::new();
            deflater.compress(message, &mut wire);
            assert!(!wire.ends_with(&TAIL));
            // Inflate in pieces of every size, as reads would cut it.
            let mut plain = Vec::new();
            for piece in wire.chunks(7) {
                inflater.inflate(piece, &mut plain, 1 << 20).unwrap();
            }
            inflater.finish(&mut plain, 1 << 20).unwrap();
            assert_eq!(&plain, message);
        }
    }

    #[test]
    fn messages_roundtrip_with_and_without_context_takeover() {
        let json: &[u8] =
            br#"{"id": 1, "name": "a name", "tags": ["x", "y", "z"], "name2": "a name"}"#;
        let big = vec![b'a'; 200_000];
        let messages: [&[u8]; 4] = [json, json, b"", &big];
        for (snct, cnct, bits) in [
            (false, false, 15),
            (true, true, 15),
            (false, false, 9),
            (true, false, 8),
        ] {
            let agreement = Agreement {
                server_no_context_takeover: snct,
                client_no_context_takeover: cnct,
                server_window_bits: bits,
            };
            roundtrip(agreement, &messages);
        }
    }

    #[test]
    fn connections_without_context_takeover_share_the_pool() {
        let agreement =
            agreed("permessage-deflate; server_no_context_takeover; client_no_context_takeover")
                .unwrap();
        let (mut a, mut b) = (
            Deflater::new(&agreement, &SETTINGS),
            Deflater::new(&agreement, &SETTINGS),
        );
        let (mut ia, mut ib) = (Inflater::new(&agreement), Inflater::new(&agreement));
        assert!(a.own.is_none() && ia.decompress.is_none());
        for i in 0..5 {
            let message = format!("message {i} of a few, said twice: message {i} of a few");
            for (deflater, inflater) in [(&mut a, &mut ia), (&mut b, &mut ib)] {
                let mut wire = Vec::new();
                deflater.compress(message.as_bytes(), &mut wire);
                // Each message inflates on its own, with a fresh inflater.
                let mut fresh = Inflater::new(&agreement);
                let mut plain = Vec::new();
                fresh.inflate(&wire, &mut plain, 1 << 20).unwrap();
                fresh.finish(&mut plain, 1 << 20).unwrap();
                assert_eq!(plain, message.as_bytes());
                // A message half read holds its inflater; the other side borrows another.
                let mut plain = Vec::new();
                inflater.inflate(&wire[..3], &mut plain, 1 << 20).unwrap();
                assert!(inflater.decompress.is_some());
                inflater.inflate(&wire[3..], &mut plain, 1 << 20).unwrap();
                inflater.finish(&mut plain, 1 << 20).unwrap();
                assert!(inflater.decompress.is_none());
                assert_eq!(plain, message.as_bytes());
            }
        }
    }

    #[test]
    fn context_takeover_makes_a_repeated_message_smaller() {
        let agreement = agreed("permessage-deflate").unwrap();
        let mut deflater = Deflater::new(&agreement, &SETTINGS);
        let message = br#"{"message": "Hello, World!", "count": 12345, "ok": true}"#;
        let (mut first, mut second) = (Vec::new(), Vec::new());
        deflater.compress(message, &mut first);
        deflater.compress(message, &mut second);
        assert!(
            second.len() < first.len() / 2,
            "{} then {}",
            first.len(),
            second.len()
        );
    }

    #[test]
    fn inflating_stops_at_the_limit() {
        let agreement = agreed("permessage-deflate").unwrap();
        // A bomb as an attacker makes it: the best compression of 10 MiB of zeros.
        let mut bomb = Compress::new_with_window_bits(Compression::best(), false, 15);
        let mut wire = Vec::with_capacity(1 << 16);
        let status = bomb.compress_vec(&vec![0u8; 10 << 20], &mut wire, FlushCompress::Sync);
        assert_eq!(status.ok(), Some(Status::Ok));
        assert!(wire.len() < 20_000, "{}", wire.len());
        let mut inflater = Inflater::new(&agreement);
        let mut plain = Vec::new();
        let err = inflater.inflate(&wire, &mut plain, 1 << 20).unwrap_err();
        assert_eq!(err.code, TOO_BIG);
        assert!(plain.capacity() <= (1 << 20) + 1, "{}", plain.capacity());
        // Exactly at the limit is allowed.
        let mut wire = Vec::new();
        Deflater::new(&agreement, &SETTINGS).compress(&vec![1u8; 1000], &mut wire);
        let mut inflater = Inflater::new(&agreement);
        let mut plain = Vec::new();
        inflater.inflate(&wire, &mut plain, 1000).unwrap();
        inflater.finish(&mut plain, 1000).unwrap();
        assert_eq!(plain.len(), 1000);
    }

    #[test]
    fn garbage_is_invalid_data() {
        let agreement = agreed("permessage-deflate").unwrap();
        let mut inflater = Inflater::new(&agreement);
        let mut plain = Vec::new();
        let err = inflater
            .inflate(&[0xff, 0xff, 0xff, 0xff, 0x00], &mut plain, 1 << 20)
            .unwrap_err();
        assert_eq!(err.code, INVALID_PAYLOAD);
    }
}
