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


def of_parse(parsed: list[inert.ParsedCall]) -> Outcome:
    calls = [{"name": p.name, "arguments": p.arguments} for p in parsed if p.error is None]
    return calls, sum(p.error is not None for p in parsed)


def of_events(events: list[inert.BlockEvent]) -> Outcome:
    calls = [{"name": e.name, "arguments": e.arguments} for e in events if e.kind == "closed"]
    return calls, sum(e.kind == "malformed" for e in events)


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
        events = s.draft(pieces) + s.verify(len(pieces)) + s.finish()
        assert of_events(events) == (row["calls"], row["malformed"]), pieces
