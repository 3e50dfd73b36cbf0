//! What a turn tells its caller after each step: typed outcomes a caller can
//! act on directly, the lifecycle already folded (see `blocks.rs`).

use super::keys::CommitKey;
use crate::scan::{Call, Malformed};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// A call of a block: the parsed call, where its block sits on the live
/// stream, and its commit key.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// The block it belongs to: an id unique within the turn.
    pub block: u64,
    /// Its position among the items (calls and malformed calls) of its block.
    pub index: u32,
    /// Live-stream token positions `start..end` of its block, `end` one past its last token.
    pub span: Range<usize>,
    pub key: CommitKey,
    pub call: Call,
    /// Live-text offset of its block's body: identifies the block in the accepted stream.
    pub body_at: usize,
    /// Streaming output: the OpenAI tool-call id its deltas carried. Set once, when the
    /// stream settles the committed call, which can be a step after the outcome went out.
    pub tool_call_id: OnceLock<Box<str>>,
}

/// A malformed block, or one malformed call of a block: never dispatched.
#[derive(Debug, Clone, PartialEq)]
pub struct MalformedRecord {
    pub block: u64,
    pub index: u32,
    pub span: Range<usize>,
    pub key: CommitKey,
    pub error: Malformed,
    pub body_at: usize,
    /// Streaming output: the indices of the tool calls whose deltas had gone out
    /// before the block turned out malformed, in stream order: one for a malformed
    /// call, every call that streamed from a block reported whole. Set once, when the
    /// stream settles the block, which can be a step after the outcome went out.
    pub tool_call_indices: OnceLock<Box<[u32]>>,
}

/// A reasoning closer that arrived while the turn was not in reasoning: the
/// prompt (the chat template) opened the section, so calls before it may have
/// been thoughts. Reported once its tokens are accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasoningRecord {
    /// Live-stream token positions `start..end` of the closer.
    pub span: Range<usize>,
}

/// One outcome of a step. The calls of a block go through `CallClosed` and
/// then exactly one of `CallCommitted` or `CallRetracted`; a malformed block
/// is reported once, as `BlockMalformed`, when all its tokens are accepted.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A call closed. Until it is committed it is speculative: some of its
    /// tokens, or the token that confirms its end, are undecided. Reads may run.
    CallClosed(Arc<CallRecord>),
    /// Every token of the call's block is accepted and its end confirmed: final.
    CallCommitted(Arc<CallRecord>),
    /// A token of the call's block was rejected: the call never happened. If the
    /// block's opening survives, the block stays open and may close again.
    CallRetracted(Arc<CallRecord>),
    /// Every token of a malformed block (or call) is accepted: final, reported, never run.
    BlockMalformed(Arc<MalformedRecord>),
    /// Every token of a reasoning closer that closed nothing is accepted.
    ReasoningUnopened(Arc<ReasoningRecord>),
}

impl Outcome {
    /// Whether this outcome is final: the accepted stream holds it for good.
    #[must_use]
    pub fn is_committed(&self) -> bool {
        matches!(self, Self::CallCommitted(_) | Self::BlockMalformed(_) | Self::ReasoningUnopened(_))
    }
}
