"""Paths the library refuses before it touches them, found by a helper after the CLI's were
fixed: ``EffectTable.from_toml`` on a FIFO no program writes, and ``Orchestrator(trace=)``
on a FIFO no program reads, waited for ever; ``trace=`` appended its lines to any existing
file, a SQLite journal included. Each runs in a subprocess, so a regression that waits for
ever fails at the timeout instead of hanging the suite."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import inert

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


def _in_subprocess(code: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60, check=False
    )


@needs_fifo
def test_an_effect_table_from_a_fifo_no_program_writes_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "effects.toml"
    os.mkfifo(fifo)
    done = _in_subprocess(
        "import sys, inert\n"
        "try:\n    inert.EffectTable.from_toml(sys.argv[1])\n"
        "except inert.EffectTableError as e:\n    print(e)",
        fifo,
    )
    assert done.returncode == 0, done.stderr
    assert "is a FIFO that no program is writing to" in done.stdout


@needs_fifo
def test_a_trace_to_a_fifo_no_program_reads_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    done = _in_subprocess(
        "import sys, inert\n"
        "try:\n    inert.Orchestrator({'t': 'read_only'}, {'t': lambda: 1}, turn_key='k', trace=sys.argv[1])\n"
        "except inert.InertValueError as e:\n    print(e)",
        fifo,
    )
    assert done.returncode == 0, done.stderr
    assert "is a FIFO, not a file to append a trace to" in done.stdout


def test_a_trace_is_never_appended_to_a_journal(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite"
    with sqlite3.connect(journal) as db:
        db.execute("create table t (a)")
    before = journal.read_bytes()
    with pytest.raises(inert.InertValueError, match="holds something other than a JSONL trace"):
        inert.Orchestrator({"t": "read_only"}, {"t": lambda: 1}, turn_key="k", trace=str(journal))
    assert journal.read_bytes() == before


def test_a_trace_appends_to_an_earlier_runs_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    for turn in ("a", "b"):
        orch = inert.Orchestrator({"t": "read_only"}, {"t": lambda: 1}, turn_key=turn, trace=str(trace))
        orch.finish()
    turns = {json.loads(line)["turn"] for line in trace.read_text().splitlines()}
    assert turns == {"a", "b"}
