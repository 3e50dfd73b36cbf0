"""Virtual time: an event queue and a clock that jumps from event to event."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

__all__ = ["VirtualLoop"]


class VirtualLoop:
    """Runs callbacks in time order on a clock that only moves when told to."""

    def __init__(self) -> None:
        self.now = 0.0
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()

    def at(self, t: float, fn: Callable[[], None]) -> None:
        """Runs ``fn`` at virtual time ``t`` (not before now)."""
        heapq.heappush(self._queue, (max(t, self.now), next(self._seq), fn))

    def run_until(self, t: float) -> None:
        """Runs every callback due by ``t``, then sets the clock to ``t``."""
        while self._queue and self._queue[0][0] <= t:
            when, _, fn = heapq.heappop(self._queue)
            self.now = when
            fn()
        self.now = max(self.now, t)

    def run(self) -> None:
        """Runs until nothing is scheduled."""
        while self._queue:
            self.run_until(self._queue[0][0])
