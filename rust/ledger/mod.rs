//! The ledger: every token drafted in a turn, in drafting order, with its
//! decision. Rejected tokens stay here (off the live stream) for audit.

mod bitset;
pub mod commit_key;

pub use bitset::BitSet;
pub use commit_key::{CommitHasher, CommitKey};

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

/// The outcome of one `decide`: which ledger positions became accepted and rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub accepted: Range<usize>,
    pub rejected: Range<usize>,
}

/// Per-token pieces and states. The undecided tokens are always a suffix
/// (the pending window), so a decision is two range updates on the bitsets.
#[derive(Debug, Default)]
pub struct Ledger {
    bytes: Vec<u8>,
    tokens: Vec<TokenRecord>,
    accepted: BitSet,
    rejected: BitSet,
    pending_start: usize,
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
    pub fn pending(&self) -> usize {
        self.len() - self.pending_start
    }

    /// Appends an undecided token and returns its ledger position.
    pub fn append(&mut self, piece: &[u8]) -> Result<usize, CoreError> {
        let start = u32::try_from(self.bytes.len()).map_err(|_| CoreError::StreamTooLong)?;
        let len = u32::try_from(piece.len()).map_err(|_| CoreError::StreamTooLong)?;
        start.checked_add(len).ok_or(CoreError::StreamTooLong)?;
        self.bytes.extend_from_slice(piece);
        self.tokens.push(TokenRecord { start, len });
        self.accepted.push_clear();
        self.rejected.push_clear();
        Ok(self.tokens.len() - 1)
    }

    /// Accepts the first `n` pending tokens and rejects the rest of the window.
    pub fn decide(&mut self, n: usize) -> Result<Decision, CoreError> {
        let pending = self.pending();
        if n > pending {
            return Err(CoreError::VerifyTooMany { requested: n, pending });
        }
        let split = self.pending_start + n;
        let decision = Decision { accepted: self.pending_start..split, rejected: split..self.len() };
        self.accepted.set_range(decision.accepted.clone());
        self.rejected.set_range(decision.rejected.clone());
        self.pending_start = self.len();
        Ok(decision)
    }

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
            l.append(format!("t{i}").as_bytes()).unwrap();
        }
        l
    }

    #[test]
    fn decide_splits_the_window() {
        let mut l = ledger_with(5);
        let d = l.decide(3).unwrap();
        assert_eq!(d, Decision { accepted: 0..3, rejected: 3..5 });
        assert_eq!(l.state(2), TokenState::Accepted);
        assert_eq!(l.state(3), TokenState::Rejected);
        assert_eq!(l.pending(), 0);
        assert_eq!(l.piece(4), b"t4");
    }

    #[test]
    fn verify_too_many_leaves_state() {
        let mut l = ledger_with(2);
        assert_eq!(l.decide(3), Err(CoreError::VerifyTooMany { requested: 3, pending: 2 }));
        assert_eq!(l.pending(), 2);
        assert_eq!(l.state(0), TokenState::Undecided);
    }

    #[test]
    fn block_acceptance_skips_rebuilt_drafts() {
        let mut l = ledger_with(4);
        l.decide(2).unwrap(); // 0,1 accepted; 2,3 rejected
        l.append(b"c").unwrap(); // 4
        l.decide(1).unwrap();
        // A block built from tokens 0,1,4 spans ledger 0..5 with 3 live tokens.
        assert!(l.is_accepted_whole(0..5, 3));
        assert!(!l.is_accepted_whole(0..5, 4));
        assert!(!l.is_accepted_whole(2..4, 0));
        assert_eq!(l.rejected_runs(), vec![2..4]);
        l.append(b"d").unwrap();
        assert!(!l.is_accepted_whole(4..6, 2), "undecided token inside");
    }
}
