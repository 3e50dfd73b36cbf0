"""A journal file that is there but cannot be read, met by the library (not the command
line): ``recover`` said "no journal at ..." for a file in a folder it may not search, and
SQLite's "unable to open database file" for one it may not read or a symbolic link loop.
Each must say the file cannot be read, why, and what to do, as ``inert recover`` does."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import inert
from inert import JournalError
from tools import deny_stat, symlink_loop


def _journal_with_a_call(path: Path) -> None:
    orch = inert.Orchestrator({"t": "write"}, {"t": lambda: "ok"}, turn_key="tk", journal=path)
    orch.draft(['<tool_call>{"name": "t", "arguments": {}}</tool_call>'])
    orch.verify(1)
    orch.finish()


def _without_root_override(code: str) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter that permissions bind: as root, without the
    capabilities (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) that let root read any file."""
    cmd = [sys.executable, "-c", textwrap.dedent(code)]
    if os.geteuid() == 0:
        caps = "-dac_override,-dac_read_search"
        cmd = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


_RECOVER = """
    import sys, inert
    try:
        inert.recover(sys.argv[1] if len(sys.argv) > 1 else {path!r})
    except inert.JournalError as e:
        print("JournalError:", e)
    except Exception as e:
        print(type(e).__name__ + ":", e)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
@pytest.mark.parametrize("denied", ["file", "folder"])
def test_recover_of_a_journal_permissions_forbid_says_it_cannot_be_read(tmp_path: Path, denied: str) -> None:
    """chmod 000 on the file, or on its folder; as root, in a process without root's override."""
    folder = tmp_path / "journals"
    folder.mkdir()
    path = folder / "j.sqlite"
    _journal_with_a_call(path)
    locked = path if denied == "file" else folder
    locked.chmod(0)
    try:
        done = _without_root_override(_RECOVER.format(path=str(path)))
    finally:
        locked.chmod(0o700)
    assert done.returncode == 0, done.stderr
    said = done.stdout.strip()
    assert said.startswith(f"JournalError: {path}: cannot be read (permission denied)"), said
    assert "read permission" in said, "it says what to do"
    assert "no journal" not in said and "unable to open" not in said, said
    assert len(inert.recover(path).completed) == 1, "nothing was changed"


def test_recover_of_a_journal_whose_stat_is_denied_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, as any user: a folder on the way that may not be searched makes stat fail,
    and exists() False, which ``recover`` took for a missing journal."""
    path = tmp_path / "j.sqlite"
    _journal_with_a_call(path)
    deny_stat(monkeypatch, path)
    with pytest.raises(JournalError, match="cannot be read \\(permission denied\\)") as caught:
        inert.recover(path)
    assert "no journal" not in str(caught.value)
    assert "search (x) permission" in str(caught.value)


def test_recover_of_a_symlink_loop_says_so(tmp_path: Path) -> None:
    path = symlink_loop(tmp_path, "a.sqlite")
    with pytest.raises(JournalError, match="cannot be read \\(too many levels of symbolic links") as caught:
        inert.recover(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert "no journal" not in str(caught.value)


def test_a_sqlite_journal_at_a_symlink_loop_says_so(tmp_path: Path) -> None:
    """Not SQLite's "unable to open database file; check that its folder exists"."""
    path = symlink_loop(tmp_path, "a.sqlite")
    with pytest.raises(JournalError, match="symbolic links") as caught:
        inert.SqliteJournal(path)
    assert "folder exists" not in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sqlite", "other-a.sqlite"], "nothing was created"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_sqlite_journal_permissions_forbid_says_it_cannot_be_read(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    _journal_with_a_call(path)
    path.chmod(0)
    try:
        done = _without_root_override(
            f"""
            import inert
            try:
                inert.SqliteJournal({str(path)!r})
            except inert.JournalError as e:
                print("JournalError:", e)
            """
        )
    finally:
        path.chmod(0o600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"JournalError: journal {path}: cannot be read (permission denied)"), done.stdout
