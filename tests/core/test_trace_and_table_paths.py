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


def _refused_in_subprocess(call: str, error: str, path: Path) -> str:
    """``call`` (Python, of ``path``, named ``sys.argv[1]``) in a subprocess; what ``error``
    it raised said."""
    code = f"import sys, inert\ntry:\n    {call}\nexcept inert.{error} as e:\n    print(e)"
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_fifo
def test_an_effect_table_from_a_fifo_no_program_writes_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "effects.toml"
    os.mkfifo(fifo)
    said = _refused_in_subprocess("inert.EffectTable.from_toml(sys.argv[1])", "EffectTableError", fifo)
    assert "is a FIFO that no program is writing to" in said


@needs_fifo
def test_a_trace_to_a_fifo_no_program_reads_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    call = "inert.Orchestrator({'t': 'read_only'}, {'t': lambda: 1}, turn_key='k', trace=sys.argv[1])"
    said = _refused_in_subprocess(call, "InertValueError", fifo)
    assert "is a FIFO, not a file to append a trace to" in said


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
