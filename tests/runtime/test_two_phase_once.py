"""Exactly once for two-phase tools: the commit step checks the journal, as the
one-phase path does. A key committed elsewhere between this prepare and this commit (a
journal two turns share), or a key retracted and drafted again between them, never
calls ``commit`` a second time: the staged state is aborted and the recorded outcome
replayed. In both runtimes, on a memory and a SQLite journal."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

import inert
from tools import WATCHDOG, block

PAY = block("pay", to="ana", amount=5)


class Pay:
    """Counts its phases; its commit returns which instance committed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.events: list[str] = []
        self.prepared = threading.Event()

    def prepare(self, **arguments: Any) -> dict[str, Any]:
        with self.lock:
            self.events.append("prepare")
        self.prepared.set()
        return arguments

    def commit(self, prepared: dict[str, Any], *, idempotency_key: str) -> str:
        with self.lock:
            self.events.append("commit")
        return self.name

    def abort(self, prepared: dict[str, Any]) -> None:
        with self.lock:
            self.events.append("abort")


def _journal(kind: str, tmp_path: Path) -> inert.Journal | str:
    return inert.MemoryJournal() if kind == "memory" else str(tmp_path / "journal.sqlite")


@pytest.mark.parametrize("effect", ["write", "idempotent"])
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_key_committed_elsewhere_after_this_prepare_is_not_committed_again(
    kind: str, effect: str, tmp_path: Path
) -> None:
    journal = _journal(kind, tmp_path)
    first, second = Pay("first"), Pay("second")
    late = inert.Orchestrator({"pay": effect}, {"pay": second}, turn_key="t", journal=journal)
    late.draft([PAY])
    assert second.prepared.wait(WATCHDOG)  # prepared: the key is not in the journal yet
    other = inert.Orchestrator({"pay": effect}, {"pay": first}, turn_key="t", journal=journal)
    other.draft([PAY])
    other.verify(1)
    assert [r.result for r in other.finish().results] == ["first"]
    late.verify(1)
    [call] = late.finish().results
    assert (call.result, call.error) == ("first", None), "the recorded outcome, replayed"
    assert (first.events, second.events) == (["prepare", "commit"], ["prepare", "abort"])


@pytest.mark.parametrize("effect", ["write", "idempotent"])
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_async_a_key_committed_elsewhere_after_this_prepare_is_not_committed_again(
    kind: str, effect: str, tmp_path: Path
) -> None:
    journal = _journal(kind, tmp_path)
    first, second = Pay("first"), Pay("second")

    async def main() -> inert.Report:
        late = inert.AsyncOrchestrator({"pay": effect}, {"pay": second}, turn_key="t", journal=journal)
        await late.draft([PAY])
        await asyncio.to_thread(second.prepared.wait, WATCHDOG)
        other = inert.AsyncOrchestrator({"pay": effect}, {"pay": first}, turn_key="t", journal=journal)
        await other.draft([PAY])
        await other.verify(1)
        assert [r.result for r in (await other.finish()).results] == ["first"]
        await late.verify(1)
        return await asyncio.wait_for(late.finish(), WATCHDOG)

    [call] = asyncio.run(main()).results
    assert (call.result, call.error) == ("first", None)
    assert (first.events, second.events) == (["prepare", "commit"], ["prepare", "abort"])


def test_a_key_retracted_and_drafted_again_commits_once() -> None:
    """Prepared, rejected (aborted), drafted again under the same key, prepared again,
    accepted: one commit, and the journal holds one outcome for the key."""
    tool = Pay("only")
    journal = inert.MemoryJournal()
    orch = inert.Orchestrator({"pay": "write"}, {"pay": tool}, turn_key="t", journal=journal)
    orch.draft([PAY])
    assert tool.prepared.wait(WATCHDOG)
    orch.verify(0)
    orch.draft([PAY])
    orch.verify(1)
    [call] = orch.finish().results
    assert call.result == "only"
    assert tool.events == ["prepare", "abort", "prepare", "commit"]
    assert [e.status for e in journal.entries() if e.commit_key == call.commit_key] == ["ok"]


class _Refuses(inert.MemoryJournal):
    """A journal that cannot record the intents of these phases (full, say): every other entry is kept."""

    def __init__(self, *phases: str) -> None:
        super().__init__()
        self.phases = phases

    def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
        if record.phase in self.phases:
            raise inert.JournalError("the journal is full")
        return super().begin(record, turn_key)


def _turn(runtime: str, pay: Pay, journal: inert.Journal, accepted: int) -> inert.Report:
    """One call drafted (its prepare runs), ``accepted`` of its one token accepted."""
    if runtime == "threads":
        orch = inert.Orchestrator({"pay": "write"}, {"pay": pay}, turn_key="t", journal=journal)
        orch.draft([PAY])
        assert pay.prepared.wait(WATCHDOG)
        orch.verify(accepted, ".")
        return orch.finish(strict=False)

    async def turn() -> inert.Report:
        orch = inert.AsyncOrchestrator({"pay": "write"}, {"pay": pay}, turn_key="t", journal=journal)
        await orch.draft([PAY])
        await asyncio.to_thread(pay.prepared.wait, WATCHDOG)
        await orch.verify(accepted, ".")
        return await orch.finish(strict=False)

    return asyncio.run(turn())


@pytest.mark.parametrize("runtime", ["threads", "asyncio"])
def test_a_commit_whose_intent_cannot_be_journaled_aborts_what_its_prepare_staged(runtime: str) -> None:
    """The commit never runs without its intent on record, and nothing was left to drop what
    the prepare staged: every prepare ends in one commit or one abort."""
    pay, journal = Pay("only"), _Refuses("commit")
    report = _turn(runtime, pay, journal, accepted=1)
    assert pay.events == ["prepare", "abort"]
    [result] = report.results
    assert isinstance(result.error, inert.JournalError)
    assert "full" in str(result.error)
    by_key = {e.commit_key: e.status for e in journal.entries()}
    assert result.commit_key not in by_key, "no commit intent was recorded"
    assert [s for k, s in by_key.items() if "/abort/" in k] == ["ok"]


@pytest.mark.parametrize("accepted", [0, 1], ids=["rejected", "accepted"])
@pytest.mark.parametrize("runtime", ["threads", "asyncio"])
def test_an_abort_runs_even_when_the_journal_refuses_its_intent(runtime: str, accepted: int) -> None:
    """Found by a helper: the abort's intent was journaled first, and a journal refusing it
    kept the abort from running, so what the prepare staged (an open transaction, a lock)
    stayed held. The abort only drops staged state: it runs, its record lost."""
    pay, journal = Pay("only"), _Refuses("commit", "abort")
    report = _turn(runtime, pay, journal, accepted=accepted)
    assert pay.events == ["prepare", "abort"]
    assert all("/abort/" not in e.commit_key for e in journal.entries()), "no abort intent could be recorded"
    assert [r.name for r in report.results] == ["pay"] * accepted
