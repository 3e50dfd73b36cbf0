"""Every warning of inert names the caller's line, whichever path made it: a fixed
``stacklevel`` was right for one path only, and ``BatchOrchestrator.finish``'s
ReasoningWarning pointed at ``sys:1``, the unknown-tool warning of a batch and a
``with`` block's TurnAbandonedWarning at lines of inert."""

from __future__ import annotations

import asyncio
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import inert

VOCAB = inert.Vocabulary(["</think>", "hi"])


def _lone_reasoning() -> None:
    orch = inert.Orchestrator({}, {}, turn_key="t", format="qwen3_coder", vocab=VOCAB)
    orch.draft([0, 1])
    orch.verify(2)
    orch.finish()


def _batch_reasoning() -> None:
    batch = inert.BatchOrchestrator({}, {}, format="qwen3_coder", vocab=VOCAB)
    batch.add(0, "t")
    batch.draft([0], [[0, 1]])
    batch.verify([0], [2])
    batch.finish(0)
    batch.close()


def _async_reasoning() -> None:
    async def turn() -> None:
        orch = inert.AsyncOrchestrator({}, {}, turn_key="t", format="qwen3_coder", vocab=VOCAB)
        await orch.draft([0, 1])
        await orch.verify(2)
        await orch.finish()

    asyncio.run(turn())


def _lone_typo() -> None:
    inert.Orchestrator({"get_weather": "read_only"}, {"get_wether": lambda: 1})


def _batch_typo() -> None:
    inert.BatchOrchestrator({"get_weather": "read_only"}, {"get_wether": lambda: 1}, vocab=VOCAB).close()


def _with_block() -> None:
    with inert.Orchestrator({}, {}, turn_key="t") as orch:
        orch.draft(["hi"])


def _batch_closed_with_a_sequence() -> None:
    batch = inert.BatchOrchestrator({}, {}, vocab=VOCAB)
    batch.add(0, "t")
    batch.close()


PATHS: list[tuple[str, Callable[[], Any], type[Warning]]] = [
    ("lone reasoning", _lone_reasoning, inert.ReasoningWarning),
    ("batch reasoning", _batch_reasoning, inert.ReasoningWarning),
    ("async reasoning", _async_reasoning, inert.ReasoningWarning),
    ("lone typo", _lone_typo, UserWarning),
    ("batch typo", _batch_typo, UserWarning),
    ("with block", _with_block, inert.TurnAbandonedWarning),
    ("batch close", _batch_closed_with_a_sequence, inert.TurnAbandonedWarning),
]


@pytest.mark.parametrize(("path", "make", "kind"), PATHS, ids=[p for p, _, _ in PATHS])
def test_a_warning_names_the_callers_line(path: str, make: Callable[[], Any], kind: type[Warning]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
    ours = [w for w in caught if issubclass(w.category, kind)]
    assert ours, f"{path}: no {kind.__name__}"
    lines, first = inspect.getsourcelines(make)
    inside = range(first, first + len(lines))
    assert all(w.filename == __file__ and w.lineno in inside for w in ours), [(w.filename, w.lineno) for w in ours]
