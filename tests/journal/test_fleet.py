"""A fleet on one journal: worker processes released at once on the same turn
(the same commit keys) through real Orchestrators. Every effect happens once.
On PostgreSQL every tool also runs once and every worker gets every call's one
outcome (it waited for the holder); on SQLite, which has no leases, a key met
while another process runs it is in doubt instead: a write is not run, an
idempotent call is run again with its key (and only that run's outcome is recorded)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import inert

WORKER = Path(__file__).resolve().parents[1] / "fleet_worker.py"
WORKERS = 4
ITEMS = 8


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_workers_racing_on_the_same_keys_run_each_effect_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    journal = str(tmp_path / "j.sqlite") if kind == "sqlite" else request.getfixturevalue("postgres_dsn")
    if kind == "sqlite":
        inert.SqliteJournal(journal).close()
    world = tmp_path / "world.txt"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), journal, str(world), f"w{i}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(WORKERS)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:  # released together: they race for every key
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (_out, err) in zip(procs, outs, strict=False):
        assert p.returncode == 0, err
    results = [json.loads(out) for out, _ in outs]

    lines = world.read_text().splitlines()
    effects = Counter(" ".join(line.split()[:2]) for line in lines)
    expected = {f"{'append' if i % 2 == 0 else 'put'} {i}" for i in range(ITEMS)}
    assert set(effects) == expected and set(effects.values()) == {1}, f"effects: {effects}"
    calls = Counter(" ".join(line.split()[:2]) for line in Path(f"{world}.calls").read_text().splitlines())
    assert all(calls[f"append {i}"] == 1 for i in range(0, ITEMS, 2)), f"a write ran twice: {calls}"
    if kind == "postgres":
        assert set(calls.values()) == {1}, f"a tool ran twice: {calls}"
    who = {" ".join(line.split()[:2]): line.split()[2] for line in lines}
    rec = inert.recover(journal)
    assert len(rec.completed) == ITEMS and rec.in_doubt == [] and rec.in_flight == []
    for worker_results in results:
        assert [(name, item) for name, item, _, _ in worker_results] == [
            ("append" if i % 2 == 0 else "put", i) for i in range(ITEMS)
        ]
        for name, item, result, error in worker_results:
            if kind == "postgres":  # every worker gets the one outcome, whoever ran it
                assert (
                    error is None
                    and result == f"{'appended' if name == 'append' else 'put'} {item} by {who[f'{name} {item}']}"
                )
            elif name == "append":  # no leases: a write another process is running reads as in doubt
                assert error in (None, "InDoubtError"), error
            else:  # and an idempotent call is run again, with its key, which the service honours; the
                # process that ran it again took the key's claim, so the first one's late outcome is
                # not recorded over its own (issue 27, item 4), and the first one says so (not in doubt)
                assert error in (None, "StaleClaimError"), error
