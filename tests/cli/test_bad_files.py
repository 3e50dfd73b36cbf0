"""Every command given a bad file: each refuses with exit status 2 and one line on stderr,
no traceback, without hanging or reading without bound. What failed before: a block
device taken for a trace (written over), a folder read as a trace or as workloads (a raw
errno), a symbolic link loop (``recover`` said there was no journal), a sparse file of
gigabytes read whole, a figure path found unwritable only after the sweep, a locked demo
database called "not a SQLite database", and errno text for files permissions forbid."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import inert
from inert.audit.trace import check_appendable
from inert.cli import main
from tools import symlink_loop

# -- helpers --


def refused(capsys: pytest.CaptureFixture[str], args: list[str], *says: str) -> str:
    assert main(args) == 2
    _, err = capsys.readouterr()
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    for part in says:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def _journal(path: Path) -> None:
    orch = inert.Orchestrator({"t": "write"}, {"t": lambda: "ok"}, turn_key="tk", journal=path)
    orch.draft(['<tool_call>{"name": "t", "arguments": {}}</tool_call>'])
    orch.verify(1)
    orch.finish()


def _pretend_block_device(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """``path`` (a regular file) stats as a block device: no real disk is ever written to."""
    real_stat = os.stat

    def fake(file: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        st = real_stat(file, *args, **kwargs)
        if os.fspath(file) != str(path):
            return st
        fields = list(st)
        fields[0] = stat.S_IFBLK | 0o660
        return os.stat_result(fields)

    monkeypatch.setattr(os, "stat", fake)


# -- a block device for the demo's trace --


def test_the_demo_refuses_a_block_device_for_its_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    device, db = tmp_path / "sda", tmp_path / "world.sqlite"
    device.touch()
    _pretend_block_device(monkeypatch, device)
    refused(capsys, ["demo", "--db", str(db), "--trace", str(device)], f"inert demo: {device} is a block device")
    assert device.read_bytes() == b"", "nothing was written to the disk"
    assert not db.exists(), "refused before the database was touched"


def test_the_library_refuses_a_block_device_for_a_trace_as_the_demo_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    device = tmp_path / "sda"
    device.touch()
    _pretend_block_device(monkeypatch, device)
    with pytest.raises(inert.InertValueError, match="is a block device"):
        inert.Orchestrator({"t": "read_only"}, {"t": lambda: "ok"}, trace=device)
    assert device.read_bytes() == b""


@pytest.mark.skipif(not os.path.exists(os.devnull) or os.devnull != "/dev/null", reason="no /dev/null")
def test_dev_null_still_takes_a_trace_thrown_away() -> None:
    """A character device is a deliberate discard (``--trace /dev/null``), for the library
    and the command line alike: only a block device, a disk, is refused."""
    check_appendable(os.devnull)
    orch = inert.Orchestrator({"t": "read_only"}, {"t": lambda: "ok"}, trace=os.devnull)
    orch.draft(['<tool_call>{"name": "t", "arguments": {}}</tool_call>'])
    orch.verify(1)
    assert orch.finish().results[0].result == "ok"


# -- a folder --


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["audit"], "is a folder, not a trace file"),
        (["simulate", "--workloads"], "is a folder, not a TOML file of workloads"),
    ],
    ids=["audit", "simulate"],
)
def test_a_folder_is_refused_in_a_line_not_an_errno(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    line = refused(capsys, [*args, str(tmp_path)], says)
    assert "Errno" not in line


# -- a symbolic link loop --


@pytest.mark.parametrize(
    "args",
    [["audit"], ["recover"], ["recover", "--json"], ["simulate", "--workloads"], ["journal", "init"], ["demo", "--db"]],
    ids=["audit", "recover", "recover-json", "simulate", "journal-init", "demo-db"],
)
def test_a_symlink_loop_is_named_as_one(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    path = symlink_loop(tmp_path, "loop.png")
    line = refused(capsys, [*args, str(path)], f"{path}: cannot be read (too many levels of symbolic links")
    assert "no journal" not in line and "Errno" not in line and "unable to open" not in line


def test_the_demo_names_a_symlink_loop_for_its_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = symlink_loop(tmp_path, "loop.png")
    refused(capsys, ["demo", "--db", str(tmp_path / "w.sqlite"), "--trace", str(path)], "symbolic links")


# -- a file too long to read whole --


def test_workloads_gigabytes_long_are_refused_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A sparse file: read whole, it ran memory out (MemoryError under a limit)."""
    path = tmp_path / "huge.toml"
    with path.open("wb") as f:
        f.truncate(4 << 30)
    refused(capsys, ["simulate", "--workloads", str(path)], f"{path} is longer than 64 MiB")


# -- a figure path that cannot take the figure: refused before the sweep --


def _folder(p: Path) -> None:
    p.mkdir()


def _fifo(path: Path) -> None:
    try:
        os.mkfifo(path)
    except (AttributeError, OSError):
        pytest.skip("no FIFOs here")


@pytest.mark.parametrize(
    ("make", "says"),
    [(_folder, "is a folder"), (_fifo, "is a FIFO"), (None, "symbolic links")],
    ids=["folder", "fifo", "loop"],
)
def test_a_figure_path_that_cannot_be_written_is_refused_before_the_sweep(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path], None] | None,
    says: str,
) -> None:
    pytest.importorskip("matplotlib")
    import inert.simulate

    if make is None:
        path = symlink_loop(tmp_path, "loop.png")
    else:
        path = tmp_path / "figure.png"
        make(path)
    monkeypatch.setattr(inert.simulate, "simulate", lambda *a, **k: pytest.fail("the sweep ran"))
    refused(capsys, ["simulate", "--seeds", "1", "--plot", str(path)], f"inert simulate: --plot {path}", says)


# -- a locked demo database --


def test_a_locked_demo_database_is_called_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import inert.demo

    path = tmp_path / "world.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE unrelated (x)")  # the schema read must wait on the lock
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(inert.demo, "STAGING_LIMIT_S", 0.2)
    try:
        line = refused(capsys, ["demo", "--db", str(path)], f"inert demo: {path}: another program holds the database")
    finally:
        holder.close()
    assert "not a SQLite database" not in line


# -- bad files of every kind, every command: one line, exit status 2 --


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _garbage(p: Path) -> None:
    p.write_bytes(bytes(range(256)) * 20)


def _truncated_sqlite(p: Path) -> None:
    _journal(p.with_suffix(".whole"))
    p.write_bytes(p.with_suffix(".whole").read_bytes()[:100])


def _missing(p: Path) -> None:
    pass


BAD: dict[str, Callable[[Path], None]] = {
    "empty": _empty,
    "garbage": _garbage,
    "folder": _folder,
    "truncated-sqlite": _truncated_sqlite,
    "missing": _missing,
}
# Which commands must refuse which file (an empty or missing file is a new journal to
# `journal init` and a new database to `demo --db`, and a trace to append to for the demo).
COMMANDS: dict[str, tuple[list[str], set[str]]] = {
    "audit": (["audit"], set(BAD)),
    "recover": (["recover"], set(BAD)),
    "journal-init": (["journal", "init"], {"garbage", "folder", "truncated-sqlite"}),
    "simulate": (["simulate", "--workloads"], set(BAD)),
    "demo-db": (["demo", "--db"], {"garbage", "folder", "truncated-sqlite"}),
    "demo-trace": (["demo", "--trace"], {"garbage", "folder", "truncated-sqlite"}),
}


@pytest.mark.parametrize(
    ("command", "bad"),
    [(c, b) for c, (_, refuses) in COMMANDS.items() for b in BAD if b in refuses],
)
def test_every_command_refuses_a_bad_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, bad: str
) -> None:
    path = tmp_path / "bad"
    BAD[bad](path)
    args = COMMANDS[command][0]
    if command == "demo-trace":
        args = ["demo", "--db", str(tmp_path / "w.sqlite"), "--trace"]
    refused(capsys, [*args, str(path)], f"inert {args[0]}:")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize(
    "args",
    [["audit"], ["recover"], ["journal", "init"], ["simulate", "--workloads"], ["demo", "--db"]],
    ids=["audit", "recover", "journal-init", "simulate", "demo-db"],
)
def test_dev_zero_is_refused_unread(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    refused(capsys, [*args, "/dev/zero"], "/dev/zero", "device")


# -- files permissions forbid, as root too (without root's override) --


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
@pytest.mark.parametrize(
    "args",
    [["demo", "--db"], ["demo", "--trace"], ["journal", "init"], ["recover"], ["audit"]],
    ids=["demo-db", "demo-trace", "journal-init", "recover", "audit"],
)
def test_a_file_permissions_forbid_is_refused_with_what_to_do(tmp_path: Path, args: list[str]) -> None:
    path = tmp_path / "denied"
    _journal(path)
    path.chmod(0)
    code = f"import sys; from inert.cli import main; sys.exit(main({[*args, str(path)]!r}))"
    cmd = [sys.executable, "-c", textwrap.dedent(code)]
    if os.geteuid() == 0:
        caps = "-dac_override,-dac_read_search"
        cmd = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--", *cmd]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    finally:
        path.chmod(0o600)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert f"{path}: cannot be read (permission denied); give this user read permission" in lines[0], lines[0]


@pytest.mark.parametrize("suffix", ["-journal", "-wal", "-shm"])
@pytest.mark.parametrize("command", [["journal", "init"], ["recover"], ["demo", "--db"]])
def test_a_fifo_beside_a_database_is_refused_not_waited_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str, command: list[str]
) -> None:
    """Found by a helper: SQLite opens the file it keeps beside a database (its -journal,
    -wal, -shm) as a file, and blocked for ever, deaf to Ctrl-C, on a FIFO made there
    (``recover`` too, reading a -journal to roll back)."""
    db = tmp_path / "j.sqlite"
    if command != ["demo", "--db"]:
        _journal(db)
    os.mkfifo(f"{db}{suffix}")
    refused(capsys, [*command, str(db)], f"{db}{suffix} is a FIFO", "move it aside")


def test_toml_nested_past_the_parsers_recursion_is_refused_in_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by a helper: tomllib parses nested arrays by recursion, and a file nesting them
    thousands deep ended `simulate --workloads` (and EffectTable.from_toml) in a RecursionError."""
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 3000 + "]" * 3000 + "\n")
    refused(capsys, ["simulate", "--workloads", str(deep)], "nests too deeply")
    with pytest.raises(inert.EffectTableError, match="nests too deeply"):
        inert.EffectTable.from_toml(deep)
