"""Reading a SQLite journal for recovery, without writing to it or beside it.

What was committed may live in three places: the file, its ``-wal`` (a crash, or workers
running), and, for a file in rollback-journal mode, the file less what a ``-journal`` beside
it must still roll back (a writer that crashed mid-transaction, or one mid-transaction now).
Whatever SQLite would have to write to read it (a ``-shm``, a rollback) is done on a
private copy; the journal and its folder are left as they were.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from typing import Any

from ..errors import InertValueError, JournalError
from ..files import cannot_read, special_file
from .protocol import JournalEntry
from .sqlite_file import MAX_BUSY, NOT_A_DATABASE, connect, journal_error, not_sqlite, odd_companion
from .sqlite_schema import SELECT, row_entry, schema_problem

__all__ = ["read_sqlite_journal"]

_ATTEMPTS = 3
"""Reads of a journal that writers keep changing under the reader, before giving up."""

_JOURNAL_HEADER = 28
"""The bytes of a rollback journal's header (magic, record count, nonce, sizes)."""

_RECORD_COUNT = slice(8, 12)
"""The header's record count, which its writer updates in place as the transaction goes on."""


BUSY_TIMEOUT = 30.0
"""Seconds a read waits, by default, for a lock another process holds on the file."""


def read_sqlite_journal(path: str | os.PathLike[str], *, busy_timeout: float = BUSY_TIMEOUT) -> list[JournalEntry]:
    """Every dispatch a journal file holds, as last committed, read without writing to the file.

    A crashed journal in a folder this process may not write, whose -wal has lost its
    -shm, is read from a private copy (SQLite reads a -wal only through a -shm it makes);
    so is one beside a -journal that holds an unfinished transaction, rolled back on the copy.

    Args:
        path: a journal file written by :class:`SqliteJournal`.
        busy_timeout: seconds the read waits for a lock another process holds on the file
            (a writer in exclusive locking mode, or one rolling back a -journal).

    Returns:
        The entries in intent order.

    Raises:
        InertValueError: nothing exists at ``path``.
        JournalError: ``path`` cannot be read (permissions, a symbolic link loop), is a
            directory, an empty file, not a SQLite database, corrupt, another application's
            database, or of a newer schema.
    """
    path = os.fspath(path)
    busy_timeout = min(busy_timeout, MAX_BUSY)
    _check_file(path)
    for attempt in range(_ATTEMPTS):
        rows = _read_once(path, last=attempt == _ATTEMPTS - 1, busy_timeout=busy_timeout)
        if rows is not None:
            return [row_entry(r, path) for r in rows]
    raise JournalError(
        f"journal {path}: cannot read it: a process kept changing it while it was read (its -wal or "
        "-journal came and went): retry, or stop the processes that write it and read it again"
    )


def _check_file(path: str) -> None:
    """Refuses what is no journal file before SQLite is shown it.

    Raises:
        InertValueError: nothing exists at ``path``.
        JournalError: it is not a readable, non-empty SQLite file.
    """
    if (why := cannot_read(path)) is not None:  # a file there that stat or open is denied: not "no journal"
        raise JournalError(why)
    if not os.path.exists(path):
        raise InertValueError(f"no journal at {path!r}")
    if os.path.isdir(path):
        raise JournalError(f"{path} is a directory, not a journal file")
    if (kind := special_file(path)) is not None:
        raise JournalError(f"{path} is {kind}, not a journal file")
    if os.path.getsize(path) == 0:
        raise JournalError(f"{path} is an empty file, not an inert journal")
    try:
        foreign = not_sqlite(path)
    except OSError as e:
        raise JournalError(f"journal {path}: cannot read it: {e}") from e
    if foreign:  # SQLite reads a file shorter than its header as an empty database
        raise JournalError(f"journal {path}: {NOT_A_DATABASE}")


def _read_once(path: str, *, last: bool, busy_timeout: float) -> list[tuple[Any, ...]] | None:
    """The journal's rows, or ``None`` when a writer changed its companions while it was
    read and it must be read again (``last``: the rows read are taken as they are).

    Raises:
        JournalError: it could not be read, or is no inert journal.
    """
    if _journal_header(path) is not None:
        return _read_copy(path, _UNFINISHED, busy_timeout)
    wal = os.path.exists(path + "-wal")
    try:
        # mode=ro never writes the database; it does create the -wal and -shm files
        # beside a WAL journal when they are missing, so a WAL journal closed cleanly
        # (no -wal) is opened immutable instead, which touches nothing. With a -wal
        # present (a crash, or workers running) the committed intents live partly in
        # it, so it must be read: immutable would miss them. A file in rollback mode
        # is read under SQLite's locks, which create nothing: read immutable, a writer
        # that began meanwhile could show it half-written.
        rows = _read_rows(path, path, immutable=not wal and not _rollback_mode(path), busy_timeout=busy_timeout)
    except sqlite3.Error as e:
        if _code(e) == sqlite3.SQLITE_READONLY_ROLLBACK:
            return None  # a -journal to roll back appeared after the look: read through a copy
        if not (wal and not os.path.exists(path + "-shm") and _code(e) & 0xFF in _CANNOT_WRITE_BESIDE):
            raise journal_error(path, "cannot read it", e) from e
        # A -wal without its -shm (a crashed journal copied or mounted read-only): SQLite
        # reads a -wal only through a -shm it makes beside it, which this folder may not
        # take. A private copy is read instead; the journal stays as it is.
        why = f"cannot read it: {e}, and its -wal has no -shm, which SQLite must make beside it"
        return _read_copy(path, why, busy_timeout)
    if not wal and os.path.exists(path + "-wal") and not last:
        return None  # a worker opened it while it was read immutable: its newest intents may be in the -wal only
    return rows


_UNFINISHED = (
    "a -journal beside it holds a transaction its writer has not finished (it crashed, or is writing "
    "now), which must be rolled back to read what was committed"
)

_CANNOT_WRITE_BESIDE = (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY)
"""SQLite failed for want of a file it must make (the -shm), not for the journal's content."""


def _code(e: sqlite3.Error) -> int:
    return int(getattr(e, "sqlite_errorcode", 0) or 0)


def _rollback_mode(path: str) -> bool:
    """Whether the file's header says rollback-journal mode (its bytes 18 and 19 are 1; WAL is 2)."""
    try:
        with open(path, "rb") as f:
            f.seek(18)
            return f.read(2) == b"\x01\x01"
    except OSError:
        return False  # SQLite reports it when it opens the file


def _journal_header(path: str) -> bytes | None:
    """The header of the rollback journal beside ``path`` (its record count blanked), or
    ``None`` when there is none to roll back: missing, empty or zeroed (SQLite's test)."""
    if (odd := odd_companion(path)) is not None:  # open() would wait for a FIFO's writer
        raise JournalError(f"journal {path}: cannot read it: {odd}")
    try:
        with open(path + "-journal", "rb") as f:
            head = f.read(_JOURNAL_HEADER)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise JournalError(
            f"journal {path}: cannot read its -journal ({e}), which may hold a transaction to roll back "
            "before the journal can be read: give this user read permission on it"
        ) from e
    if not head or head[0] == 0:
        return None
    return head[: _RECORD_COUNT.start] + bytes(4) + head[_RECORD_COUNT.stop :]


def _read_rows(path: str, name: str, *, immutable: bool, busy_timeout: float) -> list[tuple[Any, ...]]:
    """The journal's rows, read from ``path`` without writing to it (``name`` in messages).

    Raises:
        JournalError: it is not an inert journal, or of a newer schema.
        sqlite3.Error: SQLite could not read it.
    """
    db = connect(path, mode="ro", immutable=immutable, timeout=busy_timeout)
    try:
        return _rows(db, name)
    finally:
        db.close()


def _rows(db: sqlite3.Connection, name: str) -> list[tuple[Any, ...]]:
    problem = schema_problem(db, name, empty_ok=False)
    if problem is not None:
        raise JournalError(f"{name}: {problem}")
    return db.execute(SELECT + " ORDER BY i.seq").fetchall()


def _read_copy(path: str, why: str, busy_timeout: float) -> list[tuple[Any, ...]] | None:
    """The rows of a private copy of ``path`` with its -wal and -journal, on which SQLite
    makes the -shm and rolls back what the -journal holds; ``None`` when a writer ended or
    began a transaction while it was copied (the copy may be torn: read again).

    Raises:
        JournalError: the copy could not be made (``why`` says why it was needed) or read.
    """
    before = _journal_header(path)
    with tempfile.TemporaryDirectory(prefix="inert-recover-") as folder:
        copy = os.path.join(folder, "journal.sqlite")
        try:
            # The file first: a page a writer changed in it had its old content in the
            # -journal before, so the -journal copied after holds what undoes it.
            for suffix in ("", "-wal", "-journal"):
                if suffix == "" or os.path.exists(path + suffix):
                    shutil.copyfile(path + suffix, copy + suffix)
        except FileNotFoundError:
            return None  # a -wal or -journal went away as its writer finished
        except OSError as e:
            raise JournalError(
                f"journal {path}: {why}; a copy to read instead could not be made ({e}): set TMPDIR to a "
                "folder this process may write, or copy the journal and the files beside it there and run "
                "`inert recover` on the copy"
            ) from e
        if _journal_header(copy) != before or _journal_header(path) != before:
            return None  # its writer finished, or another began: the copy may be torn
        try:
            db = connect(copy, timeout=busy_timeout)  # read-write: the first read rolls the -journal back
            try:
                return _rows(db, path)
            finally:
                db.close()
        except sqlite3.Error as e:
            raise journal_error(path, "cannot read it", e) from e
