"""The `inert` command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import textwrap
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import __version__
from .audit import TurnAudit, audit
from .demo import SLIP, DemoRun, demo_ok, run_demo, two_phase_ok
from .errors import InertError, InertValueError, TraceWarning
from .files import cannot_read, cannot_write
from .journal import JournalEntry, init_journal, is_dsn, recover, redact

if TYPE_CHECKING:
    from .simulate import Summary

COL = 52


def _columns(left: list[str], right: list[str]) -> list[str]:
    rows = max(len(left), len(right))
    left, right = left + [""] * (rows - len(left)), right + [""] * (rows - len(right))
    return [f"  {a:<{COL}}  {b}".rstrip() for a, b in zip(left, right, strict=True)]


def _ops(run: DemoRun) -> list[str]:
    width = max([6, *(len(o["op"]) for o in run.operations)])
    return [f"{o['t_ms']:6.1f} ms  {o['op']:<{width}} {o['name']:<11} {o['outcome']}" for o in run.operations]


def _rows(run: DemoRun) -> list[str]:
    return [f"{name:<11} {body}" for name, body in run.rows.items()]


def _verdict(run: DemoRun) -> list[str]:
    r = run.report
    kinds: dict[str, int] = {}
    for v in r.violations:
        kinds[v.kind] = kinds.get(v.kind, 0) + 1
    found = ", ".join(f"{n} {k}" for k, n in kinds.items()) or "none"
    return [
        f"dispatched {len(r.dispatch_log)}, committed {len(r.results)}, discarded reads {len(r.discarded)}",
        f"violations: {found}",
        "world matches the accepted stream"
        if not run.divergences
        else f"world diverges in {len(run.divergences)} place(s)",
    ]


def _two_phase_section(run: DemoRun) -> list[str]:
    r = run.report
    staged = {d.commit_key for d in r.discarded if d.name == "create_report"}
    aborted = [d for d in r.discarded if d.commit_key in staged]
    committed = [c.arguments.get("name") for c in r.results if c.name == "create_report"]
    phases = (
        f"A's phases: {SLIP!r} prepared on the draft, never in resources, aborted; "
        + ", ".join(repr(n) for n in committed)
        + " committed once, after the verifier accepted A's block"
        if two_phase_ok(run)
        else "A's phases went wrong: " + "; ".join(run.phase_problems or run.divergences)
    )
    title = "read_eager with A a two-phase create: prepare on the draft, commit on acceptance, abort on rejection"
    return [
        "",
        title,
        "-" * len(title),
        *textwrap.wrap(
            "A's prepare stages the report in a table of its own connection, which no other connection "
            "can see; its commit copies the report into resources; its abort drops it.",
            width=110,
            initial_indent="  ",
            subsequent_indent="  ",
        ),
        "",
        "operations against the database (LOOK and ACCEPT: what the decode loop saw and did, logged with them)",
        *(f"  {line}" for line in _ops(run)),
        "",
        "final rows",
        *(f"  {line}" for line in _rows(run)),
        "",
        "inert's report",
        f"  dispatched {len(r.dispatch_log)}, committed {len(r.results)}, aborted prepares {len(aborted)}, "
        f"discarded reads {len(r.discarded) - len(aborted)}",
        f"  violations: {', '.join(sorted({v.kind for v in r.violations})) or 'none'}",
        "  world matches the accepted stream"
        if not run.divergences
        else f"  world diverges in {len(run.divergences)} place(s)",
        *textwrap.wrap(phases, width=110, initial_indent="  ", subsequent_indent="    "),
    ]


def render_demo(runs: list[DemoRun]) -> str:
    unsafe, safe, *staged = runs
    out = [
        "inert demo: one Hermes turn, three calls, one draft slip in the first call's arguments",
        "  A create_report(reports/q3)   B delete_report(reports/q2)   C read_report(reports/q2)",
        "  the draft wrote 'reprots/q3'; the verifier rejected from that token and decoding went on",
        "",
        *_columns(["eager_unsafe: dispatch on draft close", "-" * 38], ["read_eager: inert's gate", "-" * 24]),
        "",
        "operations against the database",
        *_columns(_ops(unsafe), _ops(safe)),
        "",
        "final rows",
        *_columns(_rows(unsafe), _rows(safe)),
        "",
        "inert's report",
        *_columns(_verdict(unsafe), _verdict(safe)),
        "",
        "accepted calls (the same stream under both policies)",
    ]
    for c in safe.report.results:
        out.append(f"  {c.name}({json.dumps(c.arguments)}) -> {c.result!r}{'  [early]' if c.early else ''}")
    out += ["", "what the database shows in the eager_unsafe run, and what reconciliation named for it"]
    explained: set[str] = set()
    for d in unsafe.divergences:
        out.append(f"  {d}")
        for message in unsafe.named[d]:
            explained.add(message)
            out += textwrap.wrap(message, width=110, initial_indent="    named: ", subsequent_indent="      ")
        if not unsafe.named[d]:
            out.append("    NOT NAMED by any violation")
    if not unsafe.divergences:
        out.append("  nothing: the database matches the accepted stream")
    rest = [f"[{v.kind}] {v.message}" for v in unsafe.report.violations if f"[{v.kind}] {v.message}" not in explained]
    if rest:
        out += ["", "reconciliation also named (no divergence in the database comes from these)"]
        for message in rest:
            out += textwrap.wrap(message, width=110, initial_indent="  ", subsequent_indent="    ")
    for run in staged:
        out += _two_phase_section(run)
    out += ["", *textwrap.wrap("verdict: " + _demo_verdict(runs), width=110, subsequent_indent="  ")]
    return "\n".join(out)


def _demo_verdict(runs: list[DemoRun]) -> str:
    unsafe, safe, *staged = runs
    if demo_ok(runs):
        return (
            "inert kept the rejected tokens inert; the unsafe run showed the incident in the database "
            "and every divergence of it was named"
            + (
                "; with A a two-phase create, its prepare ran on the draft, the draft's name never reached the "
                "database, and A committed once, after the verifier accepted it"
                if staged
                else ""
            )
        )
    why = []
    if safe.report.violations or safe.divergences:
        why.append("inert's run diverged from the accepted stream")
    if not unsafe.shows_incident:
        missing = [
            what
            for what, shown in (
                ("the misspelled row did not persist", "reprots/q3" in unsafe.stray_rows),
                ("C's read did not return the deleted row", bool(unsafe.stale_reads)),
            )
            if not shown
        ]
        why.append("the unsafe run did not show the incident (" + "; ".join(missing) + ")")
    if unsafe.unexplained:
        why.append(f"{len(unsafe.unexplained)} divergence(s) of the unsafe run went unnamed")
    for run in staged:
        if not two_phase_ok(run):
            what = run.phase_problems + run.divergences + [f"[{v.kind}] {v.message}" for v in run.report.violations]
            why.append("the two-phase run went wrong (" + "; ".join(what) + ")")
    return "FAILED: " + "; ".join(why)


def _demo_json(runs: list[DemoRun]) -> dict[str, Any]:
    def one(run: DemoRun) -> dict[str, Any]:
        r = run.report
        return {
            "policy": run.policy,
            "two_phase": run.two_phase,
            "operations": run.operations,
            "rows": run.rows,
            "accepted": [
                {
                    "name": c.name,
                    "arguments": c.arguments,
                    "commit_key": c.commit_key,
                    "result": c.result,
                    "error": None if c.error is None else repr(c.error),
                    "early": c.early,
                }
                for c in r.results
            ],
            "discarded": [{"name": d.name, "arguments": d.arguments, "commit_key": d.commit_key} for d in r.discarded],
            "violations": [
                {"kind": v.kind, "tool": v.tool, "span": v.span, "commit_key": v.commit_key, "message": v.message}
                for v in r.violations
            ],
            "divergences": run.divergences,
            "unexplained": run.unexplained,
            "shows_incident": run.shows_incident,
            "phase_problems": run.phase_problems,
        }

    return {"ok": demo_ok(runs), "verdict": _demo_verdict(runs), "runs": [one(r) for r in runs]}


def _audit_text(turns: list[TurnAudit]) -> str:
    out = []
    for t in turns:
        out.append(
            f"turn {t.turn!r}: {len(t.dispatched)} dispatched, {len(t.accepted)} accepted, {len(t.findings)} finding(s)"
        )
        for v in t.findings:
            out += textwrap.wrap(f"[{v.kind}] {v.message}", width=110, initial_indent="  ", subsequent_indent="    ")
    found = sum(len(t.findings) for t in turns)
    out.append("clean: the dispatched stream matches the accepted stream" if not found else f"{found} finding(s)")
    return "\n".join(out)


def _audit_json(turns: list[TurnAudit]) -> dict[str, Any]:
    return {
        "ok": not any(t.findings for t in turns),
        "turns": [
            {
                "turn": t.turn,
                "dispatched": len(t.dispatched),
                "accepted": len(t.accepted),
                "findings": [
                    {
                        "kind": v.kind,
                        "tool": v.tool,
                        "span": v.span,
                        "commit_key": v.commit_key,
                        "other_key": v.other_key,
                        "message": v.message,
                    }
                    for v in t.findings
                ],
            }
            for t in turns
        ],
    }


def _entry_json(e: JournalEntry) -> dict[str, Any]:
    return {
        "commit_key": e.commit_key,
        "turn_key": e.turn_key,
        "tool": e.tool,
        "effect": e.effect,
        "arguments": e.arguments,
        "fingerprint": e.fingerprint,
        "intent_at": e.intent_at,
        "status": e.status,
        "result": e.result,
        "error": e.error,
        "finished_at": e.finished_at,
        "worker": e.worker,
        "lease_expires_at": e.lease_expires_at,
    }


LOCK_WAIT_S = 2.0
"""Seconds ``recover`` and ``journal init`` wait for a SQLite journal another process holds
locked before they say so: the library's 30 s busy timeout, during which SQLite's wait
ignores Ctrl-C, is for workers sharing a journal, not for a person at a prompt."""


def _recover_text(name: str) -> str:
    rec = recover(name, busy_timeout=LOCK_WAIT_S)
    shown = redact(name) if is_dsn(name) else name
    flying = f", {len(rec.in_flight)} in flight" if rec.in_flight else ""
    staged = f", {len(rec.prepared)} prepared and never committed or aborted" if rec.prepared else ""
    out = [f"{shown}: {len(rec.in_doubt)} in doubt{flying}, {len(rec.completed)} completed{staged}"]
    for title, entries in (
        ("in doubt (may or may not have happened; not run again)", rec.in_doubt),
        ("in flight (a live worker holds it; its outcome is still to come)", rec.in_flight),
        ("prepared, never committed or aborted (two-phase tools: staged state to clean up)", rec.prepared),
        ("completed", rec.completed),
    ):
        if entries:
            out.append(title)
            for e in entries:
                status = e.status or (f"held by {e.worker}" if e.in_flight else "no outcome")
                call = f"{e.tool}({json.dumps(e.arguments, ensure_ascii=False)})"
                out.append(f"  {e.commit_key}  {e.effect:<10} {call}  {status}")
    return "\n".join(out)


def _simulate(args: argparse.Namespace) -> int:
    from .simulate import default_workloads, depth_workloads, load_workloads, simulate
    from .simulate.plot import check_plot_path, plot_alpha_sweep, sweep_lines

    if args.plot:  # before the sweep, which takes a while: say first what is missing
        check_plot_path(args.plot)
        if (why := cannot_write(args.plot)) is not None:  # a folder, a FIFO, a link loop, permissions
            raise InertValueError(f"--plot {why}")
    if args.depths is not None:
        return _simulate_depths(args, load_workloads(args.workloads) if args.workloads else depth_workloads())
    workloads = load_workloads(args.workloads) if args.workloads else default_workloads()
    each = None
    if not args.json:
        # The header and each workload's rows as soon as they are known: the sweep takes
        # seconds, and the table waited for all of it, as if the command hung.
        _emit(f"inert simulate: {len(workloads)} workloads x 4 policies x {args.seeds} seeds (virtual time)")
        header = (
            f"{'workload':<22} {'policy':<13} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'saved':>8} "
            f"{'wasted':>7} {'orphans':>8} {'stale':>6} {'diverged':>9}"
        )
        _emit(header)
        _emit("-" * len(header))
        each = _simulate_rows
    summaries = simulate(workloads, seeds=args.seeds, each=each)
    unsafe_policies = {"eager_unsafe"}
    leaks = [s for s in summaries if s.policy not in unsafe_policies and (s.orphans or s.stale_reads or s.diverged)]
    out: dict[str, Any] = {"seeds": args.seeds, "safe": not leaks, "summaries": [s.as_json() for s in summaries]}
    if not args.json:
        _emit(
            "saved: median ms saved against end_of_turn on the same seeds; wasted: speculative reads and two-phase\n"
            "prepares discarded per turn; orphans, stale reads and diverged worlds are counted over all seeds."
        )
        unsafe = sum(s.orphans + s.stale_reads + s.diverged for s in summaries if s.policy in unsafe_policies)
        _emit(
            "end_of_turn, defer and read_eager: no orphans, no stale reads, no diverged world"
            if not leaks
            else f"VIOLATION: {len(leaks)} safe-policy rows corrupted the world"
        )
        _emit(f"eager_unsafe: {unsafe} corruptions")
    if args.plot:
        shown = next((w for w in workloads if w.agent.name == "incident"), workloads[0])
        sweep = plot_alpha_sweep(shown, args.plot, seeds=args.seeds)
        out["plot"] = {
            "path": args.plot,
            "workload": shown.name,
            "seeds": args.seeds,
            "points": [{"alpha": a, **s.as_json()} for a, ss in sweep.items() for s in ss],
        }
        if not args.json:
            _emit("\n".join(["", *sweep_lines(shown, sweep, args.seeds), f"wrote {args.plot}"]))
    if args.json:
        _emit(_json_text(out))
    return 1 if leaks else 0


def _simulate_rows(summaries: list[Summary]) -> None:
    """One workload's rows of the ``inert simulate`` table, its name on the first."""
    for i, s in enumerate(summaries):
        _emit(
            f"{s.workload if i == 0 else '':<22} {s.policy:<13} {s.p50 * 1e3:8.1f} {s.p90 * 1e3:8.1f} "
            f"{s.p99 * 1e3:8.1f} {s.saved_p50 * 1e3:8.1f} {s.wasted_reads:7.2f} {s.orphans:8d} "
            f"{s.stale_reads:6d} {s.diverged:9d}"
        )


def _simulate_depths(args: argparse.Namespace, workloads: list[Any]) -> int:
    """``inert simulate --depths``: read_eager against defer as drafts get deeper."""
    from .simulate.depth import depth_lines, depth_sweep
    from .simulate.plot import plot_depth_sweep
    from .simulate.workloads import DEPTHS

    depths = args.depths or list(DEPTHS)  # --depths alone: the default depths
    points = depth_sweep(workloads, depths, seeds=args.seeds)
    safe = not any(p.corruptions for p in points)
    out: dict[str, Any] = {"seeds": args.seeds, "depths": depths, "safe": safe, "points": [p.as_json() for p in points]}
    if not args.json:
        _emit("\n".join(depth_lines(points)))
    if args.plot:
        plot_depth_sweep(points, args.plot)
        out["plot"] = {"path": args.plot}
        if not args.json:
            _emit(f"wrote {args.plot}")
    if args.json:
        _emit(_json_text(out))
    return 0 if safe else 1


_JSON_DEPTH = 200
"""Levels of nesting ``--json`` writes out; deeper parts of a value (a tool's result nested
600 deep, which the journal stored) are written as a note, not a RecursionError."""


def _json_text(value: Any) -> str:
    """``value`` as JSON, with floats no JSON can spell (a sum of huge latencies that
    overflowed to infinity, a tool's NaN result in a journal) written as ``null``:
    ``NaN`` and ``Infinity`` would break every reader; what JSON has no type for, as its
    repr; what is nested past ``_JSON_DEPTH`` levels, as a note saying so."""

    def finite(v: Any, depth: int) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, (dict, list, tuple)) and depth >= _JSON_DEPTH:
            return f"(nested deeper than {_JSON_DEPTH} levels: not written out)"
        if isinstance(v, dict):
            return {k: finite(x, depth + 1) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [finite(x, depth + 1) for x in v]
        return v

    return json.dumps(finite(value, 0), indent=2, allow_nan=False, default=repr)


def _depths(text: str) -> list[int]:
    try:
        depths = [int(part) for part in text.split(",")]
    except ValueError:
        depths = []
    if not depths or any(not 1 <= d <= 1024 for d in depths):
        raise argparse.ArgumentTypeError(
            f"must be draft depths between 1 and 1024, separated by commas (4,8,16), got {text!r}"
        )
    return sorted(set(depths))


def _seeds(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of turns, at least 1, got {text!r}")
    return n


def _stdout_closed() -> None:
    """stdout's reader went away (`inert audit t.jsonl | head`): point stdout at
    devnull, as Python's docs advise, so neither a later print nor the exit flush
    raises, and finish quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (captured output): replace the object instead
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    finally:
        os.close(devnull)


def _printable(text: str) -> str:
    """``text`` with what no stdout can encode spelled out: a path's bytes that are not UTF-8
    (lone surrogates from ``os.fsdecode``, which ``print`` refused with a traceback) as ``\\xff``."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate no file name gives (from stored JSON, say)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


class OutputError(Exception):
    """stdout took no more output (a full disk, /dev/full, an I/O error): the command ends
    with one line that says so, not errno text that named no file."""


def _emit(text: str) -> None:
    """Prints ``text``; a closed stdout ends the output, not the command (its exit status stands).

    Raises:
        OutputError: stdout could not be written.
    """
    try:
        try:
            print(_printable(text), flush=True)
        except UnicodeEncodeError:  # a stdout whose encoding cannot spell it (PYTHONIOENCODING=ascii)
            encoding = getattr(sys.stdout, "encoding", None) or "ascii"
            print(_printable(text).encode(encoding, "backslashreplace").decode(encoding), flush=True)
    except BrokenPipeError:
        _stdout_closed()
    except OSError as e:
        _stdout_closed()  # what is left in its buffer must not fail again at exit
        raise OutputError(
            f"cannot write the output to stdout: {e.strerror or e}; free space where it goes, or redirect it elsewhere"
        ) from None


_PATHS = {
    "demo": (("--db", "db", False), ("--trace", "trace", False)),
    "audit": (("", "trace", True),),
    "recover": (("", "journal", True),),
    "journal": (("", "journal", False),),
    "simulate": (("--workloads", "workloads", True), ("--plot", "plot", False)),
}
"""Each command's paths: its option (none for the positional one), its argument, and whether
the command reads it (a path it only writes is never checked for reading)."""

_OR_LEAVE_OUT = {
    "--workloads": " (a TOML file of workloads), or leave --workloads out for the built-in ones",
    "--db": ", or leave --db out for a temporary database",
    "--trace": ", or leave --trace out to write no trace",
    "--plot": ", or leave --plot out to draw no figure",
}
"""What an optional path's flag does when it is left out, for the refusal of an empty one."""


def _check_paths(args: argparse.Namespace) -> None:
    """Refuses, before a command does anything, ``-`` for any path (every command reads and
    writes named files, never stdin or stdout: ``journal init -`` and ``demo --trace -``
    made a file called ``-``) and a file the command reads that permissions forbid, which
    ``recover`` took for a missing journal.

    Raises:
        InertValueError: one of them is.
    """
    for flag, dest, reads in _PATHS[args.command]:
        path = getattr(args, dest)
        if path == "":  # `--workloads ""` ran the built-in workloads; `--db ""` opened the current folder
            named = f"{flag} ''" if flag else f"the {dest} path ''"
            instead = _OR_LEAVE_OUT.get(flag, "")
            raise InertValueError(f"{named} is empty: give a file's path{instead}")
        if path == "-":
            named = f"{flag} -" if flag else "-"
            raise InertValueError(
                f"{named}: inert reads and writes named files, not stdin or stdout; "
                "give a file's path (./- for a file named -)"
            )
        if reads and path is not None and (why := cannot_read(path)) is not None:
            raise InertValueError(why)


INTERRUPTED = 130
"""The exit status of a command stopped by Ctrl-C (SIGINT), as shells report one: 128 + 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line. Returns the exit status: 0 fine, 1 findings (or a failed
    demo), 2 bad input, 130 interrupted (Ctrl-C). A closed stdout ends the output quietly."""
    code = 0
    try:
        code = _main(argv)
        if sys.stdout is not None:  # None: started with stdout closed (`>&-`), print() writes nothing
            sys.stdout.flush()
    except BrokenPipeError:
        _stdout_closed()
    except KeyboardInterrupt:  # before a command started (parsing, imports)
        _say("inert: interrupted (Ctrl-C)")
        return INTERRUPTED
    return code


def _say(line: str) -> None:
    """Writes ``line`` to stderr. One it cannot take (closed, a broken pipe, a full disk) loses
    the line, never the exit status: the BrokenPipeError of stderr read as stdout's made an
    error exit 0."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(line, file=sys.stderr, flush=True)


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="inert", description="Keep rejected speculative tokens inert.")
    parser.add_argument("--version", action="version", version=f"inert {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="replay the speculative tool-dispatch incident, with and without inert")
    demo.add_argument("--db", metavar="PATH", help="SQLite file to run against (default: a temporary file)")
    demo.add_argument("--json", action="store_true", help="machine-readable output")
    demo.add_argument("--trace", metavar="PATH", help="append both turns' events to this JSONL trace")
    aud = sub.add_parser("audit", help="find orphaned effects, missed calls, key divergence and stale reads in a trace")
    aud.add_argument("trace", metavar="TRACE", help="an inert.trace/2 JSONL file, from inert or any stack")
    aud.add_argument("--json", action="store_true", help="machine-readable output")
    rec = sub.add_parser("recover", help="list a journal's dispatches: in doubt, in flight and completed (read-only)")
    rec.add_argument(
        "journal",
        metavar="PATH|DSN",
        help="a SQLite journal file, or a PostgreSQL database: a "
        "postgresql:// URI or a 'host=... dbname=...' connection string",
    )
    rec.add_argument("--json", action="store_true", help="machine-readable output")
    jrn = sub.add_parser("journal", help="manage a journal").add_subparsers(dest="action", required=True)
    jinit = jrn.add_parser("init", help="create a journal's tables (PostgreSQL: once per database, before workers)")
    jinit.add_argument(
        "journal",
        metavar="DSN|PATH",
        help="a PostgreSQL database (a postgresql:// URI or a "
        "'host=... dbname=...' connection string), or a SQLite journal file",
    )
    sim = sub.add_parser("simulate", help="what each dispatch policy costs and risks, on virtual time")
    sim.add_argument("--workloads", metavar="TOML", help="custom workloads (default: the built-in ones)")
    sim.add_argument("--seeds", type=_seeds, default=100, help="turns per workload and policy (default 100)")
    sim.add_argument("--json", action="store_true", help="machine-readable output")
    sim.add_argument(
        "--plot",
        metavar="PNG",
        help="write the figure of what was simulated: latency against "
        "acceptance rate, or with --depths the saving against draft depth (needs matplotlib)",
    )
    sim.add_argument(
        "--depths",
        metavar="K,K,...",
        type=_depths,
        nargs="?",
        const=[],
        default=None,
        help="instead of the policy table: what read_eager saves against defer at each draft depth "
        "(default 4,8,16,32,64), for the built-in drafters and two-phase agents or --workloads",
    )
    args = parser.parse_args(argv)

    try:
        _check_paths(args)
        if args.command == "simulate":
            return _simulate(args)
        if args.command == "demo":
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", TraceWarning)
                runs = run_demo(args.db, args.trace)
            _emit(json.dumps(_demo_json(runs), indent=2) if args.json else render_demo(runs))
            lost = [w for w in caught if issubclass(w.category, TraceWarning)]
            for w in caught:
                if w not in lost:
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
            for w in lost[:1]:
                _say(f"inert demo: --trace {args.trace}: {w.message}")
            return 2 if lost else 0 if demo_ok(runs) else 1
        if args.command == "audit":
            turns = audit(args.trace)
            _emit(json.dumps(_audit_json(turns), indent=2) if args.json else _audit_text(turns))
            return 1 if any(t.findings for t in turns) else 0
        if args.command == "journal":
            _emit(init_journal(args.journal, busy_timeout=LOCK_WAIT_S))
            return 0
        if args.command == "recover":
            if args.json:
                r = recover(args.journal, busy_timeout=LOCK_WAIT_S)
                _emit(
                    _json_text(
                        {
                            "in_doubt": [_entry_json(e) for e in r.in_doubt],
                            "in_flight": [_entry_json(e) for e in r.in_flight],
                            "prepared": [_entry_json(e) for e in r.prepared],
                            "completed": [_entry_json(e) for e in r.completed],
                        }
                    )
                )
            else:
                _emit(_recover_text(args.journal))
            return 0
    except BrokenPipeError:
        raise  # main() ends quietly: a closed stdout is not bad input
    except (InertError, OSError, OutputError) as e:
        _say(f"inert {args.command}: {e}")
        return 2
    except KeyboardInterrupt:
        # A line, not a traceback through whatever the command was doing; a journal it
        # wrote holds every intent, and `inert recover` lists a call cut short as in doubt.
        _say(f"inert {args.command}: interrupted (Ctrl-C); nothing more was done")
        return INTERRUPTED
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
