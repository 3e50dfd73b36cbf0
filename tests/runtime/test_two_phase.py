"""Two-phase tools: the slow, invisible prepare may run on draft tokens; the commit
waits for acceptance; every prepare ends in exactly one commit or one abort, all
journaled. Checked against real components (a SQLite transaction, staged files)
and with properties over random streams and schedules. Ordered by events."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import inert
from speculation import Decoder, tokenizations
from tools import block, deadlines_only_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from two_phase_files import WriteFile  # CI's mypy checks examples/ with the tests, so these are typed
from two_phase_sqlite import Transfer, balances, create_bank


class Ledger:
    """A two-phase tool that records every phase, and checks, as it commits, that its
    call is among the calls the verifier is accepting."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, Any]] = []
        self.accepting: Counter[str] = Counter()
        self.problems: list[str] = []
        self.prepared = threading.Event()

    def prepare(self, **arguments: Any) -> dict[str, Any]:
        with self.lock:
            self.events.append(("prepare", arguments))
        self.prepared.set()
        return dict(arguments)

    def commit(self, prepared: dict[str, Any], *, idempotency_key: str) -> str:
        key = json.dumps(prepared, sort_keys=True)
        with self.lock:
            self.events.append(("commit", prepared))
            if sum(1 for e, a in self.events if e == "commit" and a == prepared) > self.accepting[key]:
                self.problems.append(f"{key} committed before its block was accepted")
        call = inert.current_call()
        assert call is not None and call.commit_key == idempotency_key
        return "committed"

    def abort(self, prepared: dict[str, Any]) -> None:
        with self.lock:
            self.events.append(("abort", prepared))

    def phases(self, name: str) -> list[str]:
        return [e for e, _ in self.events if e == name]


def test_prepare_on_the_draft_commit_on_acceptance() -> None:
    ledger = Ledger()
    orch = inert.Orchestrator({"pay": "write"}, {"pay": ledger}, turn_key="t")
    step = orch.draft([block("pay", to="ana", amount=5)])
    assert [d.name for d in step.dispatched] == ["pay"], "the prepare is let go on the draft"
    assert ledger.prepared.wait(30)
    assert ledger.phases("commit") == [], "nothing visible before acceptance"
    ledger.accepting[json.dumps({"to": "ana", "amount": 5}, sort_keys=True)] += 1
    orch.verify(1)
    report = orch.finish()
    assert ledger.phases("prepare") == ["prepare"] and ledger.phases("commit") == ["commit"]
    assert ledger.phases("abort") == [] and ledger.problems == []
    (result,) = report.results
    key = inert.commit_key("t", [block("pay", to="ana", amount=5)])
    assert (result.result, result.early, result.commit_key) == ("committed", True, key)


def test_a_rejected_block_aborts_its_prepare() -> None:
    ledger = Ledger()
    orch = inert.Orchestrator({"pay": "write"}, {"pay": ledger}, turn_key="t")
    orch.draft([block("pay", to="eve", amount=500)])
    assert ledger.prepared.wait(30)
    orch.verify(0, "never mind")
    report = orch.finish()
    assert ledger.phases("commit") == [] and ledger.phases("abort") == ["abort"]
    assert report.results == [] and report.violations == []
    assert [d.name for d in report.discarded] == ["pay"]


def test_a_read_only_two_phase_tool_keeps_its_protocol() -> None:
    """Declared read_only, a two-phase tool is still prepared, then committed only once its
    block is accepted (its commit is its own business: inert never guesses it is harmless),
    and aborted when the block is rejected."""
    for accepted in (True, False):
        ledger = Ledger()
        orch = inert.Orchestrator({"peek": "read_only"}, {"peek": ledger}, turn_key="t")
        step = orch.draft([block("peek", q="x")])
        assert [d.name for d in step.dispatched] == ["peek"]
        assert ledger.prepared.wait(30)
        assert ledger.phases("commit") == [], "no commit on a draft"
        ledger.accepting[json.dumps({"q": "x"}, sort_keys=True)] += 1
        if accepted:
            orch.verify(1)
        else:
            orch.verify(0, "no")
        report = orch.finish()
        assert [e for e, _ in ledger.events] == (["prepare", "commit"] if accepted else ["prepare", "abort"])
        assert ledger.problems == [] and report.violations == []
        assert [r.result for r in report.results] == (["committed"] if accepted else [])


def test_defer_prepares_only_after_acceptance() -> None:
    ledger = Ledger()
    orch = inert.Orchestrator({"pay": "write"}, {"pay": ledger}, turn_key="t", policy="defer")
    assert orch.draft([block("pay", to="ana", amount=5)]).dispatched == ()
    assert ledger.events == []
    ledger.accepting[json.dumps({"to": "ana", "amount": 5}, sort_keys=True)] += 1
    orch.verify(1)
    report = orch.finish()
    assert [e for e, _ in ledger.events] == ["prepare", "commit"] and not report.results[0].early


def test_a_later_conflicting_prepare_waits_for_the_earlier_commit() -> None:
    """A later call never observes the world before an earlier conflicting write: its prepare waits."""
    ledger = Ledger()
    effects = {"pay": inert.ToolSpec("write", reads="to", writes="to")}
    orch = inert.Orchestrator(effects, {"pay": ledger}, turn_key="t")
    orch.draft([block("pay", to="ana", amount=1), block("pay", to="ana", amount=2), block("pay", to="bo", amount=3)])
    assert ledger.prepared.wait(30)
    for amount, to in ((1, "ana"), (2, "ana"), (3, "bo")):
        ledger.accepting[json.dumps({"to": to, "amount": amount}, sort_keys=True)] += 1
    orch.verify(3)
    orch.finish()
    order = [(e, a["amount"]) for e, a in ledger.events]
    assert order.index(("commit", 1)) < order.index(("prepare", 2)), order
    assert ledger.problems == []


def test_the_phases_are_journaled_and_a_replayed_key_never_prepares_again(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    ledger = Ledger()
    for _ in range(2):  # the same turn, retried: the second finds the commit on record
        ledger.accepting[json.dumps({"to": "ana", "amount": 5}, sort_keys=True)] += 1
        orch = inert.Orchestrator({"pay": "write"}, {"pay": ledger}, turn_key="t", journal=path)
        orch.draft([block("pay", to="ana", amount=5)])
        orch.verify(1)
        report = orch.finish()
        assert report.results[0].result == "committed"
    assert ledger.phases("prepare") == ["prepare"] and ledger.phases("commit") == ["commit"]
    recovery = inert.recover(path)
    assert [e.tool for e in recovery.completed] == ["pay"] and recovery.prepared == []
    keys = [e.commit_key for e in inert.SqliteJournal(path).entries()]
    assert any("/prepare/" in k for k in keys) and report.results[0].commit_key in keys


def test_recovery_lists_a_prepare_never_committed_or_aborted() -> None:
    journal = inert.MemoryJournal()
    key = inert.commit_key("t", [block("pay", to="ana", amount=5)])
    record = inert.DispatchRecord(
        f"{key}/prepare/a1",
        "pay",
        {"to": "ana", "amount": 5},
        inert.EffectClass.WRITE,
        inert.Footprint(None, None),
        (0, 1),
        True,
        phase="prepare",
    )
    journal.begin(record, "t")
    journal.complete(record, "ok")  # prepared, and then the process died
    recovery = inert.recover(journal)
    assert [e.commit_key for e in recovery.prepared] == [f"{key}/prepare/a1"]
    assert recovery.in_doubt == [] and recovery.completed == []


class _StuckCleanup:
    """Stages, and then cannot clean up: its abort raises."""

    def prepare(self, i: int) -> str:
        return "staged"

    def commit(self, prepared: str, *, idempotency_key: str) -> str:
        return "done"

    def abort(self, prepared: str) -> None:
        raise RuntimeError("cleanup failed: the staged file is still on disk")


def test_recovery_lists_a_prepare_whose_abort_failed(tmp_path: Path) -> None:
    """Found by a helper: an abort that raised counted as done, so recovery hid staged state
    that was never cleaned up."""
    path = tmp_path / "j.sqlite"
    orch = inert.Orchestrator({"t": "write"}, {"t": _StuckCleanup()}, turn_key="tk", journal=path)
    orch.draft([block("t", i=1)])
    orch.verify(0, correction="x")  # rejected: it was prepared, so it aborts
    report = orch.finish(strict=False)
    assert report.results == [] or "cleanup failed" in str(report.results[0].error)
    (prepared,) = inert.recover(path).prepared
    assert "/prepare/" in prepared.commit_key


def test_a_prepare_past_its_deadline_is_aborted_when_it_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    deadlines_only_for(monkeypatch, lambda _, phase: phase == "prepare")  # once inside it; the abort is patient
    release = threading.Event()
    events: list[str] = []

    class Slow:
        def prepare(self, **_: Any) -> str:
            release.wait()
            events.append("prepare returned")
            return "staged"

        def commit(self, prepared: str, *, idempotency_key: str) -> None:
            events.append("commit")

        def abort(self, prepared: str) -> None:
            events.append(f"abort {prepared}")
            done.set()

    done = threading.Event()
    orch = inert.Orchestrator({"slow": inert.ToolSpec("write", timeout=0.05)}, {"slow": Slow()}, turn_key="t")
    orch.draft([block("slow")])
    orch.verify(1)
    report = orch.finish(strict=False)
    assert isinstance(report.results[0].error, inert.ToolTimeoutError)
    assert "nothing was committed" in str(report.results[0].error)
    release.set()
    assert done.wait(30)
    assert events == ["prepare returned", "abort staged"], "the late prepare is aborted, never committed"


def test_a_sqlite_transaction_is_invisible_until_its_block_is_accepted(tmp_path: Path) -> None:
    bank = tmp_path / "bank.sqlite"
    create_bank(bank, {"ana": 100, "bo": 0})
    prepared = threading.Event()

    class Watched(Transfer):
        def prepare(self, source: str, target: str, amount: int) -> Any:
            staged = super().prepare(source, target, amount)
            prepared.set()
            return staged

    effects = {"transfer": inert.ToolSpec("write", reads=["source", "target"], writes=["source", "target"])}
    orch = inert.Orchestrator(effects, {"transfer": Watched(bank)}, turn_key="t")
    call = '<tool_call>{"name": "transfer", "arguments": {"source": "ana", "target": "bo", "amount": %d}}</tool_call>'
    orch.draft([call % 70])
    assert prepared.wait(30)
    assert balances(bank) == {"ana": 100, "bo": 0}, "another connection sees nothing of a staged transfer"
    orch.verify(0, call % 7)
    report = orch.finish()
    assert balances(bank) == {"ana": 93, "bo": 7} and report.violations == []
    with sqlite3.connect(bank) as db:
        assert db.execute("SELECT key, amount FROM transfers").fetchall() == [(report.results[0].commit_key, 7)]


def test_staged_files_appear_only_when_committed(tmp_path: Path) -> None:
    call = '<tool_call>{"name": "write_file", "arguments": {"path": "%s", "content": "x"}}</tool_call>'
    orch = inert.Orchestrator({"write_file": "write"}, {"write_file": WriteFile(tmp_path)}, turn_key="t")
    orch.draft([call % "a/draft.txt"])
    orch.verify(0, call % "a/final.txt")
    orch.finish()
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == ["a/final.txt"]


def test_async_two_phase_with_coroutines() -> None:
    events: list[str] = []

    class Async:
        async def prepare(self, **a: Any) -> str:
            events.append(f"prepare {a['n']}")
            return str(a["n"])

        async def commit(self, prepared: str, *, idempotency_key: str) -> str:
            events.append(f"commit {prepared}")
            return prepared

        async def abort(self, prepared: str) -> None:
            events.append(f"abort {prepared}")

    async def main() -> inert.Report:
        effects = {"f": inert.ToolSpec("write", reads="n", writes="n")}
        orch = inert.AsyncOrchestrator(effects, {"f": Async()}, turn_key="t")
        await orch.draft([block("f", n=1), block("f", n=2)])
        await orch.verify(1, "x")
        return await asyncio.wait_for(orch.finish(), 30)

    report = asyncio.run(main())
    assert [r.result for r in report.results] == ["1"]
    assert sorted(events) == ["abort 2", "commit 1", "prepare 1", "prepare 2"] or sorted(events) == [
        "commit 1",
        "prepare 1",
    ], events


class MixedPhases:
    """A two-phase tool with a plain prepare and coroutine functions for the phases named."""

    def __init__(self, coroutine: str) -> None:
        self.events: list[str] = []
        self.coroutine = coroutine

    def prepare(self, **a: Any) -> str:
        self.events.append("prepare")
        return "staged"

    def commit(self, prepared: str, *, idempotency_key: str) -> str:
        self.events.append("commit")
        return "committed"

    def abort(self, prepared: str) -> None:
        self.events.append("abort")


def mixed(coroutine: str) -> MixedPhases:
    tool = MixedPhases(coroutine)
    plain = getattr(tool, coroutine)

    async def phase(*args: Any, **kwargs: Any) -> Any:
        return plain(*args, **kwargs)

    setattr(tool, coroutine, phase)
    return tool


@pytest.mark.parametrize("coroutine", ["prepare", "commit", "abort"])
@pytest.mark.parametrize("kind", ["lone", "batch"])
def test_a_coroutine_phase_is_refused_by_the_thread_orchestrators(coroutine: str, kind: str) -> None:
    """A coroutine commit or abort was called in a worker thread and never awaited: the
    write (or the drop of what prepare staged) never happened, while the report and the
    journal said it committed (or aborted)."""
    tool = mixed(coroutine)
    with pytest.raises(inert.InertTypeError, match=f"tool 'f' has a coroutine {coroutine}.*AsyncOrchestrator"):
        if kind == "lone":
            inert.Orchestrator({"f": "write"}, {"f": tool}, turn_key="t")
        else:
            inert.BatchOrchestrator({"f": "write"}, {"f": tool}, vocab=inert.Vocabulary(["x"]))
    assert tool.events == []


@pytest.mark.parametrize("coroutine", ["prepare", "commit", "abort"])
def test_async_orchestrator_awaits_a_coroutine_phase_beside_plain_ones(coroutine: str) -> None:
    tool = mixed(coroutine)

    async def main() -> inert.Report:
        effects = {"f": inert.ToolSpec("write", reads="n", writes="n")}
        orch = inert.AsyncOrchestrator(effects, {"f": tool}, turn_key="t")
        await orch.draft([block("f", n=1), block("f", n=2)])
        await orch.verify(1, "x")
        return await asyncio.wait_for(orch.finish(), 30)

    report = asyncio.run(main())
    assert [r.result for r in report.results] == ["committed"]
    assert tool.events.count("commit") == 1
    assert tool.events.count("prepare") == tool.events.count("abort") + 1


class AwaitableCommit(MixedPhases):
    """A plain commit that hands back an awaitable: nothing tells it apart before it runs."""

    def commit(self, prepared: str, *, idempotency_key: str) -> Any:
        async def write() -> str:
            self.events.append("commit")
            return "committed"

        return write()


def test_a_commit_that_returns_an_awaitable_fails_and_drops_what_was_staged() -> None:
    tool = AwaitableCommit("")
    orch = inert.Orchestrator({"f": "write"}, {"f": tool}, turn_key="t")
    orch.draft([block("f", n=1)])
    orch.verify(1)
    (result,) = orch.finish().results
    assert isinstance(result.error, inert.InertTypeError)
    assert "tool 'f''s commit returned an awaitable" in str(result.error)
    assert tool.events == ["prepare", "abort"], "the commit never ran, and what prepare staged is dropped"


# -- properties --


@st.composite
def turns(draw: Any) -> tuple[str, list[int]]:
    amounts = draw(st.lists(st.integers(1, 9), min_size=1, max_size=4))
    accounts = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=len(amounts), max_size=len(amounts)))
    text = "".join(
        block("pay", to=to, amount=n, i=i) + " " for i, (to, n) in enumerate(zip(accounts, amounts, strict=True))
    )
    return text, amounts


@given(st.data())
def test_every_prepare_ends_in_exactly_one_commit_or_abort(data: st.DataObject) -> None:
    text, _ = data.draw(turns())
    runtime = data.draw(st.sampled_from(["threads", "asyncio"]))
    policy = data.draw(st.sampled_from(["read_eager", "defer"]))
    ledger = Ledger()
    effects = {"pay": inert.ToolSpec("write", reads="to", writes="to")}
    pieces = data.draw(tokenizations(text))

    def accepting(accepted: list[bytes]) -> None:
        calls = [
            json.dumps(c.arguments, sort_keys=True)
            for c in inert.parse(b"".join(accepted))
            if isinstance(c, inert.Call)
        ]
        with ledger.lock:
            ledger.accepting = Counter(calls)

    if runtime == "threads":
        orch = inert.Orchestrator(effects, {"pay": ledger}, turn_key="p", policy=policy)
        Decoder(pieces, data.draw).run(orch.draft, orch.verify, accepting)
        report = orch.finish()
    else:
        steps: list[Any] = []
        Decoder(pieces, data.draw).run(
            lambda w: steps.append(("d", w)),
            lambda n, c: steps.append(("v", n, c)),
            lambda a: steps.append(("a", list(a))),
        )

        async def main() -> inert.Report:
            orch = inert.AsyncOrchestrator(effects, {"pay": ledger}, turn_key="p", policy=policy)
            for step in steps:
                if step[0] == "d":
                    await orch.draft(step[1])
                elif step[0] == "v":
                    await orch.verify(step[1], step[2])
                else:
                    accepting(step[1])
            return await asyncio.wait_for(orch.finish(), 30)

        report = asyncio.run(main())
    assert ledger.problems == [], ledger.problems
    prepares = len(ledger.phases("prepare"))
    assert prepares == len(ledger.phases("commit")) + len(ledger.phases("abort")), ledger.events
    committed = Counter(json.dumps(a, sort_keys=True) for e, a in ledger.events if e == "commit")
    assert all(n == 1 for n in committed.values()), "each call commits once"
    assert sorted(committed) == sorted(json.dumps(r.arguments, sort_keys=True) for r in report.results)
    assert report.violations == []
