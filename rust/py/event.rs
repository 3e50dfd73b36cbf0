//! `BlockEvent`: one step in a tool-call block's life, as Python sees it.

use super::convert::object_to_py;
use crate::scan::BlockEvent;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Immutable; built once per event in the core, read many times in Python.
#[pyclass(frozen, name = "BlockEvent", module = "inert._core")]
#[derive(Debug)]
pub struct PyBlockEvent {
    #[pyo3(get)]
    kind: &'static str,
    #[pyo3(get)]
    block: u64,
    #[pyo3(get)]
    index: Option<u32>,
    #[pyo3(get)]
    call_id: Option<String>,
    #[pyo3(get)]
    start: Option<usize>,
    #[pyo3(get)]
    end: Option<usize>,
    #[pyo3(get)]
    name: Option<String>,
    #[pyo3(get)]
    arguments: Option<Py<PyDict>>,
    #[pyo3(get)]
    raw_arguments: Option<String>,
    #[pyo3(get)]
    commit_key: Option<String>,
    #[pyo3(get)]
    reason: Option<String>,
}

impl PyBlockEvent {
    fn bare(kind: &'static str, block: u64) -> Self {
        Self {
            kind,
            block,
            index: None,
            call_id: None,
            start: None,
            end: None,
            name: None,
            arguments: None,
            raw_arguments: None,
            commit_key: None,
            reason: None,
        }
    }

    pub fn from_core(py: Python<'_>, event: BlockEvent) -> PyResult<Self> {
        Ok(match event {
            BlockEvent::Opened { block, start } => Self { start: Some(start), ..Self::bare("opened", block) },
            BlockEvent::Closed { block, index, span, call, key } => Self {
                index: Some(index),
                call_id: call.id,
                start: Some(span.start),
                end: Some(span.end),
                arguments: Some(object_to_py(py, &call.arguments)?.unbind()),
                name: Some(call.name),
                raw_arguments: Some(call.raw_arguments),
                commit_key: Some(key.to_string()),
                ..Self::bare("closed", block)
            },
            BlockEvent::Malformed { block, span, reason, key } => Self {
                start: Some(span.start),
                end: Some(span.end),
                commit_key: Some(key.to_string()),
                reason: Some(reason),
                ..Self::bare("malformed", block)
            },
            BlockEvent::Accepted { block } => Self::bare("accepted", block),
            BlockEvent::Retracted { block } => Self::bare("retracted", block),
        })
    }

    pub fn all(py: Python<'_>, events: Vec<BlockEvent>) -> PyResult<Vec<Self>> {
        events.into_iter().map(|e| Self::from_core(py, e)).collect()
    }
}

#[pymethods]
impl PyBlockEvent {
    fn __repr__(&self) -> String {
        let mut parts = vec![format!("kind={:?}", self.kind), format!("block={}", self.block)];
        if let (Some(s), e) = (self.start, self.end) {
            parts.push(e.map_or_else(|| format!("start={s}"), |e| format!("span=({s}, {e})")));
        }
        if let Some(n) = &self.name {
            parts.push(format!("name={n:?}"));
        }
        if let Some(r) = &self.reason {
            parts.push(format!("reason={r:?}"));
        }
        format!("BlockEvent({})", parts.join(", "))
    }
}
