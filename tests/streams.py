"""The streaming oracle the streaming tests share: everything a stream released, checked
delta by delta (``Streamed``); what a whole output releases at once (``one_shot``), under
random speculation (``speculated``), and piece by piece (``steps``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

import inert
from inert import Released
from speculation import Decoder, chunk

# Every property runs once per format (19 of them): a third of the profile's examples each keeps
# the suite's time in budget and still gives each property ~19x that many turns per run.
PER_FORMAT = settings(max_examples=max(40, settings().max_examples // 3))


def steps(fmt: str, pieces: list[Any], **kw: Any) -> list[Released]:
    """What each accepted piece releases, one verify per piece, then finish's."""
    s = inert.TokenStream(fmt, "turn", stream=True, **kw)
    out: list[Released] = []
    for p in pieces:
        s.draft([p])
        s.verify(1)
        out.append(s.take_released())
    s.finish()
    out.append(s.take_released())
    return out


@dataclass
class Streamed:
    """Everything released so far, and the checks each step must pass."""

    content: str = ""
    reasoning: str = ""
    arguments: dict[int, str] = field(default_factory=dict)
    starts: dict[int, dict[str, Any]] = field(default_factory=dict)
    marks: dict[int, str] = field(default_factory=dict)

    def take(self, released: tuple[str, str, list[dict[str, Any]]]) -> None:
        content, reasoning_, deltas = released
        self.content += content
        self.reasoning += reasoning_
        for d in deltas:
            i = d["index"]
            assert i not in self.marks, f"a delta after the call's mark: {d}"
            if "inert" in d:
                assert i in self.starts, f"a mark for a call that never started: {d}"
                self.marks[i] = d["inert"]["malformed"]
                continue
            if i not in self.starts:
                assert d.get("type") == "function" and d.get("id") and d["function"].get("name"), d
                assert i == len(self.starts), f"indices go in order: {d}"
                self.starts[i] = d
                self.arguments[i] = ""
            else:
                assert "id" not in d and "name" not in d["function"], f"only the first delta names a call: {d}"
            self.arguments[i] += d["function"]["arguments"]

    def within(self, final: Streamed) -> None:
        """Nothing released so far differs from what the whole accepted text releases."""
        assert final.content.startswith(self.content), (self.content, final.content)
        assert final.reasoning.startswith(self.reasoning), (self.reasoning, final.reasoning)
        for i, text in self.arguments.items():
            assert i in final.starts and final.starts[i] == self.starts[i], (self.starts, final.starts)
            assert final.arguments[i].startswith(text), (i, text, final.arguments[i])


def one_shot(text: bytes, fmt: str, **kw: Any) -> tuple[Streamed, list[inert.Outcome]]:
    s = inert.TokenStream(fmt, "turn", stream=True, **kw)
    out = Streamed()
    outcomes = s.draft([text]) if text else []
    outcomes += s.verify(1 if text else 0)
    out.take(s.take_released())
    outcomes += s.finish()
    out.take(s.take_released())
    return out, outcomes


def speculated(raw: bytes, fmt: str, data: st.DataObject, final: Streamed, **kw: Any) -> Streamed:
    """What a stream releases of ``raw`` under random chunking, draft windows, corrupted drafts
    and corrections, checking after every verify that what went out is a prefix of ``final``
    (the whole output's release) and of what the text accepted so far releases at its end."""
    s = inert.TokenStream(fmt, "turn", stream=True, **kw)
    got = Streamed()

    def verify(n: int, correction: bytes | None) -> None:
        s.verify(n, correction)
        got.take(s.take_released())
        got.within(final)
        got.within(one_shot(s.accepted_text(), fmt, **kw)[0])

    target = chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=40))) or [raw]
    Decoder(target, data.draw).run(s.draft, verify)
    s.finish()
    got.take(s.take_released())
    return got
