"""The dispatch journal: an intent before each call, its outcome after.

The orchestrator talks to a journal only through :class:`Journal`, so durable
back ends (SQLite, PostgreSQL) slot in without changing it.
"""

from __future__ import annotations

import threading
from typing import Protocol

from .report import DispatchRecord

__all__ = ["Journal", "MemoryJournal"]


class Journal(Protocol):
    """Where dispatches are recorded. Called from worker threads."""

    def intent(self, record: DispatchRecord) -> None:
        """Records that ``record`` is about to run. Must complete before the tool is called."""

    def outcome(self, record: DispatchRecord) -> None:
        """Records the result or error of ``record``, after the tool returned."""

    def records(self) -> list[DispatchRecord]:
        """Every dispatch, in the order the intents were recorded."""

    def in_doubt(self) -> list[DispatchRecord]:
        """Intents without an outcome."""


class MemoryJournal:
    """A journal that lives as long as the process: enough to reconcile a turn."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[DispatchRecord] = []
        self._open: set[int] = set()

    def intent(self, record: DispatchRecord) -> None:
        with self._lock:
            self._records.append(record)
            self._open.add(id(record))

    def outcome(self, record: DispatchRecord) -> None:
        with self._lock:
            self._open.discard(id(record))

    def records(self) -> list[DispatchRecord]:
        with self._lock:
            return list(self._records)

    def in_doubt(self) -> list[DispatchRecord]:
        with self._lock:
            return [r for r in self._records if id(r) in self._open]
