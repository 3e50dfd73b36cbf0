use super::*;
use crate::scan::Call;

/// The calls among `events`, in stream order.
fn calls_of(events: &[BlockEvent]) -> Vec<Call> {
    events
        .iter()
        .filter_map(|e| match e {
            BlockEvent::Closed { call, .. } => Some(call.clone()),
            _ => None,
        })
        .collect()
}

fn hermes(turn: &str) -> StreamConfig {
    StreamConfig::builtin("hermes", turn, 1 << 20).unwrap()
}

fn stream() -> TokenStream {
    TokenStream::new(&hermes("turn"), [], []).unwrap()
}

fn pieces(text: &str, size: usize) -> Vec<&[u8]> {
    text.as_bytes().chunks(size).collect()
}

fn draft(s: &mut TokenStream, ps: &[&[u8]]) -> Vec<BlockEvent> {
    let toks: Vec<TokenIn<'_>> = ps.iter().map(|p| TokenIn::Piece(p)).collect();
    s.draft(&toks).unwrap()
}

const CALL: &str = "ok <tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call> done";

#[test]
fn close_then_accept() {
    let mut s = stream();
    let ev = draft(&mut s, &pieces(CALL, 5));
    assert!(matches!(ev[0], BlockEvent::Opened { block: 0, start: 0 }));
    let BlockEvent::Closed { span, call, .. } = &ev[1] else { panic!("{ev:?}") };
    assert_eq!(call.name, "f");
    let last_byte = CALL.find("</tool_call>").unwrap() + "</tool_call>".len() - 1;
    assert_eq!(span.end, last_byte / 5 + 1);
    let n = s.pending_len();
    let ev = s.verify(n, None).unwrap();
    assert_eq!(ev, vec![BlockEvent::Accepted { block: 0 }]);
    assert_eq!(s.accepted_text(), CALL.as_bytes());
}

#[test]
fn rejection_retracts_and_rebuilds() {
    let mut s = stream();
    let wrong = CALL.replace("\"x\": 1", "\"x\": 2");
    let ps = pieces(&wrong, 4);
    let ev = draft(&mut s, &ps);
    let BlockEvent::Closed { key: draft_key, .. } = ev[1] else { panic!() };
    // Reject from the token holding the wrong digit.
    let bad = wrong.find("2}").unwrap() / 4;
    let ev = s.verify(bad, None).unwrap();
    assert_eq!(ev, vec![BlockEvent::Retracted { block: 0 }]);
    let right = pieces(CALL, 4);
    let ev = draft(&mut s, &right[bad..]);
    let BlockEvent::Closed { block, call, key, .. } = &ev[0] else { panic!("{ev:?}") };
    assert_eq!((*block, call.arguments["x"].as_i64()), (0, Some(1)));
    assert_ne!(*key, draft_key);
    assert_eq!(s.verify(s.pending_len(), None).unwrap(), vec![BlockEvent::Accepted { block: 0 }]);
    assert_eq!(s.accepted_text(), CALL.as_bytes());
    assert!(!s.ledger().rejected_runs().is_empty());
}

#[test]
fn commit_key_is_the_same_whether_accepted_now_or_later() {
    let mut a = stream();
    let ev = draft(&mut a, &pieces(CALL, 3));
    let BlockEvent::Closed { key: ka, .. } = ev[1] else { panic!() };
    let mut b = stream();
    let ps = pieces(CALL, 3);
    let mut kb = None;
    for p in &ps {
        for e in draft(&mut b, &[p]) {
            if let BlockEvent::Closed { key, .. } = e {
                kb = Some(key);
            }
        }
        b.verify(1, None).unwrap();
    }
    assert_eq!(Some(ka), kb);
}

#[test]
fn opener_rejection_retires_the_block() {
    let mut s = stream();
    draft(&mut s, &pieces("a <tool_call>{\"na", 4));
    let ev = s.verify(1, None).unwrap();
    assert_eq!(ev, vec![BlockEvent::Retracted { block: 0 }]);
    let ev = draft(&mut s, &pieces("<tool_call>{\"name\": \"g\"}</tool_call>", 6));
    assert!(matches!(ev[0], BlockEvent::Opened { block: 1, .. }), "{ev:?}");
}

#[test]
fn correction_is_accepted_and_can_close_a_block() {
    let mut s = stream();
    let body = "<tool_call>{\"name\": \"f\"}</tool_call";
    draft(&mut s, &[body.as_bytes(), b"!!"]);
    let ev = s.verify(1, Some(TokenIn::Piece(b">"))).unwrap();
    assert!(matches!(ev[0], BlockEvent::Closed { .. }), "{ev:?}");
    assert_eq!(ev[1], BlockEvent::Accepted { block: 0 });
    assert_eq!(s.pending_len(), 0);
    assert_eq!(s.accepted_len(), 2);
}

#[test]
fn bad_verify_changes_nothing() {
    let mut s = stream();
    draft(&mut s, &pieces(CALL, 8));
    let before = (s.pending_len(), s.ledger().len());
    assert!(matches!(s.verify(99, None), Err(CoreError::VerifyTooMany { requested: 99, .. })));
    assert!(matches!(s.verify(1, Some(TokenIn::Id(5))), Err(CoreError::UnknownTokenId { .. })));
    assert_eq!((s.pending_len(), s.ledger().len()), before);
}

#[test]
fn special_token_ids_bind_to_delimiters() {
    let config = hermes("t");
    let vocab = [(1, b"{\"name\": \"f\"}".to_vec()), (2, b"x".to_vec())];
    let special = [(151_657, b"<tool_call>".to_vec()), (151_658, b"</tool_call>".to_vec())];
    let mut s = TokenStream::new(&config, vocab, special).unwrap();
    let ev = s.draft(&[TokenIn::Id(2), TokenIn::Id(151_657), TokenIn::Id(1), TokenIn::Id(151_658)]).unwrap();
    let BlockEvent::Closed { span, call, .. } = &ev[1] else { panic!("{ev:?}") };
    assert_eq!((span.clone(), call.name.as_str()), (1..4, "f"));
    assert_eq!(s.live_text(), b"x<tool_call>{\"name\": \"f\"}</tool_call>");
}

#[test]
fn finish_reports_unterminated_and_rejects_pending() {
    let mut s = stream();
    draft(&mut s, &pieces("<tool_call>{\"name\": \"f\"", 5));
    s.verify(3, None).unwrap(); // through `>{"na`: the block is open
    draft(&mut s, &[b"zzz"]);
    let ev = s.finish().unwrap();
    assert!(matches!(&ev[0], BlockEvent::Malformed { reason, .. } if reason.contains("ended inside")), "{ev:?}");
    assert_eq!(ev[1], BlockEvent::Accepted { block: 0 });
    assert_eq!(s.token_state(s.ledger().len() - 1), Some(TokenState::Rejected));
    assert!(matches!(s.draft(&[TokenIn::Piece(b"x")]), Err(CoreError::Finished)));
}

#[test]
fn one_shot_parse_matches_incremental() {
    let text = format!("{CALL}{CALL}");
    let events = parse(text.as_bytes(), &hermes("")).unwrap();
    assert_eq!(calls_of(&events).len(), 2);
}

/// Random schedules: chunk, draft windows with corruptions, reject at random
/// points; the accepted calls must equal the one-shot parse of the accepted text.
#[test]
#[allow(clippy::many_single_char_names)] // a schedule simulator: t, s, k, n, p, q read as in the prose
fn random_rollbacks_equal_one_shot_parse() {
    let target = format!(
        "{CALL} and <tool_call>{{\"arguments\": {{\"s\": \"</tool_call>\"}}, \"name\": \"g\"}}</tool_call>{CALL}"
    );
    let t = target.as_bytes();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut rand = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for _ in 0..300 {
        let mut s = stream();
        let mut accepted = Vec::new();
        let mut pos = 0;
        while pos < t.len() {
            let k = 1 + rand(6);
            let mut window: Vec<Vec<u8>> = Vec::new();
            let mut p = pos;
            for _ in 0..k {
                if p >= t.len() {
                    break;
                }
                let len = (1 + rand(5)).min(t.len() - p);
                let mut piece = t[p..p + len].to_vec();
                if rand(4) == 0 {
                    piece[0] = b"{}\"<>/x"[rand(7)];
                }
                p += len;
                window.push(piece);
            }
            let refs: Vec<TokenIn<'_>> = window.iter().map(|w| TokenIn::Piece(w)).collect();
            accepted.extend(s.draft(&refs).unwrap());
            let mut ok = 0;
            let mut q = pos;
            for w in &window {
                if t[q..].starts_with(w) {
                    ok += 1;
                    q += w.len();
                } else {
                    break;
                }
            }
            let n = rand(ok + 1);
            let n_bytes: usize = window[..n].iter().map(Vec::len).sum();
            let corr = t.get(pos + n_bytes..pos + n_bytes + 1);
            accepted.extend(s.verify(n, corr.map(TokenIn::Piece)).unwrap());
            pos += n_bytes + corr.map_or(0, <[u8]>::len);
        }
        accepted.extend(s.finish().unwrap());
        assert_eq!(s.accepted_text(), t);
        let final_calls = accepted_calls(&accepted);
        assert_eq!(final_calls, calls_of(&parse(t, &hermes("")).unwrap()));
    }
}

/// Replays events the way a gate would: a Closed call counts once its block is Accepted.
fn accepted_calls(events: &[BlockEvent]) -> Vec<Call> {
    let mut current: HashMap<u64, Call> = HashMap::new();
    let mut out = Vec::new();
    for e in events {
        match e {
            BlockEvent::Closed { block, call, .. } => {
                current.insert(*block, call.clone());
            }
            BlockEvent::Retracted { block } => {
                current.remove(block);
            }
            BlockEvent::Accepted { block } => {
                if let Some(c) = current.remove(block) {
                    out.push(c);
                }
            }
            _ => {}
        }
    }
    out
}
