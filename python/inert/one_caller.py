"""One inference loop per orchestrator: a step taken while another thread's step is
still in it is refused before it changes anything, never interleaved with it (two
threads' steps interleaved corrupted the turn: accepted writes were never run)."""

from __future__ import annotations

import threading

from .errors import ConcurrentUseError

__all__ = ["OneCaller"]


class OneCaller:
    """``enter()`` before a step, ``leave()`` after it (in a ``finally``): ``enter`` raises
    ConcurrentUseError while another thread is between the two. Plain calls, not a context
    manager: a step is a few microseconds, and ``__enter__``/``__exit__`` in Python cost
    twice what this does."""

    __slots__ = ("_acquire", "_what", "leave")

    def __init__(self, what: str) -> None:
        lock = threading.Lock()
        self._acquire = lock.acquire
        self.leave = lock.release
        self._what = what

    def enter(self) -> None:
        if not self._acquire(False):
            raise ConcurrentUseError(
                f"another thread is stepping this {self._what} now: it is one per inference loop; "
                "step it from one thread, or give each loop its own"
            )
