#![allow(
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::type_complexity,
    clippy::unnecessary_lazy_evaluations
)] // small test ids and tables of cases

use super::*;
use crate::scan::samples::samples;
use crate::test_rng::Rng;
use crate::turn::TurnConfig;
use crate::vocab::{Vocab, VocabBuilder};
use std::sync::Arc;

/// A vocabulary of every byte and every 2- and 3-byte chunk of `text`, so a
/// sample can be drafted as ids in chunks of 1-3 bytes; and the delimiter spellings
/// of `specials`, the first right after the bytes and the others after the chunks,
/// so that the ids bound to delimiters surround ordinary ones.
fn vocab_of(text: &[u8], specials: &[Vec<u8>]) -> (Arc<Vocab>, Vec<Vec<u8>>) {
    let mut pieces: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    pieces.extend(specials.first().cloned());
    for w in [2, 3] {
        for chunk in text.windows(w) {
            if !pieces.iter().any(|p| p == chunk) {
                pieces.push(chunk.to_vec());
            }
        }
    }
    pieces.extend(specials.iter().skip(1).filter(|s| s.len() > 3).cloned());
    let mut b = VocabBuilder::default();
    for (id, p) in (0u64..).zip(&pieces) {
        b.insert(id, p).unwrap();
    }
    (Arc::new(b.build()), pieces)
}

/// `text` as ids of 1-3 bytes, or of a longer piece (a delimiter's) now and then.
fn ids_of(text: &[u8], pieces: &[Vec<u8>], rng: &mut Rng) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut p = 0;
    while p < text.len() {
        let long = pieces.iter().position(|x| x.len() > 3 && text[p..].starts_with(x));
        if let Some(id) = long.filter(|_| rng.below(2) == 0) {
            ids.push(id as u64);
            p += pieces[id].len();
            continue;
        }
        let w = (1 + rng.below(3)).min(text.len() - p);
        let id = pieces.iter().position(|x| x.as_slice() == &text[p..p + w]).unwrap();
        ids.push(id as u64);
        p += w;
    }
    ids
}

fn by_seq(out: &BatchOutcomes) -> Vec<(u64, Vec<Outcome>)> {
    out.rows.iter().map(|(s, r)| (*s, out.outcomes[r.clone()].to_vec())).collect()
}

/// Random sequences added and finished at random, drafted with random lengths
/// (wrong ids now and then), verified with random acceptances and corrections:
/// each sequence gets exactly what a lone turn with the same tokens gets.
#[test]
#[allow(clippy::too_many_lines)] // a schedule simulator
fn a_batch_gives_each_sequence_what_a_lone_turn_gives() {
    let mut rng = Rng(0x853c_49e6_748f_ea9b);
    for ((name, text), bound) in samples().into_iter().flat_map(|s| [(s.clone(), false), (s, true)]) {
        let config = TurnConfig::builtin(name, "", 1 << 20).unwrap();
        let scanner = crate::scan::Scanner::new(config.format.clone(), config.schemas.clone(), 1 << 20);
        let specials: Vec<Vec<u8>> =
            if bound { scanner.special_spellings().map(<[u8]>::to_vec).collect() } else { Vec::new() };
        let (vocab, pieces) = vocab_of(text.as_bytes(), &specials);
        let setup = Setup::new(&config, vocab.clone());
        assert!(!bound || specials.len() < 2 || setup.role_of(256) != crate::scan::TokenRole::Text, "{name}: bound");
        let mut batch = Batch::new(setup.clone());
        let mut lone: Vec<(u64, Turn, Vec<u64>, usize)> = Vec::new(); // seq, turn, target ids, position
        let mut next_seq = 1000u64;
        for _ in 0..60 {
            // Add or finish some sequences.
            if lone.len() < 6 && rng.below(3) > 0 {
                let key = format!("turn-{next_seq}");
                batch.add(next_seq, &key, false).unwrap();
                let ids = ids_of(text.as_bytes(), &pieces, &mut rng);
                lone.push((next_seq, Turn::start(&setup, &key), ids, 0));
                next_seq += 7;
            }
            if !lone.is_empty() && rng.below(6) == 0 {
                let (seq, mut turn, _, _) = lone.remove(rng.below(lone.len()));
                assert_eq!(batch.finish(seq).unwrap(), turn.finish().unwrap(), "{name}: finish");
                assert!(!batch.contains(seq));
            }
            if lone.is_empty() {
                continue;
            }
            // A draft of a random subset of rows, in random order.
            let k = 1 + rng.below(5);
            let mut rows: Vec<usize> = (0..lone.len()).filter(|_| rng.below(4) > 0).collect();
            rows.sort_by_key(|_| rng.below(100));
            let (mut seqs, mut tokens, mut lengths) = (Vec::new(), Vec::new(), Vec::new());
            let mut want = Vec::new();
            for &r in &rows {
                let (seq, turn, ids, pos) = &mut lone[r];
                let n = rng.below(k + 1);
                let mut row: Vec<u64> = (0..k).map(|j| ids.get(*pos + j).copied().unwrap_or(b' '.into())).collect();
                if rng.below(4) == 0 {
                    row[rng.below(k)] = rng.below(256) as u64;
                }
                seqs.push(*seq);
                tokens.extend(&row);
                lengths.push(n);
                let toks: Vec<TokenIn<'_>> = row[..n].iter().map(|&i| TokenIn::Id(i)).collect();
                let out = turn.draft(&toks).unwrap();
                if !out.is_empty() {
                    want.push((*seq, out));
                }
            }
            let got = batch.draft(DraftRows { seqs: &seqs, tokens: &tokens, width: k, lengths: Some(&lengths) });
            assert_eq!(by_seq(&got.unwrap()), want, "{name}: draft");
            // A verify of every sequence with something pending (and some without).
            let (mut seqs, mut counts, mut corrections, mut want) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for (seq, turn, ids, pos) in &mut lone {
                if turn.undecided_len() == 0 && rng.below(2) == 0 {
                    continue;
                }
                let n = rng.below(turn.undecided_len() + 1);
                let c = if rng.below(2) == 0 { -1 } else { ids.get(*pos + n).map_or(-1, |&i| i as i64) };
                seqs.push(*seq);
                counts.push(n);
                corrections.push(c);
                let out = turn.verify(n, (c >= 0).then(|| TokenIn::Id(c as u64))).unwrap();
                *pos += n + usize::from(c >= 0);
                if !out.is_empty() {
                    want.push((*seq, out));
                }
            }
            let got = batch.verify(VerifyRows { seqs: &seqs, n_accepted: &counts, corrections: Some(&corrections) });
            assert_eq!(by_seq(&got.unwrap()), want, "{name}: verify");
        }
        for (seq, mut turn, _, _) in lone {
            assert_eq!(batch.turn(seq).unwrap().accepted_text(), turn.accepted_text());
            assert_eq!(batch.finish(seq).unwrap(), turn.finish().unwrap(), "{name}: finish");
        }
        assert!(batch.is_empty());
    }
}

fn hermes_batch() -> Batch {
    let config = TurnConfig::builtin("hermes", "", 1 << 20).unwrap();
    let (vocab, _) = vocab_of(b"", &[]);
    Batch::new(Setup::new(&config, vocab))
}

#[test]
fn caller_mistakes_in_any_row_change_nothing() {
    let mut b = hermes_batch();
    b.add(1, "a", false).unwrap();
    b.add(2, "b", false).unwrap();
    assert!(matches!(b.add(1, "again", false), Err(CoreError::DuplicateSequence { seq: 1, .. })));
    let ok = DraftRows { seqs: &[1, 2], tokens: &[65, 66, 67, 68], width: 2, lengths: None };
    let bad: [(DraftRows<'_>, fn(&CoreError) -> bool); 6] = [
        (DraftRows { seqs: &[1, 3], ..ok }, |e| matches!(e, CoreError::UnknownSequence { seq: 3 })),
        (DraftRows { seqs: &[2, 2], ..ok }, |e| matches!(e, CoreError::DuplicateSequence { seq: 2, .. })),
        (DraftRows { tokens: &[65, 66, 67], ..ok }, |e| matches!(e, CoreError::BatchShape { .. })),
        (DraftRows { lengths: Some(&[1]), ..ok }, |e| matches!(e, CoreError::BatchShape { .. })),
        (DraftRows { lengths: Some(&[1, 3]), ..ok }, |e| matches!(e, CoreError::BatchShape { .. })),
        (
            DraftRows { tokens: &[65, 66, 67, 999], ..ok },
            |e| matches!(e, CoreError::InSequence { seq: 2, error } if matches!(**error, CoreError::UnknownTokenId { id: 999, .. })),
        ),
    ];
    for (rows, is) in bad {
        let err = b.draft(rows).unwrap_err();
        assert!(is(&err), "{err:?}");
        assert_eq!((b.turn(1).unwrap().ledger().len(), b.turn(2).unwrap().ledger().len()), (0, 0));
    }
    b.draft(ok).unwrap();
    let verify = VerifyRows { seqs: &[1, 2], n_accepted: &[2, 1], corrections: None };
    let bad: [VerifyRows<'_>; 4] = [
        VerifyRows { n_accepted: &[2, 3], ..verify },
        VerifyRows { n_accepted: &[2], ..verify },
        VerifyRows { corrections: Some(&[-1, -2]), ..verify },
        VerifyRows { corrections: Some(&[-1, 999]), ..verify },
    ];
    for rows in bad {
        assert!(b.verify(rows).is_err());
        assert_eq!((b.turn(1).unwrap().undecided_len(), b.turn(2).unwrap().undecided_len()), (2, 2));
    }
    let out = b.verify(VerifyRows { corrections: Some(&[-1, 90]), ..verify }).unwrap();
    assert!(out.rows.is_empty());
    assert_eq!(b.turn(2).unwrap().accepted_text(), b"CZ");
    assert!(matches!(b.finish(7), Err(CoreError::UnknownSequence { seq: 7 })));
}

#[test]
fn finished_slots_are_reused() {
    let mut b = hermes_batch();
    for seq in 0..4 {
        b.add(seq, "", false).unwrap();
    }
    b.finish(1).unwrap();
    b.add(10, "", false).unwrap();
    assert_eq!((b.len(), b.turns.len()), (4, 4));
    assert!(b.contains(10) && !b.contains(1));
}

/// A finished turn's buffers are freed by `finish`, not when its slot is next
/// used: a batch that shrinks after long turns holds none of them.
#[test]
fn a_finish_frees_the_turns_buffers() {
    let mut b = hermes_batch();
    for seq in 0..2 {
        b.add(seq, "", false).unwrap();
    }
    let tokens = vec![65; 2 * 4096];
    b.draft(DraftRows { seqs: &[0, 1], tokens: &tokens, width: 4096, lengths: None }).unwrap();
    b.verify(VerifyRows { seqs: &[0, 1], n_accepted: &[4096, 4096], corrections: None }).unwrap();
    b.finish(0).unwrap();
    let vacated = &b.turns[0];
    assert_eq!((vacated.ledger().len(), vacated.live_text().len()), (0, 0));
    assert_eq!(vacated.held_bytes(), 0, "the slot's turn holds no buffer");
    assert!(b.turn(1).unwrap().held_bytes() >= 4096 * 4, "the other turn is untouched");
}

/// The rows of one call are remembered for the next call naming the same
/// sequences; adding or finishing a sequence in between must be seen.
#[test]
fn the_same_rows_after_a_finish_or_an_add_are_resolved_again() {
    let mut b = hermes_batch();
    for seq in 0..3 {
        b.add(seq, "", false).unwrap();
    }
    let rows = DraftRows { seqs: &[0, 1, 2], tokens: &[65, 66, 67], width: 1, lengths: None };
    b.draft(rows).unwrap();
    b.draft(rows).unwrap();
    b.finish(1).unwrap();
    assert!(matches!(b.draft(rows), Err(CoreError::UnknownSequence { seq: 1 })));
    assert_eq!(b.turn(0).unwrap().live_text(), b"AA", "a refused call changes nothing");
    b.add(7, "", false).unwrap(); // takes the slot sequence 1 left
    assert!(matches!(b.draft(rows), Err(CoreError::UnknownSequence { seq: 1 })));
    b.add(1, "", false).unwrap();
    b.draft(rows).unwrap();
    assert_eq!(b.turn(1).unwrap().live_text(), b"B", "sequence 1 starts again in its new slot");
    assert_eq!(b.turn(7).unwrap().live_text(), b"");
    assert_eq!(b.turn(2).unwrap().live_text(), b"CCC");
    let twice = DraftRows { seqs: &[0, 0], tokens: &[65, 65], width: 1, lengths: None };
    assert!(matches!(b.draft(twice), Err(CoreError::DuplicateSequence { seq: 0, .. })));
    assert!(
        matches!(b.draft(twice), Err(CoreError::DuplicateSequence { seq: 0, .. })),
        "a refused call is not remembered"
    );
}

/// Rows of ids below the vocabulary's dense prefix are checked without resolving
/// them; an id past a hole in the vocabulary is resolved, and refused when it has
/// no piece, in a draft and in a correction alike, changing nothing.
#[test]
fn ids_past_a_hole_in_the_vocabulary_are_checked_one_by_one() {
    let mut v = VocabBuilder::default();
    for (id, piece) in [(0u64, "a"), (1, "b"), (2, "c"), (5, "f")] {
        v.insert(id, piece.as_bytes()).unwrap();
    }
    let vocab = Arc::new(v.build());
    assert_eq!(vocab.dense_below(), 3);
    let mut b = Batch::new(Setup::new(&TurnConfig::builtin("hermes", "", 1 << 20).unwrap(), vocab));
    b.add(1, "a", false).unwrap();
    b.add(2, "b", false).unwrap();
    let rows = |tokens| DraftRows { seqs: &[1, 2], tokens, width: 2, lengths: None };
    let refused = b.draft(rows(&[0, 1, 5, 3])).unwrap_err();
    assert!(
        matches!(&refused, CoreError::InSequence { seq: 2, error } if matches!(**error, CoreError::UnknownTokenId { id: 3, .. })),
        "{refused:?}"
    );
    assert_eq!((b.turn(1).unwrap().ledger().len(), b.turn(2).unwrap().ledger().len()), (0, 0));
    b.draft(rows(&[0, 1, 5, 2])).unwrap();
    let verify = |c| VerifyRows { seqs: &[1, 2], n_accepted: &[2, 2], corrections: Some(c) };
    assert!(b.verify(verify(&[0, 4])).is_err());
    assert_eq!((b.turn(1).unwrap().undecided_len(), b.turn(2).unwrap().undecided_len()), (2, 2));
    b.verify(verify(&[5, 1])).unwrap();
    assert_eq!((b.turn(1).unwrap().accepted_text(), b.turn(2).unwrap().accepted_text()), (&b"abf"[..], &b"fcb"[..]));
}

/// A random tree of `n` nodes over `ids` (each a child of -1 or of an earlier
/// node), siblings distinct; its first node's chain follows the text.
fn random_tree(ids: &[u64], pos: usize, n: usize, rng: &mut Rng) -> (Vec<u64>, Vec<i64>) {
    let (mut tokens, mut parents): (Vec<u64>, Vec<i64>) = (Vec::new(), Vec::new());
    for i in 0..n {
        let parent = if i == 0 { -1 } else { rng.below(i + 1) as i64 - 1 };
        let depth = std::iter::successors(Some(parent), |&p| (p >= 0).then(|| parents[p as usize])).count() - 1;
        let mut id = if rng.below(3) > 0 { ids.get(pos + depth).copied().unwrap_or(32) } else { rng.below(256) as u64 };
        while tokens.iter().zip(&parents).any(|(&t, &p)| p == parent && t == id) {
            id = (id + 1) % 256;
        }
        tokens.push(id);
        parents.push(parent);
    }
    (tokens, parents)
}

/// The path from a root down to `node` (empty for -1).
fn path_to(parents: &[i64], node: i64) -> Vec<i64> {
    let mut path: Vec<i64> =
        std::iter::successors((node >= 0).then_some(node), |&p| Some(parents[p as usize]).filter(|&q| q >= 0))
            .collect();
    path.reverse();
    path
}

/// Trees drafted and verified for many sequences in one call each: every
/// sequence gets exactly what a lone turn given its own tree and path gets, with
/// parents shared by every row or one row each, and rows of different sizes.
#[test]
fn batched_trees_give_each_sequence_what_a_lone_turn_gives() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (name, text) in samples() {
        let config = TurnConfig::builtin(name, "", 1 << 20).unwrap();
        let (vocab, pieces) = vocab_of(text.as_bytes(), &[]);
        let setup = Setup::new(&config, vocab.clone());
        let mut batch = Batch::new(setup.clone());
        let mut lone: Vec<(u64, Turn, Vec<u64>, usize)> = Vec::new();
        for seq in 0..4u64 {
            let key = format!("turn-{seq}");
            batch.add(seq, &key, false).unwrap();
            lone.push((seq, Turn::start(&setup, &key), ids_of(text.as_bytes(), &pieces, &mut rng), 0));
        }
        for step in 0..30 {
            let width = 1 + rng.below(6);
            let shared = step % 2 == 0;
            let shared_tree = random_tree(&lone[0].2, lone[0].3, width, &mut rng);
            let (mut seqs, mut tokens, mut parents, mut lengths, mut want) = (vec![], vec![], vec![], vec![], vec![]);
            let mut trees = Vec::new();
            for (seq, turn, ids, pos) in &mut lone {
                let n = if shared { width - rng.below(2).min(width - 1) } else { rng.below(width + 1) };
                let (mut t, p) = if shared {
                    (shared_tree.0.clone(), shared_tree.1.clone())
                } else {
                    let (mut t, mut p) = random_tree(ids, *pos, n, &mut rng);
                    t.resize(width, 0);
                    p.resize(width, -1);
                    (t, p)
                };
                if shared {
                    // Rows share the tree's shape; their tokens follow their own texts.
                    let fresh = random_tree(ids, *pos, width, &mut rng).0;
                    for i in 0..width {
                        let mut id = fresh[i];
                        while t[..i].iter().zip(&p[..i]).any(|(&x, &q)| q == p[i] && x == id) {
                            id = (id + 1) % 256;
                        }
                        t[i] = id;
                    }
                }
                let toks: Vec<TokenIn<'_>> = t[..n].iter().map(|&i| TokenIn::Id(i)).collect();
                let out = turn.draft_tree(&toks, &p[..n]).unwrap();
                if !out.is_empty() {
                    want.push((*seq, out));
                }
                seqs.push(*seq);
                tokens.extend(&t);
                parents.extend(&p);
                lengths.push(n);
                trees.push((t, p, n));
            }
            let rows = DraftRows { seqs: &seqs, tokens: &tokens, width, lengths: Some(&lengths) };
            let tree_parents = if shared { TreeParents::Shared(&shared_tree.1) } else { TreeParents::PerRow(&parents) };
            let got = batch.draft_trees(rows, tree_parents).unwrap();
            assert_eq!(by_seq(&got), want, "{name}: draft_trees");
            let depth = width;
            let (mut paths, mut corrections, mut want) = (vec![], vec![], vec![]);
            for ((seq, turn, ids, pos), (_, p, n)) in lone.iter_mut().zip(&trees) {
                let leaf = rng.below(*n + 1) as i64 - 1;
                let path = path_to(&p[..*n], leaf);
                let c = if rng.below(2) == 0 { -1 } else { ids.get(*pos + path.len()).map_or(-1, |&i| i as i64) };
                let nodes: Vec<usize> = path.iter().map(|&x| x as usize).collect();
                let out = turn.verify_path(&nodes, (c >= 0).then(|| TokenIn::Id(c as u64))).unwrap();
                *pos += path.len() + usize::from(c >= 0);
                if !out.is_empty() {
                    want.push((*seq, out));
                }
                let mut row = path.clone();
                row.resize(depth, -1);
                paths.extend(row);
                corrections.push(c);
            }
            let got =
                batch.verify_paths(PathRows { seqs: &seqs, paths: &paths, depth, corrections: Some(&corrections) });
            assert_eq!(by_seq(&got.unwrap()), want, "{name}: verify_paths");
        }
        for (seq, mut turn, _, _) in lone {
            assert_eq!(batch.turn(seq).unwrap().accepted_text(), turn.accepted_text());
            assert_eq!(batch.finish(seq).unwrap(), turn.finish().unwrap(), "{name}: finish");
        }
    }
}

#[test]
fn tree_mistakes_in_any_row_change_nothing() {
    let mut b = hermes_batch();
    b.add(1, "a", false).unwrap();
    b.add(2, "b", false).unwrap();
    let ok = DraftRows { seqs: &[1, 2], tokens: &[65, 66, 67, 68], width: 2, lengths: None };
    let shared = TreeParents::Shared(&[-1, 0]);
    let bad: [(DraftRows<'_>, TreeParents<'_>); 5] = [
        (ok, TreeParents::Shared(&[-1])),
        (ok, TreeParents::PerRow(&[-1, 0])),
        (ok, TreeParents::PerRow(&[-1, 0, -1, 1])), // row 2: node 1 its own parent
        (DraftRows { tokens: &[65, 66, 67, 67], ..ok }, TreeParents::Shared(&[-1, -1])), // twin roots in row 2
        (DraftRows { tokens: &[65, 66, 67, 999], ..ok }, shared),
    ];
    for (rows, parents) in bad {
        assert!(b.draft_trees(rows, parents).is_err());
        assert_eq!((b.turn(1).unwrap().ledger().len(), b.turn(2).unwrap().ledger().len()), (0, 0));
    }
    b.draft_trees(ok, shared).unwrap();
    let v = PathRows { seqs: &[1, 2], paths: &[0, 1, 0, -1], depth: 2, corrections: None };
    let bad: [PathRows<'_>; 5] = [
        PathRows { paths: &[0, 1, -1, 0], ..v }, // a node after the padding
        PathRows { paths: &[0, 1, 1, -1], ..v }, // node 1 is no root
        PathRows { paths: &[0, 1, -2, -1], ..v },
        PathRows { paths: &[0, 1, 0], ..v },
        PathRows { corrections: Some(&[-1, 999]), ..v },
    ];
    for rows in bad {
        assert!(b.verify_paths(rows).is_err(), "{rows:?}");
        assert!(b.turn(1).unwrap().tree_pending() && b.turn(2).unwrap().tree_pending());
    }
    b.verify_paths(v).unwrap();
    assert_eq!((b.turn(1).unwrap().accepted_text(), b.turn(2).unwrap().accepted_text()), (&b"AB"[..], &b"C"[..]));
}
