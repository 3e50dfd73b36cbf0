"""The records a turn leaves behind: what was dispatched, what was accepted,
and the report that reconciles the two."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._core import Malformed, ReasoningUnopened
from .effects import EffectClass, Footprint

if TYPE_CHECKING:
    from .turn import Step

__all__ = ["AcceptedCall", "CallResult", "DiscardedCall", "DispatchRecord", "Report", "Violation"]

Span = tuple[int, int]
"""Token positions ``(start, end)`` on the accepted stream, ``end`` exclusive."""


@dataclass(frozen=True)
class DispatchRecord:
    """One dispatch of a tool call, as the journal holds it: written (intent)
    before the call, completed (outcome) after. Times are ``time.perf_counter()``.
    Immutable: the runtime that runs the call owns its outcome and hands out snapshots."""

    commit_key: str
    name: str
    arguments: dict[str, Any]
    effect: EffectClass
    footprint: Footprint
    span: Span
    early: bool
    started: float | None = None
    finished: float | None = None
    result: Any = None
    error: BaseException | None = None
    replayed: bool = False
    """Its commit key was already journaled: the recorded outcome was returned (or, for an
    idempotent call in doubt, the tool ran again with the same key)."""
    timed_out: bool = False
    discarded: bool = False
    """Its block was rejected after it started: its result never counts."""
    phase: str | None = None
    """For a two-phase tool, the last phase it ran: ``"prepare"``, ``"commit"`` or ``"abort"``.
    Only a commit is an effect; a prepare is inert, and an abort drops it."""

    @property
    def done(self) -> bool:
        """Whether it finished (returned, raised or timed out), rather than still running."""
        return self.finished is not None

    @property
    def executed_effect(self) -> bool:
        """Whether it changed the world: an effect class other than read-only, and for a
        two-phase tool only if it committed."""
        return self.effect is not EffectClass.READ_ONLY and self.phase in (None, "commit")


@dataclass(frozen=True)
class AcceptedCall:
    """A call whose block was accepted whole, in stream order."""

    commit_key: str
    name: str
    arguments: dict[str, Any]
    span: Span
    tool_call_id: str | None = None
    """Its OpenAI tool-call id (``None`` in a foreign stack's accepted stream)."""


@dataclass(frozen=True)
class CallResult:
    """A committed call and its outcome."""

    name: str
    arguments: dict[str, Any]
    effect: EffectClass
    commit_key: str
    result: Any
    error: BaseException | None
    early: bool
    """Dispatched before its block was accepted (a speculative read that was confirmed)."""
    span: Span
    tool_call_id: str | None = None
    """The OpenAI tool-call id (``call_...``) a server sends back with the tool's message as
    ``tool_call_id``: the id of its streamed deltas with ``stream=True``, the same scheme
    without (see the README); ``None`` only when reconciling a foreign stack's log."""


@dataclass(frozen=True)
class DiscardedCall:
    """A speculative read whose block was rejected: its result never counts."""

    name: str
    arguments: dict[str, Any]
    commit_key: str
    span: Span
    finished: bool
    """Whether it had already run to completion when it was discarded."""


@dataclass(frozen=True)
class Violation:
    """A divergence between what ran and what the accepted stream says.

    ``kind`` is one of ``"orphan"`` (an effect whose block was never accepted, a
    two-phase commit of a rejected block included), ``"leaked_prepare"`` (a two-phase
    tool prepared and never committed nor aborted),
    ``"missed"`` (an accepted call never dispatched), ``"duplicate"`` (an effect
    dispatched twice under one key), ``"key_divergence"`` (dispatched under an
    accepted key with other arguments, or the same call dispatched under one key
    and accepted under another), ``"stale_read"`` (conflicting accepted calls
    that ran out of stream order).
    """

    kind: str
    tool: str
    span: Span | None
    commit_key: str
    message: str
    other_key: str | None = None


@dataclass
class Report:
    """What a turn did, reconciled against what it said."""

    results: list[CallResult] = field(default_factory=list)
    discarded: list[DiscardedCall] = field(default_factory=list)
    malformed: list[Malformed] = field(default_factory=list)
    """Accepted blocks that are not calls (``kind``, ``offset``, ``reason``); never dispatched."""
    violations: list[Violation] = field(default_factory=list)
    dispatch_log: list[DispatchRecord] = field(default_factory=list)
    accepted: list[AcceptedCall] = field(default_factory=list)
    notices: list[ReasoningUnopened] = field(default_factory=list)
    """Accepted reasoning closers that closed nothing: the prompt opened the section, so
    the calls before them may have been thoughts (and ran). Pass ``in_reasoning=True``
    for this chat template."""
    tail: Step | None = None
    """What ``finish()`` released (an orchestrator's report always has one): the content and
    reasoning held back until the end, the last tool-call deltas. Empty unless streaming."""

    @property
    def consistent(self) -> bool:
        """No violation: the world saw exactly the accepted calls, in stream order."""
        return not self.violations
