//! Token trees (EAGLE, Medusa): a step drafts a tree of candidate tokens, the
//! verifier accepts one path from a root down, and every other node is rejected.
//!
//! Each node's state forks from its parent's: its checkpoint (scanner state)
//! continues the parent's (the key hash is absorbed along the path a key is
//! taken on, `KeyCursor`), and its block table is the parent's table advanced
//! by the node's token. The nodes are scanned in depth-first order over the live
//! window, which holds the path to the current node, and over one live block
//! table: a node keeps only the blocks its token may have changed (`TableTail`),
//! and the table is restored from them when the walk steps back to a node with
//! another child. So each node costs what one drafted token costs, whatever the
//! depth and however many calls its branch holds. A block closing on any branch is
//! announced (`CallClosed`) with the key of its own path, once, whichever
//! branches share it.
//!
//! `verify_path(P)` lays P's tokens and saved states onto the live stream, takes
//! P's block table, and then ends exactly as `draft(P)` and `verify(len(P))`
//! would: the calls announced on P stay announced (and commit as those objects),
//! every other announced call is retracted. The ledger records every node, in
//! the order drafted; P's are accepted, the rest rejected.

use super::blocks::{BlockTable, TableTail};
use super::outcome::{CallRecord, Outcome};
use super::window::{Checkpoint, Shift};
use super::{TokenIn, Turn};
use crate::error::CoreError;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A drafted tree awaiting `verify_path`.
#[derive(Debug)]
pub(super) struct Tree {
    /// Each node's parent, `None` for a child of the last accepted token.
    parents: Vec<Option<u32>>,
    /// Ledger position of node 0; node `i` is at `first_ledger + i`.
    first_ledger: usize,
    /// The state after each node, on its own path.
    checkpoints: Vec<Checkpoint>,
    /// The blocks not final after each node, on its own path: what its token may
    /// have changed over its parent's table.
    tails: Vec<TableTail>,
    /// The blocks before the tree: where every root's path starts.
    base: BlockTable,
    /// Every call announced on some branch, once each, in the order announced.
    announced: Vec<Arc<CallRecord>>,
    /// Where each node's text changes class (streaming output), laid back with it.
    shifts: Vec<Vec<Shift>>,
}

/// A tree's parents, checked by `Turn::check_draft_tree`: each `None` (a root)
/// or an earlier node.
#[derive(Debug)]
pub(crate) struct Parents(Vec<Option<u32>>);

fn bad(reason: String) -> CoreError {
    CoreError::BadTree { reason }
}

/// Each node's parent, checked: `parents[i]` is -1 or an earlier node.
fn parents_of(parents: &[i64], len: usize) -> Result<Vec<Option<u32>>, CoreError> {
    if parents.len() != len {
        return Err(bad(format!("{len} tokens but {} parents; give each node its parent", parents.len())));
    }
    (0..)
        .zip(parents)
        .map(|(i, &p)| match p {
            -1 => Ok(None),
            p if (0..i).contains(&p) => Ok(Some(p.unsigned_abs() as u32)),
            p => Err(bad(format!("parents[{i}] is {p}; it must be -1 (a root) or an earlier node (0..{i})"))),
        })
        .collect()
}

/// Refuses two siblings that are the same token: they are one continuation, whose
/// calls would be announced twice under one key (keys are per path).
fn distinct_siblings(tokens: &[TokenIn<'_>], parents: &[Option<u32>]) -> Result<(), CoreError> {
    let mut seen = HashMap::with_capacity(tokens.len());
    for (i, (token, parent)) in tokens.iter().zip(parents).enumerate() {
        let token = match *token {
            TokenIn::Id(id) => (Some(id), &[][..]),
            TokenIn::Piece(piece) => (None, piece),
        };
        if let Some(j) = seen.insert((*parent, token), i) {
            return Err(bad(format!(
                "nodes {j} and {i} are the same token under the same parent; draft each continuation once"
            )));
        }
    }
    Ok(())
}

/// The nodes in depth-first order, children in index order.
fn depth_first(parents: &[Option<u32>]) -> Vec<(usize, usize)> {
    const NONE: usize = usize::MAX;
    let n = parents.len();
    let (mut first_child, mut next_sibling, mut first_root) = (vec![NONE; n], vec![NONE; n], NONE);
    for i in (0..n).rev() {
        let head = match parents[i] {
            Some(p) => &mut first_child[p as usize],
            None => &mut first_root,
        };
        next_sibling[i] = *head;
        *head = i;
    }
    // (node, depth of its parent: how many tree tokens precede it on its path)
    let mut order = Vec::with_capacity(n);
    let mut stack = vec![(first_root, 0)];
    while let Some((node, depth)) = stack.pop() {
        if node == NONE {
            continue;
        }
        order.push((node, depth));
        stack.push((next_sibling[node], depth));
        stack.push((first_child[node], depth + 1));
    }
    order
}

impl Turn {
    /// Drafts a tree: `tokens[i]` is node `i`, `parents[i]` its parent (an earlier
    /// node) or -1 for a child of the last accepted token. Returns the `CallClosed`
    /// of every call that closes on some branch, in depth-first order. Cost is
    /// proportional to the tree. Nothing changes when it fails.
    pub fn draft_tree(&mut self, tokens: &[TokenIn<'_>], parents: &[i64]) -> Result<Vec<Outcome>, CoreError> {
        let mut out = Vec::new();
        self.draft_tree_into(tokens, parents, &mut out)?;
        Ok(out)
    }

    /// `draft_tree`, appending its outcomes to `out`.
    pub fn draft_tree_into(
        &mut self,
        tokens: &[TokenIn<'_>],
        parents: &[i64],
        out: &mut Vec<Outcome>,
    ) -> Result<(), CoreError> {
        let parents = self.check_draft_tree(tokens, parents)?;
        self.draft_tree_checked(tokens, parents, out);
        Ok(())
    }

    /// Checks a `draft_tree(tokens, parents)` without changing anything; returns
    /// the parents, checked, for `draft_tree_checked`.
    pub(crate) fn check_draft_tree(&self, tokens: &[TokenIn<'_>], parents: &[i64]) -> Result<Parents, CoreError> {
        self.check_open()?;
        if self.tree.is_some() {
            return Err(CoreError::TreePending);
        }
        if self.ledger.undecided() > 0 {
            return Err(CoreError::DraftPending { pending: self.ledger.undecided() });
        }
        let parents = parents_of(parents, tokens.len())?;
        distinct_siblings(tokens, &parents)?;
        self.check_room(tokens.iter().copied())?;
        Ok(Parents(parents))
    }

    /// `draft_tree` of what `check_draft_tree` accepted.
    pub(crate) fn draft_tree_checked(&mut self, tokens: &[TokenIn<'_>], parents: Parents, out: &mut Vec<Outcome>) {
        let Parents(parents) = parents;
        let first_ledger = self.ledger.len();
        for &t in tokens {
            if let Ok(r) = self.setup.resolve(t) {
                self.ledger.append(r.drafted(), r.bytes.len());
            }
        }
        self.early.start(self.window.text().len());
        let base = self.blocks.clone();
        let base_tail = base.tail_from(base.changeable_from());
        let n = tokens.len();
        let mut checkpoints = Vec::with_capacity(n);
        let mut tails: Vec<TableTail> = Vec::with_capacity(n);
        checkpoints.resize(n, self.window.base());
        tails.resize_with(n, TableTail::default);
        // The node whose table `self.blocks` holds (None: the base's).
        let mut last: Option<u32> = None;
        let mut announced: Vec<Arc<CallRecord>> = Vec::new();
        // The same calls, to find one in O(1): a call a shared block ends is met on every branch below it.
        let mut seen: HashSet<*const CallRecord> = HashSet::new();
        let mut shifts: Vec<Vec<Shift>> = Vec::new();
        shifts.resize_with(n, Vec::new);
        let mut node_out = Vec::new();
        self.window.walk(true);
        for (node, depth) in depth_first(&parents) {
            let (setup, mut live) = self.split(super::Drafting::Undecided);
            live.window.retreat(depth);
            // Visited right after its parent (a first child), the table is the parent's already.
            if last != parents[node] {
                live.blocks.restore(parents[node].map_or(&base_tail, |p| &tails[p as usize]));
            }
            let from = live.blocks.changeable_from();
            let Ok(r) = setup.resolve(tokens[node]) else {
                debug_assert!(false, "a checked token failed to resolve");
                continue;
            };
            let before = live.window.shifts().len();
            live.advance(r, first_ledger + node, &mut node_out);
            if live.window.shifts().len() > before {
                shifts[node] = live.window.shifts()[before..].to_vec();
            }
            for o in node_out.drain(..) {
                if let Outcome::CallClosed(c) = &o {
                    if !seen.insert(Arc::as_ptr(c)) {
                        continue;
                    }
                    announced.push(c.clone());
                }
                out.push(o);
            }
            checkpoints[node] = live.window.last();
            tails[node] = live.blocks.tail_from(from);
            last = Some(node as u32);
        }
        self.window.retreat(0);
        self.window.walk(false);
        self.blocks = base.clone();
        self.tree = Some(Box::new(Tree { parents, first_ledger, checkpoints, tails, base, announced, shifts }));
    }

    /// Whether a drafted tree awaits `verify_path`.
    #[must_use]
    pub fn tree_pending(&self) -> bool {
        self.tree.is_some()
    }

    /// Checks a `verify_path(path, correction)` without changing anything.
    pub fn check_verify_path(&self, path: &[usize], correction: Option<TokenIn<'_>>) -> Result<(), CoreError> {
        self.check_open()?;
        let tree = self.tree.as_ref().ok_or(CoreError::NoTree)?;
        let mut parent = None;
        for (j, &node) in path.iter().enumerate() {
            let Some(&actual) = tree.parents.get(node) else {
                return Err(bad(format!("path[{j}] is {node}, past the tree's {} nodes", tree.parents.len())));
            };
            if actual != parent {
                let want = parent.map_or("a root (parent -1)".to_owned(), |p| format!("a child of node {p}"));
                return Err(bad(format!(
                    "path[{j}] is node {node}, which is not {want}; give a path from a root down"
                )));
            }
            parent = Some(node as u32);
        }
        if let Some(c) = correction {
            self.check_room(std::iter::once(c))?;
        }
        Ok(())
    }

    /// Accepts the tree's nodes on `path` (from a root down), rejects every other
    /// node, then appends `correction` as accepted. Returns the retractions of the
    /// calls announced off the path, the correction's outcomes, then the commits:
    /// from here on the turn is exactly as if `path` alone had been drafted and
    /// accepted. Nothing changes when it fails.
    pub fn verify_path(&mut self, path: &[usize], correction: Option<TokenIn<'_>>) -> Result<Vec<Outcome>, CoreError> {
        let mut out = Vec::new();
        self.verify_path_into(path, correction, &mut out)?;
        Ok(out)
    }

    /// `verify_path`, appending its outcomes to `out`.
    pub fn verify_path_into(
        &mut self,
        path: &[usize],
        correction: Option<TokenIn<'_>>,
        out: &mut Vec<Outcome>,
    ) -> Result<(), CoreError> {
        self.check_verify_path(path, correction)?;
        self.verify_path_checked(path, correction, out);
        Ok(())
    }

    /// `verify_path` of what `check_verify_path` accepted.
    pub(crate) fn verify_path_checked(
        &mut self,
        path: &[usize],
        correction: Option<TokenIn<'_>>,
        out: &mut Vec<Outcome>,
    ) {
        let Some(mut tree) = self.tree.take() else {
            debug_assert!(false, "verify_path_checked with no tree");
            return;
        };
        for &node in path {
            let at = tree.first_ledger + node;
            let (pos, _) = self.window.append(self.setup.piece_of(self.ledger.token(at)), at);
            self.window.save(tree.checkpoints[node]);
            for s in &tree.shifts[node] {
                debug_assert_eq!(s.pos as usize, pos, "a node's depth is its place on its path");
                self.window.shift(pos, s.at as usize, s.class);
            }
        }
        // The path's table: the base's, advanced by each node's tail in turn.
        let mut blocks = std::mem::take(&mut tree.base);
        for &node in path {
            blocks.restore(&tree.tails[node]);
        }
        self.blocks = blocks;
        self.ledger.decide_only(path.iter().map(|&node| tree.first_ledger + node));
        self.window.keep(self.window.len());
        self.blocks.retract_unkept(&tree.announced, out);
        let from = out.len();
        self.read_unread(out);
        self.correct(correction, out);
        self.release(&out[from..], false);
    }
}

#[cfg(test)]
mod tests;
