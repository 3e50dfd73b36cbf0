"""`inert demo`: replays the incident that speculative tool dispatch causes,
against a real SQLite database, with and without inert's gate.

One Hermes turn makes three calls: A creates reports/q3, B deletes the
sibling reports/q2, C reads reports/q2 to confirm. The draft model misspells
A's name ("reprots/q3"); the verifier rejects from that token. Dispatching as
blocks close in the draft (`eager_unsafe`) leaves the misspelled resource
behind and lets C read q2 before B's delete lands; `read_eager` does neither.
A third run makes A a two-phase create under `read_eager`: its prepare (the
slow part: it stages the report where no other connection can see it) runs on
the draft, the misspelled name is aborted, and only the accepted name is
committed, after the verifier accepted A's block.

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
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import CallClosed, EffectClass, Orchestrator, Report, ToolSpec
from .audit.trace import check_appendable
from .errors import InertValueError
from .files import cannot_read, special_file
from .journal import sqlite_file

__all__ = ["DRAFT", "RUNS", "TARGET", "DemoRun", "demo_ok", "run_demo", "run_policy", "two_phase_ok"]

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

VISIBLE = "in resources, as another connection reads it"
INVISIBLE = "not in resources, as another connection reads it"
ACCEPTING = "the verifier is about to accept A's block"

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
    two_phase: bool = False
    """A was a two-phase create: prepare on the draft, commit after acceptance, abort on rejection."""
    phase_problems: list[str] = field(default_factory=list)
    """What the database shows against A's two phases: the draft's name visible or committed, a
    commit before the verifier accepted A's block, a prepare ended by neither one commit nor one abort."""

    @property
    def name(self) -> str:
        """The run's name in the ops table and the output."""
        return f"{self.policy}+two_phase" if self.two_phase else self.policy

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
                    "CREATE TABLE IF NOT EXISTS ops "
                    "(seq INTEGER PRIMARY KEY, run TEXT, t_ms REAL, op TEXT, name TEXT, outcome TEXT)"
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
            db = self._local.db = self.connection()
        return db

    def connection(self) -> sqlite3.Connection:
        """A new connection of its own (closed by ``snapshot`` at the latest)."""
        db = sqlite_file.connect(self.path, timeout=STAGING_LIMIT_S, check_same_thread=False)
        with self._lock:
            self._opened.append(db)
        return db

    def log(self, db: sqlite3.Connection, op: str, name: str, outcome: str) -> None:
        t_ms = (time.perf_counter() - self.t0) * 1000
        db.execute(
            "INSERT INTO ops (run, t_ms, op, name, outcome) VALUES (?, ?, ?, ?, ?)", (self.run, t_ms, op, name, outcome)
        )

    def note(self, op: str, name: str, outcome: str) -> None:
        """Logs what the decode loop did or saw, from a connection of its own."""
        db = self.connection()
        try:
            with db:
                self.log(db, op, name, outcome)
        finally:
            db.close()

    def look(self, name: str) -> bool:
        """Whether ``resources`` holds ``name``, as another connection sees it (logged as LOOK)."""
        db = self.connection()
        try:
            with db:
                found = db.execute("SELECT 1 FROM resources WHERE name = ?", (name,)).fetchone() is not None
                self.log(db, "LOOK", name, VISIBLE if found else INVISIBLE)
        finally:
            db.close()
        return found

    def create_report(self, name: str, body: str) -> str:
        db = self._db()
        with db:
            db.execute("INSERT OR REPLACE INTO resources VALUES (?, ?)", (name, body))
            self.log(db, "INSERT", name, "created")
        return f"created {name}"

    def delete_report(self, name: str, idempotency_key: str) -> str:
        self.staging.await_delete()
        db = self._db()
        with db:
            gone = db.execute("DELETE FROM resources WHERE name = ?", (name,)).rowcount
            self.log(db, "DELETE", name, "deleted" if gone else "no such row")
        return f"deleted {name}" if gone else f"{name} was already gone"

    def read_report(self, name: str) -> str:
        try:
            db = self._db()
            with db:
                row = db.execute("SELECT body FROM resources WHERE name = ?", (name,)).fetchone()
                self.log(db, "SELECT", name, "found" if row else "not found")
            return f"{name}: {row[0]}" if row else f"{name} does not exist"
        finally:
            self.staging.read_answered()

    def snapshot(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        with self._lock:
            for db in self._opened:
                db.close()
            self._opened.clear()
        db = sqlite_file.connect(self.path)
        try:
            ops = [
                {"t_ms": round(t, 1), "op": op, "name": name, "outcome": outcome}
                for t, op, name, outcome in db.execute(
                    "SELECT t_ms, op, name, outcome FROM ops WHERE run = ? ORDER BY seq", (self.run,)
                )
            ]
            rows = dict(db.execute("SELECT name, body FROM resources ORDER BY name"))
        finally:
            db.close()
        return ops, rows


class _Phases:
    """What A's two-phase tool has done, for the decode loop to wait on: events, never sleeps."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._done: Counter[tuple[str, str]] = Counter()

    def happened(self, phase: str, name: str) -> None:
        with self._cond:
            self._done[phase, name] += 1
            self._cond.notify_all()

    def wait(self, name: str, *phases: str) -> bool:
        """Waits until one of ``phases`` of ``name`` has happened; ``False`` past the bound on a
        hang (the verdict then says what did not happen, from the database)."""
        with self._cond:
            return self._cond.wait_for(lambda: any(self._done[p, name] for p in phases), timeout=STAGING_LIMIT_S)


@dataclass
class _Staged:
    """A report staged by A's prepare: its own connection, and in it a temporary table that
    no other connection can see."""

    db: sqlite3.Connection
    name: str


class _StagedCreate:
    """A as a two-phase create. ``prepare`` stages the report in a temporary table of its own
    connection (in production the slow part: rendering and checking the report), which no
    other connection sees; ``commit`` copies it into ``resources`` in one transaction;
    ``abort`` drops it. Each phase is logged in ``ops`` as it ends."""

    def __init__(self, world: _World, phases: _Phases) -> None:
        self.world, self.phases = world, phases

    def prepare(self, name: str, body: str) -> _Staged:
        db = self.world.connection()
        with db:
            db.execute("CREATE TEMP TABLE staged (name TEXT PRIMARY KEY, body TEXT)")
            db.execute("INSERT INTO temp.staged VALUES (?, ?)", (name, body))
            self.world.log(db, "PREPARE", name, "staged in A's own connection")
        self.phases.happened("prepare", name)
        return _Staged(db, name)

    def commit(self, staged: _Staged, *, idempotency_key: str) -> str:
        try:
            with staged.db:
                staged.db.execute("INSERT OR REPLACE INTO resources SELECT name, body FROM temp.staged")
                self.world.log(staged.db, "COMMIT", staged.name, "created")
        finally:
            staged.db.close()
        self.phases.happened("commit", staged.name)
        return f"created {staged.name}"

    def abort(self, staged: _Staged) -> None:
        try:
            with staged.db:
                staged.db.execute("DROP TABLE temp.staged")
                self.world.log(staged.db, "ABORT", staged.name, "dropped; never in resources")
        finally:
            staged.db.close()
        self.phases.happened("abort", staged.name)


def _open_demo_db(path: Path) -> sqlite3.Connection:
    """Opens ``path``, refusing a database that holds anything but the demo's own tables:
    the demo empties its ``resources`` table, so it must never be pointed at real data.

    Raises:
        InertValueError: ``path`` is not a SQLite file, cannot be read or opened, or is someone else's database.
    """
    if (kind := special_file(path)) is not None:
        raise InertValueError(f"{path}: is {kind}, not a SQLite file; pass the path of a file (created when missing)")
    if path.is_dir():  # SQLite says only "unable to open database file"
        raise InertValueError(
            f"{path}: is a folder, not a SQLite file; pass the path of a file (created when missing), "
            f"such as {path / 'world.sqlite'}"
        )
    if (why := cannot_read(path)) is not None:  # SQLite says only "unable to open database file"
        raise InertValueError(why)
    try:
        db = sqlite_file.connect(path, timeout=STAGING_LIMIT_S)
    except sqlite3.Error as e:
        raise InertValueError(f"{path}: cannot open it as a SQLite database: {e}") from None
    try:
        names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        tables = {n: [c for (c,) in db.execute("SELECT name FROM pragma_table_info(?)", (n,))] for n in names}
    except sqlite3.Error as e:
        db.close()
        if isinstance(e, sqlite3.OperationalError) and "locked" in str(e).lower():
            raise InertValueError(
                f"{path}: another program holds the database locked (waited {STAGING_LIMIT_S:g} s); "
                "close it, or pass another path"
            ) from None
        raise InertValueError(f"{path}: not a SQLite database the demo can use: {e}") from None
    foreign = sorted(n for n, cols in tables.items() if _TABLES.get(n) != cols)
    if foreign:
        db.close()
        raise InertValueError(
            f"{path}: holds tables that are not the demo's ({', '.join(foreign)}); "
            "the demo rewrites its database, so pass a new file or one an earlier demo wrote"
        )
    return db


def _decode(orch: Orchestrator) -> int:
    """Speculative decoding of TARGET: the first window is the whole faulty draft,
    the verifier accepts up to the slip and corrects it; later windows are right.
    Returns how many reads the orchestrator dispatched."""
    target, draft = tokenize(TARGET), tokenize(DRAFT)
    steps = [orch.draft(draft)]
    n = next(i for i, (t, d) in enumerate(zip(target, draft, strict=True)) if t != d)
    steps.append(orch.verify(n, correction=target[n]))
    pos = n + 1
    while pos < len(target):
        window = target[pos : pos + WINDOW]
        steps.append(orch.draft(window))
        steps.append(orch.verify(len(window)))
        pos += len(window)
    return sum(1 for step in steps for record in step.dispatched if record.name == "read_report")


def _decode_staged(orch: Orchestrator, world: _World, phases: _Phases) -> int:
    """``_decode`` with A two-phase, staged by events so that the database's log reads the
    same every time: A's prepare of the draft's name stages before the verifier answers, and
    another connection looks for that name meanwhile; the rejected prepare aborts before
    decoding goes on; A's accepted prepare stages before its block is verified, and commits
    before decoding goes on. Returns how many reads the orchestrator dispatched."""
    target, draft = tokenize(TARGET), tokenize(DRAFT)
    steps = [orch.draft(draft)]
    phases.wait(SLIP, "prepare")
    world.look(SLIP)
    n = next(i for i, (t, d) in enumerate(zip(target, draft, strict=True)) if t != d)
    steps.append(orch.verify(n, correction=target[n]))
    phases.wait(SLIP, "abort", "commit")  # it must abort; if it commits instead, the verdict says so
    pos = n + 1
    while pos < len(target):
        window = target[pos : pos + WINDOW]
        steps.append(step := orch.draft(window))
        closed = [
            o.call.arguments.get("name", "")
            for o in step.outcomes
            if isinstance(o, CallClosed) and o.call.name == "create_report"
        ]
        for name in closed:
            phases.wait(name, "prepare")
            world.note("ACCEPT", name, ACCEPTING)
        steps.append(orch.verify(len(window)))
        for name in closed:
            phases.wait(name, "commit", "abort")
        pos += len(window)
    return sum(1 for step in steps for record in step.dispatched if record.name == "read_report")


def _judge_phases(run: DemoRun) -> None:
    """Fills in ``phase_problems`` from the ops the database logged: the draft's name prepared on
    the draft, invisible meanwhile, aborted and never committed; the accepted name committed
    once, after the verifier accepted A's block; every prepare ended by one commit or one abort."""
    ops = [(o["op"], o["name"], o["outcome"]) for o in run.operations]
    problems = run.phase_problems
    seen = [(op, name) for op, name, _ in ops]
    order = {entry: i for i, entry in reversed(list(enumerate(seen)))}  # the first occurrence of each
    if ("PREPARE", SLIP) not in order or ("LOOK", SLIP) not in order or order["PREPARE", SLIP] > order["LOOK", SLIP]:
        problems.append(f"A's prepare of {SLIP!r} did not run on the draft")
    if any(op == "LOOK" and outcome != INVISIBLE for op, _, outcome in ops):
        problems.append(f"another connection saw {SLIP!r} in resources while it was staged")
    if ("COMMIT", SLIP) in order or SLIP in run.rows:
        problems.append(f"the draft's name {SLIP!r} was committed")
    accepted = [c.arguments.get("name", "") for c in run.report.results if c.name == "create_report"]
    for name in accepted:
        commits = seen.count(("COMMIT", name))
        if commits != 1:
            problems.append(f"{name!r} was committed {commits} times, not once")
        elif ("ACCEPT", name) not in order or order["COMMIT", name] < order["ACCEPT", name]:
            problems.append(f"{name!r} was committed before the verifier accepted A's block")
    prepared = Counter(name for op, name in seen if op == "PREPARE")
    ended = Counter(name for op, name in seen if op in ("COMMIT", "ABORT"))
    for name in sorted(prepared | ended):
        if prepared[name] != ended[name]:
            problems.append(f"{name!r}: prepared {prepared[name]} time(s), committed or aborted {ended[name]}")


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
            f"[{v.kind}] {v.message}"
            for r in run.report.dispatch_log
            if r.commit_key in orphan_keys and r.arguments.get("name") == name
            for v in violations
            if v.commit_key == r.commit_key
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
        run.named[divergence] = [
            f"[{v.kind}] {v.message}"
            for v in violations
            if v.kind == "stale_read" and v.commit_key == result.commit_key
        ]
    run.unexplained = [d for d in run.divergences if not run.named[d]]


def run_policy(policy: str, db_path: Path, trace: str | Path | None = None, *, two_phase: bool = False) -> DemoRun:
    """Runs the incident under ``policy`` against ``db_path``; with ``two_phase``, A is a two-phase create."""
    staging = _Staging(deletes_wait_for_reads=policy == "eager_unsafe")
    name = f"{policy}+two_phase" if two_phase else policy
    world = _World(db_path, name, staging)
    phases = _Phases()
    effects = {
        "create_report": ToolSpec(EffectClass.WRITE, reads="name", writes="name"),
        "delete_report": ToolSpec(EffectClass.IDEMPOTENT, reads="name", writes="name"),
        "read_report": ToolSpec(EffectClass.READ_ONLY, reads="name"),
    }
    create: Any = _StagedCreate(world, phases) if two_phase else world.create_report
    tools: dict[str, Callable[..., Any]] = {
        "create_report": create,
        "delete_report": world.delete_report,
        "read_report": world.read_report,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager_unsafe warns by design; here it is the point
        orch = Orchestrator(
            effects, tools, format="hermes", turn_key=f"demo-{name}", policy=policy, trace=trace, max_workers=8
        )
    reads = 0
    try:
        reads = _decode_staged(orch, world, phases) if two_phase else _decode(orch)
    finally:
        staging.decoding_ended(reads_dispatched=reads)  # even on a failure, so that no delete waits forever
    report = orch.finish(strict=False)
    ops, rows = world.snapshot()
    run = DemoRun(policy, ops, rows, report, [], two_phase=two_phase)
    _judge(run)
    if two_phase:
        _judge_phases(run)
    return run


RUNS = (("eager_unsafe", False), ("read_eager", False), ("read_eager", True))
"""The demo's runs: policy, and whether A is a two-phase create."""


def run_demo(db: str | Path | None = None, trace: str | Path | None = None) -> list[DemoRun]:
    """Runs the incident under ``eager_unsafe`` and ``read_eager``, then under ``read_eager``
    with A a two-phase create, against one database file, appending the turns to ``trace``.

    Raises:
        InertValueError: ``db`` is not a SQLite file the demo may rewrite, or ``trace`` is
            not a file to append a trace to (see ``check_appendable``).
        OSError: ``trace`` cannot be read or written.
    """
    if trace is not None:
        check_appendable(trace)  # before the database is touched: a bad trace changes nothing
    if db is not None:
        return [run_policy(p, Path(db), trace, two_phase=t) for p, t in RUNS]
    with tempfile.TemporaryDirectory(prefix="inert-demo-") as tmp:
        return [run_policy(p, Path(tmp) / "world.sqlite", trace, two_phase=t) for p, t in RUNS]


def two_phase_ok(run: DemoRun) -> bool:
    """The two-phase run matches the accepted stream and A's phases kept the draft's name inert."""
    return not run.report.violations and not run.divergences and not run.phase_problems


def demo_ok(runs: list[DemoRun]) -> bool:
    """inert's runs match the accepted stream (the two-phase one with A's phases as they must be),
    the unsafe run showed the incident in the database, and every divergence of the unsafe run is named."""
    unsafe, safe, *staged = runs
    return (
        not safe.report.violations
        and not safe.divergences
        and unsafe.shows_incident
        and not unsafe.unexplained
        and all(two_phase_ok(r) for r in staged)
    )
