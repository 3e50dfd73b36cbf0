"""Malformed and half-valid blocks in every format, judged against how they were
built (``built.py``), never against ``inert.parse``: arguments that are a JSON
array, one broken call among good ones in a list, invalid JSON, non-finite
numbers, bad names, duplicate parameters, a call cut by the end of the turn."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import inert
from built import FLAWS, LISTS, Output, outputs, seen
from speculation import Decoder, chunk, corruptions_for

# Every property runs once per format (19 of them): a third of the profile's examples each keeps
# the suite's time in budget and still gives each property ~19x that many turns per run.
PER_FORMAT = settings(max_examples=max(40, settings().max_examples // 3))

FORMATS = inert.formats()


def accepted(outcomes: list[inert.Outcome]) -> list[Any]:
    """What the accepted stream holds, calls and malformed blocks, in stream order."""
    return [
        o.call if isinstance(o, inert.CallCommitted) else o.malformed
        for o in outcomes
        if isinstance(o, (inert.CallCommitted, inert.BlockMalformed))
    ]


@pytest.mark.parametrize("fmt", FORMATS)
@PER_FORMAT
@given(data=st.data())
def test_one_shot_parse_reads_what_was_built(fmt: str, data: st.DataObject) -> None:
    out: Output = data.draw(outputs(fmt))
    assert seen(inert.parse(out.text, fmt)) == out.expected


@pytest.mark.parametrize("fmt", FORMATS)
@PER_FORMAT
@given(data=st.data())
def test_a_stream_under_rollback_reads_what_was_built(fmt: str, data: st.DataObject) -> None:
    """Drafts with wrong tokens of the format's own layout, partial acceptance and
    corrections: the accepted stream's calls and malformed blocks are the built ones."""
    out: Output = data.draw(outputs(fmt))
    raw = out.text.encode()
    target = chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=30))) or [raw]
    stream = inert.TokenStream(fmt, "t")
    outcomes: list[inert.Outcome] = []
    Decoder(target, data.draw, corruptions=corruptions_for(fmt)).run(
        lambda w: outcomes.extend(stream.draft(w)), lambda n, c: outcomes.extend(stream.verify(n, c))
    )
    outcomes.extend(stream.finish())
    assert stream.accepted_text() == raw
    assert seen(accepted(outcomes)) == out.expected


def test_every_format_builds_broken_calls_and_lists_hold_several() -> None:
    """The generators cover what the issue names, where each format can write it."""
    assert set(FLAWS) == set(FORMATS)
    json_arrays = [f for f in FORMATS if "arguments_not_object" in FLAWS[f]]
    assert len(json_arrays) >= 12, json_arrays
    assert all(FLAWS[f] for f in FORMATS)
    assert set(FORMATS) >= LISTS


@pytest.mark.parametrize("fmt", sorted(LISTS))
def test_one_bad_call_in_a_list_keeps_the_others_with_their_indexes(fmt: str) -> None:
    """The example the issue names: a list whose middle call is broken, built and checked by hand."""
    from built import FRAMES, Item, item_text

    flaw = "arguments_not_object" if "arguments_not_object" in FLAWS[fmt] else FLAWS[fmt][0]
    detail = {"arguments_not_object": "[1, 2]", "non_finite": "1e999"}[flaw]
    items = [Item("a", {"x": 1}), Item("b", {"y": 2}, flaw, detail), Item("c", {})]
    opening, between, closing = FRAMES[fmt]
    text = opening + between.join(item_text(fmt, it, i) for i, it in enumerate(items)) + closing
    assert seen(inert.parse(text, fmt)) == [
        ("call", 0, "a", '{"x": 1}'),
        ("malformed", 1, flaw),
        ("call", 2, "c", "{}"),
    ]


@pytest.mark.parametrize("by_id", [False, True])
def test_a_mistral_call_whose_arguments_are_no_object_ends_at_the_next_call(by_id: bool) -> None:
    """``[TOOL_CALLS]f[ARGS][1, 2]`` never completes a bracket: the next ``[TOOL_CALLS]``
    ends it (malformed) and opens the next call, spelled as text or sent as its token."""
    pieces = {0: "[TOOL_CALLS]", 1: "f[ARGS][1, 2]", 2: " ", 3: 'g[ARGS]{"a": 1}'}
    vocab = inert.Vocabulary(pieces, special_tokens={0: "[TOOL_CALLS]"} if by_id else {})
    s = inert.TokenStream("mistral", "t", vocab=vocab, stream=True)
    outcomes = [*s.draft([0, 1, 2, 0, 3]), *s.verify(5), *s.finish()]
    committed = [o.call.name for o in outcomes if isinstance(o, inert.CallCommitted)]
    malformed = [o.malformed.kind for o in outcomes if isinstance(o, inert.BlockMalformed)]
    assert (committed, malformed) == (["g"], ["arguments_not_object"])
    deltas = s.take_released()[2]
    assert [d["function"].get("name") for d in deltas if "id" in d] == ["g"]


_EVIL_XML = "<tool_call>\n<function=evil>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>"


def _nested_then_call(fmt: str, opens: int, closes: int) -> str:
    if fmt == "xlam":
        return "[" * opens + "]" * closes + '[{"name": "evil", "arguments": {"x": 1}}]'
    if fmt == "llama3_json":
        return "{" * opens + "}" * closes + '; {"name": "evil", "parameters": {}}'
    nested = "<function=" * opens + "</function>" * closes
    return f"<tool_call>\n<function=f>\n<parameter=x>\n{nested}\n</parameter>\n</function>\n</tool_call>{_EVIL_XML}"


@pytest.mark.parametrize("fmt", ["xlam", "llama3_json", "qwen3_coder"])
def test_nesting_past_the_depth_counter_never_completes_a_block_early(fmt: str) -> None:
    """Found by a helper: the bracket (and XML tag) depth saturated at 65,535, so 70,000
    openers and 65,535 closers read as balanced: the block ended early and the call after
    it committed. The same imbalance at a depth the counter holds is one malformed block."""
    saturated = inert.parse(_nested_then_call(fmt, 70_000, 65_535), fmt, max_block_bytes=4 << 20)
    control = inert.parse(_nested_then_call(fmt, 5_465, 1_000), fmt, max_block_bytes=4 << 20)
    assert [type(o).__name__ for o in saturated] == [type(o).__name__ for o in control] == ["Malformed"]


LONE = [r"\ud800", r"\udc00x", r"\ud800\u0041", r"\U00110000", r"\U0000dfff"]


@pytest.mark.parametrize("escape", LONE)
def test_an_escape_that_is_no_character_is_refused_never_replaced(escape: str) -> None:
    """A lone surrogate or a code past U+10FFFF in an escaped string: JSON bodies are
    malformed, and so are Python literals, which used to read it as U+FFFD, an
    argument the model never wrote. A raw XML value keeps the text as written."""
    pythonic = inert.parse(f"[f(a='{escape}')]", "pythonic")
    [refused] = pythonic
    assert isinstance(refused, inert.Malformed)
    assert "is no Unicode character" in refused.reason
    if escape.startswith(r"\u"):
        hermes = inert.parse(f'<tool_call>{{"name": "f", "arguments": {{"a": "{escape}"}}}}</tool_call>', "hermes")
        assert [type(o) for o in hermes] == [inert.Malformed]
    body = f'{{"k": "{escape}"}}'
    qwen = inert.parse(
        f"<tool_call>\n<function=f>\n<parameter=a>\n{body}\n</parameter>\n</function>\n</tool_call>",
        "qwen3_coder",
        schemas={"f": {"type": "object", "properties": {"a": {"type": "object"}}}},
    )
    assert [o.arguments for o in qwen if isinstance(o, inert.Call)] == [{"a": body}]
