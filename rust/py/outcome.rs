//! The typed outcomes of a step, as Python sees them: one frozen class per
//! outcome, holding a `Call` or a `Malformed`. The same `Call` object goes out
//! in a call's `CallClosed` and in its `CallCommitted` or `CallRetracted`.

use super::convert::object_to_py;
use crate::int_map::IntMap;
use crate::turn::{CallRecord, MalformedRecord, Outcome, ReasoningRecord};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};
use std::collections::hash_map::Entry;
use std::sync::Arc;

/// A tool call parsed from a block. Immutable.
///
/// Its Python strings and its arguments dict are built when first read, then
/// kept: a serving loop reads most calls' keys and names but builds every
/// call's outcome, and a call drafted and then retracted is often never read
/// at all. Each value is built once, so every read returns the same object.
#[pyclass(frozen, name = "Call", module = "inert._core")]
pub(super) struct PyCall {
    #[pyo3(get)]
    block: u64,
    #[pyo3(get)]
    index: u32,
    #[pyo3(get)]
    start: usize,
    #[pyo3(get)]
    end: usize,
    name: PyOnceLock<Py<PyString>>,
    arguments: PyOnceLock<Py<PyDict>>,
    raw_arguments: PyOnceLock<Py<PyString>>,
    commit_key: PyOnceLock<Py<PyString>>,
    /// The record: what the lazy values are built from, and the tool-call id
    /// streaming sets when the call settles.
    record: Arc<CallRecord>,
}

impl std::fmt::Debug for PyCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyCall").field("record", &self.record).finish_non_exhaustive()
    }
}

#[pymethods]
impl PyCall {
    #[getter]
    fn name<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        let cell = &self.name;
        cell.get_or_init(py, || PyString::new(py, &self.record.call.name).unbind()).bind(py).clone()
    }

    /// The arguments as a dict (the same dict on every read).
    #[getter]
    fn arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict =
            self.arguments.get_or_try_init(py, || object_to_py(py, &self.record.call.arguments).map(Bound::unbind))?;
        Ok(dict.bind(py).clone())
    }

    #[getter]
    fn raw_arguments<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        let cell = &self.raw_arguments;
        cell.get_or_init(py, || PyString::new(py, &self.record.call.raw_arguments).unbind()).bind(py).clone()
    }

    /// The id the model wrote for the call (Mistral, Kimi K2...), if any.
    #[getter]
    fn call_id(&self) -> Option<&str> {
        self.record.call.id.as_deref()
    }

    #[getter]
    fn commit_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        let cell = &self.commit_key;
        cell.get_or_init(py, || PyString::new(py, self.record.key.text().as_str()).unbind()).bind(py).clone()
    }

    #[getter]
    fn span(&self) -> (usize, usize) {
        (self.start, self.end)
    }

    /// The OpenAI tool-call id its streamed deltas carried; `None` until it is committed
    /// and its deltas settled, and without streaming.
    #[getter]
    fn tool_call_id(&self) -> Option<&str> {
        self.record.tool_call_id.get().map(AsRef::as_ref)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Call(name={}, arguments={}, commit_key={}, span=({}, {}))",
            self.name(py).repr()?,
            self.arguments(py)?.repr()?,
            self.commit_key(py).repr()?,
            self.start,
            self.end
        ))
    }
}

impl PyCall {
    fn new(r: &Arc<CallRecord>) -> Self {
        Self {
            block: r.block,
            index: r.index,
            start: r.span.start,
            end: r.span.end,
            name: PyOnceLock::new(),
            arguments: PyOnceLock::new(),
            raw_arguments: PyOnceLock::new(),
            commit_key: PyOnceLock::new(),
            record: r.clone(),
        }
    }
}

/// A malformed block, or one malformed call of a block: never dispatched. Immutable.
#[pyclass(frozen, name = "Malformed", module = "inert._core")]
#[derive(Debug)]
pub(super) struct PyMalformed {
    #[pyo3(get)]
    block: u64,
    #[pyo3(get)]
    index: u32,
    #[pyo3(get)]
    kind: &'static str,
    #[pyo3(get)]
    offset: usize,
    #[pyo3(get)]
    reason: String,
    #[pyo3(get)]
    commit_key: String,
    #[pyo3(get)]
    start: usize,
    #[pyo3(get)]
    end: usize,
    /// The record, for what streaming sets when the block settles, which can be a
    /// step after the outcome went out (a block too large, read to its limit later).
    record: Arc<MalformedRecord>,
}

#[pymethods]
impl PyMalformed {
    #[getter]
    fn span(&self) -> (usize, usize) {
        (self.start, self.end)
    }

    /// Streaming output: the indices of the tool calls whose deltas had gone out
    /// before the block turned out malformed (each call's last delta marks it).
    #[getter]
    fn tool_call_indices(&self) -> Vec<u32> {
        self.record.tool_call_indices.get().map_or_else(Vec::new, |i| i.to_vec())
    }

    /// The first of `tool_call_indices`; `None` when no call of the block had streamed.
    #[getter]
    fn tool_call_index(&self) -> Option<u32> {
        self.record.tool_call_indices.get().and_then(|i| i.first().copied())
    }

    fn __repr__(&self) -> String {
        format!(
            "Malformed(kind={:?}, offset={}, reason={:?}, span=({}, {}))",
            self.kind, self.offset, self.reason, self.start, self.end
        )
    }
}

impl PyMalformed {
    fn new(r: &Arc<MalformedRecord>) -> Self {
        Self {
            block: r.block,
            index: r.index,
            kind: r.error.kind.name(),
            offset: r.error.offset,
            reason: r.error.message.clone(),
            commit_key: r.key.to_string(),
            start: r.span.start,
            end: r.span.end,
            record: r.clone(),
        }
    }
}

/// A reasoning closer (`</think>`) that arrived while the turn was not in
/// reasoning: the prompt opened the section, so calls before it may have been
/// thoughts; pass `in_reasoning=True` for this template. Reported once its
/// tokens are accepted. Immutable.
#[pyclass(frozen, name = "ReasoningUnopened", module = "inert._core")]
#[derive(Debug)]
pub(super) struct ReasoningUnopened {
    #[pyo3(get)]
    start: usize,
    #[pyo3(get)]
    end: usize,
}

#[pymethods]
impl ReasoningUnopened {
    /// The outcome's name, as traces spell it.
    #[classattr]
    fn kind() -> &'static str {
        "reasoning_unopened"
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str) {
        ("start", "end")
    }

    /// `(start, end)`: the live-stream token positions of the closer.
    #[getter]
    fn span(&self) -> (usize, usize) {
        (self.start, self.end)
    }

    fn __repr__(&self) -> String {
        format!("ReasoningUnopened(span=({}, {}))", self.start, self.end)
    }
}

impl ReasoningUnopened {
    fn new(r: &ReasoningRecord) -> Self {
        Self { start: r.span.start, end: r.span.end }
    }
}

/// Declares an outcome class that holds one payload.
macro_rules! outcome_class {
    ($rust:ident, $python:literal, $field:ident: $payload:ty, $kind:literal, $doc:literal) => {
        #[doc = $doc]
        #[pyclass(frozen, name = $python, module = "inert._core")]
        #[derive(Debug)]
        pub(super) struct $rust {
            #[pyo3(get)]
            $field: Py<$payload>,
        }

        #[pymethods]
        impl $rust {
            /// The outcome's name, as traces spell it.
            #[classattr]
            fn kind() -> &'static str {
                $kind
            }

            #[classattr]
            fn __match_args__() -> (&'static str,) {
                (stringify!($field),)
            }

            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                Ok(format!("{}({})", $python, self.$field.bind(py).repr()?))
            }
        }
    };
}

outcome_class!(CallClosed, "CallClosed", call: PyCall, "call_closed", "A call closed; speculative until committed.");
outcome_class!(CallCommitted, "CallCommitted", call: PyCall, "call_committed", "Every token of the call is accepted.");
outcome_class!(CallRetracted, "CallRetracted", call: PyCall, "call_retracted", "The call's tokens were rejected.");
outcome_class!(BlockMalformed, "BlockMalformed", malformed: PyMalformed, "block_malformed", "An accepted malformed block.");

/// The Python `Call` of each call closed and not yet committed or retracted, so that
/// its later outcome carries the same object. Keyed by the record's address; the
/// entry holds the record, so no other record can take that address meanwhile.
#[derive(Debug, Default)]
pub(super) struct CallCache(IntMap<usize, (Arc<CallRecord>, Py<PyCall>)>);

impl CallCache {
    fn get_or_make(&mut self, py: Python<'_>, r: &Arc<CallRecord>, keep: bool) -> PyResult<Py<PyCall>> {
        let id = Arc::as_ptr(r) as usize;
        match self.0.entry(id) {
            // A call closed again in a later step (its block confirmed meanwhile): kept as it is.
            Entry::Occupied(e) if keep => Ok(e.get().1.clone_ref(py)),
            Entry::Occupied(e) => Ok(e.remove().1),
            Entry::Vacant(e) => {
                let call = Py::new(py, PyCall::new(r))?;
                if keep {
                    e.insert((r.clone(), call.clone_ref(py)));
                }
                Ok(call)
            }
        }
    }

    /// The outcomes as Python objects.
    pub(super) fn convert<'py>(&mut self, py: Python<'py>, out: Vec<Outcome>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        out.into_iter()
            .map(|o| {
                Ok(match o {
                    Outcome::CallClosed(r) => {
                        Bound::new(py, CallClosed { call: self.get_or_make(py, &r, true)? })?.into_any()
                    }
                    Outcome::CallCommitted(r) => {
                        Bound::new(py, CallCommitted { call: self.get_or_make(py, &r, false)? })?.into_any()
                    }
                    Outcome::CallRetracted(r) => {
                        Bound::new(py, CallRetracted { call: self.get_or_make(py, &r, false)? })?.into_any()
                    }
                    Outcome::BlockMalformed(r) => {
                        Bound::new(py, BlockMalformed { malformed: Py::new(py, PyMalformed::new(&r))? })?.into_any()
                    }
                    Outcome::ReasoningUnopened(r) => Bound::new(py, ReasoningUnopened::new(&r))?.into_any(),
                })
            })
            .collect()
    }
}

/// Registers the classes of this module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCall>()?;
    m.add_class::<PyMalformed>()?;
    m.add_class::<CallClosed>()?;
    m.add_class::<CallCommitted>()?;
    m.add_class::<CallRetracted>()?;
    m.add_class::<BlockMalformed>()?;
    m.add_class::<ReasoningUnopened>()?;
    Ok(())
}
