"""Paths the commands must refuse before they do anything, each with exit status 2 and one
line on stderr, creating and changing nothing: a FIFO no program writes (audit and simulate
waited on it for ever) or any FIFO for the demo's trace, an existing file that is no trace
for the demo to append to, ``-`` (a file named ``-`` was created), and a journal permissions
forbid (``recover`` said there was none). All found by a helper."""

from __future__ import annotations

import builtins
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import inert
from inert import files
from inert.audit import audit
from inert.cli import main
from tools import deny_stat

FOREIGN = Path(__file__).resolve().parents[1] / "traces" / "foreign_incident.jsonl"


def inert_cli(*args: str, pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The command in a subprocess: a regression that waits for ever fails at the timeout
    instead of hanging the test run."""
    return subprocess.run(
        [sys.executable, "-m", "inert", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        pass_fds=pass_fds,
    )


def one_line(done: subprocess.CompletedProcess[str], *says: str) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    for part in says:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def refused_in_process(capsys: pytest.CaptureFixture[str], args: list[str], *says: str) -> str:
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    for part in says:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    try:
        os.mkfifo(path)
    except (AttributeError, OSError):
        pytest.skip("no FIFOs here")
    return path


# -- a FIFO --


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("audit",), "inert audit: {} is a FIFO that no program is writing to"),
        (("simulate", "--workloads"), "inert simulate: {} is a FIFO that no program is writing to"),
    ],
    ids=["audit", "simulate"],
)
def test_a_fifo_no_program_writes_is_refused_at_once(fifo: Path, args: tuple[str, ...], says: str) -> None:
    line = one_line(inert_cli(*args, str(fifo)))
    assert line.startswith(says.format(fifo)), line


def test_the_demo_refuses_a_fifo_for_its_trace_before_it_touches_the_database(fifo: Path, tmp_path: Path) -> None:
    db = tmp_path / "world.sqlite"
    one_line(inert_cli("demo", "--db", str(db), "--trace", str(fifo)), f"inert demo: {fifo} is a FIFO")
    assert not db.exists(), "nothing was created"


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="no /dev/fd here")
def test_a_pipe_with_its_writer_is_still_read() -> None:
    """``inert audit <(zcat trace.gz)``: the shell hands over a pipe as /dev/fd/N."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, FOREIGN.read_bytes())  # fits in the pipe's buffer
        os.close(write_end)
        done = inert_cli("audit", f"/dev/fd/{read_end}", pass_fds=(read_end,))
    finally:
        os.close(read_end)
    assert done.returncode == 1 and done.stderr == "", done.stderr
    assert "[orphan]" in done.stdout


# -- what the demo appends to --


def _journal(path: Path) -> None:
    assert main(["journal", "init", str(path)]) == 0


def _binary(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 64)


def _notes(path: Path) -> None:
    path.write_text("my notes\n{}\n")


def _json_no_event(path: Path) -> None:
    path.write_text('{"name": "x"}\n')


@pytest.mark.parametrize("make", [_journal, _binary, _notes, _json_no_event])
def test_the_demo_refuses_to_append_its_trace_to_a_file_that_is_no_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], None]
) -> None:
    target, db = tmp_path / "target", tmp_path / "world.sqlite"
    make(target)
    capsys.readouterr()
    before = target.read_bytes()
    refused_in_process(
        capsys,
        ["demo", "--db", str(db), "--trace", str(target)],
        f"inert demo: {target} holds something other than a JSONL trace",
        "appending would corrupt it",
    )
    assert target.read_bytes() == before, "left as it was"
    assert not db.exists(), "nothing was created"


def test_the_demo_still_appends_to_an_empty_file_and_to_a_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n")
    assert main(["demo", "--trace", str(trace)]) == 0
    assert main(["demo", "--trace", str(trace)]) == 0
    turns = [t.turn for t in audit(trace)]
    assert len(turns) == 6 and "demo-read_eager#2" in turns


# -- "-" --


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["journal", "init", "-"], "inert journal: -: "),
        (["demo", "--trace", "-"], "inert demo: --trace -: "),
        (["demo", "--db", "-"], "inert demo: --db -: "),
        (["audit", "-"], "inert audit: -: "),
        (["recover", "-"], "inert recover: -: "),
        (["simulate", "--workloads", "-"], "inert simulate: --workloads -: "),
    ],
    ids=lambda v: "-".join(v[:2]) if isinstance(v, list) else None,
)
def test_a_dash_is_refused_never_made_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    monkeypatch.chdir(tmp_path)
    line = refused_in_process(capsys, args, "not stdin or stdout", "./- for a file named -")
    assert line.startswith(says), line
    assert list(tmp_path.iterdir()) == [], "no file named - (nor any other)"


# -- permissions --


def _journal_with_a_call(path: Path) -> None:
    orch = inert.Orchestrator({"t": "write"}, {"t": lambda: "ok"}, turn_key="tk", journal=path)
    orch.draft(['<tool_call>{"name": "t", "arguments": {}}</tool_call>'])
    orch.verify(1)
    orch.finish()


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root reads any file")
def test_recover_of_a_journal_it_may_not_read_says_so(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    _journal_with_a_call(path)
    path.chmod(0)
    try:
        one_line(inert_cli("recover", str(path)), f"inert recover: {path}: cannot be read (permission denied)")
    finally:
        path.chmod(0o600)


def test_recover_of_a_file_whose_open_is_denied_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As root, in-process: the open of the journal fails as it would for another user."""
    path = tmp_path / "j.sqlite"
    _journal_with_a_call(path)
    before = path.read_bytes()

    def denied(file: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(file) == str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return builtins.open(file, *args, **kwargs)

    monkeypatch.setattr(files, "open", denied, raising=False)
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: pytest.fail("the journal was opened"))
    refused_in_process(capsys, ["recover", str(path)], f"inert recover: {path}: cannot be read (permission denied)")
    assert path.read_bytes() == before


def test_recover_in_a_folder_it_may_not_search_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder on the way without search permission: stat fails, and ``recover`` said no journal was there."""
    path = tmp_path / "j.sqlite"
    _journal_with_a_call(path)
    deny_stat(monkeypatch, path)
    line = refused_in_process(capsys, ["recover", str(path)], "cannot be read (permission denied)")
    assert "no journal" not in line
