"""The invariants, over random transcripts, tokenizations, draft errors and windows."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import inert
from speculation import AcceptanceWatch, Decoder, tokenizations, transcripts

EFFECTS = {"lookup": "read_only", "save": "write", "put": "idempotent"}  # "nope" is unknown: a write


def one_shot(text: bytes) -> list[inert.ParsedCall]:
    return inert.parse(text)


def accepted_events(events: list[inert.BlockEvent]) -> list[inert.BlockEvent]:
    """What a gate would commit: the last closed/malformed event of each block that is accepted."""
    current: dict[int, inert.BlockEvent] = {}
    out = []
    for e in events:
        if e.kind in ("closed", "malformed"):
            current[e.block] = e
        elif e.kind == "retracted":
            current.pop(e.block, None)
        elif e.kind == "accepted" and e.block in current:
            out.append(current.pop(e.block))
    return out


@given(st.data())
def test_incremental_with_rollback_equals_one_shot(data: st.DataObject) -> None:
    text = data.draw(transcripts())
    target = data.draw(tokenizations(text))
    stream = inert.TokenStream("hermes", "t")
    events: list[inert.BlockEvent] = []
    decoder = Decoder(target, data.draw)
    decoder.run(lambda w: events.extend(stream.draft(w)), lambda n, c: events.extend(stream.verify(n, c)))
    events.extend(stream.finish())
    assert stream.accepted_text() == text.encode()
    got = [(e.name, e.arguments, e.reason) for e in accepted_events(events)]
    assert got == [(c.name, c.arguments, c.error) for c in one_shot(text.encode())]


@given(st.data())
def test_any_chunking_gives_the_same_blocks(data: st.DataObject) -> None:
    text = data.draw(transcripts())
    a, b = data.draw(tokenizations(text)), data.draw(tokenizations(text))

    def blocks(pieces: list[bytes]) -> list[tuple[Any, ...]]:
        s = inert.TokenStream("hermes", "t")
        evs = s.draft(pieces) + s.verify(len(pieces)) + s.finish()
        return [(e.name, e.arguments, e.raw_arguments, e.reason) for e in accepted_events(evs)]

    assert blocks(a) == blocks(b)


@given(st.data())
def test_writes_wait_for_acceptance_and_results_match_the_accepted_text(data: st.DataObject) -> None:
    text = data.draw(transcripts())
    target = data.draw(tokenizations(text))
    policy = data.draw(st.sampled_from(["read_eager", "defer"]))
    watch = AcceptanceWatch("hermes")
    tools = {"lookup": lambda **kw: "read", "save": watch.tool("save"), "put": watch.tool("put"), "nope": watch.tool("nope")}
    orch = inert.Orchestrator(EFFECTS, tools, turn_key="turn-p", policy=policy)

    decoder = Decoder(target, data.draw)
    decoder.run(orch.draft, orch.verify, watch.accepting)
    report = orch.finish()
    assert watch.problems == []

    expected = [c for c in one_shot(text.encode()) if c.error is None]
    assert [(r.name, r.arguments) for r in report.results] == [(c.name, c.arguments) for c in expected]
    assert len(report.malformed) == sum(c.error is not None for c in one_shot(text.encode()))
    effects = [watch.key(r.name, r.arguments) for r in report.results if r.effect is not inert.EffectClass.READ_ONLY]
    assert Counter(watch.ran) == Counter(effects), "each accepted effect runs exactly once"
    assert report.violations == []
    # One commit key: a pure function of the turn key and the accepted tokens through the block's end.
    keys = [r.commit_key for r in report.results] + [m.commit_key for m in report.malformed]
    assert len(set(keys)) == len(keys), "every block has its own key"
    ends = Counter(b.span[1] for b in [*report.results, *report.malformed])
    for r in report.results:
        if ends[r.span[1]] == 1:
            assert r.commit_key == inert.commit_key("turn-p", decoder.accepted[: r.span[1]])
    if policy == "defer":
        assert not any(r.early for r in report.results)


@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=40), st.lists(st.integers(0, 8), max_size=40))
def test_arbitrary_bytes_never_raise_and_keep_the_event_grammar(data: bytes, cuts: list[int], verdicts: list[int]) -> None:
    """Fuzz through the API: any bytes, any chunking, any verdicts. Model output is data,
    so nothing raises, and each block's events follow opened -> closed|malformed -> accepted|retracted."""
    from speculation import chunk

    pieces = chunk(b"<tool_call>" + data, cuts) if data else [b"<tool_call>"]
    stream = inert.TokenStream(max_block_bytes=128)
    events: list[inert.BlockEvent] = []
    verdicts = verdicts or [8]
    i = 0
    for piece_start in range(0, len(pieces), 4):
        events += stream.draft(pieces[piece_start:piece_start + 4])
        events += stream.verify(min(verdicts[i % len(verdicts)], stream.pending_len))
        i += 1
    events += stream.finish()
    state: dict[int, str] = {}
    for e in events:
        before = state.get(e.block)
        allowed = {"opened": [None], "closed": ["opened"], "malformed": ["opened"],
                   "accepted": ["closed", "malformed"], "retracted": ["opened", "closed", "malformed"]}[e.kind]
        assert before in allowed, f"{e.kind} after {before} for block {e.block}"
        state[e.block] = "opened" if e.kind == "retracted" else e.kind
        if e.kind == "malformed":
            assert e.reason
    # Every block that survived ended in accepted (or was retired by a retraction of its opener).
    assert all(s in ("accepted", "opened") for s in state.values())
    assert len(stream.accepted_text()) <= len(b"<tool_call>" + data)
