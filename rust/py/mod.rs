//! The only place pyo3 appears: the extension's classes and functions, the
//! conversions, and the one mapping of core errors onto inert's exceptions.

mod batch;
mod convert;
mod errors;
mod ints;
mod outcome;
mod stream;
mod token_stream;
mod vocabulary;

use pyo3::prelude::*;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<token_stream::PyTokenStream>()?;
    m.add_class::<vocabulary::PyVocabulary>()?;
    m.add_class::<batch::PyStreamBatch>()?;
    outcome::register(m)?;
    m.add_function(wrap_pyfunction!(token_stream::parse, m)?)?;
    m.add_function(wrap_pyfunction!(token_stream::formats, m)?)?;
    m.add_function(wrap_pyfunction!(token_stream::commit_key, m)?)?;
    m.add_function(wrap_pyfunction!(token_stream::tool_call_id_prefix, m)?)?;
    m.add("KEY_PREFIX", crate::turn::keys::KEY_PREFIX)?;
    Ok(())
}
