//! Request ids: taken from the incoming header when well formed, generated otherwise.
//!
//! A generated id is 32 hex digits: 16 drawn from the OS at startup (each worker
//! process builds its own dispatcher after the fork, so each has its own) and a
//! 16-digit counter, so ids never repeat within a process and collide across
//! processes only with probability ~2^-64 per pair of workers.
//!
//! An incoming id is accepted when it is 1-128 bytes of letters, digits and
//! `-_.:+=/@`, which keeps it safe to echo in a header and to write in a log line
//! without escaping.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// The longest incoming id accepted.
pub const MAX_LEN: usize = 128;

pub struct RequestIds {
    /// The header, lowercase, as the parser's field names are compared.
    pub header: String,
    /// `Header-Name: ` as sent in responses.
    line_prefix: Vec<u8>,
    /// `Header-Name` as sent (asked per response: kept, not re-derived).
    name: String,
    prefix: [u8; 16],
    counter: AtomicU64,
}

/// Whether an incoming id may be used as it is.
pub fn is_valid(value: &[u8]) -> bool {
    !value.is_empty()
        && value.len() <= MAX_LEN
        && value
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"-_.:+=/@".contains(&b))
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if from_os.is_err() {
        // No /dev/urandom (a very bare chroot): the process id and the clock still
        // differ between workers.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        #[allow(clippy::cast_possible_truncation)] // mixing bits, truncation intended
        let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
        bytes = mixed.to_le_bytes();
    }
    u64::from_le_bytes(bytes)
}

/// The two hex digits of every byte value: a table lookup per byte, not per digit.
static HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut table = [[0; 2]; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = [DIGITS[b >> 4], DIGITS[b & 0xf]];
        b += 1;
    }
    table
};

fn hex16(value: u64, out: &mut [u8; 16]) {
    for (pair, byte) in out.chunks_exact_mut(2).zip(value.to_be_bytes()) {
        pair.copy_from_slice(&HEX_PAIRS[usize::from(byte)]);
    }
}

impl RequestIds {
    /// `header`: the request and response header carrying the id.
    pub fn new(header: &str) -> Self {
        let mut prefix = [0u8; 16];
        hex16(random_u64(), &mut prefix);
        RequestIds {
            header: header.to_ascii_lowercase(),
            line_prefix: format!("{header}: ").into_bytes(),
            name: header.to_owned(),
            prefix,
            counter: AtomicU64::new(0),
        }
    }

    /// This request's id: the incoming one when valid, generated otherwise.
    pub fn id_for(&self, incoming: Option<&[u8]>) -> Id {
        match incoming {
            Some(value) if is_valid(value) => Id::Incoming(value.into()),
            _ => {
                let n = self.counter.fetch_add(1, Ordering::Relaxed);
                let mut text = [0u8; 32];
                text[..16].copy_from_slice(&self.prefix);
                let mut digits = [0u8; 16];
                hex16(n, &mut digits);
                text[16..].copy_from_slice(&digits);
                Id::Generated(text)
            }
        }
    }

    /// `Header-Name: `, what the response's id line starts with.
    pub fn line_prefix(&self) -> &[u8] {
        &self.line_prefix
    }

    /// The header's name as sent (for "did the handler set it itself").
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A request's id, kept with the request. A generated one is its text, inline: a
/// `Vec` of the whole response line cost a `malloc` and a `free` per request
/// (~130 instructions, callgrind); the encoder writes the line around it.
pub enum Id {
    /// Request ids are off.
    Off,
    Generated([u8; 32]),
    /// The client's own, valid (`is_valid`): ASCII, at most `MAX_LEN` bytes.
    Incoming(Box<[u8]>),
}

impl Id {
    /// The id's bytes (ASCII by construction), empty when ids are off.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Id::Off => b"",
            Id::Generated(text) => text,
            Id::Incoming(text) => text,
        }
    }

    /// The id as text, "" when ids are off.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex16_writes_every_nibble_in_order() {
        let mut out = [0; 16];
        hex16(0x0123_4567_89ab_cdef, &mut out);
        assert_eq!(&out, b"0123456789abcdef");
        hex16(u64::MAX - 1, &mut out);
        assert_eq!(&out, b"fffffffffffffffe");
    }

    #[test]
    fn incoming_ids_are_kept_when_well_formed() {
        let ids = RequestIds::new("X-Request-ID");
        assert_eq!(ids.line_prefix(), b"X-Request-ID: ");
        assert_eq!(ids.id_for(Some(b"abc-123_x.y:z")).as_str(), "abc-123_x.y:z");
    }

    #[test]
    fn bad_incoming_ids_are_replaced() {
        let ids = RequestIds::new("X-Request-ID");
        let long = vec![b'a'; MAX_LEN + 1];
        for bad in [&b""[..], b"a b", b"a\"b", b"<script>", b"a\x01", &long] {
            let made = ids.id_for(Some(bad));
            let id = made.as_str();
            assert_eq!(id.len(), 32, "{bad:?} -> {id}");
            assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        assert!(is_valid(&[b'a'; MAX_LEN]));
    }

    #[test]
    fn generated_ids_differ_and_share_the_process_prefix() {
        let ids = RequestIds::new("X-Request-ID");
        let (a, b) = (ids.id_for(None), ids.id_for(None));
        let (a, b) = (a.as_str(), b.as_str());
        assert_ne!(a, b);
        assert_eq!(a[..16], b[..16]);
        assert_eq!(&b[16..], "0000000000000001");
        let other = RequestIds::new("X-Request-ID");
        assert_ne!(other.id_for(None).as_str()[..16], a[..16]);
    }
}
