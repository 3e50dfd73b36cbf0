"""Per-step cost of every format through the Rust core at 1k and 64k tokens,
and one-shot `inert.parse` throughput. Run: pytest benches --benchmark-only

Each step drafts 8 tokens of a transcript in the format (prose and calls, cut
into 4-byte pieces), accepts 6, and appends the 7th as the correction, so
block bodies, rollback and parsing are all on the measured path.
"""

from __future__ import annotations

import sys
from itertools import cycle
from pathlib import Path

import pytest

import inert
from conftest import FORMAT_MEDIANS, PARSE_MBPS, record

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from render import ANCHORED, render

CALLS = [("get_weather", {"city": "San Francisco", "unit": "celsius"}), ("search", {"query": "speculative decoding"})]
STEPS, ROUNDS = 30, 30
LENGTHS = {"1k": 1_000, "64k": 64_000}


def transcript(fmt: str) -> bytes:
    if fmt in ANCHORED:  # whole-message formats: calls back to back
        return (render(fmt, CALLS) + "\n").encode()
    return render(fmt, CALLS, "The forecast says rain, so let me check a few things first. ", "\n").encode()


def pieces(fmt: str) -> list[bytes]:
    data = transcript(fmt)
    return [data[i : i + 4] for i in range(0, len(data), 4)]


@pytest.mark.parametrize("length", list(LENGTHS))
@pytest.mark.parametrize("fmt", inert.formats())
def test_format_step(benchmark: object, fmt: str, length: str) -> None:
    src = cycle(pieces(fmt))
    stream = inert.TokenStream(fmt, "bench")
    done = 0
    while done < LENGTHS[length]:
        window = [next(src) for _ in range(512)]
        stream.draft(window)
        stream.verify(len(window))
        done += 512
    # Step i drafts tokens[p:p+8], accepts 6, takes the 7th as the correction and
    # rejects the 8th, which the next step drafts again: p advances by 7.
    tokens = [next(src) for _ in range(7 * STEPS * (ROUNDS + 2) + 8)]
    position = [0]

    def run() -> None:
        p = position[0]
        for _ in range(STEPS):
            window = tokens[p : p + 8]
            stream.draft(window)
            stream.verify(6, window[6])
            p += 7
        position[0] = p

    benchmark.group = f"format step k=8 @{length}"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=2)  # type: ignore[attr-defined]
    record(benchmark, f"fmt:{fmt}@{length}", per=STEPS)
    FORMAT_MEDIANS[(fmt, length)] = benchmark.stats.stats.median / STEPS  # type: ignore[attr-defined]


PARSE_BYTES = 64 << 10
"""Every format parses inputs of the same size (whole transcripts, within one transcript of it), so MB/s compare."""


@pytest.mark.parametrize("fmt", inert.formats())
def test_parse_throughput(benchmark: object, fmt: str) -> None:
    # Transcripts back to back. In a whole-message format only the first message's calls
    # open it; the rest is read as text, which is what such a format scans past.
    text = transcript(fmt) * max(1, round(PARSE_BYTES / len(transcript(fmt))))
    benchmark.group = "inert.parse"  # type: ignore[attr-defined]
    result = benchmark.pedantic(inert.parse, args=(text, fmt), rounds=5, iterations=1)  # type: ignore[attr-defined]
    assert result
    PARSE_MBPS[fmt] = len(text) / benchmark.stats.stats.median / 1e6  # type: ignore[attr-defined]
