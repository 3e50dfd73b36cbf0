//! `TokenStream` and the module functions, over `crate::turn`.

use super::convert::{
    as_index, collect_tokens, count, flag, py_to_json, repr, text, token, token_arg, type_name, Index, NO_CORRECTION,
};
use super::ints::{buffer_ints, ints_1d};
use super::outcome::CallCache;
use super::stream::{released, released_tuple, StreamFlag};
use super::vocabulary::vocab_arg;
use crate::error::{CoreError, TokenFault};
use crate::ledger::TokenState;
use crate::scan::spec::MAX_DELIMITER_BYTES;
use crate::scan::{formats as builtin_formats, FormatSpec, Reasoning, Schemas};
use crate::turn::{CommitHasher, Outcome, TokenIn, Turn, TurnConfig};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyEllipsis, PyList, PyString, PyTuple};

/// One turn of one sequence. Mutable: one per stream, not shared between threads.
#[pyclass(name = "TokenStream", module = "inert._core")]
#[derive(Debug)]
pub(super) struct PyTokenStream {
    turn: Turn,
    calls: CallCache,
    /// The `ReasoningUnopened` outcomes committed so far. They are kept out of
    /// the step lists, which the orchestrators consume, until they handle them.
    notices: Vec<Py<PyAny>>,
    /// Where each step's outcomes go, inside the step's call, instead of a returned list
    /// (`_deliver_to`): an orchestrator's inbox.
    inbox: Option<Py<PyList>>,
}

/// The `reasoning=` argument: the format's own sections (`...`), none, or a pair.
#[derive(Debug, Clone)]
pub(super) enum ReasoningArg {
    FormatDefault,
    Off,
    Pair(String, String),
}

impl<'a, 'py> FromPyObject<'a, 'py> for ReasoningArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyEllipsis>() {
            return Ok(Self::FormatDefault);
        }
        if obj.is_none() {
            return Ok(Self::Off);
        }
        let wrong = || CoreError::WrongType {
            what: "reasoning".to_owned(),
            expected: "an (open, close) pair of str, None (off), or ... (the format's own)",
            got: type_name(&obj),
        };
        if !(obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>()) || obj.len()? != 2 {
            return Err(wrong().into());
        }
        let (open, close) = (obj.get_item(0)?, obj.get_item(1)?);
        let (open, close) = (text(&open, "reasoning[0]")?, text(&close, "reasoning[1]")?);
        if open.is_empty() || close.is_empty() {
            return Err(CoreError::BadReasoning("the open and close delimiters must not be empty".to_owned()).into());
        }
        // As a custom format's delimiters are: the automaton's build grows with the square of
        // a repetitive delimiter's length (20,000 bytes took most of a minute, holding the GIL).
        if let Some(d) = [open, close].into_iter().find(|d| d.len() > MAX_DELIMITER_BYTES) {
            let start: String = d.chars().take(24).collect();
            return Err(CoreError::BadReasoning(format!(
                "the delimiter {start:?}... is {} bytes; a delimiter may be at most {MAX_DELIMITER_BYTES}",
                d.len()
            ))
            .into());
        }
        Ok(Self::Pair(open.to_owned(), close.to_owned()))
    }
}

/// A `bool` argument, refused with inert's error (not pyo3's) when it is not one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Flag(pub(super) bool);

impl<'a, 'py> FromPyObject<'a, 'py> for Flag {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self(flag(&obj, "in_reasoning")?))
    }
}

/// The turn's reasoning sections: the format's own, none, or the caller's pair
/// (which keeps whether the format's models call from inside their thinking).
fn with_reasoning(mut format: FormatSpec, reasoning: ReasoningArg) -> FormatSpec {
    match reasoning {
        ReasoningArg::FormatDefault => {}
        ReasoningArg::Off => format.reasoning = None,
        ReasoningArg::Pair(open, close) => {
            let ended_by_call_token = format.reasoning.as_ref().is_some_and(|r| r.ended_by_call_token);
            format.reasoning = Some(Reasoning { ended_by_call_token, ..Reasoning::pair(&open, &close) });
        }
    }
    format
}

/// A `str` argument, refused with inert's error (not pyo3's) when it is not one.
#[derive(Debug, Clone)]
pub(super) struct TurnKey(pub(super) String);

impl<'a, 'py> FromPyObject<'a, 'py> for TurnKey {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self(text(&obj, "turn_key")?.to_owned()))
    }
}

/// A byte limit: a non-negative int, refused with inert's error otherwise.
#[derive(Debug, Clone, Copy)]
pub(super) struct ByteLimit(pub(super) usize);

impl<'a, 'py> FromPyObject<'a, 'py> for ByteLimit {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self(count(&obj, "max_block_bytes")?))
    }
}

pub(super) const DEFAULT_MAX_BLOCK_BYTES: ByteLimit = ByteLimit(1 << 20);

/// A turn configuration from Python: a built-in format name or a custom
/// format dict, optional `{tool: json_schema}` schemas, and the caller's
/// reasoning sections.
pub(super) fn config(
    format: Option<&Bound<'_, PyAny>>,
    turn_key: String,
    schemas: Option<&Bound<'_, PyAny>>,
    max_block_bytes: usize,
    reasoning: ReasoningArg,
    in_reasoning: Flag,
    stream: bool,
) -> PyResult<TurnConfig> {
    let format = match format.filter(|f| !f.is_none()) {
        Some(format) => format_spec(format)?,
        None => builtin_formats::builtin("hermes")?,
    };
    let schemas = match schemas {
        Some(s) if !s.is_none() => Schemas::from_json(&py_to_json(schema_table(s)?, "schemas")?),
        _ => Schemas::default(),
    };
    let format = with_reasoning(format, reasoning);
    let config = TurnConfig { format, schemas, turn_key, max_block_bytes, in_reasoning: in_reasoning.0, stream };
    config.check()?;
    Ok(config)
}

/// `schemas`, checked to be `{tool name: JSON schema dict}`: anything else would
/// type no argument, silently, and the caller would never learn why.
fn schema_table<'a, 'py>(schemas: &'a Bound<'py, PyAny>) -> Result<&'a Bound<'py, PyAny>, CoreError> {
    let expected = "a dict of tool name -> JSON schema (a dict)";
    let table = schemas.cast::<PyDict>().map_err(|_| CoreError::WrongType {
        what: "schemas".to_owned(),
        expected,
        got: type_name(schemas),
    })?;
    for (name, schema) in table.iter() {
        if !schema.is_instance_of::<PyDict>() {
            let what = format!("schemas[{}]", name.repr().map_or_else(|_| "?".to_owned(), |r| r.to_string()));
            return Err(CoreError::WrongType { what, expected: "a JSON schema (a dict)", got: type_name(&schema) });
        }
    }
    Ok(schemas)
}

/// A built-in format by name, or a custom format from its dict.
fn format_spec(format: &Bound<'_, PyAny>) -> PyResult<FormatSpec> {
    if format.is_instance_of::<PyString>() {
        return Ok(builtin_formats::builtin(text(format, "format")?)?);
    }
    if format.is_instance_of::<PyDict>() {
        let doc = py_to_json(format, "format")?;
        return Ok(FormatSpec::custom(&doc).map_err(CoreError::BadFormatSpec)?);
    }
    Err(CoreError::WrongType {
        what: "format".to_owned(),
        expected: "a format name or a custom format dict",
        got: type_name(format),
    }
    .into())
}

/// `verify`'s count: negative and too-large counts are `VerifyError`s.
fn accepted_count(n: &Bound<'_, PyAny>) -> Result<usize, CoreError> {
    match as_index::<i64>(n) {
        Index::Fits(v) if v < 0 => Err(CoreError::NegativeCount { requested: v.to_string() }),
        // A count past usize is more than any window; `check_decision` says so.
        Index::Fits(v) => Ok(usize::try_from(v).unwrap_or(usize::MAX)),
        Index::Overflows if n.lt(0i64).unwrap_or(false) => Err(CoreError::NegativeCount { requested: repr(n) }),
        Index::Overflows => Err(CoreError::VerifyTooMany { requested: repr(n), pending: 0 }),
        Index::NotAnInteger => {
            Err(CoreError::WrongType { what: "verify(n_accepted)".to_owned(), expected: "an int", got: type_name(n) })
        }
    }
}

/// Runs `f` on a token window: a list or tuple of pieces and ids, or a 1-D
/// integer buffer of ids read in one copy.
pub(super) fn with_tokens<T>(
    tokens: &Bound<'_, PyAny>,
    f: impl FnOnce(&[TokenIn<'_>]) -> Result<T, CoreError>,
) -> PyResult<T> {
    let is_sequence = tokens.is_instance_of::<PyList>() || tokens.is_instance_of::<PyTuple>();
    if !is_sequence && !tokens.is_instance_of::<PyString>() && !tokens.is_instance_of::<PyBytes>() {
        if let Some(ints) = buffer_ints(tokens, "tokens")? {
            if ints.ndim != 1 {
                let reason = format!("a {}-D array; draft a 1-D window of ids", ints.ndim);
                return Err(CoreError::BufferShape { what: "tokens", reason }.into());
            }
            let window = if ints.wrapped {
                // An unsigned buffer: every value is an id, those out of range refused as such.
                ints.ids().into_iter().map(TokenIn::Id).collect()
            } else {
                token_ids(&ints.values)?
            };
            return Ok(f(&window)?);
        }
    }
    let objects = collect_tokens(tokens)?;
    let window = objects.iter().enumerate().map(|(i, o)| token(i, o)).collect::<Result<Vec<_>, _>>()?;
    Ok(f(&window)?)
}

/// Ids as tokens, refusing negative ones.
pub(super) fn token_ids(values: &[i64]) -> Result<Vec<TokenIn<'static>>, CoreError> {
    (0..)
        .zip(values)
        .map(|(index, &v)| {
            u64::try_from(v).map(TokenIn::Id).map_err(|_| CoreError::InvalidTokenId { index, value: v.to_string() })
        })
        .collect()
}

/// Tree node indices, refusing negative ones.
pub(super) fn node_indices(values: &[i64]) -> Result<Vec<usize>, CoreError> {
    (0..)
        .zip(values)
        .map(|(j, &v)| {
            usize::try_from(v).map_err(|_| CoreError::BadTree { reason: format!("path[{j}] is {v}, not a node index") })
        })
        .collect()
}

/// The members of `inert.ledger.TokenState` (declared in Python, so that each equals the
/// string `token_state` returned before), looked up once: undecided, accepted, rejected.
static TOKEN_STATES: PyOnceLock<[Py<PyAny>; 3]> = PyOnceLock::new();

fn token_states(py: Python<'_>) -> PyResult<[Py<PyAny>; 3]> {
    let class = py.import("inert.ledger")?.getattr("TokenState")?;
    let member = |name: &str| -> PyResult<Py<PyAny>> { Ok(class.getattr(name)?.unbind()) };
    Ok([member("UNDECIDED")?, member("ACCEPTED")?, member("REJECTED")?])
}

impl PyTokenStream {
    /// The state of ledger position `index` (refused past the end, or not a count).
    fn ledger_state(&self, index: &Bound<'_, PyAny>) -> PyResult<TokenState> {
        let past = || CoreError::PastLedger { index: repr(index), len: self.turn.ledger().len() };
        let i =
            count(index, "index").map_err(|e| if matches!(e, CoreError::OutOfRange { .. }) { past() } else { e })?;
        Ok(self.turn.token_state(i).ok_or_else(past)?)
    }

    /// A step's outcomes for Python, its reasoning notices set aside.
    #[inline]
    fn convert<'py>(&mut self, py: Python<'py>, out: Vec<Outcome>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let notice = |o: &Outcome| matches!(o, Outcome::ReasoningUnopened(_));
        if out.is_empty() {
            return Ok(Vec::new());
        }
        let out = if out.iter().any(notice) {
            let (notices, out): (Vec<_>, Vec<_>) = out.into_iter().partition(notice);
            self.notices.extend(self.calls.convert(py, notices)?.into_iter().map(Bound::unbind));
            out
        } else {
            out
        };
        let out = self.calls.convert(py, out)?;
        let Some(inbox) = &self.inbox else { return Ok(out) };
        let inbox = inbox.bind(py);
        for outcome in out {
            inbox.append(outcome)?;
        }
        Ok(Vec::new())
    }
}

#[pymethods]
impl PyTokenStream {
    #[new]
    #[pyo3(
        signature = (format = None, turn_key = TurnKey(String::new()), *, vocab = None, special_tokens = None, schemas = None, max_block_bytes = DEFAULT_MAX_BLOCK_BYTES, reasoning = ReasoningArg::FormatDefault, in_reasoning = Flag(false), stream = StreamFlag(false)),
        text_signature = "(format=None, turn_key='', *, vocab=None, special_tokens=None, schemas=None, max_block_bytes=1048576, reasoning=..., in_reasoning=False, stream=False)"
    )]
    #[allow(clippy::too_many_arguments)] // the keywords mirror the public API
    fn new(
        format: Option<&Bound<'_, PyAny>>,
        turn_key: TurnKey,
        vocab: Option<&Bound<'_, PyAny>>,
        special_tokens: Option<&Bound<'_, PyAny>>,
        schemas: Option<&Bound<'_, PyAny>>,
        max_block_bytes: ByteLimit,
        reasoning: ReasoningArg,
        in_reasoning: Flag,
        stream: StreamFlag,
    ) -> PyResult<Self> {
        let config = config(format, turn_key.0, schemas, max_block_bytes.0, reasoning, in_reasoning, stream.0)?;
        let vocab = vocab_arg(vocab, special_tokens)?;
        Ok(Self {
            turn: Turn::with_vocab(&config, vocab),
            calls: CallCache::default(),
            notices: Vec::new(),
            inbox: None,
        })
    }

    fn draft<'py>(&mut self, py: Python<'py>, tokens: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let out = with_tokens(tokens, |window| self.turn.draft(window))?;
        self.convert(py, out)
    }

    /// From now on every step appends its outcomes to `inbox` inside its call and returns an
    /// empty list: the orchestrators' own, so that a Ctrl-C landing as a step returns (where a
    /// SIGINT that arrived during it is handled) cannot lose them.
    fn _deliver_to(&mut self, inbox: Bound<'_, PyList>) {
        self.inbox = Some(inbox.unbind());
    }

    /// What the steps released since the last call: `inert.Released(content, reasoning, deltas)`.
    fn take_released<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        released(py, self.turn.take_released())
    }

    /// `take_released` as a plain tuple, for the orchestrators (see `released_tuple`).
    fn _take_released<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        released_tuple(py, self.turn.take_released())
    }

    /// Whether a step released something not taken yet (cheaper than taking it).
    #[getter]
    fn has_released(&self) -> bool {
        self.turn.has_released()
    }

    /// The `ReasoningUnopened` outcomes committed so far, in stream order.
    fn notices<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyAny>> {
        self.notices.iter().map(|n| n.bind(py).clone()).collect()
    }

    /// Drafts a token tree: `parents[i]` is node `i`'s parent (an earlier node) or -1.
    fn draft_tree<'py>(
        &mut self,
        py: Python<'py>,
        tokens: &Bound<'py, PyAny>,
        parents: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let parents = ints_1d(parents, "parents")?;
        let out = with_tokens(tokens, |window| self.turn.draft_tree(window, &parents))?;
        self.convert(py, out)
    }

    /// Accepts the tree's nodes on `path` (a root down), rejects the others.
    #[pyo3(signature = (path, correction = None))]
    fn verify_path<'py>(
        &mut self,
        py: Python<'py>,
        path: &Bound<'py, PyAny>,
        correction: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let path = node_indices(&ints_1d(path, "path")?)?;
        let correction =
            correction.filter(|c| !c.is_none()).map(|c| token_arg(c, "correction", NO_CORRECTION)).transpose()?;
        let out = self.turn.verify_path(&path, correction)?;
        self.convert(py, out)
    }

    #[pyo3(signature = (n_accepted, correction = None))]
    fn verify<'py>(
        &mut self,
        py: Python<'py>,
        n_accepted: &Bound<'py, PyAny>,
        correction: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let n = accepted_count(n_accepted).map_err(|e| match e {
            CoreError::VerifyTooMany { requested, .. } => {
                CoreError::VerifyTooMany { requested, pending: self.turn.undecided_len() }
            }
            other => other,
        })?;
        let correction =
            correction.filter(|c| !c.is_none()).map(|c| token_arg(c, "correction", NO_CORRECTION)).transpose()?;
        let out = self.turn.verify(n, correction)?;
        self.convert(py, out)
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let out = self.turn.finish()?;
        self.convert(py, out)
    }

    /// Whether a drafted tree awaits `verify_path`.
    #[getter]
    fn tree_pending(&self) -> bool {
        self.turn.tree_pending()
    }

    #[getter]
    fn format(&self) -> String {
        self.turn.format().name.clone()
    }

    /// Tokens drafted and not yet verified.
    #[getter]
    fn pending_len(&self) -> usize {
        self.turn.undecided_len()
    }

    #[getter]
    fn accepted_len(&self) -> usize {
        self.turn.accepted_len()
    }

    #[getter]
    fn ledger_len(&self) -> usize {
        self.turn.ledger().len()
    }

    #[getter]
    fn finished(&self) -> bool {
        self.turn.is_finished()
    }

    fn accepted_text<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.turn.accepted_text())
    }

    fn live_text<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.turn.live_text())
    }

    /// An `inert.TokenState` member (a `str` enum: it equals the string returned before).
    fn token_state<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let slot = match self.ledger_state(index)? {
            TokenState::Undecided => 0,
            TokenState::Accepted => 1,
            TokenState::Rejected => 2,
        };
        let members = TOKEN_STATES.get_or_try_init(py, || token_states(py))?;
        Ok(members[slot].bind(py).clone())
    }

    fn token_piece<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        self.ledger_state(index)?;
        Ok(PyBytes::new(py, self.turn.ledger_piece(count(index, "index")?)))
    }

    fn rejected_runs(&self) -> Vec<(usize, usize)> {
        self.turn.ledger().rejected_runs().into_iter().map(|r| (r.start, r.end)).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenStream(format={:?}, accepted={}, pending={}, ledger={})",
            self.turn.format().name,
            self.turn.accepted_len(),
            self.turn.undecided_len(),
            self.turn.ledger().len()
        )
    }
}

/// Parses a whole finished output in one shot with the stream's scanner.
#[pyfunction]
#[pyo3(
    signature = (text, format = None, *, schemas = None, max_block_bytes = DEFAULT_MAX_BLOCK_BYTES, reasoning = ReasoningArg::FormatDefault, in_reasoning = Flag(false)),
    text_signature = "(text, format=None, *, schemas=None, max_block_bytes=1048576, reasoning=..., in_reasoning=False)"
)]
#[allow(clippy::needless_pass_by_value)] // pyo3 hands extracted arguments over by value
pub(super) fn parse<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    format: Option<&Bound<'py, PyAny>>,
    schemas: Option<&Bound<'py, PyAny>>,
    max_block_bytes: ByteLimit,
    reasoning: ReasoningArg,
    in_reasoning: Flag,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let config = config(format, String::new(), schemas, max_block_bytes.0, reasoning, in_reasoning, false)?;
    let bytes: &[u8] = if let Ok(s) = text.cast::<PyString>() {
        let not_unicode = || CoreError::BadTokenArg { what: "parse(text)".to_owned(), fault: TokenFault::NotUnicode };
        s.to_str().map_err(|_| not_unicode())?.as_bytes()
    } else if let Ok(b) = text.cast::<PyBytes>() {
        b.as_bytes()
    } else {
        return Err(CoreError::WrongType {
            what: "parse(text)".to_owned(),
            expected: "str or bytes",
            got: type_name(text),
        }
        .into());
    };
    let out = crate::turn::parse(bytes, &config)?;
    let objects = CallCache::default().convert(py, out)?;
    // Each committed outcome holds what the one-shot parse found: a Call or a
    // Malformed; a ReasoningUnopened is its own payload.
    objects
        .into_iter()
        .map(|o| {
            if o.hasattr("call")? {
                o.getattr("call")
            } else if o.hasattr("malformed")? {
                o.getattr("malformed")
            } else {
                Ok(o)
            }
        })
        .collect()
}

/// The known format names.
#[pyfunction]
pub(super) fn formats() -> Vec<&'static str> {
    builtin_formats::NAMES.to_vec()
}

/// The prefix of the tool-call ids the turn `turn_key` gives calls without an id of their
/// own (`call_<digest>_`; the call's index follows).
#[pyfunction]
#[allow(clippy::needless_pass_by_value)] // pyo3 hands extracted arguments over by value
pub(super) fn tool_call_id_prefix(turn_key: TurnKey) -> String {
    crate::turn::tool_call_id_prefix(&turn_key.0)
}

/// The commit key of the `ordinal`-th call ending in the last of `tokens`,
/// for stacks that reconcile against inert without running its stream.
#[pyfunction]
#[pyo3(signature = (turn_key, tokens, ordinal = None), text_signature = "(turn_key, tokens, ordinal=0)")]
#[allow(clippy::needless_pass_by_value)] // pyo3 hands extracted arguments over by value
pub(super) fn commit_key(
    turn_key: TurnKey,
    tokens: &Bound<'_, PyAny>,
    ordinal: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    // Taken as any object so a float or a negative ordinal is inert's error, not pyo3's bare one.
    let ordinal = match ordinal {
        None => 0,
        Some(arg) => match as_index::<u32>(arg) {
            Index::Fits(n) => n,
            Index::Overflows => {
                let expected = "an int from 0 to 4294967295 (the calls ending in one token, counted from 0)";
                return Err(CoreError::OutOfRange { what: "ordinal", value: repr(arg), expected }.into());
            }
            Index::NotAnInteger => {
                let got = type_name(arg);
                return Err(CoreError::WrongType { what: "ordinal".to_owned(), expected: "an int", got }.into());
            }
        },
    };
    let mut hasher = CommitHasher::new(&turn_key.0);
    with_tokens(tokens, |window| {
        for &t in window {
            match t {
                TokenIn::Piece(p) => hasher.absorb(p, None),
                TokenIn::Id(id) => {
                    let id =
                        u32::try_from(id).map_err(|_| CoreError::TokenIdTooLarge { id, max: u64::from(u32::MAX) })?;
                    hasher.absorb(&[], Some(id));
                }
            }
        }
        Ok(())
    })?;
    Ok(hasher.key(ordinal).to_string())
}
