"""Journals for the tests: fixtures for a PostgreSQL database per test, one
back end per parametrisation of the journal contract, and a TCP proxy whose
cut is a network drop.

PostgreSQL comes from INERT_TEST_POSTGRES_DSN, a superuser DSN (`.ci/run`
starts a throwaway server with `.ci/postgres.sh` and sets it). Without it the
PostgreSQL tests skip, saying how to run them; under CI (`CI` set, or
INERT_REQUIRE_POSTGRES=1, which `.ci/run` sets) they fail instead, so a CI
that lost its server cannot pass by skipping.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

import inert

ADMIN_ENV = "INERT_TEST_POSTGRES_DSN"
J = TypeVar("J")


def postgres_required() -> bool:
    return os.environ.get("INERT_REQUIRE_POSTGRES") == "1" or os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _unavailable(reason: str) -> NoReturn:
    if postgres_required():
        pytest.fail(f"PostgreSQL is required under CI and {reason}", pytrace=False)
    pytest.skip(
        f"no PostgreSQL for the journal tests: {reason} (start a throwaway server: . .ci/postgres.sh && postgres_start)"
    )


def with_database(dsn: str, dbname: str, **query: str) -> str:
    """``dsn`` pointed at another database (and with extra query parameters)."""
    parts = urllib.parse.urlsplit(dsn)
    q = dict(urllib.parse.parse_qsl(parts.query))
    q.update(query)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + dbname, urllib.parse.urlencode(q, safe="/"), ""))


@pytest.fixture(scope="session")
def postgres_admin() -> str:
    """A superuser DSN of the test server."""
    dsn = os.environ.get(ADMIN_ENV)
    if not dsn:
        _unavailable(f"{ADMIN_ENV} is not set")
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed (pip install 'inert[postgres]')")
    try:
        psycopg.connect(dsn, connect_timeout=5).close()
    except psycopg.Error as e:
        _unavailable(f"{ADMIN_ENV} does not answer: {e}")
    assert dsn is not None
    return dsn


def admin_execute(admin: str, sql: str, params: Any = None, dbname: str | None = None) -> list[tuple[Any, ...]]:
    import psycopg

    target = admin if dbname is None else with_database(admin, dbname)
    with psycopg.connect(target, autocommit=True, connect_timeout=5) as conn:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else []


@contextlib.contextmanager
def fresh_database(admin: str) -> Iterator[str]:
    """A new, empty database; dropped (with any sessions left on it) afterwards."""
    name = "inert_test_" + uuid.uuid4().hex[:12]
    admin_execute(admin, f"CREATE DATABASE {name}")
    try:
        yield with_database(admin, name)
    finally:
        admin_execute(admin, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def postgres_db(postgres_admin: str) -> Iterator[str]:
    """The DSN of a new, empty database (no inert schema)."""
    with fresh_database(postgres_admin) as dsn:
        yield dsn


@pytest.fixture
def postgres_dsn(postgres_db: str) -> str:
    """The DSN of a new database holding an inert journal's schema."""
    inert.journal.init_schema(postgres_db)
    return postgres_db


def dbname_of(dsn: str) -> str:
    return urllib.parse.urlsplit(dsn).path.lstrip("/")


def record(key: str, name: str = "f", effect: str = "write", **arguments: Any) -> inert.DispatchRecord:
    return inert.DispatchRecord(
        key, name, dict(arguments), inert.EffectClass(effect), inert.Footprint(None, None), (0, 1), False
    )


@dataclass
class Backend:
    """One journal back end of the contract suite: ``open()`` is a worker (or a
    restarted process) on the same store; ``name`` is what ``journal=`` takes."""

    kind: str
    open: Callable[..., Any]
    name: Any
    durable: bool

    def abandon(self, journal: Any) -> None:
        """The worker holding ``journal`` dies without outcomes: afterwards its keys are in doubt."""
        if self.kind == "memory":
            return
        journal.close()
        if self.kind == "postgres":  # its leases must lapse first
            deadline = time.monotonic() + 10
            while inert.recover(self.name).in_flight:
                assert time.monotonic() < deadline, "leases never lapsed"
                time.sleep(0.02)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    opened: list[Any] = []

    def track(journal: J) -> J:
        opened.append(journal)
        return journal

    if request.param == "memory":
        shared = inert.MemoryJournal()
        yield Backend("memory", lambda **_: shared, shared, durable=False)
    elif request.param == "sqlite":
        path = tmp_path / "journal.sqlite"
        yield Backend("sqlite", lambda **_: track(inert.SqliteJournal(path)), path, durable=True)
    else:
        dsn = request.getfixturevalue("postgres_dsn")

        def open_pg(**kw: Any) -> inert.PostgresJournal:
            kw.setdefault("lease_seconds", 0.3)  # an abandoned key falls in doubt quickly
            return track(inert.PostgresJournal(dsn, **kw))

        yield Backend("postgres", open_pg, dsn, durable=True)
    for journal in opened:
        journal.close()


def close(journal: Any) -> None:
    if hasattr(journal, "close"):
        journal.close()


def turn(
    journal: Any, tools: dict[str, Any], effects: dict[str, Any], blocks: list[str], turn_key: str = "t1"
) -> inert.Report:
    """One whole turn through an ``Orchestrator`` on ``journal`` (a journal or what ``journal=``
    takes): ``blocks`` drafted as one window, all accepted, the report not strict."""
    orch = inert.Orchestrator(effects, tools, turn_key=turn_key, journal=journal)
    orch.draft(blocks)
    orch.verify(len(blocks))
    return orch.finish(strict=False)


class Proxy:
    """A TCP front for the test server's unix socket. ``cut()`` drops every
    connection through it and refuses new ones: a network drop, as the worker sees it.
    ``freeze()`` stops forwarding while the connections stay open (the kernel still
    acknowledges every byte): a stopped server, or a proxy that hung. ``lag`` slows every
    message down instead: a server that is slow but answers."""

    def __init__(self, dsn: str) -> None:
        params = inert.journal.postgres_connection.psycopg_module().conninfo.conninfo_to_dict(dsn)
        self._target = os.path.join(str(params["host"]), f".s.PGSQL.{params.get('port') or 5432}")
        self._dbname = str(params["dbname"])
        self._user = str(params.get("user") or "postgres")
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._cut = False
        self._thawed = threading.Event()
        self._thawed.set()
        self.lag = 0.0  # seconds each message waits before it is passed on: a slow server that answers
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def dsn(self) -> str:
        return f"postgresql://{self._user}@127.0.0.1:{self.port}/{self._dbname}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX)
            server.connect(self._target)
            with self._lock:
                if self._cut:
                    client.close()
                    server.close()
                    return
                self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                self._thawed.wait()
                if self.lag:
                    time.sleep(self.lag)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def freeze(self) -> None:
        self._thawed.clear()

    def thaw(self) -> None:
        self._thawed.set()

    def cut(self) -> None:
        self._thawed.set()
        with self._lock:
            self._cut = True
            self._listener.close()
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
