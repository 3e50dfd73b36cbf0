"""`inert demo`: the incident diverges under eager_unsafe, not under read_eager, nor under
read_eager with A a two-phase create (its prepare on the draft, its commit after acceptance)."""

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
from inert.demo import SLIP, DemoRun, demo_ok, run_demo, run_policy, two_phase_ok


@pytest.fixture(scope="module")
def runs() -> list[DemoRun]:
    return run_demo()


def test_unsafe_run_diverges_the_way_the_incident_did(runs: list[DemoRun]) -> None:
    unsafe = runs[0]
    assert "reprots/q3" in unsafe.rows, "the misspelled resource persists"
    kinds = sorted(v.kind for v in unsafe.report.violations)
    assert kinds == ["orphan", "orphan", "stale_read"]
    stale = next(v for v in unsafe.report.violations if v.kind == "stale_read")
    assert stale.tool == "read_report"
    read = next(r for r in unsafe.report.results if r.name == "read_report")
    assert "Q2 revenue" in read.result, "C's stale answer is cited as current"
    assert unsafe.unexplained == [] and len(unsafe.divergences) == 2


def test_inert_run_matches_the_accepted_stream(runs: list[DemoRun]) -> None:
    safe = runs[1]
    assert safe.report.violations == [] and safe.divergences == []
    assert safe.rows == {"reports/q1": "Q1 revenue flat", "reports/q3": "Q3 revenue up 4%"}
    # A touches another row, so it may land at any point; C's read must come after B's delete.
    ops = [(o["op"], o["name"], o["outcome"]) for o in safe.operations if o["name"] == "reports/q2"]
    assert ops == [("DELETE", "reports/q2", "deleted"), ("SELECT", "reports/q2", "not found")]


def test_cli_exit_code_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "world.sqlite"
    assert main(["demo", "--db", str(db), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and [(r["policy"], r["two_phase"]) for r in out["runs"]] == [
        ("eager_unsafe", False),
        ("read_eager", False),
        ("read_eager", True),
    ]
    assert out["runs"][2]["phase_problems"] == []
    with sqlite3.connect(db) as con:
        runs = {r for (r,) in con.execute("SELECT DISTINCT run FROM ops")}
    assert runs == {"eager_unsafe", "read_eager", "read_eager+two_phase"}


def test_module_entry_point_prints_the_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "inert", "demo"], capture_output=True, text=True, timeout=60, check=False
    )
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

        base = demo.Orchestrator  # type: ignore[attr-defined]  # demo's own name (not exported), which is patched

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
    unsafe, safe, staged = runs
    read = next(r for r in unsafe.report.results if r.name == "read_report")
    assert "Q2 revenue" in read.result, "C read Q2 before B's delete landed, however slow decoding was"
    assert two_phase_ok(staged)
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
    unsafe = runs[0]
    read = next(r for r in unsafe.report.results if r.name == "read_report")
    assert read.result == "reports/q2 does not exist"
    assert not any("stale" in d for d in unsafe.divergences), "a correct answer is not a stale read"
    assert not demo_ok(runs), "the unsafe run did not show the incident, so the demo failed"


def test_cli_exits_1_and_says_why_when_the_incident_did_not_show(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _read_sees_the_delete(monkeypatch)
    assert main(["demo"]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "every divergence of the unsafe run was named" not in out


# -- A as a two-phase create --

TWO_PHASE_OPS = [
    ("PREPARE", SLIP),
    ("LOOK", SLIP),
    ("ABORT", SLIP),
    ("PREPARE", "reports/q3"),
    ("ACCEPT", "reports/q3"),
    ("COMMIT", "reports/q3"),
    ("DELETE", "reports/q2"),
    ("SELECT", "reports/q2"),
]


def test_two_phase_create_prepares_on_the_draft_and_commits_only_the_accepted_name(runs: list[DemoRun]) -> None:
    staged = runs[2]
    assert (staged.policy, staged.two_phase) == ("read_eager", True)
    assert [(o["op"], o["name"]) for o in staged.operations] == TWO_PHASE_OPS, (
        "A's prepare ran on the draft, the draft's name was aborted, A committed after the verifier accepted it"
    )
    look = next(o for o in staged.operations if o["op"] == "LOOK")
    assert look["outcome"].startswith("not in resources"), "another connection never saw the draft's name"
    assert staged.rows == {"reports/q1": "Q1 revenue flat", "reports/q3": "Q3 revenue up 4%"}
    assert staged.report.violations == [] and staged.divergences == [] and staged.phase_problems == []
    create = next(c for c in staged.report.results if c.name == "create_report")
    assert create.arguments["name"] == "reports/q3" and create.early, "its prepare ran before its block was accepted"
    (aborted,) = staged.report.discarded
    assert (aborted.name, aborted.arguments["name"]) == ("create_report", SLIP)
    assert two_phase_ok(staged) and demo_ok(runs)


def test_two_phase_run_reads_the_same_every_time(tmp_path: Path) -> None:
    """Ordered by events, not sleeps: the database's log of the two-phase run never changes."""
    for i in range(5):
        run = run_policy("read_eager", tmp_path / f"w{i}.sqlite", two_phase=True)
        assert [(o["op"], o["name"]) for o in run.operations] == TWO_PHASE_OPS
        assert two_phase_ok(run)


def test_two_phase_section_and_verdict_in_the_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "read_eager with A a two-phase create" in out
    assert "A's phases: 'reprots/q3' prepared on the draft, never in resources, aborted" in out
    assert "the draft's name never reached the database" in out


def _leak_the_draft_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A two-phase create whose abort makes the staged report visible, as a commit would."""
    from inert import demo

    def abort_by_committing(tool: Any, staged: Any) -> None:
        tool.commit(staged, idempotency_key="leaked")

    monkeypatch.setattr(demo._StagedCreate, "abort", abort_by_committing)


def _commit_on_close(monkeypatch: pytest.MonkeyPatch) -> None:
    """A runtime that takes every two-phase call as accepted from the start: it commits as soon
    as its prepare returns, before the verifier has judged its block (and commits the draft's
    name). The decode loop waits for each commit before it looks, so the order is fixed."""
    from inert import demo
    from inert.runtime import CallRun, Fate, threads  # threads.CallRun is this class, imported, not exported

    class AcceptedFromTheStart(CallRun):
        def __init__(self, dispatch: Any, invocation: Any) -> None:
            super().__init__(dispatch, invocation)
            if dispatch.two_phase:
                self.fate = Fate.CONFIRMED

    wait = demo._Phases.wait

    def wait_for_the_commit(phases: Any, name: str, *which: str) -> bool:
        return wait(phases, name, *(("commit", "abort") if which == ("prepare",) else which))

    monkeypatch.setattr(threads, "CallRun", AcceptedFromTheStart)
    monkeypatch.setattr(demo._Phases, "wait", wait_for_the_commit)


@pytest.mark.parametrize("fault", [_leak_the_draft_name, _commit_on_close])
def test_the_verdict_fails_if_the_draft_name_leaks_or_a_commit_precedes_acceptance(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: Any
) -> None:
    fault(monkeypatch)
    staged = run_policy("read_eager", tmp_path / "w.sqlite", two_phase=True)
    assert not two_phase_ok(staged)
    assert any(SLIP in p and "committed" in p for p in staged.phase_problems), staged.phase_problems
    if fault is _commit_on_close:
        assert any("before the verifier accepted" in p for p in staged.phase_problems), staged.phase_problems
    assert main(["demo"]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "the two-phase run went wrong" in out


@pytest.mark.parametrize("name", ["file:world.sqlite", "file:world.sqlite?mode=memory", "file:w%41#x"])
def test_a_db_path_that_reads_as_a_uri_is_the_file_of_that_name(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by an attack: the demo opened its database with ``sqlite3.connect(path)``, which
    takes a name beginning with ``file:`` for a URI (``file:x?mode=memory`` was a database in
    memory, ``file:world.sqlite`` wrote ``world.sqlite``); it now opens files as the journal does."""
    monkeypatch.chdir(tmp_path)
    assert demo_ok(run_demo(name))
    assert sorted(p.name for p in tmp_path.iterdir()) == [name], "the file of that name, and nothing else"
    with sqlite3.connect(tmp_path / name) as con:  # a path with a folder in it: never a URI
        runs = {r for (r,) in con.execute("SELECT DISTINCT run FROM ops")}
    con.close()
    assert runs == {"eager_unsafe", "read_eager", "read_eager+two_phase"}
