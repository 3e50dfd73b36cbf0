//! The incremental scanner: one small `Copy` state per token, so rolling back
//! a rejection restores one saved value instead of re-scanning text. Driven
//! by a `FormatSpec`; the per-format work is only in the body parsers.

use super::body::{self, Schemas};
use super::call::Call;
use super::delimiter::{Cursor, Delimiters};
use super::lexer::Lexer;
use super::malformed::{Malformed, MalformedKind};
use super::spec::FormatSpec;
use std::ops::Range;

/// What a delimiter does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    SectionOpen,
    SectionClose,
    CallOpen,
    CallClose,
    /// Lets a call start at the next non-blank byte (whole-message formats).
    Arm,
}

/// What a token means to the scanner beyond its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRole {
    /// Plain text: its bytes go through the automaton.
    Text,
    /// A special token whose spelling is one of the format's delimiters.
    Delimiter(Role),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Between blocks, looking for a section or call opener.
    Outside,
    /// Inside a section, looking for a call opener or the section's end.
    Section,
    /// Inside a block body, looking for its end.
    Body,
    /// Inside a block that outgrew the byte limit: skipped to its end.
    Overflow,
}

/// The scanner's whole state after a token: a few words, saved per token.
#[derive(Debug, Clone, Copy)]
pub struct ScanState {
    mode: Mode,
    cursor: Cursor,
    lexer: Lexer,
    in_section: bool,
    /// A call may start at the next non-blank byte (anchored formats).
    armed: bool,
    /// A structurally complete block waits for the next token to confirm it
    /// (formats whose blocks end on a bracket, not on a closing delimiter).
    awaiting_confirmation: bool,
    /// Live-text offset of the open delimiter's first byte.
    block_start: u32,
    body_start: u32,
}

/// What one token did to the block structure. Every byte offset is in the live text.
#[derive(Debug, Clone, PartialEq)]
pub enum ScanEvent {
    /// A block opened; its open delimiter starts at `delimiter_start`.
    Opened { delimiter_start: usize },
    /// The open block ended with its byte `end - 1`, parsed into calls or found
    /// malformed. `confirmed` is false for a structurally complete block, which
    /// counts only once the next token (or the end of the turn) confirms it.
    Ended { end: usize, body: Result<Vec<Call>, Malformed>, confirmed: bool },
    /// The block that ended unconfirmed is confirmed by this token.
    Confirmed,
}

/// The delimiters searched for in one mode, with what each does.
#[derive(Debug, Clone)]
struct Matcher {
    delimiters: Delimiters,
    roles: Vec<(Role, usize)>,
}

impl Matcher {
    fn new(groups: &[(&[String], Role)]) -> Option<Self> {
        let mut patterns: Vec<&str> = Vec::new();
        let mut roles = Vec::new();
        for (texts, role) in groups {
            for t in texts.iter().filter(|t| !t.is_empty()) {
                patterns.push(t);
                roles.push((*role, t.len()));
            }
        }
        (!patterns.is_empty()).then(|| Self { delimiters: Delimiters::new(&patterns), roles })
    }
}

/// A format's immutable scanning machinery. One per stream; states are separate.
#[derive(Debug, Clone)]
pub struct Scanner {
    spec: FormatSpec,
    outside: Option<Matcher>,
    section: Option<Matcher>,
    body: Option<Matcher>,
    schemas: Schemas,
    max_block_bytes: usize,
}

impl Scanner {
    #[must_use]
    pub fn new(spec: FormatSpec, schemas: Schemas, max_block_bytes: usize) -> Self {
        let no_arm = Vec::new();
        let arm = spec.anchor.as_ref().map_or(&no_arm, |a| &a.arm);
        let outside = if spec.section_open.is_empty() {
            Matcher::new(&[(&spec.call_open, Role::CallOpen), (arm, Role::Arm)])
        } else {
            Matcher::new(&[(&spec.section_open, Role::SectionOpen)])
        };
        let section = Matcher::new(&[(&spec.call_open, Role::CallOpen), (&spec.section_close, Role::SectionClose)]);
        let body = Matcher::new(&[(&spec.call_close, Role::CallClose)]);
        Self { spec, outside, section, body, schemas, max_block_bytes }
    }

    #[must_use]
    pub fn spec(&self) -> &FormatSpec {
        &self.spec
    }

    /// The role a special token's spelling gives it in this format.
    #[must_use]
    pub fn role_of_special(&self, text: &[u8]) -> TokenRole {
        self.special_groups()
            .iter()
            .find(|(texts, _)| texts.iter().any(|t| t.as_bytes() == text))
            .map_or(TokenRole::Text, |(_, role)| TokenRole::Delimiter(*role))
    }

    /// Every spelling `role_of_special` gives a role: a vocabulary binds only the
    /// ids spelled so, which it looks up by text instead of scanning every entry.
    pub fn special_spellings(&self) -> impl Iterator<Item = &[u8]> {
        self.special_groups().into_iter().flat_map(|(texts, _)| texts.iter().map(String::as_bytes))
    }

    /// The delimiters a special token may spell, with the role each gives it.
    fn special_groups(&self) -> [(&[String], Role); 5] {
        let s = &self.spec;
        let arm = s.anchor.as_ref().map(|a| a.arm.as_slice()).unwrap_or_default();
        [
            (&s.section_open, Role::SectionOpen),
            (&s.section_close, Role::SectionClose),
            (&s.call_open, Role::CallOpen),
            (&s.call_close, Role::CallClose),
            (arm, Role::Arm),
        ]
    }

    fn matcher(&self, mode: Mode) -> Option<&Matcher> {
        match mode {
            Mode::Outside => self.outside.as_ref(),
            Mode::Section => self.section.as_ref(),
            Mode::Body | Mode::Overflow => self.body.as_ref(),
        }
    }

    fn cursor_for(&self, mode: Mode) -> Cursor {
        self.matcher(mode).map_or_else(Cursor::none, |m| m.delimiters.start())
    }

    #[must_use]
    pub fn initial(&self) -> ScanState {
        ScanState {
            mode: Mode::Outside,
            cursor: self.cursor_for(Mode::Outside),
            lexer: Lexer::default(),
            in_section: false,
            armed: self.spec.anchor.is_some(),
            awaiting_confirmation: false,
            block_start: 0,
            body_start: 0,
        }
    }

    fn enter(&self, state: &mut ScanState, mode: Mode) {
        state.mode = mode;
        state.cursor = self.cursor_for(mode);
    }

    /// Scans one token whose bytes are `text[token]` (already appended to the
    /// live text), updating `state` and pushing what happened to `out`.
    /// Work is proportional to the token's bytes, plus one parse per ended block.
    pub fn scan(
        &self,
        state: &mut ScanState,
        text: &[u8],
        token: Range<usize>,
        role: TokenRole,
        out: &mut Vec<ScanEvent>,
    ) {
        if state.awaiting_confirmation {
            // This token confirms the structurally complete block before it.
            state.awaiting_confirmation = false;
            out.push(ScanEvent::Confirmed);
        }
        if let TokenRole::Delimiter(role) = role {
            if self.delimit(state, text, role, token.clone(), out) {
                return;
            }
        }
        if self.passes_over(state, &text[token.clone()]) {
            return;
        }
        for i in token {
            self.byte(state, text, i, out);
        }
    }

    /// Whether scanning `bytes` byte by byte would change nothing: between blocks
    /// (or in a section), not armed for an anchored call, and no byte begins a
    /// delimiter from where the automaton rests. Most prose tokens, in one table
    /// lookup per byte instead of a walk of the automaton.
    #[inline]
    fn passes_over(&self, state: &ScanState, bytes: &[u8]) -> bool {
        let anchored = state.armed && state.mode == Mode::Outside && self.spec.anchor.is_some();
        matches!(state.mode, Mode::Outside | Mode::Section)
            && !anchored
            && self.matcher(state.mode).is_none_or(|m| m.delimiters.passes_over(state.cursor, bytes))
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
        match (state.mode, role) {
            (Mode::Outside, Role::SectionOpen) if sectioned => {
                state.in_section = true;
                self.enter(state, Mode::Section);
            }
            (Mode::Outside, Role::CallOpen) if !sectioned => self.open(state, token.start, token.end, out),
            (Mode::Section, Role::CallOpen) => self.open(state, token.start, token.end, out),
            (Mode::Section, Role::SectionClose) => {
                state.in_section = false;
                self.enter(state, Mode::Outside);
            }
            (Mode::Body | Mode::Overflow, Role::CallClose) => self.close(state, text, token.start, token.end, out),
            _ => return false,
        }
        true
    }

    #[inline]
    fn byte(&self, state: &mut ScanState, text: &[u8], i: usize, out: &mut Vec<ScanEvent>) {
        let byte = text[i];
        match state.mode {
            Mode::Outside | Mode::Section => {
                if state.armed && state.mode == Mode::Outside {
                    if let Some(anchor) = &self.spec.anchor {
                        if byte.is_ascii_whitespace() || anchor.separators.contains(&byte) {
                            return;
                        }
                        if anchor.starts.contains(&byte) {
                            self.open(state, i, i, out);
                            self.byte(state, text, i, out);
                            return;
                        }
                        state.armed = false;
                    }
                }
                let Some(m) = self.matcher(state.mode) else { return };
                let Some(p) = m.delimiters.step(&mut state.cursor, byte) else { return };
                let (role, len) = m.roles[p];
                match role {
                    Role::SectionOpen => {
                        state.in_section = true;
                        self.enter(state, Mode::Section);
                    }
                    Role::SectionClose => {
                        state.in_section = false;
                        self.enter(state, Mode::Outside);
                    }
                    Role::CallOpen => self.open(state, i + 1 - len, i + 1, out),
                    Role::Arm => state.armed = true,
                    Role::CallClose => {}
                }
            }
            Mode::Body | Mode::Overflow => {
                let step = state.lexer.step(self.spec.syntax, self.spec.struct_start, byte);
                if let Some(m) = &self.body {
                    if !step.outside {
                        state.cursor = m.delimiters.start();
                    } else if let Some(p) = m.delimiters.step(&mut state.cursor, byte) {
                        self.close(state, text, i + 1 - m.roles[p].1, i + 1, out);
                        return;
                    }
                } else if step.completed {
                    let overflowed = state.mode == Mode::Overflow;
                    self.leave_block(state);
                    if !overflowed {
                        if state.awaiting_confirmation {
                            // A second block completed in the same token: the first is confirmed.
                            out.push(ScanEvent::Confirmed);
                        }
                        state.awaiting_confirmation = true;
                        let body = self.parse(text, state.body_start as usize..i + 1);
                        out.push(ScanEvent::Ended { end: i + 1, body, confirmed: false });
                    }
                    return;
                }
                if state.mode == Mode::Body && i + 1 - state.block_start as usize > self.max_block_bytes {
                    state.mode = Mode::Overflow;
                    let message =
                        format!("the block exceeds max_block_bytes ({} bytes) before it ends", self.max_block_bytes);
                    let at = i + 1 - state.body_start as usize;
                    let body = Err(Malformed::new(MalformedKind::TooLarge, at, message));
                    out.push(ScanEvent::Ended { end: i + 1, body, confirmed: true });
                }
            }
        }
    }

    fn open(&self, state: &mut ScanState, delimiter_start: usize, body_start: usize, out: &mut Vec<ScanEvent>) {
        self.enter(state, Mode::Body);
        state.lexer = Lexer::default();
        state.armed = false;
        // Offsets fit: the stream refuses text past u32::MAX before scanning it.
        state.block_start = delimiter_start as u32;
        state.body_start = body_start as u32;
        out.push(ScanEvent::Opened { delimiter_start });
    }

    /// Back between blocks: in the section if the block was in one; anchored
    /// formats may start another call right away (`;`-separated sequences).
    fn leave_block(&self, state: &mut ScanState) {
        let mode = if state.in_section { Mode::Section } else { Mode::Outside };
        self.enter(state, mode);
        state.armed = self.spec.anchor.is_some();
    }

    fn close(&self, state: &mut ScanState, text: &[u8], body_end: usize, end: usize, out: &mut Vec<ScanEvent>) {
        let overflowed = state.mode == Mode::Overflow;
        self.leave_block(state);
        if !overflowed {
            let body = self.parse(text, state.body_start as usize..body_end);
            out.push(ScanEvent::Ended { end, body, confirmed: true });
        }
    }

    fn parse(&self, text: &[u8], body: Range<usize>) -> Result<Vec<Call>, Malformed> {
        match std::str::from_utf8(&text[body]) {
            Err(e) => Err(Malformed::new(
                MalformedKind::InvalidUtf8,
                e.valid_up_to(),
                format!("the block is not valid UTF-8 (at byte {} of its body)", e.valid_up_to()),
            )),
            Ok(body) => body::parse(&self.spec.body, body, &self.schemas),
        }
    }

    /// What ending the turn does: a block waiting for confirmation is confirmed;
    /// a block still open is malformed (unless already reported).
    #[must_use]
    pub fn finish(&self, state: &ScanState, text: &[u8]) -> Vec<ScanEvent> {
        let mut out = Vec::new();
        if state.awaiting_confirmation {
            out.push(ScanEvent::Confirmed);
        }
        if state.mode == Mode::Body {
            let at = text.len() - state.body_start as usize;
            let body = Err(Malformed::new(
                MalformedKind::Unterminated,
                at,
                "the turn ended inside the block (it never closed)",
            ));
            out.push(ScanEvent::Ended { end: text.len(), body, confirmed: true });
        }
        out
    }
}

#[cfg(test)]
mod tests;
