"""Streaming output's cost per step, side by side in one run: one sequence's 8-token
numpy draft + verify through TokenStream without streaming, with streaming (and
take_released), and the same through the Orchestrator; streaming after 1k and 64k
accepted tokens (flat when the work is per step, not per stream); a qwen3_coder call
whose one value (16 KB and 256 KB of code, or of text that spells the format's tags
over and over) streams as it is accepted, per byte (flat when linear), beside the same
turn without streaming; one pythonic block of 2k and 32k calls, per byte.
Run: pytest benches/bench_streaming.py --benchmark-only

Each step drafts 8 ids, accepts 6, rejects 2 and appends a correction, over prose
with a hermes tool-call block every few steps (its arguments stream as accepted).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from bench_serving import STREAM_IDS, VOCAB, model_steps, numpy_steps

import inert
from conftest import record

STEPS = 20


def primed(stream: bool, accepted: int) -> inert.TokenStream:
    """A stream that has already accepted ``accepted`` tokens of the workload."""
    s = inert.TokenStream("hermes", "turn", vocab=VOCAB, stream=stream)
    ids = np.array((STREAM_IDS * (accepted // len(STREAM_IDS) + 1))[:accepted], dtype=np.int32)
    for start in range(0, accepted, 1024):
        s.draft(ids[start : start + 1024])
        s.verify(len(ids[start : start + 1024]))
        s.take_released()
    return s


@pytest.mark.parametrize(("mode", "accepted"), [("off", 1024), ("on", 1024), ("on", 65536)])
def test_token_stream_step(benchmark: object, mode: str, accepted: int) -> None:
    stream = primed(mode == "on", accepted)
    run = numpy_steps(stream, model_steps(rounds=52, start=accepted), take=mode == "on")
    benchmark.group = "streaming: one sequence, numpy k=8"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=50, iterations=1, warmup_rounds=2)  # type: ignore[attr-defined]
    record(benchmark, f"streaming:stream_{mode}@{accepted // 1024}k", per=STEPS)


@pytest.mark.parametrize("mode", ["off", "on"])
def test_orchestrator_step(benchmark: object, mode: str) -> None:
    orch = inert.Orchestrator(
        {"search": "read_only"},
        {"search": lambda q: q},
        format="hermes",
        turn_key="t",
        vocab=VOCAB,
        stream=mode == "on",
    )
    run = numpy_steps(orch, model_steps(rounds=32))
    benchmark.group = "streaming: Orchestrator, numpy k=8"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=30, iterations=1, warmup_rounds=2)  # type: ignore[attr-defined]
    record(benchmark, f"streaming:orchestrator_{mode}", per=STEPS)


sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from render import xml_call  # noqa: E402

VALUES = {"code": "    total += item.price * item.count  # a < b\n", "tags": "</parameter>x<parameter=k"}


def whole_turn(fmt: str, raw: bytes, token: int, window: int, *, stream: bool = True) -> Callable[[], None]:
    """One benchmark round: a turn of ``raw`` cut into ``token``-byte pieces, ``window`` of them
    drafted and accepted per step, what each step released taken, as a server would."""
    pieces = [raw[i : i + token] for i in range(0, len(raw), token)]

    def run() -> None:
        s = inert.TokenStream(fmt, "t", stream=stream, max_block_bytes=1 << 24)
        for i in range(0, len(pieces), window):
            s.draft(pieces[i : i + window])
            s.verify(len(pieces[i : i + window]))
            if s.has_released:
                s.take_released()
        s.finish()

    return run


@pytest.mark.parametrize(
    ("kind", "kb", "mode"),
    [("code", 16, "on"), ("code", 256, "on"), ("code", 256, "off"), ("tags", 16, "on"), ("tags", 256, "on")],
)
def test_xml_value(benchmark: object, kind: str, kb: int, mode: str) -> None:
    unit = VALUES[kind]
    text = xml_call("qwen3_coder", "write_file", [("path", "a.py"), ("content", unit * (kb * 1024 // len(unit)))])
    raw = text.encode()
    run = whole_turn("qwen3_coder", raw, 16, 1, stream=mode == "on")
    benchmark.group = "streaming: a qwen3_coder value, 16-byte tokens"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)  # type: ignore[attr-defined]
    record(benchmark, f"streaming:xml_{kind}_{mode}@{kb}k", per=len(raw))


@pytest.mark.parametrize("calls", [2_000, 32_000])
def test_many_calls_in_one_block(benchmark: object, calls: int) -> None:
    """One pythonic list of many calls, 4-byte tokens, 8 per step, streamed: per byte (flat
    when each call costs the same however many came before it in the open block)."""
    raw = ("[" + ", ".join(f"f(a={i})" for i in range(calls)) + "]").encode()
    run = whole_turn("pythonic", raw, 4, 8)
    benchmark.group = "streaming: many calls in one block"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)  # type: ignore[attr-defined]
    record(benchmark, f"streaming:calls@{calls}", per=len(raw))
