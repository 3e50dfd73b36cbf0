//! Streaming output for Python: what a step released, as `(content, reasoning,
//! tool_call_deltas)` with the deltas shaped like OpenAI's `ChoiceDeltaToolCall`.

use crate::turn::{Released, ToolCallDelta};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

/// The `stream=` flag, refused with inert's error (not pyo3's) when it is not a bool.
#[derive(Debug, Clone, Copy)]
pub(super) struct StreamFlag(pub(super) bool);

impl<'a, 'py> FromPyObject<'a, 'py> for StreamFlag {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self(super::convert::flag(&obj, "stream")?))
    }
}

/// `(content, reasoning, deltas)`; argument fragments of one call that follow
/// each other are joined into one delta.
pub(super) fn released<'py>(py: Python<'py>, r: Released) -> PyResult<Bound<'py, PyTuple>> {
    let deltas = PyList::empty(py);
    let mut pending: Option<(u32, String)> = None;
    let flush = |pending: &mut Option<(u32, String)>, deltas: &Bound<'py, PyList>| -> PyResult<()> {
        if let Some((index, fragment)) = pending.take() {
            deltas.append(arguments(py, index, &fragment)?)?;
        }
        Ok(())
    };
    for d in r.deltas {
        match d {
            ToolCallDelta::Arguments { index, fragment } => match &mut pending {
                Some((i, text)) if *i == index => text.push_str(&fragment),
                _ => {
                    flush(&mut pending, &deltas)?;
                    pending = Some((index, fragment));
                }
            },
            ToolCallDelta::Start { index, id, name } => {
                flush(&mut pending, &deltas)?;
                let f = PyDict::new(py);
                f.set_item("name", name)?;
                f.set_item("arguments", "")?;
                let d = PyDict::new(py);
                d.set_item("index", index)?;
                d.set_item("id", id)?;
                d.set_item("type", "function")?;
                d.set_item("function", f)?;
                deltas.append(d)?;
            }
            ToolCallDelta::Malformed { index, kind } => {
                flush(&mut pending, &deltas)?;
                let d = arguments(py, index, "")?;
                let mark = PyDict::new(py);
                mark.set_item("malformed", kind)?;
                d.set_item("inert", mark)?;
                deltas.append(d)?;
            }
        }
    }
    flush(&mut pending, &deltas)?;
    let items: [Bound<'py, PyAny>; 3] =
        [PyString::new(py, &r.content).into_any(), PyString::new(py, &r.reasoning).into_any(), deltas.into_any()];
    PyTuple::new(py, items)
}

fn arguments<'py>(py: Python<'py>, index: u32, fragment: &str) -> PyResult<Bound<'py, PyDict>> {
    let f = PyDict::new(py);
    f.set_item("arguments", fragment)?;
    let d = PyDict::new(py);
    d.set_item("index", index)?;
    d.set_item("function", f)?;
    Ok(d)
}
