"""Per-call deadlines in the thread runtime that made finish() wait forever: one armed
for a prepare that had returned, and one that passed while a locked journal held the
call's intent."""

from __future__ import annotations

import gc
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

import inert
from inert.runtime import CallState, Deadlines, ThreadRuntime
from tools import PATIENCE, WATCHDOG, block, deadlines_only_for, finish_within


class Transfer:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.prepared = threading.Event()

    def prepare(self, **arguments: Any) -> dict[str, Any]:
        self.events.append("prepare")
        self.prepared.set()
        return arguments

    def commit(self, prepared: dict[str, Any], *, idempotency_key: str) -> str:
        self.events.append("commit")
        return "done"

    def abort(self, prepared: dict[str, Any]) -> None:
        self.events.append("abort")


def test_a_prepared_call_waits_for_its_block_past_the_prepares_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The prepare returned at once; the block was decided after the timeout. The prepare's
    deadline used to fire while the call waited, mark it timed out, and the commit's worker
    then deadlocked on the runtime's lock (in a BatchOrchestrator, every sequence with it).

    Ordered, not slept: the prepare's deadline fires once the call is prepared (however
    long the machine took to get there), and the block is decided after it fired; the
    commit returns at once, so its deadline is patient."""
    time_out = ThreadRuntime._time_out
    prepare_deadline_over = threading.Event()

    def ordered(runtime: ThreadRuntime, node: Any, phase: str | None) -> None:
        if phase != "prepare":
            runtime.engine.deadlines.add(PATIENCE, lambda: time_out(runtime, node, phase))
            return
        until = time.monotonic() + WATCHDOG  # the prepare returns at once: wait for the runtime to record it
        while node.owner.state is not CallState.PREPARED and time.monotonic() < until:
            time.sleep(0.001)
        time_out(runtime, node, phase)
        prepare_deadline_over.set()

    monkeypatch.setattr(ThreadRuntime, "_time_out", ordered)
    tool = Transfer()
    orch = inert.Orchestrator({"transfer": "write"}, {"transfer": tool}, turn_key="t", timeout=0.05)
    orch.draft([block("transfer", amount=5)])
    assert tool.prepared.wait(WATCHDOG)
    assert prepare_deadline_over.wait(WATCHDOG)  # past it: it must not apply to the wait for the block's fate
    orch.verify(1)
    [call] = finish_within(orch).results
    assert (tool.events, call.result, call.error) == (["prepare", "commit"], "done", None)


def test_a_deadline_passing_while_the_journal_is_locked_still_ends_the_call(tmp_path: Path) -> None:
    """The deadline passed while the worker waited on a write-locked journal for the intent;
    when begin() then failed, nobody concluded the call and finish() waited forever."""
    path = tmp_path / "journal.sqlite"
    ran: list[str] = []
    orch = inert.Orchestrator(
        {"send": inert.ToolSpec("write", timeout=0.05)}, {"send": ran.append}, turn_key="t", journal=str(path)
    )
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        orch.journal._db.execute("PRAGMA busy_timeout = 300")  # type: ignore[attr-defined]  # not 30 s
        orch.draft([block("send", to="bo")])
        orch.verify(1)
        [call] = finish_within(orch).results
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert ran == []
    assert isinstance(call.error, inert.ToolTimeoutError | inert.JournalError), repr(call.error)
    assert "in doubt" not in str(call.error)


class _SlowIntents(inert.MemoryJournal):
    """A journal whose intents wait until ``release`` (a lock another process holds)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
        self.release.wait(WATCHDOG)
        return super().begin(record, turn_key)


def test_a_deadline_passing_while_the_intent_is_written_says_the_tool_never_ran(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Said "did not return ...; its effect is in doubt" of a call whose tool was never
    called, and the journal recorded that text (found by a helper on a locked PostgreSQL)."""
    fired = deadlines_only_for(monkeypatch, lambda _, __: True, in_tool=False)
    ran: list[str] = []
    journal = _SlowIntents()
    orch = inert.Orchestrator(
        {"send": inert.ToolSpec("write", timeout=0.05)}, {"send": ran.append}, turn_key="t", journal=journal
    )
    orch.draft([block("send", to="bo")])
    orch.verify(1)
    assert fired["send"].wait(WATCHDOG)  # the deadline passed while the intent waited
    journal.release.set()
    [call] = finish_within(orch).results
    assert ran == []
    assert isinstance(call.error, inert.ToolTimeoutError)
    assert "did not start" in str(call.error) and "the tool was not run" in str(call.error)
    [entry] = journal.entries()
    assert entry.status == "error" and "not run" in (entry.error or "")
    assert not inert.recover(journal).in_doubt


def test_a_timeout_too_long_for_the_timer_leaves_the_other_deadlines_working(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a helper: with a call's deadline 1e300 s away (a finite timeout, accepted) the
    timer thread's wait raised OverflowError: the thread died, printing its traceback, and no
    later deadline of the turn fired, so a tool that hung held finish() for ever."""
    crashed: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(args.exc_value))
    release = threading.Event()
    entered = threading.Event()

    def hang() -> str:
        entered.set()
        release.wait(WATCHDOG)
        return "late"

    orch = inert.Orchestrator(
        {"slow": "write", "hang": inert.ToolSpec("write", timeout=0.05)},
        {"slow": lambda: "fine", "hang": hang},
        timeout=1e300,
    )
    try:
        orch.draft([block("slow")])
        orch.verify(1)  # its deadline, 1e300 s away, is the timer's only one
        orch.draft([block("hang")])
        orch.verify(1)
        report = finish_within(orch)
    finally:
        release.set()
    assert entered.is_set() and isinstance(report.results[1].error, inert.ToolTimeoutError)
    assert crashed == [], "the timer thread died"


class _Result:
    """A tool's result that a test can watch die."""


def test_a_batch_keeps_nothing_of_its_finished_sequences_until_their_deadlines(tmp_path: Path) -> None:
    """Found by a helper: with ``timeout=3600`` every call that finished in time left its
    deadline armed, and the callback held the call's runtime (its log, its results): a
    serving loop's BatchOrchestrator grew by about 17 kB per finished sequence for an hour
    (69 MB after 4,000). Now a call's deadlines are dropped when it ends: plain writes,
    two-phase writes (a deadline per phase), reads, and calls that waited for a tool slot.
    An idle worker also held its last call. (A SQLite journal: the in-memory one keeps results.)"""
    results: list[weakref.ref[_Result]] = []

    def make() -> _Result:
        result = _Result()
        results.append(weakref.ref(result))
        return result

    class Stage:
        def prepare(self) -> int:
            return 1

        def commit(self, prepared: int, *, idempotency_key: str) -> _Result:
            return make()

        def abort(self, prepared: int) -> None:
            pass

    effects = {"w": "write", "r": "read_only", "t": "write"}
    tools: dict[str, Any] = {"w": lambda: make(), "r": lambda: make(), "t": Stage()}
    vocab = inert.Vocabulary([block("w"), block("r"), block("t"), " text"])
    journal = str(tmp_path / "journal.sqlite")
    with inert.BatchOrchestrator(
        effects, tools, vocab=vocab, timeout=PATIENCE, limits={"w": 1}, journal=journal
    ) as batch:
        deadlines = batch._engine.deadlines  # what the timer holds is the point
        for round_ in range(20):
            seqs = [2 * round_, 2 * round_ + 1]
            for seq in seqs:
                batch.add(seq, f"turn-{seq}")
            batch.draft(seqs, [[0, 1, 2, 3], [0, 2, 1, 3]])  # both sequences' w: one waits for the slot
            batch.verify(seqs, [4, 2])
            for seq in seqs:
                assert batch.finish(seq, strict=False).results
        assert len(deadlines) == 0, "deadlines of calls that ended are still armed"
    gc.collect()
    assert results and all(ref() is None for ref in results), "a finished call's result is still held"


def test_cancelled_deadlines_leave_the_timer_in_proportion_to_the_armed_ones() -> None:
    fired = threading.Event()
    deadlines = Deadlines()
    try:
        handles = [deadlines.add(PATIENCE, fired.set) for _ in range(10_000)]
        kept = deadlines.add(PATIENCE, fired.set)
        for handle in handles:
            deadlines.cancel(handle)
        deadlines.cancel(handles[0])  # twice: nothing
        assert len(deadlines) == 1
        assert len(deadlines._heap) <= 128  # cancelled entries dropped as they piled up
        deadlines.cancel(kept)
        soon = threading.Event()
        deadlines.add(0.0, soon.set)
        assert soon.wait(WATCHDOG) and not fired.is_set()
    finally:
        deadlines.close()
