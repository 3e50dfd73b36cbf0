//! The incremental scanner: one small `Copy` state per token, so rolling back
//! a rejection restores one saved value instead of re-scanning text.

use super::delimiter::{Cursor, Delimiters};
use super::event::Call;
use super::format::Format;
use super::hermes;
use super::json_lexer::JsonLexer;
use std::ops::Range;

/// What a token means to the scanner beyond its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRole {
    /// Plain text: its bytes go through the automaton.
    Text,
    /// A special token bound to the format's open delimiter.
    Open,
    /// A special token bound to the format's close delimiter.
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Between blocks, looking for an opener.
    Outside,
    /// Inside a block body, looking for its closer outside JSON strings.
    Body,
    /// Inside a block that outgrew the byte limit: skipped to its closer.
    Overflow,
}

/// The scanner's whole state after a token: a few words, saved per token.
#[derive(Debug, Clone, Copy)]
pub struct ScanState {
    mode: Mode,
    cursor: Cursor,
    json: JsonLexer,
    /// Live-text offset of the open delimiter's first byte.
    block_start: u32,
    /// Live-text offset of the body's first byte.
    body_start: u32,
}

impl ScanState {
    /// Whether a block is open (its end not seen yet).
    #[must_use]
    pub fn in_block(&self) -> bool {
        self.mode != Mode::Outside
    }

    /// Whether the open block has already been reported (it overflowed).
    #[must_use]
    pub fn block_reported(&self) -> bool {
        self.mode == Mode::Overflow
    }
}

/// What one token did to the block structure.
#[derive(Debug, Clone, PartialEq)]
pub enum ScanEvent {
    /// A block opened; its open delimiter starts at this live-text offset.
    Opened { delimiter_start: usize },
    /// The open block closed and parsed.
    Closed(Call),
    /// The open block closed unparseable, or outgrew the byte limit.
    Malformed(String),
}

/// A format's immutable scanning machinery. One per stream; states are separate.
#[derive(Debug, Clone)]
pub struct Scanner {
    format: Format,
    open: Delimiters,
    close: Delimiters,
    close_len: usize,
    max_block_bytes: usize,
}

impl Scanner {
    #[must_use]
    pub fn new(format: Format, max_block_bytes: usize) -> Self {
        let syntax = format.syntax();
        Self {
            format,
            open: Delimiters::new(&[syntax.open]),
            close: Delimiters::new(&[syntax.close]),
            close_len: syntax.close.len(),
            max_block_bytes,
        }
    }

    #[must_use]
    pub fn format(&self) -> Format {
        self.format
    }

    /// The role a special token's text gives it in this format.
    #[must_use]
    pub fn role_of_special(&self, text: &[u8]) -> TokenRole {
        let syntax = self.format.syntax();
        if text == syntax.open.as_bytes() {
            TokenRole::Open
        } else if text == syntax.close.as_bytes() {
            TokenRole::Close
        } else {
            TokenRole::Text
        }
    }

    #[must_use]
    pub fn initial(&self) -> ScanState {
        ScanState {
            mode: Mode::Outside,
            cursor: self.open.start(),
            json: JsonLexer::default(),
            block_start: 0,
            body_start: 0,
        }
    }

    /// Scans one token whose bytes are `text[token]` (already appended to the
    /// live text), updating `state` and pushing what happened to `out`.
    /// Work is proportional to the token's bytes, plus one parse per closed block.
    pub fn scan(
        &self,
        state: &mut ScanState,
        text: &[u8],
        token: Range<usize>,
        role: TokenRole,
        out: &mut Vec<ScanEvent>,
    ) {
        match (role, state.mode) {
            (TokenRole::Open, Mode::Outside) => {
                self.open_block(state, token.start, token.end, out);
                return;
            }
            (TokenRole::Close, Mode::Body | Mode::Overflow) => {
                self.close_block(state, text, token.start, out);
                return;
            }
            _ => {}
        }
        for i in token {
            let byte = text[i];
            match state.mode {
                Mode::Outside => {
                    if self.open.step(&mut state.cursor, byte).is_some() {
                        let len = self.format.syntax().open.len();
                        self.open_block(state, i + 1 - len, i + 1, out);
                    }
                }
                Mode::Body | Mode::Overflow => {
                    if !state.json.step(byte) {
                        state.cursor = self.close.start();
                    } else if self.close.step(&mut state.cursor, byte).is_some() {
                        self.close_block(state, text, i + 1 - self.close_len, out);
                        continue;
                    }
                    if state.mode == Mode::Body && i + 1 - state.block_start as usize > self.max_block_bytes {
                        state.mode = Mode::Overflow;
                        out.push(ScanEvent::Malformed(format!(
                            "the block exceeds max_block_bytes ({} bytes) before its closer",
                            self.max_block_bytes
                        )));
                    }
                }
            }
        }
    }

    fn open_block(&self, state: &mut ScanState, delimiter_start: usize, body_start: usize, out: &mut Vec<ScanEvent>) {
        state.mode = Mode::Body;
        state.cursor = self.close.start();
        state.json = JsonLexer::default();
        // Offsets fit: the stream refuses text past u32::MAX before scanning it.
        state.block_start = delimiter_start as u32;
        state.body_start = body_start as u32;
        out.push(ScanEvent::Opened { delimiter_start });
    }

    fn close_block(&self, state: &mut ScanState, text: &[u8], body_end: usize, out: &mut Vec<ScanEvent>) {
        let was = state.mode;
        state.mode = Mode::Outside;
        state.cursor = self.open.start();
        if was == Mode::Overflow {
            return; // already reported when it overflowed
        }
        let body = &text[state.body_start as usize..body_end];
        out.push(match std::str::from_utf8(body) {
            Err(e) => {
                ScanEvent::Malformed(format!("the block is not valid UTF-8 (at byte {} of its body)", e.valid_up_to()))
            }
            Ok(body) => match self.format {
                Format::Hermes => hermes::parse_body(body).map_or_else(ScanEvent::Malformed, ScanEvent::Closed),
            },
        });
    }

    /// What ending the turn does to an open block: it is malformed, unless
    /// it was already reported.
    #[must_use]
    pub fn finish(&self, state: &ScanState) -> Option<ScanEvent> {
        (state.mode == Mode::Body)
            .then(|| ScanEvent::Malformed("the turn ended inside the block (no closing delimiter)".to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_pieces(pieces: &[&[u8]], max: usize) -> Vec<ScanEvent> {
        let s = Scanner::new(Format::Hermes, max);
        let mut st = s.initial();
        let mut text = Vec::new();
        let mut out = Vec::new();
        for p in pieces {
            let start = text.len();
            text.extend_from_slice(p);
            s.scan(&mut st, &text, start..text.len(), TokenRole::Text, &mut out);
        }
        out
    }

    fn names(events: &[ScanEvent]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                ScanEvent::Closed(c) => Some(c.name.clone()),
                _ => None,
            })
            .collect()
    }

    const TWO: &str =
        "hi <tool_call>\n{\"name\": \"a\", \"arguments\": {\"q\": \"</tool_call><tool_call>\"}}\n</tool_call>\
                       <tool_call>{\"arguments\": {}, \"name\": \"b\"}</tool_call> bye";

    #[test]
    fn every_split_gives_the_same_blocks() {
        let whole = scan_pieces(&[TWO.as_bytes()], 1 << 20);
        assert_eq!(names(&whole), vec!["a", "b"]);
        let bytes = TWO.as_bytes();
        for cut in 0..bytes.len() {
            let split = scan_pieces(&[&bytes[..cut], &bytes[cut..]], 1 << 20);
            assert_eq!(split, whole, "cut at {cut}");
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(scan_pieces(&singles, 1 << 20), whole);
    }

    #[test]
    fn delimiter_inside_string_is_text() {
        let ev = scan_pieces(&[TWO.as_bytes()], 1 << 20);
        let ScanEvent::Closed(a) = &ev[1] else { panic!("{ev:?}") };
        assert_eq!(a.arguments["q"], "</tool_call><tool_call>");
    }

    #[test]
    fn utf8_split_across_pieces_is_reassembled() {
        let text = "<tool_call>{\"name\": \"f\", \"arguments\": {\"c\": \"é☃\"}}</tool_call>".as_bytes();
        let at = text.iter().position(|&b| b >= 0x80).unwrap() + 1;
        let ev = scan_pieces(&[&text[..at], &text[at..]], 1 << 20);
        let ScanEvent::Closed(c) = &ev[1] else { panic!("{ev:?}") };
        assert_eq!(c.arguments["c"], "é☃");
    }

    #[test]
    fn invalid_utf8_is_malformed() {
        let ev = scan_pieces(&[b"<tool_call>{\"name\": \"f\xff\"}</tool_call>"], 1 << 20);
        assert!(matches!(&ev[1], ScanEvent::Malformed(r) if r.contains("UTF-8")), "{ev:?}");
    }

    #[test]
    fn oversized_block_is_reported_once_and_skipped() {
        let big =
            format!("<tool_call>{{\"name\": \"f\", \"arguments\": {{\"x\": \"{}\"}}}}</tool_call>", "y".repeat(100));
        let ev = scan_pieces(&[big.as_bytes(), b"<tool_call>{\"name\": \"g\"}</tool_call>"], 64);
        let malformed =
            ev.iter().filter(|e| matches!(e, ScanEvent::Malformed(r) if r.contains("max_block_bytes"))).count();
        assert_eq!(malformed, 1, "{ev:?}");
        assert_eq!(names(&ev), vec!["g"]);
    }

    #[test]
    fn special_tokens_delimit_atomically() {
        let s = Scanner::new(Format::Hermes, 1 << 20);
        let mut st = s.initial();
        let mut out = Vec::new();
        let mut text = Vec::new();
        let feed = |st: &mut ScanState, text: &mut Vec<u8>, out: &mut Vec<ScanEvent>, p: &[u8], role| {
            let start = text.len();
            text.extend_from_slice(p);
            s.scan(st, text, start..text.len(), role, out);
        };
        feed(&mut st, &mut text, &mut out, b"<tool_", TokenRole::Text);
        feed(&mut st, &mut text, &mut out, b"<tool_call>", TokenRole::Open);
        feed(&mut st, &mut text, &mut out, b"{\"name\": \"f\"}", TokenRole::Text);
        feed(&mut st, &mut text, &mut out, b"</tool_call>", TokenRole::Close);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0], ScanEvent::Opened { delimiter_start: 6 });
        assert!(matches!(&out[1], ScanEvent::Closed(c) if c.name == "f"));
        assert!(!st.in_block());
    }

    #[test]
    fn unterminated_block_at_finish() {
        let s = Scanner::new(Format::Hermes, 1 << 20);
        let mut st = s.initial();
        let text = b"<tool_call>{\"name\"";
        s.scan(&mut st, text, 0..text.len(), TokenRole::Text, &mut Vec::new());
        assert!(matches!(s.finish(&st), Some(ScanEvent::Malformed(_))));
    }
}
