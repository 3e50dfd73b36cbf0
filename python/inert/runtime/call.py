"""One call's run, owned by the runtime that executes it, and the steps every
runtime shares: journal the intent (or find the key's earlier entry), fix the
outcome exactly once, make it storable, journal it.

Every path out of a call (a return, an exception of any kind, a timeout, a
cancellation, a result the journal cannot store, a journal that fails) settles
it exactly once; the runtime then concludes it (journals the outcome and lets
later calls go), so no path can leave a turn waiting for ever. Where a run is in
that life is one ``CallState``, moved only through the table of ``call_state``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
from collections.abc import Awaitable
from typing import Any

from ..effects import EffectClass
from ..errors import InDoubtError, JournalError, ReplayedError, StaleClaimError, UnstorableResultError, describe
from ..gate import Dispatch
from ..journal import ERROR, OK, TIMEOUT, Journal, JournalEntry
from ..journal.phases import ABORT, COMMIT, PREPARE, phase_key
from ..journal.protocol import result_json
from ..report import DispatchRecord
from .call_state import CallState, CallStateError
from .schedule import Node, Scheduler
from .tools import CurrentCall, Invocation

__all__ = ["CallNode", "CallRun", "CallScheduler", "Fate", "abort_staged", "journal_phase", "stored_outcome"]


class Fate(enum.Enum):
    """What the verifier decided of a call's block."""

    UNDECIDED = "undecided"
    CONFIRMED = "confirmed"  # accepted: it runs, or its prepared call commits
    RETRACTED = "retracted"  # rejected: it never runs, or never counts (its prepared call aborts)


class CallRun:
    """What happened to one dispatched call. Written only by the runtime that
    runs it, under its lock (or on its event loop). Where the call is in its life
    is one ``CallState`` (``state``), moved only by the methods below, through the
    table of ``call_state``; the other slots are data: the call, its timestamps, its
    outcome, and what the journal told of its key."""

    __slots__ = (
        "_state",
        "attempt",
        "began",
        "discard_traced",
        "dispatch",
        "early",
        "error",
        "fate",
        "finished",
        "home",
        "invocation",
        "lingering",
        "phase",
        "prepared",
        "replayed",
        "result",
        "started",
        "status",
        "timers",
    )

    def __init__(self, dispatch: Dispatch, invocation: Invocation | None) -> None:
        self.dispatch = dispatch
        self.invocation = invocation
        self.home: Any = None
        """The runtime that runs it (in a batch, turns share workers and slots): its
        ``turn_key`` and ``seq`` are the call's."""
        self._state = _SCHEDULED
        self.early = False
        self.started: float | None = None
        self.finished: float | None = None
        self.result: Any = None
        self.error: BaseException | None = None
        self.began = False
        """The journal holds this call's intent (it is this call's to complete)."""
        self.replayed = False
        """The journal held an entry under its key (a restart, or rejected tokens drafted again)."""
        self.discard_traced = False
        """The trace holds its ``discard`` event (``lifecycle.trace_discard``)."""
        self.status: str | None = None
        # A two-phase tool: which phase runs (or ran last), the attempt that keys its phases, what
        # its prepare staged, and the block's fate, which decides the second phase.
        self.phase: str | None = None
        self.attempt = ""
        self.prepared: Any = None
        self.fate = Fate.UNDECIDED
        self.lingering: Any = None
        """Under asyncio: the future of the tool's work (a thread's or a task's), which may
        outlive the call's deadline or its cancellation; its tool slot is held until it ends."""
        self.timers: list[int] = []
        """Under threads: the handles of the deadlines armed for it (``Deadlines``), dropped
        when it ends so the timer does not hold it until they would have passed."""

    # -- the state, and what it answers --

    @property
    def state(self) -> CallState:
        """Where the call is in its life."""
        return self._state

    def _move(self, to: CallState) -> None:
        """The one place a call's state changes: refuses a move the table does not allow."""
        if to not in self._state.successors:
            raise CallStateError(f"{self.dispatch.name!r} cannot go from {self._state.value} to {to.value}")
        self._state = to

    @property
    def settled(self) -> bool:
        """The outcome is fixed: returned, raised, timed out or cancelled. A later outcome is ignored."""
        return self._state.settled

    @property
    def timed_out(self) -> bool:
        """Its deadline fixed the outcome (a ``ToolTimeoutError``)."""
        return self._state.timed_out

    @property
    def overdue(self) -> bool:
        """Its deadline passed after its tool was called: the effect is in doubt, and the
        deadline concludes the call (under threads), not its worker."""
        return self._state.overdue

    @property
    def in_phase(self) -> bool:
        """A phase of it runs (its worker took it up, and it is not settled): a deadline armed
        for that phase applies. False while a prepared call waits for its block's fate."""
        return self._state.in_phase

    @property
    def discarded(self) -> bool:
        """Its block was rejected after it started: its outcome never counts."""
        return self.fate is _RETRACTED and self._state.launched

    # -- the moves --

    def launch(self, early: bool, now: float) -> None:
        """It is let go (``early``: before its block was accepted): its start time."""
        self._move(_STARTED)
        self.early, self.started = early, now

    def cancel(self) -> None:
        """Its block was rejected before it started: it never runs."""
        self._move(_CANCELLED)

    def take_up(self) -> None:
        """Its worker takes it up: it journals the intent, then calls the tool."""
        self._move(_JOURNALING)

    def take_up_phase(self) -> str:
        """A two-phase call's worker takes it up for its next phase (prepare, then commit or
        abort as its block went), which it returns: it journals the phase, then runs it."""
        self._move(_JOURNALING)
        phase = self.phase = self.next_phase()
        return phase

    def invoke(self) -> None:
        """Its tool (or this phase of it) is called now."""
        self._move(_IN_TOOL)

    def stage(self, prepared: Any) -> None:
        """Its prepare returned ``prepared``: it waits for its block's fate."""
        self._move(_PREPARED)
        self.prepared = prepared

    def left_tool(self) -> None:
        """Its worker left the tool (returned or raised); a tool that outlived the deadline returned at last."""
        if self._state is _IN_TOOL:
            self._move(_RETURNED)
        elif self._state is _OVERDUE:
            self._move(_OVERDUE_RETURNED)

    def record(self) -> DispatchRecord:
        """An immutable snapshot, for the journal, the trace and the report."""
        d = self.dispatch
        return DispatchRecord(
            commit_key=d.commit_key,
            name=d.name,
            arguments=d.arguments,
            effect=d.effect,
            footprint=d.footprint,
            span=d.span,
            early=self.early,
            started=self.started,
            finished=self.finished,
            result=self.result,
            error=self.error,
            replayed=self.replayed,
            timed_out=self._state.timed_out,
            discarded=self.fate is _RETRACTED and self._state.launched,
            phase=self.phase,
        )

    def phase_record(self, phase: str) -> DispatchRecord:
        """The snapshot journaled for one phase of a two-phase call (its own key)."""
        return dataclasses.replace(
            self.record(), commit_key=phase_key(self.dispatch.commit_key, phase, self.attempt), phase=phase
        )

    def next_phase(self) -> str:
        """The phase a two-phase call runs next: prepare, then commit or abort as its block went."""
        if self.phase is None:
            return PREPARE
        return ABORT if self.fate is Fate.RETRACTED else COMMIT

    def settle(self, result: Any, error: BaseException | None, now: float) -> bool:
        """Fixes the outcome, once; returns whether it did (not if its deadline got there
        first: a late outcome is not trusted, and the journal says in doubt)."""
        if self._state.settled:
            return False
        self._move(_SETTLED)
        self.result, self.error, self.finished = result, error, now
        return True

    def expire(self, error: BaseException, now: float) -> bool:
        """Its deadline passed: fixes the outcome as a timeout unless it is fixed already;
        returns whether it did. If its tool was called (and so may still run), the call is
        ``overdue``: the deadline concludes it; otherwise its worker does, when it gets
        there, and never calls the tool."""
        state = self._state
        if state.settled:
            return False
        if state is _IN_TOOL:
            self._move(_OVERDUE)
        elif state is _RETURNED:
            self._move(_OVERDUE_RETURNED)
        else:
            self._move(_TIMED_OUT)
        self.result, self.error, self.finished = None, error, now
        return True

    def current(self) -> CurrentCall:
        """What the tool sees in ``inert.current_call()``: the call, its turn and sequence."""
        d = self.dispatch
        key = d.commit_key if d.effect is EffectClass.IDEMPOTENT else None
        home = self.home
        if home is None:
            return CurrentCall(d.commit_key, d.name, d.effect, key)
        return CurrentCall(d.commit_key, d.name, d.effect, key, turn_key=home.turn_key, seq=home.seq)

    def begin(self, journal: Journal, turn_key: str) -> bool:
        """Journals the intent, or finds the key's earlier entry; returns whether
        the tool must run. Raises what the journal raises (a key conflict, a failure)."""
        prior = journal.begin(self.record(), turn_key)
        if prior is None:
            self.began = True
            return True
        if self.dispatch.recurs and self.dispatch.effect is EffectClass.READ_ONLY:
            # The entry is a discarded run's (its block was rejected): replaying it would deliver
            # a result that never counts. The read runs again; its outcome replaces that one.
            self.began = True
            return True
        return self._replay(prior)

    def already_committed(self, journal: Journal) -> bool:
        """Before a two-phase tool prepares: whether its commit key was journaled before
        (then its outcome is this call's, its phase the commit, and it never prepares again)."""
        prior = journal.lookup(self.dispatch.commit_key)
        if prior is None:
            return False
        if prior.in_doubt and self.dispatch.effect is not EffectClass.WRITE:
            return False  # safe to repeat: it prepares anew, and its commit completes the intent in doubt
        self._replay(prior)
        self.phase = COMMIT  # its outcome is the commit on record
        return True

    def _replay(self, prior: JournalEntry) -> bool:
        """The key was journaled before (a restart, or rejected draft tokens drafted
        again): returns whether the tool runs anyway (a read or an idempotent call
        in doubt: safe to repeat)."""
        self.replayed = True
        d = self.dispatch
        if prior.status == OK:
            self.result = prior.result
            return False
        if prior.in_doubt:
            if d.effect is not EffectClass.WRITE:
                self.began = True  # the intent is on record; this run completes it
                return True
            self.error = InDoubtError(
                f"{d.name!r} under key {d.commit_key} is journaled without an outcome: the process that took it "
                "either is still running it or stopped before recording one, so whether it happened is unknown; "
                "it is not run again here (a shared PostgreSQL journal tells the two apart); see `inert recover`"
            )
            return False
        self.error = ReplayedError(f"{d.name!r} under key {d.commit_key} already failed: {prior.error}")
        return False


# Members as module constants: on Python 3.11 ``CallState.X`` goes through the enum
# metaclass's ``__getattr__`` hook, several times the cost of a global, on every move.
_SCHEDULED = CallState.SCHEDULED
_CANCELLED = CallState.CANCELLED
_STARTED = CallState.STARTED
_JOURNALING = CallState.JOURNALING
_IN_TOOL = CallState.IN_TOOL
_RETURNED = CallState.RETURNED
_PREPARED = CallState.PREPARED
_SETTLED = CallState.SETTLED
_TIMED_OUT = CallState.TIMED_OUT
_OVERDUE = CallState.OVERDUE
_OVERDUE_RETURNED = CallState.OVERDUE_RETURNED
_RETRACTED = Fate.RETRACTED

CallNode = Node["CallRun"]
"""A call in stream order, with its run."""
CallScheduler = Scheduler["CallRun"]


def journal_phase(
    run: CallRun, journal: Journal, turn_key: str, phase: str, error: BaseException | None, *, began: bool = False
) -> None:
    """Journals one phase of a two-phase call (prepare or abort) under its own key: the
    intent first unless ``began``, then the outcome. A journal that fails here loses only
    the phase's record; the call's own outcome is the commit's."""
    record = dataclasses.replace(run.phase_record(phase), result=None, error=error)
    try:
        if not began:
            journal.begin(record, turn_key)
        journal.complete(record, OK if error is None else ERROR)
    except BaseException:  # noqa: BLE001 - recovery lists the phase's intent without outcome, which is the truth
        return


def begin_abort(run: CallRun, journal: Journal, turn_key: str) -> bool:
    """Journals the intent of ``run``'s abort; returns whether it was recorded. A journal
    that refuses it (full, failing) does not stop the abort: the abort only drops what the
    prepare staged, which would otherwise stay held (an open transaction, a lock), and
    losing its record is what ``journal_phase`` already allows for a phase."""
    try:
        journal.begin(run.phase_record(ABORT), turn_key)
    except Exception:  # noqa: BLE001 - any journal failure; an interrupt still stops the abort
        return False
    return True


def abort_staged(run: CallRun, prepared: Any, journal: Journal, turn_key: str, owner: object) -> None:
    """Drops what a prepare staged when no commit will follow (its deadline passed, or its
    key was committed elsewhere meanwhile): runs the tool's abort, journaled as the abort."""
    assert run.invocation is not None
    error: BaseException | None = None
    try:
        dropped = run.invocation.abort(prepared, run.current(), owner)
        if inspect.isawaitable(dropped):  # a coroutine abort handed to a worker as the loop ended: on a loop of its own
            asyncio.run(_awaited(dropped))
    except BaseException as exc:  # noqa: BLE001 - recorded in the journal's abort entry
        error = exc
    journal_phase(run, journal, turn_key, ABORT, error)


async def _awaited(work: Awaitable[Any]) -> Any:
    return await work


def stored_outcome(run: CallRun, journal: Journal) -> None:
    """Journals the settled outcome of a call whose intent this run recorded, with
    its status. A result the journal cannot store becomes an error with the reason;
    a journal that cannot record the outcome leaves the call in doubt and says so."""
    if not run.began:
        return
    if run.timed_out:  # noqa: SIM108 - one comment per case reads better than a nested conditional
        # In doubt only if the tool was called; one that timed out before it started never ran.
        status = TIMEOUT if run.overdue else ERROR
    else:
        status = OK if run.error is None else ERROR
    if status == OK:
        problem = unstorable(run.result)
        if problem is not None:
            run.error = UnstorableResultError(
                f"{run.dispatch.name!r} returned a result the journal cannot store ({problem}); its effect, if any, "
                "happened: the call is recorded as failed"
            )
            run.result, status = None, ERROR
    run.status = status
    try:
        journal.complete(run.record(), status)
    except StaleClaimError as exc:
        # Not in doubt: another worker took the key over and its outcome stands; the message says so.
        run.error, run.status = exc, None
    except BaseException as exc:  # noqa: BLE001 - a failing journal (of any kind) must not hang or crash the turn
        error = JournalError(
            f"the journal could not record the outcome of {run.dispatch.name!r} under key "
            f"{run.dispatch.commit_key} ({describe(exc)}); the call is in doubt: check it with `inert recover`"
        )
        error.__cause__ = exc
        run.error, run.status = error, None


def unstorable(result: Any) -> str | None:
    """Why ``result`` cannot be journaled as JSON, or ``None`` when it can."""
    try:
        result_json(result)
    except BaseException as exc:  # noqa: BLE001 - cycles, deep nesting, huge ints, a repr raising anything: reasons
        return describe(exc)
    return None
