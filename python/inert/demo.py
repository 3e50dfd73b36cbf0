"""`inert demo`: replays the incident that speculative tool dispatch causes,
against a real SQLite database, with and without inert's gate.

One Hermes turn makes three calls: A creates reports/q3, B deletes the
sibling reports/q2, C reads reports/q2 to confirm. The draft model misspells
A's name ("reprots/q3"); the verifier rejects from that token. Dispatching as
blocks close in the draft (`eager_unsafe`) leaves the misspelled resource
behind and lets C read q2 before B's delete lands; `read_eager` does neither.
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

from .effects import EffectClass, ToolSpec
from .orchestrator import Orchestrator
from .report import Report

__all__ = ["DemoRun", "run_demo", "TARGET", "DRAFT"]

INTRO = "I'll publish the Q3 report, retire Q2, and confirm Q2 is gone.\n"
CALLS = (
    '<tool_call>\n{"name": "create_report", "arguments": {"name": "%s", "body": "Q3 revenue up 4%%"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "delete_report", "arguments": {"name": "reports/q2"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "read_report", "arguments": {"name": "reports/q2"}}\n</tool_call>'
)
TARGET = INTRO + CALLS % "reports/q3"
DRAFT = INTRO + CALLS % "reprots/q3"  # the draft model's slip, inside A's arguments

SEED_ROWS = {"reports/q1": "Q1 revenue flat", "reports/q2": "Q2 revenue down 2%"}

# Latencies that make the race deterministic: a delete takes far longer than
# the whole decode loop, so a read dispatched beside it always wins the race.
CREATE_S, DELETE_S = 0.02, 0.08
WINDOW = 8


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
    unexplained: list[str] = field(default_factory=list)
    """Divergences of the world that no violation in the report names."""


class _World:
    """The SQLite database the tools act on, and the log of every operation."""

    def __init__(self, path: Path, run: str) -> None:
        self.path, self.run = path, run
        self.t0 = time.perf_counter()
        self._local = threading.local()
        db = sqlite3.connect(path)
        with db:
            db.execute("CREATE TABLE IF NOT EXISTS resources (name TEXT PRIMARY KEY, body TEXT)")
            db.execute(
                "CREATE TABLE IF NOT EXISTS ops (seq INTEGER PRIMARY KEY, run TEXT, t_ms REAL, op TEXT, name TEXT, outcome TEXT)"
            )
            db.execute("DELETE FROM resources")
            db.execute("DELETE FROM ops WHERE run = ?", (run,))
            db.executemany("INSERT INTO resources VALUES (?, ?)", SEED_ROWS.items())
        db.close()

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = sqlite3.connect(self.path, timeout=5)
        return db

    def _log(self, db: sqlite3.Connection, op: str, name: str, outcome: str) -> None:
        t_ms = (time.perf_counter() - self.t0) * 1000
        db.execute("INSERT INTO ops (run, t_ms, op, name, outcome) VALUES (?, ?, ?, ?, ?)", (self.run, t_ms, op, name, outcome))

    def create_report(self, name: str, body: str) -> str:
        time.sleep(CREATE_S)
        db = self._db()
        with db:
            db.execute("INSERT OR REPLACE INTO resources VALUES (?, ?)", (name, body))
            self._log(db, "INSERT", name, "created")
        return f"created {name}"

    def delete_report(self, name: str, idempotency_key: str) -> str:
        time.sleep(DELETE_S)
        db = self._db()
        with db:
            gone = db.execute("DELETE FROM resources WHERE name = ?", (name,)).rowcount
            self._log(db, "DELETE", name, "deleted" if gone else "no such row")
        return f"deleted {name}" if gone else f"{name} was already gone"

    def read_report(self, name: str) -> str:
        db = self._db()
        with db:
            row = db.execute("SELECT body FROM resources WHERE name = ?", (name,)).fetchone()
            self._log(db, "SELECT", name, "found" if row else "not found")
        return f"{name}: {row[0]}" if row else f"{name} does not exist"

    def snapshot(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        db = sqlite3.connect(self.path)
        ops = [
            {"t_ms": round(t, 1), "op": op, "name": name, "outcome": outcome}
            for t, op, name, outcome in db.execute("SELECT t_ms, op, name, outcome FROM ops WHERE run = ? ORDER BY seq", (self.run,))
        ]
        rows = dict(db.execute("SELECT name, body FROM resources ORDER BY name"))
        db.close()
        return ops, rows


def _decode(orch: Orchestrator) -> None:
    """Speculative decoding of TARGET: the first window is the whole faulty draft,
    the verifier accepts up to the slip and corrects it; later windows are right."""
    target, draft = tokenize(TARGET), tokenize(DRAFT)
    orch.draft(draft)
    n = next(i for i, (t, d) in enumerate(zip(target, draft)) if t != d)
    orch.verify(n, correction=target[n])
    pos = n + 1
    while pos < len(target):
        window = target[pos : pos + WINDOW]
        orch.draft(window)
        orch.verify(len(window))
        pos += len(window)


def _expected_world(report: Report) -> tuple[dict[str, str], dict[str, bool]]:
    """The rows and read answers that the accepted calls, applied in stream order, imply."""
    rows, reads = dict(SEED_ROWS), {}
    for call in report.accepted:
        name = call.arguments.get("name", "")
        if call.name == "create_report":
            rows[name] = call.arguments.get("body", "")
        elif call.name == "delete_report":
            rows.pop(name, None)
        elif call.name == "read_report":
            reads[call.commit_key] = name in rows
    return rows, reads


def _divergences(run: DemoRun) -> tuple[list[str], list[str]]:
    """What in the world differs from the accepted stream, and which of those no violation names."""
    rows, reads = _expected_world(run.report)
    found, unexplained = [], []
    named = {(v.kind, v.tool) for v in run.report.violations}
    orphan_names = {r.arguments.get("name") for r in run.report.dispatch_log
                    if any(v.kind == "orphan" and v.commit_key == r.commit_key for v in run.report.violations)}
    for name in sorted(set(rows) | set(run.rows)):
        if rows.get(name) != run.rows.get(name):
            what = "persists" if name in run.rows else "is missing"
            found.append(f"row {name!r} {what}, but the accepted calls say otherwise")
            if name not in orphan_names:
                unexplained.append(found[-1])
    for result in run.report.results:
        if result.name == "read_report" and result.commit_key in reads:
            saw = not str(result.result).endswith("does not exist")
            if saw != reads[result.commit_key]:
                found.append(f"read_report answered {result.result!r}, stale against the accepted stream")
                if ("stale_read", "read_report") not in named:
                    unexplained.append(found[-1])
    return found, unexplained


def run_policy(policy: str, db_path: Path, trace: str | Path | None = None) -> DemoRun:
    world = _World(db_path, policy)
    effects = {
        "create_report": ToolSpec(EffectClass.WRITE, reads="name", writes="name"),
        "delete_report": ToolSpec(EffectClass.IDEMPOTENT, reads="name", writes="name"),
        "read_report": ToolSpec(EffectClass.READ_ONLY, reads="name"),
    }
    tools: dict[str, Callable[..., Any]] = {"create_report": world.create_report, "delete_report": world.delete_report, "read_report": world.read_report}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager_unsafe warns by design; here it is the point
        orch = Orchestrator(effects, tools, format="hermes", turn_key=f"demo-{policy}", policy=policy, trace=trace)
    _decode(orch)
    report = orch.finish(strict=False)
    ops, rows = world.snapshot()
    run = DemoRun(policy, ops, rows, report, [])
    run.divergences, run.unexplained = _divergences(run)
    return run


def run_demo(db: str | Path | None = None, trace: str | Path | None = None) -> list[DemoRun]:
    """Runs the incident under ``eager_unsafe`` and ``read_eager`` against one database
    file, appending both turns to ``trace`` when given."""
    if db is not None:
        return [run_policy(p, Path(db), trace) for p in ("eager_unsafe", "read_eager")]
    with tempfile.TemporaryDirectory(prefix="inert-demo-") as tmp:
        return [run_policy(p, Path(tmp) / "world.sqlite", trace) for p in ("eager_unsafe", "read_eager")]


def demo_ok(runs: list[DemoRun]) -> bool:
    """inert's run is consistent, and every divergence of the unsafe run is named."""
    unsafe, safe = runs
    return safe.report.consistent and not safe.divergences and not unsafe.unexplained and bool(unsafe.divergences)
