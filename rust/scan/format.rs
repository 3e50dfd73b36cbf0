//! The tool-call formats the scanner knows, named as vLLM's `--tool-call-parser`.

use crate::error::CoreError;

/// A supported tool-call format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (Hermes 2 Pro/3, Qwen2.5/3).
    Hermes,
}

/// How a format's blocks are delimited and what their bodies hold.
#[derive(Debug, Clone, Copy)]
pub struct Syntax {
    pub open: &'static str,
    pub close: &'static str,
}

impl Format {
    /// Every known format name, in the order `inert.formats()` lists them.
    pub const NAMES: &'static [&'static str] = &["hermes"];

    pub fn from_name(name: &str) -> Result<Self, CoreError> {
        match name {
            "hermes" => Ok(Self::Hermes),
            _ => Err(CoreError::UnknownFormat { name: name.to_owned(), known: Self::NAMES }),
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Hermes => "hermes",
        }
    }

    #[must_use]
    pub fn syntax(self) -> Syntax {
        match self {
            Self::Hermes => Syntax { open: "<tool_call>", close: "</tool_call>" },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in Format::NAMES {
            assert_eq!(Format::from_name(name).unwrap().name(), *name);
        }
        let err = Format::from_name("nope").unwrap_err().to_string();
        assert!(err.contains("\"nope\"") && err.contains("hermes"), "{err}");
    }
}
