//! What the encoder wrote for each field of the last blocks, by the field's place in
//! its block, so that a block that repeats the last one's fields is copied, not
//! encoded again.
//!
//! A server's answers repeat their fields in the same order (`server`, `date`,
//! `content-type`, ...), so the field at place `i` of a block is usually the one at
//! place `i` of the block before: one comparison finds it, with no static-table hash
//! or dynamic-table scan. Two things are kept per place:
//! - `Whole`: the field was written as one index (static or dynamic); the same name
//!   and value are written as the same bytes;
//! - `Name`: the field was a literal left out of the table (without indexing, or
//!   never indexed) whose name was an index, as chosen by its name alone
//!   (`x-request-id`, `content-length`); the same name is written with the same
//!   first bytes, then its new value as a string, Huffman-coded by the place's own
//!   coder (`huffman::Resumable`): from where the last value it coded and this one
//!   part, so a request id's digits shared with the one before are not coded again.
//!
//! Either is true only while the dynamic table is the one it was written against:
//! each entry keeps the encoder's `generation`, which every change to the table
//! (an insertion, a new size) moves on. Fields written with incremental indexing
//! change the table, so they are never kept. Whatever is kept, the bytes are ones
//! the encoder chose for this table; only a `Name` literal may now skip a better
//! encoding (its new value happens to be in the table whole), which costs bytes,
//! never correctness: the table is left alone either way.

use super::huffman::Resumable;

/// Places kept: a response's fields past these are encoded as they come.
pub(super) const PLACES: usize = 16;

/// How a field at one place was written.
pub(super) enum Kept {
    Whole,
    Name,
}

struct Place {
    generation: u64,
    kind: Kept,
    /// The name, then (for `Whole`) the value.
    key: Vec<u8>,
    name_len: usize,
    /// The bytes written: the whole field, or the literal's first bytes (its name).
    bytes: [u8; 4],
    len: u8,
    /// For `Name`: the coder of the values written at this place (made on first use).
    coder: Option<Box<Resumable>>,
}

#[derive(Default)]
pub(super) struct Memo {
    places: Vec<Place>,
}

impl Memo {
    /// The bytes kept for `(name, value)` at `place`, and when the value is still to
    /// be written after them, the place's coder to write it with.
    #[inline]
    pub(super) fn find(
        &mut self,
        place: usize,
        generation: u64,
        name: &[u8],
        value: &[u8],
    ) -> Option<(&[u8], Option<&mut Resumable>)> {
        let p = self.places.get_mut(place)?;
        if p.generation != generation || p.key[..p.name_len] != *name {
            return None;
        }
        let bytes = &p.bytes[..usize::from(p.len)];
        match p.kind {
            Kept::Whole if p.key[p.name_len..] == *value => Some((bytes, None)),
            Kept::Whole => None,
            Kept::Name => Some((bytes, Some(p.coder.get_or_insert_with(Box::default)))),
        }
    }

    /// Keeps what was written for the field at `place` (`bytes`: as much as `kind`
    /// says), or forgets the place.
    pub(super) fn keep(
        &mut self,
        place: usize,
        generation: u64,
        kind: Option<Kept>,
        name: &[u8],
        value: &[u8],
        bytes: &[u8],
    ) {
        if place >= PLACES {
            return;
        }
        while self.places.len() <= place {
            self.places.push(Place {
                generation: u64::MAX,
                kind: Kept::Whole,
                key: Vec::new(),
                name_len: 0,
                bytes: [0; 4],
                len: 0,
                coder: None,
            });
        }
        let p = &mut self.places[place];
        let Some(kind) = kind.filter(|_| bytes.len() <= p.bytes.len()) else {
            p.generation = u64::MAX;
            return;
        };
        p.key.clear();
        p.key.extend_from_slice(name);
        if let Kept::Whole = kind {
            p.key.extend_from_slice(value);
        }
        p.name_len = name.len();
        p.bytes[..bytes.len()].copy_from_slice(bytes);
        p.len = u8::try_from(bytes.len()).unwrap_or(0);
        p.kind = kind;
        p.generation = generation;
    }
}
