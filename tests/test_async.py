"""AsyncOrchestrator: the same gate on an asyncio loop."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import inert
from tools import block


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_coroutine_and_plain_tools() -> None:
    async def fetch(url: str) -> str:
        await asyncio.sleep(0.01)
        return f"body of {url}"

    def save(path: str) -> str:
        time.sleep(0.01)
        return f"saved {path}"

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"fetch": "read_only", "save": "write"}, {"fetch": fetch, "save": save})
        step = await orch.draft([block("fetch", url="a"), block("save", path="p")])
        assert [r.name for r in step.dispatched] == ["fetch"]
        step = await orch.verify(2)
        assert [r.name for r in step.dispatched] == ["save"]
        return await orch.finish()

    report = run(main())
    assert [(r.name, r.result, r.early) for r in report.results] == [
        ("fetch", "body of a", True), ("save", "saved p", False)]


def test_rejected_speculative_read_is_cancelled() -> None:
    started, finished = asyncio.Event(), []

    async def search(q: str) -> str:
        started.set()
        await asyncio.sleep(5)
        finished.append(q)
        return "late"

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"search": "read_only"}, {"search": search})
        await orch.draft([block("search", q="wrong")])
        await asyncio.wait_for(started.wait(), 2)
        await orch.verify(0, "never mind")
        return await orch.finish()

    t0 = time.perf_counter()
    report = run(main())
    assert time.perf_counter() - t0 < 2, "finish did not wait for the cancelled read"
    assert finished == [] and report.results == []
    assert [d.name for d in report.discarded] == ["search"]
    assert isinstance(report.dispatch_log[0].error, inert.CancelledCallError)


def test_stream_order_under_asyncio() -> None:
    """Ordered by events, not sleeps: the read of b runs early; the read of a waits for
    the unaccepted write of a, whatever the timing."""
    order: list[str] = []

    async def main() -> inert.Report:
        read_b = asyncio.Event()

        async def write(key: str) -> None:
            order.append(f"write {key}")

        async def read(key: str) -> None:
            order.append(f"read {key}")
            if key == "b":
                read_b.set()

        effects = {"write": inert.ToolSpec("write", reads="key", writes="key"),
                   "read": inert.ToolSpec("read_only", reads="key")}
        orch = inert.AsyncOrchestrator(effects, {"write": write, "read": read})
        await orch.draft([block("write", key="a"), block("read", key="a"), block("read", key="b")])
        await asyncio.wait_for(read_b.wait(), 30)
        assert order == ["read b"], "the read of a must not run while the write of a is unverified"
        await orch.verify(3)
        return await orch.finish()

    report = run(main())
    assert order == ["read b", "write a", "read a"] and report.violations == []


def test_async_timeout_and_journal(tmp_path: Any) -> None:
    async def hang() -> None:
        await asyncio.sleep(10)

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"hang": inert.ToolSpec("write", timeout=0.05)}, {"hang": hang},
                                       journal=tmp_path / "j.sqlite", turn_key="t")
        await orch.draft([block("hang")])
        await orch.verify(1)
        return await orch.finish(strict=False)

    report = run(main())
    assert isinstance(report.results[0].error, inert.ToolTimeoutError)
    assert [e.tool for e in inert.recover(tmp_path / "j.sqlite").in_doubt] == ["hang"]


def test_async_idempotency_replay(tmp_path: Any) -> None:
    runs: list[str] = []

    async def put(v: int, idempotency_key: str) -> str:
        runs.append(idempotency_key)
        return "ok"

    async def turn() -> inert.Report:
        orch = inert.AsyncOrchestrator({"put": "idempotent"}, {"put": put}, journal=tmp_path / "j.sqlite", turn_key="t")
        await orch.draft([block("put", v=1)])
        await orch.verify(1)
        return await orch.finish()

    run(turn())
    second = run(turn())
    assert len(runs) == 1 and second.results[0].result == "ok"


def test_async_bad_input_raises_and_changes_nothing() -> None:
    async def main() -> None:
        orch = inert.AsyncOrchestrator()
        await orch.draft(["a"])
        with pytest.raises(inert.VerifyError):
            await orch.verify(5)
        assert orch.pending == 1

    run(main())
