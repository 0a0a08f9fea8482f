//! Integers with an N-bit prefix (RFC 7541 section 5.1) and string literals (5.2).
//!
//! An integer below `2^N - 1` fits in the prefix; a larger one fills the prefix
//! with ones and continues in 7-bit groups, least significant first, while the top
//! bit of each byte is set. Nothing in HPACK needs a value above `u32::MAX` (a
//! string is never longer than its block, a table size is a 32-bit SETTINGS
//! value), so a value past that, or more continuation bytes than one needs, is an
//! `Error::Integer`: this bounds the bytes read and rules out overflow.

use super::{huffman, Error};

/// The most continuation bytes a value up to `u32::MAX` needs: 32 bits in 7-bit
/// groups, on top of the prefix.
const MAX_CONTINUATION: usize = 5;

/// Decodes the integer whose prefix is the low `prefix_bits` of `src[0]`; returns
/// it and the number of bytes it took. `src` must not be empty.
#[inline]
pub fn decode(src: &[u8], prefix_bits: u32) -> Result<(usize, usize), Error> {
    let mask = u8::MAX >> (8 - prefix_bits);
    let first = src.first().ok_or(Error::Integer)? & mask;
    if first < mask {
        return Ok((usize::from(first), 1));
    }
    let mut value = u64::from(mask);
    let mut shift = 0;
    for (i, &byte) in src[1..].iter().take(MAX_CONTINUATION).enumerate() {
        value += u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            let value = u32::try_from(value).map_err(|_| Error::Integer)?;
            let value = usize::try_from(value).map_err(|_| Error::Integer)?;
            return Ok((value, i + 2));
        }
        shift += 7;
    }
    // Truncated, or longer than any value we accept.
    Err(Error::Integer)
}

/// Appends `value` with an N-bit prefix; `flags` are the bits above the prefix in
/// the first byte.
#[inline]
pub fn encode(value: usize, prefix_bits: u32, flags: u8, out: &mut Vec<u8>) {
    let mask = u8::MAX >> (8 - prefix_bits);
    if value < usize::from(mask) {
        out.push(flags | low_byte(value));
        return;
    }
    out.push(flags | mask);
    let mut rest = value - usize::from(mask);
    while rest >= 0x80 {
        out.push(0x80 | low_byte(rest & 0x7f));
        rest >>= 7;
    }
    out.push(low_byte(rest));
}

#[allow(clippy::cast_possible_truncation)] // callers pass values below 256
fn low_byte(v: usize) -> u8 {
    v as u8
}

/// Where a decoded string literal is: in the block (raw) or, Huffman-decoded, in
/// the scratch buffer the caller passed.
#[derive(Clone, Copy)]
pub enum Str {
    Raw(usize, usize),
    Decoded,
}

impl Str {
    /// The string's bytes, given the block and the scratch buffer it was read with.
    #[inline]
    pub fn get<'a>(self, block: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
        match self {
            Self::Raw(start, end) => &block[start..end],
            Self::Decoded => scratch,
        }
    }
}

/// Reads the string literal at `block[pos..]`; a Huffman-coded one is decoded into
/// `scratch`. Returns where the string is and the position after it.
#[inline]
pub fn read_string(block: &[u8], pos: usize, scratch: &mut Vec<u8>) -> Result<(Str, usize), Error> {
    let rest = block
        .get(pos..)
        .filter(|r| !r.is_empty())
        .ok_or(Error::String)?;
    let huffman_coded = rest[0] & 0x80 != 0;
    let (len, used) = decode(rest, 7)?;
    let start = pos + used;
    let end = start.checked_add(len).ok_or(Error::String)?;
    let bytes = block.get(start..end).ok_or(Error::String)?;
    if huffman_coded {
        huffman::decode(bytes, scratch)?;
        Ok((Str::Decoded, end))
    } else {
        Ok((Str::Raw(start, end), end))
    }
}

/// Appends `value` as a string literal, Huffman-coded only when that is shorter.
///
/// A value under 127 bytes has a one-byte length either way: it is coded on the
/// stack, and the coding given up as soon as it is no shorter (one pass over the
/// value, not a count of its coded length and then the coding into `out` four
/// bytes at a time: ~60 instructions less per answer with a request id).
#[inline]
pub fn write_string(value: &[u8], out: &mut Vec<u8>) {
    if value.len() < 0x7f {
        let mut coded = [0; huffman::SHORT];
        if let Some(len) = huffman::encode_short(value, &mut coded) {
            out.push(0x80 | low_byte(len));
            out.extend_from_slice(&coded[..len]);
        } else {
            out.push(low_byte(value.len()));
            out.extend_from_slice(value);
        }
        return;
    }
    let coded = huffman::encoded_len(value);
    if coded < value.len() {
        encode(coded, 7, 0x80, out);
        out.reserve(coded);
        huffman::encode(value, out);
    } else {
        encode(value.len(), 7, 0, out);
        out.extend_from_slice(value);
    }
}

/// `write_string` with the coder of the value written last at this place (a
/// request id shares most of its digits with the one before: `huffman::Resumable`);
/// the same bytes.
#[inline]
pub fn write_string_resuming(value: &[u8], coder: &mut huffman::Resumable, out: &mut Vec<u8>) {
    if value.len() >= 0x7f {
        write_string(value, out);
    } else if let Some(coded) = coder.encode(value) {
        out.push(0x80 | low_byte(coded.len()));
        out.extend_from_slice(coded);
    } else {
        out.push(low_byte(value.len()));
        out.extend_from_slice(value);
    }
}
