//! The vocabulary: token ids to the bytes the model emits for them. Built once
//! per model (O(vocabulary)), immutable, and shared by every turn through an
//! `Arc`, so attaching it to a stream costs O(1).
//!
//! - `decode`: tokenizer pieces (GPT-2 byte-level, SentencePiece) to raw bytes;
//! - `tokenizer_json`: a `tokenizers` tokenizer's saved JSON to a vocabulary.

pub(crate) mod decode;
pub mod tokenizer_json;

use crate::error::CoreError;
use std::collections::HashMap;
use std::ops::Range;

/// Ids above this are refused: the table is dense, and real vocabularies
/// stay far below it (the largest in use are about 260k).
pub(crate) const MAX_TOKEN_ID: u32 = (1 << 22) - 1;

/// Where an id's piece lies in the byte arena; `ABSENT` for ids with none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

const ABSENT: Span = Span { start: u32::MAX, end: 0 };

/// A dense id -> piece table over one byte arena. Lookups are one index, on the
/// per-token path. An index from piece text to ids answers "which ids spell this
/// delimiter", so binding a format's special tokens looks up only its
/// delimiters, never the whole vocabulary.
#[derive(Debug, Default)]
pub struct Vocab {
    bytes: Vec<u8>,
    spans: Vec<Span>,
    /// Open addressing over the distinct pieces' hashes, linear probing: `id + 1` of the
    /// first id with the piece, 0 for empty. A piece lies in the probe run that starts at
    /// its hash, so a lookup walks that run to the piece or to its first empty slot.
    by_piece: Vec<u32>,
    /// The other ids that spell the piece of an id in `by_piece`. Empty for real
    /// vocabularies; in the table, each would have lengthened the one probe run every id
    /// with that piece walks (a vocabulary of 128k equal placeholders took 5 s to build).
    same: HashMap<u32, Vec<u32>>,
    len: usize,
    /// Every id below it has a piece: a window of such ids resolves, checked by its largest.
    dense: u64,
    /// The longest piece: bounds the bytes a window of `n` ids adds without resolving them.
    longest: u64,
}

/// Builds a `Vocab`: insertions may replace earlier ones (a special token
/// overriding a piece), and the index is built once at the end.
#[derive(Debug, Default)]
pub struct VocabBuilder {
    bytes: Vec<u8>,
    spans: Vec<Span>,
}

impl VocabBuilder {
    /// Adds or replaces the piece of `id`.
    pub fn insert(&mut self, id: u64, piece: &[u8]) -> Result<(), CoreError> {
        let idx = index(id)?;
        let start = self.bytes.len();
        let end = start + piece.len();
        if end >= u32::MAX as usize {
            return Err(CoreError::OutOfRange {
                what: "the vocabulary",
                value: format!("{end} bytes of pieces"),
                expected: "under 4 GiB",
            });
        }
        if idx >= self.spans.len() {
            self.spans.resize(idx + 1, ABSENT);
        }
        self.bytes.extend_from_slice(piece);
        self.spans[idx] = Span { start: start as u32, end: end as u32 };
        Ok(())
    }

    /// Adds a special token: like `insert`, but its spelling may not be empty.
    pub fn insert_special(&mut self, id: u64, text: &[u8]) -> Result<(), CoreError> {
        if text.is_empty() {
            return Err(CoreError::EmptySpecialToken { id });
        }
        self.insert(id, text)
    }

    /// The vocabulary, with its index from pieces to ids.
    #[must_use]
    pub fn build(self) -> Vocab {
        let len = self.spans.iter().filter(|s| **s != ABSENT).count();
        let dense = self.spans.iter().position(|s| *s == ABSENT).unwrap_or(self.spans.len()) as u64;
        let longest = self.spans.iter().filter(|s| **s != ABSENT).map(|s| u64::from(s.end - s.start)).max();
        let longest = longest.unwrap_or(0);
        let (bytes, spans) = (self.bytes, self.spans);
        let size = (len * 2).next_power_of_two().max(16);
        let mut table = vec![0u32; size];
        let mut same: HashMap<u32, Vec<u32>> = HashMap::new();
        for (id, span) in spans.iter().enumerate() {
            if *span == ABSENT {
                continue;
            }
            match probe(&table, &bytes, &spans, &bytes[range(*span)]) {
                Ok(first) => same.entry(first).or_default().push(id as u32),
                Err(empty) => table[empty] = id as u32 + 1,
            }
        }
        Vocab { bytes, spans, by_piece: table, same, len, dense, longest }
    }
}

impl Vocab {
    /// Whether it holds no piece at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of ids that have a piece.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Every id below this one has a piece (`piece` succeeds for it).
    #[must_use]
    pub fn dense_below(&self) -> u64 {
        self.dense
    }

    /// The length of the longest piece.
    #[must_use]
    pub fn longest_piece(&self) -> u64 {
        self.longest
    }

    /// The piece of `id`.
    #[inline]
    pub fn piece(&self, id: u64) -> Result<&[u8], CoreError> {
        match self.spans.get(usize::try_from(id).unwrap_or(usize::MAX)) {
            // No piece starts at u32::MAX (the arena stays below it): one compare for ABSENT.
            Some(&span) if span.start != ABSENT.start => Ok(&self.bytes[range(span)]),
            _ if id > u64::from(MAX_TOKEN_ID) => Err(CoreError::TokenIdTooLarge { id, max: u64::from(MAX_TOKEN_ID) }),
            _ => Err(CoreError::UnknownTokenId { id, has_vocab: !self.is_empty() }),
        }
    }

    /// The piece of `id`, an id below `dense_below` (which always has one): no
    /// error to build on the per-token path. Empty for any other id.
    #[inline]
    #[must_use]
    pub(crate) fn piece_below_dense(&self, id: u32) -> &[u8] {
        self.spans.get(id as usize).and_then(|&span| self.bytes.get(range(span))).unwrap_or_default()
    }

    /// Every id whose piece is exactly `text`, in no particular order. Costs the
    /// probe run of `text`'s hash, about one slot: the table is at most half full.
    pub fn ids_spelled<'a>(&'a self, text: &'a [u8]) -> impl Iterator<Item = u32> + 'a {
        let first = self.first_spelling(text);
        let others = first.and_then(|id| self.same.get(&id)).map_or(&[][..], Vec::as_slice);
        first.into_iter().chain(others.iter().copied())
    }

    /// The id of `text` in the index (`by_piece`), if any id spells it.
    fn first_spelling(&self, text: &[u8]) -> Option<u32> {
        if self.by_piece.is_empty() {
            return None; // a vocabulary never built (`Vocab::default`)
        }
        probe(&self.by_piece, &self.bytes, &self.spans, text).ok()
    }
}

/// Walks `piece`'s probe run in `table` (a power of two long, never full): the first id
/// that spells it, or the empty slot that ends the run, where it would go.
fn probe(table: &[u32], bytes: &[u8], spans: &[Span], piece: &[u8]) -> Result<u32, usize> {
    let mask = table.len() - 1;
    let mut slot = hash(piece) & mask;
    loop {
        let Some(id) = table[slot].checked_sub(1) else { return Err(slot) };
        if &bytes[range(spans[id as usize])] == piece {
            return Ok(id);
        }
        slot = (slot + 1) & mask;
    }
}

fn range(span: Span) -> Range<usize> {
    span.start as usize..span.end as usize
}

fn index(id: u64) -> Result<usize, CoreError> {
    if id > u64::from(MAX_TOKEN_ID) {
        return Err(CoreError::TokenIdTooLarge { id, max: u64::from(MAX_TOKEN_ID) });
    }
    Ok(id as usize)
}

/// FNV-1a: pieces are short, and the index is built once per model.
fn hash(bytes: &[u8]) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h ^ (h >> 32)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        let v = VocabBuilder::default().build();
        assert!(matches!(v.piece(3), Err(CoreError::UnknownTokenId { id: 3, has_vocab: false })));
        let mut b = VocabBuilder::default();
        b.insert(3, b"abc").unwrap();
        assert!(b.insert(u64::from(MAX_TOKEN_ID) + 1, b"x").is_err());
        assert!(matches!(b.insert_special(4, b""), Err(CoreError::EmptySpecialToken { id: 4 })));
        let v = b.build();
        assert_eq!(v.piece(3).unwrap(), b"abc");
        assert_eq!(v.len(), 1);
        assert!(matches!(v.piece(2), Err(CoreError::UnknownTokenId { id: 2, has_vocab: true })));
        assert!(matches!(v.piece(u64::MAX), Err(CoreError::TokenIdTooLarge { .. })));
    }

    #[test]
    fn later_insertions_replace_and_the_index_finds_every_spelling() {
        let mut b = VocabBuilder::default();
        for id in 0..5000u64 {
            b.insert(id, format!("p{}", id % 1000).as_bytes()).unwrap();
        }
        b.insert(7, b"<tool_call>").unwrap();
        b.insert_special(9000, b"<tool_call>").unwrap();
        let v = b.build();
        assert_eq!(v.len(), 5001);
        let mut ids: Vec<u32> = v.ids_spelled(b"<tool_call>").collect();
        ids.sort_unstable();
        assert_eq!(ids, [7, 9000]);
        let mut ids: Vec<u32> = v.ids_spelled(b"p3").collect();
        ids.sort_unstable();
        assert_eq!(ids, [3, 1003, 2003, 3003, 4003]);
        assert_eq!(v.ids_spelled(b"p7").count(), 4, "id 7 was replaced");
        assert_eq!(v.ids_spelled(b"absent").count(), 0);
        assert_eq!(VocabBuilder::default().build().ids_spelled(b"x").count(), 0);
    }

    #[test]
    fn ids_that_share_a_piece_share_one_slot() {
        // Placeholder vocabularies spell many ids alike: each used to take a slot of the one
        // probe run they all walk, so building took time quadratic in them.
        let mut b = VocabBuilder::default();
        for id in 0..20_000u64 {
            b.insert(id, if id % 2 == 0 { b"" } else { b"<pad>" }).unwrap();
        }
        b.insert(20_000, b"x").unwrap();
        let v = b.build();
        assert_eq!(v.by_piece.iter().filter(|&&e| e != 0).count(), 3, "one slot per distinct piece");
        let mut pads: Vec<u32> = v.ids_spelled(b"<pad>").collect();
        pads.sort_unstable();
        assert_eq!(pads, (1..20_000).step_by(2).collect::<Vec<u32>>());
        assert_eq!(v.ids_spelled(b"").count(), 10_000);
        assert_eq!(v.ids_spelled(b"x").collect::<Vec<_>>(), [20_000]);
    }
}
