"""Streaming output in every format: what a step releases comes from accepted tokens
only (so it is never retracted), joined it is the message's prose, reasoning and calls,
and any chunking, draft window, corruption and correction releases the same."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import inert
from calls import calls_for
from render import ANCHORED, XML_FORMATS, Calls, reasoning, render
from speculation import Decoder, chunk
from streams import PER_FORMAT, Streamed, one_shot, speculated

FORMATS = inert.formats()

OPENERS = {
    "hermes": ["<tool_call>"],
    "qwen3_coder": ["<tool_call>"],
    "llama3_json": ["<|python_tag|>"],
    "pythonic": ["<function_calls>", "<|python_start|>"],
    "mistral": ["[TOOL_CALLS]"],
    "deepseek_v3": ["<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>"],
    "deepseek_v31": ["<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>"],
    "deepseek_v32": ["<｜DSML｜"],
    "kimi_k2": ["<|tool_calls_section_begin|>", "<|tool_call_begin|>"],
    "glm45": ["<tool_call>"],
    "glm47": ["<tool_call>"],
    "openai": ["to=functions.", "<|call|>", "<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"],
    "granite": ["<|tool_call|>", "<tool_call>"],
    "internlm": ["<|action_start|>"],
    "jamba": ["<tool_calls>"],
    "xlam": [],
    "phi4_mini_json": ["<|tool_call|>"],
    "minimax": ["<tool_calls>"],
    "minimax_m2": ["<minimax:tool_call>", "<invoke"],
}
"""Delimiter text that never belongs to content (a call's own text is checked apart)."""

CLOSERS = [
    "</tool_call>",
    "<|tool_call_end|>",
    "<|tool_calls_section_end|>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁calls▁end｜>",
    "<|call|>",
    "<|action_end|>",
    "</tool_calls>",
    "<|/tool_call|>",
    "</minimax:tool_call>",
    "</｜DSML｜function_calls>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<｜tool▁sep｜>",
    "[ARGS]",
    "<|plugin|>",
    "</invoke>",
    "</｜DSML｜invoke>",
    "</function_calls>",
]
"""More spellings that models send as special tokens. Every call closer is here: a vocabulary
entry that spells one is its special token, and then the closer spelled inside a longer
ordinary token is text (code in a value), so a closer is always cut out as a token of its own."""


@st.composite
def messages(draw: Any, fmt: str) -> tuple[str, Calls, str, str]:
    """A model output: (text, calls, prose, thoughts-or-empty)."""
    calls = draw(calls_for(fmt))
    before = "" if fmt in ANCHORED else draw(st.sampled_from(["", "Sure. ", "Let me check.\n", "<tool", "é "]))
    after = draw(st.sampled_from(["", " Done.", "\n", " é", " x < y"]))
    text = render(fmt, calls, before, after)
    thinking = ""
    pair = reasoning(fmt)
    if pair is not None and draw(st.booleans()):
        thinking = "hmm " + render(fmt, draw(calls_for(fmt))) + " é"
        assume(pair[1] not in thinking and pair[1] not in text)
        text = f"{pair[0]}{thinking}{pair[1]}\n{text}"
    return text, calls, before + after, thinking


def squeeze(text: str) -> str:
    return "".join(text.split())


def check_final(fmt: str, got: Streamed, calls: Calls, prose: str, thinking: str) -> None:
    assert squeeze(got.content) == squeeze(prose), (got.content, prose)
    assert got.reasoning == thinking
    for opener in OPENERS[fmt]:
        assert opener not in got.content
    assert not got.marks
    assert len(got.starts) == len(calls)
    ids = [d["id"] for d in got.starts.values()]
    assert len(set(ids)) == len(ids), ids
    for i, (name, args) in enumerate(calls):
        assert got.starts[i]["function"]["name"] == name
        assert json.loads(got.arguments[i]) == args


@pytest.mark.parametrize("fmt", FORMATS)
@PER_FORMAT
@given(data=st.data())
def test_one_shot_releases_the_prose_the_reasoning_and_the_calls(fmt: str, data: st.DataObject) -> None:
    text, calls, prose, thinking = data.draw(messages(fmt))
    got, _ = one_shot(text.encode(), fmt)
    check_final(fmt, got, calls, prose, thinking)


@pytest.mark.parametrize("fmt", FORMATS)
@PER_FORMAT
@given(data=st.data())
def test_speculation_releases_only_accepted_text(fmt: str, data: st.DataObject) -> None:
    """Random chunking, windows, corrupted drafts and corrections: after every step what
    went out is a prefix of what the whole output releases, and at the end all of it."""
    text, calls, prose, thinking = data.draw(messages(fmt))
    raw = text.encode()
    final, _ = one_shot(raw, fmt)
    target = chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=40))) or [raw]
    s = inert.TokenStream(fmt, "turn", stream=True)
    got = Streamed()

    def draft(window: list[bytes]) -> None:
        s.draft(window)
        assert not s.has_released, "a draft releases nothing"

    def verify(n: int, correction: bytes | None) -> None:
        s.verify(n, correction)
        got.take(s.take_released())
        got.within(final)
        # And of what the text accepted so far releases when the turn ends there: nothing
        # released depends on a token not accepted yet.
        got.within(one_shot(s.accepted_text(), fmt)[0])
        # Released text comes from the accepted bytes: never more than they hold.
        assert len(got.content.encode()) + len(got.reasoning.encode()) <= len(s.accepted_text())

    Decoder(target, data.draw).run(draft, verify)
    s.finish()
    got.take(s.take_released())
    assert got == final
    check_final(fmt, got, calls, prose, thinking)


@pytest.mark.parametrize("fmt", FORMATS)
@PER_FORMAT
@given(data=st.data())
def test_trees_release_what_their_accepted_path_does(fmt: str, data: st.DataObject) -> None:
    """A tree whose accepted path is P releases exactly what drafting P alone does."""
    text, calls, prose, thinking = data.draw(messages(fmt))
    raw = text.encode()
    target = chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=20))) or [raw]
    s = inert.TokenStream(fmt, "turn", stream=True)
    got = Streamed()
    pos = 0
    while pos < len(target):
        k = data.draw(st.integers(1, 4))
        path = target[pos : pos + k]
        wrong = [b"x", b"<tool_call>", b"}"][: data.draw(st.integers(0, 2))]
        if wrong[:1] == path[:1]:
            wrong = []  # a wrong root the same as the path's would be its twin, which is refused
        tokens = wrong + path
        parents = [-1 if i == 0 else i - 1 for i in range(len(wrong))] + [
            -1 if i == 0 else len(wrong) + i - 1 for i in range(len(path))
        ]
        s.draft_tree(tokens, parents)
        s.verify_path([len(wrong) + i for i in range(len(path))])
        got.take(s.take_released())
        pos += len(path)
    s.finish()
    got.take(s.take_released())
    final, _ = one_shot(raw, fmt)
    assert got == final
    check_final(fmt, got, calls, prose, thinking)


@pytest.mark.parametrize("fmt", FORMATS)
@PER_FORMAT
@given(data=st.data())
def test_orchestrator_steps_carry_the_stream(fmt: str, data: st.DataObject) -> None:
    text, calls, prose, thinking = data.draw(messages(fmt))
    raw = text.encode()
    target = chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=30))) or [raw]
    orch = inert.Orchestrator({}, {n: (lambda **_: "ok") for n, _ in calls}, format=fmt, turn_key="turn", stream=True)
    got = Streamed()

    def take(step: inert.Step) -> None:
        got.take((step.content, step.reasoning, list(step.tool_call_deltas)))

    def draft(window: list[bytes]) -> None:
        step = orch.draft(window)
        assert (step.content, step.reasoning, step.tool_call_deltas) == ("", "", [])

    Decoder(target, data.draw).run(draft, lambda n, c: take(orch.verify(n, c)))
    report = orch.finish()
    assert report.tail is not None
    take(report.tail)
    check_final(fmt, got, calls, prose, thinking)
    assert [json.loads(got.arguments[i]) for i in range(len(calls))] == [r.arguments for r in report.results]


def test_xml_and_json_formats_are_all_covered() -> None:
    assert set(FORMATS) >= XML_FORMATS and set(OPENERS) == set(FORMATS)


def special_spellings(fmt: str) -> list[str]:
    return sorted({*OPENERS[fmt], *CLOSERS, *(reasoning(fmt) or ())}, key=len, reverse=True)


def delimiter_tokens(text: str, fmt: str, cuts: list[int]) -> list[str]:
    """``text`` as tokens: every delimiter spelling of the format a token of its own
    (a vocabulary entry that spells one exactly is its special token), the rest cut at ``cuts``."""
    spellings = special_spellings(fmt)
    pattern = "(" + "|".join(re.escape(s) for s in spellings) + ")"
    tokens: list[str] = []
    for part in re.split(pattern, text):
        if part in spellings:
            tokens.append(part)
        elif part:
            points = sorted({0, len(part), *(c % (len(part) + 1) for c in cuts)})
            tokens += [part[a:b] for a, b in itertools.pairwise(points) if b > a]
    return tokens


@pytest.mark.parametrize("fmt", FORMATS)
@PER_FORMAT
@given(data=st.data())
def test_special_token_delimiters_release_what_one_shot_ids_do(fmt: str, data: st.DataObject) -> None:
    """Token ids with the delimiters as special tokens, in any windows, release exactly what
    drafting the same ids at once does; and the prose and the calls, unless a special token
    changes what the text meant (one spelled inside an argument, or a Kimi call token ending
    a thought that holds calls)."""
    text, calls, prose, thinking = data.draw(messages(fmt))
    tokens = delimiter_tokens(text, fmt, data.draw(st.lists(st.integers(0, 64), max_size=8)))
    pieces = sorted(set(tokens))
    vocab = inert.Vocabulary(pieces)
    ids = [pieces.index(t) for t in tokens]

    def run(schedule: list[list[int]]) -> Streamed:
        s = inert.TokenStream(fmt, "turn", vocab=vocab, stream=True)
        got = Streamed()
        for window in schedule:
            s.draft(window)
            s.verify(len(window))
            got.take(s.take_released())
        s.finish()
        got.take(s.take_released())
        return got

    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(ids) - 1)), max_size=10))))
    schedule = [ids[a:b] for a, b in itertools.pairwise([0, *cuts, len(ids)]) if b > a]
    got = run(schedule)
    assert got == run([ids])
    values = json.dumps(calls, ensure_ascii=False)
    if not thinking and not any(json.dumps(sp, ensure_ascii=False)[1:-1] in values for sp in special_spellings(fmt)):
        check_final(fmt, got, calls, prose, thinking)


@settings(max_examples=max(60, settings().max_examples))
@given(data=st.data())
def test_string_encoded_arguments_stream_as_the_object_they_hold(data: st.DataObject) -> None:
    """``"arguments": "{…}"`` (Granite 4 and others) under any chunking, windows, corruption
    and correction: what goes out is the decoded object text, joined exactly the arguments."""
    from speculation import arguments

    args = data.draw(arguments)
    pad = data.draw(st.sampled_from(["", " ", "\n ", "\t\r\n"]))
    inner = pad + json.dumps(args, ensure_ascii=data.draw(st.booleans())) + pad
    body = json.dumps({"name": "f", "arguments": inner}, ensure_ascii=data.draw(st.booleans()))
    raw = f"Hi <tool_call>{body}</tool_call> ok".encode()
    final, _ = one_shot(raw, "hermes")
    assert not final.marks and json.loads(final.arguments[0]) == args
    assert speculated(raw, "hermes", data, final) == final
