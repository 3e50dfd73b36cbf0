"""The SQLite journal's failures, and recovery that never writes.

Every failure of the file (a directory, a text file, a truncated or foreign
database, a read-only file, a full disk) is a JournalError that names the file
and says what to do, never a raw sqlite3 error; `inert recover` reads a file
without changing a byte of it and refuses what is not a journal."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import inert
from inert.cli import main
from journals import record
from tools import block


def journal_with_entries(path: Path, n: int = 3, complete: bool = True) -> None:
    with inert.SqliteJournal(path) as j:
        for i in range(n):
            r = record(f"ck1-{i}", "f", i=i, pad="x" * 2000)
            assert j.begin(r, "t1") is None
            if complete:
                r = dataclasses.replace(r, result=i)
                j.complete(r, "ok")


def snapshot(path: Path) -> dict[str, Any]:
    """What recovery must leave as it was: the bytes and times of the file and its companions."""
    out: dict[str, Any] = {}
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if p.exists():
            st = p.stat()
            out[p.name] = (p.read_bytes() if not p.name.endswith("-shm") else None, st.st_mtime_ns, st.st_size)
    return out


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# -- two processes on one file: the claim decides who records an outcome --


@pytest.mark.parametrize("b_finishes_first", [True, False])
def test_a_slow_process_cannot_overwrite_the_process_that_ran_its_key_again(
    tmp_path: Path, b_finishes_first: bool
) -> None:
    """Issue 27, item 4, on one host: process A runs an idempotent call; process B meets
    its key with no outcome (no leases here: in doubt), takes it over and runs it again,
    recording "B". A's late outcome must not replace B's: A gets StaleClaimError, and
    every replay returns B's result. (Each SqliteJournal is one process's view of the file.)"""
    path = tmp_path / "j.sqlite"
    a, b = inert.SqliteJournal(path), inert.SqliteJournal(path)
    put = record("ck1-put", "put", "idempotent")
    assert a.begin(put, "t1") is None
    prior = b.begin(record("ck1-put", "put", "idempotent"), "t1")
    assert prior is not None and prior.in_doubt, "B runs it again"
    if b_finishes_first:
        b.complete(dataclasses.replace(put, result="B"), "ok")
    with pytest.raises(inert.StaleClaimError, match=rf"{path}.*'put' under key ck1-put.*taken over") as caught:
        a.complete(dataclasses.replace(put, result="A"), "ok")
    assert isinstance(caught.value, inert.JournalError)
    if not b_finishes_first:
        assert inert.recover(path).completed == [], "A's outcome did not land under B's claim"
        b.complete(dataclasses.replace(put, result="B"), "ok")
    (done,) = inert.recover(path).completed
    assert (done.status, done.result) == ("ok", "B")
    with inert.SqliteJournal(path) as c:
        replay = c.begin(record("ck1-put", "put", "idempotent"), "t1")
    assert replay is not None and replay.result == "B"
    a.close()
    b.close()


def test_a_write_in_doubt_is_not_taken_over_so_its_process_still_records_it(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with inert.SqliteJournal(path) as a, inert.SqliteJournal(path) as b:
        send = record("ck1-send", "send")
        assert a.begin(send, "t1") is None
        prior = b.begin(record("ck1-send", "send"), "t1")
        assert prior is not None and prior.in_doubt
        with pytest.raises(inert.StaleClaimError, match="holds no claim"):
            b.complete(dataclasses.replace(send, result="B"), "ok")
        a.complete(dataclasses.replace(send, result="A"), "ok")
        with pytest.raises(inert.StaleClaimError, match="holds no claim"):
            a.complete(dataclasses.replace(send, result="again"), "ok")
    (done,) = inert.recover(path).completed
    assert done.result == "A"


def test_a_read_run_again_replaces_its_finished_outcome_without_a_claim(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with inert.SqliteJournal(path) as a:
        read = record("ck1-get", "get", "read_only")
        assert a.begin(read, "t1") is None
        a.complete(dataclasses.replace(read, result=1), "ok")
        assert a.begin(read, "t1") is not None  # replayed; the runtime runs a recurring read again
        a.complete(dataclasses.replace(read, result=2), "ok")
    assert [e.result for e in inert.recover(path).completed] == [2]


def test_a_version_1_journal_is_migrated_and_still_read(tmp_path: Path) -> None:
    """Journals written before claims (schema version 1, or 0 from before versioning) have
    no claim column: recovery reads them as they are; opening one to write adds it."""
    path = tmp_path / "j.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(f"""
            CREATE TABLE intents (seq INTEGER PRIMARY KEY AUTOINCREMENT, commit_key TEXT NOT NULL UNIQUE,
                turn_key TEXT NOT NULL, tool TEXT NOT NULL, effect TEXT NOT NULL, arguments TEXT NOT NULL,
                fingerprint TEXT NOT NULL, intent_at REAL NOT NULL);
            CREATE TABLE outcomes (commit_key TEXT PRIMARY KEY REFERENCES intents(commit_key), status TEXT NOT NULL,
                result TEXT, error TEXT, finished_at REAL NOT NULL);
            INSERT INTO intents VALUES (1, 'ck1-old', 't0', 'put', 'idempotent', '{{}}',
                '{inert.journal.fingerprint({})}', 1.0);
            PRAGMA user_version = 1;""")
    db.close()
    before = snapshot(path)
    assert [e.commit_key for e in inert.recover(path).in_doubt] == ["ck1-old"]
    assert snapshot(path) == before
    a, b = inert.SqliteJournal(path), inert.SqliteJournal(path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (2,)
    db.close()
    old = record("ck1-old", "put", "idempotent")
    assert a.begin(old, "t0") is not None  # in doubt, taken over
    assert b.begin(old, "t0") is not None  # and again
    with pytest.raises(inert.StaleClaimError):
        a.complete(dataclasses.replace(old, result="A"), "ok")
    b.complete(dataclasses.replace(old, result="B"), "ok")
    assert [e.result for e in inert.recover(path).completed] == ["B"]
    a.close()
    b.close()


# -- opening a journal for writing --


def test_a_directory_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(inert.JournalError, match=f"{tmp_path}.* is a directory"):
        inert.SqliteJournal(tmp_path)
    with pytest.raises(inert.JournalError, match="is a directory"):
        inert.Orchestrator({"f": "write"}, {"f": lambda: 1}, journal=tmp_path, turn_key="t")


def test_a_missing_folder_says_so(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "j.sqlite"
    with pytest.raises(inert.JournalError, match=f"journal {path}: cannot create it.*folder exists"):
        inert.SqliteJournal(path)


@pytest.mark.parametrize(
    "content", [b"not a database at all\n" * 40, b"SQLite format 3\x00" + b"\xff" * 200], ids=["text", "bad header"]
)
def test_a_file_that_is_not_a_database_is_refused_and_left_alone(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "j.sqlite"
    path.write_bytes(content)
    with pytest.raises(inert.JournalError, match=f"journal {path}: .*not a SQLite database, or it is corrupt"):
        inert.SqliteJournal(path)
    assert path.read_bytes() == content


def test_a_truncated_journal_raises_journal_errors_not_sqlite_errors(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal_with_entries(path, n=20)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(inert.JournalError, match=f"{path}.*(corrupt|malformed)"), inert.SqliteJournal(path) as j:
        j.entries()
        j.begin(record("ck1-new", "f"), "t1")
    with pytest.raises(inert.JournalError, match=f"{path}"):
        inert.recover(path)


def test_another_applications_database_is_not_touched(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("INSERT INTO users (name) VALUES ('ana')")
    db.close()
    before = path.read_bytes()
    with pytest.raises(inert.JournalError, match=r"holds other tables \(users\), not an inert journal"):
        inert.SqliteJournal(path)
    assert path.read_bytes() == before, "not switched to WAL, no tables added"


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal_with_entries(path, n=1)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 7")
    db.close()
    with pytest.raises(inert.JournalError, match="schema version 7 is newer than this inert reads"):
        inert.SqliteJournal(path)
    with pytest.raises(inert.JournalError, match="schema version 7"):
        inert.recover(path)


def test_a_journal_from_before_versioning_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal_with_entries(path, n=1)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 0")
    db.close()
    assert [e.status for e in inert.recover(path).completed] == ["ok"]
    with inert.SqliteJournal(path) as j:
        assert len(j.entries()) == 1


def test_an_empty_file_becomes_a_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    path.touch()
    with inert.SqliteJournal(path) as j:
        assert j.begin(record("ck1-a"), "t1") is None


def run_isolated(code: str, *, drop_root_override: bool = False) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter; ``drop_root_override`` removes root's power
    to write files it may not (CAP_DAC_OVERRIDE), so that a read-only file is read-only."""
    cmd = [sys.executable, "-c", textwrap.dedent(code)]
    if drop_root_override and os.geteuid() == 0:
        caps = "-dac_override,-dac_read_search"
        cmd = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--", *cmd]
    tests = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": tests + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, check=False)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_read_only_journal_says_so(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal_with_entries(path, n=1)
    path.chmod(0o444)
    before = path.read_bytes()
    done = run_isolated(
        f"""
        import inert
        try:
            inert.SqliteJournal({str(path)!r})
        except inert.JournalError as e:
            print("JournalError:", e)
    """,
        drop_root_override=True,
    )
    assert done.returncode == 0, done.stderr
    assert f"JournalError: journal {path}" in done.stdout and "read-only" in done.stdout, done.stdout
    assert "inert recover" in done.stdout
    assert path.read_bytes() == before
    assert [e.status for e in inert.recover(path).completed] == ["ok"], "recover reads a read-only journal"


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_failed_commit_reports_its_own_cause(tmp_path: Path) -> None:
    """A COMMIT that fails (the disk is full) ends the transaction; the ROLLBACK
    after it used to fail too, and "cannot rollback" replaced the real cause."""
    path = tmp_path / "j.sqlite"
    done = run_isolated(f"""
        import os, resource, signal
        import inert
        from journals import record
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
        j = inert.SqliteJournal({str(path)!r})
        assert j.begin(record("ck1-a", "f"), "t1") is None
        size = os.path.getsize({str(path)!r} + "-wal")
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, resource.RLIM_INFINITY))
        try:
            j.begin(record("ck1-b", "f", pad="x" * 20000), "t1")
        except inert.JournalError as e:
            print("JournalError:", e)
        except Exception as e:
            print("OTHER:", type(e).__name__, e)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("JournalError: journal "), done.stdout
    assert "cannot rollback" not in done.stdout
    assert "could not record the intent of 'f' under key ck1-b (the tool was not run)" in done.stdout
    assert "disk I/O error" in done.stdout or "full" in done.stdout
    assert [e.commit_key for e in inert.recover(path).in_doubt] == ["ck1-a"], "the failed intent left nothing"


# -- rows changed outside inert --


def test_an_outcome_left_without_its_intent_never_becomes_a_new_calls_outcome(tmp_path: Path) -> None:
    """An outcome row whose intent row is gone (deleted by hand, a damaged copy) used to
    join the next intent of its key: a write that ran and crashed before its outcome read
    as completed, with the old result, instead of in doubt."""
    path = tmp_path / "j.sqlite"
    with inert.SqliteJournal(path) as j:
        old = record("ck1-a", "f", i=1)
        assert j.begin(old, "t1") is None
        j.complete(dataclasses.replace(old, result="old"), "ok")
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM intents WHERE commit_key = 'ck1-a'")
    db.close()
    with inert.SqliteJournal(path) as j:
        assert j.begin(record("ck1-a", "f", i=1), "t1") is None  # runs; the process dies before its outcome
        assert (entry := j.lookup("ck1-a")) is not None and entry.status is None
    rec = inert.recover(path)
    assert [(e.commit_key, e.status) for e in rec.in_doubt] == [("ck1-a", None)]
    assert rec.completed == []


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE intents SET commit_key = CAST(commit_key AS BLOB)",
        "UPDATE intents SET tool = X'ff'",
        "UPDATE outcomes SET status = X'6f6b'",
        "UPDATE outcomes SET status = 'done'",
        "UPDATE outcomes SET error = X'00'",
    ],
    ids=["key", "tool", "status", "unknown-status", "error"],
)
def test_a_column_of_the_wrong_type_is_a_journal_error_naming_the_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    """SQLite stores any type in any column: a key turned into a BLOB outside inert made
    recover fail with a bare TypeError (a traceback from `inert recover`)."""
    path = tmp_path / "j.sqlite"
    journal_with_entries(path, n=1)
    with sqlite3.connect(path) as db:
        db.execute(damage)
    db.close()
    with pytest.raises(inert.JournalError, match=r"ck1-0.* damaged.*changed outside inert"):
        inert.recover(path)
    rc, out, err = cli(capsys, "recover", str(path))
    assert rc == 2 and out == "" and "damaged" in err


# -- recovery reads without writing --


def test_recover_changes_nothing_in_a_closed_journal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.sqlite"
    journal_with_entries(path, n=3, complete=False)
    before = snapshot(path)
    assert list(before) == ["j.sqlite"], "a cleanly closed journal has no -wal or -shm"
    rec = inert.recover(path)
    assert [e.commit_key for e in rec.in_doubt] == ["ck1-0", "ck1-1", "ck1-2"]
    rc, out, _ = cli(capsys, "recover", str(path))
    assert rc == 0 and "3 in doubt, 0 completed" in out
    rc, out, _err = cli(capsys, "recover", "--json", str(path))
    assert rc == 0 and '"in_flight": []' in out
    assert snapshot(path) == before, "recover wrote to the journal or created its -wal/-shm"


def test_recover_reads_intents_still_in_the_wal_without_changing_it(tmp_path: Path) -> None:
    """After a crash (or while a worker runs) the newest intents live in the -wal:
    recovery must see them, and must not checkpoint or otherwise change the files."""
    path = tmp_path / "j.sqlite"
    worker = inert.SqliteJournal(path)
    for i in range(3):
        assert worker.begin(record(f"ck1-{i}", "f", i=i), "t1") is None
    before = snapshot(path)
    assert "j.sqlite-wal" in before
    assert [e.commit_key for e in inert.recover(path).in_doubt] == ["ck1-0", "ck1-1", "ck1-2"]
    after = snapshot(path)
    assert {k: v for k, v in after.items() if k != "j.sqlite-shm"} == {
        k: v for k, v in before.items() if k != "j.sqlite-shm"
    }
    worker.close()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_recover_reads_a_crashed_journal_in_a_folder_it_may_not_write(tmp_path: Path) -> None:
    """A crashed journal copied (or mounted) read-only with its -wal but no -shm: SQLite
    cannot read the -wal without making a -shm beside it, and recover, which never writes,
    refused it ('check that this process may write there'). The intents in the -wal count."""
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "j.sqlite"
    crashed = run_isolated(f"""
        import os
        import inert
        from journals import record
        j = inert.SqliteJournal({str(path)!r})
        assert j.begin(record("ck1-a", "f"), "t1") is None
        os._exit(0)  # dies holding it: the intent is in the -wal only
    """)
    assert crashed.returncode == 0, crashed.stderr
    Path(f"{path}-shm").unlink()
    before = snapshot(path)
    assert "j.sqlite-wal" in before
    folder.chmod(0o555)
    try:
        done = run_isolated(
            f"""
            import inert
            from inert.cli import main
            print([e.commit_key for e in inert.recover({str(path)!r}).in_doubt])
            main(["recover", {str(path)!r}])
        """,
            drop_root_override=True,
        )
        assert sorted(os.listdir(folder)) == ["j.sqlite", "j.sqlite-wal"]
    finally:
        folder.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "['ck1-a']", done.stdout
    assert "1 in doubt" in done.stdout
    assert snapshot(path) == before


@pytest.mark.parametrize("kind", ["empty", "text", "other database", "database without tables", "directory"])
def test_recover_refuses_what_is_not_a_journal(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    path = tmp_path / "thing"
    if kind == "empty":
        path.touch()
    elif kind == "text":
        path.write_text("hello\n" * 100)
    elif kind == "other database":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
        db.commit()
        db.close()
    elif kind == "database without tables":
        db = sqlite3.connect(path)
        db.execute("PRAGMA user_version = 3")  # writes a header, and nothing else
        db.close()
    else:
        path.mkdir()
    before = snapshot(path) if kind != "directory" else {}
    with pytest.raises(inert.JournalError, match=str(path)):
        inert.recover(path)
    rc, out, err = cli(capsys, "recover", str(path))
    assert rc == 2 and out == "" and "Traceback" not in err
    assert err.startswith("inert recover: ") and str(path) in err
    assert {
        "empty": "empty file",
        "text": "not a SQLite database",
        "other database": "holds other tables (users)",
        "database without tables": "holds no tables",
        "directory": "is a directory",
    }[kind] in err
    if kind != "directory":
        assert snapshot(path) == before and not Path(f"{path}-wal").exists()


def test_the_cli_recover_of_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _out, err = cli(capsys, "recover", str(tmp_path / "none.sqlite"))
    assert rc == 2 and "no journal at" in err and "Traceback" not in err


def test_journal_init_creates_a_sqlite_journal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.sqlite"
    rc, out, _ = cli(capsys, "journal", "init", str(path))
    assert rc == 0 and out.startswith(f"created the inert journal {path}")
    rc, out, _ = cli(capsys, "journal", "init", str(path))
    assert rc == 0 and out.startswith("checked")
    assert inert.recover(path).completed == []


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_journal_killed_while_being_created_is_absent_not_half_made(tmp_path: Path) -> None:
    """Creation happens beside the name and is linked into place: a process killed
    midway leaves no file that recovery would have to call half a journal."""
    path = tmp_path / "j.sqlite"
    done = run_isolated(f"""
        import os, signal
        import inert.journal.sqlite as sqlite
        sqlite.os.link = lambda *_: os.kill(os.getpid(), signal.SIGKILL)  # dies just before the name appears
        sqlite.SqliteJournal({str(path)!r})
    """)
    assert done.returncode == -9
    assert not path.exists()
    with pytest.raises(inert.InertValueError, match="no journal at"):
        inert.recover(path)
    orch = inert.Orchestrator({"f": "write"}, {"f": lambda: 1}, turn_key="t1", journal=path)
    orch.draft([block("f")])
    orch.verify(1)
    orch.finish()
    assert [e.status for e in inert.recover(path).completed] == ["ok"]


def test_once_the_file_is_found_locked_intents_stop_waiting_the_whole_busy_timeout(tmp_path: Path) -> None:
    """Found by a helper: another process holding the file's write lock made every intent wait
    the whole busy timeout (30 s) in turn, so a turn of n calls took n x 30 s to fail whatever
    the calls' deadlines. Once one write waited it out, an intent waits 100 ms, until one
    succeeds. Checked in the statements the journal runs, not in time."""
    path = tmp_path / "journal.sqlite"
    journal = inert.SqliteJournal(path)
    journal._db.execute("PRAGMA busy_timeout = 200")  # not 30 s: the first wait is real
    statements: list[str] = []
    journal._db.set_trace_callback(statements.append)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        for n in range(3):
            with pytest.raises(inert.JournalError, match="database is locked") as failed:
                journal.begin(record(f"k{n}"), "t")
            assert ("waited 100 ms" in str(failed.value)) == (n > 0)
        # A commit settles what a prepare staged (found by a helper): it waits the whole timeout.
        commit = dataclasses.replace(record("k-commit"), phase="commit")
        with pytest.raises(inert.JournalError, match="database is locked") as failed:
            journal.begin(commit, "t")
        assert "waited 100 ms" not in str(failed.value)
    finally:
        other.execute("ROLLBACK")
        other.close()
    journal.begin(record("k3"), "t")  # the lock is free: this one succeeds, and patience is back
    journal.begin(record("k4"), "t")
    impatient = [s for s in statements if s.startswith("PRAGMA busy_timeout =")]
    assert impatient == ["PRAGMA busy_timeout = 100", "PRAGMA busy_timeout = 200"] * 3
    assert [e.commit_key for e in journal.entries()] == ["k3", "k4"]
    journal.close()


@pytest.mark.parametrize("given, waits_ms", [(0, 0), (0.25, 250), (30, 30000), (1e300, 2**31 - 1)])
def test_busy_timeout_is_how_long_a_write_waits_for_a_lock(tmp_path: Path, given: float, waits_ms: int) -> None:
    """The wait for a lock another process holds was a fixed 30 s, which a call's deadline
    does not cut short under threads; a longer one than SQLite takes wrapped around to none."""
    with inert.SqliteJournal(tmp_path / "j.sqlite", busy_timeout=given) as journal:
        assert journal._db.execute("PRAGMA busy_timeout").fetchone() == (waits_ms,)


@pytest.mark.parametrize("given", [-1, float("nan"), float("inf"), "30", True, None])
def test_a_bad_busy_timeout_is_refused_before_the_file_is_made(tmp_path: Path, given: Any) -> None:
    with pytest.raises((inert.InertTypeError, inert.InertValueError), match="busy_timeout must be"):
        inert.SqliteJournal(tmp_path / "j.sqlite", busy_timeout=given)
    assert list(tmp_path.iterdir()) == []


def test_a_short_busy_timeout_fails_an_intent_under_a_held_lock_without_running_it(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = inert.SqliteJournal(path, busy_timeout=0.05)
    ran: list[int] = []
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        orch = inert.Orchestrator({"send": "write"}, {"send": ran.append}, turn_key="t", journal=journal)
        orch.draft([block("send", to="bo")])
        orch.verify(1)
        [call] = orch.finish(strict=False).results
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert ran == [] and isinstance(call.error, inert.JournalError) and "was not run" in str(call.error)
