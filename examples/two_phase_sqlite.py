"""A two-phase tool over a real SQLite transaction: ``prepare`` opens the
transaction and stages the statements (nothing is visible to any other
connection), ``commit`` makes them visible, ``abort`` rolls them back.

Under ``read_eager`` inert prepares as soon as the call closes in the draft, so
the slow part (here, the statements; in production, locks, checks, network
round trips) overlaps decoding, and the effect still appears only when every
token of the call is accepted.

SQLite holds one writer at a time, so two staged transfers on one database
prepare one after the other; a PostgreSQL back end stages them side by side.

    python examples/two_phase_sqlite.py
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import inert


@dataclass
class Staged:
    """An open transaction and what it will do."""

    db: sqlite3.Connection
    source: str
    target: str
    amount: int


class Transfer:
    """Moves ``amount`` from one account to another, in two phases."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)

    def prepare(self, source: str, target: str, amount: int) -> Staged:
        db = sqlite3.connect(self.path, isolation_level=None, timeout=30, check_same_thread=False)
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("UPDATE accounts SET balance = balance - ? WHERE name = ?", (amount, source))
            db.execute("UPDATE accounts SET balance = balance + ? WHERE name = ?", (amount, target))
        except BaseException:
            db.execute("ROLLBACK")
            db.close()
            raise
        return Staged(db, source, target, amount)

    def commit(self, staged: Staged, *, idempotency_key: str) -> str:
        try:
            staged.db.execute(
                "INSERT INTO transfers (key, source, target, amount) VALUES (?, ?, ?, ?)",
                (idempotency_key, staged.source, staged.target, staged.amount),
            )
            staged.db.execute("COMMIT")
        finally:
            staged.db.close()
        return f"moved {staged.amount} from {staged.source} to {staged.target}"

    def abort(self, staged: Staged) -> None:
        try:
            staged.db.execute("ROLLBACK")
        finally:
            staged.db.close()


def create_bank(path: str | Path, balances: dict[str, int]) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE IF NOT EXISTS accounts (name TEXT PRIMARY KEY, balance INTEGER NOT NULL)")
        db.execute(
            "CREATE TABLE IF NOT EXISTS transfers (key TEXT PRIMARY KEY, source TEXT, target TEXT, amount INTEGER)"
        )
        db.executemany("INSERT OR REPLACE INTO accounts VALUES (?, ?)", balances.items())
    db.close()


def balances(path: str | Path) -> dict[str, int]:
    db = sqlite3.connect(path)
    try:
        return dict(db.execute("SELECT name, balance FROM accounts ORDER BY name"))
    finally:
        db.close()


def main() -> int:
    call = '<tool_call>{"name": "transfer", "arguments": {"source": "ana", "target": "bo", "amount": %d}}</tool_call>'
    with tempfile.TemporaryDirectory() as tmp:
        bank = Path(tmp) / "bank.sqlite"
        create_bank(bank, {"ana": 100, "bo": 0})
        effects = {"transfer": inert.ToolSpec("write", reads=["source", "target"], writes=["source", "target"])}
        orch = inert.Orchestrator(effects, {"transfer": Transfer(bank)}, turn_key="demo-transfer")
        orch.draft([call % 70])  # the draft model guessed 70; the transfer is prepared at once
        print("after the draft:   ", balances(bank), "(prepared, invisible)")
        orch.verify(0, call % 7)  # the target wrote 7: the staged 70 is rolled back, 7 is prepared
        report = orch.finish()
        print("after the turn:    ", balances(bank))
        print("committed:         ", [r.result for r in report.results])
        return 0 if balances(bank) == {"ana": 93, "bo": 7} else 1


if __name__ == "__main__":
    sys.exit(main())
