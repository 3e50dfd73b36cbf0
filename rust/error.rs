//! The one error type of the core. Each variant is a caller mistake; bad model
//! output is never an error here, it is reported as an outcome. The binding
//! raises nothing that is not a variant of this enum (`py/errors.rs` maps each
//! to one of inert's exception classes).

use std::fmt;

/// A misuse of the core's API. Every variant says what was wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// `verify` asked to accept more tokens than are undecided.
    VerifyTooMany { requested: String, pending: usize },
    /// `verify` was given a negative count.
    NegativeCount { requested: String },
    /// The format name is not one the scanner knows.
    UnknownFormat { name: String, known: &'static [&'static str], suggestion: Option<&'static str> },
    /// A custom format description that cannot be used.
    BadFormatSpec(String),
    /// An integer token that is neither in the vocabulary nor a special token.
    UnknownTokenId { id: u64, has_vocab: bool },
    /// A token id larger than any vocabulary inert addresses.
    TokenIdTooLarge { id: u64, max: u64 },
    /// An integer token that is not a token id at all (negative, or past 64 bits).
    InvalidTokenId { index: usize, value: String },
    /// A special token whose text is empty: it could never be matched.
    EmptySpecialToken { id: u64 },
    /// A vocabulary key that is not a token id.
    BadVocabKey { what: &'static str, key: String },
    /// A vocabulary entry that is not a piece.
    BadVocabEntry { what: &'static str, id: u64, got: String },
    /// A vocabulary entry that is a `str` but not valid Unicode (a lone surrogate).
    VocabEntryNotUnicode { what: &'static str, id: u64 },
    /// A token that is neither a `str` or `bytes` piece nor an `int` id.
    PieceType { index: usize, type_name: String },
    /// A `str` piece that is not valid Unicode (a lone surrogate).
    PieceNotUnicode { index: usize },
    /// A single `str` or `bytes` where a sequence of tokens belongs.
    BareTokens { type_name: String },
    /// Something that is not a sequence where one belongs.
    NotASequence { what: &'static str, type_name: String },
    /// An argument of the wrong type.
    WrongType { what: String, expected: &'static str, got: String },
    /// A `str` argument that is not valid Unicode (a lone surrogate) where only a
    /// `str` will do (a turn key, a name, a delimiter).
    NotUnicode { what: String },
    /// A number outside the range an argument takes.
    OutOfRange { what: &'static str, value: String, expected: &'static str },
    /// A JSON-like argument (schemas, a format dict) that nests too deeply.
    TooDeep { what: &'static str },
    /// A ledger position past the end of the ledger.
    PastLedger { index: String, len: usize },
    /// The turn was finished; a finished turn takes no more tokens.
    Finished,
    /// A turn has grown past what 32-bit offsets address.
    StreamTooLong,
    /// A `StreamBatch` reached from another thread while one of its steps runs
    /// (the core works with the GIL released).
    ConcurrentUse,
    /// `in_reasoning=True` for a turn that has no reasoning delimiters.
    InReasoningWithoutReasoning,
    /// Reasoning delimiters that cannot be used.
    BadReasoning(String),
    /// A tokenizer whose vocabulary cannot be read.
    BadTokenizer { reason: String },
    /// A buffer of token ids (or counts) whose elements are not integers.
    BufferType { what: &'static str, format: String },
    /// A buffer of the wrong shape.
    BufferShape { what: &'static str, reason: String },
    /// A token tree whose parents or accepted path do not describe a tree.
    BadTree { reason: String },
    /// A linear `draft` or `verify` while a drafted tree awaits `verify_path`.
    TreePending,
    /// `draft_tree` while a linear draft awaits `verify`.
    DraftPending { pending: usize },
    /// `verify_path` with no tree drafted.
    NoTree,
    /// A batch call naming a sequence the batch does not hold.
    UnknownSequence { seq: u64 },
    /// A sequence added twice, or named twice in one call.
    DuplicateSequence { seq: u64, why: &'static str },
    /// Arguments of a batch call whose shapes do not agree.
    BatchShape { reason: String },
    /// A caller mistake in one sequence of a batch call.
    InSequence { seq: u64, error: Box<CoreError> },
    /// A lone token argument (a correction, a token id to look up, a text to parse)
    /// that is not one; `what` names the argument, as the caller wrote it.
    BadTokenArg { what: String, fault: TokenFault },
}

/// What is wrong with a lone token argument (see `CoreError::BadTokenArg`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFault {
    /// An integer that is no token id (negative, or past 64 bits); `instead` says
    /// what to pass for what the caller likely meant ("" when nothing applies).
    NotAnId { value: String, instead: &'static str },
    /// Neither a `str` or `bytes` piece nor an `int` id.
    Type { type_name: String },
    /// A `str` that is not valid Unicode (a lone surrogate).
    NotUnicode,
}

const CONCURRENT_USE: &str =
    "this StreamBatch is inside a step (on another thread, or reading this call's arguments); use a batch from one \
     thread at a time (one per engine loop)";

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::VerifyTooMany { requested, pending } => write!(
                f,
                "verify({requested}) accepts more tokens than are pending ({pending}); \
                 pass at most the number of tokens drafted since the last verify"
            ),
            Self::NegativeCount { requested } => {
                write!(f, "verify({requested}): the accepted count must be >= 0; pass 0 to reject the whole window")
            }
            Self::UnknownFormat { name, known, suggestion } => {
                write!(f, "unknown tool-call format {name:?}")?;
                if let Some(s) = suggestion {
                    write!(f, " (did you mean {s:?}?)")?;
                }
                write!(f, "; known formats: {}", known.join(", "))
            }
            Self::BadFormatSpec(reason) | Self::BatchShape { reason } => f.write_str(reason),
            Self::UnknownTokenId { id, has_vocab: true } => {
                write!(f, "token id {id} is not in the vocabulary; pass the model's full vocabulary as vocab=")
            }
            Self::UnknownTokenId { id, has_vocab: false } => write!(
                f,
                "token id {id} given but the stream has no vocabulary; build it with vocab= \
                 (or special_tokens=) to draft integer tokens"
            ),
            Self::TokenIdTooLarge { id, max } => {
                write!(f, "token id {id} is out of range: inert addresses ids up to {max}")
            }
            Self::InvalidTokenId { index, value } => invalid_token_id(f, *index, value),
            Self::EmptySpecialToken { id } => {
                write!(f, "special token {id} has empty text; give each special token its spelling")
            }
            Self::BadVocabKey { what, key } => write!(f, "{what} key {key} is not a non-negative integer token id"),
            Self::BadVocabEntry { what, id, got } => write!(f, "{what}[{id}] must be a str or bytes piece, got {got}"),
            Self::VocabEntryNotUnicode { what, id } => {
                write!(f, "{what}[{id}] is a str that is not valid Unicode (a lone surrogate); pass the piece as bytes")
            }
            Self::PieceType { index, type_name } => {
                write!(f, "token {index} is of type {type_name}; a token must be a str or bytes piece, or an int id")
            }
            Self::PieceNotUnicode { index } => write!(
                f,
                "token {index} is a str that is not valid Unicode (a lone surrogate); pass the piece as bytes"
            ),
            Self::BareTokens { type_name } => {
                write!(f, "tokens must be a sequence of pieces, not a single {type_name}; wrap one piece in a list")
            }
            Self::NotASequence { what, type_name } => {
                write!(f, "{what} must be a sequence (a list, a tuple or a 1-D array), got {type_name}")
            }
            Self::WrongType { what, expected, got } => write!(f, "{what}: expected {expected}, got {got}"),
            Self::NotUnicode { what } => write!(f, "{what} is a str that is not valid Unicode (a lone surrogate)"),
            Self::OutOfRange { what, value, expected } => write!(f, "{what} is {value}; it must be {expected}"),
            Self::TooDeep { what } => write!(f, "{what} nests too deeply (more than 64 levels)"),
            Self::PastLedger { index, len } => write!(f, "token {index} is past the ledger ({len} tokens)"),
            Self::Finished => write!(f, "the turn is finished; start a new stream for the next turn"),
            Self::StreamTooLong => write!(f, "the turn exceeds 4 GiB of text; split it into turns"),
            Self::ConcurrentUse => f.write_str(CONCURRENT_USE),
            Self::InReasoningWithoutReasoning => write!(
                f,
                "in_reasoning=True needs reasoning delimiters, but reasoning is off for this turn; \
                 pass reasoning=(open, close) or in_reasoning=False"
            ),
            Self::BadReasoning(reason) => write!(f, "reasoning: {reason}"),
            Self::BadTokenizer { reason } => write!(f, "cannot read the tokenizer's vocabulary: {reason}"),
            Self::BufferType { what, format } => write!(
                f,
                "{what}: a buffer of {format:?} elements; pass integers (numpy int8-int64/uint8-uint64, array.array)"
            ),
            Self::BufferShape { what, reason } => write!(f, "{what}: {reason}"),
            Self::BadTree { reason } => write!(f, "bad token tree: {reason}"),
            Self::TreePending => {
                write!(f, "a drafted tree awaits verify_path(); verify it before drafting or verifying linearly")
            }
            Self::DraftPending { pending } => {
                write!(f, "{pending} drafted tokens await verify(); verify them before drafting a tree")
            }
            Self::NoTree => write!(f, "verify_path() with no tree drafted; draft one with draft_tree()"),
            Self::UnknownSequence { seq } => write!(f, "sequence {seq} is not in the batch; add() it first"),
            Self::DuplicateSequence { seq, why } => write!(f, "sequence {seq} {why}"),
            Self::InSequence { seq, error } => write!(f, "sequence {seq}: {error}"),
            Self::BadTokenArg { what, fault: TokenFault::NotAnId { value, instead } } => {
                write!(f, "{what} is {value}, which is not a token id (ids are non-negative integers)")?;
                if !instead.is_empty() {
                    write!(f, "; {instead}")?;
                }
                Ok(())
            }
            Self::BadTokenArg { what, fault: TokenFault::Type { type_name } } => {
                write!(f, "{what} is of type {type_name}; it must be a str or bytes piece, or an int token id")
            }
            Self::BadTokenArg { what, fault: TokenFault::NotUnicode } => {
                write!(f, "{what} is a str that is not valid Unicode (a lone surrogate); pass it as bytes")
            }
        }
    }
}

impl std::error::Error for CoreError {}

/// The known name closest to `name` by edit distance, when one is close enough
/// to be a typo of it.
#[must_use]
pub(crate) fn closest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let (best, distance) = known.iter().map(|k| (*k, edit_distance(name, k))).min_by_key(|&(_, d)| d)?;
    (distance <= 2.max(name.chars().count() / 3)).then_some(best)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// `InvalidTokenId`'s message: a negative int is no id; one past 64 bits is out of range.
fn invalid_token_id(f: &mut fmt::Formatter<'_>, index: usize, value: &str) -> fmt::Result {
    if value.starts_with('-') {
        write!(f, "token {index} is {value}, which is not a valid token id; ids are non-negative integers")
    } else {
        let max = crate::vocab::MAX_TOKEN_ID;
        write!(f, "token {index} is {value}, past 64 bits: out of range (inert addresses ids up to {max})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_for_typos_only() {
        let known = ["hermes", "qwen3_coder", "glm45", "glm47", "mistral"];
        assert_eq!(closest("hermess", &known), Some("hermes"));
        assert_eq!(closest("Hermes", &known), Some("hermes"));
        assert_eq!(closest("qwen_coder", &known), Some("qwen3_coder"));
        assert_eq!(closest("glm4.5", &known), Some("glm45"));
        assert_eq!(closest("llama", &known), None);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
