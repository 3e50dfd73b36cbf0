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
        Self { dfa, start, rests }
    }

    /// Whether stepping through `bytes` from `cursor` leaves it where it is and
    /// matches nothing: it is at rest and no byte begins a delimiter.
    #[inline]
    pub(super) fn passes_over(&self, cursor: Cursor, bytes: &[u8]) -> bool {
        cursor.0 == self.start && bytes.iter().all(|&b| self.rests[usize::from(b)])
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
        assert!(d.passes_over(d.start(), b"plain text, 42 {}"));
        assert!(!d.passes_over(d.start(), b"a <"));
        assert!(!d.passes_over(d.start(), b"["));
        let mut c = d.start();
        d.step(&mut c, b'<');
        assert!(!d.passes_over(c, b"x"), "mid-delimiter is not at rest");
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
