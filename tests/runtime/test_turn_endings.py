"""How a turn ends with calls not committed yet: ``finish()`` with a call only drafted
(its block closed in a draft, never verified), in every orchestrator, linear and tree;
and ``BatchOrchestrator.close()`` (or leaving its ``with`` block on an exception) with
sequences still in it. Whatever ends the turn, a write never runs, an early read is
discarded, a prepared two-phase call is aborted exactly once and journaled, the turn
never waits for ever, and the report says what was discarded."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import inert
from tools import WATCHDOG, block, finish_within

PAY = block("pay", to="ana", amount=5)
LOOK = block("look", q="x")
SEND = block("send", to="bo")
EFFECTS = {"pay": "write", "look": "read_only", "send": "write"}


class Recorder:
    """A two-phase ``pay`` whose prepare may be held inside, a read and a plain write,
    each noting what ran."""

    def __init__(self, hold_prepare: bool = False) -> None:
        self.lock = threading.Lock()
        self.events: list[str] = []
        self.inside = threading.Event()
        self.release = threading.Event()
        if not hold_prepare:
            self.release.set()

    def note(self, event: str) -> None:
        with self.lock:
            self.events.append(event)

    def tools(self) -> dict[str, Any]:
        recorder = self

        class Pay:
            def prepare(self, **arguments: Any) -> dict[str, Any]:
                recorder.inside.set()
                recorder.release.wait(WATCHDOG)
                recorder.note("prepare")
                return arguments

            def commit(self, prepared: dict[str, Any], *, idempotency_key: str) -> str:
                recorder.note("commit")
                return "paid"

            def abort(self, prepared: dict[str, Any]) -> None:
                recorder.note("abort")

        def look(q: str) -> str:
            recorder.note("look")
            return q

        def send(to: str) -> str:
            recorder.note("send")
            return to

        return {"pay": Pay(), "look": look, "send": send}

    def of(self, name: str) -> int:
        return self.events.count(name)


def _phases(journal: inert.Journal) -> list[tuple[str, str | None]]:
    """The two-phase entries (``KEY/phase/attempt``) as (phase, status)."""
    return sorted((e.commit_key.split("/")[1], e.status) for e in journal.entries() if "/" in e.commit_key)


def _check_abandoned(recorder: Recorder, journal: inert.Journal, report: inert.Report) -> None:
    assert recorder.events.count("prepare") == 1 and recorder.of("abort") == 1, recorder.events
    assert recorder.of("commit") == 0 and recorder.of("send") == 0, "a write ran from tokens never verified"
    assert _phases(journal) == [("abort", "ok"), ("prepare", "ok")]
    assert report.results == [] and report.violations == []
    assert sorted(d.name for d in report.discarded) == ["look", "pay"]


# -- finish() with calls only drafted --


def _linear(orch: inert.Orchestrator) -> None:
    orch.draft([LOOK, PAY, SEND])


def _tree(orch: inert.Orchestrator) -> None:
    orch.draft_tree([LOOK, PAY, SEND, "x"], [-1, 0, 1, -1])  # the calls on one branch, a stray sibling


@pytest.mark.parametrize("hold", [False, True], ids=["prepared", "preparing"])
@pytest.mark.parametrize("draft", [_linear, _tree], ids=["linear", "tree"])
def test_finish_retracts_calls_only_drafted(draft: Callable[[inert.Orchestrator], None], hold: bool) -> None:
    recorder = Recorder(hold_prepare=hold)
    journal = inert.MemoryJournal()
    orch = inert.Orchestrator(EFFECTS, recorder.tools(), turn_key="t", journal=journal)
    draft(orch)
    assert recorder.inside.wait(WATCHDOG)
    if hold:  # finish() while the prepare is still inside: it aborts when its prepare returns
        threading.Timer(0.05, recorder.release.set).start()
    _check_abandoned(recorder, journal, finish_within(orch))


@pytest.mark.parametrize("hold", [False, True], ids=["prepared", "preparing"])
def test_async_finish_retracts_calls_only_drafted(hold: bool) -> None:
    recorder = Recorder(hold_prepare=hold)
    journal = inert.MemoryJournal()

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator(EFFECTS, recorder.tools(), turn_key="t", journal=journal)
        await orch.draft([LOOK, PAY, SEND])
        await asyncio.to_thread(recorder.inside.wait, WATCHDOG)
        if hold:
            threading.Timer(0.05, recorder.release.set).start()
        return await asyncio.wait_for(orch.finish(), WATCHDOG)

    _check_abandoned(recorder, journal, asyncio.run(main()))


VOCAB = inert.Vocabulary([LOOK, PAY, SEND, "x"])


@pytest.mark.parametrize("tree", [False, True], ids=["linear", "tree"])
def test_batch_finish_retracts_calls_only_drafted(tree: bool) -> None:
    recorder = Recorder()
    journal = inert.MemoryJournal()
    with inert.BatchOrchestrator(EFFECTS, recorder.tools(), vocab=VOCAB, journal=journal) as batch:
        batch.add(7, "t")
        if tree:
            batch.draft_tree(7, [0, 1, 2, 3], [-1, 0, 1, -1])
        else:
            batch.draft([7], [[0, 1, 2]])
        assert recorder.inside.wait(WATCHDOG)
        report = batch.finish(7)
    _check_abandoned(recorder, journal, report)


# -- BatchOrchestrator.close() with sequences still in it --


def _started(batch: inert.BatchOrchestrator, recorder: Recorder) -> None:
    """Sequence 1 has a committed read, then a prepared call drafted; sequence 2 the same
    calls only drafted; sequence 3 nothing."""
    batch.add(1, "one")
    batch.add(2, "two")
    batch.add(3, "three")
    batch.draft([1, 2], [[0], [0]])
    batch.verify([1], [1])
    batch.draft([1, 2], [[1], [1]])
    _wait_for(lambda: recorder.of("prepare") == 2)


def _wait_for(condition: Callable[[], bool]) -> None:
    """Polls ``condition`` (what the workers did) up to the watchdog."""
    for _ in range(int(WATCHDOG * 100)):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("the workers never got there")


def test_close_abandons_every_sequence_and_aborts_what_was_prepared() -> None:
    recorder = Recorder()
    journal = inert.MemoryJournal()
    batch = inert.BatchOrchestrator(EFFECTS, recorder.tools(), vocab=VOCAB, journal=journal)
    _started(batch, recorder)
    with pytest.warns(inert.TurnAbandonedWarning, match=r"3 sequence\(s\)"):
        reports = batch.close()
    assert sorted(reports) == [1, 2, 3]
    assert recorder.of("prepare") == 2 and recorder.of("abort") == 2 and recorder.of("commit") == 0
    assert [(r.name, r.result) for r in reports[1].results] == [("look", "x")]
    assert [d.name for d in reports[1].discarded] == ["pay"]
    assert sorted(d.name for d in reports[2].discarded) == ["look", "pay"]
    assert reports[3].results == [] and reports[3].discarded == []
    assert _phases(journal) == [("abort", "ok"), ("abort", "ok"), ("prepare", "ok"), ("prepare", "ok")]
    with pytest.raises(inert.StreamFinishedError):
        batch.finish(1)
    assert batch.close() == {}, "a second close has nothing left to end"


def test_leaving_the_with_block_on_an_exception_aborts_what_was_prepared() -> None:
    recorder = Recorder()
    journal = inert.MemoryJournal()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batch = inert.BatchOrchestrator(EFFECTS, recorder.tools(), vocab=VOCAB, journal=journal)
        with pytest.raises(RuntimeError, match="engine crashed"), batch:
            _started(batch, recorder)
            raise RuntimeError("engine crashed")
    assert recorder.of("abort") == 2 and recorder.of("commit") == 0
    assert [w.category for w in caught] == [inert.TurnAbandonedWarning]


def test_close_after_every_finish_says_nothing() -> None:
    recorder = Recorder()
    batch = inert.BatchOrchestrator(EFFECTS, recorder.tools(), vocab=VOCAB)
    batch.add(0, "t")
    batch.draft([0], [[1]])
    batch.verify([0], [1])
    batch.finish(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert batch.close() == {}
    assert recorder.events == ["prepare", "commit"]


def test_close_never_commits_what_only_the_end_of_the_turn_would_confirm() -> None:
    """In a format whose blocks end on a bracket, an accepted write waits for the token
    after it; ``finish`` confirms it (the turn ended there), a close does not: the engine
    stopped, the turn did not end."""
    send = '{"name": "send", "parameters": {"to": "bo"}}'
    recorder = Recorder()
    vocab = inert.Vocabulary([send])
    batch = inert.BatchOrchestrator(EFFECTS, recorder.tools(), format="llama3_json", vocab=vocab)
    batch.add(0, "closed")
    batch.add(1, "finished")
    batch.draft([0, 1], [[0], [0]])
    batch.verify([0, 1], [1, 1])
    assert [r.result for r in batch.finish(1).results] == ["bo"]
    with pytest.warns(inert.TurnAbandonedWarning, match=r"1 sequence\(s\) still in it \(0\)"):
        reports = batch.close()
    assert reports[0].results == [] and recorder.events == ["send"]


def test_draft_tree_on_an_unknown_sequence_is_refused_as_such() -> None:
    batch = inert.BatchOrchestrator(EFFECTS, Recorder().tools(), vocab=VOCAB)
    with pytest.raises(inert.UnknownSequenceError, match="sequence 5 is not in the batch"):
        batch.draft_tree(5, [0], [-1])
    with pytest.raises(inert.InertTypeError):
        batch.draft_tree("x", [0], [-1])  # type: ignore[arg-type]
    batch.close()


@pytest.mark.parametrize("seq", [None, object(), [0], 1.5, True])
def test_a_seq_that_is_no_int_is_refused_as_the_core_refuses_it(seq: Any) -> None:
    """add() and finish() took int(seq) first: None gave a bare TypeError (no InertError),
    and 1.5 was read as sequence 1."""
    batch = inert.BatchOrchestrator(EFFECTS, Recorder().tools(), vocab=VOCAB)
    batch.add(1, "t")
    with pytest.raises(inert.InertTypeError, match="seq"):
        batch.add(seq, "u")
    with pytest.raises(inert.InertTypeError, match="seq"):
        batch.finish(seq)
    assert len(batch) == 1 and 1 in batch
    assert batch.finish(1).results == []
    batch.close()


def _released(before: set[threading.Thread], journal: inert.Journal) -> None:
    """Once the orchestrator is collected, every inert thread started since ``before`` exits
    (joined, the watchdog only bounds it) and then ``journal``, which it opened, is closed."""
    gc.collect()
    for thread in set(threading.enumerate()) - before:
        if thread.name.startswith("inert-"):
            thread.join(WATCHDOG)
            assert not thread.is_alive(), f"{thread.name} outlived its collected orchestrator"
    assert isinstance(journal, inert.SqliteJournal)
    with pytest.raises(sqlite3.ProgrammingError):
        journal._db.execute("SELECT 1")  # closed


def test_a_batch_collected_without_close_stops_its_workers_and_closes_its_journal(tmp_path: Any) -> None:
    """Every sequence finished and close() never called: the idle worker (and the journal it
    opened from a path) stayed for ever, one per batch a server built and dropped."""
    before = set(threading.enumerate())
    batch = inert.BatchOrchestrator(EFFECTS, Recorder().tools(), vocab=VOCAB, journal=tmp_path / "j.sqlite")
    batch.add(0, "t")
    batch.draft([0], [[0]])
    batch.verify([0], [1])
    assert len(batch.finish(0).results) == 1
    journal = batch.journal
    del batch
    _released(before, journal)


def test_a_lone_turn_collected_unfinished_stops_its_workers_and_closes_what_it_opened(tmp_path: Any) -> None:
    before = set(threading.enumerate())
    orch = inert.Orchestrator(
        EFFECTS, Recorder().tools(), turn_key="t", journal=tmp_path / "j.sqlite", trace=tmp_path / "t.jsonl"
    )
    orch.draft([LOOK, PAY])
    journal = orch.journal
    del orch
    _released(before, journal)
    assert "turn_start" in (tmp_path / "t.jsonl").read_text()


# -- a lone turn abandoned: close(), and its with block --


def test_close_abandons_a_lone_turn() -> None:
    recorder = Recorder()
    journal = inert.MemoryJournal()
    orch = inert.Orchestrator(EFFECTS, recorder.tools(), turn_key="t", journal=journal)
    orch.draft([LOOK, PAY, SEND])
    assert recorder.inside.wait(WATCHDOG)
    report = orch.close()
    assert report is not None
    _check_abandoned(recorder, journal, report)
    assert orch.close() is None, "closed already"
    with pytest.raises(inert.StreamFinishedError):
        orch.draft([LOOK])


def test_close_after_finish_returns_nothing() -> None:
    orch = inert.Orchestrator(EFFECTS, Recorder().tools(), turn_key="t")
    orch.draft([LOOK])
    orch.verify(1)
    assert [r.name for r in orch.finish().results] == ["look"]
    assert orch.close() is None


def test_a_with_block_left_on_an_exception_abandons_the_turn_quietly() -> None:
    recorder = Recorder()
    journal = inert.MemoryJournal()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the exception says enough
        with (
            pytest.raises(RuntimeError, match="client went away"),
            inert.Orchestrator(EFFECTS, recorder.tools(), turn_key="t", journal=journal) as orch,
        ):
            orch.draft([LOOK, PAY, SEND])
            assert recorder.inside.wait(WATCHDOG)
            raise RuntimeError("client went away")
    assert recorder.of("abort") == 1 and recorder.of("commit") == 0 and recorder.of("send") == 0


def test_a_with_block_left_without_finish_warns() -> None:
    recorder = Recorder()
    with (
        pytest.warns(inert.TurnAbandonedWarning, match="without finish"),
        inert.Orchestrator(EFFECTS, recorder.tools(), turn_key="t") as orch,
    ):
        orch.draft([PAY])
        assert recorder.inside.wait(WATCHDOG)
    assert recorder.events == ["prepare", "abort"]


def test_close_never_commits_what_only_the_end_of_a_lone_turn_would_confirm() -> None:
    recorder = Recorder()
    with inert.Orchestrator(EFFECTS, recorder.tools(), format="llama3_json", turn_key="t") as orch:
        orch.draft(['{"name": "send", "parameters": {"to": "bo"}}'])
        orch.verify(1)
        report = orch.close()
    assert report is not None and report.results == [] and recorder.events == []


def test_async_close_abandons_the_turn() -> None:
    recorder = Recorder()
    journal = inert.MemoryJournal()

    async def main() -> None:
        with pytest.raises(RuntimeError, match="cancelled request"):
            async with inert.AsyncOrchestrator(EFFECTS, recorder.tools(), turn_key="t", journal=journal) as orch:
                await orch.draft([LOOK, PAY, SEND])
                await asyncio.to_thread(recorder.inside.wait, WATCHDOG)
                raise RuntimeError("cancelled request")

    asyncio.run(asyncio.wait_for(main(), WATCHDOG))
    assert recorder.events.count("prepare") == 1 and recorder.of("abort") == 1 and recorder.of("send") == 0
    assert _phases(journal) == [("abort", "ok"), ("prepare", "ok")]


def test_a_cancelled_async_finish_can_be_awaited_again() -> None:
    """A request timeout cancels finish() while it waits for a call: the report used to be
    lost, and a second finish() raised StreamFinishedError. It goes on waiting now."""
    release = threading.Event()

    def slow(n: int) -> int:
        release.wait(WATCHDOG)
        return n

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"s": "write"}, {"s": slow}, turn_key="t")
        await orch.draft([block("s", n=1)])
        await orch.verify(1)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(orch.finish(), 0.05)
        release.set()
        report = await asyncio.wait_for(orch.finish(), WATCHDOG)
        with pytest.raises(inert.StreamFinishedError):
            await orch.finish()
        assert await orch.close() is None
        return report

    assert [r.result for r in asyncio.run(main()).results] == [1]


def test_close_after_an_interrupted_finish_reports_the_finished_turn() -> None:
    """finish() interrupted while it waited (its end already applied): close() waits and
    reports that turn, it does not abandon it."""
    release = threading.Event()

    def slow(n: int) -> int:
        release.wait(WATCHDOG)
        return n

    async def main() -> inert.Report | None:
        orch = inert.AsyncOrchestrator({"s": "write"}, {"s": slow}, format="llama3_json", turn_key="t")
        await orch.draft(['{"name": "s", "parameters": {"n": 1}}'])
        await orch.verify(1)  # accepted; only the end of the turn confirms it
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(orch.finish(), 0.05)
        release.set()
        return await asyncio.wait_for(orch.close(), WATCHDOG)

    report = asyncio.run(main())
    assert report is not None and [r.result for r in report.results] == [1]
