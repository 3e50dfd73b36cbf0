"""The state machine of a dispatched call (``inert.runtime.call_state``): the table is a
life (every state reachable, every life ends), a move not in it is refused, and every
move in it is taken by a real turn: threads, asyncio tasks or the simulator. Deadlines
here are ordered by events, not by sleeping: a deadline that passes is seen when the
runtime builds its ``ToolTimeoutError``."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable, Iterator

import pytest

import inert
from inert.effects import EffectClass, Footprint
from inert.gate import Dispatch
from inert.runtime import CallRun, CallState, threads
from inert.runtime.call_state import (
    IN_PHASE_STATES,
    OVERDUE_STATES,
    SETTLED_STATES,
    TIMED_OUT_STATES,
    TRANSITIONS,
    UNLAUNCHED_STATES,
    CallStateError,
)
from inert.simulate import Latency, SimTool, World
from inert.simulate.clock import VirtualLoop
from inert.simulate.runner import SimOrchestrator
from tools import WATCHDOG, block, deadlines_only_for, finish_within

S = CallState
Edge = tuple[CallState, CallState]
FINAL = {s for s, nexts in TRANSITIONS.items() if not nexts}


# -- the table --


def test_the_table_is_a_life() -> None:
    assert set(TRANSITIONS) == set(CallState)
    assert all(state.successors == TRANSITIONS[state] for state in CallState)
    seen, frontier = {S.SCHEDULED}, [S.SCHEDULED]
    while frontier:
        for nxt in TRANSITIONS[frontier.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    assert seen == set(CallState), "every state is reachable from SCHEDULED"
    assert {S.CANCELLED, S.SETTLED, S.TIMED_OUT, S.OVERDUE_RETURNED} == FINAL
    for state in CallState:  # every life ends: a final state is reachable from each state
        reach, todo = {state}, [state]
        while todo:
            for nxt in TRANSITIONS[todo.pop()]:
                if nxt not in reach:
                    reach.add(nxt)
                    todo.append(nxt)
        assert reach & FINAL, state


def test_what_a_state_answers_follows_from_the_table() -> None:
    for state in CallState:
        assert state.settled == (state in SETTLED_STATES)
        assert state.timed_out == (state in TIMED_OUT_STATES)
        assert state.overdue == (state in OVERDUE_STATES)
        assert state.in_phase == (state in IN_PHASE_STATES)
        assert state.launched == (state not in UNLAUNCHED_STATES)
    assert all(nxt.settled for state in SETTLED_STATES for nxt in TRANSITIONS[state]), "an outcome stays fixed"
    assert OVERDUE_STATES <= TIMED_OUT_STATES <= SETTLED_STATES
    assert not IN_PHASE_STATES & SETTLED_STATES, "a deadline never expires a call twice"
    assert FINAL - {S.CANCELLED} <= SETTLED_STATES, "every call that started ends with an outcome"


def _run() -> CallRun:
    d = Dispatch("k", "w", {}, EffectClass.WRITE, Footprint(None, None), (0, 1), None)
    return CallRun(d, None)


@pytest.mark.parametrize(("start", "to"), list(itertools.product(CallState, CallState)))
def test_a_move_not_in_the_table_is_refused(start: CallState, to: CallState) -> None:
    run = _run()
    run._state = start  # any state, to try every move from it
    if to in TRANSITIONS[start]:
        run._move(to)
        assert run.state is to
        return
    with pytest.raises(CallStateError, match=f"from {start.value} to {to.value}"):
        run._move(to)
    assert run.state is start, "a refused move changes nothing"


def test_the_moves_refuse_a_call_out_of_its_turn() -> None:
    run = _run()
    with pytest.raises(CallStateError):
        run.settle(1, None, 0.0)  # never started: it cannot have an outcome
    with pytest.raises(CallStateError):
        run.take_up()
    run.launch(False, 0.0)
    with pytest.raises(CallStateError):
        run.launch(False, 0.0)  # launched once
    with pytest.raises(CallStateError):
        run.cancel()  # it started: a rejection discards it instead
    run.take_up()
    with pytest.raises(CallStateError):
        run.stage(None)  # only a prepare that ran returns what it staged
    run.invoke()
    assert run.expire(inert.ToolTimeoutError("late"), 1.0)
    assert (run.state, run.overdue) == (S.OVERDUE, True)
    assert not run.settle(2, None, 2.0), "a late outcome is ignored"
    assert not run.expire(inert.ToolTimeoutError("again"), 3.0)
    run.left_tool()
    assert run.state is S.OVERDUE_RETURNED and run.timed_out and run.settled and run.result is None


# -- every move, taken by a real turn --


class Recorder:
    """Every move of every call while installed: the edges taken and the calls."""

    def __init__(self) -> None:
        self.edges: set[Edge] = set()
        self.runs: dict[int, CallRun] = {}
        self._changed = threading.Condition()

    def wait_for(self, edge: Edge) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: edge in self.edges, WATCHDOG), edge

    def record(self, run: CallRun, edge: Edge) -> None:
        with self._changed:
            self.edges.add(edge)
            self.runs[id(run)] = run
            self._changed.notify_all()

    def all_final(self) -> bool:
        return all(run.state in FINAL for run in self.runs.values())


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    rec = Recorder()
    move = CallRun._move

    def recording(run: CallRun, to: CallState) -> None:
        before = run.state
        move(run, to)
        rec.record(run, (before, to))

    monkeypatch.setattr(CallRun, "_move", recording)
    yield rec


@pytest.fixture
def deadline_passed(monkeypatch: pytest.MonkeyPatch) -> dict[str, threading.Event]:
    """Under threads: an event per kind of deadline ("call", "prepare", "commit", "abort"),
    set when the runtime builds the timeout of a call whose deadline passed (under its lock,
    just before it expires the call)."""
    events = {what: threading.Event() for what in ("call", "prepare", "commit", "abort")}

    class Seen(inert.ToolTimeoutError):
        def __init__(self, message: str) -> None:
            super().__init__(message)
            for phase in ("prepare", "commit", "abort"):
                if message.startswith(f"the {phase} of"):
                    events[phase].set()
                    return
            events["call"].set()

    monkeypatch.setattr(threads, "ToolTimeoutError", Seen)
    return events


SCENARIOS: dict[str, set[Edge]] = {}


def scenario(*edges: Edge) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def register(test: Callable[..., None]) -> Callable[..., None]:
        SCENARIOS[test.__name__] = set(edges)
        return test

    return register


def _check(rec: Recorder, test: Callable[..., None]) -> None:
    expected = SCENARIOS[test.__name__]
    assert expected <= rec.edges, expected - rec.edges
    assert rec.edges <= set(_all_edges()), "only moves of the table"


def _all_edges() -> Iterator[Edge]:
    for state, nexts in TRANSITIONS.items():
        for nxt in nexts:
            yield state, nxt


def test_every_move_of_the_table_is_taken_by_a_scenario() -> None:
    taken = set().union(*SCENARIOS.values())
    assert taken == set(_all_edges()), set(_all_edges()) - taken


@scenario(
    (S.SCHEDULED, S.STARTED),
    (S.STARTED, S.JOURNALING),
    (S.JOURNALING, S.IN_TOOL),
    (S.IN_TOOL, S.RETURNED),
    (S.RETURNED, S.SETTLED),
    (S.SCHEDULED, S.CANCELLED),
)
def test_threads_a_write_runs_after_acceptance_and_a_rejected_one_never(recorder: Recorder) -> None:
    orch = inert.Orchestrator({"w": "write"}, {"w": lambda n: n}, turn_key="t")
    orch.draft([block("w", n=1), block("w", n=2)])
    orch.verify(1)
    report = finish_within(orch)
    assert [r.result for r in report.results] == [1]
    assert recorder.all_final()
    _check(recorder, test_threads_a_write_runs_after_acceptance_and_a_rejected_one_never)


@scenario((S.IN_TOOL, S.SETTLED), (S.STARTED, S.SETTLED))
def test_async_a_call_settles_in_its_task_and_a_read_rejected_before_it_begins_never_runs(
    recorder: Recorder,
) -> None:
    async def w(n: int) -> int:
        return n

    async def main() -> tuple[inert.Report, inert.Report]:
        orch = inert.AsyncOrchestrator({"w": "write"}, {"w": w}, turn_key="t")
        await orch.draft([block("w", n=1)])
        await orch.verify(1)
        reads = inert.AsyncOrchestrator({"r": "read_only"}, {"r": w}, turn_key="u")
        await reads.draft([block("r", n=2)])  # a read: its task is created ...
        await reads.verify(0)  # ... and its block rejected before the task began (no await between)
        return await asyncio.wait_for(orch.finish(), WATCHDOG), await asyncio.wait_for(reads.finish(), WATCHDOG)

    report, rejected = asyncio.run(main())
    assert [r.result for r in report.results] == [1] and rejected.results == []
    assert recorder.all_final()
    _check(recorder, test_async_a_call_settles_in_its_task_and_a_read_rejected_before_it_begins_never_runs)


@scenario((S.JOURNALING, S.SETTLED))
def test_threads_a_replayed_key_settles_from_the_journal(recorder: Recorder) -> None:
    journal = inert.MemoryJournal()
    for expected in (False, True):
        orch = inert.Orchestrator({"w": "write"}, {"w": lambda n: n}, turn_key="t", journal=journal)
        orch.draft([block("w", n=1)])
        orch.verify(1)
        assert [r.replayed for r in finish_within(orch).dispatch_log] == [expected]
    _check(recorder, test_threads_a_replayed_key_settles_from_the_journal)


class HeldIntent(inert.MemoryJournal):
    """Holds the intent of a one-phase call until its deadline has passed."""

    def __init__(self, passed: threading.Event) -> None:
        super().__init__()
        self.passed = passed

    def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
        assert self.passed.wait(WATCHDOG)
        return super().begin(record, turn_key)


@scenario((S.JOURNALING, S.TIMED_OUT))
def test_threads_a_deadline_passing_while_the_intent_is_written_times_the_call_out(
    recorder: Recorder, deadline_passed: dict[str, threading.Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    deadlines_only_for(monkeypatch, lambda _, __: True, in_tool=False)  # not before its worker took it up
    ran: list[int] = []
    journal = HeldIntent(deadline_passed["call"])
    orch = inert.Orchestrator({"w": "write"}, {"w": ran.append}, turn_key="t", timeout=0.05, journal=journal)
    orch.draft([block("w", n=1)])
    orch.verify(1)
    (result,) = finish_within(orch).results
    assert isinstance(result.error, inert.ToolTimeoutError) and ran == [], "it never ran"
    assert recorder.all_final()
    _check(recorder, test_threads_a_deadline_passing_while_the_intent_is_written_times_the_call_out)


@scenario((S.IN_TOOL, S.OVERDUE), (S.OVERDUE, S.OVERDUE_RETURNED))
def test_threads_a_tool_past_its_deadline_is_concluded_by_it_and_returns_later(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    deadlines_only_for(monkeypatch, lambda _, __: True)  # it fires once the tool is inside, never before
    release = threading.Event()
    orch = inert.Orchestrator({"w": "write"}, {"w": lambda: release.wait(WATCHDOG)}, turn_key="t", timeout=0.05)
    orch.draft([block("w")])
    orch.verify(1)
    try:
        (result,) = finish_within(orch).results  # returns at the deadline: the tool is still inside
        assert isinstance(result.error, inert.ToolTimeoutError)
        assert (S.OVERDUE, S.OVERDUE_RETURNED) not in recorder.edges
    finally:
        release.set()
    recorder.wait_for((S.OVERDUE, S.OVERDUE_RETURNED))
    assert recorder.all_final()
    _check(recorder, test_threads_a_tool_past_its_deadline_is_concluded_by_it_and_returns_later)


class Staged:
    def __init__(self) -> None:
        self.prepared = threading.Event()
        self.ran: list[str] = []

    def prepare(self) -> str:
        self.ran.append("prepare")
        self.prepared.set()
        return "staged"

    def commit(self, staged: str, *, idempotency_key: str) -> str:
        self.ran.append("commit")
        return staged

    def abort(self, staged: str) -> None:
        self.ran.append("abort")


class HeldAbortOutcome(inert.MemoryJournal):
    """Holds the outcome of an abort phase until the abort's deadline has passed."""

    def __init__(self, passed: threading.Event) -> None:
        super().__init__()
        self.passed = passed

    def complete(self, record: inert.DispatchRecord, status: str) -> None:
        if record.phase == "abort":
            assert self.passed.wait(WATCHDOG)
        super().complete(record, status)


@scenario((S.IN_TOOL, S.PREPARED), (S.PREPARED, S.JOURNALING), (S.RETURNED, S.OVERDUE_RETURNED))
def test_threads_an_abort_whose_deadline_passes_after_it_returned_is_overdue(
    recorder: Recorder, deadline_passed: dict[str, threading.Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The abort returned and its worker left the tool; the deadline passes while the
    worker journals the abort: the deadline concludes the call, whose tool is not running.
    The prepare returns at once: its deadline is patient, so a stall cannot expire it."""
    deadlines_only_for(monkeypatch, lambda _, phase: phase == "abort")
    tool = Staged()
    journal = HeldAbortOutcome(deadline_passed["abort"])
    orch = inert.Orchestrator({"t": "write"}, {"t": tool}, turn_key="t", timeout=0.05, journal=journal)
    orch.draft([block("t")])
    assert tool.prepared.wait(WATCHDOG)
    orch.verify(0)  # rejected: the prepared call aborts
    report = finish_within(orch)
    assert tool.ran == ["prepare", "abort"] and len(report.discarded) == 1
    (record,) = report.dispatch_log
    assert record.timed_out and record.phase == "abort"
    assert recorder.all_final()
    _check(recorder, test_threads_an_abort_whose_deadline_passes_after_it_returned_is_overdue)


class CommitHangsForTheFirst:
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.hang = threading.Event()

    def prepare(self, n: int) -> int:
        self.events.append(("prepare", n))
        return n

    def commit(self, prepared: int, *, idempotency_key: str) -> int:
        if prepared == 1:
            self.hang.wait(WATCHDOG)
        self.events.append(("commit", prepared))
        return prepared

    def abort(self, prepared: int) -> None:
        self.events.append(("abort", prepared))


def _apart(name: str) -> dict[str, inert.ToolSpec]:
    return {name: inert.ToolSpec("write", reads=lambda a: [a["n"]], writes=lambda a: [a["n"]])}


@scenario((S.PREPARED, S.TIMED_OUT), (S.STARTED, S.TIMED_OUT))
def test_threads_calls_behind_a_slot_held_past_a_deadline_time_out_without_running(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prepared commit, and a call that never started, give up their wait for the slot of a
    commit hung past its deadline. Only the held calls' deadlines are short (the prepares
    return at once); the waits for the slot keep theirs."""
    deadlines_only_for(monkeypatch, lambda d, phase: d.arguments["n"] == 1 and phase in (None, "commit"))
    tool = CommitHangsForTheFirst()
    orch = inert.Orchestrator(_apart("t"), {"t": tool}, turn_key="t", limits={"t": 1}, timeout=0.2)
    orch.draft([block("t", n=1), block("t", n=2)])
    deadline = time.monotonic() + WATCHDOG
    while ("prepare", 2) not in tool.events and time.monotonic() < deadline:
        time.sleep(0.01)
    orch.verify(2)
    release = threading.Event()
    waits = inert.Orchestrator(_apart("w"), {"w": lambda n: release.wait(WATCHDOG)}, limits={"w": 1}, timeout=0.05)
    waits.draft([block("w", n=1), block("w", n=2)])
    waits.verify(2)
    try:
        finish_within(orch, strict=False)
        _, second = finish_within(waits).results
    finally:
        tool.hang.set()
        release.set()
    assert ("commit", 2) not in tool.events
    assert "could not start" in str(second.error)
    recorder.wait_for((S.OVERDUE, S.OVERDUE_RETURNED))
    _check(recorder, test_threads_calls_behind_a_slot_held_past_a_deadline_time_out_without_running)


@scenario(
    (S.SCHEDULED, S.STARTED),
    (S.STARTED, S.JOURNALING),
    (S.JOURNALING, S.IN_TOOL),
    (S.IN_TOOL, S.SETTLED),
    (S.IN_TOOL, S.PREPARED),
    (S.PREPARED, S.JOURNALING),
    (S.JOURNALING, S.SETTLED),
    (S.SCHEDULED, S.CANCELLED),
)
def test_the_simulator_drives_the_same_machine(recorder: Recorder) -> None:
    tools = {
        "read": SimTool("read", "read", Latency(0.01)),
        "pay": SimTool("pay", "write", Latency(0.02), prepare=Latency(0.01)),
        "save": SimTool("save", "write", Latency(0.02)),
    }
    loop = VirtualLoop()
    orch = SimOrchestrator(tools, loop, World(), 1, turn_key="t", policy="read_eager")
    orch.draft([block("read", key="a"), block("pay", key="b")])
    loop.run_until(0.05)  # both started speculatively; the read returned, the prepare too
    orch.verify(2, None)
    orch.draft([block("pay", key="c"), block("save", key="d")])
    loop.run_until(0.1)
    orch.verify(0, None)  # the second prepare aborts; the save never runs
    report = orch.finish()
    assert sorted(r.name for r in report.results) == ["pay", "read"]
    assert recorder.all_final()
    _check(recorder, test_the_simulator_drives_the_same_machine)
