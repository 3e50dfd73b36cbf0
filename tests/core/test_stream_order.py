"""Outcomes go out in stream order whatever the tokens and verify steps: a stream
that drafts and verifies an output in any grouping, with rejected tokens between,
reports exactly the one-shot parse's calls and malformed blocks, in its order.

The outputs mix real calls with fragments of the format's own syntax, so one token
often ends one block and opens or ends the next (a structural block is confirmed
by what follows it, a later block in that token may be malformed or too large)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import inert
from render import render
from speculation import Decoder, chunk, corruptions_for
from streams import PER_FORMAT

FORMATS = inert.formats()
FRAGMENTS = [
    "[TOOL_CALLS]",
    "[ARGS]",
    "<x>",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    '"',
    ",",
    ";",
    "1",
    "f",
    " ",
    "\n",
    "<tool_call>",
    "</tool_call>",
    '{"name": "g", "arguments": {}}',
    "[g(a=1)]",
    "<|tool_call|>",
    "<|/tool_call|>",
    "functools[",
    "<think>",
    "</think>",
]

Final = tuple[str, str | None, str]


def finals(outcomes: list[inert.Outcome]) -> list[Final]:
    """What became final, in the order it was reported."""
    out: list[Final] = []
    for o in outcomes:
        if isinstance(o, inert.CallCommitted):
            out.append(("call", o.call.name, json.dumps(o.call.arguments, sort_keys=True)))
        elif isinstance(o, inert.BlockMalformed):
            out.append(("malformed", str(o.malformed.kind), str(o.malformed.offset)))
    return out


def parsed(found: list[inert.Call | inert.Malformed | inert.ReasoningUnopened]) -> list[Final]:
    """The one-shot parse, as ``finals`` reads a stream (which lists notices apart)."""
    return [
        ("call", p.name, json.dumps(p.arguments, sort_keys=True))
        if isinstance(p, inert.Call)
        else ("malformed", str(p.kind), str(p.offset))
        for p in found
        if not isinstance(p, inert.ReasoningUnopened)
    ]


@st.composite
def outputs(draw: Any, fmt: str) -> str:
    """Rendered calls with fragments of call syntax spliced in anywhere."""
    calls = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["f", "g", "h"]),
                st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["x", "yy" * 9]), max_size=2),
            ),
            min_size=1,
            max_size=3,
        )
    )
    text = render(fmt, calls)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(FRAGMENTS)) + text[at:]
    return text


@pytest.mark.parametrize("fmt", FORMATS)
@PER_FORMAT
@given(data=st.data())
def test_any_grouping_reports_the_one_shot_parse_in_its_order(fmt: str, data: st.DataObject) -> None:
    text = data.draw(outputs(fmt))
    limit = data.draw(st.sampled_from([1 << 20, 16, 24, 40, 64]))
    raw = text.encode()
    target = chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=30))) or [raw]
    stream = inert.TokenStream(fmt, "t", max_block_bytes=limit)
    outcomes: list[inert.Outcome] = []
    decoder = Decoder(target, data.draw, corruptions=corruptions_for(fmt))
    decoder.run(lambda w: outcomes.extend(stream.draft(w)), lambda n, c: outcomes.extend(stream.verify(n, c)))
    outcomes += stream.finish()
    assert stream.accepted_text() == raw
    assert finals(outcomes) == parsed(inert.parse(text, fmt, max_block_bytes=limit))


# One token confirms a block and ends a later one. In the two mistral cases (found by a
# helper) the later block went out first: in parse, and stepwise in a stream, though not
# in one verify. The llama3_json and pythonic cases are the same shape in other formats.
CASES = [
    (
        "mistral",
        ['[TOOL_CALLS]f[ARGS]{"a": 1', "}[TOOL_CALLS]<x>[TOOL_CALLS]g"],
        1 << 20,
        [("call", "f"), ("malformed", "invalid_name"), ("malformed", "unterminated")],
    ),
    (
        "mistral",
        ['[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]b[ARGS]{"x": "yyyyyyyyyyyyyyyy"}'],
        20,
        [("call", "a"), ("malformed", "too_large")],
    ),
    (
        "llama3_json",
        ['{"name": "f", "parameters": {}', '}; {"name": 1}'],
        1 << 20,
        [("call", "f"), ("malformed", "invalid_json")],
    ),
    ("pythonic", ["[f(a=1), g(b=", "2)]"], 1 << 20, [("call", "f"), ("call", "g")]),
]


@pytest.mark.parametrize(("fmt", "pieces", "limit", "want"), CASES)
def test_one_token_ending_two_blocks_reports_them_in_order(
    fmt: str, pieces: list[str], limit: int, want: list[tuple[str, str]]
) -> None:
    assert [f[:2] for f in parsed(inert.parse("".join(pieces), fmt, max_block_bytes=limit))] == want
    for grouped in (False, True):
        stream = inert.TokenStream(fmt, "t", max_block_bytes=limit)
        outcomes: list[inert.Outcome] = []
        for group in [pieces] if grouped else [[p] for p in pieces]:
            outcomes += stream.draft(group) + stream.verify(len(group))
        outcomes += stream.finish()
        assert [f[:2] for f in finals(outcomes)] == want, f"grouped={grouped}"
