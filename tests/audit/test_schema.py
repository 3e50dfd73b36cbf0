"""`inert audit` checks every event's fields against the schema (docs/trace.md): an event
of no known kind, or one that lacks a field it must have or holds one of the wrong type, is
no trace (exit 2, one line naming the line), while every trace inert writes audits clean.
Found by a helper: only dispatch, result, discard and call_committed were checked."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import inert
from inert.audit import SCHEMA, read_trace
from inert.audit.schema import EVENTS
from inert.cli import main
from tools import block

HEAD = {"v": SCHEMA, "turn": "t", "t": 1.0}
START = {**HEAD, "event": "turn_start", "format": "hermes", "policy": "defer"}
CALL = {"block": 0, "index": 0, "span": [0, 1], "name": "f", "arguments": {}, "commit_key": "k"}


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], row: dict[str, Any]) -> str:
    """Audits a trace whose second line is ``row``; returns the one line it printed on stderr."""
    trace = tmp_path / "t.jsonl"
    text = json.dumps(START) + "\n" + json.dumps(row) + "\n"
    trace.write_text(text)
    assert main(["audit", str(trace)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"inert audit: {trace}:2: "), err
    assert trace.read_text() == text, "the audit changes nothing"
    return lines[0]


@pytest.mark.parametrize(
    ("row", "says"),
    [
        ({"event": "zzz"}, "'zzz' is no inert.trace/2 event"),
        ({"event": "verify", "n_accepted": -5}, "n_accepted must be a whole number >= 0"),
        ({"event": "verify", "n_accepted": True}, "n_accepted must be a whole number >= 0"),
        ({"event": "verify", "n_accepted": 1.5}, "n_accepted must be a whole number >= 0"),
        ({"event": "verify"}, "missing field 'n_accepted'"),
        ({"event": "verify", "n_accepted": 1, "correction": 2.5}, "correction must hold token pieces"),
        ({"event": "draft", "tokens": "abc"}, "tokens must be a list"),
        ({"event": "draft", "tokens": ["a", None]}, "tokens must hold token pieces"),
        ({"event": "draft", "tokens": [-1]}, "tokens must hold token pieces"),
        ({"event": "draft"}, "missing field 'tokens'"),
        ({"event": "turn_start", "policy": "defer"}, "missing field 'format'"),
        ({"event": "turn_start", "format": "hermes", "policy": 3}, "policy must be a string"),
        ({"event": "call_closed"}, "missing field"),
        ({"event": "call_retracted", **CALL, "block": "0"}, "block must be a whole number"),
        ({"event": "call_closed", **CALL, "span": [3, 1]}, "span must be [start, end]"),
        ({"event": "call_committed", **CALL, "arguments": []}, "arguments must be an object"),
        ({"event": "call_committed", **CALL, "call_id": 7}, "call_id must be a string"),
        ({"event": "block_malformed", **CALL, "kind": "x", "offset": 0}, "missing field 'reason'"),
        ({"event": "draft_tree", "tokens": ["a"], "parents": [-2]}, "parents must be a list of whole numbers >= -1"),
        ({"event": "verify_path", "path": "0"}, "path must be a list of whole numbers >= 0"),
        ({"event": "dispatch", "commit_key": "k", "name": "f", "span": [1]}, "span must be [start, end]"),
        ({"event": "result", "commit_key": "k", "ok": "yes"}, "ok must be true or false"),
        ({"event": "result", "commit_key": "k", "timed_out": 0}, "timed_out must be true or false"),
        ({"event": "discard", "commit_key": "k", "name": 1}, "name must be a string"),
        ({"event": "turn_end", "violations": -1}, "violations must be a whole number >= 0"),
        ({"event": "dispatch", "unwritable": "cycle"}, "its writer could not write it"),
        ({"event": "verify", "n_accepted": 0, "t": float("nan")}, "a time must be a finite number, got nan"),
        ({"event": "verify", "n_accepted": 0, "t": float("inf")}, "a time must be a finite number, got inf"),
    ],
    ids=lambda v: json.dumps(v)[:60] if isinstance(v, dict) else None,
)
def test_an_event_the_schema_refuses_exits_2_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], row: dict[str, Any], says: str
) -> None:
    assert says in refused(tmp_path, capsys, {**HEAD, **row})


def test_optional_fields_may_be_left_out_or_null(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A stack that writes only what the audit needs (as tests/traces does) still audits."""
    rows = [
        START,
        {**HEAD, "event": "verify", "n_accepted": 0},
        {**HEAD, "event": "call_committed", **CALL, "arguments": None, "call_id": None},
        {**HEAD, "event": "dispatch", "commit_key": "k", "name": "f", "footprint": None, "early": None},
        {**HEAD, "event": "result", "commit_key": "k", "error": None},
        {**HEAD, "event": "discard", "commit_key": "k"},
        {**HEAD, "event": "turn_end", "extra": "ignored"},
    ]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["audit", str(trace)]) == 0, capsys.readouterr().err


def test_every_event_inert_writes_audits_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Calls committed and retracted, a malformed block, a failing tool, a timeout, a token
    tree, and an asyncio turn: each event kind the orchestrators write passes the check."""
    trace = tmp_path / "t.jsonl"

    def fails() -> None:
        raise RuntimeError("no")

    effects = {"get": "read_only", "put": "write", "bad": "write"}
    tools = {"get": lambda: "r", "put": lambda: "ok", "bad": fails}
    orch = inert.Orchestrator(effects, tools, trace=trace, turn_key="a")
    orch.draft([block("get"), "x", block("put", k=1), "<tool_call>{nope</tool_call>", block("bad")])
    orch.verify(2, "y")
    orch.draft([block("put", k=2), "<tool_call>{nope</tool_call>", block("bad"), "."])
    orch.verify(4, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        orch.finish(strict=False)
    tree = inert.Orchestrator({"get": "read_only"}, {"get": lambda: "r"}, trace=trace, turn_key="b")
    tree.draft_tree([block("get"), "x", "y"], [-1, 0, -1])
    tree.verify_path([0, 1], "z")
    tree.finish()

    async def turn() -> None:
        orch = inert.AsyncOrchestrator({"get": "read_only"}, {"get": lambda: "r"}, trace=trace, turn_key="c")
        await orch.draft([block("get"), "."])
        await orch.verify(2, None)
        await orch.finish()

    asyncio.run(turn())
    written = {row["event"] for _, row in read_trace(trace)}
    assert written == set(EVENTS) - {"discard"}, "every kind but a discard (see test_audit)"
    assert main(["audit", str(trace)]) == 0, capsys.readouterr().err
