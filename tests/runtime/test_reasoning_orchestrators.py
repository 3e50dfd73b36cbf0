"""Reasoning through the orchestrators: a call a model writes while it thinks is a
thought, never dispatched; a thinking chat template that opened the section in the
prompt is told with ``in_reasoning=True`` (per sequence in a batch); a closer that
closed nothing, because the caller did not say so, is reported in ``Report.notices``."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import numpy as np
import pytest

import inert

VOCAB = inert.Vocabulary([bytes([b]) for b in range(256)])  # byte-level: a token id is a byte
EFFECTS = {"save": inert.ToolSpec("write", writes="k")}


def call(k: str) -> str:
    return "<tool_call>" + json.dumps({"name": "save", "arguments": {"k": k}}) + "</tool_call>"


THOUGHT_THEN_CALL = f"I could {call('thought')} but no.</think>\n{call('real')}"
OPENED = "<think>" + THOUGHT_THEN_CALL


class Saves:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.saved: list[str] = []

    def save(self, k: str) -> str:
        with self.lock:
            self.saved.append(k)
        return "ok"


def run(text: str, **kwargs: Any) -> tuple[inert.Report, list[str]]:
    saves = Saves()
    orch = inert.Orchestrator(EFFECTS, {"save": saves.save}, turn_key="t", **kwargs)
    orch.draft(list(text))
    orch.verify(len(text))
    return orch.finish(), saves.saved


def test_a_call_inside_reasoning_is_a_thought() -> None:
    report, saved = run(OPENED)
    assert saved == ["real"]
    assert [r.arguments for r in report.results] == [{"k": "real"}]
    assert report.notices == []


def test_a_template_that_opened_reasoning_is_told_with_in_reasoning() -> None:
    report, saved = run(THOUGHT_THEN_CALL, in_reasoning=True)
    assert saved == ["real"]
    assert report.notices == []


def test_a_closer_that_closed_nothing_is_a_notice_and_a_warning() -> None:
    with pytest.warns(inert.ReasoningWarning, match="in_reasoning=True"):
        report, saved = run(THOUGHT_THEN_CALL)  # the template opened <think>, nobody said so
    assert saved == ["thought", "real"], "without in_reasoning the thought is a call"
    [notice] = report.notices
    assert isinstance(notice, inert.ReasoningUnopened)
    assert THOUGHT_THEN_CALL[notice.start : notice.end] == "</think>"


def test_reasoning_off_and_own_delimiters() -> None:
    _, saved = run(OPENED, reasoning=None)
    assert saved == ["thought", "real"]
    _, saved = run(OPENED.replace("<think>", "<r>").replace("</think>", "</r>"), reasoning=("<r>", "</r>"))
    assert saved == ["real"]


def test_async_orchestrator_reads_reasoning() -> None:
    saves = Saves()

    async def save(k: str) -> str:
        return saves.save(k)

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator(EFFECTS, {"save": save}, turn_key="t", in_reasoning=True)
        await orch.draft(list(THOUGHT_THEN_CALL))
        await orch.verify(len(THOUGHT_THEN_CALL))
        return await orch.finish()

    report = asyncio.run(main())
    assert saves.saved == ["real"] and report.notices == []


def test_batch_sequences_say_each_whether_their_prompt_opened_reasoning() -> None:
    saves = Saves()
    text = THOUGHT_THEN_CALL.encode()
    with inert.BatchOrchestrator(EFFECTS, {"save": saves.save}, vocab=VOCAB) as batch:
        batch.add(1, "one", in_reasoning=True)
        batch.add(2, "two")
        ids = np.frombuffer(text, dtype=np.uint8).astype(np.int64)
        batch.draft([1, 2], np.stack([ids, ids]))
        batch.verify([1, 2], [len(ids), len(ids)])
        one = batch.finish(1)
        with pytest.warns(inert.ReasoningWarning):
            two = batch.finish(2)
    assert [r.arguments["k"] for r in one.results] == ["real"] and one.notices == []
    assert [r.arguments["k"] for r in two.results] == ["thought", "real"]
    assert [text[n.start : n.end] for n in two.notices] == [b"</think>"]
    assert sorted(saves.saved) == ["real", "real", "thought"]


def test_stream_batch_notices_belong_to_a_sequence_while_it_is_in_the_batch() -> None:
    b = inert.StreamBatch("hermes", VOCAB)
    b.add(5, "t")
    closer = np.frombuffer(b"</think>", dtype=np.uint8).astype(np.int64)
    b.draft([5], closer[None, :])
    assert b.notices(5) == [], "a drafted closer is no notice until it is accepted"
    b.verify([5], [len(closer)])
    assert len(b.notices(5)) == 1
    b.finish(5)
    with pytest.raises(inert.UnknownSequenceError):
        b.notices(5)
    b.add(5, "again")
    assert b.notices(5) == [], "a new turn of the same id starts with none"


def test_bad_in_reasoning_changes_nothing() -> None:
    b = inert.StreamBatch("hermes", VOCAB)
    with pytest.raises(inert.InertTypeError, match="in_reasoning"):
        b.add(1, "t", in_reasoning=1)  # type: ignore[arg-type]
    off = inert.StreamBatch("hermes", VOCAB, reasoning=None)
    with pytest.raises(inert.InertValueError, match="reasoning"):
        off.add(1, "t", in_reasoning=True)
    assert len(b) == 0 and len(off) == 0
    with pytest.raises(inert.InertValueError, match="reasoning"):
        inert.Orchestrator(EFFECTS, {}, reasoning=None, in_reasoning=True)
