//! The arguments of a raw-text XML call (Qwen3-Coder, GLM, MiniMax M2,
//! DeepSeek V3.2) rendered as JSON text while its bytes are accepted, for
//! streaming output. Only what is certain goes out: a value's text up to a tag
//! that may end it, and a value's end once what follows shows it is the end.
//!
//! Why that is certain: the parser (`values.rs`) ends a value at its earliest
//! candidate end from which the rest of the call parses. When a candidate end
//! is followed by an opener that opens a parameter there, the rest parses
//! whenever the call parses at all (the next value may run to the call's last
//! closer, as any later choice would), so the value ends there; a call that
//! still turns out malformed is marked by the streamer. A candidate end that
//! junk follows is text whatever comes later. Values that are their text go
//! out as JSON string fragments as they are read; values the schema types
//! (numbers, objects, nullable strings) go out whole when they end. Anything
//! the reader cannot settle stops it: the rest goes out when the call commits.

use super::schema::Schemas;
use super::values::{line_start, opens, Layout, Opener};
use super::xml::Flavor;
use serde_json::Value;
use std::collections::HashSet;

/// How far past a `<` the reader looks to tell what it is: openers, closers and
/// the blanks between are shorter. Longer ones stop the reader (the rest goes
/// out at commit), which bounds the work per byte.
const MAX_PENDING: usize = 256;

#[derive(Debug)]
enum State {
    /// Between parameters.
    Top,
    /// In the value of `key`, whose raw text starts at `start`. Text values
    /// went out up to `sent`.
    Value { key: String, attrs: String, start: usize, text: bool, sent: usize },
    /// Nothing more goes out before the call commits.
    Stopped,
}

/// What a `<` in a value turned out to be.
enum Tag {
    /// Text of the value.
    Text,
    /// Undecided until more bytes come.
    Wait,
    /// The value's end; the next parameter's opener is at `next`.
    Ends { next: usize },
    /// Possibly the call's end, or more than the reader waits for: only the commit can tell.
    Stop,
}

/// Reads one call's parameters after its head.
#[derive(Debug)]
pub(crate) struct XmlArguments {
    flavor: Flavor,
    name: String,
    /// The call's bytes after its head, as accepted so far.
    text: Vec<u8>,
    /// Bytes before `pos` are read.
    pos: usize,
    state: State,
    /// Keys of the parameters opened so far.
    given: HashSet<String>,
}

/// The valid UTF-8 start of `bytes`, and whether bytes that are no UTF-8 follow
/// it (a character cut at the end is not that: its bytes are still coming).
fn utf8(bytes: &[u8]) -> (&str, bool) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s, false),
        Err(e) => (std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(), e.error_len().is_some()),
    }
}

/// `s` as the inside of a JSON string, escaped exactly as `serde_json` does.
fn push_escaped(out: &mut String, s: &str) {
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(s); // nothing to escape: most text
        return;
    }
    let quoted = Value::String(s.to_owned()).to_string();
    out.push_str(&quoted[1..quoted.len() - 1]);
}

impl XmlArguments {
    pub(crate) fn new(flavor: Flavor, name: String) -> Self {
        Self { flavor, name, text: Vec::new(), pos: 0, state: State::Top, given: HashSet::new() }
    }

    fn layout(&self) -> &'static Layout {
        self.flavor.layout
    }

    /// Reads accepted bytes of the call and appends the JSON text they settle to `out`.
    pub(crate) fn feed(&mut self, bytes: &[u8], schemas: &Schemas, out: &mut String) {
        if matches!(self.state, State::Stopped) {
            return;
        }
        self.text.extend_from_slice(bytes);
        while match self.state {
            State::Top => self.top(schemas, out),
            State::Value { .. } => self.value(schemas, out),
            State::Stopped => false,
        } {}
        self.send_text(out);
    }

    /// The text at `at`, at most `MAX_PENDING` bytes of it, and whether bytes
    /// that are no UTF-8 end it.
    fn window(&self, at: usize) -> (&str, bool) {
        utf8(&self.text[at..self.text.len().min(at + MAX_PENDING)])
    }

    /// Whether more bytes could still make `rest` an opener or the end tag: it
    /// is a part of one, or an opener whose end has not come yet.
    fn may_open_or_end(&self, rest: &str) -> bool {
        let layout = self.layout();
        let opener = layout.open.starts_with(rest)
            || rest.strip_prefix(layout.open).is_some_and(|r| !r.contains(layout.opener_end));
        opener || layout.end.is_some_and(|end| end.starts_with(rest))
    }

    /// Waiting on what is undecided at `at`: more bytes will tell, unless the
    /// window is full or bytes that are no UTF-8 came.
    fn wait(&self, at: usize, bad: bool) -> Tag {
        if bad || self.text.len() - at >= MAX_PENDING {
            Tag::Stop
        } else {
            Tag::Wait
        }
    }

    /// Whether the opener of `key` at `at` opens a parameter (`implicit`: it
    /// would end a value whose closer is missing): `Some(true)` surely,
    /// `Some(false)` only if its value ends at its first closer and the rest
    /// parses (a key the schema lacks, see `values::opens`), which only the
    /// commit can tell.
    fn opens(&self, key: &str, at: usize, implicit: bool, schemas: &Schemas) -> Option<bool> {
        let text = || line_start(&self.text, at);
        let first = self.given.is_empty();
        let given = |k: &str| self.given.contains(k);
        opens(schemas.tool(&self.name), key, first, |_| self.given.contains(key), given, text, implicit)
            .map(|k| !k.strict)
    }

    /// Between parameters: blanks, then an opener, or the end.
    fn top(&mut self, schemas: &Schemas, out: &mut String) -> bool {
        let (rest, _) = self.window(self.pos);
        let blanks = rest.len() - rest.trim_start().len();
        self.pos += blanks;
        let (next, bad) = self.window(self.pos);
        if next.is_empty() && !bad {
            return blanks > 0; // blanks that filled the window: look again past them
        }
        if let Some(op) = (self.layout().opener)(next) {
            if self.opens(op.key, self.pos, false, schemas) == Some(true) {
                let op = Owned::of(&op);
                self.open(&op, schemas, out);
                return true;
            }
        } else if self.may_open_or_end(next) && matches!(self.wait(self.pos, bad), Tag::Wait) {
            return false;
        }
        // The end of the call (or junk the commit will call malformed).
        self.state = State::Stopped;
        false
    }

    /// Opens the parameter whose opener is at `pos`.
    fn open(&mut self, op: &Owned, schemas: &Schemas, out: &mut String) {
        out.push(if self.given.is_empty() { '{' } else { ',' });
        push_escaped_quoted(out, &op.key);
        out.push(':');
        let text = self.flavor.always_text(schemas, &self.name, &op.key, &op.attrs);
        if text {
            out.push('"');
        }
        self.given.insert(op.key.clone());
        let start = self.pos + op.len;
        self.pos = start;
        self.state = State::Value { key: op.key.clone(), attrs: op.attrs.clone(), start, text, sent: start };
    }

    /// In a value: text up to the next `<`, then what that tag is.
    fn value(&mut self, schemas: &Schemas, out: &mut String) -> bool {
        loop {
            let Some(i) = self.text[self.pos..].iter().position(|&b| b == b'<') else {
                self.pos = self.text.len();
                return false;
            };
            let at = self.pos + i;
            self.pos = at;
            match self.tag(at, schemas) {
                Tag::Text => self.pos = at + 1,
                Tag::Wait => return false,
                Tag::Stop => {
                    self.send_text(out);
                    self.state = State::Stopped;
                    return false;
                }
                Tag::Ends { next } => {
                    self.close(at, schemas, out);
                    self.pos = next;
                    return matches!(self.state, State::Top);
                }
            }
        }
    }

    /// What the `<` at `at` in a value is.
    fn tag(&self, at: usize, schemas: &Schemas) -> Tag {
        let layout = self.layout();
        let (rest, bad) = self.window(at);
        if let Some(after) = rest.strip_prefix(layout.close) {
            // A closer counts when an opener that opens a parameter follows it.
            let next = after.trim_start();
            let p = at + (rest.len() - next.len());
            if let Some(op) = (layout.opener)(next) {
                return match self.opens(op.key, p, false, schemas) {
                    Some(true) => Tag::Ends { next: p },
                    Some(false) => Tag::Stop,
                    None => Tag::Text,
                };
            }
            if layout.end.is_some_and(|end| next.starts_with(end)) {
                return Tag::Stop;
            }
            return if next.is_empty() || self.may_open_or_end(next) { self.wait(at, bad) } else { Tag::Text };
        }
        if layout.end.is_some_and(|end| rest.starts_with(end)) {
            return Tag::Stop;
        }
        if let Some(op) = (layout.opener)(rest) {
            return if self.opens(op.key, at, true, schemas) == Some(true) {
                Tag::Ends { next: at }
            } else {
                Tag::Text
            };
        }
        if layout.close.starts_with(rest) || self.may_open_or_end(rest) {
            self.wait(at, bad)
        } else {
            Tag::Text
        }
    }

    /// Ends the open value at `end`: the rest of a text value and its closing
    /// quote, or a typed value whole.
    fn close(&mut self, end: usize, schemas: &Schemas, out: &mut String) {
        let State::Value { start, .. } = self.state else { return };
        let (raw, bad) = utf8(&self.text[start..end]);
        if bad || raw.len() != end - start {
            // Bytes that are no UTF-8: what comes before them goes out as it does
            // when they arrive one at a time, then nothing more (the call is malformed).
            self.pos = end;
            self.send_text(out);
            self.state = State::Stopped;
            return;
        }
        let State::Value { key, attrs, text, sent, .. } = std::mem::replace(&mut self.state, State::Top) else {
            return;
        };
        if text {
            let value = self.flavor.text(raw);
            let value_at = start + usize::from(self.flavor.strip && raw.starts_with('\n'));
            push_escaped(out, &value[sent.saturating_sub(value_at).min(value.len())..]);
            out.push('"');
            return;
        }
        match self.flavor.value(schemas, &self.name, &key, &attrs, raw) {
            Ok(v) => out.push_str(&v.to_string()),
            Err(_) => self.state = State::Stopped, // the call is malformed: the commit says so
        }
    }

    /// Sends the read part of an open text value: never its last newline while
    /// it may be the layout's, never half a character.
    fn send_text(&mut self, out: &mut String) {
        let State::Value { text: true, start, sent, .. } = &mut self.state else {
            return;
        };
        let mut from = *sent;
        if from == *start && self.flavor.strip && self.pos > *start && self.text[*start] == b'\n' {
            from += 1; // the layout's newline after the opener
        }
        let mut to = self.pos;
        if self.flavor.strip && to > from && self.text[to - 1] == b'\n' {
            to -= 1;
        }
        if to <= from {
            return;
        }
        let (s, bad) = utf8(&self.text[from..to]);
        push_escaped(out, s);
        *sent = from + s.len();
        if bad {
            self.state = State::Stopped;
        }
    }
}

/// An opener's parts, owned (the opener borrows the text the reader grows).
struct Owned {
    key: String,
    attrs: String,
    len: usize,
}

impl Owned {
    fn of(op: &Opener<'_>) -> Self {
        Self { key: op.key.to_owned(), attrs: op.attrs.to_owned(), len: op.len }
    }
}

/// `s` as a JSON string, quotes included.
fn push_escaped_quoted(out: &mut String, s: &str) {
    out.push('"');
    push_escaped(out, s);
    out.push('"');
}
