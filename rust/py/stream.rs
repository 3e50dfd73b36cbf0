//! `TokenStream` and the module functions, over `crate::stream`.

use super::convert::{collect_tokens, py_to_json, token};
use super::errors::{inert_error, IntoPyResult};
use super::event::PyBlockEvent;
use crate::error::CoreError;
use crate::ledger::{CommitHasher, TokenState};
use crate::scan::{formats as builtin_formats, FormatSpec, Schemas};
use crate::stream::{StreamConfig, TokenIn, TokenStream};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

/// One turn of one sequence. Mutable: one per stream, not shared between threads.
// Defaults are spelled as literals in the signatures (1 MiB for max_block_bytes)
// so that Python's inspect, and stubtest, see the value.
#[pyclass(name = "TokenStream", module = "inert._core")]
#[derive(Debug)]
pub struct PyTokenStream {
    inner: TokenStream,
}

/// `(id, piece)` pairs from a `{id: piece}` mapping or a sequence indexed by id.
fn id_pieces(table: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Vec<(u64, Vec<u8>)>> {
    let Some(table) = table else {
        return Ok(Vec::new());
    };
    let py = table.py();
    let pairs: Vec<(u64, Bound<'_, PyAny>)> = if let Ok(d) = table.cast::<PyDict>() {
        d.iter()
            .map(|(id, piece)| {
                let id = id.extract::<u64>().map_err(|_| {
                    inert_error(
                        py,
                        "VocabularyError",
                        format!("{what} key {id} is not a non-negative integer token id"),
                    )
                })?;
                Ok((id, piece))
            })
            .collect::<PyResult<_>>()?
    } else {
        table.try_iter()?.zip(0u64..).map(|(piece, id)| piece.map(|p| (id, p))).collect::<PyResult<_>>()?
    };
    pairs
        .into_iter()
        .map(|(id, piece)| match token(0, &piece) {
            Ok(TokenIn::Piece(b)) => Ok((id, b.to_vec())),
            _ => Err(inert_error(
                py,
                "VocabularyError",
                format!("{what}[{id}] must be a str or bytes piece, got {piece:?}"),
            )),
        })
        .collect()
}

/// A stream configuration from Python: a built-in format name or a custom
/// format dict, and optional `{tool: json_schema}` schemas.
fn config(
    py: Python<'_>,
    format: Option<&Bound<'_, PyAny>>,
    turn_key: &str,
    schemas: Option<&Bound<'_, PyAny>>,
    max_block_bytes: usize,
) -> PyResult<StreamConfig> {
    let spec = if let Some(format) = format.filter(|f| !f.is_none()) {
        format_spec(format)?
    } else {
        builtin_formats::builtin("hermes").or_raise(py)?
    };
    let schemas = match schemas {
        Some(s) if !s.is_none() => Schemas::from_json(&py_to_json(s, "schemas")?),
        _ => Schemas::default(),
    };
    Ok(StreamConfig { format: spec, schemas, turn_key: turn_key.to_owned(), max_block_bytes })
}

/// A built-in format by name, or a custom format from its dict.
fn format_spec(format: &Bound<'_, PyAny>) -> PyResult<FormatSpec> {
    let py = format.py();
    Ok(if let Ok(name) = format.cast::<PyString>() {
        builtin_formats::builtin(name.to_str()?).or_raise(py)?
    } else if format.is_instance_of::<PyDict>() {
        let doc = py_to_json(format, "format")?;
        FormatSpec::custom(&doc).map_err(CoreError::BadFormatSpec).or_raise(py)?
    } else {
        return Err(inert_error(
            py,
            "InertTypeError",
            format!("format must be a format name or a custom format dict, got {}", format.get_type()),
        ));
    })
}

fn count(py: Python<'_>, n: &Bound<'_, PyAny>, pending: usize) -> PyResult<usize> {
    if !n.is_instance_of::<pyo3::types::PyInt>() || n.is_instance_of::<pyo3::types::PyBool>() {
        return Err(inert_error(
            py,
            "InertTypeError",
            format!("verify(n_accepted): expected an int, got {}", n.get_type()),
        ));
    }
    match n.extract::<i64>() {
        Ok(v) => usize::try_from(v).map_err(|_| super::errors::to_py(py, &CoreError::NegativeCount { requested: v })),
        // An int too large for i64 is negative or far more than any window.
        Err(_) if n.lt(0i64)? => Err(inert_error(
            py,
            "VerifyError",
            format!("verify({n}): the accepted count must be >= 0; pass 0 to reject the whole window"),
        )),
        Err(_) => Err(inert_error(
            py,
            "VerifyError",
            format!("verify({n}) accepts more tokens than are pending ({pending}); pass at most the number drafted since the last verify"),
        )),
    }
}

#[pymethods]
impl PyTokenStream {
    #[new]
    #[pyo3(signature = (format = None, turn_key = "", *, vocab = None, special_tokens = None, schemas = None, max_block_bytes = 1_048_576))]
    fn new(
        py: Python<'_>,
        format: Option<&Bound<'_, PyAny>>,
        turn_key: &str,
        vocab: Option<&Bound<'_, PyAny>>,
        special_tokens: Option<&Bound<'_, PyAny>>,
        schemas: Option<&Bound<'_, PyAny>>,
        max_block_bytes: usize,
    ) -> PyResult<Self> {
        let config = config(py, format, turn_key, schemas, max_block_bytes)?;
        let vocab = id_pieces(vocab, "vocab")?;
        let special = id_pieces(special_tokens, "special_tokens")?;
        Ok(Self { inner: TokenStream::new(&config, vocab, special).or_raise(py)? })
    }

    fn draft(&mut self, py: Python<'_>, tokens: &Bound<'_, PyAny>) -> PyResult<Vec<PyBlockEvent>> {
        let objects = collect_tokens(tokens)?;
        let window = objects.iter().enumerate().map(|(i, o)| token(i, o)).collect::<PyResult<Vec<_>>>()?;
        let events = self.inner.draft(&window).or_raise(py)?;
        PyBlockEvent::all(py, events)
    }

    #[pyo3(signature = (n_accepted, correction = None))]
    fn verify(
        &mut self,
        py: Python<'_>,
        n_accepted: &Bound<'_, PyAny>,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyBlockEvent>> {
        let n = count(py, n_accepted, self.inner.pending_len())?;
        let correction = correction.map(|c| token(0, c)).transpose()?;
        let events = self.inner.verify(n, correction).or_raise(py)?;
        PyBlockEvent::all(py, events)
    }

    fn finish(&mut self, py: Python<'_>) -> PyResult<Vec<PyBlockEvent>> {
        let events = self.inner.finish().or_raise(py)?;
        PyBlockEvent::all(py, events)
    }

    #[getter]
    fn format(&self) -> String {
        self.inner.format().name.clone()
    }

    #[getter]
    fn pending_len(&self) -> usize {
        self.inner.pending_len()
    }

    #[getter]
    fn accepted_len(&self) -> usize {
        self.inner.accepted_len()
    }

    #[getter]
    fn ledger_len(&self) -> usize {
        self.inner.ledger().len()
    }

    #[getter]
    fn finished(&self) -> bool {
        self.inner.is_finished()
    }

    fn accepted_text<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.accepted_text())
    }

    fn live_text<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.live_text())
    }

    fn token_state(&self, py: Python<'_>, index: usize) -> PyResult<&'static str> {
        match self.inner.token_state(index) {
            Some(TokenState::Undecided) => Ok("undecided"),
            Some(TokenState::Accepted) => Ok("accepted"),
            Some(TokenState::Rejected) => Ok("rejected"),
            None => Err(inert_error(
                py,
                "InertValueError",
                format!("token {index} is past the ledger ({} tokens)", self.inner.ledger().len()),
            )),
        }
    }

    fn token_piece<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyBytes>> {
        self.token_state(py, index)?;
        Ok(PyBytes::new(py, self.inner.ledger().piece(index)))
    }

    fn rejected_runs(&self) -> Vec<(usize, usize)> {
        self.inner.ledger().rejected_runs().into_iter().map(|r| (r.start, r.end)).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenStream(format={:?}, accepted={}, pending={}, ledger={})",
            self.inner.format().name,
            self.inner.accepted_len(),
            self.inner.pending_len(),
            self.inner.ledger().len()
        )
    }
}

/// Parses a whole finished output in one shot with the stream's scanner.
#[pyfunction]
#[pyo3(signature = (text, format = None, *, schemas = None, max_block_bytes = 1_048_576))]
pub fn parse(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    format: Option<&Bound<'_, PyAny>>,
    schemas: Option<&Bound<'_, PyAny>>,
    max_block_bytes: usize,
) -> PyResult<Vec<PyBlockEvent>> {
    let config = config(py, format, "", schemas, max_block_bytes)?;
    let bytes: &[u8] = if let Ok(s) = text.cast::<PyString>() {
        s.to_str()?.as_bytes()
    } else if let Ok(b) = text.cast::<PyBytes>() {
        b.as_bytes()
    } else {
        return Err(inert_error(
            py,
            "InertTypeError",
            format!("parse(text): expected str or bytes, got {}", text.get_type()),
        ));
    };
    let events = crate::stream::parse(bytes, &config).or_raise(py)?;
    PyBlockEvent::all(py, events)
}

/// The known format names.
#[pyfunction]
pub fn formats() -> Vec<&'static str> {
    builtin_formats::NAMES.to_vec()
}

/// The commit key of the `ordinal`-th block ending in the last of `tokens`,
/// for stacks that reconcile against inert without running its stream.
#[pyfunction]
#[pyo3(signature = (turn_key, tokens, ordinal = 0))]
pub fn commit_key(turn_key: &str, tokens: &Bound<'_, PyAny>, ordinal: u32) -> PyResult<String> {
    let objects = collect_tokens(tokens)?;
    let mut hasher = CommitHasher::new(turn_key);
    for (i, o) in objects.iter().enumerate() {
        match token(i, o)? {
            TokenIn::Piece(p) => hasher.absorb(p, None),
            TokenIn::Id(id) => {
                let id = u32::try_from(id).map_err(|_| {
                    super::errors::to_py(o.py(), &CoreError::TokenIdTooLarge { id, max: u64::from(u32::MAX) })
                })?;
                hasher.absorb(&[], Some(id));
            }
        }
    }
    Ok(hasher.key(ordinal).to_string())
}
