"""The orchestrators: one turn's token stream, composed with the gate (pure
policy) and a runtime that executes the gate's commands (worker threads for
``Orchestrator``, asyncio tasks for ``AsyncOrchestrator``)."""

from __future__ import annotations

import math
import os
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import _core
from .audit import TraceWriter, reconcile
from .effects import EffectLike, EffectTable
from .errors import (
    EffectTableError,
    InertTypeError,
    InertValueError,
    ReentrancyError,
    SpeculativeEffectViolation,
    closest_name,
)
from .gate import POLICIES, Confirm, Dispatch, Gate, Retract, Schedule
from .journal import Journal, MemoryJournal, OwnedJournal, open_journal
from .outcomes import Outcome
from .report import DispatchRecord, Report
from .runtime import AsyncRuntime, Invocation, Node, ThreadRuntime, ToolBox, running_for

__all__ = ["POLICIES", "AsyncOrchestrator", "Orchestrator", "RuntimeFactory", "Session", "Step"]

Token = str | bytes | int
Tools = Mapping[str, Callable[..., Any]] | Callable[[str, dict[str, Any]], Any]


@dataclass(frozen=True)
class Step:
    """What one ``draft`` or ``verify`` call did."""

    outcomes: tuple[Outcome, ...]
    """The core's outcomes, in order: calls closed, committed and retracted, malformed blocks."""
    dispatched: tuple[Dispatch, ...] = field(default=())
    """Calls the gate let go during this step (they may still wait for earlier conflicting calls)."""


class Runtime(Protocol):
    """What executes the gate's commands for one turn and owns its calls' outcomes."""

    def schedule(self, dispatch: Dispatch, invocation: Invocation | None, *, permit: bool) -> Node: ...
    def confirm(self, node: Node) -> None: ...
    def retract(self, node: Node) -> None: ...
    def records(self) -> list[DispatchRecord]: ...


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InertTypeError(f"{what} must be an int, got {type(value).__name__}")
    if value < 1:
        raise InertValueError(f"{what} must be at least 1, got {value}")
    return value


def _limits(effects: EffectTable, limits: Mapping[str, int] | None) -> dict[str, int]:
    out = {n: s.max_concurrency for n, s in effects.items() if s.max_concurrency}
    if limits is None:
        return out
    if not isinstance(limits, Mapping):
        raise InertTypeError(f"limits must map tool names to ints, got {type(limits).__name__}")
    for name, limit in limits.items():
        if not isinstance(name, str):
            raise InertTypeError(f"limits keys are tool names (str), got {type(name).__name__}")
        out[name] = _positive_int(limit, f"limits[{name!r}]")
    return out


def _timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InertTypeError(f"timeout must be a number of seconds or None, got {type(timeout).__name__}")
    if not timeout > 0 or math.isinf(timeout):
        raise InertValueError(f"timeout must be a positive, finite number of seconds, got {timeout!r}")
    return float(timeout)


def _turn_key(turn_key: object, journal: object) -> str:
    """The turn key; a unique one when none is given and nothing outlives the process."""
    if turn_key is None:
        durable = journal is not None and not isinstance(journal, MemoryJournal)
        if durable:
            raise InertValueError(
                "a journal that outlives the process needs turn_key=: the commit key (the idempotency key) "
                "derives from it, so give each turn its own stable key (a request id plus the turn number), "
                "the same key when a crashed turn is retried")
        return f"turn-{uuid.uuid4().hex}"
    if not isinstance(turn_key, str):
        raise InertTypeError(f"turn_key must be a str, got {type(turn_key).__name__}")
    return turn_key


def _warn_unknown_tools(effects: EffectTable, tools: ToolBox) -> None:
    """A callable for a tool the effect table does not name is usually a typo: the model's
    calls to the real name would fail as missing. Warned, not refused: an unnamed tool is
    the table's default class (a write), which is safe."""
    named = [n for n, _ in effects.items()]
    if not named:
        return  # an empty table classifies every tool by its default, on purpose
    for name in tools.names():
        if name not in effects:
            hint = closest_name(name, named)
            warnings.warn(
                f"tool {name!r} has a callable but no entry in the effect table, so it is a "
                f"{effects.default.effect.value}" + (f"; did you mean {hint!r}?" if hint else ""),
                stacklevel=4,
            )


class RuntimeFactory(Protocol):
    """Builds a turn's runtime (``ThreadRuntime``, ``AsyncRuntime``, or the simulator's)."""

    def __call__(self, journal: Journal, turn_key: str, *, ordered: bool, limits: dict[str, int], max_workers: int,
                 trace: TraceWriter | None) -> Runtime: ...


class Session:
    """One turn composed: the token stream, the gate, a runtime, the journal and the
    trace, and the one path from the core's outcomes to the runtime's commands. The
    orchestrators (and the simulator) are thin fronts over it; see ``Orchestrator``
    for the arguments. ``runtime`` builds the runtime that executes the commands."""

    def __init__(
        self,
        effects: EffectTable | Mapping[str, EffectLike] | None = None,
        tools: Tools | None = None,
        *,
        runtime: RuntimeFactory,
        format: str | Mapping[str, Any] = "hermes",
        turn_key: str | None = None,
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
        threads_only: bool = False,
        two_phase: frozenset[str] | None = None,
    ) -> None:
        if isinstance(effects, EffectTable):
            self.effects = effects
        elif effects is None or isinstance(effects, Mapping):
            self.effects = EffectTable(effects)
        else:
            raise EffectTableError(f"effects must be an EffectTable or a mapping, got {type(effects).__name__}")
        self.tools = ToolBox(tools)
        if threads_only:
            for name, inv in self.tools.invocations():
                if inv.is_async:
                    raise InertTypeError(
                        f"tool {name!r} is a coroutine function, which worker threads cannot await: "
                        "use AsyncOrchestrator")
        _warn_unknown_tools(self.effects, self.tools)
        # Which tools prepare, then commit or abort: the tool box knows, unless the runtime
        # runs tools of its own (the simulator's) and says.
        phased = two_phase if two_phase is not None else frozenset(self.tools.two_phase())
        self.gate = Gate(self.effects, policy, _timeout(timeout), phased)
        if policy == "eager_unsafe":
            warnings.warn(
                "policy='eager_unsafe' dispatches calls from unverified draft tokens; use it only to measure",
                stacklevel=4,
            )
        self.turn_key = _turn_key(turn_key, journal)
        workers = _positive_int(max_workers, "max_workers")
        limits_ = _limits(self.effects, limits)
        self.stream = _core.TokenStream(
            format, self.turn_key, vocab=vocab, special_tokens=special_tokens,
            schemas=schemas if schemas is not None else self.effects.schemas, max_block_bytes=max_block_bytes,
        )
        self._owned: OwnedJournal | None = None  # opened here from a path or URI: closed at the end
        self.trace: TraceWriter | None = None
        try:
            if trace is not None:
                self.trace = _open_trace(trace, self.turn_key)
            if journal is None:
                journal = MemoryJournal()
            elif isinstance(journal, (str, os.PathLike)):
                journal = self._owned = open_journal(journal)
        except BaseException:
            self.close()
            raise
        self.journal: Journal = journal
        if self.trace is not None:
            self.trace.emit("turn_start", format=self.stream.format, policy=policy)
        self.runtime = runtime(
            self.journal, self.turn_key, ordered=self.gate.ordered, limits=limits_, max_workers=workers,
            trace=self.trace)
        self._nodes: dict[str, Node] = {}  # commit key -> its call, until committed or retracted

    def refuse_reentry(self) -> None:
        if running_for() is self.runtime:
            raise ReentrancyError(
                "a tool called back into the orchestrator that is running it; draft, verify and finish "
                "belong to the inference loop, not to its tools")

    def draft(self, tokens: Sequence[Token]) -> Step:
        outcomes = self.stream.draft(tokens)
        if self.trace is not None:
            self.trace.draft(tokens)
        return self.apply(outcomes)

    def verify(self, n_accepted: int, correction: Token | None) -> Step:
        outcomes = self.stream.verify(n_accepted, correction)
        if self.trace is not None:
            self.trace.verify(n_accepted, correction)
        return self.apply(outcomes)

    def apply(self, outcomes: list[Outcome]) -> Step:
        """Turns one step's outcomes into commands and hands them to the runtime."""
        if self.trace is not None:
            for outcome in outcomes:
                self.trace.outcome(outcome)
        commands, let_go = self.gate.apply(outcomes)
        dispatched: dict[str, Dispatch] = {}
        runtime = self.runtime
        # Retractions first, the latest call first: retracting an earlier call must not let
        # a later one start that this same step retracts (it waits on it, as a ghost, instead).
        for command in reversed(commands):
            if isinstance(command, Retract):
                runtime.retract(self._nodes.pop(command.commit_key))
        for command in commands:
            if isinstance(command, Schedule):
                d = command.dispatch
                self._nodes[d.commit_key] = runtime.schedule(d, self.tools.get(d.name), permit=command.permit)
                dispatched[d.commit_key] = d
            elif isinstance(command, Confirm):
                node = self._nodes.pop(command.commit_key)
                dispatched[command.commit_key] = node.dispatch
                runtime.confirm(node)
        return Step(tuple(outcomes), tuple(dispatched[k] for k in let_go))

    def report(self, strict: bool) -> Report:
        report = reconcile(self.runtime.records(), self.gate.accepted())
        report.malformed = list(self.gate.malformed)
        if self.trace is not None:
            self.trace.emit("turn_end", violations=len(report.violations))
        self.close()
        if strict and report.violations:
            raise SpeculativeEffectViolation(report)
        return report

    def close(self) -> None:
        if self.trace is not None:
            self.trace.close()
        if self._owned is not None:
            self._owned.close()


def _open_trace(path: str | os.PathLike[str], turn_key: str) -> TraceWriter:
    try:
        return TraceWriter(path, turn_key)
    except OSError as e:
        raise InertValueError(f"trace={os.fspath(path)!r} cannot be opened for appending: {e.strerror or e}") from None


class Orchestrator:
    """Gates tool dispatch on speculative verification for one assistant turn.

    Call ``draft(tokens)`` for every draft window and ``verify(n, correction)``
    after the target model scores it, then ``finish()`` once at the end of the turn.
    Tools run on daemon worker threads. One orchestrator per turn and per sequence;
    not shared between threads.

    Args:
        effects: an ``EffectTable``, or a mapping it is built from. Unknown tools are writes.
        tools: tool name -> callable, called as ``tool(**arguments)``; or one router for
            every tool, called as ``router(name, arguments)``. An idempotent tool gets
            ``idempotency_key=<commit key>`` if its signature names that parameter; any
            tool can read its call from ``inert.current_call()``. A callable for a tool the
            effect table does not name is warned about (it is a write, and may be a typo).
        format: the tool-call format, named as in vLLM's ``--tool-call-parser`` (see
            ``inert.formats()`` and ``docs/formats.md``), or a custom format dict (see the README).
        turn_key: seeds the commit keys; unique per turn (a request id and the turn number).
            Required with a journal that outlives the process; otherwise a unique one is made.
        policy: ``"read_eager"`` (default), ``"defer"`` or ``"eager_unsafe"`` (measurement only).
        vocab: token id -> piece (a mapping, or a sequence indexed by id), to draft ``int`` tokens.
        special_tokens: token id -> spelling of the model's special tokens; those that spell
            a delimiter are matched by id (so are ``vocab`` entries that spell one exactly).
        schemas: tool name -> JSON schema of its parameters, to type the raw values of
            XML-style formats; defaults to the schemas of ``effects`` (from ``from_openai``).
        max_block_bytes: a block longer than this is malformed and never dispatched.
        max_workers: calls running at once.
        timeout: default per-call timeout in seconds (a ``ToolSpec`` may set its own); a call
            past it is recorded with ``ToolTimeoutError`` and is in doubt. Its thread cannot be
            killed: it is abandoned, and never keeps the process from exiting.
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
        InertTypeError, InertValueError: a bad ``turn_key``, ``max_workers``, ``timeout``,
            ``limits``, ``trace``, or a coroutine tool (use ``AsyncOrchestrator``).
        JournalError: the journal cannot be opened.
    """

    def __init__(
        self,
        effects: EffectTable | Mapping[str, EffectLike] | None = None,
        tools: Tools | None = None,
        *,
        format: str | Mapping[str, Any] = "hermes",
        turn_key: str | None = None,
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
        self._s = Session(
            effects, tools, runtime=ThreadRuntime, format=format, turn_key=turn_key, policy=policy, vocab=vocab,
            special_tokens=special_tokens, schemas=schemas, max_block_bytes=max_block_bytes,
            max_workers=max_workers, timeout=timeout, limits=limits, journal=journal, trace=trace, threads_only=True,
        )

    @property
    def stream(self) -> _core.TokenStream:
        """The turn's token stream (the core)."""
        return self._s.stream

    @property
    def journal(self) -> Journal:
        return self._s.journal

    @property
    def effects(self) -> EffectTable:
        return self._s.effects

    @property
    def policy(self) -> str:
        return self._s.gate.policy

    @property
    def turn_key(self) -> str:
        return self._s.turn_key

    @property
    def pending(self) -> int:
        """Tokens drafted and not yet verified."""
        return self._s.stream.pending_len

    def draft(self, tokens: Sequence[Token]) -> Step:
        """Appends a draft window (several calls extend the pending window).

        Raises:
            PieceTypeError: a token is not ``str``, ``bytes`` or an integer; nothing changes.
            VocabularyError: an integer token is not in the vocabulary; nothing changes.
            StreamFinishedError: the turn is finished.
            ReentrancyError: called from one of this orchestrator's own tools.
        """
        self._s.refuse_reentry()
        return self._s.draft(tokens)

    def verify(self, n_accepted: int, correction: Token | None = None) -> Step:
        """Accepts the first ``n_accepted`` pending tokens, rejects the rest, then
        appends ``correction`` (the target's own next token) as accepted.

        Raises:
            VerifyError: ``n_accepted`` is negative or more than are pending; nothing changes.
            ReentrancyError: called from one of this orchestrator's own tools.
        """
        self._s.refuse_reentry()
        return self._s.verify(n_accepted, correction)

    def finish(self, *, strict: bool = True) -> Report:
        """Ends the turn: rejects tokens never verified, waits for every dispatched
        call (a timed-out one counts as finished), and reconciles the dispatch log with
        the accepted stream.

        Raises:
            SpeculativeEffectViolation: anything diverged (``strict``); the exception holds the report.
            ReentrancyError: called from one of this orchestrator's own tools.
            StreamFinishedError: called twice.
        """
        self._s.refuse_reentry()
        self._s.apply(self._s.stream.finish())
        runtime = self._s.runtime
        assert isinstance(runtime, ThreadRuntime)
        runtime.drain()
        return self._s.report(strict)


class AsyncOrchestrator:
    """``Orchestrator`` for asyncio loops: ``await orch.draft(...)``,
    ``await orch.verify(...)``, ``await orch.finish()``. It takes the same
    arguments as ``Orchestrator``; ``max_workers`` bounds the threads that run
    plain-function tools.

    Coroutine tools run as tasks on the loop of the first call, plain functions on
    daemon worker threads; a speculative read whose block is rejected is cancelled
    if it is running. One orchestrator per turn, used from one event loop.
    """

    def __init__(
        self,
        effects: EffectTable | Mapping[str, EffectLike] | None = None,
        tools: Tools | None = None,
        *,
        format: str | Mapping[str, Any] = "hermes",
        turn_key: str | None = None,
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
        self._s = Session(
            effects, tools, runtime=AsyncRuntime, format=format, turn_key=turn_key, policy=policy, vocab=vocab,
            special_tokens=special_tokens, schemas=schemas, max_block_bytes=max_block_bytes,
            max_workers=max_workers, timeout=timeout, limits=limits, journal=journal, trace=trace,
        )

    @property
    def stream(self) -> _core.TokenStream:
        return self._s.stream

    @property
    def journal(self) -> Journal:
        return self._s.journal

    @property
    def effects(self) -> EffectTable:
        return self._s.effects

    @property
    def policy(self) -> str:
        return self._s.gate.policy

    @property
    def turn_key(self) -> str:
        return self._s.turn_key

    @property
    def pending(self) -> int:
        return self._s.stream.pending_len

    def _enter(self) -> AsyncRuntime:
        """Checks the caller before anything changes: not a tool of ours, on our loop."""
        self._s.refuse_reentry()
        runtime = self._s.runtime
        assert isinstance(runtime, AsyncRuntime)
        runtime.bind()
        return runtime

    async def draft(self, tokens: Sequence[Token]) -> Step:
        """As ``Orchestrator.draft``; also raises ``LoopError`` from another event loop."""
        self._enter()
        return self._s.draft(tokens)

    async def verify(self, n_accepted: int, correction: Token | None = None) -> Step:
        """As ``Orchestrator.verify``; also raises ``LoopError`` from another event loop."""
        self._enter()
        return self._s.verify(n_accepted, correction)

    async def finish(self, *, strict: bool = True) -> Report:
        """As ``Orchestrator.finish``, awaiting the calls."""
        runtime = self._enter()
        self._s.apply(self._s.stream.finish())
        await runtime.drain()
        return self._s.report(strict)
