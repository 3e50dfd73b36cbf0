"""Per-step cost of draft(k=8) + verify through the Rust core alone, through the
Orchestrator, and through a plain-Python re-scanning baseline, at 1k and 64k
tokens of stream. Run: pytest benches --benchmark-only

Each step drafts 8 tokens, accepts 6, rejects 2 and appends a correction, so
rollback is on the measured path. A measurement adds about 6k tokens to the
stream, so "1k" spans 1k-7k and "64k" spans 64k-70k.

The prose steps close no call. `orchestrator_calls` measures steps that do: the
stream is blocks and prose (a call every 49 tokens: one step in seven closes one), under
`read_eager`, so its reads are dispatched as their blocks close, and each step's
correction is the target's next token, so every drafted call is the accepted one.
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


CALL_TOKENS = tokens_of(BLOCK + PROSE[:24])


def call_stepper(draft: Callable[..., object], verify: Callable[..., object]) -> Callable[[], None]:
    """Step i drafts tokens[p:p+8] of prose and blocks, accepts 6 and corrects with the
    7th (which the draft had), rejecting the 8th, drafted again next step: p advances by 7."""
    src = cycle(CALL_TOKENS)
    tokens = [next(src) for _ in range(7 * STEPS * (ROUNDS + 2) + 8)]
    position = [0]

    def run() -> None:
        p = position[0]
        for _ in range(STEPS):
            window = tokens[p : p + K]
            draft(window)
            verify(6, window[6])
            p += 7
        position[0] = p

    return run


def make(impl: str) -> tuple[Callable[..., object], Callable[..., object]]:
    if impl == "core":
        s = inert.TokenStream("hermes", "bench")
        return s.draft, s.verify
    if impl == "orchestrator":
        orch = inert.Orchestrator({"search": "read_only"}, {"search": lambda q: q}, policy="defer")
        return orch.draft, orch.verify
    if impl == "orchestrator_calls":
        orch = inert.Orchestrator({"search": "read_only"}, {"search": lambda q: q}, policy="read_eager")
        return orch.draft, orch.verify
    base = RescanBaseline()
    return base.draft, base.verify


@pytest.mark.parametrize("length", list(LENGTHS))
@pytest.mark.parametrize("impl", ["core", "orchestrator", "orchestrator_calls", "baseline_rescan"])
def test_step(benchmark: object, impl: str, length: str) -> None:
    draft, verify = make(impl)
    prefill(draft, verify, LENGTHS[length])
    benchmark.group = f"draft+verify k={K}"  # type: ignore[attr-defined]
    run = call_stepper(draft, verify) if impl == "orchestrator_calls" else stepper(draft, verify)
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=2)  # type: ignore[attr-defined]
    record(benchmark, f"{impl}@{length}", per=STEPS)
