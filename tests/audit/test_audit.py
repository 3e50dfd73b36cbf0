"""Traces and `inert audit`: inert's own traces, and one a foreign stack wrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import inert
from inert.audit import SCHEMA, audit, read_trace, turns
from inert.audit import trace as trace_module
from inert.cli import main

FOREIGN = Path(__file__).resolve().parents[1] / "traces" / "foreign_incident.jsonl"


def test_a_foreign_stacks_trace_of_the_incident() -> None:
    run17, run18 = audit(FOREIGN)
    kinds = sorted((v.kind, v.tool, v.commit_key) for v in run17.findings)
    assert kinds == [
        ("orphan", "create_report", "k-a1"),
        ("orphan", "delete_report", "k-b1"),
        ("stale_read", "read_report", "k-c2"),
    ]
    assert [d.commit_key for d in run17.report.discarded] == ["k-c1"], "the draft read is waste, not a violation"
    (divergence,) = run18.findings
    assert (divergence.kind, divergence.commit_key, divergence.other_key) == ("key_divergence", "acc-1", "draft-1")


def test_audit_cli_exit_status_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", str(FOREIGN)]) == 1
    text = capsys.readouterr().out
    assert "[orphan]" in text and "[stale_read]" in text and "[key_divergence]" in text
    assert main(["audit", str(FOREIGN), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["ok"] and [len(t["findings"]) for t in out["turns"]] == [3, 1]


def test_inerts_own_trace_rebuilds_both_streams(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    assert main(["demo", "--trace", str(trace)]) == 0
    unsafe, safe, staged = audit(trace)
    assert sorted(v.kind for v in unsafe.findings) == ["orphan", "orphan", "stale_read"]
    assert safe.findings == [] and len(safe.accepted) == 3 and len(safe.dispatched) == 3
    # A two-phase: its prepare on the draft's name was dispatched and aborted, which is no finding.
    assert staged.turn == "demo-read_eager+two_phase"
    assert staged.findings == [] and len(staged.accepted) == 3 and len(staged.dispatched) == 4
    events = [row for _, row in read_trace(trace)]
    kinds = {e["event"] for e in events}
    assert {
        "turn_start",
        "draft",
        "verify",
        "call_closed",
        "call_committed",
        "call_retracted",
        "dispatch",
        "result",
        "turn_end",
    } <= kinds
    assert all(e["v"] == SCHEMA for e in events)
    drafted = "".join(
        t for e in events if e["event"] == "draft" and e["turn"] == "demo-read_eager" for t in e["tokens"]
    )
    assert "reprots/q3" in drafted, "the dispatched stream (the draft) is in the trace"


def test_orchestrator_trace_records_discards(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    orch = inert.Orchestrator({"get": "read_only"}, {"get": lambda: "r"}, trace=trace, turn_key="tt")
    step = orch.draft(['<tool_call>{"name": "get"}</tool_call>'])
    assert len(step.dispatched) == 1  # started in the draft step, so its rejection is a discard
    orch.verify(0, "no")
    orch.finish()
    events = [e["event"] for _, e in read_trace(trace)]
    assert "discard" in events
    assert audit(trace)[0].findings == []


def test_a_window_given_as_a_generator_is_traced_as_drafted(tmp_path: Path) -> None:
    """The core used a generator up, and the trace, reading it again, recorded a draft of no
    tokens: the audit trail said nothing was drafted while a call ran on it."""
    window = ['<tool_call>{"name": "get"}</tool_call>', " done"]
    traces = []
    for run, given in (("list", lambda: list(window)), ("generator", lambda: (t for t in window))):
        trace = tmp_path / f"{run}.jsonl"
        orch = inert.Orchestrator({"get": "read_only"}, {"get": lambda: "r"}, trace=trace, turn_key="tt")
        orch.draft(given())  # type: ignore[arg-type]  # an iterator: untyped, taken at run time
        orch.verify(2)
        orch.draft_tree(iter(["a", "b"]), iter([-1, 0]))  # type: ignore[arg-type]  # an iterator: untyped, taken at run time
        orch.verify_path(iter([0, 1]))  # type: ignore[arg-type]  # an iterator: untyped, taken at run time
        orch.finish()
        traces.append(
            [{k: v for k, v in e.items() if k != "t"} for _, e in read_trace(trace) if "tokens" in e or "path" in e]
        )
    assert traces[0] == traces[1]
    assert [e.get("tokens", e.get("path")) for e in traces[1]] == [window, ["a", "b"], [0, 1]]


def test_bad_traces_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"v": "other/9", "event": "x"}\n')
    with pytest.raises(inert.InertValueError, match=r"not an inert\.trace/2 event"):
        audit(bad)
    bad.write_text('{"v": "inert.trace/2", "turn": "t", "event": "dispatch", "t": 1}\n')
    with pytest.raises(inert.InertValueError, match="lacks a field"):
        audit(bad)
    assert main(["audit", str(bad)]) == 2


DISPATCH = {
    "v": SCHEMA,
    "turn": "t",
    "event": "dispatch",
    "t": 1.0,
    "commit_key": "k",
    "name": "f",
    "effect": "write",
    "span": [0, 1],
    "early": False,
}


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"turn": 7}, '"turn"'),
        ({"turn": None}, '"turn"'),
        ({"event": ["dispatch"]}, '"event"'),
        ({"early": "no"}, "early must be true or false"),
        ({"early": 1}, "early must be true or false"),
        ({"commit_key": 5}, "commit_key must be a string"),
        ({"t": "1.5"}, "a time must be a number"),
        ({"t": True}, "a time must be a number"),
    ],
    ids=["turn-int", "turn-null", "event-list", "early-text", "early-int", "key-int", "t-text", "t-bool"],
)
def test_a_field_of_the_wrong_type_is_refused_with_its_line(
    tmp_path: Path, change: dict[str, object], named: str
) -> None:
    """Each was read as something else (``str(7)``, ``bool("no")``, ``float("1.5")``) and the
    trace audited as though it said so."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(DISPATCH) + "\n" + json.dumps({**DISPATCH, **change}) + "\n")
    with pytest.raises(inert.InertValueError, match=r"bad\.jsonl:2: ") as caught:
        audit(bad)
    assert named in str(caught.value)


@pytest.mark.parametrize(
    ("event", "change"),
    [
        ("result", {"commit_key": 5}),
        ("result", {"replayed": "yes"}),
        ("result", {"error": 123}),
        ("result", {"commit_key": "no-dispatch", "t": "soon"}),
        ("result", {"commit_key": "no-dispatch", "replayed": 0}),
        ("discard", {"commit_key": 5}),
        ("discard", {"t": "later"}),
        ("call_committed", {"t": "later"}),
        ("turn_start", {"t": None}),
        ("turn_end", {"t": [1]}),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}={v[k]}" for k in v),
)
def test_an_event_of_the_wrong_type_is_refused_whatever_it_matches(
    tmp_path: Path, event: str, change: dict[str, object]
) -> None:
    """A result no dispatch takes, and events the audit reads nothing else of, were not checked."""
    bad = tmp_path / "bad.jsonl"
    row = {
        "v": SCHEMA,
        "turn": "t",
        "event": event,
        "t": 2.0,
        "commit_key": "k",
        "name": "f",
        "ok": True,
        "span": [0, 1],
        **change,
    }
    bad.write_text(json.dumps(DISPATCH) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(inert.InertValueError, match=r"bad\.jsonl:2: "):
        audit(bad)


def test_a_second_result_for_one_dispatch_is_checked_too(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    result = {"v": SCHEMA, "turn": "t", "event": "result", "t": 2.0, "commit_key": "k", "ok": True}
    bad.write_text("\n".join(json.dumps(r) for r in [DISPATCH, result, {**result, "replayed": "no"}]) + "\n")
    with pytest.raises(inert.InertValueError, match=r"bad\.jsonl:3: .*replayed"):
        audit(bad)


def test_turn_runs_are_named_apart_from_a_key_spelled_like_a_run(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    start = {"v": SCHEMA, "event": "turn_start", "t": 1.0, "format": "hermes", "policy": "defer"}
    rows = [row for k in ["a#2", "a", "a"] for row in ({**start, "turn": k}, {**DISPATCH, "turn": k})]
    trace.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert [t.turn for t in audit(trace)] == ["a#2", "a", "a#3"]


@pytest.mark.parametrize("text", ["", "\n\n  \n"], ids=["empty", "blank-lines"])
def test_a_trace_with_no_events_is_refused_not_clean(
    tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text(text)
    with pytest.raises(inert.InertValueError, match="nothing to audit"):
        audit(empty)
    assert main(["audit", str(empty)]) == 2
    assert "clean" not in capsys.readouterr().out


def test_recover_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.sqlite"
    orch = inert.Orchestrator({"f": "write"}, {"f": lambda: 1}, journal=path, turn_key="t")
    orch.draft(['<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'])
    orch.verify(1)
    orch.finish()
    assert main(["recover", str(path)]) == 0
    assert "0 in doubt, 1 completed" in capsys.readouterr().out
    assert main(["recover", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["completed"][0]["arguments"] == {"x": 1}
    assert main(["recover", str(tmp_path / "missing.sqlite")]) == 2


def test_recover_json_stays_json_when_a_result_is_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SQLite stores a tool's NaN result as the token NaN, which ``--json`` printed as is:
    no JSON reader takes it. It is written as null, as ``simulate --json`` writes overflows."""
    path = tmp_path / "j.sqlite"
    orch = inert.Orchestrator({"f": "read_only"}, {"f": lambda: float("nan")}, journal=path, turn_key="t")
    orch.draft(['<tool_call>{"name": "f", "arguments": {}}</tool_call>'])
    orch.verify(1)
    orch.finish()
    assert main(["recover", str(path), "--json"]) == 0

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    [entry] = json.loads(capsys.readouterr().out, parse_constant=refuse)["completed"]
    assert entry["result"] is None


def test_a_key_drafted_again_and_again_is_audited_in_linear_work(tmp_path: Path) -> None:
    """Found by a helper: each result event scanned every earlier dispatch of its key for
    the first unfinished one, and each discard marked them all again: n**2 (17 s at 32k
    dispatches under one key). Counted in lines the audit runs, not in time."""
    n = 400
    rows: list[dict[str, object]] = []
    for i in range(n):
        rows.append({**DISPATCH, "effect": "read_only", "t": 3.0 * i, "span": [i, i + 1]})
        rows.append({"v": SCHEMA, "turn": "t", "event": "result", "t": 3.0 * i + 1, "commit_key": "k"})
        rows.append({"v": SCHEMA, "turn": "t", "event": "discard", "t": 3.0 * i + 2, "commit_key": "k"})
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    lines = 0

    def count(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal lines
        if frame.f_code.co_filename != turns.__file__:
            return None
        if event == "line":
            lines += 1
        return count

    sys.settrace(count)
    try:
        (turn,) = audit(trace)
    finally:
        sys.settrace(None)
    assert [d.finished for d in turn.dispatched] == [3.0 * i + 1 for i in range(n)]
    assert len(turn.report.discarded) == n
    assert lines <= 60 * n, f"{lines} lines of the audit for {n} dispatches"


def test_a_file_with_no_line_breaks_is_refused_at_the_longest_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a helper: /proc/self/pagemap (a regular file, no line breaks) was read as one
    line until memory ran out. A line past the longest event is refused (256 MiB; 1 kB here)."""
    monkeypatch.setattr(trace_module, "_LONGEST_LINE", 1024)
    endless = tmp_path / "blob"
    endless.write_bytes(b"x" * 4096)
    with pytest.raises(inert.InertValueError, match=r"blob:1: a line longer than"):
        audit(endless)
