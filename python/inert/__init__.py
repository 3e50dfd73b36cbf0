"""inert keeps rejected draft tokens inert when an LLM inference loop combines
speculative decoding with tool calls dispatched from the stream.

Reads may run on draft tokens; writes wait until every token of their block
is accepted; one commit key ties dispatch, journal and reconciliation together.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import openai as openai  # inert.openai.chunk; imports the openai package only when called
from ._core import (
    BlockMalformed,
    Call,
    CallClosed,
    CallCommitted,
    CallRetracted,
    Malformed,
    ReasoningUnopened,
    StreamBatch,
    TokenStream,
    Vocabulary,
    commit_key,
    formats,
)
from .audit import reconcile
from .batch import BatchOrchestrator
from .effects import EffectClass, EffectTable, Footprint, ToolSpec
from .errors import (
    BatchError,
    CancelledCallError,
    ConcurrentUseError,
    EffectTableError,
    FormatSpecError,
    IdempotencyConflictError,
    InDoubtError,
    InertError,
    InertTypeError,
    InertValueError,
    InFlightError,
    JournalError,
    LoopError,
    MissingToolError,
    PieceTypeError,
    PolicyError,
    ReasoningWarning,
    ReentrancyError,
    ReplayedError,
    SpeculativeEffectViolation,
    StaleClaimError,
    StreamFinishedError,
    StreamLimitError,
    ToolTimeoutError,
    TraceWarning,
    TreeError,
    TurnAbandonedWarning,
    UnknownFormatError,
    UnknownSequenceError,
    UnstorableResultError,
    VerifyError,
    VocabularyError,
)
from .gate import POLICIES, Dispatch
from .inputs import Ids, IntArray, Token, TokenRows, Tokens
from .journal import Journal, JournalEntry, MemoryJournal, PostgresJournal, Recovery, SqliteJournal, recover
from .ledger import TokenState
from .orchestrator import AsyncOrchestrator, Orchestrator, Step
from .outcomes import Outcome
from .parse import parse
from .report import AcceptedCall, CallResult, DiscardedCall, DispatchRecord, Report, Violation
from .runtime import CurrentCall, Tools, TwoPhaseTool, current_call
from .stream import Released

try:
    __version__ = version("inert")
except PackageNotFoundError:  # running from a source tree without metadata
    __version__ = "0.0.0"

__all__ = [
    "POLICIES",
    "AcceptedCall",
    "AsyncOrchestrator",
    "BatchError",
    "BatchOrchestrator",
    "BlockMalformed",
    "Call",
    "CallClosed",
    "CallCommitted",
    "CallResult",
    "CallRetracted",
    "CancelledCallError",
    "ConcurrentUseError",
    "CurrentCall",
    "DiscardedCall",
    "Dispatch",
    "DispatchRecord",
    "EffectClass",
    "EffectTable",
    "EffectTableError",
    "Footprint",
    "FormatSpecError",
    "IdempotencyConflictError",
    "Ids",
    "InDoubtError",
    "InFlightError",
    "InertError",
    "InertTypeError",
    "InertValueError",
    "IntArray",
    "Journal",
    "JournalEntry",
    "JournalError",
    "LoopError",
    "Malformed",
    "MemoryJournal",
    "MissingToolError",
    "Orchestrator",
    "Outcome",
    "PieceTypeError",
    "PolicyError",
    "PostgresJournal",
    "ReasoningUnopened",
    "ReasoningWarning",
    "Recovery",
    "ReentrancyError",
    "Released",
    "ReplayedError",
    "Report",
    "SpeculativeEffectViolation",
    "SqliteJournal",
    "StaleClaimError",
    "Step",
    "StreamBatch",
    "StreamFinishedError",
    "StreamLimitError",
    "Token",
    "TokenRows",
    "TokenState",
    "TokenStream",
    "Tokens",
    "ToolSpec",
    "ToolTimeoutError",
    "Tools",
    "TraceWarning",
    "TreeError",
    "TurnAbandonedWarning",
    "TwoPhaseTool",
    "UnknownFormatError",
    "UnknownSequenceError",
    "UnstorableResultError",
    "VerifyError",
    "Violation",
    "Vocabulary",
    "VocabularyError",
    "__version__",
    "commit_key",
    "current_call",
    "formats",
    "parse",
    "reconcile",
    "recover",
]
