"""Naming a journal: a PostgreSQL URI or libpq keyword/value connection string is a
database, a path is a SQLite file, and a name that reads as a database address is
never quietly made a local file (issue 27, item 6). None of these needs a server:
the database named is one that does not answer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import inert
from inert.cli import main

UNANSWERED = "host=127.0.0.1 port=1 dbname=prod connect_timeout=1"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder: whatever a name turns into a file would land here."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    "name",
    [
        "postgresql://u@h/db",
        "postgres://u@h/db",
        "host=h dbname=db",
        "dbname=db",
        "  host = h   dbname = db ",
        "host=/var/run/postgresql dbname='my db' user=me",
        "service=prod",
        "host='x'dbname=y",
        "port=5432",
    ],
)
def test_a_uri_or_a_libpq_connection_string_names_a_database(name: str) -> None:
    assert inert.journal.is_dsn(name)


@pytest.mark.parametrize("name", ["calls.sqlite", "./run=3.sqlite", "data/host=x", "", "/var/lib/j.sqlite", "j"])
def test_a_path_names_a_file(name: str) -> None:
    assert not inert.journal.is_dsn(name)
    assert not inert.journal.is_dsn(Path("host=h dbname=db")), "a PathLike is always a file"


def test_a_connection_string_is_a_postgres_journal_not_a_file(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue: each of these made (or looked for) a local file named after the DSN."""
    with pytest.raises(inert.JournalError, match=r"PostgreSQL journal host=127\.0\.0\.1 .*cannot connect"):
        inert.Orchestrator({"f": "write"}, {"f": lambda: 1}, journal=UNANSWERED, turn_key="t")
    with pytest.raises(inert.JournalError, match="cannot connect"):
        inert.recover(UNANSWERED)
    for command in ("journal", "init"), ("recover",):
        rc, out, err = cli(capsys, *command, UNANSWERED)
        assert rc == 2 and out == "" and "Traceback" not in err
        assert err.startswith(f"inert {command[0]}: PostgreSQL journal host=127.0.0.1 port=1 dbname=prod")
        assert "cannot connect" in err
    assert list(workdir.iterdir()) == [], "no file was created"


def test_a_connection_strings_password_never_reaches_a_message(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = UNANSWERED + " password='s3 cret'"
    with pytest.raises(inert.JournalError) as caught:
        inert.PostgresJournal(secret)
    assert "s3 cret" not in str(caught.value) and "password=***" in str(caught.value)
    rc, _, err = cli(capsys, "recover", secret)
    assert rc == 2 and "s3 cret" not in err and "password=***" in err
    redact = inert.journal.redact
    assert redact("host=h password=pw dbname='a b'") == "host=h password=*** dbname='a b'"
    assert redact("host=h password='it''s'") == "the PostgreSQL journal", "not a connection string: nothing shown"
    assert redact("host=h password=a\\ b") == "host=h password=***"
    # The SSL key's passphrase too (found by a helper: it was printed as given).
    assert redact("host=h sslpassword=TOPSECRET") == "host=h sslpassword=***"
    assert redact("postgresql://u@h/db?sslpassword=TOPSECRET&sslmode=require") == (
        "postgresql://u@h/db?sslpassword=***&sslmode=require"
    )


AMBIGUOUS: list[tuple[str, str]] = [
    ("run=3.sqlite", r"none of its keywords \(run\) is libpq's"),
    ("hots=db dbname=x", ""),  # one libpq keyword: a database (psycopg names the typo)
    ("host='db dbname=x", r"a quote left open"),
    ("host dbname=x", r"a setting without '='"),
    ("sqlite:///calls.sqlite", r"it is a sqlite:// URI"),
    ("postgresql+psycopg://u@h/db", r"it is a postgresql\+psycopg:// URI"),
    ("POSTGRES://u@h/db", r"it is a POSTGRES:// URI"),
]


@pytest.mark.parametrize(("name", "why"), [a for a in AMBIGUOUS if a[1]])
def test_a_name_that_reads_as_neither_is_refused_and_creates_nothing(
    workdir: Path, name: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = rf"neither a PostgreSQL database nor a file path.*{why}.*pathlib\.Path\(name\)"
    calls: list[Any] = []
    with pytest.raises(inert.InertValueError, match=refused) as caught:
        inert.Orchestrator({"f": "write"}, {"f": lambda: calls.append(1)}, journal=name, turn_key="t")
    assert isinstance(caught.value, ValueError)
    with pytest.raises(inert.InertValueError, match=refused):
        inert.recover(name)
    for command in ("journal", "init"), ("recover",):
        rc, out, err = cli(capsys, *command, name)
        assert rc == 2 and out == "" and "Traceback" not in err
        assert err.startswith(f"inert {command[0]}: the journal name is neither a PostgreSQL database")
    assert list(workdir.iterdir()) == [] and calls == []


def test_a_typo_in_a_keyword_is_a_database_error_not_a_file(workdir: Path) -> None:
    with pytest.raises(inert.JournalError, match=r'not a valid PostgreSQL URI or connection string.*"hots"'):
        inert.recover("hots=db dbname=x")
    assert list(workdir.iterdir()) == []


def test_a_file_whose_name_looks_like_a_setting_is_given_as_a_path(workdir: Path) -> None:
    for name in (Path("run=3.sqlite"), "./run=4.sqlite"):
        with inert.SqliteJournal(name) as j:
            assert (
                j.begin(
                    inert.DispatchRecord(
                        "ck1-a", "f", {}, inert.EffectClass.WRITE, inert.Footprint(None, None), (0, 1), False
                    ),
                    "t",
                )
                is None
            )
        assert inert.recover(name).in_doubt
        inert.Orchestrator({"f": "read_only"}, {"f": lambda: 1}, journal=name, turn_key="t").finish()
    assert sorted(p.name for p in workdir.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        "run=3.sqlite",
        "run=4.sqlite",
    ]
    assert os.path.exists(workdir / "run=3.sqlite")


@pytest.mark.parametrize(
    "dsn, said",
    [
        ("postgresql://u@127.0.0.1:1/db?connect_timeout=abc", "bad value for connect_timeout"),
        ("host=/nonexistent/socket/dir dbname=d sslmode=bogus", 'invalid sslmode value: "bogus"'),
        ("host=/tmp dbname=d bogusopt=1", 'invalid connection option "bogusopt"'),
    ],
)
def test_a_bad_parameter_in_the_dsn_is_named_as_the_dsns_fault(
    capsys: pytest.CaptureFixture[str], dsn: str, said: str
) -> None:
    """Found by a helper: these were told to check the server's log, or that the database was
    unreachable; an unknown option's name was hidden as "…", and the message ended in a blank line."""
    pytest.importorskip("psycopg")
    rc, out, err = cli(capsys, "recover", dsn)
    assert rc == 2 and out == "" and "Traceback" not in err
    assert said in err and err.count("\n") == 1, err
    assert "server" not in err.split(said, 1)[1] and "unreachable" not in err


def test_a_quoted_piece_of_a_malformed_dsn_stays_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = cli(capsys, "recover", "host=x dbname='hunter2 user=u")
    assert rc == 2 and "hunter2" not in err and "Traceback" not in err
