"""A client-side bound on the PostgreSQL journal's statements.

The server's ``statement_timeout`` ends a statement the server runs, and TCP
keepalives end a connection whose peer vanished from the network. Neither ends
a read from a server that stopped answering while its kernel still acknowledges
the bytes: a stopped backend, or a proxy before it (pgbouncer, a load balancer)
that stopped forwarding. psycopg then waits for the reply for ever, and with it
``finish()`` and ``close()``. The watchdog shuts such a connection's socket down
once a statement on it outlives its bound, so the wait ends in an error (the
call is in doubt, or its tool not run, as for any journal failure).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import JournalError
from .postgres_connection import redact

if TYPE_CHECKING:
    import psycopg

__all__ = ["StatementWatchdog", "bounded", "statement_bound", "unanswered"]

_IDLE = 30.0
"""Seconds the watchdog's thread waits with nothing to watch before it ends (the next
statement starts another): a journal dropped without ``close()`` leaves no thread."""


class StatementWatchdog:
    """Severs a connection whose statement outlives ``bound`` seconds.

    Args:
        bound: seconds a statement may take, past which the server is taken to be frozen
            (well past the server's own statement timeout, which ends it first otherwise).
        name: the thread's name.
    """

    def __init__(self, bound: float, name: str) -> None:
        self.bound = bound
        self._name = name
        self._cond = threading.Condition()
        self._watched: dict[int, tuple[float, psycopg.Connection[Any]]] = {}
        self._severed: set[int] = set()  # tokens whose connection was shut down
        self._next = 0
        self._thread: threading.Thread | None = None
        self._closed = False

    @contextlib.contextmanager
    def watching(self, conn: psycopg.Connection[Any], *, per_statement: bool = False) -> Iterator[_Watch]:
        """Bounds what runs in the block on ``conn``; the watch says whether it was severed.
        ``per_statement``: the bound starts again at each statement the block runs (a
        schema check or a recovery read runs many, each answered within the server's
        timeout), instead of covering the whole block (a claim, of up to three)."""
        with self._cond:
            token = self._next
            self._next += 1
            self._watched[token] = (time.monotonic() + self.bound, conn)
            if self._thread is None:  # after close() too: a statement already begun is bounded
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif len(self._watched) == 1:
                # Woken only from its idle wait: every bound is the same length, so a statement
                # begun later is due later than the one the thread waits for.
                self._cond.notify()
        watch = _Watch(self.bound)
        factory = conn.cursor_factory
        if per_statement:
            conn.cursor_factory = _renewing(factory, lambda: self._renew(token))
        try:
            yield watch
        finally:
            conn.cursor_factory = factory
            with self._cond:
                self._watched.pop(token, None)
                watch.severed = token in self._severed
                self._severed.discard(token)

    def _renew(self, token: int) -> None:
        """A statement of ``token``'s block begins: its bound starts again. The thread wakes at
        the earlier deadline it waits for, finds this one later, and waits again."""
        with self._cond:
            if token in self._watched:
                self._watched[token] = (time.monotonic() + self.bound, self._watched[token][1])

    def close(self) -> None:
        """Stops watching once the statements running now are over (or cut off)."""
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed or self._watched:
                now = time.monotonic()
                for token, (deadline, conn) in list(self._watched.items()):
                    if deadline <= now:
                        del self._watched[token]
                        self._severed.add(token)
                        _sever(conn)
                if self._watched:
                    self._cond.wait(min(deadline for deadline, _ in self._watched.values()) - now)
                elif not self._cond.wait(_IDLE) and not self._watched:
                    break
            self._thread = None


def statement_bound(statement_timeout: float) -> float:
    """A watchdog's bound for statements the server ends after ``statement_timeout``: past
    three of them, since a claim runs up to three in one watched block, and 2 s of slack for
    the network (a block watched ``per_statement`` gets it for each statement)."""
    return 3 * statement_timeout + 2


@contextlib.contextmanager
def bounded(conn: psycopg.Connection[Any], statement_timeout: float, name: str) -> Iterator[_Watch]:
    """``watching(conn)`` under a watchdog of its own, for a connection outside a journal's
    pool (the schema check at open, ``inert recover``, ``inert journal init``)."""
    watchdog = StatementWatchdog(statement_bound(statement_timeout), name)
    try:
        with watchdog.watching(conn, per_statement=True) as watch:
            yield watch
    finally:
        watchdog.close()


def unanswered(dsn: str, doing: str, bound: float) -> JournalError:
    """The error of a statement the watchdog cut off after ``bound`` seconds."""
    return JournalError(
        f"PostgreSQL journal {redact(dsn)}: {doing}: the database did not answer within {bound:g} s, so the "
        "connection was dropped; a server (or a proxy before it) that stopped answering while its connections "
        "stay open?"
    )


def _renewing(factory: Any, renew: Callable[[], None]) -> Any:
    """A cursor class over ``factory`` whose every ``execute`` first calls ``renew``
    (``Connection.execute`` runs through the connection's cursor factory too)."""

    class Renewing(factory):  # type: ignore[misc]
        def execute(self, *args: Any, **kwargs: Any) -> Any:
            renew()
            return super().execute(*args, **kwargs)

    return Renewing


class _Watch:
    """One bounded block of ``bound`` seconds: ``severed`` once it is over, if the watchdog cut it short."""

    def __init__(self, bound: float) -> None:
        self.bound = bound
        self.severed = False


def _sever(conn: psycopg.Connection[Any]) -> None:
    """Shuts ``conn``'s socket down, both ways: its pending read ends in an error (the
    socket itself stays open until psycopg closes the broken connection)."""
    with contextlib.suppress(Exception):
        fd = conn.pgconn.socket
        dup = socket.socket(fileno=os.dup(fd))
        try:
            dup.shutdown(socket.SHUT_RDWR)
        finally:
            dup.close()
