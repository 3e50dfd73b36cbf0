//! Core errors become instances of the exception classes declared once, in
//! `inert/errors.py`, where they can derive from both `InertError` and the
//! matching builtin (`ValueError`, `TypeError`).

use crate::error::CoreError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// An instance of `inert.errors.<class>` carrying `message`.
pub fn inert_error(py: Python<'_>, class: &str, message: String) -> PyErr {
    let module = ERRORS.get_or_try_init(py, || py.import("inert.errors").map(Bound::unbind));
    let class =
        module.and_then(|m| m.bind(py).getattr(class)).and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(class) => PyErr::from_type(class, message),
        // Only reachable if inert's Python package is broken; still no panic.
        Err(e) => PyRuntimeError::new_err(format!("{message} (and inert.errors could not be loaded: {e})")),
    }
}

/// The one mapping from core errors to Python exceptions.
pub fn to_py(py: Python<'_>, err: &CoreError) -> PyErr {
    let class = match err {
        CoreError::VerifyTooMany { .. } | CoreError::NegativeCount { .. } => "VerifyError",
        CoreError::UnknownFormat { .. } => "UnknownFormatError",
        CoreError::BadFormatSpec(_) => "FormatSpecError",
        CoreError::UnknownTokenId { .. } | CoreError::TokenIdTooLarge { .. } | CoreError::EmptySpecialToken { .. } => {
            "VocabularyError"
        }
        CoreError::Finished => "StreamFinishedError",
        CoreError::StreamTooLong => "StreamLimitError",
    };
    inert_error(py, class, err.to_string())
}

/// `Result<T, CoreError>` to `PyResult<T>`.
pub trait IntoPyResult<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, CoreError> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, &e))
    }
}
