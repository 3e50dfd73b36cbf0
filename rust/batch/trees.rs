//! Token trees for every sequence of a batch in one call (EAGLE, Medusa): an
//! engine drafts a tree per sequence and verifies a path per sequence each
//! step, one crossing for the batch instead of one per sequence. Each row does
//! exactly what `Turn::draft_tree` / `Turn::verify_path` do on its sequence,
//! and, as every batch call, all rows are checked before any sequence changes.

use super::{correction_of, in_seq, shape, Batch, BatchOutcomes, DraftRows};
use crate::error::CoreError;
use crate::turn::TokenIn;

/// The parents of the trees' nodes: one row of `width` that every sequence's
/// tree shares (a static tree, which EAGLE engines draw every step), or one row
/// per sequence. A row shorter than `width` (`lengths`) takes its first parents.
#[derive(Debug, Clone, Copy)]
pub enum TreeParents<'a> {
    Shared(&'a [i64]),
    PerRow(&'a [i64]),
}

/// A verify of many trees: row `i` of `paths` (`depth` node indices, padded
/// with -1 after the path) is the path `seqs[i]` accepts; `corrections[i]`, when
/// given and not -1, is its correction's id.
#[derive(Debug, Clone, Copy)]
pub struct PathRows<'a> {
    pub seqs: &'a [u64],
    pub paths: &'a [i64],
    pub depth: usize,
    pub corrections: Option<&'a [i64]>,
}

/// Row `i`'s path: its node indices up to the first -1; only -1 may follow.
fn path_of(row: &[i64], i: usize) -> Result<Vec<usize>, CoreError> {
    let len = row.iter().position(|&n| n == -1).unwrap_or(row.len());
    if let Some(j) = row[len..].iter().position(|&n| n != -1) {
        return Err(shape(format!(
            "paths[{i}] has node {} after the -1 at column {len}; pad each path with -1 after its last node",
            row[len + j]
        )));
    }
    row[..len]
        .iter()
        .enumerate()
        .map(|(j, &n)| {
            usize::try_from(n).map_err(|_| CoreError::BadTree {
                reason: format!("paths[{i}][{j}] is {n}; a path holds node indices, padded with -1"),
            })
        })
        .collect()
}

impl Batch {
    /// Drafts row `i`'s tree onto `seqs[i]` (see `Turn::draft_tree`). Checks every row first.
    pub fn draft_trees(&mut self, d: DraftRows<'_>, parents: TreeParents<'_>) -> Result<BatchOutcomes, CoreError> {
        d.check_shape()?;
        let expected = match parents {
            TreeParents::Shared(p) => (p.len(), d.width, "one row of parents per node"),
            TreeParents::PerRow(p) => (p.len(), d.seqs.len() * d.width, "one row of parents per sequence"),
        };
        if expected.0 != expected.1 {
            return Err(shape(format!(
                "parents hold {} entries for trees of {} nodes: give {}",
                expected.0, d.width, expected.2
            )));
        }
        let slots = self.rows(d.seqs)?;
        let out = self.draft_tree_rows(&slots, d, parents);
        self.keep_rows(slots);
        out
    }

    fn draft_tree_rows(
        &mut self,
        slots: &[usize],
        d: DraftRows<'_>,
        parents: TreeParents<'_>,
    ) -> Result<BatchOutcomes, CoreError> {
        let tokens: Vec<TokenIn<'_>> = d.tokens.iter().map(|&id| TokenIn::Id(id)).collect();
        let row = |i: usize| {
            let n = d.ids(i).len();
            let parents = match parents {
                TreeParents::Shared(p) => &p[..n],
                TreeParents::PerRow(p) => &p[i * d.width..i * d.width + n],
            };
            (&tokens[i * d.width..i * d.width + n], parents)
        };
        let checked = slots
            .iter()
            .enumerate()
            .map(|(i, &slot)| {
                let (tokens, parents) = row(i);
                self.turns[slot].check_draft_tree(tokens, parents).map_err(in_seq(d.seqs[i]))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = BatchOutcomes::default();
        for ((i, &slot), parents) in slots.iter().enumerate().zip(checked) {
            let start = out.outcomes.len();
            self.turns[slot].draft_tree_checked(row(i).0, parents, &mut out.outcomes);
            out.close_row(d.seqs[i], start);
        }
        Ok(out)
    }

    /// Verifies each row's tree along its path (see `Turn::verify_path`). Checks every row first.
    pub fn verify_paths(&mut self, v: PathRows<'_>) -> Result<BatchOutcomes, CoreError> {
        let b = v.seqs.len();
        if v.paths.len() != b * v.depth {
            return Err(shape(format!(
                "paths hold {} entries, not {b} rows of {}: pass a (len(seqs), depth) array padded with -1",
                v.paths.len(),
                v.depth
            )));
        }
        if let Some(c) = v.corrections {
            if c.len() != b {
                return Err(shape(format!("{} corrections for {b} sequences", c.len())));
            }
        }
        let slots = self.rows(v.seqs)?;
        let out = self.verify_path_rows(&slots, v);
        self.keep_rows(slots);
        out
    }

    fn verify_path_rows(&mut self, slots: &[usize], v: PathRows<'_>) -> Result<BatchOutcomes, CoreError> {
        let checked = slots
            .iter()
            .enumerate()
            .map(|(i, &slot)| {
                let path = path_of(&v.paths[i * v.depth..(i + 1) * v.depth], i)?;
                let correction = correction_of(v.corrections, i)?;
                self.turns[slot].check_verify_path(&path, correction)?;
                Ok((path, correction))
            })
            .enumerate()
            .map(|(i, r)| r.map_err(in_seq(v.seqs[i])))
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = BatchOutcomes::default();
        for ((i, &slot), (path, correction)) in slots.iter().enumerate().zip(checked) {
            let start = out.outcomes.len();
            self.turns[slot].verify_path_checked(&path, correction, &mut out.outcomes);
            out.close_row(v.seqs[i], start);
        }
        Ok(out)
    }
}
