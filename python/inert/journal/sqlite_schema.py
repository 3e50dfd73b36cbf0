"""A SQLite journal's tables: what they hold, which version they are, and their rows read back."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..errors import JournalError
from .protocol import JournalEntry, stored_json, stored_status, stored_text

__all__ = ["MIGRATE", "SCHEMA", "SELECT", "SQLITE_SCHEMA_VERSION", "VERSION", "row_entry", "schema_problem"]

SQLITE_SCHEMA_VERSION = 2
"""Stored in the file's ``PRAGMA user_version``. Version 2 added ``intents.claim``
(who may record the key's outcome); files of version 1, and of 0 (written before
versioning, with the same tables), are read as they are and given the column
when opened for writing."""

_COLUMNS = {
    "intents": {"seq", "commit_key", "turn_key", "tool", "effect", "arguments", "fingerprint", "intent_at"},
    "outcomes": {"commit_key", "status", "result", "error", "finished_at"},
}

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS intents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    commit_key TEXT NOT NULL UNIQUE,
    turn_key TEXT NOT NULL,
    tool TEXT NOT NULL,
    effect TEXT NOT NULL,
    arguments TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    intent_at REAL NOT NULL,
    claim TEXT
)""",
    """
CREATE TABLE IF NOT EXISTS outcomes (
    commit_key TEXT PRIMARY KEY REFERENCES intents(commit_key),
    status TEXT NOT NULL,
    result TEXT,
    error TEXT,
    finished_at REAL NOT NULL
)""",
)

# Version 1 had no claim column; its rows hold NULL there, which no journal holds as its claim.
MIGRATE = "ALTER TABLE intents ADD COLUMN claim TEXT"
VERSION = f"PRAGMA user_version = {SQLITE_SCHEMA_VERSION}"

SELECT = (
    "SELECT i.commit_key, i.turn_key, i.tool, i.effect, i.arguments, i.fingerprint, i.intent_at,"
    " o.status, o.result, o.error, o.finished_at FROM intents i LEFT JOIN outcomes o ON o.commit_key = i.commit_key"
)


def schema_problem(db: sqlite3.Connection, path: str, *, empty_ok: bool) -> str | None:
    """Why the database is not an inert journal, or ``None`` when it is one (or, with
    ``empty_ok``, holds no tables yet).

    Raises:
        JournalError: the schema is of a newer version than this inert reads.
    """
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables.discard("sqlite_sequence")  # SQLite's own, for AUTOINCREMENT
    (version,) = db.execute("PRAGMA user_version").fetchone()
    if not tables:
        return None if empty_ok else "it holds no tables, not an inert journal"
    if not set(_COLUMNS) <= tables:
        shown = ", ".join(sorted(tables)[:8]) + (", ..." if len(tables) > 8 else "")
        return f"it holds other tables ({shown}), not an inert journal's intents and outcomes"
    # Before the columns: a newer inert may have changed them, and "not an inert journal"
    # would send its user to move a good journal aside instead of upgrading.
    if version > SQLITE_SCHEMA_VERSION:
        raise JournalError(
            f"journal {path}: schema version {version} is newer than this inert reads "
            f"(version {SQLITE_SCHEMA_VERSION}): it was written by a newer inert; upgrade inert to use it"
        )
    for table, wanted in _COLUMNS.items():
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if not wanted <= have:
            return f"its {table} table lacks {', '.join(sorted(wanted - have))}: not an inert journal"
    return None


def row_entry(row: tuple[Any, ...], path: str) -> JournalEntry:
    """The entry a row of ``SELECT`` holds (``path`` names the journal in errors).

    Raises:
        JournalError: a column holds what inert never writes there.
    """
    key, turn, tool, effect, args, fp, intent_at, status, result, error, finished_at = row
    # SQLite keeps any type in any column: a row changed outside inert is checked, not trusted.
    key = stored_text(key, "commit key", key, path)
    return JournalEntry(
        key,
        stored_text(turn, "turn key", key, path),
        stored_text(tool, "tool", key, path),
        stored_text(effect, "effect", key, path),
        stored_json(args, "arguments", key, path),
        stored_text(fp, "fingerprint", key, path),
        intent_at,
        stored_status(status, key, path),
        None if result is None else stored_json(result, "result", key, path),
        None if error is None else stored_text(error, "error", key, path),
        finished_at,
    )
