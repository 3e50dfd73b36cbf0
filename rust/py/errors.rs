//! The one conversion from core errors to Python exceptions. The classes are
//! declared once, in `inert/errors.py`, where each derives from `InertError`
//! and the matching builtin; their handles are looked up once and cached.

use crate::error::{CoreError, TokenFault};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// Handles of the classes of `inert.errors` the core raises.
struct Classes {
    inert_value: Py<PyType>,
    inert_type: Py<PyType>,
    verify: Py<PyType>,
    unknown_format: Py<PyType>,
    format_spec: Py<PyType>,
    vocabulary: Py<PyType>,
    stream_limit: Py<PyType>,
    stream_finished: Py<PyType>,
    piece_type: Py<PyType>,
    tree: Py<PyType>,
    batch: Py<PyType>,
    unknown_sequence: Py<PyType>,
    concurrent_use: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

impl Classes {
    fn load(py: Python<'_>) -> PyResult<Self> {
        let module = py.import("inert.errors")?;
        let class = |name: &str| -> PyResult<Py<PyType>> { Ok(module.getattr(name)?.cast_into::<PyType>()?.unbind()) };
        Ok(Self {
            inert_value: class("InertValueError")?,
            inert_type: class("InertTypeError")?,
            verify: class("VerifyError")?,
            unknown_format: class("UnknownFormatError")?,
            format_spec: class("FormatSpecError")?,
            vocabulary: class("VocabularyError")?,
            stream_limit: class("StreamLimitError")?,
            stream_finished: class("StreamFinishedError")?,
            piece_type: class("PieceTypeError")?,
            tree: class("TreeError")?,
            batch: class("BatchError")?,
            unknown_sequence: class("UnknownSequenceError")?,
            concurrent_use: class("ConcurrentUseError")?,
        })
    }

    /// The class each error is raised as.
    fn of(&self, err: &CoreError) -> &Py<PyType> {
        match err {
            CoreError::VerifyTooMany { .. } | CoreError::NegativeCount { .. } => &self.verify,
            CoreError::UnknownFormat { .. } => &self.unknown_format,
            CoreError::BadFormatSpec(_) => &self.format_spec,
            CoreError::UnknownTokenId { .. }
            | CoreError::TokenIdTooLarge { .. }
            | CoreError::InvalidTokenId { .. }
            // A lone token argument gets the class a token of a window gets for the same fault.
            | CoreError::BadTokenArg { fault: TokenFault::NotAnId { .. }, .. }
            | CoreError::EmptySpecialToken { .. }
            | CoreError::BadVocabKey { .. }
            | CoreError::BadVocabEntry { .. }
            | CoreError::VocabEntryNotUnicode { .. }
            | CoreError::BadTokenizer { .. } => &self.vocabulary,
            CoreError::PieceType { .. }
            | CoreError::BadTokenArg { fault: TokenFault::Type { .. }, .. }
            | CoreError::BareTokens { .. }
            | CoreError::NotASequence { .. }
            | CoreError::BufferType { .. } => &self.piece_type,
            CoreError::BadTree { .. } | CoreError::TreePending | CoreError::DraftPending { .. } | CoreError::NoTree => {
                &self.tree
            }
            CoreError::UnknownSequence { .. } => &self.unknown_sequence,
            CoreError::DuplicateSequence { .. } | CoreError::BatchShape { .. } => &self.batch,
            // A mistake in one row of a batch is raised as what it is.
            CoreError::InSequence { error, .. } => self.of(error),
            CoreError::WrongType { .. } => &self.inert_type,
            CoreError::PieceNotUnicode { .. }
            | CoreError::NotUnicode { .. }
            | CoreError::BadTokenArg { fault: TokenFault::NotUnicode, .. }
            | CoreError::OutOfRange { .. }
            | CoreError::BufferShape { .. }
            | CoreError::TooDeep { .. }
            | CoreError::PastLedger { .. }
            | CoreError::InReasoningWithoutReasoning
            | CoreError::BadReasoning(_) => &self.inert_value,
            CoreError::Finished => &self.stream_finished,
            CoreError::StreamTooLong => &self.stream_limit,
            CoreError::ConcurrentUse => &self.concurrent_use,
        }
    }
}

impl From<CoreError> for PyErr {
    fn from(err: CoreError) -> Self {
        Python::attach(|py| match CLASSES.get_or_try_init(py, || Classes::load(py)) {
            Ok(classes) => PyErr::from_type(classes.of(&err).bind(py).clone(), err.to_string()),
            // Only reachable if inert's Python package is broken; still no panic.
            Err(e) => PyRuntimeError::new_err(format!("{err} (and inert.errors could not be loaded: {e})")),
        })
    }
}
