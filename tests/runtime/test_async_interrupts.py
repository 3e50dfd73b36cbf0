"""AsyncOrchestrator when its tasks are cancelled from outside inert or a Ctrl-C lands in
its bookkeeping, found by a helper attacking it. Cancels come from the event loop ending
(``asyncio.run`` cancels the tasks its main coroutine left) or from cancelling the
awaiting task; interrupts are raised by the code they land in. Nothing waits on timing:
tools are held by events."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

import pytest

import inert
from inert.runtime import AsyncRuntime
from tools import WATCHDOG, block, raise_once


def _journal_of(path: Path) -> list[tuple[str, str | None, str]]:
    return [(e.tool, e.status, e.error or "") for e in inert.SqliteJournal(str(path)).entries()]


def test_a_write_whose_task_the_loop_cancels_while_its_tool_runs_is_in_doubt(tmp_path: Path) -> None:
    """Was journaled ``error`` (CancelledError) although the write went on and happened, so
    ``inert recover`` listed it as completed, failed, and nothing said to check it."""
    inside, release = threading.Event(), threading.Event()

    def pay(n: int) -> int:
        inside.set()
        release.wait(WATCHDOG)
        return n

    path = tmp_path / "journal.sqlite"

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"pay": "write"}, {"pay": pay}, turn_key="t", journal=str(path))
        await orch.draft([block("pay", n=1)])
        await orch.verify(1, ".")
        await asyncio.to_thread(inside.wait, WATCHDOG)
        # Returns with the call in its tool: asyncio.run cancels the call's task.

    asyncio.run(main())
    release.set()
    [(tool, status, error)] = _journal_of(path)
    assert (tool, status) == ("pay", "timeout")
    assert "cancelled from outside inert" in error and "inert recover" in error
    assert [e.tool for e in inert.recover(str(path)).in_doubt] == ["pay"]


def test_a_coroutine_write_cut_off_by_the_loop_is_in_doubt(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    started: list[int] = []

    async def pay(n: int) -> int:
        started.append(n)
        await asyncio.Event().wait()  # cut off here, part-way through its effect
        return n

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"pay": "write"}, {"pay": pay}, turn_key="t", journal=str(path))
        await orch.draft([block("pay", n=1)])
        await orch.verify(1, ".")
        while not started:
            await asyncio.sleep(0)

    asyncio.run(main())
    assert [(t, s) for t, s, _ in _journal_of(path)] == [("pay", "timeout")]


def test_a_tools_own_cancelled_error_is_its_error_not_a_doubt(tmp_path: Path) -> None:
    """A CancelledError the call's task was not asked for is the tool's own outcome."""

    async def pay(n: int) -> int:
        raise asyncio.CancelledError

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"pay": "write"}, {"pay": pay}, turn_key="t")
        await orch.draft([block("pay", n=1)])
        await orch.verify(1, ".")
        return await orch.finish(strict=False)

    [result] = asyncio.run(main()).results
    assert isinstance(result.error, asyncio.CancelledError)


@pytest.mark.parametrize("where", ["prepare", "abort"])
def test_a_plain_phases_own_cancelled_error_is_its_error_not_the_loop_ending(where: str) -> None:
    """A plain phase runs in a thread whose outcome outlives a loop-ending cancel; a
    CancelledError the phase raised itself is still only its error, and later calls run."""
    log: list[str] = []

    class Raising:
        def prepare(self, n: int) -> int:
            log.append(f"prepare {n}")
            if where == "prepare" and n == 1:
                raise asyncio.CancelledError("the prepare's own")
            return n

        def commit(self, n: int, *, idempotency_key: str) -> int:
            log.append(f"commit {n}")
            return n

        def abort(self, n: int) -> None:
            log.append(f"abort {n}")
            raise asyncio.CancelledError("the abort's own")

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": Raising()}, turn_key="t")
        await orch.draft([block("t", n=1)])
        await orch.verify(0 if where == "abort" else 1, ".")
        await orch.draft([block("t", n=2)])
        await orch.verify(1, ".")
        return await orch.finish(strict=False)

    first, second = asyncio.run(main()).dispatch_log
    assert isinstance(first.error, asyncio.CancelledError) and "own" in str(first.error)
    assert second.error is None and log[-1] == "commit 2"


class _Staged:
    """A two-phase write whose commit is held until ``release``."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.in_commit = threading.Event()
        self.release = threading.Event()

    def prepare(self, n: int) -> int:
        self.log.append("prepare")
        return n

    def commit(self, prepared: int, *, idempotency_key: str) -> int:
        self.log.append("commit")
        self.in_commit.set()
        self.release.wait(WATCHDOG)
        return prepared

    def abort(self, prepared: int) -> None:
        self.log.append("abort")


def test_a_commit_whose_task_the_loop_cancels_is_in_doubt(tmp_path: Path) -> None:
    tool, path = _Staged(), tmp_path / "journal.sqlite"

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", journal=str(path))
        await orch.draft([block("t", n=1)])
        await orch.verify(1, ".")
        await asyncio.to_thread(tool.in_commit.wait, WATCHDOG)

    asyncio.run(main())
    tool.release.set()
    # The prepare's own entry is ``ok``; the commit's (under the call's key) is in doubt.
    by_key = {e.commit_key: e.status for e in inert.SqliteJournal(str(path)).entries()}
    [commit_key] = [k for k in by_key if "/" not in k]
    assert by_key[commit_key] == "timeout"
    assert [e.commit_key for e in inert.recover(str(path)).in_doubt] == [commit_key]


class _SlowCommit:
    """A two-phase write whose commit outlives its deadline and whose abort is held inside."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.abort_in, self.abort_go, self.commit_go = threading.Event(), threading.Event(), threading.Event()

    def prepare(self, n: int) -> int:
        self.log.append(f"prepare {n}")
        return n

    def commit(self, prepared: int, *, idempotency_key: str) -> int:
        self.log.append(f"commit {prepared}")
        self.commit_go.wait(WATCHDOG)
        return prepared

    def abort(self, prepared: int) -> None:
        self.log.append(f"abort {prepared}")
        self.abort_in.set()
        self.abort_go.wait(WATCHDOG)
        self.log.append(f"aborted {prepared}")


def test_cancelling_finish_while_it_waits_for_an_abort_leaves_the_abort_running() -> None:
    """finish() waited for the cleanup aborts under a plain gather: cancelling finish() (a
    request timeout) cancelled them, so the journal said the abort failed with CancelledError
    while its thread went on and dropped what the prepare staged."""
    tool, journal = _SlowCommit(), inert.MemoryJournal()
    # The first commit holds the only slot past its deadline, so the other gives up its wait
    # for a slot and its prepare is aborted: a cleanup that finish() waits for.
    # Footprints apart, so that call 2 prepares beside call 1 rather than after it.
    spec = inert.ToolSpec("write", reads=lambda a: [a["n"]], writes=lambda a: [a["n"]], timeout=0.2)

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"t": spec}, {"t": tool}, turn_key="t", journal=journal, limits={"t": 1})
        await orch.draft([block("t", n=1), block("t", n=2)])
        while len(tool.log) < 2:
            await asyncio.sleep(0)
        await orch.verify(2, ".")
        await asyncio.to_thread(tool.abort_in.wait, WATCHDOG)
        runtime = orch._s.runtime
        assert isinstance(runtime, AsyncRuntime)
        while runtime._scheduler.in_flight:  # the timed-out commit concluded: only the abort is left
            await asyncio.sleep(0)
        finish = asyncio.ensure_future(orch.finish(strict=False))
        await asyncio.sleep(0)  # finish() runs to its wait for the cleanup
        finish.cancel()
        with pytest.raises(asyncio.CancelledError):
            await finish
        tool.abort_go.set()
        tool.commit_go.set()
        await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

    asyncio.run(main())
    # Whichever commit took the slot first, the other call's prepare was aborted, whole.
    aborted = [entry.split()[1] for entry in tool.log if entry.startswith("abort ")]
    assert len(aborted) == 1 and tool.log[-2:] == [f"abort {aborted[0]}", f"aborted {aborted[0]}"]
    aborts = [e for e in journal.entries() if "/abort/" in e.commit_key]
    assert [(e.status, e.error) for e in aborts] == [("ok", None)]


@pytest.mark.parametrize("where", ["finish", "settle"])
def test_an_interrupt_in_a_call_tasks_bookkeeping_leaves_finish_able_to_end(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Found by a helper: a KeyboardInterrupt landing in a call task's own bookkeeping (on the
    loop's thread, where signals land; here as the task concludes its call) killed the task
    with the call unconcluded: write 2 never started and finish() waited for ever. Now the
    task's end concludes it (in doubt if its outcome was not fixed yet) and the turn goes on."""
    from inert.runtime.call import CallRun
    from inert.runtime.schedule import Scheduler

    ran: list[int] = []

    async def put(n: int) -> int:
        ran.append(n)
        return n

    loop = asyncio.new_event_loop()
    finish: asyncio.Task[inert.Report] | None = None
    try:
        orch = inert.AsyncOrchestrator({"put": "write"}, {"put": put}, turn_key="t")

        async def steps() -> None:
            await orch.draft([block("put", n=1), block("put", n=2)])
            await orch.verify(2, ".")

        loop.run_until_complete(steps())
        raise_once(monkeypatch, *((Scheduler, "finish") if where == "finish" else (CallRun, "settle")))
        finish = loop.create_task(orch.finish(strict=False))
        with pytest.raises(KeyboardInterrupt):  # out of the loop, as asyncio raises it
            loop.run_until_complete(finish)
        watchdog = loop.call_later(WATCHDOG, loop.stop)  # a hang stops the loop
        try:
            report = loop.run_until_complete(finish)
        except RuntimeError:
            pytest.fail("finish() did not return: the turn hangs")
        finally:
            watchdog.cancel()
    finally:
        if finish is not None and not finish.done():  # a hang: end it, so the loop closes clean
            finish.cancel()
            loop.run_until_complete(asyncio.sleep(0))
        loop.close()
    assert ran == [1, 2]
    results = [(r.name, r.result, type(r.error).__name__ if r.error else None) for r in report.results]
    if where == "finish":  # its outcome was fixed before the interrupt
        assert results == [("put", 1, None), ("put", 2, None)]
    else:
        assert results == [("put", None, "InDoubtError"), ("put", 2, None)]


def _set_when_the_loop_ends(event: threading.Event) -> asyncio.Future[None]:
    """A task that sets ``event`` once asyncio.run cancels it: the loop's end cancels every task
    left before any runs on, so a call's task is cancelled by then too (keep a reference to it)."""

    async def wait() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            event.set()

    return asyncio.ensure_future(wait())


def _a_close_would_lose(
    monkeypatch: pytest.MonkeyPatch, holds: Callable[[inert.DispatchRecord], bool], first: Callable[[], None]
) -> threading.Event:
    """Patches SqliteJournal: the first write that ``holds`` picks runs ``first``, then waits,
    bounded, for a close that would lose it (fixed, none comes, and it waits out its bound),
    then writes. Returns the event set once that write is done."""
    written, closed = threading.Event(), threading.Event()
    complete, close = inert.SqliteJournal.complete, inert.SqliteJournal.close

    def held_complete(self: inert.SqliteJournal, record: inert.DispatchRecord, status: str) -> None:
        if written.is_set() or not holds(record):
            complete(self, record, status)
            return
        first()
        closed.wait(0.5)
        try:
            complete(self, record, status)
        finally:
            written.set()

    def noted_close(self: inert.SqliteJournal) -> None:
        closed.set()
        close(self)

    monkeypatch.setattr(inert.SqliteJournal, "complete", held_complete)
    monkeypatch.setattr(inert.SqliteJournal, "close", noted_close)
    return written


def _hold_the_loop(release: threading.Event, until: threading.Event) -> asyncio.Future[None]:
    """A task that, once asyncio.run cancels it, sets ``release`` (a held tool goes on) and
    keeps the loop running until ``until`` is set (what the test waits for is done)."""

    async def hold() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            release.set()
            await asyncio.to_thread(until.wait, WATCHDOG)

    return asyncio.ensure_future(hold())


def _asyncio_errors(
    main: Callable[[], Coroutine[Any, Any, None]], tasks: list[asyncio.Future[None]], caplog: pytest.LogCaptureFixture
) -> list[str]:
    """What asyncio logs of an exception no one read ("never retrieved", "unhandled exception
    during shutdown"), running ``main`` to the loop's end, then collecting what it left
    (``tasks``, the references that kept its tasks alive, dropped first)."""
    gc.collect()  # what earlier tests left is logged before, not here
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(main())
        del tasks[:]
        gc.collect()
    said = [r.getMessage() for r in caplog.records]
    return [m for m in said if "never retrieved" in m or "unhandled" in m]


def test_a_commit_cancelled_from_outside_while_its_intent_is_written_aborts_what_was_staged(tmp_path: Path) -> None:
    """The loop ending while a commit's intent was being journaled (the intent's write held
    by a lock, say) left what the prepare staged never aborted: the commit's ``begin`` was
    not shielded as a plain call's is, so the cancel ended the call before the intent's fate
    was known, and ``inert recover`` listed the prepare in doubt for a commit that never ran."""
    tool, path = _Staged(), tmp_path / "journal.sqlite"
    in_begin, go = threading.Event(), threading.Event()
    held: list[asyncio.Future[None]] = []  # a reference, so the task lives to the loop's end

    class HeldCommitIntent(inert.SqliteJournal):
        def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
            if record.phase == "commit":  # the commit's intent, under the call's own key
                in_begin.set()
                go.wait(WATCHDOG)
            return super().begin(record, turn_key)

    async def main() -> None:
        journal = HeldCommitIntent(str(path))
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", journal=journal)
        await orch.draft([block("t", n=1)])
        await orch.verify(1, ".")
        await asyncio.to_thread(in_begin.wait, WATCHDOG)
        held.append(_set_when_the_loop_ends(go))
        # Returns with the commit's intent being written: asyncio.run cancels the call's task.

    asyncio.run(main())
    assert tool.log == ["prepare", "abort"], "the commit never ran, so what the prepare staged is dropped"
    assert inert.recover(str(path)).in_doubt == []


def test_no_call_starts_once_the_loop_ending_cancel_arrived(tmp_path: Path) -> None:
    """The conclusion of a call the loop's end cancelled started the call queued behind it,
    in a task made after asyncio.run had taken its list of tasks to cancel: the new task
    journaled its intent and was destroyed with the loop, so ``inert recover`` listed in
    doubt a write that never ran."""
    inside, release = threading.Event(), threading.Event()
    ran: list[int] = []

    def pay(n: int) -> int:
        ran.append(n)
        inside.set()
        release.wait(WATCHDOG)
        return n

    path = tmp_path / "journal.sqlite"

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"pay": "write"}, {"pay": pay}, turn_key="t", journal=str(path))
        await orch.draft([block("pay", n=1), block("pay", n=2)])  # no footprints: the second waits for the first
        await orch.verify(2, ".")
        await asyncio.to_thread(inside.wait, WATCHDOG)

    asyncio.run(main())
    release.set()
    assert ran == [1]
    assert [(tool, status) for tool, status, _ in _journal_of(path)] == [("pay", "timeout")]
    assert len(inert.recover(str(path)).in_doubt) == 1


def test_no_call_starts_once_the_loop_ending_cancel_arrived_in_another_calls_outcome(tmp_path: Path) -> None:
    """Found by a helper: the cancel landed while call 1's outcome was being journaled, a
    wait that noticed no outside cancel, so its conclusion still started call 2 (its intent
    journaled, its task destroyed, listed in doubt)."""
    path = tmp_path / "journal.sqlite"
    in_complete, go, loop_over = threading.Event(), threading.Event(), threading.Event()
    ran: list[int] = []
    held: list[asyncio.Future[None]] = []  # a reference, so the task lives to the loop's end

    class HeldOutcome(inert.SqliteJournal):
        def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
            if record.arguments["n"] == 2:
                loop_over.wait(WATCHDOG)  # a started call 2 would journal its intent after the loop
            return super().begin(record, turn_key)

        def complete(self, record: inert.DispatchRecord, status: str) -> None:
            if record.arguments["n"] == 1:
                in_complete.set()
                go.wait(WATCHDOG)
            super().complete(record, status)

    def pay(n: int) -> int:
        ran.append(n)
        return n

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"pay": "write"}, {"pay": pay}, turn_key="t", journal=HeldOutcome(str(path)))
        await orch.draft([block("pay", n=1), block("pay", n=2)])
        await orch.verify(2, ".")
        await asyncio.to_thread(in_complete.wait, WATCHDOG)
        held.append(_set_when_the_loop_ends(go))

    asyncio.run(main())
    loop_over.set()
    assert ran == [1]
    assert [e.arguments["n"] for e in inert.SqliteJournal(str(path)).entries()] == [1]


@pytest.mark.parametrize("why", ["rejected", "commit refused"])
def test_an_abort_whose_intent_is_being_written_when_the_loop_ends_still_runs(tmp_path: Path, why: str) -> None:
    """Found by a helper: the abort's intent write was not shielded, so the loop-ending cancel
    ended the abort before it ran (what the prepare staged stayed held), journaled it as failed,
    and began its intent a second time while the first write was still going on."""
    tool, path = _Staged(), tmp_path / "journal.sqlite"
    in_begin, go = threading.Event(), threading.Event()
    begun: list[str | None] = []
    held: list[asyncio.Future[None]] = []  # a reference, so the task lives to the loop's end

    class HeldAbortIntent(inert.SqliteJournal):
        def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
            begun.append(record.phase)
            if record.phase == "commit":
                raise inert.JournalError("the journal is full")
            if record.phase == "abort":
                in_begin.set()
                go.wait(WATCHDOG)
            return super().begin(record, turn_key)

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", journal=HeldAbortIntent(str(path)))
        await orch.draft([block("t", n=1)])
        while tool.log != ["prepare"]:
            await asyncio.sleep(0)
        await orch.verify(0 if why == "rejected" else 1, ".")
        await asyncio.to_thread(in_begin.wait, WATCHDOG)
        held.append(_set_when_the_loop_ends(go))

    asyncio.run(main())
    assert tool.log == ["prepare", "abort"]
    assert begun.count("abort") == 1
    assert inert.recover(str(path)).prepared == []


def test_a_prepared_commit_reached_once_the_loop_is_ending_aborts_on_a_worker(tmp_path: Path) -> None:
    """Found by a helper: a prepared call waited for the one tool slot the other's commit held;
    the loop's end cut that commit, whose end handed the slot on, in a task made after
    asyncio.run took its list of tasks to cancel. Its abort was awaited there and died with the
    loop: the prepare was neither committed nor aborted."""
    log: list[str] = []
    in_commit, go, loop_over = threading.Event(), threading.Event(), threading.Event()
    prepared = {1: threading.Event(), 2: threading.Event()}
    held: list[asyncio.Future[None]] = []  # a reference, so the task lives to the loop's end

    class Staged:
        def prepare(self, n: int) -> int:
            log.append(f"prepare {n}")
            prepared[n].set()
            return n

        def commit(self, n: int, *, idempotency_key: str) -> int:
            log.append(f"commit {n}")
            in_commit.set()
            go.wait(WATCHDOG)
            return n

        def abort(self, n: int) -> None:
            log.append(f"abort {n}")

    class SlowAbortIntents(inert.MemoryJournal):
        def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
            if record.phase == "abort":
                loop_over.wait(WATCHDOG)  # an abort awaited on the loop would not outlive it
            return super().begin(record, turn_key)

    journal = SlowAbortIntents()
    spec = inert.ToolSpec("write", reads=lambda a: [a["n"]], writes=lambda a: [a["n"]])

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"t": spec}, {"t": Staged()}, turn_key="t", journal=journal, limits={"t": 1})
        await orch.draft([block("t", n=1), block("t", n=2)])
        for n in (1, 2):
            await asyncio.to_thread(prepared[n].wait, WATCHDOG)
        await orch.verify(2, ".")
        await asyncio.to_thread(in_commit.wait, WATCHDOG)
        held.append(_set_when_the_loop_ends(go))

    asyncio.run(main())
    loop_over.set()
    deadline = time.monotonic() + WATCHDOG
    while not any(e.startswith("abort") for e in log) and time.monotonic() < deadline:  # the worker's, after the loop
        time.sleep(0.01)
    # Their footprints differ, so either commit may take the slot first: the other is aborted.
    [committed] = [e.split()[1] for e in log if e.startswith("commit")]
    [aborted] = [e.split()[1] for e in log if e.startswith("abort")]
    assert {committed, aborted} == {"1", "2"}


class _OneSlotStaged:
    """Two-phase writes whose commit waits for ``go``; ``log`` says what each phase did."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.in_commit, self.go = threading.Event(), threading.Event()
        self.prepared = {1: threading.Event(), 2: threading.Event()}

    def prepare(self, n: int) -> int:
        self.log.append(f"prepare {n}")
        self.prepared[n].set()
        return n

    def commit(self, n: int, *, idempotency_key: str) -> int:
        self.log.append(f"commit {n}")
        self.in_commit.set()
        self.go.wait(WATCHDOG)
        return n

    def abort(self, n: int) -> None:
        self.log.append(f"abort {n}")

    def orchestrator(self, journal: inert.Journal) -> inert.AsyncOrchestrator:
        spec = inert.ToolSpec("write", reads=lambda a: [a["n"]], writes=lambda a: [a["n"]])
        return inert.AsyncOrchestrator({"t": spec}, {"t": self}, turn_key="t", journal=journal, limits={"t": 1})

    async def one_commit_running(self, orch: inert.AsyncOrchestrator) -> None:
        """Both prepared and accepted; one commit holds the one slot, the other waits for it."""
        await orch.draft([block("t", n=1), block("t", n=2)])
        for n in (1, 2):
            await asyncio.to_thread(self.prepared[n].wait, WATCHDOG)
        await orch.verify(2, ".")
        await asyncio.to_thread(self.in_commit.wait, WATCHDOG)

    def aborted(self) -> list[str]:
        deadline = time.monotonic() + WATCHDOG
        while not any(e.startswith("abort") for e in self.log) and time.monotonic() < deadline:
            time.sleep(0.01)
        return [e.split()[1] for e in self.log if e.startswith("abort")]


def test_a_commit_that_returns_after_the_loop_closed_aborts_the_prepare_waiting_for_its_slot() -> None:
    """Found by a flaky run of the test above under load: the commit returned only after
    asyncio.run had closed the loop, so the slot it gave back could not start the other
    prepared call on it. That call's staged work was never aborted, and the turn never
    concluded: finish() on a later loop was refused for ever. It now aborts on a worker."""
    tool, journal = _OneSlotStaged(), inert.MemoryJournal()
    box: list[inert.AsyncOrchestrator] = []

    async def main() -> None:
        box.append(orch := tool.orchestrator(journal))
        await tool.one_commit_running(orch)

    asyncio.run(main())
    tool.go.set()  # the loop is closed: the commit returns now
    [committed] = [e.split()[1] for e in tool.log if e.startswith("commit")]
    [aborted] = tool.aborted()
    assert {committed, aborted} == {"1", "2"}
    report = asyncio.run(box[0].finish())
    errors = {r.arguments["n"]: r.error for r in report.results}
    assert "prepared, then aborted: the event loop was ending" in str(errors[int(aborted)])
    assert isinstance(errors[int(committed)], inert.InDoubtError)
    assert inert.recover(journal).prepared == []


class _NotingHandBacks(asyncio.SelectorEventLoop):
    """Says when a slot's hand-back is queued from a worker (while the loop is stopped)."""

    def __init__(self) -> None:
        super().__init__()
        self.hand_back = threading.Event()

    def call_soon_threadsafe(  # type: ignore[override]  # the generic signature is no use here
        self, callback: Any, *args: Any, context: Any = None
    ) -> asyncio.Handle:
        handle = super().call_soon_threadsafe(callback, *args, context=context)
        if type(callback).__name__ == "_HandBack":
            self.hand_back.set()
        return handle


def test_a_slot_handed_back_as_the_loop_closed_concludes_when_the_turn_ends() -> None:
    """The commit returned after the loop's tasks were cancelled and before it closed: the
    slot's hand-back was queued on the loop and dropped with it. finish() on a later loop
    runs it: the waiting prepare is aborted, and the turn reports."""

    tool, journal = _OneSlotStaged(), inert.MemoryJournal()
    loop = _NotingHandBacks()
    orch = tool.orchestrator(journal)
    loop.run_until_complete(tool.one_commit_running(orch))
    for task in asyncio.all_tasks(loop):  # what asyncio.run does as its main coroutine returns
        task.cancel()
    loop.run_until_complete(asyncio.gather(*asyncio.all_tasks(loop), return_exceptions=True))
    tool.go.set()
    assert loop.hand_back.wait(WATCHDOG)
    loop.close()  # the hand-back queued on it is dropped unrun
    assert not any(e.startswith("abort") for e in tool.log)
    report = asyncio.run(orch.finish())
    [committed] = [e.split()[1] for e in tool.log if e.startswith("commit")]
    [aborted] = tool.aborted()
    assert {committed, aborted} == {"1", "2"}
    assert len(report.results) == 2
    assert inert.recover(journal).prepared == []


class _HeldPhase:
    """A two-phase write whose ``held`` phase signals ``inside`` and waits for ``release``."""

    def __init__(self, held: str) -> None:
        self.held = held
        self.log: list[str] = []
        self.inside, self.release = threading.Event(), threading.Event()

    def _enter(self, phase: str) -> None:
        self.log.append(phase)
        if phase == self.held:
            self.inside.set()
            self.release.wait(WATCHDOG)

    def prepare(self, n: int) -> int:
        self._enter("prepare")
        return n

    def commit(self, n: int, *, idempotency_key: str) -> int:
        self._enter("commit")
        return n

    def abort(self, n: int) -> None:
        self._enter("abort")


def _wait_for(done: Callable[[], bool]) -> None:
    """Polls, up to the watchdog, for what a worker does after the loop is gone (no event
    of the test's can mark it: the worker's own journal write is the last thing it does)."""
    deadline = time.monotonic() + WATCHDOG
    while not done() and time.monotonic() < deadline:
        time.sleep(0.01)


def _assert_prepared_then_aborted(path: Path, tool: _HeldPhase) -> None:
    """Once the workers are done: the prepare and its abort, each journaled ``ok`` once."""
    _wait_for(lambda: [status for _, status, _ in _journal_of(path)] == ["ok", "ok"])
    assert tool.log == ["prepare", "abort"]
    phases = [(e.commit_key.split("/")[1], e.status) for e in inert.SqliteJournal(str(path)).entries()]
    assert phases == [("prepare", "ok"), ("abort", "ok")]
    assert inert.recover(str(path)).prepared == []


@pytest.mark.parametrize("timeout", [None, 60.0])
def test_a_prepare_the_loop_cuts_off_is_dropped_when_it_returns(tmp_path: Path, timeout: float | None) -> None:
    """Found by a helper: the loop ended while a plain prepare ran in its thread. The prepare
    was journaled ``error`` (CancelledError) and went on to stage, and nothing aborted it:
    ``inert recover`` listed nothing, and what it staged (a lock, a transaction) stayed held."""
    tool, path = _HeldPhase("prepare"), tmp_path / "journal.sqlite"
    spec = inert.ToolSpec("write", timeout=timeout)

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"t": spec}, {"t": tool}, turn_key="t", journal=str(path))
        await orch.draft([block("t", n=1)])
        await asyncio.to_thread(tool.inside.wait, WATCHDOG)
        # Returns with the prepare in its thread: asyncio.run cancels the call's task.

    asyncio.run(main())
    tool.release.set()
    _wait_for(lambda: [status for _, status, _ in _journal_of(path)] == ["ok", "ok"])
    assert tool.log == ["prepare", "abort"]
    phases = [e.commit_key.split("/")[1] for e in inert.SqliteJournal(str(path)).entries()]
    assert phases == ["prepare", "abort"]
    recovered = inert.recover(str(path))
    assert recovered.prepared == [] and recovered.in_doubt == []


def test_a_prepare_whose_outcome_is_being_journaled_when_the_loop_ends_is_dropped(tmp_path: Path) -> None:
    """Found by a helper: the cancel landed while the prepare's ``ok`` was being written. The
    write was not shielded, so the call journaled the prepare a second time, as ``error``
    (which of the two stuck was a race), and what it staged was never aborted."""
    tool, path = _Staged(), tmp_path / "journal.sqlite"
    in_complete, go = threading.Event(), threading.Event()
    completed: list[tuple[str | None, str]] = []
    held: list[asyncio.Future[None]] = []  # a reference, so the task lives to the loop's end

    class HeldPrepareOutcome(inert.SqliteJournal):
        def complete(self, record: inert.DispatchRecord, status: str) -> None:
            if record.phase == "prepare":
                in_complete.set()
                go.wait(WATCHDOG)
            super().complete(record, status)
            completed.append((record.phase, status))

    async def main() -> None:
        journal = HeldPrepareOutcome(str(path))
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", journal=journal)
        await orch.draft([block("t", n=1)])
        await asyncio.to_thread(in_complete.wait, WATCHDOG)
        held.append(_set_when_the_loop_ends(go))

    asyncio.run(main())
    _wait_for(lambda: ("abort", "ok") in completed)
    assert tool.log == ["prepare", "abort"]
    assert completed.count(("prepare", "ok")) == 1 and ("prepare", "error") not in completed
    assert inert.recover(str(path)).prepared == []


def test_a_rejected_calls_abort_the_loop_cuts_off_is_journaled_as_it_ended(tmp_path: Path) -> None:
    """Found by a helper: the loop ended while a rejected call's abort ran in its thread. The
    abort finished, but was journaled ``error`` (CancelledError), so ``inert recover`` listed
    as still prepared a call whose staged state was already dropped."""
    tool, path = _HeldPhase("abort"), tmp_path / "journal.sqlite"

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", journal=str(path))
        await orch.draft([block("t", n=1)])
        while tool.log != ["prepare"]:
            await asyncio.sleep(0)
        await orch.verify(0, ".")
        await asyncio.to_thread(tool.inside.wait, WATCHDOG)

    asyncio.run(main())
    tool.release.set()
    _assert_prepared_then_aborted(path, tool)


def test_a_prepare_whose_intent_is_being_written_when_the_loop_ends_never_runs(tmp_path: Path) -> None:
    """The prepare's intent write was not shielded: the cancel journaled the prepare's failure
    while the intent was still being written, so the outcome could land before its intent."""
    tool, path = _Staged(), tmp_path / "journal.sqlite"
    in_begin, go, completing = threading.Event(), threading.Event(), threading.Event()
    written: list[str] = []
    held: list[asyncio.Future[None]] = []  # a reference, so the task lives to the loop's end

    class HeldPrepareIntent(inert.SqliteJournal):
        def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
            if record.phase == "prepare":
                in_begin.set()
                go.wait(WATCHDOG)
                # Bounded: an outcome written before its intent arrives meanwhile. Fixed, none
                # does, and this waits out its bound.
                completing.wait(0.5)
            entry = super().begin(record, turn_key)
            written.append(f"begin {record.phase}")
            return entry

        def complete(self, record: inert.DispatchRecord, status: str) -> None:
            completing.set()
            written.append(f"{status} {record.phase}")
            super().complete(record, status)

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", journal=HeldPrepareIntent(str(path)))
        await orch.draft([block("t", n=1)])
        await asyncio.to_thread(in_begin.wait, WATCHDOG)
        held.append(_set_when_the_loop_ends(go))

    asyncio.run(main())
    assert tool.log == []
    assert written == ["begin prepare", "error prepare"]
    assert inert.recover(str(path)).prepared == []


@pytest.mark.parametrize("held", ["prepare", "abort"])
def test_the_journal_opened_from_a_path_outlives_the_workers_that_finish_a_cut_phase(
    tmp_path: Path, held: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a helper: a handler task in ``async with AsyncOrchestrator(journal=PATH)`` when
    the loop ends. Its close closed the journal once the phase's thread returned, before the
    worker that journals what that phase did (and aborts what a prepare staged) had written:
    the abort ran, its record was lost, and ``inert recover`` listed the prepare as pending."""
    tool, path = _HeldPhase(held), tmp_path / "journal.sqlite"
    tasks: list[asyncio.Future[None]] = []  # references, so the tasks live to the loop's end
    # The worker's record of the cut phase.
    written = _a_close_would_lose(monkeypatch, lambda record: record.phase == held, lambda: None)

    async def handler() -> None:
        async with inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", journal=str(path)) as orch:
            await orch.draft([block("t", n=1)])
            if held == "abort":
                await orch.verify(0, ".")
            await asyncio.Event().wait()  # the handler waits on until the loop ends

    async def main() -> None:
        tasks.append(asyncio.ensure_future(handler()))
        await asyncio.to_thread(tool.inside.wait, WATCHDOG)
        # The loop's end: the phase returns, and the loop runs on until it is journaled.
        tasks.append(_hold_the_loop(tool.release, written))

    asyncio.run(main())
    monkeypatch.undo()
    _assert_prepared_then_aborted(path, tool)


@pytest.mark.parametrize("held", ["prepare", "abort"])
def test_a_cut_phase_that_raises_while_the_loop_ends_logs_nothing(held: str, caplog: pytest.LogCaptureFixture) -> None:
    """Found by a helper: a plain phase the loop's end cut off raised while the loop still ran
    (its other tasks ending): asyncio logged "Future exception was never retrieved" with a
    traceback, since the cut wait no longer read the phase's future. Its worker journals it."""
    inside, release, journaled = threading.Event(), threading.Event(), threading.Event()

    class Failing:
        def prepare(self, n: int) -> int:
            if held == "prepare":
                inside.set()
                release.wait(WATCHDOG)
                raise ValueError("no lock")
            return n

        def commit(self, n: int, *, idempotency_key: str) -> int:
            return n

        def abort(self, n: int) -> None:
            inside.set()
            release.wait(WATCHDOG)
            raise ValueError("no rollback")

    class Watched(inert.MemoryJournal):
        def complete(self, record: inert.DispatchRecord, status: str) -> None:
            super().complete(record, status)
            if record.phase == held:
                journaled.set()

    journal = Watched()
    tasks: list[asyncio.Future[None]] = []

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": Failing()}, turn_key="t", journal=journal)
        await orch.draft([block("t", n=1)])
        if held == "abort":
            await orch.verify(0, ".")
        await asyncio.to_thread(inside.wait, WATCHDOG)
        # The loop's end: the phase raises now, and the loop runs on until it is journaled.
        tasks.append(_hold_the_loop(release, journaled))

    assert _asyncio_errors(main, tasks, caplog) == []
    assert journaled.is_set()


def test_an_abort_whose_outcome_write_waits_for_a_worker_when_the_loop_ends_is_journaled(tmp_path: Path) -> None:
    """Found by a helper: a rejected call's abort returned while the only worker wrote another
    call's intent, so its outcome's write waited in the queue, and the loop's end cancelled it
    there (the write was not shielded): the abort ran, nothing said so, and ``inert recover``
    listed the prepare as pending. The CancelledError then left the call's task, whose end
    started the write queued behind it, in a task the loop destroyed after its prepare's intent."""
    tool, path = _HeldPhase("abort"), tmp_path / "journal.sqlite"
    in_begin, go = threading.Event(), threading.Event()
    prepares: list[int] = []
    tasks: list[asyncio.Future[None]] = []  # a reference, so the task lives to the loop's end

    class Queued(_Staged):
        def prepare(self, n: int) -> int:
            prepares.append(n)
            return n

    class HeldReadIntent(inert.SqliteJournal):
        def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
            if record.name == "r":
                in_begin.set()
                go.wait(WATCHDOG)
            return super().begin(record, turn_key)

    async def main() -> None:
        def on(key: str) -> Callable[[Mapping[str, object]], list[str]]:
            return lambda arguments: [key]

        # r reads elsewhere, so it runs beside t; q writes what t writes, so it waits for t.
        write = inert.ToolSpec("write", reads=on("x"), writes=on("x"))
        effects = {"t": write, "q": write, "r": inert.ToolSpec("read_only", reads=on("y"))}
        tools: dict[str, Any] = {"t": tool, "q": Queued(), "r": lambda n: n}
        orch = inert.AsyncOrchestrator(effects, tools, turn_key="t", journal=HeldReadIntent(str(path)), max_workers=1)
        runtime = orch._s.runtime
        assert isinstance(runtime, AsyncRuntime)
        pool = runtime._pool  # the queue is the point
        await orch.draft([block("t", n=1)])
        while tool.log != ["prepare"]:
            await asyncio.sleep(0)
        await orch.verify(0, ".")
        await asyncio.to_thread(tool.inside.wait, WATCHDOG)  # the abort holds the only worker
        await orch.draft([block("r", n=2), block("q", n=3)])  # q is ordered behind t (a write after a write)
        while pool._pending == 0:  # the read's intent waits for the worker
            await asyncio.sleep(0)
        tool.release.set()
        await asyncio.to_thread(in_begin.wait, WATCHDOG)  # the worker writes the read's intent
        while pool._pending == 0:  # the abort's outcome waits behind it
            await asyncio.sleep(0)
        tasks.append(_set_when_the_loop_ends(go))

    asyncio.run(main())

    def phases() -> list[tuple[str, str | None]]:
        entries = inert.SqliteJournal(str(path)).entries()
        return [(e.commit_key.split("/")[1], e.status) for e in entries if e.tool == "t"]

    _wait_for(lambda: ("abort", "ok") in phases())
    assert phases() == [("prepare", "ok"), ("abort", "ok")]
    assert tool.log == ["prepare", "abort"]
    assert prepares == [], "the write queued behind the abort never starts once the loop is ending"
    recovered = inert.recover(str(path))
    assert recovered.prepared == [] and recovered.in_doubt == []


def test_a_coroutine_prepare_past_its_deadline_that_the_loop_cancels_is_journaled(tmp_path: Path) -> None:
    """Found by a helper: a coroutine prepare outlived its deadline (it goes on, to be aborted
    when it returns), then the loop's end cancelled it. Nothing journaled how it ended, so
    ``inert recover`` listed as prepared a call that staged nothing."""
    path = tmp_path / "journal.sqlite"

    class Stuck:
        async def prepare(self, n: int) -> int:
            await asyncio.Event().wait()  # never returns: cancelled with the loop
            return n

        async def commit(self, n: int, *, idempotency_key: str) -> int:
            return n

        async def abort(self, n: int) -> None:
            return None

    async def main() -> None:
        spec = inert.ToolSpec("write", timeout=0.01)
        orch = inert.AsyncOrchestrator({"t": spec}, {"t": Stuck()}, turn_key="t", journal=str(path))
        await orch.draft([block("t", n=1)])
        runtime = orch._s.runtime
        assert isinstance(runtime, AsyncRuntime)
        while runtime._late == 0:  # its deadline passed; it runs on
            await asyncio.sleep(0.001)

    asyncio.run(main())
    _wait_for(lambda: [status for _, status, _ in _journal_of(path)] == ["error"])
    assert [(tool, status) for tool, status, _ in _journal_of(path)] == [("t", "error")]
    assert inert.recover(str(path)).prepared == []


# -- found by helper 6, attacking 332d9dd (one tracked hand-over when the loop ends) --


def test_a_coroutine_abort_handed_to_a_worker_as_the_loop_ends_is_run(tmp_path: Path) -> None:
    """The loop ended while a coroutine prepare's ``ok`` was written: the worker that drops
    what it staged called the coroutine abort and never awaited it ("coroutine was never
    awaited"), yet journaled the abort ``ok``: nothing was dropped and nothing said so."""
    path, log = tmp_path / "journal.sqlite", []
    inside, go = threading.Event(), threading.Event()
    tasks: list[asyncio.Future[None]] = []

    class Coroutines:
        async def prepare(self, n: int) -> int:
            log.append("prepare")
            return n

        async def commit(self, n: int, *, idempotency_key: str) -> int:
            return n

        async def abort(self, n: int) -> None:
            await asyncio.sleep(0)
            log.append("abort")

    class HeldPrepareOutcome(inert.SqliteJournal):
        def complete(self, record: inert.DispatchRecord, status: str) -> None:
            if record.phase == "prepare":
                inside.set()
                go.wait(WATCHDOG)
            super().complete(record, status)

    async def main() -> None:
        journal = HeldPrepareOutcome(str(path))
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": Coroutines()}, turn_key="t", journal=journal)
        await orch.draft([block("t", n=1)])
        await asyncio.to_thread(inside.wait, WATCHDOG)
        tasks.append(_set_when_the_loop_ends(go))

    asyncio.run(main())
    _wait_for(lambda: "abort" in log and ("t", "ok", "") in _journal_of(path)[1:])
    assert log == ["prepare", "abort"]
    assert inert.recover(str(path)).prepared == []


def test_a_commit_the_loop_cuts_with_one_worker_lets_asyncio_run_return(tmp_path: Path) -> None:
    """With max_workers=1, the in-doubt record of a plain commit the loop's end cut off
    waited in the queue behind the commit's own thread: asyncio.run did not return until
    the commit did (its worker was not given up, as a cut prepare's is)."""
    path = tmp_path / "journal.sqlite"
    inside, release, returned = threading.Event(), threading.Event(), threading.Event()

    class SlowCommit(_Staged):
        def commit(self, prepared: int, *, idempotency_key: str) -> int:
            inside.set()
            release.wait(WATCHDOG)
            returned.set()
            return prepared

    async def main() -> None:
        orch = inert.AsyncOrchestrator(
            {"t": "write"}, {"t": SlowCommit()}, turn_key="t", journal=str(path), max_workers=1
        )
        await orch.draft([block("t", n=1)])
        await orch.verify(1, ".")
        await asyncio.to_thread(inside.wait, WATCHDOG)

    asyncio.run(main())
    assert not returned.is_set(), "asyncio.run returned while the commit still ran"
    release.set()
    assert [e.arguments["n"] for e in inert.recover(str(path)).in_doubt] == [1]


@pytest.mark.parametrize("two_phase", [True, False])
def test_a_calls_outcome_being_written_as_the_loop_ends_is_written_before_the_journal_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_phase: bool
) -> None:
    """A handler in ``async with AsyncOrchestrator(journal=PATH)``: the loop ended while a
    committed call's outcome was written. The write was awaited under a bare shield, so the
    call concluded at once, the journal inert opened closed, and the write was lost: a
    commit that succeeded was listed in doubt."""
    path = tmp_path / "journal.sqlite"
    inside, go = threading.Event(), threading.Event()
    tasks: list[asyncio.Future[None]] = []

    def hold() -> None:
        inside.set()
        go.wait(WATCHDOG)

    _a_close_would_lose(monkeypatch, lambda record: record.phase in ("commit", None), hold)  # the call's outcome
    tool: Any = _HeldPhase(held="") if two_phase else (lambda n: n)  # holds no phase

    async def handler() -> None:
        async with inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", journal=str(path)) as orch:
            await orch.draft([block("t", n=1)])
            await orch.verify(1, ".")
            await asyncio.Event().wait()

    async def main() -> None:
        tasks.append(asyncio.ensure_future(handler()))
        await asyncio.to_thread(inside.wait, WATCHDOG)
        tasks.append(_set_when_the_loop_ends(go))

    asyncio.run(main())
    monkeypatch.undo()
    _wait_for(lambda: ("t", "ok", "") in _journal_of(path)[-1:])
    assert _journal_of(path)[-1] == ("t", "ok", "")
    assert inert.recover(str(path)).in_doubt == []


@pytest.mark.parametrize("coroutine", [False, True])
def test_a_commit_that_raises_as_the_loop_ends_logs_nothing(coroutine: bool, caplog: pytest.LogCaptureFixture) -> None:
    """A commit the loop's end cut off raised while the loop still ran: asyncio logged
    "Future exception was never retrieved" (a plain commit's thread) or "unhandled exception
    during asyncio.run() shutdown" (a coroutine commit answering the cancel with an error)."""
    inside, release = threading.Event(), threading.Event()
    tasks: list[asyncio.Future[None]] = []

    class Plain(_Staged):
        def commit(self, prepared: int, *, idempotency_key: str) -> int:
            inside.set()
            release.wait(WATCHDOG)
            raise ValueError("commit failed")

    class Coroutines:
        async def prepare(self, n: int) -> int:
            return n

        async def commit(self, n: int, *, idempotency_key: str) -> int:
            inside.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                raise ValueError("commit failed on cancel") from None
            return n

        async def abort(self, n: int) -> None:
            return None

    committed = threading.Event()

    class Watched(inert.MemoryJournal):
        def complete(self, record: inert.DispatchRecord, status: str) -> None:
            super().complete(record, status)
            if record.phase == "commit":
                committed.set()

    async def main() -> None:
        tool: Any = Coroutines() if coroutine else Plain()
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", journal=Watched())
        await orch.draft([block("t", n=1)])
        await orch.verify(1, ".")
        await asyncio.to_thread(inside.wait, WATCHDOG)
        # The loop's end: the commit raises now, and the loop runs on until its record is written.
        tasks.append(_hold_the_loop(release, committed))

    assert _asyncio_errors(main, tasks, caplog) == []


def test_the_journal_is_closed_when_the_last_hand_over_ends_as_the_loop_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cut prepare returned while asyncio.run was between its last run of the loop and
    loop.close(): the worker's release was scheduled on the loop, which never ran it, so the
    journal inert opened from a path was never closed (left to the garbage collector). A loop
    subclass holds that window open with events."""
    path = tmp_path / "journal.sqlite"
    inside, closing, scheduled, closed = (threading.Event() for _ in range(4))
    tasks: list[asyncio.Future[None]] = []

    class Held(_Staged):
        def prepare(self, n: int) -> int:
            inside.set()
            closing.wait(WATCHDOG)
            return n

    class Loop(asyncio.SelectorEventLoop):
        def call_soon_threadsafe(self, *args: Any, **kwargs: Any) -> asyncio.Handle:  # type: ignore[override]
            handle = super().call_soon_threadsafe(*args, **kwargs)
            if closing.is_set() and threading.current_thread() is not threading.main_thread():
                scheduled.set()
            return handle

        def close(self) -> None:
            closing.set()  # stopped for good, not closed yet
            scheduled.wait(2.0)  # bounded: the worker schedules something meanwhile (fixed: not its release)
            super().close()

    class Noted(inert.SqliteJournal):
        def close(self) -> None:
            super().close()
            closed.set()

    async def handler() -> None:
        async with inert.AsyncOrchestrator({"t": "write"}, {"t": Held()}, turn_key="t", journal=str(path)) as orch:
            await orch.draft([block("t", n=1)])
            await asyncio.Event().wait()

    async def main() -> None:
        tasks.append(asyncio.ensure_future(handler()))
        await asyncio.to_thread(inside.wait, WATCHDOG)

    monkeypatch.setattr("inert.journal.spec.SqliteJournal", Noted)  # the class a path is opened with
    with asyncio.Runner(loop_factory=Loop) as runner:
        runner.run(main())
    assert closed.wait(WATCHDOG), "the journal inert opened from a path was never closed"


def test_a_prepare_returning_as_its_deadline_passes_is_dropped_once_when_the_loop_ends(tmp_path: Path) -> None:
    """A plain prepare returned just as its deadline passed (the loop saw both at once), and
    the loop ended while the prepare's ``ok`` was being journaled on its way to the abort:
    the unshielded writes were cut, the prepare was journaled a second time (``error``) and
    never aborted. It is now dropped on a worker, as every prepare past its deadline is."""
    path, log, completes = tmp_path / "journal.sqlite", [], []
    inside, go_prepare, in_write, go = (threading.Event() for _ in range(4))
    tasks: list[asyncio.Future[None]] = []
    timeout = 0.05

    class Late(_Staged):
        def prepare(self, n: int) -> int:
            inside.set()
            go_prepare.wait(WATCHDOG)
            log.append("prepare")
            return n

        def abort(self, prepared: int) -> None:
            log.append("abort")

    class Held(inert.SqliteJournal):
        def complete(self, record: inert.DispatchRecord, status: str) -> None:
            if record.phase == "prepare" and not in_write.is_set():
                in_write.set()
                go.wait(WATCHDOG)
            super().complete(record, status)
            completes.append((record.phase, status))  # once written: the test reads the journal after

    async def main() -> None:
        spec = inert.ToolSpec("write", timeout=timeout)
        orch = inert.AsyncOrchestrator({"t": spec}, {"t": Late()}, turn_key="t", journal=Held(str(path)))
        await orch.draft([block("t", n=1)])
        await asyncio.to_thread(inside.wait, WATCHDOG)
        runtime = orch._s.runtime
        assert isinstance(runtime, AsyncRuntime)
        [run] = runtime._log
        # The loop is held, not awaiting, until the prepare returned and its deadline passed:
        # the two arrive together when it runs again.
        start = time.monotonic()
        go_prepare.set()
        concurrent.futures.wait([run.lingering])
        while time.monotonic() < start + 2 * timeout:
            pass
        await asyncio.to_thread(in_write.wait, WATCHDOG)
        tasks.append(_set_when_the_loop_ends(go))

    asyncio.run(main())
    _wait_for(lambda: ("abort", "ok") in completes)
    assert log == ["prepare", "abort"]
    assert completes == [("prepare", "ok"), ("abort", "ok")]
    assert inert.recover(str(path)).prepared == []


def test_a_slot_handed_back_in_the_loops_last_iteration_starts_no_task() -> None:
    """Found by a helper: asyncio.run's shutdown runs the loop on after it cancelled the
    tasks; a slot handed back in its last iteration made a task whose first step never came,
    so the prepare waiting for that slot was never aborted and finish() on a later loop was
    refused for ever. Once the loop is ending, a call gets no task: it concludes at once."""
    tool, journal = _OneSlotStaged(), inert.MemoryJournal()

    class CommitReturnsLast(_NotingHandBacks):
        async def shutdown_default_executor(self, *args: Any) -> None:  # the last thing asyncio.run runs
            await super().shutdown_default_executor(*args)
            tool.go.set()
            assert self.hand_back.wait(WATCHDOG)

    box: list[inert.AsyncOrchestrator] = []

    async def main() -> None:
        box.append(orch := tool.orchestrator(journal))
        await tool.one_commit_running(orch)

    with asyncio.Runner(loop_factory=CommitReturnsLast) as runner:
        runner.run(main())
    report = asyncio.run(box[0].finish())
    assert len(report.results) == 2
    [committed] = [e.split()[1] for e in tool.log if e.startswith("commit")]
    [aborted] = tool.aborted()
    assert {committed, aborted} == {"1", "2"}
    assert inert.recover(journal).prepared == []


def test_a_finish_left_pending_on_a_closed_loop_does_not_break_the_next_one() -> None:
    """Found by a helper: a finish() left waiting on a loop that was then closed (as a
    Ctrl-C leaves a bare run_until_complete) held the turn's idle flag; the last call
    concluding off the loop set it, which woke that waiter on the closed loop and raised
    RuntimeError, out of finish() on the next loop or in a worker's callback."""
    tool, journal = _OneSlotStaged(), inert.MemoryJournal()
    loop = _NotingHandBacks()
    orch = tool.orchestrator(journal)
    loop.run_until_complete(tool.one_commit_running(orch))
    runtime = orch._s.runtime
    assert isinstance(runtime, AsyncRuntime)
    [commit_task] = runtime._tasks.values()
    commit_task.cancel()  # from outside: the commit is in doubt, its tool keeps the slot
    loop.run_until_complete(asyncio.gather(commit_task, return_exceptions=True))

    async def finish_waiting() -> None:
        loop.create_task(orch.finish(strict=False))
        while runtime._draining == 0:
            await asyncio.sleep(0)

    loop.run_until_complete(finish_waiting())
    tool.go.set()
    assert loop.hand_back.wait(WATCHDOG)  # queued on the stopped loop, dropped as it closes
    loop.close()
    report = asyncio.run(orch.finish(strict=False))
    assert len(report.results) == 2
    [committed] = [e.split()[1] for e in tool.log if e.startswith("commit")]
    [aborted] = tool.aborted()
    assert {committed, aborted} == {"1", "2"}


def test_finish_on_a_later_loop_returns_once_the_abort_it_reports_is_journaled() -> None:
    """Found by a helper: the report said a prepared call was aborted while its abort still
    ran on a worker, so a caller that closed its own journal on the report lost the abort's
    record, and recover listed the prepare for ever. finish() now waits for such aborts (within
    the call's deadline; this one has none)."""
    tool, journal = _OneSlotStaged(), inert.MemoryJournal()
    abort_in, abort_go, finished = threading.Event(), threading.Event(), threading.Event()
    order: list[str] = []
    plain_abort = tool.abort

    def held_abort(n: int) -> None:
        abort_in.set()
        abort_go.wait(WATCHDOG)
        plain_abort(n)
        order.append("aborted")

    tool.abort = held_abort  # type: ignore[method-assign]
    box: list[inert.AsyncOrchestrator] = []

    async def main() -> None:
        box.append(orch := tool.orchestrator(journal))
        await tool.one_commit_running(orch)

    asyncio.run(main())
    tool.go.set()  # the loop is closed: the commit returns, the waiting prepare's abort begins
    assert abort_in.wait(WATCHDOG)
    reports: list[inert.Report] = []

    def finish() -> None:
        reports.append(asyncio.run(box[0].finish()))
        order.append("finished")
        finished.set()

    ending = threading.Thread(target=finish)
    ending.start()
    finished.wait(2)  # returned at once before the fix; now it waits for the abort
    abort_go.set()
    ending.join(WATCHDOG)
    assert order == ["aborted", "finished"]
    assert inert.recover(journal).prepared == []
    assert len(reports[0].results) == 2
