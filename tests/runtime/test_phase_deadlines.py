"""Deadlines of two-phase tools' phases, found by attacking the runtimes: a deadline that
passes while the journal takes a phase's intent neither skips an abort (a cleanup) nor
records a prepare that never ran as done; a plain phase past its deadline under asyncio
gives its worker up, so the turn's journal writes still get one; and a close that meets
an error in one turn still abandons every other turn.

The journal below holds a phase's intent until that phase's deadline has fired, so the
deadline passes while it writes however slow the machine is. Only the deadlines a test is
about are short: a phase that returns at once gets a patient one (``deadlines_only_for``),
so a stall of the machine cannot time it out."""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import inert
from tools import WATCHDOG, block, deadlines_only_for, finish_within


class SlowIntent(inert.MemoryJournal):
    """Records the intent of one phase only once that phase's deadline has fired."""

    def __init__(self, phase: str, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__()
        self.phase = phase
        self.deadline_fired = deadlines_only_for(monkeypatch, lambda _, p: p == phase, in_tool=False)

    def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
        if record.phase == self.phase:
            assert self.deadline_fired[record.name].wait(WATCHDOG), "the phase's deadline never fired"
        return super().begin(record, turn_key)

    def phases(self) -> list[tuple[str, str | None]]:
        return sorted((e.commit_key.split("/")[1], e.status) for e in self.entries() if "/" in e.commit_key)


class Staged:
    def __init__(self, hang_commit: bool = False) -> None:
        self.ran: list[str] = []
        self.hang = threading.Event() if hang_commit else None

    def prepare(self, n: int) -> int:
        self.ran.append("prepare")
        return n

    def commit(self, prepared: int, *, idempotency_key: str) -> int:
        if self.hang is not None:
            self.hang.wait(WATCHDOG)
        self.ran.append("commit")
        return prepared

    def abort(self, prepared: int) -> None:
        self.ran.append("abort")


def test_an_abort_runs_even_if_its_deadline_passed_while_its_intent_was_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tool = Staged()
    journal = SlowIntent("abort", monkeypatch)
    orch = inert.Orchestrator({"t": "write"}, {"t": tool}, turn_key="t", timeout=0.1, journal=journal)
    orch.draft([block("t", n=1)])
    for _ in range(int(WATCHDOG * 100)):
        if tool.ran:
            break
        time.sleep(0.01)
    orch.verify(0)  # rejected: the prepared call aborts
    finish_within(orch)
    for _ in range(int(WATCHDOG * 100)):  # the abort may finish after finish() returned at its deadline
        if ("abort", "ok") in journal.phases():
            break
        time.sleep(0.01)
    assert tool.ran == ["prepare", "abort"], "what the prepare staged was never dropped"
    assert journal.phases() == [("abort", "ok"), ("prepare", "ok")]


def test_a_prepare_that_never_ran_is_not_journaled_as_done(monkeypatch: pytest.MonkeyPatch) -> None:
    tool = Staged()
    journal = SlowIntent("prepare", monkeypatch)
    orch = inert.Orchestrator({"t": "write"}, {"t": tool}, turn_key="t", timeout=0.1, journal=journal)
    orch.draft([block("t", n=1)])
    orch.verify(1)
    [call] = finish_within(orch).results
    for _ in range(int(WATCHDOG * 100)):  # the worker journals the phase after the deadline concluded it
        if journal.phases():
            break
        time.sleep(0.01)
    assert isinstance(call.error, inert.ToolTimeoutError)
    assert tool.ran == [] and journal.phases() == [("prepare", "error")]
    assert inert.recover(journal).prepared == [], "recover must not ask to clean up what was never staged"


def test_async_a_plain_phase_past_its_deadline_gives_its_worker_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one worker, a hung plain commit kept it, and the call's own outcome (journaled
    through the same pool) queued behind it: finish() never returned."""
    deadlines_only_for(monkeypatch, lambda _, phase: phase == "commit")
    tool = Staged(hang_commit=True)

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", timeout=0.2, max_workers=1)
        await orch.draft([block("t", n=1)])
        await orch.verify(1)
        return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG / 2)

    try:
        [call] = asyncio.run(main()).results
    finally:
        assert tool.hang is not None
        tool.hang.set()
    assert isinstance(call.error, inert.ToolTimeoutError)


def test_a_close_that_meets_an_error_in_one_turn_still_abandons_the_others() -> None:
    """Under warnings-as-errors, one turn's ReasoningWarning (a closer that closed nothing)
    raised out of close() before the turns after it were abandoned: their prepared calls were
    never aborted, and could never be."""
    tool = Staged()
    vocab = inert.Vocabulary(["</think>", "hi", block("t", n=1)])
    batch = inert.BatchOrchestrator({"t": "write"}, {"t": tool}, vocab=vocab)
    batch.add(0, "a")  # its template opened <think> in the prompt, undeclared
    batch.add(1, "b")
    batch.draft([0], [[0, 1]])
    batch.verify([0], [2])
    batch.draft([1], [[2]])  # sequence 1 prepares on draft tokens, undecided
    for _ in range(int(WATCHDOG * 100)):
        if tool.ran:
            break
        time.sleep(0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(inert.ReasoningWarning):
            batch.close()
    assert tool.ran == ["prepare", "abort"]
    with pytest.raises(inert.StreamFinishedError):
        batch.finish(1)


def test_close_from_a_second_thread_while_the_first_is_closing_returns_at_once() -> None:
    started = threading.Event()
    release = threading.Event()

    def slow(n: int) -> int:
        started.set()
        release.wait(WATCHDOG)
        return n

    vocab = inert.Vocabulary([block("s", n=1)])
    batch = inert.BatchOrchestrator({"s": "write"}, {"s": slow}, vocab=vocab)
    batch.add(0, "a")
    batch.draft([0], [[0]])
    batch.verify([0], [1])
    assert started.wait(WATCHDOG)
    out: list[Any] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", inert.TurnAbandonedWarning)
        first = threading.Thread(target=lambda: out.append(batch.close()), daemon=True)
        first.start()
        for _ in range(int(WATCHDOG * 100)):  # the first close is waiting for the committed call
            if len(batch) == 0:
                break
            time.sleep(0.01)
        assert batch.close() == {}, "the second close has nothing to end"
        release.set()
        first.join(WATCHDOG)
    assert list(out[0]) == [0] and [r.result for r in out[0][0].results] == [1]


class HeldPrepare:
    """A prepare that stays inside until released, then an abort that says it ran."""

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.release = threading.Event()
        self.aborted = threading.Event()

    def prepare(self, n: int) -> int:
        self.inside.set()
        self.release.wait(WATCHDOG)
        return n

    def commit(self, prepared: int, *, idempotency_key: str) -> int:
        return prepared

    def abort(self, prepared: int) -> None:
        self.aborted.set()


def _journaled_abort(path: Path) -> None:
    """Waits until the SQLite journal at ``path`` holds the late prepare's abort, read anew."""
    for _ in range(int(WATCHDOG * 100)):
        recovery = inert.recover(str(path))
        if not recovery.prepared:
            return
        time.sleep(0.01)
    raise AssertionError(f"recover still lists a prepare never aborted: {recovery.prepared}")


def _prepare_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the held prepare's deadline is short: the abort after it returns at once."""
    deadlines_only_for(monkeypatch, lambda _, phase: phase == "prepare")


def test_a_late_abort_after_finish_reaches_a_journal_opened_from_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """finish() returns at the deadline and used to close the journal it opened; the late
    prepare's outcome and abort were then written to a closed journal and lost, so
    recover listed staged state that had been dropped."""
    _prepare_is_held(monkeypatch)
    tool = HeldPrepare()
    path = tmp_path / "journal.sqlite"
    orch = inert.Orchestrator({"t": "write"}, {"t": tool}, turn_key="t", timeout=0.1, journal=str(path))
    orch.draft([block("t", n=1)])
    assert tool.inside.wait(WATCHDOG)
    finish_within(orch)  # at the deadline: the prepare is still inside
    tool.release.set()
    assert tool.aborted.wait(WATCHDOG)
    _journaled_abort(path)


def test_async_a_late_abort_after_finish_reaches_a_journal_opened_from_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _prepare_is_held(monkeypatch)
    tool = HeldPrepare()
    path = tmp_path / "journal.sqlite"

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", timeout=0.1, journal=str(path))
        await orch.draft([block("t", n=1)])
        await asyncio.to_thread(tool.inside.wait, WATCHDOG)
        await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)
        tool.release.set()
        await asyncio.to_thread(tool.aborted.wait, WATCHDOG)
        await asyncio.to_thread(_journaled_abort, path)

    asyncio.run(main())


def test_async_close_during_finish_does_not_report_the_turn_twice() -> None:
    """A disconnect handler's close() while finish() waits for the calls: one report, from
    finish(); close() has nothing left to end."""

    async def main() -> tuple[inert.Report, inert.Report | None]:
        release = asyncio.Event()
        inside = asyncio.Event()

        async def w(n: int) -> int:
            inside.set()
            await release.wait()
            return n

        orch = inert.AsyncOrchestrator({"w": "write"}, {"w": w}, turn_key="t")
        await orch.draft([block("w", n=1)])
        await orch.verify(1)
        await asyncio.wait_for(inside.wait(), WATCHDOG)
        finishing = asyncio.create_task(orch.finish(strict=False))
        await asyncio.sleep(0)  # finish() is waiting for the call
        closing = asyncio.create_task(orch.close())
        await asyncio.sleep(0)
        release.set()
        return await finishing, await closing

    report, closed = asyncio.run(asyncio.wait_for(main(), WATCHDOG))
    assert [r.result for r in report.results] == [1] and closed is None


class CommitHangsForTheFirst:
    """The first commit to reach the tool hangs (until ``hang``); which call that is, the
    runtime decides: both are prepared when the turn's verify starts their commits."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.hang = threading.Event()
        self.first: int | None = None

    def prepare(self, n: int) -> int:
        self.events.append(("prepare", n))
        return n

    def commit(self, prepared: int, *, idempotency_key: str) -> int:
        if self.first in (None, prepared):
            self.first = prepared
            self.hang.wait(WATCHDOG)
        self.events.append(("commit", prepared))
        return prepared

    def abort(self, prepared: int) -> None:
        self.events.append(("abort", prepared))


def test_async_finish_waits_for_the_abort_of_a_commit_that_never_got_a_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second commit gives up its wait behind the first, hung past its deadline: its
    abort used to run as a task finish() did not wait for, which the loop's end cancelled.
    Only the hung commit's deadline is short (the slot wait keeps its own). Either commit may
    take the one slot first (their footprints differ, so no order binds them): the first to
    start its commit phase is the one that hangs, and the other must be aborted."""
    tool = CommitHangsForTheFirst()
    first_commit: list[int] = []

    def fires(d: Any, phase: str | None) -> bool:
        if phase != "commit":
            return False
        if not first_commit:
            first_commit.append(d.arguments["n"])
        return bool(d.arguments["n"] == first_commit[0])

    deadlines_only_for(monkeypatch, fires)

    async def main() -> None:
        effects = {"t": inert.ToolSpec("write", reads=lambda a: [a["n"]], writes=lambda a: [a["n"]])}
        orch = inert.AsyncOrchestrator(effects, {"t": tool}, turn_key="t", limits={"t": 1}, timeout=0.2)
        await orch.draft([block("t", n=1), block("t", n=2)])
        while ("prepare", 2) not in tool.events:
            await asyncio.sleep(0.01)
        await orch.verify(2)
        await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

    try:
        asyncio.run(main())
    finally:
        tool.hang.set()
    assert first_commit and first_commit[0] == tool.first, "the hung commit is the one with the short deadline"
    other = 3 - first_commit[0]
    assert ("abort", other) in tool.events and ("commit", other) not in tool.events


def test_a_late_abort_after_a_batch_closes_reaches_a_journal_opened_from_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _prepare_is_held(monkeypatch)
    tool = HeldPrepare()
    path = tmp_path / "journal.sqlite"
    vocab = inert.Vocabulary([block("t", n=1)])
    batch = inert.BatchOrchestrator({"t": "write"}, {"t": tool}, vocab=vocab, timeout=0.1, journal=str(path))
    batch.add(0, "a")
    batch.draft([0], [[0]])
    assert tool.inside.wait(WATCHDOG)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", inert.TurnAbandonedWarning)
        batch.close()  # at the prepare's deadline: it is still inside
    tool.release.set()
    assert tool.aborted.wait(WATCHDOG)
    _journaled_abort(path)
