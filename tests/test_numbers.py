"""Numbers reach tools as the model wrote them: an integer past 64 bits stays exact
(Python's json.loads reads it so, and a client joining the streamed deltas sees it
so), in every body layout; a number no float holds is malformed, never infinity."""

from __future__ import annotations

import json
from typing import Any

import pytest

import inert

BIG = 100000000000000000000000000001  # past 64 bits: a float would round it to 1e29

BODIES = {
    "hermes": f'<tool_call>{{"name": "f", "arguments": {{"n": {BIG}, "m": [-{BIG}], "x": 1.5}}}}</tool_call>',
    "granite": f'<tool_call>[{{"name": "f", "arguments": "{{\\"n\\": {BIG}, \\"m\\": [-{BIG}], \\"x\\": 1.5}}"}}]',
    "pythonic": f"[f(n={BIG}, m=[-{BIG}], x=1.5)]",
    "qwen3_coder": (
        f"<tool_call>\n<function=f>\n<parameter=n>\n{BIG}\n</parameter>\n"
        f"<parameter=m>\n[-{BIG}]\n</parameter>\n<parameter=x>\n1.5\n</parameter>\n</function>\n</tool_call>"
    ),
}
SCHEMAS = {"f": {"properties": {"n": {"type": "integer"}, "m": {"type": "array"}, "x": {"type": "number"}}}}
WANT = {"n": BIG, "m": [-BIG], "x": 1.5}


@pytest.mark.parametrize("fmt", sorted(BODIES))
def test_integers_past_64_bits_reach_the_report_exact(fmt: str) -> None:
    [call] = inert.parse(BODIES[fmt], fmt, schemas=SCHEMAS)
    assert isinstance(call, inert.Call), call
    assert call.arguments == WANT
    assert type(call.arguments["n"]) is int


@pytest.mark.parametrize("fmt", sorted(BODIES))
def test_the_streamed_arguments_parse_to_the_same_exact_integers(fmt: str) -> None:
    text = BODIES[fmt]
    s = inert.TokenStream(fmt, "t", schemas=SCHEMAS, stream=True)
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
    s.draft(pieces)
    s.verify(len(pieces))
    s.finish()
    _, _, deltas = s.take_released()
    arguments = "".join(d["function"].get("arguments", "") for d in deltas if "function" in d)
    assert json.loads(arguments) == WANT


def test_a_tool_is_called_with_the_exact_integer() -> None:
    seen: list[Any] = []
    orch = inert.Orchestrator({"f": "write"}, {"f": lambda **kw: seen.append(kw)})
    orch.draft([BODIES["hermes"]])
    orch.verify(1)
    report = orch.finish()
    assert seen == [WANT]
    assert [r.name for r in report.results] == ["f"]


@pytest.mark.parametrize(
    ("fmt", "body"),
    [
        ("hermes", '<tool_call>{"name": "f", "arguments": {"a": "x", "n": 1E+400}}</tool_call>'),
        ("granite", '<tool_call>[{"name": "f", "arguments": "{\\"n\\": -1e999}"}]'),
        ("pythonic", "[f(n=1e999)]"),
        ("qwen3_coder", "<tool_call>\n<function=f>\n<parameter=n>\n1e999\n</parameter>\n</function>\n</tool_call>"),
    ],
)
def test_a_number_no_float_holds_is_malformed(fmt: str, body: str) -> None:
    [bad] = inert.parse(body, fmt, schemas=SCHEMAS)
    assert isinstance(bad, inert.Malformed) and bad.kind == "non_finite", bad
    if fmt == "hermes":
        assert body[len("<tool_call>") + bad.offset :].startswith("1E+400"), "the offset points at the number"
