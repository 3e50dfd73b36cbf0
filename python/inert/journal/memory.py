"""A journal in the process's memory: idempotent within the process, gone after it."""

from __future__ import annotations

import dataclasses
import threading
import time

from ..errors import StaleClaimError
from ..report import DispatchRecord
from .protocol import JournalEntry, new_entry, outcome_of, same_call

__all__ = ["MemoryJournal"]


class MemoryJournal:
    """A journal that lives as long as the process: idempotent within it, gone after it.
    The default when an orchestrator is given no journal."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, JournalEntry] = {}

    def begin(self, record: DispatchRecord, turn_key: str) -> JournalEntry | None:
        """Records the intent of ``record``; see :meth:`inert.Journal.begin`.

        Raises:
            IdempotencyConflictError: the key was journaled with another tool or other arguments.
        """
        with self._lock:
            prior = self._entries.get(record.commit_key)
            if prior is not None:
                return same_call(prior, record)
            self._entries[record.commit_key] = new_entry(record, turn_key)
            return None

    def complete(self, record: DispatchRecord, status: str) -> None:
        """Records the outcome of ``record``; see :meth:`inert.Journal.complete`.

        Raises:
            StaleClaimError: no call began ``record``'s key here; nothing was recorded.
        """
        result, error = outcome_of(record, status)
        with self._lock:
            e = self._entries.get(record.commit_key)
            if e is None:
                raise StaleClaimError(
                    f"memory journal: {record.name!r} under key {record.commit_key} was never begun here: only "
                    "the call whose begin() claimed a key records its outcome; this one was not recorded"
                )
            self._entries[record.commit_key] = dataclasses.replace(
                e, status=status, result=result, error=error, finished_at=time.time()
            )

    def entries(self) -> list[JournalEntry]:
        """Every journaled dispatch, in intent order."""
        with self._lock:
            return list(self._entries.values())

    def lookup(self, commit_key: str) -> JournalEntry | None:
        """The entry of ``commit_key``, if any; see :meth:`inert.Journal.lookup`."""
        with self._lock:
            return self._entries.get(commit_key)
