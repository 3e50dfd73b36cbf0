//! The commit-key hash of the live stream, absorbed lazily: a token is hashed
//! only when a key at or after it is needed, and then once, in bulk with the
//! tokens before it.
//!
//! A key is `commit_key(turn_key, tokens[..end], ordinal)`: the hash of every
//! live token through the one a block ended in. Most tokens end no block, and
//! a drafted token may be rejected before any key needs it, so hashing each
//! token as it is drafted (and saving the hash with it, for a rollback to
//! restore) cost more than the scanner's whole work on prose. Instead two
//! running states are kept:
//! - `settled`: the hash of a prefix of the accepted tokens. A rejection never
//!   reaches it, so it only moves forward: to the accepted frontier whenever a
//!   key's absorbing passes it, so a key taken in a drafted token that is then
//!   rejected (a closer drafted and rejected step after step) costs the tokens
//!   since the frontier, never the turn again;
//! - `ahead`: the hash of a longer prefix, undecided tokens included (where the
//!   last key was taken). A rejection that drops any token of it resets it to
//!   `settled` (a tree's walk: below); an acceptance that keeps it whole settles it.
//!
//! On a tree's walk (`walk`) the live tokens past the accepted ones are the
//! path to the node being scanned, and the walk steps back to a node's parent
//! before each of its other children: resetting `ahead` to `settled` there made
//! a key on a sibling branch absorb the whole shared path again, so a deep tree
//! whose branches close blocks cost the square of its depth. While walking, the
//! hash after each undecided token absorbed is kept (`trail`): a step back keeps
//! the states of the path it keeps, and each node is absorbed about once.
//!
//! Each accepted token is absorbed once over the turn (a rescan after a
//! rejection absorbs at most the undecided tokens again); the keys are byte for
//! byte what absorbing every token as drafted gave (`keys.rs`, tested against
//! the `siphasher` crate; `turn::tests` compare with a hasher fed token by token).

use super::keys::CommitHasher;
use crate::ledger::Drafted;
use std::ops::Range;

/// Lengths (live tokens absorbed) first and together: a decision reads only
/// them when no key was taken since the last one, and writes nothing.
#[derive(Debug, Clone)]
#[repr(C)]
pub(super) struct KeyCursor {
    settled_len: usize,
    ahead_len: usize,
    settled: CommitHasher,
    ahead: CommitHasher,
    /// On a tree's walk: `(len, hash of the first len live tokens)` for each
    /// undecided token absorbed, `len` increasing, all within `settled_len..=ahead_len`
    /// (the walk decides nothing: `settled` stays below them). Empty off a walk.
    trail: Vec<(usize, CommitHasher)>,
    /// A tree's walk is scanning: keep the `trail`.
    walking: bool,
    /// Tokens absorbed over the turn (tests: each accepted token about once).
    #[cfg(test)]
    pub(super) absorbed: usize,
}

impl KeyCursor {
    pub(super) fn new(turn_key: &str) -> Self {
        let start = CommitHasher::new(turn_key);
        let trail = Vec::new();
        #[cfg(test)]
        return Self { settled_len: 0, ahead_len: 0, settled: start, ahead: start, trail, walking: false, absorbed: 0 };
        #[cfg(not(test))]
        Self { settled_len: 0, ahead_len: 0, settled: start, ahead: start, trail, walking: false }
    }

    /// A tree's walk starts (`true`) or ends (`false`): while it walks, keys keep
    /// the hash after each undecided token they absorb, for the walk's steps back.
    pub(super) fn walk(&mut self, walking: bool) {
        self.walking = walking;
        if !walking {
            self.trail = Vec::new();
        }
    }

    /// The hash of the first `len` live tokens, of which the first `accepted`
    /// are accepted; `tokens(range)` yields those live tokens as drafted. `len` is at least
    /// `accepted` (keys are taken at the newest token, or at the end of the turn).
    pub(super) fn hash_of<'a, I: Iterator<Item = Drafted<'a>>>(
        &mut self,
        len: usize,
        accepted: usize,
        tokens: impl Fn(Range<usize>) -> I,
    ) -> CommitHasher {
        debug_assert!(len >= accepted && accepted >= self.settled_len, "a key before the accepted tokens");
        self.truncate(len);
        let (mut hash, mut from) = (self.ahead, self.ahead_len);
        #[cfg(test)]
        {
            self.absorbed += len.saturating_sub(from);
        }
        if from < accepted {
            // The absorbing passes the accepted frontier: settle there on the way.
            hash.absorb_all(tokens(from..accepted));
            (self.settled, self.settled_len, from) = (hash, accepted, accepted);
        }
        if self.walking {
            Self::absorb_kept(&mut hash, from, len, tokens, &mut self.trail);
        } else {
            hash.absorb_all(tokens(from..len));
        }
        (self.ahead, self.ahead_len) = (hash, len);
        hash
    }

    /// Absorbs live tokens `from..len` into `hash` on a tree's walk, keeping the
    /// hash after each in `trail`.
    #[cold]
    #[inline(never)]
    fn absorb_kept<'a, I: Iterator<Item = Drafted<'a>>>(
        hash: &mut CommitHasher,
        from: usize,
        len: usize,
        tokens: impl Fn(Range<usize>) -> I,
        trail: &mut Vec<(usize, CommitHasher)>,
    ) {
        for (at, token) in (from + 1..=len).zip(tokens(from..len)) {
            hash.absorb_all(std::iter::once(token));
            trail.push((at, *hash));
        }
    }

    /// The live stream was cut back to `len` tokens, none of them accepted ones (a
    /// rejection, or a tree's walk stepping back to a node's parent): `ahead` goes
    /// back to the longest hash within `len` that the `trail` keeps, else to `settled`.
    /// The trail lies within `ahead_len`, so when `ahead` is within `len` it is too.
    #[inline]
    pub(super) fn truncate(&mut self, len: usize) {
        if self.ahead_len > len {
            while self.trail.last().is_some_and(|&(at, _)| at > len) {
                self.trail.pop();
            }
            (self.ahead, self.ahead_len) =
                self.trail.last().map_or((self.settled, self.settled_len), |&(at, h)| (h, at));
        }
    }

    /// The first `len` live tokens are accepted (and no more are live).
    #[inline]
    pub(super) fn accept(&mut self, len: usize) {
        self.truncate(len);
        if self.ahead_len != self.settled_len {
            (self.settled, self.settled_len) = (self.ahead, self.ahead_len);
        }
    }
}
