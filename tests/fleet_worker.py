"""One worker of a fleet, for tests/journal/test_fleet.py: it runs the turn every worker
runs (the same turn key, so the same commit keys) against a shared journal,
and its tools append to one world file that all workers share: `append` (a
write) a line per call, `put` (idempotent) a line per idempotency key, as a
service that honours the key would. Every call of a tool is also logged to
WORLD.calls.

    python tests/fleet_worker.py JOURNAL WORLD WORKER

JOURNAL is a SQLite path or a postgresql:// URI. The worker prints "ready" and
starts only when a line arrives on stdin, so that the test releases every
worker at once; it prints its results as JSON at the end.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import inert

ITEMS = 8


def main(journal_spec: str, world: str, worker: str) -> None:
    rng = random.Random(worker)

    def write_line(line: str) -> None:
        fd = os.open(world, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())  # one write with O_APPEND: lines never interleave
        finally:
            os.close(fd)

    def called(name: str, item: int) -> None:
        with open(world + ".calls", "a", encoding="utf-8") as f:
            f.write(f"{name} {item} {worker}\n")

    def append(item: int) -> str:
        called("append", item)
        time.sleep(rng.random() * 0.02)
        write_line(f"append {item} {worker}")
        return f"appended {item} by {worker}"

    def put(item: int, idempotency_key: str) -> str:
        called("put", item)
        time.sleep(rng.random() * 0.02)
        with open(world + ".lock", "a") as lock:  # the service applies each key once
            fcntl.flock(lock, fcntl.LOCK_EX)
            applied = os.path.exists(world) and idempotency_key in Path(world).read_text(encoding="utf-8")
            if not applied:
                write_line(f"put {item} {worker} {idempotency_key}")
        return f"put {item} by {worker}"

    journal: Any = journal_spec
    if inert.journal.is_dsn(journal_spec):
        journal = inert.PostgresJournal(journal_spec, worker=worker, wait_seconds=60)
    effects = {
        "append": inert.ToolSpec("write", reads="item", writes="item"),
        "put": inert.ToolSpec("idempotent", reads="item", writes="item"),
    }
    calls = [
        f"<tool_call>{json.dumps({'name': 'append' if i % 2 == 0 else 'put', 'arguments': {'item': i}})}</tool_call>"
        for i in range(ITEMS)
    ]
    print("ready", flush=True)
    sys.stdin.readline()
    orch = inert.Orchestrator(
        effects, {"append": append, "put": put}, turn_key="fleet-turn", journal=journal, max_workers=4
    )
    orch.draft(calls)
    orch.verify(len(calls))
    report = orch.finish(strict=False)
    if not isinstance(journal, str):
        journal.close()
    print(json.dumps([[r.name, r.arguments["item"], r.result, error_name(r.error)] for r in report.results]))


def error_name(error: BaseException | None) -> str | None:
    """The error's type, and what caused a JournalError (``JournalError<-StaleClaimError``)."""
    if error is None:
        return None
    if isinstance(error, inert.JournalError) and error.__cause__ is not None:
        return f"{type(error).__name__}<-{type(error.__cause__).__name__}"
    return type(error).__name__


if __name__ == "__main__":
    main(*sys.argv[1:4])
