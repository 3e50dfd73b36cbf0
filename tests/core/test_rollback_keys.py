"""Rollback restores the right state, in every format: after any draft or verify,
every live call (closed and not retracted) is keyed by the live tokens through
its block, and a verify retracts exactly the calls whose blocks reach a rejected
token, the block closed by the first rejected token included."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import inert
from built import outputs
from render import render
from speculation import Decoder, chunk, corruptions_for

# Every property runs once per format (19 of them): a third of the profile's examples each keeps
# the suite's time in budget and still gives each property ~19x that many turns per run.
PER_FORMAT = settings(max_examples=max(40, settings().max_examples // 3))

FORMATS = inert.formats()
TURN = "turn-r"


class LiveCalls:
    """The calls a caller holds, kept from the outcomes alone, checked against the tokens."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.calls: dict[str, inert.Call] = {}
        """Closed and not retracted (committed ones stay: their tokens are accepted), by key."""

    def apply(self, outcomes: list[inert.Outcome], may_retract: set[str]) -> None:
        retracted = {o.call.commit_key for o in outcomes if isinstance(o, inert.CallRetracted)}
        assert retracted == may_retract, f"retracted {retracted}, rejected tokens reach {may_retract}"
        for o in outcomes:
            key = (
                o.call.commit_key
                if isinstance(o, (inert.CallClosed, inert.CallCommitted, inert.CallRetracted))
                else None
            )
            if isinstance(o, inert.CallClosed):
                assert key not in self.calls, f"two live calls share the key {key}"
                self.calls[o.call.commit_key] = o.call
            elif isinstance(o, inert.CallRetracted):
                assert self.calls.pop(o.call.commit_key, None) is not None, f"retracted a call not live: {o}"
            elif isinstance(o, inert.CallCommitted):
                assert key in self.calls, f"committed a call never closed: {o}"

    def check(self) -> None:
        for key, call in self.calls.items():
            assert call.end <= len(self.pieces), f"{call} outlived its tokens"
            ordinals = [inert.commit_key(TURN, self.pieces[: call.end], i) for i in range(8)]
            assert key in ordinals, f"{call} is not keyed by the live tokens through its block"

    def reaching(self, cut: int) -> set[str]:
        """The live calls whose blocks reach a token at or past live position ``cut``."""
        return {k for k, c in self.calls.items() if c.end > cut}


@pytest.mark.parametrize("fmt", FORMATS)
@PER_FORMAT
@given(data=st.data())
def test_after_every_step_live_calls_are_keyed_by_live_tokens_and_rejected_blocks_retracted(
    fmt: str, data: st.DataObject
) -> None:
    out = data.draw(outputs(fmt))
    raw = out.text.encode()
    target = chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=30))) or [raw]
    stream = inert.TokenStream(fmt, TURN)
    live = LiveCalls()

    def draft(window: list[bytes]) -> None:
        live.pieces.extend(window)
        live.apply(stream.draft(window), may_retract=set())
        live.check()

    def verify(n: int, correction: bytes | None) -> None:
        cut = len(live.pieces) - stream.pending_len + n
        must_go = live.reaching(cut)
        outcomes = stream.verify(n, correction)
        del live.pieces[cut:]
        live.pieces.extend([correction] if correction is not None else [])
        live.apply(outcomes, may_retract=must_go)
        live.check()

    Decoder(target, data.draw, corruptions=corruptions_for(fmt)).run(draft, verify)
    live.apply(stream.finish(), may_retract=set())
    live.check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_block_closed_by_the_first_rejected_token_is_retracted(fmt: str) -> None:
    """Byte tokens; for each call, reject from the token that closed its block: that call
    (and any later one) is retracted with a CallRetracted, every earlier one stays."""
    text = render(fmt, [("a", {"k": "v"}), ("b", {})]) + "\nok"
    pieces = [bytes([b]) for b in text.encode()]

    def drafted() -> tuple[inert.TokenStream, list[inert.Call]]:
        s = inert.TokenStream(fmt, TURN)
        return s, [o.call for o in s.draft(pieces) if isinstance(o, inert.CallClosed)]

    _, calls = drafted()
    assert [c.name for c in calls] == ["a", "b"]
    for call in calls:
        stream, again = drafted()
        outcomes = stream.verify(call.end - 1)  # accepts the tokens before its closing token
        retracted = [o.call.commit_key for o in outcomes if isinstance(o, inert.CallRetracted)]
        assert retracted == [c.commit_key for c in again if c.end >= call.end], f"{fmt}: {outcomes}"
        committed = [o.call.commit_key for o in outcomes if isinstance(o, inert.CallCommitted)]
        assert committed == [c.commit_key for c in again if c.end < call.end], f"{fmt}: {outcomes}"
        # Its block is open again: drafting the same closing token closes it with the same key.
        reclosed = [o.call.commit_key for o in stream.draft(pieces[call.end - 1 :]) if isinstance(o, inert.CallClosed)]
        assert call.commit_key in reclosed
