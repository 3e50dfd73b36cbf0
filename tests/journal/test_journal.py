"""The journal: durable intents, idempotency by commit key, recovery."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

import inert
from journals import turn
from tools import block, deadlines_only_for, peak_overlap

WATCHDOG = 30.0  # seconds a blocked wait may take before the test calls it a hang


def test_sqlite_journal_is_wal_and_full_sync(tmp_path: Path) -> None:
    with inert.SqliteJournal(tmp_path / "j.sqlite") as j:
        assert j._db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert j._db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL


def test_same_key_after_restart_returns_the_recorded_outcome(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    runs: list[int] = []

    def charge(amount: int) -> str:
        runs.append(amount)
        return f"charged {amount}"

    tools = {"charge": charge}
    first = turn(path, tools, {"charge": "write"}, [block("charge", amount=5)])
    second = turn(path, tools, {"charge": "write"}, [block("charge", amount=5)])  # a new process, same turn
    assert runs == [5], "the write ran once"
    assert second.results[0].result == "charged 5" and second.results[0].commit_key == first.results[0].commit_key
    assert [r.replayed for r in second.dispatch_log] == [True]
    (entry,) = inert.recover(path).completed
    assert (entry.tool, entry.arguments, entry.status, entry.turn_key) == ("charge", {"amount": 5}, "ok", "t1")
    assert len(entry.fingerprint) == 64


def test_same_key_other_arguments_is_a_conflict(tmp_path: Path) -> None:
    journal = inert.MemoryJournal()
    unknown = inert.Footprint(None, None)
    record = inert.DispatchRecord("ck1-x", "f", {"a": 1}, inert.EffectClass.WRITE, unknown, (0, 1), False)
    assert journal.begin(record, "t") is None
    other = inert.DispatchRecord("ck1-x", "f", {"a": 2}, inert.EffectClass.WRITE, unknown, (0, 1), False)
    with pytest.raises(inert.IdempotencyConflictError, match="a key names one call"):
        journal.begin(other, "t")


def crash_before_outcome(path: Path, key_args: dict[str, Any], tool: str, effect: str) -> str:
    """Leaves an intent without an outcome, as a crash mid-call would."""
    j = inert.SqliteJournal(path)
    key = inert.commit_key("t1", [block(tool, **key_args)])
    record = inert.DispatchRecord(
        key, tool, key_args, inert.EffectClass(effect), inert.Footprint(None, None), (0, 1), False
    )
    assert j.begin(record, "t1") is None
    j.close()
    return key


def test_write_in_doubt_is_not_run_again(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    key = crash_before_outcome(path, {"n": 1}, "send", "write")
    assert [e.commit_key for e in inert.recover(path).in_doubt] == [key]
    runs: list[int] = []
    report = turn(path, {"send": lambda n: runs.append(n)}, {"send": "write"}, [block("send", n=1)])
    assert runs == []
    assert isinstance(report.results[0].error, inert.InDoubtError)
    assert "inert recover" in str(report.results[0].error)
    assert [e.commit_key for e in inert.recover(path).in_doubt] == [key], "still in doubt until someone resolves it"


def test_idempotent_in_doubt_runs_again_with_the_same_key(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    key = crash_before_outcome(path, {"n": 1}, "put", "idempotent")
    keys: list[str] = []
    report = turn(
        path,
        {"put": lambda n, idempotency_key: keys.append(idempotency_key)},
        {"put": "idempotent"},
        [block("put", n=1)],
    )
    assert keys == [key] and report.results[0].error is None
    assert inert.recover(path).in_doubt == []


def test_recorded_errors_are_replayed(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"

    def boom() -> None:
        raise ValueError("card declined")

    turn(path, {"pay": boom}, {"pay": "write"}, [block("pay")])
    report = turn(path, {"pay": lambda: "paid"}, {"pay": "write"}, [block("pay")])
    assert isinstance(report.results[0].error, inert.ReplayedError)
    assert "card declined" in str(report.results[0].error)


def test_timeouts_are_recorded_and_in_doubt(
    tmp_path: Path, release: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slow tool waits until the test ends: finish() returns at its deadline without
    it, and the call it held back ran (its start recorded after the deadline's end). The
    deadline fires once the slow tool is inside (a stall while the journal took its intent
    would time it out before it ran: not in doubt)."""
    deadlines_only_for(monkeypatch, lambda _, __: True)
    path = tmp_path / "j.sqlite"
    order: list[str] = []

    def slow() -> None:
        release.wait(WATCHDOG)
        order.append("slow returned")

    effects = {"slow": inert.ToolSpec("write", timeout=0.05), "after": "write"}
    report = turn(
        path, {"slow": slow, "after": lambda: order.append("after")}, effects, [block("slow"), block("after")]
    )
    assert order == ["after"], "finish() returned while the timed-out tool still runs; the call after it ran"
    assert isinstance(report.results[0].error, inert.ToolTimeoutError)
    slow_run, after = report.dispatch_log
    assert slow_run.timed_out and slow_run.finished is not None
    assert after.started is not None and after.started >= slow_run.finished, "released by the deadline, not before"
    assert [e.tool for e in inert.recover(path).in_doubt] == ["slow"]


def test_orchestrator_timeout_default(release: threading.Event) -> None:
    orch = inert.Orchestrator({"w": "write"}, {"w": lambda: release.wait(WATCHDOG)}, timeout=0.05)
    orch.draft([block("w")])
    orch.verify(1)
    error = orch.finish(strict=False).results[0].error
    assert not release.is_set() and isinstance(error, inert.ToolTimeoutError)


def test_per_tool_concurrency_limit(release: threading.Event) -> None:
    """The tools hold until the draft and the verify are done: a runtime that let more go at
    once would record more starts before the first end (peak_overlap counts from the records)."""
    effects = {"fetch": inert.ToolSpec("read_only", reads="i", max_concurrency=2)}
    orch = inert.Orchestrator(effects, {"fetch": lambda i: release.wait(WATCHDOG)}, max_workers=8)
    orch.draft([block("fetch", i=i) for i in range(6)])
    orch.verify(6)
    release.set()
    assert peak_overlap(orch.finish().dispatch_log) == 2
    held = threading.Event()
    orch = inert.Orchestrator(
        {"fetch": inert.ToolSpec("read_only", reads="i")}, {"fetch": lambda i: held.wait(WATCHDOG)}, limits={"fetch": 1}
    )
    orch.draft([block("fetch", i=i) for i in range(3)])
    orch.verify(3)
    held.set()
    assert peak_overlap(orch.finish().dispatch_log) == 1


def test_the_same_tokens_under_two_turn_keys_are_two_calls(tmp_path: Path) -> None:
    """Two conversations that say the same thing: their keys differ (the turn key seeds
    them), so with one durable journal the second's write runs, it is no replay of the first's."""
    text = block("pay", amount=5)
    assert inert.commit_key("conversation-1", [text]) != inert.commit_key("conversation-2", [text])
    path = tmp_path / "j.sqlite"
    paid: list[int] = []
    reports = [
        turn(path, {"pay": lambda amount: paid.append(amount)}, {"pay": "write"}, [text], turn_key=key)
        for key in ("conversation-1", "conversation-2")
    ]
    assert paid == [5, 5], "the second conversation's write was skipped as a replay of the first's"
    keys = [r.results[0].commit_key for r in reports]
    assert keys == [inert.commit_key("conversation-1", [text]), inert.commit_key("conversation-2", [text])]
    assert not any(r.replayed for report in reports for r in report.dispatch_log)
    with inert.SqliteJournal(path) as journal:
        entries = sorted((e.turn_key, e.commit_key) for e in journal.entries())
    assert entries == sorted(zip(("conversation-1", "conversation-2"), keys, strict=True))


def test_speculate_false_keeps_a_read_until_acceptance() -> None:
    orch = inert.Orchestrator({"search": inert.ToolSpec("read_only", speculate=False)}, {"search": lambda: "r"})
    assert orch.draft([block("search")]).dispatched == ()
    assert len(orch.verify(1).dispatched) == 1
    with pytest.raises(inert.EffectTableError, match="read-only"):
        inert.ToolSpec("write", speculate=True)


def test_mcp_open_world_reads_do_not_speculate() -> None:
    tools = [
        {"name": "web", "annotations": {"readOnlyHint": True}},
        {"name": "local", "annotations": {"readOnlyHint": True, "openWorldHint": False}},
    ]
    table = inert.EffectTable.from_mcp(tools, trusted=True)
    assert [table.spec(n).speculate for n in ("web", "local")] == [False, True]


def test_recover_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(inert.InertValueError, match="no journal"):
        inert.recover(tmp_path / "none.sqlite")


def test_journal_file_is_plain_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    turn(path, {"f": lambda: 1}, {"f": "write"}, [block("f")])
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT tool, status FROM intents JOIN outcomes USING (commit_key)").fetchall()
        assert rows == [("f", "ok")]


class _TakenOver(inert.MemoryJournal):
    """A journal whose key another worker took over while this one ran the call."""

    def complete(self, record: inert.DispatchRecord, status: str) -> None:
        raise inert.StaleClaimError(f"{record.commit_key} was taken over by worker B, whose outcome stands")


def test_a_call_whose_key_was_taken_over_is_reported_so_not_in_doubt() -> None:
    orch = inert.Orchestrator({"put": "idempotent"}, {"put": lambda k: k}, turn_key="t", journal=_TakenOver())
    orch.draft([block("put", k="a")])
    orch.verify(1)
    [call] = orch.finish(strict=False).results
    assert isinstance(call.error, inert.StaleClaimError), repr(call.error)
    assert "in doubt" not in str(call.error) and "worker B" in str(call.error)
