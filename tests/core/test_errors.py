"""Caller mistakes raise at once with a message that says what to do, and
change nothing; bad model output never raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
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
def test_stream_construction_mistakes_raise_inert_errors(kwargs: dict[str, Any], exc: type, words: list[str]) -> None:
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


# -- wrong arguments at every public entry point ----------------------------------------

VOCAB = ["<tool_call>", "</tool_call>", "ok", "hi"]


def two_pending() -> inert.TokenStream:
    s = inert.TokenStream("hermes", "t", vocab=VOCAB)
    s.draft([2, 3])
    return s


def a_tree() -> inert.TokenStream:
    s = inert.TokenStream("hermes", "t", vocab=VOCAB)
    s.draft_tree([2, 3], [-1, 0])
    return s


def a_batch(*, tree: bool = False) -> inert.StreamBatch:
    b = inert.StreamBatch("hermes", VOCAB)
    b.add(1, "t")
    if tree:
        b.draft_tree(1, [2, 3], [-1, 0])
    else:
        b.draft([1], [[2, 3]])
    return b


def an_orchestrator() -> inert.Orchestrator:
    o = inert.Orchestrator(vocab=VOCAB)
    o.draft([2, 3])
    return o


def a_step() -> Any:
    return inert.Orchestrator(stream=True).finish().tail


def a_turn() -> inert.Orchestrator:
    return inert.Orchestrator({}, {}, turn_key="t")


def bad(value: object) -> Any:
    """A wrong argument, passed on purpose (typed Any so the type checker lets the call through)."""
    return value


NO_FD = 2**20  # an int path would be opened as a file descriptor: one no process holds


@pytest.mark.parametrize(
    ("call", "exc", "words"),
    [
        # A negative correction: not "token 0" (there is none), and not silently "none".
        pytest.param(
            lambda: two_pending().verify(2, correction=-1),
            inert.VocabularyError,
            ["correction is -1", "pass correction=None"],
            id="stream-correction-negative",
        ),
        pytest.param(
            lambda: an_orchestrator().verify(2, correction=np.int32(-1)),
            inert.VocabularyError,
            ["correction is -1", "pass correction=None"],
            id="orchestrator-correction-negative",
        ),
        pytest.param(
            lambda: a_tree().verify_path([0], correction=-1),
            inert.VocabularyError,
            ["correction is -1", "pass correction=None"],
            id="tree-correction-negative",
        ),
        pytest.param(
            lambda: a_batch(tree=True).verify_path(1, [0], correction=-3),
            inert.VocabularyError,
            ["correction is -3", "pass correction=None"],
            id="batch-tree-correction-negative",
        ),
        pytest.param(
            lambda: two_pending().verify(2, correction=bad(1.0)),
            inert.PieceTypeError,
            ["correction is of type float"],
            id="stream-correction-float",
        ),
        pytest.param(
            lambda: a_batch().verify([1], [2], corrections=[-2]),
            inert.VocabularyError,
            ["sequence 1: corrections[0] is -2", "-1 means no correction"],
            id="batch-correction-negative",
        ),
        pytest.param(
            lambda: inert.Vocabulary(VOCAB).piece(-1),
            inert.VocabularyError,
            ["token_id is -1"],
            id="vocabulary-piece-negative",
        ),
        pytest.param(
            lambda: inert.commit_key("t", ["a"], -1),
            inert.InertValueError,
            ["ordinal is -1"],
            id="commit-key-ordinal-negative",
        ),
        pytest.param(
            lambda: inert.commit_key("t", ["a"], bad(np.float64(1))),
            inert.InertTypeError,
            ["ordinal", "float64"],
            id="commit-key-ordinal-float",
        ),
        pytest.param(
            lambda: inert.parse("\ud800"),
            inert.InertValueError,
            ["parse(text) is a str", "surrogate"],
            id="parse-surrogate",
        ),
        # A str that is not valid Unicode where only a str will do used to read "expected a str, got str".
        pytest.param(
            lambda: inert.TokenStream("hermes", "\ud800"),
            inert.InertValueError,
            ["turn_key is a str that is not valid Unicode", "surrogate"],
            id="turn-key-surrogate",
        ),
        pytest.param(
            lambda: inert.StreamBatch().add(0, "t\udfff"),
            inert.InertValueError,
            ["turn_key is a str that is not valid Unicode"],
            id="batch-turn-key-surrogate",
        ),
        pytest.param(
            lambda: inert.TokenStream(reasoning=("<t\ud800>", "</t>")),
            inert.InertValueError,
            ["reasoning[0] is a str that is not valid Unicode"],
            id="reasoning-surrogate",
        ),
        # Found by a helper: a custom format's delimiters are capped, the reasoning= keyword's were
        # not, and a repetitive one of 20,000 bytes took most of a minute to build, holding the GIL.
        pytest.param(
            lambda: inert.TokenStream("hermes", "t", reasoning=("<" * 20_000, ">")),
            inert.InertValueError,
            ["reasoning: the delimiter", "is 20000 bytes; a delimiter may be at most 256"],
            id="reasoning-delimiter-too-long",
        ),
        pytest.param(
            lambda: inert.StreamBatch("hermes", reasoning=("<think>", "x" * 257)),
            inert.InertValueError,
            ["is 257 bytes"],
            id="batch-reasoning-delimiter-too-long",
        ),
        pytest.param(
            lambda: inert.TokenStream("qwen3_coder", schemas={"f\ud800": {}}),
            inert.InertValueError,
            ["schemas", "not valid Unicode"],
            id="schemas-key-surrogate",
        ),
        pytest.param(
            lambda: inert.parse("x", "\ud800"),
            inert.InertValueError,
            ["format is a str that is not valid Unicode"],
            id="format-surrogate",
        ),
        pytest.param(
            lambda: inert.Vocabulary(["a", "\ud800"]),
            inert.VocabularyError,
            ["pieces[1] is a str that is not valid Unicode", "pass the piece as bytes"],
            id="vocabulary-piece-surrogate",
        ),
        pytest.param(
            lambda: inert.TokenStream(schemas=bad("f")),
            inert.InertTypeError,
            ["schemas", "str"],
            id="stream-schemas-str",
        ),
        pytest.param(
            lambda: inert.StreamBatch(schemas=bad({"f": 3})),
            inert.InertTypeError,
            ["schemas['f']", "int"],
            id="batch-schema-int",
        ),
        pytest.param(
            lambda: inert.openai.chunk(bad("hello"), id="c", model="m", created=1),
            inert.InertTypeError,
            ["inert.openai.chunk(step)", "a Step", "str"],
            id="chunk-str",
        ),
        pytest.param(
            lambda: inert.openai.delta(bad(None)),
            inert.InertTypeError,
            ["inert.openai.delta(step)", "NoneType"],
            id="delta-none",
        ),
        pytest.param(
            lambda: inert.openai.chunk(a_step(), id=bad(None), model="m", created=1),
            inert.InertTypeError,
            ["id must be a str", "NoneType"],
            id="chunk-id-none",
        ),
        pytest.param(
            lambda: inert.openai.chunk(a_step(), id="c", model="m", created=bad(1.5)),
            inert.InertTypeError,
            ["created must be an int", "float"],
            id="chunk-created-float",
        ),
        pytest.param(
            lambda: inert.reconcile(bad("a"), bad("b")),
            inert.InertTypeError,
            ["dispatch_log must be a list of DispatchRecord", "got str"],
            id="reconcile-str",
        ),
        pytest.param(
            lambda: inert.reconcile(bad({"commit_key": "k"}), []),
            inert.InertTypeError,
            ["wrap a single record in a list"],
            id="reconcile-one-record",
        ),
        pytest.param(
            lambda: inert.reconcile([{"name": "f"}], []),
            inert.InertValueError,
            ["dispatch_log[0] has no 'commit_key' field"],
            id="reconcile-missing-field",
        ),
        pytest.param(
            lambda: inert.reconcile([], [bad(np.float64(1))]),
            inert.InertTypeError,
            ["accepted_stream[0] is float64"],
            id="reconcile-float-entry",
        ),
        pytest.param(
            lambda: inert.reconcile([], bad(None)),
            inert.InertTypeError,
            ["accepted_stream must be a list", "NoneType"],
            id="reconcile-none",
        ),
        pytest.param(
            lambda: inert.EffectTable(bad("read_only")),
            inert.InertTypeError,
            ["mapping of tool names to effects", "str"],
            id="table-str",
        ),
        pytest.param(
            lambda: inert.EffectTable({}, schemas=bad([1])),
            inert.InertTypeError,
            ["schemas", "list"],
            id="table-schemas-list",
        ),
        pytest.param(
            lambda: inert.EffectTable({}).classify(bad(["f"])),
            inert.InertTypeError,
            ["tool name is a str", "list"],
            id="classify-list",
        ),
        pytest.param(
            lambda: inert.EffectTable.from_mcp(bad("tools")),
            inert.InertTypeError,
            ["from_mcp: tools must be a list", "str"],
            id="mcp-str",
        ),
        pytest.param(
            lambda: inert.EffectTable.from_mcp([None]),
            inert.InertTypeError,
            ["tools[0] is NoneType"],
            id="mcp-none-tool",
        ),
        pytest.param(
            lambda: inert.EffectTable.from_mcp([{"annotations": {}}]),
            inert.EffectTableError,
            ["tools[0] has no name"],
            id="mcp-nameless",
        ),
        pytest.param(
            lambda: inert.EffectTable.from_mcp([], trusted=bad("no")),
            inert.InertTypeError,
            ["trusted must be a bool", "str"],
            id="mcp-trusted-str",
        ),
        pytest.param(
            lambda: inert.EffectTable.from_mcp([], overrides=bad(["f"])),
            inert.InertTypeError,
            ["overrides", "list"],
            id="mcp-overrides-list",
        ),
        pytest.param(
            lambda: inert.EffectTable.from_openai(bad("tools"), {}),
            inert.InertTypeError,
            ["from_openai: tools must be a list", "str"],
            id="openai-str",
        ),
        pytest.param(
            lambda: inert.EffectTable.from_openai([bad({"function": 3})], {}),
            inert.InertTypeError,
            ["tools[0] is dict", "OpenAI tool dicts"],
            id="openai-bad-function",
        ),
        pytest.param(
            lambda: inert.EffectTable.from_openai([], bad(None)),
            inert.InertTypeError,
            ["effects", "NoneType"],
            id="openai-effects-none",
        ),
        pytest.param(
            lambda: inert.EffectTable.from_toml(bad(NO_FD)),
            inert.InertTypeError,
            ["path must be a str or os.PathLike", "int"],
            id="toml-int",
        ),
        pytest.param(
            lambda: inert.EffectTable.from_toml(bad(None)), inert.InertTypeError, ["path", "NoneType"], id="toml-none"
        ),
        pytest.param(
            lambda: inert.ToolSpec("write", timeout=bad("5")),
            inert.InertTypeError,
            ["timeout must be a number", "str"],
            id="spec-timeout-str",
        ),
        pytest.param(
            lambda: inert.ToolSpec("read_only", speculate=bad("no")),
            inert.InertTypeError,
            ["speculate must be a bool", "str"],
            id="spec-speculate-str",
        ),
        pytest.param(
            lambda: inert.ToolSpec("write", max_concurrency=bad(2.0)),
            inert.InertTypeError,
            ["max_concurrency must be an int", "float"],
            id="spec-concurrency-float",
        ),
        pytest.param(
            lambda: inert.ToolSpec("write", writes=bad(-1)),
            inert.EffectTableError,
            ["writes must be a callable", "int"],
            id="spec-writes-int",
        ),
        pytest.param(
            lambda: inert.Footprint(None, None).conflicts(bad("x")),
            inert.InertTypeError,
            ["expected a Footprint", "str"],
            id="footprint-str",
        ),
        pytest.param(
            lambda: inert.recover(bad(None)),
            inert.InertTypeError,
            ["journal must be a Journal", "NoneType"],
            id="recover-none",
        ),
        pytest.param(
            lambda: a_turn().finish(strict=bad("no")),
            inert.InertTypeError,
            ["strict must be True or False", "str"],
            id="finish-strict-str",
        ),
        pytest.param(
            lambda: inert.Orchestrator({}, {}, turn_key="t", journal=bad(3)),
            inert.InertTypeError,
            ["journal must be a Journal", "int"],
            id="journal-int",
        ),
        pytest.param(
            lambda: inert.SqliteJournal(bad(None)),
            inert.InertTypeError,
            ["SqliteJournal takes the path", "NoneType"],
            id="sqlite-journal-none",
        ),
        pytest.param(
            lambda: inert.PostgresJournal(bad(None)),
            inert.InertTypeError,
            ["PostgresJournal takes a DSN", "NoneType"],
            id="postgres-journal-none",
        ),
        # Already right; kept so they stay so.
        pytest.param(
            lambda: two_pending().verify(bad(np.float64(1))), inert.InertTypeError, ["float64"], id="verify-numpy-float"
        ),
        pytest.param(lambda: a_batch().add(bad("2"), "t"), inert.InertTypeError, ["seq", "str"], id="batch-add-str"),
        pytest.param(lambda: a_batch().draft([1], bad("ok")), inert.InertTypeError, ["tokens"], id="batch-draft-str"),
        pytest.param(
            lambda: a_batch().finish(bad(None)), inert.InertTypeError, ["seq", "NoneType"], id="batch-finish-none"
        ),
        pytest.param(
            lambda: a_batch().take_released([-1]), inert.InertValueError, ["seqs", "-1"], id="batch-take-negative"
        ),
        pytest.param(
            lambda: inert.Vocabulary.from_tokenizer("tok"),
            inert.VocabularyError,
            ["from_tiktoken"],
            id="from-tokenizer-str",
        ),
    ],
)
def test_wrong_arguments_raise_inert_errors(call: Callable[[], object], exc: type, words: list[str]) -> None:
    """A caller's wrong type, None, negative number or float at a public entry point raises
    one of inert's errors (which also derives from the matching builtin), naming the argument,
    never an AttributeError, KeyError or IndexError from deep inside, and never a message
    about something the caller did not pass (the correction is no 'token 0')."""
    with pytest.raises(exc) as info:
        call()
    assert isinstance(info.value, inert.InertError)
    assert isinstance(info.value, (TypeError, ValueError))
    for w in words:
        assert w in str(info.value)
    assert "token 0" not in str(info.value)


def test_a_negative_correction_leaves_the_stream_as_it_was() -> None:
    s = two_pending()
    before = snapshot(s)
    with pytest.raises(inert.VocabularyError):
        s.verify(2, correction=-1)
    assert snapshot(s) == before
    b = a_batch()
    with pytest.raises(inert.VocabularyError):
        b.verify([1], [2], corrections=[-2])
    assert b.pending_len(1) == 2
    assert b.verify([1], [2], corrections=[-1]) == {}, "-1 in the batch's array is no correction"


@pytest.mark.parametrize("tokens", [{"a": 1}, {"a"}, frozenset("a")], ids=["dict", "set", "frozenset"])
def test_an_unordered_collection_is_no_window_of_tokens(tokens: Any) -> None:
    """Found by a helper: draft() took a dict (drafting its keys) and a set (in hash order),
    though its error says tokens must be a sequence. Refused, the stream unchanged."""
    stream = inert.TokenStream("hermes")
    stream.draft(["a"])
    with pytest.raises(inert.PieceTypeError, match=r"tokens must be a sequence .* got " + type(tokens).__name__):
        stream.draft(tokens)
    assert stream.pending_len == 1
    orch = inert.Orchestrator({"t": "read_only"}, {"t": lambda: 1}, turn_key="k")
    with pytest.raises(inert.PieceTypeError, match="tokens must be a sequence"):
        orch.draft(tokens)


def test_a_set_is_no_row_of_a_batch_call() -> None:
    """A set of sequence ids or counts would pair with the rows in hash order: refused."""
    batch = inert.StreamBatch("hermes", inert.Vocabulary(["a"]))
    batch.add(0, "t")
    ids: Any = {0}  # what the stubs already refuse, as a caller without a type checker passes it
    rows: Any = {0: 0}
    with pytest.raises(inert.PieceTypeError, match=r"seqs must be a sequence .* got set"):
        batch.draft(ids, [[0]])
    with pytest.raises(inert.PieceTypeError, match=r"n_accepted must be a sequence .* got set"):
        batch.verify([0], ids)
    with pytest.raises(inert.PieceTypeError, match=r"tokens must be a sequence .* got dict"):
        batch.draft([0], rows)
    assert batch.pending_len(0) == 0
