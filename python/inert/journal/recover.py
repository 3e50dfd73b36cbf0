"""Recovery: what a journal knows after a crash, read without changing it."""

from __future__ import annotations

import os

from ..durations import seconds
from ..errors import InertTypeError
from .phases import ABORT, COMMIT, PREPARE, split_phase
from .postgres import read_postgres_journal
from .protocol import OK, Journal, JournalEntry, Recovery
from .spec import names_postgres
from .sqlite_read import BUSY_TIMEOUT, read_sqlite_journal

__all__ = ["recover"]


def recover(journal: Journal | str | os.PathLike[str], *, busy_timeout: float = BUSY_TIMEOUT) -> Recovery:
    """Lists every journaled dispatch: in doubt (an intent with no outcome and no
    live holder, or a timeout), in flight (held by a live worker of a shared
    journal) and completed. Nothing journaled is ever lost.

    A journal named by its path or URI is opened read-only and never written:
    a SQLite file through a read-only URI (not even its ``-wal`` is created
    when it has none; a transaction a ``-journal`` beside it leaves unfinished is
    rolled back on a private copy), a PostgreSQL database in a read-only transaction.

    Args:
        journal: a journal, the path of a SQLite journal file, or a PostgreSQL database (a
            ``postgresql://`` or ``postgres://`` URI, or a keyword/value connection string
            such as ``"host=db.internal dbname=prod"``). A ``str`` that reads as neither is
            refused, never looked for as a file.
        busy_timeout: seconds the read of a SQLite file waits for a lock another process
            holds on it (``inert recover`` waits a couple of seconds, then says so).

    Returns:
        The entries, sorted into in doubt, completed and in flight, each in intent order.

    Raises:
        InertValueError: no file at the path, or a name that reads as a database address
            inert does not take (another URI scheme, ``keyword=value`` text without a libpq keyword).
        InertTypeError: ``journal`` is none of those.
        InertValueError, InertTypeError: ``busy_timeout`` is not a finite number of seconds >= 0.
        JournalError: the file or database is not an inert journal (or one of a newer
            version), or cannot be read (a file permissions forbid, or a folder on its way,
            or a symbolic link loop); the message says which and why, and what to do.
    """
    busy_timeout = seconds("busy_timeout", busy_timeout, zero_ok=True)
    if isinstance(journal, (str, os.PathLike)):
        if names_postgres(journal):
            assert isinstance(journal, str)
            entries = read_postgres_journal(journal)
        else:
            entries = read_sqlite_journal(journal, busy_timeout=busy_timeout)
    elif callable(getattr(journal, "entries", None)):
        entries = journal.entries()
    else:
        raise InertTypeError(
            f"recover: journal must be a Journal, the path of a SQLite journal file or a "
            f"PostgreSQL database (a postgresql:// URI or a keyword/value connection string), "
            f"got {type(journal).__name__}"
        )
    calls = [e for e in entries if split_phase(e.commit_key).phase == COMMIT]
    return Recovery(
        in_doubt=[e for e in calls if e.in_doubt],
        completed=[e for e in calls if e.status is not None and not e.in_doubt],
        in_flight=[e for e in calls if e.in_flight],
        prepared=_prepared_not_finished(entries),
    )


def _prepared_not_finished(entries: list[JournalEntry]) -> list[JournalEntry]:
    """Prepare attempts of two-phase tools that neither a commit nor a successful abort
    ended: their staged state may still be held (a prepare whose outcome is missing
    may have staged, too, and an abort that failed or timed out may have left it). A key
    prepares again only after its previous attempt was aborted or lost, so the commit
    belongs to the last attempt journaled before it."""
    aborted = {
        (k.commit_key, k.attempt) for e in entries if (k := split_phase(e.commit_key)).phase == ABORT and e.status == OK
    }
    committed_attempt: dict[str, str | None] = {}
    last_attempt: dict[str, str | None] = {}
    for e in entries:  # in intent order
        k = split_phase(e.commit_key)
        if k.phase == PREPARE:
            last_attempt[k.commit_key] = k.attempt
        elif k.phase == COMMIT and k.commit_key in last_attempt:
            committed_attempt[k.commit_key] = last_attempt[k.commit_key]
    out = []
    for e in entries:
        k = split_phase(e.commit_key)
        if k.phase != PREPARE or (k.commit_key, k.attempt) in aborted or e.status == "error":
            continue  # aborted, or failed (nothing staged)
        if committed_attempt.get(k.commit_key) == k.attempt:
            continue  # it went on to its commit (in doubt there if the commit's outcome is missing)
        out.append(e)
    return out
