"""The core's small return values have public names: ``token_state`` gives an
``inert.TokenState`` and ``take_released`` an ``inert.Released``. Both replaced plain
values (a string, a 3-tuple), so each must still equal, unpack, hash and print as the
plain value did: code written against the old values keeps working.

``assert_type`` is checked by ``mypy --strict tests`` (CI): the stubs name the types."""

from __future__ import annotations

import json
import pickle
from typing import Any, assert_type

import inert

CALL = '<tool_call>{"name": "f", "arguments": {"q": 1}}</tool_call>'


def test_token_state_is_a_str_enum_equal_to_the_old_strings() -> None:
    s = inert.TokenStream("hermes", "t")
    s.draft(["a", "b", "c"])
    s.verify(1)
    s.draft(["d"])
    accepted, rejected, undecided = s.token_state(0), s.token_state(1), s.token_state(3)
    assert_type(accepted, inert.TokenState)
    assert (accepted, rejected, undecided) == (
        inert.TokenState.ACCEPTED,
        inert.TokenState.REJECTED,
        inert.TokenState.UNDECIDED,
    )
    assert accepted is inert.TokenState.ACCEPTED, "the members themselves, not copies"
    # Everything the plain strings did.
    assert [accepted, rejected, undecided] == ["accepted", "rejected", "undecided"]
    assert isinstance(accepted, str)
    assert str(accepted) == f"{accepted}" == "accepted"
    assert {"accepted": 1}[accepted] == 1 and hash(accepted) == hash("accepted")
    assert json.dumps([accepted]) == '["accepted"]'
    assert inert.TokenState("rejected") is rejected
    assert pickle.loads(pickle.dumps(rejected)) is rejected  # noqa: S301 - our own bytes
    assert "TokenState" in inert.__all__


def test_take_released_is_a_named_tuple_equal_to_the_old_triple() -> None:
    s = inert.TokenStream("hermes", "t", stream=True)
    s.draft(["Hi ", CALL, "!"])
    s.verify(3)
    r = s.take_released()
    assert_type(r, inert.Released)
    assert type(r) is inert.Released
    assert r.content == "Hi !" and r.reasoning == "" and [d["index"] for d in r.deltas] == [0, 0]
    # Everything the plain tuple did: equality both ways, unpacking, indexing.
    assert r == ("Hi !", "", r.deltas) and ("Hi !", "", r.deltas) == r
    content, reasoning, deltas = r
    assert (content, reasoning, deltas) == tuple(r) and r[2] is deltas and len(r) == 3
    assert isinstance(r, tuple)
    assert r._asdict() == {"content": "Hi !", "reasoning": "", "deltas": deltas}
    assert pickle.loads(pickle.dumps(r)) == r  # noqa: S301 - our own bytes
    nothing = s.take_released()
    assert nothing == ("", "", []) and type(nothing) is inert.Released
    assert inert.Released("a", "b", []) == ("a", "b", [])
    assert "Released" in inert.__all__


def test_stream_batch_take_released_values_are_named_tuples() -> None:
    vocab = inert.Vocabulary(["ok", "x"])
    batch = inert.StreamBatch("hermes", vocab, stream=True)
    batch.add(1, "t1")
    batch.add(2, "t2")
    batch.draft([1, 2], [[0], [1]])
    batch.verify([1, 2], [1, 1])
    got = batch.take_released([1, 2])
    assert_type(got, dict[int, inert.Released])
    assert got == {1: ("ok", "", []), 2: ("x", "", [])}
    assert all(type(r) is inert.Released for r in got.values())
    batch.finish(1)
    tail = batch.take_released([1])
    assert all(type(r) is inert.Released for r in tail.values()), "a finished turn's tail too"


def test_orchestrator_steps_read_the_named_tuple_as_before() -> None:
    """The orchestrators consume what the core released; their steps are what they were."""
    tools: dict[str, Any] = {"f": lambda q: q}
    orch = inert.Orchestrator({"f": "read_only"}, tools, turn_key="t", stream=True)
    orch.draft(["Hi ", CALL])
    step = orch.verify(2)
    assert step.content == "Hi " and step.reasoning == ""
    assert step.tool_call_deltas[0]["function"]["name"] == "f"
    report = orch.finish()
    assert report.tail is not None and report.tail.content == ""
    assert [c.result for c in report.results] == [1]


def test_the_orchestrators_plain_take_is_the_same_three() -> None:
    """The orchestrators take what was released as a plain tuple (cheaper to build, and
    unpacked at once): the same three values, step for step."""
    named, plain = (inert.TokenStream("hermes", "t", stream=True) for _ in range(2))
    for pieces in (["Hi ", CALL[:20]], [CALL[20:], " bye"]):
        for s in (named, plain):
            s.draft(pieces)
            s.verify(len(pieces))
        got = plain._take_released()
        assert type(got) is tuple and got == named.take_released()
