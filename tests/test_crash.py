"""Crash safety: SIGKILL a dispatching process at random points, many times,
then recover and restart. Every intent is completed or listed in doubt, no
effect happened without a journaled intent, and a restart never repeats one.
INERT_CRASH_TRIALS sets the number of trials (default 30)."""

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

WORKER = Path(__file__).resolve().parent / "crash_worker.py"
TRIALS = int(os.environ.get("INERT_CRASH_TRIALS", "30"))
ITEMS = 8

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")


def start(journal: Path, world: Path, seed: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), str(journal), str(world), str(seed)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def world_calls(world: Path) -> list[tuple[str, int]]:
    if not world.exists():
        return []
    return [(line.split()[0], int(line.split()[1])) for line in world.read_text().splitlines() if line.strip()]


def entry_call(e: inert.JournalEntry) -> tuple[str, int]:
    return e.tool, int(e.arguments["item"])


def test_sigkill_at_random_points_then_recover_and_restart(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    done = start(tmp_path / "warm.sqlite", tmp_path / "warm.txt", 0)
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    duration = time.perf_counter() - t0
    rng = random.Random(1234)
    stats = {"killed_mid_turn": 0, "in_doubt_writes": 0, "in_doubt_idempotent": 0, "intents_at_kill": 0}
    for trial in range(TRIALS):
        journal, world = tmp_path / f"j{trial}.sqlite", tmp_path / f"w{trial}.txt"
        proc = start(journal, world, trial)
        time.sleep(rng.uniform(0.05, duration * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        stats["killed_mid_turn"] += proc.returncode == -signal.SIGKILL

        effects = world_calls(world)
        if not journal.exists():
            assert effects == [], "an effect happened before any intent was journaled"
            continue
        rec = inert.recover(journal)
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
        assert {entry_call(e) for e in final.in_doubt} == doubt_writes, "only the writes in doubt at the crash stay in doubt"
        results = json.loads(out)["results"]
        assert [tuple(r[:2]) for r in results] == [("append" if i % 2 == 0 else "put", i) for i in range(ITEMS)]
        assert all(r[2] in (None, "InDoubtError") for r in results)
    print(f"\ncrash test: {TRIALS} trials, {stats}")
    assert stats["killed_mid_turn"] >= TRIALS // 2, "most kills must land mid-turn to test anything"
