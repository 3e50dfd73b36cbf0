"""The PostgreSQL journal's schema: versioned, and created only when asked.

Two tables, both prefixed so that they can sit beside an application's own:
``inert_meta`` holds ``schema_version``; ``inert_journal`` holds one row per
commit key (the intent, who holds it and until when, and the outcome). They
are created by ``inert journal init DSN`` (or ``PostgresJournal(dsn,
create=True)`` on a database that holds no inert tables yet), never as a side
effect of opening a journal. A schema of a newer version than this inert
knows is refused rather than guessed at; a later version of inert migrates
older schemas in :func:`init_schema`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import JournalError
from .postgres_connection import Timeouts, connect, failure, psycopg_module, redact
from .postgres_watchdog import bounded, unanswered

if TYPE_CHECKING:
    import psycopg

__all__ = ["SCHEMA_VERSION", "TABLES", "check_schema", "init_schema"]

SCHEMA_VERSION = 1
TABLES = ("inert_meta", "inert_journal")

# One transaction-level advisory lock serialises concurrent inits (two workers
# started with create=True at once): the second finds the tables made.
_INIT_LOCK = 0x1E27_0001

_DDL = (
    """CREATE TABLE IF NOT EXISTS inert_meta (
        key text PRIMARY KEY,
        value text NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS inert_journal (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        commit_key text NOT NULL UNIQUE,
        turn_key text NOT NULL,
        tool text NOT NULL,
        effect text NOT NULL,
        arguments text NOT NULL,
        fingerprint text NOT NULL,
        intent_at double precision NOT NULL,
        worker text NOT NULL,
        claim text NOT NULL,
        lease_until timestamptz NOT NULL,
        status text CHECK (status IN ('ok', 'error', 'timeout')),
        result text,
        error text,
        finished_at double precision
    )""",
    "COMMENT ON TABLE inert_journal IS 'inert dispatch journal: one row per commit key (see inert journal init)'",
)


# What inert reads and writes in inert_journal (the columns _DDL makes), with their types as
# PostgreSQL's format_type names them: a column of another type fails only some statements
# (an interval on a text lease_until fails recovery alone), so a wrong one is refused at open.
_COLUMNS = {
    "seq": "bigint",
    "commit_key": "text",
    "turn_key": "text",
    "tool": "text",
    "effect": "text",
    "arguments": "text",
    "fingerprint": "text",
    "intent_at": "double precision",
    "worker": "text",
    "claim": "text",
    "lease_until": "timestamp with time zone",
    "status": "text",
    "result": "text",
    "error": "text",
    "finished_at": "double precision",
}


def _present(conn: psycopg.Connection[Any]) -> set[str]:
    rows = conn.execute("SELECT t, to_regclass(t) IS NOT NULL FROM unnest(%s::text[]) AS t", (list(TABLES),))
    return {name for name, exists in rows if exists}


def _version(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT value FROM inert_meta WHERE key = 'schema_version'").fetchone()
    try:
        return int(row[0]) if row is not None else -1
    except ValueError:
        return -1


def _check_version(version: int, dsn: str) -> None:
    if version < 0:
        raise JournalError(
            f"PostgreSQL journal {redact(dsn)}: inert_meta holds no readable schema_version; "
            "the tables were not made by inert, or were altered: refusing to use them"
        )
    if version > SCHEMA_VERSION:
        raise JournalError(
            f"PostgreSQL journal {redact(dsn)}: schema version {version} is newer than this inert "
            f"knows (version {SCHEMA_VERSION}): upgrade inert on this worker"
        )
    if version < SCHEMA_VERSION:  # pragma: no cover - no older version exists yet
        raise JournalError(
            f"PostgreSQL journal {redact(dsn)}: schema version {version} is older than this inert's "
            f"({SCHEMA_VERSION}): run `inert journal init` to migrate it"
        )


def _check_columns(conn: psycopg.Connection[Any], dsn: str) -> None:
    """Refuses an ``inert_journal`` that lacks a column inert uses, has one of another type, or
    lacks the unique commit key every intent's ``ON CONFLICT`` needs: altered outside inert, or
    another application's table of that name. Every call would fail on it, one by one."""
    have = dict(
        conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'inert_journal'::regclass AND attnum > 0 AND NOT attisdropped"
        ).fetchall()
    )
    wrong = [c for c in _COLUMNS if c not in have]
    if not wrong:
        wrong = [f"{c} of type {want} (it is {have[c]})" for c, want in _COLUMNS.items() if have[c] != want]
    if not wrong and not _commit_key_unique(conn):
        wrong = ["a unique commit_key"]
    if wrong:
        raise JournalError(
            f"PostgreSQL journal {redact(dsn)}: its inert_journal table lacks {', '.join(wrong)}: it was altered "
            "outside inert, or is another application's table; restore it, or give inert a database of its own"
        )


def _commit_key_unique(conn: psycopg.Connection[Any]) -> bool:
    """Whether a valid unique index on ``commit_key`` alone exists, checked at once (not
    deferrable): the intents' ``ON CONFLICT`` arbiter."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
        " AND a.attnum = i.indkey[0] WHERE i.indrelid = 'inert_journal'::regclass AND i.indisunique"
        " AND i.indimmediate AND i.indisvalid AND i.indnkeyatts = 1 AND i.indpred IS NULL"
        " AND a.attname = 'commit_key')"
    ).fetchone()
    return bool(row and row[0])


def check_schema(conn: psycopg.Connection[Any], dsn: str, *, create: bool) -> None:
    """Makes sure the database holds a journal this inert can use.

    Args:
        conn: an open connection.
        dsn: for messages.
        create: create the tables when the database holds none of inert's (whatever else it holds).

    Raises:
        JournalError: no journal and ``create`` is false; a partial schema (a table, or a column
            of inert_journal, missing); an unknown or newer version.
    """
    present = _present(conn)
    if not present and create:
        _create(conn, dsn)
        present = _present(conn)
    if not present:
        raise JournalError(
            f"PostgreSQL journal {redact(dsn)}: the database holds no inert journal; create it "
            "once with `inert journal init DSN` (or PostgresJournal(dsn, create=True))"
        )
    if present != set(TABLES):
        missing = ", ".join(t for t in TABLES if t not in present)
        raise JournalError(
            f"PostgreSQL journal {redact(dsn)}: the inert schema is incomplete ({missing} missing); "
            "run `inert journal init DSN` to complete it"
        )
    _check_version(_version(conn), dsn)
    _check_columns(conn, dsn)


def _create(conn: psycopg.Connection[Any], dsn: str) -> int:
    """Creates (or completes) the schema in one transaction; returns the version found before (-1: none)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INIT_LOCK,))
        before = _version(conn) if "inert_meta" in _present(conn) else -1
        for statement in _DDL:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO inert_meta (key, value) VALUES ('schema_version', %s) ON CONFLICT (key) DO NOTHING",
            (str(SCHEMA_VERSION),),
        )
        # Inside the transaction: a refusal rolls it back, so another application's table
        # keeps its comment and the database gains no inert_meta.
        _check_version(_version(conn), dsn)
        _check_columns(conn, dsn)
    return before


def init_schema(dsn: str, *, timeouts: Timeouts | None = None) -> tuple[bool, int]:
    """Creates the journal's tables, or checks them when they exist (``inert journal init``).

    Safe to run again and from several workers at once. It adds only the two
    ``inert_*`` tables, whatever else the database holds: running it is the request.

    Args:
        dsn: a PostgreSQL URI or keyword/value connection string, for a role that may create tables.
        timeouts: bounds on connecting and on each statement.

    Returns:
        ``(created, version)``: whether the schema was created (or completed) now, and its version.

    Raises:
        JournalError: the database is unreachable, the role may not create tables, or
            it holds a schema of a newer or unknown version, or an inert_journal without
            inert's columns.
    """
    pg = psycopg_module()
    timeouts = timeouts or Timeouts()
    conn = connect(dsn, application_name="inert journal init", timeouts=timeouts)
    watch = None
    doing = "cannot check the journal's schema"  # what a failure says: most runs only check
    try:
        # Bounded as a journal's statements are: a frozen server holds no init for ever.
        with bounded(conn, timeouts.statement, "inert-watchdog init") as watch:
            present = _present(conn)
            if present != set(TABLES):
                doing = "cannot create the journal's schema"
                before = _create(conn, dsn)
            else:
                before = _version(conn)
            _check_version(_version(conn), dsn)
            _check_columns(conn, dsn)
        return before != SCHEMA_VERSION or present != set(TABLES), SCHEMA_VERSION
    except pg.Error as e:
        if watch is not None and watch.severed:
            raise unanswered(dsn, doing, watch.bound) from e
        raise failure(dsn, doing, e) from e
    finally:
        conn.close()
