"""One inference loop per orchestrator: a step taken while another thread's step is
still in it is refused before it changes anything, never interleaved with it (two
threads' steps interleaved corrupted the turn: accepted writes were never run)."""

from __future__ import annotations

import threading
from types import TracebackType

from .errors import ConcurrentUseError

__all__ = ["OneCaller"]


class OneCaller:
    """``with`` around a step: raises ConcurrentUseError if another thread is in one."""

    def __init__(self, what: str) -> None:
        self._lock = threading.Lock()
        self._what = what

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            raise ConcurrentUseError(
                f"another thread is stepping this {self._what} now: it is one per inference loop; "
                "step it from one thread, or give each loop its own"
            )

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._lock.release()
