"""What a journal is named by: a :class:`Journal`, a file path, or a PostgreSQL URI."""

from __future__ import annotations

import os

from .postgres import PostgresJournal
from .postgres_connection import is_dsn, redact
from .postgres_schema import init_schema
from .sqlite import SQLITE_SCHEMA_VERSION, SqliteJournal

__all__ = ["OwnedJournal", "init_journal", "open_journal"]

OwnedJournal = SqliteJournal | PostgresJournal
"""A journal opened from its name, which its opener closes."""


def open_journal(spec: str | os.PathLike[str]) -> OwnedJournal:
    """Opens the journal ``spec`` names; the caller closes it.

    Args:
        spec: a ``postgresql://`` or ``postgres://`` URI (a :class:`PostgresJournal`, whose
            schema must exist: ``inert journal init DSN``), or the path of a SQLite
            journal file (created when missing).

    Returns:
        The open journal.

    Raises:
        JournalError: it cannot be opened (the message says why and what to do).
    """
    if is_dsn(spec):
        assert isinstance(spec, str)
        return PostgresJournal(spec)
    return SqliteJournal(spec)


def init_journal(spec: str | os.PathLike[str]) -> str:
    """Creates the journal ``spec`` names, or checks the one it holds (``inert journal init``).

    Args:
        spec: a ``postgresql://`` URI (creates the ``inert_meta`` and ``inert_journal``
            tables, whatever else the database holds), or a SQLite journal path.

    Returns:
        A line saying what was done.

    Raises:
        JournalError: it cannot be created, or holds a schema of a newer version.
    """
    if is_dsn(spec):
        assert isinstance(spec, str)
        created, version = init_schema(spec)
        return (f"{'created' if created else 'checked'} the inert journal in {redact(spec)} "
                f"(schema version {version})")
    existed = os.path.exists(spec) and os.path.getsize(spec) > 0
    SqliteJournal(spec).close()
    verb = "checked" if existed else "created"
    return f"{verb} the inert journal {os.fspath(spec)} (schema version {SQLITE_SCHEMA_VERSION})"
