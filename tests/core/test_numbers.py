"""Numbers reach tools as the model wrote them: an integer past 64 bits stays exact
(Python's json.loads reads it so, and a client joining the streamed deltas sees it
so), in every body layout; a number no float holds is malformed, never infinity."""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import pytest

import inert
from tools import committed, kinds

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


LONG = "1" * 4301  # one digit past what Python's int() takes from a decimal string
XML_INT = "<tool_call>\n<function=f>\n<parameter=n>\n{}\n</parameter>\n</function>\n</tool_call>"


@pytest.mark.parametrize(
    ("fmt", "body"),
    [
        ("hermes", f'<tool_call>{{"name": "f", "arguments": {{"n": {LONG}}}}}</tool_call>'),
        ("pythonic", f"[f(n={LONG})]"),
        ("pythonic", f"[f(n=-{LONG})]"),
        ("qwen3_coder", XML_INT.format(LONG)),
        ("qwen3_coder", XML_INT.format("+" + LONG)),
    ],
)
def test_an_integer_longer_than_python_converts_is_malformed_with_a_short_reason(fmt: str, body: str) -> None:
    """json.loads refuses it too; it must never raise out of the stream or flood the reason."""
    [bad] = inert.parse(body, fmt, schemas=SCHEMAS)
    assert isinstance(bad, inert.Malformed) and bad.kind == "non_finite", bad
    assert "4301 digits" in bad.reason and len(bad.reason) < 200


def test_a_long_integer_in_one_sequence_leaves_the_batch_whole() -> None:
    evil, good = XML_INT.format("+" + LONG), XML_INT.replace("f>", "g>").format("7")
    batch = inert.StreamBatch("qwen3_coder", vocab=inert.Vocabulary([evil, good]), schemas=SCHEMAS)
    batch.add(1, "a")
    batch.add(2, "b")
    drafted = batch.draft(np.array([1, 2]), np.array([[0], [1]]))
    verified = batch.verify(np.array([1, 2]), np.array([1, 1]))
    assert [o.kind for o in drafted.get(1, []) + verified[1]] == ["block_malformed"]
    assert kinds(verified[2]) == ["call_committed"] and [c.name for c in committed(verified[2])] == ["g"]


@pytest.mark.parametrize("digits", [400, 4300])
def test_integers_too_big_for_a_float_are_exact_in_every_layout(digits: int) -> None:
    big = int("9" * digits)
    for fmt, body in [
        ("hermes", f'<tool_call>{{"name": "f", "arguments": {{"n": {big}}}}}</tool_call>'),
        ("pythonic", f"[f(n={big})]"),
        ("qwen3_coder", XML_INT.format(big)),
        ("qwen3_coder", XML_INT.format(f"+{big}")),
    ]:
        [call] = inert.parse(body, fmt, schemas=SCHEMAS)
        assert isinstance(call, inert.Call) and call.arguments == {"n": big}, (fmt, call)


def test_exact_integers_ignore_the_interpreters_int_string_limit() -> None:
    """An application may lower sys.set_int_max_str_digits; a parsed integer still converts."""
    big = int("7" * 1000)
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        [call] = inert.parse(f"[f(n={'7' * 1000})]", "pythonic")
        assert isinstance(call, inert.Call)
        assert call.arguments["n"] == big
    finally:
        sys.set_int_max_str_digits(before)


def test_the_offset_of_a_refused_number_skips_strings() -> None:
    body = '{"name": "f", "arguments": {"s": "1e999", "n": 1e400}}'
    [bad] = inert.parse(f"<tool_call>{body}</tool_call>", "hermes")
    assert isinstance(bad, inert.Malformed)
    assert body[bad.offset :].startswith("1e400")


def test_leading_zeros_in_a_python_integer_are_an_invalid_literal() -> None:
    for literal in ["007", "0" + "1" * 30, "-01"]:
        [bad] = inert.parse(f"[f(n={literal})]", "pythonic")
        assert isinstance(bad, inert.Malformed) and bad.kind == "invalid_literal", (literal, bad)
    [call] = inert.parse("[f(n=00, m=0)]", "pythonic")
    assert isinstance(call, inert.Call) and call.arguments == {"n": 0, "m": 0}


def test_a_python_int_too_long_for_decimal_is_refused_by_name() -> None:
    schema = {"f": {"properties": {"n": {"type": "integer", "maximum": 10**5000}}}}
    with pytest.raises(inert.InertValueError, match="too long to write in decimal"):
        inert.TokenStream("hermes", "t", schemas=schema)
    exact = {"f": {"properties": {"n": {"type": "integer", "maximum": 10**50}}}}
    assert inert.TokenStream("hermes", "t", schemas=exact).pending_len == 0
