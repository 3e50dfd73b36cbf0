//! The ledger: every token drafted in a turn, in drafting order, with its
//! decision. Rejected tokens stay here (off the live stream) for audit. The
//! ledger owns the undecided window: its length is asked of the ledger alone.

mod bitset;

use bitset::BitSet;

use crate::error::CoreError;
use std::ops::Range;

/// What the verifier decided about one drafted token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenState {
    Undecided,
    Accepted,
    Rejected,
}

#[derive(Debug, Clone, Copy)]
struct TokenRecord {
    start: u32,
    len: u32,
}

/// Per-token pieces and states. The undecided tokens are always a suffix
/// (the undecided window), so a decision is two range updates on the bitsets.
/// The bitsets cover the decided tokens only: a decision grows them, so
/// drafting a token touches neither.
#[derive(Debug, Default)]
pub struct Ledger {
    bytes: Vec<u8>,
    tokens: Vec<TokenRecord>,
    accepted: BitSet,
    rejected: BitSet,
    undecided_start: usize,
}

impl Ledger {
    #[must_use]
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Bytes of every piece drafted, rejected ones included.
    #[must_use]
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// Number of undecided tokens: the current draft window.
    #[must_use]
    pub fn undecided(&self) -> usize {
        self.len() - self.undecided_start
    }

    /// Appends an undecided token and returns its ledger position. The caller has
    /// bounded the ledger's bytes by `u32::MAX` (`Turn::check_room`).
    pub fn append(&mut self, piece: &[u8]) -> usize {
        debug_assert!(u32::try_from(self.bytes.len() + piece.len()).is_ok());
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(piece);
        self.tokens.push(TokenRecord { start, len: piece.len() as u32 });
        self.tokens.len() - 1
    }

    /// Whether `n` undecided tokens can be accepted: the one check of a verify count.
    pub fn check_decision(&self, n: usize) -> Result<(), CoreError> {
        let undecided = self.undecided();
        if n > undecided {
            return Err(CoreError::VerifyTooMany { requested: n.to_string(), pending: undecided });
        }
        Ok(())
    }

    /// Accepts the first `n` undecided tokens and rejects the rest of the window.
    ///
    /// ## Panics
    /// If `n` is more than are undecided: `check_decision` first.
    pub(crate) fn decide(&mut self, n: usize) {
        let split = self.undecided_start + n;
        assert!(split <= self.len(), "decide({n}) with {} undecided", self.undecided());
        self.cover_window();
        self.accepted.set_range(self.undecided_start..split);
        self.rejected.set_range(split..self.len());
        self.undecided_start = self.len();
    }

    /// Accepts the undecided tokens at `accepted` (ledger positions) and rejects
    /// every other undecided token: a token tree's verified path.
    ///
    /// ## Panics
    /// If a position is not undecided: the turn passes its checked path.
    pub(crate) fn decide_only(&mut self, accepted: impl Iterator<Item = usize>) {
        let window = self.undecided_start..self.len();
        self.cover_window();
        self.rejected.set_range(window.clone());
        for i in accepted {
            assert!(window.contains(&i), "decide_only: {i} is not undecided");
            self.rejected.clear(i);
            self.accepted.set(i);
        }
        self.undecided_start = self.len();
    }

    /// Grows the bitsets over the undecided window, about to be decided.
    fn cover_window(&mut self) {
        self.accepted.grow(self.len());
        self.rejected.grow(self.len());
    }

    /// Past the bitsets' end a token is undecided: neither bit is set.
    #[must_use]
    pub fn state(&self, i: usize) -> TokenState {
        if self.accepted.get(i) {
            TokenState::Accepted
        } else if self.rejected.get(i) {
            TokenState::Rejected
        } else {
            TokenState::Undecided
        }
    }

    #[must_use]
    pub fn piece(&self, i: usize) -> &[u8] {
        let t = self.tokens[i];
        &self.bytes[t.start as usize..(t.start + t.len) as usize]
    }

    /// Whether a block whose tokens lie in ledger positions `span` and which
    /// has `live_tokens` tokens on the live stream is accepted whole: nothing in
    /// its span is undecided and exactly its own tokens are accepted (any
    /// rejected tokens inside the span are drafts the block was rebuilt past).
    /// Word-at-a-time over both bitsets.
    #[must_use]
    pub fn is_accepted_whole(&self, span: Range<usize>, live_tokens: usize) -> bool {
        if span.is_empty() || span.end > self.len() {
            return false;
        }
        let accepted = self.accepted.count_ones(span.clone());
        let rejected = self.rejected.count_ones(span.clone());
        accepted == live_tokens && accepted + rejected == span.len() && self.accepted.get(span.end - 1)
    }

    /// Maximal runs of rejected tokens, for audit.
    #[must_use]
    pub fn rejected_runs(&self) -> Vec<Range<usize>> {
        let mut runs: Vec<Range<usize>> = Vec::new();
        for i in 0..self.len() {
            if self.rejected.get(i) {
                match runs.last_mut() {
                    Some(r) if r.end == i => r.end = i + 1,
                    _ => runs.push(i..i + 1),
                }
            }
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger_with(n: usize) -> Ledger {
        let mut l = Ledger::default();
        for i in 0..n {
            l.append(format!("t{i}").as_bytes());
        }
        l
    }

    #[test]
    fn decide_splits_the_window() {
        let mut l = ledger_with(5);
        l.decide(3);
        assert_eq!(l.state(2), TokenState::Accepted);
        assert_eq!(l.state(3), TokenState::Rejected);
        assert_eq!(l.undecided(), 0);
        assert_eq!(l.piece(4), b"t4");
    }

    #[test]
    fn verify_too_many_is_refused_before_anything_changes() {
        let l = ledger_with(2);
        assert_eq!(l.check_decision(3), Err(CoreError::VerifyTooMany { requested: "3".into(), pending: 2 }));
        assert_eq!(l.check_decision(2), Ok(()));
        assert_eq!(l.undecided(), 2);
        assert_eq!(l.state(0), TokenState::Undecided);
    }

    #[test]
    fn block_acceptance_skips_rebuilt_drafts() {
        let mut l = ledger_with(4);
        l.decide(2); // 0,1 accepted; 2,3 rejected
        l.append(b"c"); // 4
        l.decide(1);
        // A block built from tokens 0,1,4 spans ledger 0..5 with 3 live tokens.
        assert!(l.is_accepted_whole(0..5, 3));
        assert!(!l.is_accepted_whole(0..5, 4));
        assert!(!l.is_accepted_whole(2..4, 0));
        assert_eq!(l.rejected_runs(), vec![2..4]);
        l.append(b"d");
        assert!(!l.is_accepted_whole(4..6, 2), "undecided token inside");
    }
}
