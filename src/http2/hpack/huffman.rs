//! The Huffman coding of HPACK string literals (RFC 7541 section 5.2, Appendix B).
//!
//! Encoding shifts each symbol's code into a 64-bit accumulator and writes it out
//! four bytes at a time; the last byte is padded with the high bits of EOS (ones).
//!
//! Decoding walks the code's binary tree four bits at a time, through a table built
//! at compile time (`DECODE`): a state is an internal node of the tree (there are
//! exactly 256, as the code has 257 leaves), and for each state and each nibble the
//! table holds the node reached, the symbol completed on the way if any (at most
//! one, since no code is shorter than five bits), and two flags:
//! - `FAIL`: the nibble completes EOS, which a string must never contain (5.2);
//! - `ACCEPT`: the string may end in the node reached: it is the root, or the bits
//!   since the last symbol are all ones and at most seven of them (valid padding).
//!
//! A byte costs two table lookups and no branch on the code's structure; the table
//! is 256 * 16 * 3 bytes = 12 KiB, small enough to stay in cache.

use super::huffman_code::CODES;
use super::Error;

/// Bit flags of a decoding step.
const EMIT: u8 = 1;
const FAIL: u8 = 2;
const ACCEPT: u8 = 4;

/// One transition of the decoder: from a state, on a nibble.
#[derive(Clone, Copy)]
struct Step {
    next: u8,
    sym: u8,
    flags: u8,
}

/// A child in the tree under construction: `LEAF | symbol`, or an internal node's
/// number (never 0, which is the root and no one's child; 0 also means "none yet").
const LEAF: u16 = 0x8000;

/// `DECODE[state][nibble]`.
static DECODE: [[Step; 16]; 256] = build_decoder();

/// Builds the tree from `CODES`, then the nibble transitions from the tree. Runs at
/// compile time; a malformed code table stops the build.
#[allow(clippy::cast_possible_truncation)] // node numbers < 256, symbols < 512
const fn build_decoder() -> [[Step; 16]; 256] {
    let mut children = [[0u16; 2]; 256];
    // Whether the path from the root to the node is all ones, at most 7 of them.
    let mut padding = [false; 256];
    let mut depth = [0u8; 256];
    padding[0] = true;
    let mut nodes = 1;
    let mut sym = 0;
    while sym < CODES.len() {
        let (code, len) = CODES[sym];
        let mut node = 0;
        let mut bit = len;
        while bit > 1 {
            bit -= 1;
            let b = ((code >> bit) & 1) as usize;
            let child = children[node][b];
            assert!(child & LEAF == 0, "a code is a prefix of another");
            if child == 0 {
                assert!(nodes < 256, "more than 256 internal nodes");
                children[node][b] = nodes as u16;
                depth[nodes] = depth[node] + 1;
                padding[nodes] = padding[node] && b == 1 && depth[nodes] <= 7;
                nodes += 1;
            }
            node = children[node][b] as usize;
        }
        let b = (code & 1) as usize;
        assert!(children[node][b] == 0, "two codes are equal");
        children[node][b] = LEAF | sym as u16;
        sym += 1;
    }
    assert!(nodes == 256, "the code is not complete");

    let mut table = [[Step {
        next: 0,
        sym: 0,
        flags: 0,
    }; 16]; 256];
    let mut state = 0;
    while state < 256 {
        let mut nibble = 0;
        while nibble < 16 {
            let mut node = state;
            let mut step = Step {
                next: 0,
                sym: 0,
                flags: 0,
            };
            let mut bit = 4;
            while bit > 0 {
                bit -= 1;
                let child = children[node][(nibble >> bit) & 1];
                if child & LEAF == 0 {
                    node = child as usize;
                } else if child == LEAF | 256 {
                    step.flags = FAIL;
                    break;
                } else {
                    step.sym = (child & 0xff) as u8;
                    step.flags = EMIT;
                    node = 0;
                }
            }
            if step.flags & FAIL == 0 {
                step.next = node as u8;
                if padding[node] {
                    step.flags |= ACCEPT;
                }
            }
            table[state][nibble] = step;
            nibble += 1;
        }
        state += 1;
    }
    table
}

/// Decodes `src` into `dst` (cleared first). Fails on EOS, on padding longer than
/// seven bits and on padding that is not all ones.
///
/// The loop has no data-dependent branch: each nibble's symbol is written to the
/// next free byte whether or not it completes one (the count advances only if it
/// does), and a failure is remembered and reported at the end (the steps after it
/// decode garbage that is then thrown away).
pub fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), Error> {
    dst.clear();
    // Room for one byte per nibble, more than the 8/5 symbols per byte that codes
    // of five bits or more can give.
    dst.resize(src.len() * 2, 0);
    let mut len = 0;
    let mut state = 0usize;
    let mut flags = ACCEPT;
    let mut failed = 0;
    for &byte in src {
        for nibble in [byte >> 4, byte & 0x0f] {
            let step = DECODE[state][usize::from(nibble)];
            dst[len] = step.sym;
            len += usize::from(step.flags & EMIT);
            failed |= step.flags;
            state = usize::from(step.next);
            flags = step.flags;
        }
    }
    dst.truncate(len);
    if failed & FAIL == 0 && flags & ACCEPT != 0 {
        Ok(())
    } else {
        Err(Error::Huffman)
    }
}

/// The length in bytes of `src` once Huffman-coded.
pub fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src
        .iter()
        .map(|&b| usize::from(CODES[usize::from(b)].1))
        .sum();
    bits.div_ceil(8)
}

/// Appends the Huffman coding of `src` to `dst` (the caller reserves the room when
/// it knows the length from `encoded_len`: counting it again here cost ~140
/// instructions per answer with a request id).
pub fn encode(src: &[u8], dst: &mut Vec<u8>) {
    // `bits` low bits of `acc` are pending output; at most 31 + 30 of them.
    let mut acc = 0u64;
    let mut bits = 0u32;
    for &b in src {
        let (code, len) = CODES[usize::from(b)];
        acc = (acc << len) | u64::from(code);
        bits += u32::from(len);
        if bits >= 32 {
            bits -= 32;
            #[allow(clippy::cast_possible_truncation)] // the 32 bits above the pending ones
            dst.extend_from_slice(&((acc >> bits) as u32).to_be_bytes());
        }
    }
    while bits >= 8 {
        bits -= 8;
        dst.push(low_byte(acc >> bits));
    }
    if bits > 0 {
        // Pad with the most significant bits of EOS: ones.
        dst.push(low_byte((acc << (8 - bits)) | (0xff >> bits)));
    }
}

/// The room `encode_short` codes into: values shorter than this are coded there.
pub const SHORT: usize = 128;

/// Codes `src` (shorter than `SHORT`) into `buf` while the coding stays shorter
/// than `src`: its length, or None once it cannot be.
pub fn encode_short(src: &[u8], buf: &mut [u8; SHORT]) -> Option<usize> {
    let limit = src.len().min(SHORT);
    let mut acc = 0u64;
    let mut bits = 0u32;
    let mut len = 0;
    for &b in src {
        let (code, code_len) = CODES[usize::from(b)];
        acc = (acc << code_len) | u64::from(code);
        bits += u32::from(code_len);
        if bits >= 32 {
            bits -= 32;
            if len + 4 >= limit {
                return None; // the coding is at least as long as `src`
            }
            #[allow(clippy::cast_possible_truncation)] // the 32 bits above the pending ones
            buf[len..len + 4].copy_from_slice(&((acc >> bits) as u32).to_be_bytes());
            len += 4;
        }
    }
    // What is pending, padded with the most significant bits of EOS (ones).
    let pad = bits.div_ceil(8) * 8 - bits;
    let padded = (acc << pad) | ((1 << pad) - 1);
    let tail = (bits + pad) as usize / 8;
    if len + tail >= limit {
        return None;
    }
    for (i, byte) in buf[len..len + tail].iter_mut().enumerate() {
        *byte = low_byte(padded >> ((tail - 1 - i) * 8));
    }
    Some(len + tail)
}

/// Source bytes between two of `Resumable`'s marks.
const STRIDE: usize = 4;

/// The coder's state after a multiple of `STRIDE` source bytes: the bits pending
/// (fewer than 32, the low ones of `acc`: the bits above them are written already)
/// and the bytes written.
#[derive(Clone, Copy, Default)]
struct Mark {
    acc: u32,
    bits: u8,
    len: u8,
}

/// `encode_short` that remembers the last value it coded, its coding, and the
/// coder's state every `STRIDE` bytes: the next value is coded from the last state
/// the two share, not from its start. A request id is a fixed per-worker half and a
/// counter, so consecutive ones share 28 of their 32 digits or more: 4 to code, not
/// 32. The bytes are `encode_short`'s (the coder is the same, resumed where it was).
pub struct Resumable {
    src: [u8; SHORT],
    src_len: usize,
    out: [u8; SHORT],
    marks: [Mark; SHORT / STRIDE],
    /// Marks that hold for `src`'s first bytes (a coding given up stops them).
    valid: usize,
}

impl Default for Resumable {
    fn default() -> Self {
        Resumable {
            src: [0; SHORT],
            src_len: 0,
            out: [0; SHORT],
            marks: [Mark::default(); SHORT / STRIDE],
            valid: 0,
        }
    }
}

impl Resumable {
    /// `encode_short(src)`'s coding (`src` is shorter than `SHORT`), or None when it
    /// is not shorter than `src`.
    pub fn encode(&mut self, src: &[u8]) -> Option<&[u8]> {
        let limit = src.len();
        let shared = shared_prefix(&self.src[..self.src_len], src);
        let mut valid = (shared / STRIDE).min(self.valid);
        let mark = if valid == 0 {
            Mark::default()
        } else {
            self.marks[valid - 1]
        };
        let (mut acc, mut bits, mut len) = (
            u64::from(mark.acc),
            u32::from(mark.bits),
            usize::from(mark.len),
        );
        self.src[..limit].copy_from_slice(src);
        self.src_len = limit;
        let mut rest = src[valid * STRIDE..].chunks(STRIDE);
        for chunk in &mut rest {
            for &b in chunk {
                let (code, code_len) = CODES[usize::from(b)];
                acc = (acc << code_len) | u64::from(code);
                bits += u32::from(code_len);
                if bits >= 32 {
                    bits -= 32;
                    if len + 4 >= limit {
                        self.valid = valid;
                        return None; // the coding is at least as long as `src`
                    }
                    #[allow(clippy::cast_possible_truncation)]
                    // the 32 bits above the pending ones
                    self.out[len..len + 4].copy_from_slice(&((acc >> bits) as u32).to_be_bytes());
                    len += 4;
                }
            }
            if chunk.len() == STRIDE {
                #[allow(clippy::cast_possible_truncation)] // see `Mark`; len < SHORT
                let mark = Mark {
                    acc: acc as u32,
                    bits: bits as u8,
                    len: len as u8,
                };
                self.marks[valid] = mark;
                valid += 1;
            }
        }
        self.valid = valid;
        // What is pending, padded with the most significant bits of EOS (ones).
        let pad = bits.div_ceil(8) * 8 - bits;
        let padded = (acc << pad) | ((1 << pad) - 1);
        let tail = (bits + pad) as usize / 8;
        if len + tail >= limit {
            return None;
        }
        for (i, byte) in self.out[len..len + tail].iter_mut().enumerate() {
            *byte = low_byte(padded >> ((tail - 1 - i) * 8));
        }
        Some(&self.out[..len + tail])
    }
}

/// How many first bytes `a` and `b` share (eight at a time while they can).
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n && a[i..i + 8] == b[i..i + 8] {
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

#[allow(clippy::cast_possible_truncation)] // truncation is the point
fn low_byte(v: u64) -> u8 {
    v as u8
}

#[cfg(test)]
#[path = "huffman_tests.rs"]
mod tests;
