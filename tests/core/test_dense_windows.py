"""The fast way a window of ids is drafted and the general way give the same turn.

A window of ids that are all below the vocabulary's ``dense_below`` (every id below it has
a piece) is drafted by ``Turn::draft_dense``: a ``TokenStream`` window of at most 32 ids,
every such ``StreamBatch`` row. Any other window (pieces, an id at or past a hole, more
than 32 ids) goes the general way (``draft_checked``). The reference here is the same ids
drafted over a vocabulary that lacks id 0 alone, whose ``dense_below`` is 0, so that every
window there goes the general way; each example then runs the same schedule of drafts and
verifies (a) as ids in windows of 0 to 40, as lists and as numpy arrays, (b) with a few
windows given as their pieces (against the reference given the same pieces: a piece is
keyed by its bytes, an id by its id, so only the same mix can key alike), (c) as the rows
of a ``StreamBatch`` with padding, and checks every step's outcomes, texts, ledger,
streamed output and keys, each key also against ``inert.commit_key``.
"""

from __future__ import annotations

import array
import random
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import inert

KEY = "dense-turn"
FILLER = b"\xff\xfe<filler never drafted>"
"""Id 0 of every vocabulary under test; the reference vocabulary leaves it out."""

FORMATS = [
    "hermes",
    "qwen3_coder",
    "llama3_json",
    "pythonic",
    "kimi_k2",
    "deepseek_v3",
    "deepseek_v31",
    "deepseek_v32",
    "glm47",
    "minimax_m2",
    "openai",
    "mistral",
]

SAMPLES = {
    "hermes": 'hi <tool_call>\n{"name": "a", "arguments": {"q": "</tool_call><tool_call>"}}\n</tool_call>'
    '<tool_call>{"arguments": {}, "name": "b"}</tool_call> bye',
    "qwen3_coder": "<tool_call>\n<function=a>\n<parameter=q>\na </parameter> b\n</parameter>\n</function>\n"
    "</tool_call><tool_call>\n<function=b>\n</function>\n</tool_call>",
    "llama3_json": '<|python_tag|>{"name": "a", "parameters": {"q": "}{"}}; {"name": "b", "parameters": {}}',
    "pythonic": "[a(q='])'), b()]",
    "mistral": '[TOOL_CALLS]a[ARGS]{"q": "}"}[TOOL_CALLS]b{}',
    "deepseek_v3": "ok<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n"
    '{"q": 1}\n```<｜tool▁call▁end｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>b\n```json\n{}\n```'
    "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "deepseek_v31": '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>a<｜tool▁sep｜>{"q": 1}<｜tool▁call▁end｜>'
    "<｜tool▁call▁begin｜>b<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "deepseek_v32": '<｜DSML｜function_calls>\n<｜DSML｜invoke name="a">\n<｜DSML｜parameter name="q" '
    'string="false">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name="b">\n</｜DSML｜invoke>\n'
    "</｜DSML｜function_calls>",
    "kimi_k2": "<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>"
    '{"q": 1}<|tool_call_end|><|tool_call_begin|>functions.b:1<|tool_call_argument_begin|>{}<|tool_call_end|>'
    "<|tool_calls_section_end|>",
    "glm47": "<tool_call>a<arg_key>q</arg_key><arg_value>1</arg_value></tool_call><tool_call>b</tool_call>",
    "openai": '<|channel|>commentary to=functions.a <|constrain|>json<|message|>{"q": 1}<|call|>'
    "<|start|>assistant to=functions.b<|channel|>commentary json<|message|>{}<|call|>",
    "minimax_m2": '<minimax:tool_call>\n<invoke name="a">\n<parameter name="q">1</parameter>\n</invoke>\n'
    '<invoke name="b">\n</invoke>\n</minimax:tool_call>',
}

REASONING = {"mistral": ("[THINK]", "[/THINK]"), "openai": ("<|channel|>analysis<|message|>", "<|end|>")}

# Every spelling a special token of the format may have (delimiters, separators, framing).
SPECIALS = {
    "hermes": ["<tool_call>", "</tool_call>"],
    "qwen3_coder": ["<tool_call>", "</tool_call>"],
    "llama3_json": ["<|python_tag|>"],
    "pythonic": ["<function_calls>", "</function_calls>", "<|python_start|>"],
    "mistral": ["[TOOL_CALLS]", "[ARGS]"],
    "deepseek_v3": [
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁calls▁end｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁call▁end｜>",
        "<｜tool▁sep｜>",
    ],
    "deepseek_v31": [
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁calls▁end｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁call▁end｜>",
        "<｜tool▁sep｜>",
    ],
    "deepseek_v32": [
        "<｜DSML｜function_calls>",
        "</｜DSML｜function_calls>",
        '<｜DSML｜invoke name="',
        "</｜DSML｜invoke>",
    ],
    "kimi_k2": [
        "<|tool_calls_section_begin|>",
        "<|tool_call_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_end|>",
        "<|tool_call_argument_begin|>",
    ],
    "glm47": ["<tool_call>", "</tool_call>"],
    "openai": ["to=functions.", "<|call|>", "<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>"],
    "minimax_m2": ["<minimax:tool_call>", "</minimax:tool_call>", '<invoke name="', "</invoke>"],
}

PROSE = ["hi ", "é☃𝄞", " x < y ", "\n", "{", "}", "[", "]", '"', 'a\\"b', "  ", "<", "</", "|>", "ok."]
LONG_PROSE = ["z" * 40, "é" * 2100, "☃" * 1400, "𝄞 " * 12, "w" * 33]


CUSTOM_REASONING = ("<r>", "</r>")
SCHEMAS = {
    "a": {"type": "object", "properties": {"q": {"type": "string"}}},
    "b": {"type": "object", "properties": {"q": {"type": "integer"}}},
}
KINDS = ["int32", "int64", "uint32", "uint64", "numpy scalars", "array.array", "memoryview", "int16"]
"""The ways a window of ids may come besides a list of ints."""


def as_kind(ids: tuple[int, ...], kind: str) -> Any:
    if kind == "numpy scalars":
        return [np.int64(i) for i in ids]
    if kind == "array.array":
        return array.array("q", ids)
    if kind == "memoryview":
        return memoryview(array.array("i", ids))
    return np.asarray(ids, dtype=kind)


def specials_of(fmt: str, reasoning: tuple[str, str] | None = None) -> list[str]:
    open_, close = reasoning or REASONING.get(fmt, ("<think>", "</think>"))
    return [*SPECIALS[fmt], open_, close]


# -- the schedule ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Draft:
    ids: tuple[int, ...]


@dataclass(frozen=True)
class Verify:
    n: int
    correction: int | None


@dataclass(frozen=True)
class Finish:
    pass


Op = Draft | Verify | Finish


@dataclass
class Case:
    fmt: str
    pieces: dict[int, bytes]
    """The vocabulary under test, id 0 (``FILLER``) included."""
    special_tokens: dict[int, bytes] | None
    plans: list[list[Op]]
    kw: dict[str, Any]
    in_reasoning: bool
    as_pieces: set[int] = field(default_factory=set)
    as_numpy: dict[int, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        def short(p: bytes) -> str:
            return repr(p) if len(p) <= 40 else f"{p[:20]!r}...({len(p)} bytes)"

        pieces = ", ".join(f"{i}: {short(p)}" for i, p in self.pieces.items())
        return (
            f"Case({self.fmt!r}, pieces={{{pieces}}}, special_tokens={self.special_tokens!r}, "
            f"plans={self.plans!r}, kw={self.kw!r}, in_reasoning={self.in_reasoning!r}, "
            f"as_pieces={self.as_pieces!r}, as_numpy={self.as_numpy!r})"
        )

    def vocab(self) -> inert.Vocabulary:
        return inert.Vocabulary(self.pieces, self.special_tokens)

    def reference_vocab(self) -> inert.Vocabulary:
        """The same ids without id 0: dense below 0, so every window goes the general way."""
        rest = {i: p for i, p in self.pieces.items() if i != 0}
        return inert.Vocabulary(rest, self.special_tokens)

    def piece(self, i: int) -> bytes:
        if self.special_tokens is not None and i in self.special_tokens:
            return self.special_tokens[i]
        return self.pieces[i]


def draw_text(rng: random.Random, fmt: str, in_reasoning: bool, reasoning: tuple[str, str] | None) -> str:
    sample = SAMPLES[fmt]
    open_, close = reasoning or REASONING.get(fmt, ("<think>", "</think>"))
    parts: list[str] = []
    if in_reasoning:
        parts.append(rng.choice(["mulling ", sample, ""]) + rng.choice([close, "", close + " "]))
    if rng.random() < 0.5:  # anchored formats call only at the message start
        parts.append(sample)
    for _ in range(rng.randint(0, 4)):
        r = rng.random()
        if r < 0.25:
            parts.append(sample)
        elif r < 0.35:
            parts.append(sample[: rng.randint(1, len(sample) - 1)])
        elif r < 0.45:
            parts.append(sample.replace("q", "q" * rng.choice([40, 5000]), 1))
        elif r < 0.55:
            parts.append(open_ + rng.choice(["thinking ", sample]) + close)
        elif r < 0.65:
            parts.append(rng.choice(LONG_PROSE))
        else:
            parts.append(rng.choice(PROSE + specials_of(fmt, reasoning)))
    return "".join(parts)


def tokenize(rng: random.Random, text: bytes, specials: list[bytes], bind: bool) -> list[bytes]:
    """Chunks of 1 to 12 bytes, now and then 33 to 80 or over 4 KB (runs of one byte mostly),
    splitting UTF-8 characters anywhere; a delimiter whole when ``bind`` (mostly)."""
    by_length = sorted(specials, key=len, reverse=True)
    chunks: list[bytes] = []
    p = 0
    while p < len(text):
        if bind:
            hit = next((s for s in by_length if text.startswith(s, p)), None)
            if hit is not None and rng.random() < 0.85:
                chunks.append(hit)
                p += len(hit)
                continue
        same = text[p : p + 33] == text[p : p + 1] * 33
        if same and rng.random() < 0.7:
            run = len(text) - p - len(text[p:].lstrip(text[p : p + 1]))
            n = rng.randint(33, run)
        else:
            r = rng.random()
            if r < 0.35:
                n = 1
            elif r < 0.55:
                n = 2
            elif r < 0.7:
                n = 3
            elif r < 0.94:
                n = rng.randint(4, 12)
            elif r < 0.99:
                n = rng.randint(33, 80)
            else:
                n = rng.randint(4097, 6000)
        chunks.append(text[p : p + n])
        p += n
    return chunks


def layout(
    rng: random.Random, chunks: list[bytes], specials: list[bytes], bind: bool
) -> tuple[dict[int, bytes], dict[int, bytes] | None, dict[bytes, list[int]]]:
    """Ids for every chunk and for junk (delimiters and their halves, bytes of a split
    character, an empty piece, a long one), the delimiters low, high, in the middle or
    spread, with holes in the ids now and then and a delimiter spelled by two ids."""
    junk = [b"", b"}", b"]", b'"', b"\n", b"\xe2\x98", b"\x83", b"x" * 40, b"y" * 4100, b"{", b" "]
    for s in specials:
        junk += [s[: len(s) // 2], s[len(s) // 2 :]]
    bound = list(dict.fromkeys(specials)) if bind else []
    ordinary = [p for p in dict.fromkeys([*chunks, *junk]) if p not in bound]
    if not bind:
        ordinary += [s for s in dict.fromkeys(specials) if s not in ordinary]
    rng.shuffle(ordinary)
    where = rng.choice(["low", "high", "middle", "spread"])
    if where == "low":
        order = bound + ordinary
    elif where == "high":
        order = ordinary + bound
    elif where == "middle":
        h = len(ordinary) // 2
        order = ordinary[:h] + bound + ordinary[h:]
    else:
        order = list(ordinary)
        for s in bound:
            order.insert(rng.randint(0, len(order)), s)
    if bound and rng.random() < 0.3:
        order.insert(rng.randint(0, len(order)), rng.choice(bound))
    hole_rate = rng.choice([0.0, 0.0, 0.01, 0.1])
    pieces: dict[int, bytes] = {0: FILLER}
    ids: dict[bytes, list[int]] = {}
    next_id = 1
    for p in order:
        while rng.random() < hole_rate:
            next_id += 1
        pieces[next_id] = p
        ids.setdefault(p, []).append(next_id)
        next_id += 1
    special_tokens: dict[int, bytes] | None = None
    if bound and rng.random() < 0.3:
        special_tokens = {i: p for i, p in pieces.items() if p in bound}
        for i in special_tokens:
            del pieces[i]
    return pieces, special_tokens, ids


def plan(rng: random.Random, target: list[int], junk: list[int], loud: list[int]) -> list[Op]:
    """Drafts that mostly follow ``target`` then go astray (often into a delimiter), split
    over one to three ``draft`` calls, and verifies that accept a random prefix."""
    ops: list[Op] = []
    p = 0
    verifies = 0
    while p < len(target) and verifies < 50:
        k = rng.choice([0, 1, 2, 3, 5, 8, 16, 31, 32, 33, 34, 40, rng.randint(0, 40)])
        room = len(target) - p
        a = min(k, room) if rng.random() < 0.8 else rng.randint(0, min(k, room))
        tail: list[int] = []
        while len(tail) < k - a:
            r = rng.random()
            if r < 0.35 and loud:
                tail.append(rng.choice(loud))
            elif r < 0.6:
                tail += target[p + a + 1 : p + a + 1 + rng.randint(1, 6)] or [rng.choice(junk)]
            else:
                tail.append(rng.choice(junk))
        window = target[p : p + a] + tail[: k - a]
        cuts = sorted(rng.randint(0, len(window)) for _ in range(rng.randint(0, 2)))
        for lo, hi in zip([0, *cuts], [*cuts, len(window)], strict=True):
            ops.append(Draft(tuple(window[lo:hi])))
        r = rng.random()
        n = a if r < 0.6 else rng.randint(0, len(window))
        good = min(n, a)
        if good == n and p + good < len(target) and rng.random() < 0.8:
            correction: int | None = target[p + good]
        elif rng.random() < 0.5:
            correction = None
        else:
            correction = rng.choice(junk)
        ops.append(Verify(n, correction))
        verifies += 1
        p += good + (1 if correction is not None else 0)
    if rng.random() < 0.3:
        ops.append(Draft(tuple(rng.choice(loud or junk) for _ in range(rng.randint(1, 34)))))
    ops.append(Finish())
    return ops


@st.composite
def cases(draw: st.DrawFn, fmt: str) -> Case:
    rng = random.Random(draw(st.integers(0, 2**64 - 1)))
    reasoning = draw(st.sampled_from(["format's", "format's", "custom", "off"]))
    pair = CUSTOM_REASONING if reasoning == "custom" else None
    in_reasoning = reasoning != "off" and draw(st.booleans())
    bind = draw(st.booleans())
    text = draw_text(rng, fmt, in_reasoning, pair).encode()
    specials = [s.encode() for s in specials_of(fmt, pair)]
    chunks = tokenize(rng, text, specials, bind)
    pieces, special_tokens, ids = layout(rng, chunks, specials, bind)
    target = [rng.choice(ids[c]) for c in chunks]
    usable = sorted(i for i in (*pieces, *(special_tokens or {})) if i != 0)
    loud = sorted(
        {i for s in specials if s in ids for i in ids[s]} | {i for i in usable if b"<" in (pieces.get(i) or b"")}
    )
    plans = [plan(rng, target, usable, loud) for _ in range(3)]
    kw: dict[str, Any] = {"max_block_bytes": draw(st.sampled_from([1 << 20, 1 << 20, 64, 300]))}
    if reasoning != "format's":
        kw["reasoning"] = pair
    if draw(st.booleans()):
        kw["schemas"] = SCHEMAS
    case = Case(fmt, pieces, special_tokens, plans, kw, in_reasoning)
    drafts = [i for i, op in enumerate(plans[0]) if isinstance(op, Draft) and op.ids]
    if drafts:
        case.as_pieces = set(rng.sample(drafts, min(len(drafts), rng.randint(1, 3))))
        for i in rng.sample(drafts, min(len(drafts), rng.randint(0, 4))):
            case.as_numpy[i] = rng.choice(KINDS if max(usable) < 2**15 else KINDS[:-1])
    return case


# -- what a caller sees ---------------------------------------------------------------------


def view(outcomes: list[Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for o in outcomes:
        if isinstance(o, inert.BlockMalformed):
            m = o.malformed
            out.append((o.kind, m.kind, m.offset, m.reason, m.span, m.commit_key, m.block, m.index))
        else:
            c = o.call
            out.append(
                (o.kind, c.name, repr(c.arguments), c.raw_arguments, c.call_id, c.span, c.commit_key, c.block, c.index)
            )
    return out


def notices(found: list[inert.ReasoningUnopened]) -> list[tuple[int, int]]:
    return [n.span for n in found]


def released(r: tuple[str, str, list[dict[str, Any]]] | None) -> tuple[str, str, str]:
    if r is None:
        return ("", "", "[]")
    content, reasoning, deltas = r
    return (content, reasoning, repr(deltas))


def check_keys(outcomes: list[Any], live: list[int | bytes], where: str) -> None:
    """Each new key is ``commit_key`` of the live tokens up to its block's end (as drafted:
    ids or pieces), with a small ordinal."""
    for o in outcomes:
        item = o.malformed if isinstance(o, inert.BlockMalformed) else o.call
        if isinstance(o, inert.CallCommitted | inert.CallRetracted):
            continue
        end = item.end
        assert end <= len(live), (where, item, len(live))
        keys = {inert.commit_key(KEY, live[:end], ordinal) for ordinal in range(32)}
        assert item.commit_key in keys, (where, o, "not commit_key of the live tokens")


# -- the runs -------------------------------------------------------------------------------


@dataclass
class Step:
    """A step as a lone stream and a batch row both show it."""

    outcomes: list[tuple[Any, ...]]
    accepted: bytes | None
    pending: int | None
    released: tuple[str, str, str]
    notices: list[tuple[int, int]] | None


def runs_of(states: list[str], state: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for i, x in enumerate(states):
        if x != state:
            continue
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def stream_of(case: Case, vocab: inert.Vocabulary | None) -> inert.TokenStream:
    """A stream over ``vocab``, or over the case's own mapping (a private vocabulary) when None."""
    kw = dict(case.kw, stream=True, in_reasoning=case.in_reasoning)
    if vocab is None:
        return inert.TokenStream(case.fmt, KEY, vocab=case.pieces, special_tokens=case.special_tokens, **kw)
    return inert.TokenStream(case.fmt, KEY, vocab=vocab, **kw)


def run_stream(
    case: Case, vocab: inert.Vocabulary | None, ops: list[Op], *, pieces: set[int], arrays: dict[int, Any]
) -> tuple[list[Step], list[tuple[Any, ...]]]:
    """The schedule on a lone ``TokenStream``: each step as a batch would show it, and what
    only a lone stream shows (live text, ledger, rejected runs, the ledger at the end), each
    checked against a model of the ledger kept here."""
    s = stream_of(case, vocab)
    steps: list[Step] = []
    extra: list[tuple[Any, ...]] = []
    live: list[int | bytes] = []
    ledger: list[tuple[bytes, str]] = []  # (piece, state) per ledger position

    def piece(t: int | bytes) -> bytes:
        return t if isinstance(t, bytes) else case.piece(t)

    for i, op in enumerate(ops):
        where = f"op {i} {op}"
        accepted = s.accepted_len
        if isinstance(op, Draft):
            tokens: list[int | bytes] = list(op.ids)
            if i in pieces:  # every token as its piece, or (odd steps) every third one left an id
                tokens = [t if i % 2 and k % 3 == 0 else case.piece(t) for k, t in enumerate(op.ids)]
            arg: Any = as_kind(op.ids, arrays[i]) if i in arrays and i not in pieces else tokens
            out = s.draft(arg)
            live += tokens
            ledger += [(piece(t), "undecided") for t in tokens]
        elif isinstance(op, Verify):
            out = s.verify(op.n, op.correction)
            undecided = [j for j, (_, x) in enumerate(ledger) if x == "undecided"]
            for k, j in enumerate(undecided):
                ledger[j] = (ledger[j][0], "accepted" if k < op.n else "rejected")
            live = live[: accepted + op.n]
            if op.correction is not None:
                live.append(op.correction)
                ledger.append((case.piece(op.correction), "accepted"))
        else:
            out = s.finish()
            ledger = [(p, "rejected" if x == "undecided" else x) for p, x in ledger]
            live = live[:accepted]
        check_keys(out, live, where)
        finished = isinstance(op, Finish)
        states = [x for _, x in ledger]
        want = (
            b"".join(piece(t) for t in live),
            len(live) if finished else s.accepted_len,
            len(ledger),
            runs_of(states, "rejected"),
            b"".join(piece(t) for t in live[: s.accepted_len]),
        )
        got = (s.live_text(), s.accepted_len, s.ledger_len, s.rejected_runs(), s.accepted_text())
        assert got == want, (where, "the ledger differs from its model", got, want)
        assert s.pending_len == len(live) - s.accepted_len, where
        steps.append(
            Step(
                view(out),
                None if finished else s.accepted_text(),
                None if finished else s.pending_len,
                released(s.take_released()),
                None if finished else notices(s.notices()),
            )
        )
        extra.append(got)
    assert [s.token_state(j) for j in range(s.ledger_len)] == [x for _, x in ledger]
    assert [s.token_piece(j) for j in range(s.ledger_len)] == [p for p, _ in ledger]
    return steps, extra


SEQS = [7, 0, 123_456_789_012]


def run_batch(case: Case, vocab: inert.Vocabulary | None, rng: random.Random) -> list[list[Step]]:
    """Every plan as a row of one ``StreamBatch``, drafted together in padded arrays."""
    if vocab is None:
        b = inert.StreamBatch(case.fmt, case.pieces, special_tokens=case.special_tokens, stream=True, **case.kw)
    else:
        b = inert.StreamBatch(case.fmt, vocab, stream=True, **case.kw)
    for seq in SEQS:
        b.add(seq, KEY, in_reasoning=case.in_reasoning)
    logs: list[list[Step]] = [[] for _ in SEQS]

    def log_steps(plans: list[int], got: dict[int, list[Any]]) -> None:
        """Logs the step each of ``plans`` (indices into SEQS) just took, ``got`` its outcomes."""
        out = b.take_released([SEQS[j] for j in plans])
        for j in plans:
            seq = SEQS[j]
            outcomes, accepted, pending = view(got.get(seq, [])), b.accepted_text(seq), b.pending_len(seq)
            logs[j].append(Step(outcomes, accepted, pending, released(out.get(seq)), notices(b.notices(seq))))

    for t in range(max(len(p) for p in case.plans)):
        here = [(j, p[t]) for j, p in enumerate(case.plans) if t < len(p)]
        drafts = [(j, op) for j, op in here if isinstance(op, Draft)]
        if drafts:
            dtype = rng.choice([np.int64, np.int32, np.uint32])
            width = max(len(op.ids) for _, op in drafts) + rng.choice([0, 0, 1, 5])
            pad = rng.choice([-1, 1, 2**31 - 1]) if dtype is not np.uint32 else rng.choice([1, 2**32 - 1])
            rows = np.full((len(drafts), width), pad, dtype=dtype)
            for r, (_, d) in enumerate(drafts):
                rows[r, : len(d.ids)] = d.ids
            lengths = [len(op.ids) for _, op in drafts]
            seqs = [SEQS[j] for j, _ in drafts]
            if all(n == width for n in lengths) and rng.random() < 0.5:
                got = b.draft(np.asarray(seqs, dtype=np.uint64), rows)
            else:
                got = b.draft(seqs, rows, np.asarray(lengths, dtype=rng.choice([np.int64, np.int32])))
            log_steps([j for j, _ in drafts], got)
        verifies = [(j, op) for j, op in here if isinstance(op, Verify)]
        if verifies:
            seqs = [SEQS[j] for j, _ in verifies]
            n = np.asarray([op.n for _, op in verifies], dtype=np.int64)
            c = np.asarray([-1 if op.correction is None else op.correction for _, op in verifies], dtype=np.int64)
            got = b.verify(seqs, n, c)
            log_steps([j for j, _ in verifies], got)
        for j, op in here:
            if isinstance(op, Finish):
                seq = SEQS[j]
                got_finish = b.finish(seq)
                out = b.take_released([seq])
                logs[j].append(Step(view(got_finish), None, None, released(out.get(seq)), None))
    return logs


def first_difference(a: list[Any], b: list[Any], ops: list[Op]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"step {i} ({ops[i] if i < len(ops) else 'end'}):\n  fast    {x}\n  general {y}"
    return f"lengths {len(a)} != {len(b)}"


def check_case(case: Case, rng: random.Random) -> None:
    dense, general = case.vocab(), case.reference_vocab()
    with pytest.raises(inert.VocabularyError):
        general.piece(0)  # so no window is dense there
    main = case.plans[0]
    ref_steps, ref_extra = run_stream(case, general, main, pieces=set(), arrays={})
    # (a) ids, fast where a window allows it; some windows as numpy arrays; over a shared
    # vocabulary or (now and then) over the stream's own copy of the mapping.
    own = None if rng.random() < 0.25 else dense
    steps, extra = run_stream(case, own, main, pieces=set(), arrays=case.as_numpy)
    assert steps == ref_steps, first_difference(steps, ref_steps, main)
    assert extra == ref_extra, first_difference(extra, ref_extra, main)
    # (b) some windows as their pieces, or partly: the general way for those on both vocabularies.
    got = run_stream(case, dense, main, pieces=case.as_pieces, arrays=case.as_numpy)
    want = run_stream(case, general, main, pieces=case.as_pieces, arrays={})
    assert got == want, first_difference([*got[0], *got[1]], [*want[0], *want[1]], main)
    # (c) every plan a row of one batch, against lone general streams.
    refs = [ref_steps] + [run_stream(case, general, p, pieces=set(), arrays={})[0] for p in case.plans[1:]]
    for j, (log, ref) in enumerate(zip(run_batch(case, own, rng), refs, strict=True)):
        assert log == ref, f"batch row {j}: " + first_difference(log, ref, case.plans[j])


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=settings().max_examples)
@given(data=st.data())
def test_fast_and_general_windows_give_one_turn(fmt: str, data: st.DataObject) -> None:
    case = data.draw(cases(fmt))
    check_case(case, random.Random(data.draw(st.integers(0, 2**32 - 1))))


# -- fixed windows around the 32-id crossing ----------------------------------------------------


def hermes_vocab() -> tuple[dict[int, bytes], list[int]]:
    """Hermes calls spelled by single-byte ids, the closers bound at the top."""
    pieces: dict[int, bytes] = {0: FILLER}
    for b in range(1, 128):
        pieces[b] = bytes([b])
    pieces[128], pieces[129] = b"<tool_call>", b"</tool_call>"
    text = b'pre <tool_call>{"name": "f", "arguments": {"k": "abcdefghijklmnopqrstuvwxyz"}}</tool_call> post'
    return pieces, list(text)


@pytest.mark.parametrize("split", [31, 32, 33, 34, 40, 64])
@pytest.mark.parametrize("bound", [False, True])
def test_a_closer_either_side_of_32_ids(split: int, bound: bool) -> None:
    """A block whose closer lands at the 32nd, 33rd... id of a window, drafted and then
    rejected from its closer on, then accepted, keyed and committed alike either way."""
    pieces, ids = hermes_vocab()
    if bound:
        text = bytes(ids)
        at = text.index(b"</tool_call>")
        ids = [*ids[: text.index(b"<tool_call>")], 128, *ids[text.index(b"<tool_call>") + 11 : at], 129]
        ids += list(b" post")
    close = ids.index(129) if bound else bytes(ids).index(b"</tool_call>") + len(b"</tool_call>") - 1
    start = max(0, close + 1 - split)
    ops: list[Op] = [Draft(tuple(ids[:start])), Verify(start, None)]
    ops += [Draft(tuple(ids[start : close + 1])), Verify(close - start, None)]  # the closer rejected
    ops += [Draft(tuple(ids[close : close + 1 + split])), Verify(min(split, len(ids) - close), None), Finish()]
    case = Case("hermes", pieces, None, [ops, ops, ops], {}, False)
    check_case(case, random.Random(split))


# -- mistakes -------------------------------------------------------------------------------------


def snapshot(s: inert.TokenStream) -> tuple[Any, ...]:
    return (s.accepted_len, s.pending_len, s.ledger_len, s.live_text(), s.accepted_text(), s.rejected_runs())


def error_of(call: Any) -> tuple[type, str]:
    with pytest.raises(inert.InertError) as info:
        call()
    return type(info.value), str(info.value)


HOLEY = {0: FILLER, 1: b"a", 2: b"<tool_call>", 3: b"</tool_call>", 4: b'{"name": "f"}', 6: b"b"}
"""Dense below 5; id 5 is a hole, 6 is past it, 7 and up past the vocabulary."""


def holey_streams() -> list[inert.TokenStream]:
    out = []
    for vocab in (HOLEY, {i: p for i, p in HOLEY.items() if i != 0}):
        s = inert.TokenStream("hermes", KEY, vocab=inert.Vocabulary(vocab))
        s.draft([1, 2, 4])
        s.verify(1)
        out.append(s)
    return out


BAD_WINDOWS: list[Any] = [
    [1, -1, 2],
    [1, 2, 5],
    [1, 7],
    [1, 2**22],
    [1, 2**22 - 1],
    [1, 2**64],
    [2**63],
    [-(2**63)],
    [1] * 32 + [5],
    [5] + [1] * 40,
    [1] * 20 + [-3] + [1] * 20,
    [1] * 33 + [9],
    [6] * 31 + [99],
    np.asarray([1, 2, 5], dtype=np.int64),
    np.asarray([1] * 40 + [-1], dtype=np.int64),
    np.asarray([1, 2, 70000], dtype=np.uint32),
    np.asarray([[1, 2]], dtype=np.int64),
]


@pytest.mark.parametrize("window", BAD_WINDOWS, ids=lambda w: repr(w)[:40])
def test_a_bad_id_raises_alike_and_changes_nothing(window: Any) -> None:
    fast, general = holey_streams()
    before = [snapshot(s) for s in (fast, general)]
    errors = [error_of(lambda s=s: s.draft(window)) for s in (fast, general)]
    assert errors[0] == errors[1]
    assert issubclass(errors[0][0], inert.VocabularyError | inert.InertValueError), errors[0]
    assert [snapshot(s) for s in (fast, general)] == before
    # And the streams go on alike, the fast one on its fast way.
    assert view(fast.draft([3, 1, 6])) == view(general.draft([3, 1, 6]))
    assert view(fast.verify(3, 1)) == view(general.verify(3, 1))
    assert snapshot(fast) == snapshot(general)


@pytest.mark.parametrize("correction", [-1, -5, 5, 7, 2**22, 2**64])
def test_a_bad_correction_raises_alike_and_changes_nothing(correction: int) -> None:
    fast, general = holey_streams()
    fast.draft([2, 4])
    general.draft([2, 4])
    before = [snapshot(s) for s in (fast, general)]
    errors = [error_of(lambda s=s: s.verify(1, correction)) for s in (fast, general)]
    assert errors[0] == errors[1]
    assert [snapshot(s) for s in (fast, general)] == before


def test_after_finish_every_window_raises_alike() -> None:
    fast, general = holey_streams()
    finished = [view(s.finish()) for s in (fast, general)]
    assert finished[0] == finished[1]
    before = [snapshot(s) for s in (fast, general)]
    for window in ([1, 2], [1] * 32, [1] * 33, [b"a"], [6], [], np.asarray([1, 2], dtype=np.int32)):
        errors = [error_of(lambda s=s, w=window: s.draft(w)) for s in (fast, general)]
        assert errors[0] == errors[1]
        assert errors[0][0] is inert.StreamFinishedError, errors[0]
    for call in (lambda s: s.verify(0), lambda s: s.verify(0, 1), lambda s: s.finish()):
        errors = [error_of(lambda s=s, c=call: c(s)) for s in (fast, general)]
        assert errors[0] == errors[1] and errors[0][0] is inert.StreamFinishedError
    assert [snapshot(s) for s in (fast, general)] == before


def test_a_pending_tree_refuses_every_window_alike() -> None:
    fast, general = holey_streams()
    for s in (fast, general):
        s.draft_tree([1, 2], [-1, 0])
    for window in ([1, 2], [1] * 33, [b"a"], [6]):
        errors = [error_of(lambda s=s, w=window: s.draft(w)) for s in (fast, general)]
        assert errors[0] == errors[1] and errors[0][0] is inert.TreeError, errors[0]
    assert view(fast.verify_path([0, 1])) == view(general.verify_path([0, 1]))
    assert snapshot(fast) == snapshot(general)


@pytest.mark.parametrize(
    ("row", "length"),
    [
        ([1, -1, 2], 3),
        ([1, 5, 2], 3),
        ([1, 7, 2], 3),
        ([1] * 33 + [5], 34),
        ([1] * 40 + [-2], 41),
        ([1, 2, 2**40], 3),
    ],
)
def test_a_bad_batch_row_changes_no_sequence(row: list[int], length: int) -> None:
    b = inert.StreamBatch("hermes", inert.Vocabulary(HOLEY))
    lone = inert.TokenStream("hermes", KEY, vocab=inert.Vocabulary(HOLEY))
    for seq in (1, 2):
        b.add(seq, KEY)
    width = max(len(row), 4)
    rows = np.full((2, width), 1, dtype=np.int64)
    rows[0, :3] = [2, 4, 1]
    rows[1, : len(row)] = row
    before = [(b.accepted_text(q), b.pending_len(q)) for q in (1, 2)]
    with pytest.raises(inert.InertError) as info:
        b.draft([1, 2], rows, [3, length])
    assert isinstance(info.value, inert.VocabularyError), info.value
    assert "2" in str(info.value)
    assert [(b.accepted_text(q), b.pending_len(q)) for q in (1, 2)] == before
    got = b.draft([1], np.asarray([[2, 4, 3]], dtype=np.int64))
    assert view(got.get(1, [])) == view(lone.draft([2, 4, 3]))
    got = b.verify([1], [3])
    assert view(got.get(1, [])) == view(lone.verify(3))
    assert b.accepted_text(1) == lone.accepted_text()


# -- through an orchestrator ------------------------------------------------------------------


def orchestrate(case: Case, vocab: inert.Vocabulary, ops: list[Op]) -> list[Any]:
    """The schedule through an ``Orchestrator`` (a read that may run early, a write that
    waits): each step's outcomes, dispatches and released text, then the report."""
    seen: list[Any] = []

    def tool(name: str) -> Any:
        return lambda **arguments: f"{name}:{sorted(arguments.items())!r}"

    orch = inert.Orchestrator(
        {"a": "read_only", "b": "write"},
        {"a": tool("a"), "b": tool("b")},
        format=case.fmt,
        turn_key=KEY,
        vocab=vocab,
        stream=True,
        in_reasoning=case.in_reasoning,
        **case.kw,
    )
    warnings.simplefilter("ignore", inert.ReasoningWarning)
    for op in ops:
        if isinstance(op, Draft):
            step = orch.draft(list(op.ids))
        elif isinstance(op, Verify):
            step = orch.verify(op.n, op.correction)
        else:
            break
        dispatched = [(d.commit_key, d.name, repr(d.arguments), d.effect, d.span, d.recurs) for d in step.dispatched]
        seen.append((view(list(step.outcomes)), dispatched, step.content, step.reasoning, repr(step.tool_call_deltas)))
    report = orch.finish()
    # Neither ``early`` nor ``discarded``: a read let go early that waits behind a write starts
    # before or after its block is decided as the threads fall (run twice over one vocabulary,
    # a turn's reports differ in them now and then).
    seen.append([(r.name, repr(r.arguments), r.commit_key, r.result, repr(r.error), r.span) for r in report.results])
    seen.append([(m.kind, m.span, m.commit_key) for m in report.malformed])
    seen.append([(a.name, a.commit_key, a.span, a.tool_call_id) for a in report.accepted])
    seen.append((repr(report.violations), notices(report.notices)))
    assert report.tail is not None
    seen.append((report.tail.content, report.tail.reasoning, repr(report.tail.tool_call_deltas)))
    return seen


@pytest.mark.parametrize("fmt", ["hermes", "qwen3_coder", "kimi_k2", "pythonic"])
@settings(max_examples=max(5, settings().max_examples // 2))
@given(data=st.data())
def test_an_orchestrator_runs_the_same_turn_either_way(fmt: str, data: st.DataObject) -> None:
    case = data.draw(cases(fmt))
    fast = orchestrate(case, case.vocab(), case.plans[0])
    general = orchestrate(case, case.reference_vocab(), case.plans[0])
    assert fast == general, first_difference(fast, general, case.plans[0])


def test_a_batch_refuses_a_pending_tree_or_a_finished_sequence_and_changes_nothing() -> None:
    b = inert.StreamBatch("hermes", inert.Vocabulary(HOLEY))
    for seq in (1, 2, 3):
        b.add(seq, KEY)
    b.draft_tree(2, [1, 2], [-1, 0])
    b.finish(3)
    rows = np.ones((2, 33), dtype=np.int64)
    before = b.pending_len(1), b.accepted_text(1)
    for seqs, exc in (([1, 2], inert.TreeError), ([1, 3], inert.UnknownSequenceError)):
        for width in (3, 33):
            with pytest.raises(exc) as info:
                b.draft(seqs, rows[:, :width])
            assert str(seqs[1]) in str(info.value)
            assert (b.pending_len(1), b.accepted_text(1)) == before
    assert b.pending_len(2) == 2
