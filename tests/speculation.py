"""Test helpers: Hermes transcripts, random tokenizations and a speculative
decoder that drives a stream or an orchestrator through draft and verify."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

NAMES = ["lookup", "save", "put", "nope"]
TRICKY = ["</tool_call>", "<tool_call>", '\\"', "é☃𝄞", "{}", "[", "\n", "}", "\\\\"]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.sampled_from(TRICKY),
    st.text(st.characters(codec="utf-8"), max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
arguments = st.dictionaries(st.sampled_from(["k", "path", "q", "é"]), json_values, max_size=3)


@st.composite
def blocks(draw: Any) -> str:
    name = draw(st.sampled_from(NAMES))
    args = draw(arguments)
    body = {"name": name, "arguments": args}
    if draw(st.booleans()):
        body = {"arguments": args, "name": name}
    pad = draw(st.sampled_from(["", "\n", " "]))
    return f"<tool_call>{pad}{json.dumps(body, ensure_ascii=draw(st.booleans()))}{pad}</tool_call>"


prose = st.sampled_from(["", "Sure. ", "x < y ", "<tool", "call> ", "\n", "é ", "</tool_call> "])
malformed_blocks = st.sampled_from(
    [
        '<tool_call>{"name": "save", "arguments": [1]}</tool_call>',
        '<tool_call>{"name": "save" "arguments": {}}</tool_call>',
        "<tool_call>not json</tool_call>",
    ]
)


@st.composite
def transcripts(draw: Any) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        parts.append(draw(prose))
        parts.append(draw(blocks() if draw(st.integers(0, 5)) else malformed_blocks))
    parts.append(draw(prose))
    return "".join(parts)


def chunk(data: bytes, cuts: list[int]) -> list[bytes]:
    """Splits ``data`` at the given cut points (any byte, UTF-8 characters included)."""
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


@st.composite
def tokenizations(draw: Any, text: str) -> list[bytes]:
    data = text.encode()
    cuts = draw(st.lists(st.integers(0, max(len(data), 1)), max_size=max(1, len(data) // 2)))
    return chunk(data, cuts) or [data]


CORRUPTIONS = [b"x", b"}", b'"', b"</tool_call>", b"<tool_call>", b"\xff", b" ", b"reprots"]


def corruptions_for(fmt: str) -> list[bytes]:
    """Wrong draft tokens for a format: the Hermes ones, and pieces of the format's own
    layout (its opener, its closer, a whole call, a cut one), which open, close or break
    blocks that the target does not have."""
    from render import render

    call = render(fmt, [("f", {"k": "v"})]).encode()
    return [
        *CORRUPTIONS,
        call,
        call[: len(call) // 2],
        call[len(call) // 2 :],
        call[:12],
        call[-12:],
        b"]",
        b")",
        b"\n",
    ]


@dataclass
class Decoder:
    """Replays speculative decoding of ``target`` tokens: windows of random size,
    corrupted draft tokens, a verifier that accepts at most the correct prefix."""

    target: list[bytes]
    draw: Callable[[Any], Any]
    accepted: list[bytes] = field(default_factory=list)
    corruptions: list[bytes] = field(default_factory=lambda: list(CORRUPTIONS))

    def run(
        self,
        draft: Callable[[list[bytes]], Any],
        verify: Callable[[int, bytes | None], Any],
        before_verify: Callable[[list[bytes]], None] | None = None,
    ) -> None:
        pos = 0
        while pos < len(self.target):
            k = self.draw(st.integers(1, 8))
            window = []
            for tok in self.target[pos : pos + k]:
                wrong = self.draw(st.integers(0, 5)) == 0
                window.append(self.draw(st.sampled_from(self.corruptions)) if wrong else tok)
            draft(window)
            correct = 0
            while correct < len(window) and window[correct] == self.target[pos + correct]:
                correct += 1
            n = self.draw(st.integers(0, correct)) if self.draw(st.booleans()) else correct
            correction = None
            if pos + n < len(self.target) and (n == 0 or self.draw(st.integers(0, 3))):
                correction = self.target[pos + n]  # n == 0 needs one, or decoding would not progress
            future = self.accepted + window[:n] + ([correction] if correction is not None else [])
            if before_verify is not None:
                before_verify(future)
            verify(n, correction)
            self.accepted = future
            pos = len(self.accepted)


class AcceptanceWatch:
    """Effect tools that check, as they run, that their call is among the calls of
    the text the verifier is accepting: a write that runs before its block is
    accepted is recorded as a problem. Call ``accepting(text)`` before each verify."""

    def __init__(self, fmt: str) -> None:
        import threading
        from collections import Counter

        self.fmt = fmt
        self._lock = threading.Lock()
        self._accepted: Counter[str] = Counter()
        self.ran: list[str] = []
        self.problems: list[str] = []

    @staticmethod
    def key(name: str | None, arguments: Any) -> str:
        return json.dumps([name, arguments], sort_keys=True)

    def tool(self, name: str) -> Callable[..., str]:
        def run(**kwargs: Any) -> str:
            kwargs.pop("idempotency_key", None)
            key = self.key(name, kwargs)
            with self._lock:
                self.ran.append(key)
                if self.ran.count(key) > self._accepted[key]:
                    self.problems.append(f"{key} ran before its block was accepted")
            return "ok"

        return run

    def accepting(self, pieces: list[bytes]) -> None:
        import inert

        calls = [
            self.key(p.name, p.arguments) for p in inert.parse(b"".join(pieces), self.fmt) if isinstance(p, inert.Call)
        ]
        with self._lock:
            self._accepted.clear()
            self._accepted.update(calls)
