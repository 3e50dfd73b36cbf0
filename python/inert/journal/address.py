"""What a journal's name says it is: a PostgreSQL database or a SQLite file.

A PostgreSQL database is named as libpq names one, by a ``postgresql://`` or
``postgres://`` URI, or by a keyword/value connection string
(``host=db.internal dbname=prod user=inert``: ``keyword = value`` settings
separated by whitespace, a value in single quotes when it is empty or holds
spaces, ``\\`` escaping a quote or a backslash). Anything else that is a
``str`` is the path of a SQLite file, which is created when missing.

A name that reads as neither, a URI of another scheme or text holding
``keyword=value`` that is not a connection string libpq would take, is refused
rather than guessed at: taken as a path, it would become a local file and a
fleet would lose its shared journal without a word. A SQLite file whose name
really starts like ``run=3`` is given as ``pathlib.Path("run=3")`` or
``./run=3``; a ``PathLike`` is always a file.

Nothing here repeats a value of the name: a connection string may hold a password.
"""

from __future__ import annotations

import re

from ..errors import InertValueError

__all__ = ["DSN_PREFIXES", "LIBPQ_KEYWORDS", "address_problem", "is_dsn", "keyword_pairs", "refuse_ambiguous"]

DSN_PREFIXES = ("postgresql://", "postgres://")
"""A journal named by a string with one of these prefixes is a PostgreSQL database."""

LIBPQ_KEYWORDS = frozenset(
    {
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "require_auth",
        "channel_binding",
        "connect_timeout",
        "client_encoding",
        "options",
        "application_name",
        "fallback_application_name",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
        "replication",
        "gssencmode",
        "sslmode",
        "requiressl",
        "sslnegotiation",
        "sslcompression",
        "sslcert",
        "sslkey",
        "sslpassword",
        "sslcertmode",
        "sslrootcert",
        "sslcrl",
        "sslcrldir",
        "sslsni",
        "requirepeer",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "min_protocol_version",
        "max_protocol_version",
        "krbsrvname",
        "gsslib",
        "gssdelegation",
        "service",
        "target_session_attrs",
        "load_balance_hosts",
    }
)
"""libpq's connection keywords. A keyword/value string names a database when it uses at
least one of them (psycopg then checks the rest): ``run=3.sqlite`` uses none."""

_KEYWORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HAS_A_SETTING = re.compile(r"(?:^|\s)[A-Za-z_][A-Za-z0-9_]*\s*=")  # a word then '=', not inside a path
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def keyword_pairs(text: str) -> list[tuple[str, str]] | None:
    """``text`` read as a libpq keyword/value connection string, or ``None`` when it is not one.

    As libpq reads it: whitespace around ``=`` is allowed; an unquoted value runs to the next
    whitespace; a quoted one to its closing quote; a backslash takes the next character as is.
    """
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i == n:
            return pairs
        m = _KEYWORD.match(text, i)
        if m is None:
            return None
        i = m.end()
        while i < n and text[i].isspace():
            i += 1
        if i == n or text[i] != "=":
            return None
        i += 1
        while i < n and text[i].isspace():
            i += 1
        value: list[str] = []
        quoted = i < n and text[i] == "'"
        if quoted:
            i += 1
        while i < n and (quoted or not text[i].isspace()):
            c = text[i]
            if c == "\\" and i + 1 < n:
                value.append(text[i + 1])
                i += 2
                continue
            if quoted and c == "'":
                break
            value.append(c)
            i += 1
        if quoted:
            if i == n:
                return None  # the quote never closes
            i += 1
        pairs.append((m.group(), "".join(value)))


def is_dsn(spec: object) -> bool:
    """Whether ``spec`` names a PostgreSQL database rather than a file: a ``postgresql://``
    or ``postgres://`` URI, or a keyword/value connection string that uses at least one
    of libpq's keywords (``host=... dbname=...``). A ``PathLike`` is always a file."""
    if not isinstance(spec, str):
        return False
    if spec.startswith(DSN_PREFIXES):
        return True
    pairs = keyword_pairs(spec)
    return bool(pairs) and any(k in LIBPQ_KEYWORDS for k, _ in pairs or ())


def address_problem(spec: str) -> str | None:
    """Why ``spec``, a ``str`` that :func:`is_dsn` does not take, must not be taken as a
    file path either (it reads as a database address), or ``None`` when it is a path."""
    if (scheme := _SCHEME.match(spec)) is not None:
        return (
            f"it is a {scheme.group(1)}:// URI, and a journal is a postgresql:// or postgres:// URI, "
            "a PostgreSQL keyword/value connection string (host=... dbname=...), or a file path"
        )
    if _HAS_A_SETTING.search(spec) is None:
        return None
    pairs = keyword_pairs(spec)
    if pairs is None:
        return (
            "it reads like a PostgreSQL keyword/value connection string (keyword=value ...) but is not one "
            "(a quote left open, or a setting without '='); put a value with spaces in single quotes"
        )
    used = ", ".join(dict.fromkeys(k for k, _ in pairs))
    return (
        f"it reads as a keyword/value connection string, but none of its keywords ({used}) is libpq's "
        "(host, dbname, user, port, ...)"
    )


def refuse_ambiguous(spec: str) -> None:
    """Raises when ``spec`` (not a DSN) reads as a database address rather than a file path.

    Raises:
        InertValueError: it does; the message says why and how to name either.
    """
    problem = address_problem(spec)
    if problem is not None:
        raise InertValueError(
            f"the journal name is neither a PostgreSQL database nor a file path inert will create: {problem}. "
            "Name a PostgreSQL database as postgresql://user@host/db or 'host=... dbname=...'; a SQLite file "
            "whose name looks like this as pathlib.Path(name) or ./name"
        )
