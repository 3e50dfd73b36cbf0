//! Streaming output for Python: what a step released, as `inert.Released(content,
//! reasoning, deltas)` with the deltas shaped like OpenAI's `ChoiceDeltaToolCall`.

use crate::turn::{Released, ToolCallDelta};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};

/// `inert.stream.Released` (a `NamedTuple` declared in Python, where it is typed and
/// documented) and `tuple.__new__`, looked up once.
struct ReleasedClass {
    class: Py<PyType>,
    tuple_new: Py<PyAny>,
}

static RELEASED: PyOnceLock<ReleasedClass> = PyOnceLock::new();

impl ReleasedClass {
    fn load(py: Python<'_>) -> PyResult<Self> {
        let class = py.import("inert.stream")?.getattr("Released")?.cast_into::<PyType>()?.unbind();
        let tuple_new = py.get_type::<PyTuple>().getattr("__new__")?.unbind();
        Ok(Self { class, tuple_new })
    }
}

/// The `stream=` flag, refused with inert's error (not pyo3's) when it is not a bool.
#[derive(Debug, Clone, Copy)]
pub(super) struct StreamFlag(pub(super) bool);

impl<'a, 'py> FromPyObject<'a, 'py> for StreamFlag {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self(super::convert::flag(&obj, "stream")?))
    }
}

/// `inert.Released(content, reasoning, deltas)`; argument fragments of one call that
/// follow each other are joined into one delta.
pub(super) fn released(py: Python<'_>, r: Released) -> PyResult<Bound<'_, PyTuple>> {
    let items = released_tuple(py, r)?;
    // `tuple.__new__(Released, items)`, as the named tuple's own `_make` does: one C call
    // that copies three items, not the Python `__new__` (a frame per step).
    let class = RELEASED.get_or_try_init(py, || ReleasedClass::load(py))?;
    Ok(class.tuple_new.bind(py).call1((class.class.bind(py), items))?.cast_into::<PyTuple>()?)
}

/// The same three as a plain tuple, for the orchestrators, which unpack it at once: a
/// named tuple is a heap subtype of tuple (no free list, a wrapper call to build it) and
/// costs about 0.1 µs more a step.
pub(super) fn released_tuple<'py>(py: Python<'py>, r: Released) -> PyResult<Bound<'py, PyTuple>> {
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
