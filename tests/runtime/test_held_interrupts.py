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
