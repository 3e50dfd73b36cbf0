"""StreamBatch against a Python loop over TokenStreams and a peer parser, side by side
in one run, on the same speculative steps (bench_serving.py's: 8 ids drafted per
sequence, 6 accepted, 2 rejected, a correction appended, over prose with a Hermes
tool-call block every few steps).

    python benches/bench_peers.py [--rows 512] [--steps 40] [--rounds 7]

The peer is the `tool-parser` crate (the Rust tool parser of the SGLang model gateway,
Qwen/Hermes format), built from benches/peer as a throwaway binary outside the tree:

    cargo build --release --manifest-path benches/peer/Cargo.toml --target-dir /tmp/inert-peer

(or point INERT_PEER_BIN at it). It has no rollback, keys or ledger, so it is fed only
what each step accepts (the 6 tokens' text and the correction's), one chunk per
sequence and step; inert is fed the whole draft and the verify. Each figure is the best
round's mean per whole step (all sequences). Without the binary the peer row is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_serving as b

import inert

T = TypeVar("T")
PEER_BIN = Path(os.environ.get("INERT_PEER_BIN", Path(tempfile.gettempdir(), "inert-peer/release/inert-peer-bench")))


def best_step(setup: Callable[[], T], run_round: Callable[[T], None], rounds: int, steps: int) -> float:
    """Seconds per step of the best of ``rounds`` calls of ``run_round`` (each ``steps``
    steps), each on a fresh ``setup()``, which is not timed (as the peer's parsers are not)."""
    best = float("inf")
    for _ in range(rounds):
        state = setup()
        t = time.perf_counter()
        run_round(state)
        best = min(best, time.perf_counter() - t)
    return best / steps


def batch_step(rows: int, steps: int, rounds: int) -> float:
    work = b.speculative(rows, steps)
    seqs = np.arange(rows, dtype=np.int64)
    accepted = np.full(rows, 6, dtype=np.int64)

    def setup() -> inert.StreamBatch:
        batch = inert.StreamBatch("hermes", b.VOCAB)
        for s in range(rows):
            batch.add(s, f"turn-{s}")
        return batch

    def run_round(batch: inert.StreamBatch) -> None:
        for tokens, corrections in work:
            batch.draft(seqs, tokens)
            batch.verify(seqs, accepted, corrections)

    return best_step(setup, run_round, rounds, steps)


def loop_step(rows: int, steps: int, rounds: int) -> float:
    work = [(t.tolist(), c.tolist()) for t, c in b.speculative(rows, steps)]

    def setup() -> list[inert.TokenStream]:
        return [inert.TokenStream("hermes", f"turn-{s}", vocab=b.VOCAB) for s in range(rows)]

    def run_round(streams: list[inert.TokenStream]) -> None:
        for tokens, corrections in work:
            for stream, row in zip(streams, tokens, strict=True):
                stream.draft(row)
            for stream, c in zip(streams, corrections, strict=True):
                stream.verify(6, c)

    return best_step(setup, run_round, rounds, steps)


def peer_step(rows: int, steps: int, rounds: int) -> float | None:
    if not PEER_BIN.exists():
        return None
    piece = {i: b.VOCAB.piece(i).decode() for i in set(b.STREAM_IDS)}
    chunks = [
        ["".join(piece[int(i)] for i in tokens[r, :6]) + piece[int(corrections[r])] for r in range(rows)]
        for tokens, corrections in b.speculative(rows, steps)
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"rounds": rounds, "steps": chunks}, f)
    try:
        out = subprocess.run([str(PEER_BIN), f.name], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    return float(json.loads(out)["us_per_step"]) * 1e-6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=512)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    batch = batch_step(a.rows, a.steps, a.rounds)
    loop = loop_step(a.rows, a.steps, max(2, a.rounds // 2))
    peer = peer_step(a.rows, a.steps, a.rounds)
    print(f"{a.rows} sequences x 8-token drafts (6 accepted + correction), {a.steps} steps, best of {a.rounds}")
    print(f"  {'inert StreamBatch':<42} {batch * 1e6:9.1f} us/step  {batch * 1e6 / a.rows:7.3f} us/seq-step")
    print(
        f"  {'Python loop over TokenStreams':<42} {loop * 1e6:9.1f} us/step  {loop * 1e6 / a.rows:7.3f} us/seq-step"
        f"   loop / batch = {loop / batch:5.2f}"
    )
    if peer is None:
        print(f"  peer: {PEER_BIN} not built (see this file's docstring)")
    else:
        print(
            f"  {'tool-parser 1.10 QwenParser (accepted text)':<42} {peer * 1e6:9.1f} us/step  "
            f"{peer * 1e6 / a.rows:7.3f} us/seq-step   peer / batch = {peer / batch:5.2f}"
        )


if __name__ == "__main__":
    main()
