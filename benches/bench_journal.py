"""What the durable journals cost: the same turn of 20 writes with the
in-memory journal, SQLite (WAL, synchronous=FULL) and PostgreSQL, whose
difference is the latency each adds per dispatched write; one intent +
outcome pair on each journal alone; and intents + outcomes per second for 1
and 8 workers (threads, each with its own journal: its own connection)
sharing one SQLite file or one PostgreSQL database.

The PostgreSQL rows need INERT_TEST_POSTGRES_DSN (a role that may create
databases; `. .ci/postgres.sh && INERT_PG_FSYNC=on postgres_start` starts a
local one with fsync on) and skip without it. The summary says whether the
server had fsync on: figures without it are not durable ones.
Run: pytest benches/bench_journal.py --benchmark-only
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import threading
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import inert
from conftest import JOURNAL_NOTES, THROUGHPUT, record

WRITES = 20
BLOCKS = [f"<tool_call>{json.dumps({'name': 'put', 'arguments': {'i': i}})}</tool_call>" for i in range(WRITES)]
PAIRS_PER_WORKER = {"sqlite": 60, "postgres": 150}
_turns = itertools.count()
_keys = itertools.count()


@pytest.fixture(scope="module")
def pg_dsn() -> Iterator[str]:
    """A fresh database holding a journal schema, dropped afterwards."""
    admin = os.environ.get("INERT_TEST_POSTGRES_DSN")
    if not admin:
        pytest.skip("PostgreSQL rows: set INERT_TEST_POSTGRES_DSN (. .ci/postgres.sh && postgres_start)")
    try:
        import psycopg
    except ImportError:
        pytest.skip("PostgreSQL rows: pip install 'inert[postgres]'")
    name = "inert_bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
        settings = {k: conn.execute(f"SHOW {k}").fetchone()[0] for k in ("fsync", "synchronous_commit")}  # type: ignore[index]
    JOURNAL_NOTES["postgres"] = f"PostgreSQL {', '.join(f'{k}={v}' for k, v in settings.items())}"
    parts = urllib.parse.urlsplit(admin)
    dsn = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))
    inert.journal.init_schema(dsn)
    yield dsn
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def journal_of(kind: str, tmp: Path, request: pytest.FixtureRequest) -> Any:
    if kind == "memory":
        return inert.MemoryJournal()
    if kind == "sqlite":
        return inert.SqliteJournal(tmp / "j.sqlite")
    return inert.PostgresJournal(request.getfixturevalue("pg_dsn"))


def pair(journal: Any, key: str) -> None:
    r = inert.DispatchRecord(key, "put", {"i": 1}, inert.EffectClass.WRITE, inert.Footprint(None, None), (0, 1), False)
    journal.begin(r, "t")
    journal.complete(dataclasses.replace(r, result=1), "ok")


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_turn_of_writes(benchmark: Any, kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    journal = journal_of(kind, tmp_path, request)
    effects = {"put": inert.ToolSpec("write", reads="i", writes="i")}

    def turn() -> None:
        orch = inert.Orchestrator(effects, {"put": lambda i: i}, turn_key=f"t{next(_turns)}", journal=journal)
        orch.draft(BLOCKS)
        orch.verify(WRITES)
        orch.finish()

    benchmark.group = "journal: a turn of 20 writes"
    benchmark.pedantic(turn, rounds=15, iterations=1, warmup_rounds=1)
    record(benchmark, f"journal_turn_{kind}", per=WRITES)
    if hasattr(journal, "close"):
        journal.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_intent_and_outcome(benchmark: Any, kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    journal = journal_of(kind, tmp_path, request)
    benchmark.group = "journal: one intent + outcome"
    benchmark.pedantic(lambda: pair(journal, f"ck1-{next(_keys)}"), rounds=200, iterations=1, warmup_rounds=5)
    record(benchmark, f"journal_pair_{kind}")
    if hasattr(journal, "close"):
        journal.close()


@pytest.mark.parametrize("workers", [1, 8])
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_pairs_per_second(
    benchmark: Any, kind: str, workers: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``workers`` threads, each with its own journal on one store, each
    journaling ``PAIRS_PER_WORKER`` intent + outcome pairs on its own keys."""
    journals = [journal_of(kind, tmp_path, request) for _ in range(workers)]
    n = PAIRS_PER_WORKER[kind]

    def work(journal: Any, start: threading.Barrier) -> None:
        start.wait()
        for _ in range(n):
            pair(journal, f"ck1-{next(_keys)}")

    def round_() -> None:
        start = threading.Barrier(workers)
        threads = [threading.Thread(target=work, args=(j, start)) for j in journals]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    benchmark.group = f"journal: intents + outcomes, {kind}"
    benchmark.pedantic(round_, rounds=3, iterations=1, warmup_rounds=1)
    THROUGHPUT[(kind, workers)] = workers * n / benchmark.stats.stats.median
    for j in journals:
        j.close()
