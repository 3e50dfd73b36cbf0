//! Python call syntax (`[get(city='SF'), put(k=1)]`, or one call per line)
//! read while its bytes are accepted, for streaming output: each call's name
//! once its `(` is read, then each keyword argument as the JSON it converts
//! to once the comma or parenthesis after it is read. Elements are split
//! exactly as the parser splits them (`pythonic::split`), so item `i` here is
//! item `i` of the block; each argument is read by the parser's own code.

use super::pythonic::{head_name, keyword_argument};
use serde_json::Value;

/// What the reader found, for item (call) `item` of the block.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PythonFound {
    Name { item: u32, name: String },
    Arguments { item: u32, fragment: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the call's `(`.
    Head,
    /// Between its parentheses; the argument being read starts at `from`.
    Arguments { from: usize, first: bool },
    /// Its `)` was read, or it is not a call the reader can follow: nothing
    /// more goes out for it before the commit.
    Done,
}

/// Reads one block's calls.
#[derive(Debug)]
pub(crate) struct PythonCalls {
    text: Vec<u8>,
    /// `None` until the first byte that is no blank says whether the calls are a list.
    list: Option<bool>,
    depth: usize,
    quote: u8,
    escaped: bool,
    /// The list's `]` was read: nothing after it is a call.
    ended: bool,
    /// The current element: where it starts, whether it holds more than blanks, its index.
    start: usize,
    blank: bool,
    item: u32,
    phase: Phase,
}

impl PythonCalls {
    pub(crate) fn new() -> Self {
        Self {
            text: Vec::new(),
            list: None,
            depth: 0,
            quote: 0,
            escaped: false,
            ended: false,
            start: 0,
            blank: true,
            item: 0,
            phase: Phase::Head,
        }
    }

    /// Reads accepted body bytes; what they settle goes to `out`.
    pub(crate) fn feed(&mut self, bytes: &[u8], out: &mut Vec<PythonFound>) {
        for &b in bytes {
            if self.ended {
                return;
            }
            let i = self.text.len();
            self.text.push(b);
            self.step(b, i, out);
        }
    }

    fn step(&mut self, b: u8, i: usize, out: &mut Vec<PythonFound>) {
        if self.quote != 0 {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == self.quote {
                self.quote = 0;
            }
            return;
        }
        let Some(list) = self.list else {
            if !b.is_ascii_whitespace() {
                self.list = Some(b == b'[');
                if b == b'[' {
                    self.start = i + 1;
                    return;
                }
                return self.step(b, i, out); // the first byte of the first call
            }
            return;
        };
        // Separators end the element (the split's order: a closing bracket inside
        // one, then the list's `]`, then commas and newlines at the top level).
        if self.depth == 0 {
            match b {
                b']' if list => {
                    self.next_element(i);
                    self.ended = true;
                    return;
                }
                b',' => return self.next_element(i),
                b'\n' if !list => return self.next_element(i),
                _ => {}
            }
        }
        if !b.is_ascii_whitespace() {
            self.blank = false;
        }
        match b {
            b'\'' | b'"' => self.quote = b,
            b'(' | b'[' | b'{' => {
                if self.depth == 0 && b == b'(' && self.phase == Phase::Head {
                    self.head(i, out);
                }
                self.depth += 1;
            }
            b')' | b']' | b'}' if self.depth > 0 => {
                self.depth -= 1;
                if self.depth == 0 && b == b')' {
                    self.argument(i, true, out);
                    self.phase = Phase::Done;
                }
            }
            b',' if self.depth == 1 => self.argument(i, false, out),
            _ => {}
        }
    }

    /// The element's `(`: its head names the call.
    fn head(&mut self, at: usize, out: &mut Vec<PythonFound>) {
        let name = std::str::from_utf8(&self.text[self.start..at]).ok().and_then(head_name);
        self.phase = match name {
            Some(name) => {
                out.push(PythonFound::Name { item: self.item, name: name.to_owned() });
                Phase::Arguments { from: at + 1, first: true }
            }
            None => Phase::Done,
        };
    }

    /// The argument that ends at `end` (a comma, or the call's `)` when `last`).
    fn argument(&mut self, end: usize, last: bool, out: &mut Vec<PythonFound>) {
        let Phase::Arguments { from, first } = self.phase else { return };
        let Ok(text) = std::str::from_utf8(&self.text[from..end]) else {
            self.phase = Phase::Done;
            return;
        };
        if last && text.trim().is_empty() {
            return; // `f()` or a trailing comma: no argument
        }
        let Some((key, value)) = keyword_argument(text) else {
            self.phase = Phase::Done; // malformed: the commit says so
            return;
        };
        let mut fragment = String::from(if first { "{" } else { "," });
        fragment.push_str(&Value::String(key).to_string());
        fragment.push(':');
        fragment.push_str(&value.to_string());
        out.push(PythonFound::Arguments { item: self.item, fragment });
        self.phase = Phase::Arguments { from: end + 1, first: false };
    }

    /// A top-level separator at `at` ends the element; a blank one is no item.
    fn next_element(&mut self, at: usize) {
        if !self.blank {
            self.item += 1;
        }
        self.start = at + 1;
        self.blank = true;
        self.phase = Phase::Head;
    }
}

#[cfg(test)]
mod tests {
    use super::super::pythonic::calls;
    use super::*;

    /// The names and joined arguments the reader sends, fed byte by byte.
    fn read(text: &str) -> Vec<(u32, String, String)> {
        let mut r = PythonCalls::new();
        let mut out = Vec::new();
        for b in text.bytes() {
            r.feed(&[b], &mut out);
        }
        let mut got: Vec<(u32, String, String)> = Vec::new();
        for f in out {
            match f {
                PythonFound::Name { item, name } => got.push((item, name, String::new())),
                PythonFound::Arguments { item, fragment } => {
                    let last = got.last_mut().unwrap();
                    assert_eq!(last.0, item);
                    last.2.push_str(&fragment);
                }
            }
        }
        got
    }

    #[test]
    fn names_and_arguments_as_the_parser_reads_them() {
        for text in [
            "[get_weather(city='SF', metric=\"c\"), get_time(), f(a=[1, 2.5, None], b={'k': True}, c=(1,), d=-3)]",
            "get_weather(city='S,F)')\nregister(name='x', ok=true, role=null)",
            "[a(x=1), , b(y='(]'), ]",
        ] {
            let parsed: Vec<_> = calls(text, false).into_iter().map(Result::unwrap).collect();
            let got = read(text);
            assert_eq!(got.len(), parsed.len(), "{text}");
            for ((item, name, args), (i, call)) in got.iter().zip(parsed.iter().enumerate()) {
                assert_eq!((*item as usize, name), (i, &call.name), "{text}");
                let whole = Value::Object(call.arguments.clone()).to_string();
                assert_eq!(format!("{args}}}"), if call.arguments.is_empty() { "}".to_owned() } else { whole });
            }
        }
    }

    #[test]
    fn a_bad_argument_stops_its_call_only() {
        let got = read("[f(a=1, b=x), g(c=2)]");
        assert_eq!(got, [(0, "f".into(), "{\"a\":1".into()), (1, "g".into(), "{\"c\":2".into())]);
    }
}
