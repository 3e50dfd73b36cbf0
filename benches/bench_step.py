"""Per-step cost of draft(k=8) + verify through the Rust core alone, through the
Orchestrator, and through a plain-Python re-scanning baseline, at 1k and 64k
tokens of stream. Run: pytest benches --benchmark-only

Each step drafts 8 tokens, accepts 6, rejects 2 and appends a correction, so
rollback is on the measured path. A measurement adds about 6k tokens to the
stream, so "1k" spans 1k-7k and "64k" spans 64k-70k.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import cycle

import pytest

import inert
from conftest import record

K = 8
ROUNDS, STEPS = 30, 30

BLOCK = '<tool_call>\n{"name": "search", "arguments": {"q": "weather in Paris"}}\n</tool_call>\n'
PROSE = "The forecast says light rain later today, so take an umbrella. "


def tokens_of(text: str) -> list[str]:
    return re.findall(r"\w+|\s+|[^\w\s]", text)


PREFIX_TOKENS = tokens_of((PROSE * 3 + BLOCK) * 4)  # history with blocks in it
STEP_TOKENS = tokens_of(PROSE)


def prefill(draft: Callable[[list[str]], object], verify: Callable[[int], object], length: int) -> None:
    source = cycle(PREFIX_TOKENS)
    done = 0
    while done < length:
        window = [next(source) for _ in range(min(512, length - done))]
        draft(window)
        verify(len(window))
        done += len(window)


def stepper(draft: Callable[..., object], verify: Callable[..., object]) -> Callable[[], None]:
    src = cycle(STEP_TOKENS)
    windows = [[next(src) for _ in range(K)] for _ in range(STEPS)]  # built outside the timed loop

    def run() -> None:
        for window in windows:
            draft(window)
            verify(6, "x")

    return run


class RescanBaseline:
    """What many engines do: keep the text, re-run a regex over all of it each step."""

    PATTERN = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)

    def __init__(self) -> None:
        self.accepted: list[str] = []
        self.pending: list[str] = []
        self.seen = 0

    def draft(self, tokens: list[str]) -> None:
        self.pending.extend(tokens)
        self.PATTERN.findall("".join(self.accepted + self.pending))

    def verify(self, n: int, correction: str | None = None) -> None:
        self.accepted.extend(self.pending[:n])
        if correction is not None:
            self.accepted.append(correction)
        self.pending.clear()
        self.seen = len(self.PATTERN.findall("".join(self.accepted)))


LENGTHS = {"1k": 1_000, "64k": 64_000}


def make(impl: str) -> tuple[Callable[..., object], Callable[..., object]]:
    if impl == "core":
        s = inert.TokenStream("hermes", "bench")
        return s.draft, s.verify
    if impl == "orchestrator":
        orch = inert.Orchestrator({"search": "read_only"}, {"search": lambda q: q}, policy="defer")
        return orch.draft, orch.verify
    base = RescanBaseline()
    return base.draft, base.verify


@pytest.mark.parametrize("length", list(LENGTHS))
@pytest.mark.parametrize("impl", ["core", "orchestrator", "baseline_rescan"])
def test_step(benchmark: object, impl: str, length: str) -> None:
    draft, verify = make(impl)
    prefill(draft, verify, LENGTHS[length])
    benchmark.group = f"draft+verify k={K}"  # type: ignore[attr-defined]
    benchmark.pedantic(stepper(draft, verify), rounds=ROUNDS, iterations=1, warmup_rounds=2)  # type: ignore[attr-defined]
    record(benchmark, f"{impl}@{length}", per=STEPS)
