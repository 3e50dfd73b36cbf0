"""A real SIGINT (Ctrl-C) arriving inside a runtime's command, found by a helper that
injected interrupts at every method a step passes through: one landing in the scheduler
as it permitted a call (``_try_start``, ``Slots.take``), in its chains (``_link``,
``_Barrier``) or in the runtime's start of a call left the scheduler counting a call
running that nothing ran, and finish() waited for ever. The signal is sent by the code
it lands in (``signal.raise_signal``), on the main thread, as a Ctrl-C arriving there
would be; nothing waits on timing. The command finishes, then the KeyboardInterrupt is
raised, and the next step goes on."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest

import inert
from inert.interrupts import InterruptsHeld
from inert.runtime import AsyncRuntime, ThreadRuntime
from inert.runtime.schedule import Scheduler, Slots, _Barrier
from tools import WATCHDOG, block, finish_within


def _signal_once(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[bool]:
    """The first call of ``owner.name`` sends the process a SIGINT, then does its work;
    returns a flag set once it has."""
    real = getattr(owner, name)
    sent: list[bool] = []

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        if not sent:
            sent.append(True)
            signal.raise_signal(signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, interrupted)
    return sent


_PLACES: list[tuple[str, Callable[[str], Any], str]] = [
    ("link", lambda _: Scheduler, "_link"),
    ("barrier-wait", lambda _: _Barrier, "wait"),
    ("barrier-join", lambda _: _Barrier, "join"),
    ("try-start", lambda _: Scheduler, "_try_start"),
    ("slots-free", lambda _: Slots, "free"),
    ("slots-take", lambda _: Slots, "take"),
    ("start", lambda r: AsyncRuntime if r == "asyncio" else ThreadRuntime, "_start"),
    ("launch", lambda r: AsyncRuntime if r == "asyncio" else ThreadRuntime, "_launch"),
    ("hand-over", lambda r: AsyncRuntime if r == "asyncio" else ThreadRuntime, "_hand_over"),
]


@pytest.mark.parametrize("runtime", ["threads", "asyncio"])
@pytest.mark.parametrize(("owner", "name"), [(o, n) for _, o, n in _PLACES], ids=[i for i, _, _ in _PLACES])
@pytest.mark.parametrize("effect", ["read_only", "write"])
def test_a_ctrl_c_inside_a_runtime_command_leaves_the_turn_whole(
    monkeypatch: pytest.MonkeyPatch, runtime: str, owner: Callable[[str], Any], name: str, effect: str
) -> None:
    ran: list[int] = []

    def call(n: int) -> int:
        ran.append(n)
        return n

    steps: list[Callable[[Any], Any]] = [
        lambda orch: orch.draft([block("c", n=1)]),  # a read starts here
        lambda orch: orch.verify(1, "."),  # a write here
    ]
    if runtime == "threads":
        orch: Any = inert.Orchestrator({"c": effect}, {"c": call}, turn_key="t")
        sent = _signal_once(monkeypatch, owner(runtime), name)
        interrupts = 0
        for step in steps:
            try:
                step(orch)
            except KeyboardInterrupt:
                interrupts += 1
        report = finish_within(orch)
    else:
        loop = asyncio.new_event_loop()
        orch = inert.AsyncOrchestrator({"c": effect}, {"c": call}, turn_key="t")
        sent = _signal_once(monkeypatch, owner(runtime), name)
        interrupts = 0
        for step in steps:
            try:
                loop.run_until_complete(step(orch))
            except KeyboardInterrupt:
                interrupts += 1
        watchdog = loop.call_later(WATCHDOG, loop.stop)
        try:
            report = loop.run_until_complete(orch.finish())
        except RuntimeError as exc:
            raise AssertionError("finish() did not return: the turn hangs") from exc
        finally:
            watchdog.cancel()
            loop.close()
    assert sent, f"no step passed through {name}"
    assert interrupts == 1  # the Ctrl-C is raised once the command is done, never lost
    assert ran == [1]
    assert [(r.name, r.result) for r in report.results] == [("c", 1)]


def test_a_ctrl_c_held_off_is_raised_at_the_end_of_the_block() -> None:
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt), InterruptsHeld():
        signal.raise_signal(signal.SIGINT)
        done.append("rest of the block")
    assert done == ["rest of the block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_nested_blocks_hold_it_until_the_outermost_ends() -> None:
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt), InterruptsHeld():
        with InterruptsHeld():
            signal.raise_signal(signal.SIGINT)
        done.append("after the inner block")
    assert done == ["after the inner block"]


def test_the_handler_it_found_is_the_one_called(monkeypatch: pytest.MonkeyPatch) -> None:
    """A serving engine's own SIGINT handler (a graceful shutdown) still gets the signal."""
    got: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        with InterruptsHeld():
            signal.raise_signal(signal.SIGINT)
            assert got == []
        assert got == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_every_ctrl_c_held_off_reaches_the_handler() -> None:
    """Found by a helper: only the first was noted, so asyncio's handler, which cancels the
    main task on the first Ctrl-C and force-quits on the second, never got the second."""
    got: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        with InterruptsHeld(), InterruptsHeld():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
        assert got == [signal.SIGINT, signal.SIGINT]
        with InterruptsHeld():
            pass
        assert len(got) == 2  # nothing noted is left for a later block
    finally:
        signal.signal(signal.SIGINT, previous)


def test_off_the_main_thread_it_does_nothing() -> None:
    out: list[object] = []

    def body() -> None:
        with InterruptsHeld():
            out.append(signal.getsignal(signal.SIGINT))

    worker = threading.Thread(target=body)
    worker.start()
    worker.join(WATCHDOG)
    assert out == [signal.default_int_handler]


def test_an_ignored_sigint_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with InterruptsHeld():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


class _CtrlCAfter:
    """A batch's core whose ``name`` call is followed by a SIGINT, as a Ctrl-C arriving while
    the core ran would be handled as it returns."""

    def __init__(self, core: Any, name: str) -> None:
        self._core, self._name, self.sent = core, name, False

    def __getattr__(self, attr: str) -> Any:
        real = getattr(self._core, attr)
        if attr != self._name or self.sent:
            return real

        def then_ctrl_c(*args: Any, **kwargs: Any) -> Any:
            out = real(*args, **kwargs)
            self.sent = True
            signal.raise_signal(signal.SIGINT)
            return out

        return then_ctrl_c

    def __contains__(self, seq: object) -> bool:
        return seq in self._core


def _batch_of_puts(ran: list[int]) -> inert.BatchOrchestrator:
    def put(n: int) -> int:
        ran.append(n)
        return n

    vocab = inert.Vocabulary([block("put", n=1), block("put", n=2), "."])
    return inert.BatchOrchestrator({"put": "write"}, {"put": put}, vocab=vocab)


@pytest.mark.parametrize("step", ["draft", "verify", "finish"])
def test_a_ctrl_c_as_the_batchs_core_returns_loses_no_outcome(step: str) -> None:
    """Found by a helper: the outcomes the core returned were lost to a Ctrl-C landing before
    the drivers had them; the accepted write never ran (or a later step raised StopIteration)."""
    ran: list[int] = []
    batch = _batch_of_puts(ran)
    core = batch._batch = _CtrlCAfter(batch._batch, step)  # type: ignore[assignment]
    batch.add(0, "t")
    interrupts = 0
    acts: list[Callable[[], object]] = [
        lambda: batch.draft([0], [[0]]),
        lambda: batch.verify([0], [1], [2]),
        lambda: batch.draft([0], [[1]]),
        lambda: batch.verify([0], [1], [2]),
    ]
    for act in acts:
        try:
            act()
        except KeyboardInterrupt:
            interrupts += 1
    try:
        report = batch.finish(0)
    except KeyboardInterrupt:
        interrupts += 1
        report = batch.finish(0)
    batch.close()
    assert core.sent and interrupts == 1
    assert sorted(ran) == [1, 2]
    assert sorted(r.result for r in report.results) == [1, 2]


def test_a_ctrl_c_as_a_sequence_is_added_leaves_it_whole() -> None:
    """Found by a helper: one landing after the core took the sequence but before its driver
    existed wedged it: add again raised BatchError, draft and finish a raw KeyError."""
    ran: list[int] = []
    batch = _batch_of_puts(ran)
    batch._batch = _CtrlCAfter(batch._batch, "add")  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        batch.add(0, "t")
    batch.draft([0], [[0]])
    batch.verify([0], [1], [2])
    assert [r.result for r in batch.finish(0).results] == [1]
    batch.close()


@pytest.mark.parametrize("runtime", ["threads", "asyncio"])
@pytest.mark.parametrize("step", ["draft", "verify", "finish"])
def test_a_ctrl_c_as_the_streams_step_returns_loses_no_accepted_call(runtime: str, step: str) -> None:
    """Found by a helper: a SIGINT arriving while the core ran a step was handled as its call
    returned, before the driver had the outcomes: the accepted write never ran, later steps
    raised StopIteration, and at finish() a block only the end confirms was dropped silently."""
    ran: list[int] = []

    def put(n: int) -> int:
        ran.append(n)
        return n

    loop = asyncio.new_event_loop() if runtime == "asyncio" else None
    kind = inert.AsyncOrchestrator if runtime == "asyncio" else inert.Orchestrator
    orch: Any = kind({"put": "write"}, {"put": put}, turn_key="t")
    core = orch._s.stream = _CtrlCAfter(orch._s.stream, step)

    def run(method: str, *args: Any) -> Any:
        if loop is None:
            return getattr(orch, method)(*args)
        return loop.run_until_complete(getattr(orch, method)(*args))

    interrupts = 0
    for method, args in [("draft", ([block("put", n=1)],)), ("verify", (1, None)), ("finish", ())]:
        try:
            report = run(method, *args)  # the block closes in the draft, is confirmed by the end
        except KeyboardInterrupt:
            interrupts += 1
            report = run(method, *args) if method == "finish" else None
    if loop is not None:
        loop.close()
    assert core.sent and interrupts == 1
    assert ran == [1]
    assert [(r.name, r.result) for r in report.results] == [("put", 1)]


def test_a_ctrl_c_held_to_the_end_of_a_calls_conclusion_is_not_logged_as_never_retrieved(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by a helper: raised as the held conclusion ended, the KeyboardInterrupt left the
    call's task, out of the loop; the task-end net, seeing the call concluded, never read it,
    and asyncio logged "Task exception was never retrieved" with a traceback."""
    ran: list[int] = []

    def put(n: int) -> int:
        ran.append(n)
        return n

    sent = _signal_once(monkeypatch, Scheduler, "finish")
    loop = asyncio.new_event_loop()
    orch = inert.AsyncOrchestrator({"put": "write"}, {"put": put}, turn_key="t")
    loop.run_until_complete(orch.draft([block("put", n=1)]))
    loop.run_until_complete(orch.verify(1, "."))
    finishing = asyncio.ensure_future(orch.finish(), loop=loop)
    interrupts = 0
    while True:
        try:
            report = loop.run_until_complete(finishing)
            break
        except KeyboardInterrupt:
            interrupts += 1
            assert interrupts < 3
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        loop.close()
        gc.collect()  # asyncio logs a task's unread exception as the task is collected
    assert sent and interrupts == 1
    assert [(r.name, r.result) for r in report.results] == [("put", 1)] and ran == [1]
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
