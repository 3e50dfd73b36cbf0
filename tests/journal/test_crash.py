"""Crash safety: SIGKILL a dispatching process at random points, many times,
then recover and restart, on a SQLite journal and on PostgreSQL. Every intent
is completed or listed in doubt (on PostgreSQL once the killed worker's
leases lapse: until then they are in flight), no effect happened without a
journaled intent, and a restart never repeats one. INERT_CRASH_TRIALS sets
the number of trials (default 30; a third of them on PostgreSQL)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import inert
from journals import admin_execute, dbname_of

WORKER = Path(__file__).resolve().parents[1] / "crash_worker.py"
TRIALS = int(os.environ.get("INERT_CRASH_TRIALS", "30"))
ITEMS = 8

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")


def start(journal: Path | str, world: Path, seed: int, gate: int = -1) -> subprocess.Popen[str]:
    """A worker; with a gate, one call waits there for stdin (see crash_worker.py)."""
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(journal), str(world), str(seed), str(gate)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def world_calls(world: Path) -> list[tuple[str, int]]:
    if not world.exists():
        return []
    return [(line.split()[0], int(line.split()[1])) for line in world.read_text().splitlines() if line.strip()]


def entry_call(e: inert.JournalEntry) -> tuple[str, int]:
    return e.tool, int(e.arguments["item"])


class Store:
    """Where the trials' journals live: a SQLite file per trial, or one PostgreSQL
    database emptied before each trial."""

    def __init__(self, kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.kind, self.tmp_path = kind, tmp_path
        self.dsn = request.getfixturevalue("postgres_dsn") if kind == "postgres" else ""
        self.admin = request.getfixturevalue("postgres_admin") if kind == "postgres" else ""

    def fresh(self, name: str) -> Path | str:
        if self.kind == "sqlite":
            return self.tmp_path / f"{name}.sqlite"
        admin_execute(self.admin, "TRUNCATE inert_journal", dbname=dbname_of(self.dsn))
        return self.dsn

    def holds_intents(self, journal: Path | str) -> bool:
        if isinstance(journal, Path):
            return journal.exists()
        found = inert.recover(journal)
        return bool(found.in_doubt + found.completed + found.in_flight)

    def settle(self, journal: Path | str) -> None:
        """After the kill: the dead worker's leases lapse, its keys fall in doubt."""
        if isinstance(journal, str):
            deadline = time.monotonic() + 10
            while inert.recover(journal).in_flight:
                assert time.monotonic() < deadline, "a killed worker's leases never lapsed"
                time.sleep(0.02)


@pytest.mark.parametrize("kind, trials", [("sqlite", TRIALS), ("postgres", max(1, TRIALS // 3))])
def test_sigkill_at_random_points_then_recover_and_restart(
    kind: str, trials: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = Store(kind, tmp_path, request)
    done = start(store.fresh("warm"), tmp_path / "warm.txt", 0)
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    duration = json.loads(out.splitlines()[-1])["elapsed"]
    rng = random.Random(1234)
    stats = {"killed_mid_turn": 0, "in_doubt_writes": 0, "in_doubt_idempotent": 0, "intents_at_kill": 0}
    for trial in range(trials):
        journal, world = store.fresh(f"j{trial}"), tmp_path / f"w{trial}.txt"
        # The gate keeps the turn from finishing, so the kill lands mid-turn
        # however the machine's speed differs from the warm run's.
        proc = start(journal, world, trial, gate=rng.randrange(2 * ITEMS))
        assert proc.stdout is not None and proc.stdout.readline() == "turn\n"
        time.sleep(rng.uniform(0, duration * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        stats["killed_mid_turn"] += proc.returncode == -signal.SIGKILL

        effects = world_calls(world)
        if not store.holds_intents(journal):
            assert effects == [], "an effect happened before any intent was journaled"
            continue
        store.settle(journal)
        rec = inert.recover(journal)
        assert rec.in_flight == []
        journaled = [entry_call(e) for e in rec.in_doubt + rec.completed]
        stats["intents_at_kill"] += len(journaled)
        assert len(journaled) == len(set(journaled)), "one intent per call"
        for call in effects:
            assert call in journaled, f"trial {trial}: effect {call} has no journaled intent"
        for e in rec.completed:
            assert e.status == "ok" and entry_call(e) in effects, f"trial {trial}: {e} completed without its effect"
        doubt_writes = {entry_call(e) for e in rec.in_doubt if e.effect == "write"}
        stats["in_doubt_writes"] += len(doubt_writes)
        stats["in_doubt_idempotent"] += sum(e.effect == "idempotent" for e in rec.in_doubt)

        again = start(journal, world, trial + 1000)
        out, err = again.communicate(timeout=60)
        assert again.returncode == 0, err
        after = world_calls(world)
        for item in range(ITEMS):
            call = ("append" if item % 2 == 0 else "put", item)
            n = after.count(call)
            if call in doubt_writes:
                assert n <= 1, f"trial {trial}: in-doubt write {call} ran again"
            else:
                assert n == 1, f"trial {trial}: {call} happened {n} times after restart"
        final = inert.recover(journal)
        assert {entry_call(e) for e in final.in_doubt} == doubt_writes, (
            "only the writes in doubt at the crash stay in doubt"
        )
        results = json.loads(out.splitlines()[-1])["results"]
        assert [tuple(r[:2]) for r in results] == [("append" if i % 2 == 0 else "put", i) for i in range(ITEMS)]
        assert all(r[2] in (None, "InDoubtError") for r in results)
    print(f"\ncrash test ({kind}): {trials} trials, {stats}")
    assert stats["killed_mid_turn"] == trials, "every kill lands mid-turn: the gate holds each turn open"
