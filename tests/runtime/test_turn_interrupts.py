"""A KeyboardInterrupt inside a lone Orchestrator's or AsyncOrchestrator's step, end or
report, found by a helper: a verify interrupted as it confirmed or retracted a prepared
call lost the decision (finish() then waited for the call's fate for ever); a finish() or
close() interrupted as it ended the turn was never retried by the next one (the same
hang); an interrupt while the report was made lost it (finish() again said it had been
returned). Each interrupt is raised by the code it lands in, as a Ctrl-C landing there
would; nothing waits on timing."""

from __future__ import annotations

import asyncio
import json
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import inert
from inert.audit.trace import TraceWriter
from inert.runtime import AsyncRuntime, ThreadRuntime
from inert.runtime.schedule import Scheduler
from inert.turn import TurnDriver
from tools import WATCHDOG, LoggedPhases, Puts, block, raise_once, two_sequences

RUNTIMES = ["threads", "asyncio"]


class _Staged(LoggedPhases):
    """A two-phase write: what each phase did; ``prepared`` is set once it prepared."""

    def __init__(self) -> None:
        super().__init__()
        self.prepared = threading.Event()

    def prepare(self, n: int) -> int:
        staged = super().prepare(n)
        self.prepared.set()
        return staged


class _Lone:
    """One turn's orchestrator, driven the same way under threads and asyncio: each call
    returns (or raises) what the orchestrator's method did, and a hang fails the test."""

    def __init__(self, runtime: str, tools: dict[str, Any], journal: inert.MemoryJournal) -> None:
        self.loop = asyncio.new_event_loop() if runtime == "asyncio" else None
        kind = inert.AsyncOrchestrator if runtime == "asyncio" else inert.Orchestrator
        self.orch: Any = kind({name: "write" for name in tools}, tools, turn_key="t", journal=journal)
        self.runtime = AsyncRuntime if runtime == "asyncio" else ThreadRuntime

    def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.loop is not None:
            # Run as the coroutine's own task, not under wait_for: a KeyboardInterrupt would
            # come out of both tasks, the second time in the next call's run. A hang stops the loop.
            watchdog = self.loop.call_later(WATCHDOG, self.loop.stop)
            try:
                return self.loop.run_until_complete(getattr(self.orch, method)(*args, **kwargs))
            except RuntimeError as exc:
                raise AssertionError(f"{method}() did not return: the turn hangs") from exc
            finally:
                watchdog.cancel()
        out: list[Any] = []

        def run() -> None:
            try:
                out.append(getattr(self.orch, method)(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed back to the test thread
                out.append(exc)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(WATCHDOG)
        assert out, f"{method}() did not return: the turn hangs"
        if isinstance(out[0], BaseException):
            raise out[0]
        return out[0]

    def until(self, event: threading.Event) -> bool:
        """Waits for ``event``, the loop running meanwhile (its tasks run the tools)."""
        if self.loop is not None:
            return self.loop.run_until_complete(asyncio.to_thread(event.wait, WATCHDOG))
        return event.wait(WATCHDOG)

    def close_loop(self) -> None:
        if self.loop is not None:
            self.loop.close()


@pytest.fixture(params=RUNTIMES)
def prepared(request: pytest.FixtureRequest) -> Iterator[tuple[_Lone, _Staged, inert.MemoryJournal]]:
    """A turn whose two-phase write prepared on draft tokens and waits for its fate."""
    tool, journal = _Staged(), inert.MemoryJournal()
    lone = _Lone(request.param, {"t": tool}, journal)
    lone("draft", [block("t", n=1)])
    assert lone.until(tool.prepared)
    yield lone, tool, journal
    lone.close_loop()


def test_a_verify_interrupted_as_it_confirms_still_commits(
    monkeypatch: pytest.MonkeyPatch, prepared: tuple[_Lone, _Staged, inert.MemoryJournal]
) -> None:
    """The accepted call's confirmation was lost: it was retracted at the end (missed) or,
    before the end-of-turn net, waited for for ever. It stays queued and is acted on next."""
    lone, tool, journal = prepared
    raise_once(monkeypatch, lone.runtime, "confirm")
    with pytest.raises(KeyboardInterrupt):
        lone("verify", 1, ".")
    report = lone("finish")
    assert [(r.name, r.result) for r in report.results] == [("t", 1)]
    assert tool.log == ["prepare", "commit"]
    assert not inert.recover(journal).prepared


def test_a_verify_interrupted_as_it_retracts_still_aborts(
    monkeypatch: pytest.MonkeyPatch, prepared: tuple[_Lone, _Staged, inert.MemoryJournal]
) -> None:
    lone, tool, journal = prepared
    raise_once(monkeypatch, lone.runtime, "retract")
    with pytest.raises(KeyboardInterrupt):
        lone("verify", 0, ".")
    report = lone("finish")
    assert report.results == [] and [d.name for d in report.discarded] == ["t"]
    assert tool.log == ["prepare", "abort"]
    assert not inert.recover(journal).prepared


@pytest.mark.parametrize("first", ["finish", "close"])
@pytest.mark.parametrize("again", ["finish", "close"])
def test_an_end_cut_short_is_finished_by_the_next_finish_or_close(
    monkeypatch: pytest.MonkeyPatch, prepared: tuple[_Lone, _Staged, inert.MemoryJournal], first: str, again: str
) -> None:
    """finish() interrupted as the end of the turn was applied (its retraction of the never
    verified call lost), or close() interrupted inside that retraction: the next finish() or
    close() only waited, for a call whose fate never came."""
    lone, tool, journal = prepared
    raise_once(monkeypatch, *((TurnDriver, "apply") if first == "finish" else (lone.runtime, "retract")))
    with pytest.raises(KeyboardInterrupt), warnings.catch_warnings():
        warnings.simplefilter("ignore", inert.TurnAbandonedWarning)
        lone(first)
    report = lone(again)
    assert report is not None and report.results == []
    assert tool.log == ["prepare", "abort"]
    assert not inert.recover(journal).prepared


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_report_cut_short_is_returned_by_the_next_finish(monkeypatch: pytest.MonkeyPatch, runtime: str) -> None:
    """The turn was marked reported before its report was made: finish() again raised
    StreamFinishedError ("its report was returned already") and the report was gone."""
    put = Puts()
    lone = _Lone(runtime, {"put": put}, inert.MemoryJournal())
    lone("draft", [block("put", n=1)])
    lone("verify", 1, ".")
    raise_once(monkeypatch, TurnDriver, "report")
    with pytest.raises(KeyboardInterrupt):
        lone("finish")
    assert [(r.name, r.result) for r in lone("finish").results] == [("put", 1)]
    assert put.ran == [1]
    assert lone("close") is None
    lone.close_loop()


@pytest.mark.parametrize("where", ["plan", "adopt", "_scheduled", "_act"])
def test_an_interrupt_before_a_steps_commands_are_queued_loses_no_accepted_call(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Found by a helper attacking the queue: an interrupt while the gate worked out the step
    (before its commands were queued) lost the accepted write with no word in the report. The
    gate now plans without changing anything, and the step's outcomes are kept until planned."""
    from inert.gate import Gate

    put = Puts()
    orch = inert.Orchestrator({"put": "write"}, {"put": put}, turn_key="t")
    orch.draft([block("put", n=1), "x"])
    raise_once(monkeypatch, *((Gate, where) if where in ("plan", "adopt") else (TurnDriver, where)))
    with pytest.raises(KeyboardInterrupt):
        orch.verify(1, ".")
    report = orch.finish(strict=False)
    assert [(r.name, r.result) for r in report.results] == [("put", 1)]
    assert report.violations == [] and put.ran == [1]
    assert [c.name for c in report.accepted] == ["put"], "committed once, planned again or not"


def test_an_interrupt_in_one_sequences_step_leaves_the_others_to_their_next_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by a helper: a batch step took every sequence's outcomes from the core, then
    applied them one by one; an interrupt in the first dropped the second's accepted write."""
    put = Puts()
    batch = two_sequences(put)
    raise_once(monkeypatch, ThreadRuntime, "confirm")
    with pytest.raises(KeyboardInterrupt):
        batch.verify([0, 1], [1, 1], [2, 2])
    results = [[r.result for r in batch.finish(seq, strict=False).results] for seq in (0, 1)]
    batch.close()
    assert results == [[1], [2]] and sorted(put.ran) == [1, 2]


def test_a_finish_cut_short_keeps_the_text_the_end_released(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a helper: the text held back until the end ("<tool", which could have opened a
    block) was taken from the core before the interrupt and lost to the finish() after it."""
    orch = inert.Orchestrator({}, {}, turn_key="t", stream=True)
    orch.draft(["Hello", " <tool"])
    shown = orch.verify(2).content
    raise_once(monkeypatch, TurnDriver, "end")
    with pytest.raises(KeyboardInterrupt):
        orch.finish()
    tail = orch.finish().tail
    assert tail is not None and shown + tail.content == "Hello <tool"


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_retraction_retried_after_an_interrupt_traces_one_discard(
    monkeypatch: pytest.MonkeyPatch, runtime: str, tmp_path: Any
) -> None:
    """Found by a helper: an interrupt landing just after the runtime retracted a started
    call (before the step noted it done) made the next step retract it again, and the
    trace got a second ``discard`` event for the one call."""
    trace, release = tmp_path / "trace.jsonl", threading.Event()
    started = threading.Event()

    def read(n: int) -> int:
        started.set()
        release.wait(WATCHDOG)
        return n

    kind = inert.AsyncOrchestrator if runtime == "asyncio" else inert.Orchestrator
    real = (AsyncRuntime if runtime == "asyncio" else ThreadRuntime).retract
    armed = [True]

    def retract_then_interrupt(self: Any, node: Any) -> None:
        real(self, node)
        if armed[0]:
            armed[0] = False
            raise KeyboardInterrupt  # as a Ctrl-C landing as retract returns

    monkeypatch.setattr(AsyncRuntime if runtime == "asyncio" else ThreadRuntime, "retract", retract_then_interrupt)
    lone = _Lone.__new__(_Lone)
    lone.loop = asyncio.new_event_loop() if runtime == "asyncio" else None
    lone.orch = kind({"r": "read_only"}, {"r": read}, turn_key="t", trace=str(trace))
    lone("draft", [block("r", n=1)])
    assert lone.until(started)
    with pytest.raises(KeyboardInterrupt):
        lone("verify", 0, ".")
    release.set()
    lone("finish")  # acts on what the interrupt cut short first
    lone.close_loop()
    events = [json.loads(line)["event"] for line in trace.read_text().splitlines()]
    assert events.count("discard") == 1


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("effect", ["read_only", "write"])
def test_an_interrupt_as_the_runtime_starts_a_call_leaves_it_run_once(
    monkeypatch: pytest.MonkeyPatch, runtime: str, effect: str
) -> None:
    """Found by a helper: a Ctrl-C landing in the runtime's start of a call (its trace
    event, say) left the scheduler counting it running with no worker or task for it, and
    finish() waited for it for ever. A read started on draft tokens was also scheduled a
    second time by the next step (the first node was never handed back)."""
    ran: list[int] = []

    def call(n: int) -> int:
        ran.append(n)
        return n

    tools = {"c": call}
    lone = _Lone.__new__(_Lone)
    lone.loop = asyncio.new_event_loop() if runtime == "asyncio" else None
    kind = inert.AsyncOrchestrator if runtime == "asyncio" else inert.Orchestrator
    lone.orch = kind({"c": effect}, tools, turn_key="t")
    raise_once(monkeypatch, AsyncRuntime if runtime == "asyncio" else ThreadRuntime, "_launch")
    with pytest.raises(KeyboardInterrupt):  # a read starts in its draft, a write in its verify
        lone("draft", [block("c", n=1)])
        lone("verify", 1, ".")
    if effect == "read_only":
        lone("verify", 1, ".")
    report = lone("finish")
    lone.close_loop()
    assert ran == [1]
    assert [(r.name, r.result) for r in report.results] == [("c", 1)]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_calls_let_go_by_a_step_an_interrupt_cut_short_are_in_the_next_steps_dispatched(
    monkeypatch: pytest.MonkeyPatch, runtime: str
) -> None:
    """Listed by an earlier stop: a step cut short by an interrupt as the runtime confirmed
    its accepted call returned no Step, and the next step's ``dispatched`` left the call out,
    so an engine reading steps never heard it was let go."""
    lone = _Lone(runtime, {"t": lambda n: n}, inert.MemoryJournal())
    lone("draft", [block("t", n=1)])  # a plain write: let go once accepted
    raise_once(monkeypatch, lone.runtime, "confirm")
    with pytest.raises(KeyboardInterrupt):
        lone("verify", 1, ".")
    step = lone("draft", ["more"])
    assert [d.name for d in step.dispatched] == ["t"]
    assert lone("verify", 1, ".").dispatched == ()
    report = lone("finish")
    lone.close_loop()
    assert [(r.name, r.result) for r in report.results] == [("t", 1)]


@pytest.mark.parametrize(
    ("owner", "name"),
    [(TraceWriter, "verify"), (TurnDriver, "_scheduled"), (TurnDriver, "apply")],
    ids=["trace-verify", "driver-scheduled", "driver-apply"],
)
def test_an_interrupt_between_a_verify_and_its_plan_loses_no_accepted_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, owner: Any, name: str
) -> None:
    """Found by a helper: a Ctrl-C landing after the stream returned a verify's outcomes
    but before the driver had them (the trace's verify event, the driver's entry) lost the
    accepted write: it never ran and nothing said so. One landing as the plan's let-go calls
    were looked up left them out of every Step.dispatched."""
    ran: list[int] = []

    def put(n: int) -> int:
        ran.append(n)
        return n

    orch = inert.Orchestrator({"put": "write"}, {"put": put}, turn_key="t", trace=str(tmp_path / "t.jsonl"))
    steps = [orch.draft([block("put", n=1), "x"])]
    raise_once(monkeypatch, owner, name)
    with pytest.raises(KeyboardInterrupt):
        orch.verify(1, ".")
    steps += [orch.draft([block("put", n=2)]), orch.verify(1, ".")]
    report = orch.finish()
    assert ran == [1, 2]
    assert [r.arguments["n"] for r in report.results] == [1, 2]
    assert report.tail is not None
    dispatched = [d.arguments["n"] for s in [*steps, report.tail] for d in s.dispatched]
    assert dispatched == [1, 2]


def test_a_retraction_cut_short_in_the_scheduler_is_finished_by_the_next_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a helper: a Ctrl-C landing in the scheduler as it cancelled a rejected write
    that never started left the call cancelled; the next step cancelled it again, and every
    verify and finish after raised CallStateError ('cancelled to cancelled')."""
    ran: list[int] = []

    def put(n: int) -> int:
        ran.append(n)
        return n

    orch = inert.Orchestrator({"put": "write"}, {"put": put}, turn_key="t")
    orch.draft([block("put", n=1)])
    raise_once(monkeypatch, Scheduler, "cancel")
    with pytest.raises(KeyboardInterrupt):
        orch.verify(0, ".")
    orch.draft([block("put", n=2)])
    orch.verify(1, ".")
    report = orch.finish()
    assert ran == [2] and [r.arguments["n"] for r in report.results] == [2]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("end", ["finish", "close"])
def test_a_report_cut_short_as_the_trace_closes_is_returned_by_the_next_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, runtime: str, end: str
) -> None:
    """Found by a helper: the turn was marked reported before its trace was closed, so a
    Ctrl-C landing in the close lost the report (finish() again raised StreamFinishedError).
    It is made once: the trace has one turn_end."""
    put, trace = Puts(), tmp_path / "t.jsonl"
    lone = _Lone.__new__(_Lone)
    lone.loop = asyncio.new_event_loop() if runtime == "asyncio" else None
    kind = inert.AsyncOrchestrator if runtime == "asyncio" else inert.Orchestrator
    lone.orch = kind({"put": "write"}, {"put": put}, turn_key="t", trace=str(trace))
    lone("draft", [block("put", n=1)])
    lone("verify", 1, ".")
    raise_once(monkeypatch, TraceWriter, "close")
    with pytest.raises(KeyboardInterrupt):
        lone(end)
    report = lone(end)
    assert report is not None and [(r.name, r.result) for r in report.results] == [("put", 1)]
    assert lone("close") is None
    lone.close_loop()
    events = [json.loads(line)["event"] for line in trace.read_text().splitlines()]
    assert events.count("turn_end") == 1
