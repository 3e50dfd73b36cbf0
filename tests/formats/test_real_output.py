"""Properties of what real models write (issue 10), over random calls, tokenizations
and speculative schedules: raw-text XML values that hold the format's own tags,
broken siblings, reasoning sections, closers cut by the end of the turn, names."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import inert
from render import CLOSER, THINK, XML_FORMATS, Calls, param, reasoning, render, xml_call
from speculation import Decoder, chunk
from tools import committed, malformed

FORMATS = inert.formats()
names = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True)
keys = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True)
safe = st.text(st.characters(blacklist_characters="<>\r\n", blacklist_categories=["Cs"]), min_size=1, max_size=8)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=8)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=5,
)


def chunked(data: st.DataObject, text: str) -> list[bytes]:
    raw = text.encode()
    return chunk(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=30))) or [raw]


def streamed(fmt: str, pieces: list[bytes], **kw: Any) -> list[inert.Outcome]:
    s = inert.TokenStream(fmt, "t", **kw)
    return s.draft(pieces) + s.verify(len(pieces)) + s.finish()


def items(found: list[Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for f in found:
        if isinstance(f, inert.Malformed):
            out.append(("malformed", f.kind))
        elif isinstance(f, inert.Call):
            out.append((f.name, json.dumps(f.arguments, sort_keys=True)))
    return out


def stream_items(outcomes: list[inert.Outcome]) -> list[tuple[str, str]]:
    return items(
        [
            o.call if isinstance(o, inert.CallCommitted) else o.malformed
            for o in outcomes
            if isinstance(o, inert.CallCommitted | inert.BlockMalformed)
        ]
    )


# -- raw-text XML: a value holding the format's own tags round-trips when the schema is known ------

# Tags that may stand alone in a value. The value tags that nest (see rust/scan/matcher.rs) may
# not: spelled in text, an unbalanced one keeps the block open past its closer.
LONE = {
    "qwen3_coder": ["</parameter>", "<tool_call>", "</tool_call>"],
    "glm45": ["<arg_key>", "</arg_key>", "<tool_call>", "</tool_call>"],
    "glm47": ["<arg_key>", "</arg_key>", "<tool_call>", "</tool_call>"],
    "minimax_m2": ["</invoke>", '<invoke name="x">', "<minimax:tool_call>", "</minimax:tool_call>"],
    "deepseek_v32": [
        "</｜DSML｜invoke>",
        '<｜DSML｜invoke name="x">',
        "<｜DSML｜function_calls>",
        "</｜DSML｜function_calls>",
    ],
}
OPENER = {
    "qwen3_coder": "<parameter={}>",
    "glm45": "<arg_key>{}</arg_key>",
    "glm47": "<arg_key>{}</arg_key>",
    "minimax_m2": "",
    "deepseek_v32": "",
}


@st.composite
def xml_call_with_own_tags(draw: Any, fmt: str) -> tuple[str, str, dict[str, str], dict[str, Any]]:
    name = draw(names)
    params = draw(st.lists(keys, min_size=1, max_size=3, unique=True))
    others = [k for k in draw(st.lists(keys, max_size=2)) if k not in params] + ["zz_not_a_param"]
    args: dict[str, str] = {}
    for i, key in enumerate(params):
        # A tag may name a parameter already given (this one included) or none of the tool's:
        # an opener of a parameter still to come would be structure, by the rule.
        usable = st.sampled_from(params[: i + 1] + others)
        piece = st.one_of(
            safe,
            st.just("\n"),
            st.builds(lambda n, k, v: render(fmt, [(n, {k: v})]), names, usable, safe),
            st.builds(lambda k, v: param(fmt, k, v), usable, safe),
            st.sampled_from(LONE[fmt]),
            st.builds(OPENER[fmt].format, usable) if OPENER[fmt] else st.just(" "),
        )
        args[key] = "a" + "".join(draw(st.lists(piece, max_size=5))) + "z"
        # A closer followed by an opener reads as a parameter the schema does not list (as real
        # GLM and Qwen output writes one), by the rule: such text is structure, not a value's.
        assume(fmt != "qwen3_coder" or not re.search(r"</parameter>\s*<parameter=", args[key]))
    schema = {name: {"type": "object", "properties": {k: {"type": "string"} for k in params}}}
    return xml_call(fmt, name, list(args.items())), name, args, schema


@pytest.mark.parametrize("fmt", sorted(XML_FORMATS))
@given(data=st.data())
def test_a_value_holding_the_formats_own_tags_round_trips_with_a_schema(fmt: str, data: st.DataObject) -> None:
    text, name, args, schemas = data.draw(xml_call_with_own_tags(fmt))
    want = [(name, json.dumps(args, sort_keys=True))]
    assert items(inert.parse(text, fmt, schemas=schemas)) == want
    assert stream_items(streamed(fmt, chunked(data, text), schemas=schemas)) == want


# -- a section or list with broken calls keeps its valid ones, each with its own key ----------------

BAD_OBJECTS = [
    ('{"name": "b", "arguments": 7}', "arguments_not_object"),
    ('{"arguments": {}}', "missing_name"),
    ('{"name": "b", "arguments": {"x": 1e999}}', "non_finite"),
    ('{"name": "a b"}', "invalid_name"),
    ('{"name": "b", "arguments": {"x": }}', "invalid_json"),
    ("[1]", "invalid_json"),
]
MISSING_ARGUMENTS = {"minimax": [('{"name": "b"}', "missing_arguments")]}
"""MiniMax's template writes every call's arguments: a line without them is no whole call."""
BAD_CALLS = [
    ("calc(x=1e999)", "non_finite"),
    ("f(x=b'z')", "invalid_literal"),
    ("f(1)", "invalid_literal"),
    ("f(a=1, a=2)", "duplicate_argument"),
]
WRAP = {
    "granite": ("<|tool_call|>[", ", ", "]"),
    "jamba": ("<tool_calls>[", ", ", "]</tool_calls>"),
    "xlam": ("[", ", ", "]"),
    "phi4_mini_json": ("functools[", ", ", "]"),
    "mistral": ("[TOOL_CALLS][", ", ", "]"),
    "minimax": ("<tool_calls>\n", "\n", "\n</tool_calls>"),
    "pythonic": ("[", ", ", "]"),
}


def py(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py(k)}: {py(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(py(v) for v in value) + "]"
    return repr(value)


@pytest.mark.parametrize("fmt", sorted(WRAP))
@given(data=st.data())
def test_broken_siblings_keep_the_valid_calls_each_with_its_own_key(fmt: str, data: st.DataObject) -> None:
    open_, sep, close = WRAP[fmt]
    elements = data.draw(
        st.lists(
            st.one_of(
                st.tuples(names, st.dictionaries(keys, json_values, max_size=2)),
                st.sampled_from(BAD_CALLS if fmt == "pythonic" else BAD_OBJECTS + MISSING_ARGUMENTS.get(fmt, [])),
            ),
            min_size=1,
            max_size=5,
        )
    )
    texts, want = [], []
    for e in elements:
        if isinstance(e[1], dict):
            n, a = e[0], e[1]
            texts.append(
                f"{n}(" + ", ".join(f"{k}={py(v)}" for k, v in a.items()) + ")"
                if fmt == "pythonic"
                else json.dumps({"name": n, "arguments": a})
            )
            want.append((n, json.dumps(a, sort_keys=True)))
        else:
            texts.append(e[0])
            want.append(("malformed", e[1]))
    text = open_ + sep.join(texts) + close
    assert items(inert.parse(text, fmt)) == want
    pieces = chunked(data, text)
    outcomes = streamed(fmt, pieces)
    assert stream_items(outcomes) == want
    found = [
        o.call if isinstance(o, inert.CallCommitted) else o.malformed
        for o in outcomes
        if isinstance(o, inert.CallCommitted | inert.BlockMalformed)
    ]
    assert len({f.commit_key for f in found}) == len(found)
    for f in found:
        ordinal = f.index  # every item of the one block ends in the same token
        assert f.commit_key == inert.commit_key("t", pieces[: f.end], ordinal)


# -- a call inside reasoning is a thought: it never surfaces, not even as a speculative close -------


def plain_calls(fmt: str) -> st.SearchStrategy[Calls]:
    value = safe if fmt in XML_FORMATS else json_values
    return st.lists(st.tuples(names, st.dictionaries(keys, value, max_size=2)), min_size=1, max_size=2)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if reasoning(f) is not None])
@given(data=st.data())
def test_calls_inside_reasoning_never_surface(fmt: str, data: st.DataObject) -> None:
    o, c = reasoning(fmt) or THINK
    thoughts = [("thought_" + n, a) for n, a in data.draw(plain_calls(fmt))]
    real = data.draw(plain_calls(fmt))
    inside = render(fmt, thoughts)
    assume(c not in inside and c not in render(fmt, real))
    in_prompt = data.draw(st.booleans())
    text = ("" if in_prompt else o) + f"hmm {inside} no.{c}\n" + render(fmt, real)
    pieces = chunked(data, text)
    want = [(n, json.dumps(a, sort_keys=True)) for n, a in real]
    # Drafted as the model wrote it: no thought closes, even before verification.
    clean = streamed(fmt, pieces, in_reasoning=in_prompt)
    assert not [o for o in clean if isinstance(o, inert.CallClosed) and o.call.name.startswith("thought_")]
    assert stream_items(clean) == want
    # Speculated with wrong draft tokens and rollbacks: the accepted stream commits the same.
    outcomes: list[inert.Outcome] = []
    stream = inert.TokenStream(fmt, "t", in_reasoning=in_prompt)
    Decoder(pieces, data.draw).run(
        lambda w: outcomes.extend(stream.draft(w)), lambda n, corr: outcomes.extend(stream.verify(n, corr))
    )
    outcomes += stream.finish()
    assert [(x.name, json.dumps(x.arguments, sort_keys=True)) for x in committed(outcomes)] == want
    assert not malformed(outcomes)
    assert stream.notices() == []


# -- the end of the turn confirms a cut block whose body is complete; a cut body is unterminated --


@pytest.mark.parametrize("fmt", sorted(CLOSER))
@given(data=st.data())
def test_the_end_of_the_turn_confirms_a_complete_body_only(fmt: str, data: st.DataObject) -> None:
    value = st.text(st.characters(blacklist_characters="<>\r\n", blacklist_categories=["Cs"]), min_size=6, max_size=9)
    calls = [*data.draw(plain_calls(fmt)), (data.draw(names), {data.draw(keys): data.draw(value)})]
    full = render(fmt, calls)
    want = [(n, json.dumps(a, sort_keys=True)) for n, a in calls]
    cut = full.removesuffix(CLOSER[fmt])
    assert items(inert.parse(cut, fmt)) == want
    assert stream_items(streamed(fmt, chunked(data, cut))) == want
    inside = cut.rstrip()[: -data.draw(st.integers(2, 6))]
    assert items(inert.parse(inside, fmt)) == [*want[:-1], ("malformed", "unterminated")]
    assert stream_items(streamed(fmt, chunked(data, inside))) == [*want[:-1], ("malformed", "unterminated")]


# -- a tool name is a name ----------------------------------------------------------------------------

NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:")
JSON_NAMED = ["hermes", "llama3_json", "granite", "internlm", "jamba", "xlam", "phi4_mini_json", "minimax"]


@pytest.mark.parametrize("fmt", JSON_NAMED)
@given(name=st.text(min_size=1, max_size=10).filter(lambda n: not set(n) <= NAME_CHARS))
def test_a_name_that_is_not_a_name_is_malformed(fmt: str, name: str) -> None:
    assert items(inert.parse(render(fmt, [(name, {})]), fmt)) == [("malformed", "invalid_name")]


@pytest.mark.parametrize("fmt", JSON_NAMED)
@given(name=st.text(alphabet=sorted(NAME_CHARS), min_size=1, max_size=12))
def test_a_name_of_name_characters_is_a_call(fmt: str, name: str) -> None:
    assert items(inert.parse(render(fmt, [(name, {})]), fmt)) == [(name, "{}")]
