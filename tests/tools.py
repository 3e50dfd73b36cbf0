"""Small helpers the tests share: Hermes blocks, how many calls overlapped by the
runtime's own records, optional dependencies that CI requires, and views of a
step's outcomes."""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

import inert


def block(name: str, **arguments: Any) -> str:
    """One Hermes tool-call block."""
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def peak_overlap(records: Iterable[inert.DispatchRecord]) -> int:
    """The most calls that were in their tools at once, from the start and finish times
    the runtime recorded. Exact, not a measurement: a call that another call's end lets
    go is started (under the runtime's lock) after that end is recorded, and calls let
    go together are all started before any of them can record its end."""
    edges = sorted(
        e
        for r in records
        if r.started is not None and r.finished is not None
        for e in ((r.started, 1), (r.finished, -1))
    )  # at a tie an end (-1) sorts first
    peak = running = 0
    for _, delta in edges:
        running += delta
        peak = max(peak, running)
    return peak


class HeldJournal:
    """A real journal, watched: ``completed[tool]`` is set once an outcome of that tool is
    journaled (``completed_at[tool]`` says when, on the runtimes' clock), and the outcomes
    of the tool named ``hold`` wait, before they are written, until ``release`` is set."""

    def __init__(
        self,
        inner: inert.Journal,
        hold: str | None = None,
        release: threading.Event | None = None,
        watchdog: float = 30.0,
    ) -> None:
        self.inner, self.hold, self.watchdog = inner, hold, watchdog
        self.release = release if release is not None else threading.Event()
        self.completing = threading.Event()
        """Set when an outcome of ``hold`` reached the journal (and waits there)."""
        self.completed: defaultdict[str, threading.Event] = defaultdict(threading.Event)
        self.completed_at: dict[str, float] = {}
        self._lock = threading.Lock()

    def begin(self, record: inert.DispatchRecord, turn_key: str) -> inert.JournalEntry | None:
        return self.inner.begin(record, turn_key)

    def complete(self, record: inert.DispatchRecord, status: str) -> None:
        if record.name == self.hold:
            self.completing.set()
            self.release.wait(self.watchdog)  # a hang guard: the test releases it
        self.inner.complete(record, status)
        with self._lock:
            self.completed_at[record.name] = time.perf_counter()
            self.completed[record.name].set()

    def entries(self) -> list[inert.JournalEntry]:
        return self.inner.entries()

    def lookup(self, commit_key: str) -> inert.JournalEntry | None:
        return self.inner.lookup(commit_key)


def ci() -> bool:
    """Whether this run is CI's (``CI`` set true, as CI services and ``.ci/run`` do)."""
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(module: str, why: str) -> Any:
    """Imports an optional test dependency: skips the test without it, except under CI,
    where the ``test`` extra installs it and its absence must fail, not pass by skipping."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if ci():
            pytest.fail(f"{module} is required under CI ({why}; the test extra installs it): {e}", pytrace=False)
        pytest.skip(f"{module} is not installed ({why}): pip install -e '.[test]'")


def closed(outcomes: Sequence[inert.Outcome]) -> list[inert.Call]:
    """The calls that closed (speculatively), in order."""
    return [o.call for o in outcomes if isinstance(o, inert.CallClosed)]


def committed(outcomes: Sequence[inert.Outcome]) -> list[inert.Call]:
    """The calls that committed, in order."""
    return [o.call for o in outcomes if isinstance(o, inert.CallCommitted)]


def malformed(outcomes: Sequence[inert.Outcome]) -> list[inert.Malformed]:
    """The malformed blocks reported, in order."""
    return [o.malformed for o in outcomes if isinstance(o, inert.BlockMalformed)]


def call_outcomes(
    outcomes: Sequence[inert.Outcome],
) -> list[inert.CallClosed | inert.CallCommitted | inert.CallRetracted]:
    """The outcomes, all of them calls': a malformed block among them fails the test."""
    assert not malformed(outcomes), outcomes
    return [o for o in outcomes if not isinstance(o, inert.BlockMalformed)]


def kinds(outcomes: Sequence[inert.Outcome]) -> list[str]:
    return [o.kind for o in outcomes]


def as_call(found: inert.Call | inert.Malformed | inert.ReasoningUnopened) -> inert.Call:
    """An item of a one-shot parse that must be a call (anything else fails the test)."""
    assert isinstance(found, inert.Call), found
    return found


def as_calls(found: Sequence[inert.Call | inert.Malformed | inert.ReasoningUnopened]) -> list[inert.Call]:
    """The items of a one-shot parse, all of which must be calls."""
    return [as_call(f) for f in found]


WATCHDOG = 20.0  # seconds a finish() may take before a test calls it a hang


def finish_within(orch: Any, strict: bool = False) -> inert.Report:
    """``orch.finish()`` in a thread; a hang fails the test instead of freezing the suite."""
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(_catch(lambda: orch.finish(strict=strict))), daemon=True)
    t.start()
    t.join(WATCHDOG)
    assert out, "finish() did not return: the turn hangs"
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]  # type: ignore[no-any-return]


def _catch(fn: Any) -> Any:
    try:
        return fn()
    except BaseException as e:  # noqa: BLE001 - handed back to the test thread
        return e
