"""A per-tool limit holds while the tool runs, not only while the call does: a call
concluded at its deadline (or a read cancelled because its block was rejected) keeps its
tool slot until its tool actually returns, so ``limits={"w": 1}`` never lets a second
``w`` run beside a first one still inside the tool (a limit guarding a non-thread-safe
resource must hold). The caller still gets the timeout on time."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import inert
from tools import WATCHDOG, block, finish_within

GRACE = 0.5  # seconds the second call is given to start beside the first, wrongly


class Guarded:
    """A tool over a resource that must never be used by two calls at once: the first
    call stays inside until released; every call records how many were inside with it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.peak = 0
        self.first_inside = threading.Event()
        self.release = threading.Event()
        self.second_started = threading.Event()

    def __call__(self, n: int) -> int:
        with self.lock:
            self.inside += 1
            self.peak = max(self.peak, self.inside)
        try:
            if n == 1:
                self.first_inside.set()
                self.release.wait(WATCHDOG)
            else:
                self.second_started.set()
            return n
        finally:
            with self.lock:
                self.inside -= 1


def _effects(effect: str = "write") -> dict[str, inert.ToolSpec]:
    # Footprints apart: stream order lets the second call go once the first is over;
    # only the limit can hold it back.
    return {"w": inert.ToolSpec(effect, reads=lambda a: [a["n"]], writes=lambda a: [a["n"]])}


def _timed_out(journal: inert.Journal, key: str) -> None:
    """Waits until the journal holds the first call's timeout (its deadline concluded it)."""
    deadline = time.monotonic() + WATCHDOG
    while time.monotonic() < deadline:
        entry = journal.lookup(key)
        if entry is not None and entry.status is not None:
            return
        time.sleep(0.01)
    raise AssertionError("the first call never timed out")


def test_a_timed_out_call_holds_its_tool_slot_until_its_tool_returns() -> None:
    tool = Guarded()
    calls = [block("w", n=1), block("w", n=2)]
    orch = inert.Orchestrator(_effects(), {"w": tool}, turn_key="t", limits={"w": 1}, timeout=0.1)
    orch.draft(calls)
    orch.verify(2)
    assert tool.first_inside.wait(WATCHDOG)
    _timed_out(orch.journal, inert.commit_key("t", calls[:1]))
    assert not tool.second_started.wait(GRACE), "a second w ran beside the first, still inside the tool"
    tool.release.set()
    first, second = finish_within(orch).results
    assert isinstance(first.error, inert.ToolTimeoutError) and (second.result, second.error) == (2, None)
    assert tool.peak == 1


def test_the_caller_still_gets_the_timeout_on_time() -> None:
    """Holding the slot does not hold the turn: finish() returns at the deadline while the
    tool is still inside (the second call, behind the slot, has not run then)."""
    tool = Guarded()
    orch = inert.Orchestrator(_effects(), {"w": tool}, turn_key="t", limits={"w": 1}, timeout=0.1)
    orch.draft([block("w", n=1)])
    orch.verify(1)
    assert tool.first_inside.wait(WATCHDOG)
    [call] = finish_within(orch).results
    assert isinstance(call.error, inert.ToolTimeoutError)
    assert tool.inside == 1, "finish() returned while the tool is still running, as a timeout must"
    tool.release.set()


def test_a_batch_limit_holds_across_sequences_past_a_timeout() -> None:
    tool = Guarded()
    vocab = inert.Vocabulary([block("w", n=1), block("w", n=2)])
    with inert.BatchOrchestrator(_effects(), {"w": tool}, vocab=vocab, limits={"w": 1}, timeout=0.1) as batch:
        batch.add(0, "a")
        batch.add(1, "b")
        batch.draft([0], [[0]])
        batch.verify([0], [1])
        assert tool.first_inside.wait(WATCHDOG)
        _timed_out(batch.journal, inert.commit_key("a", [0]))  # drafted as ids: keyed by ids
        batch.draft([1], [[1]])
        batch.verify([1], [1])
        assert not tool.second_started.wait(GRACE), "sequence 1's w ran beside sequence 0's, still inside"
        tool.release.set()
        assert isinstance(batch.finish(0, strict=False).results[0].error, inert.ToolTimeoutError)
        assert batch.finish(1).results[0].result == 2
    assert tool.peak == 1


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, WATCHDOG))


def test_async_a_timed_out_plain_tool_holds_its_slot_until_its_thread_returns() -> None:
    tool = Guarded()
    calls = [block("w", n=1), block("w", n=2)]

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator(_effects(), {"w": tool}, turn_key="t", limits={"w": 1}, timeout=0.1)
        await orch.draft(calls)
        await orch.verify(2)
        await asyncio.to_thread(tool.first_inside.wait, WATCHDOG)
        await asyncio.to_thread(_timed_out, orch.journal, inert.commit_key("t", calls[:1]))
        assert not await asyncio.to_thread(tool.second_started.wait, GRACE), "a second w ran beside the first"
        tool.release.set()
        return await orch.finish(strict=False)

    first, second = _run(main()).results
    assert isinstance(first.error, inert.ToolTimeoutError) and second.result == 2
    assert tool.peak == 1


def test_async_a_cancelled_read_holds_its_slot_until_its_thread_returns() -> None:
    """A speculative read whose block is rejected is cancelled; its plain function goes on
    in its thread, and the next read of the tool waits for it."""
    tool = Guarded()

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator(_effects("read_only"), {"w": tool}, turn_key="t", limits={"w": 1})
        await orch.draft([block("w", n=1)])
        await asyncio.to_thread(tool.first_inside.wait, WATCHDOG)
        await orch.verify(0)  # rejected: the read is cancelled, its thread still inside the tool
        await orch.draft([block("w", n=2)])
        await orch.verify(1)
        assert not await asyncio.to_thread(tool.second_started.wait, GRACE), "a second w ran beside the first"
        tool.release.set()
        return await orch.finish()

    report = _run(main())
    assert [r.result for r in report.results] == [2] and len(report.discarded) == 1
    assert tool.peak == 1
