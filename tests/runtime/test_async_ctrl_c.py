"""A Ctrl-C landing in a call's task under a bare ``loop.run_until_complete`` (found by a
helper): the KeyboardInterrupt is never the call's own error and is never swallowed. The
call concludes as what is known of it (here: it never ran), its outcome journaled, and the
interrupt leaves the loop; finish() again returns the report. The signal is raised by the
code it lands in; a watchdog stops a loop that would hang."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sqlite3
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

import inert
from inert.runtime import AsyncRuntime
from tools import WATCHDOG, LoggedPhases, block


def _signal_at(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The first call of ``AsyncRuntime.name`` (a coroutine method) gets a real SIGINT first."""
    real = getattr(AsyncRuntime, name)

    async def hit(self: AsyncRuntime, *args: Any) -> Any:
        monkeypatch.setattr(AsyncRuntime, name, real)
        signal.raise_signal(signal.SIGINT)
        return await real(self, *args)

    monkeypatch.setattr(AsyncRuntime, name, hit)


def _turn(
    orch: inert.AsyncOrchestrator, steps: list[Callable[[], Coroutine[Any, Any, Any]]], caplog: pytest.LogCaptureFixture
) -> tuple[inert.Report, int]:
    """Runs ``steps`` then finish() on a bare loop, each retried once after a Ctrl-C; returns
    the report and how many KeyboardInterrupts reached the caller."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    loop = asyncio.new_event_loop()
    interrupts = 0

    def run(step: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        nonlocal interrupts
        watchdog = loop.call_later(WATCHDOG, loop.stop)  # a hang stops the loop: RuntimeError, not for ever
        try:
            return loop.run_until_complete(step())
        except KeyboardInterrupt:
            interrupts += 1
            # The step's task may have ended as the Ctrl-C left the loop: the callback that stops
            # the loop for run_until_complete is queued then, and would stop whichever step runs
            # next (a race: it failed a CI run). It is run out here, in one pass of the loop.
            loop.call_soon(loop.stop)
            loop.run_forever()
            return None
        finally:
            watchdog.cancel()

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        try:
            for step in steps:
                run(step)
            report = run(lambda: orch.finish(strict=False))
            if report is None:
                report = run(lambda: orch.finish(strict=False))  # again, after the Ctrl-C: the report
            loop.run_until_complete(asyncio.sleep(0))
        finally:
            loop.close()
        gc.collect()
    said = [r.getMessage() for r in caplog.records]
    assert [m for m in said if "never retrieved" in m or "unhandled" in m] == []
    assert isinstance(report, inert.Report)
    return report, interrupts


@pytest.mark.parametrize("where", ["_invoke", "_call", "_tool_in_thread"])
def test_a_ctrl_c_before_a_writes_tool_is_called_is_raised_and_the_write_never_ran(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """It was caught by the task's ``except BaseException`` and recorded as the call's error:
    the write never ran and no one heard the Ctrl-C."""
    ran: list[int] = []
    path = tmp_path / "journal.sqlite"
    orch = inert.AsyncOrchestrator({"put": "write"}, {"put": ran.append}, turn_key="t", journal=str(path))
    _signal_at(monkeypatch, where)
    report, interrupts = _turn(orch, [lambda: orch.draft([block("put", n=1)]), lambda: orch.verify(1, ".")], caplog)
    assert interrupts == 1, "the Ctrl-C reached the caller"
    assert ran == []
    error = report.results[0].error
    assert isinstance(error, inert.CancelledCallError) and "never ran" in str(error)
    assert [(e.status, "never ran" in (e.error or "")) for e in inert.SqliteJournal(str(path)).entries()] == [
        ("error", True)
    ]
    assert inert.recover(str(path)).in_doubt == []


def test_a_ctrl_c_as_a_calls_task_begins_concludes_it_as_never_run(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Its task died before its body's handlers, and the call was concluded in doubt."""
    ran: list[int] = []
    orch = inert.AsyncOrchestrator({"put": "write"}, {"put": ran.append}, turn_key="t")
    _signal_at(monkeypatch, "_run")
    report, interrupts = _turn(orch, [lambda: orch.draft([block("put", n=1)]), lambda: orch.verify(1, ".")], caplog)
    assert interrupts == 1 and ran == []
    error = report.results[0].error
    assert isinstance(error, inert.CancelledCallError) and "never ran" in str(error)


def test_a_ctrl_c_before_a_commit_aborts_what_the_prepare_staged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The commit never ran and the prepare was left pending for ever (``inert recover``)."""
    tool, path = LoggedPhases(), tmp_path / "journal.sqlite"
    orch = inert.AsyncOrchestrator({"c": "write"}, {"c": tool}, turn_key="t", journal=str(path))
    _signal_at(monkeypatch, "_commit")
    report, interrupts = _turn(orch, [lambda: orch.draft([block("c", n=1)]), lambda: orch.verify(1, ".")], caplog)
    assert interrupts == 1
    error = report.results[0].error
    assert isinstance(error, inert.CancelledCallError) and "never ran" in str(error)
    recovered = inert.recover(str(path))
    assert recovered.prepared == [] and recovered.in_doubt == []
    assert tool.log == ["prepare", "abort"]


def test_a_ctrl_c_inside_a_coroutine_tool_is_raised_and_its_call_is_in_doubt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A Ctrl-C while a coroutine tool computes on the loop raises its KeyboardInterrupt in the
    tool's own frames: it was taken for one the tool raised, recorded as the call's error, and
    no one heard the Ctrl-C. It is told apart now (``SignalsTold``): the caller hears it, and
    the write, which had begun, is in doubt (``inert recover``). A KeyboardInterrupt the tool
    raises itself stays its error (tests/runtime/test_runtime.py)."""
    ran: list[int] = []

    async def put(n: int) -> int:
        ran.append(n)
        signal.raise_signal(signal.SIGINT)  # handled right here, in the tool's frame
        return n

    path = tmp_path / "journal.sqlite"
    effects = {"put": "write", "get": "read_only"}
    tools = {"put": put, "get": lambda n: n}
    orch = inert.AsyncOrchestrator(effects, tools, turn_key="t", journal=str(path))
    blocks = [block("put", n=1), block("get", n=2)]
    report, interrupts = _turn(orch, [lambda: orch.draft(blocks), lambda: orch.verify(2, ".")], caplog)
    assert interrupts == 1, "the Ctrl-C reached the caller"
    assert ran == [1]
    put_result, get_result = report.results
    assert isinstance(put_result.error, inert.InDoubtError), put_result.error
    assert get_result.result == 2, "the other call still ran"
    assert [e.status for e in inert.recover(str(path)).in_doubt] == ["timeout"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "the default handler is back"


def test_finish_after_a_ctrl_c_that_stopped_the_loop_while_finish_waited() -> None:
    """A Ctrl-C while finish() waits for a call, under a bare ``loop.run_until_complete``,
    leaves the loop and cancels nothing: finish()'s task stays pending, still waiting. The
    next finish() raised StreamFinishedError ("another finish() ... is waiting") and the
    turn's report was never had. It waits with that task now, and both return the same
    report."""
    release = threading.Event()

    def slow(n: int) -> int:
        release.wait(WATCHDOG)
        return n

    def ctrl_c() -> None:  # what SIGINT's default handler raises, in the loop's own frame
        raise KeyboardInterrupt

    loop = asyncio.new_event_loop()
    try:
        orch = inert.AsyncOrchestrator({"s": "write"}, {"s": slow}, turn_key="t")
        loop.run_until_complete(orch.draft([block("s", n=1)]))
        loop.run_until_complete(orch.verify(1))
        stranded = loop.create_task(orch.finish())
        loop.call_soon(ctrl_c)  # after the task's first step: it waits for the call
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(stranded)
        assert not stranded.done()
        release.set()
        report = loop.run_until_complete(asyncio.wait_for(orch.finish(), WATCHDOG))
        assert [r.result for r in report.results] == [1]
        assert loop.run_until_complete(asyncio.wait_for(stranded, WATCHDOG)) is report
        with pytest.raises(inert.StreamFinishedError):
            loop.run_until_complete(orch.finish())
    finally:
        release.set()
        loop.close()


def test_close_after_a_ctrl_c_that_stopped_the_loop_while_finish_waited_waits_for_the_calls(
    tmp_path: Path,
) -> None:
    """As above, then ``close()`` (an ``async with`` exit): it returned None at once, the
    call still running and the journal inert opened never closed, since the stranded
    finish() that would close it is a task nothing awaits. It waits with it now."""
    release = threading.Event()
    done: list[int] = []

    def slow(n: int) -> int:
        release.wait(WATCHDOG)
        done.append(n)
        return n

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    loop = asyncio.new_event_loop()
    try:
        orch = inert.AsyncOrchestrator({"s": "write"}, {"s": slow}, turn_key="t", journal=tmp_path / "j.sqlite")
        loop.run_until_complete(orch.draft([block("s", n=1)]))
        loop.run_until_complete(orch.verify(1))
        stranded = loop.create_task(orch.finish())
        loop.call_soon(ctrl_c)
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(stranded)
        closing = loop.create_task(orch.close())
        loop.run_until_complete(asyncio.sleep(0))
        assert not closing.done(), "close() waits for the call"
        release.set()
        assert loop.run_until_complete(asyncio.wait_for(closing, WATCHDOG)) is None
        assert done == [1]
        journal = orch.journal
        assert isinstance(journal, inert.SqliteJournal)
        with pytest.raises(sqlite3.ProgrammingError):
            journal._db.execute("SELECT 1")  # closed by the turn's end
        report = loop.run_until_complete(asyncio.wait_for(stranded, WATCHDOG))
        assert [r.result for r in report.results] == [1]
    finally:
        release.set()
        loop.close()


def test_a_coroutine_tool_leaves_another_sigint_handler_alone() -> None:
    """``SignalsTold`` replaces only Python's default handler: under asyncio.run (whose own
    handler cancels the main task on a Ctrl-C, raising nothing inside a tool) the tool runs
    under asyncio's handler, and the default one is back once asyncio.run returns."""
    seen: list[object] = []

    async def look() -> int:
        seen.append(signal.getsignal(signal.SIGINT))
        return 1

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"look": "write"}, {"look": look}, turn_key="t")
        await orch.draft([block("look")])
        await orch.verify(1)
        return await asyncio.wait_for(orch.finish(), WATCHDOG)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    assert [r.result for r in asyncio.run(main()).results] == [1]
    assert len(seen) == 1 and seen[0] is not signal.default_int_handler
    assert getattr(seen[0], "__module__", None) != "inert.interrupts"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
