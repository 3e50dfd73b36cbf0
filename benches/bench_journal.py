"""What the durable journal costs per dispatched write: the same turn of 20
writes with the in-memory journal and with SQLite (WAL, synchronous=FULL),
and one intent + outcome pair on each journal alone.
Run: pytest benches/bench_journal.py --benchmark-only
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import inert
from conftest import record

WRITES = 20
BLOCKS = [f'<tool_call>{json.dumps({"name": "put", "arguments": {"i": i}})}</tool_call>' for i in range(WRITES)]
_turns = itertools.count()


def journal_of(kind: str, tmp: Path) -> Any:
    return inert.MemoryJournal() if kind == "memory" else inert.SqliteJournal(tmp / "j.sqlite")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_turn_of_writes(benchmark: Any, kind: str, tmp_path: Path) -> None:
    journal = journal_of(kind, tmp_path)
    effects = {"put": inert.ToolSpec("write", reads="i", writes="i")}

    def turn() -> None:
        orch = inert.Orchestrator(effects, {"put": lambda i: i}, turn_key=f"t{next(_turns)}", journal=journal)
        orch.draft(BLOCKS)
        orch.verify(WRITES)
        orch.finish()

    benchmark.group = "journal: a turn of 20 writes"
    benchmark.pedantic(turn, rounds=15, iterations=1, warmup_rounds=1)
    record(benchmark, f"journal_turn_{kind}", per=WRITES)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_intent_and_outcome(benchmark: Any, kind: str, tmp_path: Path) -> None:
    journal = journal_of(kind, tmp_path)
    counter = itertools.count()

    def one() -> None:
        r = inert.DispatchRecord(f"ck1-{next(counter)}", "put", {"i": 1}, inert.EffectClass.WRITE,
                                 inert.Footprint(None, None), (0, 1), False)
        journal.begin(r, "t")
        journal.complete(r, "ok")

    benchmark.group = "journal: one intent + outcome"
    benchmark.pedantic(one, rounds=200, iterations=1, warmup_rounds=5)
    record(benchmark, f"journal_pair_{kind}")
