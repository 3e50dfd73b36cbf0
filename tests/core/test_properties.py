"""The invariants, over random transcripts, tokenizations, draft errors and windows."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import inert
from speculation import AcceptanceWatch, Decoder, tokenizations, transcripts

EFFECTS = {"lookup": "read_only", "save": "write", "put": "idempotent"}  # "nope" is unknown: a write


def one_shot(text: bytes) -> list[inert.Call | inert.Malformed | inert.ReasoningUnopened]:
    return inert.parse(text)


def view(item: inert.Call | inert.Malformed | inert.ReasoningUnopened) -> tuple[Any, ...]:
    if isinstance(item, inert.Call):
        return ("call", item.name, item.arguments, item.raw_arguments)
    assert isinstance(item, inert.Malformed), item
    return ("malformed", item.kind, item.offset, item.reason)


def accepted(outcomes: list[inert.Outcome]) -> list[tuple[Any, ...]]:
    """What the accepted stream holds: committed calls and malformed blocks, in order."""
    return [
        view(o.call) if isinstance(o, inert.CallCommitted) else view(o.malformed)
        for o in outcomes
        if isinstance(o, (inert.CallCommitted, inert.BlockMalformed))
    ]


@given(st.data())
def test_incremental_with_rollback_equals_one_shot(data: st.DataObject) -> None:
    text = data.draw(transcripts())
    target = data.draw(tokenizations(text))
    stream = inert.TokenStream("hermes", "t")
    outcomes: list[inert.Outcome] = []
    decoder = Decoder(target, data.draw)
    decoder.run(lambda w: outcomes.extend(stream.draft(w)), lambda n, c: outcomes.extend(stream.verify(n, c)))
    outcomes.extend(stream.finish())
    assert stream.accepted_text() == text.encode()
    assert accepted(outcomes) == [view(c) for c in one_shot(text.encode())]


@given(st.data())
def test_any_chunking_gives_the_same_blocks(data: st.DataObject) -> None:
    text = data.draw(transcripts())
    a, b = data.draw(tokenizations(text)), data.draw(tokenizations(text))

    def blocks(pieces: list[bytes]) -> list[tuple[Any, ...]]:
        s = inert.TokenStream("hermes", "t")
        return accepted(s.draft(pieces) + s.verify(len(pieces)) + s.finish())

    assert blocks(a) == blocks(b)


@given(st.data())
def test_writes_wait_for_acceptance_and_results_match_the_accepted_text(data: st.DataObject) -> None:
    text = data.draw(transcripts())
    target = data.draw(tokenizations(text))
    policy = data.draw(st.sampled_from(["read_eager", "defer"]))
    watch = AcceptanceWatch("hermes")
    tools = {
        "lookup": lambda **kw: "read",
        "save": watch.tool("save"),
        "put": watch.tool("put"),
        "nope": watch.tool("nope"),
    }
    with pytest.warns(UserWarning, match="'nope' has a callable but no entry in the effect table"):
        orch = inert.Orchestrator(EFFECTS, tools, turn_key="turn-p", policy=policy)

    decoder = Decoder(target, data.draw)
    decoder.run(orch.draft, orch.verify, watch.accepting)
    report = orch.finish()
    assert watch.problems == []

    expected = [c for c in one_shot(text.encode()) if isinstance(c, inert.Call)]
    assert [(r.name, r.arguments) for r in report.results] == [(c.name, c.arguments) for c in expected]
    assert len(report.malformed) == sum(isinstance(c, inert.Malformed) for c in one_shot(text.encode()))
    effects = [watch.key(r.name, r.arguments) for r in report.results if r.effect is not inert.EffectClass.READ_ONLY]
    assert Counter(watch.ran) == Counter(effects), "each accepted effect runs exactly once"
    assert report.violations == []
    # One commit key: a pure function of the turn key and the accepted tokens through the block's end,
    # with the ordinal of the block among those ending in the same token.
    keys = [r.commit_key for r in report.results] + [m.commit_key for m in report.malformed]
    assert len(set(keys)) == len(keys), "every block has its own key"
    by_end: dict[int, set[str]] = {}
    items: list[inert.CallResult | inert.Malformed] = [*report.results, *report.malformed]
    for item in items:
        by_end.setdefault(item.span[1], set()).add(item.commit_key)
    for end, ended_here in by_end.items():
        assert ended_here == {inert.commit_key("turn-p", decoder.accepted[:end], i) for i in range(len(ended_here))}
    if policy == "defer":
        assert not any(r.early for r in report.results)


@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=40), st.lists(st.integers(0, 8), max_size=40))
def test_arbitrary_bytes_never_raise_and_keep_the_outcome_grammar(
    data: bytes, cuts: list[int], verdicts: list[int]
) -> None:
    """Fuzz through the API: any bytes, any chunking, any verdicts. Model output is data,
    so nothing raises; each call is closed, then committed or retracted exactly once, and
    by the end of the turn every closed call has been committed or retracted."""
    from speculation import chunk

    pieces = chunk(b"<tool_call>" + data, cuts) if data else [b"<tool_call>"]
    stream = inert.TokenStream(max_block_bytes=128)
    outcomes: list[inert.Outcome] = []
    verdicts = verdicts or [8]
    for i, piece_start in enumerate(range(0, len(pieces), 4)):
        outcomes += stream.draft(pieces[piece_start : piece_start + 4])
        outcomes += stream.verify(min(verdicts[i % len(verdicts)], stream.pending_len))
    outcomes += stream.finish()
    assert_outcome_grammar(outcomes)
    assert len(stream.accepted_text()) <= len(b"<tool_call>" + data)
    if stream.accepted_text().startswith(b"<tool_call>"):
        # The block opened by the accepted first tokens ends by the end of the turn: as a
        # call, or malformed (unterminated when it never closed); never left open in silence.
        firsts = [
            o.call if isinstance(o, inert.CallCommitted) else o.malformed
            for o in outcomes
            if isinstance(o, (inert.CallCommitted, inert.BlockMalformed))
        ]
        assert any(f.start == 0 for f in firsts), outcomes


def assert_outcome_grammar(outcomes: list[inert.Outcome]) -> None:
    """closed -> committed | retracted, per call object; nothing left open; malformed blocks have a reason."""
    live: set[int] = set()
    done: set[int] = set()
    for o in outcomes:
        if isinstance(o, inert.BlockMalformed):
            assert o.malformed.reason and o.malformed.kind
            continue
        key = id(o.call)
        if isinstance(o, inert.CallClosed):
            assert key not in live and key not in done, f"closed twice: {o}"
            live.add(key)
        else:
            assert key in live, f"{o.kind} of a call that is not closed: {o}"
            live.remove(key)
            done.add(key)
    assert not live, "every closed call is committed or retracted by the end of the turn"
