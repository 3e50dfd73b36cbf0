"""A speculative read whose block is rejected while it runs holds no one back:
its result will be discarded, so a later conflicting call need not wait for it.
A rejected two-phase prepare still does (its abort may free what the next prepare needs)."""

from __future__ import annotations

import asyncio
import threading

import inert
from tools import block

WAIT = 10.0  # a hang guard only: every wait below is released by an event the test sets


def _effects() -> inert.EffectTable:
    return inert.EffectTable(
        {
            "get": inert.ToolSpec("read_only", reads="key"),
            "put": inert.ToolSpec("write", writes="key"),
        }
    )


def test_a_rejected_running_read_does_not_hold_a_later_write() -> None:
    read_started, read_may_return, wrote = threading.Event(), threading.Event(), threading.Event()
    read_returned = threading.Event()

    def get(key: str) -> str:
        read_started.set()
        read_may_return.wait(WAIT)
        read_returned.set()
        return "stale"

    def put(key: str) -> None:
        wrote.set()

    orch = inert.Orchestrator(_effects(), {"get": get, "put": put}, policy="read_eager")
    try:
        orch.draft([block("get", key="k")])
        assert read_started.wait(WAIT)
        orch.verify(0, correction=block("put", key="k"))
        # The write runs while the rejected read is still inside its tool.
        assert wrote.wait(WAIT)
        assert not read_returned.is_set(), "a rejected read held a later conflicting write until it returned"
    finally:
        read_may_return.set()
    report = orch.finish()
    assert [c.name for c in report.accepted] == ["put"]


def test_a_rejected_running_read_does_not_hold_a_later_write_under_asyncio() -> None:
    async def main() -> None:
        read_started, read_may_return, wrote = asyncio.Event(), asyncio.Event(), asyncio.Event()
        read_returned = asyncio.Event()

        async def get(key: str) -> str:
            read_started.set()
            # Shielded from cancellation: a read that ignores it still must not hold the write.
            try:
                await asyncio.shield(read_may_return.wait())
            except asyncio.CancelledError:
                await read_may_return.wait()
            read_returned.set()
            return "stale"

        async def put(key: str) -> None:
            wrote.set()

        orch = inert.AsyncOrchestrator(_effects(), {"get": get, "put": put}, policy="read_eager")
        await orch.draft([block("get", key="k")])
        await asyncio.wait_for(read_started.wait(), WAIT)
        await orch.verify(0, correction=block("put", key="k"))
        await asyncio.wait_for(wrote.wait(), WAIT)
        assert not read_returned.is_set(), "a rejected read held a later conflicting write until it returned"
        read_may_return.set()
        report = await orch.finish()
        assert [c.name for c in report.accepted] == ["put"]

    asyncio.run(main())


class Staged:
    """A two-phase tool whose prepare takes a lock that only its commit or abort gives back."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.first_prepare_in = threading.Event()
        self.first_may_return = threading.Event()
        self.log: list[str] = []

    def prepare(self, key: str, value: int) -> int:
        if not self.log:
            self.first_prepare_in.set()
            self.first_may_return.wait(WAIT)
        # Held across phases; a second prepare entering while it is held would deadlock a small pool.
        assert self.lock.acquire(blocking=False), "a prepare ran while an earlier one was still staged"
        self.log.append(f"prepare {value}")
        return value

    def commit(self, prepared: int, *, idempotency_key: str) -> int:
        self.log.append(f"commit {prepared}")
        self.lock.release()
        return prepared

    def abort(self, prepared: int) -> None:
        self.log.append(f"abort {prepared}")
        self.lock.release()


def test_a_rejected_prepare_holds_the_next_prepare_until_it_aborts() -> None:
    tool = Staged()
    effects = inert.EffectTable({"set": inert.ToolSpec("write", writes="key")})
    orch = inert.Orchestrator(effects, {"set": tool}, policy="read_eager")
    try:
        orch.draft([block("set", key="k", value=1)])
        assert tool.first_prepare_in.wait(WAIT)
        orch.verify(0, correction=block("set", key="k", value=2))
    finally:
        tool.first_may_return.set()
    report = orch.finish()
    assert tool.log == ["prepare 1", "abort 1", "prepare 2", "commit 2"]
    assert [c.arguments for c in report.accepted] == [{"key": "k", "value": 2}]


def test_a_rejected_call_of_unknown_footprint_bars_no_one() -> None:
    """A misspelled tool is a write of unknown footprint; rejected, it never runs, so a
    later read that conflicts with nothing still running must not wait behind it."""
    wrote_in, write_may_return, got = threading.Event(), threading.Event(), threading.Event()
    write_returned = threading.Event()

    def put(key: str) -> None:
        wrote_in.set()
        write_may_return.wait(WAIT)
        write_returned.set()

    def get(key: str) -> str:
        got.set()
        return "fresh"

    orch = inert.Orchestrator(_effects(), {"get": get, "put": put}, policy="read_eager")
    try:
        orch.draft([block("put", key="k")])
        orch.verify(1)
        assert wrote_in.wait(WAIT)
        orch.draft([block("pt", key="k")])  # unknown tool: unknown footprint, waits for the write
        orch.verify(0, correction=block("get", key="other"))
        assert got.wait(WAIT)
        assert not write_returned.is_set(), "a rejected call that never runs held a later, unrelated read"
    finally:
        write_may_return.set()
    report = orch.finish()
    assert [c.name for c in report.accepted] == ["put", "get"]
