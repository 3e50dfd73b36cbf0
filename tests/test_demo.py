"""`inert demo`: the incident diverges under eager_unsafe, not under read_eager."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from inert.cli import main
from inert.demo import demo_ok, run_demo


@pytest.fixture(scope="module")
def runs() -> list:
    return run_demo()


def test_unsafe_run_diverges_the_way_the_incident_did(runs: list) -> None:
    unsafe, _ = runs
    assert "reprots/q3" in unsafe.rows, "the misspelled resource persists"
    kinds = sorted(v.kind for v in unsafe.report.violations)
    assert kinds == ["orphan", "orphan", "stale_read"]
    stale = next(v for v in unsafe.report.violations if v.kind == "stale_read")
    assert stale.tool == "read_report"
    read = next(r for r in unsafe.report.results if r.name == "read_report")
    assert "Q2 revenue" in read.result, "C's stale answer is cited as current"
    assert unsafe.unexplained == [] and len(unsafe.divergences) == 2


def test_inert_run_matches_the_accepted_stream(runs: list) -> None:
    _, safe = runs
    assert safe.report.violations == [] and safe.divergences == []
    assert safe.rows == {"reports/q1": "Q1 revenue flat", "reports/q3": "Q3 revenue up 4%"}
    # A touches another row, so it may land at any point; C's read must come after B's delete.
    ops = [(o["op"], o["name"], o["outcome"]) for o in safe.operations if o["name"] == "reports/q2"]
    assert ops == [("DELETE", "reports/q2", "deleted"), ("SELECT", "reports/q2", "not found")]


def test_cli_exit_code_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "world.sqlite"
    assert main(["demo", "--db", str(db), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and [r["policy"] for r in out["runs"]] == ["eager_unsafe", "read_eager"]
    with sqlite3.connect(db) as con:
        assert {r for (r,) in con.execute("SELECT DISTINCT run FROM ops")} == {"eager_unsafe", "read_eager"}


def test_module_entry_point_prints_the_table() -> None:
    done = subprocess.run([sys.executable, "-m", "inert", "demo"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "operations against the database" in done.stdout and "[stale_read]" in done.stdout


class _SlowDecoding:
    """Stands in for a machine so busy that decoding is slower than the delete: the
    first verify waits until some delete has landed in the database (or, when deletes
    cannot land before decoding ends, until a bound passes). Whether the bound passes
    decides nothing: the incident must show either way."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from inert import demo

        self.landed = threading.Event()
        landed = self.landed
        delete = demo._World.delete_report

        def delete_and_say_so(world: Any, name: str, idempotency_key: str) -> Any:
            try:
                return delete(world, name, idempotency_key)
            finally:
                landed.set()

        base = demo.Orchestrator

        class SlowOrchestrator(base):  # type: ignore[misc, valid-type]
            verified = False

            def verify(self, n_accepted: int, correction: Any = None) -> Any:
                if not self.verified:
                    self.verified = True
                    landed.wait(timeout=1.0)
                return super().verify(n_accepted, correction)

        monkeypatch.setattr(demo._World, "delete_report", delete_and_say_so)
        monkeypatch.setattr(demo, "Orchestrator", SlowOrchestrator)


def test_incident_shows_when_decoding_is_slower_than_the_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    _SlowDecoding(monkeypatch)
    runs = run_demo()
    unsafe, safe = runs
    read = next(r for r in unsafe.report.results if r.name == "read_report")
    assert "Q2 revenue" in read.result, "C read Q2 before B's delete landed, however slow decoding was"
    assert sorted(v.kind for v in unsafe.report.violations) == ["orphan", "orphan", "stale_read"]
    assert demo_ok(runs) and safe.divergences == []


def _read_sees_the_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    """C's read answers from a world where Q2 is already gone, while B's call is still running:
    reconciliation still names the ordering, but no stale answer happened."""
    from inert import demo

    read = demo._World.read_report

    def read_after_the_delete(world: Any, name: str) -> Any:
        with sqlite3.connect(world.path) as db:
            db.execute("DELETE FROM resources WHERE name = ?", (name,))
        return read(world, name)

    monkeypatch.setattr(demo._World, "read_report", read_after_the_delete)


def test_verdict_comes_from_what_the_database_saw(monkeypatch: pytest.MonkeyPatch) -> None:
    _read_sees_the_delete(monkeypatch)
    runs = run_demo()
    unsafe, _ = runs
    read = next(r for r in unsafe.report.results if r.name == "read_report")
    assert read.result == "reports/q2 does not exist"
    assert not any("stale" in d for d in unsafe.divergences), "a correct answer is not a stale read"
    assert not demo_ok(runs), "the unsafe run did not show the incident, so the demo failed"


def test_cli_exits_1_and_says_why_when_the_incident_did_not_show(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _read_sees_the_delete(monkeypatch)
    assert main(["demo"]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "every divergence of the unsafe run was named" not in out
