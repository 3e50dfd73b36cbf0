//! `[get_weather(city='SF', metric="c"), get_time()]`: Python call syntax with
//! keyword arguments whose values are Python literals, read into JSON values.

use super::super::call::Call;
use super::super::malformed::{Malformed, MalformedKind};
use serde_json::{Map, Number, Value};

/// The calls of a Python list of calls.
pub(super) fn calls(text: &str) -> Result<Vec<Call>, Malformed> {
    let mut p = Parser { s: text.as_bytes(), i: 0, text };
    p.ws();
    p.expect(b'[')?;
    let mut calls = Vec::new();
    loop {
        p.ws();
        if p.eat(b']') {
            break;
        }
        calls.push(p.call()?);
        p.ws();
        if !p.eat(b',') {
            p.ws();
            p.expect(b']')?;
            break;
        }
    }
    p.ws();
    if p.i != p.s.len() {
        return Err(p.error(MalformedKind::Layout, format!("unexpected text after the call list at byte {}", p.i)));
    }
    Ok(calls)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn error(&self, kind: MalformedKind, message: impl Into<String>) -> Malformed {
        Malformed::new(kind, self.i.min(self.s.len()), message)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), Malformed> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(self
                .error(MalformedKind::Layout, format!("expected {:?} at byte {} of the call list", b as char, self.i)))
        }
    }

    fn ident(&mut self) -> Result<&str, Malformed> {
        let start = self.i;
        while self.peek().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b >= 0x80) {
            self.i += 1;
        }
        if start == self.i {
            return Err(self.error(MalformedKind::Layout, format!("expected a name at byte {start} of the call list")));
        }
        Ok(&self.text[start..self.i])
    }

    fn call(&mut self) -> Result<Call, Malformed> {
        let name = self.ident()?.to_owned();
        self.ws();
        self.expect(b'(')?;
        let args_start = self.i;
        let mut arguments = Map::new();
        loop {
            self.ws();
            if self.eat(b')') {
                break;
            }
            let key = self.ident()?.to_owned();
            self.ws();
            self.expect(b'=').map_err(|_| {
                self.error(
                    MalformedKind::InvalidLiteral,
                    format!("argument {key:?} of {name:?} is not a keyword argument"),
                )
            })?;
            self.ws();
            let value = self.value(0)?;
            arguments.insert(key, value);
            self.ws();
            if !self.eat(b',') {
                self.ws();
                self.expect(b')')?;
                break;
            }
        }
        let raw_arguments = self.text[args_start..self.i - 1].trim().to_owned();
        Ok(Call { name, arguments, raw_arguments, id: None })
    }

    fn value(&mut self, depth: usize) -> Result<Value, Malformed> {
        if depth > 64 {
            return Err(self.error(MalformedKind::InvalidLiteral, "argument literals nest too deeply"));
        }
        self.ws();
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => self.string(q).map(Value::String),
            Some(b'[') => self.sequence(b'[', b']', depth),
            Some(b'(') => self.sequence(b'(', b')', depth),
            Some(b'{') => self.dict(depth),
            Some(b) if b == b'-' || b == b'+' || b.is_ascii_digit() => self.number(),
            _ => {
                let start = self.i;
                let word = self.ident()?;
                match word {
                    "True" | "true" => Ok(Value::Bool(true)),
                    "False" | "false" => Ok(Value::Bool(false)),
                    "None" | "null" => Ok(Value::Null),
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
        self.expect(open)?;
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
                self.expect(close)?;
                return Ok(Value::Array(items));
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Value, Malformed> {
        self.expect(b'{')?;
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
            self.expect(b':')?;
            map.insert(key, self.value(depth + 1)?);
            self.ws();
            if !self.eat(b',') {
                self.ws();
                self.expect(b'}')?;
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
        if let Ok(i) = lit.parse::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        lit.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| Malformed::new(MalformedKind::InvalidLiteral, start, format!("{lit:?} is not a number")))
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
            if b == b'\\' {
                out.push_str(&self.text[run..self.i]);
                self.i += 1;
                let esc =
                    self.peek().ok_or_else(|| self.error(MalformedKind::InvalidLiteral, "unterminated string"))?;
                self.i += 1;
                match esc {
                    b'n' => out.push('\n'),
                    b't' => out.push('\t'),
                    b'r' => out.push('\r'),
                    b'0' => out.push('\0'),
                    b'\\' | b'\'' | b'"' => out.push(esc as char),
                    b'U' | b'u' | b'x' => {
                        let n = match esc {
                            b'U' => 8,
                            b'u' => 4,
                            _ => 2,
                        };
                        let hex = self
                            .text
                            .get(self.i..self.i + n)
                            .ok_or_else(|| self.error(MalformedKind::InvalidLiteral, "truncated escape"))?;
                        let code = u32::from_str_radix(hex, 16).map_err(|_| {
                            self.error(MalformedKind::InvalidLiteral, format!("bad escape \\{}{hex}", esc as char))
                        })?;
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        self.i += n;
                    }
                    _ => {
                        out.push('\\');
                        out.push(esc as char);
                    }
                }
                run = self.i;
                continue;
            }
            self.i += 1;
        }
        Err(self.error(MalformedKind::InvalidLiteral, "unterminated string in the call list"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_and_literals() {
        let cs = calls(
            "[get_weather(city='SF', metric=\"c\"), get_time(), f(a=[1, 2.5, None], b={'k': True}, c=(1,), d=-3)]",
        )
        .unwrap();
        assert_eq!(cs.len(), 3);
        assert_eq!(cs[0].arguments["city"], "SF");
        assert!(cs[1].arguments.is_empty());
        assert_eq!(
            Value::Object(cs[2].arguments.clone()),
            json!({"a": [1, 2.5, null], "b": {"k": true}, "c": [1], "d": -3})
        );
    }

    #[test]
    fn escapes_and_errors() {
        assert_eq!(calls(r"[f(s='a\'b\n')]").unwrap()[0].arguments["s"], "a'b\n");
        let positional = calls("[f(1)]").unwrap_err();
        assert!(positional.message.contains("keyword") && positional.kind == MalformedKind::InvalidLiteral);
        let name = calls("[f(a=x)]").unwrap_err();
        assert_eq!((name.kind, name.offset), (MalformedKind::InvalidLiteral, 5));
        assert!(calls("[f(a=1)").is_err());
        assert!(calls("[f(a=1)] tail").is_err());
    }
}
