//! Streaming output's view of the scanner: what class each byte of the text is
//! (content, reasoning, hidden, a block's body), where it shifts, and how much of
//! the text's end may still change class.

use super::{Mode, ScanEvent, ScanState, Scanner};

/// What a byte of the output is to a reader of the message (streaming output).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextClass {
    /// Text of the message outside calls and reasoning.
    Content,
    /// Text inside a reasoning section.
    Reasoning,
    /// Delimiters, section markers, and what a section holds between its calls.
    Hidden,
    /// The body of a call block (its delimiters excluded).
    Body,
}

impl ScanState {
    /// The class of the text after this state, until the next shift.
    #[must_use]
    pub(crate) fn class(&self) -> TextClass {
        match self.mode {
            Mode::Outside => TextClass::Content,
            Mode::Reasoning => TextClass::Reasoning,
            Mode::Section => TextClass::Hidden,
            Mode::Body | Mode::Overflow => TextClass::Body,
        }
    }
}

impl Scanner {
    /// Reports where the text changes class (`ScanEvent::Shift`), for streaming output.
    pub(crate) fn record_shifts(&mut self) {
        self.shifts = true;
    }

    #[must_use]
    pub(crate) fn records_shifts(&self) -> bool {
        self.shifts
    }

    #[inline]
    pub(super) fn shift(&self, out: &mut Vec<ScanEvent>, at: usize, class: TextClass) {
        if self.shifts {
            out.push(ScanEvent::Shift { at, class });
        }
    }

    /// How many of the last bytes scanned to reach `state` (whose text is `len`
    /// bytes long) may still change class: a partial delimiter, or blanks that a
    /// call starting next would take. Text before them is final.
    #[must_use]
    pub(crate) fn undecided_tail(&self, state: &ScanState, len: usize) -> usize {
        let partial = self.matcher(state.mode).map_or(0, |m| m.depth(state.cursor));
        let armed = if state.armed && state.mode == Mode::Outside && self.spec.anchor.is_some() {
            len.saturating_sub(state.armed_from as usize)
        } else {
            0
        };
        partial.max(armed).min(len)
    }
}
