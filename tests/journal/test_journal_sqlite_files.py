"""A SQLite journal's file: read as last committed, named as given, refused when it is none.

What failed before: ``recover`` read a file immutable when it had no -wal, and so read the
torn pages of a transaction a -journal beside it had still to roll back (a writer crashed
mid-transaction in rollback mode, or one was mid-transaction then); a name beginning with
``file:`` was a URI to the writers (``file:x`` opened ``x``, ``file:mem?mode=memory`` an
in-memory database) and a file to ``recover``; a name that is not UTF-8 was a traceback;
a file of a few bytes was written over into a journal; a journal of a newer schema whose
columns changed was called "not an inert journal"; and a read-only journal, opened, left a
read-only -wal and -shm beside it that kept it failing once it was made writable."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_journal_sqlite import cli, journal_with_entries, run_isolated

import inert
from inert.cli import main
from inert.journal import init_journal
from journals import record

ENTRIES = 200
"""Intents in the journal a writer tears: 2 kB each, more than a cache of 2 pages holds."""

_WRITER = textwrap.dedent("""
    import os, sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA cache_size = 2")  # its changes spill into the file mid-transaction
    db.execute("BEGIN")
    db.execute("UPDATE intents SET tool = 'UNCOMMITTED'")
    db.execute("DELETE FROM intents WHERE seq % 3 = 0")
    if sys.argv[2] == "crash":
        os._exit(0)  # dies mid-transaction: the -journal beside the file is hot
    print("in the transaction", flush=True)
    sys.stdin.readline()  # holds it until the test is done
""")


def rollback_journal(path: Path) -> None:
    """A journal of ``ENTRIES`` intents in doubt, switched to rollback-journal mode."""
    journal_with_entries(path, n=ENTRIES, complete=False)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = DELETE")
    db.close()


def files(folder: Path) -> dict[str, tuple[bytes, int]]:
    """The bytes and times of every file in ``folder``: what recovery must leave as it was."""
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def torn(path: Path) -> bool:
    """Whether the file, read as it lies (ignoring its -journal), is not what was committed:
    the writer's changes show, or its half-written pages do not even read."""
    db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        tools = db.execute("SELECT tool FROM intents").fetchall()
    except sqlite3.DatabaseError:
        return True
    finally:
        db.close()
    return tools != [("f",)] * ENTRIES


def assert_committed(rec: inert.Recovery) -> None:
    assert len(rec.in_doubt) == ENTRIES
    assert {e.tool for e in rec.in_doubt} == {"f"}, "the writer's uncommitted changes were read"


# -- a -journal beside the file: what was committed is read, on a copy --


@pytest.mark.parametrize("folder_mode", ["writable", "read-only"])
def test_recover_rolls_back_a_crashed_writers_journal_on_a_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], folder_mode: str
) -> None:
    folder = tmp_path / "j"
    folder.mkdir()
    path = folder / "j.sqlite"
    rollback_journal(path)
    crashed = subprocess.run([sys.executable, "-c", _WRITER, str(path), "crash"], check=False, timeout=60)
    assert crashed.returncode == 0
    assert Path(f"{path}-journal").exists() and torn(path), "the writer left the file torn"
    before = files(folder)
    if folder_mode == "writable":
        assert_committed(inert.recover(path))
        rc, out, _ = cli(capsys, "recover", str(path))
        assert rc == 0 and f"{ENTRIES} in doubt, 0 completed" in out and "UNCOMMITTED" not in out
    else:
        folder.chmod(0o555)
        try:
            done = run_isolated(
                f"""
                import inert
                rec = inert.recover({str(path)!r})
                print(len(rec.in_doubt), sorted({{e.tool for e in rec.in_doubt}}))
            """,
                drop_root_override=True,
            )
        finally:
            folder.chmod(0o755)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"{ENTRIES} ['f']"
    assert files(folder) == before, "recover changed the journal or its -journal, or made a file beside it"


def test_recover_reads_what_was_committed_while_a_writer_is_mid_transaction(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    rollback_journal(path)
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), "hold"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "in the transaction\n"
        assert torn(path), "the writer's changes are in the file"
        assert_committed(inert.recover(path))
    finally:
        writer.communicate("done\n", timeout=60)
    assert_committed(inert.recover(path))


# -- names: a name is the file of that name --


def test_a_name_beginning_with_file_is_that_file_to_init_the_journal_and_recover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    rc, out, err = cli(capsys, "journal", "init", "file:new.sqlite")
    assert rc == 0, err
    assert out.startswith("created the inert journal file:new.sqlite")
    assert os.listdir(tmp_path) == ["file:new.sqlite"], "another file was made, or a temporary one left"
    with inert.SqliteJournal("file:new.sqlite") as j:
        assert j.begin(record("ck1-a"), "t1") is None
    assert [e.commit_key for e in inert.recover("file:new.sqlite").in_doubt] == ["ck1-a"]
    rc, out, _ = cli(capsys, "recover", "file:new.sqlite")
    assert rc == 0 and "1 in doubt" in out


def test_a_memory_uri_is_a_file_name_to_journal_init_not_an_in_memory_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    name = "file:mem?mode=memory"
    rc, out, _ = cli(capsys, "journal", "init", name)
    assert rc == 0 and out.startswith(f"created the inert journal {name}")
    rc, out, _ = cli(capsys, "journal", "init", name)
    assert rc == 0 and out.startswith(f"checked the inert journal {name}")
    assert os.listdir(tmp_path) == [name]
    assert inert.recover(name).in_doubt == []


def test_the_demo_writes_a_database_named_file_colon_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    rc, _, err = cli(capsys, "demo", "--db", "file:world.sqlite")
    assert rc == 0, err
    assert os.listdir(tmp_path) == ["file:world.sqlite"]


@pytest.mark.skipif(sys.platform != "linux", reason="a file name that is not UTF-8 (macOS refuses one)")
def test_recover_reads_a_journal_whose_name_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = os.path.join(tmp_path, os.fsdecode(b"bad\xff?#%.sqlite"))
    journal_with_entries(Path(path), n=1)
    assert [e.status for e in inert.recover(path).completed] == ["ok"]
    rc, out, err = cli(capsys, "recover", path)
    assert rc == 0 and "0 in doubt, 1 completed" in out, err
    assert "bad\\xff?#%.sqlite" in out, "the byte that is not UTF-8 is spelled out"


# -- what is no journal, or a journal of a newer inert --


@pytest.mark.parametrize(
    "content", [b"x", b"\x00" * 50, b"SQLite format 3\x00"], ids=["one byte", "zeros", "a header cut short"]
)
def test_a_short_file_that_is_no_database_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = tmp_path / "f"
    path.write_bytes(content)
    for command in (["journal", "init"], ["recover"]):
        rc, out, err = cli(capsys, *command, str(path))
        assert rc == 2 and out == "", (command, out)
        assert f"journal {path}: it is not a SQLite database" in err, (command, err)
    with pytest.raises(inert.JournalError, match="not a SQLite database"):
        inert.SqliteJournal(path)
    assert path.read_bytes() == content
    assert os.listdir(tmp_path) == ["f"]


def test_an_empty_file_still_becomes_a_journal_by_journal_init(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "j.sqlite"
    path.touch()
    rc, out, _ = cli(capsys, "journal", "init", str(path))
    assert rc == 0 and out.startswith(f"created the inert journal {path}")
    assert inert.recover(path).in_doubt == []


def test_a_newer_journal_whose_columns_changed_says_to_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal_with_entries(path, n=1)
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE outcomes RENAME COLUMN status TO state")
    db.execute("PRAGMA user_version = 3")
    db.commit()
    db.close()
    before = path.read_bytes()
    for read in (inert.SqliteJournal, inert.recover):
        with pytest.raises(inert.JournalError, match=r"schema version 3 is newer .* written by a newer inert; upgrade"):
            read(path)
    assert path.read_bytes() == before


# -- a read-only journal: a failed open leaves nothing beside it --


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_failed_open_of_a_read_only_journal_leaves_nothing_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "j.sqlite"
    journal_with_entries(path, n=1)
    path.chmod(0o444)
    done = run_isolated(
        f"""
        from inert.cli import main
        main(["journal", "init", {str(path)!r}])
    """,
        drop_root_override=True,
    )
    assert f"inert journal: journal {path}: cannot open it: the file is read-only" in done.stderr, done.stderr
    assert os.listdir(tmp_path) == ["j.sqlite"], "a -wal or -shm was left beside it"
    path.chmod(0o644)
    rc, out, err = cli(capsys, "journal", "init", str(path))
    assert rc == 0 and out.startswith("checked"), err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_read_only_wal_and_shm_left_beside_a_journal_are_named(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    crashed = run_isolated(f"""
        import os
        import inert
        from journals import record
        j = inert.SqliteJournal({str(path)!r})
        assert j.begin(record("ck1-a", "f"), "t1") is None
        os.chmod({str(path)!r} + "-wal", 0o444)
        os.chmod({str(path)!r} + "-shm", 0o444)
        os._exit(0)
    """)
    assert crashed.returncode == 0, crashed.stderr
    done = run_isolated(
        f"""
        from inert.cli import main
        main(["journal", "init", {str(path)!r}])
    """,
        drop_root_override=True,
    )
    assert f"{path}-wal and {path}-shm beside it (left while the file was read-only) must be writable" in done.stderr
    assert main(["recover", str(path)]) == 0


def test_a_path_through_a_link_and_dotdot_is_the_file_the_kernel_finds(tmp_path: Path) -> None:
    """Found by a helper: names were made absolute with abspath, which cuts `link/..` lexically
    to the folder the link sits in, not the link target's parent: recover found no journal
    that was there, and a demo wrote beside the link. A missing folder in the way (`nosuch/..`)
    made SQLite create the file where the kernel finds none, and leave a stray temporary."""
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "lnk").symlink_to(tmp_path / "real" / "sub")
    init_journal(tmp_path / "real" / "j.sqlite")
    through = f"{tmp_path}/lnk/../j.sqlite"
    assert inert.recover(through).completed == []
    init_journal(f"{tmp_path}/lnk/../k.sqlite")
    assert (tmp_path / "real" / "k.sqlite").exists() and not (tmp_path / "k.sqlite").exists()
    before = set(os.listdir(tmp_path))
    with pytest.raises(inert.JournalError, match="is no folder"):
        init_journal(f"{tmp_path}/nosuch/../m.sqlite")
    assert set(os.listdir(tmp_path)) == before
