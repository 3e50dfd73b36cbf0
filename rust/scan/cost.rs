//! The scanner's cost on the serving bench's stream (`benches/bench_serving.py`):
//! hermes prose with a call block every ~70 tokens, tokenised as the bench does.
//! The tests here check the workload reads as it should; `benches/callgrind_scan.py`
//! runs them under callgrind, counting only the `#[inline(never)]` functions below,
//! to report instructions per token (prose, body, whole stream) and per body parse.
//! `INERT_COST_REPS` repeats each workload (default 1), so fixed costs wash out.

use super::body::Schemas;
use super::formats::builtin;
use super::scanner::{BlockBody, ScanEvent, ScanState, Scanner, TokenRole};
use super::Item;
use std::hint::black_box;
use std::ops::Range;

const PROSE: &str = "The forecast says light rain later today, so take an umbrella. ";
const BLOCK: &str = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"weather in Paris\"}}\n</tool_call>\n";

/// `re.findall(r"\w+|\s+|[^\w\s]", text)` for ASCII text: the bench's pieces.
fn pieces(text: &str) -> Vec<&str> {
    let class = |b: u8| {
        if b.is_ascii_alphanumeric() || b == b'_' {
            0
        } else if b.is_ascii_whitespace() {
            1
        } else {
            2
        }
    };
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let c = class(bytes[at]);
        let mut end = at + 1;
        while c != 2 && end < bytes.len() && class(bytes[end]) == c {
            end += 1;
        }
        out.push(&text[at..end]);
        at = end;
    }
    out
}

fn reps() -> usize {
    std::env::var("INERT_COST_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(1)
}

/// The live text of `pieces` and each token's range in it.
fn layout(pieces: &[&str]) -> (Vec<u8>, Vec<Range<usize>>) {
    let mut text = Vec::new();
    let mut tokens = Vec::new();
    for p in pieces {
        let start = text.len();
        text.extend_from_slice(p.as_bytes());
        tokens.push(start..text.len());
    }
    (text, tokens)
}

/// Scans every token from `state`, each from the state the last left, as a turn
/// does, keeping the events; counted per token by the callgrind bench.
#[inline(never)]
fn scan_tokens(s: &Scanner, state: &mut ScanState, text: &[u8], tokens: &[Range<usize>], out: &mut Vec<ScanEvent>) {
    for t in tokens {
        s.scan(state, text, t.clone(), TokenRole::IdText, out);
    }
}

/// Reads a block body; counted per parse by the callgrind bench.
#[inline(never)]
fn parse_body(s: &Scanner, text: &[u8], body: Range<usize>) -> Vec<Item> {
    s.read_body(text, body)
}

fn scanner() -> Scanner {
    Scanner::new(builtin("hermes").expect("hermes is built in"), Schemas::default(), 1 << 20)
}

/// Scans `before` once, then `text` `reps()` times from the state `before` left,
/// both cut as the bench cuts them; returns the events of one pass over `text`.
fn scan_workload(before: &str, text: &str) -> Vec<ScanEvent> {
    let s = scanner();
    let (mut live, head) = layout(&pieces(before));
    let mut state = s.initial();
    let mut events = Vec::new();
    scan_tokens(&s, &mut state, &live, &head, &mut events);
    events.clear();
    let base = live.len();
    let (rest, tokens) = layout(&pieces(text));
    live.extend_from_slice(&rest);
    let tokens: Vec<_> = tokens.into_iter().map(|t| base + t.start..base + t.end).collect();
    for _ in 0..reps() {
        events.clear();
        let mut again = state;
        scan_tokens(&s, &mut again, black_box(&live), &tokens, &mut events);
        black_box(again);
    }
    events
}

/// The bench's block body: from after its opener to its closer.
fn body() -> &'static str {
    BLOCK.strip_prefix("<tool_call>").and_then(|b| b.split("</tool_call>").next()).unwrap_or_default()
}

#[test]
fn prose_tokens() {
    assert_eq!(pieces(PROSE).len(), 24);
    assert!(scan_workload("", &PROSE.repeat(30)).is_empty(), "prose changes nothing");
}

#[test]
fn body_tokens() {
    let events = scan_workload("<tool_call>", &body().repeat(30));
    assert!(events.is_empty(), "body tokens before the closer change nothing: {events:?}");
}

#[test]
fn stream_tokens() {
    let stream = format!("{}{BLOCK}", PROSE.repeat(3)).repeat(4);
    let ended = scan_workload("", &stream)
        .into_iter()
        .filter(|e| matches!(e, ScanEvent::Ended { body: BlockBody::Unread(_), confirmed: true, .. }))
        .count();
    assert_eq!(ended, 4);
}

#[test]
fn body_parses() {
    let s = scanner();
    let text = BLOCK.as_bytes();
    let start = "<tool_call>".len();
    let body = start..start + body().len();
    let mut items = Vec::new();
    for _ in 0..reps() {
        items = black_box(parse_body(&s, black_box(text), body.clone()));
    }
    let [Ok(call)] = items.as_slice() else { panic!("one call: {items:?}") };
    assert_eq!((call.name.as_str(), call.raw_arguments.as_str()), ("search", "{\"q\": \"weather in Paris\"}"));
}
