"""A durable journal in one SQLite file, for the workers of one host.

An intent is on disk (WAL, ``synchronous=FULL``) before its tool runs, so a
crash never loses a dispatch. Every failure of the file (missing folder,
directory, read-only, corrupt, full disk) surfaces as a :class:`JournalError`
that names the file and says what to do, never as a raw ``sqlite3`` error.
Reading a file for recovery never writes to it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Self

from ..canonical import canonical_arguments
from ..durations import seconds
from ..effects import EffectClass
from ..errors import InertTypeError, JournalError, StaleClaimError
from ..files import cannot_read, special_file
from ..report import DispatchRecord
from .protocol import JournalEntry, new_entry, outcome_of, result_json, same_call
from .sqlite_file import MAX_BUSY, NOT_A_DATABASE, connect, journal_error, locked, not_sqlite
from .sqlite_read import read_sqlite_journal
from .sqlite_schema import MIGRATE, SCHEMA, SELECT, SQLITE_SCHEMA_VERSION, VERSION, row_entry, schema_problem

__all__ = ["SQLITE_SCHEMA_VERSION", "SqliteJournal", "read_sqlite_journal"]

_LOCKED_OUT_WAIT_MS = 100
"""How long an intent waits for the file's lock once a write found it held past the busy timeout."""


def _check_file(path: str) -> None:
    """Refuses, before SQLite opens it (and makes a -wal and -shm beside it), a path that
    cannot become or be a journal.

    Raises:
        JournalError: it cannot be read, is a directory or a special file, holds bytes
            that are no SQLite database, or is a file this process may not write.
    """
    if (why := cannot_read(path)) is not None:  # SQLite says only "unable to open database file"
        raise JournalError(f"journal {why}")
    if os.path.isdir(path):
        raise JournalError(f"journal {path} is a directory: give the path of a journal file (created when missing)")
    if (kind := special_file(path)) is not None:
        raise JournalError(
            f"journal {path} is {kind}, not a file: give the path of a journal file (created when missing)"
        )
    if not os.path.exists(path):
        return  # created whole by _create_file; an empty file is given the tables
    try:
        foreign = not_sqlite(path)
    except OSError as e:
        raise JournalError(f"journal {path}: cannot read it: {e}") from e
    if foreign:  # SQLite takes a file shorter than its header for an empty database, and wrote over it
        raise JournalError(f"journal {path}: {NOT_A_DATABASE}")
    if not os.access(path, os.W_OK):
        # Opened read-only, SQLite made a -wal and -shm beside it as read-only as the file,
        # which kept every later open failing once the file itself was made writable.
        raise JournalError(
            f"journal {path}: cannot open it: the file is read-only, and a journal writes an intent before "
            f"every call: make it writable, or read it with `inert recover {path}`"
        )


def _create_file(path: str) -> None:
    """Creates a journal file whole: built beside its name, then linked into
    place, so that a crash never leaves a half-made journal for recovery to
    misread, and two processes creating it at once agree on one file."""
    tmp = f"{path}.{os.getpid()}-{uuid.uuid4().hex[:8]}.new"
    try:
        db = connect(tmp, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            for statement in (*SCHEMA, VERSION):
                db.execute(statement)
        finally:
            db.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            return  # another process made it first: use theirs
        except OSError:  # a file system without hard links
            if not os.path.exists(path):
                os.replace(tmp, path)
        _sync_folder(path)
    except sqlite3.Error as e:
        raise journal_error(path, "cannot create it", e) from e
    except OSError as e:
        raise JournalError(
            f"journal {path}: cannot create it: {e}; check that its folder exists and that this process may write there"
        ) from e
    finally:
        for leftover in (tmp, tmp + "-wal", tmp + "-shm"):
            if os.path.exists(leftover):
                os.unlink(leftover)


def _sync_folder(path: str) -> None:
    # The new name must survive a power cut as surely as the intents written under it.
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:  # pragma: no cover - a platform without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


class SqliteJournal:
    """A durable journal in one SQLite file (WAL, ``synchronous=FULL``): an intent
    is on disk before its tool runs, so a crash never loses a dispatch.

    Several turns, threads and processes of one host may share the file; a
    key met while another process runs it reads as in doubt (there are no
    leases here: a fleet shares :class:`~inert.PostgresJournal` instead). A
    read or idempotent call in doubt is run again, and the journal that runs it
    takes the key's claim: only the claim's holder records the key's outcome, so
    the first process, if it was still running, gets :class:`~inert.StaleClaimError`
    from ``complete`` and the later run's outcome stands.

    Args:
        path: the journal file; created whole (never half-made, even by a crash) when
            missing, and given inert's tables when empty.
        busy_timeout: seconds a write waits for the file's lock while another process
            holds it (SQLite's busy timeout). An intent that waits it out fails (its tool
            does not run); under threads the call's own deadline does not cut this wait
            short, so give a journal whose calls have short deadlines a short one.

    Raises:
        JournalError: ``path`` is a directory, cannot be read (permissions, a symbolic
            link loop), opened or written, is not a SQLite database (or is corrupt),
            holds other tables than a journal's, or has a newer schema than this inert reads.
        InertTypeError, InertValueError: ``busy_timeout`` is not a finite number of seconds >= 0.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise InertTypeError(
                f"SqliteJournal takes the path of a journal file (str or os.PathLike), got {type(path).__name__}"
            )
        self.path = os.fspath(path)
        self.busy_timeout = seconds("busy_timeout", busy_timeout, zero_ok=True)
        _check_file(self.path)
        self._lock = threading.Lock()  # guards the connection and the held claims
        self._held: dict[str, str] = {}  # commit key -> the claim this journal's call runs under
        self._locked_out = False
        """A write waited out the busy timeout (another process holds the file locked): until
        one succeeds, an intent waits only ``_LOCKED_OUT_WAIT_MS`` (see ``_impatient``)."""
        if not os.path.exists(self.path):
            _create_file(self.path)
        try:
            self._db = connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=min(self.busy_timeout, MAX_BUSY)
            )
        except sqlite3.Error as e:
            raise journal_error(self.path, "cannot open it", e) from e
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise

    def _open(self) -> None:
        try:
            # Checked before anything is written: another application's database
            # must not be switched to WAL or given tables it never asked for.
            problem = schema_problem(self._db, self.path, empty_ok=True)
            if problem is not None:
                raise JournalError(
                    f"journal {self.path}: {problem}; give the path of a journal file (inert creates it)"
                )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("BEGIN IMMEDIATE")  # two processes opening a new file at once create it once
            try:
                # Not executescript: it would commit the transaction before running.
                for statement in SCHEMA:
                    self._db.execute(statement)
                if "claim" not in {row[1] for row in self._db.execute("PRAGMA table_info(intents)")}:
                    self._db.execute(MIGRATE)
                self._db.execute(VERSION)
                self._db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        except sqlite3.Error as e:
            raise journal_error(self.path, "cannot open it as a journal", e) from e

    def _note_lock(self, exc: sqlite3.Error) -> None:
        """A write failed: if because another process holds the file locked past the busy
        timeout, later intents stop waiting that long (``_impatient``)."""
        if isinstance(exc, sqlite3.OperationalError) and locked(exc):
            self._locked_out = True

    @contextlib.contextmanager
    def _impatient(self) -> Iterator[None]:
        """The busy timeout cut to ``_LOCKED_OUT_WAIT_MS`` while the file is known to be locked:
        each intent waited the whole timeout (30 s) in turn under the journal's lock, so a turn
        of n calls took n x 30 s to fail, whatever the calls' deadlines. An intent not written
        leaves its tool unrun: nothing happens that the journal does not know of. Outcomes, and
        the intents of two-phase commits and aborts (what a prepare staged waits on them), still
        wait the whole timeout (an outcome not written leaves its call in doubt)."""
        patience = self._db.execute("PRAGMA busy_timeout").fetchone()[0]
        self._db.execute(f"PRAGMA busy_timeout = {min(int(patience), _LOCKED_OUT_WAIT_MS)}")
        try:
            yield
        finally:
            self._db.execute(f"PRAGMA busy_timeout = {int(patience)}")

    def _rollback(self) -> None:
        # A failed COMMIT (disk full) may already have ended the transaction: rolling
        # back then fails too, and its "no transaction is active" must not replace
        # the real cause, which the caller is re-raising.
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")

    def close(self) -> None:
        """Closes the file; the journal keeps everything it recorded."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def begin(self, record: DispatchRecord, turn_key: str) -> JournalEntry | None:
        """Records the intent of ``record`` durably; see :meth:`inert.Journal.begin`.

        The call now holds the key's claim, so that only it records the key's outcome.
        A read or idempotent call whose key is in doubt (no outcome, or timed out) takes
        the claim over, since the dispatcher runs it again: the process that held it,
        if it is still running, then gets :class:`~inert.StaleClaimError` from ``complete``.

        Raises:
            IdempotencyConflictError: the key was journaled with another tool or other arguments.
            JournalError: the intent could not be written (the tool must not run).
        """
        e = new_entry(record, turn_key)
        claim = uuid.uuid4().hex
        with self._lock:
            # A commit or abort settles what a prepare staged: it waits the whole timeout.
            impatient = self._locked_out and record.phase not in ("commit", "abort")
            try:
                with self._impatient() if impatient else contextlib.nullcontext():
                    self._db.execute("BEGIN IMMEDIATE")
                try:
                    row = self._db.execute(SELECT + " WHERE i.commit_key = ?", (record.commit_key,)).fetchone()
                    prior = None if row is None else same_call(row_entry(row, self.path), record)
                    if prior is None:
                        # An outcome whose intent row is gone (changed outside inert) must not
                        # join this intent: the call would read as finished before it ran.
                        self._db.execute("DELETE FROM outcomes WHERE commit_key = ?", (record.commit_key,))
                        self._db.execute(
                            "INSERT INTO intents (commit_key, turn_key, tool, effect, arguments, fingerprint,"
                            " intent_at, claim) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (
                                e.commit_key,
                                e.turn_key,
                                e.tool,
                                e.effect,
                                canonical_arguments(e.arguments),
                                e.fingerprint,
                                e.intent_at,
                                claim,
                            ),
                        )
                    taken = prior is None or (prior.in_doubt and record.effect is not EffectClass.WRITE)
                    if prior is not None and taken:
                        self._db.execute("UPDATE intents SET claim = ? WHERE commit_key = ?", (claim, e.commit_key))
                    self._db.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
                self._locked_out = False
            except sqlite3.Error as exc:
                self._note_lock(exc)
                waited = (
                    f"; it was found locked before, so this intent waited {_LOCKED_OUT_WAIT_MS} ms" if impatient else ""
                )
                raise journal_error(
                    self.path,
                    f"could not record the intent of {record.name!r} under key "
                    f"{record.commit_key} (the tool was not run){waited}",
                    exc,
                ) from exc
            if taken:
                self._held[record.commit_key] = claim
        return prior

    def complete(self, record: DispatchRecord, status: str) -> None:
        """Records the outcome of ``record``; see :meth:`inert.Journal.complete`.

        Only the claim the call ran under records its outcome (a read run again after
        its key's outcome was replayed replaces that finished outcome without one).

        Raises:
            StaleClaimError: this journal does not hold the key's claim (any more): another
                process took the key over and its outcome stands, or this one never claimed
                it; nothing was recorded.
            JournalError: the outcome could not be written: the call stays in doubt.
        """
        result, error = outcome_of(record, status)
        key = record.commit_key
        with self._lock:
            claim = self._held.pop(key, None)
            try:
                stored = result_json(result)
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    if claim is not None:
                        row = self._db.execute(
                            "SELECT 1 FROM intents WHERE commit_key = ? AND claim = ?", (key, claim)
                        ).fetchone()
                    elif record.effect is EffectClass.READ_ONLY:
                        row = self._db.execute(
                            "SELECT 1 FROM outcomes WHERE commit_key = ? AND status IN ('ok', 'error')", (key,)
                        ).fetchone()
                    else:
                        row = None
                    if row is not None:
                        self._db.execute(
                            "INSERT OR REPLACE INTO outcomes (commit_key, status, result, error, finished_at)"
                            " VALUES (?, ?, ?, ?, ?)",
                            (key, status, stored, error, time.time()),
                        )
                    self._db.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
            except sqlite3.Error as exc:
                self._note_lock(exc)
                raise journal_error(
                    self.path,
                    f"could not record the outcome of {record.name!r} under key {key}, which stays in doubt",
                    exc,
                ) from exc
        if row is None:
            raise StaleClaimError(self._stale(record, claim))

    def _stale(self, record: DispatchRecord, claim: str | None) -> str:
        where = f"journal {self.path}: {record.name!r} under key {record.commit_key}"
        if claim is not None:
            return (
                f"{where} was taken over by another process (its call read as in doubt there, and it "
                "runs it again), whose outcome stands; this one was not recorded. A SQLite journal has no "
                "leases: a fleet that runs calls this long shares a PostgresJournal instead"
            )
        if record.effect is EffectClass.READ_ONLY:
            return (
                f"{where}: this journal holds no claim on it and it has no finished outcome: a read run "
                "again replaces only a finished outcome, so this one was not recorded"
            )
        return (
            f"{where}: this journal holds no claim on it (another call began it, or its outcome is "
            "recorded already): only the call whose begin() claimed a key records its outcome, once"
        )

    def entries(self) -> list[JournalEntry]:
        """Every journaled dispatch, in intent order.

        Raises:
            JournalError: the file could not be read.
        """
        with self._lock:
            try:
                return [row_entry(r, self.path) for r in self._db.execute(SELECT + " ORDER BY i.seq")]
            except sqlite3.Error as exc:
                raise journal_error(self.path, "could not read it", exc) from exc

    def lookup(self, commit_key: str) -> JournalEntry | None:
        """The entry of ``commit_key``, if any; see :meth:`inert.Journal.lookup`.

        Raises:
            JournalError: the file could not be read.
        """
        with self._lock:
            try:
                row = self._db.execute(SELECT + " WHERE i.commit_key = ?", (commit_key,)).fetchone()
            except sqlite3.Error as exc:
                raise journal_error(self.path, "could not read it", exc) from exc
        return None if row is None else row_entry(row, self.path)
