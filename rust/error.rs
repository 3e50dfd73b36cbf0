//! The one error type of the core. Each variant is a caller mistake; bad model
//! output is never an error here, it is reported as a block event.

use std::fmt;

/// A misuse of the core's API. Every variant says what was wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// `verify` asked to accept more tokens than are pending.
    VerifyTooMany { requested: usize, pending: usize },
    /// `verify` was given a negative count.
    NegativeCount { requested: i64 },
    /// The format name is not one the scanner knows.
    UnknownFormat { name: String, known: &'static [&'static str] },
    /// An integer token that is neither in the vocabulary nor a special token.
    UnknownTokenId { id: u64, has_vocab: bool },
    /// A token id larger than any vocabulary inert addresses.
    TokenIdTooLarge { id: u64, max: u64 },
    /// A special token whose text is empty: it could never be matched.
    EmptySpecialToken { id: u64 },
    /// The stream was finished; a finished turn takes no more tokens.
    Finished,
    /// A custom format description that cannot be used.
    BadFormatSpec(String),
    /// A turn has grown past what 32-bit offsets address.
    StreamTooLong,
}

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
            Self::UnknownFormat { name, known } => {
                write!(f, "unknown tool-call format {name:?}; known formats: {}", known.join(", "))
            }
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
            Self::EmptySpecialToken { id } => {
                write!(f, "special token {id} has empty text; give each special token its spelling")
            }
            Self::Finished => write!(f, "the turn is finished; start a new stream for the next turn"),
            Self::BadFormatSpec(reason) => f.write_str(reason),
            Self::StreamTooLong => write!(f, "the turn exceeds 4 GiB of text; split it into turns"),
        }
    }
}

impl std::error::Error for CoreError {}
