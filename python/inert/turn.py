"""One turn's decisions and their execution, whatever feeds it tokens: the tools
and policy every turn of an orchestrator shares (``Tooling``), and the driver of
one turn (``TurnDriver``): the gate's commands handed to a runtime, and the
report reconciled at the end. ``Orchestrator``, ``AsyncOrchestrator``,
``BatchOrchestrator`` and the simulator feed it the core's outcomes."""

from __future__ import annotations

import os
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import _core
from .audit import TraceWriter, reconcile
from .caller_frame import outside_stacklevel
from .durations import seconds
from .effects import EffectLike, EffectTable
from .errors import (
    EffectTableError,
    InertTypeError,
    InertValueError,
    ReasoningWarning,
    SpeculativeEffectViolation,
    closest_name,
)
from .gate import Command, Confirm, Dispatch, Gate, Retract, Schedule
from .interrupts import InterruptsHeld
from .journal import Journal, MemoryJournal, OwnedJournal, open_journal
from .outcomes import Outcome
from .report import DispatchRecord, Report
from .runtime import CallNode, Invocation, ToolBox, Tools, coroutine_part
from .stream import ReleasedTuple

__all__ = [
    "Runtime",
    "RuntimeFactory",
    "Step",
    "Tooling",
    "Tools",
    "TurnDriver",
    "journal_for",
    "strict_flag",
    "turn_key_for",
]


@dataclass(frozen=True)
class Step:
    """What one ``draft`` or ``verify`` call did.

    With ``stream=True`` a step also carries what it released for a client to see, from
    accepted tokens only, so nothing shown is ever retracted (drafts release nothing)."""

    outcomes: tuple[Outcome, ...]
    """The core's outcomes, in order: calls closed, committed and retracted, malformed blocks."""
    dispatched: tuple[Dispatch, ...] = field(default=())
    """Calls the gate let go during this step (they may still wait for earlier conflicting calls),
    after those let go by a step an interrupt cut short, which could not return them."""
    content: str = ""
    """Accepted text outside calls and reasoning released by this step: never part of a delimiter,
    never half a UTF-8 character, never text that a later token could still turn into a call."""
    reasoning: str = ""
    """Accepted text inside reasoning sections released by this step."""
    _tool_call_deltas: tuple[dict[str, Any], ...] = field(default=(), repr=False)

    @property
    def tool_call_deltas(self) -> list[dict[str, Any]]:
        """Dicts shaped like OpenAI's ``ChoiceDeltaToolCall``: a call's first delta has ``index``,
        ``id``, ``type`` and ``function.name``; later ones append ``function.arguments`` fragments,
        which joined parse to the call's final arguments. A call whose block turned out malformed
        after its deltas went out gets a last delta with ``"inert": {"malformed": kind}`` (see the
        README). A new list on each read: the step itself never changes."""
        return list(self._tool_call_deltas)


class Runtime(Protocol):
    """What executes the gate's commands for one turn and owns its calls' outcomes."""

    @property
    def turn_key(self) -> str:
        """The turn's key: the gate rebuilds the accepted stream's keys from it."""

    def schedule(self, dispatch: Dispatch, invocation: Invocation | None) -> CallNode:
        """A call closed: it takes its place in stream order, gated until its block is decided."""

    def run_early(self, node: CallNode) -> None:
        """The call may run now, on draft tokens (a speculative read, or any call under
        ``eager_unsafe``), once nothing before it holds it back. A repeat does nothing."""

    def confirm(self, node: CallNode) -> None:
        """Its block was accepted: it runs, or its early result (or prepare) counts."""

    def retract(self, node: CallNode) -> None:
        """Its block was rejected: it never runs, or what it did is discarded (or aborted)."""

    def records(self) -> list[DispatchRecord]:
        """Every call that started, in start order: what reconciliation checks."""

    def after_tools(self, callback: Callable[[], None]) -> None:
        """Calls ``callback`` once no tool of the turn still runs (now, or when the last returns)."""


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
    return None if timeout is None else seconds("timeout", timeout)


def strict_flag(strict: object) -> bool:
    """``finish(strict=...)``, checked: a truthy object by mistake would change what raises."""
    if not isinstance(strict, bool):
        raise InertTypeError(f"strict must be True or False, got {type(strict).__name__}")
    return strict


def turn_key_for(turn_key: object, journal: object) -> str:
    """The turn key; a unique one when none is given and nothing outlives the process."""
    if turn_key is None:
        durable = journal is not None and not isinstance(journal, MemoryJournal)
        if durable:
            raise InertValueError(
                "a journal that outlives the process needs turn_key=: the commit key (the idempotency key) "
                "derives from it, so give each turn its own stable key (a request id plus the turn number), "
                "the same key when a crashed turn is retried"
            )
        return f"turn-{uuid.uuid4().hex}"
    if not isinstance(turn_key, str):
        raise InertTypeError(f"turn_key must be a str, got {type(turn_key).__name__}")
    return turn_key


def journal_for(journal: Journal | str | os.PathLike[str] | None) -> tuple[Journal, OwnedJournal | None]:
    """The journal an orchestrator takes (in memory when ``None``), and the one it opened
    from a path or URI, which it owns and closes.

    Raises:
        JournalError: the path or URI cannot be opened.
        InertTypeError: ``journal`` is none of those.
    """
    if journal is None:
        return MemoryJournal(), None
    if isinstance(journal, (str, os.PathLike)):
        owned = open_journal(journal)
        return owned, owned
    if not all(callable(getattr(journal, m, None)) for m in ("begin", "complete", "lookup", "entries")):
        raise InertTypeError(
            f"journal must be a Journal (begin, complete, lookup, entries), the path of a SQLite "
            f"journal file or a PostgreSQL database, got {type(journal).__name__}"
        )
    return journal, None


_TYPO_HINTS = 16
"""Past this many tools without an entry, they are a choice, not typos: one warning names
them, with no suggestions (a fuzzy match per tool over the table was O(U x T): 4,000 such
tools took 27 s to build an Orchestrator)."""


def _warn_unknown_tools(effects: EffectTable, tools: ToolBox) -> None:
    """A callable for a tool the effect table does not name is usually a typo: the model's
    calls to the real name would fail as missing. Warned, not refused: an unnamed tool is
    the table's default class (a write), which is safe."""
    named = [n for n, _ in effects.items()]
    if not named:
        return  # an empty table classifies every tool by its default, on purpose
    unknown = [name for name in tools.names() if name not in effects]
    kind = effects.default.effect.value
    if len(unknown) > _TYPO_HINTS:
        shown = ", ".join(map(repr, unknown[:_TYPO_HINTS]))
        warnings.warn(
            f"{len(unknown)} tools have a callable but no entry in the effect table, so each is a {kind}: {shown}, ...",
            stacklevel=outside_stacklevel(),
        )
        return
    for name in unknown:
        hint = closest_name(name, named)
        warnings.warn(
            f"tool {name!r} has a callable but no entry in the effect table, so it is a "
            f"{kind}" + (f"; did you mean {hint!r}?" if hint else ""),
            stacklevel=outside_stacklevel(),
        )


_NOTHING = Step(())


class RuntimeFactory(Protocol):
    """Builds a turn's runtime (``ThreadRuntime``, ``AsyncRuntime``, or the simulator's)."""

    def __call__(
        self,
        journal: Journal,
        turn_key: str,
        *,
        ordered: bool,
        limits: dict[str, int],
        max_workers: int,
        trace: TraceWriter | None,
    ) -> Runtime: ...


@dataclass(frozen=True)
class Tooling:
    """What every turn of an orchestrator shares: the effect table, the tools, the
    policy, the default timeout, the per-tool limits and the worker count, checked once."""

    effects: EffectTable
    tools: ToolBox
    policy: str
    timeout: float | None
    two_phase: frozenset[str]
    limits: dict[str, int]
    workers: int

    @classmethod
    def build(
        cls,
        effects: EffectTable | Mapping[str, EffectLike] | None,
        tools: Tools | None,
        *,
        policy: str,
        timeout: float | None,
        limits: Mapping[str, int] | None,
        max_workers: int,
        threads_only: bool,
        two_phase: frozenset[str] | None = None,
    ) -> Tooling:
        """Checks the arguments an orchestrator takes.

        Raises:
            EffectTableError, PolicyError, InertTypeError, InertValueError: see ``Orchestrator``.
        """
        if isinstance(effects, EffectTable):
            table = effects
        elif effects is None or isinstance(effects, Mapping):
            table = EffectTable(effects)
        else:
            raise EffectTableError(f"effects must be an EffectTable or a mapping, got {type(effects).__name__}")
        box = ToolBox(tools)
        if threads_only:
            for name, inv in box.invocations():
                what = coroutine_part(inv)
                if what is not None:
                    raise InertTypeError(
                        f"tool {name!r} {what}, which worker threads cannot await: use AsyncOrchestrator"
                    )
        _warn_unknown_tools(table, box)
        # Which tools prepare, then commit or abort: the tool box knows, unless the runtime
        # runs tools of its own (the simulator's) and says.
        phased = two_phase if two_phase is not None else frozenset(box.two_phase())
        tooling = cls(
            table,
            box,
            policy,
            _timeout(timeout),
            phased,
            _limits(table, limits),
            _positive_int(max_workers, "max_workers"),
        )
        tooling.gate()  # checks the policy now
        if policy == "eager_unsafe":
            warnings.warn(
                "policy='eager_unsafe' dispatches calls from unverified draft tokens; use it only to measure",
                stacklevel=outside_stacklevel(),
            )
        return tooling

    def gate(self) -> Gate:
        """A gate for one turn (it remembers that turn's accepted stream)."""
        return Gate(self.effects, self.policy, self.timeout, self.two_phase)


class TurnDriver:
    """One turn's gate and runtime: the core's outcomes in, the runtime's commands
    out, the report at the end. ``trace`` gets the outcomes as they come.

    A step's outcomes are kept until the gate's plan for them is adopted and its commands
    queued, and each command leaves the queue only once the runtime has acted on it: a
    KeyboardInterrupt (or any exception) while a step is applied leaves the rest of the
    step kept, and the next step, the end of the turn or ``abandon`` applies it first. An
    accepted call's confirmation is never lost to an interrupt between commands, and a
    call's retraction is never half done."""

    def __init__(self, tooling: Tooling, runtime: Runtime, trace: TraceWriter | None = None) -> None:
        self.tooling = tooling
        self.gate = tooling.gate()
        self.runtime = runtime
        self.trace = trace
        self._nodes: dict[str, CallNode] = {}  # commit key -> its call, until committed or retracted
        self._todo: deque[Command] = deque()  # commands handed over, not yet acted on, in order
        self.inbox: list[Outcome] = []
        """Outcomes handed over, not yet planned: a lone turn's stream appends its own here,
        inside each step's call (``TokenStream._deliver_to``)."""
        self._let_go: list[Dispatch] = []  # calls let go and not yet returned in a Step
        self._made: Report | None = None  # the report, once made

    def receive(self, outcomes: list[Outcome]) -> None:
        """Takes a step's outcomes to apply with the next ``apply`` (a batch hands every
        sequence's over before it applies any)."""
        self.inbox.extend(outcomes)

    def apply(self, outcomes: list[Outcome], released: ReleasedTuple | None = None) -> Step:
        """Turns one step's outcomes into commands and hands them to the runtime;
        ``released`` is what the step released for streaming (``None``: nothing). Outcomes a
        step cut short by an interrupt left unplanned are planned with this step's."""
        if outcomes:
            self.inbox.extend(outcomes)  # first: an interrupt from here on leaves them to plan again
        elif not self.inbox and not self._todo and not self._let_go:
            if released is None:
                return _NOTHING  # most steps close nothing: no work, no allocation
            return Step((), (), released[0], released[1], tuple(released[2]))
        step = tuple(self.inbox)
        plan = self.gate.plan(step)  # changes nothing: planned again if interrupted
        commands = plan.commands
        # Retractions first, the latest call first: retracting an earlier call must not let
        # a later one start that this same step retracts (it waits on it, as a ghost, instead).
        # Queued twice by an interrupt just after, a command is acted on once (``_act``).
        self._todo.extend(
            [
                *(c for c in reversed(commands) if isinstance(c, Retract)),
                *(c for c in commands if not isinstance(c, Retract)),
            ]
        )
        dispatched = {c.dispatch.commit_key: c.dispatch for c in commands if isinstance(c, Schedule)}
        for key in plan.let_go:
            if key not in dispatched:  # confirmed here, scheduled in an earlier step
                dispatched[key] = self._scheduled(key)
        let_go = [dispatched[k] for k in plan.let_go]
        self.gate.adopt(plan)
        self.inbox.clear()
        # Returned by this step, or, if an interrupt cuts it short from here on, by the next.
        self._let_go.extend(let_go)
        if self.trace is not None:
            for outcome in step:
                self.trace.outcome(outcome)
        self._act()
        let_out, self._let_go = tuple(self._let_go), []
        if released is None:
            return Step(step, let_out)
        return Step(step, let_out, released[0], released[1], tuple(released[2]))

    def _scheduled(self, key: str) -> Dispatch:
        """The dispatch of a call an earlier step scheduled (or queued to, if cut short)."""
        node = self._nodes.get(key)
        if node is not None:
            return node.dispatch
        return next(c.dispatch for c in self._todo if isinstance(c, Schedule) and c.dispatch.commit_key == key)

    def _act(self) -> None:
        """Hands the queued commands to the runtime, in order; each leaves the queue once
        acted on, so one cut short by an exception is acted on again (a confirmation or a
        retraction done twice is done once: the runtime ignores the repeat). A Ctrl-C is
        held off until all are done (``InterruptsHeld``): one landing inside a command (the
        scheduler's chains, a call's start) would leave it half made, and one landing as a
        command returns would lose the call it scheduled."""
        todo, nodes, runtime = self._todo, self._nodes, self.runtime
        if not todo:
            return  # a step that closed nothing to act on: no hold (two system calls)
        with InterruptsHeld():
            while todo:
                command = todo[0]
                if isinstance(command, Schedule):
                    d = command.dispatch
                    node = nodes.get(d.commit_key)
                    if node is None:  # else scheduled already, before an exception
                        node = nodes[d.commit_key] = runtime.schedule(d, self.tooling.tools.get(d.name))
                    if command.permit:
                        runtime.run_early(node)
                else:
                    node = nodes.get(command.commit_key)
                    if node is not None:  # else acted on already, before an exception
                        if isinstance(command, Confirm):
                            runtime.confirm(node)
                        else:
                            runtime.retract(node)
                        del nodes[command.commit_key]
                todo.popleft()

    def end(self, outcomes: list[Outcome], released: ReleasedTuple | None = None) -> Step:
        """``apply`` of the end of the turn's outcomes, which decide every call. A call left
        undecided lost its outcome to an interrupt before the driver got it (a verify's
        retraction): it is retracted, never waited for (a prepared call would wait for its
        fate for ever)."""
        step = self.apply(outcomes, released)
        self.abandon()
        return step

    def abandon(self) -> int:
        """Ends the turn short of its end (a closed batch): what earlier steps handed over is
        acted on first (an interrupt cut them short), then every call not committed yet is
        retracted, the latest first, as the end of a turn retracts undecided ones; nothing
        new is let go. Returns how many were retracted. Resumable, as ``apply`` is."""
        if self.inbox:
            self.apply([])
        self._act()
        keys = list(self._nodes)
        self._todo.extend(Retract(key) for key in reversed(keys))
        self._act()
        return len(keys)

    def report(self, strict: bool, notices: Sequence[_core.ReasoningUnopened] = (), tail: Step | None = None) -> Report:
        """Reconciles what ran with what was accepted (every call must be concluded);
        ``notices`` are the turn's reasoning closers that closed nothing, ``tail`` what finish
        released. Made once: called again (the caller's hand-over was cut short by an
        interrupt), it returns the same report.

        Raises:
            SpeculativeEffectViolation: anything diverged and ``strict``.
        """
        report = self._made
        if report is None:
            report = self._made = self._reconcile(notices, tail)
        if strict and report.violations:
            raise SpeculativeEffectViolation(report)
        return report

    def _reconcile(self, notices: Sequence[_core.ReasoningUnopened], tail: Step | None) -> Report:
        report = reconcile(self.runtime.records(), self.gate.accepted(self.runtime.turn_key))
        report.malformed = list(self.gate.malformed)
        report.notices = list(notices)
        if report.notices:
            first = report.notices[0]
            warnings.warn(
                ReasoningWarning(
                    f"{len(report.notices)} reasoning closer(s) arrived while the turn was not in reasoning (the "
                    f"first at tokens {first.start}-{first.end}): the chat template opened the section in the prompt, "
                    "so calls before it may have been thoughts, and ran; pass in_reasoning=True for this template"
                ),
                stacklevel=outside_stacklevel(),
            )
        report.tail = tail if tail is not None else _NOTHING
        if self.trace is not None:
            self.trace.emit("turn_end", violations=len(report.violations))
        return report
