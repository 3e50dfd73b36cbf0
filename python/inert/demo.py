"""`inert demo`: replays the incident that speculative tool dispatch causes,
against a real SQLite database, with and without inert's gate.

One Hermes turn makes three calls: A creates reports/q3, B deletes the
sibling reports/q2, C reads reports/q2 to confirm. The draft model misspells
A's name ("reprots/q3"); the verifier rejects from that token. Dispatching as
blocks close in the draft (`eager_unsafe`) leaves the misspelled resource
behind and lets C read q2 before B's delete lands; `read_eager` does neither.

The verdict comes from the database: a divergence is a row or a read answer
that differs from what the accepted calls, applied in stream order, imply.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import EffectClass, Orchestrator, Report, ToolSpec
from .errors import InertValueError

__all__ = ["DRAFT", "TARGET", "DemoRun", "demo_ok", "run_demo"]

INTRO = "I'll publish the Q3 report, retire Q2, and confirm Q2 is gone.\n"
CALLS = (
    '<tool_call>\n{"name": "create_report", "arguments": {"name": "%s", "body": "Q3 revenue up 4%%"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "delete_report", "arguments": {"name": "reports/q2"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "read_report", "arguments": {"name": "reports/q2"}}\n</tool_call>'
)
TARGET = INTRO + CALLS % "reports/q3"
DRAFT = INTRO + CALLS % "reprots/q3"  # the draft model's slip, inside A's arguments
SLIP = "reprots/q3"

SEED_ROWS = {"reports/q1": "Q1 revenue flat", "reports/q2": "Q2 revenue down 2%"}
WINDOW = 8
STAGING_LIMIT_S = 30.0
"""How long a tool waits for its turn before the demo declares its staging broken.
A bound on a hang, never a race to win: no outcome depends on it."""

_TABLES = {
    "resources": ["name", "body"],
    "ops": ["seq", "run", "t_ms", "op", "name", "outcome"],
}


def tokenize(text: str) -> list[str]:
    """A small deterministic tokenizer: words, runs of spaces, 1-2 punctuation marks."""
    return re.findall(r"\w+|\s+|[^\w\s]{1,2}", text)


@dataclass
class DemoRun:
    """One policy's run of the incident."""

    policy: str
    operations: list[dict[str, Any]]
    rows: dict[str, str]
    report: Report
    divergences: list[str]
    """What the database shows that the accepted calls, applied in stream order, do not say."""
    unexplained: list[str] = field(default_factory=list)
    """Divergences that no violation in the report names."""
    stale_reads: list[str] = field(default_factory=list)
    """Committed reads whose answer, as the database gave it, contradicts the accepted stream."""
    stray_rows: list[str] = field(default_factory=list)
    """Rows whose final state contradicts the accepted stream."""
    named: dict[str, list[str]] = field(default_factory=dict)
    """Divergence -> the messages of the violations that name it."""

    @property
    def shows_incident(self) -> bool:
        """The incident as it happened in production: the misspelled row persists and
        C's committed read answered with the row that B had deleted."""
        return SLIP in self.stray_rows and bool(self.stale_reads)


class _Staging:
    """Orders the incident's race with events, never with sleeps that must win.

    The incident's premise is a slow delete: B is still in flight when C reads.
    Every delete here lands only once decoding has ended (it is slower than the
    whole decode loop). Under ``eager_unsafe`` nothing orders C after B, so the
    premise is staged exactly: each delete also waits until every read the turn
    dispatched has answered. Under ``read_eager`` the gate holds C until B has
    returned, so waiting for C there would wait forever; its delete lands when
    decoding ends, which leaves a gate that wrongly let C go early the whole
    decode loop to read stale.
    """

    def __init__(self, deletes_wait_for_reads: bool) -> None:
        self._deletes_wait_for_reads = deletes_wait_for_reads
        self._cond = threading.Condition()
        self._reads_dispatched: int | None = None  # known once decoding has ended
        self._reads_answered = 0

    def decoding_ended(self, reads_dispatched: int) -> None:
        with self._cond:
            self._reads_dispatched = reads_dispatched
            self._cond.notify_all()

    def read_answered(self) -> None:
        with self._cond:
            self._reads_answered += 1
            self._cond.notify_all()

    def await_delete(self) -> None:
        def may_land() -> bool:
            if self._reads_dispatched is None:
                return False
            return not self._deletes_wait_for_reads or self._reads_answered >= self._reads_dispatched

        with self._cond:
            if not self._cond.wait_for(may_land, timeout=STAGING_LIMIT_S):
                raise RuntimeError(f"the demo's staging broke: a delete waited {STAGING_LIMIT_S} s for its turn")


class _World:
    """The SQLite database the tools act on, and the log of every operation."""

    def __init__(self, path: Path, run: str, staging: _Staging) -> None:
        self.path, self.run, self.staging = path, run, staging
        self.t0 = time.perf_counter()
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        db = _open_demo_db(path)
        try:
            with db:
                db.execute("CREATE TABLE IF NOT EXISTS resources (name TEXT PRIMARY KEY, body TEXT)")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS ops (seq INTEGER PRIMARY KEY, run TEXT, t_ms REAL, op TEXT, name TEXT, outcome TEXT)"
                )
                db.execute("DELETE FROM resources")
                db.execute("DELETE FROM ops WHERE run = ?", (run,))
                db.executemany("INSERT INTO resources VALUES (?, ?)", SEED_ROWS.items())
        except sqlite3.Error as e:
            raise InertValueError(f"{path}: cannot set up the demo's tables: {e}") from None
        finally:
            db.close()

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = sqlite3.connect(self.path, timeout=STAGING_LIMIT_S, check_same_thread=False)
            with self._lock:
                self._opened.append(db)
        return db

    def _log(self, db: sqlite3.Connection, op: str, name: str, outcome: str) -> None:
        t_ms = (time.perf_counter() - self.t0) * 1000
        db.execute("INSERT INTO ops (run, t_ms, op, name, outcome) VALUES (?, ?, ?, ?, ?)", (self.run, t_ms, op, name, outcome))

    def create_report(self, name: str, body: str) -> str:
        db = self._db()
        with db:
            db.execute("INSERT OR REPLACE INTO resources VALUES (?, ?)", (name, body))
            self._log(db, "INSERT", name, "created")
        return f"created {name}"

    def delete_report(self, name: str, idempotency_key: str) -> str:
        self.staging.await_delete()
        db = self._db()
        with db:
            gone = db.execute("DELETE FROM resources WHERE name = ?", (name,)).rowcount
            self._log(db, "DELETE", name, "deleted" if gone else "no such row")
        return f"deleted {name}" if gone else f"{name} was already gone"

    def read_report(self, name: str) -> str:
        try:
            db = self._db()
            with db:
                row = db.execute("SELECT body FROM resources WHERE name = ?", (name,)).fetchone()
                self._log(db, "SELECT", name, "found" if row else "not found")
            return f"{name}: {row[0]}" if row else f"{name} does not exist"
        finally:
            self.staging.read_answered()

    def snapshot(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        with self._lock:
            for db in self._opened:
                db.close()
            self._opened.clear()
        db = sqlite3.connect(self.path)
        try:
            ops = [
                {"t_ms": round(t, 1), "op": op, "name": name, "outcome": outcome}
                for t, op, name, outcome in db.execute(
                    "SELECT t_ms, op, name, outcome FROM ops WHERE run = ? ORDER BY seq", (self.run,))
            ]
            rows = dict(db.execute("SELECT name, body FROM resources ORDER BY name"))
        finally:
            db.close()
        return ops, rows


def _open_demo_db(path: Path) -> sqlite3.Connection:
    """Opens ``path``, refusing a database that holds anything but the demo's own tables:
    the demo empties its ``resources`` table, so it must never be pointed at real data.

    Raises:
        InertValueError: ``path`` is not a SQLite file, cannot be opened, or is someone else's database.
    """
    try:
        db = sqlite3.connect(path, timeout=STAGING_LIMIT_S)
    except sqlite3.Error as e:
        raise InertValueError(f"{path}: cannot open it as a SQLite database: {e}") from None
    try:
        names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        tables = {n: [c for (c,) in db.execute("SELECT name FROM pragma_table_info(?)", (n,))] for n in names}
    except sqlite3.Error as e:
        db.close()
        raise InertValueError(f"{path}: not a SQLite database the demo can use: {e}") from None
    foreign = sorted(n for n, cols in tables.items() if _TABLES.get(n) != cols)
    if foreign:
        db.close()
        raise InertValueError(
            f"{path}: holds tables that are not the demo's ({', '.join(foreign)}); "
            "the demo rewrites its database, so pass a new file or one an earlier demo wrote")
    return db


def _decode(orch: Orchestrator) -> int:
    """Speculative decoding of TARGET: the first window is the whole faulty draft,
    the verifier accepts up to the slip and corrects it; later windows are right.
    Returns how many reads the orchestrator dispatched."""
    target, draft = tokenize(TARGET), tokenize(DRAFT)
    steps = [orch.draft(draft)]
    n = next(i for i, (t, d) in enumerate(zip(target, draft)) if t != d)
    steps.append(orch.verify(n, correction=target[n]))
    pos = n + 1
    while pos < len(target):
        window = target[pos : pos + WINDOW]
        steps.append(orch.draft(window))
        steps.append(orch.verify(len(window)))
        pos += len(window)
    return sum(1 for step in steps for record in step.dispatched if record.name == "read_report")


def _expected_world(report: Report) -> tuple[dict[str, str], dict[str, bool]]:
    """The rows, and whether each committed read should have found its row, that the
    committed calls applied in stream order imply."""
    rows, reads = dict(SEED_ROWS), {}
    for call in report.results:
        name = call.arguments.get("name", "")
        if call.name == "create_report":
            rows[name] = call.arguments.get("body", "")
        elif call.name == "delete_report":
            rows.pop(name, None)
        elif call.name == "read_report":
            reads[call.commit_key] = name in rows
    return rows, reads


def _judge(run: DemoRun) -> None:
    """Fills in what in the database differs from the accepted stream, and which
    violations name each difference."""
    rows, reads = _expected_world(run.report)
    violations = run.report.violations
    orphan_keys = {v.commit_key for v in violations if v.kind in ("orphan", "key_divergence")}
    for name in sorted(set(rows) | set(run.rows)):
        if rows.get(name) == run.rows.get(name):
            continue
        what = "persists" if name in run.rows else "is missing"
        divergence = f"row {name!r} {what}, but the accepted calls say otherwise"
        run.stray_rows.append(name)
        run.divergences.append(divergence)
        run.named[divergence] = [
            f"[{v.kind}] {v.message}" for r in run.report.dispatch_log if r.commit_key in orphan_keys
            and r.arguments.get("name") == name for v in violations if v.commit_key == r.commit_key
        ]
    for result in run.report.results:
        if result.name != "read_report" or result.commit_key not in reads:
            continue
        found = not str(result.result).endswith("does not exist")
        if result.error is not None or found == reads[result.commit_key]:
            continue
        divergence = f"read_report answered {result.result!r}, stale against the accepted stream"
        run.stale_reads.append(result.commit_key)
        run.divergences.append(divergence)
        run.named[divergence] = [f"[{v.kind}] {v.message}" for v in violations
                                 if v.kind == "stale_read" and v.commit_key == result.commit_key]
    run.unexplained = [d for d in run.divergences if not run.named[d]]


def run_policy(policy: str, db_path: Path, trace: str | Path | None = None) -> DemoRun:
    staging = _Staging(deletes_wait_for_reads=policy == "eager_unsafe")
    world = _World(db_path, policy, staging)
    effects = {
        "create_report": ToolSpec(EffectClass.WRITE, reads="name", writes="name"),
        "delete_report": ToolSpec(EffectClass.IDEMPOTENT, reads="name", writes="name"),
        "read_report": ToolSpec(EffectClass.READ_ONLY, reads="name"),
    }
    tools: dict[str, Callable[..., Any]] = {"create_report": world.create_report, "delete_report": world.delete_report, "read_report": world.read_report}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager_unsafe warns by design; here it is the point
        orch = Orchestrator(effects, tools, format="hermes", turn_key=f"demo-{policy}", policy=policy, trace=trace,
                            max_workers=8)
    reads = 0
    try:
        reads = _decode(orch)
    finally:
        staging.decoding_ended(reads_dispatched=reads)  # even on a failure, so that no delete waits forever
    report = orch.finish(strict=False)
    ops, rows = world.snapshot()
    run = DemoRun(policy, ops, rows, report, [])
    _judge(run)
    return run


def run_demo(db: str | Path | None = None, trace: str | Path | None = None) -> list[DemoRun]:
    """Runs the incident under ``eager_unsafe`` and ``read_eager`` against one database
    file, appending both turns to ``trace`` when given.

    Raises:
        InertValueError: ``db`` is not a SQLite file the demo may rewrite.
        OSError: ``trace`` cannot be written.
    """
    if db is not None:
        return [run_policy(p, Path(db), trace) for p in ("eager_unsafe", "read_eager")]
    with tempfile.TemporaryDirectory(prefix="inert-demo-") as tmp:
        return [run_policy(p, Path(tmp) / "world.sqlite", trace) for p in ("eager_unsafe", "read_eager")]


def demo_ok(runs: list[DemoRun]) -> bool:
    """inert's run matches the accepted stream, the unsafe run showed the incident
    in the database, and every divergence of the unsafe run is named."""
    unsafe, safe = runs
    return (not safe.report.violations and not safe.divergences
            and unsafe.shows_incident and not unsafe.unexplained)
