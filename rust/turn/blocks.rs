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
//! An ended block's body may wait unread (`Unread`) while its end is undecided:
//! the turn reads it when the verifier accepts the end (`read_unread`), and
//! announces its calls then. Until read, it announces and commits nothing, and
//! no block after it is announced either: announcements keep stream order, which
//! the runtime orders conflicting calls by.
//!
//! A reasoning closer that closed nothing is kept here too, as an entry that
//! is already ended and confirmed: it commits in stream order with the
//! blocks, and goes when its tokens are rejected.
//!
//! Positions here are live-stream token positions.

use super::keys::{CommitHasher, CommitKey};
use super::outcome::{CallRecord, MalformedRecord, Outcome, ReasoningRecord};
use crate::scan::{BlockBody, Item as Parsed};
use std::collections::HashMap;
use std::ops::Range;
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
    /// Empty while `unread` holds the body.
    items: Vec<Item>,
    unread: Option<Unread>,
}

/// An ended block waiting behind an unread body: its own body, and what its
/// items' keys need.
#[derive(Debug, Clone)]
pub(super) struct Unread {
    /// Its bytes in the live text, or its items when the scanner read them already
    /// (a block that outgrew the limit), which wait only for the block before.
    pub(super) body: BlockBody,
    /// The key hash after the token that ended it.
    pub(super) hash: CommitHasher,
    /// The ordinal there of its first item: `Known`, or right after the items of
    /// the block before it, which ended unread in the same token (`AfterPrevious`).
    pub(super) first: First,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum First {
    Known(u32),
    AfterPrevious,
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
/// ended ones wait for confirmation or acceptance.
#[derive(Debug, Default, Clone)]
pub(super) struct BlockTable {
    blocks: Vec<Block>,
    next_id: u64,
    /// Ended blocks whose bodies wait unread: while there are any, none is announced.
    unread: usize,
}

/// What a token tree keeps of one node's table: the blocks from `from` on, where
/// `from` is the first block a token could still change in its parent's table
/// (`changeable_from`), and the counters. The blocks before `from` are the
/// parent's, and no token on the node's branch changes them: a node keeps only
/// what its token may have changed (the open block, the one awaiting
/// confirmation, the blocks it pushed), not a copy of the whole table, which on
/// a deep branch full of calls made a tree cost the square of its depth.
#[derive(Debug, Default, Clone)]
pub(super) struct TableTail {
    from: usize,
    blocks: Vec<Block>,
    next_id: u64,
    unread: usize,
}

#[cfg(test)]
impl TableTail {
    /// Blocks it holds: what a tree keeps of one node.
    pub(super) fn len(&self) -> usize {
        self.blocks.len()
    }
}

impl Block {
    /// A reasoning closer's entry: it takes no key.
    fn is_reasoning(&self) -> bool {
        self.id == u64::MAX
    }

    /// The items of this block ended in token `last` with `body`, each keyed by `next_key`.
    fn items(&self, last: usize, body: Vec<Parsed>, mut next_key: impl FnMut() -> CommitKey) -> Vec<Item> {
        let span = self.start..last + 1;
        (0u32..)
            .zip(body)
            .map(|(index, item)| {
                let (block, body_at, span, key) = (self.id, self.body_at, span.clone(), next_key());
                match item {
                    Ok(call) => Item::Call(Arc::new(CallRecord {
                        block,
                        index,
                        span,
                        key,
                        call,
                        body_at,
                        tool_call_id: std::sync::OnceLock::new(),
                    })),
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
            .collect()
    }

    fn announce(&mut self, out: &mut Vec<Outcome>) {
        let Some(end) = &mut self.end else { return };
        if !end.announced && end.unread.is_none() {
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
        next_key: impl FnMut() -> CommitKey,
        out: &mut Vec<Outcome>,
    ) {
        let held = self.unread > 0;
        let Some(block) = self.open_block() else { return };
        let items = block.items(last, body, next_key);
        block.end = Some(End { last, confirmed_at: confirmed.then_some(last), announced: false, items, unread: None });
        if confirmed && !held {
            block.announce(out);
        }
    }

    /// The open block ended in token `last`, its body left unread.
    pub(super) fn end_unread(&mut self, last: usize, confirmed: bool, unread: Unread) {
        let Some(block) = self.open_block() else { return };
        let confirmed_at = confirmed.then_some(last);
        block.end = Some(End { last, confirmed_at, announced: false, items: Vec::new(), unread: Some(unread) });
        self.unread += 1;
    }

    /// The block open now: the scanner ends blocks in the order it opened them,
    /// one at a time, so it is the last (searched from the back, so many blocks
    /// in one window cost linear time).
    fn open_block(&mut self) -> Option<&mut Block> {
        let block = self.blocks.iter_mut().rev().find(|b| b.end.is_none());
        debug_assert!(block.is_some(), "a block ended that never opened");
        block
    }

    /// Reads every unread body with `read` (the verifier accepted their ends), in
    /// stream order, and announces every confirmed block not announced yet: those
    /// read now and those held behind them.
    /// Returns the token the last block read ended in, and the ordinal after its
    /// items there: what a block ending later in that token is numbered from.
    pub(super) fn read_unread(
        &mut self,
        mut read: impl FnMut(Range<usize>) -> Vec<Parsed>,
        out: &mut Vec<Outcome>,
    ) -> Option<(usize, u32)> {
        self.unread = 0;
        let mut ended = None;
        // The ordinal after the last item of the block read last (`First::AfterPrevious`).
        let mut next = 0;
        for block in &mut self.blocks {
            let Some(end) = &mut block.end else { continue };
            if let Some(unread) = end.unread.take() {
                let last = end.last;
                next = match unread.first {
                    First::Known(first) => first,
                    First::AfterPrevious => next,
                };
                let next_key = || {
                    let key = unread.hash.key(next);
                    next += 1;
                    key
                };
                let parsed = match unread.body {
                    BlockBody::Unread(body) => read(body),
                    BlockBody::Read(items) => items,
                };
                let items = block.items(last, parsed, next_key);
                if let Some(end) = &mut block.end {
                    end.items = items;
                }
                ended = Some((last, next));
            }
            if block.end.as_ref().is_some_and(|e| e.confirmed_at.is_some()) {
                block.announce(out);
            }
        }
        ended
    }

    /// Whether no block is open or waits (between blocks, in most of a turn).
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Whether any ended block waits unread.
    #[inline]
    pub(super) fn has_unread(&self) -> bool {
        self.unread > 0
    }

    /// Whether a block that ended in token `last` waits unread: then so does
    /// every later block that ends in it (`First::AfterPrevious`), so the latest
    /// block that ended tells.
    pub(super) fn unread_in(&self, last: usize) -> bool {
        self.unread > 0
            && self
                .blocks
                .iter()
                .rev()
                .filter(|b| !b.is_reasoning())
                .find_map(|b| b.end.as_ref())
                .is_some_and(|e| e.last == last && e.unread.is_some())
    }

    /// A reasoning closer that closed nothing spans tokens `start..=last`.
    /// It is no block: it takes no block id and no key.
    pub(super) fn reasoning_unopened(&mut self, start: usize, last: usize) {
        let record = Arc::new(ReasoningRecord { span: start..last + 1 });
        let items = vec![Item::ReasoningUnopened(record)];
        let end = End { last, confirmed_at: Some(last), announced: true, items, unread: None };
        self.blocks.push(Block { id: u64::MAX, start, opened_at: last, body_at: usize::MAX, end: Some(end) });
    }

    /// Token `at` confirms the block that ended unconfirmed.
    pub(super) fn confirm(&mut self, at: usize, out: &mut Vec<Outcome>) {
        let held = self.unread > 0;
        // At most one block awaits confirmation: the last that ended.
        let waiting = self.blocks.iter_mut().rev().find(|b| b.end.as_ref().is_some_and(|e| e.confirmed_at.is_none()));
        let Some(block) = waiting else {
            debug_assert!(false, "a confirmation with no block awaiting one");
            return;
        };
        if let Some(end) = &mut block.end {
            end.confirmed_at = Some(at);
        }
        if !held {
            block.announce(out);
        }
    }

    /// Retracts, in order, each of `announced` (the calls announced on a tree's
    /// branches) that this table, the accepted path's, does not keep announced. A call
    /// stays announced when its block is announced here, or ended and only awaits
    /// confirmation, which a rejected node gave: rejecting only the confirming token
    /// never retracts a block whose own tokens are accepted (as `rollback` keeps it
    /// for a linear draft). The table's calls are indexed once, so a path with many
    /// calls costs their number, not its square (one search of the table per call).
    pub(super) fn retract_unkept(&mut self, announced: &[Arc<CallRecord>], out: &mut Vec<Outcome>) {
        let mut at: HashMap<*const CallRecord, usize> = HashMap::new();
        for (i, b) in self.blocks.iter().enumerate() {
            if let Some(end) = &b.end {
                for c in calls(&end.items) {
                    at.entry(Arc::as_ptr(c)).or_insert(i);
                }
            }
        }
        for call in announced {
            let end = at.get(&Arc::as_ptr(call)).and_then(|&i| self.blocks[i].end.as_mut());
            let kept = end.is_some_and(|end| {
                end.announced |= end.confirmed_at.is_none();
                end.announced
            });
            if !kept {
                out.push(Outcome::CallRetracted(call.clone()));
            }
        }
    }

    /// The first block a later token can change: the open block or the one awaiting
    /// confirmation, the earlier of the two (every block after it was opened
    /// later); the length when neither is. A token changes only those, and pushes
    /// blocks after them: announcing, committing, reading unread bodies and
    /// rolling back happen at a verify, never within a tree's walk. Scans back
    /// past those two and any reasoning entries only (none of them changes).
    pub(super) fn changeable_from(&self) -> usize {
        let mut from = self.blocks.len();
        for (i, b) in self.blocks.iter().enumerate().rev() {
            match &b.end {
                None => from = i,
                Some(e) if e.confirmed_at.is_none() => from = i,
                Some(_) if b.is_reasoning() => {}
                Some(_) => break,
            }
        }
        from
    }

    /// This table's blocks from `from` on, and its counters (see `TableTail`).
    pub(super) fn tail_from(&self, from: usize) -> TableTail {
        TableTail { from, blocks: self.blocks[from..].to_vec(), next_id: self.next_id, unread: self.unread }
    }

    /// Becomes the table `tail` was taken of: this table's blocks before
    /// `tail.from` are that table's (a table on the same branch, or its parent's).
    pub(super) fn restore(&mut self, tail: &TableTail) {
        self.blocks.truncate(tail.from);
        self.blocks.extend(tail.blocks.iter().cloned());
        (self.next_id, self.unread) = (tail.next_id, tail.unread);
    }

    /// The live stream was cut back to `len` tokens: undoes what the dropped
    /// tokens did to each block (see the module documentation).
    pub(super) fn rollback(&mut self, len: usize, out: &mut Vec<Outcome>) {
        let unread = &mut self.unread;
        self.blocks.retain_mut(|b| {
            if b.opened_at >= len {
                if let Some(end) = &b.end {
                    Block::retract(end, out);
                    *unread -= usize::from(end.unread.is_some());
                }
                return false;
            }
            if let Some(end) = &mut b.end {
                if end.last >= len {
                    Block::retract(end, out);
                    *unread -= usize::from(end.unread.is_some());
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
            // An unread body sits on undecided tokens, which a verify reads before it commits.
            debug_assert!(b.end.as_ref().is_none_or(|e| e.unread.is_none()), "block {} committed unread", b.id);
            waiting |= b.end.as_ref().is_none_or(|e| e.confirmed_at.is_none() || e.unread.is_some());
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
