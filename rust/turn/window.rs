//! The live stream of a turn: accepted tokens, then the undecided window, with
//! the scanner state saved after each undecided token that changed it (most
//! prose changes nothing), so that a rejection restores one saved value and
//! never re-scans text. The key hash is not saved per token: `KeyCursor`
//! absorbs tokens only when a key needs them.
//!
//! Three positions meet here and are never mixed: a *live position* indexes
//! this stream (rejected tokens are gone from it), a *ledger position* indexes
//! every token ever drafted (`Ledger`), and a *byte offset* indexes the live text.

use super::key_cursor::KeyCursor;
use super::keys::CommitHasher;
use crate::ledger::Ledger;
use crate::scan::{ScanState, TextClass};
use std::ops::Range;

/// What changes per token and is saved after each undecided token that changes
/// it: 44 bytes (the key hash, 48 more, once was too; see `KeyCursor`). Saving it
/// costs less than rescanning the accepted part of a window after a rejection
/// would: at 6 of 8 tokens accepted, a few small copies against 6 tokens' scan.
/// Tokens that change nothing (most prose) save nothing: in a batch of hundreds
/// of sequences the saved states were a cache line or more written per sequence
/// and step.
#[derive(Debug, Clone, Copy)]
pub(super) struct Checkpoint {
    pub(super) scan: ScanState,
    /// Calls (and malformed blocks) that ended in this token so far: the next one's key ordinal.
    pub(super) ends: u32,
}

/// From byte `at` of the live text on, the text is of `class`: reported by the
/// token at live position `pos`, and gone with it when it is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shift {
    pub(super) pos: u32,
    pub(super) at: u32,
    pub(super) class: TextClass,
}

#[derive(Debug, Clone, Copy)]
struct LiveToken {
    ledger_at: u32,
    /// Byte offset one past its last byte in the live text.
    text_end: u32,
}

/// Bytes of text per token that a new stream makes room for: BPE pieces of
/// prose and JSON average about four.
const BYTES_PER_TOKEN: usize = 4;

/// The live text, its tokens, and the saved states.
#[derive(Debug)]
pub(super) struct Window {
    text: Vec<u8>,
    tokens: Vec<LiveToken>,
    /// The state after the last accepted token.
    base: Checkpoint,
    /// The state after each undecided token that changed it, with the token's index
    /// in the window: after a token without one, the state is the last one before it.
    saved: Vec<(u32, Checkpoint)>,
    /// Undecided live tokens: the ledger's undecided window, or on a drafted tree's
    /// walk the tokens of the path it stands on.
    undecided: usize,
    /// Where the text changes class (streaming output only), in stream order.
    shifts: Vec<Shift>,
    /// The key hash over the live tokens, absorbed when a key needs it.
    keys: KeyCursor,
    /// Live tokens accepted as of the last decision (`keep`, `rebase`): while a
    /// token is scanned it is appended but not yet saved, so `accepted_len` would
    /// count a drafted one as accepted, and the key hash would settle over it.
    decided: usize,
}

impl Window {
    /// An empty stream with room for `tokens` tokens and a draft window of
    /// `window` before any buffer grows.
    pub(super) fn new(base: Checkpoint, turn_key: &str, tokens: usize, window: usize) -> Self {
        let keys = KeyCursor::new(turn_key);
        let text = Vec::with_capacity(tokens * BYTES_PER_TOKEN);
        let (tokens, saved, shifts) = (Vec::with_capacity(tokens), Vec::with_capacity(window), Vec::new());
        Self { text, tokens, base, saved, undecided: 0, shifts, keys, decided: 0 }
    }

    /// Tokens the key hash absorbed over the turn (tests).
    #[cfg(test)]
    pub(super) fn keys_absorbed(&self) -> usize {
        self.keys.absorbed
    }

    /// Bytes its buffers have room for (tests).
    #[cfg(test)]
    pub(super) fn held_bytes(&self) -> usize {
        self.text.capacity()
            + self.tokens.capacity() * size_of::<LiveToken>()
            + self.saved.capacity() * size_of::<(u32, Checkpoint)>()
    }

    /// The key hash after live token `pos`; `ledger` holds the tokens as drafted.
    pub(super) fn hash_after(&mut self, pos: usize, ledger: &Ledger) -> CommitHasher {
        let tokens = &self.tokens;
        self.keys
            .hash_of(pos + 1, self.decided, |range| tokens[range].iter().map(|t| ledger.token(t.ledger_at as usize)))
    }

    /// Live tokens: accepted, then undecided.
    pub(super) fn len(&self) -> usize {
        self.tokens.len()
    }

    pub(super) fn accepted_len(&self) -> usize {
        self.tokens.len() - self.undecided
    }

    pub(super) fn text(&self) -> &[u8] {
        &self.text
    }

    pub(super) fn accepted_text(&self) -> &[u8] {
        let end = self.accepted_len().checked_sub(1).map_or(0, |last| self.tokens[last].text_end as usize);
        &self.text[..end]
    }

    /// The state after the last accepted token.
    pub(super) fn base(&self) -> Checkpoint {
        self.base
    }

    /// The state after the last live token: where the next token starts from.
    pub(super) fn last(&self) -> Checkpoint {
        self.saved.last().map_or(self.base, |&(_, cp)| cp)
    }

    /// Appends an undecided token's bytes; returns its live position and byte range.
    /// The caller bounds the text by `u32::MAX` before appending.
    #[inline]
    pub(super) fn append(&mut self, bytes: &[u8], ledger_at: usize) -> (usize, Range<usize>) {
        let start = self.text.len();
        self.text.extend_from_slice(bytes);
        self.tokens.push(LiveToken { ledger_at: ledger_at as u32, text_end: self.text.len() as u32 });
        (self.tokens.len() - 1, start..self.text.len())
    }

    /// Appends an undecided token that leaves the state as it was: `append`, then
    /// `save_unchanged`, inlined into a draft's run of such tokens.
    #[inline]
    pub(super) fn append_unchanged(&mut self, bytes: &[u8], ledger_at: usize) {
        self.append(bytes, ledger_at);
        self.save_unchanged();
    }

    /// Records that from byte `at` on the text is of `class`, as the token at `pos` says.
    pub(super) fn shift(&mut self, pos: usize, at: usize, class: TextClass) {
        self.shifts.push(Shift { pos: pos as u32, at: at as u32, class });
    }

    /// The shifts of the live tokens, in stream order.
    pub(super) fn shifts(&self) -> &[Shift] {
        &self.shifts
    }

    /// Drops the shifts of the live tokens past the first `len`.
    fn drop_shifts(&mut self, len: usize) {
        while self.shifts.last().is_some_and(|s| s.pos as usize >= len) {
            self.shifts.pop();
        }
    }

    /// The token just appended is accepted, with every live token before it
    /// (none is undecided): `checkpoint` is the state after it.
    pub(super) fn rebase(&mut self, checkpoint: Checkpoint) {
        debug_assert!(self.undecided == 0, "rebase over undecided tokens");
        self.base = checkpoint;
        self.decided = self.tokens.len();
        self.keys.accept(self.decided);
    }

    /// Saves the state after the token just appended.
    pub(super) fn save(&mut self, checkpoint: Checkpoint) {
        self.saved.push((self.undecided as u32, checkpoint));
        self.undecided += 1;
        debug_assert_eq!(self.accepted_len() + self.undecided, self.tokens.len());
    }

    /// The token just appended left the state as `last` has it.
    pub(super) fn save_unchanged(&mut self) {
        self.undecided += 1;
        debug_assert_eq!(self.accepted_len() + self.undecided, self.tokens.len());
    }

    /// How many saved states belong to the first `undecided` undecided tokens.
    fn saved_within(&self, undecided: usize) -> usize {
        self.saved.partition_point(|&(i, _)| (i as usize) < undecided)
    }

    /// The state after the first `undecided` undecided tokens.
    fn state_after(&self, undecided: usize) -> Checkpoint {
        self.saved_within(undecided).checked_sub(1).map_or(self.base, |last| self.saved[last].1)
    }

    /// The live position of the token holding byte `offset`. Offsets asked for
    /// are delimiter starts, usually a few tokens from the end (a section that
    /// holds no call reaches back to its opener): a binary search either way.
    pub(super) fn token_at(&self, offset: usize) -> usize {
        self.tokens.partition_point(|t| t.text_end as usize <= offset)
    }

    /// Ledger positions `first..=last` of the live tokens `start..=last`.
    pub(super) fn ledger_span(&self, start: usize, last: usize) -> Range<usize> {
        self.tokens[start].ledger_at as usize..self.tokens[last].ledger_at as usize + 1
    }

    /// A tree's depth-first walk starts (`true`) or ends (`false`): see `KeyCursor::walk`.
    pub(super) fn walk(&mut self, walking: bool) {
        self.keys.walk(walking);
    }

    /// Drops the undecided tokens past the first `undecided`, deciding nothing: a
    /// tree's depth-first walk steps back to a node's parent this way.
    pub(super) fn retreat(&mut self, undecided: usize) {
        let len = self.accepted_len() + undecided;
        self.drop_shifts(len);
        self.saved.truncate(self.saved_within(undecided));
        self.undecided = undecided;
        self.tokens.truncate(len);
        self.keys.truncate(len);
        self.text.truncate(self.tokens.last().map_or(0, |t| t.text_end as usize));
    }

    /// Keeps the first `len` live tokens (all accepted tokens and some undecided
    /// ones), which become accepted; drops the rest. A lookup, never a re-scan.
    pub(super) fn keep(&mut self, len: usize) {
        let accepted = self.accepted_len();
        debug_assert!(len >= accepted && len <= self.tokens.len());
        self.base = self.state_after(len - accepted);
        self.saved.clear();
        self.undecided = 0;
        self.drop_shifts(len);
        self.tokens.truncate(len);
        self.decided = len;
        self.keys.accept(len);
        self.text.truncate(self.tokens.last().map_or(0, |t| t.text_end as usize));
    }
}
