"""The serving surface, side by side in one run: attaching a shared 150k-entry
Vocabulary against building a stream with no vocabulary; one sequence's 8-token
numpy draft + verify through TokenStream; StreamBatch steps at 64 and 512
sequences against a Python loop over TokenStreams. Run: pytest benches --benchmark-only

Each step drafts 8 ids per sequence, accepts 6, rejects 2 and appends a
correction, over prose with a tool-call block every few steps. The batch steps
follow a speculative engine (the accepted text is the model's output, the rejected
drafts are wrong tokens), and once more with garbled accepted text, the worst case
for the scanner.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from itertools import cycle, islice
from typing import Any

import numpy as np
import pytest

import inert
from conftest import MEANS, record

K = 8
STEPS = 20
VOCAB_SIZE = 150_000

BLOCK = '<tool_call>\n{"name": "search", "arguments": {"q": "weather in Paris"}}\n</tool_call>\n'
PROSE = "The forecast says light rain later today, so take an umbrella. "
PIECES = re.findall(r"\w+|\s+|[^\w\s]", (PROSE * 3 + BLOCK) * 4)


def synthetic_vocabulary() -> tuple[inert.Vocabulary, list[int]]:
    """150k pieces: the stream's own pieces first, then filler; the stream as ids."""
    distinct = sorted(set(PIECES))
    pieces = distinct + [f"tok{i}" for i in range(VOCAB_SIZE - len(distinct))]
    ids = {p: i for i, p in enumerate(distinct)}
    return inert.Vocabulary(pieces), [ids[p] for p in PIECES]


VOCAB, STREAM_IDS = synthetic_vocabulary()


def windows(rows: int) -> list[np.ndarray]:
    """STEPS (rows, K) int32 windows cut from the stream one after the other (garbled
    when 6 of each are accepted: see test_batch_step_garbled)."""
    src = cycle(STREAM_IDS)
    return [np.array([[next(src) for _ in range(K)] for _ in range(rows)], dtype=np.int32) for _ in range(STEPS)]


Step = tuple[np.ndarray, np.integer[Any]]


def numpy_steps(target: Any, steps: Iterable[Step], *, take: bool = False) -> Callable[[], None]:
    """One benchmark round: the next STEPS (window, correction) pairs of ``steps``, built
    beforehand, drafted onto ``target`` (a TokenStream or an Orchestrator), 6 accepted and
    the correction appended, all numpy; with ``take``, what a step released is taken, as
    a server would."""
    six = np.int64(6)
    source = iter(steps)

    def run() -> None:
        done = 0
        for w, fix in islice(source, STEPS):
            target.draft(w)
            target.verify(six, fix)
            if take and target.has_released:
                target.take_released()
            done += 1
        assert done == STEPS, "the benchmark ran out of steps: build more rounds of them"

    return run


def model_steps(rounds: int, start: int = 0) -> list[Step]:
    """One sequence's speculative steps for ``rounds`` rounds from stream position
    ``start`` on (`draft_window`): the accepted text is the model's output, so its
    blocks close."""
    return [
        (np.array(w, dtype=np.int32), np.int32(c))
        for w, c in (draft_window(at) for at in range(start, start + rounds * STEPS * 7, 7))
    ]


@pytest.mark.parametrize("vocab", ["none", "shared_150k"])
def test_attach(benchmark: object, vocab: str) -> None:
    """What starting a turn costs: with no vocabulary, and with a shared 150k one."""
    v = VOCAB if vocab == "shared_150k" else None
    benchmark.group = "attach a vocabulary"  # type: ignore[attr-defined]
    benchmark(lambda: inert.TokenStream("hermes", "turn", vocab=v))  # type: ignore[attr-defined]
    record(benchmark, f"attach:{vocab}")


def test_stream_numpy_step(benchmark: object) -> None:
    stream = inert.TokenStream("hermes", "turn", vocab=VOCAB)
    run = numpy_steps(stream, model_steps(rounds=52))
    benchmark.group = "one sequence, numpy k=8"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=50, iterations=1, warmup_rounds=2)  # type: ignore[attr-defined]
    record(benchmark, "stream:numpy_step", per=STEPS)


BATCH_ROUNDS = 15
LOOP_ROUNDS = 5


def draft_window(at: int) -> tuple[list[int], int]:
    """A speculative engine's step at stream position ``at``: the next 6 tokens the model
    writes and 2 wrong ones drafted, its 7th token the correction. Accepting 6 and the
    correction moves the stream on by 7, and every step rolls 2 tokens back."""
    period = len(STREAM_IDS)
    true = [STREAM_IDS[(at + i) % period] for i in range(7)]
    wrong = [STREAM_IDS[(at + 100 + i) % period] for i in range(2)]
    return true[:6] + wrong, true[6]


def speculative(rows: int, steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``steps`` (rows, K) int32 draft windows and each row's correction (`draft_window`);
    row r's model writes the stream from its own offset."""
    out = []
    for step in range(steps):
        tokens = np.empty((rows, K), dtype=np.int32)
        corrections = np.empty(rows, dtype=np.int64)
        for r in range(rows):
            window, corrections[r] = draft_window(r * 37 + step * 7)
            tokens[r] = window
        out.append((tokens, corrections))
    return out


@pytest.mark.parametrize("n", [64, 512])
def test_batch_step(benchmark: object, n: int) -> None:
    batch = inert.StreamBatch("hermes", VOCAB)
    for seq in range(n):
        batch.add(seq, f"turn-{seq}")
    seqs = np.arange(n, dtype=np.int64)
    steps = iter(speculative(n, STEPS * (BATCH_ROUNDS + 1)))
    accepted = np.full(n, 6, dtype=np.int64)

    def run() -> None:
        for _ in range(STEPS):
            tokens, corrections = next(steps)
            batch.draft(seqs, tokens)
            batch.verify(seqs, accepted, corrections)

    benchmark.group = "batch step, k=8"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=BATCH_ROUNDS, iterations=1, warmup_rounds=1)  # type: ignore[attr-defined]
    record(benchmark, f"batch:{n}", per=STEPS)


def test_batch_step_garbled(benchmark: object) -> None:
    """The same 512 sequences where every step accepts 6 tokens of a rolling window and a
    fixed correction: the accepted text is garbled, so most sequences sit in a block that
    never closes and every byte is scanned as block body (the worst case, not serving)."""
    n = 512
    batch = inert.StreamBatch("hermes", VOCAB)
    for seq in range(n):
        batch.add(seq, f"turn-{seq}")
    seqs = np.arange(n, dtype=np.int64)
    steps = windows(n)
    accepted = np.full(n, 6, dtype=np.int64)
    corrections = np.full(n, STREAM_IDS[0], dtype=np.int64)

    def run() -> None:
        for tokens in steps:
            batch.draft(seqs, tokens)
            batch.verify(seqs, accepted, corrections)

    benchmark.group = "batch step, k=8"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=BATCH_ROUNDS, iterations=1, warmup_rounds=1)  # type: ignore[attr-defined]
    record(benchmark, f"batch_garbled:{n}", per=STEPS)


@pytest.mark.parametrize("n", [512])
def test_python_loop_step(benchmark: object, n: int) -> None:
    """The baseline: a Python loop over n TokenStreams, lists of ids, the same steps."""
    streams = [inert.TokenStream("hermes", f"turn-{seq}", vocab=VOCAB) for seq in range(n)]
    steps = iter([(t.tolist(), c.tolist()) for t, c in speculative(n, STEPS * (LOOP_ROUNDS + 1))])

    def run() -> None:
        for _ in range(STEPS):
            tokens, corrections = next(steps)
            for stream, row in zip(streams, tokens, strict=True):
                stream.draft(row)
            for stream, correction in zip(streams, corrections, strict=True):
                stream.verify(6, correction)

    benchmark.group = "batch step, k=8"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=LOOP_ROUNDS, iterations=1, warmup_rounds=1)  # type: ignore[attr-defined]
    record(benchmark, f"loop:{n}", per=STEPS)


@pytest.mark.parametrize("n", [512])
def test_python_loop_floor(benchmark: object, n: int) -> None:
    """The loop's own cost: the same two calls per sequence and step with nothing in
    them (an empty draft, a verify of nothing). The loop and the batch run the same
    core per sequence, so the batch beats the loop by about 1 + floor / (its cost per
    sequence-step): the bound the ">= 10x" target meets."""
    streams = [inert.TokenStream("hermes", f"turn-{seq}", vocab=VOCAB) for seq in range(n)]
    rows: list[list[int]] = [[] for _ in range(n)]
    zeros = [0] * n

    def run() -> None:
        for _ in range(STEPS):
            for stream, row in zip(streams, rows, strict=True):
                stream.draft(row)
            for stream, zero in zip(streams, zeros, strict=True):
                stream.verify(zero)

    benchmark.group = "batch step, k=8"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=LOOP_ROUNDS, iterations=1, warmup_rounds=1)  # type: ignore[attr-defined]
    record(benchmark, f"loop_floor:{n}", per=STEPS)


PROSE_IDS = [STREAM_IDS[i] for i, p in enumerate(PIECES) if "<" not in p and "{" not in p][:64]


def test_orchestrator_numpy_step(benchmark: object) -> None:
    """One sequence through the Orchestrator, 8-token numpy drafts with no block closing:
    what the gate adds to the core when there is nothing to dispatch (target <= 3 us)."""
    orch = inert.Orchestrator({"search": "read_only"}, {"search": lambda q: q}, vocab=VOCAB, turn_key="bench")
    src = cycle(PROSE_IDS)
    prose = [(np.array([next(src) for _ in range(K)], dtype=np.int32), np.int32(PROSE_IDS[0])) for _ in range(STEPS)]
    run = numpy_steps(orch, cycle(prose))
    benchmark.group = "one sequence, numpy k=8"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=50, iterations=1, warmup_rounds=2)  # type: ignore[attr-defined]
    record(benchmark, "orchestrator:numpy_step", per=STEPS)
    orch.finish()


def test_batch_orchestrator_step(benchmark: object) -> None:
    """64 sequences through the BatchOrchestrator over prose with a tool-call block every
    few steps, everything accepted: per step, and per call closed (each a read, run early)."""
    n = 64
    batch = inert.BatchOrchestrator({"search": "read_only"}, {"search": lambda q: q}, vocab=VOCAB)
    for seq in range(n):
        batch.add(seq, f"turn-{seq}")
    seqs = np.arange(n, dtype=np.int64)
    src = cycle(STREAM_IDS)
    steps = [np.array([[next(src) for _ in range(K)]] * n, dtype=np.int32) for _ in range(STEPS * 40)]
    it = iter(steps)
    accept = np.full(n, K, dtype=np.int64)
    closed = [0]

    def run() -> None:
        for _ in range(STEPS):
            tokens = next(it)
            out = batch.draft(seqs, tokens)
            closed[0] += sum(len(step.dispatched) for step in out.values())
            batch.verify(seqs, accept)

    benchmark.group = "batch orchestrator, 64 sequences, k=8"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=20, iterations=1, warmup_rounds=1)  # type: ignore[attr-defined]
    record(benchmark, "batch_orchestrator:64", per=STEPS)
    rounds = 21
    MEANS["batch_orchestrator:calls_per_step"] = closed[0] / (rounds * STEPS)
    for seq in range(n):
        batch.finish(seq)
    batch.close()
