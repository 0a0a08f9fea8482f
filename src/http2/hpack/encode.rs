//! The HPACK encoder: our fields out, with a fixed indexing policy.
//!
//! For each field, in order of preference:
//! 1. the whole field is in a table: one indexed field (one byte for indices below
//!    127: the static table and the 65 newest dynamic entries);
//! 2. otherwise a literal, its name by index when a table has it, written
//!    - with incremental indexing when the field is likely to repeat on this
//!      connection (`server`, `content-type`, `date` (it changes once a second, and
//!      every response in that second shares it), `vary`, a `:status` that is not
//!      in the static table, ...);
//!    - without indexing when it is unique per response (`content-length`,
//!      `x-request-id`, `etag`, ...: indexing them would only evict useful entries)
//!      or too large to be worth a quarter of the table;
//!    - never indexed for credentials (`set-cookie`, `cookie`, `authorization`,
//!      `proxy-authorization`), so no intermediary indexes them either (7.1.3).
//!
//! Strings are Huffman-coded only when that is shorter.
//!
//! Lookups: a static name is found through a hash of its length and a few bytes
//! into a 128-slot table built at compile time, then its static values compared;
//! the dynamic table (at most 4 KiB, so at most 128 entries and usually a handful)
//! is scanned, comparing lengths before bytes.
//!
//! Table size: the peer's `SETTINGS_HEADER_TABLE_SIZE` bounds our table; we use at
//! most `MAX_TABLE_SIZE`. A change is applied to our table at once and announced at
//! the start of the next block (`begin_block`): the smallest size since the last
//! block, then the final one, so the peer evicts exactly what we evicted (4.2).

use super::integer::{self, write_string, write_string_resuming};
use super::memo::{Kept, Memo};
use super::table::{bytes_eq, DynamicTable, DYNAMIC_START, ENTRY_OVERHEAD, STATIC};

/// The table size both sides start with (RFC 9113 `SETTINGS_HEADER_TABLE_SIZE`).
const DEFAULT_TABLE_SIZE: usize = 4096;

/// The most we use, whatever the peer allows: responses repeat few fields, and a
/// small table keeps the scans short.
const MAX_TABLE_SIZE: usize = 4096;

/// The encoding side of one connection.
pub struct Encoder {
    table: DynamicTable,
    /// Size updates not yet sent: the smallest since the last block, the last.
    pending: Option<(usize, usize)>,
    /// Moves on with every change to `table` (`memo.rs`).
    generation: u64,
    /// What the last blocks' fields were written as, by place (`encode_at`).
    memo: Memo,
}

/// How a literal field is written (RFC 7541 6.2).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Indexing {
    Incremental,
    Without,
    Never,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Encoder {
    /// Starts with the peer's default table size (4,096).
    pub fn new() -> Self {
        Self {
            table: DynamicTable::new(DEFAULT_TABLE_SIZE.min(MAX_TABLE_SIZE)),
            pending: None,
            generation: 0,
            memo: Memo::default(),
        }
    }

    /// The peer's `SETTINGS_HEADER_TABLE_SIZE`: our table shrinks (or grows) to
    /// `min(size, 4096)` now, and the update is sent at the start of the next block.
    pub fn set_peer_max_table_size(&mut self, size: usize) {
        let size = size.min(MAX_TABLE_SIZE);
        if self.pending.is_none() && size == self.table.max_size() {
            return;
        }
        let smallest = self
            .pending
            .map_or(size, |(smallest, _)| smallest.min(size));
        self.pending = Some((smallest, size));
        self.table.set_max_size(size);
        self.generation += 1;
    }

    /// Writes the pending size update(s), if any; call at the start of every block.
    pub fn begin_block(&mut self, out: &mut Vec<u8>) {
        if let Some((smallest, last)) = self.pending.take() {
            if smallest < last {
                integer::encode(smallest, 5, 0x20, out);
            }
            integer::encode(last, 5, 0x20, out);
        }
    }

    /// The dynamic table's current size (entries plus 32 bytes each).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// The dynamic table's entries, newest first.
    pub fn table_entries(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.table.iter()
    }

    /// `:status`: one byte for the static ones (200, 204, 206, 304, 400, 404, 500);
    /// others literal, indexed so that a repeated one becomes one byte.
    pub fn encode_status(&mut self, status: u16, out: &mut Vec<u8>) {
        debug_assert!(self.pending.is_none(), "begin_block was not called");
        let index = match status {
            200 => 8,
            204 => 9,
            206 => 10,
            304 => 11,
            400 => 12,
            404 => 13,
            500 => 14,
            _ => {
                let mut digits = itoa::Buffer::new();
                self.encode(b":status", digits.format(status).as_bytes(), out);
                return;
            }
        };
        out.push(0x80 | index);
    }

    /// One field; `name` is lowercase (the caller guarantees it).
    pub fn encode(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        self.write(name, value, out);
    }

    /// `encode` for the field at `place` in its block: when the field at that place
    /// of an earlier block was the same (`memo.rs`), its bytes are copied.
    pub fn encode_at(&mut self, place: usize, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        debug_assert!(self.pending.is_none(), "begin_block was not called");
        if let Some((bytes, coder)) = self.memo.find(place, self.generation, name, value) {
            out.extend_from_slice(bytes);
            if let Some(coder) = coder {
                write_string_resuming(value, coder, out);
            }
            return;
        }
        let at = out.len();
        let (kind, len) = match self.write(name, value, out) {
            Written::Whole => (Some(Kept::Whole), out.len() - at),
            Written::Name(len) => (Some(Kept::Name), len),
            Written::Other => (None, 0),
        };
        let bytes = &out[at..at + len];
        self.memo
            .keep(place, self.generation, kind, name, value, bytes);
    }

    /// `encode`, saying what it wrote.
    fn write(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) -> Written {
        // A size update left unsent would put the peer's table out of step with ours.
        debug_assert!(self.pending.is_none(), "begin_block was not called");
        let (static_name, static_full) = find_static(name, value);
        if let Some(index) = static_full {
            integer::encode(index, 7, 0x80, out);
            return Written::Whole;
        }
        let by_name = by_name(static_name, name);
        let mut indexing = self.sized(by_name, name, value);
        // A field we do not index is not in our table whole, but for one indexed
        // before the table shrank under it (then sending it literally is merely
        // longer): if the static table has its name, there is nothing to look for.
        let (dynamic_full, dynamic_name) =
            if indexing == Indexing::Incremental || static_name.is_none() {
                self.find_dynamic(name, value)
            } else {
                (None, None)
            };
        if let Some(i) = dynamic_full {
            integer::encode(DYNAMIC_START + i, 7, 0x80, out);
            return Written::Whole;
        }
        // A name on every answer with a new value each time (x-request-id): its
        // first field is indexed, so that the later ones name it by index (one
        // byte) instead of spelling it out; their values are still not indexed.
        if indexing == Indexing::Without
            && static_name.is_none()
            && dynamic_name.is_none()
            && (name.len() + value.len() + ENTRY_OVERHEAD) * 4 <= self.table.max_size()
        {
            indexing = Indexing::Incremental;
        }
        let name_index = static_name.or(dynamic_name.map(|i| DYNAMIC_START + i));
        let (prefix, flags) = match indexing {
            Indexing::Incremental => (6, 0x40),
            Indexing::Without => (4, 0x00),
            Indexing::Never => (4, 0x10),
        };
        let start = out.len();
        let written = if let Some(index) = name_index {
            integer::encode(index, prefix, flags, out);
            // Kept by name only when its name alone chose how it is written.
            if indexing == by_name && indexing != Indexing::Incremental {
                Written::Name(out.len() - start)
            } else {
                Written::Other
            }
        } else {
            integer::encode(0, prefix, flags, out);
            write_string(name, out);
            Written::Other
        };
        write_string(value, out);
        if indexing == Indexing::Incremental {
            self.table.insert(name, value);
            self.generation += 1;
        }
        written
    }

    /// The policy of the module's doc comment.
    #[cfg(test)]
    fn indexing(&self, static_name: Option<usize>, name: &[u8], value: &[u8]) -> Indexing {
        self.sized(by_name(static_name, name), name, value)
    }

    /// The policy for a name, given its value: a field too large for a quarter of
    /// the table is not indexed.
    fn sized(&self, by_name: Indexing, name: &[u8], value: &[u8]) -> Indexing {
        if by_name == Indexing::Never {
            Indexing::Never
        } else if (name.len() + value.len() + ENTRY_OVERHEAD) * 4 > self.table.max_size() {
            Indexing::Without
        } else {
            by_name
        }
    }

    /// The dynamic entry holding the whole field, else the first holding its name
    /// (0 the newest).
    fn find_dynamic(&self, name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
        let mut name_match = None;
        for (i, (n, v)) in self.table.iter().enumerate() {
            if n == name {
                if v == value {
                    return (Some(i), name_match.or(Some(i)));
                }
                name_match = name_match.or(Some(i));
            }
        }
        (None, name_match)
    }
}

/// What `Encoder::write` wrote, for `encode_at` to keep.
enum Written {
    /// One index.
    Whole,
    /// A literal left out of the table, its name (in this many first bytes) by
    /// index, as its name chose.
    Name(usize),
    /// Anything else (a field added to the table, a name spelled out).
    Other,
}

/// The policy of the module's doc comment by name alone; a static name's by its
/// index, so most fields cost no string comparison here.
fn by_name(static_name: Option<usize>, name: &[u8]) -> Indexing {
    match static_name {
        // authorization, cookie, proxy-authorization, set-cookie.
        Some(23 | 32 | 49 | 55) => Indexing::Never,
        // :path, age, content-length, content-range, etag, last-modified, location.
        Some(4 | 21 | 28 | 30 | 34 | 44 | 46) => Indexing::Without,
        Some(_) => Indexing::Incremental,
        None => match name {
            b"x-request-id" | b"traceparent" => Indexing::Without,
            _ => Indexing::Incremental,
        },
    }
}

/// Slots of the static names' hash table: 0 empty, else the static index of the
/// first entry with that name.
const SLOTS: usize = 128;
static STATIC_NAMES: [u8; SLOTS] = build_static_names();

/// A hash of a name for `STATIC_NAMES`: the 61 names' lengths, first, middle and
/// last bytes spread them with few collisions.
const fn name_slot(name: &[u8]) -> usize {
    let len = name.len();
    if len == 0 {
        return 0;
    }
    (len * 31 + name[0] as usize * 7 + name[len / 2] as usize * 3 + name[len - 1] as usize) % SLOTS
}

#[allow(clippy::cast_possible_truncation)] // static indices are 1..=61
const fn build_static_names() -> [u8; SLOTS] {
    let mut slots = [0u8; SLOTS];
    let mut i = 0;
    while i < STATIC.len() {
        let name = STATIC[i].0;
        // Only the first entry of each name goes in; the others follow it.
        if i == 0 || !bytes_eq(STATIC[i - 1].0, name) {
            let mut slot = name_slot(name);
            while slots[slot] != 0 {
                slot = (slot + 1) % SLOTS;
            }
            slots[slot] = (i + 1) as u8;
        }
        i += 1;
    }
    slots
}

/// The static index of `name`, and of the whole field if the static table has it.
fn find_static(name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
    let mut slot = name_slot(name);
    loop {
        let index = usize::from(STATIC_NAMES[slot]);
        if index == 0 {
            return (None, None);
        }
        if STATIC[index - 1].0 == name {
            let full = STATIC[index - 1..]
                .iter()
                .take_while(|(n, _)| *n == name)
                .position(|(_, v)| *v == value)
                .map(|offset| index + offset);
            return (Some(index), full);
        }
        slot = (slot + 1) % SLOTS;
    }
}

#[cfg(test)]
pub mod tests_support {
    use super::{find_static, Encoder, Indexing};

    /// The policy for a short value of field `name` on a fresh encoder.
    pub fn policy_of(name: &str) -> &'static str {
        let name = name.as_bytes();
        match Encoder::new().indexing(find_static(name, b"v").0, name, b"v") {
            Indexing::Incremental => "incremental",
            Indexing::Without => "without",
            Indexing::Never => "never",
        }
    }
}
