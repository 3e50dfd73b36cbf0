"""Two-phase tools under AsyncOrchestrator: a prepare that outlives its deadline is
aborted when it returns, after finish() too (the turn's workers are stopped by then, and
the loop may be gone), and ``inert.current_call()`` is the call in every phase of a plain
(non-coroutine) two-phase tool, as under the thread Orchestrator."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import inert
from tools import WATCHDOG, block, deadlines_only_for


class SlowPrepare:
    """Its prepare stays inside until released; records every phase and the call it saw."""

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.release = threading.Event()
        self.aborted = threading.Event()
        self.events: list[str] = []
        self.seen: list[tuple[str, str | None]] = []

    def _saw(self, phase: str) -> None:
        call = inert.current_call()
        self.seen.append((phase, None if call is None else call.commit_key))

    def prepare(self, **arguments: Any) -> dict[str, Any]:
        self._saw("prepare")
        self.inside.set()
        self.release.wait(WATCHDOG)
        self.events.append("prepare")
        return arguments

    def commit(self, prepared: dict[str, Any], *, idempotency_key: str) -> str:
        self._saw("commit")
        self.events.append("commit")
        return "done"

    def abort(self, prepared: dict[str, Any]) -> None:
        self._saw("abort")
        self.events.append("abort")
        self.aborted.set()


class SlowAsyncPrepare:
    """The same with coroutine phases, released by an asyncio event."""

    def __init__(self) -> None:
        self.inside = asyncio.Event()
        self.release = asyncio.Event()
        self.aborted = asyncio.Event()
        self.events: list[str] = []

    async def prepare(self, **arguments: Any) -> dict[str, Any]:
        self.inside.set()
        await self.release.wait()
        self.events.append("prepare")
        return arguments

    async def commit(self, prepared: dict[str, Any], *, idempotency_key: str) -> str:
        self.events.append("commit")
        return "done"

    async def abort(self, prepared: dict[str, Any]) -> None:
        self.events.append("abort")
        self.aborted.set()


def _phases(journal: inert.Journal) -> list[tuple[str, str | None]]:
    return sorted((e.commit_key.split("/")[1], e.status) for e in journal.entries() if "/" in e.commit_key)


def _prepare_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the held prepare's deadline is short: the abort after it returns at once, and a
    stall of the machine must not time it out (its journal entry says "ok")."""
    deadlines_only_for(monkeypatch, lambda _, phase: phase == "prepare")


def test_a_plain_prepare_past_its_deadline_is_aborted_after_the_loop_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    _prepare_is_held(monkeypatch)
    tool = SlowPrepare()
    journal = inert.MemoryJournal()

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"pay": "write"}, {"pay": tool}, turn_key="t", timeout=0.1, journal=journal)
        await orch.draft([block("pay", to="ana")])
        await asyncio.to_thread(tool.inside.wait, WATCHDOG)
        return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

    report = asyncio.run(main())  # the turn ends at the deadline; the loop closes with the prepare inside
    assert [type(d).__name__ for d in report.discarded] == ["DiscardedCall"]
    tool.release.set()
    assert tool.aborted.wait(WATCHDOG), "what the late prepare staged was never dropped"
    assert tool.events == ["prepare", "abort"]


def test_a_coroutine_prepare_past_its_deadline_is_aborted_after_finish(monkeypatch: pytest.MonkeyPatch) -> None:
    _prepare_is_held(monkeypatch)
    tool = SlowAsyncPrepare()
    journal = inert.MemoryJournal()

    async def main() -> None:
        orch = inert.AsyncOrchestrator({"pay": "write"}, {"pay": tool}, turn_key="t", timeout=0.1, journal=journal)
        await orch.draft([block("pay", to="ana")])
        await asyncio.wait_for(tool.inside.wait(), WATCHDOG)
        await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)
        problems: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, context: problems.append(context))
        tool.release.set()  # after finish() stopped the turn's workers
        await asyncio.wait_for(tool.aborted.wait(), WATCHDOG)
        for _ in range(int(WATCHDOG * 100)):  # the abort's journal entry is written on a worker after it returns
            if ("abort", "ok") in _phases(journal):
                break
            await asyncio.sleep(0.01)
        assert problems == []

    asyncio.run(main())
    assert tool.events == ["prepare", "abort"]
    assert _phases(journal) == [("abort", "ok"), ("prepare", "ok")]


def test_current_call_in_every_phase_of_a_plain_two_phase_tool() -> None:
    tool = SlowPrepare()
    tool.release.set()
    calls = [block("pay", to="ana"), block("pay", to="bo")]

    async def main() -> inert.Report:
        apart = inert.ToolSpec("write", reads=lambda a: [a["to"]], writes=lambda a: [a["to"]])
        orch = inert.AsyncOrchestrator({"pay": apart}, {"pay": tool}, turn_key="t")
        await orch.draft(calls)
        await orch.verify(1)  # the first commits, the second aborts
        return await asyncio.wait_for(orch.finish(), WATCHDOG)

    report = asyncio.run(main())
    first, second = inert.commit_key("t", calls[:1]), inert.commit_key("t", calls)
    assert [r.result for r in report.results] == ["done"]
    assert sorted(tool.seen) == sorted([("prepare", first), ("prepare", second), ("commit", first), ("abort", second)])


@pytest.mark.parametrize("coroutine", [False, True], ids=["plain", "coroutine"])
@pytest.mark.parametrize("phase", ["commit", "abort"])
def test_a_phase_raising_generator_exit_is_recorded_not_hung(phase: str, coroutine: bool) -> None:
    """A GeneratorExit set on a task's future is thrown into the awaiting task, where it
    closes the coroutines it awaits instead of reaching their handlers: the call never
    concluded and finish() waited for ever."""

    def fail() -> None:
        raise GeneratorExit("from the tool")

    class Plain:
        def prepare(self, n: int) -> int:
            return n

        def commit(self, prepared: int, *, idempotency_key: str) -> int:
            fail()
            return prepared

        def abort(self, prepared: int) -> None:
            fail()

    class Coroutine:
        async def prepare(self, n: int) -> int:
            return n

        async def commit(self, prepared: int, *, idempotency_key: str) -> int:
            fail()
            return prepared

        async def abort(self, prepared: int) -> None:
            fail()

    tool = Coroutine() if coroutine else Plain()

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": tool}, turn_key="t")
        await orch.draft([block("t", n=1)])
        await orch.verify(1 if phase == "commit" else 0)
        return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

    report = asyncio.run(main())
    if phase == "commit":
        [call] = report.results
        assert isinstance(call.error, GeneratorExit)
    else:
        assert [d.name for d in report.discarded] == ["t"]
