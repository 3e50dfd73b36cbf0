"""The dispatch journal: an intent recorded before each call, its outcome after.

The commit key is the journal's primary key, which makes it an idempotency
key (as with Stripe's and the IETF draft's): a key already journaled is never
dispatched again; its recorded outcome is returned instead, and the same key
with other arguments is a conflict. The orchestrator talks to a journal only
through :class:`Journal`, so a PostgreSQL journal for fleets can follow.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from .report import DispatchRecord

__all__ = ["Journal", "JournalEntry", "MemoryJournal", "SqliteJournal", "Recovery", "recover", "canonical_arguments"]

OK, ERROR, TIMEOUT = "ok", "error", "timeout"


def canonical_arguments(arguments: dict[str, Any]) -> str:
    """The arguments as canonical JSON (sorted keys, no spaces): what the fingerprint hashes."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def fingerprint(arguments: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_arguments(arguments).encode()).hexdigest()


@dataclass(frozen=True)
class JournalEntry:
    """One journaled dispatch. ``status`` is ``None`` until its outcome is recorded."""

    commit_key: str
    turn_key: str
    tool: str
    effect: str
    arguments: dict[str, Any]
    fingerprint: str
    intent_at: float
    """Wall-clock time (``time.time()``) the intent was committed."""
    status: str | None = None
    """``"ok"``, ``"error"``, ``"timeout"``, or ``None`` (no outcome)."""
    result: Any = None
    error: str | None = None
    finished_at: float | None = None

    @property
    def in_doubt(self) -> bool:
        """Its effect may or may not have happened: no outcome, or the call timed out."""
        return self.status is None or self.status == TIMEOUT


@dataclass(frozen=True)
class Recovery:
    """What a journal knows after a crash."""

    in_doubt: list[JournalEntry]
    completed: list[JournalEntry]


class Journal(Protocol):
    """Where dispatches are recorded durably. Called from worker threads."""

    def begin(self, record: DispatchRecord, turn_key: str) -> JournalEntry | None:
        """Records the intent of ``record`` before its tool runs (durably, when the
        journal is durable). Returns the earlier entry when the commit key was
        already journaled: the tool must then not run again.

        Raises:
            IdempotencyConflictError: the key was journaled with other arguments.
        """

    def complete(self, record: DispatchRecord, status: str) -> None:
        """Records the outcome of ``record`` after its tool returned (or timed out)."""

    def entries(self) -> list[JournalEntry]:
        """Every journaled dispatch, in intent order."""


def _entry(record: DispatchRecord, turn_key: str) -> JournalEntry:
    return JournalEntry(record.commit_key, turn_key, record.name, record.effect.value, dict(record.arguments),
                        fingerprint(record.arguments), time.time())


def _check(prior: JournalEntry, record: DispatchRecord) -> JournalEntry:
    from .errors import IdempotencyConflictError

    if prior.fingerprint != fingerprint(record.arguments) or prior.tool != record.name:
        raise IdempotencyConflictError(
            f"commit key {record.commit_key} was journaled for {prior.tool}({prior.arguments}) "
            f"and is now dispatched as {record.name}({record.arguments}); a key names one call"
        )
    return prior


def _outcome_of(record: DispatchRecord, status: str) -> tuple[Any, str | None]:
    error = None if record.error is None else f"{type(record.error).__name__}: {record.error}"
    return (record.result if status == OK else None), error


class MemoryJournal:
    """A journal that lives as long as the process: idempotent within it, gone after it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, JournalEntry] = {}

    def begin(self, record: DispatchRecord, turn_key: str) -> JournalEntry | None:
        with self._lock:
            prior = self._entries.get(record.commit_key)
            if prior is not None:
                return _check(prior, record)
            self._entries[record.commit_key] = _entry(record, turn_key)
            return None

    def complete(self, record: DispatchRecord, status: str) -> None:
        result, error = _outcome_of(record, status)
        with self._lock:
            e = self._entries[record.commit_key]
            self._entries[record.commit_key] = JournalEntry(
                e.commit_key, e.turn_key, e.tool, e.effect, e.arguments, e.fingerprint, e.intent_at,
                status, result, error, time.time())

    def entries(self) -> list[JournalEntry]:
        with self._lock:
            return list(self._entries.values())


_SCHEMA = """
CREATE TABLE IF NOT EXISTS intents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    commit_key TEXT NOT NULL UNIQUE,
    turn_key TEXT NOT NULL,
    tool TEXT NOT NULL,
    effect TEXT NOT NULL,
    arguments TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    intent_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS outcomes (
    commit_key TEXT PRIMARY KEY REFERENCES intents(commit_key),
    status TEXT NOT NULL,
    result TEXT,
    error TEXT,
    finished_at REAL NOT NULL
);
"""


class SqliteJournal:
    """A durable journal in one SQLite file (WAL, ``synchronous=FULL``): an intent
    is on disk before its tool runs, so a crash never loses a dispatch.

    Args:
        path: the database file; created if missing. Several turns, and several
            processes one after another, may share it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SqliteJournal:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def begin(self, record: DispatchRecord, turn_key: str) -> JournalEntry | None:
        e = _entry(record, turn_key)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(_SELECT + " WHERE i.commit_key = ?", (record.commit_key,)).fetchone()
                if row is None:
                    self._db.execute(
                        "INSERT INTO intents (commit_key, turn_key, tool, effect, arguments, fingerprint, intent_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (e.commit_key, e.turn_key, e.tool, e.effect, canonical_arguments(e.arguments), e.fingerprint,
                         e.intent_at),
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return None if row is None else _check(_row_entry(row), record)

    def complete(self, record: DispatchRecord, status: str) -> None:
        result, error = _outcome_of(record, status)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO outcomes (commit_key, status, result, error, finished_at) VALUES (?, ?, ?, ?, ?)",
                (record.commit_key, status, json.dumps(result, default=repr), error, time.time()),
            )

    def entries(self) -> list[JournalEntry]:
        with self._lock:
            return [_row_entry(r) for r in self._db.execute(_SELECT + " ORDER BY i.seq")]


_SELECT = (
    "SELECT i.commit_key, i.turn_key, i.tool, i.effect, i.arguments, i.fingerprint, i.intent_at,"
    " o.status, o.result, o.error, o.finished_at FROM intents i LEFT JOIN outcomes o ON o.commit_key = i.commit_key"
)


def _row_entry(row: tuple[Any, ...]) -> JournalEntry:
    key, turn, tool, effect, args, fp, intent_at, status, result, error, finished_at = row
    return JournalEntry(key, turn, tool, effect, json.loads(args), fp, intent_at, status,
                        None if result is None else json.loads(result), error, finished_at)


def recover(journal: Journal | str | os.PathLike[str]) -> Recovery:
    """Lists every journaled dispatch: in doubt (an intent with no outcome, or a
    timeout) and completed. Nothing journaled is ever lost.

    Args:
        journal: a journal, or the path of a SQLite journal file.
    """
    if isinstance(journal, (str, os.PathLike)):
        if not os.path.exists(journal):
            from .errors import InertValueError

            raise InertValueError(f"no journal at {os.fspath(journal)!r}")
        with SqliteJournal(journal) as j:
            entries = j.entries()
    else:
        entries = journal.entries()
    return Recovery([e for e in entries if e.in_doubt], [e for e in entries if not e.in_doubt])
