"""AsyncOrchestrator when the event loop ends (``asyncio.run`` cancelling the tasks its main
coroutine left) around coroutine phases, late prepares and calls queued for a tool slot,
found by a helper attacking it. Tools are held by events; a bounded wait is used only for
what the fixed code never does."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
from pathlib import Path
from typing import Any

import pytest
from test_async_interrupts import _journal_of, _set_when_the_loop_ends, _Staged, _wait_for

import inert
from inert.runtime import AsyncRuntime
from tools import WATCHDOG, block


def _phases(path: Path) -> list[tuple[str, str | None]]:
    """Each phase's entry of the journal at ``path``: (phase, status)."""
    return [(e.commit_key.split("/")[1], e.status) for e in inert.SqliteJournal(str(path)).entries()]


class _Swallowing:
    """Coroutine phases; the ``held`` one waits until the loop's end cancels it, then
    swallows the cancel and returns (a prepare: what it staged)."""

    def __init__(self, held: str) -> None:
        self.held = held
        self.log: list[str] = []
        self.inside = threading.Event()

    async def _enter(self, phase: str) -> None:
        self.log.append(phase)
        if phase == self.held:
            self.inside.set()
            with contextlib.suppress(asyncio.CancelledError):  # it finishes its work anyway
                await asyncio.Event().wait()

    async def prepare(self, n: int) -> int:
        await self._enter("prepare")
        return n

    async def commit(self, n: int, *, idempotency_key: str) -> int:
        await self._enter("commit")
        return n

    async def abort(self, n: int) -> None:
        await self._enter("abort")


@pytest.mark.parametrize("held", ["prepare", "abort"])
def test_a_coroutine_phase_that_swallows_the_loops_cancel_is_journaled_as_it_ended(tmp_path: Path, held: str) -> None:
    """A coroutine prepare swallowed the loop-ending cancel and returned what it staged: it
    was journaled ``error`` (CancelledError) and never aborted. A coroutine abort doing the
    same was journaled ``error`` though it dropped what was staged. Each is now handed to a
    worker, as a plain phase's thread is, and journaled by what it did."""
    tool, path = _Swallowing(held), tmp_path / "journal.sqlite"

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t", journal=str(path))
        await orch.draft([block("t", n=1)])
        if held == "abort":
            while tool.log != ["prepare"]:
                await asyncio.sleep(0)
            await orch.verify(0, ".")
        await asyncio.to_thread(tool.inside.wait, WATCHDOG)
        # Returns with the phase awaiting: asyncio.run cancels it and the call's task.

    asyncio.run(main())
    _wait_for(lambda: [status for _, status in _phases(path)] == ["ok", "ok"])
    assert tool.log == ["prepare", "abort"]
    assert _phases(path) == [("prepare", "ok"), ("abort", "ok")]
    recovered = inert.recover(str(path))
    assert recovered.prepared == [] and recovered.in_doubt == []


class _LatePrepare:
    """A coroutine prepare held until ``release`` is set (past its deadline), or, with
    ``swallow``, until the loop's end cancels it, which it swallows, returning what it staged."""

    def __init__(self, *, swallow: bool = False) -> None:
        self.swallow = swallow
        self.log: list[str] = []
        self.release: asyncio.Event | None = None

    async def prepare(self, n: int) -> int:
        self.log.append("prepare")
        try:
            await (self.release or asyncio.Event()).wait()
        except asyncio.CancelledError:
            if not self.swallow:
                raise
        return n

    async def commit(self, n: int, *, idempotency_key: str) -> int:
        return n

    async def abort(self, n: int) -> None:
        await asyncio.sleep(0)
        self.log.append("abort")


def test_a_late_coroutine_prepares_cleanup_cut_while_it_writes_still_aborts(tmp_path: Path) -> None:
    """A coroutine prepare past its deadline returned; the task that journals it and drops
    what it staged was cancelled by the loop's end while it wrote the prepare's ``ok``: the
    unshielded wait ended the task, and nothing aborted what the prepare staged."""
    tool, path = _LatePrepare(), tmp_path / "journal.sqlite"
    in_write, go = threading.Event(), threading.Event()
    tasks: list[asyncio.Future[None]] = []  # a reference, so the task lives to the loop's end

    class HeldPrepareOutcome(inert.SqliteJournal):
        def complete(self, record: inert.DispatchRecord, status: str) -> None:
            if record.phase == "prepare":
                in_write.set()
                go.wait(WATCHDOG)
            super().complete(record, status)

    async def main() -> None:
        tool.release = asyncio.Event()
        spec = inert.ToolSpec("write", timeout=0.01)
        orch = inert.AsyncOrchestrator({"t": spec}, {"t": tool}, turn_key="t", journal=HeldPrepareOutcome(str(path)))
        await orch.draft([block("t", n=1)])
        runtime = orch._s.runtime
        assert isinstance(runtime, AsyncRuntime)
        while runtime._late == 0:  # its deadline passed; it runs on
            await asyncio.sleep(0.001)
        tool.release.set()
        await asyncio.to_thread(in_write.wait, WATCHDOG)
        tasks.append(_set_when_the_loop_ends(go))

    asyncio.run(main())
    _wait_for(lambda: ("abort", "ok") in _phases(path))
    assert tool.log == ["prepare", "abort"]
    assert _phases(path) == [("prepare", "ok"), ("abort", "ok")]
    assert inert.recover(str(path)).prepared == []


def test_a_late_coroutine_prepare_that_returns_on_the_loops_cancel_is_aborted_and_the_journal_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handler in ``async with AsyncOrchestrator(journal=PATH)``: a coroutine prepare past its
    deadline swallowed the loop-ending cancel and returned what it staged. Its cleanup was a
    task made after asyncio.run took its list of tasks to cancel, which died with the loop
    (its journal write is held until then): nothing aborted, and the late prepare was counted
    running for ever, so the journal inert opened was never closed."""
    tool, path = _LatePrepare(swallow=True), tmp_path / "journal.sqlite"
    loop_over, closed = threading.Event(), threading.Event()
    late: list[bool] = []
    tasks: list[asyncio.Future[None]] = []

    class Noted(inert.SqliteJournal):
        def complete(self, record: inert.DispatchRecord, status: str) -> None:
            if record.phase == "prepare":
                loop_over.wait(WATCHDOG)  # a write awaited on the loop would not outlive it
            super().complete(record, status)

        def close(self) -> None:
            super().close()
            closed.set()

    async def handler() -> None:
        spec = inert.ToolSpec("write", timeout=0.01)
        async with inert.AsyncOrchestrator({"t": spec}, {"t": tool}, turn_key="t", journal=str(path)) as orch:
            await orch.draft([block("t", n=1)])
            runtime = orch._s.runtime
            assert isinstance(runtime, AsyncRuntime)
            while runtime._late == 0:  # its deadline passed; it runs on
                await asyncio.sleep(0.001)
            late.append(True)
            await asyncio.Event().wait()  # the handler waits on until the loop ends

    async def main() -> None:
        tasks.append(asyncio.ensure_future(handler()))
        while not late:
            await asyncio.sleep(0.001)

    monkeypatch.setattr("inert.journal.spec.SqliteJournal", Noted)  # the class a path is opened with
    asyncio.run(main())
    loop_over.set()
    assert closed.wait(WATCHDOG), "the journal inert opened from a path was never closed"
    assert tool.log == ["prepare", "abort"]
    assert _phases(path) == [("prepare", "ok"), ("abort", "ok")]
    assert inert.recover(str(path)).prepared == []


class _FrozenClock(asyncio.SelectorEventLoop):
    """An event loop whose clock moves only when the test moves it (``now``): a deadline
    passes when told to, and no other does."""

    now = 0.0

    def time(self) -> float:
        return self.now


class _SlotHolder:
    """Call 1's prepare (plain or coroutine) is held past its deadline, keeping the tool's
    one slot; call 2's would run once it gets the slot."""

    def __init__(self, coroutine: bool) -> None:
        self.coroutine = coroutine
        self.log: list[str] = []
        self.inside, self.release = threading.Event(), threading.Event()

    def _plain_prepare(self, n: int) -> int:
        self.log.append(f"prepare {n}")
        if n == 1:
            self.inside.set()
            self.release.wait(WATCHDOG)
        return n

    async def _coroutine_prepare(self, n: int) -> int:
        self.log.append(f"prepare {n}")
        if n == 1:
            self.inside.set()
            await asyncio.Event().wait()  # until the loop's end cancels it
        return n

    @property
    def prepare(self) -> Any:
        return self._coroutine_prepare if self.coroutine else self._plain_prepare

    def commit(self, n: int, *, idempotency_key: str) -> int:
        self.log.append(f"commit {n}")
        return n

    def abort(self, n: int) -> None:
        self.log.append(f"abort {n}")


@pytest.mark.parametrize("coroutine", [False, True])
def test_a_call_queued_for_a_slot_is_not_started_as_the_loop_ends(tmp_path: Path, coroutine: bool) -> None:
    """Call 1's prepare outlived its deadline and kept the tool's one slot; call 2 waited for
    it. The loop's end let call 1's prepare return (the app's cleanup, or the cancel itself),
    whose slot started call 2, in a task made after asyncio.run took its list of tasks, while
    the app's cleanup kept the loop running: no call's task had been cancelled, so nothing
    said the loop was ending, and call 2 journaled its prepare, never aborted."""
    tool, path = _SlotHolder(coroutine), tmp_path / "journal.sqlite"
    began = threading.Event()  # call 2's prepare was journaled: it started
    tasks: list[asyncio.Future[None]] = []

    class Watched(inert.SqliteJournal):
        def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
            if record.arguments["n"] == 2:
                began.set()
            return super().begin(record, turn_key)

    def hold_the_loop(runtime: AsyncRuntime) -> asyncio.Future[None]:
        """The app's cleanup: once cancelled, it lets call 1's prepare go on and keeps the
        loop running until call 2 is concluded (not started) or has begun."""

        async def hold() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                tool.release.set()
                while runtime._scheduler.in_flight and not began.is_set():
                    await asyncio.sleep(0)

        return asyncio.ensure_future(hold())

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, _FrozenClock)
        # Footprints apart, so that only the slot holds call 2 back.
        spec = inert.ToolSpec("write", reads=lambda a: [a["n"]], writes=lambda a: [a["n"]], timeout=10.0)
        orch = inert.AsyncOrchestrator(
            {"t": spec}, {"t": tool}, turn_key="t", journal=Watched(str(path)), limits={"t": 1}
        )
        runtime = orch._s.runtime
        assert isinstance(runtime, AsyncRuntime)
        await orch.draft([block("t", n=1)])
        await asyncio.to_thread(tool.inside.wait, WATCHDOG)
        loop.now += 11.0  # call 1's deadline passes; its prepare runs on, in the slot

        def in_flight() -> int:
            return runtime._scheduler.in_flight

        while in_flight():
            await asyncio.sleep(0)
        await orch.draft([block("t", n=2)])  # waits for the slot; its wait's deadline never comes
        assert in_flight() == 1
        tasks.append(hold_the_loop(runtime))

    with asyncio.Runner(loop_factory=_FrozenClock) as runner:
        runner.run(main())
    tool.release.set()
    # Call 1's late prepare is journaled (and, plain, aborted) by a worker, after the loop.
    done = [("t", "error", "")] if coroutine else [("t", "ok", ""), ("t", "ok", "")]
    _wait_for(lambda: [(t, s, "") for t, s, _ in _journal_of(path)] == done)
    assert not began.is_set(), "call 2 was started as the loop ended"
    assert [e.arguments["n"] for e in inert.SqliteJournal(str(path)).entries()] == [1] * len(done)
    assert "prepare 2" not in tool.log
    recovered = inert.recover(str(path))
    assert recovered.prepared == [] and recovered.in_doubt == []


def test_a_lookup_the_loop_cuts_off_is_done_before_the_journal_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handler in ``async with AsyncOrchestrator(journal=PATH)``: the loop ended while a
    two-phase call looked its key up before preparing. The lookup's wait was not shielded, so
    the call concluded at once and the journal inert opened was closed while the lookup still
    read it ("cannot operate on a closed database")."""
    path = tmp_path / "journal.sqlite"
    inside, go, closed, looked = (threading.Event() for _ in range(4))
    failures: list[BaseException] = []
    lookup, close = inert.SqliteJournal.lookup, inert.SqliteJournal.close
    tasks: list[asyncio.Future[None]] = []

    def held_lookup(self: inert.SqliteJournal, commit_key: str) -> inert.JournalEntry | None:
        inside.set()
        go.wait(WATCHDOG)
        closed.wait(2.0)  # bounded: a close meanwhile (fixed, none comes, and it waits out its bound)
        try:
            return lookup(self, commit_key)
        except BaseException as exc:
            failures.append(exc)
            raise
        finally:
            looked.set()

    def noted_close(self: inert.SqliteJournal) -> None:
        closed.set()
        close(self)

    monkeypatch.setattr(inert.SqliteJournal, "lookup", held_lookup)
    monkeypatch.setattr(inert.SqliteJournal, "close", noted_close)

    async def handler() -> None:
        async with inert.AsyncOrchestrator({"t": "write"}, {"t": _Staged()}, turn_key="t", journal=str(path)) as orch:
            await orch.draft([block("t", n=1)])
            await asyncio.Event().wait()

    async def main() -> None:
        tasks.append(asyncio.ensure_future(handler()))
        await asyncio.to_thread(inside.wait, WATCHDOG)
        tasks.append(_set_when_the_loop_ends(go))

    asyncio.run(main())
    assert looked.wait(WATCHDOG)
    monkeypatch.undo()
    assert failures == []
    assert closed.wait(WATCHDOG)


def test_a_turn_whose_first_loop_ended_is_reported_on_the_next(tmp_path: Path) -> None:
    """asyncio.run ended with a coroutine read still in its tool (cancelled, in doubt): every
    later finish() or close() raised LoopError, "use one orchestrator per loop", for ever, so
    the turn's report (what committed, what is in doubt) could never be had."""
    inside = threading.Event()

    async def hang(**_: Any) -> None:
        inside.set()
        await asyncio.Event().wait()

    orch = inert.AsyncOrchestrator({"h": "read_only"}, {"h": hang}, turn_key="t", journal=tmp_path / "j.sqlite")

    async def first() -> None:
        await orch.draft([block("h", q=1)])
        await orch.verify(1)
        await asyncio.to_thread(inside.wait, WATCHDOG)

    asyncio.run(first())
    report = asyncio.run(orch.finish(strict=False))
    (result,) = report.results
    assert isinstance(result.error, inert.InDoubtError)
    assert [e.commit_key for e in inert.recover(tmp_path / "j.sqlite").in_doubt] == [result.commit_key]
    assert asyncio.run(orch.close()) is None  # over


def test_a_loop_closed_with_a_call_still_on_it_says_so() -> None:
    """A loop closed (not run out) with a call's task still pending: the turn cannot be
    settled there, and the LoopError says the first loop has ended."""
    inside = threading.Event()

    async def hang(**_: Any) -> None:
        inside.set()
        await asyncio.Event().wait()

    orch = inert.AsyncOrchestrator({"h": "read_only"}, {"h": hang}, turn_key="t")
    loop = asyncio.new_event_loop()

    async def first(orch: inert.AsyncOrchestrator) -> None:
        await orch.draft([block("h", q=1)])
        await asyncio.to_thread(inside.wait, WATCHDOG)

    loop.run_until_complete(first(orch))
    loop.close()
    with pytest.raises(inert.LoopError, match="it has ended, with calls of this turn still on it"):
        asyncio.run(orch.finish())
    del orch, loop
    gc.collect()  # here, where asyncio's "Task was destroyed but it is pending" is captured as the test's log
