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

    /// The response header line for this request (`X-Request-ID: <id>\r\n`), with
    /// the id taken from `incoming` when valid, generated otherwise. Returns the
    /// line and where the id starts in it.
    pub fn line_for(&self, incoming: Option<&[u8]>) -> (Vec<u8>, usize) {
        let start = self.line_prefix.len();
        let mut line = Vec::with_capacity(start + 34);
        line.extend_from_slice(&self.line_prefix);
        match incoming {
            Some(value) if is_valid(value) => line.extend_from_slice(value),
            _ => {
                let n = self.counter.fetch_add(1, Ordering::Relaxed);
                line.extend_from_slice(&self.prefix);
                let mut digits = [0u8; 16];
                hex16(n, &mut digits);
                line.extend_from_slice(&digits);
            }
        }
        line.extend_from_slice(b"\r\n");
        (line, start)
    }

    /// The header's name as sent (for "did the handler set it itself").
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The id inside a line made by `line_for`.
pub fn id_of(line: &[u8], start: usize) -> &str {
    let end = line.len().saturating_sub(2);
    std::str::from_utf8(line.get(start..end).unwrap_or_default()).unwrap_or("")
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
        let (line, start) = ids.line_for(Some(b"abc-123_x.y:z"));
        assert_eq!(line, b"X-Request-ID: abc-123_x.y:z\r\n");
        assert_eq!(id_of(&line, start), "abc-123_x.y:z");
    }

    #[test]
    fn bad_incoming_ids_are_replaced() {
        let ids = RequestIds::new("X-Request-ID");
        let long = vec![b'a'; MAX_LEN + 1];
        for bad in [&b""[..], b"a b", b"a\"b", b"<script>", b"a\x01", &long] {
            let (line, start) = ids.line_for(Some(bad));
            let id = id_of(&line, start);
            assert_eq!(id.len(), 32, "{bad:?} -> {id}");
            assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        assert!(is_valid(&[b'a'; MAX_LEN]));
    }

    #[test]
    fn generated_ids_differ_and_share_the_process_prefix() {
        let ids = RequestIds::new("X-Request-ID");
        let (a, sa) = ids.line_for(None);
        let (b, sb) = ids.line_for(None);
        let (a, b) = (id_of(&a, sa), id_of(&b, sb));
        assert_ne!(a, b);
        assert_eq!(a[..16], b[..16]);
        assert_eq!(&b[16..], "0000000000000001");
        let other = RequestIds::new("X-Request-ID");
        let (c, sc) = other.line_for(None);
        assert_ne!(id_of(&c, sc)[..16], a[..16]);
    }
}
