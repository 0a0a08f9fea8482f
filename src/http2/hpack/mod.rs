//! HPACK, the header compression of HTTP/2 (RFC 7541), without I/O.
//!
//! A header block is a sequence of instructions, each starting with a byte whose
//! high bits say what it is (section 6):
//! - `1xxxxxxx` an indexed field: the index (7-bit prefix) names a whole entry;
//! - `01xxxxxx` a literal field with incremental indexing: the name by index
//!   (6-bit prefix, 0 meaning a literal name follows), then the value; the field is
//!   then added to the dynamic table;
//! - `0000xxxx` a literal field without indexing and `0001xxxx` a never-indexed one
//!   (4-bit prefix), which leave the table alone (never-indexed also tells
//!   intermediaries not to index it either, as for `set-cookie`);
//! - `001xxxxx` a dynamic table size update (5-bit prefix), allowed only at the start
//!   of a block (4.2), never above the limit the decoder's side set in SETTINGS.
//!
//! Integers and strings are in `integer.rs`, the Huffman code in `huffman.rs`, the
//! tables in `table.rs`. Both directions keep a dynamic table: the decoder's is
//! changed only by the peer's instructions, the encoder's only by ours, and each must
//! mirror the other side's exactly, so a decoder must process every block in full
//! even when it refuses the result (`Error::ListTooLarge`).
//!
//! The decoder (`decode.rs`) hands each field to a callback as borrowed slices (from
//! the block, the table or one reused scratch buffer per string), so decoding a
//! block allocates nothing once its buffers have grown. The encoder (`encode.rs`)
//! chooses per field whether to index, by a fixed policy tuned for responses.

mod decode;
mod encode;
mod huffman;
mod huffman_code;
mod integer;
mod memo;
mod table;

pub use decode::{Decoder, Origin};
pub use encode::Encoder;
pub use table::{bytes_eq, STATIC};

use std::fmt;

/// Why a header block could not be decoded. Every variant but `ListTooLarge` is a
/// connection error of type `COMPRESSION_ERROR` (RFC 9113 section 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// An integer is truncated or larger than any HPACK value may be.
    Integer,
    /// A string literal runs past the end of the block.
    String,
    /// A Huffman-coded string holds EOS, or its padding is over 7 bits or not ones.
    Huffman,
    /// Index 0, or an index past the end of the tables.
    Index,
    /// A table size update above our limit, or after a field in the block, or
    /// missing when our limit went down.
    TableSizeUpdate,
    /// The decoded list is over `max_list_size`; the block was processed in full, so
    /// the table is in sync and the connection can go on (the request cannot).
    ListTooLarge,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Integer => "HPACK integer truncated or too large",
            Self::String => "HPACK string literal truncated",
            Self::Huffman => "invalid Huffman-coded string",
            Self::Index => "HPACK index out of range",
            Self::TableSizeUpdate => "invalid dynamic table size update",
            Self::ListTooLarge => "header list too large",
        })
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod rfc_tests;
