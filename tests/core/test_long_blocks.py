"""A long block whose closer the drafter proposes again and again while the
verifier keeps writing the value (a file's content, say). Each rejected closer
used to have the whole body read again: a step cost the block's length, and a
turn the square of it. Now a draft reads at most the bytes it drafted plus 16 KB
of block bodies; a body it cannot afford is read once, when its end is
accepted: its calls are announced then, and their reads run then."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

import inert

CLOSER = '"}}</tool_call>'


def head(size: int) -> str:
    return '<tool_call>{"name": "save", "arguments": {"text": "' + "x" * size


def closed(outcomes: list[inert.Outcome]) -> int:
    return sum(isinstance(o, inert.CallClosed) for o in outcomes)


def committed(outcomes: list[inert.Outcome]) -> list[tuple[str, object, str]]:
    return [(o.call.name, o.call.arguments, o.call.commit_key) for o in outcomes if isinstance(o, inert.CallCommitted)]


def test_a_rejected_closer_does_not_have_the_body_read_on_every_draft() -> None:
    s = inert.TokenStream("hermes", "t")
    s.draft([head(256 * 1024)])
    s.verify(1)
    early = 0
    for _ in range(200):
        early += closed(s.draft(["yy", CLOSER]))
        s.verify(1)
    assert early == 0, "before, each of the 200 drafts read the 256 KB body"
    assert s.draft([CLOSER]) == []
    out = s.verify(1)
    assert [o.kind for o in out] == ["call_closed", "call_committed"]
    assert isinstance(out[1], inert.CallCommitted)
    assert len(out[1].call.arguments["text"]) == 256 * 1024 + 400


@settings(max_examples=25, deadline=None)
@given(
    st.integers(20_000, 60_000),
    st.lists(st.tuples(st.integers(1, 3), st.booleans(), st.booleans()), min_size=1, max_size=30),
)
def test_any_schedule_commits_what_a_lone_stream_of_the_accepted_tokens_commits(
    size: int, steps: list[tuple[int, bool, bool]]
) -> None:
    """Each step drafts a few more bytes of the value and maybe the closer; the verifier
    accepts the value bytes, and the closer too when ``accept``. Whatever the schedule,
    the call commits once, with the key and arguments of the accepted tokens alone."""
    s = inert.TokenStream("hermes", "t")
    accepted = [head(size)]
    s.draft(accepted[:])
    s.verify(1)
    seen: list[inert.Outcome] = []
    done = False
    for more, propose, accept in steps:
        window = ["y" * more] + ([CLOSER] if propose else [])
        seen += s.draft(window)
        n = len(window) if propose and accept else 1
        seen += s.verify(n)
        accepted += window[:n]
        if n == 2:
            done = True
            break
    if not done:
        seen += s.draft([CLOSER])
        seen += s.verify(1)
        accepted.append(CLOSER)
    seen += s.finish()
    alone = inert.TokenStream("hermes", "t")
    expected = alone.draft(accepted) + alone.verify(len(accepted)) + alone.finish()
    assert committed(seen) == committed(expected)
    assert len(committed(seen)) == 1
    # Every announcement is committed or retracted, once.
    assert closed(seen) == 1 + sum(isinstance(o, inert.CallRetracted) for o in seen)


def test_a_short_block_is_still_read_on_every_draft_that_closes_it() -> None:
    s = inert.TokenStream("hermes", "t")
    s.draft([head(1000)])
    s.verify(1)
    for _ in range(20):
        assert closed(s.draft([CLOSER])) == 1
        assert [o.kind for o in s.verify(0)] == ["call_retracted"]


def test_a_read_in_a_long_block_runs_once_its_end_is_accepted_not_on_every_rejected_closer() -> None:
    calls: list[int] = []
    ran = threading.Event()

    def save(text: str) -> int:
        calls.append(len(text))
        ran.set()
        return len(text)

    orch = inert.Orchestrator({"save": "read_only"}, {"save": save}, policy="read_eager", turn_key="t")
    orch.draft([head(64 * 1024)])
    orch.verify(1)
    for _ in range(50):
        orch.draft(["yy", CLOSER])
        orch.verify(1)
    orch.draft([CLOSER])
    orch.verify(1)
    report = orch.finish()
    assert [c.name for c in report.accepted] == ["save"]
    assert [r.result for r in report.results] == [64 * 1024 + 100]
    assert not report.results[0].early, "read once its end was accepted: it ran as committed"
    assert report.violations == []
    assert calls == [64 * 1024 + 100], "no read on a rejected closer: once, when accepted"


def test_a_call_closing_after_an_unread_one_is_not_run_before_it() -> None:
    """Two writes to one path: the long one's body is left unread by the draft that closes
    it and, in the same draft, the short one; the short one used to be announced (and run)
    first, so the writes ran out of stream order (a stale_read violation)."""
    order: list[str] = []

    def put(path: str, text: str) -> None:
        order.append(text[:5])

    effects = inert.EffectTable({"put": inert.ToolSpec("write", writes="path")})
    orch = inert.Orchestrator(effects, {"put": put}, policy="read_eager", turn_key="t")
    orch.draft([head(64 * 1024).replace('"save"', '"put"').replace('{"text"', '{"path": "p", "text"')])
    orch.verify(1)
    short = '<tool_call>{"name": "put", "arguments": {"path": "p", "text": "short"}}</tool_call>'
    assert orch.draft([CLOSER, short]).dispatched == ()
    orch.verify(2)
    report = orch.finish(strict=False)
    assert order == ["xxxxx", "short"]
    assert report.violations == []


def test_a_closer_and_a_short_call_in_one_token_wait_together() -> None:
    """The short call after an unread block in the same token waits with it (its key is
    numbered after the long block's items): nothing is read on the draft, and the verify
    announces and commits both, keyed as a lone stream of the accepted tokens keys them."""
    s = inert.TokenStream("hermes", "t")
    accepted = [head(64 * 1024)]
    s.draft(accepted[:])
    s.verify(1)
    both = CLOSER + '<tool_call>{"name": "g", "arguments": {}}</tool_call>'
    for _ in range(3):
        assert s.draft([both]) == []
        assert s.verify(0) == []
    assert s.draft([both]) == []
    out = s.verify(1)
    assert [(o.kind, o.call.name) for o in out if not isinstance(o, inert.BlockMalformed)] == [
        ("call_closed", "save"),
        ("call_closed", "g"),
        ("call_committed", "save"),
        ("call_committed", "g"),
    ]
    accepted.append(both)
    alone = inert.TokenStream("hermes", "t")
    assert committed(out) == committed(alone.draft(accepted) + alone.verify(len(accepted)))


def test_a_write_the_end_of_the_turn_closes_after_an_unread_one_runs_too() -> None:
    """The last accepted token closes a long block left unread and opens a block the end of
    the turn confirms: that call took the first one's key, so only one write ran."""
    ran: list[str] = []

    def put(path: str, text: str) -> None:
        ran.append(path)

    effects = inert.EffectTable({"put": inert.ToolSpec("write", writes="path")})
    orch = inert.Orchestrator(effects, {"put": put}, policy="read_eager", turn_key="t")
    orch.draft(['<tool_call>{"name": "put", "arguments": {"path": "a", "text": "' + "x" * 40_000])
    orch.verify(1)
    orch.draft(['"}}</tool_call><tool_call>{"name": "put", "arguments": {"path": "b", "text": "y"}}'])
    orch.verify(1)
    report = orch.finish(strict=False)
    assert ran == ["a", "b"]
    assert len({r.commit_key for r in report.results}) == 2
    assert report.violations == []
