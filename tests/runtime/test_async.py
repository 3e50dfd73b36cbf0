"""AsyncOrchestrator: the same gate on an asyncio loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import inert
from tools import block

WATCHDOG = 30.0  # seconds an await may take before the test calls it a hang


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_coroutine_and_plain_tools() -> None:
    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return f"body of {url}"

    def save(path: str) -> str:
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
        ("fetch", "body of a", True),
        ("save", "saved p", False),
    ]


def test_rejected_speculative_read_is_cancelled() -> None:
    """The read waits on an event nobody sets: finish() returns only if the rejection
    cancelled it (a finish() that waited for it would trip the watchdog)."""
    started, finished = asyncio.Event(), []

    async def search(q: str) -> str:
        started.set()
        await asyncio.Event().wait()
        finished.append(q)
        return "late"

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"search": "read_only"}, {"search": search})
        await orch.draft([block("search", q="wrong")])
        await asyncio.wait_for(started.wait(), WATCHDOG)
        await orch.verify(0, "never mind")
        return await asyncio.wait_for(orch.finish(), WATCHDOG)

    report = run(main())
    assert finished == [] and report.results == []
    assert [d.name for d in report.discarded] == ["search"]
    assert isinstance(report.dispatch_log[0].error, inert.CancelledCallError)


def test_stream_order_under_asyncio() -> None:
    """The verdict comes from the recorded starts and ends: the read of b starts in the
    draft step; the read of a starts only after the write of a ended, which the test holds
    in its tool until the verify is done."""

    async def main() -> inert.Report:
        read_b, write_may_end = asyncio.Event(), asyncio.Event()

        async def write(key: str) -> None:
            await write_may_end.wait()

        async def read(key: str) -> None:
            if key == "b":
                read_b.set()

        effects = {
            "write": inert.ToolSpec("write", reads="key", writes="key"),
            "read": inert.ToolSpec("read_only", reads="key"),
        }
        orch = inert.AsyncOrchestrator(effects, {"write": write, "read": read})
        step = await orch.draft([block("write", key="a"), block("read", key="a"), block("read", key="b")])
        assert [d.arguments["key"] for d in step.dispatched] == ["a", "b"]  # both let go; "a" must still wait
        await asyncio.wait_for(read_b.wait(), WATCHDOG)
        await orch.verify(3)
        write_may_end.set()
        return await asyncio.wait_for(orch.finish(), WATCHDOG)

    report = run(main())
    log = [(r.name, r.arguments["key"]) for r in report.dispatch_log]  # in the order the calls started
    assert log == [("read", "b"), ("write", "a"), ("read", "a")]
    _, write_a, read_a = report.dispatch_log
    assert write_a.finished is not None and read_a.started is not None and read_a.started >= write_a.finished
    assert report.violations == []


def test_async_timeout_and_journal(tmp_path: Any) -> None:
    async def hang() -> None:
        await asyncio.Event().wait()  # nobody sets it: only inert's deadline ends the call

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator(
            {"hang": inert.ToolSpec("write", timeout=0.05)}, {"hang": hang}, journal=tmp_path / "j.sqlite", turn_key="t"
        )
        await orch.draft([block("hang")])
        await orch.verify(1)
        return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

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


def test_a_plain_tool_raising_stop_iteration_is_recorded_not_hung() -> None:
    """``next()`` on an empty iterator in a plain tool: asyncio cannot set StopIteration on
    the future its thread completes, which then never completed and finish() hung."""

    def find(who: str) -> dict[str, str]:
        return next(u for u in [{"name": "ana"}] if u["name"] == who)

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"find": "read_only"}, {"find": find}, turn_key="k")
        await orch.draft([block("find", who="bo")])
        await orch.verify(1)
        return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

    [call] = run(main()).results
    assert isinstance(call.error, RuntimeError) and isinstance(call.error.__cause__, StopIteration)
    assert "StopIteration" in str(call.error)
