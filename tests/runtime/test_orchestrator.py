"""The gate: when each effect class runs, what counts, and in what order."""

from __future__ import annotations

import asyncio
import threading
import warnings
from typing import Any

import pytest

import inert
from inert import EffectClass, ToolSpec
from inert.errors import closest_name
from tools import HeldJournal, block, peak_overlap

WATCHDOG = 30.0  # seconds a blocked wait may take before the test calls it a hang


class Recorder:
    """Tools that log their calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def tool(self, name: str, result: Any = "ok") -> Any:
        def run(**kwargs: Any) -> Any:
            with self.lock:
                self.calls.append((name, kwargs))
            return result

        return run


def test_write_waits_for_acceptance_read_runs_early() -> None:
    rec = Recorder()
    orch = inert.Orchestrator({"get": "read_only", "set": "write"}, {"get": rec.tool("get"), "set": rec.tool("set")})
    step = orch.draft([block("get", k="a"), block("set", k="b")])
    assert [r.name for r in step.dispatched] == ["get"]
    step = orch.verify(2)
    assert [r.name for r in step.dispatched] == ["set"]
    report = orch.finish()
    assert [(r.name, r.early) for r in report.results] == [("get", True), ("set", False)]
    assert sorted(c[0] for c in rec.calls) == ["get", "set"]


def test_rejected_read_is_discarded_and_rejected_write_never_runs() -> None:
    rec = Recorder()
    orch = inert.Orchestrator({"get": "read_only", "set": "write"}, {"get": rec.tool("get"), "set": rec.tool("set")})
    orch.draft(["pre ", block("get", k="wrong"), block("set", k="wrong")])
    orch.verify(1)  # only "pre " survives
    orch.draft([block("get", k="a")])
    orch.verify(1)
    report = orch.finish()
    assert [(d.name, d.arguments) for d in report.discarded] == [("get", {"k": "wrong"})]
    assert [(r.name, r.arguments) for r in report.results] == [("get", {"k": "a"})]
    assert ("set", {"k": "wrong"}) not in rec.calls


def test_defer_runs_nothing_before_acceptance() -> None:
    rec = Recorder()
    orch = inert.Orchestrator({"get": "read_only"}, {"get": rec.tool("get")}, policy="defer")
    assert orch.draft([block("get")]).dispatched == ()
    assert len(orch.verify(1).dispatched) == 1
    assert not orch.finish().results[0].early


def test_unknown_tools_are_writes() -> None:
    rec = Recorder()
    orch = inert.Orchestrator({}, {"mystery": rec.tool("mystery")})
    assert orch.draft([block("mystery")]).dispatched == ()
    orch.verify(0)
    report = orch.finish()
    assert rec.calls == [] and report.results == []
    assert inert.EffectTable().classify("mystery") is EffectClass.WRITE


def test_idempotent_tools_get_the_commit_key_only_if_they_name_it() -> None:
    seen: dict[str, Any] = {}

    def put(v: int, idempotency_key: str) -> None:
        seen["put"] = (v, idempotency_key, inert.current_call())

    def bridge(**arguments: Any) -> None:  # a plain bridge forwards what it gets to a server
        seen["bridge"] = (arguments, inert.current_call())

    orch = inert.Orchestrator(
        {"put": "idempotent", "bridge": "idempotent"}, {"put": put, "bridge": bridge}, turn_key="k"
    )
    orch.draft([block("put", v=1), block("bridge", v=2)])
    orch.verify(2)
    report = orch.finish()
    put_key, bridge_key = (r.commit_key for r in report.results)
    assert put_key == inert.commit_key("k", [block("put", v=1)])
    v, key, current = seen["put"]
    assert (v, key) == (1, put_key) and current.idempotency_key == put_key and current.name == "put"
    arguments, current = seen["bridge"]
    assert arguments == {"v": 2}, "a callable that does not name idempotency_key never receives it"
    assert current.idempotency_key == bridge_key, "it reads its key from inert.current_call()"
    assert inert.current_call() is None


def test_one_router_serves_every_tool() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def call_tool(name: str, arguments: dict[str, Any]) -> str:
        calls.append((name, arguments))
        return f"{name} done"

    orch = inert.Orchestrator({"a": "read_only", "b": "write"}, call_tool)
    orch.draft([block("a", q=1), block("b", q=2)])
    orch.verify(2)
    report = orch.finish()
    assert sorted(calls) == [("a", {"q": 1}), ("b", {"q": 2})]
    assert [r.result for r in report.results] == ["a done", "b done"]


def test_eager_read_waits_for_an_earlier_conflicting_write(release: threading.Event) -> None:
    """The verdict comes from what the runtime recorded: the read of a starts (its start
    is recorded when it is let go, on the thread that lets it go) after the write of a
    finished, and the read of b, which conflicts with nothing, started in the draft step."""
    read_b = threading.Event()
    effects = {
        "write_x": ToolSpec("write", reads="key", writes="key"),
        "read_x": ToolSpec("read_only", reads="key"),
    }

    def read_x(key: str) -> str:
        if key == "b":
            read_b.set()
        return key

    orch = inert.Orchestrator(effects, {"write_x": lambda key: release.wait(WATCHDOG), "read_x": read_x})
    step = orch.draft([block("write_x", key="a"), block("read_x", key="a"), block("read_x", key="b")])
    assert [r.arguments["key"] for r in step.dispatched] == ["a", "b"]  # both let go; "a" must still wait
    assert read_b.wait(WATCHDOG)
    orch.verify(3)
    release.set()
    report = orch.finish()
    log = [(r.name, r.arguments["key"]) for r in report.dispatch_log]  # in the order the calls started
    assert log == [("read_x", "b"), ("write_x", "a"), ("read_x", "a")]
    read_b_run, write_a, read_a = report.dispatch_log
    assert read_b_run.early and not write_a.early
    assert write_a.finished is not None and read_a.started is not None and read_a.started >= write_a.finished
    assert report.violations == []


def test_unknown_footprints_serialise_writes(release: threading.Event) -> None:
    """Held in their tools until the test lets go: a runtime that let two go at once would
    record both starts before either end (peak_overlap counts from the records)."""
    orch = inert.Orchestrator({"w": "write"}, {"w": lambda i: release.wait(WATCHDOG)})
    orch.draft([block("w", i=i) for i in range(4)])
    orch.verify(4)
    release.set()
    report = orch.finish()
    assert [r.arguments["i"] for r in report.dispatch_log] == [0, 1, 2, 3], "in stream order"
    assert peak_overlap(report.dispatch_log) == 1


def test_a_write_missing_its_key_argument_serialises_with_every_call(release: threading.Event) -> None:
    """Its footprint cannot be computed, so it is unknown: it overlaps everything, even
    writes of other keys, instead of conflicting with nothing."""
    orch = inert.Orchestrator(
        {"w": ToolSpec("write", reads="key", writes="key")}, {"w": lambda **_: release.wait(WATCHDOG)}
    )
    orch.draft([block("w", key="a"), block("w"), block("w", key="b")])
    orch.verify(3)
    release.set()
    report = orch.finish()
    assert [r.footprint.writes for r in report.dispatch_log] == [frozenset({"a"}), None, frozenset({"b"})]
    assert peak_overlap(report.dispatch_log) == 1


def test_disjoint_writes_run_concurrently() -> None:
    barrier = threading.Barrier(2, timeout=WATCHDOG)  # a hang guard: a stalled machine may start the second late

    def w(key: str) -> None:
        barrier.wait()  # deadlocks (and fails) unless both run at once

    orch = inert.Orchestrator({"w": ToolSpec("write", reads="key", writes="key")}, {"w": w})
    orch.draft([block("w", key="a"), block("w", key="b")])
    orch.verify(2)
    report = orch.finish()
    assert [r.error for r in report.results] == [None, None]


def test_tool_errors_and_missing_tools_are_recorded() -> None:
    def boom() -> None:
        raise KeyError("gone")

    orch = inert.Orchestrator({"boom": "write", "absent": "write"}, {"boom": boom})
    orch.draft([block("boom"), block("absent")])
    orch.verify(2)
    report = orch.finish()
    assert isinstance(report.results[0].error, KeyError)
    assert isinstance(report.results[1].error, inert.MissingToolError)
    assert "tools=" in str(report.results[1].error)


def test_malformed_and_oversized_blocks_are_reported_not_dispatched() -> None:
    rec = Recorder()
    orch = inert.Orchestrator({"f": "write"}, {"f": rec.tool("f")}, max_block_bytes=64)
    orch.draft(['<tool_call>{"name": "f", "arguments": 7}</tool_call>', block("f", x="y" * 100), block("f")])
    orch.verify(3)
    report = orch.finish()
    first, second = (m.reason for m in report.malformed)
    assert "must be a JSON object, got a number" in first
    assert "max_block_bytes" in second
    assert rec.calls == [("f", {})]


def test_eager_unsafe_warns_and_its_orphans_raise_at_finish() -> None:
    rec = Recorder()
    with pytest.warns(UserWarning, match="measure"):
        orch = inert.Orchestrator({"set": "write"}, {"set": rec.tool("set")}, policy="eager_unsafe")
    orch.draft([block("set", v="draft")])
    orch.verify(0, "done")
    with pytest.raises(inert.SpeculativeEffectViolation) as info:
        orch.finish()
    (v,) = info.value.violations
    assert v.kind == "orphan" and v.tool == "set" and v.commit_key in str(info.value)
    assert info.value.report.results == []


def test_finish_rejects_unverified_tokens() -> None:
    rec = Recorder()
    orch = inert.Orchestrator({"set": "write"}, {"set": rec.tool("set")})
    orch.draft([block("set")])
    report = orch.finish()
    assert report.results == [] and rec.calls == []


def test_step_extends_the_pending_window() -> None:
    orch = inert.Orchestrator()
    orch.draft(["a"])
    orch.draft(["b", "c"])
    assert orch.pending == 3
    orch.verify(3)
    assert orch.pending == 0


def test_journal_holds_an_intent_for_every_dispatch() -> None:
    journal = inert.MemoryJournal()
    seen_during_call: list[list[str | None]] = []

    def f() -> None:
        seen_during_call.append([e.status for e in journal.entries()])

    orch = inert.Orchestrator({"f": "write"}, {"f": f}, journal=journal)
    orch.draft([block("f")])
    orch.verify(1)
    report = orch.finish()
    assert seen_during_call == [[None]], "the intent is journaled, with no outcome, while the tool runs"
    (entry,) = journal.entries()
    assert (entry.commit_key, entry.status) == (report.results[0].commit_key, "ok")
    assert inert.recover(journal).in_doubt == []


def test_warning_free_for_safe_policies() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inert.Orchestrator(policy="read_eager")
        inert.Orchestrator(policy="defer")


def test_rejected_tokens_drafted_again_recur_their_key_without_a_violation() -> None:
    """The verifier may reject draft tokens it then emits itself: the read's key recurs."""
    release = threading.Event()

    def lookup(**_: Any) -> str:
        release.wait(2)
        return "fresh"

    with pytest.warns(UserWarning, match="'nope' has a callable but no entry in the effect table"):
        orch = inert.Orchestrator({"lookup": "read_only"}, {"lookup": lookup, "nope": lambda **_: "w"})
    text = block("lookup") + block("nope")
    orch.draft([text])  # the read starts speculatively and blocks
    orch.verify(0, text)  # rejected, then the same text arrives as the correction
    release.set()
    report = orch.finish()
    assert [(r.name, r.error) for r in report.results] == [("lookup", None), ("nope", None)]
    assert report.results[0].result == "fresh"
    assert report.violations == []
    assert [d.name for d in report.discarded] == ["lookup"]


def test_a_recurring_key_reports_the_accepted_run_not_the_discarded_one() -> None:
    """A counter read: its first run, journaled before its block is rejected, returns 1;
    the same tokens drafted again recur its key. The discarded run's 1 never counts: the
    read runs again, and the report (and the journal) carry the accepted run's 2."""
    lock = threading.Lock()
    runs: list[int] = []

    def counter() -> int:
        with lock:
            runs.append(len(runs) + 1)
            return runs[-1]

    journal = HeldJournal(inert.MemoryJournal())
    orch = inert.Orchestrator({"counter": "read_only"}, {"counter": counter}, journal=journal, turn_key="t")
    text = block("counter")
    first = orch.draft([text])
    assert journal.completed["counter"].wait(WATCHDOG), "the first run's outcome is journaled"
    orch.verify(0)
    again = orch.draft([text])
    (key,) = [d.commit_key for d in again.dispatched]
    assert [d.commit_key for d in first.dispatched] == [key], "the key recurs"
    orch.verify(1)
    report = orch.finish()
    assert [r.result for r in report.results] == [2]
    assert [(r.result, r.discarded, r.replayed) for r in report.dispatch_log] == [(1, True, False), (2, False, False)]
    assert [d.finished for d in report.discarded] == [True]
    entry = journal.lookup(key)
    assert entry is not None and (entry.status, entry.result) == ("ok", 2)


def test_two_runs_of_one_key_never_overlap(release: threading.Event) -> None:
    """The rejected run is still in its tool when its key recurs: the accepted run waits for
    it to end, so the discarded outcome is journaled first and never overwrites the live one."""
    lock = threading.Lock()
    runs: list[int] = []
    first_in_tool = threading.Event()

    def counter() -> int:
        with lock:
            runs.append(len(runs) + 1)
            n = runs[-1]
        if n == 1:
            first_in_tool.set()
            release.wait(WATCHDOG)
        return n

    journal = inert.MemoryJournal()
    orch = inert.Orchestrator({"counter": "read_only"}, {"counter": counter}, journal=journal, turn_key="t")
    text = block("counter")
    orch.draft([text])
    assert first_in_tool.wait(WATCHDOG)
    orch.verify(0, text)  # rejected, and the same text arrives as the correction: the key recurs
    release.set()
    report = orch.finish()
    first, second = report.dispatch_log
    assert first.discarded and (first.result, second.result) == (1, 2)
    assert first.finished is not None and second.started is not None and second.started >= first.finished
    entry = journal.lookup(second.commit_key)
    assert entry is not None and entry.result == 2, "the journal holds the accepted run's outcome"


def test_a_recurring_key_reports_the_accepted_run_under_asyncio() -> None:
    """As above on a loop, where the rejected run is cancelled in its tool and journaled as
    an error: the accepted run runs again, it does not replay the cancelled run's error."""
    runs: list[int] = []

    async def main() -> inert.Report:
        in_tool, never = asyncio.Event(), asyncio.Event()

        async def counter() -> int:
            runs.append(len(runs) + 1)
            n = runs[-1]
            if n == 1:
                in_tool.set()
                await never.wait()  # cancelled when its block is rejected
            return n

        orch = inert.AsyncOrchestrator({"counter": "read_only"}, {"counter": counter})
        text = block("counter")
        await orch.draft([text])
        await asyncio.wait_for(in_tool.wait(), WATCHDOG)
        await orch.verify(0)
        await orch.draft([text])
        await orch.verify(1)
        return await asyncio.wait_for(orch.finish(), WATCHDOG)

    report = asyncio.run(main())
    assert [(r.result, r.error) for r in report.results] == [(2, None)]
    first, second = report.dispatch_log
    assert first.discarded and isinstance(first.error, inert.CancelledCallError) and second.result == 2


def test_a_read_closed_by_the_correction_runs_as_committed_not_early() -> None:
    """Closed and committed in one verify, the read is accepted before it is let go: its
    result says so every time (it used to depend on whether its thread started first)."""
    for _ in range(20):
        orch = inert.Orchestrator({"get": "read_only"}, {"get": lambda k: k})
        orch.draft([block("get", k="a")[: -len("</tool_call>")]])
        step = orch.verify(1, correction="</tool_call>")
        assert [r.name for r in step.dispatched] == ["get"]
        report = orch.finish()
        assert [(r.name, r.early) for r in report.results] == [("get", False)]


def test_many_tools_without_an_entry_are_one_warning_not_a_fuzzy_match_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a helper: each tool without an entry was fuzzy-matched against the whole table,
    O(U x T): 4,000 such tools took 27 s to build an Orchestrator. Past a few they are a
    choice, not typos: one warning names them; a few still get a suggestion each."""
    matched: list[str] = []

    def counted(name: str, known: list[str]) -> str | None:
        matched.append(name)
        return closest_name(name, known)

    monkeypatch.setattr("inert.turn.closest_name", counted)
    effects = {f"known_{i}": "read_only" for i in range(4_000)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        inert.Orchestrator(effects, {f"other_{i}": lambda: 1 for i in range(4_000)})
    assert matched == []
    assert [str(w.message)[:60] for w in caught] == ["4000 tools have a callable but no entry in the effect table,"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        inert.Orchestrator(effects, {"knwn_1": lambda: 1, "other": lambda: 1})
    assert matched == ["knwn_1", "other"]
    assert "'knwn_1' has a callable" in str(caught[0].message) and "did you mean 'known_1'?" in str(caught[0].message)
    assert "'other' has a callable" in str(caught[1].message) and "did you mean" not in str(caught[1].message)
