//! The only place pyo3 appears: the extension's classes and functions, the
//! conversions, and the mapping of core errors onto inert's exceptions.

mod convert;
mod errors;
mod event;
mod stream;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<stream::PyTokenStream>()?;
    m.add_class::<event::PyBlockEvent>()?;
    m.add_function(wrap_pyfunction!(stream::parse, m)?)?;
    m.add_function(wrap_pyfunction!(stream::formats, m)?)?;
    m.add_function(wrap_pyfunction!(stream::commit_key, m)?)?;
    m.add("KEY_PREFIX", crate::ledger::commit_key::KEY_PREFIX)?;
    Ok(())
}
