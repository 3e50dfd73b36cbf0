"""A per-tool limit holds while the tool runs, not only while the call does: a call
concluded at its deadline (or a read cancelled because its block was rejected) keeps its
tool slot until its tool actually returns, so ``limits={"w": 1}`` never lets a second
``w`` run beside a first one still inside the tool (a limit guarding a non-thread-safe
resource must hold). The caller still gets every timeout on time: a call waiting for a slot
held past a deadline gives up at its own deadline without running, and an abort (a
cleanup) never waits for a slot."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import inert
from tools import WATCHDOG, block, deadlines_only_for, finish_within

GRACE = 0.5  # seconds the second call is given to start beside the first, wrongly


def _first_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the first call (held in its tool) has the short deadline, and it fires once that
    call is inside its tool: the second returns at once when it runs, and must not time out
    if the machine stalls meanwhile."""
    deadlines_only_for(monkeypatch, lambda d, _: d.arguments["n"] == 1)


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


def test_a_timed_out_call_holds_its_tool_slot_until_its_tool_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    _first_is_held(monkeypatch)
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
    assert isinstance(first.error, inert.ToolTimeoutError)
    _ran_after_or_gave_up(second)
    assert tool.peak == 1


def _ran_after_or_gave_up(call: inert.CallResult) -> None:
    """The second call ran once the first's tool returned, or, if its own deadline passed
    first while the slot was held past the first's deadline, it never ran at all."""
    assert (call.result, call.error) == (2, None) or "could not start" in str(call.error), call


def test_the_caller_still_gets_the_timeout_on_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Holding the slot does not hold the turn: finish() returns at the deadline while the
    tool is still inside (the second call, behind the slot, has not run then)."""
    _first_is_held(monkeypatch)
    tool = Guarded()
    orch = inert.Orchestrator(_effects(), {"w": tool}, turn_key="t", limits={"w": 1}, timeout=0.1)
    orch.draft([block("w", n=1)])
    orch.verify(1)
    assert tool.first_inside.wait(WATCHDOG)
    [call] = finish_within(orch).results
    assert isinstance(call.error, inert.ToolTimeoutError)
    assert tool.inside == 1, "finish() returned while the tool is still running, as a timeout must"
    tool.release.set()


def test_a_batch_limit_holds_across_sequences_past_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    _first_is_held(monkeypatch)
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
        _ran_after_or_gave_up(batch.finish(1, strict=False).results[0])
    assert tool.peak == 1


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, WATCHDOG))


def test_async_a_timed_out_plain_tool_holds_its_slot_until_its_thread_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _first_is_held(monkeypatch)
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
    assert isinstance(first.error, inert.ToolTimeoutError)
    _ran_after_or_gave_up(second)
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


# -- a slot held past a deadline never holds the turn: the caller still gets every timeout --


def test_a_call_behind_a_slot_held_past_a_deadline_times_out_without_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first w never returns (until the test ends); the second, committed, waits for its
    slot: at its own deadline it fails without running, and finish() returns."""
    _first_is_held(monkeypatch)
    tool = Guarded()
    orch = inert.Orchestrator(_effects(), {"w": tool}, turn_key="t", limits={"w": 1}, timeout=0.1)
    orch.draft([block("w", n=1), block("w", n=2)])
    orch.verify(2)
    try:
        first, second = finish_within(orch).results
    finally:
        tool.release.set()
    assert isinstance(first.error, inert.ToolTimeoutError) and "did not return" in str(first.error)
    assert isinstance(second.error, inert.ToolTimeoutError) and "could not start" in str(second.error)
    assert not tool.second_started.is_set() and tool.peak == 1


def test_async_a_call_behind_a_slot_held_past_a_deadline_times_out_without_running() -> None:
    tool = Guarded()

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator(_effects(), {"w": tool}, turn_key="t", limits={"w": 1}, timeout=0.1)
        await orch.draft([block("w", n=1), block("w", n=2)])
        await orch.verify(2)
        return await orch.finish(strict=False)

    try:
        _, second = _run(main()).results
    finally:
        tool.release.set()
    assert "could not start" in str(second.error) and not tool.second_started.is_set()


def test_a_batch_sequence_is_not_held_by_another_sequences_hung_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    _first_is_held(monkeypatch)
    tool = Guarded()
    vocab = inert.Vocabulary([block("w", n=1), block("w", n=2)])
    batch = inert.BatchOrchestrator(_effects(), {"w": tool}, vocab=vocab, limits={"w": 1}, timeout=0.1)
    try:
        batch.add(0, "a")
        batch.add(1, "b")
        batch.draft([0, 1], [[0], [1]])
        batch.verify([0, 1], [1, 1])
        [second] = finish_within(_Finish(batch, 1)).results
        assert "could not start" in str(second.error)
        finish_within(_Finish(batch, 0))
    finally:
        tool.release.set()
        batch.close()


class _Finish:
    """``finish_within`` for one sequence of a batch."""

    def __init__(self, batch: inert.BatchOrchestrator, seq: int) -> None:
        self.batch, self.seq = batch, seq

    def finish(self, strict: bool = False) -> inert.Report:
        return self.batch.finish(self.seq, strict=strict)


class HungCommit:
    """A two-phase tool whose commit of n=1 never returns (until released)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, int]] = []
        self.release = threading.Event()

    def prepare(self, n: int) -> int:
        with self.lock:
            self.events.append(("prepare", n))
        return n

    def commit(self, prepared: int, *, idempotency_key: str) -> int:
        if prepared == 1:
            self.release.wait(3 * WATCHDOG)  # longer than the test waits for close()
        with self.lock:
            self.events.append(("commit", prepared))
        return prepared

    def abort(self, prepared: int) -> None:
        with self.lock:
            self.events.append(("abort", prepared))


def test_an_abort_never_waits_for_a_slot_a_hung_commit_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sequence 0's commit hangs past its deadline, keeping the only slot; sequence 1's call
    is prepared and still undecided when the batch closes: its abort runs at once (a cleanup
    needs no slot), and close() returns. Only the hung commit's deadline is short."""
    deadlines_only_for(monkeypatch, lambda d, phase: d.arguments["n"] == 1 and phase == "commit")
    tool = HungCommit()
    vocab = inert.Vocabulary([block("t", n=1), block("t", n=2)])
    effects = {"t": inert.ToolSpec("write", reads=lambda a: [a["n"]], writes=lambda a: [a["n"]])}
    batch = inert.BatchOrchestrator(effects, {"t": tool}, vocab=vocab, limits={"t": 1}, timeout=0.1)
    try:
        batch.add(0, "a")
        batch.add(1, "b")
        batch.draft([1], [[1]])  # prepared first: it gives its slot back and waits for its block
        _wait_until(lambda: ("prepare", 2) in tool.events)
        batch.draft([0], [[0]])
        batch.verify([0], [1])  # sequence 0 prepares and commits: the commit hangs
        _wait_until(lambda: ("prepare", 1) in tool.events)
        with pytest.warns(inert.TurnAbandonedWarning):
            closed = _within(batch.close)
        assert ("abort", 2) in tool.events and [d.name for d in closed[1].discarded] == ["t"]
    finally:
        tool.release.set()


def _wait_until(condition: Any) -> None:
    deadline = time.monotonic() + WATCHDOG
    while not condition():
        assert time.monotonic() < deadline, "the workers never got there"
        time.sleep(0.01)


def _within(fn: Any) -> Any:
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    worker.join(WATCHDOG)
    assert out, "it did not return: the batch hangs"
    return out[0]
