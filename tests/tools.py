"""Small helpers the tests share: Hermes blocks, how many calls overlapped by the
runtime's own records, optional dependencies that CI requires, and views of a
step's outcomes."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest

import inert
from inert.gate import Dispatch
from inert.runtime import CallRun, CallState, tasks, threads


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
PATIENCE = 3600.0  # seconds: a deadline that must not fire, which no stall of the machine reaches

Fires = Callable[[Dispatch, "str | None"], bool]
"""Whether the deadline of a call (``phase`` None) or of one phase of a two-phase call may fire."""


def deadlines_only_for(
    monkeypatch: pytest.MonkeyPatch, fires: Fires, *, in_tool: bool = True
) -> defaultdict[str, threading.Event]:
    """Only the deadlines that ``fires`` names keep the tool's short timeout; every other
    call and phase, in both runtimes, is given ``PATIENCE`` instead. A test's deadline that
    must fire is on a tool held inside (on an event) or on a held journal, so it fires
    however slow the machine is; a call or phase that returns at once must not be caught
    by the same short timeout when the machine stalls for longer than it between the
    deadline's start and the return. (The tool's spec keeps one timeout for every phase.)
    Slot waits keep their real deadlines.

    ``in_tool``: a deadline that fires waits until its call is inside its tool, so that a
    held tool is always entered (under threads a deadline starts before the journal takes
    the intent, and a stall there would time the call out before it ran; asyncio's start at
    the tool already). False for a test whose deadline must pass while the intent is written:
    it still waits until a worker took the call up (a stall before that would time it out
    before its intent was written at all).

    Returns an event per tool name, set (threads only) once a deadline of it that fires has
    expired its call or found it settled: what a test waits for instead of sleeping past it."""
    fired: defaultdict[str, threading.Event] = defaultdict(threading.Event)
    time_out = threads.ThreadRuntime._time_out

    def threads_time_out(runtime: threads.ThreadRuntime, node: Any, phase: str | None) -> None:
        if fires(node.owner.dispatch, phase):
            if node.owner.state is CallState.STARTED or (in_tool and node.owner.state is CallState.JOURNALING):
                # Not in its tool yet: look again shortly (the timer thread goes on meanwhile).
                runtime.engine.deadlines.add(0.001, lambda: threads_time_out(runtime, node, phase))
                return
            time_out(runtime, node, phase)
            fired[node.owner.dispatch.name].set()
        elif node.owner.dispatch.timeout is not None:  # a patient deadline in its place
            runtime.engine.deadlines.add(PATIENCE, lambda: time_out(runtime, node, phase))

    call_by = tasks.AsyncRuntime._call_by
    phase_of = tasks.AsyncRuntime._phase

    async def tasks_call_by(runtime: tasks.AsyncRuntime, timeout: float, invocation: Any, run: CallRun) -> Any:
        return await call_by(runtime, timeout if fires(run.dispatch, None) else PATIENCE, invocation, run)

    async def tasks_phase(runtime: tasks.AsyncRuntime, run: CallRun, phase: str) -> Any:
        if fires(run.dispatch, phase) or run.dispatch.timeout is None:
            return await phase_of(runtime, run, phase)
        real = run.dispatch  # _phase reads its deadline from the dispatch: a patient one for this phase
        run.dispatch = dataclasses.replace(real, timeout=PATIENCE)
        try:
            return await phase_of(runtime, run, phase)
        finally:
            run.dispatch = real

    monkeypatch.setattr(threads.ThreadRuntime, "_time_out", threads_time_out)
    monkeypatch.setattr(tasks.AsyncRuntime, "_call_by", tasks_call_by)
    monkeypatch.setattr(tasks.AsyncRuntime, "_phase", tasks_phase)
    return fired


class Puts:
    """A write tool ``put(n)`` that says which ``n`` it ran with (``ran``)."""

    def __init__(self) -> None:
        self.ran: list[int] = []

    def __call__(self, n: int) -> int:
        self.ran.append(n)
        return n


def two_sequences(tool: Puts) -> inert.BatchOrchestrator:
    """A BatchOrchestrator whose sequences 0 and 1 have each drafted one ``put`` (n=1, n=2),
    not yet verified: ``verify([0, 1], [1, 1], [2, 2])`` accepts both."""
    vocab = inert.Vocabulary([block("put", n=1), block("put", n=2), "."])
    batch = inert.BatchOrchestrator({"put": "write"}, {"put": tool}, vocab=vocab)
    for seq in (0, 1):
        batch.add(seq, f"turn-{seq}")
    batch.draft([0, 1], [[0], [1]])
    return batch


def raise_once(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> None:
    """The first call of ``owner.name`` raises KeyboardInterrupt, as a Ctrl-C landing there would."""
    real = getattr(owner, name)
    armed = [True]

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        if armed[0]:
            armed[0] = False
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, interrupted)


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


def symlink_loop(folder: Any, name: str) -> Any:
    """``folder/name``, a symbolic link to a link back to it (skips where links cannot be made)."""
    a, b = folder / name, folder / f"other-{name}"
    try:
        a.symlink_to(b)
        b.symlink_to(a)
    except OSError:
        pytest.skip("no symbolic links here")
    return a


def deny_stat(monkeypatch: pytest.MonkeyPatch, path: Any) -> None:
    """``os.stat(path)`` fails with PermissionError, as under a folder that may not be searched
    (any user, root included: chmod does not stop root)."""
    real_stat = os.stat

    def denied(file: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if os.fspath(file) == str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(file, *args, **kwargs)

    monkeypatch.setattr(os, "stat", denied)


class LoggedPhases:
    """A two-phase write that notes each phase it ran (``log``)."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def prepare(self, n: int) -> int:
        self.log.append("prepare")
        return n

    def commit(self, prepared: int, *, idempotency_key: str) -> int:
        self.log.append("commit")
        return prepared

    def abort(self, prepared: int) -> None:
        self.log.append("abort")
