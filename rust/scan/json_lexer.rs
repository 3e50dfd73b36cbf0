//! Just enough JSON lexing to know whether a byte sits inside a string, so a
//! delimiter spelled inside an argument value is never taken for a real one.

/// String and escape state of a JSON text, one byte at a time. Nesting is
/// not tracked: `serde_json` judges structure once the block closes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JsonLexer {
    in_string: bool,
    escaped: bool,
}

impl JsonLexer {
    /// Consumes one byte; returns whether it lay outside every string (a
    /// quote that opens or closes a string belongs to the string).
    #[inline]
    pub fn step(&mut self, byte: u8) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
            }
            false
        } else if byte == b'"' {
            self.in_string = true;
            false
        } else {
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outside(text: &str) -> String {
        let mut l = JsonLexer::default();
        text.bytes().map(|b| if l.step(b) { b as char } else { '_' }).collect()
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(outside(r#"{"a": 1}"#), "{___: 1}");
        assert_eq!(outside(r#"{"a\"b": x}"#), "{______: x}");
        assert_eq!(outside(r#"["\\", y]"#), "[____, y]");
    }
}
