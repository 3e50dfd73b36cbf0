//! Incremental delimiter matching on top of aho-corasick's DFA, one byte at a
//! time, with a `Copy` cursor so a saved scanner state resumes mid-delimiter.

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind};

/// Where the matcher stands inside a possibly partial delimiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cursor(StateID);

/// A set of delimiters searched for unanchored in a byte stream.
#[derive(Debug, Clone)]
pub(super) struct Delimiters {
    dfa: DFA,
    start: StateID,
    /// The bytes on which the start state stays the start state (no delimiter
    /// begins with them): a run of them from rest changes nothing.
    rests: [bool; 256],
    /// Each reachable state's depth, by state id: how many of the last bytes it has
    /// read may still begin a delimiter (the length of the string the state stands
    /// for); `None` for ids no state reaches. A table, not a map: building a hash
    /// map of the states was most of the cost of starting a stream.
    depths: Box<[Option<u8>]>,
}

impl Cursor {
    /// The cursor of a mode that searches for nothing.
    #[must_use]
    pub(super) fn none() -> Self {
        Self(StateID::ZERO)
    }
}

impl Delimiters {
    /// Builds the matcher for a format's fixed delimiters.
    ///
    /// ## Panics
    /// Only if aho-corasick cannot build a DFA for a handful of short
    /// patterns, which its size limits are far from; the patterns are static.
    #[must_use]
    #[allow(clippy::expect_used)] // static patterns: failure is a build bug, caught by every test
    pub(super) fn new(patterns: &[&str]) -> Self {
        let dfa = DFA::builder()
            .match_kind(MatchKind::Standard)
            .build(patterns)
            .expect("static delimiter patterns build a DFA");
        let start = dfa.start_state(Anchored::No).expect("unanchored DFA has a start state");
        let mut rests = [false; 256];
        for (b, rest) in (0..=255u8).zip(rests.iter_mut()) {
            let next = dfa.next_state(Anchored::No, start, b);
            *rest = next == start && !dfa.is_match(next);
        }
        let depths = depths(&dfa, start);
        Self { dfa, start, rests, depths }
    }

    /// Bytes of memory the automaton and its tables hold.
    pub(super) fn memory_usage(&self) -> usize {
        self.dfa.memory_usage() + self.depths.len() * std::mem::size_of::<Option<u8>>()
    }

    /// How many of the bytes stepped through last may still be the start of a
    /// delimiter from `cursor`: text before them can never become one.
    #[must_use]
    pub(super) fn depth(&self, cursor: Cursor) -> usize {
        self.depths.get(cursor.0.as_usize()).copied().flatten().map_or(0, usize::from)
    }

    /// The bytes that leave `cursor` where it is and match nothing, when it is at
    /// rest: a run of them begins no delimiter.
    #[inline]
    pub(super) fn rests_at(&self, cursor: Cursor) -> Option<&[bool; 256]> {
        (cursor.0 == self.start).then_some(&self.rests)
    }

    /// The bytes on which the start state stays the start state and matches nothing.
    pub(super) fn rests(&self) -> &[bool; 256] {
        &self.rests
    }

    #[must_use]
    pub(super) fn start(&self) -> Cursor {
        Cursor(self.start)
    }

    /// Advances by one byte; returns the index of the delimiter that ends here.
    #[inline]
    pub(super) fn step(&self, cursor: &mut Cursor, byte: u8) -> Option<usize> {
        cursor.0 = self.dfa.next_state(Anchored::No, cursor.0, byte);
        if self.dfa.is_match(cursor.0) {
            Some(self.dfa.match_pattern(cursor.0, 0).as_usize())
        } else {
            None
        }
    }
}

/// Breadth-first from the start: in an Aho-Corasick automaton a state's shortest
/// path from the start spells the string it stands for, so its length is the depth.
/// Delimiters are a handful of short strings: a few hundred states at most.
fn depths(dfa: &DFA, start: StateID) -> Box<[Option<u8>]> {
    let mut depths = vec![None; start.as_usize() + 1];
    depths[start.as_usize()] = Some(0u8);
    let mut frontier = vec![start];
    let mut depth = 0u8;
    while !frontier.is_empty() {
        depth = depth.saturating_add(1);
        let mut next = Vec::new();
        for s in frontier {
            for b in 0..=255u8 {
                let t = dfa.next_state(Anchored::No, s, b);
                if dfa.is_dead(t) {
                    continue;
                }
                let i = t.as_usize();
                if i >= depths.len() {
                    depths.resize(i + 1, None);
                }
                if depths[i].is_none() {
                    depths[i] = Some(depth);
                    next.push(t);
                }
            }
        }
        frontier = next;
    }
    depths.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(d: &Delimiters, text: &[u8]) -> Vec<(usize, usize)> {
        let mut c = d.start();
        text.iter().enumerate().filter_map(|(i, &b)| d.step(&mut c, b).map(|p| (i, p))).collect()
    }

    #[test]
    fn finds_overlapping_prefix_restarts() {
        let d = Delimiters::new(&["<tool_call>"]);
        assert_eq!(matches(&d, b"<<tool_call>"), vec![(11, 0)]);
        assert_eq!(matches(&d, b"<tool_<tool_call>x<tool_call>"), vec![(16, 0), (28, 0)]);
        assert!(matches(&d, b"<tool call>").is_empty());
    }

    #[test]
    fn bytes_that_begin_no_delimiter_pass_over_a_cursor_at_rest() {
        let d = Delimiters::new(&["<tool_call>", "[TOOL"]);
        let passes = |c: Cursor, bytes: &[u8]| d.rests_at(c).is_some_and(|r| bytes.iter().all(|&b| r[usize::from(b)]));
        assert!(passes(d.start(), b"plain text, 42 {}"));
        assert!(!passes(d.start(), b"a <"));
        assert!(!passes(d.start(), b"["));
        let mut c = d.start();
        d.step(&mut c, b'<');
        assert!(!passes(c, b"x"), "mid-delimiter is not at rest");
    }

    #[test]
    fn depth_is_the_partial_delimiter_read_last() {
        let d = Delimiters::new(&["<tool_call>", "</tool_call>"]);
        let mut c = d.start();
        let mut seen = Vec::new();
        for &b in b"a<tool<</to" {
            d.step(&mut c, b);
            seen.push(d.depth(c));
        }
        assert_eq!(seen, vec![0, 1, 2, 3, 4, 5, 1, 1, 2, 3, 4]);
    }

    #[test]
    fn cursor_resumes_across_pieces() {
        let d = Delimiters::new(&["</tool_call>"]);
        let mut c = d.start();
        for &b in b"</tool_" {
            assert_eq!(d.step(&mut c, b), None);
        }
        let saved = c;
        let tail: Vec<_> = b"call>".iter().map(|&b| d.step(&mut c, b)).collect();
        assert_eq!(tail.last(), Some(&Some(0)));
        let mut again = saved;
        assert_eq!(b"call>".iter().map(|&b| d.step(&mut again, b)).last(), Some(Some(0)));
    }
}
