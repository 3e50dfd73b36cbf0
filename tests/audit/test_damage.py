"""Damage from outside and use after the end: a journal edited by hand, a trace field
no writer makes, a trace that cannot be written, a secret in a malformed DSN, a batch
used after ``close()``. Each gets one clear error (exit status 2 from the CLI), never a
traceback, a hang or a leak. One regression test per fault a helper found."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import inert
from tools import block


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inert", *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("result", "["),  # no JSON
        ("result", "1" * 5000),  # an int past Python's 4300-digit limit
        ("result", "[" * 100_000 + "]" * 100_000),  # deeper than the parser recurses
        ("arguments", b"\xff\x00"),  # no UTF-8
    ],
)
def test_a_journal_damaged_by_hand_is_a_journal_error(tmp_path: Path, column: str, value: str | bytes) -> None:
    path = tmp_path / "j.sqlite"
    orch = inert.Orchestrator({"t": "write"}, {"t": lambda: "ok"}, turn_key="tk", journal=path)
    orch.draft([block("t")])
    orch.verify(1)
    orch.finish()
    table = "outcomes" if column == "result" else "intents"
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE {table} SET {column} = ?", (value,))
    db.close()
    with pytest.raises(inert.JournalError, match=f"stored {column} of ck1-.* is damaged"):
        inert.SqliteJournal(path).entries()
    done = cli("recover", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"the stored {column} of ck1-" in done.stderr and "changed outside inert" in done.stderr
    # A turn meeting the damaged key is told so, and the tool does not run again.
    ran: list[int] = []
    orch = inert.Orchestrator({"t": "write"}, {"t": lambda: ran.append(1)}, turn_key="tk", journal=path)
    orch.draft([block("t")])
    orch.verify(1)
    assert isinstance(orch.finish(strict=False).results[0].error, inert.JournalError) and ran == []


def test_a_trace_result_with_a_phase_no_writer_makes_names_its_line(tmp_path: Path) -> None:
    head = {"v": "inert.trace/2", "turn": "t", "commit_key": "k1"}
    rows = [
        {
            **head,
            "event": "dispatch",
            "t": 1.0,
            "name": "w",
            "arguments": {},
            "effect": "write",
            "span": [0, 1],
            "early": False,
        },
        {**head, "event": "result", "t": 2.0, "ok": True, "error": None, "phase": "bogus"},
    ]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = cli("audit", str(trace))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{trace}:2: a 'result' event" in done.stderr and "phase must be" in done.stderr


@pytest.mark.parametrize("dsn", ["postgresql://bob:s3cr%zzet@localhost/db", "postgresql://bob:s3cret@[::1/db"])
def test_a_malformed_dsn_never_shows_its_password(dsn: str) -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(inert.JournalError, match="not a valid PostgreSQL URI") as caught:
        inert.Orchestrator({}, {}, turn_key="k", journal=dsn)
    assert "s3cr" not in str(caught.value)
    done = cli("recover", dsn)
    assert done.returncode == 2 and "s3cr" not in done.stderr + done.stdout


def test_a_batch_used_after_close_refuses_before_anything_changes() -> None:
    """It used to draft, then fail in verify with a bare RuntimeError from the stopped
    workers, and finish() waited for ever for the call that could never run."""
    batch = inert.BatchOrchestrator({"t": "write"}, {"t": lambda: "ok"}, vocab=inert.Vocabulary([block("t")]))
    batch.add(1, "k1")
    with pytest.warns(inert.TurnAbandonedWarning):
        assert list(batch.close()) == [1]  # the close ended sequence 1's turn
    for call in (
        lambda: batch.draft([1], [[0]]),
        lambda: batch.verify([1], [1]),
        lambda: batch.finish(1),
        lambda: batch.add(2, "k2"),
    ):
        with pytest.raises(inert.StreamFinishedError, match="closed"):
            call()
    assert len(batch) == 0


def test_a_trace_that_cannot_be_written_is_said_so(tmp_path: Path) -> None:
    full = Path("/dev/full")
    if not full.exists():
        pytest.skip("no /dev/full here")
    orch = inert.Orchestrator({"t": "write"}, {"t": lambda: "ok"}, turn_key="tk", trace=full)
    orch.draft([block("t")])
    orch.verify(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = orch.finish()
    assert report.results[0].result == "ok", "the turn itself is unharmed"
    assert [w.category for w in caught] == [inert.TraceWarning]
    assert "No space left" in str(caught[0].message) and "incomplete" in str(caught[0].message)
    done = cli("demo", "--trace", str(full))
    assert done.returncode == 2 and "Traceback" not in done.stderr and "audit trail is incomplete" in done.stderr


def test_simulate_json_stays_json_when_figures_overflow(tmp_path: Path) -> None:
    """Latencies the workload check accepts (1e308 s) summed to infinity, and ``--json``
    printed ``Infinity``, which no JSON reader takes."""
    workloads = tmp_path / "w.toml"
    workloads.write_text(
        "[models.m]\nalpha = 0.5\nverify_s = 1e308\ndraft_s = 1e308\n[agents.a]\n"
        'transcript = \'\'\'<tool_call>{"name": "get", "arguments": {"key": "a"}}</tool_call>\'\'\'\n'
        '[agents.a.tools.get]\nkind = "read"\nmedian_s = 0.05\n[[workloads]]\nmodel = "m"\nagent = "a"\n'
    )
    done = cli("simulate", "--workloads", str(workloads), "--seeds", "2", "--json")
    assert done.returncode == 0, done.stderr

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is no JSON")

    assert json.loads(done.stdout, parse_constant=refuse)["summaries"]


@pytest.mark.parametrize("args", [("journal", "init"), ("recover",), ("demo", "--db")])
def test_a_fifo_for_a_database_is_refused_without_opening_it(tmp_path: Path, args: tuple[str, ...]) -> None:
    """SQLite opening a FIFO blocks until a writer comes (a hang for a user who cannot
    write it), or fails with advice about a full disk."""
    fifo = tmp_path / "db"
    try:
        os.mkfifo(fifo)
    except (AttributeError, OSError):
        pytest.skip("no FIFOs here")
    done = cli(*args, str(fifo))
    assert done.returncode == 2 and "is a FIFO" in done.stderr and "Traceback" not in done.stderr
    with pytest.raises(inert.JournalError, match="is a FIFO"):
        inert.Orchestrator({}, {}, turn_key="k", journal=fifo)
