"""What a journal is named by: a :class:`Journal`, a file path, or a PostgreSQL
database (a URI or a keyword/value connection string; see :mod:`.address`)."""

from __future__ import annotations

import os

from .address import is_dsn, refuse_ambiguous
from .postgres import PostgresJournal
from .postgres_connection import redact
from .postgres_schema import init_schema
from .sqlite import SQLITE_SCHEMA_VERSION, SqliteJournal

__all__ = ["OwnedJournal", "init_journal", "names_postgres", "open_journal"]

OwnedJournal = SqliteJournal | PostgresJournal
"""A journal opened from its name, which its opener closes."""


def names_postgres(spec: str | os.PathLike[str]) -> bool:
    """Whether ``spec`` names a PostgreSQL database (else it is a SQLite file's path).

    Raises:
        InertValueError: a ``str`` that reads as a database address inert does not take (a
            URI of another scheme, or ``keyword=value`` text that is no libpq connection
            string): taken as a path it would silently become a local file.
    """
    if is_dsn(spec):
        return True
    if isinstance(spec, str):
        refuse_ambiguous(spec)
    return False


def open_journal(spec: str | os.PathLike[str]) -> OwnedJournal:
    """Opens the journal ``spec`` names; the caller closes it.

    Args:
        spec: a ``postgresql://`` or ``postgres://`` URI, or a libpq keyword/value
            connection string such as ``"host=db.internal dbname=prod"`` (a
            :class:`PostgresJournal`, whose schema must exist: ``inert journal init DSN``),
            or the path of a SQLite journal file (created when missing). A ``str`` that
            reads as neither (another URI scheme, ``keyword=value`` text without a libpq
            keyword) is refused, never created as a file: pass a ``pathlib.Path`` for a
            file whose name looks like that.

    Returns:
        The open journal.

    Raises:
        InertValueError: ``spec`` reads as a database address inert does not take.
        JournalError: it cannot be opened (the message says why and what to do).
    """
    if names_postgres(spec):
        assert isinstance(spec, str)
        return PostgresJournal(spec)
    return SqliteJournal(spec)


def init_journal(spec: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> str:
    """Creates the journal ``spec`` names, or checks the one it holds (``inert journal init``).

    Args:
        spec: a PostgreSQL URI or keyword/value connection string (creates the ``inert_meta``
            and ``inert_journal`` tables, whatever else the database holds), or a SQLite
            journal path; named as for :func:`open_journal`.
        busy_timeout: seconds a SQLite file's creation or check waits for a lock another
            process holds on it (as :class:`SqliteJournal`'s; ``inert journal init`` waits
            a couple of seconds, then says so).

    Returns:
        A line saying what was done.

    Raises:
        InertValueError: ``spec`` reads as a database address inert does not take.
        JournalError: it cannot be created, or holds a schema of a newer version.
    """
    if names_postgres(spec):
        assert isinstance(spec, str)
        created, version = init_schema(spec)
        return f"{'created' if created else 'checked'} the inert journal in {redact(spec)} (schema version {version})"
    existed = os.path.exists(spec) and os.path.getsize(spec) > 0
    SqliteJournal(spec, busy_timeout=busy_timeout).close()
    verb = "checked" if existed else "created"
    return f"{verb} the inert journal {os.fspath(spec)} (schema version {SQLITE_SCHEMA_VERSION})"
