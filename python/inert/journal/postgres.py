"""A journal that a fleet shares: PostgreSQL, each commit key run at most once
across every process and host that shares the database, and exactly once
when it completes.

Claims and leases. ``begin`` claims a key with one ``INSERT ... ON CONFLICT
DO NOTHING`` on the unique commit key, recording the worker, a claim token
and a lease (``lease_seconds`` on the database's clock, so hosts need not
agree on the time). While the call runs, a heartbeat thread renews the lease
every third of it; ``complete`` records the outcome, under that claim token
only, and stops renewing. A worker that dies stops renewing, so its keys fall
in doubt when their leases lapse, never while it still runs; one that stalled
for a whole lease, and whose key another worker took over meanwhile, finds its
claim gone when it completes: :class:`~inert.StaleClaimError`, and the other
worker's outcome stands.

Meeting a key that is already journaled:

- with an outcome: the outcome is returned (the dispatcher replays it);
- held by a live worker (no outcome, lease not expired): ``begin`` waits for
  the outcome up to ``wait_seconds``, polling, and returns it like any
  replay; past the deadline it raises :class:`~inert.InFlightError`;
- held by a dead worker (lease expired, no outcome) or timed out: the entry is
  returned in doubt. The dispatcher never re-runs a write in doubt; a read or
  an idempotent call it re-runs (with the same ``idempotency_key``), so the
  journal first claims the key for this worker, atomically, so that one
  worker re-runs it while others wait.

The claim token makes each statement safe to retry: a claim whose reply was
lost with the connection is recognised as this call's own after a reconnect.
A connection lost mid-call is reopened once; if that fails too, the call's
intent or outcome could not be recorded, a :class:`~inert.JournalError` says
so, and the key falls in doubt when its lease lapses.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ..canonical import canonical_arguments
from ..durations import seconds
from ..effects import EffectClass
from ..errors import InertTypeError, InertValueError, InFlightError, JournalError, StaleClaimError
from ..report import DispatchRecord
from .postgres_connection import (
    Timeouts,
    connect,
    connection_lost,
    failure,
    open_connection,
    psycopg_module,
    redact,
)
from .postgres_schema import check_schema
from .postgres_watchdog import StatementWatchdog, bounded, statement_bound, unanswered
from .protocol import JournalEntry, new_entry, outcome_of, result_json, same_call, stored_json

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresJournal", "default_worker", "read_postgres_journal"]

log = logging.getLogger("inert.journal")

T = TypeVar("T")

_SELECT = (
    "SELECT commit_key, turn_key, tool, effect, arguments, fingerprint, intent_at, status, result, error,"
    " finished_at, worker, extract(epoch FROM lease_until)::float8,"
    " status IS NULL AND lease_until > clock_timestamp(), claim FROM inert_journal"
)

_CLAIM = (
    "INSERT INTO inert_journal (commit_key, turn_key, tool, effect, arguments, fingerprint, intent_at, worker, claim,"
    " lease_until) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, clock_timestamp() + make_interval(secs => %s))"
    " ON CONFLICT (commit_key) DO NOTHING RETURNING seq"
)

# Takes over a key in doubt: its holder's lease lapsed without an outcome, or it timed out.
_TAKE_OVER = (
    "UPDATE inert_journal SET worker = %s, claim = %s, lease_until = clock_timestamp() + make_interval(secs => %s),"
    " status = NULL, result = NULL, error = NULL, finished_at = NULL"
    " WHERE commit_key = %s AND ((status IS NULL AND lease_until <= clock_timestamp()) OR status = 'timeout')"
    " RETURNING seq"
)

# An outcome is recorded only under the claim it was run under: a worker whose lease
# lapsed and whose key another worker took over must not replace that worker's outcome.
# Safe to repeat after a lost reply: the claim is still this worker's.
_RECORD = (
    "UPDATE inert_journal SET status = %s, result = %s, error = %s, finished_at = %s"
    " WHERE commit_key = %s AND claim = %s RETURNING seq"
)

# A read run again without a claim (its key recurred after its earlier run's outcome
# was replayed) replaces a finished outcome, never a key someone holds.
_RECORD_READ_AGAIN = (
    "UPDATE inert_journal SET status = %s, result = %s, error = %s, finished_at = %s"
    " WHERE commit_key = %s AND status IN ('ok', 'error') RETURNING seq"
)

_MAX_POLL = 0.1  # seconds between looks at a key another worker holds

_LOCKED_OUT_WAIT_MS = 100
"""How long an intent waits for a lock once an intent found one held past the lock timeout."""


def default_worker() -> str:
    """A worker id unique to this process: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _row_entry(row: tuple[Any, ...], dsn: str) -> JournalEntry:
    (key, turn, tool, effect, args, fp, intent_at, status, result, error, finished_at, worker, lease, live, _claim) = (
        row
    )
    name = redact(dsn)
    return JournalEntry(
        key,
        turn,
        tool,
        effect,
        stored_json(args, "arguments", key, name),
        fp,
        intent_at,
        status,
        None if result is None else stored_json(result, "result", key, name),
        error,
        finished_at,
        worker,
        lease,
        bool(live),
    )


class PostgresJournal:
    """A journal in a PostgreSQL database that every worker of a fleet shares.

    Args:
        dsn: a ``postgresql://`` (or ``postgres://``) URI, or a libpq keyword/value
            connection string (``"host=db.internal dbname=prod"``). The schema must exist
            (``inert journal init DSN``) unless ``create`` is true.
        worker: this worker's id, recorded with every key it claims (default
            ``host:pid:random``, unique per journal).
        lease_seconds: how long a claim stays live without renewal. The heartbeat
            renews it every third of that while the call runs, so only a worker
            that died (or lost the database for that long) lets it lapse; a key
            whose lease lapsed without an outcome is in doubt. Shorter finds dead
            workers sooner and costs more renewals.
        wait_seconds: how long ``begin`` waits for the outcome of a key that another
            live worker holds before raising :class:`~inert.InFlightError`
            (0: at once).
        create: create the schema when the database holds no inert tables yet.
        connect_timeout: seconds to open a connection before giving up.
        statement_timeout: seconds any one statement or lock wait may take.
        on_wait: called with the holder's entry when ``begin`` starts waiting on a
            key another worker holds (for metrics and logs).
        pool_size: connections this journal opens at most, so that the calls of one
            worker running at once journal at once (the server commits them together)
            instead of queueing on one connection. Opened as concurrency demands.

    Raises:
        JournalError: psycopg is missing; the database is unreachable; it holds no
            journal and ``create`` is false; or its schema is partial or of a newer version.
        InertValueError: a lease or timeout that is not a positive, finite number of seconds, or
            a wait below 0 (0 does not wait; ``math.inf`` waits for the holder however long),
            or a pool_size below 1.
        InertTypeError: a duration that is no number.
    """

    def __init__(
        self,
        dsn: str,
        *,
        worker: str | None = None,
        lease_seconds: float = 30.0,
        wait_seconds: float = 30.0,
        create: bool = False,
        connect_timeout: float = 5.0,
        statement_timeout: float = 10.0,
        on_wait: Callable[[JournalEntry], None] | None = None,
        pool_size: int = 4,
    ) -> None:
        if not isinstance(dsn, str):
            raise InertTypeError(
                f"PostgresJournal takes a DSN (a postgresql:// URI or a keyword/value "
                f"connection string), got {type(dsn).__name__}"
            )
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise InertValueError(f"pool_size must be a positive int, not {pool_size!r}")
        self.dsn = dsn
        self.worker = worker or default_worker()
        # A lease the database cannot add to its clock would fail every claim: refused here.
        self.lease_seconds = seconds("lease_seconds", lease_seconds)
        self.wait_seconds = seconds("wait_seconds", wait_seconds, zero_ok=True, finite=False)
        self.on_wait = on_wait
        self._timeouts = Timeouts(connect_timeout, statement_timeout)
        self._pg = psycopg_module()
        self._lock = threading.Lock()  # guards the pool, the held keys and the heartbeat
        self._returned = threading.Condition(self._lock)  # a connection came back to the pool
        self._pool_size = pool_size
        self._opened = 1  # connections open or being opened, idle or in use
        self._held: dict[str, str] = {}  # commit key -> claim token, renewed until its outcome is recorded
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._closed = False
        # Past the server's own statement timeout, which ends a statement first when it answers: a
        # claim runs up to three statements (insert, look, take over), each within that timeout.
        self._watchdog = StatementWatchdog(statement_bound(self._timeouts.statement), f"inert-watchdog {self.worker}")
        self._locked_out = False
        """An intent waited out the lock timeout (another session holds a lock on the journal):
        until one succeeds, plain intents wait only ``_LOCKED_OUT_WAIT_MS`` (see ``_claim_now``)."""
        conn = connect(dsn, application_name=self._application_name, timeouts=self._timeouts)
        watch = None
        try:
            with self._watchdog.watching(conn, per_statement=True) as watch:
                check_schema(conn, dsn, create=create)
        except self._pg.Error as e:
            conn.close()
            if watch is not None and watch.severed:
                raise unanswered(dsn, "cannot read the journal's schema", watch.bound) from e
            raise failure(dsn, "cannot read the journal's schema", e) from e
        except BaseException:
            conn.close()
            raise
        self._idle: list[psycopg.Connection[Any]] = [conn]

    def __repr__(self) -> str:
        return f"PostgresJournal({redact(self.dsn)!r}, worker={self.worker!r})"

    @property
    def _application_name(self) -> str:
        return f"inert {self.worker}"

    def _run(self, doing: str, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Runs ``work`` on a pooled connection, reopening it once if it was lost.
        Every statement the journal runs is safe to repeat (claims carry a token)."""
        conn = self._checkout(doing)
        try:
            for attempt in (1, 2):
                watch = None
                try:
                    if conn is None or connection_lost(conn):
                        if conn is not None:
                            conn.close()
                        conn = None
                        conn = open_connection(
                            self.dsn, application_name=self._application_name, timeouts=self._timeouts
                        )
                    with self._watchdog.watching(conn) as watch:
                        return work(conn)
                except self._pg.Error as e:
                    if watch is not None and watch.severed:  # not tried again: it would wait as long
                        raise unanswered(self.dsn, doing, watch.bound) from e
                    if attempt == 1 and (conn is None or connection_lost(conn)):
                        what = "could not connect" if conn is None else "connection lost"
                        said = (str(e).strip().splitlines() or [type(e).__name__])[0]
                        log.warning("%r: %s (%s); trying once more", self, what, said)
                        continue
                    raise failure(self.dsn, doing, e) from e
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            self._checkin(conn)

    def _checkout(self, doing: str) -> psycopg.Connection[Any] | None:
        """An idle connection, or ``None`` when the caller may open one (the pool has room)."""
        with self._lock:
            while True:
                if self._closed:
                    raise JournalError(f"PostgreSQL journal {redact(self.dsn)}: {doing}: the journal is closed")
                if self._idle:
                    return self._idle.pop()  # the most recent: an idle worker keeps one connection warm
                if self._opened < self._pool_size:
                    self._opened += 1
                    return None
                self._returned.wait()

    def _checkin(self, conn: psycopg.Connection[Any] | None) -> None:
        with self._lock:
            if conn is None or self._closed or connection_lost(conn):
                self._opened -= 1
                if conn is not None:
                    conn.close()
            else:
                self._idle.append(conn)
            self._returned.notify()

    # -- the Journal protocol --

    def begin(self, record: DispatchRecord, turn_key: str) -> JournalEntry | None:
        """Claims the commit key of ``record`` for this worker, or finds who has it.

        Args:
            record: the call about to run.
            turn_key: the turn it belongs to.

        Returns:
            ``None``: this worker now holds the key and its tool must run. Otherwise the
            key's entry: with an outcome (replayed), or in doubt (its holder died, or it
            timed out); a read or idempotent call in doubt is claimed for this worker
            first, since the dispatcher re-runs it.

        Raises:
            IdempotencyConflictError: the key was journaled with another tool or other arguments.
            InFlightError: a live worker holds the key and its outcome did not come within ``wait_seconds``.
            JournalError: the database could not record the claim (the tool must not run; if the
                claim did reach the database, the key falls in doubt when its lease lapses).
        """
        e = new_entry(record, turn_key)
        claim = uuid.uuid4().hex
        args = canonical_arguments(e.arguments)
        doing = f"could not record the intent of {record.name!r} under key {record.commit_key} (the tool was not run)"
        deadline: float | None = None
        pause = 0.002
        # A commit or abort settles what a prepare staged: it waits the whole timeout.
        patient = record.phase in ("commit", "abort")
        while True:
            try:
                claimed, prior = self._run(doing, lambda c: self._claim_now(c, e, args, claim, record, patient=patient))
            except JournalError as exc:
                if isinstance(exc.__cause__, self._pg.errors.QueryCanceled | self._pg.errors.LockNotAvailable):
                    self._locked_out = True
                raise
            self._locked_out = False
            if claimed:
                self._hold(record.commit_key, claim)
                return prior
            if prior is None:  # it changed hands between two statements: look again
                continue
            if not prior.in_flight:
                return prior
            now = time.monotonic()
            if deadline is None:
                deadline = now + self.wait_seconds
                if self.on_wait is not None and self.wait_seconds > 0:
                    self.on_wait(prior)
            if now >= deadline:
                raise InFlightError(
                    f"{record.name!r} under key {record.commit_key} is running on worker {prior.worker}, which "
                    f"holds its lease, and its outcome did not come within {self.wait_seconds:g} s: it was not run "
                    "here. That worker records its outcome; if it dies, the key falls in doubt when its lease "
                    f"lapses. See `inert recover {redact(self.dsn)}`"
                )
            time.sleep(min(pause, deadline - now))
            pause = min(pause * 2, _MAX_POLL)

    def _claim_now(
        self,
        conn: psycopg.Connection[Any],
        e: JournalEntry,
        args: str,
        claim: str,
        record: DispatchRecord,
        *,
        patient: bool,
    ) -> tuple[bool, JournalEntry | None]:
        """``_claim``, its lock waits cut to ``_LOCKED_OUT_WAIT_MS`` while the journal is known to be
        locked (unless ``patient``): each intent waited the whole timeout in turn, so a turn of n
        calls took n times it to fail, whatever the calls' deadlines (found by a helper; the SQLite
        journal does the same). An intent not written leaves its tool unrun: nothing happens that
        the journal does not know of. Outcomes wait the whole timeout (one not written leaves its
        call in doubt)."""
        if patient or not self._locked_out:
            return self._claim(conn, e, args, claim, record)
        conn.execute(f"SET lock_timeout = {_LOCKED_OUT_WAIT_MS}")
        try:
            return self._claim(conn, e, args, claim, record)
        finally:
            if not connection_lost(conn):
                conn.execute("RESET lock_timeout")  # to the connection's own, set when it opened

    def _claim(
        self, conn: psycopg.Connection[Any], e: JournalEntry, args: str, claim: str, record: DispatchRecord
    ) -> tuple[bool, JournalEntry | None]:
        """One look at the key: ``(True, None)`` claimed new, ``(True, entry)`` taken over in
        doubt, ``(False, entry)`` someone else's (with an outcome, in doubt, or in flight),
        ``(False, None)`` changed hands meanwhile."""
        row = conn.execute(
            _CLAIM,
            (
                e.commit_key,
                e.turn_key,
                e.tool,
                e.effect,
                args,
                e.fingerprint,
                e.intent_at,
                self.worker,
                claim,
                self.lease_seconds,
            ),
        ).fetchone()
        if row is not None:
            return True, None
        found = conn.execute(_SELECT + " WHERE commit_key = %s", (e.commit_key,)).fetchone()
        if found is None:  # pragma: no cover - rows are never deleted
            return False, None
        prior = same_call(_row_entry(found, self.dsn), record)
        if found[-1] == claim:  # our own claim, whose reply the connection lost before a retry
            return True, None
        if prior.status is None and not prior.in_flight and self._holds(e.commit_key, found[-1]):
            # Another call of this worker holds the key and is still running, though its lease
            # lapsed (renewals failed): in flight, not in doubt, and never taken over from it,
            # or its outcome and this call's would be recorded under one key's claim.
            prior = dataclasses.replace(prior, in_flight=True)
        if prior.in_doubt and record.effect is not EffectClass.WRITE:
            taken = conn.execute(_TAKE_OVER, (self.worker, claim, self.lease_seconds, e.commit_key)).fetchone()
            if taken is None:  # another worker took it over (or finished it) first
                return False, None
            return True, prior
        return False, prior

    def complete(self, record: DispatchRecord, status: str) -> None:
        """Records the outcome of ``record`` and stops renewing its lease.

        Args:
            record: the call, with its ``result`` or ``error``.
            status: ``"ok"``, ``"error"`` or ``"timeout"``.

        Only the claim the call ran under records its outcome: a worker whose lease
        lapsed while it stalled, and whose key another worker took over (a read or
        idempotent call in doubt is run again), gets :class:`~inert.StaleClaimError`,
        and the other worker's outcome stands. A read run again after its key's outcome
        was replayed (its earlier run's block was rejected) replaces that outcome
        without a claim, but never while another worker holds the key.

        Raises:
            StaleClaimError: this worker does not hold the key's claim (any more): nothing
                was recorded, and the outcome of the worker that holds it stands.
            JournalError: the outcome could not be recorded (the database stayed unreachable
                after one reconnect): the key falls in doubt when its lease lapses.
        """
        result, error = outcome_of(record, status)
        key = record.commit_key
        with self._lock:
            claim = self._held.get(key)
        try:
            values: tuple[Any, ...] = (status, result_json(result), error, time.time(), key)
            if claim is not None:
                sql, params = _RECORD, (*values, claim)
            elif record.effect is EffectClass.READ_ONLY:
                sql, params = _RECORD_READ_AGAIN, values
            else:
                sql, params = None, values  # a claim this worker never held: nothing it may record
            row = (
                None
                if sql is None
                else self._run(
                    f"could not record the outcome of {record.name!r} under key {key}; it stays in doubt "
                    "(listed by `inert recover` once its lease lapses)",
                    lambda c: c.execute(sql, params).fetchone(),
                )
            )
        finally:
            # Renewing a key whose outcome could not be recorded would keep it
            # "in flight" for as long as this process lives: let it lapse into doubt.
            with self._lock:
                self._held.pop(key, None)
        if row is None:
            raise self._stale(record, claim)

    def _stale(self, record: DispatchRecord, claim: str | None) -> StaleClaimError:
        """Why this worker's outcome of ``record`` was not recorded: who holds the key now."""
        key = record.commit_key
        try:
            now = self.lookup(key)
        except JournalError:
            now = None
        holder = "another worker" if now is None or now.worker is None else f"worker {now.worker}"
        if claim is not None:
            return StaleClaimError(
                f"worker {self.worker} lost its claim on {record.name!r} under key {key}: its lease lapsed and the "
                f"key was taken over by {holder}, whose outcome stands; this one was not recorded (see "
                f"`inert recover {redact(self.dsn)}`). Renewals failed or the process stalled for a whole "
                "lease: a longer lease_seconds tolerates longer stalls"
            )
        if record.effect is EffectClass.READ_ONLY:
            return StaleClaimError(
                f"worker {self.worker} holds no claim on {record.name!r} under key {key}, which {holder} holds "
                "without a finished outcome: a read run again replaces only a finished outcome, so this one was "
                "not recorded"
            )
        return StaleClaimError(
            f"worker {self.worker} holds no claim on {record.name!r} under key {key} ({holder} claimed it): "
            "only the worker whose begin() claimed a key records its outcome, once; this one was not recorded"
        )

    def entries(self) -> list[JournalEntry]:
        """Every journaled dispatch, in intent order; ``in_flight`` marks keys a live worker holds.

        Raises:
            JournalError: the database could not be read.
        """
        rows = self._run("could not read the journal", lambda c: c.execute(_SELECT + " ORDER BY seq").fetchall())
        return [_row_entry(r, self.dsn) for r in rows]

    def lookup(self, commit_key: str) -> JournalEntry | None:
        """The entry of ``commit_key``, if any; see :meth:`inert.Journal.lookup`.

        Raises:
            JournalError: the database could not be read.
        """
        row = self._run(
            "could not read the journal",
            lambda c: c.execute(_SELECT + " WHERE commit_key = %s", (commit_key,)).fetchone(),
        )
        return None if row is None else _row_entry(row, self.dsn)

    # -- leases --

    def _holds(self, key: str, claim: str) -> bool:
        """Whether a call of this journal runs ``key`` under ``claim`` (its outcome still to come)."""
        with self._lock:
            return self._held.get(key) == claim

    def _hold(self, key: str, claim: str) -> None:
        with self._lock:
            self._held[key] = claim
            if self._heartbeat is None and not self._closed:
                self._heartbeat = threading.Thread(
                    target=self._renew_leases, name=f"inert-lease {self.worker}", daemon=True
                )
                self._heartbeat.start()

    def _renew_leases(self) -> None:
        # Runs only while keys are held, so a journal dropped without close()
        # leaves no thread behind once its calls have their outcomes.
        while not self._stop.wait(self.lease_seconds / 3):
            with self._lock:
                claims = list(self._held.values())
                if not claims:
                    self._heartbeat = None
                    return
            try:
                self._run(
                    "could not renew its leases",
                    lambda c: c.execute(
                        "UPDATE inert_journal SET lease_until = clock_timestamp() + make_interval(secs => %s)"
                        " WHERE claim = ANY(%s) AND status IS NULL",
                        (self.lease_seconds, claims),  # noqa: B023 - run at once, within this iteration
                    ),
                )
            except JournalError as e:
                # The next beat tries again; if the database stays away for a whole
                # lease, other workers rightly see these keys in doubt.
                log.warning("%s", e)

    def close(self) -> None:
        """Stops renewing leases and closes the connections. Keys still held (calls
        without an outcome) fall in doubt when their leases lapse."""
        self._stop.set()
        with self._lock:
            heartbeat = self._heartbeat
        if heartbeat is not None and heartbeat is not threading.current_thread():
            # Bounded: a renewal the watchdog cuts short, tried again on a new connection that
            # cannot connect, then cut short again.
            heartbeat.join(2 * self._watchdog.bound + self._timeouts.connect + 1)
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._returned.notify_all()
        for conn in idle:  # those in use close as they come back
            conn.close()
        self._watchdog.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def read_postgres_journal(dsn: str, *, timeouts: Timeouts | None = None) -> list[JournalEntry]:
    """Every dispatch the database's journal holds, read in one read-only transaction.

    The session is read-only on the server (``default_transaction_read_only``),
    so nothing can be written, not even by mistake; the schema is checked, never created.

    Args:
        dsn: a PostgreSQL URI or keyword/value connection string; a role with ``SELECT``
            on the journal suffices.
        timeouts: bounds on connecting and on each statement.

    Returns:
        The entries in intent order; ``in_flight`` marks keys a live worker holds.

    Raises:
        JournalError: the database is unreachable, holds no inert journal, or one of a newer version.
    """
    pg = psycopg_module()
    timeouts = timeouts or Timeouts()
    conn = connect(dsn, application_name="inert recover", timeouts=timeouts, read_only=True)
    watch = None
    try:
        conn.read_only = True
        conn.isolation_level = pg.IsolationLevel.REPEATABLE_READ  # one snapshot for the check and the rows
        # Bounded as a journal's statements are: a frozen server holds no read for ever.
        with bounded(conn, timeouts.statement, "inert-watchdog recover") as watch, conn.transaction():
            check_schema(conn, dsn, create=False)
            rows = conn.execute(_SELECT + " ORDER BY seq").fetchall()
    except pg.Error as e:
        if watch is not None and watch.severed:
            raise unanswered(dsn, "cannot read the journal", watch.bound) from e
        raise failure(dsn, "cannot read the journal", e) from e
    finally:
        conn.close()
    return [_row_entry(r, dsn) for r in rows]
