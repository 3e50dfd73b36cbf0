//! `StreamBatch`: many sequences' turns advanced by one call each step, over
//! `crate::batch`. Arguments are read (buffers in one copy each) and checked
//! while holding the GIL; the core then works with the GIL released; the
//! outcomes are built as Python objects for the sequences that have any.

use super::convert::{token_arg, NO_CORRECTION};
use super::ints::{id_rows, int, ints_1d, ints_2d, ints_nd};
use super::outcome::CallCache;
use super::stream::{released, StreamFlag};
use super::token_stream::{
    config, node_indices, with_tokens, ByteLimit, Flag, ReasoningArg, TurnKey, DEFAULT_MAX_BLOCK_BYTES,
};
use super::vocabulary::vocab_arg;
use crate::batch::{Batch, BatchOutcomes, DraftRows, PathRows, TreeParents, VerifyRows};
use crate::error::{CoreError, TokenFault};
use crate::turn::{Outcome, Released, Setup};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::collections::{HashMap, HashSet, VecDeque};

/// Many sequences' turns over one format and vocabulary. Mutable: one per
/// engine loop (a call from a second thread during a step raises ConcurrentUseError).
#[pyclass(name = "StreamBatch", module = "inert._core")]
#[derive(Debug)]
pub(super) struct PyStreamBatch {
    batch: Batch,
    calls: CallCache,
    /// Each sequence's committed `ReasoningUnopened` outcomes, kept while it is in the batch.
    notices: HashMap<u64, Vec<Py<PyAny>>>,
    /// What each `finish(seq)` released, oldest first, until `take_released` takes it.
    /// Engines reuse sequence ids (a slot's next request is `add`ed under the same
    /// id, often before the step's output is read), so a finished turn's tail, its
    /// held-back text and malformed markers, outlives a new turn under its id.
    tails: HashMap<u64, VecDeque<Released>>,
}

/// A sequence id: a non-negative int (numpy integer scalars included).
fn seq_id(obj: &Bound<'_, PyAny>) -> Result<u64, CoreError> {
    let v = int(obj, "seq")?;
    u64::try_from(v).map_err(|_| CoreError::OutOfRange {
        what: "seq",
        value: v.to_string(),
        expected: "a non-negative int",
    })
}

/// Checked first, then converted in a plain loop: no per-element error path.
fn seq_ids(obj: &Bound<'_, PyAny>) -> Result<Vec<u64>, CoreError> {
    let values = ints_1d(obj, "seqs")?;
    if let Some(&v) = values.iter().find(|&&v| v < 0) {
        return Err(CoreError::OutOfRange { what: "seqs", value: v.to_string(), expected: "non-negative ints" });
    }
    Ok(values.into_iter().map(i64::unsigned_abs).collect())
}

fn shape(reason: String) -> CoreError {
    CoreError::BatchShape { reason }
}

/// The corrections of a verify: ints, -1 for none (an int array has no None);
/// any other negative is no id, named as the caller's array holds it.
fn corrections_arg(corrections: Option<&Bound<'_, PyAny>>, seqs: &[u64]) -> Result<Option<Vec<i64>>, CoreError> {
    let corrections = corrections.filter(|c| !c.is_none()).map(|c| ints_1d(c, "corrections")).transpose()?;
    if let Some(c) = &corrections {
        if let Some((i, (&v, &seq))) = c.iter().zip(seqs).enumerate().find(|(_, (&v, _))| v < -1) {
            let fault = TokenFault::NotAnId { value: v.to_string(), instead: "-1 means no correction" };
            let error = Box::new(CoreError::BadTokenArg { what: format!("corrections[{i}]"), fault });
            return Err(CoreError::InSequence { seq, error });
        }
    }
    Ok(corrections)
}

/// The rows of a draft: sequence ids, a (rows, width) block of token ids, and
/// each row's length, read and checked.
struct Rows {
    seqs: Vec<u64>,
    ids: Vec<u64>,
    width: usize,
    lengths: Option<Vec<usize>>,
}

impl Rows {
    fn read(
        seqs: &Bound<'_, PyAny>,
        tokens: &Bound<'_, PyAny>,
        lengths: Option<&Bound<'_, PyAny>>,
    ) -> Result<Self, CoreError> {
        let seqs = seq_ids(seqs)?;
        let ints = id_rows(tokens, "tokens", &seqs)?;
        let [rows, width] = ints.dims;
        if rows != seqs.len() {
            return Err(shape(format!("tokens has {rows} rows for {} seqs", seqs.len())));
        }
        let lengths = match lengths.filter(|l| !l.is_none()) {
            None => None,
            Some(l) => Some(
                ints_1d(l, "lengths")?
                    .into_iter()
                    .enumerate()
                    .map(|(i, n)| {
                        usize::try_from(n).map_err(|_| shape(format!("lengths[{i}] is {n}; lengths are >= 0")))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        // Padding past a row's length may be anything (-1 included); ids within it may not be negative.
        // One branch-free pass over the whole block first: rows are searched only if it finds one.
        // (An unsigned buffer's values are ids however large: the turn refuses those out of range.)
        if !ints.wrapped && ints.values.iter().fold(0u8, |neg, &v| neg | u8::from(v < 0)) != 0 {
            for (i, &seq) in seqs.iter().enumerate() {
                let n = lengths.as_ref().and_then(|l| l.get(i)).map_or(width, |&n| n.min(width));
                if let Some(j) = ints.values[i * width..i * width + n].iter().position(|&v| v < 0) {
                    let value = ints.values[i * width + j].to_string();
                    let error = Box::new(CoreError::InvalidTokenId { index: j, value });
                    return Err(CoreError::InSequence { seq, error });
                }
            }
        }
        // A negative left is padding, never read.
        let ids = ints.ids();
        Ok(Self { seqs, ids, width, lengths })
    }

    fn draft(&self) -> DraftRows<'_> {
        DraftRows { seqs: &self.seqs, tokens: &self.ids, width: self.width, lengths: self.lengths.as_deref() }
    }
}

impl PyStreamBatch {
    /// The outcomes of a batch call as `{seq: [outcome, ...]}`.
    fn by_seq<'py>(&mut self, py: Python<'py>, out: BatchOutcomes) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        let mut outcomes = out.outcomes.into_iter();
        for (seq, range) in out.rows {
            let row: Vec<Outcome> = outcomes.by_ref().take(range.len()).collect();
            let row = self.convert(py, seq, row)?;
            if !row.is_empty() {
                dict.set_item(seq, PyList::new(py, row)?)?;
            }
        }
        Ok(dict)
    }

    /// `seq`'s outcomes as Python objects, its reasoning notices set aside (as
    /// `TokenStream` does: they are read with `notices(seq)`).
    fn convert<'py>(&mut self, py: Python<'py>, seq: u64, out: Vec<Outcome>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let notice = |o: &Outcome| matches!(o, Outcome::ReasoningUnopened(_));
        if !out.iter().any(notice) {
            return self.calls.convert(py, out);
        }
        let (notices, out): (Vec<_>, Vec<_>) = out.into_iter().partition(notice);
        let notices = self.calls.convert(py, notices)?.into_iter().map(Bound::unbind);
        self.notices.entry(seq).or_default().extend(notices);
        self.calls.convert(py, out)
    }
}

#[pymethods]
impl PyStreamBatch {
    #[new]
    #[pyo3(
        signature = (format = None, vocab = None, *, special_tokens = None, schemas = None, max_block_bytes = DEFAULT_MAX_BLOCK_BYTES, reasoning = ReasoningArg::FormatDefault, stream = StreamFlag(false)),
        text_signature = "(format=None, vocab=None, *, special_tokens=None, schemas=None, max_block_bytes=1048576, reasoning=..., stream=False)"
    )]
    fn new(
        format: Option<&Bound<'_, PyAny>>,
        vocab: Option<&Bound<'_, PyAny>>,
        special_tokens: Option<&Bound<'_, PyAny>>,
        schemas: Option<&Bound<'_, PyAny>>,
        max_block_bytes: ByteLimit,
        reasoning: ReasoningArg,
        stream: StreamFlag,
    ) -> PyResult<Self> {
        let config = config(format, String::new(), schemas, max_block_bytes.0, reasoning, Flag(false), stream.0)?;
        let vocab = vocab_arg(vocab, special_tokens)?;
        Ok(Self {
            batch: Batch::new(Setup::new(&config, vocab)),
            calls: CallCache::default(),
            notices: HashMap::new(),
            tails: HashMap::new(),
        })
    }

    /// Starts a turn for sequence `seq`, inside reasoning when its prompt opened it.
    #[pyo3(signature = (seq, turn_key, *, in_reasoning = Flag(false)), text_signature = "(self, seq, turn_key, *, in_reasoning=False)")]
    #[allow(clippy::needless_pass_by_value)] // pyo3 hands extracted arguments over by value
    fn add(slf: &Bound<'_, Self>, seq: &Bound<'_, PyAny>, turn_key: TurnKey, in_reasoning: Flag) -> PyResult<()> {
        let mut this = mutable(slf)?;
        let seq = seq_id(seq)?;
        this.batch.add(seq, &turn_key.0, in_reasoning.0)?;
        this.notices.remove(&seq);
        Ok(())
    }

    /// `seq`'s committed `ReasoningUnopened` outcomes, in stream order. Every one
    /// is committed by the verify that accepts its closer, so read them before
    /// `finish(seq)`, which forgets them with the sequence.
    fn notices<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        seq: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let this = shared(slf)?;
        let seq = seq_id(seq)?;
        this.batch.turn(seq)?;
        Ok(this.notices.get(&seq).map_or_else(Vec::new, |n| n.iter().map(|n| n.bind(py).clone()).collect()))
    }

    /// Drafts row `i` of `tokens` (its first `lengths[i]` ids) onto `seqs[i]`.
    #[pyo3(signature = (seqs, tokens, lengths = None))]
    fn draft<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        seqs: &Bound<'py, PyAny>,
        tokens: &Bound<'py, PyAny>,
        lengths: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut this = mutable(slf)?;
        let rows = Rows::read(seqs, tokens, lengths)?;
        let batch = &mut this.batch;
        let out = py.detach(|| batch.draft(rows.draft()))?;
        this.by_seq(py, out)
    }

    /// Drafts row `i` of `tokens` (its first `lengths[i]` nodes) as `seqs[i]`'s
    /// tree, over `parents`: one row shared by every tree, or one row per sequence.
    #[pyo3(signature = (seqs, tokens, parents, lengths = None))]
    fn draft_trees<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        seqs: &Bound<'py, PyAny>,
        tokens: &Bound<'py, PyAny>,
        parents: &Bound<'py, PyAny>,
        lengths: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut this = mutable(slf)?;
        let rows = Rows::read(seqs, tokens, lengths)?;
        let parents = ints_nd(parents, "parents")?;
        let parents = match parents.ndim {
            1 => TreeParents::Shared(&parents.values),
            2 if parents.dims[0] == rows.seqs.len() => TreeParents::PerRow(&parents.values),
            2 => {
                let n = parents.dims[0];
                return Err(shape(format!("parents has {n} rows for {} seqs", rows.seqs.len())).into());
            }
            n => {
                return Err(
                    shape(format!("parents is {n}-D; pass one row shared by every tree or one per sequence")).into()
                )
            }
        };
        let batch = &mut this.batch;
        let out = py.detach(|| batch.draft_trees(rows.draft(), parents))?;
        this.by_seq(py, out)
    }

    /// Verifies `seqs[i]`'s tree along row `i` of `paths` (node indices from a root
    /// down, padded with -1), then appends `corrections[i]` unless -1.
    #[pyo3(signature = (seqs, paths, corrections = None))]
    fn verify_paths<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        seqs: &Bound<'py, PyAny>,
        paths: &Bound<'py, PyAny>,
        corrections: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut this = mutable(slf)?;
        let seqs = seq_ids(seqs)?;
        let paths = ints_2d(paths, "paths")?;
        let [rows, depth] = paths.dims;
        if rows != seqs.len() {
            return Err(shape(format!("paths has {rows} rows for {} seqs", seqs.len())).into());
        }
        let corrections = corrections_arg(corrections, &seqs)?;
        let batch = &mut this.batch;
        let out = py.detach(|| {
            batch.verify_paths(PathRows {
                seqs: &seqs,
                paths: &paths.values,
                depth,
                corrections: corrections.as_deref(),
            })
        })?;
        this.by_seq(py, out)
    }

    /// Accepts `n_accepted[i]` of `seqs[i]`'s pending tokens, appends `corrections[i]` unless -1.
    #[pyo3(signature = (seqs, n_accepted, corrections = None))]
    fn verify<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        seqs: &Bound<'py, PyAny>,
        n_accepted: &Bound<'py, PyAny>,
        corrections: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut this = mutable(slf)?;
        let seqs = seq_ids(seqs)?;
        let counts = ints_1d(n_accepted, "n_accepted")?;
        if counts.len() != seqs.len() {
            return Err(shape(format!("{} counts in n_accepted for {} sequences", counts.len(), seqs.len())).into());
        }
        if let Some(i) = counts.iter().position(|&n| n < 0) {
            let error = Box::new(CoreError::NegativeCount { requested: counts[i].to_string() });
            return Err(CoreError::InSequence { seq: seqs[i], error }.into());
        }
        // A count past usize (32-bit targets only) is more than any sequence holds: refused as such.
        let counts: Vec<usize> =
            counts.into_iter().map(|n| usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX)).collect();
        let corrections = corrections_arg(corrections, &seqs)?;
        let batch = &mut this.batch;
        let out = py.detach(|| {
            batch.verify(VerifyRows { seqs: &seqs, n_accepted: &counts, corrections: corrections.as_deref() })
        })?;
        this.by_seq(py, out)
    }

    /// Ends `seq`'s turn and frees its slot.
    fn finish<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        seq: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let mut this = mutable(slf)?;
        let seq = seq_id(seq)?;
        let (out, tail) = this.batch.finish_released(seq)?;
        if this.batch.setup().streams() {
            // Kept, even empty, until taken: a server takes every finished turn's tail once,
            // and a tail taken by the call after it always belongs to the turn it ended.
            this.tails.entry(seq).or_default().push_back(tail);
        }
        let out = this.convert(py, seq, out);
        this.notices.remove(&seq);
        out
    }

    /// `{seq: (content, reasoning, deltas)}`: what the steps released for each of
    /// `seqs` since the last call (`finish(seq)`'s tail included), for the sequences
    /// that released something. Empty unless the batch streams (`stream=True`).
    fn take_released<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        seqs: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut this = mutable(slf)?;
        let dict = PyDict::new(py);
        let seqs = seq_ids(seqs)?;
        // A sequence never added, or finished and its tail taken, is a mistake, and so is one
        // named twice (its second answer would overwrite the first in the dict, and what
        // the first took would be lost): refused before anything is taken.
        for &seq in &seqs {
            if !this.tails.contains_key(&seq) {
                this.batch.turn(seq)?;
            }
        }
        // Engines mostly name their sequences in ascending order: then none repeats, and
        // nothing is allocated to know it.
        if !seqs.windows(2).all(|w| w[0] < w[1]) {
            let mut named = HashSet::with_capacity(seqs.len());
            if let Some(&seq) = seqs.iter().find(|&&seq| !named.insert(seq)) {
                return Err(CoreError::DuplicateSequence { seq, why: "appears twice in one call" }.into());
            }
        }
        for seq in seqs {
            // A finished turn's tail first, one per call, alone: what the sequence's new
            // turn (if it was added again) released waits for the next call, so each
            // answer belongs to one turn and the engine knows which.
            let r = match this.tails.get_mut(&seq).and_then(VecDeque::pop_front) {
                Some(tail) => {
                    if this.tails.get(&seq).is_some_and(VecDeque::is_empty) {
                        this.tails.remove(&seq);
                    }
                    tail
                }
                None => this.batch.take_released(seq),
            };
            if !r.is_empty() {
                dict.set_item(seq, released(py, r)?)?;
            }
        }
        Ok(dict)
    }

    /// Drafts a token tree onto `seq` (see `TokenStream.draft_tree`).
    fn draft_tree<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        seq: &Bound<'py, PyAny>,
        tokens: &Bound<'py, PyAny>,
        parents: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let mut this = mutable(slf)?;
        let seq = seq_id(seq)?;
        let parents = ints_1d(parents, "parents")?;
        let batch = &mut this.batch;
        let out = with_tokens(tokens, |window| batch.draft_tree(seq, window, &parents))?;
        this.convert(py, seq, out)
    }

    /// Verifies `seq`'s tree along `path` (see `TokenStream.verify_path`).
    #[pyo3(signature = (seq, path, correction = None))]
    fn verify_path<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        seq: &Bound<'py, PyAny>,
        path: &Bound<'py, PyAny>,
        correction: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let mut this = mutable(slf)?;
        let seq = seq_id(seq)?;
        let path = node_indices(&ints_1d(path, "path")?)?;
        let correction =
            correction.filter(|c| !c.is_none()).map(|c| token_arg(c, "correction", NO_CORRECTION)).transpose()?;
        let out = this.batch.verify_path(seq, &path, correction)?;
        this.convert(py, seq, out)
    }

    fn __len__(slf: &Bound<'_, Self>) -> PyResult<usize> {
        Ok(shared(slf)?.batch.len())
    }

    fn __contains__(slf: &Bound<'_, Self>, seq: &Bound<'_, PyAny>) -> PyResult<bool> {
        let this = shared(slf)?;
        Ok(seq_id(seq).is_ok_and(|s| this.batch.contains(s)))
    }

    #[getter]
    fn format(slf: &Bound<'_, Self>) -> PyResult<String> {
        Ok(shared(slf)?.batch.setup().format().name.clone())
    }

    /// Tokens drafted onto `seq` and not yet verified.
    fn pending_len(slf: &Bound<'_, Self>, seq: &Bound<'_, PyAny>) -> PyResult<usize> {
        Ok(shared(slf)?.batch.turn(seq_id(seq)?)?.undecided_len())
    }

    /// `seq`'s accepted text so far.
    fn accepted_text<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        seq: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, shared(slf)?.batch.turn(seq_id(seq)?)?.accepted_text()))
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let this = shared(slf)?;
        Ok(format!("StreamBatch(format={:?}, sequences={})", this.batch.setup().format().name, this.batch.len()))
    }
}

/// The batch, for a step. Its core works with the GIL released, so another thread
/// can reach it mid-step: that is refused as inert's `ConcurrentUseError`, with what
/// to do, rather than pyo3's bare "Already borrowed".
fn mutable<'py>(slf: &Bound<'py, PyStreamBatch>) -> PyResult<PyRefMut<'py, PyStreamBatch>> {
    slf.try_borrow_mut().map_err(|_| CoreError::ConcurrentUse.into())
}

/// The batch, to read: refused as `mutable` is while a step holds it.
fn shared<'py>(slf: &Bound<'py, PyStreamBatch>) -> PyResult<PyRef<'py, PyStreamBatch>> {
    slf.try_borrow().map_err(|_| CoreError::ConcurrentUse.into())
}
