"""A KeyboardInterrupt while a BatchOrchestrator waits for its calls (in ``finish`` or
``close``) stops the wait, never the calls: found by a helper, an interrupted ``finish``
lost its turn, so the ``with`` block's close closed the journal under it: an accepted
write never ran and left no intent, and one that ran read as in doubt.

The interrupt is raised by the code it lands in (no signal, no timing), as a Ctrl-C landing
there would. The last test is a lone Orchestrator's: a step's lost outcomes held its finish too."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

import inert
from inert import batch as batch_module
from inert import turn as turn_module
from inert.runtime import ThreadRuntime
from inert.turn import TurnDriver
from tools import WATCHDOG, LoggedPhases, Puts, block, finish_within, raise_once, two_sequences


class Writes:
    """A write tool held inside until ``release``; says which ran."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.ran: list[int] = []

    def __call__(self, n: int) -> int:
        self.release.wait(WATCHDOG)
        self.ran.append(n)
        return n


def _batch(tmp_path: Path, tool: Writes) -> tuple[inert.BatchOrchestrator, str]:
    path = str(tmp_path / "journal.sqlite")
    vocab = inert.Vocabulary([block("put", n=1), block("put", n=2), "."])
    batch = inert.BatchOrchestrator({"put": "write"}, {"put": tool}, vocab=vocab, journal=path)
    batch.add(0, "turn")
    batch.draft([0], [[0, 1, 2]])
    batch.verify([0], [3])  # both writes accepted; the first is held inside its tool
    return batch, path


def _journaled(path: str) -> tuple[list[Any], list[Any]]:
    state = inert.recover(path)
    return sorted(e.arguments["n"] for e in state.completed), [e.arguments for e in state.in_doubt]


def test_finish_again_after_an_interrupted_finish_waits_and_reports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    raise_once(monkeypatch, ThreadRuntime, "drain")
    tool = Writes()
    batch, path = _batch(tmp_path, tool)
    with pytest.raises(KeyboardInterrupt):
        batch.finish(0)
    with pytest.raises(inert.BatchError, match="finish\\(\\) was interrupted"):
        batch.add(0, "next")  # the engine reuses the id: its turn is not over yet
    tool.release.set()
    assert [r.result for r in batch.finish(0).results] == [1, 2]
    batch.add(0, "next")
    assert batch.finish(0).results == []
    batch.close()
    assert _journaled(path) == ([1, 2], [])


def test_close_after_an_interrupted_finish_waits_for_its_calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    raise_once(monkeypatch, ThreadRuntime, "drain")
    tool = Writes()
    batch, path = _batch(tmp_path, tool)
    with pytest.raises(KeyboardInterrupt), batch:  # the with block closes it on the way out
        try:
            batch.finish(0)
        finally:
            tool.release.set()
    assert tool.ran == [1, 2], "an accepted write never ran"
    assert _journaled(path) == ([1, 2], [])


def test_an_interrupted_close_leaves_the_journal_to_the_running_calls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    raise_once(monkeypatch, ThreadRuntime, "drain")
    tool = Writes()
    batch, path = _batch(tmp_path, tool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", inert.TurnAbandonedWarning)
        with pytest.raises(KeyboardInterrupt):
            batch.close()
        with pytest.raises(inert.StreamFinishedError):
            batch.draft([0], [[2]])  # closed: nothing new starts
        tool.release.set()
        reports = batch.close()  # waits on, then stops the workers and closes the journal
    assert [r.result for r in reports[0].results] == [1, 2]
    assert batch.close() == {}
    assert _journaled(path) == ([1, 2], [])


def _until_prepared(path: str) -> None:
    journal = inert.SqliteJournal(path)
    try:
        for _ in range(int(WATCHDOG * 100)):
            if any(e.tool == "t" for e in journal.entries()):
                return
            threading.Event().wait(0.01)
    finally:
        journal.close()
    raise AssertionError("the prepare never began")


def _prepared_batch(tmp_path: Path) -> tuple[inert.BatchOrchestrator, LoggedPhases, str]:
    tool = LoggedPhases()
    path = str(tmp_path / "journal.sqlite")
    vocab = inert.Vocabulary([block("t", n=1), "."])
    batch = inert.BatchOrchestrator({"t": "write"}, {"t": tool}, vocab=vocab, journal=path)
    batch.add(0, "turn")
    batch.draft([0], [[0, 1]])  # the block closed in the draft: its prepare runs early
    _until_prepared(path)
    return batch, tool, path


def test_finish_interrupted_before_its_wait_is_finished_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Found by a helper: an interrupt between taking the turn from the batch and holding it
    as ending lost it: finish(seq) again raised UnknownSequenceError and close() closed the
    journal under the accepted write, which never ran."""
    raise_once(monkeypatch, batch_module._Ending, "__init__")  # as the turn is about to be held as ending
    tool = Writes()
    tool.release.set()
    batch, path = _batch(tmp_path, tool)
    with pytest.raises(KeyboardInterrupt):
        batch.finish(0)
    assert [r.result for r in batch.finish(0).results] == [1, 2]
    batch.close()
    assert _journaled(path) == ([1, 2], [])


def test_close_interrupted_while_abandoning_aborts_the_prepared_call_when_called_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Found by a helper: an interrupt as close() abandoned a turn left it out of the batch
    and out of the turns being ended: close() shut the journal, and the call prepared on
    draft tokens was never aborted (recover listed it prepared)."""
    batch, tool, path = _prepared_batch(tmp_path)
    raise_once(monkeypatch, batch_module._Ending, "__init__")  # as the turn is about to be held as ending
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", inert.TurnAbandonedWarning)
        with pytest.raises(KeyboardInterrupt):
            batch.close()
        reports = batch.close()
    assert list(reports) == [0] and tool.log == ["prepare", "abort"]
    assert inert.recover(path).prepared == []


def test_finish_and_close_in_two_threads_both_report_the_turn(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Found by a helper: both waited on the one ending turn and both deleted it; the second
    raised KeyError and its report was lost. The write is held until both wait on it."""
    tool = Writes()
    batch, path = _batch(tmp_path, tool)
    wait = batch_module._Ending.wait
    waiting = threading.Semaphore(0)

    def counted(ending: Any) -> None:
        waiting.release()
        wait(ending)

    monkeypatch.setattr(batch_module._Ending, "wait", counted)
    finished: list[inert.Report] = []
    waiter = threading.Thread(target=lambda: finished.append(batch.finish(0)), daemon=True)
    waiter.start()
    assert waiting.acquire(timeout=WATCHDOG)  # finish() holds the turn as ending and waits
    closer = threading.Thread(target=lambda: finished.append(batch.close()[0]), daemon=True)
    closer.start()
    assert waiting.acquire(timeout=WATCHDOG)  # close() waits on the same turn
    tool.release.set()
    waiter.join(WATCHDOG)
    closer.join(WATCHDOG)
    assert [[r.result for r in report.results] for report in finished] == [[1, 2], [1, 2]]
    assert _journaled(path) == ([1, 2], [])


@pytest.mark.parametrize("again", ["finish", "close"])
def test_an_end_of_turn_cut_short_retracts_what_it_left_undecided(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, again: str
) -> None:
    """Found by a helper: an interrupt while finish applied the end of the turn lost its
    outcomes, so a call prepared on draft tokens waited for its fate for ever, and finish
    again (or close) with it. What the end left undecided is retracted instead, as a close
    retracts it: the prepare is aborted, journaled."""
    batch, tool, path = _prepared_batch(tmp_path)  # never verified: the end of the turn retracts it
    raise_once(monkeypatch, TurnDriver, "apply")
    with pytest.raises(KeyboardInterrupt):
        batch.finish(0)
    if again == "finish":
        assert batch.finish(0, strict=False).results == []
        batch.close()
    else:
        assert list(batch.close()) == [0]
    assert tool.log == ["prepare", "abort"]
    assert inert.recover(path).prepared == []


def test_close_interrupted_inside_a_retraction_still_aborts_the_prepared_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Found by a helper: abandoning dropped each call before retracting it, so an interrupt
    at the retraction lost the prepared call; close() then waited for its fate for ever."""
    batch, tool, path = _prepared_batch(tmp_path)
    raise_once(monkeypatch, ThreadRuntime, "retract")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", inert.TurnAbandonedWarning)
        with pytest.raises(KeyboardInterrupt):
            batch.close()  # abandons every turn, waits for them, then raises what interrupted it
    assert tool.log == ["prepare", "abort"]
    assert inert.recover(path).prepared == []


def test_a_verify_whose_retraction_was_lost_does_not_hold_finish(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Found by a helper: an interrupt while a verify applied its outcomes lost the retraction
    of a prepared call, which then waited for its fate for ever, and finish with it. The end
    of the turn decides every call: one left undecided is retracted."""
    batch, tool, path = _prepared_batch(tmp_path)
    raise_once(monkeypatch, TurnDriver, "apply")
    with pytest.raises(KeyboardInterrupt):
        batch.verify([0], [0])  # rejects the block: the core retracts it, the runtime never hears
    assert batch.finish(0, strict=False).results == []
    batch.close()
    assert tool.log == ["prepare", "abort"]
    assert inert.recover(path).prepared == []


def test_a_lone_turns_verify_whose_retraction_was_lost_does_not_hold_finish(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The same lost retraction in a lone Orchestrator: its finish waited for ever too."""
    tool = LoggedPhases()
    path = str(tmp_path / "journal.sqlite")
    orch = inert.Orchestrator({"t": "write"}, {"t": tool}, turn_key="turn", journal=path)
    orch.draft([block("t", n=1), "."])
    _until_prepared(path)
    raise_once(monkeypatch, TurnDriver, "apply")
    with pytest.raises(KeyboardInterrupt):
        orch.verify(0)
    assert finish_within(orch).results == []
    assert tool.log == ["prepare", "abort"]
    assert inert.recover(path).prepared == []


def test_a_close_cut_short_while_reporting_returns_every_report_when_called_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reports close() had made were dropped when an interrupt came while it made the
    next one, and that turn's too: close() again returned nothing."""
    put = Puts()
    batch = two_sequences(put)
    batch.verify([0, 1], [1, 1], [2, 2])
    real = TurnDriver.report
    made: list[int] = []

    def second_interrupted(driver: TurnDriver, *args: Any, **kwargs: Any) -> Any:
        if len(made) == 1:
            made.append(2)
            raise KeyboardInterrupt
        made.append(1)
        return real(driver, *args, **kwargs)

    monkeypatch.setattr(TurnDriver, "report", second_interrupted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", inert.TurnAbandonedWarning)
        with pytest.raises(KeyboardInterrupt):
            batch.close()
        reports = batch.close()
    assert sorted(reports) == [0, 1]
    assert sorted(r.result for report in reports.values() for r in report.results) == [1, 2]
    assert sorted(put.ran) == [1, 2]


def test_a_finish_cut_short_while_reporting_reports_when_called_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Found by a helper: the turn was let go before its report was made, so a Ctrl-C landing
    in the reconciliation made finish(seq) again raise UnknownSequenceError."""
    tool = Writes()
    tool.release.set()
    batch, path = _batch(tmp_path, tool)
    raise_once(monkeypatch, turn_module, "reconcile")
    with pytest.raises(KeyboardInterrupt):
        batch.finish(0)
    assert [r.result for r in batch.finish(0).results] == [1, 2]
    batch.close()
    assert _journaled(path) == ([1, 2], [])
