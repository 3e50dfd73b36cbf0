"""The format vectors (tests/vectors/*.jsonl: layouts; tests/vectors/real/*.jsonl:
what real models write): one-shot parse, and streaming in seeded random
chunkings, both give exactly the expected calls, malformed blocks (with their
kinds) and reasoning notices, in order; speculative runs (draft windows,
corrupted drafts, corrections) release exactly what the one-shot stream does,
and each committed call's streamed arguments parse to its arguments."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import inert
from speculation import chunk
from streams import one_shot, speculated

VECTORS = Path(__file__).resolve().parents[1] / "vectors"


def load() -> list[dict[str, Any]]:
    rows = []
    for path in sorted(VECTORS.glob("**/*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


ROWS = load()


def test_every_format_has_vectors_for_layouts_and_real_output() -> None:
    counts = {f: 0 for f in inert.formats()}
    for row in ROWS:
        counts[row["format"]] += 1
    assert min(counts.values()) >= 25, counts


def options(row: dict[str, Any]) -> dict[str, Any]:
    """The keywords a vector's turn is built with: absent reasoning is the format's own."""
    kw: dict[str, Any] = {"schemas": row.get("schemas"), "in_reasoning": row.get("in_reasoning", False)}
    if "reasoning" in row:
        kw["reasoning"] = None if row["reasoning"] is None else tuple(row["reasoning"])
    return kw


def item(found: inert.Call | inert.Malformed) -> dict[str, Any]:
    if isinstance(found, inert.Malformed):
        return {"malformed": found.kind}
    out: dict[str, Any] = {"name": found.name, "arguments": found.arguments}
    if found.call_id is not None:
        out["call_id"] = found.call_id
    return out


def expected(row: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """Ids are checked where the vector names one."""
    return row["expect"], row.get("unopened", 0)


def comparable(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in g.items() if k != "call_id" or "call_id" in w} for g, w in zip(got, want, strict=False)]


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['format']}-{r['case']}" for r in ROWS])
def test_vector(row: dict[str, Any]) -> None:
    fmt, text = row["format"], row["output"]
    want, unopened = expected(row)
    parsed = inert.parse(text, fmt, **options(row))
    found = [item(p) for p in parsed if not isinstance(p, inert.ReasoningUnopened)]
    assert len(found) == len(want) and comparable(found, want) == want, found
    assert sum(isinstance(p, inert.ReasoningUnopened) for p in parsed) == unopened
    rng = random.Random(row["case"])
    raw = text.encode()
    for _ in range(5):
        pieces = chunk(raw, [rng.randrange(len(raw) + 1) for _ in range(rng.randrange(1, 12))]) or [raw]
        s = inert.TokenStream(fmt, **options(row))
        outcomes = s.draft(pieces) + s.verify(len(pieces)) + s.finish()
        streamed = [
            item(o.call) if isinstance(o, inert.CallCommitted) else item(o.malformed)
            for o in outcomes
            if isinstance(o, inert.CallCommitted | inert.BlockMalformed)
        ]
        assert len(streamed) == len(want) and comparable(streamed, want) == want, pieces
        assert len(s.notices()) == unopened, pieces


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['format']}-{r['case']}" for r in ROWS])
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_vector_streams_under_speculation_as_one_shot(row: dict[str, Any], data: st.DataObject) -> None:
    raw = row["output"].encode()
    final, outcomes = one_shot(raw, row["format"], **options(row))
    calls = [o.call for o in outcomes if isinstance(o, inert.CallCommitted)]
    clean = [i for i in sorted(final.starts) if i not in final.marks]
    assert [final.starts[i]["function"]["name"] for i in clean] == [c.name for c in calls]
    for i, call in zip(clean, calls, strict=True):
        assert json.loads(final.arguments[i]) == call.arguments, (final.arguments[i], call.arguments)
    assert speculated(raw, row["format"], data, final, **options(row)) == final
