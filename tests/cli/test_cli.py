"""The command line as a user meets it, in a subprocess: a closed stdout ends the
output quietly, and bad input gets one clear line on stderr and exit status 2
(1 means findings), never a traceback."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

FOREIGN = Path(__file__).resolve().parents[1] / "traces" / "foreign_incident.jsonl"


def inert(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inert", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )


def into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Runs the CLI with stdout on a pipe whose reader has already gone (`... | head` after
    head exits): the pipe is closed before the process starts, so every write meets it closed."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return inert(*args, stdout=write_end)
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("audit", str(FOREIGN)), 1),
        (("audit", str(FOREIGN), "--json"), 1),
        (("demo",), 0),
        (("simulate", "--seeds", "2"), 0),
        (("--help",), 0),
    ],
)
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


def test_demo_refuses_a_folder_for_its_database_by_saying_so(tmp_path: Path) -> None:
    """Found by an attack: a folder got SQLite's "unable to open database file"."""
    assert_refused(inert("demo", "--db", str(tmp_path)), f"inert demo: {tmp_path}: is a folder, not a SQLite file")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", [("demo",), ("demo", "--json"), ("audit", str(FOREIGN)), ("simulate", "--seeds", "1")])
def test_output_to_a_full_device_ends_with_one_line_naming_stdout(args: tuple[str, ...]) -> None:
    """Found by an attack: `inert demo > /dev/full` said only "[Errno 28] No space left on device"."""
    with open("/dev/full", "w") as full:
        done = inert(*args, stdout=full.fileno())
    assert_refused(done, f"inert {args[0]}: cannot write the output to stdout: No space left on device")


# -- inert audit (the output path; what audit reads is checked in test_audit.py) --


def test_audit_of_a_missing_file(tmp_path: Path) -> None:
    assert_refused(inert("audit", str(tmp_path / "missing.jsonl")), "inert audit", "missing.jsonl")


# -- inert simulate --

MODEL = "[models.m]\nalpha = 0.8\n"
AGENT = (
    '[agents.a]\ntranscript = \'\'\'<tool_call>{"name": "get", "arguments": {"key": "x"}}</tool_call>\'\'\'\n'
    '[agents.a.tools.get]\nkind = "read"\nmedian_s = 0.01\n'
)

WRITE = AGENT.replace('"read"', '"write"')

BAD_WORKLOADS: dict[str, tuple[str | bytes, str]] = {
    "toml-syntax": ("[models.m\nalpha = 0.8\n", "not valid TOML"),
    "not-utf8": (b"[models.m]\nalpha = 0.8 # \xff\xfe\n", "UTF-8"),
    "unknown-kind": (MODEL + AGENT.replace('"read"', '"teleport"'), "agents.a.tools.get.kind"),
    "string-number": (MODEL + AGENT.replace("0.01", '"fast"'), "agents.a.tools.get.median_s"),
    "k-zero": ("[models.m]\nalpha = 0.8\nk = 0\n" + AGENT, "models.m.k"),
    "k-negative": ("[models.m]\nalpha = 0.8\nk = -3\n" + AGENT, "models.m.k"),
    "k-fraction": ("[models.m]\nalpha = 0.8\nk = 2.5\n" + AGENT, "models.m.k"),
    "k-boolean": ("[models.m]\nalpha = 0.8\nk = true\n" + AGENT, "models.m.k"),
    "alpha-above-one": ("[models.m]\nalpha = 1.5\n" + AGENT, "models.m.alpha"),
    "alpha-negative": ("[models.m]\nalpha = -0.1\n" + AGENT, "models.m.alpha"),
    "alpha-nan": ("[models.m]\nalpha = nan\n" + AGENT, "models.m.alpha"),
    "alpha-missing": ("[models.m]\nk = 4\n" + AGENT, "models.m.alpha"),
    "alpha-decay-zero": ("[models.m]\nalpha = 0.8\nalpha_decay = 0.0\n" + AGENT, "models.m.alpha_decay"),
    "negative-verify": ("[models.m]\nalpha = 0.8\nverify_s = -0.005\n" + AGENT, "models.m.verify_s"),
    "negative-draft": ("[models.m]\nalpha = 0.8\ndraft_s = -1\n" + AGENT, "models.m.draft_s"),
    "negative-latency": (MODEL + AGENT.replace("0.01", "-0.01"), "agents.a.tools.get.median_s"),
    "p99-below-median": (MODEL + AGENT + "p99_s = 0.001\n", "agents.a.tools.get.p99_s"),
    "adaptive-string": ('[models.m]\nalpha = 0.8\nadaptive = "yes"\n' + AGENT, "models.m.adaptive"),
    "unknown-model-field": ("[models.m]\nalpha = 0.8\nwindow = 4\n" + AGENT, "models.m.window"),
    "unknown-top-level": ("[model.m]\nalpha = 0.8\n", "model"),
    "missing-transcript": (MODEL + '[agents.a.tools.get]\nkind = "read"\nmedian_s = 0.01\n', "agents.a.transcript"),
    "unknown-format": (MODEL + AGENT.replace("[agents.a]\n", '[agents.a]\nformat = "hermess"\n'), "agents.a.format"),
    "tools-not-a-table": (MODEL + '[agents.x]\ntranscript = "hi"\ntools = 3\n', "agents.x.tools"),
    "row-not-a-string": (
        MODEL + AGENT.replace("[agents.a.tools.get]", "rows = { x = 1 }\n[agents.a.tools.get]"),
        "agents.a.rows.x",
    ),
    "unknown-workload-model": (MODEL + AGENT + '[[workloads]]\nmodel = "nope"\nagent = "a"\n', "workloads[0].model"),
    "workload-missing-agent": (MODEL + AGENT + '[[workloads]]\nmodel = "m"\n', "workloads[0].agent"),
    "prepare-on-a-read": (MODEL + AGENT + "prepare = { median_s = 0.1 }\n", "agents.a.tools.get.prepare"),
    "prepare-not-a-table": (MODEL + WRITE + "prepare = 0.1\n", "agents.a.tools.get.prepare"),
    "prepare-missing-median": (MODEL + WRITE + "prepare = { p99_s = 0.1 }\n", "agents.a.tools.get.prepare.median_s"),
    "prepare-negative": (MODEL + WRITE + "prepare = { median_s = -0.1 }\n", "agents.a.tools.get.prepare.median_s"),
    "prepare-p99-below-median": (
        MODEL + WRITE + "prepare = { median_s = 0.1, p99_s = 0.01 }\n",
        "agents.a.tools.get.prepare.p99_s",
    ),
    "prepare-unknown-field": (MODEL + WRITE + "prepare = { median = 0.1 }\n", "agents.a.tools.get.prepare.median"),
    "call-accuracy-above-one": ("[models.m]\nalpha = 0.8\ncall_accuracy = 1.2\n" + AGENT, "models.m.call_accuracy"),
    "whole-calls-string": ('[models.m]\nalpha = 0.8\nwhole_calls = "yes"\n' + AGENT, "models.m.whole_calls"),
    "empty": ("", "nothing to simulate"),
    "only-comments": ("# no workloads yet\n", "nothing to simulate"),
    "empty-tables": ("[models]\n[agents]\n", "nothing to simulate"),
    "empty-models-table": ("[models]\n", "nothing to simulate"),
    "empty-workload-list": ("workloads = []\n" + MODEL + AGENT, "nothing to simulate"),
    "negative-verify-per-token": (
        "[models.m]\nalpha = 0.8\nverify_per_token_s = -0.001\n" + AGENT,
        "models.m.verify_per_token_s",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_WORKLOADS))
def test_simulate_refuses_a_bad_workload_file_naming_the_file_and_the_field(tmp_path: Path, case: str) -> None:
    content, field = BAD_WORKLOADS[case]
    path = tmp_path / f"{case}.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    assert_refused(inert("simulate", "--workloads", str(path), "--seeds", "2"), "inert simulate", str(path), field)


def test_simulate_runs_a_good_workload_file(tmp_path: Path) -> None:
    path = tmp_path / "good.toml"
    path.write_text(
        "[models.m]\nalpha = 0.8\nk = 4\nverify_s = 0.004\nalpha_decay = 1.0\nadaptive = true\n"
        + AGENT
        + 'p99_s = 0.05\n[[workloads]]\nmodel = "m"\nagent = "a"\n'
    )
    done = inert("simulate", "--workloads", str(path), "--seeds", "3")
    assert done.returncode == 0, done.stderr
    assert "m / a" in done.stdout


@pytest.mark.parametrize("seeds", ["0", "-1", "many", "2.5"])
def test_simulate_refuses_a_bad_seed_count(seeds: str) -> None:
    done = inert("simulate", "--seeds", seeds)
    assert "Traceback" not in done.stderr and done.returncode == 2, done.stderr
    assert "--seeds" in done.stderr and seeds in done.stderr


@pytest.mark.parametrize("depths", ["0", "4,x", "", "4,,8", "-4", "2000"])
def test_simulate_refuses_bad_draft_depths(depths: str) -> None:
    done = inert("simulate", "--depths", depths)
    assert "Traceback" not in done.stderr and done.returncode == 2, done.stderr
    assert "--depths" in done.stderr and "between 1 and 1024" in done.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("simulate", "--workloads", ""), "--workloads ''"),
        (("simulate", "--depths", "--workloads", ""), "--workloads ''"),
        (("simulate", "--plot", ""), "--plot ''"),
        (("demo", "--db", ""), "--db ''"),
        (("demo", "--trace", ""), "--trace ''"),
        (("recover", ""), "journal path ''"),
        (("journal", "init", ""), "journal path ''"),
        (("audit", ""), "trace path ''"),
    ],
)
def test_an_empty_path_is_refused_by_its_flag(args: tuple[str, ...], named: str) -> None:
    """Found by an attack: `--workloads ''` ran the built-in workloads as if the flag were
    absent, and `--db ''` opened the current folder; an empty path is a usage error."""
    done = inert(*args)
    assert_refused(done, f"inert {args[0]}", named, "is empty: give a file's path")
    assert done.stdout == "", "refused before anything ran"


def test_simulate_refuses_a_missing_workload_file(tmp_path: Path) -> None:
    assert_refused(inert("simulate", "--workloads", str(tmp_path / "nope.toml")), "inert simulate", "nope.toml")


def test_simulate_refuses_a_plot_into_a_missing_folder(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the optional plot extra (matplotlib) is not installed")
    assert_refused(
        inert("simulate", "--seeds", "2", "--plot", str(tmp_path / "no" / "x.png")), "inert simulate", "--plot"
    )


# -- Ctrl-C --


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and SIGINT are POSIX")
def test_ctrl_c_ends_a_command_with_a_line_not_a_traceback(tmp_path: Path) -> None:
    """SIGINT while `inert audit` waits on a FIFO (a trace still being written): one line and
    status 130, as a shell reports an interrupted command. Opening the FIFO's write end
    returns only once the command has opened it to read, so the signal lands inside the command."""
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    # Python's own SIGINT handler, whatever the test runner's process left inherited.
    child = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from inert.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    with (
        subprocess.Popen(
            [sys.executable, "-c", child, "audit", str(fifo)], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        ) as proc,
        open(fifo, "w"),  # returns once the command has opened the trace to read
    ):
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.strip().splitlines() == ["inert audit: interrupted (Ctrl-C); nothing more was done"], err
    assert out == ""


ROOT = Path(__file__).resolve().parents[2]

_INTERRUPTED_IMPORT = """
import importlib, sys
module, _, function = sys.argv[1].partition(":")
interrupted = sys.argv[2]

class CtrlC:
    # What a SIGINT delivered while this module imports does, without racing a signal against it.
    def find_spec(self, name, path=None, target=None):
        if name == interrupted:
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, CtrlC())
sys.argv[1:] = sys.argv[3:]
sys.exit(getattr(importlib.import_module(module), function)())
"""


@pytest.mark.parametrize("interrupted", ["inert._core", "inert.audit", "inert.cli", "argparse"])
def test_ctrl_c_while_the_package_imports_ends_quietly_with_130(interrupted: str) -> None:
    """Found by an attack: a Ctrl-C in the first ~0.2 s of any `inert ...` (while the package
    imported, before the CLI's own handler existed) printed a traceback. The console script's
    entry, as pyproject.toml names it, is run with the import of ``interrupted`` raising."""
    import tomllib

    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["inert"]
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_IMPORT, entry, interrupted, "audit", str(FOREIGN)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr.splitlines() == ["inert: interrupted (Ctrl-C)"], done.stderr
    assert done.stdout == ""


# -- a journal another process holds locked --


LOCKED = "another process holds the journal locked (a writer's transaction is open): try again when it ends"


@pytest.mark.parametrize("args", [("journal", "init"), ("recover",), ("recover", "--json")])
def test_a_journal_held_locked_is_refused_after_a_short_wait(tmp_path: Path, args: tuple[str, ...]) -> None:
    """Found by an attack: against a journal another process held locked, `journal init` (and
    `recover`, when the writer locks the file exclusively) waited SQLite's 30 s busy timeout,
    deaf to Ctrl-C. The lock is taken before the command starts; the bound is loose on purpose."""
    from inert.journal import init_journal

    journal = tmp_path / "j.sqlite"
    init_journal(journal)
    holder = sqlite3.connect(journal, isolation_level=None)
    try:
        if args[0] == "recover":  # a WAL reader passes a plain writer: only an exclusive lock stops it
            holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("DELETE FROM outcomes WHERE 0")  # takes the write lock now
        started = time.monotonic()
        done = inert(*args, str(journal))
        waited = time.monotonic() - started
    finally:
        holder.close()
    assert_refused(done, f"inert {args[0]}", str(journal), LOCKED)
    assert waited < 20, f"waited {waited:.0f} s: the library's 30 s busy timeout, not the command's own"


def test_the_librarys_own_busy_timeout_stays_30_s() -> None:
    import inspect

    import inert as package
    from inert.journal import init_journal

    for f in (package.SqliteJournal, package.recover, init_journal):
        assert inspect.signature(f).parameters["busy_timeout"].default == 30.0, f


def test_recover_json_writes_a_result_nested_past_its_depth_as_a_note(tmp_path: Path) -> None:
    """Found by a helper: a tool's result nested 600 deep is stored, but ``recover --json``
    recursed once per level and ended in a RecursionError traceback."""
    import inert as package

    def deep() -> list[object]:
        value: list[object] = []
        for _ in range(600):
            value = [value]
        return value

    path = tmp_path / "journal.sqlite"
    orch = package.Orchestrator({"deep": "read_only"}, {"deep": deep}, turn_key="t", journal=path)
    orch.draft(['<tool_call>{"name": "deep", "arguments": {}}</tool_call>'])
    orch.verify(1)
    assert orch.finish().results[0].error is None
    done = inert("recover", str(path), "--json")
    assert (done.returncode, done.stderr) == (0, "")
    assert "nested deeper than 200 levels" in done.stdout
    json.loads(done.stdout)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("audit", "/dev/zero"), "inert audit: /dev/zero is a device, not a trace file"),
        (("simulate", "--workloads", "/dev/zero"), "inert simulate: /dev/zero is a device, not a TOML file"),
    ],
    ids=["audit", "simulate"],
)
def test_a_device_is_refused_instead_of_read_for_ever(args: tuple[str, ...], says: str) -> None:
    """Found by helpers: `inert audit /dev/zero` and `inert simulate --workloads /dev/zero`
    read until memory ran out (a MemoryError traceback under a memory limit)."""
    done = inert(*args)
    assert done.returncode == 2
    assert done.stderr.strip().startswith(says)


def test_an_effect_table_from_a_device_is_refused() -> None:
    import inert as package

    with pytest.raises(package.EffectTableError, match="/dev/zero is a device"):
        package.EffectTable.from_toml("/dev/zero")


@pytest.mark.parametrize("args", [["recover", "nope"], ["audit", "nope"], ["simulate", "--workloads", "nope"]])
def test_an_error_keeps_its_exit_status_when_stderr_is_a_broken_pipe(args: list[str]) -> None:
    """Found by a helper: the message's BrokenPipeError on stderr was taken for stdout's
    closing, which ends quietly, so the failed command exited 0."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "inert", *args], stderr=write, check=False, timeout=60)
    finally:
        os.close(write)
    assert done.returncode == 2


def test_a_command_started_with_stdout_closed_ends_with_its_own_status(tmp_path: Path) -> None:
    """Found by a helper: with stdout closed (``>&-``) Python has no sys.stdout, and the final
    flush raised AttributeError: a traceback, and exit 1 for every command."""
    journal = str(tmp_path / "j.sqlite")
    for args, status in ((["journal", "init", journal], 0), (["recover", journal], 0), (["recover", "nope"], 2)):
        done = subprocess.run(
            [sys.executable, "-m", "inert", *args],
            preexec_fn=lambda: os.close(1),  # the child starts with no stdout, as after `>&-`
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=60,
        )
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode == status, (args, done.stderr)


def test_output_a_stdout_encoding_cannot_spell_is_escaped(tmp_path: Path) -> None:
    """Found by a helper: `PYTHONIOENCODING=ascii inert recover` of a journal holding
    arguments outside ASCII ended in a UnicodeEncodeError traceback."""
    from inert import Orchestrator  # this module's `inert` runs the command line

    journal = tmp_path / "j.sqlite"
    orch = Orchestrator({"t": "write"}, {"t": lambda a: "ok"}, turn_key="tk", journal=journal)
    orch.draft(['<tool_call>{"name": "t", "arguments": {"a": "é☃"}}</tool_call>'])
    orch.verify(1)
    orch.finish()
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run(
        [sys.executable, "-m", "inert", "recover", str(journal)],
        capture_output=True,
        text=True,
        encoding="ascii",
        errors="replace",
        env=env,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "\\xe9\\u2603" in done.stdout
