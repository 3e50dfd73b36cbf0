"""What starting costs: a TokenStream per turn (what the Orchestrator makes per turn) and a
one-shot `inert.parse` of a short output, for each built-in format. Both were dominated by
building the format's delimiter automata (about 140-280 µs); they are built once per process
now and copied into each stream. Run: pytest benches/bench_start.py --benchmark-only
"""

from __future__ import annotations

from itertools import count

import pytest

import inert
from conftest import record

FORMATS = ["hermes", "qwen3_coder", "mistral", "llama3_json", "deepseek_v3", "kimi_k2"]
SHORT = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


@pytest.mark.parametrize("fmt", FORMATS)
def test_token_stream_start(benchmark: object, fmt: str) -> None:
    keys = count()
    stream = benchmark(lambda: inert.TokenStream(fmt, f"turn-{next(keys)}"))  # type: ignore[operator]
    assert stream.format == fmt
    record(benchmark, f"start {fmt}")


def test_parse_short_output(benchmark: object) -> None:
    found = benchmark(lambda: inert.parse(SHORT, format="hermes"))  # type: ignore[operator]
    assert [c.name for c in found if isinstance(c, inert.Call)] == ["get_weather"]
    record(benchmark, "parse short hermes")
