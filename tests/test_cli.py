"""The command line as a user meets it, in a subprocess: a closed stdout ends the
output quietly, and bad input gets one clear line on stderr and exit status 2
(1 means findings), never a traceback."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

FOREIGN = Path(__file__).resolve().parent / "traces" / "foreign_incident.jsonl"


def inert(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inert", *args], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=120)


def into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Runs the CLI with stdout on a pipe whose reader has already gone (`... | head` after
    head exits): the pipe is closed before the process starts, so every write meets it closed."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return inert(*args, stdout=write_end)
    finally:
        os.close(write_end)


@pytest.mark.parametrize(("args", "code"), [
    (("audit", str(FOREIGN)), 1),
    (("audit", str(FOREIGN), "--json"), 1),
    (("demo",), 0),
    (("simulate", "--seeds", "2"), 0),
    (("--help",), 0),
])
def test_a_closed_stdout_ends_the_output_quietly(args: tuple[str, ...], code: int) -> None:
    done = into_closed_pipe(*args)
    assert done.stderr == "", "no 'Broken pipe', no traceback"
    assert done.returncode == code, "the command's own status: a closed stdout is not bad input"


def assert_refused(done: subprocess.CompletedProcess[str], *names: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])


# -- inert demo --

def test_demo_refuses_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("these are my notes, not a database\n" * 100)
    assert_refused(inert("demo", "--db", str(text)), "inert demo", str(text))
    assert text.read_text().startswith("these are my notes"), "left as it was"


def test_demo_refuses_someone_elses_database(tmp_path: Path) -> None:
    db = tmp_path / "app.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE resources (id INTEGER PRIMARY KEY, owner TEXT)")
        con.execute("INSERT INTO resources VALUES (1, 'alice')")
    con.close()
    assert_refused(inert("demo", "--db", str(db)), str(db), "resources")
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT * FROM resources").fetchall() == [(1, "alice")], "the demo never empties real data"
    con.close()


def test_demo_reuses_its_own_database(tmp_path: Path) -> None:
    db = tmp_path / "world.sqlite"
    assert inert("demo", "--db", str(db)).returncode == 0
    again = inert("demo", "--db", str(db))
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("where", ["db-folder", "db-missing-folder", "trace-missing-folder", "trace-folder"])
def test_demo_on_a_path_it_cannot_use(tmp_path: Path, where: str) -> None:
    missing = tmp_path / "no" / "such" / "folder" / "x"
    args = {
        "db-folder": ("--db", str(tmp_path)),
        "db-missing-folder": ("--db", str(missing)),
        "trace-missing-folder": ("--trace", str(missing)),
        "trace-folder": ("--trace", str(tmp_path)),
    }[where]
    assert_refused(inert("demo", *args), "inert demo")


# -- inert audit (the output path; what audit reads is checked in test_audit.py) --

def test_audit_of_a_missing_file(tmp_path: Path) -> None:
    assert_refused(inert("audit", str(tmp_path / "missing.jsonl")), "inert audit", "missing.jsonl")
