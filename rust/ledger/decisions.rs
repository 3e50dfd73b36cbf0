//! Every ledger position's decision, two bits a position (accepted, rejected;
//! neither: undecided), laid out so that deciding a window touches one word pair.
//!
//! The two bitsets this replaces each grew and were set on their own, twice a
//! verify (its decision, then the correction): about a seventh of a batch's
//! verify went to them. Here the accepted and rejected words of the same 64
//! positions sit side by side, one length covers both, and a verify's decision
//! of a window (a few positions, nearly always within one or two word pairs) is
//! one growth check and a mask or two per pair.

use std::ops::Range;

/// The words of 64 positions: which are accepted, which rejected.
#[derive(Debug, Clone, Copy, Default)]
struct Pair {
    accepted: u64,
    rejected: u64,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Decisions {
    pairs: Vec<Pair>,
    /// Positions covered: every position below it is undecided unless set.
    len: usize,
}

/// The bits of the word at `word` (positions `64 * word ..`) that fall in `range`.
#[inline]
fn mask(word: usize, range: &Range<usize>) -> u64 {
    let lo = word * 64;
    let from = range.start.saturating_sub(lo).min(64);
    let to = range.end.saturating_sub(lo).min(64);
    if from >= to {
        return 0;
    }
    let high = if to == 64 { u64::MAX } else { (1u64 << to) - 1 };
    high & !((1u64 << from) - 1)
}

/// The bits of `range`, which lies within one word.
#[inline]
fn bits_within(range: &Range<usize>) -> u64 {
    match range.end - range.start {
        0 => 0,
        n => (u64::MAX >> (64 - n)) << (range.start % 64),
    }
}

/// The words `range` touches.
#[inline]
fn words(range: &Range<usize>) -> Range<usize> {
    if range.start >= range.end {
        return 0..0;
    }
    range.start / 64..range.end.div_ceil(64)
}

impl Decisions {
    /// Covers positions below `len` (the new ones undecided); a shorter `len` changes nothing.
    #[inline]
    fn cover(&mut self, len: usize) {
        if len > self.len {
            let need = len.div_ceil(64);
            if need > self.pairs.len() {
                self.pairs.resize(need, Pair::default());
            }
            self.len = len;
        }
    }

    /// Decides the window `accepted.start..rejected.end`: `accepted` first, then
    /// `rejected` (adjacent ranges, either may be empty), all undecided before.
    /// A verify's window (a few positions within one word pair that is there
    /// already, unless the window starts a new one) inline; any other in a call.
    #[inline(always)]
    #[allow(clippy::inline_always)]
    pub(super) fn decide(&mut self, accepted: Range<usize>, rejected: Range<usize>) {
        debug_assert!(accepted.end == rejected.start, "a window decided in two pieces");
        let window = accepted.start..rejected.end;
        if window.is_empty() {
            return;
        }
        let word = window.start / 64;
        if word == (window.end - 1) / 64 {
            if let Some(pair) = self.pairs.get_mut(word) {
                pair.accepted |= bits_within(&accepted);
                pair.rejected |= bits_within(&rejected);
                self.len = self.len.max(window.end); // `cover`, with the word already there
                return;
            }
        }
        self.decide_any(accepted, rejected);
    }

    /// `decide` of any window, a word pair at a time.
    fn decide_any(&mut self, accepted: Range<usize>, rejected: Range<usize>) {
        let window = accepted.start..rejected.end;
        self.cover(window.end);
        for w in words(&window) {
            let pair = &mut self.pairs[w];
            pair.accepted |= mask(w, &accepted);
            pair.rejected |= mask(w, &rejected);
        }
    }

    /// Accepts position `i`, undecided or rejected before.
    #[inline]
    pub(super) fn accept(&mut self, i: usize) {
        self.cover(i + 1);
        let pair = &mut self.pairs[i / 64];
        pair.accepted |= 1 << (i % 64);
        pair.rejected &= !(1 << (i % 64));
    }

    /// Whether `i` is accepted, and whether rejected (never both).
    #[inline]
    pub(super) fn get(&self, i: usize) -> (bool, bool) {
        if i >= self.len {
            return (false, false);
        }
        let pair = self.pairs[i / 64];
        (pair.accepted >> (i % 64) & 1 == 1, pair.rejected >> (i % 64) & 1 == 1)
    }

    /// How many positions in `range` are accepted, and how many rejected.
    #[must_use]
    pub(super) fn count(&self, range: Range<usize>) -> (usize, usize) {
        let range = range.start.min(self.len)..range.end.min(self.len);
        words(&range).fold((0, 0), |(a, r), w| {
            let (pair, m) = (self.pairs[w], mask(w, &range));
            (a + (pair.accepted & m).count_ones() as usize, r + (pair.rejected & m).count_ones() as usize)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_decided_anywhere_read_back_position_by_position() {
        for n in [1, 63, 64, 65, 130, 200] {
            for (s, m, e) in
                [(0, n, n), (1, (n / 2).max(1), n), (n / 3, n / 2, n / 2 + 1), (n - 1, n - 1, n), (0, 0, 0)]
            {
                let mut d = Decisions::default();
                d.decide(s..m, m..e);
                for i in 0..n + 2 {
                    assert_eq!(d.get(i), ((s..m).contains(&i), (m..e).contains(&i)), "n={n} s={s} m={m} e={e} i={i}");
                }
                assert_eq!(d.count(0..n + 2), (m - s, e - m));
                assert_eq!(d.count(s..e), (m - s, e - m));
                if s > 0 {
                    assert_eq!(d.count(s - 1..e), (m - s, e - m));
                }
            }
        }
    }

    #[test]
    fn accepting_a_rejected_position_moves_it() {
        let mut d = Decisions::default();
        d.decide(0..0, 0..70);
        d.accept(66);
        d.accept(100);
        assert_eq!(d.get(66), (true, false));
        assert_eq!(d.get(65), (false, true));
        assert_eq!(d.get(100), (true, false));
        assert_eq!(d.get(99), (false, false), "covered on the way, undecided");
        assert_eq!(d.count(0..101), (2, 69));
    }
}
