"""Connections to the PostgreSQL journal: psycopg loaded on demand, every wait
bounded, every failure a :class:`JournalError` that names the database
(never its password) and says what to do.

Nothing may hang on the database: connecting gives up after
``connect_timeout``; the server cancels a statement after
``statement_timeout`` and a lock wait after the same; TCP keepalives and
``tcp_user_timeout`` make a peer that vanished from the network an error
within seconds instead of a read that never returns.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..durations import seconds
from ..errors import JournalError
from .address import DSN_PREFIXES, is_dsn, keyword_pairs

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "DSN_PREFIXES",
    "Timeouts",
    "connect",
    "connection_lost",
    "failure",
    "is_dsn",
    "open_connection",
    "psycopg_module",
    "redact",
]


_SECRET_KEYS = frozenset({"password", "sslpassword"})
"""libpq's connection parameters that hold a secret: the password, and the one that decrypts the client's SSL key."""


def redact(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***``, fit for messages and logs (a URI, or a
    keyword/value connection string)."""
    if not dsn.startswith(DSN_PREFIXES):
        pairs = keyword_pairs(dsn)
        if not pairs:
            return "the PostgreSQL journal"  # unparseable: show nothing that might hold a secret
        return " ".join(f"{k}={_quoted('***' if k in _SECRET_KEYS else v)}" for k, v in pairs)
    try:
        parts = urllib.parse.urlsplit(dsn)
        netloc = parts.netloc
        if parts.password is not None:
            user, _, host = netloc.rpartition("@")
            netloc = user.split(":", 1)[0] + ":***@" + host
        query = urllib.parse.urlencode(
            [(k, "***" if k in _SECRET_KEYS else v) for k, v in urllib.parse.parse_qsl(parts.query)], safe="/*"
        )
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "the PostgreSQL journal"  # unparseable: show nothing that might hold a secret


def _quoted(value: str) -> str:
    """A keyword/value connection string's value, quoted when libpq needs it to be."""
    if value and not any(c.isspace() or c in "'\\" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def scrubbed(message: str) -> str:
    """psycopg's complaint about a DSN, its first line, without the text it quotes: that is
    the DSN, or a piece of it, and may be the password (a malformed URI cannot be redacted
    reliably). An unknown option's name is kept: the key of a key=value pair, never its value."""
    first = (message.strip().splitlines() or [""])[0]
    return re.sub(
        r'"([^"]*)"',
        lambda m: m.group(0) if re.fullmatch(r"\w+", m.group(1)) and _names_option(first, m.start()) else '"…"',
        first,
    )


def _names_option(message: str, at: int) -> bool:
    return message[:at].endswith("invalid connection option ")


def psycopg_module() -> ModuleType:
    """psycopg 3, imported on first use: only PostgreSQL journals need it.

    Raises:
        JournalError: psycopg 3 is not installed.
    """
    try:
        import psycopg
    except ImportError as e:
        raise JournalError("a PostgreSQL journal needs psycopg 3: pip install 'inert[postgres]'") from e
    return psycopg


@dataclass(frozen=True)
class Timeouts:
    """How long the journal waits on the database, in seconds.

    Args:
        connect: to open a connection (libpq's ``connect_timeout``, whole seconds, at least 1).
        statement: for one statement or lock, enforced by the server; also how long
            unacknowledged data may sit on a TCP connection before it counts as lost.

    Raises:
        InertTypeError: a timeout that is no number.
        InertValueError: one that is not positive and finite (the server would be asked to
            wait 1 ms, or never to give up).
    """

    connect: float = 5.0
    statement: float = 10.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "connect", seconds("connect_timeout", self.connect))
        object.__setattr__(self, "statement", seconds("statement_timeout", self.statement))


def connect(dsn: str, *, application_name: str, timeouts: Timeouts, read_only: bool = False) -> psycopg.Connection[Any]:
    """:func:`open_connection`, its failures as :class:`JournalError`.

    Raises:
        JournalError: psycopg is missing, the DSN is malformed, or the server cannot be reached in time.
    """
    pg = psycopg_module()
    try:
        return open_connection(dsn, application_name=application_name, timeouts=timeouts, read_only=read_only)
    except pg.Error as e:
        raise failure(dsn, "cannot connect", e) from e


def open_connection(
    dsn: str, *, application_name: str, timeouts: Timeouts, read_only: bool = False
) -> psycopg.Connection[Any]:
    """Opens an autocommit connection with every wait bounded.

    Settings the DSN already makes (``connect_timeout``, ``application_name``,
    keepalives) are kept; ``options`` are appended to.

    Args:
        dsn: a ``postgresql://`` URI or a keyword/value connection string.
        application_name: shown in ``pg_stat_activity`` (the worker id).
        timeouts: the bounds.
        read_only: every transaction of the session is read-only, enforced by the server.

    Raises:
        JournalError: psycopg is missing, or the DSN is malformed.
        psycopg.Error: the server cannot be reached in time.
    """
    pg = psycopg_module()
    try:
        given = pg.conninfo.conninfo_to_dict(dsn)
    except pg.ProgrammingError as e:
        raise JournalError(
            f"{redact(dsn)} is not a valid PostgreSQL URI or connection string: {scrubbed(str(e))}"
        ) from e
    ms = max(1, int(timeouts.statement * 1000))
    options = [
        str(given.get("options") or ""),
        f"-c statement_timeout={ms}",
        f"-c lock_timeout={ms}",
        # a client that froze inside a transaction must not hold its locks forever
        f"-c idle_in_transaction_session_timeout={ms * 6}",
    ]
    if read_only:
        options.append("-c default_transaction_read_only=on")
    defaults: dict[str, Any] = {
        "connect_timeout": max(1, math.ceil(timeouts.connect)),
        "application_name": application_name[:63],
        "keepalives": 1,
        "keepalives_idle": 5,
        "keepalives_interval": 2,
        "keepalives_count": 3,
        "tcp_user_timeout": ms,
    }
    extra = {k: v for k, v in defaults.items() if k not in given}
    extra["options"] = " ".join(o for o in options if o)
    conn: psycopg.Connection[Any] = pg.connect(pg.conninfo.make_conninfo(dsn, **extra), autocommit=True)
    return conn


def connection_lost(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn`` can no longer be used (closed, or broken by a lost connection)."""
    return conn.closed or conn.broken


_BAD_VALUE = re.compile(r"^(connection is bad: )?invalid \w+ value\b")
"""libpq's refusal of a DSN's parameter (``invalid sslmode value: "bogus"``), raised as a failed connection."""


def failure(dsn: str, doing: str, exc: BaseException) -> JournalError:
    """A :class:`JournalError` for a database error, naming the database and what to do."""
    pg = psycopg_module()
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(exc, pg.ProgrammingError) or _BAD_VALUE.search(text):
        advice = "the DSN gives a connection parameter a value libpq does not accept: correct it"
    elif isinstance(exc, pg.errors.LockNotAvailable):  # an OperationalError, but no lost connection
        advice = "another session holds a lock on the journal's table past the lock timeout"
    elif isinstance(exc, pg.errors.QueryCanceled):
        advice = (
            "a statement or lock wait outran the journal's statement timeout: "
            "the database is overloaded or a lock is held"
        )
    elif isinstance(exc, pg.errors.InsufficientPrivilege):
        advice = (
            "the role lacks a privilege on the journal's tables: "
            "grant it, or use the role that ran `inert journal init`"
        )
    elif isinstance(exc, pg.errors.ReadOnlySqlTransaction):
        advice = "the server is read-only (a standby?): point the journal at the primary"
    elif isinstance(exc, (pg.OperationalError, pg.InterfaceError)):
        advice = "the database is unreachable or the connection was lost: check that it runs and that the DSN is right"
    else:
        advice = "that is all the server says of it: check its log"
    return JournalError(f"PostgreSQL journal {redact(dsn)}: {doing}: {text}; {advice}")
