"""Every format: split invariance, incremental-with-rollback equals one-shot,
writes only after acceptance, over random calls (sometimes after a reasoning
section holding calls of its own), tokenizations and schedules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import inert
from calls import calls_for
from render import Calls, reasoning, render
from speculation import AcceptanceWatch, Decoder, chunk, corruptions_for
from tools import committed, malformed

FORMATS = inert.formats()


@st.composite
def outputs(draw: Any, fmt: str) -> tuple[str, Calls]:
    calls = draw(calls_for(fmt))
    before = draw(st.sampled_from(["", "Sure. ", "Let me check.\n", "<tool", "é "]))
    after = draw(st.sampled_from(["", " Done.", "\n", " é"]))
    text = render(fmt, calls, before, after)
    pair = reasoning(fmt)
    if pair is not None and draw(st.booleans()):
        # Thinking first, with calls in it: thoughts, never calls.
        thought = render(fmt, draw(calls_for(fmt)))
        assume(pair[1] not in thought and pair[1] not in text)
        text = f"{pair[0]}hmm {thought}{pair[1]}\n{text}"
    return text, calls


def normalise(args: Any) -> str:
    return json.dumps(args, sort_keys=True)


def expected(calls: Calls) -> list[tuple[str, str]]:
    return [(n, normalise(a)) for n, a in calls]


def got(parsed: list[inert.Call | inert.Malformed | inert.ReasoningUnopened]) -> list[tuple[str | None, str]]:
    calls = [p for p in parsed if isinstance(p, inert.Call)]
    assert len(calls) == len(parsed), [p for p in parsed if isinstance(p, inert.Malformed)]
    return [(p.name, normalise(p.arguments)) for p in calls]


@pytest.mark.parametrize("fmt", FORMATS)
@given(data=st.data())
def test_one_shot_parse_reads_what_was_rendered(fmt: str, data: st.DataObject) -> None:
    text, calls = data.draw(outputs(fmt))
    assert got(inert.parse(text, fmt)) == expected(calls)


@pytest.mark.parametrize("fmt", FORMATS)
@given(data=st.data())
def test_any_chunking_gives_the_same_calls(fmt: str, data: st.DataObject) -> None:
    text, calls = data.draw(outputs(fmt))
    raw = text.encode()
    pieces = chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=30)))
    s = inert.TokenStream(fmt)
    outcomes = s.draft(pieces) + s.verify(len(pieces)) + s.finish()
    assert [(c.name, normalise(c.arguments)) for c in committed(outcomes)] == expected(calls)
    assert not malformed(outcomes)


@pytest.mark.parametrize("fmt", FORMATS)
@given(data=st.data())
def test_rollback_equals_one_shot_and_writes_wait(fmt: str, data: st.DataObject) -> None:
    text, calls = data.draw(outputs(fmt))
    raw = text.encode()
    target = chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=40))) or [raw]
    watch = AcceptanceWatch(fmt)
    orch = inert.Orchestrator({}, {n: watch.tool(n) for n, _ in calls}, format=fmt, turn_key="t")  # all writes
    Decoder(target, data.draw, corruptions=corruptions_for(fmt)).run(orch.draft, orch.verify, watch.accepting)
    report = orch.finish()
    assert watch.problems == []
    assert orch.stream.accepted_text() == raw
    assert [(r.name, normalise(r.arguments)) for r in report.results] == expected(calls)
    assert sorted(watch.ran) == sorted(watch.key(r.name, r.arguments) for r in report.results)


ATTEMPTS: dict[tuple[str, str], list[str]] = {
    ("llama3_json", '{"a": 1}'): ["missing_name"],
    ("pythonic", "[1, 2]"): ["invalid_literal", "invalid_literal"],
    ("xlam", "[1, 2]"): ["invalid_json", "invalid_json"],
}
"""Text that is a block, and so malformed, in a whole-message format: an output that opens
with a JSON object (llama3_json) or a list (pythonic, xlam) is that format's call syntax,
so a list or an object that is no call is reported (per element), never taken for prose."""


@pytest.mark.parametrize("fmt", FORMATS)
def test_text_without_calls_has_no_blocks(fmt: str) -> None:
    for text in ["", "Hello there.", "x < y and y > z", "[1, 2]", '{"a": 1}']:
        found = inert.parse(text, fmt)
        assert [str(p.kind) for p in found if isinstance(p, inert.Malformed)] == ATTEMPTS.get((fmt, text), []), text
        assert [p for p in found if not isinstance(p, inert.Malformed)] == [], text


@pytest.mark.parametrize("fmt", FORMATS)
@given(data=st.data())
def test_every_key_is_the_key_of_the_tokens_through_its_block(fmt: str, data: st.DataObject) -> None:
    """Invariant 3 in every format: whatever confirms a call (a drafted token, a correction,
    the end of the turn), its key is ``commit_key(turn, pieces through its last token, ordinal)``."""
    text, _ = data.draw(outputs(fmt))
    raw = text.encode()
    target = chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=40))) or [raw]
    stream = inert.TokenStream(fmt, "turn-k")
    live: list[bytes] = []

    def check(outcomes: list[inert.Outcome]) -> None:
        for o in outcomes:
            if isinstance(o, inert.CallRetracted):
                continue  # checked when it closed; its tokens are gone now
            item = o.malformed if isinstance(o, inert.BlockMalformed) else o.call
            ordinals = [inert.commit_key("turn-k", live[: item.end], i) for i in range(8)]
            assert item.commit_key in ordinals, f"{o} is not keyed by its tokens"

    def draft(window: list[bytes]) -> None:
        live.extend(window)
        check(stream.draft(window))

    def verify(n: int, correction: bytes | None) -> None:
        del live[len(live) - stream.pending_len + n :]
        live.extend([correction] if correction is not None else [])
        check(stream.verify(n, correction))

    Decoder(target, data.draw, corruptions=corruptions_for(fmt)).run(draft, verify)
    check(stream.finish())
