//! The text a JSON string holds, decoded while its bytes are accepted: how
//! arguments written as a string (`"arguments": "{\"a\": 1}"`, Granite 4 and
//! others) stream as the object text they hold. The parser reads them
//! `trim`med, so blanks at either end never go out (trailing ones wait until
//! something follows them).

/// Where the decoder is inside an escape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    /// After `\`.
    Backslash,
    /// `\u` and `n` hex digits read into `acc`; `high` is a high surrogate waiting for its pair.
    Hex {
        n: u8,
        acc: u32,
        high: Option<u32>,
    },
    /// After a high surrogate: its pair's `\` (false) or `u` (true) comes next.
    Pair {
        high: u32,
        u: bool,
    },
}

/// What one content byte is.
enum Byte {
    Char(char),
    /// Part of an escape not finished yet.
    Pending,
    /// Not escaped: a byte of a UTF-8 character.
    Raw,
    Broken,
}

/// Decodes the content bytes of one JSON string (quotes excluded).
#[derive(Debug)]
pub(super) struct Unescape {
    escape: Escape,
    /// Bytes of a UTF-8 character not complete yet.
    partial: Vec<u8>,
    /// Decoded blanks that may be the end of the text.
    blanks: String,
    started: bool,
    /// The string is no valid JSON string: nothing more goes out.
    broken: bool,
}

impl Unescape {
    pub(super) fn new() -> Self {
        Self { escape: Escape::None, partial: Vec::new(), blanks: String::new(), started: false, broken: false }
    }

    /// Reads one content byte; appends the decoded text that is certain to `out`.
    pub(super) fn step(&mut self, b: u8, out: &mut Vec<u8>) {
        if self.broken {
            return;
        }
        match self.escape(b) {
            Byte::Char(c) => self.char(c, out),
            Byte::Pending => {}
            Byte::Raw => self.raw(b, out),
            Byte::Broken => self.broken = true, // serde rejects the string: the call is malformed
        }
    }

    /// What byte `b` is, given the escape it may be part of.
    fn escape(&mut self, b: u8) -> Byte {
        let (next, byte) = match (self.escape, b) {
            (Escape::None, b'\\') => (Escape::Backslash, Byte::Pending),
            (Escape::None, _) => (Escape::None, Byte::Raw),
            (Escape::Backslash, b'u') => (Escape::Hex { n: 0, acc: 0, high: None }, Byte::Pending),
            (Escape::Backslash, _) => {
                let c = match b {
                    b'"' | b'\\' | b'/' => char::from(b),
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    _ => return Byte::Broken,
                };
                (Escape::None, Byte::Char(c))
            }
            (Escape::Hex { n, acc, high }, _) => {
                let Some(d) = char::from(b).to_digit(16) else { return Byte::Broken };
                let acc = acc << 4 | d;
                if n < 3 {
                    (Escape::Hex { n: n + 1, acc, high }, Byte::Pending)
                } else {
                    let c = match (high, acc) {
                        (None, 0xD800..=0xDBFF) => {
                            self.escape = Escape::Pair { high: acc, u: false };
                            return Byte::Pending;
                        }
                        (Some(high), 0xDC00..=0xDFFF) => {
                            char::from_u32(0x10000 + ((high - 0xD800) << 10) + (acc - 0xDC00))
                        }
                        (None, _) => char::from_u32(acc), // none for a lone low surrogate
                        (Some(_), _) => None,
                    };
                    (Escape::None, c.map_or(Byte::Broken, Byte::Char))
                }
            }
            (Escape::Pair { high, u: false }, b'\\') => (Escape::Pair { high, u: true }, Byte::Pending),
            (Escape::Pair { high, u: true }, b'u') => (Escape::Hex { n: 0, acc: 0, high: Some(high) }, Byte::Pending),
            (Escape::Pair { .. }, _) => return Byte::Broken,
        };
        self.escape = next;
        byte
    }

    /// An unescaped byte: part of a UTF-8 character.
    fn raw(&mut self, b: u8, out: &mut Vec<u8>) {
        self.partial.push(b);
        match std::str::from_utf8(&self.partial) {
            Ok(s) => {
                let c = s.chars().next().unwrap_or_default();
                self.partial.clear();
                self.char(c, out);
            }
            Err(e) if e.error_len().is_some() || self.partial.len() >= 4 => self.broken = true,
            Err(_) => {} // the character's next bytes are still coming
        }
    }

    fn char(&mut self, c: char, out: &mut Vec<u8>) {
        if c.is_whitespace() {
            if self.started {
                self.blanks.push(c);
            }
            return;
        }
        self.started = true;
        out.extend_from_slice(self.blanks.as_bytes());
        self.blanks.clear();
        let mut buf = [0; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(content: &str) -> String {
        let mut u = Unescape::new();
        let mut out = Vec::new();
        for b in content.bytes() {
            u.step(b, &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn decodes_what_serde_reads_trimmed() {
        for text in
            [" {\"a\": \"x\\ny\"} ", "{\"é\": \"😀\", \"t\": \"\\t\"}\n", "\u{3000}{}\u{3000}", "{\"a\":\"\\\\\"}"]
        {
            let content = serde_json::to_string(text).unwrap();
            assert_eq!(decode(&content[1..content.len() - 1]), text.trim(), "{text:?}");
        }
        assert_eq!(decode("\\ud83d\\ude00 x"), "😀 x");
        assert_eq!(decode("\\u00e9"), "é");
    }

    #[test]
    fn trailing_blanks_wait_and_bad_escapes_stop() {
        assert_eq!(decode("{} \\n "), "{}");
        assert_eq!(decode("a\\qb"), "a");
        assert_eq!(decode("a\\ud83dxb"), "a");
        assert_eq!(decode("a\\u12G4b"), "a");
    }
}
