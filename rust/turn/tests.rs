use super::*;
use crate::scan::formats::NAMES;
use crate::scan::samples::samples;
use crate::scan::{Call, MalformedKind};
use crate::test_rng::Rng;
use crate::turn::keys::CommitKey;
use std::sync::Arc;

fn hermes(turn: &str) -> TurnConfig {
    TurnConfig::builtin("hermes", turn, 1 << 20).unwrap()
}

fn turn() -> Turn {
    Turn::new(&hermes("turn"), [], []).unwrap()
}

fn pieces(text: &str, size: usize) -> Vec<&[u8]> {
    text.as_bytes().chunks(size).collect()
}

fn draft(t: &mut Turn, ps: &[&[u8]]) -> Vec<Outcome> {
    let toks: Vec<TokenIn<'_>> = ps.iter().map(|p| TokenIn::Piece(p)).collect();
    t.draft(&toks).unwrap()
}

/// The key `inert.commit_key(turn, pieces, ordinal)` computes.
fn key_of(turn: &str, pieces: &[&[u8]], ordinal: u32) -> CommitKey {
    let mut h = CommitHasher::new(turn);
    for p in pieces {
        h.absorb_piece(p);
    }
    h.key(ordinal)
}

/// Outcomes as short labels with the call name, for readable assertions.
fn labels(out: &[Outcome]) -> Vec<String> {
    out.iter()
        .map(|o| match o {
            Outcome::CallClosed(c) => format!("closed {}", c.call.name),
            Outcome::CallCommitted(c) => format!("committed {}", c.call.name),
            Outcome::CallRetracted(c) => format!("retracted {}", c.call.name),
            Outcome::BlockMalformed(m) => format!("malformed {}", m.error.kind.name()),
            Outcome::ReasoningUnopened(r) => format!("unopened {:?}", r.span),
        })
        .collect()
}

fn committed_calls(out: &[Outcome]) -> Vec<Call> {
    out.iter()
        .filter_map(|o| match o {
            Outcome::CallCommitted(c) => Some(c.call.clone()),
            _ => None,
        })
        .collect()
}

const CALL: &str = "ok <tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call> done";

#[test]
fn close_then_commit() {
    let mut t = turn();
    let out = draft(&mut t, &pieces(CALL, 5));
    let [Outcome::CallClosed(c)] = out.as_slice() else { panic!("{out:?}") };
    assert_eq!(c.call.name, "f");
    let last_byte = CALL.find("</tool_call>").unwrap() + "</tool_call>".len() - 1;
    assert_eq!(c.span, 0..last_byte / 5 + 1);
    let out = t.verify(t.undecided_len(), None).unwrap();
    assert_eq!(out, vec![Outcome::CallCommitted(c.clone())]);
    assert_eq!(t.accepted_text(), CALL.as_bytes());
}

#[test]
fn rejection_retracts_and_rebuilds() {
    let mut t = turn();
    let wrong = CALL.replace("\"x\": 1", "\"x\": 2");
    let ps = pieces(&wrong, 4);
    let out = draft(&mut t, &ps);
    let [Outcome::CallClosed(drafted)] = out.as_slice() else { panic!("{out:?}") };
    // Reject from the token holding the wrong digit.
    let bad = wrong.find("2}").unwrap() / 4;
    assert_eq!(t.verify(bad, None).unwrap(), vec![Outcome::CallRetracted(drafted.clone())]);
    let right = pieces(CALL, 4);
    let out = draft(&mut t, &right[bad..]);
    let [Outcome::CallClosed(c)] = out.as_slice() else { panic!("{out:?}") };
    assert_eq!((c.block, c.call.arguments["x"].as_i64()), (drafted.block, Some(1)));
    assert_ne!(c.key, drafted.key);
    assert_eq!(c.key, key_of("turn", &right[..c.span.end], 0));
    assert_eq!(labels(&t.verify(t.undecided_len(), None).unwrap()), ["committed f"]);
    assert_eq!(t.accepted_text(), CALL.as_bytes());
    assert!(!t.ledger().rejected_runs().is_empty());
}

#[test]
fn commit_key_is_the_same_whether_accepted_now_or_later() {
    let mut a = turn();
    let out = draft(&mut a, &pieces(CALL, 3));
    let Outcome::CallClosed(ca) = &out[0] else { panic!() };
    let mut b = turn();
    let mut kb = None;
    for p in pieces(CALL, 3) {
        let mut out = draft(&mut b, &[p]);
        out.extend(b.verify(1, None).unwrap());
        for o in out {
            if let Outcome::CallCommitted(c) = o {
                kb = Some(c.key);
            }
        }
    }
    assert_eq!(Some(ca.key), kb);
}

#[test]
fn opener_rejection_retires_the_block_silently() {
    let mut t = turn();
    draft(&mut t, &pieces("a <tool_call>{\"na", 4));
    assert_eq!(t.verify(1, None).unwrap(), vec![], "an open block announced nothing, so nothing is retracted");
    let out = draft(&mut t, &pieces("<tool_call>{\"name\": \"g\"}</tool_call>", 6));
    let [Outcome::CallClosed(c)] = out.as_slice() else { panic!("{out:?}") };
    assert_eq!(c.block, 1, "a new block");
}

#[test]
fn correction_is_accepted_and_can_close_a_block() {
    let mut t = turn();
    let body = "<tool_call>{\"name\": \"f\"}</tool_call";
    draft(&mut t, &[body.as_bytes(), b"!!"]);
    let out = t.verify(1, Some(TokenIn::Piece(b">"))).unwrap();
    assert_eq!(labels(&out), ["closed f", "committed f"]);
    assert_eq!((t.undecided_len(), t.accepted_len()), (0, 2));
}

#[test]
fn bad_verify_changes_nothing() {
    let mut t = turn();
    draft(&mut t, &pieces(CALL, 8));
    let before = (t.undecided_len(), t.ledger().len());
    assert!(matches!(t.verify(99, None), Err(CoreError::VerifyTooMany { .. })));
    assert!(matches!(t.verify(1, Some(TokenIn::Id(5))), Err(CoreError::UnknownTokenId { .. })));
    assert_eq!((t.undecided_len(), t.ledger().len()), before);
}

#[test]
fn special_token_ids_bind_to_delimiters() {
    let vocab = [(1, b"{\"name\": \"f\"}".to_vec()), (2, b"x".to_vec())];
    let special = [(151_657, b"<tool_call>".to_vec()), (151_658, b"</tool_call>".to_vec())];
    let mut t = Turn::new(&hermes("t"), vocab, special).unwrap();
    let out = t.draft(&[TokenIn::Id(2), TokenIn::Id(151_657), TokenIn::Id(1), TokenIn::Id(151_658)]).unwrap();
    let [Outcome::CallClosed(c)] = out.as_slice() else { panic!("{out:?}") };
    assert_eq!((c.span.clone(), c.call.name.as_str()), (1..4, "f"));
    assert_eq!(t.live_text(), b"x<tool_call>{\"name\": \"f\"}</tool_call>");
}

#[test]
fn finish_reports_unterminated_and_rejects_undecided() {
    let mut t = turn();
    draft(&mut t, &pieces("<tool_call>{\"name\": \"f\"", 5));
    t.verify(3, None).unwrap(); // through `>{"na`: the block is open
    draft(&mut t, &[b"zzz"]);
    let out = t.finish().unwrap();
    let [Outcome::BlockMalformed(m)] = out.as_slice() else { panic!("{out:?}") };
    assert_eq!((m.error.kind, m.error.offset), (MalformedKind::Unterminated, 4));
    assert_eq!(m.key, key_of("turn", &pieces("<tool_call>{\"name\": \"f\"", 5)[..3], 0));
    assert_eq!(t.token_state(t.ledger().len() - 1), Some(TokenState::Rejected));
    assert!(matches!(t.draft(&[TokenIn::Piece(b"x")]), Err(CoreError::Finished)));
}

type Confirm<'a> = &'a dyn Fn(&mut Turn) -> Vec<Outcome>;

/// Invariant 3 for formats whose blocks end on a bracket: the key is that of the
/// block's own last token, whatever confirms it, and rejecting only the
/// confirming token never retracts the block.
#[test]
fn a_structural_blocks_key_is_its_last_tokens_whatever_confirms_it() {
    let config = TurnConfig::builtin("llama3_json", "t", 1 << 20).unwrap();
    let call: [&[u8]; 2] = [b"{\"name\": \"get\", ", b"\"parameters\": {\"q\": 1}}"];
    let want = key_of("t", &call, 0);
    let confirmations: [Confirm<'_>; 4] = [
        // a drafted token that is accepted
        &|t| [t.draft(&[TokenIn::Piece(b" x")]).unwrap(), t.verify(1, None).unwrap()].concat(),
        // a drafted token that is rejected, then a correction
        &|t| [t.draft(&[TokenIn::Piece(b" x")]).unwrap(), t.verify(0, Some(TokenIn::Piece(b" "))).unwrap()].concat(),
        // a correction alone
        &|t| t.verify(0, Some(TokenIn::Piece(b" "))).unwrap(),
        // the end of the turn, after a rejected confirmation
        &|t| [t.draft(&[TokenIn::Piece(b" x")]).unwrap(), t.verify(0, None).unwrap(), t.finish().unwrap()].concat(),
    ];
    for (i, confirm) in confirmations.iter().enumerate() {
        let mut t = Turn::new(&config, [], []).unwrap();
        let mut out = t.draft(&call.map(TokenIn::Piece)).unwrap();
        assert!(out.is_empty(), "complete, not yet confirmed: {out:?}");
        out.extend(t.verify(2, None).unwrap());
        out.extend(confirm(&mut t));
        out.extend(if t.is_finished() { vec![] } else { t.finish().unwrap() });
        assert_eq!(labels(&out), ["closed get", "committed get"], "confirmation {i}");
        let (Outcome::CallClosed(a), Outcome::CallCommitted(b)) = (&out[0], &out[1]) else { panic!() };
        assert_eq!((a.key, b.key), (want, want), "confirmation {i}");
        assert_eq!(a.span, 0..2);
    }
    // The issue's reproduction: the call and its confirmation drafted together.
    let mut t = Turn::new(&config, [], []).unwrap();
    let mut out = t.draft(&[call[0], call[1], b" x"].map(TokenIn::Piece)).unwrap();
    out.extend(t.verify(2, Some(TokenIn::Piece(b" "))).unwrap());
    out.extend(t.finish().unwrap());
    assert_eq!(labels(&out), ["closed get", "committed get"], "no retraction: the block's own tokens were accepted");
    let Outcome::CallCommitted(c) = &out[1] else { panic!() };
    assert_eq!(c.key, want);
}

#[test]
fn two_blocks_ending_in_one_token_take_ordinals_in_stream_order() {
    let text = "<tool_call>{\"name\": \"a\"}</tool_call><tool_call>{\"name\": \"b\"}</tool_call>";
    let out = parse(text.as_bytes(), &hermes("t")).unwrap();
    let keys: Vec<_> = out
        .iter()
        .map(|o| match o {
            Outcome::CallCommitted(c) => c.key,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(keys, [key_of("t", &[text.as_bytes()], 0), key_of("t", &[text.as_bytes()], 1)]);
}

/// An escape inside a body's string keeps the string open until its real
/// quote, whatever bytes the scanner skips in runs, in one piece or byte by byte.
#[test]
fn escapes_in_a_bodys_strings_close_where_they_should() {
    for text in [
        "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"a\": {\"\\u001f\": null}}}\n</tool_call>",
        "<tool_call>{\"name\": \"a\", \"arguments\": {\"q\": \"x \\\" y\\\\\"}}</tool_call>",
    ] {
        let whole = parse(text.as_bytes(), &hermes("t")).unwrap();
        assert!(matches!(whole.as_slice(), [Outcome::CallCommitted(_)]), "{text}: {whole:?}");
        let mut t = turn();
        let mut out = draft(&mut t, &pieces(text, 1));
        out.extend(t.verify(t.undecided_len(), None).unwrap());
        assert_eq!(out.iter().filter(|o| matches!(o, Outcome::CallCommitted(_))).count(), 1, "{text}");
    }
}

/// The calls of `samples()` as they were written: `a` with one argument `q`, then `b` with none.
fn sample_calls(calls: &[Call]) -> Vec<(String, Vec<String>)> {
    calls.iter().map(|c| (c.name.clone(), c.arguments.keys().cloned().collect())).collect()
}

fn written(times: usize) -> Vec<(String, Vec<String>)> {
    (0..times).flat_map(|_| [("a".to_owned(), vec!["q".to_owned()]), ("b".to_owned(), vec![])]).collect()
}

/// Each sample read in one shot and incrementally (a token per byte, each accepted
/// as it comes, and all drafted at once then accepted): both give the calls as written.
#[test]
fn one_shot_parse_matches_incremental() {
    for (name, text) in samples() {
        let config = TurnConfig::builtin(name, "", 1 << 20).unwrap();
        let out = parse(text.as_bytes(), &config).unwrap();
        assert_eq!(labels(&out), ["committed a", "committed b"], "{name}");
        let bytes: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
        let mut one_by_one = Turn::new(&config, [], []).unwrap();
        let mut got = Vec::new();
        for b in &bytes {
            got.extend(draft(&mut one_by_one, &[b]));
            got.extend(one_by_one.verify(1, None).unwrap());
        }
        got.extend(one_by_one.finish().unwrap());
        let mut at_once = Turn::new(&config, [], []).unwrap();
        let mut all = draft(&mut at_once, &bytes);
        all.extend(at_once.verify(bytes.len(), None).unwrap());
        all.extend(at_once.finish().unwrap());
        for incremental in [&got, &all] {
            assert_eq!(sample_calls(&committed_calls(incremental)), written(1), "{name}");
            assert_eq!(committed_calls(incremental), committed_calls(&out), "{name}");
        }
    }
}

/// A random output of `name` with the calls known from how it was built: prose and
/// one or two copies of its sample (whole-message formats: one copy, then prose).
fn random_output(rng: &mut Rng, name: &str, sample: &str) -> (Vec<u8>, usize) {
    const PROSE: [&str; 5] = ["", " ok ", "\n", "x < y ", "é "];
    let anchored = matches!(name, "llama3_json" | "pythonic" | "xlam");
    let copies = if anchored { 1 } else { 1 + rng.below(2) };
    let mut text = String::new();
    for _ in 0..copies {
        if !anchored {
            text.push_str(PROSE[rng.below(PROSE.len())]);
        }
        text.push_str(sample);
    }
    text.push_str(["", " done", "\n"][rng.below(3)]);
    (text.into_bytes(), copies)
}

/// A tiny deterministic generator for the schedule simulations below.
/// Random schedules over random outputs of every format (prose and copies of its
/// sample): chunk it, draft windows with corruptions, accept a random correct
/// prefix, sometimes correct. Checks, at every step: each key equals the key of
/// the live pieces through its block's last token (with its ordinal); the closed
/// calls are exactly the live ones (every call whose tokens were rejected was
/// retracted); and at the end the committed calls are the ones written (and
/// what a one-shot parse of the accepted text finds).
#[test]
#[allow(clippy::too_many_lines, clippy::many_single_char_names)] // a schedule simulator: t, k, n, p, q as in the prose
fn random_rollbacks_equal_one_shot_parse() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (name, text) in samples() {
        assert!(NAMES.contains(&name));
        let config = TurnConfig::builtin(name, "k", 1 << 20).unwrap();
        for run in 0..60 {
            let (output, copies) = random_output(&mut rng, name, &text);
            let target = output.as_slice();
            let mut t = Turn::new(&config, [], []).unwrap();
            if run % 2 == 1 {
                // Bodies left unread while their ends are undecided, read when accepted.
                t.set_early_slack(0);
            }
            let mut live: Vec<Vec<u8>> = Vec::new(); // what the turn's live stream holds
            let mut open: Vec<Arc<CallRecord>> = Vec::new(); // closed, not committed or retracted
            let mut committed = Vec::new();
            let mut pos = 0;
            let mut check = |out: Vec<Outcome>, live: &[Vec<u8>]| {
                for o in out {
                    match o {
                        Outcome::CallClosed(c) => {
                            let through: Vec<&[u8]> = live[..c.span.end].iter().map(Vec::as_slice).collect();
                            let mut h = CommitHasher::new("k");
                            for p in &through {
                                h.absorb_piece(p);
                            }
                            let ordinals: Vec<CommitKey> = (0..4).map(|i| h.key(i)).collect();
                            assert!(ordinals.contains(&c.key), "{name}: key of {:?} is not its tokens'", c.call.name);
                            // Announcements keep stream order: the runtime orders conflicting calls by it.
                            assert!(
                                open.iter().all(|o| o.span.start <= c.span.start),
                                "{name}: {:?} announced before a call ahead of it",
                                c.call.name
                            );
                            open.push(c);
                        }
                        Outcome::CallRetracted(c) => {
                            let at = open.iter().position(|o| o.key == c.key).expect("retracts a closed call");
                            open.remove(at);
                        }
                        Outcome::CallCommitted(c) => {
                            let at = open.iter().position(|o| o.key == c.key).expect("commits a closed call");
                            open.remove(at);
                            committed.push((c.call.clone(), c.key));
                        }
                        Outcome::BlockMalformed(m) => panic!("{name}: {m:?}"),
                        Outcome::ReasoningUnopened(r) => panic!("{name}: {r:?}"),
                    }
                }
                // Every call still closed lies on the live stream.
                for c in &open {
                    assert!(c.span.end <= live.len(), "{name}: {:?} outlived its tokens", c.call.name);
                }
            };
            while pos < target.len() {
                let k = 1 + rng.below(6);
                let mut window: Vec<Vec<u8>> = Vec::new();
                let mut p = pos;
                for _ in 0..k {
                    if p >= target.len() {
                        break;
                    }
                    let len = (1 + rng.below(7)).min(target.len() - p);
                    let mut piece = target[p..p + len].to_vec();
                    if rng.below(5) == 0 {
                        piece[0] = b"{}\"<>/x[]"[rng.below(9)];
                    }
                    p += len;
                    window.push(piece);
                }
                let refs: Vec<TokenIn<'_>> = window.iter().map(|w| TokenIn::Piece(w)).collect();
                let out = t.draft(&refs).unwrap();
                live.extend(window.iter().cloned());
                check(out, &live);
                let mut ok = 0;
                let mut q = pos;
                for w in &window {
                    if target[q..].starts_with(w) {
                        ok += 1;
                        q += w.len();
                    } else {
                        break;
                    }
                }
                let n = rng.below(ok + 1);
                let n_bytes: usize = window[..n].iter().map(Vec::len).sum();
                // A correction needs a whole UTF-8 character: take one from the target.
                let rest = &target[pos + n_bytes..];
                let corr = std::str::from_utf8(rest)
                    .ok()
                    .and_then(|s| s.chars().next())
                    .filter(|_| rng.below(3) > 0)
                    .map(|c| rest[..c.len_utf8()].to_vec());
                let out = t.verify(n, corr.as_deref().map(TokenIn::Piece)).unwrap();
                live.truncate(live.len() - window.len() + n);
                live.extend(corr.iter().cloned());
                check(out, &live);
                pos += n_bytes + corr.map_or(0, |c| c.len());
            }
            check(t.finish().unwrap(), &live);
            assert!(open.is_empty(), "{name}: calls left neither committed nor retracted: {open:?}");
            assert_eq!(t.accepted_text(), target);
            let (committed, keys): (Vec<Call>, Vec<CommitKey>) = committed.into_iter().unzip();
            assert_eq!(sample_calls(&committed), written(copies), "{name}: {:?}", String::from_utf8_lossy(target));
            assert_eq!(committed, committed_calls(&parse(target, &config).unwrap()), "{name}");
            // Keys are the accepted tokens': a lone turn drafting them at once gives the same.
            let mut alone = Turn::new(&config, [], []).unwrap();
            let pieces: Vec<TokenIn<'_>> = live.iter().map(|p| TokenIn::Piece(p)).collect();
            let mut out = alone.draft(&pieces).unwrap();
            out.extend(alone.verify(pieces.len(), None).unwrap());
            out.extend(alone.finish().unwrap());
            let alone_keys: Vec<CommitKey> =
                out.iter().filter_map(|o| if let Outcome::CallCommitted(c) = o { Some(c.key) } else { None }).collect();
            assert_eq!(keys, alone_keys, "{name}: keys differ from the accepted tokens' own");
        }
    }
}

#[test]
fn each_call_of_a_block_has_its_own_key_and_a_broken_one_keeps_its_siblings() {
    let config = TurnConfig::builtin("jamba", "t", 1 << 20).unwrap();
    let text = "<tool_calls>[{\"name\": \"a\"}, {\"name\": \"b\", \"arguments\": 7}, {\"name\": \"c\"}]</tool_calls>";
    let out = parse(text.as_bytes(), &config).unwrap();
    assert_eq!(labels(&out), ["committed a", "malformed arguments_not_object", "committed c"]);
    let keys: Vec<CommitKey> = out
        .iter()
        .map(|o| match o {
            Outcome::CallCommitted(c) => c.key,
            Outcome::BlockMalformed(m) => m.key,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(keys, (0..3).map(|i| key_of("t", &[text.as_bytes()], i)).collect::<Vec<_>>());
    let Outcome::BlockMalformed(m) = &out[1] else { panic!() };
    assert_eq!(m.index, 1, "the malformed item's place in its block");
}

#[test]
fn the_end_of_the_turn_confirms_a_cut_block_keyed_by_its_last_token() {
    let ps = pieces("ok <tool_call>{\"name\": \"f\", \"arguments\": {}}\n", 6);
    let mut t = turn();
    assert!(draft(&mut t, &ps).is_empty(), "no closer: nothing closes during the turn");
    assert!(t.verify(ps.len(), None).unwrap().is_empty());
    let out = t.finish().unwrap();
    assert_eq!(labels(&out), ["closed f", "committed f"]);
    let Outcome::CallCommitted(c) = &out[1] else { panic!() };
    assert_eq!((c.key, c.span.clone()), (key_of("turn", &ps, 0), 0..ps.len()));
}

#[test]
fn a_stray_reasoning_closer_is_reported_once_accepted_and_never_when_rejected() {
    let mut t = turn();
    let ps: [&[u8]; 3] = [b"thought", b"</think>", b"<tool_call>{\"name\": \"f\"}</tool_call>"];
    let out = draft(&mut t, &ps);
    assert_eq!(labels(&out), ["closed f"], "only accepted tokens report it");
    assert_eq!(labels(&t.verify(1, None).unwrap()), ["retracted f"]);
    let out = draft(&mut t, &ps[1..]);
    assert_eq!(labels(&out), ["closed f"]);
    assert_eq!(labels(&t.verify(2, None).unwrap()), ["unopened 1..2", "committed f"]);
    let mut config = hermes("t");
    config.in_reasoning = true;
    let out = parse(b"thinking <tool_call>{\"name\": \"rm\"}</tool_call></think>ok", &config).unwrap();
    assert!(out.is_empty(), "{out:?}");
    config.format.reasoning = None;
    assert!(matches!(Turn::new(&config, [], []), Err(CoreError::InReasoningWithoutReasoning)));
}

#[test]
fn a_special_closer_by_id_ends_a_raw_body_whose_text_spells_it() {
    let config = TurnConfig::builtin("qwen3_coder", "t", 1 << 20).unwrap();
    let value = "<function=f>\n<parameter=s>\nx\n</parameter>\n</function>\n</tool_call>\ny\n";
    let vocab = [(1, value.as_bytes().to_vec()), (2, b"</parameter>\n</function>\n".to_vec())];
    let special = [(10, b"<tool_call>".to_vec()), (11, b"</tool_call>".to_vec())];
    let mut t = Turn::new(&config, vocab, special).unwrap();
    let out = t.draft(&[10, 1, 2, 11].map(TokenIn::Id)).unwrap();
    let [Outcome::CallClosed(c)] = out.as_slice() else { panic!("{out:?}") };
    assert_eq!(c.call.arguments["s"], "x\n</parameter>\n</function>\n</tool_call>\ny");
}

/// A turn that has accepted `<tool_call>` and a body whose last string holds
/// `len` bytes, its closing quote, braces and closer not yet written.
fn long_body(len: usize) -> (Turn, Vec<Vec<u8>>) {
    let mut t = turn();
    let head = format!("<tool_call>{{\"name\": \"f\", \"arguments\": {{\"s\": \"{}", "x".repeat(len));
    let accepted = vec![head.into_bytes()];
    let refs: Vec<&[u8]> = accepted.iter().map(Vec::as_slice).collect();
    draft(&mut t, &refs);
    t.verify(1, None).unwrap();
    (t, accepted)
}

fn closed(out: &[Outcome]) -> usize {
    out.iter().filter(|o| matches!(o, Outcome::CallClosed(_))).count()
}

/// The outcomes a fresh turn gives drafting `accepted` and accepting it whole:
/// what any schedule that accepts exactly these pieces must commit, keys included.
fn lone(accepted: &[Vec<u8>]) -> Vec<Outcome> {
    let mut t = turn();
    let refs: Vec<&[u8]> = accepted.iter().map(Vec::as_slice).collect();
    let mut out = draft(&mut t, &refs);
    out.extend(t.verify(accepted.len(), None).unwrap());
    out
}

fn committed_keys(out: &[Outcome]) -> Vec<(String, CommitKey)> {
    out.iter()
        .filter_map(|o| match o {
            Outcome::CallCommitted(c) => Some((c.call.name.clone(), c.key)),
            _ => None,
        })
        .collect()
}

/// A drafter that proposes the closer every step while the verifier keeps
/// writing the value: a draft reads at most what it drafted plus 16 KB, so the
/// 64 KB body is never read on a draft; it is read once, when its end is
/// accepted, and commits as a lone stream of the accepted tokens commits it.
#[test]
fn a_body_whose_closer_is_rejected_again_and_again_is_not_read_again_and_again() {
    let (mut t, mut accepted) = long_body(64 * 1024);
    for _ in 0..100 {
        assert_eq!(closed(&draft(&mut t, &[b"yy", b"\"}}</tool_call>"])), 0, "read on a draft");
        let out = t.verify(1, None).unwrap();
        assert!(out.is_empty(), "{:?}", labels(&out));
        accepted.push(b"yy".to_vec());
    }
    let out = draft(&mut t, &[b"\"}}</tool_call>"]);
    assert!(out.is_empty(), "left unread, announced when accepted: {:?}", labels(&out));
    let out = t.verify(1, None).unwrap();
    assert_eq!(labels(&out), ["closed f", "committed f"]);
    accepted.push(b"\"}}</tool_call>".to_vec());
    assert_eq!(committed_keys(&out), committed_keys(&lone(&accepted)));
}

/// A body shorter than the slack is read on every draft that ends it, as before.
#[test]
fn a_short_body_is_read_early_on_every_draft() {
    let (mut t, _) = long_body(1000);
    for _ in 0..20 {
        assert_eq!(closed(&draft(&mut t, &[b"\"}}</tool_call>"])), 1);
        assert_eq!(labels(&t.verify(0, None).unwrap()), ["retracted f"]);
    }
}

/// A token that ends a block left unread and then a whole second block: the
/// second waits too (nothing is read for its ordinal: a long body read on every
/// such draft would cost the block per step), and its key is numbered after the
/// first's items, as when both are read at once.
#[test]
fn a_block_ending_after_an_unread_one_in_the_same_token_keys_after_it() {
    let (mut t, mut accepted) = long_body(100);
    t.set_early_slack(0);
    let both: &[u8] = b"\"}}</tool_call><tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>";
    assert!(draft(&mut t, &[both]).is_empty());
    assert!(t.verify(0, None).unwrap().is_empty());
    assert!(draft(&mut t, &[both]).is_empty());
    let out = t.verify(1, None).unwrap();
    assert_eq!(labels(&out), ["closed f", "closed g", "committed f", "committed g"]);
    accepted.push(both.to_vec());
    let keys = committed_keys(&out);
    assert_eq!(keys, committed_keys(&lone(&accepted)));
    assert_ne!(keys[0].1, keys[1].1);
}

/// A verify that accepts an unread block's end announces its calls before the
/// correction's outcomes, which here close a second block: stream order.
#[test]
fn an_unread_block_is_announced_before_the_correction_closes_the_next() {
    let (mut t, mut accepted) = long_body(100);
    t.set_early_slack(0);
    let window: [&[u8]; 2] = [b"\"}}</tool_call>", b"<tool_call>{\"name\": \"g\", \"arguments\": {}}"];
    assert!(draft(&mut t, &window).is_empty());
    let out = t.verify(2, Some(TokenIn::Piece(b"</tool_call>"))).unwrap();
    assert_eq!(labels(&out), ["closed f", "closed g", "committed f", "committed g"]);
    accepted.extend(window.iter().map(|w| w.to_vec()));
    accepted.push(b"</tool_call>".to_vec());
    assert_eq!(committed_keys(&out), committed_keys(&lone(&accepted)));
}

/// A tree whose every branch proposes the closer of a long body reads none of
/// them early, and the accepted branch commits as drafting it alone.
#[test]
fn a_tree_of_closers_does_not_read_a_long_body_per_branch() {
    let (mut t, mut accepted) = long_body(64 * 1024);
    let branches: Vec<Vec<u8>> = (0..16).map(|i| format!("{i}\"}}}}</tool_call>").into_bytes()).collect();
    let tokens: Vec<TokenIn<'_>> = branches.iter().map(|b| TokenIn::Piece(b)).collect();
    assert_eq!(closed(&t.draft_tree(&tokens, &[-1; 16]).unwrap()), 0);
    let out = t.verify_path(&[9], None).unwrap();
    accepted.push(branches[9].clone());
    assert_eq!(labels(&out), ["closed f", "committed f"]);
    assert_eq!(committed_keys(&out), committed_keys(&lone(&accepted)));
    assert_eq!(committed_calls(&out)[0].arguments["s"].as_str().unwrap().len(), 64 * 1024 + 1);
}

/// A block that closes in the same draft after one left unread is not announced
/// before it: announcements keep stream order, which the runtime orders
/// conflicting calls by.
#[test]
fn a_block_after_an_unread_one_waits_for_it() {
    let (mut t, mut accepted) = long_body(64 * 1024);
    let window: [&[u8]; 3] =
        [b"\"}}</tool_call>", b"<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>", b" ok"];
    assert!(draft(&mut t, &window).is_empty(), "g held behind f");
    let out = t.verify(3, None).unwrap();
    assert_eq!(labels(&out), ["closed f", "closed g", "committed f", "committed g"]);
    accepted.extend(window.iter().map(|w| w.to_vec()));
    assert_eq!(committed_keys(&out), committed_keys(&lone(&accepted)));
    // Rejected with f: g goes unannounced, and nothing is retracted.
    let (mut t, _) = long_body(64 * 1024);
    assert!(draft(&mut t, &window).is_empty());
    assert!(t.verify(0, None).unwrap().is_empty());
}

/// The last accepted token ends a block left unread and opens one the end of
/// the turn cuts: that one's key is numbered after the first's items (it took
/// the first's key, so the Orchestrator ran only one of two writes).
#[test]
fn a_block_the_end_of_the_turn_cuts_keys_after_an_unread_one_in_its_token() {
    for tail in [&b"<tool_call>{\"name\": \"g\", \"arguments\": {}}"[..], b"<tool_call>{\"name"] {
        let (mut t, mut accepted) = long_body(40_000);
        let last = [b"\"}}</tool_call>".as_slice(), tail].concat();
        assert!(draft(&mut t, &[&last]).is_empty());
        let mut out = t.verify(1, None).unwrap();
        out.extend(t.finish().unwrap());
        accepted.push(last);
        let mut alone = turn();
        let refs: Vec<&[u8]> = accepted.iter().map(Vec::as_slice).collect();
        let mut expected = draft(&mut alone, &refs);
        expected.extend(alone.verify(accepted.len(), None).unwrap());
        expected.extend(alone.finish().unwrap());
        let keys = |out: &[Outcome]| -> Vec<CommitKey> {
            out.iter()
                .filter_map(|o| match o {
                    Outcome::CallCommitted(c) => Some(c.key),
                    Outcome::BlockMalformed(m) => Some(m.key),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(keys(&out), keys(&expected));
        assert_eq!(keys(&out).len(), 2);
        assert_ne!(keys(&out)[0], keys(&out)[1]);
    }
}

/// A closer drafted and rejected step after step (the verifier accepts one token of
/// each draft) takes a key each time, in a token then rejected: the key hash
/// absorbs the tokens since the accepted frontier, never the turn again. Settling
/// only what a verify kept whole absorbed the whole turn once per step: 100 steps
/// over a 500-token prefix took 55k tokens' absorbing.
#[test]
fn keys_taken_in_rejected_tokens_absorb_each_accepted_token_about_once() {
    let mut t = Turn::new(&TurnConfig::builtin("hermes", "t", 1 << 20).unwrap(), [], []).unwrap();
    let mut prefix: Vec<TokenIn<'_>> =
        vec![TokenIn::Piece(b"<tool_call>"), TokenIn::Piece(br#"{"name": "f", "arguments": {"t": ""#)];
    prefix.extend((0..500).map(|_| TokenIn::Piece(b"x")));
    t.draft(&prefix).unwrap();
    t.verify(prefix.len(), None).unwrap();
    let window = [TokenIn::Piece(b"yy"), TokenIn::Piece(br#""}}</tool_call>"#)];
    for _ in 0..100 {
        let out = t.draft(&window).unwrap();
        assert!(matches!(out.as_slice(), [Outcome::CallClosed(_)]), "{out:?}");
        let out = t.verify(1, None).unwrap();
        assert!(matches!(out.as_slice(), [Outcome::CallRetracted(_)]), "{out:?}");
    }
    let (absorbed, live) = (t.window.keys_absorbed(), t.window.len());
    assert!(absorbed <= 2 * live + 200, "absorbed {absorbed} tokens for {live} live tokens");
}
