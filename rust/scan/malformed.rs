//! Why a block is not a call: a kind a program can branch on, the byte offset
//! in the block's body where the problem was found, and a message for people
//! (the model jiter follows: `JsonErrorType` plus an index).

use std::fmt;

/// The kinds of malformed block. Model output is data: each kind is reported,
/// never raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MalformedKind {
    /// The turn ended inside the block.
    Unterminated,
    /// The block outgrew `max_block_bytes` before it ended.
    TooLarge,
    /// The block's bytes are not UTF-8.
    InvalidUtf8,
    /// The body (or the arguments) is not valid JSON.
    InvalidJson,
    /// The arguments are valid JSON but not an object.
    ArgumentsNotObject,
    /// A call has no tool name.
    MissingName,
    /// A piece of the format's layout is missing or out of place (a separator,
    /// a fence, a tag that is not closed).
    Layout,
    /// A Python-syntax argument is not a literal.
    InvalidLiteral,
    /// The block holds no call.
    NoCall,
    /// A tool name that is not a name: characters outside letters, digits,
    /// `_`, `-`, `.`, `:` (and a custom format's `name_chars`).
    InvalidName,
    /// A call id that names no tool (Kimi K2: `0`, `call_3`); never guessed.
    InvalidId,
    /// A parameter given twice in one call: never a silent overwrite.
    DuplicateArgument,
    /// A number that JSON cannot hold (`1e999`, `inf`, `nan`).
    NonFinite,
    /// A call object without the arguments its format always writes (MiniMax).
    MissingArguments,
}

impl MalformedKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 14] = [
        Self::Unterminated,
        Self::TooLarge,
        Self::InvalidUtf8,
        Self::InvalidJson,
        Self::ArgumentsNotObject,
        Self::MissingName,
        Self::Layout,
        Self::InvalidLiteral,
        Self::NoCall,
        Self::InvalidName,
        Self::InvalidId,
        Self::DuplicateArgument,
        Self::NonFinite,
        Self::MissingArguments,
    ];

    /// The kind's stable name, as Python and traces spell it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Unterminated => "unterminated",
            Self::TooLarge => "too_large",
            Self::InvalidUtf8 => "invalid_utf8",
            Self::InvalidJson => "invalid_json",
            Self::ArgumentsNotObject => "arguments_not_object",
            Self::MissingName => "missing_name",
            Self::Layout => "layout",
            Self::InvalidLiteral => "invalid_literal",
            Self::NoCall => "no_call",
            Self::InvalidName => "invalid_name",
            Self::InvalidId => "invalid_id",
            Self::DuplicateArgument => "duplicate_argument",
            Self::NonFinite => "non_finite",
            Self::MissingArguments => "missing_arguments",
        }
    }
}

/// A malformed block (or one malformed call of a block): what, where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub kind: MalformedKind,
    /// Byte offset in the block's body (the text between its delimiters).
    pub offset: usize,
    pub message: String,
}

impl Malformed {
    #[must_use]
    pub fn new(kind: MalformedKind, offset: usize, message: impl Into<String>) -> Self {
        Self { kind, offset, message: message.into() }
    }

    /// Whether the text failed to parse (rather than parsed into something that is
    /// not a call): at the end of a cut block, such a failure means the text ran out.
    #[must_use]
    pub fn is_syntax(&self) -> bool {
        matches!(
            self.kind,
            MalformedKind::InvalidJson
                | MalformedKind::Layout
                | MalformedKind::InvalidLiteral
                | MalformedKind::NoCall
                | MalformedKind::InvalidUtf8
        )
    }

    /// The same problem found in a sub-slice starting `base` bytes into the body.
    #[must_use]
    pub fn shifted(mut self, base: usize) -> Self {
        self.offset += base;
        self
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The byte offset of a serde_json error's line and column in `text`.
#[must_use]
pub(super) fn json_error_offset(text: &str, err: &serde_json::Error) -> usize {
    let line_start: usize = text.split_inclusive('\n').take(err.line().saturating_sub(1)).map(str::len).sum();
    (line_start + err.column().saturating_sub(1)).min(text.len())
}
