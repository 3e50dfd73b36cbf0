"""`inert demo`: the incident diverges under eager_unsafe, not under read_eager."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from inert.cli import main
from inert.demo import run_demo


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
    assert [o["op"] for o in safe.operations][-1] == "SELECT"
    assert safe.operations[-1]["outcome"] == "not found"


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
