"""One SQLite file, as every part of inert opens it: by a ``file:`` URI of its absolute
path, so that a name is always the file of that name. Python's ``sqlite3.connect(name)``
takes a name beginning with ``file:`` as a URI (this SQLite is built with ``USE_URI``):
``file:x.sqlite`` then opened ``x.sqlite`` for the writers while ``recover`` read a file
called ``file:x.sqlite``, and ``file:mem?mode=memory`` was an in-memory database."""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from typing import Any

from ..errors import JournalError
from ..files import special_file

__all__ = [
    "COMPANIONS",
    "HEADER",
    "MAX_BUSY",
    "OddCompanion",
    "connect",
    "journal_error",
    "locked",
    "not_sqlite",
    "odd_companion",
    "uri",
]

HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file."""

MAX_BUSY = (2**31 - 1) / 1000
"""The longest busy timeout SQLite takes (milliseconds in a C int, about 24 days): a longer
one given is cut to it (passed on, it wrapped around to no wait at all)."""

_HEADER_SIZE = 100
"""A database file holds at least its 100-byte header (in fact a whole first page)."""


def uri(path: str | os.PathLike[str], *, mode: str | None = None, immutable: bool = False) -> str:
    """The ``file:`` URI of ``path``: absolute, and quoted from the file system's bytes
    (``os.fsencode``), so ``?``, ``#``, ``%`` and a name that is not UTF-8 stay its name."""
    query = [f"mode={mode}"] if mode else []
    if immutable:
        query.append("immutable=1")
    quoted = urllib.parse.quote(os.fsencode(_absolute(path)))
    return "file:" + quoted + ("?" + "&".join(query) if query else "")


def _absolute(path: str | os.PathLike[str]) -> str:
    """``path`` joined to the working folder, never normalised: `link/..` is the link target's
    parent, as the kernel (and SQLite) resolve it, where abspath cut it lexically to the folder
    the link sits in."""
    return os.path.join(os.getcwd(), os.fspath(path))


def connect(
    path: str | os.PathLike[str], *, mode: str | None = None, immutable: bool = False, **kwargs: Any
) -> sqlite3.Connection:
    """Opens the file ``path`` (never a URI it spells); ``kwargs`` go to ``sqlite3.connect``.

    Raises:
        sqlite3.Error: SQLite could not open it, or a file SQLite keeps beside it is a FIFO,
            a device or a socket (SQLite would block on a FIFO there for ever, deaf to Ctrl-C).
    """
    if (odd := odd_companion(path)) is not None:
        raise OddCompanion(odd)
    folder = os.path.dirname(_absolute(path))
    if not os.path.isdir(folder):
        # SQLite reads a name through a folder that is missing (`nosuch/../x`) lexically, and
        # made `x` where the kernel finds no file at all; a trailing `/` named a file too.
        raise sqlite3.OperationalError(f"unable to open database file: {folder} is no folder")
    db: sqlite3.Connection = sqlite3.connect(uri(path, mode=mode, immutable=immutable), uri=True, **kwargs)
    return db


class OddCompanion(sqlite3.OperationalError):
    """A file SQLite keeps beside a database is no regular file (``odd_companion``): its
    message says what to do."""


COMPANIONS = ("-journal", "-wal", "-shm")
"""The files SQLite keeps beside a database: its rollback journal, write-ahead log and index."""


def odd_companion(path: str | os.PathLike[str]) -> str | None:
    """What is wrong when a file SQLite keeps beside ``path`` is no regular file (a FIFO made
    there, a device linked there): SQLite opens it as one, and blocks on a FIFO for ever."""
    for suffix in COMPANIONS:
        companion = os.fsdecode(path) + suffix
        if (kind := special_file(companion)) is not None:
            return f"{companion} is {kind}, where SQLite keeps a file of the database's own: move it aside"
    return None


def not_sqlite(path: str) -> bool:
    """Whether ``path`` holds bytes but no SQLite header: SQLite takes a file shorter than
    its header for an empty database, and ``journal init`` wrote a journal over it.

    Raises:
        OSError: the file could not be read.
    """
    with open(path, "rb") as f:
        head = f.read(_HEADER_SIZE)
    return bool(head) and (len(head) < _HEADER_SIZE or not head.startswith(HEADER))


def locked(exc: BaseException) -> bool:
    """SQLite gave up waiting for a lock another connection holds (the busy timeout)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


NOT_A_DATABASE = (
    "it is not a SQLite database, or it is corrupt or truncated: move it aside and give a new path "
    "(what it held, if anything, is lost to inert)"
)
"""What to do with a file that is not a database."""


def journal_error(path: str, doing: str, exc: BaseException) -> JournalError:
    """A :class:`JournalError` for ``exc``, naming the file and what to do about it."""
    text = str(exc)
    if isinstance(exc, OddCompanion):
        return JournalError(f"journal {path}: {doing}: {text}")
    low = text.lower()
    if "not a database" in low or "malformed" in low:
        advice = NOT_A_DATABASE
    elif "readonly" in low or "read-only" in low:
        advice = _read_only_advice(path)
    elif "full" in low or "disk i/o" in low:
        advice = "the disk is full or failing: free space (or move the journal), then run `inert recover` on it"
    elif "unable to open" in low:
        advice = "check that its folder exists and that this process may write there"
    elif locked(exc):
        advice = (
            "another process holds the journal locked (a writer's transaction is open): "
            "try again when it ends, or look for a process stuck holding it"
        )
    else:
        advice = "that is all SQLite says of it: check the file, its folder and the disk"
    return JournalError(f"journal {path}: {doing}: {text}; {advice}")


def _read_only_advice(path: str) -> str:
    # A -wal or -shm left read-only (made while the journal was) keeps failing once the
    # journal itself is writable again: name it, or chmod on the journal seems to do nothing.
    stuck = [p for p in (path + "-wal", path + "-shm") if os.path.exists(p) and not os.access(p, os.W_OK)]
    if stuck:
        return f"{' and '.join(stuck)} beside it (left while the file was read-only) must be writable too"
    return (
        f"the file (or its folder) is read-only, and a journal writes an intent before every call: "
        f"make it writable, or read it with `inert recover {path}`"
    )
