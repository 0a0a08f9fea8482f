//! The HPACK decoder: one header block in, fields out through a callback.
//!
//! State between blocks is the dynamic table and the limit on its size; within a
//! block, whether a field has been seen yet (size updates must come first) and the
//! running header list size. Once the list is over the caller's limit the decoder
//! stops emitting but decodes and applies the rest of the block, so its table still
//! mirrors the peer's encoder and the connection survives a refused request.

use super::integer::{self, read_string, Str};
use super::table::{self, DynamicTable, ENTRY_OVERHEAD, STATIC};
use super::Error;

/// The decoding side of one connection (the peer's encoder's mirror).
pub struct Decoder {
    table: DynamicTable,
    /// Our `SETTINGS_HEADER_TABLE_SIZE`: the most the peer may set the table to.
    max_table_size: usize,
    /// Our limit went below the table's size: the next block must start with a
    /// size update (RFC 7541 4.2).
    update_required: bool,
    /// Scratch buffers for Huffman-coded names and values, reused across blocks.
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

/// What the decoder knows of a field from where it found it, so that a caller's
/// checks can skip what the static table already answers (its names are
/// lowercase tokens; its values hold no NUL, CR or LF, nor whitespace at either
/// end). Dynamic entries come from the peer and are known to be nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Name and value are static entry `index` (1 to 61), indexed whole.
    Static(u8),
    /// The name is static entry `index`'s; the value came in the block.
    StaticName(u8),
    /// A literal name, or a dynamic entry's.
    Other,
}

/// Where a literal field's name is.
#[derive(Clone, Copy)]
enum Name {
    /// Static entry `index`, and its name.
    Static(u8, &'static [u8]),
    /// Dynamic entry, 0 the newest.
    Dynamic(usize),
    Literal(Str),
}

impl Decoder {
    /// `max_table_size`: our `SETTINGS_HEADER_TABLE_SIZE`, the most the peer's encoder
    /// may use. Until the peer acknowledges our SETTINGS it may assume the default,
    /// 4,096: start with that and lower it with `set_max_table_size` on the ACK.
    pub fn new(max_table_size: usize) -> Self {
        Self {
            table: DynamicTable::new(max_table_size),
            max_table_size,
            update_required: false,
            name_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }

    /// Our `SETTINGS_HEADER_TABLE_SIZE` changed (call when the peer acknowledges the
    /// SETTINGS frame). A lower limit than the table's current maximum shrinks the
    /// table at once and requires the peer's next block to start with a size update.
    pub fn set_max_table_size(&mut self, size: usize) {
        self.max_table_size = size;
        if size < self.table.max_size() {
            self.table.set_max_size(size);
            self.update_required = true;
        }
    }

    /// The dynamic table's current size (entries plus 32 bytes each).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// The dynamic table's maximum size, as last set by the peer.
    pub fn table_max_size(&self) -> usize {
        self.table.max_size()
    }

    /// The dynamic table's entries, newest first.
    pub fn table_entries(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.table.iter()
    }

    /// Decodes one whole header block (HEADERS + CONTINUATION payloads joined).
    /// `emit(name, value)` is called for each field in order; the slices are valid
    /// only during the call. Size accounting is RFC 9113's
    /// `SETTINGS_MAX_HEADER_LIST_SIZE` (name + value + 32 per field); once over
    /// `max_list_size` it stops calling `emit` but decodes the rest of the block so
    /// the dynamic table stays in sync, then returns `Err(ListTooLarge)`. Any other
    /// error is fatal for the connection (`COMPRESSION_ERROR`).
    pub fn decode(
        &mut self,
        block: &[u8],
        max_list_size: usize,
        mut emit: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), Error> {
        self.decode_with_origin(block, max_list_size, |n, v, _| emit(n, v))
    }

    /// `decode`, telling `emit` where each field came from (`Origin`).
    pub fn decode_with_origin(
        &mut self,
        block: &[u8],
        max_list_size: usize,
        mut emit: impl FnMut(&[u8], &[u8], Origin),
    ) -> Result<(), Error> {
        let mut pos = 0;
        let mut list_size = 0usize;
        let mut field_seen = false;
        while let Some(&first) = block.get(pos) {
            if first & 0xe0 == 0x20 {
                // 001xxxxx: dynamic table size update.
                if field_seen {
                    return Err(Error::TableSizeUpdate);
                }
                let (size, used) = integer::decode(&block[pos..], 5)?;
                if size > self.max_table_size {
                    return Err(Error::TableSizeUpdate);
                }
                self.table.set_max_size(size);
                self.update_required = false;
                pos += used;
                continue;
            }
            if self.update_required {
                return Err(Error::TableSizeUpdate);
            }
            field_seen = true;
            // `list_size` only grows, so once a field is dropped for the limit no
            // later one is emitted: the callback sees a prefix of the list.
            if first & 0x80 != 0 {
                // 1xxxxxxx: indexed field.
                let (index, used) = integer::decode(&block[pos..], 7)?;
                pos += used;
                let (name, value) = table::lookup(&self.table, index).ok_or(Error::Index)?;
                list_size = list_size.saturating_add(name.len() + value.len() + ENTRY_OVERHEAD);
                if list_size <= max_list_size {
                    let origin = if index < table::DYNAMIC_START {
                        Origin::Static(low_byte(index))
                    } else {
                        Origin::Other
                    };
                    emit(name, value, origin);
                }
                continue;
            }
            // 01xxxxxx with incremental indexing, 0000xxxx / 0001xxxx without.
            let indexing = first & 0x40 != 0;
            let (index, used) = integer::decode(&block[pos..], if indexing { 6 } else { 4 })?;
            pos += used;
            let name = match index {
                0 => {
                    let (name, next) = read_string(block, pos, &mut self.name_buf)?;
                    pos = next;
                    Name::Literal(name)
                }
                i if i < table::DYNAMIC_START => Name::Static(low_byte(i), STATIC[i - 1].0),
                i => {
                    let i = i - table::DYNAMIC_START;
                    if i >= self.table.len() {
                        return Err(Error::Index);
                    }
                    Name::Dynamic(i)
                }
            };
            let (value, next) = read_string(block, pos, &mut self.value_buf)?;
            pos = next;
            let value = value.get(block, &self.value_buf);
            let (name_bytes, origin) = match name {
                Name::Static(i, bytes) => (bytes, Origin::StaticName(i)),
                Name::Dynamic(i) => (self.table.get(i).map_or(&[][..], |(n, _)| n), Origin::Other),
                Name::Literal(s) => (s.get(block, &self.name_buf), Origin::Other),
            };
            list_size = list_size.saturating_add(name_bytes.len() + value.len() + ENTRY_OVERHEAD);
            if list_size <= max_list_size {
                emit(name_bytes, value, origin);
            }
            if indexing {
                match name {
                    Name::Dynamic(i) => {
                        self.table.insert_with_name_of(i, value);
                    }
                    Name::Static(_, bytes) => {
                        self.table.insert(bytes, value);
                    }
                    Name::Literal(s) => {
                        self.table.insert(s.get(block, &self.name_buf), value);
                    }
                }
            }
        }
        if list_size > max_list_size {
            Err(Error::ListTooLarge)
        } else {
            Ok(())
        }
    }
}

#[allow(clippy::cast_possible_truncation)] // callers pass static indices, below 62
fn low_byte(i: usize) -> u8 {
    i as u8
}
