"""An Orchestrator or BatchOrchestrator stepped from two threads at once (a caller's
mistake: each is one per inference loop). Found by a helper: interleaved steps leaked
KeyError, IndexError and StopIteration from inside the turn, and ``finish()`` then
reported accepted writes that were never run. The second step is now refused before it
changes anything. The first step is held inside the orchestrator by the tokens it reads
(a generator waiting on an event), so nothing here waits on timing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

import pytest

import inert
from tools import WATCHDOG, block

T = TypeVar("T")


class _Held(Sequence[T]):
    """Tokens whose first read signals ``inside`` and waits for ``release``: the step
    reading them is held inside the orchestrator (or the StreamBatch, which reads its
    arguments once it is taken for the step)."""

    def __init__(self, inside: threading.Event, release: threading.Event, tokens: list[T]) -> None:
        self._inside, self._release, self._tokens = inside, release, tokens

    def _hold(self) -> None:
        if not self._inside.is_set():
            self._inside.set()
            self._release.wait(WATCHDOG)

    def __len__(self) -> int:
        self._hold()
        return len(self._tokens)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...
    def __getitem__(self, i: int | slice) -> T | Sequence[T]:
        self._hold()
        return self._tokens[i]


def _while_held(step: Callable[[_Held[str]], Any], second: Callable[[], Any], tokens: list[str]) -> None:
    """Runs ``step`` on held tokens in a thread and, while it is inside, ``second`` here."""
    inside, release = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def first() -> None:
        try:
            step(_Held(inside, release, tokens))
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failed.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    assert inside.wait(WATCHDOG)
    try:
        with pytest.raises(inert.ConcurrentUseError, match="another thread is stepping this"):
            second()
    finally:
        release.set()
        thread.join(WATCHDOG)
    assert not failed, failed


def test_a_second_threads_step_is_refused_and_the_first_one_completes() -> None:
    ran: list[str] = []
    orch = inert.Orchestrator({"put": "write"}, {"put": lambda k: ran.append(k)}, turn_key="t")
    _while_held(orch.draft, lambda: orch.draft([block("put", k="second")]), [block("put", k="first")])
    orch.verify(1, ".")
    report = orch.finish()
    assert ran == ["first"] and [r.arguments for r in report.results] == [{"k": "first"}]


def test_a_batch_stepped_from_a_second_thread_is_refused() -> None:
    ran: list[str] = []
    batch = inert.BatchOrchestrator({"put": "write"}, {"put": lambda k: ran.append(k)})
    batch.add(0, "t0")
    _while_held(
        lambda tokens: batch.draft_tree(0, tokens, [-1]), lambda: batch.verify([0], [0]), [block("put", k="first")]
    )
    batch.verify_path(0, [0], ".")
    report = batch.finish(0)
    assert ran == ["first"] and len(report.results) == 1


_VOCAB = inert.Vocabulary(["a", "b", "<tool_call>", "</tool_call>"])
_SECOND_CALLS: dict[str, Callable[[inert.StreamBatch], Any]] = {
    "len": len,
    "contains": lambda b: 0 in b,
    "repr": repr,
    "format": lambda b: b.format,
    "pending_len": lambda b: b.pending_len(0),
    "accepted_text": lambda b: b.accepted_text(0),
    "notices": lambda b: b.notices(0),
    "add": lambda b: b.add(1, "t1"),
    "draft": lambda b: b.draft([0], [[0, 1]]),
    "verify": lambda b: b.verify([0], [0]),
    "draft_trees": lambda b: b.draft_trees([0], [[0]], [-1]),
    "verify_paths": lambda b: b.verify_paths([0], [[0]]),
    "draft_tree": lambda b: b.draft_tree(0, [0], [-1]),
    "verify_path": lambda b: b.verify_path(0, [0]),
    "finish": lambda b: b.finish(0),
    "take_released": lambda b: b.take_released([0]),
}


@pytest.mark.parametrize("second", list(_SECOND_CALLS))
def test_a_stream_batch_reached_during_a_step_raises_concurrent_use(second: str) -> None:
    """Found by a helper: a StreamBatch used from a second thread while a step ran (its core
    works with the GIL released) raised pyo3's bare RuntimeError("Already borrowed"), outside
    inert's hierarchy. Now every method raises ConcurrentUseError, and the step completes."""
    batch = inert.StreamBatch("hermes", _VOCAB)
    batch.add(0, "t0")
    inside, release = threading.Event(), threading.Event()
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(batch.draft([0], [_Held(inside, release, [0, 1])])))
    thread.start()
    assert inside.wait(WATCHDOG)
    try:
        with pytest.raises(inert.ConcurrentUseError, match="inside a step"):
            _SECOND_CALLS[second](batch)
    finally:
        release.set()
        thread.join(WATCHDOG)
    assert out == [{}]
    assert len(batch) == 1 and batch.pending_len(0) == 2
