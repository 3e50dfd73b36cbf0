"""Small helpers the tests share: Hermes blocks, a tool that measures its own
concurrency, and views of a step's outcomes."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import inert


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


def closed(outcomes: list[inert.Outcome]) -> list[inert.Call]:
    """The calls that closed (speculatively), in order."""
    return [o.call for o in outcomes if isinstance(o, inert.CallClosed)]


def committed(outcomes: list[inert.Outcome]) -> list[inert.Call]:
    """The calls that committed, in order."""
    return [o.call for o in outcomes if isinstance(o, inert.CallCommitted)]


def malformed(outcomes: list[inert.Outcome]) -> list[inert.Malformed]:
    """The malformed blocks reported, in order."""
    return [o.malformed for o in outcomes if isinstance(o, inert.BlockMalformed)]


def kinds(outcomes: list[inert.Outcome]) -> list[str]:
    return [o.kind for o in outcomes]
