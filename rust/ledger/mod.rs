//! The ledger: every token drafted in a turn, in drafting order, with its
//! decision. Rejected tokens stay here (off the live stream) for audit. The
//! ledger owns the undecided window: its length is asked of the ledger alone.

mod decisions;

use decisions::Decisions;

use crate::error::CoreError;
use std::ops::Range;

/// What the verifier decided about one drafted token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenState {
    Undecided,
    Accepted,
    Rejected,
}

/// What the ledger keeps of a token: its id, or a piece given as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drafted<'a> {
    /// A token given by id: its piece is the vocabulary's, so it is not copied here.
    Id(u32),
    Piece(&'a [u8]),
}

/// A piece given as text: `len` bytes at `start`; a token given by id: `len` is `BY_ID`, `start` its id.
#[derive(Debug, Clone, Copy)]
struct TokenRecord {
    start: u32,
    len: u32,
}

const BY_ID: u32 = u32::MAX;

/// Per-token records and states. The undecided tokens are always a suffix
/// (the undecided window), so a decision is one range update of `Decisions`,
/// which covers the decided tokens only: a decision grows it, so drafting a
/// token touches it not at all.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The pieces of tokens given as text.
    bytes: Vec<u8>,
    tokens: Vec<TokenRecord>,
    /// Bytes of every token drafted, by id or as text.
    drafted_bytes: u64,
    decisions: Decisions,
    undecided_start: usize,
}

impl Ledger {
    /// An empty ledger with room for `tokens` tokens given by id before it grows.
    #[must_use]
    pub fn with_capacity(tokens: usize) -> Self {
        Self { tokens: Vec::with_capacity(tokens), ..Self::default() }
    }

    /// Bytes its per-token buffers have room for (tests).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.bytes.capacity() + self.tokens.capacity() * size_of::<TokenRecord>()
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Bytes of every token drafted, rejected ones included.
    #[must_use]
    pub fn byte_len(&self) -> u64 {
        self.drafted_bytes
    }

    /// Number of undecided tokens: the current draft window.
    #[must_use]
    pub fn undecided(&self) -> usize {
        self.len() - self.undecided_start
    }

    /// Appends an undecided token of `len` bytes and returns its ledger position.
    /// The caller has bounded the bytes drafted by `u32::MAX` (`Turn::check_room`).
    pub fn append(&mut self, token: Drafted<'_>, len: usize) -> usize {
        self.drafted_bytes += len as u64;
        let record = match token {
            Drafted::Id(id) => TokenRecord { start: id, len: BY_ID },
            Drafted::Piece(piece) => {
                debug_assert!(u32::try_from(self.bytes.len() + piece.len()).is_ok());
                let start = self.bytes.len() as u32;
                self.bytes.extend_from_slice(piece);
                TokenRecord { start, len: piece.len() as u32 }
            }
        };
        self.tokens.push(record);
        self.tokens.len() - 1
    }

    /// Appends a token already accepted (the verifier's correction) and returns
    /// its ledger position. Nothing may be undecided.
    pub(crate) fn append_accepted(&mut self, token: Drafted<'_>, len: usize) -> usize {
        debug_assert_eq!(self.undecided(), 0, "an accepted token after undecided ones");
        let i = self.append(token, len);
        self.decisions.accept(i);
        self.undecided_start = self.len();
        i
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
        self.decisions.decide(self.undecided_start..split, split..self.len());
        self.undecided_start = self.len();
    }

    /// Accepts the undecided tokens at `accepted` (ledger positions) and rejects
    /// every other undecided token: a token tree's verified path.
    ///
    /// ## Panics
    /// If a position is not undecided: the turn passes its checked path.
    pub(crate) fn decide_only(&mut self, accepted: impl Iterator<Item = usize>) {
        let window = self.undecided_start..self.len();
        self.decisions.decide(window.start..window.start, window.clone());
        for i in accepted {
            assert!(window.contains(&i), "decide_only: {i} is not undecided");
            self.decisions.accept(i);
        }
        self.undecided_start = self.len();
    }

    /// Past the decided tokens a token is undecided: neither bit is set.
    #[must_use]
    pub fn state(&self, i: usize) -> TokenState {
        match self.decisions.get(i) {
            (true, _) => TokenState::Accepted,
            (_, true) => TokenState::Rejected,
            _ => TokenState::Undecided,
        }
    }

    /// Token `i` as drafted: its id, or its piece.
    #[must_use]
    pub fn token(&self, i: usize) -> Drafted<'_> {
        let t = self.tokens[i];
        if t.len == BY_ID {
            Drafted::Id(t.start)
        } else {
            Drafted::Piece(&self.bytes[t.start as usize..(t.start + t.len) as usize])
        }
    }

    /// Whether a block whose tokens lie in ledger positions `span` and which
    /// has `live_tokens` tokens on the live stream is accepted whole: nothing in
    /// its span is undecided and exactly its own tokens are accepted (any
    /// rejected tokens inside the span are drafts the block was rebuilt past).
    /// A word pair at a time.
    #[must_use]
    pub fn is_accepted_whole(&self, span: Range<usize>, live_tokens: usize) -> bool {
        if span.is_empty() || span.end > self.len() {
            return false;
        }
        let (accepted, rejected) = self.decisions.count(span.clone());
        accepted == live_tokens && accepted + rejected == span.len() && self.decisions.get(span.end - 1).0
    }

    /// Maximal runs of rejected tokens, for audit.
    #[must_use]
    pub fn rejected_runs(&self) -> Vec<Range<usize>> {
        let mut runs: Vec<Range<usize>> = Vec::new();
        for i in 0..self.len() {
            if self.decisions.get(i).1 {
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
            let piece = format!("t{i}");
            l.append(Drafted::Piece(piece.as_bytes()), piece.len());
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
        assert_eq!(l.token(4), Drafted::Piece(b"t4"));
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
        l.append(Drafted::Id(7), 1); // 4
        assert_eq!(l.token(4), Drafted::Id(7));
        l.decide(1);
        // A block built from tokens 0,1,4 spans ledger 0..5 with 3 live tokens.
        assert!(l.is_accepted_whole(0..5, 3));
        assert!(!l.is_accepted_whole(0..5, 4));
        assert!(!l.is_accepted_whole(2..4, 0));
        assert_eq!(l.rejected_runs(), vec![2..4]);
        l.append(Drafted::Piece(b"d"), 1);
        assert_eq!(l.byte_len(), 2 * 4 + 1 + 1);
        assert!(!l.is_accepted_whole(4..6, 2), "undecided token inside");
    }
}
