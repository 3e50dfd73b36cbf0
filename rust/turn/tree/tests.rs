#![allow(clippy::cast_possible_wrap, clippy::cast_sign_loss, clippy::range_plus_one)] // small test indices

use super::*;
use crate::scan::samples::samples;
use crate::test_rng::Rng;
use crate::turn::keys::CommitKey;
use crate::turn::{CommitHasher, TurnConfig};

/// What a caller can observe of an outcome, by value.
fn seen(out: &[Outcome]) -> Vec<String> {
    out.iter()
        .map(|o| match o {
            Outcome::CallClosed(c) => format!("closed {} {:?} {:?} {}", c.call.name, c.span, c.key, c.block),
            Outcome::CallCommitted(c) => format!("committed {} {:?} {:?} {}", c.call.name, c.span, c.key, c.block),
            Outcome::CallRetracted(c) => format!("retracted {} {:?} {:?} {}", c.call.name, c.span, c.key, c.block),
            Outcome::BlockMalformed(m) => format!("malformed {:?} {:?} {:?}", m.error.kind, m.span, m.key),
            Outcome::ReasoningUnopened(r) => format!("unopened {:?}", r.span),
        })
        .collect()
}

/// The calls announced and not yet final, by value, after `out`.
fn track(open: &mut Vec<String>, out: &[Outcome]) {
    for o in out {
        match o {
            Outcome::CallClosed(c) => open.push(format!("{:?}{:?}", c.key, c.span)),
            Outcome::CallRetracted(c) | Outcome::CallCommitted(c) => {
                let k = format!("{:?}{:?}", c.key, c.span);
                let at = open.iter().position(|o| *o == k).expect("a final outcome of an announced call");
                open.remove(at);
            }
            Outcome::BlockMalformed(_) | Outcome::ReasoningUnopened(_) => {}
        }
    }
}

fn committed(out: &[Outcome]) -> Vec<String> {
    seen(&out.iter().filter(|o| o.is_committed()).cloned().collect::<Vec<_>>())
}

fn key_of(turn: &str, pieces: &[&[u8]], ordinal: u32) -> CommitKey {
    let mut h = CommitHasher::new(turn);
    for p in pieces {
        h.absorb_piece(p);
    }
    h.key(ordinal)
}

fn pieces(ps: &[&'static [u8]]) -> Vec<TokenIn<'static>> {
    ps.iter().map(|p| TokenIn::Piece(p)).collect()
}

/// Random trees over every format's sample, verified along a random path, end
/// exactly as drafting that path alone and verifying it: the same commits in the
/// same order, the same calls left announced, and the same outcomes from then on.
#[test]
#[allow(clippy::too_many_lines)] // a schedule simulator
fn a_tree_verified_along_a_path_equals_the_linear_draft_of_that_path() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for (name, text) in samples() {
        let config = TurnConfig::builtin(name, "k", 1 << 20).unwrap();
        let target = text.as_bytes();
        for run in 0..40 {
            let mut tree = Turn::new(&config, [], []).unwrap();
            let mut line = Turn::new(&config, [], []).unwrap();
            if run % 2 == 1 {
                // Bodies left unread while their ends are undecided (see `EarlyReads`).
                tree.set_early_slack(0);
            }
            let (mut open_tree, mut open_line, mut kept) = (Vec::new(), Vec::new(), Vec::new());
            let mut pos = 0;
            while pos < target.len() {
                // A main chain along the target, and side nodes hanging anywhere.
                let mut nodes: Vec<(i64, Vec<u8>)> = Vec::new();
                let mut p = pos;
                for _ in 0..1 + rng.below(5) {
                    if p >= target.len() {
                        break;
                    }
                    let len = (1 + rng.below(7)).min(target.len() - p);
                    nodes.push((nodes.len() as i64 - 1, target[p..p + len].to_vec()));
                    p += len;
                }
                for _ in 0..rng.below(6) {
                    let parent = rng.below(nodes.len() + 1) as i64 - 1;
                    let from = (pos + rng.below(12)).min(target.len() - 1);
                    let len = (1 + rng.below(7)).min(target.len() - from);
                    let mut piece = target[from..from + len].to_vec();
                    if rng.below(3) == 0 {
                        piece[0] = b"{}\"<>/x[]"[rng.below(9)];
                    }
                    // Twin siblings are refused (`twin_siblings_are_refused_and_change_nothing`).
                    if !nodes.iter().any(|n| n.0 == parent && n.1 == piece) {
                        nodes.push((parent, piece));
                    }
                }
                let parents: Vec<i64> = nodes.iter().map(|n| n.0).collect();
                let toks: Vec<TokenIn<'_>> = nodes.iter().map(|n| TokenIn::Piece(&n.1)).collect();
                let mut out_tree = tree.draft_tree(&toks, &parents).unwrap();
                // A path: a random node and its ancestors (or nothing).
                let mut path = Vec::new();
                let mut at = rng.below(nodes.len() + 1) as i64 - 1;
                while at >= 0 {
                    path.push(at as usize);
                    at = parents[at as usize];
                }
                path.reverse();
                let correction = (rng.below(3) == 0).then(|| vec![target[rng.below(target.len())]]);
                let corr = correction.as_deref().filter(|c| c.is_ascii()).map(TokenIn::Piece);
                out_tree.extend(tree.verify_path(&path, corr).unwrap());
                let along: Vec<TokenIn<'_>> = path.iter().map(|&i| TokenIn::Piece(&nodes[i].1)).collect();
                let mut out_line = line.draft(&along).unwrap();
                out_line.extend(line.verify(along.len(), corr).unwrap());
                drop_kept(&mut kept, &mut out_line);
                assert_eq!(committed(&out_tree), committed(&out_line), "{name}: commits");
                track(&mut open_tree, &out_tree);
                track(&mut open_line, &out_line);
                // A call the tree announced (a node confirmed its block) whose block's own
                // tokens are accepted, but not the confirming node: it stays announced,
                // awaiting confirmation again (invariant 3), where drafting the path alone
                // has not announced it yet. Its later announcement on the line is dropped.
                let extra: Vec<String> = open_tree.iter().filter(|c| !open_line.contains(c)).cloned().collect();
                kept.extend(extra.iter().cloned());
                open_line.extend(extra);
                open_line.sort_by_key(|c| open_tree.iter().position(|t| t == c));
                assert_eq!(open_tree, open_line, "{name}: calls left announced");
                assert_eq!(tree.accepted_text(), line.accepted_text(), "{name}");
                pos += path.iter().map(|&i| nodes[i].1.len()).sum::<usize>() + corr.map_or(0, |_| 1);
                if path.is_empty() && corr.is_none() {
                    // Nothing accepted: step on with the target's next byte.
                    let next = [target[pos]];
                    let a = tree.verify(0, None).unwrap_or_default();
                    assert!(a.is_empty());
                    let (x, mut y) =
                        (tree.draft(&[TokenIn::Piece(&next)]).unwrap(), line.draft(&[TokenIn::Piece(&next)]).unwrap());
                    assert_eq!(seen(&x), seen(&y));
                    drop_kept(&mut kept, &mut y);
                    let (x2, mut y2) = (tree.verify(1, None).unwrap(), line.verify(1, None).unwrap());
                    drop_kept(&mut kept, &mut y2);
                    assert_eq!(seen(&x2), seen(&y2));
                    track(&mut open_tree, &[x, x2].concat());
                    track(&mut open_line, &[y, y2].concat());
                    pos += 1;
                }
            }
            let (a, mut b) = (tree.finish().unwrap(), line.finish().unwrap());
            drop_kept(&mut kept, &mut b);
            assert!(kept.is_empty(), "{name}: a kept announcement the line never made");
            assert_eq!(seen(&a), seen(&b), "{name}: the same outcomes from then on");
            track(&mut open_tree, &a);
            track(&mut open_line, &b);
            assert!(open_tree.is_empty() && open_line.is_empty());
            assert_eq!(tree.ledger().len(), tree.ledger().len());
        }
    }
}

/// Drops from the line's `out` its announcements of calls the tree kept announced.
fn drop_kept(kept: &mut Vec<String>, out: &mut Vec<Outcome>) {
    out.retain(|o| {
        let Outcome::CallClosed(c) = o else { return true };
        let k = format!("{:?}{:?}", c.key, c.span); // as `track` names it
        let at = kept.iter().position(|x| *x == k);
        at.map(|at| kept.remove(at)).is_none()
    });
}

fn hermes() -> TurnConfig {
    TurnConfig::builtin("hermes", "t", 1 << 20).unwrap()
}

#[test]
fn the_same_block_on_two_branches_has_each_paths_key() {
    let block: &[&'static [u8]] = &[b"<tool_call>", b"{\"name\": \"f\"}", b"</tool_call>"];
    let mut t = Turn::new(&hermes(), [], []).unwrap();
    // Two roots ("a", "b"), each followed by the same block.
    let toks = pieces(&[b"a", block[0], block[1], block[2], b"b", block[0], block[1], block[2]]);
    let out = t.draft_tree(&toks, &[-1, 0, 1, 2, -1, 4, 5, 6]).unwrap();
    let [Outcome::CallClosed(x), Outcome::CallClosed(y)] = out.as_slice() else { panic!("{out:?}") };
    assert_eq!(x.key, key_of("t", &[b"a", block[0], block[1], block[2]], 0));
    assert_eq!(y.key, key_of("t", &[b"b", block[0], block[1], block[2]], 0));
    assert_eq!((x.span.clone(), y.span.clone()), (1..4, 1..4), "spans are positions on each path");
    let out = t.verify_path(&[4, 5, 6, 7], None).unwrap();
    assert_eq!(out, vec![Outcome::CallRetracted(x.clone()), Outcome::CallCommitted(y.clone())]);
    assert!(Arc::ptr_eq(
        match &out[1] {
            Outcome::CallCommitted(c) => c,
            _ => unreachable!(),
        },
        y
    ));
    assert_eq!(t.accepted_text(), b"b<tool_call>{\"name\": \"f\"}</tool_call>");
    assert_eq!(t.ledger().rejected_runs(), vec![0..4]);
}

#[test]
fn a_call_shared_by_branches_is_announced_once() {
    // The block closes at node 2; nodes 3 and 4 both follow it.
    let mut t = Turn::new(&hermes(), [], []).unwrap();
    let toks = pieces(&[b"<tool_call>", b"{\"name\": \"f\"}", b"</tool_call>", b" x", b" y"]);
    let out = t.draft_tree(&toks, &[-1, 0, 1, 2, 2]).unwrap();
    let [Outcome::CallClosed(c)] = out.as_slice() else { panic!("{out:?}") };
    let out = t.verify_path(&[0, 1, 2, 4], None).unwrap();
    assert_eq!(out, vec![Outcome::CallCommitted(c.clone())]);
    assert_eq!(t.accepted_text(), b"<tool_call>{\"name\": \"f\"}</tool_call> y");
}

#[test]
fn bad_trees_and_paths_change_nothing() {
    let mut t = Turn::new(&hermes(), [], []).unwrap();
    let toks = pieces(&[b"a", b"b", b"c"]);
    for parents in [&[-1, 1, 0][..], &[0, -1, 0], &[-1, -2, 0], &[-1, 0]] {
        assert!(matches!(t.draft_tree(&toks, parents), Err(CoreError::BadTree { .. })), "{parents:?}");
    }
    assert!(matches!(t.verify_path(&[0], None), Err(CoreError::NoTree)));
    t.draft(&pieces(&[b"x"])).unwrap();
    assert!(matches!(t.draft_tree(&toks, &[-1, 0, 0]), Err(CoreError::DraftPending { pending: 1 })));
    t.verify(1, None).unwrap();
    assert_eq!(t.ledger().len(), 1);
    t.draft_tree(&toks, &[-1, 0, 0]).unwrap();
    assert!(matches!(t.draft(&toks), Err(CoreError::TreePending)));
    assert!(matches!(t.verify(0, None), Err(CoreError::TreePending)));
    assert!(matches!(t.draft_tree(&toks, &[-1, 0, 0]), Err(CoreError::TreePending)));
    for path in [&[1][..], &[0, 0], &[0, 5], &[2, 0]] {
        assert!(matches!(t.verify_path(path, None), Err(CoreError::BadTree { .. })), "{path:?}");
    }
    assert!(matches!(t.verify_path(&[0], Some(TokenIn::Id(3))), Err(CoreError::UnknownTokenId { .. })));
    assert_eq!((t.ledger().len(), t.undecided_len(), t.live_text()), (4, 3, &b"x"[..]));
    t.verify_path(&[0, 2], None).unwrap();
    assert_eq!(t.accepted_text(), b"xac");
    assert_eq!(t.ledger().rejected_runs(), vec![2..3]);
}

/// Twin siblings (the same token under the same parent) are one continuation:
/// their calls would be announced twice under one key (keys are per path), then
/// retracted and committed in one step. Refused, and nothing changes; the same
/// token under two parents, or a piece and an id that spell alike, are no twins.
#[test]
fn twin_siblings_are_refused_and_change_nothing() {
    let mut t = Turn::new(&hermes(), [], []).unwrap();
    let twins = pieces(&[b"a", b"b", b"a"]);
    let Err(CoreError::BadTree { reason }) = t.draft_tree(&twins, &[-1, -1, -1]) else { panic!("twins drafted") };
    assert!(reason.starts_with("nodes 0 and 2 are the same token under the same parent"), "{reason}");
    assert_eq!((t.ledger().len(), t.tree_pending()), (0, false));
    t.draft_tree(&twins, &[-1, 0, 1]).unwrap();
    t.verify_path(&[0, 1, 2], None).unwrap();
    assert_eq!(t.accepted_text(), b"aba");
}

#[test]
fn finish_rejects_a_pending_tree() {
    let mut t = Turn::new(&hermes(), [], []).unwrap();
    let toks = pieces(&[b"<tool_call>", b"{\"name\": \"f\"}", b"</tool_call>"]);
    let out = t.draft_tree(&toks, &[-1, 0, 1]).unwrap();
    let [Outcome::CallClosed(c)] = out.as_slice() else { panic!("{out:?}") };
    assert_eq!(t.finish().unwrap(), vec![Outcome::CallRetracted(c.clone())]);
    assert!(t.accepted_text().is_empty());
}

/// A block that ends on a bracket is confirmed by the next token. Rejecting the
/// whole tree rejects only that confirmation: the call stays announced, awaiting
/// confirmation again, as when a linear draft's confirming token is rejected
/// (it was retracted, then announced again under the same key, so an orchestrator
/// ran its read twice and reported one accepted run as discarded).
#[test]
fn rejecting_the_tree_that_confirmed_a_call_keeps_its_announcement() {
    let config = TurnConfig::builtin("llama3_json", "t", 1 << 20).unwrap();
    let call: &[u8] = br#"{"name": "get", "parameters": {"k": 1}}"#;
    for finish_pending in [false, true] {
        let mut t = Turn::new(&config, [], []).unwrap();
        t.draft(&[TokenIn::Piece(call)]).unwrap();
        assert!(t.verify(1, None).unwrap().is_empty(), "awaiting confirmation");
        let out = t.draft_tree(&pieces(&[b" x", b" y"]), &[-1, -1]).unwrap();
        let [Outcome::CallClosed(c)] = out.as_slice() else { panic!("{out:?}") };
        let rest = if finish_pending {
            t.finish().unwrap()
        } else {
            let none = t.verify_path(&[], None).unwrap();
            assert!(none.is_empty(), "retracted: {none:?}");
            t.finish().unwrap()
        };
        assert_eq!(rest, vec![Outcome::CallCommitted(c.clone())], "finish_pending={finish_pending}");
    }
}

/// A deep chain full of calls keeps what each node changed, not a copy of its
/// parent's table: the blocks the tree holds grow with its nodes. Each node once
/// held its path's whole table (every call on the path is awaiting acceptance),
/// so this chain held about nodes^2 / 10 blocks (400k here), and drafting it cost
/// as much in time and memory.
#[test]
fn a_deep_chain_of_calls_keeps_blocks_in_proportion_to_its_nodes() {
    let config = TurnConfig::builtin("hermes", "t", 1 << 20).unwrap();
    let mut t = Turn::with_vocab(&config, std::sync::Arc::default());
    let call: [&'static [u8]; 5] = [b"<tool_call>", br#"{"name": "f", "arguments": {}}"#, b"</tool_call>", b" ", b"x"];
    let n = 2000;
    let tokens: Vec<TokenIn<'static>> = (0..n).map(|i| TokenIn::Piece(call[i % call.len()])).collect();
    let parents: Vec<i64> = (0..n as i64).map(|i| i - 1).collect();
    let drafted = t.draft_tree(&tokens, &parents).unwrap();
    assert_eq!(drafted.len(), n / call.len(), "every call on the chain is announced");
    let held: usize = t.tree.as_ref().unwrap().tails.iter().map(TableTail::len).sum();
    assert!(held <= 2 * n, "the tree holds {held} blocks for {n} nodes");
    let out = t.verify_path(&(0..n).collect::<Vec<_>>(), None).unwrap();
    assert_eq!(committed(&out).len(), n / call.len(), "the path commits every call on it");
}

/// A comb: a path of value bytes inside an open block, each node with a leaf that
/// closes the block. Each leaf takes a key on its own path, which shares all but its
/// last token with the previous leaf's; the walk steps back past that token, and the
/// key hash used to start again from the accepted tokens: a tree of n nodes absorbed
/// n²/4 tokens (16k nodes took seconds). Each node is absorbed about once now.
#[test]
fn keys_on_a_deep_tree_absorb_each_node_about_once() {
    for (format, head, closer) in [
        ("hermes", &br#"<tool_call>{"name": "f", "arguments": {"t": ""#[..], &br#""}}</tool_call>"#[..]),
        ("llama3_json", &br#"{"name": "f", "parameters": {"t": ""#[..], &br#""}}"#[..]),
    ] {
        let mut t = Turn::new(&TurnConfig::builtin(format, "t", 1 << 20).unwrap(), [], []).unwrap();
        t.draft(&[TokenIn::Piece(head)]).unwrap();
        t.verify(1, None).unwrap();
        let depth: i64 = 2000;
        let (mut tokens, mut parents) = (Vec::new(), Vec::new());
        for d in 0..depth {
            tokens.push(TokenIn::Piece(b"x"));
            parents.push(if d == 0 { -1 } else { 2 * d - 2 });
            tokens.push(TokenIn::Piece(closer));
            parents.push(2 * d);
        }
        let before = t.window.keys_absorbed();
        t.draft_tree(&tokens, &parents).unwrap();
        let absorbed = t.window.keys_absorbed() - before;
        assert!(absorbed <= 4 * tokens.len(), "{format}: absorbed {absorbed} tokens for a tree of {}", tokens.len());
    }
}
