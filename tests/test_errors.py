"""Caller mistakes raise at once with a message that says what to do, and
change nothing; bad model output never raises."""

from __future__ import annotations

from typing import Any

import pytest

import inert


def snapshot(s: inert.TokenStream) -> tuple[Any, ...]:
    return (s.accepted_len, s.pending_len, s.ledger_len, s.live_text())


@pytest.fixture
def stream() -> inert.TokenStream:
    s = inert.TokenStream("hermes", "t", vocab={1: "a"})
    s.draft(["<tool_call>", '{"name": '])
    return s


@pytest.mark.parametrize(
    ("call", "exc", "builtin", "words"),
    [
        (lambda s: s.verify(3), inert.VerifyError, ValueError, ["verify(3)", "pending (2)"]),
        (lambda s: s.verify(-1), inert.VerifyError, ValueError, [">= 0"]),
        (lambda s: s.verify(1.5), inert.InertTypeError, TypeError, ["expected an int"]),
        (lambda s: s.verify(True), inert.InertTypeError, TypeError, ["bool"]),
        (lambda s: s.verify(2**70), inert.VerifyError, ValueError, ["more tokens than are pending (2)"]),
        (lambda s: s.verify(-(2**70)), inert.VerifyError, ValueError, [">= 0"]),
        (lambda s: s.draft([2**40]), inert.VocabularyError, ValueError, ["out of range"]),
        (lambda s: s.verify(1, 3.0), inert.PieceTypeError, TypeError, ["float"]),
        (lambda s: s.draft(["ok", 2.5]), inert.PieceTypeError, TypeError, ["token 1", "float"]),
        (lambda s: s.draft(["ok", None]), inert.PieceTypeError, TypeError, ["NoneType"]),
        (lambda s: s.draft("a single str"), inert.PieceTypeError, TypeError, ["wrap one piece in a list"]),
        (lambda s: s.draft(["ok", 99]), inert.VocabularyError, ValueError, ["99", "vocab="]),
        (lambda s: s.draft([-4]), inert.VocabularyError, ValueError, ["-4"]),
        (lambda s: s.draft([True]), inert.PieceTypeError, TypeError, ["bool"]),
        (lambda s: s.draft(None), inert.PieceTypeError, TypeError, ["sequence", "NoneType"]),
        (lambda s: s.draft(["ok", "\ud800"]), inert.InertValueError, ValueError, ["token 1", "surrogate"]),
        (lambda s: s.verify(0, "\udfff"), inert.InertValueError, ValueError, ["surrogate"]),
        (lambda s: s.token_state(-1), inert.InertValueError, ValueError, ["-1", "past the ledger"]),
        (lambda s: s.token_state(99), inert.InertValueError, ValueError, ["99", "past the ledger (2 tokens)"]),
        (lambda s: s.token_piece("0"), inert.InertTypeError, TypeError, ["index", "str"]),
    ],
)
def test_mistakes_raise_and_leave_state(
    stream: inert.TokenStream, call: Any, exc: type, builtin: type, words: list[str]
) -> None:
    before = snapshot(stream)
    with pytest.raises(exc) as info:
        call(stream)
    assert isinstance(info.value, builtin) and isinstance(info.value, inert.InertError)
    for w in words:
        assert w in str(info.value)
    assert snapshot(stream) == before


def test_unknown_format_lists_the_known_ones() -> None:
    with pytest.raises(inert.UnknownFormatError, match="known formats: hermes") as info:
        inert.Orchestrator(format="qwen9")
    assert isinstance(info.value, ValueError)


def test_unknown_format_suggests_the_closest() -> None:
    with pytest.raises(inert.UnknownFormatError, match='"hermess" \\(did you mean "hermes"\\?\\)'):
        inert.TokenStream("hermess")
    with pytest.raises(inert.UnknownFormatError) as info:
        inert.TokenStream("totally-else")
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "exc", "words"),
    [
        ({"turn_key": None}, inert.InertTypeError, ["turn_key", "expected a str", "NoneType"]),
        ({"turn_key": 3}, inert.InertTypeError, ["turn_key", "int"]),
        ({"max_block_bytes": -1}, inert.InertValueError, ["max_block_bytes is -1", "non-negative"]),
        ({"max_block_bytes": 2**80}, inert.InertValueError, ["max_block_bytes"]),
        ({"max_block_bytes": "big"}, inert.InertTypeError, ["max_block_bytes", "str"]),
        ({"format": 42}, inert.InertTypeError, ["format name or a custom format dict"]),
        ({"schemas": {"f": {"properties": object()}}}, inert.InertTypeError, ["schemas", "object"]),
        ({"vocab": 5}, inert.PieceTypeError, ["vocab must be a sequence", "int"]),
        ({"vocab": {"x": "a"}}, inert.VocabularyError, ["vocab key x"]),
        ({"reasoning": "<think>"}, inert.InertTypeError, ["reasoning", "(open, close) pair", "str"]),
        ({"reasoning": ("<think>",)}, inert.InertTypeError, ["reasoning", "tuple"]),
        ({"reasoning": ("<think>", 3)}, inert.InertTypeError, ["reasoning[1]", "int"]),
        ({"reasoning": ("", "</think>")}, inert.InertValueError, ["reasoning", "empty"]),
        ({"in_reasoning": 1}, inert.InertTypeError, ["in_reasoning", "a bool", "int"]),
        ({"reasoning": None, "in_reasoning": True}, inert.InertValueError, ["in_reasoning=True", "reasoning is off"]),
        ({"format": "granite", "in_reasoning": True}, inert.InertValueError, ["reasoning is off"]),
    ],
)
def test_stream_construction_mistakes_raise_inert_errors(
    kwargs: dict[str, Any], exc: type, words: list[str]
) -> None:
    """Every error the core raises is one of inert's classes, converted in one place."""
    with pytest.raises(exc) as info:
        inert.TokenStream(**kwargs)
    for w in words:
        assert w in str(info.value)


def test_deep_schemas_are_refused_not_crashed() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(200):
        node["k"] = {}
        node = node["k"]
    with pytest.raises(inert.InertValueError, match="nests too deeply"):
        inert.TokenStream(schemas={"f": deep})


def test_unknown_policy() -> None:
    with pytest.raises(inert.PolicyError, match="read_eager, defer, eager_unsafe"):
        inert.Orchestrator(policy="yolo")


def test_stream_without_vocab_explains_ints() -> None:
    with pytest.raises(inert.VocabularyError, match="no vocabulary"):
        inert.TokenStream().draft([5])


def test_finished_turn_takes_no_tokens() -> None:
    orch = inert.Orchestrator()
    orch.finish()
    with pytest.raises(inert.StreamFinishedError, match="start a new stream"):
        orch.draft(["x"])


def test_orchestrator_mistakes_leave_state() -> None:
    orch = inert.Orchestrator({"f": "write"}, {"f": lambda: None})
    orch.draft(['<tool_call>{"name": "f"}</tool_call>'])
    before = snapshot(orch.stream)
    with pytest.raises(inert.VerifyError):
        orch.verify(2)
    with pytest.raises(inert.PieceTypeError):
        orch.draft([object()])  # type: ignore[list-item]  # not a token, on purpose
    assert snapshot(orch.stream) == before
    assert orch.verify(1).dispatched[0].name == "f"
    assert len(orch.finish().results) == 1


def test_bad_effect_entries() -> None:
    with pytest.raises(inert.EffectTableError, match="unknown effect class 'reads'"):
        inert.EffectTable({"f": "reads"})
    with pytest.raises(inert.EffectTableError, match="entry for 'f' is int"):
        inert.EffectTable({"f": 3})  # type: ignore[dict-item]


def test_token_ids_past_the_addressable_range() -> None:
    with pytest.raises(inert.VocabularyError, match="out of range"):
        inert.TokenStream(special_tokens={2**40: "<tool_call>"})
    with pytest.raises(inert.VocabularyError, match="out of range"):
        inert.commit_key("t", [2**33])


def test_bad_vocab_entries() -> None:
    with pytest.raises(inert.VocabularyError, match="vocab\\[2\\]"):
        inert.TokenStream(vocab={2: 5})  # type: ignore[dict-item]  # an int for a token's text, on purpose
    with pytest.raises(inert.VocabularyError, match="empty text"):
        inert.TokenStream(special_tokens={7: ""})
