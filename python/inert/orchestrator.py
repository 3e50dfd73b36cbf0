"""The orchestrators: one turn's token stream, composed with the gate (pure
policy) and a runtime that executes the gate's commands (worker threads for
``Orchestrator``, asyncio tasks for ``AsyncOrchestrator``)."""

from __future__ import annotations

import contextlib
import os
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from types import EllipsisType, TracebackType
from typing import Any, Self, SupportsIndex

from . import _core
from .audit import TraceWriter
from .audit.trace import check_appendable
from .caller_frame import outside_stacklevel
from .effects import EffectLike, EffectTable
from .errors import (
    InertValueError,
    ReentrancyError,
    SpeculativeEffectViolation,
    StreamFinishedError,
    TraceWarning,
    TurnAbandonedWarning,
)
from .gate import POLICIES
from .inputs import Ids, Token, Tokens, reiterable
from .interrupts import InterruptsHeld
from .journal import Journal, OwnedJournal
from .one_caller import OneCaller
from .report import Report
from .runtime import AsyncRuntime, ThreadRuntime, running_for
from .stream import ReleasedTuple
from .turn import RuntimeFactory, Step, Tooling, Tools, TurnDriver, journal_for, strict_flag, turn_key_for

__all__ = ["POLICIES", "AsyncOrchestrator", "Orchestrator", "Session", "Step"]

Vocab = _core.Vocabulary | Mapping[int, str | bytes] | Sequence[str | bytes]


def _trace_token(t: Any) -> Any:
    if t is None or isinstance(t, (str, int)):
        return t
    if isinstance(t, bytes):
        return t.decode("utf-8", errors="backslashreplace")
    return int(t)  # a numpy integer


def _trace_tokens(tokens: Any) -> list[Any]:
    return [_trace_token(t) for t in tokens]


def _trace_ids(ids: Any) -> list[int]:
    """Ids from a list or an array (which iterates as ints; its type does not say so)."""
    return [int(i) for i in ids]


class Session:
    """One turn composed: its token stream, the journal and the trace it owns, and a
    ``TurnDriver`` (gate and runtime). The orchestrators (and the simulator) are thin
    fronts over it; see ``Orchestrator`` for the arguments. ``runtime`` builds the
    runtime that executes the gate's commands."""

    def __init__(
        self,
        effects: EffectTable | Mapping[str, EffectLike] | None = None,
        tools: Tools | None = None,
        *,
        runtime: RuntimeFactory,
        format: str | Mapping[str, Any] = "hermes",
        turn_key: str | None = None,
        policy: str = "read_eager",
        vocab: Vocab | None = None,
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
        reasoning: tuple[str, str] | EllipsisType | None = ...,
        in_reasoning: bool = False,
        stream: bool = False,
    ) -> None:
        self.tooling = Tooling.build(
            effects,
            tools,
            policy=policy,
            timeout=timeout,
            limits=limits,
            max_workers=max_workers,
            threads_only=threads_only,
            two_phase=two_phase,
        )
        self.effects = self.tooling.effects
        self.turn_key = turn_key_for(turn_key, journal)
        self.stream = _core.TokenStream(
            format,
            self.turn_key,
            vocab=vocab,
            special_tokens=special_tokens,
            schemas=schemas if schemas is not None else self.effects.schemas,
            max_block_bytes=max_block_bytes,
            reasoning=reasoning,
            in_reasoning=in_reasoning,
            stream=stream,
        )
        self.streaming = stream
        self.tail: Step | None = None
        self.ending_released: ReleasedTuple | None = None
        """What the end of the stream released, kept until ``tail`` holds it (an interrupt between)."""
        self.reported = False
        """The report was returned (by finish or close): the turn is over."""
        self.waiters = 0
        """The finish() and close() calls waiting for the calls (see ``ending``)."""
        self._owned: OwnedJournal | None = None  # opened here from a path or URI: closed at the end
        self.trace: TraceWriter | None = None
        try:
            if trace is not None:
                self.trace = _open_trace(trace, self.turn_key)
            self.journal, self._owned = journal_for(journal)
        except BaseException:
            self.close()
            raise
        if self.trace is not None:
            self.trace.emit("turn_start", format=self.stream.format, policy=policy)
        self.runtime = runtime(
            self.journal,
            self.turn_key,
            ordered=self.tooling.policy != "eager_unsafe",
            limits=self.tooling.limits,
            max_workers=self.tooling.workers,
            trace=self.trace,
        )
        self.driver = TurnDriver(self.tooling, self.runtime, self.trace)
        # Each step's outcomes reach the driver inside the stream's own call: a Ctrl-C that
        # arrives while the core runs is handled as the call returns, and would lose them.
        self.stream._deliver_to(self.driver.inbox)
        self.gate = self.driver.gate

    def refuse_reentry(self) -> None:
        """Raises ReentrancyError when a tool of this turn calls back into it: the loop's
        calls would deadlock on, or reorder, the calls the runtime is running."""
        if running_for() is self.runtime:
            raise ReentrancyError(
                "a tool called back into the orchestrator that is running it; draft, verify and finish "
                "belong to the inference loop, not to its tools"
            )

    def draft(self, tokens: Tokens) -> Step:
        """Drafts onto the stream (which hands what closed to the driver), traces it, and applies it."""
        if self.trace is not None:
            tokens = reiterable(tokens)
        self.stream.draft(tokens)
        if self.trace is not None:
            self.trace.draft(tokens)
        return self.apply()

    def verify(self, n_accepted: int | SupportsIndex, correction: Token | None) -> Step:
        """Verifies on the stream, traces it, and applies the outcomes and what was released."""
        self.stream.verify(n_accepted, correction)
        released = self.released()
        if self.trace is not None:
            self.trace.verify(n_accepted, correction)
        return self.apply(released)

    def draft_tree(self, tokens: Tokens, parents: Ids) -> Step:
        """``draft`` for a token tree."""
        if self.trace is not None:
            tokens, parents = reiterable(tokens), reiterable(parents)
        self.stream.draft_tree(tokens, parents)
        if self.trace is not None:
            self.trace.emit("draft_tree", tokens=_trace_tokens(tokens), parents=_trace_ids(parents))
        return self.apply()

    def verify_path(self, path: Ids, correction: Token | None) -> Step:
        """``verify`` for the accepted path of a token tree."""
        if self.trace is not None:
            path = reiterable(path)
        self.stream.verify_path(path, correction)
        released = self.released()
        if self.trace is not None:
            self.trace.emit("verify_path", path=_trace_ids(path), correction=_trace_token(correction))
        return self.apply(released)

    def apply(self, released: ReleasedTuple | None = None) -> Step:
        """The driver's step for the outcomes the stream handed it (see ``TurnDriver.apply``):
        they are the driver's before the stream's call returns, so a Ctrl-C landing after it
        (found by a helper: as the call returned, or in the trace) loses no accepted call, and
        the next step lets go no call it never scheduled."""
        return self.driver.apply([], released)

    def released(self) -> ReleasedTuple | None:
        """What the last step released for streaming, if anything (one cheap check otherwise)."""
        if self.streaming and self.stream.has_released:
            return self.stream._take_released()
        return None

    def end(self) -> None:
        """Ends the turn (``finish``): again after a ``finish()`` or ``close()`` that an interrupt
        cut short, it completes what that left (the wait and the report are then the caller's).

        Raises:
            StreamFinishedError: the turn was reported already.
        """
        if self.reported or self.ending:
            raise StreamFinishedError(
                "the turn is finished: its report was returned already, or another finish() or close() is "
                "waiting for its calls; start a new orchestrator for the next turn"
            )
        self.finish()

    @property
    def ending(self) -> bool:
        """A finish or close is waiting for the calls (another caller must not report the turn too)."""
        return self.waiters > 0

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """This caller ends the turn: while it waits for the calls, another finish() or
        close() does not report the turn a second time (an async finish() waits with it)."""
        self.waiters += 1
        try:
            yield
        finally:
            self.waiters -= 1

    def finish(self) -> None:
        """Ends the stream; ``tail`` is the step of what the end did and released (``report.tail``).
        Resumable: the end's outcomes go to the driver and what it released is kept here before
        either is applied, so after an interrupt the next call completes the same end. After an
        abandon (``close()``) cut short, it retracts what that left undecided instead."""
        if not self.stream.finished:
            with InterruptsHeld():  # the end's outcomes (the driver's at once) and what it released, together
                self.stream.finish()
                self.ending_released = self.released() or ("", "", [])
        if self.ending_released is None:  # the stream was abandoned, not ended
            self.driver.abandon()
        elif self.tail is None:
            self.tail = self.driver.end([], self.ending_released)

    def abandon(self) -> None:
        """Ends the turn short of its end (the client went away, the engine stops): the
        stream is finished without its end-of-turn outcomes, so nothing that only the end
        would confirm commits, and every call not committed yet is retracted. After a
        ``finish()`` or ``abandon()`` cut short by an interrupt, it retracts what that left
        undecided (a prepared call would wait for its fate for ever)."""
        if not self.stream.finished:
            with InterruptsHeld():
                kept = len(self.driver.inbox)
                self.stream.finish()
                del self.driver.inbox[kept:]  # a close is no end: what only the end would confirm never commits
                self.released()  # what the client never got stays unsent
        self.driver.abandon()

    def conclude(self) -> None:
        """Makes the turn's report (every call must have concluded; the driver keeps it) and
        closes what the session owns. Resumable: after a KeyboardInterrupt (or a cancel) the
        next finish() or close() hands over the same report (see ``hand_report``)."""
        try:
            self.driver.report(False, self.stream.notices(), self.tail)
        except Exception:
            # A warning the caller made an error (ReasoningWarning) is what the caller asked for.
            self.close()
            self.reported = True
            raise
        self.close()

    def hand_report(self, strict: bool) -> Report:
        """The report ``conclude`` made. The turn is marked reported last, with no call left
        that a Ctrl-C could land in before the caller has it; one landing earlier leaves the
        report to hand over again.

        Raises:
            SpeculativeEffectViolation: anything diverged and ``strict``; it holds the report.
        """
        try:
            report = self.driver.report(strict)
        except SpeculativeEffectViolation:
            self.reported = True
            raise
        self.reported = True
        return report

    def close(self) -> None:
        """Closes the trace (warning with TraceWarning when it lost events) and the journal the
        session opened from a path, the latter once no tool of the turn still runs."""
        if self.trace is not None:
            self.trace.close()
            if self.trace.failure is not None:
                warnings.warn(
                    f"turn {self.turn_key!r}: {self.trace.failure}; the audit trail is incomplete",
                    TraceWarning,
                    stacklevel=outside_stacklevel(),
                )
        if self._owned is not None:
            # A tool that outlived its deadline still journals what it did (a late prepare's abort).
            runtime = getattr(self, "runtime", None)
            if runtime is None:
                self._owned.close()
            else:
                runtime.after_tools(self._owned.close)


def _dropped(session: Session) -> None:
    """A lone turn collected with neither finish() nor close(): its idle workers stop and the
    trace and the journal it opened are closed (a forgotten turn kept a thread and a file for
    ever). Its calls are not waited for: one still running keeps what it needs until it ends."""
    if session.reported:
        return
    runtime = session.runtime
    if isinstance(runtime, ThreadRuntime):
        runtime.release()
    session.close()


def _warn_abandoned(turn_key: str) -> None:
    warnings.warn(
        TurnAbandonedWarning(
            f"turn {turn_key!r} left its with block without finish(): it was abandoned (every call not yet "
            "committed retracted, nothing new run); call finish() to end a turn"
        ),
        stacklevel=outside_stacklevel(),
    )


def _open_trace(path: str | os.PathLike[str], turn_key: str) -> TraceWriter:
    try:
        check_appendable(path)  # a FIFO no program reads would block here for ever; a journal would be corrupted
        return TraceWriter(path, turn_key)
    except InertValueError as e:
        raise InertValueError(f"trace={os.fspath(path)!r}: {e}") from None
    except OSError as e:
        raise InertValueError(f"trace={os.fspath(path)!r} cannot be opened for appending: {e.strerror or e}") from None


class _TurnView:
    """What both orchestrators of one turn show of it (read-only)."""

    _s: Session

    @property
    def stream(self) -> _core.TokenStream:
        """The turn's token stream (the core), to read: its steps hand their outcomes to the
        orchestrator (and return none), so step the orchestrator, not the stream."""
        return self._s.stream

    @property
    def journal(self) -> Journal:
        """Where every call's intent and outcome are recorded."""
        return self._s.journal

    @property
    def effects(self) -> EffectTable:
        """The effect table the gate classifies calls by."""
        return self._s.effects

    @property
    def policy(self) -> str:
        """The dispatch policy (see ``POLICIES``)."""
        return self._s.gate.policy

    @property
    def turn_key(self) -> str:
        """The key every commit key of the turn derives from."""
        return self._s.turn_key

    @property
    def pending(self) -> int:
        """Tokens drafted and not yet verified."""
        return self._s.stream.pending_len


class Orchestrator(_TurnView):
    """Gates tool dispatch on speculative verification for one assistant turn.

    Call ``draft(tokens)`` for every draft window and ``verify(n, correction)``
    after the target model scores it, then ``finish()`` once at the end of the turn.
    Tools run on daemon worker threads. One orchestrator per turn and per sequence;
    not shared between threads (a step while another thread's is running raises
    ``ConcurrentUseError``, and changes nothing).

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
        vocab: an ``inert.Vocabulary`` (built once per model and shared by every stream), or
            token id -> piece (a mapping, or a sequence indexed by id), to draft ``int`` tokens
            (lists, or any 1-D integer buffer: numpy arrays, ``array.array``, ``memoryview``).
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
        reasoning: the reasoning delimiters ``(open, close)``; ``...`` (the default) is the
            format's own, ``None`` turns reasoning off. A call inside reasoning is a thought:
            never dispatched.
        in_reasoning: the prompt opened a reasoning section (a thinking chat template). A
            closer that closed nothing is reported in ``Report.notices``: the calls before
            it may have been thoughts.
        stream: release streaming output: each verify's ``Step`` carries ``content``,
            ``reasoning`` and ``tool_call_deltas`` from accepted tokens only, and
            ``report.tail`` what ``finish()`` released (see ``inert.openai.chunk``).

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
        vocab: Vocab | None = None,
        special_tokens: Mapping[int, str | bytes] | None = None,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        max_block_bytes: int = 1 << 20,
        max_workers: int = 8,
        timeout: float | None = None,
        limits: Mapping[str, int] | None = None,
        journal: Journal | str | os.PathLike[str] | None = None,
        trace: str | os.PathLike[str] | None = None,
        reasoning: tuple[str, str] | EllipsisType | None = ...,
        in_reasoning: bool = False,
        stream: bool = False,
    ) -> None:
        self._one = OneCaller("Orchestrator")
        self._s = Session(
            effects,
            tools,
            runtime=ThreadRuntime,
            format=format,
            turn_key=turn_key,
            policy=policy,
            vocab=vocab,
            special_tokens=special_tokens,
            schemas=schemas,
            max_block_bytes=max_block_bytes,
            max_workers=max_workers,
            timeout=timeout,
            limits=limits,
            journal=journal,
            trace=trace,
            threads_only=True,
            reasoning=reasoning,
            in_reasoning=in_reasoning,
            stream=stream,
        )
        weakref.finalize(self, _dropped, self._s)

    def draft(self, tokens: Tokens) -> Step:
        """Appends a draft window (several calls extend the pending window).

        Raises:
            PieceTypeError: a token is not ``str``, ``bytes`` or an integer; nothing changes.
            VocabularyError: an integer token is not in the vocabulary; nothing changes.
            StreamFinishedError: the turn is finished.
            ReentrancyError: called from one of this orchestrator's own tools.
        """
        self._s.refuse_reentry()
        self._one.enter()
        try:
            return self._s.draft(tokens)
        finally:
            self._one.leave()

    def verify(self, n_accepted: int | SupportsIndex, correction: Token | None = None) -> Step:
        """Accepts the first ``n_accepted`` pending tokens, rejects the rest, then
        appends ``correction`` (the target's own next token) as accepted.

        Raises:
            VerifyError: ``n_accepted`` is negative or more than are pending; nothing changes.
            ReentrancyError: called from one of this orchestrator's own tools.
        """
        self._s.refuse_reentry()
        self._one.enter()
        try:
            return self._s.verify(n_accepted, correction)
        finally:
            self._one.leave()

    def draft_tree(self, tokens: Tokens, parents: Ids) -> Step:
        """Drafts a token tree (EAGLE, Medusa): node ``i`` is ``tokens[i]``, its parent
        ``parents[i]`` (an earlier node, or -1 for a child of the last accepted token). A
        call that closes on any branch may run its reads early, keyed by its own path.

        Raises:
            TreeError: the parents do not describe a tree, or a draft awaits verification;
                nothing changes.
        """
        self._s.refuse_reentry()
        self._one.enter()
        try:
            return self._s.draft_tree(tokens, parents)
        finally:
            self._one.leave()

    def verify_path(self, path: Ids, correction: Token | None = None) -> Step:
        """Accepts the tree's nodes on ``path`` (from a root down), rejects every other
        node (their calls are retracted, their early reads discarded), then appends
        ``correction``: from here the turn is exactly as if ``path`` alone was drafted (a
        call on ``path`` that only a rejected node confirmed stays announced: its early
        read counts).

        Raises:
            TreeError: no tree awaits verification, or ``path`` is not a chain from a root.
        """
        self._s.refuse_reentry()
        self._one.enter()
        try:
            return self._s.verify_path(path, correction)
        finally:
            self._one.leave()

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
        strict = strict_flag(strict)
        self._s.end()
        runtime = self._s.runtime
        assert isinstance(runtime, ThreadRuntime)
        with self._s.waiting():
            runtime.drain()
            self._s.conclude()
        return self._s.hand_report(strict)

    def close(self) -> Report | None:
        """Abandons the turn unless ``finish()`` ended it: the tokens never verified are
        rejected, every call not committed yet is retracted (an early read discarded, a
        prepared two-phase call aborted, journaled), nothing new runs, not even a block only
        the end of the turn would confirm, and the committed calls are waited for. For a
        request the client dropped, or an engine that stops. Leaving a ``with`` block closes
        it (and warns ``TurnAbandonedWarning`` if no exception ended the block: ``finish()``
        was forgotten).

        Returns:
            The abandoned turn's report, or ``None`` when ``finish()`` had ended it.

        Raises:
            ReentrancyError: called from one of this orchestrator's own tools.
        """
        self._s.refuse_reentry()
        if self._s.reported or self._s.ending:
            return None
        runtime = self._s.runtime
        assert isinstance(runtime, ThreadRuntime)
        with self._s.waiting():
            self._s.abandon()  # after a finish() or close() cut short: what it left undecided
            runtime.drain()
            self._s.conclude()
        return self._s.hand_report(False)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self.close() is not None and kind is None:
            _warn_abandoned(self.turn_key)


class AsyncOrchestrator(_TurnView):
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
        vocab: Vocab | None = None,
        special_tokens: Mapping[int, str | bytes] | None = None,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        max_block_bytes: int = 1 << 20,
        max_workers: int = 8,
        timeout: float | None = None,
        limits: Mapping[str, int] | None = None,
        journal: Journal | str | os.PathLike[str] | None = None,
        trace: str | os.PathLike[str] | None = None,
        reasoning: tuple[str, str] | EllipsisType | None = ...,
        in_reasoning: bool = False,
        stream: bool = False,
    ) -> None:
        self._s = Session(
            effects,
            tools,
            runtime=AsyncRuntime,
            format=format,
            turn_key=turn_key,
            policy=policy,
            vocab=vocab,
            special_tokens=special_tokens,
            schemas=schemas,
            max_block_bytes=max_block_bytes,
            max_workers=max_workers,
            timeout=timeout,
            limits=limits,
            journal=journal,
            trace=trace,
            reasoning=reasoning,
            in_reasoning=in_reasoning,
            stream=stream,
        )

    def _enter(self, *, ending: bool = False) -> AsyncRuntime:
        """Checks the caller before anything changes: not a tool of ours, on our loop (or, to
        end the turn, on a later one once ours has ended with nothing of the turn on it)."""
        self._s.refuse_reentry()
        runtime = self._s.runtime
        assert isinstance(runtime, AsyncRuntime)
        runtime.bind(ending=ending)
        return runtime

    async def draft(self, tokens: Tokens) -> Step:
        """As ``Orchestrator.draft``; also raises ``LoopError`` from another event loop."""
        self._enter()
        return self._s.draft(tokens)

    async def verify(self, n_accepted: int | SupportsIndex, correction: Token | None = None) -> Step:
        """As ``Orchestrator.verify``; also raises ``LoopError`` from another event loop."""
        self._enter()
        return self._s.verify(n_accepted, correction)

    async def draft_tree(self, tokens: Tokens, parents: Ids) -> Step:
        """As ``Orchestrator.draft_tree``."""
        self._enter()
        return self._s.draft_tree(tokens, parents)

    async def verify_path(self, path: Ids, correction: Token | None = None) -> Step:
        """As ``Orchestrator.verify_path``."""
        self._enter()
        return self._s.verify_path(path, correction)

    async def finish(self, *, strict: bool = True) -> Report:
        """As ``Orchestrator.finish``, awaiting the calls. Cancelled while it waits (a request
        timeout), it may be awaited again: it goes on waiting and returns the report. While
        another finish() or close() waits, it waits with it and returns the same report: that
        one may be a task no caller awaits any more, left pending by a Ctrl-C that stopped a
        bare ``loop.run_until_complete`` (which cancels nothing)."""
        runtime = self._enter(ending=True)
        strict = strict_flag(strict)
        if self._s.reported or not self._s.ending:
            self._s.end()
        with self._s.waiting():
            await runtime.drain()
            if not self._s.reported:  # else the finish() this one waited with made the report
                self._s.conclude()
        return self._s.hand_report(strict)

    async def close(self) -> Report | None:
        """As ``Orchestrator.close``, awaiting the committed calls; ``async with`` closes it."""
        runtime = self._enter(ending=True)
        if self._s.reported:
            return None
        if self._s.ending:
            # A finish() waits (a task a Ctrl-C under a bare run_until_complete left pending, which
            # no one may await again): wait with it, so ``async with`` never exits, and a journal
            # inert opened never stays open, while the turn's calls still run. It ended the turn.
            with self._s.waiting():
                await runtime.drain()
                if not self._s.reported:
                    self._s.conclude()
            return None
        with self._s.waiting():
            self._s.abandon()  # after a finish() or close() cut short: what it left undecided
            await runtime.drain()
            self._s.conclude()
        return self._s.hand_report(False)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if await self.close() is not None and kind is None:
            _warn_abandoned(self.turn_key)
