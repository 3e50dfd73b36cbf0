"""Random tool calls for every format (hypothesis strategies): names, argument keys, and
values that hold what breaks parsers (delimiters, quotes, backslashes, non-ASCII), and for
the raw-text XML formats, text that looks like their tags without being one."""

from __future__ import annotations

from hypothesis import strategies as st

from render import XML_FORMATS, Calls

DELIMITERS = [
    "</tool_call>",
    "<tool_call>",
    "[TOOL_CALLS]",
    "<|call|>",
    "<｜tool▁call▁end｜>",
    "<|tool_call_end|>",
    "</tool_calls>",
    "<|/tool_call|>",
    "<|action_end|>",
    "]",
    "}",
    ")",
    "'",
    '"',
    "\\",
    "é☃𝄞",
]

names = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True)
keys = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from(DELIMITERS),
    st.text(max_size=8),
    st.floats(allow_nan=False, allow_infinity=False),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=5,
)
LOOK_ALIKES = [
    "</parameter",
    "</parameter >",
    "<parameter",
    "</arg_value",
    "<arg_key>",
    "</function",
    "</invoke",
    "</tool_call",
    "<｜DSML｜parameter",
    "a < b",
    "x > y",
    "<>",
    "<b>bold</b>",
    "->",
    "</",
]
"""Text in raw XML values that looks like the format's tags without being one: values hold code."""
xml_text = (
    st.lists(
        st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), min_size=1, max_size=6)
        | st.sampled_from(LOOK_ALIKES),
        min_size=1,
        max_size=3,
    )
    .map("".join)
    .filter(lambda v: v.strip() == v)
)


def calls_for(fmt: str, min_size: int = 0) -> st.SearchStrategy[Calls]:
    value = xml_text if fmt in XML_FORMATS else values
    return st.lists(st.tuples(names, st.dictionaries(keys, value, max_size=3)), min_size=min_size, max_size=3)
