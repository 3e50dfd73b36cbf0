"""Small helpers the gate tests share: Hermes blocks, and a tool that measures its own concurrency."""

from __future__ import annotations

import json
import threading
import time
from typing import Any


def block(name: str, **arguments: Any) -> str:
    """One Hermes tool-call block."""
    return f'<tool_call>{json.dumps({"name": name, "arguments": arguments})}</tool_call>'


class PeakConcurrency:
    """A tool body that sleeps ``delay`` seconds and records how many copies ran at once."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.peak = 0
        self._active = 0
        self._lock = threading.Lock()

    def __call__(self, **_: Any) -> None:
        with self._lock:
            self._active += 1
            self.peak = max(self.peak, self._active)
        time.sleep(self.delay)
        with self._lock:
            self._active -= 1
