//! Where the values of a raw-text XML call begin and end. Values hold code, so
//! a tag spelled inside one is text unless structure says otherwise:
//!
//! - with a schema for the tool, only an opener of one of its parameters not
//!   given yet opens a parameter;
//! - without one, an opener that would end a value whose closer is missing
//!   counts only at the start of a line;
//! - a closer counts only if the rest of the call parses from it.
//!
//! The parse is a depth-first search over the candidate ends of each value,
//! earliest first, remembering the states that failed; each state is tried at
//! most once and a budget bounds the whole, so a body crafted to be ambiguous
//! is malformed, never slow.

use super::super::malformed::{Malformed, MalformedKind};
use super::excerpt;
use super::schema::Tool;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// Candidate ends tried per call before it is declared too ambiguous to read.
const BUDGET: usize = 100_000;

/// The tags of one raw-text XML layout.
#[derive(Debug)]
pub(super) struct Layout {
    /// Starts a parameter opener (`<parameter=`, `<arg_key>`, …).
    pub(super) open: &'static str,
    /// Closes a value.
    pub(super) close: &'static str,
    /// Ends the parameter list, in layouts that have such a tag (`</function>`).
    pub(super) end: Option<&'static str>,
    /// Reads the opener at the start of its argument (which starts with `open`).
    pub(super) opener: fn(&str) -> Option<Opener<'_>>,
    /// Once this follows `open`, the opener is complete or is none.
    pub(super) opener_end: &'static str,
}

/// A parameter opener: the parameter's key, the opener's attributes, its length.
#[derive(Debug, Clone, Copy)]
pub(super) struct Opener<'a> {
    pub(super) key: &'a str,
    pub(super) attrs: &'a str,
    pub(super) len: usize,
}

/// One parameter of a call: where its opener starts, and its value.
#[derive(Debug, Clone)]
pub(super) struct Param<'a> {
    pub(super) key: &'a str,
    pub(super) attrs: &'a str,
    pub(super) at: usize,
    pub(super) value: Range<usize>,
}

#[derive(Debug)]
struct Frame<'a> {
    /// The top-level position this parameter was read from.
    q: usize,
    param: Param<'a>,
    /// The schema parameters given through this one (see `Given`).
    given: Given,
    /// Candidate ends before this position were tried.
    cursor: usize,
    /// A key the schema does not list: only its first closer may end its value.
    strict: bool,
}

/// The set of schema parameters given so far, in O(1) per step: exact for a
/// tool's first 128 parameters, a 64-bit hash beyond (a collision could only
/// make the search skip a state, never crash or slow it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
struct Given(u128, u64);

impl Given {
    fn with(self, index: u32) -> Self {
        if index < 128 {
            Self(self.0 | 1 << index, self.1)
        } else {
            // splitmix64 of the index: an order-free fingerprint of the set.
            let mut z = u64::from(index).wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            Self(self.0, self.1 ^ (z ^ (z >> 31)))
        }
    }

    /// With a key the schema does not list, in the fingerprint part.
    fn with_key(self, key: &str) -> Self {
        // FNV-1a of the key, then splitmix64's finaliser: an order-free fingerprint.
        let mut z =
            key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Self(self.0, self.1 ^ (z ^ (z >> 31)) ^ 1)
    }

    /// Whether parameter `index` was given; past the exact part, whether its key is
    /// `stacked` (one of the frames': a schema key's frame always has its index).
    fn has(self, index: u32, stacked: impl FnOnce() -> bool) -> bool {
        if index < 128 {
            self.0 & 1 << index != 0
        } else {
            stacked()
        }
    }
}

/// Whether an opener of `key` opens a parameter: with a schema, one of the
/// tool's not given yet (the `first` opener of the list always does: there is
/// no value before it to be text of); without, any, but one that ends a value
/// whose closer is missing (`implicit`) only at the start of a line.
///
/// With a schema, an opener of a key the schema does not list, right after a
/// value's closer, opens a parameter only strictly (`Known::strict`): its value
/// must end at its own first closer and the rest of the call parse from there.
/// Models do pass parameters their schema lacks (GLM's `date` beside `city`),
/// while code that spells such a parameter inside a value has text after it,
/// so the strict reading fails there and the opener stays text.
pub(super) fn opens(
    tool: Option<&Tool>,
    key: &str,
    first: bool,
    given: impl FnOnce(u32) -> bool,
    given_key: impl FnOnce(&str) -> bool,
    line_start: impl FnOnce() -> bool,
    implicit: bool,
) -> Option<Known> {
    if let Some(tool) = tool {
        return match tool.param(key) {
            Some(p) => (!given(p.index)).then_some(Known { index: Some(p.index), strict: false }),
            None if first => Some(Known { index: None, strict: false }),
            None => (!implicit && !given_key(key)).then_some(Known { index: None, strict: true }),
        };
    }
    (!implicit || line_start()).then_some(Known { index: None, strict: false })
}

/// Whether byte `at` of `text` starts a line, blanks aside.
pub(super) fn line_start(text: &[u8], at: usize) -> bool {
    text[..at].iter().rev().find(|&&b| b != b' ' && b != b'\t') == Some(&b'\n')
}

/// How an accepted opener is known: as the schema's parameter `index`, or
/// freely (no schema, or the first parameter of a list); `strict` for a key the
/// schema does not list (see `opens`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Known {
    index: Option<u32>,
    pub(super) strict: bool,
}

enum Top<'a> {
    Done,
    Param(usize, Opener<'a>, Known),
    Junk,
}

struct Search<'a> {
    text: &'a str,
    layout: &'a Layout,
    tool: Option<&'a Tool>,
    cut: bool,
    opens: Vec<usize>,
    closes: Vec<usize>,
    ends: Vec<usize>,
    failed: HashSet<(usize, Given)>,
    /// The keys of the frames on the search's stack, counted: whether a key was given
    /// is one lookup, not a walk down the stack (quadratic in a call's parameters).
    stacked: HashMap<&'a str, u32>,
    /// The furthest place the search met text that is no structure, and why.
    furthest: (usize, String),
    /// Candidates tried, against `BUDGET`: every end of a value, and every opener
    /// passed over as text of one (a value holding thousands of those was read once
    /// per candidate before it, uncounted: a 1 MB body took minutes to be malformed).
    spent: usize,
    /// Openers looked at (tests: the work, counted apart from the budget).
    #[cfg(test)]
    looked: usize,
}

/// The parameters of the call whose parameter list starts at `from` in `text`.
/// `tool` is its schema, when known; `cut` means the turn ended inside the block.
pub(super) fn params<'a>(
    text: &'a str,
    from: usize,
    layout: &'a Layout,
    tool: Option<&'a Tool>,
    cut: bool,
) -> Result<Vec<Param<'a>>, Malformed> {
    let at = |pat: &str| text.match_indices(pat).map(|(i, _)| i).filter(|&i| i >= from).collect::<Vec<_>>();
    let mut s = Search {
        text,
        layout,
        tool,
        cut,
        opens: at(layout.open),
        closes: at(layout.close),
        ends: layout.end.map(at).unwrap_or_default(),
        failed: HashSet::new(),
        stacked: HashMap::new(),
        furthest: (from, String::new()),
        spent: 0,
        #[cfg(test)]
        looked: 0,
    };
    let params = s.run(from)?;
    let mut keys = HashSet::with_capacity(params.len());
    if let Some(p) = params.iter().find(|p| !keys.insert(p.key)) {
        return Err(Malformed::new(
            MalformedKind::DuplicateArgument,
            p.at,
            format!("parameter {:?} is given twice (a value is never silently overwritten)", p.key),
        ));
    }
    Ok(params)
}

fn given(frames: &[Frame<'_>]) -> Given {
    frames.last().map_or(Given::default(), |f| f.given)
}

impl<'a> Search<'a> {
    fn run(&mut self, from: usize) -> Result<Vec<Param<'a>>, Malformed> {
        let mut frames: Vec<Frame<'a>> = Vec::new();
        let mut q = from;
        loop {
            let state = (q, given(&frames));
            if !self.failed.contains(&state) {
                match self.top(q, &frames) {
                    Top::Done => return Ok(frames.into_iter().map(|f| f.param).collect()),
                    Top::Param(at, op, Known { index, strict }) => {
                        let start = at + op.len;
                        let param = Param { key: op.key, attrs: op.attrs, at, value: start..start };
                        let given = match index {
                            Some(i) => state.1.with(i),
                            None if strict => state.1.with_key(op.key),
                            None => state.1,
                        };
                        *self.stacked.entry(op.key).or_default() += 1;
                        frames.push(Frame { q, param, given, cursor: start, strict });
                    }
                    Top::Junk => {
                        self.failed.insert(state);
                    }
                }
            }
            // The next candidate end of the innermost value; a value out of
            // candidates fails the state its parameter was read from.
            loop {
                if self.over_budget() {
                    return Err(Malformed::new(
                        MalformedKind::Layout,
                        from,
                        "the parameters are too ambiguous to read",
                    ));
                }
                if frames.is_empty() {
                    let (at, why) = std::mem::take(&mut self.furthest);
                    return Err(Malformed::new(MalformedKind::Layout, at, why));
                }
                if let Some(next) = self.next_end(&mut frames) {
                    q = next;
                    break;
                }
                if let Some(f) = frames.pop() {
                    self.unstack(f.param.key);
                    self.failed.insert((f.q, given(&frames)));
                }
            }
        }
    }

    /// Counts one candidate; whether the budget is spent.
    fn over_budget(&mut self) -> bool {
        self.spent += 1;
        self.spent > BUDGET
    }

    fn unstack(&mut self, key: &str) {
        if let Some(n) = self.stacked.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                self.stacked.remove(key);
            }
        }
    }

    fn junk(&mut self, at: usize, why: impl FnOnce() -> String) -> Top<'a> {
        if at >= self.furthest.0 {
            self.furthest = (at, why());
        }
        Top::Junk
    }

    /// What the call holds at top-level position `q`, between values.
    fn top(&mut self, q: usize, frames: &[Frame<'a>]) -> Top<'a> {
        let text = self.text;
        let p = q + (text.len() - q - text[q..].trim_start().len());
        if p == text.len() {
            // A layout with an end tag needs it; a cut call needs a value (its name may be cut).
            if self.layout.end.is_some() || (self.cut && frames.is_empty()) {
                return self.junk(p, || "the call ends before it is complete".to_owned());
            }
            return Top::Done;
        }
        if let Some(end) = self.layout.end.filter(|e| text[p..].starts_with(e)) {
            let rest = &text[p + end.len()..];
            if rest.trim().is_empty() {
                return Top::Done;
            }
            return self.junk(p + end.len(), || format!("unexpected text after {end}: {}", excerpt(rest)));
        }
        if let Some(op) = (self.layout.opener)(&text[p..]) {
            match self.acceptable(&op, frames, p, false) {
                Some(index) => return Top::Param(p, op, index),
                None => return self.junk(p, || format!("{:?} is not a parameter the call can take here", op.key)),
            }
        }
        self.junk(p, || format!("unexpected text at byte {p}: {}", excerpt(&text[p..])))
    }

    /// Whether the opener at `at` opens a parameter (see `opens`).
    fn acceptable(&mut self, op: &Opener<'_>, frames: &[Frame<'_>], at: usize, implicit: bool) -> Option<Known> {
        #[cfg(test)]
        {
            self.looked += 1;
        }
        let given = given(frames);
        let line_start = || line_start(self.text.as_bytes(), at);
        let stacked = |key: &str| self.stacked.contains_key(key);
        opens(self.tool, op.key, frames.is_empty(), |i| given.has(i, || stacked(op.key)), stacked, line_start, implicit)
    }

    /// Sets the innermost value's end to its next candidate and returns the
    /// top-level position after it; `None` when it has no candidate left.
    fn next_end(&mut self, frames: &mut [Frame<'a>]) -> Option<usize> {
        let text = self.text;
        loop {
            let cursor = frames.last()?.cursor;
            let first = |v: &[usize]| v.get(v.partition_point(|&i| i < cursor)).copied();
            let close = first(&self.closes);
            let open = first(&self.opens);
            let end = first(&self.ends);
            // Every value ends at a tag: one that runs to the end of the body lost its
            // closer (a closer spelled in the value ended the block early), so the call
            // is not what the model wrote.
            let at = [close, open, end].into_iter().flatten().min()?;
            let frame_count = frames.len();
            let last = &frames[frame_count - 1];
            if last.strict && (close != Some(at) || last.cursor > last.param.value.start) {
                return None; // a key the schema lacks ends at its first closer, or is no parameter
            }
            frames[frame_count - 1].cursor = at + 1;
            let (value_end, next) = if close == Some(at) {
                (at, at + self.layout.close.len())
            } else if open == Some(at) {
                // A parameter opener where the value's closer is missing.
                let op = (self.layout.opener)(&text[at..]);
                if op.is_none_or(|op| self.acceptable(&op, frames, at, true).is_none()) {
                    if self.over_budget() {
                        return None; // the search ends at its next look at the budget
                    }
                    continue;
                }
                (at, at)
            } else {
                (at, at)
            };
            let frame = &mut frames[frame_count - 1];
            frame.param.value.end = value_end;
            return Some(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::Schemas;
    use super::super::xml::QWEN;
    use super::*;
    use serde_json::json;

    fn read(text: &str, schema: bool) -> Result<Vec<(String, String)>, MalformedKind> {
        let schemas = Schemas::from_json(&json!({"f": {"properties": {"path": {}, "content": {}}}}));
        let tool = schema.then(|| schemas.tool("f")).flatten();
        params(text, 0, &QWEN, tool, false)
            .map(|ps| ps.into_iter().map(|p| (p.key.to_owned(), text[p.value].to_owned())).collect())
            .map_err(|m| m.kind)
    }

    #[test]
    fn closers_count_only_when_the_rest_parses() {
        let text = "<parameter=content>\na\n</parameter>\nb\n</parameter>\n</function>\n";
        assert_eq!(read(text, false).unwrap(), [("content".into(), "\na\n</parameter>\nb\n".into())]);
    }

    #[test]
    fn schema_openers_of_given_or_unknown_parameters_are_text() {
        let text = "<parameter=path>\nx\n</parameter>\n<parameter=content>\n<parameter=path>\ny\n</parameter>\n<parameter=other>\nz\n</parameter>\nend\n</parameter>\n</function>";
        let got = read(text, true).unwrap();
        assert_eq!(got[1].1, "\n<parameter=path>\ny\n</parameter>\n<parameter=other>\nz\n</parameter>\nend\n");
        assert_eq!(read(text, false).unwrap_err(), MalformedKind::DuplicateArgument, "without a schema: malformed");
    }

    #[test]
    fn a_parameter_the_schema_lacks_is_one_when_it_closes_and_the_call_parses() {
        // GLM-4.5 passes `date` beside the schema's `city`.
        let text = "<parameter=path>\nx\n</parameter>\n<parameter=date>\n2025-08-01\n</parameter>\n<parameter=content>\nc\n</parameter>\n</function>";
        let keys: Vec<String> = read(text, true).unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["path", "date", "content"]);
        let twice = "<parameter=path>\nx\n</parameter>\n<parameter=d>\n1\n</parameter>\n<parameter=d>\n2\n</parameter>\n</function>";
        let got = read(twice, true).unwrap();
        assert_eq!(got.len(), 2, "a key the schema lacks opens once: never a duplicate: {got:?}");
        let unclosed =
            "<parameter=path>\nx\n</parameter>\n<parameter=d>\n1\n<parameter=content>\nc\n</parameter>\n</function>";
        let keys: Vec<String> = read(unclosed, true).unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["path", "content"], "a key the schema lacks must close its own value");
    }

    #[test]
    fn missing_closers_end_at_a_line_start_opener() {
        let text = "<parameter=path>x\n<parameter=content>use <parameter=q> here\n</parameter>\n</function>";
        let got = read(text, false).unwrap();
        assert_eq!(got, [("path".into(), "x\n".into()), ("content".into(), "use <parameter=q> here\n".into())]);
    }

    #[test]
    fn given_parameters_past_the_exact_set_are_known_by_key() {
        // Past a tool's first 128 parameters, whether one was given is the stack's key count.
        let keys: Vec<String> = (0..300).map(|i| format!("p{i}")).collect();
        let props: serde_json::Map<String, serde_json::Value> = keys.iter().map(|k| (k.clone(), json!({}))).collect();
        let schemas = Schemas::from_json(&json!({"f": {"properties": props}}));
        let param = |k: &str, v: &str| format!("<parameter={k}>\n{v}\n</parameter>\n");
        let all: String = keys.iter().map(|k| param(k, "v")).collect::<String>() + "</function>";
        let got = params(&all, 0, &QWEN, schemas.tool("f"), false).unwrap();
        assert_eq!(got.iter().map(|p| p.key).collect::<Vec<_>>(), keys);
        let twice = format!("{}{}{}</function>", param("p5", "a"), param("p250", "1"), param("p250", "2"));
        let got = params(&twice, 0, &QWEN, schemas.tool("f"), false).unwrap();
        assert_eq!(got.len(), 2, "p250 was given: its second opener is text of its value");
        assert_eq!(&twice[got[1].value.clone()], "\n1\n</parameter>\n<parameter=p250>\n2\n");
        let err = params(&twice, 0, &QWEN, None, false).unwrap_err();
        assert_eq!(err.kind, MalformedKind::DuplicateArgument, "without a schema: malformed");
    }

    #[test]
    fn openers_passed_over_as_text_count_against_the_budget() {
        // Every `b` opener after the first is text of its value (b is given), and the
        // call never ends: each candidate end of `a` walked all of them, uncounted.
        let schemas = Schemas::from_json(&json!({"f": {"properties": {"a": {}, "b": {}}}}));
        let text = "<parameter=a>\n".to_owned() + &"<parameter=b>\nx\n".repeat(20_000);
        let (layout, tool) = (&QWEN, schemas.tool("f"));
        let at = |pat: &str| text.match_indices(pat).map(|(i, _)| i).collect::<Vec<_>>();
        let mut s = Search {
            text: &text,
            layout,
            tool,
            cut: true,
            opens: at(layout.open),
            closes: at(layout.close),
            ends: layout.end.map(at).unwrap_or_default(),
            failed: HashSet::new(),
            stacked: HashMap::new(),
            furthest: (0, String::new()),
            spent: 0,
            looked: 0,
        };
        assert_eq!(s.run(0).unwrap_err().kind, MalformedKind::Layout);
        // The one over budget in `next_end`, then the search's own look at it.
        assert!(s.spent <= BUDGET + 2, "{} candidates tried", s.spent);
        assert!(s.looked <= 2 * BUDGET, "{} openers looked at", s.looked);
    }

    #[test]
    fn ambiguity_is_bounded() {
        let text = "<parameter=a>".to_owned() + &"\n<parameter=b>\n</parameter>".repeat(3000) + "x";
        assert!(read(&text, false).is_err());
    }
}
