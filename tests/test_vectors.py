"""The format vectors (tests/vectors/*.jsonl): one-shot parse, and streaming
in seeded random chunkings, both give exactly the expected calls."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import inert
from speculation import chunk
from tools import committed, malformed

VECTORS = Path(__file__).resolve().parent / "vectors"


def load() -> list[dict[str, Any]]:
    rows = []
    for path in sorted(VECTORS.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


ROWS = load()


def test_every_format_has_at_least_ten_cases() -> None:
    counts = {f: 0 for f in inert.formats()}
    for row in ROWS:
        counts[row["format"]] += 1
    assert min(counts.values()) >= 10, counts


Outcome = tuple[list[dict[str, Any]], int]


def of_parse(parsed: list[inert.Call | inert.Malformed]) -> Outcome:
    calls = [{"name": p.name, "arguments": p.arguments} for p in parsed if isinstance(p, inert.Call)]
    return calls, sum(isinstance(p, inert.Malformed) for p in parsed)


def of_outcomes(outcomes: list[inert.Outcome]) -> Outcome:
    calls = [{"name": c.name, "arguments": c.arguments} for c in committed(outcomes)]
    return calls, len(malformed(outcomes))


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['format']}-{r['case']}" for r in ROWS])
def test_vector(row: dict[str, Any]) -> None:
    fmt, text, schemas = row["format"], row["output"], row.get("schemas")
    parsed = inert.parse(text, fmt, schemas=schemas)
    assert of_parse(parsed) == (row["calls"], row["malformed"])
    rng = random.Random(row["case"])
    raw = text.encode()
    for _ in range(5):
        pieces = chunk(raw, [rng.randrange(len(raw) + 1) for _ in range(rng.randrange(1, 12))]) or [raw]
        s = inert.TokenStream(fmt, schemas=schemas)
        outcomes = s.draft(pieces) + s.verify(len(pieces)) + s.finish()
        assert of_outcomes(outcomes) == (row["calls"], row["malformed"]), pieces
