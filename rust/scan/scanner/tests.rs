use super::*;
use crate::scan::formats::{builtin, NAMES};
use crate::scan::samples::samples;
use serde_json::json;

fn scanner(name: &str, max: usize) -> Scanner {
    Scanner::new(builtin(name).unwrap(), Schemas::default(), max)
}

/// Scans `pieces` as accepted text tokens, then ends the turn; returns (calls, malformed reasons).
fn run(s: &Scanner, pieces: &[&[u8]]) -> (Vec<Call>, Vec<String>) {
    let mut st = s.initial();
    let mut text = Vec::new();
    let mut out = Vec::new();
    for p in pieces {
        let start = text.len();
        text.extend_from_slice(p);
        s.scan(&mut st, &text, start..text.len(), TokenRole::Text, &mut out);
    }
    out.extend(s.finish(&st, &text));
    let mut calls = Vec::new();
    let mut bad = Vec::new();
    for e in out {
        match e {
            ScanEvent::Ended { body: Ok(c), .. } => calls.extend(c),
            ScanEvent::Ended { body: Err(m), .. } => bad.push(m.message),
            ScanEvent::Opened { .. } | ScanEvent::Confirmed => {}
        }
    }
    (calls, bad)
}

fn whole(name: &str, text: &str) -> (Vec<Call>, Vec<String>) {
    run(&scanner(name, 1 << 20), &[text.as_bytes()])
}

#[test]
fn every_format_has_a_sample_and_reads_two_calls() {
    let names: Vec<_> = samples().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, NAMES);
    for (name, text) in samples() {
        let (calls, bad) = whole(name, &text);
        assert!(bad.is_empty(), "{name}: {bad:?}");
        let got: Vec<_> = calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(got, ["a", "b"], "{name}");
        assert!(calls[1].arguments.is_empty(), "{name}: {:?}", calls[1]);
        assert_eq!(calls[0].arguments.len(), 1, "{name}: {:?}", calls[0]);
    }
}

#[test]
fn every_split_gives_the_same_calls_in_every_format() {
    for (name, text) in samples() {
        let s = scanner(name, 1 << 20);
        let bytes = text.as_bytes();
        let expected = run(&s, &[bytes]);
        for cut in 0..=bytes.len() {
            assert_eq!(run(&s, &[&bytes[..cut], &bytes[cut..]]), expected, "{name} cut at {cut}");
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(run(&s, &singles), expected, "{name} byte by byte");
    }
}

#[test]
fn delimiter_inside_json_string_is_text() {
    let (calls, _) = whole("hermes", &samples()[0].1);
    assert_eq!(calls[0].arguments["q"], "</tool_call><tool_call>");
}

#[test]
fn qwen_literal_closer_inside_a_value_counts_only_with_structure_after() {
    let (calls, _) = whole("qwen3_coder", &samples()[1].1);
    assert_eq!(calls[0].arguments["q"], "a </parameter> b");
}

#[test]
fn structural_formats_wait_for_confirmation() {
    let s = scanner("pythonic", 1 << 20);
    let mut st = s.initial();
    let mut out = Vec::new();
    let text = b"[a(q=1)] ";
    s.scan(&mut st, text, 0..8, TokenRole::Text, &mut out);
    assert!(
        matches!(out.as_slice(), [ScanEvent::Opened { .. }, ScanEvent::Ended { end: 8, body: Ok(calls), confirmed: false }] if calls[0].name == "a"),
        "complete, not yet confirmed: {out:?}"
    );
    s.scan(&mut st, text, 8..9, TokenRole::Text, &mut out);
    assert_eq!(out[2], ScanEvent::Confirmed, "{out:?}");
}

#[test]
fn anchored_formats_need_the_message_start() {
    assert!(whole("llama3_json", "Sure: {\"name\": \"a\"}").0.is_empty());
    assert_eq!(whole("llama3_json", "  {\"name\": \"a\"}").0.len(), 1);
    assert!(whole("xlam", "see [1, 2]").0.is_empty());
    assert_eq!(whole("xlam", "<think>x</think>\n[{\"name\": \"a\"}]").0.len(), 1);
    assert_eq!(whole("pythonic", "<|python_start|>[a()]<|python_end|>").0.len(), 1);
}

#[test]
fn sections_scope_the_calls() {
    let outside = "<invoke name=\"a\">\n</invoke>";
    assert!(whole("minimax_m2", outside).0.is_empty());
    let kimi = "<|tool_call_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>";
    assert_eq!(whole("kimi_k2", kimi).0[0].id.as_deref(), Some("functions.a:0"));
}

#[test]
fn schemas_type_xml_values() {
    let schemas = Schemas::from_json(&json!({"a": {"properties": {"q": {"type": "integer"}}}}));
    let s = Scanner::new(builtin("glm45").unwrap(), schemas, 1 << 20);
    let (calls, _) = run(&s, &[samples()[9].1.as_bytes()]);
    assert_eq!(calls[0].arguments["q"], json!(1));
    let (untyped, _) = whole("glm45", &samples()[9].1);
    assert_eq!(untyped[0].arguments["q"], json!("1"));
}

#[test]
fn truncated_and_invalid_blocks_are_malformed() {
    for (name, text) in samples() {
        // Cut inside the second call: it must never appear, and nothing panics.
        let at = text.char_indices().map(|(i, _)| i).rev().find(|&i| i < text.len() * 2 / 3).unwrap();
        let (calls, _) = whole(name, &text[..at]);
        assert!(calls.len() < 2, "{name}: a truncated call was reported: {calls:?}");
    }
    for name in ["hermes", "jamba", "qwen3_coder", "llama3_json", "pythonic", "granite"] {
        let text = samples().into_iter().find(|(n, _)| *n == name).unwrap().1;
        let (calls, bad) = whole(name, &text[..text.len() / 3]);
        assert!(calls.is_empty() && bad.len() == 1 && bad[0].contains("never closed"), "{name}: {calls:?} {bad:?}");
    }
    let s = scanner("hermes", 1 << 20);
    let (_, bad) = run(&s, &[b"<tool_call>{\"name\": \"f\xff\"}</tool_call>"]);
    assert!(bad[0].contains("UTF-8"), "{bad:?}");
}

#[test]
fn oversized_block_is_reported_once_and_skipped() {
    let big = format!("<tool_call>{{\"name\": \"f\", \"arguments\": {{\"x\": \"{}\"}}}}</tool_call>", "y".repeat(100));
    let s = scanner("hermes", 64);
    let (calls, bad) = run(&s, &[big.as_bytes(), b"<tool_call>{\"name\": \"g\"}</tool_call>"]);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("max_block_bytes"));
    assert_eq!(calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["g"]);
    let s = scanner("granite", 32);
    let (calls, bad) = run(
        &s,
        &[format!("<tool_call>[{{\"name\": \"{}\"}}] <tool_call>[{{\"name\": \"g\"}}] ", "f".repeat(50)).as_bytes()],
    );
    assert_eq!((calls.len(), bad.len()), (1, 1), "structural overflow skips to the structural end");
}

#[test]
fn special_tokens_delimit_atomically() {
    let s = scanner("hermes", 1 << 20);
    let mut st = s.initial();
    let mut out = Vec::new();
    let mut text = Vec::new();
    let mut feed = |p: &[u8], role| {
        let start = text.len();
        text.extend_from_slice(p);
        s.scan(&mut st, &text, start..text.len(), role, &mut out);
    };
    let open = s.role_of_special(b"<tool_call>");
    let close = s.role_of_special(b"</tool_call>");
    assert_eq!(open, TokenRole::Delimiter(Role::CallOpen));
    feed(b"<tool_", TokenRole::Text);
    feed(b"<tool_call>", open);
    feed(b"{\"name\": \"</tool_call>\"}", TokenRole::Text);
    feed(b"</tool_call>", close);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0], ScanEvent::Opened { delimiter_start: 6 });
    assert!(
        matches!(&out[1], ScanEvent::Ended { body: Ok(calls), confirmed: true, .. } if calls[0].name == "</tool_call>")
    );
}
