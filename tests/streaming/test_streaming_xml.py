"""The raw-text XML formats stream their arguments as the JSON the parameters render to:
text values as they are accepted, values the schema types when they end. Values here hold
the format's own tags as text (a closer, an opener of a given or unknown parameter, the
call's end), so the reader must never send what the parser later reads otherwise: every
committed call's fragments join to exactly its arguments, with no mark, under any
chunking, draft windows, corruption and correction."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import inert
from render import param, xml_call
from streams import Streamed, one_shot, speculated

XML = ["qwen3_coder", "glm45", "glm47", "minimax_m2", "deepseek_v32"]
PER_FORMAT = settings(max_examples=max(60, settings().max_examples // 2))

SCHEMAS = {
    "write": {
        "properties": {
            "path": {"type": "string"},
            "content": {"type": "string"},
            "n": {"type": "integer"},
            "flag": {"type": "boolean"},
            "maybe": {"type": ["string", "null"]},
            "obj": {"type": "object"},
        }
    },
}
TYPED = {
    "n": st.integers(-(10**6), 10**6).map(str),
    "flag": st.sampled_from(["true", "False"]),
    "maybe": st.sampled_from(["null", "None", "text", "42"]),
    "obj": st.sampled_from(['{"a": [1, 2]}', "{'k': 'v'}", "{}"]),
}


def tags(fmt: str) -> list[str]:
    """The format's own tags as they may appear inside a value."""
    own = {
        "qwen3_coder": [
            "</parameter>",
            "<parameter=path>",
            "<parameter=other>",
            "</function>",
            "\n</parameter>\n<parameter=content>\n",
            "</parameter>\n</function>",
        ],
        "glm45": ["</arg_value>", "<arg_key>path</arg_key>\n<arg_value>", "</arg_value>\n<arg_key>zz</arg_key>"],
        "glm47": ["</arg_value>", "<arg_key>content</arg_key><arg_value>", "<arg_key>"],
        "minimax_m2": [
            "</parameter>",
            '<parameter name="path">',
            '</parameter>\n<parameter name="q">',
            "</invoke>",
            "<parameters>",
        ],
        "deepseek_v32": [
            "</｜DSML｜parameter>",
            '<｜DSML｜parameter name="path" string="true">',
            "</｜DSML｜parameter>\n",
            "</｜DSML｜invoke>",
        ],
    }[fmt]
    return [*own, "a < b", "<b>x</b>", "\n", "é", " ", "<", "</"]


def text_values(fmt: str) -> st.SearchStrategy[str]:
    piece = st.sampled_from(tags(fmt)) | st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=5)
    return st.lists(piece, min_size=1, max_size=5).map("".join)


@st.composite
def outputs(draw: Any, fmt: str) -> tuple[str, bool]:
    """One or two calls of ``write`` (schema) or ``free`` (no schema); whether schemas go in."""
    calls = []
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(["write", "free"]))
        keys = draw(
            st.lists(
                st.sampled_from(["path", "content", "n", "flag", "maybe", "obj", "q"]),
                min_size=0,
                max_size=4,
                unique=True,
            )
        )
        params = [(k, draw(TYPED[k] if name == "write" and k in TYPED else text_values(fmt))) for k in keys]
        calls.append(xml_call(fmt, name, params))
    prose = draw(st.sampled_from(["", "Sure. ", "x < y\n"]))
    return prose + "\n".join(calls), draw(st.booleans())


def committed(outcomes: list[Any]) -> list[inert.Call]:
    return [o.call for o in outcomes if isinstance(o, inert.CallCommitted)]


def check(got: Streamed, calls: list[inert.Call]) -> None:
    """Every unmarked streamed call is the next committed call, its fragments its arguments."""
    clean = [i for i in sorted(got.starts) if i not in got.marks]
    assert [got.starts[i]["function"]["name"] for i in clean] == [c.name for c in calls]
    for i, call in zip(clean, calls, strict=True):
        assert json.loads(got.arguments[i]) == call.arguments, (got.arguments[i], call.arguments)


@pytest.mark.parametrize("fmt", XML)
@PER_FORMAT
@given(data=st.data())
def test_xml_arguments_stream_only_what_the_parser_reads(fmt: str, data: st.DataObject) -> None:
    text, with_schemas = data.draw(outputs(fmt))
    kw: dict[str, Any] = {"schemas": SCHEMAS} if with_schemas else {}
    raw = text.encode()
    final, outcomes = one_shot(raw, fmt, **kw)
    check(final, committed(outcomes))
    assert speculated(raw, fmt, data, final, **kw) == final


def deltas_of(fmt: str, text: str, cut: int, **kw: Any) -> str:
    """The argument text a stream releases once the first ``cut`` bytes are accepted."""
    s = inert.TokenStream(fmt, "t", stream=True, **kw)
    s.draft([text.encode()[:cut]])
    s.verify(1)
    return "".join(d["function"]["arguments"] for d in s.take_released()[2])


def test_a_long_text_value_streams_as_it_is_accepted_and_a_number_when_it_ends() -> None:
    body = (
        param("qwen3_coder", "path", "a.py")
        + param("qwen3_coder", "n", "12")
        + param("qwen3_coder", "content", "line one\nline two")
    )
    text = xml_call("qwen3_coder", "write", []).replace("</function>", body + "</function>")
    at = text.index("12") + 1
    assert deltas_of("qwen3_coder", text, at, schemas=SCHEMAS) == '{"path":"a.py","n":'
    assert deltas_of("qwen3_coder", text, at + 1, schemas=SCHEMAS) == '{"path":"a.py","n":'
    after_number = text.index("<parameter=content>")
    assert deltas_of("qwen3_coder", text, after_number + len("<parameter=content>")) == (
        '{"path":"a.py","n":"12","content":"'
    ), "without a schema every value is text"
    line = text.index("line two") + 4
    assert deltas_of("qwen3_coder", text, line, schemas=SCHEMAS) == '{"path":"a.py","n":12,"content":"line one\\nline'


def test_a_literal_closer_waits_until_what_follows_shows_it_is_text() -> None:
    text = (
        '<minimax:tool_call>\n<invoke name="free">\n<parameter name="content">a</parameter> b'
        "</parameter>\n</invoke>\n</minimax:tool_call>"
    )
    at_closer = text.index("</parameter>") + len("</parameter>")
    assert deltas_of("minimax_m2", text, at_closer) == '{"content":"a'
    assert deltas_of("minimax_m2", text, at_closer + 2) == '{"content":"a</parameter> b'


def test_unknown_and_given_openers_inside_a_value_are_text_with_a_schema() -> None:
    value = "x <parameter=path> y <parameter=other> z"
    text = xml_call("qwen3_coder", "write", [("path", "p"), ("content", value)])
    at = text.index(" z") + 2
    got = deltas_of("qwen3_coder", text, at, schemas=SCHEMAS)
    assert got == '{"path":"p","content":"x <parameter=path> y <parameter=other> z'
    s = inert.TokenStream("qwen3_coder", "t", stream=True, schemas=SCHEMAS)
    s.draft([text.encode()])
    s.verify(1)
    deltas = s.take_released()[2]
    assert json.loads("".join(d["function"]["arguments"] for d in deltas)) == {"path": "p", "content": value}


def test_a_value_that_fails_its_type_marks_the_call() -> None:
    text = xml_call("qwen3_coder", "write", [("path", "p"), ("n", "1e999"), ("content", "c")])
    s = inert.TokenStream("qwen3_coder", "t", stream=True, schemas=SCHEMAS)
    s.draft([text.encode()])
    s.verify(1)
    deltas = s.take_released()[2]
    assert "".join(d["function"]["arguments"] for d in deltas) == '{"path":"p","n":'
    assert deltas[-1]["inert"]["malformed"] == "non_finite"
