"""inert keeps rejected draft tokens inert when an LLM inference loop combines
speculative decoding with tool calls dispatched from the stream.

Reads may run on draft tokens; writes wait until every token of their block
is accepted; one commit key ties dispatch, journal and reconciliation together.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ._core import (
    BlockMalformed,
    Call,
    CallClosed,
    CallCommitted,
    CallRetracted,
    Malformed,
    ReasoningUnopened,
    TokenStream,
    commit_key,
    formats,
)
from .dispatch_async import CancelledCallError
from .effects import EffectClass, EffectTable, Footprint, ToolSpec
from .errors import (
    EffectTableError,
    FormatSpecError,
    IdempotencyConflictError,
    InDoubtError,
    InertError,
    InertTypeError,
    InertValueError,
    MissingToolError,
    PieceTypeError,
    PolicyError,
    ReplayedError,
    SpeculativeEffectViolation,
    StreamFinishedError,
    StreamLimitError,
    ToolTimeoutError,
    UnknownFormatError,
    VerifyError,
    VocabularyError,
)
from .journal import Journal, JournalEntry, MemoryJournal, Recovery, SqliteJournal, recover
from .orchestrator import POLICIES, AsyncOrchestrator, Orchestrator, Step
from .outcomes import Outcome
from .parse import parse
from .reconcile import reconcile
from .report import AcceptedCall, CallResult, DiscardedCall, DispatchRecord, Report, Violation

try:
    __version__ = version("inert")
except PackageNotFoundError:  # running from a source tree without metadata
    __version__ = "0.0.0"

__all__ = [
    "POLICIES",
    "AcceptedCall",
    "AsyncOrchestrator",
    "BlockMalformed",
    "Call",
    "CallClosed",
    "CallCommitted",
    "CallResult",
    "CallRetracted",
    "CancelledCallError",
    "DiscardedCall",
    "DispatchRecord",
    "EffectClass",
    "EffectTable",
    "EffectTableError",
    "Footprint",
    "FormatSpecError",
    "IdempotencyConflictError",
    "InDoubtError",
    "InertError",
    "InertTypeError",
    "InertValueError",
    "Journal",
    "JournalEntry",
    "Malformed",
    "MemoryJournal",
    "MissingToolError",
    "Orchestrator",
    "Outcome",
    "PieceTypeError",
    "PolicyError",
    "ReasoningUnopened",
    "Recovery",
    "ReplayedError",
    "Report",
    "SpeculativeEffectViolation",
    "SqliteJournal",
    "Step",
    "StreamFinishedError",
    "StreamLimitError",
    "TokenStream",
    "ToolSpec",
    "ToolTimeoutError",
    "UnknownFormatError",
    "VerifyError",
    "Violation",
    "VocabularyError",
    "__version__",
    "commit_key",
    "formats",
    "parse",
    "reconcile",
    "recover",
]
