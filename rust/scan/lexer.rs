//! Just enough lexing of a block body to know whether a byte sits inside a
//! string (so a delimiter spelled inside an argument is never taken for a real
//! one) and when a bracketed value is structurally complete (for formats with
//! no closing delimiter). `Copy`, so it is saved per token with the scanner.

/// Which strings and brackets a body uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// No lexing: the body is raw text (XML-style formats).
    Raw,
    /// JSON: `"` strings with `\` escapes; `[{` nest.
    Json,
    /// Python literals: `'` or `"` strings with `\` escapes; `[{(` nest.
    Python,
}

/// Where bracket counting starts, for structurally-ended bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StructStart {
    /// At the body's first bracket.
    FirstBracket,
    /// At the first `{`, unless the body opens with `[` (Mistral: `[{…}]` or `NAME[ARGS]{…}`).
    LeadingBracketOrBrace,
}

/// Where a byte of JSON text lies relative to its `"` strings (with `\` escapes):
/// the one string tracker every reader of JSON bodies steps through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JsonStrings {
    inside: bool,
    escaped: bool,
}

/// What one byte was to [`JsonStrings`]. Quotes belong to their string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InString {
    Outside,
    Opens,
    Inside,
    Closes,
}

impl JsonStrings {
    #[inline]
    pub(crate) fn step(&mut self, b: u8) -> InString {
        if self.inside {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.inside = false;
                return InString::Closes;
            }
            return InString::Inside;
        }
        if b == b'"' {
            self.inside = true;
            return InString::Opens;
        }
        InString::Outside
    }
}

/// A nesting depth past what the counter holds: the count is lost, so the value never
/// completes (the block ends malformed at its byte limit or at the end of the turn). A
/// saturated counter that went on counting closers would complete it early, and the
/// rest of the body would be read as blocks of its own (found by a helper: 70,000
/// openers, then 65,535 closers and a call, committed the call).
pub(super) const LOST: u16 = u16::MAX;

/// The lexer state after a byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Lexer {
    quote: u8,
    escaped: bool,
    depth: u16,
    counting: bool,
    seen_text: bool,
    tagged: Tagged,
}

/// `LeadingBracketOrBrace` only: where the lexer stands relative to a tag's `]`
/// (Mistral's `[ARGS]`), after which a `[` or a string is the arguments' value,
/// so the block ends with it even when it is no object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Tagged {
    #[default]
    No,
    /// A tag's `]` came last, blanks aside.
    AfterTag,
    /// In a string that is such a value: its closing quote completes it.
    StringValue,
}

/// What one byte did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Step {
    /// The byte lay outside every string (quotes belong to their string).
    pub outside: bool,
    /// The byte closed the outermost bracket: the value is complete.
    pub completed: bool,
}

impl Lexer {
    /// Inside a string and not after a backslash: until its quote or a
    /// backslash, `step` changes nothing (see `string_run`).
    #[inline]
    pub(super) fn in_plain_string(self) -> bool {
        self.quote != 0 && !self.escaped
    }

    /// How many leading bytes of `bytes` lie inside the string the lexer is in
    /// (`in_plain_string`) and change nothing: `step` on each would leave the
    /// lexer as it is and report it inside (neither outside nor completing).
    #[inline]
    pub(super) fn string_run(self, bytes: &[u8]) -> usize {
        debug_assert!(self.in_plain_string());
        let quote = self.quote;
        bytes.iter().position(|&b| b == quote || b == b'\\').unwrap_or(bytes.len())
    }

    /// Outside every string (an escaped byte is inside one).
    #[inline]
    pub(super) fn outside_strings(self) -> bool {
        self.quote == 0
    }

    /// Whether `step` on `byte` outside strings changes nothing but `seen_text`
    /// and reports it outside, not completing: no quote, no bracket.
    pub(super) fn quiet(syntax: Syntax, byte: u8) -> bool {
        match syntax {
            Syntax::Raw => true,
            Syntax::Json => !matches!(byte, b'"' | b'[' | b']' | b'{' | b'}'),
            Syntax::Python => !matches!(byte, b'"' | b'\'' | b'[' | b']' | b'{' | b'}' | b'(' | b')'),
        }
    }

    /// `step` over `bytes`, outside strings and every one `quiet`.
    #[inline]
    pub(super) fn pass_quiet(&mut self, syntax: Syntax, bytes: &[u8]) {
        if syntax != Syntax::Raw
            && (!self.seen_text || self.tagged == Tagged::AfterTag)
            && !bytes.iter().all(u8::is_ascii_whitespace)
        {
            self.seen_text = true;
            self.tagged = Tagged::No;
        }
    }

    #[inline(always)] // once per body byte outside runs; as a call it cost a third of the byte
    #[allow(clippy::inline_always)]
    pub(super) fn step(&mut self, syntax: Syntax, start: StructStart, byte: u8) -> Step {
        let mut step = Step { outside: false, completed: false };
        if syntax == Syntax::Raw {
            step.outside = true;
            return step;
        }
        if self.quote != 0 {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == self.quote {
                self.quote = 0;
                step.completed = std::mem::take(&mut self.tagged) == Tagged::StringValue;
            }
            return step;
        }
        let is_quote = byte == b'"' || (syntax == Syntax::Python && byte == b'\'');
        if is_quote {
            self.quote = byte;
            self.seen_text = true;
            let value = self.tagged == Tagged::AfterTag && !self.counting;
            self.tagged = if value { Tagged::StringValue } else { Tagged::No };
            return step;
        }
        step.outside = true;
        let opens = matches!(byte, b'[' | b'{') || (syntax == Syntax::Python && byte == b'(');
        let closes = matches!(byte, b']' | b'}') || (syntax == Syntax::Python && byte == b')');
        if !self.counting && opens {
            self.counting = match start {
                StructStart::FirstBracket => true,
                StructStart::LeadingBracketOrBrace => {
                    byte == b'{' || !self.seen_text || self.tagged == Tagged::AfterTag
                }
            };
        }
        if !byte.is_ascii_whitespace() {
            self.seen_text = true;
            // A tag's `]` outside the value: what follows it may be the arguments.
            let tag_end = !self.counting && byte == b']' && start == StructStart::LeadingBracketOrBrace;
            self.tagged = if tag_end { Tagged::AfterTag } else { Tagged::No };
        }
        if self.counting {
            if opens {
                self.depth = self.depth.saturating_add(1);
            } else if closes && self.depth > 0 && self.depth < LOST {
                self.depth -= 1;
                step.completed = self.depth == 0;
            }
        }
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outside(syntax: Syntax, text: &str) -> String {
        let mut l = Lexer::default();
        text.bytes()
            .map(|b| if l.step(syntax, StructStart::FirstBracket, b).outside { b as char } else { '_' })
            .collect()
    }

    fn completes_at(syntax: Syntax, start: StructStart, text: &str) -> Option<usize> {
        let mut l = Lexer::default();
        text.bytes().position(|b| l.step(syntax, start, b).completed)
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(outside(Syntax::Json, r#"{"a": 1}"#), "{___: 1}");
        assert_eq!(outside(Syntax::Json, r#"{"a\"b": x}"#), "{______: x}");
        assert_eq!(outside(Syntax::Json, r#"["\\", y]"#), "[____, y]");
        assert_eq!(outside(Syntax::Python, r#"f('a"b', "c'd")"#), "f(_____, _____)");
        assert_eq!(outside(Syntax::Json, "'x'"), "'x'");
    }

    #[test]
    fn structural_completion() {
        assert_eq!(completes_at(Syntax::Json, StructStart::FirstBracket, r#"{"a": [1, "]"]} x"#), Some(14));
        assert_eq!(completes_at(Syntax::Python, StructStart::FirstBracket, "[f(a=')'), g()] "), Some(14));
        let mistral = StructStart::LeadingBracketOrBrace;
        assert_eq!(completes_at(Syntax::Json, mistral, r#"get[ARGS]{"a": 1}"#), Some(16));
        assert_eq!(completes_at(Syntax::Json, mistral, r#"[{"name": "f"}]"#), Some(14));
        // Arguments after a tag that are no object end with their value too.
        assert_eq!(completes_at(Syntax::Json, mistral, r#"get[ARGS][{"a": 1}] x"#), Some(18));
        assert_eq!(completes_at(Syntax::Json, mistral, r#"get[ARGS] "a]b" x"#), Some(14));
        assert_eq!(completes_at(Syntax::Json, mistral, "get[CALL_ID]id9[ARGS][1]"), Some(23));
        assert_eq!(completes_at(Syntax::Json, mistral, r#"get[x] y "s" [1]"#), None, "text after the tag");
        assert_eq!(completes_at(Syntax::Json, StructStart::FirstBracket, r#"{"a": 1"#), None);
    }

    #[test]
    fn a_depth_past_the_counter_never_completes() {
        let deep = |opens: usize, closes: usize| "[".repeat(opens) + &"]".repeat(closes);
        let n = usize::from(LOST);
        assert_eq!(completes_at(Syntax::Json, StructStart::FirstBracket, &deep(n - 1, n - 1)), Some(2 * n - 3));
        assert_eq!(completes_at(Syntax::Json, StructStart::FirstBracket, &deep(n + 4465, n)), None);
        assert_eq!(completes_at(Syntax::Json, StructStart::FirstBracket, &deep(n, n + 10)), None);
    }
}
