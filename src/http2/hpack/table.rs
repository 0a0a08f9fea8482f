//! The static table (RFC 7541 Appendix A) and the dynamic table (section 2.3.2, 4).
//!
//! Index space: 1..=61 is the static table, 62.. the dynamic table, newest first.
//!
//! The dynamic table keeps every entry's bytes (name then value) in one buffer,
//! appended at the end; evicting an entry only forgets its place, and the dead
//! prefix is cut off (one `drain`, moving the live bytes down) once it is at least
//! as large as the table's maximum size. So an insertion allocates nothing once the
//! buffer has grown to about twice the maximum size, every entry is one contiguous
//! slice that can be lent out, and the work of moving bytes is amortised to a small
//! constant per byte inserted. An entry evicted by the very insertion that names it
//! (4.4) is safe: the name is copied before anything is evicted.

use std::collections::VecDeque;

/// RFC 7541 4.1: each entry counts its name and value lengths plus 32.
pub const ENTRY_OVERHEAD: usize = 32;

/// The first allocation of a table's byte buffer: a typical request's or response's
/// indexed fields.
const INITIAL_BYTES: usize = 512;

/// The static table, index 1 first.
pub const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The first dynamic index.
/// Byte-slice equality usable in constant evaluation (tables built at compile
/// time compare field names with it).
pub const fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

pub const DYNAMIC_START: usize = STATIC.len() + 1;

/// Where an entry's bytes are: `start` counts from the first byte ever appended.
#[derive(Clone, Copy)]
struct Entry {
    start: usize,
    name_len: usize,
    value_len: usize,
}

/// The dynamic table: entries newest last in `entries`, their bytes in `buf`.
#[derive(Default)]
pub struct DynamicTable {
    buf: Vec<u8>,
    /// The position (as in `Entry::start`) of `buf[0]`.
    base: usize,
    entries: VecDeque<Entry>,
    /// The sum of the entries' sizes (4.1).
    size: usize,
    max_size: usize,
}

impl DynamicTable {
    pub fn new(max_size: usize) -> Self {
        Self {
            max_size,
            ..Self::default()
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The table's size: entries' lengths plus 32 each.
    pub fn size(&self) -> usize {
        self.size
    }

    pub fn max_size(&self) -> usize {
        self.max_size
    }

    /// Entry `i`, 0 the newest: `(name, value)`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let last = self.entries.len().checked_sub(1)?;
        let e = self.entries.get(last.checked_sub(i)?)?;
        let start = e.start - self.base;
        let mid = start + e.name_len;
        Some((&self.buf[start..mid], &self.buf[mid..mid + e.value_len]))
    }

    /// Entries newest first.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.entries.iter().rev().map(|e| {
            let start = e.start - self.base;
            let mid = start + e.name_len;
            (&self.buf[start..mid], &self.buf[mid..mid + e.value_len])
        })
    }

    /// A new maximum size (a size update): evicts until the table fits.
    pub fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// Adds `(name, value)` as the newest entry, evicting the oldest ones to make
    /// room; an entry larger than the whole table empties it and is not added (4.4).
    /// Returns whether it was added.
    pub fn insert(&mut self, name: &[u8], value: &[u8]) -> bool {
        if !self.make_room(name.len() + value.len()) {
            return false;
        }
        let start = self.base + self.buf.len();
        self.buf.extend_from_slice(name);
        self.buf.extend_from_slice(value);
        self.push(start, name.len(), value.len());
        true
    }

    /// Like `insert`, the name being that of entry `i` (0 the newest), which may be
    /// evicted by this very insertion. Returns `None` if there is no such entry.
    pub fn insert_with_name_of(&mut self, i: usize, value: &[u8]) -> Option<bool> {
        let last = self.entries.len().checked_sub(1)?;
        let e = *self.entries.get(last.checked_sub(i)?)?;
        if !self.make_room(e.name_len + value.len()) {
            return Some(false);
        }
        // `make_room` may have moved the bytes (never dropped them: the entry was
        // live when it started), so the offset is taken now.
        let from = e.start - self.base;
        let start = self.base + self.buf.len();
        self.buf.extend_from_within(from..from + e.name_len);
        self.buf.extend_from_slice(value);
        self.push(start, e.name_len, value.len());
        Some(true)
    }

    /// Readies the buffer for an entry of `len` bytes (name and value): evicts all
    /// and returns false if it cannot fit, else compacts the buffer if due. Entries
    /// are evicted after the bytes are appended (`push`), so a name being copied
    /// from the table is still there.
    fn make_room(&mut self, len: usize) -> bool {
        if len + ENTRY_OVERHEAD > self.max_size {
            self.evict_to(0);
            return false;
        }
        match self.entries.front() {
            // Nothing live: the buffer restarts at its beginning, no bytes moved.
            None => {
                self.base += self.buf.len();
                self.buf.clear();
                if self.buf.capacity() == 0 {
                    // The first entry: room for a few at once rather than a
                    // reallocation per entry while the buffer is small.
                    self.buf.reserve(INITIAL_BYTES.min(self.max_size));
                    self.entries.reserve(INITIAL_BYTES / 64);
                }
            }
            Some(e) => {
                let dead = e.start - self.base;
                if dead >= self.max_size {
                    self.buf.drain(..dead);
                    self.base += dead;
                }
            }
        }
        true
    }

    /// Evicts what the new entry needs, then records it.
    fn push(&mut self, start: usize, name_len: usize, value_len: usize) {
        let size = name_len + value_len + ENTRY_OVERHEAD;
        self.evict_to(self.max_size - size);
        self.entries.push_back(Entry {
            start,
            name_len,
            value_len,
        });
        self.size += size;
    }

    /// Evicts the oldest entries until the size is at most `limit`.
    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            let Some(e) = self.entries.pop_front() else {
                break;
            };
            self.size -= e.name_len + e.value_len + ENTRY_OVERHEAD;
        }
    }
}

/// Entry `index` of the whole index space (static then dynamic).
#[inline]
pub fn lookup(dynamic: &DynamicTable, index: usize) -> Option<(&[u8], &[u8])> {
    match index {
        0 => None,
        i if i < DYNAMIC_START => Some(STATIC[i - 1]),
        i => dynamic.get(i - DYNAMIC_START),
    }
}
