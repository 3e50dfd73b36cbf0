//! The verifier's decisions over the ledger, as maximal runs of one decision.
//!
//! A verify accepts a prefix of the undecided window and rejects the rest, so a
//! step adds at most two runs, whatever its length: one or two appends, where a
//! bitset per decision grew and set bits over the window on every verify (a
//! twentieth of a batch step). A query finds its run by binary search; counting
//! over a span walks the runs it covers, two per step at most.

use std::ops::Range;

/// Tokens `previous end..end` share one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    end: u32,
    accepted: bool,
}

/// The decided tokens' decisions, from ledger position 0 to `len()`.
#[derive(Debug, Default)]
pub(super) struct Decisions {
    runs: Vec<Run>,
}

impl Decisions {
    /// Tokens decided: the ones below this position.
    pub(super) fn len(&self) -> usize {
        self.runs.last().map_or(0, |r| r.end as usize)
    }

    /// Decides the tokens from `len()` up to `end`: accepted or rejected. The caller
    /// bounds ledger positions by `u32::MAX` (`Turn::check_room`).
    #[inline]
    pub(super) fn extend(&mut self, end: usize, accepted: bool) {
        debug_assert!(end >= self.len() && u32::try_from(end).is_ok());
        let end = end as u32;
        match self.runs.last_mut() {
            Some(last) if last.end == end => {}
            Some(last) if last.accepted == accepted => last.end = end,
            _ if end == 0 => {}
            _ => self.runs.push(Run { end, accepted }),
        }
    }

    /// The decision of token `i`: `None` while it is undecided.
    pub(super) fn get(&self, i: usize) -> Option<bool> {
        let k = self.runs.partition_point(|r| r.end as usize <= i);
        self.runs.get(k).map(|r| r.accepted)
    }

    /// Accepted tokens in `span`, which lies within `len()`.
    pub(super) fn accepted_in(&self, span: Range<usize>) -> usize {
        let first = self.runs.partition_point(|r| r.end as usize <= span.start);
        let mut start = first.checked_sub(1).map_or(0, |k| self.runs[k].end as usize);
        let mut accepted = 0;
        for r in &self.runs[first..] {
            if start >= span.end {
                break;
            }
            let end = r.end as usize;
            if r.accepted {
                accepted += end.min(span.end) - start.max(span.start);
            }
            start = end;
        }
        accepted
    }

    /// Maximal runs of rejected tokens.
    pub(super) fn rejected(&self) -> Vec<Range<usize>> {
        let mut start = 0;
        let mut out = Vec::new();
        for r in &self.runs {
            if !r.accepted {
                out.push(start..r.end as usize);
            }
            start = r.end as usize;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a decision per token, over random extensions and spans.
    #[test]
    fn runs_answer_as_a_decision_per_token_would() {
        let mut rng = crate::test_rng::Rng(0x5851_f42d_4c95_7f2d);
        for _ in 0..200 {
            let (mut d, mut each) = (Decisions::default(), Vec::new());
            for _ in 0..rng.below(30) {
                let end = each.len() + rng.below(5);
                let accepted = rng.below(2) == 0;
                d.extend(end, accepted);
                each.resize(end, accepted);
            }
            assert_eq!(d.len(), each.len());
            for (i, &a) in each.iter().enumerate() {
                assert_eq!(d.get(i), Some(a));
            }
            assert_eq!(d.get(each.len()), None);
            for start in 0..=each.len() {
                for end in start..=each.len() {
                    let want = each[start..end].iter().filter(|&&a| a).count();
                    assert_eq!(d.accepted_in(start..end), want, "{start}..{end} of {each:?}");
                }
            }
            let mut want: Vec<Range<usize>> = Vec::new();
            for (i, &a) in each.iter().enumerate() {
                if !a {
                    match want.last_mut() {
                        Some(r) if r.end == i => r.end = i + 1,
                        _ => want.push(i..i + 1),
                    }
                }
            }
            assert_eq!(d.rejected(), want);
            assert!(d.runs.windows(2).all(|w| w[0].accepted != w[1].accepted), "runs are maximal");
        }
    }
}
