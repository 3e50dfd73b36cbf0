"""A process that runs one turn against a journal and a world file, for the
crash test (tests/journal/test_crash.py), which SIGKILLs it at random points.

    python tests/crash_worker.py JOURNAL WORLD SEED [GATE]

JOURNAL is a SQLite path, or a postgresql:// URI (then with a half-second
lease, so that a killed worker's keys fall in doubt quickly).

`append` is a write, `put` is idempotent (it skips a key it already applied);
both append a line to WORLD, fsynced, between random sleeps.

GATE (an integer, 2 * item + 0 before / 1 after its effect) holds that call
there until a line (or the end) arrives on stdin: the test leaves the gate
shut, so that the turn cannot finish before its kill, however slow or fast
the machine runs; the kill still lands wherever the rest of the turn is.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

import inert

ITEMS = 8


def transcript() -> str:
    calls = []
    for i in range(ITEMS):
        name = "append" if i % 2 == 0 else "put"
        calls.append(f"<tool_call>{json.dumps({'name': name, 'arguments': {'item': i}})}</tool_call>")
    return "Doing the work.\n" + "\n".join(calls)


def main(journal: str, world: str, seed: int, gate: int) -> None:
    rng = random.Random(seed)

    def hold(item: int, after: bool) -> None:
        if gate == 2 * item + after:
            sys.stdin.readline()

    def write_line(line: str) -> None:
        with open(world, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def append(item: int) -> str:
        time.sleep(rng.random() * 0.01)
        hold(item, after=False)
        write_line(f"append {item}")
        hold(item, after=True)
        time.sleep(rng.random() * 0.01)
        return f"appended {item}"

    def put(item: int, idempotency_key: str) -> str:
        time.sleep(rng.random() * 0.01)
        with open(world, encoding="utf-8") if os.path.exists(world) else open(os.devnull) as f:
            if any(idempotency_key in line for line in f):
                return f"put {item} (already)"
        hold(item, after=False)
        write_line(f"put {item} {idempotency_key}")
        hold(item, after=True)
        time.sleep(rng.random() * 0.01)
        return f"put {item}"

    effects = {
        "append": inert.ToolSpec("write", reads="item", writes="item"),
        "put": inert.ToolSpec("idempotent", reads="item", writes="item"),
    }
    print("turn", flush=True)  # the test times its kill from here: the turn, not the interpreter's start
    t0 = time.perf_counter()
    shared = inert.PostgresJournal(journal, lease_seconds=0.5) if inert.journal.is_dsn(journal) else None
    orch = inert.Orchestrator(
        effects, {"append": append, "put": put}, turn_key="crash-turn", journal=shared or journal, max_workers=4
    )
    data = transcript().encode()
    pieces = [data[i : i + 7] for i in range(0, len(data), 7)]
    for i in range(0, len(pieces), 8):
        orch.draft(pieces[i : i + 8])
        orch.verify(len(pieces[i : i + 8]))
        time.sleep(rng.random() * 0.003)
    report = orch.finish(strict=False)
    if shared is not None:
        shared.close()
    results = [
        [r.name, r.arguments["item"], None if r.error is None else type(r.error).__name__] for r in report.results
    ]
    print(json.dumps({"elapsed": time.perf_counter() - t0, "results": results}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else -1)
