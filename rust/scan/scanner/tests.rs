use super::*;
use crate::scan::formats::{builtin, NAMES};
use crate::scan::samples::samples;
use crate::scan::Call;
use crate::test_rng::Rng;
use serde_json::json;

fn scanner(name: &str, max: usize) -> Scanner {
    Scanner::new(builtin(name).unwrap(), Schemas::default(), max)
}

/// `out` with every unread block body read from `text` (nothing was rolled back).
fn read_all(s: &Scanner, text: &[u8], out: Vec<ScanEvent>) -> Vec<ScanEvent> {
    out.into_iter()
        .map(|e| match e {
            ScanEvent::Ended { end, body: BlockBody::Unread(body), confirmed } => {
                ScanEvent::Ended { end, body: BlockBody::Read(s.read_body(text, body)), confirmed }
            }
            e => e,
        })
        .collect()
}

/// An ended block's items, read.
fn items(body: &BlockBody) -> &[Item] {
    match body {
        BlockBody::Read(items) => items,
        BlockBody::Unread(_) => panic!("read_all first"),
    }
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
    for e in read_all(s, &text, out) {
        if let ScanEvent::Ended { body, .. } = e {
            for item in items(&body).iter().cloned() {
                match item {
                    Ok(c) => calls.push(c),
                    Err(m) => bad.push(m.message),
                }
            }
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
    out = read_all(&s, text, out);
    assert!(
        matches!(out.as_slice(), [ScanEvent::Opened { .. }, ScanEvent::Ended { end: 8, body, confirmed: false }] if items(body)[0].as_ref().unwrap().name == "a"),
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

/// Every event of scanning `text` in tokens of `width` bytes, in order.
fn events_in_tokens(s: &Scanner, text: &[u8], width: usize) -> Vec<ScanEvent> {
    let (mut st, mut out) = (s.initial(), Vec::new());
    for start in (0..text.len()).step_by(width) {
        s.scan(&mut st, text, start..(start + width).min(text.len()), TokenRole::Text, &mut out);
    }
    out.extend(s.finish(&st, text));
    read_all(s, text, out)
}

/// Tokens inside a body's string skip the body's byte loop (`passes_in_body`);
/// the byte limit must still fall on the same byte whatever the tokens, including
/// a token that crosses it and one that ends exactly on it.
#[test]
fn string_tokens_meet_the_byte_limit_where_bytes_do() {
    let text = format!(
        "<tool_call>{{\"name\": \"f\", \"arguments\": {{\"x\": \"{}\"}}}}</tool_call><tool_call>{{\"name\": \"g\"}}</tool_call>",
        "y".repeat(100)
    );
    for limit in [40, 63, 64, 65, 1 << 20] {
        let s = scanner("hermes", limit);
        let whole = events_in_tokens(&s, text.as_bytes(), text.len());
        for width in 1..=9 {
            assert_eq!(events_in_tokens(&s, text.as_bytes(), width), whole, "limit {limit}, width {width}");
        }
    }
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
    feed(b"{\"name\": \"f\", \"arguments\": {\"s\": \"</tool_call>\"}}", TokenRole::Text);
    feed(b"</tool_call>", close);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0], ScanEvent::Opened { delimiter_start: 6, body_start: 17 });
    let out = read_all(&s, &text, out);
    assert!(
        matches!(&out[1], ScanEvent::Ended { body, confirmed: true, .. } if items(body)[0].as_ref().unwrap().arguments["s"] == "</tool_call>")
    );
}

/// Scans `pieces` (each with its role) from `state`; returns every event.
fn events(s: &Scanner, pieces: &[(&[u8], TokenRole)]) -> Vec<ScanEvent> {
    let mut st = s.initial();
    let mut text = Vec::new();
    let mut out = Vec::new();
    for (p, role) in pieces {
        let start = text.len();
        text.extend_from_slice(p);
        s.scan(&mut st, &text, start..text.len(), *role, &mut out);
    }
    out.extend(s.finish(&st, &text));
    read_all(s, &text, out)
}

fn names(calls: &[Call]) -> Vec<&str> {
    calls.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn calls_inside_reasoning_are_thoughts() {
    let hermes =
        "<think>maybe <tool_call>{\"name\": \"rm\"}</tool_call> no</think><tool_call>{\"name\": \"ls\"}</tool_call>";
    assert_eq!(names(&whole("hermes", hermes).0), ["ls"]);
    let mistral = "[THINK]maybe [TOOL_CALLS]rm{}[/THINK][TOOL_CALLS]ls{}";
    assert_eq!(names(&whole("mistral", mistral).0), ["ls"]);
    let xlam = "<think>[{\"name\": \"rm\"}]</think>[{\"name\": \"ls\"}]";
    assert_eq!(names(&whole("xlam", xlam).0), ["ls"], "leaving reasoning arms anchored formats");
    let harmony = "<|channel|>analysis<|message|>call to=functions.rm now?<|end|><|start|>assistant<|channel|>analysis to=functions.ls code<|message|>{}<|call|>";
    assert_eq!(names(&whole("openai", harmony).0), ["ls"], "a recipient makes a call on any channel");
    let granite = "<think><|tool_call|>[{\"name\": \"rm\"}]";
    assert_eq!(names(&whole("granite", granite).0), ["rm"], "granite reasons in prose: no delimiters");
}

#[test]
fn a_turn_can_start_in_reasoning_and_a_stray_closer_is_reported() {
    let text = "thinking <tool_call>{\"name\": \"rm\"}</tool_call></think><tool_call>{\"name\": \"ls\"}</tool_call>";
    let mut s = scanner("hermes", 1 << 20);
    s.start_in_reasoning(true);
    assert_eq!(names(&run(&s, &[text.as_bytes()]).0), ["ls"]);
    let plain = scanner("hermes", 1 << 20);
    let out = events(&plain, &[(text.as_bytes(), TokenRole::Text)]);
    let unopened: Vec<_> = out.iter().filter(|e| matches!(e, ScanEvent::ReasoningUnopened { .. })).collect();
    let at = text.find("</think>").unwrap();
    assert_eq!(unopened, [&ScanEvent::ReasoningUnopened { delimiter: at..at + 8 }]);
    let harmony = events(
        &scanner("openai", 1 << 20),
        &[(b"<|start|>assistant<|channel|>final<|message|>hi<|end|>", TokenRole::Text)],
    );
    assert!(harmony.is_empty(), "<|end|> ends every Harmony message: {harmony:?}");
}

#[test]
fn a_kimi_section_token_ends_reasoning_but_its_spelling_does_not() {
    let s = scanner("kimi_k2", 1 << 20);
    let call =
        b"<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>";
    let open = s.role_of_special(b"<|tool_calls_section_begin|>");
    let by_id = events(
        &s,
        &[(b"<think>let me", TokenRole::Text), (b"<|tool_calls_section_begin|>", open), (call, TokenRole::Text)],
    );
    assert!(by_id.iter().any(|e| matches!(e, ScanEvent::Ended { body, .. } if items(body)[0].is_ok())), "{by_id:?}");
    let by_text =
        events(&s, &[(b"<think>let me<|tool_calls_section_begin|>", TokenRole::Text), (call, TokenRole::Text)]);
    assert!(!by_text.iter().any(|e| matches!(e, ScanEvent::Ended { .. })), "{by_text:?}");
    let hermes = scanner("hermes", 1 << 20);
    let tool_call = hermes.role_of_special(b"<tool_call>");
    let other = events(
        &hermes,
        &[
            (b"<think>", TokenRole::Text),
            (b"<tool_call>", tool_call),
            (b"{\"name\": \"f\"}</tool_call>", TokenRole::Text),
        ],
    );
    assert!(
        !other.iter().any(|e| matches!(e, ScanEvent::Ended { .. })),
        "only Kimi's models call from thinking: {other:?}"
    );
}

#[test]
fn a_raw_value_holding_a_whole_call_keeps_the_outer_call() {
    let inner = "<tool_call>\n<function=g>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>";
    let text =
        format!("<tool_call>\n<function=f>\n<parameter=code>\n{inner}\nmore\n</parameter>\n</function>\n</tool_call>");
    let schemas = Schemas::from_json(&json!({"f": {"properties": {"code": {"type": "string"}}}}));
    let (calls, bad) = run(&Scanner::new(builtin("qwen3_coder").unwrap(), schemas, 1 << 20), &[text.as_bytes()]);
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(calls[0].arguments["code"], format!("{inner}\nmore"));
    // Without a schema the inner line-start opener counts (the rest stays well formed):
    // the block still ends at the outer closer, and never takes the inner call's arguments.
    let (calls, _) = whole("qwen3_coder", &text);
    assert_eq!((calls.len(), calls[0].name.as_str()), (1, "f"));
    let glm = "<tool_call>f<arg_key>s</arg_key><arg_value>a <tool_call>g<arg_key>x</arg_key><arg_value>1</arg_value></tool_call> b</arg_value></tool_call>";
    assert_eq!(
        whole("glm45", glm).0[0].arguments["s"],
        "a <tool_call>g<arg_key>x</arg_key><arg_value>1</arg_value></tool_call> b"
    );
    let m2 = "<minimax:tool_call><invoke name=\"f\"><parameter name=\"s\">a </invoke> b</parameter></invoke></minimax:tool_call>";
    assert_eq!(whole("minimax_m2", m2).0[0].arguments["s"], "a </invoke> b", "a lone closer inside a value is text");
}

#[test]
fn a_special_closer_makes_its_spelling_by_id_text_in_raw_bodies() {
    let mut s = scanner("qwen3_coder", 1 << 20);
    s.bind_closer_by_id();
    let close = s.role_of_special(b"</tool_call>");
    let out = events(
        &s,
        &[
            (b"<tool_call>\n<function=f>\n<parameter=s>\nx\n</parameter>\n</function>\n", TokenRole::IdText),
            (b"</tool_call>", TokenRole::IdText),
            (b"\n</parameter>\n</function>\n", TokenRole::IdText),
            (b"</tool_call>", close),
        ],
    );
    let ended: Vec<_> = out.iter().filter(|e| matches!(e, ScanEvent::Ended { .. })).collect();
    assert_eq!(ended.len(), 1, "{out:?}");
    let text_pieces = events(&s, &[(b"<tool_call>\n<function=f>\n</function>\n</tool_call>", TokenRole::Text)]);
    assert!(text_pieces.iter().any(|e| matches!(e, ScanEvent::Ended { .. })), "pieces given as text still close");
}

#[test]
fn new_layouts() {
    assert_eq!(
        names(&whole("phi4_mini_json", "Sure: functools[{\"name\": \"a\"}, {\"name\": \"b\"}] ok").0),
        ["a", "b"]
    );
    assert!(whole("phi4_mini_json", "[{\"name\": \"a\"}]").0.is_empty(), "functools arms, the message start does not");
    assert!(whole("phi4_mini_json", "use functools.partial([{\"name\": \"a\"}])").0.is_empty());
    let olmo = "<function_calls>get(city='SF')\nput(k=1, ok=true)</function_calls>";
    assert_eq!(names(&whole("pythonic", olmo).0), ["get", "put"]);
    let intern = "<|action_start|> <|plugin|>\n{\"name\": \"a\", \"parameters\": {}}\n<|action_end|>";
    assert_eq!(names(&whole("internlm", intern).0), ["a"]);
}

#[test]
fn a_section_of_text_without_calls_is_malformed() {
    let (calls, bad) = whole("deepseek_v31", "<｜tool▁calls▁begin｜>foo<｜tool▁sep｜>{}<｜tool▁calls▁end｜>");
    assert!(calls.is_empty() && bad.len() == 1 && bad[0].contains("no call"), "{bad:?}");
    assert_eq!(whole("deepseek_v31", "x<｜tool▁calls▁begin｜>get_weather").1.len(), 1, "cut before any call");
    assert_eq!(whole("kimi_k2", "<|tool_calls_section_begin|> <|tool_calls_section_end|>"), (vec![], vec![]));
}

#[test]
fn the_end_of_the_turn_confirms_a_complete_body() {
    assert_eq!(names(&whole("hermes", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"t\": true}}\n").0), ["f"]);
    let (calls, bad) = whole("hermes", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"t\": true}\n");
    assert!(calls.is_empty() && bad[0].contains("never closed"), "{bad:?}");
    let (calls, bad) = whole("xlam", "[{\"name\": \"a\"}, {\"name\": \"b\", \"argu");
    assert_eq!((names(&calls), bad.len()), (vec!["a"], 1), "a cut list keeps its complete calls");
    assert_eq!(
        names(&whole("qwen3_coder", "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n").0),
        ["f"]
    );
    assert!(whole("qwen3_coder", "<tool_call>\n<function=f>\n<parameter=a>\n1\n").0.is_empty());
}

#[test]
fn a_block_ended_early_by_a_closer_in_its_value_is_malformed_never_truncated() {
    // A lone </function> then a lone </tool_call> in a value: by text the block ends there.
    let text = "<tool_call>\n<function=f>\n<parameter=s>\nx </function> y </tool_call> z\n</parameter>\n</function>\n</tool_call>";
    let (calls, bad) = whole("qwen3_coder", text);
    assert!(calls.is_empty() && bad.len() == 1, "{calls:?} {bad:?}");
    let m2 =
        "<minimax:tool_call><invoke name=\"f\"><parameter name=\"s\">a </parameter> b </invoke> c</parameter></invoke>";
    let (calls, bad) = whole("minimax_m2", m2);
    assert!(calls.is_empty() && bad.len() == 1, "{calls:?} {bad:?}");
}

/// A tiny deterministic generator for the grammar property below.
/// The event grammar over random text (slices of every format's sample glued together,
/// UTF-8 cut anywhere) in random chunks: each `Opened` is followed by one `Ended` before
/// the next; `Confirmed` only for a block awaiting it; and at the end of the turn no block
/// is left open or unconfirmed: a block the turn cut ends there with at least one item (its
/// call if the body was complete, else why it is malformed), never silently.
#[test]
fn no_block_is_left_open_at_the_end_of_the_turn() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for (name, sample) in samples() {
        let s = scanner(name, 256);
        let bytes = sample.as_bytes();
        for _ in 0..300 {
            let mut target = Vec::new();
            for _ in 0..=rng.below(4) {
                let a = rng.below(bytes.len());
                let b = a + rng.below(bytes.len() - a + 1);
                target.extend_from_slice(&bytes[a..b]);
            }
            let (mut st, mut out, mut text) = (s.initial(), Vec::new(), Vec::new());
            while text.len() < target.len() {
                let start = text.len();
                let end = (start + 1 + rng.below(8)).min(target.len());
                text.extend_from_slice(&target[start..end]);
                s.scan(&mut st, &text, start..end, TokenRole::Text, &mut out);
            }
            let during = out.len();
            out.extend(s.finish(&st, &text));
            let out = read_all(&s, &text, out);
            let (mut open, mut awaiting) = (false, false);
            for (i, e) in out.iter().enumerate() {
                match e {
                    ScanEvent::Opened { .. } => {
                        assert!(!open, "{name}: opened inside an open block: {target:?} {out:?}");
                        open = true;
                    }
                    ScanEvent::Ended { body, confirmed, .. } => {
                        assert!(open, "{name}: ended a block never opened: {target:?} {out:?}");
                        assert!(i < during || !items(body).is_empty(), "{name}: cut block with no item: {target:?}");
                        (open, awaiting) = (false, !confirmed);
                    }
                    ScanEvent::Confirmed => {
                        assert!(awaiting, "{name}: confirmed nothing: {target:?} {out:?}");
                        awaiting = false;
                    }
                    _ => {}
                }
            }
            assert!(!open && !awaiting, "{name}: a block left open at the end of the turn: {target:?} {out:?}");
        }
    }
}

#[test]
fn a_bracket_ended_block_ends_where_the_next_call_opens() {
    // Mistral arguments that are no object never complete a bracket: the next
    // `[TOOL_CALLS]` ends the block (it was swallowed whole before).
    let text = "[TOOL_CALLS]f[ARGS][1, 2] [TOOL_CALLS]g[ARGS]{\"a\": 1}";
    let s = scanner("mistral", 1 << 20);
    let bytes = text.as_bytes();
    for cut in 0..=bytes.len() {
        let (calls, bad) = run(&s, &[&bytes[..cut], &bytes[cut..]]);
        assert_eq!(calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["g"], "cut at {cut}");
        assert_eq!(bad.len(), 1, "cut at {cut}: {bad:?}");
    }
    let (calls, bad) = whole("mistral", "[TOOL_CALLS]f[ARGS]{\"a\": \"[TOOL_CALLS]\"}");
    assert_eq!((calls.len(), bad.len()), (1, 0), "an opener spelled in a string is text");
}

/// The quiet-token paths `scan` takes inline (`passes_over`, `passes_in_body`) and
/// the body loop of its own (`body_part`) leave the state and the events exactly as
/// the whole byte loop (`scan_token`) does, token after token, for every format's
/// sample and text meant to trip them (escapes, quotes in strings, closers split
/// across tokens, blocks that cross the byte limit), in every grouping and limit.
#[test]
fn fast_paths_scan_as_the_byte_loop_does() {
    let mut texts = samples();
    for extra in [
        "prose <tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"a \\\"b\\\\\" </tool_call>\"}}\n</tool_call> x <tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>",
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": \"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\"}}</tool_call>",
        "[f(a='x\\'y', b=\"q]\"), g(c=[1, (2, 3)])] after",
    ] {
        for name in ["hermes", "pythonic", "llama3_json", "mistral"] {
            texts.push((name, extra.into()));
        }
    }
    for (name, text) in texts {
        let text = text.as_bytes();
        for limit in [12, 30, 47, 1 << 20] {
            let s = scanner(name, limit);
            for width in 1..=7 {
                let (mut fast, mut slow) = (s.initial(), s.initial());
                let (mut fast_out, mut slow_out) = (Vec::new(), Vec::new());
                for start in (0..text.len()).step_by(width) {
                    let token = start..(start + width).min(text.len());
                    s.scan(&mut fast, text, token.clone(), TokenRole::IdText, &mut fast_out);
                    s.scan_token(&mut slow, text, token, TokenRole::IdText, &mut slow_out);
                    let at = format!("{name}, limit {limit}, width {width}, at {start}");
                    assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{at}");
                    assert_eq!(fast_out, slow_out, "{at}");
                }
            }
        }
    }
}
