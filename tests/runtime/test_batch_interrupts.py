"""A KeyboardInterrupt while a BatchOrchestrator waits for its calls (in ``finish`` or
``close``) stops the wait, never the calls: found by a helper, an interrupted ``finish``
lost its turn, so the ``with`` block's close closed the journal under it: an accepted
write never ran and left no intent, and one that ran read as in doubt.

The interrupt is raised by the wait itself (no signal, no timing): the first drain raises
it, as a Ctrl-C landing there would."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

import inert
from inert.runtime import ThreadRuntime
from tools import WATCHDOG, block


class Writes:
    """A write tool held inside until ``release``; says which ran."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.ran: list[int] = []

    def __call__(self, n: int) -> int:
        self.release.wait(WATCHDOG)
        self.ran.append(n)
        return n


def _interrupt_first_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    drain = ThreadRuntime.drain
    waits = 0

    def interrupted(runtime: ThreadRuntime) -> None:
        nonlocal waits
        waits += 1
        if waits == 1:
            raise KeyboardInterrupt
        drain(runtime)

    monkeypatch.setattr(ThreadRuntime, "drain", interrupted)


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
    _interrupt_first_wait(monkeypatch)
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
    _interrupt_first_wait(monkeypatch)
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
    _interrupt_first_wait(monkeypatch)
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
