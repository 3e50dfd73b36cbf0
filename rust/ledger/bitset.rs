//! A growable bitset whose range queries and updates work a word at a time.

use std::ops::Range;

/// Bits indexed by ledger position. Range operations touch each 64-bit word
/// once, so checking a block's span costs `len / 64` word operations.
#[derive(Debug, Clone, Default)]
pub(super) struct BitSet {
    words: Vec<u64>,
    len: usize,
}

/// The bits of `word` that fall inside `range`, for the word at `word_index`.
fn mask_for(word_index: usize, range: &Range<usize>) -> u64 {
    let lo = word_index * 64;
    let from = range.start.saturating_sub(lo).min(64);
    let to = (range.end - lo).min(64);
    if from >= to {
        return 0;
    }
    let high = if to == 64 { u64::MAX } else { (1u64 << to) - 1 };
    high & !((1u64 << from) - 1)
}

impl BitSet {
    /// Appends one cleared bit.
    #[cfg(test)]
    pub(super) fn push_clear(&mut self) {
        self.grow(self.len + 1);
    }

    /// Extends to `len` bits, the new ones cleared; a shorter `len` changes nothing.
    #[inline]
    pub(super) fn grow(&mut self, len: usize) {
        if len > self.len {
            // A verify adds a word at most every few steps: push rather than resize.
            while self.words.len() < len.div_ceil(64) {
                self.words.push(0);
            }
            self.len = len;
        }
    }

    #[must_use]
    pub(super) fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Sets bit `i`, which is below `len`.
    pub(super) fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }

    /// Clears bit `i`, which is below `len`.
    pub(super) fn clear(&mut self, i: usize) {
        self.words[i / 64] &= !(1 << (i % 64));
    }

    fn words_of(range: &Range<usize>) -> Range<usize> {
        if range.start >= range.end {
            return 0..0;
        }
        range.start / 64..range.end.div_ceil(64)
    }

    /// Sets every bit in `range`.
    ///
    /// ## Panics
    /// If `range` reaches past `len()`: ranges come from the ledger, never from callers.
    #[inline]
    pub(super) fn set_range(&mut self, range: Range<usize>) {
        assert!(range.end <= self.len, "bit range {range:?} past length {}", self.len);
        if range.start < range.end && range.start / 64 == (range.end - 1) / 64 {
            // The usual verify: a handful of bits (1 to 64) in one word.
            let n = range.end - range.start;
            self.words[range.start / 64] |= (u64::MAX >> (64 - n)) << (range.start % 64);
            return;
        }
        for w in Self::words_of(&range) {
            self.words[w] |= mask_for(w, &range);
        }
    }

    /// Number of set bits in `range`.
    #[must_use]
    pub(super) fn count_ones(&self, range: Range<usize>) -> usize {
        let range = range.start.min(self.len)..range.end.min(self.len);
        Self::words_of(&range).map(|w| (self.words[w] & mask_for(w, &range)).count_ones() as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(n: usize) -> BitSet {
        let mut b = BitSet::default();
        (0..n).for_each(|_| b.push_clear());
        b
    }

    #[test]
    fn range_ops_agree_with_bit_by_bit() {
        for n in [1, 63, 64, 65, 130, 200] {
            for (s, e) in [(0, n), (1, n), (n / 3, n / 2 + 1), (n - 1, n), (0, 0)] {
                let mut b = filled(n);
                b.set_range(s..e);
                for i in 0..n {
                    assert_eq!(b.get(i), (s..e).contains(&i), "n={n} s={s} e={e} i={i}");
                }
                assert_eq!(b.count_ones(0..n), e - s);
                assert_eq!(b.count_ones(s..e), e - s);
                if s > 0 {
                    assert_eq!(b.count_ones(s - 1..e), e - s);
                }
            }
        }
    }
}
