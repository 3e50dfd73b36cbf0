//! Streaming output: the text a client may be shown, released from accepted
//! tokens only, so nothing shown is ever retracted.
//!
//! The scanner reports where the text changes class (`TextClass`: content,
//! reasoning, hidden delimiters, block bodies); the window keeps those shifts
//! per token and drops them with rejected tokens. After each verify the
//! streamer walks the accepted text from where it stopped to the *safe* end:
//! the accepted end less what may still change class (a partial delimiter, the
//! blanks an anchored call may still claim). Content and reasoning bytes go out
//! as text (never half a UTF-8 character); body bytes of JSON call objects feed
//! a tracker that streams each call's name and argument text as it is accepted.
//! Other layouts send a call whole when it commits. Cost: the bytes released.

use super::outcome::Outcome;
use super::window::Shift;
use crate::scan::{check_name, head_call, Body, TextClass};
use serde_json::Value;
use std::collections::HashSet;

/// One OpenAI-style tool-call delta.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCallDelta {
    /// A call's first delta: its index among the message's calls, id and name.
    Start { index: u32, id: String, name: String },
    /// The next fragment of a call's argument JSON.
    Arguments { index: u32, fragment: String },
    /// The call's block turned out malformed after deltas went out (`kind` says how).
    Malformed { index: u32, kind: &'static str },
}

/// What steps released since the caller last took it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Released {
    pub content: String,
    pub reasoning: String,
    pub deltas: Vec<ToolCallDelta>,
}

impl Released {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.content.is_empty() && self.reasoning.is_empty() && self.deltas.is_empty()
    }
}

/// A call whose deltas are going out.
#[derive(Debug)]
struct StreamCall {
    /// Its block's body offset and its position among the block's items.
    block_at: usize,
    item: u32,
    index: u32,
    name: String,
    /// The argument text sent so far.
    sent: String,
    settled: bool,
}

/// The streaming state of one turn. Moves only forward: it reads accepted text.
#[derive(Debug)]
pub(super) struct Streamer {
    /// Accepted bytes released so far, and the class of the text from there.
    released: usize,
    class: TextClass,
    /// The first shift not applied yet.
    next_shift: usize,
    /// Bytes of a UTF-8 character cut at the end of the last release.
    content_tail: Vec<u8>,
    reasoning_tail: Vec<u8>,
    /// What reads the open body's calls as they are accepted (by layout).
    tracker: Option<Track>,
    kind: Kind,
    body: Body,
    name_chars: String,
    calls: Vec<StreamCall>,
    /// Every id given out in the turn, and how many calls have one.
    ids: HashSet<String>,
    count: u32,
    id_prefix: String,
    out: Released,
}

impl Streamer {
    pub(super) fn new(body: &Body, name_chars: &str, turn_key: &str, class: TextClass) -> Self {
        let key = super::keys::CommitHasher::new(turn_key).key(u32::MAX).to_string();
        let digest: String = key.chars().rev().take(16).collect();
        Self {
            released: 0,
            class,
            next_shift: 0,
            content_tail: Vec::new(),
            reasoning_tail: Vec::new(),
            tracker: None,
            kind: Kind::of(body),
            body: body.clone(),
            name_chars: name_chars.to_owned(),
            calls: Vec::new(),
            ids: HashSet::new(),
            count: 0,
            id_prefix: format!("call_{digest}_"),
            out: Released::default(),
        }
    }

    pub(super) fn take(&mut self) -> Released {
        std::mem::take(&mut self.out)
    }

    pub(super) fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    /// Releases the accepted `text` up to `safe` (every live token is accepted),
    /// then the deltas of this step's committed and malformed blocks. At the end
    /// of the turn (`last`), cut characters go out too.
    pub(super) fn release(&mut self, text: &[u8], shifts: &[Shift], safe: usize, outcomes: &[Outcome], last: bool) {
        let mut settled = 0;
        while self.released < safe {
            let next = shifts.get(self.next_shift);
            if let Some(s) = next.filter(|s| s.at as usize <= self.released) {
                if s.class == TextClass::Body {
                    // Calls get their indices in stream order: blocks before this one first.
                    self.settle_before(outcomes, &mut settled, s.at as usize);
                }
                self.apply(*s);
                self.next_shift += 1;
                continue;
            }
            let end = next.map_or(safe, |s| (s.at as usize).min(safe));
            self.emit(&text[self.released..end]);
            self.released = end;
        }
        self.settle_before(outcomes, &mut settled, usize::MAX);
        // Settled calls need nothing more: the open block's calls are all that stay.
        self.calls.retain(|c| !c.settled);
        flush(&mut self.content_tail, &mut self.out.content, last);
        flush(&mut self.reasoning_tail, &mut self.out.reasoning, last);
        if last {
            for c in self.calls.iter_mut().filter(|c| !c.settled) {
                c.settled = true;
                self.out.deltas.push(ToolCallDelta::Malformed { index: c.index, kind: "unterminated" });
            }
        }
    }

    fn apply(&mut self, s: Shift) {
        if s.class == TextClass::Body {
            let at = s.at as usize;
            self.tracker = match self.kind {
                Kind::None => None,
                Kind::Objects => Some(Track::Objects(Tracker::new(at))),
                Kind::Headed(how) => Some(Track::Headed(Headed::new(at, how))),
            };
        } else {
            self.tracker = None;
        }
        self.class = s.class;
    }

    fn emit(&mut self, bytes: &[u8]) {
        match self.class {
            TextClass::Content => self.content_tail.extend_from_slice(bytes),
            TextClass::Reasoning => self.reasoning_tail.extend_from_slice(bytes),
            TextClass::Hidden => {}
            TextClass::Body => match self.tracker.take() {
                Some(Track::Objects(mut t)) => {
                    for &b in bytes {
                        if let Some(ev) = t.step(b) {
                            self.track(t.block_at, t.object, ev, t.pending_arguments());
                        }
                    }
                    if let Some(ev) = t.flush() {
                        self.track(t.block_at, t.object, ev, String::new());
                    }
                    self.tracker = Some(Track::Objects(t));
                }
                Some(Track::Headed(mut h)) => {
                    for (i, &b) in bytes.iter().enumerate() {
                        if h.phase == Phase::Head
                            && b == b'['
                            && self.body == Body::Mistral
                            && h.head.iter().all(u8::is_ascii_whitespace)
                        {
                            // Mistral's older layout: an array of call objects.
                            self.tracker = Some(Track::Objects(Tracker::new(h.block_at)));
                            self.emit(&bytes[i..]);
                            return;
                        }
                        if let Some(ev) = h.step(b, &self.body, &self.name_chars) {
                            self.track(h.block_at, 0, ev, String::new());
                        }
                    }
                    if let Some(ev) = h.flush() {
                        self.track(h.block_at, 0, ev, String::new());
                    }
                    self.tracker = Some(Track::Headed(h));
                }
                None => {}
            },
        }
    }

    /// What a tracker found of call `item` of the block whose body starts at
    /// `block_at`; `pending`: argument text read before its name.
    fn track(&mut self, block_at: usize, item: u32, ev: Found, pending: String) {
        match ev {
            Found::Name(name, id) => {
                if check_name(&name, &self.name_chars).is_err() {
                    return; // the call is malformed: nothing goes out for it
                }
                let index = self.start(name.clone(), id.as_deref());
                self.calls.push(StreamCall { block_at, item, index, name, sent: String::new(), settled: false });
                self.send(block_at, item, pending);
            }
            Found::Arguments(fragment) => self.send(block_at, item, fragment),
        }
    }

    /// Sends an argument fragment of call `item` of block `block_at`, if its name went out.
    fn send(&mut self, block_at: usize, item: u32, fragment: String) {
        let Some(c) = self.calls.last_mut().filter(|c| !c.settled && c.block_at == block_at && c.item == item) else {
            return;
        };
        if !fragment.is_empty() {
            c.sent.push_str(&fragment);
            self.out.deltas.push(ToolCallDelta::Arguments { index: c.index, fragment });
        }
    }

    /// A new call: its index and id, and its first delta.
    fn start(&mut self, name: String, own_id: Option<&str>) -> u32 {
        let index = self.count;
        self.count += 1;
        let mut id = match own_id {
            Some(id) if !id.is_empty() && !self.ids.contains(id) => id.to_owned(),
            _ => format!("{}{index}", self.id_prefix),
        };
        while self.ids.contains(&id) {
            id.push('_'); // a model's own id took this one: never two calls with one id
        }
        self.ids.insert(id.clone());
        self.out.deltas.push(ToolCallDelta::Start { index, id, name });
        index
    }

    /// Settles the final blocks among `outcomes[*from..]` whose body starts before
    /// `limit`, one block at a time (a block's outcomes follow each other).
    fn settle_before(&mut self, outcomes: &[Outcome], from: &mut usize, limit: usize) {
        let body_at = |o: &Outcome| match o {
            Outcome::CallCommitted(r) => Some(r.body_at),
            Outcome::BlockMalformed(r) => Some(r.body_at),
            _ => None,
        };
        while *from < outcomes.len() {
            let Some(at) = body_at(&outcomes[*from]) else {
                *from += 1;
                continue;
            };
            if at >= limit {
                break;
            }
            let rest = &outcomes[*from..];
            let end = *from + rest.iter().position(|o| body_at(o).is_some_and(|a| a != at)).unwrap_or(rest.len());
            self.settle(&outcomes[*from..end]);
            *from = end;
        }
    }

    /// The deltas of a final block (its outcomes): the rest of each streamed call's
    /// arguments, whole calls that did not stream, and marks for calls whose block
    /// turned out malformed after their deltas went out.
    fn settle(&mut self, outcomes: &[Outcome]) {
        let mut blocks: Vec<usize> = Vec::new();
        for o in outcomes {
            match o {
                Outcome::CallCommitted(r) => {
                    blocks.push(r.body_at);
                    let found =
                        self.calls.iter().position(|c| !c.settled && c.block_at == r.body_at && c.item == r.index);
                    let Some(i) = found else {
                        let index = self.start(r.call.name.clone(), r.call.id.as_deref());
                        let whole = Value::Object(r.call.arguments.clone()).to_string();
                        self.out.deltas.push(ToolCallDelta::Arguments { index, fragment: whole });
                        continue;
                    };
                    let c = &mut self.calls[i];
                    c.settled = true;
                    match rest(&c.sent, &r.call.name, &c.name, &r.call.raw_arguments, &r.call.arguments) {
                        Some(fragment) if !fragment.is_empty() => {
                            c.sent.push_str(&fragment);
                            self.out.deltas.push(ToolCallDelta::Arguments { index: c.index, fragment });
                        }
                        Some(_) => {}
                        None => self.out.deltas.push(ToolCallDelta::Malformed { index: c.index, kind: "diverged" }),
                    }
                }
                Outcome::BlockMalformed(r) => {
                    blocks.push(r.body_at);
                    let found =
                        self.calls.iter_mut().find(|c| !c.settled && c.block_at == r.body_at && c.item == r.index);
                    if let Some(c) = found {
                        c.settled = true;
                        let _ = r.tool_call_index.set(c.index);
                        self.out.deltas.push(ToolCallDelta::Malformed { index: c.index, kind: r.error.kind.name() });
                    }
                }
                _ => {}
            }
        }
        // A block reported whole as one malformed item takes every call that streamed from it.
        for c in self.calls.iter_mut().filter(|c| !c.settled && blocks.contains(&c.block_at)) {
            c.settled = true;
            let kind = outcomes
                .iter()
                .find_map(|o| match o {
                    Outcome::BlockMalformed(r) if r.body_at == c.block_at => Some(r.error.kind.name()),
                    _ => None,
                })
                .unwrap_or("malformed");
            if let Some(Outcome::BlockMalformed(r)) =
                outcomes.iter().find(|o| matches!(o, Outcome::BlockMalformed(r) if r.body_at == c.block_at))
            {
                let _ = r.tool_call_index.set(c.index);
            }
            self.out.deltas.push(ToolCallDelta::Malformed { index: c.index, kind });
        }
    }
}

/// The rest of a streamed call's arguments once it commits: what joined to `sent`
/// is JSON text of exactly `arguments`; `None` when the streamed name or text
/// cannot be completed to it (a tracker that misread the body: never expected).
fn rest(
    sent: &str,
    name: &str,
    sent_name: &str,
    raw: &str,
    arguments: &serde_json::Map<String, Value>,
) -> Option<String> {
    if name != sent_name {
        return None;
    }
    let whole = Value::Object(arguments.clone());
    if sent.is_empty() {
        return Some(whole.to_string());
    }
    let tail = raw.strip_prefix(sent)?;
    let parsed: Value = serde_json::from_str(raw).ok()?;
    (parsed == whole).then(|| tail.to_owned())
}

/// Moves the complete UTF-8 characters of `tail` to `out`, keeping a cut one
/// (unless `last`); bytes that are no UTF-8 go out as U+FFFD.
fn flush(tail: &mut Vec<u8>, out: &mut String, last: bool) {
    if tail.is_empty() {
        return;
    }
    let keep = if last { 0 } else { cut_char(tail) };
    let whole = tail.len() - keep;
    out.push_str(&String::from_utf8_lossy(&tail[..whole]));
    tail.drain(..whole);
}

/// How many bytes at the end of `bytes` begin a UTF-8 character they do not finish.
fn cut_char(bytes: &[u8]) -> usize {
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
enum Found {
    Name(String, Option<String>),
    Arguments(String),
}

/// How a layout's calls are read as they are accepted.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Sent whole when they commit (Python call syntax).
    None,
    /// JSON call objects: names and argument text as accepted (`Tracker`).
    Objects,
    /// A head naming the call, then (maybe) a JSON argument object (`Headed`).
    Headed(Head),
}

/// Where a call's head ends, and what completes it into a body the parser reads.
#[derive(Debug, Clone, Copy)]
struct Head {
    /// The arguments are one JSON object after the head, streamed as accepted;
    /// otherwise (XML) the head ends at `at` and the arguments go out at commit.
    json: bool,
    at: u8,
    /// Whether the byte `at` belongs to the head.
    inclusive: bool,
    /// Appended to the head (and `{}`) to make a whole body.
    suffix: &'static str,
}

impl Kind {
    fn of(body: &Body) -> Self {
        let json = |suffix| Self::Headed(Head { json: true, at: b'{', inclusive: false, suffix });
        let xml = |at, inclusive, suffix| Self::Headed(Head { json: false, at, inclusive, suffix });
        match body {
            Body::JsonObject | Body::JsonObjects => Self::Objects,
            Body::NameSepJson { .. } | Body::IdSepJson { .. } | Body::Harmony | Body::Mistral => json(""),
            Body::DeepSeekV3 => json("\n```"),
            Body::QwenXml => xml(b'>', true, "\n</function>"),
            Body::GlmXml => xml(b'<', false, ""),
            Body::MinimaxXml | Body::DsmlXml => xml(b'>', true, ""),
            Body::Pythonic => Self::None,
        }
    }
}

#[derive(Debug)]
enum Track {
    Objects(Tracker),
    Headed(Headed),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Arguments,
    Done,
}

/// Reads a block whose call is named by a head (`NAME<sep>{…}`, Kimi's id,
/// Harmony's recipient, the XML layouts' `<function=NAME>`): the name goes out
/// as soon as the head parses, by the block's own parser; a JSON argument
/// object then streams as accepted.
#[derive(Debug)]
struct Headed {
    block_at: usize,
    how: Head,
    phase: Phase,
    head: Vec<u8>,
    depth: u32,
    in_string: bool,
    escaped: bool,
    fragment: Vec<u8>,
}

/// A head longer than this names no call the streamer waits for (sent at commit).
const MAX_HEAD: usize = 512;

impl Headed {
    fn new(block_at: usize, how: Head) -> Self {
        Self {
            block_at,
            how,
            phase: Phase::Head,
            head: Vec::new(),
            depth: 0,
            in_string: false,
            escaped: false,
            fragment: Vec::new(),
        }
    }

    /// The call the head names, if the block's parser reads it so.
    fn name(&self, body: &Body, name_chars: &str) -> Option<(String, Option<String>)> {
        let head = std::str::from_utf8(&self.head).ok()?;
        let args = if self.how.json { "{}" } else { "" };
        head_call(body, &format!("{head}{args}{}", self.how.suffix), name_chars)
    }

    fn step(&mut self, b: u8, body: &Body, name_chars: &str) -> Option<Found> {
        match self.phase {
            Phase::Done => None,
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
                } else {
                    self.phase = Phase::Done;
                }
                Some(Found::Name(name, id))
            }
            Phase::Arguments => {
                self.fragment.push(b);
                if self.in_string {
                    if self.escaped {
                        self.escaped = false;
                    } else if b == b'\\' {
                        self.escaped = true;
                    } else if b == b'"' {
                        self.in_string = false;
                    }
                    return None;
                }
                match b {
                    b'"' => self.in_string = true,
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
    fn flush(&mut self) -> Option<Found> {
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
enum Expect {
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
enum Field {
    Name,
    Arguments,
    Other,
}

/// Reads the JSON call objects of one block body, byte by byte, as they are
/// accepted: `{"name": …, "arguments"|"parameters": {…}}`, alone, in an array
/// or one after another. It finds each call's name, and the text of its
/// argument object as it comes (held until the name is known). Argument values
/// that are no object (a string holding one) go out whole when the call commits.
#[derive(Debug)]
#[allow(clippy::struct_excessive_bools)] // a byte-at-a-time lexer's flags: independent, read clearest as flags
struct Tracker {
    block_at: usize,
    /// The position of the current call object among the block's.
    object: u32,
    depth: u32,
    in_string: bool,
    escaped: bool,
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
    args_seen: bool,
    fragment: Vec<u8>,
    /// All of the argument text read so far (handed out when the name comes later).
    arguments: Vec<u8>,
    named: bool,
}

impl Tracker {
    fn new(block_at: usize) -> Self {
        Self {
            block_at,
            object: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            call_depth: 0,
            in_call: false,
            seen_call: false,
            expect: Expect::Key,
            field: Field::Other,
            token: Vec::new(),
            reading_token: false,
            streaming: false,
            args_seen: false,
            fragment: Vec::new(),
            arguments: Vec::new(),
            named: false,
        }
    }

    /// The argument text read before the name was known.
    fn pending_arguments(&self) -> String {
        String::from_utf8_lossy(&self.arguments).into_owned()
    }

    /// Hands out the argument bytes read since the last hand-out, whole characters only.
    fn flush(&mut self) -> Option<Found> {
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

    fn start_call(&mut self) {
        if self.seen_call {
            self.object += 1;
        }
        self.seen_call = true;
        self.in_call = true;
        self.call_depth = self.depth;
        self.expect = Expect::Key;
        self.streaming = false;
        self.args_seen = false;
        self.fragment.clear();
        self.arguments.clear();
        self.named = false;
    }

    /// One body byte.
    fn step(&mut self, b: u8) -> Option<Found> {
        if self.streaming {
            self.arguments.push(b);
            if self.named {
                self.fragment.push(b);
            }
        }
        let mut found = None;
        if self.in_string {
            if self.reading_token {
                self.token.push(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_token {
                    self.reading_token = false;
                    found = self.token_done();
                }
            }
            return found;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.in_call && self.depth == self.call_depth && matches!(self.expect, Expect::Key | Expect::Value) {
                    self.reading_token = true;
                    self.token.clear();
                    self.token.push(b);
                }
            }
            b'{' | b'[' => {
                if !self.in_call && b == b'{' {
                    self.depth += 1;
                    self.start_call();
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
                    self.args_seen = true; // a string holding the object: sent whole at commit
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
        let mut t = Tracker::new(0);
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

    use crate::turn::{TokenIn, Turn, TurnConfig};

    fn streaming(format: &str) -> Turn {
        let config = TurnConfig { stream: true, ..TurnConfig::builtin(format, "turn", 1 << 20).unwrap() };
        Turn::new(&config, [], []).unwrap()
    }

    /// Drafts `window`, accepts `n` of it, returns what the step released.
    fn step(t: &mut Turn, window: &[&str], n: usize) -> Released {
        let toks: Vec<TokenIn<'_>> = window.iter().map(|p| TokenIn::Piece(p.as_bytes())).collect();
        t.draft(&toks).unwrap();
        assert!(!t.has_released(), "a draft releases nothing");
        t.verify(n, None).unwrap();
        t.take_released()
    }

    #[test]
    fn rejected_tokens_release_nothing_and_their_shifts_go_with_them() {
        let mut t = streaming("hermes");
        assert_eq!(step(&mut t, &["Hi ", "<tool_call>", "{\"name\""], 1).content, "Hi ");
        // The rejected opener's shifts are gone: what follows is content again.
        assert_eq!(step(&mut t, &["<tool", "box"], 2).content, "<toolbox");
        let r = step(&mut t, &["<tool_call>", "{\"name\": \"f\", \"arguments\": {\"a\": 1}}"], 2);
        assert_eq!(r.content, "");
        assert!(matches!(&r.deltas[0], ToolCallDelta::Start { index: 0, name, .. } if name == "f"));
        assert_eq!(r.deltas[1], ToolCallDelta::Arguments { index: 0, fragment: "{\"a\": 1}".to_owned() });
        assert_eq!(step(&mut t, &["</tool_call>", " ok"], 2).content, " ok");
    }

    #[test]
    fn a_partial_delimiter_waits_and_finish_releases_it() {
        let mut t = streaming("hermes");
        assert_eq!(step(&mut t, &["a <tool_"], 1).content, "a ");
        t.finish().unwrap();
        assert_eq!(t.take_released().content, "<tool_");
    }

    #[test]
    fn reasoning_goes_apart() {
        let mut t = streaming("hermes");
        let r = step(&mut t, &["<think>", "hmm", "</think>", "yes"], 4);
        assert_eq!((r.reasoning.as_str(), r.content.as_str()), ("hmm", "yes"));
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
        assert_eq!(joined(&args, 0), "", "string-encoded arguments go out at commit");
    }
}
