//! The incremental scanner: one small `Copy` state per token, so rolling back
//! a rejection restores one saved value instead of re-scanning text. Driven
//! by a `FormatSpec`; the per-format work is only in the body parsers.

use super::body::{self, Context, Item, Schemas};
use super::delimiter::Cursor;
use super::lexer::{Lexer, Syntax, LOST};
use super::malformed::{Malformed, MalformedKind};
use super::matcher::{Hit, Matcher, Matchers, Role};
use super::spec::FormatSpec;
use std::ops::Range;

/// What a token means to the scanner beyond its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRole {
    /// A piece given as text: its bytes go through the automaton.
    Text,
    /// An ordinary token given by id: its bytes are text too, but the model's
    /// tokenizer has special tokens, which a raw-text body's closer may be.
    IdText,
    /// A special token whose spelling is one of the format's delimiters.
    Delimiter(Role),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Between blocks, looking for a section or call opener (or reasoning).
    Outside,
    /// Inside a section, looking for a call opener or the section's end.
    Section,
    /// Inside a block body, looking for its end.
    Body,
    /// Inside a block that outgrew the byte limit: skipped to its end.
    Overflow,
    /// Inside a reasoning section: nothing is a call until it closes.
    Reasoning,
}

/// The scanner's whole state after a token: a few words, saved per token.
#[derive(Debug, Clone, Copy)]
#[allow(clippy::struct_excessive_bools)] // saved per token and restored whole: plain flags read clearest
pub(crate) struct ScanState {
    mode: Mode,
    cursor: Cursor,
    lexer: Lexer,
    in_section: bool,
    /// A call may start at the next non-blank byte (anchored formats).
    armed: bool,
    /// A structurally complete block waits for the next token to confirm it
    /// (formats whose blocks end on a bracket, not on a closing delimiter).
    awaiting_confirmation: bool,
    /// The open block ends on its bracket, not on a closer.
    structural: bool,
    /// How deep the format's value tags nest in a raw-text body (see `matcher.rs`).
    depth: u16,
    /// Live-text offset of the open delimiter's first byte.
    block_start: u32,
    body_start: u32,
    /// The open section: where its opener starts, and whether a call opened
    /// in it (a section of text and no call is malformed).
    section_start: u32,
    section_calls: bool,
    /// Live-text offset where the current armed run began: the blanks and
    /// separators skipped since belong to the call if one starts, else to the content.
    armed_from: u32,
    /// Inside a message header (`Framing`): hidden from streamed content.
    in_frame: bool,
}

/// What one token did. Every byte offset is in the live text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ScanEvent {
    /// A block opened; its open delimiter starts at `delimiter_start`, its body at `body_start`.
    Opened { delimiter_start: usize, body_start: usize },
    /// The open block ended with its byte `end - 1`. `confirmed` is false for a
    /// structurally complete block, which counts only once the next token (or
    /// the end of the turn) confirms it.
    Ended { end: usize, body: BlockBody, confirmed: bool },
    /// The block that ended unconfirmed is confirmed by this token.
    Confirmed,
    /// A reasoning closer at `delimiter` while the turn was not in reasoning:
    /// the prompt opened the section, and calls before it may have been thoughts.
    ReasoningUnopened { delimiter: Range<usize> },
    /// From byte `at` on, the text is of `class` (only from a scanner that
    /// records shifts). Shifts come in order; a later one at an earlier byte
    /// overrides from where the text has got to.
    Shift { at: usize, class: TextClass },
}

/// What an ended block holds: its items, or its body's bytes, read when its
/// items are wanted (`Scanner::read_body`). Reading is linear in the body, so
/// the turn chooses when: a block whose closer was drafted and rejected again
/// and again would otherwise be read whole on every draft.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BlockBody {
    Read(Vec<Item>),
    /// The live-text bytes of a body its closing delimiter (or bracket) ended.
    Unread(Range<usize>),
}

/// A format's immutable scanning machinery. One per stream; states are separate.
#[derive(Debug, Clone)]
pub(crate) struct Scanner {
    spec: FormatSpec,
    m: Matchers,
    schemas: Schemas,
    max_block_bytes: usize,
    start_in_reasoning: bool,
    /// The call closer is a special token of this turn's vocabulary: in a raw-text
    /// body, its spelling by ordinary tokens given by id is text (code in a value).
    closer_by_id: bool,
    /// Whether to report `ScanEvent::Shift`s (streaming output asks for them).
    shifts: bool,
    /// The body bytes that change nothing outside strings but the lexer's
    /// `seen_text`: `[0]` when the block ends on its bracket (no closer is
    /// matched), `[1]` while the closer's matcher rests at its start.
    quiet: [[bool; 256]; 2],
}

/// Whether every byte of `bytes` is one `rests` (a `Scanner::resting` table) keeps at rest.
#[inline]
pub(crate) fn rests_on(rests: &[bool; 256], bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| rests[usize::from(b)])
}

/// `Scanner::resting` of a mode with no delimiters to look for.
static EVERY_BYTE: [bool; 256] = [true; 256];

impl TokenRole {
    /// Text, given as a piece or by id: its bytes are scanned, it is no delimiter token.
    #[inline]
    #[must_use]
    pub(crate) fn is_text(self) -> bool {
        !matches!(self, TokenRole::Delimiter(_))
    }
}

impl Scanner {
    #[must_use]
    pub(crate) fn new(spec: FormatSpec, schemas: Schemas, max_block_bytes: usize) -> Self {
        let m = Matchers::built(&spec);
        let mut quiet = [[false; 256]; 2];
        for b in 0..=255u8 {
            let lexer = Lexer::quiet(spec.syntax, b);
            quiet[0][usize::from(b)] = lexer;
            quiet[1][usize::from(b)] = lexer && m.body.as_ref().is_none_or(|c| c.rests()[usize::from(b)]);
        }
        Self { spec, m, schemas, max_block_bytes, start_in_reasoning: false, closer_by_id: false, shifts: false, quiet }
    }

    /// Starts turns inside a reasoning section (the prompt opened it). The
    /// format must have reasoning delimiters; the turn checks.
    pub(crate) fn start_in_reasoning(&mut self, yes: bool) {
        self.start_in_reasoning = yes && self.spec.reasoning.is_some();
    }

    /// Says the call closer is bound to a special token id in this turn.
    pub(crate) fn bind_closer_by_id(&mut self) {
        self.closer_by_id = true;
    }

    #[must_use]
    pub(crate) fn spec(&self) -> &FormatSpec {
        &self.spec
    }

    /// The tools' schemas the body parsers type XML values by.
    #[must_use]
    pub(crate) fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    fn matcher(&self, mode: Mode) -> Option<&Matcher> {
        match mode {
            Mode::Outside => self.m.outside.as_ref(),
            Mode::Section => self.m.section.as_ref(),
            Mode::Body | Mode::Overflow => self.m.body.as_ref(),
            Mode::Reasoning => self.m.reasoning.as_ref(),
        }
    }

    fn cursor_for(&self, mode: Mode) -> Cursor {
        self.matcher(mode).map_or_else(Cursor::none, Matcher::start)
    }

    /// Whether the message start (and the end of reasoning) arms calls.
    fn arms_at_start(&self) -> bool {
        self.spec.anchor.as_ref().is_some_and(|a| a.at_start)
    }

    #[must_use]
    pub(crate) fn initial(&self) -> ScanState {
        self.initial_in(self.start_in_reasoning)
    }

    /// The state before any byte, inside the reasoning section the prompt
    /// opened when `in_reasoning` (a format without reasoning ignores it).
    #[must_use]
    pub(crate) fn initial_in(&self, in_reasoning: bool) -> ScanState {
        let in_reasoning = in_reasoning && self.spec.reasoning.is_some();
        let mode = if in_reasoning { Mode::Reasoning } else { Mode::Outside };
        ScanState {
            mode,
            cursor: self.cursor_for(mode),
            lexer: Lexer::default(),
            in_section: false,
            armed: mode == Mode::Outside && self.arms_at_start(),
            awaiting_confirmation: false,
            structural: false,
            depth: 0,
            block_start: 0,
            body_start: 0,
            section_start: 0,
            section_calls: false,
            armed_from: 0,
            in_frame: false,
        }
    }

    fn enter(&self, state: &mut ScanState, mode: Mode) {
        state.mode = mode;
        state.cursor = self.cursor_for(mode);
    }

    /// Scans one token whose bytes are `text[token]` (already appended to the
    /// live text), updating `state` and pushing what happened to `out`.
    /// Work is proportional to the token's bytes, plus one parse per ended block.
    /// False when the token left `state` as it was and reported nothing (most prose).
    #[inline(always)] // the quiet check belongs in the caller's per-token loop
    #[allow(clippy::inline_always)]
    pub(crate) fn scan(
        &self,
        state: &mut ScanState,
        text: &[u8],
        token: Range<usize>,
        role: TokenRole,
        out: &mut Vec<ScanEvent>,
    ) -> bool {
        // Most prose tokens change nothing: decided here, inlined into the caller's
        // loop, instead of in a call to the whole scanner per token.
        if !state.awaiting_confirmation && role.is_text() {
            if self.passes_over(state, &text[token.clone()]) {
                return false;
            }
            if matches!(state.mode, Mode::Body | Mode::Overflow) {
                // Nothing to settle and no delimiter token: the body loop alone, in a
                // function of its own (see `body_part`), then what follows the block.
                if !self.passes_in_body(state, text, &token) {
                    let by_id = role != TokenRole::Text;
                    let i = self.body_part(state, text, token.start, token.end, by_id, out);
                    if i < token.end {
                        self.runs(state, text, i, token.end, by_id, out);
                    }
                }
                return true;
            }
        }
        self.scan_token(state, text, token, role, out);
        true
    }

    /// Whether `token`, in a body and short of the byte limit, changes only what a
    /// run of `body_run` changes: inside a string, no quote and no backslash (the
    /// closer's matcher, which a string resets); outside strings with the closer's
    /// matcher at rest, no quote, bracket or byte that may begin the closer (the
    /// lexer's `seen_text`). Most body tokens: names, values, separators, blanks.
    #[inline]
    fn passes_in_body(&self, state: &mut ScanState, text: &[u8], token: &Range<usize>) -> bool {
        let bytes = &text[token.clone()];
        if bytes.is_empty() || self.unchecked_end(state, token.end) != token.end {
            return false;
        }
        let matcher = self.m.body.as_ref();
        if state.lexer.in_plain_string() {
            if state.lexer.string_run(bytes) < bytes.len() {
                return false;
            }
            if let Some(m) = matcher {
                state.cursor = m.start();
            }
            return true;
        }
        if !state.lexer.outside_strings() || !matcher.is_none_or(|m| state.cursor == m.start()) {
            return false;
        }
        let quiet = &self.quiet[usize::from(matcher.is_some())];
        if !bytes.iter().all(|&b| quiet[usize::from(b)]) {
            return false;
        }
        state.lexer.pass_quiet(self.spec.syntax, bytes);
        true
    }

    /// The last byte offset the open block may reach before it is too large.
    #[inline]
    fn limit(&self, state: &ScanState) -> usize {
        (state.block_start as usize).saturating_add(self.max_block_bytes)
    }

    /// How far before `end` body bytes may be passed over without checking the
    /// byte limit per byte: up to the limit in a body, anywhere once it overflowed.
    #[inline]
    fn unchecked_end(&self, state: &ScanState, end: usize) -> usize {
        if state.mode == Mode::Body {
            end.min(self.limit(state))
        } else {
            end
        }
    }

    /// `scan` of a token that may change something.
    #[inline(never)] // kept out of the callers' loops, which the quiet tokens run through
    fn scan_token(
        &self,
        state: &mut ScanState,
        text: &[u8],
        token: Range<usize>,
        role: TokenRole,
        out: &mut Vec<ScanEvent>,
    ) {
        // This token confirms the structurally complete block before it.
        settle(state, out);
        if let TokenRole::Delimiter(role) = role {
            if self.delimit(state, text, role, token.clone(), out) {
                return;
            }
            if state.mode == Mode::Outside && matches!(role, Role::CallClose | Role::SectionClose) {
                // A closer that closes nothing, sent as its special token: a control
                // token, never content.
                self.shift(out, token.start, TextClass::Hidden);
                self.shift(out, token.end, TextClass::Content);
                return;
            }
        }
        // Quiet tokens never get here (`scan`); the rare ones after a confirmation or
        // a delimiter that meant nothing take the byte loop, which changes nothing for them.
        self.runs(state, text, token.start, token.end, role != TokenRole::Text, out);
    }

    /// Scans bytes `i..end` of a token. Bytes are scanned in runs that stay in one
    /// mode, so the mode is dispatched once per run (usually once per token), not
    /// once per byte.
    #[inline(never)] // rare: kept out of `scan`'s callers
    fn runs(
        &self,
        state: &mut ScanState,
        text: &[u8],
        mut i: usize,
        end: usize,
        by_id: bool,
        out: &mut Vec<ScanEvent>,
    ) {
        while i < end {
            i = match state.mode {
                Mode::Body | Mode::Overflow => self.body_part(state, text, i, end, by_id, out),
                Mode::Outside if state.armed => {
                    self.byte(state, text, i, by_id, out);
                    i + 1
                }
                _ => self.text_run(state, text, i, end, out),
            };
        }
    }

    /// Whether scanning `bytes` byte by byte would change nothing: between blocks
    /// (in a section, or in reasoning), not armed for an anchored call, and no byte
    /// begins a delimiter from where the automaton rests. Most prose tokens, in one
    /// table lookup per byte instead of a walk of the automaton.
    #[inline]
    fn passes_over(&self, state: &ScanState, bytes: &[u8]) -> bool {
        self.resting(state).is_some_and(|rests| rests_on(rests, bytes))
    }

    /// The bytes that change nothing from `state` (`passes_over`), when it rests
    /// between blocks with nothing to settle: a text token of only such bytes leaves
    /// it as it is. A draft asks once and tests token after token against the table
    /// until one does not pass (`Turn::draft_checked`).
    #[inline]
    pub(crate) fn resting(&self, state: &ScanState) -> Option<&[bool; 256]> {
        let anchored = state.armed && state.mode == Mode::Outside && self.spec.anchor.is_some();
        if state.awaiting_confirmation
            || anchored
            || !matches!(state.mode, Mode::Outside | Mode::Section | Mode::Reasoning)
        {
            return None;
        }
        match self.matcher(state.mode) {
            None => Some(&EVERY_BYTE),
            Some(m) => m.rests_at(state.cursor),
        }
    }

    /// A special token acting as a whole delimiter; false when it means nothing in
    /// this mode. Arming delimiters are scanned as text: they arm by their bytes,
    /// and a longer one (```` ```json ````) may continue past this token.
    fn delimit(
        &self,
        state: &mut ScanState,
        text: &[u8],
        role: Role,
        token: Range<usize>,
        out: &mut Vec<ScanEvent>,
    ) -> bool {
        let sectioned = !self.spec.section_open.is_empty();
        // A control token is emitted only to call: for models documented to call
        // from inside their thinking, it ends the section (by text it stays a thought).
        let call_ends_thinking = self.spec.reasoning.as_ref().is_some_and(|r| r.ended_by_call_token);
        match (state.mode, role) {
            (Mode::Outside, Role::SectionOpen) if sectioned => self.enter_section(state, token, out),
            (Mode::Outside, Role::CallOpen) if !sectioned => self.open_delimited(state, token, out),
            (Mode::Section, Role::CallOpen) => self.open_delimited(state, token, out),
            (Mode::Section, Role::SectionClose) => self.leave_section(state, text, token, out),
            (Mode::Body | Mode::Overflow, Role::CallClose) if !state.structural => {
                self.close(state, token.start, token.end, out);
            }
            (Mode::Body | Mode::Overflow, Role::CallOpen) if state.structural && !sectioned => {
                self.interrupt(state, token, out);
            }
            (Mode::Outside, Role::ReasoningOpen) => self.think(state, token, out),
            (Mode::Outside, Role::ReasoningClose) => self.unopened(state, token, out),
            (Mode::Reasoning, Role::ReasoningClose) => self.stop_thinking(state, token, out),
            (Mode::Reasoning, Role::SectionOpen) if sectioned && call_ends_thinking => {
                self.stop_thinking(state, token.clone(), out);
                self.enter_section(state, token, out);
            }
            (Mode::Reasoning, Role::CallOpen) if !sectioned && call_ends_thinking => {
                self.stop_thinking(state, token.clone(), out);
                self.open_delimited(state, token, out);
            }
            _ => return false,
        }
        true
    }

    /// One byte outside blocks while a call may start at it (anchored formats).
    fn byte(&self, state: &mut ScanState, text: &[u8], i: usize, by_id: bool, out: &mut Vec<ScanEvent>) {
        let byte = text[i];
        if let Some(anchor) = &self.spec.anchor {
            if byte.is_ascii_whitespace() || anchor.separators.contains(&byte) {
                return;
            }
            if anchor.starts.contains(&byte) {
                // The blanks and separators skipped since arming go with the call.
                self.shift(out, state.armed_from as usize, TextClass::Hidden);
                self.open(state, i, i, true, out);
                self.body_part(state, text, i, i + 1, by_id, out);
                return;
            }
        }
        state.armed = false;
        self.text_run(state, text, i, i + 1, out);
    }

    /// Scans bytes `i..end` between blocks (outside, in a section, or in
    /// reasoning) until a delimiter changes what follows; returns where it stopped.
    #[inline(always)] // as body_run
    #[allow(clippy::inline_always)]
    fn text_run(
        &self,
        state: &mut ScanState,
        text: &[u8],
        mut i: usize,
        end: usize,
        out: &mut Vec<ScanEvent>,
    ) -> usize {
        let Some(m) = self.matcher(state.mode) else { return end };
        while i < end {
            let hit = m.step(&mut state.cursor, text[i]);
            i += 1;
            let Some((Hit::Delimiter(role), len)) = hit else { continue };
            let at = i - len..i;
            match (state.mode, role) {
                (_, Role::SectionOpen) => self.enter_section(state, at, out),
                (_, Role::SectionClose) => self.leave_section(state, text, at, out),
                (_, Role::CallOpen) => self.open_delimited(state, at, out),
                (_, Role::Arm) => {
                    self.shift(out, at.start, TextClass::Hidden);
                    self.shift(out, at.end, TextClass::Content);
                    self.arm(state, at.end);
                }
                (Mode::Outside, Role::FrameOpen) => {
                    self.shift(out, at.start, TextClass::Hidden);
                    state.in_frame = true;
                    continue; // nothing changes for calls: keep scanning this run
                }
                (Mode::Outside, Role::FrameClose | Role::Control) => {
                    if !state.in_frame {
                        self.shift(out, at.start, TextClass::Hidden);
                    }
                    if role == Role::FrameClose || !state.in_frame {
                        self.shift(out, at.end, TextClass::Content);
                        state.in_frame = false;
                    }
                    continue;
                }
                (Mode::Outside, Role::ReasoningOpen) => self.think(state, at, out),
                (Mode::Outside, Role::ReasoningClose) => self.unopened(state, at, out),
                (Mode::Reasoning, Role::ReasoningClose) => self.stop_thinking(state, at, out),
                _ => continue,
            }
            return i;
        }
        i
    }

    /// `body_run` in a function of its own: the loop's invariants (the closer's
    /// automaton, the byte tables) are loaded once per call, and loaded in a loop
    /// that also scans text between blocks they cost every token of both kinds.
    #[inline(never)]
    fn body_part(
        &self,
        state: &mut ScanState,
        text: &[u8],
        i: usize,
        end: usize,
        by_id: bool,
        out: &mut Vec<ScanEvent>,
    ) -> usize {
        self.body_run(state, text, i, end, by_id, out)
    }

    /// Scans body bytes `i..end` while the block stays open; returns where it stopped.
    #[inline(always)] // the hot loop: a call per token costs more than the loop over a short token
    #[allow(clippy::inline_always)]
    fn body_run(
        &self,
        state: &mut ScanState,
        text: &[u8],
        mut i: usize,
        end: usize,
        by_id: bool,
        out: &mut Vec<ScanEvent>,
    ) -> usize {
        let (syntax, start) = (self.spec.syntax, self.spec.struct_start);
        // Closers (and, in blocks that end on their bracket, call openers).
        let matcher = self.m.body.as_ref();
        // The first byte past the limit makes the block too large.
        let limit = self.limit(state);
        while i < end {
            // Inside a string nothing but its quote or a backslash changes anything:
            // skip to the next one in one pass (short of the byte limit, checked per byte).
            let unchecked = self.unchecked_end(state, end);
            if state.lexer.in_plain_string() {
                let run = state.lexer.string_run(text.get(i..unchecked).unwrap_or_default());
                if run > 0 {
                    i += run;
                    if let Some(m) = matcher {
                        state.cursor = m.start();
                    }
                    continue;
                }
            } else if state.lexer.outside_strings() && matcher.is_none_or(|m| state.cursor == m.start()) {
                // Outside strings, prose and names (no quote, bracket or byte that
                // may begin the closer) change nothing but the lexer's `seen_text`.
                let quiet = &self.quiet[usize::from(matcher.is_some())];
                let bytes = text.get(i..unchecked).unwrap_or_default();
                let run = bytes.iter().position(|&b| !quiet[usize::from(b)]).unwrap_or(bytes.len());
                if run > 0 {
                    state.lexer.pass_quiet(syntax, &bytes[..run]);
                    i += run;
                    continue;
                }
            }
            let byte = text[i];
            let step = state.lexer.step(syntax, start, byte);
            i += 1;
            if let Some(m) = matcher {
                if !step.outside {
                    state.cursor = m.start();
                } else if let Some((hit, len)) = m.step_outlined(&mut state.cursor, byte) {
                    match hit {
                        Hit::Nest => state.depth = state.depth.saturating_add(1),
                        // Past the counter the count is lost: no closer counts again (`LOST`).
                        Hit::Unnest if state.depth < LOST => state.depth = state.depth.saturating_sub(1),
                        Hit::Delimiter(Role::CallClose) if !state.structural && self.closes_here(state, by_id) => {
                            self.close(state, i - len, i, out);
                            return i;
                        }
                        Hit::Delimiter(Role::CallOpen) if state.structural => {
                            self.interrupt(state, i - len..i, out);
                            return i;
                        }
                        Hit::Unnest | Hit::Delimiter(_) => {}
                    }
                }
            }
            if state.structural && step.completed {
                self.complete(state, i, out);
                return i;
            }
            if i > limit && state.mode == Mode::Body {
                state.mode = Mode::Overflow;
                // Streaming reads the body only up to the limit, whatever the steps: the
                // call of a block too large to hold its name never starts, in any grouping.
                self.shift(out, i - 1, TextClass::Hidden);
                let message =
                    format!("the block exceeds max_block_bytes ({} bytes) before it ends", self.max_block_bytes);
                let at = i - state.body_start as usize;
                let body = vec![Err(Malformed::new(MalformedKind::TooLarge, at, message))];
                out.push(ScanEvent::Ended { end: i, body: BlockBody::Read(body), confirmed: true });
            }
        }
        i
    }

    /// A block that ends on its bracket completed with byte `end - 1`: it counts
    /// once the next token (or the end of the turn) confirms it.
    fn complete(&self, state: &mut ScanState, end: usize, out: &mut Vec<ScanEvent>) {
        let overflowed = state.mode == Mode::Overflow;
        self.leave_block(state, end, out);
        if !overflowed {
            // A second block completed in the same token: the first is confirmed.
            settle(state, out);
            state.awaiting_confirmation = true;
            let body = BlockBody::Unread(state.body_start as usize..end);
            out.push(ScanEvent::Ended { end, body, confirmed: false });
        }
    }

    /// A call opener outside strings in a block that ends on its bracket: the
    /// model began the next call before this one completed (Mistral's
    /// `[TOOL_CALLS]` after arguments that are no object), so the block ends
    /// where the opener starts, read as written, and the opener opens the next.
    fn interrupt(&self, state: &mut ScanState, opener: Range<usize>, out: &mut Vec<ScanEvent>) {
        self.close(state, opener.start, opener.start, out);
        self.open_delimited(state, opener, out);
    }

    /// Whether a closer spelled in text ends the block. In a raw-text body the
    /// value tags must balance, and when the closer is a special token of the
    /// turn's vocabulary, ordinary tokens given by id spelling it are code in
    /// a value: only the special token ends the block.
    fn closes_here(&self, state: &ScanState, by_id: bool) -> bool {
        self.spec.syntax != Syntax::Raw || (state.depth == 0 && !(by_id && self.closer_by_id))
    }

    fn enter_section(&self, state: &mut ScanState, delimiter: Range<usize>, out: &mut Vec<ScanEvent>) {
        self.shift(out, delimiter.start, TextClass::Hidden);
        state.in_section = true;
        state.section_start = delimiter.start as u32;
        state.section_calls = false;
        self.enter(state, Mode::Section);
    }

    /// Where the open section's content starts: after its opener (a special
    /// token spells one exactly, so the longest spelling found there is it).
    fn section_body(&self, state: &ScanState, text: &[u8]) -> usize {
        let at = state.section_start as usize;
        let len = self.spec.section_open.iter().filter(|o| text[at..].starts_with(o.as_bytes())).map(String::len).max();
        at + len.unwrap_or(0)
    }

    /// The section closes at `delimiter`. One that held text and no call is
    /// malformed: the model meant a call and broke its layout (DeepSeek's
    /// `<｜tool▁calls▁begin｜>NAME…` without `<｜tool▁call▁begin｜>`). Its text is
    /// looked at only then, once: sections with calls never pay for it.
    fn leave_section(&self, state: &mut ScanState, text: &[u8], delimiter: Range<usize>, out: &mut Vec<ScanEvent>) {
        state.in_section = false;
        self.enter(state, Mode::Outside);
        self.shift(out, delimiter.end, TextClass::Content);
        if !state.section_calls {
            let body = self.section_body(state, text)..delimiter.start;
            if !text[body.clone()].iter().all(u8::is_ascii_whitespace) {
                section_without_calls(state, text, body, delimiter.end, false, out);
            }
        }
    }

    fn think(&self, state: &mut ScanState, delimiter: Range<usize>, out: &mut Vec<ScanEvent>) {
        state.armed = false;
        state.in_frame = false;
        self.enter(state, Mode::Reasoning);
        self.shift(out, delimiter.start, TextClass::Hidden);
        self.shift(out, delimiter.end, TextClass::Reasoning);
    }

    fn stop_thinking(&self, state: &mut ScanState, delimiter: Range<usize>, out: &mut Vec<ScanEvent>) {
        self.enter(state, Mode::Outside);
        state.armed = self.arms_at_start();
        state.armed_from = delimiter.end as u32;
        self.shift(out, delimiter.start, TextClass::Hidden);
        self.shift(out, delimiter.end, TextClass::Content);
    }

    /// A reasoning closer while not in reasoning: reported where the format says
    /// so; the content starts after it, as after any reasoning.
    fn unopened(&self, state: &mut ScanState, delimiter: Range<usize>, out: &mut Vec<ScanEvent>) {
        state.armed = self.spec.anchor.is_some();
        state.armed_from = delimiter.end as u32;
        state.in_frame = false;
        self.shift(out, delimiter.start, TextClass::Hidden);
        self.shift(out, delimiter.end, TextClass::Content);
        if self.spec.reasoning.as_ref().is_some_and(|r| r.report_unopened) {
            settle(state, out);
            out.push(ScanEvent::ReasoningUnopened { delimiter });
        }
    }

    /// A block opened by its delimiter at `delimiter`.
    fn open_delimited(&self, state: &mut ScanState, delimiter: Range<usize>, out: &mut Vec<ScanEvent>) {
        self.shift(out, delimiter.start, TextClass::Hidden);
        state.section_calls |= state.in_section;
        self.open(state, delimiter.start, delimiter.end, self.spec.structural(), out);
    }

    fn open(
        &self,
        state: &mut ScanState,
        delimiter_start: usize,
        body_start: usize,
        structural: bool,
        out: &mut Vec<ScanEvent>,
    ) {
        // A block that completed earlier in this token is confirmed by what follows
        // it, before this one can end: outcomes stay in stream order.
        settle(state, out);
        self.enter(state, Mode::Body);
        state.lexer = Lexer::default();
        state.armed = false;
        state.in_frame = false;
        state.structural = structural;
        state.depth = 0;
        // Offsets fit: the stream refuses text past u32::MAX before scanning it.
        state.block_start = delimiter_start as u32;
        state.body_start = body_start as u32;
        self.shift(out, body_start, TextClass::Body);
        out.push(ScanEvent::Opened { delimiter_start, body_start });
    }

    /// Back between blocks: in the section if the block was in one; anchored
    /// formats may start another call right away (`;`-separated sequences).
    fn leave_block(&self, state: &mut ScanState, end: usize, out: &mut Vec<ScanEvent>) {
        let mode = if state.in_section { Mode::Section } else { Mode::Outside };
        self.enter(state, mode);
        self.shift(out, end, state.class());
        self.arm(state, end);
    }

    /// Calls may start at the next non-blank byte, from `at` (anchored formats).
    fn arm(&self, state: &mut ScanState, at: usize) {
        state.armed = self.spec.anchor.is_some();
        state.armed_from = at as u32;
    }

    fn close(&self, state: &mut ScanState, body_end: usize, end: usize, out: &mut Vec<ScanEvent>) {
        let overflowed = state.mode == Mode::Overflow;
        self.shift(out, body_end, TextClass::Hidden);
        self.leave_block(state, end, out);
        if !overflowed {
            let body = BlockBody::Unread(state.body_start as usize..body_end);
            out.push(ScanEvent::Ended { end, body, confirmed: true });
        }
    }

    /// The items of the block body at `text[body]` (`BlockBody::Unread`).
    #[must_use]
    pub(crate) fn read_body(&self, text: &[u8], body: Range<usize>) -> Vec<Item> {
        self.parse(text, body, false)
    }

    fn parse(&self, text: &[u8], body: Range<usize>, cut: bool) -> Vec<Item> {
        let cx = Context {
            schemas: &self.schemas,
            name_chars: &self.spec.name_chars,
            cut,
            arguments_required: self.spec.arguments_required,
        };
        let len = body.len();
        match std::str::from_utf8(&text[body]) {
            Err(e) => {
                let mut items = vec![Err(Malformed::new(
                    MalformedKind::InvalidUtf8,
                    e.valid_up_to(),
                    format!("the block is not valid UTF-8 (at byte {} of its body)", e.valid_up_to()),
                ))];
                if cut {
                    body::cut_short(&mut items, len);
                }
                items
            }
            Ok(body) => body::parse(&self.spec.body, body, cx),
        }
    }

    /// What ending the turn does: a block waiting for confirmation is confirmed;
    /// a block still open (its closer cut by a stop string or the end of the
    /// turn) is read as it stands: a complete, valid body is a call, a body
    /// that ran out is `unterminated`.
    #[must_use]
    pub(crate) fn finish(&self, state: &ScanState, text: &[u8]) -> Vec<ScanEvent> {
        let mut out = Vec::new();
        if state.awaiting_confirmation {
            out.push(ScanEvent::Confirmed);
        }
        if state.mode == Mode::Body {
            let body = BlockBody::Read(self.parse(text, state.body_start as usize..text.len(), true));
            out.push(ScanEvent::Ended { end: text.len(), body, confirmed: true });
        }
        if state.mode == Mode::Section && !state.section_calls {
            let body = self.section_body(state, text)..text.len();
            section_without_calls(state, text, body, text.len(), true, &mut out);
        }
        out
    }
}

/// Confirms the block awaiting confirmation, if one is: something after it in
/// the same token ends or opens another.
fn settle(state: &mut ScanState, out: &mut Vec<ScanEvent>) {
    if state.awaiting_confirmation {
        state.awaiting_confirmation = false;
        out.push(ScanEvent::Confirmed);
    }
}

/// Reports the open section, whose content `body` holds no call, as one
/// malformed block ending at `end`.
fn section_without_calls(
    state: &ScanState,
    text: &[u8],
    body: Range<usize>,
    end: usize,
    cut: bool,
    out: &mut Vec<ScanEvent>,
) {
    let body = String::from_utf8_lossy(&text[body]);
    let (kind, message) = if cut {
        (MalformedKind::Unterminated, "the turn ended inside the section (it never closed), before any call")
    } else {
        (MalformedKind::NoCall, "the section holds text but no call (no call opener)")
    };
    let message = format!("{message}: {:?}", body.trim().chars().take(40).collect::<String>());
    let section = state.section_start as usize;
    out.push(ScanEvent::Opened { delimiter_start: section, body_start: section });
    let body = BlockBody::Read(vec![Err(Malformed::new(kind, 0, message))]);
    out.push(ScanEvent::Ended { end, body, confirmed: true });
}

mod specials;
mod text_class;

pub(crate) use text_class::TextClass;

#[cfg(test)]
mod tests;
