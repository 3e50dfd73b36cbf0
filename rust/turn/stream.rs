//! Streaming output: the text a client may be shown, released from accepted
//! tokens only, so nothing shown is ever retracted.
//!
//! The scanner reports where the text changes class (`TextClass`: content,
//! reasoning, hidden delimiters, block bodies); the window keeps those shifts
//! per token and drops them with rejected tokens. After each verify the
//! streamer walks the accepted text from where it stopped to the *safe* end:
//! the accepted end less what may still change class (a partial delimiter, the
//! blanks an anchored call may still claim). Content and reasoning bytes go out
//! as text (never half a UTF-8 character); body bytes feed a tracker that
//! streams each call's name and argument text as it is accepted: the JSON text
//! of JSON layouts, the JSON that XML parameters render to. Python call syntax
//! goes out whole when it commits. Cost: the bytes released.

mod calls;
mod unescape;

use super::outcome::{MalformedRecord, Outcome};
use super::window::Shift;
use crate::scan::{check_name, item_starts, Body, MalformedKind, PythonCalls, PythonFound, Schemas, TextClass};
use calls::{cut_char, Found, Headed, Kind, Phase, Track, Tracker};
use serde_json::Value;
use std::collections::HashSet;
use std::ops::Range;

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
    /// Its block's body offset and its position among the block's items, as
    /// its tracker counts them (the parse may count otherwise: see `settle`).
    block_at: usize,
    item: u32,
    /// Where in the body its call object starts (JSON objects one after another),
    /// and where the body ended once the stream left it.
    at: Option<usize>,
    body_end: Option<usize>,
    index: u32,
    /// Its OpenAI tool-call id, as its first delta gave it.
    id: Box<str>,
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
    /// A call settled since `calls` was last cleaned of settled ones.
    settled_some: bool,
    /// Final blocks' outcomes (in stream order) waiting until the release has read
    /// their bodies as far as streaming reads them (`readable_end`).
    pending: Vec<Outcome>,
    /// Every id given out in the turn, and how many calls have one.
    ids: HashSet<String>,
    count: u32,
    id_prefix: String,
    out: Released,
}

/// The prefix of the OpenAI tool-call ids of a turn's calls that bring no id of their own
/// (`call_<digest>_`, the call's index after it): stable across retries of the turn, apart
/// between turns. Reports give committed calls ids by it without streaming too.
#[must_use]
pub fn tool_call_id_prefix(turn_key: &str) -> String {
    let key = super::keys::CommitHasher::new(turn_key).key(u32::MAX).to_string();
    let digest: String = key.chars().rev().take(16).collect();
    format!("call_{digest}_")
}

impl Streamer {
    pub(super) fn new(body: &Body, name_chars: &str, turn_key: &str, class: TextClass) -> Self {
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
            settled_some: false,
            pending: Vec::new(),
            ids: HashSet::new(),
            count: 0,
            id_prefix: tool_call_id_prefix(turn_key),
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
    pub(super) fn release(
        &mut self,
        text: &[u8],
        shifts: &[Shift],
        safe: usize,
        outcomes: &[Outcome],
        last: bool,
        schemas: &Schemas,
    ) {
        // Outcomes wait here across steps: a too-large block is final once its byte
        // past the limit is accepted, while a partial delimiter may still hold back
        // bytes the stream reads before that limit.
        let mut pending = std::mem::take(&mut self.pending);
        pending.extend(outcomes.iter().filter(|o| body_at(o).is_some()).cloned());
        let outcomes = &pending[..];
        let mut settled = 0;
        while self.released < safe {
            let next = shifts.get(self.next_shift);
            if let Some(s) = next.filter(|s| s.at as usize <= self.released) {
                if s.class == TextClass::Body {
                    // Calls get their indices in stream order: blocks before this one first.
                    self.settle_before(outcomes, text, &mut settled, s.at as usize);
                }
                self.apply(*s);
                self.next_shift += 1;
                continue;
            }
            let end = next.map_or(safe, |s| (s.at as usize).min(safe));
            self.emit(&text[self.released..end], schemas);
            self.released = end;
        }
        let ready = if last { usize::MAX } else { self.released };
        self.settle_read(outcomes, text, &mut settled, ready);
        pending.drain(..settled);
        self.pending = pending;
        // Settled calls need nothing more: the calls of blocks still open or waiting
        // for confirmation are all that stay. Walked only when a block settled, so
        // an open block's many calls are not walked on every step.
        if std::mem::take(&mut self.settled_some) {
            self.calls.retain(|c| !c.settled);
        }
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
        if self.class == TextClass::Body {
            if let Some(block_at) = self.tracker.as_ref().map(Track::block_at) {
                for c in self.calls.iter_mut().rev().take_while(|c| c.block_at == block_at) {
                    c.body_end = Some(s.at as usize);
                }
            }
        }
        if s.class == TextClass::Body {
            let at = s.at as usize;
            self.tracker = match self.kind {
                Kind::Python => Some(Track::Python { block_at: at, calls: PythonCalls::new() }),
                Kind::Objects => Some(Track::Objects(Tracker::new(at, 0))),
                Kind::Headed(how) => Some(Track::Headed(Headed::new(at, how))),
            };
        } else {
            self.tracker = None;
        }
        self.class = s.class;
    }

    fn emit(&mut self, bytes: &[u8], schemas: &Schemas) {
        match self.class {
            TextClass::Content => self.content_tail.extend_from_slice(bytes),
            TextClass::Reasoning => self.reasoning_tail.extend_from_slice(bytes),
            TextClass::Hidden => {}
            TextClass::Body => match self.tracker.take() {
                Some(Track::Objects(t)) => self.objects(t, bytes),
                Some(Track::Headed(h)) => self.headed(h, bytes, schemas),
                Some(Track::Python { block_at, mut calls }) => {
                    let mut found = Vec::new();
                    calls.feed(bytes, &mut found);
                    for f in found {
                        let (item, ev) = match f {
                            PythonFound::Name { item, name } => (item, Found::Name(name, None)),
                            PythonFound::Arguments { item, fragment } => (item, Found::Arguments(fragment)),
                        };
                        self.track(block_at, item, ev, String::new());
                    }
                    self.tracker = Some(Track::Python { block_at, calls });
                }
                None => {}
            },
        }
    }

    /// Body bytes of JSON call objects.
    fn objects(&mut self, mut t: Tracker, bytes: &[u8]) {
        for &b in bytes {
            if let Some(ev) = t.step(b) {
                self.track(t.block_at, t.object, ev, t.pending_arguments());
                self.place(&t);
            }
        }
        if let Some(ev) = t.flush() {
            self.track(t.block_at, t.object, ev, String::new());
        }
        self.tracker = Some(Track::Objects(t));
    }

    /// Body bytes of a call named by a head.
    fn headed(&mut self, mut h: Headed, bytes: &[u8], schemas: &Schemas) {
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if h.phase == Phase::Parameters {
                if let Some(ev) = h.parameters(&bytes[i..], schemas) {
                    self.track(h.block_at, 0, ev, String::new());
                }
                break;
            }
            if h.phase == Phase::Head
                && b == b'['
                && self.body == Body::Mistral
                && h.head.iter().all(u8::is_ascii_whitespace)
            {
                // Mistral's older layout: an array of call objects.
                return self.objects(Tracker::new(h.block_at, h.head.len()), &bytes[i..]);
            }
            if let Some(ev) = h.step(b, &self.body, &self.name_chars) {
                self.track(h.block_at, 0, ev, String::new());
                if h.phase == Phase::Parameters && h.head_end_is_argument() {
                    continue; // the byte that ended the head opens the parameters
                }
            }
            i += 1;
        }
        if let Some(ev) = h.flush() {
            self.track(h.block_at, 0, ev, String::new());
        }
        self.tracker = Some(Track::Headed(h));
    }

    /// What a tracker found of call `item` of the block whose body starts at
    /// `block_at`; `pending`: argument text read before its name.
    fn track(&mut self, block_at: usize, item: u32, ev: Found, pending: String) {
        match ev {
            Found::Name(name, id) => {
                if check_name(&name, &self.name_chars).is_err() {
                    return; // the call is malformed: nothing goes out for it
                }
                let (index, id) = self.start(name.clone(), id.as_deref());
                self.calls.push(StreamCall {
                    block_at,
                    item,
                    at: None,
                    body_end: None,
                    index,
                    id,
                    name,
                    sent: String::new(),
                    settled: false,
                });
                self.send(block_at, item, pending);
            }
            Found::Arguments(fragment) => self.send(block_at, item, fragment),
        }
    }

    /// Notes where the object of the call a tracker just started begins in its body.
    fn place(&mut self, t: &Tracker) {
        if let Some(c) = self.calls.last_mut().filter(|c| c.block_at == t.block_at && c.item == t.object) {
            c.at.get_or_insert(t.object_at);
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

    /// A new call: its first delta; returns its index and id.
    fn start(&mut self, name: String, own_id: Option<&str>) -> (u32, Box<str>) {
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
        let kept: Box<str> = id.as_str().into();
        self.out.deltas.push(ToolCallDelta::Start { index, id, name });
        (index, kept)
    }

    /// Settles the final blocks among `outcomes[*from..]` whose body starts before
    /// `limit`, one block at a time (a block's outcomes follow each other).
    fn settle_before(&mut self, outcomes: &[Outcome], text: &[u8], from: &mut usize, limit: usize) {
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
            self.settle(&outcomes[*from..end], text);
            *from = end;
        }
    }

    /// Settles, in order, the final blocks among `outcomes[*from..]` whose bodies the
    /// release has read up to `released` as far as streaming reads them.
    fn settle_read(&mut self, outcomes: &[Outcome], text: &[u8], from: &mut usize, released: usize) {
        while let Some(o) = outcomes.get(*from) {
            if readable_end(o).is_some_and(|end| end > released) {
                break;
            }
            let at = body_at(o).unwrap_or(usize::MAX);
            self.settle_before(outcomes, text, from, at.saturating_add(1));
        }
    }

    /// The deltas of a final block (its outcomes): the rest of each streamed call's
    /// arguments, whole calls that did not stream (or whose stream diverged from the
    /// call), and marks for calls whose block turned out malformed after their deltas
    /// went out. `text` is the accepted text, which holds the block.
    fn settle(&mut self, outcomes: &[Outcome], text: &[u8]) {
        let Some(block_at) = outcomes.iter().find_map(body_at) else { return };
        // Final before its body is all released (too large): the rest is nothing to stream.
        if self.tracker.as_ref().is_some_and(|t| t.block_at() == block_at) {
            self.tracker = None;
        }
        // Calls went out in stream order, so they are sorted by (block, item): the
        // block's are found by bisection however many calls the turn holds.
        let first = self.calls.partition_point(|c| c.block_at < block_at);
        let end = self.calls.partition_point(|c| c.block_at <= block_at);
        self.settled_some |= first < end;
        self.renumber(first..end, block_at, text);
        // The block's calls that streamed from item `item` (an array element may hold two objects).
        let of_item = |calls: &[StreamCall], item: u32| {
            let block = &calls[first..end];
            first + block.partition_point(|c| c.item < item)..first + block.partition_point(|c| c.item <= item)
        };
        // Each malformed item, with the streamed calls it ends (in stream order).
        let mut malformed: Option<(&MalformedRecord, Vec<u32>)> = None;
        let mark = |r: &MalformedRecord, calls: Vec<u32>| {
            if !calls.is_empty() {
                let _ = r.tool_call_indices.set(calls.into_boxed_slice());
            }
        };
        for o in outcomes {
            match o {
                Outcome::CallCommitted(r) => {
                    let streamed = of_item(&self.calls, r.index).find(|&i| !self.calls[i].settled);
                    if let Some(i) = streamed {
                        let c = &mut self.calls[i];
                        c.settled = true;
                        match rest(&c.sent, &r.call.name, &c.name, &r.call.raw_arguments, &r.call.arguments) {
                            Some(fragment) => {
                                let _ = r.tool_call_id.set(c.id.clone());
                                if !fragment.is_empty() {
                                    c.sent.push_str(&fragment);
                                    self.out.deltas.push(ToolCallDelta::Arguments { index: c.index, fragment });
                                }
                                continue;
                            }
                            // What went out is not this call: drop it, and send the call whole.
                            None => self.out.deltas.push(ToolCallDelta::Malformed { index: c.index, kind: "diverged" }),
                        }
                    }
                    let (index, id) = self.start(r.call.name.clone(), r.call.id.as_deref());
                    let _ = r.tool_call_id.set(id);
                    let whole = Value::Object(r.call.arguments.clone()).to_string();
                    self.out.deltas.push(ToolCallDelta::Arguments { index, fragment: whole });
                }
                Outcome::BlockMalformed(r) => {
                    let (mut taken, kind) = (Vec::new(), r.error.kind.name());
                    for i in of_item(&self.calls, r.index) {
                        let c = &mut self.calls[i];
                        if !c.settled {
                            c.settled = true;
                            taken.push(c.index);
                            self.out.deltas.push(ToolCallDelta::Malformed { index: c.index, kind });
                        }
                    }
                    if let Some((earlier, calls)) = malformed.replace((r, taken)) {
                        mark(earlier, calls);
                    }
                }
                _ => {}
            }
        }
        // The block's last malformed item, where its body stopped parsing (a block reported
        // whole is one such item), takes every streamed call no item settled.
        for c in self.calls[first..end].iter_mut().filter(|c| !c.settled) {
            c.settled = true;
            let kind = malformed.as_ref().map_or("malformed", |(r, _)| r.error.kind.name());
            self.out.deltas.push(ToolCallDelta::Malformed { index: c.index, kind });
            if let Some((_, calls)) = &mut malformed {
                calls.push(c.index);
            }
        }
        if let Some((r, calls)) = malformed {
            mark(r, calls);
        }
    }

    /// Numbers the streamed call objects of the block at `block_at` (`calls`) as its
    /// parse numbers its items, by where each object starts: the parse counts text that
    /// is no object (MiniMax's stray line) and an array element holding two objects as
    /// one item each, which a tracker reading objects cannot know while they stream.
    fn renumber(&mut self, calls: Range<usize>, block_at: usize, text: &[u8]) {
        let calls = &mut self.calls[calls];
        if calls.iter().all(|c| c.at.is_none()) {
            return;
        }
        // The body as the scanner parsed it: to where the stream left it, else (the
        // turn ended inside the block) to the end of the text.
        let end = calls.iter().find_map(|c| c.body_end).unwrap_or(text.len());
        let Some(body) = text.get(block_at..end).and_then(|b| std::str::from_utf8(b).ok()) else {
            return; // not UTF-8: the block is one malformed item, which takes every call
        };
        let Some(starts) = item_starts(&self.body, body) else { return };
        for c in calls {
            if let Some(at) = c.at {
                c.item = starts.partition_point(|&s| s <= at).saturating_sub(1) as u32;
            }
        }
    }
}

/// How far streaming reads the body of the block an outcome settles: a block too large
/// only up to its limit (the scanner hides it from there); any other, all of it, which
/// the release has read by the time its end is accepted.
fn readable_end(o: &Outcome) -> Option<usize> {
    match o {
        Outcome::BlockMalformed(r) if r.error.kind == MalformedKind::TooLarge => {
            Some((r.body_at + r.error.offset).saturating_sub(1))
        }
        _ => body_at(o),
    }
}

/// Where the body of the block an outcome settles starts; `None` for outcomes of no block.
fn body_at(o: &Outcome) -> Option<usize> {
    match o {
        Outcome::CallCommitted(r) => Some(r.body_at),
        Outcome::BlockMalformed(r) => Some(r.body_at),
        _ => None,
    }
}

/// The rest of a streamed call's arguments once it commits: what joined to `sent`
/// is JSON text of exactly `arguments`: the model's own JSON text where it wrote
/// JSON, else the compact rendering the XML and Python readers stream. `None`
/// when the streamed name or text cannot be completed to it (a reader that
/// misread the body: never expected).
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
    if let Some(tail) = raw.strip_prefix(sent) {
        if serde_json::from_str::<Value>(raw).is_ok_and(|parsed| parsed == whole) {
            return Some(tail.to_owned());
        }
    }
    whole.to_string().strip_prefix(sent).map(str::to_owned)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
