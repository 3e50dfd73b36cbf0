"""A call's outcome is journaled before anything it holds back goes: a later
conflicting call, and ``finish()``. The journal's ``complete`` is held on an event,
and the verdict comes from what was recorded (when the outcome reached the journal,
when the runtime started the later call), never from a sleep."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import inert
from tools import HeldJournal, block

WATCHDOG = 30.0  # seconds a blocked wait may take before the test calls it a hang
EFFECTS = {
    "first": inert.ToolSpec("write", reads="k", writes="k"),
    "second": inert.ToolSpec("write", reads="k", writes="k"),
}
BLOCKS = [block("first", k="a"), block("second", k="a")]


class Finisher(threading.Thread):
    """Runs ``finish()`` on its own thread, so the test can look while it waits."""

    def __init__(self, orch: inert.Orchestrator) -> None:
        super().__init__(daemon=True)
        self.orch = orch
        self.returned = threading.Event()
        self.out: list[Any] = []

    def run(self) -> None:
        try:
            self.out.append(self.orch.finish())
        except BaseException as e:  # noqa: BLE001 - handed back to the test thread
            self.out.append(e)
        self.returned.set()

    def report(self) -> inert.Report:
        assert self.returned.wait(WATCHDOG), "finish() did not return: the turn hangs"
        if isinstance(self.out[0], BaseException):
            raise self.out[0]
        return self.out[0]  # type: ignore[no-any-return]


def check_order(report: inert.Report, journal: HeldJournal) -> None:
    """The later conflicting call was started (recorded by the runtime when it let the call
    go) after the earlier call's outcome was in the journal. Deterministic: a runtime that
    lets it go first records its start before the held ``complete`` can return."""
    first, second = report.dispatch_log
    assert (first.name, second.name) == ("first", "second")
    assert second.started is not None and second.started >= journal.completed_at["first"], (
        "the later conflicting call started before the earlier call's outcome was journaled"
    )
    assert [r.error for r in report.results] == [None, None] and report.violations == []


def test_a_later_conflicting_call_and_finish_wait_for_the_outcome_to_be_journaled(release: threading.Event) -> None:
    journal = HeldJournal(inert.MemoryJournal(), hold="first", release=release)
    ran: list[str] = []
    tools = {"first": lambda k: ran.append("first"), "second": lambda k: ran.append("second")}
    orch = inert.Orchestrator(EFFECTS, tools, journal=journal, turn_key="t")
    orch.draft(BLOCKS)
    orch.verify(2)
    finisher = Finisher(orch)
    finisher.start()
    assert journal.completing.wait(WATCHDOG)
    # While the outcome is held, nothing it holds back has gone.
    assert ran == ["first"], "the later conflicting call ran before the outcome was journaled"
    assert not finisher.returned.is_set(), "finish() returned before the outcome was journaled"
    release.set()
    report = finisher.report()
    assert ran == ["first", "second"]
    check_order(report, journal)


def test_under_asyncio_too(release: threading.Event) -> None:
    journal = HeldJournal(inert.MemoryJournal(), hold="first", release=release)
    ran: list[str] = []

    async def first(k: str) -> None:
        ran.append("first")

    async def second(k: str) -> None:
        ran.append("second")

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator(EFFECTS, {"first": first, "second": second}, journal=journal, turn_key="t")
        await orch.draft(BLOCKS)
        await orch.verify(2)
        finishing = asyncio.ensure_future(orch.finish())
        # The journal runs on worker threads: wait for the held outcome without blocking the loop.
        assert await asyncio.to_thread(journal.completing.wait, WATCHDOG)
        assert ran == ["first"], "the later conflicting call ran before the outcome was journaled"
        assert not finishing.done(), "finish() returned before the outcome was journaled"
        release.set()
        return await asyncio.wait_for(finishing, WATCHDOG)

    report = asyncio.run(main())
    assert ran == ["first", "second"]
    check_order(report, journal)
