//! The delimiters the scanner searches for in each of its modes, and what a
//! match means there.

use super::delimiter::{Cursor, Delimiters};
use super::lexer::Syntax;
use super::spec::{Body, FormatSpec};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Formats whose matchers `Matchers::built` keeps: every built-in one and
/// then some; past it the oldest is built again when next asked for.
const KEPT_FORMATS: usize = 64;

/// Matchers larger than this are not kept: a custom format with huge delimiters
/// would hold its automata for the life of the process. Built-in ones take a few KiB.
const KEPT_BYTES: usize = 1 << 20;

/// What a delimiter does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    SectionOpen,
    SectionClose,
    CallOpen,
    CallClose,
    /// Lets a call start at the next non-blank byte (whole-message formats).
    Arm,
    /// Opens a reasoning section: what follows is thinking, never a call.
    ReasoningOpen,
    ReasoningClose,
    /// Message framing (see `Framing`): a header's start and end, and control
    /// tokens. They change no call; streaming output hides them.
    FrameOpen,
    FrameClose,
    Control,
}

/// What a match means in its mode: a delimiter, or, in raw-text bodies, one of
/// the format's value tags, which nest (see `nesting`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hit {
    Delimiter(Role),
    Nest,
    Unnest,
}

/// The delimiters searched for in one mode, with what each means.
#[derive(Debug, Clone)]
pub(super) struct Matcher {
    delimiters: Delimiters,
    hits: Vec<(Hit, usize)>,
}

impl Matcher {
    /// The matcher of `groups`; a spelling listed twice keeps its first meaning.
    fn new(groups: &[(&[String], Hit)]) -> Option<Self> {
        let mut patterns: Vec<&str> = Vec::new();
        let mut hits = Vec::new();
        for (texts, hit) in groups {
            for t in *texts {
                if !t.is_empty() && !patterns.contains(&t.as_str()) {
                    patterns.push(t);
                    hits.push((*hit, t.len()));
                }
            }
        }
        (!patterns.is_empty()).then(|| Self { delimiters: Delimiters::new(&patterns), hits })
    }

    /// The bytes that, from the start, change nothing (see `Delimiters::rests`).
    pub(super) fn rests(&self) -> &[bool; 256] {
        self.delimiters.rests()
    }

    pub(super) fn start(&self) -> Cursor {
        self.delimiters.start()
    }

    /// The bytes that leave `cursor` where it is and match nothing, if it is at rest.
    #[inline]
    pub(super) fn rests_at(&self, cursor: Cursor) -> Option<&[bool; 256]> {
        self.delimiters.rests_at(cursor)
    }

    /// How many of the last bytes read may still begin a delimiter.
    pub(super) fn depth(&self, cursor: Cursor) -> usize {
        self.delimiters.depth(cursor)
    }

    /// Advances by one byte; returns what ends here, and its length in bytes.
    #[inline]
    pub(super) fn step(&self, cursor: &mut Cursor, byte: u8) -> Option<(Hit, usize)> {
        self.delimiters.step(cursor, byte).map(|p| self.hits[p])
    }

    /// `step`, with the automaton's walk out of line: a byte that leaves a cursor at
    /// rest where it is (most bytes of a body) costs a table lookup, and a loop that
    /// calls this does not keep the automaton's tables at hand for every byte.
    #[inline]
    pub(super) fn step_outlined(&self, cursor: &mut Cursor, byte: u8) -> Option<(Hit, usize)> {
        if *cursor == self.start() && self.rests()[usize::from(byte)] {
            return None;
        }
        self.step_out_of_line(cursor, byte)
    }

    #[inline(never)]
    fn step_out_of_line(&self, cursor: &mut Cursor, byte: u8) -> Option<(Hit, usize)> {
        self.step(cursor, byte)
    }
}

/// The value tags of a raw-text body layout, which nest inside a block: a
/// closer spelled in text ends the block only where they balance, so a value
/// that holds a whole call (`<tool_call>…</tool_call>` in Qwen3-Coder code)
/// keeps its text. Qwen3-Coder counts function tags, since its values may
/// omit `</parameter>`.
fn nesting(body: &Body) -> Option<[&'static str; 2]> {
    match body {
        Body::QwenXml => Some(["<function=", "</function>"]),
        Body::GlmXml => Some(["<arg_value>", "</arg_value>"]),
        Body::MinimaxXml => Some(["<parameter name=", "</parameter>"]),
        Body::DsmlXml => Some(["<｜DSML｜parameter name=", "</｜DSML｜parameter>"]),
        _ => None,
    }
}

/// The matchers `Matchers::built` keeps, by format: a handful, searched in order.
fn kept() -> MutexGuard<'static, Vec<(FormatSpec, Arc<Matchers>)>> {
    static KEPT: Mutex<Vec<(FormatSpec, Arc<Matchers>)>> = Mutex::new(Vec::new());
    KEPT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A format's matchers, one per scanner mode.
#[derive(Debug, Clone)]
pub(super) struct Matchers {
    pub(super) outside: Option<Matcher>,
    pub(super) section: Option<Matcher>,
    pub(super) body: Option<Matcher>,
    pub(super) reasoning: Option<Matcher>,
}

impl Matchers {
    /// The matchers of `spec`, built once per format in a process and copied for
    /// each scanner of it: building the automata was most of the cost of starting
    /// a stream (or a one-shot `parse`). A copy, not a shared pointer: the scanner
    /// reads them on every token, and one more indirection there made a batch step
    /// of 512 sequences 12% slower. Built outside the lock, so that a slow build (a
    /// custom format's long delimiters) holds up no other stream's start.
    pub(super) fn built(spec: &FormatSpec) -> Self {
        if let Some(m) = kept().iter().find(|(s, _)| s == spec).map(|(_, m)| Arc::clone(m)) {
            return Self::clone(&m);
        }
        let m = Self::new(spec);
        if m.memory_usage() <= KEPT_BYTES {
            let mut kept = kept();
            if !kept.iter().any(|(s, _)| s == spec) {
                if kept.len() == KEPT_FORMATS {
                    kept.remove(0);
                }
                kept.push((spec.clone(), Arc::new(m.clone())));
            }
        }
        m
    }

    /// Whether `built` keeps the matchers of `spec` now.
    #[cfg(test)]
    fn is_kept(spec: &FormatSpec) -> bool {
        kept().iter().any(|(s, _)| s == spec)
    }

    /// Bytes their automata hold.
    fn memory_usage(&self) -> usize {
        [&self.outside, &self.section, &self.body, &self.reasoning]
            .into_iter()
            .flatten()
            .map(|m| m.delimiters.memory_usage())
            .sum()
    }

    pub(super) fn new(spec: &FormatSpec) -> Self {
        let none = Vec::new();
        let arm = spec.anchor.as_ref().map_or(&none, |a| &a.arm);
        let (think_open, think_close) = spec.reasoning.as_ref().map_or((&none, &none), |r| (&r.open, &r.close));
        let d = Hit::Delimiter;
        // Reasoning comes first: a closer that also arms (xlam's `</think>`) is a
        // reasoning closer, which arms too.
        let (frame_open, frame_close, control) =
            spec.framing.as_ref().map_or((&none, &none, &none), |f| (&f.open, &f.close, &f.hidden));
        let outside = if spec.section_open.is_empty() {
            Matcher::new(&[
                (think_open, d(Role::ReasoningOpen)),
                (think_close, d(Role::ReasoningClose)),
                (&spec.call_open, d(Role::CallOpen)),
                (arm, d(Role::Arm)),
                (frame_open, d(Role::FrameOpen)),
                (frame_close, d(Role::FrameClose)),
                (control, d(Role::Control)),
            ])
        } else {
            Matcher::new(&[
                (think_open, d(Role::ReasoningOpen)),
                (think_close, d(Role::ReasoningClose)),
                (&spec.section_open, d(Role::SectionOpen)),
            ])
        };
        let section =
            Matcher::new(&[(&spec.call_open, d(Role::CallOpen)), (&spec.section_close, d(Role::SectionClose))]);
        let tags: Vec<[String; 1]> = nesting(&spec.body)
            .filter(|_| spec.syntax == Syntax::Raw)
            .map(|tags| tags.map(|t| [t.to_owned()]).to_vec())
            .unwrap_or_default();
        let mut body_groups = vec![(spec.call_close.as_slice(), d(Role::CallClose))];
        if spec.structural() {
            // A block that ends on its bracket also ends where the next call opens.
            body_groups.push((spec.call_open.as_slice(), d(Role::CallOpen)));
        }
        if let [open, close] = tags.as_slice() {
            body_groups.extend([(open.as_slice(), Hit::Nest), (close.as_slice(), Hit::Unnest)]);
        }
        let body = Matcher::new(&body_groups);
        let reasoning = Matcher::new(&[(think_close, d(Role::ReasoningClose))]);
        Self { outside, section, body, reasoning }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::formats::builtin;

    /// Scanners of one format copy the matchers built once; past `KEPT_FORMATS`
    /// formats the oldest is built again. Either way a format gets its own matchers.
    #[test]
    fn built_matchers_are_the_formats_own_past_the_cache() {
        let opener = |i: usize| format!("<call{i}>");
        let finds = |m: &Matchers, text: &str| {
            let d = &m.outside.as_ref().unwrap().delimiters;
            let mut c = d.start();
            text.bytes().any(|b| d.step(&mut c, b).is_some())
        };
        for round in 0..2 {
            for i in 0..KEPT_FORMATS + 8 {
                let mut spec = builtin("hermes").unwrap();
                spec.call_open = vec![opener(i)];
                let m = Matchers::built(&spec);
                assert!(finds(&m, &format!("x {}", opener(i))), "round {round}, format {i}");
                assert!(!finds(&m, &format!("x {}", opener(i + 1))), "round {round}, format {i}");
            }
        }
    }

    /// A custom format whose delimiters make megabytes of automata is built for
    /// its scanner and not kept: nothing of it outlives its streams.
    #[test]
    fn huge_matchers_are_not_kept() {
        let mut spec = builtin("hermes").unwrap();
        spec.call_open = vec![format!("<{}>", "a".repeat(50_000))];
        let m = Matchers::built(&spec);
        assert!(m.memory_usage() > KEPT_BYTES, "{} bytes", m.memory_usage());
        assert!(!Matchers::is_kept(&spec));
        let small = builtin("hermes").unwrap();
        Matchers::built(&small);
        assert!(Matchers::is_kept(&small));
    }
}
