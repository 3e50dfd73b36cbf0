//! The block table: every block of the turn that is not final yet, and the one
//! fold from what the scanner saw to what a caller acts on (`Outcome`).
//!
//! A block is *open* until it ends. An ended block holds its items (calls, or
//! why it is malformed) and the token that *confirms* its end: the closing
//! token itself for delimited formats, the next token (or the end of the turn)
//! for formats whose blocks end on a bracket. Its calls are *announced*
//! (`CallClosed`) when it is confirmed, and *committed* once every live token
//! through the confirming one is accepted. A rejection that reaches into a
//! block undoes exactly what those tokens did:
//! - its opening rejected: the block is gone;
//! - its last token rejected: it is open again (announced calls are retracted);
//! - only its confirming token rejected: it waits for confirmation again,
//!   keeping its key and its announcement (its early reads stay valid).
//!
//! A reasoning closer that closed nothing is kept here too, as an entry that
//! is already ended and confirmed: it commits in stream order with the
//! blocks, and goes when its tokens are rejected.
//!
//! Positions here are live-stream token positions.

use super::keys::CommitKey;
use super::outcome::{CallRecord, MalformedRecord, Outcome, ReasoningRecord};
use crate::scan::Item as Parsed;
use std::sync::Arc;

/// One item of an ended block: a call, or a call (or whole block) that is malformed.
#[derive(Debug, Clone)]
enum Item {
    Call(Arc<CallRecord>),
    Malformed(Arc<MalformedRecord>),
    ReasoningUnopened(Arc<ReasoningRecord>),
}

#[derive(Debug, Clone)]
struct End {
    /// The block's last token: the one holding its last byte.
    last: usize,
    /// The token that confirmed the end, once one has.
    confirmed_at: Option<usize>,
    /// Whether its calls went out as `CallClosed` (and are not retracted).
    announced: bool,
    items: Vec<Item>,
}

#[derive(Debug, Clone)]
struct Block {
    id: u64,
    /// The token holding the first byte of its open delimiter.
    start: usize,
    /// The token that completed its open delimiter.
    opened_at: usize,
    /// Live-text offset of its body.
    body_at: usize,
    end: Option<End>,
}

/// The blocks that are not final, in stream order. At most one of them is open;
/// ended ones wait for confirmation or acceptance. Cloned per node of a token
/// tree: it holds only blocks not final yet, a handful at most.
#[derive(Debug, Default, Clone)]
pub(super) struct BlockTable {
    blocks: Vec<Block>,
    next_id: u64,
}

impl Block {
    fn announce(&mut self, out: &mut Vec<Outcome>) {
        let Some(end) = &mut self.end else { return };
        if !end.announced {
            end.announced = true;
            out.extend(calls(&end.items).map(|c| Outcome::CallClosed(c.clone())));
        }
    }

    /// Takes back what `out` was told of this block's calls.
    fn retract(end: &End, out: &mut Vec<Outcome>) {
        if end.announced {
            out.extend(calls(&end.items).map(|c| Outcome::CallRetracted(c.clone())));
        }
    }
}

fn calls(items: &[Item]) -> impl Iterator<Item = &Arc<CallRecord>> {
    items.iter().filter_map(|i| match i {
        Item::Call(c) => Some(c),
        Item::Malformed(_) | Item::ReasoningUnopened(_) => None,
    })
}

impl BlockTable {
    /// A block opened; its open delimiter spans tokens `start..=opened_at`, its body starts at byte `body_at`.
    pub(super) fn open(&mut self, start: usize, opened_at: usize, body_at: usize) {
        let id = self.next_id;
        self.next_id += 1;
        self.blocks.push(Block { id, start, opened_at, body_at, end: None });
    }

    /// The open block ended in token `last` with `body`, its items in order
    /// (calls, and why others are not calls); each item takes the next key from
    /// `next_key`. Confirmed ends announce their calls now.
    pub(super) fn end(
        &mut self,
        last: usize,
        confirmed: bool,
        body: Vec<Parsed>,
        mut next_key: impl FnMut() -> CommitKey,
        out: &mut Vec<Outcome>,
    ) {
        // The scanner ends blocks in the order it opened them, one at a time: the
        // open one is the last (searched from the back, so many blocks in one
        // window cost linear time).
        let Some(block) = self.blocks.iter_mut().rev().find(|b| b.end.is_none()) else {
            debug_assert!(false, "a block ended that never opened");
            return;
        };
        let span = block.start..last + 1;
        let items = (0u32..)
            .zip(body)
            .map(|(index, item)| {
                let (block, body_at, span, key) = (block.id, block.body_at, span.clone(), next_key());
                match item {
                    Ok(call) => Item::Call(Arc::new(CallRecord { block, index, span, key, call, body_at })),
                    Err(error) => Item::Malformed(Arc::new(MalformedRecord {
                        block,
                        index,
                        span,
                        key,
                        error,
                        body_at,
                        tool_call_indices: std::sync::OnceLock::new(),
                    })),
                }
            })
            .collect();
        block.end = Some(End { last, confirmed_at: confirmed.then_some(last), announced: false, items });
        if confirmed {
            block.announce(out);
        }
    }

    /// A reasoning closer that closed nothing spans tokens `start..=last`.
    /// It is no block: it takes no block id and no key.
    pub(super) fn reasoning_unopened(&mut self, start: usize, last: usize) {
        let record = Arc::new(ReasoningRecord { span: start..last + 1 });
        let end = End { last, confirmed_at: Some(last), announced: true, items: vec![Item::ReasoningUnopened(record)] };
        self.blocks.push(Block { id: u64::MAX, start, opened_at: last, body_at: usize::MAX, end: Some(end) });
    }

    /// Token `at` confirms the block that ended unconfirmed.
    pub(super) fn confirm(&mut self, at: usize, out: &mut Vec<Outcome>) {
        // At most one block awaits confirmation: the last that ended.
        let waiting = self.blocks.iter_mut().rev().find(|b| b.end.as_ref().is_some_and(|e| e.confirmed_at.is_none()));
        let Some(block) = waiting else {
            debug_assert!(false, "a confirmation with no block awaiting one");
            return;
        };
        if let Some(end) = &mut block.end {
            end.confirmed_at = Some(at);
        }
        block.announce(out);
    }

    /// Whether `call` is one of this table's calls, announced and not retracted.
    pub(super) fn is_announced(&self, call: &Arc<CallRecord>) -> bool {
        self.blocks
            .iter()
            .any(|b| b.end.as_ref().is_some_and(|e| e.announced && calls(&e.items).any(|c| Arc::ptr_eq(c, call))))
    }

    /// The live stream was cut back to `len` tokens: undoes what the dropped
    /// tokens did to each block (see the module documentation).
    pub(super) fn rollback(&mut self, len: usize, out: &mut Vec<Outcome>) {
        self.blocks.retain_mut(|b| {
            if b.opened_at >= len {
                if let Some(end) = &b.end {
                    Block::retract(end, out);
                }
                return false;
            }
            if let Some(end) = &mut b.end {
                if end.last >= len {
                    Block::retract(end, out);
                    b.end = None;
                } else if end.confirmed_at.is_some_and(|c| c >= len) {
                    end.confirmed_at = None;
                }
            }
            true
        });
    }

    /// Every live token is accepted now: commits each confirmed block, in stream
    /// order. `accepted_whole(start, last)` checks on the ledger that exactly the
    /// block's tokens were accepted; a block that fails it (a core bug) is
    /// retracted, never committed.
    pub(super) fn commit(&mut self, accepted_whole: impl Fn(usize, usize) -> bool, out: &mut Vec<Outcome>) {
        // A block still open or awaiting confirmation holds back every block after
        // it (the scanner confirms a block before another opens, so none should
        // wait behind one): commits go out in stream order, whatever the grouping.
        let mut waiting = false;
        self.blocks.retain_mut(|b| {
            waiting |= b.end.as_ref().is_none_or(|e| e.confirmed_at.is_none());
            if waiting {
                return true;
            }
            let Some(end) = &b.end else { return true };
            if !accepted_whole(b.start, end.last) {
                debug_assert!(false, "block {} is confirmed but not accepted whole", b.id);
                Block::retract(end, out);
                return false;
            }
            let Some(end) = b.end.take() else { return false };
            for item in end.items {
                out.push(match item {
                    Item::Call(c) => Outcome::CallCommitted(c),
                    Item::Malformed(m) => Outcome::BlockMalformed(m),
                    Item::ReasoningUnopened(r) => Outcome::ReasoningUnopened(r),
                });
            }
            false
        });
    }
}
