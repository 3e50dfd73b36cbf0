//! Readers of call bodies as they are accepted, one per layout family: JSON
//! call objects (`Tracker`), a head that names the call before its arguments
//! (`Headed`), and Python call syntax (`PythonCalls`, in `scan`). They see
//! only accepted body bytes, in order.

use super::unescape::Unescape;
use crate::scan::{head_call, Body, Flavor, InString, JsonStrings, PythonCalls, Schemas, XmlArguments};

/// How many bytes at the end of `bytes` begin a UTF-8 character they do not finish.
pub(super) fn cut_char(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 != 0x80 {
            let need = match b {
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF4 => 4,
                _ => return 0,
            };
            return if need > back { back } else { 0 };
        }
    }
    0
}

/// What a tracker found: a call's name (and the model's id for it), or argument text.
#[derive(Debug)]
pub(super) enum Found {
    Name(String, Option<String>),
    Arguments(String),
}

/// How a layout's calls are read as they are accepted.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// Python call syntax (`PythonCalls`).
    Python,
    /// JSON call objects: names and argument text as accepted (`Tracker`).
    Objects,
    /// A head naming the call, then its arguments (`Headed`).
    Headed(Head),
}

/// Where a call's head ends, and what completes it into a body the parser reads.
#[derive(Debug, Clone, Copy)]
pub(super) struct Head {
    /// The arguments are one JSON object after the head, streamed as accepted;
    /// otherwise (XML) the head ends at `at` and the parameters after it are
    /// rendered as JSON as they are read (`XmlArguments`).
    json: bool,
    at: u8,
    /// Whether the byte `at` belongs to the head.
    inclusive: bool,
    /// Appended to the head (and `{}`) to make a whole body.
    suffix: &'static str,
}

impl Kind {
    pub(super) fn of(body: &Body) -> Self {
        let json = |suffix| Self::Headed(Head { json: true, at: b'{', inclusive: false, suffix });
        let xml = |at, inclusive, suffix| Self::Headed(Head { json: false, at, inclusive, suffix });
        match body {
            Body::JsonObject | Body::JsonObjects => Self::Objects,
            Body::NameSepJson { .. } | Body::IdSepJson { .. } | Body::Harmony | Body::Mistral => json(""),
            Body::DeepSeekV3 => json("\n```"),
            Body::QwenXml => xml(b'>', true, "\n</function>"),
            Body::GlmXml => xml(b'<', false, ""),
            Body::MinimaxXml | Body::DsmlXml => xml(b'>', true, ""),
            Body::Pythonic => Self::Python,
        }
    }
}

#[derive(Debug)]
pub(super) enum Track {
    Objects(Tracker),
    Headed(Headed),
    /// Python call syntax, of the block whose body starts at `block_at`.
    Python {
        block_at: usize,
        calls: PythonCalls,
    },
}

impl Track {
    /// Where the body of the block it reads starts.
    pub(super) fn block_at(&self) -> usize {
        match self {
            Self::Objects(t) => t.block_at,
            Self::Headed(h) => h.block_at,
            Self::Python { block_at, .. } => *block_at,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Head,
    /// A JSON argument object.
    Arguments,
    /// XML parameters.
    Parameters,
    Done,
}

/// Reads a block whose call is named by a head (`NAME<sep>{…}`, Kimi's id,
/// Harmony's recipient, the XML layouts' `<function=NAME>`): the name goes out
/// as soon as the head parses, by the block's own parser; a JSON argument
/// object then streams as accepted, XML parameters as JSON they render to.
#[derive(Debug)]
pub(super) struct Headed {
    pub(super) block_at: usize,
    how: Head,
    pub(super) phase: Phase,
    pub(super) head: Vec<u8>,
    depth: u32,
    strings: JsonStrings,
    fragment: Vec<u8>,
    parameters: Option<XmlArguments>,
}

/// A head longer than this names no call the streamer waits for (sent at commit).
const MAX_HEAD: usize = 512;

impl Headed {
    pub(super) fn new(block_at: usize, how: Head) -> Self {
        Self {
            block_at,
            how,
            phase: Phase::Head,
            head: Vec::new(),
            depth: 0,
            strings: JsonStrings::default(),
            fragment: Vec::new(),
            parameters: None,
        }
    }

    /// Whether the byte that ends the head is the first of the arguments (GLM's `<arg_key>`).
    pub(super) fn head_end_is_argument(&self) -> bool {
        !self.how.inclusive
    }

    /// Reads accepted bytes of the XML parameters; the JSON text they settle.
    pub(super) fn parameters(&mut self, bytes: &[u8], schemas: &Schemas) -> Option<Found> {
        let mut out = String::new();
        self.parameters.as_mut()?.feed(bytes, schemas, &mut out);
        (!out.is_empty()).then_some(Found::Arguments(out))
    }

    /// The call the head names, if the block's parser reads it so.
    fn name(&self, body: &Body, name_chars: &str) -> Option<(String, Option<String>)> {
        let head = std::str::from_utf8(&self.head).ok()?;
        let args = if self.how.json { "{}" } else { "" };
        head_call(body, &format!("{head}{args}{}", self.how.suffix), name_chars)
    }

    pub(super) fn step(&mut self, b: u8, body: &Body, name_chars: &str) -> Option<Found> {
        match self.phase {
            Phase::Done | Phase::Parameters => None,
            Phase::Head => {
                if b != self.how.at || self.how.inclusive {
                    self.head.push(b);
                }
                if b != self.how.at {
                    if self.head.len() > MAX_HEAD {
                        self.phase = Phase::Done;
                    }
                    return None;
                }
                let found = self.name(body, name_chars);
                if found.is_none() && !self.how.inclusive {
                    self.head.push(b);
                }
                let (name, id) = found?;
                if self.how.json {
                    self.phase = Phase::Arguments;
                    self.depth = 1;
                    self.fragment.push(b);
                } else if let Some(flavor) = Flavor::of(body) {
                    self.phase = Phase::Parameters;
                    self.parameters = Some(XmlArguments::new(flavor, name.clone()));
                } else {
                    self.phase = Phase::Done;
                }
                Some(Found::Name(name, id))
            }
            Phase::Arguments => {
                self.fragment.push(b);
                if self.strings.step(b) != InString::Outside {
                    return None;
                }
                match b {
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        if self.depth == 0 {
                            self.phase = Phase::Done;
                            return self.flush();
                        }
                    }
                    _ => {}
                }
                None
            }
        }
    }

    /// Hands out the argument bytes read since the last hand-out, whole characters only.
    pub(super) fn flush(&mut self) -> Option<Found> {
        let whole = self.fragment.len() - cut_char(&self.fragment);
        if whole == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&self.fragment[..whole]).into_owned();
        self.fragment.drain(..whole);
        Some(Found::Arguments(text))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect {
    /// A key of the call object (after `{` or `,`).
    Key,
    /// The `:` after a key.
    Colon,
    /// The value of the key just read.
    Value,
    /// A `,` or the object's `}`.
    Next,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Name,
    Arguments,
    Other,
}

/// Reads the JSON call objects of one block body, byte by byte, as they are
/// accepted: `{"name": …, "arguments"|"parameters": {…}}`, alone, in an array
/// or one after another. It finds each call's name, and the text of its
/// argument object as it comes (held until the name is known); arguments
/// written as a string that holds the object stream as the text it holds.
#[derive(Debug)]
#[allow(clippy::struct_excessive_bools)] // a byte-at-a-time lexer's flags: independent, read clearest as flags
pub(super) struct Tracker {
    pub(super) block_at: usize,
    /// The position of the current call object among the block's.
    pub(super) object: u32,
    /// Where in the body the current call object starts, and the next byte.
    pub(super) object_at: usize,
    pos: usize,
    depth: u32,
    strings: JsonStrings,
    /// Depth inside the current call object (0: not in one).
    call_depth: u32,
    in_call: bool,
    seen_call: bool,
    expect: Expect,
    field: Field,
    /// The key or name string being read (raw JSON, quotes included).
    token: Vec<u8>,
    reading_token: bool,
    /// The argument object being streamed: started, and its bytes not yet handed out.
    streaming: bool,
    /// Arguments written as a JSON string, decoded as they come.
    string_arguments: Option<Unescape>,
    args_seen: bool,
    fragment: Vec<u8>,
    /// All of the argument text read so far (handed out when the name comes later).
    arguments: Vec<u8>,
    named: bool,
}

impl Tracker {
    /// A tracker of the body at `block_at`, from its byte `pos` on.
    pub(super) fn new(block_at: usize, pos: usize) -> Self {
        Self {
            block_at,
            object: 0,
            object_at: pos,
            pos,
            depth: 0,
            strings: JsonStrings::default(),
            call_depth: 0,
            in_call: false,
            seen_call: false,
            expect: Expect::Key,
            field: Field::Other,
            token: Vec::new(),
            reading_token: false,
            streaming: false,
            string_arguments: None,
            args_seen: false,
            fragment: Vec::new(),
            arguments: Vec::new(),
            named: false,
        }
    }

    /// The argument text read before the name was known.
    pub(super) fn pending_arguments(&self) -> String {
        String::from_utf8_lossy(&self.arguments).into_owned()
    }

    /// Hands out the argument bytes read since the last hand-out, whole characters only.
    pub(super) fn flush(&mut self) -> Option<Found> {
        if self.fragment.is_empty() || !self.named {
            return None;
        }
        let keep = cut_char(&self.fragment);
        let whole = self.fragment.len() - keep;
        if whole == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&self.fragment[..whole]).into_owned();
        self.fragment.drain(..whole);
        Some(Found::Arguments(text))
    }

    fn start_call(&mut self, at: usize) {
        if self.seen_call {
            self.object += 1;
        }
        self.object_at = at;
        self.seen_call = true;
        self.in_call = true;
        self.call_depth = self.depth;
        self.expect = Expect::Key;
        self.streaming = false;
        self.string_arguments = None;
        self.args_seen = false;
        self.fragment.clear();
        self.arguments.clear();
        self.named = false;
    }

    /// One body byte.
    pub(super) fn step(&mut self, b: u8) -> Option<Found> {
        let at = self.pos;
        self.pos += 1;
        if self.streaming {
            self.arguments.push(b);
            if self.named {
                self.fragment.push(b);
            }
        }
        let mut found = None;
        match self.strings.step(b) {
            InString::Outside => {}
            InString::Opens => {
                if self.in_call && self.depth == self.call_depth && matches!(self.expect, Expect::Key | Expect::Value) {
                    self.reading_token = true;
                    self.token.clear();
                    self.token.push(b);
                    if self.expect == Expect::Value && self.field == Field::Arguments && !self.args_seen {
                        self.args_seen = true;
                        self.string_arguments = Some(Unescape::new());
                    }
                }
                return None;
            }
            InString::Inside => {
                if self.reading_token {
                    self.token.push(b);
                }
                if let Some(u) = &mut self.string_arguments {
                    let from = self.arguments.len();
                    u.step(b, &mut self.arguments);
                    if self.named {
                        self.fragment.extend_from_slice(&self.arguments[from..]);
                    }
                }
                return None;
            }
            InString::Closes => {
                if self.string_arguments.take().is_some() {
                    found = self.flush(); // the held blanks were the end: dropped
                }
                if self.reading_token {
                    self.token.push(b);
                    self.reading_token = false;
                    return self.token_done().or(found);
                }
                return found;
            }
        }
        match b {
            b'{' | b'[' => {
                if !self.in_call && b == b'{' {
                    self.depth += 1;
                    self.start_call(at);
                    return None;
                }
                if self.in_call && self.depth == self.call_depth && self.expect == Expect::Value {
                    if b == b'{' && self.field == Field::Arguments && !self.args_seen {
                        self.args_seen = true;
                        self.streaming = true;
                        self.arguments.push(b);
                        if self.named {
                            self.fragment.push(b);
                        }
                    }
                    self.expect = Expect::Next;
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.in_call && self.depth == self.call_depth && self.streaming {
                    self.streaming = false;
                    found = self.flush(); // the object's text goes out whole before the next call starts
                }
                if self.in_call && self.depth + 1 == self.call_depth {
                    self.in_call = false;
                }
            }
            b':' if self.in_call && self.depth == self.call_depth && self.expect == Expect::Colon => {
                self.expect = Expect::Value;
            }
            b',' if self.in_call && self.depth == self.call_depth => {
                self.expect = Expect::Key;
                self.field = Field::Other;
            }
            b if b.is_ascii_whitespace() => {}
            _ => {
                if self.in_call && self.depth == self.call_depth && self.expect == Expect::Value {
                    self.expect = Expect::Next; // a bare value (number, literal): skipped
                }
            }
        }
        found
    }

    /// A key or a string value at the call object's level ended.
    fn token_done(&mut self) -> Option<Found> {
        let text: Option<String> = serde_json::from_slice(&self.token).ok();
        match self.expect {
            Expect::Key => {
                self.field = match text.as_deref() {
                    Some("name") => Field::Name,
                    Some("arguments" | "parameters") => Field::Arguments,
                    _ => Field::Other,
                };
                self.expect = Expect::Colon;
                None
            }
            Expect::Value => {
                self.expect = Expect::Next;
                if self.field == Field::Arguments {
                    self.args_seen = true;
                }
                if self.field != Field::Name || self.named {
                    return None;
                }
                self.named = true;
                text.map(|name| Found::Name(name, None))
            }
            Expect::Colon | Expect::Next => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_characters_wait() {
        assert_eq!(cut_char("é".as_bytes()), 0);
        assert_eq!(cut_char(&"é".as_bytes()[..1]), 1);
        assert_eq!(cut_char(&"𝄞".as_bytes()[..3]), 3);
        assert_eq!(cut_char(b"ab\xff"), 0);
    }

    fn track(body: &str) -> (Vec<String>, Vec<(u32, String)>) {
        let mut t = Tracker::new(0, 0);
        let (mut names, mut args) = (Vec::new(), Vec::new());
        for b in body.bytes() {
            match t.step(b) {
                Some(Found::Name(n, _)) => {
                    names.push(n);
                    args.push((t.object, t.pending_arguments()));
                    t.fragment.clear();
                }
                Some(Found::Arguments(a)) => args.push((t.object, a)),
                None => {}
            }
            if let Some(Found::Arguments(a)) = t.flush() {
                args.push((t.object, a));
            }
        }
        (names, args)
    }

    fn joined(args: &[(u32, String)], object: u32) -> String {
        args.iter().filter(|(o, _)| *o == object).map(|(_, a)| a.as_str()).collect()
    }

    #[test]
    fn names_and_argument_text_of_call_objects() {
        let (names, args) = track(r#"{"name": "f", "arguments": {"a": "}{\"", "b": [1, {"c": 2}]}}"#);
        assert_eq!(names, ["f"]);
        assert_eq!(joined(&args, 0), r#"{"a": "}{\"", "b": [1, {"c": 2}]}"#);
        let (names, args) = track(r#"{"arguments": {"x": 1}, "name": "g"}"#);
        assert_eq!(names, ["g"]);
        assert_eq!(joined(&args, 0), r#"{"x": 1}"#);
        let (names, args) = track(r#"[{"name": "a", "arguments": {}}, {"name": "b", "parameters": {"y": "é"}}]"#);
        assert_eq!(names, ["a", "b"]);
        assert_eq!((joined(&args, 0).as_str(), joined(&args, 1).as_str()), ("{}", r#"{"y": "é"}"#));
        let (names, args) = track(r#"{"name": "s", "arguments": "{\"a\": 1}"}"#);
        assert_eq!(names, ["s"]);
        assert_eq!(joined(&args, 0), r#"{"a": 1}"#, "string-encoded arguments go out as the text they hold");
    }
}
