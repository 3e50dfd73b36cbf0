"""The runtime's costs, side by side in one run (pytest benches/bench_runtime.py --benchmark-only):

- per step through the Orchestrator under ``read_eager``, with steps that close
  calls (speculative reads, and writes that commit), at 1k and 64k tokens of
  stream: the mean as well as the median, since the steps that close calls are
  the expensive ones (target: 64k / 1k <= 1.2);
- ``finish()`` against the number of calls in the turn (target: 8x the calls
  in at most 10x the time);
- a turn of 8000 tiny blocks (380 KB of model text): wall time and peak Python
  memory (target: under 2 s and 100 MB).
"""

from __future__ import annotations

import gc
import re
import statistics
import time
import tracemalloc
from collections.abc import Callable
from itertools import cycle
from typing import Any

import pytest

import inert
from conftest import MEANS, RUNTIME, record

K = 8
STEPS = 40

READ = '<tool_call>{"name": "search", "arguments": {"q": "%d"}}</tool_call> '
WRITE = '<tool_call>{"name": "save", "arguments": {"k": "%d"}}</tool_call> '
PROSE = "The forecast says light rain later today, so take an umbrella. "
EFFECTS = {"search": "read_only", "save": inert.ToolSpec("write", reads="k", writes="k")}
TOOLS = {"search": lambda q: q, "save": lambda k: k}


def tokens_of(text: str) -> list[str]:
    return re.findall(r"\w+|\s+|[^\w\s]", text)


def transcript(calls: int) -> list[str]:
    """Prose with a read and a write every few sentences: about one call per 25 tokens."""
    parts = []
    for i in range(calls):
        parts.append(PROSE)
        parts.append((READ if i % 2 == 0 else WRITE) % i)
    return tokens_of("".join(parts))


LENGTHS = {"1k": 1_000, "64k": 64_000}


def orchestrator() -> inert.Orchestrator:
    return inert.Orchestrator(EFFECTS, TOOLS, turn_key="bench", policy="read_eager")


def prefill(orch: inert.Orchestrator, source: Any, length: int) -> None:
    done = 0
    while done < length:
        window = [next(source) for _ in range(min(512, length - done))]
        orch.draft(window)
        orch.verify(len(window))
        done += len(window)


@pytest.mark.parametrize("length", list(LENGTHS))
def test_step_with_calls(benchmark: Any, length: str) -> None:
    """draft(8) + verify(6, correction), where about one step in three closes a call."""
    orch = orchestrator()
    source = cycle(transcript(4000))
    prefill(orch, source, LENGTHS[length])
    windows = [[next(source) for _ in range(K)] for _ in range(STEPS * 40)]
    it = iter(windows)
    times: list[float] = []

    def run() -> None:
        for _ in range(STEPS):
            window = next(it)
            t0 = time.perf_counter()
            orch.draft(window)
            orch.verify(K, None)  # accept all: the drafted calls commit
            times.append(time.perf_counter() - t0)

    benchmark.group = "orchestrator step with calls (read_eager)"
    benchmark.pedantic(run, rounds=30, iterations=1, warmup_rounds=2)
    record(benchmark, f"calls_step@{length}", per=STEPS)
    MEANS[f"calls_step@{length}"] = statistics.fmean(times)
    orch.finish()


def _turn(calls: int) -> Callable[[], inert.Orchestrator]:
    tokens = transcript(calls)

    def build() -> inert.Orchestrator:
        orch = orchestrator()
        for start in range(0, len(tokens), 512):
            window = tokens[start : start + 512]
            orch.draft(window)
            orch.verify(len(window))
        return orch

    return build


@pytest.mark.parametrize("calls", [100, 800])
def test_finish_against_calls(benchmark: Any, calls: int) -> None:
    build = _turn(calls)

    def setup() -> tuple[tuple[inert.Orchestrator], dict[str, Any]]:
        return (build(),), {}

    benchmark.group = "finish() against calls"
    benchmark.pedantic(lambda orch: orch.finish(), setup=setup, rounds=8, iterations=1)
    record(benchmark, f"finish@{calls}")


def test_eight_thousand_tiny_blocks(benchmark: Any) -> None:
    """Model output alone: 8000 blocks of an unknown tool (writes with unknown footprints,
    each a barrier), drafted in windows, accepted, finished."""
    text = '<tool_call>{"name": "x"}</tool_call>' * 8000
    pieces = [text[i : i + 48] for i in range(0, len(text), 48)]

    def turn() -> inert.Report:
        orch = inert.Orchestrator({}, {"x": lambda: None}, turn_key="tiny")
        for start in range(0, len(pieces), 64):
            window = pieces[start : start + 64]
            orch.draft(window)
            orch.verify(len(window))
        return orch.finish()

    benchmark.group = "8000 tiny blocks"
    benchmark.pedantic(turn, rounds=3, iterations=1)
    gc.collect()
    tracemalloc.start()
    report = turn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(report.results) == 8000
    RUNTIME["tiny_blocks_s"] = benchmark.stats.stats.median
    RUNTIME["tiny_blocks_peak_mb"] = peak / 1e6
    RUNTIME["tiny_blocks_text_kb"] = len(text) / 1e3
