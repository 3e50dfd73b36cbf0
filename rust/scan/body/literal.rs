//! Python literals (and the JSON ones models mix in: `true`, `null`) read into
//! JSON values: the arguments of pythonic calls, and raw XML values typed by a
//! schema that say `{'key': 'value'}` or `None`. One cursor over the text.

use super::super::malformed::{Malformed, MalformedKind};
use super::numbers::{decimal_digits, integer, shown, MAX_INTEGER_DIGITS};
use serde_json::{Map, Number, Value};

/// Literals nest at most this deep; deeper is malformed, never a stack overflow.
const MAX_DEPTH: usize = 64;

/// A position in a text being read.
pub(super) struct Cursor<'a> {
    s: &'a [u8],
    pub(super) i: usize,
    pub(super) text: &'a str,
}

/// The whole of `text` (surrounding whitespace aside) as one literal.
pub(super) fn literal(text: &str) -> Result<Value, Malformed> {
    let mut c = Cursor::new(text);
    c.ws();
    let v = c.value(0)?;
    c.ws();
    if c.i != text.len() {
        return Err(c.error(MalformedKind::InvalidLiteral, "unexpected text after the literal"));
    }
    Ok(v)
}

/// Whether `word` spells a number JSON cannot hold.
pub(super) fn is_non_finite_word(word: &str) -> bool {
    let w = word.trim().trim_start_matches(['+', '-']).to_ascii_lowercase();
    matches!(w.as_str(), "inf" | "infinity" | "nan") || w.parse::<f64>().is_ok_and(|f| !f.is_finite())
}

impl<'a> Cursor<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self { s: text.as_bytes(), i: 0, text }
    }

    pub(super) fn error(&self, kind: MalformedKind, message: impl Into<String>) -> Malformed {
        Malformed::new(kind, self.i.min(self.s.len()), message)
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    pub(super) fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    pub(super) fn ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    pub(super) fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn expect(&mut self, b: u8, what: &str) -> Result<(), Malformed> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(self
                .error(MalformedKind::InvalidLiteral, format!("expected {:?} at byte {} of {what}", b as char, self.i)))
        }
    }

    /// A Python identifier (dots allowed, for `module.func` names).
    pub(super) fn ident(&mut self) -> Result<&'a str, Malformed> {
        let start = self.i;
        while self.peek().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b >= 0x80) {
            self.i += 1;
        }
        if start == self.i {
            return Err(self.error(MalformedKind::InvalidLiteral, format!("expected a name at byte {start}")));
        }
        Ok(&self.text[start..self.i])
    }

    pub(super) fn value(&mut self, depth: usize) -> Result<Value, Malformed> {
        if depth > MAX_DEPTH {
            return Err(self.error(MalformedKind::InvalidLiteral, "argument literals nest too deeply"));
        }
        self.ws();
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => self.string(q).map(Value::String),
            Some(b'[') => self.sequence(b'[', b']', depth),
            Some(b'(') => self.sequence(b'(', b')', depth),
            Some(b'{') => self.dict(depth),
            Some(b) if b == b'-' || b == b'+' || b == b'.' || b.is_ascii_digit() => self.number(),
            _ => {
                let start = self.i;
                let word = self.ident()?;
                match word {
                    "True" | "true" => Ok(Value::Bool(true)),
                    "False" | "false" => Ok(Value::Bool(false)),
                    "None" | "null" => Ok(Value::Null),
                    other if is_non_finite_word(other) => Err(Malformed::new(
                        MalformedKind::NonFinite,
                        start,
                        format!("{other:?} is not a finite number, which JSON cannot hold"),
                    )),
                    other => Err(Malformed::new(
                        MalformedKind::InvalidLiteral,
                        start,
                        format!("{other:?} is not a Python literal"),
                    )),
                }
            }
        }
    }

    fn sequence(&mut self, open: u8, close: u8, depth: usize) -> Result<Value, Malformed> {
        self.expect(open, "a sequence")?;
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.eat(close) {
                return Ok(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.ws();
            if !self.eat(b',') {
                self.ws();
                self.expect(close, "a sequence")?;
                return Ok(Value::Array(items));
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Value, Malformed> {
        self.expect(b'{', "a dict")?;
        let mut map = Map::new();
        loop {
            self.ws();
            if self.eat(b'}') {
                return Ok(Value::Object(map));
            }
            let key = match self.value(depth + 1)? {
                Value::String(s) => s,
                other => other.to_string(),
            };
            self.ws();
            self.expect(b':', "a dict")?;
            map.insert(key, self.value(depth + 1)?);
            self.ws();
            if !self.eat(b',') {
                self.ws();
                self.expect(b'}', "a dict")?;
                return Ok(Value::Object(map));
            }
        }
    }

    fn number(&mut self) -> Result<Value, Malformed> {
        let start = self.i;
        while self.peek().is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.' | b'_')) {
            self.i += 1;
        }
        let lit = self.text[start..self.i].replace('_', "");
        let unsigned = lit.trim_start_matches(['+', '-']);
        let decimal = decimal_digits(unsigned).is_some();
        if decimal && unsigned.len() > 1 && unsigned.starts_with('0') && unsigned.bytes().any(|b| b != b'0') {
            let message = format!("{:?}: Python refuses leading zeros in a decimal integer", shown(&lit));
            return Err(Malformed::new(MalformedKind::InvalidLiteral, start, message));
        }
        if let Ok(i) = lit.parse::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        // Python's ints have no bound: one past 64 bits stays exact, up to what Python converts.
        if let Some(n) = integer(lit.strip_prefix('+').unwrap_or(&lit)) {
            return Ok(Value::Number(n));
        }
        if decimal {
            let message = format!(
                "{:?} has {} digits, past the {MAX_INTEGER_DIGITS} Python converts",
                shown(&lit),
                unsigned.len()
            );
            return Err(Malformed::new(MalformedKind::NonFinite, start, message));
        }
        match lit.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Number::from_f64(f).map_or(Value::Null, Value::Number)),
            _ if is_non_finite_word(&lit) => Err(Malformed::new(
                MalformedKind::NonFinite,
                start,
                format!("{:?} is not a finite number, which JSON cannot hold", shown(&lit)),
            )),
            _ => {
                Err(Malformed::new(MalformedKind::InvalidLiteral, start, format!("{:?} is not a number", shown(&lit))))
            }
        }
    }

    fn hex(&mut self, n: usize, esc: u8) -> Result<u32, Malformed> {
        let hex = self
            .text
            .get(self.i..self.i + n)
            .ok_or_else(|| self.error(MalformedKind::InvalidLiteral, "truncated escape"))?;
        let code = u32::from_str_radix(hex, 16)
            .map_err(|_| self.error(MalformedKind::InvalidLiteral, format!("bad escape \\{}{hex}", esc as char)))?;
        self.i += n;
        Ok(code)
    }

    fn string(&mut self, quote: u8) -> Result<String, Malformed> {
        self.i += 1;
        let mut out = String::new();
        let mut run = self.i;
        while let Some(b) = self.peek() {
            if b == quote {
                out.push_str(&self.text[run..self.i]);
                self.i += 1;
                return Ok(out);
            }
            if b != b'\\' {
                self.i += 1;
                continue;
            }
            out.push_str(&self.text[run..self.i]);
            self.i += 1;
            let esc = self.peek().ok_or_else(|| self.error(MalformedKind::InvalidLiteral, "unterminated string"))?;
            self.i += 1;
            match esc {
                b'n' => out.push('\n'),
                b't' => out.push('\t'),
                b'r' => out.push('\r'),
                b'0' => out.push('\0'),
                b'\\' | b'\'' | b'"' | b'/' => out.push(esc as char),
                b'U' | b'u' | b'x' => {
                    let n = match esc {
                        b'U' => 8,
                        b'u' => 4,
                        _ => 2,
                    };
                    let mut code = self.hex(n, esc)?;
                    // A JSON surrogate pair spells one character in two escapes.
                    if (0xD800..0xDC00).contains(&code) && self.text[self.i..].starts_with("\\u") {
                        let saved = self.i;
                        self.i += 2;
                        match self.hex(4, b'u') {
                            Ok(low) if (0xDC00..0xE000).contains(&low) => {
                                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                            }
                            _ => self.i = saved,
                        }
                    }
                    // A lone surrogate or a code past U+10FFFF is no character: refused, as
                    // JSON bodies refuse it, instead of a silent U+FFFD the model never wrote.
                    let c = char::from_u32(code).ok_or_else(|| {
                        self.error(
                            MalformedKind::InvalidLiteral,
                            format!("the escape \\{}{code:0w$x} is no Unicode character (a lone surrogate or past U+10FFFF)", esc as char, w = n),
                        )
                    })?;
                    out.push(c);
                }
                // Python keeps an unknown escape as written.
                _ => {
                    self.i -= 1;
                    out.push('\\');
                    run = self.i;
                    continue;
                }
            }
            run = self.i;
        }
        Err(self.error(MalformedKind::InvalidLiteral, "unterminated string"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_and_json_literals() {
        assert_eq!(
            literal("{'a': [1, 2.5, None], 'b': (True,), \"c\": null}").unwrap(),
            json!({"a": [1, 2.5, null], "b": [true], "c": null})
        );
        assert_eq!(literal(r"'a\'b\n\u00e9\ud83d\ude80'").unwrap(), json!("a'b\né🚀"));
        assert_eq!(literal(r"'\d'").unwrap(), json!("\\d"));
        // A lone surrogate (either half) or a code past U+10FFFF is no character.
        for bad in [r"'\ud800x'", r"'\udc00'", r"'\ud800\u0041'", r"'\U00110000'", r"'\U0000d800'"] {
            let e = literal(bad).unwrap_err();
            assert_eq!(e.kind, MalformedKind::InvalidLiteral, "{bad}");
            assert!(e.message.contains("no Unicode character"), "{bad}: {}", e.message);
        }
        assert_eq!(literal("-3").unwrap(), json!(-3));
    }

    #[test]
    fn non_finite_and_errors() {
        for bad in ["1e999", "-1e999", "inf", "nan", "[1, Infinity]"] {
            assert_eq!(literal(bad).unwrap_err().kind, MalformedKind::NonFinite, "{bad}");
        }
        assert_eq!(literal("b'z'").unwrap_err().kind, MalformedKind::InvalidLiteral);
        assert_eq!(literal("'open").unwrap_err().kind, MalformedKind::InvalidLiteral);
        assert_eq!(literal("1 2").unwrap_err().kind, MalformedKind::InvalidLiteral);
        assert_eq!(literal(&"[".repeat(100)).unwrap_err().kind, MalformedKind::InvalidLiteral);
    }
}
