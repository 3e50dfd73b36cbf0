//! What the stream tells its caller about tool-call blocks.

use crate::ledger::CommitKey;
use serde_json::{Map, Value};
use std::ops::Range;

/// A parsed tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub arguments: Map<String, Value>,
    /// The argument text as the model wrote it (JSON formats), or the
    /// arguments rendered as JSON (formats whose arguments are not JSON).
    pub raw_arguments: String,
    /// The call id the model wrote, in formats that carry one (Kimi, Mistral).
    pub id: Option<String>,
}

/// One step of a block's life. Spans are live-stream token positions,
/// `start..end` with `end` one past the block's last token.
///
/// A block is `Opened`, then `Closed` (once per call it holds, `index` counting
/// from 0) or `Malformed`, both speculative while any of its tokens is
/// pending, then `Accepted` once all its tokens are accepted, or `Retracted`
/// when some are rejected. A retracted block whose opening tokens survive
/// stays open and closes again under the same id.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockEvent {
    Opened { block: u64, start: usize },
    Closed { block: u64, index: u32, span: Range<usize>, call: Call, key: CommitKey },
    Malformed { block: u64, span: Range<usize>, reason: String, key: CommitKey },
    Accepted { block: u64 },
    Retracted { block: u64 },
}

impl BlockEvent {
    #[must_use]
    pub fn block(&self) -> u64 {
        match self {
            Self::Opened { block, .. }
            | Self::Closed { block, .. }
            | Self::Malformed { block, .. }
            | Self::Accepted { block }
            | Self::Retracted { block } => *block,
        }
    }
}
