"""What an integrator needs to answer a call: its OpenAI tool-call id on the report's
``CallResult`` (a server sends it back as the ``tool_call_id`` of the tool's message),
with or without streaming; and, inside a tool, which turn and which engine sequence the
call serves (``inert.current_call()``), so a router tool knows its request."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

import inert
from tools import block

CALLS = [block("f", a=1), "between ", block("f", a=2)]


def _streamed(steps: list[inert.Step]) -> dict[str, dict[str, Any]]:
    """Each streamed call's id -> its arguments, from the deltas of ``steps``."""
    ids: dict[int, str] = {}
    text: dict[int, str] = {}
    for step in steps:
        for d in step.tool_call_deltas:
            if "inert" in d:
                ids.pop(d["index"], None)  # not a call after all
                continue
            if "id" in d:
                ids[d["index"]] = d["id"]
            text[d["index"]] = text.get(d["index"], "") + d["function"].get("arguments", "")
    return {ids[i]: json.loads(text[i]) for i in ids}


@pytest.mark.parametrize(
    "fmt,calls",
    [
        ("hermes", CALLS),
        (
            "hermes",
            [block("f", a=0)[: -len("</tool_call>")] + ", }</tool_call>", *CALLS],
        ),  # a malformed call streams first
        (
            "kimi_k2",
            [
                "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
                '{"a": 1}<|tool_call_end|><|tool_call_begin|>functions.f:1<|tool_call_argument_begin|>{"a": 2}'
                "<|tool_call_end|><|tool_calls_section_end|>"
            ],
        ),
    ],
)
def test_results_carry_the_ids_their_deltas_carried(fmt: str, calls: list[str]) -> None:
    orch = inert.Orchestrator({"f": "read_only"}, {"f": lambda a: a}, format=fmt, turn_key="t", stream=True)
    steps = []
    for piece in calls:  # one piece per step: the calls settle at different steps
        orch.draft([piece])
        steps.append(orch.verify(1))
    report = orch.finish()
    assert report.tail is not None
    steps.append(report.tail)
    streamed = _streamed(steps)
    assert [r.arguments for r in report.results] == [{"a": 1}, {"a": 2}]
    assert {r.tool_call_id: r.arguments for r in report.results} == streamed


def test_results_carry_ids_without_streaming_too() -> None:
    plain = inert.Orchestrator({"f": "read_only"}, {"f": lambda a: a}, turn_key="t")
    plain.draft(CALLS)
    plain.verify(3)
    streaming = inert.Orchestrator({"f": "read_only"}, {"f": lambda a: a}, turn_key="t", stream=True)
    streaming.draft(CALLS)
    streaming.verify(3)
    ids = [r.tool_call_id for r in plain.finish().results]
    assert ids == [r.tool_call_id for r in streaming.finish().results], "the same ids, streamed or not"
    assert len(set(ids)) == 2 and all(i is not None and i.startswith("call_") for i in ids)
    other = inert.Orchestrator({"f": "read_only"}, {"f": lambda a: a}, turn_key="another turn")
    other.draft(CALLS)
    other.verify(3)
    assert not set(ids) & {r.tool_call_id for r in other.finish().results}, "ids differ between turns"


def test_the_models_own_ids_are_kept_without_streaming() -> None:
    section = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
        '{"a": 1}<|tool_call_end|><|tool_calls_section_end|>'
    )
    orch = inert.Orchestrator({"f": "read_only"}, {"f": lambda a: a}, format="kimi_k2", turn_key="t")
    orch.draft([section])
    orch.verify(1)
    assert [r.tool_call_id for r in orch.finish().results] == ["functions.f:0"]


@pytest.mark.parametrize("stream", [False, True])
def test_batch_results_carry_ids(stream: bool) -> None:
    vocab = inert.Vocabulary(CALLS)
    with inert.BatchOrchestrator({"f": "read_only"}, {"f": lambda a: a}, vocab=vocab, stream=stream) as batch:
        batch.add(3, "t")
        batch.draft([3], [[0, 1, 2]])
        batch.verify([3], [3])
        ids = [r.tool_call_id for r in batch.finish(3).results]
    lone = inert.Orchestrator({"f": "read_only"}, {"f": lambda a: a}, turn_key="t", vocab=vocab)
    lone.draft([0, 1, 2])
    lone.verify(3)
    assert ids == [r.tool_call_id for r in lone.finish().results]


def test_a_batch_tool_knows_its_turn_and_sequence() -> None:
    seen: list[tuple[str, int | None, str]] = []
    lock = threading.Lock()

    def route(name: str, arguments: dict[str, Any]) -> str:
        call = inert.current_call()
        assert call is not None
        with lock:
            seen.append((call.turn_key, call.seq, call.name))
        return f"{call.turn_key}/{call.seq}"

    vocab = inert.Vocabulary([block("f", a=1)])
    with inert.BatchOrchestrator({"f": "read_only"}, route, vocab=vocab) as batch:
        batch.add(4, "request-a")
        batch.add(9, "request-b")
        batch.draft([4, 9], [[0], [0]])
        batch.verify([4, 9], [1, 1])
        assert [r.result for r in batch.finish(4).results] == ["request-a/4"]
        assert [r.result for r in batch.finish(9).results] == ["request-b/9"]
    assert sorted(seen) == [("request-a", 4, "f"), ("request-b", 9, "f")]


def test_a_lone_turns_tool_knows_its_turn() -> None:
    def f(a: int) -> tuple[str, int | None]:
        call = inert.current_call()
        assert call is not None
        return call.turn_key, call.seq

    orch = inert.Orchestrator({"f": "read_only"}, {"f": f}, turn_key="turn-7")
    orch.draft([block("f", a=1)])
    orch.verify(1)
    assert [r.result for r in orch.finish().results] == [("turn-7", None)]
