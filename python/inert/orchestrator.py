"""The gate between the inference loop and the tools: it applies inert's
invariants to every outcome the core reports."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _core
from ._core import Call, CallClosed, CallCommitted, CallRetracted, Malformed
from .dispatch import Dispatcher, Node, ThreadDispatcher
from .dispatch_async import AsyncDispatcher
from .effects import EffectLike, EffectTable
from .errors import PolicyError, SpeculativeEffectViolation
from .journal import Journal, MemoryJournal, OwnedJournal, open_journal
from .outcomes import Outcome
from .reconcile import reconcile
from .report import AcceptedCall, DispatchRecord, Report
from .trace import TraceWriter

__all__ = ["POLICIES", "AsyncOrchestrator", "Orchestrator", "Step"]

Token = str | bytes | int

POLICIES = ("read_eager", "defer", "eager_unsafe")
"""``read_eager``: reads run when their block closes in the draft, effects after
acceptance. ``defer``: everything after acceptance. ``eager_unsafe``: everything
when its block closes in the draft, no ordering (measurement only)."""


@dataclass(frozen=True)
class Step:
    """What one ``draft`` or ``verify`` call did."""

    outcomes: tuple[Outcome, ...]
    """The core's outcomes, in order: calls closed, committed and retracted, malformed blocks."""
    dispatched: tuple[DispatchRecord, ...] = field(default=())
    """Calls the gate let go during this step (they may still wait for earlier conflicting calls)."""


class _Gate:
    """The gate shared by ``Orchestrator`` and ``AsyncOrchestrator``: it turns the
    core's outcomes into dispatch decisions under inert's invariants. See
    ``Orchestrator`` for the arguments."""

    def __init__(
        self,
        effects: EffectTable | Mapping[str, EffectLike] | None = None,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        *,
        format: str | Mapping[str, Any] = "hermes",
        turn_key: str = "turn",
        policy: str = "read_eager",
        vocab: Mapping[int, str | bytes] | Sequence[str | bytes] | None = None,
        special_tokens: Mapping[int, str | bytes] | None = None,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        max_block_bytes: int = 1 << 20,
        max_workers: int = 8,
        timeout: float | None = None,
        limits: Mapping[str, int] | None = None,
        journal: Journal | str | os.PathLike[str] | None = None,
        trace: str | os.PathLike[str] | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise PolicyError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
        if policy == "eager_unsafe":
            warnings.warn(
                "policy='eager_unsafe' dispatches calls from unverified draft tokens; use it only to measure",
                stacklevel=2,
            )
        self.effects = effects if isinstance(effects, EffectTable) else EffectTable(effects)
        self.tools = dict(tools or {})
        self.policy = policy
        self.turn_key = turn_key
        self.stream = _core.TokenStream(
            format,
            turn_key,
            vocab=vocab,
            special_tokens=special_tokens,
            schemas=schemas if schemas is not None else self.effects.schemas,
            max_block_bytes=max_block_bytes,
        )
        self._own_journal: OwnedJournal | None = None  # opened here from a path or URI: closed at finish
        if journal is None:
            journal = MemoryJournal()
        elif isinstance(journal, (str, os.PathLike)):
            journal = self._own_journal = open_journal(journal)
        self.journal: Journal = journal
        self.timeout = timeout
        tool_limits = {n: s.max_concurrency for n, s in self.effects.items() if s.max_concurrency}
        tool_limits.update(limits or {})
        self._trace = TraceWriter(trace, turn_key) if trace is not None else None
        if self._trace is not None:
            self._trace.emit("turn_start", format=self.stream.format, policy=policy)
        self._dispatcher = self._make_dispatcher(max_workers=max_workers, ordered=policy != "eager_unsafe",
                                                 limits=tool_limits)
        self._nodes: dict[str, Node] = {}  # commit key -> the call closed under it, until committed or retracted
        self._committed: list[Call] = []
        self._malformed: list[Malformed] = []

    def _make_dispatcher(self, *, max_workers: int, ordered: bool, limits: dict[str, int]) -> Dispatcher:
        raise NotImplementedError

    def _draft(self, tokens: Sequence[Token]) -> Step:
        events = self.stream.draft(tokens)
        if self._trace is not None:
            self._trace.draft(tokens)
        return self._apply(events)

    def _verify(self, n_accepted: int, correction: Token | None) -> Step:
        events = self.stream.verify(n_accepted, correction)
        if self._trace is not None:
            self._trace.verify(n_accepted, correction)
        return self._apply(events)

    def _end(self) -> None:
        self._apply(self.stream.finish())

    def _report(self, strict: bool) -> Report:
        report = self._reconcile()
        if self._trace is not None:
            self._trace.emit("turn_end", violations=len(report.violations))
            self._trace.close()
        if self._own_journal is not None:
            self._own_journal.close()
        if strict and report.violations:
            raise SpeculativeEffectViolation(report)
        return report

    @property
    def pending(self) -> int:
        """Tokens drafted and not yet verified."""
        return self.stream.pending_len

    # -- the gate --

    def _apply(self, outcomes: list[Outcome]) -> Step:
        dispatched: list[DispatchRecord] = []
        for outcome in outcomes:
            if self._trace is not None:
                self._trace.outcome(outcome)
            if isinstance(outcome, CallClosed):
                self._on_closed(outcome.call, dispatched)
            elif isinstance(outcome, CallCommitted):
                self._on_committed(outcome.call, dispatched)
            elif isinstance(outcome, CallRetracted):
                self._on_retracted(outcome.call)
            else:
                self._malformed.append(outcome.malformed)
        return Step(tuple(outcomes), tuple(dispatched))

    def _on_closed(self, call: Call, dispatched: list[DispatchRecord]) -> None:
        # The table is consulted once, here, when the gate decides (invariant 5).
        spec = self.effects.spec(call.name)
        record = DispatchRecord(
            commit_key=call.commit_key,
            name=call.name,
            arguments=call.arguments,
            effect=spec.effect,
            footprint=spec.footprint(call.arguments),
            span=call.span,
            early=False,
        )
        node = self._dispatcher.register(record, self.tools.get(call.name), spec.timeout or self.timeout)
        self._nodes[call.commit_key] = node
        if self.policy == "eager_unsafe" or (self.policy == "read_eager" and spec.speculate):
            self._dispatcher.permit(node, early=True)
            dispatched.append(record)

    def _on_committed(self, call: Call, dispatched: list[DispatchRecord]) -> None:
        self._committed.append(call)
        node = self._nodes.pop(call.commit_key)
        if self._dispatcher.confirm(node):
            dispatched.append(node.record)

    def _on_retracted(self, call: Call) -> None:
        node = self._nodes.pop(call.commit_key)
        if self._dispatcher.retract(node) and self._trace is not None:
            self._trace.discard(node.record)

    def _reconcile(self) -> Report:
        accepted = [AcceptedCall(c.commit_key, c.name, c.arguments, c.span) for c in self._committed]
        report = reconcile(self._dispatcher.log, accepted)
        report.malformed = list(self._malformed)
        return report


class Orchestrator(_Gate):
    """Gates tool dispatch on speculative verification for one assistant turn.

    Call ``draft(tokens)`` for every draft window and ``verify(n, correction)``
    after the target model scores it, then ``finish()`` once at the end of the turn.
    Tools run on a thread pool. One orchestrator per turn and per sequence; not
    shared between threads.

    Args:
        effects: an ``EffectTable``, or a mapping it is built from. Unknown tools are writes.
        tools: tool name -> callable, called as ``tool(**arguments)``; idempotent tools
            also get ``idempotency_key=<commit key>``.
        format: the tool-call format, named as in vLLM's ``--tool-call-parser`` (see
            ``inert.formats()`` and ``docs/formats.md``), or a custom format dict (see the README).
        turn_key: seeds the commit keys; make it unique per turn.
        policy: ``"read_eager"`` (default), ``"defer"`` or ``"eager_unsafe"`` (measurement only).
        vocab: token id -> piece (a mapping, or a sequence indexed by id), to draft ``int`` tokens.
        special_tokens: token id -> spelling of the model's special tokens; those that spell
            a delimiter are matched by id (so are ``vocab`` entries that spell one exactly).
        schemas: tool name -> JSON schema of its parameters, to type the raw values of
            XML-style formats; defaults to the schemas of ``effects`` (from ``from_openai``).
        max_block_bytes: a block longer than this is malformed and never dispatched.
        max_workers: worker threads for tool calls.
        timeout: default per-call timeout in seconds (a ``ToolSpec`` may set its own);
            a call past it is recorded with ``ToolTimeoutError`` and is in doubt.
        limits: tool name -> most calls of it running at once (a ``ToolSpec`` may set its own).
        journal: a ``Journal``, the path of a SQLite journal file (durable intents,
            idempotency by commit key across restarts), or a ``postgresql://`` URI (a
            ``PostgresJournal`` a fleet shares). In memory by default.
        trace: path of a JSONL trace to append this turn's events to (see ``docs/trace.md``).

    Raises:
        UnknownFormatError: ``format`` is not a known format.
        FormatSpecError: a custom ``format`` dict cannot be used.
        PolicyError: ``policy`` is not one of ``POLICIES``.
        VocabularyError: a bad ``vocab`` or ``special_tokens`` entry.
    """

    def _make_dispatcher(self, *, max_workers: int, ordered: bool, limits: dict[str, int]) -> Dispatcher:
        return ThreadDispatcher(self.journal, self.turn_key, max_workers=max_workers, ordered=ordered,
                                limits=limits, trace=self._trace)

    def draft(self, tokens: Sequence[Token]) -> Step:
        """Appends a draft window (several calls extend the pending window).

        Raises:
            PieceTypeError: a token is not ``str``, ``bytes`` or an integer; nothing changes.
            VocabularyError: an integer token is not in the vocabulary; nothing changes.
            StreamFinishedError: the turn is finished.
        """
        return self._draft(tokens)

    def verify(self, n_accepted: int, correction: Token | None = None) -> Step:
        """Accepts the first ``n_accepted`` pending tokens, rejects the rest, then
        appends ``correction`` (the target's own next token) as accepted.

        Raises:
            VerifyError: ``n_accepted`` is negative or more than are pending; nothing changes.
        """
        return self._verify(n_accepted, correction)

    def finish(self, *, strict: bool = True) -> Report:
        """Ends the turn: rejects tokens never verified, waits for every dispatched
        call, and reconciles the dispatch log with the accepted stream.

        Raises:
            SpeculativeEffectViolation: anything diverged (``strict``); the exception holds the report.
        """
        self._end()
        assert isinstance(self._dispatcher, ThreadDispatcher)
        self._dispatcher.drain()
        return self._report(strict)


class AsyncOrchestrator(_Gate):
    """``Orchestrator`` for asyncio loops: ``await orch.draft(...)``,
    ``await orch.verify(...)``, ``await orch.finish()``. It takes the same
    arguments as ``Orchestrator``; ``max_workers`` is unused (asyncio's default
    executor runs the plain functions).

    Coroutine tools run as tasks on the loop, plain functions in a worker
    thread; a speculative read whose block is rejected is cancelled if it is
    still running.
    """

    def _make_dispatcher(self, *, max_workers: int, ordered: bool, limits: dict[str, int]) -> Dispatcher:
        return AsyncDispatcher(self.journal, self.turn_key, ordered=ordered, limits=limits, trace=self._trace)

    def _bound(self) -> AsyncDispatcher:
        assert isinstance(self._dispatcher, AsyncDispatcher)
        self._dispatcher.bind(asyncio.get_running_loop())
        return self._dispatcher

    async def draft(self, tokens: Sequence[Token]) -> Step:
        """As ``Orchestrator.draft``."""
        self._bound()
        return self._draft(tokens)

    async def verify(self, n_accepted: int, correction: Token | None = None) -> Step:
        """As ``Orchestrator.verify``."""
        self._bound()
        return self._verify(n_accepted, correction)

    async def finish(self, *, strict: bool = True) -> Report:
        """As ``Orchestrator.finish``, awaiting the calls."""
        dispatcher = self._bound()
        self._end()
        await dispatcher.drain()
        return self._report(strict)
