"""Recovery: what a journal knows after a crash, read without changing it."""

from __future__ import annotations

import os

from .postgres import read_postgres_journal
from .postgres_connection import is_dsn
from .protocol import Journal, Recovery
from .sqlite import read_sqlite_journal

__all__ = ["recover"]


def recover(journal: Journal | str | os.PathLike[str]) -> Recovery:
    """Lists every journaled dispatch: in doubt (an intent with no outcome and no
    live holder, or a timeout), in flight (held by a live worker of a shared
    journal) and completed. Nothing journaled is ever lost.

    A journal named by its path or URI is opened read-only and never written:
    a SQLite file through a read-only URI (not even its ``-wal`` is created
    when it has none), a PostgreSQL database in a read-only transaction.

    Args:
        journal: a journal, the path of a SQLite journal file, or a ``postgresql://`` URI.

    Returns:
        The entries, sorted into in doubt, completed and in flight, each in intent order.

    Raises:
        InertValueError: no file at the path.
        JournalError: the file or database is not an inert journal (or one of a newer
            version), or cannot be read; the message says which and why.
    """
    if is_dsn(journal):
        assert isinstance(journal, str)
        entries = read_postgres_journal(journal)
    elif isinstance(journal, (str, os.PathLike)):
        entries = read_sqlite_journal(journal)
    else:
        entries = journal.entries()
    return Recovery(in_doubt=[e for e in entries if e.in_doubt],
                    completed=[e for e in entries if e.status is not None and not e.in_doubt],
                    in_flight=[e for e in entries if e.in_flight])
