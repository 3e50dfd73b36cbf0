//! Many turns advanced in one call: a serving engine's batch of sequences.
//!
//! The turns live in one slab (`Vec<Turn>`), addressed by slot; an engine's
//! sequence id maps to its slot through one small hash table. A call walks the
//! rows in the order given, so each row touches only its own turn's state: the
//! turn itself (a few hundred bytes, contiguous with its neighbours in the slab)
//! and the tails of its buffers. Every turn shares one `Setup` (scanner,
//! vocabulary, special-token roles), so adding a sequence allocates nothing
//! proportional to the vocabulary or the format.
//!
//! Every call checks the whole batch before it touches any sequence: a caller
//! mistake in any row raises and changes nothing.

mod slots;
mod trees;

use crate::error::CoreError;
use crate::turn::{Outcome, Released, Setup, TokenIn, Turn};
use slots::Slots;
use std::ops::Range;
pub use trees::{PathRows, TreeParents};

/// Outcomes of a batch call: one flat list, and the range of it each sequence
/// with outcomes owns, in row order. Sequences with none are left out.
#[derive(Debug, Default)]
pub struct BatchOutcomes {
    pub outcomes: Vec<Outcome>,
    pub rows: Vec<(u64, Range<usize>)>,
}

impl BatchOutcomes {
    /// Records that row `seq` produced `outcomes[start..]`, if anything.
    fn close_row(&mut self, seq: u64, start: usize) {
        if self.outcomes.len() > start {
            self.rows.push((seq, start..self.outcomes.len()));
        }
    }
}

/// A draft for many sequences: row `i` of `tokens` (`width` ids each) goes to
/// `seqs[i]`, its first `lengths[i]` ids (all `width` without `lengths`).
#[derive(Debug, Clone, Copy)]
pub struct DraftRows<'a> {
    pub seqs: &'a [u64],
    pub tokens: &'a [u64],
    pub width: usize,
    pub lengths: Option<&'a [usize]>,
}

impl<'a> DraftRows<'a> {
    /// Whether the arrays agree: `len(seqs)` rows of `width` ids, each length within them.
    fn check_shape(&self) -> Result<(), CoreError> {
        let b = self.seqs.len();
        if self.tokens.len() != b * self.width {
            return Err(shape(format!(
                "tokens hold {} ids, not {b} rows of {}: pass a (len(seqs), k) array",
                self.tokens.len(),
                self.width
            )));
        }
        if let Some(lengths) = self.lengths {
            if lengths.len() != b {
                return Err(shape(format!("{} lengths for {b} sequences", lengths.len())));
            }
            if let Some(i) = lengths.iter().position(|&n| n > self.width) {
                return Err(shape(format!(
                    "lengths[{i}] is {}, past the {} columns of tokens",
                    lengths[i], self.width
                )));
            }
        }
        Ok(())
    }

    /// Row `i`'s ids (its first `lengths[i]`).
    fn ids(&self, i: usize) -> &'a [u64] {
        &self.tokens[i * self.width..i * self.width + self.lengths.map_or(self.width, |l| l[i])]
    }
}

/// A correction as a verify row gives it: -1 for none, else a token id.
fn correction_of(corrections: Option<&[i64]>, i: usize) -> Result<Option<TokenIn<'static>>, CoreError> {
    match corrections.map_or(-1, |c| c[i]) {
        -1 => Ok(None),
        id => u64::try_from(id)
            .map(|id| Some(TokenIn::Id(id)))
            .map_err(|_| CoreError::InvalidTokenId { index: i, value: id.to_string() }),
    }
}

/// A verify for many sequences: `n_accepted[i]` of `seqs[i]`'s pending tokens are
/// accepted; `corrections[i]`, when given and not -1, is its correction's id.
#[derive(Debug, Clone, Copy)]
pub struct VerifyRows<'a> {
    pub seqs: &'a [u64],
    pub n_accepted: &'a [usize],
    pub corrections: Option<&'a [i64]>,
}

/// Many sequences' turns over one format and vocabulary.
#[derive(Debug)]
pub struct Batch {
    setup: Setup,
    turns: Vec<Turn>,
    slots: Slots,
    /// The rows of the last call, resolved: an engine names the same sequences
    /// step after step, and comparing them costs less than looking each one up.
    last_rows: Rows,
}

/// Sequence ids and the slot of each, checked (known, none twice).
#[derive(Debug, Default)]
struct Rows {
    seqs: Vec<u64>,
    slots: Vec<usize>,
}

fn shape(reason: String) -> CoreError {
    CoreError::BatchShape { reason }
}

fn in_seq(seq: u64) -> impl Fn(CoreError) -> CoreError {
    move |error| CoreError::InSequence { seq, error: Box::new(error) }
}

impl Batch {
    #[must_use]
    pub fn new(setup: Setup) -> Self {
        Self { setup, turns: Vec::new(), slots: Slots::default(), last_rows: Rows::default() }
    }

    #[must_use]
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// Sequences in the batch.
    #[must_use]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slots.len() == 0
    }

    /// Whether `seq` is in the batch.
    #[must_use]
    pub fn contains(&self, seq: u64) -> bool {
        self.slots.get(seq).is_some()
    }

    /// The turn of `seq`.
    pub fn turn(&self, seq: u64) -> Result<&Turn, CoreError> {
        let slot = self.slots.get(seq).ok_or(CoreError::UnknownSequence { seq })?;
        Ok(&self.turns[slot])
    }

    /// Starts a turn for `seq`, in a freed slot when there is one; inside a
    /// reasoning section when its prompt opened one (`in_reasoning`).
    pub fn add(&mut self, seq: u64, turn_key: &str, in_reasoning: bool) -> Result<(), CoreError> {
        if self.slots.get(seq).is_some() {
            return Err(CoreError::DuplicateSequence { seq, why: "is already in the batch; finish() it first" });
        }
        let turn = Turn::start_in_reasoning(&self.setup, turn_key, in_reasoning)?;
        let slot = self.slots.insert(seq);
        self.last_rows = Rows::default();
        if slot == self.turns.len() {
            self.turns.push(turn);
        } else {
            self.turns[slot] = turn;
        }
        Ok(())
    }

    /// Ends `seq`'s turn (see `Turn::finish`) and frees its slot.
    pub fn finish(&mut self, seq: u64) -> Result<Vec<Outcome>, CoreError> {
        Ok(self.finish_released(seq)?.0)
    }

    /// `finish`, with what it released (streaming output).
    pub fn finish_released(&mut self, seq: u64) -> Result<(Vec<Outcome>, Released), CoreError> {
        let slot = self.slots.get(seq).ok_or(CoreError::UnknownSequence { seq })?;
        let out = self.turns[slot].finish().map_err(in_seq(seq))?;
        let tail = self.turns[slot].take_released();
        // Freed now, not when the slot is reused: a batch that shrinks after long
        // turns would otherwise hold every finished turn's text, ledger and blocks.
        self.turns[slot] = Turn::vacant(&self.setup);
        self.slots.remove(seq);
        self.last_rows = Rows::default();
        Ok((out, tail))
    }

    /// What `seq`'s steps released since the last call; nothing for an unknown `seq`.
    pub fn take_released(&mut self, seq: u64) -> Released {
        self.slots.get(seq).map(|slot| self.turns[slot].take_released()).unwrap_or_default()
    }

    /// Drafts a token tree onto `seq` (see `Turn::draft_tree`).
    pub fn draft_tree(&mut self, seq: u64, tokens: &[TokenIn<'_>], parents: &[i64]) -> Result<Vec<Outcome>, CoreError> {
        let slot = self.slots.get(seq).ok_or(CoreError::UnknownSequence { seq })?;
        self.turns[slot].draft_tree(tokens, parents).map_err(in_seq(seq))
    }

    /// Verifies `seq`'s tree along `path` (see `Turn::verify_path`).
    pub fn verify_path(
        &mut self,
        seq: u64,
        path: &[usize],
        correction: Option<TokenIn<'_>>,
    ) -> Result<Vec<Outcome>, CoreError> {
        let slot = self.slots.get(seq).ok_or(CoreError::UnknownSequence { seq })?;
        self.turns[slot].verify_path(path, correction).map_err(in_seq(seq))
    }

    /// The slot of each row's sequence, refusing unknown and repeated sequences.
    /// Hand them back with `keep_rows` when done.
    fn rows(&mut self, seqs: &[u64]) -> Result<Vec<usize>, CoreError> {
        if self.last_rows.seqs == seqs && self.last_rows.slots.len() == seqs.len() {
            // No sequence was added or finished since (either clears `last_rows`).
            return Ok(std::mem::take(&mut self.last_rows.slots));
        }
        let stamp = self.slots.next_stamp();
        let slots = seqs
            .iter()
            .map(|&seq| {
                let slot = self.slots.get(seq).ok_or(CoreError::UnknownSequence { seq })?;
                if !self.slots.stamp(slot, stamp) {
                    return Err(CoreError::DuplicateSequence { seq, why: "appears twice in one call" });
                }
                Ok(slot)
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.last_rows.seqs.clear();
        self.last_rows.seqs.extend_from_slice(seqs);
        Ok(slots)
    }

    /// Keeps the slots `rows` resolved for `last_rows.seqs`, for the next call.
    fn keep_rows(&mut self, slots: Vec<usize>) {
        self.last_rows.slots = slots;
    }

    /// Drafts each row's tokens onto its sequence. Checks every row first.
    pub fn draft(&mut self, d: DraftRows<'_>) -> Result<BatchOutcomes, CoreError> {
        d.check_shape()?;
        let slots = self.rows(d.seqs)?;
        let out = self.draft_rows(&slots, d);
        self.keep_rows(slots);
        out
    }

    /// `draft` onto the rows' `slots`.
    fn draft_rows(&mut self, slots: &[usize], d: DraftRows<'_>) -> Result<BatchOutcomes, CoreError> {
        let ids = |i: usize| d.ids(i);
        let row = |i: usize| ids(i).iter().map(|&id| TokenIn::Id(id));
        let dense = self.setup.vocab().dense_below();
        // Ids below `dense` resolve: a row is checked without resolving them. One
        // branch-free pass over the whole block (padding included) usually says so of every row.
        let all_dense = d.tokens.iter().fold(0u8, |past, &id| past | u8::from(id >= dense)) == 0;
        for (i, &slot) in slots.iter().enumerate() {
            let turn = &self.turns[slot];
            let check = if all_dense || ids(i).iter().all(|&id| id < dense) {
                turn.check_draft_dense(ids(i).len(), row(i))
            } else {
                turn.check_draft(row(i))
            };
            check.map_err(in_seq(d.seqs[i]))?;
        }
        let mut out = BatchOutcomes::default();
        for (i, &slot) in slots.iter().enumerate() {
            let start = out.outcomes.len();
            if all_dense || ids(i).iter().all(|&id| id < dense) {
                self.turns[slot].draft_dense(ids(i), &mut out.outcomes);
            } else {
                self.turns[slot].draft_checked(row(i), &mut out.outcomes);
            }
            out.close_row(d.seqs[i], start);
        }
        Ok(out)
    }

    /// Verifies each row's sequence. Checks every row first.
    pub fn verify(&mut self, v: VerifyRows<'_>) -> Result<BatchOutcomes, CoreError> {
        let b = v.seqs.len();
        if v.n_accepted.len() != b {
            return Err(shape(format!("{} counts in n_accepted for {b} sequences", v.n_accepted.len())));
        }
        if let Some(c) = v.corrections {
            if c.len() != b {
                return Err(shape(format!("{} corrections for {b} sequences", c.len())));
            }
        }
        let slots = self.rows(v.seqs)?;
        let out = self.verify_rows(&slots, v);
        self.keep_rows(slots);
        out
    }

    /// `verify` of the rows' `slots`.
    fn verify_rows(&mut self, slots: &[usize], v: VerifyRows<'_>) -> Result<BatchOutcomes, CoreError> {
        let correction = |i: usize| correction_of(v.corrections, i);
        let dense = self.setup.vocab().dense_below();
        for (i, &slot) in slots.iter().enumerate() {
            let turn = &self.turns[slot];
            let check = correction(i).and_then(|c| match c {
                // An id below `dense` resolves: checked without resolving it.
                Some(TokenIn::Id(id)) if id < dense => turn.check_verify_dense(v.n_accepted[i], c),
                c => turn.check_verify(v.n_accepted[i], c),
            });
            check.map_err(in_seq(v.seqs[i]))?;
        }
        let mut out = BatchOutcomes::default();
        for (i, &slot) in slots.iter().enumerate() {
            let start = out.outcomes.len();
            // Checked above: -1 or a non-negative id.
            let c = v.corrections.and_then(|c| u64::try_from(c[i]).ok()).map(TokenIn::Id);
            self.turns[slot].verify_checked(v.n_accepted[i], c, &mut out.outcomes);
            out.close_row(v.seqs[i], start);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
